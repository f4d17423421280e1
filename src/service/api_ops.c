/* The API's operations routes: liveness, readiness and metrics (docs/service.md). */
#include <string.h>

#include "service/handler.h"
#include "service/sbxhost.h"
#include "service/sbxline.h"

/* GET /healthz: the process answers (no store: a database down is /readyz's). */
void get_healthz(struct call *c)
{
	http_json(c->rs, 200, strdup("{\"status\":\"ok\"}"));
}

/* GET /readyz: the store answers too. */
void get_readyz(struct call *c)
{
	int64_t now;
	struct err e;

	if (c->st && store_now_ms(c->st, &now, &e) == 0)
		http_json(c->rs, 200, strdup("{\"status\":\"ready\"}"));
	else
		answer_fail(c->rs, ERR_UNAVAILABLE, "the store is not reachable: %s",
			    c->st ? e.msg : c->store_error);
}

/* GET /metrics: Prometheus text (metrics.h). */
void get_metrics(struct call *c)
{
	struct metrics_gauge g[] = {
	    {"sandboxes_live", "Sandboxes this server's host holds now.",
	     c->a->sandboxes ? (double)sbx_host_live(c->a->sandboxes) : 0},
	    {"sandbox_capacity_waiting",
	     "Sandbox creates waiting in line for room now (wait_for_capacity_ms).",
	     c->a->line ? (double)sbx_line_waiting(c->a->line) : 0},
	};
	char *text = metrics_render(c->a->metrics, c->st, g, sizeof(g) / sizeof(g[0]));

	if (!text) {
		answer_fail(c->rs, ERR_INTERNAL, "out of memory");
		return;
	}
	c->rs->status = 200;
	c->rs->body = text;
	c->rs->content_type = "text/plain; version=0.0.4";
}
