/* The job store's side of assignments: their rows and policies (kept as text), extensions, the gradebook's rows, usage. */
#include "store_int.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * The store keeps a policy as text and never interprets it (that is
 * src/service/policy.c).  What it decides itself is which submissions are
 * "not gradable" (store.h, struct store_grade_row), because the submission
 * limit and the gradebook must agree on it.
 */

/* The bytes of a result document read to find its status (its third member
 * as grade.c writes it); a document whose status is further is read whole. */
#define DOC_PREFIX_CHARS 512

/* An extension or a submission count is a student's: one is required. */
static int check_student(const char *s, struct err *e)
{
	return store_check_label("student", s, STORE_LABEL_CAP, true, e);
}

/* ---- assignments ---- */

static const char sql_assignment_get[] =
    "SELECT a.id, a.course_id, a.name, a.created_ms, a.policy_ms, "
    "(SELECT v.id FROM assignment_versions v WHERE v.assignment_id = a.id "
    " ORDER BY v.version_no DESC LIMIT 1), "
    "(SELECT MAX(v.version_no) FROM assignment_versions v WHERE v.assignment_id = a.id) "
    "FROM assignments a WHERE a.id = $1";
static const char sql_assignment_exists[] = "SELECT {now} FROM assignments WHERE id = $1";

int store_assignment_get(struct store *st, int64_t assignment_id, struct store_assignment *ret,
			 struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(assignment_id)};

	if (store_q(st, sql_assignment_get, p, 1, &rows, e) < 0)
		return err_wrap(e, "assignment %lld", (long long)assignment_id);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no assignment %lld",
				  (long long)assignment_id);
	}
	memset(ret, 0, sizeof(*ret));
	ret->assignment_id = store_col_int(rows, 0, 0);
	ret->course_id = store_col_int(rows, 0, 1);
	store_col_copy(rows, 0, 2, ret->name, sizeof(ret->name));
	ret->created_ms = store_col_int(rows, 0, 3);
	ret->policy_ms = store_col_int(rows, 0, 4);
	ret->latest_version_id = store_col_int(rows, 0, 5);
	ret->latest_version_no = (int)store_col_int(rows, 0, 6);
	store_rows_free(rows);
	return 0;
}

/* STORE_NOT_FOUND unless the assignment exists; *ret_now_ms (may be NULL)
 * gets the database's clock. */
static int assignment_exists(struct store *st, int64_t assignment_id, int64_t *ret_now_ms,
			     struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(assignment_id)};

	if (store_q(st, sql_assignment_exists, p, 1, &rows, e) < 0)
		return err_wrap(e, "assignment %lld", (long long)assignment_id);
	size_t n = rows->nrows;
	if (n && ret_now_ms)
		*ret_now_ms = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	if (n == 0)
		return store_fail(e, STORE_NOT_FOUND, "no assignment %lld",
				  (long long)assignment_id);
	return 0;
}

/* ---- policies ---- */

static const char sql_policy_set[] =
    "UPDATE assignments SET policy = $2, policy_ms = {now} WHERE id = $1 RETURNING id";
static const char sql_policy_get[] = "SELECT policy FROM assignments WHERE id = $1";

int store_policy_set(struct store *st, int64_t assignment_id, const char *policy_json,
		     struct err *e)
{
	struct store_rows *rows = NULL;

	if (policy_json) {
		size_t len = strnlen(policy_json, STORE_POLICY_MAX + 1);
		if (len > STORE_POLICY_MAX)
			return store_fail(e, STORE_INVALID, "policy: above %u bytes",
					  STORE_POLICY_MAX);
		json_error_t jerr;
		json_t *doc = json_loadb(policy_json, len, JSON_REJECT_DUPLICATES, &jerr);
		bool ok = doc && json_is_object(doc);
		json_decref(doc);
		if (!ok)
			return store_fail(e, STORE_INVALID, "policy: not a JSON object");
	}
	struct store_val p[] = {sv_int(assignment_id), sv_text(policy_json)};
	if (store_q(st, sql_policy_set, p, 2, &rows, e) < 0)
		return err_wrap(e, "policy of assignment %lld", (long long)assignment_id);
	size_t n = rows->nrows;
	store_rows_free(rows);
	if (n == 0)
		return store_fail(e, STORE_NOT_FOUND, "no assignment %lld",
				  (long long)assignment_id);
	return 0;
}

