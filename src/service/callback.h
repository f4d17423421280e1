/* Result callbacks: the outbox's deliveries POSTed signed, concurrently, retried with backoff. */
#ifndef PROCTOR_SERVICE_CALLBACK_H
#define PROCTOR_SERVICE_CALLBACK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "err.h"

struct store;

/*
 * Theory of operation
 * -------------------
 * store_job_complete() writes an outbox row in the same transaction as the
 * result (docs/service-schema.md).  A callback_sender is the sending side,
 * stepped by callback_pump() from the server's background loop: it takes
 * a batch of the rows that are due, holding them (store_outbox_take_due)
 * for longer than a delivery can last so that another server does not send
 * them at the same time; POSTs them all at once (libcurl's multi
 * interface, one thread); and records each attempt (store_outbox_record):
 * delivered on a 2xx answer, else retried after a backoff, or failed after
 * max_attempts attempts.  A batch spans as many pumps as its transfers
 * need, each pump a bounded slice, so the loop that pumps still sees its
 * signals and does its other duties while a receiver is slow.  Delivery
 * is at least once: a server that dies or stops between sending and
 * recording sends again when the hold ends, and receivers deduplicate by
 * the Proctor-Delivery header (the payload's delivery_id).
 *
 * A delivery is `POST <callback_url>` with the outbox row's payload as its
 * body and these headers (docs/api.md, "Callbacks"):
 *   Content-Type: application/json
 *   Proctor-Delivery: <delivery_id, 32 hex digits>
 *   Proctor-Timestamp: <Unix seconds of this attempt>
 *   Proctor-Signature: v1=<hex HMAC-SHA256(secret, timestamp "." body)>
 * Each attempt is signed afresh with its own timestamp.
 *
 * What one attempt may do is bounded: a total time (connect, TLS, request
 * and answer) and a connect time; only http and https; no redirect is
 * followed (a 3xx is a failed attempt); the answer's body is read up to
 * CALLBACK_RESPONSE_MAX bytes and discarded; no proxy unless configured
 * (the environment's *_proxy variables are ignored); no signals.  Unless
 * allowed, an address that is not public (loopback, private, link-local,
 * unique-local, multicast, ...) is refused when curl is about to connect
 * to it, after name resolution, so a name that resolves to one is refused
 * too.  With a proxy, the proxy connects and the address rule is its own.
 *
 * libcurl's global state is set up on first use (once, thread-safely).
 * A server should ignore SIGPIPE, as servers do: libcurl sends with
 * MSG_NOSIGNAL but is told not to touch signal dispositions.
 */

/* Longest callback URL accepted (bytes, without the NUL). */
#define CALLBACK_URL_MAX 2048
/* Deliveries sent at once by one batch, at most. */
#define CALLBACK_BATCH_MAX 256
/* Bytes of an answer's body read (then discarded); a longer body ends the transfer. */
#define CALLBACK_RESPONSE_MAX (64u << 10)
/* Length of a signature in hex, without the NUL. */
#define CALLBACK_SIG_HEX 64

struct callback_config {
	const void *secret; /* the HMAC key, at least 1 byte (32 random bytes advised) */
	size_t secret_len;
	unsigned timeout_ms;	     /* one attempt, start to end; 1..600000 */
	unsigned connect_timeout_ms; /* its connection (TCP and TLS), at most timeout_ms */
	unsigned max_attempts;	     /* then the row is failed; 1..100 */
	int64_t base_backoff_ms;     /* wait before the 2nd attempt; doubles per attempt */
	int64_t max_backoff_ms;	     /* cap of the wait, before jitter */
	unsigned batch;		     /* rows taken per batch, 1..CALLBACK_BATCH_MAX */
	const char *proxy;	     /* a proxy URL for every delivery; NULL: none */
	bool allow_private;	     /* true: loopback and private addresses may be called */
};

/* Defaults: timeout 10 s, connect 5 s, 8 attempts, backoff 10 s doubling to
 * 1 h, batch 32, no proxy, private addresses refused; no secret (the
 * caller sets one). */
void callback_config_default(struct callback_config *c);

