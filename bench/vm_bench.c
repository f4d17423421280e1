/*
 * vm_bench: how fast a microVM sandbox becomes ready, cold and restored, and
 * what an idle restored VM costs the host.  Run as root on an image with a
 * guest kernel:
 *
 *   build/vm_bench small@2 [N]   (ninja -C build vm_bench)
 *
 * Prints, in one run on one machine: cold boot to agent-ready and snapshot
 * restore to agent-ready (from asking for a sandbox to the agent's first
 * answer; p50/p99 over N of each, default 20), their ratio, and the PSS of
 * QEMU per idle restored VM with 8 restored at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
	const char *state = getenv("PROCTOR_STATE_DIR");
	struct image_info img;
	struct err e;
	size_t n = argc > 2 ? (size_t)atoi(argv[2]) : 20;
	bool restored = false;

	if (argc < 2 || n < 2 || n > 1000) {
		fprintf(stderr, "usage: vm_bench IMAGE_PIN [N]\n");
		return 2;
	}
	if (!state)
		state = "/var/lib/proctor";
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
	double *cold = calloc(n, sizeof(double)), *warm = calloc(n, sizeof(double));
	struct vm_host h;
	if (!cold || !warm || vm_host_info(&h, &e) < 0) {
		fprintf(stderr, "vm_bench: %s\n", e.msg);
		return 1;
	}
	char ver[128] = "?";
	vm_qemu_version(ver, sizeof(ver), &e);
	printf("host: %s, accel %s, TSC %u kHz\n", ver, h.accel, h.tsc_khz);
	/* Interleave so drift hits both series alike. */
	for (size_t i = 0; i < n; i++) {
		setenv("PROCTOR_VM_SNAPSHOT", "0", 1);
		if (series(&so, 1, &cold[i], &restored) < 0)
			return 1;
		unsetenv("PROCTOR_VM_SNAPSHOT");
		if (series(&so, 1, &warm[i], &restored) < 0 || !restored)
			return 1;
	}
	double c50 = pct(cold, n, 0.5), c99 = pct(cold, n, 0.99);
	double w50 = pct(warm, n, 0.5), w99 = pct(warm, n, 0.99);
	printf("cold boot to agent-ready:  p50 %7.1f ms  p99 %7.1f ms  (n=%zu)\n", c50, c99, n);
	printf("restore to agent-ready:    p50 %7.1f ms  p99 %7.1f ms  (n=%zu)\n", w50, w99, n);
	printf("restore speed-up (p50):    %.1fx   target >= 10x; restore p50 target <= 179 ms\n",
	       c50 / w50);

	/* With pre-started QEMUs (a pool of 2): each sandbox lives 300 ms, as a
	 * short run would, while the pool refills in the background. */
	setenv("PROCTOR_VM_POOL", "2", 1);
	double *pooled = calloc(n, sizeof(double)), burst[6];
	struct sandbox *hold[6];
	if (!pooled)
		return 1;
	struct sandbox *warmup;
	if (vm_ops.create(&so, &warmup, &e) < 0) {
		fprintf(stderr, "vm_bench: %s\n", e.msg);
		return 1;
	}
	sandbox_destroy(warmup);
	usleep(500000);
	for (size_t i = 0; i < n; i++) {
		if (series(&so, 1, &pooled[i], &restored) < 0)
			return 1;
		usleep(300000);
	}
	/* A burst larger than the pool: 6 at once, none released. */
	for (int i = 0; i < 6; i++) {
		uint64_t t0 = now_ns();
		if (vm_ops.create(&so, &hold[i], &e) < 0) {
			fprintf(stderr, "vm_bench: %s\n", e.msg);
			return 1;
		}
		burst[i] = (double)(now_ns() - t0) / 1e6;
	}
	for (int i = 0; i < 6; i++)
		sandbox_destroy(hold[i]);
	vm_pool_drain();
	unsetenv("PROCTOR_VM_POOL");
	double p50 = pct(pooled, n, 0.5), p99 = pct(pooled, n, 0.99);
	printf("restore, pre-started QEMU (pool 2): p50 %7.1f ms  p99 %7.1f ms  (n=%zu)\n", p50,
	       p99, n);
	printf("burst of 6 with a pool of 2:        ");
	for (int i = 0; i < 6; i++)
		printf("%.0f%s", burst[i], i < 5 ? ", " : " ms\n");
	printf("restore speed-up with the pool (p50): %.1fx\n", c50 / p50);
	free(pooled);

	/* 8 idle restored VMs at once: QEMU's PSS each. */
	struct sandbox *sbs[8];
	long total = 0;
	for (int i = 0; i < 8; i++) {
		if (vm_ops.create(&so, &sbs[i], &e) < 0) {
			fprintf(stderr, "vm_bench: %s\n", e.msg);
			return 1;
		}
	}
	usleep(500000);
	for (int i = 0; i < 8; i++) {
		long k = pss_kib(vm_sandbox_pid(sbs[i]));
		if (getenv("VM_BENCH_VERBOSE"))
			printf("  VM %d: QEMU pid %d, PSS %ld KiB\n", i,
			       (int)vm_sandbox_pid(sbs[i]), k);
		total += k;
	}
	printf("PSS per idle restored VM (8 at once): %.1f MiB   target <= 64 MiB\n",
	       (double)total / 8 / 1024);
	for (int i = 0; i < 8; i++)
		sandbox_destroy(sbs[i]);
	free(cold);
	free(warm);
	return 0;
}
