/* Integration tests: the grader's own attack surface (a submission must not make itself ungradable). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
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

/*
 * An assignment whose test step runs the submission's own attack.sh with
 * the report path (the runner stands in for any runner that imports the
 * student's code): a report of `format`, one declared test.
 */
static char *make_assignment(const char *tmp, const char *attack, const char *format)
{
	char *dir, sub[PATH_MAX], yaml[1024];
	assert_int_equal(chmod(tmp, 0755), 0);
	if (asprintf(&dir, "%s/assignment", tmp) < 0)
		fail_msg("out of memory");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(yaml, sizeof yaml,
		 "name: surface\n"
		 "mode: runner\n"
		 "submission:\n"
		 "  files: [attack.sh]\n"
		 "  required: [attack.sh]\n"
		 "test:\n"
		 "  run: [sh, attack.sh, \"{report}\"]\n"
		 "  limits: {cpu_s: 5, wall_s: 10}\n"
		 "ok_exit: [0, 1]\n"
		 "report:\n"
		 "  format: %s\n"
		 "tests:\n"
		 "  - {name: only, points: 1}\n",
		 format);
	harness_write_text(dir, "assignment.yaml", yaml);
	snprintf(sub, sizeof sub, "%s/submission", tmp);
	assert_int_equal(mkdir(sub, 0755), 0);
	harness_write_text(sub, "attack.sh", attack);
	return dir;
}

/*
 * The report path turned into a directory tree whose names are raw bytes
 * (\xff\xfe, controls, an escape sequence) and valid UTF-8 long enough to
 * be cut mid-character: the result document is still written, its reason
 * valid UTF-8, the verdict the student's (no credit), never Proctor's
 * "error".
 */
static void test_report_dir_with_odd_names_still_gets_a_result(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), sub[PATH_MAX];
	/* 1 + 127 two-byte characters = 255 bytes: any cut at an even offset
	 * from the start of a message splits one. */
	char *dir = make_assignment(
		tmp, "r=\"$1\"\n"
		     "mkdir -p \"$r\" && cd \"$r\" || exit 0\n"
		     "mkdir \"$(printf 'a\\033[2J\\r\\n')\" \"$(printf '\\377\\376')\"\n"
		     "cd \"$(printf '\\377\\376')\" || exit 0\n"
		     /* Deeper than PATH_MAX, so copying it out fails quoting the path. */
		     "long=a; i=0; while [ $i -lt 127 ]; do long=\"${long}\303\251\"; i=$((i+1)); done\n"
		     "d=0; while [ $d -lt 20 ]; do mkdir \"$long\" && cd \"$long\" || break; d=$((d+1)); done\n"
		     ": > \"$(printf 'x\\377y')\"\n"
		     "exit 0\n",
		"tap");
	snprintf(sub, sizeof sub, "%s/submission", tmp);
	for (int view = 0; view < 2; view++) {
		struct proc_out o;
		char *args[] = {"grade", "--json", "--view", view ? "student" : "instructor", dir, sub,
				NULL};
		harness_run(&o, NULL, 120, args);
		if (o.exit_status != 0 || !o.json)
			fail_msg("grade: exit %d, no result document\nstdout: %.2000s\nstderr: %.2000s",
				 o.exit_status, o.out, o.err);
		const char *st = jstr(&o, "status");
		if (strcmp(st, "crashed") && strcmp(st, "rejected"))
			fail_msg("verdict %s, want the student's crashed (report not a regular file)", st);
		json_t *reason = json_object_get(o.json, "reason");
		if (json_is_string(reason))
			assert_true(harness_valid_utf8(json_string_value(reason)));
		assert_true(harness_valid_utf8(o.out));
		proc_out_free(&o);
	}
	/* The text summary too: a result, on the terminal, without raw controls. */
	struct proc_out o;
	char *args[] = {"grade", dir, sub, NULL};
	harness_run(&o, NULL, 120, args);
	assert_int_equal(o.exit_status, 0);
	assert_null(strchr(o.out, '\033'));
	proc_out_free(&o);
	free(dir);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/* ---- the report helper's cost ---- */

#define SLOT_UID_BASE 1600000000ull
#define SLOT_UIDS     256

static bool cgroup_is_v1(void)
{
	return access("/sys/fs/cgroup/cpuacct/cgroup.procs", F_OK) == 0;
}

/* v2: the group Proctor manages holds "proctor"; at the root, or the
 * delegated group this process was started in (less "/supervisor", where
 * Proctor moves the processes it finds there). */
