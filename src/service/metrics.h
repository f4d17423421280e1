/* The service's metrics for /metrics (Prometheus text): phase histograms, counters, and the store's gauges. */
#ifndef PROCTOR_SERVICE_METRICS_H
#define PROCTOR_SERVICE_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "store/store.h"

/*
 * Histograms and counters live in memory, since the server started (a
 * scraper takes rates); job counts, workers and attempts are read from the
 * store at each scrape, so every server of a fleet shows the same.  Safe
 * from any thread.
 */
struct metrics;

struct metrics *metrics_new(void);
void metrics_free(struct metrics *m);
/* Add n to counter `name` (proctor_NAME_total); at most 32 names. */
void metrics_count(struct metrics *m, const char *name, uint64_t n);
/* A value read at each scrape (live sandboxes): proctor_NAME, a gauge. */
struct metrics_gauge {
	const char *name;
	const char *help;
	double value;
};
/* The exposition text, malloc'd, with the n gauges g; `st` NULL or
 * unreadable leaves the store's part out with a comment saying so.  NULL
 * when out of memory. */
char *metrics_render(struct metrics *m, struct store *st, const struct metrics_gauge *g,
		     size_t n);
/* A sandbox API call that answered, op "create" or "exec", ns from its
 * request's arrival (proctor_sandbox_seconds{op}). */
void metrics_observe_sandbox(struct metrics *m, const char *op, uint64_t ns);
/* The phases of a job that finished (ms since the epoch; 0 when unknown). */
void metrics_observe_phases(struct metrics *m, int64_t queued_ms, int64_t started_ms,
			    int64_t ready_ms, int64_t finished_ms);

#endif
