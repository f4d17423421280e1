/* The API's sandbox files: write, read, list, stat, remove, make_dir, upload and download a tree (docs/api.md, "Sandboxes"; docs/sandbox-keeper.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "digest.h"
#include "service/api_sandboxes.h"
#include "service/handler.h"
#include "service/jsonreq.h"
#include "service/sbxwire.h"

/* A call to a keeper that is not an exec answers within this. */
#define KEEPER_TIMEOUT_S 30

/* One call to the keeper that answers at once (not an exec). */
int keeper_call(const struct store_sandbox *s, json_t *head, const void *data, size_t len,
		size_t max_out, json_t **ret, void **ret_data, size_t *ret_len, struct err *e)
{
	int fd = -1;
	json_t *answer = NULL;

	json_object_set_new(head, "secret", json_string(s->secret));
	if (sbx_connect(s->socket, &fd, e) < 0)
		return -1;
	struct timeval tv = {.tv_sec = KEEPER_TIMEOUT_S};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int rc = sbx_send(fd, head, data, len, e);
	if (rc < 0)
		keeper_refusal(fd, e);
	else
		rc = sbx_recv(fd, &answer, ret_data, ret_len, max_out, e);
	close(fd);
	if (rc == 0 && (rc = sbx_error_of(answer, e)) < 0 && ret_data) {
		free(*ret_data);
		*ret_data = NULL;
	}
	if (rc < 0) {
		json_decref(answer);
		return -1;
	}
	*ret = answer;
	return 0;
}

/* The `path` query parameter; else a 400 and NULL. */
static const char *query_path(struct call *c)
{
	const char *path = http_request_query(c->rq, "path");

	if (!path || !*path || strlen(path) > 4096)
		return answer_fail(c->rs, ERR_USAGE, "path: the query parameter is required"), NULL;
	return path;
}

/* A keeper call on a live sandbox of the caller (head taken): its answer
 * and up to max_out bytes of data (ret_data NULL: none); else an answer
 * and -1. */
int sandbox_call(struct call *c, json_t *head, const void *data, size_t len, size_t max_out,
		 json_t **ret, void **ret_data, size_t *ret_len)
{
	struct store_sandbox s = {0};
	struct err e;
	int rc = -1;

	if (!head)
		answer_fail(c->rs, ERR_INTERNAL, "out of memory");
	else if (live_sandbox(c, &s) == 0 &&
		 (rc = keeper_call(&s, head, data, len, max_out, ret, ret_data, ret_len, &e)) < 0)
		answer_keeper_failure(c, &s, &e);
	json_decref(head);
	store_sandbox_clear(&s);
	return rc;
}

/* A call on one path whose answer is the keeper's JSON. */
static void path_call(struct call *c, json_t *head, const void *data, size_t len)
{
	json_t *answer = NULL;

	if (sandbox_call(c, head, data, len, 0, &answer, NULL, NULL) == 0)
		answer_json(c->rs, 200, answer);
}

/* PUT /v1/sandboxes/{id}/files: {"path", "content" | "content_base64", "executable"} */
void put_sandbox_file(struct call *c)
{
	static const char *const allowed[] = {"path", "content", "content_base64", "executable",
					      NULL};
	json_t *doc = NULL;
	const char *path;
	void *data = NULL;
	size_t len = 0;
	bool executable = false;
	struct err e;

	if (body_json(c, 0, &doc) < 0)
		return;
	const json_t *content = json_object_get(doc, "content");
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_string(doc, "path", true, 4096, &path, &e) < 0 ||
	    jsonreq_bool(doc, "executable", false, &executable, &e) < 0 ||
	    (content && !json_is_string(content) &&
	     err_setk(&e, ERR_INPUT, 0, "'content' must be a string") < 0) ||
	    (json_object_get(doc, "content_base64") &&
	     body_archive(c->a, doc, "content_base64", &data, &len, &e) < 0))
		answer_member(c->rs, &e);
	else if (!content == !json_object_get(doc, "content_base64"))
		answer_fail(c->rs, ERR_INPUT, "give exactly one of 'content' and 'content_base64'");
	else
		path_call(c,
			  json_pack("{s:s, s:s, s:b}", "op", "write", "path", path, "executable",
				    executable),
			  data ? data : json_string_value(content),
			  data ? len : json_string_length(content));
	json_decref(doc);
	free(data);
}

