/* Shared by the report parsers' libFuzzer targets: the invariants every parsed report keeps. */
#ifndef PROCTOR_FUZZ_REPORT_H
#define PROCTOR_FUZZ_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "capbuf.h"
#include "grade/report.h"

/* Small caps, so that truncation and cutting happen on small inputs. */
static void fuzz_caps(struct report_caps *caps)
{
	report_caps_default(caps);
	caps->max_bytes = 1u << 20;
	caps->max_entries = 64;
	caps->max_depth = 16;
	caps->max_message = 100;
	caps->max_attrs = 8;
	caps->max_name = 16;
	caps->max_ns = 4;
}

static bool valid_utf8(const char *s)
{
	size_t len = strlen(s), n;
	char *copy = utf8_sanitize(s, len, false, &n);
	bool ok = copy && n == len && memcmp(copy, s, len) == 0;

	free(copy);
	return ok;
}

static void check_string(const char *s, const struct report_caps *caps)
{
	if (strlen(s) > caps->max_message || !valid_utf8(s))
		abort();
}

/* Parse with `parse`; on success check the report and its JSON round trip. */
static void fuzz_report(int (*parse)(const char *, size_t, const struct report_caps *,
				     struct report *, struct err *),
			const uint8_t *data, size_t size)
{
	struct report_caps caps;
	struct report r, back;
	struct err e;
	json_t *j, *j2;

	fuzz_caps(&caps);
	if (parse((const char *)data, size, &caps, &r, &e) < 0) {
		/* The helper sends the message in JSON: it must be text. */
		if (e.msg[0] == '\0' || !memchr(e.msg, '\0', sizeof(e.msg)) || !valid_utf8(e.msg))
			abort();
		return;
	}
	if (r.n > caps.max_entries || (r.n > 0 && !r.entries))
		abort();
	for (size_t i = 0; i < r.n; i++) {
		const struct report_entry *en = &r.entries[i];

		if (!en->name || en->outcome > OUTCOME_SKIPPED)
			abort();
		check_string(en->name, &caps);
		if (en->classname)
			check_string(en->classname, &caps);
		if (en->message)
			check_string(en->message, &caps);
	}
	j = report_to_json(&r);
	if (!j || report_from_json_caps(j, &caps, &back, &e) < 0)
		abort();
	j2 = report_to_json(&back);
	if (!j2 || !json_equal(j, j2) || back.n != r.n || back.truncated != r.truncated)
		abort();
	json_decref(j);
	json_decref(j2);
	report_free(&back);
	report_free(&r);
}

#endif
