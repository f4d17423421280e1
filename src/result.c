/* The outcome of one sandboxed run: verdict, usage, captured output; JSON and text forms. */
#include "result.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static const char *const status_names[] = {
	[RUN_OK] = "ok",
	[RUN_NONZERO_EXIT] = "nonzero_exit",
	[RUN_SIGNALED] = "signaled",
	[RUN_TIMEOUT] = "timeout",
	[RUN_MEMORY_LIMIT] = "memory_limit",
	[RUN_ERROR] = "error",
};

static const char *const limit_names[LIMIT_HIT_COUNT] = {
	"cpu", "wall", "memory", "pids", "fsize", "disk", "output", "nofile", "seccomp",
};

const char *run_status_name(enum run_status s)
{
	if ((unsigned)s < sizeof(status_names) / sizeof(status_names[0]))
		return status_names[s];
	return "error";
}

const char *limit_hit_name(unsigned bit_index)
{
	return bit_index < LIMIT_HIT_COUNT ? limit_names[bit_index] : "?";
}

int run_result_init(struct run_result *r, size_t output_cap)
{
	memset(r, 0, sizeof(*r));
	r->exit_code = -1;
	if (capbuf_init(&r->out, output_cap) < 0)
		return -1;
	if (capbuf_init(&r->err, output_cap) < 0) {
		capbuf_free(&r->out);
		return -1;
	}
	return 0;
}

void run_result_free(struct run_result *r)
{
	capbuf_free(&r->out);
	capbuf_free(&r->err);
}

/* A JSON string of arbitrary bytes, repaired as UTF-8 (see capbuf.h). */
static json_t *bytes_json(const char *data, size_t n, bool cut)
{
	size_t len;
	char *s = utf8_sanitize(data, n, cut, &len);
	json_t *j;

	if (!s)
		return NULL;
	j = json_stringn_nocheck(s, len);
	free(s);
	return j;
}

static json_t *text_json(const struct capbuf *b)
{
	return bytes_json(b->data, b->len, b->truncated);
}

json_t *run_result_to_json(const struct run_result *r)
{
	json_t *hits = json_array();
	json_t *o;

	if (!hits)
		return NULL;
	for (unsigned i = 0; i < LIMIT_HIT_COUNT; i++)
		if (r->limits_hit & (1u << i))
			json_array_append_new(hits, json_string(limit_names[i]));
	o = json_pack("{s:i, s:s, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:o, s:o, s:b, s:b, s:I, "
		      "s:I, s:o}",
		      "schema_version", 1,
		      "status", run_status_name(r->status),
		      "limits_hit", hits,
		      "exit_code", r->exit_code >= 0 ? json_integer(r->exit_code) : json_null(),
		      "signal", r->signal > 0 ? json_integer(r->signal) : json_null(),
		      "cpu_ms", (json_int_t)r->cpu_ms,
		      "wall_ms", (json_int_t)r->wall_ms,
		      "peak_memory_kib", (json_int_t)r->peak_memory_kib,
		      "peak_pids", (json_int_t)r->peak_pids,
		      "stdout", text_json(&r->out),
		      "stderr", text_json(&r->err),
		      "stdout_truncated", r->out.truncated,
		      "stderr_truncated", r->err.truncated,
		      "stdout_bytes", (json_int_t)r->out.total,
		      "stderr_bytes", (json_int_t)r->err.total,
		      "message", r->message[0] ? bytes_json(r->message, strlen(r->message), false)
					 : json_null());
	if (o && r->signal > 0) {
		const char *abbrev = sigabbrev_np(r->signal);
		json_object_set_new(o, "signal_name", abbrev ? json_sprintf("SIG%s", abbrev)
							     : json_null());
	} else if (o) {
		json_object_set_new(o, "signal_name", json_null());
	}
	return o;
}

static void print_stream(FILE *f, const char *label, const struct capbuf *b)
{
	size_t len;
	char *s;

	if (b->total == 0)
		return;
	s = utf8_sanitize(b->data, b->len, b->truncated, &len);
	fprintf(f, "--- %s (%llu bytes%s) ---\n", label, (unsigned long long)b->total,
		b->truncated ? ", truncated" : "");
	if (s) {
		fwrite(s, 1, len, f);
		if (len > 0 && s[len - 1] != '\n')
			fputc('\n', f);
		free(s);
	}
}

