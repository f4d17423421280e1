/* Error reporting: one caller-owned struct filled on failure, context added on the way up. */
#ifndef PROCTOR_ERR_H
#define PROCTOR_ERR_H

#include <stddef.h>

/*
 * Fallible functions return 0 on success and -1 on failure, taking a
 * `struct err *` last.  The struct lives on the caller's stack and is only
 * written on failure.  `errnum` is the errno that caused it (0 when the
 * failure is not a system error); `msg` is one line for a human, built from
 * the innermost message outwards: "put 'a.txt': open: Permission denied".
 */
struct err {
	int errnum;
	char msg[1024];
};

/* Set the error from a format; appends ": strerror(errnum)" when errnum != 0.
 * Always returns -1 so callers can `return err_set(...)`. */
int err_set(struct err *e, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Prefix context to an existing error: "context: previous message".
 * Returns -1. */
int err_wrap(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
