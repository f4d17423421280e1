/* Running proctor-helper without privilege, and reading back its JSON answer. */
#include "grade/unpriv.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/cgroup.h"
#include "host/seccomp.h"
#include "util.h"

#define ANSWER_MAX (64u << 20)

/* ---- the helper's cgroup ---- */

/*
 * The helper runs outside the sandbox, so the sandbox's cgroups do not
 * bound it: it gets a group of its own per sandbox uid (cgroup.h,
 * cgroup_helper_open), where its CPU is accounted and held to half a CPU,
 * its memory to what RLIMIT_AS allows and its processes to itself.  What
 * the helper costs the host is then bounded however long a parse would
 * take, and a parse that needs more memory is the input's doing.
 */
#define HELPER_CPU_QUOTA_US  50000u
#define HELPER_CPU_PERIOD_US 100000u
#define HELPER_MEMORY	     (1ull << 30)
#define HELPER_PIDS	     1u

static int helper_cgroup_open(const struct unpriv_call *c, struct cgroup_helper *cg, struct err *e)
{
	const struct cgroup_helper_limits l = {.cpu_quota_us = HELPER_CPU_QUOTA_US,
					       .cpu_period_us = HELPER_CPU_PERIOD_US,
					       .memory_bytes = HELPER_MEMORY,
					       .pids = HELPER_PIDS};

	if (cgroup_helper_open(cg, (unsigned long)c->uid, &l, e) < 0)
		return err_wrap(e, "the helper's cgroup");
	return 0;
}

/*
 * After the helper exited with status `st`: 1 with the reason when it was
 * killed for a limit it ran into (memory, CPU): the input made the parse
 * that costly.  0 otherwise.  -1 when the group cannot be read.
 */
static int helper_cgroup_check(struct cgroup_helper *cg, int st, unsigned timeout_s, struct err *e)
{
	struct cgroup_helper_usage u;

	if (cgroup_helper_usage(cg, &u, e) < 0)
		return err_wrap(e, "the helper's cgroup");
	if (u.oom_kills > 0) {
		err_set(e, 0, "the helper ran out of memory (%llu MiB) on this input",
			HELPER_MEMORY >> 20);
		return 1;
	}
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGXCPU) {
		err_set(e, 0, "the helper used more than %u s of CPU on this input", timeout_s);
		return 1;
	}
	return 0;
}

/* Where a containment step that failed says which and why, before the exit
 * status 126 (containment) or 127 (exec): the answer pipe, which unpriv_run
 * reads as the reason instead of JSON.  One write of a short line, no
 * allocation (we are a fork of a process that may have threads). */
static int fail_fd = -1;