static void v2_proctor_dir(char *buf, size_t len)
{
	char *text = harness_slurp("/proc/self/cgroup", 4096, NULL), *p;

	snprintf(buf, len, "/sys/fs/cgroup/proctor");
	if (access(buf, F_OK) == 0 || !text || !(p = strstr(text, "0::")))
		goto out;
	p += 3;
	p[strcspn(p, "\n")] = '\0';
	size_t n = strlen(p);
	if (n >= 11 && strcmp(p + n - 11, "/supervisor") == 0)
		p[n - 11] = '\0';
	snprintf(buf, len, "/sys/fs/cgroup%s/proctor", strcmp(p, "/") == 0 ? "" : p);
out:
	free(text);
}

/* The file `name` of the helper group of `uid` in `hierarchy` (v1; NULL on v2). */
static void helper_file(char *buf, size_t len, const char *hierarchy, unsigned long long uid,
			const char *name)
{
	char dir[PATH_MAX];

	if (hierarchy)
		snprintf(dir, sizeof dir, "/sys/fs/cgroup/%s/proctor", hierarchy);
	else
		v2_proctor_dir(dir, sizeof dir);
	snprintf(buf, len, "%s/helper%llu/%s", dir, uid, name);
}

/* A number from a cgroup file: the whole file, or the value after `key `. */
static bool cgroup_number(const char *path, const char *key, unsigned long long *ret)
{
	char *text = harness_slurp(path, 65536, NULL), *p = text;
	long v;
	bool ok = false;

	if (!text)
		return false;
	if (key) {
		size_t k = strlen(key);
		for (p = text; p && !(strncmp(p, key, k) == 0 && p[k] == ' ');
		     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
			;
		if (p)
			p += strlen(key) + 1;
	}
	if (p) {
		p[strcspn(p, "\n ")] = '\0';
		ok = harness_parse_int(p, 0, LONG_MAX, &v);
		*ret = (unsigned long long)v;
	}
	free(text);
	return ok;
}

/* CPU time charged to the helper group of `uid` so far, in ns (0: none yet). */
static unsigned long long helper_cpu_ns(unsigned long long uid)
{
	char path[PATH_MAX];
	unsigned long long v = 0;

	if (cgroup_is_v1()) {
		helper_file(path, sizeof path, "cpuacct", uid, "cpuacct.usage");
		return cgroup_number(path, NULL, &v) ? v : 0;
	}
	helper_file(path, sizeof path, NULL, uid, "cpu.stat");
	return cgroup_number(path, "usage_usec", &v) ? v * 1000 : 0;
}

/* The limits of the helper group of `uid`: a CPU quota (where the host has
 * the cpu controller), 1 GiB of memory, one process. */
static void assert_helper_limits(unsigned long long uid)
{
	char path[PATH_MAX];
	unsigned long long quota = 0, period = 0, mem = 0, pids = 0;

	if (cgroup_is_v1()) {
		helper_file(path, sizeof path, "cpu", uid, "cpu.cfs_quota_us");
		assert_true(cgroup_number(path, NULL, &quota));
		helper_file(path, sizeof path, "cpu", uid, "cpu.cfs_period_us");
		assert_true(cgroup_number(path, NULL, &period));
		helper_file(path, sizeof path, "memory", uid, "memory.limit_in_bytes");
		assert_true(cgroup_number(path, NULL, &mem));
		helper_file(path, sizeof path, "pids", uid, "pids.max");
		assert_true(cgroup_number(path, NULL, &pids));
	} else {
		char *cpu_max;
		helper_file(path, sizeof path, NULL, uid, "cpu.max");
		cpu_max = harness_slurp(path, 256, NULL);
		if (!cpu_max) {
			print_message("no cpu controller delegated: the helper's CPU is accounted, "
				      "not limited\n");
			quota = 1;
			period = 1;
		} else if (sscanf(cpu_max, "%llu %llu", &quota, &period) != 2) {
			fail_msg("%s: '%s', want a quota", path, cpu_max);
		}
		free(cpu_max);
		helper_file(path, sizeof path, NULL, uid, "memory.max");
		assert_true(cgroup_number(path, NULL, &mem));
		helper_file(path, sizeof path, NULL, uid, "pids.max");
		assert_true(cgroup_number(path, NULL, &pids));
	}
	if (quota == 0 || quota > period)
		fail_msg("the helper's CPU quota is %llu us per %llu us, want under one CPU", quota,
			 period);
	assert_int_equal(mem, 1ull << 30);
	assert_int_equal(pids, 1);
}

/* The stdout of the result's step `name` (instructor view). */
static const char *step_stdout(const struct proc_out *o, const char *name)
{
	size_t i;
	json_t *step;

	json_array_foreach(json_object_get(o->json, "steps"), i, step)
	{
		if (strcmp(json_string_value(json_object_get(step, "name")), name) == 0)
			return json_string_value(json_object_get(step, "stdout"));
	}
	fail_msg("no step '%s' in the result", name);
	return NULL;
}

/*
 * The report: one <testcase> with 700,000 attributes (7.4 MB,
 * under the 8 MiB cap).  libxml2 checked them pairwise, a minute of host
 * CPU outside any sandbox, then the 60 s helper timeout.  Now the prescan
 * refuses it at the 257th attribute: `crashed` (the student's verdict, no
 * credit), first attempt, well before the helper's timeout, and the
 * helper's CPU is charged to its own group, which has a quota.
 */
static void
test_junit_with_700000_attributes_is_refused_quickly_on_the_students_account(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), sub[PATH_MAX];
	char *dir =
	    make_assignment(tmp,
			    "awk 'BEGIN { printf \"<testsuite><testcase name=\\\"only\\\"\";"
			    " for (i = 0; i < 700000; i++) printf \" a%d=\\\"\\\"\", i;"
			    " printf \"/></testsuite>\" }' > \"$1\"\n"
			    "id -u\n"
			    "exit 0\n",
			    "junit");
	unsigned long long before[SLOT_UIDS];
	for (size_t i = 0; i < SLOT_UIDS; i++)
		before[i] = helper_cpu_ns(SLOT_UID_BASE + i);

	snprintf(sub, sizeof sub, "%s/submission", tmp);
	struct proc_out o;
	char *args[] = {"grade", "--json", dir, sub, NULL};
	double t0 = harness_now_s();
	harness_run(&o, NULL, 180, args);
	double took = harness_now_s() - t0;
	if (o.exit_status != 0 || !o.json)
		fail_msg("grade: exit %d, no result document\nstdout: %.2000s\nstderr: %.2000s",
			 o.exit_status, o.out, o.err);
	const char *st = jstr(&o, "status"), *reason = jstr(&o, "reason");
	if (strcmp(st, "crashed") != 0 || !reason || !strstr(reason, "more than 256 attributes"))
		fail_msg("verdict %s (%s), want crashed: more than 256 attributes", st,
			 reason ? reason : "no reason");
	assert_int_equal(jint(&o, "attempts"), 1);
	print_message("graded in %.1f s: %s\n", took, reason);
	/* The helper timeout is 60 s: the old parse used all of it. */
	if (took >= 45)
		fail_msg("grading took %.1f s", took);

	const char *out = step_stdout(&o, "test");
	long uid;
	char uid_text[32];
	snprintf(uid_text, sizeof uid_text, "%s", out ? out : "");
	if (!harness_parse_int(harness_trim(uid_text), (long)SLOT_UID_BASE,
			       (long)SLOT_UID_BASE + SLOT_UIDS - 1, &uid))
		fail_msg("the test step printed '%s', want its slot uid", out ? out : "");
	unsigned long long after = helper_cpu_ns((unsigned long long)uid);
	print_message("helper%ld: %.1f ms of CPU charged during the grading\n", uid,
		      (double)(after - before[uid - (long)SLOT_UID_BASE]) / 1e6);
	assert_true(after > before[uid - (long)SLOT_UID_BASE]);
	assert_helper_limits((unsigned long long)uid);
	proc_out_free(&o);
	free(dir);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/*
 * libxml2's message quoting a long multibyte name (an end tag that does
 * not match), once cut at 200 bytes mid-character: the helper could not
 * encode its own answer, died, and the submission got three attempts and
 * `crashed` for Proctor's failure.  Now it is one attempt, the report is
 * unusable, and the reason is valid UTF-8.
 */
static void test_junit_error_quoting_a_multibyte_name_is_one_attempt(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), sub[PATH_MAX];
	char *dir = make_assignment(tmp,
				    "e=$(printf '\\303\\251'); n=a; i=0\n"
				    "while [ $i -lt 120 ]; do n=\"$n$e\"; i=$((i+1)); done\n"
				    "printf '<testsuite><%s></b></testsuite>' \"$n\" > \"$1\"\n"
				    "exit 0\n",
				    "junit");
	snprintf(sub, sizeof sub, "%s/submission", tmp);
	struct proc_out o;
	char *args[] = {"grade", "--json", dir, sub, NULL};
	harness_run(&o, NULL, 180, args);
	if (o.exit_status != 0 || !o.json)
		fail_msg("grade: exit %d, no result document\nstdout: %.2000s\nstderr: %.2000s",
			 o.exit_status, o.out, o.err);
	const char *st = jstr(&o, "status"), *reason = jstr(&o, "reason");
	if (strcmp(st, "crashed") != 0 || !reason || !strstr(reason, "mismatch"))
		fail_msg("verdict %s (%s), want crashed: tag mismatch", st,
			 reason ? reason : "no reason");
	assert_int_equal(jint(&o, "attempts"), 1);
	assert_true(harness_valid_utf8(reason));
	proc_out_free(&o);
	free(dir);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/* ---- the pytest guard: what the program writes never steers the runner ---- */

/* One file of a tree the tests make: a path relative to the tree's root. */
struct guard_file {
	const char *path;
	const char *text;
};

#define GUARD_WRONG "def add(a, b):\n    return 0\n\n\ndef mul(a, b):\n    return 0\n"
#define GUARD_RIGHT "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"

/* Steals the one-time key if it runs before the guard has read it, and
 * signs an all-pass summary at exit, after the guard's own. */
#define GUARD_STEAL                                                                                \
	"import atexit, hashlib, hmac, json, os\n"                                                 \
	"_o = os.environ.get('PROCTOR_GUARD_OUT', '')\n"                                           \
	"try:\n"                                                                                   \
	"    _key = open(os.environ.get('PROCTOR_GUARD_KEY_FILE', ''), 'rb').read()\n"             \
	"except OSError:\n"                                                                        \
	"    _key = b''\n"                                                                         \
	"def _sign():\n"                                                                           \
	"    if not _key or not _o:\n"                                                             \
	"        return\n"                                                                         \
	"    t = [{'name': n, 'status': 'passed', 'output': ''}\n"                                 \
	"         for n in ('test_add', 'test_mul', 'check_mul')]\n"                               \
	"    body = json.dumps({'tests': t}, sort_keys=True).encode()\n"                           \
	"    open(_o, 'wb').write(body)\n"                                                         \
	"    open(_o + '.sig', 'w').write(hmac.new(_key, body, hashlib.sha256).hexdigest())\n"     \
	"atexit.register(_sign)\n"

/* Makes every test report "passed" if it ever runs in the test process. */
#define GUARD_FORCE_PASS                                                                           \
	"import _pytest.reports\n"                                                                 \
	"_orig = _pytest.reports.TestReport.from_item_and_call.__func__\n"                         \
	"def _forced(cls, item, call):\n"                                                          \
	"    r = _orig(cls, item, call)\n"                                                         \
	"    r.outcome = 'passed'\n"                                                               \
	"    r.longrepr = None\n"                                                                  \
	"    return r\n"                                                                           \
	"_pytest.reports.TestReport.from_item_and_call = classmethod(_forced)\n"

/* A conftest.py whose hook turns every report into a pass. */
#define GUARD_CONFTEST                                                                             \
	"import pytest\n"                                                                          \
	"@pytest.hookimpl(hookwrapper=True)\n"                                                     \
	"def pytest_runtest_makereport(item, call):\n"                                             \
	"    out = yield\n"                                                                        \
	"    out.get_result().outcome = 'passed'\n"                                                \
	"    out.get_result().longrepr = None\n"

/* The solution's own tests, named like the hidden ones, for configuration
 * that collects solution.py and deselects the hidden file. */
#define GUARD_OWN_TESTS "\n\ndef test_add():\n    pass\n\n\ndef test_mul():\n    pass\n"

static void guard_write_tree(const char *root, const struct guard_file *files)
{
	for (const struct guard_file *f = files; f->path; f++) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", root, f->path);
		for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
			*s = '\0';
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				fail_msg("mkdir %s: %s", path, strerror(errno));
			*s = '/';
		}
		char *slash = strrchr(path, '/');
		*slash = '\0';
		harness_write_text(path, slash + 1, f->text);
	}
}

