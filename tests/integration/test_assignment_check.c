/* Integration tests: `proctor assignment check` passes every bundled example and names what is
 * wrong with a broken one. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "harness.h"

#ifndef EXAMPLES_DIR
#error "EXAMPLES_DIR must point at examples/"
#endif
#ifndef TEST_DATA
#error "TEST_DATA must point at tests/data/"
#endif

/* Every example with an assignment.yaml; test_every_example_is_checked
 * fails when examples/ has one this list forgets. */
static const char *const examples[] = {"python-pytest", "c-tap", "js-node", "java-junit5",
				       "io-sum"};

/* The checks, in the order the document lists them. */
static const char *const check_names[] = {"load",	 "reference",	 "empty",
					  "syntax_error", "tamper_proof", "protection"};

/* `proctor assignment check --json DIR [more...]` into o; the document
 * must be there and list the six checks in order. */
static void run_check(struct proc_out *o, const char *dir, const char *more)
{
	char *args[] = {"assignment", "check", "--json", (char *)dir, (char *)more, NULL};

	harness_run(o, NULL, 600, args);
	if (!o->json)
		fail_msg("assignment check %s: exit %d, no JSON; stderr: %s", dir, o->exit_status,
			 o->err);
	json_t *checks = json_object_get(o->json, "checks");
	assert_int_equal(json_array_size(checks), 6);
	for (size_t i = 0; i < 6; i++)
		assert_string_equal(
		    json_string_value(json_object_get(json_array_get(checks, i), "name")),
		    check_names[i]);
}

static const json_t *check_of(const struct proc_out *o, const char *name)
{
	size_t i;
	const json_t *c;

	json_array_foreach(json_object_get(o->json, "checks"), i,
			   c) if (strcmp(json_string_value(json_object_get(c, "name")), name) ==
				  0) return c;
	fail_msg("no check '%s' in the document", name);
	return NULL;
}

static const char *result_of(const struct proc_out *o, const char *name)
{
	return json_string_value(json_object_get(check_of(o, name), "result"));
}

/* Whether check `name` lists a test called `test`; whether one of its
 * details holds `text`. */
static bool names_test(const struct proc_out *o, const char *name, const char *test)
{
	size_t i;
	const json_t *t;

	json_array_foreach(json_object_get(check_of(o, name), "tests"), i,
			   t) if (strcmp(json_string_value(json_object_get(t, "name")), test) ==
				  0) return true;
	return false;
}

static bool says(const struct proc_out *o, const char *name, const char *text)
{
	size_t i;
	const json_t *d;

	json_array_foreach(json_object_get(check_of(o, name), "details"), i,
			   d) if (strstr(json_string_value(d), text)) return true;
	return false;
}

static void fail_with_document(const struct proc_out *o, const char *what)
{
	char *doc = json_dumps(o->json, JSON_INDENT(2));
	fail_msg("%s; exit %d; document:\n%s", what, o->exit_status, doc ? doc : "?");
}

