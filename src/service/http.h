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

/* Defaults: 64 MiB bodies, 4 KiB targets, 512 connections, 32 per address,
 * 30 s timeout, 4 threads, 64 KiB of headers. */
void http_limits_default(struct http_limits *l);

/* One request, valid only during the handler call. */
struct http_request {
	const char *method;	    /* "GET", "POST", ... */
	const char *path;	    /* the target's path, no query */
	const char *bearer;	    /* the Authorization bearer token, or NULL */
	const char *idempotency_key; /* the Idempotency-Key header, or NULL */
	const char *body;	    /* NUL-terminated copy of the body ("" if none) */
	size_t body_len;
	const char *remote;	    /* the client's address, text */
	void *conn;		    /* for http_request_query() */
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

/* What the handler answers.  body is malloc'd (owned by the response, freed
 * by the layer); content_type NULL means application/json. */
struct http_response {
	unsigned status;
	char *body;
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
};

/*
 * Answer with a JSON error: {"error": {"code": CODE, "message": MESSAGE}}.
 * `code` is one of the stable codes of docs/api.md; never reuse one for
 * another meaning.  Returns 0 (so a handler can `return http_error(...)`).
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
 * request if the gate wants; non-zero answers it with *rs at once (a
 * request without a valid token never gets to send its body).
 */
typedef int (*http_gate)(void *ctx, const struct http_request *rq, struct http_response *rs,
			 size_t *max_body);

/*
 * Listen on `addr` ("127.0.0.1:8080"; port 0 picks a free one, see
 * http_server_port) and answer every request through `handler` from the
 * server's own threads (so the handler must be thread-safe).
 */
int http_server_start(const char *addr, const struct http_limits *l, http_handler handler,
		      void *ctx, struct http_server **ret, struct err *e);
/* http_server_start() with a gate (above) run on every request first. */
int http_server_start_gated(const char *addr, const struct http_limits *l, http_gate gate,
			    http_handler handler, void *ctx, struct http_server **ret,
			    struct err *e);
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
