/* The API's course: its tokens and its budget (docs/api.md). */
#include <math.h>
#include <stdlib.h>

#include "service/handler.h"
#include "service/jsonreq.h"
#include "service/policy.h"
#include "service/views.h"

/* Tokens listed at most. */
#define TOKENS_SHOWN 1000

/* A token's limits from a request: each member an integer within its
 * bound, or absent or null for none.  Else an answer and -1. */
static int token_limits(struct call *c, const json_t *doc, struct store_token_limits *ret)
{
	struct store_token_limits l = STORE_TOKEN_UNLIMITED;
	struct err e;

	if (jsonreq_int(doc, "daily_spend_micros", false, 0, STORE_SPEND_MICROS_MAX,
			&l.daily_spend_micros, &e) < 0 ||
	    jsonreq_int(doc, "max_live_sandboxes", false, 0, STORE_LIVE_SANDBOXES_MAX,
			&l.max_live_sandboxes, &e) < 0)
		return answer_member(c->rs, &e), -1;
	*ret = l;
	return 0;
}

static json_t *limit_json(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static json_t *token_doc(const struct store_token_row *t)
{
	return json_pack("{s:I, s:s, s:s, s:I, s:o, s:o, s:o}", "token_id", (json_int_t)t->token_id,
			 "scope", store_scope_name(t->scope), "prefix", t->prefix, "created_ms",
			 (json_int_t)t->created_ms, "revoked_ms", view_ms(t->revoked_ms),
			 "daily_spend_micros", limit_json(t->limits.daily_spend_micros),
			 "max_live_sandboxes", limit_json(t->limits.max_live_sandboxes));
}

/* POST /v1/tokens: {"scope", "daily_spend_micros", "max_live_sandboxes"}: a
 * new token of the caller's course (admin), with its own limits. */
void post_token(struct call *c)
{
	static const char *const allowed[] = {"scope", "daily_spend_micros", "max_live_sandboxes",
					      NULL};
	struct store_token_limits limits;
	struct store_course course;
	enum store_scope scope;
	const char *name;
	char token[STORE_TOKEN_LEN + 1];
	int64_t id = 0;
	json_t *doc = NULL;
	struct err e;
	int rc;

	if (body_json(c, 0, &doc) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_string(doc, "scope", true, 32, &name, &e) < 0 ||
	    store_scope_parse(name, &scope, &e) < 0) {
		json_decref(doc);
		answer_fail(c->rs, ERR_INPUT, "%s", e.msg);
		return;
	}
	rc = token_limits(c, doc, &limits);
	json_decref(doc);
	if (rc < 0)
		return;
	if ((rc = store_course_get(c->st, c->who->course_id, &course, &e)) < 0 ||
	    (rc = store_token_mint(c->st, course.name, scope, &limits, token, &id, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	answer_json(c->rs, 201,
		    json_pack("{s:s, s:I, s:s, s:s, s:o, s:o}", "token", token, "token_id",
			      (json_int_t)id, "scope", store_scope_name(scope), "course", course.name,
			      "daily_spend_micros", limit_json(limits.daily_spend_micros),
			      "max_live_sandboxes", limit_json(limits.max_live_sandboxes)));
}

/* The course's tokens, at most TOKENS_SHOWN, into a malloc'd array; else
 * an answer and NULL. */
static struct store_token_row *course_tokens(struct call *c, size_t *ret_n)
{
	struct store_token_row *rows = calloc(TOKENS_SHOWN, sizeof(*rows));
	struct err e;
	int rc;

	if (!rows) {
		answer_fail(c->rs, ERR_INTERNAL, "out of memory");
		return NULL;
	}
	if ((rc = store_token_list(c->st, c->who->course_id, rows, TOKENS_SHOWN, ret_n, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		free(rows);
		return NULL;
	}
	return rows;
}

/* GET /v1/tokens: the course's tokens (admin): which, scope, limits, when
 * made and revoked; never a secret nor its hash. */
void list_tokens(struct call *c)
{
	size_t n = 0;
	struct store_token_row *rows = course_tokens(c, &n);

	if (!rows)
		return;
	json_t *list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, token_doc(&rows[i]));
	free(rows);
	answer_json(c->rs, 200, json_pack("{s:o}", "tokens", list));
}

/* PUT /v1/tokens/{id}: {"daily_spend_micros", "max_live_sandboxes"}: replace
 * the limits of a token of the course (admin); absent or null is none. */
void put_token(struct call *c)
{
	static const char *const allowed[] = {"daily_spend_micros", "max_live_sandboxes", NULL};
	struct store_token_limits limits;
	json_t *doc = NULL;
	struct err e;
	size_t n = 0;
	int rc;

	if (body_json(c, 0, &doc) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0) {
		json_decref(doc);
		answer_member(c->rs, &e);
		return;
	}
	rc = token_limits(c, doc, &limits);
	json_decref(doc);
	if (rc < 0)
		return;
	if ((rc = store_token_set_limits(c->st, c->who->course_id, c->id, &limits, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	struct store_token_row *rows = course_tokens(c, &n);
	if (!rows)
		return;
	size_t i = 0;
	while (i < n && rows[i].token_id != c->id)
		i++;
	if (i < n)
		answer_json(c->rs, 200, token_doc(&rows[i]));
	else
		answer_fail(c->rs, ERR_NOT_FOUND, "token %lld is past the first %d of the course",
			    (long long)c->id, TOKENS_SHOWN);
	free(rows);
}

/* DELETE /v1/tokens/{id}: revoke a token of the course (admin); it is
 * refused from then on (401), by every route. */
void delete_token(struct call *c)
{
	struct err e;
	int rc;

	if ((rc = store_token_revoke(c->st, c->who->course_id, c->id, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	answer_json(c->rs, 200,
		    json_pack("{s:I, s:b}", "token_id", (json_int_t)c->id, "revoked", 1));
}

/* The course's budget and today's use, the answer of both budget routes. */
static void answer_budget(struct call *c)
{
	struct policy_prices prices = {.vcpu_hour = c->a->c.price_cpu_hour,
				       .gib_hour = c->a->c.price_gib_hour};
	struct store_course course;
	struct policy_usage u;
	struct err e;
	int rc;

	if ((rc = store_course_get(c->st, c->who->course_id, &course, &e)) < 0 ||
	    (rc = policy_course_usage(c->st, c->who->course_id, &prices, &u, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	answer_json(c->rs, 200,
		    json_pack("{s:s, s:o, s:I, s:f, s:f, s:f, s:{s:f, s:f}}", "course",
			      course.name, "daily_cpu_cap", isnan(u.cap) ? json_null() : json_real(u.cap),
			      "since_ms", (json_int_t)u.since_ms, "cpu_seconds_today",
			      u.cpu_seconds, "gib_seconds_today", u.gib_seconds,
			      "estimated_cost_today", u.cost, "prices", "vcpu_hour",
			      prices.vcpu_hour, "gib_hour", prices.gib_hour));
}

/* GET /v1/course/budget (instructor) */
void get_budget(struct call *c)
{
	answer_budget(c);
}

/* PUT /v1/course/budget: {"daily_cpu_cap": CPU-seconds or null} (admin) */
void put_budget(struct call *c)
{
	static const char *const allowed[] = {"daily_cpu_cap", NULL};
	json_t *doc = NULL, *cap;
	struct err e;
	int rc;

	if (body_json(c, 0, &doc) < 0)
		return;
	cap = json_object_get(doc, "daily_cpu_cap");
	if (jsonreq_only(doc, allowed, &e) < 0 || !cap ||
	    !(json_is_null(cap) || (json_is_number(cap) && json_number_value(cap) >= 0))) {
		json_decref(doc);
		answer_fail(c->rs, ERR_INPUT,
			    "'daily_cpu_cap' must be a number of CPU-seconds >= 0, or null (no cap)");
		return;
	}
	double v = json_is_null(cap) ? NAN : json_number_value(cap);
	json_decref(doc);
	if ((rc = store_course_set_cpu_cap(c->st, c->who->course_id, v, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		return;
	}
	answer_budget(c);
}
