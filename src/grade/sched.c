/* The grading scheduler: a pool of worker processes (theory of operation in sched.h). */
#include "grade/sched.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox.h"
#include "util.h"

#define STOP_GRACE_NS (2ull * 1000000000ull)

/* Exit codes of a worker, seen only in messages. */
enum { WORKER_EXIT_SETUP = 70, WORKER_EXIT_PROTOCOL = 71, WORKER_EXIT_NOMEM = 72 };

struct job {
	uint64_t id, budget_ns;
	char *arg; /* owned */
	unsigned attempts;
};

struct worker {
	pid_t pid; /* 0: not running */
	int fd;	   /* the owner's end of the socketpair (MSG_DONTWAIT); -1: told to exit */
	bool busy;
	struct job job; /* when busy */
	uint64_t deadline_ns;
	unsigned char hdr[8]; /* the result's length */
	char *buf;	      /* the result being received, room for a '\n'; owned */
	size_t len, got;      /* got: bytes received, the header's included */
};

/* A FIFO of fixed-size items: the queue of jobs, the events not yet taken. */
struct fifo {
	char *items;
	size_t size, head, tail, cap; /* items [head, tail) */
};

struct sched {
	struct sched_options o;
	struct worker workers[SCHED_MAX_WORKERS];
	struct fifo queue, events;
	size_t submitted, respawns;
	bool draining, out_of_memory;
};

static int fifo_push(struct fifo *f, const void *item)
{
	if (f->tail == f->cap && f->head >= f->cap / 2 && f->head > 0) {
		memmove(f->items, f->items + f->head * f->size, (f->tail - f->head) * f->size);
		f->tail -= f->head;
		f->head = 0;
	} else if (f->tail == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 16;
		char *p = realloc(f->items, ncap * f->size);
		if (!p)
			return -1;
		f->items = p;
		f->cap = ncap;
	}
	memcpy(f->items + f->tail++ * f->size, item, f->size);
	return 0;
}

static bool fifo_pop(struct fifo *f, void *ret)
{
	if (f->head == f->tail)
		return false;
	memcpy(ret, f->items + f->head++ * f->size, f->size);
	return true;
}

static void push_event(struct sched *s, const struct sched_result *r)
{
	if (fifo_push(&s->events, r) < 0) {
		s->out_of_memory = true;
		json_decref(r->doc);
		free(r->line);
	}
}

static void note(struct sched *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct sched *s, const char *fmt, ...)
{
	struct sched_result r = {.event = SCHED_NOTE};
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r.why, sizeof(r.why), fmt, ap);
	va_end(ap);
	push_event(s, &r);
}

/* A job is over: its event, and its arg freed. */
static void job_end(struct sched *s, struct job *j, struct sched_result *r)
{
	r->id = j->id;
	r->attempts = j->attempts;
	push_event(s, r);
	free(j->arg);
	j->arg = NULL;
}

/* w's job is over: its event; w is idle. */
static void worker_job_end(struct sched *s, struct worker *w, struct sched_result *r)
{
	w->busy = false;
	job_end(s, &w->job, r);
}

/* Running and taking jobs (not told to exit). */
static bool connected(const struct worker *w)
{
	return w->pid != 0 && w->fd >= 0;
}

static void worker_reset_buf(struct worker *w)
{
	free(w->buf);
	w->buf = NULL;
	w->len = w->got = 0;
}

static int recv_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, (char *)buf + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return got == 0 && n == 0 ? 0 : -1;
		got += (size_t)n;
	}
	return 1;
}

