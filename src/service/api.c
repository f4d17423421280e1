/* The service's HTTP API (api.h, docs/api.md): the route table and the gate; handlers live by
 * resource in api_*.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/handler.h"
#include "service/policy.h"
#include "service/sbxhost.h"
#include "service/sbxline.h"
#include "util.h"

/*
 * A new route is one row here and one handler in the api_<resource>.c of
 * its resource (handler.h says what a handler gets).  The gate finds the
 * row before the body is read: the body cap, then the token checked once
 * against the row's scope; the handler then gets the caller and the
 * thread's store.  '#' in a pattern stands for a positive id.
 *
 * Room for what comes next (issue 25): /ui/ pages in ui_*.c files with
 * sessions and CSRF tokens in store tables of their own, whose rows need a
 * session instead of a token (a scope of their own here).
 */

/* A route that takes no token. */
#define OPEN ((enum store_scope) - 1)

/* What a route needs of the store. */
enum route_store {
	NEEDS_STORE = 0, /* 503 when it cannot be reached */
	NO_STORE,	 /* never touches it (liveness) */
	STORE_IF_ANY,	 /* says itself that it cannot be reached (readiness) */
};

static const struct route {
	const char *method;
	const char *pattern;
	enum store_scope scope; /* the token's scope at least, or OPEN */
	size_t body;		/* the body's cap (handler.h) */
	handler_fn *fn;
	enum route_store store;
} routes[] = {
    {"GET", "/healthz", OPEN, BODY_SMALL, get_healthz, NO_STORE},
    {"GET", "/readyz", OPEN, BODY_SMALL, get_readyz, STORE_IF_ANY},
    {"GET", "/metrics", OPEN, BODY_SMALL, get_metrics, NEEDS_STORE},
    {"POST", "/v1/submissions", STORE_SCOPE_SUBMIT, BODY_UPLOAD, post_submission, NEEDS_STORE},
    {"POST", "/v1/submissions/batch", STORE_SCOPE_SUBMIT, BODY_UPLOAD, post_batch, NEEDS_STORE},
    {"GET", "/v1/submissions", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, list_submissions, NEEDS_STORE},
    {"GET", "/v1/submissions/#", STORE_SCOPE_SUBMIT, BODY_SMALL, get_submission, NEEDS_STORE},
    {"GET", "/v1/submissions/#/results", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, get_results,
     NEEDS_STORE},
    {"POST", "/v1/submissions/#/regrade", STORE_SCOPE_INSTRUCTOR, BODY_SMALL,
     post_submission_regrade, NEEDS_STORE},
    {"POST", "/v1/assignments", STORE_SCOPE_INSTRUCTOR, BODY_UPLOAD, post_assignment,
     NEEDS_STORE},
    {"GET", "/v1/assignments/#", STORE_SCOPE_SUBMIT, BODY_SMALL, get_assignment, NEEDS_STORE},
    {"POST", "/v1/assignments/#/regrade", STORE_SCOPE_INSTRUCTOR, BODY_SMALL,
     post_assignment_regrade, NEEDS_STORE},
    {"GET", "/v1/assignments/#/policy", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, get_policy,
     NEEDS_STORE},
    {"PUT", "/v1/assignments/#/policy", STORE_SCOPE_INSTRUCTOR, BODY_DOC, put_policy,
     NEEDS_STORE},
    {"GET", "/v1/assignments/#/extensions", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, get_extensions,
     NEEDS_STORE},
    {"PUT", "/v1/assignments/#/extensions", STORE_SCOPE_INSTRUCTOR, BODY_DOC, put_extension,
     NEEDS_STORE},
    {"DELETE", "/v1/assignments/#/extensions", STORE_SCOPE_INSTRUCTOR, BODY_SMALL,
     delete_extension, NEEDS_STORE},
    {"GET", "/v1/assignments/#/gradebook", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, get_gradebook,
     NEEDS_STORE},
    {"GET", "/v1/regrades/#", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, get_regrade, NEEDS_STORE},
    {"POST", "/v1/tokens", STORE_SCOPE_ADMIN, BODY_SMALL, post_token, NEEDS_STORE},
    {"GET", "/v1/tokens", STORE_SCOPE_ADMIN, BODY_SMALL, list_tokens, NEEDS_STORE},
    {"PUT", "/v1/tokens/#", STORE_SCOPE_ADMIN, BODY_SMALL, put_token, NEEDS_STORE},
    {"DELETE", "/v1/tokens/#", STORE_SCOPE_ADMIN, BODY_SMALL, delete_token, NEEDS_STORE},
    {"GET", "/v1/course/budget", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, get_budget, NEEDS_STORE},
    {"PUT", "/v1/course/budget", STORE_SCOPE_ADMIN, BODY_SMALL, put_budget, NEEDS_STORE},
    {"POST", "/v1/sandboxes", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, post_sandbox, NEEDS_STORE},
    {"GET", "/v1/sandboxes", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, list_sandboxes, NEEDS_STORE},
    {"GET", "/v1/sandboxes/#", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, get_sandbox, NEEDS_STORE},
    {"DELETE", "/v1/sandboxes/#", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, delete_sandbox,
     NEEDS_STORE},
    {"POST", "/v1/sandboxes/#/exec", STORE_SCOPE_INSTRUCTOR, BODY_UPLOAD, post_sandbox_exec,
     NEEDS_STORE},
    {"PUT", "/v1/sandboxes/#/files", STORE_SCOPE_INSTRUCTOR, BODY_UPLOAD, put_sandbox_file,
     NEEDS_STORE},
    {"GET", "/v1/sandboxes/#/files", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, get_sandbox_file,
     NEEDS_STORE},
    {"GET", "/v1/sandboxes/#/list", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, list_sandbox_dir,
     NEEDS_STORE},
    {"DELETE", "/v1/sandboxes/#/files", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, delete_sandbox_file,
     NEEDS_STORE},
    {"GET", "/v1/sandboxes/#/stat", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, stat_sandbox_path,
     NEEDS_STORE},
    {"POST", "/v1/sandboxes/#/dirs", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, post_sandbox_dir,
     NEEDS_STORE},
    {"PUT", "/v1/sandboxes/#/archive", STORE_SCOPE_INSTRUCTOR, BODY_UPLOAD, put_sandbox_archive,
     NEEDS_STORE},
    {"GET", "/v1/sandboxes/#/archive", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, get_sandbox_archive,
     NEEDS_STORE},
    {"POST", "/v1/sandboxes/#/snapshot", STORE_SCOPE_INSTRUCTOR, BODY_SMALL,
     post_sandbox_snapshot, NEEDS_STORE},
    {"GET", "/v1/templates", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, list_templates, NEEDS_STORE},
    {"GET", "/v1/templates/#", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, get_template, NEEDS_STORE},
    {"DELETE", "/v1/templates/#", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, delete_template,
     NEEDS_STORE},
    {"POST", "/v1/sandboxes/#/timeout", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, post_sandbox_timeout,
     NEEDS_STORE},
    {"GET", "/v1/sandboxes/#/execs", STORE_SCOPE_INSTRUCTOR, BODY_SMALL, list_sandbox_execs,
     NEEDS_STORE},
};

