/* The job store's room and money for sandboxes (migration 7) on a real SQLite file and a real PostgreSQL: token limits, a token's live count and day, sandboxes with a cost cap. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "pgtest.h"
#include "store/store.h"
#include "store/store_int.h"

/* One backend under test: every case opens a fresh database from it
 * (test_store.c does the same for the rest of the store). */
struct backend {
	const char *name;
	char skip[256];	   /* non-empty: PostgreSQL is not there and may be skipped */
	char tmpdir[256];  /* sqlite: the files live here */
	struct pgtest *pg; /* postgresql */
	int counter;
	char url[512]; /* the latest fresh database */
};

static struct backend sqlite_backend = {.name = "sqlite"};
static struct backend pg_backend = {.name = "postgresql"};

static struct store *fresh_store(void **state)
{
	struct backend *b = *state;
	char *url = b->url, why[512];
	struct store *st = NULL;
	struct err e;

	if (b->skip[0])
		skip();
	b->counter++;
	if (b->pg) {
		char name[64];
		snprintf(name, sizeof(name), "m%d", b->counter);
		if (pgtest_createdb(b->pg, name, url, sizeof(b->url), why, sizeof(why)) < 0)
			fail_msg("createdb: %s", why);
	} else {
		snprintf(url, sizeof(b->url), "sqlite:%s/m%d.db", b->tmpdir, b->counter);
	}
	if (store_open(url, &st, &e) < 0)
		fail_msg("store_open %s: %s", url, e.msg);
	return st;
}

#define CHECK(call)                                                                                \
	do {                                                                                       \
		struct err e_;                                                                     \
		int rc_ = (call);                                                                  \
		if (rc_ < 0)                                                                       \
			fail_msg("%s: %d: %s", #call, rc_, e_.msg);                                \
	} while (0)
/* CHECK passes &e_ through this name. */
#define E (&e_)

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* A token of `course` with limits, checked as a request's would be. */
static struct store_token_info token_of(struct store *st, const char *course,
					struct store_token_limits limits)
{
	char token[STORE_TOKEN_LEN + 1];
	struct store_token_info ti;
	int64_t id;

	CHECK(store_token_mint(st, course, STORE_SCOPE_INSTRUCTOR, &limits, token, &id, E));
	CHECK(store_token_check(st, token, &ti, E));
	assert_int_equal(ti.token_id, id);
	return ti;
}

static int create(struct store *st, const struct store_token_info *t, const char *key,
		  int memory_mib, int64_t max_cost, int64_t *ret_id, bool *ret_existing,
		  struct err *e)
{
	struct store_sandbox_in in = {.course_id = t->course_id,
				      .token_id = t->token_id,
				      .isolation = "jail",
				      .image_pin = "host",
				      .memory_mib = memory_mib,
				      .timeout_s = 300,
				      .idempotency_key = key,
				      .max_cost_micros = max_cost};
	char secret[65];

	return store_sandbox_create(st, &in, ret_id, secret, ret_existing, e);
}

static int64_t running(struct store *st, const struct store_token_info *t, const char *host,
		       int memory_mib, int64_t max_cost)
{
	int64_t id;

	CHECK(create(st, t, NULL, memory_mib, max_cost, &id, NULL, E));
	CHECK(store_sandbox_placed(st, id, host, "/run/x.sock", 4242, E));
	return id;
}

/* ---- cases ---- */

static void test_store_token_limits_are_minted_set_listed_and_checked(void **state)
{
	struct store *st = fresh_store(state);
	struct store_token_info t = token_of(st, "cs101", (struct store_token_limits){5000, 3});
	struct store_token_info u = token_of(st, "cs101", STORE_TOKEN_UNLIMITED);
	struct store_token_info other = token_of(st, "cs102", STORE_TOKEN_UNLIMITED);
	struct store_token_row rows[8];
	size_t n = 0;
	struct err e;

	assert_int_equal(t.limits.daily_spend_micros, 5000);
	assert_int_equal(t.limits.max_live_sandboxes, 3);
	assert_int_equal(u.limits.daily_spend_micros, -1);
	assert_int_equal(u.limits.max_live_sandboxes, -1);
	/* Replaced whole: a limit not given is none. */
	struct store_token_limits l = {.daily_spend_micros = -1, .max_live_sandboxes = 0};
	CHECK(store_token_set_limits(st, t.course_id, t.token_id, &l, E));
	CHECK(store_token_list(st, t.course_id, rows, 8, &n, E));
	assert_int_equal(n, 2);
	assert_int_equal(rows[0].token_id, t.token_id);
	assert_int_equal(rows[0].limits.daily_spend_micros, -1);
	assert_int_equal(rows[0].limits.max_live_sandboxes, 0);
	assert_int_equal(rows[1].limits.max_live_sandboxes, -1);
	/* Another course's token is not found, nor a revoked one. */
	assert_int_equal(store_token_set_limits(st, other.course_id, t.token_id, &l, &e),
			 STORE_NOT_FOUND);
	CHECK(store_token_revoke(st, u.course_id, u.token_id, E));
	assert_int_equal(store_token_set_limits(st, u.course_id, u.token_id, &l, &e),
			 STORE_NOT_FOUND);
	/* Out of range, both ways. */
	struct store_token_limits bad[] = {{-2, -1},
					   {STORE_SPEND_MICROS_MAX + 1, -1},
					   {-1, STORE_LIVE_SANDBOXES_MAX + 1},
					   {-1, -7}};
	char token[STORE_TOKEN_LEN + 1];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(store_token_set_limits(st, t.course_id, t.token_id, &bad[i], &e),
				 STORE_INVALID);
		assert_int_equal(store_token_mint(st, "cs101", STORE_SCOPE_SUBMIT, &bad[i], token,
						  NULL, &e),
				 STORE_INVALID);
		assert_non_null(strstr(e.msg, i == 0 || i == 1 ? "daily_spend_micros"
							       : "max_live_sandboxes"));
	}
	store_close(st);
}

