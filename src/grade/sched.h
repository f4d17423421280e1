/* The grading scheduler: worker processes that run jobs, results handed back as they finish. */
#ifndef PROCTOR_GRADE_SCHED_H
#define PROCTOR_GRADE_SCHED_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/*
 * Theory of operation
 * -------------------
 * Two kinds of processes, one trust zone (both are Proctor, as root):
 *
 *   owner                 one thread of a single-threaded process; owns
 *     |                   the struct sched, the queue and every result
 *     | fork(), one socketpair per worker
 *     v
 *   worker 1..N           o->run() on one job at a time; its sandboxes die
 *                         with it, and it dies with the owner
 *                         (PR_SET_PDEATHSIG)
 *
 * Processes, not threads: the sandbox code clones raw and keeps
 * process-wide state, which is only safe in a single-threaded process.  A
 * worker is a fork of the owner, so o->run() sees what the owner held when
 * the worker started (an assignment, grade options); a job brings the rest
 * in `arg`.  A worker keeps the sandboxes its backend starts ahead (the
 * pre-started microVMs, sandbox.h: pool_hint) from job to job and removes
 * them before it exits.
 *
 * Protocol on a worker's socket: the owner sends one job at a time (its
 * id, 8 bytes; the length of arg, 4 bytes; arg), the worker answers with
 * an 8-byte length and the result as compact JSON.  EOF from the owner
 * means "no more work".  A worker that dies, sends more than o->result_max
 * bytes, sends something that is not a JSON object on one line or that
 * o->check refuses, or takes longer than the job's budget is killed by
 * pid, reaped and replaced; its job runs again, up to o->attempts times in
 * all, then ends as SCHED_FAILED (Proctor's failure, never the student's).
 * Workers ignore SIGINT: a Ctrl-C reaches the whole process group, and the
 * owner decides what stops.
 *
 * Ownership: every job submitted ends in exactly one SCHED_RESULT,
 * SCHED_FAILED or SCHED_CANCELLED event, after any number of SCHED_RETRY
 * events.  What an event holds belongs to the caller once
 * sched_next_result() returns it (sched_result_clear()).
 */

#define SCHED_MAX_WORKERS 256
#define SCHED_ARG_MAX	  4096 /* bytes of a job's arg, its NUL included */

struct sched_job {
	uint64_t id;	    /* the caller's; unique among jobs not yet ended */
	const char *arg;    /* for o->run(); copied by sched_submit() */
	uint64_t budget_ns; /* the longest one attempt may take */
};

struct sched_options {
	unsigned workers;    /* at most SCHED_MAX_WORKERS */
	unsigned attempts;   /* times a job is handed to a worker before SCHED_FAILED */
	uint64_t result_max; /* bytes of one result */
	int wake_fd;	     /* the caller's (a signalfd), watched with the workers; -1: none */
	void *ctx;	     /* for the callbacks */
	/* In a worker: the result of `job`, a JSON object; NULL (out of
	 * memory) ends the worker. */
	json_t *(*run)(void *ctx, const struct sched_job *job);
	/* In a new worker, first: close what a worker must not hold.  Optional. */
	void (*in_worker)(void *ctx);
	/* In the owner: 0 if `doc` may be job `id`'s result, else -1 and `why`
	 * (the worker is then lost).  Optional. */
	int (*check)(void *ctx, uint64_t id, const json_t *doc, char *why, size_t why_len);
};

enum sched_event {
	SCHED_RESULT,	 /* the job's result: doc, line */
	SCHED_RETRY,	 /* worker `pid` failed (why); the job is queued again */
	SCHED_FAILED,	 /* the job is over without a result: worker `pid` failed on the
			    last attempt (why), or, pid 0, no worker could be started */
	SCHED_CANCELLED, /* the job is over: sched_cancel(), sched_drain() */
	SCHED_NOTE,	 /* about the pool, not a job (why): a worker could not be started */
};

struct sched_result {
	enum sched_event event;
	uint64_t id;
	unsigned attempts; /* times the job was handed to a worker */
	pid_t pid;
	char why[512];
	json_t *doc; /* SCHED_RESULT: owned by the caller */
	char *line;  /* SCHED_RESULT: doc as the worker sent it, ending in '\n'; owned */
	size_t len;  /* of line, '\n' included */
};

struct sched;

/* Start o->workers workers (one that cannot start is a SCHED_NOTE event). */
int sched_new(const struct sched_options *o, struct sched **ret, struct err *e);

/* Queue a job: jobs start in the order queued, a retried one last. */
int sched_submit(struct sched *s, const struct sched_job *job, struct err *e);

/*
 * The next event, waiting at most timeout_ms (-1: no limit): 1 and *ret,
 * or 0 when none came or wake_fd is readable (not read), or -1 when
 * waiting failed.  Calls are what hands jobs to idle workers and enforces
 * budgets: keep calling while sched_pending() > 0.
 */
int sched_next_result(struct sched *s, int timeout_ms, struct sched_result *ret, struct err *e);

/* Jobs queued or running, and events not yet taken. */
size_t sched_pending(const struct sched *s);

/* End a job now: dropped if queued; if running, its worker (and the job's
 * sandbox) killed and replaced.  -1 if the job is neither. */
int sched_cancel(struct sched *s, uint64_t id);

/* Start no more jobs: queued ones are cancelled, running ones finish, each
 * worker exits once idle; sched_submit() refuses from now on. */
void sched_drain(struct sched *s);

/* Stop: idle workers told to exit, busy ones sent SIGTERM, any left after
 * two seconds killed; all reaped.  Events not taken are dropped. */
struct sched *sched_free(struct sched *s);

void sched_result_clear(struct sched_result *r);

#endif
