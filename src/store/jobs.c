/* The job store's job lifecycle: submit, claim with a lease, heartbeat, fenced completion, outbox.
 */
#include "store_int.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Invariants this file keeps, on both backends:
 * - A job is `running` only with a lease token and an expiry; only the
 *   holder of that token may heartbeat, fail or complete it, and only
 *   before the expiry (database clock).  Every such write is one UPDATE
 *   whose WHERE clause is the fence, so the check and the write are atomic.
 * - A completion writes the job's state, its result, its attempt row and
 *   its outbox row in one transaction: all of them or none.
 * - results.job_id is UNIQUE: even a bug above this layer cannot record a
 *   job twice.
 */

#define BACKOFF_CAP_MS (10 * 60 * 1000)

static const char *const state_names[STORE_JOB_STATES] = {"queued", "running", "done", "error"};

const char *store_job_state_name(enum store_job_state s)
{
	return (unsigned)s < STORE_JOB_STATES ? state_names[s] : NULL;
}

int store_job_state_parse(const char *name, enum store_job_state *ret, struct err *e)
{
	for (int i = 0; i < STORE_JOB_STATES; i++)
		if (name && strcmp(name, state_names[i]) == 0) {
			*ret = (enum store_job_state)i;
			return 0;
		}
	return store_fail(e, STORE_ERROR, "job state '%.32s': not one this proctor knows",
			  name ? name : "(null)");
}

static const char *const outcome_names[STORE_OUTCOMES] = {
    [STORE_OUTCOME_RUNNING] = "running",   [STORE_OUTCOME_DONE] = "done",
    [STORE_OUTCOME_FAILED] = "failed",	   [STORE_OUTCOME_LEASE_EXPIRED] = "lease_expired",
    [STORE_OUTCOME_RELEASED] = "released",
};

const char *store_outcome_name(enum store_outcome o)
{
	return (unsigned)o < STORE_OUTCOMES ? outcome_names[o] : NULL;
}

static bool valid_lease_token(const char *t)
{
	return t && strnlen(t, STORE_LEASE_TOKEN_LEN + 1) == STORE_LEASE_TOKEN_LEN;
}

/* ---- submit ---- */

static const char sql_submission_by_key[] =
    "SELECT s.id, j.id FROM submissions s JOIN jobs j ON j.submission_id = s.id "
    "WHERE s.course_id = $1 AND s.idempotency_key = $2 ORDER BY j.id LIMIT 1";
static const char sql_version_course[] =
    "SELECT a.course_id FROM assignment_versions v JOIN assignments a ON a.id = v.assignment_id "
    "WHERE v.id = $1";
/* Inserts nothing when the version is not the course's or the key is taken. */
static const char sql_submission_add[] =
    "INSERT INTO submissions (course_id, version_id, student, idempotency_key, callback_url, "
    "blob_sha256, callback_view, received_ms) "
    "SELECT CAST($1 AS BIGINT), CAST($2 AS BIGINT), CAST($3 AS TEXT), CAST($4 AS TEXT), "
    "CAST($5 AS TEXT), CAST($6 AS TEXT), CAST($7 AS TEXT), {now} WHERE EXISTS (SELECT 1 FROM assignment_versions v "
    "JOIN assignments a ON a.id = v.assignment_id WHERE v.id = $2 AND a.course_id = $1) "
    "ON CONFLICT (course_id, idempotency_key) DO NOTHING RETURNING id, received_ms";
static const char sql_job_add[] =
    "INSERT INTO jobs (submission_id, version_id, course_id, kind, state, max_attempts, "
    "not_before_ms, received_ms, queued_ms) "
    "VALUES ($1, $2, $3, $4, 'queued', $5, {now}, $6, {now}) RETURNING id";

struct submit_arg {
	const struct store_submission_in *in;
	int64_t submission, job;
	bool existing;
};

static int find_by_key(struct store *st, struct submit_arg *a, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(a->in->course_id), sv_text(a->in->idempotency_key)};

	if (store_q(st, sql_submission_by_key, p, 2, &rows, e) < 0)
		return err_wrap(e, "idempotency key");
	int found = rows->nrows > 0;
	if (found) {
		a->submission = store_col_int(rows, 0, 0);
		a->job = store_col_int(rows, 0, 1);
		a->existing = true;
	}
	store_rows_free(rows);
	return found;
}

static int version_in_course(struct store *st, int64_t version_id, int64_t course_id, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(version_id)};

	if (store_q(st, sql_version_course, p, 1, &rows, e) < 0)
		return err_wrap(e, "assignment version");
	bool ok = rows->nrows == 1 && store_col_int(rows, 0, 0) == course_id;
	store_rows_free(rows);
	if (!ok)
		return store_fail(e, STORE_NOT_FOUND, "no assignment version %lld in course %lld",
				  (long long)version_id, (long long)course_id);
	return 0;
}

/* One student's submissions to one assignment wait here for each other
 * while one is checked and written (the policy's limits are a student's);
 * other students' do not, so that a burst commits in parallel.  SQLite's
 * write lock already serializes every submission. */
static int admit_tx(struct store *st, struct submit_arg *a, struct err *e)
{
	const char *lock = st->ops->dialect->student_lock;
	struct store_val p[] = {sv_int(a->in->version_id), sv_text(a->in->student)};
	int rc;

	if (lock[0] && store_q(st, lock, p, 2, NULL, e) < 0)
		return err_wrap(e, "lock the student's submissions");
	/* After the lock: a retry that waited for its first try sees it. */
	if (a->in->idempotency_key && (rc = find_by_key(st, a, e)) != 0)
		return rc < 0 ? rc : 1; /* a replay: answered, not checked */
	rc = a->in->admit(st, a->in->admit_ctx, e);
	return rc > 0 ? STORE_REFUSED : rc < 0 ? rc : 0;
}

