/* Test harness: run the real proctor binary, check what it left behind; helpers for every suite. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

extern char **environ;

/* Slot uids: 1600000000 + slot, slot < 256 (the largest --slots), and the
 * microVM's QEMU uids 1600000000 + 256 + slot (src/vm/vm.h). */
#define SLOT_UID_MIN 1600000000u
#define SLOT_UID_END (1600000000u + 512)

/* What we keep of one stream of proctor's; the rest is read and dropped so
 * that a runaway proctor can neither block on a full pipe nor eat memory. */
#define CAPTURE_MAX (16 * 1024 * 1024)

/* How long harness_assert_clean() waits for the kernel to finish teardown. */
#define CLEAN_WAIT_MS 2000

struct capture {
	int fd;
	char *buf;
	size_t len;
	size_t cap;
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q) {
		fail_msg("out of memory (%zu bytes)", n);
	}
	return q;
}

/*
 * The buffers of every capture and proc_out not freed yet.  A failing
 * assertion leaves its test by longjmp, past the proc_out_free() at its
 * end; held here they stay reachable, so LeakSanitizer reports nothing
 * and the failure is all the run says.  (Untracked past LIVE_MAX.)
 */
#define LIVE_MAX 256
static void *live[LIVE_MAX];

static void live_set(void *old, void *now)
{
	for (size_t i = 0; i < LIVE_MAX; i++)
		if (live[i] == old) {
			live[i] = now;
			return;
		}
}

static void live_add(void *p)
{
	if (p)
		live_set(NULL, p);
}

static void live_drop(void *p)
{
	if (p)
		live_set(p, NULL);
}

/* "a/b" into buf; false if it does not fit. */
static bool join_path(char *buf, size_t n, const char *a, const char *b)
{
	int r = snprintf(buf, n, "%s/%s", a, b);
	return r >= 0 && (size_t)r < n;
}

const char *harness_proctor(void)
{
	const char *p = getenv("PROCTOR");
	if (!p || !*p) {
		fail_msg("PROCTOR is not set (run the suite through `meson test`)");
	}
	return p;
}

const char *harness_probe(void)
{
	const char *p = getenv("PROBE");
	if (!p || !*p) {
		fail_msg("PROBE is not set (run the suite through `meson test`)");
	}
	return p;
}

bool harness_can_skip(void)
{
	const char *v = getenv("PROCTOR_MUST_WORK");
	return !(v && strcmp(v, "1") == 0);
}

void harness_require(bool ok, const char *what, const char *why)
{
	if (ok)
		return;
	if (harness_can_skip()) {
		print_message("skipping: %s: %s\n", what, why);
		skip();
	}
	fail_msg("%s cannot work here, but PROCTOR_MUST_WORK=1 says it must: %s", what, why);
}

void harness_require_root(const char *what)
{
	harness_require(geteuid() == 0, what, "not root");
}

int harness_setup_root(void **state)
{
	(void)state;
	harness_require_root("this suite");
	return 0;
}

