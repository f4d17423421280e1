/*
 * The jail's pool ($PROCTOR_JAIL_POOL, jail/jail.c): a jail taken from the
 * pool was made, and its first run's init launched (namespaces, root, the
 * program's process in the run's cgroups), before anyone asked for it, so
 * it must still be as fresh as one made on demand: a new pid namespace
 * whose first process the program is, namespaces other than this
 * process's, nothing in /tmp or /work and no process of the sandbox before
 * it, its own random bytes, the host's clock, the limits of its run (not
 * the previous run's, nor the defaults), and the usage of its program
 * alone (init is never in the run's groups).  In this process, through
 * the backend's ops table, as a worker uses it; needs root.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "jail/jail.h"
#include "result.h"
#include "runlimits.h"
#include "sandbox.h"

static struct sandbox_options so;

static int setup(void **state)
{
	const char *dir = getenv("PROCTOR_STATE_DIR");
	struct err e;

	(void)state;
	harness_require_root("the jail's pool");
	harness_require(jail_ops.probe(&e) == 0, "the jail's pool", e.msg);
	if (jail_ops.prepare(&e) < 0)
		fail_msg("prepare: %s", e.msg);
	so = (struct sandbox_options){.state_dir = dir ? dir : DEFAULT_STATE_DIR,
				      .max_slots = 16,
				      .uid_base = SANDBOX_UID_BASE,
				      .disk_bytes = 64u << 20};
	setenv("PROCTOR_JAIL_POOL", "2", 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	jail_ops.pool_drain();
	harness_assert_clean();
	return 0;
}

/* Run sh -c script in sb with limits l; the result in *res (caller frees). */
static void run_sh(struct sandbox *sb, const char *script, const struct limits *l,
		   struct run_result *res)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct run_spec spec = {.argv = argv, .stdin_fd = -1, .limits = *l};
	struct err e;

	assert_int_equal(run_result_init(res, 65536), 0);
	if (sandbox_run(sb, &spec, res, &e) < 0)
		fail_msg("run: %s", e.msg);
}

static struct sandbox *create(void)
{
	struct sandbox *sb;
	struct err e;

	if (jail_ops.create(&so, &sb, &e) < 0)
		fail_msg("create: %s", e.msg);
	return sb;
}

/* Lines: leftovers (2), the shell's pid, processes visible, 64 hex digits
 * of randomness, the clock, then the namespaces.  Then it plants files and
 * leaves a daemon for whoever comes next. */
#define PROBE                                                                                      \
	"ls /tmp/leftover /work/leftover 2>&1; echo $$; ls /proc | grep -c '^[0-9]'; "             \
	"od -An -tx1 -N32 /dev/urandom | tr -d ' \\n'; echo; date +%s; "                           \
	"for n in pid net mnt ipc uts; do readlink /proc/self/ns/$n; done; "                       \
	"echo planted > /tmp/leftover; echo planted > /work/leftover; "                            \
	"(setsid sleep 1000 >/dev/null 2>&1 &)"

struct probe {
	char out[4096];
	char rnd[65];
	long long clock;
	int pid, procs;
	char ns[5][64];
};

static void probe(struct sandbox *sb, struct probe *p)
{
	struct limits l;
	struct run_result res;
	char *save = NULL, *line;
	int n = 0;

	limits_default(&l);
	run_sh(sb, PROBE, &l, &res);
	if (res.status != RUN_OK)
		fail_msg("probe: status %d: %s (stderr: %.*s)", (int)res.status, res.message,
			 (int)res.err.len, res.err.data);
	snprintf(p->out, sizeof(p->out), "%.*s", (int)res.out.len, res.out.data);
	run_result_free(&res);
	char copy[4096];
	snprintf(copy, sizeof(copy), "%s", p->out);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save), n++) {
		if (n == 2)
			p->pid = atoi(line);
		else if (n == 3)
			p->procs = atoi(line);
		else if (n == 4)
			snprintf(p->rnd, sizeof(p->rnd), "%s", line);
		else if (n == 5)
			p->clock = atoll(line);
		else if (n >= 6 && n < 11)
			snprintf(p->ns[n - 6], sizeof(p->ns[0]), "%s", line);
	}
	if (n != 11 || strlen(p->rnd) != 64)
		fail_msg("unexpected probe output: %s", p->out);
}

