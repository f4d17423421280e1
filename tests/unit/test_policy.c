/* Per-assignment policies: parsing, limits, lateness, counting, visibility, gradebook, budgets. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grade/grade.h"
#include "service/policy.h"

#define S    1000LL
#define HOUR (3600 * S)
#define DAY  (24 * HOUR)
/* 2026-12-01T23:59:00Z */
#define DUE	1796169540000LL
#define DUE_STR "2026-12-01T23:59:00Z"

static struct policy parse_ok(const char *text)
{
	struct policy p;
	struct err e;

	if (policy_parse(text, strlen(text), &p, &e) < 0)
		fail_msg("policy_parse %s: %s", text, e.msg);
	return p;
}

/* The parse fails as ERR_INPUT and the message names `needle`. */
static void parse_fails(const char *text, const char *needle)
{
	struct policy p;
	struct err e;

	if (policy_parse(text, strlen(text), &p, &e) == 0)
		fail_msg("policy_parse accepted %s", text);
	assert_int_equal(e.kind, ERR_INPUT);
	if (!strstr(e.msg, needle))
		fail_msg("%s: error '%s' does not name '%s'", text, e.msg, needle);
}

static void assert_canonical(const struct policy *p, const char *expected)
{
	char *text = policy_to_text(p);

	assert_non_null(text);
	assert_string_equal(text, expected);
	/* The canonical text parses to the same policy. */
	struct policy q = parse_ok(text);
	char *again = policy_to_text(&q);
	assert_string_equal(again, text);
	free(again);
	free(text);
}

/* ---- parsing ---- */

static void test_policy_defaults_when_absent_or_null(void **state)
{
	static const char canonical[] =
	    "{\"max_submissions\":null,\"min_interval_s\":0,\"due\":null,\"late\":null,"
	    "\"counting\":\"latest\",\"tests_visibility\":\"hidden\"}";
	struct policy d;

	(void)state;
	policy_default(&d);
	struct policy p = parse_ok("{}");
	assert_int_equal(p.max_submissions, 0);
	assert_int_equal(p.min_interval_s, 0);
	assert_false(p.has_due);
	assert_false(p.has_late);
	assert_int_equal(p.counting, POLICY_COUNT_LATEST);
	assert_int_equal(p.tests, POLICY_TESTS_HIDDEN);
	assert_canonical(&p, canonical);
	assert_canonical(&d, canonical);
	p = parse_ok(canonical);
	assert_canonical(&p, canonical);
}

static void test_policy_parses_every_field(void **state)
{
	(void)state;
	struct policy p = parse_ok(
	    "{\"max_submissions\": 5, \"min_interval_s\": 600, \"due\": \"" DUE_STR "\", "
	    "\"late\": {\"per\": \"hour\", \"penalty_percent\": 2.5, \"cap_percent\": 40, "
	    "\"grace_s\": 300}, \"counting\": \"best\", \"tests_visibility\": \"after_due\"}");
	assert_int_equal(p.max_submissions, 5);
	assert_int_equal(p.min_interval_s, 600);
	assert_true(p.has_due);
	assert_int_equal(p.due_ms, DUE);
	assert_true(p.has_late);
	assert_int_equal(p.late.per, POLICY_PER_HOUR);
	assert_true(p.late.penalty_percent == 2.5);
	assert_true(p.late.cap_percent == 40);
	assert_int_equal(p.late.grace_s, 300);
	assert_int_equal(p.counting, POLICY_COUNT_BEST);
	assert_int_equal(p.tests, POLICY_TESTS_AFTER_DUE);
	assert_canonical(&p, "{\"max_submissions\":5,\"min_interval_s\":600,\"due\":\"" DUE_STR
			     "\",\"late\":{\"per\":\"hour\",\"penalty_percent\":2.5,"
			     "\"cap_percent\":40.0,\"grace_s\":300},\"counting\":\"best\","
			     "\"tests_visibility\":\"after_due\"}");
	/* late's defaults: per day, cap 100, no grace. */
	p = parse_ok("{\"due\": 1796169540000, \"late\": {\"penalty_percent\": 10}}");
	assert_int_equal(p.due_ms, DUE);
	assert_int_equal(p.late.per, POLICY_PER_DAY);
	assert_true(p.late.cap_percent == 100);
	assert_int_equal(p.late.grace_s, 0);
}

static void test_policy_refuses_unknown_fields_naming_them(void **state)
{
	(void)state;
	parse_fails("{\"max_submission\": 3}", "unknown field 'max_submission'");
	parse_fails("{\"due\": \"" DUE_STR
		    "\", \"late\": {\"penalty_percent\": 1, \"per_day\": 1}}",
		    "unknown field 'late.per_day'");
	parse_fails("{\"x\\u0001y\": 1}", "unknown field 'x?y'");
}