bool harness_has_cap(int cap)
{
	char line[256];
	unsigned long long eff = 0;
	FILE *f = fopen("/proc/self/status", "re");

	assert_non_null(f);
	while (fgets(line, sizeof line, f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return (eff >> cap) & 1;
}

/* Read once from c->fd.  Returns 1 after data, 0 at EOF or on an error,
 * -1 when nothing is there yet (EAGAIN on a non-blocking fd). */
static int capture_read(struct capture *c)
{
	char tmp[65536];
	ssize_t n;
	do
		n = read(c->fd, tmp, sizeof tmp);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? -1 : 0;
	if (n == 0)
		return 0;
	size_t keep = (size_t)n;
	if (c->len + keep > CAPTURE_MAX)
		keep = CAPTURE_MAX - c->len;
	if (keep > 0) {
		if (c->len + keep + 1 > c->cap) {
			size_t cap = c->cap ? c->cap : 4096;
			while (cap < c->len + keep + 1)
				cap *= 2;
			live_drop(c->buf);
			c->buf = xrealloc(c->buf, cap);
			live_add(c->buf);
			c->cap = cap;
		}
		memcpy(c->buf + c->len, tmp, keep);
		c->len += keep;
	}
	return 1;
}

/* Take what is already in the pipe without waiting for EOF: a leaked
 * sandbox process may hold the write end open forever. */
static void capture_drain(struct capture *c)
{
	if (c->fd < 0)
		return;
	int fl = fcntl(c->fd, F_GETFL);
	if (fl >= 0)
		fcntl(c->fd, F_SETFL, fl | O_NONBLOCK);
	while (capture_read(c) > 0)
		;
}

static char *capture_take(struct capture *c, size_t *ret_len)
{
	if (!c->buf) {
		c->buf = xrealloc(NULL, 1);
		live_add(c->buf);
	}
	c->buf[c->len] = '\0';
	*ret_len = c->len;
	char *b = c->buf;
	c->buf = NULL;
	return b;
}

/* Environment for the child: ours, minus names that extra_env overrides, plus extra_env. */
static char **build_env(char *const *extra_env)
{
	size_t n = 0, m = 0;
	for (char **e = environ; e && *e; e++)
		n++;
	for (char *const *e = extra_env; e && *e; e++)
		m++;
	char **env = xrealloc(NULL, (n + m + 1) * sizeof *env);
	size_t k = 0;
	for (char **e = environ; e && *e; e++) {
		size_t nl = strcspn(*e, "=");
		bool overridden = false;
		for (char *const *x = extra_env; x && *x; x++)
			if (strncmp(*x, *e, nl) == 0 && (*x)[nl] == '=')
				overridden = true;
		if (!overridden)
			env[k++] = *e;
	}
	for (char *const *x = extra_env; x && *x; x++)
		env[k++] = *x;
	env[k] = NULL;
	return env;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void harness_run(struct proc_out *o, char *const *extra_env, int timeout_s, char *const *args)
{
	memset(o, 0, sizeof *o);
	const char *bin = harness_proctor();

	size_t nargs = 0;
	while (args[nargs])
		nargs++;
	char **argv = xrealloc(NULL, (nargs + 2) * sizeof *argv);
	argv[0] = (char *)bin;
	for (size_t i = 0; i < nargs; i++)
		argv[i + 1] = args[i];
	argv[nargs + 1] = NULL;
	char **env = build_env(extra_env);

	int out_pipe[2], err_pipe[2];
	if (pipe2(out_pipe, O_CLOEXEC) < 0 || pipe2(err_pipe, O_CLOEXEC) < 0) {
		fail_msg("pipe: %s", strerror(errno));
	}

	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);

	/* Reset the signal dispositions cmocka or the test runner changed. */
	posix_spawnattr_t attr;
	posix_spawnattr_init(&attr);
	sigset_t all, none;
	sigfillset(&all);
	sigemptyset(&none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

	pid_t pid;
	int rc = posix_spawn(&pid, bin, &fa, &attr, argv, env);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	close(out_pipe[1]);
	close(err_pipe[1]);
	free(env);
	free(argv);
	if (rc != 0) {
		close(out_pipe[0]);
		close(err_pipe[0]);
		fail_msg("cannot spawn %s: %s", bin, strerror(rc));
	}

	struct capture cs[2] = {{.fd = out_pipe[0]}, {.fd = err_pipe[0]}};
	long long deadline = harness_now_ms() + (long long)timeout_s * 1000;
	int status = 0;
	bool exited = false, timed_out = false;

	while (!exited) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid) {
			exited = true;
			break;
		}
		if (w < 0 && errno != EINTR) {
			fail_msg("waitpid(%d): %s", (int)pid, strerror(errno));
		}
		long long left = deadline - harness_now_ms();
		if (left <= 0) {
			timed_out = true;
			/* Only the pid we started; never a group or a name. */
			kill(pid, SIGKILL);
			while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
				;
			exited = true;
			break;
		}
		struct pollfd p[2];
		nfds_t np = 0;
		for (int i = 0; i < 2; i++) {
			if (cs[i].fd >= 0) {
				p[np].fd = cs[i].fd;
				p[np].events = POLLIN;
				np++;
			}
		}
		/* Short ticks: the pipes may stay open after proctor exits if
		 * something leaked them, so exit is also noticed by waitpid. */
		int tick = left < 50 ? (int)left : 50;
		int r = poll(p, np, tick);
		if (r < 0 && errno != EINTR) {
			fail_msg("poll: %s", strerror(errno));
		}
		for (nfds_t j = 0; r > 0 && j < np; j++) {
			if (!(p[j].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			struct capture *c = p[j].fd == cs[0].fd ? &cs[0] : &cs[1];
			if (capture_read(c) == 0)
				close_fd(&c->fd);
		}
	}
	for (int i = 0; i < 2; i++) {
		capture_drain(&cs[i]);
		close_fd(&cs[i].fd);
	}

	o->out = capture_take(&cs[0], &o->out_len);
	o->err = capture_take(&cs[1], &o->err_len);
	if (WIFEXITED(status))
		o->exit_status = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		o->exit_status = 128 + WTERMSIG(status);
	else
		o->exit_status = -1;

	if (timed_out) {
		fail_msg("proctor did not finish within %d s and was killed; stderr: %.2000s",
			 timeout_s, o->err);
	}

	json_error_t jerr;
	o->json = json_loadb(o->out, o->out_len, JSON_REJECT_DUPLICATES, &jerr);
	if (o->json && !json_is_object(o->json)) {
		json_decref(o->json);
		o->json = NULL;
	}
	live_add(o->json);
}

pid_t harness_spawn(const char *const *args, const char *out, const char *err)
{
	const char *argv[64];
	size_t n = 0;
	posix_spawn_file_actions_t fa;
	pid_t pid;

	argv[n++] = harness_proctor();
	for (size_t i = 0; args[i]; i++) {
		assert_true(n < 62);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		fail_msg("spawn %s: %s", argv[0], strerror(rc));
	return pid;
}

int harness_wait_child(pid_t pid, long long timeout_ms)
{
	long long deadline = harness_now_ms() + timeout_ms;
	int st;

	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (harness_now_ms() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			fail_msg("proctor %d did not finish in %lld ms; killed", (int)pid,
				 timeout_ms);
		}
		harness_sleep_ms(20);
	}
}

void proc_out_free(struct proc_out *o)
{
	if (!o)
		return;
	live_drop(o->out);
	live_drop(o->err);
	live_drop(o->json);
	free(o->out);
	free(o->err);
	if (o->json)
		json_decref(o->json);
	memset(o, 0, sizeof *o);
}

static json_t *jget(const struct proc_out *o, const char *key)
{
	if (!o->json) {
		fail_msg(
		    "proctor printed no JSON object (exit %d); stdout: %.1000s; stderr: %.1000s",
		    o->exit_status, o->out, o->err);
	}
	json_t *v = json_object_get(o->json, key);
	if (!v) {
		fail_msg("result has no field '%s'; stdout: %.2000s", key, o->out);
	}
	return v;
}

const char *jstr(const struct proc_out *o, const char *key)
{
	json_t *v = jget(o, key);
	if (json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		fail_msg("result field '%s' is not a string", key);
	}
	return json_string_value(v);
}

long long jint(const struct proc_out *o, const char *key)
{
	json_t *v = jget(o, key);
	if (json_is_null(v))
		return -1;
	if (!json_is_integer(v)) {
		fail_msg("result field '%s' is not an integer", key);
	}
	return (long long)json_integer_value(v);
}

bool jbool(const struct proc_out *o, const char *key)
{
	json_t *v = jget(o, key);
	if (!json_is_boolean(v)) {
		fail_msg("result field '%s' is not a boolean", key);
	}
	return json_is_true(v);
}

bool jlimit_hit(const struct proc_out *o, const char *limit)
{
	json_t *arr = jget(o, "limits_hit");
	if (!json_is_array(arr)) {
		fail_msg("result field 'limits_hit' is not an array");
	}
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), limit) == 0)
			return true;
	}
	return false;
}