/* What the gate leaves for the handler (http_request.state), and what a
 * handler keeps across calls of a request that waits. */
struct gate_state {
	bool checked; /* the token was checked against the route's scope */
	struct store_token_info who;
	struct call_hold hold;
};
_Static_assert(sizeof(struct gate_state) <= HTTP_REQUEST_STATE, "the gate's state must fit");

void api_config_default(struct api_config *c)
{
	*c = (struct api_config){.max_upload = 16u << 20,
				 .queue_bound = 10000,
				 .wait_max_s = 60,
				 .retry_after_s = 5,
				 .price_cpu_hour = POLICY_PRICE_VCPU_HOUR,
				 .price_gib_hour = POLICY_PRICE_GIB_HOUR};
}

/* ---- the route of a request ---- */

/* "17/results" -> 17, rest "/results": a positive id, digits only. */
static bool leading_id(const char *s, int64_t *id, const char **rest)
{
	size_t n = strspn(s, "0123456789");
	uint64_t v;

	if (n == 0 || s[0] == '0' || parse_u64(s, n, &v) < 0 || v > INT64_MAX)
		return false;
	*id = (int64_t)v;
	*rest = s + n;
	return true;
}

/* Does `path` match `pattern`?  *id gets the id '#' matched. */
static bool route_match(const char *pattern, const char *path, int64_t *id)
{
	const char *hash = strchr(pattern, '#'), *rest;

	if (!hash)
		return strcmp(pattern, path) == 0;
	size_t n = (size_t)(hash - pattern);
	return strncmp(pattern, path, n) == 0 && leading_id(path + n, id, &rest) &&
	       strcmp(rest, hash + 1) == 0;
}

