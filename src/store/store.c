/* The job store's common layer: opening by URL, migrations, transactions, rows, SQL dialects. */
#include "store_int.h"

#include <errno.h>
#include <math.h>
#include <nettle/sha2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

static const struct store_ops *const backends[] = {&store_sqlite_ops, &store_pg_ops};

/* ---- rows ---- */

struct store_rows *store_rows_new(size_t ncols)
{
	struct store_rows *r = calloc(1, sizeof(*r));

	if (r)
		r->ncols = ncols;
	return r;
}

struct store_rows *store_rows_free(struct store_rows *r)
{
	if (!r)
		return NULL;
	for (size_t i = 0; i < r->nbufs; i++)
		free(r->bufs[i]);
	free(r->bufs);
	free(r->v);
	free(r);
	return NULL;
}

static int keep_buf(struct store_rows *r, char *buf)
{
	if (r->nbufs == r->capbufs) {
		size_t cap = r->capbufs ? 2 * r->capbufs : 16;
		char **n = realloc(r->bufs, cap * sizeof(*n));
		if (!n)
			return -1;
		r->bufs = n;
		r->capbufs = cap;
	}
	r->bufs[r->nbufs++] = buf;
	return 0;
}

int store_rows_add(struct store_rows *rows, const struct store_val *vals)
{
	if (rows->nrows == rows->caprows) {
		size_t cap = rows->caprows ? 2 * rows->caprows : 8;
		struct store_val *n = realloc(rows->v, cap * rows->ncols * sizeof(*n) + 1);
		if (!n)
			return -1;
		rows->v = n;
		rows->caprows = cap;
	}
	struct store_val *dst = rows->v + rows->nrows * rows->ncols;
	for (size_t c = 0; c < rows->ncols; c++) {
		dst[c] = vals[c];
		if (vals[c].t == SV_TEXT || vals[c].t == SV_BLOB) {
			/* A NUL after blobs too, so text read as a blob is terminated. */
			char *copy = malloc(vals[c].len + 1);
			if (!copy || keep_buf(rows, copy) < 0) {
				free(copy);
				for (size_t k = 0; k < c; k++)
					dst[k].t = SV_NULL;
				return -1;
			}
			if (vals[c].len)
				memcpy(copy, vals[c].s, vals[c].len);
			copy[vals[c].len] = '\0';
			dst[c].s = copy;
		}
	}
	rows->nrows++;
	return 0;
}

const struct store_val *store_rows_at(const struct store_rows *rows, size_t r, size_t c)
{
	static const struct store_val null_val = {.t = SV_NULL};

	if (!rows || r >= rows->nrows || c >= rows->ncols)
		return &null_val;
	return &rows->v[r * rows->ncols + c];
}

int64_t store_col_int(const struct store_rows *rows, size_t r, size_t c)
{
	const struct store_val *v = store_rows_at(rows, r, c);

	if (v->t == SV_INT)
		return v->i;
	if (v->t == SV_REAL && isfinite(v->r))
		return (int64_t)v->r;
	return 0;
}

double store_col_real(const struct store_rows *rows, size_t r, size_t c)
{
	const struct store_val *v = store_rows_at(rows, r, c);

	if (v->t == SV_REAL)
		return v->r;
	if (v->t == SV_INT)
		return (double)v->i;
	return NAN;
}

const char *store_col_text(const struct store_rows *rows, size_t r, size_t c)
{
	const struct store_val *v = store_rows_at(rows, r, c);

	return (v->t == SV_TEXT || v->t == SV_BLOB) ? v->s : "";
}

void store_col_copy(const struct store_rows *rows, size_t r, size_t c, char *dst, size_t cap)
{
	snprintf(dst, cap, "%s", store_col_text(rows, r, c));
}

/* ---- SQL ---- */

char *store_sql_expand(const struct store_dialect *d, const char *sql, bool qmark)
{
	static const struct {
		const char *token;
		size_t off;
	} tokens[] = {
	    {"{now}", offsetof(struct store_dialect, now)},
	    {"{skip_locked}", offsetof(struct store_dialect, skip_locked)},
	    {"{id}", offsetof(struct store_dialect, id)},
	    {"{blob}", offsetof(struct store_dialect, blob)},
	};
	size_t cap = strlen(sql) + 1, len = 0;
	char *out = malloc(cap);

	if (!out)
		return NULL;
	for (const char *p = sql; *p;) {
		const char *rep = NULL;
		size_t skip = 1;
		char one[2] = {*p, '\0'};
		if (*p == '{') {
			for (size_t i = 0; i < sizeof(tokens) / sizeof(tokens[0]); i++) {
				size_t tl = strlen(tokens[i].token);
				if (strncmp(p, tokens[i].token, tl) == 0) {
					rep =
					    *(const char *const *)((const char *)d + tokens[i].off);
					skip = tl;
					break;
				}
			}
		} else if (*p == '$' && qmark && p[1] >= '0' && p[1] <= '9') {
			one[0] = '?';
		}
		if (!rep)
			rep = one;
		size_t rl = strlen(rep);
		if (len + rl + 1 > cap) {
			cap = 2 * (len + rl + 1);
			char *n = realloc(out, cap);
			if (!n) {
				free(out);
				return NULL;
			}
			out = n;
		}
		memcpy(out + len, rep, rl);
		len += rl;
		p += skip;
	}
	out[len] = '\0';
	return out;
}

