/* Unit tests of assignment.c: loading assignment.yaml, defaults, and every refusal with its
 * file:line: key. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "digest.h"
#include "grade/assignment.h"
#include "grade/split.h"
#include "harness.h"
#include "runlimits.h"

#define FIXTURES TEST_DATA "/assignments"

/* ---- helpers ---- */

static struct assignment *load_ok(const char *dir)
{
	struct assignment *a = NULL;
	struct err e = {0};

	if (assignment_load(dir, &a, &e) < 0)
		fail_msg("loading %s failed: %s", dir, e.msg);
	assert_non_null(a);
	return a;
}

static struct assignment *load_fixture(const char *name)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/%s", FIXTURES, name);
	return load_ok(dir);
}

/* Loading dir fails with exactly "<dir>/assignment.yaml<tail>", the
 * assignment's fault (exit status 2, never Proctor's 3). */
static void expect_error_in(const char *dir, const char *tail)
{
	struct assignment *a = NULL;
	struct err e = {0};
	char want[2048];

	snprintf(want, sizeof(want), "%s/assignment.yaml%s", dir, tail);
	assert_int_equal(assignment_load(dir, &a, &e), -1);
	assert_null(a);
	assert_string_equal(e.msg, want);
	assert_int_equal(e.kind, ERR_INPUT);
}

static void expect_error(const char *fixture, const char *tail)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/%s", FIXTURES, fixture);
	expect_error_in(dir, tail);
}

/* A fresh temporary directory; `fixture`'s assignment.yaml is copied in
 * when not NULL. */
static void make_tmp(char *dir, size_t cap, const char *fixture)
{
	snprintf(dir, cap, "/tmp/test_assignment.XXXXXX");
	assert_non_null(mkdtemp(dir));
	if (fixture) {
		char src[PATH_MAX];
		size_t len;
		snprintf(src, sizeof(src), "%s/%s/assignment.yaml", FIXTURES, fixture);
		char *text = harness_read(src, &len);
		harness_write(dir, "assignment.yaml", text, len);
		free(text);
	}
}

/* The digest as docs/assignment.md defines it, computed here independently:
 * (name, size, content) of assignment.yaml, then of each file in `rels`
 * (given in sorted order), names length-prefixed. */
static void expected_digest(const char *dir, const char *const *rels, char hex[65])
{
	struct digest *d = digest_new();
	char path[PATH_MAX];

	assert_non_null(d);
	for (size_t i = 0; i == 0 || rels[i - 1]; i++) {
		const char *rel = i == 0 ? "assignment.yaml" : rels[i - 1];
		size_t len;
		char *text;
		uint64_t size;

		snprintf(path, sizeof(path), "%s/%s", dir, rel);
		text = harness_read(path, &len);
		size = len;
		digest_update_str(d, rel);
		digest_update(d, &size, sizeof(size));
		digest_update(d, text, len);
		free(text);
	}
	digest_final(d, hex);
}

static void assert_limits(const struct limits *l, uint64_t cpu_ms, uint64_t wall_ms,
			  uint64_t memory, uint64_t pids, uint64_t fsize, uint64_t disk,
			  uint64_t output, uint64_t nofile)
{
	assert_int_equal(l->cpu_ms, cpu_ms);
	assert_int_equal(l->wall_ms, wall_ms);
	assert_int_equal(l->memory_bytes, memory);
	assert_int_equal(l->pids, pids);
	assert_int_equal(l->fsize_bytes, fsize);
	assert_int_equal(l->disk_bytes, disk);
	assert_int_equal(l->output_bytes, output);
	assert_int_equal(l->nofile, nofile);
}

/* docs/assignment.md, "Limits": the defaults of every step. */
static void assert_default_limits(const struct limits *l)
{
	assert_limits(l, 10000, 20000, 512ull << 20, 128, 64ull << 20, 256ull << 20, 64ull << 10,
		      256);
}