static _Noreturn void child_fail(int status, const char *step)
{
	const char *why = strerrordesc_np(errno);
	char line[256];
	int n = snprintf(line, sizeof(line), "%s: %s", step, why ? why : "unknown error");

	if (fail_fd >= 0 && n > 0)
		(void)!write(fail_fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	_exit(status);
}

/*
 * The helper's containment, in order.  It parses hostile bytes with big
 * libraries, so assume it can be taken over and leave it nothing: no
 * terminal, no network, no view of any sandbox's files, no children, no
 * privilege, the sandbox's own system-call filter.
 */
static _Noreturn void child(const struct unpriv_call *c, const struct cgroup_helper *cg,
			    pid_t parent, int exe_fd, int in_fd, int out_fd)
{
	char *argv[16];
	size_t n = 0;
	struct rlimit as = {1ull << 30, 1ull << 30}, cpu = {c->timeout_s, c->timeout_s + 1},
		      fsz = {256ull << 20, 256ull << 20}, nofile = {64, 64}, core = {0, 0};
	gid_t gid = (gid_t)c->uid;
	struct sock_fprog filter;

	/* Before anything costs: every cycle of the helper is charged to
	 * its group and held to its quota. */
	fail_fd = out_fd;
	if (cgroup_helper_join(cg) < 0)
		child_fail(126, "join the helper's cgroup");
	/* SECURITY: no controlling terminal (no TIOCSTI into the operator's
	 * shell), and stderr goes nowhere. */
	setsid();
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, 2) < 0)
		child_fail(126, "open /dev/null");
	if (dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0)
		child_fail(126, "set up stdin and stdout");
	fail_fd = 1;
	/* SECURITY: no network, no SysV IPC shared with anyone, and a private
	 * mount namespace in which every slot's scratch tree is hidden. */
	if (unshare(CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC) < 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		child_fail(126, "unshare the network, mount and IPC namespaces");
	if (c->hide_dir &&
	    mount("tmpfs", c->hide_dir, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "size=4k,mode=0755") < 0)
		child_fail(126, "hide the slots");
	/* fd3, fd4 and the helper's executable go above 4 first, so no dup2
	 * overwrites another; the executable then takes the first unused
	 * number (CLOEXEC: the helper never holds it), and everything above
	 * it is closed. */
	int first = c->fd4 >= 0 ? 5 : c->fd3 >= 0 ? 4 : 3;
	int hix = fcntl(exe_fd, F_DUPFD_CLOEXEC, 5);
	int hi3 = c->fd3 >= 0 ? fcntl(c->fd3, F_DUPFD, 5) : -1;
	int hi4 = c->fd4 >= 0 ? fcntl(c->fd4, F_DUPFD, 5) : -1;
	if (hix < 0 || (c->fd3 >= 0 && (hi3 < 0 || dup2(hi3, 3) < 0)) ||
	    (c->fd4 >= 0 && (hi4 < 0 || dup2(hi4, 4) < 0)))
		child_fail(126, "place the descriptors");
	if (c->fd3 < 0 && c->fd4 >= 0)
		close(3);
	if (hix != first && dup3(hix, first, O_CLOEXEC) < 0)
		child_fail(126, "place the helper's executable");
	exe_fd = first;
	syscall(SYS_close_range, first + 1, ~0U, 0);
	/* SECURITY: the helper reads hostile input, so it runs as the
	 * sandbox's own unprivileged uid, with no capability, no way to gain
	 * one, and bounded resources. */
#if !defined(__SANITIZE_ADDRESS__)
	/* (AddressSanitizer builds reserve terabytes of address space.) */
	if (setrlimit(RLIMIT_AS, &as) < 0)
		child_fail(126, "set RLIMIT_AS");
#else
	(void)as;
#endif
	/* One process (it cannot fork a daemon that outlives the call) is the
	 * helper group's pids limit, set above.  Not RLIMIT_NPROC: that counts
	 * every process of the uid, and a slot's uid may still have processes
	 * of a killed owner's sandbox that are being torn down, which made
	 * the exec fail. */
	if (setrlimit(RLIMIT_CPU, &cpu) < 0 || setrlimit(RLIMIT_FSIZE, &fsz) < 0 ||
	    setrlimit(RLIMIT_NOFILE, &nofile) < 0 || setrlimit(RLIMIT_CORE, &core) < 0)
		child_fail(126, "set the resource limits");
	if (setgroups(1, &gid) < 0 || setresgid(gid, gid, gid) < 0 ||
	    setresuid(c->uid, c->uid, c->uid) < 0 || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail(126, "drop privilege");
	/* The uid change cleared the death signal: set it now, then make sure
	 * the parent did not die in between. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		child_fail(126, "watch the parent");
	seccomp_default_program(&filter);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &filter, 0, 0) < 0)
		child_fail(126, "install the system-call filter");
	argv[n++] = (char *)"proctor-helper";
	for (size_t i = 0; c->argv[i] && n < 15; i++)
		argv[n++] = c->argv[i];
	argv[n] = NULL;
	char *envp[] = {
		(char *)"PATH=/usr/bin:/bin",
		(char *)"LANG=C.UTF-8",
#if defined(__SANITIZE_ADDRESS__)
		/* LeakSanitizer's exit check needs ptrace and a thread, which
		 * the helper's filter and process limit refuse. */
		(char *)"ASAN_OPTIONS=detect_leaks=0",
#endif
		NULL
	};
	/* By the descriptor root opened, not by path: the uid need not be
	 * able to walk to it (a build below /root, 0700). */
	fexecve(exe_fd, argv, envp);
	child_fail(127, "execute the helper as an unprivileged uid");
}

/* SIGKILL through the pidfd (no pid reuse), else by pid. */
static void kill_helper(pid_t pid, int pidfd)
{
	if (pidfd < 0 || syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0) < 0)
		kill(pid, SIGKILL);
}