static void test_store_token_live_maximum_refuses_the_create_past_it(void **state)
{
	struct store *st = fresh_store(state);
	struct store_token_info t = token_of(st, "cs101", (struct store_token_limits){-1, 2});
	struct store_token_info free_token = token_of(st, "cs101", STORE_TOKEN_UNLIMITED);
	int64_t a, b, c, live = -1;
	bool existing = true;
	struct err e;

	CHECK(create(st, &t, "k1", 64, 0, &a, &existing, E));
	assert_false(existing);
	b = running(st, &t, "host-a", 64, 0);
	CHECK(store_token_live_sandboxes(st, t.token_id, &live, E));
	assert_int_equal(live, 2);
	assert_int_equal(create(st, &t, NULL, 64, 0, &c, NULL, &e), STORE_REFUSED);
	assert_non_null(strstr(e.msg, "max_live_sandboxes 2"));
	/* A replay of a key answers its sandbox even at the maximum. */
	CHECK(create(st, &t, "k1", 64, 0, &c, &existing, E));
	assert_true(existing);
	assert_int_equal(c, a);
	CHECK(store_sandbox_find_key(st, t.course_id, "k1", &c, E));
	assert_int_equal(c, a);
	assert_int_equal(store_sandbox_find_key(st, t.course_id, "k2", &c, &e), STORE_NOT_FOUND);
	/* The course's other tokens are not held by this one's maximum. */
	CHECK(create(st, &free_token, NULL, 64, 0, &c, NULL, E));
	/* An ended sandbox frees its place. */
	CHECK(store_sandbox_end(st, b, "deleted", NULL, E));
	CHECK(store_token_live_sandboxes(st, t.token_id, &live, E));
	assert_int_equal(live, 1);
	CHECK(create(st, &t, NULL, 64, 0, &c, NULL, E));
	/* Lowered below what is live: nothing more until enough end. */
	struct store_token_limits none = {-1, 0};
	CHECK(store_token_set_limits(st, t.course_id, t.token_id, &none, E));
	assert_int_equal(create(st, &t, NULL, 64, 0, &c, NULL, &e), STORE_REFUSED);
	store_close(st);
}