int store_policy_get(struct store *st, int64_t assignment_id, char **ret_json, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(assignment_id)};

	if (store_q(st, sql_policy_get, p, 1, &rows, e) < 0)
		return err_wrap(e, "policy of assignment %lld", (long long)assignment_id);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no assignment %lld",
				  (long long)assignment_id);
	}
	char *text = NULL;
	if (store_rows_at(rows, 0, 0)->t != SV_NULL) {
		text = strdup(store_col_text(rows, 0, 0));
		if (!text) {
			store_rows_free(rows);
			return err_set(e, ENOMEM, "policy");
		}
	}
	store_rows_free(rows);
	*ret_json = text;
	return 0;
}

/* ---- extensions ---- */

static const char sql_extension_set[] =
    "INSERT INTO extensions (assignment_id, student, extra_s, due_ms, created_ms) "
    "VALUES ($1, $2, $3, $4, {now}) ON CONFLICT (assignment_id, student) DO UPDATE SET "
    "extra_s = excluded.extra_s, due_ms = excluded.due_ms, created_ms = excluded.created_ms";
static const char sql_extension_remove[] =
    "DELETE FROM extensions WHERE assignment_id = $1 AND student = $2 RETURNING student";
static const char sql_extension_get[] =
    "SELECT student, extra_s, due_ms, created_ms FROM extensions "
    "WHERE assignment_id = $1 AND student = $2";
static const char sql_extension_list[] =
    "SELECT student, extra_s, due_ms, created_ms FROM extensions WHERE assignment_id = $1";

struct extension_arg {
	int64_t assignment_id;
	const struct store_extension *ext;
};

static int extension_set_tx(struct store *st, void *arg, struct err *e)
{
	struct extension_arg *a = arg;
	const struct store_extension *x = a->ext;
	int rc = assignment_exists(st, a->assignment_id, NULL, e);

	if (rc < 0)
		return rc;
	struct store_val p[] = {sv_int(a->assignment_id), sv_text(x->student),
				x->has_due ? sv_null() : sv_int(x->extra_s),
				x->has_due ? sv_int(x->due_ms) : sv_null()};
	if (store_q(st, sql_extension_set, p, 4, NULL, e) < 0)
		return err_wrap(e, "extension of '%s'", x->student);
	return 0;
}

int store_extension_set(struct store *st, int64_t assignment_id, const struct store_extension *ext,
			struct err *e)
{
	struct extension_arg a = {.assignment_id = assignment_id, .ext = ext};
	int rc = check_student(ext->student, e);

	if (rc < 0)
		return rc;
	if (!ext->has_due && (ext->extra_s < 1 || ext->extra_s > STORE_EXTENSION_MAX_S))
		return store_fail(e, STORE_INVALID, "extension: %lld extra seconds",
				  (long long)ext->extra_s);
	if (ext->has_due && ext->due_ms < 0)
		return store_fail(e, STORE_INVALID, "extension: due date before 1970");
	return store_tx_run(st, STORE_TX_WRITE, extension_set_tx, &a, e);
}

int store_extension_remove(struct store *st, int64_t assignment_id, const char *student,
			   struct err *e)
{
	struct store_rows *rows = NULL;
	int rc = check_student(student, e);

	if (rc < 0)
		return rc;
	struct store_val p[] = {sv_int(assignment_id), sv_text(student)};
	if (store_q(st, sql_extension_remove, p, 2, &rows, e) < 0)
		return err_wrap(e, "extension of '%s'", student);
	size_t n = rows->nrows;
	store_rows_free(rows);
	if (n == 0)
		return store_fail(e, STORE_NOT_FOUND, "no extension for '%s'", student);
	return 0;
}

static void extension_fill(const struct store_rows *rows, size_t r, struct store_extension *x)
{
	memset(x, 0, sizeof(*x));
	store_col_copy(rows, r, 0, x->student, sizeof(x->student));
	x->has_due = store_rows_at(rows, r, 2)->t != SV_NULL;
	x->extra_s = x->has_due ? 0 : store_col_int(rows, r, 1);
	x->due_ms = x->has_due ? store_col_int(rows, r, 2) : 0;
	x->created_ms = store_col_int(rows, r, 3);
}

int store_extension_get(struct store *st, int64_t assignment_id, const char *student,
			struct store_extension *ret, struct err *e)
{
	struct store_rows *rows = NULL;
	int rc = check_student(student, e);

	if (rc < 0)
		return rc;
	struct store_val p[] = {sv_int(assignment_id), sv_text(student)};
	if (store_q(st, sql_extension_get, p, 2, &rows, e) < 0)
		return err_wrap(e, "extension of '%s'", student);
	if (rows->nrows == 0) {
		store_rows_free(rows);
		return store_fail(e, STORE_NOT_FOUND, "no extension for '%s'", student);
	}
	extension_fill(rows, 0, ret);
	store_rows_free(rows);
	return 0;
}