char *harness_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	size_t n = strlen(base) + sizeof "/proctor-test-XXXXXX";
	char *path = xrealloc(NULL, n);
	snprintf(path, n, "%s/proctor-test-XXXXXX", base);
	if (!mkdtemp(path)) {
		fail_msg("mkdtemp %s: %s", path, strerror(errno));
	}
	return path;
}

/* ---- leftovers ---------------------------------------------------------- */

/* Describe the first leftover into `what`; return true if one was found. */
typedef bool (*leftover_fn)(char *what, size_t len);

static bool leftover_process(char *what, size_t len)
{
	DIR *d = opendir("/proc");
	if (!d) {
		snprintf(what, len, "cannot open /proc: %s", strerror(errno));
		return true;
	}
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		char path[300];
		snprintf(path, sizeof path, "/proc/%s/status", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue; /* gone meanwhile */
		char line[512], name[128] = "?";
		while (fgets(line, sizeof line, f)) {
			if (strncmp(line, "Name:", 5) == 0) {
				snprintf(name, sizeof name, "%s",
					 line + 5 + strspn(line + 5, " \t"));
				name[strcspn(name, "\n")] = '\0';
			}
			if (strncmp(line, "Uid:", 4) != 0)
				continue;
			/* real, effective, saved, filesystem */
			char *p = line + 4;
			for (int k = 0; k < 4; k++) {
				char *end;
				unsigned long uid = strtoul(p, &end, 10);
				if (end == p)
					break;
				if (uid >= SLOT_UID_MIN && uid < SLOT_UID_END) {
					snprintf(what, len, "process %s (%s) with slot uid %lu",
						 de->d_name, name, uid);
					found = true;
					break;
				}
				p = end;
			}
			break;
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

/* Undo mountinfo's octal escapes (\040 for space, ...) in place. */
static void unescape_mountinfo(char *s)
{
	char *w = s;
	for (char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = '\0';
}

static bool leftover_mount(char *what, size_t len)
{
	char dir[PATH_MAX];
	if (snprintf(dir, sizeof dir, "%s", harness_state_dir()) >= (int)sizeof dir) {
		snprintf(what, len, "state dir path too long");
		return true;
	}
	size_t dl = strlen(dir);
	while (dl > 1 && dir[dl - 1] == '/')
		dir[--dl] = '\0';

	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		snprintf(what, len, "cannot open /proc/self/mountinfo: %s", strerror(errno));
		return true;
	}
	bool found = false;
	char *line = NULL;
	size_t cap = 0;
	while (!found && getline(&line, &cap, f) > 0) {
		/* id parent major:minor root mountpoint ... */
		char *save = NULL, *tok = strtok_r(line, " ", &save);
		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " ", &save);
		if (!tok)
			continue;
		unescape_mountinfo(tok);
		if (strncmp(tok, dir, dl) == 0 && tok[dl] == '/') {
			snprintf(what, len, "mount on %s (below the state dir %s)", tok, dir);
			found = true;
		}
	}
	free(line);
	fclose(f);
	return found;
}

static bool is_dir_at(int dfd, const char *name)
{
	struct stat st;
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* The permanent groups: slotN (a sandbox slot's), helperUID (the report
 * and intake helper's of the sandbox with that uid). */
static bool slot_name_ok(const char *name)
{
	size_t n = strncmp(name, "slot", 4) == 0 ? 4 : strncmp(name, "helper", 6) == 0 ? 6 : 0;

	if (n == 0 || !name[n])
		return false;
	for (const char *p = name + n; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* Check one slot cgroup: no child group, empty cgroup.procs. */
static bool leftover_in_slot(const char *path, char *what, size_t len)
{
	DIR *d = opendir(path);
	if (!d)
		return false; /* removed meanwhile */
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (is_dir_at(dirfd(d), de->d_name)) {
			snprintf(what, len, "child cgroup %s/%s", path, de->d_name);
			found = true;
		}
	}
	closedir(d);
	if (found)
		return true;

	char procs[PATH_MAX];
	if (!join_path(procs, sizeof procs, path, "cgroup.procs"))
		return false;
	FILE *f = fopen(procs, "re");
	if (!f)
		return false;
	char line[64];
	if (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = '\0';
		snprintf(what, len, "process %s still in cgroup %s", line, path);
		found = true;
	}
	fclose(f);
	return found;
}

static bool leftover_in_proctor_cgroup(const char *path, char *what, size_t len)
{
	DIR *d = opendir(path);
	if (!d)
		return false;
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		/* cgroup.procs, memory.* ... are files; only groups matter. */
		if (!is_dir_at(dirfd(d), de->d_name))
			continue;
		char sub[PATH_MAX];
		if (!join_path(sub, sizeof sub, path, de->d_name))
			continue;
		if (!slot_name_ok(de->d_name)) {
			snprintf(what, len,
				 "unexpected cgroup %s (only slotN and helperN may stay)", sub);
			found = true;
		} else {
			found = leftover_in_slot(sub, what, len);
		}
	}
	closedir(d);
	return found;
}

static bool leftover_cgroup(char *what, size_t len)
{
	const char *root = "/sys/fs/cgroup";
	/* Pure cgroup v2: the proctor group sits at the root. */
	if (leftover_in_proctor_cgroup("/sys/fs/cgroup/proctor", what, len))
		return true;
	DIR *d = opendir(root);
	if (!d)
		return false;
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || !strcmp(de->d_name, "proctor"))
			continue;
		if (!is_dir_at(dirfd(d), de->d_name))
			continue;
		char group[PATH_MAX], path[PATH_MAX];
		if (!join_path(group, sizeof group, root, de->d_name) ||
		    !join_path(path, sizeof path, group, "proctor"))
			continue;
		found = leftover_in_proctor_cgroup(path, what, len);
	}
	closedir(d);
	return found;
}

/* A mount below `dir` (a path without a trailing slash) into `what`. */
static bool mount_below(const char *dir, char *what, size_t len)
{
	size_t dl = strlen(dir);
	FILE *f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		snprintf(what, len, "cannot open /proc/self/mountinfo: %s", strerror(errno));
		return true;
	}
	bool found = false;
	char *line = NULL;
	size_t cap = 0;
	while (!found && getline(&line, &cap, f) > 0) {
		char *save = NULL, *tok = strtok_r(line, " ", &save);
		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " ", &save);
		if (!tok)
			continue;
		unescape_mountinfo(tok);
		if (strncmp(tok, dir, dl) == 0 && tok[dl] == '/') {
			snprintf(what, len, "mount on %s (below %s)", tok, dir);
			found = true;
		}
	}
	free(line);
	fclose(f);
	return found;
}

