/* Per-assignment policies: parsing, submit checks, lateness, counting, visibility, budgets. */
#include "service/policy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grade/grade.h"
#include "service/jsonreq.h"
#include "util.h"

#define MS_PER_S    1000LL
#define MS_PER_HOUR (3600LL * MS_PER_S)
#define MS_PER_DAY  (24 * MS_PER_HOUR)

/* Policy and extension documents nest two levels; more is refused unparsed. */
#define DOC_MAX_DEPTH 4

static const char *const per_names[] = {"day", "hour", NULL};
static const char *const counting_names[] = {"latest", "best", NULL};
static const char *const tests_names[] = {"hidden", "after_due", "visible", NULL};

const char *policy_per_name(enum policy_per per)
{
	return per_names[per == POLICY_PER_HOUR ? POLICY_PER_HOUR : POLICY_PER_DAY];
}

void policy_default(struct policy *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->counting = POLICY_COUNT_LATEST;
	ret->tests = POLICY_TESTS_HIDDEN;
	ret->late.per = POLICY_PER_DAY;
	ret->late.cap_percent = 100;
}

/* ---- times ---- */

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, int64_t *m, int64_t *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	int64_t doe = z - era * 146097;
	int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = yoe + era * 400 + (*m <= 2);
}

static bool leap_year(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* n decimal digits at *p (advanced); -1 when not n digits. */
static int64_t digits(const char **p, int n)
{
	int64_t v = 0;

	for (int i = 0; i < n; i++, (*p)++) {
		if (**p < '0' || **p > '9')
			return -1;
		v = v * 10 + (**p - '0');
	}
	return v;
}

/* Parse "YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM)"; -1 when malformed
 * or out of range. */
static int rfc3339_parse(const char *s, int64_t *ret_ms)
{
	const char *p = s;
	int64_t y = digits(&p, 4);
	if (y < 0 || *p++ != '-')
		return -1;
	int64_t mo = digits(&p, 2);
	if (mo < 1 || mo > 12 || *p++ != '-')
		return -1;
	int64_t d = digits(&p, 2);
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	if (d < 1 || d > mdays[mo - 1] + (mo == 2 && leap_year(y)) || (*p != 'T' && *p != 't'))
		return -1;
	p++;
	int64_t h = digits(&p, 2);
	if (h < 0 || h > 23 || *p++ != ':')
		return -1;
	int64_t mi = digits(&p, 2);
	if (mi < 0 || mi > 59 || *p++ != ':')
		return -1;
	int64_t sec = digits(&p, 2);
	if (sec < 0 || sec > 59)
		return -1;
	int64_t ms = 0;
	if (*p == '.') {
		p++;
		int n = 0;
		for (; *p >= '0' && *p <= '9'; p++, n++)
			if (n < 3)
				ms = ms * 10 + (*p - '0');
		if (n == 0 || n > 9)
			return -1;
		for (; n < 3; n++)
			ms *= 10;
	}
	int64_t off = 0;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p++ == '-' ? -1 : 1;
		int64_t oh = digits(&p, 2);
		if (oh < 0 || oh > 23 || *p++ != ':')
			return -1;
		int64_t om = digits(&p, 2);
		if (om < 0 || om > 59)
			return -1;
		off = sign * (oh * 60 + om) * 60 * MS_PER_S;
	} else {
		return -1;
	}
	if (*p)
		return -1;
	int64_t t = days_from_civil(y, mo, d) * MS_PER_DAY + (h * 3600 + mi * 60 + sec) * MS_PER_S +
		    ms - off;
	if (t < 0 || t > POLICY_TIME_MAX_MS)
		return -1;
	*ret_ms = t;
	return 0;
}

