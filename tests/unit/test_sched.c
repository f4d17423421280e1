/* Unit tests of sched.c: the worker pool with jobs that need no sandbox (results, retries, budgets,
 * cancel, drain). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "grade/sched.h"
#include "util.h"

#define SECOND 1000000000ull

/*
 * A job's arg says what its worker does:
 *   "ok"          answer {"id": ID}
 *   "exit"        exit with status 3 (the worker dies)
 *   "once:PATH"   die the first time (PATH does not exist yet), then answer
 *   "sleep:MS"    sleep, then answer
 *   "big"         answer an object larger than the test's result cap
 */
static json_t *fake_run(void *ctx, const struct sched_job *job)
{
	(void)ctx;
	if (strcmp(job->arg, "exit") == 0)
		_exit(3);
	if (strncmp(job->arg, "once:", 5) == 0) {
		int fd = open(job->arg + 5, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0)
			_exit(3);
	}
	if (strncmp(job->arg, "sleep:", 6) == 0) {
		long ms = strtol(job->arg + 6, NULL, 10);
		struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
		nanosleep(&ts, NULL);
	}
	if (strcmp(job->arg, "big") == 0)
		return json_pack("{s:I, s:s}", "id", (json_int_t)job->id, "pad",
				 "0123456789012345678901234567890123456789"
				 "0123456789012345678901234567890123456789");
	return json_pack("{s:I}", "id", (json_int_t)job->id);
}

/* Refuses the result of job 1313. */
static int fake_check(void *ctx, uint64_t id, const json_t *doc, char *why, size_t why_len)
{
	(void)ctx;
	(void)doc;
	if (id != 1313)
		return 0;
	snprintf(why, why_len, "sent a result for another submission");
	return -1;
}

static struct sched *start(unsigned workers, int wake_fd)
{
	struct sched_options o = {.workers = workers,
				  .attempts = 2,
				  .result_max = 64,
				  .wake_fd = wake_fd,
				  .run = fake_run,
				  .check = fake_check};
	struct sched *s = NULL;
	struct err e;

	assert_int_equal(sched_new(&o, &s, &e), 0);
	return s;
}

static void submit(struct sched *s, uint64_t id, const char *arg, uint64_t budget_ns)
{
	struct sched_job job = {.id = id, .arg = arg, .budget_ns = budget_ns};
	struct err e;

	if (sched_submit(s, &job, &e) < 0)
		fail_msg("submit %llu: %s", (unsigned long long)id, e.msg);
}

/* The next event, failing the test after 30 s without one. */
static struct sched_result next(struct sched *s)
{
	struct sched_result r;
	struct err e;
	uint64_t deadline = now_ns() + 30 * SECOND;

	while (now_ns() < deadline) {
		int got = sched_next_result(s, 100, &r, &e);
		if (got < 0)
			fail_msg("sched_next_result: %s", e.msg);
		if (got > 0)
			return r;
	}
	fail_msg("no event in 30 s");
	return r;
}

