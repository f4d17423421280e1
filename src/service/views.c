/* What a viewer may see of a submission and its results (views.h). */
#include "service/views.h"

#include <math.h>
#include <string.h>

#include "grade/grade.h"

#define MS_PER_S 1000LL

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

/* ---- the service's documents ---- */

json_t *view_score(double s)
{
	return isnan(s) ? json_null() : json_real(s);
}

json_t *view_ms(int64_t ms)
{
	return ms > 0 ? json_integer(ms) : json_null();
}

/* Attempts listed at most. */
#define ATTEMPTS_SHOWN 16

static json_t *service_fields(struct store *st, const struct store_submission_view *v)
{
	const struct store_job *j = &v->job;
	struct store_attempt at[ATTEMPTS_SHOWN];
	size_t n = 0;
	struct err e;
	json_t *attempts = json_array();

	if (store_job_attempts(st, j->job_id, at, ATTEMPTS_SHOWN, &n, &e) == 0)
		for (size_t i = 0; i < n; i++)
			json_array_append_new(
			    attempts,
			    json_pack("{s:i, s:s, s:s, s:I, s:o, s:s}", "attempt", at[i].attempt,
				      "worker", at[i].worker, "host", at[i].host, "started_ms",
				      (json_int_t)at[i].started_ms, "ended_ms",
				      view_ms(at[i].ended_ms), "outcome", at[i].outcome));
	return json_pack(
	    "{s:I, s:I, s:I, s:s?, s:s, s:I, s:s, s:b, s:s?, s:i, s:i, s:o, s:{s:o, s:o, s:o, s:o, "
	    "s:o, s:o}}",
	    "submission_id", (json_int_t)v->submission_id, "version_id", (json_int_t)v->version_id,
	    "job_id", (json_int_t)j->job_id, "student", v->student[0] ? v->student : NULL,
	    "submission_sha256", v->sha256, "received_ms", (json_int_t)v->received_ms, "state",
	    store_job_state_name(j->state), "not_gradable", j->not_gradable, "error",
	    j->error[0] ? j->error : NULL, "attempt", j->attempt, "max_attempts", j->max_attempts,
	    "attempts", attempts, "times", "received_ms", view_ms(j->received_ms), "queued_ms",
	    view_ms(j->queued_ms), "started_ms", view_ms(j->started_ms), "sandbox_ready_ms",
	    view_ms(j->sandbox_ready_ms), "finished_ms", view_ms(j->finished_ms),
	    "delivered_ms", view_ms(j->delivered_ms));
}

/* The result as `viewer` may see it under the policy of its assignment, as
 * it stands now (the due date, this student's extension). */
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

json_t *view_submission(struct store *st, const struct store_submission_view *v,
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

bool view_finished(const struct store_submission_view *v)
{
	return v->job.state == STORE_JOB_DONE || v->job.state == STORE_JOB_ERROR;
}

json_t *view_result_row(const struct store_result *r, const struct store_result *prev)
{
	return json_pack("{s:I, s:I, s:I, s:o, s:o, s:f, s:f, s:I, s:b}", "result_id",
			 (json_int_t)r->result_id, "job_id", (json_int_t)r->job_id, "version_id",
			 (json_int_t)r->version_id, "score", view_score(r->score), "max_score",
			 view_score(r->max_score), "cpu_seconds", r->cpu_seconds, "gib_seconds",
			 r->gib_seconds, "created_ms", (json_int_t)r->created_ms, "score_changed",
			 prev && grade_score_changed(prev->score, r->score));
}

json_t *view_regrade_change(const struct store_regrade_item *it)
{
	if (it->state != STORE_JOB_DONE || !grade_score_changed(it->old_score, it->new_score))
		return NULL;
	return json_pack("{s:I, s:I, s:s?, s:o, s:o}", "submission_id",
			 (json_int_t)it->submission_id, "job_id", (json_int_t)it->job_id, "student",
			 it->student[0] ? it->student : NULL, "old_score", view_score(it->old_score),
			 "new_score", view_score(it->new_score));
}