static void test_policy_refuses_out_of_range_values(void **state)
{
	(void)state;
	parse_fails("{\"max_submissions\": 0}", "'max_submissions'");
	parse_fails("{\"max_submissions\": -1}", "'max_submissions'");
	parse_fails("{\"max_submissions\": 100001}", "'max_submissions'");
	parse_fails("{\"max_submissions\": 2.5}", "'max_submissions'");
	parse_fails("{\"max_submissions\": \"3\"}", "'max_submissions'");
	parse_fails("{\"min_interval_s\": -1}", "'min_interval_s'");
	parse_fails("{\"min_interval_s\": 604801}", "'min_interval_s'");
	parse_fails("{\"counting\": \"worst\"}", "'counting' must be \"latest\" or \"best\"");
	parse_fails("{\"counting\": \"latest\\u0000x\"}", "malformed JSON");
	parse_fails("{\"tests_visibility\": \"after_due_date\"}",
		    "\"hidden\", \"after_due\" or \"visible\"");
	parse_fails("{\"due\": \"" DUE_STR "\", \"late\": {\"penalty_percent\": 101}}",
		    "'late.penalty_percent' must be a number from 0 to 100");
	parse_fails("{\"due\": \"" DUE_STR "\", \"late\": {\"penalty_percent\": -0.5}}",
		    "'late.penalty_percent'");
	parse_fails("{\"due\": \"" DUE_STR "\", \"late\": {}}",
		    "'late.penalty_percent' is required");
	parse_fails("{\"due\": \"" DUE_STR "\", \"late\": {\"penalty_percent\": 1, "
		    "\"cap_percent\": 100.01}}",
		    "'late.cap_percent'");
	parse_fails("{\"due\": \"" DUE_STR "\", \"late\": {\"penalty_percent\": 1, "
		    "\"grace_s\": 604801}}",
		    "'late.grace_s'");
	parse_fails("{\"due\": \"" DUE_STR "\", \"late\": {\"penalty_percent\": 1, "
		    "\"per\": \"week\"}}",
		    "'late.per'");
	parse_fails("{\"due\": \"" DUE_STR "\", \"late\": 5}", "'late' must be an object");
	parse_fails("{\"late\": {\"penalty_percent\": 1}}", "'late' needs 'due'");
	parse_fails("{\"tests_visibility\": \"after_due\"}", "\"after_due\" needs 'due'");
	/* The document itself. */
	parse_fails("", "empty");
	parse_fails("[]", "expected a JSON object");
	parse_fails("{\"counting\": \"best\", \"counting\": \"latest\"}", "malformed JSON");
	parse_fails("{\"a\": [[[[[[[[1]]]]]]]]}", "nests deeper");
	parse_fails("{\"max_submissions\": 3", "malformed JSON");
}

static void test_policy_due_times(void **state)
{
	static const struct {
		const char *in;
		int64_t ms; /* -1: refused */
	} cases[] = {
	    {"\"" DUE_STR "\"", DUE},
	    {"\"2026-12-01t23:59:00z\"", DUE},
	    {"\"2026-12-01T23:59:00.250Z\"", DUE + 250},
	    {"\"2026-12-01T23:59:00.2509999Z\"", DUE + 250},
	    {"\"2026-12-02T00:59:00+01:00\"", DUE},
	    {"\"2026-12-01T18:59:00-05:00\"", DUE},
	    {"\"1970-01-01T00:00:00Z\"", 0},
	    {"\"2028-02-29T00:00:00Z\"", 1835395200000LL},
	    {"\"9999-12-31T23:59:59.999Z\"", POLICY_TIME_MAX_MS},
	    {"1796169540000", DUE},
	    {"0", 0},
	    {"\"2027-02-29T00:00:00Z\"", -1},
	    {"\"2026-13-01T00:00:00Z\"", -1},
	    {"\"2026-04-31T00:00:00Z\"", -1},
	    {"\"2026-12-01T24:00:00Z\"", -1},
	    {"\"2026-12-01T23:59:60Z\"", -1},
	    {"\"2026-12-01T23:59:00\"", -1},
	    {"\"2026-12-01 23:59:00Z\"", -1},
	    {"\"2026-12-01T23:59:00.Z\"", -1},
	    {"\"2026-12-01T23:59:00.1234567890Z\"", -1},
	    {"\"2026-12-01T23:59:00+24:00\"", -1},
	    {"\"2026-12-01T23:59:00Zjunk\"", -1},
	    {"\"1969-12-31T23:59:59Z\"", -1},
	    {"\"1970-01-01T00:30:00+01:00\"", -1},
	    {"\"+2026-12-01T23:59:00Z\"", -1},
	    {"-1", -1},
	    {"253402300800000", -1},
	    {"1796169540000.0", -1},
	    {"true", -1},
	};
	char text[128];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(text, sizeof(text), "{\"due\": %s}", cases[i].in);
		if (cases[i].ms < 0) {
			parse_fails(text, "'due'");
			continue;
		}
		struct policy p = parse_ok(text);
		if (p.due_ms != cases[i].ms)
			fail_msg("%s: %lld, expected %lld", cases[i].in, (long long)p.due_ms,
				 (long long)cases[i].ms);
	}
}

static void test_policy_time_format(void **state)
{
	char buf[32];

	(void)state;
	policy_time_format(0, buf);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
	policy_time_format(DUE, buf);
	assert_string_equal(buf, DUE_STR);
	policy_time_format(DUE + 7, buf);
	assert_string_equal(buf, "2026-12-01T23:59:00.007Z");
	policy_time_format(951782400000LL, buf);
	assert_string_equal(buf, "2000-02-29T00:00:00Z");
	policy_time_format(POLICY_TIME_MAX_MS, buf);
	assert_string_equal(buf, "9999-12-31T23:59:59.999Z");
	policy_time_format(-5, buf);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
}

