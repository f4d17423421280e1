/*
 * The sandbox keeper (docs/sandbox-keeper.md): the real `proctor-service
 * sandbox-keeper`, spawned as serve spawns it (a socketpair end as
 * --ready-fd, this process as --parent) and driven over its socket with
 * service/sbxwire.c, in real jails: files in and out, execs with cwd,
 * stdin, env and a timeout that leaves nothing running, listings, paths
 * and links that try to leave the sandbox, the secret, the lease, the
 * exit statuses.  And sbxwire's framing on a socketpair.  Needs root.
 */
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>

#include "harness.h"
#include "jail/jail.h"
#include "sandbox.h"
#include "service/sbxwire.h"

#define SECRET	 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define DATA_MAX (64u << 20)

static char *state_dir;
static char service_bin[PATH_MAX];
static unsigned n_keepers;

struct keeper {
	pid_t pid;
	char sock[PATH_MAX];
	char log[PATH_MAX];
};

/* ---- driving a keeper ------------------------------------------------------ */

/* Spawn a keeper and hand it `create` (stolen; its secret, op and id
 * added); the ready answer's head is returned (the caller decrefs). */
static json_t *keeper_spawn(struct keeper *k, json_t *create)
{
	int sv[2];
	char parent[32], fdnum[16];
	struct err e;

	n_keepers++;
	snprintf(k->sock, sizeof(k->sock), "%s/service/sbx/t%u.sock", state_dir, n_keepers);
	snprintf(k->log, sizeof(k->log), "%s/keeper%u.log", state_dir, n_keepers);
	snprintf(parent, sizeof(parent), "%d", (int)getpid());
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFD, FD_CLOEXEC), 0);
	snprintf(fdnum, sizeof(fdnum), "%d", sv[1]);
	k->pid = fork();
	assert_true(k->pid >= 0);
	if (k->pid == 0) {
		int log = open(k->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (log >= 0)
			dup2(log, 2);
		execl(service_bin, "proctor-service", "sandbox-keeper", "--state-dir", state_dir,
		      "--socket", k->sock, "--parent", parent, "--ready-fd", fdnum, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	if (!json_object_get(create, "secret"))
		json_object_set_new(create, "secret", json_string(SECRET));
	json_object_set_new(create, "op", json_string("create"));
	json_object_set_new(create, "id", json_integer(n_keepers));
	if (sbx_send(sv[0], create, NULL, 0, &e) < 0)
		fail_msg("send the create frame: %s", e.msg);
	json_decref(create);
	json_t *answer;
	void *data;
	size_t len;
	if (sbx_recv(sv[0], &answer, &data, &len, 0, &e) < 0) {
		char *log = harness_slurp(k->log, 65536, NULL);
		fail_msg("the ready answer: %s (keeper's stderr: %s)", e.msg, log ? log : "");
	}
	close(sv[0]);
	return answer;
}

/* A keeper with a sandbox of the host's system tree, `extra` members
 * (stolen, may be NULL) over the defaults. */
static void keeper_start(struct keeper *k, json_t *extra)
{
	json_t *create =
	    json_pack("{s:s,s:i,s:i,s:i,s:i,s:i}", "image", "host", "vcpu", 1, "memory_mib", 256,
		      "disk_mib", 64, "lease_ms", 120000, "max_slots", 64);
	if (extra) {
		json_object_update(create, extra);
		json_decref(extra);
	}
	json_t *answer = keeper_spawn(k, create);
	struct err e;
	if (sbx_error_of(answer, &e) < 0)
		fail_msg("create: %s", e.msg);
	assert_true(json_is_true(json_object_get(answer, "ok")));
	json_decref(answer);
}

/* One call: `head` (stolen; the secret added unless it has one) and data;
 * the answer's head, its data in *ret_data and *ret_len when asked. */
static json_t *call(const struct keeper *k, json_t *head, const void *data, size_t len,
		    void **ret_data, size_t *ret_len)
{
	struct err e;
	int fd;
	json_t *answer;
	void *adata;
	size_t alen;

	if (!json_object_get(head, "secret"))
		json_object_set_new(head, "secret", json_string(SECRET));
	if (sbx_connect(k->sock, &fd, &e) < 0)
		fail_msg("%s", e.msg);
	/* A refused send may still have its answer waiting (sbxwire.h). */
	(void)sbx_send(fd, head, data, len, &e);
	json_decref(head);
	if (sbx_recv(fd, &answer, &adata, &alen, DATA_MAX, &e) < 0)
		fail_msg("the answer: %s", e.msg);
	close(fd);
	if (ret_data) {
		*ret_data = adata;
		*ret_len = alen;
	} else {
		free(adata);
	}
	return answer;
}

/* The kind of an error answer, or -1 when the answer is not one. */
static int error_kind(json_t *answer, char *msg, size_t cap)
{
	struct err e;

	if (sbx_error_of(answer, &e) == 0)
		return -1;
	if (msg)
		snprintf(msg, cap, "%s", e.msg);
	return (int)e.kind;
}

static void expect_ok(json_t *answer, const char *what)
{
	struct err e;

	if (sbx_error_of(answer, &e) < 0)
		fail_msg("%s: %s (kind %d)", what, e.msg, (int)e.kind);
}

static void expect_error(json_t *answer, enum err_kind kind, const char *what)
{
	char msg[1024];
	int got = error_kind(answer, msg, sizeof(msg));

	if (got != (int)kind)
		fail_msg("%s: expected error kind %d, got %d (%s)", what, (int)kind, got,
			 got < 0 ? "an answer" : msg);
	json_decref(answer);
}

/* exec of `argv` (a JSON array, stolen) with `extra` members (stolen, may be NULL). */
static json_t *exec_argv(const struct keeper *k, json_t *argv, json_t *extra, const void *in,
			 size_t in_len)
{
	json_t *head = json_pack("{s:s,s:o}", "op", "exec", "argv", argv);
	if (extra) {
		json_object_update(head, extra);
		json_decref(extra);
	}
	if (in)
		json_object_set_new(head, "has_stdin", json_true());
	return call(k, head, in, in_len, NULL, NULL);
}

static json_t *exec_sh(const struct keeper *k, const char *script, json_t *extra)
{
	return exec_argv(k, json_pack("[s,s,s]", "/bin/sh", "-c", script), extra, NULL, 0);
}

static const char *jget_str(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	if (!s)
		fail_msg("no string '%s' in the answer", key);
	return s;
}

/* An exec that must end `ok`; its stdout. */
static char *exec_ok(const struct keeper *k, const char *script, json_t *extra)
{
	json_t *a = exec_sh(k, script, extra);
	expect_ok(a, script);
	const char *msg = json_string_value(json_object_get(a, "message"));
	if (strcmp(jget_str(a, "status"), "ok") != 0)
		fail_msg("'%s': status %s: %s (stderr: %s)", script, jget_str(a, "status"),
			 msg ? msg : "", jget_str(a, "stderr"));
	char *out = strdup(jget_str(a, "stdout"));
	json_decref(a);
	return out;
}

static void write_file(const struct keeper *k, const char *path, const char *text, bool exec)
{
	json_t *a =
	    call(k, json_pack("{s:s,s:s,s:b}", "op", "write", "path", path, "executable", exec),
		 text, strlen(text), NULL, NULL);
	expect_ok(a, path);
	assert_int_equal(json_integer_value(json_object_get(a, "size")), (json_int_t)strlen(text));
	json_decref(a);
}

static json_t *read_file(const struct keeper *k, const char *path, void **data, size_t *len)
{
	return call(k, json_pack("{s:s,s:s}", "op", "read", "path", path), NULL, 0, data, len);
}

/* Wait for the keeper to exit; its status (128+N for signal N). */
static int keeper_wait(struct keeper *k, long long timeout_ms)
{
	int status = harness_wait_child(k->pid, timeout_ms);
	k->pid = 0;
	return status;
}

static void keeper_destroy(struct keeper *k)
{
	json_t *a = call(k, json_pack("{s:s}", "op", "destroy"), NULL, 0, NULL, NULL);
	expect_ok(a, "destroy");
	assert_true(json_is_true(json_object_get(a, "ok")));
	json_decref(a);
	assert_int_equal(keeper_wait(k, 10000), 0);
	struct stat st;
	assert_int_equal(lstat(k->sock, &st), -1);
}

/* ---- fixtures ------------------------------------------------------------------ */

static int group_setup(void **state)
{
	const char *proctor = getenv("PROCTOR");
	struct err e;

	(void)state;
	harness_require_root("the sandbox keeper");
	harness_require(jail_ops.probe(&e) == 0, "the sandbox keeper", e.msg);
	if (!proctor)
		fail_msg("PROCTOR is not set");
	/* proctor-service is built beside proctor. */
	snprintf(service_bin, sizeof(service_bin), "%s", proctor);
	char *slash = strrchr(service_bin, '/');
	snprintf(slash ? slash + 1 : service_bin,
		 sizeof(service_bin) - (size_t)(slash ? slash + 1 - service_bin : 0),
		 "proctor-service");
	if (access(service_bin, X_OK) < 0)
		fail_msg("no %s: %s", service_bin, strerror(errno));
	state_dir = harness_tmpdir();
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	if (state_dir) {
		harness_assert_no_mount_below(state_dir);
		harness_rm_tree(state_dir);
		free(state_dir);
	}
	return 0;
}

static int setup(void **state)
{
	struct keeper *k = calloc(1, sizeof(*k));

	keeper_start(k, NULL);
	*state = k;
	return 0;
}

static int teardown(void **state)
{
	struct keeper *k = *state;

	if (k->pid > 0)
		keeper_destroy(k);
	free(k);
	harness_assert_clean();
	return 0;
}

/* ---- the tests -------------------------------------------------------------------- */

static void test_keeper_writes_a_file_cat_reads(void **state)
{
	struct keeper *k = *state;

	write_file(k, "/work/hello.txt", "hello, sandbox\n", false);
	char *out = exec_ok(k, "cat /work/hello.txt; stat -c '%a %U' /work/hello.txt", NULL);
	assert_string_equal(out, "hello, sandbox\n644 student\n" /* the sandbox's name for it */);
	free(out);
}

static void test_keeper_writes_an_executable_file(void **state)
{
	struct keeper *k = *state;

	write_file(k, "tools/run.sh", "#!/bin/sh\necho ran \"$@\"\n", true);
	json_t *a = exec_argv(k, json_pack("[s,s]", "/work/tools/run.sh", "it"), NULL, NULL, 0);
	expect_ok(a, "run.sh");
	assert_string_equal(jget_str(a, "status"), "ok");
	assert_string_equal(jget_str(a, "stdout"), "ran it\n");
	json_decref(a);
}

static void test_keeper_exec_runs_in_cwd(void **state)
{
	struct keeper *k = *state;

	free(exec_ok(k, "mkdir -p /work/sub/deeper", NULL));
	char *out = exec_ok(k, "pwd; echo $PWD; ls", json_pack("{s:s}", "cwd", "/work/sub"));
	assert_string_equal(out, "/work/sub\n/work/sub\ndeeper\n");
	free(out);
	out = exec_ok(k, "pwd", json_pack("{s:s}", "cwd", "sub/deeper"));
	assert_string_equal(out, "/work/sub/deeper\n");
	free(out);
	out = exec_ok(k, "pwd", json_pack("{s:n}", "cwd"));
	assert_string_equal(out, "/work\n");
	free(out);
	/* A directory of the system tree is in the sandbox's view too. */
	out = exec_ok(k, "pwd", json_pack("{s:s}", "cwd", "/usr"));
	assert_string_equal(out, "/usr\n");
	free(out);

	/* A directory that is not there is the run's failure, not Proctor's. */
	json_t *a = exec_sh(k, "pwd", json_pack("{s:s}", "cwd", "/work/nowhere"));
	expect_ok(a, "cwd /work/nowhere");
	assert_string_equal(jget_str(a, "status"), "nonzero_exit");
	assert_int_equal(json_integer_value(json_object_get(a, "exit_code")), 127);
	assert_non_null(
	    strstr(jget_str(a, "message"), "cannot change directory to '/work/nowhere'"));
	json_decref(a);
	/* Nor one the program may not enter: root's 0700 /root (as the slot's uid). */
	a = exec_sh(k, "pwd", json_pack("{s:s}", "cwd", "/root"));
	expect_ok(a, "cwd /root");
	assert_string_equal(jget_str(a, "status"), "nonzero_exit");
	json_decref(a);
}

/* Whether a process with exactly this command line runs on the host. */
static bool host_runs(const char *cmdline, size_t len)
{
	char path[64], buf[256];
	bool found = false;
	DIR *d = opendir("/proc");
	struct dirent *de;

	assert_non_null(d);
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf));
		close(fd);
		found = n == (ssize_t)len && memcmp(buf, cmdline, len) == 0;
	}
	closedir(d);
	return found;
}

