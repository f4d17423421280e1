/* Regrades of many submissions at once (store.h, "regrades of many submissions"). */
#include <stdlib.h>

#include "store_int.h"

#include "grade/grade.h"

static const char *const scope_names[] = {"submission", "student", "latest", "all"};

int store_regrade_scope_parse(const char *name, enum store_regrade_scope *ret, struct err *e)
{
	for (size_t i = 0; i < sizeof(scope_names) / sizeof(scope_names[0]); i++)
		if (name && strcmp(name, scope_names[i]) == 0) {
			*ret = (enum store_regrade_scope)i;
			return 0;
		}
	return store_fail(e, STORE_INVALID, "'scope' must be submission, student, latest or all");
}

static const char sql_regrade_add[] =
    "INSERT INTO regrades (course_id, assignment_id, version_id, scope, student, created_ms) "
    "VALUES ($1, $2, $3, $4, $5, {now}) RETURNING id";
/* The submissions a scope takes ($2: scope, $3: student, $4: submission),
 * with their received time and latest result. */
static const char sql_targets[] =
    "SELECT s.id, s.received_ms, (SELECT max(r.id) FROM results r WHERE r.submission_id = s.id) "
    "FROM submissions s JOIN assignment_versions v ON v.id = s.version_id "
    "WHERE v.assignment_id = $1 AND ("
    " $2 = 'all'"
    " OR ($2 = 'submission' AND s.id = $4)"
    " OR ($2 = 'student' AND s.id = (SELECT max(s2.id) FROM submissions s2"
    "   JOIN assignment_versions v2 ON v2.id = s2.version_id"
    "   WHERE v2.assignment_id = $1 AND s2.student = $3))"
    " OR ($2 = 'latest' AND (s.student IS NULL OR s.id = (SELECT max(s2.id) FROM submissions s2"
    "   JOIN assignment_versions v2 ON v2.id = s2.version_id"
    "   WHERE v2.assignment_id = $1 AND s2.student = s.student))))"
    "ORDER BY s.id LIMIT $5";
static const char sql_regrade_job_add[] =
    "INSERT INTO regrade_jobs (regrade_id, job_id, submission_id, prev_result_id) "
    "VALUES ($1, $2, $3, $4)";

struct batch_arg {
	const struct store_regrade_in *in;
	int64_t regrade, version;
	size_t jobs;
};

/* The version to regrade against: given (and the assignment's), or the latest. */
static int pick_version(struct store *st, struct batch_arg *a, struct err *e)
{
	struct store_assignment as;
	struct store_version v;

	int rc = store_assignment_get(st, a->in->assignment_id, &as, e);
	if (rc == STORE_NOT_FOUND ||
	    (rc == 0 && (as.course_id != a->in->course_id || !as.latest_version_id)))
		return store_fail(e, STORE_NOT_FOUND, "no assignment %lld in this course",
				  (long long)a->in->assignment_id);
	if (rc < 0)
		return rc;
	a->version = as.latest_version_id;
	if (!a->in->version_id)
		return 0;
	rc = store_version_get(st, a->in->version_id, &v, e);
	/* A version of another course is one that does not exist. */
	if (rc == STORE_NOT_FOUND || (rc == 0 && v.course_id != a->in->course_id))
		return store_fail(e, STORE_NOT_FOUND, "no assignment version %lld",
				  (long long)a->in->version_id);
	if (rc < 0)
		return rc;
	if (v.assignment_id != a->in->assignment_id)
		return store_fail(e, STORE_INVALID,
				  "version %lld is not a version of assignment %lld",
				  (long long)a->in->version_id, (long long)a->in->assignment_id);
	a->version = a->in->version_id;
	return 0;
}

