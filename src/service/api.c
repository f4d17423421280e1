/* The service's HTTP API (api.h, docs/api.md). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <nettle/base64.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "grade/grade.h"
#include "service/api.h"
#include "service/callback.h"
#include "service/jsonreq.h"
#include "service/policy.h"
#include "store/store.h"
#include "util.h"

/* JSON bodies that are not uploads. */
#define SMALL_BODY (64u << 10)
/* Pages of submission lists. */
#define LIST_MAX 1000
/* How often a long poll reads the store: again after a quarter of the time
 * it has waited, from WAIT_FIRST_MS (a trivial grading takes tens of
 * milliseconds) to WAIT_STEP_MS, so a result is seen at most about a
 * quarter of the wait, and 100 ms, after it was recorded. */
#define WAIT_FIRST_MS 5
#define WAIT_STEP_MS  100

/* Upper bounds of the latency histograms, seconds. */
static const double buckets[] = {0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1,
				 2.5,	5,    10,   30,	  60,  120,  300, 600};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

enum phase { PH_QUEUE, PH_SANDBOX, PH_GRADING, PH_TOTAL, PH_COUNT };
static const char *const phase_names[PH_COUNT] = {"queue", "sandbox_start", "grading", "total"};

struct histogram {
	uint64_t le[N_BUCKETS + 1]; /* the last is +Inf */
	double sum;
	uint64_t count;
};

#define MAX_COUNTERS 32
struct counter {
	char name[96];
	uint64_t n;
};

struct api {
	struct api_config c;
	pthread_key_t key;
	pthread_mutex_t lock; /* the metrics below */
	struct histogram h[PH_COUNT];
	struct counter counters[MAX_COUNTERS];
	size_t n_counters;
};

void api_config_default(struct api_config *c)
{
	*c = (struct api_config){.max_upload = 16u << 20,
				 .queue_bound = 10000,
				 .wait_max_s = 60,
				 .retry_after_s = 5,
				 .price_cpu_hour = POLICY_PRICE_VCPU_HOUR,
				 .price_gib_hour = POLICY_PRICE_GIB_HOUR};
}

/* ---- errors --------------------------------------------------------------- */

int http_error_from(struct http_response *rs, const struct err *e)
{
	return http_error(rs, (unsigned)err_http_status(e->kind), err_code(e->kind), "%s", e->msg);
}

/* A store failure: what it says of the request, else ours (500). */
static int store_error(struct http_response *rs, int rc, struct err *e)
{
	switch (rc) {
	case STORE_NOT_FOUND:
		return http_error(rs, 404, "not_found", "%s", e->msg);
	case STORE_TOO_LARGE:
		return http_error(rs, 413, "too_large", "%s", e->msg);
	case STORE_INVALID:
		return http_error(rs, 422, "invalid_input", "%s", e->msg);
	default:
		return http_error(rs, 500, "internal", "%s", e->msg);
	}
}

/* ---- metrics -------------------------------------------------------------- */

void api_count(struct api *a, const char *counter, uint64_t n)
{
	pthread_mutex_lock(&a->lock);
	size_t i;
	for (i = 0; i < a->n_counters; i++)
		if (strcmp(a->counters[i].name, counter) == 0)
			break;
	if (i == a->n_counters && i < MAX_COUNTERS) {
		snprintf(a->counters[i].name, sizeof(a->counters[i].name), "%s", counter);
		a->n_counters++;
	}
	if (i < MAX_COUNTERS)
		a->counters[i].n += n;
	pthread_mutex_unlock(&a->lock);
}

static void observe(struct histogram *h, double s)
{
	size_t i = 0;

	while (i < N_BUCKETS && s > buckets[i])
		i++;
	h->le[i]++;
	h->sum += s;
	h->count++;
}

void api_observe_phases(struct api *a, int64_t queued_ms, int64_t started_ms, int64_t ready_ms,
			int64_t finished_ms)
{
	pthread_mutex_lock(&a->lock);
	if (started_ms >= queued_ms && started_ms > 0)
		observe(&a->h[PH_QUEUE], (double)(started_ms - queued_ms) / 1000);
	if (ready_ms >= started_ms && ready_ms > 0 && started_ms > 0)
		observe(&a->h[PH_SANDBOX], (double)(ready_ms - started_ms) / 1000);
	if (finished_ms >= started_ms && started_ms > 0)
		observe(&a->h[PH_GRADING], (double)(finished_ms - started_ms) / 1000);
	if (finished_ms >= queued_ms && finished_ms > 0)
		observe(&a->h[PH_TOTAL], (double)(finished_ms - queued_ms) / 1000);
	pthread_mutex_unlock(&a->lock);
}

/* A growing text buffer for the Prometheus answer. */
struct text {
	char *s;
	size_t len, cap;
	bool oom;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;

	for (;;) {
		size_t room = t->cap - t->len;
		va_start(ap, fmt);
		int n = t->s ? vsnprintf(t->s + t->len, room, fmt, ap) : -1;
		va_end(ap);
		if (n >= 0 && (size_t)n < room) {
			t->len += (size_t)n;
			return;
		}
		size_t ncap = t->cap ? t->cap * 2 : 8192;
		char *ns = realloc(t->s, ncap);
		if (!ns) {
			t->oom = true;
			return;
		}
		t->s = ns;
		t->cap = ncap;
	}
}

static void put_histograms(struct api *a, struct text *t)
{
	put(t, "# HELP proctor_job_phase_seconds Time of each phase of a finished job.\n"
	       "# TYPE proctor_job_phase_seconds histogram\n");
	pthread_mutex_lock(&a->lock);
	for (int p = 0; p < PH_COUNT; p++) {
		uint64_t cum = 0;
		for (size_t i = 0; i <= N_BUCKETS; i++) {
			cum += a->h[p].le[i];
			if (i < N_BUCKETS)
				put(t,
				    "proctor_job_phase_seconds_bucket{phase=\"%s\",le=\"%g\"} "
				    "%" PRIu64 "\n",
				    phase_names[p], buckets[i], cum);
			else
				put(t,
				    "proctor_job_phase_seconds_bucket{phase=\"%s\",le=\"+Inf\"} "
				    "%" PRIu64 "\n",
				    phase_names[p], cum);
		}
		put(t, "proctor_job_phase_seconds_sum{phase=\"%s\"} %.6f\n", phase_names[p],
		    a->h[p].sum);
		put(t, "proctor_job_phase_seconds_count{phase=\"%s\"} %" PRIu64 "\n",
		    phase_names[p], a->h[p].count);
	}
	for (size_t i = 0; i < a->n_counters; i++)
		put(t, "# TYPE proctor_%s_total counter\nproctor_%s_total %" PRIu64 "\n",
		    a->counters[i].name, a->counters[i].name, a->counters[i].n);
	pthread_mutex_unlock(&a->lock);
}

/* A label value for the exposition format: quotes, backslashes and
 * controls become '_' (worker names come from --name). */
static const char *label(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			*p = '_';
	return s;
}