static void test_policy_extension_requests(void **state)
{
	struct store_extension x;
	struct err e;
	const char *t;

	(void)state;
	t = "{\"student\": \"ada\", \"extra_s\": 86400}";
	assert_int_equal(policy_extension_parse(t, strlen(t), &x, &e), 0);
	assert_string_equal(x.student, "ada");
	assert_false(x.has_due);
	assert_int_equal(x.extra_s, 86400);
	t = "{\"due\": \"" DUE_STR "\"}";
	assert_int_equal(policy_extension_parse(t, strlen(t), &x, &e), 0);
	assert_string_equal(x.student, "");
	assert_true(x.has_due);
	assert_int_equal(x.due_ms, DUE);
	json_t *j = policy_extension_to_json(&x);
	assert_string_equal(json_string_value(json_object_get(j, "due")), DUE_STR);
	assert_true(json_is_null(json_object_get(j, "extra_s")));
	json_decref(j);
	static const char *const bad[] = {
	    "{\"student\": \"ada\"}",
	    "{\"extra_s\": 60, \"due\": \"" DUE_STR "\"}",
	    "{\"extra_s\": 0}",
	    "{\"extra_s\": 31622401}",
	    "{\"extra_s\": \"60\"}",
	    "{\"extra_s\": 60, \"reason\": \"flu\"}",
	    "{\"student\": \"\", \"extra_s\": 60}",
	    "{\"student\": \"a\\nb\", \"extra_s\": 60}",
	    "{\"due\": \"tomorrow\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (policy_extension_parse(bad[i], strlen(bad[i]), &x, &e) == 0)
			fail_msg("accepted %s", bad[i]);
		assert_int_equal(e.kind, ERR_INPUT);
	}
}

/* ---- submitting ---- */

static void test_policy_submission_limit(void **state)
{
	struct policy p = parse_ok("{\"max_submissions\": 3}");
	struct policy_verdict v;

	(void)state;
	assert_true(policy_check_submit(&p, 0, 0, DUE, &v));
	assert_int_equal(v.refusal, POLICY_ALLOWED);
	assert_true(policy_check_submit(&p, 2, DUE - 1, DUE, &v));
	assert_false(policy_check_submit(&p, 3, DUE - DAY, DUE, &v));
	assert_int_equal(v.refusal, POLICY_LIMIT);
	assert_int_equal(v.next_ms, 0);
	assert_non_null(strstr(v.message, "limit of 3"));
	assert_string_equal(err_code(policy_refusal_kind(v.refusal)), "submission_limit");
	assert_int_equal(err_http_status(policy_refusal_kind(v.refusal)), 403);
	/* No limit at all by default. */
	policy_default(&p);
	assert_true(policy_check_submit(&p, 1000000, DUE, DUE, &v));
}

static void test_policy_min_interval_boundary(void **state)
{
	struct policy p = parse_ok("{\"min_interval_s\": 60, \"max_submissions\": 10}");
	struct policy_verdict v;
	const int64_t last = DUE - HOUR;

	(void)state;
	assert_false(policy_check_submit(&p, 1, last, last + 60 * S - 1, &v));
	assert_int_equal(v.refusal, POLICY_TOO_SOON);
	assert_int_equal(v.next_ms, last + 60 * S);
	assert_non_null(strstr(v.message, "2026-12-01T23:00:00Z"));
	assert_non_null(strstr(v.message, "in 1 s"));
	assert_string_equal(err_code(policy_refusal_kind(v.refusal)), "too_soon");
	assert_int_equal(err_http_status(policy_refusal_kind(v.refusal)), 429);
	/* Exactly the interval after the last: allowed. */
	assert_true(policy_check_submit(&p, 1, last, last + 60 * S, &v));
	/* No earlier submission: allowed. */
	assert_true(policy_check_submit(&p, 0, 0, last, &v));
	/* The limit is checked first: waiting would not help. */
	assert_false(policy_check_submit(&p, 10, last, last + 1, &v));
	assert_int_equal(v.refusal, POLICY_LIMIT);
}

/* ---- lateness ---- */

static void late(const struct policy *p, const struct store_extension *x, int64_t at,
		 struct policy_lateness *l)
{
	policy_late(p, x, at, 10.0, l);
}

static void test_policy_late_at_due_and_in_grace(void **state)
{
	struct policy p = parse_ok("{\"due\": \"" DUE_STR "\", \"late\": {\"penalty_percent\": 10, "
				   "\"grace_s\": 300}}");
	struct policy_lateness l;

	(void)state;
	late(&p, NULL, DUE, &l);
	assert_true(l.has_due);
	assert_false(l.late);
	assert_int_equal(l.late_ms, 0);
	assert_true(l.score == 10.0);
	/* Inside grace, up to and including its last millisecond. */
	late(&p, NULL, DUE + 1, &l);
	assert_false(l.late);
	assert_int_equal(l.late_ms, 1);
	late(&p, NULL, DUE + 300 * S, &l);
	assert_false(l.late);
	assert_true(l.penalty_percent == 0);
	/* One millisecond past grace: a day started. */
	late(&p, NULL, DUE + 300 * S + 1, &l);
	assert_true(l.late);
	assert_int_equal(l.units, 1);
	assert_true(l.penalty_percent == 10);
	assert_true(fabs(l.score - 9.0) < 1e-12);
	/* Days count from due + grace. */
	late(&p, NULL, DUE + 300 * S + DAY, &l);
	assert_int_equal(l.units, 1);
	late(&p, NULL, DUE + 300 * S + DAY + 1, &l);
	assert_int_equal(l.units, 2);
	assert_true(l.penalty_percent == 20);
	/* Early is on time. */
	late(&p, NULL, DUE - DAY, &l);
	assert_false(l.late);
	assert_int_equal(l.late_ms, 0);
}

