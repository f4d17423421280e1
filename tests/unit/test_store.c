/* The job store on a real SQLite file and a real PostgreSQL: every case on both. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "pgtest.h"
#include "service/policy.h"
#include "store/store.h"
#include "store/store_int.h"
#include "storepeek.h"

/* One backend under test: every case opens a fresh database from it. */
struct backend {
	const char *name;
	char skip[256];	   /* non-empty: PostgreSQL is not there and may be skipped */
	char tmpdir[256];  /* sqlite: the files live here */
	struct pgtest *pg; /* postgresql */
	int counter;
};

static struct backend sqlite_backend = {.name = "sqlite"};
static struct backend pg_backend = {.name = "postgresql"};

static void fresh_url(void **state, char *url, size_t cap)
{
	struct backend *b = *state;
	char why[512];

	if (b->skip[0])
		skip();
	b->counter++;
	if (b->pg) {
		char name[64];
		snprintf(name, sizeof(name), "t%d", b->counter);
		if (pgtest_createdb(b->pg, name, url, cap, why, sizeof(why)) < 0)
			fail_msg("createdb: %s", why);
	} else {
		snprintf(url, cap, "sqlite:%s/t%d.db", b->tmpdir, b->counter);
	}
}

static struct store *open_or_fail(const char *url)
{
	struct store *st = NULL;
	struct err e;

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

static void seed(struct store *st, const char *course, int64_t *ret_course, int64_t *ret_version)
{
	CHECK(store_course_ensure(st, course, true, ret_course, E));
	CHECK(store_assignment_add_version(st, *ret_course, "hello", "archive-bytes", 13, "small@1",
					   ret_version, NULL, E));
}

static int64_t submit(struct store *st, int64_t course, int64_t version, const char *key,
		      const char *callback, int max_attempts, int64_t *ret_job)
{
	struct store_submission_in in = {.course_id = course,
					 .version_id = version,
					 .student = "ada",
					 .idempotency_key = key,
					 .callback_url = callback,
					 .data = "print('hi')\n",
					 .len = 12,
					 .max_attempts = max_attempts};
	int64_t sub, job;
	bool existing;
	CHECK(store_submit(st, &in, &sub, &job, &existing, E));
	if (ret_job)
		*ret_job = job;
	return sub;
}

static const struct store_result_in a_result = {.doc_json = "{\"status\":\"ok\",\"score\":1,"
							    "\"tests\":[{\"name\":\"secret\"}]}",
						.student_json = "{\"status\":\"ok\",\"view\":\"student\"}",
						.score = 1,
						.max_score = 2,
						.cpu_seconds = 0.5,
						.gib_seconds = 0.25};

static int claim(struct store *st, const char *worker, int64_t lease_ms, struct store_claim *c)
{
	struct err e;
	int rc = store_job_claim(st, worker, "host-a", lease_ms, c, &e);

	if (rc < 0)
		fail_msg("claim: %s", e.msg);
	return rc;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int64_t count_rows(struct store *st, const char *sql)
{
	struct store_rows *rows = NULL;
	struct err e;

	if (store_q(st, sql, NULL, 0, &rows, &e) < 0)
		fail_msg("%s: %s", sql, e.msg);
	int64_t n = store_col_int(rows, 0, 0);
	store_rows_free(rows);
	return n;
}

/* ---- cases ---- */

static const char sql_versions[] = "SELECT COUNT(*) FROM schema_version";
static const char sql_version[] = "SELECT MAX(version) FROM schema_version";
static const char sql_future[] = "INSERT INTO schema_version (version, applied_ms) VALUES (99, 0)";

static void test_store_migrates_from_empty_and_reopens(void **state)
{
	char url[512];
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	assert_string_equal(store_backend(st), ((struct backend *)*state)->name);
	if (strncmp(url, "sqlite:", 7) == 0) {
		struct stat sb;
		assert_int_equal(stat(url + 7, &sb), 0);
		assert_int_equal(sb.st_mode & 0777, 0600);
	}
	assert_int_equal(count_rows(st, sql_version), STORE_SCHEMA_VERSION);
	int64_t now = 0;
	CHECK(store_now_ms(st, &now, E));
	assert_true(llabs(now - (int64_t)time(NULL) * 1000) < 5000);
	st = store_close(st);

	st = open_or_fail(url);
	assert_int_equal(count_rows(st, sql_version), STORE_SCHEMA_VERSION);
	assert_int_equal(count_rows(st, sql_versions), (int64_t)store_migration_count);
	/* A database from a newer proctor is refused, not downgraded. */
	CHECK(store_q(st, sql_future, NULL, 0, NULL, E));
	st = store_close(st);
	struct store *newer = NULL;
	assert_int_equal(store_open(url, &newer, &e), -1);
	assert_null(newer);
	assert_non_null(strstr(e.msg, "newer"));
	assert_int_equal(store_open("mysql://x", &newer, &e), -1);
}

static void test_store_submit_is_idempotent(void **state)
{
	char url[512];
	int64_t c1, v1, c2, v2, j1, j2, j3;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c1, &v1);
	seed(st, "cs102", &c2, &v2);
	int64_t s1 = submit(st, c1, v1, "key-1", NULL, 0, &j1);
	int64_t s2 = submit(st, c1, v1, "key-1", NULL, 0, &j2);
	assert_int_equal(s1, s2);
	assert_int_equal(j1, j2);
	struct store_submission_in in = {
	    .course_id = c1, .version_id = v1, .idempotency_key = "key-1", .data = "x", .len = 1};
	int64_t s, j;
	bool existing = false;
	CHECK(store_submit(st, &in, &s, &j, &existing, E));
	assert_true(existing);
	assert_int_equal(s, s1);
	/* The key is per course; no key means a new submission each time. */
	int64_t s3 = submit(st, c2, v2, "key-1", NULL, 0, &j3);
	assert_int_not_equal(s3, s1);
	int64_t s4 = submit(st, c1, v1, NULL, NULL, 0, NULL);
	int64_t s5 = submit(st, c1, v1, NULL, NULL, 0, NULL);
	assert_int_not_equal(s4, s5);
	/* Listing: by course, by student, paged. */
	int64_t ids[8];
	size_t n = 0;
	CHECK(store_submission_list(st, c1, NULL, 0, ids, 8, &n, E));
	assert_int_equal(n, 3);
	assert_int_equal(ids[0], s1);
	assert_int_equal(ids[2], s5);
	CHECK(store_submission_list(st, c1, "ada", 0, ids, 8, &n, E));
	assert_int_equal(n, 3);
	CHECK(store_submission_list(st, c1, "grace", 0, ids, 8, &n, E));
	assert_int_equal(n, 0);
	CHECK(store_submission_list(st, c1, NULL, s1, ids, 1, &n, E));
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], s4);
	/* A version of another course is refused. */
	struct err e;
	in.course_id = c1;
	in.version_id = v2;
	in.idempotency_key = NULL;
	assert_int_equal(store_submit(st, &in, &s, &j, &existing, &e), STORE_NOT_FOUND);
	store_close(st);
}

static void test_store_claims_oldest_runnable_first(void **state)
{
	char url[512];
	int64_t c, v, jobs[5];
	struct store_claim cl;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	for (int i = 0; i < 5; i++)
		submit(st, c, v, NULL, NULL, 0, &jobs[i]);
	/* The first job fails on our side with a long backoff: it is skipped. */
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	assert_int_equal(cl.job_id, jobs[0]);
	assert_int_equal(cl.attempt, 1);
	assert_string_equal(cl.image_pin, "small@1");
	bool final = true;
	CHECK(store_job_fail_ours(st, cl.job_id, cl.attempt, cl.lease_token, "image missing", 60000,
				  &final, E));
	assert_false(final);
	for (int i = 1; i < 5; i++) {
		assert_int_equal(claim(st, "w1", 60000, &cl), 1);
		assert_int_equal(cl.job_id, jobs[i]);
	}
	assert_int_equal(claim(st, "w1", 60000, &cl), 0);
	store_close(st);
}

/* Two processes claim and complete 200 jobs: each is completed exactly once. */
static void test_store_two_claimers_never_share_a_job(void **state)
{
	enum { JOBS = 200 };
	char url[512];
	int64_t c, v, first_job = 0;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	for (int i = 0; i < JOBS; i++) {
		int64_t j;
		submit(st, c, v, NULL, NULL, 0, &j);
		if (i == 0)
			first_job = j;
	}
	st = store_close(st);

	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t kids[2];
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (kids[k] == 0) {
			struct store *mine = NULL;
			struct err e;
			struct store_claim cl;
			char worker[16];
			int idle = 0;
			close(fds[0]);
			snprintf(worker, sizeof(worker), "w%d", k);
			if (store_open(url, &mine, &e) < 0)
				_exit(2);
			for (;;) {
				int rc = store_job_claim(mine, worker, "host", 60000, &cl, &e);
				if (rc < 0) {
					fprintf(stderr, "child claim: %s\n", e.msg);
					_exit(3);
				}
				if (rc == 0 && idle++ == 0) {
					sleep_ms(50); /* confirm once before stopping */
					continue;
				}
				if (rc == 0)
					break;
				idle = 0;
				if (store_job_complete(mine, cl.job_id, cl.attempt, cl.lease_token,
						       &a_result, NULL, &e) < 0) {
					fprintf(stderr, "child complete: %s\n", e.msg);
					_exit(4);
				}
				if (write(fds[1], &cl.job_id, sizeof(cl.job_id)) !=
				    sizeof(cl.job_id))
					_exit(5);
			}
			store_close(mine);
			_exit(0);
		}
	}
	close(fds[1]);
	int seen[JOBS] = {0};
	int64_t id;
	ssize_t n;
	while ((n = read(fds[0], &id, sizeof(id))) == sizeof(id)) {
		assert_true(id >= first_job && id < first_job + JOBS);
		seen[id - first_job]++;
	}
	close(fds[0]);
	for (int k = 0; k < 2; k++) {
		int status;
		assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	for (int i = 0; i < JOBS; i++)
		assert_int_equal(seen[i], 1);
	st = open_or_fail(url);
	assert_int_equal(count_rows(st, "SELECT COUNT(*) FROM results"), JOBS);
	assert_int_equal(count_rows(st, "SELECT COUNT(DISTINCT job_id) FROM results"), JOBS);
	assert_int_equal(count_rows(st, "SELECT COUNT(*) FROM jobs WHERE state <> 'done'"), 0);
	assert_int_equal(count_rows(st, "SELECT COUNT(*) FROM attempts WHERE outcome <> 'done'"),
			 0);
	store_close(st);
}

static void test_store_expired_lease_lets_another_worker_claim(void **state)
{
	char url[512];
	int64_t c, v, job;
	struct store_claim a, b;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	submit(st, c, v, NULL, NULL, 0, &job);
	assert_int_equal(claim(st, "w1", 1000, &a), 1);
	assert_int_equal(claim(st, "w2", 1000, &b), 0);
	sleep_ms(1250);
	assert_int_equal(claim(st, "w2", 60000, &b), 1);
	assert_int_equal(b.job_id, job);
	assert_int_equal(b.attempt, 2);
	assert_string_not_equal(a.lease_token, b.lease_token);
	struct store_attempt at[4];
	size_t n = 0;
	CHECK(store_job_attempts(st, job, at, 4, &n, E));
	assert_int_equal(n, 2);
	assert_string_equal(at[0].worker, "w1");
	assert_string_equal(at[0].outcome, "lease_expired");
	assert_string_equal(at[1].worker, "w2");
	assert_string_equal(at[1].outcome, "running");
	CHECK(store_job_complete(st, b.job_id, b.attempt, b.lease_token, &a_result, NULL, E));
	struct store_job j;
	CHECK(store_job_get(st, job, &j, E));
	assert_int_equal(j.state, STORE_JOB_DONE);
	assert_string_equal(j.worker, "w2");
	store_close(st);
}

static void test_store_fenced_worker_cannot_complete_or_heartbeat(void **state)
{
	char url[512];
	int64_t c, v, job, sub;
	struct store_claim a, b;
	struct err e;
	bool final;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	sub = submit(st, c, v, NULL, "http://127.0.0.1:9/cb", 0, &job);
	assert_int_equal(claim(st, "w1", 1000, &a), 1);
	CHECK(store_job_heartbeat(st, job, a.lease_token, E));
	CHECK(store_job_sandbox_ready(st, job, a.lease_token, E));
	sleep_ms(1250);
	/* Expired but not yet claimed again: still fenced. */
	assert_int_equal(store_job_heartbeat(st, job, a.lease_token, &e), STORE_FENCED);
	assert_int_equal(store_job_complete(st, job, a.attempt, a.lease_token, &a_result, NULL, &e),
			 STORE_FENCED);
	assert_int_equal(claim(st, "w2", 60000, &b), 1);
	assert_int_equal(b.job_id, job);
	assert_int_equal(store_job_heartbeat(st, job, a.lease_token, &e), STORE_FENCED);
	assert_int_equal(store_job_complete(st, job, a.attempt, a.lease_token, &a_result, NULL, &e),
			 STORE_FENCED);
	/* The right token with the old attempt number is fenced too. */
	assert_int_equal(store_job_complete(st, job, a.attempt, b.lease_token, &a_result, NULL, &e),
			 STORE_FENCED);
	assert_int_equal(
	    store_job_fail_ours(st, job, a.attempt, a.lease_token, "late", 10, &final, &e),
	    STORE_FENCED);
	int64_t n = -1;
	CHECK(store_result_count(st, sub, &n, E));
	assert_int_equal(n, 0);
	assert_int_equal(count_rows(st, "SELECT COUNT(*) FROM outbox"), 0);
	CHECK(store_job_heartbeat(st, job, b.lease_token, E));
	CHECK(store_job_complete(st, job, b.attempt, b.lease_token, &a_result, NULL, E));
	/* Completion happens once: the winner cannot complete again either. */
	assert_int_equal(store_job_complete(st, job, b.attempt, b.lease_token, &a_result, NULL, &e),
			 STORE_FENCED);
	CHECK(store_result_count(st, sub, &n, E));
	assert_int_equal(n, 1);
	store_close(st);
}

