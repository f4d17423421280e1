/* The jail backend: namespaces + cgroups + seccomp behind sandbox_ops. */

/*
 * Theory of operation
 * -------------------
 * Three processes and three trust zones:
 *
 *   supervisor (proctor, host root)
 *     |  clone(NEWPID|NEWNS|NEWNET|NEWIPC|NEWUTS), pidfd
 *     v
 *   init (PID 1 of the new pid namespace, still root, never runs student code)
 *     |  fork
 *     v
 *   program (slot uid, no capabilities, no_new_privs, seccomp, rlimits)
 *
 * A split run (run_spec.peer_argv) has two programs below init, started
 * one after the other from the same containment: argv as the harness
 * (slot uid + SANDBOX_HARNESS_UID_OFFSET, which alone can read files put
 * with SANDBOX_PUT_HARNESS and write those put SANDBOX_PUT_HARNESS_OWNED)
 * and peer_argv as the slot uid, stdin /dev/null.  Init makes a connected
 * AF_UNIX stream pair and each program gets one end as fd
 * SANDBOX_CHANNEL_FD (3), which is then the only descriptor either holds
 * besides stdio.  The two uids differ, so neither can signal, ptrace or
 * (hidepid) see the other; init waits for the harness alone, and the peer
 * dies with the rest of the namespace.
 *
 * The supervisor first moves into a private mount namespace (jail_prepare),
 * then leases a slot (uid, cgroups, scratch dir) and mounts the slot's
 * size-capped scratch tmpfs (/work, /tmp, /dev/shm).  For each run it
 * makes the run's pids group and clones init (jail_launch), on a hybrid
 * host straight into the slot's v2 group (CLONE_INTO_CGROUP).  Init first
 * clones the program's process, which joins the run's other cgroups
 * through fds the supervisor opened (v1's `tasks`: a cgroup.procs write
 * would wait for an RCU grace period after a quiet moment, 7 to 10 ms
 * here; cgroup_run_group()), unshares a cgroup namespace, starts a
 * session, resets its signals and empties its capability bounding set
 * (contain_early), while init builds the new root and pivots into it
 * (mount.c).  Then init waits for the run: the supervisor sets the run's
 * limits and sends the run (send_spec: argv, environment, stdin).  Init
 * hands the program its descriptors; the program takes its rlimits, drops
 * to the slot uid, installs the seccomp filter and execs:
 * contain_early() and contain_program() list those steps in order, and
 * that order is the security argument.  Init reaps every orphan until the program itself
 * exits, then reports the program's wait status over a pipe and exits,
 * which makes the kernel SIGKILL everything left in the namespace.
 *
 * The pool (below jail_new) does all of that but the run ahead, while the
 * process is idle: a pooled jail is a whole new jail whose first run's
 * init waits; create() hands it out and only the run's limits, its
 * arguments and the exec are left.  Runs after a jail's first launch
 * their init when they start, unless the holder warmed the jail while it
 * was idle (jail_warm(): the same launch ahead, for the next run).  A
 * launched init holds the run's own cgroups (pids "run", and on a hybrid
 * host the v2 "run" it was cloned into): a holder killed then leaves them
 * empty, and the slot's next lease removes them (cgroup_slot_open()).
 *
 * The program cannot signal or ptrace init (other uid; PID 1 ignores
 * signals it has no handler for; ptrace is filtered) and cannot see it
 * (hidepid).  Init dies with the supervisor (PDEATHSIG), and the program's
 * processes die with init (pid namespace), so a sandbox never outlives the
 * proctor that owns it.  The supervisor never waits for EOF on the
 * program's stdout/stderr: the verdict is taken when the program exits,
 * then the whole slot cgroup is killed and the pipes drain.  The result
 * waits for the program's processes to be gone, not for init's own end
 * (the teardown of its namespaces, about a millisecond): init is reaped,
 * and the run's groups removed, before the next run or in destroy
 * (jail_reap()).
 *
 * What the supervisor reads from the sandbox: the program's output (bytes
 * copied into fixed-size buffers, later repaired as UTF-8) and, for --get,
 * regular files opened with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS);
 * for list(), a directory opened the same way and its entries described
 * by fstatat(AT_SYMLINK_NOFOLLOW), never followed.
 * Init's messages come from trusted code in the init process.
 */
#include "jail/jail.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/cgroup.h"
#include "host/seccomp.h"
#include "host/slot.h"
#include "jail/creds.h"
#include "jail/files.h"
#include "jail/mount.h"
#include "rawsys.h"
#include "scratch.h"
#include "util.h"

#define SAMPLE_NS      (10ull * 1000000ull)   /* CPU and memory sampling period */
#define SETUP_SLACK_NS (5ull * 1000000000ull) /* time init may take to start the program */
#define DRAIN_NS       (2ull * 1000000000ull) /* reading what is left in the pipes */

/* An init cloned for a run that has not started yet: namespaces made, root
 * being built, the program's process joining the run's groups; it waits
 * for the run on spec_w (jail_launch).  Supervisor ends only. */
struct launch {
	long pid; /* 0: none */
	int pidfd, out_r, err_r, msg_r, life_w, spec_w;
	int ipcfd; /* init's IPC namespace (ipc_clear()), or -1 */
};

struct jail {
	struct sandbox base;
	struct launch ready; /* started ahead (the pool, jail_warm()), for the next run */
	struct launch dying; /* the last run's init, killed, not reaped yet (jail_reap()) */
	struct sandbox_options opts;
	struct slot slot;
	struct cgroup_slot cg;
	int scratch_fd;
	/* A put made a new top-level directory (jail_put) since the last run
	 * started: the ready init's root lacks it. */
	bool tops_changed;
	uint64_t run_files_uncharged; /* bytes of the tree not charged to the run's group */
	char scratch[PATH_MAX + 16];
	char root[PATH_MAX + 16];
};

/* Init -> supervisor messages; each smaller than PIPE_BUF, so atomic. */
/* MSG_READY: the root is built and the program's process is in the run's
 * groups; only the run is missing (jail_pool_fill waits for it). */
enum init_msg_type { MSG_STARTED = 1, MSG_EXITED = 2, MSG_FAILED = 3, MSG_READY = 4 };
struct init_msg {
	uint32_t type;
	int32_t wstatus;
	int32_t exec_errno; /* the program could not be executed (MSG_EXITED) */
	uint64_t t_ns;
	char text[400];
};

/* Program -> init, on a CLOEXEC pipe: written only if execve was not reached. */
struct exec_report {
	int32_t setup_failed; /* 1: our setup failed (Proctor's fault); 0: execve failed */
	int32_t errnum;
	char text[300];
};

/* Supervisor -> init, when the run starts: this, then body_len bytes of
 * NUL-terminated strings (argv, env, peer_argv, peer_env, stdin_path, cwd),
 * and the run's stdin as SCM_RIGHTS with this header when has_stdin_fd. */
struct spec_msg {
	uint64_t body_len;
	struct limits limits;
	uint32_t n_argv, n_env, n_peer_argv, n_peer_env;
	uint8_t split, has_stdin_path, has_stdin_fd, has_cwd;
};

/* Everything the cloned children need: the descriptors from the
 * supervisor; spec and the environments once init has received the run. */
struct child_ctx {
	struct jail *j;
	const struct run_spec *spec;
	char **envp, **peer_envp; /* peer_envp: a split run's peer, else NULL */
	int out_w, err_w, stdin_fd, msg_w, life_r, spec_r;
	bool early_done; /* contain_early() was run (by the run's first program) */
	int cg_fds[CGROUP_MAX_JOIN];
	size_t n_cg;
};

static const char *const base_env[] = {
    "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/work", "TMPDIR=/tmp", "LANG=C.UTF-8", "PWD=/work",
};

/* One program of a run: what it executes and as whom.  A run has one; a
 * split run two, the harness (argv) and the peer (peer_argv). */
struct program {
	char *const *argv;
	char **envp;
	uid_t uid;
	gid_t gid;
	bool own_stdin; /* the run's stdin; else /dev/null (a split run's peer) */
	int channel;	/* its end of a split run's channel, or -1 */
};

/* ---- the program: containment, in order ---------------------------------- */

