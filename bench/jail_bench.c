/*
 * jail_bench: what a pooled jail costs a long-running process, beside the
 * shell's `unshare` and `proctor run`.  Run as root:
 *
 *   build-release/jail_bench [N] [PROCTOR]   (meson compile -C build-release jail_bench)
 *
 * N rounds (default 200), each running, in an order shuffled anew per
 * round, once each:
 *
 *   pooled    in this process: create() taking a prepared jail
 *             ($PROCTOR_JAIL_POOL=1), run `/bin/true`, destroy(); timed
 *             from create to destroy's return.  The pool is refilled
 *             afterwards, untimed, as a worker does between jobs
 *             (sandbox_pool_fill); that refill is reported on its own.
 *   fresh     in this process: create() with no pool, run, destroy().
 *   unshare   spawn to reap of `unshare --fork --pid --net --mount --ipc
 *             --uts --mount-proc /bin/true`.
 *   proctor   spawn to reap of `PROCTOR run -- /bin/true` (default: the
 *             proctor beside jail_bench), stdout and stderr to /dev/null.
 *   bare      spawn to reap of `/bin/true` itself, no sandbox: the floor
 *             under every other row (each of them execs it too).
 *
 * Prints median, p90 and p99 in ms and the ratios of medians against their
 * targets (issue 13: pooled/unshare <= 0.5, proctor/unshare <= 1.0), with a
 * line "TARGET MISSED: ..." for each missed.  Exits 0 whatever the numbers:
 * a measurement, not a test.  It also says which cgroup layout it measured:
 * on a hybrid or v1 host the program joins v1 groups by writing
 * cgroup.procs (CLONE_INTO_CGROUP only places a child in a v2 group).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/cgroup.h"
#include "jail/jail.h"
#include "result.h"
#include "runlimits.h"
#include "sandbox.h"
#include "util.h"

extern char **environ;

enum { POOLED, FRESH, UNSHARE, PROCTOR, BARE, REFILL, NKIND };
static const char *const names[NKIND] = {"pooled",  "fresh",	      "unshare",
					 "proctor", "bare /bin/true", "refill (idle)"};

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	qsort(v, n, sizeof(double), cmp_double);
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static double ms_since(uint64_t t0)
{
	return (double)(now_ns() - t0) / 1e6;
}

/* Spawn argv with stdio on /dev/null and reap it: ms, or -1 if it failed. */
static double spawn_ms(char *const *argv)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int st;

	posix_spawn_file_actions_init(&fa);
	for (int fd = 0; fd < 3; fd++)
		posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd ? O_WRONLY : O_RDONLY, 0);
	uint64_t t0 = now_ns();
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	double ms = ms_since(t0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? ms : -1;
}

/* The phases of the pooled runs: create, run, destroy (ms each). */
static double *phase[3];
static size_t nphase;

