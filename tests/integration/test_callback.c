/* Result callbacks sent to a real receiver on loopback from a real SQLite file and a real
 * PostgreSQL. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "pgtest.h"
#include "service/callback.h"
#include "store/store.h"
#include "store/store_int.h"
#include "storepeek.h"
#include "util.h"

/*
 * The receiver is a plain socket server, one thread per connection, so
 * that it can do what real receivers do wrong: answer 500, answer late,
 * never answer, redirect, answer with an endless body.  It records every
 * request it read.  The store cases run on both backends, each on a fresh
 * database; jobs get their outbox row the way the service makes them
 * (submit with a callback URL, claim, complete).
 */

#define SECRET	  "whsec_test-secret-0123456789"
#define MAX_SEEN  64
#define MAX_CONNS 64
#define SLOW_MS	  500
#define REQ_MAX	  (1u << 20)
/* The test's pumps are short, so a batch spans several of them, as it
 * does across the server's ticks. */
#define PUMP_SLICE_MS 100

/* ---- the receiver ---- */

struct seen {
	char method[16];
	char path[128];
	char delivery[64];
	char timestamp[64];
	char signature[256];
	char content_type[128];
	char *body;
};

struct receiver {
	int lfd;
	uint16_t port;
	int stop[2]; /* readable once stopping: every waiting thread wakes */
	pthread_t acceptor;
	pthread_mutex_t mu;
	int status; /* what /cb answers */
	struct seen seen[MAX_SEEN];
	size_t nseen;
	pthread_t conns[MAX_CONNS];
	size_t nconns;
	atomic_size_t big_sent; /* bytes of /big's body written */
};

struct conn {
	struct receiver *r;
	int fd;
};

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void answer(int fd, int status, const char *extra)
{
	char buf[512];
	int n = snprintf(buf, sizeof(buf),
			 "HTTP/1.1 %d X\r\nContent-Length: 2\r\nConnection: close\r\n%s\r\nok",
			 status, extra ? extra : "");
	(void)send_all(fd, buf, (size_t)n); /* a client gone is its test's */
}