static void test_keeper_timeout_leaves_nothing_running(void **state)
{
	struct keeper *k = *state;
	static const char sleeper[] = "sleep\0004242.5";

	long long t0 = harness_now_ms();
	json_t *a = exec_sh(k, "sleep 4242.5 & echo started; sleep 4242.5",
			    json_pack("{s:i}", "timeout_ms", 1000));
	long long took = harness_now_ms() - t0;
	expect_ok(a, "the timed-out exec");
	assert_string_equal(jget_str(a, "status"), "timeout");
	assert_string_equal(jget_str(a, "stdout"), "started\n");
	json_t *hits = json_object_get(a, "limits_hit");
	assert_int_equal(json_array_size(hits), 1);
	assert_string_equal(json_string_value(json_array_get(hits, 0)), "wall");
	assert_true(json_is_false(json_object_get(a, "lease_ended")));
	json_decref(a);
	assert_true(took >= 1000 && took < 10000);

	/* Neither sleep outlived the exec: not on the host ... */
	assert_false(host_runs(sleeper, sizeof(sleeper)));
	/* ... nor in the sandbox, whose next exec sees itself alone. */
	char *out = exec_ok(k, "ps -eo comm= | grep -c sleep; ls /proc | grep -c '^[0-9]'", NULL);
	assert_string_equal(out, "0\n3\n" /* sh, ls and grep */);
	free(out);
}