static _Noreturn void exec_fail(int fd, int setup_failed, int errnum, const char *text)
{
	struct exec_report r = {.setup_failed = setup_failed, .errnum = errnum};

	snprintf(r.text, sizeof(r.text), "%s", text);
	RAW3(SYS_write, fd, &r, sizeof(r)); /* also before `go` (rawsys.h) */
	_exit(127);
}

/* execvpe() that uses the sandbox's PATH from envp, not proctor's. */
static int exec_search(char *const *argv, char **envp)
{
	const char *path = "/usr/local/bin:/usr/bin:/bin";
	char buf[PATH_MAX];
	int last = ENOENT;

	if (strchr(argv[0], '/')) {
		execve(argv[0], argv, envp);
		return errno;
	}
	for (char **p = envp; *p; p++)
		if (strncmp(*p, "PATH=", 5) == 0)
			path = *p + 5;
	while (*path) {
		size_t n = strcspn(path, ":");
		if (n > 0 && (size_t)snprintf(buf, sizeof(buf), "%.*s/%s", (int)n, path, argv[0]) <
				 sizeof(buf)) {
			execve(buf, argv, envp);
			if (errno == EACCES)
				last = EACCES;
			else if (errno != ENOENT && errno != ENOTDIR)
				return errno;
		}
		path += n + (path[n] == ':');
	}
	return last;
}

/* The kernel's struct sigaction (rt_sigaction), for SIG_DFL only. */
struct kernel_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/*
 * Steps 1 to 4 need nothing of the run: the run's first program takes them
 * before it waits for the run (stub_entry), a peer just before the rest.
 * The first program runs them beside init, which builds the root at the
 * same time in the same memory, errno included: every call here is a
 * raw_syscall() decided by its return value (rawsys.h), so neither
 * process reads an errno the other wrote.
 */
static void contain_early(struct child_ctx *c, int report_fd)
{
	const struct kernel_sigaction dfl = {.handler = SIG_DFL};
	const uint64_t none = 0;
	struct err e;
	long r;

	/* 1. Join the run's cgroups (memory, cpu, pids, kill) before anything
	 *    of the program runs, so every byte and fork is accounted.  Both
	 *    programs of a split run join the same groups: one budget.  A v1
	 *    `tasks` fd moves only the writing thread: this process is one
	 *    thread (cloned without CLONE_THREAD, before anything of the
	 *    program runs).  The kill group of a hybrid host it is in already
	 *    (init was cloned into it). */
	for (size_t i = 0; i < c->n_cg; i++)
		if ((r = RAW3(SYS_write, c->cg_fds[i], "0", 1)) != 1)
			exec_fail(report_fd, 1, r < 0 ? (int)-r : EIO, "join cgroup");
	/* 2. SECURITY: a cgroup namespace rooted at the run's group hides the
	 *    host's cgroup paths. */
	if ((r = RAW1(SYS_unshare, CLONE_NEWCGROUP)) < 0)
		exec_fail(report_fd, 1, (int)-r, "unshare cgroup namespace");
	/* 3. A session of its own: no controlling terminal of ours. */
	RAW0(SYS_setsid);
	/* 4. Default signal dispositions and mask: ignored signals survive
	 *    execve.  (SIGKILL and SIGSTOP refuse, and need not.) */
	for (int sig = 1; sig <= 64; sig++)
		RAW4(SYS_rt_sigaction, sig, &dfl, NULL, sizeof(none));
	RAW4(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, sizeof(none));
	/* 4b. SECURITY: an empty bounding set (while still root): no execve
	 *     can ever regain a capability.  Step 7 drops the rest. */
	if (creds_drop_bounding(&e) < 0)
		exec_fail(report_fd, 1, e.errnum, e.msg);
}

static _Noreturn void contain_program(struct child_ctx *c, const struct program *p, int report_fd)
{
	const struct run_spec *spec = c->spec;
	struct err e;
	int in, chan = -1, moved;

	if (!c->early_done)
		contain_early(c, report_fd);
	/* 5. Descriptors: the capped pipes and the declared stdin (/dev/null
	 *    for a split run's peer); in a split run its end of the channel as
	 *    SANDBOX_CHANNEL_FD, without CLOEXEC; the exec report right above
	 *    (CLOEXEC).  Every other inherited descriptor is closed, so the
	 *    peer never holds the harness's end, nor the harness the peer's.
	 *    The report and the channel move above 4 first, so that placing
	 *    one cannot overwrite the other. */
	if ((moved = fcntl(report_fd, F_DUPFD_CLOEXEC, 5)) < 0)
		exec_fail(report_fd, 1, errno, "move report fd");
	report_fd = moved;
	if (p->channel >= 0 && (chan = fcntl(p->channel, F_DUPFD_CLOEXEC, 5)) < 0)
		exec_fail(report_fd, 1, errno, "move the channel");
	if (!p->own_stdin)
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	else if (c->stdin_fd >= 0)
		in = c->stdin_fd;
	else if (spec->stdin_path)
		in = open(spec->stdin_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	else
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in >= 0 && p->own_stdin && spec->stdin_path && fcntl(in, F_SETFL, 0) < 0)
		in = -1;
	if (in < 0 || dup2(in, 0) < 0 || dup2(c->out_w, 1) < 0 || dup2(c->err_w, 2) < 0)
		exec_fail(report_fd, 1, errno, "set up stdio");
	/* dup2() clears CLOEXEC: the program inherits the channel. */
	if (chan >= 0 && dup2(chan, SANDBOX_CHANNEL_FD) < 0)
		exec_fail(report_fd, 1, errno, "place the channel");
	int report_at = chan >= 0 ? SANDBOX_CHANNEL_FD + 1 : 3;
	if (dup3(report_fd, report_at, O_CLOEXEC) < 0)
		exec_fail(report_fd, 1, errno, "move report fd");
	report_fd = report_at;
	syscall(SYS_close_range, report_at + 1, ~0U, 0);
	if (chdir("/work") < 0)
		exec_fail(report_fd, 1, errno, "chdir /work");
	/* 6. Per-process limits, while still allowed to set hard limits. */
	if (creds_set_rlimits(&spec->limits, &e) < 0)
		exec_fail(report_fd, 1, e.errnum, e.msg);
	/* 7. SECURITY: its own uid/gid (the slot's; a split run's harness the
	 *    slot's plus SANDBOX_HARNESS_UID_OFFSET), no capabilities,
	 *    no_new_privs. */
	if (creds_drop(p->uid, p->gid, &e) < 0)
		exec_fail(report_fd, 1, e.errnum, e.msg);
	/* 7b. The run's directory (run_spec.cwd), entered as the program's
	 *     own identity: it reaches no directory the program could not
	 *     enter itself, and a wrong one is the caller's failure, reported
	 *     like a program that cannot be executed. */
	if (spec->cwd && chdir(spec->cwd) < 0) {
		int errnum = errno;
		char text[300];
		snprintf(text, sizeof(text), "cannot change directory to '%s': %s", spec->cwd,
			 strerror(errnum));
		exec_fail(report_fd, 0, errnum, text);
	}
	/* 8. SECURITY: the seccomp filter, last, so it also binds execve. */
	struct sock_fprog filter;
	seccomp_default_program(&filter);
	if (seccomp_install(&filter, &e) < 0)
		exec_fail(report_fd, 1, e.errnum, e.msg);
	int errnum = exec_search(p->argv, p->envp);
	char text[300];
	snprintf(text, sizeof(text), "cannot execute '%s': %s", p->argv[0], strerror(errnum));
	exec_fail(report_fd, 0, errnum, text);
}

/* ---- init: PID 1 of the sandbox ------------------------------------------- */

static char **build_env(char *const *extra, size_t count, const char *cwd);

struct program_arg {
	struct child_ctx *c;
	const struct program *p;
	int report_fd, report_r;
};

static int program_entry(void *arg)
{
	struct program_arg *a = arg;

	close(a->report_r);
	contain_program(a->c, a->p, a->report_fd);
}

static _Noreturn void init_fail(int msg_fd, const char *text)
{
	struct init_msg m = {.type = MSG_FAILED};

	snprintf(m.text, sizeof(m.text), "%s", text);
	(void)!write(msg_fd, &m, sizeof(m));
	_exit(1);
}

