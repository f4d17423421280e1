/* Per-assignment policies: submission limits, due dates and late penalties, the counting result,
 * test visibility, the gradebook export, budgets. */
#ifndef PROCTOR_SERVICE_POLICY_H
#define PROCTOR_SERVICE_POLICY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "store/store.h"

/*
 * Theory of operation
 * -------------------
 * An assignment's policy (docs/policy.md defines the JSON field by field)
 * is set through the API, kept by the store as text (store_policy_set) and
 * is not part of an assignment version: changing it regrades nothing, it
 * changes what is allowed next and how the recorded results are read.
 *
 * Everything here but the functions that take a `struct store *` is pure:
 * times are passed in (the database's clock, store_submit_count.now_ms or
 * store_now_ms(), so every server agrees), nothing is read or written.
 *
 * - Submitting: policy_check_submit() against the student's counted
 *   submissions (store_student_submissions: Proctor's own failures do not
 *   count) and the course's daily CPU cap (policy_budget_check).
 *   policy_admit() does all of it.
 * - Lateness: a submission is late when it was received after the
 *   student's due date (the assignment's, moved by an extension) plus the
 *   grace period; each day or hour started after that costs
 *   penalty_percent, at most cap_percent, of the score.
 * - Counting: one result per student counts, the latest or the best
 *   (after the late penalty); not gradable submissions never count.
 * - Visibility: the student view and the Gradescope output reveal a
 *   test marked after_due_date or after_published (assignment.yaml) only
 *   when the policy says so; tests marked hidden are never revealed.
 *
 * Errors about a policy or an extension the user sent are ERR_INPUT and
 * name the field.
 */

enum policy_per { POLICY_PER_DAY = 0, POLICY_PER_HOUR = 1 };
/* "day" or "hour", as the policy document spells it. */
const char *policy_per_name(enum policy_per per);
enum policy_counting { POLICY_COUNT_LATEST = 0, POLICY_COUNT_BEST = 1 };
enum policy_tests {
	POLICY_TESTS_HIDDEN = 0,    /* the student view of today: only tests marked visible */
	POLICY_TESTS_AFTER_DUE = 1, /* + tests marked after_due_date, once the due date passed */
	POLICY_TESTS_VISIBLE = 2,   /* + tests marked after_due_date or after_published */
};

/* Bounds of the policy's numbers (docs/policy.md). */
#define POLICY_MAX_SUBMISSIONS 100000
#define POLICY_MAX_INTERVAL_S  (7LL * 24 * 3600)
#define POLICY_MAX_GRACE_S     (7LL * 24 * 3600)
#define POLICY_TIME_MAX_MS     253402300799999LL /* 9999-12-31T23:59:59.999Z */

struct policy_late {
	enum policy_per per;
	double penalty_percent; /* per day or hour started, 0..100 */
	double cap_percent;	/* at most this in all, 0..100 */
	int64_t grace_s;	/* late by at most this: on time */
};

struct policy {
	int64_t max_submissions; /* counted submissions per student; 0: no limit */
	int64_t min_interval_s;	 /* between a student's submissions; 0: none */
	bool has_due;
	int64_t due_ms; /* ms since the epoch, UTC */
	bool has_late;	/* only with has_due */
	struct policy_late late;
	enum policy_counting counting;
	enum policy_tests tests;
};

/* The defaults: no limits, no due date, the latest result counts, tests
 * hidden (the student view as `proctor grade --view student` gives it). */
void policy_default(struct policy *ret);

/*
 * Parse a policy document (untrusted JSON text of `len` bytes, at most
 * STORE_POLICY_MAX): one object, no duplicate or unknown members, every
 * value in range.  Absent members and null take the defaults.  *ret is
 * written only on success; errors are ERR_INPUT and name the field
 * ("policy: 'late.cap_percent' must be a number from 0 to 100").
 */
int policy_parse(const char *text, size_t len, struct policy *ret, struct err *e);
/* The same from a parsed document. */
int policy_from_json(const json_t *doc, struct policy *ret, struct err *e);

