/* Integration tests: the service's HTTP front over real HTTP on loopback (libcurl as the client). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "service/http.h"
#include "service/jsonreq.h"

/*
 * A server with small limits and a handful of routes that exercise the
 * layer, started once; each test talks to it as a client would.  What the
 * layer decides by itself (413, 414, slow clients, connection limits) and
 * what a handler decides through it (JSON errors, Retry-After, the bearer
 * token, bounded JSON bodies) are both checked on the wire.
 */

#define MAX_BODY 4096
#define TIMEOUT_S 1
#define PER_IP 4

static struct http_server *server;
static char base[64];

/* ---- a streamed answer: "start", then held until the test releases it ---- */

static atomic_bool stream_release;

struct stream_state {
	int next; /* 0: "start" not sent yet; then lines 1..5 */
};

static long stream_next(void *ctx, char *buf, size_t max, bool last_call, unsigned *again_ms)
{
	struct stream_state *st = ctx;

	if (st->next == 0) {
		st->next = 1;
		return snprintf(buf, max, "start\n");
	}
	if (st->next > 5)
		return HTTP_STREAM_END;
	if (!atomic_load(&stream_release) && !last_call) {
		*again_ms = 10; /* nothing yet: waits holding no thread */
		return 0;
	}
	return snprintf(buf, max, "line %d\n", st->next++);
}

static void handler(void *ctx, const struct http_request *rq, struct http_response *rs)
{
	(void)ctx;
	if (strcmp(rq->path, "/healthz") == 0 && strcmp(rq->method, "GET") == 0) {
		http_json(rs, 200, strdup("{\"status\":\"ok\"}"));
		return;
	}
	if (strcmp(rq->path, "/stream") == 0) {
		struct stream_state *st = calloc(1, sizeof(*st));
		if (!st) {
			http_error(rs, 500, "internal", "out of memory");
			return;
		}
		rs->status = 200;
		rs->content_type = "text/plain";
		rs->stream = stream_next;
		rs->stream_ctx = st;
		rs->stream_free = free;
		return;
	}
	if (strcmp(rq->path, "/page") == 0) {
		const char *who = http_request_header(rq, "X-Who");
		char *body = NULL;
		if (asprintf(&body, "<p>hello %s</p>", who ? who : "nobody") < 0) {
			http_error(rs, 500, "internal", "out of memory");
			return;
		}
		http_json(rs, 303, body);
		rs->content_type = "text/html; charset=utf-8";
		http_response_header(rs, "Set-Cookie", "session=abc; HttpOnly; SameSite=Strict");
		http_response_header(rs, "Set-Cookie", "theme=dark");
		http_response_header(rs, "Location", "/ui/next");
		http_response_header(rs, "Content-Security-Policy", "default-src 'self'");
		http_response_header(rs, "Cache-Control", "private, max-age=5");
		return;
	}
	if (strcmp(rq->path, "/busy") == 0) {
		http_error(rs, 429, "queue_full", "the course's queue is full");
		rs->retry_after_s = 7;
		return;
	}
	if (strcmp(rq->path, "/whoami") == 0) {
		json_t *doc = json_pack("{s:s?, s:s?, s:s?}", "bearer", rq->bearer, "key",
					rq->idempotency_key, "q", http_request_query(rq, "q"));
		http_json(rs, 200, json_dumps(doc, JSON_COMPACT));
		json_decref(doc);
		return;
	}
	if (strcmp(rq->path, "/echo") == 0 && strcmp(rq->method, "POST") == 0) {
		static const char *const allowed[] = {"student", "n", NULL};
		json_t *doc;
		struct err e;
		const char *student;
		int64_t n = 0;
		if (jsonreq_parse(rq->body, rq->body_len, MAX_BODY, &doc, &e) < 0) {
			http_error(rs, 400, "invalid_request", "%s", e.msg);
			return;
		}
		if (jsonreq_only(doc, allowed, &e) < 0 ||
		    jsonreq_string(doc, "student", true, 64, &student, &e) < 0 ||
		    jsonreq_int(doc, "n", false, 0, 100, &n, &e) < 0) {
			http_error(rs, 422, "invalid_input", "%s", e.msg);
			json_decref(doc);
			return;
		}
		json_t *out = json_pack("{s:s, s:I}", "student", student, "n", (json_int_t)n);
		http_json(rs, 200, json_dumps(out, JSON_COMPACT));
		json_decref(out);
		json_decref(doc);
		return;
	}
	http_error(rs, 404, "not_found", "no route for %s %s", rq->method, rq->path);
}