/* A worker: run what the owner hands out until it closes the socket. */
static void worker_main(struct sched *s, int fd, pid_t owner) __attribute__((noreturn));
static void worker_main(struct sched *s, int fd, pid_t owner)
{
	struct sigaction ign = {.sa_handler = SIG_IGN}, dfl = {.sa_handler = SIG_DFL};
	sigset_t none;

	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGTERM, &dfl, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Never work for an owner that is gone: nothing would take the result. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != owner)
		_exit(WORKER_EXIT_SETUP);
	for (;;) {
		unsigned char hdr[12];
		char arg[SCHED_ARG_MAX];
		struct sched_job job = {.arg = arg};
		uint32_t arg_len;
		sandbox_pool_fill(); /* the jail's prepared jails, made while idle */
		int r = recv_full(fd, hdr, sizeof(hdr));

		if (r == 0) {
			sandbox_pool_drain(); /* pre-started microVMs: their files too */
			_exit(0);
		}
		if (r < 0)
			_exit(WORKER_EXIT_PROTOCOL);
		memcpy(&job.id, hdr, 8);
		memcpy(&arg_len, hdr + 8, 4);
		if (arg_len >= SCHED_ARG_MAX || (arg_len && recv_full(fd, arg, arg_len) != 1))
			_exit(WORKER_EXIT_PROTOCOL);
		arg[arg_len] = '\0';
		json_t *res = s->o.run(s->o.ctx, &job);
		char *text = res ? json_dumps(res, JSON_COMPACT) : NULL;
		json_decref(res);
		if (!text)
			_exit(WORKER_EXIT_NOMEM);
		uint64_t len = strlen(text);
		if (send_all(fd, &len, sizeof(len)) < 0 || send_all(fd, text, len) < 0) {
			sandbox_pool_drain();
			_exit(0); /* the owner is gone */
		}
		free(text);
	}
}

static int worker_spawn(struct sched *s, struct worker *w, struct err *e)
{
	int sv[2];
	pid_t owner = getpid(), pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_set(e, errno, "socketpair");
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		xclose(sv[0]);
		xclose(sv[1]);
		return err_set(e, errno, "fork");
	}
	if (pid == 0) {
		/* No other worker's socket: its EOF must mean that worker is gone. */
		close(sv[0]);
		for (unsigned i = 0; i < s->o.workers; i++)
			xclose(s->workers[i].fd);
		if (s->o.in_worker)
			s->o.in_worker(s->o.ctx);
		worker_main(s, sv[1], owner);
	}
	close(sv[1]);
	*w = (struct worker){.pid = pid, .fd = sv[0]};
	return 0;
}

/* Kill by pid and reap (a child not yet reaped keeps its pid, so the kill
 * cannot hit another process); describe how it ended. */