static void assert_argv(char **argv, size_t argc, const char *const *want)
{
	size_t n = 0;

	while (want[n])
		n++;
	assert_int_equal(argc, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(argv[i], want[i]);
	assert_null(argv[n]);
}

/* ---- valid files ---- */

static void test_assignment_full_runner_reads_every_key(void **state)
{
	(void)state;
	struct assignment *a = load_fixture("full_runner");
	char dir[PATH_MAX], tests_dir[PATH_MAX];

	assert_non_null(realpath(FIXTURES "/full_runner", dir));
	snprintf(tests_dir, sizeof(tests_dir), "%s/tests", dir);
	assert_string_equal(a->dir, dir);
	assert_string_equal(a->name, "full-runner_1.0");
	assert_string_equal(a->image, "host");
	assert_int_equal(a->mode, GRADE_MODE_RUNNER);
	assert_argv(a->files, a->n_files, (const char *const[]){"solution.py", "lib/*.py", NULL});
	assert_argv(a->required, a->n_required, (const char *const[]){"solution.py", NULL});
	assert_int_equal(a->max_bytes, 65536);
	assert_int_equal(a->max_entries, 50);
	assert_string_equal(a->tests_dir, tests_dir);

	assert_true(a->setup.present);
	assert_argv(a->setup.argv, a->setup.argc,
		    (const char *const[]){"pip", "install", "--no-index", "wheel", NULL});
	assert_limits(&a->setup.limits, 1500, 3000, 128ull << 20, 16, 8ull << 20, 32ull << 20, 0,
		      64);
	assert_true(a->build.present);
	assert_default_limits(&a->build.limits);
	assert_true(a->test.present);
	/* {report} is left for the grader to substitute. */
	assert_argv(a->test.argv, a->test.argc,
		    (const char *const[]){"python3", "-m", "pytest", "--junitxml={report}",
					  "test_hidden.py", NULL});
	assert_int_equal(a->test.limits.cpu_ms, 30000);
	assert_int_equal(a->test.limits.wall_ms, 60250);
	assert_int_equal(a->test.limits.memory_bytes, 512ull << 20);

	assert_int_equal(a->n_ok_exit, 2);
	assert_int_equal(a->ok_exit[0], 0);
	assert_int_equal(a->ok_exit[1], 1);
	assert_int_equal(a->report_format, REPORT_JUNIT);
	assert_string_equal(a->report_path, "{report_dir}/junit.xml");
	assert_int_equal(a->report_max_bytes, 512 << 10);
	assert_int_equal(a->retries, 5);

	assert_int_equal(a->n_tests, 4);
	assert_string_equal(a->tests[0].t.name, "test_add");
	assert_null(a->tests[0].t.classname);
	assert_true(a->tests[0].t.points == 2.5);
	assert_int_equal(a->tests[0].visibility, VIS_VISIBLE);
	assert_string_equal(a->tests[1].t.name, "test_sub");
	assert_string_equal(a->tests[1].t.classname, "tests.test_hidden");
	assert_true(a->tests[1].t.points == 0);
	assert_int_equal(a->tests[1].visibility, VIS_HIDDEN);
	/* Same name, other class: not a duplicate. */
	assert_string_equal(a->tests[2].t.classname, "tests.test_other");
	assert_int_equal(a->tests[2].visibility, VIS_AFTER_DUE_DATE);
	assert_string_equal(a->tests[3].t.name, "test_mul[2-3]");
	assert_int_equal(a->tests[3].visibility, VIS_AFTER_PUBLISHED);

	double sum = 0;
	for (size_t i = 0; i < a->n_tests; i++)
		sum += a->tests[i].t.points;
	assert_true(a->max_score == sum);

	char want[65];
	expected_digest(
	    dir, (const char *const[]){"tests/data/input.txt", "tests/test_hidden.py", NULL}, want);
	assert_string_equal(a->digest, want);
	assignment_free(a);
}

static void test_assignment_minimal_gets_every_default(void **state)
{
	(void)state;
	struct assignment *a = load_fixture("minimal");
	char want[65];

	assert_string_equal(a->name, "minimal");
	assert_string_equal(a->image, "host");
	assert_int_equal(a->isolation, ASSIGNMENT_ISOLATION_ANY);
	assert_int_equal(a->mode, GRADE_MODE_RUNNER);
	assert_int_equal(a->n_required, 0);
	assert_null(a->required[0]);
	assert_int_equal(a->max_bytes, 1 << 20);
	assert_int_equal(a->max_entries, 10000);
	assert_null(a->tests_dir);
	assert_false(a->setup.present);
	assert_false(a->build.present);
	assert_true(a->test.present);
	assert_default_limits(&a->test.limits);
	assert_int_equal(a->n_ok_exit, 1);
	assert_int_equal(a->ok_exit[0], 0);
	assert_int_equal(a->report_format, REPORT_TAP);
	assert_null(a->report_path);
	assert_int_equal(a->report_max_bytes, 8 << 20);
	assert_int_equal(a->n_tests, 1);
	assert_null(a->tests[0].t.classname);
	assert_true(a->tests[0].t.points == 1);
	assert_int_equal(a->tests[0].visibility, VIS_VISIBLE);
	assert_true(a->max_score == 1);
	assert_int_equal(a->retries, 2);
	assert_int_equal(a->compare, CMP_TRAILING_WS);
	assert_true(a->float_tolerance == 1e-6);
	assert_int_equal(a->io_output_max, 16 << 20);
	assert_int_equal(a->n_cases, 0);
	assert_false(a->checker.present);

	expected_digest(a->dir, (const char *const[]){NULL}, want);
	assert_string_equal(a->digest, want);
	assignment_free(a);
}

static void test_assignment_io_mode_reads_cases_and_inherits_limits(void **state)
{
	(void)state;
	struct assignment *a = load_fixture("io_full");
	char path[PATH_MAX + 32], want[65];

	assert_int_equal(a->mode, GRADE_MODE_IO);
	assert_true(a->io_run.present);
	assert_argv(a->io_run.argv, a->io_run.argc, (const char *const[]){"./sum", NULL});
	/* io.limits over the defaults, for the program and every case. */
	assert_limits(&a->io_run.limits, 2000, 20000, 64ull << 20, 128, 64ull << 20, 256ull << 20,
		      64ull << 10, 256);
	assert_int_equal(a->compare, CMP_FLOAT);
	assert_true(a->float_tolerance == 0.001);
	assert_int_equal(a->io_output_max, 64 << 10);
	/* The checker is not the program: it gets the defaults, not io.limits. */
	assert_true(a->checker.present);
	assert_argv(a->checker.argv, a->checker.argc,
		    (const char *const[]){"python3", "checker.py", NULL});
	assert_int_equal(a->checker.limits.wall_ms, 5000);
	assert_int_equal(a->checker.limits.cpu_ms, 10000);
	assert_int_equal(a->checker.limits.memory_bytes, 512ull << 20);
	assert_false(a->test.present);
	assert_int_equal(a->n_tests, 0);

	assert_int_equal(a->n_cases, 2);
	assert_string_equal(a->cases[0].name, "small");
	snprintf(path, sizeof(path), "%s/cases/small.in", a->dir);
	assert_string_equal(a->cases[0].stdin_path, path);
	snprintf(path, sizeof(path), "%s/cases/small.out", a->dir);
	assert_string_equal(a->cases[0].expected_path, path);
	assert_int_equal(a->cases[0].n_args, 0);
	assert_null(a->cases[0].args[0]);
	assert_true(a->cases[0].points == 1);
	assert_int_equal(a->cases[0].visibility, VIS_VISIBLE);
	assert_memory_equal(&a->cases[0].limits, &a->io_run.limits, sizeof(struct limits));

	assert_string_equal(a->cases[1].name, "no-input");
	assert_null(a->cases[1].stdin_path);
	assert_argv(a->cases[1].args, a->cases[1].n_args,
		    (const char *const[]){"--verbose", "2", NULL});
	assert_true(a->cases[1].points == 3);
	assert_int_equal(a->cases[1].visibility, VIS_HIDDEN);
	assert_int_equal(a->cases[1].limits.cpu_ms, 500);
	assert_int_equal(a->cases[1].limits.memory_bytes, 64ull << 20);
	assert_true(a->max_score == a->cases[0].points + a->cases[1].points);

	expected_digest(a->dir,
			(const char *const[]){"cases/empty.out", "cases/small.in",
					      "cases/small.out", "support/readme.txt", NULL},
			want);
	assert_string_equal(a->digest, want);
	assignment_free(a);
}

static void test_assignment_accepts_ok_exit_inside_test(void **state)
{
	(void)state;
	struct assignment *a = load_fixture("ok_exit_in_test");

	assert_int_equal(a->n_ok_exit, 3);
	assert_int_equal(a->ok_exit[2], 5);
	assignment_free(a);
}

static void test_assignment_loads_a_yaml_file_named_directly(void **state)
{
	(void)state;
	struct assignment *by_dir = load_fixture("minimal");
	struct assignment *by_file = load_ok(FIXTURES "/minimal/assignment.yaml");

	assert_string_equal(by_file->dir, by_dir->dir);
	assert_string_equal(by_file->file, by_dir->file);
	assert_string_equal(by_file->digest, by_dir->digest);
	assignment_free(by_dir);
	assignment_free(by_file);
}

static void test_assignment_digest_changes_with_a_tests_dir_file(void **state)
{
	(void)state;
	char dir[64], sub[128], before[65];
	struct assignment *a;

	make_tmp(dir, sizeof(dir), "tests_dir_symlink");
	snprintf(sub, sizeof(sub), "%s/tests", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	harness_write_text(dir, "tests/t.py", "assert True\n");
	a = load_ok(dir);
	memcpy(before, a->digest, sizeof(before));
	assignment_free(a);

	a = load_ok(dir);
	assert_string_equal(a->digest, before); /* stable */
	assignment_free(a);

	harness_write_text(dir, "tests/t.py", "assert False\n");
	a = load_ok(dir);
	assert_string_not_equal(a->digest, before);
	assignment_free(a);
	harness_rm_tree(dir);
}

static void test_assignment_visibility_names_match_the_schema(void **state)
{
	(void)state;
	assert_string_equal(visibility_name(VIS_VISIBLE), "visible");
	assert_string_equal(visibility_name(VIS_HIDDEN), "hidden");
	assert_string_equal(visibility_name(VIS_AFTER_DUE_DATE), "after_due_date");
	assert_string_equal(visibility_name(VIS_AFTER_PUBLISHED), "after_published");
}

/* ---- the file itself ---- */

static void test_assignment_rejects_missing_file(void **state)
{
	(void)state;
	struct assignment *a = NULL;
	struct err e = {0};

	assert_int_equal(assignment_load(FIXTURES "/no_such_dir", &a, &e), -1);
	assert_null(a);
	assert_int_equal(e.errnum, ENOENT);
	assert_int_equal(e.kind, ERR_INPUT);
	assert_non_null(strstr(e.msg, "no_such_dir"));
}

static void test_assignment_rejects_empty_file(void **state)
{
	(void)state;
	expect_error("empty", ": the file is empty");
}

static void test_assignment_rejects_binary_garbage(void **state)
{
	(void)state;
	expect_error("binary", ": not a text file (NUL byte at offset 7)");
}

static void test_assignment_rejects_file_over_1_mib(void **state)
{
	(void)state;
	char dir[64], tail[128];
	size_t size = 2u << 20;
	char *big = malloc(size);

	assert_non_null(big);
	/* Valid YAML all along: only the size is wrong. */
	memset(big, '#', size);
	for (size_t i = 79; i < size; i += 80)
		big[i] = '\n';
	make_tmp(dir, sizeof(dir), NULL);
	harness_write(dir, "assignment.yaml", big, size);
	snprintf(tail, sizeof(tail), ": larger than 1 MiB (%zu bytes)", size);
	expect_error_in(dir, tail);
	free(big);
	harness_rm_tree(dir);
}

static void test_assignment_rejects_control_characters(void **state)
{
	(void)state;
	char dir[64];

	make_tmp(dir, sizeof(dir), NULL);
	harness_write_text(dir, "assignment.yaml", "name: a\nsubmission:\n  files: [m\x01.c]\n");
	expect_error_in(dir, ":3: control character 0x01 (only tab and newline may appear)");
	harness_rm_tree(dir);
}

static void test_assignment_rejects_invalid_utf8_with_line(void **state)
{
	(void)state;
	char dir[64], want[128];
	struct assignment *a = NULL;
	struct err e = {0};

	make_tmp(dir, sizeof(dir), NULL);
	harness_write_text(dir, "assignment.yaml", "name: a\nimage: caf\xc3\n");
	snprintf(want, sizeof(want), "%s/assignment.yaml:2: not valid YAML: ", dir);
	assert_int_equal(assignment_load(dir, &a, &e), -1);
	assert_memory_equal(e.msg, want, strlen(want));
	harness_rm_tree(dir);
}

static void test_assignment_rejects_text_that_is_not_a_map(void **state)
{
	(void)state;
	expect_error("not_yaml",
		     ":1: expected a map of keys (name, submission, ...), got a string");
}

static void test_assignment_reports_yaml_syntax_error_with_line(void **state)
{
	(void)state;
	struct assignment *a = NULL;
	struct err e = {0};
	const char *want = FIXTURES "/syntax_error/assignment.yaml:5: not valid YAML: ";

	/* The wording after the prefix is libfyaml's. */
	assert_int_equal(assignment_load(FIXTURES "/syntax_error", &a, &e), -1);
	assert_memory_equal(e.msg, want, strlen(want));
	assert_true(strlen(e.msg) > strlen(want));
}

static void test_assignment_rejects_two_documents(void **state)
{
	(void)state;
	expect_error("two_documents",
		     ":8: a second YAML document ('---'); an assignment is one document");
}

static void test_assignment_rejects_anchors_and_aliases(void **state)
{
	(void)state;
	char dir[64];

	expect_error("anchors", ":6: anchor '&fast': anchors, aliases and merge keys are not "
				"supported; write the value out");
	/* An alias whose anchor is undefined is refused too, by the alias. */
	make_tmp(dir, sizeof(dir), NULL);
	harness_write_text(dir, "assignment.yaml", "name: a\nimage: *nowhere\n");
	struct assignment *a = NULL;
	struct err e = {0};
	assert_int_equal(assignment_load(dir, &a, &e), -1);
	assert_non_null(strstr(e.msg, "assignment.yaml:2: "));
	harness_rm_tree(dir);
}

static void test_assignment_rejects_merge_keys(void **state)
{
	(void)state;
	expect_error("merge_key",
		     ":7: test.limits.<<: merge keys are not supported; write the keys out");
}

/* ---- keys and types ---- */

static void test_assignment_rejects_unknown_top_level_key(void **state)
{
	(void)state;
	expect_error("unknown_key_top",
		     ":8: timeout: unknown key (expected name, image, mode, submission, tests_dir, "
		     "setup, build, test, ok_exit, report, tests, io, retries, isolation)");
}

static void test_assignment_reads_isolation_vm(void **state)
{
	(void)state;
	char dir[64];
	struct assignment *a;

	make_tmp(dir, sizeof(dir), NULL);
	harness_write_text(dir, "assignment.yaml",
			   "name: a\nisolation: vm\nsubmission: {files: [a]}\ntest: {run: [t]}\n"
			   "report: {format: tap}\ntests: [{name: a}]\n");
	a = load_ok(dir);
	assert_int_equal(a->isolation, ASSIGNMENT_ISOLATION_VM);
	assignment_free(a);
	harness_rm_tree(dir);
}

static void test_assignment_rejects_unknown_isolation(void **state)
{
	(void)state;
	char dir[64];

	make_tmp(dir, sizeof(dir), NULL);
	harness_write_text(
	    dir, "assignment.yaml",
	    "name: a\nisolation: docker\nsubmission: {files: [a]}\ntest: {run: [t]}\n"
	    "report: {format: tap}\ntests: [{name: a}]\n");
	expect_error_in(dir, ":2: isolation: expected one of any, jail, vm, got 'docker'");
	harness_rm_tree(dir);
}

static void test_assignment_rejects_unknown_nested_key(void **state)
{
	(void)state;
	expect_error("unknown_key_nested",
		     ":7: submission.fils: unknown key (expected files, required, max_bytes, "
		     "max_files)");
}

static void test_assignment_rejects_duplicate_key(void **state)
{
	(void)state;
	expect_error("duplicate_key", ":8: name: duplicate key (first at line 1)");
}

static void test_assignment_rejects_string_where_list_expected(void **state)
{
	(void)state;
	expect_error("wrong_type",
		     ":3: submission.files: expected a list of strings, got a string");
}

static void test_assignment_rejects_missing_name(void **state)
{
	(void)state;
	expect_error("missing_name", ": name: missing required key");
}

static void test_assignment_runner_mode_requires_test(void **state)
{
	(void)state;
	expect_error("missing_test",
		     ": test: missing required key (mode runner needs test, report and tests)");
}

static void test_assignment_runner_mode_requires_report(void **state)
{
	(void)state;
	expect_error("missing_report",
		     ": report: missing required key (mode runner needs test, report and tests)");
}

static void test_assignment_runner_mode_requires_report_format(void **state)
{
	(void)state;
	expect_error("missing_report_format", ":6: report.format: missing required key");
}

static void test_assignment_runner_mode_requires_tests(void **state)
{
	(void)state;
	expect_error("missing_tests",
		     ": tests: missing required key (mode runner needs test, report and tests)");
}

static void test_assignment_rejects_invalid_name(void **state)
{
	(void)state;
	expect_error("bad_name",
		     ":1: name: 'hw 1/final' must be 1 to 64 characters from A-Z a-z 0-9 . _ -");
}

static void test_assignment_rejects_required_file_no_glob_takes(void **state)
{
	(void)state;
	expect_error("required_unmatched", ":4: submission.required[1]: 'Makefile' matches none of "
					   "submission.files, so it can never be taken");
}

static void test_assignment_rejects_io_section_in_runner_mode(void **state)
{
	(void)state;
	expect_error("io_key_in_runner", ":8: io: only used with mode: io");
}

static void test_assignment_rejects_tests_in_io_mode(void **state)
{
	(void)state;
	expect_error("runner_key_in_io", ":8: tests: only used with mode: runner");
}

static void test_assignment_io_mode_requires_a_case(void **state)
{
	(void)state;
	expect_error("io_missing_cases", ":7: io.cases: must not be empty");
}

/* ---- argv ---- */

static void test_assignment_rejects_empty_argv(void **state)
{
	(void)state;
	expect_error("argv_empty", ":5: test.run: must not be empty");
}

static void test_assignment_rejects_argv_with_a_map(void **state)
{
	(void)state;
	expect_error("argv_non_string", ":7: test.run[1]: expected a string, got a map");
}

static void test_assignment_rejects_argv_given_as_shell_string(void **state)
{
	(void)state;
	expect_error("argv_shell_string",
		     ":5: test.run: expected a list of strings (an argv like [make, test]; no "
		     "shell is involved), got a string");
}

/* ---- numbers and limits ---- */

static void test_assignment_rejects_negative_limit(void **state)
{
	(void)state;
	expect_error("limit_negative", ":7: test.limits.memory_mb: expected a whole number of MiB "
				       "from 4 to 1048576, got '-5'");
}

static void test_assignment_rejects_non_numeric_limit(void **state)
{
	(void)state;
	expect_error("limit_not_numeric",
		     ":6: test.limits.cpu_s: expected a number of seconds from 0.001 to 86400, at "
		     "most 3 decimals, got 'fast'");
}

static void test_assignment_rejects_absurd_limit(void **state)
{
	(void)state;
	expect_error("limit_absurd", ":6: build.limits.memory_mb: expected a whole number of MiB "
				     "from 4 to 1048576, got '99999999'");
}

/* Every limit key is checked against the bounds of runlimits.c's table,
 * one past each end; the table, not this test, says what the bounds are. */
static void test_assignment_limit_bounds_follow_the_limit_table(void **state)
{
	(void)state;
	static const struct {
		const char *key, *limit;
	} keys[] = {{"cpu_s", "cpu"},	     {"wall_s", "wall"},    {"memory_mb", "memory"},
		    {"pids", "pids"},	     {"fsize_mb", "fsize"}, {"disk_mb", "disk"},
		    {"output_kb", "output"}, {"nofile", "nofile"}};
	unsigned n;
	const struct limit_desc *table = limits_table(&n);
	char dir[64], yaml[512];

	make_tmp(dir, sizeof(dir), NULL);
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		const struct limit_desc *d = NULL;
		for (unsigned i = 0; i < n; i++)
			if (strcmp(table[i].name, keys[k].limit) == 0)
				d = &table[i];
		assert_non_null(d);
		for (int edge = 0; edge < 4; edge++) {
			/* min, max (accepted), min - 1, max + 1 (refused) */
			uint64_t v = edge == 0	 ? d->min
				     : edge == 1 ? d->max
				     : edge == 2 ? d->min - 1
						 : d->max + 1;
			char text[32];
			if (edge == 2 && d->min == 0)
				continue;
			if (d->unit == LIMIT_UNIT_SECONDS)
				snprintf(text, sizeof(text), "%llu.%03llu",
					 (unsigned long long)(v / 1000),
					 (unsigned long long)(v % 1000));
			else
				snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
			snprintf(yaml, sizeof(yaml),
				 "name: bounds\nsubmission: {files: [a]}\ntest:\n  run: [t]\n"
				 "  limits: {%s: %s}\nreport: {format: tap}\ntests: [{name: a}]\n",
				 keys[k].key, text);
			harness_write_text(dir, "assignment.yaml", yaml);
			/* A value in the table this host cannot grant (nofile
			 * above the hard limit of a root without
			 * CAP_SYS_RESOURCE, as in containers) is refused too,
			 * saying so. */
			struct limits host;
			struct err he = {0};
			limits_default(&host);
			bool grantable = edge >= 2 || (limits_set(&host, d->name, text, &he) == 0 &&
						       limits_check_host(&host, &he) == 0);
			struct assignment *a = NULL;
			struct err e = {0};
			int r = assignment_load(dir, &a, &e);
			if (edge < 2 && grantable && r < 0)
				fail_msg("%s: %s refused: %s", keys[k].key, text, e.msg);
			if ((edge >= 2 || !grantable) && r == 0)
				fail_msg("%s: %s accepted", keys[k].key, text);
			if (edge >= 2 || !grantable) {
				assert_non_null(strstr(e.msg, ":5: test.limits."));
				assert_int_equal(e.kind, ERR_INPUT);
			}
			if (!grantable)
				assert_non_null(strstr(e.msg, "more than this host can grant"));
			assignment_free(a);
		}
	}
	harness_rm_tree(dir);
}

static void test_assignment_rejects_quoted_number(void **state)
{
	(void)state;
	expect_error("points_quoted",
		     ":8: tests[0].points: expected a number from 0 to 1000000, got a quoted "
		     "string");
}

static void test_assignment_rejects_infinite_points(void **state)
{
	(void)state;
	expect_error("points_not_finite",
		     ":8: tests[0].points: expected a number from 0 to 1000000, got '.inf'");
}

static void test_assignment_rejects_exit_code_over_255(void **state)
{
	(void)state;
	expect_error("ok_exit_range",
		     ":6: ok_exit[1]: expected a whole number from 0 to 255, got '256'");
}

static void test_assignment_rejects_ok_exit_given_twice(void **state)
{
	(void)state;
	expect_error("ok_exit_twice", ":6: test.ok_exit: given twice (also at line 7); keep one");
}

/* ---- names ---- */

static void test_assignment_rejects_duplicate_test_names(void **state)
{
	(void)state;
	/* test_a without classname matches every class, so a later test_a
	 * with one is still a duplicate. */
	expect_error("duplicate_test",
		     ":10: tests[2].name: duplicate test 'test_a' (first at line 8)");
}

static void test_assignment_rejects_duplicate_case_names(void **state)
{
	(void)state;
	expect_error("io_duplicate_case",
		     ":9: io.cases[1].name: duplicate case 'a' (first at line 8)");
}

/* ---- paths ---- */

static void test_assignment_rejects_tests_dir_with_dotdot(void **state)
{
	(void)state;
	expect_error("tests_dir_dotdot", ":4: tests_dir: '../minimal' must not contain '..'");
}

static void test_assignment_rejects_absolute_tests_dir(void **state)
{
	(void)state;
	expect_error("tests_dir_absolute",
		     ":4: tests_dir: '/etc' must be relative to the assignment directory");
}

static void test_assignment_rejects_missing_tests_dir(void **state)
{
	(void)state;
	expect_error("tests_dir_missing", ":4: tests_dir: 'hidden_tests' does not exist");
}

static void test_assignment_rejects_tests_dir_symlink_leading_outside(void **state)
{
	(void)state;
	char dir[64], outside[64], link[128];

	make_tmp(dir, sizeof(dir), "tests_dir_symlink");
	make_tmp(outside, sizeof(outside), NULL);
	snprintf(link, sizeof(link), "%s/tests", dir);
	assert_int_equal(symlink(outside, link), 0);
	expect_error_in(dir, ":6: tests_dir: 'tests' leads outside the assignment directory");
	harness_rm_tree(dir);
	harness_rm_tree(outside);
}

static void test_assignment_rejects_assignment_dir_as_tests_dir(void **state)
{
	(void)state;
	char dir[64];

	/* It holds assignment.yaml and the expected outputs. */
	make_tmp(dir, sizeof(dir), NULL);
	harness_write_text(dir, "assignment.yaml",
			   "name: a\nsubmission: {files: [a]}\ntests_dir: .\ntest: {run: [t]}\n"
			   "report: {format: tap}\ntests: [{name: a}]\n");
	expect_error_in(dir, ":3: tests_dir: '.' is the assignment directory itself");
	harness_rm_tree(dir);
}

static void test_assignment_rejects_symlink_inside_tests_dir(void **state)
{
	(void)state;
	char dir[64], sub[128], link[160];

	make_tmp(dir, sizeof(dir), "tests_dir_symlink");
	snprintf(sub, sizeof(sub), "%s/tests", dir);
	assert_int_equal(mkdir(sub, 0755), 0);
	snprintf(link, sizeof(link), "%s/tests/passwd", dir);
	assert_int_equal(symlink("/etc/passwd", link), 0);
	expect_error_in(dir, ":6: tests_dir: 'tests/passwd' is a symlink; only regular files and "
			     "directories are copied");
	harness_rm_tree(dir);
}

static void test_assignment_rejects_missing_case_file(void **state)
{
	(void)state;
	expect_error("io_case_file_missing", ":8: io.cases[0].stdin: 'a.in' does not exist");
}

static void test_assignment_rejects_expected_output_inside_tests_dir(void **state)
{
	(void)state;
	expect_error("io_expected_in_tests_dir",
		     ":9: io.cases[0].expected: is inside tests_dir, which is copied into the "
		     "sandbox; keep expected output elsewhere");
}

/* ---- split runs (issue 12) ---- */

static void test_assignment_runner_kind_reads_the_test_command(void **state)
{
	(void)state;
	struct {
		const char *argv[8];
		enum runner_kind want;
	} cases[] = {
	    {{"python3", "-m", "pytest", "-q", NULL}, RUNNER_PYTEST},
	    {{"/usr/bin/python3.11", "-X", "dev", "-m", "pytest", NULL}, RUNNER_PYTEST},
	    {{"pytest", "-q", NULL}, RUNNER_PYTEST},
	    {{"python3", "-m", "unittest", "discover", NULL}, RUNNER_UNITTEST},
	    {{"python3", "-m", "xmlrunner", NULL}, RUNNER_UNITTEST},
	    {{"python3", "run_tests.py", "-m", "pytest", NULL}, RUNNER_OTHER},
	    {{"python3", "-W", "-m", "pytest", NULL}, RUNNER_OTHER}, /* -W takes "-m" */
	    {{"python3.x", "-m", "pytest", NULL}, RUNNER_OTHER},
	    {{"python3", "-m", NULL}, RUNNER_OTHER},
	    {{"node", "--test", "t.mjs", NULL}, RUNNER_NODE},
	    {{"node", "t.mjs", NULL}, RUNNER_OTHER},
	    {{"java", "-jar", "/usr/share/java/junit-platform-console-standalone.jar", NULL},
	     RUNNER_JUNIT},
	    {{"./runner", "{report}", NULL}, RUNNER_OTHER},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(assignment_runner_kind((char *const *)cases[i].argv),
				 cases[i].want);
	assert_int_equal(assignment_runner_kind(NULL), RUNNER_OTHER);
}

static void test_assignment_split_is_the_python_default(void **state)
{
	char dir[PATH_MAX];
	(void)state;

	make_tmp(dir, sizeof(dir), NULL);
	harness_write_text(dir, "assignment.yaml",
			   "name: t\nsubmission: {files: [a.py]}\n"
			   "test: {run: [python3, -m, pytest, t.py]}\n"
			   "report: {format: junit}\ntests: [{name: t, points: 1}]\n");
	struct assignment *a = load_ok(dir);
	assert_int_equal(a->runner, RUNNER_PYTEST);
	assert_false(a->in_process);
	assert_true(assignment_split(a));
	assignment_free(a);

	harness_write_text(dir, "assignment.yaml",
			   "name: t\nsubmission: {files: [a.py]}\n"
			   "test: {run: [python3, -m, pytest, t.py], in_process: true}\n"
			   "report: {format: junit}\ntests: [{name: t, points: 1}]\n");
	a = load_ok(dir);
	assert_true(a->in_process);
	assert_false(assignment_split(a));
	assignment_free(a);

	/* Split, only the harness may write the report: {report_dir}. */
	harness_write_text(dir, "assignment.yaml",
			   "name: t\nsubmission: {files: [a.py]}\n"
			   "test: {run: [python3, -m, pytest, t.py]}\n"
			   "report: {format: junit, path: out/report.xml}\n"
			   "tests: [{name: t, points: 1}]\n");
	expect_error_in(dir,
			":4: report.path: must be below {report_dir}/ when the tests run split "
			"from the submission (Python runners; docs/grading.md), so the program "
			"cannot rewrite the report; or set test.in_process: true");
	harness_write_text(dir, "assignment.yaml",
			   "name: t\nsubmission: {files: [a.py]}\n"
			   "test: {run: [python3, -m, pytest, t.py], in_process: true}\n"
			   "report: {format: junit, path: out/report.xml}\n"
			   "tests: [{name: t, points: 1}]\n");
	a = load_ok(dir);
	assignment_free(a);

	/* Only Python runners can run split, so only they can opt out. */
	harness_write_text(dir, "assignment.yaml",
			   "name: t\nsubmission: {files: [a.c]}\n"
			   "test: {run: [./runner], in_process: true}\n"
			   "report: {format: tap}\ntests: [{name: t, points: 1}]\n");
	expect_error_in(dir, ":3: test.in_process: only Python runners (python3 -m pytest, "
			     "python3 -m unittest), node --test and the JUnit console launcher run "
			     "split; this runner always runs in one process");

	/* JUnit runs split too, and its build compiles the submission alone. */
	char tdir[PATH_MAX + 8];
	snprintf(tdir, sizeof(tdir), "%s/t", dir);
	assert_int_equal(mkdir(tdir, 0755), 0);
	harness_write_text(tdir, "SolutionTest.java", "class SolutionTest {}\n");
	harness_write_text(dir, "assignment.yaml",
			   "name: t\nsubmission: {files: [Solution.java]}\ntests_dir: t\n"
			   "build: {run: [javac, -d, classes, Solution.java, SolutionTest.java]}\n"
			   "test: {run: [java, -jar, "
			   "/usr/share/java/junit-platform-console-standalone.jar, --class-path, "
			   "classes]}\n"
			   "report: {format: junit}\ntests: [{name: t, points: 1}]\n");
	expect_error_in(dir, ":4: build.run: names 'SolutionTest.java', a file of tests_dir: the "
			     "JUnit tests run split from the submission by default, and the harness "
			     "compiles them against its classes (docs/grading.md, \"Java: JUnit, "
			     "split\"), so the build compiles the submission alone; leave "
			     "'SolutionTest.java' out of build.run, or set test.in_process: true");
	harness_write_text(dir, "assignment.yaml",
			   "name: t\nsubmission: {files: [Solution.java]}\ntests_dir: t\n"
			   "build: {run: [javac, -d, classes, Solution.java, SolutionTest.java]}\n"
			   "test: {run: [java, -jar, "
			   "/usr/share/java/junit-platform-console-standalone.jar, --class-path, "
			   "classes], in_process: true}\n"
			   "report: {format: junit}\ntests: [{name: t, points: 1}]\n");
	a = load_ok(dir);
	assert_false(assignment_split(a));
	assignment_free(a);
	harness_write_text(dir, "assignment.yaml",
			   "name: t\nsubmission: {files: [Solution.java]}\ntests_dir: t\n"
			   "build: {run: [javac, -d, classes, Solution.java]}\n"
			   "test: {run: [java, -jar, "
			   "/usr/share/java/junit-platform-console-standalone.jar, --class-path, "
			   "classes]}\n"
			   "report: {format: junit}\ntests: [{name: t, points: 1}]\n");
	a = load_ok(dir);
	assert_int_equal(a->runner, RUNNER_JUNIT);
	assert_true(assignment_split(a));
	assignment_free(a);
	harness_rm_tree(dir);
}

static void test_split_argv_wraps_the_runner(void **state)
{
	(void)state;
	const char *py[] = {"/usr/bin/python3", "-X", "dev", "-m", "pytest", "-q", "t.py", NULL};
	const char *script[] = {"pytest", "-q", NULL};
	const char *ut[] = {"python3", "-m", "unittest", "discover", NULL};
	char **h = split_harness_argv((char *const *)py, RUNNER_PYTEST, NULL);
	assert_argv(h, 9,
		    (const char *const[]){"/usr/bin/python3", "-X", "dev", "-m", "proctor_split",
					  "harness", "pytest", "-q", "t.py", NULL});
	char **p = split_program_argv(h);
	assert_argv(
	    p, 4,
	    (const char *const[]){"/usr/bin/python3", "-m", "proctor_split", "program", NULL});
	for (size_t i = 0; h[i]; i++)
		free(h[i]);
	free(h);
	for (size_t i = 0; p[i]; i++)
		free(p[i]);
	free(p);
	h = split_harness_argv((char *const *)script, RUNNER_PYTEST, NULL);
	assert_argv(h, 6,
		    (const char *const[]){"python3", "-m", "proctor_split", "harness", "pytest",
					  "-q", NULL});
	for (size_t i = 0; h[i]; i++)
		free(h[i]);
	free(h);
	h = split_harness_argv((char *const *)ut, RUNNER_UNITTEST, NULL);
	assert_argv(h, 6,
		    (const char *const[]){"python3", "-m", "proctor_split", "harness", "unittest",
					  "discover", NULL});
	for (size_t i = 0; h[i]; i++)
		free(h[i]);
	free(h);
	/* node --test: the harness runs the files itself, options kept. */
	const char *node[] = {"node", "--test", "--test-reporter", "junit",
			      "--test-reporter-destination=/r/x.xml", "a.mjs", "b.mjs", NULL};
	h = split_harness_argv((char *const *)node, RUNNER_NODE, "/tmp/.g");
	assert_argv(h, 8,
		    (const char *const[]){"node", "--test-reporter", "junit",
					  "--test-reporter-destination=/r/x.xml",
					  "/tmp/.g/proctor_split.mjs", "harness", "a.mjs", "b.mjs",
					  NULL});
	p = split_program_argv(h);
	assert_argv(p, 3,
		    (const char *const[]){"node", "/tmp/.g/proctor_split.mjs", "program", NULL});
	for (size_t i = 0; h[i]; i++)
		free(h[i]);
	free(h);
	for (size_t i = 0; p[i]; i++)
		free(p[i]);
	free(p);
	/* JUnit: both JVMs under sh (the channel to fd 0), the launcher's jar
	 * on the harness's class path, the launcher's --class-path (the
	 * submission's classes) on the program side's. */
	const char *swap = "exec 4<&0 0<&3 3<&4 4<&-; exec \"$@\"";
	const char *junit[] = {"java",	       "-Xmx256m",    "-jar",	    "/u/launcher.jar",
			       "--class-path", "classes:lib", "--select-class", "T",
			       NULL};
	h = split_harness_argv((char *const *)junit, RUNNER_JUNIT, "/tmp/.g");
	assert_argv(h, 15,
		    (const char *const[]){"/bin/sh", "-c", swap, "sh", "java",
					  "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp",
					  "/tmp/.g:/u/launcher.jar", "proctor.split.ProctorSplit",
					  "harness", "--class-path", "classes:lib", "--select-class",
					  "T", NULL});
	p = split_program_argv(h);
	assert_argv(p, 10,
		    (const char *const[]){"/bin/sh", "-c", swap, "sh", "java", "-Xmx256m", "-cp",
					  "/tmp/.g:classes:lib", "proctor.split.ProctorSplit",
					  "program", NULL});
	for (size_t i = 0; h[i]; i++)
		free(h[i]);
	free(h);
	for (size_t i = 0; p[i]; i++)
		free(p[i]);
	free(p);
	/* The launcher as a main class: the JVM's class path loses what the
	 * program could have written. */
	const char *main_form[] = {"java",
				   "-cp",
				   "/u/launcher.jar:classes:/tmp/x:/work/y",
				   "org.junit.platform.console.ConsoleLauncher",
				   "-cp=classes",
				   NULL};
	h = split_harness_argv((char *const *)main_form, RUNNER_JUNIT, "/tmp/.g");
	assert_argv(h, 11,
		    (const char *const[]){"/bin/sh", "-c", swap, "sh", "java",
					  "-XX:TieredStopAtLevel=1", "-cp",
					  "/tmp/.g:/u/launcher.jar", "proctor.split.ProctorSplit",
					  "harness", "-cp=classes", NULL});
	p = split_program_argv(h);
	assert_argv(p, 9,
		    (const char *const[]){"/bin/sh", "-c", swap, "sh", "java", "-cp",
					  "/tmp/.g:classes", "proctor.split.ProctorSplit", "program",
					  NULL});
	for (size_t i = 0; h[i]; i++)
		free(h[i]);
	free(h);
	for (size_t i = 0; p[i]; i++)
		free(p[i]);
	free(p);
}

/* build.objects: every key read; absent, there is no check. */
static void test_assignment_reads_build_objects(void **state)
{
	(void)state;
	struct assignment *a = load_fixture("objects_full");

	assert_int_equal(a->objects.n_files, 2);
	assert_string_equal(a->objects.files[0], "solution.o");
	assert_string_equal(a->objects.files[1], "lib/extra.o");
	assert_null(a->objects.files[2]);
	assert_int_equal(a->objects.n_allow, 2);
	assert_string_equal(a->objects.allow[1], "helper_*");
	assignment_free(a);
	a = load_fixture("full_runner");
	assert_int_equal(a->objects.n_files, 0);
	assert_null(a->objects.files);
	assignment_free(a);
}

static void test_assignment_rejects_build_objects_without_allow(void **state)
{
	(void)state;
	expect_error("objects_missing_allow",
		     ":12: build.objects.allow: missing required key (the symbols the objects may "
		     "define; [] for none)");
}

static void test_assignment_rejects_build_objects_path_outside_work(void **state)
{
	(void)state;
	expect_error("objects_bad_file",
		     ":13: build.objects.files[1]: '../etc/x.o' must be a file's path relative to "
		     "/work, without '..', glob characters or control characters");
}

static void test_assignment_rejects_unknown_key_in_build_objects(void **state)
{
	(void)state;
	expect_error("objects_unknown_key",
		     ":14: build.objects.allowed: unknown key (expected files, allow)");
}

static void test_assignment_rejects_objects_outside_build(void **state)
{
	(void)state;
	expect_error("objects_in_setup", ":12: setup.objects: unknown key (expected run, limits)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_assignment_reads_build_objects),
	    cmocka_unit_test(test_assignment_rejects_build_objects_without_allow),
	    cmocka_unit_test(test_assignment_rejects_build_objects_path_outside_work),
	    cmocka_unit_test(test_assignment_rejects_unknown_key_in_build_objects),
	    cmocka_unit_test(test_assignment_rejects_objects_outside_build),
	    cmocka_unit_test(test_assignment_full_runner_reads_every_key),
	    cmocka_unit_test(test_assignment_minimal_gets_every_default),
	    cmocka_unit_test(test_assignment_io_mode_reads_cases_and_inherits_limits),
	    cmocka_unit_test(test_assignment_accepts_ok_exit_inside_test),
	    cmocka_unit_test(test_assignment_loads_a_yaml_file_named_directly),
	    cmocka_unit_test(test_assignment_digest_changes_with_a_tests_dir_file),
	    cmocka_unit_test(test_assignment_visibility_names_match_the_schema),
	    cmocka_unit_test(test_assignment_rejects_missing_file),
	    cmocka_unit_test(test_assignment_rejects_empty_file),
	    cmocka_unit_test(test_assignment_rejects_binary_garbage),
	    cmocka_unit_test(test_assignment_rejects_file_over_1_mib),
	    cmocka_unit_test(test_assignment_rejects_control_characters),
	    cmocka_unit_test(test_assignment_rejects_invalid_utf8_with_line),
	    cmocka_unit_test(test_assignment_rejects_text_that_is_not_a_map),
	    cmocka_unit_test(test_assignment_reports_yaml_syntax_error_with_line),
	    cmocka_unit_test(test_assignment_rejects_two_documents),
	    cmocka_unit_test(test_assignment_rejects_anchors_and_aliases),
	    cmocka_unit_test(test_assignment_rejects_merge_keys),
	    cmocka_unit_test(test_assignment_rejects_unknown_top_level_key),
	    cmocka_unit_test(test_assignment_reads_isolation_vm),
	    cmocka_unit_test(test_assignment_rejects_unknown_isolation),
	    cmocka_unit_test(test_assignment_rejects_unknown_nested_key),
	    cmocka_unit_test(test_assignment_rejects_duplicate_key),
	    cmocka_unit_test(test_assignment_rejects_string_where_list_expected),
	    cmocka_unit_test(test_assignment_rejects_missing_name),
	    cmocka_unit_test(test_assignment_runner_mode_requires_test),
	    cmocka_unit_test(test_assignment_runner_mode_requires_report),
	    cmocka_unit_test(test_assignment_runner_mode_requires_report_format),
	    cmocka_unit_test(test_assignment_runner_mode_requires_tests),
	    cmocka_unit_test(test_assignment_rejects_invalid_name),
	    cmocka_unit_test(test_assignment_rejects_required_file_no_glob_takes),
	    cmocka_unit_test(test_assignment_rejects_io_section_in_runner_mode),
	    cmocka_unit_test(test_assignment_rejects_tests_in_io_mode),
	    cmocka_unit_test(test_assignment_io_mode_requires_a_case),
	    cmocka_unit_test(test_assignment_rejects_empty_argv),
	    cmocka_unit_test(test_assignment_rejects_argv_with_a_map),
	    cmocka_unit_test(test_assignment_rejects_argv_given_as_shell_string),
	    cmocka_unit_test(test_assignment_rejects_negative_limit),
	    cmocka_unit_test(test_assignment_rejects_non_numeric_limit),
	    cmocka_unit_test(test_assignment_rejects_absurd_limit),
	    cmocka_unit_test(test_assignment_limit_bounds_follow_the_limit_table),
	    cmocka_unit_test(test_assignment_rejects_quoted_number),
	    cmocka_unit_test(test_assignment_rejects_infinite_points),
	    cmocka_unit_test(test_assignment_rejects_exit_code_over_255),
	    cmocka_unit_test(test_assignment_rejects_ok_exit_given_twice),
	    cmocka_unit_test(test_assignment_rejects_duplicate_test_names),
	    cmocka_unit_test(test_assignment_rejects_duplicate_case_names),
	    cmocka_unit_test(test_assignment_rejects_tests_dir_with_dotdot),
	    cmocka_unit_test(test_assignment_rejects_absolute_tests_dir),
	    cmocka_unit_test(test_assignment_rejects_missing_tests_dir),
	    cmocka_unit_test(test_assignment_rejects_tests_dir_symlink_leading_outside),
	    cmocka_unit_test(test_assignment_rejects_assignment_dir_as_tests_dir),
	    cmocka_unit_test(test_assignment_rejects_symlink_inside_tests_dir),
	    cmocka_unit_test(test_assignment_rejects_missing_case_file),
	    cmocka_unit_test(test_assignment_rejects_expected_output_inside_tests_dir),
	    cmocka_unit_test(test_assignment_runner_kind_reads_the_test_command),
	    cmocka_unit_test(test_assignment_split_is_the_python_default),
	    cmocka_unit_test(test_split_argv_wraps_the_runner),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
