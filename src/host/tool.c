/* Running host tools as root: a clean child, a report when exec fails, a time limit. */
#include "host/tool.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

/* A child's report, on a CLOEXEC pipe, written only when exec was not reached. */
struct child_report {
	int errnum;
	char what[120];
};

_Noreturn void tool_child_fail(int fd, const char *what)
{
	struct child_report r = {.errnum = errno};

	snprintf(r.what, sizeof(r.what), "%s", what);
	(void)!write(fd, &r, sizeof(r));
	_exit(127);
}

/*
 * In a child: default signal handling and an empty mask (ignored signals
 * would survive execve), fd 0 /dev/null, 1 and 2 log_fd, 3 the report pipe,
 * 4.. the `extra` fds in order (3 and up CLOEXEC), nothing else open.
 */
void tool_child_setup(int log_fd, int report_fd, const int *extra, size_t n_extra)
{
	int src[8];
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int s = 1; s < NSIG; s++)
		if (s != SIGKILL && s != SIGSTOP)
			signal(s, SIG_DFL);
	/* First out of the way (>= 100), so no target number clobbers a source. */
	int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	src[0] = null < 0 ? -1 : fcntl(null, F_DUPFD_CLOEXEC, 100);
	src[1] = fcntl(log_fd, F_DUPFD_CLOEXEC, 100);
	src[2] = fcntl(report_fd, F_DUPFD_CLOEXEC, 100);
	for (size_t i = 0; i < n_extra && i < 5; i++)
		src[3 + i] = fcntl(extra[i], F_DUPFD_CLOEXEC, 100);
	for (size_t i = 0; i < 3 + n_extra && i < 8; i++)
		if (src[i] < 0)
			tool_child_fail(report_fd, "set up the child's file descriptors");
	if (dup2(src[0], 0) < 0 || dup2(src[1], 1) < 0 || dup2(src[1], 2) < 0 ||
	    dup2(src[2], 3) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
		tool_child_fail(src[2], "set up the child's file descriptors");
	for (size_t i = 0; i < n_extra && i < 5; i++)
		if (dup2(src[3 + i], 4 + (int)i) < 0 || fcntl(4 + (int)i, F_SETFD, FD_CLOEXEC) < 0)
			tool_child_fail(3, "set up the child's file descriptors");
	syscall(SYS_close_range, 4 + (unsigned)n_extra, ~0U, 0);
}

/* Wait for the child behind pidfd at most timeout_s, SIGKILLing it then.
 * Returns 0, or -1 when it was killed for time; the status in *ret_status. */
int tool_wait(pid_t pid, int pidfd, unsigned timeout_s, int *ret_status)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_s * 1000000000ull;
	bool killed = false;
	int st = 0;

	for (;;) {
		uint64_t now = now_ns();
		if (now >= deadline) {
			syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
			killed = true;
			break;
		}
		uint64_t ms = (deadline - now) / 1000000 + 1;
		struct pollfd p = {.fd = pidfd, .events = POLLIN};
		int n = poll(&p, 1, ms > 60000 ? 60000 : (int)ms);
		if (n > 0 || (n < 0 && errno != EINTR))
			break;
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	close(pidfd);
	*ret_status = st;
	return killed ? -1 : 0;
}

/* What the report pipe says once the child is gone: 0 when exec happened. */
int tool_read_report(int fd, const char *tool, struct err *e)
{
	struct child_report r;
	ssize_t n;

	do
		n = read(fd, &r, sizeof(r));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(r))
		return 0;
	r.what[sizeof(r.what) - 1] = '\0';
	return err_set(e, r.errnum, "%s: %s", tool, r.what);
}

void tool_apt_error(const char *out, char *buf, size_t cap)
{
	const char *pick = NULL;
	size_t i = 0;

	for (const char *l = out; l && *l && !pick;
	     l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (strncmp(l, "E: ", 3) == 0)
			pick = l;
	for (; pick && pick[i] && pick[i] != '\n' && i + 1 < cap && i < 400; i++)
		buf[i] = (unsigned char)pick[i] < 0x20 || pick[i] == 0x7f ? '?' : pick[i];
	buf[i] = '\0';
}

const char *tool_status_text(int st, char *buf, size_t cap)
{
	if (WIFSIGNALED(st))
		snprintf(buf, cap, "killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, cap, "exit status %d", WEXITSTATUS(st));
	return buf;
}

/* Run a host tool as root, output to log_fd; 0 when it exited 0. */
int tool_run(char *const argv[], int log_fd, unsigned timeout_s, struct err *e)
{
	static char *const envp[] = {(char *)"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
				     (char *)"LC_ALL=C.UTF-8", NULL};
	pid_t pid, parent = getpid();
	int rep[2], pidfd = -1, st;
	char buf[64];

	if (pipe2(rep, O_CLOEXEC) < 0)
		return err_set(e, errno, "pipe");
	pid = (pid_t)syscall(SYS_clone, CLONE_PIDFD | SIGCHLD, NULL, &pidfd, NULL, 0);
	if (pid < 0) {
		xclose(rep[0]);
		xclose(rep[1]);
		return err_set(e, errno, "start %s", argv[0]);
	}
	if (pid == 0) {
		tool_child_setup(log_fd, rep[1], NULL, 0);
		/* Dies with proctor (single-threaded: its death is the parent's). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			tool_child_fail(3, "set the parent-death signal");
		execve(argv[0], argv, envp);
		tool_child_fail(3, "exec");
	}
	close(rep[1]);
	int timed_out = tool_wait(pid, pidfd, timeout_s, &st);
	int rc = tool_read_report(rep[0], argv[0], e);
	close(rep[0]);
	if (rc < 0)
		return -1;
	if (timed_out < 0)
		return err_set(e, 0, "%s took longer than %u s and was killed", argv[0], timeout_s);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return err_set(e, 0, "%s failed (%s)", argv[0],
			       tool_status_text(st, buf, sizeof(buf)));
	return 0;
}

void tool_log_cmd(int log_fd, const char *what, char *const argv[])
{
	dprintf(log_fd, "proctor: %s:", what);
	for (size_t i = 0; argv[i]; i++)
		dprintf(log_fd, " %s", argv[i]);
	dprintf(log_fd, "\n");
}
