/*
 * Integration tests: the bytecode of Proctor's Python runtime (issue 13;
 * src/grade/runtime_pyc.h).
 *
 * A split test step imports proctor_split.py, in both its processes, from
 * a root-owned directory where Python cannot write bytecode.  Proctor
 * compiles it once per image, in a sandbox of its own, as a checked-hash
 * .pyc kept in STATE/pyc/KEY/, and puts it beside the source in every
 * split step.  These tests grade through the real
 * binary, in a state directory of their own, and check that:
 *
 *   - the first grading makes the cache: a tag and two checked-hash files;
 *   - the steps use it: a .pyc whose hash matches the source but whose code
 *     says so is what the harness and the program side run;
 *   - a .pyc of other source (a stale or foreign one) is never run: the
 *     grading compiles from source and gets its usual verdict;
 *   - verdicts are those without the cache (PROCTOR_NO_RUNTIME_PYC=1).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#ifndef EXAMPLES_DIR
#error "EXAMPLES_DIR must point at examples/"
#endif
#ifndef SPLIT_SOURCE
#error "SPLIT_SOURCE must point at src/grade/runtimes/python/proctor_split.py"
#endif

static char *tmp;
static char state[PATH_MAX];

/* The one cache directory below state/pyc (fails if there is not exactly one). */
static void cache_dir(char *buf, size_t cap)
{
	char dir[PATH_MAX + 8];
	snprintf(dir, sizeof(dir), "%s/pyc", state);
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strchr(de->d_name, '.'))
			continue;
		snprintf(buf, cap, "%s/%s", dir, de->d_name);
		n++;
	}
	closedir(d);
	assert_int_equal(n, 1);
}

/* Grade examples/python-pytest/submissions/sub in the test's state dir. */
static void grade(struct proc_out *o, const char *sub, char *const *env)
{
	char assignment[PATH_MAX], submission[PATH_MAX];
	snprintf(assignment, sizeof(assignment), "%s/python-pytest", EXAMPLES_DIR);
	snprintf(submission, sizeof(submission), "%s/python-pytest/submissions/%s", EXAMPLES_DIR,
		 sub);
	char *args[] = {"grade", "--json",   "--isolation", "jail", "--state-dir",
			state,	 assignment, submission,    NULL};
	harness_run(o, env, 300, args);
	if (!o->json)
		fail_msg("%s: no JSON result; stderr: %s", sub, o->err);
}

static void expect(const struct proc_out *o, const char *status, long long passed)
{
	if (strcmp(jstr(o, "status"), status) != 0)
		fail_msg("status %s, expected %s (reason: %s)", jstr(o, "status"), status,
			 json_string_value(json_object_get(o->json, "reason")));
	assert_int_equal(jint(o, "passed"), passed);
}

/* The test step's stderr, or "". */
static const char *test_stderr(const struct proc_out *o)
{
	size_t i;
	json_t *s;
	json_array_foreach(json_object_get(o->json, "steps"), i, s)
	{
		if (strcmp(json_string_value(json_object_get(s, "name")), "test") == 0) {
			const char *e = json_string_value(json_object_get(s, "stderr"));
			return e ? e : "";
		}
	}
	return "";
}

/* Run /usr/bin/python3 -c code a1 a2 and require exit 0. */
static void python(const char *code, const char *a1, const char *a2)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/usr/bin/python3", "python3", "-c", code, a1, a2, (char *)NULL);
		_exit(127);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("python3 -c failed (wait status %d)", st);
}

static int setup(void **s)
{
	if (harness_setup_root(s) < 0)
		return -1;
	tmp = harness_tmpdir();
	snprintf(state, sizeof(state), "%s/state", tmp);
	return 0;
}

static int teardown(void **s)
{
	(void)s;
	harness_rm_tree(tmp);
	free(tmp);
	return 0;
}

static void test_cache_made_and_checked(void **s)
{
	(void)s;
	harness_require_root("grading");
	struct proc_out o;
	grade(&o, "partial", NULL);
	expect(&o, "graded", 4);
	proc_out_free(&o);

	char dir[PATH_MAX + 300], path[PATH_MAX + 400];
	cache_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/tag", dir);
	char *tag = harness_read(path, NULL);
	assert_non_null(tag);
	assert_true(strncmp(tag, "cpython-", 8) == 0);
	free(tag);
	size_t len;
	snprintf(path, sizeof(path), "%s/proctor_split.pyc", dir);
	unsigned char *p = (unsigned char *)harness_read(path, &len);
	assert_non_null(p);
	assert_true(len > 16);
	/* PEP 552: flags 3, hash-based and checked against the source. */
	assert_int_equal(p[4], 3);
	assert_int_equal(p[5] | p[6] | p[7], 0);
	free(p);
	/* The guard gets none: pytest compiles its -p plugins itself. */
	snprintf(path, sizeof(path), "%s/proctor_guard.pyc", dir);
	assert_int_not_equal(access(path, F_OK), 0);
	harness_assert_clean();
}