static int put_jobs(struct store *st, struct text *t, struct err *e)
{
	struct store_course_counts cc[256];
	size_t n;

	if (store_job_counts(st, cc, 256, &n, e) < 0)
		return -1;
	put(t, "# HELP proctor_jobs Jobs by course and state.\n# TYPE proctor_jobs gauge\n");
	for (size_t i = 0; i < n; i++)
		for (int s = 0; s < STORE_JOB_STATES; s++)
			put(t, "proctor_jobs{course=\"%" PRId64 "\",state=\"%s\"} %" PRId64 "\n",
			    cc[i].course_id, store_job_state_name(s), cc[i].n[s]);
	struct store_worker_stat ws[64];
	int64_t outcomes[STORE_OUTCOMES];
	size_t nw;
	static const char *const outcome_names[STORE_OUTCOMES] = {"running", "done", "failed",
								  "lease_expired", "released"};
	if (store_worker_stats(st, ws, 64, &nw, outcomes, e) < 0)
		return -1;
	put(t, "# HELP proctor_worker_running_jobs Jobs a worker holds a lease on.\n"
	       "# TYPE proctor_worker_running_jobs gauge\n");
	for (size_t i = 0; i < nw; i++)
		put(t, "proctor_worker_running_jobs{worker=\"%s\"} %" PRId64 "\n",
		    label(ws[i].worker), ws[i].running);
	put(t, "# HELP proctor_worker_last_heartbeat_seconds When a worker last renewed a lease "
	       "(Unix time).\n# TYPE proctor_worker_last_heartbeat_seconds gauge\n");
	for (size_t i = 0; i < nw; i++)
		put(t, "proctor_worker_last_heartbeat_seconds{worker=\"%s\"} %.3f\n",
		    label(ws[i].worker), (double)ws[i].last_heartbeat_ms / 1000);
	put(t, "# HELP proctor_attempts_total Attempts by outcome (lease_expired: a worker lost "
	       "or fenced).\n# TYPE proctor_attempts_total counter\n");
	for (int i = 0; i < STORE_OUTCOMES; i++)
		put(t, "proctor_attempts_total{outcome=\"%s\"} %" PRId64 "\n", outcome_names[i],
		    outcomes[i]);
	put(t, "# HELP proctor_queue_depth Queued and running jobs by course.\n"
	       "# TYPE proctor_queue_depth gauge\n");
	for (size_t i = 0; i < n; i++)
		put(t, "proctor_queue_depth{course=\"%" PRId64 "\"} %" PRId64 "\n", cc[i].course_id,
		    cc[i].n[STORE_JOB_QUEUED] + cc[i].n[STORE_JOB_RUNNING]);
	return 0;
}

/* ---- plumbing ------------------------------------------------------------- */

static void close_store(void *p)
{
	store_close(p);
}

/* When this thread last used its connection (ms, monotonic). */
static _Thread_local uint64_t thread_used_ms;

/* This thread's store connection.  One idle for a while is checked first
 * (a database restarted since would fail the request with a 500) and made
 * again if it broke. */
static struct store *thread_store(struct api *a, struct err *e)
{
	struct store *st = pthread_getspecific(a->key);
	uint64_t now = now_ns() / 1000000;
	int64_t ms;

	if (st && now - thread_used_ms > 2000 && store_now_ms(st, &ms, e) < 0) {
		pthread_setspecific(a->key, NULL);
		st = store_close(st);
	}
	thread_used_ms = now;
	if (st)
		return st;
	if (store_open(a->c.db_url, &st, e) < 0)
		return NULL;
	pthread_setspecific(a->key, st);
	return st;
}

static int reply(struct http_response *rs, unsigned status, json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	if (!text)
		return http_error(rs, 500, "internal", "out of memory");
	return http_json(rs, status, text);
}

/* The token of the request, at least `need`; else an answer (401/403) and -1. */
static int authorize(struct store *st, const struct http_request *rq, struct http_response *rs,
		     enum store_scope need, struct store_token_info *ti)
{
	struct err e;

	if (!rq->bearer) {
		http_error(rs, 401, "unauthorized", "an Authorization: Bearer token is required");
		return -1;
	}
	int rc = store_token_check(st, rq->bearer, ti, &e);
	if (rc == STORE_NOT_FOUND) {
		http_error(rs, 401, "unauthorized", "the token is not valid");
		return -1;
	}
	if (rc < 0) {
		store_error(rs, rc, &e);
		return -1;
	}
	if (ti->scope < need) {
		http_error(rs, 403, "forbidden",
			   "this needs a token of scope '%s' (this one is '%s')",
			   store_scope_name(need), store_scope_name(ti->scope));
		return -1;
	}
	return 0;
}

/* "/v1/submissions/17/results" after prefix "/v1/submissions/": 17, rest "/results". */
static bool path_id(const char *path, const char *prefix, int64_t *id, const char **rest)
{
	size_t n = strlen(prefix);
	char *end;

	if (strncmp(path, prefix, n) != 0 || path[n] < '1' || path[n] > '9')
		return false;
	errno = 0;
	long long v = strtoll(path + n, &end, 10);
	if (errno || v <= 0)
		return false;
	*id = v;
	*rest = end;
	return true;
}

static int parse_body(const struct http_request *rq, size_t max, json_t **doc,
		      struct http_response *rs)
{
	struct err e;

	/* Past the route's cap (below the front's max_body) is too large, as there. */
	if (rq->body_len > max)
		return http_error(rs, 413, "too_large",
				  "the body is %zu bytes; at most %zu are accepted", rq->body_len,
				  max),
		       -1;
	if (jsonreq_parse(rq->body, rq->body_len, max, doc, &e) < 0)
		return http_error(rs, 400, "invalid_request", "%s", e.msg), -1;
	return 0;
}

/* Decode a base64 member into a malloc'd buffer of at most `max` bytes;
 * *too_large says that a refusal was for the size. */
