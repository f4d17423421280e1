/* Probe: a static multi-call program run INSIDE a sandbox to do one hostile thing per mode. */

/*
 * Usage: probe MODE [ARGS...]
 *
 * Every mode does one thing a submission might try and reports what happened
 * as machine-readable lines on stdout, the last one starting with "result ",
 * e.g. "result errno=ENETUNREACH ms=0".  Errno values are printed by name
 * ("OK" when a call succeeded), so the tests read the same words on every
 * architecture.  Output goes straight to write(2), never through stdio
 * buffers, so nothing is lost when the sandbox kills the probe mid-way and
 * nothing is printed twice by forked children.
 *
 * The probe is linked statically so that it runs in a sandbox that has no
 * libraries of its own, and uses libc only.
 */

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Raw syscall numbers (x86_64) for calls older headers may lack. */
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup 425
#endif
#ifndef SYS_kexec_load
#define SYS_kexec_load 246
#endif

#define MIB (1024L * 1024L)

extern char **environ;

/* Scratch for the writers; static so the stack stays small under --memory. */
static char chunk[MIB];

/* Keeps memhog's blocks reachable so the compiler cannot drop them. */
static void *volatile memhog_head;

static void write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		buf += n;
		len -= (size_t)n;
	}
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	char buf[8192];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	write_all(1, buf, (size_t)n);
}

/* "OK" for 0, else the symbolic name of an errno value ("ENOSPC"). */
static const char *errname(int e)
{
	static char unknown[32];
	if (e == 0)
		return "OK";
	const char *name = strerrorname_np(e);
	if (name)
		return name;
	snprintf(unknown, sizeof unknown, "E%d", e);
	return unknown;
}

static long num(const char *s)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end) {
		say("result error=bad-number arg=%s\n", s);
		exit(2);
	}
	return v;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int is_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/*
 * Write `len` bytes of `buf` to fd, continuing after short writes.  Returns
 * how many bytes went out; sets *err to the errno that stopped it, or 0.
 */
static size_t write_counted(int fd, const char *buf, size_t len, int *err)
{
	size_t done = 0;
	*err = 0;
	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			*err = errno;
			break;
		}
		if (n == 0) {
			*err = EIO;
			break;
		}
		done += (size_t)n;
	}
	return done;
}

static int mode_true(char **a)
{
	return 0;
}

static int mode_exit(char **a)
{
	say("result exiting code=%ld\n", num(a[0]));
	return (int)num(a[0]);
}

static int mode_forkbomb(char **a)
{
	say("result forking\n");
	for (;;)
		fork();
	return 0;
}

static int mode_memhog(char **a)
{
	long want = num(a[0]);
	for (long i = 0; i < want; i++) {
		char *p = malloc(MIB);
		if (!p) {
			say("result errno=%s mib=%ld\n", errname(errno), i);
			return 1;
		}
		memset(p, (int)(0x5a ^ i), MIB);
		*(void **)p = memhog_head;
		memhog_head = p;
		say("progress mib=%ld\n", i + 1);
	}
	say("result ok mib=%ld\n", want);
	return 0;
}

/* Allocate and touch MIB MiB as fast as possible, then exit at once:
 * a limit enforced by sampling alone never sees this. */
static int mode_memburst(char **a)
{
	long want = num(a[0]);
	char *p = malloc((size_t)want * MIB);
	if (!p) {
		say("result errno=%s\n", errname(errno));
		return 1;
	}
	memset(p, 0x5a, (size_t)want * MIB);
	memhog_head = p;
	say("result ok mib=%ld\n", want);
	return 0;
}

/* Queue MIB MiB in AF_UNIX socket buffers (kernel memory, not the
 * program's own pages), hold it for a second, then report. */
