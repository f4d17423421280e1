/* Job store benchmark: durable submits/s and claim+complete/s, SQLite and PostgreSQL side by side.
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pgtest.h"
#include "store/store.h"
#include "store/store_int.h"

/*
 * Each submit is its own committed transaction (the API acknowledges only
 * after commit): SQLite in WAL mode with synchronous=FULL, PostgreSQL with
 * its defaults (fsync on, synchronous_commit on) on a server this program
 * starts on loopback.  Clients and workers are separate processes, each
 * with its own connection, as `proctor serve` threads and `proctor worker`
 * processes would be.  The numbers are a measurement, not a test: the
 * program exits 0 whatever they are.
 */

#define TARGET_SUBMITS 1000.0

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const struct err *e)
{
	fprintf(stderr, "store_bench: %s: %s\n", what, e ? e->msg : strerror(errno));
	exit(1);
}

static int wait_all(pid_t *kids, int n)
{
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int status;
		if (waitpid(kids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
			bad++;
	}
	return bad;
}

/* Clients processes submit `n` submissions between them; returns submits/s. */
static double bench_submit(const char *url, int64_t course, int64_t version, int n, int clients)
{
	pid_t kids[16];
	char payload[2048];

	memset(payload, 'x', sizeof(payload));
	double t0 = now_s();
	for (int k = 0; k < clients; k++) {
		kids[k] = fork();
		if (kids[k] < 0)
			die("fork", NULL);
		if (kids[k] == 0) {
			struct store *st = NULL;
			struct err e;
			if (store_open(url, &st, &e) < 0)
				_exit(2);
			for (int i = k; i < n; i += clients) {
				char key[32];
				snprintf(key, sizeof(key), "k%d-%d", clients, i);
				/* Distinct bytes per submission: no blob is deduplicated. */
				snprintf(payload, sizeof(payload), "%s", key);
				struct store_submission_in in = {.course_id = course,
								 .version_id = version,
								 .student = "s",
								 .idempotency_key = key,
								 .data = payload,
								 .len = sizeof(payload)};
				int64_t sub, job;
				if (store_submit(st, &in, &sub, &job, NULL, &e) < 0) {
					fprintf(stderr, "submit: %s\n", e.msg);
					_exit(3);
				}
			}
			store_close(st);
			_exit(0);
		}
	}
	if (wait_all(kids, clients))
		die("a submit client failed", NULL);
	return n / (now_s() - t0);
}

/* Workers claim and complete until no job is left; returns jobs/s. */
static double bench_work(const char *url, int n, int workers)
{
	pid_t kids[16];
	static const struct store_result_in res = {
	    .doc_json = "{\"status\":\"ok\",\"score\":1}", .score = 1, .max_score = 1};

	double t0 = now_s();
	for (int k = 0; k < workers; k++) {
		kids[k] = fork();
		if (kids[k] < 0)
			die("fork", NULL);
		if (kids[k] == 0) {
			struct store *st = NULL;
			struct err e;
			struct store_claim c;
			char name[16];
			snprintf(name, sizeof(name), "w%d", k);
			if (store_open(url, &st, &e) < 0)
				_exit(2);
			for (;;) {
				int rc = store_job_claim(st, name, "bench", 60000, &c, &e);
				if (rc < 0) {
					fprintf(stderr, "claim: %s\n", e.msg);
					_exit(3);
				}
				if (rc == 0)
					break;
				if (store_job_complete(st, c.job_id, c.attempt, c.lease_token, &res,
						       NULL, &e) < 0) {
					fprintf(stderr, "complete: %s\n", e.msg);
					_exit(4);
				}
			}
			store_close(st);
			_exit(0);
		}
	}
	if (wait_all(kids, workers))
		die("a worker failed", NULL);
	return n / (now_s() - t0);
}

struct row {
	double submit1, submit4, submit8, work1, work2;
	double trips_submit, trips_work; /* round trips of one, on a connection in use */
};

/* Round trips of a submit and of a claim+complete, each the second on its
 * connection (statements prepared): what one costs in waits for a
 * networked database (0 on SQLite). */
static void count_round_trips(const char *url, int64_t course, int64_t version, struct row *r)
{
	static const struct store_result_in res = {
	    .doc_json = "{\"status\":\"ok\",\"score\":1}", .score = 1, .max_score = 1};
	struct store *st = NULL;
	struct store_claim c;
	struct err e;
	uint64_t before = 0;

	if (store_open(url, &st, &e) < 0)
		die(url, &e);
	for (int i = 0; i < 2; i++) {
		struct store_submission_in in = {
		    .course_id = course, .version_id = version, .data = "x", .len = 1};
		int64_t sub, job;
		before = store_round_trips(st);
		if (store_submit(st, &in, &sub, &job, NULL, &e) < 0)
			die("submit", &e);
	}
	r->trips_submit = (double)(store_round_trips(st) - before);
	for (int i = 0; i < 2; i++) {
		before = store_round_trips(st);
		if (store_job_claim(st, "w", "bench", 60000, &c, &e) != 1 ||
		    store_job_complete(st, c.job_id, c.attempt, c.lease_token, &res, NULL, &e) < 0)
			die("claim and complete", &e);
	}
	r->trips_work = (double)(store_round_trips(st) - before);
	store_close(st);
}

static void run_backend(const char *url, int n, struct row *r)
{
	struct store *st = NULL;
	struct err e;
	int64_t course, version;

	if (store_open(url, &st, &e) < 0)
		die(url, &e);
	if (store_course_ensure(st, "bench", true, &course, &e) < 0 ||
	    store_assignment_add_version(st, course, "a", "archive", 7, "small@1", &version, NULL,
					 &e) < 0)
		die("seed", &e);
	store_close(st);
	count_round_trips(url, course, version, r);
	r->submit1 = bench_submit(url, course, version, n, 1);
	r->work1 = bench_work(url, n, 1);
	r->submit4 = bench_submit(url, course, version, n, 4);
	r->work2 = bench_work(url, n, 2);
	r->submit8 = bench_submit(url, course, version, n, 8);
	bench_work(url, n, 2); /* leave no queued job behind */
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;
	char dir[] = "/var/tmp/proctor-store-bench.XXXXXX", url[512], why[512];
	struct row sq = {0}, pg = {0};
	bool have_pg = false;

	if (n < 10 || n > 1000000) {
		fprintf(stderr, "usage: store_bench [N submissions, 10..1000000]\n");
		return 2;
	}
	if (!mkdtemp(dir))
		die("mkdtemp", NULL);
	snprintf(url, sizeof(url), "sqlite:%s/bench.db", dir);
	run_backend(url, n, &sq);

	struct pgtest *server = NULL;
	const char *given = getenv("STORE_BENCH_PG_URL"); /* an existing, empty database */
	if (given && *given) {
		snprintf(url, sizeof(url), "%s", given);
		run_backend(url, n, &pg);
		have_pg = true;
	} else if (pgtest_start(&server, why, sizeof(why)) == 0 &&
		   pgtest_createdb(server, "bench", url, sizeof(url), why, sizeof(why)) == 0) {
		run_backend(url, n, &pg);
		have_pg = true;
	} else {
		fprintf(stderr, "store_bench: PostgreSQL skipped: %s\n", why);
	}
	pgtest_stop(server);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "store_bench: could not remove %s\n", dir);

	printf("%d submissions (2 KiB each, one durable transaction each)\n\n", n);
	printf("%-28s %12s %12s\n", "per second", "sqlite", "postgresql");
	const struct {
		const char *label;
		size_t off;
	} lines[] = {
	    {"submits, 1 client", offsetof(struct row, submit1)},
	    {"submits, 4 clients", offsetof(struct row, submit4)},
	    {"submits, 8 clients", offsetof(struct row, submit8)},
	    {"claim+complete, 1 worker", offsetof(struct row, work1)},
	    {"claim+complete, 2 workers", offsetof(struct row, work2)},
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		double a = *(double *)((char *)&sq + lines[i].off);
		double b = *(double *)((char *)&pg + lines[i].off);
		if (have_pg)
			printf("%-28s %12.0f %12.0f\n", lines[i].label, a, b);
		else
			printf("%-28s %12.0f %12s\n", lines[i].label, a, "n/a");
	}
	if (have_pg)
		printf("\nround trips to PostgreSQL: %.0f a submit, %.0f a claim+complete\n",
		       pg.trips_submit, pg.trips_work);
	double best_sq = fmax(sq.submit1, fmax(sq.submit4, sq.submit8));
	double best_pg = fmax(pg.submit1, fmax(pg.submit4, pg.submit8));
	printf("\ntarget: >= %.0f accepted submissions/s on each backend\n", TARGET_SUBMITS);
	if (best_sq < TARGET_SUBMITS)
		printf("TARGET MISSED: sqlite %.0f submits/s\n", best_sq);
	if (have_pg && best_pg < TARGET_SUBMITS)
		printf("TARGET MISSED: postgresql %.0f submits/s\n", best_pg);
	return 0;
}
