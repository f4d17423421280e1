/* Parsed test reports: ownership, caps, and the JSON form that crosses the privilege boundary. */
#include "grade/report.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capbuf.h"

static const char *const outcome_names[] = {
    [OUTCOME_PASSED] = "passed",   [OUTCOME_FAILED] = "failed",	  [OUTCOME_ERROR] = "error",
    [OUTCOME_SKIPPED] = "skipped", [OUTCOME_MISSING] = "missing",
};

const char *test_outcome_name(enum test_outcome o)
{
	if ((size_t)o >= sizeof(outcome_names) / sizeof(outcome_names[0]))
		return "unknown";
	return outcome_names[o];
}

void report_caps_default(struct report_caps *c)
{
	*c = (struct report_caps){
	    .max_bytes = 8u << 20,
	    .max_entries = 10000,
	    .max_depth = 64,
	    .max_message = 4096,
	    .max_attrs = 256,
	    .max_name = 256,
	    .max_ns = 64,
	};
}

static void entry_free(struct report_entry *en)
{
	free(en->name);
	free(en->classname);
	free(en->message);
	*en = (struct report_entry){0};
}

void report_free(struct report *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++)
		entry_free(&r->entries[i]);
	free(r->entries);
	*r = (struct report){0};
}

char *report_str(const char *s, size_t len, size_t max, bool cut)
{
	const char *nul = memchr(s, '\0', len);
	size_t n;
	char *out;

	if (nul) {
		len = (size_t)(nul - s);
		cut = false;
	}
	/* Repair only what can survive the cut: a byte becomes at most 3. */
	if (max <= SIZE_MAX - 4 && len > max + 4) {
		len = max + 4;
		cut = true;
	}
	out = utf8_sanitize(s, len, cut, &n);
	if (!out)
		return NULL;
	if (n > max) {
		/* Valid UTF-8: back up to the lead byte of the character at max. */
		n = max;
		while (n > 0 && ((unsigned char)out[n] & 0xC0) == 0x80)
			n--;
		out[n] = '\0';
	}
	return out;
}

int report_append(struct report *r, const struct report_caps *caps, struct report_entry *entry,
		  struct err *e)
{
	if (r->n >= caps->max_entries) {
		entry_free(entry);
		r->truncated = true;
		return 0;
	}
	if (r->n == r->alloc) {
		size_t want = r->alloc ? r->alloc * 2 : 16;
		struct report_entry *grown;

		if (want > caps->max_entries)
			want = caps->max_entries;
		grown = reallocarray(r->entries, want, sizeof(*grown));
		if (!grown) {
			entry_free(entry);
			return err_set(e, ENOMEM, "report entries");
		}
		r->entries = grown;
		r->alloc = want;
	}
	r->entries[r->n++] = *entry;
	*entry = (struct report_entry){0};
	return 0;
}

/* ---- JSON form ---- */

json_t *report_to_json(const struct report *r)
{
	json_t *entries = json_array();

	if (!entries)
		return NULL;
	for (size_t i = 0; i < r->n; i++) {
		const struct report_entry *en = &r->entries[i];
		json_t *o =
		    json_pack("{s:s, s:s?, s:s, s:s?, s:f, s:f}", "name", en->name, "classname",
			      en->classname, "outcome", test_outcome_name(en->outcome), "message",
			      en->message, "score", en->score, "max_score", en->max_score);

		if (!o || json_array_append_new(entries, o) < 0) {
			json_decref(entries);
			return NULL;
		}
	}
	return json_pack("{s:o, s:b}", "entries", entries, "truncated", r->truncated);
}

/* A string field: `nullable` allows JSON null (then *ret = NULL). */
static int get_str(const json_t *o, const char *key, bool nullable, size_t max, char **ret,
		   struct err *e)
{
	const json_t *v = json_object_get(o, key);
	const char *s;
	size_t len;