int policy_time_from_json(const json_t *v, const char *what, int64_t *ret_ms, struct err *e)
{
	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);
		if (n < 0 || n > POLICY_TIME_MAX_MS)
			return err_setk(e, ERR_INPUT, 0, "'%s': %lld ms is out of range (0 to %lld)", what,
					   (long long)n, POLICY_TIME_MAX_MS);
		*ret_ms = (int64_t)n;
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) > 64 ||
	    strlen(json_string_value(v)) != json_string_length(v) ||
	    rfc3339_parse(json_string_value(v), ret_ms) < 0)
		return err_setk(e, ERR_INPUT, 0,
				   "'%s' must be an RFC 3339 time such as \"2026-12-01T23:59:00Z\" "
				   "(year 1970 to 9999) or milliseconds since the epoch",
				   what);
	return 0;
}

void policy_time_format(int64_t ms, char out[32])
{
	int64_t y, m, d;

	if (ms < 0)
		ms = 0;
	if (ms > POLICY_TIME_MAX_MS)
		ms = POLICY_TIME_MAX_MS;
	int64_t days = ms / MS_PER_DAY, rest = ms % MS_PER_DAY;
	civil_from_days(days, &y, &m, &d);
	int64_t sec = rest / MS_PER_S, frac = rest % MS_PER_S;
	int n = snprintf(out, 32, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld", (long long)y,
			 (long long)m, (long long)d, (long long)(sec / 3600),
			 (long long)(sec / 60 % 60), (long long)(sec % 60));
	if (frac)
		snprintf(out + n, (size_t)(32 - n), ".%03lldZ", (long long)frac);
	else
		snprintf(out + n, (size_t)(32 - n), "Z");
}

/* ---- parsing ---- */

/* The policy's own readers add "policy: "; jsonreq's are wrapped so. */
static int in_policy(int rc, struct err *e)
{
	return rc < 0 ? err_wrap(e, "policy") : 0;
}

/* A number member in 0..100; absent or null leaves *ret unless required. */
static int get_percent(const json_t *obj, const char *key, const char *shown, bool required,
		       double *ret, struct err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return err_setk(e, ERR_INPUT, 0, "policy: '%s' is required", shown);
		return 0;
	}
	double x = json_number_value(v);
	if (!json_is_number(v) || !isfinite(x) || x < 0 || x > 100)
		return err_setk(e, ERR_INPUT, 0, "policy: '%s' must be a number from 0 to 100", shown);
	*ret = x;
	return 0;
}

/* A string member, one of names (NULL-terminated); absent or null leaves *ret. */
static int get_enum(const json_t *obj, const char *key, const char *shown, const char *const *names,
		    int *ret, struct err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return 0;
	for (int i = 0; json_is_string(v) && names[i]; i++)
		if (strcmp(json_string_value(v), names[i]) == 0 &&
		    strlen(names[i]) == json_string_length(v)) {
			*ret = i;
			return 0;
		}
	char list[128] = "";
	for (int i = 0; names[i]; i++) {
		const char *sep = i == 0 ? "" : names[i + 1] ? ", " : " or ";
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s\"%s\"", sep,
			 names[i]);
	}
	return err_setk(e, ERR_INPUT, 0, "policy: '%s' must be %s", shown, list);
}

static int parse_late(const json_t *late, struct policy *p, struct err *e)
{
	static const char *const allowed[] = {"per", "penalty_percent", "cap_percent", "grace_s",
					      NULL};
	int per = POLICY_PER_DAY;

	if (!json_is_object(late))
		return err_setk(e, ERR_INPUT, 0, "policy: 'late' must be an object or null");
	if (in_policy(jsonreq_only_at(late, allowed, "late.", e), e) < 0)
		return -1;
	p->has_late = true;
	p->late.cap_percent = 100;
	if (get_enum(late, "per", "late.per", per_names, &per, e) < 0 ||
	    get_percent(late, "penalty_percent", "late.penalty_percent", true,
			&p->late.penalty_percent, e) < 0 ||
	    get_percent(late, "cap_percent", "late.cap_percent", false, &p->late.cap_percent, e) <
		0 ||
	    in_policy(jsonreq_int_at(late, "late.", "grace_s", false, 0, POLICY_MAX_GRACE_S,
				     &p->late.grace_s, e),
		      e) < 0)
		return -1;
	p->late.per = (enum policy_per)per;
	return 0;
}

