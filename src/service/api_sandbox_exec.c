/* The API's sandbox commands: POST /v1/sandboxes/{id}/exec, waiting suspended, and the execs whose client left (docs/api.md, "Sandboxes"). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "service/api_sandboxes.h"
#include "service/jsonreq.h"
#include "service/policy.h"
#include "service/sbxhost.h"
#include "service/sbxwire.h"
#include "service/views.h"
#include "util.h"

/* Bounds of an exec. */
#define ARGV_MAX	 4096
#define EXEC_TIMEOUT_MS	 (3600 * 1000)
#define OUTPUT_MAX	 (1u << 20) /* the keeper's own cap */
#define OUTPUT_DEFAULT	 (1u << 20)
#define EXEC_FIRST_MS	 20 /* most execs answer within this: no suspension */
#define EXEC_STEP_MAX_MS 50
/* A streamed exec's keepalive line after this much quiet: below the idle
 * limits of common proxies (nginx 60 s, cloud balancers 60 s and more). */
#define KEEPALIVE_DEFAULT_MS 15000

/* ---- exec ---- */

/* The argv of an exec: an array of strings, or one string run as sh -c. */
static json_t *exec_argv(const json_t *doc, struct err *e)
{
	json_t *argv = json_object_get(doc, "argv"), *cmd = json_object_get(doc, "command"), *x;
	size_t i;

	if (!!argv == !!cmd)
		return err_setk(e, ERR_INPUT, 0, "give exactly one of 'argv' and 'command'"),
		       NULL;
	if (cmd) {
		/* A script: newlines and tabs are its own, only NUL is not. */
		if (!json_is_string(cmd) || json_string_length(cmd) < 1 ||
		    json_string_length(cmd) > 64 * 1024 ||
		    strlen(json_string_value(cmd)) != json_string_length(cmd))
			return err_setk(e, ERR_INPUT, 0,
					"'command' must be a string of 1 to 65536 bytes without NUL"),
			       NULL;
		return json_pack("[s, s, s]", "/bin/sh", "-c", json_string_value(cmd));
	}
	if (!json_is_array(argv) || json_array_size(argv) < 1 ||
	    json_array_size(argv) > ARGV_MAX)
		return err_setk(e, ERR_INPUT, 0,
				"'argv' must be an array of 1 to %d strings", ARGV_MAX),
		       NULL;
	json_array_foreach(argv, i, x)
	{
		if (!json_is_string(x) || strlen(json_string_value(x)) != json_string_length(x))
			return err_setk(e, ERR_INPUT, 0,
					"argv[%zu] must be a string without NUL bytes", i),
			       NULL;
	}
	return json_incref(argv);
}

/* The first limit a run hit, by limit_hit_names' order, or NULL. */
static const char *first_limit(const json_t *hits)
{
	return json_is_array(hits) && json_array_size(hits)
		   ? json_string_value(json_array_get(hits, 0))
		   : NULL;
}

static bool hit(const json_t *hits, const char *name)
{
	size_t i;
	json_t *x;

	json_array_foreach(hits, i, x) if (json_is_string(x) &&
					   strcmp(json_string_value(x), name) == 0) return true;
	return false;
}

/* Record an exec's end from the keeper's answer `doc` (NULL: no answer,
 * an error) with what the budget counts: the memory the sandbox holds for
 * the time the command ran. */