void unpriv_wait(pid_t pid, int out_fd, uint64_t timeout_ms, size_t max, struct unpriv_wait *w)
{
	uint64_t deadline = now_ns() + timeout_ms * 1000000ull;
	int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	size_t size = 0;
	bool out_open = true, exited = false;

	*w = (struct unpriv_wait){0};
	/*
	 * The deadline holds for the helper's whole life, not only while its
	 * stdout is open: a helper taken over through a parser bug can close
	 * fd 1 and pause(), and must not hold proctor (nor the opener, which
	 * the caller stops once this returns) in waitpid forever.  Without a
	 * pidfd (old kernel), the exit is polled for every 50 ms.
	 */
	while (out_open || !exited) {
		uint64_t now = now_ns();
		if (now >= deadline) {
			kill_helper(pid, pidfd);
			w->killed = true;
			break;
		}
		struct pollfd p[2] = {{.fd = out_open ? out_fd : -1, .events = POLLIN},
				      {.fd = exited ? -1 : pidfd, .events = POLLIN}};
		int wait_ms = (int)((deadline - now) / 1000000 + 1);
		if (pidfd < 0 && !out_open && wait_ms > 50)
			wait_ms = 50;
		int n = poll(p, 2, wait_ms);
		if (n < 0 && errno != EINTR) {
			kill_helper(pid, pidfd);
			break;
		}
		if (!exited && pidfd >= 0 && p[1].revents)
			exited = true;
		if (!exited && pidfd < 0 && !out_open) {
			int st;
			if (waitpid(pid, &st, WNOHANG) == pid) {
				w->status = st;
				w->reaped = true;
				exited = true;
			}
		}
		if (!out_open || !(p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (w->len + 65536 > size) {
			if (size >= max) {
				w->over = true;
				kill_helper(pid, pidfd);
				break;
			}
			size_t nsize = size ? size * 2 : 1 << 16;
			char *nb = realloc(w->buf, nsize + 1);
			if (!nb) {
				kill_helper(pid, pidfd);
				break;
			}
			w->buf = nb;
			size = nsize;
		}
		ssize_t r = read(out_fd, w->buf + w->len, size - w->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			out_open = false;
		else
			w->len += (size_t)r;
	}
	if (!w->reaped)
		while (waitpid(pid, &w->status, 0) < 0 && errno == EINTR)
			;
	w->reaped = true;
	if (pidfd >= 0)
		close(pidfd);
}

/*
 * Write the request to the helper's stdin.  A helper that ended before
 * reading it (its containment failed: exit 126) must cost us an EPIPE, not
 * a SIGPIPE that kills the caller (a service worker runs with SIGPIPE's
 * default action): SIGPIPE is blocked for the write and a pending one
 * taken back.
 */
static void write_request(int fd, const char *text)
{
	sigset_t pipe_set, old;
	struct timespec zero = {0, 0};

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	sigprocmask(SIG_BLOCK, &pipe_set, &old);
	int rc = write_all(fd, text, strlen(text));
	if (rc < 0 && errno == EPIPE && !sigismember(&old, SIGPIPE))
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	sigprocmask(SIG_SETMASK, &old, NULL);
}

int unpriv_helper_open(const char *path, struct err *e)
{
	struct stat st;
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0)
		return err_set(e, errno, "open %s", path);
	if (fstat(fd, &st) < 0) {
		err_set(e, errno, "stat %s", path);
		close(fd);
		return -1;
	}
	/* SECURITY: it runs as an unprivileged uid that is neither its owner
	 * nor in its group: only the bits for others let that uid execute
	 * it.  The path to it need not be walkable (it is executed through
	 * this descriptor), the file itself must be. */
	if (!S_ISREG(st.st_mode) || !(st.st_mode & S_IXOTH)) {
		err_setk(e, ERR_UNAVAILABLE, 0,
			 "%s is %s mode %04o: it runs as an unprivileged uid, which can execute "
			 "it only when others may (chmod o+rx %s, or build with umask 022)",
			 path, S_ISREG(st.st_mode) ? "a file of" : "not a regular file,",
			 (unsigned)(st.st_mode & 07777), path);
		close(fd);
		return -1;
	}
	return fd;
}

/* The reason a helper that could not start wrote before its exit status
 * 126 or 127 (child_fail), as one printable line; "" when it wrote none. */
static void start_failure(const struct unpriv_wait *w, char *buf, size_t len)
{
	size_t o = 0;

	for (size_t i = 0; w->buf && i < w->len && o + 1 < len; i++)
		buf[o++] = (w->buf[i] >= 0x20 && w->buf[i] < 0x7f) ? w->buf[i] : '?';
	buf[o] = '\0';
}

int unpriv_run(const struct unpriv_call *c, json_t **ret, struct err *e)
{
	int in[2] = {-1, -1}, out[2] = {-1, -1}, rc = -1;
	struct unpriv_wait w = {0};
	struct cgroup_helper cg;
	pid_t pid;

	/* Opened here as root and executed by descriptor (child()): -2, a
	 * helper that cannot be run is never the input's doing. */
	int exe = unpriv_helper_open(c->helper, e);
	if (exe < 0)
		return -2;
	if (helper_cgroup_open(c, &cg, e) < 0) {
		close(exe);
		return -1;
	}
	if (pipe2(out, O_CLOEXEC) < 0) {
		err_set(e, errno, "pipe");
		goto out_close;
	}
	if (c->stdin_fd < 0 && pipe2(in, O_CLOEXEC) < 0) {
		err_set(e, errno, "pipe");
		goto out_close;
	}
	pid_t parent = getpid();
	pid = fork();
	if (pid < 0) {
		err_set(e, errno, "fork the helper");
		goto out_close;
	}
	if (pid == 0)
		child(c, &cg, parent, exe, c->stdin_fd >= 0 ? c->stdin_fd : in[0], out[1]);
	out[1] = xclose(out[1]);
	exe = xclose(exe);
	if (in[0] >= 0) {
		in[0] = xclose(in[0]);
		/* Requests are small (well under a pipe's buffer): no deadlock. */
		if (c->input)
			write_request(in[1], c->input);
		in[1] = xclose(in[1]);
	}

	unpriv_wait(pid, out[0], (uint64_t)c->timeout_s * 1000, ANSWER_MAX, &w);
	rc = helper_cgroup_check(&cg, w.status, c->timeout_s, e);
	if (rc != 0)
		goto out_close;
	rc = 1;
	if (w.killed) {
		err_set(e, 0, "the helper took longer than %u s", c->timeout_s);
		goto out_close;
	}
	if (w.over) {
		err_set(e, 0, "the helper's answer is larger than %u MiB", ANSWER_MAX >> 20);
		goto out_close;
	}
	if (WIFEXITED(w.status) && (WEXITSTATUS(w.status) == 126 || WEXITSTATUS(w.status) == 127)) {
		/* child()'s containment or its exec failed: no byte of the input
		 * was read (proctor-helper itself never exits so).  Ours, never
		 * the input's: e.g. the slot's uid still has two processes of a
		 * killed owner's sandbox, and RLIMIT_NPROC refuses the exec.  (A
		 * helper taken over could claim this with a "failure" answer
		 * just as well.) */
		char why[200];
		start_failure(&w, why, sizeof(why));
		err_set(e, 0, "the helper %s could not start (exit status %d)%s%s", c->helper,
			WEXITSTATUS(w.status), *why ? ": " : "", why);
		rc = -2;
		goto out_close;
	}
	rc = -1;
	if (WIFSIGNALED(w.status)) {
		err_set(e, 0, "the helper died of signal %d", WTERMSIG(w.status));
		goto out_close;
	}
	if (WEXITSTATUS(w.status) != 0) {
		err_set(e, 0, "the helper failed (exit status %d)", WEXITSTATUS(w.status));
		goto out_close;
	}
	json_error_t jerr;
	json_t *j = w.buf ? json_loadb(w.buf, w.len, JSON_REJECT_DUPLICATES, &jerr) : NULL;
	if (!json_is_object(j)) {
		json_decref(j);
		err_set(e, 0, "the helper's answer is not a JSON object");
		goto out_close;
	}
	/* "failure": the helper's own (staging full, the opener gone, out of
	 * memory): ours, retried, not the input's; "error": the input's. */
	json_t *failure = json_object_get(j, "failure"), *error = json_object_get(j, "error");
	if (failure || error) {
		json_t *msg = failure ? failure : error;
		err_set(e, 0, "%s", json_is_string(msg) ? json_string_value(msg) : "failed");
		json_decref(j);
		rc = failure ? -2 : 1;
		goto out_close;
	}
	*ret = j;
	rc = 0;
out_close:
	free(w.buf);
	xclose(in[0]);
	xclose(in[1]);
	xclose(out[0]);
	xclose(out[1]);
	xclose(exe);
	cgroup_helper_close(&cg);
	return rc;
}