/* Rules between members. */
static int check_together(const struct policy *p, struct err *e)
{
	if (p->has_late && !p->has_due)
		return err_setk(e, ERR_INPUT, 0, "policy: 'late' needs 'due'");
	if (p->tests == POLICY_TESTS_AFTER_DUE && !p->has_due)
		return err_setk(e, ERR_INPUT, 0, "policy: 'tests_visibility' \"after_due\" needs 'due'");
	return 0;
}

int policy_from_json(const json_t *doc, struct policy *ret, struct err *e)
{
	static const char *const allowed[] = {"max_submissions", "min_interval_s",   "due", "late",
					      "counting",	 "tests_visibility", NULL};
	struct policy p;
	int counting = POLICY_COUNT_LATEST, tests = POLICY_TESTS_HIDDEN;

	policy_default(&p);
	if (!json_is_object(doc))
		return err_setk(e, ERR_INPUT, 0, "policy: expected a JSON object");
	if (in_policy(jsonreq_only(doc, allowed, e), e) < 0 ||
	    in_policy(jsonreq_int(doc, "max_submissions", false, 1, POLICY_MAX_SUBMISSIONS,
				  &p.max_submissions, e),
		      e) < 0 ||
	    in_policy(jsonreq_int(doc, "min_interval_s", false, 0, POLICY_MAX_INTERVAL_S,
				  &p.min_interval_s, e),
		      e) < 0 ||
	    get_enum(doc, "counting", "counting", counting_names, &counting, e) < 0 ||
	    get_enum(doc, "tests_visibility", "tests_visibility", tests_names, &tests, e) < 0)
		return -1;
	p.counting = (enum policy_counting)counting;
	p.tests = (enum policy_tests)tests;
	json_t *due = json_object_get(doc, "due");
	if (due && !json_is_null(due)) {
		if (policy_time_from_json(due, "due", &p.due_ms, e) < 0)
			return err_wrap(e, "policy");
		p.has_due = true;
	}
	json_t *late = json_object_get(doc, "late");
	if (late && !json_is_null(late) && parse_late(late, &p, e) < 0)
		return -1;
	if (check_together(&p, e) < 0)
		return -1;
	*ret = p;
	return 0;
}

int policy_parse(const char *text, size_t len, struct policy *ret, struct err *e)
{
	json_t *doc = NULL;

	if (jsonreq_parse_doc(text, len, STORE_POLICY_MAX, DOC_MAX_DEPTH, "policy", &doc, e) < 0)
		return -1;
	int rc = policy_from_json(doc, ret, e);
	json_decref(doc);
	return rc;
}

json_t *policy_time_json(int64_t ms)
{
	char buf[32];

	policy_time_format(ms, buf);
	return json_string(buf);
}

json_t *policy_to_json(const struct policy *p)
{
	json_t *late = json_null();

	if (p->has_late)
		late = json_pack("{s:s, s:f, s:f, s:I}", "per", per_names[p->late.per],
				 "penalty_percent", p->late.penalty_percent, "cap_percent",
				 p->late.cap_percent, "grace_s", (json_int_t)p->late.grace_s);
	return json_pack("{s:o, s:I, s:o, s:o, s:s, s:s}", "max_submissions",
			 p->max_submissions ? json_integer(p->max_submissions) : json_null(),
			 "min_interval_s", (json_int_t)p->min_interval_s, "due",
			 p->has_due ? policy_time_json(p->due_ms) : json_null(), "late", late, "counting",
			 counting_names[p->counting], "tests_visibility", tests_names[p->tests]);
}

char *policy_to_text(const struct policy *p)
{
	json_t *doc = policy_to_json(p);
	char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;

	json_decref(doc);
	return text;
}