static void test_policy_late_per_hour_and_cap(void **state)
{
	struct policy p = parse_ok("{\"due\": \"" DUE_STR "\", \"late\": {\"per\": \"hour\", "
				   "\"penalty_percent\": 5, \"cap_percent\": 30}}");
	struct policy_lateness l;

	(void)state;
	late(&p, NULL, DUE + HOUR, &l);
	assert_int_equal(l.units, 1);
	assert_true(l.penalty_percent == 5);
	late(&p, NULL, DUE + 6 * HOUR, &l);
	assert_int_equal(l.units, 6);
	assert_true(l.penalty_percent == 30);
	/* The cap holds however late. */
	late(&p, NULL, DUE + 300 * DAY, &l);
	assert_int_equal(l.units, 7200);
	assert_true(l.penalty_percent == 30);
	assert_true(fabs(l.score - 7.0) < 1e-12);
	/* A full penalty leaves nothing, never less. */
	p = parse_ok("{\"due\": \"" DUE_STR "\", \"late\": {\"penalty_percent\": 100}}");
	late(&p, NULL, DUE + 3 * DAY, &l);
	assert_true(l.penalty_percent == 100);
	assert_true(l.score == 0);
	/* No score, no adjusted score. */
	policy_late(&p, NULL, DUE + DAY, NAN, &l);
	assert_true(isnan(l.score));
}

static void test_policy_late_with_extension(void **state)
{
	struct policy p = parse_ok("{\"due\": \"" DUE_STR "\", \"late\": {\"penalty_percent\": 10, "
				   "\"grace_s\": 60}}");
	struct store_extension extra = {.student = "ada", .extra_s = 2 * 86400};
	struct store_extension moved = {.student = "bob", .has_due = true, .due_ms = DUE - DAY};
	struct policy_lateness l;
	int64_t due;

	(void)state;
	assert_true(policy_due_for(&p, &extra, &due));
	assert_int_equal(due, DUE + 2 * DAY);
	late(&p, &extra, DUE + 2 * DAY, &l);
	assert_false(l.late);
	assert_int_equal(l.due_ms, DUE + 2 * DAY);
	late(&p, &extra, DUE + 2 * DAY + 60 * S, &l);
	assert_false(l.late);
	late(&p, &extra, DUE + 2 * DAY + 60 * S + 1, &l);
	assert_true(l.late);
	assert_int_equal(l.units, 1);
	/* A new due date replaces the assignment's, earlier too. */
	late(&p, &moved, DUE, &l);
	assert_true(l.late);
	assert_int_equal(l.units, 1);
	/* Without a due date an extension changes nothing. */
	struct policy none;
	policy_default(&none);
	assert_false(policy_due_for(&none, &extra, &due));
	late(&none, &extra, DUE + 100 * DAY, &l);
	assert_false(l.has_due);
	assert_false(l.late);
	assert_true(l.score == 10.0);
}

static void test_policy_due_without_late_policy_shows_lateness_only(void **state)
{
	struct policy p = parse_ok("{\"due\": \"" DUE_STR "\"}");
	struct policy_lateness l;

	(void)state;
	late(&p, NULL, DUE + 3 * DAY, &l);
	assert_true(l.late);
	assert_int_equal(l.late_ms, 3 * DAY);
	assert_int_equal(l.units, 0);
	assert_true(l.penalty_percent == 0);
	assert_true(l.score == 10.0);
}

/* ---- counting ---- */

static struct store_grade_row row(int64_t id, int64_t at, double score, const char *status)
{
	struct store_grade_row r = {.submission_id = id,
				    .received_ms = at,
				    .has_result = status != NULL,
				    .result_id = id * 10,
				    .score = score,
				    .max_score = 10,
				    .job_state = STORE_JOB_DONE};
	snprintf(r.student, sizeof(r.student), "ada");
	snprintf(r.status, sizeof(r.status), "%s", status ? status : "");
	r.not_gradable = status && strcmp(status, "error") == 0;
	return r;
}

static size_t counting(const char *policy, const struct store_grade_row *rows, size_t n)
{
	struct policy p = parse_ok(policy);
	size_t k = 999;

	if (!policy_counting(&p, NULL, rows, n, &k))
		return 999;
	return k;
}

static void test_policy_counting_latest_and_best(void **state)
{
	struct store_grade_row rows[] = {
	    row(1, DUE - 3 * HOUR, 4, "graded"),
	    row(2, DUE - 2 * HOUR, 9, "graded"),
	    row(3, DUE - HOUR, 0, "compile_error"),
	};

	(void)state;
	assert_int_equal(counting("{}", rows, 3), 2);
	assert_int_equal(counting("{\"counting\": \"best\"}", rows, 3), 1);
	/* A student's failure counts, as latest. */
	assert_int_equal(counting("{\"counting\": \"latest\"}", rows, 3), 2);
}

static void test_policy_counting_ignores_not_gradable_and_pending(void **state)
{
	struct store_grade_row rows[] = {
	    row(1, DUE - 3 * HOUR, 6, "graded"),
	    row(2, DUE - 2 * HOUR, NAN, "error"), /* ours: no penalty */
	    row(3, DUE - HOUR, NAN, NULL),	  /* pending */
	};
	struct store_grade_row ours = row(4, DUE, NAN, NULL);

	(void)state;
	assert_int_equal(counting("{}", rows, 3), 0);
	assert_int_equal(counting("{\"counting\": \"best\"}", rows, 3), 0);
	/* A job that ended not gradable with no result never counts. */
	ours.not_gradable = true;
	assert_int_equal(counting("{}", &ours, 1), 999);
	assert_int_equal(counting("{}", &rows[1], 2), 999);
	assert_int_equal(counting("{}", rows, 0), 999);
}

