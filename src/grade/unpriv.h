/* Running proctor-helper without privilege, and reading back its JSON answer. */
#ifndef PROCTOR_GRADE_UNPRIV_H
#define PROCTOR_GRADE_UNPRIV_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

struct unpriv_call {
	const char *helper;   /* path of proctor-helper */
	char *const *argv;    /* argv after the program name, NULL-terminated */
	uid_t uid;            /* run as uid = gid = this */
	int stdin_fd;         /* becomes fd 0, or -1 for /dev/null */
	const char *input;    /* written to fd 0 instead, when stdin_fd is -1 and this is set */
	int fd3;              /* becomes fd 3, or -1 */
	int fd4;              /* becomes fd 4, or -1 */
	unsigned timeout_s;   /* killed (by pid) after this */
	const char *hide_dir; /* hidden under an empty tmpfs in the helper's view (the slots), or NULL */
};

/*
 * Fork, move into the helper cgroup of c->uid (host/cgroup.h: a CPU quota,
 * memory and pids limits, CPU accounted there and not to the sandbox),
 * drop to uid (no supplementary groups, capabilities or new privileges;
 * address space, CPU, file size and descriptor limits), exec the helper
 * and parse what it prints as one JSON object, at most 64 MiB.
 * Returns 0 with the object; 1 when the helper refused the input (its
 * answer had an "error" member, it ran out of time, memory or CPU, or it
 * answered too much): the input's fault, message in e; -1 when the helper
 * itself failed (no cgroup, could not start, crashed, answered garbage):
 * Proctor's side, retried; -2 when it answered a "failure" member, its own
 * failure that no input causes (staging full or unwritable, out of memory,
 * the opener gone), or could not start at all (exit status 126 or 127:
 * its containment or exec failed before it read anything): Proctor's
 * side, retried and never charged to the input even after the retries.
 */
int unpriv_run(const struct unpriv_call *c, json_t **ret, struct err *e);

/*
 * Open the helper at `path` for unpriv_run (O_PATH, close-on-exec) and
 * check that an unprivileged uid may execute it: the descriptor, or -1
 * (ERR_UNAVAILABLE when the file's mode keeps others out, naming the file,
 * its mode and the chmod that mends it).  The directories above it need
 * not be reachable by that uid: unpriv_run executes the descriptor.
 */
int unpriv_helper_open(const char *path, struct err *e);

/* What unpriv_wait() collected; buf is malloc'd (NULL when nothing came),
 * the caller frees it. */
struct unpriv_wait {
	char *buf; /* what came on out_fd, len bytes (room for a NUL after) */
	size_t len;
	int status;  /* waitpid() status */
	bool killed; /* the deadline passed: SIGKILLed */
	bool over;   /* more than max bytes came: SIGKILLed */
	bool reaped; /* always true on return */
};

/*
 * Read out_fd to its end and reap the child pid, both within timeout_ms:
 * past it (whether or not out_fd was closed) the child is SIGKILLed
 * through a pidfd and reaped.  Always returns with pid reaped.
 */
void unpriv_wait(pid_t pid, int out_fd, uint64_t timeout_ms, size_t max, struct unpriv_wait *w);

#endif