static void test_store_our_failure_backs_off_then_ends_as_error(void **state)
{
	char url[512];
	int64_t c, v, job;
	struct store_claim cl;
	bool final = true;
	struct store_job j;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	submit(st, c, v, NULL, NULL, 3, &job);
	/* attempt 1 fails: back off 500 ms */
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	CHECK(store_job_fail_ours(st, job, 1, cl.lease_token, "sandbox did not start", 500, &final,
				  E));
	assert_false(final);
	CHECK(store_job_get(st, job, &j, E));
	assert_int_equal(j.state, STORE_JOB_QUEUED);
	assert_false(j.not_gradable);
	assert_true(j.not_before_ms >= j.queued_ms + 450);
	assert_int_equal(claim(st, "w1", 60000, &cl), 0);
	sleep_ms(650);
	/* attempt 2 fails: back off 2 x 500 ms */
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	assert_int_equal(cl.attempt, 2);
	CHECK(store_job_fail_ours(st, job, 2, cl.lease_token, "sandbox did not start", 500, &final,
				  E));
	assert_false(final);
	CHECK(store_job_get(st, job, &j, E));
	assert_true(j.not_before_ms >= j.queued_ms + 950); /* doubled */
	assert_int_equal(claim(st, "w1", 60000, &cl), 0);
	sleep_ms(1100);
	/* attempt 3 is the last: error, not gradable, no penalty */
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	assert_int_equal(cl.attempt, 3);
	CHECK(store_job_fail_ours(st, job, 3, cl.lease_token, "image missing", 500, &final, E));
	assert_true(final);
	CHECK(store_job_get(st, job, &j, E));
	assert_int_equal(j.state, STORE_JOB_ERROR);
	assert_true(j.not_gradable);
	assert_string_equal(j.error, "image missing");
	assert_true(j.finished_ms > 0);
	sleep_ms(600);
	assert_int_equal(claim(st, "w1", 60000, &cl), 0);
	struct store_attempt at[4];
	size_t n;
	CHECK(store_job_attempts(st, job, at, 4, &n, E));
	assert_int_equal(n, 3);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(at[i].outcome, "failed");
	store_close(st);
}

static void test_store_lost_worker_on_last_attempt_ends_as_error(void **state)
{
	char url[512];
	int64_t c, v, job;
	struct store_claim cl;
	struct store_job j;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	submit(st, c, v, NULL, NULL, 1, &job);
	assert_int_equal(claim(st, "w1", 100, &cl), 1);
	sleep_ms(250);
	assert_int_equal(claim(st, "w2", 60000, &cl), 0);
	CHECK(store_job_get(st, job, &j, E));
	assert_int_equal(j.state, STORE_JOB_ERROR);
	assert_true(j.not_gradable);
	assert_non_null(strstr(j.error, "lease expired"));
	struct store_attempt at[2];
	size_t n;
	CHECK(store_job_attempts(st, job, at, 2, &n, E));
	assert_int_equal(n, 1);
	assert_string_equal(at[0].outcome, "lease_expired");
	store_close(st);
}

static void test_store_outbox_row_is_written_with_the_result(void **state)
{
	char url[512];
	int64_t c, v, job, result = 0;
	struct store_claim cl;
	struct store_delivery d[4];
	struct store_outbox_row o[2];
	size_t n;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	int64_t sub = submit(st, c, v, NULL, "http://127.0.0.1:9/hook", 0, &job);
	int64_t job_nocb;
	submit(st, c, v, NULL, NULL, 0, &job_nocb);
	CHECK(store_outbox_take_due(st, 1000, d, 4, &n, E));
	assert_int_equal(n, 0);
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	CHECK(store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &a_result, &result, E));
	CHECK(store_outbox_for_job(st, job, o, 2, &n, E));
	assert_int_equal(n, 1);
	assert_int_equal(o[0].result_id, result);
	assert_string_equal(o[0].state, "pending");
	/* A job without a callback has no outbox row. */
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	CHECK(store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &a_result, NULL, E));
	CHECK(store_outbox_for_job(st, job_nocb, o, 2, &n, E));
	assert_int_equal(n, 0);

	CHECK(store_outbox_take_due(st, 60000, d, 4, &n, E));
	assert_int_equal(n, 1);
	assert_int_equal(d[0].job_id, job);
	assert_int_equal(d[0].submission_id, sub);
	assert_string_equal(d[0].url, "http://127.0.0.1:9/hook");
	assert_int_equal(strlen(d[0].delivery_id), 32);
	assert_non_null(strstr(d[0].payload, d[0].delivery_id));
	/* A callback a submit token asked for carries the student view. */
	assert_non_null(strstr(d[0].payload, "\"view\":\"student\""));
	assert_null(strstr(d[0].payload, "secret"));
	int64_t outbox = d[0].outbox_id;
	store_delivery_clear(&d[0]);
	/* Held for the first sender: nobody else takes it. */
	CHECK(store_outbox_take_due(st, 60000, d, 4, &n, E));
	assert_int_equal(n, 0);
	/* A failed attempt is retried later; then delivered. */
	CHECK(store_outbox_record(st, outbox, false, 500, "HTTP 500", 0, 5, E));
	CHECK(store_outbox_take_due(st, 60000, d, 4, &n, E));
	assert_int_equal(n, 1);
	assert_int_equal(d[0].attempts, 1);
	store_delivery_clear(&d[0]);
	CHECK(store_outbox_record(st, outbox, true, 204, NULL, 0, 5, E));
	CHECK(store_outbox_for_job(st, job, o, 2, &n, E));
	assert_string_equal(o[0].state, "delivered");
	assert_int_equal(o[0].attempts, 2);
	assert_true(o[0].delivered_ms > 0);
	assert_int_equal(count_rows(st, "SELECT COUNT(*) FROM deliveries"), 2);
	struct store_job j;
	CHECK(store_job_get(st, job, &j, E));
	assert_true(j.delivered_ms >= j.finished_ms);
	/* A delivered row takes no more attempts. */
	struct err e;
	assert_int_equal(store_outbox_record(st, outbox, true, 204, NULL, 0, 5, &e),
			 STORE_NOT_FOUND);
	store_close(st);
}

/* A callback made with an instructor's token carries the result document;
 * a student's without a student view given carries "result": null. */
static void test_store_callback_payload_follows_who_asked(void **state)
{
	char url[512];
	int64_t c, v, sub, job;
	bool existing;
	struct store_claim cl;
	struct store_delivery d[2];
	size_t n;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	struct store_submission_in in = {.course_id = c,
					 .version_id = v,
					 .student = "ada",
					 .callback_url = "http://127.0.0.1:9/staff",
					 .callback_staff = true,
					 .data = "x",
					 .len = 1};
	CHECK(store_submit(st, &in, &sub, &job, &existing, E));
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	CHECK(store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &a_result, NULL, E));
	CHECK(store_outbox_take_due(st, 60000, d, 2, &n, E));
	assert_int_equal(n, 1);
	assert_non_null(strstr(d[0].payload, "\"tests\":[{\"name\":\"secret\"}]"));
	store_delivery_clear(&d[0]);

	struct store_result_in no_view = a_result;
	no_view.student_json = NULL;
	in.callback_url = "http://127.0.0.1:9/student";
	in.callback_staff = false;
	CHECK(store_submit(st, &in, &sub, &job, &existing, E));
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	CHECK(store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &no_view, NULL, E));
	CHECK(store_outbox_take_due(st, 60000, d, 2, &n, E));
	assert_int_equal(n, 1);
	assert_string_equal(d[0].url, "http://127.0.0.1:9/student");
	assert_non_null(strstr(d[0].payload, "\"result\":null"));
	assert_null(strstr(d[0].payload, "secret"));
	store_delivery_clear(&d[0]);
	store_close(st);
}

static const char sql_blob_rows[] = "SELECT COUNT(*) FROM blobs";

static void test_store_blobs_are_deduplicated(void **state)
{
	char url[512], a[65], b[65], z[65];
	void *data = NULL;
	size_t len = 0;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	int64_t before = count_rows(st, sql_blob_rows);
	CHECK(store_blob_put(st, "same bytes\0with a NUL", 21, a, E));
	CHECK(store_blob_put(st, "same bytes\0with a NUL", 21, b, E));
	assert_string_equal(a, b);
	assert_int_equal(count_rows(st, sql_blob_rows), before + 1);
	CHECK(store_blob_get(st, a, &data, &len, E));
	assert_int_equal(len, 21);
	assert_memory_equal(data, "same bytes\0with a NUL", 21);
	free(data);
	CHECK(store_blob_put(st, "", 0, z, E));
	assert_string_equal(z, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	CHECK(store_blob_get(st, z, &data, &len, E));
	assert_int_equal(len, 0);
	assert_null(data);
	/* The cap is checked before a byte is read. */
	assert_int_equal(store_blob_put(st, "x", (size_t)STORE_BLOB_MAX + 1, z, &e),
			 STORE_TOO_LARGE);
	assert_int_equal(store_blob_get(st, "00", &data, &len, &e), STORE_NOT_FOUND);
	/* Two submissions of the same bytes share one blob. */
	int64_t c, v;
	seed(st, "cs101", &c, &v);
	int64_t n0 = count_rows(st, sql_blob_rows);
	submit(st, c, v, NULL, NULL, 0, NULL);
	submit(st, c, v, NULL, NULL, 0, NULL);
	assert_int_equal(count_rows(st, sql_blob_rows), n0 + 1);
	/* Re-uploading the same assignment adds no version. */
	int64_t v2;
	int no;
	CHECK(store_assignment_add_version(st, c, "hello", "archive-bytes", 13, "small@1", &v2, &no,
					   E));
	assert_int_equal(v2, v);
	assert_int_equal(no, 1);
	CHECK(store_assignment_add_version(st, c, "hello", "archive-bytes", 13, "small@2", &v2, &no,
					   E));
	assert_int_equal(no, 2);
	struct store_version ver;
	CHECK(store_version_get(st, v, &ver, E));
	CHECK(store_assignment_latest(st, ver.assignment_id, &ver, E));
	assert_int_equal(ver.version_id, v2);
	assert_string_equal(ver.image_pin, "small@2");
	store_close(st);
}

static const char sql_secrets[] = "SELECT selector, secret_sha256 FROM tokens";

static void test_store_tokens_are_hashed_and_checked(void **state)
{
	char url[512], t1[STORE_TOKEN_LEN + 1], t2[STORE_TOKEN_LEN + 1], bad[STORE_TOKEN_LEN + 1];
	struct store_token_info info;
	struct err e;
	int64_t c1, c2;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	CHECK(store_token_create(st, "cs101", STORE_SCOPE_SUBMIT, t1, E));
	CHECK(store_token_create(st, "cs202", STORE_SCOPE_INSTRUCTOR, t2, E));
	CHECK(store_course_ensure(st, "cs101", false, &c1, E));
	CHECK(store_course_ensure(st, "cs202", false, &c2, E));
	assert_int_equal(strlen(t1), STORE_TOKEN_LEN);
	CHECK(store_token_check(st, t1, &info, E));
	assert_int_equal(info.course_id, c1);
	assert_int_equal(info.scope, STORE_SCOPE_SUBMIT);
	CHECK(store_token_check(st, t2, &info, E));
	assert_int_equal(info.course_id, c2);
	assert_int_equal(info.scope, STORE_SCOPE_INSTRUCTOR);
	/* One wrong character of the secret, a truncated token, garbage. */
	memcpy(bad, t1, sizeof(bad));
	bad[STORE_TOKEN_LEN - 1] = bad[STORE_TOKEN_LEN - 1] == 'a' ? 'b' : 'a';
	assert_int_equal(store_token_check(st, bad, &info, &e), STORE_NOT_FOUND);
	bad[STORE_TOKEN_LEN - 1] = '\0';
	assert_int_equal(store_token_check(st, bad, &info, &e), STORE_NOT_FOUND);
	assert_int_equal(store_token_check(st, "Bearer x", &info, &e), STORE_NOT_FOUND);
	assert_int_equal(store_token_check(st, NULL, &info, &e), STORE_NOT_FOUND);
	/* Only the hash is stored. */
	struct store_rows *rows = NULL;
	CHECK(store_q(st, sql_secrets, NULL, 0, &rows, E));
	assert_int_equal(rows->nrows, 2);
	for (size_t r = 0; r < rows->nrows; r++) {
		const char *hash = store_col_text(rows, r, 1);
		assert_int_equal(strlen(hash), 64);
		assert_null(strstr(t1, hash));
		assert_null(strstr(t2, hash));
	}
	store_rows_free(rows);
	CHECK(store_token_check(st, t1, &info, E));
	CHECK(store_token_revoke(st, 0, info.token_id, E));
	assert_int_equal(store_token_check(st, t1, &info, &e), STORE_NOT_FOUND);
	enum store_scope sc;
	assert_int_equal(store_scope_parse("root", &sc, &e), STORE_INVALID);
	CHECK(store_scope_parse("admin", &sc, E));
	assert_int_equal(sc, STORE_SCOPE_ADMIN);
	store_close(st);
}

/* The child's half-done completion, never committed.  Its rows are taken
 * so that PostgreSQL runs it at once (src/store/pg.c sends a write whose
 * rows nobody takes with the next statement). */
static const char sql_half_done[] = "UPDATE jobs SET state = 'done' WHERE id = $1 RETURNING id";

/* A worker killed with SIGKILL inside its completion transaction. */
static void test_store_crash_between_claim_and_complete_loses_nothing(void **state)
{
	enum { LEASE_MS = 1500 };
	char url[512];
	int64_t c, v, job, sub;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	sub = submit(st, c, v, NULL, NULL, 0, &job);
	st = store_close(st);

	int fds[2];
	assert_int_equal(pipe(fds), 0);
	pid_t kid = fork();
	assert_true(kid >= 0);
	if (kid == 0) {
		struct store *mine = NULL;
		struct store_rows *rows = NULL;
		struct err e;
		struct store_claim cl;
		close(fds[0]);
		if (store_open(url, &mine, &e) < 0 ||
		    store_job_claim(mine, "doomed", "host", LEASE_MS, &cl, &e) != 1)
			_exit(2);
		struct store_val p[] = {sv_int(cl.job_id)};
		if (store_tx_begin(mine, STORE_TX_WRITE, &e) < 0 ||
		    store_q(mine, sql_half_done, p, 1, &rows, &e) < 0 || rows->nrows != 1)
			_exit(3);
		char ok = 'x';
		if (write(fds[1], &ok, 1) != 1)
			_exit(4);
		for (;;)
			pause();
	}
	close(fds[1]);
	char ok;
	assert_int_equal(read(fds[0], &ok, 1), 1);
	close(fds[0]);
	assert_int_equal(kill(kid, SIGKILL), 0);
	int status;
	assert_int_equal(waitpid(kid, &status, 0), kid);
	assert_true(WIFSIGNALED(status));

	st = open_or_fail(url);
	struct store_job j;
	struct store_claim cl;
	CHECK(store_job_get(st, job, &j, E));
	assert_int_equal(j.state, STORE_JOB_RUNNING); /* the half-done write is gone */
	assert_string_equal(j.worker, "doomed");
	int64_t now = 0;
	CHECK(store_now_ms(st, &now, E));
	if (now < j.lease_expires_ms - 100)
		assert_int_equal(claim(st, "w2", 60000, &cl), 0); /* still leased */
	sleep_ms(LEASE_MS + 200);
	assert_int_equal(claim(st, "w2", 60000, &cl), 1);
	assert_int_equal(cl.job_id, job);
	assert_int_equal(cl.attempt, 2);
	CHECK(store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &a_result, NULL, E));
	int64_t n;
	CHECK(store_result_count(st, sub, &n, E));
	assert_int_equal(n, 1);
	struct store_submission_view view;
	CHECK(store_submission_get(st, sub, &view, E));
	assert_true(view.has_result);
	assert_int_equal(view.job.state, STORE_JOB_DONE);
	assert_string_equal(view.job.worker, "w2");
	store_submission_view_clear(&view);
	store_close(st);
}