static int base64_member(const json_t *obj, const char *key, uint64_t max, void **ret,
			 size_t *ret_len, bool *too_large, struct err *e)
{
	const char *text;
	struct base64_decode_ctx ctx;

	if (jsonreq_string(obj, key, true, SIZE_MAX, &text, e) < 0)
		return -1;
	size_t in = strlen(text), cap = BASE64_DECODE_LENGTH(in) + 1, len = cap;
	if (in > max / 3 * 4 + 8) {
		*too_large = true;
		return err_setk(e, ERR_INPUT, 0,
				"'%s' is %zu bytes of base64; archives of at most %" PRIu64
				" bytes are accepted",
				key, in, max);
	}
	uint8_t *buf = malloc(cap);
	if (!buf)
		return err_set(e, ENOMEM, "'%s'", key);
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, &len, buf, in, text) || !base64_decode_final(&ctx)) {
		free(buf);
		return err_setk(e, ERR_INPUT, 0, "'%s' is not base64", key);
	}
	if (len > max) {
		free(buf);
		*too_large = true;
		return err_setk(e, ERR_INPUT, 0,
				"'%s' decodes to %zu bytes; at most %" PRIu64 " are accepted", key,
				len, max);
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* The `wait` query parameter, capped at --wait-max; else a 400 and -1. */
static int wait_param(struct api *a, const struct http_request *rq, struct http_response *rs,
		      unsigned *ret)
{
	const char *w = http_request_query(rq, "wait");
	uint64_t n;

	*ret = 0;
	if (!w)
		return 0;
	/* Digits only: no sign, space or overflow (strtoul took "-1" and " 5"). */
	if (parse_u64(w, strlen(w), &n) < 0 || n > 86400) {
		http_error(rs, 400, "invalid_request", "wait: '%.40s' is not a number of seconds",
			   w);
		return -1;
	}
	*ret = n < a->c.wait_max_s ? (unsigned)n : a->c.wait_max_s;
	return 0;
}

/* Whether a long poll of wait_s seconds has time left: then *again_ms is
 * when its handler is called again (http_response.again_ms; the store is
 * read again then), and the connection waits holding no thread. */
static bool poll_again(const struct http_request *rq, unsigned wait_s, unsigned *again_ms)
{
	uint64_t start = rq->first_ns, now = now_ns();
	uint64_t deadline = start + (uint64_t)wait_s * 1000000000ull;

	if (!start || rq->last_call || now >= deadline)
		return false;
	uint64_t ms = (now - start) / 4000000u;
	ms = ms < WAIT_FIRST_MS ? WAIT_FIRST_MS : ms > WAIT_STEP_MS ? WAIT_STEP_MS : ms;
	uint64_t left = (deadline - now + 999999u) / 1000000u;
	*again_ms = (unsigned)(ms < left ? ms : left);
	return true;
}

/* A refused member: 413 for an archive past the upload limit, 500 when we
 * ran out of memory, else 422. */
static void field_error(struct http_response *rs, const struct err *e, bool too_large)
{
	if (too_large)
		http_error(rs, 413, "too_large", "%s", e->msg);
	else if (e->errnum == ENOMEM)
		http_error(rs, 500, "internal", "%s", e->msg);
	else
		http_error(rs, 422, "invalid_input", "%s", e->msg);
}

/* An id of another course is answered as one that does not exist. */
static int foreign(struct err *e, const char *what, int64_t id)
{
	err_setk(e, ERR_NOT_FOUND, 0, "no %s %lld in this course", what, (long long)id);
	return STORE_NOT_FOUND;
}

/* The assignment `id` of the token's course; else an answer and -1. */
static int course_assignment(struct store *st, const struct store_token_info *ti, int64_t id,
			     struct http_response *rs)
{
	struct store_assignment a;
	struct err e;
	int rc = store_assignment_get(st, id, &a, &e);

	if (rc == 0 && a.course_id != ti->course_id)
		rc = foreign(&e, "assignment", id);
	if (rc < 0)
		return store_error(rs, rc, &e), -1;
	return 0;
}

/* Policy and extension documents: at most 16 KiB (413), JSON (400). */
#define DOC_MAX (16u << 10)
static int small_json(const struct http_request *rq, struct http_response *rs, json_t **doc)
{
	if (rq->body_len > DOC_MAX) {
		http_error(rs, 413, "too_large", "the body is %zu bytes; at most %u are accepted",
			   rq->body_len, DOC_MAX);
		return -1;
	}
	return parse_body(rq, DOC_MAX, doc, rs);
}

/* GET|PUT /v1/assignments/{id}/policy (docs/policy.md). */
static void assignment_policy(struct api *a, struct store *st, const struct http_request *rq,
			      struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	struct policy p;
	struct err e;
	int rc;

	if (authorize(st, rq, rs, STORE_SCOPE_INSTRUCTOR, &ti) < 0 ||
	    course_assignment(st, &ti, id, rs) < 0)
		return;
	if (strcmp(rq->method, "PUT") == 0) {
		json_t *doc = NULL;
		if (small_json(rq, rs, &doc) < 0)
			return;
		rc = policy_from_json(doc, &p, &e);
		json_decref(doc);
		if (rc < 0) {
			http_error_from(rs, &e);
			return;
		}
		if ((rc = policy_save(st, id, &p, &e)) < 0) {
			store_error(rs, rc, &e);
			return;
		}
	} else if ((rc = policy_load(st, id, &p, &e)) < 0) {
		store_error(rs, rc, &e);
		return;
	}
	reply(rs, 200, policy_to_json(&p));
}

/* GET|PUT|DELETE /v1/assignments/{id}/extensions (DELETE: ?student=S). */
static void assignment_extensions(struct api *a, struct store *st, const struct http_request *rq,
				  struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	struct store_extension x, *list = NULL;
	size_t n = 0;
	struct err e;
	int rc;

	if (authorize(st, rq, rs, STORE_SCOPE_INSTRUCTOR, &ti) < 0 ||
	    course_assignment(st, &ti, id, rs) < 0)
		return;
	if (strcmp(rq->method, "PUT") == 0) {
		json_t *doc = NULL;
		if (small_json(rq, rs, &doc) < 0)
			return;
		json_decref(doc);
		if (policy_extension_parse(rq->body, rq->body_len, &x, &e) < 0 ||
		    (!x.student[0] && err_setk(&e, ERR_INPUT, 0, "'student' is required") < 0)) {
			http_error_from(rs, &e);
			return;
		}
		rc = store_extension_set(st, id, &x, &e);
	} else if (strcmp(rq->method, "DELETE") == 0) {
		const char *student = http_request_query(rq, "student");
		if (!student || !*student) {
			http_error(rs, 400, "invalid_request",
				   "student: the query parameter is required");
			return;
		}
		rc = store_extension_remove(st, id, student, &e);
	} else {
		rc = 0;
	}
	if (rc < 0 || (rc = store_extension_list(st, id, &list, &n, &e)) < 0) {
		store_error(rs, rc, &e);
		return;
	}
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, policy_extension_to_json(&list[i]));
	free(list);
	reply(rs, 200, json_pack("{s:I, s:o}", "assignment_id", (json_int_t)id, "extensions", arr));
}

/* GET /v1/assignments/{id}/gradebook?format=csv|json: the counting result per student. */
static void assignment_gradebook(struct api *a, struct store *st, const struct http_request *rq,
				 struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	const char *fmt = http_request_query(rq, "format");
	char *text = NULL;
	size_t len = 0;
	struct err e;

	if (authorize(st, rq, rs, STORE_SCOPE_INSTRUCTOR, &ti) < 0 ||
	    course_assignment(st, &ti, id, rs) < 0)
		return;
	bool csv = fmt && strcmp(fmt, "csv") == 0;
	if (fmt && !csv && strcmp(fmt, "json") != 0) {
		http_error(rs, 400, "invalid_request", "format: '%.40s' is not csv or json", fmt);
		return;
	}
	int rc =
	    policy_export(st, id, csv ? POLICY_FORMAT_CSV : POLICY_FORMAT_JSON, &text, &len, &e);
	if (rc < 0) {
		store_error(rs, rc, &e);
		return;
	}
	rs->status = 200;
	rs->body = text;
	rs->content_type = csv ? "text/csv; charset=utf-8" : NULL;
}

/* ---- routes --------------------------------------------------------------- */

static void get_metrics(struct api *a, struct store *st, struct http_response *rs)
{
	struct text t = {0};
	struct err e;

	put_histograms(a, &t);
	if (put_jobs(st, &t, &e) < 0)
		put(&t, "# store: unreadable\n");
	if (t.oom || !t.s) {
		free(t.s);
		http_error(rs, 500, "internal", "out of memory");
		return;
	}
	rs->status = 200;
	rs->body = t.s;
	rs->content_type = "text/plain; version=0.0.4";
}

static void post_assignment(struct api *a, struct store *st, const struct http_request *rq,
			    struct http_response *rs, int64_t id)
{
	static const char *const allowed[] = {"name", "image", "archive", NULL};
	struct store_token_info ti;
	json_t *doc = NULL;
	const char *name, *image;
	void *archive = NULL;
	size_t len = 0;
	bool too_large = false;
	int64_t version_id;
	int version_no;
	struct err e;

	if (authorize(st, rq, rs, STORE_SCOPE_INSTRUCTOR, &ti) < 0 ||
	    parse_body(rq, a->c.max_upload / 3 * 4 + SMALL_BODY, &doc, rs) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_string(doc, "name", true, 255, &name, &e) < 0 ||
	    jsonreq_string(doc, "image", true, 255, &image, &e) < 0 ||
	    base64_member(doc, "archive", a->c.max_upload, &archive, &len, &too_large, &e) < 0) {
		field_error(rs, &e, too_large);
		goto out;
	}
	int rc = store_assignment_add_version(st, ti.course_id, name, archive, len, image,
					      &version_id, &version_no, &e);
	if (rc < 0) {
		store_error(rs, rc, &e);
		goto out;
	}
	struct store_version v;
	if ((rc = store_version_get(st, version_id, &v, &e)) < 0) {
		store_error(rs, rc, &e);
		goto out;
	}
	reply(rs, 201,
	      json_pack("{s:I, s:I, s:i, s:s, s:s}", "assignment_id", (json_int_t)v.assignment_id,
			"version_id", (json_int_t)version_id, "version", version_no, "name", name,
			"archive_sha256", v.archive_sha256));
out:
	free(archive);
	json_decref(doc);
}

