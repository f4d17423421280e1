/* Job store backend: embedded SQLite (one file, WAL mode, one host). */
#include "store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * Durability: WAL with synchronous=FULL, so a commit that returned is on
 * disk (fsync of the WAL) before the API acknowledges anything.  Writers
 * are serialised by SQLite's one write lock: a write transaction takes it
 * up front (BEGIN IMMEDIATE) so that a claim's read and update are one
 * atomic step and no transaction has to be upgraded from read to write
 * (which is where SQLite gives up with SQLITE_BUSY instead of waiting).
 * Several processes on one host may share the file.
 */

#define BUSY_TIMEOUT_MS 30000

/*
 * The oldest SQLite this file works with: its SQL has RETURNING (3.35.0)
 * and upserts (ON CONFLICT ... DO, 3.24.0), and sq_open() passes
 * SQLITE_OPEN_EXRESCODE (3.37.0).  meson.build asks for it at build time,
 * but a binary may meet an older library at run time, where a submission
 * would fail on a syntax error mid-request: sq_open() refuses it, by name.
 */
#define SQ_MIN_VERSION	      "3.37.0"
#define SQ_MIN_VERSION_NUMBER 3037000

/* A database file's writers in this process (see acquire_write). */
struct sq_file {
	struct sq_file *next;
	pthread_mutex_t lock;
	pthread_cond_t free;
	bool busy;
	char path[];
};

static pthread_mutex_t files_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sq_file *files;

struct sq_conn {
	sqlite3 *db;
	struct sq_file *file;
	bool holds_write; /* file->busy is ours, from BEGIN IMMEDIATE to its end */
	bool lossy;	  /* synchronous=NORMAL for this transaction (STORE_TX_WRITE_LOSSY) */
	/* Every statement run on this connection, prepared once (store_int.h,
	 * struct store_ops.query): keys are the common layer's string
	 * literals, so the cache holds at most the store's statements and
	 * grows to hold them all rather than prepare any twice. */
	struct sq_cached {
		const char *key;
		sqlite3_stmt *stmt;
	} * cache;
	size_t ncache, capcache;
};

static const struct store_dialect sqlite_dialect = {
    /* julianday('now') carries milliseconds; 2440587.5 is the Unix epoch's. */
    .now = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
    .skip_locked = "",
    .id = "INTEGER PRIMARY KEY",
    .blob = "BLOB",
    .schema_lock = "",
    .student_lock = "", /* BEGIN IMMEDIATE: one writer at a time */
};

static bool is_transient(int rc)
{
	rc &= 0xff;
	return rc == SQLITE_BUSY || rc == SQLITE_LOCKED;
}

static int sq_fail(struct sq_conn *c, int rc, bool *transient, struct err *e, const char *what)
{
	if (transient)
		*transient = is_transient(rc);
	return err_set(e, 0, "sqlite: %s: %s", what,
		       c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc));
}

static pthread_mutex_t create_lock = PTHREAD_MUTEX_INITIALIZER; /* see sq_open */

/* The entry of `path`, made on first use and kept for the process's life. */
static struct sq_file *file_of(const char *path)
{
	struct sq_file *f;

	pthread_mutex_lock(&files_lock);
	for (f = files; f && strcmp(f->path, path) != 0; f = f->next)
		;
	if (!f && (f = calloc(1, sizeof(*f) + strlen(path) + 1))) {
		pthread_condattr_t a;
		pthread_condattr_init(&a);
		pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
		pthread_cond_init(&f->free, &a);
		pthread_condattr_destroy(&a);
		pthread_mutex_init(&f->lock, NULL);
		strcpy(f->path, path);
		f->next = files;
		files = f;
	}
	pthread_mutex_unlock(&files_lock);
	return f;
}

/*
 * The writers of one process (the API's threads) take turns on their
 * file's flag before BEGIN IMMEDIATE, so the write lock passes to the next
 * one as soon as it is released.  Without it they wait in SQLite's busy
 * handler, which sleeps 1, 2, 5, 10 ... 100 ms between tries: the lock,
 * held about a millisecond per submission, idles while its waiters sleep,
 * and an unlucky one waits hundreds of milliseconds.  Writers of other
 * processes (workers) still meet at SQLite's lock.  The wait is bounded:
 * past it the writer goes on to SQLite's lock and busy timeout, as it
 * would without the flag (so a transaction left open on another
 * connection of this process ends in SQLITE_BUSY, not in a hang).
 */
static void acquire_write(struct sq_conn *c)
{
	struct sq_file *f = c->file;
	struct timespec until;
	int rc = 0;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += BUSY_TIMEOUT_MS / 1000;
	pthread_mutex_lock(&f->lock);
	while (f->busy && rc == 0)
		rc = pthread_cond_timedwait(&f->free, &f->lock, &until);
	c->holds_write = !f->busy;
	if (c->holds_write)
		f->busy = true;
	pthread_mutex_unlock(&f->lock);
}