void run_result_print_text(FILE *f, const struct run_result *r)
{
	fprintf(f, "status: %s", run_status_name(r->status));
	if (r->exit_code >= 0)
		fprintf(f, " (exit code %d)", r->exit_code);
	if (r->signal > 0)
		fprintf(f, " (signal %d, %s)", r->signal, strsignal(r->signal));
	fputc('\n', f);
	if (r->limits_hit) {
		fputs("limits hit:", f);
		for (unsigned i = 0; i < LIMIT_HIT_COUNT; i++)
			if (r->limits_hit & (1u << i))
				fprintf(f, " %s", limit_names[i]);
		fputc('\n', f);
	}
	if (r->message[0])
		fprintf(f, "message: %s\n", r->message);
	fprintf(f, "cpu %llu ms, wall %llu ms, peak memory %llu KiB, peak processes %llu\n",
		(unsigned long long)r->cpu_ms, (unsigned long long)r->wall_ms,
		(unsigned long long)r->peak_memory_kib, (unsigned long long)r->peak_pids);
	print_stream(f, "stdout", &r->out);
	print_stream(f, "stderr", &r->err);
}

int run_result_exit_status(const struct run_result *r)
{
	if (r->status == RUN_ERROR)
		return err_exit_status(ERR_INTERNAL);
	/* Truncated capture is not a failure of the program: the cap only
	 * limits what is kept. */
	return r->status == RUN_OK && (r->limits_hit & ~(unsigned)LIMIT_HIT_OUTPUT) == 0 ? 0 : 1;
}

void run_result_classify(struct run_result *res, const struct limits *l, unsigned killed_for,
			 bool oom_killed, const char *exec_failure)
{
	if ((killed_for & LIMIT_HIT_CPU) || res->cpu_ms > l->cpu_ms) {
		res->status = RUN_TIMEOUT;
		res->limits_hit |= LIMIT_HIT_CPU;
		snprintf(res->message, sizeof(res->message), "CPU time limit of %.3f s exceeded",
			 (double)l->cpu_ms / 1000);
	} else if (killed_for & LIMIT_HIT_WALL) {
		res->status = RUN_TIMEOUT;
		res->limits_hit |= LIMIT_HIT_WALL;
		snprintf(res->message, sizeof(res->message), "wall-clock limit of %.3f s exceeded",
			 (double)l->wall_ms / 1000);
	} else if (oom_killed || (killed_for & LIMIT_HIT_MEMORY)) {
		res->status = RUN_MEMORY_LIMIT;
		res->limits_hit |= LIMIT_HIT_MEMORY;
		snprintf(res->message, sizeof(res->message), "memory limit of %llu MiB exceeded",
			 (unsigned long long)(l->memory_bytes >> 20));
	} else if (res->signal > 0) {
		res->status = RUN_SIGNALED;
		if (res->signal == SIGSYS) {
			res->limits_hit |= LIMIT_HIT_SECCOMP;
			snprintf(res->message, sizeof(res->message),
				 "killed by the seccomp filter (forbidden system call)");
		} else if (res->signal == SIGXFSZ) {
			res->limits_hit |= LIMIT_HIT_FSIZE;
			snprintf(res->message, sizeof(res->message),
				 "file size limit of %llu MiB exceeded",
				 (unsigned long long)(l->fsize_bytes >> 20));
		} else if (res->signal == SIGXCPU && res->cpu_ms >= l->cpu_ms) {
			/* RLIMIT_CPU's backstop; below the limit, a SIGXCPU is not
			 * the limit's (the filter keeps programs from raising it). */
			res->status = RUN_TIMEOUT;
			res->limits_hit |= LIMIT_HIT_CPU;
		}
	} else if (res->exit_code == 0) {
		res->status = RUN_OK;
	} else {
		res->status = RUN_NONZERO_EXIT;
		if (exec_failure)
			snprintf(res->message, sizeof(res->message), "%s", exec_failure);
	}
}
