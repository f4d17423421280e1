/* The job store's sandboxes over the API: who owns each, where it is held, its lease, its execs. */
#include "store_int.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Invariants this file keeps, on both backends:
 * - Only a live sandbox (creating, running) changes state, and each change
 *   is one UPDATE whose WHERE names the states it leaves, so two servers
 *   ending the same sandbox (a delete racing the sweep) record one end.
 * - A sandbox that ends takes its running execs with it (unknown) in the
 *   same transaction: no exec stays running under an ended sandbox.
 * - An exec's usage and its sandbox's totals are written in one
 *   transaction, so the totals are the sum of the done execs.
 * - Every statement that looks for live rows says
 *   `state IN ('creating', 'running')` as it stands in the partial index
 *   sandboxes_live: SQLite uses a partial index only when the query's WHERE
 *   has the index's condition as one of its AND-ed terms (jobs.c says the
 *   same of jobs_runnable).
 */

/* ---- checks of what the store keeps ---- */

enum json_kind {
	JSON_LABELS, /* an object of strings, keys and values labels */
	JSON_ENV,    /* an object of strings, keys without '=' */
	JSON_ARGV,   /* a non-empty array of strings */
	JSON_LIMITS, /* an array of strings */
};

/* One member of a labels or env object. */
static int check_member(const char *what, enum json_kind kind, const char *key, const json_t *v,
			struct err *e)
{
	if (!json_is_string(v))
		return store_fail(e, STORE_INVALID, "%s: '%.64s' is not a string", what, key);
	if (kind == JSON_ENV && (!key[0] || strchr(key, '=')))
		return store_fail(e, STORE_INVALID, "%s: a name is empty or has '='", what);
	if (kind == JSON_LABELS) {
		int rc = store_check_label("label name", key, STORE_LABEL_CAP, true, e);
		if (rc < 0)
			return rc;
		return store_check_label("label value", json_string_value(v), STORE_TEXT_MAX, false,
					 e);
	}
	return 0;
}

/* Text that must be JSON of `kind`, fewer than `cap` bytes. */
static int check_json(const char *what, const char *text, enum json_kind kind, size_t cap,
		      struct err *e)
{
	size_t len = strnlen(text, cap);
	json_error_t jerr;
	int rc = 0;

	if (len == cap)
		return store_fail(e, STORE_INVALID, "%s: longer than %zu bytes", what, cap - 1);
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!doc)
		return store_fail(e, STORE_INVALID, "%s: not JSON: %s", what, jerr.text);
	if (kind == JSON_ARGV || kind == JSON_LIMITS) {
		size_t n = json_array_size(doc);
		if (!json_is_array(doc) || (kind == JSON_ARGV && n == 0))
			rc = store_fail(e, STORE_INVALID, "%s: not a %sarray of strings", what,
					kind == JSON_ARGV ? "non-empty " : "");
		for (size_t i = 0; rc == 0 && i < n; i++)
			if (!json_is_string(json_array_get(doc, i)))
				rc = store_fail(e, STORE_INVALID, "%s: item %zu is not a string",
						what, i);
	} else if (!json_is_object(doc)) {
		rc = store_fail(e, STORE_INVALID, "%s: not an object of strings", what);
	} else {
		const char *key;
		json_t *v;
		json_object_foreach(doc, key, v)
		{
			if ((rc = check_member(what, kind, key, v, e)) < 0)
				break;
		}
	}
	json_decref(doc);
	return rc;
}

static bool is_end_state(const char *s)
{
	static const char *const ends[] = {"deleted", "expired", "lost", "failed"};

	for (size_t i = 0; s && i < sizeof(ends) / sizeof(ends[0]); i++)
		if (strcmp(s, ends[i]) == 0)
			return true;
	return false;
}

/* ---- create, placed ---- */

/* Inserts nothing when the token is not the course's or the key is taken.
 * The clock is read once: the lease ends exactly timeout_s after creation
 * (PostgreSQL's clock_timestamp() moves within a statement). */