static void release_write(struct sq_conn *c)
{
	struct sq_file *f = c->file;

	if (!c->holds_write)
		return;
	c->holds_write = false;
	pthread_mutex_lock(&f->lock);
	f->busy = false;
	pthread_cond_signal(&f->free);
	pthread_mutex_unlock(&f->lock);
}

static bool sq_accepts(const char *url)
{
	return strncmp(url, "sqlite:", 7) == 0;
}

static void sq_close(void *conn)
{
	struct sq_conn *c = conn;

	if (!c)
		return;
	for (size_t i = 0; i < c->ncache; i++)
		sqlite3_finalize(c->cache[i].stmt);
	free(c->cache);
	sqlite3_close_v2(c->db);
	release_write(c);
	free(c);
}

static int sq_open(const char *url, void **ret_conn, struct err *e)
{
	const char *path = url + 7;
	struct sq_conn *c;

	if (sqlite3_libversion_number() < SQ_MIN_VERSION_NUMBER)
		return err_set(e, 0, "sqlite: the library is SQLite %s; proctor needs %s or newer",
			       sqlite3_libversion(), SQ_MIN_VERSION);
	if (path[0] == '\0')
		return err_set(e, 0, "sqlite: empty path in '%s'", url);
	if (strlen(path) >= STORE_TEXT_MAX)
		return err_set(e, 0, "sqlite: path too long");
	/* SECURITY: the file holds students' submissions and token hashes:
	 * a new database is readable by its owner only, and SQLite gives its
	 * -wal and -shm files the same mode.
	 * SAFETY: only a file that does not exist yet is made here; an
	 * existing one is never opened and closed beside SQLite.  Closing any
	 * descriptor of the database file drops every POSIX lock this process
	 * holds on it, its other connections' included; another process may
	 * then think itself the last one, checkpoint and reset the WAL under
	 * them, and the database is corrupt (sqlite.org/howtocorrupt.html,
	 * 2.2).  The mutex makes this close happen before any other thread of
	 * the process opens the new file. */
	pthread_mutex_lock(&create_lock);
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600), saved = errno;
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&create_lock);
	if (fd < 0 && saved != EEXIST)
		return err_set(e, saved, "sqlite: '%s'", path);
	c = calloc(1, sizeof(*c));
	if (!c || !(c->file = file_of(path))) {
		free(c);
		return err_set(e, ENOMEM, "sqlite");
	}
	int rc = sqlite3_open_v2(path, &c->db,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
				     SQLITE_OPEN_EXRESCODE,
				 NULL);
	if (rc != SQLITE_OK) {
		sq_fail(c, rc, NULL, e, "open");
		sq_close(c);
		return err_wrap(e, "'%s'", path);
	}
	sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
	char *msg = NULL;
	rc = sqlite3_exec(
	    c->db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;",
	    NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		err_set(e, 0, "sqlite: '%s': pragmas: %s", path, msg ? msg : sqlite3_errstr(rc));
		sqlite3_free(msg);
		sq_close(c);
		return -1;
	}
	*ret_conn = c;
	return 0;
}

static int sq_simple(struct sq_conn *c, const char *sql, bool *transient, struct err *e)
{
	int rc = sqlite3_exec(c->db, sql, NULL, NULL, NULL);

	if (rc != SQLITE_OK)
		return sq_fail(c, rc, transient, e, sql);
	return 0;
}