/* ---- a small client ------------------------------------------------------ */

struct reply {
	long status;
	char body[65536];
	size_t len;
	char retry_after[32];
	char content_type[128];
	char headers[4096]; /* every header line, as received */
};

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t take = sz * n;
	if (take > sizeof(r->body) - 1 - r->len)
		take = sizeof(r->body) - 1 - r->len;
	memcpy(r->body + r->len, p, take);
	r->len += take;
	r->body[r->len] = '\0';
	return sz * n;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = sz * n, have = strlen(r->headers);
	if (len < sizeof(r->headers) - have)
		memcpy(r->headers + have, p, len), r->headers[have + len] = '\0';
	if (len > 13 && strncasecmp(p, "Retry-After: ", 13) == 0)
		snprintf(r->retry_after, sizeof(r->retry_after), "%.*s", (int)strcspn(p + 13, "\r\n"),
			 p + 13);
	if (len > 14 && strncasecmp(p, "Content-Type: ", 14) == 0)
		snprintf(r->content_type, sizeof(r->content_type), "%.*s",
			 (int)strcspn(p + 14, "\r\n"), p + 14);
	return len;
}

/* One request; `body` NULL for GET; `chunked` sends the body without a length. */
static void request(const char *method, const char *path, const char *body, size_t body_len,
		    bool chunked, const char *const *headers, struct reply *r)
{
	char url[8192];
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;

	memset(r, 0, sizeof(*r));
	assert_non_null(c);
	snprintf(url, sizeof(url), "%s%s", base, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	for (size_t i = 0; headers && headers[i]; i++)
		h = curl_slist_append(h, headers[i]);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		if (chunked)
			h = curl_slist_append(h, "Transfer-Encoding: chunked");
		else
			curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_len);
	}
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	CURLcode rc = curl_easy_perform(c);
	if (rc != CURLE_OK)
		fail_msg("%s %s: %s", method, path, curl_easy_strerror(rc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

static void expect_error(const struct reply *r, long status, const char *code)
{
	if (r->status != status)
		fail_msg("status %ld, want %ld: %s", r->status, status, r->body);
	json_error_t je;
	json_t *doc = json_loads(r->body, 0, &je);
	if (!doc)
		fail_msg("not JSON (%s): %s", je.text, r->body);
	const char *got = json_string_value(json_object_get(json_object_get(doc, "error"), "code"));
	if (!got || strcmp(got, code) != 0)
		fail_msg("error code %s, want %s: %s", got ? got : "(none)", code, r->body);
	json_decref(doc);
}

static int connect_raw(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(http_server_port(server)),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Whether the server closes `fd` within `secs` (EOF or reset). */
static bool closed_within(int fd, int secs)
{
	char buf[4096];
	time_t until = time(NULL) + secs;
	while (time(NULL) <= until) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 200) > 0) {
			ssize_t n = read(fd, buf, sizeof(buf));
			if (n <= 0)
				return true;
		}
	}
	return false;
}

/* ---- tests --------------------------------------------------------------- */

static void test_http_health_answers_json(void **state)
{
	(void)state;
	struct reply r;
	request("GET", "/healthz", NULL, 0, false, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"status\":\"ok\"}");
	assert_string_equal(r.content_type, "application/json");
}

static void test_http_unknown_route_is_a_json_404(void **state)
{
	(void)state;
	struct reply r;
	request("DELETE", "/v1/nothing/here", NULL, 0, false, NULL, &r);
	expect_error(&r, 404, "not_found");
}