static void test_policy_counting_ties(void **state)
{
	struct store_grade_row rows[] = {
	    row(5, DUE - 3 * HOUR, 8, "graded"),
	    row(6, DUE - 2 * HOUR, 8, "graded"),
	    row(7, DUE - 2 * HOUR, 3, "graded"),
	    row(8, DUE - 5 * HOUR, NAN, "crashed"),
	};

	(void)state;
	/* Best: a tie goes to the earliest submission. */
	assert_int_equal(counting("{\"counting\": \"best\"}", rows, 4), 0);
	/* Latest: the same received time goes to the later id. */
	assert_int_equal(counting("{}", rows, 4), 2);
	/* No score is below every score, but still counts when alone. */
	assert_int_equal(counting("{\"counting\": \"best\"}", &rows[3], 1), 0);
	struct store_grade_row two[] = {rows[3], rows[2]};
	assert_int_equal(counting("{\"counting\": \"best\"}", two, 2), 1);
}

static void test_policy_best_is_after_the_late_penalty(void **state)
{
	struct store_grade_row rows[] = {
	    row(1, DUE - HOUR, 8, "graded"),
	    row(2, DUE + HOUR, 10, "graded"), /* late: 10 * 0.7 = 7 */
	    row(3, DUE + 2 * DAY, 10, "graded"),
	};
	static const char policy[] = "{\"due\": \"" DUE_STR "\", \"counting\": \"best\", "
				     "\"late\": {\"penalty_percent\": 30}}";

	(void)state;
	assert_int_equal(counting(policy, rows, 3), 0);
	/* With an extension the late one is on time and best. */
	struct policy p = parse_ok(policy);
	struct store_extension x = {.student = "ada", .extra_s = 3600};
	size_t k = 999;
	assert_true(policy_counting(&p, &x, rows, 3, &k));
	assert_int_equal(k, 1);
}

/* ---- visibility ---- */

static json_t *sample_result(void)
{
	json_error_t je;
	json_t *r = json_loads(
	    "{\"schema_version\": 1, \"status\": \"graded\", \"reason\": null, \"score\": 3,"
	    " \"max_score\": 4, \"view\": \"instructor\", \"tests\": ["
	    " {\"name\": \"t_visible\", \"classname\": \"c\", \"status\": \"passed\","
	    "  \"score\": 1, \"max_score\": 1, \"visibility\": \"visible\","
	    "  \"message\": null, \"reason\": null},"
	    " {\"name\": \"t_hidden\", \"classname\": \"c\", \"status\": \"failed\","
	    "  \"score\": 0, \"max_score\": 1, \"visibility\": \"hidden\","
	    "  \"message\": \"input was 42\", \"reason\": \"wrong_answer\"},"
	    " {\"name\": \"t_due\", \"classname\": \"c\", \"status\": \"failed\","
	    "  \"score\": 0, \"max_score\": 1, \"visibility\": \"after_due_date\","
	    "  \"message\": \"off by one\", \"reason\": \"wrong_answer\"},"
	    " {\"name\": \"t_pub\", \"classname\": \"c\", \"status\": \"passed\","
	    "  \"score\": 1, \"max_score\": 1, \"visibility\": \"after_published\","
	    "  \"message\": \"fine\", \"reason\": \"accepted\"}],"
	    " \"steps\": ["
	    " {\"name\": \"case:t_hidden\", \"status\": \"ok\", \"stdout\": \"41\","
	    "  \"cpu_ms\": 3},"
	    " {\"name\": \"case:t_due\", \"status\": \"ok\", \"stdout\": \"7\", \"cpu_ms\": 4},"
	    " {\"name\": \"test\", \"status\": \"ok\", \"stdout\": \"secret\", \"cpu_ms\": 5}],"
	    " \"submission\": {\"path\": \"/srv/ada.zip\"}}",
	    0, &je);
	if (!r)
		fail_msg("sample: %s", je.text);
	return r;
}

static const json_t *test_at(const json_t *view, size_t i)
{
	return json_array_get(json_object_get(view, "tests"), i);
}

static const char *field(const json_t *test, const char *key)
{
	return json_string_value(json_object_get(test, key));
}

static bool has_step(const json_t *view, const char *name)
{
	const json_t *s;
	size_t i;

	json_array_foreach(json_object_get(view, "steps"), i, s)
	{
		if (strcmp(field(s, "name"), name) == 0)
			return true;
	}
	return false;
}

/* What every student view keeps out, whatever the policy. */
static void assert_never_revealed(const json_t *view)
{
	const json_t *s;
	size_t i;

	assert_string_equal(field(view, "view"), "student");
	assert_string_equal(field(test_at(view, 1), "name"), "hidden test 1");
	assert_true(json_is_null(json_object_get(test_at(view, 1), "message")));
	assert_true(json_is_null(json_object_get(test_at(view, 1), "reason")));
	assert_string_equal(field(test_at(view, 1), "visibility"), "hidden");
	assert_false(has_step(view, "case:t_hidden"));
	json_array_foreach(json_object_get(view, "steps"), i, s)
	{
		assert_true(json_is_null(json_object_get(s, "stdout")));
		assert_true(json_is_null(json_object_get(s, "cpu_ms")));
	}
	assert_true(json_is_null(json_object_get(json_object_get(view, "submission"), "path")));
}

static void test_policy_hidden_is_todays_student_view(void **state)
{
	json_t *r = sample_result();
	struct policy p;

	(void)state;
	policy_default(&p);
	json_t *today = grade_student_view(r);
	json_t *view = policy_student_view(&p, NULL, DUE + 365 * DAY, r);
	assert_true(json_equal(today, view));
	assert_never_revealed(view);
	assert_string_equal(field(test_at(view, 2), "name"), "hidden test 2");
	assert_string_equal(field(test_at(view, 2), "visibility"), "after_due_date");
	assert_string_equal(field(test_at(view, 3), "name"), "hidden test 3");
	/* The result itself is untouched. */
	assert_string_equal(field(test_at(r, 2), "name"), "t_due");
	json_decref(view);
	json_decref(today);
	json_decref(r);
}