static int submit_tx(struct store *st, void *arg, struct err *e)
{
	struct submit_arg *a = arg;
	const struct store_submission_in *in = a->in;
	struct store_rows *rows = NULL;
	char sha[65];
	int rc;

	a->existing = false;
	if (in->admit && (rc = admit_tx(st, a, e)) != 0)
		return rc < 0 ? rc : 0;
	if ((rc = store_blob_put_tx(st, in->data, in->len, sha, e)) < 0)
		return rc;
	struct store_val ps[] = {sv_int(in->course_id),	    sv_int(in->version_id),
				 sv_text(in->student),	    sv_text(in->idempotency_key),
				 sv_text(in->callback_url), sv_text(sha),
				 sv_text(in->callback_url ? (in->callback_staff ? "staff" : "student")
							  : NULL)};
	if (store_q(st, sql_submission_add, ps, 7, &rows, e) < 0)
		return err_wrap(e, "add submission");
	if (rows->nrows == 0) {
		/* The key was used (perhaps by a transaction that committed
		 * while PostgreSQL made us wait): answer with its ids.  Or the
		 * version is not the course's. */
		store_rows_free(rows);
		if (in->idempotency_key && (rc = find_by_key(st, a, e)) != 0)
			return rc < 0 ? rc : 0;
		if ((rc = version_in_course(st, in->version_id, in->course_id, e)) < 0)
			return rc;
		return err_set(e, 0, "submission not inserted");
	}
	a->submission = store_col_int(rows, 0, 0);
	int64_t received = store_col_int(rows, 0, 1);
	rows = store_rows_free(rows);
	int max_attempts = in->max_attempts > 0 ? in->max_attempts : STORE_DEFAULT_ATTEMPTS;
	struct store_val pj[] = {sv_int(a->submission), sv_int(in->version_id),
				 sv_int(in->course_id), sv_text("grade"),
				 sv_int(max_attempts),	sv_int(received)};
	if (store_q(st, sql_job_add, pj, 6, &rows, e) < 0)
		return err_wrap(e, "add job");
	a->job = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return 0;
}

int store_submit(struct store *st, const struct store_submission_in *in, int64_t *ret_submission,
		 int64_t *ret_job, bool *ret_existing, struct err *e)
{
	struct submit_arg a = {.in = in};
	int rc;

	const size_t label = STORE_LABEL_CAP, url = STORE_TEXT_MAX;
	if ((rc = store_check_label("student", in->student, label, false, e)) < 0 ||
	    (rc = store_check_label("idempotency key", in->idempotency_key, label, false, e)) < 0 ||
	    (rc = store_check_label("callback URL", in->callback_url, url, false, e)) < 0)
		return rc;
	if (in->max_attempts > 100)
		return store_fail(e, STORE_INVALID, "max_attempts %d above 100", in->max_attempts);
	rc = store_tx_run(st, STORE_TX_WRITE, submit_tx, &a, e);
	if (rc < 0)
		return rc;
	*ret_submission = a.submission;
	*ret_job = a.job;
	if (ret_existing)
		*ret_existing = a.existing;
	return 0;
}

int store_job_add_tx(struct store *st, int64_t submission, int64_t version, int64_t course,
		     int64_t received_ms, int64_t *ret_job, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val pj[] = {sv_int(submission),
				 sv_int(version),
				 sv_int(course),
				 sv_text("regrade"),
				 sv_int(STORE_DEFAULT_ATTEMPTS),
				 sv_int(received_ms)};

	if (store_q(st, sql_job_add, pj, 6, &rows, e) < 0)
		return err_wrap(e, "add job");
	*ret_job = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return 0;
}

/* ---- claim ---- */

/*
 * The sweep's and the claim's `state IN ('queued', 'running')` adds nothing
 * to what the rest of their WHERE says; it is there for SQLite, which uses
 * a partial index only when the query's WHERE has the index's condition
 * as one of its AND-ed terms (sqlite.org/partialindex.html).  With it both
 * read the index of unfinished jobs (jobs_runnable, jobs_course_unfinished);
 * without it, EXPLAIN QUERY PLAN says `SCAN jobs`: every job ever run, on
 * every idle claim.  Keep it.
 */

/* A worker that died on a job's last attempt: the job ends as our error. */
static const char sql_expire_exhausted[] =
    "UPDATE jobs SET state = 'error', not_gradable = 1, finished_ms = {now}, "
    "error = 'lease expired on the last attempt: the worker was lost', "
    "lease_token = NULL, lease_expires_ms = NULL "
    "WHERE state IN ('queued', 'running') AND state = 'running' "
    "AND lease_expires_ms < {now} AND attempt >= max_attempts "
    "RETURNING id, attempt";
static const char sql_attempt_lost[] =
    "UPDATE attempts SET outcome = 'lease_expired', ended_ms = {now} "
    "WHERE job_id = $1 AND attempt <= $2 AND outcome = 'running'";
static const char sql_claim[] =
    "UPDATE jobs SET state = 'running', attempt = attempt + 1, lease_token = $1, lease_ms = $2, "
    "lease_expires_ms = {now} + $2, worker = $3, host = $4, started_ms = {now}, "
    "sandbox_ready_ms = NULL "
    "WHERE id = (SELECT id FROM jobs WHERE state IN ('queued', 'running') "
    " AND ((state = 'queued' AND not_before_ms <= {now}) "
    "  OR (state = 'running' AND lease_expires_ms < {now} AND attempt < max_attempts)) "
    " ORDER BY id LIMIT 1 {skip_locked}) "
    "RETURNING id, submission_id, version_id, attempt, max_attempts, lease_expires_ms, "
    "(SELECT blob_sha256 FROM submissions s WHERE s.id = jobs.submission_id), "
    "(SELECT archive_sha256 FROM assignment_versions v WHERE v.id = jobs.version_id), "
    "(SELECT image_pin FROM assignment_versions v WHERE v.id = jobs.version_id)";
static const char sql_attempt_add[] =
    "INSERT INTO attempts (job_id, attempt, worker, host, started_ms, outcome) "
    "VALUES ($1, $2, $3, $4, {now}, 'running')";

struct claim_arg {
	const char *worker, *host;
	int64_t lease_ms;
	struct store_claim c;
};

/*
 * A running job whose lease expired on its last attempt can never be
 * claimed again: end it as our error.  Done when a claim finds nothing to
 * do (an idle worker sweeps) and by store_job_sweep(), not on every claim,
 * to keep a busy claim at two statements.
 */