/* GET /v1/sandboxes/{id}/files?path=P: {"path", "size", "mode", "content_base64"} */
void get_sandbox_file(struct call *c)
{
	json_t *answer = NULL;
	void *data = NULL;
	size_t len = 0;
	const char *path = query_path(c);

	if (!path || sandbox_call(c, json_pack("{s:s, s:s}", "op", "read", "path", path), NULL, 0,
				  c->a->c.max_upload, &answer, &data, &len) < 0)
		return;
	char *b64 = base64_of(data, len);
	if (b64 && json_object_set_new(answer, "content_base64", json_string(b64)) == 0)
		answer_json(c->rs, 200, json_incref(answer));
	else
		answer_fail(c->rs, ERR_INTERNAL, "out of memory");
	free(b64);
	free(data);
	json_decref(answer);
}

/* GET /v1/sandboxes/{id}/list?path=D */
void list_sandbox_dir(struct call *c)
{
	const char *path = query_path(c);

	if (path)
		path_call(c, json_pack("{s:s, s:s}", "op", "list", "path", path), NULL, 0);
}

/* GET /v1/sandboxes/{id}/stat?path=P: {"path", "exists", "type", "size", "mode", "mtime_ms"} */
void stat_sandbox_path(struct call *c)
{
	const char *path = query_path(c);

	if (path)
		path_call(c, json_pack("{s:s, s:s}", "op", "stat", "path", path), NULL, 0);
}

/* DELETE /v1/sandboxes/{id}/files?path=P[&recursive=true] */
void delete_sandbox_file(struct call *c)
{
	const char *path = query_path(c), *r = http_request_query(c->rq, "recursive");

	if (!path)
		return;
	if (r && strcmp(r, "true") != 0 && strcmp(r, "false") != 0) {
		answer_fail(c->rs, ERR_USAGE, "recursive: 'true' or 'false', not '%.40s'", r);
		return;
	}
	path_call(c,
		  json_pack("{s:s, s:s, s:b}", "op", "remove", "path", path, "recursive",
			    r && strcmp(r, "true") == 0),
		  NULL, 0);
}

/* POST /v1/sandboxes/{id}/dirs: {"path"} */
void post_sandbox_dir(struct call *c)
{
	static const char *const allowed[] = {"path", NULL};
	json_t *doc = NULL;
	const char *path;
	struct err e;

	if (body_json(c, 0, &doc) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_string(doc, "path", true, 4096, &path, &e) < 0)
		answer_member(c->rs, &e);
	else
		path_call(c, json_pack("{s:s, s:s}", "op", "mkdir", "path", path), NULL, 0);
	json_decref(doc);
}

/* PUT /v1/sandboxes/{id}/archive?path=D, the body a tar, tar.gz or zip:
 * {"path", "files", "bytes"} */
void put_sandbox_archive(struct call *c)
{
	const char *path = query_path(c);

	if (!path)
		return;
	if (c->rq->body_len == 0) {
		answer_fail(c->rs, ERR_INPUT, "the body must be the archive (tar, tar.gz or zip)");
		return;
	}
	path_call(c, json_pack("{s:s, s:s}", "op", "upload", "path", path), c->rq->body,
		  c->rq->body_len);
}

/* GET /v1/sandboxes/{id}/archive?path=D: the directory as a gzip'd tar
 * (at most --max-upload bytes: past it 413 too_large) */
void get_sandbox_archive(struct call *c)
{
	json_t *answer = NULL;
	void *data = NULL;
	size_t len = 0;
	const char *path = query_path(c);

	if (!path || sandbox_call(c, json_pack("{s:s, s:s}", "op", "download", "path", path), NULL,
				  0, c->a->c.max_upload, &answer, &data, &len) < 0)
		return;
	json_decref(answer);
	if (len == 0) { /* pack_path() never makes an empty archive */
		free(data);
		answer_fail(c->rs, ERR_INTERNAL, "an empty archive of '%.200s'", path);
		return;
	}
	c->rs->status = 200;
	c->rs->body = data;
	c->rs->body_len = len;
	c->rs->content_type = "application/gzip";
}