static int mode_sockbuf(char **a)
{
	long want = num(a[0]) * MIB, queued = 0;
	static char chunk[65536];

	memset(chunk, 0x5a, sizeof chunk);
	while (queued < want) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0) {
			say("result errno=%s mib=%ld\n", errname(errno), queued / MIB);
			return 1;
		}
		for (;;) {
			ssize_t n = write(sv[0], chunk, sizeof chunk);
			if (n <= 0)
				break;
			queued += n;
		}
	}
	sleep(1);
	say("result ok mib=%ld\n", queued / MIB);
	return 0;
}

/* Try to die of a signal that reports a limit (SIGSYS, SIGXCPU, SIGXFSZ,
 * by number) without reaching the limit, by METHOD: kill, tgkill, sigqueue,
 * rlimit (lower RLIMIT_CPU or RLIMIT_FSIZE, then spin or write), pdeathsig,
 * fsetsig, childexit (clone with that exit signal), timer, seccomp (a
 * filter of its own that kills).  Prints the first refusal. */
static int selfsig_child(void *arg)
{
	(void)arg;
	return 0;
}

static int mode_selfsig(char **a)
{
	int sig = (int)num(a[0]);
	const char *how = a[1];
	int rc = 0;

	if (strcmp(how, "kill") == 0) {
		rc = kill(getpid(), sig);
	} else if (strcmp(how, "tgkill") == 0) {
		rc = (int)syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid),
				  (long)sig | (1L << 32));
	} else if (strcmp(how, "sigqueue") == 0) {
		union sigval v = {0};
		rc = sigqueue(getpid(), sig, v);
	} else if (strcmp(how, "rlimit") == 0) {
		struct rlimit rl = {1, 2}; /* soft below hard: SIGXCPU before SIGKILL */
		rc = setrlimit(sig == SIGXCPU ? RLIMIT_CPU : RLIMIT_FSIZE, &rl);
		if (rc == 0 && sig == SIGXCPU)
			for (;;)
				;
		if (rc == 0) {
			int fd = open("big", O_WRONLY | O_CREAT | O_TRUNC, 0600);
			rc = fd < 0 ? -1 : (int)write(fd, "xx", 2);
		}
	} else if (strcmp(how, "pdeathsig") == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			if (prctl(PR_SET_PDEATHSIG, sig) < 0) {
				say("result errno=%s\n", errname(errno));
				_exit(1);
			}
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	} else if (strcmp(how, "fsetsig") == 0) {
		int p[2];
		rc = pipe(p);
		if (rc == 0)
			rc = fcntl(p[0], F_SETSIG, sig);
	} else if (strcmp(how, "childexit") == 0) {
		static char stack[65536];
		rc = clone(selfsig_child, stack + sizeof stack, sig, NULL) < 0 ? -1 : 0;
		if (rc == 0)
			sleep(1);
	} else if (strcmp(how, "timer") == 0) {
		struct sigevent ev = {.sigev_notify = SIGEV_SIGNAL, .sigev_signo = sig};
		timer_t t;
		rc = (int)syscall(SYS_timer_create, CLOCK_MONOTONIC, &ev, &t);
		if (rc == 0) {
			struct itimerspec its = {.it_value = {0, 1000000}};
			syscall(SYS_timer_settime, t, 0, &its, NULL);
			sleep(1);
		}
	} else if (strcmp(how, "pdeathsig_hi") == 0) {
		/* The option with bits above 32 set: the kernel reads an int. */
		rc = (int)syscall(SYS_prctl, (1UL << 32) | PR_SET_PDEATHSIG, (long)sig, 0L, 0L, 0L);
	} else if (strcmp(how, "fsetsig_hi") == 0) {
		int p[2];
		rc = pipe(p);
		if (rc == 0)
			rc = (int)syscall(SYS_fcntl, p[0], (1UL << 32) | F_SETSIG, (long)sig);
	} else if (strcmp(how, "seccomp_hi") == 0) {
		struct sock_filter kill_all = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
		struct sock_fprog prog = {1, &kill_all};
		prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		rc = (int)syscall(SYS_prctl, (1UL << 32) | PR_SET_SECCOMP, (long)SECCOMP_MODE_FILTER,
				  &prog, 0L, 0L);
	} else if (strcmp(how, "dispatch") == 0) {
		/* Syscall user dispatch: with the selector set to block, the
		 * next system call raises SIGSYS. */
		static volatile char selector = 0;
		rc = prctl(59 /* PR_SET_SYSCALL_USER_DISPATCH */, 1 /* ON */, 0UL, 0UL, &selector);
		if (rc == 0) {
			selector = 1; /* SYSCALL_DISPATCH_FILTER_BLOCK */
			getppid();
			selector = 0;
		}
	} else if (strcmp(how, "seccomp") == 0) {
		struct sock_filter kill_all = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
		struct sock_fprog prog = {1, &kill_all};
		prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		rc = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
		if (rc < 0)
			rc = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	} else {
		say("result error=usage\n");
		return 2;
	}
	if (rc < 0) {
		say("result errno=%s\n", errname(errno));
		return 1;
	}
	say("result ok\n");
	return 0;
}