int store_q(struct store *st, const char *sql, const struct store_val *params, size_t nparams,
	    struct store_rows **ret_rows, struct err *e)
{
	st->transient = false;
	return st->ops->query(st->conn, sql, params, nparams, ret_rows, &st->transient, e);
}

int store_tx_begin(struct store *st, enum store_tx mode, struct err *e)
{
	if (st->ops->begin(st->conn, mode, NULL, e) < 0)
		return -1;
	st->in_tx = true;
	return 0;
}

int store_tx_commit(struct store *st, struct err *e)
{
	int rc = st->ops->commit(st->conn, NULL, e);

	if (rc < 0)
		st->ops->rollback(st->conn);
	st->in_tx = false;
	return rc;
}

void store_tx_rollback(struct store *st)
{
	st->ops->rollback(st->conn);
	st->in_tx = false;
}

/*
 * Transient failures (SQLite busy past its timeout, PostgreSQL deadlock or
 * serialization failure) restart the whole transaction: its effects were
 * rolled back, so the function is run again from a clean state.
 */
int store_tx_run(struct store *st, enum store_tx mode,
		 int (*fn)(struct store *, void *, struct err *), void *arg, struct err *e)
{
	/* Inside a transaction already (an admission check of store_submit):
	 * join it; the outer one commits, rolls back and retries. */
	if (st->in_tx)
		return fn(st, arg, e);
	for (int tries = 0;; tries++) {
		bool transient = false;
		if (st->ops->begin(st->conn, mode, &transient, e) < 0) {
			if (transient && tries < 5)
				continue;
			return err_wrap(e, "begin");
		}
		st->in_tx = true;
		st->transient = false;
		int rc = fn(st, arg, e);
		if (rc < 0) {
			st->ops->rollback(st->conn);
			st->in_tx = false;
			/* A deadlock or serialization failure inside: run it again. */
			if (rc == STORE_ERROR && st->transient && tries < 5)
				continue;
			return rc;
		}
		transient = false;
		if (st->ops->commit(st->conn, &transient, e) < 0) {
			st->ops->rollback(st->conn);
			st->in_tx = false;
			if (transient && tries < 5)
				continue;
			return err_wrap(e, "commit");
		}
		st->in_tx = false;
		return rc;
	}
}

/* ---- small helpers ---- */