static int extension_cmp(const void *a, const void *b)
{
	return strcmp(((const struct store_extension *)a)->student,
		      ((const struct store_extension *)b)->student);
}

int store_extension_list(struct store *st, int64_t assignment_id, struct store_extension **ret,
			 size_t *ret_n, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(assignment_id)};

	if (store_q(st, sql_extension_list, p, 1, &rows, e) < 0)
		return err_wrap(e, "extensions of assignment %lld", (long long)assignment_id);
	struct store_extension *x = NULL;
	if (rows->nrows) {
		x = calloc(rows->nrows, sizeof(*x));
		if (!x) {
			store_rows_free(rows);
			return err_set(e, ENOMEM, "extensions");
		}
	}
	for (size_t r = 0; r < rows->nrows; r++)
		extension_fill(rows, r, &x[r]);
	*ret_n = rows->nrows;
	store_rows_free(rows);
	/* Bytewise, the same on both databases whatever their collation. */
	if (x)
		qsort(x, *ret_n, sizeof(*x), extension_cmp);
	*ret = x;
	return 0;
}

/* ---- a result document's status ---- */

struct scan {
	const char *p, *end;
};

static bool scan_is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static void scan_ws(struct scan *s)
{
	while (s->p < s->end && scan_is_ws(*s->p))
		s->p++;
}

/* A string starting at s->p (a quote): its raw bytes (between the quotes)
 * in [*ret_b, *ret_b + *ret_n).  1: complete; 0: the bytes ended first. */
static int scan_string(struct scan *s, const char **ret_b, size_t *ret_n, bool *ret_escaped)
{
	const char *b = ++s->p;

	*ret_escaped = false;
	while (s->p < s->end && *s->p != '"') {
		if (*s->p == '\\') {
			*ret_escaped = true;
			if (++s->p == s->end)
				return 0;
		}
		s->p++;
	}
	if (s->p == s->end)
		return 0;
	*ret_b = b;
	*ret_n = (size_t)(s->p - b);
	s->p++;
	return 1;
}

/* Skip one value (brackets are counted, not matched: the text is a valid
 * document or the caller does not care).  1: skipped; 0: the bytes ended
 * first. */
static int scan_skip(struct scan *s)
{
	const char *b;
	size_t n;
	bool esc;
	long depth = 0;

	while (s->p < s->end) {
		char c = *s->p;
		if (c == '"') {
			if (!scan_string(s, &b, &n, &esc))
				return 0;
			if (depth == 0)
				return 1;
			continue;
		}
		if (c == '{' || c == '[') {
			depth++;
		} else if (c == '}' || c == ']') {
			if (depth == 0)
				return 1; /* a scalar ended by its object's end */
			s->p++;
			if (--depth == 0)
				return 1;
			continue;
		} else if (depth == 0 && (c == ',' || scan_is_ws(c))) {
			return 1;
		}
		s->p++;
	}
	return 0;
}

/* The value of the member "status" at s->p. */
static int scan_status_value(struct scan *s, char *out, size_t cap)
{
	const char *b;
	size_t n;
	bool esc;

	if (s->p == s->end)
		return 0;
	if (*s->p != '"')
		return -1;
	if (!scan_string(s, &b, &n, &esc))
		return 0;
	if (esc)
		return 0; /* let a JSON parser decode it */
	snprintf(out, cap, "%.*s", (int)(n < 1024 ? n : 1024), b);
	return 1;
}

int store_doc_status(const char *text, size_t len, char *out, size_t cap)
{
	struct scan s = {.p = text, .end = text + len};
	bool escaped_key = false;
	const char *key;
	size_t klen;
	bool esc;

	if (cap)
		out[0] = '\0';
	scan_ws(&s);
	if (s.p == s.end)
		return 0;
	if (*s.p++ != '{')
		return -1;
	for (;;) {
		scan_ws(&s);
		if (s.p == s.end)
			return 0;
		if (*s.p == '}')
			return escaped_key ? 0 : -1;
		if (*s.p != '"')
			return -1;
		if (!scan_string(&s, &key, &klen, &esc))
			return 0;
		escaped_key |= esc;
		scan_ws(&s);
		if (s.p == s.end)
			return 0;
		if (*s.p++ != ':')
			return -1;
		scan_ws(&s);
		if (!esc && klen == 6 && memcmp(key, "status", 6) == 0)
			return scan_status_value(&s, out, cap);
		if (!scan_skip(&s))
			return 0;
		scan_ws(&s);
		if (s.p == s.end)
			return 0;
		if (*s.p == ',')
			s.p++;
		else if (*s.p != '}')
			return -1;
	}
}