static void test_pooled_jails_are_fresh(void **state)
{
	static const char *const ns[] = {"pid", "net", "mnt", "ipc", "uts"};
	struct probe p[3];
	struct sandbox *a, *b, *c;
	char host_ns[5][64], path[64];

	(void)state;
	for (int k = 0; k < 5; k++) {
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns[k]);
		ssize_t len = readlink(path, host_ns[k], sizeof(host_ns[k]) - 1);
		assert_true(len > 0);
		host_ns[k][len] = '\0';
	}
	/* The first fills the pool with two and takes one; the second takes
	 * the other, in use beside the third, which the pool made anew. */
	a = create();
	probe(a, &p[0]);
	sandbox_destroy(a);
	b = create();
	c = create();
	probe(b, &p[1]);
	probe(c, &p[2]);
	sandbox_destroy(b);
	sandbox_destroy(c);
	for (int i = 0; i < 3; i++) {
		if (strstr(p[i].out, "planted") || !strstr(p[i].out, "No such file"))
			fail_msg("jail %d saw another sandbox's files: %s", i, p[i].out);
		/* Init is 1, the shell 2: a pid namespace nobody used before;
		 * hidepid shows it its own processes only (itself, ls, grep). */
		if (p[i].pid != 2 || p[i].procs < 1 || p[i].procs > 4)
			fail_msg(
			    "jail %d: shell pid %d, %d processes visible (want 2, at most 4): %s",
			    i, p[i].pid, p[i].procs, p[i].out);
		long long now = (long long)time(NULL);
		if (p[i].clock < now - 120 || p[i].clock > now + 120)
			fail_msg("jail %d: clock %lld, host %lld", i, p[i].clock, now);
		for (int k = 0; k < 5; k++)
			if (strcmp(p[i].ns[k], host_ns[k]) == 0)
				fail_msg("jail %d runs in this process's %s namespace", i, ns[k]);
	}
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (strcmp(p[i].rnd, p[j].rnd) == 0)
				fail_msg("jails %d and %d read the same random bytes", i, j);
}

/* Four sleepers under a pids limit of 3: some forks must fail. */
#define FORKS "for i in 1 2 3 4; do sleep 0.2 & done 2>/dev/null; wait; echo done"

static void test_pooled_jail_has_its_runs_limits(void **state)
{
	struct limits l;
	struct run_result res;
	struct sandbox *sb;

	(void)state;
	/* The limit of this run, set when the run starts: the jail was
	 * prepared before anyone knew it. */
	sb = create();
	limits_default(&l);
	l.pids = 3;
	run_sh(sb, FORKS, &l, &res);
	if (!(res.limits_hit & LIMIT_HIT_PIDS))
		fail_msg("a pooled jail did not apply the run's pids limit of 3: status %d, "
			 "peak_pids %llu",
			 (int)res.status, (unsigned long long)res.peak_pids);
	run_result_free(&res);
	sandbox_destroy(sb);

	/* The next pooled jail: the defaults again, not the previous limit. */
	sb = create();
	limits_default(&l);
	run_sh(sb, FORKS, &l, &res);
	if (res.status != RUN_OK || (res.limits_hit & LIMIT_HIT_PIDS) || res.peak_pids < 5)
		fail_msg("the next pooled jail kept the previous run's limit: status %d, "
			 "limits_hit %#x, peak_pids %llu",
			 (int)res.status, res.limits_hit, (unsigned long long)res.peak_pids);
	run_result_free(&res);
	sandbox_destroy(sb);
}

static void test_pooled_jail_counts_its_program_alone(void **state)
{
	char *argv[] = {"/bin/true", NULL};
	struct run_spec spec = {.argv = argv, .stdin_fd = -1};
	struct run_result res;
	struct sandbox *sb;
	struct err e;

	(void)state;
	limits_default(&spec.limits);
	sb = create();
	assert_int_equal(run_result_init(&res, 4096), 0);
	if (sandbox_run(sb, &spec, &res, &e) < 0)
		fail_msg("run: %s", e.msg);
	/* Only /bin/true: init (with all of this process's memory under a
	 * sanitizer) and its waiting are never in the run's groups. */
	if (res.status != RUN_OK || res.peak_pids != 1 || res.peak_memory_kib > 4096)
		fail_msg("/bin/true in a pooled jail: status %d, peak_pids %llu, peak memory "
			 "%llu KiB (want 1 and at most 4096)",
			 (int)res.status, (unsigned long long)res.peak_pids,
			 (unsigned long long)res.peak_memory_kib);
	run_result_free(&res);
	sandbox_destroy(sb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pooled_jails_are_fresh),
	    cmocka_unit_test(test_pooled_jail_has_its_runs_limits),
	    cmocka_unit_test(test_pooled_jail_counts_its_program_alone),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