/* Copy header `name`'s value from the header block into dst. */
static void header(const char *head, const char *name, char *dst, size_t cap)
{
	size_t nlen = strlen(name);

	dst[0] = '\0';
	for (const char *p = strstr(head, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n")) {
		const char *line = p + 2;
		if (strncasecmp(line, name, nlen) == 0 && line[nlen] == ':') {
			const char *v = line + nlen + 1;
			v += strspn(v, " ");
			snprintf(dst, cap, "%.*s", (int)strcspn(v, "\r\n"), v);
			return;
		}
	}
}

/* Read one request: headers, then Content-Length bytes of body.  NULL on EOF. */
static char *read_request(int fd, size_t *ret_head, size_t *ret_len)
{
	char *buf = malloc(REQ_MAX + 1);
	size_t len = 0, head = 0, want = 0;

	while (buf && len < REQ_MAX) {
		ssize_t n = recv(fd, buf + len, REQ_MAX - len, 0);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		char *end = head ? NULL : strstr(buf, "\r\n\r\n");
		if (end) {
			char cl[32];
			head = (size_t)(end - buf) + 4;
			end[2] = '\0';
			header(buf, "Content-Length", cl, sizeof(cl));
			end[2] = '\r';
			want = head + (size_t)strtoul(cl, NULL, 10);
		}
		if (head && len >= want) {
			*ret_head = head;
			*ret_len = want;
			return buf;
		}
	}
	free(buf);
	return NULL;
}

static void record(struct receiver *r, char *buf, size_t head, size_t len, char *ret_path)
{
	struct seen s = {0};

	buf[head - 2] = '\0';
	sscanf(buf, "%15s %127s", s.method, s.path);
	header(buf, "Proctor-Delivery", s.delivery, sizeof(s.delivery));
	header(buf, "Proctor-Timestamp", s.timestamp, sizeof(s.timestamp));
	header(buf, "Proctor-Signature", s.signature, sizeof(s.signature));
	header(buf, "Content-Type", s.content_type, sizeof(s.content_type));
	s.body = strndup(buf + head, len - head);
	strcpy(ret_path, s.path);
	pthread_mutex_lock(&r->mu);
	if (r->nseen < MAX_SEEN)
		r->seen[r->nseen++] = s;
	else
		free(s.body);
	pthread_mutex_unlock(&r->mu);
}

static void wait_stop(struct receiver *r)
{
	struct pollfd p = {.fd = r->stop[0], .events = POLLIN};
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
}

/* 200 with a 64 MiB body, written until the client goes away. */
static void endless(struct receiver *r, int fd)
{
	static char chunk[65536];
	const char *h = "HTTP/1.1 200 OK\r\nContent-Length: 67108864\r\nConnection: close\r\n\r\n";
	struct pollfd p[2] = {{.fd = fd, .events = POLLOUT}, {.fd = r->stop[0], .events = POLLIN}};

	(void)send_all(fd, h, strlen(h));
	for (int i = 0; i < 1024; i++) {
		if (poll(p, 2, 5000) <= 0 || p[1].revents || !(p[0].revents & POLLOUT))
			return;
		ssize_t n = send(fd, chunk, sizeof(chunk), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno != EAGAIN)
			return;
		if (n > 0)
			atomic_fetch_add(&r->big_sent, (size_t)n);
	}
}

static void respond(struct receiver *r, int fd, const char *path)
{
	char loc[128];

	if (strcmp(path, "/cb") == 0) {
		pthread_mutex_lock(&r->mu);
		int status = r->status;
		pthread_mutex_unlock(&r->mu);
		answer(fd, status, NULL);
	} else if (strcmp(path, "/slow") == 0) {
		sleep_ms(SLOW_MS);
		answer(fd, 200, NULL);
	} else if (strcmp(path, "/hang") == 0) {
		wait_stop(r);
	} else if (strcmp(path, "/redirect") == 0) {
		snprintf(loc, sizeof(loc), "Location: http://127.0.0.1:%u/target\r\n", r->port);
		answer(fd, 302, loc);
	} else if (strcmp(path, "/big") == 0) {
		endless(r, fd);
	} else {
		answer(fd, strcmp(path, "/target") == 0 ? 200 : 404, NULL);
	}
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	size_t head, len;
	char path[128];
	char *buf = read_request(c->fd, &head, &len);

	if (buf) {
		record(c->r, buf, head, len, path);
		free(buf);
		respond(c->r, c->fd, path);
	}
	close(c->fd);
	free(c);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct receiver *r = arg;
	struct pollfd p[2] = {{.fd = r->lfd, .events = POLLIN},
			      {.fd = r->stop[0], .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno == EINTR)
			continue;
		if (p[1].revents)
			return NULL;
		int fd = accept4(r->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		struct conn *c = malloc(sizeof(*c));
		*c = (struct conn){.r = r, .fd = fd};
		pthread_mutex_lock(&r->mu);
		if (r->nconns == MAX_CONNS ||
		    pthread_create(&r->conns[r->nconns], NULL, conn_main, c)) {
			close(fd);
			free(c);
		} else {
			r->nconns++;
		}
		pthread_mutex_unlock(&r->mu);
	}
}

/* A listening TCP socket on 127.0.0.1 with a free port. */
static int listen_loopback(uint16_t *ret_port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(fd, 64), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static struct receiver *recv_start(int status)
{
	struct receiver *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	r->status = status;
	r->lfd = listen_loopback(&r->port);
	assert_int_equal(pipe2(r->stop, O_CLOEXEC), 0);
	pthread_mutex_init(&r->mu, NULL);
	assert_int_equal(pthread_create(&r->acceptor, NULL, accept_main, r), 0);
	return r;
}

static void recv_set_status(struct receiver *r, int status)
{
	pthread_mutex_lock(&r->mu);
	r->status = status;
	pthread_mutex_unlock(&r->mu);
}

static size_t recv_count(struct receiver *r, const char *path)
{
	size_t n = 0;

	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nseen; i++)
		n += !path || strcmp(r->seen[i].path, path) == 0;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* Stop and free the receiver; returns the bytes /big wrote. */
static size_t recv_stop(struct receiver *r)
{
	assert_int_equal(write(r->stop[1], "x", 1), 1);
	pthread_join(r->acceptor, NULL);
	for (size_t i = 0; i < r->nconns; i++)
		pthread_join(r->conns[i], NULL);
	size_t big = atomic_load(&r->big_sent);
	close(r->lfd);
	close(r->stop[0]);
	close(r->stop[1]);
	for (size_t i = 0; i < r->nseen; i++)
		free(r->seen[i].body);
	pthread_mutex_destroy(&r->mu);
	free(r);
	return big;
}

static void url_of(const struct receiver *r, const char *path, char *url, size_t cap)
{
	snprintf(url, cap, "http://127.0.0.1:%u%s", r->port, path);
}

/* ---- the store ---- */

struct backend {
	const char *name;
	char skip[256];
	char tmpdir[256];
	struct pgtest *pg;
	int counter;
};

static struct backend sqlite_backend = {.name = "sqlite"};
static struct backend pg_backend = {.name = "postgresql"};

#define CHECK(call)                                                                                \
	do {                                                                                       \
		struct err e_;                                                                     \
		int rc_ = (call);                                                                  \
		if (rc_ < 0)                                                                       \
			fail_msg("%s: %d: %s", #call, rc_, e_.msg);                                \
	} while (0)
#define E (&e_)

static struct store *fresh_store(void **state)
{
	struct backend *b = *state;
	char url[512], why[512];
	struct store *st = NULL;
	struct err e;

	if (b->skip[0])
		skip();
	b->counter++;
	if (b->pg) {
		char name[64];
		snprintf(name, sizeof(name), "cb%d", b->counter);
		if (pgtest_createdb(b->pg, name, url, sizeof(url), why, sizeof(why)) < 0)
			fail_msg("createdb: %s", why);
	} else {
		snprintf(url, sizeof(url), "sqlite:%s/cb%d.db", b->tmpdir, b->counter);
	}
	if (store_open(url, &st, &e) < 0)
		fail_msg("store_open %s: %s", url, e.msg);
	return st;
}

/* A completed job whose submission has callback `url`: its outbox row is due. */
static int64_t completed_job(struct store *st, const char *url)
{
	static const struct store_result_in res = {.doc_json = "{\"status\":\"ok\",\"score\":1}",
						   .student_json = "{\"status\":\"ok\",\"score\":1,"
								   "\"view\":\"student\"}",
						   .score = 1,
						   .max_score = 2,
						   .cpu_seconds = 0.5,
						   .gib_seconds = 0.25};
	int64_t course, version, sub, job;
	bool existing;
	struct store_claim c;

	CHECK(store_course_ensure(st, "cs101", true, &course, E));
	CHECK(store_assignment_add_version(st, course, "hello", "archive-bytes", 13, "small@1",
					   &version, NULL, E));
	struct store_submission_in in = {.course_id = course,
					 .version_id = version,
					 .student = "ada",
					 .callback_url = url,
					 .data = "print('hi')\n",
					 .len = 12};
	CHECK(store_submit(st, &in, &sub, &job, &existing, E));
	CHECK(store_job_claim(st, "w1", "host-a", 60000, &c, E));
	assert_int_equal(c.job_id, job);
	CHECK(store_job_complete(st, job, c.attempt, c.lease_token, &res, NULL, E));
	return job;
}

static struct store_outbox_row outbox_of(struct store *st, int64_t job)
{
	struct store_outbox_row o[2];
	size_t n = 0;

	CHECK(store_outbox_for_job(st, job, o, 2, &n, E));
	assert_int_equal(n, 1);
	return o[0];
}

/* Delivery attempt n (1-based) of a job's outbox row: its status (0: none) and error. */
static int attempt_of(struct store *st, int64_t job, int n, char *error, size_t cap)
{
	static const char sql[] =
	    "SELECT COALESCE(d.http_status, 0), COALESCE(d.error, '') FROM deliveries d "
	    "JOIN outbox o ON o.id = d.outbox_id WHERE o.job_id = $1 AND d.n = $2";
	struct store_rows *rows = NULL;
	struct store_val p[] = {sv_int(job), sv_int(n)};

	CHECK(store_q(st, sql, p, 2, &rows, E));
	if (rows->nrows != 1)
		fail_msg("job %lld: %zu rows for attempt %d", (long long)job, rows->nrows, n);
	int status = (int)store_col_int(rows, 0, 0);
	store_col_copy(rows, 0, 1, error, cap);
	store_rows_free(rows);
	return status;
}

static struct callback_config config(void)
{
	struct callback_config c;

	callback_config_default(&c);
	c.secret = SECRET;
	c.secret_len = strlen(SECRET);
	c.timeout_ms = 3000;
	c.connect_timeout_ms = 1000;
	c.max_attempts = 3;
	c.base_backoff_ms = 300;
	c.max_backoff_ms = 1000;
	c.batch = 16;
	c.allow_private = true; /* the receiver is on loopback */
	return c;
}

/* One batch sent and recorded by a fresh sender, pump after pump: how many
 * attempts were recorded, with the stats of all the pumps in *s. */
static int pump_one_batch(struct store *st, const struct callback_config *c,
			  struct callback_stats *s)
{
	struct callback_sender *sender = NULL;
	struct callback_stats one;
	struct err e;
	int n = 0;

	*s = (struct callback_stats){0};
	if (callback_sender_new(c, &sender, &e) < 0)
		fail_msg("callback_sender_new: %s", e.msg);
	do {
		int r = callback_pump(sender, st, PUMP_SLICE_MS, -1, &one, &e);
		if (r < 0)
			fail_msg("callback_pump: %s", e.msg);
		assert_int_equal(one.handled, r);
		assert_int_equal(one.delivered + one.retried + one.failed + one.record_errors, r);
		n += r;
		s->handled += one.handled;
		s->delivered += one.delivered;
		s->retried += one.retried;
		s->failed += one.failed;
		s->record_errors += one.record_errors;
	} while (callback_in_flight(sender) > 0);
	callback_sender_free(sender);
	return n;
}

/* The request matches the payload and its signature verifies. */
static void check_signed(const struct seen *s)
{
	json_error_t jerr;
	json_t *doc = json_loads(s->body, 0, &jerr);
	char sig[CALLBACK_SIG_HEX + 1];

	assert_non_null(doc);
	assert_string_equal(s->method, "POST");
	assert_string_equal(s->content_type, "application/json");
	assert_string_equal(s->delivery, json_string_value(json_object_get(doc, "delivery_id")));
	assert_int_equal(strlen(s->delivery), 32);
	int64_t ts = strtoll(s->timestamp, NULL, 10);
	assert_true(llabs(ts - (int64_t)time(NULL)) <= 5);
	callback_sign(SECRET, strlen(SECRET), ts, s->body, strlen(s->body), sig);
	assert_int_equal(strncmp(s->signature, "v1=", 3), 0);
	assert_string_equal(s->signature + 3, sig);
	assert_true(callback_verify(SECRET, strlen(SECRET), s->timestamp, s->signature, s->body,
				    strlen(s->body), time(NULL), 300));
	assert_false(callback_verify("other", 5, s->timestamp, s->signature, s->body,
				     strlen(s->body), time(NULL), 300));
	json_decref(doc);
}

/* ---- cases on a store ---- */

static void test_callback_delivers_signed_post(void **state)
{
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(200);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128];

	url_of(r, "/cb", url, sizeof(url));
	int64_t job = completed_job(st, url);
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	assert_int_equal(s.delivered, 1);
	assert_int_equal(s.handled, 1);
	assert_int_equal(recv_count(r, "/cb"), 1);
	check_signed(&r->seen[0]);
	json_t *doc = json_loads(r->seen[0].body, 0, NULL);
	assert_int_equal(json_integer_value(json_object_get(doc, "job_id")), job);
	assert_true(json_is_object(json_object_get(doc, "result")));
	/* Submitted without an instructor's token: the student view. */
	assert_string_equal(
	    json_string_value(json_object_get(json_object_get(doc, "result"), "view")), "student");
	json_decref(doc);
	struct store_outbox_row o = outbox_of(st, job);
	assert_string_equal(o.state, "delivered");
	assert_int_equal(o.attempts, 1);
	struct store_job j;
	CHECK(store_job_get(st, job, &j, E));
	assert_true(j.delivered_ms > 0);
	char why[256];
	assert_int_equal(attempt_of(st, job, 1, why, sizeof(why)), 200);
	assert_string_equal(why, "");
	/* Delivered rows are not sent again. */
	assert_int_equal(pump_one_batch(st, &c, &s), 0);
	assert_int_equal(recv_count(r, NULL), 1);
	recv_stop(r);
	store_close(st);
}

static void test_callback_retries_non_2xx_with_backoff_then_delivers(void **state)
{
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(500);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128], why[256];
	int64_t now;

	url_of(r, "/cb", url, sizeof(url));
	int64_t job = completed_job(st, url);
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	assert_int_equal(s.retried, 1);
	assert_int_equal(s.delivered, 0);
	struct store_outbox_row o = outbox_of(st, job);
	CHECK(store_now_ms(st, &now, E));
	assert_string_equal(o.state, "pending");
	assert_int_equal(o.attempts, 1);
	/* Equal jitter: the wait is between half the base and the base. */
	assert_true(o.next_try_ms - now <= c.base_backoff_ms);
	assert_true(o.next_try_ms - now >= c.base_backoff_ms / 2 - 100);
	assert_int_equal(attempt_of(st, job, 1, why, sizeof(why)), 500);
	assert_string_equal(why, "HTTP 500");
	/* Not due yet: nothing is sent. */
	assert_int_equal(pump_one_batch(st, &c, &s), 0);
	assert_int_equal(recv_count(r, NULL), 1);
	recv_set_status(r, 204);
	sleep_ms(c.base_backoff_ms + 50);
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	assert_int_equal(s.delivered, 1);
	o = outbox_of(st, job);
	assert_string_equal(o.state, "delivered");
	assert_int_equal(o.attempts, 2);
	assert_int_equal(attempt_of(st, job, 2, why, sizeof(why)), 204);
	/* Both attempts carried the same delivery id, each signed. */
	assert_int_equal(recv_count(r, "/cb"), 2);
	assert_string_equal(r->seen[0].delivery, r->seen[1].delivery);
	check_signed(&r->seen[0]);
	check_signed(&r->seen[1]);
	recv_stop(r);
	store_close(st);
}

static void test_callback_hanging_receiver_times_out_in_bounded_time(void **state)
{
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(200);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128], why[256];

	c.timeout_ms = 800;
	c.connect_timeout_ms = 500;
	url_of(r, "/hang", url, sizeof(url));
	int64_t job = completed_job(st, url);
	uint64_t t0 = monotonic_ms();
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	uint64_t took = monotonic_ms() - t0;
	assert_true(took >= 700);
	assert_true(took < 800 + 1500);
	assert_int_equal(s.retried, 1);
	assert_int_equal(recv_count(r, "/hang"), 1);
	assert_int_equal(attempt_of(st, job, 1, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "timed out"));
	struct store_outbox_row o = outbox_of(st, job);
	assert_string_equal(o.state, "pending");
	assert_int_equal(o.attempts, 1);
	recv_stop(r);
	store_close(st);
}

/* A receiver that never answers keeps no pump past its slice, and a
 * readable wake fd (the server's signals) ends one at once: the loop that
 * pumps sees a SIGTERM within a slice.  Stopping with the attempt in flight
 * records nothing: the row stays held, and is sent again when the hold
 * ends. */
static void test_callback_pump_returns_within_its_slice_while_a_receiver_hangs(void **state)
{
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(200);
	struct callback_config c = config();
	struct callback_sender *sender = NULL;
	struct callback_stats s;
	struct err e;
	char url[128];
	int wake[2];
	int64_t now;

	/* The server's own timeouts: a pump that ran its batch to the end held
	 * the server's loop for all of the 10 s. */
	callback_config_default(&c);
	c.secret = SECRET;
	c.secret_len = strlen(SECRET);
	c.allow_private = true;
	url_of(r, "/hang", url, sizeof(url));
	int64_t job = completed_job(st, url);
	assert_int_equal(callback_sender_new(&c, &sender, &e), 0);
	uint64_t t0 = monotonic_ms();
	assert_int_equal(callback_pump(sender, st, 300, -1, &s, &e), 0);
	uint64_t took = monotonic_ms() - t0;
	assert_true(took >= 250);
	assert_true(took < 300 + 2000);
	assert_int_equal(s.handled, 0);
	assert_int_equal(callback_in_flight(sender), 1);
	while (recv_count(r, "/hang") == 0 && monotonic_ms() - t0 < 5000)
		sleep_ms(10);
	assert_int_equal(recv_count(r, "/hang"), 1);

	assert_int_equal(pipe2(wake, O_CLOEXEC), 0);
	assert_int_equal(write(wake[1], "x", 1), 1);
	t0 = monotonic_ms();
	assert_int_equal(callback_pump(sender, st, 5000, wake[0], &s, &e), 0);
	assert_true(monotonic_ms() - t0 < 1000);
	assert_int_equal(callback_in_flight(sender), 1);

	callback_sender_free(sender);
	struct store_outbox_row o = outbox_of(st, job);
	CHECK(store_now_ms(st, &now, E));
	assert_string_equal(o.state, "pending");
	assert_int_equal(o.attempts, 0);
	assert_true(o.next_try_ms - now > (int64_t)c.timeout_ms);
	assert_int_equal(pump_one_batch(st, &c, &s), 0);
	assert_int_equal(recv_count(r, NULL), 1);
	close(wake[0]);
	close(wake[1]);
	recv_stop(r);
	store_close(st);
}

static void test_callback_refused_port_is_a_failed_attempt(void **state)
{
	struct store *st = fresh_store(state);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128], why[256];
	uint16_t port;

	close(listen_loopback(&port)); /* nothing listens there now */
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/cb", port);
	int64_t job = completed_job(st, url);
	uint64_t t0 = monotonic_ms();
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	assert_true(monotonic_ms() - t0 < 1000);
	assert_int_equal(s.retried, 1);
	assert_int_equal(attempt_of(st, job, 1, why, sizeof(why)), 0);
	assert_non_null(strcasestr(why, "connect"));
	struct store_outbox_row o = outbox_of(st, job);
	assert_string_equal(o.state, "pending");
	assert_int_equal(o.attempts, 1);
	store_close(st);
}