static void test_keeper_exec_reads_stdin(void **state)
{
	struct keeper *k = *state;
	static const char text[] = "line one\nline two\n\0and after a NUL";
	static const char bytes[] = "\xff\xfe\x00\x01";

	/* Text with a NUL goes in and comes back out as it was. */
	json_t *a = exec_argv(k, json_pack("[s]", "cat"), NULL, text, sizeof(text) - 1);
	expect_ok(a, "cat");
	json_t *out_json = json_object_get(a, "stdout");
	assert_int_equal(json_string_length(out_json), sizeof(text) - 1);
	assert_memory_equal(json_string_value(out_json), text, sizeof(text) - 1);
	json_decref(a);
	/* Bytes that are not text arrive whole. */
	a = exec_argv(k, json_pack("[s,s]", "wc", "-c"), json_pack("{s:s}", "cwd", "/tmp"), bytes,
		      sizeof(bytes) - 1);
	expect_ok(a, "wc -c");
	assert_string_equal(jget_str(a, "stdout"), "4\n");
	json_decref(a);
	/* The program cannot write its stdin (a sealed memfd). */
	a = exec_argv(k, json_pack("[s,s,s]", "/bin/sh", "-c", "echo x >&0 || echo refused"), NULL,
		      "in", 2);
	expect_ok(a, "write to stdin");
	assert_non_null(strstr(jget_str(a, "stdout"), "refused"));
	json_decref(a);
	/* No stdin: empty, not the keeper's. */
	char *out = exec_ok(k, "wc -c", NULL);
	assert_string_equal(out, "0\n");
	free(out);
}