static int sweep_tx(struct store *st, void *arg, struct err *e)
{
	struct store_rows *rows = NULL;
	int64_t *n = arg;

	if (store_q(st, sql_expire_exhausted, NULL, 0, &rows, e) < 0)
		return err_wrap(e, "expire exhausted jobs");
	for (size_t r = 0; r < rows->nrows; r++) {
		struct store_val p[] = {sv_int(store_col_int(rows, r, 0)),
					sv_int(store_col_int(rows, r, 1))};
		if (store_q(st, sql_attempt_lost, p, 2, NULL, e) < 0) {
			store_rows_free(rows);
			return err_wrap(e, "expire exhausted jobs");
		}
	}
	if (n)
		*n = (int64_t)rows->nrows;
	store_rows_free(rows);
	return 0;
}

int store_job_sweep(struct store *st, int64_t *ret_ended, struct err *e)
{
	int64_t n = 0;
	int rc = store_tx_run(st, STORE_TX_WRITE, sweep_tx, &n, e);

	if (rc < 0)
		return rc;
	if (ret_ended)
		*ret_ended = n;
	return 0;
}

static int claim_tx(struct store *st, void *arg, struct err *e)
{
	struct claim_arg *a = arg;
	struct store_rows *rows = NULL;

	struct store_val p[] = {sv_text(a->c.lease_token), sv_int(a->lease_ms), sv_text(a->worker),
				sv_text(a->host)};
	if (store_q(st, sql_claim, p, 4, &rows, e) < 0)
		return err_wrap(e, "claim");
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return sweep_tx(st, NULL, e);
	}
	a->c.job_id = store_col_int(rows, 0, 0);
	a->c.submission_id = store_col_int(rows, 0, 1);
	a->c.version_id = store_col_int(rows, 0, 2);
	a->c.attempt = (int)store_col_int(rows, 0, 3);
	a->c.max_attempts = (int)store_col_int(rows, 0, 4);
	a->c.lease_expires_ms = store_col_int(rows, 0, 5);
	store_col_copy(rows, 0, 6, a->c.submission_sha256, sizeof(a->c.submission_sha256));
	store_col_copy(rows, 0, 7, a->c.archive_sha256, sizeof(a->c.archive_sha256));
	store_col_copy(rows, 0, 8, a->c.image_pin, sizeof(a->c.image_pin));
	rows = store_rows_free(rows);

	/* The previous attempt, if its worker vanished, is closed as lost. */
	struct store_val pl[] = {sv_int(a->c.job_id), sv_int(a->c.attempt - 1)};
	if (a->c.attempt > 1 && store_q(st, sql_attempt_lost, pl, 2, NULL, e) < 0)
		return err_wrap(e, "claim: previous attempt");
	struct store_val pa[] = {sv_int(a->c.job_id), sv_int(a->c.attempt), sv_text(a->worker),
				 sv_text(a->host)};
	if (store_q(st, sql_attempt_add, pa, 4, NULL, e) < 0)
		return err_wrap(e, "claim: attempt row");
	return 1;
}

int store_job_claim(struct store *st, const char *worker, const char *host, int64_t lease_ms,
		    struct store_claim *ret, struct err *e)
{
	struct claim_arg a = {.worker = worker, .host = host, .lease_ms = lease_ms};
	int rc;

	if ((rc = store_check_label("worker", worker, STORE_LABEL_CAP, true, e)) < 0 ||
	    (rc = store_check_label("host", host, STORE_LABEL_CAP, true, e)) < 0)
		return rc;
	if (lease_ms < 1 || lease_ms > 24LL * 3600 * 1000)
		return store_fail(e, STORE_INVALID, "lease of %lld ms", (long long)lease_ms);
	if (store_random_hex(a.c.lease_token, STORE_LEASE_TOKEN_LEN / 2, e) < 0)
		return err_wrap(e, "lease token");
	/* SAFETY: a claim lost in a database crash leaves the job as it was;
	 * the worker holding the lost token is fenced at its first heartbeat
	 * or completion, and the job is claimed again.  So the claim does not
	 * wait for its WAL flush (PostgreSQL); completions always do. */
	rc = store_tx_run(st, STORE_TX_WRITE_LOSSY, claim_tx, &a, e);
	if (rc == 1)
		*ret = a.c;
	return rc;
}

/* ---- heartbeat, sandbox ready ---- */

static const char sql_heartbeat[] =
    "UPDATE jobs SET lease_expires_ms = {now} + lease_ms "
    "WHERE id = $1 AND lease_token = $2 AND state = 'running' AND lease_expires_ms >= {now} "
    "RETURNING id";
static const char sql_sandbox_ready[] =
    "UPDATE jobs SET lease_expires_ms = {now} + lease_ms, sandbox_ready_ms = {now} "
    "WHERE id = $1 AND lease_token = $2 AND state = 'running' AND lease_expires_ms >= {now} "
    "RETURNING id";

static int fenced_update(struct store *st, const char *sql, int64_t job_id, const char *token,
			 const char *what, struct err *e)
{
	struct store_rows *rows = NULL;

	if (!valid_lease_token(token))
		return store_fail(e, STORE_FENCED, "%s: job %lld: malformed lease token", what,
				  (long long)job_id);
	struct store_val p[] = {sv_int(job_id), sv_text(token)};
	if (store_q(st, sql, p, 2, &rows, e) < 0)
		return err_wrap(e, "%s: job %lld", what, (long long)job_id);
	size_t n = rows->nrows;
	store_rows_free(rows);
	if (n == 0)
		return store_fail(e, STORE_FENCED,
				  "%s: job %lld: the lease expired or was taken over", what,
				  (long long)job_id);
	return 0;
}

int store_job_heartbeat(struct store *st, int64_t job_id, const char *lease_token, struct err *e)
{
	return fenced_update(st, sql_heartbeat, job_id, lease_token, "heartbeat", e);
}

int store_job_sandbox_ready(struct store *st, int64_t job_id, const char *lease_token,
			    struct err *e)
{
	return fenced_update(st, sql_sandbox_ready, job_id, lease_token, "sandbox ready", e);
}

/* ---- complete ---- */

static const char sql_complete[] =
    "UPDATE jobs SET state = 'done', finished_ms = {now}, lease_token = NULL, "
    "lease_expires_ms = NULL, error = NULL "
    "WHERE id = $1 AND attempt = $2 AND lease_token = $3 AND state = 'running' "
    "AND lease_expires_ms >= {now} RETURNING submission_id, version_id, "
    "(SELECT callback_url FROM submissions s WHERE s.id = jobs.submission_id), "
    "(SELECT callback_view FROM submissions s WHERE s.id = jobs.submission_id)";