/* Regrade one submission against `version` (of its assignment): its new job. */
static int64_t regrade_one(struct store *st, int64_t course, int64_t submission, int64_t version)
{
	struct store_version ver;
	struct store_regrade_info info;
	struct store_regrade_item item;
	int64_t regrade, used;
	size_t jobs, n;

	CHECK(store_version_get(st, version, &ver, E));
	struct store_regrade_in in = {.course_id = course,
				      .assignment_id = ver.assignment_id,
				      .version_id = version,
				      .scope = STORE_REGRADE_SUBMISSION,
				      .submission_id = submission};
	CHECK(store_regrade_batch(st, &in, &regrade, &used, &jobs, E));
	assert_int_equal(jobs, 1);
	assert_int_equal(used, version);
	CHECK(store_regrade_get(st, regrade, &info, &item, 1, &n, E));
	assert_int_equal(n, 1);
	assert_int_equal(item.submission_id, submission);
	return item.job_id;
}

static void test_store_regrade_adds_a_result_beside_the_old(void **state)
{
	char url[512];
	int64_t c, v, job, regrade;
	struct store_claim cl;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	int64_t sub = submit(st, c, v, NULL, NULL, 0, &job);
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	CHECK(store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &a_result, NULL, E));
	int64_t v2;
	CHECK(store_assignment_add_version(st, c, "hello", "archive-v2", 10, "small@1", &v2, NULL,
					   E));
	regrade = regrade_one(st, c, sub, v2);
	assert_int_not_equal(regrade, job);
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	assert_int_equal(cl.job_id, regrade);
	assert_int_equal(cl.version_id, v2);
	struct store_result_in r2 = a_result;
	r2.score = 2;
	r2.doc_json = "{\"status\":\"ok\",\"score\":2}";
	CHECK(store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &r2, NULL, E));
	int64_t n;
	CHECK(store_result_count(st, sub, &n, E));
	assert_int_equal(n, 2);
	struct store_result rs[4];
	size_t nr = 0;
	CHECK(store_result_list(st, sub, rs, 4, &nr, E));
	assert_int_equal(nr, 2);
	assert_true(rs[0].score == 1.0 && rs[1].score == 2.0);
	assert_int_equal(rs[0].version_id, v);
	assert_int_equal(rs[1].version_id, v2);
	assert_null(rs[0].doc_json);
	struct store_submission_view view;
	CHECK(store_submission_get(st, sub, &view, E));
	assert_true(view.has_result);
	assert_true(view.result.score == 2.0);
	assert_true(view.result.max_score == 2.0);
	assert_true(fabs(view.result.cpu_seconds - 0.5) < 1e-9);
	assert_int_equal(view.result.version_id, v2);
	assert_string_equal(view.result.doc_json, r2.doc_json);
	assert_int_equal(view.job.job_id, regrade);
	assert_true(view.job.received_ms <= view.job.queued_ms);
	assert_true(view.job.started_ms <= view.job.finished_ms);
	store_submission_view_clear(&view);
	/* A malformed document is refused before anything is written. */
	struct err e;
	r2.doc_json = "{not json";
	assert_int_equal(
	    store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &r2, NULL, &e),
	    STORE_INVALID);
	store_close(st);
}

static int64_t submit_as(struct store *st, int64_t course, int64_t version, const char *student,
			 int max_attempts)
{
	struct store_submission_in in = {.course_id = course,
					 .version_id = version,
					 .student = student,
					 .data = "print('hi')\n",
					 .len = 12,
					 .max_attempts = max_attempts};
	int64_t sub, job;
	bool existing;
	CHECK(store_submit(st, &in, &sub, &job, &existing, E));
	return sub;
}

/* Claim the oldest runnable job and complete it with `doc` and `score`. */
static int64_t grade_next(struct store *st, const char *doc, double score)
{
	struct store_claim cl;
	int64_t result = 0;
	struct store_result_in r = {
	    .doc_json = doc, .score = score, .max_score = 10, .cpu_seconds = 2, .gib_seconds = 1};

	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	CHECK(store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &r, &result, E));
	return result;
}

static void test_store_regrade_batch_says_which_scores_changed(void **state)
{
	char url[512];
	int64_t c, v, v2, regrade, version, other_c, other_v;
	struct store_regrade_info info;
	struct store_regrade_item items[8];
	size_t jobs, n;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	seed(st, "cs202", &other_c, &other_v);
	int64_t ada1 = submit_as(st, c, v, "ada", 0), ada2 = submit_as(st, c, v, "ada", 0);
	int64_t bob = submit_as(st, c, v, "bob", 0);
	for (int i = 0; i < 3; i++)
		grade_next(st, a_result.doc_json, 1);
	CHECK(store_assignment_add_version(st, c, "hello", "archive-v2", 10, "small@1", &v2, NULL,
					   E));
	struct store_version ver;
	CHECK(store_version_get(st, v2, &ver, E));

	/* Every student's latest, against the latest version by default. */
	struct store_regrade_in in = {
	    .course_id = c, .assignment_id = ver.assignment_id, .scope = STORE_REGRADE_LATEST};
	CHECK(store_regrade_batch(st, &in, &regrade, &version, &jobs, E));
	assert_int_equal(jobs, 2);
	assert_int_equal(version, v2);
	CHECK(store_regrade_get(st, regrade, &info, items, 8, &n, E));
	assert_int_equal(info.total, 2);
	assert_int_equal(info.finished, 0);
	assert_int_equal(items[0].submission_id, ada2);
	assert_int_equal(items[1].submission_id, bob);
	assert_true(isnan(items[0].new_score) && items[0].old_score == 1.0);
	grade_next(st, a_result.doc_json, 2); /* ada's latest changes */
	grade_next(st, a_result.doc_json, 1); /* bob's does not */
	CHECK(store_regrade_get(st, regrade, &info, items, 8, &n, E));
	assert_int_equal(info.finished, 2);
	assert_int_equal(info.changed, 1);
	assert_string_equal(items[0].student, "ada");
	assert_true(items[0].new_score == 2.0 && items[1].new_score == 1.0);

	/* The other scopes take what they say. */
	in.scope = STORE_REGRADE_ALL;
	CHECK(store_regrade_batch(st, &in, &regrade, &version, &jobs, E));
	assert_int_equal(jobs, 3);
	in.scope = STORE_REGRADE_STUDENT;
	in.student = "bob";
	CHECK(store_regrade_batch(st, &in, &regrade, &version, &jobs, E));
	assert_int_equal(jobs, 1);
	CHECK(store_regrade_get(st, regrade, &info, items, 8, &n, E));
	assert_int_equal(items[0].submission_id, bob);
	in.scope = STORE_REGRADE_SUBMISSION;
	in.submission_id = ada1;
	in.version_id = v; /* an older version may be asked for */
	CHECK(store_regrade_batch(st, &in, &regrade, &version, &jobs, E));
	assert_int_equal(jobs, 1);
	assert_int_equal(version, v);

	/* Another course's assignment, another assignment's version, a scope
	 * that takes nothing: refused, nothing written. */
	in.course_id = other_c;
	assert_int_equal(store_regrade_batch(st, &in, &regrade, &version, &jobs, &e),
			 STORE_NOT_FOUND);
	in.course_id = c;
	in.version_id = other_v; /* another course's: as if it did not exist */
	assert_int_equal(store_regrade_batch(st, &in, &regrade, &version, &jobs, &e),
			 STORE_NOT_FOUND);
	int64_t bye;
	CHECK(store_assignment_add_version(st, c, "bye", "archive-bye", 11, "small@1", &bye, NULL,
					   E));
	in.version_id = bye; /* this course's, another assignment's */
	assert_int_equal(store_regrade_batch(st, &in, &regrade, &version, &jobs, &e),
			 STORE_INVALID);
	in.version_id = 0;
	in.scope = STORE_REGRADE_STUDENT;
	in.student = "nobody";
	assert_int_equal(store_regrade_batch(st, &in, &regrade, &version, &jobs, &e),
			 STORE_NOT_FOUND);
	assert_int_equal(store_regrade_get(st, regrade + 100, &info, items, 8, &n, &e),
			 STORE_NOT_FOUND);
	store_close(st);
}

static void test_store_counts_jobs_by_course_and_state(void **state)
{
	char url[512];
	int64_t c1, v1, c2, v2;
	struct store_claim cl;
	struct store_course_counts counts[4];
	size_t n;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c1, &v1);
	seed(st, "cs102", &c2, &v2);
	for (int i = 0; i < 3; i++)
		submit(st, c1, v1, NULL, NULL, 0, NULL);
	submit(st, c2, v2, NULL, NULL, 0, NULL);
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	CHECK(store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &a_result, NULL, E));
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	CHECK(store_job_counts(st, counts, 4, &n, E));
	assert_int_equal(n, 2);
	assert_int_equal(counts[0].course_id, c1);
	assert_int_equal(counts[0].n[STORE_JOB_DONE], 1);
	assert_int_equal(counts[0].n[STORE_JOB_RUNNING], 1);
	assert_int_equal(counts[0].n[STORE_JOB_QUEUED], 1);
	assert_int_equal(counts[1].course_id, c2);
	assert_int_equal(counts[1].n[STORE_JOB_QUEUED], 1);
	int64_t backlog = -1;
	CHECK(store_course_backlog(st, c1, &backlog, E));
	assert_int_equal(backlog, 2);
	CHECK(store_course_backlog(st, c2, &backlog, E));
	assert_int_equal(backlog, 1);
	double cpu = -1;
	CHECK(store_course_cpu_since(st, c1, 0, &cpu, E));
	assert_true(fabs(cpu - a_result.cpu_seconds) < 1e-9);
	CHECK(store_course_cpu_since(st, c2, 0, &cpu, E));
	assert_true(cpu == 0);
	struct store_course course;
	CHECK(store_course_get(st, c1, &course, E));
	assert_string_equal(course.name, "cs101");
	assert_true(isnan(course.daily_cpu_cap));
	CHECK(store_course_set_cpu_cap(st, c1, 3600, E));
	CHECK(store_course_get(st, c1, &course, E));
	assert_true(course.daily_cpu_cap == 3600);
	CHECK(store_course_set_cpu_cap(st, c1, NAN, E));
	CHECK(store_course_get(st, c1, &course, E));
	assert_true(isnan(course.daily_cpu_cap));
	struct err e;
	assert_int_equal(store_course_get(st, 999, &course, &e), STORE_NOT_FOUND);
	store_close(st);
}

static void test_store_released_job_is_claimable_at_once_and_costs_no_attempt(void **state)
{
	char url[512];
	int64_t c, v, job;
	struct store_claim a, b;
	struct store_job j;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	submit(st, c, v, NULL, NULL, 1, &job);
	assert_int_equal(claim(st, "w1", 60000, &a), 1);
	CHECK(store_job_release(st, job, a.attempt, a.lease_token, E));
	assert_int_equal(store_job_release(st, job, a.attempt, a.lease_token, &e), STORE_FENCED);
	assert_int_equal(claim(st, "w2", 60000, &b), 1);
	assert_int_equal(b.job_id, job);
	assert_int_equal(b.attempt, 2);
	assert_int_equal(b.max_attempts, 2); /* the released attempt did not count */
	CHECK(store_job_complete(st, job, b.attempt, b.lease_token, &a_result, NULL, E));
	CHECK(store_job_get(st, job, &j, E));
	assert_int_equal(j.state, STORE_JOB_DONE);
	struct store_attempt at[3];
	size_t n;
	CHECK(store_job_attempts(st, job, at, 3, &n, E));
	assert_int_equal(n, 2);
	assert_string_equal(at[0].outcome, store_outcome_name(STORE_OUTCOME_RELEASED));
	assert_string_equal(at[1].outcome, store_outcome_name(STORE_OUTCOME_DONE));
	assert_null(store_outcome_name(STORE_OUTCOMES));
	/* /metrics' counts, by the same names. */
	struct store_worker_stat ws[2];
	int64_t outcomes[STORE_OUTCOMES];
	CHECK(store_worker_stats(st, ws, 2, &n, outcomes, E));
	assert_int_equal(n, 0); /* nobody holds a job */
	for (int i = 0; i < STORE_OUTCOMES; i++)
		assert_int_equal(outcomes[i],
				 i == STORE_OUTCOME_RELEASED || i == STORE_OUTCOME_DONE ? 1 : 0);
	store_close(st);
}

