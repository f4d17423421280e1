/* Unit tests of the report parsers (JUnit, TAP, Gradescope) and the report's JSON form. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "capbuf.h"
#include "grade/report.h"
#include "harness.h"
#include "util.h"

#include "../../bench/report_shapes.h"

/*
 * Golden files: every tests/data/reports/<name>.{xml,tap,json} is parsed by
 * the parser its extension names, and the result (report_to_json(), or
 * {"error": message} when the parser refuses it) must equal
 * <name>.expected.json.  PROCTOR_REGEN=1 rewrites the expected files
 * instead; review the diff before committing it.
 */
#define REPORTS TEST_DATA "/reports"

/* A hostile input must be dealt with in well under this, even under ASan. */
#define QUICK_NS (2000ull * 1000 * 1000)

typedef int (*parse_fn)(const char *, size_t, const struct report_caps *, struct report *,
			struct err *);

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static parse_fn parser_for(const char *name)
{
	if (ends_with(name, ".expected.json"))
		return NULL;
	if (ends_with(name, ".xml"))
		return junit_parse;
	if (ends_with(name, ".tap"))
		return tap_parse;
	if (ends_with(name, ".json"))
		return gradescope_parse;
	return NULL;
}

static char *read_data(const char *name, size_t *ret_len)
{
	char path[4096];
	FILE *f;
	char *buf;
	long len;

	snprintf(path, sizeof(path), "%s/%s", REPORTS, name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len >= 0);
	rewind(f);
	buf = malloc((size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = '\0';
	fclose(f);
	*ret_len = (size_t)len;
	return buf;
}

/* Invariants every parsed report keeps, whatever the input. */
static void check_invariants(const struct report *r, const struct report_caps *caps)
{
	assert_true(r->n <= caps->max_entries);
	for (size_t i = 0; i < r->n; i++) {
		const struct report_entry *en = &r->entries[i];

		assert_non_null(en->name);
		assert_true(strlen(en->name) <= caps->max_message && harness_valid_utf8(en->name));
		if (en->classname)
			assert_true(strlen(en->classname) <= caps->max_message &&
				    harness_valid_utf8(en->classname));
		if (en->message)
			assert_true(strlen(en->message) <= caps->max_message &&
				    harness_valid_utf8(en->message));
		assert_true(en->outcome <= OUTCOME_SKIPPED);
	}
}

/* Parse, check the invariants and the JSON round trip, time it. */
static int parse_timed(parse_fn parse, const char *buf, size_t len, const struct report_caps *caps,
		       struct report *r, struct err *e)
{
	struct report_caps defaults;
	uint64_t t0 = now_ns();
	int rc = parse(buf, len, caps, r, e);
	uint64_t took = now_ns() - t0;

	if (!caps) {
		report_caps_default(&defaults);
		caps = &defaults;
	}
	assert_true(took < QUICK_NS);
	if (rc == 0) {
		json_t *j = report_to_json(r), *again_j;
		struct report again;
		struct err e2;

		check_invariants(r, caps);
		assert_non_null(j);
		assert_int_equal(report_from_json_caps(j, caps, &again, &e2), 0);
		again_j = report_to_json(&again);
		assert_true(json_equal(j, again_j));
		json_decref(j);
		json_decref(again_j);
		report_free(&again);
	} else {
		assert_true(strlen(e->msg) > 0);
	}
	return rc;
}

static int parse_file(const char *name, struct report *r, struct err *e)
{
	size_t len;
	char *buf = read_data(name, &len);
	int rc = parse_timed(parser_for(name), buf, len, NULL, r, e);

	free(buf);
	return rc;
}

/* A golden input that must parse. */
static struct report parsed(const char *name)
{
	struct report r;
	struct err e;

	if (parse_file(name, &r, &e) < 0)
		fail_msg("%s: %s", name, e.msg);
	return r;
}

static const struct report_entry *entry(const struct report *r, const char *name)
{
	for (size_t i = 0; i < r->n; i++) {
		if (strcmp(r->entries[i].name, name) == 0)
			return &r->entries[i];
	}
	fail_msg("no entry named '%s'", name);
	return NULL;
}

static void assert_outcome(const struct report *r, const char *name, enum test_outcome o)
{
	const struct report_entry *en = entry(r, name);

	if (en->outcome != o)
		fail_msg("'%s' is %s, want %s", name, test_outcome_name(en->outcome),
			 test_outcome_name(o));
}

static void assert_refused(const char *name, const char *why)
{
	struct report r;
	struct err e;

	if (parse_file(name, &r, &e) == 0)
		fail_msg("%s: parsed, want refused (%s)", name, why);
	if (!strstr(e.msg, why))
		fail_msg("%s: refused with '%s', want '%s'", name, e.msg, why);
}

/* ---- golden files ---- */

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_golden_files_match_expected_json(void **state)
{
	bool regen = getenv("PROCTOR_REGEN") && strcmp(getenv("PROCTOR_REGEN"), "1") == 0;
	DIR *d = opendir(REPORTS);
	struct dirent *de;
	char *names[512];
	size_t n = 0, mismatches = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		if (parser_for(de->d_name)) {
			assert_true(n < sizeof(names) / sizeof(names[0]));
			names[n++] = strdup(de->d_name);
		}
	}
	closedir(d);
	assert_true(n > 0);
	qsort(names, n, sizeof(names[0]), cmp_names);

	for (size_t i = 0; i < n; i++) {
		char path[4096];
		struct report r;
		struct err e;
		json_t *got, *want;
		size_t base = strrchr(names[i], '.') - names[i];

		if (parse_file(names[i], &r, &e) == 0) {
			got = report_to_json(&r);
			report_free(&r);
		} else {
			got = json_pack("{s:s}", "error", e.msg);
		}
		assert_non_null(got);
		snprintf(path, sizeof(path), "%s/%.*s.expected.json", REPORTS, (int)base, names[i]);
		if (regen) {
			char *text = json_dumps(got, JSON_INDENT(2));
			FILE *f = fopen(path, "w");

			assert_non_null(text);
			assert_non_null(f);
			fprintf(f, "%s\n", text);
			assert_int_equal(fclose(f), 0);
			free(text);
		} else {
			want = json_load_file(path, 0, NULL);
			if (!want || !json_equal(got, want)) {
				char *text = json_dumps(got, JSON_INDENT(2));

				print_error("%s: result differs from %s:\n%s\n", names[i], path,
					    text ? text : "?");
				free(text);
				mismatches++;
			}
			json_decref(want);
		}
		json_decref(got);
		free(names[i]);
	}
	if (mismatches > 0)
		fail_msg("%zu golden files differ (PROCTOR_REGEN=1 rewrites them)", mismatches);
}

/* ---- JUnit producers ---- */

static void test_junit_pytest_outcomes_and_messages(void **state)
{
	struct report r;

	r = parsed("pytest.xml");
	assert_outcome(&r, "test_passes", OUTCOME_PASSED);
	assert_outcome(&r, "test_fails", OUTCOME_FAILED);
	assert_outcome(&r, "test_errors", OUTCOME_ERROR);
	assert_outcome(&r, "test_skipped", OUTCOME_SKIPPED);
	assert_outcome(&r, "test_param[2]", OUTCOME_FAILED);
	assert_string_equal(entry(&r, "test_skipped")->message, "not ready yet");
	assert_string_equal(entry(&r, "test_fails")->message,
			    "AssertionError: arithmetic is broken\nassert (1 + 1) == 3");
	assert_null(entry(&r, "test_passes")->message);
	assert_string_equal(entry(&r, "test_in_class")->classname, "test_sample.TestGroup");
	assert_true(entry(&r, "test_passes")->score == -1);
	report_free(&r);
}

static void test_junit_pytest_teardown_error_is_a_second_entry(void **state)
{
	struct report r;
	size_t copies = 0;

	r = parsed("pytest-teardown-xfail-unicode.xml");
	for (size_t i = 0; i < r.n; i++) {
		if (strcmp(r.entries[i].name, "test_fails_and_teardown_errors") == 0)
			copies++;
	}
	assert_int_equal(copies, 2);
	assert_outcome(&r, "test_expected_failure", OUTCOME_SKIPPED);
	assert_outcome(&r, "test_unicode_ünïcode", OUTCOME_FAILED);
	report_free(&r);
}

static void test_junit_accepts_junit5_bare_testsuite_root(void **state)
{
	struct report r;

	r = parsed("junit5-jupiter.xml");
	assert_outcome(&r, "isPrimeSmall()", OUTCOME_PASSED);
	assert_outcome(&r, "isPrimeNine()", OUTCOME_FAILED);
	assert_outcome(&r, "throwsException()", OUTCOME_ERROR);
	assert_outcome(&r, "disabledTest()", OUTCOME_SKIPPED);
	assert_outcome(&r, "primes(int)[2]", OUTCOME_FAILED);
	/* JUnit 5's <skipped> has only text. */
	assert_string_equal(entry(&r, "disabledTest()")->message, "not ready yet");
	report_free(&r);
}

static void test_junit_message_falls_back_to_text(void **state)
{
	struct report r;

	r = parsed("jest-junit.xml");
	assert_outcome(&r, "math subtracts numbers", OUTCOME_FAILED);
	assert_true(starts_with(entry(&r, "math subtracts numbers")->message,
				"Error: expect(received).toBe(expected)"));
	assert_outcome(&r, "broken.test.js", OUTCOME_ERROR);
	assert_true(starts_with(entry(&r, "broken.test.js")->message, "● Test suite failed"));
	assert_outcome(&r, "math divides by zero", OUTCOME_SKIPPED);
	assert_null(entry(&r, "math divides by zero")->message);
	assert_outcome(&r, "math multiplies <big> & small", OUTCOME_PASSED);
	report_free(&r);

	r = parsed("junit-failure-and-error.xml");
	assert_string_equal(entry(&r, "empty_message_uses_text")->message, "the text, trimmed");
	assert_null(entry(&r, "no_message_at_all")->message);
	assert_outcome(&r, "", OUTCOME_PASSED); /* a testcase without a name */
	report_free(&r);
}

static void test_junit_error_wins_over_failure(void **state)
{
	struct report r;

	r = parsed("junit-failure-and-error.xml");
	assert_outcome(&r, "fails_then_errors", OUTCOME_ERROR);
	assert_string_equal(entry(&r, "fails_then_errors")->message, "teardown crashed");
	report_free(&r);
}

static void test_junit_node_todo_failure_is_skipped(void **state)
{
	struct report r;

	r = parsed("node-junit.xml");
	assert_outcome(&r, "todo", OUTCOME_SKIPPED);
	assert_outcome(&r, "errors", OUTCOME_FAILED);
	assert_outcome(&r, "adds <&> &quot;quoted&quot;", OUTCOME_PASSED);
	report_free(&r);
}

static void test_junit_node_process_exit_is_one_test_named_after_the_file(void **state)
{
	struct report r;

	r = parsed("node-junit-process-exit.xml");
	assert_int_equal(r.n, 1);
	assert_true(ends_with(r.entries[0].name, "exits.test.js"));
	report_free(&r);
}

static void test_junit_go_junit_report_and_nested_suites(void **state)
{
	struct report r;

	r = parsed("go-junit-report.xml");
	assert_outcome(&r, "TestMul", OUTCOME_ERROR);
	assert_outcome(&r, "TestDiv/by_zero", OUTCOME_SKIPPED);
	assert_string_equal(entry(&r, "TestSub")->classname, "example.com/calc");
	report_free(&r);

	r = parsed("junit-nested-testsuites.xml");
	assert_outcome(&r, "deep_test", OUTCOME_PASSED);
	assert_outcome(&r, "inner_test", OUTCOME_FAILED);
	assert_outcome(&r, "outer_test", OUTCOME_PASSED);
	report_free(&r);
}

/* ---- JUnit: hostile input ---- */

static void test_junit_rejects_entity_bomb(void **state)
{
	assert_refused("junit-billion-laughs.xml", "DOCTYPE");
}

static void test_junit_rejects_external_entities(void **state)
{
	assert_refused("junit-external-entity.xml", "DOCTYPE");
	assert_refused("junit-parameter-entity.xml", "DOCTYPE");
	assert_refused("junit-undeclared-entity.xml", "not well-formed");
}

static void test_junit_rejects_what_is_not_a_junit_document(void **state)
{
	assert_refused("junit-not-xml.xml", "not well-formed");
	assert_refused("junit-truncated.xml", "not well-formed");
	assert_refused("junit-empty.xml", "empty");
	assert_refused("junit-binary.xml", "not well-formed");
	assert_refused("junit-wrong-root.xml", "root element");
}

static void test_junit_rejects_invalid_utf8_and_other_encodings(void **state)
{
	assert_refused("junit-invalid-utf8.xml", "UTF-8");
	assert_refused("junit-latin1-declared.xml", "UTF-8");
	assert_refused("junit-utf16.xml", "not well-formed");
}

/* A generated document: head, `n` copies of `unit`, tail. */
static char *repeat(const char *head, const char *unit, size_t n, const char *tail, size_t *ret_len)
{
	size_t h = strlen(head), u = strlen(unit), t = strlen(tail);
	size_t len = h + u * n + t;
	char *buf = malloc(len + 1);

	assert_non_null(buf);
	memcpy(buf, head, h);
	for (size_t i = 0; i < n; i++)
		memcpy(buf + h + i * u, unit, u);
	memcpy(buf + h + n * u, tail, t + 1);
	*ret_len = len;
	return buf;
}

static void test_junit_rejects_deep_nesting(void **state)
{
	size_t len;
	char *open = repeat("<testsuites>", "<testsuite>", 100000, "", &len);
	char *doc = repeat(open, "</testsuite>", 100000, "</testsuites>", &len);
	struct report r;
	struct err e;

	assert_int_equal(parse_timed(junit_parse, doc, len, NULL, &r, &e), -1);
	assert_non_null(strstr(e.msg, "nested deeper than 64"));
	free(open);
	free(doc);
}

static void test_junit_enforces_a_smaller_depth_cap(void **state)
{
	const char *doc = "<testsuites><testsuite><testcase name=\"t\">"
			  "<failure message=\"m\"/></testcase></testsuite></testsuites>";
	struct report_caps caps;
	struct report r;
	struct err e;

	report_caps_default(&caps);
	caps.max_depth = 4;
	assert_int_equal(parse_timed(junit_parse, doc, strlen(doc), &caps, &r, &e), 0);
	report_free(&r);
	caps.max_depth = 3;
	assert_int_equal(parse_timed(junit_parse, doc, strlen(doc), &caps, &r, &e), -1);
}

static void test_junit_refuses_20_mb_before_parsing(void **state)
{
	size_t len;
	char *doc =
	    repeat("<testsuites>", "<testcase name=\"x\"/>", 1100000, "</testsuites>", &len);
	struct report r;
	struct err e;
	uint64_t t0;

	assert_true(len > 20u << 20);
	t0 = now_ns();
	assert_int_equal(junit_parse(doc, len, NULL, &r, &e), -1);
	assert_true(now_ns() - t0 < 10u * 1000 * 1000); /* refused, not parsed */
	assert_non_null(strstr(e.msg, "more than 8388608"));
	free(doc);
}

static void test_junit_keeps_max_entries_of_100000_testcases(void **state)
{
	size_t len;
	char *doc = repeat("<testsuites><testsuite>", "<testcase name=\"t\" classname=\"c\"/>",
			   100000, "</testsuite></testsuites>", &len);
	struct report r;
	struct err e;

	assert_int_equal(parse_timed(junit_parse, doc, len, NULL, &r, &e), 0);
	assert_int_equal(r.n, 10000);
	assert_true(r.truncated);
	report_free(&r);
	free(doc);
}

static void test_junit_ignores_huge_properties(void **state)
{
	size_t len;
	char *doc =
	    repeat("<testsuite name=\"JUnit Jupiter\"><properties>",
		   "<property name=\"java.class.path\" value=\"/a/b/c.jar:/d/e/f.jar\"/>", 100000,
		   "</properties><testcase name=\"ok()\" classname=\"T\"/></testsuite>", &len);
	struct report r;
	struct err e;

	assert_true(len > 6u << 20);
	assert_int_equal(parse_timed(junit_parse, doc, len, NULL, &r, &e), 0);
	assert_int_equal(r.n, 1);
	assert_outcome(&r, "ok()", OUTCOME_PASSED);
	report_free(&r);
	free(doc);
}

/* 3000 euro signs (3 bytes each) as attribute, then as text. */
static void test_junit_caps_messages_at_a_character_boundary(void **state)
{
	const char *forms[][2] = {
	    {"<testsuites><testcase name=\"t\"><failure message=\"",
	     "\"/></testcase></testsuites>"},
	    {"<testsuites><testcase name=\"t\"><failure>", "</failure></testcase></testsuites>"},
	    {"<testsuites><testcase name=\"t\"><failure><![CDATA[",
	     "]]></failure></testcase></testsuites>"},
	};

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		size_t len;
		char *doc = repeat(forms[i][0], "\xE2\x82\xAC", 3000, forms[i][1], &len);
		struct report r;
		struct err e;
		const char *m;

		assert_int_equal(parse_timed(junit_parse, doc, len, NULL, &r, &e), 0);
		m = r.entries[0].message;
		assert_int_equal(strlen(m), 4095); /* 1365 whole characters */
		assert_true(harness_valid_utf8(m));
		report_free(&r);
		free(doc);
	}
}