static void test_keeper_exec_env_over_create_env(void **state)
{
	(void)state;
	struct keeper k = {0};

	keeper_start(&k, json_pack("{s:{s:s,s:s}}", "env", "COURSE", "cs101", "SHARED", "create"));
	char *out = exec_ok(&k, "echo $COURSE $SHARED $ONLY $HOME",
			    json_pack("{s:{s:s,s:s}}", "env", "SHARED", "exec", "ONLY", "x"));
	assert_string_equal(out, "cs101 exec x /work\n");
	free(out);
	out = exec_ok(&k, "echo $COURSE $SHARED ${ONLY:-unset}", NULL);
	assert_string_equal(out, "cs101 create unset\n");
	free(out);
	expect_error(exec_sh(&k, "true", json_pack("{s:{s:s}}", "env", "1BAD", "x")), ERR_INPUT,
		     "a bad variable name");
	keeper_destroy(&k);
}

static void test_keeper_reads_what_an_exec_wrote(void **state)
{
	struct keeper *k = *state;
	void *data;
	size_t len;

	free(exec_ok(k,
		     "printf 'out\\000bin' > /work/o.bin; chmod 700 /work/o.bin; "
		     "mkdir -p /tmp/t && echo tmp > /tmp/t/x",
		     NULL));
	json_t *a = read_file(k, "/work/o.bin", &data, &len);
	expect_ok(a, "read /work/o.bin");
	assert_int_equal(len, 7);
	assert_memory_equal(data, "out\0bin", 7);
	assert_int_equal(json_integer_value(json_object_get(a, "size")), 7);
	assert_int_equal(json_integer_value(json_object_get(a, "mode")), 0700);
	assert_string_equal(jget_str(a, "path"), "/work/o.bin");
	json_decref(a);
	free(data);
	a = read_file(k, "/tmp/t/x", &data, &len);
	expect_ok(a, "read /tmp/t/x");
	assert_int_equal(len, 4);
	assert_memory_equal(data, "tmp\n", 4);
	json_decref(a);
	free(data);
	/* An empty file is one too. */
	free(exec_ok(k, ": > /work/empty", NULL));
	a = read_file(k, "empty", &data, &len);
	expect_ok(a, "read empty");
	assert_int_equal(len, 0);
	json_decref(a);
	free(data);
}

static void test_keeper_lists_a_directory(void **state)
{
	struct keeper *k = *state;

	free(exec_ok(k,
		     "mkdir -p /work/d/sub && printf abc > /work/d/f && chmod 640 /work/d/f && "
		     "ln -s /etc/passwd /work/d/l && mkfifo /work/d/p && "
		     "touch -d @1700000000 /work/d/f",
		     NULL));
	json_t *a =
	    call(k, json_pack("{s:s,s:s}", "op", "list", "path", "/work/d"), NULL, 0, NULL, NULL);
	expect_ok(a, "list /work/d");
	assert_true(json_is_false(json_object_get(a, "truncated")));
	json_t *v = json_object_get(a, "entries");
	static const char *const names[] = {"f", "l", "p", "sub"};
	static const char *const types[] = {"file", "link", "other", "dir"};
	assert_int_equal(json_array_size(v), 4);
	for (size_t i = 0; i < 4; i++) {
		json_t *x = json_array_get(v, i);
		assert_string_equal(jget_str(x, "name"), names[i]);
		assert_string_equal(jget_str(x, "type"), types[i]);
	}
	json_t *f = json_array_get(v, 0);
	assert_int_equal(json_integer_value(json_object_get(f, "size")), 3);
	assert_int_equal(json_integer_value(json_object_get(f, "mode")), 0640);
	assert_int_equal(json_integer_value(json_object_get(f, "mtime_ms")), 1700000000000LL);
	/* The link is described, not followed: its size is its target's name's. */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(v, 1), "size")),
			 (json_int_t)strlen("/etc/passwd"));
	json_decref(a);

	expect_error(
	    call(k, json_pack("{s:s,s:s}", "op", "list", "path", "/work/d/f"), NULL, 0, NULL, NULL),
	    ERR_INPUT, "list of a file");
	expect_error(call(k, json_pack("{s:s,s:s}", "op", "list", "path", "/work/nowhere"), NULL, 0,
			  NULL, NULL),
		     ERR_NOT_FOUND, "list of nothing");
	free(exec_ok(k, "ln -s /etc /work/etc", NULL));
	expect_error(
	    call(k, json_pack("{s:s,s:s}", "op", "list", "path", "/work/etc"), NULL, 0, NULL, NULL),
	    ERR_INPUT, "list through a symlink");
	/* The top of the tree lists too. */
	a = call(k, json_pack("{s:s,s:s}", "op", "list", "path", "/work"), NULL, 0, NULL, NULL);
	expect_ok(a, "list /work");
	assert_int_equal(json_array_size(json_object_get(a, "entries")), 2); /* d, etc */
	json_decref(a);
}

