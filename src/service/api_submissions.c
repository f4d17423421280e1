/* The API's submissions: submit one or a batch, list, read one (long poll), its results (docs/api.md). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "service/callback.h"
#include "service/handler.h"
#include "service/jsonreq.h"
#include "service/policy.h"
#include "service/views.h"

/* Pages of submission lists. */
#define LIST_MAX 1000
/* Most submissions in one batch. */
#define BATCH_MAX 100
/* Results of one submission listed at most. */
#define RESULTS_SHOWN 256
/* A body that holds one archive: its base64 and the other members. */
#define UPLOAD_BODY(a) ((a)->c.max_upload / 3 * 4 + BODY_SMALL)

/*
 * The admission of a submission, run inside its transaction (store_submit),
 * after a replayed idempotency key was answered there (so a replay gets its
 * first answer whatever the queue or the policy say now): the course's
 * queue bound (backpressure), then the policy (the course's daily CPU cap,
 * the assignment's limit and interval).
 *
 * The queue is counted before the transaction, where SQLite's readers do
 * not wait for its one writer (counted under the write lock, a burst's
 * intake fell by a tenth); only a queue found full is counted again inside,
 * after the replay check, to refuse.  The bound was never exact: a burst
 * may pass it by the submissions in flight, as before.
 */
struct admission {
	int64_t course_id;
	int64_t queue_bound;
	int64_t assignment_id;
	const char *student;
	int64_t backlog;
	bool recount;	 /* the queue looked full before the transaction */
	bool queue_full; /* and still was inside it */
	struct policy_verdict v;
};

static int admit(struct store *st, void *ctx, struct err *e)
{
	struct admission *ad = ctx;
	int rc;

	if (ad->recount && (rc = store_course_backlog(st, ad->course_id, &ad->backlog, e)) < 0)
		return rc;
	if ((ad->queue_full = ad->recount && ad->backlog >= ad->queue_bound))
		return 1;
	rc = policy_admit(st, ad->assignment_id, ad->student, &ad->v, e);
	return rc < 0 ? rc : ad->v.refusal != POLICY_ALLOWED;
}

/* Backpressure: 429 when the course has --queue-bound unfinished jobs. */
static void answer_queue_full(struct call *c, const struct admission *ad)
{
	answer_fail(c->rs, ERR_QUEUE_FULL,
		    "the course has %" PRId64 " submissions waiting (the bound is %" PRId64
		    "); retry later",
		    ad->backlog, ad->queue_bound);
	c->rs->retry_after_s = c->a->c.retry_after_s;
	metrics_count(c->a->metrics, "submissions_refused_queue_full", 1);
}

/* Answer the policy's refusal, with Retry-After when waiting helps. */
static void answer_refusal(struct call *c, const struct policy_verdict *v)
{
	int64_t now;
	struct err e;

	answer_fail(c->rs, policy_refusal_kind(v->refusal), "%s", v->message);
	if (v->next_ms && store_now_ms(c->st, &now, &e) == 0 && v->next_ms > now)
		c->rs->retry_after_s = (unsigned)((v->next_ms - now + 999) / 1000);
	metrics_count(c->a->metrics,
		      v->refusal == POLICY_OVER_BUDGET ? "submissions_refused_budget"
						       : "submissions_refused_policy",
		      1);
}

/*
 * One submission `doc` with idempotency key `key` (or NULL): the answer in
 * rs, as POST /v1/submissions gives it.  `batch` allows the key as a member
 * ("idempotency_key") instead of the header.
 */
static void submit_one(struct call *c, const json_t *doc, const char *key, bool batch,
		       struct http_response *rs)
{
	static const char *const allowed[] = {"assignment", "student",	"callback_url",
					      "archive",    "attempts", NULL};
	static const char *const allowed_batch[] = {"assignment", "student",  "callback_url",
						    "archive",	  "attempts", "idempotency_key",
						    NULL};
	/* This submission's answer goes to rs (one entry of a batch). */
	struct call one = *c;
	one.rs = rs;
	const struct store_token_info *who = c->who;
	struct store_version v;
	const char *student = NULL, *callback = NULL;
	int64_t assignment = 0, attempts = 0, sub_id, job_id;
	void *archive = NULL;
	size_t len = 0;
	bool existing = false;
	struct err e;
	int rc;