static void test_http_body_reaches_the_handler(void **state)
{
	(void)state;
	struct reply r;
	const char *body = "{\"student\":\"s42\",\"n\":7}";
	request("POST", "/echo", body, strlen(body), false, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"student\":\"s42\",\"n\":7}");
}

static void test_http_bad_json_is_400_with_a_position(void **state)
{
	(void)state;
	struct reply r;
	const char *body = "{\"student\": \"s42\",\n \"n\": }";
	request("POST", "/echo", body, strlen(body), false, NULL, &r);
	expect_error(&r, 400, "invalid_request");
	assert_non_null(strstr(r.body, "line 2"));

	request("POST", "/echo", "[1,2]", 5, false, NULL, &r);
	expect_error(&r, 400, "invalid_request");
	const char *dup = "{\"student\":\"a\",\"student\":\"b\"}";
	request("POST", "/echo", dup, strlen(dup), false, NULL, &r);
	expect_error(&r, 400, "invalid_request");
	request("POST", "/echo", "", 0, false, NULL, &r);
	expect_error(&r, 400, "invalid_request");
}

static void test_http_fields_are_checked_by_name(void **state)
{
	(void)state;
	struct reply r;
	const char *extra = "{\"student\":\"s\",\"admin\":true}";
	request("POST", "/echo", extra, strlen(extra), false, NULL, &r);
	expect_error(&r, 422, "invalid_input");
	assert_non_null(strstr(r.body, "unknown field 'admin'"));
	const char *range = "{\"student\":\"s\",\"n\":1000}";
	request("POST", "/echo", range, strlen(range), false, NULL, &r);
	expect_error(&r, 422, "invalid_input");
	assert_non_null(strstr(r.body, "'n' must be a whole number from 0 to 100"));
	const char *ctrl = "{\"student\":\"a\\u0007b\"}";
	request("POST", "/echo", ctrl, strlen(ctrl), false, NULL, &r);
	expect_error(&r, 422, "invalid_input");
}

static void test_http_deep_json_is_refused_before_parsing(void **state)
{
	(void)state;
	struct reply r;
	char body[MAX_BODY];
	memset(body, '[', sizeof(body) - 1);
	body[sizeof(body) - 1] = '\0';
	request("POST", "/echo", body, strlen(body), false, NULL, &r);
	expect_error(&r, 400, "invalid_request");
	assert_non_null(strstr(r.body, "nests deeper"));
	/* Brackets inside strings are not nesting. */
	char flat[512];
	snprintf(flat, sizeof(flat), "{\"student\":\"%s\"}",
		 "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\\\"[[[[[[[");
	request("POST", "/echo", flat, strlen(flat), false, NULL, &r);
	assert_int_equal(r.status, 200);
}

static void test_http_oversized_body_is_413(void **state)
{
	(void)state;
	struct reply r;
	size_t n = MAX_BODY * 4;
	char *body = malloc(n + 1);
	assert_non_null(body);
	memset(body, 'x', n);
	body[n] = '\0';
	request("POST", "/echo", body, n, false, NULL, &r); /* Content-Length declared */
	expect_error(&r, 413, "too_large");
	request("POST", "/echo", body, n, true, NULL, &r); /* chunked: found while reading */
	expect_error(&r, 413, "too_large");
	free(body);
}

static void test_http_long_target_is_414(void **state)
{
	(void)state;
	struct reply r;
	char path[6000];
	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	request("GET", path, NULL, 0, false, NULL, &r);
	/* libmicrohttpd itself answers 414 when the line outgrows its buffer. */
	assert_int_equal(r.status, 414);
}

static void test_http_headers_reach_the_handler(void **state)
{
	(void)state;
	struct reply r;
	const char *const h[] = {"Authorization: Bearer tok_abc", "Idempotency-Key: k-1", NULL};
	request("GET", "/whoami?q=v%20w", NULL, 0, false, h, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"bearer\":\"tok_abc\",\"key\":\"k-1\",\"q\":\"v w\"}");
	const char *const basic[] = {"Authorization: Basic dXNlcjpwdw==", NULL};
	request("GET", "/whoami", NULL, 0, false, basic, &r);
	assert_string_equal(r.body, "{\"bearer\":null,\"key\":null,\"q\":null}");
}

