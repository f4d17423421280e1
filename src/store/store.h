/* The grading service's durable job store: one interface, SQLite or PostgreSQL chosen by URL. */
#ifndef PROCTOR_STORE_H
#define PROCTOR_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/*
 * Theory of operation
 * -------------------
 * Everything `proctor serve` and `proctor worker` must not lose lives in
 * one database: courses, hashed tokens, content-addressed blobs (archives,
 * submissions), assignment versions, submissions, jobs, results, attempts,
 * the callback outbox, and the sandboxes of the sandbox API with their
 * execs.  docs/service-schema.md defines every table.
 *
 * Two backends sit behind `struct store_ops` (store_int.h), chosen at run
 * time from the URL: `sqlite:PATH` (one file, WAL, one host) and
 * `postgresql://...` (libpq; many hosts share it).  Both run the same SQL,
 * written once in PostgreSQL's spelling with a few dialect tokens (the
 * clock, the lock clause of a claim, the id and blob column types) that
 * each backend expands, so the behaviour is the same by construction.
 *
 * Every timestamp is an integer count of milliseconds since the Unix
 * epoch, UTC, read from the *database's* clock inside the statement that
 * writes it (never passed in).  Leases compare against that same clock,
 * so workers on hosts with skewed clocks agree on who holds a job.
 *
 * A job moves queued -> running (claimed with a lease) -> done, or back
 * to queued (our failure, with backoff; or a lease that expired), or to
 * error (our failure on the last attempt).  Completion is fenced: it
 * commits only if the job is still running under the caller's attempt
 * number and lease token and the lease has not expired, so execution may
 * repeat but a result is recorded exactly once per job.
 *
 * A `struct store` is one connection: use it from one thread at a time.
 * Open one per worker thread or process; never use one across fork().
 */

struct store;

/* Return values beside 0 and -1 (the struct err is filled for all of
 * them).  Numbers never change meaning. */
enum store_status {
	STORE_OK = 0,
	STORE_ERROR = -1,     /* the database failed or refused: our failure */
	STORE_FENCED = -2,    /* the caller's lease is gone (expired, or the job was
				 claimed again): nothing was recorded */
	STORE_NOT_FOUND = -3, /* the id, name or token does not exist */
	STORE_TOO_LARGE = -4, /* a blob or document above its cap */
	STORE_INVALID = -5,   /* an argument is malformed (a scope, a JSON document) */
	STORE_REFUSED = -6,   /* the caller's admission check refused (store_submit) */
};

/* The schema version this code writes; store_open() refuses a newer database. */
#define STORE_SCHEMA_VERSION 8

/* Attempts of a job when the submission does not say. */
#define STORE_DEFAULT_ATTEMPTS 3

/* Caps (bytes). */
#define STORE_BLOB_MAX	      (256u << 20) /* one blob: an archive or a submission */
#define STORE_DOC_MAX	      (4u << 20)   /* one result document */
#define STORE_TEXT_MAX	      4096	   /* names, labels, URLs, reasons */
#define STORE_TOKEN_LEN	      84	   /* "prt_" + 16 hex selector + 64 hex secret */
#define STORE_LEASE_TOKEN_LEN 32	   /* hex */

/*
 * Open (creating when needed) the database at `url` and apply every
 * migration it lacks, in one transaction, recording the schema version; a
 * database that lacks none is only read.  A database whose version is
 * newer than STORE_SCHEMA_VERSION is refused.
 * `url` is `sqlite:PATH` or `postgresql://...` (`postgres://` too).
 * *ret is written only on success; free with store_close().
 */
int store_open(const char *url, struct store **ret, struct err *e);
/* Close the connection; accepts NULL; returns NULL. */
struct store *store_close(struct store *st);
/* "sqlite" or "postgresql". */
const char *store_backend(const struct store *st);
/* The database's clock, milliseconds since the epoch. */
int store_now_ms(struct store *st, int64_t *ret_ms, struct err *e);

/* ---- courses and tokens ---- */

enum store_scope {
	STORE_SCOPE_SUBMIT = 1,
	STORE_SCOPE_INSTRUCTOR = 2,
	STORE_SCOPE_ADMIN = 3,
};
/* "submit", "instructor", "admin"; NULL for anything else. */
const char *store_scope_name(enum store_scope s);
/* Parse a scope name; STORE_INVALID when unknown. */
int store_scope_parse(const char *name, enum store_scope *ret, struct err *e);

/* The id of course `name`, creating it when `create` (else STORE_NOT_FOUND). */
int store_course_ensure(struct store *st, const char *name, bool create, int64_t *ret_id,
			struct err *e);

/* A course by id. */
struct store_course {
	int64_t course_id;
	char name[256];
	double daily_cpu_cap; /* CPU-seconds a day; NaN: no cap */
	int64_t created_ms;
};
int store_course_get(struct store *st, int64_t course_id, struct store_course *ret, struct err *e);
/* Set (or, with NaN, lift) a course's daily CPU-seconds cap. */
int store_course_set_cpu_cap(struct store *st, int64_t course_id, double cpu_seconds,
			     struct err *e);

/*
 * Make a new token of `scope` for course `course` (created if new) and
 * write it, NUL-terminated, into ret_token: it is shown once and only its
 * SHA-256 is stored.  Format: "prt_" + 16 hex (selector, stored in clear to
 * find the row) + 64 hex (secret).
 */
int store_token_create(struct store *st, const char *course, enum store_scope scope,
		       char ret_token[STORE_TOKEN_LEN + 1], struct err *e);

