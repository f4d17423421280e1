/*
 * vm_bench: how fast a microVM sandbox becomes ready, cold and restored, and
 * what an idle restored VM costs the host.  Run as root on an image with a
 * guest kernel:
 *
 *   build/vm_bench small@2 [N] [PROCTOR]   (ninja -C build vm_bench)
 *
 * Prints, in one run on one machine, for TCG and for KVM (where QEMU can
 * use it; else why not): cold boot to agent-ready, snapshot restore to
 * agent-ready with QEMU started on demand, and create-to-ready taking a
 * pre-started VM of a pool (from asking for a sandbox to the agent's first
 * answer; p50/p99 over N of each, default 20); `PROCTOR run --isolation vm
 * -- /bin/true` from a shell's point of view, spawn to exit (PROCTOR
 * defaults to the proctor next to vm_bench); a burst of 6 against a pool of
 * 2; and the PSS of QEMU per idle restored VM with 8 restored at once.
 * Each beside its target.
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

#include "image/image.h"
#include "sandbox.h"
#include "util.h"
#include "vm/vm.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);

	qsort(v, n, sizeof(*v), cmp_double);
	return v[i < n ? i : n - 1];
}

/* Create and destroy n sandboxes; ready times into t[]. */
static int series(const struct sandbox_options *so, size_t n, double *t, bool *restored)
{
	for (size_t i = 0; i < n; i++) {
		struct sandbox *sb;
		struct vm_timing tm;
		struct err e;
		uint64_t t0 = now_ns();

		if (vm_ops.create(so, &sb, &e) < 0) {
			fprintf(stderr, "vm_bench: %s\n", e.msg);
			return -1;
		}
		t[i] = (double)(now_ns() - t0) / 1e6;
		vm_last_timing(&tm);
		*restored = tm.restored;
		if (tm.snapshot_built)
			i--; /* the first one built the snapshot: not a sample */
		sandbox_destroy(sb);
	}
	return 0;
}

static long pss_kib(pid_t pid)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "Pss:", 4) == 0)
			kib = strtol(line + 4, NULL, 10);
	fclose(f);
	return kib;
}

extern char **environ;

/* `proctor run --isolation vm --image PIN -- /bin/true`, spawn to reap, n
 * times; -1 if a run failed. */
static int shell_runs(const char *proctor, const char *pin, size_t n, double *t)
{
	char *argv[] = {(char *)proctor, "run", "--isolation", "vm", "--image",
			(char *)pin,	 "--",	"/bin/true",   NULL};
	posix_spawn_file_actions_t fa;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	for (size_t i = 0; i < n; i++) {
		pid_t pid;
		int st;
		uint64_t t0 = now_ns();
		if (posix_spawn(&pid, proctor, &fa, NULL, argv, environ) != 0 ||
		    waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "vm_bench: %s run --isolation vm -- /bin/true failed\n",
				proctor);
			posix_spawn_file_actions_destroy(&fa);
			return -1;
		}
		t[i] = (double)(now_ns() - t0) / 1e6;
	}
	posix_spawn_file_actions_destroy(&fa);
	return 0;
}

static int create_or_say(const struct sandbox_options *so, struct sandbox **sb)
{
	struct err e;

	if (vm_ops.create(so, sb, &e) < 0) {
		fprintf(stderr, "vm_bench: %s\n", e.msg);
		return -1;
	}
	return 0;
}