static int mode_spin(char **a)
{
	volatile unsigned long n = 0;
	say("result spinning\n");
	for (;;)
		n++;
	return 0;
}

static int mode_sleep(char **a)
{
	long s = num(a[0]);
	say("result sleeping s=%ld\n", s);
	sleep_ms(s * 1000);
	say("result slept s=%ld\n", s);
	return 0;
}

static int mode_filldisk(char **a)
{
	char path[4096];
	long long bytes = 0;
	long files = 0;
	int err = 0;
	memset(chunk, 'd', sizeof chunk);
	for (;;) {
		snprintf(path, sizeof path, "%s/fill.%ld", a[0], files);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			err = errno;
			break;
		}
		files++;
		bytes += (long long)write_counted(fd, chunk, sizeof chunk, &err);
		if (close(fd) < 0 && !err)
			err = errno;
		if (err)
			break;
	}
	say("result errno=%s bytes=%lld files=%ld\n", errname(err), bytes, files);
	return 0;
}

static int mode_bigfile(char **a)
{
	long long bytes = 0;
	int err = 0;
	/* Ignore SIGXFSZ so that crossing RLIMIT_FSIZE shows up as EFBIG. */
	signal(SIGXFSZ, SIG_IGN);
	memset(chunk, 'b', sizeof chunk);
	int fd = open(a[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		say("result errno=%s bytes=0 open=failed\n", errname(errno));
		return 0;
	}
	while (!err)
		bytes += (long long)write_counted(fd, chunk, sizeof chunk, &err);
	close(fd);
	say("result errno=%s bytes=%lld\n", errname(err), bytes);
	return 0;
}

/* Lines of 63 letters and a newline: plain ASCII, so any cap is exact. */
static void fill_lines(char *buf, size_t len, char c)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (i % 64 == 63) ? '\n' : c;
}

static int flood(long mib, int both)
{
	const size_t step = 64 * 1024;
	long long left = mib * MIB;
	int err = 0;
	fill_lines(chunk, step, 'o');
	fill_lines(chunk + step, step, 'e');
	while (left > 0) {
		size_t n = left < (long long)step ? (size_t)left : step;
		write_counted(1, chunk, n, &err);
		if (err)
			return 3;
		if (both) {
			write_counted(2, chunk + step, n, &err);
			if (err)
				return 3;
		}
		left -= (long long)n;
	}
	return 0;
}

static int mode_flood(char **a)
{
	return flood(num(a[0]), 0);
}

static int mode_floodboth(char **a)
{
	return flood(num(a[0]), 1);
}