/* Bounds of a token's own limits (migration 7). */
#define STORE_SPEND_MICROS_MAX	 1000000000000LL /* a million dollars a day */
#define STORE_LIVE_SANDBOXES_MAX 100000

/*
 * What a token may use of sandboxes, beside its course's budget: -1 in a
 * member is no limit.  daily_spend_micros: millionths of a dollar of
 * metered sandbox cost a UTC day (0..STORE_SPEND_MICROS_MAX);
 * max_live_sandboxes: its sandboxes live at once (0..STORE_LIVE_SANDBOXES_MAX).
 */
struct store_token_limits {
	int64_t daily_spend_micros;
	int64_t max_live_sandboxes;
};
#define STORE_TOKEN_UNLIMITED ((struct store_token_limits){-1, -1})
/* store_token_create() with limits (NULL: none), and the new token's id
 * into *ret_id (may be NULL).  STORE_INVALID for a limit out of range. */
int store_token_mint(struct store *st, const char *course, enum store_scope scope,
		     const struct store_token_limits *limits, char ret_token[STORE_TOKEN_LEN + 1],
		     int64_t *ret_id, struct err *e);
/* Replace the limits of course_id's active token token_id (course 0: of any
 * course).  STORE_NOT_FOUND when there is no such active token. */
int store_token_set_limits(struct store *st, int64_t course_id, int64_t token_id,
			   const struct store_token_limits *limits, struct err *e);

/* What a valid token grants. */
struct store_token_info {
	int64_t token_id;
	int64_t course_id;
	enum store_scope scope;
	struct store_token_limits limits;
};
/* Check a presented token (untrusted text, any length): the hash of its
 * secret is compared in constant time with the stored one.  STORE_NOT_FOUND
 * for a malformed, unknown or revoked token. */
int store_token_check(struct store *st, const char *token, struct store_token_info *ret,
		      struct err *e);
/* Revoke a token by id: of course_id only (0: of any course, for tests
 * and tools; the API and `proctor admin token --revoke` pass the course).
 * STORE_NOT_FOUND when there is no such active token (of that course). */
int store_token_revoke(struct store *st, int64_t course_id, int64_t token_id, struct err *e);

/* A course's token as listed: never its secret nor the secret's hash. */
struct store_token_row {
	int64_t token_id;
	enum store_scope scope;
	char prefix[4 + 16 + 1]; /* "prt_" + the selector: which token it is */
	int64_t created_ms;
	int64_t revoked_ms; /* 0: active */
	struct store_token_limits limits;
};
/* The tokens of course_id, oldest first, at most cap (*ret_n of them). */
int store_token_list(struct store *st, int64_t course_id, struct store_token_row *rows,
		     size_t cap, size_t *ret_n, struct err *e);

/* ---- blobs ---- */

/* Store bytes content-addressed; an existing digest is not stored twice.
 * ret_sha256 gets 64 hex + NUL.  STORE_TOO_LARGE above STORE_BLOB_MAX. */
int store_blob_put(struct store *st, const void *data, size_t len, char ret_sha256[65],
		   struct err *e);
/* The bytes of a blob (malloc'd, owned by the caller; *ret_data is NULL
 * for an empty blob).  STORE_NOT_FOUND for an unknown digest. */
int store_blob_get(struct store *st, const char *sha256, void **ret_data, size_t *ret_len,
		   struct err *e);

/* ---- assignments ---- */

/*
 * Add a version of assignment `name` in course `course_id` (the assignment
 * is created if new): the archive's bytes go to a blob, and the version
 * (archive digest + image pin) is immutable.  If the latest version has the
 * same archive and pin, its id is returned and nothing is added.
 */
int store_assignment_add_version(struct store *st, int64_t course_id, const char *name,
				 const void *archive, size_t len, const char *image_pin,
				 int64_t *ret_version_id, int *ret_version_no, struct err *e);

struct store_version {
	int64_t version_id;
	int64_t assignment_id;
	int64_t course_id;
	int version_no;
	char name[256];
	char archive_sha256[65];
	char image_pin[256];
	int64_t created_ms;
};
/* A version by id. */
int store_version_get(struct store *st, int64_t version_id, struct store_version *ret,
		      struct err *e);
/* The latest version of an assignment by the assignment's id. */
int store_assignment_latest(struct store *st, int64_t assignment_id, struct store_version *ret,
			    struct err *e);

/* ---- submissions and jobs ---- */

/* A new submission; strings may be NULL where marked. */
struct store_submission_in {
	int64_t course_id;
	int64_t version_id;	     /* must belong to course_id */
	const char *student;	     /* label, may be NULL */
	const char *idempotency_key; /* unique per course; NULL: none */
	const char *callback_url;    /* NULL: no callback */
	bool callback_staff;	     /* the callback carries the result document (made with an
					instructor's token); false: the student view */
	const void *data;	     /* the submission's archive bytes */
	size_t len;
	int max_attempts; /* attempts for our own failures; <= 0: STORE_DEFAULT_ATTEMPTS */
	/*
	 * Optional: called inside the submission's transaction, after the
	 * student's submissions to the assignment are locked (so one student's
	 * checked submissions wait for each other; other students' do not)
	 * and before anything is written:
	 * 0 admits, > 0 refuses (store_submit returns STORE_REFUSED, nothing
	 * written), < 0 fails.  Store calls it makes join the transaction.
	 * Not called for a replayed idempotency key.
	 */
	int (*admit)(struct store *st, void *ctx, struct err *e);
	void *admit_ctx;
};

