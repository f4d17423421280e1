/* The job store's catalog: courses, hashed tokens, content-addressed blobs, assignment versions. */
#include "store_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

/* ---- courses ---- */

static const char sql_course_get[] = "SELECT id FROM courses WHERE name = $1";
static const char sql_course_add[] =
    "INSERT INTO courses (name, created_ms) VALUES ($1, {now}) ON CONFLICT (name) DO NOTHING";

struct course_arg {
	const char *name;
	bool create;
	int64_t id;
};

static int course_tx(struct store *st, void *arg, struct err *e)
{
	struct course_arg *a = arg;
	struct store_val p[] = {sv_text(a->name)};
	struct store_rows *rows = NULL;

	if (a->create && store_q(st, sql_course_add, p, 1, NULL, e) < 0)
		return err_wrap(e, "add course");
	if (store_q(st, sql_course_get, p, 1, &rows, e) < 0)
		return err_wrap(e, "course");
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no course '%s'", a->name);
	}
	a->id = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return 0;
}

int store_course_ensure(struct store *st, const char *name, bool create, int64_t *ret_id,
			struct err *e)
{
	struct course_arg a = {.name = name, .create = create};
	int rc = store_check_label("course name", name, STORE_TEXT_MAX, true, e);

	if (rc < 0)
		return rc;
	rc = store_tx_run(st, create ? STORE_TX_WRITE : STORE_TX_READ, course_tx, &a, e);
	if (rc < 0)
		return rc;
	*ret_id = a.id;
	return 0;
}

static const char sql_course_by_id[] =
    "SELECT id, name, daily_cpu_cap, created_ms FROM courses WHERE id = $1";
static const char sql_course_cap[] =
    "UPDATE courses SET daily_cpu_cap = $2 WHERE id = $1 RETURNING id";

int store_course_get(struct store *st, int64_t course_id, struct store_course *ret, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(course_id)};

	if (store_q(st, sql_course_by_id, p, 1, &rows, e) < 0)
		return err_wrap(e, "course %lld", (long long)course_id);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no course %lld", (long long)course_id);
	}
	memset(ret, 0, sizeof(*ret));
	ret->course_id = store_col_int(rows, 0, 0);
	store_col_copy(rows, 0, 1, ret->name, sizeof(ret->name));
	ret->daily_cpu_cap = store_col_real(rows, 0, 2);
	ret->created_ms = store_col_int(rows, 0, 3);
	store_rows_free(rows);
	return 0;
}

int store_course_set_cpu_cap(struct store *st, int64_t course_id, double cpu_seconds, struct err *e)
{
	struct store_rows *rows = NULL;

	if (!isnan(cpu_seconds) && (!isfinite(cpu_seconds) || cpu_seconds < 0))
		return store_fail(e, STORE_INVALID, "CPU cap: not a number of seconds");
	struct store_val p[] = {sv_int(course_id), sv_real(cpu_seconds)};
	if (store_q(st, sql_course_cap, p, 2, &rows, e) < 0)
		return err_wrap(e, "course %lld", (long long)course_id);
	size_t n = rows->nrows;
	store_rows_free(rows);
	if (n == 0)
		return store_fail(e, STORE_NOT_FOUND, "no course %lld", (long long)course_id);
	return 0;
}

/* ---- tokens ---- */

static const char *const scope_names[] = {
    [STORE_SCOPE_SUBMIT] = "submit",
    [STORE_SCOPE_INSTRUCTOR] = "instructor",
    [STORE_SCOPE_ADMIN] = "admin",
};

const char *store_scope_name(enum store_scope s)
{
	if ((int)s < STORE_SCOPE_SUBMIT || (int)s > STORE_SCOPE_ADMIN)
		return NULL;
	return scope_names[s];
}

int store_scope_parse(const char *name, enum store_scope *ret, struct err *e)
{
	for (int s = STORE_SCOPE_SUBMIT; s <= STORE_SCOPE_ADMIN; s++)
		if (name && strcmp(name, scope_names[s]) == 0) {
			*ret = (enum store_scope)s;
			return 0;
		}
	return store_fail(e, STORE_INVALID, "scope: expected submit, instructor or admin");
}

#define TOKEN_PREFIX "prt_"
#define SELECTOR_HEX 16
#define SECRET_HEX   64

static const char sql_token_add[] =
    "INSERT INTO tokens (course_id, scope, selector, secret_sha256, created_ms, "
    "daily_spend_micros, max_live_sandboxes) VALUES ($1, $2, $3, $4, {now}, $5, $6) RETURNING id";