static int mode_daemon(char **a)
{
	const char *pidfile = "/work/daemon.pid";
	unlink(pidfile);
	pid_t c = fork();
	if (c < 0) {
		say("result errno=%s\n", errname(errno));
		return 1;
	}
	if (c == 0) {
		setsid();
		pid_t g = fork();
		if (g == 0) {
			/* The daemon: survives hangups and polite kills, keeps
			 * stdout and stderr open, never exits. */
			signal(SIGTERM, SIG_IGN);
			signal(SIGHUP, SIG_IGN);
			char buf[32];
			int n = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
			int fd = open("/work/daemon.pid.tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd >= 0) {
				write_all(fd, buf, (size_t)n);
				close(fd);
				rename("/work/daemon.pid.tmp", pidfile);
			}
			for (;;)
				pause();
		}
		_exit(g < 0 ? 1 : 0);
	}
	waitpid(c, NULL, 0);
	/* Report only once the daemon is really up. */
	for (int i = 0; i < 500; i++) {
		char buf[32] = {0};
		int fd = open(pidfile, O_RDONLY);
		if (fd >= 0) {
			ssize_t n = read(fd, buf, sizeof buf - 1);
			close(fd);
			if (n > 0) {
				say("result daemon=%ld\n", strtol(buf, NULL, 10));
				return 0;
			}
		}
		sleep_ms(10);
	}
	say("result daemon=none\n");
	return 1;
}

static int parse_addr(const char *ip, const char *port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)num(port));
	if (inet_pton(AF_INET, ip, &sa->sin_addr) != 1) {
		say("result error=bad-address\n");
		return -1;
	}
	return 0;
}

static int mode_connect(char **a)
{
	struct sockaddr_in sa;
	if (parse_addr(a[0], a[1], &sa) < 0)
		return 2;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		say("result errno=%s ms=0 socket=failed\n", errname(errno));
		return 0;
	}
	long t0 = now_ms();
	int err = 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		err = errno;
		if (err == EINPROGRESS) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			int r = poll(&p, 1, 10000);
			if (r == 0) {
				err = ETIMEDOUT;
			} else if (r < 0) {
				err = errno;
			} else {
				socklen_t len = sizeof err;
				if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
					err = errno;
			}
		}
	}
	say("result errno=%s ms=%ld\n", errname(err), now_ms() - t0);
	close(fd);
	return 0;
}

static int mode_udp(char **a)
{
	struct sockaddr_in sa;
	if (parse_addr(a[0], a[1], &sa) < 0)
		return 2;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		say("result errno=%s socket=failed\n", errname(errno));
		return 0;
	}
	int err = 0;
	if (sendto(fd, "x", 1, 0, (struct sockaddr *)&sa, sizeof sa) < 0)
		err = errno;
	say("result errno=%s\n", errname(err));
	close(fd);
	return 0;
}

/* Replace NULs and newlines so one environ stays on one output line. */
static void flatten(char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] == '\0' || s[i] == '\n')
			s[i] = ' ';
	s[len] = '\0';
}

static int mode_environ(char **a)
{
	for (char **e = environ; *e; e++)
		say("env %s\n", *e);
	/* Any other process's environment we can read is a leak: report it
	 * and its contents, so the test sees any secret it holds.  Our own
	 * environ is always readable and is left out. */
	int readable = 0;
	DIR *d = opendir("/proc");
	if (d) {
		struct dirent *de;
		static char buf[65536];
		while ((de = readdir(d)) != NULL) {
			if (!is_digits(de->d_name) || atoi(de->d_name) == getpid())
				continue;
			char path[300];
			snprintf(path, sizeof path, "/proc/%s/environ", de->d_name);
			int fd = open(path, O_RDONLY | O_CLOEXEC);
			if (fd < 0)
				continue;
			ssize_t n = read(fd, buf, sizeof buf - 1);
			close(fd);
			if (n < 0)
				continue;
			flatten(buf, (size_t)n);
			say("readable %s\n", path);
			say("data %s\n", buf);
			readable++;
		}
		closedir(d);
	}
	say("result self=%d readable=%d\n", (int)getpid(), readable);
	return 0;
}

static int mode_readfile(char **a)
{
	int fd = open(a[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say("result errno=%s\n", errname(errno));
		return 0;
	}
	long long bytes = 0;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof chunk);
		if (n < 0) {
			say("result errno=%s bytes=%lld\n", errname(errno), bytes);
			close(fd);
			return 0;
		}
		if (n == 0)
			break;
		bytes += n;
	}
	close(fd);
	say("result ok bytes=%lld\n", bytes);
	return 0;
}