/* Read exactly len bytes; -1 at EOF or on error. */
static int read_full(int fd, char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = read(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One message of `len` bytes with up to two descriptors (SCM_RIGHTS). */
static int send_fds(int sock, const void *buf, size_t len, const int *fds, size_t nfds)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return send_with_fds(sock, &iov, 1, fds, nfds) == (ssize_t)len ? 0 : -1;
}

/* Receive exactly `len` bytes, the first part with up to `max`
 * descriptors (*nfds: how many came).  -1 at EOF or on error. */
static int recv_fds(int sock, void *buf, size_t len, int *fds, size_t max, size_t *nfds)
{
	ssize_t n = recv_with_fds(sock, buf, len, fds, max, nfds);

	if (n <= 0)
		return -1;
	return read_full(sock, (char *)buf + n, len - (size_t)n);
}

/* Split the body of a spec_msg into n NULL-terminated strings at *at. */
static char **unpack(char **at, const char *end, uint32_t n)
{
	char **v = calloc((size_t)n + 1, sizeof(char *));

	for (uint32_t i = 0; v && i < n; i++) {
		char *nul = memchr(*at, '\0', (size_t)(end - *at));
		if (!nul) {
			free(v);
			return NULL;
		}
		v[i] = *at;
		*at = nul + 1;
	}
	return v;
}

/* Init: read the run from the supervisor into `spec` and c's environments. */
static int recv_spec(struct child_ctx *c, struct run_spec *spec)
{
	struct spec_msg h;
	int fd = -1;
	size_t nfds;

	if (recv_fds(c->spec_r, &h, sizeof(h), &fd, 1, &nfds) < 0 || nfds != h.has_stdin_fd)
		return -1;
	char *body = malloc(h.body_len + 1), *at = body, *end = body + h.body_len;
	if (!body || read_full(c->spec_r, body, h.body_len) < 0)
		return -1;
	*spec = (struct run_spec){.limits = h.limits,
				  .stdin_fd = fd,
				  .env_count = h.n_env,
				  .peer_env_count = h.n_peer_env};
	char **argv = unpack(&at, end, h.n_argv), **env = unpack(&at, end, h.n_env);
	spec->argv = argv;
	spec->env = env;
	if (h.split && (!(spec->peer_argv = unpack(&at, end, h.n_peer_argv)) ||
			!(spec->peer_env = unpack(&at, end, h.n_peer_env))))
		return -1;
	const char **tail[2] = {&spec->stdin_path, &spec->cwd};
	bool has[2] = {h.has_stdin_path, h.has_cwd};
	for (size_t i = 0; i < 2; i++) {
		char *nul = has[i] ? memchr(at, '\0', (size_t)(end - at)) : NULL;
		if (has[i] && !nul)
			return -1;
		if (has[i]) {
			*tail[i] = at;
			at = nul + 1;
		}
	}
	c->spec = spec;
	c->stdin_fd = fd;
	c->envp = build_env(spec->env, spec->env_count, spec->cwd);
	if (h.split)
		c->peer_envp = build_env(spec->peer_env, spec->peer_env_count, spec->cwd);
	return argv && env && argv[0] && c->envp && (!h.split || c->peer_envp) ? 0 : -1;
}

/*
 * Start one program like posix_spawn: sharing init's memory until it execs
 * (CLONE_VM|CLONE_VFORK), so no page tables are copied; init is suspended
 * meanwhile, and contain_program() only makes system calls and formats
 * into its own stack.  When clone() returns the program has exec'd or
 * failed, so its report pipe has no writer left: *failed says whether
 * there is a report, in *rep.  The pid, or -1.
 */
static pid_t start_program(struct child_ctx *c, const struct program *p, char *stack_top,
			   struct exec_report *rep, bool *failed)
{
	int report[2];
	pid_t pid;

	*failed = false;
	if (pipe2(report, O_CLOEXEC) < 0)
		return -1;
	struct program_arg arg = {.c = c, .p = p, .report_fd = report[1], .report_r = report[0]};
	pid = clone(program_entry, stack_top, CLONE_VM | CLONE_VFORK | SIGCHLD, &arg);
	close(report[1]);
	if (pid > 0 && read(report[0], rep, sizeof(*rep)) == (ssize_t)sizeof(*rep)) {
		rep->text[sizeof(rep->text) - 1] = '\0';
		*failed = true;
	}
	close(report[0]);
	return pid;
}

/*
 * The run's first program (a split run's harness) is cloned before the root
 * is built and before the run is known: it shares init's memory (so its
 * pages are charged as init's, as a vfork'd program's are) and joins the
 * run's cgroups first (contain_early), while init builds the root, or
 * while a pooled jail is idle.  Then it waits on `go` for the descriptors
 * of the run (its stdin, its end of a split run's channel; init has
 * filled the context by then) and contains itself.  Its pre-exec report
 * goes to report_fd.
 */
struct stub_arg {
	struct child_ctx *c;
	const struct program *p; /* set by init before go */
	int report_fd, go;
};

/*
 * The stub's wait for the run on `go`: one byte of flags with up to two
 * descriptors.  Through raw_syscall(), as init may still be building the
 * root (contain_early).  -1 at EOF or on any failure.
 */
static int stub_wait(int go, char *flags, int fds[2], size_t *nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = flags, .iov_len = 1};
	struct msghdr m = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
	long n;

	*nfds = 0;
	while ((n = RAW3(SYS_recvmsg, go, &m, MSG_CMSG_CLOEXEC)) == -EINTR)
		;
	if (n != 1 || (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC)))
		return -1;
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && *nfds < 2; i++)
			memcpy(&fds[(*nfds)++], CMSG_DATA(h) + i * sizeof(int), sizeof(int));
	}
	return 0;
}

static int stub_entry(void *arg)
{
	struct stub_arg *a = arg;
	struct child_ctx *c = a->c;
	int fds[2] = {-1, -1};
	size_t nfds;
	char flags;

	contain_early(c, a->report_fd);
	RAW3(SYS_write, a->go, "j", 1); /* joined */
	if (stub_wait(a->go, &flags, fds, &nfds) < 0)
		_exit(1); /* init is gone */
	struct child_ctx sc = *c;
	struct program p = *a->p;
	size_t k = 0;
	sc.early_done = true;
	sc.stdin_fd = (flags & 1) && k < nfds ? fds[k++] : -1;
	p.channel = (flags & 2) && k < nfds ? fds[k++] : -1;
	contain_program(&sc, &p, a->report_fd);
}

