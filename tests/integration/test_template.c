/*
 * Integration tests: assignment snapshots in microVMs (issue 13; docs/vm.md,
 * "Assignment snapshots").
 *
 * A split pytest assignment graded with the microVM is restored from its
 * template: a snapshot of the guest taken after the hidden tests, Proctor's
 * runtime and a zygote of the harness (pytest imported) were put in place,
 * before any submission.  These tests grade through the real binary and
 * check what the template must never change:
 *
 *   - every grading is restored from the template (the result's snapshot
 *     says so) and gets the verdict it gets without one;
 *   - each is fresh: the harness, a fork of the template's zygote, draws
 *     other random numbers and other kernel randomness in every grading,
 *     sees the host's clock, and finds nothing an earlier grading left in
 *     /tmp;
 *   - a submission file named like a hidden test does not replace it;
 *   - a change to the hidden tests makes a new template (a new key), and the
 *     old one is removed.
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

static char image_pin[64];
static char *adir; /* the assignment */
static char *tmp;

static const char assignment_yaml[] =
    "name: template-fresh\n"
    "mode: runner\n"
    "image: %s\n"
    "submission:\n"
    "  files: [\"*.py\"]\n"
    "  max_bytes: 65536\n"
    "tests_dir: tests\n"
    "test:\n"
    "  run: [python3, -m, pytest, -q, -s, -p, \"no:cacheprovider\", \"--junitxml={report}\", "
    "test_hidden.py]\n"
    "  limits: {cpu_s: 20, wall_s: 60, memory_mb: 256}\n"
    "ok_exit: [0, 1]\n"
    "report:\n"
    "  format: junit\n"
    "tests:\n"
    "  - {name: test_answer, points: 1}\n"
    "  - {name: test_fresh, points: 1}\n";

/* The harness prints what must differ between gradings; a marker in /tmp
 * would be seen by a later grading that was not fresh. */
static const char hidden_test[] =
    "import os, random, time\n"
    "import solution\n"
    "\n"
    "def test_answer():\n"
    "    assert solution.answer() == 42\n"
    "\n"
    "def test_fresh():\n"
    "    seen = os.path.exists('/tmp/harness-was-here')\n"
    "    open('/tmp/harness-was-here', 'w').close()\n"
    "    print('FRESH %r %s %d %s' % (random.random(), os.urandom(8).hex(), int(time.time()),\n"
    "                                 seen))\n"
    "    assert not seen\n";

static int setup(void **state)
{
	(void)state;
	char why[512], yaml[1024];

	harness_require_root("the microVM");
	if (harness_vm_image(IMAGES_DIR "/small.yaml", "small", image_pin, sizeof(image_pin), why,
			     sizeof(why)) < 0) {
		harness_require(false, "the microVM", why);
		return 0;
	}
	tmp = harness_tmpdir();
	assert_int_equal(chmod(tmp, 0755), 0);
	if (asprintf(&adir, "%s/assignment", tmp) < 0)
		return -1;
	static const char *const dirs[] = {"assignment", "assignment/tests", "right", "shadow"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		char d[PATH_MAX];
		harness_path_join(d, tmp, dirs[i]);
		assert_int_equal(mkdir(d, 0755), 0);
	}
	snprintf(yaml, sizeof(yaml), assignment_yaml, image_pin);
	harness_write_text(adir, "assignment.yaml", yaml);
	/* Tests of their own: this run builds its template (and removes it). */
	char text[sizeof(hidden_test) + 64];
	snprintf(text, sizeof(text), "%s# run %lld.%d\n", hidden_test, (long long)time(NULL),
		 (int)getpid());
	harness_write_text(adir, "tests/test_hidden.py", text);
	harness_write_text(tmp, "right/solution.py", "def answer():\n    return 42\n");
	/* Wrong, and brings its own "hidden test" that passes everything. */
	harness_write_text(tmp, "shadow/solution.py", "def answer():\n    return 0\n");
	harness_write_text(tmp, "shadow/test_hidden.py",
			   "def test_answer():\n    pass\n\ndef test_fresh():\n    pass\n");
	return 0;
}

/* The templates this run made: removed at the end (~100 MB each). */
static char made[8][65];
static size_t n_made;

static void remember(const char *key)
{
	for (size_t i = 0; i < n_made; i++)
		if (strcmp(made[i], key) == 0)
			return;
	if (n_made < sizeof(made) / sizeof(made[0]))
		snprintf(made[n_made++], sizeof(made[0]), "%s", key);
}

static int teardown(void **state)
{
	(void)state;
	for (size_t i = 0; i < n_made; i++) {
		static const char *const ext[] = {".state", ".state.ram", ".json", ".lock",
						  ".failed"};
		for (size_t j = 0; j < sizeof(ext) / sizeof(ext[0]); j++) {
			char path[PATH_MAX];
			snprintf(path, sizeof(path), "%s/vm/snapshots/%.40s%s", harness_state_dir(),
				 made[i], ext[j]);
			unlink(path);
		}
	}
	if (tmp)
		harness_rm_tree(tmp);
	free(tmp);
	free(adir);
	return 0;
}

struct graded {
	double score;
	bool templated;
	char key[65];
	char fresh[256]; /* the FRESH line the harness printed, or "" */
};