static const char sql_token_get[] =
    "SELECT id, course_id, scope, secret_sha256, daily_spend_micros, max_live_sandboxes "
    "FROM tokens WHERE selector = $1 AND revoked_ms IS NULL";
static const char sql_token_revoke[] =
    "UPDATE tokens SET revoked_ms = {now} WHERE id = $1 AND (course_id = $2 OR $2 = 0) "
    "AND revoked_ms IS NULL RETURNING id";
static const char sql_token_limits[] =
    "UPDATE tokens SET daily_spend_micros = $3, max_live_sandboxes = $4 "
    "WHERE id = $1 AND (course_id = $2 OR $2 = 0) AND revoked_ms IS NULL RETURNING id";
static const char sql_token_list[] =
    "SELECT id, scope, selector, created_ms, revoked_ms, daily_spend_micros, max_live_sandboxes "
    "FROM tokens WHERE course_id = $1 ORDER BY id LIMIT $2";

/* A limit as stored: NULL is none (-1 here). */
static struct store_val limit_val(int64_t v)
{
	return v >= 0 ? sv_int(v) : sv_null();
}

static int64_t limit_col(const struct store_rows *rows, size_t r, size_t c)
{
	return store_rows_at(rows, r, c)->t == SV_NULL ? -1 : store_col_int(rows, r, c);
}

static int check_limits(const struct store_token_limits *l, struct err *e)
{
	if (l->daily_spend_micros < -1 || l->daily_spend_micros > STORE_SPEND_MICROS_MAX)
		return store_fail(e, STORE_INVALID, "daily_spend_micros %lld (0 to %lld, or none)",
				  (long long)l->daily_spend_micros, STORE_SPEND_MICROS_MAX);
	if (l->max_live_sandboxes < -1 || l->max_live_sandboxes > STORE_LIVE_SANDBOXES_MAX)
		return store_fail(e, STORE_INVALID, "max_live_sandboxes %lld (0 to %d, or none)",
				  (long long)l->max_live_sandboxes, STORE_LIVE_SANDBOXES_MAX);
	return 0;
}

struct token_arg {
	const char *course;
	const char *scope;
	struct store_token_limits limits;
	char selector[SELECTOR_HEX + 1];
	char secret_hash[65];
	int64_t id;
};

static int token_tx(struct store *st, void *arg, struct err *e)
{
	struct token_arg *a = arg;
	struct course_arg c = {.name = a->course, .create = true};
	struct store_rows *rows = NULL;

	int rc = course_tx(st, &c, e);
	if (rc < 0)
		return rc;
	struct store_val p[] = {sv_int(c.id),
				sv_text(a->scope),
				sv_text(a->selector),
				sv_text(a->secret_hash),
				limit_val(a->limits.daily_spend_micros),
				limit_val(a->limits.max_live_sandboxes)};
	if (store_q(st, sql_token_add, p, 6, &rows, e) < 0)
		return err_wrap(e, "add token");
	a->id = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return 0;
}

int store_token_create(struct store *st, const char *course, enum store_scope scope,
		       char ret_token[STORE_TOKEN_LEN + 1], struct err *e)
{
	return store_token_mint(st, course, scope, NULL, ret_token, NULL, e);
}

int store_token_mint(struct store *st, const char *course, enum store_scope scope,
		     const struct store_token_limits *limits, char ret_token[STORE_TOKEN_LEN + 1],
		     int64_t *ret_id, struct err *e)
{
	struct token_arg a = {.course = course,
			      .scope = store_scope_name(scope),
			      .limits = limits ? *limits : STORE_TOKEN_UNLIMITED};
	char secret[SECRET_HEX + 1];

	if (!a.scope)
		return store_fail(e, STORE_INVALID, "token: bad scope %d", (int)scope);
	int rc = store_check_label("course name", course, STORE_TEXT_MAX, true, e);
	if (rc < 0 || (rc = check_limits(&a.limits, e)) < 0)
		return rc;
	if (store_random_hex(a.selector, SELECTOR_HEX / 2, e) < 0 ||
	    store_random_hex(secret, SECRET_HEX / 2, e) < 0)
		return err_wrap(e, "token");
	store_sha256_hex(secret, SECRET_HEX, a.secret_hash);
	rc = store_tx_run(st, STORE_TX_WRITE, token_tx, &a, e);
	if (rc < 0)
		return rc;
	memcpy(ret_token, TOKEN_PREFIX, 4);
	memcpy(ret_token + 4, a.selector, SELECTOR_HEX);
	memcpy(ret_token + 4 + SELECTOR_HEX, secret, SECRET_HEX + 1);
	if (ret_id)
		*ret_id = a.id;
	return 0;
}