static void test_keeper_refuses_paths_leaving_the_tree(void **state)
{
	struct keeper *k = *state;

	expect_error(read_file(k, "/work/../etc/passwd", NULL, NULL), ERR_INPUT, "read with ..");
	expect_error(read_file(k, "/etc/passwd", NULL, NULL), ERR_INPUT, "read of /etc/passwd");
	expect_error(call(k, json_pack("{s:s,s:s}", "op", "write", "path", "/work/a/../../x"), "x",
			  1, NULL, NULL),
		     ERR_INPUT, "write with ..");
	expect_error(
	    call(k, json_pack("{s:s,s:s}", "op", "list", "path", "/work/.."), NULL, 0, NULL, NULL),
	    ERR_INPUT, "list of /work/..");
}

static void test_keeper_refuses_planted_links_and_specials(void **state)
{
	struct keeper *k = *state;
	struct stat st;

	free(exec_ok(k,
		     "ln -s /etc/passwd /work/pw; ln -s /etc /work/etc; mkfifo /work/fifo; "
		     "mkdir /work/dir",
		     NULL));
	expect_error(read_file(k, "/work/pw", NULL, NULL), ERR_INPUT, "read of a planted link");
	expect_error(read_file(k, "/work/etc/passwd", NULL, NULL), ERR_INPUT,
		     "read through a planted link");
	expect_error(read_file(k, "/work/fifo", NULL, NULL), ERR_INPUT, "read of a FIFO");
	expect_error(read_file(k, "/work/dir", NULL, NULL), ERR_INPUT, "read of a directory");
	expect_error(read_file(k, "/work", NULL, NULL), ERR_INPUT, "read of /work");
	/* A write through the link lands nowhere on the host. */
	assert_int_equal(lstat("/etc/proctor-keeper-test", &st), -1);
	expect_error(
	    call(k, json_pack("{s:s,s:s}", "op", "write", "path", "/work/etc/proctor-keeper-test"),
		 "x", 1, NULL, NULL),
	    ERR_INPUT, "write through a planted link");
	assert_int_equal(lstat("/etc/proctor-keeper-test", &st), -1);
	/* A write over the link replaces the link, never its target. */
	write_file(k, "/work/pw", "mine\n", false);
	char *out = exec_ok(k, "test -L /work/pw || cat /work/pw", NULL);
	assert_string_equal(out, "mine\n");
	free(out);
	/* A write where a directory is. */
	expect_error(
	    call(k, json_pack("{s:s,s:s}", "op", "write", "path", "/work/dir"), "x", 1, NULL, NULL),
	    ERR_INPUT, "write over a directory");
}

static void test_keeper_missing_file_is_not_found(void **state)
{
	struct keeper *k = *state;

	expect_error(read_file(k, "/work/nope", NULL, NULL), ERR_NOT_FOUND, "read of nothing");
	expect_error(read_file(k, "/work/no/such/dir/f", NULL, NULL), ERR_NOT_FOUND,
		     "read below nothing");
	write_file(k, "/work/file", "x", false);
	expect_error(read_file(k, "/work/file/below", NULL, NULL), ERR_NOT_FOUND,
		     "read below a file");
}

static void test_keeper_refuses_a_wrong_secret(void **state)
{
	struct keeper *k = *state;

	expect_error(
	    call(k,
		 json_pack("{s:s,s:s,s:s}", "op", "read", "path", "/work/x", "secret",
			   "0000000000000000000000000000000000000000000000000000000000000000"),
		 NULL, 0, NULL, NULL),
	    ERR_UNAUTHORIZED, "a wrong secret");
	expect_error(
	    call(k, json_pack("{s:s,s:[s],s:s}", "op", "exec", "argv", "true", "secret", "short"),
		 NULL, 0, NULL, NULL),
	    ERR_UNAUTHORIZED, "a short secret");
	expect_error(call(k, json_pack("{s:s,s:s,s:i}", "op", "destroy", "secret", "", "x", 1),
			  NULL, 0, NULL, NULL),
		     ERR_UNAUTHORIZED, "an empty secret");
	/* None of them did anything: the sandbox still answers. */
	char *out = exec_ok(k, "echo alive", NULL);
	assert_string_equal(out, "alive\n");
	free(out);
	expect_error(call(k, json_pack("{s:s}", "op", "reboot"), NULL, 0, NULL, NULL), ERR_INPUT,
		     "an unknown op");
	expect_error(
	    call(k, json_pack("{s:s,s:s}", "op", "exec", "argv", "true"), NULL, 0, NULL, NULL),
	    ERR_INPUT, "argv as a string");
}

