/* proctor worker: claim jobs from the store, grade them on the grading scheduler, record results
 * fenced by the lease. */
#ifndef PROCTOR_SERVICE_WORKER_H
#define PROCTOR_SERVICE_WORKER_H

#include <stdbool.h>

/*
 * Theory of operation
 * -------------------
 * One single-threaded owner process holds the store connection and a
 * grading scheduler (grade/sched.h) of N grading processes, the same one
 * `proctor class` uses.  The owner claims a job only when a grading
 * process is idle (so a claimed job starts at once and a lease never ages
 * in a local queue), unpacks its assignment version once per host and
 * spools its submission (service/files.h), and hands the two paths over.
 * While a job runs the owner extends its lease every third of the lease;
 * a heartbeat that finds the lease gone (the owner was paused or cut off
 * past it and another worker claimed the job) cancels the grading.  A
 * result is recorded with store_job_complete(), fenced by the attempt and
 * the lease token: a worker that lost its lease records nothing.
 *
 * Proctor's own failures (status "error" after the assignment's retries, a
 * grading process that failed twice, an archive that cannot be unpacked)
 * go back to the store with store_job_fail_ours(): retried with backoff,
 * then "error", not gradable, no penalty.  A student's failure is a result.
 *
 * SIGTERM or SIGINT: claim nothing more, let running gradings finish and
 * record them, then exit 0.  A second one: stop now, giving the running
 * jobs back unrun (store_job_release) so another worker takes them at once.
 * SIGKILL loses nothing either: the leases expire and another worker
 * grades the jobs again.
 */

/* A claim's lease unless --lease says otherwise, for `proctor worker` and
 * for the worker `proctor serve --workers` starts alike. */
#define WORKER_LEASE_S_DEFAULT 30

struct worker_options {
	const char *db_url;
	unsigned jobs;	       /* grading processes */
	const char *isolation; /* auto, jail or vm */
	const char *state_dir;
	unsigned slots;	     /* sandboxes at once on this host */
	unsigned lease_s;    /* a claim's lease; heartbeats every third */
	unsigned backoff_s;  /* first backoff after our own failure (doubles) */
	unsigned poll_ms;    /* how often an idle worker looks for jobs */
	const char *name;    /* recorded with each attempt; NULL: HOST/PID */
	bool exit_when_idle; /* exit once nothing is queued or running here */
};

/* Run a worker until told to stop; returns the process's exit status. */
int worker_run(const struct worker_options *o);

#endif