/* ptrace a pid; detach again if it worked.  Returns the errno or 0. */
static int try_attach(pid_t pid)
{
	if (ptrace(PTRACE_ATTACH, pid, NULL, NULL) < 0)
		return errno;
	waitpid(pid, NULL, __WALL);
	ptrace(PTRACE_DETACH, pid, NULL, NULL);
	return 0;
}

static int mode_ptrace(char **a)
{
	pid_t c = fork();
	if (c == 0) {
		for (;;)
			pause();
	}
	int e_child = c < 0 ? errno : try_attach(c);
	int e_parent = try_attach(getppid());

	int e_traceme = 0;
	pid_t t = fork();
	if (t == 0)
		_exit(ptrace(PTRACE_TRACEME, 0, NULL, NULL) < 0 ? errno : 0);
	if (t > 0) {
		int st;
		waitpid(t, &st, 0);
		e_traceme = WIFEXITED(st) ? WEXITSTATUS(st) : EIO;
	} else {
		e_traceme = errno;
	}
	if (c > 0) {
		kill(c, SIGKILL);
		waitpid(c, NULL, 0);
	}
	say("result attach_child=%s attach_parent=%s traceme=%s\n", errname(e_child),
	    errname(e_parent), errname(e_traceme));
	return 0;
}

static int mode_unshare(char **a)
{
	int e_unshare = unshare(CLONE_NEWUSER) < 0 ? errno : 0;

	/* clone(2) without a new stack behaves like fork: the child gets a
	 * copy of this stack and leaves at once. */
	int e_clone = 0;
	long r =
	    syscall(SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), NULL, NULL, NULL, NULL);
	if (r == 0)
		_exit(0);
	if (r < 0)
		e_clone = errno;
	else
		waitpid((pid_t)r, NULL, 0);

	int e_setns = 0;
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e_setns = errno;
	} else {
		if (setns(fd, 0) < 0)
			e_setns = errno;
		close(fd);
	}
	say("result unshare=%s clone=%s setns=%s\n", errname(e_unshare), errname(e_clone),
	    errname(e_setns));
	return 0;
}

static int mode_clone3(char **a)
{
	/* struct clone_args, version 0 (64 bytes). */
	uint64_t args[8] = {0};
	args[4] = SIGCHLD; /* exit_signal */
	long r = syscall(SYS_clone3, args, sizeof args);
	if (r == 0)
		_exit(0);
	int err = r < 0 ? errno : 0;
	if (r > 0)
		waitpid((pid_t)r, NULL, 0);
	say("result errno=%s\n", errname(err));
	return 0;
}

static int mode_iouring(char **a)
{
	/* struct io_uring_params is 120 bytes; all zero asks for defaults. */
	static uint64_t params[32];
	long r = syscall(SYS_io_uring_setup, 4, params);
	int err = r < 0 ? errno : 0;
	if (r >= 0)
		close((int)r);
	say("result errno=%s\n", errname(err));
	return 0;
}

static int mode_kexec(char **a)
{
	say("attempt kexec_load\n");
	long r = syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0UL);
	say("result errno=%s\n", errname(r < 0 ? errno : 0));
	return 0;
}

static int mode_mount(char **a)
{
	int err = mount("none", "/tmp", "tmpfs", 0, "size=1m") < 0 ? errno : 0;
	if (!err)
		umount("/tmp");
	say("result errno=%s\n", errname(err));
	return 0;
}

static int mode_nofile(char **a)
{
	int count = 0;
	int err = 0;
	for (;;) {
		if (open("/dev/null", O_RDONLY) < 0) {
			err = errno;
			break;
		}
		count++;
		if (count > 10 * 1000 * 1000)
			break;
	}
	say("result count=%d errno=%s\n", count, errname(err));
	return 0;
}

static int count_procs(void)
{
	int n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return -1;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		if (is_digits(de->d_name))
			n++;
	closedir(d);
	return n;
}

