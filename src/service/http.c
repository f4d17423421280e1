/* The service's HTTP front: libmicrohttpd with every limit set, requests in, JSON answers out. */
#include "service/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capbuf.h"
#include "dynbuf.h"
#include "util.h"

/*
 * Theory of operation.  libmicrohttpd runs a pool of threads on epoll and
 * calls answer() several times per request: once with the headers, once
 * per piece of the body, once more when the body is complete.  The first
 * call refuses what can be refused before reading anything (a target too
 * long, a declared body too large); the body is then copied into one
 * buffer that never grows past max_body (a chunked body that passes it is
 * read to its end and discarded, so the client gets its 413 rather than a
 * reset); the last call hands the request to the handler and sends what
 * it answered.  Slow or idle clients are closed by the connection
 * timeout, a flood of connections by the global and per-address limits,
 * and headers by the per-connection memory limit.  libmicrohttpd's own
 * form parser (MHD_PostProcessor, the home of its past CVEs) is never used.
 *
 * A long poll holds no thread: a handler that has no answer yet asks to be
 * called again later (http_response.again_ms); the connection is then
 * suspended (MHD_suspend_connection) and put on the server's timer list,
 * and the timer thread resumes it when it is due, upon which libmicrohttpd
 * calls answer() again and the handler looks again.  Sixteen polls used
 * to take all sixteen threads, /healthz included, for up to a minute.  A
 * streamed answer (http_response.stream) waits the same way when its
 * producer has nothing yet: libmicrohttpd would otherwise call its reader
 * again at once, a busy loop.
 *
 * The gate runs on the first call, before the body, and leaves what it
 * found (who the caller is) in the request's state for every later call of
 * the handler: a token is checked once per request.
 */

/* Per-request state, from the first call to the completion notice. */
struct pending {
	struct dynbuf body; /* capped at this request's max body */
	max_align_t state[(HTTP_REQUEST_STATE + sizeof(max_align_t) - 1) / sizeof(max_align_t)];
	uint64_t first_ns; /* the handler's first call */
	void (*state_end)(void *state); /* http_response.state_end, sticky */
	/* The gate's refusal, sent once the body is read and dropped (a
	 * refusal sent mid-body makes some clients fail writing the rest
	 * instead of reading the answer); `drained` counts what was dropped. */
	struct http_response *refusal;
	uint64_t drained;
	struct http_server *server;
	/* Suspended, waiting to be called again (the server's timer list). */
	struct MHD_Connection *conn;
	uint64_t due_ns;
	struct pending *next;
	bool held; /* suspended at least once: counted in http_server.held */
};

struct http_server {
	struct MHD_Daemon *d;
	struct http_limits limits;
	http_gate gate;
	http_handler handler;
	void *ctx;
	uint16_t port;
	/* The suspended requests and the thread that resumes them. */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t done; /* a held request completed */
	pthread_t timer;
	bool timer_started, stopping;
	struct pending *waiting;
	unsigned held; /* requests suspended at least once, not completed yet */
};

void http_limits_default(struct http_limits *l)
{
	*l = (struct http_limits){
	    .max_body = 64u << 20,
	    .max_url = 4096,
	    .max_connections = 512,
	    .per_ip = 32,
	    .timeout_s = 30,
	    .threads = 16,
	    .conn_memory = 64u << 10,
	};
}

int http_error(struct http_response *rs, unsigned status, const char *code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* A message may quote what the client sent: valid UTF-8 whatever it was. */
	size_t n;
	char *fixed = utf8_sanitize(msg, strlen(msg), false, &n);
	json_t *doc =
	    json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", fixed ? fixed : "");
	free(fixed);
	free(rs->body);
	rs->body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	rs->body_len = 0;
	json_decref(doc);
	rs->status = rs->body ? status : 500;
	rs->content_type = NULL;
	return 0;
}

int http_json(struct http_response *rs, unsigned status, char *text)
{
	free(rs->body);
	rs->body = text;
	rs->body_len = 0;
	rs->status = text ? status : 500;
	rs->content_type = NULL;
	return 0;
}

const char *http_request_query(const struct http_request *rq, const char *name)
{
	return rq->conn ? MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name) : NULL;
}