static void grade(const char *sub, char *const *env, struct graded *g)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", tmp, sub);
	char *args[] = {"grade", "--json", "--isolation", "vm", adir, path, NULL};
	struct proc_out o;
	harness_run(&o, env, 900, args);
	if (!o.json)
		fail_msg("%s: no JSON result; exit %d; stderr: %s", sub, o.exit_status, o.err);
	if (strcmp(jstr(&o, "status"), "graded") != 0)
		fail_msg("%s: status %s (%s)", sub, jstr(&o, "status"),
			 json_string_value(json_object_get(o.json, "reason")));
	memset(g, 0, sizeof(*g));
	g->score = json_number_value(json_object_get(o.json, "score"));
	json_t *snap = json_object_get(o.json, "snapshot");
	g->templated = json_is_true(json_object_get(snap, "template"));
	const char *key = json_string_value(json_object_get(snap, "key"));
	snprintf(g->key, sizeof(g->key), "%s", key ? key : "");
	if (g->templated)
		remember(g->key);
	json_t *steps = json_object_get(o.json, "steps"), *st;
	size_t i;
	json_array_foreach(steps, i, st)
	{
		const char *out = json_string_value(json_object_get(st, "stdout"));
		const char *f = out ? strstr(out, "FRESH ") : NULL;
		if (f)
			snprintf(g->fresh, sizeof(g->fresh), "%.*s", (int)strcspn(f, "\n"), f);
	}
	print_message("[  GRADED  ] %s: %g, template %s %.12s, %s\n", sub, g->score,
		      g->templated ? "yes" : "no", g->key, g->fresh);
	proc_out_free(&o);
	harness_assert_clean();
}

/* The FRESH line's fields: random.random(), urandom hex, time, seen. */
static void fresh_fields(const struct graded *g, char *rnd, char *urnd, long long *t, char *seen)
{
	if (sscanf(g->fresh, "FRESH %63s %63s %lld %15s", rnd, urnd, t, seen) != 4)
		fail_msg("the harness printed no FRESH line: '%s'", g->fresh);
}

static void test_gradings_are_fresh_and_templated(void **state)
{
	(void)state;
	struct graded g[3];

	grade("right", NULL, &g[0]); /* builds the template if need be */
	grade("right", NULL, &g[1]);
	grade("right", NULL, &g[2]);
	for (int i = 0; i < 3; i++) {
		assert_true(g[i].templated);
		assert_string_equal(g[i].key, g[0].key);
		assert_true(g[i].score == 2.0);
	}
	char r[3][64], u[3][64], seen[16];
	long long t;
	for (int i = 0; i < 3; i++) {
		fresh_fields(&g[i], r[i], u[i], &t, seen);
		assert_string_equal(seen, "False");
		/* The guest's clock is the host's, not the template's. */
		long long now = (long long)time(NULL);
		if (t < now - 120 || t > now + 5)
			fail_msg("grading %d: the guest's clock says %lld, the host's %lld", i, t,
				 now);
	}
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++) {
			if (strcmp(r[i], r[j]) == 0)
				fail_msg("gradings %d and %d drew the same random.random() %s", i,
					 j, r[i]);
			if (strcmp(u[i], u[j]) == 0)
				fail_msg("gradings %d and %d read the same urandom bytes %s", i, j,
					 u[i]);
		}
}

static void test_submission_cannot_replace_a_hidden_test(void **state)
{
	(void)state;
	struct graded g;

	grade("shadow", NULL, &g);
	assert_true(g.templated);
	/* Its own test_hidden.py would pass both; the hidden one fails one. */
	assert_true(g.score == 1.0);
}

static void test_same_verdicts_without_template(void **state)
{
	(void)state;
	struct graded g;
	char *env[] = {"PROCTOR_NO_TEMPLATE=1", NULL};

	grade("right", env, &g);
	assert_false(g.templated);
	assert_true(g.score == 2.0);
	grade("shadow", env, &g);
	assert_false(g.templated);
	assert_true(g.score == 1.0);
}

/* The template files of `key` in the state directory's snapshots. */
static bool template_stored(const char *key)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/vm/snapshots/%.40s.state", harness_state_dir(), key);
	return access(path, F_OK) == 0;
}

static void test_changed_tests_make_a_new_template(void **state)
{
	(void)state;
	struct graded before, after;
	char text[sizeof(hidden_test) + 128];

	grade("right", NULL, &before);
	assert_true(before.templated);
	assert_true(template_stored(before.key));
	char path[PATH_MAX];
	harness_path_join(path, adir, "tests/test_hidden.py");
	char *old = harness_read(path, NULL);
	snprintf(text, sizeof(text), "%s# changed\n", old);
	free(old);
	harness_write_text(adir, "tests/test_hidden.py", text);
	grade("right", NULL, &after);
	assert_true(after.templated);
	assert_true(after.score == 2.0);
	assert_string_not_equal(before.key, after.key);
	assert_true(template_stored(after.key));
	/* One template per assignment and machine: the old one is gone. */
	assert_false(template_stored(before.key));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_gradings_are_fresh_and_templated),
	    cmocka_unit_test(test_submission_cannot_replace_a_hidden_test),
	    cmocka_unit_test(test_same_verdicts_without_template),
	    cmocka_unit_test(test_changed_tests_make_a_new_template),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
