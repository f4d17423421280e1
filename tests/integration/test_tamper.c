/*
 * Integration tests: split Python and node runs (issues 12, 21, docs/grading.md).
 *
 * Six assignments under tests/data/assignments, each with EXPECTED.tsv:
 *
 *   py_compat, py_compat_unittest     real test-suite shapes (classes,
 *                                     exceptions, generators, dataclasses,
 *                                     nested data, floats, printed output,
 *                                     helper modules, callables) for pytest
 *                                     and unittest: the reference solution
 *                                     keeps full marks in both modes.
 *   py_compat_realworld               what real-world exercise suites do
 *                                     (issue 21): arithmetic with the tests'
 *                                     values in both orders, context
 *                                     managers and mocks across the
 *                                     processes, callbacks' identity,
 *                                     mock.patch of builtins, containers,
 *                                     star imports with and without __all__.
 *   py_attacks_runtime                modules planted where the harness
 *                                     imports from (issue 22): a package
 *                                     proctor_guard/ by the build, a stdlib
 *                                     shim on first import; and a test that
 *                                     no directory on the harness's path is
 *                                     the program's to write.
 *   py_attacks_split                  attacks on split runs themselves
 *                                     (issue 21): a star import replacing the
 *                                     tests' pytest, a SIGKILL mid-call, an
 *                                     always-True __eq__ between two of the
 *                                     submission's objects, hidden inputs
 *                                     shown in a visible test's message.
 *   py_attacks, py_attacks_unittest   wrong code plus one tampering attack
 *                                     per submission: in the default (split)
 *                                     mode every attacked test scores 0 and
 *                                     the verdict is not `error`.
 *   java_compat                       JUnit 5 suites (issue 21): static methods,
 *                                     objects, inheritance, interfaces and
 *                                     lambdas, generics, enums, records,
 *                                     exceptions, collections and arrays changed
 *                                     in place, output, stdin; an always-true
 *                                     equals() (in_process.yaml: the same in one
 *                                     process, whose build compiles the tests).
 *   java_attacks                      wrong code plus one attack on a JUnit run:
 *                                     an always-true equals(), the hidden tests
 *                                     read, System.exit in a static initializer,
 *                                     hidden inputs shown in a visible test.
 *   js_compat, js_attacks             the same for node --test (issue 21):
 *                                     classes, exceptions, callbacks,
 *                                     generators, async functions, Map/Set/
 *                                     Date, output; and node:assert patched,
 *                                     always-equal objects, a forged report,
 *                                     the hidden file read, an exit handler,
 *                                     node:test used by the submission.
 *
 * Every assignment is graded twice with the jail: as it is (its default, a
 * split run) and as a copy whose test step says `in_process: true`, which
 * shows what each attack gets when the tests and the submission share a
 * process: that the attacks are real, so that the split rows can fail.
 *
 * EXPECTED.tsv, one row per submission and mode, tab-separated:
 *
 *   submission       a directory relative to the assignment (reference,
 *                    submissions/NAME)
 *   mode             split, in_process or both
 *   expected_status  the result's status, or !STATUS for any but STATUS
 *   expected_score   the result's score
 *   max_score        the result's max_score
 *   failing          - (every declared test passes with its full points),
 *                    * (every test scores 0 and none passed), or a comma-
 *                    separated list of the tests that score 0 and do not
 *                    pass while all the others pass with full points
 *   view_has         a string the student view must contain, or -
 *   view_lacks       a string the student view must not contain, or -
 *   notes            free text
 *
 * Every directory under submissions/ must have a row for each mode.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
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

#include "harness.h"

#ifndef ASSIGNMENTS_DIR
#error "ASSIGNMENTS_DIR must point at tests/data/assignments"
#endif

enum mode { MODE_SPLIT, MODE_IN_PROCESS };

static const char *const mode_names[] = {"split", "in_process"};

#define N_FIELDS 9

/* One row of EXPECTED.tsv; the strings point into the line. */
struct row {
	const char *sub, *mode, *status, *failing, *view_has, *view_lacks;
	double score, max_score;
};

/* Split `line` (trailing newline removed) at tabs into exactly N_FIELDS. */
static bool split_row(char *line, char **fields)
{
	size_t n = 0;
	line[strcspn(line, "\r\n")] = '\0';
	for (char *p = line; n < N_FIELDS; n++) {
		fields[n] = p;
		char *tab = strchr(p, '\t');
		if (!tab)
			return n + 1 == N_FIELDS;
		*tab = '\0';
		p = tab + 1;
	}
	return false;
}