void record_exec(struct store *st, int64_t exec_id, const json_t *doc, int64_t memory_mib)
{
	struct store_exec_result r = {.status = "error", .exit_code = -1};
	struct err e;
	char *hits_text = NULL;

	if (doc) {
		json_t *hits = json_object_get(doc, "limits_hit");
		hits_text = json_is_array(hits) ? json_dumps(hits, JSON_COMPACT) : NULL;
		json_t *code = json_object_get(doc, "exit_code");
		r = (struct store_exec_result){
		    .status = json_string_value(json_object_get(doc, "status")),
		    .exit_code = json_is_integer(code) ? (int)json_integer_value(code) : -1,
		    .signal = (int)json_integer_value(json_object_get(doc, "signal")),
		    .limits_hit_json = hits_text,
		    .timed_out = hit(hits, "cpu") || hit(hits, "wall"),
		    .cpu_ms = json_integer_value(json_object_get(doc, "cpu_ms")),
		    .wall_ms = json_integer_value(json_object_get(doc, "wall_ms")),
		    .peak_memory_kib = json_integer_value(json_object_get(doc, "peak_memory_kib")),
		    .peak_pids = json_integer_value(json_object_get(doc, "peak_pids")),
		    .stdout_bytes = json_integer_value(json_object_get(doc, "stdout_bytes")),
		    .stderr_bytes = json_integer_value(json_object_get(doc, "stderr_bytes")),
		};
		r.gib_seconds = (double)memory_mib / 1024 * (double)r.wall_ms / 1000;
		if (!r.status)
			r.status = "error";
	}
	/* A record that fails leaves the exec `running` until its sandbox
	 * ends (then `unknown`): the answer still goes to the client. */
	store_exec_end(st, exec_id, &r, &e);
	free(hits_text);
}

/* The keeper's answer to an exec, made the API's answer and recorded. */
static void finish_exec(struct call *c, int fd, int64_t sandbox_id, int64_t exec_id,
			int64_t memory_mib)
{
	json_t *doc = NULL;
	struct err e;

	if (sbx_recv(fd, &doc, NULL, NULL, 0, &e) < 0 || sbx_error_of(doc, &e) < 0) {
		json_decref(doc);
		record_exec(c->st, exec_id, NULL, memory_mib);
		/* Ended while the command ran (deleted, its lease, its cost): say
		 * so, and why. */
		struct store_sandbox s = {0};
		struct err e2;
		if (store_sandbox_get(c->st, sandbox_id, &s, &e2) == 0 && !live(&s))
			answer_fail(c->rs, ERR_NOT_FOUND,
				    "sandbox %lld was %s while the command ran%s%s",
				    (long long)sandbox_id, s.state, s.end_reason[0] ? ": " : "",
				    s.end_reason);
		else if (keeper_missing(&e) || e.kind != ERR_INTERNAL)
			answer_keeper_failure(c, &s, &e);
		else
			answer_err(c->rs, &e);
		store_sandbox_clear(&s);
		return;
	}
	answer_json(c->rs, 200, exec_result(c->a, c->st, doc, exec_id, memory_mib));
	if (c->rq->first_ns)
		metrics_observe_sandbox(c->a->metrics, "exec", now_ns() - c->rq->first_ns);
}

json_t *exec_result(struct api *a, struct store *st, json_t *doc, int64_t exec_id,
		    int64_t memory_mib)
{
	record_exec(st, exec_id, doc, memory_mib);
	json_t *hits = json_object_get(doc, "limits_hit");
	const char *limit = first_limit(hits);
	json_object_set_new(doc, "exec_id", json_integer(exec_id));
	json_object_set_new(doc, "timed_out", json_boolean(hit(hits, "cpu") || hit(hits, "wall")));
	json_object_set_new(doc, "limit", limit ? json_string(limit) : json_null());
	json_object_set_new(
	    doc, "usage",
	    json_pack("{s:O, s:O, s:O, s:O}", "cpu_ms", json_object_get(doc, "cpu_ms"), "wall_ms",
		      json_object_get(doc, "wall_ms"), "peak_memory_kib",
		      json_object_get(doc, "peak_memory_kib"), "peak_pids",
		      json_object_get(doc, "peak_pids")));
	metrics_count(a->metrics, "sandbox_execs", 1);
	return doc;
}

/* ---- execs whose client left ---- */

/*
 * A request that waited for an exec and ended first (its client went, the
 * server stops) hands its keeper connection here: the command still runs,
 * and its end is recorded and charged to the course when it comes, by
 * serve's background loop.
 */