/*
 * A guarded pytest assignment in tmp/<name>: the hidden tests `hidden`,
 * test.run `run` (a YAML list), the manifest test_add and `second`.  Every
 * submission file up to seven levels deep is taken, and the build runs the
 * submission's build.sh when there is one, so the program can put a file
 * anywhere in /work or $HOME, either way.
 */
static char *guard_assignment(const char *tmp, const char *name, const struct guard_file *hidden,
			      const char *run, const char *second)
{
	char *dir, tests[PATH_MAX], yaml[2048];
	assert_int_equal(chmod(tmp, 0755), 0);
	if (asprintf(&dir, "%s/%s", tmp, name) < 0)
		fail_msg("out of memory");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(tests, sizeof tests, "%s/tests", dir);
	assert_int_equal(mkdir(tests, 0755), 0);
	guard_write_tree(tests, hidden);
	snprintf(
	    yaml, sizeof yaml,
	    "name: %s\n"
	    "submission:\n"
	    "  files: [\"*\", \"*/*\", \"*/*/*\", \"*/*/*/*\", \"*/*/*/*/*\", \"*/*/*/*/*/*\",\n"
	    "          \"*/*/*/*/*/*/*\"]\n"
	    "  required: [solution.py]\n"
	    "tests_dir: tests\n"
	    "build:\n"
	    "  run: [sh, -c, \"if [ -f build.sh ]; then sh build.sh; fi\"]\n"
	    "test:\n"
	    "  run: %s\n"
	    "  limits: {cpu_s: 20, wall_s: 40}\n"
	    "ok_exit: [0, 1]\n"
	    "report:\n"
	    "  format: junit\n"
	    "  pytest_guard: true\n"
	    "tests:\n"
	    "  - {name: test_add, points: 1}\n"
	    "  - {name: %s, points: 1}\n",
	    name, run, second);
	harness_write_text(dir, "assignment.yaml", yaml);
	return dir;
}