/* create + run /bin/true + destroy in this process: ms, or -1. */
static double jail_ms(const struct sandbox_options *so, bool pooled)
{
	char *argv[] = {"/bin/true", NULL};
	struct run_spec spec = {.argv = argv, .stdin_fd = -1};
	struct run_result res;
	struct sandbox *sb;
	struct err e;
	double ms = -1;

	setenv("PROCTOR_JAIL_POOL", pooled ? "1" : "0", 1);
	limits_default(&spec.limits);
	if (run_result_init(&res, 4096) < 0)
		return -1;
	uint64_t t0 = now_ns();
	if (jail_ops.create(so, &sb, &e) == 0) {
		uint64_t t1 = now_ns();
		int rc = sandbox_run(sb, &spec, &res, &e);
		uint64_t t2 = now_ns();
		sandbox_destroy(sb);
		if (rc == 0 && res.status == RUN_OK)
			ms = ms_since(t0);
		if (ms >= 0 && pooled && phase[0]) {
			phase[0][nphase] = (double)(t1 - t0) / 1e6;
			phase[1][nphase] = (double)(t2 - t1) / 1e6;
			phase[2][nphase++] = ms_since(t2);
		}
	}
	if (ms < 0)
		fprintf(stderr, "jail_bench: %s run failed: %s\n", pooled ? "pooled" : "fresh",
			res.status == RUN_OK ? e.msg : res.message);
	run_result_free(&res);
	return ms;
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 200;
	char proctor[PATH_MAX], why[512];
	struct err e;
	enum cgroup_layout layout;

	if (n == 0)
		return fprintf(stderr, "usage: jail_bench [N>0] [PROCTOR]\n"), 2;
	if (argc > 2)
		snprintf(proctor, sizeof(proctor), "%s", argv[2]);
	else if (own_program("proctor", X_OK, proctor, sizeof(proctor), &e) < 0)
		return fprintf(stderr, "jail_bench: %s\n", e.msg), 1;
	if (jail_ops.probe(&e) < 0 || jail_ops.prepare(&e) < 0 ||
	    cgroup_detect(&layout, why, sizeof(why), &e) < 0)
		return fprintf(stderr, "jail_bench: %s\n", e.msg), 1;
	char *unshare[] = {"/usr/bin/unshare", "--fork", "--pid", "--net",
			   "--mount",	       "--ipc",	 "--uts", "--mount-proc",
			   "/bin/true",	       NULL};
	char *prun[] = {proctor, "run", "--", "/bin/true", NULL};
	char *bare[] = {"/bin/true", NULL};
	const char *state = getenv("PROCTOR_STATE_DIR");
	struct limits dl;
	limits_default(&dl);
	struct sandbox_options so = {.state_dir = state ? state : DEFAULT_STATE_DIR,
				     .max_slots = 16,
				     .uid_base = SANDBOX_UID_BASE,
				     .disk_bytes = dl.disk_bytes};
	double *v[NKIND];
	size_t got[NKIND] = {0}, failed = 0;
	for (int k = 0; k < NKIND; k++)
		if (!(v[k] = calloc(n, sizeof(double))))
			return 1;
	double *ph[3];
	for (int k = 0; k < 3; k++)
		if (!(ph[k] = calloc(n, sizeof(double))))
			return 1;
	printf("jail_bench: %zu rounds, cgroups %s (%s); CLONE_INTO_CGROUP %s\n", n,
	       cgroup_layout_name(layout), why,
	       layout == CGROUP_V2 ? "would apply (not used)"
				   : "does not apply (v1 controllers are joined by writing "
				     "cgroup.procs)");
	fflush(stdout);
	/* Warm-up: one of each, unrecorded; it also fills the pool. */
	jail_ms(&so, true);
	sandbox_pool_fill();
	jail_ms(&so, false);
	spawn_ms(unshare);
	spawn_ms(prun);
	for (int k = 0; k < 3; k++)
		phase[k] = ph[k];
	srand((unsigned)now_ns());
	for (size_t r = 0; r < n; r++) {
		int order[5] = {POOLED, FRESH, UNSHARE, PROCTOR, BARE};
		for (int i = 4; i > 0; i--) {
			int k = rand() % (i + 1), t = order[i];
			order[i] = order[k];
			order[k] = t;
		}
		for (int i = 0; i < 5; i++) {
			double ms = order[i] == POOLED	  ? jail_ms(&so, true)
				    : order[i] == FRESH	  ? jail_ms(&so, false)
				    : order[i] == UNSHARE ? spawn_ms(unshare)
				    : order[i] == BARE	  ? spawn_ms(bare)
							  : spawn_ms(prun);
			if (ms < 0) {
				failed++;
				continue;
			}
			v[order[i]][got[order[i]]++] = ms;
			if (order[i] == POOLED) {
				setenv("PROCTOR_JAIL_POOL", "1", 1);
				uint64_t t0 = now_ns();
				sandbox_pool_fill();
				v[REFILL][got[REFILL]++] = ms_since(t0);
			}
		}
	}
	sandbox_pool_drain();
	double med[NKIND];
	printf("%-16s %9s %9s %9s %6s\n", "", "p50 ms", "p90 ms", "p99 ms", "n");
	for (int k = 0; k < NKIND; k++) {
		if (!got[k]) {
			med[k] = -1;
			printf("%-16s %9s\n", names[k], "n/a");
			continue;
		}
		med[k] = pct(v[k], got[k], 0.5);
		printf("%-16s %9.2f %9.2f %9.2f %6zu\n", names[k], med[k], pct(v[k], got[k], 0.9),
		       pct(v[k], got[k], 0.99), got[k]);
	}
	if (failed)
		printf("failed runs (left out): %zu\n", failed);
	if (nphase)
		printf("pooled, by phase (p50 ms): create %.2f, run %.2f, destroy %.2f\n",
		       pct(ph[0], nphase, 0.5), pct(ph[1], nphase, 0.5), pct(ph[2], nphase, 0.5));
	static const struct {
		int num, den;
		double target;
	} ratios[] = {{POOLED, UNSHARE, 0.5},
		      {PROCTOR, UNSHARE, 1.0},
		      {FRESH, UNSHARE, 0},
		      {BARE, UNSHARE, 0}};
	printf("ratios of medians:\n");
	for (size_t i = 0; i < sizeof(ratios) / sizeof(ratios[0]); i++) {
		int a = ratios[i].num, b = ratios[i].den;
		char label[64];
		snprintf(label, sizeof(label), "%s/%s", names[a], names[b]);
		if (med[a] < 0 || med[b] <= 0) {
			printf("  %-20s n/a\n", label);
			continue;
		}
		double r = med[a] / med[b];
		if (ratios[i].target > 0)
			printf("  %-20s %5.2f  (target <= %.1f)\n", label, r, ratios[i].target);
		else
			printf("  %-20s %5.2f  (no target)\n", label, r);
		if (ratios[i].target > 0 && r > ratios[i].target)
			printf("TARGET MISSED: %s = %.2f, target <= %.1f\n", label, r,
			       ratios[i].target);
	}
	for (int k = 0; k < NKIND; k++)
		free(v[k]);
	return 0;
}