static const char sql_sandbox_add[] =
    "INSERT INTO sandboxes (course_id, token_id, state, isolation, image_pin, vcpu, memory_mib, "
    "disk_mib, timeout_s, labels, env, idempotency_key, secret, created_ms, lease_end_ms, "
    "max_cost_micros) "
    "SELECT CAST($1 AS BIGINT), CAST($2 AS BIGINT), 'creating', CAST($3 AS TEXT), "
    "CAST($4 AS TEXT), CAST($5 AS BIGINT), CAST($6 AS BIGINT), CAST($7 AS BIGINT), "
    "CAST($8 AS BIGINT), CAST($9 AS TEXT), CAST($10 AS TEXT), CAST($11 AS TEXT), "
    "CAST($12 AS TEXT), n.ms, n.ms + CAST($8 AS BIGINT) * 1000, CAST($13 AS BIGINT) "
    "FROM (SELECT {now} AS ms) n "
    "WHERE EXISTS (SELECT 1 FROM tokens t WHERE t.id = $2 AND t.course_id = $1 "
    "AND (t.max_live_sandboxes IS NULL OR t.max_live_sandboxes > (SELECT COUNT(*) "
    "FROM sandboxes l WHERE l.state IN ('creating', 'running') AND l.token_id = $2))) "
    "ON CONFLICT (course_id, idempotency_key) DO NOTHING RETURNING id";
static const char sql_sandbox_by_key[] =
    "SELECT id, secret FROM sandboxes WHERE course_id = $1 AND idempotency_key = $2";
/* Creates of a token with a live maximum wait here for each other, so the
 * count of the insert above sees every committed one (PostgreSQL's READ
 * COMMITTED reads a new snapshot per statement); SQLite's write lock does
 * it already. */
static const char sql_token_lock[] =
    "UPDATE tokens SET max_live_sandboxes = max_live_sandboxes "
    "WHERE id = $1 AND max_live_sandboxes IS NOT NULL";
static const char sql_token_room[] =
    "SELECT t.max_live_sandboxes, (SELECT COUNT(*) FROM sandboxes l "
    "WHERE l.state IN ('creating', 'running') AND l.token_id = t.id) "
    "FROM tokens t WHERE t.id = $1 AND t.course_id = $2 AND t.max_live_sandboxes IS NOT NULL";

struct create_arg {
	const struct store_sandbox_in *in;
	const char *labels, *env;
	char secret[65];
	int64_t id;
	bool existing;
};

static struct store_val size_val(int n)
{
	return n > 0 ? sv_int(n) : sv_null();
}

static int create_tx(struct store *st, void *arg, struct err *e)
{
	struct create_arg *a = arg;
	const struct store_sandbox_in *in = a->in;
	struct store_rows *rows = NULL;
	struct store_val p[] = {
	    sv_int(in->course_id),  sv_int(in->token_id),	  sv_text(in->isolation),
	    sv_text(in->image_pin), size_val(in->vcpu),		  size_val(in->memory_mib),
	    size_val(in->disk_mib), sv_int(in->timeout_s),	  sv_text(a->labels),
	    sv_text(a->env),	    sv_text(in->idempotency_key), sv_text(a->secret),
	    in->max_cost_micros > 0 ? sv_int(in->max_cost_micros) : sv_null()};

	a->existing = false;
	if (store_q(st, sql_token_lock, p + 1, 1, NULL, e) < 0)
		return err_wrap(e, "lock token %lld", (long long)in->token_id);
	if (store_q(st, sql_sandbox_add, p, 13, &rows, e) < 0)
		return err_wrap(e, "add sandbox");
	if (rows->nrows == 1) {
		a->id = store_col_int(rows, 0, 0);
		store_rows_free(rows);
		return 0;
	}
	rows = store_rows_free(rows);
	/* The key was used (perhaps by a transaction that committed while
	 * PostgreSQL made us wait), or the token is not the course's. */
	if (in->idempotency_key) {
		struct store_val pk[] = {sv_int(in->course_id), sv_text(in->idempotency_key)};
		if (store_q(st, sql_sandbox_by_key, pk, 2, &rows, e) < 0)
			return err_wrap(e, "idempotency key");
		if (rows->nrows == 1) {
			a->id = store_col_int(rows, 0, 0);
			store_col_copy(rows, 0, 1, a->secret, sizeof(a->secret));
			a->existing = true;
			store_rows_free(rows);
			return 0;
		}
		rows = store_rows_free(rows);
	}
	struct store_val pt[] = {sv_int(in->token_id), sv_int(in->course_id)};
	if (store_q(st, sql_token_room, pt, 2, &rows, e) < 0)
		return err_wrap(e, "live sandboxes of token %lld", (long long)in->token_id);
	if (rows->nrows == 1) {
		int64_t max = store_col_int(rows, 0, 0), n = store_col_int(rows, 0, 1);
		store_rows_free(rows);
		return store_fail(e, STORE_REFUSED,
				  "token %lld has %lld live sandboxes, its max_live_sandboxes %lld",
				  (long long)in->token_id, (long long)n, (long long)max);
	}
	store_rows_free(rows);
	return store_fail(e, STORE_NOT_FOUND, "no token %lld in course %lld",
			  (long long)in->token_id, (long long)in->course_id);
}

