/* The outcome of one sandboxed run: verdict, usage, captured output; JSON and text forms. */
#ifndef PROCTOR_RESULT_H
#define PROCTOR_RESULT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "capbuf.h"
#include "runlimits.h"

/* Numbers and names are part of the result format: retire, never reuse. */
enum run_status {
	RUN_OK = 0,           /* exited with code 0, no limit hit */
	RUN_NONZERO_EXIT = 1, /* exited with another code */
	RUN_SIGNALED = 2,     /* killed by a signal Proctor did not send */
	RUN_TIMEOUT = 3,      /* CPU or wall-clock limit */
	RUN_MEMORY_LIMIT = 4, /* the memory cgroup OOM-killed a process */
	RUN_ERROR = 5,        /* Proctor's own failure, never the program's */
};

/* Bits of run_result.limits_hit, in the order of limit_hit_names[]. */
enum limit_hit {
	LIMIT_HIT_CPU = 1u << 0,
	LIMIT_HIT_WALL = 1u << 1,
	LIMIT_HIT_MEMORY = 1u << 2,
	LIMIT_HIT_PIDS = 1u << 3,
	LIMIT_HIT_FSIZE = 1u << 4,
	LIMIT_HIT_DISK = 1u << 5,
	LIMIT_HIT_OUTPUT = 1u << 6,
	LIMIT_HIT_NOFILE = 1u << 7,
	LIMIT_HIT_SECCOMP = 1u << 8,
};
#define LIMIT_HIT_COUNT 9

struct run_result {
	enum run_status status;
	unsigned limits_hit;      /* enum limit_hit bits */
	int exit_code;            /* -1 when the program did not exit normally */
	int signal;               /* 0 when not killed by a signal */
	uint64_t cpu_ms;
	uint64_t wall_ms;
	uint64_t peak_memory_kib;
	uint64_t peak_pids;
	struct capbuf out, err;   /* captured stdout and stderr */
	char message[1024];        /* one line for humans; "" when none */
};

const char *run_status_name(enum run_status s);
const char *limit_hit_name(unsigned bit_index);

/* Initialise with output caps; returns -1 on OOM. */
int run_result_init(struct run_result *r, size_t output_cap);
void run_result_free(struct run_result *r);

/* The JSON object defined in docs/run-result.md; NULL on OOM. */
json_t *run_result_to_json(const struct run_result *r);

/* A short human summary (status line, usage, output). */
void run_result_print_text(FILE *f, const struct run_result *r);

/*
 * Decide status, limits_hit and message from what happened, once exit_code,
 * signal, cpu_ms and the usage fields are filled: the supervisor killed the
 * program for `killed_for` (LIMIT_HIT_* bits), the memory cgroup OOM-killed
 * a process, or (exec_failure non-NULL) the program could not be started.
 * Shared by every backend, so a verdict means the same thing everywhere.
 */
void run_result_classify(struct run_result *res, const struct limits *l, unsigned killed_for,
			 bool oom_killed, const char *exec_failure);

/* The exit status of `proctor run` for this result: 0 ok, 1 failed or
 * limit, 3 Proctor's own error. */
int run_result_exit_status(const struct run_result *r);

#endif