/*
 * Commit the submission, its blob and its queued job in one transaction.
 * With an idempotency key already used in the course, nothing is written
 * and the existing ids are returned with *ret_existing = true.
 */
int store_submit(struct store *st, const struct store_submission_in *in, int64_t *ret_submission,
		 int64_t *ret_job, bool *ret_existing, struct err *e);

/* A claimed job: what a worker needs to grade it and to fence itself. */
struct store_claim {
	int64_t job_id;
	int64_t submission_id;
	int64_t version_id;
	int attempt; /* 1 for the first */
	int max_attempts;
	char lease_token[STORE_LEASE_TOKEN_LEN + 1];
	int64_t lease_expires_ms;
	char submission_sha256[65];
	char archive_sha256[65];
	char image_pin[256];
};

/*
 * Claim the oldest runnable job: queued with not_before passed, or running
 * with an expired lease (its worker is presumed dead).  The claim
 * increments the attempt, makes a new random lease token, sets the lease
 * to the database's now + lease_ms and opens an attempt row.  When nothing
 * is runnable, the claim sweeps (store_job_sweep) before returning 0.
 * Returns 1 with *ret filled when a job was claimed, 0 when none is
 * runnable, negative on failure.
 */
int store_job_claim(struct store *st, const char *worker, const char *host, int64_t lease_ms,
		    struct store_claim *ret, struct err *e);

/* End as error every running job whose lease expired on its last attempt
 * (its worker was lost); *ret_ended (may be NULL) says how many.  A claim
 * that finds nothing to do does this too; a server calls it periodically. */
int store_job_sweep(struct store *st, int64_t *ret_ended, struct err *e);

/* Extend the lease by the job's lease length from the database's now.
 * STORE_FENCED when the lease already expired or the job was claimed again. */
int store_job_heartbeat(struct store *st, int64_t job_id, const char *lease_token, struct err *e);

/* Record the sandbox-ready phase time (database clock) and extend the
 * lease, fenced like a heartbeat. */
int store_job_sandbox_ready(struct store *st, int64_t job_id, const char *lease_token,
			    struct err *e);

/* What a worker reports for a graded job (the student's verdict is data). */
struct store_result_in {
	const char *doc_json; /* the result document, JSON (docs/result.md) */
	const char *student_json; /* its student view, for a callback a student asked for;
				     NULL: such a callback carries "result": null */
	double score;	      /* NaN: none */
	double max_score;     /* NaN: none */
	double cpu_seconds;   /* reserved CPU-seconds */
	double gib_seconds;   /* reserved GiB-seconds of memory */
};

/*
 * In one transaction: check that the job is running under `attempt` and
 * `lease_token` and that the lease has not expired (else STORE_FENCED and
 * nothing is written); add the result row, close the attempt row, add an
 * outbox row when the submission has a callback URL, mark the job done.
 * ret_result may be NULL.
 */
int store_job_complete(struct store *st, int64_t job_id, int attempt, const char *lease_token,
		       const struct store_result_in *res, int64_t *ret_result, struct err *e);

/*
 * Proctor's own failure on this attempt (sandbox could not start, image
 * missing): the job goes back to queued with not_before = now + backoff
 * (backoff_ms * 2^(attempt-1), capped at 10 minutes) while attempts remain,
 * else to error with the reason.  Either way it is "not gradable, no
 * penalty".  Fenced like completion.  *ret_final (may be NULL) says whether
 * the job ended as error.
 */
int store_job_fail_ours(struct store *st, int64_t job_id, int attempt, const char *lease_token,
			const char *reason, int64_t backoff_ms, bool *ret_final, struct err *e);

/*
 * Give a claimed job back without grading it (a worker shutting down): it
 * is queued again at once and the attempt does not count (max_attempts
 * grows by one, so attempt numbers stay unique).  Fenced like completion.
 */
int store_job_release(struct store *st, int64_t job_id, int attempt, const char *lease_token,
		      struct err *e);

enum store_job_state {
	STORE_JOB_QUEUED = 0,
	STORE_JOB_RUNNING = 1,
	STORE_JOB_DONE = 2,
	STORE_JOB_ERROR = 3,
};
#define STORE_JOB_STATES 4
const char *store_job_state_name(enum store_job_state s);

/* A job as the API shows it; times are 0 when the phase has not happened. */
struct store_job {
	int64_t job_id;
	int64_t submission_id;
	int64_t version_id;
	enum store_job_state state;
	int attempt;
	int max_attempts;
	bool not_gradable; /* ended by our failure: no penalty */
	char error[STORE_TEXT_MAX];
	char worker[256];
	char host[256];
	int64_t received_ms, queued_ms, started_ms, sandbox_ready_ms, finished_ms, delivered_ms;
	int64_t not_before_ms;
	int64_t lease_expires_ms;
};

/* One result row. */
struct store_result {
	int64_t result_id;
	int64_t job_id;
	int64_t version_id;
	double score, max_score; /* NaN when none */
	double cpu_seconds, gib_seconds;
	int64_t created_ms;
	char *doc_json; /* malloc'd; freed by store_submission_view_clear() */
};

/* A submission with its latest job and latest result (has_result false
 * when none yet). */
struct store_submission_view {
	int64_t submission_id;
	int64_t course_id;
	int64_t version_id;
	char student[256];
	char idempotency_key[256];
	char callback_url[STORE_TEXT_MAX];
	char sha256[65];
	int64_t received_ms;
	struct store_job job; /* the latest job */
	bool has_result;
	struct store_result result;
};
int store_submission_get(struct store *st, int64_t submission_id, struct store_submission_view *ret,
			 struct err *e);