/* The route of a request, or NULL. */
static const struct route *route_of(const struct http_request *rq, int64_t *id)
{
	*id = 0;
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (strcmp(routes[i].method, rq->method) == 0 &&
		    route_match(routes[i].pattern, rq->path, id))
			return &routes[i];
	return NULL;
}

/* ---- the threads' store connections ---- */

static void close_store(void *p)
{
	store_close(p);
}

/* When this thread last used its connection (ms, monotonic). */
static _Thread_local uint64_t thread_used_ms;

/* This thread's store connection.  One idle for a while is checked first
 * (a database restarted since would fail the request with a 500) and made
 * again if it broke. */
struct store *api_thread_store(struct api *a, struct err *e)
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

/* After an answer of ours (5xx): the connection may be what failed (a
 * database restarted).  It is closed only when it no longer answers: a
 * failure that was not the connection's (out of memory, a refused row)
 * keeps it, since reopening costs a connect and a schema check. */
static void after_failure(struct api *a, const struct http_response *rs)
{
	struct store *st = pthread_getspecific(a->key);
	int64_t ms;
	struct err e;

	if (rs->status < 500 || rs->again_ms || !st || store_now_ms(st, &ms, &e) == 0)
		return;
	pthread_setspecific(a->key, NULL);
	store_close(st);
}

/* http_response.state_end: a request that kept a descriptor ended. */
static void hold_release(void *state)
{
	struct gate_state *gs = state;

	if (gs->hold.waiting)
		sbx_line_leave(gs->hold.line, gs->hold.ticket);
	gs->hold.waiting = false;
	if (gs->hold.open && !gs->hold.done && gs->hold.adopt)
		sandbox_adopt_exec(&gs->hold); /* the command still runs */
	else if (gs->hold.open && gs->hold.fd >= 0)
		close(gs->hold.fd);
	gs->hold.open = false;
}

/* ---- the gate ---- */

/* The request's token, of the route's scope at least, into *who; else an
 * answer (401, 403, 503) and -1. */
static int authenticate(struct api *a, const struct http_request *rq, const struct route *r,
			struct store_token_info *who, struct http_response *rs)
{
	struct err e;

	if (!rq->bearer)
		return answer_fail(rs, ERR_UNAUTHORIZED,
				   "an Authorization: Bearer token is required"),
		       -1;
	struct store *st = api_thread_store(a, &e);
	if (!st)
		return answer_fail(rs, ERR_UNAVAILABLE, "the store is not reachable: %s", e.msg),
		       -1;
	int rc = store_token_check(st, rq->bearer, who, &e);
	if (rc == STORE_NOT_FOUND)
		return answer_fail(rs, ERR_UNAUTHORIZED, "the token is not valid"), -1;
	if (rc < 0)
		return answer_store(rs, rc, &e), -1;
	if (who->scope < r->scope)
		return answer_fail(rs, ERR_FORBIDDEN,
				   "this needs a token of scope '%s' (this one is '%s')",
				   store_scope_name(r->scope), store_scope_name(who->scope)),
		       -1;
	return 0;
}

int api_gate(void *ctx, const struct http_request *rq, struct http_response *rs, size_t *max_body)
{
	struct api *a = ctx;
	struct gate_state *gs = rq->state;
	int64_t id;
	const struct route *r = route_of(rq, &id);

	if (!r)
		return answer_fail(rs, ERR_NOT_FOUND, "no route %s %s", rq->method, rq->path), 1;
	if (r->body < *max_body)
		*max_body = r->body;
	if (r->scope == OPEN || !gs)
		return 0;
	if (authenticate(a, rq, r, &gs->who, rs) < 0) {
		after_failure(a, rs);
		return 1;
	}
	gs->checked = true;
	return 0;
}

