/* What the sandbox API's handler files share (api_sandboxes.c, api_sandbox_exec.c, api_sandbox_files.c). */
#ifndef PROCTOR_SERVICE_API_SANDBOXES_H
#define PROCTOR_SERVICE_API_SANDBOXES_H

#include <jansson.h>
#include <stdbool.h>

#include "service/handler.h"

/* The sandbox document of docs/api.md. */
json_t *sandbox_doc(const struct api *a, const struct store_sandbox *s);
/* Whether the store says a sandbox runs. */
bool live(const struct store_sandbox *s);
/* A live sandbox of the caller held on this host into *s (cleared by the
 * caller); else an answer and -1. */
int live_sandbox(struct call *c, struct store_sandbox *s);
/* An object of at most 32 string members, or absent ({}): its text. */
int string_map(const json_t *doc, const char *key, char **ret, struct err *e);
/* The course's daily CPU cap not spent (sandboxes and their commands count
 * toward it); else an answer (403 budget_exceeded) and -1. */
int within_budget(struct call *c);
/* The metered cost of a sandbox in micro-dollars at serve's prices
 * (api_sandbox_cost.c; docs/api.md, "What a sandbox costs"): cpu_ms of its
 * done execs, memory_mib reserved for life_ms.  Rounded down. */
int64_t sandbox_cost_micros(const struct api *a, int memory_mib, int64_t cpu_ms, int64_t life_ms);
/* How long a sandbox as read has lived: from its start to its end or the
 * store's clock at the read (0: never started). */
int64_t sandbox_life_ms(const struct store_sandbox *s);
/* The caller's token has not spent its daily_spend_micros today (UTC);
 * else an answer (403 budget_exceeded) and -1. */
int within_token_spend(struct call *c);
/* Whether a failed keeper call found no keeper at all. */
bool keeper_missing(const struct err *ke);
/* Answer a keeper call that failed (docs/sandbox-keeper.md). */
void answer_keeper_failure(struct call *c, const struct store_sandbox *s, const struct err *ke);
/* One call to the keeper that answers at once (not an exec): head (its
 * secret added) and data out, the answer and up to max_out bytes of data
 * back (ret_data NULL: none taken).  -1 with the keeper's refusal, or why
 * it could not be reached, in e. */
int keeper_call(const struct store_sandbox *s, json_t *head, const void *data, size_t len,
		size_t max_out, json_t **ret, void **ret_data, size_t *ret_len, struct err *e);
/* A keeper call on a live sandbox of the caller (head taken, NULL: out of
 * memory): its answer and up to max_out bytes of data (ret_data NULL:
 * none); else an answer and -1 (api_sandbox_files.c). */
int sandbox_call(struct call *c, json_t *head, const void *data, size_t len, size_t max_out,
		 json_t **ret, void **ret_data, size_t *ret_len);
/* After a send that failed: the keeper's own refusal, when it sent one. */
void keeper_refusal(int fd, struct err *e);

/* Record an exec's end from the keeper's answer `doc` (NULL: none came). */
void record_exec(struct store *st, int64_t exec_id, const json_t *doc, int64_t memory_mib);
/* The keeper's answer `doc` to an exec, recorded and made the API's answer
 * (doc itself: exec_id, timed_out, limit and usage added). */
json_t *exec_result(struct api *a, struct store *st, json_t *doc, int64_t exec_id,
		    int64_t memory_mib);
/* An exec whose output streams (api_sandbox_stream.c): the answer becomes
 * the NDJSON stream of docs/api.md over the keeper connection fd (taken). */
void exec_stream_start(struct call *c, int fd, int64_t sandbox_id, int64_t exec_id,
		       int64_t memory_mib, unsigned keepalive_ms);

/* A template pin, "name" (the latest) or "name@N", into name (cap bytes)
 * and *ret_version (0: the latest); -1 when it is not one. */
int template_parse_pin(const char *pin, char *name, size_t cap, int *ret_version);

#endif