	if (jsonreq_only(doc, batch ? allowed_batch : allowed, &e) < 0 ||
	    (batch && jsonreq_string(doc, "idempotency_key", false, 255, &key, &e) < 0) ||
	    jsonreq_int(doc, "assignment", true, 1, INT64_MAX, &assignment, &e) < 0 ||
	    jsonreq_string(doc, "student", false, 255, &student, &e) < 0 ||
	    jsonreq_string(doc, "callback_url", false, 2048, &callback, &e) < 0 ||
	    jsonreq_int(doc, "attempts", false, 1, 10, &attempts, &e) < 0 ||
	    body_archive(c->a, doc, "archive", &archive, &len, &e) < 0) {
		answer_member(rs, &e);
		goto out;
	}
	if (callback && callback_url_check(callback, &e) < 0) {
		answer_err(rs, &e);
		goto out;
	}
	if (key && (strlen(key) > 255 || !key[0])) {
		answer_fail(rs, ERR_INPUT, "Idempotency-Key must be 1 to 255 bytes");
		goto out;
	}
	rc = store_assignment_latest(c->st, assignment, &v, &e);
	if (rc == 0 && v.course_id != who->course_id)
		rc = not_this_course(&e, "assignment", assignment);
	if (rc < 0) {
		answer_store(rs, rc, &e);
		goto out;
	}
	struct admission ad = {.course_id = who->course_id,
			       .queue_bound = c->a->c.queue_bound,
			       .assignment_id = v.assignment_id,
			       .student = student};
	if ((rc = store_course_backlog(c->st, who->course_id, &ad.backlog, &e)) < 0) {
		answer_store(rs, rc, &e);
		goto out;
	}
	ad.recount = ad.backlog >= ad.queue_bound;
	struct store_submission_in in = {.course_id = who->course_id,
					 .version_id = v.version_id,
					 .student = student,
					 .idempotency_key = key,
					 .callback_url = callback,
					 /* A student's callback gets what the
					  * student may see (policy_result_view). */
					 .callback_staff = who->scope >= STORE_SCOPE_INSTRUCTOR,
					 .data = archive,
					 .len = len,
					 .max_attempts = (int)attempts,
					 .admit = admit,
					 .admit_ctx = &ad};
	rc = store_submit(c->st, &in, &sub_id, &job_id, &existing, &e);
	if (rc == STORE_REFUSED) {
		if (ad.queue_full)
			answer_queue_full(&one, &ad);
		else
			answer_refusal(&one, &ad.v);
		goto out;
	}
	if (rc < 0) {
		answer_store(rs, rc, &e);
		goto out;
	}
	metrics_count(c->a->metrics, existing ? "submissions_replayed" : "submissions_accepted", 1);
	answer_json(rs, existing ? 200 : 202,
		    json_pack("{s:I, s:I, s:I, s:s, s:b}", "submission_id", (json_int_t)sub_id,
			      "job_id", (json_int_t)job_id, "assignment_id",
			      (json_int_t)v.assignment_id, "state", "queued", "existing",
			      existing));
out:
	free(archive);
}

/* POST /v1/submissions */
void post_submission(struct call *c)
{
	json_t *doc = NULL;

	if (body_json(c, UPLOAD_BODY(c->a), &doc) < 0)
		return;
	submit_one(c, doc, c->rq->idempotency_key, false, c->rs);
	json_decref(doc);
}

/*
 * POST /v1/submissions/batch: {"submissions": [...]}, each as POST
 * /v1/submissions takes it (the key as "idempotency_key").  Each is its
 * own transaction: one refused does not refuse the others.  Answer 200
 * with one entry per submission, in order: its "status" (202, 200 for a
 * replayed key, or the error's) and the body POST /v1/submissions gives.
 */
