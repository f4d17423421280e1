/* Test helper: reads of the job store that only tests make (the product has no use for them). */
#include "storepeek.h"

#include <string.h>

#include "store/store_int.h"

static const char sql_job_get[] = "SELECT " STORE_JOB_COLUMNS " FROM jobs WHERE id = $1";
static const char sql_result_count[] = "SELECT COUNT(*) FROM results WHERE submission_id = $1";
static const char sql_outbox_of_job[] =
    "SELECT id, result_id, state, attempts, next_try_ms, delivered_ms FROM outbox "
    "WHERE job_id = $1 ORDER BY id";

int store_job_get(struct store *st, int64_t job_id, struct store_job *ret, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(job_id)};

	if (store_q(st, sql_job_get, p, 1, &rows, e) < 0)
		return err_wrap(e, "job %lld", (long long)job_id);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no job %lld", (long long)job_id);
	}
	int rc = store_job_fill(rows, ret, e);
	store_rows_free(rows);
	return rc;
}

int store_result_count(struct store *st, int64_t submission_id, int64_t *ret, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(submission_id)};

	if (store_q(st, sql_result_count, p, 1, &rows, e) < 0)
		return err_wrap(e, "results of submission %lld", (long long)submission_id);
	*ret = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return 0;
}

int store_outbox_for_job(struct store *st, int64_t job_id, struct store_outbox_row *ret, size_t cap,
			 size_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(job_id)};
	size_t n = 0;

	if (store_q(st, sql_outbox_of_job, p, 1, &rows, e) < 0)
		return err_wrap(e, "outbox of job %lld", (long long)job_id);
	for (; n < rows->nrows && n < cap; n++) {
		struct store_outbox_row *o = &ret[n];
		memset(o, 0, sizeof(*o));
		o->outbox_id = store_col_int(rows, n, 0);
		o->result_id = store_col_int(rows, n, 1);
		store_col_copy(rows, n, 2, o->state, sizeof(o->state));
		o->attempts = (int)store_col_int(rows, n, 3);
		o->next_try_ms = store_col_int(rows, n, 4);
		o->delivered_ms = store_col_int(rows, n, 5);
	}
	store_rows_free(rows);
	*ret_n = n;
	return 0;
}
