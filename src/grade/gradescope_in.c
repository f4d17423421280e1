/* Gradescope results.json written by an instructor's runner, read as a test report. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "grade/report.h"
#include "util.h"

/*
 * Each element of tests[] is one entry: name (absent: ""), output as the
 * message, score and max_score (absent: -1), status "passed" or "failed".
 * Without a status, a test passed iff it has both scores and score >=
 * max_score; a test that says neither is failed, not guessed passed.
 * A document with a top-level "score" and no (or an empty) tests[] becomes
 * one entry named "score", outcome passed (the runner did report), carrying
 * that score and the top-level output: a manifest can then declare "score".
 * Other keys (visibility, tags, leaderboard, ...) are not the grader's
 * business here and are ignored, but a known key of the wrong type makes
 * the document unusable.
 */

/* *ret = a capped copy of the string at key, NULL when absent or null. */
static int opt_str(const json_t *o, const char *key, const struct report_caps *caps, char **ret,
		   struct err *e)
{
	const json_t *v = json_object_get(o, key);

	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return err_set(e, 0, "\"%s\" is not a string", key);
	*ret = report_str(json_string_value(v), json_string_length(v), caps->max_message, false);
	if (!*ret)
		return err_set(e, ENOMEM, "\"%s\"", key);
	return 0;
}

/* *ret = the number at key, -1 when absent or null. */
static int opt_num(const json_t *o, const char *key, double *ret, struct err *e)
{
	const json_t *v = json_object_get(o, key);

	*ret = -1;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_number(v))
		return err_set(e, 0, "\"%s\" is not a number", key);
	*ret = json_number_value(v);
	return 0;
}

static int outcome_of(const json_t *t, const struct report_entry *en, struct err *e,
		      enum test_outcome *ret)
{
	const json_t *status = json_object_get(t, "status");
	const char *s = json_string_value(status);

	if (!status || json_is_null(status)) {
		bool scored = json_is_number(json_object_get(t, "score")) &&
			      json_is_number(json_object_get(t, "max_score"));

		*ret = scored && en->score >= en->max_score ? OUTCOME_PASSED : OUTCOME_FAILED;
		return 0;
	}
	if (s && strcmp(s, "passed") == 0)
		*ret = OUTCOME_PASSED;
	else if (s && strcmp(s, "failed") == 0)
		*ret = OUTCOME_FAILED;
	else
		return err_set(e, 0, "\"status\" is not \"passed\" or \"failed\"");
	return 0;
}

static int test_entry(const json_t *t, const struct report_caps *caps, struct report_entry *ret,
		      struct err *e)
{
	struct report_entry en = {0};

	if (!json_is_object(t))
		return err_set(e, 0, "not an object");
	if (opt_str(t, "name", caps, &en.name, e) < 0 ||
	    opt_str(t, "output", caps, &en.message, e) < 0 ||
	    opt_num(t, "score", &en.score, e) < 0 ||
	    opt_num(t, "max_score", &en.max_score, e) < 0 || outcome_of(t, &en, e, &en.outcome) < 0)
		goto out_free;
	if (!en.name) {
		en.name = strdup("");
		if (!en.name) {
			err_set(e, ENOMEM, "name");
			goto out_free;
		}
	}
	*ret = en;
	return 0;
out_free:
	free(en.name);
	free(en.message);
	return -1;
}

static int score_entry(const json_t *root, const struct report_caps *caps, struct report *r,
		       struct err *e)
{
	struct report_entry en = {.outcome = OUTCOME_PASSED, .max_score = -1};

	if (opt_num(root, "score", &en.score, e) < 0 ||
	    opt_str(root, "output", caps, &en.message, e) < 0)
		return -1;
	en.name = strdup("score");
	if (!en.name) {
		free(en.message);
		return err_set(e, ENOMEM, "score");
	}
	return report_append(r, caps, &en, e);
}

static int read_results(const json_t *root, const struct report_caps *caps, struct report *r,
			struct err *e)
{
	const json_t *tests = json_object_get(root, "tests");
	size_t n;

	if (!json_is_object(root))
		return err_set(e, 0, "results.json is not a JSON object");
	if (tests && !json_is_null(tests) && !json_is_array(tests))
		return err_set(e, 0, "results.json: \"tests\" is not an array");
	n = json_array_size(tests);
	if (n == 0) {
		const json_t *score = json_object_get(root, "score");

		if (!score || json_is_null(score))
			return 0;
		if (score_entry(root, caps, r, e) < 0)
			return err_wrap(e, "results.json");
		return 0;
	}
	for (size_t i = 0; i < n && !r->truncated; i++) {
		struct report_entry en;

		if (test_entry(json_array_get(tests, i), caps, &en, e) < 0)
			return err_wrap(e, "results.json: tests[%zu]", i);
		if (report_append(r, caps, &en, e) < 0)
			return -1;
	}
	return 0;
}

int gradescope_parse(const char *buf, size_t len, const struct report_caps *caps,
		     struct report *ret, struct err *e)
{
	struct report_caps defaults;
	struct report r = {0};
	json_error_t jerr;
	json_t *root;
	int rc;

	if (!caps) {
		report_caps_default(&defaults);
		caps = &defaults;
	}
	if (len > caps->max_bytes)
		return err_set(e, 0, "results.json is %zu bytes, more than %zu", len,
			       caps->max_bytes);
	if (json_nesting_exceeds(buf, len, caps->max_depth))
		return err_set(e, 0, "results.json nests deeper than %zu", caps->max_depth);
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		/* jansson quotes the offending token: keep the message ASCII. */
		for (char *p = jerr.text; *p; p++) {
			if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
				*p = '?';
		}
		return err_set(e, 0, "results.json is not valid JSON at line %d: %s", jerr.line,
			       jerr.text);
	}
	rc = read_results(root, caps, &r, e);
	json_decref(root);
	if (rc < 0) {
		report_free(&r);
		return -1;
	}
	*ret = r;
	return 0;
}
