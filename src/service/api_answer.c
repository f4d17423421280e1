/* Answers and request readers shared by the API's handlers (handler.h). */
#include <errno.h>
#include <inttypes.h>
#include <nettle/base64.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/handler.h"
#include "service/jsonreq.h"
#include "util.h"

/* How often a long poll reads the store: again after a quarter of the time
 * it has waited, from WAIT_FIRST_MS (a trivial grading takes tens of
 * milliseconds) to WAIT_STEP_MS, so a result is seen at most about a
 * quarter of the wait, and 100 ms, after it was recorded. */
#define WAIT_FIRST_MS 5
#define WAIT_STEP_MS  100

int answer_json(struct http_response *rs, unsigned status, json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	if (!text)
		return answer_fail(rs, ERR_INTERNAL, "out of memory");
	return http_json(rs, status, text);
}

int answer_fail(struct http_response *rs, enum err_kind kind, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return http_error(rs, (unsigned)err_http_status(kind), err_code(kind), "%s", msg);
}

int answer_err(struct http_response *rs, const struct err *e)
{
	return answer_fail(rs, e->kind, "%s", e->msg);
}

int answer_store(struct http_response *rs, int rc, const struct err *e)
{
	switch (rc) {
	case STORE_NOT_FOUND:
		return answer_fail(rs, ERR_NOT_FOUND, "%s", e->msg);
	case STORE_TOO_LARGE:
		return answer_fail(rs, ERR_TOO_LARGE, "%s", e->msg);
	case STORE_INVALID:
		return answer_fail(rs, ERR_INPUT, "%s", e->msg);
	default:
		return answer_fail(rs, ERR_INTERNAL, "%s", e->msg);
	}
}

int answer_member(struct http_response *rs, const struct err *e)
{
	if (e->errnum == ENOMEM)
		return answer_fail(rs, ERR_INTERNAL, "%s", e->msg);
	return answer_fail(rs, e->kind == ERR_TOO_LARGE ? ERR_TOO_LARGE : ERR_INPUT, "%s",
			   e->msg);
}

int body_json(struct call *c, size_t max, json_t **ret)
{
	struct err e;

	if (!max || max > c->max_body)
		max = c->max_body;
	/* Past the route's cap (below the front's max_body) is too large, as there. */
	if (c->rq->body_len > max)
		return answer_fail(c->rs, ERR_TOO_LARGE,
				   "the body is %zu bytes; at most %zu are accepted",
				   c->rq->body_len, max),
		       -1;
	if (jsonreq_parse(c->rq->body, c->rq->body_len, max, ret, &e) < 0)
		return answer_fail(c->rs, ERR_USAGE, "%s", e.msg), -1;
	return 0;
}

int body_archive(const struct api *a, const json_t *obj, const char *key, void **ret,
		 size_t *ret_len, struct err *e)
{
	uint64_t max = a->c.max_upload;
	const char *text;
	struct base64_decode_ctx ctx;

	if (jsonreq_string(obj, key, true, SIZE_MAX, &text, e) < 0)
		return -1;
	size_t in = strlen(text), cap = BASE64_DECODE_LENGTH(in) + 1, len = cap;
	if (in > max / 3 * 4 + 8)
		return err_setk(e, ERR_TOO_LARGE, 0,
				"'%s' is %zu bytes of base64; archives of at most %" PRIu64
				" bytes are accepted",
				key, in, max);
	uint8_t *buf = malloc(cap);
	if (!buf)
		return err_set(e, ENOMEM, "'%s'", key);
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, &len, buf, in, text) || !base64_decode_final(&ctx)) {
		free(buf);
		return err_setk(e, ERR_INPUT, 0, "'%s' is not base64", key);
	}
	if (len > max) {
		free(buf);
		return err_setk(e, ERR_TOO_LARGE, 0,
				"'%s' decodes to %zu bytes; at most %" PRIu64 " are accepted", key,
				len, max);
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

int query_wait(struct call *c, unsigned *ret)
{
	const char *w = http_request_query(c->rq, "wait");
	uint64_t n;

	*ret = 0;
	if (!w)
		return 0;
	/* Digits only: no sign, space or overflow (strtoul took "-1" and " 5"). */
	if (parse_u64(w, strlen(w), &n) < 0 || n > 86400)
		return answer_fail(c->rs, ERR_USAGE, "wait: '%.40s' is not a number of seconds",
				   w),
		       -1;
	*ret = n < c->a->c.wait_max_s ? (unsigned)n : c->a->c.wait_max_s;
	return 0;
}

int query_after(struct call *c, int64_t *ret)
{
	const char *after = http_request_query(c->rq, "after");
	uint64_t u;

	*ret = 0;
	if (!after)
		return 0;
	/* Digits only, at most INT64_MAX (strtoll took "+5", " 5" and
	 * saturated a number too large without a word). */
	if (parse_u64(after, strlen(after), &u) < 0 || u > INT64_MAX)
		return answer_fail(c->rs, ERR_USAGE, "after: '%.40s' is not an id", after), -1;
	*ret = (int64_t)u;
	return 0;
}

bool poll_again(struct call *c, unsigned wait_s)
{
	uint64_t start = c->rq->first_ns, now = now_ns();
	uint64_t deadline = start + (uint64_t)wait_s * 1000000000ull;

	if (!start || c->rq->last_call || now >= deadline)
		return false;
	uint64_t ms = (now - start) / 4000000u;
	ms = ms < WAIT_FIRST_MS ? WAIT_FIRST_MS : ms > WAIT_STEP_MS ? WAIT_STEP_MS : ms;
	uint64_t left = (deadline - now + 999999u) / 1000000u;
	c->rs->again_ms = (unsigned)(ms < left ? ms : left);
	return true;
}

int not_this_course(struct err *e, const char *what, int64_t id)
{
	err_setk(e, ERR_NOT_FOUND, 0, "no %s %lld in this course", what, (long long)id);
	return STORE_NOT_FOUND;
}

int own_assignment(struct call *c, int64_t id)
{
	struct store_assignment a;
	struct err e;
	int rc = store_assignment_get(c->st, id, &a, &e);

	if (rc == 0 && a.course_id != c->who->course_id)
		rc = not_this_course(&e, "assignment", id);
	if (rc < 0)
		return answer_store(c->rs, rc, &e), -1;
	return 0;
}
