/* An assignment's gradebook: each student's counting result under the policy, as CSV or JSON (docs/policy.md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "service/policy.h"
#include "util.h"

#define MS_PER_S 1000LL
/* A gradebook's text at most (a class of 10,000 is about 2 MB). */
#define GRADEBOOK_MAX (256u << 20)

/* ---- the gradebook ---- */

static const struct store_extension *find_extension(const struct store_extension *exts, size_t next,
						    const char *student)
{
	size_t lo = 0, hi = next;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(exts[mid].student, student);
		if (c == 0)
			return &exts[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* One student's line from their rows [b, end). */
static void grade_line(const struct policy *p, const struct store_grade_row *b, size_t n,
		       const struct store_extension *ext, struct policy_grade *g)
{
	size_t k;

	memset(g, 0, sizeof(*g));
	snprintf(g->student, sizeof(g->student), "%s", b->student);
	g->extension = ext != NULL;
	g->raw_score = g->max_score = g->final_score = NAN;
	for (size_t i = 0; i < n; i++) {
		g->submissions += !b[i].not_gradable;
		g->pending += !b[i].has_result && !b[i].not_gradable;
	}
	if (!policy_counting(p, ext, b, n, &k))
		return;
	const struct store_grade_row *r = &b[k];
	g->has_counting = true;
	g->submission_id = r->submission_id;
	g->result_id = r->result_id;
	g->received_ms = r->received_ms;
	snprintf(g->status, sizeof(g->status), "%s", r->status);
	g->raw_score = r->score;
	g->max_score = r->max_score;
	policy_late(p, ext, r->received_ms, r->score, &g->late);
	g->final_score = g->late.score;
}

int policy_gradebook(const struct policy *p, const struct store_grade_row *rows, size_t n,
		     const struct store_extension *exts, size_t next, struct policy_grade **ret,
		     size_t *ret_n, struct err *e)
{
	struct policy_grade *g = n ? calloc(n, sizeof(*g)) : NULL;
	size_t lines = 0;

	if (n && !g)
		return err_set(e, ENOMEM, "gradebook");
	for (size_t b = 0; b < n;) {
		size_t end = b + 1;
		while (end < n && strcmp(rows[end].student, rows[b].student) == 0)
			end++;
		grade_line(p, &rows[b], end - b, find_extension(exts, next, rows[b].student),
			   &g[lines++]);
		b = end;
	}
	*ret = g;
	*ret_n = lines;
	return 0;
}


/* One CSV cell of text and its comma (csv_cell: quoted, one line, no
 * formula: student labels and statuses come from users). */
static void csv_text(struct dynbuf *t, const char *s)
{
	char *cell = csv_cell(s);

	if (!cell) {
		dynbuf_free(t);
		t->state = DYNBUF_NO_MEMORY;
		return;
	}
	dynbuf_adds(t, cell);
	dynbuf_adds(t, ",");
	free(cell);
}

/* A number cell: empty when NaN. */
static void csv_num(struct dynbuf *t, double v)
{
	if (isfinite(v))
		dynbuf_addf(t, "%.15g", v);
	dynbuf_adds(t, ",");
}

static void csv_int(struct dynbuf *t, int64_t v)
{
	dynbuf_addf(t, "%lld,", (long long)v);
}

/* The cells of the counting submission (empty when there is none). */
static void csv_counting(struct dynbuf *t, const struct policy_grade *g)
{
	char at[32];

	if (!g->has_counting) {
		dynbuf_adds(t, ",,,,,,,,,,");
		return;
	}
	policy_time_format(g->received_ms, at);
	csv_int(t, g->submission_id);
	csv_text(t, at);
	csv_text(t, g->status);
	csv_num(t, g->raw_score);
	csv_num(t, g->max_score);
	if (g->late.has_due) {
		csv_text(t, g->late.late ? "yes" : "no");
		csv_int(t, g->late.late_ms / MS_PER_S);
		csv_int(t, g->late.units);
		csv_num(t, g->late.penalty_percent);
	} else {
		dynbuf_adds(t, ",,,,");
	}
	csv_num(t, g->final_score);
}

static void csv_line(struct dynbuf *t, const struct policy_grade *g)
{
	csv_text(t, g->student);
	csv_counting(t, g);
	csv_int(t, g->submissions);
	csv_int(t, g->pending);
	dynbuf_adds(t, g->extension ? "\"yes\"\r\n" : "\"no\"\r\n");
}

char *policy_gradebook_csv(const struct policy *p, const struct policy_grade *g, size_t n,
			   size_t *ret_len)
{
	struct dynbuf t;
	const char *units = p->has_late && p->late.per == POLICY_PER_HOUR ? "hours" : "days";
	char header[256];

	snprintf(header, sizeof(header),
		 "student,submission_id,submitted_at,status,raw_score,max_score,late,"
		 "late_seconds,%s_late,penalty_percent,final_score,submissions,pending,"
		 "extension\r\n",
		 units);
	dynbuf_init(&t, GRADEBOOK_MAX);
	dynbuf_adds(&t, header);
	for (size_t i = 0; i < n; i++)
		csv_line(&t, &g[i]);
	return dynbuf_take(&t, ret_len);
}

static json_t *num_json(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *late_json(const struct policy *p, const struct policy_grade *g)
{
	if (!g->has_counting || !g->late.has_due)
		return json_null();
	return json_pack("{s:o, s:b, s:I, s:I, s:s, s:f}", "due", policy_time_json(g->late.due_ms), "late",
			 g->late.late, "seconds", (json_int_t)(g->late.late_ms / MS_PER_S), "units",
			 (json_int_t)g->late.units, "per",
			 policy_per_name(p->has_late ? p->late.per : POLICY_PER_DAY), "penalty_percent",
			 g->late.penalty_percent);
}

static json_t *grade_json(const struct policy *p, const struct policy_grade *g)
{
	json_t *counting = json_null();

	if (g->has_counting)
		counting =
		    json_pack("{s:I, s:I, s:o, s:I, s:s, s:o, s:o, s:o, s:o}", "submission_id",
			      (json_int_t)g->submission_id, "result_id", (json_int_t)g->result_id,
			      "submitted_at", policy_time_json(g->received_ms), "submitted_ms",
			      (json_int_t)g->received_ms, "status", g->status, "raw_score",
			      num_json(g->raw_score), "max_score", num_json(g->max_score), "late",
			      late_json(p, g), "final_score", num_json(g->final_score));
	return json_pack("{s:s, s:I, s:I, s:b, s:o}", "student", g->student, "submissions",
			 (json_int_t)g->submissions, "pending", (json_int_t)g->pending, "extension",
			 g->extension, "counting", counting);
}

json_t *policy_gradebook_json(int64_t assignment_id, const struct policy *p,
			      const struct policy_grade *g, size_t n)
{
	json_t *students = json_array();

	for (size_t i = 0; students && i < n; i++)
		if (json_array_append_new(students, grade_json(p, &g[i])) < 0) {
			json_decref(students);
			return NULL;
		}
	return json_pack("{s:I, s:o, s:o}", "assignment_id", (json_int_t)assignment_id, "policy",
			 policy_to_json(p), "students", students);
}

static char *render(int64_t assignment_id, const struct policy *p, const struct policy_grade *g,
		    size_t n, enum policy_format fmt, size_t *ret_len)
{
	if (fmt == POLICY_FORMAT_CSV)
		return policy_gradebook_csv(p, g, n, ret_len);
	json_t *doc = policy_gradebook_json(assignment_id, p, g, n);
	char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_REAL_PRECISION(15)) : NULL;
	json_decref(doc);
	if (text)
		*ret_len = strlen(text);
	return text;
}

int policy_export(struct store *st, int64_t assignment_id, enum policy_format fmt, char **ret_text,
		  size_t *ret_len, struct err *e)
{
	struct policy p;
	struct store_extension *exts = NULL;
	struct store_grade_row *rows = NULL;
	struct policy_grade *g = NULL;
	size_t next = 0, nrows = 0, n = 0, len = 0;
	int rc;

	if ((rc = policy_load(st, assignment_id, &p, e)) < 0 ||
	    (rc = store_extension_list(st, assignment_id, &exts, &next, e)) < 0 ||
	    (rc = store_gradebook_rows(st, assignment_id, &rows, &nrows, e)) < 0 ||
	    (rc = policy_gradebook(&p, rows, nrows, exts, next, &g, &n, e)) < 0)
		goto out;
	char *text = render(assignment_id, &p, g, n, fmt, &len);
	if (!text) {
		rc = err_set(e, ENOMEM, "gradebook export");
		goto out;
	}
	*ret_text = text;
	*ret_len = len;
out:
	free(exts);
	free(rows);
	free(g);
	return rc;
}