static _Noreturn void init_main(struct child_ctx *c)
{
	struct pollfd life = {.fd = c->life_r, .events = POLLIN};
	struct jail *j = c->j;
	struct mount_plan plan = {
	    .root_dir = j->root,
	    .scratch_dir = j->scratch,
	    .system_dir = j->opts.system_dir ? j->opts.system_dir : "/",
	    .uid = j->slot.uid,
	    .gid = j->slot.gid,
	    .harness_uid = j->slot.uid + SANDBOX_HARNESS_UID_OFFSET,
	    .harness_gid = j->slot.gid + SANDBOX_HARNESS_UID_OFFSET,
	};
	struct init_msg m = {.type = MSG_STARTED};
	struct exec_report rep, peer_rep;
	struct run_spec spec;
	struct err e;
	int chan[2] = {-1, -1}, report[2], go[2], st = 0;
	bool split, failed = false, peer_failed = false;
	pid_t pid, w;

	/* SECURITY: the sandbox dies with its supervisor; if the supervisor
	 * died before this line, the lifeline pipe already shows it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (poll(&life, 1, 0) != 0)
		_exit(1);
	if (sethostname("proctor", 7) < 0)
		init_fail(c->msg_w, "sethostname failed");
	/* A stack for each program: one a program started on is never
	 * reused (a sanitizer build keeps its poisoned frames). */
	size_t stack_size = 256 * 1024;
	char *stack = mmap(NULL, 2 * stack_size, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stack == MAP_FAILED)
		init_fail(c->msg_w, "no memory for the program's stack");
	if (pipe2(report, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) < 0)
		init_fail(c->msg_w, "pipes for the program failed");
	struct stub_arg sa = {.c = c, .report_fd = report[1], .go = go[1]};
	pid = clone(stub_entry, stack + stack_size, CLONE_VM | SIGCHLD, &sa);
	if (pid < 0)
		init_fail(c->msg_w, "clone of the program failed");
	close(report[1]);
	close(go[1]);
	if (mount_build_root(&plan, &e) < 0)
		init_fail(c->msg_w, e.msg);
	/* Ready when the program's process has joined; if it could not, its
	 * report says why once the run starts. */
	char joined;
	if (read(go[0], &joined, 1) == 1) {
		struct init_msg ready = {.type = MSG_READY};
		(void)!write(c->msg_w, &ready, sizeof(ready));
	}
	if (recv_spec(c, &spec) < 0)
		_exit(1); /* the supervisor gave up the run */
	split = spec.peer_argv != NULL;
	if (split && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0)
		init_fail(c->msg_w, "socketpair for the split run's channel failed");

	/* A plain run: argv as the slot uid.  A split run: argv as the
	 * harness, then peer_argv as the slot uid, each with one end of the
	 * channel. */
	const struct program prog = {
	    .argv = spec.argv,
	    .envp = c->envp,
	    .uid = split ? plan.harness_uid : plan.uid,
	    .gid = split ? plan.harness_gid : plan.gid,
	    .own_stdin = true,
	    .channel = -1,
	};
	const struct program peer = {
	    .argv = spec.peer_argv,
	    .envp = c->peer_envp,
	    .uid = plan.uid,
	    .gid = plan.gid,
	    .own_stdin = false,
	    .channel = chan[1],
	};
	sa.p = &prog;
	int pass[2], npass = 0;
	char flags = 0;
	if (c->stdin_fd >= 0) {
		pass[npass++] = c->stdin_fd;
		flags |= 1;
	}
	if (split) {
		pass[npass++] = chan[0];
		flags |= 2;
	}
	m.t_ns = now_ns();
	/* A program's process that is gone left its report (or dies with us). */
	send_fds(go[0], &flags, 1, pass, (size_t)npass);
	/* EOF: it exec'd (the pipe is CLOEXEC) or died; else its report. */
	if (read(report[0], &rep, sizeof(rep)) == (ssize_t)sizeof(rep)) {
		rep.text[sizeof(rep.text) - 1] = '\0';
		failed = true;
	}
	close(report[0]);
	close(go[0]);
	/* A harness that could not start has no use for its peer. */
	if (split && !failed &&
	    start_program(c, &peer, stack + 2 * stack_size, &peer_rep, &peer_failed) < 0)
		init_fail(c->msg_w, "clone of the peer failed");
	if (!failed) /* a failed program may still be on its stack */
		munmap(stack, 2 * stack_size);
	xclose(chan[0]);
	xclose(chan[1]);
	close(c->out_w);
	close(c->err_w);
	xclose(c->stdin_fd);
	for (size_t i = 0; i < c->n_cg; i++)
		close(c->cg_fds[i]);
	(void)!write(c->msg_w, &m, sizeof(m));

	if (failed && rep.setup_failed)
		init_fail(c->msg_w, rep.text);
	if (peer_failed) {
		/* The run could not start: reported like a program that could
		 * not be executed (exit 127), naming the peer.  Init's exit
		 * then kills the harness. */
		char text[sizeof(peer_rep.text) + 8];
		snprintf(text, sizeof(text), "peer: %s", peer_rep.text);
		if (peer_rep.setup_failed)
			init_fail(c->msg_w, text);
		m = (struct init_msg){.type = MSG_EXITED, .wstatus = 127 << 8, .t_ns = now_ns()};
		m.exec_errno = peer_rep.errnum ? peer_rep.errnum : ENOEXEC;
		snprintf(m.text, sizeof(m.text), "%s", text);
		(void)!write(c->msg_w, &m, sizeof(m));
		_exit(0);
	}

	/* Reap orphans that reparent to us until the program (a split run's
	 * harness) itself exits; its daemons, and the peer, are not waited for. */
	do {
		w = waitpid(-1, &st, 0);
	} while (w != pid && (w >= 0 || errno == EINTR));
	if (w != pid)
		init_fail(c->msg_w, "lost the program's exit status");

	m = (struct init_msg){.type = MSG_EXITED, .wstatus = st, .t_ns = now_ns()};
	if (failed) {
		m.exec_errno = rep.errnum ? rep.errnum : ENOEXEC;
		snprintf(m.text, sizeof(m.text), "%s", rep.text);
	}
	(void)!write(c->msg_w, &m, sizeof(m));
	_exit(0);
}

/* ---- supervisor ------------------------------------------------------------ */

/* The fixed base environment with `extra` (NAME=VALUE) added or replacing;
 * PWD is the run's directory `cwd` when there is one (NULL: /work). */
static char **build_env(char *const *extra, size_t count, const char *cwd)
{
	size_t nbase = sizeof(base_env) / sizeof(base_env[0]), n = 0;
	char **env = calloc(nbase + count + 1, sizeof(char *));

	if (!env)
		return NULL;
	for (size_t i = 0; i < nbase; i++)
		env[n++] = (char *)base_env[i];
	if (cwd) {
		/* Init's own memory, freed when it exits. */
		size_t len = strlen(cwd) + 16;
		char *pwd = malloc(len);
		if (!pwd) {
			free(env);
			return NULL;
		}
		snprintf(pwd, len, "PWD=%s%s", cwd[0] == '/' ? "" : "/work/", cwd);
		for (size_t i = 0; i < n; i++)
			if (strncmp(env[i], "PWD=", 4) == 0)
				env[i] = pwd;
	}
	for (size_t i = 0; i < count; i++) {
		const char *kv = extra[i];
		size_t klen = strcspn(kv, "=");
		size_t k = 0;
		for (; k < n; k++)
			if (strncmp(env[k], kv, klen + 1) == 0)
				break;
		env[k] = (char *)kv;
		if (k == n)
			n++;
	}
	env[n] = NULL;
	return env;
}

/* Read what is available, at most `budget` chunks, so a flood cannot starve
 * the deadline checks; each chunk also goes to spec->on_output (stream 1 or
 * 2).  Returns false at EOF. */
static bool drain(int fd, struct capbuf *b, int budget, const struct run_spec *spec, int stream)
{
	char buf[65536];

	while (budget-- > 0) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n > 0) {
			if (spec->on_output)
				spec->on_output(spec->on_output_ctx, stream, buf, (size_t)n);
			capbuf_append(b, buf, (size_t)n);
			continue;
		}
		if (n == 0)
			return false;
		return errno == EAGAIN || errno == EINTR;
	}
	return true;
}

static bool disk_full(struct jail *j)
{
	struct statvfs sv;

	if (fstatvfs(j->scratch_fd, &sv) < 0)
		return false;
	return scratch_full((uint64_t)sv.f_bavail * sv.f_frsize, sv.f_favail);
}

struct run_state {
	uint64_t t_start, t_end;
	bool started, exited, init_gone;
	int wstatus, exec_errno;
	unsigned killed_for; /* LIMIT_HIT_* that made the supervisor kill */
	char text[512];
	bool failed;
};

static void handle_msg(int fd, struct run_state *s)
{
	struct init_msg m;
	ssize_t n = read(fd, &m, sizeof(m));

	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
		s->init_gone = true;
		return;
	}
	if (n != (ssize_t)sizeof(m))
		return;
	m.text[sizeof(m.text) - 1] = '\0';
	switch (m.type) {
	case MSG_STARTED:
		s->started = true;
		s->t_start = m.t_ns;
		break;
	case MSG_EXITED:
		s->exited = true;
		s->t_end = m.t_ns;
		s->wstatus = m.wstatus;
		s->exec_errno = m.exec_errno;
		snprintf(s->text, sizeof(s->text), "%s", m.text);
		break;
	case MSG_FAILED:
		s->failed = true;
		snprintf(s->text, sizeof(s->text), "sandbox setup: %s", m.text);
		break;
	default:
		break;
	}
}

