/* The job store's metering of sandboxes: a token's live ones, its use of a day, the ones with a cost cap. */
#include "store_int.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/*
 * Reads only: what serve needs to admit a create (the token's live count
 * and its spending of the day) and to end a sandbox whose metered cost
 * reached its cap.  Prices are not the store's business: it answers
 * CPU-seconds and GiB-seconds, and the service prices them (policy_cost).
 * Statements that look for live rows say `state IN ('creating',
 * 'running')`, as sandboxes.c explains.
 */

static const char sql_by_key[] =
    "SELECT id FROM sandboxes WHERE course_id = $1 AND idempotency_key = $2";

int store_sandbox_find_key(struct store *st, int64_t course_id, const char *key, int64_t *ret_id,
			   struct err *e)
{
	struct store_rows *rows = NULL;
	int rc;

	if ((rc = store_check_label("idempotency key", key, STORE_LABEL_CAP, true, e)) < 0)
		return rc;
	struct store_val p[] = {sv_int(course_id), sv_text(key)};
	if (store_q(st, sql_by_key, p, 2, &rows, e) < 0)
		return err_wrap(e, "idempotency key");
	size_t n = rows->nrows;
	if (n == 1)
		*ret_id = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return n == 1 ? 0 : store_fail(e, STORE_NOT_FOUND, "no sandbox of that key");
}

static const char sql_token_live[] =
    "SELECT COUNT(*) FROM sandboxes WHERE state IN ('creating', 'running') AND token_id = $1";

int store_token_live_sandboxes(struct store *st, int64_t token_id, int64_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(token_id)};

	if (store_q(st, sql_token_live, p, 1, &rows, e) < 0)
		return err_wrap(e, "live sandboxes of token %lld", (long long)token_id);
	*ret_n = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return 0;
}

/*
 * The reserved part counts each sandbox from the later of its start and
 * since_ms to the earlier of its end and now (CASE, not LEAST/GREATEST or
 * two-argument MIN/MAX, which the two databases spell differently); a
 * sandbox never started (it failed, or waits to be placed) reserved
 * nothing.  Execs count by when they ended, as a course's do.
 */
static const char sql_token_usage[] =
    "SELECT COALESCE((SELECT SUM(CAST(COALESCE(b.memory_mib, 0) AS DOUBLE PRECISION) / 1024 * "
    "CAST((CASE WHEN b.ended_ms IS NULL OR b.ended_ms > n.ms THEN n.ms ELSE b.ended_ms END) - "
    "(CASE WHEN b.started_ms > CAST($2 AS BIGINT) THEN b.started_ms ELSE CAST($2 AS BIGINT) END) "
    "AS DOUBLE PRECISION) / 1000) FROM sandboxes b WHERE b.token_id = $1 "
    "AND b.started_ms IS NOT NULL AND (b.ended_ms IS NULL OR b.ended_ms >= $2)), 0), "
    "COALESCE((SELECT CAST(SUM(x.cpu_ms) AS DOUBLE PRECISION) / 1000 FROM sandbox_execs x "
    "JOIN sandboxes b ON b.id = x.sandbox_id WHERE b.token_id = $1 AND x.ended_ms >= $2), 0), "
    "n.ms FROM (SELECT {now} AS ms) n";

int store_token_usage_since(struct store *st, int64_t token_id, int64_t since_ms,
			    struct store_usage *ret, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(token_id), sv_int(since_ms)};

	if (store_q(st, sql_token_usage, p, 2, &rows, e) < 0)
		return err_wrap(e, "usage of token %lld", (long long)token_id);
	double gib = store_col_real(rows, 0, 0), cpu = store_col_real(rows, 0, 1);
	/* A sandbox that started after the clock was read (another server's
	 * clock) would count negative time: none. */
	ret->reserved_gib_seconds = isnan(gib) || gib < 0 ? 0 : gib;
	ret->cpu_seconds = isnan(cpu) ? 0 : cpu;
	ret->now_ms = store_col_int(rows, 0, 2);
	store_rows_free(rows);
	return 0;
}

static const char sql_metered[] =
    "SELECT b.id, b.memory_mib, b.cpu_ms, b.started_ms, b.max_cost_micros, n.ms "
    "FROM sandboxes b, (SELECT {now} AS ms) n WHERE b.state IN ('creating', 'running') "
    "AND b.host_key = $1 AND b.max_cost_micros IS NOT NULL AND b.started_ms IS NOT NULL "
    "ORDER BY b.id LIMIT $2";

int store_sandbox_metered(struct store *st, const char *host_key, struct store_sandbox_meter *ret,
			  size_t cap, size_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	int rc;

	if ((rc = store_check_label("host", host_key, STORE_LABEL_CAP, true, e)) < 0)
		return rc;
	if (cap == 0 || cap > 100000)
		return store_fail(e, STORE_INVALID, "metered sandboxes: cap %zu", cap);
	struct store_val p[] = {sv_text(host_key), sv_int((int64_t)cap)};
	if (store_q(st, sql_metered, p, 2, &rows, e) < 0)
		return err_wrap(e, "metered sandboxes of %s", host_key);
	size_t n = 0;
	for (; n < rows->nrows && n < cap; n++)
		ret[n] = (struct store_sandbox_meter){
		    .sandbox_id = store_col_int(rows, n, 0),
		    .memory_mib = (int)store_col_int(rows, n, 1),
		    .cpu_ms = store_col_int(rows, n, 2),
		    .started_ms = store_col_int(rows, n, 3),
		    .max_cost_micros = store_col_int(rows, n, 4),
		    .now_ms = store_col_int(rows, n, 5),
		};
	store_rows_free(rows);
	*ret_n = n;
	return 0;
}