/* After a write transaction: the next writer's turn, and durable commits again. */
static void end_tx(struct sq_conn *c)
{
	release_write(c);
	if (c->lossy) {
		c->lossy = false;
		sqlite3_exec(c->db, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
	}
}

static int sq_begin(void *conn, enum store_tx mode, bool *transient, struct err *e)
{
	struct sq_conn *c = conn;

	if (mode == STORE_TX_READ)
		return sq_simple(c, "BEGIN DEFERRED", transient, e);
	/* SAFETY: as PostgreSQL's synchronous_commit=off (pg.c), a lossy
	 * write (a claim) is committed without its fsync; the WAL stays
	 * consistent, and the next durable commit's fsync covers it too. */
	if (mode == STORE_TX_WRITE_LOSSY &&
	    sq_simple(c, "PRAGMA synchronous=NORMAL", transient, e) == 0)
		c->lossy = true;
	acquire_write(c);
	if (sq_simple(c, "BEGIN IMMEDIATE", transient, e) < 0) {
		end_tx(c);
		return -1;
	}
	return 0;
}

static int sq_commit(void *conn, bool *transient, struct err *e)
{
	struct sq_conn *c = conn;
	int rc = sq_simple(c, "COMMIT", transient, e);

	if (sqlite3_get_autocommit(c->db))
		end_tx(c);
	return rc;
}

static void sq_rollback(void *conn)
{
	struct sq_conn *c = conn;

	if (!sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	end_tx(c);
}

static int sq_exec_script(void *conn, const char *sql, struct err *e)
{
	return sq_simple(conn, sql, NULL, e);
}

static int sq_stmt(struct sq_conn *c, const char *key, sqlite3_stmt **ret, bool *cached,
		   struct err *e)
{
	for (size_t i = 0; i < c->ncache; i++)
		if (c->cache[i].key == key) {
			*ret = c->cache[i].stmt;
			*cached = true;
			return 0;
		}
	char *sql = store_sql_expand(&sqlite_dialect, key, true);
	if (!sql)
		return err_set(e, ENOMEM, "sqlite: expand");
	sqlite3_stmt *stmt = NULL;
	int rc = sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, NULL);
	if (rc != SQLITE_OK) {
		sq_fail(c, rc, NULL, e, "prepare");
		err_wrap(e, "%.200s", sql);
		free(sql);
		return -1;
	}
	free(sql);
	if (c->ncache == c->capcache) {
		size_t cap = c->capcache ? 2 * c->capcache : 32;
		struct sq_cached *n = realloc(c->cache, cap * sizeof(*n));
		if (n) {
			c->cache = n;
			c->capcache = cap;
		}
	}
	/* Out of memory: run it uncached, finalized after this one use. */
	*cached = c->ncache < c->capcache;
	if (*cached)
		c->cache[c->ncache++] = (struct sq_cached){.key = key, .stmt = stmt};
	*ret = stmt;
	return 0;
}

static int sq_bind(sqlite3_stmt *s, const struct store_val *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int idx = (int)i + 1, rc;
		switch (p[i].t) {
		case SV_INT:
			rc = sqlite3_bind_int64(s, idx, p[i].i);
			break;
		case SV_REAL:
			rc = isnan(p[i].r) ? sqlite3_bind_null(s, idx)
					   : sqlite3_bind_double(s, idx, p[i].r);
			break;
		case SV_TEXT:
			rc = sqlite3_bind_text64(s, idx, p[i].s, p[i].len, SQLITE_STATIC,
						 SQLITE_UTF8);
			break;
		case SV_BLOB:
			rc = p[i].len ? sqlite3_bind_blob64(s, idx, p[i].s, p[i].len, SQLITE_STATIC)
				      : sqlite3_bind_zeroblob(s, idx, 0);
			break;
		default:
			rc = sqlite3_bind_null(s, idx);
		}
		if (rc != SQLITE_OK)
			return rc;
	}
	return SQLITE_OK;
}

static int sq_query(void *conn, const char *sql, const struct store_val *params, size_t nparams,
		    struct store_rows **ret_rows, bool *transient, struct err *e)
{
	struct sq_conn *c = conn;
	sqlite3_stmt *s = NULL;
	bool cached = false;
	struct store_rows *rows = NULL;
	struct store_val vals[32];

	if (sq_stmt(c, sql, &s, &cached, e) < 0)
		return -1;
	int rc = sq_bind(s, params, nparams);
	if (rc != SQLITE_OK) {
		sq_fail(c, rc, transient, e, "bind");
		goto out;
	}
	int ncols = sqlite3_column_count(s);
	if (ncols > (int)(sizeof(vals) / sizeof(vals[0]))) {
		rc = SQLITE_TOOBIG;
		err_set(e, 0, "sqlite: %d columns", ncols);
		goto out;
	}
	if (ret_rows) {
		rows = store_rows_new((size_t)ncols);
		if (!rows) {
			rc = SQLITE_NOMEM;
			err_set(e, ENOMEM, "sqlite: rows");
			goto out;
		}
	}
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (!rows)
			continue;
		for (int i = 0; i < ncols; i++) {
			struct store_val *v = &vals[i];
			switch (sqlite3_column_type(s, i)) {
			case SQLITE_INTEGER:
				*v = sv_int(sqlite3_column_int64(s, i));
				break;
			case SQLITE_FLOAT:
				*v = sv_real(sqlite3_column_double(s, i));
				break;
			case SQLITE_TEXT:
				v->t = SV_TEXT;
				v->s = (const char *)sqlite3_column_text(s, i);
				v->len = (size_t)sqlite3_column_bytes(s, i);
				break;
			case SQLITE_BLOB:
				v->t = SV_BLOB;
				v->s = sqlite3_column_blob(s, i);
				v->len = (size_t)sqlite3_column_bytes(s, i);
				break;
			default:
				*v = sv_null();
			}
		}
		if (store_rows_add(rows, vals) < 0) {
			rc = SQLITE_NOMEM;
			err_set(e, ENOMEM, "sqlite: rows");
			goto out;
		}
	}
	if (rc != SQLITE_DONE) {
		sq_fail(c, rc, transient, e, "step");
		goto out;
	}
	rc = SQLITE_OK;
out:
	if (cached) {
		sqlite3_reset(s);
		sqlite3_clear_bindings(s);
	} else {
		sqlite3_finalize(s);
	}
	if (rc != SQLITE_OK) {
		store_rows_free(rows);
		return -1;
	}
	if (ret_rows)
		*ret_rows = rows;
	return 0;
}

const struct store_ops store_sqlite_ops = {
    .name = "sqlite",
    .dialect = &sqlite_dialect,
    .accepts = sq_accepts,
    .open = sq_open,
    .close = sq_close,
    .begin = sq_begin,
    .commit = sq_commit,
    .rollback = sq_rollback,
    .query = sq_query,
    .exec_script = sq_exec_script,
};
