/* The job store's backend interface: typed SQL values, result rows and the ops table. */
#ifndef PROCTOR_STORE_INT_H
#define PROCTOR_STORE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "err.h"
#include "store.h"

/*
 * The common layer (store.c, store_jobs.c, store_catalog.c) writes SQL once,
 * in PostgreSQL's spelling ($1 parameters), with dialect tokens that each
 * backend expands through its `struct store_dialect`:
 *   {now}          the database clock in integer milliseconds UTC
 *   {skip_locked}  the lock clause of a claim's inner SELECT
 *   {id}           an auto-assigned 64-bit primary key column type
 *   {blob}         a byte-string column type
 * A backend runs statements with typed parameters and hands back every row
 * materialised (results are small, blobs are capped).
 */

enum store_vtype {
	SV_NULL = 0,
	SV_INT,
	SV_REAL,
	SV_TEXT,
	SV_BLOB,
};

/* One parameter or column value.  In parameters, pointers are borrowed;
 * in rows, they point into the row set (valid until store_rows_free). */
struct store_val {
	enum store_vtype t;
	int64_t i;
	double r;
	const char *s; /* SV_TEXT: NUL-terminated; SV_BLOB: bytes */
	size_t len;
};

static inline struct store_val sv_int(int64_t i)
{
	return (struct store_val){.t = SV_INT, .i = i};
}
static inline struct store_val sv_real(double r)
{
	return (struct store_val){.t = SV_REAL, .r = r};
}
/* NULL text becomes SQL NULL. */
static inline struct store_val sv_text(const char *s)
{
	return s ? (struct store_val){.t = SV_TEXT, .s = s, .len = strlen(s)}
		 : (struct store_val){.t = SV_NULL};
}
static inline struct store_val sv_blob(const void *p, size_t len)
{
	return (struct store_val){.t = SV_BLOB, .s = p, .len = len};
}
static inline struct store_val sv_null(void)
{
	return (struct store_val){.t = SV_NULL};
}

/* Rows of one statement, row-major; owned, free with store_rows_free(). */
struct store_rows {
	size_t nrows, ncols, caprows;
	struct store_val *v; /* nrows * ncols */
	char **bufs;	     /* what the values point into */
	size_t nbufs, capbufs;
};
struct store_rows *store_rows_free(struct store_rows *r);
/* Column c of row r; an SV_NULL value past the end. */
const struct store_val *store_rows_at(const struct store_rows *rows, size_t r, size_t c);
/* Helpers used by backends to build rows. */
struct store_rows *store_rows_new(size_t ncols);
int store_rows_add(struct store_rows *rows, const struct store_val *vals); /* copies; -1 on OOM */

/* Column accessors: an integer (0 for NULL), a real (NaN for NULL), text ("" for NULL). */
int64_t store_col_int(const struct store_rows *rows, size_t r, size_t c);
double store_col_real(const struct store_rows *rows, size_t r, size_t c);
const char *store_col_text(const struct store_rows *rows, size_t r, size_t c);
/* Copy text into a fixed buffer, cut to fit. */
void store_col_copy(const struct store_rows *rows, size_t r, size_t c, char *dst, size_t cap);

struct store_dialect {
	const char *now;
	const char *skip_locked;
	const char *id;
	const char *blob;
	/* A script run first in the migration transaction so that processes
	 * starting together migrate one at a time ("" when the write
	 * transaction already does). */
	const char *schema_lock;
	/* Run in a submission's transaction before its policy check ($1 the
	 * assignment version, $2 the student or NULL) so that one student's
	 * checked submissions to an assignment wait for each other ("" when
	 * the write transaction already serializes every submission). */
	const char *student_lock;
};

enum store_tx {
	STORE_TX_READ,	/* a consistent snapshot for several reads */
	STORE_TX_WRITE, /* takes the write lock up front (SQLite BEGIN IMMEDIATE) */
	/* A write whose loss in a database crash is harmless (a claim: its
	 * worker is fenced at its next heartbeat or completion; a sandbox's
	 * records, sandboxes.c): PostgreSQL does not wait for the WAL flush
	 * at commit, SQLite commits without its fsync (synchronous=NORMAL);
	 * the next durable commit flushes it. */
	STORE_TX_WRITE_LOSSY,
};

/* The verbs of a backend.  Fallible ones return 0 or -1 and fill `e`;
 * `*transient` (may be NULL) is set when the failure is worth a retry of
 * the whole transaction (SQLite busy, PostgreSQL deadlock or serialization
 * failure). */