void harness_assert_no_mount_below(const char *dir)
{
	char d[PATH_MAX], what[PATH_MAX + 200];
	if (snprintf(d, sizeof d, "%s", dir) >= (int)sizeof d)
		fail_msg("path too long: %s", dir);
	size_t dl = strlen(d);
	while (dl > 1 && d[dl - 1] == '/')
		d[--dl] = '\0';
	long long deadline = harness_now_ms() + CLEAN_WAIT_MS;
	while (mount_below(d, what, sizeof what)) {
		if (harness_now_ms() >= deadline)
			fail_msg("left behind: %s", what);
		harness_sleep_ms(50);
	}
}

void harness_assert_clean(void)
{
	static const leftover_fn checks[] = {leftover_process, leftover_mount, leftover_cgroup};
	long long deadline = harness_now_ms() + CLEAN_WAIT_MS;
	char what[PATH_MAX + 200];
	for (;;) {
		bool dirty = false;
		for (size_t i = 0; !dirty && i < sizeof checks / sizeof checks[0]; i++)
			dirty = checks[i](what, sizeof what);
		if (!dirty)
			return;
		if (harness_now_ms() >= deadline)
			break;
		harness_sleep_ms(50);
	}
	fail_msg("sandbox left behind: %s", what);
}

/* A regular file, at most `cap` bytes, NUL-terminated; NULL if unreadable. */
char *harness_slurp(const char *path, size_t cap, size_t *ret_len)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return NULL;
	}
	char *buf = malloc(cap + 1);
	size_t len = 0;
	while (buf && len < cap) {
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (buf)
		buf[len] = '\0';
	if (buf && ret_len)
		*ret_len = len;
	return buf;
}