static void test_store_token_usage_counts_reserved_memory_and_exec_cpu(void **state)
{
	struct store *st = fresh_store(state);
	struct store_token_info t = token_of(st, "cs101", STORE_TOKEN_UNLIMITED);
	struct store_token_info u = token_of(st, "cs101", STORE_TOKEN_UNLIMITED);
	struct store_exec_result r = {.status = "ok", .cpu_ms = 1500, .wall_ms = 1600};
	struct store_usage a, b;
	int64_t now, x;

	CHECK(store_now_ms(st, &now, E));
	int64_t id = running(st, &t, "host-a", 2048, 0);
	running(st, &u, "host-a", 4096, 0); /* another token's: not counted */
	CHECK(create(st, &t, NULL, 8192, 0, &x, NULL, E)); /* never placed: reserved nothing */
	CHECK(store_exec_begin(st, id, "[\"true\"]", NULL, &x, E));
	CHECK(store_exec_end(st, x, &r, E));
	sleep_ms(300);
	CHECK(store_token_usage_since(st, t.token_id, now - 1000, &a, E));
	assert_true(a.cpu_seconds == 1.5);
	/* 2 GiB for at least the 300 ms slept, and less than a minute. */
	assert_true(a.reserved_gib_seconds >= 0.6 && a.reserved_gib_seconds < 120);
	assert_true(a.now_ms >= now + 300);
	/* Ended: its reservation stops growing. */
	CHECK(store_sandbox_end(st, id, "deleted", NULL, E));
	CHECK(store_token_usage_since(st, t.token_id, now - 1000, &a, E));
	sleep_ms(100);
	CHECK(store_token_usage_since(st, t.token_id, now - 1000, &b, E));
	assert_true(a.reserved_gib_seconds == b.reserved_gib_seconds);
	/* A day that starts after it ended and its exec counts none of it. */
	CHECK(store_token_usage_since(st, t.token_id, b.now_ms + 1, &b, E));
	assert_true(b.cpu_seconds == 0 && b.reserved_gib_seconds == 0);
	store_close(st);
}

static void test_store_metered_lists_this_hosts_running_sandboxes_with_a_cap(void **state)
{
	struct store *st = fresh_store(state);
	struct store_token_info t = token_of(st, "cs101", STORE_TOKEN_UNLIMITED);
	struct store_sandbox_meter rows[8];
	struct store_sandbox sb;
	size_t n = 9;
	int64_t x;
	struct err e;

	int64_t capped = running(st, &t, "host-a", 1024, 50);
	running(st, &t, "host-a", 1024, 0);  /* no cap */
	running(st, &t, "host-b", 1024, 50); /* another host's */
	CHECK(create(st, &t, NULL, 1024, 50, &x, NULL, E)); /* not placed yet */
	CHECK(store_sandbox_metered(st, "host-a", rows, 8, &n, E));
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].sandbox_id, capped);
	assert_int_equal(rows[0].memory_mib, 1024);
	assert_int_equal(rows[0].max_cost_micros, 50);
	assert_true(rows[0].started_ms > 0 && rows[0].now_ms >= rows[0].started_ms);
	CHECK(store_sandbox_get(st, capped, &sb, E));
	assert_int_equal(sb.max_cost_micros, 50);
	assert_true(sb.now_ms >= sb.started_ms);
	store_sandbox_clear(&sb);
	CHECK(store_sandbox_end(st, capped, "expired", "its metered cost reached max_cost_micros",
				E));
	CHECK(store_sandbox_metered(st, "host-a", rows, 8, &n, E));
	assert_int_equal(n, 0);
	assert_int_equal(store_sandbox_metered(st, "host-a", rows, 0, &n, &e), STORE_INVALID);
	assert_int_equal(create(st, &t, NULL, 64, -1, &x, NULL, &e), STORE_INVALID);
	store_close(st);
}