static void test_callback_gives_up_after_max_attempts(void **state)
{
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(503);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128];

	c.base_backoff_ms = 0; /* due again at once */
	c.max_backoff_ms = 0;
	url_of(r, "/cb", url, sizeof(url));
	int64_t job = completed_job(st, url);
	for (unsigned i = 1; i <= c.max_attempts; i++) {
		assert_int_equal(pump_one_batch(st, &c, &s), 1);
		assert_int_equal(s.retried, i < c.max_attempts);
		assert_int_equal(s.failed, i == c.max_attempts);
	}
	struct store_outbox_row o = outbox_of(st, job);
	assert_string_equal(o.state, "failed");
	assert_int_equal(o.attempts, 3);
	assert_int_equal(pump_one_batch(st, &c, &s), 0);
	assert_int_equal(recv_count(r, "/cb"), 3);
	recv_stop(r);
	store_close(st);
}

static void test_callback_does_not_follow_redirects(void **state)
{
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(200);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128], why[256];

	url_of(r, "/redirect", url, sizeof(url));
	int64_t job = completed_job(st, url);
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	assert_int_equal(s.retried, 1);
	assert_int_equal(recv_count(r, "/redirect"), 1);
	assert_int_equal(recv_count(r, "/target"), 0);
	assert_int_equal(attempt_of(st, job, 1, why, sizeof(why)), 302);
	assert_non_null(strstr(why, "redirects are not followed"));
	assert_string_equal(outbox_of(st, job).state, "pending");
	recv_stop(r);
	store_close(st);
}