/* What one pump did: the attempts that ended during it. */
struct callback_stats {
	uint64_t handled;	/* attempts ended: the sum of the four below */
	uint64_t delivered;	/* answered 2xx */
	uint64_t retried;	/* failed attempts that will be tried again */
	uint64_t failed;	/* failed attempts that were the last: the row is failed */
	uint64_t record_errors; /* attempts the store could not record (sent again later) */
};

/* The batch of deliveries in flight between pumps, with its transfers. */
struct callback_sender;

/*
 * Check the configuration (ERR_USAGE when invalid) and make a sender with
 * nothing in flight.  It keeps c's pointers (secret, proxy), which must
 * stay valid until callback_sender_free().
 */
int callback_sender_new(const struct callback_config *c, struct callback_sender **ret,
			struct err *e);

/* Free the sender.  A batch still in flight is dropped unrecorded: its rows
 * are sent again when their hold ends (at least once, as after a crash).
 * Accepts NULL; returns NULL. */
struct callback_sender *callback_sender_free(struct callback_sender *s);

/* Deliveries of the batch in flight whose attempt is not recorded yet; 0:
 * the next pump takes a new batch. */
size_t callback_in_flight(const struct callback_sender *s);

/*
 * One bounded step of sending.  With no batch in flight, take the
 * deliveries that are due, at most c->batch, and start them all at once
 * (a row whose URL fails callback_url_check() is failed at once, without
 * a request).  Then let the batch run until its transfers have all ended,
 * slice_ms has passed or wake_fd (-1: none) is readable, whichever comes
 * first, and record every attempt that ended.  A transfer still running
 * about c->timeout_ms after its batch started ends as a failed attempt.
 *
 * Returns within about slice_ms plus the store's time: how many attempts
 * ended (0: none yet, or none due), with *ret_stats (may be NULL) filled;
 * -1 when the store could not be read or some attempt could not be
 * recorded (the stats say how many; those rows come due again when their
 * hold ends).  `st` is used only during the call, from
 * the calling thread, and may be another connection on every call; a
 * sender is used by one thread at a time.
 */
int callback_pump(struct callback_sender *s, struct store *st, unsigned slice_ms, int wake_fd,
		  struct callback_stats *ret_stats, struct err *e);

/*
 * Check a callback URL given by a client before storing it: at most
 * CALLBACK_URL_MAX bytes, no whitespace or control bytes, parsed by
 * libcurl's URL parser (curl_url), scheme http or https, a host, no user
 * name or password.  Errors are ERR_INPUT with a message for the client.
 */
int callback_url_check(const char *url, struct err *e);

/* out = the hex HMAC-SHA256 (lower case, NUL-terminated) of
 * "<timestamp>.<body>" keyed with the secret: Proctor-Signature's v1 value. */
void callback_sign(const void *secret, size_t secret_len, int64_t timestamp, const void *body,
		   size_t body_len, char out[CALLBACK_SIG_HEX + 1]);

/*
 * A receiver's check of a delivery (untrusted headers, any length): true
 * when `timestamp` is a decimal number of seconds within tolerance_s of
 * now_s and `signature` (a comma-separated list of scheme=value pairs)
 * holds a v1 value equal, in constant time, to the signature of that
 * timestamp and `body`.
 */
bool callback_verify(const void *secret, size_t secret_len, const char *timestamp,
		     const char *signature, const void *body, size_t body_len, int64_t now_s,
		     int64_t tolerance_s);

/* The wait before the attempt after attempt number `attempt` (1 for the
 * first): base * 2^(attempt-1), capped at max, then "equal jitter": half
 * of it plus `rnd` scaled into the other half.  Always within
 * [wait/2, wait]. */
int64_t callback_backoff_ms(const struct callback_config *c, int attempt, uint64_t rnd);

/* True for an address that is not public: unspecified, loopback, private
 * (RFC 1918), shared (100.64/10), link-local, benchmarking, reserved,
 * multicast, broadcast; IPv6 unique-local, link-local, multicast,
 * documentation, and IPv4-mapped or NAT64 forms of those. */
bool callback_addr_is_private(const struct sockaddr *sa, socklen_t len);

#endif