static void test_policy_visible_reveals_all_but_hidden_tests(void **state)
{
	json_t *r = sample_result();
	struct policy p = parse_ok("{\"tests_visibility\": \"visible\"}");

	(void)state;
	json_t *view = policy_student_view(&p, NULL, 0, r);
	assert_never_revealed(view);
	assert_string_equal(field(test_at(view, 0), "name"), "t_visible");
	assert_string_equal(field(test_at(view, 2), "name"), "t_due");
	assert_string_equal(field(test_at(view, 2), "message"), "off by one");
	assert_string_equal(field(test_at(view, 2), "reason"), "wrong_answer");
	assert_string_equal(field(test_at(view, 2), "visibility"), "after_due_date");
	assert_true(has_step(view, "case:t_due"));
	assert_string_equal(field(test_at(view, 3), "name"), "t_pub");
	assert_string_equal(field(test_at(view, 3), "visibility"), "after_published");
	json_decref(view);
	json_decref(r);
}

static void test_policy_after_due_reveals_at_due_plus_grace(void **state)
{
	json_t *r = sample_result();
	struct policy p =
	    parse_ok("{\"due\": \"" DUE_STR "\", \"tests_visibility\": \"after_due\", "
		     "\"late\": {\"penalty_percent\": 10, \"grace_s\": 600}}");
	struct store_extension x = {.student = "ada", .extra_s = 86400};

	(void)state;
	json_t *before = policy_student_view(&p, NULL, DUE + 600 * S - 1, r);
	assert_never_revealed(before);
	assert_string_equal(field(test_at(before, 2), "name"), "hidden test 2");
	json_t *after = policy_student_view(&p, NULL, DUE + 600 * S, r);
	assert_never_revealed(after);
	assert_string_equal(field(test_at(after, 2), "name"), "t_due");
	assert_string_equal(field(test_at(after, 2), "message"), "off by one");
	/* after_published waits for "visible". */
	assert_string_equal(field(test_at(after, 3), "name"), "hidden test 2");
	/* A student with an extension sees them after their own due date. */
	json_t *ext = policy_student_view(&p, &x, DUE + 600 * S, r);
	assert_string_equal(field(test_at(ext, 2), "name"), "hidden test 2");
	assert_true(policy_test_revealed(&p, &x, DUE + DAY + 600 * S, "after_due_date"));
	assert_false(policy_test_revealed(&p, &x, DUE + DAY + 600 * S, "hidden"));
	assert_false(policy_test_revealed(&p, &x, DUE + DAY + 600 * S, "after_published"));
	assert_false(policy_test_revealed(&p, &x, DUE + DAY + 600 * S, "bogus"));
	assert_false(policy_test_revealed(&p, &x, DUE + DAY + 600 * S, NULL));
	json_decref(ext);
	json_decref(after);
	json_decref(before);
	json_decref(r);
}

static void test_policy_gradescope_visibility(void **state)
{
	json_t *r = sample_result();
	struct policy hidden, visible = parse_ok("{\"tests_visibility\": \"visible\"}");
	struct policy after = parse_ok("{\"due\": \"" DUE_STR "\", \"tests_visibility\": "
				       "\"after_due\"}");
	static const char *const want[3][4] = {
	    {"visible", "hidden", "after_due_date", "after_published"},
	    {"visible", "hidden", "visible", "visible"},
	    {"visible", "hidden", "visible", "after_published"},
	};
	const struct policy *ps[3] = {&hidden, &visible, &after};

	(void)state;
	policy_default(&hidden);
	for (int k = 0; k < 3; k++) {
		json_t *gs = policy_gradescope(ps[k], NULL, DUE, r);
		for (size_t i = 0; i < 4; i++)
			assert_string_equal(field(test_at(gs, i), "visibility"), want[k][i]);
		assert_string_equal(field(gs, "stdout_visibility"), "hidden");
		json_decref(gs);
	}
	/* Before the due date, after_due leaves Gradescope's own schedule. */
	json_t *gs = policy_gradescope(&after, NULL, DUE - 1, r);
	assert_string_equal(field(test_at(gs, 2), "visibility"), "after_due_date");
	json_decref(gs);
	json_decref(r);
}

/* Every format a student may ask for carries nothing of a test they may
 * not see: no name, message, reason, raw output or step number; staff's
 * result and Gradescope output do (so this check can fail). */