static json_t *version_json(const struct store_version *v)
{
	return json_pack("{s:I, s:s, s:I, s:i, s:s, s:s, s:I}", "assignment_id",
			 (json_int_t)v->assignment_id, "name", v->name, "version_id",
			 (json_int_t)v->version_id, "version", v->version_no, "image", v->image_pin,
			 "archive_sha256", v->archive_sha256, "created_ms",
			 (json_int_t)v->created_ms);
}

static void get_assignment(struct api *a, struct store *st, const struct http_request *rq,
			   struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	struct store_version v;
	struct err e;

	if (authorize(st, rq, rs, STORE_SCOPE_SUBMIT, &ti) < 0)
		return;
	int rc = store_assignment_latest(st, id, &v, &e);
	if (rc == 0 && v.course_id != ti.course_id)
		rc = foreign(&e, "assignment", id);
	if (rc < 0) {
		store_error(rs, rc, &e);
		return;
	}
	reply(rs, 200, version_json(&v));
}

/* Refusals before a submission is written: 429 on a full queue, 403 past the budget. */
/* Backpressure: 429 when the course has --queue-bound unfinished jobs. */
static int backpressure(struct api *a, struct store *st, int64_t course_id,
			struct http_response *rs)
{
	int64_t backlog;
	struct err e;
	int rc;

	if ((rc = store_course_backlog(st, course_id, &backlog, &e)) < 0)
		return store_error(rs, rc, &e), -1;
	if (backlog < a->c.queue_bound)
		return 0;
	http_error(rs, 429, "queue_full",
		   "the course has %" PRId64 " submissions waiting (the bound is %" PRId64
		   "); retry later",
		   backlog, a->c.queue_bound);
	rs->retry_after_s = a->c.retry_after_s;
	api_count(a, "submissions_refused_queue_full", 1);
	return -1;
}

/* The policy's admission (the course's daily CPU cap, then the assignment's
 * limit and interval), run inside the submission's transaction. */
struct admission {
	int64_t assignment_id;
	const char *student;
	struct policy_verdict v;
};

static int admit(struct store *st, void *ctx, struct err *e)
{
	struct admission *ad = ctx;
	int rc = policy_admit(st, ad->assignment_id, ad->student, &ad->v, e);

	return rc < 0 ? rc : ad->v.refusal != POLICY_ALLOWED;
}

static void refuse(struct api *a, struct store *st, const struct policy_verdict *v,
		   struct http_response *rs)
{
	int64_t now;
	struct err e;

	http_error(rs, (unsigned)policy_refusal_http(v->refusal), policy_refusal_code(v->refusal),
		   "%s", v->message);
	if (v->next_ms && store_now_ms(st, &now, &e) == 0 && v->next_ms > now)
		rs->retry_after_s = (unsigned)((v->next_ms - now + 999) / 1000);
	api_count(a,
		  v->refusal == POLICY_OVER_BUDGET ? "submissions_refused_budget"
						   : "submissions_refused_policy",
		  1);
}

/*
 * One submission `doc` from token `ti`, idempotency key `key` (or NULL):
 * the answer in rs, as POST /v1/submissions gives it.  `batch` allows the
 * key as a member ("idempotency_key") instead of the header.
 */
static void submit_one(struct api *a, struct store *st, const struct store_token_info *tip,
		       const json_t *doc, const char *key, bool batch, struct http_response *rs)
{
	static const char *const allowed[] = {"assignment", "student",	"callback_url",
					      "archive",    "attempts", NULL};
	static const char *const allowed_batch[] = {"assignment", "student",  "callback_url",
						    "archive",	  "attempts", "idempotency_key",
						    NULL};
	const struct store_token_info ti = *tip;
	struct store_version v;
	const char *student = NULL, *callback = NULL;
	int64_t assignment = 0, attempts = 0, sub_id, job_id;
	void *archive = NULL;
	size_t len = 0;
	bool existing = false, too_large = false;
	struct err e;
	int rc;

	if (jsonreq_only(doc, batch ? allowed_batch : allowed, &e) < 0 ||
	    (batch && jsonreq_string(doc, "idempotency_key", false, 255, &key, &e) < 0) ||
	    jsonreq_int(doc, "assignment", true, 1, INT64_MAX, &assignment, &e) < 0 ||
	    jsonreq_string(doc, "student", false, 255, &student, &e) < 0 ||
	    jsonreq_string(doc, "callback_url", false, 2048, &callback, &e) < 0 ||
	    jsonreq_int(doc, "attempts", false, 1, 10, &attempts, &e) < 0 ||
	    base64_member(doc, "archive", a->c.max_upload, &archive, &len, &too_large, &e) < 0) {
		field_error(rs, &e, too_large);
		goto out;
	}
	if (callback && callback_url_check(callback, &e) < 0) {
		http_error_from(rs, &e);
		goto out;
	}
	if (key && (strlen(key) > 255 || !key[0])) {
		http_error(rs, 422, "invalid_input", "Idempotency-Key must be 1 to 255 bytes");
		goto out;
	}
	rc = store_assignment_latest(st, assignment, &v, &e);
	if (rc == 0 && v.course_id != ti.course_id)
		rc = foreign(&e, "assignment", assignment);
	if (rc < 0) {
		store_error(rs, rc, &e);
		goto out;
	}
	/* A replayed key answers the first submission whatever the queue or
	 * the policy say now (store_submit also does, inside its transaction). */
	if (key &&
	    (rc = store_submission_by_key(st, ti.course_id, key, &sub_id, &job_id, &e)) != 0) {
		if (rc < 0) {
			store_error(rs, rc, &e);
			goto out;
		}
		existing = true;
		goto accepted;
	}
	if (backpressure(a, st, ti.course_id, rs) < 0)
		goto out;
	struct admission ad = {.assignment_id = v.assignment_id, .student = student};
	struct store_submission_in in = {.course_id = ti.course_id,
					 .version_id = v.version_id,
					 .student = student,
					 .idempotency_key = key,
					 .callback_url = callback,
					 /* A student's callback gets what the
					  * student may see (policy_result_view). */
					 .callback_staff = ti.scope >= STORE_SCOPE_INSTRUCTOR,
					 .data = archive,
					 .len = len,
					 .max_attempts = (int)attempts,
					 .admit = admit,
					 .admit_ctx = &ad};
	rc = store_submit(st, &in, &sub_id, &job_id, &existing, &e);
	if (rc == STORE_REFUSED) {
		refuse(a, st, &ad.v, rs);
		goto out;
	}
	if (rc < 0) {
		store_error(rs, rc, &e);
		goto out;
	}
accepted:
	api_count(a, existing ? "submissions_replayed" : "submissions_accepted", 1);
	reply(rs, existing ? 200 : 202,
	      json_pack("{s:I, s:I, s:I, s:s, s:b}", "submission_id", (json_int_t)sub_id, "job_id",
			(json_int_t)job_id, "assignment_id", (json_int_t)v.assignment_id, "state",
			"queued", "existing", existing));
out:
	free(archive);
}

