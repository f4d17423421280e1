/*
 * Pre-started microVMs ($PROCTOR_VM_POOL): a VM taken from the pool was
 * restored in the background before anyone asked for it, so it must still
 * be as fresh as one restored on demand: its own random bytes (two pooled
 * VMs of one snapshot, restored side by side, included), the host's clock,
 * and nothing of the sandbox before it.  Uses the backend directly, on the
 * image test_vm built in $PROCTOR_STATE_DIR (small@1); skips without it,
 * unless PROCTOR_MUST_WORK=1.
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
#include "image/image.h"
#include "result.h"
#include "runlimits.h"
#include "sandbox.h"
#include "vm/vm.h"

static struct sandbox_options so;
static struct image_info img;

static int setup(void **state)
{
	const char *dir = getenv("PROCTOR_STATE_DIR");
	struct err e;
	char why[512];

	(void)state;
	harness_require_root("the microVM pool");
	snprintf(why, sizeof(why), "no image small@1 in %s (test_vm builds it)", dir);
	harness_require(dir && image_resolve(dir, "small@1", &img, &e) == 0, "the microVM pool",
			why);
	harness_require(vm_ops.probe(&e) == 0, "the microVM pool", e.msg);
	so = (struct sandbox_options){.state_dir = dir,
				      .max_slots = 16,
				      .uid_base = SANDBOX_UID_BASE,
				      .disk_bytes = 64u << 20,
				      .system_dir = img.rootfs,
				      .memory_bytes = 256u << 20};
	setenv("PROCTOR_VM_POOL", "2", 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	vm_pool_drain();
	harness_assert_clean();
	return 0;
}

/* Run sh -c script in sb; its stdout into buf. */
static void run_sh(struct sandbox *sb, const char *script, char *buf, size_t cap)
{
	char *argv[] = {"/bin/sh", "-c", (char *)script, NULL};
	struct run_spec spec = {.argv = argv, .stdin_fd = -1};
	struct run_result res;
	struct err e;

	limits_default(&spec.limits);
	assert_int_equal(run_result_init(&res, 65536), 0);
	if (sandbox_run(sb, &spec, &res, &e) < 0)
		fail_msg("run: %s", e.msg);
	if (res.status != RUN_OK)
		fail_msg("run: status %d: %s (stderr: %.*s)", (int)res.status, res.message,
			 (int)res.err.len, res.err.data);
	snprintf(buf, cap, "%.*s", (int)res.out.len, res.out.data);
	run_result_free(&res);
}

static struct sandbox *create(bool *prestarted)
{
	struct sandbox *sb;
	struct vm_timing tm;
	struct err e;

	if (vm_ops.create(&so, &sb, &e) < 0)
		fail_msg("create: %s", e.msg);
	vm_last_timing(&tm);
	*prestarted = tm.prestarted;
	return sb;
}

#define PROBE                                                                                      \
	"ls /tmp/leftover /work/leftover 2>&1; od -An -tx1 -N32 /dev/urandom | tr -d ' \\n'; "     \
	"echo; date +%s; echo planted > /tmp/leftover; echo planted > /work/leftover"

/* The random bytes (64 hex digits) and the clock of a probe's output. */
static void parse(const char *out, char rnd[65], long long *clock)
{
	const char *line = out, *nl;
	int n = 0;

	/* Two lines of ls, then the bytes, then the clock. */
	while (n < 2 && (nl = strchr(line, '\n'))) {
		line = nl + 1;
		n++;
	}
	nl = strchr(line, '\n');
	if (!nl || nl - line != 64)
		fail_msg("unexpected probe output: %s", out);
	snprintf(rnd, 65, "%.64s", line);
	*clock = atoll(nl + 1);
}

static void test_pooled_vms_are_fresh(void **state)
{
	char out[3][4096], rnd[3][65];
	long long clock;
	bool pre;
	struct sandbox *a, *b, *c;

	(void)state;
	/* On demand; it fills the pool with two, restored in the background. */
	a = create(&pre);
	run_sh(a, PROBE, out[0], sizeof(out[0]));
	sandbox_destroy(a);
	sleep(2);
	b = create(&pre);
	assert_true(pre);
	c = create(&pre);
	assert_true(pre);
	run_sh(b, PROBE, out[1], sizeof(out[1]));
	run_sh(c, PROBE, out[2], sizeof(out[2]));
	sandbox_destroy(b);
	sandbox_destroy(c);
	for (int i = 0; i < 3; i++) {
		if (strstr(out[i], "planted") || !strstr(out[i], "No such file"))
			fail_msg("VM %d saw another sandbox's files: %s", i, out[i]);
		parse(out[i], rnd[i], &clock);
		long long now = (long long)time(NULL);
		if (clock < now - 120 || clock > now + 120)
			fail_msg("VM %d: guest clock %lld, host %lld", i, clock, now);
	}
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (strcmp(rnd[i], rnd[j]) == 0)
				fail_msg("VMs %d and %d read the same random bytes: %s", i, j,
					 rnd[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pooled_vms_are_fresh),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
