/* Running proctor-helper without privilege, and reading back its JSON answer. */
#ifndef PROCTOR_GRADE_UNPRIV_H
#define PROCTOR_GRADE_UNPRIV_H

#include <jansson.h>
#include <sys/types.h>

#include "err.h"

struct unpriv_call {
	const char *helper;   /* path of proctor-helper */
	char *const *argv;    /* argv after the program name, NULL-terminated */
	uid_t uid;            /* run as uid = gid = this */
	int stdin_fd;         /* becomes fd 0, or -1 for /dev/null */
	const char *input;    /* written to fd 0 instead, when stdin_fd is -1 and this is set */
	int fd3;              /* becomes fd 3, or -1 */
	unsigned timeout_s;   /* killed (by pid) after this */
};

/*
 * Fork, drop to uid (no supplementary groups, capabilities or new
 * privileges; address space, CPU, file size and descriptor limits), exec the
 * helper and parse what it prints as one JSON object, at most 64 MiB.
 * An object with an "error" member is returned as -1 with that message.
 * Anything else odd (a crash, a timeout, garbage) is -1 too: the caller
 * treats it as the input's fault.
 */
int unpriv_run(const struct unpriv_call *c, json_t **ret, struct err *e);

#endif
