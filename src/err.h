/* Error reporting: one caller-owned struct filled on failure, context added on the way up. */
#ifndef PROCTOR_ERR_H
#define PROCTOR_ERR_H

#include <stddef.h>

/*
 * Whose failure an error is, which decides the exit status of a command
 * and, in the service, the HTTP status and the error code of the answer
 * (the table in err.c; docs/cli-contract.md, "Error kinds").  Our failure
 * and the user's are different things all the way up: an err_set() with
 * no kind is Proctor's own (ERR_INTERNAL), and only the place that knows
 * the user is at fault says so, with err_setk() or err_classify().
 *
 * The numbers, exit statuses and codes never change meaning: a kind that
 * is no longer needed is retired, never reused, and new kinds are added
 * at the end.
 */
enum err_kind {
	ERR_INTERNAL = 0,     /* Proctor's own failure: a system call, the disk, a bug */
	ERR_USAGE = 1,	      /* the request is malformed: an option, its value, an operand,
				 a pin or a sandbox path spelled wrong */
	ERR_INPUT = 2,	      /* a file the user gave is wrong: assignment.yaml, a recipe,
				 a --put file that cannot be read or copied */
	ERR_NOT_FOUND = 3,    /* what the user named is well-formed but does not exist
				 (an image version) */
	ERR_UNAVAILABLE = 4,  /* this host cannot do it: no KVM for 'vm', no working
				 backend, not root, a host tool missing */
	ERR_BUSY = 5,	      /* every slot is taken by running proctors: retry later */
	ERR_BUILD_FAILED = 6, /* what the user asked to build ran and failed: an image's
				 mmdebstrap (an unknown package, the mirror) or setup */
	/* The service's refusals: the caller's, each its own answer. */
	ERR_UNAUTHORIZED = 7,	  /* no token, or not a valid one */
	ERR_FORBIDDEN = 8,	  /* a valid token of too small a scope */
	ERR_TOO_LARGE = 9,	  /* a body, archive or document past its cap */
	ERR_QUEUE_FULL = 10,	  /* the course's queue is at its bound: retry later */
	ERR_SUBMISSION_LIMIT = 11, /* the policy's limit of submissions is reached */
	ERR_TOO_SOON = 12,	  /* the policy's interval has not passed: retry later */
	ERR_BUDGET_EXCEEDED = 13, /* the course's daily CPU cap is spent */
	ERR_CAPACITY = 14,	  /* no room for a sandbox on the host now: retry later */
	ERR_KIND_COUNT	      /* not a kind: the size of the table */
};

/*
 * Fallible functions return 0 on success and -1 on failure, taking a
 * `struct err *` last.  The struct lives on the caller's stack and is only
 * written on failure.  `errnum` is the errno that caused it (0 when the
 * failure is not a system error); `kind` says whose failure it is; `msg`
 * is one line for a human, built from the innermost message outwards:
 * "put 'a.txt': open: Permission denied".
 */
struct err {
	int errnum;
	enum err_kind kind;
	char msg[1024];
};

/* Set the error from a format; appends ": strerror(errnum)" when errnum != 0.
 * The kind is ERR_INTERNAL.  Always returns -1 so callers can
 * `return err_set(...)`. */
int err_set(struct err *e, int errnum, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* err_set() with the kind given. */
int err_setk(struct err *e, enum err_kind kind, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Prefix context to an existing error: "context: previous message".  The
 * kind and errnum stay.  Returns -1. */
int err_wrap(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Say whose failure an error already set is, for the caller that knows
 * better than the code that set it (a failed download is the build's, not
 * Proctor's).  The message stays.  Returns -1. */
int err_classify(struct err *e, enum err_kind kind);

/* The mapping of a kind, from the one table in err.c; a value outside the
 * enum maps as ERR_INTERNAL.  Exit statuses are those of every proctor
 * command (0 is never one); HTTP statuses and codes are the service's. */
int err_exit_status(enum err_kind kind);
int err_http_status(enum err_kind kind);
const char *err_code(enum err_kind kind); /* "internal", "invalid_input", ... */
/* The kind of a stable code (a client reading the service's answer);
 * ERR_INTERNAL for one it does not know. */
enum err_kind err_kind_of_code(const char *code);

#endif