static void test_callback_sends_a_batch_concurrently(void **state)
{
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(200);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128];
	int64_t jobs[6];

	c.batch = 4;
	url_of(r, "/slow", url, sizeof(url));
	for (int i = 0; i < 6; i++)
		jobs[i] = completed_job(st, url);
	/* Four answers of SLOW_MS each, one after another, would take 4 * SLOW_MS. */
	uint64_t t0 = monotonic_ms();
	assert_int_equal(pump_one_batch(st, &c, &s), 4);
	assert_true(monotonic_ms() - t0 < 3 * SLOW_MS);
	assert_int_equal(s.delivered, 4);
	assert_int_equal(pump_one_batch(st, &c, &s), 2);
	assert_int_equal(s.delivered, 2);
	assert_int_equal(pump_one_batch(st, &c, &s), 0);
	for (int i = 0; i < 6; i++)
		assert_string_equal(outbox_of(st, jobs[i]).state, "delivered");
	assert_int_equal(recv_count(r, "/slow"), 6);
	for (size_t i = 0; i < 6; i++)
		for (size_t k = 0; k < i; k++)
			assert_string_not_equal(r->seen[i].delivery, r->seen[k].delivery);
	recv_stop(r);
	store_close(st);
}

static void test_callback_reads_little_of_an_endless_answer(void **state)
{
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(200);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128];

	url_of(r, "/big", url, sizeof(url));
	int64_t job = completed_job(st, url);
	uint64_t t0 = monotonic_ms();
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	assert_true(monotonic_ms() - t0 < c.timeout_ms);
	assert_int_equal(s.delivered, 1); /* the status was 200: the rest is not read */
	assert_string_equal(outbox_of(st, job).state, "delivered");
	/* What the kernel buffered, not the 64 MiB. */
	size_t sent = recv_stop(r);
	assert_true(sent < (32u << 20));
	store_close(st);
}