/*
 * SAFETY: the sandbox records are written without waiting for the disk
 * (STORE_TX_WRITE_LOSSY: SQLite commits without its fsync, PostgreSQL
 * without waiting for its WAL flush; a crash of the process loses nothing,
 * and the next durable commit covers them too).  What a crash of the
 * machine may lose is the last moments of sandboxes that did not survive
 * it either: a keeper dies with its server, and serve marks every live
 * sandbox of its host lost when it starts (store_sandbox_lose_host); and a
 * few execs' usage, which a course's daily CPU cap then does not count.
 * Each of these writes is on the way of an API call (a create, an exec,
 * a delete): the fsync was a millisecond of each.
 */
struct lossy_q {
	const char *sql;
	const struct store_val *p;
	size_t np;
	struct store_rows **rows;
};

static int lossy_q_tx(struct store *st, void *arg, struct err *e)
{
	struct lossy_q *a = arg;

	return store_q(st, a->sql, a->p, a->np, a->rows, e);
}

/* store_q() of one statement as a lossy write transaction. */
static int q_lossy(struct store *st, const char *sql, const struct store_val *p, size_t np,
		   struct store_rows **ret_rows, struct err *e)
{
	struct lossy_q a = {.sql = sql, .p = p, .np = np, .rows = ret_rows};

	return store_tx_run(st, STORE_TX_WRITE_LOSSY, lossy_q_tx, &a, e);
}

int store_sandbox_create(struct store *st, const struct store_sandbox_in *in, int64_t *ret_id,
			 char ret_secret[65], bool *ret_existing, struct err *e)
{
	struct create_arg a = {.in = in,
			       .labels = in->labels_json ? in->labels_json : "{}",
			       .env = in->env_json ? in->env_json : "{}"};
	const size_t label = STORE_LABEL_CAP, json = STORE_SANDBOX_JSON_MAX + 1;
	int rc;

	if ((rc = store_check_label("isolation", in->isolation, label, true, e)) < 0 ||
	    (rc = store_check_label("image", in->image_pin, label, true, e)) < 0 ||
	    (rc = store_check_label("idempotency key", in->idempotency_key, label, false, e)) < 0 ||
	    (rc = check_json("labels", a.labels, JSON_LABELS, json, e)) < 0 ||
	    (rc = check_json("env", a.env, JSON_ENV, json, e)) < 0)
		return rc;
	if (in->vcpu < 0 || in->memory_mib < 0 || in->disk_mib < 0)
		return store_fail(e, STORE_INVALID, "sandbox: a negative size");
	if (in->max_cost_micros < 0)
		return store_fail(e, STORE_INVALID, "sandbox: a negative max_cost_micros");
	if (in->timeout_s < 1 || in->timeout_s > STORE_SANDBOX_TIMEOUT_MAX)
		return store_fail(e, STORE_INVALID, "sandbox: a lease of %lld s (1 to %lld)",
				  (long long)in->timeout_s, (long long)STORE_SANDBOX_TIMEOUT_MAX);
	if (store_random_hex(a.secret, 32, e) < 0)
		return err_wrap(e, "sandbox secret");
	if ((rc = store_tx_run(st, STORE_TX_WRITE_LOSSY, create_tx, &a, e)) < 0)
		return rc;
	*ret_id = a.id;
	memcpy(ret_secret, a.secret, sizeof(a.secret));
	if (ret_existing)
		*ret_existing = a.existing;
	return 0;
}

static const char sql_sandbox_placed[] =
    "UPDATE sandboxes SET state = 'running', host_key = $2, socket = $3, keeper_pid = $4, "
    "started_ms = {now} WHERE id = $1 AND state = 'creating' RETURNING id";