static const char sql_result_add[] =
    "INSERT INTO results (job_id, submission_id, version_id, attempt, doc, score, max_score, "
    "cpu_seconds, gib_seconds, created_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, {now}) "
    "RETURNING id";
static const char sql_attempt_end[] =
    "UPDATE attempts SET outcome = $3, ended_ms = {now}, reason = $4 "
    "WHERE job_id = $1 AND attempt = $2";
static const char sql_outbox_add[] =
    "INSERT INTO outbox (job_id, result_id, submission_id, url, payload, delivery_id, state, "
    "next_try_ms, created_ms) VALUES ($1, $2, $3, $4, $5, $6, 'pending', {now}, {now})";

struct complete_arg {
	int64_t job;
	int attempt;
	const char *token;
	const struct store_result_in *res;
	json_t *doc;
	json_t *student_doc; /* NULL: none given */
	int64_t result;
};

static json_t *json_score(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static int add_outbox(struct store *st, struct complete_arg *a, int64_t submission, const char *url,
		      bool staff, struct err *e)
{
	char delivery[33];

	if (!url[0])
		return 0;
	if (store_random_hex(delivery, 16, e) < 0)
		return err_wrap(e, "delivery id");
	json_t *payload =
	    json_pack("{s:s, s:I, s:I, s:I, s:o, s:o, s:O}", "delivery_id", delivery,
		      "submission_id", (json_int_t)submission, "job_id", (json_int_t)a->job,
		      "result_id", (json_int_t)a->result, "score", json_score(a->res->score),
		      "max_score", json_score(a->res->max_score), "result",
		      staff ? a->doc : a->student_doc ? a->student_doc : json_null());
	char *text = payload ? json_dumps(payload, JSON_COMPACT) : NULL;
	json_decref(payload);
	if (!text)
		return err_set(e, ENOMEM, "callback payload");
	struct store_val p[] = {sv_int(a->job), sv_int(a->result), sv_int(submission),
				sv_text(url),	sv_text(text),	   sv_text(delivery)};
	int rc = store_q(st, sql_outbox_add, p, 6, NULL, e);
	free(text);
	if (rc < 0)
		return err_wrap(e, "outbox");
	return 0;
}

static int complete_tx(struct store *st, void *arg, struct err *e)
{
	struct complete_arg *a = arg;
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(a->job), sv_int(a->attempt), sv_text(a->token)};

	if (store_q(st, sql_complete, p, 3, &rows, e) < 0)
		return err_wrap(e, "complete job %lld", (long long)a->job);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(
		    e, STORE_FENCED,
		    "complete job %lld attempt %d: the lease expired or was taken over",
		    (long long)a->job, a->attempt);
	}
	int64_t submission = store_col_int(rows, 0, 0), version = store_col_int(rows, 0, 1);
	char url[STORE_TEXT_MAX], view[16];
	store_col_copy(rows, 0, 2, url, sizeof(url));
	store_col_copy(rows, 0, 3, view, sizeof(view));
	rows = store_rows_free(rows);
	struct store_val pr[] = {sv_int(a->job),
				 sv_int(submission),
				 sv_int(version),
				 sv_int(a->attempt),
				 sv_text(a->res->doc_json),
				 sv_real(isfinite(a->res->score) ? a->res->score : NAN),
				 sv_real(isfinite(a->res->max_score) ? a->res->max_score : NAN),
				 sv_real(a->res->cpu_seconds),
				 sv_real(a->res->gib_seconds)};
	if (store_q(st, sql_result_add, pr, 9, &rows, e) < 0)
		return err_wrap(e, "result of job %lld", (long long)a->job);
	a->result = store_col_int(rows, 0, 0);
	rows = store_rows_free(rows);
	struct store_val pa[] = {sv_int(a->job), sv_int(a->attempt),
				 sv_text(outcome_names[STORE_OUTCOME_DONE]), sv_null()};
	if (store_q(st, sql_attempt_end, pa, 4, NULL, e) < 0)
		return err_wrap(e, "attempt of job %lld", (long long)a->job);
	return add_outbox(st, a, submission, url, strcmp(view, "staff") == 0, e);
}

int store_job_complete(struct store *st, int64_t job_id, int attempt, const char *lease_token,
		       const struct store_result_in *res, int64_t *ret_result, struct err *e)
{
	struct complete_arg a = {
	    .job = job_id, .attempt = attempt, .token = lease_token, .res = res};
	json_error_t jerr;

	if (!valid_lease_token(lease_token))
		return store_fail(e, STORE_FENCED, "complete job %lld: malformed lease token",
				  (long long)job_id);
	if (!res->doc_json)
		return store_fail(e, STORE_INVALID, "result document missing");
	size_t len = strnlen(res->doc_json, STORE_DOC_MAX + 1);
	if (len > STORE_DOC_MAX)
		return store_fail(e, STORE_TOO_LARGE, "result document above %u bytes",
				  STORE_DOC_MAX);
	if (!isfinite(res->cpu_seconds) || !isfinite(res->gib_seconds) || res->cpu_seconds < 0 ||
	    res->gib_seconds < 0)
		return store_fail(e, STORE_INVALID, "reserved CPU or memory seconds not a number");
	a.doc = json_loadb(res->doc_json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!a.doc || !json_is_object(a.doc)) {
		json_decref(a.doc);
		return store_fail(e, STORE_INVALID, "result document: not a JSON object");
	}
	if (res->student_json) {
		a.student_doc = json_loads(res->student_json, JSON_REJECT_DUPLICATES, &jerr);
		if (!json_is_object(a.student_doc)) {
			json_decref(a.student_doc);
			json_decref(a.doc);
			return store_fail(e, STORE_INVALID, "student view: not a JSON object");
		}
	}
	int rc = store_tx_run(st, STORE_TX_WRITE, complete_tx, &a, e);
	json_decref(a.doc);
	json_decref(a.student_doc);
	if (rc < 0)
		return rc;
	if (ret_result)
		*ret_result = a.result;
	return 0;
}

/* ---- our own failure ---- */