/* The flat layout: test_hidden.py next to solution.py, named in test.run. */
static char *guard_flat_assignment(const char *tmp)
{
	static const struct guard_file hidden[] = {
	    {"test_hidden.py", "import solution\n\n\n"
			       "def test_add():\n    assert solution.add(2, 3) == 5\n\n\n"
			       "def test_mul():\n    assert solution.mul(2, 3) == 6\n"},
	    {NULL, NULL},
	};
	return guard_assignment(
	    tmp, "guard-flat", hidden,
	    "[python3, -m, pytest, -q, \"--junitxml={report}\", test_hidden.py]", "test_mul");
}

/* The instructor's own pytest.ini (it collects check_* functions),
 * conftest.py (a fixture) and helper module, in a directory test.run
 * names, which pytest searches; the tests import the submission from the
 * working directory. */
static char *guard_nested_assignment(const char *tmp)
{
	static const struct guard_file hidden[] = {
	    {"pytest.ini", "[pytest]\npython_functions = test_* check_*\n"},
	    {"checks/conftest.py",
	     "import pytest\n\n\n@pytest.fixture\ndef pair():\n    return (2, 3)\n"},
	    {"checks/hidden_data.py", "EXPECTED = {'add': 5, 'mul': 6}\n"},
	    {"checks/test_more.py",
	     "import solution\nfrom hidden_data import EXPECTED\n\n\n"
	     "def test_add(pair):\n    assert solution.add(*pair) == EXPECTED['add']\n\n\n"
	     "def check_mul(pair):\n    assert solution.mul(*pair) == EXPECTED['mul']\n"},
	    {NULL, NULL},
	};
	return guard_assignment(tmp, "guard-nested", hidden, "[python3, -m, pytest, -q, checks]",
				"check_mul");
}