static int batch_tx(struct store *st, void *arg, struct err *e)
{
	struct batch_arg *a = arg;
	const struct store_regrade_in *in = a->in;
	struct store_rows *rows = NULL, *targets = NULL;
	int rc;

	a->jobs = 0;
	if ((rc = pick_version(st, a, e)) < 0)
		return rc;
	struct store_val pr[] = {sv_int(in->course_id), sv_int(in->assignment_id),
				 sv_int(a->version), sv_text(scope_names[in->scope]),
				 sv_text(in->scope == STORE_REGRADE_STUDENT ? in->student : NULL)};
	if (store_q(st, sql_regrade_add, pr, 5, &rows, e) < 0)
		return err_wrap(e, "regrade");
	a->regrade = store_col_int(rows, 0, 0);
	rows = store_rows_free(rows);
	struct store_val pt[] = {sv_int(in->assignment_id), sv_text(scope_names[in->scope]),
				 sv_text(in->student ? in->student : ""), sv_int(in->submission_id),
				 sv_int(STORE_REGRADE_MAX)};
	if (store_q(st, sql_targets, pt, 5, &targets, e) < 0)
		return err_wrap(e, "regrade: submissions");
	if (targets->nrows == 0) {
		store_rows_free(targets);
		return store_fail(e, STORE_NOT_FOUND, "the regrade's scope takes no submission");
	}
	for (size_t r = 0; r < targets->nrows; r++) {
		int64_t sub = store_col_int(targets, r, 0), job;
		const struct store_val *prev = store_rows_at(targets, r, 2);
		if (store_job_add_tx(st, sub, a->version, in->course_id,
				     store_col_int(targets, r, 1), &job, e) < 0)
			break;
		struct store_val pj[] = {sv_int(a->regrade), sv_int(job), sv_int(sub),
					 prev->t == SV_NULL ? sv_null() : sv_int(prev->i)};
		if (store_q(st, sql_regrade_job_add, pj, 4, NULL, e) < 0) {
			err_wrap(e, "regrade job");
			break;
		}
		a->jobs++;
	}
	rc = a->jobs == targets->nrows ? 0 : -1;
	store_rows_free(targets);
	return rc;
}

int store_regrade_batch(struct store *st, const struct store_regrade_in *in, int64_t *ret_regrade,
			int64_t *ret_version, size_t *ret_jobs, struct err *e)
{
	struct batch_arg a = {.in = in};

	if ((unsigned)in->scope >= sizeof(scope_names) / sizeof(scope_names[0]))
		return store_fail(e, STORE_INVALID, "unknown regrade scope");
	if (in->scope == STORE_REGRADE_STUDENT && (!in->student || !*in->student))
		return store_fail(e, STORE_INVALID, "a student's regrade needs 'student'");
	int rc = store_tx_run(st, STORE_TX_WRITE, batch_tx, &a, e);
	if (rc < 0)
		return rc;
	*ret_regrade = a.regrade;
	if (ret_version)
		*ret_version = a.version;
	*ret_jobs = a.jobs;
	return 0;
}

static const char sql_regrade_get[] =
    "SELECT id, course_id, assignment_id, version_id, scope, created_ms FROM regrades "
    "WHERE id = $1";
static const char sql_regrade_items[] =
    "SELECT rj.submission_id, rj.job_id, s.student, j.state, old.score, new.score "
    "FROM regrade_jobs rj JOIN submissions s ON s.id = rj.submission_id "
    "JOIN jobs j ON j.id = rj.job_id "
    "LEFT JOIN results old ON old.id = rj.prev_result_id "
    "LEFT JOIN results new ON new.job_id = rj.job_id "
    "WHERE rj.regrade_id = $1 ORDER BY rj.submission_id, rj.job_id";

int store_regrade_get(struct store *st, int64_t regrade_id, struct store_regrade_info *ret,
		      struct store_regrade_item *items, size_t cap, size_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(regrade_id)};

	*ret_n = 0;
	if (store_q(st, sql_regrade_get, p, 1, &rows, e) < 0)
		return err_wrap(e, "regrade %lld", (long long)regrade_id);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no regrade %lld", (long long)regrade_id);
	}
	memset(ret, 0, sizeof(*ret));
	ret->regrade_id = store_col_int(rows, 0, 0);
	ret->course_id = store_col_int(rows, 0, 1);
	ret->assignment_id = store_col_int(rows, 0, 2);
	ret->version_id = store_col_int(rows, 0, 3);
	store_col_copy(rows, 0, 4, ret->scope, sizeof(ret->scope));
	ret->created_ms = store_col_int(rows, 0, 5);
	rows = store_rows_free(rows);
	if (store_q(st, sql_regrade_items, p, 1, &rows, e) < 0)
		return err_wrap(e, "regrade %lld", (long long)regrade_id);
	for (size_t r = 0; r < rows->nrows; r++) {
		struct store_regrade_item it = {.submission_id = store_col_int(rows, r, 0),
						.job_id = store_col_int(rows, r, 1),
						.old_score = store_col_real(rows, r, 4),
						.new_score = store_col_real(rows, r, 5)};
		if (store_job_state_parse(store_col_text(rows, r, 3), &it.state, e) < 0) {
			store_rows_free(rows);
			return err_wrap(e, "regrade %lld", (long long)regrade_id);
		}
		store_col_copy(rows, r, 2, it.student, sizeof(it.student));
		bool done = it.state == STORE_JOB_DONE || it.state == STORE_JOB_ERROR;
		ret->total++;
		ret->finished += done;
		ret->changed +=
		    done && it.state == STORE_JOB_DONE && grade_score_changed(it.old_score, it.new_score);
		if (*ret_n < cap)
			items[(*ret_n)++] = it;
	}
	store_rows_free(rows);
	return 0;
}