int store_token_set_limits(struct store *st, int64_t course_id, int64_t token_id,
			   const struct store_token_limits *limits, struct err *e)
{
	struct store_rows *rows = NULL;
	int rc;

	if ((rc = check_limits(limits, e)) < 0)
		return rc;
	struct store_val p[] = {sv_int(token_id), sv_int(course_id),
				limit_val(limits->daily_spend_micros),
				limit_val(limits->max_live_sandboxes)};
	if (store_q(st, sql_token_limits, p, 4, &rows, e) < 0)
		return err_wrap(e, "limits of token %lld", (long long)token_id);
	size_t n = rows->nrows;
	store_rows_free(rows);
	if (n == 0)
		return store_fail(e, STORE_NOT_FOUND, "no active token %lld", (long long)token_id);
	return 0;
}

static bool is_lower_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* Constant-time equality of two equal-length strings. */
static bool ct_equal(const char *a, const char *b, size_t n)
{
	volatile unsigned char acc = 0;

	for (size_t i = 0; i < n; i++)
		acc |= (unsigned char)(a[i] ^ b[i]);
	return acc == 0;
}

/*
 * The selector finds the row (it is not secret: a timing difference on
 * the index lookup reveals nothing that opens anything); the secret's hash
 * is compared in constant time, so response times do not leak how much of
 * a guessed secret was right.
 */
int store_token_check(struct store *st, const char *token, struct store_token_info *ret,
		      struct err *e)
{
	char selector[SELECTOR_HEX + 1], hash[65];
	struct store_rows *rows = NULL;

	if (!token || strnlen(token, STORE_TOKEN_LEN + 1) != STORE_TOKEN_LEN ||
	    memcmp(token, TOKEN_PREFIX, 4) != 0 || !is_lower_hex(token + 4, STORE_TOKEN_LEN - 4))
		return store_fail(e, STORE_NOT_FOUND, "malformed token");
	memcpy(selector, token + 4, SELECTOR_HEX);
	selector[SELECTOR_HEX] = '\0';
	store_sha256_hex(token + 4 + SELECTOR_HEX, SECRET_HEX, hash);
	struct store_val p[] = {sv_text(selector)};
	if (store_q(st, sql_token_get, p, 1, &rows, e) < 0)
		return err_wrap(e, "token");
	const char *stored = store_col_text(rows, 0, 3);
	bool ok = rows->nrows == 1 && strlen(stored) == 64 && ct_equal(stored, hash, 64);
	enum store_scope scope = 0;
	if (ok && store_scope_parse(store_col_text(rows, 0, 2), &scope, e) < 0)
		ok = false;
	if (!ok) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "unknown or revoked token");
	}
	ret->token_id = store_col_int(rows, 0, 0);
	ret->course_id = store_col_int(rows, 0, 1);
	ret->scope = scope;
	ret->limits.daily_spend_micros = limit_col(rows, 0, 4);
	ret->limits.max_live_sandboxes = limit_col(rows, 0, 5);
	store_rows_free(rows);
	return 0;
}

int store_token_revoke(struct store *st, int64_t course_id, int64_t token_id, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(token_id), sv_int(course_id)};

	if (store_q(st, sql_token_revoke, p, 2, &rows, e) < 0)
		return err_wrap(e, "revoke token");
	size_t n = rows->nrows;
	store_rows_free(rows);
	if (n == 0)
		return store_fail(e, STORE_NOT_FOUND, "no active token %lld", (long long)token_id);
	return 0;
}

int store_token_list(struct store *st, int64_t course_id, struct store_token_row *ret,
		     size_t cap, size_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(course_id), sv_int((int64_t)cap)};

	*ret_n = 0;
	if (store_q(st, sql_token_list, p, 2, &rows, e) < 0)
		return err_wrap(e, "list tokens");
	for (size_t r = 0; r < rows->nrows && *ret_n < cap; r++) {
		struct store_token_row *t = &ret[*ret_n];
		struct err ignored;
		if (store_scope_parse(store_col_text(rows, r, 1), &t->scope, &ignored) < 0)
			continue;
		t->token_id = store_col_int(rows, r, 0);
		snprintf(t->prefix, sizeof(t->prefix), TOKEN_PREFIX "%.16s",
			 store_col_text(rows, r, 2));
		t->created_ms = store_col_int(rows, r, 3);
		t->revoked_ms = store_col_int(rows, r, 4);
		t->limits.daily_spend_micros = limit_col(rows, r, 5);
		t->limits.max_live_sandboxes = limit_col(rows, r, 6);
		(*ret_n)++;
	}
	store_rows_free(rows);
	return 0;
}