/* No child of this process is left: every worker was reaped. */
static void assert_no_children(void)
{
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

static void test_sched_returns_every_result_as_it_finishes(void **state)
{
	(void)state;
	struct sched *s = start(3, -1);
	bool seen[20] = {false};

	for (uint64_t i = 0; i < 20; i++)
		submit(s, i, i % 5 == 0 ? "sleep:50" : "ok", 10 * SECOND);
	assert_int_equal(sched_pending(s), 20);
	for (int k = 0; k < 20; k++) {
		struct sched_result r = next(s);
		if (r.event != SCHED_RESULT)
			fail_msg("event %d for job %llu: %s", r.event, (unsigned long long)r.id,
				 r.why);
		assert_true(r.id < 20 && !seen[r.id]);
		seen[r.id] = true;
		assert_int_equal(r.attempts, 1);
		assert_int_equal(json_integer_value(json_object_get(r.doc, "id")),
				 (json_int_t)r.id);
		/* The line is the document as sent, on one line. */
		assert_int_equal(r.line[r.len - 1], '\n');
		assert_null(memchr(r.line, '\n', r.len - 1));
		json_t *again = json_loadb(r.line, r.len, 0, NULL);
		assert_true(json_equal(again, r.doc));
		json_decref(again);
		sched_result_clear(&r);
	}
	assert_int_equal(sched_pending(s), 0);
	sched_free(s);
	assert_no_children();
}

/* A worker that dies costs its job one attempt; the second failure is the
 * job's end, and the pool goes on with new workers. */
static void test_sched_retries_then_fails_a_job_whose_worker_dies(void **state)
{
	(void)state;
	struct sched *s = start(1, -1);

	submit(s, 1, "exit", 10 * SECOND);
	submit(s, 2, "ok", 10 * SECOND);
	struct sched_result r = next(s);
	assert_int_equal(r.event, SCHED_RETRY);
	assert_int_equal(r.id, 1);
	assert_true(r.pid > 0);
	assert_string_equal(r.why, "exited with status 3");
	r = next(s); /* job 2 was queued before job 1's retry */
	assert_int_equal(r.event, SCHED_RESULT);
	assert_int_equal(r.id, 2);
	sched_result_clear(&r);
	r = next(s);
	assert_int_equal(r.event, SCHED_FAILED);
	assert_int_equal(r.id, 1);
	assert_int_equal(r.attempts, 2);
	assert_true(r.pid > 0);
	assert_int_equal(sched_pending(s), 0);
	submit(s, 3, "ok", 10 * SECOND);
	r = next(s);
	assert_int_equal(r.event, SCHED_RESULT);
	sched_result_clear(&r);
	sched_free(s);
	assert_no_children();
}

static void test_sched_retry_can_succeed(void **state)
{
	(void)state;
	char path[64];
	snprintf(path, sizeof(path), "once:/tmp/test_sched.%d", (int)getpid());
	unlink(path + 5);
	struct sched *s = start(2, -1);

	submit(s, 7, path, 10 * SECOND);
	struct sched_result r = next(s);
	assert_int_equal(r.event, SCHED_RETRY);
	r = next(s);
	assert_int_equal(r.event, SCHED_RESULT);
	assert_int_equal(r.attempts, 2);
	sched_result_clear(&r);
	sched_free(s);
	unlink(path + 5);
	assert_no_children();
}

/* Over its budget, a worker is killed by pid and its job retried. */
static void test_sched_kills_a_worker_over_the_budget(void **state)
{
	(void)state;
	struct sched *s = start(1, -1);
	uint64_t t0 = now_ns();

	submit(s, 1, "sleep:20000", SECOND / 5);
	struct sched_result r = next(s);
	assert_int_equal(r.event, SCHED_RETRY);
	assert_non_null(strstr(r.why, "took longer than"));
	r = next(s);
	assert_int_equal(r.event, SCHED_FAILED);
	assert_non_null(strstr(r.why, "took longer than"));
	assert_true(now_ns() - t0 < 10 * SECOND);
	sched_free(s);
	assert_no_children();
}

/* What a worker sends is checked: too large, or refused by o->check. */
static void test_sched_loses_a_worker_that_sends_a_bad_result(void **state)
{
	(void)state;
	struct sched *s = start(1, -1);

	submit(s, 1, "big", 10 * SECOND);
	struct sched_result r = next(s);
	assert_int_equal(r.event, SCHED_RETRY);
	assert_non_null(strstr(r.why, "sent a result of"));
	r = next(s);
	assert_int_equal(r.event, SCHED_FAILED);
	submit(s, 1313, "ok", 10 * SECOND);
	r = next(s);
	assert_int_equal(r.event, SCHED_RETRY);
	assert_string_equal(r.why, "sent a result for another submission");
	r = next(s);
	assert_int_equal(r.event, SCHED_FAILED);
	sched_free(s);
	assert_no_children();
}

/* Without a worker, every job fails at once, as Proctor's failure. */
static void test_sched_without_workers_fails_every_job(void **state)
{
	(void)state;
	struct sched *s = start(0, -1);

	submit(s, 1, "ok", SECOND);
	submit(s, 2, "ok", SECOND);
	for (uint64_t id = 1; id <= 2; id++) {
		struct sched_result r = next(s);
		assert_int_equal(r.event, SCHED_FAILED);
		assert_int_equal(r.id, id);
		assert_int_equal(r.pid, 0);
		assert_string_equal(r.why, "no grading worker could be started");
	}
	assert_int_equal(sched_pending(s), 0);
	sched_free(s);
}

static void test_sched_cancel_drops_queued_and_kills_running_jobs(void **state)
{
	(void)state;
	struct sched *s = start(1, -1);
	struct sched_result r;
	struct err e;

	submit(s, 1, "sleep:20000", 60 * SECOND);
	submit(s, 2, "ok", 60 * SECOND);
	assert_int_equal(sched_next_result(s, 50, &r, &e), 0); /* job 1 is running */
	assert_int_equal(sched_cancel(s, 2), 0);
	assert_int_equal(sched_cancel(s, 1), 0);
	assert_int_equal(sched_cancel(s, 1), -1);
	assert_int_equal(sched_cancel(s, 99), -1);
	r = next(s);
	assert_int_equal(r.event, SCHED_CANCELLED);
	assert_int_equal(r.id, 2);
	r = next(s);
	assert_int_equal(r.event, SCHED_CANCELLED);
	assert_int_equal(r.id, 1);
	/* The killed worker was replaced. */
	submit(s, 3, "ok", 10 * SECOND);
	r = next(s);
	assert_int_equal(r.event, SCHED_RESULT);
	assert_int_equal(r.id, 3);
	sched_result_clear(&r);
	sched_free(s);
	assert_no_children();
}

/* Drain: queued jobs are cancelled, running ones finish, workers exit. */
static void test_sched_drain_lets_running_jobs_finish(void **state)
{
	(void)state;
	struct sched *s = start(1, -1);
	struct sched_result r;
	struct err e;

	submit(s, 1, "sleep:300", 60 * SECOND);
	submit(s, 2, "ok", 60 * SECOND);
	submit(s, 3, "ok", 60 * SECOND);
	assert_int_equal(sched_next_result(s, 50, &r, &e), 0);
	sched_drain(s);
	struct sched_job job = {.id = 4, .arg = "ok", .budget_ns = SECOND};
	assert_int_equal(sched_submit(s, &job, &e), -1);
	for (uint64_t id = 2; id <= 3; id++) {
		r = next(s);
		assert_int_equal(r.event, SCHED_CANCELLED);
		assert_int_equal(r.id, id);
	}
	r = next(s);
	assert_int_equal(r.event, SCHED_RESULT);
	assert_int_equal(r.id, 1);
	sched_result_clear(&r);
	assert_int_equal(sched_pending(s), 0);
	sched_free(s);
	assert_no_children();
}

/* The caller's fd ends the wait at once, unread. */
static void test_sched_wake_fd_ends_the_wait(void **state)
{
	(void)state;
	int fd = eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK);
	struct sched *s = start(1, fd);
	struct sched_result r;
	struct err e;
	uint64_t t0 = now_ns(), v;

	submit(s, 1, "sleep:20000", 60 * SECOND);
	assert_int_equal(sched_next_result(s, 10000, &r, &e), 0);
	assert_true(now_ns() - t0 < 5 * SECOND);
	assert_int_equal(read(fd, &v, sizeof(v)), sizeof(v));
	/* Stopping with a job running: its worker is killed and reaped. */
	t0 = now_ns();
	sched_free(s);
	assert_true(now_ns() - t0 < 5 * SECOND);
	assert_no_children();
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sched_returns_every_result_as_it_finishes),
	    cmocka_unit_test(test_sched_retries_then_fails_a_job_whose_worker_dies),
	    cmocka_unit_test(test_sched_retry_can_succeed),
	    cmocka_unit_test(test_sched_kills_a_worker_over_the_budget),
	    cmocka_unit_test(test_sched_loses_a_worker_that_sends_a_bad_result),
	    cmocka_unit_test(test_sched_without_workers_fails_every_job),
	    cmocka_unit_test(test_sched_cancel_drops_queued_and_kills_running_jobs),
	    cmocka_unit_test(test_sched_drain_lets_running_jobs_finish),
	    cmocka_unit_test(test_sched_wake_fd_ends_the_wait),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