/* The canonical document: every member, null where unset, the due date as
 * RFC 3339 UTC.  policy_parse() of its text gives the same policy.  NULL
 * only when out of memory. */
json_t *policy_to_json(const struct policy *p);
/* policy_to_json() as compact text, malloc'd; NULL when out of memory. */
char *policy_to_text(const struct policy *p);

/*
 * A time: RFC 3339 ("2026-12-01T23:59:00Z", fractions of a second and
 * numeric offsets accepted, converted to UTC), or an integer count of
 * milliseconds since the epoch; 0..POLICY_TIME_MAX_MS.  `what` names the
 * field in the error (ERR_INPUT).
 */
int policy_time_from_json(const json_t *v, const char *what, int64_t *ret_ms, struct err *e);
/* ms since the epoch as RFC 3339 UTC: "2026-12-01T23:59:00Z", with ".mmm"
 * when not a whole second.  Out of range values are clamped. */
void policy_time_format(int64_t ms, char out[32]);
/* policy_time_format() as a JSON string. */
json_t *policy_time_json(int64_t ms);

/*
 * Parse an extension request (untrusted JSON): {"student": S, "extra_s": N}
 * or {"student": S, "due": T}, exactly one of extra_s (1..STORE_EXTENSION_MAX_S)
 * and due (as policy_time_from_json).  "student" may be absent (the API may
 * take it from the path): ret->student is then "".  ERR_INPUT errors.
 */
int policy_extension_parse(const char *text, size_t len, struct store_extension *ret,
			   struct err *e);
/* {"student", "extra_s" or null, "due" (the new due date) or null}. */
json_t *policy_extension_to_json(const struct store_extension *x);

/*
 * The student's due date: the extension's new due date, or the assignment's
 * plus the extension's seconds, or the assignment's (ext NULL: none).
 * False when the policy has no due date (an extension then changes nothing).
 */
bool policy_due_for(const struct policy *p, const struct store_extension *ext, int64_t *ret_due_ms);

/* ---- submitting ---- */

enum policy_refusal {
	POLICY_ALLOWED = 0,
	POLICY_LIMIT = 1,	/* max_submissions reached: waiting does not help */
	POLICY_TOO_SOON = 2,	/* min_interval_s not yet passed: next_ms says when */
	POLICY_OVER_BUDGET = 3, /* the course's daily CPU cap: next_ms is the next UTC day */
};
/* The error kind of a refusal (err.h: its stable code and HTTP status,
 * 429 for too_soon, answered with Retry-After from next_ms; 403 otherwise). */
enum err_kind policy_refusal_kind(enum policy_refusal r);

struct policy_verdict {
	enum policy_refusal refusal;
	int64_t next_ms;   /* refused: the earliest time a submission can be allowed; 0:
			      not by waiting */
	char message[256]; /* refused: one line for the student */
};

/*
 * May a student submit now?  `counted` and `last_ms` are the student's
 * counted submissions of the assignment and the time of the latest
 * (store_student_submissions), `now_ms` the database's clock.  The limit
 * is checked first; a submission exactly min_interval_s after the last is
 * allowed.  Returns true when allowed; *ret is filled either way.
 */
bool policy_check_submit(const struct policy *p, int64_t counted, int64_t last_ms, int64_t now_ms,
			 struct policy_verdict *ret);

/* ---- lateness ---- */

struct policy_lateness {
	bool has_due;		/* the policy has a due date; else nothing below applies */
	int64_t due_ms;		/* the student's (policy_due_for) */
	int64_t late_ms;	/* received - due when positive, else 0 */
	bool late;		/* late_ms > grace: penalised (a late policy) or just shown */
	int64_t units;		/* days or hours started after due + grace; 0 without a late
				   policy */
	double penalty_percent; /* min(units * penalty_percent, cap_percent) */
	double score;		/* raw_score * (1 - penalty_percent / 100); NaN if raw is */
};
/* The lateness of a submission received at `received_ms` and its score
 * after the penalty. */