static double parse_number(const char *file, int lineno, const char *what, const char *s)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || *end)
		fail_msg("%s:%d: %s: expected a number, got '%s'", file, lineno, what, s);
	return v;
}

/* Mismatches found so far in the current test: each is printed and the
 * test fails at its end, so one run lists every row that differs. */
static int mismatches;

#define MISMATCH(...)                                                                              \
	do {                                                                                       \
		print_error("MISMATCH: " __VA_ARGS__);                                             \
		print_error("\n");                                                                 \
		mismatches++;                                                                      \
	} while (0)

static bool row_applies(const struct row *r, enum mode m)
{
	return strcmp(r->mode, "both") == 0 || strcmp(r->mode, mode_names[m]) == 0;
}

/* Whether `name` is one of the comma-separated names in `list`. */
static bool in_list(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		if (len == n && strncmp(p, name, n) == 0)
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

/* $TAMPER_ISOLATION (jail, or vm with $TAMPER_IMAGE pinned in a copy of
 * each assignment and $PROCTOR_STATE_DIR): the backend graded with.  In the
 * vm suite only the split attacks are graded: a microVM grades them from
 * the assignment's template, whose zygote forks the harness (docs/vm.md). */
static const char *isolation(void)
{
	const char *s = getenv("TAMPER_ISOLATION");
	return s && *s ? s : "jail";
}

/*
 * A copy of ASSIGNMENTS_DIR/name in a fresh temporary directory whose
 * assignment.yaml (in_process.yaml's text where there is one) says
 * `in_process: true` in its test step (if in_process)
 * and pins $TAMPER_IMAGE (under the microVM).  Returns the copy's path;
 * *ret_tmp is the directory to remove.
 */
static char *variant_copy(const char *name, bool in_process, char **ret_tmp)
{
	char *tmp = harness_tmpdir(), *dir, cmd[2 * PATH_MAX + 64], yaml[PATH_MAX];
	assert_int_equal(chmod(tmp, 0755), 0);
	if (asprintf(&dir, "%s/%s", tmp, name) < 0)
		fail_msg("out of memory");
	snprintf(cmd, sizeof cmd, "cp -r '%s/%s' '%s'", ASSIGNMENTS_DIR, name, dir);
	assert_int_equal(system(cmd), 0);
	/* A JUnit assignment's build differs in one process (it compiles the
	 * tests too): its in_process.yaml is the whole assignment then. */
	harness_path_join(yaml, dir, "in_process.yaml");
	struct stat st;
	char *text = in_process && stat(yaml, &st) == 0 ? harness_read(yaml, NULL) : NULL;
	harness_path_join(yaml, dir, "assignment.yaml");
	if (!text)
		text = harness_read(yaml, NULL);
	char *at = strstr(text, "\ntest:\n");
	if (!at || strstr(at + 1, "\ntest:\n"))
		fail_msg("%s: expected one line 'test:' starting a block mapping", yaml);
	at += strlen("\ntest:\n");
	const char *image = getenv("TAMPER_IMAGE");
	char *out;
	if (asprintf(&out, "%s%s%s%.*s%s%s", image ? "image: " : "", image ? image : "",
		     image ? "\n" : "", (int)(at - text), text,
		     in_process ? "  in_process: true\n" : "", at) < 0)
		fail_msg("out of memory");
	harness_write_text(dir, "assignment.yaml", out);
	free(out);
	free(text);
	*ret_tmp = tmp;
	return dir;
}

/* The declared tests of a result against the row's `failing` column. */
static void check_tests(const char *what, const struct proc_out *o, const struct row *r)
{
	json_t *tests = json_object_get(o->json, "tests");
	size_t i, listed = 0;
	json_t *t;
	if (!json_is_array(tests) || json_array_size(tests) == 0) {
		MISMATCH("%s: the result has no tests", what);
		return;
	}
	json_array_foreach(tests, i, t)
	{
		const char *name = json_string_value(json_object_get(t, "name"));
		const char *status = json_string_value(json_object_get(t, "status"));
		double score = json_number_value(json_object_get(t, "score"));
		double max = json_number_value(json_object_get(t, "max_score"));
		assert_non_null(name);
		assert_non_null(status);
		bool fails = strcmp(r->failing, "*") == 0 ||
			     (strcmp(r->failing, "-") != 0 && in_list(r->failing, name));
		if (fails && strcmp(r->failing, "*") != 0)
			listed++;
		if (fails && (score != 0 || strcmp(status, "passed") == 0))
			MISMATCH("%s: %s is %s with score %g, expected no marks", what, name,
				 status, score);
		if (!fails && (strcmp(status, "passed") != 0 || score < max - 1e-9))
			MISMATCH("%s: %s is %s with score %g of %g, expected a pass (reason: %s, "
				 "message: %.500s)",
				 what, name, status, score, max,
				 json_string_value(json_object_get(t, "reason")),
				 json_string_value(json_object_get(t, "message")));
	}
	if (strcmp(r->failing, "*") != 0 && strcmp(r->failing, "-") != 0) {
		size_t n = 1;
		for (const char *p = r->failing; *p; p++)
			n += *p == ',';
		if (listed != n)
			MISMATCH("%s: %zu of the %zu failing tests named are declared tests", what,
				 listed, n);
	}
}

/* Grade one row in `dir` (the assignment or its in-process copy). */
static void check_row(const char *name, const char *dir, enum mode m, const struct row *r)
{
	char sub[PATH_MAX], what[512];
	harness_path_join(sub, dir, r->sub);
	snprintf(what, sizeof what, "%s/%s (%s)", name, r->sub, mode_names[m]);
	char *args[] = {"grade",     "--json", "--isolation", (char *)isolation(),
			(char *)dir, sub,      NULL};
	struct proc_out o;
	harness_run(&o, NULL, 600, args);
	if (!o.json)
		fail_msg("%s: no JSON result; exit %d; stderr: %s", what, o.exit_status, o.err);
	const char *status = jstr(&o, "status");
	print_message("[  CASE    ] %s: %s %g/%g\n", what, status,
		      json_number_value(json_object_get(o.json, "score")),
		      json_number_value(json_object_get(o.json, "max_score")));
	bool status_ok = r->status[0] == '!' ? strcmp(status, r->status + 1) != 0
					     : strcmp(status, r->status) == 0;
	if (!status_ok)
		MISMATCH("%s: status %s, expected %s (reason: %s)", what, status, r->status,
			 json_string_value(json_object_get(o.json, "reason")));
	if (o.exit_status != 0)
		MISMATCH("%s: proctor exited %d", what, o.exit_status);
	double score = json_number_value(json_object_get(o.json, "score"));
	double max = json_number_value(json_object_get(o.json, "max_score"));
	if (score < r->score - 1e-9 || score > r->score + 1e-9)
		MISMATCH("%s: score %g, expected %g", what, score, r->score);
	if (max < r->max_score - 1e-9 || max > r->max_score + 1e-9)
		MISMATCH("%s: max_score %g, expected %g", what, max, r->max_score);
	check_tests(what, &o, r);
	/* Under the microVM a split run's harness is a fork of the template's
	 * zygote: the attacks are graded on that path. */
	json_t *snap = json_object_get(o.json, "snapshot");
	if (strcmp(isolation(), "vm") == 0 && m == MODE_SPLIT &&
	    !json_is_true(json_object_get(snap, "template")))
		MISMATCH("%s: not graded from the assignment's template (snapshot %s)", what,
			 json_is_object(snap) ? "without template" : "null");
	proc_out_free(&o);

	if (strcmp(r->view_has, "-") != 0 || strcmp(r->view_lacks, "-") != 0) {
		char *view[] = {"grade",     "--json",	    "--view",
				"student",   "--isolation", (char *)isolation(),
				(char *)dir, sub,	    NULL};
		harness_run(&o, NULL, 600, view);
		if (!o.json)
			fail_msg("%s: no JSON student view; stderr: %s", what, o.err);
		if (strcmp(r->view_has, "-") != 0 && !strstr(o.out, r->view_has))
			MISMATCH("%s: the student view lacks '%s'", what, r->view_has);
		if (strcmp(r->view_lacks, "-") != 0 && strstr(o.out, r->view_lacks))
			MISMATCH("%s: the student view holds '%s'", what, r->view_lacks);
		proc_out_free(&o);
	}
	harness_assert_clean();
}

/* Every directory under submissions/ has a row that applies in mode m. */
static void check_every_submission_listed(const char *name, const struct row *rows, size_t n,
					  enum mode m)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s/submissions", ASSIGNMENTS_DIR, name);
	DIR *d = opendir(path);
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char sub[PATH_MAX];
		snprintf(sub, sizeof sub, "submissions/%s", de->d_name);
		bool found = false;
		for (size_t i = 0; i < n && !found; i++)
			found = strcmp(rows[i].sub, sub) == 0 && row_applies(&rows[i], m);
		if (!found)
			fail_msg("%s/EXPECTED.tsv: no %s row for %s", name, mode_names[m], sub);
	}
	closedir(d);
}