static void test_callback_refuses_private_addresses_unless_allowed(void **state)
{
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(200);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128], why[256];

	c.allow_private = false;
	snprintf(url, sizeof(url), "http://localhost:%u/cb", r->port);
	int64_t job = completed_job(st, url);
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	assert_int_equal(s.retried, 1);
	assert_int_equal(recv_count(r, NULL), 0);
	assert_int_equal(attempt_of(st, job, 1, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "not a public address"));
	c.allow_private = true;
	sleep_ms(c.base_backoff_ms + 50);
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	assert_int_equal(s.delivered, 1);
	assert_int_equal(recv_count(r, "/cb"), 1);
	recv_stop(r);
	store_close(st);
}

static void test_callback_uses_a_proxy_only_when_configured(void **state)
{
	static const char *const vars[] = {"http_proxy", "HTTP_PROXY", "https_proxy", "ALL_PROXY",
					   "all_proxy"};
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(200);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128], proxy[128];
	uint16_t dead;

	/* The environment names a proxy that refuses: it is ignored. */
	close(listen_loopback(&dead));
	snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%u", dead);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		setenv(vars[i], proxy, 1);
	url_of(r, "/cb", url, sizeof(url));
	int64_t direct = completed_job(st, url);
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	assert_int_equal(s.delivered, 1);
	assert_string_equal(outbox_of(st, direct).state, "delivered");
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	/* A configured proxy gets the request (the receiver plays one). */
	snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%u", r->port);
	c.proxy = proxy;
	completed_job(st, "http://callbacks.example.invalid/hook");
	assert_int_equal(pump_one_batch(st, &c, &s), 1);
	assert_int_equal(recv_count(r, "http://callbacks.example.invalid/hook"), 1);
	recv_stop(r);
	store_close(st);
}