bool harness_valid_utf8(const char *str)
{
	static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
	const unsigned char *s = (const unsigned char *)str;
	size_t len = strlen(str);

	for (size_t i = 0; i < len;) {
		size_t n = s[i] < 0x80	       ? 1
			   : (s[i] >> 5) == 6  ? 2
			   : (s[i] >> 4) == 14 ? 3
			   : (s[i] >> 3) == 30 ? 4
					       : 0;
		if (n == 0 || n > len - i)
			return false;
		uint32_t cp = n == 1 ? s[i] : s[i] & (0x7fu >> n);
		for (size_t k = 1; k < n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3fu);
		}
		if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n;
	}
	return true;
}

char *harness_trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 &&
	       (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

bool harness_parse_int(const char *s, long lo, long hi, long *ret)
{
	char *end;

	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*ret = v;
	return true;
}

/* ---- small utilities (no cmocka: also used from main) --------------------- */

double harness_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

long long harness_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void harness_sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

const char *harness_state_dir(void)
{
	const char *s = getenv("PROCTOR_STATE_DIR");

	return (s && *s) ? s : "/var/lib/proctor";
}

/* ---- files for the tests ------------------------------------------------- */

/* Remove everything below the directory dfd, following no symlink. */
static void rm_children(int dfd)
{
	int dup_fd = dup(dfd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode)) {
			int sub = openat(dfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub >= 0) {
				rm_children(sub);
				close(sub);
			}
			unlinkat(dfd, de->d_name, AT_REMOVEDIR);
		} else {
			unlinkat(dfd, de->d_name, 0);
		}
	}
	closedir(d);
}