static int mode_whoami(char **a)
{
	say("result uid=%d gid=%d euid=%d egid=%d pid=%d ppid=%d procs=%d\n", (int)getuid(),
	    (int)getgid(), (int)geteuid(), (int)getegid(), (int)getpid(), (int)getppid(),
	    count_procs());
	return 0;
}

static int mode_ps(char **a)
{
	int n = 0;
	DIR *d = opendir("/proc");
	if (!d) {
		say("result errno=%s\n", errname(errno));
		return 0;
	}
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!is_digits(de->d_name))
			continue;
		char path[300], comm[64] = "?";
		snprintf(path, sizeof path, "/proc/%s/comm", de->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			ssize_t len = read(fd, comm, sizeof comm - 1);
			close(fd);
			if (len > 0) {
				comm[len] = '\0';
				comm[strcspn(comm, "\n")] = '\0';
			}
		}
		say("proc pid=%s comm=%s\n", de->d_name, comm);
		n++;
	}
	closedir(d);
	say("result self=%d count=%d\n", (int)getpid(), n);
	return 0;
}

static int mode_write(char **a)
{
	int fd = open(a[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		say("result errno=%s\n", errname(errno));
		return 0;
	}
	int err;
	size_t n = write_counted(fd, a[1], strlen(a[1]), &err);
	if (close(fd) < 0 && !err)
		err = errno;
	if (err)
		say("result errno=%s bytes=%zu\n", errname(err), n);
	else
		say("result ok bytes=%zu\n", n);
	return 0;
}

static int mode_ls(char **a)
{
	DIR *d = opendir(a[0]);
	if (!d) {
		say("result errno=%s\n", errname(errno));
		return 0;
	}
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		say("%s\n", de->d_name);
		n++;
	}
	closedir(d);
	say("result count=%d\n", n);
	return 0;
}