/* ---- extensions ---- */

int policy_extension_parse(const char *text, size_t len, struct store_extension *ret, struct err *e)
{
	static const char *const allowed[] = {"student", "extra_s", "due", NULL};
	struct store_extension x = {0};
	json_t *doc = NULL;
	int rc = -1;

	if (jsonreq_parse_doc(text, len, STORE_POLICY_MAX, DOC_MAX_DEPTH, "extension", &doc, e) <
	    0)
		return -1;
	if (jsonreq_only(doc, allowed, e) < 0) {
		err_wrap(e, "extension");
		goto out;
	}
	const char *student = NULL;
	json_t *extra = json_object_get(doc, "extra_s"), *due = json_object_get(doc, "due");
	if (extra && json_is_null(extra))
		extra = NULL;
	if (due && json_is_null(due))
		due = NULL;
	if (jsonreq_string(doc, "student", false, sizeof(x.student) - 1, &student, e) < 0) {
		err_wrap(e, "extension");
		goto out;
	}
	if (student)
		memcpy(x.student, student, strlen(student) + 1);
	if (!extra == !due) {
		err_setk(e, ERR_INPUT, 0, "extension: give exactly one of 'extra_s' and 'due'");
		goto out;
	}
	if (due) {
		if (policy_time_from_json(due, "due", &x.due_ms, e) < 0) {
			err_wrap(e, "extension");
			goto out;
		}
		x.has_due = true;
	} else if (jsonreq_int(doc, "extra_s", true, 1, STORE_EXTENSION_MAX_S, &x.extra_s, e) <
		   0) {
		err_wrap(e, "extension");
		goto out;
	}
	*ret = x;
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

json_t *policy_extension_to_json(const struct store_extension *x)
{
	return json_pack("{s:s, s:o, s:o}", "student", x->student, "extra_s",
			 x->has_due ? json_null() : json_integer(x->extra_s), "due",
			 x->has_due ? policy_time_json(x->due_ms) : json_null());
}

bool policy_due_for(const struct policy *p, const struct store_extension *ext, int64_t *ret_due_ms)
{
	if (!p->has_due)
		return false;
	if (!ext)
		*ret_due_ms = p->due_ms;
	else if (ext->has_due)
		*ret_due_ms = ext->due_ms;
	else
		*ret_due_ms = p->due_ms + ext->extra_s * MS_PER_S;
	return true;
}

/* ---- submitting ---- */

enum err_kind policy_refusal_kind(enum policy_refusal r)
{
	switch (r) {
	case POLICY_LIMIT:
		return ERR_SUBMISSION_LIMIT;
	case POLICY_TOO_SOON:
		return ERR_TOO_SOON;
	case POLICY_OVER_BUDGET:
		return ERR_BUDGET_EXCEEDED;
	default:
		return ERR_INTERNAL; /* POLICY_ALLOWED is not a refusal */
	}
}

static void verdict_allow(struct policy_verdict *v)
{
	memset(v, 0, sizeof(*v));
}

bool policy_check_submit(const struct policy *p, int64_t counted, int64_t last_ms, int64_t now_ms,
			 struct policy_verdict *ret)
{
	verdict_allow(ret);
	if (p->max_submissions > 0 && counted >= p->max_submissions) {
		ret->refusal = POLICY_LIMIT;
		snprintf(ret->message, sizeof(ret->message),
			 "the limit of %lld submissions for this assignment is reached "
			 "(submissions that Proctor failed to grade do not count)",
			 (long long)p->max_submissions);
		return false;
	}
	if (p->min_interval_s > 0 && last_ms > 0 &&
	    now_ms < last_ms + p->min_interval_s * MS_PER_S) {
		char at[32];
		ret->refusal = POLICY_TOO_SOON;
		ret->next_ms = last_ms + p->min_interval_s * MS_PER_S;
		policy_time_format(ret->next_ms, at);
		snprintf(ret->message, sizeof(ret->message),
			 "submissions must be %lld s apart: the next is allowed at %s (in %lld s)",
			 (long long)p->min_interval_s, at,
			 (long long)((ret->next_ms - now_ms + MS_PER_S - 1) / MS_PER_S));
		return false;
	}
	return true;
}

/* ---- lateness ---- */

void policy_late(const struct policy *p, const struct store_extension *ext, int64_t received_ms,
		 double raw_score, struct policy_lateness *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->score = raw_score;
	if (!policy_due_for(p, ext, &ret->due_ms))
		return;
	ret->has_due = true;
	ret->late_ms = received_ms > ret->due_ms ? received_ms - ret->due_ms : 0;
	int64_t grace_ms = p->has_late ? p->late.grace_s * MS_PER_S : 0;
	ret->late = ret->late_ms > grace_ms;
	if (!ret->late || !p->has_late)
		return;
	int64_t unit = p->late.per == POLICY_PER_HOUR ? MS_PER_HOUR : MS_PER_DAY;
	/* Every day or hour started after due + grace. */
	ret->units = (ret->late_ms - grace_ms + unit - 1) / unit;
	double pct = (double)ret->units * p->late.penalty_percent;
	ret->penalty_percent = pct < p->late.cap_percent ? pct : p->late.cap_percent;
	ret->score = raw_score * (100.0 - ret->penalty_percent) / 100.0;
}

/* ---- the counting result ---- */

static bool counts(const struct store_grade_row *r)
{
	return r->has_result && !r->not_gradable;
}

/* Is a later than b (received, then submission id)? */
static bool later(const struct store_grade_row *a, const struct store_grade_row *b)
{
	if (a->received_ms != b->received_ms)
		return a->received_ms > b->received_ms;
	return a->submission_id > b->submission_id;
}

/* Is a better than b: a higher final score; NaN below every score; a tie
 * goes to the earlier submission. */
static bool better(double fa, const struct store_grade_row *a, double fb,
		   const struct store_grade_row *b)
{
	if (isnan(fa) != isnan(fb))
		return isnan(fb);
	if (!isnan(fa) && fa != fb)
		return fa > fb;
	return later(b, a);
}

bool policy_counting(const struct policy *p, const struct store_extension *ext,
		     const struct store_grade_row *rows, size_t n, size_t *ret_index)
{
	bool found = false;
	size_t best = 0;
	double best_final = NAN;

	for (size_t i = 0; i < n; i++) {
		if (!counts(&rows[i]))
			continue;
		struct policy_lateness l;
		policy_late(p, ext, rows[i].received_ms, rows[i].score, &l);
		bool take = !found;
		if (found && p->counting == POLICY_COUNT_LATEST)
			take = later(&rows[i], &rows[best]);
		else if (found)
			take = better(l.score, &rows[i], best_final, &rows[best]);
		if (take) {
			found = true;
			best = i;
			best_final = l.score;
		}
	}
	if (found)
		*ret_index = best;
	return found;
}

/* ---- the store ---- */

int policy_load(struct store *st, int64_t assignment_id, struct policy *ret, struct err *e)
{
	char *text = NULL;
	int rc = store_policy_get(st, assignment_id, &text, e);

	if (rc < 0)
		return rc;
	if (!text) {
		policy_default(ret);
		return 0;
	}
	rc = policy_parse(text, strlen(text), ret, e);
	free(text);
	if (rc < 0) {
		err_wrap(e, "the stored policy of assignment %lld", (long long)assignment_id);
		return err_classify(e, ERR_INTERNAL);
	}
	return 0;
}

int policy_save(struct store *st, int64_t assignment_id, const struct policy *p, struct err *e)
{
	char *text = policy_to_text(p);

	if (!text)
		return err_set(e, ENOMEM, "policy");
	int rc = store_policy_set(st, assignment_id, text, e);
	free(text);
	return rc;
}

int policy_admit(struct store *st, int64_t assignment_id, const char *student,
		 struct policy_verdict *ret, struct err *e)
{
	struct store_assignment a;
	struct store_submit_count c;
	struct policy p;
	int rc;

	if ((rc = store_assignment_get(st, assignment_id, &a, e)) < 0 ||
	    (rc = policy_budget_check(st, a.course_id, ret, e)) < 0)
		return rc;
	if (ret->refusal != POLICY_ALLOWED || !student)
		return 0;
	if ((rc = policy_load(st, assignment_id, &p, e)) < 0)
		return rc;
	if (!p.max_submissions && !p.min_interval_s)
		return 0;
	if ((rc = store_student_submissions(st, assignment_id, student, &c, e)) < 0)
		return rc;
	policy_check_submit(&p, c.counted, c.last_ms, c.now_ms, ret);
	return 0;
}

/* ---- budgets ---- */

double policy_cost(double cpu_seconds, double gib_seconds, const struct policy_prices *prices)
{
	const struct policy_prices dflt = {POLICY_PRICE_VCPU_HOUR, POLICY_PRICE_GIB_HOUR};
	const struct policy_prices *pr = prices ? prices : &dflt;
	double cpu = isfinite(cpu_seconds) && cpu_seconds > 0 ? cpu_seconds : 0;
	double gib = isfinite(gib_seconds) && gib_seconds > 0 ? gib_seconds : 0;

	return cpu / 3600.0 * pr->vcpu_hour + gib / 3600.0 * pr->gib_hour;
}

int64_t policy_day_start(int64_t now_ms)
{
	int64_t d = now_ms / MS_PER_DAY;

	if (now_ms < 0 && now_ms % MS_PER_DAY)
		d--;
	return d * MS_PER_DAY;
}

bool policy_budget_eval(double cap, double used, int64_t now_ms, struct policy_verdict *ret)
{
	verdict_allow(ret);
	if (isnan(cap) || used < cap)
		return true;
	char at[32];
	ret->refusal = POLICY_OVER_BUDGET;
	ret->next_ms = policy_day_start(now_ms) + MS_PER_DAY;
	policy_time_format(ret->next_ms, at);
	snprintf(ret->message, sizeof(ret->message),
		 "the course has used %.0f of its %.0f CPU-seconds for today (UTC): "
		 "submissions resume at %s, or when an admin raises the cap",
		 used, cap, at);
	return false;
}

int policy_budget_check(struct store *st, int64_t course_id, struct policy_verdict *ret,
			struct err *e)
{
	struct store_course c;
	int64_t now;
	double used = 0;
	int rc;

	if ((rc = store_course_get(st, course_id, &c, e)) < 0)
		return rc;
	if (isnan(c.daily_cpu_cap)) {
		verdict_allow(ret);
		return 0;
	}
	if ((rc = store_now_ms(st, &now, e)) < 0 ||
	    (rc = store_course_cpu_since(st, course_id, policy_day_start(now), &used, e)) < 0)
		return rc;
	policy_budget_eval(c.daily_cpu_cap, used, now, ret);
	return 0;
}

int policy_course_usage(struct store *st, int64_t course_id, const struct policy_prices *prices,
			struct policy_usage *ret, struct err *e)
{
	struct store_course c;
	int64_t now;
	int rc;

	memset(ret, 0, sizeof(*ret));
	if ((rc = store_course_get(st, course_id, &c, e)) < 0 ||
	    (rc = store_now_ms(st, &now, e)) < 0)
		return rc;
	ret->since_ms = policy_day_start(now);
	ret->cap = c.daily_cpu_cap;
	if ((rc = store_course_usage_since(st, course_id, ret->since_ms, &ret->cpu_seconds,
					   &ret->gib_seconds, e)) < 0)
		return rc;
	ret->cost = policy_cost(ret->cpu_seconds, ret->gib_seconds, prices);
	return 0;
}