/* ---- JUnit: the prescan's caps, and time in proportion to size ---- */

/* A document "<testsuite><testcase name=\"t\"" + n attributes
 * ` <prefix><i>="<value>"` + "/></testsuite>". */
static char *testcase_with(const char *prefix, const char *value, size_t n, size_t *ret_len)
{
	size_t size = 64 + n * (strlen(prefix) + strlen(value) + 24), len;
	char *doc = malloc(size);

	assert_non_null(doc);
	len = (size_t)snprintf(doc, size, "<testsuite><testcase name=\"t\"");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(doc + len, size - len, " %s%zu=\"%s\"", prefix, i, value);
	len += (size_t)snprintf(doc + len, size - len, "/></testsuite>");
	*ret_len = len;
	return doc;
}

static void assert_junit_refused(const char *doc, size_t len, const char *why)
{
	struct report r;
	struct err e;

	if (parse_timed(junit_parse, doc, len, NULL, &r, &e) == 0) {
		report_free(&r);
		fail_msg("parsed, want refused (%s): %.200s", why, doc);
	}
	if (!strstr(e.msg, why))
		fail_msg("refused with '%s', want '%s'", e.msg, why);
}

static void assert_junit_parses(const char *doc, size_t len)
{
	struct report r;
	struct err e;

	if (parse_timed(junit_parse, doc, len, NULL, &r, &e) < 0)
		fail_msg("refused (%s): %.200s", e.msg, doc);
	report_free(&r);
}