int store_sandbox_placed(struct store *st, int64_t id, const char *host_key, const char *socket,
			 int64_t keeper_pid, struct err *e)
{
	struct store_rows *rows = NULL;
	int rc;

	if ((rc = store_check_label("host", host_key, STORE_LABEL_CAP, true, e)) < 0 ||
	    (rc = store_check_label("socket", socket, STORE_SANDBOX_PATH_MAX, true, e)) < 0)
		return rc;
	if (keeper_pid <= 0)
		return store_fail(e, STORE_INVALID, "keeper pid %lld", (long long)keeper_pid);
	struct store_val p[] = {sv_int(id), sv_text(host_key), sv_text(socket), sv_int(keeper_pid)};
	if (q_lossy(st, sql_sandbox_placed, p, 4, &rows, e) < 0)
		return err_wrap(e, "sandbox %lld placed", (long long)id);
	size_t n = rows->nrows;
	store_rows_free(rows);
	if (n == 0)
		return store_fail(e, STORE_NOT_FOUND, "no sandbox %lld being created",
				  (long long)id);
	return 0;
}

/* ---- get, list ---- */

static const char sql_sandbox_get[] =
    "SELECT id, course_id, token_id, state, isolation, image_pin, vcpu, memory_mib, disk_mib, "
    "timeout_s, labels, env, idempotency_key, secret, host_key, socket, keeper_pid, created_ms, "
    "started_ms, lease_end_ms, ended_ms, end_reason, execs, cpu_ms, gib_seconds, "
    "max_cost_micros, {now}, template FROM sandboxes WHERE id = $1";

int store_sandbox_get(struct store *st, int64_t id, struct store_sandbox *ret, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(id)};
	struct store_sandbox sb = {0};

	if (store_q(st, sql_sandbox_get, p, 1, &rows, e) < 0)
		return err_wrap(e, "sandbox %lld", (long long)id);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no sandbox %lld", (long long)id);
	}
	sb.sandbox_id = store_col_int(rows, 0, 0);
	sb.course_id = store_col_int(rows, 0, 1);
	sb.token_id = store_col_int(rows, 0, 2);
	store_col_copy(rows, 0, 3, sb.state, sizeof(sb.state));
	store_col_copy(rows, 0, 4, sb.isolation, sizeof(sb.isolation));
	store_col_copy(rows, 0, 5, sb.image_pin, sizeof(sb.image_pin));
	sb.vcpu = (int)store_col_int(rows, 0, 6);
	sb.memory_mib = (int)store_col_int(rows, 0, 7);
	sb.disk_mib = (int)store_col_int(rows, 0, 8);
	sb.timeout_s = store_col_int(rows, 0, 9);
	sb.labels_json = strdup(store_col_text(rows, 0, 10));
	sb.env_json = strdup(store_col_text(rows, 0, 11));
	store_col_copy(rows, 0, 12, sb.idempotency_key, sizeof(sb.idempotency_key));
	store_col_copy(rows, 0, 13, sb.secret, sizeof(sb.secret));
	store_col_copy(rows, 0, 14, sb.host_key, sizeof(sb.host_key));
	store_col_copy(rows, 0, 15, sb.socket, sizeof(sb.socket));
	sb.keeper_pid = store_col_int(rows, 0, 16);
	sb.created_ms = store_col_int(rows, 0, 17);
	sb.started_ms = store_col_int(rows, 0, 18);
	sb.lease_end_ms = store_col_int(rows, 0, 19);
	sb.ended_ms = store_col_int(rows, 0, 20);
	store_col_copy(rows, 0, 21, sb.end_reason, sizeof(sb.end_reason));
	sb.execs = store_col_int(rows, 0, 22);
	sb.cpu_ms = store_col_int(rows, 0, 23);
	sb.gib_seconds = store_col_real(rows, 0, 24);
	sb.max_cost_micros = store_col_int(rows, 0, 25);
	store_col_copy(rows, 0, 27, sb.template_pin, sizeof(sb.template_pin));
	sb.now_ms = store_col_int(rows, 0, 26);
	store_rows_free(rows);
	if (!sb.labels_json || !sb.env_json) {
		store_sandbox_clear(&sb);
		return err_set(e, ENOMEM, "sandbox %lld", (long long)id);
	}
	*ret = sb;
	return 0;
}

void store_sandbox_clear(struct store_sandbox *sb)
{
	if (!sb)
		return;
	free(sb->labels_json);
	free(sb->env_json);
	sb->labels_json = sb->env_json = NULL;
}

/* Rows read per statement while matching labels, newest first. */
#define LIST_BATCH 500

static const char sql_sandbox_list[] =
    "SELECT id, labels FROM sandboxes WHERE course_id = $1 AND id < $2 "
    "ORDER BY id DESC LIMIT $3";
