/* The API's sandboxes: create, read, list, delete (docs/api.md, "Sandboxes"; docs/sandbox-keeper.md); exec is api_sandbox_exec.c, files api_sandbox_files.c. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "digest.h"
#include "service/handler.h"
#include "service/jsonreq.h"
#include "service/policy.h"
#include "service/sbxhost.h"
#include "service/sbxwire.h"
#include "service/views.h"
#include "service/api_sandboxes.h"

/*
 * A handler here reads and writes the store, as every handler does, and
 * talks to the sandbox's keeper over its socket: one connection per call.
 * An exec that does not answer within EXEC_FIRST_MS keeps its connection
 * in the request's hold and the request waits suspended (it holds no
 * thread), looking again every few milliseconds; the descriptor is closed
 * when the request ends, however it ends (api.c's hold_release).
 */

/* Bounds of a create (docs/api.md). */
#define VCPU_MAX       16
#define MEMORY_MIB_MAX (64 * 1024)
#define DISK_MIB_MAX   (64 * 1024)
#define LEASE_S_MAX    86400
#define LABELS_MAX     32
/* Sandboxes listed at most. */
#define SANDBOXES_SHOWN 1000

static json_t *json_text_or_empty(const char *text)
{
	json_t *v = text ? json_loads(text, 0, NULL) : NULL;
	return v ? v : json_object();
}

json_t *sandbox_doc(const struct store_sandbox *s)
{
	return json_pack("{s:I, s:s, s:s, s:s, s:i, s:i, s:i, s:s, s:I, s:o, s:o, s:I, s:o, s:o, "
			 "s:o, s:I, s:{s:I, s:f}}",
			 "id", (json_int_t)s->sandbox_id, "state", s->state, "isolation", s->isolation,
			 "image", s->image_pin, "vcpu", s->vcpu, "memory_mib", s->memory_mib,
			 "disk_mib", s->disk_mib, "network", "none", "timeout_seconds",
			 (json_int_t)s->timeout_s, "labels", json_text_or_empty(s->labels_json),
			 "env", json_text_or_empty(s->env_json), "created_ms",
			 (json_int_t)s->created_ms, "started_ms", view_ms(s->started_ms),
			 "ended_ms", view_ms(s->ended_ms), "end_reason",
			 s->end_reason[0] ? json_string(s->end_reason) : json_null(),
			 "lease_end_ms", (json_int_t)s->lease_end_ms, "usage", "execs",
			 (json_int_t)s->execs, "cpu_ms", (json_int_t)s->cpu_ms, "gib_seconds",
			 s->gib_seconds);
}

bool live(const struct store_sandbox *s)
{
	return strcmp(s->state, "running") == 0;
}

/* The caller's sandbox c->id into *s (cleared by the caller); else an answer and -1. */
static int own_sandbox(struct call *c, struct store_sandbox *s)
{
	struct err e;
	int rc = store_sandbox_get(c->st, c->id, s, &e);

	if (rc == 0 && s->course_id != c->who->course_id)
		rc = not_this_course(&e, "sandbox", c->id);
	if (rc < 0)
		return answer_store(c->rs, rc, &e), -1;
	return 0;
}

/* A live sandbox of the caller held on this host; else an answer and -1. */
int live_sandbox(struct call *c, struct store_sandbox *s)
{
	if (own_sandbox(c, s) < 0)
		return -1;
	if (!live(s))
		return answer_fail(c->rs, ERR_NOT_FOUND, "sandbox %lld is %s%s%s", (long long)c->id,
				   s->state, s->end_reason[0] ? ": " : "", s->end_reason),
		       -1;
	if (!c->a->sandboxes || strcmp(s->host_key, sbx_host_key(c->a->sandboxes)) != 0)
		return answer_fail(c->rs, ERR_UNAVAILABLE,
				   "sandbox %lld is held by another host (%s)", (long long)c->id,
				   s->host_key),
		       -1;
	return 0;
}

/* An object of at most LABELS_MAX string members, or absent: its text. */
int string_map(const json_t *doc, const char *key, char **ret, struct err *e)
{
	json_t *v = json_object_get(doc, key);
	const char *k;
	json_t *x;

	*ret = NULL;
	if (!v || json_is_null(v)) {
		*ret = strdup("{}");
		return *ret ? 0 : err_set(e, ENOMEM, "%s", key);
	}
	if (!json_is_object(v) || json_object_size(v) > LABELS_MAX)
		return err_setk(e, ERR_INPUT, 0, "'%s' must be an object of at most %d strings",
				key, LABELS_MAX);
	json_object_foreach(v, k, x)
	{
		const char *sv;
		if (!*k || strlen(k) > 255 || jsonreq_string(v, k, true, 4096, &sv, e) < 0)
			return err_setk(e, ERR_INPUT, 0,
					"'%s': every member must be a name of 1 to 255 bytes with a "
					"string of 1 to 4096 bytes without control characters",
					key);
	}
	*ret = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
	return *ret ? 0 : err_set(e, ENOMEM, "%s", key);
}