void post_batch(struct call *c)
{
	static const char *const allowed[] = {"submissions", NULL};
	json_t *doc = NULL, *list, *item;
	struct err e;
	size_t i;

	if (body_json(c, 0, &doc) < 0)
		return;
	list = json_object_get(doc, "submissions");
	if (jsonreq_only(doc, allowed, &e) < 0 || !json_is_array(list) ||
	    json_array_size(list) < 1 || json_array_size(list) > BATCH_MAX) {
		answer_fail(c->rs, ERR_INPUT,
			    "'submissions' must be an array of 1 to %d submissions", BATCH_MAX);
		json_decref(doc);
		return;
	}
	json_t *results = json_array();
	json_array_foreach(list, i, item)
	{
		struct http_response one = {0};
		if (!json_is_object(item))
			answer_fail(&one, ERR_INPUT, "submissions[%zu] is not an object", i);
		else
			submit_one(c, item, NULL, true, &one);
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
		http_response_clear(&one);
	}
	json_decref(doc);
	answer_json(c->rs, 200, json_pack("{s:o}", "results", results));
}

/* GET /v1/submissions?student=S&after=ID: the course's submission ids, a page. */
void list_submissions(struct call *c)
{
	const char *student = http_request_query(c->rq, "student");
	int64_t ids[LIST_MAX], after_id;
	size_t n = 0;
	struct err e;

	if (query_after(c, &after_id) < 0)
		return;
	int rc = store_submission_list(c->st, c->who->course_id, student, after_id, ids, LIST_MAX,
				       &n, &e);
	if (rc < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, json_integer(ids[i]));
	answer_json(c->rs, 200,
		    json_pack("{s:o, s:o}", "submissions", list, "next_after",
			      n == LIST_MAX ? json_integer(ids[n - 1]) : json_null()));
}

/* The `format` of GET /v1/submissions/{id}; else a 400 and -1. */
static int query_format(struct call *c, enum result_format *ret)
{
	const char *fmt = http_request_query(c->rq, "format");

	*ret = RESULT_FORMAT_RESULT;
	if (!fmt || strcmp(fmt, "result") == 0)
		return 0;
	if (strcmp(fmt, "gradescope") == 0)
		*ret = RESULT_FORMAT_GRADESCOPE;
	else if (strcmp(fmt, "student") == 0)
		*ret = RESULT_FORMAT_STUDENT;
	else
		return answer_fail(c->rs, ERR_USAGE,
				   "format: '%.40s' is not result, student or gradescope", fmt),
		       -1;
	return 0;
}

/* GET /v1/submissions/{id}[?wait=S&format=F] */
void get_submission(struct call *c)
{
	struct store_submission_view v = {0};
	enum result_format format;
	struct err e;
	unsigned wait_s = 0;

	if (query_wait(c, &wait_s) < 0)
		return;
	int rc = store_submission_get(c->st, c->id, &v, &e);
	if (rc == 0 && v.course_id != c->who->course_id)
		rc = not_this_course(&e, "submission", c->id);
	if (rc < 0) {
		store_submission_view_clear(&v);
		answer_store(c->rs, rc, &e);
		return;
	}
	if (!view_finished(&v) && poll_again(c, wait_s)) {
		store_submission_view_clear(&v);
		return;
	}
	if (query_format(c, &format) == 0) {
		enum result_viewer viewer = c->who->scope == STORE_SCOPE_SUBMIT
						? RESULT_VIEWER_STUDENT
						: RESULT_VIEWER_STAFF;
		answer_json(c->rs, 200, view_submission(c->st, &v, viewer, format));
	}
	store_submission_view_clear(&v);
}

/* GET /v1/submissions/{id}/results: every result, the first grading and each regrade. */
void get_results(struct call *c)
{
	struct store_submission_view v = {0};
	struct store_result r[RESULTS_SHOWN];
	size_t n = 0;
	struct err e;

	int rc = store_submission_get(c->st, c->id, &v, &e);
	if (rc == 0 && v.course_id != c->who->course_id)
		rc = not_this_course(&e, "submission", c->id);
	store_submission_view_clear(&v);
	if (rc == 0)
		rc = store_result_list(c->st, c->id, r, RESULTS_SHOWN, &n, &e);
	if (rc < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, view_result_row(&r[i], i > 0 ? &r[i - 1] : NULL));
	answer_json(c->rs, 200,
		    json_pack("{s:I, s:o}", "submission_id", (json_int_t)c->id, "results", list));
}