static const char sql_fail_ours[] =
    "UPDATE jobs SET "
    "state = CASE WHEN attempt >= max_attempts THEN 'error' ELSE 'queued' END, "
    "not_gradable = CASE WHEN attempt >= max_attempts THEN 1 ELSE 0 END, "
    "finished_ms = CASE WHEN attempt >= max_attempts THEN {now} ELSE NULL END, "
    "not_before_ms = {now} + $4, queued_ms = {now}, error = $5, "
    "lease_token = NULL, lease_expires_ms = NULL "
    "WHERE id = $1 AND attempt = $2 AND lease_token = $3 AND state = 'running' "
    "AND lease_expires_ms >= {now} RETURNING state";

struct fail_arg {
	int64_t job;
	int attempt;
	const char *token, *reason;
	int64_t backoff;
	bool final;
};

static int fail_tx(struct store *st, void *arg, struct err *e)
{
	struct fail_arg *a = arg;
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(a->job), sv_int(a->attempt), sv_text(a->token),
				sv_int(a->backoff), sv_text(a->reason)};

	if (store_q(st, sql_fail_ours, p, 5, &rows, e) < 0)
		return err_wrap(e, "fail job %lld", (long long)a->job);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_FENCED,
				  "fail job %lld attempt %d: the lease expired or was taken over",
				  (long long)a->job, a->attempt);
	}
	a->final = strcmp(store_col_text(rows, 0, 0), "error") == 0;
	store_rows_free(rows);
	struct store_val pa[] = {sv_int(a->job), sv_int(a->attempt),
				 sv_text(outcome_names[STORE_OUTCOME_FAILED]), sv_text(a->reason)};
	if (store_q(st, sql_attempt_end, pa, 4, NULL, e) < 0)
		return err_wrap(e, "attempt of job %lld", (long long)a->job);
	return 0;
}

int store_job_fail_ours(struct store *st, int64_t job_id, int attempt, const char *lease_token,
			const char *reason, int64_t backoff_ms, bool *ret_final, struct err *e)
{
	struct fail_arg a = {.job = job_id,
			     .attempt = attempt,
			     .token = lease_token,
			     .reason = reason ? reason : "internal error"};
	int rc;

	if (!valid_lease_token(lease_token))
		return store_fail(e, STORE_FENCED, "fail job %lld: malformed lease token",
				  (long long)job_id);
	if ((rc = store_check_label("reason", a.reason, STORE_TEXT_MAX, false, e)) < 0)
		return rc;
	if (attempt < 1 || backoff_ms < 0)
		return store_fail(e, STORE_INVALID, "fail job: attempt %d, backoff %lld", attempt,
				  (long long)backoff_ms);
	/* backoff * 2^(attempt-1), capped */
	a.backoff = backoff_ms;
	for (int i = 1; i < attempt && a.backoff < BACKOFF_CAP_MS; i++)
		a.backoff *= 2;
	if (a.backoff > BACKOFF_CAP_MS)
		a.backoff = BACKOFF_CAP_MS;
	rc = store_tx_run(st, STORE_TX_WRITE, fail_tx, &a, e);
	if (rc < 0)
		return rc;
	if (ret_final)
		*ret_final = a.final;
	return 0;
}

/* ---- release ---- */

static const char sql_release[] =
    "UPDATE jobs SET state = 'queued', max_attempts = max_attempts + 1, "
    "not_before_ms = {now}, queued_ms = {now}, lease_token = NULL, lease_expires_ms = NULL "
    "WHERE id = $1 AND attempt = $2 AND lease_token = $3 AND state = 'running' "
    "AND lease_expires_ms >= {now} RETURNING id";

struct release_arg {
	int64_t job;
	int attempt;
	const char *token;
};

static int release_tx(struct store *st, void *arg, struct err *e)
{
	struct release_arg *a = arg;
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(a->job), sv_int(a->attempt), sv_text(a->token)};

	if (store_q(st, sql_release, p, 3, &rows, e) < 0)
		return err_wrap(e, "release job %lld", (long long)a->job);
	size_t n = rows->nrows;
	store_rows_free(rows);
	if (n == 0)
		return store_fail(
		    e, STORE_FENCED,
		    "release job %lld attempt %d: the lease expired or was taken over",
		    (long long)a->job, a->attempt);
	struct store_val pa[] = {sv_int(a->job), sv_int(a->attempt),
				 sv_text(outcome_names[STORE_OUTCOME_RELEASED]), sv_null()};
	if (store_q(st, sql_attempt_end, pa, 4, NULL, e) < 0)
		return err_wrap(e, "attempt of job %lld", (long long)a->job);
	return 0;
}

int store_job_release(struct store *st, int64_t job_id, int attempt, const char *lease_token,
		      struct err *e)
{
	struct release_arg a = {.job = job_id, .attempt = attempt, .token = lease_token};

	if (!valid_lease_token(lease_token))
		return store_fail(e, STORE_FENCED, "release job %lld: malformed lease token",
				  (long long)job_id);
	return store_tx_run(st, STORE_TX_WRITE, release_tx, &a, e);
}

/* ---- lookups ---- */

static const char sql_job_latest[] =
    "SELECT " STORE_JOB_COLUMNS " FROM jobs WHERE submission_id = $1 ORDER BY id DESC LIMIT 1";

int store_job_fill(const struct store_rows *rows, struct store_job *j, struct err *e)
{
	memset(j, 0, sizeof(*j));
	j->job_id = store_col_int(rows, 0, 0);
	j->submission_id = store_col_int(rows, 0, 1);
	j->version_id = store_col_int(rows, 0, 2);
	if (store_job_state_parse(store_col_text(rows, 0, 3), &j->state, e) < 0)
		return err_wrap(e, "job %lld", (long long)j->job_id);
	j->attempt = (int)store_col_int(rows, 0, 4);
	j->max_attempts = (int)store_col_int(rows, 0, 5);
	j->not_gradable = store_col_int(rows, 0, 6) != 0;
	store_col_copy(rows, 0, 7, j->error, sizeof(j->error));
	store_col_copy(rows, 0, 8, j->worker, sizeof(j->worker));
	store_col_copy(rows, 0, 9, j->host, sizeof(j->host));
	j->received_ms = store_col_int(rows, 0, 10);
	j->queued_ms = store_col_int(rows, 0, 11);
	j->started_ms = store_col_int(rows, 0, 12);
	j->sandbox_ready_ms = store_col_int(rows, 0, 13);
	j->finished_ms = store_col_int(rows, 0, 14);
	j->delivered_ms = store_col_int(rows, 0, 15);
	j->not_before_ms = store_col_int(rows, 0, 16);
	j->lease_expires_ms = store_col_int(rows, 0, 17);
	return 0;
}

