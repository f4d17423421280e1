/* Integration tests of the jail: every limit trips with its verdict, every escape fails. */

/*
 * Each test runs the real `proctor run --json` with the static probe put
 * into the sandbox (`--put $PROBE:probe -- ./probe MODE ...`), checks the
 * verdict fields against docs/cli-contract.md, and ends by checking that no
 * process, mount or cgroup of a sandbox is left (harness_assert_clean).
 * A test never passes on silence: it first finds the line the probe prints
 * once it has done its hostile thing ("result ..."), and fails when the
 * line is missing.
 *
 * The jail needs root.  Without it the tests skip, unless
 * PROCTOR_MUST_WORK=1 says the host is known to support them.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define MIB (1024LL * 1024LL)
#define KIB 1024LL

/* Slot uids, as in the contract: 1600000000 + slot, slot < 256. */
#define SLOT_UID_MIN 1600000000u
#define SLOT_UID_END (1600000000u + 256)

/* How long one proctor invocation may take before the harness kills it.
 * Every run below has a --wall well inside this. */
#define RUN_TIMEOUT_S 120

/* NULL-terminated string lists for options and probe arguments. */
#define L(...)	((const char *const[]){__VA_ARGS__, NULL})
#define NO_OPTS ((const char *const[]){NULL})

/* ---- running proctor ---------------------------------------------------- */

/* `proctor run --json OPTS --put $PROBE:probe -- ./probe PARGS`, unchecked. */
static void run_probe_raw(struct proc_out *o, char *const *env, const char *const *opts,
			  const char *const *pargs)
{
	const char *argv[128];
	size_t n = 0;
	char put[PATH_MAX + 16];
	int len = snprintf(put, sizeof put, "%s:probe", harness_probe());
	assert_true(len > 0 && (size_t)len < sizeof put);

	argv[n++] = "run";
	argv[n++] = "--json";
	for (size_t i = 0; opts[i]; i++) {
		assert_true(n < 100);
		argv[n++] = opts[i];
	}
	argv[n++] = "--put";
	argv[n++] = put;
	argv[n++] = "--";
	argv[n++] = "./probe";
	for (size_t i = 0; pargs[i]; i++) {
		assert_true(n < 126);
		argv[n++] = pargs[i];
	}
	argv[n] = NULL;
	harness_run(o, env, RUN_TIMEOUT_S, (char *const *)argv);
}

static const char *const verdicts[] = {"ok",	  "nonzero_exit", "signaled",
				       "timeout", "memory_limit", "error"};

/* The exit status the contract gives proctor for a result: 0 for ok when no
 * limit but output was hit, 3 for Proctor's own failure, else 1. */
static int expected_exit(const struct proc_out *o, const char *status)
{
	if (strcmp(status, "error") == 0)
		return 3;
	if (strcmp(status, "ok") != 0)
		return 1;
	json_t *hits = json_object_get(o->json, "limits_hit");
	size_t i;
	json_t *v;
	json_array_foreach(hits, i, v)
	{
		if (!json_is_string(v) || strcmp(json_string_value(v), "output") != 0)
			return 1;
	}
	return 0;
}

/* A well-formed schema-1 result whose exit status matches its status;
 * a status `error` is Proctor's fault and fails every test that gets one. */
static void check_result(const struct proc_out *o)
{
	if (!o->json) {
		fail_msg("proctor printed no JSON (exit %d)\nstdout: %.3000s\nstderr: %.3000s",
			 o->exit_status, o->out, o->err);
	}
	assert_int_equal(jint(o, "schema_version"), 1);
	const char *status = jstr(o, "status");
	if (!status) {
		fail_msg("status is null: %.3000s", o->out);
	}
	bool known = false;
	for (size_t i = 0; i < sizeof verdicts / sizeof verdicts[0]; i++)
		known = known || strcmp(status, verdicts[i]) == 0;
	if (!known) {
		fail_msg("unknown status '%s'", status);
	}
	if (strcmp(status, "error") == 0) {
		fail_msg("proctor failed (status error): %s\nstderr: %.3000s",
			 jstr(o, "message") ? jstr(o, "message") : "(no message)", o->err);
	}
	/* Every field is there with its type. */
	(void)jlimit_hit(o, "cpu");
	if (o->exit_status != expected_exit(o, status)) {
		fail_msg("status %s but proctor exited %d (want %d)\nstdout: %.3000s", status,
			 o->exit_status, expected_exit(o, status), o->out);
	}
	(void)jstr(o, "stdout");
	(void)jstr(o, "stderr");
	(void)jbool(o, "stdout_truncated");
	(void)jbool(o, "stderr_truncated");
	assert_true(jint(o, "cpu_ms") >= 0);
	assert_true(jint(o, "wall_ms") >= 0);
	assert_true(jint(o, "peak_memory_kib") >= 0);
	assert_true(jint(o, "peak_pids") >= 0);
	assert_true(jint(o, "stdout_bytes") >= 0);
	assert_true(jint(o, "stderr_bytes") >= 0);
	(void)jint(o, "exit_code");
	(void)jint(o, "signal");
	json_t *m = json_object_get(o->json, "message");
	if (!m || !(json_is_null(m) || json_is_string(m))) {
		fail_msg("message must be a string or null: %.3000s", o->out);
	}
}

/* Run the probe and check the result is well formed. */
static void run_probe_env(struct proc_out *o, char *const *env, const char *const *opts,
			  const char *const *pargs)
{
	run_probe_raw(o, env, opts, pargs);
	check_result(o);
}

static void run_probe(struct proc_out *o, const char *const *opts, const char *const *pargs)
{
	run_probe_env(o, NULL, opts, pargs);
}

/* ---- reading the verdict and the probe's output ------------------------- */

static void expect_status(const struct proc_out *o, const char *want)
{
	const char *got = jstr(o, "status");
	if (strcmp(got, want) != 0) {
		fail_msg("status is '%s', want '%s'\nresult: %.3000s", got, want, o->out);
	}
}

static void expect_limit(const struct proc_out *o, const char *limit, bool want)
{
	if (jlimit_hit(o, limit) != want) {
		fail_msg("limits_hit %s '%s'\nresult: %.3000s", want ? "lacks" : "has", limit,
			 o->out);
	}
}

static void expect_range(const struct proc_out *o, const char *key, long long lo, long long hi)
{
	long long v = jint(o, key);
	if (v < lo || v > hi) {
		fail_msg("%s is %lld, want %lld..%lld\nresult: %.3000s", key, v, lo, hi, o->out);
	}
}

static const char *probe_stdout(const struct proc_out *o)
{
	const char *s = jstr(o, "stdout");
	if (!s) {
		fail_msg("stdout is null: %.3000s", o->out);
	}
	return s;
}