int within_budget(struct call *c)
{
	struct policy_verdict v;
	struct err e;
	int rc = policy_budget_check(c->st, c->who->course_id, &v, &e);

	if (rc < 0)
		return answer_store(c->rs, rc, &e), -1;
	if (v.refusal != POLICY_ALLOWED)
		return answer_fail(c->rs, policy_refusal_kind(v.refusal), "%s", v.message), -1;
	return 0;
}

/* The course's template `pin` (name or name@N) into *t; else an answer
 * (422 for a malformed pin, 404 for none) and -1. */
static int find_template(struct call *c, const char *pin, struct store_template *t)
{
	char name[STORE_TEMPLATE_NAME_MAX + 1];
	int version, rc;
	struct err e;

	if (template_parse_pin(pin, name, sizeof(name), &version) < 0)
		return answer_fail(c->rs, ERR_INPUT,
				   "'template': '%.80s' is not a template (name or name@N)", pin),
		       -1;
	if ((rc = store_template_get(c->st, c->who->course_id, name, version, 0, t, &e)) < 0)
		return answer_store(c->rs, rc, &e), -1;
	return 0;
}

/* Put template t's tree into the new sandbox `id` (its keeper's restore);
 * else the sandbox ends `failed`, an answer and -1. */
static int restore_template(struct call *c, int64_t id, const struct store_template *t)
{
	struct store_sandbox s = {0};
	json_t *head = json_pack("{s:s}", "op", "restore"), *answer = NULL;
	void *data = NULL;
	size_t len = 0;
	struct err e, e2;
	int rc = store_sandbox_get(c->st, id, &s, &e);

	if (rc == 0)
		rc = store_blob_get(c->st, t->sha256, &data, &len, &e);
	if (rc == 0 && head && keeper_call(&s, head, data, len, 0, &answer, NULL, NULL, &e) < 0)
		rc = -1;
	if (rc < 0 || !head) {
		store_sandbox_end(c->st, id, "failed", e.msg, &e2);
		sbx_host_kill(c->a->sandboxes, id);
		answer_fail(c->rs, e.kind == ERR_INPUT ? ERR_INPUT : ERR_INTERNAL,
			    "template %s@%d: %s", t->name, t->version_no, head ? e.msg : "out of memory");
	}
	free(data);
	json_decref(head);
	json_decref(answer);
	store_sandbox_clear(&s);
	return rc < 0 || !head ? -1 : 0;
}