static void test_policy_result_view_for_every_viewer_and_format(void **state)
{
	static const char *const secrets[] = {"t_hidden", "input was 42", "wrong_answer", "t_due",
					      "off by one", "secret", "/srv/ada.zip", "\"41\""};
	static const enum result_format formats[] = {RESULT_FORMAT_RESULT, RESULT_FORMAT_STUDENT,
						     RESULT_FORMAT_GRADESCOPE};
	json_t *r = sample_result();
	struct policy dflt, after = parse_ok("{\"due\": \"" DUE_STR "\", \"tests_visibility\": "
					     "\"after_due\"}");

	(void)state;
	policy_default(&dflt);
	for (int with_policy = 0; with_policy < 3; with_policy++) {
		const struct policy *p = with_policy == 0 ? NULL : with_policy == 1 ? &dflt : &after;
		for (size_t f = 0; f < 3; f++) {
			/* Before the due date: after_due reveals nothing yet. */
			json_t *v = policy_result_view(RESULT_VIEWER_STUDENT, formats[f], p, NULL,
						       DUE - 1, r);
			char *text = json_dumps(v, JSON_COMPACT);
			assert_non_null(text);
			for (size_t k = 0; k < sizeof(secrets) / sizeof(secrets[0]); k++)
				if (strstr(text, secrets[k]))
					fail_msg("policy %d, format %zu: '%s' in %s", with_policy,
						 f, secrets[k], text);
			if (formats[f] == RESULT_FORMAT_GRADESCOPE)
				assert_true(json_real_value(json_object_get(v, "execution_time")) ==
					    0);
			else
				assert_string_equal(field(v, "view"), "student");
			free(text);
			json_decref(v);
		}
	}
	/* Staff: the student format is the student's; the others carry it all. */
	json_t *v = policy_result_view(RESULT_VIEWER_STAFF, RESULT_FORMAT_STUDENT, &dflt, NULL, DUE, r);
	assert_never_revealed(v);
	json_decref(v);
	v = policy_result_view(RESULT_VIEWER_STAFF, RESULT_FORMAT_RESULT, &dflt, NULL, DUE, r);
	assert_true(json_equal(v, r));
	json_decref(v);
	v = policy_result_view(RESULT_VIEWER_STAFF, RESULT_FORMAT_GRADESCOPE, NULL, NULL, DUE, r);
	assert_string_equal(field(test_at(v, 1), "name"), "t_hidden");
	assert_string_equal(field(test_at(v, 1), "output"), "input was 42");
	json_decref(v);
	/* After the due date, after_due reveals t_due to the student too. */
	v = policy_result_view(RESULT_VIEWER_STUDENT, RESULT_FORMAT_GRADESCOPE, &after, NULL,
			       DUE + 1, r);
	assert_string_equal(field(test_at(v, 2), "name"), "t_due");
	assert_string_equal(field(test_at(v, 1), "name"), "hidden test 1");
	json_decref(v);
	json_decref(r);
}

/* ---- the gradebook ---- */

static struct store_grade_row student_row(const char *student, int64_t id, int64_t at, double score,
					  const char *status)
{
	struct store_grade_row r = row(id, at, score, status);
	snprintf(r.student, sizeof(r.student), "%s", student);
	return r;
}

static void test_policy_gradebook_csv(void **state)
{
	struct policy p = parse_ok("{\"due\": \"" DUE_STR "\", \"counting\": \"best\", "
				   "\"late\": {\"penalty_percent\": 15, \"cap_percent\": 50}}");
	struct store_grade_row rows[] = {
	    student_row("+1 555", 1, DUE - DAY, 7, "graded"),
	    student_row("=HYPERLINK(\"x\")", 2, DUE + HOUR, 8.5, "graded"),
	    student_row("@sum", 3, DUE, NAN, "error"),
	    student_row("ada", 4, DUE - HOUR, 6, "graded"),
	    student_row("ada", 5, DUE + DAY + 1, 10, "graded"), /* 2 days: 7 */
	    student_row("ada", 6, DUE + 9 * DAY, NAN, NULL),
	    student_row("bob;=1+1, jr", 7, DUE + 2 * DAY, 10, "graded"),
	};
	struct store_extension exts[] = {{.student = "bob;=1+1, jr", .extra_s = 3 * 86400}};
	struct policy_grade *g = NULL;
	size_t n = 0, len = 0;
	struct err e;

	(void)state;
	assert_int_equal(policy_gradebook(&p, rows, 7, exts, 1, &g, &n, &e), 0);
	assert_int_equal(n, 5);
	char *csv = policy_gradebook_csv(&p, g, n, &len);
	assert_non_null(csv);
	assert_int_equal(strlen(csv), len);
	static const char want[] =
	    "student,submission_id,submitted_at,status,raw_score,max_score,late,late_seconds,"
	    "days_late,penalty_percent,final_score,submissions,pending,extension\r\n"
	    "\"'+1 555\",1,\"2026-11-30T23:59:00Z\",\"graded\",7,10,\"no\",0,0,0,7,1,0,\"no\"\r\n"
	    "\"'=HYPERLINK(\"\"x\"\")\",2,\"2026-12-02T00:59:00Z\",\"graded\",8.5,10,\"yes\",3600,"
	    "1,15,7.225,1,0,\"no\"\r\n"
	    "\"'@sum\",,,,,,,,,,,0,0,\"no\"\r\n"
	    "\"ada\",5,\"2026-12-02T23:59:00.001Z\",\"graded\",10,10,\"yes\",86400,2,30,7,3,1,"
	    "\"no\"\r\n"
	    "\"bob;'=1+1, jr\",7,\"2026-12-03T23:59:00Z\",\"graded\",10,10,\"no\",0,0,0,10,1,0,"
	    "\"yes\"\r\n";
	assert_string_equal(csv, want);
	free(csv);
	free(g);
}