static const char sql_submission_get[] =
    "SELECT id, course_id, version_id, student, idempotency_key, callback_url, blob_sha256, "
    "received_ms FROM submissions WHERE id = $1";
static const char sql_result_latest[] =
    "SELECT id, job_id, version_id, score, max_score, cpu_seconds, gib_seconds, created_ms, doc "
    "FROM results WHERE submission_id = $1 ORDER BY id DESC LIMIT 1";

struct view_arg {
	int64_t id;
	struct store_submission_view *v;
};

static int view_tx(struct store *st, void *arg, struct err *e)
{
	struct view_arg *a = arg;
	struct store_submission_view *v = a->v;
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(a->id)};

	if (store_q(st, sql_submission_get, p, 1, &rows, e) < 0)
		return err_wrap(e, "submission %lld", (long long)a->id);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no submission %lld", (long long)a->id);
	}
	v->submission_id = store_col_int(rows, 0, 0);
	v->course_id = store_col_int(rows, 0, 1);
	v->version_id = store_col_int(rows, 0, 2);
	store_col_copy(rows, 0, 3, v->student, sizeof(v->student));
	store_col_copy(rows, 0, 4, v->idempotency_key, sizeof(v->idempotency_key));
	store_col_copy(rows, 0, 5, v->callback_url, sizeof(v->callback_url));
	store_col_copy(rows, 0, 6, v->sha256, sizeof(v->sha256));
	v->received_ms = store_col_int(rows, 0, 7);
	rows = store_rows_free(rows);

	if (store_q(st, sql_job_latest, p, 1, &rows, e) < 0)
		return err_wrap(e, "jobs of submission %lld", (long long)a->id);
	if (rows->nrows && store_job_fill(rows, &v->job, e) < 0) {
		store_rows_free(rows);
		return -1;
	}
	rows = store_rows_free(rows);

	if (store_q(st, sql_result_latest, p, 1, &rows, e) < 0)
		return err_wrap(e, "results of submission %lld", (long long)a->id);
	if (rows->nrows) {
		struct store_result *r = &v->result;
		r->result_id = store_col_int(rows, 0, 0);
		r->job_id = store_col_int(rows, 0, 1);
		r->version_id = store_col_int(rows, 0, 2);
		r->score = store_col_real(rows, 0, 3);
		r->max_score = store_col_real(rows, 0, 4);
		r->cpu_seconds = store_col_real(rows, 0, 5);
		r->gib_seconds = store_col_real(rows, 0, 6);
		r->created_ms = store_col_int(rows, 0, 7);
		r->doc_json = strdup(store_col_text(rows, 0, 8));
		if (!r->doc_json) {
			store_rows_free(rows);
			return err_set(e, ENOMEM, "result document");
		}
		v->has_result = true;
	}
	store_rows_free(rows);
	return 0;
}

int store_submission_get(struct store *st, int64_t submission_id, struct store_submission_view *ret,
			 struct err *e)
{
	struct store_submission_view v = {0};
	struct view_arg a = {.id = submission_id, .v = &v};
	int rc = store_tx_run(st, STORE_TX_READ, view_tx, &a, e);

	if (rc < 0) {
		store_submission_view_clear(&v);
		return rc;
	}
	*ret = v;
	return 0;
}

void store_submission_view_clear(struct store_submission_view *v)
{
	if (!v)
		return;
	free(v->result.doc_json);
	v->result.doc_json = NULL;
	v->has_result = false;
}

static const char sql_submission_list[] =
    "SELECT id FROM submissions WHERE course_id = $1 AND id > $2 "
    "AND (CAST($3 AS TEXT) IS NULL OR student = $3) ORDER BY id LIMIT $4";

int store_submission_list(struct store *st, int64_t course_id, const char *student,
			  int64_t after_id, int64_t *ret_ids, size_t cap, size_t *ret_n,
			  struct err *e)
{
	struct store_rows *rows = NULL;
	int rc = store_check_label("student", student, STORE_LABEL_CAP, false, e);

	if (rc < 0)
		return rc;
	if (cap == 0 || cap > 100000)
		return store_fail(e, STORE_INVALID, "list: cap %zu", cap);
	struct store_val p[] = {sv_int(course_id), sv_int(after_id), sv_text(student),
				sv_int((int64_t)cap)};
	if (store_q(st, sql_submission_list, p, 4, &rows, e) < 0)
		return err_wrap(e, "submissions of course %lld", (long long)course_id);
	size_t n = 0;
	for (; n < rows->nrows && n < cap; n++)
		ret_ids[n] = store_col_int(rows, n, 0);
	store_rows_free(rows);
	*ret_n = n;
	return 0;
}

static const char sql_result_list[] =
    "SELECT id, job_id, version_id, score, max_score, cpu_seconds, gib_seconds, created_ms "
    "FROM results WHERE submission_id = $1 ORDER BY id";

int store_result_list(struct store *st, int64_t submission_id, struct store_result *ret, size_t cap,
		      size_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(submission_id)};

	if (store_q(st, sql_result_list, p, 1, &rows, e) < 0)
		return err_wrap(e, "results of submission %lld", (long long)submission_id);
	size_t n = 0;
	for (; n < rows->nrows && n < cap; n++) {
		struct store_result *r = &ret[n];
		memset(r, 0, sizeof(*r));
		r->result_id = store_col_int(rows, n, 0);
		r->job_id = store_col_int(rows, n, 1);
		r->version_id = store_col_int(rows, n, 2);
		r->score = store_col_real(rows, n, 3);
		r->max_score = store_col_real(rows, n, 4);
		r->cpu_seconds = store_col_real(rows, n, 5);
		r->gib_seconds = store_col_real(rows, n, 6);
		r->created_ms = store_col_int(rows, n, 7);
	}
	store_rows_free(rows);
	*ret_n = n;
	return 0;
}

/* Gradings (results) and sandbox execs (migration 6) that ended since $2. */
static const char sql_cpu_since[] =
    "SELECT COALESCE((SELECT SUM(r.cpu_seconds) FROM results r "
    "JOIN submissions s ON s.id = r.submission_id WHERE s.course_id = $1 AND r.created_ms >= $2), "
    "0) + COALESCE((SELECT CAST(SUM(x.cpu_ms) AS DOUBLE PRECISION) / 1000 FROM sandbox_execs x "
    "JOIN sandboxes b ON b.id = x.sandbox_id WHERE b.course_id = $1 AND x.ended_ms >= $2), 0)";

