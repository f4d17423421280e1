/* The API's sandbox templates: snapshot a sandbox, list, read and remove templates (docs/api.md, "Templates"). */
#include <stdlib.h>
#include <string.h>

#include "service/api_sandboxes.h"
#include "service/handler.h"
#include "service/jsonreq.h"

/* Templates listed at most. */
#define TEMPLATES_SHOWN 1000

static json_t *template_doc(const struct store_template *t)
{
	char pin[STORE_TEMPLATE_NAME_MAX + 16];

	snprintf(pin, sizeof(pin), "%s@%d", t->name, t->version_no);
	return json_pack("{s:I, s:s, s:i, s:s, s:s, s:I, s:o, s:I}", "id",
			 (json_int_t)t->template_id, "name", t->name, "version", t->version_no,
			 "template", pin, "digest", t->sha256, "bytes", (json_int_t)t->bytes,
			 "source_sandbox_id",
			 t->source_sandbox_id ? json_integer(t->source_sandbox_id) : json_null(),
			 "created_ms", (json_int_t)t->created_ms);
}

int template_parse_pin(const char *pin, char *name, size_t cap, int *ret_version)
{
	const char *at = strrchr(pin, '@');
	size_t n = at ? (size_t)(at - pin) : strlen(pin);
	char *end;

	if (n >= cap)
		return -1;
	memcpy(name, pin, n);
	name[n] = '\0';
	*ret_version = 0;
	if (at) {
		long v = strtol(at + 1, &end, 10);
		if (!at[1] || *end || v < 1 || v > 1000000000)
			return -1;
		*ret_version = (int)v;
	}
	return store_template_name_ok(name) ? 0 : -1;
}

/* POST /v1/sandboxes/{id}/snapshot: {"name"} -> the template name@N */
void post_sandbox_snapshot(struct call *c)
{
	static const char *const allowed[] = {"name", NULL};
	struct store_template t;
	json_t *doc = NULL, *answer = NULL;
	void *data = NULL;
	size_t len = 0;
	const char *name;
	struct err e;
	int rc;

	if (body_json(c, 0, &doc) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_string(doc, "name", true, STORE_TEMPLATE_NAME_MAX, &name, &e) < 0) {
		answer_member(c->rs, &e);
		goto out;
	}
	if (!store_template_name_ok(name)) {
		answer_fail(c->rs, ERR_INPUT,
			    "'name': 1 to %d of a-z, 0-9, '.', '_', '-', starting with a letter or "
			    "digit",
			    STORE_TEMPLATE_NAME_MAX);
		goto out;
	}
	/* The sandbox's own id (c->id) is the template's source. */
	if (sandbox_call(c, json_pack("{s:s}", "op", "snapshot"), NULL, 0, STORE_BLOB_MAX, &answer,
			 &data, &len) < 0)
		goto out;
	if ((rc = store_template_add(c->st, c->who->course_id, name, data, len, c->id, &t, &e)) <
	    0) {
		answer_store(c->rs, rc, &e);
		goto out;
	}
	metrics_count(c->a->metrics, "sandbox_snapshots", 1);
	answer_json(c->rs, 201, template_doc(&t));
out:
	free(data);
	json_decref(answer);
	json_decref(doc);
}

/* GET /v1/templates */
void list_templates(struct call *c)
{
	struct store_template *v = NULL;
	size_t n = 0;
	struct err e;
	int rc;

	if ((rc = store_template_list(c->st, c->who->course_id, TEMPLATES_SHOWN, &v, &n, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; list && i < n; i++)
		json_array_append_new(list, template_doc(&v[i]));
	free(v);
	answer_json(c->rs, 200, list ? json_pack("{s:o}", "templates", list) : NULL);
}

/* GET /v1/templates/{id} */
void get_template(struct call *c)
{
	struct store_template t;
	struct err e;
	int rc;

	if ((rc = store_template_get(c->st, c->who->course_id, NULL, 0, c->id, &t, &e)) < 0)
		answer_store(c->rs, rc, &e);
	else
		answer_json(c->rs, 200, template_doc(&t));
}

/* DELETE /v1/templates/{id}: sandboxes made from it keep their files. */
void delete_template(struct call *c)
{
	struct store_template t;
	struct err e;
	int rc;

	if ((rc = store_template_remove(c->st, c->who->course_id, c->id, &t, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	json_t *doc = template_doc(&t);
	if (doc)
		json_object_set_new(doc, "removed", json_true());
	answer_json(c->rs, 200, doc);
}