static void test_policy_gradebook_json(void **state)
{
	struct policy p = parse_ok("{\"due\": \"" DUE_STR "\", "
				   "\"late\": {\"per\": \"hour\", \"penalty_percent\": 1}}");
	struct store_grade_row rows[] = {
	    student_row("ada", 4, DUE + 90 * 60 * S, 6, "graded"),
	    student_row("cy", 9, DUE, NAN, NULL),
	};
	struct policy_grade *g = NULL;
	size_t n = 0;
	struct err e;

	(void)state;
	assert_int_equal(policy_gradebook(&p, rows, 2, NULL, 0, &g, &n, &e), 0);
	assert_int_equal(n, 2);
	json_t *doc = policy_gradebook_json(42, &p, g, n);
	assert_int_equal(json_integer_value(json_object_get(doc, "assignment_id")), 42);
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(doc, "policy"), "due")), DUE_STR);
	json_t *students = json_object_get(doc, "students");
	assert_int_equal(json_array_size(students), 2);
	json_t *ada = json_array_get(students, 0), *c = json_object_get(ada, "counting");
	assert_string_equal(field(ada, "student"), "ada");
	assert_int_equal(json_integer_value(json_object_get(c, "submission_id")), 4);
	assert_string_equal(field(c, "submitted_at"), "2026-12-02T01:29:00Z");
	assert_true(json_real_value(json_object_get(c, "raw_score")) == 6);
	json_t *l = json_object_get(c, "late");
	assert_true(json_is_true(json_object_get(l, "late")));
	assert_int_equal(json_integer_value(json_object_get(l, "units")), 2);
	assert_string_equal(field(l, "per"), "hour");
	assert_true(json_real_value(json_object_get(l, "penalty_percent")) == 2);
	assert_true(fabs(json_real_value(json_object_get(c, "final_score")) - 5.88) < 1e-12);
	json_t *cy = json_array_get(students, 1);
	assert_true(json_is_null(json_object_get(cy, "counting")));
	assert_int_equal(json_integer_value(json_object_get(cy, "pending")), 1);
	char *text = json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(15));
	assert_non_null(strstr(text, "\"final_score\":5.88"));
	free(text);
	json_decref(doc);
	free(g);
	/* Nothing to export: a header only, and an empty list. */
	char *csv = policy_gradebook_csv(&p, NULL, 0, NULL);
	assert_non_null(strstr(csv, "hours_late"));
	assert_string_equal(strchr(csv, '\n'), "\n");
	free(csv);
	assert_int_equal(policy_gradebook(&p, rows, 0, NULL, 0, &g, &n, &e), 0);
	assert_int_equal(n, 0);
	assert_null(g);
}

/* ---- budgets ---- */

static void test_policy_cost(void **state)
{
	struct policy_prices prices = {.vcpu_hour = 0.10, .gib_hour = 0.01};

	(void)state;
	assert_true(fabs(policy_cost(3600, 3600, NULL) - (0.0504 + 0.0162)) < 1e-12);
	/* E2B's own example: 8 vCPU and 4 GiB for an hour cost $0.468. */
	assert_true(fabs(policy_cost(8 * 3600, 4 * 3600, NULL) - 0.468) < 1e-9);
	assert_true(fabs(policy_cost(1800, 7200, &prices) - (0.05 + 0.02)) < 1e-12);
	assert_true(policy_cost(-5, NAN, NULL) == 0);
	assert_true(policy_cost(INFINITY, 0, NULL) == 0);
}

static void test_policy_daily_cpu_cap(void **state)
{
	struct policy_verdict v;
	const int64_t midnight = DUE + 60 * S; /* 2026-12-02T00:00:00Z */

	(void)state;
	assert_int_equal(policy_day_start(DUE), midnight - DAY);
	assert_int_equal(policy_day_start(midnight), midnight);
	assert_true(policy_budget_eval(NAN, 1e9, DUE, &v));
	assert_true(policy_budget_eval(3600, 3599.9, DUE, &v));
	assert_int_equal(v.refusal, POLICY_ALLOWED);
	assert_false(policy_budget_eval(3600, 3600, DUE, &v));
	assert_int_equal(v.refusal, POLICY_OVER_BUDGET);
	assert_int_equal(v.next_ms, midnight);
	assert_non_null(strstr(v.message, "3600 of its 3600 CPU-seconds"));
	assert_non_null(strstr(v.message, "2026-12-02T00:00:00Z"));
	assert_non_null(strstr(v.message, "admin"));
	assert_string_equal(err_code(policy_refusal_kind(v.refusal)), "budget_exceeded");
	assert_int_equal(err_http_status(policy_refusal_kind(v.refusal)), 403);
	/* A cap of 0 stops every submission. */
	assert_false(policy_budget_eval(0, 0, DUE, &v));
	assert_int_equal(policy_refusal_kind(POLICY_ALLOWED), ERR_INTERNAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_policy_defaults_when_absent_or_null),
	    cmocka_unit_test(test_policy_parses_every_field),
	    cmocka_unit_test(test_policy_refuses_unknown_fields_naming_them),
	    cmocka_unit_test(test_policy_refuses_out_of_range_values),
	    cmocka_unit_test(test_policy_due_times),
	    cmocka_unit_test(test_policy_time_format),
	    cmocka_unit_test(test_policy_extension_requests),
	    cmocka_unit_test(test_policy_submission_limit),
	    cmocka_unit_test(test_policy_min_interval_boundary),
	    cmocka_unit_test(test_policy_late_at_due_and_in_grace),
	    cmocka_unit_test(test_policy_late_per_hour_and_cap),
	    cmocka_unit_test(test_policy_late_with_extension),
	    cmocka_unit_test(test_policy_due_without_late_policy_shows_lateness_only),
	    cmocka_unit_test(test_policy_counting_latest_and_best),
	    cmocka_unit_test(test_policy_counting_ignores_not_gradable_and_pending),
	    cmocka_unit_test(test_policy_counting_ties),
	    cmocka_unit_test(test_policy_best_is_after_the_late_penalty),
	    cmocka_unit_test(test_policy_hidden_is_todays_student_view),
	    cmocka_unit_test(test_policy_visible_reveals_all_but_hidden_tests),
	    cmocka_unit_test(test_policy_after_due_reveals_at_due_plus_grace),
	    cmocka_unit_test(test_policy_gradescope_visibility),
	    cmocka_unit_test(test_policy_result_view_for_every_viewer_and_format),
	    cmocka_unit_test(test_policy_gradebook_csv),
	    cmocka_unit_test(test_policy_gradebook_json),
	    cmocka_unit_test(test_policy_cost),
	    cmocka_unit_test(test_policy_daily_cpu_cap),
	};
	return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