static int mode_cat(char **a)
{
	int fd = open(a[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		say("result errno=%s\n", errname(errno));
		return 1;
	}
	ssize_t n;
	while ((n = read(fd, chunk, sizeof chunk)) > 0)
		write_all(1, chunk, (size_t)n);
	close(fd);
	return n < 0 ? 1 : 0;
}

static void *sleeper(void *arg)
{
	sleep_ms(2000);
	return NULL;
}

static int mode_threads(char **a)
{
	long want = num(a[0]);
	if (want < 0 || want > 4096)
		want = 4096;
	static pthread_t tids[4096];
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	int started = 0, err = 0;
	for (long i = 0; i < want; i++) {
		err = pthread_create(&tids[started], &attr, sleeper, NULL);
		if (err)
			break;
		started++;
	}
	for (int i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	say("result started=%d errno=%s\n", started, errname(err));
	return 0;
}

static int mode_segv(char **a)
{
	volatile int *volatile p = NULL;
	say("attempt segv\n");
	*p = 1;
	return 0;
}

static int mode_abort(char **a)
{
	say("attempt abort\n");
	abort();
}

static int mode_stdin(char **a)
{
	ssize_t n;
	while ((n = read(0, chunk, sizeof chunk)) > 0)
		write_all(1, chunk, (size_t)n);
	return n < 0 ? 1 : 0;
}

static int mode_badutf8(char **a)
{
	static const char bad[] = "ok \xff\xfe end\n";
	static const char euro[] = "euro \xe2\x82\xac\n";
	write_all(1, bad, sizeof bad - 1);
	write_all(1, euro, sizeof euro - 1);
	return 0;
}

static int mode_hostname(char **a)
{
	char name[256] = {0};
	if (gethostname(name, sizeof name - 1) < 0) {
		say("result errno=%s\n", errname(errno));
		return 0;
	}
	say("result hostname=%s\n", name);
	return 0;
}

struct spinner {
	long until_ms;
	long cpu_ms;
};

static void *spin_until(void *arg)
{
	struct spinner *s = arg;
	volatile unsigned long n = 0;
	while (now_ms() < s->until_ms)
		for (int i = 0; i < 100000; i++)
			n++;
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	s->cpu_ms = ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
	return NULL;
}

static int mode_cpuall(char **a)
{
	struct spinner s[2];
	pthread_t t[2];
	long until = now_ms() + num(a[0]) * 1000;
	for (int i = 0; i < 2; i++) {
		s[i].until_ms = until;
		s[i].cpu_ms = 0;
		if (pthread_create(&t[i], NULL, spin_until, &s[i]) != 0) {
			say("result errno=%s\n", errname(errno));
			return 1;
		}
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	long total = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
		     (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000L;
	say("result t1_ms=%ld t2_ms=%ld total_ms=%ld\n", s[0].cpu_ms, s[1].cpu_ms, total);
	return 0;
}

static int mode_symlink(char **a)
{
	int err = symlink(a[0], a[1]) < 0 ? errno : 0;
	say("result errno=%s\n", errname(err));
	return 0;
}

/* Write a secret, then stay alive until RELEASE exists or S seconds pass:
 * lets a test look at this sandbox from another one while it runs. */
static int mode_hold(char **a)
{
	char text[128];
	int n = snprintf(text, sizeof text, "HOLD-SECRET uid=%d\n", (int)getuid());
	int fd = open(a[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		say("result errno=%s\n", errname(errno));
		return 1;
	}
	write_all(fd, text, (size_t)n);
	close(fd);
	long until = now_ms() + num(a[2]) * 1000;
	int released = 0;
	while (now_ms() < until) {
		if (access(a[1], F_OK) == 0) {
			released = 1;
			break;
		}
		sleep_ms(20);
	}
	say("result uid=%d released=%d\n", (int)getuid(), released);
	return 0;
}

struct mode {
	const char *name;
	int nargs;
	int (*fn)(char **args);
};

static const struct mode modes[] = {
    {"true", 0, mode_true},
    {"exit", 1, mode_exit},
    {"forkbomb", 0, mode_forkbomb},
    {"memhog", 1, mode_memhog},
    {"memburst", 1, mode_memburst},
    {"selfsig", 2, mode_selfsig},
    {"sockbuf", 1, mode_sockbuf},
    {"spin", 0, mode_spin},
    {"sleep", 1, mode_sleep},
    {"filldisk", 1, mode_filldisk},
    {"bigfile", 1, mode_bigfile},
    {"flood", 1, mode_flood},
    {"floodboth", 1, mode_floodboth},
    {"daemon", 0, mode_daemon},
    {"connect", 2, mode_connect},
    {"udp", 2, mode_udp},
    {"environ", 0, mode_environ},
    {"readfile", 1, mode_readfile},
    {"ptrace", 0, mode_ptrace},
    {"unshare", 0, mode_unshare},
    {"clone3", 0, mode_clone3},
    {"iouring", 0, mode_iouring},
    {"kexec", 0, mode_kexec},
    {"mount", 0, mode_mount},
    {"nofile", 0, mode_nofile},
    {"whoami", 0, mode_whoami},
    {"ps", 0, mode_ps},
    {"write", 2, mode_write},
    {"ls", 1, mode_ls},
    {"cat", 1, mode_cat},
    {"threads", 1, mode_threads},
    {"segv", 0, mode_segv},
    {"abort", 0, mode_abort},
    {"stdin", 0, mode_stdin},
    {"badutf8", 0, mode_badutf8},
    {"hostname", 0, mode_hostname},
    {"cpuall", 1, mode_cpuall},
    {"symlink", 2, mode_symlink},
    {"hold", 3, mode_hold},
};

int main(int argc, char **argv)
{
	if (argc < 2) {
		say("usage: probe MODE [ARGS...]\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		if (strcmp(argv[1], modes[i].name) != 0)
			continue;
		if (argc - 2 != modes[i].nargs) {
			say("result error=usage mode=%s wants=%d\n", modes[i].name, modes[i].nargs);
			return 2;
		}
		return modes[i].fn(argv + 2);
	}
	say("result error=unknown-mode mode=%s\n", argv[1]);
	return 2;
}
