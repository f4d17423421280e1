/* Unit tests of match.c: how manifest tests find their entries in a parsed report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grade/match.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* A report over a static table (the strings are not owned: never freed). */
#define REPORT(...)                                                                                \
	(struct report)                                                                            \
	{                                                                                          \
		.entries = (struct report_entry[]){__VA_ARGS__},                                   \
		.n = sizeof((struct report_entry[]){__VA_ARGS__}) / sizeof(struct report_entry)    \
	}

#define E(n, c, o, m)                                                                              \
	{                                                                                          \
		.name = (char *)(n), .classname = (char *)(c), .outcome = (o),                     \
		.message = (char *)(m), .score = -1, .max_score = -1                               \
	}
#define T(n, c)                                                                                    \
	{                                                                                          \
		.name = (char *)(n), .classname = (char *)(c), .points = 1                         \
	}

static struct matched_test match1(const struct report *r, const char *name, const char *cls)
{
	struct manifest_test t = T(name, cls);
	struct matched_test out;

	report_match(r, &t, 1, &out);
	return out;
}

static void test_match_exact_name(void **state)
{
	struct report r = REPORT(E("test_add", "calc", OUTCOME_PASSED, NULL),
				 E("test_add_more", "calc", OUTCOME_FAILED, "no"));
	struct matched_test m = match1(&r, "test_add", NULL);

	assert_int_equal(m.outcome, OUTCOME_PASSED);
	assert_int_equal(m.matches, 1); /* test_add_more is another test */
	assert_null(m.message);
}

static void test_match_parameterized_all_must_pass(void **state)
{
	struct report r = REPORT(E("test_param[1]", "m", OUTCOME_PASSED, NULL),
				 E("test_param[2]", "m", OUTCOME_FAILED, "assert 2 != 2"),
				 E("test_param[3]", "m", OUTCOME_PASSED, NULL),
				 E("test_params[1]", "m", OUTCOME_ERROR, "other test"));
	struct matched_test m = match1(&r, "test_param", NULL);

	assert_int_equal(m.outcome, OUTCOME_FAILED);
	assert_int_equal(m.matches, 3);
	assert_string_equal(m.message, "assert 2 != 2");

	/* A manifest may also name one parameter set exactly. */
	m = match1(&r, "test_param[3]", NULL);
	assert_int_equal(m.outcome, OUTCOME_PASSED);
	assert_int_equal(m.matches, 1);
}

static void test_match_junit5_method_names(void **state)
{
	struct report r = REPORT(E("isPrimeSmall()", "PrimeTest", OUTCOME_PASSED, NULL),
				 E("primes(int)[1]", "PrimeTest", OUTCOME_PASSED, NULL),
				 E("primes(int)[2]", "PrimeTest", OUTCOME_PASSED, NULL),
				 E("primesAndMore(int)[1]", "PrimeTest", OUTCOME_FAILED, NULL),
				 E("weird(", "PrimeTest", OUTCOME_FAILED, NULL),
				 E("odd(x)y", "PrimeTest", OUTCOME_FAILED, NULL));
	struct matched_test m;

	m = match1(&r, "isPrimeSmall", NULL);
	assert_int_equal(m.outcome, OUTCOME_PASSED);
	assert_int_equal(m.matches, 1);
	m = match1(&r, "isPrimeSmall()", NULL);
	assert_int_equal(m.matches, 1);
	m = match1(&r, "primes", NULL);
	assert_int_equal(m.outcome, OUTCOME_PASSED);
	assert_int_equal(m.matches, 2);
	m = match1(&r, "primes(int)", NULL);
	assert_int_equal(m.matches, 2);
	/* Not parameter suffixes: "(" alone, "(x)y". */
	assert_int_equal(match1(&r, "weird", NULL).outcome, OUTCOME_MISSING);
	assert_int_equal(match1(&r, "odd", NULL).outcome, OUTCOME_MISSING);
}

static void test_match_classname_constraint(void **state)
{
	struct report r = REPORT(E("test_x", "tests.test_calc.TestCalc", OUTCOME_PASSED, NULL),
				 E("test_x", "tests.test_other.TestOther", OUTCOME_FAILED, "boom"),
				 E("test_x", "MyTestCalc", OUTCOME_ERROR, "not a dotted suffix"),
				 E("test_x", NULL, OUTCOME_ERROR, "no classname"));
	struct matched_test m;

	m = match1(&r, "test_x", "TestCalc");
	assert_int_equal(m.outcome, OUTCOME_PASSED);
	assert_int_equal(m.matches, 1);
	m = match1(&r, "test_x", "test_calc.TestCalc");
	assert_int_equal(m.matches, 1);
	m = match1(&r, "test_x", "tests.test_other.TestOther");
	assert_int_equal(m.outcome, OUTCOME_FAILED);
	assert_int_equal(m.matches, 1);
	m = match1(&r, "test_x", "Nope");
	assert_int_equal(m.outcome, OUTCOME_MISSING);
	/* Without a classname in the manifest, every copy counts. */
	m = match1(&r, "test_x", NULL);
	assert_int_equal(m.matches, 4);
	assert_int_equal(m.outcome, OUTCOME_ERROR);
}