/* Bytes of files in the scratch tree (charged to the slot as shmem). */
static uint64_t scratch_used(struct jail *j)
{
	struct statvfs sv;

	if (fstatvfs(j->scratch_fd, &sv) < 0)
		return 0;
	return (uint64_t)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

/*
 * The program's memory: what the group holds less the writable tree's
 * files it was charged for.  Files put in before the run (by proctor, in
 * its own group) were never charged to the program, so they are not
 * subtracted: run_files_uncharged is their size, taken when the run starts.
 */
static uint64_t program_memory(const struct jail *j, const struct cgroup_usage *u)
{
	uint64_t files = scratch_used((struct jail *)j);
	files = files > j->run_files_uncharged ? files - j->run_files_uncharged : 0;
	if (files > u->shmem_bytes)
		files = u->shmem_bytes;
	return u->held_bytes > files ? u->held_bytes - files : 0;
}

/*
 * Check the sandbox-wide CPU and memory budgets.  The program's memory is
 * what the kernel charges to its group and reclaim cannot take back
 * (anonymous memory, shared mappings, memfd, SysV shm, and kernel memory
 * such as socket buffers, pipes and page tables) minus the files of the
 * scratch tree, which the disk limit governs.  Then the usage threshold is
 * re-armed at the charge where that memory would pass the limit.
 */
static void check_budgets(struct jail *j, const struct limits *l, struct run_state *s)
{
	struct cgroup_usage u;
	struct err ignored;

	if (cgroup_sample(&j->cg, &u, &ignored) < 0)
		return;
	uint64_t mem = program_memory(j, &u);
	if (mem > l->memory_bytes && u.kernel_bytes > 0 && u.cpu_ns / 1000000 < l->cpu_ms) {
		/* Part of it may be kernel memory that pressure would take back
		 * (dentries, inodes): ask for the excess back and an eighth of
		 * the limit more, so a program that keeps making them is not
		 * back here at the next sample, then look again.  It would be
		 * killed otherwise, so the moment of a lowered limit costs it
		 * nothing. */
		uint64_t want = mem - l->memory_bytes + l->memory_bytes / 8;
		cgroup_reclaim(&j->cg, want < u.kernel_bytes ? want : u.kernel_bytes);
		if (cgroup_sample(&j->cg, &u, &ignored) < 0)
			return;
		mem = program_memory(j, &u);
	}
	if (u.cpu_ns / 1000000 >= l->cpu_ms)
		s->killed_for |= LIMIT_HIT_CPU;
	else if (mem > l->memory_bytes)
		s->killed_for |= LIMIT_HIT_MEMORY;
	else
		cgroup_watch_memory(&j->cg, u.charged_bytes + (l->memory_bytes - mem) + 1);
}

static void supervise(struct jail *j, const struct run_spec *spec, int pidfd, int out_r, int err_r,
		      int msg_r, struct run_result *res, struct run_state *s)
{
	uint64_t wall_ns = spec->limits.wall_ms * 1000000ull;
	uint64_t now = now_ns();
	uint64_t deadline = now + wall_ns + SETUP_SLACK_NS, next_sample = now + SAMPLE_NS;
	struct pollfd p[5] = {
	    {.fd = out_r, .events = POLLIN}, {.fd = err_r, .events = POLLIN},
	    {.fd = msg_r, .events = POLLIN}, {.fd = pidfd, .events = POLLIN},
	    {.fd = -1, .events = POLLIN}, /* the memory threshold (cgroup_watch_memory) */
	};

	/* Before the program runs, the tree holds what was put in (charged to
	 * proctor) and what earlier runs wrote (charged to the slot group). */
	struct cgroup_usage u0;
	struct err ignored;
	uint64_t files0 = scratch_used(j);
	j->run_files_uncharged = 0;
	if (cgroup_sample(&j->cg, &u0, &ignored) == 0 && files0 > u0.shmem_bytes)
		j->run_files_uncharged = files0 - u0.shmem_bytes;
	check_budgets(j, &spec->limits, s);
	while (!s->exited && !s->failed && !s->killed_for) {
		now = now_ns();
		if (now >= deadline) {
			s->killed_for |= LIMIT_HIT_WALL;
			break;
		}
		if (now >= next_sample) {
			check_budgets(j, &spec->limits, s);
			/* From after the sample: a slow one never starves the pipes. */
			next_sample = now_ns() + SAMPLE_NS;
			continue;
		}
		uint64_t until = deadline < next_sample ? deadline : next_sample;
		int timeout = (int)((until - now + 999999) / 1000000);
		p[4].fd = j->cg.watch_fd;
		if (poll(p, 5, timeout) < 0 && errno != EINTR) {
			s->failed = true;
			snprintf(s->text, sizeof(s->text), "poll: %s", strerror(errno));
			break;
		}
		if (p[4].fd >= 0 && p[4].revents) {
			/* The charge crossed the threshold: sample now (which
			 * re-arms it), not at the next tick. */
			cgroup_watch_fired(&j->cg);
			check_budgets(j, &spec->limits, s);
		}
		if (p[0].revents && !drain(out_r, &res->out, 16, spec, 1))
			p[0].fd = -1;
		if (p[1].revents && !drain(err_r, &res->err, 16, spec, 2))
			p[1].fd = -1;
		if (p[2].revents) {
			handle_msg(msg_r, s);
			if (s->started)
				deadline = s->t_start + wall_ns;
			if (s->init_gone)
				p[2].fd = -1;
		}
		if (p[3].revents && !(p[2].revents & POLLIN)) {
			/* Init is gone; whatever it said is already read. */
			handle_msg(msg_r, s);
			if (!s->exited && !s->failed) {
				s->failed = true;
				snprintf(s->text, sizeof(s->text),
					 "sandbox init died without reporting");
			}
		}
	}
	if (!s->exited && s->started)
		s->t_end = now_ns();
}

static void finish_result(struct jail *j, const struct run_spec *spec, struct run_state *s,
			  struct run_result *res)
{
	struct cgroup_usage u = {0};
	struct err ignored;
	const struct limits *l = &spec->limits;

	cgroup_sample(&j->cg, &u, &ignored);
	res->cpu_ms = u.cpu_ns / 1000000;
	res->wall_ms = s->started && s->t_end > s->t_start ? (s->t_end - s->t_start) / 1000000 : 0;
	res->peak_memory_kib = u.peak_bytes / 1024;
	res->peak_pids = u.peak_pids;
	if (u.pids_max_hit)
		res->limits_hit |= LIMIT_HIT_PIDS;
	if (disk_full(j))
		res->limits_hit |= LIMIT_HIT_DISK;
	if (res->out.truncated || res->err.truncated)
		res->limits_hit |= LIMIT_HIT_OUTPUT;

	if (s->exited && WIFSIGNALED(s->wstatus))
		res->signal = WTERMSIG(s->wstatus);
	else if (s->exited && WIFEXITED(s->wstatus))
		res->exit_code = WEXITSTATUS(s->wstatus);
	else if (s->killed_for)
		res->signal = SIGKILL;

	run_result_classify(res, l, s->killed_for, u.oom_kills > 0, s->exec_errno ? s->text : NULL);
}

static void launch_close(struct launch *l)
{
	if (!l->pid)
		return;
	xclose(l->pidfd);
	xclose(l->out_r);
	xclose(l->err_r);
	xclose(l->msg_r);
	xclose(l->life_w);
	xclose(l->spec_w);
	xclose(l->ipcfd);
	*l = (struct launch){0};
}

/* Remove every SysV object listed in /proc/sysvipc/`kind` (of the calling
 * thread's IPC namespace), whose id is the list's second column. */
static void ipc_remove(const char *kind)
{
	char path[64], line[512];

	snprintf(path, sizeof(path), "/proc/sysvipc/%s", kind);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f)) { /* the header */
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		long long key;
		int id;
		if (sscanf(line, "%lld %d", &key, &id) != 2)
			continue;
		if (kind[0] == 's' && kind[1] == 'h')
			shmctl(id, IPC_RMID, NULL);
		else if (kind[0] == 's')
			semctl(id, 0, IPC_RMID);
		else
			msgctl(id, IPC_RMID, NULL);
	}
	fclose(f);
}

/*
 * A run's SysV objects, removed once everything of the run is dead: the
 * namespace would free them too, but later and asynchronously, and until
 * then a segment stays charged to the slot's memory group, so the next
 * run of the sandbox (the test step after the build) was charged for it
 * and could end `memory_limit` doing nothing.  With no process attached,
 * IPC_RMID frees a segment at once.  The calling thread enters the run's
 * namespace for that and returns to its own.
 */
static void ipc_clear(int nsfd)
{
	static int own = -1;

	if (nsfd < 0)
		return;
	if (own < 0)
		own = open("/proc/thread-self/ns/ipc", O_RDONLY | O_CLOEXEC);
	if (own < 0 || setns(nsfd, CLONE_NEWIPC) < 0)
		return;
	ipc_remove("shm");
	ipc_remove("sem");
	ipc_remove("msg");
	if (setns(own, CLONE_NEWIPC) < 0)
		abort(); /* never left in a sandbox's namespace */
}