/* Grade every row of ASSIGNMENTS_DIR/name/EXPECTED.tsv that applies in m. */
static void check_assignment(const char *name, enum mode m)
{
	char path[PATH_MAX], *tmp = NULL, *copy = NULL;
	harness_require_root("grading");
	snprintf(path, sizeof path, "%s/%s/EXPECTED.tsv", ASSIGNMENTS_DIR, name);
	char *text = harness_read(path, NULL);
	struct row rows[64];
	size_t n = 0;
	mismatches = 0;
	int lineno = 1;
	char *save = NULL, *line = strtok_r(text, "\n", &save); /* the header */
	assert_non_null(line);
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *f[N_FIELDS] = {0};
		lineno++;
		if (!split_row(line, f))
			fail_msg("%s:%d: expected %d tab-separated fields", path, lineno, N_FIELDS);
		if (n == sizeof rows / sizeof rows[0])
			fail_msg("%s: more than %zu rows", path, n);
		rows[n] = (struct row){.sub = f[0],
				       .mode = f[1],
				       .status = f[2],
				       .failing = f[5],
				       .view_has = f[6],
				       .view_lacks = f[7]};
		rows[n].score = parse_number(path, lineno, "expected_score", f[3]);
		rows[n].max_score = parse_number(path, lineno, "max_score", f[4]);
		if (strcmp(f[1], "both") != 0 && strcmp(f[1], "split") != 0 &&
		    strcmp(f[1], "in_process") != 0)
			fail_msg("%s:%d: mode '%s' is not split, in_process or both", path, lineno,
				 f[1]);
		n++;
	}
	check_every_submission_listed(name, rows, n, m);

	char original[PATH_MAX];
	snprintf(original, sizeof original, "%s/%s", ASSIGNMENTS_DIR, name);
	const char *dir = original;
	if (m == MODE_IN_PROCESS || getenv("TAMPER_IMAGE"))
		dir = copy = variant_copy(name, m == MODE_IN_PROCESS, &tmp);
	size_t graded = 0;
	for (size_t i = 0; i < n; i++) {
		if (!row_applies(&rows[i], m))
			continue;
		check_row(name, dir, m, &rows[i]);
		graded++;
	}
	if (tmp)
		harness_rm_tree(tmp);
	free(tmp);
	free(copy);
	free(text);
	assert_true(graded >= 3);
	if (mismatches)
		fail_msg("%s (%s): %d mismatches with EXPECTED.tsv, printed above", name,
			 mode_names[m], mismatches);
}

