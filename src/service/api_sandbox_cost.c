/* What sandboxes cost: the metered cost of one, a token's spending of the day, and the end of one that reached its max_cost_micros (docs/api.md, "What a sandbox costs"). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "service/api_sandboxes.h"
#include "service/policy.h"
#include "service/sbxhost.h"

/*
 * The metered cost is the course budget's estimate applied to one sandbox
 * (policy_cost, at serve's --price-vcpu-hour and --price-gib-hour): the
 * CPU-seconds of its execs that ended, plus the GiB-seconds of memory it
 * reserved, memory_mib / 1024 for every second from its start to its end
 * (or now).  A command still running adds its CPU time when it ends; its
 * memory counts all along, as the sandbox's.  Micro-dollars, rounded down.
 */

int64_t sandbox_cost_micros(const struct api *a, int memory_mib, int64_t cpu_ms, int64_t life_ms)
{
	struct policy_prices prices = {.vcpu_hour = a->c.price_cpu_hour,
				       .gib_hour = a->c.price_gib_hour};
	double gib_seconds = (double)memory_mib / 1024 * (double)(life_ms > 0 ? life_ms : 0) / 1000;
	double micros = floor(policy_cost((double)cpu_ms / 1000, gib_seconds, &prices) * 1e6);

	return micros >= 9.2e18 ? INT64_MAX : (int64_t)micros;
}

int64_t sandbox_life_ms(const struct store_sandbox *s)
{
	if (!s->started_ms)
		return 0;
	return (s->ended_ms ? s->ended_ms : s->now_ms) - s->started_ms;
}

int within_token_spend(struct call *c)
{
	int64_t limit = c->who->limits.daily_spend_micros, now;
	struct store_usage u;
	struct err e;
	int rc;

	if (limit < 0)
		return 0;
	if ((rc = store_now_ms(c->st, &now, &e)) < 0 ||
	    (rc = store_token_usage_since(c->st, c->who->token_id, policy_day_start(now), &u,
					  &e)) < 0)
		return answer_store(c->rs, rc, &e), -1;
	struct policy_prices prices = {.vcpu_hour = c->a->c.price_cpu_hour,
				       .gib_hour = c->a->c.price_gib_hour};
	double spent = floor(policy_cost(u.cpu_seconds, u.reserved_gib_seconds, &prices) * 1e6);
	if (spent < (double)limit)
		return 0;
	char at[32];
	policy_time_format(policy_day_start(now) + 86400000, at);
	answer_fail(c->rs, ERR_BUDGET_EXCEEDED,
		    "this token spent %.0f of its daily_spend_micros %" PRId64
		    " today (UTC) on sandboxes: creates and commands resume at %s, or when an "
		    "admin raises "
		    "its limit",
		    spent, limit, at);
	return -1;
}

void sandbox_cost_duty(struct api *a, struct store *st)
{
	struct store_sandbox_meter *rows;
	size_t n = 0;
	struct err e;

	if (!a->sandboxes)
		return;
	/* This host holds at most --slots sandboxes at once (its keepers claim
	 * slots), so every one of them fits in one read. */
	size_t cap = (size_t)sbx_host_slots(a->sandboxes) + 16;
	if (cap > 100000)
		cap = 100000;
	if (!(rows = calloc(cap, sizeof(*rows))))
		return;
	if (store_sandbox_metered(st, sbx_host_key(a->sandboxes), rows, cap, &n, &e) < 0)
		n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct store_sandbox_meter *m = &rows[i];
		int64_t cost =
		    sandbox_cost_micros(a, m->memory_mib, m->cpu_ms, m->now_ms - m->started_ms);
		if (cost < m->max_cost_micros)
			continue;
		char reason[160];
		snprintf(reason, sizeof(reason),
			 "its metered cost reached max_cost_micros (%" PRId64 " of %" PRId64
			 " micro-dollars)",
			 cost, m->max_cost_micros);
		/* Recorded first, then killed: a command running in it is cut
		 * short, and its request finds the sandbox ended with this
		 * reason on record.  Killed rather than asked to destroy: a
		 * keeper busy in an exec answers only after it, and killing it
		 * destroys its sandbox as cleanly (docs/sandbox-keeper.md). */
		if (store_sandbox_end(st, m->sandbox_id, "expired", reason, &e) == 0) {
			sbx_host_kill(a->sandboxes, m->sandbox_id);
			metrics_count(a->metrics, "sandboxes_ended_over_cost", 1);
		}
	}
	free(rows);
}
