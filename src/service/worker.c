/* proctor worker (worker.h). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "grade/assignment.h"
#include "grade/grade.h"
#include "grade/gradebook.h"
#include "grade/sched.h"
#include "sandbox.h"
#include "service/commands.h"
#include "service/files.h"
#include "service/policy.h"
#include "service/worker.h"
#include "store/store.h"
#include "util.h"

/* A job handed to a grading process. */
struct inflight {
	bool used;
	bool ready_sent;
	bool fenced; /* its lease is gone: cancelled, nothing to record */
	int64_t job_id;
	int64_t submission_id;
	int attempt;
	char token[STORE_LEASE_TOKEN_LEN + 1];
	uint64_t last_beat_ms;
	char spool[PATH_MAX];
	double max_memory_gib;
};

/* The last assignment a grading process loaded (most jobs share one). */
struct loaded_assignment {
	char dir[PATH_MAX];
	struct assignment *a;
};

/* A backend chosen for (isolation asked, image pinned), and whether this
 * process prepared it. */
struct backend_choice {
	const char *want;
	bool have_image;
	const struct sandbox_ops *ops;
	bool prepared;
};

struct worker {
	const struct worker_options *o;
	struct store *st;
	struct backend_choice choices[6];
	size_t n_choices;
	struct grade_options go;
	struct sched *s;
	char helper[PATH_MAX];
	char name[300], host[256];
	int sig_fd;
	int ready[2]; /* grading processes write a job id here when its sandbox is up */
	struct inflight *jobs;
	unsigned n_inflight;
	bool stopping;
	uint64_t next_claim_ms;
	uint64_t reopened_ms; /* when the store connection was last made again */
	/* Archives this worker found it cannot unpack: refused again at once. */
	char refused[8][65];
	char refused_why[8][512];
	unsigned n_refused;
	int64_t current_job;		/* in a grading process: the job being graded */
	struct loaded_assignment cache; /* in a grading process */
};

/* ---- in a grading process -------------------------------------------- */

static void sandbox_up(void *ctx)
{
	struct worker *w = ctx;
	int64_t id = w->current_job;

	if (id > 0) {
		/* 8 bytes: atomic on a pipe; a full pipe drops the notice. */
		ssize_t n = write(w->ready[1], &id, sizeof(id));
		(void)n;
		w->current_job = 0; /* the first sandbox is the one that counts */
	}
}

/*
 * The backend for assignment `a`: the isolation it names, else the
 * worker's --isolation, with 'auto' choosing by whether an image is pinned
 * (a microVM boots only an image), as `proctor grade` does.
 */
static const struct sandbox_ops *backend_for(struct worker *w, const struct assignment *a,
					     bool prepare, struct err *e)
{
	static const char *const iso[] = {"auto", "jail", "vm"};
	const char *want =
	    a->isolation != ASSIGNMENT_ISOLATION_ANY ? iso[a->isolation] : w->o->isolation;
	bool have_image = strcmp(a->image, "host") != 0;
	struct backend_choice *c = NULL;
	char why[256];

	for (size_t i = 0; i < w->n_choices && !c; i++)
		if (strcmp(w->choices[i].want, want) == 0 && w->choices[i].have_image == have_image)
			c = &w->choices[i];
	if (!c) {
		const struct sandbox_ops *ops;
		if (w->n_choices == sizeof(w->choices) / sizeof(w->choices[0]) ||
		    sandbox_select(want, have_image, &ops, why, sizeof(why), e) < 0)
			return NULL;
		c = &w->choices[w->n_choices++];
		*c = (struct backend_choice){.want = want, .have_image = have_image, .ops = ops};
	}
	if (prepare && !c->prepared) {
		if (c->ops->prepare(e) < 0)
			return NULL;
		/* A grading process keeps one sandbox started ahead (the
		 * microVM's QEMU), as `proctor class`'s workers do. */
		if (c->ops->pool_hint)
			c->ops->pool_hint(1);
		c->prepared = true;
	}
	return c->ops;
}