/* Free what a view owns (the document); the view may be reused. */
void store_submission_view_clear(struct store_submission_view *v);

/* Ids of a course's submissions, oldest first, with id > after_id (paging),
 * only student `student` when not NULL, at most `cap`. */
int store_submission_list(struct store *st, int64_t course_id, const char *student,
			  int64_t after_id, int64_t *ret_ids, size_t cap, size_t *ret_n,
			  struct err *e);

/* The result rows of a submission, oldest first, without their documents
 * (doc_json stays NULL): for "which scores changed" after a regrade. */
int store_result_list(struct store *st, int64_t submission_id, struct store_result *ret, size_t cap,
		      size_t *ret_n, struct err *e);

/* CPU-seconds reserved by the results of a course's submissions recorded
 * since `since_ms` (database clock), and used by its sandboxes' execs that
 * ended since then: the daily budget's numerator. */
int store_course_cpu_since(struct store *st, int64_t course_id, int64_t since_ms,
			   double *ret_cpu_seconds, struct err *e);

/* Unfinished (queued or running) jobs of a course, for backpressure (429
 * when at the course's bound); reads only the index of unfinished jobs. */
int store_course_backlog(struct store *st, int64_t course_id, int64_t *ret_n, struct err *e);

/* Jobs by state for every course (for /metrics; reads every job). */
struct store_course_counts {
	int64_t course_id;
	int64_t n[STORE_JOB_STATES];
};
/* Fill up to `cap` entries, one per course with jobs, ordered by course id;
 * *ret_n is how many were written. */
int store_job_counts(struct store *st, struct store_course_counts *ret, size_t cap, size_t *ret_n,
		     struct err *e);

/* Phase times of a finished job (0 when the phase did not happen). */
struct store_phase_times {
	int64_t queued_ms, started_ms, sandbox_ready_ms, finished_ms;
};
/*
 * Jobs finished after (*after_ms, *after_id) with id >= *floor_id, in
 * (finished, id) order, at most cap: for /metrics, read incrementally.
 * Start with all 0; each call moves (*after_ms, *after_id) to the last row
 * read and *floor_id to the oldest unfinished job (so the scan never walks
 * the whole history).  A job whose finish commits after a later-stamped
 * one was read is missed: the histograms are a sample, not a ledger.
 */
int store_job_phases(struct store *st, int64_t *floor_id, int64_t *after_ms, int64_t *after_id,
		     struct store_phase_times *ret, size_t cap, size_t *ret_n, struct err *e);

/* A worker holding running jobs, for /metrics. */
struct store_worker_stat {
	char worker[256];
	int64_t running;	   /* jobs it holds */
	int64_t last_heartbeat_ms; /* its latest claim, heartbeat or sandbox-ready */
};
/* How an attempt ended (attempts.outcome); numbers never change meaning. */
enum store_outcome {
	STORE_OUTCOME_RUNNING = 0,	 /* not yet */
	STORE_OUTCOME_DONE = 1,		 /* completed with a result */
	STORE_OUTCOME_FAILED = 2,	 /* our failure (store_job_fail_ours) */
	STORE_OUTCOME_LEASE_EXPIRED = 3, /* its worker was lost or fenced */
	STORE_OUTCOME_RELEASED = 4,	 /* given back undone (store_job_release) */
};
#define STORE_OUTCOMES 5
/* "running", "done", "failed", "lease_expired", "released" (the database's
 * spelling, and /metrics'); NULL for anything else. */
const char *store_outcome_name(enum store_outcome o);
/* Workers with running jobs (up to cap, by name) and attempts by outcome (all
 * time), indexed by enum store_outcome. */
int store_worker_stats(struct store *st, struct store_worker_stat *ret, size_t cap, size_t *ret_n,
		       int64_t outcomes[STORE_OUTCOMES], struct err *e);

/* One attempt of a job, as recorded. */
struct store_attempt {
	int attempt;
	char worker[256];
	char host[256];
	int64_t started_ms;
	int64_t ended_ms; /* 0 while running */
	char outcome[32]; /* running|done|failed|lease_expired|released */
};
/* Up to `cap` attempts of a job, oldest first. */
int store_job_attempts(struct store *st, int64_t job_id, struct store_attempt *ret, size_t cap,
		       size_t *ret_n, struct err *e);

/* ---- regrades of many submissions ---- */

enum store_regrade_scope {
	STORE_REGRADE_SUBMISSION = 0, /* one submission */
	STORE_REGRADE_STUDENT = 1,    /* a student's latest submission */
	STORE_REGRADE_LATEST = 2,     /* every student's latest (each unlabelled one too) */
	STORE_REGRADE_ALL = 3,	      /* every submission of the assignment */
};
/* "submission", "student", "latest", "all"; STORE_INVALID for anything else. */
int store_regrade_scope_parse(const char *name, enum store_regrade_scope *ret, struct err *e);

/* Most submissions one regrade takes. */
#define STORE_REGRADE_MAX 100000

struct store_regrade_in {
	int64_t course_id;
	int64_t assignment_id;
	int64_t version_id; /* a version of the assignment; 0: its latest */
	enum store_regrade_scope scope;
	int64_t submission_id; /* STORE_REGRADE_SUBMISSION */
	const char *student;   /* STORE_REGRADE_STUDENT */
};

