/* The service's metrics (metrics.h). */
#include "service/metrics.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"

/* Upper bounds of the latency histograms, seconds. */
static const double buckets[] = {0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1,
				 2.5,	5,    10,   30,	  60,  120,  300, 600};
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

enum phase { PH_QUEUE, PH_SANDBOX, PH_GRADING, PH_TOTAL, PH_COUNT };
static const char *const phase_names[PH_COUNT] = {"queue", "sandbox_start", "grading", "total"};

struct histogram {
	uint64_t le[N_BUCKETS + 1]; /* the last is +Inf */
	double sum;
	uint64_t count;
};

#define MAX_COUNTERS 32
struct counter {
	char name[96];
	uint64_t n;
};

/* Job counts and workers read at most, per scrape. */
#define COURSES_SHOWN 256
#define WORKERS_SHOWN 64
/* The exposition text at most: a scrape is never a memory hazard. */
#define METRICS_MAX (8u << 20)

/* The sandbox API's latencies, from the request's arrival to its answer. */
enum sbx_op { SBX_CREATE, SBX_EXEC, SBX_COUNT };
static const char *const sbx_op_names[SBX_COUNT] = {"create", "exec"};

struct metrics {
	pthread_mutex_t lock;
	struct histogram h[PH_COUNT];
	struct histogram sbx[SBX_COUNT];
	struct counter counters[MAX_COUNTERS];
	size_t n_counters;
};

struct metrics *metrics_new(void)
{
	struct metrics *m = calloc(1, sizeof(*m));