static void test_http_backpressure_says_when_to_retry(void **state)
{
	(void)state;
	struct reply r;
	request("POST", "/busy", "{}", 2, false, NULL, &r);
	expect_error(&r, 429, "queue_full");
	assert_string_equal(r.retry_after, "7");
}

/* A handler sets any header: two cookies, Location, CSP, its own
 * Cache-Control (instead of no-store); it reads request headers. */
static void test_http_handler_sets_and_reads_headers(void **state)
{
	(void)state;
	static const char *const h[] = {"X-Who: ada", NULL};
	struct reply r;

	request("GET", "/page", NULL, 0, false, h, &r);
	assert_int_equal(r.status, 303);
	assert_string_equal(r.body, "<p>hello ada</p>");
	assert_string_equal(r.content_type, "text/html; charset=utf-8");
	assert_non_null(strstr(r.headers, "Set-Cookie: session=abc; HttpOnly; SameSite=Strict\r\n"));
	assert_non_null(strstr(r.headers, "Set-Cookie: theme=dark\r\n"));
	assert_non_null(strstr(r.headers, "Location: /ui/next\r\n"));
	assert_non_null(strstr(r.headers, "Content-Security-Policy: default-src 'self'\r\n"));
	assert_non_null(strstr(r.headers, "Cache-Control: private, max-age=5\r\n"));
	assert_null(strstr(r.headers, "no-store"));
	/* Without the handler's own, every answer is no-store. */
	request("GET", "/healthz", NULL, 0, false, NULL, &r);
	assert_non_null(strstr(r.headers, "Cache-Control: no-store\r\n"));
}

struct streamer {
	pthread_t t;
	struct reply r;
	atomic_bool started; /* "start" arrived */
};

static size_t on_stream(char *p, size_t sz, size_t n, void *arg)
{
	struct streamer *s = arg;
	size_t got = on_body(p, sz, n, &s->r);
	if (strstr(s->r.body, "start\n"))
		atomic_store(&s->started, true);
	return got;
}

static void *stream_main(void *arg)
{
	struct streamer *s = arg;
	char url[128];
	CURL *c = curl_easy_init();

	snprintf(url, sizeof(url), "%s/stream", base);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_stream);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, s);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &s->r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &s->r.status);
	curl_easy_cleanup(c);
	return NULL;
}

/*
 * Streamed answers go out chunked as they are produced, and one that waits
 * for more holds no thread: with three streams held open on a server of
 * two threads, /healthz still answers (each stream would otherwise hold a
 * thread until the test releases them, after /healthz, so a blocked server
 * fails this test by its timeout, whatever the machine's speed).
 */
static void test_http_streams_go_out_chunked_and_hold_no_thread(void **state)
{
	(void)state;
	struct streamer s[3];
	struct reply r;

	memset(s, 0, sizeof(s));
	atomic_store(&stream_release, false);
	for (int i = 0; i < 3; i++)
		assert_int_equal(pthread_create(&s[i].t, NULL, stream_main, &s[i]), 0);
	for (int tries = 0; tries < 1000; tries++) {
		if (atomic_load(&s[0].started) && atomic_load(&s[1].started) &&
		    atomic_load(&s[2].started))
			break;
		usleep(10000);
	}
	for (int i = 0; i < 3; i++)
		assert_true(atomic_load(&s[i].started));
	request("GET", "/healthz", NULL, 0, false, NULL, &r);
	assert_int_equal(r.status, 200);
	atomic_store(&stream_release, true);
	for (int i = 0; i < 3; i++) {
		pthread_join(s[i].t, NULL);
		assert_int_equal(s[i].r.status, 200);
		assert_string_equal(s[i].r.body, "start\nline 1\nline 2\nline 3\nline 4\nline 5\n");
		assert_non_null(strstr(s[i].r.headers, "Transfer-Encoding: chunked\r\n"));
		assert_string_equal(s[i].r.content_type, "text/plain");
	}
}