/*
 * In one transaction: record a regrade and queue a job for each submission
 * its scope takes (of any version of the assignment), remembering each
 * submission's latest result so the regrade can say which scores changed.
 * STORE_NOT_FOUND when the assignment, version or submission is not the
 * course's, or the scope takes no submission.
 */
int store_regrade_batch(struct store *st, const struct store_regrade_in *in,
			int64_t *ret_regrade, int64_t *ret_version, size_t *ret_jobs, struct err *e);

/* One submission of a regrade: its new job, and the scores before and after. */
struct store_regrade_item {
	int64_t submission_id;
	int64_t job_id;
	char student[256];
	enum store_job_state state; /* of the new job */
	double old_score, new_score; /* NaN: no result (yet) */
};
struct store_regrade_info {
	int64_t regrade_id, course_id, assignment_id, version_id, created_ms;
	char scope[16];
	size_t total;	 /* jobs */
	size_t finished; /* done or error */
	size_t changed;	 /* finished with a score other than the one before */
};
/* A regrade and up to `cap` of its items, by submission id. */
int store_regrade_get(struct store *st, int64_t regrade_id, struct store_regrade_info *ret,
		      struct store_regrade_item *items, size_t cap, size_t *ret_n, struct err *e);

/* ---- callback outbox ---- */

struct store_delivery {
	int64_t outbox_id;
	int64_t job_id;
	int64_t submission_id;
	char delivery_id[33]; /* hex, unique: receivers deduplicate by it */
	char url[STORE_TEXT_MAX];
	char *payload; /* JSON, malloc'd; freed by store_delivery_clear() */
	int attempts;  /* made before this one */
};
void store_delivery_clear(struct store_delivery *d);

/*
 * Take up to `cap` deliveries that are due (pending, next_try passed) and
 * hold them for `hold_ms` (next_try moves forward) so that other servers do
 * not send them at the same time.  *ret_n is how many were filled.
 */
int store_outbox_take_due(struct store *st, int64_t hold_ms, struct store_delivery *ret, size_t cap,
			  size_t *ret_n, struct err *e);
/*
 * Record one delivery attempt: ok marks it delivered (and the job's
 * delivered time); otherwise it is retried at now + retry_ms, or marked
 * failed after `max_attempts` attempts.  http_status 0 when there was no
 * answer; error may be NULL.
 */
int store_outbox_record(struct store *st, int64_t outbox_id, bool ok, int http_status,
			const char *error, int64_t retry_ms, int max_attempts, struct err *e);

/* ---- assignment policies, extensions, the gradebook (migration 3) ---- */

/*
 * The policy of an assignment (docs/policy.md) is a JSON document that the
 * store keeps as text and does not interpret: src/service/policy.[ch]
 * parses, checks and applies it.  It is mutable and not part of an
 * assignment version.  Per-student extensions move one student's due date.
 */

#define STORE_POLICY_MAX    (16u << 10) /* bytes of a policy document */
#define STORE_GRADEBOOK_MAX 200000	/* submission rows of one gradebook read */

/* An assignment by id, with its latest version. */
struct store_assignment {
	int64_t assignment_id;
	int64_t course_id;
	char name[256];
	int64_t latest_version_id; /* 0 when it has no version (never, through the API) */
	int latest_version_no;
	int64_t created_ms;
	int64_t policy_ms; /* when the policy was last set or cleared; 0: never */
};
int store_assignment_get(struct store *st, int64_t assignment_id, struct store_assignment *ret,
			 struct err *e);

/*
 * Set an assignment's policy document (a JSON object of at most
 * STORE_POLICY_MAX bytes; STORE_INVALID otherwise), or clear it with NULL
 * (the defaults apply again).  STORE_NOT_FOUND for an unknown assignment.
 */
int store_policy_set(struct store *st, int64_t assignment_id, const char *policy_json,
		     struct err *e);
/* The policy document as set (malloc'd, owned by the caller), or *ret_json
 * = NULL when none was set.  STORE_NOT_FOUND for an unknown assignment. */
int store_policy_get(struct store *st, int64_t assignment_id, char **ret_json, struct err *e);

/* One student's extension: a new due date, or seconds added to the due date. */
struct store_extension {
	char student[256];
	bool has_due;	 /* true: due_ms is the student's due date; false: extra_s is added */
	int64_t due_ms;	 /* ms since the epoch, when has_due */
	int64_t extra_s; /* > 0, when !has_due */
	int64_t created_ms;
};
#define STORE_EXTENSION_MAX_S (366LL * 24 * 3600)
/* Give (or replace) a student's extension: extra_s in 1..STORE_EXTENSION_MAX_S,
 * or due_ms >= 0 when has_due (STORE_INVALID otherwise).  STORE_NOT_FOUND
 * for an unknown assignment. */
int store_extension_set(struct store *st, int64_t assignment_id, const struct store_extension *ext,
			struct err *e);
/* Remove a student's extension; STORE_NOT_FOUND when there is none. */
int store_extension_remove(struct store *st, int64_t assignment_id, const char *student,
			   struct err *e);
/* A student's extension; STORE_NOT_FOUND when there is none. */
int store_extension_get(struct store *st, int64_t assignment_id, const char *student,
			struct store_extension *ret, struct err *e);
/* Every extension of an assignment, sorted by student (bytewise); *ret is
 * malloc'd (NULL when none), free it with free(). */
int store_extension_list(struct store *st, int64_t assignment_id, struct store_extension **ret,
			 size_t *ret_n, struct err *e);

