/* libFuzzer target: policy and extension documents from the API (parse, canonical round trip,
 * the rules on what parsed), and the result-status scanner against jansson. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service/policy.h"
#include "store/store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Errors are one bounded line. */
static void check_error(const struct err *e)
{
	if (strnlen(e->msg, sizeof(e->msg)) == sizeof(e->msg) || e->kind != ERR_INPUT)
		abort();
}

/* The canonical text parses back to itself, and the rules hold on the policy. */
static void check_policy(const struct policy *p)
{
	struct policy q;
	struct err e;
	char *text = policy_to_text(p);

	if (!text || policy_parse(text, strlen(text), &q, &e) < 0)
		abort();
	char *again = policy_to_text(&q);
	if (!again || strcmp(text, again) != 0)
		abort();
	free(again);
	free(text);

	struct store_extension x = {.student = "ada", .extra_s = STORE_EXTENSION_MAX_S};
	int64_t base = p->has_due ? p->due_ms : 0;
	const int64_t offsets[] = {-1, 0, 1, 3600000, 86400000 + 1, 400LL * 86400000};
	for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
		struct policy_lateness l;
		struct policy_verdict v;
		int64_t at = base + offsets[i] < 0 ? 0 : base + offsets[i];
		policy_late(p, i % 2 ? &x : NULL, at, 10.0, &l);
		if (l.penalty_percent < 0 || l.penalty_percent > 100 || !(l.score >= 0) ||
		    !(l.score <= 10.0) || l.units < 0 || l.late_ms < 0)
			abort();
		if (policy_check_submit(p, (int64_t)i, at, at + offsets[i], &v) !=
		    (v.refusal == POLICY_ALLOWED))
			abort();
		if (policy_test_revealed(p, NULL, at, "hidden"))
			abort();
	}
}

static void check_extension(const struct store_extension *x)
{
	struct store_extension y;
	struct err e;
	json_t *j = policy_extension_to_json(x);
	char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;

	if (!text)
		abort();
	if (!x->student[0]) {
		/* "student" "" is refused: the caller fills it from the path. */
		json_decref(j);
		free(text);
		return;
	}
	if (policy_extension_parse(text, strlen(text), &y, &e) < 0 ||
	    strcmp(x->student, y.student) != 0 || x->has_due != y.has_due ||
	    x->due_ms != y.due_ms || x->extra_s != y.extra_s)
		abort();
	json_decref(j);
	free(text);
}

/* Where the scanner answers, it agrees with a full parse. */
static void check_status(const char *text, size_t size)
{
	char out[32];
	int rc = store_doc_status(text, size, out, sizeof(out));

	if (rc < -1 || rc > 1 || strnlen(out, sizeof(out)) == sizeof(out))
		abort();
	json_t *doc = json_loadb(text, size, JSON_REJECT_DUPLICATES, NULL);
	const char *status = json_string_value(json_object_get(doc, "status"));
	if (doc && json_is_object(doc)) {
		if (rc == 1 && (!status || strncmp(status, out, sizeof(out) - 1) != 0))
			abort();
		if (rc == -1 && status)
			abort();
	}
	json_decref(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	struct policy p;
	struct store_extension x;
	struct err e;

	if (policy_parse(text, size, &p, &e) == 0)
		check_policy(&p);
	else
		check_error(&e);
	if (policy_extension_parse(text, size, &x, &e) == 0)
		check_extension(&x);
	else
		check_error(&e);
	check_status(text, size);
	return 0;
}