int store_course_cpu_since(struct store *st, int64_t course_id, int64_t since_ms,
			   double *ret_cpu_seconds, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(course_id), sv_int(since_ms)};

	if (store_q(st, sql_cpu_since, p, 2, &rows, e) < 0)
		return err_wrap(e, "CPU-seconds of course %lld", (long long)course_id);
	double v = store_col_real(rows, 0, 0);
	*ret_cpu_seconds = isnan(v) ? 0 : v;
	store_rows_free(rows);
	return 0;
}

static const char sql_backlog[] =
    "SELECT COUNT(*) FROM jobs WHERE state IN ('queued', 'running') AND course_id = $1";

int store_course_backlog(struct store *st, int64_t course_id, int64_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(course_id)};

	if (store_q(st, sql_backlog, p, 1, &rows, e) < 0)
		return err_wrap(e, "backlog of course %lld", (long long)course_id);
	*ret_n = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return 0;
}

static const char sql_job_counts[] =
    "SELECT course_id, state, COUNT(*) FROM jobs GROUP BY course_id, state ORDER BY course_id";

int store_job_counts(struct store *st, struct store_course_counts *ret, size_t cap, size_t *ret_n,
		     struct err *e)
{
	struct store_rows *rows = NULL;
	size_t n = 0;

	if (store_q(st, sql_job_counts, NULL, 0, &rows, e) < 0)
		return err_wrap(e, "job counts");
	for (size_t r = 0; r < rows->nrows; r++) {
		int64_t course = store_col_int(rows, r, 0);
		enum store_job_state s;
		if (store_job_state_parse(store_col_text(rows, r, 1), &s, e) < 0) {
			store_rows_free(rows);
			return err_wrap(e, "job counts");
		}
		if (n == 0 || ret[n - 1].course_id != course) {
			if (n == cap)
				break;
			memset(&ret[n], 0, sizeof(ret[n]));
			ret[n++].course_id = course;
		}
		ret[n - 1].n[s] += store_col_int(rows, r, 2);
	}
	store_rows_free(rows);
	*ret_n = n;
	return 0;
}

static const char sql_attempts[] =
    "SELECT attempt, worker, host, started_ms, ended_ms, outcome FROM attempts "
    "WHERE job_id = $1 ORDER BY attempt";

int store_job_attempts(struct store *st, int64_t job_id, struct store_attempt *ret, size_t cap,
		       size_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(job_id)};
	size_t n = 0;

	if (store_q(st, sql_attempts, p, 1, &rows, e) < 0)
		return err_wrap(e, "attempts of job %lld", (long long)job_id);
	for (; n < rows->nrows && n < cap; n++) {
		struct store_attempt *a = &ret[n];
		memset(a, 0, sizeof(*a));
		a->attempt = (int)store_col_int(rows, n, 0);
		store_col_copy(rows, n, 1, a->worker, sizeof(a->worker));
		store_col_copy(rows, n, 2, a->host, sizeof(a->host));
		a->started_ms = store_col_int(rows, n, 3);
		a->ended_ms = store_col_int(rows, n, 4);
		store_col_copy(rows, n, 5, a->outcome, sizeof(a->outcome));
	}
	store_rows_free(rows);
	*ret_n = n;
	return 0;
}

/* ---- outbox ---- */

static const char sql_outbox_take[] =
    "UPDATE outbox SET next_try_ms = {now} + $1 WHERE id IN (SELECT id FROM outbox "
    "WHERE state = 'pending' AND next_try_ms <= {now} ORDER BY next_try_ms, id LIMIT $2 "
    "{skip_locked}) RETURNING id, job_id, submission_id, delivery_id, url, payload, attempts";
static const char sql_outbox_record[] =
    "UPDATE outbox SET attempts = attempts + 1, last_status = $2, last_error = $3, "
    "state = CASE WHEN $4 = 1 THEN 'delivered' WHEN attempts + 1 >= $5 THEN 'failed' "
    "ELSE 'pending' END, "
    "delivered_ms = CASE WHEN $4 = 1 THEN {now} ELSE NULL END, "
    "next_try_ms = CASE WHEN $4 = 1 THEN next_try_ms ELSE {now} + $6 END "
    "WHERE id = $1 AND state = 'pending' RETURNING job_id, attempts";
static const char sql_delivery_add[] =
    "INSERT INTO deliveries (outbox_id, n, at_ms, http_status, error) "
    "VALUES ($1, $2, {now}, $3, $4)";
static const char sql_job_delivered[] =
    "UPDATE jobs SET delivered_ms = {now} WHERE id = $1 AND delivered_ms IS NULL";

void store_delivery_clear(struct store_delivery *d)
{
	if (!d)
		return;
	free(d->payload);
	d->payload = NULL;
}

struct take_arg {
	int64_t hold;
	struct store_delivery *out;
	size_t cap, n;
};

static int take_tx(struct store *st, void *arg, struct err *e)
{
	struct take_arg *a = arg;
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(a->hold), sv_int((int64_t)a->cap)};

	if (store_q(st, sql_outbox_take, p, 2, &rows, e) < 0)
		return err_wrap(e, "outbox");
	for (size_t r = 0; r < rows->nrows && a->n < a->cap; r++) {
		struct store_delivery *d = &a->out[a->n];
		memset(d, 0, sizeof(*d));
		d->outbox_id = store_col_int(rows, r, 0);
		d->job_id = store_col_int(rows, r, 1);
		d->submission_id = store_col_int(rows, r, 2);
		store_col_copy(rows, r, 3, d->delivery_id, sizeof(d->delivery_id));
		store_col_copy(rows, r, 4, d->url, sizeof(d->url));
		d->payload = strdup(store_col_text(rows, r, 5));
		d->attempts = (int)store_col_int(rows, r, 6);
		if (!d->payload) {
			store_rows_free(rows);
			return err_set(e, ENOMEM, "outbox payload");
		}
		a->n++;
	}
	store_rows_free(rows);
	return 0;
}