/*
 * One submission of an assignment (any version) with its latest job and
 * its latest result, for limits and the gradebook.  A submission is not
 * gradable -- Proctor's own failure, "no penalty": it neither counts against
 * a submission limit nor as a result -- when its latest result's document
 * says status "error", or when it has no result and its latest job ended
 * not gradable.
 */
struct store_grade_row {
	int64_t submission_id;
	int64_t version_id;
	char student[256];
	int64_t received_ms;
	enum store_job_state job_state; /* the latest job's */
	bool not_gradable;		/* the rule above */
	bool has_result;
	int64_t result_id;	 /* the latest result (regrades add results) */
	double score, max_score; /* NaN when none */
	char status[32];	 /* the result document's "status"; "" without a result */
};

/*
 * Every submission of an assignment (all versions) that has a student
 * label, sorted by student (bytewise) then submission id; *ret is malloc'd
 * (NULL when none), free it with free().  STORE_TOO_LARGE above
 * STORE_GRADEBOOK_MAX rows.  STORE_NOT_FOUND for an unknown assignment.
 */
int store_gradebook_rows(struct store *st, int64_t assignment_id, struct store_grade_row **ret,
			 size_t *ret_n, struct err *e);

/* What a submission limit is checked against. */
struct store_submit_count {
	int64_t counted; /* the student's submissions of the assignment that count (the
			    rule of store_grade_row: all but the not gradable ones,
			    pending ones included) */
	int64_t last_ms; /* received time of the latest counted one; 0: none */
	int64_t now_ms;	 /* the database's clock when they were counted */
};
/* Count a student's submissions of an assignment in one snapshot.
 * STORE_INVALID without a student, STORE_NOT_FOUND for an unknown assignment. */
int store_student_submissions(struct store *st, int64_t assignment_id, const char *student,
			      struct store_submit_count *ret, struct err *e);

/* CPU-seconds and GiB-seconds reserved by the results of a course's
 * submissions recorded since `since_ms`, and used by its sandboxes' execs
 * that ended since then (budgets and cost estimates). */
int store_course_usage_since(struct store *st, int64_t course_id, int64_t since_ms,
			     double *ret_cpu_seconds, double *ret_gib_seconds, struct err *e);

/* ---- sandboxes over the API (migration 6, docs/sandbox-keeper.md) ---- */

/*
 * A sandbox is recorded before a keeper process holds it, and its row
 * outlives the keeper: creating (recorded, not yet held) -> running (a
 * keeper on a host holds it: store_sandbox_placed) -> deleted | expired |
 * lost | failed (store_sandbox_end, _lose_host, _sweep).  Only a live row
 * (creating or running) changes; an ended one is history, and ending it
 * again is STORE_NOT_FOUND.  Each command run in a sandbox is an exec row:
 * running -> done, or unknown when its sandbox ended while it ran (a result
 * that arrives after that still records it).  The store keeps labels and
 * env as JSON text it checks but does not interpret; the secret is the
 * keeper's (every frame to it carries it) and never leaves the service.
 */

#define STORE_SANDBOX_JSON_MAX	  (64u << 10)	    /* bytes of labels, env or argv JSON */
#define STORE_SANDBOX_TIMEOUT_MAX (7LL * 24 * 3600) /* seconds of one lease */
#define STORE_TEMPLATE_NAME_MAX	  64 /* bytes of a template's name: [a-z0-9][a-z0-9._-]* */
#define STORE_SANDBOX_PATH_MAX	  1024		    /* bytes of a socket path or a cwd, NUL too */

/* A new sandbox; strings may be NULL where marked. */
struct store_sandbox_in {
	int64_t course_id;
	int64_t token_id;		/* the creating token, of course_id */
	const char *isolation;		/* "jail", "vm", "auto": kept, not interpreted */
	const char *image_pin;		/* "host" or "name@N" */
	int vcpu, memory_mib, disk_mib; /* >= 0; 0: not given (NULL in the row) */
	int64_t timeout_s;		/* the lease, 1..STORE_SANDBOX_TIMEOUT_MAX */
	const char *labels_json;	/* a JSON object of strings; NULL: {} */
	const char *env_json;		/* a JSON object of strings; NULL: {} */
	const char *idempotency_key;	/* unique per course; NULL: none */
	int64_t max_cost_micros;	/* destroyed at this metered cost; 0: none */
};

/*
 * Record a sandbox in state creating with lease_end_ms = now + timeout_s
 * and a new random secret (64 hex + NUL into ret_secret).  A key already
 * used in the course writes nothing and returns that sandbox's id and
 * secret with *ret_existing = true (whatever its state now).
 * STORE_INVALID for a malformed field (a label with control characters,
 * JSON that is not an object of strings or above STORE_SANDBOX_JSON_MAX, a
 * size < 0, a timeout out of range); STORE_NOT_FOUND when the token is not
 * the course's; STORE_REFUSED when the token has its max_live_sandboxes
 * live (creating or running) already.  The count and the insert are one
 * step: two creates of one token never both take its last place (on
 * PostgreSQL the token's row is locked first).
 */
int store_sandbox_create(struct store *st, const struct store_sandbox_in *in, int64_t *ret_id,
			 char ret_secret[65], bool *ret_existing, struct err *e);

/* Where a keeper holds sandbox `id` now: creating -> running, with its host
 * (the key that store_sandbox_lose_host() takes), socket path and keeper
 * pid, started_ms = now.  STORE_NOT_FOUND when the sandbox is not creating. */