static void test_keeper_refuses_data_past_the_disk(void **state)
{
	(void)state;
	struct keeper k = {0};
	size_t big = (8u << 20) + 1;
	char *data = calloc(1, big);

	keeper_start(&k, json_pack("{s:i}", "disk_mib", 8));
	expect_error(call(&k, json_pack("{s:s,s:s}", "op", "write", "path", "/work/big"), data, big,
			  NULL, NULL),
		     ERR_TOO_LARGE, "a file larger than the disk");
	/* What fits the frame arrives; a tree too full for it refuses it as
	 * the caller's. */
	json_t *a = call(&k, json_pack("{s:s,s:s}", "op", "write", "path", "/work/a"), data,
			 6u << 20, NULL, NULL);
	expect_ok(a, "6 MiB");
	json_decref(a);
	expect_error(call(&k, json_pack("{s:s,s:s}", "op", "write", "path", "/work/b"), data,
			  6u << 20, NULL, NULL),
		     ERR_INPUT, "6 MiB more on an 8 MiB disk");
	free(data);
	keeper_destroy(&k);
}

static void test_keeper_lease_end_destroys_it(void **state)
{
	(void)state;
	struct keeper k = {0};
	struct stat st;

	keeper_start(&k, json_pack("{s:i}", "lease_ms", 2000));
	long long t0 = harness_now_ms();
	/* An exec longer than the lease is cut at its end, and says so. */
	json_t *a = exec_sh(&k, "sleep 30", json_pack("{s:i}", "timeout_ms", 60000));
	expect_ok(a, "an exec past the lease");
	assert_string_equal(jget_str(a, "status"), "timeout");
	assert_true(json_is_true(json_object_get(a, "lease_ended")));
	json_decref(a);
	assert_int_equal(keeper_wait(&k, 10000), 10);
	assert_true(harness_now_ms() - t0 < 6000);
	assert_int_equal(lstat(k.sock, &st), -1);
	assert_int_equal(errno, ENOENT);
	harness_assert_clean();

	/* Idle, it ends on its own too. */
	keeper_start(&k, json_pack("{s:i}", "lease_ms", 1000));
	assert_int_equal(keeper_wait(&k, 10000), 10);
	assert_int_equal(lstat(k.sock, &st), -1);
}

static void test_keeper_create_failures_exit_11(void **state)
{
	(void)state;
	struct keeper k = {0}, first = {0};
	struct stat st;

	json_t *create = json_pack("{s:s,s:i,s:i,s:i}", "image", "nosuch@1", "memory_mib", 256,
				   "disk_mib", 64, "lease_ms", 60000);
	json_t *a = keeper_spawn(&k, create);
	expect_error(a, ERR_NOT_FOUND, "an image that is not there");
	assert_int_equal(keeper_wait(&k, 10000), 11);
	assert_int_equal(lstat(k.sock, &st), -1);

	create = json_pack("{s:s,s:i,s:i,s:i,s:s}", "image", "host", "memory_mib", 256, "disk_mib",
			   64, "lease_ms", 60000, "secret", "not hex");
	expect_error(keeper_spawn(&k, create), ERR_INPUT, "a bad secret");
	assert_int_equal(keeper_wait(&k, 10000), 11);

	/* A host with no free slot fails the create at once (slot_no_wait).
	 * Slots are host-wide: the host is full for max_slots m when the
	 * first keeper got the last of m. */
	int m = 1;
	for (;; m++) {
		create = json_pack("{s:s,s:i,s:i,s:i,s:i}", "image", "host", "memory_mib", 256,
				   "disk_mib", 64, "lease_ms", 60000, "max_slots", m);
		json_t *a1 = keeper_spawn(&first, create);
		struct err e;
		if (sbx_error_of(a1, &e) == 0) {
			json_decref(a1);
			break;
		}
		json_decref(a1);
		assert_int_equal(e.kind, ERR_BUSY);
		assert_int_equal(keeper_wait(&first, 10000), 11);
		assert_true(m < 16);
	}
	long long t0 = harness_now_ms();
	create = json_pack("{s:s,s:i,s:i,s:i,s:i}", "image", "host", "memory_mib", 256, "disk_mib",
			   64, "lease_ms", 60000, "max_slots", m);
	expect_error(keeper_spawn(&k, create), ERR_BUSY, "no free slot");
	assert_int_equal(keeper_wait(&k, 10000), 11);
	assert_true(harness_now_ms() - t0 < 3000);
	keeper_destroy(&first);
}

