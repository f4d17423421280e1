/* Running host tools as root: a clean child, a report when exec fails, a time limit. */
#ifndef PROCTOR_HOST_TOOL_H
#define PROCTOR_HOST_TOOL_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/* Run a host tool (absolute path) as root with output to log_fd, killed
 * after timeout_s; 0 when it exited 0.  Image builds (tar, mksquashfs) and
 * the guest kernel kit (apt-get, dpkg-deb) use it. */
int tool_run(char *const argv[], int log_fd, unsigned timeout_s, struct err *e);

/* "proctor: WHAT: argv..." on its own line of the log. */
void tool_log_cmd(int log_fd, const char *what, char *const argv[]);

/*
 * The parts of tool_run(), for a caller that starts its child another way
 * (an image build starts mmdebstrap in namespaces of its own).  The child
 * reports, on a CLOEXEC pipe, only when it fails before exec:
 */

/* In the child: report errno and `what` on fd and _exit(127). */
_Noreturn void tool_child_fail(int fd, const char *what);

/* In the child: default signal handling and an empty mask, fd 0 /dev/null,
 * 1 and 2 log_fd, 3 report_fd, 4.. the n_extra (at most 5) `extra` fds in
 * order, all from 3 on CLOEXEC, nothing else open.  Fails with
 * tool_child_fail(). */
void tool_child_setup(int log_fd, int report_fd, const int *extra, size_t n_extra);

/* In the parent: wait for the child behind pidfd at most timeout_s (0:
 * kill it now), SIGKILLing it then; closes pidfd.  Returns 0, or -1 when it
 * was killed for time; its wait status in *ret_status. */
int tool_wait(pid_t pid, int pidfd, unsigned timeout_s, int *ret_status);

/* In the parent, once the child is gone: 0 when it reached exec; else -1
 * with "TOOL: what failed" and the child's errno in e. */
int tool_read_report(int fd, const char *tool, struct err *e);

/* apt's first "E: " line in a tool's output `out` (control characters
 * replaced, at most 400 bytes), or "", in buf: why apt failed. */
void tool_apt_error(const char *out, char *buf, size_t cap);

/* A wait status as "exit status N" or "killed by signal N", in buf. */
const char *tool_status_text(int st, char *buf, size_t cap);

#endif
