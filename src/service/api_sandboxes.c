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
#include "service/sbxline.h"
#include "service/sbxwire.h"
#include "util.h"
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
/* The longest a create may wait in line for room. */
#define WAIT_CAPACITY_MS_MAX (10 * 60 * 1000)
/* How often a waiting create looks again: the longest a free slot stays
 * unused while someone waits. */
#define LINE_POLL_MS 20
/* Sandboxes listed at most. */
#define SANDBOXES_SHOWN 1000

static json_t *json_text_or_empty(const char *text)
{
	json_t *v = text ? json_loads(text, 0, NULL) : NULL;
	return v ? v : json_object();
}

json_t *sandbox_doc(const struct api *a, const struct store_sandbox *s)
{
	int64_t life = sandbox_life_ms(s);
	json_t *doc = json_pack(
	    "{s:I, s:s, s:s, s:s, s:i, s:i, s:i, s:s, s:I, s:o, s:o, s:I, s:o, s:o, s:o, s:I, s:o, "
	    "s:{s:I, s:I, s:f, s:f, s:f, s:I}}",
	    "id", (json_int_t)s->sandbox_id, "state", s->state, "isolation", s->isolation, "image",
	    s->image_pin, "vcpu", s->vcpu, "memory_mib", s->memory_mib, "disk_mib", s->disk_mib,
	    "network", "none", "timeout_seconds", (json_int_t)s->timeout_s, "labels",
	    json_text_or_empty(s->labels_json), "env", json_text_or_empty(s->env_json),
	    "created_ms", (json_int_t)s->created_ms, "started_ms", view_ms(s->started_ms),
	    "ended_ms", view_ms(s->ended_ms), "end_reason",
	    s->end_reason[0] ? json_string(s->end_reason) : json_null(), "lease_end_ms",
	    (json_int_t)s->lease_end_ms, "max_cost_micros",
	    s->max_cost_micros > 0 ? json_integer(s->max_cost_micros) : json_null(), "usage",
	    "execs", (json_int_t)s->execs, "cpu_ms", (json_int_t)s->cpu_ms, "gib_seconds",
	    s->gib_seconds, "cpu_seconds", (double)s->cpu_ms / 1000, "reserved_gib_seconds",
	    (double)s->memory_mib / 1024 * (double)life / 1000, "cost_micros",
	    (json_int_t)sandbox_cost_micros(a, s->memory_mib, s->cpu_ms, life));
	if (doc)
		json_object_set_new(doc, "template",
				    s->template_pin[0] ? json_string(s->template_pin) : json_null());
	return doc;
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

/* A create's members, checked (the strings point into its body). */
struct create_req {
	json_t *doc;
	const char *image;
	int64_t vcpu, memory, disk, lease;
	int64_t wait_ms;     /* wait_for_capacity_ms; 0: refuse at once */
	int64_t max_cost;    /* max_cost_micros; 0: none */
	int64_t idle;	     /* idle_timeout_seconds; 0: none */
	const char *template; /* a template pin, or NULL */
	const char *isolation; /* "jail", "vm" or "auto" */
	char *labels, *env;  /* JSON text, malloc'd */
};

static void create_req_clear(struct create_req *r)
{
	free(r->labels);
	free(r->env);
	json_decref(r->doc);
}

/* Parse and check a create's body; else an answer and -1. */
static int create_req_parse(struct call *c, struct create_req *r)
{
	static const char *const allowed[] = {
	    "image",	       "isolation", "vcpu", "memory_mib",	    "disk_mib",
	    "network",	       "timeout_seconds", "labels", "env", "wait_for_capacity_ms",
	    "max_cost_micros", "idle_timeout_seconds", "template", NULL};
	const char *network = NULL;
	struct err e;

	*r = (struct create_req){.vcpu = 1, .memory = 512, .disk = 256, .lease = 300};
	if (body_json(c, 0, &r->doc) < 0)
		return -1;
	if (jsonreq_only(r->doc, allowed, &e) < 0 ||
	    jsonreq_string(r->doc, "image", false, 255, &r->image, &e) < 0 ||
	    jsonreq_string(r->doc, "isolation", false, 16, &r->isolation, &e) < 0 ||
	    jsonreq_string(r->doc, "network", false, 16, &network, &e) < 0 ||
	    jsonreq_int(r->doc, "vcpu", false, 1, VCPU_MAX, &r->vcpu, &e) < 0 ||
	    jsonreq_int(r->doc, "memory_mib", false, 16, MEMORY_MIB_MAX, &r->memory, &e) < 0 ||
	    jsonreq_int(r->doc, "disk_mib", false, 1, DISK_MIB_MAX, &r->disk, &e) < 0 ||
	    jsonreq_int(r->doc, "timeout_seconds", false, 1, LEASE_S_MAX, &r->lease, &e) < 0 ||
	    jsonreq_int(r->doc, "idle_timeout_seconds", false, 0, LEASE_S_MAX, &r->idle, &e) < 0 ||
	    jsonreq_string(r->doc, "template", false, 255, &r->template, &e) < 0 ||
	    jsonreq_int(r->doc, "wait_for_capacity_ms", false, 0, WAIT_CAPACITY_MS_MAX,
			&r->wait_ms, &e) < 0 ||
	    jsonreq_int(r->doc, "max_cost_micros", false, 1, STORE_SPEND_MICROS_MAX, &r->max_cost,
			&e) < 0 ||
	    string_map(r->doc, "labels", &r->labels, &e) < 0 ||
	    string_map(r->doc, "env", &r->env, &e) < 0)
		return answer_member(c->rs, &e), -1;
	r->image = r->image ? r->image : "host";
	r->isolation = r->isolation ? r->isolation : "jail";
	if (network && strcmp(network, "none") != 0)
		return answer_fail(c->rs, ERR_INPUT,
				   "'network' must be \"none\" (sandboxes have no "
				   "network; a loopback inside works)"),
		       -1;
	if (strcmp(r->isolation, "vm") == 0 && strcmp(r->image, "host") == 0)
		return answer_fail(c->rs, ERR_INPUT,
				   "isolation 'vm' boots an image: give 'image' (name@N, "
				   "docs/images.md)"),
		       -1;
	if (strcmp(r->isolation, "jail") != 0 && strcmp(r->isolation, "vm") != 0 &&
	    strcmp(r->isolation, "auto") != 0)
		return answer_fail(c->rs, ERR_INPUT,
				   "'isolation' must be \"jail\", \"vm\" or \"auto\""),
		       -1;
	return 0;
}

/* The sandbox `id` as the answer of a create (201 new, 200 a replay). */
static void answer_created(struct call *c, int64_t id, bool existing)
{
	struct store_sandbox s = {0};
	struct err e;
	int rc;

	if ((rc = store_sandbox_get(c->st, id, &s, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	json_t *answer = sandbox_doc(c->a, &s);
	if (answer && existing)
		json_object_set_new(answer, "existing", json_true());
	if (!existing && c->rq->first_ns) /* a waited create counts its wait */
		metrics_observe_sandbox(c->a->metrics, "create", now_ns() - c->rq->first_ns);
	answer_json(c->rs, existing ? 200 : 201, answer);
	store_sandbox_clear(&s);
}

/* How the line answered a create's call. */
enum turn {
	TURN_GO,       /* granted: create it now, then sbx_line_done() */
	TURN_WAIT,     /* called again in rs->again_ms */
	TURN_ANSWERED, /* refused (429 capacity, or the store failed) */
};

/* How long this request has waited so far (0 on its first call). */
static int64_t waited_ms(const struct call *c)
{
	uint64_t now = now_ns();

	return c->rq->first_ns && now > c->rq->first_ns
		   ? (int64_t)((now - c->rq->first_ns) / 1000000)
		   : 0;
}

/* Wait again when the create asked to and has time left: true with
 * rs->again_ms set.  A request without a server (a fuzzer's) never waits. */
static bool wait_again(struct call *c, const struct create_req *r)
{
	int64_t left = r->wait_ms - waited_ms(c);

	if (!c->hold || c->rq->last_call || left <= 0)
		return false;
	c->rs->again_ms = (unsigned)(left < LINE_POLL_MS ? left : LINE_POLL_MS);
	return true;
}

/* The 429 of a create that found no room, saying what was full. */
static void refuse_capacity(struct call *c, const struct create_req *r, size_t free_slots,
			    int64_t token_room, size_t ahead)
{
	char why[256], waited[96] = "";

	if (free_slots == 0)
		snprintf(why, sizeof(why),
			 "no room for a sandbox on this host (%u slots, every one taken)",
			 sbx_host_slots(c->a->sandboxes));
	else if (token_room <= 0)
		snprintf(why, sizeof(why), "this token has its max_live_sandboxes (%" PRId64 ") live",
			 c->who->limits.max_live_sandboxes);
	else
		snprintf(why, sizeof(why),
			 "the free slot went to a create waiting before this one (%zu waiting)",
			 ahead + 1);
	if (r->wait_ms > 0)
		snprintf(waited, sizeof(waited), " within wait_for_capacity_ms (%" PRId64 " ms)",
			 r->wait_ms);
	answer_fail(c->rs, ERR_CAPACITY, "%s%s; retry later%s", why, waited,
		    r->wait_ms > 0 ? "" : ", or wait in line with wait_for_capacity_ms");
	c->rs->retry_after_s = c->a->c.retry_after_s;
	metrics_count(c->a->metrics, "sandbox_creates_refused_capacity", 1);
	if (r->wait_ms > 0)
		metrics_count(c->a->metrics, "sandbox_capacity_wait_timeouts", 1);
}

/*
 * Take this create's turn in the line: the host's free slots are what
 * --slots leaves beside the keepers serve holds; the token's room is its
 * max_live_sandboxes less its live ones (the store's count: every server
 * of the fleet).  A create joins on its first call and keeps its ticket in
 * the request's hold across calls; api.c takes it out of the line when the
 * request ends, answered or not.
 */
static enum turn take_turn(struct call *c, const struct create_req *r, uint64_t *ret_ticket)
{
	struct call_hold *h = c->hold;
	struct sbx_line *line = c->a->line;
	bool first = !h || !h->waiting;
	uint64_t ticket;
	struct err e;
	int rc;

	if (!first) {
		ticket = h->ticket;
	} else if (sbx_line_join(line, c->who->course_id, c->who->token_id, &ticket, &e) < 0) {
		answer_err(c->rs, &e);
		return TURN_ANSWERED;
	} else if (h) {
		*h = (struct call_hold){.fd = -1, .waiting = true, .ticket = ticket, .line = line};
	}
	size_t slots = sbx_host_slots(c->a->sandboxes), live = sbx_host_live(c->a->sandboxes);
	size_t free_slots = slots > live ? slots - live : 0;
	/* serve's count lags the keepers' own: a destroyed sandbox's keeper
	 * gives its slot back a moment before it exits.  A create that would
	 * not wait, with no one in line but itself, asks the keeper, whose
	 * claim of a slot decides (ERR_BUSY: 429), as before there was a line;
	 * one that waits is granted a slot serve has seen free. */
	if (free_slots == 0 && r->wait_ms == 0 && sbx_line_waiting(line) == 1)
		free_slots = slots;
	int64_t room = INT64_MAX, max = c->who->limits.max_live_sandboxes, n;
	/* The store is asked only when a slot is free: a full host waits
	 * without a query. */
	if (free_slots > 0 && max >= 0) {
		if ((rc = store_token_live_sandboxes(c->st, c->who->token_id, &n, &e)) < 0) {
			sbx_line_leave(line, ticket);
			if (h)
				h->waiting = false;
			answer_store(c->rs, rc, &e);
			return TURN_ANSWERED;
		}
		room = max - n;
	}
	if (sbx_line_turn(line, ticket, free_slots, room)) {
		*ret_ticket = ticket;
		return TURN_GO;
	}
	if (wait_again(c, r)) {
		if (first)
			metrics_count(c->a->metrics, "sandbox_capacity_waits", 1);
		return TURN_WAIT;
	}
	size_t ahead = sbx_line_ahead(line, ticket);
	sbx_line_leave(line, ticket);
	if (h)
		h->waiting = false;
	if (c->rq->last_call && r->wait_ms > 0)
		answer_fail(c->rs, ERR_UNAVAILABLE,
			    "the server is stopping; no sandbox was created");
	else
		refuse_capacity(c, r, free_slots, room, ahead);
	return TURN_ANSWERED;
}

/* The first call of a create: a replay of its Idempotency-Key answers the
 * sandbox made then, whatever room there is now; the course's and the
 * token's budgets are checked once, before the create waits. */
static int first_checks(struct call *c)
{
	int64_t id;
	struct err e;
	int rc;

	if (c->rq->idempotency_key) {
		rc = store_sandbox_find_key(c->st, c->who->course_id, c->rq->idempotency_key, &id,
					    &e);
		if (rc == 0)
			return answer_created(c, id, true), -1;
		if (rc != STORE_NOT_FOUND)
			return answer_store(c->rs, rc, &e), -1;
	}
	if (within_budget(c) < 0 || within_token_spend(c) < 0)
		return -1;
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

/* Put template t's tree into the new sandbox `id` (its keeper's restore:
 * the archive is checked by the submissions' intake like any upload);
 * else the sandbox ends `failed`, an answer and -1. */
static int restore_template(struct call *c, int64_t id, const struct store_template *t)
{
	struct store_sandbox s = {0};
	json_t *head = json_pack("{s:s}", "op", "restore"), *answer = NULL;
	void *data = NULL;
	size_t len = 0;
	struct err e, e2;
	int rc = head ? store_sandbox_get(c->st, id, &s, &e) : err_set(&e, ENOMEM, "restore");

	if (rc == 0)
		rc = store_blob_get(c->st, t->sha256, &data, &len, &e);
	if (rc == 0 && keeper_call(&s, head, data, len, 0, &answer, NULL, NULL, &e) < 0)
		rc = -1;
	if (rc == 0)
		rc = store_sandbox_set_template(c->st, id, t->name, t->version_no, &e);
	if (rc < 0) {
		store_sandbox_end(c->st, id, "failed", e.msg, &e2);
		sbx_host_kill(c->a->sandboxes, id);
		answer_fail(c->rs, e.kind == ERR_INPUT ? ERR_INPUT : ERR_INTERNAL,
			    "template %s@%d: %s", t->name, t->version_no, e.msg);
	}
	free(data);
	json_decref(head);
	json_decref(answer);
	store_sandbox_clear(&s);
	return rc < 0 ? -1 : 0;
}

/*
 * The create itself, its turn granted: the row, then the keeper.  Returns
 * true when it found no room after all (a grading took the slot, or
 * another server the token's last place) and the create may wait again;
 * else it answered.
 */
static bool create_now(struct call *c, const struct create_req *r)
{
	struct store_sandbox_in in = {.course_id = c->who->course_id,
				      .token_id = c->who->token_id,
				      .isolation = r->isolation,
				      .image_pin = r->image,
				      .vcpu = (int)r->vcpu,
				      .memory_mib = (int)r->memory,
				      .disk_mib = (int)r->disk,
				      .timeout_s = r->lease,
				      .labels_json = r->labels,
				      .env_json = r->env,
				      .idempotency_key = c->rq->idempotency_key,
				      .max_cost_micros = r->max_cost};
	bool existing = false;
	char secret[65], socket[512];
	int64_t id = 0;
	pid_t pid;
	struct err e, e2;
	struct store_template tmpl;
	int rc;

	if (r->template && find_template(c, r->template, &tmpl) < 0)
		return false;
	if ((rc = store_sandbox_create(c->st, &in, &id, secret, &existing, &e)) < 0) {
		if (rc == STORE_REFUSED && wait_again(c, r))
			return true;
		if (rc == STORE_REFUSED)
			refuse_capacity(c, r, 1, 0, 0);
		else
			answer_store(c->rs, rc, &e);
		return false;
	}
	if (existing) {
		answer_created(c, id, true);
		return false;
	}
	json_t *create = json_pack(
	    "{s:I, s:s, s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:o}", "id", (json_int_t)id, "secret",
	    secret, "image", r->image, "isolation", r->isolation, "vcpu", (json_int_t)r->vcpu,
	    "memory_mib", (json_int_t)r->memory, "disk_mib", (json_int_t)r->disk, "lease_ms",
	    (json_int_t)(r->lease * 1000), "idle_ms", (json_int_t)(r->idle * 1000), "env",
	    json_loads(r->env, 0, NULL));
	rc = create ? sbx_host_spawn(c->a->sandboxes, id, create, &pid, socket, sizeof(socket), &e)
		    : err_set(&e, ENOMEM, "sandbox");
	json_decref(create);
	if (rc < 0) {
		store_sandbox_end(c->st, id, "failed", e.msg, &e2);
		if (e.kind == ERR_BUSY && wait_again(c, r))
			return true;
		if (e.kind == ERR_BUSY)
			refuse_capacity(c, r, 0, INT64_MAX, 0);
		else
			answer_err(c->rs, &e);
		metrics_count(c->a->metrics, "sandbox_creates_failed", 1);
		return false;
	}
	if ((rc = store_sandbox_placed(c->st, id, sbx_host_key(c->a->sandboxes), socket, pid,
				       &e)) < 0) {
		sbx_host_kill(c->a->sandboxes, id);
		answer_store(c->rs, rc, &e);
		return false;
	}
	if (r->template && restore_template(c, id, &tmpl) < 0)
		return false;
	metrics_count(c->a->metrics, "sandbox_creates", 1);
	answer_created(c, id, false);
	return false;
}

/* POST /v1/sandboxes */
void post_sandbox(struct call *c)
{
	struct create_req r;
	uint64_t ticket;

	/* Every call reads the body again: a waiting create keeps only its
	 * ticket between calls.  Read before the host is looked at, so a bad
	 * body is its own answer on any server (and the fuzzer reaches it). */
	if (create_req_parse(c, &r) < 0)
		goto out;
	if (!c->a->sandboxes) {
		answer_fail(c->rs, ERR_UNAVAILABLE, "this server hosts no sandboxes%s%s",
			    c->a->no_sandboxes[0] ? ": " : "", c->a->no_sandboxes);
		goto out;
	}
	if ((!c->hold || !c->hold->waiting) && first_checks(c) < 0)
		goto out;
	if (take_turn(c, &r, &ticket) != TURN_GO)
		goto out;
	bool again = create_now(c, &r);
	sbx_line_done(c->a->line, ticket, again);
	if (!again && c->hold)
		c->hold->waiting = false;
out:
	create_req_clear(&r);
}

/* GET /v1/sandboxes/{id} */
void get_sandbox(struct call *c)
{
	struct store_sandbox s = {0};

	if (own_sandbox(c, &s) == 0)
		answer_json(c->rs, 200, sandbox_doc(c->a, &s));
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
			json_array_append_new(list, sandbox_doc(c->a, &s));
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
 * file too large) keeps its kind, and so does a failure it answered.  No
 * keeper: the sandbox is lost, and recorded so.  A keeper that did not answer in time is busy (it takes one
 * call at a time, and an exec may run for long): 503, the sandbox as it is.
 */
void answer_keeper_failure(struct call *c, const struct store_sandbox *s,
				  const struct err *ke)
{
	struct err e;

	/* A refusal, or a failure the keeper itself answered (an error frame
	 * carries no errno): its own answer, with its kind. */
	if (ke->kind != ERR_INTERNAL || ke->errnum == 0) {
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
		answer_json(c->rs, 200, sandbox_doc(c->a, &s));
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
	answer_json(c->rs, 200, sandbox_doc(c->a, &s));
out:
	store_sandbox_clear(&s);
}