/* Run fn(url, k) in `n` processes at once; every one must exit 0. */
static void in_processes(const char *url, int n, int (*fn)(const char *url, int k))
{
	pid_t kids[8];

	assert_true(n <= 8);
	for (int k = 0; k < n; k++) {
		kids[k] = fork();
		assert_true(kids[k] >= 0);
		if (kids[k] == 0)
			_exit(fn(url, k));
	}
	for (int k = 0; k < n; k++) {
		int status;
		assert_int_equal(waitpid(kids[k], &status, 0), kids[k]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
}

/*
 * Opening a current database takes no lock: another process opens it while
 * this one holds a write transaction (SQLite's write lock) and the
 * migration lock (PostgreSQL's advisory lock).
 */
static void test_store_opening_a_current_database_waits_for_no_lock(void **state)
{
	struct backend *b = *state;
	char url[512], other[640];
	struct err e;
	int status = 0;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	CHECK(store_tx_begin(st, STORE_TX_WRITE, E));
	const char *lock = st->ops->dialect->schema_lock;
	if (lock[0] && st->ops->exec_script(st->conn, lock, &e) < 0)
		fail_msg("schema lock: %s", e.msg);
	/* A wait is a failure: PostgreSQL's after 2 s, SQLite's at its busy
	 * timeout.  Another process, exec'd, as in the locks test above. */
	snprintf(other, sizeof(other), b->pg ? "%s?options=-c%%20lock_timeout%%3D2000" : "%s", url);
	pid_t kid = fork();
	if (kid == 0) {
		execl("/proc/self/exe", "test_store", "--open-and-close", other, (char *)NULL);
		_exit(127);
	}
	assert_true(kid > 0 && waitpid(kid, &status, 0) == kid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	store_tx_rollback(st);
	store_close(st);
}

static int open_and_close(const char *url, int k)
{
	struct store *st = NULL;
	struct err e;

	if (store_open(url, &st, &e) < 0) {
		fprintf(stderr, "process %d: %s\n", k, e.msg);
		return 1;
	}
	store_close(st);
	return 0;
}

static void test_store_processes_opening_together_migrate_once(void **state)
{
	char url[512];

	fresh_url(state, url, sizeof(url));
	in_processes(url, 4, open_and_close);
	struct store *st = open_or_fail(url);
	assert_int_equal(count_rows(st, sql_version), STORE_SCHEMA_VERSION);
	assert_int_equal(count_rows(st, sql_versions), (int64_t)store_migration_count);
	store_close(st);
}

/* What the processes of in_processes() submit to, set before they fork. */
static struct store_version seeded;

/* Each process submits the same key 20 times; each must get the same ids. */
static int submit_same_key(const char *url, int k)
{
	struct store *st = NULL;
	struct err e;
	int64_t sub, job, first = 0;

	if (store_open(url, &st, &e) < 0) {
		fprintf(stderr, "process %d: %s\n", k, e.msg);
		return 1;
	}
	for (int i = 0; i < 20; i++) {
		struct store_submission_in in = {.course_id = seeded.course_id,
						 .version_id = seeded.version_id,
						 .idempotency_key = "retried-post",
						 .data = "same",
						 .len = 4};
		if (store_submit(st, &in, &sub, &job, NULL, &e) < 0) {
			fprintf(stderr, "process %d: %s\n", k, e.msg);
			return 2;
		}
		if (first && sub != first)
			return 3;
		first = sub;
	}
	store_close(st);
	return 0;
}

static const char sql_keyed[] =
    "SELECT COUNT(*) FROM submissions WHERE idempotency_key = 'retried-post'";
static const char sql_keyed_jobs[] =
    "SELECT COUNT(*) FROM jobs j JOIN submissions s "
    "ON s.id = j.submission_id WHERE s.idempotency_key = 'retried-post'";

static void test_store_concurrent_retries_of_one_key_make_one_submission(void **state)
{
	char url[512];
	int64_t c, v;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	CHECK(store_version_get(st, v, &seeded, E));
	st = store_close(st);
	in_processes(url, 4, submit_same_key);
	st = open_or_fail(url);
	assert_int_equal(count_rows(st, sql_keyed), 1);
	assert_int_equal(count_rows(st, sql_keyed_jobs), 1);
	store_close(st);
}

/* An admission check that allows at most 3 submissions of ada's. */
static int at_most_three(struct store *st, void *ctx, struct err *e)
{
	struct store_submit_count c;
	int64_t *assignment = ctx;
	int rc = store_student_submissions(st, *assignment, "ada", &c, e);

	return rc < 0 ? rc : c.counted >= 3;
}

static int submit_checked(const char *url, int k)
{
	struct store *st = NULL;
	struct err e;
	int64_t sub, job;
	bool existing;

	if (store_open(url, &st, &e) < 0) {
		fprintf(stderr, "process %d: %s\n", k, e.msg);
		return 1;
	}
	for (int i = 0; i < 5; i++) {
		struct store_submission_in in = {.course_id = seeded.course_id,
						 .version_id = seeded.version_id,
						 .student = "ada",
						 .data = "x",
						 .len = 1,
						 .admit = at_most_three,
						 .admit_ctx = &seeded.assignment_id};
		int rc = store_submit(st, &in, &sub, &job, &existing, &e);
		if (rc < 0 && rc != STORE_REFUSED) {
			fprintf(stderr, "process %d: %s\n", k, e.msg);
			return 2;
		}
	}
	store_close(st);
	return 0;
}

static void test_store_admission_check_and_submit_are_one_step(void **state)
{
	char url[512];
	int64_t c, v;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	CHECK(store_version_get(st, v, &seeded, E));
	st = store_close(st);
	/* 4 processes x 5 tries at once: exactly 3 get in, whatever the timing. */
	in_processes(url, 4, submit_checked);
	st = open_or_fail(url);
	assert_int_equal(count_rows(st, "SELECT COUNT(*) FROM submissions WHERE student = 'ada'"),
			 3);
	assert_int_equal(count_rows(st, "SELECT COUNT(*) FROM jobs"), 3);
	store_close(st);
}

static void test_store_outbox_gives_up_after_max_attempts(void **state)
{
	char url[512];
	int64_t c, v, job;
	struct store_claim cl;
	struct store_delivery d[2];
	struct store_outbox_row o[1];
	size_t n;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	submit(st, c, v, NULL, "http://127.0.0.1:9/hangs", 0, &job);
	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	CHECK(store_job_complete(st, cl.job_id, cl.attempt, cl.lease_token, &a_result, NULL, E));
	for (int i = 1; i <= 3; i++) {
		CHECK(store_outbox_take_due(st, 60000, d, 2, &n, E));
		assert_int_equal(n, 1);
		assert_int_equal(d[0].attempts, i - 1);
		int64_t id = d[0].outbox_id;
		store_delivery_clear(&d[0]);
		CHECK(store_outbox_record(st, id, false, 0, "timed out", 0, 3, E));
	}
	CHECK(store_outbox_for_job(st, job, o, 1, &n, E));
	assert_string_equal(o[0].state, "failed");
	assert_int_equal(o[0].attempts, 3);
	CHECK(store_outbox_take_due(st, 60000, d, 2, &n, E));
	assert_int_equal(n, 0);
	assert_int_equal(
	    count_rows(st, "SELECT COUNT(*) FROM deliveries WHERE http_status IS NULL"), 3);
	assert_int_equal(store_outbox_record(st, o[0].outbox_id, true, 200, NULL, 0, 3, &e),
			 STORE_NOT_FOUND);
	store_close(st);
}

static void test_store_sweep_ends_jobs_of_lost_workers(void **state)
{
	char url[512];
	int64_t c, v, j1, j2, ended = -1;
	struct store_claim a, b;
	struct store_job j;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	submit(st, c, v, NULL, NULL, 1, &j1);
	submit(st, c, v, NULL, NULL, 1, &j2);
	assert_int_equal(claim(st, "w1", 100, &a), 1);
	assert_int_equal(claim(st, "w2", 60000, &b), 1);
	sleep_ms(250);
	CHECK(store_job_sweep(st, &ended, E));
	assert_int_equal(ended, 1);
	CHECK(store_job_get(st, j1, &j, E));
	assert_int_equal(j.state, STORE_JOB_ERROR);
	CHECK(store_job_get(st, j2, &j, E)); /* a live lease is left alone */
	assert_int_equal(j.state, STORE_JOB_RUNNING);
	CHECK(store_job_sweep(st, &ended, E));
	assert_int_equal(ended, 0);
	store_close(st);
}

/*
 * SQLite: a second connection opened in a process keeps the first one's
 * POSIX locks.  Closing any descriptor of the database file drops them all;
 * another process closing its only connection then thinks itself the last
 * one and resets the WAL under the first connection (a corrupt database,
 * acknowledged submissions lost).
 */
static void test_store_sqlite_second_connection_keeps_the_first_ones_locks(void **state)
{
	struct backend *b = *state;
	char url[512], wal[600];
	int64_t course, version;
	struct stat sb;
	int status;

	assert_null(b->pg); /* registered for SQLite only */
	fresh_url(state, url, sizeof(url));
	struct store *first = open_or_fail(url);
	seed(first, "c", &course, &version);
	submit(first, course, version, NULL, NULL, 0, NULL);
	struct store *second = open_or_fail(url);
	/* Another process, exec'd: a forked child would inherit SQLite's
	 * bookkeeping of this process's locks and not try. */
	pid_t kid = fork();
	if (kid == 0) {
		execl("/proc/self/exe", "test_store", "--open-and-close", url, (char *)NULL);
		_exit(127);
	}
	assert_true(kid > 0 && waitpid(kid, &status, 0) == kid && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0);
	snprintf(wal, sizeof(wal), "%s-wal", url + strlen("sqlite:"));
	assert_int_equal(stat(wal, &sb), 0);
	submit(first, course, version, NULL, NULL, 0, NULL);
	assert_int_equal(count_rows(second, "SELECT COUNT(*) FROM jobs"), 2);
	store_close(second);
	store_close(first);
}


/* A job state this code does not know (a newer proctor's, or a damaged row)
 * is our failure wherever a job is read, never taken for another state. */
static void test_store_unknown_job_state_is_our_error(void **state)
{
	char url[512];
	int64_t c, v, sub, job, regrade, version;
	size_t n;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	sub = submit(st, c, v, NULL, NULL, 0, &job);
	struct store_version ver;
	CHECK(store_version_get(st, v, &ver, E));
	struct store_regrade_in in = {.course_id = c,
				      .assignment_id = ver.assignment_id,
				      .scope = STORE_REGRADE_SUBMISSION,
				      .submission_id = sub};
	CHECK(store_regrade_batch(st, &in, &regrade, &version, &n, E));
	/* Past the schema's CHECK, as only another program could write it. */
	if (st->ops->exec_script(st->conn,
				 "PRAGMA ignore_check_constraints = ON;"
				 "UPDATE jobs SET state = 'paused';"
				 "UPDATE submissions SET student = 'ada';",
				 &e) < 0)
		fail_msg("%s", e.msg);
	struct store_submission_view view;
	assert_int_equal(store_submission_get(st, sub, &view, &e), STORE_ERROR);
	assert_non_null(strstr(e.msg, "'paused'"));
	assert_int_equal(e.kind, ERR_INTERNAL);
	struct store_course_counts counts[2];
	assert_int_equal(store_job_counts(st, counts, 2, &n, &e), STORE_ERROR);
	struct store_grade_row *rows = NULL;
	assert_int_equal(store_gradebook_rows(st, ver.assignment_id, &rows, &n, &e), STORE_ERROR);
	assert_null(rows);
	struct store_regrade_info info;
	struct store_regrade_item items[2];
	assert_int_equal(store_regrade_get(st, regrade, &info, items, 2, &n, &e), STORE_ERROR);
	enum store_job_state s;
	assert_int_equal(store_job_state_parse(NULL, &s, &e), STORE_ERROR);
	CHECK(store_job_state_parse("error", &s, E));
	assert_int_equal(s, STORE_JOB_ERROR);
	store_close(st);
}

/* Writes whose rows nobody takes; the first breaks a NOT NULL. */
static const char sql_null_course[] = "INSERT INTO courses (name, created_ms) VALUES (NULL, 0)";
static const char sql_no_table[] = "INSERT INTO no_such_table VALUES (1)";
static const char sql_later_course[] = "INSERT INTO courses (name, created_ms) VALUES ('later', 0)";
static const char sql_later_courses[] = "SELECT COUNT(*) FROM courses WHERE name = 'later'";

struct ahead_arg {
	const char *first; /* fails */
	bool read;	   /* a statement whose rows are taken follows */
};

static int fail_ahead_tx(struct store *st, void *arg, struct err *e)
{
	struct ahead_arg *a = arg;
	struct store_rows *rows = NULL;

	if (store_q(st, a->first, NULL, 0, NULL, e) < 0 ||
	    store_q(st, sql_later_course, NULL, 0, NULL, e) < 0)
		return -1;
	if (a->read && store_q(st, sql_later_courses, NULL, 0, &rows, e) < 0)
		return -1;
	store_rows_free(rows);
	return 0;
}

/*
 * On PostgreSQL a write in a transaction is answered with the next
 * statement or the COMMIT (src/store/pg.c): its failure still fails the
 * transaction, with its own message, nothing of it is kept, and the
 * connection goes on working.
 */
static void test_store_a_failed_write_fails_its_transaction(void **state)
{
	static const struct {
		const char *first, *says;
	} cases[] = {
	    {sql_null_course, "null"},	     /* fails when run */
	    {sql_no_table, "no_such_table"}, /* fails when prepared */
	};
	char url[512];
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	for (size_t i = 0; i < 2 * sizeof(cases) / sizeof(cases[0]); i++) {
		struct ahead_arg a = {.first = cases[i / 2].first, .read = i % 2};
		assert_int_equal(store_tx_run(st, STORE_TX_WRITE, fail_ahead_tx, &a, &e), -1);
		if (!strcasestr(e.msg, cases[i / 2].says))
			fail_msg("case %zu: %s", i, e.msg);
		assert_int_equal(count_rows(st, sql_later_courses), 0);
		int64_t id;
		CHECK(store_course_ensure(st, "after", true, &id, E));
	}
	store_close(st);
}

/* ---- round trips (PostgreSQL) ---- */

/* The admission of src/service/api_submissions.c (`admit`), run inside
 * store_submit's transaction: the course's queue bound, then the policy. */
struct post_admission {
	int64_t course_id;
	int64_t assignment_id;
	const char *student;
	struct policy_verdict v;
};

static int admit_by_policy(struct store *st, void *ctx, struct err *e)
{
	struct post_admission *ad = ctx;
	int64_t backlog;
	int rc;

	if ((rc = store_course_backlog(st, ad->course_id, &backlog, e)) < 0)
		return rc;
	if (backlog >= 1000000)
		return 1;
	rc = policy_admit(st, ad->assignment_id, ad->student, &ad->v, e);
	return rc < 0 ? rc : ad->v.refusal != POLICY_ALLOWED;
}

/* The store calls of one accepted POST /v1/submissions, in the order
 * src/service/api_submissions.c makes them (authorize, then submit_one: a
 * replayed key is answered inside store_submit, so there is no lookup
 * before it); returns the round trips they cost. */
static uint64_t post_submission(struct store *st, const char *token, int64_t assignment,
				const char *student, const char *key)
{
	uint64_t before = store_round_trips(st);
	struct store_token_info ti;
	struct store_version v;
	int64_t sub, job;
	bool existing = true;

	CHECK(store_token_check(st, token, &ti, E));
	CHECK(store_assignment_latest(st, assignment, &v, E));
	struct post_admission ad = {
	    .course_id = ti.course_id, .assignment_id = v.assignment_id, .student = student};
	struct store_submission_in in = {.course_id = ti.course_id,
					 .version_id = v.version_id,
					 .student = student,
					 .idempotency_key = key,
					 .data = "print('hi')\n",
					 .len = 12,
					 .admit = admit_by_policy,
					 .admit_ctx = &ad};
	CHECK(store_submit(st, &in, &sub, &job, &existing, E));
	assert_false(existing);
	return store_round_trips(st) - before;
}

/*
 * What a submission costs in round trips to PostgreSQL, on a new
 * connection (statements prepared on first use) and on one that has
 * made a submission before: the least (no key, no student, no policy, no
 * cap) and the most (a key, a student, a policy with a limit and a daily
 * CPU cap on the course).
 */
static void test_store_submission_round_trips(void **state)
{
	char url[512], token[STORE_TOKEN_LEN + 1];
	int64_t c, v;
	struct policy p;
	struct err e;
	static const char limited[] = "{\"max_submissions\": 100}";

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	CHECK(store_token_create(st, "cs101", STORE_SCOPE_SUBMIT, token, E));
	seed(st, "cs101", &c, &v);
	CHECK(store_assignment_add_version(st, c, "limited", "archive-l", 9, "small@1", &v, NULL,
					   E));
	struct store_version bare, full;
	CHECK(store_version_get(st, v - 1, &bare, E));
	CHECK(store_version_get(st, v, &full, E));
	assert_int_equal(policy_parse(limited, strlen(limited), &p, &e), 0);
	CHECK(policy_save(st, full.assignment_id, &p, E));
	st = store_close(st);

	uint64_t n[4];
	st = open_or_fail(url);
	uint64_t opening = store_round_trips(st);
	n[0] = post_submission(st, token, bare.assignment_id, NULL, NULL);
	n[1] = post_submission(st, token, bare.assignment_id, NULL, NULL);
	st = store_close(st);
	st = open_or_fail(url);
	CHECK(store_course_set_cpu_cap(st, c, 1e9, E));
	st = store_close(st);
	st = open_or_fail(url);
	n[2] = post_submission(st, token, full.assignment_id, "ada", "key-1");
	n[3] = post_submission(st, token, full.assignment_id, "ada", "key-2");
	store_close(st);
	print_message("round trips: opening %" PRIu64 "; a submission: least %" PRIu64
		      " (new connection %" PRIu64 "), most %" PRIu64 " (new connection %" PRIu64
		      ")\n",
		      opening, n[1], n[0], n[3], n[2]);
	assert_int_equal(opening, 1);
	/* The most was 15 while the API looked a key up before store_submit. */
	assert_int_equal(n[1], 8);
	assert_int_equal(n[3], 14);
}

/* However many statements a connection has run (here more than the store
 * has), each is prepared once: running one again is one round trip. */
static void test_store_statements_are_prepared_once(void **state)
{
	enum { STATEMENTS = 200 };
	/* Keys are addresses: these stay put while the connection lives. */
	static char sql[STATEMENTS][32];
	char url[512];

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	for (int i = 0; i < STATEMENTS; i++) {
		snprintf(sql[i], sizeof(sql[i]), "SELECT %d", i);
		assert_int_equal(count_rows(st, sql[i]), i);
	}
	for (int i = 0; i < STATEMENTS; i++) {
		uint64_t before = store_round_trips(st);
		assert_int_equal(count_rows(st, sql[i]), i);
		assert_int_equal(store_round_trips(st) - before, 1);
	}
	store_close(st);
}

/* ---- groups ---- */

/* ---- policies, extensions, the gradebook (migration 2) ---- */

/* Claim the oldest runnable job and fail it on our side for good. */
static void fail_next(struct store *st)
{
	struct store_claim cl;
	bool final = false;

	assert_int_equal(claim(st, "w1", 60000, &cl), 1);
	assert_int_equal(cl.attempt, cl.max_attempts);
	CHECK(store_job_fail_ours(st, cl.job_id, cl.attempt, cl.lease_token, "image missing", 0,
				  &final, E));
	assert_true(final);
}

static int64_t received(struct store *st, int64_t sub)
{
	struct store_submission_view v;

	CHECK(store_submission_get(st, sub, &v, E));
	store_submission_view_clear(&v);
	return v.received_ms;
}

static const char doc_graded[] = "{\"schema_version\":1,\"proctor_version\":\"0.1.0\","
				 "\"status\":\"graded\",\"tests\":[{\"status\":\"error\"}]}";
static const char doc_ours[] = "{\"schema_version\":1,\"status\":\"error\",\"tests\":[]}";
static const char doc_compile[] = "{\"tests\":[{\"status\":\"passed\"}],\n \"status\" : "
				  "\"compile_error\"}";

/* The version-2 schema, as an older proctor left it. */
static const char sql_downgrade[] = "DROP TABLE sandbox_templates;"
				    "DROP TABLE sandbox_execs;"
				    "DROP TABLE sandboxes;"
				    "ALTER TABLE tokens DROP COLUMN max_live_sandboxes;"
				    "ALTER TABLE tokens DROP COLUMN daily_spend_micros;"
				    "ALTER TABLE submissions DROP COLUMN callback_view;"
				    "DROP INDEX jobs_course_unfinished;"
				    "DROP INDEX submissions_version;"
				    "DROP TABLE extensions;"
				    "ALTER TABLE assignments DROP COLUMN policy_ms;"
				    "ALTER TABLE assignments DROP COLUMN policy;"
				    "DELETE FROM schema_version WHERE version >= 3;";

static void test_store_migration_3_upgrades_a_version_2_database(void **state)
{
	char url[512];
	int64_t c, v;
	struct err e;
	char *text = NULL;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	int64_t sub = submit_as(st, c, v, "ada", 0);
	grade_next(st, doc_graded, 7);
	if (st->ops->exec_script(st->conn, sql_downgrade, &e) < 0)
		fail_msg("downgrade: %s", e.msg);
	assert_int_equal(count_rows(st, sql_version), 2);
	st = store_close(st);

	st = open_or_fail(url);
	assert_int_equal(count_rows(st, sql_version), STORE_SCHEMA_VERSION);
	struct store_version ver;
	CHECK(store_version_get(st, v, &ver, E));
	CHECK(store_policy_get(st, ver.assignment_id, &text, E));
	assert_null(text);
	struct store_extension x = {.student = "ada", .extra_s = 60};
	CHECK(store_extension_set(st, ver.assignment_id, &x, E));
	struct store_grade_row *rows = NULL;
	size_t n = 0;
	CHECK(store_gradebook_rows(st, ver.assignment_id, &rows, &n, E));
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].submission_id, sub);
	assert_string_equal(rows[0].status, "graded");
	free(rows);
	store_close(st);
}

static void test_store_policy_is_set_read_and_cleared(void **state)
{
	char url[512];
	int64_t c, v, v2;
	char *text = NULL;
	struct err e;
	struct store_version ver;
	struct store_assignment a;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	CHECK(store_version_get(st, v, &ver, E));
	int64_t id = ver.assignment_id;
	CHECK(store_assignment_get(st, id, &a, E));
	assert_int_equal(a.course_id, c);
	assert_string_equal(a.name, "hello");
	assert_int_equal(a.latest_version_id, v);
	assert_int_equal(a.latest_version_no, 1);
	assert_int_equal(a.policy_ms, 0);
	assert_int_equal(store_assignment_get(st, id + 100, &a, &e), STORE_NOT_FOUND);

	CHECK(store_policy_get(st, id, &text, E));
	assert_null(text);
	CHECK(store_policy_set(st, id, "{\"max_submissions\":3}", E));
	CHECK(store_policy_get(st, id, &text, E));
	assert_string_equal(text, "{\"max_submissions\":3}");
	free(text);
	/* Mutable, and not part of a version: a new version keeps it. */
	CHECK(
	    store_assignment_add_version(st, c, "hello", "archive-2", 9, "small@1", &v2, NULL, E));
	CHECK(store_assignment_get(st, id, &a, E));
	assert_int_equal(a.latest_version_id, v2);
	assert_int_equal(a.latest_version_no, 2);
	assert_true(a.policy_ms > 0);
	CHECK(store_policy_get(st, id, &text, E));
	assert_string_equal(text, "{\"max_submissions\":3}");
	free(text);
	/* Not an object, too large, unknown assignment. */
	assert_int_equal(store_policy_set(st, id, "[1]", &e), STORE_INVALID);
	assert_int_equal(store_policy_set(st, id, "{", &e), STORE_INVALID);
	char *big = malloc(STORE_POLICY_MAX + 2);
	memset(big, ' ', STORE_POLICY_MAX + 1);
	big[0] = '{';
	big[STORE_POLICY_MAX] = '}';
	big[STORE_POLICY_MAX + 1] = '\0';
	assert_int_equal(store_policy_set(st, id, big, &e), STORE_INVALID);
	big[STORE_POLICY_MAX - 1] = '}';
	big[STORE_POLICY_MAX] = '\0';
	CHECK(store_policy_set(st, id, big, E));
	free(big);
	assert_int_equal(store_policy_set(st, id + 100, "{}", &e), STORE_NOT_FOUND);
	assert_int_equal(store_policy_get(st, id + 100, &text, &e), STORE_NOT_FOUND);
	/* Cleared: the defaults apply again. */
	CHECK(store_policy_set(st, id, NULL, E));
	CHECK(store_policy_get(st, id, &text, E));
	assert_null(text);

	/* The service's view of it: a canonical document, read back the same. */
	struct policy p, q;
	static const char doc[] = "{\"due\": \"2026-12-01T23:59:00Z\", \"counting\": \"best\", "
				  "\"late\": {\"penalty_percent\": 10, \"grace_s\": 60}}";
	CHECK(policy_load(st, id, &p, E));
	assert_false(p.has_due);
	assert_int_equal(policy_parse(doc, strlen(doc), &p, &e), 0);
	CHECK(policy_save(st, id, &p, E));
	CHECK(policy_load(st, id, &q, E));
	assert_true(q.has_due && q.has_late);
	assert_int_equal(q.due_ms, p.due_ms);
	assert_int_equal(q.late.grace_s, 60);
	assert_int_equal(q.counting, POLICY_COUNT_BEST);
	/* A stored document that no longer parses is our failure. */
	CHECK(store_policy_set(st, id, "{\"counting\":\"worst\"}", E));
	assert_int_equal(policy_load(st, id, &q, &e), -1);
	assert_int_equal(e.kind, ERR_INTERNAL);
	store_close(st);
}

static const char sql_both_kinds[] =
    "INSERT INTO extensions (assignment_id, student, extra_s, due_ms, created_ms) "
    "VALUES ($1, 'eve', 60, 60, 0)";

static void test_store_extensions_are_set_replaced_listed_removed(void **state)
{
	char url[512];
	int64_t c, v;
	struct err e;
	struct store_version ver;
	struct store_extension x, *list = NULL;
	size_t n = 0;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	CHECK(store_version_get(st, v, &ver, E));
	int64_t id = ver.assignment_id;
	CHECK(store_extension_list(st, id, &list, &n, E));
	assert_int_equal(n, 0);
	assert_null(list);
	assert_int_equal(store_extension_get(st, id, "ada", &x, &e), STORE_NOT_FOUND);

	struct store_extension ada = {.student = "ada", .extra_s = 3600};
	struct store_extension zed = {.student = "Zed", .has_due = true, .due_ms = 1796169540000};
	CHECK(store_extension_set(st, id, &ada, E));
	CHECK(store_extension_set(st, id, &zed, E));
	CHECK(store_extension_get(st, id, "ada", &x, E));
	assert_false(x.has_due);
	assert_int_equal(x.extra_s, 3600);
	assert_true(x.created_ms > 0);
	/* Replaced: a new due date instead of extra seconds. */
	ada.has_due = true;
	ada.due_ms = 1796169540000 + 86400000;
	CHECK(store_extension_set(st, id, &ada, E));
	CHECK(store_extension_get(st, id, "ada", &x, E));
	assert_true(x.has_due);
	assert_int_equal(x.due_ms, ada.due_ms);
	assert_int_equal(x.extra_s, 0);
	/* Listed bytewise, whatever the database's collation. */
	CHECK(store_extension_list(st, id, &list, &n, E));
	assert_int_equal(n, 2);
	assert_string_equal(list[0].student, "Zed");
	assert_string_equal(list[1].student, "ada");
	free(list);
	CHECK(store_extension_remove(st, id, "ada", E));
	assert_int_equal(store_extension_remove(st, id, "ada", &e), STORE_NOT_FOUND);
	assert_int_equal(store_extension_get(st, id, "ada", &x, &e), STORE_NOT_FOUND);
	/* Refused: no such assignment, no seconds, a bad label. */
	assert_int_equal(store_extension_set(st, id + 100, &zed, &e), STORE_NOT_FOUND);
	struct store_extension bad = {.student = "ada", .extra_s = 0};
	assert_int_equal(store_extension_set(st, id, &bad, &e), STORE_INVALID);
	bad.extra_s = STORE_EXTENSION_MAX_S + 1;
	assert_int_equal(store_extension_set(st, id, &bad, &e), STORE_INVALID);
	struct store_extension early = {.student = "ada", .has_due = true, .due_ms = -1};
	assert_int_equal(store_extension_set(st, id, &early, &e), STORE_INVALID);
	struct store_extension ctl = {.student = "a\tb", .extra_s = 5};
	assert_int_equal(store_extension_set(st, id, &ctl, &e), STORE_INVALID);
	/* The schema itself refuses both kinds at once. */
	struct store_val p[] = {sv_int(id)};
	assert_int_equal(store_q(st, sql_both_kinds, p, 1, NULL, &e), -1);
	store_close(st);
}

static void test_store_submission_count_ignores_our_failures(void **state)
{
	char url[512];
	int64_t c, v, v2, other;
	struct err e;
	struct store_version ver;
	struct store_submit_count cnt;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	CHECK(store_version_get(st, v, &ver, E));
	int64_t id = ver.assignment_id;
	CHECK(
	    store_assignment_add_version(st, c, "hello", "archive-2", 9, "small@1", &v2, NULL, E));
	CHECK(store_assignment_add_version(st, c, "other", "archive-3", 9, "small@1", &other, NULL,
					   E));
	CHECK(store_student_submissions(st, id, "ada", &cnt, E));
	assert_int_equal(cnt.counted, 0);
	assert_int_equal(cnt.last_ms, 0);

	submit_as(st, c, v, "ada", 0); /* graded: counts */
	grade_next(st, doc_graded, 7);
	submit_as(st, c, v2, "ada", 1); /* our failure, no result: does not count */
	fail_next(st);
	submit_as(st, c, v2, "ada", 0); /* a result saying "error": does not count */
	grade_next(st, doc_ours, NAN);
	submit_as(st, c, other, "ada", 0);		  /* another assignment */
	submit_as(st, c, v, "bob", 0);			  /* another student */
	int64_t pending = submit_as(st, c, v2, "ada", 0); /* not graded yet: counts */
	CHECK(store_student_submissions(st, id, "ada", &cnt, E));
	assert_int_equal(cnt.counted, 2);
	assert_int_equal(cnt.last_ms, received(st, pending));
	assert_true(cnt.now_ms >= cnt.last_ms);
	assert_true(llabs(cnt.now_ms - (int64_t)time(NULL) * 1000) < 5000);
	CHECK(store_student_submissions(st, id, "bob", &cnt, E));
	assert_int_equal(cnt.counted, 1);
	CHECK(store_student_submissions(st, id, "cy", &cnt, E));
	assert_int_equal(cnt.counted, 0);
	assert_int_equal(store_student_submissions(st, id + 100, "ada", &cnt, &e), STORE_NOT_FOUND);
	assert_int_equal(store_student_submissions(st, id, NULL, &cnt, &e), STORE_INVALID);
	store_close(st);
}

/* A document whose status is past the first 512 characters. */
static char *late_status_doc(void)
{
	char *doc = malloc(1200);
	int n = snprintf(doc, 1200, "{\"padding\":\"");

	memset(doc + n, 'x', 700);
	snprintf(doc + n + 700, 1200 - (size_t)n - 700, "\",\"status\":\"timeout\"}");
	return doc;
}

static void test_store_gradebook_rows_have_latest_results(void **state)
{
	char url[512];
	int64_t c, v, v2;
	struct err e;
	struct store_version ver;
	struct store_grade_row *rows = NULL;
	size_t n = 0;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	CHECK(store_version_get(st, v, &ver, E));
	int64_t id = ver.assignment_id;
	CHECK(
	    store_assignment_add_version(st, c, "hello", "archive-2", 9, "small@1", &v2, NULL, E));
	CHECK(store_gradebook_rows(st, id, &rows, &n, E));
	assert_int_equal(n, 0);
	assert_null(rows);

	int64_t s1 = submit_as(st, c, v, "zoe", 0);
	grade_next(st, doc_graded, 4);
	int64_t s2 = submit_as(st, c, v2, "Ada", 0);
	char *doc = late_status_doc();
	grade_next(st, doc, 0);
	free(doc);
	int64_t s3 = submit_as(st, c, v2, "zoe", 1);
	fail_next(st);
	int64_t s4 = submit_as(st, c, v2, "zoe", 0);
	grade_next(st, doc_compile, 0);
	submit_as(st, c, v2, NULL, 0); /* no student: not in the gradebook */
	grade_next(st, doc_graded, 1);
	/* A regrade of s1: its latest result counts; its job failing later
	 * on our side does not undo the result it has. */
	regrade_one(st, c, s1, v2);
	int64_t regraded = grade_next(st, "{\"status\":\"graded\",\"score\":9}", 9);
	regrade_one(st, c, s1, v2);
	struct store_claim cl;
	for (bool final = false; !final;) {
		assert_int_equal(claim(st, "w1", 60000, &cl), 1);
		CHECK(store_job_fail_ours(st, cl.job_id, cl.attempt, cl.lease_token, "lost", 0,
					  &final, E));
	}
	int64_t s5 = submit_as(st, c, v2, "zoe", 0); /* pending */

	CHECK(store_gradebook_rows(st, id, &rows, &n, E));
	assert_int_equal(n, 5);
	/* Bytewise by student ("Ada" < "zoe"), then by submission. */
	assert_int_equal(rows[0].submission_id, s2);
	assert_string_equal(rows[0].student, "Ada");
	assert_string_equal(rows[0].status, "timeout"); /* read from the whole document */
	assert_int_equal(rows[0].version_id, v2);
	assert_int_equal(rows[1].submission_id, s1);
	assert_int_equal(rows[1].result_id, regraded);
	assert_true(rows[1].score == 9);
	assert_true(rows[1].max_score == 10);
	assert_string_equal(rows[1].status, "graded");
	assert_int_equal(rows[1].job_state, STORE_JOB_ERROR);
	assert_false(rows[1].not_gradable);
	assert_int_equal(rows[1].version_id, v);
	assert_int_equal(rows[2].submission_id, s3);
	assert_false(rows[2].has_result);
	assert_true(rows[2].not_gradable);
	assert_int_equal(rows[3].submission_id, s4);
	assert_string_equal(rows[3].status, "compile_error");
	assert_false(rows[3].not_gradable);
	assert_int_equal(rows[4].submission_id, s5);
	assert_false(rows[4].has_result);
	assert_false(rows[4].not_gradable);
	assert_int_equal(rows[4].job_state, STORE_JOB_QUEUED);
	assert_true(isnan(rows[4].score));
	assert_int_equal(rows[4].received_ms, received(st, s5));
	free(rows);
	assert_int_equal(store_gradebook_rows(st, id + 100, &rows, &n, &e), STORE_NOT_FOUND);
	store_close(st);
}

static void test_store_doc_status_reads_only_the_start(void **state)
{
	static const struct {
		const char *doc;
		int rc;
		const char *status;
	} cases[] = {
	    {"{\"status\":\"graded\"}", 1, "graded"},
	    {" { \"a\" : [1, {\"status\": \"x\"}], \"b\": -1.5e3, \"c\": {\"d\": \"}\"},"
	     " \"status\" : \"timeout\" }",
	     1, "timeout"},
	    {"{\"a\":\"\\\"status\\\":\\\"x\\\"\",\"status\":\"crashed\"}", 1, "crashed"},
	    {"{\"a\":true,\"b\":null,\"status\":\"rejected\"", 1, "rejected"},
	    {"{\"a\":1}", -1, ""},
	    {"{}", -1, ""},
	    {"{\"status\":null}", -1, ""},
	    {"[\"status\"]", -1, ""},
	    {"{\"a\":1 \"status\":\"x\"}", -1, ""},
	    {"{\"\\u0073tatus\":\"graded\"}", 0, ""},
	    {"{\"status\":\"gr\\u0061ded\"}", 0, ""},
	    {"{\"a\":\"xxxxx", 0, ""},
	    {"{\"a\":[1,2", 0, ""},
	    {"{\"a\":12", 0, ""},
	    {"{\"status\":\"gra", 0, ""},
	    {"", 0, ""},
	};
	char out[32];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = store_doc_status(cases[i].doc, strlen(cases[i].doc), out, sizeof(out));
		if (rc != cases[i].rc || strcmp(out, cases[i].status) != 0)
			fail_msg("%s: %d '%s'", cases[i].doc, rc, out);
	}
	/* Cut to the buffer. */
	assert_int_equal(store_doc_status("{\"status\":\"abcdefgh\"}", 21, out, 4), 1);
	assert_string_equal(out, "abc");
}