	if (m)
		pthread_mutex_init(&m->lock, NULL);
	return m;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void metrics_count(struct metrics *m, const char *name, uint64_t n)
{
	pthread_mutex_lock(&m->lock);
	size_t i;
	for (i = 0; i < m->n_counters; i++)
		if (strcmp(m->counters[i].name, name) == 0)
			break;
	if (i == m->n_counters && i < MAX_COUNTERS) {
		snprintf(m->counters[i].name, sizeof(m->counters[i].name), "%s", name);
		m->n_counters++;
	}
	if (i < MAX_COUNTERS)
		m->counters[i].n += n;
	pthread_mutex_unlock(&m->lock);
}

static void observe(struct histogram *h, double s)
{
	size_t i = 0;

	while (i < N_BUCKETS && s > buckets[i])
		i++;
	h->le[i]++;
	h->sum += s;
	h->count++;
}

void metrics_observe_phases(struct metrics *m, int64_t queued_ms, int64_t started_ms,
			    int64_t ready_ms, int64_t finished_ms)
{
	pthread_mutex_lock(&m->lock);
	if (started_ms >= queued_ms && started_ms > 0)
		observe(&m->h[PH_QUEUE], (double)(started_ms - queued_ms) / 1000);
	if (ready_ms >= started_ms && ready_ms > 0 && started_ms > 0)
		observe(&m->h[PH_SANDBOX], (double)(ready_ms - started_ms) / 1000);
	if (finished_ms >= started_ms && started_ms > 0)
		observe(&m->h[PH_GRADING], (double)(finished_ms - started_ms) / 1000);
	if (finished_ms >= queued_ms && finished_ms > 0)
		observe(&m->h[PH_TOTAL], (double)(finished_ms - queued_ms) / 1000);
	pthread_mutex_unlock(&m->lock);
}

void metrics_observe_sandbox(struct metrics *m, const char *op, uint64_t ns)
{
	for (int i = 0; i < SBX_COUNT; i++)
		if (strcmp(op, sbx_op_names[i]) == 0) {
			pthread_mutex_lock(&m->lock);
			observe(&m->sbx[i], (double)ns / 1e9);
			pthread_mutex_unlock(&m->lock);
		}
}

/* One histogram family: each of n histograms under its label value. */
static void render_histograms(struct dynbuf *t, const char *name, const char *label,
			      const struct histogram *h, const char *const *values, int n)
{
	for (int p = 0; p < n; p++) {
		uint64_t cum = 0;
		for (size_t i = 0; i <= N_BUCKETS; i++) {
			cum += h[p].le[i];
			if (i < N_BUCKETS)
				dynbuf_addf(t, "%s_bucket{%s=\"%s\",le=\"%g\"} %" PRIu64 "\n", name,
					    label, values[p], buckets[i], cum);
			else
				dynbuf_addf(t, "%s_bucket{%s=\"%s\",le=\"+Inf\"} %" PRIu64 "\n",
					    name, label, values[p], cum);
		}
		dynbuf_addf(t, "%s_sum{%s=\"%s\"} %.6f\n", name, label, values[p], h[p].sum);
		dynbuf_addf(t, "%s_count{%s=\"%s\"} %" PRIu64 "\n", name, label, values[p],
			    h[p].count);
	}
}

static void render_memory(struct metrics *m, struct dynbuf *t)
{
	dynbuf_adds(t, "# HELP proctor_job_phase_seconds Time of each phase of a finished job.\n"
		       "# TYPE proctor_job_phase_seconds histogram\n");
	pthread_mutex_lock(&m->lock);
	render_histograms(t, "proctor_job_phase_seconds", "phase", m->h, phase_names, PH_COUNT);
	dynbuf_adds(t, "# HELP proctor_sandbox_seconds A sandbox API call, from the request to "
		       "its answer (create: the sandbox ready; exec: the command's verdict).\n"
		       "# TYPE proctor_sandbox_seconds histogram\n");
	render_histograms(t, "proctor_sandbox_seconds", "op", m->sbx, sbx_op_names, SBX_COUNT);
	for (size_t i = 0; i < m->n_counters; i++)
		dynbuf_addf(t, "# TYPE proctor_%s_total counter\nproctor_%s_total %" PRIu64 "\n",
			    m->counters[i].name, m->counters[i].name, m->counters[i].n);
	pthread_mutex_unlock(&m->lock);
}

/* A label value of the exposition format, in place: quotes, backslashes
 * and controls become '_' (worker names come from --name). */
static const char *label_value(char *s)
{
	for (char *p = s; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			*p = '_';
	return s;
}

static int render_store(struct store *st, struct dynbuf *t, struct err *e)
{
	struct store_course_counts cc[COURSES_SHOWN];
	size_t n;

	if (store_job_counts(st, cc, COURSES_SHOWN, &n, e) < 0)
		return -1;
	dynbuf_adds(t, "# HELP proctor_jobs Jobs by course and state.\n# TYPE proctor_jobs gauge\n");
	for (size_t i = 0; i < n; i++)
		for (int s = 0; s < STORE_JOB_STATES; s++)
			dynbuf_addf(t, "proctor_jobs{course=\"%" PRId64 "\",state=\"%s\"} %" PRId64 "\n",
				    cc[i].course_id, store_job_state_name(s), cc[i].n[s]);
	struct store_worker_stat ws[WORKERS_SHOWN];
	int64_t outcomes[STORE_OUTCOMES];
	size_t nw;
	if (store_worker_stats(st, ws, WORKERS_SHOWN, &nw, outcomes, e) < 0)
		return -1;
	dynbuf_adds(t, "# HELP proctor_worker_running_jobs Jobs a worker holds a lease on.\n"
		       "# TYPE proctor_worker_running_jobs gauge\n");
	for (size_t i = 0; i < nw; i++)
		dynbuf_addf(t, "proctor_worker_running_jobs{worker=\"%s\"} %" PRId64 "\n",
			    label_value(ws[i].worker), ws[i].running);
	dynbuf_adds(t, "# HELP proctor_worker_last_heartbeat_seconds When a worker last renewed a "
		       "lease (Unix time).\n# TYPE proctor_worker_last_heartbeat_seconds gauge\n");
	for (size_t i = 0; i < nw; i++)
		dynbuf_addf(t, "proctor_worker_last_heartbeat_seconds{worker=\"%s\"} %.3f\n",
			    label_value(ws[i].worker), (double)ws[i].last_heartbeat_ms / 1000);
	dynbuf_adds(t, "# HELP proctor_attempts_total Attempts by outcome (lease_expired: a worker "
		       "lost or fenced).\n# TYPE proctor_attempts_total counter\n");
	for (int i = 0; i < STORE_OUTCOMES; i++)
		dynbuf_addf(t, "proctor_attempts_total{outcome=\"%s\"} %" PRId64 "\n",
			    store_outcome_name((enum store_outcome)i), outcomes[i]);
	dynbuf_adds(t, "# HELP proctor_queue_depth Queued and running jobs by course.\n"
		       "# TYPE proctor_queue_depth gauge\n");
	for (size_t i = 0; i < n; i++)
		dynbuf_addf(t, "proctor_queue_depth{course=\"%" PRId64 "\"} %" PRId64 "\n",
			    cc[i].course_id, cc[i].n[STORE_JOB_QUEUED] + cc[i].n[STORE_JOB_RUNNING]);
	return 0;
}

char *metrics_render(struct metrics *m, struct store *st, const struct metrics_gauge *g,
			  size_t n)
{
	struct dynbuf t;
	struct err e;

	dynbuf_init(&t, METRICS_MAX);
	render_memory(m, &t);
	for (size_t i = 0; i < n; i++)
		dynbuf_addf(&t, "# HELP proctor_%s %s\n# TYPE proctor_%s gauge\nproctor_%s %g\n",
			    g[i].name, g[i].help, g[i].name, g[i].name, g[i].value);
	if (!st || render_store(st, &t, &e) < 0)
		dynbuf_adds(&t, "# store: unreadable\n");
	return dynbuf_take(&t, NULL);
}
