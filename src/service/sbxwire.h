/* The sandbox keeper's wire: one frame each way per connection, over AF_UNIX
 * (docs/sandbox-keeper.md). */
#ifndef PROCTOR_SERVICE_SBXWIRE_H
#define PROCTOR_SERVICE_SBXWIRE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/*
 * A frame is
 *
 *     "PSX1" | u32 head_len | u64 data_len | head | data
 *
 * with both lengths big-endian, the head one JSON object of at most
 * SBX_HEAD_MAX bytes (its strings may hold NUL, "\u0000": a program's
 * output does) and the data at most what the receiver allows.  The
 * two ends are both Proctor's, so a frame that is not one (wrong magic,
 * a head that is not a JSON object, a connection cut mid-frame) is our own
 * failure, ERR_INTERNAL; data longer than the receiver allows is the
 * caller's, ERR_TOO_LARGE (a file past the sandbox's disk).
 *
 * An error answer's head is {"error": {"kind": K, "message": M}}, K an
 * enum err_kind: sbx_send_error() writes one, sbx_error_of() reads it back
 * into a struct err, so a kind crosses the process boundary unchanged.
 */
#define SBX_MAGIC      "PSX1"
#define SBX_PREFIX_LEN 16u
#define SBX_HEAD_MAX   (16u << 20)
/* JSON nesting deeper than this is refused before jansson parses it. */
#define SBX_HEAD_DEPTH 16
/* A connection's sends (and its connect) give up after this long. */
#define SBX_SEND_TIMEOUT_S 10

/* Send one frame: `head` (a JSON object) and len bytes of data (data may
 * be NULL when len is 0).  SIGPIPE is never raised: a peer gone is EPIPE.
 * A peer that stopped reading may still have answered: the caller reads
 * the answer after a failed send too. */
int sbx_send(int fd, const json_t *head, const void *data, size_t len, struct err *e);

/* Receive one frame, data at most data_max bytes.  *ret_head is a new
 * reference, *ret_data malloc'd (NULL when *ret_len is 0); all are
 * written only on success.  ret_data and ret_len may be NULL: the data
 * (none, with data_max 0) is then read and dropped. */
/* The frame at the start of buf[0..len), for a reader that cannot block
 * (it reads what has come and looks again): 1 with *ret_head (the caller's
 * to drop), the data inside buf and *ret_used the frame's bytes; 0 when it
 * has not all come yet; -1 for a malformed frame or data past data_max. */
int sbx_frame_take(const char *buf, size_t len, size_t data_max, json_t **ret_head,
		   const char **ret_data, size_t *ret_len, size_t *ret_used, struct err *e);
/* The frame of head and data appended to b (a sender that cannot block
 * sends it when it can). */
struct dynbuf;
int sbx_frame_add(struct dynbuf *b, const json_t *head, const void *data, size_t len,
		  struct err *e);
int sbx_recv(int fd, json_t **ret_head, void **ret_data, size_t *ret_len, size_t data_max,
	     struct err *e);

/* Send the error answer {"error": {"kind", "message"}} for e. */
int sbx_send_error(int fd, const struct err *e);

/* -1 with *e set from the head (its kind, its message) when the head is an
 * error answer; 0 otherwise.  A kind that is not a number of enum
 * err_kind is ERR_INTERNAL. */
int sbx_error_of(const json_t *head, struct err *e);

/*
 * Connect to the keeper listening at `path` (at most sizeof(sun_path) - 1
 * bytes: a longer one is refused, naming it) and check that its end is
 * held by root (SO_PEERCRED).  *ret_fd is O_CLOEXEC, without timeouts.
 */
int sbx_connect(const char *path, int *ret_fd, struct err *e);

/*
 * Listen at `path`, mode 0600 (its directory should be root's and 0700:
 * docs/sandbox-keeper.md).  A socket file already there that nobody
 * listens on (a dead keeper's) is replaced; a live one is EADDRINUSE.
 */
int sbx_listen(const char *path, int *ret_fd, struct err *e);

/* Accept one connection on listen_fd (O_CLOEXEC) and check that its peer
 * is root (SO_PEERCRED); a peer that is not is closed and refused. */
int sbx_accept(int listen_fd, int *ret_fd, struct err *e);

/* Whether the peer of the AF_UNIX socket fd runs as uid 0; -1 with e set
 * when it does not or cannot be asked. */
int sbx_peer_is_root(int fd, struct err *e);

#endif