/* Kill a launch's init and everything in the slot, and reap init. */
static void launch_kill(struct jail *j, struct launch *l, struct err *e, bool *failed)
{
	struct err ignored;

	syscall(SYS_pidfd_send_signal, l->pidfd, SIGKILL, NULL, 0);
	if (cgroup_kill_all(&j->cg, e ? e : &ignored) < 0 && failed)
		*failed = true;
	while (waitpid((pid_t)l->pid, NULL, 0) < 0 && errno == EINTR)
		;
}

/* The last run's init, killed by jail_run(): reap it (its exit is long
 * done when the next run or the destroy comes), then remove the run's
 * groups it was in. */
static void jail_reap(struct jail *j)
{
	if (!j->dying.pid)
		return;
	while (waitpid((pid_t)j->dying.pid, NULL, 0) < 0 && errno == EINTR)
		;
	xclose(j->dying.pidfd);
	j->dying = (struct launch){0};
	cgroup_run_end(&j->cg);
}

/*
 * Whether a clone into a cgroup works in this process: a kernel that
 * compares the group's count of cgroup.kill writes with the parent's own
 * group's (6.18) kills the child at birth when they differ.  The run's
 * group is new, so only a parent in a group that was once killed meets
 * it; then every later launch of this process joins by writing.  A fact
 * about this process and its kernel, found by its first launch.
 */
static enum { CLONE_INTO_UNTRIED, CLONE_INTO_WORKS, CLONE_INTO_BROKEN } clone_into;

/* The child `pid` was just cloned: whether the kernel killed it at birth
 * (queued before clone3 returned, so it is already pending, or done). */
static bool killed_at_birth(long pid, int pidfd)
{
	char path[64], status[4096];
	struct err ignored;
	siginfo_t si = {0};

	if (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid != 0)
		return si.si_code == CLD_KILLED && si.si_status == SIGKILL;
	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	if (read_file_at(AT_FDCWD, path, status, sizeof(status), &ignored) < 0)
		return false;
	/* A SIGKILL is queued for the process and, once delivery started,
	 * for its thread as well. */
	static const char *const keys[] = {"\nSigPnd:", "\nShdPnd:"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const char *at = strstr(status, keys[i]);
		if (at && (strtoull(at + strlen(keys[i]), NULL, 16) & (1ull << (SIGKILL - 1))))
			return true;
	}
	return false;
}

/*
 * Clone the init of the next run: the run's pids group, the pipes, and
 * init, which builds the root and starts the program's process (joining
 * the run's groups) and then waits for the run (send_spec).  The jail's
 * pool does this ahead for the first run; every other run just before.
 */
static int jail_launch(struct jail *j, struct launch *l, struct err *e)
{
	struct child_ctx c = {.j = j, .stdin_fd = -1};
	int out[2] = {-1, -1}, errp[2] = {-1, -1}, msg[2] = {-1, -1}, life[2] = {-1, -1};
	int spec[2] = {-1, -1}, pidfd = -1, rc = -1, into;
	long pid = -1;

	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || pipe2(msg, O_CLOEXEC) < 0 ||
	    pipe2(life, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, spec) < 0) {
		err_set(e, errno, "pipe");
		goto out;
	}
	/* Bigger pipes: fewer wake-ups for a chatty program. */
	fcntl(out[1], F_SETPIPE_SZ, 1 << 20);
	fcntl(errp[1], F_SETPIPE_SZ, 1 << 20);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	fcntl(msg[0], F_SETFL, O_NONBLOCK);
	c.out_w = out[1];
	c.err_w = errp[1];
	c.msg_w = msg[1];
	c.life_r = life[0];
	c.spec_r = spec[1];
	jail_reap(j);
again:
	if (cgroup_run_group(&j->cg, clone_into != CLONE_INTO_BROKEN ? CGROUP_RUN_CLONE_INTO : 0,
			     c.cg_fds, &c.n_cg, &into, e) < 0)
		goto out; /* the caller removes a run group it may have made */

	/* SECURITY: new pid, mount, network, IPC and UTS namespaces for init
	 * and everything below it.  No user namespace: the program is held by
	 * a real unprivileged uid, which the host kernel's checks understand.
	 * The cgroup namespace is entered by the program after joining its
	 * groups (contain_program).  Where the run has a group without
	 * controllers (a hybrid host's v2 group: cgroup_run_group()), init is
	 * born in it: everything below init is in the group cgroup.kill
	 * empties from its first instruction, and nobody waits for the grace
	 * period a cgroup.procs write costs. */
	struct clone_args ca = {
	    .flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
		     CLONE_PIDFD | (into >= 0 ? CLONE_INTO_CGROUP : 0),
	    .pidfd = (uint64_t)(uintptr_t)&pidfd,
	    .exit_signal = SIGCHLD,
	    .cgroup = into >= 0 ? (uint64_t)into : 0,
	};
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		err_set(e, errno, "clone the sandbox init");
		goto out;
	}
	if (pid == 0) {
		close(out[0]);
		close(errp[0]);
		close(msg[0]);
		close(life[1]);
		close(spec[0]);
		init_main(&c);
	}
	if (into >= 0 && clone_into == CLONE_INTO_UNTRIED) {
		clone_into = killed_at_birth(pid, pidfd) ? CLONE_INTO_BROKEN : CLONE_INTO_WORKS;
		if (clone_into == CLONE_INTO_BROKEN) {
			while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
				;
			pidfd = xclose(pidfd);
			while (c.n_cg > 0)
				close(c.cg_fds[--c.n_cg]);
			cgroup_run_end(&j->cg);
			goto again;
		}
	}
	/* While init builds the root. */
	cgroup_run_reclaim(&j->cg);
	char ns[64];
	snprintf(ns, sizeof(ns), "/proc/%ld/ns/ipc", pid);
	*l = (struct launch){.pid = pid,
			     .ipcfd = open(ns, O_RDONLY | O_CLOEXEC),
			     .pidfd = pidfd,
			     .out_r = take_fd(&out[0]),
			     .err_r = take_fd(&errp[0]),
			     .msg_r = take_fd(&msg[0]),
			     .life_w = take_fd(&life[1]),
			     .spec_w = take_fd(&spec[0])};
	rc = 0;
out:
	for (size_t i = 0; i < c.n_cg; i++)
		close(c.cg_fds[i]);
	for (int i = 0; i < 2; i++) {
		xclose(out[i]);
		xclose(errp[i]);
		xclose(msg[i]);
		xclose(life[i]);
		xclose(spec[i]);
	}
	return rc;
}

/* Hand init the run (struct spec_msg). */
static int send_spec(int sock, const struct run_spec *spec, struct err *e)
{
	struct spec_msg h = {.limits = spec->limits,
			     .split = spec->peer_argv != NULL,
			     .has_stdin_path = spec->stdin_path != NULL,
			     .has_stdin_fd = spec->stdin_fd >= 0,
			     .has_cwd = spec->cwd != NULL};
	char *const *lists[4] = {spec->argv, spec->env, spec->peer_argv, spec->peer_env};
	size_t counts[4] = {0, spec->env_count, 0, spec->peer_env_count};
	uint32_t *n[4] = {&h.n_argv, &h.n_env, &h.n_peer_argv, &h.n_peer_env};
	size_t len = (spec->stdin_path ? strlen(spec->stdin_path) + 1 : 0) +
		     (spec->cwd ? strlen(spec->cwd) + 1 : 0);

	for (size_t i = 0; i < 4; i += 2)
		while (lists[i] && lists[i][counts[i]])
			counts[i]++;
	for (size_t i = 0; i < 4; i++) {
		*n[i] = (uint32_t)counts[i];
		for (size_t k = 0; lists[i] && k < counts[i]; k++)
			len += strlen(lists[i][k]) + 1;
	}
	char *body = malloc(len ? len : 1), *at = body;
	if (!body)
		return err_set(e, ENOMEM, "the run's arguments");
	for (size_t i = 0; i < 4; i++)
		for (size_t k = 0; lists[i] && k < counts[i]; k++)
			at = stpcpy(at, lists[i][k]) + 1;
	if (spec->stdin_path)
		at = stpcpy(at, spec->stdin_path) + 1;
	if (spec->cwd)
		strcpy(at, spec->cwd);
	h.body_len = len;
	int rc = send_fds(sock, &h, sizeof(h), &spec->stdin_fd, h.has_stdin_fd);
	for (size_t off = 0; rc == 0 && off < len;) {
		ssize_t w = send(sock, body + off, len - off, MSG_NOSIGNAL);
		if (w < 0 && errno != EINTR)
			rc = -1;
		off += w > 0 ? (size_t)w : 0;
	}
	free(body);
	return rc < 0 ? err_set(e, errno, "hand the run to the sandbox's init") : 0;
}