struct store_ops {
	const char *name;
	const struct store_dialect *dialect;
	/* Does this backend take the URL? */
	bool (*accepts)(const char *url);
	int (*open)(const char *url, void **ret_conn, struct err *e);
	void (*close)(void *conn);
	int (*begin)(void *conn, enum store_tx mode, bool *transient, struct err *e);
	int (*commit)(void *conn, bool *transient, struct err *e);
	void (*rollback)(void *conn);
	/*
	 * Run one statement of the common layer, unexpanded: the backend
	 * expands it (store_sql_expand) and caches the prepared statement by
	 * the string's address, so `sql` must be a string literal.  Rows go
	 * to *ret_rows when it is not NULL.  Without ret_rows, inside a
	 * transaction, a backend may send it with the next statement or the
	 * commit (pg.c: one round trip for several), so its failure may be
	 * that later call's; the parameters need not outlive the call.
	 */
	int (*query)(void *conn, const char *sql, const struct store_val *params, size_t nparams,
		     struct store_rows **ret_rows, bool *transient, struct err *e);
	/* Run a script of several statements with no parameters and no rows. */
	int (*exec_script)(void *conn, const char *sql, struct err *e);
	/* How many times this connection has waited for its server's answer
	 * (connecting aside); NULL for an embedded database (SQLite). */
	uint64_t (*round_trips)(void *conn);
};

extern const struct store_ops store_sqlite_ops;
extern const struct store_ops store_pg_ops;

struct store {
	const struct store_ops *ops;
	void *conn;
	bool in_tx;
	bool transient; /* the last statement failed in a way worth a retry */
};

/*
 * Expand the dialect tokens and, for SQLite, $N into ?N.  Returns a
 * malloc'd string or NULL on OOM.
 */
char *store_sql_expand(const struct store_dialect *d, const char *sql, bool qmark);

/* Run one statement of the common layer (expanding and caching by `sql`'s
 * address).  ret_rows may be NULL. */
int store_q(struct store *st, const char *sql, const struct store_val *params, size_t nparams,
	    struct store_rows **ret_rows, struct err *e);

/*
 * Run fn(st, arg, e) inside a transaction: commit when it returns 0 or a
 * positive value, roll back when negative; a transient failure is retried
 * a few times from the start.  Returns what fn returned, or -1.
 */
int store_tx_run(struct store *st, enum store_tx mode,
		 int (*fn)(struct store *, void *, struct err *), void *arg, struct err *e);

/* The connection's round trips so far (store_ops.round_trips; 0 for SQLite):
 * what a request costs on a networked database, for tests and benchmarks. */
uint64_t store_round_trips(const struct store *st);

/* Begin/commit/rollback by hand (tests use them to hold a transaction open). */
int store_tx_begin(struct store *st, enum store_tx mode, struct err *e);
int store_tx_commit(struct store *st, struct err *e);
void store_tx_rollback(struct store *st);

/* Fill `e` from a format and return `status` (a negative enum store_status). */
int store_fail(struct err *e, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Bytes a label (a student, an idempotency key, a worker, a host, an
 * assignment's name) may take with its NUL: store.h's char[256] fields. */
#define STORE_LABEL_CAP 256

/*
 * The store's one check of text it is given to keep (names, labels, keys,
 * URLs, reasons): fewer than `cap` bytes and no control character, so
 * nothing read back later breaks a line of a log, a terminal or a CSV.
 * NULL is accepted unless `required`; a required one may not be empty
 * either.  0, or STORE_INVALID with `e` filled.
 */
int store_check_label(const char *what, const char *s, size_t cap, bool required, struct err *e);

/*
 * The state a jobs.state value names.  Any other text is STORE_ERROR (our
 * failure, never a guess): the schema admits only the four names, so
 * another means a database this code does not understand.
 */
int store_job_state_parse(const char *name, enum store_job_state *ret, struct err *e);

/* Random bytes as hex (2*n chars + NUL). */
int store_random_hex(char *dst, size_t nbytes, struct err *e);
/* SHA-256 of bytes as hex. */
void store_sha256_hex(const void *data, size_t len, char hex[65]);

/* The migrations, oldest first; store.c applies them. */
struct store_migration {
	int version;
	const char *sql; /* a script with dialect tokens */
};
extern const struct store_migration store_migrations[];
extern const size_t store_migration_count;

/* Blob insert shared by submissions and assignments (inside a transaction). */
int store_blob_put_tx(struct store *st, const void *data, size_t len, char ret_sha256[65],
		      struct err *e);

/*
 * A job's columns in the order store_job_fill() reads them: a statement
 * that selects "SELECT " STORE_JOB_COLUMNS " FROM jobs ..." hands its first
 * row to store_job_fill(), which fills `j` (zeroed first).  -1 (STORE_ERROR)
 * when the row's state is not one this code knows.
 */
#define STORE_JOB_COLUMNS                                                                          \
	"id, submission_id, version_id, state, attempt, max_attempts, not_gradable, error, "       \
	"worker, host, received_ms, queued_ms, started_ms, sandbox_ready_ms, finished_ms, "        \
	"delivered_ms, not_before_ms, lease_expires_ms"
int store_job_fill(const struct store_rows *rows, struct store_job *j, struct err *e);

/* Queue a regrade job of `submission` against `version` (inside a transaction). */
int store_job_add_tx(struct store *st, int64_t submission, int64_t version, int64_t course,
		     int64_t received_ms, int64_t *ret_job, struct err *e);

#endif