int store_sandbox_placed(struct store *st, int64_t id, const char *host_key, const char *socket,
			 int64_t keeper_pid, struct err *e);

/* A sandbox as recorded; numbers are 0 and strings "" where the column is
 * NULL (not given, or the phase has not happened). */
struct store_sandbox {
	int64_t sandbox_id;
	int64_t course_id;
	int64_t token_id;
	char state[16]; /* creating|running|deleted|expired|lost|failed */
	char isolation[256];
	char image_pin[256];
	int vcpu, memory_mib, disk_mib;
	int64_t timeout_s; /* as created; the lease is lease_end_ms */
	char *labels_json; /* malloc'd, never NULL after a get; store_sandbox_clear() */
	char *env_json;	   /* likewise */
	char idempotency_key[256];
	char secret[65];
	char host_key[256];
	char socket[STORE_SANDBOX_PATH_MAX];
	int64_t keeper_pid;
	int64_t created_ms, started_ms, lease_end_ms, ended_ms;
	char end_reason[STORE_TEXT_MAX];
	int64_t execs;	    /* execs done */
	int64_t cpu_ms;	    /* their CPU time */
	double gib_seconds; /* their GiB-seconds */
	int64_t max_cost_micros; /* 0: none */
	char template_pin[STORE_TEMPLATE_NAME_MAX + 16]; /* name@N it started from, or "" */
	int64_t now_ms;		 /* the database's clock when read: the life so far */
};
/* Sandbox `id` (of any course: the caller checks course_id).  *ret is
 * written only on success; STORE_NOT_FOUND for an unknown id. */
int store_sandbox_get(struct store *st, int64_t id, struct store_sandbox *ret, struct err *e);
/* Free what a sandbox owns (its JSON texts); accepts NULL; it may be reused. */
void store_sandbox_clear(struct store_sandbox *sb);

/*
 * Ids of course_id's sandboxes, newest first, at most cap (1..100000; *ret_n
 * of them): only live ones (creating, running) when live_only, only those
 * whose labels map label_key to label_value when both are given (both NULL:
 * any labels; one without the other is STORE_INVALID).
 */
int store_sandbox_list(struct store *st, int64_t course_id, const char *label_key,
		       const char *label_value, bool live_only, int64_t *ids, size_t cap,
		       size_t *ret_n, struct err *e);

/*
 * End a live sandbox: state is "deleted", "expired", "lost" or "failed"
 * (STORE_INVALID otherwise), reason (may be NULL) says why, ended_ms = now;
 * in the same transaction its running execs become unknown.
 * STORE_NOT_FOUND when the sandbox is not live (ended already, or unknown).
 */
int store_sandbox_end(struct store *st, int64_t id, const char *state, const char *reason,
		      struct err *e);

/* Move a live sandbox's lease end to now + timeout_s (0..STORE_SANDBOX_TIMEOUT_MAX:
 * longer or shorter; timeout_s as created stays).  STORE_NOT_FOUND when the
 * sandbox is not live. */
int store_sandbox_set_lease(struct store *st, int64_t id, int64_t timeout_s, struct err *e);

/* Every live sandbox placed on host_key becomes lost with `reason` (NULL:
 * "its host was lost"), and their running execs unknown, in one
 * transaction: a server that restarted, or a worker that died.  *ret_n (may
 * be NULL) says how many. */
int store_sandbox_lose_host(struct store *st, const char *host_key, const char *reason,
			    int64_t *ret_n, struct err *e);

/* Every live sandbox whose lease ended more than grace_ms (>= 0) ago becomes
 * expired (its keeper should have ended it: it was lost with its host or
 * never placed), and their running execs unknown.  *ret_n (may be NULL)
 * says how many.  A server calls it periodically. */
int store_sandbox_sweep(struct store *st, int64_t grace_ms, int64_t *ret_n, struct err *e);

/* Record an exec starting in a running sandbox: argv_json is a JSON array
 * of strings (at most STORE_SANDBOX_JSON_MAX bytes), cwd may be NULL.
 * STORE_INVALID for a malformed one; STORE_NOT_FOUND when the sandbox is
 * not running. */
int store_exec_begin(struct store *st, int64_t sandbox_id, const char *argv_json, const char *cwd,
		     int64_t *ret_exec_id, struct err *e);

/* How an exec ended (docs/run-result.md). */
struct store_exec_result {
	const char *status;	     /* the verdict: "ok", "timeout", ... (< 32 bytes) */
	int exit_code;		     /* < 0: none (killed by a signal) */
	int signal;		     /* <= 0: none */
	const char *limits_hit_json; /* a JSON array of strings (< 256 bytes); NULL: [] */
	bool timed_out;
	int64_t cpu_ms, wall_ms, peak_memory_kib, peak_pids, stdout_bytes, stderr_bytes;
	double gib_seconds; /* GiB-seconds of memory it is charged */
};

/*
 * Record an exec's end: running (or unknown) -> done with r, ended_ms =
 * now; in the same transaction its sandbox's execs += 1, cpu_ms +=
 * r->cpu_ms and gib_seconds += r->gib_seconds.  STORE_NOT_FOUND when the
 * exec is unknown or already done; STORE_INVALID for a malformed r (a
 * negative usage, a status missing or too long, limits not an array of
 * strings).
 */
int store_exec_end(struct store *st, int64_t exec_id, const struct store_exec_result *r,
		   struct err *e);

