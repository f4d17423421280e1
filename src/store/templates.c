/* The job store's sandbox templates: a sandbox's tree kept under name@N (store.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "store/store_int.h"

bool store_template_name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n > STORE_TEMPLATE_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return false;
	}
	return true;
}

static const char sql_template_next[] =
    "SELECT COALESCE(MAX(version_no), 0) + 1 FROM sandbox_templates "
    "WHERE course_id = $1 AND name = $2";
static const char sql_template_add[] =
    "INSERT INTO sandbox_templates (course_id, name, version_no, blob_sha256, bytes, "
    "source_sandbox_id, created_ms) VALUES ($1, $2, $3, $4, $5, $6, {now}) RETURNING id";
static const char sql_template_by_id[] =
    "SELECT id, course_id, name, version_no, blob_sha256, bytes, source_sandbox_id, "
    "created_ms, deleted_ms FROM sandbox_templates WHERE id = $1 AND course_id = $2 "
    "AND deleted_ms IS NULL";
static const char sql_template_by_name[] =
    "SELECT id, course_id, name, version_no, blob_sha256, bytes, source_sandbox_id, "
    "created_ms, deleted_ms FROM sandbox_templates WHERE course_id = $1 AND name = $2 "
    "AND version_no = $3 AND deleted_ms IS NULL";
static const char sql_template_latest[] =
    "SELECT id, course_id, name, version_no, blob_sha256, bytes, source_sandbox_id, "
    "created_ms, deleted_ms FROM sandbox_templates WHERE course_id = $1 AND name = $2 "
    "AND deleted_ms IS NULL ORDER BY version_no DESC LIMIT 1";
static const char sql_template_list[] =
    "SELECT id, course_id, name, version_no, blob_sha256, bytes, source_sandbox_id, "
    "created_ms, deleted_ms FROM sandbox_templates WHERE course_id = $1 "
    "AND deleted_ms IS NULL ORDER BY id DESC LIMIT $2";
static const char sql_template_remove[] =
    "UPDATE sandbox_templates SET deleted_ms = {now} WHERE id = $1 AND course_id = $2 "
    "AND deleted_ms IS NULL RETURNING id, course_id, name, version_no, blob_sha256, bytes, "
    "source_sandbox_id, created_ms, deleted_ms";

static void template_fill(const struct store_rows *rows, size_t r, struct store_template *t)
{
	*t = (struct store_template){
	    .template_id = store_col_int(rows, r, 0),
	    .course_id = store_col_int(rows, r, 1),
	    .version_no = (int)store_col_int(rows, r, 3),
	    .bytes = store_col_int(rows, r, 5),
	    .source_sandbox_id = store_col_int(rows, r, 6),
	    .created_ms = store_col_int(rows, r, 7),
	    .deleted_ms = store_col_int(rows, r, 8),
	};
	store_col_copy(rows, r, 2, t->name, sizeof(t->name));
	store_col_copy(rows, r, 4, t->sha256, sizeof(t->sha256));
}

struct add_arg {
	int64_t course_id, source;
	const char *name;
	const void *data;
	size_t len;
	struct store_template *t;
};

/* The version is the name's next one, read and written in one write
 * transaction: two snapshots of one name never share a version. */
static int add_tx(struct store *st, void *arg, struct err *e)
{
	struct add_arg *a = arg;
	struct store_rows *rows = NULL;
	char sha[65];

	int rc = store_blob_put_tx(st, a->data, a->len, sha, e);
	if (rc < 0)
		return rc;
	struct store_val pn[] = {sv_int(a->course_id), sv_text(a->name)};
	if (store_q(st, sql_template_next, pn, 2, &rows, e) < 0)
		return err_wrap(e, "template '%s'", a->name);
	int next = (int)store_col_int(rows, 0, 0);
	rows = store_rows_free(rows);
	struct store_val p[] = {sv_int(a->course_id),
				sv_text(a->name),
				sv_int(next),
				sv_text(sha),
				sv_int((int64_t)a->len),
				a->source ? sv_int(a->source) : sv_null()};
	if (store_q(st, sql_template_add, p, 6, &rows, e) < 0)
		return err_wrap(e, "template '%s@%d'", a->name, next);
	struct store_val pi[] = {sv_int(store_col_int(rows, 0, 0)), sv_int(a->course_id)};
	rows = store_rows_free(rows);
	if (store_q(st, sql_template_by_id, pi, 2, &rows, e) < 0)
		return err_wrap(e, "template '%s@%d'", a->name, next);
	template_fill(rows, 0, a->t);
	store_rows_free(rows);
	return 0;
}

