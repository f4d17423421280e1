/* Resource limits of one sandboxed run: defaults, bounds, parsing of user text. */
#ifndef PROCTOR_RUNLIMITS_H
#define PROCTOR_RUNLIMITS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Every limit a run enforces.  Sizes are bytes, times milliseconds. */
struct limits {
	uint64_t cpu_ms;       /* CPU time of the whole sandbox (cgroup accounting) */
	uint64_t wall_ms;      /* wall clock from start to exit of the program */
	uint64_t memory_bytes; /* memory cgroup, swap included */
	uint64_t pids;         /* processes+threads alive at once (pids cgroup) */
	uint64_t fsize_bytes;  /* largest file the program may write (RLIMIT_FSIZE) */
	uint64_t disk_bytes;   /* size of the writable tree: /work, /tmp, /dev/shm */
	uint64_t output_bytes; /* kept per stream of stdout/stderr; the rest is counted */
	uint64_t nofile;       /* open file descriptors per process (RLIMIT_NOFILE) */
};

/* Limits used when the caller names none. */
void limits_default(struct limits *l);

/* The unit a limit is written in on the command line. */
enum limit_unit {
	LIMIT_UNIT_SECONDS, /* fractional seconds, millisecond precision: "1.5" */
	LIMIT_UNIT_MIB,     /* whole MiB (2^20 bytes) */
	LIMIT_UNIT_KIB,     /* whole KiB (2^10 bytes) */
	LIMIT_UNIT_COUNT,   /* a plain whole number */
};

/* One row of the limit table: its option name and where it lives. */
struct limit_desc {
	const char *name;   /* option without dashes, also the JSON limits_hit name */
	enum limit_unit unit;
	uint64_t min, max;  /* inclusive bounds: milliseconds for seconds, else the written unit */
	const char *help;
	size_t off; /* of its field in struct limits */
};

/* The limit table, in option order; `count` receives its length. */
const struct limit_desc *limits_table(unsigned *count);

/* Parse `text` for the limit called `name` and store it in `l`.
 * Errors name the option and the accepted range. */
int limits_set(struct limits *l, const char *name, const char *text, struct err *e);

/*
 * Whether this host can grant the per-process limits in `l` (the ones set
 * as rlimits: nofile, fsize, and pids through RLIMIT_NPROC).  Proctor sets
 * them as root before dropping privilege, but root without
 * CAP_SYS_RESOURCE (a container, a restricted service) cannot raise a hard
 * limit above its own, and root with it not above fs.nr_open for nofile.
 * A limit the host cannot grant fails here, naming the limit, the value
 * and the host's ceiling, so it is refused before any sandbox is made
 * instead of failing every run.
 */
int limits_check_host(const struct limits *l, struct err *e);

/* Parse a decimal number of seconds with at most three decimals ("2", "0.25")
 * into milliseconds.  Rejects signs, exponents, spaces, empty and overflow. */
int parse_seconds_ms(const char *text, uint64_t *ret_ms);

#endif