static void test_junit_refuses_an_element_past_256_attributes(void **state)
{
	size_t len;
	char *doc = testcase_with("a", "", 255, &len); /* + name: 256 */

	assert_junit_parses(doc, len);
	free(doc);
	doc = testcase_with("a", "", 256, &len);
	assert_junit_refused(doc, len, "an element has more than 256 attributes at line 1");
	free(doc);
	/* The report, 700,000 attributes: refused at the 257th. */
	doc = testcase_with("a", "", 700000, &len);
	assert_junit_refused(doc, len, "more than 256 attributes");
	free(doc);
	/* Namespace declarations are attributes too. */
	doc = testcase_with("xmlns:p", "urn:x", 256, &len);
	assert_junit_refused(doc, len, "more than");
	free(doc);
}

static void test_junit_refuses_names_past_256_bytes(void **state)
{
	char doc[1024], name[300];

	memset(name, 'n', 256);
	name[256] = '\0';
	snprintf(doc, sizeof(doc), "<testsuite><%s %s=\"\"/></testsuite>", name, name);
	assert_junit_parses(doc, strlen(doc));
	snprintf(doc, sizeof(doc), "<testsuite><%s></%s></testsuite>", name, name);
	assert_junit_parses(doc, strlen(doc));
	name[256] = 'n';
	name[257] = '\0';
	snprintf(doc, sizeof(doc), "<testsuite><%s/></testsuite>", name);
	assert_junit_refused(doc, strlen(doc), "an element name is too long");
	snprintf(doc, sizeof(doc), "<testsuite><t %s=\"\"/></testsuite>", name);
	assert_junit_refused(doc, strlen(doc), "an attribute name is too long");
	snprintf(doc, sizeof(doc), "<testsuite></%s></testsuite>", name);
	assert_junit_refused(doc, strlen(doc), "an element name is too long");
}

