/*
 * Integration tests: every bundled example submission gets the verdict its
 * EXPECTED.tsv states.
 *
 * With EXAMPLES_ISOLATION=vm (suites vm and vm-long) the same rows are
 * graded in microVMs: each example named in EXAMPLES_ONLY is copied with
 * `image:` pinned to the image built from images/$EXAMPLES_RECIPE.yaml in
 * the suite's own state directory, and must get the very verdicts the jail
 * gets, so the two backends grade every example alike (issue 22).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

extern char **environ;

#ifndef EXAMPLES_DIR
#error "EXAMPLES_DIR must point at examples/"
#endif
#ifndef IMAGES_DIR
#error "IMAGES_DIR must point at images/"
#endif

static bool vm;		   /* EXAMPLES_ISOLATION=vm */
static char image_pin[64]; /* the image the VM copies pin */
static char vm_why[4096];  /* why the image is not there */
static bool vm_ready;

/* The example `name` for the microVM: a copy in a temporary directory whose
 * assignment.yaml pins image_pin.  Returns the directory holding it. */
static char *vm_copy(const char *name)
{
	char *top = harness_tmpdir(), path[4096], yaml[8192];

	snprintf(path, sizeof(path), "%s/%s", EXAMPLES_DIR, name);
	char *cp[] = {"/bin/cp", "-r", path, top, NULL};
	pid_t pid;
	int st;
	assert_int_equal(posix_spawn(&pid, cp[0], NULL, NULL, cp, environ), 0);
	while (waitpid(pid, &st, 0) < 0)
		;
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(path, sizeof(path), "%s/%s/assignment.yaml", top, name);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	int n = snprintf(yaml, sizeof(yaml), "image: %s\n", image_pin);
	size_t got = fread(yaml + n, 1, sizeof(yaml) - (size_t)n - 1, f);
	yaml[(size_t)n + got] = '\0';
	fclose(f);
	harness_write_text(NULL, path, yaml);
	return top;
}

/* Grade every row of <examples>/<name>/EXPECTED.tsv and compare. */
static void check_example_in(const char *examples, const char *name)
{
	char path[4096], line[4096];
	int rows = 0;

	harness_require_root("grading");
	snprintf(path, sizeof(path), "%s/%s/EXPECTED.tsv", examples, name);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f)); /* header */
	while (fgets(line, sizeof(line), f)) {
		char sub[256], status[64];
		long long passed, total;
		double score;
		if (sscanf(line, "%255[^\t]\t%63[^\t]\t%lld\t%lld\t%lf", sub, status, &passed, &total,
			   &score) != 5)
			continue;
		char assignment[4096], submission[4096];
		snprintf(assignment, sizeof(assignment), "%s/%s", examples, name);
		snprintf(submission, sizeof(submission), "%s/%s/submissions/%s", examples, name,
			 sub);
		char *args[] = {"grade",  "--json",	"--isolation", vm ? "vm" : "jail",
				assignment, submission, NULL};
		struct proc_out o;
		harness_run(&o, NULL, 600, args);
		print_message("[  CASE    ] %s/%s: %s %s/%s\n", name, sub,
			      o.json ? jstr(&o, "status") : "(no json)",
			      o.json ? json_string_value(json_object_get(o.json, "status")) : "",
			      "");
		if (!o.json)
			fail_msg("%s/%s: no JSON result; stderr: %s", name, sub, o.err);
		assert_int_equal(o.exit_status, 0);
		if (strcmp(jstr(&o, "status"), status) != 0)
			fail_msg("%s/%s: status %s, expected %s (reason: %s)", name, sub,
				 jstr(&o, "status"), status,
				 json_string_value(json_object_get(o.json, "reason")));
		assert_int_equal(jint(&o, "passed"), passed);
		assert_int_equal(jint(&o, "total"), total);
		double got = json_number_value(json_object_get(o.json, "score"));
		if (got < score - 1e-9 || got > score + 1e-9)
			fail_msg("%s/%s: score %g, expected %g", name, sub, got, score);
		proc_out_free(&o);
		harness_assert_clean();
		rows++;
	}
	fclose(f);
	assert_true(rows >= 3);
}

