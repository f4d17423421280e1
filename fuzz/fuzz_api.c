/* libFuzzer target: the service API's handlers (src/service/api.c) on any request body, against a
 * real SQLite store. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/api.h"
#include "store/store.h"

/*
 * Every input is one request: its first byte picks a route (each route that
 * takes a body, and the reads), the rest is the body.  The token is an
 * admin's, so every handler runs past authorization.  Whatever the body,
 * the handler must answer a status from 200 to 599 with a body, and an
 * error must be a JSON document with a string "code".
 */

static struct api *api;
static char token[STORE_TOKEN_LEN + 1];

static const struct {
	const char *method, *path;
} routes[] = {
    {"POST", "/v1/submissions"},
    {"POST", "/v1/assignments"},
    {"POST", "/v1/tokens"},
    {"PUT", "/v1/course/budget"},
    {"POST", "/v1/submissions/1/regrade"},
    {"GET", "/v1/submissions/1"},
    {"GET", "/v1/submissions/1/results"},
    {"GET", "/v1/assignments/1"},
    {"GET", "/v1/submissions"},
    {"GET", "/metrics"},
    {"POST", "/v1/submissions/99999999999999999999/regrade"},
    /* Sandboxes: no host here (503 for a create), but every body is
     * parsed before the sandbox is looked up. */
    {"POST", "/v1/sandboxes"},
    {"POST", "/v1/sandboxes/1/exec"},
    {"PUT", "/v1/sandboxes/1/files"},
    {"GET", "/v1/sandboxes"},
    /* A token's limits (after the rest: a seed's first byte keeps its route). */
    {"PUT", "/v1/tokens/1"},
    /* The sandbox API's later bodies (each parsed before the sandbox is
     * looked up), and the templates. */
    {"POST", "/v1/sandboxes/1/timeout"},
    {"POST", "/v1/sandboxes/1/dirs"},
    {"POST", "/v1/sandboxes/1/snapshot"},
    {"GET", "/v1/templates"},
    {"DELETE", "/v1/templates/1"},
};

static void setup(void)
{
	static char url[256];
	char dir[] = "/tmp/fuzz_api.XXXXXX";
	struct store *st;
	struct api_config c;
	struct err e;
	int64_t course, version, sub, job;
	bool existing;

	if (!mkdtemp(dir))
		abort();
	snprintf(url, sizeof(url), "sqlite:%s/db.sqlite", dir);
	if (store_open(url, &st, &e) < 0 ||
	    store_token_create(st, "c", STORE_SCOPE_ADMIN, token, &e) < 0 ||
	    store_course_ensure(st, "c", false, &course, &e) < 0 ||
	    store_assignment_add_version(st, course, "a", "x", 1, "host", &version, NULL, &e) < 0)
		abort();
	struct store_submission_in in = {
	    .course_id = course, .version_id = version, .data = "y", .len = 1};
	if (store_submit(st, &in, &sub, &job, &existing, &e) < 0)
		abort();
	store_close(st);
	api_config_default(&c);
	c.db_url = url;
	c.max_upload = 1 << 20;
	if (api_new(&c, &api, &e) < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!api)
		setup();
	if (size < 1)
		return 0;
	char *body = malloc(size);
	if (!body)
		return 0;
	memcpy(body, data + 1, size - 1);
	body[size - 1] = '\0';
	size_t r = data[0] % (sizeof(routes) / sizeof(routes[0]));
	struct http_request rq = {.method = routes[r].method,
				  .path = routes[r].path,
				  .bearer = data[0] & 0x80 ? "prt_bogus" : token,
				  .idempotency_key = data[0] & 0x40 ? "k" : NULL,
				  .body = body,
				  .body_len = size - 1,
				  .remote = "127.0.0.1"};
	struct http_response rs = {0};

	api_handle(api, &rq, &rs);
	if (rs.status < 200 || rs.status > 599 || !rs.body)
		abort();
	if (rs.status >= 400) {
		json_t *doc = json_loads(rs.body, 0, NULL);
		if (!json_is_string(json_object_get(json_object_get(doc, "error"), "code")))
			abort();
		json_decref(doc);
	}
	free(rs.body);
	free(body);
	return 0;
}