void harness_rm_tree(const char *path)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd >= 0) {
		rm_children(fd);
		close(fd);
	}
	if (rmdir(path) < 0 && errno != ENOENT && unlink(path) < 0 && errno != ENOENT)
		print_message("could not remove %s: %s\n", path, strerror(errno));
}

void harness_path_join(char *buf, const char *a, const char *b)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", a, b);

	if (n < 0 || n >= PATH_MAX)
		fail_msg("path %s/%s is longer than PATH_MAX", a, b);
}

void harness_write(const char *dir, const char *rel, const void *data, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	if (dir)
		harness_path_join(path, dir, rel);
	else
		snprintf(path, sizeof(path), "%s", rel);
	if (!(f = fopen(path, "wbe")))
		fail_msg("create %s: %s", path, strerror(errno));
	if (fwrite(data, 1, len, f) != len || fclose(f) != 0)
		fail_msg("write %s: %s", path, strerror(errno));
}

void harness_write_text(const char *dir, const char *rel, const char *text)
{
	harness_write(dir, rel, text, strlen(text));
}

char *harness_read(const char *path, size_t *ret_len)
{
	struct stat st;
	char *buf = NULL;

	/* Room for what a writer still adds while we read (a progress file). */
	if (stat(path, &st) == 0)
		buf = harness_slurp(path, (size_t)st.st_size + 65536, ret_len);
	if (!buf)
		fail_msg("read %s: %s", path, strerror(errno));
	return buf;
}

/* ---- the microVM suites' image -------------------------------------------- */