/* The result's step `name`, stdout and stderr together ("" if absent). */
static char *guard_step_output(const struct proc_out *o, const char *name)
{
	size_t i;
	json_t *step;
	char *text = NULL;

	json_array_foreach(json_object_get(o->json, "steps"), i, step)
	{
		if (strcmp(json_string_value(json_object_get(step, "name")), name) == 0 &&
		    asprintf(&text, "%s\n%s", json_string_value(json_object_get(step, "stdout")),
			     json_string_value(json_object_get(step, "stderr"))) < 0)
			fail_msg("out of memory");
	}
	return text ? text : strdup("");
}

/*
 * Grade the submission `files` (made in tmp/<name>) against `dir`: the
 * verdict must be `status` with `passed` declared tests passed (never
 * Proctor's `error`), and the test step's output must hold `needle` when
 * one is given.
 */
static void guard_expect(const char *dir, const char *tmp, const char *name,
			 const struct guard_file *files, const char *status, long long passed,
			 const char *needle)
{
	char sub[PATH_MAX];
	struct proc_out o;

	snprintf(sub, sizeof sub, "%s/%s", tmp, name);
	assert_int_equal(mkdir(sub, 0755), 0);
	guard_write_tree(sub, files);
	char *args[] = {"grade", "--json", (char *)dir, sub, NULL};
	harness_run(&o, NULL, 180, args);
	if (o.exit_status != 0 || !o.json)
		fail_msg("%s: grade exit %d, no result document\nstdout: %.2000s\nstderr: %.2000s",
			 name, o.exit_status, o.out, o.err);
	char *output = guard_step_output(&o, "test");
	const char *st = jstr(&o, "status");
	json_t *reason = json_object_get(o.json, "reason");
	print_message("%-28s %s, %lld passed%s%s\n", name, st, jint(&o, "passed"),
		      json_is_string(reason) ? ": " : "",
		      json_is_string(reason) ? json_string_value(reason) : "");
	if (strcmp(st, status) != 0 || jint(&o, "passed") != passed)
		fail_msg("%s: %s with %lld passed, want %s with %lld\ntest step: %.3000s", name, st,
			 jint(&o, "passed"), status, passed, output);
	if (needle && !strstr(output, needle))
		fail_msg("%s: the test step does not say '%s':\n%.3000s", name, needle, output);
	free(output);
	proc_out_free(&o);
}