void policy_late(const struct policy *p, const struct store_extension *ext, int64_t received_ms,
		 double raw_score, struct policy_lateness *ret);

/* ---- the counting result ---- */

/*
 * Which of one student's submissions counts: among those with a result
 * that are not "not gradable", the latest received (latest), or the highest
 * score after the late penalty (best; a result without a score is below
 * every score; ties go to the earliest submission).  Returns false when
 * none can count; else *ret_index indexes rows.
 */
bool policy_counting(const struct policy *p, const struct store_extension *ext,
		     const struct store_grade_row *rows, size_t n, size_t *ret_index);

/* ---- what students see ---- */

/* Is a test whose assignment.yaml visibility is `visibility` (visible,
 * hidden, after_due_date, after_published) revealed to this student now?
 * After the due date means at or after the student's due date plus grace. */
bool policy_test_revealed(const struct policy *p, const struct store_extension *ext, int64_t now_ms,
			  const char *visibility);

/*
 * The student view of a result document (docs/result.md) under the
 * policy: grade_student_view(), except that tests the policy reveals keep
 * their name, classname, message and reason like tests marked visible.
 * Tests marked hidden stay anonymous, raw output and step numbers stay
 * out, whatever the policy; `visibility` keeps the assignment's value.
 * NULL when out of memory.
 */
json_t *policy_student_view(const struct policy *p, const struct store_extension *ext,
			    int64_t now_ms, const json_t *result);
/* Gradescope's results.json (grade_to_gradescope) with every test the
 * policy reveals now marked "visible"; others keep the assignment's value,
 * which Gradescope enforces. */
json_t *policy_gradescope(const struct policy *p, const struct store_extension *ext, int64_t now_ms,
			  const json_t *result);

/* Who is looking at a result, and in which format they asked for it. */
enum result_viewer {
	RESULT_VIEWER_STAFF,   /* an instructor's or admin's token, the course's own callbacks */
	RESULT_VIEWER_STUDENT, /* a submit-scoped token, and a callback it asked for */
};
enum result_format {
	RESULT_FORMAT_RESULT,	  /* the result document (docs/result.md) */
	RESULT_FORMAT_STUDENT,	  /* the student view of it */
	RESULT_FORMAT_GRADESCOPE, /* Gradescope's results.json */
};

/*
 * What `viewer` may see of the result document `full`, in `format`: the one
 * function every answer of the service that carries a result goes through
 * (GET /v1/submissions/{id} in every format, callbacks, the web pages).  A
 * student gets the student view under the policy (policy_student_view), in
 * whatever format they ask for: Gradescope's output is built from that
 * view, never from the full result.  Staff get the result itself, the
 * student view as a student would see it, or Gradescope's output under the
 * policy.  p NULL (the policy could not be read): the default view, every
 * test not marked visible hidden, never more.  NULL when out of memory.
 */
json_t *policy_result_view(enum result_viewer viewer, enum result_format format,
			   const struct policy *p, const struct store_extension *ext, int64_t now_ms,
			   const json_t *full);

/* ---- the gradebook ---- */

/* One student's line of the gradebook. */
struct policy_grade {
	char student[256];
	int64_t submissions; /* counted (not gradable ones excluded, pending ones included) */
	int64_t pending;     /* without a result yet */
	bool extension;	     /* the student has one */
	bool has_counting;   /* false: nothing below */
	int64_t submission_id;
	int64_t result_id;
	int64_t received_ms;
	char status[32]; /* the result document's */
	double raw_score, max_score;
	struct policy_lateness late;
	double final_score; /* late.score */
};

/*
 * The gradebook from store_gradebook_rows() (sorted by student) and
 * store_extension_list() (sorted by student): one line per student, in
 * that order.  *ret is malloc'd (NULL when n is 0), free it with free().
 */
int policy_gradebook(const struct policy *p, const struct store_grade_row *rows, size_t n,
		     const struct store_extension *exts, size_t next, struct policy_grade **ret,
		     size_t *ret_n, struct err *e);

