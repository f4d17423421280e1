/* The API's regrades: of one submission, of an assignment's, and their progress (docs/api.md). */
#include <stdlib.h>

#include "service/handler.h"
#include "service/jsonreq.h"
#include "service/views.h"

/* Changed submissions listed at most in a regrade's answer. */
#define REGRADE_SHOWN 10000

/* Start a regrade and answer 202 with its id (GET /v1/regrades/{id} says what changed). */
static void start_regrade(struct call *c, const struct store_regrade_in *in)
{
	int64_t regrade, version;
	size_t jobs;
	struct err e;
	int rc = store_regrade_batch(c->st, in, &regrade, &version, &jobs, &e);

	if (rc < 0) {
		answer_store(c->rs, rc, &e);
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
	    store_regrade_get(c->st, regrade, &info, &item, 1, &n, &e) == 0 && n == 1) {
		json_object_set_new(doc, "submission_id", json_integer(item.submission_id));
		json_object_set_new(doc, "job_id", json_integer(item.job_id));
	}
	answer_json(c->rs, 202, doc);
}

/* POST /v1/assignments/{id}/regrade: {"scope", "student", "submission_id", "version_id"}. */
void post_assignment_regrade(struct call *c)
{
	static const char *const allowed[] = {"scope", "student", "submission_id", "version_id",
					      NULL};
	struct store_regrade_in in = {.assignment_id = c->id,
				      .course_id = c->who->course_id,
				      .scope = STORE_REGRADE_LATEST};
	const char *scope = NULL;
	json_t *doc = NULL;
	struct err e;

	if (body_json(c, 0, &doc) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_string(doc, "scope", false, 16, &scope, &e) < 0 ||
	    jsonreq_string(doc, "student", false, 255, &in.student, &e) < 0 ||
	    jsonreq_int(doc, "submission_id", false, 1, INT64_MAX, &in.submission_id, &e) < 0 ||
	    jsonreq_int(doc, "version_id", false, 1, INT64_MAX, &in.version_id, &e) < 0 ||
	    (scope && store_regrade_scope_parse(scope, &in.scope, &e) < 0))
		answer_fail(c->rs, ERR_INPUT, "%s", e.msg);
	else
		start_regrade(c, &in);
	json_decref(doc);
}

/* POST /v1/submissions/{id}/regrade: {"version_id"} (default: the latest). */
void post_submission_regrade(struct call *c)
{
	static const char *const allowed[] = {"version_id", NULL};
	struct store_submission_view v = {0};
	struct store_version ver;
	struct store_regrade_in in = {.scope = STORE_REGRADE_SUBMISSION,
				      .submission_id = c->id,
				      .course_id = c->who->course_id};
	json_t *doc = NULL;
	struct err e;

	if (c->rq->body_len) {
		if (body_json(c, 0, &doc) < 0)
			return;
		int bad =
		    jsonreq_only(doc, allowed, &e) < 0 ||
		    jsonreq_int(doc, "version_id", false, 1, INT64_MAX, &in.version_id, &e) < 0;
		json_decref(doc);
		if (bad) {
			answer_fail(c->rs, ERR_INPUT, "%s", e.msg);
			return;
		}
	}
	int rc = store_submission_get(c->st, c->id, &v, &e);
	if (rc == 0 && v.course_id != c->who->course_id)
		rc = not_this_course(&e, "submission", c->id);
	if (rc == 0)
		rc = store_version_get(c->st, v.version_id, &ver, &e);
	store_submission_view_clear(&v);
	if (rc < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	in.assignment_id = ver.assignment_id;
	start_regrade(c, &in);
}

/* GET /v1/regrades/{id}[?wait=S]: progress, how many scores changed, and which. */
void get_regrade(struct call *c)
{
	struct store_regrade_info info;
	struct store_regrade_item *items = NULL;
	size_t n = 0;
	unsigned wait_s = 0;
	struct err e;
	int rc;

	if (query_wait(c, &wait_s) < 0)
		return;
	/* Counts only while it waits: the items (about 3 MB of room) are
	 * taken for the answer alone, not on every step of a poll. */
	rc = store_regrade_get(c->st, c->id, &info, NULL, 0, &n, &e);
	bool ours = rc == 0 && info.course_id == c->who->course_id;
	if (ours && info.finished < info.total && poll_again(c, wait_s))
		return;
	if (ours) {
		if (!(items = malloc(REGRADE_SHOWN * sizeof(*items)))) {
			answer_fail(c->rs, ERR_INTERNAL, "out of memory");
			return;
		}
		rc = store_regrade_get(c->st, c->id, &info, items, REGRADE_SHOWN, &n, &e);
	}
	if (rc == 0 && info.course_id != c->who->course_id)
		rc = not_this_course(&e, "regrade", c->id);
	if (rc < 0) {
		answer_store(c->rs, rc, &e);
		goto out;
	}
	json_t *changes = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *change = view_regrade_change(&items[i]);
		if (change)
			json_array_append_new(changes, change);
	}
	answer_json(c->rs, 200,
		    json_pack("{s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:b, s:o}", "regrade_id",
			      (json_int_t)info.regrade_id, "assignment_id",
			      (json_int_t)info.assignment_id, "version_id",
			      (json_int_t)info.version_id, "scope", info.scope, "created_ms",
			      (json_int_t)info.created_ms, "jobs", (json_int_t)info.total,
			      "finished", (json_int_t)info.finished, "changed",
			      (json_int_t)info.changed, "complete", info.finished == info.total,
			      "changes", changes));
out:
	free(items);
}