/* ---- the gradebook's rows, submission counts ---- */

/* One row per submission: its latest job and its latest result, with the
 * start of the result's document (for its status). */
#define GRADE_ROW_SELECT                                                                           \
	"SELECT s.id, s.version_id, s.student, s.received_ms, "                                    \
	"(SELECT j.state FROM jobs j WHERE j.submission_id = s.id ORDER BY j.id DESC LIMIT 1), "   \
	"(SELECT j.not_gradable FROM jobs j WHERE j.submission_id = s.id "                         \
	" ORDER BY j.id DESC LIMIT 1), "                                                           \
	"r.id, r.score, r.max_score, substr(r.doc, 1, 512) "                                       \
	"FROM submissions s JOIN assignment_versions v ON v.id = s.version_id "                    \
	"LEFT JOIN results r ON r.id = "                                                           \
	"(SELECT MAX(r2.id) FROM results r2 WHERE r2.submission_id = s.id) "
_Static_assert(DOC_PREFIX_CHARS == 512, "GRADE_ROW_SELECT reads 512 characters");

static const char sql_grade_rows[] =
    GRADE_ROW_SELECT "WHERE v.assignment_id = $1 AND s.student IS NOT NULL ORDER BY s.id LIMIT $2";
/* The course narrows the search to the submissions_student index. */
static const char sql_grade_rows_student[] =
    GRADE_ROW_SELECT "WHERE v.assignment_id = $1 AND s.student = $2 "
		     "AND s.course_id = (SELECT a.course_id FROM assignments a WHERE a.id = $1) "
		     "ORDER BY s.id LIMIT $3";
static const char sql_result_doc[] = "SELECT doc FROM results WHERE id = $1";

/* The status of a result whose first characters did not say: the whole
 * document, parsed. */
static int status_from_doc(struct store *st, struct store_grade_row *g, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(g->result_id)};

	if (store_q(st, sql_result_doc, p, 1, &rows, e) < 0)
		return err_wrap(e, "result %lld", (long long)g->result_id);
	json_t *doc = json_loads(store_col_text(rows, 0, 0), 0, NULL);
	const char *status = json_string_value(json_object_get(doc, "status"));
	snprintf(g->status, sizeof(g->status), "%s", status ? status : "");
	json_decref(doc);
	store_rows_free(rows);
	return 0;
}

static int grade_row_fill(struct store *st, const struct store_rows *rows, size_t r,
			  struct store_grade_row *g, struct err *e)
{
	memset(g, 0, sizeof(*g));
	g->submission_id = store_col_int(rows, r, 0);
	g->version_id = store_col_int(rows, r, 1);
	store_col_copy(rows, r, 2, g->student, sizeof(g->student));
	g->received_ms = store_col_int(rows, r, 3);
	if (store_job_state_parse(store_col_text(rows, r, 4), &g->job_state, e) < 0)
		return err_wrap(e, "submission %lld", (long long)g->submission_id);
	bool job_not_gradable = store_col_int(rows, r, 5) != 0;
	g->has_result = store_rows_at(rows, r, 6)->t != SV_NULL;
	g->score = g->max_score = NAN;
	if (g->has_result) {
		g->result_id = store_col_int(rows, r, 6);
		g->score = store_col_real(rows, r, 7);
		g->max_score = store_col_real(rows, r, 8);
		const struct store_val *v = store_rows_at(rows, r, 9);
		if (store_doc_status(v->s, v->len, g->status, sizeof(g->status)) == 0 &&
		    status_from_doc(st, g, e) < 0)
			return -1;
	}
	g->not_gradable = g->has_result ? strcmp(g->status, "error") == 0 : job_not_gradable;
	return 0;
}

static int grade_row_cmp(const void *a, const void *b)
{
	const struct store_grade_row *x = a, *y = b;
	int c = strcmp(x->student, y->student);

	if (c)
		return c;
	return (x->submission_id > y->submission_id) - (x->submission_id < y->submission_id);
}

struct grade_arg {
	int64_t assignment_id;
	const char *student; /* NULL: every student */
	struct store_grade_row *rows;
	size_t n;
	int64_t now_ms;
};

static int grade_query(struct store *st, struct grade_arg *a, struct store_rows **ret,
		       struct err *e)
{
	const int64_t limit = STORE_GRADEBOOK_MAX + 1;

	if (a->student) {
		struct store_val p[] = {sv_int(a->assignment_id), sv_text(a->student),
					sv_int(limit)};
		return store_q(st, sql_grade_rows_student, p, 3, ret, e);
	}
	struct store_val p[] = {sv_int(a->assignment_id), sv_int(limit)};
	return store_q(st, sql_grade_rows, p, 2, ret, e);
}