/* Make dir/name (a cache entry) for image `digest`, changed `age_s` ago. */
static void make_entry(const char *dir, const char *name, const char *digest, long age_s)
{
	char path[PATH_MAX + 100];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(mkdir(path, 0755), 0);
	harness_write(path, "image", digest, strlen(digest));
	struct timespec t[2];
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= age_s;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* A new entry removes the same image's entries of other runtimes (an
 * earlier Proctor's) once they are a day old, and leaves younger ones and
 * other images' alone. */
static void test_stale_entries_go(void **s)
{
	(void)s;
	harness_require_root("grading");
	char dir[PATH_MAX + 300], path[PATH_MAX + 400], pyc[PATH_MAX + 8];
	cache_dir(dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/image", dir);
	char *digest = harness_read(path, NULL);
	assert_non_null(digest);
	assert_true(strncmp(digest, "sha256:", 7) == 0);

	snprintf(pyc, sizeof(pyc), "%s/pyc", state);
	static const char stale[] =
	    "0000000000000000000000000000000000000000000000000000000000000000";
	static const char young[] =
	    "2222222222222222222222222222222222222222222222222222222222222222";
	static const char other[] =
	    "1111111111111111111111111111111111111111111111111111111111111111";
	make_entry(pyc, stale, digest, 2 * 86400);
	make_entry(pyc, young, digest, 3600);
	make_entry(pyc, other, "sha256:another", 2 * 86400);
	/* Gone: the next grading compiles and stores it anew. */
	harness_rm_tree(dir);

	struct proc_out o;
	grade(&o, "correct", NULL);
	expect(&o, "graded", 6);
	proc_out_free(&o);
	snprintf(path, sizeof(path), "%s/%s", pyc, stale);
	assert_int_not_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s/%s", pyc, young);
	assert_int_equal(access(path, F_OK), 0);
	harness_rm_tree(path);
	snprintf(path, sizeof(path), "%s/%s", pyc, other);
	assert_int_equal(access(path, F_OK), 0);
	harness_rm_tree(path);
	char again[PATH_MAX + 300];
	cache_dir(again, sizeof(again));
	assert_string_equal(again, dir);
	free(digest);
	harness_assert_clean();
}

/* The cached proctor_split.pyc replaced by what `forge` (Python, argv:
 * the .pyc's path, SPLIT_SOURCE) writes there; the original is kept for
 * unforge(). */
struct forged {
	char path[PATH_MAX + 400];
	char *orig;
	size_t len;
};

static void forge(struct forged *f, const char *code)
{
	char dir[PATH_MAX + 300];
	cache_dir(dir, sizeof(dir));
	snprintf(f->path, sizeof(f->path), "%s/proctor_split.pyc", dir);
	f->orig = harness_read(f->path, &f->len);
	assert_non_null(f->orig);
	python(code, f->path, SPLIT_SOURCE);
}

static void unforge(struct forged *f)
{
	unlink(f->path);
	harness_write(NULL, f->path, f->orig, f->len);
	free(f->orig);
}

/* The runtime's own source, with a line that says it ran, under the header
 * (hash) of the real source: Python takes it, so the steps ran the cache. */
static const char forge_used[] =
    "import marshal, sys\n"
    "pyc, src = sys.argv[1], sys.argv[2]\n"
    "head = open(pyc, 'rb').read()[:16]\n"
    "text = \"import sys\\nsys.stderr.write('PYC-USED\\\\n')\\n\" + open(src).read()\n"
    "code = compile(text, src, 'exec')\n"
    "open(pyc, 'wb').write(head + marshal.dumps(code))\n";

static void test_steps_run_the_cache(void **s)
{
	(void)s;
	harness_require_root("grading");
	struct forged f;
	forge(&f, forge_used);

	struct proc_out o;
	grade(&o, "partial", NULL);
	expect(&o, "graded", 4);
	/* The harness and the program side both import it. */
	const char *err = test_stderr(&o);
	const char *first = strstr(err, "PYC-USED");
	if (!first || !strstr(first + 1, "PYC-USED"))
		fail_msg("the test step did not run the cached bytecode twice; stderr: %s", err);
	proc_out_free(&o);
	unforge(&f);
	harness_assert_clean();
}

/* A checked-hash .pyc of other source where proctor_split's belongs (code
 * that would end the harness at once): Python must compile the real
 * source instead, and the grading gets its usual verdict. */
static const char forge_foreign[] =
    "import os, py_compile, sys\n"
    "pyc = sys.argv[1]\n"
    "open(pyc + '.src.py', 'w').write('import os\\nos._exit(99)\\n')\n"
    "py_compile.compile(pyc + '.src.py', cfile=pyc, doraise=True,\n"
    "                   invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)\n"
    "os.unlink(pyc + '.src.py')\n";

static void test_foreign_bytecode_is_not_run(void **s)
{
	(void)s;
	harness_require_root("grading");
	struct forged f;
	forge(&f, forge_foreign);

	struct proc_out o;
	grade(&o, "correct", NULL);
	expect(&o, "graded", 6);
	proc_out_free(&o);
	grade(&o, "partial", NULL);
	expect(&o, "graded", 4);
	proc_out_free(&o);
	unforge(&f);
	harness_assert_clean();
}

/* Every example submission: the same verdict with and without the cache. */
static void test_same_verdicts_without_it(void **s)
{
	(void)s;
	harness_require_root("grading");
	static const struct {
		const char *sub, *status;
		long long passed;
	} cases[] = {{"correct", "graded", 6},
		     {"partial", "graded", 4},
		     {"syntax_error", "compile_error", 0},
		     {"sys_exit", "crashed", 0}};
	char *off[] = {"PROCTOR_NO_RUNTIME_PYC=1", NULL};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int without = 0; without < 2; without++) {
			struct proc_out o;
			grade(&o, cases[i].sub, without ? off : NULL);
			print_message("[  CASE    ] %s %s: %s\n", cases[i].sub,
				      without ? "without" : "with", jstr(&o, "status"));
			expect(&o, cases[i].status, cases[i].passed);
			proc_out_free(&o);
		}
	}
	harness_assert_clean();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cache_made_and_checked),
	    cmocka_unit_test(test_stale_entries_go),
	    cmocka_unit_test(test_steps_run_the_cache),
	    cmocka_unit_test(test_foreign_bytecode_is_not_run),
	    cmocka_unit_test(test_same_verdicts_without_it),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