const char *http_request_header(const struct http_request *rq, const char *name)
{
	return rq->conn ? MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name) : NULL;
}

int http_response_header(struct http_response *rs, const char *name, const char *value)
{
	unsigned i = rs->n_headers;

	/* A header that could not be added fails the whole answer (a page
	 * without its Content-Security-Policy is not sent). */
	if (i >= HTTP_MAX_HEADERS || !(rs->headers[i][0] = strdup(name)) ||
	    !(rs->headers[i][1] = strdup(value))) {
		if (i < HTTP_MAX_HEADERS)
			free(rs->headers[i][0]), rs->headers[i][0] = NULL;
		http_response_clear(rs);
		http_error(rs, 500, "internal", "the answer's header %s could not be added", name);
		return -1;
	}
	rs->n_headers++;
	return 0;
}

static void headers_clear(struct http_response *rs)
{
	for (unsigned i = 0; i < rs->n_headers; i++) {
		free(rs->headers[i][0]);
		free(rs->headers[i][1]);
		rs->headers[i][0] = rs->headers[i][1] = NULL;
	}
	rs->n_headers = 0;
}

void http_response_clear(struct http_response *rs)
{
	free(rs->body);
	rs->body = NULL;
	rs->body_len = 0;
	headers_clear(rs);
	if (rs->stream && rs->stream_free)
		rs->stream_free(rs->stream_ctx);
	rs->stream = NULL;
	rs->stream_ctx = NULL;
	rs->stream_free = NULL;
}

/* A streamed answer on its way (MHD's content reader's cls).  Its own
 * allocation: libmicrohttpd frees it with the response, which may be after
 * the request's completion notice freed the pending state. */
struct stream {
	http_stream_fn fn;
	void *ctx;
	void (*free)(void *ctx);
	struct pending *p; /* valid while the reader can be called */
};

static bool wait_for(struct http_server *s, struct pending *p, unsigned ms);
static bool stopping(struct http_server *s);

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	struct stream *st = cls;
	struct http_server *s = st->p->server;
	(void)pos;

	for (;;) {
		unsigned again = 0;
		bool last = stopping(s);
		long n = st->fn(st->ctx, buf, max, last, &again);
		if (n > 0)
			return (ssize_t)(n < (long)max ? n : (long)max);
		if (n != 0 || !again || last)
			return MHD_CONTENT_READER_END_OF_STREAM;
		/* Nothing yet: suspended (libmicrohttpd would call again at
		 * once, a busy loop) until the timer resumes it; when the
		 * server is stopping, called again for the last time. */
		if (wait_for(s, st->p, again))
			return 0;
	}
}

static void stream_done(void *cls)
{
	struct stream *st = cls;

	if (st->free)
		st->free(st->ctx);
	free(st);
}

static struct MHD_Response *body_response(struct http_response *rs, struct pending *p)
{
	static const char fallback[] =
	    "{\"error\":{\"code\":\"internal\",\"message\":\"no answer\"}}";
	struct MHD_Response *r;

	if (rs->stream && p && rs->status != 500) {
		struct stream *st = calloc(1, sizeof(*st));
		if (!st)
			return NULL;
		*st = (struct stream){rs->stream, rs->stream_ctx, rs->stream_free, p};
		/* MHD_SIZE_UNKNOWN: sent chunked, as it is produced. */
		r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_read, st,
						      stream_done);
		if (!r) {
			free(st);
			return NULL;
		}
		rs->stream = NULL; /* stream_done frees its context now */
		return r;
	}
	if (rs->body) {
		r = MHD_create_response_from_buffer(rs->body_len ? rs->body_len : strlen(rs->body),
						    rs->body,
						    MHD_RESPMEM_MUST_FREE);
		if (r)
			rs->body = NULL; /* libmicrohttpd frees it with the response */
		return r;
	}
	rs->status = 500;
	return MHD_create_response_from_buffer(sizeof(fallback) - 1, (void *)fallback,
					       MHD_RESPMEM_PERSISTENT);
}

static enum MHD_Result send_response(struct MHD_Connection *c, struct http_response *rs,
				     struct pending *p)
{
	struct MHD_Response *r = body_response(rs, p);
	bool cache_set = false, ok_headers = true;

