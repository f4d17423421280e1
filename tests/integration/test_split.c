/* Split runs on a backend, through its ops table: the harness and its peer (sandbox.h,
 * run_spec.peer_argv). */

/*
 * `proctor run` has no split mode (grading makes split runs), so these
 * tests call the backend the way grading does: create, put, run, get,
 * destroy.  SPLIT_ISOLATION names it: "jail" (suite integration) or "vm"
 * (suite vm, an image built once in PROCTOR_STATE_DIR).  The microVM
 * backend finds proctor-agent next to the running program, so in vm mode
 * the test re-executes itself from a directory holding a copy of itself
 * and a copy of the agent ($PROCTOR_AGENT).
 *
 * Every test reads what both programs printed and fails when a line it
 * expects is missing: the harness and the peer talk over fd 3, so a test
 * that passed on silence would have to fake a conversation.
 */

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "image/image.h"
#include "result.h"
#include "sandbox.h"
#include "util.h"

static const struct sandbox_ops *ops;
static bool vm;
static char system_dir[PATH_MAX]; /* the image's rootfs (vm), or "" for the host's */

static int setup(void **state)
{
	const char *iso = getenv("SPLIT_ISOLATION");
	struct err e;

	(void)state;
	vm = iso && strcmp(iso, "vm") == 0;
	if (geteuid() != 0) {
		if (!harness_can_skip()) {
			fprintf(stderr, "split runs need root\n");
			return -1;
		}
		return 0;
	}
	ops = sandbox_backend(vm ? "vm" : "jail");
	if (!ops || ops->probe(&e) < 0 || ops->prepare(&e) < 0) {
		fprintf(stderr, "backend %s: %s\n", vm ? "vm" : "jail", ops ? e.msg : "not built");
		ops = NULL;
		return harness_can_skip() ? 0 : -1;
	}
	if (vm) {
		char pin[128], why[512];
		struct image_info img;
		if (harness_vm_image(IMAGES_DIR "/small.yaml", "small", pin, sizeof(pin), why,
				     sizeof(why)) < 0 ||
		    image_resolve(harness_state_dir(), pin, &img, &e) < 0) {
			fprintf(stderr, "no microVM image: %s\n", why);
			ops = NULL;
			return harness_can_skip() ? 0 : -1;
		}
		snprintf(system_dir, sizeof(system_dir), "%s", img.rootfs);
	}
	return 0;
}

/* The test's sandbox and run result, where test_teardown finds them. */
static struct sandbox *cur_sb;
static struct run_result run_res;

static struct sandbox *make(void)
{
	struct sandbox *sb = NULL;
	struct err e;
	struct limits l;

	if (!ops)
		skip();
	limits_default(&l);
	struct sandbox_options o = {
	    .state_dir = harness_state_dir(),
	    .max_slots = 64,
	    .uid_base = SANDBOX_UID_BASE,
	    .disk_bytes = l.disk_bytes,
	    .system_dir = system_dir[0] ? system_dir : NULL,
	    .memory_bytes = l.memory_bytes,
	};
	if (ops->create(&o, &sb, &e) < 0)
		fail_msg("create: %s", e.msg);
	cur_sb = sb;
	return sb;
}

/* The harness's and the peer's uids: a slot's and its harness's in the
 * jail, 1000 and 1001 in a guest. */
static void uids(const struct sandbox *sb, unsigned *peer, unsigned *harness)
{
	*peer = vm ? 1000 : (unsigned)sb->untrusted_uid;
	*harness = vm ? 1001 : (unsigned)sb->untrusted_uid + SANDBOX_HARNESS_UID_OFFSET;
}

/* A split run of two `sh -c` scripts; the result in *res (initialized here). */
static void split_run(struct sandbox *sb, const char *harness, const char *peer,
		      struct run_result *res)
{
	struct err e;
	char *argv[] = {"sh", "-c", (char *)harness, NULL};
	char *peer_argv[] = {"sh", "-c", (char *)peer, NULL};
	char *peer_env[] = {"WHO=peer", NULL};
	char *env[] = {"WHO=harness", NULL};
	struct run_spec spec = {
	    .argv = argv,
	    .env = env,
	    .env_count = 1,
	    .stdin_fd = -1,
	    .peer_argv = peer ? peer_argv : NULL,
	    .peer_env = peer_env,
	    .peer_env_count = 1,
	};