static const char sql_sandbox_list_live[] =
    "SELECT id, labels FROM sandboxes WHERE state IN ('creating', 'running') "
    "AND course_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3";

struct list_arg {
	int64_t course;
	const char *key, *value;
	bool live;
	int64_t *ids;
	size_t cap, n;
};

static bool labels_match(const char *labels, const char *key, const char *value)
{
	json_t *doc = json_loads(labels, 0, NULL);
	const char *v = json_string_value(json_object_get(doc, key));
	bool ok = v && strcmp(v, value) == 0;

	json_decref(doc);
	return ok;
}

/*
 * Labels are matched here, not in SQL: SQLite and PostgreSQL spell JSON
 * access differently.  Without a label every row matches and one statement
 * reads just what is asked; with one, batches are read until enough match.
 */
static int list_tx(struct store *st, void *arg, struct err *e)
{
	struct list_arg *a = arg;
	int64_t before = INT64_MAX;

	a->n = 0;
	for (;;) {
		struct store_rows *rows = NULL;
		int64_t want = a->key ? LIST_BATCH : (int64_t)a->cap;
		struct store_val p[] = {sv_int(a->course), sv_int(before), sv_int(want)};
		if (store_q(st, a->live ? sql_sandbox_list_live : sql_sandbox_list, p, 3, &rows,
			    e) < 0)
			return err_wrap(e, "sandboxes of course %lld", (long long)a->course);
		size_t got = rows->nrows;
		for (size_t r = 0; r < got && a->n < a->cap; r++) {
			before = store_col_int(rows, r, 0);
			if (!a->key || labels_match(store_col_text(rows, r, 1), a->key, a->value))
				a->ids[a->n++] = before;
		}
		store_rows_free(rows);
		if (a->n == a->cap || got < (size_t)want)
			return 0;
	}
}

int store_sandbox_list(struct store *st, int64_t course_id, const char *label_key,
		       const char *label_value, bool live_only, int64_t *ids, size_t cap,
		       size_t *ret_n, struct err *e)
{
	struct list_arg a = {.course = course_id,
			     .key = label_key,
			     .value = label_value,
			     .live = live_only,
			     .ids = ids,
			     .cap = cap};
	int rc;

	if (!label_key != !label_value)
		return store_fail(e, STORE_INVALID, "sandboxes: a label needs a name and a value");
	if (cap == 0 || cap > 100000)
		return store_fail(e, STORE_INVALID, "sandboxes: cap %zu", cap);
	if ((rc = store_tx_run(st, STORE_TX_READ, list_tx, &a, e)) < 0)
		return rc;
	*ret_n = a.n;
	return 0;
}

/* ---- ends, leases ---- */

static const char sql_end_one[] =
    "UPDATE sandboxes SET state = $2, end_reason = $3, ended_ms = {now} "
    "WHERE id = $1 AND state IN ('creating', 'running') RETURNING id";
static const char sql_execs_unknown_one[] =
    "UPDATE sandbox_execs SET state = 'unknown', ended_ms = {now} "
    "WHERE sandbox_id = $1 AND state = 'running'";
/* Execs first, while their sandboxes are still live and so found. */
static const char sql_execs_unknown_host[] =
    "UPDATE sandbox_execs SET state = 'unknown', ended_ms = {now} "
    "WHERE state = 'running' AND sandbox_id IN (SELECT id FROM sandboxes "
    "WHERE state IN ('creating', 'running') AND host_key = $1)";
static const char sql_lose_host[] =
    "UPDATE sandboxes SET state = 'lost', end_reason = $2, ended_ms = {now} "
    "WHERE state IN ('creating', 'running') AND host_key = $1 RETURNING id";
static const char sql_execs_unknown_expired[] =
    "UPDATE sandbox_execs SET state = 'unknown', ended_ms = {now} "
    "WHERE state = 'running' AND sandbox_id IN (SELECT id FROM sandboxes "
    "WHERE state IN ('creating', 'running') AND lease_end_ms + $1 < {now})";
static const char sql_expire[] =
    "UPDATE sandboxes SET state = 'expired', end_reason = 'the lease ended', ended_ms = {now} "
    "WHERE state IN ('creating', 'running') AND lease_end_ms + $1 < {now} RETURNING id";

struct end_arg {
	int64_t id;
	const char *state, *reason;
};