	if (!r) {
		http_response_clear(rs);
		return MHD_NO;
	}
	ok_headers &= MHD_add_response_header(
			  r, MHD_HTTP_HEADER_CONTENT_TYPE,
			  rs->content_type ? rs->content_type : "application/json") == MHD_YES;
	for (unsigned i = 0; i < rs->n_headers; i++) {
		cache_set |= strcasecmp(rs->headers[i][0], "Cache-Control") == 0;
		ok_headers &=
		    MHD_add_response_header(r, rs->headers[i][0], rs->headers[i][1]) == MHD_YES;
	}
	if (!cache_set)
		ok_headers &= MHD_add_response_header(r, "Cache-Control", "no-store") == MHD_YES;
	if (rs->retry_after_s) {
		char v[16];
		snprintf(v, sizeof(v), "%u", rs->retry_after_s);
		ok_headers &=
		    MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v) == MHD_YES;
	}
	http_response_clear(rs);
	if (!ok_headers) {
		/* A header refused (a newline in it) or no memory: no answer
		 * rather than one without the headers it was meant to have. */
		MHD_destroy_response(r);
		return MHD_NO;
	}
	enum MHD_Result ok = MHD_queue_response(c, rs->status, r);
	MHD_destroy_response(r);
	return ok;
}

/* Answer an error the layer decides itself, before the handler. */
static enum MHD_Result refuse(struct MHD_Connection *c, unsigned status, const char *code,
			      const char *message)
{
	struct http_response rs = {0};
	http_error(&rs, status, code, "%s", message);
	return send_response(c, &rs, NULL);
}

static const char *bearer_of(struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	if (!h || strncasecmp(h, "Bearer ", 7) != 0)
		return NULL;
	h += 7;
	while (*h == ' ')
		h++;
	return *h ? h : NULL;
}

static void remote_of(struct MHD_Connection *c, char *buf, size_t len)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	snprintf(buf, len, "?");
	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ci->client_addr;
		inet_ntop(AF_INET, &in->sin_addr, buf, (socklen_t)len);
	}
}

/*
 * Suspend a request's connection until `ms` from now (the timer thread
 * resumes it); the caller is libmicrohttpd's call for this connection.
 * False when the server is stopping: nothing would resume it then.
 */
static bool wait_for(struct http_server *s, struct pending *p, unsigned ms)
{
	pthread_mutex_lock(&s->lock);
	if (s->stopping) {
		pthread_mutex_unlock(&s->lock);
		return false;
	}
	/* Suspended under the lock: the timer thread, which takes it to
	 * resume, never resumes it before. */
	if (!p->held) {
		p->held = true;
		s->held++;
	}
	p->due_ns = now_ns() + (uint64_t)ms * 1000000u;
	p->next = s->waiting;
	s->waiting = p;
	MHD_suspend_connection(p->conn);
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	return true;
}