/* The version-6 schema, as the proctor before issue 24 left it. */
static const char sql_downgrade_to_6[] = "DROP TABLE sandbox_templates;"
					 "ALTER TABLE sandboxes DROP COLUMN template;"
					 "DROP INDEX sandboxes_token;"
					 "ALTER TABLE sandboxes DROP COLUMN max_cost_micros;"
					 "ALTER TABLE tokens DROP COLUMN max_live_sandboxes;"
					 "ALTER TABLE tokens DROP COLUMN daily_spend_micros;"
					 "DELETE FROM schema_version WHERE version >= 7;";

static void test_store_migration_7_upgrades_a_version_6_database(void **state)
{
	struct store *st = fresh_store(state);
	struct store_token_info t = token_of(st, "cs101", STORE_TOKEN_UNLIMITED);
	struct store_sandbox sb;
	struct store_rows *rows = NULL;
	char token[STORE_TOKEN_LEN + 1];
	struct err e;

	int64_t old = running(st, &t, "host-a", 512, 0);
	CHECK(store_token_create(st, "cs101", STORE_SCOPE_ADMIN, token, E));
	if (st->ops->exec_script(st->conn, sql_downgrade_to_6, &e) < 0)
		fail_msg("downgrade: %s", e.msg);
	CHECK(store_q(st, "SELECT MAX(version) FROM schema_version", NULL, 0, &rows, E));
	assert_int_equal(store_col_int(rows, 0, 0), 6);
	store_rows_free(rows);
	store_close(st);

	/* Reopened by this proctor: the tokens have no limits, the sandbox
	 * no cap, and both take them from now on. */
	const char *url = ((struct backend *)*state)->url;
	if (store_open(url, &st, &e) < 0)
		fail_msg("store_open %s: %s", url, e.msg);
	CHECK(store_q(st, "SELECT MAX(version) FROM schema_version", NULL, 0, &rows, E));
	assert_int_equal(store_col_int(rows, 0, 0), STORE_SCHEMA_VERSION);
	store_rows_free(rows);
	struct store_token_info ti;
	CHECK(store_token_check(st, token, &ti, E));
	assert_int_equal(ti.limits.daily_spend_micros, -1);
	assert_int_equal(ti.limits.max_live_sandboxes, -1);
	CHECK(store_sandbox_get(st, old, &sb, E));
	assert_int_equal(sb.max_cost_micros, 0);
	assert_string_equal(sb.state, "running");
	store_sandbox_clear(&sb);
	struct store_token_limits one = {-1, 1};
	CHECK(store_token_set_limits(st, t.course_id, t.token_id, &one, E));
	int64_t x;
	assert_int_equal(create(st, &t, NULL, 64, 0, &x, NULL, &e), STORE_REFUSED);
	store_close(st);
}

/* Templates: each of a name is its next version, in its course only; a
 * removed one is gone and its version never given again; the sandbox
 * records the one it started from. */