/* Real test suites keep working: the default (split) mode. */
static void test_pytest_compat_split(void **state)
{
	(void)state;
	check_assignment("py_compat", MODE_SPLIT);
}

static void test_unittest_compat_split(void **state)
{
	(void)state;
	check_assignment("py_compat_unittest", MODE_SPLIT);
}

static void test_pytest_compat_realworld_split(void **state)
{
	(void)state;
	check_assignment("py_compat_realworld", MODE_SPLIT);
}

/* The same suites in one process, as before split runs. */
static void test_pytest_compat_in_process(void **state)
{
	(void)state;
	check_assignment("py_compat", MODE_IN_PROCESS);
}

static void test_unittest_compat_in_process(void **state)
{
	(void)state;
	check_assignment("py_compat_unittest", MODE_IN_PROCESS);
}

static void test_pytest_compat_realworld_in_process(void **state)
{
	(void)state;
	check_assignment("py_compat_realworld", MODE_IN_PROCESS);
}

/* node --test suites keep working split, and in one process. */
static void test_node_compat_split(void **state)
{
	(void)state;
	check_assignment("js_compat", MODE_SPLIT);
}

static void test_node_compat_in_process(void **state)
{
	(void)state;
	check_assignment("js_compat", MODE_IN_PROCESS);
}

/* Tampering with node --test: nothing split, real in one process. */
static void test_node_attacks_split(void **state)
{
	(void)state;
	check_assignment("js_attacks", MODE_SPLIT);
}

static void test_node_attacks_in_process(void **state)
{
	(void)state;
	check_assignment("js_attacks", MODE_IN_PROCESS);
}

/* Files the submission makes for node's resolution to take (require's
 * probing of './helpers'): split, the tests' own file wins. */
static void test_node_resolve_attacks_split(void **state)
{
	(void)state;
	check_assignment("js_attacks_resolve", MODE_SPLIT);
}

static void test_node_resolve_attacks_in_process(void **state)
{
	(void)state;
	check_assignment("js_attacks_resolve", MODE_IN_PROCESS);
}

/* JUnit suites keep working split (the tests compiled against stand-ins of
 * the submission's classes), and in one process; an always-true equals()
 * earns nothing split. */
static void test_junit_compat_split(void **state)
{
	(void)state;
	check_assignment("java_compat", MODE_SPLIT);
}