struct orphan {
	int fd;
	int64_t exec_id, memory_mib;
};
static pthread_mutex_t orphans_lock = PTHREAD_MUTEX_INITIALIZER;
static struct orphan *orphans;
static size_t n_orphans, cap_orphans;

void sandbox_adopt_exec(const struct call_hold *h)
{
	pthread_mutex_lock(&orphans_lock);
	if (n_orphans == cap_orphans) {
		size_t cap = cap_orphans ? cap_orphans * 2 : 16;
		struct orphan *o = realloc(orphans, cap * sizeof(*o));
		if (!o) {
			pthread_mutex_unlock(&orphans_lock);
			close(h->fd); /* recorded `unknown` when the sandbox ends */
			return;
		}
		orphans = o;
		cap_orphans = cap;
	}
	orphans[n_orphans++] = (struct orphan){h->fd, h->exec_id, h->memory_mib};
	pthread_mutex_unlock(&orphans_lock);
}

void sandbox_orphans_collect(struct store *st)
{
	pthread_mutex_lock(&orphans_lock);
	for (size_t i = 0; i < n_orphans;) {
		struct pollfd p = {.fd = orphans[i].fd, .events = POLLIN};
		if (poll(&p, 1, 0) <= 0) {
			i++;
			continue;
		}
		json_t *doc = NULL;
		struct err e;
		bool got = sbx_recv(orphans[i].fd, &doc, NULL, NULL, 4u << 20, &e) == 0;
		if (got && json_object_get(doc, "output")) {
			/* A streamed exec's output nobody reads any more. */
			json_decref(doc);
			i++;
			continue;
		}
		bool ok = got && sbx_error_of(doc, &e) == 0;
		record_exec(st, orphans[i].exec_id, ok ? doc : NULL, orphans[i].memory_mib);
		json_decref(doc);
		close(orphans[i].fd);
		orphans[i] = orphans[--n_orphans];
	}
	pthread_mutex_unlock(&orphans_lock);
}

/* Wait for an exec's answer on the hold's descriptor: answered now, or
 * asked to be called again. */
static void wait_exec(struct call *c)
{
	struct call_hold *h = c->hold;
	struct pollfd p = {.fd = h->fd, .events = POLLIN};

	if (poll(&p, 1, 0) > 0) {
		finish_exec(c, h->fd, h->sandbox_id, h->exec_id, h->memory_mib);
		h->done = true;
		return;
	}
	if (c->rq->last_call) {
		answer_fail(c->rs, ERR_UNAVAILABLE,
			    "the server is stopping; the exec's sandbox goes with it");
		return;
	}
	h->polls++;
	unsigned ms = 5u << (h->polls < 4 ? h->polls : 4);
	c->rs->again_ms = ms < EXEC_STEP_MAX_MS ? ms : EXEC_STEP_MAX_MS;
}