static json_t *error_doc(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *error_doc(const char *fmt, ...)
{
	char why[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return json_pack("{s:s, s:s}", "status", "error", "reason", why);
}

static json_t *grade_job(void *ctx, const struct sched_job *job)
{
	struct worker *w = ctx;
	const char *adir = NULL, *sub = NULL;
	json_t *arg = json_loads(job->arg, 0, NULL), *doc = NULL;
	struct err e;

	if (!arg || json_unpack(arg, "{s:s, s:s}", "a", &adir, "s", &sub) < 0) {
		json_decref(arg);
		return error_doc("malformed job");
	}
	if (!w->cache.a || strcmp(w->cache.dir, adir) != 0) {
		assignment_free(w->cache.a);
		w->cache.a = NULL;
		if (assignment_load(adir, &w->cache.a, &e) < 0) {
			json_decref(arg);
			return error_doc("the assignment cannot be loaded: %s", e.msg);
		}
		snprintf(w->cache.dir, sizeof(w->cache.dir), "%s", adir);
	}
	const struct assignment *a = w->cache.a;
	w->go.ops = backend_for(w, a, true, &e);
	if (!w->go.ops) {
		json_decref(arg);
		return error_doc("no isolation backend for this assignment: %s", e.msg);
	}
	w->current_job = (int64_t)job->id;
	if (grade_submission(a, sub, &w->go, &doc, &e) < 0)
		doc = error_doc("%s", e.msg);
	w->current_job = 0;
	json_decref(arg);
	return doc;
}

static void in_grading_process(void *ctx)
{
	struct worker *w = ctx;

	/* The store's connection belongs to the owner: never touched here. */
	xclose(w->sig_fd);
	xclose(w->ready[0]);
	w->ready[0] = -1;
}

static int check_result_doc(void *ctx, uint64_t id, const json_t *doc, char *why, size_t why_len)
{
	(void)ctx;
	(void)id;
	if (!json_is_string(json_object_get(doc, "status"))) {
		snprintf(why, why_len, "sent a result without a status");
		return -1;
	}
	return 0;
}

/* ---- in the owner ------------------------------------------------------ */

/*
 * A store call failed on our side: the connection may be what broke (a
 * database restarted).  Make a new one, at most once a second; the call is
 * the caller's to retry.  True when there is a new connection.
 */
static bool reconnect_store(struct worker *w)
{
	struct store *st;
	struct err e;
	uint64_t now = monotonic_ms();

	if (now - w->reopened_ms < 1000)
		return false;
	w->reopened_ms = now;
	if (store_open(w->o->db_url, &st, &e) < 0) {
		service_log("worker", "reconnect to the store: %s", e.msg);
		return false;
	}
	store_close(w->st);
	w->st = st;
	return true;
}

static struct inflight *inflight_of(struct worker *w, int64_t job_id)
{
	for (unsigned i = 0; i < w->o->jobs; i++)
		if (w->jobs[i].used && w->jobs[i].job_id == job_id)
			return &w->jobs[i];
	return NULL;
}

static void drop_inflight(struct worker *w, struct inflight *j)
{
	if (j->spool[0])
		unlink(j->spool);
	memset(j, 0, sizeof(*j));
	w->n_inflight--;
}

/* Our failure on this attempt: back to the store for a backoff, or error. */
static void fail_ours(struct worker *w, struct inflight *j, const char *why)
{
	bool final = false;
	struct err e;
	int r = store_job_fail_ours(w->st, j->job_id, j->attempt, j->token, why,
				    (int64_t)w->o->backoff_s * 1000, &final, &e);

	if (r == STORE_FENCED)
		service_log("worker", "job %lld: lease lost; not recording the failure",
			    (long long)j->job_id);
	else if (r < 0)
		service_log("worker", "job %lld: %s", (long long)j->job_id, e.msg);
	else
		service_log("worker", "job %lld attempt %d: %s%s", (long long)j->job_id, j->attempt,
			    why,
			    final ? " (last attempt: error, not gradable)" : "; retried later");
}

/* CPU-seconds used and GiB-seconds of memory reserved by a grading. */
static void resource_usage(const json_t *doc, double mem_gib, double *cpu_s, double *gib_s)
{
	size_t i;
	json_t *step;

	*cpu_s = *gib_s = 0;
	json_array_foreach(json_object_get(doc, "steps"), i, step)
	{
		*cpu_s += (double)json_integer_value(json_object_get(step, "cpu_ms")) / 1000.0;
		*gib_s +=
		    mem_gib * (double)json_integer_value(json_object_get(step, "wall_ms")) / 1000.0;
	}
}

static double number_or_nan(const json_t *v)
{
	return json_is_number(v) ? json_number_value(v) : NAN;
}

static void record_result(struct worker *w, struct inflight *j, json_t *doc)
{
	const char *status = json_string_value(json_object_get(doc, "status"));
	struct store_result_in res;
	struct err e;

	if (strcmp(status, "error") == 0) {
		const char *why = json_string_value(json_object_get(doc, "reason"));
		fail_ours(w, j, why ? why : "Proctor could not grade it");
		return;
	}
	/* The spool path means nothing to a reader: name the submission. */
	json_t *sub = json_object_get(doc, "submission");
	if (json_is_object(sub)) {
		char shown[64];
		snprintf(shown, sizeof(shown), "submission %lld", (long long)j->submission_id);
		json_object_set_new(sub, "path", json_string(shown));
	}
	char *text = json_dumps(doc, JSON_COMPACT);
	if (!text) {
		fail_ours(w, j, "out of memory");
		return;
	}
	/* A callback a student asked for carries the student view, with the
	 * default visibility (the policy is read when a student asks). */
	json_t *student =
	    policy_result_view(RESULT_VIEWER_STUDENT, RESULT_FORMAT_RESULT, NULL, NULL, 0, doc);
	char *student_text = student ? json_dumps(student, JSON_COMPACT) : NULL;
	json_decref(student);
	if (!student_text) {
		free(text);
		fail_ours(w, j, "out of memory");
		return;
	}
	res.doc_json = text;
	res.student_json = student_text;
	res.score = number_or_nan(json_object_get(doc, "score"));
	res.max_score = number_or_nan(json_object_get(doc, "max_score"));
	resource_usage(doc, j->max_memory_gib, &res.cpu_seconds, &res.gib_seconds);
	int r = store_job_complete(w->st, j->job_id, j->attempt, j->token, &res, NULL, &e);
	if (r == STORE_ERROR && reconnect_store(w))
		r = store_job_complete(w->st, j->job_id, j->attempt, j->token, &res, NULL, &e);
	free(text);
	free(student_text);
	if (r == STORE_FENCED)
		service_log(
		    "worker",
		    "job %lld attempt %d: lease lost; the result is dropped (another worker "
		    "owns the job)",
		    (long long)j->job_id, j->attempt);
	else if (r < 0)
		service_log("worker",
			    "job %lld: recording the result: %s (the lease will expire and the job "
			    "run again)",
			    (long long)j->job_id, e.msg);
}

static void handle_sched_result(struct worker *w, struct sched_result *ev)
{
	struct inflight *j = ev->event == SCHED_NOTE ? NULL : inflight_of(w, (int64_t)ev->id);
	char why[700];

	if (ev->event == SCHED_NOTE || ev->event == SCHED_RETRY) {
		service_log("worker", "%s%s", ev->why,
			    ev->event == SCHED_RETRY ? "; grading it again" : "");
		return;
	}
	if (!j)
		return;
	switch (ev->event) {
	case SCHED_RESULT:
		if (!j->fenced)
			record_result(w, j, ev->doc);
		break;
	case SCHED_FAILED:
		snprintf(why, sizeof(why), "grading process %s", ev->why);
		if (!j->fenced)
			fail_ours(w, j, why);
		break;
	case SCHED_CANCELLED:
		if (!j->fenced) {
			struct err e;
			if (store_job_release(w->st, j->job_id, j->attempt, j->token, &e) < 0)
				service_log("worker", "job %lld: give back: %s",
					    (long long)j->job_id, e.msg);
		}
		break;
	default:
		break;
	}
	drop_inflight(w, j);
}

/* Claim one job and hand it to the scheduler: 1, 0 when none is runnable, -1. */
static int claim_one(struct worker *w)
{
	struct store_claim c;
	struct err e;
	char adir[PATH_MAX], spool[PATH_MAX], name[64];
	struct assignment *a = NULL;
	int r = store_job_claim(w->st, w->name, w->host, (int64_t)w->o->lease_s * 1000, &c, &e);

	if (r <= 0) {
		if (r < 0) {
			service_log("worker", "claim: %s", e.msg);
			reconnect_store(w);
		}
		return r;
	}
	struct inflight *j = NULL;
	for (unsigned i = 0; i < w->o->jobs && !j; i++)
		if (!w->jobs[i].used)
			j = &w->jobs[i];
	*j = (struct inflight){.used = true,
			       .job_id = c.job_id,
			       .submission_id = c.submission_id,
			       .attempt = c.attempt,
			       .last_beat_ms = monotonic_ms()};
	snprintf(j->token, sizeof(j->token), "%s", c.lease_token);
	w->n_inflight++;

	snprintf(name, sizeof(name), "job-%lld-%d", (long long)c.job_id, c.attempt);
	for (unsigned i = 0; i < w->n_refused && i < 8; i++)
		if (strcmp(w->refused[i], c.archive_sha256) == 0) {
			err_setk(&e, ERR_INPUT, 0, "%s", w->refused_why[i]);
			goto fail;
		}
	if (svc_assignment_dir(w->st, w->o->state_dir, w->helper, c.archive_sha256, adir,
			       sizeof(adir), &e) < 0) {
		if (e.kind == ERR_INPUT) {
			unsigned k = w->n_refused++ % 8;
			snprintf(w->refused[k], sizeof(w->refused[k]), "%s", c.archive_sha256);
			snprintf(w->refused_why[k], sizeof(w->refused_why[k]), "%s", e.msg);
		}
		goto fail;
	}
	if (svc_spool_blob(w->st, w->o->state_dir, c.submission_sha256, name, spool, sizeof(spool),
			   &e) < 0)
		goto fail;
	/* From here the spool file goes with the job, whatever happens. */
	snprintf(j->spool, sizeof(j->spool), "%s", spool);
	if (assignment_load(adir, &a, &e) < 0)
		goto fail;
	if (strcmp(a->image, c.image_pin) != 0) {
		err_set(&e, 0, "assignment.yaml pins image '%s', the version says '%s'", a->image,
			c.image_pin);
		goto fail;
	}
	const struct sandbox_ops *ops = backend_for(w, a, false, &e);
	if (!ops)
		goto fail;
	j->max_memory_gib = (double)grade_max_memory(a) / (double)(1ull << 30);
	json_t *arg = json_pack("{s:s, s:s}", "a", adir, "s", spool);
	char *text = arg ? json_dumps(arg, JSON_COMPACT) : NULL;
	json_decref(arg);
	struct sched_job sj = {.id = (uint64_t)c.job_id,
			       .arg = text,
			       .budget_ns =
				   grade_budget_ns(a, ops->time_factor(w->o->state_dir, NULL))};
	assignment_free(a);
	a = NULL;
	if (!text) {
		err_set(&e, ENOMEM, "job");
		goto fail;
	}
	r = sched_submit(w->s, &sj, &e);
	free(text);
	if (r < 0)
		goto fail;
	return 1;
fail:
	assignment_free(a);
	if (e.kind == ERR_BUSY) {
		/* Another worker of this host is unpacking: give the job back
		 * unrun and look again in a second. */
		if (store_job_release(w->st, j->job_id, j->attempt, j->token, &e) < 0)
			service_log("worker", "job %lld: give back: %s", (long long)j->job_id,
				    e.msg);
		drop_inflight(w, j);
		return -1;
	}
	fail_ours(w, j, e.msg);
	drop_inflight(w, j);
	return 1;
}

static void send_due_heartbeats(struct worker *w, uint64_t now)
{
	uint64_t every = (uint64_t)w->o->lease_s * 1000 / 3;

	for (unsigned i = 0; i < w->o->jobs; i++) {
		struct inflight *j = &w->jobs[i];
		struct err e;
		if (!j->used || j->fenced || now - j->last_beat_ms < every)
			continue;
		int r = store_job_heartbeat(w->st, j->job_id, j->token, &e);
		if (r == STORE_FENCED) {
			service_log("worker",
				    "job %lld attempt %d: lease lost (paused or cut off past it); "
				    "stopping its grading",
				    (long long)j->job_id, j->attempt);
			j->fenced = true;
			sched_cancel(w->s, (uint64_t)j->job_id);
		} else if (r < 0) {
			/* Again in a second (not at once: the loop would spin), on a
			 * new connection if the old one broke. */
			service_log("worker", "job %lld: heartbeat: %s", (long long)j->job_id,
				    e.msg);
			j->last_beat_ms = now - every + 1000;
			reconnect_store(w);
		} else {
			j->last_beat_ms = now;
		}
	}
}

static void note_sandboxes_ready(struct worker *w)
{
	int64_t id;

	while (read(w->ready[0], &id, sizeof(id)) == (ssize_t)sizeof(id)) {
		struct inflight *j = inflight_of(w, id);
		struct err e;
		if (!j || j->ready_sent || j->fenced)
			continue;
		j->ready_sent = true;
		if (store_job_sandbox_ready(w->st, id, j->token, &e) == 0)
			j->last_beat_ms = monotonic_ms(); /* it extends the lease too */
	}
}

/* 0, or the signal that arrived. */
static int take_signal(int fd)
{
	struct signalfd_siginfo si;

	return read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si) ? (int)si.ssi_signo : 0;
}

static int ms_until_next_duty(struct worker *w, uint64_t now)
{
	uint64_t wake = now + 1000, every = (uint64_t)w->o->lease_s * 1000 / 3;

	if (!w->stopping && w->n_inflight < w->o->jobs && w->next_claim_ms < wake)
		wake = w->next_claim_ms;
	for (unsigned i = 0; i < w->o->jobs; i++)
		if (w->jobs[i].used && !w->jobs[i].fenced && w->jobs[i].last_beat_ms + every < wake)
			wake = w->jobs[i].last_beat_ms + every;
	return wake <= now ? 0 : (int)(wake - now);
}

static void on_signal(struct worker *w, int sig)
{
	if (!w->stopping) {
		service_log("worker", "%s: finishing the %u job%s running, claiming no more",
			    strsignal(sig), w->n_inflight, w->n_inflight == 1 ? "" : "s");
		w->stopping = true;
		sched_drain(w->s);
		return;
	}
	service_log("worker", "%s again: giving the running jobs back", strsignal(sig));
	for (unsigned i = 0; i < w->o->jobs; i++)
		if (w->jobs[i].used)
			sched_cancel(w->s, (uint64_t)w->jobs[i].job_id);
}

static int grade_until_stopped(struct worker *w)
{
	for (;;) {
		uint64_t now = monotonic_ms();
		while (!w->stopping && w->n_inflight < w->o->jobs && now >= w->next_claim_ms) {
			int r = claim_one(w);
			if (r <= 0)
				w->next_claim_ms = now + (r == 0 ? w->o->poll_ms : 1000);
		}
		if (w->o->exit_when_idle && !w->stopping && w->n_inflight == 0 &&
		    w->next_claim_ms > now) {
			w->stopping = true;
			sched_drain(w->s);
		}
		if (w->stopping && w->n_inflight == 0)
			return 0;
		send_due_heartbeats(w, monotonic_ms());
		struct sched_result ev;
		struct err e;
		int r = sched_next_result(w->s, ms_until_next_duty(w, monotonic_ms()), &ev, &e);
		note_sandboxes_ready(w);
		int sig = take_signal(w->sig_fd);
		if (sig)
			on_signal(w, sig);
		if (r < 0) {
			service_log("worker", "%s", e.msg);
			return 3;
		}
		if (r > 0) {
			handle_sched_result(w, &ev);
			sched_result_clear(&ev);
		}
	}
}

static int set_up_worker(struct worker *w, struct err *e)
{
	char why[256];
	sigset_t set;

	if (gethostname(w->host, sizeof(w->host)) < 0)
		snprintf(w->host, sizeof(w->host), "unknown");
	w->host[sizeof(w->host) - 1] = '\0';
	if (w->o->name)
		snprintf(w->name, sizeof(w->name), "%s", w->o->name);
	else
		snprintf(w->name, sizeof(w->name), "%s/%d", w->host, (int)getpid());
	/* Fail early on a host where the asked isolation cannot work at all. */
	const struct sandbox_ops *ops;
	if (sandbox_select(w->o->isolation, false, &ops, why, sizeof(why), e) < 0)
		return -1;
	service_log("worker", "isolation %s: %s; %u grading process%s", w->o->isolation, why,
		    w->o->jobs, w->o->jobs == 1 ? "" : "es");
	w->go = (struct grade_options){.sandbox = {.state_dir = w->o->state_dir,
						   .max_slots = w->o->slots,
						   .uid_base = SANDBOX_UID_BASE},
				       .on_sandbox = sandbox_up,
				       .on_sandbox_ctx = w};
	if (grade_helper_path(&w->go, w->helper, sizeof(w->helper), e) < 0 ||
	    grade_helper_check(&w->go, e) < 0)
		return -1;
	if (store_open(w->o->db_url, &w->st, e) < 0)
		return err_wrap(e, "--db");
	if (pipe2(w->ready, O_NONBLOCK) < 0)
		return err_set(e, errno, "pipe");
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	w->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (w->sig_fd < 0)
		return err_set(e, errno, "signalfd");
	w->jobs = calloc(w->o->jobs, sizeof(*w->jobs));
	if (!w->jobs)
		return err_set(e, ENOMEM, "worker");
	struct sched_options so = {.workers = w->o->jobs,
				   .attempts = 2,
				   .result_max = GRADEBOOK_RESULT_MAX,
				   .wake_fd = w->ready[0],
				   .ctx = w,
				   .run = grade_job,
				   .in_worker = in_grading_process,
				   .check = check_result_doc};
	return sched_new(&so, &w->s, e);
}

int worker_run(const struct worker_options *o)
{
	struct worker w = {.o = o, .sig_fd = -1, .ready = {-1, -1}};
	struct err e;
	int status;

	if (set_up_worker(&w, &e) < 0) {
		service_log("worker", "%s", e.msg);
		status = err_exit_status(e.kind);
	} else {
		service_log("worker", "%s claims jobs from the %s store", w.name,
			    store_backend(w.st));
		status = grade_until_stopped(&w);
	}
	w.s = sched_free(w.s);
	w.st = store_close(w.st);
	free(w.jobs);
	xclose(w.sig_fd);
	xclose(w.ready[0]);
	xclose(w.ready[1]);
	return status;
}

/* ---- the command --------------------------------------------------------- */

int cmd_worker(int argc, char **argv)
{
	struct worker_options o = {.isolation = "auto",
				   .slots = CLI_DEFAULT_SLOTS,
				   .lease_s = WORKER_LEASE_S_DEFAULT,
				   .backoff_s = 5,
				   .poll_ms = 20};
	const struct cli_option opts[] = {
	    {.name = "db",
	     .kind = CLI_STRING,
	     .value_name = "URL",
	     .dest = &o.db_url,
	     .help = "the job store: sqlite:PATH or postgresql://..."},
	    {.name = "jobs",
	     .short_name = 'j',
	     .kind = CLI_UINT,
	     .value_name = "N",
	     .dest = &o.jobs,
	     .min = 1,
	     .max = SCHED_MAX_WORKERS,
	     .help = "grade N submissions at once (default: the CPUs this\nprocess may use)"},
	    CLI_OPTION_ISOLATION(&o.isolation, "an image is pinned"),
	    CLI_OPTION_STATE_DIR(&o.state_dir, "slots, images and unpacked assignments"),
	    CLI_OPTION_SLOTS(&o.slots, NULL),
	    {.name = "lease",
	     .kind = CLI_UINT,
	     .value_name = "S",
	     .dest = &o.lease_s,
	     .min = 3,
	     .max = 3600,
	     .help = "a claimed job's lease in seconds, renewed every third\n(default " CLI_STR(
		 WORKER_LEASE_S_DEFAULT) "): a lost worker's jobs run again after it"},
	    {.name = "backoff",
	     .kind = CLI_UINT,
	     .value_name = "S",
	     .dest = &o.backoff_s,
	     .min = 0,
	     .max = 600,
	     .help = "wait before retrying after Proctor's own failure,\ndoubling each "
		     "attempt (default 5)"},
	    {.name = "poll-ms",
	     .kind = CLI_UINT,
	     .value_name = "MS",
	     .dest = &o.poll_ms,
	     .min = 1,
	     .max = 60000,
	     .help = "how often an idle worker looks for jobs (default 20)"},
	    {.name = "name",
	     .kind = CLI_STRING,
	     .value_name = "NAME",
	     .dest = &o.name,
	     .help = "this worker's name in attempts (default HOST/PID)"},
	    {.name = "exit-when-idle",
	     .kind = CLI_FLAG,
	     .dest = &o.exit_when_idle,
	     .help = "exit once no job is runnable (scripts, benchmarks)"},
	};
	const struct cli_command cmd = {
	    .name = "worker",
	    .synopsis = "--db URL",
	    .about = "Grade jobs of the service's store: any number of workers on any number of\n"
		     "hosts share one database (docs/service.md).",
	    .options = opts,
	    .n_options = sizeof(opts) / sizeof(opts[0]),
	    .exit_status = "  0  stopped by SIGTERM or SIGINT after finishing its jobs (or idle,\n"
			   "     with --exit-when-idle)\n"
			   "  2  usage error\n"
			   "  3  Proctor's own failure (the store, no isolation backend)",
	    .max_operands = 0};
	int n, r;

	o.state_dir = cli_state_dir();
	r = cli_parse(&cmd, argc, argv, &n);
	if (r != CLI_OK)
		return cli_exit_status(r);
	if (!o.db_url)
		return cli_usage_error(
		    "worker: --db is required (sqlite:PATH or postgresql://...)");
	if (!o.jobs)
		o.jobs = cpus_available();
	if (o.jobs > o.slots)
		o.jobs = o.slots;
	return worker_run(&o);
}