static void test_http_slow_client_is_closed(void **state)
{
	(void)state;
	int fd = connect_raw();
	const char *partial = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"stu";
	assert_int_equal(write(fd, partial, strlen(partial)), (ssize_t)strlen(partial));
	if (!closed_within(fd, TIMEOUT_S + 4))
		fail_msg("a client that stopped sending was not closed after the %d s timeout",
			 TIMEOUT_S);
	close(fd);
}

static void test_http_connections_per_address_are_capped(void **state)
{
	(void)state;
	int fds[PER_IP];
	for (int i = 0; i < PER_IP; i++)
		fds[i] = connect_raw();
	/* The next one is accepted by the kernel and closed by the server. */
	int extra = connect_raw();
	bool closed = closed_within(extra, 2);
	close(extra);
	for (int i = 0; i < PER_IP; i++)
		close(fds[i]);
	if (!closed)
		fail_msg("connection %d from one address was kept", PER_IP + 1);
	/* Once they are gone, a new client is served. */
	usleep(300 * 1000);
	struct reply r;
	request("GET", "/healthz", NULL, 0, false, NULL, &r);
	assert_int_equal(r.status, 200);
}

static void test_http_listen_address_is_checked(void **state)
{
	(void)state;
	uint32_t ip;
	uint16_t port;
	struct err e;
	assert_int_equal(http_parse_listen("127.0.0.1:8080", &ip, &port, &e), 0);
	assert_int_equal(port, 8080);
	assert_int_equal(http_parse_listen("localhost:0", &ip, &port, &e), 0);
	assert_int_equal(ip, htonl(INADDR_LOOPBACK));
	assert_int_equal(http_parse_listen("127.0.0.1", &ip, &port, &e), -1);
	assert_non_null(strstr(e.msg, "HOST:PORT"));
	assert_int_equal(http_parse_listen("127.0.0.1:70000", &ip, &port, &e), -1);
	assert_int_equal(http_parse_listen("example.org:80", &ip, &port, &e), -1);
	assert_int_equal(http_parse_listen(":80", &ip, &port, &e), -1);
}

static int setup(void **state)
{
	(void)state;
	struct http_limits l;
	struct err e;
	http_limits_default(&l);
	l.max_body = MAX_BODY;
	l.timeout_s = TIMEOUT_S;
	l.per_ip = PER_IP;
	l.threads = 2;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (http_server_start("127.0.0.1:0", &l, NULL, handler, NULL, &server, &e) < 0) {
		fprintf(stderr, "start: %s\n", e.msg);
		return -1;
	}
	snprintf(base, sizeof(base), "http://127.0.0.1:%u", (unsigned)http_server_port(server));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	http_server_stop(server);
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_http_health_answers_json),
	    cmocka_unit_test(test_http_unknown_route_is_a_json_404),
	    cmocka_unit_test(test_http_body_reaches_the_handler),
	    cmocka_unit_test(test_http_bad_json_is_400_with_a_position),
	    cmocka_unit_test(test_http_fields_are_checked_by_name),
	    cmocka_unit_test(test_http_deep_json_is_refused_before_parsing),
	    cmocka_unit_test(test_http_oversized_body_is_413),
	    cmocka_unit_test(test_http_long_target_is_414),
	    cmocka_unit_test(test_http_headers_reach_the_handler),
	    cmocka_unit_test(test_http_backpressure_says_when_to_retry),
	    cmocka_unit_test(test_http_handler_sets_and_reads_headers),
	    cmocka_unit_test(test_http_streams_go_out_chunked_and_hold_no_thread),
	    cmocka_unit_test(test_http_slow_client_is_closed),
	    cmocka_unit_test(test_http_connections_per_address_are_capped),
	    cmocka_unit_test(test_http_listen_address_is_checked),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