/* Declarations in scope add up down the tree, not across siblings. */
static void test_junit_refuses_more_than_64_namespaces_in_scope(void **state)
{
	char doc[8192];
	size_t len = 0;

	len += (size_t)snprintf(doc + len, sizeof(doc) - len, "<testsuites");
	for (int i = 0; i < 32; i++)
		len += (size_t)snprintf(doc + len, sizeof(doc) - len, " xmlns:a%d=\"urn:a\"", i);
	len += (size_t)snprintf(doc + len, sizeof(doc) - len, ">");
	for (int k = 0; k < 3; k++) {
		len += (size_t)snprintf(doc + len, sizeof(doc) - len, "<testsuite");
		for (int i = 0; i < 32; i++)
			len += (size_t)snprintf(doc + len, sizeof(doc) - len,
						" xmlns:b%d=\"urn:b\"", i);
		len += (size_t)snprintf(doc + len, sizeof(doc) - len, "/>");
	}
	snprintf(doc + len, sizeof(doc) - len, "</testsuites>");
	assert_junit_parses(doc, strlen(doc)); /* 32 + 32 at most */

	snprintf(doc + len, sizeof(doc) - len, "<testsuite xmlns=\"urn:c\"/></testsuites>");
	assert_junit_parses(doc, strlen(doc)); /* a sibling: 32 + 1 */
	snprintf(doc + len - 2, sizeof(doc) - len + 2,
		 "><testsuite xmlns=\"urn:c\"/></testsuite></testsuites>");
	assert_junit_refused(doc, strlen(doc), "more than 64 XML namespace declarations in scope");
}

static void test_junit_prescan_caps_follow_the_caps(void **state)
{
	const char *doc = "<testsuite xmlns:a=\"urn:a\"><testcase name=\"t\" classname=\"c\"/>"
			  "</testsuite>";
	struct report_caps caps;
	struct report r;
	struct err e;

	report_caps_default(&caps);
	caps.max_attrs = 2;
	caps.max_name = 9;
	caps.max_ns = 1;
	assert_int_equal(parse_timed(junit_parse, doc, strlen(doc), &caps, &r, &e), 0);
	report_free(&r);
	caps.max_attrs = 1;
	assert_int_equal(parse_timed(junit_parse, doc, strlen(doc), &caps, &r, &e), -1);
	assert_non_null(strstr(e.msg, "more than 1 attributes"));
	caps.max_attrs = 2;
	caps.max_name = 8; /* "testsuite" */
	assert_int_equal(parse_timed(junit_parse, doc, strlen(doc), &caps, &r, &e), -1);
	caps.max_name = 9;
	caps.max_ns = 0;
	assert_int_equal(parse_timed(junit_parse, doc, strlen(doc), &caps, &r, &e), -1);
}

/* Markup the prescan must read as XML does, or it would refuse valid
 * reports or count the wrong attributes. */
static void test_junit_prescan_reads_markup_as_xml_does(void **state)
{
	const char *doc =
	    "\xEF\xBB\xBF<?xml version='1.0' encoding=\"UTF-8\"?>\n"
	    "<!-- a comment with <b x=\"1\"> and -> inside --><?pi <c d='2'/> ?>\n"
	    "<testsuites\n\tname = 'all'\r\n>"
	    "<testsuite name=\"s\" note=\"a > b / c = d\" other='say \"hi\"' >"
	    "<testcase name=\"one\" classname=\"C\" />"
	    "<testcase name=\"two\" classname=\"C\"><failure message=\"&lt;x&gt; &amp; y\">"
	    "</failure></testcase  >"
	    "<testcase name=\"three\"><skipped><![CDATA[<e f=\"3\"> ]] > ]]></skipped>"
	    "</testcase><!---->"
	    "</testsuite></testsuites>\n<!-- after -->\n";
	struct report r;
	struct err e;

	if (parse_timed(junit_parse, doc, strlen(doc), NULL, &r, &e) < 0)
		fail_msg("refused: %s", e.msg);
	assert_int_equal(r.n, 3);
	assert_outcome(&r, "one", OUTCOME_PASSED);
	assert_outcome(&r, "two", OUTCOME_FAILED);
	assert_string_equal(entry(&r, "two")->message, "<x> & y");
	assert_outcome(&r, "three", OUTCOME_SKIPPED);
	assert_string_equal(entry(&r, "three")->message, "<e f=\"3\"> ]] >");
	report_free(&r);
}

/*
 * Past its first error libxml2 carries on, and in each of these it goes on
 * inside what the prescan read as a comment, a processing instruction, a
 * CDATA section or the XML declaration: a tag with 200,000 attributes
 * there was parsed pairwise (seconds; minutes at 8 MiB).  libxml2 gets no
 * input past its first error, so each is refused at once, with libxml2's
 * own first message.
 */