static void test_store_budget_and_usage(void **state)
{
	char url[512];
	int64_t c, v, c2, v2;
	double cpu = 0, gib = 0;
	struct policy_verdict verdict;
	struct policy_usage u;
	int64_t now;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	seed(st, "cs102", &c2, &v2);
	CHECK(store_now_ms(st, &now, E));
	CHECK(policy_budget_check(st, c, &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_ALLOWED);
	for (int i = 0; i < 3; i++) {
		submit_as(st, c, v, "ada", 0);
		grade_next(st, doc_graded, 1); /* 2 CPU-seconds, 1 GiB-second each */
	}
	submit_as(st, c2, v2, "ada", 0);
	grade_next(st, doc_graded, 1);
	CHECK(store_course_usage_since(st, c, 0, &cpu, &gib, E));
	assert_true(cpu == 6 && gib == 3);
	CHECK(store_course_usage_since(st, c, now + 3600000, &cpu, &gib, E));
	assert_true(cpu == 0 && gib == 0);

	CHECK(store_course_set_cpu_cap(st, c, 6.5, E));
	CHECK(policy_budget_check(st, c, &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_ALLOWED);
	struct policy_prices prices = {.vcpu_hour = 3600, .gib_hour = 36000};
	CHECK(policy_course_usage(st, c, &prices, &u, E));
	assert_true(u.cpu_seconds == 6 && u.gib_seconds == 3);
	assert_true(fabs(u.cost - (6 + 30)) < 1e-9);
	assert_true(u.cap == 6.5);
	assert_int_equal(u.since_ms, policy_day_start(now));
	CHECK(store_course_set_cpu_cap(st, c, 6, E));
	CHECK(policy_budget_check(st, c, &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_OVER_BUDGET);
	assert_int_equal(verdict.next_ms, policy_day_start(now) + 86400000);
	/* The other course is not charged for it; lifting the cap reopens. */
	CHECK(store_course_set_cpu_cap(st, c2, 6, E));
	CHECK(policy_budget_check(st, c2, &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_ALLOWED);
	CHECK(store_course_set_cpu_cap(st, c, NAN, E));
	CHECK(policy_budget_check(st, c, &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_ALLOWED);
	store_close(st);
}

static void test_store_policy_admit_and_export(void **state)
{
	char url[512];
	int64_t c, v;
	struct store_version ver;
	struct policy_verdict verdict;
	struct policy p;
	struct err e;
	char *text = NULL;
	size_t len = 0;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	CHECK(store_version_get(st, v, &ver, E));
	int64_t id = ver.assignment_id;
	static const char doc[] = "{\"max_submissions\": 2, \"min_interval_s\": 3600, "
				  "\"counting\": \"best\", \"due\": 4102444800000, "
				  "\"late\": {\"penalty_percent\": 50}}";
	assert_int_equal(policy_parse(doc, strlen(doc), &p, &e), 0);
	CHECK(policy_save(st, id, &p, E));

	CHECK(policy_admit(st, id, "ada", &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_ALLOWED);
	int64_t s1 = submit_as(st, c, v, "ada", 0);
	grade_next(st, doc_graded, 6);
	CHECK(policy_admit(st, id, "ada", &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_TOO_SOON);
	assert_int_equal(verdict.next_ms, received(st, s1) + 3600000);
	/* Our failure gives the try back. */
	p.min_interval_s = 0;
	CHECK(policy_save(st, id, &p, E));
	submit_as(st, c, v, "ada", 1);
	fail_next(st);
	CHECK(policy_admit(st, id, "ada", &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_ALLOWED);
	submit_as(st, c, v, "ada", 0);
	grade_next(st, doc_graded, 9);
	CHECK(policy_admit(st, id, "ada", &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_LIMIT);
	/* Unlabelled submissions have no per-student limit; the course cap
	 * comes first. */
	CHECK(policy_admit(st, id, NULL, &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_ALLOWED);
	CHECK(store_course_set_cpu_cap(st, c, 0, E));
	CHECK(policy_admit(st, id, "bob", &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_OVER_BUDGET);
	assert_int_equal(policy_admit(st, id + 100, "bob", &verdict, &e), STORE_NOT_FOUND);

	struct store_extension x = {.student = "ada", .extra_s = 60};
	CHECK(store_extension_set(st, id, &x, E));
	CHECK(policy_export(st, id, POLICY_FORMAT_CSV, &text, &len, E));
	assert_int_equal(strlen(text), len);
	assert_non_null(strstr(text, "\r\n\"ada\","));
	assert_non_null(strstr(text, ",\"graded\",9,10,\"no\",0,0,0,9,2,0,\"yes\"\r\n"));
	free(text);
	CHECK(policy_export(st, id, POLICY_FORMAT_JSON, &text, &len, E));
	json_t *j = json_loads(text, 0, NULL);
	assert_non_null(j);
	json_t *ada = json_array_get(json_object_get(j, "students"), 0);
	assert_true(
	    json_real_value(json_object_get(json_object_get(ada, "counting"), "final_score")) == 9);
	assert_int_equal(json_integer_value(json_object_get(ada, "submissions")), 2);
	json_decref(j);
	free(text);
	assert_int_equal(policy_export(st, id + 100, POLICY_FORMAT_CSV, &text, &len, &e),
			 STORE_NOT_FOUND);
	store_close(st);
}

/* ---- sandboxes over the API (migration 6) ---- */

/* A course and a token of it, for sandboxes. */
static void sandbox_seed(struct store *st, const char *course, int64_t *ret_course,
			 int64_t *ret_token)
{
	char token[STORE_TOKEN_LEN + 1];
	struct store_token_info ti;

	CHECK(store_token_create(st, course, STORE_SCOPE_INSTRUCTOR, token, E));
	CHECK(store_token_check(st, token, &ti, E));
	*ret_course = ti.course_id;
	*ret_token = ti.token_id;
}

static int64_t sandbox_new(struct store *st, int64_t course, int64_t token, const char *labels,
			   const char *key)
{
	struct store_sandbox_in in = {.course_id = course,
				      .token_id = token,
				      .isolation = "jail",
				      .image_pin = "small@1",
				      .timeout_s = 300,
				      .labels_json = labels,
				      .idempotency_key = key};
	char secret[65];
	int64_t id;

	CHECK(store_sandbox_create(st, &in, &id, secret, NULL, E));
	return id;
}

static int64_t sandbox_running(struct store *st, int64_t course, int64_t token, const char *host)
{
	int64_t id = sandbox_new(st, course, token, NULL, NULL);

	CHECK(store_sandbox_placed(st, id, host, "/var/lib/proctor/service/sbx/1.sock", 4242, E));
	return id;
}

static const char *sandbox_state(struct store *st, int64_t id, char out[16])
{
	struct store_sandbox sb;

	CHECK(store_sandbox_get(st, id, &sb, E));
	memcpy(out, sb.state, 16);
	store_sandbox_clear(&sb);
	return out;
}

/* The state of an exec, read through the list. */
static const char *exec_state(struct store *st, int64_t sandbox, int64_t exec, char out[16])
{
	struct store_exec_row rows[16];
	size_t n = 0;

	out[0] = '\0';
	CHECK(store_exec_list(st, sandbox, 0, rows, 16, &n, E));
	for (size_t i = 0; i < n; i++) {
		if (rows[i].exec_id == exec)
			memcpy(out, rows[i].state, 16);
		store_exec_row_clear(&rows[i]);
	}
	return out;
}

static const struct store_exec_result exec_ok = {.status = "ok",
						 .exit_code = 0,
						 .limits_hit_json = "[]",
						 .cpu_ms = 1500,
						 .wall_ms = 1600,
						 .peak_memory_kib = 2048,
						 .peak_pids = 3,
						 .stdout_bytes = 10,
						 .stderr_bytes = 0,
						 .gib_seconds = 0.25};

static void test_store_sandbox_is_created_replayed_placed_and_read(void **state)
{
	char url[512], secret[65], again[65];
	int64_t c, t, c2, t2, id, id2;
	bool existing = true;
	struct store_sandbox sb;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	sandbox_seed(st, "cs101", &c, &t);
	sandbox_seed(st, "cs102", &c2, &t2);
	struct store_sandbox_in in = {.course_id = c,
				      .token_id = t,
				      .isolation = "jail",
				      .image_pin = "small@1",
				      .vcpu = 1,
				      .memory_mib = 2048,
				      .timeout_s = 300,
				      .labels_json = "{\"student\": \"ada\"}",
				      .env_json = "{\"LANG\": \"C.UTF-8\"}",
				      .idempotency_key = "create-1"};
	CHECK(store_sandbox_create(st, &in, &id, secret, &existing, E));
	assert_false(existing);
	assert_int_equal(strlen(secret), 64);
	assert_int_equal(strspn(secret, "0123456789abcdef"), 64);

	CHECK(store_sandbox_get(st, id, &sb, E));
	assert_int_equal(sb.sandbox_id, id);
	assert_int_equal(sb.course_id, c);
	assert_int_equal(sb.token_id, t);
	assert_string_equal(sb.state, "creating");
	assert_string_equal(sb.isolation, "jail");
	assert_string_equal(sb.image_pin, "small@1");
	assert_int_equal(sb.vcpu, 1);
	assert_int_equal(sb.memory_mib, 2048);
	assert_int_equal(sb.disk_mib, 0); /* not given */
	assert_int_equal(sb.timeout_s, 300);
	assert_string_equal(sb.labels_json, in.labels_json);
	assert_string_equal(sb.env_json, in.env_json);
	assert_string_equal(sb.idempotency_key, "create-1");
	assert_string_equal(sb.secret, secret);
	assert_string_equal(sb.host_key, "");
	assert_int_equal(sb.lease_end_ms - sb.created_ms, 300 * 1000);
	assert_int_equal(sb.started_ms, 0);
	assert_int_equal(sb.ended_ms, 0);
	assert_int_equal(sb.execs, 0);
	store_sandbox_clear(&sb);

	/* A replayed key: the same sandbox and secret, nothing written. */
	in.timeout_s = 60;
	CHECK(store_sandbox_create(st, &in, &id2, again, &existing, E));
	assert_true(existing);
	assert_int_equal(id2, id);
	assert_string_equal(again, secret);
	assert_int_equal(count_rows(st, "SELECT COUNT(*) FROM sandboxes"), 1);
	/* The key is the course's: another course may use it. */
	in.course_id = c2;
	in.token_id = t2;
	CHECK(store_sandbox_create(st, &in, &id2, again, &existing, E));
	assert_false(existing);
	assert_true(id2 != id);
	assert_string_not_equal(again, secret);
	/* A token of another course. */
	in.token_id = t;
	in.idempotency_key = NULL;
	assert_int_equal(store_sandbox_create(st, &in, &id2, again, &existing, &e),
			 STORE_NOT_FOUND);

	/* Malformed fields are refused before anything is written. */
	static const struct {
		const char *labels, *env;
		int vcpu;
		int64_t timeout_s;
	} bad[] = {
	    {"[\"student\"]", NULL, 0, 300},
	    {"{\"student\": 1}", NULL, 0, 300},
	    {"{\"student\": \"a\\nb\"}", NULL, 0, 300},
	    {"{\"a\": \"1\", \"a\": \"2\"}", NULL, 0, 300},
	    {"{", NULL, 0, 300},
	    {NULL, "{\"A=B\": \"x\"}", 0, 300},
	    {NULL, "{\"A\": [\"x\"]}", 0, 300},
	    {NULL, NULL, -1, 300},
	    {NULL, NULL, 0, 0},
	    {NULL, NULL, 0, STORE_SANDBOX_TIMEOUT_MAX + 1},
	};
	in.course_id = c;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		in.labels_json = bad[i].labels;
		in.env_json = bad[i].env;
		in.vcpu = bad[i].vcpu;
		in.timeout_s = bad[i].timeout_s;
		if (store_sandbox_create(st, &in, &id2, again, &existing, &e) != STORE_INVALID)
			fail_msg("case %zu was not refused", i);
	}
	assert_int_equal(count_rows(st, "SELECT COUNT(*) FROM sandboxes"), 2);

	/* Placed: creating -> running, once. */
	CHECK(store_sandbox_placed(st, id, "host-a", "/run/sbx/1.sock", 4242, E));
	CHECK(store_sandbox_get(st, id, &sb, E));
	assert_string_equal(sb.state, "running");
	assert_string_equal(sb.host_key, "host-a");
	assert_string_equal(sb.socket, "/run/sbx/1.sock");
	assert_int_equal(sb.keeper_pid, 4242);
	assert_true(sb.started_ms >= sb.created_ms);
	store_sandbox_clear(&sb);
	assert_int_equal(store_sandbox_placed(st, id, "host-b", "/run/sbx/2.sock", 1, &e),
			 STORE_NOT_FOUND);
	assert_int_equal(store_sandbox_get(st, id + 100, &sb, &e), STORE_NOT_FOUND);
	store_close(st);
}

/* Many older unlabelled sandboxes of the course: more than one batch of the
 * label match. */
static const char sql_many_sandboxes[] =
    "INSERT INTO sandboxes (course_id, token_id, state, isolation, image_pin, labels, env, "
    "secret, created_ms, lease_end_ms) "
    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200) "
    "SELECT CAST($1 AS BIGINT), CAST($2 AS BIGINT), 'deleted', 'jail', 'small@1', '{}', '{}', "
    "'00', 0, 0 FROM n";

static void test_store_sandboxes_are_listed_by_label_newest_first(void **state)
{
	char url[512];
	int64_t c, t, c2, t2, ids[8];
	size_t n = 0;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	sandbox_seed(st, "cs101", &c, &t);
	sandbox_seed(st, "cs102", &c2, &t2);
	int64_t first = sandbox_new(st, c, t, "{\"student\": \"ada\", \"hw\": \"3\"}", NULL);
	struct store_val p[] = {sv_int(c), sv_int(t)};
	CHECK(store_q(st, sql_many_sandboxes, p, 2, NULL, E));
	int64_t bob = sandbox_new(st, c, t, "{\"student\": \"bob\"}", NULL);
	int64_t ada = sandbox_new(st, c, t, "{\"student\": \"ada\"}", NULL);
	sandbox_new(st, c2, t2, "{\"student\": \"ada\"}", NULL);

	CHECK(store_sandbox_list(st, c, "student", "ada", false, ids, 8, &n, E));
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], ada);
	assert_int_equal(ids[1], first);
	CHECK(store_sandbox_list(st, c, "hw", "3", false, ids, 8, &n, E));
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], first);
	CHECK(store_sandbox_list(st, c, "student", "eve", false, ids, 8, &n, E));
	assert_int_equal(n, 0);
	CHECK(store_sandbox_list(st, c, NULL, NULL, false, ids, 2, &n, E));
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], ada);
	assert_int_equal(ids[1], bob);

	/* Live only: the three made here, not the many ended ones. */
	CHECK(store_sandbox_end(st, bob, "deleted", NULL, E));
	CHECK(store_sandbox_list(st, c, NULL, NULL, true, ids, 8, &n, E));
	assert_int_equal(n, 2);
	assert_int_equal(ids[0], ada);
	assert_int_equal(ids[1], first);
	CHECK(store_sandbox_list(st, c, "student", "ada", true, ids, 1, &n, E));
	assert_int_equal(n, 1);
	assert_int_equal(ids[0], ada);

	assert_int_equal(store_sandbox_list(st, c, "student", NULL, false, ids, 8, &n, &e),
			 STORE_INVALID);
	assert_int_equal(store_sandbox_list(st, c, NULL, NULL, false, ids, 0, &n, &e),
			 STORE_INVALID);
	store_close(st);
}

static void test_store_sandbox_end_takes_its_running_execs(void **state)
{
	char url[512], s[16];
	int64_t c, t, done, running, x;
	struct store_sandbox sb;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	sandbox_seed(st, "cs101", &c, &t);
	int64_t creating = sandbox_new(st, c, t, NULL, NULL);
	/* Not placed yet: no exec. */
	assert_int_equal(store_exec_begin(st, creating, "[\"true\"]", NULL, &x, &e),
			 STORE_NOT_FOUND);
	int64_t id = sandbox_running(st, c, t, "host-a");
	CHECK(store_exec_begin(st, id, "[\"true\"]", "/work", &done, E));
	CHECK(store_exec_end(st, done, &exec_ok, E));
	CHECK(store_exec_begin(st, id, "[\"sleep\", \"100\"]", NULL, &running, E));

	assert_int_equal(store_sandbox_end(st, id, "running", NULL, &e), STORE_INVALID);
	assert_int_equal(store_sandbox_end(st, id, "gone", NULL, &e), STORE_INVALID);
	CHECK(store_sandbox_end(st, id, "deleted", "DELETE /v1/sandboxes", E));
	CHECK(store_sandbox_get(st, id, &sb, E));
	assert_string_equal(sb.state, "deleted");
	assert_string_equal(sb.end_reason, "DELETE /v1/sandboxes");
	assert_true(sb.ended_ms >= sb.started_ms && sb.ended_ms > 0);
	store_sandbox_clear(&sb);
	assert_string_equal(exec_state(st, id, done, s), "done");
	assert_string_equal(exec_state(st, id, running, s), "unknown");

	/* Ended once: not again, not another exec, no lease. */
	assert_int_equal(store_sandbox_end(st, id, "expired", NULL, &e), STORE_NOT_FOUND);
	assert_int_equal(store_sandbox_end(st, id + 100, "deleted", NULL, &e), STORE_NOT_FOUND);
	assert_int_equal(store_exec_begin(st, id, "[\"true\"]", NULL, &x, &e), STORE_NOT_FOUND);
	assert_int_equal(store_sandbox_set_lease(st, id, 60, &e), STORE_NOT_FOUND);
	assert_string_equal(sandbox_state(st, id, s), "deleted");

	/* A creating sandbox may end (its keeper could not make it). */
	CHECK(store_sandbox_end(st, creating, "failed", "no free slot", E));
	assert_string_equal(sandbox_state(st, creating, s), "failed");

	/* A result that arrives after its sandbox ended is still recorded. */
	CHECK(store_exec_end(st, running, &exec_ok, E));
	assert_string_equal(exec_state(st, id, running, s), "done");
	assert_int_equal(store_exec_end(st, running, &exec_ok, &e), STORE_NOT_FOUND);
	store_close(st);
}

static void test_store_sandboxes_of_a_lost_host_and_past_their_lease_end(void **state)
{
	char url[512], s[16];
	int64_t c, t, x, other, n = -1;
	struct store_sandbox sb;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	sandbox_seed(st, "cs101", &c, &t);
	int64_t a1 = sandbox_running(st, c, t, "host-a");
	int64_t a2 = sandbox_running(st, c, t, "host-a");
	int64_t b1 = sandbox_running(st, c, t, "host-b");
	int64_t b2 = sandbox_running(st, c, t, "host-b");
	int64_t never = sandbox_new(st, c, t, NULL, NULL);
	CHECK(store_exec_begin(st, a1, "[\"server\"]", NULL, &x, E));
	CHECK(store_exec_begin(st, b1, "[\"server\"]", NULL, &other, E));
	CHECK(store_sandbox_end(st, a2, "deleted", NULL, E));

	/* host-a's server restarted: its live sandbox is lost, not the ended one. */
	CHECK(store_sandbox_lose_host(st, "host-a", "the server restarted", &n, E));
	assert_int_equal(n, 1);
	CHECK(store_sandbox_get(st, a1, &sb, E));
	assert_string_equal(sb.state, "lost");
	assert_string_equal(sb.end_reason, "the server restarted");
	store_sandbox_clear(&sb);
	assert_string_equal(exec_state(st, a1, x, s), "unknown");
	assert_string_equal(sandbox_state(st, a2, s), "deleted");
	assert_string_equal(sandbox_state(st, b1, s), "running");
	assert_string_equal(exec_state(st, b1, other, s), "running");
	CHECK(store_sandbox_lose_host(st, "host-a", NULL, &n, E));
	assert_int_equal(n, 0);
	assert_int_equal(store_sandbox_lose_host(st, "", NULL, &n, &e), STORE_INVALID);

	/* The sweep: only live sandboxes whose lease ended past the grace. */
	CHECK(store_sandbox_set_lease(st, b1, 0, E));
	CHECK(store_sandbox_set_lease(st, b2, 3600, E));
	CHECK(store_sandbox_get(st, b2, &sb, E));
	int64_t now;
	CHECK(store_now_ms(st, &now, E));
	assert_true(llabs(sb.lease_end_ms - (now + 3600 * 1000)) < 5000);
	assert_int_equal(sb.timeout_s, 300); /* as created */
	store_sandbox_clear(&sb);
	sleep_ms(20);
	CHECK(store_sandbox_sweep(st, 3600 * 1000, &n, E));
	assert_int_equal(n, 0);
	CHECK(store_sandbox_sweep(st, 0, &n, E));
	assert_int_equal(n, 1);
	CHECK(store_sandbox_get(st, b1, &sb, E));
	assert_string_equal(sb.state, "expired");
	assert_string_equal(sb.end_reason, "the lease ended");
	store_sandbox_clear(&sb);
	assert_string_equal(exec_state(st, b1, other, s), "unknown");
	assert_string_equal(sandbox_state(st, b2, s), "running");
	assert_string_equal(sandbox_state(st, never, s), "creating");
	assert_int_equal(store_sandbox_sweep(st, -1, &n, &e), STORE_INVALID);
	assert_int_equal(store_sandbox_set_lease(st, b2, -1, &e), STORE_INVALID);
	store_close(st);
}

static void test_store_exec_end_adds_to_its_sandbox_totals(void **state)
{
	char url[512];
	int64_t c, t, x1, x2, x3;
	struct store_sandbox sb;
	struct store_exec_row rows[4];
	size_t n = 0;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	sandbox_seed(st, "cs101", &c, &t);
	int64_t id = sandbox_running(st, c, t, "host-a");
	int64_t quiet = sandbox_running(st, c, t, "host-a");
	CHECK(store_exec_begin(st, id, "[\"python3\", \"-m\", \"pytest\"]", "/workspace", &x1, E));
	CHECK(store_exec_end(st, x1, &exec_ok, E));
	struct store_exec_result killed = {.status = "timeout",
					   .exit_code = -1,
					   .signal = 9,
					   .limits_hit_json = "[\"wall\"]",
					   .timed_out = true,
					   .cpu_ms = 500,
					   .wall_ms = 60000,
					   .peak_memory_kib = 1024,
					   .peak_pids = 1,
					   .stdout_bytes = 0,
					   .stderr_bytes = 7,
					   .gib_seconds = 0.75};
	CHECK(store_exec_begin(st, id, "[\"sleep\", \"inf\"]", NULL, &x2, E));
	CHECK(store_exec_end(st, x2, &killed, E));
	CHECK(store_exec_begin(st, id, "[\"true\"]", NULL, &x3, E));

	CHECK(store_sandbox_get(st, id, &sb, E));
	assert_int_equal(sb.execs, 2);
	assert_int_equal(sb.cpu_ms, 2000);
	assert_true(sb.gib_seconds == 1.0);
	store_sandbox_clear(&sb);
	CHECK(store_sandbox_get(st, quiet, &sb, E));
	assert_int_equal(sb.execs, 0);
	assert_int_equal(sb.cpu_ms, 0);
	store_sandbox_clear(&sb);

	CHECK(store_exec_list(st, id, 0, rows, 4, &n, E));
	assert_int_equal(n, 3);
	assert_int_equal(rows[0].exec_id, x1);
	assert_string_equal(rows[0].state, "done");
	assert_string_equal(rows[0].argv_json, "[\"python3\", \"-m\", \"pytest\"]");
	assert_string_equal(rows[0].cwd, "/workspace");
	assert_string_equal(rows[0].status, "ok");
	assert_int_equal(rows[0].exit_code, 0);
	assert_int_equal(rows[0].signal, 0);
	assert_false(rows[0].timed_out);
	assert_int_equal(rows[0].cpu_ms, 1500);
	assert_int_equal(rows[0].wall_ms, 1600);
	assert_int_equal(rows[0].peak_memory_kib, 2048);
	assert_int_equal(rows[0].peak_pids, 3);
	assert_int_equal(rows[0].stdout_bytes, 10);
	assert_true(rows[0].gib_seconds == 0.25);
	assert_true(rows[0].ended_ms >= rows[0].started_ms && rows[0].started_ms > 0);
	assert_int_equal(rows[1].exec_id, x2);
	assert_string_equal(rows[1].status, "timeout");
	assert_int_equal(rows[1].exit_code, -1);
	assert_int_equal(rows[1].signal, 9);
	assert_string_equal(rows[1].limits_hit_json, "[\"wall\"]");
	assert_true(rows[1].timed_out);
	assert_int_equal(rows[1].stderr_bytes, 7);
	assert_string_equal(rows[1].cwd, "");
	assert_int_equal(rows[2].exec_id, x3);
	assert_string_equal(rows[2].state, "running");
	assert_string_equal(rows[2].status, "");
	assert_int_equal(rows[2].exit_code, -1);
	assert_int_equal(rows[2].ended_ms, 0);
	for (size_t i = 0; i < n; i++)
		store_exec_row_clear(&rows[i]);
	/* Paging. */
	CHECK(store_exec_list(st, id, x1, rows, 1, &n, E));
	assert_int_equal(n, 1);
	assert_int_equal(rows[0].exec_id, x2);
	store_exec_row_clear(&rows[0]);

	/* Done once; malformed ends and starts are refused. */
	assert_int_equal(store_exec_end(st, x1, &exec_ok, &e), STORE_NOT_FOUND);
	assert_int_equal(store_exec_end(st, x3 + 100, &exec_ok, &e), STORE_NOT_FOUND);
	struct store_exec_result bad = exec_ok;
	bad.cpu_ms = -1;
	assert_int_equal(store_exec_end(st, x3, &bad, &e), STORE_INVALID);
	bad = exec_ok;
	bad.limits_hit_json = "{\"wall\": true}";
	assert_int_equal(store_exec_end(st, x3, &bad, &e), STORE_INVALID);
	bad = exec_ok;
	bad.status = NULL;
	assert_int_equal(store_exec_end(st, x3, &bad, &e), STORE_INVALID);
	bad = exec_ok;
	bad.gib_seconds = NAN;
	assert_int_equal(store_exec_end(st, x3, &bad, &e), STORE_INVALID);
	static const char *const bad_argv[] = {"[]", "\"true\"", "[\"a\", 1]", "[", NULL};
	for (size_t i = 0; i < sizeof(bad_argv) / sizeof(bad_argv[0]); i++)
		if (store_exec_begin(st, id, bad_argv[i], NULL, &x1, &e) != STORE_INVALID)
			fail_msg("argv %zu was not refused", i);
	CHECK(store_sandbox_get(st, id, &sb, E));
	assert_int_equal(sb.execs, 2);
	store_sandbox_clear(&sb);
	store_close(st);
}

/* The course's day counts its sandboxes' execs beside its gradings: the
 * daily CPU cap stops submissions when sandboxes used it up. */
static void test_store_course_usage_counts_sandbox_execs(void **state)
{
	char url[512];
	int64_t c, v, t, c2, t2, x, now;
	double cpu = 0, gib = 0;
	struct policy_verdict verdict;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	sandbox_seed(st, "cs101", &c, &t);
	sandbox_seed(st, "cs102", &c2, &t2);
	CHECK(store_now_ms(st, &now, E));
	submit_as(st, c, v, "ada", 0);
	grade_next(st, doc_graded, 1); /* 2 CPU-seconds, 1 GiB-second */
	int64_t id = sandbox_running(st, c, t, "host-a");
	struct store_exec_result r = exec_ok;
	r.cpu_ms = 3000;
	r.gib_seconds = 0.5;
	CHECK(store_exec_begin(st, id, "[\"true\"]", NULL, &x, E));
	CHECK(store_exec_end(st, x, &r, E));
	CHECK(store_exec_begin(st, id, "[\"sleep\", \"9\"]", NULL, &x, E)); /* not ended: no usage */
	int64_t other = sandbox_running(st, c2, t2, "host-a");
	CHECK(store_exec_begin(st, other, "[\"true\"]", NULL, &x, E));
	CHECK(store_exec_end(st, x, &r, E));

	CHECK(store_course_usage_since(st, c, 0, &cpu, &gib, E));
	assert_true(cpu == 5 && gib == 1.5);
	CHECK(store_course_cpu_since(st, c, policy_day_start(now), &cpu, E));
	assert_true(cpu == 5);
	CHECK(store_course_usage_since(st, c2, 0, &cpu, &gib, E));
	assert_true(cpu == 3 && gib == 0.5);
	CHECK(store_course_usage_since(st, c, now + 3600000, &cpu, &gib, E));
	assert_true(cpu == 0 && gib == 0);

	CHECK(store_course_set_cpu_cap(st, c, 4.5, E));
	CHECK(policy_budget_check(st, c, &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_OVER_BUDGET);
	CHECK(store_course_set_cpu_cap(st, c, 5.5, E));
	CHECK(policy_budget_check(st, c, &verdict, E));
	assert_int_equal(verdict.refusal, POLICY_ALLOWED);
	store_close(st);
}

/* The version-5 schema, as an older proctor left it. */
static const char sql_downgrade_to_5[] = "DROP TABLE sandbox_templates;"
					 "DROP TABLE sandbox_execs;"
					 "DROP TABLE sandboxes;"
					 "ALTER TABLE tokens DROP COLUMN max_live_sandboxes;"
					 "ALTER TABLE tokens DROP COLUMN daily_spend_micros;"
					 "DELETE FROM schema_version WHERE version >= 6;";

static void test_store_migration_6_upgrades_a_version_5_database(void **state)
{
	char url[512], s[16];
	int64_t c, v, t, x;
	double cpu = 0, gib = 0;
	struct err e;

	fresh_url(state, url, sizeof(url));
	struct store *st = open_or_fail(url);
	seed(st, "cs101", &c, &v);
	sandbox_seed(st, "cs101", &c, &t);
	int64_t sub = submit_as(st, c, v, "ada", 0);
	grade_next(st, doc_graded, 7);
	if (st->ops->exec_script(st->conn, sql_downgrade_to_5, &e) < 0)
		fail_msg("downgrade: %s", e.msg);
	assert_int_equal(count_rows(st, sql_version), 5);
	st = store_close(st);

	st = open_or_fail(url);
	assert_int_equal(count_rows(st, sql_version), STORE_SCHEMA_VERSION);
	assert_int_equal(count_rows(st, sql_versions), (int64_t)store_migration_count);
	struct store_submission_view view;
	CHECK(store_submission_get(st, sub, &view, E));
	assert_true(view.has_result && view.result.score == 7);
	store_submission_view_clear(&view);
	CHECK(store_course_usage_since(st, c, 0, &cpu, &gib, E));
	assert_true(cpu == 2 && gib == 1);
	int64_t id = sandbox_running(st, c, t, "host-a");
	CHECK(store_exec_begin(st, id, "[\"true\"]", NULL, &x, E));
	CHECK(store_exec_end(st, x, &exec_ok, E));
	assert_string_equal(sandbox_state(st, id, s), "running");
	CHECK(store_course_usage_since(st, c, 0, &cpu, &gib, E));
	assert_true(cpu == 3.5 && gib == 1.25);
	store_close(st);
}

static int setup_sqlite(void **state)
{
	snprintf(sqlite_backend.tmpdir, sizeof(sqlite_backend.tmpdir), "/tmp/proctor-store.XXXXXX");
	if (!mkdtemp(sqlite_backend.tmpdir))
		return -1;
	*state = &sqlite_backend;
	return 0;
}

static int teardown_sqlite(void **state)
{
	char cmd[300];

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
	pgtest_stop(pg_backend.pg);
	pg_backend.pg = NULL;
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--open-and-close") == 0) {
		/* The other process of the locks test. */
		struct store *st = NULL;
		struct err e;
		if (store_open(argv[2], &st, &e) < 0) {
			fprintf(stderr, "store_open: %s\n", e.msg);
			return 1;
		}
		store_close(st);
		return 0;
	}
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_store_migrates_from_empty_and_reopens),
	    cmocka_unit_test(test_store_submit_is_idempotent),
	    cmocka_unit_test(test_store_claims_oldest_runnable_first),
	    cmocka_unit_test(test_store_two_claimers_never_share_a_job),
	    cmocka_unit_test(test_store_expired_lease_lets_another_worker_claim),
	    cmocka_unit_test(test_store_fenced_worker_cannot_complete_or_heartbeat),
	    cmocka_unit_test(test_store_our_failure_backs_off_then_ends_as_error),
	    cmocka_unit_test(test_store_lost_worker_on_last_attempt_ends_as_error),
	    cmocka_unit_test(test_store_outbox_row_is_written_with_the_result),
	    cmocka_unit_test(test_store_callback_payload_follows_who_asked),
	    cmocka_unit_test(test_store_blobs_are_deduplicated),
	    cmocka_unit_test(test_store_tokens_are_hashed_and_checked),
	    cmocka_unit_test(test_store_crash_between_claim_and_complete_loses_nothing),
	    cmocka_unit_test(test_store_regrade_adds_a_result_beside_the_old),
	    cmocka_unit_test(test_store_regrade_batch_says_which_scores_changed),
	    cmocka_unit_test(test_store_counts_jobs_by_course_and_state),
	    cmocka_unit_test(test_store_processes_opening_together_migrate_once),
	    cmocka_unit_test(test_store_opening_a_current_database_waits_for_no_lock),
	    cmocka_unit_test(test_store_concurrent_retries_of_one_key_make_one_submission),
	    cmocka_unit_test(test_store_admission_check_and_submit_are_one_step),
	    cmocka_unit_test(test_store_outbox_gives_up_after_max_attempts),
	    cmocka_unit_test(test_store_sweep_ends_jobs_of_lost_workers),
	    cmocka_unit_test(test_store_released_job_is_claimable_at_once_and_costs_no_attempt),
	    cmocka_unit_test(test_store_a_failed_write_fails_its_transaction),
	    cmocka_unit_test(test_store_migration_3_upgrades_a_version_2_database),
	    cmocka_unit_test(test_store_policy_is_set_read_and_cleared),
	    cmocka_unit_test(test_store_extensions_are_set_replaced_listed_removed),
	    cmocka_unit_test(test_store_submission_count_ignores_our_failures),
	    cmocka_unit_test(test_store_gradebook_rows_have_latest_results),
	    cmocka_unit_test(test_store_doc_status_reads_only_the_start),
	    cmocka_unit_test(test_store_budget_and_usage),
	    cmocka_unit_test(test_store_policy_admit_and_export),
	    cmocka_unit_test(test_store_sandbox_is_created_replayed_placed_and_read),
	    cmocka_unit_test(test_store_sandboxes_are_listed_by_label_newest_first),
	    cmocka_unit_test(test_store_sandbox_end_takes_its_running_execs),
	    cmocka_unit_test(test_store_sandboxes_of_a_lost_host_and_past_their_lease_end),
	    cmocka_unit_test(test_store_exec_end_adds_to_its_sandbox_totals),
	    cmocka_unit_test(test_store_course_usage_counts_sandbox_execs),
	    cmocka_unit_test(test_store_migration_6_upgrades_a_version_5_database),
	};
	/* What only one backend has (SQLite's POSIX locks, PostgreSQL's round trips). */
	const struct CMUnitTest sqlite_only[] = {
	    cmocka_unit_test(test_store_sqlite_second_connection_keeps_the_first_ones_locks),
	    cmocka_unit_test(test_store_unknown_job_state_is_our_error),
	};
	const struct CMUnitTest pg_only[] = {
	    cmocka_unit_test(test_store_submission_round_trips),
	    cmocka_unit_test(test_store_statements_are_prepared_once),
	};
	int failed =
	    cmocka_run_group_tests_name("store_sqlite", tests, setup_sqlite, teardown_sqlite);
	failed += cmocka_run_group_tests_name("store_sqlite_only", sqlite_only, setup_sqlite,
					      teardown_sqlite);
	failed += cmocka_run_group_tests_name("store_postgresql", tests, setup_pg, teardown_pg);
	failed += cmocka_run_group_tests_name("store_postgresql_only", pg_only, setup_pg,
					      teardown_pg);
	return failed ? 1 : 0;
}
