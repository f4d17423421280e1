/* The sandbox keeper's exec: one command in the sandbox, its output streamed when asked (docs/sandbox-keeper.md, "Frames"). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "dynbuf.h"
#include "result.h"
#include "runlimits.h"
#include "service/jsonreq.h"
#include "service/keeper.h"
#include "service/sbxwire.h"
#include "util.h"

/* The exec's stdin: a sealed memfd the program can read and not change. */
static int stdin_memfd(const void *data, size_t len, int *ret_fd, struct err *e)
{
	_cleanup_close_ int fd = memfd_create("proctor-stdin", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return err_set(e, errno, "memfd for stdin");
	if (write_all(fd, data, len) < 0 || lseek(fd, 0, SEEK_SET) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
		return err_set(e, errno, "fill the stdin memfd");
	*ret_fd = take_fd(&fd);
	return 0;
}

/* argv from a JSON array of 1..ARGV_MAX strings; the strings stay head's. */
static int parse_argv(const json_t *head, char ***ret, struct err *e)
{
	const json_t *a = json_object_get(head, "argv");
	size_t n = json_array_size(a), bytes = 0;

	if (!json_is_array(a) || n == 0 || n > ARGV_MAX)
		return err_setk(e, ERR_INPUT, 0, "'argv' must be an array of 1 to %d strings",
				ARGV_MAX);
	char **v = calloc(n + 1, sizeof(char *));
	if (!v)
		return err_set(e, ENOMEM, "argv");
	for (size_t i = 0; i < n; i++) {
		const json_t *s = json_array_get(a, i);
		if (!json_is_string(s)) {
			free(v);
			return err_setk(e, ERR_INPUT, 0, "'argv' must be an array of strings");
		}
		bytes += json_string_length(s) + 1;
		v[i] = (char *)json_string_value(s);
	}
	bool empty = v[0][0] == '\0';
	if (empty || bytes > ARGV_BYTES_MAX) {
		free(v);
		if (empty)
			return err_setk(e, ERR_INPUT, 0,
					"'argv' names no program (its first string is empty)");
		return err_setk(e, ERR_INPUT, 0, "'argv' holds more than %u bytes", ARGV_BYTES_MAX);
	}
	*ret = v;
	return 0;
}

/*
 * A streamed exec's output on its way to the caller, as the run goes.  The
 * keeper's one thread is also the run's supervisor (on_output is called
 * from its loop), so it never blocks on a caller that reads slowly: output
 * waits here, each stream up to its cap (what the result keeps), and goes
 * out in frames as the socket takes it; the rest is sent, blocking, before
 * the answer.  A caller that is gone breaks the stream, not the run.
 */
struct out_stream {
	int fd;
	uint64_t left[3];	/* bytes still to stream, by stream (1, 2) */
	struct dynbuf held[3];	/* read and not yet framed, by stream */
	struct dynbuf wire;	/* the frame being sent */
	size_t sent;		/* of wire */
	bool broken;
};

/* Send what the socket takes now (all of it when `block`). */
static void stream_flush(struct out_stream *o, bool block)
{
	struct err e;

	while (!o->broken) {
		if (o->sent < o->wire.len) {
			ssize_t n = send(o->fd, o->wire.s + o->sent, o->wire.len - o->sent,
					 MSG_NOSIGNAL | (block ? 0 : MSG_DONTWAIT));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && !block && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			if (n <= 0) {
				o->broken = true;
				return;
			}
			o->sent += (size_t)n;
			continue;
		}
		int s = o->held[1].len ? 1 : o->held[2].len ? 2 : 0;
		if (!s)
			return;
		dynbuf_free(&o->wire);
		o->sent = 0;
		json_t *head = json_pack("{s:s}", "output", s == 1 ? "stdout" : "stderr");
		if (!head || sbx_frame_add(&o->wire, head, o->held[s].s, o->held[s].len, &e) < 0)
			o->broken = true;
		json_decref(head);
		o->held[s].len = 0;
	}
}

static void send_output(void *ctx, int stream, const char *buf, size_t len)
{
	struct out_stream *o = ctx;

	if (o->broken || stream < 1 || stream > 2 || !o->left[stream])
		return;
	if (len > o->left[stream])
		len = (size_t)o->left[stream];
	o->left[stream] -= len;
	if (dynbuf_add(&o->held[stream], buf, len) < 0)
		o->broken = true;
	stream_flush(o, false);
}

int op_exec(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
		   struct err *e)
{
	static const char *const members[] = {
	    "op",   "secret", "argv", "cwd", "env", "timeout_ms", "pids", "max_output_bytes",
	    "has_stdin", "stream", NULL};
	struct limits l;
	struct run_result res;
	char **argv = NULL, **env = NULL;
	size_t n_env = 0;
	const char *cwd = NULL;
	bool has_stdin = false, stream = false;
	int stdin_fd = -1, rc = -1;

	limits_default(&l);
	int64_t timeout_ms = (int64_t)l.wall_ms, pids = (int64_t)l.pids, out_max = OUTPUT_MAX;
	if (jsonreq_only(head, members, e) < 0 || parse_argv(head, &argv, e) < 0)
		return -1;
	if ((!json_is_null(json_object_get(head, "cwd")) &&
	     jsonreq_string(head, "cwd", false, PATH_ARG_MAX, &cwd, e) < 0) ||
	    jsonreq_int(head, "timeout_ms", false, 1, 86400000, &timeout_ms, e) < 0 ||
	    jsonreq_int(head, "pids", false, 1, 65536, &pids, e) < 0 ||
	    jsonreq_int(head, "max_output_bytes", false, 0, OUTPUT_MAX, &out_max, e) < 0 ||
	    jsonreq_bool(head, "has_stdin", false, &has_stdin, e) < 0 ||
	    jsonreq_bool(head, "stream", false, &stream, e) < 0)
		goto out;
	if (!has_stdin && len > 0) {
		err_setk(e, ERR_INPUT, 0, "data came with an exec whose has_stdin is false");
		goto out;
	}
	/* The create's environment, then the exec's: a later NAME wins. */
	env = calloc(k->n_env + 1, sizeof(char *));
	if (!env) {
		err_set(e, ENOMEM, "env");
		goto out;
	}
	for (; n_env < k->n_env; n_env++)
		if (!(env[n_env] = strdup(k->env[n_env]))) {
			err_set(e, ENOMEM, "env");
			goto out;
		}
	if (env_append(head, "env", &env, &n_env, e) < 0)
		goto out;
	if (has_stdin && stdin_memfd(data, len, &stdin_fd, e) < 0)
		goto out;

	/* The lease bounds every exec: its wall limit is the time left when
	 * that is shorter than the timeout asked for.  CPU time is vcpu
	 * seconds per wall second; memory and the writable tree are the
	 * sandbox's, and so is the largest file (the tree's size). */
	uint64_t now = monotonic_ms(), left = k->lease_end_ms > now ? k->lease_end_ms - now : 1;
	bool by_lease = left < (uint64_t)timeout_ms;
	l.wall_ms = by_lease ? left : (uint64_t)timeout_ms;
	l.cpu_ms = l.wall_ms * k->vcpu;
	/* A microVM under TCG computes this many times slower: its limits
	 * grow as a grading's do (docs/vm.md), never past the lease. */
	if (k->time_factor > 1.0) {
		l.cpu_ms = (uint64_t)((double)l.cpu_ms * k->time_factor + 0.5);
		if (!by_lease) {
			uint64_t wall = (uint64_t)((double)l.wall_ms * k->time_factor + 0.5);
			by_lease = wall > left;
			l.wall_ms = by_lease ? left : wall;
		}
	}
	l.memory_bytes = k->memory_bytes;
	l.disk_bytes = k->disk_bytes;
	l.fsize_bytes = k->disk_bytes;
	l.pids = (uint64_t)pids;
	l.output_bytes = (uint64_t)out_max;
	if (limits_check_host(&l, e) < 0)
		goto out;
	if (run_result_init(&res, (size_t)out_max) < 0) {
		err_set(e, ENOMEM, "the run's output");
		goto out;
	}
	/* Streamed: output frames go out as the run goes, then the answer. */
	struct out_stream os = {.fd = fd, .left = {0, (uint64_t)out_max, (uint64_t)out_max}};
	/* What waits is at most the cap of each stream, and one frame of it. */
	for (int i = 0; i < 3; i++)
		dynbuf_init(&os.held[i], (size_t)out_max);
	dynbuf_init(&os.wire, (size_t)out_max + 4096);
	const struct run_spec spec = {
	    .argv = argv,
	    .env = env,
	    .env_count = n_env,
	    .stdin_fd = stdin_fd,
	    .limits = l,
	    .cwd = cwd,
	    .time_factor = k->time_factor,
	    .on_output = stream ? send_output : NULL,
	    .on_output_ctx = &os,
	};
	int run = sandbox_run(k->sb, &spec, &res, e);
	if (stream) {
		stream_flush(&os, true);
		for (int i = 0; i < 3; i++)
			dynbuf_free(&os.held[i]);
		dynbuf_free(&os.wire);
	}
	if (run == 0) {
		json_t *answer = run_result_to_json(&res);
		if (answer)
			json_object_set_new(
			    answer, "lease_ended",
			    json_boolean(by_lease && (res.limits_hit & LIMIT_HIT_WALL)));
		rc = send_answer(fd, answer, NULL, 0, e);
	}
	run_result_free(&res);
out:
	xclose(stdin_fd);
	env_free(env, n_env);
	free(argv);
	return rc;
}