static void test_callback_bad_url_in_a_row_fails_at_once(void **state)
{
	struct store *st = fresh_store(state);
	struct receiver *r = recv_start(200);
	struct callback_config c = config();
	struct callback_stats s;
	char url[128], why[256];

	int64_t ftp = completed_job(st, "ftp://127.0.0.1/cb");
	snprintf(url, sizeof(url), "http://user:pw@127.0.0.1:%u/cb", r->port);
	int64_t creds = completed_job(st, url);
	assert_int_equal(pump_one_batch(st, &c, &s), 2);
	assert_int_equal(s.failed, 2);
	assert_int_equal(recv_count(r, NULL), 0);
	assert_string_equal(outbox_of(st, ftp).state, "failed");
	assert_string_equal(outbox_of(st, creds).state, "failed");
	assert_int_equal(attempt_of(st, ftp, 1, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "http or https"));
	recv_stop(r);
	store_close(st);
}

/* ---- cases without a store ---- */

static void test_callback_url_check(void **state)
{
	static const char *const good[] = {
	    "http://example.com/hook", "https://example.com:8443/a/b?c=d",
	    "HTTPS://EXAMPLE.COM",     "http://127.0.0.1:9/x",
	    "http://[::1]:80/",	       "https://xn--bcher-kva.example/%C3%BC"};
	static const char *const bad[] = {"",
					  "example.com/hook",
					  "ftp://example.com/x",
					  "file:///etc/passwd",
					  "javascript:alert(1)",
					  "gopher://example.com/",
					  "http://user@example.com/",
					  "http://user:pw@example.com/",
					  "http://:pw@example.com/",
					  "http://",
					  "http://:80/",
					  "http://exa mple.com/",
					  "http://example.com/\r\nX: y",
					  "http://bücher.example/",
					  "http://example.com:99999/",
					  "http://[::1/"};
	struct err e;
	char *longurl = malloc(CALLBACK_URL_MAX + 2);

	(void)state;
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		if (callback_url_check(good[i], &e) < 0)
			fail_msg("%s refused: %s", good[i], e.msg);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (callback_url_check(bad[i], &e) == 0)
			fail_msg("%s accepted", bad[i]);
		assert_int_equal(e.kind, ERR_INPUT);
		assert_non_null(strstr(e.msg, "callback URL"));
	}
	assert_int_equal(callback_url_check(NULL, &e), -1);
	memcpy(longurl, "http://a/", 9);
	memset(longurl + 9, 'x', CALLBACK_URL_MAX - 9);
	longurl[CALLBACK_URL_MAX] = '\0';
	assert_int_equal(callback_url_check(longurl, &e), 0);
	longurl[CALLBACK_URL_MAX] = 'x';
	longurl[CALLBACK_URL_MAX + 1] = '\0';
	assert_int_equal(callback_url_check(longurl, &e), -1);
	assert_non_null(strstr(e.msg, "longer"));
	free(longurl);
}