static void test_keeper_dies_with_its_parent(void **state)
{
	(void)state;
	int report[2];
	struct stat st;

	/* A parent of its own, killed, takes the keeper with it (and the
	 * jail with the keeper). */
	assert_int_equal(pipe(report), 0);
	pid_t mid = fork();
	assert_true(mid >= 0);
	if (mid == 0) {
		struct keeper k = {0};
		close(report[0]);
		keeper_start(&k, NULL);
		(void)!write(report[1], &k, sizeof(k));
		pause();
		_exit(0);
	}
	close(report[1]);
	struct keeper k;
	assert_int_equal(read(report[0], &k, sizeof(k)), (ssize_t)sizeof(k));
	close(report[0]);
	assert_int_equal(kill(mid, SIGKILL), 0);
	waitpid(mid, NULL, 0);
	for (int i = 0; i < 100 && kill(k.pid, 0) == 0; i++)
		harness_sleep_ms(50);
	assert_int_equal(kill(k.pid, 0), -1);
	harness_assert_clean();
	/* serve removes a dead keeper's socket; here, the test does. */
	if (lstat(k.sock, &st) == 0)
		unlink(k.sock);
}

/* ---- sbxwire's framing ------------------------------------------------------------------ */

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void send_raw(int fd, const char *magic, uint32_t hlen, uint64_t dlen, const char *body,
		     size_t blen)
{
	unsigned char p[16];

	memcpy(p, magic, 4);
	for (int i = 0; i < 4; i++)
		p[4 + i] = (unsigned char)(hlen >> (24 - 8 * i));
	for (int i = 0; i < 8; i++)
		p[8 + i] = (unsigned char)(dlen >> (56 - 8 * i));
	assert_int_equal(write(fd, p, sizeof(p)), 16);
	if (blen)
		assert_int_equal(write(fd, body, blen), (ssize_t)blen);
}

static int recv_kind(int fd, size_t data_max, char *msg, size_t cap)
{
	json_t *h;
	void *d;
	size_t n;
	struct err e;

	if (sbx_recv(fd, &h, &d, &n, data_max, &e) == 0) {
		json_decref(h);
		free(d);
		return -1;
	}
	snprintf(msg, cap, "%s", e.msg);
	return (int)e.kind;
}

static void test_sbxwire_round_trip(void **state)
{
	int sv[2];
	struct err e;
	json_t *h;
	void *d;
	size_t n;

	(void)state;
	pair(sv);
	json_t *head = json_pack("{s:s,s:i}", "op", "write", "n", 42);
	assert_int_equal(sbx_send(sv[0], head, "abc\0def", 7, &e), 0);
	assert_int_equal(sbx_send(sv[0], head, NULL, 0, &e), 0);
	assert_int_equal(sbx_recv(sv[1], &h, &d, &n, 7, &e), 0);
	assert_true(json_equal(h, head));
	assert_int_equal(n, 7);
	assert_memory_equal(d, "abc\0def", 7);
	json_decref(h);
	free(d);
	assert_int_equal(sbx_recv(sv[1], &h, &d, &n, 0, &e), 0);
	assert_null(d);
	assert_int_equal(n, 0);
	assert_int_equal(sbx_error_of(h, &e), 0);
	json_decref(h);
	/* A caller that wants the head alone. */
	assert_int_equal(sbx_send(sv[0], head, "xyz", 3, &e), 0);
	assert_int_equal(sbx_recv(sv[1], &h, NULL, NULL, 3, &e), 0);
	assert_true(json_equal(h, head));
	json_decref(h);
	json_decref(head);
	close(sv[0]);
	close(sv[1]);
}

static void test_sbxwire_error_head_keeps_its_kind(void **state)
{
	int sv[2];
	struct err e, back;
	json_t *h;
	void *d;
	size_t n;

	(void)state;
	pair(sv);
	err_setk(&e, ERR_NOT_FOUND, 0, "'/work/x\xff' is not there");
	assert_int_equal(sbx_send_error(sv[0], &e), 0);
	assert_int_equal(sbx_recv(sv[1], &h, &d, &n, 0, &back), 0);
	assert_int_equal(sbx_error_of(h, &back), -1);
	assert_int_equal(back.kind, ERR_NOT_FOUND);
	assert_string_equal(back.msg, "'/work/x\xef\xbf\xbd' is not there");
	json_decref(h);
	/* A kind the reader does not know is ours. */
	h = json_pack("{s:{s:i,s:s}}", "error", "kind", 999, "message", "?");
	assert_int_equal(sbx_error_of(h, &back), -1);
	assert_int_equal(back.kind, ERR_INTERNAL);
	json_decref(h);
	close(sv[0]);
	close(sv[1]);
}