/* POST /v1/sandboxes/{id}/exec */
void post_sandbox_exec(struct call *c)
{
	static const char *const allowed[] = {"argv",	     "command", "cwd",
					      "env",	     "stdin",	"stdin_base64",
					      "timeout_ms", "pids",	"max_output_bytes",
					      "stream",     "keepalive_ms", NULL};
	struct store_sandbox s = {0};
	json_t *doc = NULL, *argv = NULL, *head = NULL;
	const char *cwd = NULL, *stdin_text = NULL;
	char *env = NULL, *argv_text = NULL;
	void *stdin_data = NULL;
	size_t stdin_len = 0;
	int64_t timeout = 60000, pids = 256, out_max = OUTPUT_DEFAULT, exec_id;
	int64_t keepalive = KEEPALIVE_DEFAULT_MS;
	bool stream = false;
	int fd = -1;
	struct err e;
	int rc;

	if (c->hold && c->hold->open) {
		wait_exec(c);
		return;
	}
	if (body_json(c, 0, &doc) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0 || !(argv = exec_argv(doc, &e)) ||
	    jsonreq_string(doc, "cwd", false, 4096, &cwd, &e) < 0 ||
	    jsonreq_int(doc, "timeout_ms", false, 1, EXEC_TIMEOUT_MS, &timeout, &e) < 0 ||
	    jsonreq_int(doc, "pids", false, 1, 4096, &pids, &e) < 0 ||
	    jsonreq_int(doc, "max_output_bytes", false, 0, OUTPUT_MAX, &out_max, &e) < 0 ||
	    jsonreq_bool(doc, "stream", false, &stream, &e) < 0 ||
	    jsonreq_int(doc, "keepalive_ms", false, 100, 60000, &keepalive, &e) < 0 ||
	    string_map(doc, "env", &env, &e) < 0 ||
	    (json_object_get(doc, "stdin") && !json_is_string(json_object_get(doc, "stdin")) &&
	     err_setk(&e, ERR_INPUT, 0, "'stdin' must be a string (any text)") < 0) ||
	    (json_object_get(doc, "stdin_base64") &&
	     body_archive(c->a, doc, "stdin_base64", &stdin_data, &stdin_len, &e) < 0)) {
		answer_member(c->rs, &e);
		goto out;
	}
	if (!stream && json_object_get(doc, "keepalive_ms")) {
		answer_fail(c->rs, ERR_INPUT, "'keepalive_ms' is for a streamed exec (\"stream\": true)");
		goto out;
	}
	stdin_text = json_string_value(json_object_get(doc, "stdin"));
	if (stdin_text && stdin_data) {
		answer_fail(c->rs, ERR_INPUT, "give at most one of 'stdin' and 'stdin_base64'");
		goto out;
	}
	if (live_sandbox(c, &s) < 0)
		goto out;
	/* Sandbox commands count toward the course's daily CPU cap, and
	 * toward the token's own spending limit. */
	if (within_budget(c) < 0 || within_token_spend(c) < 0)
		goto out;
	argv_text = json_dumps(argv, JSON_COMPACT);
	if (!argv_text || (rc = store_exec_begin(c->st, s.sandbox_id, argv_text, cwd, &exec_id, &e)) < 0) {
		if (!argv_text)
			answer_fail(c->rs, ERR_INTERNAL, "out of memory");
		else
			answer_store(c->rs, rc, &e);
		goto out;
	}
	head = json_pack("{s:s, s:s, s:O, s:s?, s:o, s:I, s:I, s:I, s:b}", "op", "exec", "secret",
			 s.secret, "argv", argv, "cwd", cwd, "env", json_loads(env, 0, NULL),
			 "timeout_ms", (json_int_t)timeout, "pids", (json_int_t)pids,
			 "max_output_bytes", (json_int_t)out_max, "has_stdin",
			 stdin_text || stdin_data);
	/* Only a request that can wait suspended streams (a fuzzer's cannot). */
	stream = stream && c->hold;
	if (head && stream)
		json_object_set_new(head, "stream", json_true());
	const void *in = stdin_data ? stdin_data : stdin_text;
	size_t in_len = stdin_data	? stdin_len
			: stdin_text	? json_string_length(json_object_get(doc, "stdin"))
					: 0;
	if (!head || sbx_connect(s.socket, &fd, &e) < 0 || sbx_send(fd, head, in, in_len, &e) < 0) {
		if (!head)
			err_set(&e, ENOMEM, "exec");
		else if (fd >= 0)
			keeper_refusal(fd, &e);
		record_exec(c->st, exec_id, NULL, s.memory_mib);
		answer_keeper_failure(c, &s, &e);
		goto out;
	}
	if (stream) {
		exec_stream_start(c, fd, s.sandbox_id, exec_id, s.memory_mib,
				  (unsigned)keepalive);
		fd = -1;
		goto out;
	}
	struct pollfd p = {.fd = fd, .events = POLLIN};
	if (poll(&p, 1, c->hold ? EXEC_FIRST_MS : -1) > 0 || !c->hold) {
		finish_exec(c, fd, s.sandbox_id, exec_id, s.memory_mib);
		goto out;
	}
	/* Longer: the request waits suspended; the hold keeps the socket. */
	*c->hold = (struct call_hold){.open = true,
				      .adopt = c->a->sandboxes != NULL,
				      .fd = fd,
				      .sandbox_id = s.sandbox_id,
				      .exec_id = exec_id,
				      .memory_mib = s.memory_mib};
	fd = -1;
	c->rs->again_ms = 5;
out:
	if (fd >= 0)
		close(fd);
	json_decref(head);
	json_decref(argv);
	json_decref(doc);
	free(argv_text);
	free(env);
	free(stdin_data);
	store_sandbox_clear(&s);
}