static void test_callback_sign_and_verify(void **state)
{
	/* Python: hmac.new(b"whsec_test", b'1700000000.{"delivery_id":"abc"}', sha256) */
	static const char body[] = "{\"delivery_id\":\"abc\"}";
	static const char want[] =
	    "15ff199661ed3f4fb7e682f0f1b7b651411d42856d0630e4d953916403a68a30";
	char sig[CALLBACK_SIG_HEX + 1], header[200];

	(void)state;
	callback_sign("whsec_test", 10, 1700000000, body, strlen(body), sig);
	assert_string_equal(sig, want);
	callback_sign("k", 1, 0, NULL, 0, sig);
	assert_string_equal(sig,
			    "6b4a4b8b3c40f1e8f53a3d36682e5f99f7ad2ac1df1c93dfe336f329167641e7");

	snprintf(header, sizeof(header), "v1=%s", want);
	assert_true(callback_verify("whsec_test", 10, "1700000000", header, body, strlen(body),
				    1700000000 + 299, 300));
	/* Rotation: any v1 value may match; spaces around items are allowed. */
	snprintf(header, sizeof(header), "v0=zz, v1=%064d , v1=%s", 0, want);
	assert_true(callback_verify("whsec_test", 10, "1700000000", header, body, strlen(body),
				    1700000000, 300));
	/* Too old, from the future, another body, malformed. */
	snprintf(header, sizeof(header), "v1=%s", want);
	assert_false(callback_verify("whsec_test", 10, "1700000000", header, body, strlen(body),
				     1700000000 + 301, 300));
	assert_false(callback_verify("whsec_test", 10, "1700000000", header, body, strlen(body),
				     1700000000 - 301, 300));
	assert_false(
	    callback_verify("whsec_test", 10, "1700000000", header, "{}", 2, 1700000000, 300));
	assert_false(callback_verify("whsec_test", 10, "+1700000000", header, body, strlen(body),
				     1700000000, 300));
	assert_false(
	    callback_verify("whsec_test", 10, "", header, body, strlen(body), 1700000000, 300));
	assert_false(callback_verify("whsec_test", 10, "99999999999999999999", header, body,
				     strlen(body), 1700000000, 300));
	assert_false(callback_verify("whsec_test", 10, "1700000000", want, body, strlen(body),
				     1700000000, 300));
	assert_false(callback_verify("whsec_test", 10, "1700000000", NULL, body, strlen(body),
				     1700000000, 300));
}

static void test_callback_backoff_doubles_caps_and_jitters(void **state)
{
	struct callback_config c = config();

	(void)state;
	c.base_backoff_ms = 1000;
	c.max_backoff_ms = 60000;
	assert_int_equal(callback_backoff_ms(&c, 1, 0), 500);
	assert_int_equal(callback_backoff_ms(&c, 1, 500), 1000);
	assert_int_equal(callback_backoff_ms(&c, 2, 0), 1000);
	assert_int_equal(callback_backoff_ms(&c, 3, 1000), 3000);
	assert_int_equal(callback_backoff_ms(&c, 3, 2000), 4000);
	assert_int_equal(callback_backoff_ms(&c, 7, 30000), 60000);
	assert_int_equal(callback_backoff_ms(&c, 1000, 0), 30000);
	for (uint64_t r = 0; r < 5000; r += 7) {
		int64_t w = callback_backoff_ms(&c, 4, r * 0x9E3779B97F4A7C15ull);
		assert_true(w >= 4000 && w <= 8000);
	}
	c.base_backoff_ms = c.max_backoff_ms = 0;
	assert_int_equal(callback_backoff_ms(&c, 5, 12345), 0);
}

static bool private4(const char *a)
{
	struct sockaddr_in s = {.sin_family = AF_INET};
	assert_int_equal(inet_pton(AF_INET, a, &s.sin_addr), 1);
	return callback_addr_is_private((struct sockaddr *)&s, sizeof(s));
}

static bool private6(const char *a)
{
	struct sockaddr_in6 s = {.sin6_family = AF_INET6};
	assert_int_equal(inet_pton(AF_INET6, a, &s.sin6_addr), 1);
	return callback_addr_is_private((struct sockaddr *)&s, sizeof(s));
}