static bool stopping(struct http_server *s)
{
	pthread_mutex_lock(&s->lock);
	bool stop = s->stopping;
	pthread_mutex_unlock(&s->lock);
	return stop;
}

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **con_cls)
{
	struct http_server *s = cls;
	struct pending *p = *con_cls;
	(void)version;

	if (!p) {
		/* The headers are in; nothing of the body is read yet. */
		if (strlen(url) > s->limits.max_url)
			return refuse(c, 414, "uri_too_long", "the request target is too long");
		char remote[INET_ADDRSTRLEN + 1];
		size_t max = s->limits.max_body;
		remote_of(c, remote, sizeof(remote));
		/* Made before the gate, which fills its state; freed by the
		 * completion notice whatever happens next. */
		p = calloc(1, sizeof(*p));
		if (!p)
			return MHD_NO;
		p->server = s;
		p->conn = c;
		*con_cls = p;
		if (s->gate) {
			/* Before any byte of the body is read: a request the
			 * gate refuses (no valid token) costs no memory. */
			struct http_request hq = {.method = method,
						  .path = url,
						  .bearer = bearer_of(c),
						  .body = "",
						  .remote = remote,
						  .conn = c,
						  .state = p->state};
			struct http_response rs = {.status = 500};
			if (s->gate(s->ctx, &hq, &rs, &max) != 0) {
				/* Nothing of the body is kept: it is read and
				 * dropped, up to max_body, then answered. */
				if ((p->refusal = malloc(sizeof(rs))))
					*p->refusal = rs;
				else
					return send_response(c, &rs, NULL);
				return MHD_YES;
			}
			http_response_clear(&rs);
			if (max > s->limits.max_body)
				max = s->limits.max_body;
		}
		const char *cl =
		    MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
		uint64_t declared;
		if (cl && parse_u64(cl, strlen(cl), &declared) == 0 && declared > max) {
			char msg[128];
			snprintf(msg, sizeof(msg), "the body is larger than %zu bytes", max);
			return refuse(c, 413, "too_large", msg);
		}
		dynbuf_init(&p->body, max);
		return MHD_YES;
	}
	if (p->refusal) {
		size_t n = *upload_data_size;
		p->drained += n;
		*upload_data_size = 0;
		/* A piece of body: dropped, more may come.  Its end (a call
		 * with none), or more than any body may be, is answered (a
		 * flood of body is then cut by the close that follows). */
		if (n > 0 && p->drained <= s->limits.max_body)
			return MHD_YES;
		struct http_response *rs = p->refusal;
		p->refusal = NULL;
		enum MHD_Result r = send_response(c, rs, NULL);
		free(rs);
		return r;
	}
	if (*upload_data_size > 0) {
		/* Past the cap the buffer drops what it held and every later
		 * piece: a chunked body is read to its end for the 413. */
		dynbuf_add(&p->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (p->body.state != DYNBUF_OK) {
		/* Out of memory holding it is answered as too large: we
		 * cannot hold it. */
		char msg[128];
		snprintf(msg, sizeof(msg), "the body is larger than %zu bytes", p->body.max);
		return refuse(c, 413, "too_large", msg);
	}

	char remote[INET_ADDRSTRLEN + 1];
	remote_of(c, remote, sizeof(remote));
	struct http_request rq = {
	    .method = method,
	    .path = url,
	    .bearer = bearer_of(c),
	    .idempotency_key = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Idempotency-Key"),
	    .body = p->body.s ? p->body.s : "",
	    .body_len = p->body.len,
	    .remote = remote,
	    .conn = c,
	    .state = p->state,
	};
	if (!p->first_ns)
		p->first_ns = now_ns();
	rq.first_ns = p->first_ns;
	rq.last_call = stopping(s);
	struct http_response rs = {.status = 500};
	s->handler(s->ctx, &rq, &rs);
	if (rs.state_end)
		p->state_end = rs.state_end;
	if (rs.again_ms && !rq.last_call) {
		http_response_clear(&rs);
		if (wait_for(s, p, rs.again_ms))
			return MHD_YES;
		/* Stopping: called again at once, for the last time. */
		rq.last_call = true;
		rs = (struct http_response){.status = 500};
		s->handler(s->ctx, &rq, &rs);
		if (rs.state_end)
			p->state_end = rs.state_end;
	}
	return send_response(c, &rs, p);
}

/* The timer thread: resumes each suspended request when it is due (all
 * of them once the server stops), the earliest first. */
static void *timer_main(void *arg)
{
	struct http_server *s = arg;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		uint64_t now = now_ns(), next = UINT64_MAX;
		for (struct pending **pp = &s->waiting; *pp;) {
			struct pending *p = *pp;
			if (s->stopping || p->due_ns <= now) {
				*pp = p->next;
				p->next = NULL;
				MHD_resume_connection(p->conn);
				continue;
			}
			if (p->due_ns < next)
				next = p->due_ns;
			pp = &p->next;
		}
		if (s->stopping)
			break;
		if (next == UINT64_MAX) {
			pthread_cond_wait(&s->wake, &s->lock);
		} else {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			uint64_t at = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec +
				      (next - now);
			ts.tv_sec = (time_t)(at / 1000000000u);
			ts.tv_nsec = (long)(at % 1000000000u);
			pthread_cond_timedwait(&s->wake, &s->lock, &ts);
		}
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct pending *p = *con_cls;
	(void)c;
	(void)toe;
	if (p && p->held) {
		pthread_mutex_lock(&s->lock);
		s->held--;
		pthread_cond_broadcast(&s->done);
		pthread_mutex_unlock(&s->lock);
	}
	if (p) {
		if (p->refusal) {
			http_response_clear(p->refusal);
			free(p->refusal);
		}
		if (p->state_end)
			p->state_end(p->state);
		dynbuf_free(&p->body);
		free(p);
		*con_cls = NULL;
	}
}

int http_parse_listen(const char *addr, uint32_t *ret_ip_be, uint16_t *ret_port, struct err *e)
{
	const char *colon = addr ? strrchr(addr, ':') : NULL;
	char host[64];
	uint64_t port;
	struct in_addr in;

	if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(host))
		return err_set(e, 0, "--listen '%s': expected HOST:PORT, e.g. 127.0.0.1:8080",
			       addr ? addr : "");
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	if (parse_u64(colon + 1, strlen(colon + 1), &port) < 0 || port > 65535)
		return err_set(e, 0, "--listen '%s': the port must be a number from 0 to 65535",
			       addr);
	if (strcmp(host, "localhost") == 0)
		snprintf(host, sizeof(host), "127.0.0.1");
	if (inet_pton(AF_INET, host, &in) != 1)
		return err_set(e, 0, "--listen '%s': '%s' is not an IPv4 address", addr, host);
	*ret_ip_be = in.s_addr;
	*ret_port = (uint16_t)port;
	return 0;
}

int http_server_start(const char *addr, const struct http_limits *l, http_gate gate,
		      http_handler handler, void *ctx, struct http_server **ret, struct err *e)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	uint32_t ip;
	uint16_t port;

	if (http_parse_listen(addr, &ip, &port, e) < 0)
		return -1;
	sa.sin_addr.s_addr = ip;
	sa.sin_port = htons(port);
	struct http_server *s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(e, ENOMEM, "http server");
	s->limits = *l;
	s->handler = handler;
	s->gate = gate;
	s->ctx = ctx;
	pthread_condattr_t ca;
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_cond_init(&s->done, &ca);
	pthread_condattr_destroy(&ca);
	s->d = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME, port, NULL,
	    NULL, answer, s,
	    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned)l->max_connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)l->per_ip,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)l->timeout_s,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)l->conn_memory, MHD_OPTION_THREAD_POOL_SIZE,
	    (unsigned)(l->threads ? l->threads : 1), MHD_OPTION_NOTIFY_COMPLETED, completed, s,
	    MHD_OPTION_END);
	if (!s->d) {
		int saved = errno;
		pthread_cond_destroy(&s->wake);
		pthread_cond_destroy(&s->done);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return err_set(e, saved, "listen on %s", addr);
	}
	int rc = pthread_create(&s->timer, NULL, timer_main, s);
	if (rc != 0) {
		MHD_stop_daemon(s->d);
		pthread_cond_destroy(&s->wake);
		pthread_cond_destroy(&s->done);
		pthread_mutex_destroy(&s->lock);
		free(s);
		return err_set(e, rc, "start the long-poll timer");
	}
	s->timer_started = true;
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = di ? di->port : port;
	*ret = s;
	return 0;
}

uint16_t http_server_port(const struct http_server *s)
{
	return s->port;
}

void http_server_stop(struct http_server *s)
{
	if (!s)
		return;
	/* Every suspended poll is resumed for its last call before the
	 * daemon stops (libmicrohttpd must not stop with one suspended). */
	pthread_mutex_lock(&s->lock);
	s->stopping = true;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	if (s->timer_started)
		pthread_join(s->timer, NULL);
	/* Their last answers are sent before the daemon closes every
	 * connection: up to 5 s for them to complete. */
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += 5;
	pthread_mutex_lock(&s->lock);
	while (s->held && pthread_cond_timedwait(&s->done, &s->lock, &until) == 0)
		;
	pthread_mutex_unlock(&s->lock);
	MHD_stop_daemon(s->d);
	pthread_cond_destroy(&s->wake);
	pthread_cond_destroy(&s->done);
	pthread_mutex_destroy(&s->lock);
	free(s);
}