/*
 * The attack: `python3 -m pytest` put the working directory on
 * sys.path ahead of PYTHONPATH, so a proctor_guard.py in /work, shipped
 * under a permissive allowlist or left by the build, was loaded instead
 * of Proctor's and signed an all-pass summary for wrong code.  Now the
 * real guard runs and the wrong code scores nothing.
 */
static void test_guard_is_never_a_proctor_guard_py_the_program_wrote(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir();
	char *dir = guard_flat_assignment(tmp);
	const struct guard_file shipped[] = {
	    {"solution.py", GUARD_WRONG}, {"proctor_guard.py", GUARD_STEAL}, {NULL, NULL}};
	const struct guard_file built[] = {{"solution.py", GUARD_WRONG},
					   {"payload.txt", GUARD_STEAL},
					   {"build.sh", "cp payload.txt proctor_guard.py\n"},
					   {NULL, NULL}};
	const struct guard_file right[] = {
	    {"solution.py", GUARD_RIGHT}, {"proctor_guard.py", GUARD_STEAL}, {NULL, NULL}};

	guard_expect(dir, tmp, "ships-proctor-guard", shipped, "graded", 0, NULL);
	guard_expect(dir, tmp, "builds-proctor-guard", built, "graded", 0, NULL);
	/* The same file beside right code changes nothing either. */
	guard_expect(dir, tmp, "right-with-proctor-guard", right, "graded", 2, NULL);
	free(dir);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/*
 * Python's start-up runs code before any plugin: a .pth in the user site
 * (HOME is /work), sitecustomize.py and usercustomize.py.  Left by the
 * build, or shipped, also where the guard's directory used to be
 * (/work/.proctor-guard, a fixed name the build could make first), none
 * of them runs: the key is never stolen.
 */
static void test_guard_runs_before_any_startup_file_the_program_wrote(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir();
	char *dir = guard_flat_assignment(tmp);
	const struct guard_file pth[] = {
	    {"solution.py", GUARD_WRONG},
	    {"payload.txt", GUARD_STEAL},
	    {"build.sh", "d=$(python3 -c 'import site; print(site.getusersitepackages())')\n"
			 "mkdir -p \"$d\" && cp payload.txt \"$d/zzsteal.py\" &&\n"
			 "echo 'import zzsteal' > \"$d/zz.pth\"\n"},
	    {NULL, NULL}};
	const struct guard_file custom[] = {
	    {"solution.py", GUARD_WRONG},
	    {"payload.txt", GUARD_STEAL},
	    {"build.sh",
	     "mkdir -p .proctor-guard && cp payload.txt .proctor-guard/sitecustomize.py\n"
	     "cp payload.txt sitecustomize.py && cp payload.txt usercustomize.py\n"},
	    {NULL, NULL}};
	const struct guard_file shipped[] = {{"solution.py", GUARD_WRONG},
					     {".proctor-guard/sitecustomize.py", GUARD_STEAL},
					     {"sitecustomize.py", GUARD_STEAL},
					     {"usercustomize.py", GUARD_STEAL},
					     {NULL, NULL}};

	guard_expect(dir, tmp, "builds-user-site-pth", pth, "graded", 0, NULL);
	guard_expect(dir, tmp, "builds-sitecustomize", custom, "graded", 0, NULL);
	guard_expect(dir, tmp, "ships-sitecustomize", shipped, "graded", 0, NULL);
	free(dir);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/*
 * pytest looks for its configuration in the directory of its arguments:
 * a pytest.ini, pyproject.toml, tox.ini or setup.cfg the build leaves
 * there could collect solution.py's own tests and deselect the hidden
 * file, which the real guard then signs.  Under the guard pytest reads
 * only the configuration Proctor gives it.
 */
static void test_guarded_pytest_reads_no_configuration_the_program_wrote(void **state)
{
	(void)state;
	static const struct {
		const char *name, *build;
	} cases[] = {
	    {"builds-pytest-ini",
	     "printf '[pytest]\\naddopts = solution.py -k \"not test_hidden\"\\n' > pytest.ini\n"},
	    {"builds-pyproject-toml", "printf '[tool.pytest.ini_options]\\naddopts = \"solution.py "
				      "-k \\\\\"not test_hidden\\\\\"\"\\n' > pyproject.toml\n"},
	    {"builds-tox-ini",
	     "printf '[pytest]\\naddopts = solution.py -k \"not test_hidden\"\\n' > tox.ini\n"},
	    {"builds-setup-cfg", "printf '[tool:pytest]\\naddopts = solution.py -k \"not "
				 "test_hidden\"\\n' > setup.cfg\n"},
	};
	char *tmp = harness_tmpdir();
	char *dir = guard_flat_assignment(tmp);

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct guard_file files[] = {{"solution.py", GUARD_WRONG GUARD_OWN_TESTS},
						   {"build.sh", cases[i].build},
						   {NULL, NULL}};
		guard_expect(dir, tmp, cases[i].name, files, "graded", 0, NULL);
	}
	/* A pytest.ini shipped beside right code is not read either. */
	const struct guard_file shipped[] = {
	    {"solution.py", GUARD_RIGHT},
	    {"pytest.ini", "[pytest]\naddopts = -p no:proctor_guard\n"},
	    {NULL, NULL}};
	guard_expect(dir, tmp, "ships-pytest-ini", shipped, "graded", 2, NULL);
	free(dir);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/* A conftest.py the program wrote, shipped or built, whose hook would
 * pass every test, is ignored (and the test step says so). */
static void test_guarded_pytest_ignores_a_conftest_py_the_program_wrote(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir();
	char *dir = guard_flat_assignment(tmp);
	const struct guard_file shipped[] = {
	    {"solution.py", GUARD_WRONG}, {"conftest.py", GUARD_CONFTEST}, {NULL, NULL}};
	const struct guard_file built[] = {{"solution.py", GUARD_WRONG},
					   {"payload.txt", GUARD_CONFTEST},
					   {"build.sh", "cp payload.txt conftest.py\n"},
					   {NULL, NULL}};

	guard_expect(dir, tmp, "ships-conftest", shipped, "graded", 0,
		     "proctor_guard: ignored /work/conftest.py");
	guard_expect(dir, tmp, "builds-conftest", built, "graded", 0,
		     "proctor_guard: ignored /work/conftest.py");
	free(dir);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/*
 * Bytecode caches are checked only against the source's mtime and size,
 * which the build can read: a __pycache__ it forges for the hidden file
 * (pytest's and Python's own names) would replace the hidden tests with
 * passing ones.  It is never read; nor does an __init__.py the build
 * leaves (it would make /work a package whose code pytest imports first)
 * run.
 */
static void test_guarded_pytest_runs_no_cache_or_init_the_build_left(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir();
	char *dir = guard_flat_assignment(tmp);
	const struct guard_file pyc[] = {
	    {"solution.py", GUARD_WRONG},
	    {"forge.py",
	     "import importlib.util, marshal, os, sys\n"
	     "from _pytest.assertion.rewrite import PYC_TAIL\n"
	     "st = os.stat('test_hidden.py')\n"
	     "co = compile('def test_add():\\n    pass\\ndef test_mul():\\n    pass\\n',\n"
	     "             os.path.abspath('test_hidden.py'), 'exec')\n"
	     "os.makedirs('__pycache__', exist_ok=True)\n"
	     "for tail in (PYC_TAIL, '.' + sys.implementation.cache_tag + '.pyc'):\n"
	     "    with open('__pycache__/test_hidden' + tail, 'wb') as f:\n"
	     "        f.write(importlib.util.MAGIC_NUMBER + bytes(4)\n"
	     "                + (int(st.st_mtime) & 0xFFFFFFFF).to_bytes(4, 'little')\n"
	     "                + (st.st_size & 0xFFFFFFFF).to_bytes(4, 'little'))\n"
	     "        f.write(marshal.dumps(co))\n"},
	    {"build.sh", "python3 forge.py\n"},
	    {NULL, NULL}};
	const struct guard_file init[] = {{"solution.py", GUARD_WRONG},
					  {"payload.txt", GUARD_FORCE_PASS},
					  {"build.sh", "cp payload.txt __init__.py\n"},
					  {NULL, NULL}};
	/* An innocent __init__.py and a module of the student's own still work. */
	const struct guard_file innocent[] = {{"solution.py", GUARD_RIGHT},
					      {"__init__.py", ""},
					      {"mine.py", "X = 1\n"},
					      {NULL, NULL}};

	guard_expect(dir, tmp, "builds-forged-pyc", pyc, "graded", 0, NULL);
	guard_expect(dir, tmp, "builds-init-py", init, "graded", 0, NULL);
	guard_expect(dir, tmp, "ships-innocent-init-py", innocent, "graded", 2, NULL);
	free(dir);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/*
 * A directory of the same name with an __init__.py comes before a module
 * file in Python's search, so a test_hidden/ package the program wrote
 * would be imported as the hidden tests (pytest's check of __file__ is
 * the package's to fake).  The import fails instead: the runner cannot
 * collect, `crashed`, nothing scored.
 */
static void test_guarded_pytest_never_imports_a_package_in_place_of_a_hidden_module(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir();
	char *dir = guard_flat_assignment(tmp);
	const struct guard_file shipped[] = {{"solution.py", GUARD_WRONG},
					     {"test_hidden/__init__.py",
					      "__file__ = '/work/test_hidden.py'\n"
					      "def test_add():\n    pass\n"
					      "def test_mul():\n    pass\n"},
					     {NULL, NULL}};

	guard_expect(dir, tmp, "ships-test-hidden-package", shipped, "crashed", 0,
		     "proctor_guard: import test_hidden would run /work/test_hidden/__init__.py");
	free(dir);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/*
 * The instructor's pytest.ini, conftest.py and helper module keep working
 * under the guard (right code scores everything, also with a package
 * marker and a module of its own), while the program's files among them
 * do not count: a conftest.py and a test file of its own in a directory
 * pytest searches are not collected, and a package shadowing the hidden
 * helper module or the hidden conftest.py fails the run.
 */
static void test_guarded_pytest_keeps_the_hidden_tests_own_config_and_only_theirs(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir();
	char *dir = guard_nested_assignment(tmp);
	const struct guard_file right[] = {{"solution.py", GUARD_RIGHT}, {NULL, NULL}};
	const struct guard_file wrong[] = {{"solution.py", GUARD_WRONG}, {NULL, NULL}};
	const struct guard_file innocent[] = {{"solution.py", GUARD_RIGHT},
					      {"__init__.py", ""},
					      {"mine.py", "X = 1\n"},
					      {NULL, NULL}};
	const struct guard_file own_tests[] = {
	    {"solution.py", GUARD_WRONG},
	    {"checks/sub/conftest.py", GUARD_CONFTEST},
	    {"checks/sub/test_fake.py",
	     GUARD_FORCE_PASS "def test_add():\n    pass\ndef check_mul():\n    pass\n"},
	    {NULL, NULL}};
	const struct guard_file data_pkg[] = {
	    {"solution.py", GUARD_WRONG},
	    {"checks/hidden_data/__init__.py", "EXPECTED = {'add': 0, 'mul': 0}\n"},
	    {NULL, NULL}};
	const struct guard_file conftest_pkg[] = {{"solution.py", GUARD_WRONG},
						  {"checks/conftest/__init__.py", GUARD_FORCE_PASS},
						  {NULL, NULL}};

	guard_expect(dir, tmp, "nested-right", right, "graded", 2, NULL);
	guard_expect(dir, tmp, "nested-wrong", wrong, "graded", 0, NULL);
	guard_expect(dir, tmp, "nested-innocent-init-py", innocent, "graded", 2, NULL);
	guard_expect(dir, tmp, "nested-ships-own-tests", own_tests, "graded", 0,
		     "proctor_guard: not collected: /work/checks/sub");
	guard_expect(dir, tmp, "nested-ships-data-package", data_pkg, "crashed", 0,
		     "instead of the hidden /work/checks/hidden_data.py");
	guard_expect(dir, tmp, "nested-ships-conftest-package", conftest_pkg, "crashed", 0,
		     "instead of the hidden /work/checks/conftest.py");
	free(dir);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_report_dir_with_odd_names_still_gets_a_result,
				   harness_setup_root),
	    cmocka_unit_test_setup(
		test_junit_with_700000_attributes_is_refused_quickly_on_the_students_account,
		harness_setup_root),
	    cmocka_unit_test_setup(test_junit_error_quoting_a_multibyte_name_is_one_attempt,
				   harness_setup_root),
	    cmocka_unit_test_setup(test_guard_is_never_a_proctor_guard_py_the_program_wrote,
				   harness_setup_root),
	    cmocka_unit_test_setup(test_guard_runs_before_any_startup_file_the_program_wrote,
				   harness_setup_root),
	    cmocka_unit_test_setup(test_guarded_pytest_reads_no_configuration_the_program_wrote,
				   harness_setup_root),
	    cmocka_unit_test_setup(test_guarded_pytest_ignores_a_conftest_py_the_program_wrote,
				   harness_setup_root),
	    cmocka_unit_test_setup(test_guarded_pytest_runs_no_cache_or_init_the_build_left,
				   harness_setup_root),
	    cmocka_unit_test_setup(
		test_guarded_pytest_never_imports_a_package_in_place_of_a_hidden_module,
		harness_setup_root),
	    cmocka_unit_test_setup(
		test_guarded_pytest_keeps_the_hidden_tests_own_config_and_only_theirs,
		harness_setup_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