/* Length of the probe's stdout as decoded from JSON (it may hold NULs). */
static size_t probe_stdout_len(const struct proc_out *o)
{
	json_t *v = json_object_get(o->json, "stdout");
	return json_is_string(v) ? json_string_length(v) : 0;
}

static bool contains(const char *hay, const char *needle)
{
	return strstr(hay, needle) != NULL;
}

static void expect_output_has(const struct proc_out *o, const char *needle)
{
	if (!contains(probe_stdout(o), needle)) {
		fail_msg("probe stdout lacks '%s'\nresult: %.3000s", needle, o->out);
	}
}

/* Copy the probe's last "result ..." line into `line`; fail if there is none. */
static void result_line(const struct proc_out *o, char *line, size_t len)
{
	const char *s = probe_stdout(o);
	const char *last = NULL;
	for (const char *p = s; p && *p;) {
		if (strncmp(p, "result ", 7) == 0)
			last = p;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!last) {
		fail_msg("the probe printed no result line (did it run at all?)\nresult: %.3000s",
			 o->out);
	}
	size_t n = strcspn(last, "\n");
	if (n >= len)
		n = len - 1;
	memcpy(line, last, n);
	line[n] = '\0';
}

/* Whether `token` ("errno=ENOSPC") is one whole word of `line`. */
static bool line_has(const char *line, const char *token)
{
	size_t tl = strlen(token);
	for (const char *p = line; (p = strstr(p, token)) != NULL; p++) {
		bool starts = p == line || p[-1] == ' ';
		bool ends = p[tl] == '\0' || p[tl] == ' ' || p[tl] == '\n';
		if (starts && ends)
			return true;
	}
	return false;
}

static void expect_token(const char *line, const char *token)
{
	if (!line_has(line, token)) {
		fail_msg("probe said '%s', want '%s'", line, token);
	}
}

/* The value of `key=` in `line` as a number; fails if absent. */
static long long kv_num(const char *line, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof pat, "%s=", key);
	size_t pl = strlen(pat);
	for (const char *p = line; (p = strstr(p, pat)) != NULL; p++) {
		if (p != line && p[-1] != ' ')
			continue;
		char *end;
		errno = 0;
		long long v = strtoll(p + pl, &end, 10);
		if (errno || end == p + pl) {
			fail_msg("'%s' in '%s' is not a number", key, line);
		}
		return v;
	}
	fail_msg("probe line '%s' has no %s=", line, key);
	return -1;
}

/* The value of `key=` in `line` as a string, into `out`. */
static void kv_str(const char *line, const char *key, char *out, size_t len)
{
	char pat[64];
	snprintf(pat, sizeof pat, "%s=", key);
	size_t pl = strlen(pat);
	for (const char *p = line; (p = strstr(p, pat)) != NULL; p++) {
		if (p != line && p[-1] != ' ')
			continue;
		size_t n = strcspn(p + pl, " \n");
		if (n >= len)
			n = len - 1;
		memcpy(out, p + pl, n);
		out[n] = '\0';
		return;
	}
	fail_msg("probe line '%s' has no %s=", line, key);
}