static void worker_reap(struct worker *w, char *how, size_t len)
{
	int st = 0;

	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	if (WIFSIGNALED(st))
		snprintf(how, len, "was killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(how, len, "exited with status %d", WEXITSTATUS(st));
	w->pid = 0;
	w->fd = xclose(w->fd);
	worker_reset_buf(w);
}

/* A new worker in w's place; `failed`: w failed, and such replacements are capped. */
static void worker_replace(struct sched *s, struct worker *w, bool failed)
{
	struct err e;

	if (s->draining)
		return;
	if (failed && s->respawns >= s->submitted * s->o.attempts + SCHED_MAX_WORKERS) {
		note(s, "too many grading workers failed; not starting another");
		return;
	}
	s->respawns += failed;
	if (worker_spawn(s, w, &e) < 0)
		note(s, "cannot start a grading worker: %s", e.msg);
}

/*
 * A worker failed: it died, broke the protocol or overran its budget
 * (`why`; NULL: it died, say how).  Its job runs again or fails; the
 * worker is replaced.
 */
static void worker_lost(struct sched *s, struct worker *w, const char *why)
{
	struct sched_result r = {.pid = w->pid};
	char how[256];

	worker_reap(w, how, sizeof(how));
	snprintf(r.why, sizeof(r.why), "%s", why ? why : how);
	if (w->busy && w->job.attempts < s->o.attempts && !s->draining &&
	    fifo_push(&s->queue, &w->job) == 0) {
		w->busy = false;
		r.event = SCHED_RETRY;
		r.id = w->job.id;
		r.attempts = w->job.attempts;
		push_event(s, &r);
	} else if (w->busy) {
		r.event = s->draining ? SCHED_CANCELLED : SCHED_FAILED;
		worker_job_end(s, w, &r);
	}
	worker_replace(s, w, true);
}

/* 1: a whole result is in w->buf (followed by '\n'); 0: more to come;
 * -1: the worker is gone or broke the protocol (`why` empty: gone). */
static int worker_receive(struct sched *s, struct worker *w, char *why, size_t why_len)
{
	const size_t hdr = sizeof(w->hdr);

	why[0] = '\0';
	for (;;) {
		bool in_hdr = w->got < hdr;
		ssize_t n = in_hdr ? recv(w->fd, w->hdr + w->got, hdr - w->got, MSG_DONTWAIT)
				   : recv(w->fd, w->buf + w->got - hdr, hdr + w->len - w->got,
					  MSG_DONTWAIT);
		uint64_t len;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		w->got += (size_t)n;
		if (!in_hdr && w->got == hdr + w->len) {
			w->buf[w->len] = '\n';
			return 1;
		}
		if (!in_hdr || w->got < hdr)
			continue;
		memcpy(&len, w->hdr, sizeof(len));
		if (!w->busy) {
			snprintf(why, why_len, "sent a result nobody asked for");
			return -1;
		}
		if (len == 0 || len > s->o.result_max) {
			snprintf(why, why_len, "sent a result of %llu bytes (the cap is %llu MiB)",
				 (unsigned long long)len,
				 (unsigned long long)(s->o.result_max >> 20));
			return -1;
		}
		w->buf = malloc((size_t)len + 1);
		if (!w->buf) {
			snprintf(why, why_len, "sent a result too large to hold in memory");
			return -1;
		}
		w->len = (size_t)len;
	}
}

/* A whole result arrived from `w`: check it and hand it on. */
static void worker_result(struct sched *s, struct worker *w)
{
	struct sched_result r = {.event = SCHED_RESULT};
	json_error_t je;
	char why[256];

	if (memchr(w->buf, '\n', w->len)) {
		snprintf(why, sizeof(why), "sent a result with a raw newline");
		goto out_lost;
	}
	r.doc = json_loadb(w->buf, w->len, 0, &je);
	if (!r.doc || !json_is_object(r.doc)) {
		snprintf(why, sizeof(why), "sent a result that is not a JSON object: %s",
			 r.doc ? "" : je.text);
		goto out_lost;
	}
	if (s->o.check && s->o.check(s->o.ctx, w->job.id, r.doc, why, sizeof(why)) < 0)
		goto out_lost;
	r.line = w->buf;
	r.len = w->len + 1;
	w->buf = NULL;
	worker_reset_buf(w);
	worker_job_end(s, w, &r);
	if (s->draining)
		w->fd = xclose(w->fd); /* it exits */
	return;
out_lost:
	json_decref(r.doc);
	worker_lost(s, w, why);
}

static unsigned workers_alive(const struct sched *s)
{
	unsigned alive = 0;

	for (unsigned i = 0; i < s->o.workers; i++)
		alive += connected(&s->workers[i]);
	return alive;
}

/* Reap the workers told to exit that are gone: how many still run. */
static unsigned reap_exited(struct sched *s)
{
	unsigned left = 0;

	for (unsigned i = 0; i < s->o.workers; i++) {
		struct worker *w = &s->workers[i];
		if (w->pid != 0 && w->fd < 0 && waitpid(w->pid, NULL, WNOHANG) == w->pid)
			w->pid = 0;
		left += w->pid != 0;
	}
	return left;
}

/* Hand one queued job to each idle worker. */
static void dispatch(struct sched *s)
{
	for (unsigned i = 0; i < s->o.workers && s->queue.head < s->queue.tail && !s->draining;) {
		struct worker *w = &s->workers[i];
		struct job *j = (struct job *)(s->queue.items + s->queue.head * s->queue.size);
		char msg[12 + SCHED_ARG_MAX];
		uint32_t arg_len = (uint32_t)strlen(j->arg);

		if (!connected(w) || w->busy) {
			i++;
			continue;
		}
		memcpy(msg, &j->id, 8);
		memcpy(msg + 8, &arg_len, 4);
		memcpy(msg + 12, j->arg, arg_len);
		ssize_t n = send(w->fd, msg, 12 + arg_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n != (ssize_t)(12 + arg_len)) {
			/* Its socket buffer is empty (one job at a time), so
			 * this is a dead worker; its replacement, if any, is
			 * tried next (replacements are capped, so this ends). */
			worker_lost(s, w, NULL);
			continue;
		}
		i++;
		fifo_pop(&s->queue, &w->job);
		w->job.attempts++;
		w->busy = true;
		w->deadline_ns = now_ns() + w->job.budget_ns;
	}
}

int sched_new(const struct sched_options *o, struct sched **ret, struct err *e)
{
	struct sched *s;
	struct err spawn;

	if (o->workers > SCHED_MAX_WORKERS || !o->run)
		return err_set(e, EINVAL, "sched_new");
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_set(e, ENOMEM, "starting the grading workers");
	s->o = *o;
	s->queue.size = sizeof(struct job);
	s->events.size = sizeof(struct sched_result);
	for (unsigned i = 0; i < SCHED_MAX_WORKERS; i++)
		s->workers[i].fd = -1;
	for (unsigned i = 0; i < o->workers; i++) {
		if (worker_spawn(s, &s->workers[i], &spawn) < 0) {
			note(s, "cannot start a grading worker: %s", spawn.msg);
			break;
		}
	}
	*ret = s;
	return 0;
}

int sched_submit(struct sched *s, const struct sched_job *job, struct err *e)
{
	struct job j = {.id = job->id, .budget_ns = job->budget_ns};

	if (s->draining)
		return err_set(e, 0, "the grading workers are stopping");
	if (strlen(job->arg) >= SCHED_ARG_MAX)
		return err_set(e, ENAMETOOLONG, "job %llu", (unsigned long long)job->id);
	j.arg = strdup(job->arg);
	if (!j.arg || fifo_push(&s->queue, &j) < 0) {
		free(j.arg);
		return err_set(e, ENOMEM, "job %llu", (unsigned long long)job->id);
	}
	s->submitted++;
	return 0;
}

size_t sched_pending(const struct sched *s)
{
	size_t n = s->queue.tail - s->queue.head + s->events.tail - s->events.head;

	for (unsigned i = 0; i < s->o.workers; i++)
		n += s->workers[i].busy;
	return n;
}

int sched_next_result(struct sched *s, int timeout_ms, struct sched_result *ret, struct err *e)
{
	struct pollfd pfd[SCHED_MAX_WORKERS + 1];
	struct worker *owner[SCHED_MAX_WORKERS + 1];
	char why[256];
	struct job j;
	int k = 0, r;

	dispatch(s);
	if (s->out_of_memory)
		return err_set(e, ENOMEM, "keeping the results of the grading workers");
	if (fifo_pop(&s->events, ret))
		return 1;
	if (workers_alive(s) == 0 && fifo_pop(&s->queue, &j)) {
		/* Not one worker could be started: what is left fails. */
		*ret = (struct sched_result){.event = SCHED_FAILED,
					     .id = j.id,
					     .attempts = j.attempts,
					     .why = "no grading worker could be started"};
		free(j.arg);
		return 1;
	}
	if (s->o.wake_fd >= 0)
		pfd[k++] = (struct pollfd){.fd = s->o.wake_fd, .events = POLLIN};
	for (unsigned i = 0; i < s->o.workers; i++) {
		if (!connected(&s->workers[i]))
			continue;
		owner[k] = &s->workers[i];
		pfd[k++] = (struct pollfd){.fd = s->workers[i].fd, .events = POLLIN};
	}
	r = poll(pfd, (nfds_t)k, timeout_ms);
	if (r < 0 && errno != EINTR)
		return err_set(e, errno, "poll");
	if (r > 0 && s->o.wake_fd >= 0 && (pfd[0].revents & POLLIN))
		return 0;
	for (int i = s->o.wake_fd >= 0; r > 0 && i < k; i++) {
		struct worker *w = owner[i];
		if (!pfd[i].revents || !connected(w))
			continue;
		int got = worker_receive(s, w, why, sizeof(why));
		if (got < 0)
			worker_lost(s, w, why[0] ? why : NULL);
		else if (got > 0)
			worker_result(s, w);
	}
	uint64_t t = now_ns();
	for (unsigned i = 0; i < s->o.workers; i++) {
		struct worker *w = &s->workers[i];
		if (w->pid != 0 && w->busy && t > w->deadline_ns) {
			snprintf(why, sizeof(why), "took longer than %llu s",
				 (unsigned long long)(w->job.budget_ns / 1000000000ull));
			worker_lost(s, w, why);
		}
	}
	reap_exited(s);
	if (s->out_of_memory)
		return err_set(e, ENOMEM, "keeping the results of the grading workers");
	return fifo_pop(&s->events, ret) ? 1 : 0;
}

int sched_cancel(struct sched *s, uint64_t id)
{
	struct sched_result r = {.event = SCHED_CANCELLED};
	struct job *q = (struct job *)s->queue.items;
	char how[256];

	for (size_t i = s->queue.head; i < s->queue.tail; i++) {
		if (q[i].id != id)
			continue;
		job_end(s, &q[i], &r);
		memmove(&q[i], &q[i + 1], (s->queue.tail - i - 1) * sizeof(*q));
		s->queue.tail--;
		return 0;
	}
	for (unsigned i = 0; i < s->o.workers; i++) {
		struct worker *w = &s->workers[i];
		if (w->pid == 0 || !w->busy || w->job.id != id)
			continue;
		worker_reap(w, how, sizeof(how)); /* its sandbox dies with it */
		worker_job_end(s, w, &r);
		worker_replace(s, w, false);
		return 0;
	}
	return -1;
}

void sched_drain(struct sched *s)
{
	struct sched_result r = {.event = SCHED_CANCELLED};
	struct job j;

	s->draining = true;
	while (fifo_pop(&s->queue, &j))
		job_end(s, &j, &r);
	for (unsigned i = 0; i < s->o.workers; i++)
		if (!s->workers[i].busy)
			s->workers[i].fd = xclose(s->workers[i].fd);
}

struct sched *sched_free(struct sched *s)
{
	struct timespec ts = {0, 10 * 1000000L};
	struct sched_result r;
	struct job j;
	char how[256];

	if (!s)
		return NULL;
	for (unsigned i = 0; i < s->o.workers; i++) {
		struct worker *w = &s->workers[i];
		w->fd = xclose(w->fd);
		if (w->pid != 0 && w->busy)
			kill(w->pid, SIGTERM); /* its sandbox dies with it */
	}
	for (uint64_t end = now_ns() + STOP_GRACE_NS; reap_exited(s) > 0 && now_ns() < end;)
		nanosleep(&ts, NULL);
	for (unsigned i = 0; i < s->o.workers; i++) {
		worker_reap(&s->workers[i], how, sizeof(how)); /* frees its buffer */
		if (s->workers[i].busy)
			free(s->workers[i].job.arg);
	}
	while (fifo_pop(&s->queue, &j))
		free(j.arg);
	while (fifo_pop(&s->events, &r))
		sched_result_clear(&r);
	free(s->queue.items);
	free(s->events.items);
	free(s);
	return NULL;
}

void sched_result_clear(struct sched_result *r)
{
	json_decref(r->doc);
	free(r->line);
	r->doc = NULL;
	r->line = NULL;
}