static void test_junit_compat_in_process(void **state)
{
	(void)state;
	check_assignment("java_compat", MODE_IN_PROCESS);
}

/* Tampering with a JUnit run: nothing split, real in one process. */
static void test_junit_attacks_split(void **state)
{
	(void)state;
	check_assignment("java_attacks", MODE_SPLIT);
}

static void test_junit_attacks_in_process(void **state)
{
	(void)state;
	check_assignment("java_attacks", MODE_IN_PROCESS);
}

/* Tampering from the submission scores nothing in the default mode. */
static void test_pytest_attacks_split(void **state)
{
	(void)state;
	check_assignment("py_attacks", MODE_SPLIT);
}

static void test_unittest_attacks_split(void **state)
{
	(void)state;
	check_assignment("py_attacks_unittest", MODE_SPLIT);
}

static void test_pytest_split_attacks_split(void **state)
{
	(void)state;
	check_assignment("py_attacks_split", MODE_SPLIT);
}

/* Modules planted where the harness imports from (issue 22): the runtime's
 * directory, a template's above all, is never the program's to write. */
static void test_pytest_runtime_attacks_split(void **state)
{
	(void)state;
	check_assignment("py_attacks_runtime", MODE_SPLIT);
}

static void test_pytest_runtime_attacks_in_process(void **state)
{
	(void)state;
	check_assignment("py_attacks_runtime", MODE_IN_PROCESS);
}

/* The attacks are real: in one process they get the marks EXPECTED.tsv says. */
static void test_pytest_attacks_in_process(void **state)
{
	(void)state;
	check_assignment("py_attacks", MODE_IN_PROCESS);
}

static void test_unittest_attacks_in_process(void **state)
{
	(void)state;
	check_assignment("py_attacks_unittest", MODE_IN_PROCESS);
}

static void test_pytest_split_attacks_in_process(void **state)
{
	(void)state;
	check_assignment("py_attacks_split", MODE_IN_PROCESS);
}

/* A callable of the tests' (here a wrapped open()) called by the submission
 * runs with the tests' rights, and does not read the hidden tests for it. */
static void test_pytest_deputy_split(void **state)
{
	(void)state;
	check_assignment("py_attacks_deputy", MODE_SPLIT);
}

static void test_pytest_deputy_in_process(void **state)
{
	(void)state;
	check_assignment("py_attacks_deputy", MODE_IN_PROCESS);
}

int main(void)
{
	const struct CMUnitTest vm_tests[] = {
	    cmocka_unit_test(test_pytest_attacks_split),
	    cmocka_unit_test(test_unittest_attacks_split),
	    cmocka_unit_test(test_pytest_split_attacks_split),
	    cmocka_unit_test(test_pytest_deputy_split),
	    cmocka_unit_test(test_pytest_runtime_attacks_split),
	};
	if (strcmp(isolation(), "jail") != 0)
		return cmocka_run_group_tests(vm_tests, NULL, NULL);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pytest_compat_split),
	    cmocka_unit_test(test_unittest_compat_split),
	    cmocka_unit_test(test_pytest_compat_realworld_split),
	    cmocka_unit_test(test_pytest_compat_in_process),
	    cmocka_unit_test(test_unittest_compat_in_process),
	    cmocka_unit_test(test_pytest_compat_realworld_in_process),
	    cmocka_unit_test(test_pytest_attacks_split),
	    cmocka_unit_test(test_unittest_attacks_split),
	    cmocka_unit_test(test_pytest_attacks_in_process),
	    cmocka_unit_test(test_unittest_attacks_in_process),
	    cmocka_unit_test(test_pytest_split_attacks_split),
	    cmocka_unit_test(test_pytest_split_attacks_in_process),
	    cmocka_unit_test(test_pytest_runtime_attacks_split),
	    cmocka_unit_test(test_pytest_runtime_attacks_in_process),
	    cmocka_unit_test(test_pytest_deputy_split),
	    cmocka_unit_test(test_pytest_deputy_in_process),
	    cmocka_unit_test(test_node_compat_split),
	    cmocka_unit_test(test_node_compat_in_process),
	    cmocka_unit_test(test_node_attacks_split),
	    cmocka_unit_test(test_node_attacks_in_process),
	    cmocka_unit_test(test_node_resolve_attacks_split),
	    cmocka_unit_test(test_node_resolve_attacks_in_process),
	    cmocka_unit_test(test_junit_compat_split),
	    cmocka_unit_test(test_junit_compat_in_process),
	    cmocka_unit_test(test_junit_attacks_split),
	    cmocka_unit_test(test_junit_attacks_in_process),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
