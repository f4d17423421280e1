/* What every handler of the service API gets and uses: the call, the caller, answers and request readers. */
#ifndef PROCTOR_SERVICE_HANDLER_H
#define PROCTOR_SERVICE_HANDLER_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "service/api.h"
#include "service/http.h"
#include "service/metrics.h"
#include "store/store.h"

/*
 * A request goes: http.c (bounds, body) -> api.c's gate (the route, the
 * token, once) -> api.c's handle (the thread's store) -> one handler of
 * api_<resource>.c -> the store and the policy -> an answer made here.
 * A handler never authenticates (the gate did, and hands it the caller),
 * never writes a literal status and code (it names a kind of err.h, whose
 * table in err.c says both), and never grades (workers do).
 */

/* Body caps of the routes (api.c's table). */
#define BODY_SMALL  (64u << 10) /* a JSON request that is not an upload */
#define BODY_DOC    (16u << 10) /* a policy or an extension document */
#define BODY_UPLOAD SIZE_MAX	/* an archive in base64: api_config.max_upload decides */

/* The API: its configuration, the threads' store connections, its metrics,
 * the sandboxes this host holds (NULL: none here). */
struct api {
	struct api_config c;
	pthread_key_t key; /* the thread's store (api.c) */
	struct metrics *metrics;
	struct sbx_host *sandboxes;
	struct sbx_line *line;	/* creates waiting for room on it (sbxline.h) */
	char no_sandboxes[256]; /* why sandboxes is NULL, when it was asked for */
};

/*
 * What a handler keeps across the calls of one request that waits (an
 * exec's connection to its keeper), in the request's state: api.c closes
 * `fd` when the request ends, however it ends.
 */
struct call_hold {
	bool open;
	bool done;  /* answered: nothing left to wait for */
	bool adopt; /* unanswered at the end: handed to sandbox_adopt_exec() */
	int fd;
	unsigned polls;
	int64_t sandbox_id, exec_id, memory_mib;
	/* A create waiting in `line` for room (api_sandboxes.c): it leaves the
	 * line when the request ends, however it ends. */
	bool waiting;
	uint64_t ticket;
	struct sbx_line *line;
};

/* The calling thread's store connection (api.c), for what runs on an HTTP
 * thread outside a handler's call: a streamed answer's producer. */
struct store *api_thread_store(struct api *a, struct err *e);

/* One call of a handler. */
struct call {
	struct api *a;
	struct store *st;
	const struct http_request *rq;
	struct http_response *rs;
	/* Who calls: the token the gate checked (course, scope, token id);
	 * NULL on an open route (/healthz, /metrics). */
	const struct store_token_info *who;
	int64_t id;	 /* the id in the path ('#' of the route), or 0 */
	size_t max_body; /* this route's cap of the body */
	/* st is NULL only on a route that does without (/healthz, /readyz);
	 * then this says why. */
	const char *store_error;
	/* Kept across the calls of this request; NULL for a request made
	 * without a server (a fuzzer's), which then waits blocking. */
	struct call_hold *hold;
};

typedef void handler_fn(struct call *c);

/* The handlers, by resource (api_<resource>.c); api.c's table names them. */
handler_fn get_healthz, get_readyz, get_metrics;
handler_fn post_submission, post_batch, list_submissions, get_submission, get_results;
handler_fn post_assignment, get_assignment, get_policy, put_policy, get_extensions,
    put_extension, delete_extension, get_gradebook;
handler_fn post_submission_regrade, post_assignment_regrade, get_regrade;
handler_fn post_token, list_tokens, put_token, delete_token, get_budget, put_budget;
handler_fn post_sandbox, get_sandbox, list_sandboxes, delete_sandbox, post_sandbox_exec,
    put_sandbox_file, get_sandbox_file, list_sandbox_dir, list_sandbox_execs, post_sandbox_timeout,
    stat_sandbox_path, delete_sandbox_file, post_sandbox_dir, put_sandbox_archive, get_sandbox_archive,
    post_sandbox_snapshot, list_templates, get_template, delete_template;

/* The background duty of sandboxes with a max_cost_micros: one whose
 * metered cost reached it is ended and its keeper killed
 * (api_sandbox_cost.c). */
void sandbox_cost_duty(struct api *a, struct store *st);

/* An exec whose request ended before its answer (api.c's hold_release):
 * recorded when it comes, by sandbox_orphans_collect() (api_sandboxes.c). */
void sandbox_adopt_exec(const struct call_hold *h);
void sandbox_orphans_collect(struct store *st);

/* ---- answers (api_answer.c) ---- */

/* 200..299 with a JSON document (taken over; NULL: out of memory, a 500). */
int answer_json(struct http_response *rs, unsigned status, json_t *doc);
/* An error of `kind`: its status and stable code (err.c's table). */
int answer_fail(struct http_response *rs, enum err_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An error as its kind says. */
int answer_err(struct http_response *rs, const struct err *e);
/* A store failure `rc`: what it says of the request (not found, too large,
 * invalid), else ours (500). */
int answer_store(struct http_response *rs, int rc, const struct err *e);
/* A refused member: its kind, but out of memory is ours (500). */
int answer_member(struct http_response *rs, const struct err *e);

/* ---- reading the request (api_answer.c) ---- */

/* The body as one JSON object within the route's cap; else an answer (413,
 * 400) and -1.  `max` lowers the cap (0: the route's). */
int body_json(struct call *c, size_t max, json_t **ret);
/* An archive member in base64, decoded into a malloc'd buffer of at most
 * api_config.max_upload bytes; a refusal of its size is ERR_TOO_LARGE. */
int body_archive(const struct api *a, const json_t *obj, const char *key, void **ret,
		 size_t *ret_len, struct err *e);
/* The `wait` query parameter in seconds, capped at --wait-max; else a 400
 * and -1. */
int query_wait(struct call *c, unsigned *ret);
/* The `after` query parameter, an id (0 when absent); else a 400 and -1. */
int query_after(struct call *c, int64_t *ret);
/*
 * Whether a long poll of wait_s seconds has time left: then the handler
 * returns at once with rs->again_ms set (it is called again then, the
 * connection holding no thread meanwhile), and true.
 */
bool poll_again(struct call *c, unsigned wait_s);

/* An id of another course is answered as one that does not exist. */
int not_this_course(struct err *e, const char *what, int64_t id);
/* The caller's course owns assignment `id`; else an answer and -1. */
int own_assignment(struct call *c, int64_t id);

#endif