static void check_example(const char *name)
{
	if (!vm) {
		check_example_in(EXAMPLES_DIR, name);
		return;
	}
	harness_require(vm_ready, "the vm backend", vm_why);
	char *top = vm_copy(name);
	check_example_in(top, name);
	char rm[4200];
	snprintf(rm, sizeof(rm), "rm -rf '%s'", top);
	free(top);
	assert_int_equal(system(rm), 0);
}

/* Run argv (absolute program path) to its end; its exit status. */
static int run_tool(char *const *argv)
{
	pid_t pid;
	int st;

	if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
		fail_msg("spawn %s", argv[0]);
	while (waitpid(pid, &st, 0) < 0)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/*
 * A checkout below a directory only root may enter, as a clone in /root
 * is (0700 on Debian): `dir` becomes <tmp 0700>/clone with build/proctor,
 * build/proctor-helper (mode `helper_mode`) and examples/; $PROCTOR points
 * there until restore_proctor().  The sandbox's uid cannot walk to any of it.
 */
static char saved_proctor[4096], clone_top[4096];

static void clone_below_0700(char *dir, size_t len, mode_t helper_mode)
{
	char *top = harness_tmpdir(), build[4096], bin[4096], helper[4096], examples[4096];

	snprintf(saved_proctor, sizeof(saved_proctor), "%s", harness_proctor());
	assert_int_equal(chmod(top, 0700), 0);
	snprintf(dir, len, "%s/clone", top);
	snprintf(build, sizeof(build), "%s/build", dir);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(mkdir(build, 0755), 0);
	snprintf(bin, sizeof(bin), "%s/proctor", build);
	snprintf(helper, sizeof(helper), "%s/proctor-helper", build);
	snprintf(examples, sizeof(examples), "%s/examples", dir);
	char src_helper[4096];
	snprintf(src_helper, sizeof(src_helper), "%s", saved_proctor);
	*strrchr(src_helper, '/') = '\0';
	strncat(src_helper, "/proctor-helper", sizeof(src_helper) - strlen(src_helper) - 1);
	char *cp_bin[] = {"/bin/cp", saved_proctor, bin, NULL};
	char *cp_helper[] = {"/bin/cp", src_helper, helper, NULL};
	char *cp_examples[] = {"/bin/cp", "-r", EXAMPLES_DIR, examples, NULL};
	assert_int_equal(run_tool(cp_bin), 0);
	assert_int_equal(run_tool(cp_helper), 0);
	assert_int_equal(run_tool(cp_examples), 0);
	assert_int_equal(chmod(bin, 0755), 0);
	assert_int_equal(chmod(helper, helper_mode), 0);
	setenv("PROCTOR", bin, 1);
	snprintf(clone_top, sizeof(clone_top), "%s", top);
	free(top);
}

/* The tests' teardown: also after a failure. */
static int restore_proctor(void **state)
{
	char *rm[] = {"/bin/rm", "-rf", clone_top, NULL};

	(void)state;
	if (saved_proctor[0])
		setenv("PROCTOR", saved_proctor, 1);
	return clone_top[0] && run_tool(rm) != 0 ? -1 : 0;
}

/* The README's first command from a clone in /root: every example's every
 * submission gets its expected verdict when nothing of the checkout is
 * reachable by the sandbox's uid (the helper is executed by descriptor). */
static void test_examples_from_a_checkout_below_a_0700_directory(void **state)
{
	static const char *const names[] = {"python-pytest", "c-tap", "js-node", "java-junit5",
					    "io-sum"};
	char dir[4096], examples[4096];

	(void)state;
	harness_require_root("grading");
	clone_below_0700(dir, sizeof(dir), 0755);
	snprintf(examples, sizeof(examples), "%s/examples", dir);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		check_example_in(examples, names[i]);
}

/* A helper the sandbox's uid may not execute (built with umask 077): the
 * first grading says so, naming the file, its mode and the chmod, with the
 * exit status of ERR_UNAVAILABLE (3), and grades nothing. */
static void test_unexecutable_helper_is_named_up_front(void **state)
{
	char dir[4096], assignment[4096], submission[4096];

	(void)state;
	harness_require_root("grading");
	clone_below_0700(dir, sizeof(dir), 0700);
	snprintf(assignment, sizeof(assignment), "%s/examples/python-pytest", dir);
	snprintf(submission, sizeof(submission), "%s/submissions/correct", assignment);
	char *args[] = {"grade", "--json", assignment, submission, NULL};
	struct proc_out o;
	harness_run(&o, NULL, 120, args);
	if (o.exit_status != 3 || !strstr(o.err, "/build/proctor-helper") ||
	    !strstr(o.err, "mode 0700") || !strstr(o.err, "chmod o+rx"))
		fail_msg("exit status %d, stderr: %s", o.exit_status, o.err);
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_python_pytest_example(void **state)
{
	(void)state;
	check_example("python-pytest");
}

static void test_c_tap_example(void **state)
{
	(void)state;
	check_example("c-tap");
}

static void test_js_node_example(void **state)
{
	(void)state;
	check_example("js-node");
}

static void test_java_junit5_example(void **state)
{
	(void)state;
	check_example("java-junit5");
}

static void test_io_sum_example(void **state)
{
	(void)state;
	check_example("io-sum");
}

/* The same submission graded twice gets the same status, score and tests. */
static void test_regrade_is_identical(void **state)
{
	(void)state;
	harness_require_root("grading");
	char assignment[4096], submission[4096];
	snprintf(assignment, sizeof(assignment), "%s/python-pytest", EXAMPLES_DIR);
	snprintf(submission, sizeof(submission), "%s/python-pytest/submissions/partial",
		 EXAMPLES_DIR);
	char *args[] = {"grade", "--json", assignment, submission, NULL};
	struct proc_out a, b;
	harness_run(&a, NULL, 300, args);
	harness_run(&b, NULL, 300, args);
	assert_non_null(a.json);
	assert_non_null(b.json);
	static const char *const keys[] = {"status", "score", "passed", "total", "tests"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		json_t *x = json_object_get(a.json, keys[i]), *y = json_object_get(b.json, keys[i]);
		if (strcmp(keys[i], "tests") == 0) {
			/* Messages may hold timings; outcomes and scores must not differ. */
			size_t k;
			json_t *t;
			assert_int_equal(json_array_size(x), json_array_size(y));
			json_array_foreach(x, k, t) {
				json_t *u = json_array_get(y, k);
				assert_true(json_equal(json_object_get(t, "status"),
						       json_object_get(u, "status")));
				assert_true(json_equal(json_object_get(t, "score"),
						       json_object_get(u, "score")));
			}
			continue;
		}
		assert_true(json_equal(x, y));
	}
	assert_true(json_equal(json_object_get(a.json, "submission"),
			       json_object_get(b.json, "submission")));
	proc_out_free(&a);
	proc_out_free(&b);
	harness_assert_clean();
}

/* The student view hides hidden tests and every byte of raw output. */
static void test_student_view_hides_hidden_tests_and_output(void **state)
{
	(void)state;
	harness_require_root("grading");
	char assignment[4096], submission[4096];
	snprintf(assignment, sizeof(assignment), "%s/python-pytest", EXAMPLES_DIR);
	snprintf(submission, sizeof(submission), "%s/python-pytest/submissions/partial",
		 EXAMPLES_DIR);
	char *inst[] = {"grade", "--json", assignment, submission, NULL};
	char *stud[] = {"grade", "--json", "--view", "student", assignment, submission, NULL};
	struct proc_out a, b;
	harness_run(&a, NULL, 300, inst);
	harness_run(&b, NULL, 300, stud);
	assert_non_null(a.json);
	assert_non_null(b.json);
	size_t i, hidden = 0;
	json_t *t;
	json_array_foreach(json_object_get(a.json, "tests"), i, t) {
		json_t *u = json_array_get(json_object_get(b.json, "tests"), i);
		if (strcmp(json_string_value(json_object_get(t, "visibility")), "visible") == 0)
			continue;
		hidden++;
		const char *name = json_string_value(json_object_get(t, "name"));
		assert_string_not_equal(json_string_value(json_object_get(u, "name")), name);
		assert_true(json_is_null(json_object_get(u, "message")));
		assert_null(strstr(b.out, name));
	}
	assert_true(hidden > 0);
	json_array_foreach(json_object_get(b.json, "steps"), i, t) {
		assert_true(json_is_null(json_object_get(t, "stdout")));
		assert_true(json_is_null(json_object_get(t, "stderr")));
	}
	assert_true(json_equal(json_object_get(a.json, "score"), json_object_get(b.json, "score")));
	proc_out_free(&a);
	proc_out_free(&b);
	harness_assert_clean();
}

/*
 * A hidden I/O case in the student view says passed or failed and nothing
 * the program could modulate to leak its input: no step of its own, no
 * reason, and no step anywhere keeps exit codes, times, memory or byte
 * counts.
 */
static void test_student_view_of_hidden_case_carries_nothing_modulable(void **state)
{
	(void)state;
	harness_require_root("grading");
	char assignment[4096], submission[4096];
	snprintf(assignment, sizeof(assignment), "%s/io-sum", EXAMPLES_DIR);
	snprintf(submission, sizeof(submission), "%s/io-sum/submissions/wrong_answer", EXAMPLES_DIR);
	char *inst[] = {"grade", "--json", assignment, submission, NULL};
	char *stud[] = {"grade", "--json", "--view", "student", assignment, submission, NULL};
	struct proc_out a, b;
	harness_run(&a, NULL, 300, inst);
	harness_run(&b, NULL, 300, stud);
	assert_non_null(a.json);
	assert_non_null(b.json);
	size_t i, hidden = 0;
	json_t *t;
	json_array_foreach(json_object_get(a.json, "tests"), i, t) {
		if (strcmp(json_string_value(json_object_get(t, "visibility")), "hidden") != 0)
			continue;
		hidden++;
		char step[512];
		snprintf(step, sizeof(step), "case:%s", json_string_value(json_object_get(t, "name")));
		json_t *u = json_array_get(json_object_get(b.json, "tests"), i);
		assert_true(json_is_null(json_object_get(u, "reason")));
		assert_true(json_is_null(json_object_get(u, "message")));
		assert_null(strstr(b.out, step));
	}
	assert_true(hidden > 0);
	static const char *const numbers[] = {"exit_code", "cpu_ms", "wall_ms", "peak_memory_kib",
					      "peak_pids", "stdout_bytes", "stderr_bytes"};
	assert_true(json_array_size(json_object_get(b.json, "steps")) > 0);
	json_array_foreach(json_object_get(b.json, "steps"), i, t) {
		for (size_t k = 0; k < sizeof(numbers) / sizeof(numbers[0]); k++)
			if (!json_is_null(json_object_get(t, numbers[k])))
				fail_msg("student view: step %s keeps %s",
					 json_string_value(json_object_get(t, "name")), numbers[k]);
	}
	assert_true(json_equal(json_object_get(a.json, "score"), json_object_get(b.json, "score")));
	proc_out_free(&a);
	proc_out_free(&b);
	harness_assert_clean();
}

/* Gradescope output: valid shape, hidden tests marked hidden. */
static void test_gradescope_output_follows_visibility(void **state)
{
	(void)state;
	harness_require_root("grading");
	char assignment[4096], submission[4096];
	snprintf(assignment, sizeof(assignment), "%s/python-pytest", EXAMPLES_DIR);
	snprintf(submission, sizeof(submission), "%s/python-pytest/submissions/partial",
		 EXAMPLES_DIR);
	char *args[] = {"grade", "--format", "gradescope", assignment, submission, NULL};
	struct proc_out o;
	harness_run(&o, NULL, 300, args);
	assert_non_null(o.json);
	assert_true(json_is_number(json_object_get(o.json, "score")));
	assert_string_equal(jstr(&o, "stdout_visibility"), "hidden");
	size_t i, hidden = 0;
	json_t *t;
	json_array_foreach(json_object_get(o.json, "tests"), i, t) {
		const char *st = json_string_value(json_object_get(t, "status"));
		assert_true(strcmp(st, "passed") == 0 || strcmp(st, "failed") == 0);
		if (strcmp(json_string_value(json_object_get(t, "visibility")), "hidden") == 0)
			hidden++;
	}
	assert_true(hidden > 0);
	proc_out_free(&o);
	harness_assert_clean();
}

/* Bad input: a clear message and exit 2, nothing left behind. */
static void test_bad_assignment_and_submission_are_usage_errors(void **state)
{
	(void)state;
	harness_require_root("grading");
	char assignment[4096];
	snprintf(assignment, sizeof(assignment), "%s/python-pytest", EXAMPLES_DIR);
	char *missing_sub[] = {"grade", assignment, "/nonexistent/submission", NULL};
	char *missing_asg[] = {"grade", "/nonexistent/assignment", assignment, NULL};
	char *no_args[] = {"grade", NULL};
	char *bad_format[] = {"grade", "--format", "xml", assignment, assignment, NULL};
	char *const *cases[] = {missing_sub, missing_asg, no_args, bad_format};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proc_out o;
		harness_run(&o, NULL, 60, cases[i]);
		assert_int_equal(o.exit_status, 2);
		assert_non_null(strstr(o.err, "proctor: "));
		proc_out_free(&o);
	}
	harness_assert_clean();
}

int main(void)
{
	const char *iso = getenv("EXAMPLES_ISOLATION");
	if (iso && strcmp(iso, "vm") == 0) {
		/* Only the examples EXAMPLES_ONLY names: the others are not
		 * skipped, they are not this run's (js-node needs a node no
		 * image has; java-junit5 runs on images/full.yaml alone). */
		const struct CMUnitTest all[] = {
		    cmocka_unit_test(test_python_pytest_example),
		    cmocka_unit_test(test_c_tap_example),
		    cmocka_unit_test(test_js_node_example),
		    cmocka_unit_test(test_java_junit5_example),
		    cmocka_unit_test(test_io_sum_example),
		};
		static const char *const names[] = {"python-pytest", "c-tap", "js-node",
						    "java-junit5", "io-sum"};
		struct CMUnitTest vm_tests[5];
		size_t n_vm = 0;
		char list[512];
		snprintf(list, sizeof(list), " %s ",
			 getenv("EXAMPLES_ONLY") ? getenv("EXAMPLES_ONLY") : "");
		for (size_t i = 0; i < 5; i++) {
			char padded[64];
			snprintf(padded, sizeof(padded), " %s ", names[i]);
			if (strstr(list, padded))
				vm_tests[n_vm++] = all[i];
		}
		char recipe[4096];
		const char *name = getenv("EXAMPLES_RECIPE") ? getenv("EXAMPLES_RECIPE") : "small";
		vm = true;
		snprintf(recipe, sizeof(recipe), "%s/%s.yaml", IMAGES_DIR, name);
		vm_ready = harness_vm_image(recipe, name, image_pin, sizeof(image_pin), vm_why,
					    sizeof(vm_why)) == 0;
		return _cmocka_run_group_tests("test_examples_vm", vm_tests, n_vm, NULL, NULL);
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_python_pytest_example),
		cmocka_unit_test(test_c_tap_example),
		cmocka_unit_test(test_js_node_example),
		cmocka_unit_test(test_java_junit5_example),
		cmocka_unit_test(test_io_sum_example),
		cmocka_unit_test(test_regrade_is_identical),
		cmocka_unit_test(test_student_view_hides_hidden_tests_and_output),
		cmocka_unit_test(test_student_view_of_hidden_case_carries_nothing_modulable),
		cmocka_unit_test(test_gradescope_output_follows_visibility),
		cmocka_unit_test(test_bad_assignment_and_submission_are_usage_errors),
		cmocka_unit_test_teardown(test_examples_from_a_checkout_below_a_0700_directory,
					  restore_proctor),
		cmocka_unit_test_teardown(test_unexecutable_helper_is_named_up_front,
					  restore_proctor),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