/* Whether the probe's stdout has a line exactly equal to `want`. */
static bool has_line(const char *text, const char *want)
{
	size_t wl = strlen(want);
	for (const char *p = text; p && *p;) {
		size_t n = strcspn(p, "\n");
		if (n == wl && strncmp(p, want, wl) == 0)
			return true;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

/* ---- host-side helpers -------------------------------------------------- */

static void write_host_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fail_msg("create %s: %s", path, strerror(errno));
	}
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* Read a whole host file (at most 16 MiB); NULL if it cannot be opened. */
static char *read_host_file(const char *path, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, len = 0;
	char *buf = malloc(cap + 1);
	assert_non_null(buf);
	for (;;) {
		if (len == cap) {
			assert_true(cap < 16 * MIB);
			cap *= 2;
			buf = realloc(buf, cap + 1);
			assert_non_null(buf);
		}
		ssize_t n = read(fd, buf + len, cap - len);
		assert_true(n >= 0);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}

static char *path_in(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);
	assert_non_null(p);
	snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* ---- limits ------------------------------------------------------------- */

static void test_cpu_limit_kills_spinner(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];

	run_probe(&o, L("--cpu", "1", "--wall", "30"), L("spin"));
	result_line(&o, line, sizeof line);
	expect_token(line, "spinning");
	expect_status(&o, "timeout");
	expect_limit(&o, "cpu", true);
	expect_limit(&o, "wall", false);
	expect_range(&o, "cpu_ms", 1000, 5000);
	expect_range(&o, "wall_ms", 0, 29000);
	assert_int_equal(jint(&o, "signal"), SIGKILL);
	assert_int_equal(jint(&o, "exit_code"), -1);
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_cpu_limit_counts_every_thread(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];

	/* Two threads spin for 3 s of wall time; the sandbox's CPU is their
	 * sum, whatever the number of host CPUs. */
	run_probe(&o, L("--cpu", "60", "--wall", "60"), L("cpuall", "3"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	long long t1 = kv_num(line, "t1_ms"), t2 = kv_num(line, "t2_ms");
	long long total = kv_num(line, "total_ms");
	assert_true(t1 >= 300 && t2 >= 300);
	long long cpu = jint(&o, "cpu_ms");
	if (cpu < (t1 + t2) * 9 / 10 || cpu < total * 9 / 10) {
		fail_msg("cpu_ms %lld, but the probe's threads used %lld + %lld ms (%lld ms total)",
			 cpu, t1, t2, total);
	}
	expect_limit(&o, "cpu", false);
	proc_out_free(&o);
	harness_assert_clean();

	/* Both threads together trip the limit. */
	run_probe(&o, L("--cpu", "2", "--wall", "60"), L("cpuall", "30"));
	expect_status(&o, "timeout");
	expect_limit(&o, "cpu", true);
	expect_limit(&o, "wall", false);
	expect_range(&o, "cpu_ms", 2000, 7000);
	expect_range(&o, "peak_pids", 2, 3);
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_wall_limit_kills_sleeper(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];

	run_probe(&o, L("--wall", "1", "--cpu", "10"), L("sleep", "100"));
	result_line(&o, line, sizeof line);
	expect_token(line, "sleeping");
	expect_status(&o, "timeout");
	expect_limit(&o, "wall", true);
	expect_limit(&o, "cpu", false);
	expect_range(&o, "cpu_ms", 0, 500);
	expect_range(&o, "wall_ms", 1000, 10000);
	assert_int_equal(jint(&o, "signal"), SIGKILL);
	proc_out_free(&o);
	harness_assert_clean();
}

/* The kernel's hard limit is --memory plus --disk (so that a full disk is
 * ENOSPC, not an OOM kill); the supervisor kills at --memory, woken by a
 * usage threshold and by sampling.  How far past --memory a fast allocator
 * gets depends on how soon the supervisor is scheduled (bench/, not a
 * timed test); the kernel's bound holds whatever the load. These tests run
 * with a small --disk so that bound is tight. */
#define TEST_DISK_MIB "16"
#define HARD_LIMIT_MIB(memory) ((memory) + 16)

static void test_memory_limit_kills_hog(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;

	run_probe(&o, L("--memory", "64", "--disk", TEST_DISK_MIB, "--wall", "60"),
		  L("memhog", "1024"));
	expect_status(&o, "memory_limit");
	expect_limit(&o, "memory", true);
	assert_int_equal(jint(&o, "exit_code"), -1);
	/* It really allocated, and did not get far past the limit. */
	const char *out = probe_stdout(&o);
	const char *last = NULL;
	for (const char *p = out; (p = strstr(p, "progress mib=")) != NULL; p++)
		last = p;
	if (!last) {
		fail_msg("memhog printed no progress: %.3000s", o.out);
	}
	long mib = strtol(last + strlen("progress mib="), NULL, 10);
	if (mib < 8 || mib >= HARD_LIMIT_MIB(64)) {
		fail_msg("memhog got to %ld MiB under --memory 64", mib);
	}
	if (contains(out, "result ok")) {
		fail_msg("memhog finished 1024 MiB under --memory 64");
	}
	expect_range(&o, "peak_memory_kib", 32 * KIB, HARD_LIMIT_MIB(64) * KIB);
	proc_out_free(&o);
	harness_assert_clean();

	/* A burst that allocates and exits between two samples must still be
	 * caught, even where --disk leaves the hard limit far above --memory. */
	run_probe(&o, L("--memory", "64", "--disk", "1024", "--wall", "60"), L("memburst", "400"));
	if (contains(probe_stdout(&o), "result ok")) {
		fail_msg("a 400 MiB burst succeeded under --memory 64: %.3000s", o.out);
	}
	expect_status(&o, "memory_limit");
	expect_limit(&o, "memory", true);
	expect_range(&o, "peak_memory_kib", 32 * KIB, (64 + 1024) * KIB);
	proc_out_free(&o);
	harness_assert_clean();
}

/* Kernel memory a program makes the kernel hold for it (here AF_UNIX
 * socket buffers) is its memory too: the group's own charge is the limit,
 * whatever the kind of memory. */
static void test_memory_limit_counts_socket_buffers(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;

	run_probe(&o, L("--memory", "64", "--disk", TEST_DISK_MIB, "--nofile", "4096", "--wall", "60"),
		  L("sockbuf", "160"));
	if (contains(probe_stdout(&o), "result ok")) {
		fail_msg("160 MiB of socket buffers held under --memory 64: %.3000s", o.out);
	}
	expect_status(&o, "memory_limit");
	expect_limit(&o, "memory", true);
	expect_range(&o, "peak_memory_kib", 32 * KIB, HARD_LIMIT_MIB(64) * KIB);
	proc_out_free(&o);
	harness_assert_clean();
}

/* A limit is reported only when it was reached: a program that raises
 * SIGSYS, SIGXCPU or SIGXFSZ at itself, in any of the ways the probe knows,
 * is refused (EPERM) and never reported as a seccomp kill, a CPU timeout or
 * a file-size limit. */
static void test_self_raised_limit_signals_are_not_limits(void **state)
{
	harness_require_root("the jail");
	static const char *const sigs[] = {"31", "24", "25"}; /* SIGSYS, SIGXCPU, SIGXFSZ */
	static const char *const hows[] = {
	    "kill",	"tgkill",	"sigqueue",   "rlimit",	    "pdeathsig", "fsetsig",
	    "childexit", "timer",	"seccomp",    "pdeathsig_hi", "fsetsig_hi", "seccomp_hi",
	    "dispatch"};
	struct proc_out o;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		for (size_t k = 0; k < sizeof(hows) / sizeof(hows[0]); k++) {
			run_probe(&o, L("--cpu", "3"), L("selfsig", sigs[i], hows[k]));
			if (strcmp(sigs[i], "24") == 0 && strcmp(hows[k], "rlimit") == 0) {
				/* RLIMIT_CPU may be lowered; its SIGXCPU, 2 s short
				 * of --cpu, is the program's own ending. */
				expect_status(&o, "signaled");
				assert_int_equal(jint(&o, "signal"), SIGXCPU);
			} else if (strcmp(jstr(&o, "status"), "nonzero_exit") != 0 ||
				   (!contains(probe_stdout(&o), "result errno=EPERM") &&
				    !contains(probe_stdout(&o), "result errno=ENOSYS"))) {
				fail_msg("selfsig %s %s: %.3000s", sigs[i], hows[k], o.out);
			}
			expect_limit(&o, "seccomp", false);
			expect_limit(&o, "cpu", false);
			expect_limit(&o, "fsize", false);
			proc_out_free(&o);
		}
	}
	/* The probe can raise a signal at all: SIGTERM is not refused. */
	run_probe(&o, L("--cpu", "3"), L("selfsig", "15", "kill"));
	expect_status(&o, "signaled");
	assert_int_equal(jint(&o, "signal"), SIGTERM);
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_pids_limit_stops_forkbomb(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];

	run_probe(&o, L("--pids", "16", "--wall", "2", "--cpu", "1000"), L("forkbomb"));
	result_line(&o, line, sizeof line);
	expect_token(line, "forking");
	expect_status(&o, "timeout");
	expect_limit(&o, "wall", true);
	expect_limit(&o, "pids", true);
	expect_range(&o, "peak_pids", 2, 16);
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_pids_limit_counts_threads(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];

	run_probe(&o, L("--pids", "64", "--wall", "30"), L("threads", "10"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	expect_token(line, "started=10");
	expect_range(&o, "peak_pids", 11, 64);
	expect_limit(&o, "pids", false);
	proc_out_free(&o);
	harness_assert_clean();

	run_probe(&o, L("--pids", "16", "--wall", "30"), L("threads", "40"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	long long started = kv_num(line, "started");
	if (started < 8 || started >= 16) {
		fail_msg("started %lld threads under --pids 16", started);
	}
	expect_token(line, "errno=EAGAIN");
	expect_limit(&o, "pids", true);
	expect_range(&o, "peak_pids", started + 1, 16);
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_fsize_limit_stops_big_file(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];

	run_probe(&o, L("--fsize", "2", "--disk", "64", "--wall", "30"), L("bigfile", "/work/big"));
	if (strcmp(jstr(&o, "status"), "signaled") == 0) {
		assert_int_equal(jint(&o, "signal"), SIGXFSZ);
		expect_limit(&o, "fsize", true);
	} else {
		expect_status(&o, "ok");
		result_line(&o, line, sizeof line);
		expect_token(line, "errno=EFBIG");
		assert_int_equal(kv_num(line, "bytes"), 2 * MIB);
	}
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_disk_limit_gives_enospc(void **state)
{
	harness_require_root("the jail");
	/* The writable tree is a tmpfs charged to the memory cgroup: filling
	 * it must end in ENOSPC, never in an OOM kill. */
	static const struct {
		const char *disk, *memory, *dir;
		long long mib;
	} cases[] = {
	    {"8", "256", "/work", 8},
	    {"32", "64", "/work", 32},
	    {"8", "256", "/tmp", 8},
	    {"8", "256", "/dev/shm", 8},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct proc_out o;
		char line[1024];
		print_message("filldisk %s with --disk %s --memory %s\n", cases[i].dir,
			      cases[i].disk, cases[i].memory);
		run_probe(&o,
			  L("--disk", cases[i].disk, "--memory", cases[i].memory, "--wall", "60"),
			  L("filldisk", cases[i].dir));
		result_line(&o, line, sizeof line);
		expect_token(line, "errno=ENOSPC");
		long long bytes = kv_num(line, "bytes");
		/* The probe itself (about 1 MiB) lives in /work too. */
		if (bytes > cases[i].mib * MIB || bytes < (cases[i].mib - 3) * MIB) {
			fail_msg("filled %lld bytes of a %lld MiB disk", bytes, cases[i].mib);
		}
		if (strcmp(jstr(&o, "status"), "nonzero_exit") != 0)
			expect_status(&o, "ok");
		expect_limit(&o, "memory", false);
		expect_limit(&o, "disk", true);
		/* Files in the tmpfs are part of the sandbox's memory. */
		expect_range(&o, "peak_memory_kib", (cases[i].mib - 3) * KIB,
			     atoll(cases[i].memory) * KIB);
		proc_out_free(&o);
		harness_assert_clean();
	}
}

static void test_output_cap_never_blocks(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;

	long long t0 = harness_now_ms();
	run_probe(&o, L("--output", "64", "--wall", "120"), L("flood", "200"));
	long long took = harness_now_ms() - t0;
	expect_status(&o, "ok");
	assert_int_equal(o.exit_status, 0);
	assert_true(jbool(&o, "stdout_truncated"));
	assert_false(jbool(&o, "stderr_truncated"));
	assert_int_equal(jint(&o, "stdout_bytes"), 200 * MIB);
	/* Plain ASCII: the first 64 KiB are kept exactly. */
	assert_int_equal(probe_stdout_len(&o), 64 * KIB);
	assert_int_equal(strlen(probe_stdout(&o)), 64 * KIB);
	expect_limit(&o, "output", true);
	expect_range(&o, "wall_ms", 0, 30000);
	if (took > 40000) {
		fail_msg("flooding 200 MiB took %lld ms", took);
	}
	proc_out_free(&o);
	harness_assert_clean();

	run_probe(&o, L("--output", "64", "--wall", "120"), L("floodboth", "50"));
	expect_status(&o, "ok");
	assert_true(jbool(&o, "stdout_truncated"));
	assert_true(jbool(&o, "stderr_truncated"));
	assert_int_equal(jint(&o, "stdout_bytes"), 50 * MIB);
	assert_int_equal(jint(&o, "stderr_bytes"), 50 * MIB);
	assert_true(strlen(jstr(&o, "stdout")) <= 64 * KIB);
	assert_true(strlen(jstr(&o, "stderr")) <= 64 * KIB);
	assert_true(strlen(jstr(&o, "stderr")) > 0);
	expect_limit(&o, "output", true);
	proc_out_free(&o);
	harness_assert_clean();

	/* --output 0 keeps nothing but still counts. */
	run_probe(&o, L("--output", "0", "--wall", "60"), L("flood", "1"));
	expect_status(&o, "ok");
	assert_int_equal(probe_stdout_len(&o), 0);
	assert_true(jbool(&o, "stdout_truncated"));
	assert_int_equal(jint(&o, "stdout_bytes"), MIB);
	proc_out_free(&o);
	harness_assert_clean();

	/* Under the cap: nothing truncated, no limit. */
	run_probe(&o, L("--output", "64", "--wall", "60"), L("whoami"));
	expect_status(&o, "ok");
	assert_false(jbool(&o, "stdout_truncated"));
	assert_int_equal(jint(&o, "stdout_bytes"), (long long)strlen(probe_stdout(&o)));
	expect_limit(&o, "output", false);
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_nofile_limit(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];

	run_probe(&o, L("--nofile", "32", "--wall", "30"), L("nofile"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	expect_token(line, "errno=EMFILE");
	long long count = kv_num(line, "count");
	if (count < 20 || count >= 32) {
		fail_msg("opened %lld files under --nofile 32", count);
	}
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_seccomp_kills_kexec(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;

	run_probe(&o, L("--wall", "30"), L("kexec"));
	expect_output_has(&o, "attempt kexec_load");
	if (contains(probe_stdout(&o), "result errno=")) {
		fail_msg("kexec_load returned instead of killing: %.3000s", o.out);
	}
	expect_status(&o, "signaled");
	assert_int_equal(jint(&o, "signal"), SIGSYS);
	assert_string_equal(jstr(&o, "signal_name"), "SIGSYS");
	expect_limit(&o, "seccomp", true);
	assert_int_equal(o.exit_status, 1);
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_exit_codes_and_signals(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;

	run_probe(&o, L("--wall", "30"), L("exit", "3"));
	expect_output_has(&o, "result exiting code=3");
	expect_status(&o, "nonzero_exit");
	assert_int_equal(jint(&o, "exit_code"), 3);
	assert_int_equal(jint(&o, "signal"), -1);
	assert_int_equal(o.exit_status, 1);
	proc_out_free(&o);
	harness_assert_clean();

	run_probe(&o, L("--wall", "30"), L("exit", "0"));
	expect_output_has(&o, "result exiting code=0");
	expect_status(&o, "ok");
	assert_int_equal(jint(&o, "exit_code"), 0);
	assert_int_equal(o.exit_status, 0);
	assert_int_equal(json_array_size(json_object_get(o.json, "limits_hit")), 0);
	proc_out_free(&o);
	harness_assert_clean();

	run_probe(&o, L("--wall", "30"), L("segv"));
	expect_output_has(&o, "attempt segv");
	expect_status(&o, "signaled");
	assert_int_equal(jint(&o, "signal"), SIGSEGV);
	assert_string_equal(jstr(&o, "signal_name"), "SIGSEGV");
	assert_int_equal(jint(&o, "exit_code"), -1);
	assert_int_equal(o.exit_status, 1);
	proc_out_free(&o);
	harness_assert_clean();

	run_probe(&o, L("--wall", "30"), L("abort"));
	expect_output_has(&o, "attempt abort");
	expect_status(&o, "signaled");
	assert_int_equal(jint(&o, "signal"), SIGABRT);
	assert_string_equal(jstr(&o, "signal_name"), "SIGABRT");
	proc_out_free(&o);
	harness_assert_clean();
}

/* ---- escapes ------------------------------------------------------------ */

static void test_daemon_does_not_outlive_run(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];

	long long t0 = harness_now_ms();
	run_probe(&o, L("--wall", "30"), L("daemon"));
	long long took = harness_now_ms() - t0;
	result_line(&o, line, sizeof line);
	if (kv_num(line, "daemon") <= 0) {
		fail_msg("the daemon did not start: %s", line);
	}
	/* Ends when the program exits, not when its last stdout closes. */
	expect_status(&o, "ok");
	expect_range(&o, "wall_ms", 0, 5000);
	if (took > 10000) {
		fail_msg("proctor took %lld ms to return", took);
	}
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_network_is_unreachable(void **state)
{
	harness_require_root("the jail");
	/* Loopback and TEST-NET-3 (RFC 5737) only: never a real address. */
	static const char *const addrs[] = {"127.0.0.1", "203.0.113.1"};
	for (size_t i = 0; i < sizeof addrs / sizeof addrs[0]; i++) {
		struct proc_out o;
		char line[1024];

		run_probe(&o, L("--wall", "30"), L("connect", addrs[i], "80"));
		expect_status(&o, "ok");
		result_line(&o, line, sizeof line);
		expect_token(line, "errno=ENETUNREACH");
		if (kv_num(line, "ms") >= 1000) {
			fail_msg("connect to %s took %lld ms to fail", addrs[i],
				 kv_num(line, "ms"));
		}
		proc_out_free(&o);
		harness_assert_clean();

		run_probe(&o, L("--wall", "30"), L("udp", addrs[i], "9"));
		expect_status(&o, "ok");
		result_line(&o, line, sizeof line);
		if (line_has(line, "errno=OK")) {
			fail_msg("UDP to %s was sent: %s", addrs[i], line);
		}
		proc_out_free(&o);
		harness_assert_clean();
	}
}

static void test_environment_is_exactly_the_contract(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];
	char *const env[] = {"DATABASE_URL=postgres://x:ADV-CANARY-db@10.0.0.1/x",
			     "ADV_CANARY_SECRET=ADV-CANARY-123", NULL};
	static const char *const want[] = {
	    "env PATH=/usr/local/bin:/usr/bin:/bin",
	    "env HOME=/work",
	    "env TMPDIR=/tmp",
	    "env LANG=C.UTF-8",
	    "env PWD=/work",
	    "env EXTRA_ONE=value with spaces",
	};

	run_probe_env(&o, env, L("--wall", "30", "--env", "EXTRA_ONE=value with spaces"),
		      L("environ"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	const char *out = probe_stdout(&o);
	if (contains(o.out, "ADV-CANARY") || contains(o.err, "ADV-CANARY")) {
		fail_msg("a secret of proctor's environment reached the sandbox: %.3000s", o.out);
	}
	size_t n_env = 0;
	for (const char *p = out; (p = strstr(p, "env ")) != NULL; p++)
		if (p == out || p[-1] == '\n')
			n_env++;
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		if (!has_line(out, want[i])) {
			fail_msg("environment lacks '%s': %.3000s", want[i] + 4, out);
		}
	}
	if (n_env != sizeof want / sizeof want[0]) {
		fail_msg("environment has %zu entries, want exactly %zu: %.3000s", n_env,
			 sizeof want / sizeof want[0], out);
	}
	expect_token(line, "readable=0");
	if (contains(out, "readable /proc/")) {
		fail_msg("another process's environ is readable: %.3000s", out);
	}
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_host_secrets_are_unreadable(void **state)
{
	harness_require_root("the jail");
	const char *const paths[] = {
	    "/etc/shadow",	 "/root", "/proc/1/environ",
	    harness_state_dir(), "/home", "/sys/fs/cgroup",
	};
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
		struct proc_out o;
		char line[1024], err[64];

		run_probe(&o, L("--wall", "30"), L("readfile", paths[i]));
		expect_status(&o, "ok");
		result_line(&o, line, sizeof line);
		if (line_has(line, "ok")) {
			fail_msg("read %s in the sandbox: %s", paths[i], line);
		}
		kv_str(line, "errno", err, sizeof err);
		/* EISDIR would mean the directory is there and open. */
		if (strcmp(err, "ENOENT") != 0 && strcmp(err, "EACCES") != 0 &&
		    strcmp(err, "EPERM") != 0) {
			fail_msg("%s: %s (want it absent or forbidden)", paths[i], line);
		}
		proc_out_free(&o);
		harness_assert_clean();
	}
}

static void test_privileged_calls_are_denied(void **state)
{
	harness_require_root("the jail");
	static const struct {
		const char *mode;
		const char *tokens[3];
	} cases[] = {
	    {"ptrace", {"attach_child=EPERM", "attach_parent=EPERM", "traceme=EPERM"}},
	    {"unshare", {"unshare=EPERM", "clone=EPERM", "setns=EPERM"}},
	    {"mount", {"errno=EPERM", NULL, NULL}},
	    {"clone3", {"errno=ENOSYS", NULL, NULL}},
	    {"iouring", {"errno=ENOSYS", NULL, NULL}},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct proc_out o;
		char line[1024];

		run_probe(&o, L("--wall", "30"), L(cases[i].mode));
		expect_status(&o, "ok");
		result_line(&o, line, sizeof line);
		for (size_t k = 0; k < 3 && cases[i].tokens[k]; k++)
			expect_token(line, cases[i].tokens[k]);
		proc_out_free(&o);
		harness_assert_clean();
	}
}

static void test_identity_is_unprivileged(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];

	run_probe(&o, L("--wall", "30"), L("whoami"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	long long uid = kv_num(line, "uid");
	if (uid < SLOT_UID_MIN || uid >= SLOT_UID_END) {
		fail_msg("runs as uid %lld, not a slot uid", uid);
	}
	assert_int_equal(kv_num(line, "euid"), uid);
	assert_int_equal(kv_num(line, "gid"), uid);
	assert_int_equal(kv_num(line, "egid"), uid);
	assert_int_not_equal(kv_num(line, "pid"), 1);
	proc_out_free(&o);
	harness_assert_clean();

	/* Only the probe itself is visible: not pid 1, nothing of the host. */
	run_probe(&o, L("--wall", "30"), L("ps"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	long long self = kv_num(line, "self");
	assert_int_not_equal(self, 1);
	char want[128];
	snprintf(want, sizeof want, "proc pid=%lld comm=probe", self);
	if (!has_line(probe_stdout(&o), want)) {
		fail_msg("ps does not list the probe itself: %.3000s", probe_stdout(&o));
	}
	if (kv_num(line, "count") != 1) {
		fail_msg("the sandbox sees processes besides the probe: %.3000s", probe_stdout(&o));
	}
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_hostname_is_not_the_hosts(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024], name[256], host[256] = {0};

	assert_int_equal(gethostname(host, sizeof host - 1), 0);
	run_probe(&o, L("--wall", "30"), L("hostname"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	kv_str(line, "hostname", name, sizeof name);
	assert_true(name[0] != '\0');
	if (strcmp(name, host) == 0) {
		fail_msg("the sandbox has the host's hostname '%s'", host);
	}
	proc_out_free(&o);
	harness_assert_clean();
}

/* ---- two sandboxes ------------------------------------------------------ */

/* Find a host process of a slot uid that has written `rel` in its /work. */
static pid_t find_sandboxed(const char *rel, long long *ret_uid)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	pid_t found = 0;
	struct dirent *de;
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char path[PATH_MAX];
		struct stat st;
		snprintf(path, sizeof path, "/proc/%s", de->d_name);
		if (stat(path, &st) < 0 || st.st_uid < SLOT_UID_MIN || st.st_uid >= SLOT_UID_END)
			continue;
		snprintf(path, sizeof path, "/proc/%s/root/work/%s", de->d_name, rel);
		if (access(path, F_OK) == 0) {
			found = (pid_t)atoi(de->d_name);
			*ret_uid = st.st_uid;
		}
	}
	closedir(d);
	return found;
}

/* A proctor killed by SIGKILL takes its sandbox with it: init dies by
 * PDEATHSIG, the program dies with init's pid namespace, the scratch mount
 * lived only in the dead proctor's mount namespace, and the next proctor
 * reuses the slot. */
static void test_sandbox_dies_with_its_proctor(void **state)
{
	(void)state;
	harness_require_root("the jail");
	char *dir = harness_tmpdir();
	char *out = path_in(dir, "a.out"), *err = path_in(dir, "a.err");
	char put[PATH_MAX + 16];
	snprintf(put, sizeof put, "%s:probe", harness_probe());
	const char *args[] = {"run", "--json", "--wall", "60", "--put", put, "--",
			      "./probe", "hold", "owner-secret", "release", "60", NULL};
	pid_t pid = harness_spawn(args, out, err);
	long long uid = 0;
	pid_t victim = 0;
	for (int i = 0; i < 250 && !victim; i++) {
		harness_sleep_ms(20);
		victim = find_sandboxed("owner-secret", &uid);
	}
	assert_true(victim > 0);
	/* Only the proctor this test started is killed, by its pid. */
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(harness_wait_child(pid, 10000), 128 + SIGKILL);
	/* The program is gone within moments, without any other proctor's
	 * help; the slot's empty run cgroup waits for the next lease. */
	bool gone = false;
	for (int i = 0; i < 100 && !gone; i++) {
		gone = kill(victim, 0) < 0 && errno == ESRCH;
		if (!gone)
			harness_sleep_ms(20);
	}
	assert_true(gone);

	struct proc_out o;
	run_probe(&o, (const char *const[]){"--slots", "1", NULL},
		  (const char *const[]){"ls", "/work", NULL});
	expect_status(&o, "ok");
	assert_false(contains(probe_stdout(&o), "owner-secret"));
	proc_out_free(&o);
	harness_assert_clean();
	harness_rm_tree(dir);
	free(out);
	free(err);
	free(dir);
}

static void test_two_sandboxes_are_isolated(void **state)
{
	harness_require_root("the jail");
	char *dir = harness_tmpdir();
	char *a_out = path_in(dir, "a.out"), *a_err = path_in(dir, "a.err");
	char put[PATH_MAX + 16];
	snprintf(put, sizeof put, "%s:probe", harness_probe());

	/* A writes /work/secret and stays until the test creates /work/release. */
	pid_t a = harness_spawn(L("run", "--json", "--wall", "60", "--put", put, "--", "./probe",
				  "hold", "/work/secret", "/work/release", "40"),
				a_out, a_err);
	long long a_uid = -1;
	pid_t a_probe = 0;
	for (long long until = harness_now_ms() + 20000; !a_probe && harness_now_ms() < until;) {
		a_probe = find_sandboxed("secret", &a_uid);
		if (!a_probe) {
			if (waitpid(a, NULL, WNOHANG) == a) {
				size_t len;
				char *err = read_host_file(a_err, &len);
				fail_msg("sandbox A ended early; stderr: %.2000s", err ? err : "");
			}
			harness_sleep_ms(50);
		}
	}
	if (!a_probe) {
		harness_wait_child(a, 60000);
		fail_msg("sandbox A never wrote /work/secret");
	}

	struct proc_out o;
	char line[1024], path[PATH_MAX];

	run_probe(&o, L("--wall", "30"), L("whoami"));
	result_line(&o, line, sizeof line);
	if (kv_num(line, "uid") == a_uid) {
		fail_msg("two sandboxes at once share uid %lld", a_uid);
	}
	proc_out_free(&o);

	run_probe(&o, L("--wall", "30"), L("ps"));
	result_line(&o, line, sizeof line);
	if (kv_num(line, "count") != 1) {
		fail_msg("sandbox B sees other processes: %.3000s", probe_stdout(&o));
	}
	proc_out_free(&o);

	run_probe(&o, L("--wall", "30"), L("ls", "/work"));
	result_line(&o, line, sizeof line);
	if (!has_line(probe_stdout(&o), "probe")) {
		fail_msg("ls /work in B does not show B's own probe: %.3000s", probe_stdout(&o));
	}
	if (has_line(probe_stdout(&o), "secret")) {
		fail_msg("B sees A's /work/secret");
	}
	proc_out_free(&o);

	run_probe(&o, L("--wall", "30"), L("readfile", "/work/secret"));
	result_line(&o, line, sizeof line);
	expect_token(line, "errno=ENOENT");
	proc_out_free(&o);

	snprintf(path, sizeof path, "/proc/%d/root/work/secret", (int)a_probe);
	run_probe(&o, L("--wall", "30"), L("readfile", path));
	result_line(&o, line, sizeof line);
	if (line_has(line, "ok")) {
		fail_msg("B read A's secret through %s", path);
	}
	proc_out_free(&o);

	/* A must still have been running for all of this to mean anything. */
	if (waitpid(a, NULL, WNOHANG) == a) {
		fail_msg("sandbox A ended before B's checks were done");
	}
	snprintf(path, sizeof path, "/proc/%d/root/work/release", (int)a_probe);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		print_message("cannot release A through %s (%s); waiting for it\n", path,
			      strerror(errno));
	} else {
		close(fd);
	}
	int rc = harness_wait_child(a, 60000);
	size_t len;
	char *a_json = read_host_file(a_out, &len);
	assert_non_null(a_json);
	json_error_t jerr;
	json_t *j = json_loads(a_json, 0, &jerr);
	if (!j) {
		fail_msg("sandbox A printed no JSON (exit %d): %.2000s", rc, a_json);
	}
	assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
	assert_int_equal(rc, 0);
	const char *a_stdout = json_string_value(json_object_get(j, "stdout"));
	assert_non_null(a_stdout);
	char want[64];
	snprintf(want, sizeof want, "uid=%lld", a_uid);
	if (!contains(a_stdout, want)) {
		fail_msg("A's probe reports another uid than %lld: %s", a_uid, a_stdout);
	}
	json_decref(j);
	free(a_json);
	harness_assert_clean();
	harness_rm_tree(dir);
	free(a_out);
	free(a_err);
	free(dir);
}

static void test_slot_reuse_starts_fresh(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;
	char line[1024];

	/* --slots 1: both runs get slot 0, so the second inherits whatever
	 * the first left in the slot's cgroups and tree. */
	run_probe(&o, L("--slots", "1", "--memory", "256", "--wall", "60"), L("memhog", "100"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	expect_token(line, "mib=100");
	expect_range(&o, "peak_memory_kib", 100 * KIB, 256 * KIB);
	proc_out_free(&o);
	harness_assert_clean();

	run_probe(&o, L("--slots", "1", "--wall", "60"), L("write", "/tmp/leftover", "x"));
	result_line(&o, line, sizeof line);
	expect_token(line, "ok");
	proc_out_free(&o);
	harness_assert_clean();

	run_probe(&o, L("--slots", "1", "--wall", "60"), L("true"));
	expect_status(&o, "ok");
	expect_range(&o, "peak_memory_kib", 0, 20 * KIB - 1);
	expect_range(&o, "peak_pids", 1, 3);
	expect_range(&o, "cpu_ms", 0, 1000);
	proc_out_free(&o);
	harness_assert_clean();

	run_probe(&o, L("--slots", "1", "--wall", "60"), L("readfile", "/tmp/leftover"));
	result_line(&o, line, sizeof line);
	expect_token(line, "errno=ENOENT");
	proc_out_free(&o);
	harness_assert_clean();
}

/* ---- usage errors ------------------------------------------------------- */

/* Exactly one line on stderr, "proctor: ..." naming `a` or `b`. */
static void expect_one_line_error(const struct proc_out *o, const char *a, const char *b)
{
	if (o->err_len == 0 || o->err[o->err_len - 1] != '\n' ||
	    memchr(o->err, '\n', o->err_len - 1) != NULL || strlen(o->err) != o->err_len) {
		fail_msg("want exactly one line on stderr, got: '%s'", o->err);
	}
	if (strncmp(o->err, "proctor: ", 9) != 0) {
		fail_msg("stderr does not start with 'proctor: ': %s", o->err);
	}
	if (!contains(o->err, a) && !(b && contains(o->err, b))) {
		fail_msg("stderr names neither '%s' nor '%s': %s", a, b ? b : "", o->err);
	}
}

static void test_bad_options_are_usage_errors(void **state)
{
	harness_require_root("the jail");
	static const struct {
		const char *opt, *value;
	} cases[] = {
	    {"--cpu", "-1"},
	    {"--cpu", "0"},
	    {"--cpu", "abc"},
	    {"--cpu", "86401"},
	    {"--wall", "0"},
	    {"--memory", "99999999999"},
	    {"--memory", "3"},
	    {"--pids", "0"},
	    {"--output", "x"},
	    {"--nofile", "3"},
	    {"--slots", "0"},
	    {"--env", "1BAD=x"},
	    {"--put", "/nonexistent:foo"},
	    {"--stdin", "/nonexistent"},
	    {"--get", "../escape:/tmp/proctor-test-never"},
	    {"--frobnicate", NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct proc_out o;
		print_message("%s %s\n", cases[i].opt, cases[i].value ? cases[i].value : "");
		if (cases[i].value)
			run_probe_raw(&o, NULL, L(cases[i].opt, cases[i].value), L("true"));
		else
			run_probe_raw(&o, NULL, L(cases[i].opt), L("true"));
		if (o.exit_status != 2) {
			fail_msg("%s %s: proctor exited %d, want 2; stderr: %s", cases[i].opt,
				 cases[i].value ? cases[i].value : "", o.exit_status, o.err);
		}
		expect_one_line_error(&o, cases[i].opt, cases[i].value);
		proc_out_free(&o);
		harness_assert_clean();
	}
	assert_int_equal(access("/tmp/proctor-test-never", F_OK), -1);
}

static void test_missing_program_exits_127(void **state)
{
	harness_require_root("the jail");
	static const char *const programs[] = {"./nonexistent", "no-such-command-anywhere"};
	for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++) {
		struct proc_out o;
		harness_run(&o, NULL, RUN_TIMEOUT_S,
			    (char *const *)L("run", "--json", "--wall", "30", "--", programs[i]));
		check_result(&o);
		expect_status(&o, "nonzero_exit");
		assert_int_equal(jint(&o, "exit_code"), 127);
		assert_int_equal(o.exit_status, 1);
		const char *msg = jstr(&o, "message");
		if (!msg || !contains(msg, "cannot execute")) {
			fail_msg("message does not say why: %.3000s", o.out);
		}
		proc_out_free(&o);
		harness_assert_clean();
	}
}

/* ---- files in and out --------------------------------------------------- */

static void test_stdin_comes_from_file(void **state)
{
	harness_require_root("the jail");
	char *dir = harness_tmpdir();
	char *in = path_in(dir, "input.txt");
	static const char text[] = "line one\nline two\n\ttabbed end";
	write_host_file(in, text, sizeof text - 1);
	struct proc_out o;

	run_probe(&o, L("--stdin", in, "--wall", "30"), L("stdin"));
	expect_status(&o, "ok");
	assert_string_equal(probe_stdout(&o), text);
	assert_int_equal(jint(&o, "stdout_bytes"), sizeof text - 1);
	proc_out_free(&o);
	harness_assert_clean();

	/* Without --stdin the input is empty, not proctor's own stdin. */
	run_probe(&o, L("--wall", "30"), L("stdin"));
	expect_status(&o, "ok");
	assert_int_equal(jint(&o, "stdout_bytes"), 0);
	proc_out_free(&o);
	harness_assert_clean();

	harness_rm_tree(dir);
	free(in);
	free(dir);
}

static void test_put_directory_and_get_file(void **state)
{
	harness_require_root("the jail");
	char *dir = harness_tmpdir();
	char *in = path_in(dir, "in");
	char *sub = path_in(in, "sub");
	char *a_txt = path_in(in, "a.txt");
	char *bin = path_in(sub, "bin.dat");
	char *back = path_in(dir, "back.dat");
	char *made = path_in(dir, "made.txt");
	assert_int_equal(mkdir(in, 0755), 0);
	assert_int_equal(mkdir(sub, 0755), 0);
	write_host_file(a_txt, "alpha\n", 6);
	unsigned char data[3 * 256 + 7];
	for (size_t i = 0; i < sizeof data; i++)
		data[i] = (unsigned char)(i * 7 + 3);
	write_host_file(bin, data, sizeof data);

	char put[PATH_MAX + 8], get_bin[PATH_MAX + 32], get_made[PATH_MAX + 32];
	snprintf(put, sizeof put, "%s:in", in);
	snprintf(get_bin, sizeof get_bin, "in/sub/bin.dat:%s", back);
	snprintf(get_made, sizeof get_made, "/work/made.txt:%s", made);
	struct proc_out o;
	char line[1024];

	run_probe(&o, L("--put", put, "--wall", "30"), L("ls", "in"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	expect_token(line, "count=2");
	assert_true(has_line(probe_stdout(&o), "a.txt"));
	assert_true(has_line(probe_stdout(&o), "sub"));
	proc_out_free(&o);
	harness_assert_clean();

	run_probe(&o, L("--put", put, "--wall", "30"), L("cat", "in/a.txt"));
	expect_status(&o, "ok");
	assert_string_equal(probe_stdout(&o), "alpha\n");
	proc_out_free(&o);
	harness_assert_clean();

	run_probe(&o, L("--put", put, "--get", get_bin, "--get", get_made, "--wall", "30"),
		  L("write", "made.txt", "made in the sandbox"));
	expect_status(&o, "ok");
	result_line(&o, line, sizeof line);
	expect_token(line, "ok");
	size_t len;
	char *got = read_host_file(back, &len);
	if (!got) {
		fail_msg("--get did not write %s", back);
	}
	assert_int_equal(len, sizeof data);
	assert_memory_equal(got, data, sizeof data);
	free(got);
	got = read_host_file(made, &len);
	if (!got) {
		fail_msg("--get did not write %s", made);
	}
	assert_string_equal(got, "made in the sandbox");
	free(got);
	proc_out_free(&o);
	harness_assert_clean();

	harness_rm_tree(dir);
	free(in);
	free(sub);
	free(a_txt);
	free(bin);
	free(back);
	free(made);
	free(dir);
}

static void test_get_refuses_symlink(void **state)
{
	harness_require_root("the jail");
	char *dir = harness_tmpdir();
	char *stolen = path_in(dir, "stolen");
	static const char *const targets[] = {"/etc/passwd", "../../../../../../etc/passwd"};
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		char get[PATH_MAX + 16];
		snprintf(get, sizeof get, "link:%s", stolen);
		struct proc_out o;
		run_probe_raw(&o, NULL, L("--get", get, "--wall", "30"),
			      L("symlink", targets[i], "link"));
		if (o.exit_status != 1 && o.exit_status != 2) {
			fail_msg("--get of a symlink to %s: proctor exited %d, want 1 or 2; "
				 "stdout: %.2000s",
				 targets[i], o.exit_status, o.out);
		}
		const char *msg = NULL;
		if (o.json) {
			char line[1024];
			result_line(&o, line, sizeof line);
			expect_token(line, "errno=OK");
			msg = jstr(&o, "message");
		}
		if (o.err_len == 0 && !msg) {
			fail_msg("--get of a symlink failed without saying why");
		}
		size_t len;
		char *got = read_host_file(stolen, &len);
		if (got && (contains(got, "root:") || len > 0)) {
			fail_msg("--get followed the symlink to %s: %.200s", targets[i], got);
		}
		free(got);
		unlink(stolen);
		proc_out_free(&o);
		harness_assert_clean();
	}
	harness_rm_tree(dir);
	free(stolen);
	free(dir);
}

static void test_invalid_utf8_is_replaced(void **state)
{
	harness_require_root("the jail");
	struct proc_out o;

	run_probe(&o, L("--wall", "30"), L("badutf8"));
	expect_status(&o, "ok");
	/* jansson already refused to load the result if it were not UTF-8. */
	expect_output_has(&o, "ok \xEF\xBF\xBD");
	expect_output_has(&o, " end\n");
	expect_output_has(&o, "euro \xE2\x82\xAC\n");
	/* The count is of the bytes written, not of the repaired text. */
	assert_int_equal(jint(&o, "stdout_bytes"), 19);
	proc_out_free(&o);
	harness_assert_clean();
}

static int check_binaries(void **state)
{
	const char *bins[] = {harness_proctor(), harness_probe()};
	for (size_t i = 0; i < 2; i++) {
		if (access(bins[i], X_OK) != 0) {
			print_error("%s is not an executable file: %s\n", bins[i], strerror(errno));
			return -1;
		}
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cpu_limit_kills_spinner),
	    cmocka_unit_test(test_cpu_limit_counts_every_thread),
	    cmocka_unit_test(test_wall_limit_kills_sleeper),
	    cmocka_unit_test(test_memory_limit_kills_hog),
	    cmocka_unit_test(test_memory_limit_counts_socket_buffers),
	    cmocka_unit_test(test_self_raised_limit_signals_are_not_limits),
	    cmocka_unit_test(test_pids_limit_stops_forkbomb),
	    cmocka_unit_test(test_pids_limit_counts_threads),
	    cmocka_unit_test(test_fsize_limit_stops_big_file),
	    cmocka_unit_test(test_disk_limit_gives_enospc),
	    cmocka_unit_test(test_output_cap_never_blocks),
	    cmocka_unit_test(test_nofile_limit),
	    cmocka_unit_test(test_seccomp_kills_kexec),
	    cmocka_unit_test(test_exit_codes_and_signals),
	    cmocka_unit_test(test_daemon_does_not_outlive_run),
	    cmocka_unit_test(test_network_is_unreachable),
	    cmocka_unit_test(test_environment_is_exactly_the_contract),
	    cmocka_unit_test(test_host_secrets_are_unreadable),
	    cmocka_unit_test(test_privileged_calls_are_denied),
	    cmocka_unit_test(test_identity_is_unprivileged),
	    cmocka_unit_test(test_hostname_is_not_the_hosts),
	    cmocka_unit_test(test_two_sandboxes_are_isolated),
	    cmocka_unit_test(test_sandbox_dies_with_its_proctor),
	    cmocka_unit_test(test_slot_reuse_starts_fresh),
	    cmocka_unit_test(test_bad_options_are_usage_errors),
	    cmocka_unit_test(test_missing_program_exits_127),
	    cmocka_unit_test(test_stdin_comes_from_file),
	    cmocka_unit_test(test_put_directory_and_get_file),
	    cmocka_unit_test(test_get_refuses_symlink),
	    cmocka_unit_test(test_invalid_utf8_is_replaced),
	};
	return cmocka_run_group_tests(tests, check_binaries, NULL);
}