static void test_sbxwire_refuses_bad_frames(void **state)
{
	int sv[2];
	char msg[1024];

	(void)state;
	/* Bad magic. */
	pair(sv);
	send_raw(sv[0], "HTTP", 2, 0, "{}", 2);
	assert_int_equal(recv_kind(sv[1], 0, msg, sizeof(msg)), ERR_INTERNAL);
	assert_non_null(strstr(msg, "magic"));
	close(sv[0]);
	close(sv[1]);
	/* A head past 16 MiB: refused from the prefix, nothing allocated. */
	pair(sv);
	send_raw(sv[0], SBX_MAGIC, SBX_HEAD_MAX + 1, 0, NULL, 0);
	assert_int_equal(recv_kind(sv[1], 0, msg, sizeof(msg)), ERR_TOO_LARGE);
	close(sv[0]);
	close(sv[1]);
	/* Data past what the receiver allows. */
	pair(sv);
	send_raw(sv[0], SBX_MAGIC, 2, 11, "{}", 2);
	assert_int_equal(recv_kind(sv[1], 10, msg, sizeof(msg)), ERR_TOO_LARGE);
	close(sv[0]);
	close(sv[1]);
	/* Truncated: the head, then the data, cut by the sender's close. */
	pair(sv);
	send_raw(sv[0], SBX_MAGIC, 100, 0, "{\"op\":", 6);
	close(sv[0]);
	assert_int_equal(recv_kind(sv[1], 0, msg, sizeof(msg)), ERR_INTERNAL);
	assert_non_null(strstr(msg, "ended after 6 of 100"));
	close(sv[1]);
	pair(sv);
	send_raw(sv[0], SBX_MAGIC, 2, 5, "{}ab", 4);
	close(sv[0]);
	assert_int_equal(recv_kind(sv[1], 5, msg, sizeof(msg)), ERR_INTERNAL);
	close(sv[1]);
	/* A prefix cut short, and nothing at all. */
	pair(sv);
	assert_int_equal(write(sv[0], "PSX1\0\0", 6), 6);
	close(sv[0]);
	assert_int_equal(recv_kind(sv[1], 0, msg, sizeof(msg)), ERR_INTERNAL);
	close(sv[1]);
	pair(sv);
	close(sv[0]);
	assert_int_equal(recv_kind(sv[1], 0, msg, sizeof(msg)), ERR_INTERNAL);
	close(sv[1]);
	/* A head that is not a JSON object, or nests too deep. */
	static const char *const heads[] = {"[1]", "\"s\"", "{\"a\":", "{\"a\":1,\"a\":2}",
					    "{\"a\":[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]}"};
	for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		pair(sv);
		send_raw(sv[0], SBX_MAGIC, (uint32_t)strlen(heads[i]), 0, heads[i],
			 strlen(heads[i]));
		assert_int_equal(recv_kind(sv[1], 0, msg, sizeof(msg)), ERR_INTERNAL);
		close(sv[0]);
		close(sv[1]);
	}
}

static void test_sbxwire_paths_past_sun_path(void **state)
{
	char path[200];
	struct err e;
	int fd;

	(void)state;
	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	assert_int_equal(sbx_listen(path, &fd, &e), -1);
	assert_non_null(strstr(e.msg, "AF_UNIX path holds"));
	assert_int_equal(sbx_connect(path, &fd, &e), -1);
	assert_non_null(strstr(e.msg, "AF_UNIX path holds"));
}

int main(void)
{
	const struct CMUnitTest wire[] = {
	    cmocka_unit_test(test_sbxwire_round_trip),
	    cmocka_unit_test(test_sbxwire_error_head_keeps_its_kind),
	    cmocka_unit_test(test_sbxwire_refuses_bad_frames),
	    cmocka_unit_test(test_sbxwire_paths_past_sun_path),
	};
	const struct CMUnitTest keeper[] = {
	    cmocka_unit_test_setup_teardown(test_keeper_writes_a_file_cat_reads, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keeper_writes_an_executable_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keeper_exec_runs_in_cwd, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keeper_timeout_leaves_nothing_running, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_keeper_exec_reads_stdin, setup, teardown),
	    cmocka_unit_test(test_keeper_exec_env_over_create_env),
	    cmocka_unit_test_setup_teardown(test_keeper_reads_what_an_exec_wrote, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keeper_lists_a_directory, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keeper_refuses_paths_leaving_the_tree, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_keeper_refuses_planted_links_and_specials, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_keeper_missing_file_is_not_found, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_keeper_refuses_a_wrong_secret, setup, teardown),
	    cmocka_unit_test(test_keeper_refuses_data_past_the_disk),
	    cmocka_unit_test(test_keeper_lease_end_destroys_it),
	    cmocka_unit_test(test_keeper_create_failures_exit_11),
	    cmocka_unit_test(test_keeper_dies_with_its_parent),
	};
	int failed = cmocka_run_group_tests_name("sbxwire", wire, NULL, NULL);
	return failed + cmocka_run_group_tests_name("keeper", keeper, group_setup, group_teardown);
}