static int end_tx(struct store *st, void *arg, struct err *e)
{
	struct end_arg *a = arg;
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(a->id), sv_text(a->state), sv_text(a->reason)};

	if (store_q(st, sql_end_one, p, 3, &rows, e) < 0)
		return err_wrap(e, "end sandbox %lld", (long long)a->id);
	size_t n = rows->nrows;
	store_rows_free(rows);
	if (n == 0)
		return store_fail(e, STORE_NOT_FOUND, "no live sandbox %lld", (long long)a->id);
	if (store_q(st, sql_execs_unknown_one, p, 1, NULL, e) < 0)
		return err_wrap(e, "execs of sandbox %lld", (long long)a->id);
	return 0;
}

int store_sandbox_end(struct store *st, int64_t id, const char *state, const char *reason,
		      struct err *e)
{
	struct end_arg a = {.id = id, .state = state, .reason = reason};
	int rc;

	if (!is_end_state(state))
		return store_fail(e, STORE_INVALID, "sandbox end state '%.32s'",
				  state ? state : "(null)");
	if ((rc = store_check_label("reason", reason, STORE_TEXT_MAX, false, e)) < 0)
		return rc;
	return store_tx_run(st, STORE_TX_WRITE_LOSSY, end_tx, &a, e);
}

static const char sql_set_lease[] =
    "UPDATE sandboxes SET lease_end_ms = {now} + CAST($2 AS BIGINT) * 1000 "
    "WHERE id = $1 AND state IN ('creating', 'running') RETURNING id";

int store_sandbox_set_lease(struct store *st, int64_t id, int64_t timeout_s, struct err *e)
{
	struct store_rows *rows = NULL;

	if (timeout_s < 0 || timeout_s > STORE_SANDBOX_TIMEOUT_MAX)
		return store_fail(e, STORE_INVALID, "sandbox: a lease of %lld s (0 to %lld)",
				  (long long)timeout_s, (long long)STORE_SANDBOX_TIMEOUT_MAX);
	struct store_val p[] = {sv_int(id), sv_int(timeout_s)};
	if (q_lossy(st, sql_set_lease, p, 2, &rows, e) < 0)
		return err_wrap(e, "lease of sandbox %lld", (long long)id);
	size_t n = rows->nrows;
	store_rows_free(rows);
	if (n == 0)
		return store_fail(e, STORE_NOT_FOUND, "no live sandbox %lld", (long long)id);
	return 0;
}

/* Many sandboxes end at once: their running execs, then them. */
struct end_many_arg {
	const char *execs_sql, *sandboxes_sql;
	struct store_val p[2];
	size_t np;
	int64_t n;
};

static int end_many_tx(struct store *st, void *arg, struct err *e)
{
	struct end_many_arg *a = arg;
	struct store_rows *rows = NULL;

	if (store_q(st, a->execs_sql, a->p, 1, NULL, e) < 0)
		return err_wrap(e, "execs of ended sandboxes");
	if (store_q(st, a->sandboxes_sql, a->p, a->np, &rows, e) < 0)
		return err_wrap(e, "end sandboxes");
	a->n = (int64_t)rows->nrows;
	store_rows_free(rows);
	return 0;
}

int store_sandbox_lose_host(struct store *st, const char *host_key, const char *reason,
			    int64_t *ret_n, struct err *e)
{
	struct end_many_arg a = {
	    .execs_sql = sql_execs_unknown_host,
	    .sandboxes_sql = sql_lose_host,
	    .p = {sv_text(host_key), sv_text(reason ? reason : "its host was lost")},
	    .np = 2};
	int rc;

	if ((rc = store_check_label("host", host_key, STORE_LABEL_CAP, true, e)) < 0 ||
	    (rc = store_check_label("reason", reason, STORE_TEXT_MAX, false, e)) < 0 ||
	    (rc = store_tx_run(st, STORE_TX_WRITE, end_many_tx, &a, e)) < 0)
		return rc;
	if (ret_n)
		*ret_n = a.n;
	return 0;
}

int store_sandbox_sweep(struct store *st, int64_t grace_ms, int64_t *ret_n, struct err *e)
{
	struct end_many_arg a = {.execs_sql = sql_execs_unknown_expired,
				 .sandboxes_sql = sql_expire,
				 .p = {sv_int(grace_ms)},
				 .np = 1};
	int rc;

	if (grace_ms < 0 || grace_ms > STORE_SANDBOX_TIMEOUT_MAX * 1000)
		return store_fail(e, STORE_INVALID, "sweep: grace of %lld ms", (long long)grace_ms);
	if ((rc = store_tx_run(st, STORE_TX_WRITE, end_many_tx, &a, e)) < 0)
		return rc;
	if (ret_n)
		*ret_n = a.n;
	return 0;
}