/* ---- blobs ---- */

static const char sql_blob_add[] =
    "INSERT INTO blobs (sha256, size, data, created_ms) VALUES ($1, $2, $3, {now}) "
    "ON CONFLICT (sha256) DO NOTHING";
static const char sql_blob_get[] = "SELECT data, size FROM blobs WHERE sha256 = $1";

int store_blob_put_tx(struct store *st, const void *data, size_t len, char ret_sha256[65],
		      struct err *e)
{
	char hex[65];

	if (len > STORE_BLOB_MAX)
		return store_fail(e, STORE_TOO_LARGE, "blob of %zu bytes is above the cap of %u",
				  len, STORE_BLOB_MAX);
	store_sha256_hex(data, len, hex);
	struct store_val p[] = {sv_text(hex), sv_int((int64_t)len), sv_blob(data, len)};
	if (store_q(st, sql_blob_add, p, 3, NULL, e) < 0)
		return err_wrap(e, "blob %.12s", hex);
	memcpy(ret_sha256, hex, 65);
	return 0;
}

struct blob_arg {
	const void *data;
	size_t len;
	char sha[65];
};

static int blob_tx(struct store *st, void *arg, struct err *e)
{
	struct blob_arg *a = arg;

	return store_blob_put_tx(st, a->data, a->len, a->sha, e);
}

int store_blob_put(struct store *st, const void *data, size_t len, char ret_sha256[65],
		   struct err *e)
{
	struct blob_arg a = {.data = data, .len = len};
	int rc = store_tx_run(st, STORE_TX_WRITE, blob_tx, &a, e);

	if (rc < 0)
		return rc;
	memcpy(ret_sha256, a.sha, 65);
	return 0;
}

int store_blob_get(struct store *st, const char *sha256, void **ret_data, size_t *ret_len,
		   struct err *e)
{
	struct store_rows *rows = NULL;

	if (!sha256 || strnlen(sha256, 65) != 64 || !is_lower_hex(sha256, 64))
		return store_fail(e, STORE_NOT_FOUND, "malformed digest");
	struct store_val p[] = {sv_text(sha256)};
	if (store_q(st, sql_blob_get, p, 1, &rows, e) < 0)
		return err_wrap(e, "blob %.12s", sha256);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no blob %.12s", sha256);
	}
	const struct store_val *v = store_rows_at(rows, 0, 0);
	void *copy = NULL;
	if (v->len) {
		copy = malloc(v->len);
		if (!copy) {
			store_rows_free(rows);
			return err_set(e, ENOMEM, "blob %.12s", sha256);
		}
		memcpy(copy, v->s, v->len);
	}
	*ret_data = copy;
	*ret_len = v->len;
	store_rows_free(rows);
	return 0;
}

/* ---- assignments ---- */

static const char sql_assignment_add[] =
    "INSERT INTO assignments (course_id, name, created_ms) VALUES ($1, $2, {now}) "
    "ON CONFLICT (course_id, name) DO NOTHING";
static const char sql_assignment_get[] =
    "SELECT id FROM assignments WHERE course_id = $1 AND name = $2";
static const char sql_version_latest_of[] =
    "SELECT id, version_no, archive_sha256, image_pin FROM assignment_versions "
    "WHERE assignment_id = $1 ORDER BY version_no DESC LIMIT 1";
static const char sql_version_add[] =
    "INSERT INTO assignment_versions (assignment_id, version_no, archive_sha256, image_pin, "
    "created_ms) VALUES ($1, $2, $3, $4, {now}) RETURNING id";
static const char sql_version_get[] =
    "SELECT v.id, v.assignment_id, a.course_id, v.version_no, a.name, v.archive_sha256, "
    "v.image_pin, v.created_ms FROM assignment_versions v "
    "JOIN assignments a ON a.id = v.assignment_id WHERE v.id = $1";
static const char sql_version_latest_by_id[] =
    "SELECT v.id, v.assignment_id, a.course_id, v.version_no, a.name, v.archive_sha256, "
    "v.image_pin, v.created_ms FROM assignment_versions v "
    "JOIN assignments a ON a.id = v.assignment_id WHERE a.id = $1 "
    "ORDER BY v.version_no DESC LIMIT 1";