static void test_junit_libxml2_reads_nothing_past_its_first_error(void **state)
{
	static const char *const heads[][2] = {
	    {"<testsuite><!--\x01<a", "/>--></testsuite>"},
	    {"<testsuite><? <a", "/> ?></testsuite>"},
	    {"<testsuite><?pi \x02<a", "/>?></testsuite>"},
	    {"<testsuite><![CDATA[\x02<a", "/>]]></testsuite>"},
	    {"<?xml version=\"1><a", "/>?><testsuite/>"},
	};

	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		size_t n = 200000, size = strlen(heads[i][0]) + n * 16 + 64, len;
		char *doc = malloc(size);

		assert_non_null(doc);
		len = (size_t)snprintf(doc, size, "%s", heads[i][0]);
		for (size_t k = 0; k < n; k++)
			len += (size_t)snprintf(doc + len, size - len, " a%zu=\"\"", k);
		len += (size_t)snprintf(doc + len, size - len, "%s", heads[i][1]);
		assert_junit_refused(doc, len, "not well-formed XML at line 1");
		free(doc);
	}
}

/* libxml2's message quoting a long name, cut at a character boundary
 * whatever the characters' widths and where the cut falls. */
static void test_junit_error_message_is_valid_utf8_where_cut(void **state)
{
	static const char *const chars[] = {"\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};

	for (size_t c = 0; c < sizeof(chars) / sizeof(chars[0]); c++) {
		for (size_t pad = 0; pad < 4; pad++) {
			char doc[1024], name[300] = "";
			struct report r;
			struct err e;

			memset(name, 'a', pad + 1);
			while (strlen(name) + strlen(chars[c]) <= 256)
				strcat(name, chars[c]);
			snprintf(doc, sizeof(doc), "<testsuite><%s></b></testsuite>", name);
			assert_int_equal(parse_timed(junit_parse, doc, strlen(doc), NULL, &r, &e),
					 -1);
			assert_non_null(strstr(e.msg, "Opening and ending tag mismatch"));
			assert_true(harness_valid_utf8(e.msg));
		}
	}
}

/* Thread CPU time: what the parse cost, whatever else the machine runs. */
static uint64_t cpu_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The least CPU time of three parses of the shape at `size` bytes. */
static uint64_t shape_cpu_ns(const struct report_shape *s, const struct report_caps *caps,
			     size_t size)
{
	size_t len;
	char *doc = report_shape_make(s, caps, size, &len);
	uint64_t best = UINT64_MAX;

	assert_non_null(doc);
	for (int i = 0; i < 3; i++) {
		struct report r;
		struct err e;
		uint64_t t0 = cpu_now_ns();
		int rc = s->parse(doc, len, caps, &r, &e);
		uint64_t took = cpu_now_ns() - t0;

		if (rc == 0)
			report_free(&r);
		if ((rc < 0) != s->refused)
			fail_msg("%s at %zu bytes: %s", s->name, len,
				 rc < 0 ? e.msg : "parsed, want refused");
		if (took < best)
			best = took;
	}
	free(doc);
	return best;
}

/*
 * Parse time in proportion to size, for the worst shapes within the caps
 * (bench/report_shapes.h) at N, 2N, 4N and 8N bytes, 8N being the cap
 * (Gradescope's jansson trees cost more per byte: N is 128 KiB there).
 * Linear parsing takes about 8 times as long at 8N as at N, quadratic 64
 * times: anything under 24 (times under 2 ms counting as 2 ms, the
 * resolution that matters here) is linear with room for a noisy machine
 * and for caches that a bigger document misses more.  bench/report_bench
 * prints the ratios without the margin.
 */
static void test_parse_time_grows_in_proportion_to_size(void **state)
{
	struct report_caps caps;

	report_caps_default(&caps);
	for (size_t i = 0; i < REPORT_SHAPES; i++) {
		const struct report_shape *s = &report_shapes[i];
		size_t n = s->parse == gradescope_parse ? 128u << 10 : caps.max_bytes / 8;
		double ms[4];

		for (size_t k = 0; k < 4; k++)
			ms[k] = (double)shape_cpu_ns(s, &caps, n << k) / 1e6;
		print_message("%-20s N=%4zu KiB: %8.2f %8.2f %8.2f %8.2f ms, 8N/N %.1f\n", s->name,
			      n >> 10, ms[0], ms[1], ms[2], ms[3], ms[0] > 0 ? ms[3] / ms[0] : 0);
		if (ms[3] > 24 * (ms[0] > 2 ? ms[0] : 2))
			fail_msg("%s: %.2f ms at %zu bytes, %.2f ms at %zu: not linear", s->name,
				 ms[0], n, ms[3], n << 3);
	}
}

/* ---- TAP ---- */

static void test_tap_node_outcomes_and_yaml_error_message(void **state)
{
	struct report r;

	r = parsed("node.tap");
	assert_outcome(&r, "passes", OUTCOME_PASSED);
	assert_outcome(&r, "fails", OUTCOME_FAILED);
	assert_string_equal(entry(&r, "fails")->message,
			    "Expected values to be strictly equal:\n\n2 !== 3");
	assert_outcome(&r, "skipped", OUTCOME_SKIPPED);
	assert_string_equal(entry(&r, "skipped")->message, "not ready yet");
	assert_null(entry(&r, "skipped")->classname);
	report_free(&r);
}

static void test_tap_todo_failure_is_skipped_and_todo_pass_is_passed(void **state)
{
	struct report r;

	r = parsed("perl-test-more.tap");
	assert_outcome(&r, "todo fails", OUTCOME_SKIPPED);
	assert_outcome(&r, "todo passes", OUTCOME_PASSED);
	assert_outcome(&r, "", OUTCOME_SKIPPED); /* "ok 3 # skip no network" */
	assert_string_equal(entry(&r, "")->message, "no network");
	report_free(&r);

	r = parsed("tap-plan-last-no-version.tap");
	assert_outcome(&r, "beta", OUTCOME_SKIPPED); /* "not ok # Skipped: ..." */
	assert_string_equal(entry(&r, "beta")->message, "needs gpu");
	report_free(&r);
}

static void test_tap_only_top_level_lines_are_tests(void **state)
{
	struct report r;

	r = parsed("tap14-subtests.tap");
	assert_int_equal(r.n, 9);
	assert_outcome(&r, "parser", OUTCOME_FAILED);
	for (size_t i = 0; i < r.n; i++)
		assert_null(strstr(r.entries[i].name, "parses"));
	report_free(&r);

	/* node's describe(): only the suite line counts. */
	r = parsed("node.tap");
	assert_outcome(&r, "math", OUTCOME_FAILED);
	for (size_t i = 0; i < r.n; i++)
		assert_string_not_equal(r.entries[i].name, "subtracts");
	report_free(&r);
}

static void test_tap_yaml_messages_and_escapes(void **state)
{
	struct report r;

	r = parsed("tap14-subtests.tap");
	assert_string_equal(entry(&r, "parser")->message,
			    "1 of 2 subtests failed: \"parses strings\"");
	assert_string_equal(entry(&r, "quoted yaml message")->message, "it's fine");
	assert_string_equal(entry(&r, "block yaml message")->message,
			    "line one\n  indented line two\n\nline four");
	assert_string_equal(entry(&r, "yaml block without end marker")->message,
			    "plain scalar message");
	assert_outcome(&r, "lexer handles # in names \\ and backslashes", OUTCOME_SKIPPED);
	assert_outcome(&r, "7 is a description, not a number", OUTCOME_PASSED);
	assert_outcome(&r, "todo work", OUTCOME_SKIPPED);
	assert_outcome(&r, "todo done", OUTCOME_PASSED);
	report_free(&r);
}

static void test_tap_missing_numbers_become_error_entries(void **state)
{
	struct report r;

	r = parsed("tap-missing-tests.tap");
	assert_outcome(&r, "fifth, unnumbered", OUTCOME_PASSED);
	assert_outcome(&r, "<missing test 3>", OUTCOME_ERROR);
	assert_outcome(&r, "<missing test 6>", OUTCOME_ERROR);
	assert_int_equal(r.n, 6);
	report_free(&r);

	r = parsed("tap-no-plan.tap");
	assert_int_equal(r.n, 2);
	report_free(&r);
	r = parsed("tap-zero-plan.tap");
	assert_int_equal(r.n, 0);
	report_free(&r);
}

static void test_tap_bail_out_ends_the_report(void **state)
{
	struct report r;

	r = parsed("tap-bail-out.tap");
	assert_outcome(&r, "connects", OUTCOME_PASSED);
	assert_outcome(&r, "<missing test 2>", OUTCOME_ERROR);
	assert_string_equal(entry(&r, "<missing test 4>")->message, "Bail out! database went away");
	assert_int_equal(r.n, 4);
	report_free(&r);
}

static void test_tap_huge_plan_is_bounded(void **state)
{
	const char *doc = "1..18446744073709551615\nok 1 - one\n";
	struct report_caps caps;
	struct report r;
	struct err e;

	report_caps_default(&caps);
	caps.max_entries = 50;
	assert_int_equal(parse_timed(tap_parse, doc, strlen(doc), &caps, &r, &e), 0);
	assert_int_equal(r.n, 50);
	assert_true(r.truncated);
	assert_string_equal(r.entries[49].name, "<missing test 50>");
	report_free(&r);

	/* The default cap, with one real test: 9999 missing entries. */
	assert_int_equal(parse_timed(tap_parse, doc, strlen(doc), NULL, &r, &e), 0);
	assert_int_equal(r.n, 10000);
	assert_true(r.truncated);
	report_free(&r);
}

static void test_tap_cuts_long_lines(void **state)
{
	size_t len;
	char *doc = repeat("ok 1 - ", "\xE2\x82\xAC", 1000000, "\nnot ok 2 - after\n", &len);
	struct report r;
	struct err e;

	assert_int_equal(parse_timed(tap_parse, doc, len, NULL, &r, &e), 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(strlen(r.entries[0].name), 4095);
	assert_outcome(&r, "after", OUTCOME_FAILED);
	report_free(&r);
	free(doc);
}

static void test_tap_keeps_max_entries(void **state)
{
	size_t len;
	char *doc = repeat("TAP version 13\n", "ok - t\n", 100000, "", &len);
	struct report r;
	struct err e;

	assert_int_equal(parse_timed(tap_parse, doc, len, NULL, &r, &e), 0);
	assert_int_equal(r.n, 10000);
	assert_true(r.truncated);
	report_free(&r);
	free(doc);
}

static void test_tap_repairs_invalid_utf8(void **state)
{
	struct report r;

	r = parsed("tap-invalid-utf8.tap");
	assert_string_equal(r.entries[0].name, "caf\xEF\xBF\xBD \xEF\xBF\xBD\xEF\xBF\xBD name");
	assert_string_equal(r.entries[1].message, "broken \xEF\xBF\xBD( text");
	report_free(&r);

	r = parsed("tap-crlf.tap");
	assert_outcome(&r, "windows line endings", OUTCOME_PASSED);
	report_free(&r);
}

static void test_tap_rejects_what_is_not_tap(void **state)
{
	size_t len;
	char *big = repeat("", "ok\n", 3000000, "", &len);
	struct report r;
	struct err e;

	assert_refused("tap-binary.tap", "NUL");
	assert_refused("tap-not-tap.tap", "not TAP");
	assert_refused("tap-empty.tap", "empty");
	assert_int_equal(parse_timed(tap_parse, big, len, NULL, &r, &e), -1);
	assert_non_null(strstr(e.msg, "more than"));
	free(big);
}

/* ---- Gradescope ---- */

static void test_gradescope_status_and_scores(void **state)
{
	struct report r;
	const struct report_entry *en;

	r = parsed("gradescope-results.json");
	en = entry(&r, "test_sub (test_calc.TestCalc)");
	assert_int_equal(en->outcome, OUTCOME_FAILED);
	assert_true(en->score == 0 && en->max_score == 2);
	assert_string_equal(en->message, "Test Failed: 3 != 1\n\nExpected Sub(2, 1) to be 1");
	assert_null(en->classname);
	assert_outcome(&r, "test_add (test_calc.TestCalc)", OUTCOME_PASSED);
	assert_outcome(&r, "", OUTCOME_PASSED); /* no name */
	en = entry(&r, "unicode ✓ naïve");
	assert_true(en->score == -1 && en->max_score == 1);
	report_free(&r);
}

static void test_gradescope_status_absent_uses_scores(void **state)
{
	struct report r;

	r = parsed("gradescope-results.json");
	assert_outcome(&r, "partial credit, no status", OUTCOME_FAILED);
	assert_outcome(&r, "full credit, no status", OUTCOME_PASSED);
	assert_outcome(&r, "no scores and no status", OUTCOME_FAILED);
	report_free(&r);
}

static void test_gradescope_score_only_becomes_one_entry(void **state)
{
	struct report r;

	r = parsed("gradescope-score-only.json");
	assert_int_equal(r.n, 1);
	assert_string_equal(r.entries[0].name, "score");
	assert_true(r.entries[0].score == 42.5 && r.entries[0].max_score == -1);
	assert_int_equal(r.entries[0].outcome, OUTCOME_PASSED);
	assert_string_equal(r.entries[0].message, "Autograder finished: 42.5 / 50");
	report_free(&r);

	r = parsed("gradescope-empty-object.json");
	assert_int_equal(r.n, 0);
	report_free(&r);
}

static void test_gradescope_rejects_malformed_results(void **state)
{
	assert_refused("gradescope-duplicate-keys.json", "duplicate");
	assert_refused("gradescope-prints-mixed-in.json", "not valid JSON");
	assert_refused("gradescope-bad-status.json", "status");
	assert_refused("gradescope-wrong-types.json", "\"name\" is not a string");
	assert_refused("gradescope-tests-not-array.json", "not an array");
	assert_refused("gradescope-not-object.json", "not a JSON object");
	assert_refused("gradescope-nul-escape.json", "not valid JSON");
	assert_refused("gradescope-invalid-utf8.json", "not valid JSON");
	assert_refused("gradescope-empty.json", "not valid JSON");
}

static void test_gradescope_rejects_deep_nesting_and_size(void **state)
{
	size_t len;
	char *open = repeat("{\"tests\": ", "[", 100000, "", &len);
	char *doc = repeat(open, "]", 100000, "}", &len);
	char *big = repeat("{\"output\": \"", "x", 9u << 20, "\"}", &len);
	struct report r;
	struct err e;

	assert_int_equal(parse_timed(gradescope_parse, doc, strlen(doc), NULL, &r, &e), -1);
	assert_non_null(strstr(e.msg, "deeper than 64"));
	assert_int_equal(parse_timed(gradescope_parse, big, len, NULL, &r, &e), -1);
	assert_non_null(strstr(e.msg, "more than"));
	free(open);
	free(doc);
	free(big);
}

static void test_gradescope_keeps_max_entries(void **state)
{
	size_t len;
	char *doc = repeat("{\"tests\": [", "{\"name\": \"t\", \"status\": \"passed\"},", 20000,
			   "{}]}", &len);
	struct report r;
	struct err e;

	assert_int_equal(parse_timed(gradescope_parse, doc, len, NULL, &r, &e), 0);
	assert_int_equal(r.n, 10000);
	assert_true(r.truncated);
	report_free(&r);
	free(doc);
}

/* ---- report.c ---- */

static void test_report_outcome_names_are_stable(void **state)
{
	assert_string_equal(test_outcome_name(OUTCOME_PASSED), "passed");
	assert_string_equal(test_outcome_name(OUTCOME_FAILED), "failed");
	assert_string_equal(test_outcome_name(OUTCOME_ERROR), "error");
	assert_string_equal(test_outcome_name(OUTCOME_SKIPPED), "skipped");
	assert_string_equal(test_outcome_name(OUTCOME_MISSING), "missing");
	assert_int_equal(OUTCOME_PASSED, 0);
	assert_int_equal(OUTCOME_MISSING, 4);
	assert_string_equal(test_outcome_name((enum test_outcome)99), "unknown");
}

static void test_report_caps_default_values(void **state)
{
	struct report_caps c;

	report_caps_default(&c);
	assert_int_equal(c.max_bytes, 8u << 20);
	assert_int_equal(c.max_entries, 10000);
	assert_int_equal(c.max_depth, 64);
	assert_int_equal(c.max_message, 4096);
	assert_int_equal(c.max_attrs, 256);
	assert_int_equal(c.max_name, 256);
	assert_int_equal(c.max_ns, 64);
}

static void test_report_str_cuts_at_a_character_boundary(void **state)
{
	char *s = report_str("ab\xE2\x82\xAC", 5, 4, false);

	assert_string_equal(s, "ab");
	free(s);
	s = report_str("a\xFF"
		       "b",
		       3, 100, false);
	assert_string_equal(s, "a\xEF\xBF\xBD"
			       "b");
	free(s);
	s = report_str("a\xFF", 2, 3, false); /* U+FFFD would not fit */
	assert_string_equal(s, "a");
	free(s);
	s = report_str("before\0after", 12, 100, false);
	assert_string_equal(s, "before");
	free(s);
}

static void test_report_json_round_trip_is_lossless(void **state)
{
	struct report_caps caps;
	struct report r = {0}, back;
	struct report_entry en[] = {
	    {.name = strdup("a[1]"),
	     .classname = strdup("pkg.C"),
	     .outcome = OUTCOME_FAILED,
	     .message = strdup("line\nnext \"quoted\" ✓"),
	     .score = 0.1,
	     .max_score = 1.0 / 3},
	    {.name = strdup(""), .outcome = OUTCOME_SKIPPED, .score = -1, .max_score = -1},
	    {.name = strdup("e"), .outcome = OUTCOME_ERROR, .score = 1e300, .max_score = 0},
	};
	json_t *j, *j2;
	struct err e;

	report_caps_default(&caps);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(report_append(&r, &caps, &en[i], &e), 0);
	r.truncated = true;
	j = report_to_json(&r);
	assert_non_null(j);
	assert_int_equal(report_from_json(j, &back, &e), 0);
	assert_int_equal(back.n, 3);
	assert_true(back.truncated);
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(back.entries[i].name, r.entries[i].name);
		assert_int_equal(back.entries[i].outcome, r.entries[i].outcome);
		assert_true(back.entries[i].score == r.entries[i].score);
		assert_true(back.entries[i].max_score == r.entries[i].max_score);
	}
	assert_string_equal(back.entries[0].message, r.entries[0].message);
	assert_null(back.entries[1].classname);
	assert_null(back.entries[1].message);
	j2 = report_to_json(&back);
	assert_true(json_equal(j, j2));
	json_decref(j);
	json_decref(j2);
	report_free(&back);
	report_free(&r);
	report_free(&r); /* twice: zeroed the first time */
	report_free(NULL);
}

static void test_report_from_json_refuses_anything_odd(void **state)
{
	static const char *const bad_reports[] = {
	    "[]",
	    "{\"entries\": []}",
	    "{\"entries\": [], \"truncated\": 0}",
	    "{\"entries\": {}, \"truncated\": false}",
	    "{\"entries\": [], \"truncated\": false, \"extra\": 1}",
	    "{\"entries\": [1], \"truncated\": false}",
	};
	/* One change each to a valid entry; NULL deletes the key. */
	static const char *const bad_entries[][2] = {
	    {"name", "null"},
	    {"name", "\"a\\u0000b\""},
	    {"classname", "3"},
	    {"outcome", "\"missing\""},
	    {"outcome", "\"PASSED\""},
	    {"outcome", "0"},
	    {"message", "[]"},
	    {"score", "\"1\""},
	    {"max_score", "true"},
	    {"max_score", NULL},
	    {"extra", "1"},
	};
	const char *valid = "{\"entries\": [{\"name\": \"a\", \"classname\": null, "
			    "\"outcome\": \"passed\", \"message\": null, \"score\": -1, "
			    "\"max_score\": -1}], \"truncated\": false}";
	struct report r;
	struct err e;
	json_t *j;

	for (size_t i = 0; i < sizeof(bad_reports) / sizeof(bad_reports[0]); i++) {
		j = json_loads(bad_reports[i], 0, NULL);
		assert_non_null(j);
		if (report_from_json(j, &r, &e) == 0)
			fail_msg("accepted: %s", bad_reports[i]);
		json_decref(j);
	}
	for (size_t i = 0; i < sizeof(bad_entries) / sizeof(bad_entries[0]); i++) {
		const char *key = bad_entries[i][0], *value = bad_entries[i][1];
		json_t *en;

		j = json_loads(valid, 0, NULL);
		assert_int_equal(report_from_json(j, &r, &e), 0);
		report_free(&r);
		en = json_array_get(json_object_get(j, "entries"), 0);
		if (value)
			json_object_set_new(
			    en, key, json_loads(value, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL));
		else
			json_object_del(en, key);
		if (report_from_json(j, &r, &e) == 0)
			fail_msg("accepted %s: %s", key, value ? value : "(deleted)");
		json_decref(j);
	}
}

static void test_report_from_json_enforces_caps(void **state)
{
	struct report_caps caps;
	struct report r;
	struct err e;
	json_t *j, *en;
	char long_name[5000];

	report_caps_default(&caps);
	memset(long_name, 'x', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	en = json_pack("{s:s, s:n, s:s, s:n, s:f, s:f}", "name", long_name, "classname", "outcome",
		       "passed", "message", "score", -1.0, "max_score", -1.0);
	j = json_pack("{s:[O], s:b}", "entries", en, "truncated", 0);
	assert_int_equal(report_from_json(j, &r, &e), -1);
	assert_non_null(strstr(e.msg, "longer than 4096"));
	json_decref(j);

	/* Invalid UTF-8 can only come from a json_t built without checks. */
	json_object_set_new(en, "name", json_stringn_nocheck("caf\xE9", 4));
	j = json_pack("{s:[O, O], s:b}", "entries", en, en, "truncated", 0);
	assert_int_equal(report_from_json(j, &r, &e), -1);
	assert_non_null(strstr(e.msg, "UTF-8"));
	json_object_set_new(en, "name", json_string("ok"));
	assert_int_equal(report_from_json(j, &r, &e), 0);
	report_free(&r);
	caps.max_entries = 1;
	assert_int_equal(report_from_json_caps(j, &caps, &r, &e), -1);
	assert_non_null(strstr(e.msg, "more than 1"));
	json_decref(j);
	json_decref(en);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_golden_files_match_expected_json),
	    cmocka_unit_test(test_junit_pytest_outcomes_and_messages),
	    cmocka_unit_test(test_junit_pytest_teardown_error_is_a_second_entry),
	    cmocka_unit_test(test_junit_accepts_junit5_bare_testsuite_root),
	    cmocka_unit_test(test_junit_message_falls_back_to_text),
	    cmocka_unit_test(test_junit_error_wins_over_failure),
	    cmocka_unit_test(test_junit_node_todo_failure_is_skipped),
	    cmocka_unit_test(test_junit_node_process_exit_is_one_test_named_after_the_file),
	    cmocka_unit_test(test_junit_go_junit_report_and_nested_suites),
	    cmocka_unit_test(test_junit_rejects_entity_bomb),
	    cmocka_unit_test(test_junit_rejects_external_entities),
	    cmocka_unit_test(test_junit_rejects_what_is_not_a_junit_document),
	    cmocka_unit_test(test_junit_rejects_invalid_utf8_and_other_encodings),
	    cmocka_unit_test(test_junit_rejects_deep_nesting),
	    cmocka_unit_test(test_junit_enforces_a_smaller_depth_cap),
	    cmocka_unit_test(test_junit_refuses_20_mb_before_parsing),
	    cmocka_unit_test(test_junit_keeps_max_entries_of_100000_testcases),
	    cmocka_unit_test(test_junit_ignores_huge_properties),
	    cmocka_unit_test(test_junit_caps_messages_at_a_character_boundary),
	    cmocka_unit_test(test_junit_refuses_an_element_past_256_attributes),
	    cmocka_unit_test(test_junit_refuses_names_past_256_bytes),
	    cmocka_unit_test(test_junit_refuses_more_than_64_namespaces_in_scope),
	    cmocka_unit_test(test_junit_prescan_caps_follow_the_caps),
	    cmocka_unit_test(test_junit_prescan_reads_markup_as_xml_does),
	    cmocka_unit_test(test_junit_libxml2_reads_nothing_past_its_first_error),
	    cmocka_unit_test(test_junit_error_message_is_valid_utf8_where_cut),
	    cmocka_unit_test(test_parse_time_grows_in_proportion_to_size),
	    cmocka_unit_test(test_tap_node_outcomes_and_yaml_error_message),
	    cmocka_unit_test(test_tap_todo_failure_is_skipped_and_todo_pass_is_passed),
	    cmocka_unit_test(test_tap_only_top_level_lines_are_tests),
	    cmocka_unit_test(test_tap_yaml_messages_and_escapes),
	    cmocka_unit_test(test_tap_missing_numbers_become_error_entries),
	    cmocka_unit_test(test_tap_bail_out_ends_the_report),
	    cmocka_unit_test(test_tap_huge_plan_is_bounded),
	    cmocka_unit_test(test_tap_cuts_long_lines),
	    cmocka_unit_test(test_tap_keeps_max_entries),
	    cmocka_unit_test(test_tap_repairs_invalid_utf8),
	    cmocka_unit_test(test_tap_rejects_what_is_not_tap),
	    cmocka_unit_test(test_gradescope_status_and_scores),
	    cmocka_unit_test(test_gradescope_status_absent_uses_scores),
	    cmocka_unit_test(test_gradescope_score_only_becomes_one_entry),
	    cmocka_unit_test(test_gradescope_rejects_malformed_results),
	    cmocka_unit_test(test_gradescope_rejects_deep_nesting_and_size),
	    cmocka_unit_test(test_gradescope_keeps_max_entries),
	    cmocka_unit_test(test_report_outcome_names_are_stable),
	    cmocka_unit_test(test_report_caps_default_values),
	    cmocka_unit_test(test_report_str_cuts_at_a_character_boundary),
	    cmocka_unit_test(test_report_json_round_trip_is_lossless),
	    cmocka_unit_test(test_report_from_json_refuses_anything_odd),
	    cmocka_unit_test(test_report_from_json_enforces_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