/* Everything for one accelerator ("tcg" or "kvm"); 1 if it cannot be used. */
static int bench_accel(const char *accel, const struct sandbox_options *so, size_t n,
		       const char *proctor, const char *pin)
{
	struct vm_host h;
	struct err e;
	bool restored = false;

	setenv("PROCTOR_VM_ACCEL", accel, 1);
	if (vm_host_info(&h, &e) < 0) {
		fprintf(stderr, "vm_bench: %s\n", e.msg);
		return -1;
	}
	if (strcmp(h.accel, accel) != 0) {
		printf("\n== %s: not measured: %s\n", accel, h.why);
		return 1;
	}
	printf("\n== %s\n", accel);
	double *cold = calloc(n, sizeof(double)), *warm = calloc(n, sizeof(double));
	double *pooled = calloc(n, sizeof(double)), *shell = calloc(n, sizeof(double));
	if (!cold || !warm || !pooled || !shell)
		return -1;
	/* Interleave so drift hits every series alike: a cold boot, a restore
	 * on demand, a pooled create (the pool refilled while the VM lives
	 * 300 ms, as a short run would) and a run from the shell each round. */
	struct sandbox *warmup;
	setenv("PROCTOR_VM_POOL", "1", 1);
	if (create_or_say(so, &warmup) < 0) /* builds the snapshot if needed */
		return -1;
	sandbox_destroy(warmup);
	for (size_t i = 0; i < n; i++) {
		setenv("PROCTOR_VM_SNAPSHOT", "0", 1);
		if (series(so, 1, &cold[i], &restored) < 0)
			return -1;
		unsetenv("PROCTOR_VM_SNAPSHOT");
		vm_pool_drain();
		setenv("PROCTOR_VM_POOL", "0", 1);
		if (series(so, 1, &warm[i], &restored) < 0 || !restored)
			return -1;
		setenv("PROCTOR_VM_POOL", "1", 1);
		if (create_or_say(so, &warmup) < 0) /* fills the pool */
			return -1;
		usleep(300000);
		sandbox_destroy(warmup);
		usleep(300000);
		struct vm_timing tm;
		if (series(so, 1, &pooled[i], &restored) < 0)
			return -1;
		vm_last_timing(&tm);
		if (!tm.prestarted)
			fprintf(stderr, "vm_bench: a pooled create found no pre-started VM\n");
		vm_pool_drain();
		if (shell_runs(proctor, pin, 1, &shell[i]) < 0)
			return -1;
	}
	double c50 = pct(cold, n, 0.5), c99 = pct(cold, n, 0.99);
	double w50 = pct(warm, n, 0.5), w99 = pct(warm, n, 0.99);
	double p50 = pct(pooled, n, 0.5), p99 = pct(pooled, n, 0.99);
	double s50 = pct(shell, n, 0.5), s99 = pct(shell, n, 0.99);
	printf("cold boot to agent-ready:          p50 %7.1f ms  p99 %7.1f ms  (n=%zu)\n", c50, c99,
	       n);
	printf("restore to agent-ready (on demand): p50 %7.1f ms  p99 %7.1f ms  %5.1fx faster; "
	       "target p50 <= 179 ms, >= 10x\n",
	       w50, w99, c50 / w50);
	printf("create-to-ready from the pool:      p50 %7.1f ms  p99 %7.1f ms  %5.1fx faster; "
	       "target p50 <= 49 ms  %s\n",
	       p50, p99, c50 / p50, p50 <= 49 ? "MET" : "MISSED");
	printf("`proctor run --isolation vm -- /bin/true` from the shell: p50 %7.1f ms  p99 %7.1f "
	       "ms; target p50 <= 250 ms  %s\n",
	       s50, s99, s50 <= 250 ? "MET" : "MISSED");

	/* A burst larger than the pool: 6 at once, none released. */
	setenv("PROCTOR_VM_POOL", "2", 1);
	struct sandbox *hold[8];
	double burst[6];
	if (create_or_say(so, &warmup) < 0)
		return -1;
	sandbox_destroy(warmup);
	usleep(500000);
	for (int i = 0; i < 6; i++) {
		uint64_t t0 = now_ns();
		if (create_or_say(so, &hold[i]) < 0)
			return -1;
		burst[i] = (double)(now_ns() - t0) / 1e6;
	}
	for (int i = 0; i < 6; i++)
		sandbox_destroy(hold[i]);
	vm_pool_drain();
	unsetenv("PROCTOR_VM_POOL");
	printf("burst of 6 with a pool of 2:        ");
	for (int i = 0; i < 6; i++)
		printf("%.0f%s", burst[i], i < 5 ? ", " : " ms\n");

	/* 8 idle restored VMs at once: QEMU's PSS each. */
	long total = 0;
	for (int i = 0; i < 8; i++)
		if (create_or_say(so, &hold[i]) < 0)
			return -1;
	usleep(500000);
	for (int i = 0; i < 8; i++) {
		long k = pss_kib(vm_sandbox_pid(hold[i]));
		if (getenv("VM_BENCH_VERBOSE"))
			printf("  VM %d: QEMU pid %d, PSS %ld KiB\n", i,
			       (int)vm_sandbox_pid(hold[i]), k);
		total += k;
	}
	printf("PSS per idle restored VM (8 at once): %.1f MiB   target <= 64 MiB\n",
	       (double)total / 8 / 1024);
	for (int i = 0; i < 8; i++)
		sandbox_destroy(hold[i]);
	free(cold);
	free(warm);
	free(pooled);
	free(shell);
	return 0;
}

int main(int argc, char **argv)
{
	const char *state = getenv("PROCTOR_STATE_DIR");
	struct image_info img;
	struct err e;
	size_t n = argc > 2 ? (size_t)atoi(argv[2]) : 20;
	char proctor[PATH_MAX];

	if (argc < 2 || n < 2 || n > 1000) {
		fprintf(stderr, "usage: vm_bench IMAGE_PIN [N] [PROCTOR]\n");
		return 2;
	}
	if (argc > 3) {
		snprintf(proctor, sizeof(proctor), "%s", argv[3]);
	} else if (own_program("proctor", X_OK, proctor, sizeof(proctor), &e) < 0) {
		fprintf(stderr, "vm_bench: %s\n", e.msg);
		return 2;
	}
	if (!state)
		state = "/var/lib/proctor";
	setenv("PROCTOR_STATE_DIR", state, 1); /* for the proctor it spawns */
	if (image_resolve(state, argv[1], &img, &e) < 0) {
		fprintf(stderr, "vm_bench: %s\n", e.msg);
		return 2;
	}
	struct sandbox_options so = {.state_dir = state,
				     .max_slots = 16,
				     .uid_base = SANDBOX_UID_BASE,
				     .disk_bytes = 64u << 20,
				     .system_dir = img.rootfs,
				     .memory_bytes = 256u << 20};
	char ver[128] = "?";
	vm_qemu_version(ver, sizeof(ver), &e);
	struct vm_host h;
	if (vm_host_info(&h, &e) < 0) {
		fprintf(stderr, "vm_bench: %s\n", e.msg);
		return 1;
	}
	printf("host: %s, TSC %u kHz; %s\n", ver, h.tsc_khz, proctor);
	static const char *const accels[] = {"tcg", "kvm"};
	for (size_t i = 0; i < 2; i++)
		if (bench_accel(accels[i], &so, n, proctor, argv[1]) < 0)
			return 1;
	return 0;
}
