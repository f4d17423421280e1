/* The API's streamed sandbox commands: an exec's output as it comes, as NDJSON (docs/api.md, "Sandboxes"). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "digest.h"
#include "dynbuf.h"
#include "service/api_sandboxes.h"
#include "service/sbxwire.h"
#include "util.h"

/*
 * A streamed exec answers 200 at once with a body of JSON lines, sent
 * chunked as they are made:
 *
 *   {"type": "started", "exec_id", "sandbox_id"}
 *   {"type": "stdout" | "stderr", "data_base64"}     as the program writes
 *   {"type": "keepalive"}                            after keepalive_ms of quiet
 *   {"type": "result", "result": {...}}              the exec's answer, last
 *   {"type": "error", "error": {"code", "message"}}  or this, last
 *
 * The producer below runs on the front's threads when the client can take
 * more; between calls the connection is suspended (no thread held), and it
 * looks at the keeper's socket again a few milliseconds later.  Keepalives
 * keep a quiet command's stream alive through proxies that drop idle
 * connections.  A client that leaves mid-stream leaves the command running:
 * its end is recorded by the background loop, as for an exec that waited.
 */

/* Base64 output sent per line at most (the keeper frames up to its cap). */
#define CHUNK_MAX (48u * 1024)
#define STEP_MAX_MS 50

struct exec_stream {
	struct api *a;
	int fd; /* the keeper connection, until the answer came */
	int64_t sandbox_id, exec_id, memory_mib;
	unsigned keepalive_ms, polls;
	uint64_t start_ns; /* the request's arrival (0: not known) */
	uint64_t last_ms; /* when a line was last made */
	struct dynbuf out; /* lines made and not yet sent */
	size_t sent;
	/* Bytes from the keeper not yet a whole frame: read as they come,
	 * never waited for (a frame the keeper could send only in part, its
	 * socket full, is finished when its program writes again or ends). */
	char *in;
	size_t in_len, in_cap;
	bool finished; /* the last line is made */
};

static void add_line(struct exec_stream *x, json_t *line)
{
	char *text = line ? json_dumps(line, JSON_COMPACT) : NULL;

	json_decref(line);
	if (!text || dynbuf_adds(&x->out, text) < 0 || dynbuf_add(&x->out, "\n", 1) < 0)
		x->finished = true; /* out of memory: the stream ends short */
	free(text);
	x->last_ms = monotonic_ms();
}

static void add_error(struct exec_stream *x, enum err_kind kind, const char *msg)
{
	add_line(x, json_pack("{s:s, s:{s:s, s:s}}", "type", "error", "error", "code",
			      err_code(kind), "message", msg));
	x->finished = true;
}

/* The command ended with no answer (its sandbox ended, its keeper died):
 * recorded, and said. */
static void lost_answer(struct exec_stream *x, struct store *st, const struct err *ke)
{
	struct store_sandbox s = {0};
	struct err e;
	char msg[512];

	if (st)
		record_exec(st, x->exec_id, NULL, x->memory_mib);
	if (st && store_sandbox_get(st, x->sandbox_id, &s, &e) == 0 && !live(&s)) {
		snprintf(msg, sizeof(msg), "sandbox %lld was %s while the command ran%s%s",
			 (long long)x->sandbox_id, s.state, s.end_reason[0] ? ": " : "",
			 s.end_reason);
		add_error(x, ERR_NOT_FOUND, msg);
	} else if (keeper_missing(ke)) {
		snprintf(msg, sizeof(msg), "sandbox %lld is lost: %s", (long long)x->sandbox_id,
			 ke->msg);
		add_error(x, ERR_NOT_FOUND, msg);
	} else {
		add_error(x, ke->kind, ke->msg);
	}
	store_sandbox_clear(&s);
}

/* The most bytes of one frame from the keeper: a head, and the data of an
 * output frame (at most the exec's cap). */
#define FRAME_MAX (SBX_HEAD_MAX + (size_t)(2u << 20) + SBX_PREFIX_LEN)

/* One whole frame from the keeper: output, or the answer. */
static void take_frame(struct exec_stream *x, json_t *head, const char *data, size_t len)
{
	struct err e;
	struct store *st = api_thread_store(x->a, &e);

	if (sbx_error_of(head, &e) < 0) {
		lost_answer(x, st, &e);
		json_decref(head);
		return;
	}
	const char *stream = json_string_value(json_object_get(head, "output"));
	if (stream) {
		for (size_t off = 0; off < len; off += CHUNK_MAX) {
			size_t n = len - off < CHUNK_MAX ? len - off : CHUNK_MAX;
			char *b64 = base64_of(data + off, n);
			add_line(x, b64 ? json_pack("{s:s, s:s}", "type", stream, "data_base64", b64)
					: NULL);
			free(b64);
		}
		json_decref(head);
		return;
	}
	/* No store: the answer cannot be recorded (the exec stays `running`
	 * until its sandbox ends, then `unknown`), but the client still learns. */
	json_t *doc = st ? exec_result(x->a, st, head, x->exec_id, x->memory_mib) : head;
	add_line(x, json_pack("{s:s, s:o}", "type", "result", "result", doc));
	x->finished = true;
	if (x->start_ns)
		metrics_observe_sandbox(x->a->metrics, "exec", now_ns() - x->start_ns);
}