static void test_match_duplicated_names_any_failing_copy_fails(void **state)
{
	/* pytest writes a teardown error as a second testcase of that name. */
	struct report r =
	    REPORT(E("t", "m", OUTCOME_PASSED, NULL), E("t", "m", OUTCOME_FAILED, "first failure"),
		   E("t", "m", OUTCOME_ERROR, "teardown"), E("u", "m", OUTCOME_PASSED, NULL),
		   E("u", "m", OUTCOME_SKIPPED, "skip"), E("v", "m", OUTCOME_SKIPPED, "skip v"),
		   E("v", "m", OUTCOME_FAILED, "fail v"));
	struct matched_test m;

	m = match1(&r, "t", NULL);
	assert_int_equal(m.outcome, OUTCOME_ERROR); /* error wins over failed */
	assert_int_equal(m.matches, 3);
	assert_string_equal(m.message, "first failure"); /* first non-passing entry's */
	m = match1(&r, "u", NULL);
	assert_int_equal(m.outcome, OUTCOME_SKIPPED);
	assert_string_equal(m.message, "skip");
	m = match1(&r, "v", NULL);
	assert_int_equal(m.outcome, OUTCOME_FAILED); /* failed wins over skipped */
}

static void test_match_missing_and_undeclared(void **state)
{
	struct report r = REPORT(E("declared", NULL, OUTCOME_PASSED, NULL),
				 E("undeclared", NULL, OUTCOME_FAILED, "ignored"));
	struct manifest_test tests[] = {T("declared", NULL), T("absent", NULL)};
	struct matched_test out[ARRAY_LEN(tests)];

	assert_int_equal(report_match(&r, tests, ARRAY_LEN(tests), out), 1);
	assert_int_equal(out[0].outcome, OUTCOME_PASSED);
	assert_int_equal(out[1].outcome, OUTCOME_MISSING);
	assert_int_equal(out[1].matches, 0);
	assert_null(out[1].message);
}

static void test_match_empty_report_and_manifest(void **state)
{
	struct report empty = {0};
	struct manifest_test t = T("anything", NULL);
	struct matched_test out;

	assert_int_equal(report_match(&empty, &t, 1, &out), 0);
	assert_int_equal(out.outcome, OUTCOME_MISSING);
	assert_int_equal(report_match(&empty, NULL, 0, NULL), 0);
}

static void test_match_tap_descriptions(void **state)
{
	/* TAP entries: description as name, no classname. */
	struct report r = REPORT(E("passes", NULL, OUTCOME_PASSED, NULL),
				 E("fails", NULL, OUTCOME_FAILED, "2 !== 3"),
				 E("<missing test 3>", NULL, OUTCOME_ERROR, NULL));
	struct matched_test m;

	m = match1(&r, "fails", NULL);
	assert_int_equal(m.outcome, OUTCOME_FAILED);
	assert_string_equal(m.message, "2 !== 3");
	/* A classname in the manifest cannot match a format that has none. */
	assert_int_equal(match1(&r, "passes", "Suite").outcome, OUTCOME_MISSING);
}

static void test_match_distrusts_unknown_outcomes(void **state)
{
	/* No parser reports "missing"; a report saying so is treated as an error. */
	struct report r =
	    REPORT(E("t", NULL, OUTCOME_MISSING, NULL), E("t", NULL, (enum test_outcome)42, NULL));
	struct matched_test m = match1(&r, "t", NULL);

	assert_int_equal(m.outcome, OUTCOME_ERROR);
	assert_int_equal(m.matches, 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_match_exact_name),
	    cmocka_unit_test(test_match_parameterized_all_must_pass),
	    cmocka_unit_test(test_match_junit5_method_names),
	    cmocka_unit_test(test_match_classname_constraint),
	    cmocka_unit_test(test_match_duplicated_names_any_failing_copy_fails),
	    cmocka_unit_test(test_match_missing_and_undeclared),
	    cmocka_unit_test(test_match_empty_report_and_manifest),
	    cmocka_unit_test(test_match_tap_descriptions),
	    cmocka_unit_test(test_match_distrusts_unknown_outcomes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
