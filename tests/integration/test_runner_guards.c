/* Integration tests: the node --test and JUnit guards (src/grade/guards.h) with the examples'
 * defaults. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

#ifndef EXAMPLES_DIR
#error "EXAMPLES_DIR must point at examples/"
#endif
#ifndef ATTACKS_DIR
#error "ATTACKS_DIR must point at tests/integration/guard_attacks/"
#endif

/*
 * Grade ATTACKS_DIR/attack against the bundled example `example`, whose
 * assignment.yaml asks for nothing (the guard is the default): the attack
 * forges an all-pass report where the runner writes it, and a summary
 * signed with a key of its own where the guard writes it, then exits
 * before the tests run.  No test may pass, the score is 0, the verdict is
 * the submission's (crashed), never Proctor's error, and the reason says
 * why (`why`: the forged summary was caught by its signature; for node,
 * split by default, the submission's process ended during a call and
 * could write nothing of the harness's).
 */
static void check_attack(const char *example, const char *attack, const char *why)
{
	char assignment[4096], submission[4096];

	harness_require_root("grading");
	snprintf(assignment, sizeof(assignment), "%s/%s", EXAMPLES_DIR, example);
	snprintf(submission, sizeof(submission), "%s/%s", ATTACKS_DIR, attack);
	char *args[] = {"grade", "--json", assignment, submission, NULL};
	struct proc_out o;
	harness_run(&o, NULL, 600, args);
	if (!o.json)
		fail_msg("%s: no JSON result; stderr: %s", attack, o.err);
	assert_int_equal(o.exit_status, 0);
	const char *reason = json_string_value(json_object_get(o.json, "reason"));
	print_message("[  CASE    ] %s: %s (%s)\n", attack, jstr(&o, "status"),
		      reason ? reason : "");
	if (strcmp(jstr(&o, "status"), "crashed") != 0)
		fail_msg("%s: status %s, expected crashed (reason: %s)", attack, jstr(&o, "status"),
			 reason ? reason : "");
	assert_non_null(reason);
	assert_non_null(strstr(reason, why));
	assert_int_equal(jint(&o, "passed"), 0);
	assert_true(json_number_value(json_object_get(o.json, "score")) == 0);
	size_t i;
	json_t *t, *tests = json_object_get(o.json, "tests");
	assert_true(json_array_size(tests) > 0);
	json_array_foreach(tests, i, t)
	{
		assert_string_not_equal(json_string_value(json_object_get(t, "status")), "passed");
		assert_true(json_number_value(json_object_get(t, "score")) == 0);
	}
	proc_out_free(&o);
	harness_assert_clean();
}

/* The submission, imported, tries to forge the runner's JUnit report and a
 * signed summary, then process.exit(0): split (node's default), the
 * report directory is the harness's and the worker's end is crashed. */
static void test_node_forged_report_and_early_exit_scores_nothing(void **state)
{
	(void)state;
	check_attack("js-node", "node_forge_exit", "ended during a call from the tests");
}

/* The submission's static initializer forges TEST-junit-jupiter.xml and a
 * signed summary in --reports-dir, then System.exit(0): no summary of the
 * guard's, and the forged one does not verify. */
static void test_junit_forged_report_and_system_exit_scores_nothing(void **state)
{
	(void)state;
	check_attack("java-junit5", "junit_forge_exit", "ended during a call from the tests");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_node_forged_report_and_early_exit_scores_nothing),
	    cmocka_unit_test(test_junit_forged_report_and_system_exit_scores_nothing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