static void test_callback_addr_is_private(void **state)
{
	static const char *const priv4[] = {"127.0.0.1",       "10.1.2.3",    "172.16.0.1",
					    "172.31.255.255",  "192.168.1.1", "169.254.169.254",
					    "100.64.0.1",      "0.0.0.0",     "224.0.0.1",
					    "255.255.255.255", "198.18.0.1",  "192.0.2.7"};
	static const char *const pub4[] = {"8.8.8.8", "1.1.1.1", "172.32.0.1", "100.128.0.1",
					   "193.0.0.1"};
	static const char *const priv6[] = {"::",
					    "::1",
					    "fe80::1",
					    "fd00::1",
					    "fc12::1",
					    "ff02::1",
					    "::ffff:127.0.0.1",
					    "::ffff:10.0.0.1",
					    "64:ff9b::a00:1",
					    "2002:c0a8:101::1",
					    "2001:db8::1"};
	static const char *const pub6[] = {"2606:4700:4700::1111", "2a00:1450:4001::1",
					   "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"};

	(void)state;
	for (size_t i = 0; i < sizeof(priv4) / sizeof(priv4[0]); i++)
		if (!private4(priv4[i]))
			fail_msg("%s: public?", priv4[i]);
	for (size_t i = 0; i < sizeof(pub4) / sizeof(pub4[0]); i++)
		if (private4(pub4[i]))
			fail_msg("%s: private?", pub4[i]);
	for (size_t i = 0; i < sizeof(priv6) / sizeof(priv6[0]); i++)
		if (!private6(priv6[i]))
			fail_msg("%s: public?", priv6[i]);
	for (size_t i = 0; i < sizeof(pub6) / sizeof(pub6[0]); i++)
		if (private6(pub6[i]))
			fail_msg("%s: private?", pub6[i]);
	struct sockaddr_un_like {
		sa_family_t family;
		char path[20];
	} un = {.family = AF_UNIX};
	assert_true(callback_addr_is_private((struct sockaddr *)&un, sizeof(un)));
}

static void test_callback_config_is_checked(void **state)
{
	struct callback_config c = config();
	struct callback_sender *sender = NULL;
	struct err e;

	(void)state;
	c.secret_len = 0;
	assert_int_equal(callback_sender_new(&c, &sender, &e), -1);
	assert_int_equal(e.kind, ERR_USAGE);
	assert_null(sender);
	c = config();
	c.connect_timeout_ms = c.timeout_ms + 1;
	assert_int_equal(callback_sender_new(&c, &sender, &e), -1);
	c = config();
	c.batch = CALLBACK_BATCH_MAX + 1;
	assert_int_equal(callback_sender_new(&c, &sender, &e), -1);
	c = config();
	c.max_attempts = 0;
	assert_int_equal(callback_sender_new(&c, &sender, &e), -1);
	c = config();
	c.max_backoff_ms = c.base_backoff_ms - 1;
	assert_int_equal(callback_sender_new(&c, &sender, &e), -1);
	assert_null(sender);
	c = config();
	assert_int_equal(callback_sender_new(&c, &sender, &e), 0);
	assert_int_equal(callback_in_flight(sender), 0);
	assert_null(callback_sender_free(sender));
	assert_null(callback_sender_free(NULL));
}

/* ---- groups ---- */

static int setup_sqlite(void **state)
{
	snprintf(sqlite_backend.tmpdir, sizeof(sqlite_backend.tmpdir), "/tmp/proctor-cb.XXXXXX");
	if (!mkdtemp(sqlite_backend.tmpdir))
		return -1;
	*state = &sqlite_backend;
	return 0;
}

static int teardown_sqlite(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", sqlite_backend.tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int setup_pg(void **state)
{
	*state = &pg_backend;
	return pgtest_group_start(&pg_backend.pg, pg_backend.skip, sizeof(pg_backend.skip));
}

static int teardown_pg(void **state)
{
	(void)state;
	pgtest_stop(pg_backend.pg);
	pg_backend.pg = NULL;
	return 0;
}

int main(void)
{
	const struct CMUnitTest pure[] = {
	    cmocka_unit_test(test_callback_url_check),
	    cmocka_unit_test(test_callback_sign_and_verify),
	    cmocka_unit_test(test_callback_backoff_doubles_caps_and_jitters),
	    cmocka_unit_test(test_callback_addr_is_private),
	    cmocka_unit_test(test_callback_config_is_checked),
	};
	const struct CMUnitTest stored[] = {
	    cmocka_unit_test(test_callback_delivers_signed_post),
	    cmocka_unit_test(test_callback_retries_non_2xx_with_backoff_then_delivers),
	    cmocka_unit_test(test_callback_hanging_receiver_times_out_in_bounded_time),
	    cmocka_unit_test(test_callback_pump_returns_within_its_slice_while_a_receiver_hangs),
	    cmocka_unit_test(test_callback_refused_port_is_a_failed_attempt),
	    cmocka_unit_test(test_callback_gives_up_after_max_attempts),
	    cmocka_unit_test(test_callback_does_not_follow_redirects),
	    cmocka_unit_test(test_callback_sends_a_batch_concurrently),
	    cmocka_unit_test(test_callback_reads_little_of_an_endless_answer),
	    cmocka_unit_test(test_callback_refuses_private_addresses_unless_allowed),
	    cmocka_unit_test(test_callback_uses_a_proxy_only_when_configured),
	    cmocka_unit_test(test_callback_bad_url_in_a_row_fails_at_once),
	};
	int failed = cmocka_run_group_tests_name("callback", pure, NULL, NULL);
	failed +=
	    cmocka_run_group_tests_name("callback_sqlite", stored, setup_sqlite, teardown_sqlite);
	failed += cmocka_run_group_tests_name("callback_postgresql", stored, setup_pg, teardown_pg);
	return failed ? 1 : 0;
}
