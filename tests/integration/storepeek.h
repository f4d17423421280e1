/* Test helper: reads of the job store that only tests make (the product has no use for them). */
#ifndef PROCTOR_TEST_STOREPEEK_H
#define PROCTOR_TEST_STOREPEEK_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "store/store.h"

/*
 * Built beside the suites that call them (tests/meson.build), on the
 * store's internal interface (src/store/store_int.h), so that the store
 * itself (src/store/store.h) keeps only what the product uses: the service
 * reads a submission's latest job with store_submission_get(), its results
 * with store_result_list() and the outbox with store_outbox_take_due().
 */

/* A job by id (STORE_NOT_FOUND when there is none). */
int store_job_get(struct store *st, int64_t job_id, struct store_job *ret, struct err *e);

/* Number of result rows of a submission (regrades add rows). */
int store_result_count(struct store *st, int64_t submission_id, int64_t *ret, struct err *e);

/* An outbox row's state. */
struct store_outbox_row {
	int64_t outbox_id;
	int64_t result_id;
	char state[16]; /* pending|delivered|failed */
	int attempts;
	int64_t next_try_ms;
	int64_t delivered_ms;
};
/* The outbox rows of a job, oldest first (up to cap); *ret_n is how many were filled. */
int store_outbox_for_job(struct store *st, int64_t job_id, struct store_outbox_row *ret, size_t cap,
			 size_t *ret_n, struct err *e);

#endif