static void post_submission(struct api *a, struct store *st, const struct http_request *rq,
			    struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	json_t *doc = NULL;

	if (authorize(st, rq, rs, STORE_SCOPE_SUBMIT, &ti) < 0 ||
	    parse_body(rq, a->c.max_upload / 3 * 4 + SMALL_BODY, &doc, rs) < 0)
		return;
	submit_one(a, st, &ti, doc, rq->idempotency_key, false, rs);
	json_decref(doc);
}

/* Most submissions in one batch. */
#define BATCH_MAX 100

/*
 * POST /v1/submissions/batch: {"submissions": [...]}, each as POST
 * /v1/submissions takes it (the key as "idempotency_key").  Each is its
 * own transaction: one refused does not refuse the others.  Answer 200
 * with one entry per submission, in order: its "status" (202, 200 for a
 * replayed key, or the error's) and the body POST /v1/submissions gives.
 */
static void post_batch(struct api *a, struct store *st, const struct http_request *rq,
		       struct http_response *rs, int64_t id)
{
	static const char *const allowed[] = {"submissions", NULL};
	struct store_token_info ti;
	json_t *doc = NULL, *list, *item;
	struct err e;
	size_t i;

	if (authorize(st, rq, rs, STORE_SCOPE_SUBMIT, &ti) < 0 ||
	    parse_body(rq, SIZE_MAX, &doc, rs) < 0)
		return;
	list = json_object_get(doc, "submissions");
	if (jsonreq_only(doc, allowed, &e) < 0 || !json_is_array(list) ||
	    json_array_size(list) < 1 || json_array_size(list) > BATCH_MAX) {
		http_error(rs, 422, "invalid_input",
			   "'submissions' must be an array of 1 to %d submissions", BATCH_MAX);
		json_decref(doc);
		return;
	}
	json_t *results = json_array();
	json_array_foreach(list, i, item)
	{
		struct http_response one = {0};
		if (!json_is_object(item))
			http_error(&one, 422, "invalid_input", "submissions[%zu] is not an object",
				   i);
		else
			submit_one(a, st, &ti, item, NULL, true, &one);
		json_t *answer = one.body ? json_loads(one.body, 0, NULL) : NULL;
		if (!json_is_object(answer)) {
			json_decref(answer);
			answer = json_object();
		}
		json_object_set_new(answer, "status", json_integer(one.status));
		if (one.retry_after_s)
			json_object_set_new(answer, "retry_after_s",
					    json_integer(one.retry_after_s));
		json_array_append_new(results, answer);
		free(one.body);
	}
	json_decref(doc);
	reply(rs, 200, json_pack("{s:o}", "results", results));
}

static json_t *ms_or_null(int64_t ms)
{
	return ms > 0 ? json_integer(ms) : json_null();
}

static json_t *service_fields(struct store *st, const struct store_submission_view *v)
{
	const struct store_job *j = &v->job;
	struct store_attempt at[16];
	size_t n = 0;
	struct err e;
	json_t *attempts = json_array();

	if (store_job_attempts(st, j->job_id, at, 16, &n, &e) == 0)
		for (size_t i = 0; i < n; i++)
			json_array_append_new(
			    attempts,
			    json_pack("{s:i, s:s, s:s, s:I, s:o, s:s}", "attempt", at[i].attempt,
				      "worker", at[i].worker, "host", at[i].host, "started_ms",
				      (json_int_t)at[i].started_ms, "ended_ms",
				      ms_or_null(at[i].ended_ms), "outcome", at[i].outcome));
	return json_pack(
	    "{s:I, s:I, s:I, s:s?, s:s, s:I, s:s, s:b, s:s?, s:i, s:i, s:o, s:{s:o, s:o, s:o, s:o, "
	    "s:o, s:o}}",
	    "submission_id", (json_int_t)v->submission_id, "version_id", (json_int_t)v->version_id,
	    "job_id", (json_int_t)j->job_id, "student", v->student[0] ? v->student : NULL,
	    "submission_sha256", v->sha256, "received_ms", (json_int_t)v->received_ms, "state",
	    store_job_state_name(j->state), "not_gradable", j->not_gradable, "error",
	    j->error[0] ? j->error : NULL, "attempt", j->attempt, "max_attempts", j->max_attempts,
	    "attempts", attempts, "times", "received_ms", ms_or_null(j->received_ms), "queued_ms",
	    ms_or_null(j->queued_ms), "started_ms", ms_or_null(j->started_ms), "sandbox_ready_ms",
	    ms_or_null(j->sandbox_ready_ms), "finished_ms", ms_or_null(j->finished_ms),
	    "delivered_ms", ms_or_null(j->delivered_ms));
}

/*
 * The result as `viewer` may see it in `format` (policy_result_view): the
 * policy reveals tests after the due date (to this student, extension
 * included).  If the policy cannot be read, the default view (every hidden
 * test hidden): never more than the policy says.
 */
static json_t *shown_result(struct store *st, const struct store_submission_view *v,
			    const json_t *full, enum result_viewer viewer, enum result_format format)
{
	struct store_version ver;
	struct store_extension x;
	struct policy p;
	int64_t now;
	struct err e;

	if (store_version_get(st, v->version_id, &ver, &e) < 0 ||
	    policy_load(st, ver.assignment_id, &p, &e) < 0 || store_now_ms(st, &now, &e) < 0)
		return policy_result_view(viewer, format, NULL, NULL, 0, full);
	bool has_x =
	    v->student[0] && store_extension_get(st, ver.assignment_id, v->student, &x, &e) == 0;
	return policy_result_view(viewer, format, &p, has_x ? &x : NULL, now, full);
}

/* The answer for one submission: the result document as `view` shows it,
 * with the service's fields under "service" (not in Gradescope's format). */
static json_t *submission_doc(struct store *st, const struct store_submission_view *v,
			      enum result_viewer viewer, enum result_format format)
{
	json_t *doc = NULL;

	if (v->has_result && v->result.doc_json) {
		json_t *full = json_loads(v->result.doc_json, 0, NULL);
		doc = full ? shown_result(st, v, full, viewer, format) : NULL;
		json_decref(full);
		if (format == RESULT_FORMAT_GRADESCOPE)
			return doc;
	} else if (v->job.state == STORE_JOB_ERROR) {
		doc = json_pack("{s:s, s:s}", "status", "error", "reason",
				v->job.error[0] ? v->job.error : "Proctor could not grade it");
	}
	if (format == RESULT_FORMAT_GRADESCOPE)
		return json_pack("{s:s, s:s}", "status",
				 v->job.state == STORE_JOB_ERROR ? "error" : "pending", "output",
				 "no result yet");
	if (!doc)
		doc = json_object();
	json_object_set_new(doc, "service", service_fields(st, v));
	return doc;
}

static bool finished(const struct store_submission_view *v)
{
	return v->job.state == STORE_JOB_DONE || v->job.state == STORE_JOB_ERROR;
}