/* The first image NAME@N of the state directory that has a guest kernel. */
static bool find_vm_image(const char *name, char *pin, size_t cap)
{
	char *argv[] = {(char *)"image",
			(char *)"ls",
			(char *)"--json",
			(char *)"--state-dir",
			(char *)harness_state_dir(),
			NULL};
	struct proc_out o = {0};
	json_error_t je;
	json_t *list, *v;
	size_t i;

	pin[0] = '\0';
	harness_run(&o, NULL, 60, argv);
	list = o.exit_status == 0 ? json_loadb(o.out, o.out_len, 0, &je) : NULL;
	json_array_foreach(list, i, v)
	{
		const char *n = json_string_value(json_object_get(v, "name"));
		json_int_t ver = json_integer_value(json_object_get(v, "version"));
		char kernel[PATH_MAX];
		if (!n || strcmp(n, name) != 0)
			continue;
		snprintf(kernel, sizeof(kernel), "%s/images/%s/%lld/vm/vmlinux",
			 harness_state_dir(), n, (long long)ver);
		if (access(kernel, R_OK) == 0) {
			snprintf(pin, cap, "%s@%lld", n, (long long)ver);
			break;
		}
	}
	json_decref(list);
	proc_out_free(&o);
	return pin[0] != '\0';
}

int harness_vm_image(const char *recipe, const char *name, char *pin, size_t cap, char *why,
		     size_t why_cap)
{
	if (geteuid() != 0) {
		snprintf(why, why_cap, "not root");
		return -1;
	}
	if (access("/usr/bin/qemu-system-x86_64", X_OK) != 0) {
		snprintf(why, why_cap, "QEMU is not installed");
		return -1;
	}
	if (find_vm_image(name, pin, cap))
		return 0;
	print_message("building %s into %s (a few minutes)\n", recipe, harness_state_dir());
	char *argv[] = {(char *)"image",
			(char *)"build",
			(char *)"--json",
			(char *)"--state-dir",
			(char *)harness_state_dir(),
			(char *)recipe,
			NULL};
	struct proc_out o = {0};
	harness_run(&o, NULL, 900, argv);
	if (o.exit_status != 0 || !find_vm_image(name, pin, cap)) {
		snprintf(why, why_cap, "image build failed (exit %d): %.3000s", o.exit_status,
			 o.err);
		proc_out_free(&o);
		return -1;
	}
	proc_out_free(&o);
	return 0;
}

pid_t harness_swap_on_first_open(const char *watch, unsigned mark_flags, const char *path,
				 const char *aside, const char *target, int *ret_report)
{
	int report[2];
	int fan = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC, O_RDONLY | O_CLOEXEC);

	if (fan < 0)
		return -1;
	if (fanotify_mark(fan, FAN_MARK_ADD, FAN_OPEN_PERM | mark_flags, AT_FDCWD, watch) < 0) {
		int saved = errno;
		close(fan);
		errno = saved;
		return -1;
	}
	assert_int_equal(pipe2(report, O_CLOEXEC), 0);
	pid_t listener = fork();
	assert_true(listener >= 0);
	if (listener == 0) {
		char buf[4096]
		    __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
		bool done = false;
		for (;;) {
			ssize_t n = read(fan, buf, sizeof buf);
			if (n <= 0)
				_exit(n == 0 ? 0 : 1);
			for (struct fanotify_event_metadata *m = (void *)buf; FAN_EVENT_OK(m, n);
			     m = FAN_EVENT_NEXT(m, n)) {
				if (!done) {
					done = true;
					char ok = rename(path, aside) == 0 && symlink(target, path) == 0;
					if (write(report[1], &ok, 1) != 1)
						_exit(1);
				}
				struct fanotify_response r = {.fd = m->fd, .response = FAN_ALLOW};
				if (write(fan, &r, sizeof r) != sizeof r)
					_exit(1);
				close(m->fd);
			}
		}
	}
	close(fan);
	close(report[1]);
	*ret_report = report[0];
	return listener;
}

bool harness_swap_done(pid_t listener, int report)
{
	int status;
	char swapped = 0;

	kill(listener, SIGKILL);
	assert_int_equal(waitpid(listener, &status, 0), listener);
	assert_int_equal(read(report, &swapped, 1), 1);
	close(report);
	return swapped;
}
