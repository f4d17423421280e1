/* What a viewer may see of a submission and its results: one place for the API, callbacks and the web pages. */
#ifndef PROCTOR_SERVICE_VIEWS_H
#define PROCTOR_SERVICE_VIEWS_H

#include <jansson.h>
#include <stdbool.h>

#include "service/policy.h"
#include "store/store.h"

/*
 * The rules of what the policy reveals (policy_test_revealed,
 * policy_student_view, policy_gradescope, policy_result_view) are declared
 * in policy.h, beside the rest of the policy, and made here.  Below, the
 * documents the service answers with, built on them.
 */

/*
 * The document of one submission (GET /v1/submissions/{id}): its result
 * as `viewer` may see it in `format` under the assignment's policy (read
 * from the store: the due date, this student's extension), with the
 * service's fields under "service" (not in Gradescope's format).  If the
 * policy cannot be read, the default view: never more than the policy
 * says.  NULL when out of memory.
 */
json_t *view_submission(struct store *st, const struct store_submission_view *v,
			enum result_viewer viewer, enum result_format format);
/* Whether a submission's job has ended (done or error): a poll stops. */
bool view_finished(const struct store_submission_view *v);

/* A score as JSON: null for none (NaN). */
json_t *view_score(double s);
/* A time in ms as JSON: null for none (0). */
json_t *view_ms(int64_t ms);

/* One result of a submission's history (GET /v1/submissions/{id}/results);
 * `prev` is the one before it, or NULL. */
json_t *view_result_row(const struct store_result *r, const struct store_result *prev);
/* One submission whose score a regrade changed, or NULL when it did not
 * (not finished, or the same score). */
json_t *view_regrade_change(const struct store_regrade_item *it);

#endif