	limits_default(&spec.limits);
	spec.limits.wall_ms = 20000;
	assert_int_equal(run_result_init(res, 1 << 16), 0);
	if (ops->run(sb, &spec, res, &e) < 0)
		fail_msg("run: %s", e.msg);
}

/* A capture as a string (malloc'd). */
static char *text(const struct capbuf *b)
{
	char *s = strndup(b->data ? b->data : "", b->len);

	assert_non_null(s);
	return s;
}

static bool has_line(const struct run_result *res, const char *want)
{
	char *out = text(&res->out);
	size_t n = strlen(want);
	bool found = false;

	for (const char *p = out; !found && (p = strstr(p, want)) != NULL; p++)
		found = (p == out || p[-1] == '\n') && (p[n] == '\n' || !p[n]);
	free(out);
	return found;
}

__attribute__((format(printf, 2, 3))) static void expect_line(const struct run_result *res,
							      const char *fmt, ...)
{
	char want[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(want, sizeof(want), fmt, ap);
	va_end(ap);
	if (has_line(res, want))
		return;
	char *out = text(&res->out), *err = text(&res->err), msg[8192];
	snprintf(msg, sizeof(msg), "no line '%s' in the output:\n%s\nstderr:\n%s", want, out, err);
	free(out);
	free(err);
	fail_msg("%s", msg);
}

/* Lines both ways over fd 3; each side's uid and environment; the run's
 * status is the harness's, and a peer left sleeping does not keep it. */
static void test_channel_identity_and_status(void **state)
{
	struct sandbox *sb = make();
	unsigned peer_uid, harness_uid;

	(void)state;
	uids(sb, &peer_uid, &harness_uid);
	split_run(sb,
		  "echo \"harness uid $(id -u) $(id -un) $WHO\"; echo ping >&3; read r <&3; "
		  "echo \"harness got $r\"; exit 7",
		  "test -t 0 || read x || echo 'peer stdin empty'; "
		  "read l <&3; echo \"pong $(id -u) $(id -un) $WHO $l\" >&3; sleep 1000",
		  &run_res);
	expect_line(&run_res, "harness uid %u harness harness", harness_uid);
	expect_line(&run_res, "harness got pong %u student peer ping", peer_uid);
	expect_line(&run_res, "peer stdin empty");
	assert_int_equal(run_res.status, RUN_NONZERO_EXIT);
	assert_int_equal(run_res.exit_code, 7);
	assert_true(run_res.wall_ms < 10000);
	run_result_free(&run_res);
	sandbox_destroy(sb);
	cur_sb = NULL;
}

/* HARNESS files: the harness reads, the peer gets EACCES, neither writes;
 * a HARNESS_OWNED directory: the harness writes, the peer cannot. */
static void test_harness_files(void **state)
{
	struct sandbox *sb = make();
	struct err e;
	char *dir = harness_tmpdir(), hidden[PATH_MAX], report[PATH_MAX], got[PATH_MAX];

	(void)state;
	harness_path_join(hidden, dir, "hidden");
	harness_path_join(report, dir, "report");
	assert_int_equal(mkdir(hidden, 0755), 0);
	assert_int_equal(mkdir(report, 0755), 0);
	harness_write_text(hidden, "expected.txt", "the answer is 42\n");
	harness_write_text(dir, "tests.txt", "hidden test\n");
	if (ops->put(sb, hidden, "/work/hidden", SANDBOX_PUT_HARNESS, &e) < 0 ||
	    ops->put(sb, report, "/work/report", SANDBOX_PUT_HARNESS_OWNED, &e) < 0)
		fail_msg("put: %s", e.msg);
	harness_path_join(got, dir, "tests.txt");
	if (ops->put(sb, got, "/work/sub/tests.txt", SANDBOX_PUT_HARNESS, &e) < 0)
		fail_msg("put: %s", e.msg);
	split_run(
	    sb,
	    "cat /work/hidden/expected.txt /work/sub/tests.txt; "
	    "(echo x >> /work/hidden/expected.txt) 2>/dev/null || echo 'harness cannot write'; "
	    "echo done > /work/report/r.txt && echo 'harness wrote report'; "
	    "echo go >&3; read r <&3; echo \"peer said $r\"",
	    "read g <&3; "
	    "cat /work/hidden/expected.txt 2>/dev/null || echo 'peer cannot read hidden'; "
	    "cat /work/sub/tests.txt 2>&1 | grep -q 'Permission denied' && "
	    "echo 'peer EACCES tests'; "
	    "(echo x >> /work/sub/tests.txt) 2>/dev/null || echo 'peer cannot write tests'; "
	    "(echo x > /work/report/p.txt) 2>/dev/null || echo 'peer cannot write report'; "
	    "mv /work/sub /work/sub2 2>/dev/null || echo 'peer cannot move sub'; "
	    "rm -f /work/sub/tests.txt 2>/dev/null; test -e /work/sub/tests.txt && "
	    "echo 'peer cannot remove tests'; "
	    "echo fine >&3; sleep 1000",
	    &run_res);
	expect_line(&run_res, "the answer is 42");
	expect_line(&run_res, "hidden test");
	expect_line(&run_res, "harness cannot write");
	expect_line(&run_res, "harness wrote report");
	expect_line(&run_res, "peer said fine");
	expect_line(&run_res, "peer cannot read hidden");
	expect_line(&run_res, "peer EACCES tests");
	expect_line(&run_res, "peer cannot write tests");
	expect_line(&run_res, "peer cannot write report");
	expect_line(&run_res, "peer cannot move sub");
	expect_line(&run_res, "peer cannot remove tests");
	assert_int_equal(run_res.status, RUN_OK);
	run_result_free(&run_res);

	harness_path_join(got, dir, "got");
	if (ops->get(sb, "/work/report", got, &e) < 0)
		fail_msg("get: %s", e.msg);
	harness_path_join(report, got, "r.txt");
	char *text = harness_read(report, NULL);
	assert_string_equal(text, "done\n");
	free(text);
	harness_path_join(report, got, "p.txt");
	assert_int_not_equal(access(report, F_OK), 0);
	sandbox_destroy(sb);
	cur_sb = NULL;
	harness_rm_tree(dir);
	free(dir);
}

/* The peer can neither see the harness in /proc nor signal it; the harness
 * tells it its pid over the channel. */
static void test_peer_cannot_see_or_kill_harness(void **state)
{
	struct sandbox *sb = make();

	(void)state;
	split_run(
	    sb, "echo $$ >&3; read r <&3; echo \"peer said $r\"; echo 'harness alive'",
	    "read hp <&3; test -n \"$hp\" && echo 'peer has the pid'; "
	    "test -e /proc/$hp && echo 'peer sees harness' || echo 'peer cannot see harness'; "
	    "ls /proc | grep -qx \"$hp\" && echo 'peer lists harness'; "
	    "kill -9 $hp 2>/dev/null && echo 'peer killed harness' || "
	    "echo 'peer cannot kill harness'; "
	    "echo done >&3; sleep 1000",
	    &run_res);
	expect_line(&run_res, "peer has the pid");
	expect_line(&run_res, "peer cannot see harness");
	expect_line(&run_res, "peer cannot kill harness");
	expect_line(&run_res, "peer said done");
	expect_line(&run_res, "harness alive");
	assert_false(has_line(&run_res, "peer lists harness"));
	assert_int_equal(run_res.status, RUN_OK);
	run_result_free(&run_res);
	sandbox_destroy(sb);
	cur_sb = NULL;
}

/* A peer that cannot be executed fails the run as a program that cannot
 * be executed does (exit 127), naming the peer; so does a harness. */
static void test_exec_failures_are_reported(void **state)
{
	struct sandbox *sb = make();
	struct err e;
	char *argv[] = {"sh", "-c", "sleep 30", NULL};
	char *peer_argv[] = {"no-such-peer-program", NULL};
	struct run_spec spec = {.argv = argv, .stdin_fd = -1, .peer_argv = peer_argv};

	(void)state;
	limits_default(&spec.limits);
	assert_int_equal(run_result_init(&run_res, 1 << 16), 0);
	if (ops->run(sb, &spec, &run_res, &e) < 0)
		fail_msg("run: %s", e.msg);
	assert_int_equal(run_res.status, RUN_NONZERO_EXIT);
	assert_int_equal(run_res.exit_code, 127);
	if (!strstr(run_res.message, "peer: cannot execute 'no-such-peer-program'"))
		fail_msg("message: %s", run_res.message);
	assert_true(run_res.wall_ms < 10000);
	run_result_free(&run_res);

	char *bad[] = {"no-such-harness", NULL};
	char *peer_ok[] = {"sleep", "1000", NULL};
	spec.argv = bad;
	spec.peer_argv = peer_ok;
	assert_int_equal(run_result_init(&run_res, 1 << 16), 0);
	if (ops->run(sb, &spec, &run_res, &e) < 0)
		fail_msg("run: %s", e.msg);
	assert_int_equal(run_res.exit_code, 127);
	if (!strstr(run_res.message, "cannot execute 'no-such-harness'") || strstr(run_res.message, "peer"))
		fail_msg("message: %s", run_res.message);
	run_result_free(&run_res);
	sandbox_destroy(sb);
	cur_sb = NULL;
}

/* A plain run in the same sandbox afterwards: the slot uid, no fd 3. */
static void test_plain_run_is_unchanged(void **state)
{
	struct sandbox *sb = make();
	unsigned peer_uid, harness_uid;

	(void)state;
	uids(sb, &peer_uid, &harness_uid);
	split_run(sb, "echo \"uid $(id -u)\"; (: <&3) 2>/dev/null || echo 'no fd 3'", NULL, &run_res);
	expect_line(&run_res, "uid %u", peer_uid);
	expect_line(&run_res, "no fd 3");
	assert_int_equal(run_res.status, RUN_OK);
	run_result_free(&run_res);
	sandbox_destroy(sb);
	cur_sb = NULL;
}

static int teardown(void **state)
{
	(void)state;
	sandbox_pool_drain();
	return 0;
}

/* After each test, also one a failed assertion left: its result's buffers
 * and its sandbox, so the failure is all the run reports. */
static int test_teardown(void **state)
{
	(void)state;
	run_result_free(&run_res);
	if (cur_sb)
		sandbox_destroy(cur_sb);
	cur_sb = NULL;
	return 0;
}

/* In vm mode, run from a directory where own_program() finds the agent. */
static void beside_agent(char **argv)
{
	const char *agent = getenv("PROCTOR_AGENT");
	char self[PATH_MAX], dir[] = "/tmp/test_split.XXXXXX", copy[PATH_MAX], link[PATH_MAX];

	if (!agent || getenv("SPLIT_BESIDE_AGENT"))
		return;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0 || !mkdtemp(dir))
		return;
	self[n] = '\0';
	snprintf(copy, sizeof(copy), "%s/test_split", dir);
	snprintf(link, sizeof(link), "%s/proctor-agent", dir);
	char cmd[3 * PATH_MAX];
	/* Copies, not links: the agent is opened without following links. */
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && cp '%s' '%s'", self, copy, agent, link);
	if (system(cmd) != 0)
		return;
	setenv("SPLIT_BESIDE_AGENT", dir, 1);
	execv(copy, argv);
}

int main(int argc, char **argv)
{
	(void)argc;
	const char *iso = getenv("SPLIT_ISOLATION");
	if (iso && strcmp(iso, "vm") == 0)
		beside_agent(argv);
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_channel_identity_and_status, test_teardown),
	    cmocka_unit_test_teardown(test_harness_files, test_teardown),
	    cmocka_unit_test_teardown(test_peer_cannot_see_or_kill_harness, test_teardown),
	    cmocka_unit_test_teardown(test_exec_failures_are_reported, test_teardown),
	    cmocka_unit_test_teardown(test_plain_run_is_unchanged, test_teardown),
	};
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	const char *tmp = getenv("SPLIT_BESIDE_AGENT");
	if (tmp)
		harness_rm_tree(tmp);
	return rc;
}