/* A bundled example passes every check it can make: exit 0. */
static void check_example(const char *name)
{
	char dir[4096];
	struct proc_out o;

	harness_require_root("grading");
	snprintf(dir, sizeof(dir), "%s/%s", EXAMPLES_DIR, name);
	double t0 = harness_now_s();
	run_check(&o, dir, NULL);
	print_message("[  CHECK   ] %s: exit %d in %.1f s\n", name, o.exit_status,
		      harness_now_s() - t0);
	if (o.exit_status != 0 || !jbool(&o, "passed"))
		fail_with_document(&o, name);
	/* The checks that grade must have graded, not skipped. */
	for (size_t i = 0; i < 4; i++)
		if (strcmp(result_of(&o, check_names[i]), "pass") != 0)
			fail_with_document(&o, check_names[i]);
	bool split = strcmp(name, "python-pytest") == 0 || strcmp(name, "js-node") == 0 ||
		     strcmp(name, "java-junit5") == 0;
	assert_string_equal(result_of(&o, "tamper_proof"), split ? "pass" : "skip");
	/* Tamper-proof: split runs (Python, node, JUnit) and I/O mode; the
	 * others say why not. */
	bool proof = split || strcmp(name, "io-sum") == 0;
	assert_string_equal(result_of(&o, "protection"), proof ? "pass" : "warn");
	if (strcmp(name, "c-tap") == 0 &&
	    !strstr(json_string_value(json_object_get(check_of(&o, "protection"), "got")),
		    "checked (build.objects)"))
		fail_with_document(&o, "c-tap's protection");
	if (!proof && !says(&o, "protection", "I/O mode"))
		fail_with_document(&o, "protection names no way to be tamper-proof");
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_python_pytest_example_passes(void **state)
{
	(void)state;
	check_example("python-pytest");
}

static void test_c_tap_example_passes(void **state)
{
	(void)state;
	check_example("c-tap");
}

static void test_js_node_example_passes(void **state)
{
	(void)state;
	check_example("js-node");
}

static void test_java_junit5_example_passes(void **state)
{
	(void)state;
	check_example("java-junit5");
}

static void test_io_sum_example_passes(void **state)
{
	(void)state;
	check_example("io-sum");
}

/* Each directory of examples/ with an assignment.yaml is in examples[]. */
static void test_every_example_is_checked(void **state)
{
	(void)state;
	DIR *d = opendir(EXAMPLES_DIR);
	struct dirent *de;
	size_t found = 0;

	assert_non_null(d);
	while ((de = readdir(d))) {
		char path[4096];
		struct stat st;
		snprintf(path, sizeof(path), "%s/%s/assignment.yaml", EXAMPLES_DIR, de->d_name);
		if (de->d_name[0] == '.' || stat(path, &st) < 0)
			continue;
		bool listed = false;
		for (size_t i = 0; i < sizeof(examples) / sizeof(examples[0]); i++)
			listed = listed || strcmp(examples[i], de->d_name) == 0;
		if (!listed)
			fail_msg("examples/%s is not checked by this suite", de->d_name);
		found++;
	}
	closedir(d);
	assert_int_equal(found, sizeof(examples) / sizeof(examples[0]));
}

/* A reference that loses points: exit 1, the failing test and its message
 * named, in the document and on the terminal. */
static void test_wrong_reference_fails_naming_the_test(void **state)
{
	(void)state;
	harness_require_root("grading");
	const char *dir = TEST_DATA "/assignments/check_wrong_reference";
	struct proc_out o;

	run_check(&o, dir, NULL);
	assert_int_equal(o.exit_status, 1);
	assert_false(jbool(&o, "passed"));
	assert_string_equal(result_of(&o, "reference"), "fail");
	assert_true(names_test(&o, "reference", "answer_is_42"));
	assert_false(names_test(&o, "reference", "answer_is_a_number"));
	assert_true(says(&o, "reference", "the reference does not pass: answer_is_42"));
	assert_string_equal(result_of(&o, "empty"), "pass");
	assert_string_equal(result_of(&o, "syntax_error"), "pass");
	assert_string_equal(result_of(&o, "tamper_proof"), "skip");
	proc_out_free(&o);

	char *args[] = {"assignment", "check", (char *)dir, NULL};
	harness_run(&o, NULL, 600, args);
	assert_int_equal(o.exit_status, 1);
	if (!strstr(o.out, "FAIL  reference") || !strstr(o.out, "answer_is_42") ||
	    !strstr(o.out, "answer.txt does not hold 42") ||
	    !strstr(o.out, "1 of 6 checks failed: reference"))
		fail_msg("text output does not name the failing test:\n%s", o.out);
	proc_out_free(&o);
	harness_assert_clean();
}

/* A test that passes whatever the submission holds: exit 1, named. */
static void test_test_passing_an_empty_submission_is_named(void **state)
{
	(void)state;
	harness_require_root("grading");
	struct proc_out o;

	run_check(&o, TEST_DATA "/assignments/check_passes_empty", NULL);
	assert_int_equal(o.exit_status, 1);
	assert_string_equal(result_of(&o, "reference"), "pass");
	assert_string_equal(result_of(&o, "empty"), "fail");
	assert_true(names_test(&o, "empty", "answer_file_exists"));
	assert_false(names_test(&o, "empty", "answer_is_42"));
	assert_true(says(&o, "empty", "so it does not test it: answer_file_exists"));
	assert_string_equal(result_of(&o, "syntax_error"), "fail");
	assert_true(names_test(&o, "syntax_error", "answer_file_exists"));
	proc_out_free(&o);
	harness_assert_clean();
}

/* A pytest test that works only with the tests and the submission in one
 * process: the reference passes it there, and the check says so, naming it,
 * without the assignment being changed. */
static void test_tests_that_do_not_work_split_are_named(void **state)
{
	(void)state;
	harness_require_root("grading");
	struct proc_out o;

	run_check(&o, TEST_DATA "/assignments/check_not_split", NULL);
	assert_int_equal(o.exit_status, 1);
	assert_string_equal(result_of(&o, "reference"), "fail");
	assert_true(names_test(&o, "reference", "test_money_equals_cents"));
	assert_string_equal(result_of(&o, "tamper_proof"), "fail");
	assert_true(names_test(&o, "tamper_proof", "test_money_equals_cents"));
	assert_false(names_test(&o, "tamper_proof", "test_double"));
	if (!says(&o, "tamper_proof",
		  "these tests do not work in tamper-proof mode: test_money_equals_cents; see "
		  "docs/grading.md 'What does not work split'; fix the tests, or set "
		  "test.in_process: true"))
		fail_with_document(&o, "tamper_proof does not say which tests need one process");
	const json_t *g = json_object_get(check_of(&o, "tamper_proof"), "grading");
	assert_string_equal(json_string_value(json_object_get(g, "status")), "graded");
	assert_true(json_number_value(json_object_get(g, "score")) == 2);
	/* The empty and syntax-error submissions still score 0 split. */
	assert_string_equal(result_of(&o, "empty"), "pass");
	assert_string_equal(result_of(&o, "syntax_error"), "pass");
	proc_out_free(&o);
	harness_assert_clean();
}

/* node's --import (and the other options that load a file before the split
 * harness's hooks) naming a file of the submission's: the check still
 * passes, with protection "warn" naming the option; the same option naming
 * a file of tests_dir leaves protection "pass". */
static void test_node_preload_of_the_submission_is_named(void **state)
{
	(void)state;
	harness_require_root("grading");
	struct proc_out o;

	run_check(&o, TEST_DATA "/assignments/check_node_preload", NULL);
	if (o.exit_status != 0 || strcmp(result_of(&o, "protection"), "warn") != 0 ||
	    !strstr(json_string_value(json_object_get(check_of(&o, "protection"), "got")),
		    "test.run's --import ./solution.mjs is loaded by the harness") ||
	    !says(&o, "protection", "put it in tests_dir"))
		fail_with_document(&o, "protection of a node --import of the submission's file");
	proc_out_free(&o);

	run_check(&o, TEST_DATA "/assignments/check_node_preload_tests", NULL);
	if (o.exit_status != 0 || strcmp(result_of(&o, "protection"), "pass") != 0 ||
	    strcmp(result_of(&o, "reference"), "pass") != 0)
		fail_with_document(&o, "protection of a node --import of the tests' file");
	proc_out_free(&o);
	harness_assert_clean();
}

/* Mistakes of the user's, before anything is graded: exit 2, one line
 * naming the file or the option. */
static void test_missing_reference_and_invalid_assignment_are_exit_2(void **state)
{
	(void)state;
	struct proc_out o;
	char *no_ref[] = {"assignment", "check", TEST_DATA "/assignments/minimal", NULL};
	char *bad_ref[] = {"assignment",
			   "check",
			   "--reference",
			   "/nonexistent/reference",
			   TEST_DATA "/assignments/minimal",
			   NULL};
	char *bad_yaml[] = {"assignment", "check", TEST_DATA "/assignments/wrong_type", NULL};
	char *no_word[] = {"assignment", NULL};
	struct {
		char **argv;
		const char *named;
	} cases[] = {
	    {no_ref, "minimal/reference' does not exist; name the reference solution with "
		     "--reference SUB"},
	    {bad_ref, "--reference '/nonexistent/reference': No such file or directory"},
	    {bad_yaml, "assignment.yaml:"},
	    {no_word, "expected a COMMAND: check"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		harness_run(&o, NULL, 60, cases[i].argv);
		if (o.exit_status != 2 || strncmp(o.err, "proctor: ", 9) != 0 ||
		    !strstr(o.err, cases[i].named) || o.out_len != 0)
			fail_msg("case %zu: exit %d, stdout '%s', stderr '%s'; want exit 2 naming "
				 "'%s'",
				 i, o.exit_status, o.out, o.err, cases[i].named);
		proc_out_free(&o);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_example_is_checked),
	    cmocka_unit_test(test_missing_reference_and_invalid_assignment_are_exit_2),
	    cmocka_unit_test(test_python_pytest_example_passes),
	    cmocka_unit_test(test_c_tap_example_passes),
	    cmocka_unit_test(test_js_node_example_passes),
	    cmocka_unit_test(test_java_junit5_example_passes),
	    cmocka_unit_test(test_io_sum_example_passes),
	    cmocka_unit_test(test_wrong_reference_fails_naming_the_test),
	    cmocka_unit_test(test_test_passing_an_empty_submission_is_named),
	    cmocka_unit_test(test_tests_that_do_not_work_split_are_named),
	    cmocka_unit_test(test_node_preload_of_the_submission_is_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
