/* The API's assignments: upload a version, read the latest, its policy, extensions and gradebook (docs/api.md, docs/policy.md). */
#include <stdlib.h>
#include <string.h>

#include "service/handler.h"
#include "service/jsonreq.h"
#include "service/policy.h"

/* POST /v1/assignments: {"name", "image", "archive"}: a new version. */
void post_assignment(struct call *c)
{
	static const char *const allowed[] = {"name", "image", "archive", NULL};
	json_t *doc = NULL;
	const char *name, *image;
	void *archive = NULL;
	size_t len = 0;
	int64_t version_id;
	int version_no;
	struct err e;

	if (body_json(c, c->a->c.max_upload / 3 * 4 + BODY_SMALL, &doc) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_string(doc, "name", true, 255, &name, &e) < 0 ||
	    jsonreq_string(doc, "image", true, 255, &image, &e) < 0 ||
	    body_archive(c->a, doc, "archive", &archive, &len, &e) < 0) {
		answer_member(c->rs, &e);
		goto out;
	}
	int rc = store_assignment_add_version(c->st, c->who->course_id, name, archive, len, image,
					      &version_id, &version_no, &e);
	struct store_version v;
	if (rc == 0)
		rc = store_version_get(c->st, version_id, &v, &e);
	if (rc < 0) {
		answer_store(c->rs, rc, &e);
		goto out;
	}
	answer_json(c->rs, 201,
		    json_pack("{s:I, s:I, s:i, s:s, s:s}", "assignment_id",
			      (json_int_t)v.assignment_id, "version_id", (json_int_t)version_id,
			      "version", version_no, "name", name, "archive_sha256",
			      v.archive_sha256));
out:
	free(archive);
	json_decref(doc);
}

/* GET /v1/assignments/{id}: its latest version. */
void get_assignment(struct call *c)
{
	struct store_version v;
	struct err e;

	int rc = store_assignment_latest(c->st, c->id, &v, &e);
	if (rc == 0 && v.course_id != c->who->course_id)
		rc = not_this_course(&e, "assignment", c->id);
	if (rc < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	answer_json(c->rs, 200,
		    json_pack("{s:I, s:s, s:I, s:i, s:s, s:s, s:I}", "assignment_id",
			      (json_int_t)v.assignment_id, "name", v.name, "version_id",
			      (json_int_t)v.version_id, "version", v.version_no, "image",
			      v.image_pin, "archive_sha256", v.archive_sha256, "created_ms",
			      (json_int_t)v.created_ms));
}

/* GET /v1/assignments/{id}/policy (docs/policy.md). */
void get_policy(struct call *c)
{
	struct policy p;
	struct err e;
	int rc;

	if (own_assignment(c, c->id) < 0)
		return;
	if ((rc = policy_load(c->st, c->id, &p, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	answer_json(c->rs, 200, policy_to_json(&p));
}

/* PUT /v1/assignments/{id}/policy: the whole policy, replaced. */
void put_policy(struct call *c)
{
	struct policy p;
	json_t *doc = NULL;
	struct err e;
	int rc;

	if (own_assignment(c, c->id) < 0 || body_json(c, 0, &doc) < 0)
		return;
	rc = policy_from_json(doc, &p, &e);
	json_decref(doc);
	if (rc < 0) {
		answer_err(c->rs, &e);
		return;
	}
	if ((rc = policy_save(c->st, c->id, &p, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	answer_json(c->rs, 200, policy_to_json(&p));
}

/* The assignment's extensions, the answer of every extensions route. */
static void answer_extensions(struct call *c)
{
	struct store_extension *list = NULL;
	size_t n = 0;
	struct err e;
	int rc;

	if ((rc = store_extension_list(c->st, c->id, &list, &n, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	json_t *arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, policy_extension_to_json(&list[i]));
	free(list);
	answer_json(c->rs, 200,
		    json_pack("{s:I, s:o}", "assignment_id", (json_int_t)c->id, "extensions", arr));
}

/* GET /v1/assignments/{id}/extensions */
void get_extensions(struct call *c)
{
	if (own_assignment(c, c->id) == 0)
		answer_extensions(c);
}

/* PUT /v1/assignments/{id}/extensions: one student's extension, set. */
void put_extension(struct call *c)
{
	struct store_extension x;
	json_t *doc = NULL;
	struct err e;
	int rc;

	/* Parsed twice: body_json for the API's errors (400, 413), then the
	 * policy's own parser for the document's rules. */
	if (own_assignment(c, c->id) < 0 || body_json(c, 0, &doc) < 0)
		return;
	json_decref(doc);
	if (policy_extension_parse(c->rq->body, c->rq->body_len, &x, &e) < 0 ||
	    (!x.student[0] && err_setk(&e, ERR_INPUT, 0, "'student' is required") < 0)) {
		answer_err(c->rs, &e);
		return;
	}
	if ((rc = store_extension_set(c->st, c->id, &x, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	answer_extensions(c);
}

/* DELETE /v1/assignments/{id}/extensions?student=S */
void delete_extension(struct call *c)
{
	const char *student = http_request_query(c->rq, "student");
	struct err e;
	int rc;

	if (own_assignment(c, c->id) < 0)
		return;
	if (!student || !*student) {
		answer_fail(c->rs, ERR_USAGE, "student: the query parameter is required");
		return;
	}
	if ((rc = store_extension_remove(c->st, c->id, student, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	answer_extensions(c);
}

/* GET /v1/assignments/{id}/gradebook?format=csv|json: the counting result per student. */
void get_gradebook(struct call *c)
{
	const char *fmt = http_request_query(c->rq, "format");
	char *text = NULL;
	size_t len = 0;
	struct err e;

	if (own_assignment(c, c->id) < 0)
		return;
	bool csv = fmt && strcmp(fmt, "csv") == 0;
	if (fmt && !csv && strcmp(fmt, "json") != 0) {
		answer_fail(c->rs, ERR_USAGE, "format: '%.40s' is not csv or json", fmt);
		return;
	}
	int rc = policy_export(c->st, c->id, csv ? POLICY_FORMAT_CSV : POLICY_FORMAT_JSON, &text,
			       &len, &e);
	if (rc < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	c->rs->status = 200;
	c->rs->body = text;
	c->rs->content_type = csv ? "text/csv; charset=utf-8" : NULL;
}