static int jail_run(struct sandbox *sb, const struct run_spec *spec, struct run_result *res,
		    struct err *e)
{
	struct jail *j = (struct jail *)sb;
	struct launch l = j->ready;
	struct run_state s = {0};
	int rc = -1;

	jail_reap(j);
	j->ready = (struct launch){0};
	if (l.pid && j->tops_changed) {
		/* Its root was built before a top-level directory was put:
		 * it goes, with the run's groups it was made in. */
		launch_kill(j, &l, NULL, NULL);
		launch_close(&l);
		cgroup_run_end(&j->cg);
		l = (struct launch){0};
	}
	j->tops_changed = false;
	if (spec->privileged || (spec->peer_argv && !spec->peer_argv[0])) {
		err_set(e, spec->privileged ? 0 : EINVAL, "%s",
			spec->privileged ? "the jail never runs a program as root (--privileged is "
					   "for microVMs only)"
					 : "a split run's peer_argv is empty");
		if (l.pid)
			launch_kill(j, &l, NULL, NULL);
		goto out;
	}
	if (!l.pid && jail_launch(j, &l, e) < 0)
		goto out;
	/* The limits of this run, taken now whenever init was started. */
	if (cgroup_run_limits(&j->cg, &spec->limits, e) < 0 || send_spec(l.spec_w, spec, e) < 0) {
		launch_kill(j, &l, NULL, NULL);
		goto out;
	}

	supervise(j, spec, l.pidfd, l.out_r, l.err_r, l.msg_r, res, &s);

	/* Kill everything: init (and with it the pid namespace) and every
	 * process in the slot's cgroups.  Init itself is reaped later
	 * (jail_reap()): its exit, which tears down its namespaces, takes a
	 * millisecond that the result does not need. */
	syscall(SYS_pidfd_send_signal, l.pidfd, SIGKILL, NULL, 0);
	if (cgroup_kill_run(&j->cg, e) < 0)
		s.failed = true;
	ipc_clear(l.ipcfd);
	/* All writers are dead now: the rest of the output drains to EOF. */
	uint64_t drain_end = now_ns() + DRAIN_NS;
	bool out_open = true, err_open = true;
	while ((out_open || err_open) && now_ns() < drain_end) {
		if (out_open)
			out_open = drain(l.out_r, &res->out, 64, spec, 1);
		if (err_open)
			err_open = drain(l.err_r, &res->err, 64, spec, 2);
	}

	finish_result(j, spec, &s, res);
	if (s.failed) {
		res->status = RUN_ERROR;
		snprintf(res->message, sizeof(res->message), "%s",
			 s.text[0] ? s.text : "sandbox failed");
		err_set(e, 0, "%s", res->message);
	} else {
		rc = 0;
	}
	j->dying = (struct launch){.pid = l.pid, .pidfd = take_fd(&l.pidfd)};
	launch_close(&l);
	return rc;
out:
	launch_close(&l);
	cgroup_run_end(&j->cg);
	return rc;
}

/* ---- the other verbs -------------------------------------------------------- */

static void jail_destroy(struct sandbox *sb)
{
	struct jail *j = (struct jail *)sb;
	struct err ignored;

	if (!j)
		return;
	jail_reap(j);
	if (j->ready.pid) {
		launch_kill(j, &j->ready, NULL, NULL);
		launch_close(&j->ready);
	}
	if (j->cg.mem_fd >= 0) {
		cgroup_kill_all(&j->cg, &ignored);
		cgroup_run_end(&j->cg);
		cgroup_slot_close(&j->cg);
	}
	j->scratch_fd = xclose(j->scratch_fd);
	if (j->slot.lock_fd >= 0) {
		slot_unmount_scratch(&j->slot);
		slot_release(&j->slot);
	}
	free(j);
}

static int jail_new(const struct sandbox_options *opts, unsigned wait_ms, struct jail **ret,
		    struct err *e)
{
	struct jail *j = calloc(1, sizeof(*j));

	if (!j)
		return err_set(e, ENOMEM, "sandbox");
	j->base.ops = &jail_ops;
	j->opts = *opts;
	j->scratch_fd = -1;
	j->slot.lock_fd = j->slot.dir_fd = -1;
	j->cg.mem_fd = -1;
	if (slot_lease_within(opts->state_dir, opts->max_slots, opts->uid_base, wait_ms, &j->slot,
			      e) < 0) {
		if (wait_ms == 0 && e->kind == ERR_BUSY) {
			/* Waiting was not asked for: say so, not "stayed busy for 0 s". */
			err_setk(e, ERR_BUSY, 0, "all %u sandbox slots of this host are in use",
				 opts->max_slots);
			e->errnum = EBUSY;
		}
		goto out_destroy;
	}
	if (cgroup_slot_open(&j->cg, j->slot.index, e) < 0) {
		err_wrap(e, "cgroups of slot %u", j->slot.index);
		goto out_destroy;
	}
	snprintf(j->scratch, sizeof(j->scratch), "%s/scratch", j->slot.dir);
	snprintf(j->root, sizeof(j->root), "%s/root", j->slot.dir);
	if (mount_scratch(j->scratch, (unsigned long long)opts->disk_bytes, j->slot.uid,
			  j->slot.gid, e) < 0)
		goto out_destroy;
	j->base.untrusted_uid = j->slot.uid;
	j->scratch_fd = open(j->scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (j->scratch_fd < 0) {
		err_set(e, errno, "open '%s'", j->scratch);
		goto out_destroy;
	}
	*ret = j;
	return 0;
out_destroy:
	jail_destroy(&j->base);
	return -1;
}

/*
 * The pool ($PROCTOR_JAIL_POOL, else pool_hint(), else 0; at most 8):
 * jails made ahead with the options of this process's last create(),
 * each a whole new sandbox (its slot leased without waiting, its cgroups
 * opened and cleaned, its scratch tree mounted) with its first run's init
 * launched (jail_launch): namespaces made, root built, the program's
 * process in the run's groups, waiting for the run.  create() hands one
 * out; nothing of it was ever used, and its run's limits are set when the
 * run starts, so it is as fresh as a jail made on demand.  pool_fill()
 * makes them when the process is idle (a worker between jobs); create()
 * makes one first when none is kept.  They die with the process (init's
 * PDEATHSIG, the supervisor's mount namespace); pool_drain() removes them.
 */
#define POOL_MAX 8
static struct {
	struct jail *j[POOL_MAX];
	size_t n;
	unsigned hint;
	bool known;  /* opts holds the options of the last create() */
	pid_t owner; /* the process whose children the kept inits are */
	struct sandbox_options opts;
	char state_dir[PATH_MAX], system_dir[PATH_MAX];
} pool;

static size_t pool_target(void)
{
	const char *s = getenv("PROCTOR_JAIL_POOL");
	long n = s ? strtol(s, NULL, 10) : (long)pool.hint;

	return n < 0 ? 0 : n > POOL_MAX ? POOL_MAX : (size_t)n;
}

static void jail_pool_hint(unsigned n)
{
	pool.hint = n;
}

/* A fork of the owner (a worker, or one exiting through atexit) neither
 * uses nor destroys the owner's jails: their inits, mounts and groups are
 * the owner's.  It starts with an empty pool of its own. */
static void pool_forget_if_forked(void)
{
	if (pool.owner != getpid())
		pool.n = 0;
	pool.owner = getpid();
}

static void jail_pool_drain(void)
{
	pool_forget_if_forked();
	while (pool.n > 0)
		jail_destroy(&pool.j[--pool.n]->base);
}

/* Wait (at most SETUP_SLACK_NS) for a launched init to say MSG_READY. */
static bool launch_ready(const struct launch *l)
{
	struct pollfd p = {.fd = l->msg_r, .events = POLLIN};
	uint64_t end = now_ns() + SETUP_SLACK_NS;
	struct init_msg m;

	for (uint64_t now = now_ns(); now < end; now = now_ns()) {
		int r = poll(&p, 1, (int)((end - now) / 1000000 + 1));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || read(l->msg_r, &m, sizeof(m)) != (ssize_t)sizeof(m))
			return false;
		return m.type == MSG_READY;
	}
	return false;
}