void api_handle(void *ctx, const struct http_request *rq, struct http_response *rs)
{
	struct api *a = ctx;
	struct gate_state none = {0}, *gs = rq->state ? rq->state : &none;
	struct call c = {.a = a, .rq = rq, .rs = rs};
	const struct route *r = route_of(rq, &c.id);
	struct err e;

	if (!r) {
		answer_fail(rs, ERR_NOT_FOUND, "no route %s %s", rq->method, rq->path);
		return;
	}
	c.max_body = r->body;
	/* A request that came without the gate (a fuzzer's) is checked here. */
	if (r->scope != OPEN && !gs->checked) {
		if (authenticate(a, rq, r, &gs->who, rs) < 0)
			goto out;
		gs->checked = true;
	}
	c.who = r->scope == OPEN ? NULL : &gs->who;
	c.hold = rq->state ? &gs->hold : NULL;
	if (r->store != NO_STORE) {
		c.st = api_thread_store(a, &e);
		c.store_error = e.msg;
		if (!c.st && r->store == NEEDS_STORE) {
			answer_fail(rs, ERR_UNAVAILABLE, "the store is not reachable: %s", e.msg);
			goto out;
		}
	}
	r->fn(&c);
	if (gs->hold.open || gs->hold.waiting)
		rs->state_end = hold_release;
out:
	after_failure(a, rs);
}

/* ---- the API ---- */

void api_count(struct api *a, const char *counter, uint64_t n)
{
	metrics_count(a->metrics, counter, n);
}

void api_sandbox_duties(struct api *a, struct store *st)
{
	int64_t n = 0;
	struct err e;

	if (!a->sandboxes)
		return;
	sandbox_orphans_collect(st);
	sbx_host_reap(a->sandboxes, st);
	sandbox_cost_duty(a, st);
	/* A keeper ends its own sandbox at its lease; one that could not
	 * (killed, its host gone) is ended here a minute later. */
	if (store_sandbox_sweep(st, 60000, &n, &e) == 0 && n)
		metrics_count(a->metrics, "sandboxes_swept", (uint64_t)n);
}

void api_observe_phases(struct api *a, int64_t queued_ms, int64_t started_ms, int64_t ready_ms,
			int64_t finished_ms)
{
	metrics_observe_phases(a->metrics, queued_ms, started_ms, ready_ms, finished_ms);
}

int api_new(const struct api_config *c, struct api **ret, struct err *e)
{
	struct api *a = calloc(1, sizeof(*a));
	struct store *st = NULL;

	if (!a || !(a->metrics = metrics_new())) {
		free(a);
		return err_set(e, ENOMEM, "api");
	}
	a->c = *c;
	if (store_open(c->db_url, &st, e) < 0) {
		metrics_free(a->metrics);
		free(a);
		return err_wrap(e, "--db");
	}
	if (c->state_dir && c->keeper_exe) {
		/* No sandboxes here is not a reason not to serve: the
		 * sandbox routes then answer 503 with why. */
		struct err se;
		int64_t lost = 0;
		if (sbx_host_new(c->keeper_exe, c->state_dir, c->slots, &a->sandboxes, &se) < 0)
			snprintf(a->no_sandboxes, sizeof(a->no_sandboxes), "%s", se.msg);
		/* Keepers die with the server that spawned them: what this host
		 * held before it started is gone. */
		else if (store_sandbox_lose_host(st, sbx_host_key(a->sandboxes),
						 "the server that held it stopped", &lost, e) < 0) {
			store_close(st);
			sbx_host_free(a->sandboxes);
			metrics_free(a->metrics);
			free(a);
			return -1;
		}
	}
	store_close(st);
	if (a->sandboxes && sbx_line_new(&a->line, e) < 0) {
		sbx_host_free(a->sandboxes);
		metrics_free(a->metrics);
		free(a);
		return -1;
	}
	if (pthread_key_create(&a->key, close_store) != 0) {
		sbx_line_free(a->line);
		sbx_host_free(a->sandboxes);
		metrics_free(a->metrics);
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
	sbx_line_free(a->line);
	sbx_host_free(a->sandboxes);
	metrics_free(a->metrics);
	free(a);
}