/* ---- execs ---- */

static const char sql_exec_add[] =
    "INSERT INTO sandbox_execs (sandbox_id, argv, cwd, state, started_ms) "
    "SELECT CAST($1 AS BIGINT), CAST($2 AS TEXT), CAST($3 AS TEXT), 'running', {now} "
    "WHERE EXISTS (SELECT 1 FROM sandboxes WHERE id = $1 AND state = 'running') RETURNING id";

int store_exec_begin(struct store *st, int64_t sandbox_id, const char *argv_json, const char *cwd,
		     int64_t *ret_exec_id, struct err *e)
{
	struct store_rows *rows = NULL;
	int rc;

	if (!argv_json)
		return store_fail(e, STORE_INVALID, "argv: missing");
	if ((rc = check_json("argv", argv_json, JSON_ARGV, STORE_SANDBOX_JSON_MAX + 1, e)) < 0 ||
	    (rc = store_check_label("cwd", cwd, STORE_SANDBOX_PATH_MAX, false, e)) < 0)
		return rc;
	struct store_val p[] = {sv_int(sandbox_id), sv_text(argv_json), sv_text(cwd)};
	if (q_lossy(st, sql_exec_add, p, 3, &rows, e) < 0)
		return err_wrap(e, "exec in sandbox %lld", (long long)sandbox_id);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no running sandbox %lld",
				  (long long)sandbox_id);
	}
	*ret_exec_id = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return 0;
}

static const char sql_exec_done[] =
    "UPDATE sandbox_execs SET state = 'done', status = $2, exit_code = $3, signal = $4, "
    "limits_hit = $5, timed_out = $6, cpu_ms = $7, wall_ms = $8, peak_memory_kib = $9, "
    "peak_pids = $10, stdout_bytes = $11, stderr_bytes = $12, gib_seconds = $13, "
    "ended_ms = {now} WHERE id = $1 AND state IN ('running', 'unknown') RETURNING sandbox_id";
static const char sql_sandbox_charge[] =
    "UPDATE sandboxes SET execs = execs + 1, cpu_ms = cpu_ms + $2, gib_seconds = gib_seconds + $3 "
    "WHERE id = $1";

struct exec_end_arg {
	int64_t id;
	const struct store_exec_result *r;
	const char *limits;
};

static int exec_end_tx(struct store *st, void *arg, struct err *e)
{
	struct exec_end_arg *a = arg;
	const struct store_exec_result *r = a->r;
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(a->id),
				sv_text(r->status),
				r->exit_code >= 0 ? sv_int(r->exit_code) : sv_null(),
				r->signal > 0 ? sv_int(r->signal) : sv_null(),
				sv_text(a->limits),
				sv_int(r->timed_out),
				sv_int(r->cpu_ms),
				sv_int(r->wall_ms),
				sv_int(r->peak_memory_kib),
				sv_int(r->peak_pids),
				sv_int(r->stdout_bytes),
				sv_int(r->stderr_bytes),
				sv_real(r->gib_seconds)};

	if (store_q(st, sql_exec_done, p, 13, &rows, e) < 0)
		return err_wrap(e, "exec %lld", (long long)a->id);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no unfinished exec %lld", (long long)a->id);
	}
	int64_t sandbox = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	struct store_val pc[] = {sv_int(sandbox), sv_int(r->cpu_ms), sv_real(r->gib_seconds)};
	if (store_q(st, sql_sandbox_charge, pc, 3, NULL, e) < 0)
		return err_wrap(e, "usage of sandbox %lld", (long long)sandbox);
	return 0;
}

int store_exec_end(struct store *st, int64_t exec_id, const struct store_exec_result *r,
		   struct err *e)
{
	struct exec_end_arg a = {
	    .id = exec_id, .r = r, .limits = r->limits_hit_json ? r->limits_hit_json : "[]"};
	int rc;

	if ((rc = store_check_label("status", r->status, 32, true, e)) < 0 ||
	    (rc = check_json("limits hit", a.limits, JSON_LIMITS, 256, e)) < 0)
		return rc;
	if (r->cpu_ms < 0 || r->wall_ms < 0 || r->peak_memory_kib < 0 || r->peak_pids < 0 ||
	    r->stdout_bytes < 0 || r->stderr_bytes < 0 || !(r->gib_seconds >= 0) ||
	    r->gib_seconds > 1e15)
		return store_fail(e, STORE_INVALID, "exec %lld: a negative or unbounded usage",
				  (long long)exec_id);
	return store_tx_run(st, STORE_TX_WRITE_LOSSY, exec_end_tx, &a, e);
}