static void get_submission(struct api *a, struct store *st, const struct http_request *rq,
			   struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	struct store_submission_view v = {0};
	struct err e;
	unsigned wait_s = 0;

	if (authorize(st, rq, rs, STORE_SCOPE_SUBMIT, &ti) < 0 ||
	    wait_param(a, rq, rs, &wait_s) < 0)
		return;
	int rc = store_submission_get(st, id, &v, &e);
	if (rc == 0 && v.course_id != ti.course_id)
		rc = foreign(&e, "submission", id);
	if (rc < 0) {
		store_submission_view_clear(&v);
		store_error(rs, rc, &e);
		return;
	}
	if (!finished(&v) && poll_again(rq, wait_s, &rs->again_ms)) {
		store_submission_view_clear(&v);
		return;
	}
	const char *fmt = http_request_query(rq, "format");
	enum result_viewer viewer =
	    ti.scope == STORE_SCOPE_SUBMIT ? RESULT_VIEWER_STUDENT : RESULT_VIEWER_STAFF;
	enum result_format format = RESULT_FORMAT_RESULT;
	if (fmt && strcmp(fmt, "gradescope") == 0)
		format = RESULT_FORMAT_GRADESCOPE;
	else if (fmt && strcmp(fmt, "student") == 0)
		format = RESULT_FORMAT_STUDENT;
	else if (fmt && strcmp(fmt, "result") != 0) {
		store_submission_view_clear(&v);
		http_error(rs, 400, "invalid_request",
			   "format: '%.40s' is not result, student or gradescope", fmt);
		return;
	}
	reply(rs, 200, submission_doc(st, &v, viewer, format));
	store_submission_view_clear(&v);
}

static void get_results(struct api *a, struct store *st, const struct http_request *rq,
			struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	struct store_submission_view v = {0};
	struct store_result r[256];
	size_t n = 0;
	struct err e;

	if (authorize(st, rq, rs, STORE_SCOPE_INSTRUCTOR, &ti) < 0)
		return;
	int rc = store_submission_get(st, id, &v, &e);
	if (rc == 0 && v.course_id != ti.course_id)
		rc = foreign(&e, "submission", id);
	store_submission_view_clear(&v);
	if (rc == 0)
		rc = store_result_list(st, id, r, 256, &n, &e);
	if (rc < 0) {
		store_error(rs, rc, &e);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++) {
		bool changed = i > 0 && !(r[i].score == r[i - 1].score ||
					  (isnan(r[i].score) && isnan(r[i - 1].score)));
		json_array_append_new(
		    list,
		    json_pack("{s:I, s:I, s:I, s:o, s:o, s:f, s:f, s:I, s:b}", "result_id",
			      (json_int_t)r[i].result_id, "job_id", (json_int_t)r[i].job_id,
			      "version_id", (json_int_t)r[i].version_id, "score",
			      isnan(r[i].score) ? json_null() : json_real(r[i].score), "max_score",
			      isnan(r[i].max_score) ? json_null() : json_real(r[i].max_score),
			      "cpu_seconds", r[i].cpu_seconds, "gib_seconds", r[i].gib_seconds,
			      "created_ms", (json_int_t)r[i].created_ms, "score_changed", changed));
	}
	reply(rs, 200, json_pack("{s:I, s:o}", "submission_id", (json_int_t)id, "results", list));
}

/* Start a regrade and answer 202 with its id (GET /v1/regrades/{id} says what changed). */
static void start_regrade(struct store *st, struct http_response *rs,
			  const struct store_regrade_in *in)
{
	int64_t regrade, version;
	size_t jobs;
	struct err e;
	int rc = store_regrade_batch(st, in, &regrade, &version, &jobs, &e);

	if (rc < 0) {
		store_error(rs, rc, &e);
		return;
	}
	json_t *doc = json_pack("{s:I, s:I, s:I, s:I, s:s}", "regrade_id", (json_int_t)regrade,
				"assignment_id", (json_int_t)in->assignment_id, "version_id",
				(json_int_t)version, "jobs", (json_int_t)jobs, "state", "queued");
	struct store_regrade_info info;
	struct store_regrade_item item;
	size_t n = 0;
	/* One submission's regrade names its job, as a submission does. */
	if (doc && in->scope == STORE_REGRADE_SUBMISSION &&
	    store_regrade_get(st, regrade, &info, &item, 1, &n, &e) == 0 && n == 1) {
		json_object_set_new(doc, "submission_id", json_integer(item.submission_id));
		json_object_set_new(doc, "job_id", json_integer(item.job_id));
	}
	reply(rs, 202, doc);
}

/* POST /v1/assignments/{id}/regrade: {"scope", "student", "submission_id", "version_id"}. */
static void post_assignment_regrade(struct api *a, struct store *st, const struct http_request *rq,
				    struct http_response *rs, int64_t id)
{
	static const char *const allowed[] = {"scope", "student", "submission_id", "version_id",
					      NULL};
	struct store_token_info ti;
	struct store_regrade_in in = {.assignment_id = id, .scope = STORE_REGRADE_LATEST};
	const char *scope = NULL, *student = NULL;
	json_t *doc = NULL;
	struct err e;

	if (authorize(st, rq, rs, STORE_SCOPE_INSTRUCTOR, &ti) < 0 ||
	    parse_body(rq, SMALL_BODY, &doc, rs) < 0)
		return;
	in.course_id = ti.course_id;
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_string(doc, "scope", false, 16, &scope, &e) < 0 ||
	    jsonreq_string(doc, "student", false, 255, &student, &e) < 0 ||
	    jsonreq_int(doc, "submission_id", false, 1, INT64_MAX, &in.submission_id, &e) < 0 ||
	    jsonreq_int(doc, "version_id", false, 1, INT64_MAX, &in.version_id, &e) < 0 ||
	    (scope && store_regrade_scope_parse(scope, &in.scope, &e) < 0)) {
		http_error(rs, 422, "invalid_input", "%s", e.msg);
		json_decref(doc);
		return;
	}
	in.student = student;
	start_regrade(st, rs, &in);
	json_decref(doc);
}

/* POST /v1/submissions/{id}/regrade: {"version_id"} (default: the latest). */
static void post_regrade(struct api *a, struct store *st, const struct http_request *rq,
			 struct http_response *rs, int64_t id)
{
	static const char *const allowed[] = {"version_id", NULL};
	struct store_token_info ti;
	struct store_submission_view v = {0};
	struct store_version ver;
	struct store_regrade_in in = {.scope = STORE_REGRADE_SUBMISSION, .submission_id = id};
	json_t *doc = NULL;
	struct err e;

	if (authorize(st, rq, rs, STORE_SCOPE_INSTRUCTOR, &ti) < 0)
		return;
	if (rq->body_len) {
		if (parse_body(rq, SMALL_BODY, &doc, rs) < 0)
			return;
		int bad =
		    jsonreq_only(doc, allowed, &e) < 0 ||
		    jsonreq_int(doc, "version_id", false, 1, INT64_MAX, &in.version_id, &e) < 0;
		json_decref(doc);
		if (bad) {
			http_error(rs, 422, "invalid_input", "%s", e.msg);
			return;
		}
	}
	int rc = store_submission_get(st, id, &v, &e);
	if (rc == 0 && v.course_id != ti.course_id)
		rc = foreign(&e, "submission", id);
	if (rc == 0)
		rc = store_version_get(st, v.version_id, &ver, &e);
	store_submission_view_clear(&v);
	if (rc < 0) {
		store_error(rs, rc, &e);
		return;
	}
	in.course_id = ti.course_id;
	in.assignment_id = ver.assignment_id;
	start_regrade(st, rs, &in);
}

/* Scores as JSON: null for none. */
static json_t *score_json(double s)
{
	return isnan(s) ? json_null() : json_real(s);
}

#define REGRADE_SHOWN 10000

