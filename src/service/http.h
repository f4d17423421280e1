/* The service's HTTP front: libmicrohttpd with every limit set, requests in, JSON answers out. */
#ifndef PROCTOR_SERVICE_HTTP_H
#define PROCTOR_SERVICE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/*
 * This layer only reads, bounds and hands over requests; it never touches
 * grading or sandbox state (the handler turns a request into a typed
 * command for the layer below).  Every answer it makes itself (a body too
 * large, a path too long, no route, a slow client) is a JSON error with a
 * stable code, as every handler's error is.
 */

struct http_limits {
	size_t max_body;	  /* bytes of a request body; more is 413 too_large */
	size_t max_url;		  /* bytes of the request target; more is 414 */
	unsigned max_connections; /* connections at once, all clients */
	unsigned per_ip;	  /* connections at once from one address */
	unsigned timeout_s;	  /* an idle or slow connection is closed after this */
	unsigned threads;	  /* threads answering requests */
	size_t conn_memory;	  /* libmicrohttpd's per-connection buffer (headers) */
};

/* The one place of the defaults (proctor serve's options start from them):
 * 64 MiB bodies, 4 KiB targets, 512 connections, 32 per address, 30 s
 * timeout, 16 threads, 64 KiB of headers. */
void http_limits_default(struct http_limits *l);

/* Bytes a gate may fill for its handler (http_request.state). */
#define HTTP_REQUEST_STATE 128

/* One request, valid only during the handler call. */
struct http_request {
	const char *method;	    /* "GET", "POST", ... */
	const char *path;	    /* the target's path, no query */
	const char *bearer;	    /* the Authorization bearer token, or NULL */
	const char *idempotency_key; /* the Idempotency-Key header, or NULL */
	const char *body;	    /* NUL-terminated copy of the body ("" if none) */
	size_t body_len;
	const char *remote;	    /* the client's address, text */
	void *conn;		    /* for http_request_query() and _header() */
	/*
	 * HTTP_REQUEST_STATE bytes, zeroed before the gate's call and kept
	 * until the request ends: what the gate found (who the caller is) is
	 * handed to every call of the handler for this request, so nothing is
	 * looked up twice.  NULL for a request made without a server (a
	 * fuzzer's): the handler then finds it out itself.
	 */
	void *state;
	/* When the handler was first called for this request (CLOCK_MONOTONIC
	 * ns), the same on every call again (http_response.again_ms); 0 for a
	 * request made without a server, as a fuzzer's. */
	uint64_t first_ns;
	/* Set on the last call: the server is stopping, answer now. */
	bool last_call;
};

/* A query parameter's value, or NULL; valid during the handler call (NULL
 * for a request made without a connection, as a fuzzer does). */
const char *http_request_query(const struct http_request *rq, const char *name);
/* A request header's value (name case-insensitive), or NULL; likewise. */
const char *http_request_header(const struct http_request *rq, const char *name);

/*
 * A streamed answer's producer: write at most `max` bytes of the body into
 * buf and return how many; or return 0 with *again_ms set to be called
 * again that much later (the connection is suspended meanwhile and holds
 * no thread); or HTTP_STREAM_END when the body is complete.  On the last
 * call (the server is stopping) 0 also ends the body.  The body goes out
 * chunked, as it is produced: exec output and live pages.
 */
#define HTTP_STREAM_END (-1)
typedef long (*http_stream_fn)(void *ctx, char *buf, size_t max, bool last_call,
			       unsigned *again_ms);

/* Response headers a handler may add, at most. */
#define HTTP_MAX_HEADERS 8

/* What the handler answers.  body is malloc'd (owned by the response, freed
 * by the layer); content_type NULL means application/json. */
struct http_response {
	unsigned status;
	char *body;
	size_t body_len; /* bytes of body when it is not text (0: strlen(body)) */
	const char *content_type;
	unsigned retry_after_s; /* sent as Retry-After when non-zero */
	/*
	 * Not answered yet (a long poll whose answer is not there): call the
	 * handler again for this request after this many milliseconds.  The
	 * connection is suspended meanwhile and holds no thread, so waiting
	 * polls never stall other requests.  Whatever else the handler set is
	 * discarded.
	 */
	unsigned again_ms;
	/* A streamed body instead of `body`: stream(stream_ctx, ...) until it
	 * ends, then stream_free(stream_ctx) (also when the client left). */
	http_stream_fn stream;
	void *stream_ctx;
	void (*stream_free)(void *ctx);
	/*
	 * Called with the request's state (http_request.state) when the
	 * request ends however it ends (answered, the client gone while it
	 * waited, the server stopping): what a handler keeps there across
	 * calls (an open descriptor) is released.  Once set it sticks.
	 */
	void (*state_end)(void *state);
	/* Headers added with http_response_header(), owned by the response. */
	char *headers[HTTP_MAX_HEADERS][2];
	unsigned n_headers;
};

/*
 * Add a response header (copied): Set-Cookie (more than one), Location,
 * Content-Security-Policy, Cache-Control (replacing the default
 * "no-store").  -1 when there is no room or memory (the answer becomes a
 * 500: a page without its security headers is never sent).
 */
int http_response_header(struct http_response *rs, const char *name, const char *value);
/* Free what a response owns (body, headers, a stream not handed over);
 * for a response that is not sent, as one answer of a batch. */
void http_response_clear(struct http_response *rs);

/*
 * Answer with a JSON error: {"error": {"code": CODE, "message": MESSAGE}}.
 * `code` is one of the stable codes of docs/api.md; never reuse one for
 * another meaning.  Returns 0 (so a handler can `return http_error(...)`).
 * Handlers answer through their kinds (err.c's table) instead.
 */
int http_error(struct http_response *rs, unsigned status, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Answer with a JSON document (the text of json_dumps, taken over). */
int http_json(struct http_response *rs, unsigned status, char *text);

typedef void (*http_handler)(void *ctx, const struct http_request *rq, struct http_response *rs);

struct http_server;

/*
 * Called once a request's headers are in, before any byte of its body is
 * read (rq->body is ""): 0 lets it go on, with *max_body lowered for this
 * request if the gate wants and rq->state filled for the handler;
 * non-zero answers it with *rs at once (a request without a valid token
 * never gets to send its body).
 */
typedef int (*http_gate)(void *ctx, const struct http_request *rq, struct http_response *rs,
			 size_t *max_body);

/*
 * Listen on `addr` ("127.0.0.1:8080"; port 0 picks a free one, see
 * http_server_port) and answer every request through `handler` from the
 * server's own threads (so the handler must be thread-safe), after `gate`
 * (NULL: none) let it in.
 */
int http_server_start(const char *addr, const struct http_limits *l, http_gate gate,
		      http_handler handler, void *ctx, struct http_server **ret, struct err *e);
uint16_t http_server_port(const struct http_server *s);
/* Stop accepting; every waiting long poll gets its last call (answered
 * now); finish or close connections, free.  Accepts NULL. */
void http_server_stop(struct http_server *s);

/*
 * Parse "HOST:PORT" (IPv4 dotted quad, or "localhost") into its parts.
 * Only addresses, no names resolved: the service binds what it is told.
 */
int http_parse_listen(const char *addr, uint32_t *ret_ip_be, uint16_t *ret_port, struct err *e);

#endif