int store_template_add(struct store *st, int64_t course_id, const char *name, const void *data,
		       size_t len, int64_t source_sandbox_id, struct store_template *ret,
		       struct err *e)
{
	struct add_arg a = {course_id, source_sandbox_id, name, data, len, ret};

	if (!store_template_name_ok(name))
		return store_fail(e, STORE_INVALID,
				  "template name '%.80s': 1 to %d of a-z, 0-9, '.', '_', '-', "
				  "starting with a letter or digit",
				  name ? name : "", STORE_TEMPLATE_NAME_MAX);
	if (len > STORE_BLOB_MAX)
		return store_fail(e, STORE_TOO_LARGE, "template '%s': %zu bytes (at most %u)", name,
				  len, STORE_BLOB_MAX);
	return store_tx_run(st, STORE_TX_WRITE, add_tx, &a, e);
}

int store_template_get(struct store *st, int64_t course_id, const char *name, int version_no,
		       int64_t id, struct store_template *ret, struct err *e)
{
	struct store_rows *rows = NULL;
	int rc;

	if (name && !store_template_name_ok(name))
		return store_fail(e, STORE_NOT_FOUND, "no template '%.80s'", name);
	if (!name) {
		struct store_val p[] = {sv_int(id), sv_int(course_id)};
		rc = store_q(st, sql_template_by_id, p, 2, &rows, e);
	} else if (version_no > 0) {
		struct store_val p[] = {sv_int(course_id), sv_text(name), sv_int(version_no)};
		rc = store_q(st, sql_template_by_name, p, 3, &rows, e);
	} else {
		struct store_val p[] = {sv_int(course_id), sv_text(name)};
		rc = store_q(st, sql_template_latest, p, 2, &rows, e);
	}
	if (rc < 0)
		return err_wrap(e, "template");
	if (rows->nrows == 0) {
		store_rows_free(rows);
		if (!name)
			return store_fail(e, STORE_NOT_FOUND, "no template %lld", (long long)id);
		if (version_no > 0)
			return store_fail(e, STORE_NOT_FOUND, "no template '%s@%d'", name,
					  version_no);
		return store_fail(e, STORE_NOT_FOUND, "no template '%s'", name);
	}
	template_fill(rows, 0, ret);
	store_rows_free(rows);
	return 0;
}

int store_template_list(struct store *st, int64_t course_id, size_t max,
			struct store_template **ret, size_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(course_id), sv_int((int64_t)max)};

	if (store_q(st, sql_template_list, p, 2, &rows, e) < 0)
		return err_wrap(e, "templates");
	struct store_template *v = calloc(rows->nrows ? rows->nrows : 1, sizeof(*v));
	if (!v) {
		store_rows_free(rows);
		return store_fail(e, STORE_ERROR, "templates: out of memory");
	}
	for (size_t i = 0; i < rows->nrows; i++)
		template_fill(rows, i, &v[i]);
	*ret_n = rows->nrows;
	*ret = v;
	store_rows_free(rows);
	return 0;
}

int store_template_remove(struct store *st, int64_t course_id, int64_t id,
			  struct store_template *ret, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(id), sv_int(course_id)};

	if (store_q(st, sql_template_remove, p, 2, &rows, e) < 0)
		return err_wrap(e, "template %lld", (long long)id);
	size_t n = rows->nrows;
	if (n && ret)
		template_fill(rows, 0, ret);
	store_rows_free(rows);
	return n ? 0 : store_fail(e, STORE_NOT_FOUND, "no template %lld", (long long)id);
}