static const char sql_exec_list[] =
    "SELECT id, sandbox_id, state, argv, cwd, status, exit_code, signal, limits_hit, timed_out, "
    "cpu_ms, wall_ms, peak_memory_kib, peak_pids, stdout_bytes, stderr_bytes, gib_seconds, "
    "started_ms, ended_ms FROM sandbox_execs WHERE sandbox_id = $1 AND id > $2 "
    "ORDER BY id LIMIT $3";

void store_exec_row_clear(struct store_exec_row *r)
{
	if (!r)
		return;
	free(r->argv_json);
	r->argv_json = NULL;
}

int store_exec_list(struct store *st, int64_t sandbox_id, int64_t after_id,
		    struct store_exec_row *rows, size_t cap, size_t *ret_n, struct err *e)
{
	struct store_rows *res = NULL;
	size_t n = 0;

	if (cap == 0 || cap > 10000)
		return store_fail(e, STORE_INVALID, "execs: cap %zu", cap);
	struct store_val p[] = {sv_int(sandbox_id), sv_int(after_id), sv_int((int64_t)cap)};
	if (store_q(st, sql_exec_list, p, 3, &res, e) < 0)
		return err_wrap(e, "execs of sandbox %lld", (long long)sandbox_id);
	for (; n < res->nrows && n < cap; n++) {
		struct store_exec_row *x = &rows[n];
		memset(x, 0, sizeof(*x));
		x->exec_id = store_col_int(res, n, 0);
		x->sandbox_id = store_col_int(res, n, 1);
		store_col_copy(res, n, 2, x->state, sizeof(x->state));
		x->argv_json = strdup(store_col_text(res, n, 3));
		store_col_copy(res, n, 4, x->cwd, sizeof(x->cwd));
		store_col_copy(res, n, 5, x->status, sizeof(x->status));
		x->exit_code =
		    store_rows_at(res, n, 6)->t == SV_NULL ? -1 : (int)store_col_int(res, n, 6);
		x->signal = (int)store_col_int(res, n, 7);
		store_col_copy(res, n, 8, x->limits_hit_json, sizeof(x->limits_hit_json));
		x->timed_out = store_col_int(res, n, 9) != 0;
		x->cpu_ms = store_col_int(res, n, 10);
		x->wall_ms = store_col_int(res, n, 11);
		x->peak_memory_kib = store_col_int(res, n, 12);
		x->peak_pids = store_col_int(res, n, 13);
		x->stdout_bytes = store_col_int(res, n, 14);
		x->stderr_bytes = store_col_int(res, n, 15);
		double gib = store_col_real(res, n, 16);
		x->gib_seconds = isnan(gib) ? 0 : gib;
		x->started_ms = store_col_int(res, n, 17);
		x->ended_ms = store_col_int(res, n, 18);
		if (!x->argv_json) {
			for (size_t k = 0; k <= n; k++)
				store_exec_row_clear(&rows[k]);
			store_rows_free(res);
			return err_set(e, ENOMEM, "execs of sandbox %lld", (long long)sandbox_id);
		}
	}
	store_rows_free(res);
	*ret_n = n;
	return 0;
}

static const char sql_sandbox_template[] =
    "UPDATE sandboxes SET template = $2 WHERE id = $1 RETURNING id";

int store_sandbox_set_template(struct store *st, int64_t id, const char *name, int version_no,
			       struct err *e)
{
	struct store_rows *rows = NULL;
	char pin[STORE_TEMPLATE_NAME_MAX + 16];

	if (!store_template_name_ok(name) || version_no < 1)
		return store_fail(e, STORE_INVALID, "template '%.80s@%d'", name, version_no);
	snprintf(pin, sizeof(pin), "%s@%d", name, version_no);
	struct store_val p[] = {sv_int(id), sv_text(pin)};
	if (store_q(st, sql_sandbox_template, p, 2, &rows, e) < 0)
		return err_wrap(e, "sandbox %lld template", (long long)id);
	size_t n = rows->nrows;
	store_rows_free(rows);
	return n ? 0 : store_fail(e, STORE_NOT_FOUND, "no sandbox %lld", (long long)id);
}
