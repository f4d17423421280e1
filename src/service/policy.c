/* Per-assignment policies: parsing, submit checks, lateness, counting, visibility, budgets. */
#include "service/policy.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grade/grade.h"
#include "util.h"

#define MS_PER_S    1000LL
#define MS_PER_HOUR (3600LL * MS_PER_S)
#define MS_PER_DAY  (24 * MS_PER_HOUR)

/* Policy and extension documents nest two levels; more is refused unparsed. */
#define DOC_MAX_DEPTH 4

static const char *const per_names[] = {"day", "hour", NULL};
static const char *const counting_names[] = {"latest", "best", NULL};
static const char *const tests_names[] = {"hidden", "after_due", "visible", NULL};

static int input_error(struct err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int input_error(struct err *e, const char *fmt, ...)
{
	char msg[sizeof(e->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return err_setk(e, ERR_INPUT, 0, "%s", msg);
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
			return input_error(e, "'%s': %lld ms is out of range (0 to %lld)", what,
					   (long long)n, POLICY_TIME_MAX_MS);
		*ret_ms = (int64_t)n;
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) > 64 ||
	    strlen(json_string_value(v)) != json_string_length(v) ||
	    rfc3339_parse(json_string_value(v), ret_ms) < 0)
		return input_error(e,
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

/* A member name for an error, cut and without control characters. */
static void shown_key(const char *key, char *out, size_t cap)
{
	size_t n = 0;

	for (const char *k = key; *k && n + 4 < cap && n < 64; k++)
		out[n++] = (unsigned char)*k < 0x20 || *k == 0x7f ? '?' : *k;
	if (*key && strlen(key) > 64 && n + 4 < cap)
		out[n++] = '.', out[n++] = '.', out[n++] = '.';
	out[n] = '\0';
}

/* Refuse members not in `allowed`, naming the first; `prefix` is "" or "late.". */
static int only_members(const json_t *obj, const char *const *allowed, const char *what,
			const char *prefix, struct err *e)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		bool known = false;
		for (size_t i = 0; allowed[i] && !known; i++)
			known = strcmp(key, allowed[i]) == 0;
		if (!known) {
			char shown[80];
			shown_key(key, shown, sizeof(shown));
			return input_error(e, "%s: unknown field '%s%s'", what, prefix, shown);
		}
	}
	return 0;
}

/* Bounded text, one JSON object, no duplicate members. */
static int load_object(const char *text, size_t len, const char *what, json_t **ret, struct err *e)
{
	json_error_t je;

	if (len == 0)
		return input_error(e, "%s: empty; expected a JSON object", what);
	if (len > STORE_POLICY_MAX)
		return input_error(e, "%s: %zu bytes; at most %u are accepted", what, len,
				   STORE_POLICY_MAX);
	if (json_nesting_exceeds(text, len, DOC_MAX_DEPTH))
		return input_error(e, "%s: nests deeper than %d levels", what, DOC_MAX_DEPTH);
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		return input_error(e, "%s: malformed JSON at line %d, column %d: %s", what, je.line,
				   je.column, je.text);
	if (!json_is_object(doc)) {
		json_decref(doc);
		return input_error(e, "%s: expected a JSON object", what);
	}
	*ret = doc;
	return 0;
}

/* An integer member in lo..hi; absent or null leaves *ret. */
static int get_int(const json_t *obj, const char *key, const char *shown, int64_t lo, int64_t hi,
		   int64_t *ret, struct err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return input_error(e, "policy: '%s' must be a whole number from %lld to %lld",
				   shown, (long long)lo, (long long)hi);
	*ret = (int64_t)json_integer_value(v);
	return 0;
}

/* A number member in 0..100; absent or null leaves *ret unless required. */
static int get_percent(const json_t *obj, const char *key, const char *shown, bool required,
		       double *ret, struct err *e)
{
	json_t *v = json_object_get(obj, key);

	if (!v || json_is_null(v)) {
		if (required)
			return input_error(e, "policy: '%s' is required", shown);
		return 0;
	}
	double x = json_number_value(v);
	if (!json_is_number(v) || !isfinite(x) || x < 0 || x > 100)
		return input_error(e, "policy: '%s' must be a number from 0 to 100", shown);
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
	return input_error(e, "policy: '%s' must be %s", shown, list);
}

static int parse_late(const json_t *late, struct policy *p, struct err *e)
{
	static const char *const allowed[] = {"per", "penalty_percent", "cap_percent", "grace_s",
					      NULL};
	int per = POLICY_PER_DAY;

	if (!json_is_object(late))
		return input_error(e, "policy: 'late' must be an object or null");
	if (only_members(late, allowed, "policy", "late.", e) < 0)
		return -1;
	p->has_late = true;
	p->late.cap_percent = 100;
	if (get_enum(late, "per", "late.per", per_names, &per, e) < 0 ||
	    get_percent(late, "penalty_percent", "late.penalty_percent", true,
			&p->late.penalty_percent, e) < 0 ||
	    get_percent(late, "cap_percent", "late.cap_percent", false, &p->late.cap_percent, e) <
		0 ||
	    get_int(late, "grace_s", "late.grace_s", 0, POLICY_MAX_GRACE_S, &p->late.grace_s, e) <
		0)
		return -1;
	p->late.per = (enum policy_per)per;
	return 0;
}

/* Rules between members. */
static int check_together(const struct policy *p, struct err *e)
{
	if (p->has_late && !p->has_due)
		return input_error(e, "policy: 'late' needs 'due'");
	if (p->tests == POLICY_TESTS_AFTER_DUE && !p->has_due)
		return input_error(e, "policy: 'tests_visibility' \"after_due\" needs 'due'");
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
		return input_error(e, "policy: expected a JSON object");
	if (only_members(doc, allowed, "policy", "", e) < 0 ||
	    get_int(doc, "max_submissions", "max_submissions", 1, POLICY_MAX_SUBMISSIONS,
		    &p.max_submissions, e) < 0 ||
	    get_int(doc, "min_interval_s", "min_interval_s", 0, POLICY_MAX_INTERVAL_S,
		    &p.min_interval_s, e) < 0 ||
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

	if (load_object(text, len, "policy", &doc, e) < 0)
		return -1;
	int rc = policy_from_json(doc, ret, e);
	json_decref(doc);
	return rc;
}

static json_t *time_json(int64_t ms)
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
			 p->has_due ? time_json(p->due_ms) : json_null(), "late", late, "counting",
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

	if (load_object(text, len, "extension", &doc, e) < 0)
		return -1;
	if (only_members(doc, allowed, "extension", "", e) < 0)
		goto out;
	json_t *student = json_object_get(doc, "student");
	json_t *extra = json_object_get(doc, "extra_s"), *due = json_object_get(doc, "due");
	if (extra && json_is_null(extra))
		extra = NULL;
	if (due && json_is_null(due))
		due = NULL;
	if (student && !json_is_null(student)) {
		const char *s = json_string_value(student);
		size_t n = json_string_length(student);
		bool ok = s && n > 0 && n < sizeof(x.student) && strlen(s) == n;
		for (size_t i = 0; ok && i < n; i++)
			ok = (unsigned char)s[i] >= 0x20 && s[i] != 0x7f;
		if (!ok) {
			input_error(e, "extension: 'student' must be 1 to %zu bytes of text",
				    sizeof(x.student) - 1);
			goto out;
		}
		memcpy(x.student, s, n + 1);
	}
	if (!extra == !due) {
		input_error(e, "extension: give exactly one of 'extra_s' and 'due'");
		goto out;
	}
	if (due) {
		if (policy_time_from_json(due, "due", &x.due_ms, e) < 0) {
			err_wrap(e, "extension");
			goto out;
		}
		x.has_due = true;
	} else if (!json_is_integer(extra) || json_integer_value(extra) < 1 ||
		   json_integer_value(extra) > STORE_EXTENSION_MAX_S) {
		input_error(e, "extension: 'extra_s' must be a whole number from 1 to %lld",
			    STORE_EXTENSION_MAX_S);
		goto out;
	} else {
		x.extra_s = (int64_t)json_integer_value(extra);
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
			 x->has_due ? time_json(x->due_ms) : json_null());
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

static const char *const refusal_codes[] = {NULL, "submission_limit", "too_soon", "budget_exceeded"};

const char *policy_refusal_code(enum policy_refusal r)
{
	return (unsigned)r < sizeof(refusal_codes) / sizeof(refusal_codes[0]) ? refusal_codes[r]
									      : NULL;
}

int policy_refusal_http(enum policy_refusal r)
{
	return r == POLICY_ALLOWED ? 200 : r == POLICY_TOO_SOON ? 429 : 403;
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

/* ---- what students see ---- */

bool policy_test_revealed(const struct policy *p, const struct store_extension *ext, int64_t now_ms,
			  const char *visibility)
{
	int64_t due;

	if (!visibility)
		return false;
	if (strcmp(visibility, "visible") == 0)
		return true;
	if (strcmp(visibility, "after_published") == 0)
		return p->tests == POLICY_TESTS_VISIBLE;
	if (strcmp(visibility, "after_due_date") != 0)
		return false; /* hidden, or anything unknown */
	if (p->tests == POLICY_TESTS_VISIBLE)
		return true;
	if (p->tests != POLICY_TESTS_AFTER_DUE || !policy_due_for(p, ext, &due))
		return false;
	int64_t grace = p->has_late ? p->late.grace_s * MS_PER_S : 0;
	return now_ms >= due + grace;
}

static const char *test_visibility(const json_t *test)
{
	return json_string_value(json_object_get(test, "visibility"));
}

json_t *policy_student_view(const struct policy *p, const struct store_extension *ext,
			    int64_t now_ms, const json_t *result)
{
	json_t *copy = json_deep_copy(result), *t;
	size_t i;

	if (!copy)
		return NULL;
	/* grade_student_view() keeps the identity of tests marked visible:
	 * mark the revealed ones so, in a copy... */
	json_array_foreach(json_object_get(copy, "tests"), i, t)
	{
		if (json_is_object(t) && policy_test_revealed(p, ext, now_ms, test_visibility(t)))
			json_object_set_new(t, "visibility", json_string("visible"));
	}
	json_t *view = grade_student_view(copy);
	json_decref(copy);
	if (!view)
		return NULL;
	/* ...and give them back the assignment's visibility. */
	const json_t *orig = json_object_get(result, "tests");
	json_array_foreach(json_object_get(view, "tests"), i, t)
	{
		json_t *v = json_object_get(json_array_get(orig, i), "visibility");
		if (json_is_object(t) && v)
			json_object_set(t, "visibility", v);
	}
	return view;
}

json_t *policy_gradescope(const struct policy *p, const struct store_extension *ext, int64_t now_ms,
			  const json_t *result)
{
	json_t *gs = grade_to_gradescope(result), *t;
	const json_t *orig = json_object_get(result, "tests");
	size_t i;

	if (!gs)
		return NULL;
	json_array_foreach(json_object_get(gs, "tests"), i, t)
	{
		const char *vis = test_visibility(json_array_get(orig, i));
		if (policy_test_revealed(p, ext, now_ms, vis))
			json_object_set_new(t, "visibility", json_string("visible"));
	}
	return gs;
}

json_t *policy_result_view(enum result_viewer viewer, enum result_format format,
			   const struct policy *p, const struct store_extension *ext, int64_t now_ms,
			   const json_t *full)
{
	if (viewer == RESULT_VIEWER_STAFF && format == RESULT_FORMAT_RESULT)
		return json_deep_copy(full);
	if (viewer == RESULT_VIEWER_STAFF && format == RESULT_FORMAT_GRADESCOPE)
		return p ? policy_gradescope(p, ext, now_ms, full) : grade_to_gradescope(full);
	/* A student, or staff asking for the student's view: the student view
	 * first, whatever is made of it after. */
	json_t *view = p ? policy_student_view(p, ext, now_ms, full) : grade_student_view(full);
	if (!view || format != RESULT_FORMAT_GRADESCOPE)
		return view;
	json_t *gs = p ? policy_gradescope(p, ext, now_ms, view) : grade_to_gradescope(view);
	json_decref(view);
	return gs;
}

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

/* A growing text buffer; `failed` once an allocation failed. */
struct text {
	char *s;
	size_t len, cap;
	bool failed;
};

static void text_add(struct text *t, const char *s, size_t n)
{
	if (t->failed)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		while (cap < t->len + n + 1)
			cap *= 2;
		char *grown = realloc(t->s, cap);
		if (!grown) {
			t->failed = true;
			return;
		}
		t->s = grown;
		t->cap = cap;
	}
	memcpy(t->s + t->len, s, n);
	t->len += n;
	t->s[t->len] = '\0';
}

/* One CSV cell of text and its comma (csv_cell: quoted, one line, no
 * formula: student labels and statuses come from users). */
static void csv_text(struct text *t, const char *s)
{
	char *cell = csv_cell(s);

	if (!cell) {
		t->failed = true;
		return;
	}
	text_add(t, cell, strlen(cell));
	text_add(t, ",", 1);
	free(cell);
}

/* A number cell: empty when NaN. */
static void csv_num(struct text *t, double v)
{
	char buf[64] = "";

	if (isfinite(v))
		snprintf(buf, sizeof(buf), "%.15g", v);
	text_add(t, buf, strlen(buf));
	text_add(t, ",", 1);
}

static void csv_int(struct text *t, int64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld,", (long long)v);
	text_add(t, buf, strlen(buf));
}

/* The cells of the counting submission (empty when there is none). */
static void csv_counting(struct text *t, const struct policy_grade *g)
{
	char at[32];

	if (!g->has_counting) {
		text_add(t, ",,,,,,,,,,", 10);
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
		text_add(t, ",,,,", 4);
	}
	csv_num(t, g->final_score);
}

static void csv_line(struct text *t, const struct policy_grade *g)
{
	csv_text(t, g->student);
	csv_counting(t, g);
	csv_int(t, g->submissions);
	csv_int(t, g->pending);
	text_add(t, g->extension ? "\"yes\"\r\n" : "\"no\"\r\n", g->extension ? 7 : 6);
}

char *policy_gradebook_csv(const struct policy *p, const struct policy_grade *g, size_t n,
			   size_t *ret_len)
{
	struct text t = {0};
	const char *units = p->has_late && p->late.per == POLICY_PER_HOUR ? "hours" : "days";
	char header[256];

	snprintf(header, sizeof(header),
		 "student,submission_id,submitted_at,status,raw_score,max_score,late,"
		 "late_seconds,%s_late,penalty_percent,final_score,submissions,pending,"
		 "extension\r\n",
		 units);
	text_add(&t, header, strlen(header));
	for (size_t i = 0; i < n; i++)
		csv_line(&t, &g[i]);
	if (t.failed) {
		free(t.s);
		return NULL;
	}
	if (ret_len)
		*ret_len = t.len;
	return t.s;
}

static json_t *num_json(double v)
{
	return isfinite(v) ? json_real(v) : json_null();
}

static json_t *late_json(const struct policy *p, const struct policy_grade *g)
{
	if (!g->has_counting || !g->late.has_due)
		return json_null();
	return json_pack("{s:o, s:b, s:I, s:I, s:s, s:f}", "due", time_json(g->late.due_ms), "late",
			 g->late.late, "seconds", (json_int_t)(g->late.late_ms / MS_PER_S), "units",
			 (json_int_t)g->late.units, "per",
			 per_names[p->has_late ? p->late.per : POLICY_PER_DAY], "penalty_percent",
			 g->late.penalty_percent);
}

static json_t *grade_json(const struct policy *p, const struct policy_grade *g)
{
	json_t *counting = json_null();

	if (g->has_counting)
		counting =
		    json_pack("{s:I, s:I, s:o, s:I, s:s, s:o, s:o, s:o, s:o}", "submission_id",
			      (json_int_t)g->submission_id, "result_id", (json_int_t)g->result_id,
			      "submitted_at", time_json(g->received_ms), "submitted_ms",
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