/* Read what the keeper sent, without waiting, and take each whole frame. */
static void read_keeper(struct exec_stream *x)
{
	struct err e;
	bool eof = false;

	for (;;) {
		if (x->in_cap - x->in_len < 65536) {
			size_t cap = x->in_cap ? 2 * x->in_cap : 131072;
			char *p = cap <= 2 * FRAME_MAX ? realloc(x->in, cap) : NULL;
			if (!p) {
				err_set(&e, ENOMEM, "the keeper's frames");
				lost_answer(x, api_thread_store(x->a, &e), &e);
				break;
			}
			x->in = p;
			x->in_cap = cap;
		}
		ssize_t n = recv(x->fd, x->in + x->in_len, x->in_cap - x->in_len, MSG_DONTWAIT);
		if (n > 0) {
			x->in_len += (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			eof = true;
		break;
	}
	size_t off = 0;
	while (!x->finished) {
		json_t *head = NULL;
		const char *data;
		size_t len, used;
		int r = sbx_frame_take(x->in + off, x->in_len - off, 2u << 20, &head, &data, &len,
				       &used, &e);
		if (r < 0)
			lost_answer(x, api_thread_store(x->a, &e), &e);
		if (r <= 0)
			break;
		take_frame(x, head, data, len);
		off += used;
	}
	memmove(x->in, x->in + off, x->in_len - off);
	x->in_len -= off;
	if (eof && !x->finished) {
		err_set(&e, ECONNRESET, "the keeper's connection ended with no answer");
		lost_answer(x, api_thread_store(x->a, &e), &e);
	}
	if (x->finished) {
		close(x->fd);
		x->fd = -1;
	}
}

static long produce(void *ctx, char *buf, size_t max, bool last_call, unsigned *again_ms)
{
	struct exec_stream *x = ctx;

	for (;;) {
		if (x->sent < x->out.len) {
			size_t n = x->out.len - x->sent < max ? x->out.len - x->sent : max;
			memcpy(buf, x->out.s + x->sent, n);
			x->sent += n;
			if (x->sent == x->out.len) {
				dynbuf_free(&x->out);
				x->sent = 0;
			}
			x->polls = 0;
			return (long)n;
		}
		if (x->finished)
			return HTTP_STREAM_END;
		struct pollfd p = {.fd = x->fd, .events = POLLIN};
		if (poll(&p, 1, 0) > 0) {
			read_keeper(x);
			continue;
		}
		if (last_call) {
			add_error(x, ERR_UNAVAILABLE,
				  "the server is stopping; the exec's sandbox goes with it");
			continue;
		}
		if (monotonic_ms() - x->last_ms >= x->keepalive_ms) {
			add_line(x, json_pack("{s:s}", "type", "keepalive"));
			continue;
		}
		x->polls++;
		unsigned ms = 5u << (x->polls < 4 ? x->polls : 4);
		*again_ms = ms < STEP_MAX_MS ? ms : STEP_MAX_MS;
		return 0;
	}
}

static void stream_free(void *ctx)
{
	struct exec_stream *x = ctx;

	if (x->fd >= 0) {
		/* The client left first: the command still runs; its end is
		 * recorded when it comes (output frames before it are read
		 * and dropped there). */
		struct call_hold h = {.fd = x->fd, .exec_id = x->exec_id, .memory_mib = x->memory_mib};
		sandbox_adopt_exec(&h);
	}
	dynbuf_free(&x->out);
	free(x->in);
	free(x);
}

void exec_stream_start(struct call *c, int fd, int64_t sandbox_id, int64_t exec_id,
		       int64_t memory_mib, unsigned keepalive_ms)
{
	struct exec_stream *x = calloc(1, sizeof(*x));

	if (!x) {
		close(fd);
		record_exec(c->st, exec_id, NULL, memory_mib);
		answer_fail(c->rs, ERR_INTERNAL, "out of memory");
		return;
	}
	*x = (struct exec_stream){.a = c->a,
				  .fd = fd,
				  .sandbox_id = sandbox_id,
				  .exec_id = exec_id,
				  .memory_mib = memory_mib,
				  .keepalive_ms = keepalive_ms,
				  .start_ns = c->rq->first_ns};
	/* Lines wait here only until the client takes them; a client that
	 * takes nothing holds at most what one command may stream. */
	dynbuf_init(&x->out, 16u << 20);
	add_line(x, json_pack("{s:s, s:I, s:I}", "type", "started", "exec_id", (json_int_t)exec_id,
			      "sandbox_id", (json_int_t)sandbox_id));
	c->rs->status = 200;
	c->rs->content_type = "application/x-ndjson";
	c->rs->stream = produce;
	c->rs->stream_ctx = x;
	c->rs->stream_free = stream_free;
}