static int grade_tx(struct store *st, void *arg, struct err *e)
{
	struct grade_arg *a = arg;
	struct store_rows *rows = NULL;
	int rc;

	/* A transaction that is run again starts from nothing. */
	free(a->rows);
	a->rows = NULL;
	a->n = 0;
	/* The clock with it: a count's "now" is when its snapshot was taken. */
	if ((rc = assignment_exists(st, a->assignment_id, &a->now_ms, e)) < 0)
		return rc;
	if (grade_query(st, a, &rows, e) < 0)
		return err_wrap(e, "submissions of assignment %lld", (long long)a->assignment_id);
	if (rows->nrows > STORE_GRADEBOOK_MAX) {
		store_rows_free(rows);
		return store_fail(e, STORE_TOO_LARGE, "assignment %lld: more than %d submissions",
				  (long long)a->assignment_id, STORE_GRADEBOOK_MAX);
	}
	if (rows->nrows && !(a->rows = calloc(rows->nrows, sizeof(*a->rows)))) {
		store_rows_free(rows);
		return err_set(e, ENOMEM, "gradebook rows");
	}
	for (a->n = 0; a->n < rows->nrows; a->n++)
		if (grade_row_fill(st, rows, a->n, &a->rows[a->n], e) < 0) {
			store_rows_free(rows);
			return -1;
		}
	store_rows_free(rows);
	return 0;
}

/* The rows in one read transaction (a consistent snapshot). */
static int grade_read(struct store *st, struct grade_arg *a, struct err *e)
{
	int rc = store_tx_run(st, STORE_TX_READ, grade_tx, a, e);

	if (rc < 0) {
		free(a->rows);
		a->rows = NULL;
		a->n = 0;
	}
	return rc;
}

int store_gradebook_rows(struct store *st, int64_t assignment_id, struct store_grade_row **ret,
			 size_t *ret_n, struct err *e)
{
	struct grade_arg a = {.assignment_id = assignment_id};
	int rc = grade_read(st, &a, e);

	if (rc < 0)
		return rc;
	/* Bytewise, the same on both databases whatever their collation. */
	if (a.rows)
		qsort(a.rows, a.n, sizeof(*a.rows), grade_row_cmp);
	*ret = a.rows;
	*ret_n = a.n;
	return 0;
}

int store_student_submissions(struct store *st, int64_t assignment_id, const char *student,
			      struct store_submit_count *ret, struct err *e)
{
	struct grade_arg a = {.assignment_id = assignment_id, .student = student};
	int rc = check_student(student, e);

	if (rc < 0 || (rc = grade_read(st, &a, e)) < 0)
		return rc;
	memset(ret, 0, sizeof(*ret));
	for (size_t i = 0; i < a.n; i++) {
		if (a.rows[i].not_gradable)
			continue;
		ret->counted++;
		if (a.rows[i].received_ms > ret->last_ms)
			ret->last_ms = a.rows[i].received_ms;
	}
	ret->now_ms = a.now_ms;
	free(a.rows);
	return 0;
}

/* ---- usage ---- */

/* Gradings (results) and sandbox execs (migration 6) that ended since $2;
 * an exec's gib_seconds is NULL only while it has not ended. */
static const char sql_usage_since[] =
    "SELECT COALESCE(SUM(cpu), 0), COALESCE(SUM(gib), 0) FROM ("
    "SELECT r.cpu_seconds AS cpu, r.gib_seconds AS gib FROM results r "
    "JOIN submissions s ON s.id = r.submission_id WHERE s.course_id = $1 AND r.created_ms >= $2 "
    "UNION ALL SELECT CAST(x.cpu_ms AS DOUBLE PRECISION) / 1000, x.gib_seconds "
    "FROM sandbox_execs x JOIN sandboxes b ON b.id = x.sandbox_id "
    "WHERE b.course_id = $1 AND x.ended_ms >= $2) u";

int store_course_usage_since(struct store *st, int64_t course_id, int64_t since_ms,
			     double *ret_cpu_seconds, double *ret_gib_seconds, struct err *e)
{
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(course_id), sv_int(since_ms)};

	if (store_q(st, sql_usage_since, p, 2, &rows, e) < 0)
		return err_wrap(e, "usage of course %lld", (long long)course_id);
	double cpu = store_col_real(rows, 0, 0), gib = store_col_real(rows, 0, 1);
	*ret_cpu_seconds = isnan(cpu) ? 0 : cpu;
	*ret_gib_seconds = isnan(gib) ? 0 : gib;
	store_rows_free(rows);
	return 0;
}