static void jail_pool_fill(void)
{
	struct err ignored;
	struct jail *j;

	pool_forget_if_forked();
	while (pool.known && pool.n < pool_target()) {
		if (jail_new(&pool.opts, 0, &j, &ignored) < 0)
			return;
		if (jail_launch(j, &j->ready, &ignored) < 0 || !launch_ready(&j->ready)) {
			jail_destroy(&j->base);
			return;
		}
		pool.j[pool.n++] = j;
	}
}

/* Remember opts as the pool's; false if they do not fit its buffers. */
static bool pool_remember(const struct sandbox_options *opts)
{
	static bool registered;

	if (pool.known && opts->max_slots == pool.opts.max_slots &&
	    opts->uid_base == pool.opts.uid_base && opts->disk_bytes == pool.opts.disk_bytes &&
	    strcmp(opts->state_dir, pool.state_dir) == 0 &&
	    strcmp(opts->system_dir ? opts->system_dir : "", pool.system_dir) == 0)
		return true;
	jail_pool_drain();
	pool.known = false;
	if (snprintf(pool.state_dir, sizeof(pool.state_dir), "%s", opts->state_dir) >=
		(int)sizeof(pool.state_dir) ||
	    snprintf(pool.system_dir, sizeof(pool.system_dir), "%s",
		     opts->system_dir ? opts->system_dir : "") >= (int)sizeof(pool.system_dir))
		return false;
	pool.opts = *opts;
	pool.opts.state_dir = pool.state_dir;
	pool.opts.system_dir = opts->system_dir ? pool.system_dir : NULL;
	pool.known = true;
	if (!registered) {
		atexit(jail_pool_drain);
		registered = true;
	}
	return true;
}

static int jail_create(const struct sandbox_options *opts, struct sandbox **ret, struct err *e)
{
	struct jail *j;

	pool_forget_if_forked();
	if (pool_target() > 0 && pool_remember(opts)) {
		if (pool.n == 0)
			jail_pool_fill();
		if (pool.n > 0) {
			j = pool.j[--pool.n];
			j->opts = *opts;
			*ret = &j->base;
			return 0;
		}
	}
	if (jail_new(opts, opts->slot_no_wait ? 0 : SLOT_WAIT_MS, &j, e) < 0)
		return -1;
	*ret = &j->base;
	return 0;
}

/* The next run's init, launched ahead (sandbox_ops.warm): what the pool
 * does for a jail's first run, for any run of a jail a holder keeps (a
 * keeper of the sandbox API, between its calls). */
static void jail_warm(struct sandbox *sb)
{
	struct jail *j = (struct jail *)sb;
	struct err ignored;

	if (j->ready.pid)
		return;
	if (jail_launch(j, &j->ready, &ignored) < 0) {
		launch_close(&j->ready);
		cgroup_run_end(&j->cg);
	}
}

static int jail_put(struct sandbox *sb, const char *host_path, const char *sandbox_path,
		    unsigned flags, struct err *e)
{
	struct jail *j = (struct jail *)sb;
	char rel[PATH_MAX];
	uid_t harness_uid = j->slot.uid + SANDBOX_HARNESS_UID_OFFSET;
	gid_t harness_gid = j->slot.gid + SANDBOX_HARNESS_UID_OFFSET;
	struct put_owner o = {.uid = j->slot.uid, .gid = j->slot.gid, 0777, 0777, false, false, 0};

	/* The agent's masks (agent.c chown_for()): a protected file is never
	 * writable by the program whatever its mode on the host. */
	if (flags & SANDBOX_PUT_HARNESS_OWNED)
		o = (struct put_owner){harness_uid, harness_gid, 0777, 0777, true, true, harness_uid};
	else if (flags & SANDBOX_PUT_HARNESS)
		o = (struct put_owner){0, harness_gid, 0640, 0750, true, true, harness_uid};
	else if (flags & SANDBOX_PUT_PROTECTED)
		o = (struct put_owner){0, 0, 0755, 0755, true, false, harness_uid};
	if (sandbox_path_rel(sandbox_path, rel, sizeof(rel), e) < 0)
		return -1;
	/* A new directory of the program's own at the top (/grader) is bound
	 * when a run's root is built: a run's init started before it must
	 * not be the one to run. */
	char top[PATH_MAX];
	size_t n = strlen(SANDBOX_TREE_ROOT);
	struct stat st;
	if (strncmp(rel, SANDBOX_TREE_ROOT "/", n + 1) == 0) {
		snprintf(top, sizeof(top), "%.*s", (int)(n + 1 + strcspn(rel + n + 1, "/")), rel);
		if (fstatat(j->scratch_fd, top, &st, AT_SYMLINK_NOFOLLOW) < 0)
			j->tops_changed = true;
	}
	return files_put(j->scratch_fd, host_path, rel, &o, e);
}

static int jail_get(struct sandbox *sb, const char *sandbox_path, const char *host_path,
		    struct err *e)
{
	struct jail *j = (struct jail *)sb;
	char rel[PATH_MAX];

	if (sandbox_path_rel(sandbox_path, rel, sizeof(rel), e) < 0)
		return -1;
	return files_get(sb, j->scratch_fd, rel, sandbox_path, host_path, j->opts.disk_bytes, e);
}

static int jail_remove(struct sandbox *sb, const char *sandbox_path, bool recursive, struct err *e)
{
	struct jail *j = (struct jail *)sb;
	char rel[PATH_MAX];

	if (sandbox_path_rel(sandbox_path, rel, sizeof(rel), e) < 0)
		return -1;
	return files_remove(j->scratch_fd, rel, sandbox_path, recursive, e);
}

static int jail_list(struct sandbox *sb, const char *sandbox_path, struct sandbox_dirent **ret,
		     size_t *ret_n, struct err *e)
{
	struct jail *j = (struct jail *)sb;
	char rel[PATH_MAX];

	if (sandbox_path_rel(sandbox_path, rel, sizeof(rel), e) < 0)
		return -1;
	return files_list(j->scratch_fd, rel, sandbox_path, ret, ret_n, e);
}

/*
 * SECURITY: the supervisor moves into a private mount namespace of its own
 * before it mounts anything, so scratch mounts never appear in the host's
 * namespace and vanish with the proctor process however it dies: a killed
 * proctor cannot leave a mount behind.
 */
static int jail_prepare(struct err *e)
{
	if (unshare(CLONE_NEWNS) < 0)
		return err_set(e, errno, "unshare the supervisor's mount namespace");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return err_set(e, errno, "make the supervisor's mounts private");
	return 0;
}

static int jail_probe(struct err *e)
{
	static const char *const ns[] = {"pid", "mnt", "net", "ipc", "uts", "cgroup"};
	enum cgroup_layout layout;
	char detail[512], path[64];

	if (geteuid() != 0)
		return err_set(e, 0, "the jail needs root (namespaces, cgroups and mounts)");
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns[i]);
		if (access(path, F_OK) < 0)
			return err_set(e, 0, "the kernel has no %s namespaces", ns[i]);
	}
	if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0)
		return err_set(e, errno, "seccomp is not available");
	if (cgroup_detect(&layout, detail, sizeof(detail), e) < 0)
		return -1;
	return 0;
}

/* Programs run natively in the jail: a time limit means what it says. */
static double jail_time_factor(const char *state_dir, bool *measured)
{
	(void)state_dir;
	if (measured)
		*measured = false;
	return 1.0;
}

const struct sandbox_ops jail_ops = {
    .name = "jail",
    .probe = jail_probe,
    .prepare = jail_prepare,
    .create = jail_create,
    .put = jail_put,
    .run = jail_run,
    .get = jail_get,
    .list = jail_list,
    .remove = jail_remove,
    .destroy = jail_destroy,
    .time_factor = jail_time_factor,
    .pool_hint = jail_pool_hint,
    .pool_drain = jail_pool_drain,
    .pool_fill = jail_pool_fill,
    .warm = jail_warm,
};