/*
 * CSV (RFC 4180: CRLF line ends, fields with a comma, quote, CR or LF
 * quoted, quotes doubled), a header line first.  A text cell that starts
 * with = + - @ tab or CR gets a leading apostrophe so that no spreadsheet
 * reads it as a formula.  Columns: docs/policy.md.  Malloc'd, NUL-terminated;
 * NULL when out of memory.
 */
char *policy_gradebook_csv(const struct policy *p, const struct policy_grade *g, size_t n,
			   size_t *ret_len);
/* {"assignment_id", "policy", "students": [...]}: docs/policy.md.  Dump
 * with JSON_REAL_PRECISION(15) to print 5.95 as 5.95.  NULL when out of
 * memory. */
json_t *policy_gradebook_json(int64_t assignment_id, const struct policy *p,
			      const struct policy_grade *g, size_t n);

enum policy_format { POLICY_FORMAT_CSV = 0, POLICY_FORMAT_JSON = 1 };
/* The whole export of an assignment from the store, as text (malloc'd,
 * NUL-terminated).  Returns 0 or a negative enum store_status. */
int policy_export(struct store *st, int64_t assignment_id, enum policy_format fmt, char **ret_text,
		  size_t *ret_len, struct err *e);

/* ---- the store ---- */

/* The assignment's policy, or the defaults when none was set.  A stored
 * document that no longer parses is our failure (ERR_INTERNAL). */
int policy_load(struct store *st, int64_t assignment_id, struct policy *ret, struct err *e);
/* Store the policy's canonical document. */
int policy_save(struct store *st, int64_t assignment_id, const struct policy *p, struct err *e);

/*
 * Everything that decides whether `student` (NULL: unlabelled, no
 * per-student limit) may submit to the assignment now: the course's daily
 * CPU cap first, then the policy's limit and interval.  Returns 0 with
 * *ret filled (allowed or not), or a negative enum store_status.
 */
int policy_admit(struct store *st, int64_t assignment_id, const char *student,
		 struct policy_verdict *ret, struct err *e);

/* ---- budgets ---- */

/* Prices of sandbox time, US dollars (docs/policy.md, "Budgets"). */
struct policy_prices {
	double vcpu_hour; /* one vCPU for an hour */
	double gib_hour;  /* one GiB of memory for an hour */
};
/* The defaults: E2B's published usage prices, $0.000014 per vCPU-second
 * and $0.0000045 per GiB-second. */
#define POLICY_PRICE_VCPU_HOUR 0.0504
#define POLICY_PRICE_GIB_HOUR  0.0162
/* The estimated cost, in dollars, of CPU-seconds and GiB-seconds reserved
 * (prices NULL: the defaults).  Negative or non-finite inputs count as 0. */
double policy_cost(double cpu_seconds, double gib_seconds, const struct policy_prices *prices);

/* The start (00:00 UTC) of the day of `now_ms`: a daily cap's window. */
int64_t policy_day_start(int64_t now_ms);
/*
 * The daily cap rule: refused (POLICY_OVER_BUDGET, next_ms the next UTC
 * day) when `used` CPU-seconds today reached `cap` (NaN: no cap; 0 stops
 * every submission).  Returns true when allowed.
 */
bool policy_budget_eval(double cap, double used, int64_t now_ms, struct policy_verdict *ret);
/* policy_budget_eval() of a course from the store (its cap, its CPU-seconds
 * since 00:00 UTC by the database's clock).  Only an admin changes the cap
 * (store_course_set_cpu_cap).  Returns 0 with *ret filled, or negative. */
int policy_budget_check(struct store *st, int64_t course_id, struct policy_verdict *ret,
			struct err *e);

/* A course's use today (UTC) and its estimated cost. */
struct policy_usage {
	int64_t since_ms;
	double cpu_seconds, gib_seconds;
	double cost; /* dollars at the given prices */
	double cap;  /* CPU-seconds a day; NaN: none */
};
int policy_course_usage(struct store *st, int64_t course_id, const struct policy_prices *prices,
			struct policy_usage *ret, struct err *e);

#endif