int store_fail(struct err *e, int status, const char *fmt, ...)
{
	char msg[sizeof(e->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Whose failure it is follows from the status: a name that is not
	 * there or an argument that is refused is the caller's. */
	enum err_kind kind = status == STORE_NOT_FOUND				   ? ERR_NOT_FOUND
			     : status == STORE_INVALID || status == STORE_TOO_LARGE ||
				       status == STORE_REFUSED
				 ? ERR_INPUT
				 : ERR_INTERNAL;
	err_setk(e, kind, 0, "%s", msg);
	return status;
}

/* The fields STORE_LABEL_CAP stands for. */
_Static_assert(sizeof(((struct store_version *)0)->name) == STORE_LABEL_CAP &&
		   sizeof(((struct store_version *)0)->image_pin) == STORE_LABEL_CAP &&
		   sizeof(((struct store_submission_view *)0)->student) == STORE_LABEL_CAP &&
		   sizeof(((struct store_submission_view *)0)->idempotency_key) ==
		       STORE_LABEL_CAP &&
		   sizeof(((struct store_job *)0)->worker) == STORE_LABEL_CAP &&
		   sizeof(((struct store_job *)0)->host) == STORE_LABEL_CAP,
	       "STORE_LABEL_CAP is the size of store.h's label fields");

int store_check_label(const char *what, const char *s, size_t cap, bool required, struct err *e)
{
	if (!s)
		return required ? store_fail(e, STORE_INVALID, "%s: missing", what) : 0;
	size_t n = strnlen(s, cap);
	if (n == cap)
		return store_fail(e, STORE_INVALID, "%s: longer than %zu bytes", what, cap - 1);
	if (required && n == 0)
		return store_fail(e, STORE_INVALID, "%s: empty", what);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return store_fail(e, STORE_INVALID, "%s: control character", what);
	return 0;
}

int store_random_hex(char *dst, size_t nbytes, struct err *e)
{
	unsigned char buf[64];

	if (nbytes > sizeof(buf))
		return err_set(e, EINVAL, "random: %zu bytes", nbytes);
	size_t got = 0;
	while (got < nbytes) {
		ssize_t n = getrandom(buf + got, nbytes - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err_set(e, errno, "getrandom");
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < nbytes; i++)
		snprintf(dst + 2 * i, 3, "%02x", buf[i]);
	dst[2 * nbytes] = '\0';
	return 0;
}

void store_sha256_hex(const void *data, size_t len, char hex[65])
{
	struct sha256_ctx ctx;
	uint8_t md[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, len, data);
	sha256_digest(&ctx, sizeof(md), md);
	for (unsigned i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	hex[64] = '\0';
}

/* ---- opening and migrations ---- */

static const char sql_version_table[] =
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_ms BIGINT "
    "NOT NULL)";
static const char sql_version_get[] = "SELECT COALESCE(MAX(version), 0) FROM schema_version";
static const char sql_version_add[] =
    "INSERT INTO schema_version (version, applied_ms) VALUES ($1, {now})";
static const char sql_now[] = "SELECT {now}";

/* The schema version recorded in the database.  Fails, as any statement
 * would, on a database without the schema_version table (a new one). */
static int version_read(struct store *st, int64_t *ret, struct err *e)
{
	struct store_rows *rows = NULL;

	if (store_q(st, sql_version_get, NULL, 0, &rows, e) < 0)
		return err_wrap(e, "read schema version");
	*ret = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return 0;
}

static int refuse_newer(int64_t have, struct err *e)
{
	return err_set(e, 0,
		       "the database has schema version %lld, newer than this proctor's %d: "
		       "upgrade proctor",
		       (long long)have, STORE_SCHEMA_VERSION);
}

/* Under the schema lock, the version read again: of processes that found
 * the database behind at once, the first migrates and the others find
 * nothing left to do. */
static int migrate_tx(struct store *st, void *arg, struct err *e)
{
	int64_t have = 0;

	if (st->ops->dialect->schema_lock[0] &&
	    st->ops->exec_script(st->conn, st->ops->dialect->schema_lock, e) < 0)
		return err_wrap(e, "schema lock");
	if (st->ops->exec_script(st->conn, sql_version_table, e) < 0)
		return err_wrap(e, "schema_version");
	if (version_read(st, &have, e) < 0)
		return -1;
	if (have > STORE_SCHEMA_VERSION)
		return refuse_newer(have, e);
	for (size_t i = 0; i < store_migration_count; i++) {
		const struct store_migration *m = &store_migrations[i];
		if (m->version <= have)
			continue;
		char *sql = store_sql_expand(st->ops->dialect, m->sql, false);
		if (!sql)
			return err_set(e, ENOMEM, "migration %d", m->version);
		int rc = st->ops->exec_script(st->conn, sql, e);
		free(sql);
		if (rc < 0)
			return err_wrap(e, "migration %d", m->version);
		struct store_val p[] = {sv_int(m->version)};
		if (store_q(st, sql_version_add, p, 1, NULL, e) < 0)
			return err_wrap(e, "record schema version %d", m->version);
	}
	return 0;
}

int store_open(const char *url, struct store **ret, struct err *e)
{
	const struct store_ops *ops = NULL;

	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i]->accepts(url))
			ops = backends[i];
	if (!ops)
		return err_setk(e, ERR_USAGE, 0,
				"database URL: expected sqlite:PATH or postgresql://...");
	struct store *st = calloc(1, sizeof(*st));
	if (!st)
		return err_set(e, ENOMEM, "store");
	st->ops = ops;
	if (ops->open(url, &st->conn, e) < 0) {
		free(st);
		return -1;
	}
	/*
	 * Every connection but the first few after an upgrade finds the
	 * database current: one read, outside any transaction, and it is
	 * ready, with no write lock (SQLite) nor advisory lock (PostgreSQL)
	 * taken, so opening neither waits for writers nor makes them wait (it
	 * was a write transaction under the migration lock for each).  A read
	 * that fails is a new database (no schema_version table); migrate_tx
	 * says what it was if it was something else.
	 */
	int64_t have = 0;
	struct err ignored;
	if (version_read(st, &have, &ignored) < 0)
		have = 0;
	if (have > STORE_SCHEMA_VERSION) {
		refuse_newer(have, e);
		store_close(st);
		return err_wrap(e, "%s schema", ops->name);
	}
	if (have < STORE_SCHEMA_VERSION &&
	    store_tx_run(st, STORE_TX_WRITE, migrate_tx, NULL, e) < 0) {
		store_close(st);
		return err_wrap(e, "%s schema", ops->name);
	}
	*ret = st;
	return 0;
}

struct store *store_close(struct store *st)
{
	if (!st)
		return NULL;
	if (st->in_tx)
		st->ops->rollback(st->conn);
	st->ops->close(st->conn);
	free(st);
	return NULL;
}

uint64_t store_round_trips(const struct store *st)
{
	return st->ops->round_trips ? st->ops->round_trips(st->conn) : 0;
}

const char *store_backend(const struct store *st)
{
	return st->ops->name;
}

int store_now_ms(struct store *st, int64_t *ret_ms, struct err *e)
{
	struct store_rows *rows = NULL;

	if (store_q(st, sql_now, NULL, 0, &rows, e) < 0)
		return err_wrap(e, "database clock");
	*ret_ms = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return 0;
}