	if (!v)
		return err_set(e, 0, "no \"%s\"", key);
	if (nullable && json_is_null(v)) {
		*ret = NULL;
		return 0;
	}
	if (!json_is_string(v))
		return err_set(e, 0, "\"%s\" is not a string", key);
	s = json_string_value(v);
	len = json_string_length(v);
	if (strlen(s) != len)
		return err_set(e, 0, "\"%s\" holds a NUL byte", key);
	if (len > max)
		return err_set(e, 0, "\"%s\" is longer than %zu bytes", key, max);
	if (!utf8_valid(s, len))
		return err_set(e, 0, "\"%s\" is not valid UTF-8", key);
	*ret = strdup(s);
	if (!*ret)
		return err_set(e, ENOMEM, "\"%s\"", key);
	return 0;
}

static int get_num(const json_t *o, const char *key, double *ret, struct err *e)
{
	const json_t *v = json_object_get(o, key);

	if (!v || !json_is_number(v))
		return err_set(e, 0, "\"%s\" is not a number", key);
	*ret = json_number_value(v);
	if (!isfinite(*ret))
		return err_set(e, 0, "\"%s\" is not finite", key);
	return 0;
}

static int get_outcome(const json_t *o, enum test_outcome *ret, struct err *e)
{
	const json_t *v = json_object_get(o, "outcome");
	const char *s = json_string_value(v);

	/* OUTCOME_MISSING is not in the loop: no parser ever reports it. */
	for (enum test_outcome i = OUTCOME_PASSED; s && i <= OUTCOME_SKIPPED; i++) {
		if (strcmp(s, outcome_names[i]) == 0) {
			*ret = i;
			return 0;
		}
	}
	return err_set(e, 0, "\"outcome\" is not passed, failed, error or skipped");
}

static int entry_from_json(const json_t *o, const struct report_caps *caps,
			   struct report_entry *ret, struct err *e)
{
	struct report_entry en = {0};

	if (!json_is_object(o))
		return err_set(e, 0, "not an object");
	if (json_object_size(o) != 6)
		return err_set(e, 0, "%zu keys, want 6", json_object_size(o));
	if (get_str(o, "name", false, caps->max_message, &en.name, e) < 0 ||
	    get_str(o, "classname", true, caps->max_message, &en.classname, e) < 0 ||
	    get_outcome(o, &en.outcome, e) < 0 ||
	    get_str(o, "message", true, caps->max_message, &en.message, e) < 0 ||
	    get_num(o, "score", &en.score, e) < 0 ||
	    get_num(o, "max_score", &en.max_score, e) < 0) {
		entry_free(&en);
		return -1;
	}
	*ret = en;
	return 0;
}

int report_from_json_caps(const json_t *j, const struct report_caps *caps, struct report *ret,
			  struct err *e)
{
	const json_t *entries = json_object_get(j, "entries");
	const json_t *truncated = json_object_get(j, "truncated");
	struct report r = {0};
	size_t n;

	if (!json_is_object(j) || json_object_size(j) != 2 || !json_is_array(entries) ||
	    !json_is_boolean(truncated))
		return err_set(e, 0, "report: want {\"entries\": [...], \"truncated\": bool}");
	n = json_array_size(entries);
	if (n > caps->max_entries)
		return err_set(e, 0, "report: %zu entries, more than %zu", n, caps->max_entries);
	if (n > 0) {
		r.entries = calloc(n, sizeof(*r.entries));
		if (!r.entries)
			return err_set(e, ENOMEM, "report: %zu entries", n);
		r.alloc = n;
	}
	for (size_t i = 0; i < n; i++) {
		if (entry_from_json(json_array_get(entries, i), caps, &r.entries[i], e) < 0) {
			report_free(&r);
			return err_wrap(e, "report: entry %zu", i);
		}
		r.n++;
	}
	r.truncated = json_is_true(truncated);
	*ret = r;
	return 0;
}

int report_from_json(const json_t *j, struct report *ret, struct err *e)
{
	struct report_caps caps;

	report_caps_default(&caps);
	return report_from_json_caps(j, &caps, ret, e);
}