struct version_arg {
	int64_t course_id;
	const char *name;
	const void *archive;
	size_t len;
	const char *pin;
	int64_t version_id;
	int version_no;
};

static int version_tx(struct store *st, void *arg, struct err *e)
{
	struct version_arg *a = arg;
	struct store_rows *rows = NULL;
	char sha[65];

	struct store_val pa[] = {sv_int(a->course_id), sv_text(a->name)};
	if (store_q(st, sql_assignment_add, pa, 2, NULL, e) < 0 ||
	    store_q(st, sql_assignment_get, pa, 2, &rows, e) < 0)
		return err_wrap(e, "assignment '%s'", a->name);
	int64_t assignment_id = store_col_int(rows, 0, 0);
	rows = store_rows_free(rows);
	int rc = store_blob_put_tx(st, a->archive, a->len, sha, e);
	if (rc < 0)
		return rc;
	struct store_val pl[] = {sv_int(assignment_id)};
	if (store_q(st, sql_version_latest_of, pl, 1, &rows, e) < 0)
		return err_wrap(e, "assignment '%s'", a->name);
	if (rows->nrows == 1 && strcmp(store_col_text(rows, 0, 2), sha) == 0 &&
	    strcmp(store_col_text(rows, 0, 3), a->pin) == 0) {
		a->version_id = store_col_int(rows, 0, 0);
		a->version_no = (int)store_col_int(rows, 0, 1);
		store_rows_free(rows);
		return 0;
	}
	int next = (int)store_col_int(rows, 0, 1) + 1;
	rows = store_rows_free(rows);
	struct store_val pv[] = {sv_int(assignment_id), sv_int(next), sv_text(sha),
				 sv_text(a->pin)};
	if (store_q(st, sql_version_add, pv, 4, &rows, e) < 0)
		return err_wrap(e, "assignment '%s' version %d", a->name, next);
	a->version_id = store_col_int(rows, 0, 0);
	a->version_no = next;
	store_rows_free(rows);
	return 0;
}

int store_assignment_add_version(struct store *st, int64_t course_id, const char *name,
				 const void *archive, size_t len, const char *image_pin,
				 int64_t *ret_version_id, int *ret_version_no, struct err *e)
{
	struct version_arg a = {
	    .course_id = course_id, .name = name, .archive = archive, .len = len, .pin = image_pin};
	int rc;

	if ((rc = store_check_label("assignment name", name, STORE_LABEL_CAP, true, e)) < 0 ||
	    (rc = store_check_label("image pin", image_pin, STORE_LABEL_CAP, true, e)) < 0)
		return rc;
	rc = store_tx_run(st, STORE_TX_WRITE, version_tx, &a, e);
	if (rc < 0)
		return rc;
	*ret_version_id = a.version_id;
	if (ret_version_no)
		*ret_version_no = a.version_no;
	return 0;
}

static int version_fill(struct store_rows *rows, struct store_version *ret, struct err *e)
{
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no such assignment version");
	}
	memset(ret, 0, sizeof(*ret));
	ret->version_id = store_col_int(rows, 0, 0);
	ret->assignment_id = store_col_int(rows, 0, 1);
	ret->course_id = store_col_int(rows, 0, 2);
	ret->version_no = (int)store_col_int(rows, 0, 3);
	store_col_copy(rows, 0, 4, ret->name, sizeof(ret->name));
	store_col_copy(rows, 0, 5, ret->archive_sha256, sizeof(ret->archive_sha256));
	store_col_copy(rows, 0, 6, ret->image_pin, sizeof(ret->image_pin));
	ret->created_ms = store_col_int(rows, 0, 7);
	store_rows_free(rows);
	return 0;
}

int store_version_get(struct store *st, int64_t version_id, struct store_version *ret,
		      struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(version_id)};

	if (store_q(st, sql_version_get, p, 1, &rows, e) < 0)
		return err_wrap(e, "assignment version %lld", (long long)version_id);
	return version_fill(rows, ret, e);
}

int store_assignment_latest(struct store *st, int64_t assignment_id, struct store_version *ret,
			    struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(assignment_id)};

	if (store_q(st, sql_version_latest_by_id, p, 1, &rows, e) < 0)
		return err_wrap(e, "assignment %lld", (long long)assignment_id);
	return version_fill(rows, ret, e);
}