int store_outbox_take_due(struct store *st, int64_t hold_ms, struct store_delivery *ret, size_t cap,
			  size_t *ret_n, struct err *e)
{
	struct take_arg a = {.hold = hold_ms, .out = ret, .cap = cap};

	if (cap == 0 || cap > 1000 || hold_ms < 0)
		return store_fail(e, STORE_INVALID, "outbox: cap %zu, hold %lld", cap,
				  (long long)hold_ms);
	int rc = store_tx_run(st, STORE_TX_WRITE, take_tx, &a, e);
	if (rc < 0) {
		for (size_t i = 0; i < a.n; i++)
			store_delivery_clear(&ret[i]);
		return rc;
	}
	*ret_n = a.n;
	return 0;
}

struct record_arg {
	int64_t id;
	bool ok;
	int status;
	const char *error;
	int64_t retry;
	int max;
};

static int record_tx(struct store *st, void *arg, struct err *e)
{
	struct record_arg *a = arg;
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(a->id),	   a->status ? sv_int(a->status) : sv_null(),
				sv_text(a->error), sv_int(a->ok),
				sv_int(a->max),	   sv_int(a->retry)};

	if (store_q(st, sql_outbox_record, p, 6, &rows, e) < 0)
		return err_wrap(e, "outbox %lld", (long long)a->id);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "outbox %lld: not pending", (long long)a->id);
	}
	int64_t job = store_col_int(rows, 0, 0), n = store_col_int(rows, 0, 1);
	store_rows_free(rows);
	struct store_val pd[] = {sv_int(a->id), sv_int(n),
				 a->status ? sv_int(a->status) : sv_null(), sv_text(a->error)};
	if (store_q(st, sql_delivery_add, pd, 4, NULL, e) < 0)
		return err_wrap(e, "delivery of outbox %lld", (long long)a->id);
	struct store_val pj[] = {sv_int(job)};
	if (a->ok && store_q(st, sql_job_delivered, pj, 1, NULL, e) < 0)
		return err_wrap(e, "job %lld delivered", (long long)job);
	return 0;
}

int store_outbox_record(struct store *st, int64_t outbox_id, bool ok, int http_status,
			const char *error, int64_t retry_ms, int max_attempts, struct err *e)
{
	struct record_arg a = {.id = outbox_id,
			       .ok = ok,
			       .status = http_status,
			       .error = error,
			       .retry = retry_ms,
			       .max = max_attempts};
	int rc;

	if ((rc = store_check_label("delivery error", error, STORE_TEXT_MAX, false, e)) < 0)
		return rc;
	if (retry_ms < 0 || max_attempts < 1)
		return store_fail(e, STORE_INVALID, "outbox: retry %lld ms, %d attempts",
				  (long long)retry_ms, max_attempts);
	return store_tx_run(st, STORE_TX_WRITE, record_tx, &a, e);
}

static const char sql_phases[] =
    "SELECT queued_ms, started_ms, sandbox_ready_ms, finished_ms, id FROM jobs "
    "WHERE id >= $1 AND state IN ('done', 'error') "
    "AND (finished_ms > $2 OR (finished_ms = $2 AND id > $4)) "
    "ORDER BY finished_ms, id LIMIT $3";
static const char sql_floor[] =
    "SELECT min(id), (SELECT max(id) FROM jobs) FROM jobs WHERE state IN ('queued', 'running')";

int store_job_phases(struct store *st, int64_t *floor_id, int64_t *after_ms, int64_t *after_id,
		     struct store_phase_times *ret, size_t cap, size_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(*floor_id), sv_int(*after_ms), sv_int((int64_t)cap),
				sv_int(*after_id)};

	*ret_n = 0;
	if (store_q(st, sql_phases, p, 4, &rows, e) < 0)
		return err_wrap(e, "finished jobs");
	for (size_t r = 0; r < rows->nrows && r < cap; r++) {
		ret[r] = (struct store_phase_times){.queued_ms = store_col_int(rows, r, 0),
						    .started_ms = store_col_int(rows, r, 1),
						    .sandbox_ready_ms = store_col_int(rows, r, 2),
						    .finished_ms = store_col_int(rows, r, 3)};
		*after_ms = ret[r].finished_ms; /* rows come in (finished_ms, id) order */
		*after_id = store_col_int(rows, r, 4);
		(*ret_n)++;
	}
	rows = store_rows_free(rows);
	if (*ret_n == cap)
		return 0; /* more to read before the floor moves */
	if (store_q(st, sql_floor, NULL, 0, &rows, e) < 0)
		return err_wrap(e, "unfinished jobs");
	if (store_rows_at(rows, 0, 0)->t != SV_NULL)
		*floor_id = store_col_int(rows, 0, 0);
	else
		*floor_id = store_col_int(rows, 0, 1) + 1;
	store_rows_free(rows);
	return 0;
}

static const char sql_workers[] =
    "SELECT worker, COUNT(*), MAX(lease_expires_ms - lease_ms) FROM jobs "
    "WHERE state = 'running' AND worker IS NOT NULL GROUP BY worker ORDER BY worker";
static const char sql_outcomes[] = "SELECT outcome, COUNT(*) FROM attempts GROUP BY outcome";

int store_worker_stats(struct store *st, struct store_worker_stat *ret, size_t cap, size_t *ret_n,
		       int64_t outcomes[STORE_OUTCOMES], struct err *e)
{
	struct store_rows *rows = NULL;

	*ret_n = 0;
	if (store_q(st, sql_workers, NULL, 0, &rows, e) < 0)
		return err_wrap(e, "workers");
	for (size_t r = 0; r < rows->nrows && *ret_n < cap; r++) {
		struct store_worker_stat *w = &ret[(*ret_n)++];
		store_col_copy(rows, r, 0, w->worker, sizeof(w->worker));
		w->running = store_col_int(rows, r, 1);
		w->last_heartbeat_ms = store_col_int(rows, r, 2);
	}
	rows = store_rows_free(rows);
	if (store_q(st, sql_outcomes, NULL, 0, &rows, e) < 0)
		return err_wrap(e, "attempts");
	memset(outcomes, 0, STORE_OUTCOMES * sizeof(outcomes[0]));
	for (size_t r = 0; r < rows->nrows; r++)
		for (int i = 0; i < STORE_OUTCOMES; i++)
			if (strcmp(store_col_text(rows, r, 0), outcome_names[i]) == 0)
				outcomes[i] = store_col_int(rows, r, 1);
	store_rows_free(rows);
	return 0;
}
