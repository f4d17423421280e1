/* The service's HTTP API (docs/api.md): routes from requests on the HTTP front to the job store. */
#ifndef PROCTOR_SERVICE_API_H
#define PROCTOR_SERVICE_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "service/http.h"
#include "store/store.h"

/*
 * Every handler runs on one of the HTTP front's threads with that thread's
 * own store connection (opened on first use, closed when the thread ends).
 * A handler only reads and writes the store: grading happens in workers,
 * never in a request, and a long poll (`wait`) holds no thread between its
 * reads of the store (http_response.again_ms).  A submission is answered
 * 202 only after store_submit() committed it.  How a request goes through
 * the files of src/service/: handler.h, and docs/service.md ("Source
 * layout of the service").
 */

struct api_config {
	const char *db_url;
	uint64_t max_upload;	/* bytes of a decoded archive (submission or assignment) */
	int64_t queue_bound;	/* unfinished jobs of a course before 429 */
	unsigned wait_max_s;	/* the longest long poll */
	unsigned retry_after_s; /* Retry-After of a 429 */
	double price_cpu_hour;	/* estimated cost: per vCPU-hour */
	double price_gib_hour;	/* per GiB-hour of memory */
	/* Live sandboxes (docs/sandbox-keeper.md): held on this host when
	 * state_dir is set (NULL: /v1/sandboxes answers 503). */
	const char *state_dir;	/* --state-dir: slots, images, keeper sockets */
	const char *keeper_exe; /* the program run as `sandbox-keeper` (this one) */
	unsigned slots;		/* --slots: sandboxes and gradings share them */
};

void api_config_default(struct api_config *c);

struct api;

/* Check the store opens (migrating it) and make the API. */
int api_new(const struct api_config *c, struct api **ret, struct err *e);
/* The http_gate of the front (before the body is read): the route (404
 * when none), its body cap, and its token checked once (401, 403), the
 * caller left in the request's state for api_handle. */
int api_gate(void *ctx, const struct http_request *rq, struct http_response *rs,
	     size_t *max_body);
/* The http_handler of the front; ctx is the struct api. */
void api_handle(void *ctx, const struct http_request *rq, struct http_response *rs);
/* Phase times of a job that finished, for /metrics (serve's background loop). */
void api_observe_phases(struct api *a, int64_t queued_ms, int64_t started_ms, int64_t ready_ms,
			int64_t finished_ms);
/* Counters the background loop adds to /metrics. */
void api_count(struct api *a, const char *counter, uint64_t n);
/* The background loop's sandbox duties: reap the keepers that ended and
 * record why, end what reached its max_cost_micros, and end what outlived
 * its lease. */
void api_sandbox_duties(struct api *a, struct store *st);
void api_free(struct api *a);

#endif