static void test_store_templates_take_the_next_version_never_a_reused_one(void **state)
{
	struct store *st = fresh_store(state);
	struct store_token_info t = token_of(st, "cs101", STORE_TOKEN_UNLIMITED);
	struct store_token_info o = token_of(st, "other", STORE_TOKEN_UNLIMITED);
	struct store_template a, b, c, got, *v = NULL;
	struct store_sandbox sb;
	size_t n = 0;
	struct err e;

	int64_t src = running(st, &t, "host-a", 64, 0);
	CHECK(store_template_add(st, t.course_id, "hw3", "tree-1", 6, src, &a, E));
	CHECK(store_template_add(st, t.course_id, "hw3", "tree-2", 6, 0, &b, E));
	assert_int_equal(a.version_no, 1);
	assert_int_equal(b.version_no, 2);
	assert_int_equal(a.source_sandbox_id, src);
	assert_int_equal(b.source_sandbox_id, 0);
	assert_int_equal(a.bytes, 6);
	assert_string_not_equal(a.sha256, b.sha256);
	/* The same name in another course starts again at 1. */
	CHECK(store_template_add(st, o.course_id, "hw3", "tree-1", 6, 0, &c, E));
	assert_int_equal(c.version_no, 1);
	assert_string_equal(c.sha256, a.sha256); /* one blob, content-addressed */

	CHECK(store_template_get(st, t.course_id, "hw3", 0, 0, &got, E));
	assert_int_equal(got.version_no, 2);
	CHECK(store_template_get(st, t.course_id, "hw3", 1, 0, &got, E));
	assert_int_equal(got.template_id, a.template_id);
	CHECK(store_template_get(st, t.course_id, NULL, 0, b.template_id, &got, E));
	assert_string_equal(got.name, "hw3");
	assert_int_equal(store_template_get(st, o.course_id, NULL, 0, b.template_id, &got, &e),
			 STORE_NOT_FOUND);
	assert_int_equal(store_template_get(st, t.course_id, "hw3", 9, 0, &got, &e),
			 STORE_NOT_FOUND);
	assert_int_equal(store_template_add(st, t.course_id, "Bad Name", "x", 1, 0, &got, &e),
			 STORE_INVALID);
	assert_int_equal(store_template_add(st, t.course_id, "-x", "x", 1, 0, &got, &e),
			 STORE_INVALID);

	CHECK(store_template_list(st, t.course_id, 100, &v, &n, E));
	assert_int_equal(n, 2);
	assert_int_equal(v[0].template_id, b.template_id); /* newest first */
	free(v);

	CHECK(store_template_remove(st, t.course_id, b.template_id, &got, E));
	assert_int_equal(got.version_no, 2);
	assert_true(got.deleted_ms > 0);
	assert_int_equal(store_template_remove(st, t.course_id, b.template_id, NULL, &e),
			 STORE_NOT_FOUND);
	assert_int_equal(store_template_remove(st, o.course_id, a.template_id, NULL, &e),
			 STORE_NOT_FOUND);
	CHECK(store_template_get(st, t.course_id, "hw3", 0, 0, &got, E));
	assert_int_equal(got.version_no, 1); /* the latest not removed */
	CHECK(store_template_add(st, t.course_id, "hw3", "tree-3", 6, 0, &c, E));
	assert_int_equal(c.version_no, 3);

	CHECK(store_sandbox_set_template(st, src, "hw3", 1, E));
	CHECK(store_sandbox_get(st, src, &sb, E));
	assert_string_equal(sb.template_pin, "hw3@1");
	store_sandbox_clear(&sb);
	store_close(st);
}

static int setup_sqlite(void **state)
{
	snprintf(sqlite_backend.tmpdir, sizeof(sqlite_backend.tmpdir), "/tmp/proctor-meter.XXXXXX");
	if (!mkdtemp(sqlite_backend.tmpdir))
		return -1;
	*state = &sqlite_backend;
	return 0;
}

static int teardown_sqlite(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", sqlite_backend.tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

static int setup_pg(void **state)
{
	*state = &pg_backend;
	return pgtest_group_start(&pg_backend.pg, pg_backend.skip, sizeof(pg_backend.skip));
}

static int teardown_pg(void **state)
{
	(void)state;
	pgtest_stop(pg_backend.pg);
	pg_backend.pg = NULL;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_store_token_limits_are_minted_set_listed_and_checked),
	    cmocka_unit_test(test_store_token_live_maximum_refuses_the_create_past_it),
	    cmocka_unit_test(test_store_token_usage_counts_reserved_memory_and_exec_cpu),
	    cmocka_unit_test(test_store_metered_lists_this_hosts_running_sandboxes_with_a_cap),
	    cmocka_unit_test(test_store_migration_7_upgrades_a_version_6_database),
	    cmocka_unit_test(test_store_templates_take_the_next_version_never_a_reused_one),
	};
	int failed =
	    cmocka_run_group_tests_name("store_meter_sqlite", tests, setup_sqlite, teardown_sqlite);
	failed += cmocka_run_group_tests_name("store_meter_postgresql", tests, setup_pg, teardown_pg);
	return failed ? 1 : 0;
}