/* GET /v1/regrades/{id}[?wait=S]: progress, how many scores changed, and which. */
static void get_regrade(struct api *a, struct store *st, const struct http_request *rq,
			struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	struct store_regrade_info info;
	struct store_regrade_item *items = NULL;
	size_t n = 0;
	unsigned wait_s = 0;
	struct err e;
	int rc;

	if (authorize(st, rq, rs, STORE_SCOPE_INSTRUCTOR, &ti) < 0 ||
	    wait_param(a, rq, rs, &wait_s) < 0)
		return;
	/* Counts only while it waits: the items (about 3 MB of room) are
	 * taken for the answer alone, not on every step of a poll. */
	rc = store_regrade_get(st, id, &info, NULL, 0, &n, &e);
	if (rc == 0 && info.course_id == ti.course_id && info.finished < info.total &&
	    poll_again(rq, wait_s, &rs->again_ms))
		return;
	if (rc == 0 && info.course_id == ti.course_id) {
		if (!(items = malloc(REGRADE_SHOWN * sizeof(*items)))) {
			http_error(rs, 500, "internal", "out of memory");
			return;
		}
		rc = store_regrade_get(st, id, &info, items, REGRADE_SHOWN, &n, &e);
	}
	if (rc == 0 && info.course_id != ti.course_id)
		rc = foreign(&e, "regrade", id);
	if (rc < 0) {
		store_error(rs, rc, &e);
		goto out;
	}
	json_t *changes = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct store_regrade_item *it = &items[i];
		if (it->state != STORE_JOB_DONE ||
		    (isnan(it->old_score) == isnan(it->new_score) &&
		     (isnan(it->old_score) || it->old_score == it->new_score)))
			continue;
		json_array_append_new(
		    changes,
		    json_pack("{s:I, s:I, s:s?, s:o, s:o}", "submission_id",
			      (json_int_t)it->submission_id, "job_id", (json_int_t)it->job_id,
			      "student", it->student[0] ? it->student : NULL, "old_score",
			      score_json(it->old_score), "new_score", score_json(it->new_score)));
	}
	reply(rs, 200,
	      json_pack("{s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:b, s:o}", "regrade_id",
			(json_int_t)info.regrade_id, "assignment_id",
			(json_int_t)info.assignment_id, "version_id", (json_int_t)info.version_id,
			"scope", info.scope, "created_ms", (json_int_t)info.created_ms, "jobs",
			(json_int_t)info.total, "finished", (json_int_t)info.finished, "changed",
			(json_int_t)info.changed, "complete", info.finished == info.total,
			"changes", changes));
out:
	free(items);
}

static void list_submissions(struct api *a, struct store *st, const struct http_request *rq,
			     struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	const char *student = http_request_query(rq, "student"),
		   *after = http_request_query(rq, "after");
	int64_t ids[LIST_MAX], after_id = 0;
	size_t n = 0;
	struct err e;

	if (authorize(st, rq, rs, STORE_SCOPE_INSTRUCTOR, &ti) < 0)
		return;
	if (after) {
		/* Digits only, at most INT64_MAX (strtoll took "+5", " 5" and
		 * saturated a number too large without a word). */
		uint64_t u;
		if (parse_u64(after, strlen(after), &u) < 0 || u > INT64_MAX) {
			http_error(rs, 400, "invalid_request", "after: not a submission id");
			return;
		}
		after_id = (int64_t)u;
	}
	int rc = store_submission_list(st, ti.course_id, student, after_id, ids, LIST_MAX, &n, &e);
	if (rc < 0) {
		store_error(rs, rc, &e);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, json_integer(ids[i]));
	reply(rs, 200,
	      json_pack("{s:o, s:o}", "submissions", list, "next_after",
			n == LIST_MAX ? json_integer(ids[n - 1]) : json_null()));
}

static void post_token(struct api *a, struct store *st, const struct http_request *rq,
		       struct http_response *rs, int64_t id)
{
	static const char *const allowed[] = {"scope", NULL};
	struct store_token_info ti;
	struct store_course c;
	enum store_scope scope;
	const char *name;
	char token[STORE_TOKEN_LEN + 1];
	json_t *doc = NULL;
	struct err e;
	int rc;

	if (authorize(st, rq, rs, STORE_SCOPE_ADMIN, &ti) < 0 ||
	    parse_body(rq, SMALL_BODY, &doc, rs) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_string(doc, "scope", true, 32, &name, &e) < 0 ||
	    store_scope_parse(name, &scope, &e) < 0) {
		json_decref(doc);
		http_error(rs, 422, "invalid_input", "%s", e.msg);
		return;
	}
	json_decref(doc);
	if ((rc = store_course_get(st, ti.course_id, &c, &e)) < 0 ||
	    (rc = store_token_create(st, c.name, scope, token, &e)) < 0) {
		store_error(rs, rc, &e);
		return;
	}
	reply(rs, 201,
	      json_pack("{s:s, s:s, s:s}", "token", token, "scope", store_scope_name(scope),
			"course", c.name));
}

/* Tokens listed at most. */
#define TOKENS_SHOWN 1000

/* GET /v1/tokens: the course's tokens (admin): which, scope, when made and
 * revoked; never a secret nor its hash. */
