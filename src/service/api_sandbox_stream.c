/* The API's streamed sandbox commands: an exec's output as it comes, as NDJSON (docs/api.md, "Sandboxes"). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
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

/* One frame from the keeper: output, or the answer. */
static void take_frame(struct exec_stream *x)
{
	json_t *head = NULL;
	void *data = NULL;
	size_t len = 0;
	struct err e;
	struct store *st = api_thread_store(x->a, &e);

	if (sbx_recv(x->fd, &head, &data, &len, 2 * CHUNK_MAX + (1u << 20), &e) < 0 ||
	    sbx_error_of(head, &e) < 0) {
		lost_answer(x, st, &e);
		goto out;
	}
	const char *stream = json_string_value(json_object_get(head, "output"));
	if (stream) {
		for (size_t off = 0; off < len; off += CHUNK_MAX) {
			size_t n = len - off < CHUNK_MAX ? len - off : CHUNK_MAX;
			char *b64 = base64_of((const char *)data + off, n);
			add_line(x, b64 ? json_pack("{s:s, s:s}", "type", stream, "data_base64", b64)
					: NULL);
			free(b64);
		}
		goto out;
	}
	/* No store: the answer cannot be recorded (the exec stays `running`
	 * until its sandbox ends, then `unknown`), but the client still learns. */
	json_t *doc = st ? exec_result(x->a, st, head, x->exec_id, x->memory_mib) : head;
	head = NULL;
	add_line(x, json_pack("{s:s, s:o}", "type", "result", "result", doc));
	x->finished = true;
	if (x->start_ns)
		metrics_observe_sandbox(x->a->metrics, "exec", now_ns() - x->start_ns);
out:
	if (x->finished) {
		close(x->fd);
		x->fd = -1;
	}
	json_decref(head);
	free(data);
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
			take_frame(x);
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