/* An exec as recorded; numbers are 0 (exit_code -1) and strings "" where
 * the column is NULL (not done yet). */
struct store_exec_row {
	int64_t exec_id;
	int64_t sandbox_id;
	char state[16];	 /* running|done|unknown */
	char *argv_json; /* malloc'd; store_exec_row_clear() */
	char cwd[STORE_SANDBOX_PATH_MAX];
	char status[32];
	int exit_code; /* -1: none */
	int signal;    /* 0: none */
	char limits_hit_json[256];
	bool timed_out;
	int64_t cpu_ms, wall_ms, peak_memory_kib, peak_pids, stdout_bytes, stderr_bytes;
	double gib_seconds;
	int64_t started_ms, ended_ms;
};
/* Free what a row owns; accepts NULL; the row may be reused. */
void store_exec_row_clear(struct store_exec_row *r);
/*
 * Execs of sandbox_id with id > after_id (paging; 0: from the first),
 * oldest first, at most cap (1..10000; *ret_n of them, each to be cleared
 * with store_exec_row_clear()).  An unknown sandbox has none.
 */
int store_exec_list(struct store *st, int64_t sandbox_id, int64_t after_id,
		    struct store_exec_row *rows, size_t cap, size_t *ret_n, struct err *e);

/* ---- what sandboxes use and cost (migration 7, sandbox_meter.c) ---- */

/* The id of course_id's sandbox made with Idempotency-Key `key`;
 * STORE_NOT_FOUND when there is none. */
int store_sandbox_find_key(struct store *st, int64_t course_id, const char *key, int64_t *ret_id,
			   struct err *e);
/* How many of token_id's sandboxes are live (creating or running). */
int store_token_live_sandboxes(struct store *st, int64_t token_id, int64_t *ret_n, struct err *e);

/*
 * What token_id's sandboxes used since since_ms (the start of a UTC day):
 * the CPU-seconds of their execs that ended since then, and the GiB-seconds
 * of memory they reserved since then (each sandbox's memory_mib / 1024
 * times the part of its life, started_ms to ended_ms or now, after
 * since_ms).  *ret_now_ms: the database's clock it was read at.
 */
struct store_usage {
	double cpu_seconds, reserved_gib_seconds;
	int64_t now_ms;
};
int store_token_usage_since(struct store *st, int64_t token_id, int64_t since_ms,
			    struct store_usage *ret, struct err *e);

/* A running sandbox with a max_cost_micros, as metered. */
struct store_sandbox_meter {
	int64_t sandbox_id;
	int memory_mib;
	int64_t cpu_ms, started_ms, now_ms, max_cost_micros;
};
/* The running sandboxes placed on host_key that carry a max_cost_micros,
 * at most cap (1..100000; *ret_n of them), oldest first. */
int store_sandbox_metered(struct store *st, const char *host_key, struct store_sandbox_meter *rows,
			  size_t cap, size_t *ret_n, struct err *e);

/*
 * The top-level "status" member of a JSON object, read from the first `len`
 * bytes of its text (the status is near the start of a result document)
 * without parsing the rest.  Returns 1 with `out` set (NUL-terminated, cut
 * to cap), 0 when the bytes end first or the member may be spelled with
 * escapes (parse the whole document instead), -1 when the object has no
 * such string member or the text is not a JSON object.  Never reads past len.
 */
int store_doc_status(const char *text, size_t len, char *out, size_t cap);

/* ---- sandbox templates ---- */

/*
 * A template is a sandbox's writable tree kept as a blob (a gzip'd tar the
 * keeper made) under a name of its course; each template of a name is that
 * name's next version (name@N), never reused, even after a removal.
 */

struct store_template {
	int64_t template_id;
	int64_t course_id;
	char name[STORE_TEMPLATE_NAME_MAX + 1];
	int version_no;
	char sha256[65];
	int64_t bytes;
	int64_t source_sandbox_id; /* 0: none */
	int64_t created_ms;
	int64_t deleted_ms; /* 0: not removed */
};

/* Record that sandbox `id` started from template name@version_no. */
int store_sandbox_set_template(struct store *st, int64_t id, const char *name, int version_no,
			       struct err *e);
/* Whether `name` is a template name (STORE_TEMPLATE_NAME_MAX). */
bool store_template_name_ok(const char *name);
/* Store `data` as the next version of course_id's template `name` (blob
 * and row in one transaction) into *ret.  STORE_INVALID for a bad name,
 * STORE_TOO_LARGE past STORE_BLOB_MAX. */
int store_template_add(struct store *st, int64_t course_id, const char *name, const void *data,
		       size_t len, int64_t source_sandbox_id, struct store_template *ret,
		       struct err *e);
/* The course's template name@version (0: the latest not removed) or by id
 * (name NULL).  STORE_NOT_FOUND when there is none, or it was removed. */
int store_template_get(struct store *st, int64_t course_id, const char *name, int version_no,
		       int64_t id, struct store_template *ret, struct err *e);
/* The course's templates not removed, newest first, at most `max`
 * (malloc'd array; *ret_n may be 0). */
int store_template_list(struct store *st, int64_t course_id, size_t max,
			struct store_template **ret, size_t *ret_n, struct err *e);
/* Remove template `id` of the course (its blob stays: sandboxes may have
 * started from it), in one statement: *ret (NULL: not wanted) is the
 * template as it was.  STORE_NOT_FOUND when it is not there. */
int store_template_remove(struct store *st, int64_t course_id, int64_t id,
			  struct store_template *ret, struct err *e);

#endif