static void list_tokens(struct api *a, struct store *st, const struct http_request *rq,
			struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	struct store_token_row *rows = NULL;
	size_t n = 0;
	struct err e;
	int rc;

	(void)a;
	(void)id;
	if (authorize(st, rq, rs, STORE_SCOPE_ADMIN, &ti) < 0)
		return;
	if (!(rows = calloc(TOKENS_SHOWN, sizeof(*rows)))) {
		http_error(rs, 500, "internal", "out of memory");
		return;
	}
	if ((rc = store_token_list(st, ti.course_id, rows, TOKENS_SHOWN, &n, &e)) < 0) {
		store_error(rs, rc, &e);
		free(rows);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(
		    list, json_pack("{s:I, s:s, s:s, s:I, s:o}", "token_id",
				    (json_int_t)rows[i].token_id, "scope",
				    store_scope_name(rows[i].scope), "prefix", rows[i].prefix,
				    "created_ms", (json_int_t)rows[i].created_ms, "revoked_ms",
				    rows[i].revoked_ms ? json_integer(rows[i].revoked_ms)
						       : json_null()));
	free(rows);
	reply(rs, 200, json_pack("{s:o}", "tokens", list));
}

/* DELETE /v1/tokens/{id}: revoke a token of the course (admin); it is
 * refused from then on (401), by every route. */
static void delete_token(struct api *a, struct store *st, const struct http_request *rq,
			 struct http_response *rs, int64_t id)
{
	struct store_token_info ti;
	struct err e;
	int rc;

	(void)a;
	if (authorize(st, rq, rs, STORE_SCOPE_ADMIN, &ti) < 0)
		return;
	if ((rc = store_token_revoke(st, ti.course_id, id, &e)) < 0) {
		store_error(rs, rc, &e);
		return;
	}
	reply(rs, 200, json_pack("{s:I, s:b}", "token_id", (json_int_t)id, "revoked", 1));
}

static void course_budget(struct api *a, struct store *st, const struct http_request *rq,
			  struct http_response *rs, int64_t id)
{
	static const char *const allowed[] = {"daily_cpu_cap", NULL};
	struct store_token_info ti;
	struct store_course c;
	struct err e;
	int rc;
	bool put = strcmp(rq->method, "PUT") == 0;

	if (authorize(st, rq, rs, put ? STORE_SCOPE_ADMIN : STORE_SCOPE_INSTRUCTOR, &ti) < 0)
		return;
	if (put) {
		json_t *doc = NULL, *cap;
		if (parse_body(rq, SMALL_BODY, &doc, rs) < 0)
			return;
		cap = json_object_get(doc, "daily_cpu_cap");
		if (jsonreq_only(doc, allowed, &e) < 0 || !cap ||
		    !(json_is_null(cap) || (json_is_number(cap) && json_number_value(cap) >= 0))) {
			json_decref(doc);
			http_error(rs, 422, "invalid_input",
				   "'daily_cpu_cap' must be a number of CPU-seconds >= 0, or null "
				   "(no cap)");
			return;
		}
		double v = json_is_null(cap) ? NAN : json_number_value(cap);
		json_decref(doc);
		if ((rc = store_course_set_cpu_cap(st, ti.course_id, v, &e)) < 0) {
			store_error(rs, rc, &e);
			return;
		}
	}
	struct policy_prices prices = {.vcpu_hour = a->c.price_cpu_hour,
				       .gib_hour = a->c.price_gib_hour};
	struct policy_usage u;
	if ((rc = store_course_get(st, ti.course_id, &c, &e)) < 0 ||
	    (rc = policy_course_usage(st, ti.course_id, &prices, &u, &e)) < 0) {
		store_error(rs, rc, &e);
		return;
	}
	reply(rs, 200,
	      json_pack("{s:s, s:o, s:I, s:f, s:f, s:f, s:{s:f, s:f}}", "course", c.name,
			"daily_cpu_cap", isnan(u.cap) ? json_null() : json_real(u.cap), "since_ms",
			(json_int_t)u.since_ms, "cpu_seconds_today", u.cpu_seconds,
			"gib_seconds_today", u.gib_seconds, "estimated_cost_today", u.cost,
			"prices", "vcpu_hour", prices.vcpu_hour, "gib_hour", prices.gib_hour));
}

static bool is(const struct http_request *rq, const char *method, const char *path)
{
	return strcmp(rq->method, method) == 0 && strcmp(rq->path, path) == 0;
}

/* A handler of a /v1/ route; `id` is the path's id ('#' in the pattern), or 0. */
typedef void route_fn(struct api *a, struct store *st, const struct http_request *rq,
		      struct http_response *rs, int64_t id);

static const struct route {
	const char *method;
	const char *pattern; /* '#' stands for a positive id */
	route_fn *fn;
	bool upload; /* its body is an upload (else at most SMALL_BODY) */
} routes[] = {
    {"POST", "/v1/submissions", post_submission, true},
    {"POST", "/v1/submissions/batch", post_batch, true},
    {"GET", "/v1/submissions", list_submissions, false},
    {"GET", "/v1/submissions/#", get_submission, false},
    {"GET", "/v1/submissions/#/results", get_results, false},
    {"POST", "/v1/submissions/#/regrade", post_regrade, false},
    {"POST", "/v1/assignments", post_assignment, true},
    {"GET", "/v1/assignments/#", get_assignment, false},
    {"POST", "/v1/assignments/#/regrade", post_assignment_regrade, false},
    {"GET", "/v1/assignments/#/policy", assignment_policy, false},
    {"PUT", "/v1/assignments/#/policy", assignment_policy, false},
    {"GET", "/v1/assignments/#/extensions", assignment_extensions, false},
    {"PUT", "/v1/assignments/#/extensions", assignment_extensions, false},
    {"DELETE", "/v1/assignments/#/extensions", assignment_extensions, false},
    {"GET", "/v1/assignments/#/gradebook", assignment_gradebook, false},
    {"GET", "/v1/regrades/#", get_regrade, false},
    {"POST", "/v1/tokens", post_token, false},
    {"GET", "/v1/tokens", list_tokens, false},
    {"DELETE", "/v1/tokens/#", delete_token, false},
    {"GET", "/v1/course/budget", course_budget, false},
    {"PUT", "/v1/course/budget", course_budget, false},
};

/* Does `path` match `pattern`?  *id gets the id '#' matched. */
static bool route_match(const char *pattern, const char *path, int64_t *id)
{
	const char *hash = strchr(pattern, '#'), *rest;

	if (!hash)
		return strcmp(pattern, path) == 0;
	size_t n = (size_t)(hash - pattern);
	return strncmp(pattern, path, n) == 0 && path_id(path + n, "", id, &rest) &&
	       strcmp(rest, hash + 1) == 0;
}

/* The route of a request, or NULL. */
static const struct route *route_of(const struct http_request *rq, int64_t *id)
{
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(routes[i].method, rq->method) == 0 &&
		    route_match(routes[i].pattern, rq->path, id))
			return &routes[i];
	return NULL;
}

static void route_v1(struct api *a, struct store *st, const struct http_request *rq,
		     struct http_response *rs)
{
	int64_t id = 0;
	const struct route *r = route_of(rq, &id);

	if (r)
		r->fn(a, st, rq, rs, id);
	else
		http_error(rs, 404, "not_found", "no route %s %s", rq->method, rq->path);
}

int api_gate(void *ctx, const struct http_request *rq, struct http_response *rs, size_t *max_body)
{
	struct api *a = ctx;
	struct store_token_info ti;
	struct err e;
	int64_t id;

	if (strncmp(rq->path, "/v1/", 4) != 0) {
		*max_body = SMALL_BODY;
		return 0;
	}
	const struct route *r = route_of(rq, &id);
	if (!r)
		return http_error(rs, 404, "not_found", "no route %s %s", rq->method, rq->path), 1;
	if (!r->upload)
		*max_body = SMALL_BODY;
	if (!rq->bearer)
		return http_error(rs, 401, "unauthorized",
				  "an Authorization: Bearer token is required"),
		       1;
	struct store *st = thread_store(a, &e);
	/* A store that does not answer is the handler's to say (503). */
	if (st && store_token_check(st, rq->bearer, &ti, &e) == STORE_NOT_FOUND)
		return http_error(rs, 401, "unauthorized", "the token is not valid"), 1;
	return 0;
}

void api_handle(void *ctx, const struct http_request *rq, struct http_response *rs)
{
	struct api *a = ctx;
	struct err e;

	if (is(rq, "GET", "/healthz")) {
		http_json(rs, 200, strdup("{\"status\":\"ok\"}"));
		return;
	}
	struct store *st = thread_store(a, &e);
	int64_t now;
	if (is(rq, "GET", "/readyz")) {
		if (st && store_now_ms(st, &now, &e) == 0)
			http_json(rs, 200, strdup("{\"status\":\"ready\"}"));
		else
			http_error(rs, 503, "unavailable", "the store is not reachable: %s", e.msg);
		return;
	}
	if (!st) {
		http_error(rs, 503, "unavailable", "the store is not reachable: %s", e.msg);
		return;
	}
	if (is(rq, "GET", "/metrics"))
		get_metrics(a, st, rs);
	else if (strncmp(rq->path, "/v1/", 4) == 0)
		route_v1(a, st, rq, rs);
	else
		http_error(rs, 404, "not_found", "no route %s %s", rq->method, rq->path);
	if (rs->status >= 500 && !rs->again_ms) {
		/* The connection may be what failed (a database restarted):
		 * the thread's next request opens a new one. */
		pthread_setspecific(a->key, NULL);
		store_close(st);
	}
}

int api_new(const struct api_config *c, struct api **ret, struct err *e)
{
	struct api *a = calloc(1, sizeof(*a));
	struct store *st = NULL;

	if (!a)
		return err_set(e, ENOMEM, "api");
	a->c = *c;
	if (store_open(c->db_url, &st, e) < 0) {
		free(a);
		return err_wrap(e, "--db");
	}
	store_close(st);
	pthread_mutex_init(&a->lock, NULL);
	if (pthread_key_create(&a->key, close_store) != 0) {
		free(a);
		return err_set(e, EAGAIN, "pthread_key_create");
	}
	*ret = a;
	return 0;
}

void api_free(struct api *a)
{
	if (!a)
		return;
	pthread_key_delete(a->key);
	pthread_mutex_destroy(&a->lock);
	free(a);
}
