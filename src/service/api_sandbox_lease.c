/* The API's sandbox lease: set_timeout (docs/api.md, "Sandboxes"; docs/sandbox-keeper.md). */
#include <stdlib.h>
#include <string.h>

#include "service/api_sandboxes.h"
#include "service/handler.h"
#include "service/jsonreq.h"

/* The longest lease set_timeout gives, as a create's (docs/api.md). */
#define LEASE_S_MAX 86400

/*
 * POST /v1/sandboxes/{id}/timeout: {"timeout_seconds", "idle_timeout_seconds"}
 *
 * The keeper owns the clocks (it ends the sandbox when they run out), so it
 * is told first; the store's lease end, which the sweep reads for keepers
 * that never report, follows.  A keeper that ended in between is the
 * sandbox's end, recorded by its reaper.
 */
void post_sandbox_timeout(struct call *c)
{
	static const char *const allowed[] = {"timeout_seconds", "idle_timeout_seconds", NULL};
	struct store_sandbox s = {0};
	json_t *doc = NULL, *head = NULL, *answer = NULL;
	int64_t lease = 0, idle = -1;
	struct err e;
	int rc;

	if (body_json(c, 0, &doc) < 0)
		return;
	if (jsonreq_only(doc, allowed, &e) < 0 ||
	    jsonreq_int(doc, "timeout_seconds", true, 1, LEASE_S_MAX, &lease, &e) < 0 ||
	    jsonreq_int(doc, "idle_timeout_seconds", false, 0, LEASE_S_MAX, &idle, &e) < 0) {
		answer_member(c->rs, &e);
		goto out;
	}
	head = json_pack("{s:s, s:I}", "op", "lease", "lease_ms", (json_int_t)(lease * 1000));
	if (head && idle >= 0)
		json_object_set_new(head, "idle_ms", json_integer((json_int_t)(idle * 1000)));
	if (sandbox_call(c, head, NULL, 0, 0, &answer, NULL, NULL) < 0)
		goto out;
	if ((rc = store_sandbox_set_lease(c->st, c->id, lease, &e)) < 0 ||
	    (rc = store_sandbox_get(c->st, c->id, &s, &e)) < 0) {
		answer_store(c->rs, rc, &e);
		goto out;
	}
	answer_json(c->rs, 200, sandbox_doc(c->a, &s));
out:
	json_decref(answer);
	json_decref(doc);
	store_sandbox_clear(&s);
}