/* POST /v1/sandboxes */
void post_sandbox(struct call *c)
{
	static const char *const allowed[] = {"image",	    "isolation",       "vcpu",
					      "memory_mib", "disk_mib",	       "network",
					      "timeout_seconds", "labels",	       "env",
					      "idle_timeout_seconds", "template", NULL};
	const char *image = "host", *isolation = "jail", *network = "none", *template = NULL;
	struct store_template tmpl = {0};
	int64_t vcpu = 1, memory = 512, disk = 256, lease = 300, idle = 0, id = 0;
	char *labels = NULL, *env = NULL, secret[65];
	bool existing = false;
	json_t *doc = NULL;
	struct err e;
	int rc;

	if (!c->a->sandboxes) {
		answer_fail(c->rs, ERR_UNAVAILABLE, "this server hosts no sandboxes%s%s",
			    c->a->no_sandboxes[0] ? ": " : "", c->a->no_sandboxes);
		return;
	}
	if (body_json(c, 0, &doc) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_string(doc, "image", false, 255, &image, &e) < 0 ||
	    jsonreq_string(doc, "isolation", false, 16, &isolation, &e) < 0 ||
	    jsonreq_string(doc, "network", false, 16, &network, &e) < 0 ||
	    jsonreq_string(doc, "template", false, 255, &template, &e) < 0 ||
	    jsonreq_int(doc, "vcpu", false, 1, VCPU_MAX, &vcpu, &e) < 0 ||
	    jsonreq_int(doc, "memory_mib", false, 16, MEMORY_MIB_MAX, &memory, &e) < 0 ||
	    jsonreq_int(doc, "disk_mib", false, 1, DISK_MIB_MAX, &disk, &e) < 0 ||
	    jsonreq_int(doc, "timeout_seconds", false, 1, LEASE_S_MAX, &lease, &e) < 0 ||
	    jsonreq_int(doc, "idle_timeout_seconds", false, 0, LEASE_S_MAX, &idle, &e) < 0 ||
	    string_map(doc, "labels", &labels, &e) < 0 || string_map(doc, "env", &env, &e) < 0) {
		answer_member(c->rs, &e);
		goto out;
	}
	image = image ? image : "host";
	isolation = isolation ? isolation : "jail";
	if (network && strcmp(network, "none") != 0) {
		answer_fail(c->rs, ERR_INPUT, "'network' must be \"none\" (sandboxes have no "
					      "network; a loopback inside works)");
		goto out;
	}
	if (strcmp(isolation, "vm") == 0) {
		answer_fail(c->rs, ERR_UNAVAILABLE,
			    "isolation 'vm': sandboxes over the API run in the jail for now");
		goto out;
	}
	if (strcmp(isolation, "jail") != 0 && strcmp(isolation, "auto") != 0) {
		answer_fail(c->rs, ERR_INPUT, "'isolation' must be \"jail\", \"vm\" or \"auto\"");
		goto out;
	}
	if (template && find_template(c, template, &tmpl) < 0)
		goto out;
	if (within_budget(c) < 0)
		goto out;
	struct store_sandbox_in in = {.course_id = c->who->course_id,
				      .token_id = c->who->token_id,
				      .isolation = "jail",
				      .image_pin = image,
				      .vcpu = (int)vcpu,
				      .memory_mib = (int)memory,
				      .disk_mib = (int)disk,
				      .timeout_s = lease,
				      .labels_json = labels,
				      .env_json = env,
				      .idempotency_key = c->rq->idempotency_key};
	if ((rc = store_sandbox_create(c->st, &in, &id, secret, &existing, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		goto out;
	}
	if (!existing) {
		pid_t pid;
		char socket[512];
		json_t *create = json_pack(
		    "{s:I, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o}", "id", (json_int_t)id, "secret",
		    secret, "image", image, "vcpu", (json_int_t)vcpu, "memory_mib",
		    (json_int_t)memory, "disk_mib", (json_int_t)disk, "lease_ms",
		    (json_int_t)(lease * 1000), "idle_ms", (json_int_t)(idle * 1000), "env",
		    json_loads(env, 0, NULL));
		rc = create ? sbx_host_spawn(c->a->sandboxes, id, create, &pid, socket,
					     sizeof(socket), &e)
			    : err_set(&e, ENOMEM, "sandbox");
		json_decref(create);
		struct err e2;
		if (rc < 0) {
			store_sandbox_end(c->st, id, "failed", e.msg, &e2);
			if (e.kind == ERR_BUSY) {
				metrics_count(c->a->metrics, "sandbox_creates_refused_capacity", 1);
				answer_fail(c->rs, ERR_CAPACITY,
					    "no room for a sandbox on this host now (%u slots, "
					    "every one taken); retry later",
					    sbx_host_slots(c->a->sandboxes));
				c->rs->retry_after_s = c->a->c.retry_after_s;
			} else {
				answer_err(c->rs, &e);
			}
			metrics_count(c->a->metrics, "sandbox_creates_failed", 1);
			goto out;
		}
		if ((rc = store_sandbox_placed(c->st, id, sbx_host_key(c->a->sandboxes), socket,
					       pid, &e)) < 0) {
			sbx_host_kill(c->a->sandboxes, id);
			answer_store(c->rs, rc, &e);
			goto out;
		}
		if (template && restore_template(c, id, &tmpl) < 0)
			goto out;
		metrics_count(c->a->metrics, "sandbox_creates", 1);
	}
	struct store_sandbox s = {0};
	if ((rc = store_sandbox_get(c->st, id, &s, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		goto out;
	}
	json_t *answer = sandbox_doc(&s);
	if (answer && existing)
		json_object_set_new(answer, "existing", json_true());
	answer_json(c->rs, existing ? 200 : 201, answer);
	store_sandbox_clear(&s);
out:
	free(labels);
	free(env);
	json_decref(doc);
}

/* GET /v1/sandboxes/{id} */
void get_sandbox(struct call *c)
{
	struct store_sandbox s = {0};

	if (own_sandbox(c, &s) == 0)
		answer_json(c->rs, 200, sandbox_doc(&s));
	store_sandbox_clear(&s);
}

/* GET /v1/sandboxes?label=KEY:VALUE&live=1 */
void list_sandboxes(struct call *c)
{
	const char *label = http_request_query(c->rq, "label");
	const char *live_q = http_request_query(c->rq, "live");
	char key[256] = "";
	const char *value = NULL;
	int64_t *ids = NULL;
	size_t n = 0;
	struct err e;

	if (label) {
		const char *colon = strchr(label, ':');
		if (!colon || colon == label || (size_t)(colon - label) >= sizeof(key)) {
			answer_fail(c->rs, ERR_USAGE, "label: expected KEY:VALUE");
			return;
		}
		memcpy(key, label, (size_t)(colon - label));
		key[colon - label] = '\0';
		value = colon + 1;
	}
	if (live_q && strcmp(live_q, "0") != 0 && strcmp(live_q, "1") != 0) {
		answer_fail(c->rs, ERR_USAGE, "live: expected 0 or 1");
		return;
	}
	if (!(ids = calloc(SANDBOXES_SHOWN, sizeof(*ids)))) {
		answer_fail(c->rs, ERR_INTERNAL, "out of memory");
		return;
	}
	int rc = store_sandbox_list(c->st, c->who->course_id, label ? key : NULL, value,
				    live_q && strcmp(live_q, "1") == 0, ids, SANDBOXES_SHOWN, &n, &e);
	if (rc < 0) {
		answer_store(c->rs, rc, &e);
		free(ids);
		return;
	}
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++) {
		struct store_sandbox s = {0};
		if (store_sandbox_get(c->st, ids[i], &s, &e) == 0)
			json_array_append_new(list, sandbox_doc(&s));
		store_sandbox_clear(&s);
	}
	free(ids);
	answer_json(c->rs, 200, json_pack("{s:o}", "sandboxes", list));
}

/* Whether a failed call found no keeper at all: then it died (its reaper
 * has not told yet) or was never there. */
bool keeper_missing(const struct err *ke)
{
	return ke->errnum == ECONNREFUSED || ke->errnum == ENOENT;
}

/*
 * Answer a keeper call that failed.  A refusal of the keeper's (a path, a
 * file too large) keeps its kind.  No keeper: the sandbox is lost, and
 * recorded so.  A keeper that did not answer in time is busy (it takes one
 * call at a time, and an exec may run for long): 503, the sandbox as it is.
 */
void answer_keeper_failure(struct call *c, const struct store_sandbox *s,
				  const struct err *ke)
{
	struct err e;

	if (ke->kind != ERR_INTERNAL) {
		answer_err(c->rs, ke);
		return;
	}
	if (keeper_missing(ke)) {
		store_sandbox_end(c->st, s->sandbox_id, "lost", ke->msg, &e);
		sbx_host_kill(c->a->sandboxes, s->sandbox_id);
		answer_fail(c->rs, ERR_NOT_FOUND, "sandbox %lld is lost: %s",
			    (long long)s->sandbox_id, ke->msg);
		return;
	}
	answer_fail(c->rs, ERR_UNAVAILABLE,
		    "sandbox %lld did not answer (it takes one call at a time): %s; retry",
		    (long long)s->sandbox_id, ke->msg);
}

/* After a send that failed, the keeper may have answered already (it
 * refuses a frame too large before reading its data): its answer is the
 * error, when there is one. */
void keeper_refusal(int fd, struct err *e)
{
	json_t *answer = NULL;
	struct err ke;
	struct timeval tv = {.tv_sec = 1};

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (sbx_recv(fd, &answer, NULL, NULL, 0, &ke) == 0 && sbx_error_of(answer, &ke) < 0)
		*e = ke;
	json_decref(answer);
}

/* DELETE /v1/sandboxes/{id} */
void delete_sandbox(struct call *c)
{
	struct store_sandbox s = {0};
	json_t *answer = NULL;
	struct err e;
	int rc;

	if (own_sandbox(c, &s) < 0)
		goto out;
	/* One still being created is ended too: its create then finds it
	 * ended and kills the keeper it started. */
	if (!live(&s) && strcmp(s.state, "creating") != 0) {
		answer_json(c->rs, 200, sandbox_doc(&s));
		goto out;
	}
	if ((rc = store_sandbox_end(c->st, s.sandbox_id, "deleted", "deleted by a client", &e)) < 0) {
		answer_store(c->rs, rc, &e);
		goto out;
	}
	/* A keeper busy in an exec answers after it: killing it destroys its
	 * sandbox as cleanly (docs/sandbox-keeper.md). */
	json_t *head = json_pack("{s:s}", "op", "destroy");
	if (live(&s) && c->a->sandboxes && strcmp(s.host_key, sbx_host_key(c->a->sandboxes)) == 0) {
		int fd = -1;
		if (sbx_connect(s.socket, &fd, &e) == 0) {
			struct timeval tv = {.tv_usec = 200000};
			json_object_set_new(head, "secret", json_string(s.secret));
			setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
			if (sbx_send(fd, head, NULL, 0, &e) < 0 ||
			    sbx_recv(fd, &answer, NULL, NULL, 0, &e) < 0)
				sbx_host_kill(c->a->sandboxes, s.sandbox_id);
			close(fd);
		} else {
			sbx_host_kill(c->a->sandboxes, s.sandbox_id);
		}
	}
	json_decref(head);
	json_decref(answer);
	store_sandbox_clear(&s);
	if ((rc = store_sandbox_get(c->st, c->id, &s, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		goto out;
	}
	metrics_count(c->a->metrics, "sandbox_deletes", 1);
	answer_json(c->rs, 200, sandbox_doc(&s));
out:
	store_sandbox_clear(&s);
}