/* Execs listed in one page. */
#define EXECS_SHOWN 500

static json_t *json_of_text(const char *text)
{
	json_t *v = text && *text ? json_loads(text, 0, NULL) : NULL;
	return v ? v : json_null();
}

/* GET /v1/sandboxes/{id}/execs?after=ID: its commands, oldest first, a page. */
void list_sandbox_execs(struct call *c)
{
	struct store_sandbox s = {0};
	struct store_exec_row *rows = NULL;
	int64_t after;
	size_t n = 0;
	struct err e;
	int rc;

	if (query_after(c, &after) < 0)
		return;
	/* Any sandbox of the caller's, live or ended: the record stays. */
	rc = store_sandbox_get(c->st, c->id, &s, &e);
	if (rc == 0 && s.course_id != c->who->course_id)
		rc = not_this_course(&e, "sandbox", c->id);
	store_sandbox_clear(&s);
	if (rc == 0 && !(rows = calloc(EXECS_SHOWN, sizeof(*rows))))
		rc = err_set(&e, ENOMEM, "execs");
	if (rc == 0)
		rc = store_exec_list(c->st, c->id, after, rows, EXECS_SHOWN, &n, &e);
	if (rc < 0) {
		answer_store(c->rs, rc, &e);
		free(rows);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++) {
		const struct store_exec_row *r = &rows[i];
		json_array_append_new(
		    list,
		    json_pack("{s:I, s:s, s:o, s:s?, s:s?, s:o, s:o, s:o, s:b, s:I, s:I, s:I, s:I, "
			      "s:I, s:I, s:f, s:I, s:o}",
			      "exec_id", (json_int_t)r->exec_id, "state", r->state, "argv",
			      json_of_text(r->argv_json), "cwd", r->cwd[0] ? r->cwd : NULL, "status",
			      r->status[0] ? r->status : NULL, "exit_code",
			      r->exit_code >= 0 ? json_integer(r->exit_code) : json_null(), "signal",
			      r->signal > 0 ? json_integer(r->signal) : json_null(), "limits_hit",
			      json_of_text(r->limits_hit_json), "timed_out", r->timed_out,
			      "cpu_ms", (json_int_t)r->cpu_ms, "wall_ms", (json_int_t)r->wall_ms,
			      "peak_memory_kib", (json_int_t)r->peak_memory_kib, "peak_pids",
			      (json_int_t)r->peak_pids, "stdout_bytes", (json_int_t)r->stdout_bytes,
			      "stderr_bytes", (json_int_t)r->stderr_bytes, "gib_seconds",
			      r->gib_seconds, "started_ms", (json_int_t)r->started_ms, "ended_ms",
			      view_ms(r->ended_ms)));
	}
	int64_t last = n ? rows[n - 1].exec_id : 0;
	for (size_t i = 0; i < n; i++)
		store_exec_row_clear(&rows[i]);
	free(rows);
	answer_json(c->rs, 200,
		    json_pack("{s:I, s:o, s:o}", "sandbox_id", (json_int_t)c->id, "execs", list,
			      "next_after", n == EXECS_SHOWN ? json_integer(last) : json_null()));
}
