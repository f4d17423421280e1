/* Service benchmark (issue 11): intake rate, submit-to-result latency and class throughput of
 * `proctor serve` / `proctor worker` against `proctor class`, measured side by side in one run.
 */
#include <archive.h>
#include <archive_entry.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <nettle/base64.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pgtest.h"

/*
 * Three measurements, each against real processes on loopback:
 *
 * 1. Durable intake: `proctor serve --workers 0` on SQLite (a file under
 *    /var/tmp, WAL, synchronous=FULL) and on PostgreSQL (a private server
 *    started with tests/integration/pgtest.c), loaded by C libcurl threads,
 *    each with one keep-alive connection, posting small distinct .tar.gz
 *    submissions.  A submission counts when it was answered 202, which the
 *    API sends only after the commit.
 * 2. Submit to result, one submission at a time, a trivial I/O assignment
 *    (`cat answer.txt` against one expected line) and an idle
 *    `--workers 1`: the client's own time from POST to the result in hand,
 *    and the phases the service recorded (received, queued, started,
 *    sandbox ready, finished; the database's clock).
 * 3. Class throughput: the same submissions graded by `proctor class -j N`
 *    and by `proctor worker -j N --exit-when-idle` on a store where they
 *    were submitted beforehand (the worker is what `serve --workers N`
 *    runs), wall time from spawn to exit for both; N = 1 and 2.
 *
 * The program grades in 2 and 3 and so must hold /tmp/proctor-itest.lock
 * (bench/service_bench.sh takes it).  It prints numbers, not a verdict:
 * it exits 0 whatever they are, 1 when it could not measure.
 */

extern char **environ;

#define TARGET_INTAKE	  1000.0 /* accepted submissions/s, each backend */
#define TARGET_QUEUE_MS	  20.0	 /* accepted -> sandbox ready, p50, idle workers */
#define TARGET_THROUGHPUT 1.10	 /* service time / class time, same parallelism */

struct config {
	const char *proctor;
	const char *example;
	unsigned intake_n;
	double intake_s;
	unsigned clients;
	unsigned samples;
	unsigned copies;
	unsigned trivial_n;
	unsigned rounds;
	unsigned poll_ms; /* 0: `serve --workers 1`; else a `worker --poll-ms` of its own */
	bool phase[3];	  /* intake, latency, throughput */
	bool no_pg;
	bool no_sqlite_intake;
};

static struct config cfg = {.proctor = "build-rel/proctor",
			    .example = "examples/python-pytest",
			    .intake_n = 3000,
			    .intake_s = 20,
			    .clients = 8,
			    .samples = 60,
			    .copies = 10,
			    .trivial_n = 100,
			    .rounds = 3,
			    .phase = {true, true, true}};

static char g_dir[PATH_MAX];   /* everything of this run */
static char g_state[PATH_MAX]; /* --state-dir of every proctor */

/* ---- small things ------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "service_bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	if (g_dir[0])
		fprintf(stderr, "service_bench: logs are in %s\n", g_dir);
	exit(1);
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "service_bench: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0)
		die("out of memory");
	return s;
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char *s = NULL;
	size_t cap = 0, len = 0, n;
	char chunk[8192];
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (len + n + 1 > cap) {
			cap = (len + n + 1) * 2;
			char *g = realloc(s, cap);
			if (!g)
				die("out of memory");
			s = g;
		}
		memcpy(s + len, chunk, n);
		len += n;
	}
	fclose(f);
	if (!s)
		s = calloc(1, 1);
	else
		s[len] = '\0';
	return s;
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		die("write %s: %s", path, strerror(errno));
}

static void make_dir(const char *path)
{
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die("mkdir %s: %s", path, strerror(errno));
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of n values (sorts them). */
static double pct(double *v, size_t n, double p)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	size_t k = (size_t)ceil(p / 100.0 * (double)n);
	return v[k ? k - 1 : 0];
}

static double median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void loadavg(char *buf, size_t cap)
{
	char *s = read_text("/proc/loadavg");
	double a = 0, b = 0, c = 0;
	if (s)
		sscanf(s, "%lf %lf %lf", &a, &b, &c);
	free(s);
	snprintf(buf, cap, "%.2f %.2f %.2f", a, b, c);
}

/* ---- processes we started (only those are ever signalled) ---------------- */

#define MAX_KIDS 32
static volatile sig_atomic_t kids[MAX_KIDS];

static void kid_add(pid_t p)
{
	for (int i = 0; i < MAX_KIDS; i++)
		if (!kids[i]) {
			kids[i] = p;
			return;
		}
}

static void kid_del(pid_t p)
{
	for (int i = 0; i < MAX_KIDS; i++)
		if (kids[i] == p)
			kids[i] = 0;
}

static void on_signal(int sig)
{
	/* A server stops its worker process on SIGTERM; a worker finishes its
	 * running jobs.  PostgreSQL is stopped by pgtest's guard when we exit. */
	for (int i = 0; i < MAX_KIDS; i++)
		if (kids[i] > 0)
			kill((pid_t)kids[i], SIGTERM);
	_exit(128 + sig);
}

/* Spawn argv with stdin from /dev/null and stdout/stderr to files (NULL: /dev/null). */
static pid_t spawn(char *const argv[], const char *out, const char *err)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out ? out : "/dev/null",
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, err ? err : "/dev/null",
					 O_WRONLY | O_CREAT | O_APPEND, 0644);
	int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0)
		die("spawn %s: %s", argv[0], strerror(rc));
	kid_add(pid);
	return pid;
}

/* Exit status (128 + signal when killed), or -1 past timeout_s (then it is still running). */
static int wait_kid(pid_t pid, double timeout_s)
{
	double until = now_s() + timeout_s;
	int st;
	for (;;) {
		pid_t r = waitpid(pid, &st, timeout_s > 0 ? WNOHANG : 0);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR)
			die("waitpid %d: %s", (int)pid, strerror(errno));
		if (timeout_s > 0 && now_s() > until)
			return -1;
		if (r == 0)
			sleep_s(0.005);
	}
	kid_del(pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void stop_kid(pid_t pid)
{
	kill(pid, SIGTERM);
	if (wait_kid(pid, 60) < 0) {
		note("process %d ignored SIGTERM for 60 s: SIGKILL", (int)pid);
		kill(pid, SIGKILL);
		wait_kid(pid, 0);
	}
}

/* Run argv to its end; its stdout (trimmed) into *out when out is not NULL. */
static int run(char *const argv[], char **out, const char *err_log)
{
	char *path = xasprintf("%s/stdout.tmp", g_dir);
	int st = wait_kid(spawn(argv, path, err_log), 0);
	if (out) {
		*out = read_text(path);
		if (!*out)
			die("read %s", path);
		size_t n = strlen(*out);
		while (n && ((*out)[n - 1] == '\n' || (*out)[n - 1] == ' '))
			(*out)[--n] = '\0';
	}
	unlink(path);
	free(path);
	return st;
}

/* ---- archives ------------------------------------------------------------ */

struct member {
	char name[256];
	char *data;
	size_t len;
};

struct subdir {
	struct member m[8];
	size_t n;
};

/* A .tar.gz of the members, base64; mtime makes otherwise equal archives distinct. */
static char *archive_b64(const struct subdir *s, time_t mtime)
{
	size_t cap = 1u << 20, used = 0;
	unsigned char *buf = malloc(cap);
	struct archive *a = archive_write_new();

	if (!buf || !a || archive_write_add_filter_gzip(a) != ARCHIVE_OK ||
	    archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_open_memory(a, buf, cap, &used) != ARCHIVE_OK)
		die("archive: %s", a ? archive_error_string(a) : "out of memory");
	for (size_t i = 0; i < s->n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, s->m[i].name);
		archive_entry_set_size(e, (la_int64_t)s->m[i].len);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_mtime(e, mtime, 0);
		if (archive_write_header(a, e) != ARCHIVE_OK ||
		    archive_write_data(a, s->m[i].data, s->m[i].len) != (la_ssize_t)s->m[i].len)
			die("archive: %s", archive_error_string(a));
		archive_entry_free(e);
	}
	if (archive_write_close(a) != ARCHIVE_OK)
		die("archive: %s", archive_error_string(a));
	archive_write_free(a);
	char *b64 = malloc(BASE64_ENCODE_RAW_LENGTH(used) + 1);
	if (!b64)
		die("out of memory");
	base64_encode_raw(b64, used, buf);
	b64[BASE64_ENCODE_RAW_LENGTH(used)] = '\0';
	free(buf);
	return b64;
}

/* The regular files at the top of a submission directory. */
static void read_subdir(const char *path, struct subdir *s)
{
	DIR *d = opendir(path);
	struct dirent *de;

	if (!d)
		die("opendir %s: %s", path, strerror(errno));
	s->n = 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (s->n == sizeof(s->m) / sizeof(s->m[0]))
			die("%s: too many files for this bench", path);
		char *p = xasprintf("%s/%s", path, de->d_name);
		struct member *m = &s->m[s->n++];
		snprintf(m->name, sizeof(m->name), "%s", de->d_name);
		m->data = read_text(p);
		if (!m->data)
			die("read %s", p);
		m->len = strlen(m->data);
		free(p);
	}
	closedir(d);
}

static void free_subdir(struct subdir *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->m[i].data);
	s->n = 0;
}

static char *submission_body(int64_t assignment, const char *student, const struct subdir *s,
			     time_t mtime)
{
	char *b64 = archive_b64(s, mtime);
	json_t *doc = json_pack("{s:I, s:s, s:s}", "assignment", (json_int_t)assignment, "student",
				student, "archive", b64);
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	if (!text)
		die("out of memory");
	json_decref(doc);
	free(b64);
	return text;
}

/* ---- HTTP (one keep-alive connection per client) -------------------------- */

struct client {
	CURL *c;
	struct curl_slist *h;
	char *ans;
	size_t len;
	char base[64];
};

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	struct client *cl = ctx;
	size_t k = size * n;
	char *g = realloc(cl->ans, cl->len + k + 1);
	if (!g)
		return 0;
	memcpy(g + cl->len, p, k);
	cl->ans = g;
	cl->len += k;
	cl->ans[cl->len] = '\0';
	return k;
}

static void client_init(struct client *cl, int port, const char *token)
{
	char auth[256];

	memset(cl, 0, sizeof(*cl));
	cl->c = curl_easy_init();
	if (!cl->c)
		die("curl_easy_init");
	snprintf(cl->base, sizeof(cl->base), "http://127.0.0.1:%d", port);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
	cl->h = curl_slist_append(cl->h, auth);
	cl->h = curl_slist_append(cl->h, "Content-Type: application/json");
	cl->h = curl_slist_append(cl->h, "Expect:"); /* no 100-continue round trip */
	curl_easy_setopt(cl->c, CURLOPT_HTTPHEADER, cl->h);
	curl_easy_setopt(cl->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(cl->c, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(cl->c, CURLOPT_TCP_NODELAY, 1L);
	curl_easy_setopt(cl->c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(cl->c, CURLOPT_WRITEDATA, cl);
}

static void client_free(struct client *cl)
{
	curl_slist_free_all(cl->h);
	curl_easy_cleanup(cl->c);
	free(cl->ans);
}

/* POST body (or GET when body is NULL) to path: the HTTP status, 0 when no answer came. */
static long client_call(struct client *cl, const char *path, const char *body)
{
	char url[512];
	long status = 0;

	snprintf(url, sizeof(url), "%s%s", cl->base, path);
	cl->len = 0;
	if (cl->ans)
		cl->ans[0] = '\0';
	curl_easy_setopt(cl->c, CURLOPT_URL, url);
	if (body) {
		curl_easy_setopt(cl->c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(cl->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	} else {
		curl_easy_setopt(cl->c, CURLOPT_HTTPGET, 1L);
	}
	if (curl_easy_perform(cl->c) != CURLE_OK)
		return 0;
	curl_easy_getinfo(cl->c, CURLINFO_RESPONSE_CODE, &status);
	return status;
}

/* POST a submission: its id, or -1 (with the status in *status). */
static int64_t post_submission(struct client *cl, const char *body, long *status)
{
	*status = client_call(cl, "/v1/submissions", body);
	if (*status != 202)
		return -1;
	json_t *doc = json_loads(cl->ans, 0, NULL);
	int64_t id = (int64_t)json_integer_value(json_object_get(doc, "submission_id"));
	json_decref(doc);
	return id > 0 ? id : -1;
}

/* The submission's document once its job ended (done or error), or NULL. */
static json_t *wait_result(struct client *cl, int64_t id, unsigned wait_s)
{
	char path[96];
	double until = now_s() + wait_s;

	snprintf(path, sizeof(path), "/v1/submissions/%lld?wait=%u", (long long)id,
		 wait_s < 30 ? wait_s : 30);
	do {
		if (client_call(cl, path, NULL) != 200)
			return NULL;
		json_t *doc = json_loads(cl->ans, 0, NULL);
		const char *st =
		    json_string_value(json_object_get(json_object_get(doc, "service"), "state"));
		if (st && (strcmp(st, "done") == 0 || strcmp(st, "error") == 0))
			return doc;
		json_decref(doc);
	} while (now_s() < until);
	return NULL;
}

static double svc_time(const json_t *doc, const char *key)
{
	const json_t *v =
	    json_object_get(json_object_get(json_object_get(doc, "service"), "times"), key);
	return json_is_integer(v) ? (double)json_integer_value(v) : NAN;
}

/* ---- the service's processes ----------------------------------------------- */

struct server {
	pid_t pid;
	int port;
	char log[PATH_MAX];
};

static void serve_start(const char *db, unsigned workers, const char *tag, struct server *s)
{
	char w[16];
	snprintf(w, sizeof(w), "%u", workers);
	snprintf(s->log, sizeof(s->log), "%s/serve-%s.log", g_dir, tag);
	char *argv[] = {
	    (char *)cfg.proctor, "serve", "--listen",	 "127.0.0.1:0", "--db", (char *)db,
	    "--workers",	 w,	  "--state-dir", g_state,	NULL};
	s->pid = spawn(argv, NULL, s->log);
	s->port = 0;
	double until = now_s() + 30;
	while (now_s() < until) {
		char *log = read_text(s->log);
		const char *p = log ? strstr(log, "listening on 127.0.0.1:") : NULL;
		if (p)
			s->port = atoi(p + strlen("listening on 127.0.0.1:"));
		bool ready = s->port > 0 && (!workers || strstr(log, "claims jobs from"));
		free(log);
		if (ready)
			return;
		int st = wait_kid(s->pid, 0.001);
		if (st >= 0)
			die("proctor serve (%s) exited with status %d; see %s", tag, st, s->log);
		sleep_s(0.02);
	}
	die("proctor serve (%s) did not start in 30 s; see %s", tag, s->log);
}

static void serve_stop(struct server *s)
{
	if (s->pid > 0)
		stop_kid(s->pid);
	s->pid = 0;
}

/* A course with a token of scope instructor (it may submit and read full results). */
static void admin_token(const char *db, char *token, size_t cap)
{
	char *out = NULL;
	char *argv[] = {(char *)cfg.proctor, "admin", "token",	 "--db",       (char *)db,
			"--course",	     "bench", "--scope", "instructor", NULL};
	char *log = xasprintf("%s/admin.log", g_dir);
	if (run(argv, &out, log) != 0 || strlen(out) + 1 > cap)
		die("proctor admin token --db %s failed; see %s", db, log);
	snprintf(token, cap, "%s", out);
	free(out);
	free(log);
}

static int64_t admin_assignment(const char *db, const char *dir)
{
	char *out = NULL;
	char *argv[] = {(char *)cfg.proctor, "admin", "assignment", "--db", (char *)db,
			"--course",	     "bench", (char *)dir,  NULL};
	char *log = xasprintf("%s/admin.log", g_dir);
	if (run(argv, &out, log) != 0)
		die("proctor admin assignment %s failed; see %s", dir, log);
	int64_t id = strtoll(out, NULL, 10);
	free(out);
	free(log);
	if (id <= 0)
		die("proctor admin assignment %s printed no id", dir);
	return id;
}

/* ---- 1. durable intake ------------------------------------------------------ */

struct intake {
	int port;
	const char *token;
	char **bodies; /* n timed, then clients * WARM_EACH for the warm-up */
	size_t n;
	double deadline;
	atomic_size_t next;
	atomic_uint ok, refused;
	double *lat_ms; /* per timed submission; NAN when not sent */
	pthread_barrier_t start;
	pthread_mutex_t mu;
	char first_refusal[300];
	unsigned index;
};

struct intake_res {
	bool measured;
	unsigned sent, ok, refused;
	double secs, rate, p50_ms, p99_ms, cpu_ms; /* cpu: the server's, per accepted */
};

/* CPU seconds (user + system, all threads) of a process so far. */
static double cpu_of(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	char *s = read_text(path), *p = s ? strrchr(s, ')') : NULL;
	unsigned long long ut = 0, st = 0;
	/* After the command's name: state and fields 4..13, then utime, stime. */
	if (p &&
	    sscanf(p + 2, "%*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu", &ut, &st) != 2)
		ut = st = 0;
	free(s);
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

#define WARM_EACH 10

static void *intake_thread(void *arg)
{
	struct intake *in = arg;
	struct client cl;
	long status;

	pthread_mutex_lock(&in->mu);
	unsigned me = in->index++;
	pthread_mutex_unlock(&in->mu);
	client_init(&cl, in->port, in->token);
	/* Warm-up on this connection: the server thread behind it opens its
	 * store connection on its first request. */
	for (unsigned k = 0; k < WARM_EACH; k++)
		post_submission(&cl, in->bodies[in->n + me * WARM_EACH + k], &status);
	pthread_barrier_wait(&in->start);
	for (;;) {
		size_t i = atomic_fetch_add(&in->next, 1);
		if (i >= in->n || now_s() > in->deadline)
			break;
		double t0 = now_s();
		post_submission(&cl, in->bodies[i], &status);
		in->lat_ms[i] = (now_s() - t0) * 1000;
		if (status == 202) {
			atomic_fetch_add(&in->ok, 1);
		} else {
			atomic_fetch_add(&in->refused, 1);
			pthread_mutex_lock(&in->mu);
			if (!in->first_refusal[0])
				snprintf(in->first_refusal, sizeof(in->first_refusal),
					 "HTTP %ld %.200s", status, cl.ans ? cl.ans : "");
			pthread_mutex_unlock(&in->mu);
		}
	}
	client_free(&cl);
	return NULL;
}

static void bench_intake(const char *db, const char *tag, struct intake_res *r)
{
	char token[256];
	struct server s;
	struct subdir sub = {.n = 1};
	struct intake in = {0};
	pthread_t th[64];

	char *triv = xasprintf("%s/trivial", g_dir);
	admin_token(db, token, sizeof(token));
	int64_t aid = admin_assignment(db, triv);
	free(triv);
	size_t total = cfg.intake_n + (size_t)cfg.clients * WARM_EACH;
	in.bodies = calloc(total, sizeof(char *));
	in.lat_ms = calloc(cfg.intake_n, sizeof(double));
	if (!in.bodies || !in.lat_ms)
		die("out of memory");
	snprintf(sub.m[0].name, sizeof(sub.m[0].name), "answer.txt");
	sub.m[0].data = "42\n";
	sub.m[0].len = 3;
	for (size_t i = 0; i < total; i++) {
		char student[32];
		snprintf(student, sizeof(student), "s%zu", i % 500);
		in.bodies[i] = submission_body(aid, student, &sub, (time_t)(1700000000 + i));
	}
	for (size_t i = 0; i < cfg.intake_n; i++)
		in.lat_ms[i] = NAN;

	serve_start(db, 0, tag, &s);
	in.port = s.port;
	in.token = token;
	in.n = cfg.intake_n;
	atomic_init(&in.next, 0);
	atomic_init(&in.ok, 0);
	atomic_init(&in.refused, 0);
	pthread_mutex_init(&in.mu, NULL);
	pthread_barrier_init(&in.start, NULL, cfg.clients + 1);
	for (unsigned k = 0; k < cfg.clients; k++)
		if (pthread_create(&th[k], NULL, intake_thread, &in) != 0)
			die("pthread_create");
	/* Read by the threads only after the barrier. */
	in.deadline = now_s() + cfg.intake_s;
	pthread_barrier_wait(&in.start);
	double t0 = now_s(), cpu0 = cpu_of(s.pid);
	for (unsigned k = 0; k < cfg.clients; k++)
		pthread_join(th[k], NULL);
	double secs = now_s() - t0, cpu = cpu_of(s.pid) - cpu0;
	serve_stop(&s);

	double *lat = calloc(cfg.intake_n, sizeof(double));
	size_t nl = 0;
	for (size_t i = 0; i < cfg.intake_n; i++)
		if (!isnan(in.lat_ms[i]))
			lat[nl++] = in.lat_ms[i];
	*r = (struct intake_res){.measured = true,
				 .sent = (unsigned)nl,
				 .ok = atomic_load(&in.ok),
				 .refused = atomic_load(&in.refused),
				 .secs = secs,
				 .rate = atomic_load(&in.ok) / secs,
				 .p50_ms = pct(lat, nl, 50),
				 .p99_ms = pct(lat, nl, 99),
				 .cpu_ms =
				     cpu * 1000 / (atomic_load(&in.ok) ? atomic_load(&in.ok) : 1)};
	if (in.first_refusal[0])
		note("%s intake: first refusal: %s", tag, in.first_refusal);
	free(lat);
	for (size_t i = 0; i < total; i++)
		free(in.bodies[i]);
	free(in.bodies);
	free(in.lat_ms);
	pthread_barrier_destroy(&in.start);
	pthread_mutex_destroy(&in.mu);
}

/* ---- 2. submit to result, one at a time -------------------------------------- */

enum lat_col { L_QUEUE, L_STARTUP, L_TO_SANDBOX, L_GRADING, L_TOTAL, L_CLIENT, L_COLS };
static const char *const lat_names[L_COLS] = {
    "queue wait (queued -> started)",
    "start-up (started -> sandbox ready)",
    "accepted -> sandbox ready",
    "grading (sandbox ready -> finished)",
    "recorded total (accepted -> finished)",
    "client: POST -> result in hand",
};

struct lat_res {
	bool measured;
	unsigned n, failed;
	double p50[L_COLS], p99[L_COLS];
};

#define LAT_WARM 3

static void bench_latency(const char *db, const char *tag, struct lat_res *r)
{
	char token[256];
	struct server s;
	struct client cl;
	struct subdir sub = {.n = 1};
	double *col[L_COLS];
	unsigned n = 0, failed = 0;

	char *triv = xasprintf("%s/trivial", g_dir);
	admin_token(db, token, sizeof(token));
	int64_t aid = admin_assignment(db, triv);
	free(triv);
	snprintf(sub.m[0].name, sizeof(sub.m[0].name), "answer.txt");
	sub.m[0].data = "42\n";
	sub.m[0].len = 3;
	for (int c = 0; c < L_COLS; c++)
		if (!(col[c] = calloc(cfg.samples, sizeof(double))))
			die("out of memory");
	pid_t worker = 0;
	if (cfg.poll_ms) {
		/* What `serve --workers 1` runs, with another poll interval. */
		char poll[16], *log = xasprintf("%s/worker-%s.log", g_dir, tag);
		snprintf(poll, sizeof(poll), "%u", cfg.poll_ms);
		char *argv[] = {(char *)cfg.proctor, "worker", "--db",	      (char *)db, "-j", "1",
				"--poll-ms",	     poll,     "--state-dir", g_state,	  NULL};
		serve_start(db, 0, tag, &s);
		worker = spawn(argv, NULL, log);
		for (int k = 0; k < 3000; k++) {
			char *text = read_text(log);
			bool up = text && strstr(text, "claims jobs from");
			free(text);
			if (up)
				break;
			if (wait_kid(worker, 0.001) >= 0)
				die("proctor worker (%s) exited; see %s", tag, log);
			sleep_s(0.01);
		}
		free(log);
	} else {
		serve_start(db, 1, tag, &s);
	}
	client_init(&cl, s.port, token);
	srand(1);
	for (unsigned i = 0; i < LAT_WARM + cfg.samples; i++) {
		long status;
		char student[32];
		snprintf(student, sizeof(student), "lat%u", i);
		char *body = submission_body(aid, student, &sub, (time_t)(1700000000 + i));
		/* Arrive at a random moment of the idle worker's poll. */
		sleep_s(0.02 + 0.06 * rand() / (double)RAND_MAX);
		double t0 = now_s();
		int64_t id = post_submission(&cl, body, &status);
		json_t *doc = id > 0 ? wait_result(&cl, id, 120) : NULL;
		double t1 = now_s();
		free(body);
		const char *verdict = json_string_value(json_object_get(doc, "status"));
		if (!doc || !verdict || strcmp(verdict, "graded") != 0) {
			if (failed++ == 0)
				note("%s latency: submission %lld: HTTP %ld, %.300s", tag,
				     (long long)id, status, cl.ans ? cl.ans : "");
			json_decref(doc);
			continue;
		}
		double rec = svc_time(doc, "received_ms"), q = svc_time(doc, "queued_ms"),
		       st = svc_time(doc, "started_ms"), rd = svc_time(doc, "sandbox_ready_ms"),
		       fin = svc_time(doc, "finished_ms");
		json_decref(doc);
		if (i < LAT_WARM)
			continue;
		col[L_QUEUE][n] = st - q;
		col[L_STARTUP][n] = rd - st;
		col[L_TO_SANDBOX][n] = rd - rec;
		col[L_GRADING][n] = fin - rd;
		col[L_TOTAL][n] = fin - rec;
		col[L_CLIENT][n] = (t1 - t0) * 1000;
		n++;
	}
	client_free(&cl);
	if (worker > 0)
		stop_kid(worker);
	serve_stop(&s);
	r->measured = true;
	r->n = n;
	r->failed = failed;
	for (int c = 0; c < L_COLS; c++) {
		r->p50[c] = pct(col[c], n, 50);
		r->p99[c] = pct(col[c], n, 99);
		free(col[c]);
	}
}

/* ---- 3. class throughput ------------------------------------------------------ */

struct tp_set {
	const char *label;
	char assignment[PATH_MAX]; /* directory */
	char class_dir[PATH_MAX];  /* what proctor class grades */
	int64_t aid;
	struct subdir *subs;
	char **names;
	size_t n;
	bool has_target;
	double class_s[2][16], svc_s[2][16];
	double class_score, svc_score;
	unsigned svc_failed, class_status_bad;
};

/* The sum of the score column of a class gradebook (submission,status,score,...). */
static double gradebook_score(const char *csv)
{
	char *text = read_text(csv), *save = NULL;
	double sum = 0;
	if (!text)
		return NAN;
	char *line = strtok_r(text, "\n", &save);
	while ((line = strtok_r(NULL, "\n", &save))) {
		char *c1 = strchr(line, ',');
		char *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
		if (c2)
			sum += strtod(c2 + 1, NULL);
	}
	free(text);
	return sum;
}

static double run_class(struct tp_set *t, unsigned j, unsigned round)
{
	char jobs[16], *out = xasprintf("%s/class-%s-j%u-r%u.csv", g_dir, t->label, j, round);
	char *log = xasprintf("%s/class-%s.log", g_dir, t->label);
	snprintf(jobs, sizeof(jobs), "%u", j);
	char *argv[] = {
	    (char *)cfg.proctor, "class", t->assignment, t->class_dir, "-j", jobs, "--out", out,
	    "--state-dir",	 g_state, NULL};
	double t0 = now_s();
	int st = wait_kid(spawn(argv, NULL, log), 0);
	double secs = now_s() - t0;
	if (st != 0) {
		t->class_status_bad++;
		note("proctor class %s -j %u exited %d; see %s", t->label, j, st, log);
	}
	t->class_score = gradebook_score(out);
	free(out);
	free(log);
	return secs;
}

static double run_service(struct tp_set *t, struct client *cl, const char *db, unsigned j,
			  unsigned round)
{
	int64_t *ids = calloc(t->n, sizeof(int64_t));
	char jobs[16];
	char *log = xasprintf("%s/worker-%s.log", g_dir, t->label);
	long status;

	if (!ids)
		die("out of memory");
	/* Submitted before the workers start: intake is measured apart. */
	for (size_t i = 0; i < t->n; i++) {
		char *body = submission_body(t->aid, t->names[i], &t->subs[i],
					     (time_t)(1700000000 + round * 100000 + j * 10000 + i));
		ids[i] = post_submission(cl, body, &status);
		free(body);
		if (ids[i] < 0)
			die("%s: submit: HTTP %ld %.300s", t->label, status,
			    cl->ans ? cl->ans : "");
	}
	snprintf(jobs, sizeof(jobs), "%u", j);
	char *argv[] = {
	    (char *)cfg.proctor, "worker", "--db", (char *)db, "-j", jobs, "--state-dir", g_state,
	    "--exit-when-idle",	 NULL};
	double t0 = now_s();
	int st = wait_kid(spawn(argv, NULL, log), 0);
	double secs = now_s() - t0;
	if (st != 0)
		note("proctor worker -j %u (%s) exited %d; see %s", j, t->label, st, log);
	t->svc_score = 0;
	for (size_t i = 0; i < t->n; i++) {
		json_t *doc = wait_result(cl, ids[i], 0);
		const char *v = json_string_value(json_object_get(doc, "status"));
		if (!v || strcmp(v, "error") == 0) {
			t->svc_failed++;
		} else {
			t->svc_score += json_number_value(json_object_get(doc, "score"));
		}
		json_decref(doc);
	}
	free(ids);
	free(log);
	return secs;
}

static void copy_subdir(const struct subdir *s, const char *dst)
{
	make_dir(dst);
	for (size_t i = 0; i < s->n; i++) {
		char *p = xasprintf("%s/%s", dst, s->m[i].name);
		write_text(p, s->m[i].data);
		free(p);
	}
}

/* The pytest example's submissions, `copies` times; or n trivial ones. */
static void make_set(struct tp_set *t, bool pytest)
{
	static const char *const kinds[] = {"correct", "partial", "syntax_error", "sys_exit"};
	size_t nk = sizeof(kinds) / sizeof(kinds[0]);

	t->n = pytest ? cfg.copies * nk : cfg.trivial_n;
	t->subs = calloc(t->n, sizeof(*t->subs));
	t->names = calloc(t->n, sizeof(char *));
	if (!t->subs || !t->names)
		die("out of memory");
	snprintf(t->class_dir, sizeof(t->class_dir), "%s/class-%s", g_dir, t->label);
	make_dir(t->class_dir);
	for (size_t i = 0; i < t->n; i++) {
		if (pytest) {
			char *src = xasprintf("%s/submissions/%s", cfg.example, kinds[i % nk]);
			read_subdir(src, &t->subs[i]);
			free(src);
			t->names[i] = xasprintf("s%03zu-%s", i, kinds[i % nk]);
		} else {
			struct member *m = &t->subs[i].m[0];
			t->subs[i].n = 1;
			snprintf(m->name, sizeof(m->name), "answer.txt");
			m->data = strdup(i % 5 == 4 ? "41\n" : "42\n"); /* some wrong */
			m->len = 3;
			t->names[i] = xasprintf("t%03zu", i);
		}
		char *dst = xasprintf("%s/%s", t->class_dir, t->names[i]);
		copy_subdir(&t->subs[i], dst);
		free(dst);
	}
}

static void free_set(struct tp_set *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free_subdir(&t->subs[i]);
		free(t->names[i]);
	}
	free(t->subs);
	free(t->names);
}

static void bench_throughput(const char *db, struct tp_set *sets, size_t nsets)
{
	char token[256];
	struct server s;
	struct client cl;

	admin_token(db, token, sizeof(token));
	for (size_t k = 0; k < nsets; k++)
		sets[k].aid = admin_assignment(db, sets[k].assignment);
	serve_start(db, 0, "throughput", &s);
	client_init(&cl, s.port, token);
	/* Warm-up, unrecorded: the worker unpacks each assignment into the
	 * state directory once, and both sides read the same files. */
	for (size_t k = 0; k < nsets; k++) {
		struct tp_set w = sets[k];
		w.n = w.n < 2 ? w.n : 2;
		char label[64];
		snprintf(label, sizeof(label), "%s-warm", sets[k].label);
		w.label = label;
		snprintf(w.class_dir, sizeof(w.class_dir), "%s/class-%s", g_dir, label);
		make_dir(w.class_dir);
		for (size_t i = 0; i < w.n; i++) {
			char *dst = xasprintf("%s/%s", w.class_dir, w.names[i]);
			copy_subdir(&w.subs[i], dst);
			free(dst);
		}
		run_class(&w, 1, 0);
		run_service(&w, &cl, db, 1, 0);
	}
	for (size_t k = 0; k < nsets; k++) {
		struct tp_set *t = &sets[k];
		t->svc_failed = t->class_status_bad = 0;
		for (unsigned r = 0; r < cfg.rounds; r++)
			for (unsigned j = 1; j <= 2; j++) {
				/* Alternate which side goes first, round by round. */
				bool class_first = (r + j) % 2 == 0;
				note("%s, -j %u, round %u/%u", t->label, j, r + 1, cfg.rounds);
				if (class_first)
					t->class_s[j - 1][r] = run_class(t, j, r + 1);
				t->svc_s[j - 1][r] = run_service(t, &cl, db, j, r + 1);
				if (!class_first)
					t->class_s[j - 1][r] = run_class(t, j, r + 1);
			}
	}
	client_free(&cl);
	serve_stop(&s);
}

/* ---- the run ---------------------------------------------------------------- */

static void write_trivial(void)
{
	char *d = xasprintf("%s/trivial", g_dir), *c = xasprintf("%s/trivial/cases", g_dir);
	char *y = xasprintf("%s/assignment.yaml", d), *o = xasprintf("%s/one.out", c);
	make_dir(d);
	make_dir(c);
	write_text(y, "# The service bench's trivial assignment: one I/O case, `cat` of the\n"
		      "# submitted answer against one expected line.\n"
		      "name: bench-trivial\n"
		      "mode: io\n"
		      "submission:\n"
		      "  files: [answer.txt]\n"
		      "  required: [answer.txt]\n"
		      "io:\n"
		      "  run: [cat, answer.txt]\n"
		      "  cases:\n"
		      "    - {name: one, expected: cases/one.out, points: 1}\n");
	write_text(o, "42\n");
	free(d);
	free(c);
	free(y);
	free(o);
}

static void usage(void)
{
	fprintf(
	    stderr,
	    "usage: service_bench [--proctor PATH] [--example DIR] [--intake N] [--intake-seconds "
	    "S]\n"
	    "                     [--clients N] [--samples N] [--copies N] [--trivial N] "
	    "[--rounds N]\n"
	    "                     [--phases intake,latency,throughput] [--intake-only] "
	    "[--poll-ms MS]\n"
	    "                     [--no-postgresql] [--no-sqlite-intake]\n");
	exit(2);
}

static unsigned opt_uint(const char *v, unsigned lo, unsigned hi)
{
	char *end;
	unsigned long n = v ? strtoul(v, &end, 10) : 0;
	if (!v || !*v || *end || n < lo || n > hi)
		usage();
	return (unsigned)n;
}

/* A comma-separated list of intake, latency, throughput. */
static void parse_phases(const char *list)
{
	static const char *const names[3] = {"intake", "latency", "throughput"};
	char *copy = strdup(list), *save = NULL;

	memset(cfg.phase, 0, sizeof(cfg.phase));
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int k = 0;
		while (k < 3 && strcmp(t, names[k]) != 0)
			k++;
		if (k == 3)
			usage();
		cfg.phase[k] = true;
	}
	free(copy);
}

static void parse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--proctor") == 0 && v)
			cfg.proctor = argv[++i];
		else if (strcmp(a, "--example") == 0 && v)
			cfg.example = argv[++i];
		else if (strcmp(a, "--intake") == 0)
			cfg.intake_n = opt_uint(v, 100, 1000000), i++;
		else if (strcmp(a, "--intake-seconds") == 0)
			cfg.intake_s = opt_uint(v, 1, 600), i++;
		else if (strcmp(a, "--clients") == 0)
			cfg.clients = opt_uint(v, 1, 30), i++;
		else if (strcmp(a, "--samples") == 0)
			cfg.samples = opt_uint(v, 5, 10000), i++;
		else if (strcmp(a, "--copies") == 0)
			cfg.copies = opt_uint(v, 1, 1000), i++;
		else if (strcmp(a, "--trivial") == 0)
			cfg.trivial_n = opt_uint(v, 0, 10000), i++;
		else if (strcmp(a, "--rounds") == 0)
			cfg.rounds = opt_uint(v, 1, 16), i++;
		else if (strcmp(a, "--intake-only") == 0)
			cfg.phase[1] = cfg.phase[2] = false;
		else if (strcmp(a, "--phases") == 0 && v)
			parse_phases(argv[++i]);
		else if (strcmp(a, "--poll-ms") == 0)
			cfg.poll_ms = opt_uint(v, 1, 60000), i++;
		else if (strcmp(a, "--no-postgresql") == 0)
			cfg.no_pg = true;
		else if (strcmp(a, "--no-sqlite-intake") == 0)
			cfg.no_sqlite_intake = true;
		else
			usage();
	}
}

static const char *verdict(bool measured, bool pass)
{
	return !measured ? "n/a" : pass ? "PASS" : "MISS";
}

int main(int argc, char **argv)
{
	struct intake_res in[2] = {{0}, {0}};
	struct lat_res lat[2] = {{0}, {0}};
	struct tp_set sets[2] = {{.label = "python-pytest", .has_target = true},
				 {.label = "trivial"}};
	static const char *const bk[2] = {"sqlite", "postgresql"};
	struct pgtest *pg = NULL;
	char url[512], why[512], load0[64], load1[64], tgt[32];
	bool have_pg = false;

	parse(argc, argv);
	size_t nsets = cfg.trivial_n ? 2 : 1;
	if (access(cfg.proctor, X_OK) < 0)
		die("%s: not an executable (--proctor PATH)", cfg.proctor);
	if (geteuid() != 0 && (cfg.phase[1] || cfg.phase[2]))
		die("grading needs root (run as root, as the service would be)");
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	snprintf(g_dir, sizeof(g_dir), "/var/tmp/proctor-service-bench.XXXXXX");
	if (!mkdtemp(g_dir))
		die("mkdtemp: %s", strerror(errno));
	chmod(g_dir, 0755);
	snprintf(g_state, sizeof(g_state), "%s/state", g_dir);
	write_trivial();
	snprintf(sets[0].assignment, sizeof(sets[0].assignment), "%s", cfg.example);
	snprintf(sets[1].assignment, sizeof(sets[1].assignment), "%s/trivial", g_dir);
	loadavg(load0, sizeof(load0));
	note("working in %s; load average %s", g_dir, load0);
	if (!cfg.no_pg && (cfg.phase[0] || cfg.phase[1])) {
		if (pgtest_start(&pg, why, sizeof(why)) == 0)
			have_pg = true;
		else
			note("PostgreSQL skipped: %s", why);
	}

	if (cfg.phase[0]) {
		char *sq = xasprintf("sqlite:%s/intake.db", g_dir);
		if (!cfg.no_sqlite_intake) {
			note("intake, sqlite: %u submissions, %u clients", cfg.intake_n,
			     cfg.clients);
			bench_intake(sq, "intake-sqlite", &in[0]);
		}
		free(sq);
		if (have_pg &&
		    pgtest_createdb(pg, "intake", url, sizeof(url), why, sizeof(why)) == 0) {
			note("intake, postgresql: %u submissions, %u clients", cfg.intake_n,
			     cfg.clients);
			bench_intake(url, "intake-postgresql", &in[1]);
		}
	}
	if (cfg.phase[1]) {
		char *sq = xasprintf("sqlite:%s/latency.db", g_dir);
		note("latency, sqlite: %u samples", cfg.samples);
		bench_latency(sq, "latency-sqlite", &lat[0]);
		free(sq);
		if (have_pg &&
		    pgtest_createdb(pg, "latency", url, sizeof(url), why, sizeof(why)) == 0) {
			note("latency, postgresql: %u samples", cfg.samples);
			bench_latency(url, "latency-postgresql", &lat[1]);
		}
	}
	pgtest_stop(pg);
	if (cfg.phase[2]) {
		for (size_t k = 0; k < nsets; k++)
			make_set(&sets[k], k == 0);
		char *sq = xasprintf("sqlite:%s/throughput.db", g_dir);
		bench_throughput(sq, sets, nsets);
		free(sq);
	}
	loadavg(load1, sizeof(load1));

	/* ---- report ---- */
	printf("proctor service bench: %s; load average %s at the start, %s at the end\n",
	       cfg.proctor, load0, load1);
	if (cfg.phase[0]) {
		printf("\n1. durable intake: proctor serve --workers 0, %u client threads (one "
		       "keep-alive connection\n   each), small distinct .tar.gz submissions, 202 = "
		       "committed\n\n",
		       cfg.clients);
		printf("%-12s %8s %8s %8s %11s %11s %11s %15s\n", "backend", "sent", "accepted",
		       "seconds", "accepted/s", "client p50", "client p99", "server CPU/sub");
		for (int b = 0; b < 2; b++) {
			if (!in[b].measured)
				printf("%-12s %8s\n", bk[b], "n/a");
			else
				printf("%-12s %8u %8u %8.2f %11.0f %8.1f ms %8.1f ms %12.2f ms\n",
				       bk[b], in[b].sent, in[b].ok, in[b].secs, in[b].rate,
				       in[b].p50_ms, in[b].p99_ms, in[b].cpu_ms);
		}
	}
	if (cfg.phase[1]) {
		char how[64];
		if (cfg.poll_ms)
			snprintf(how, sizeof(how), "`worker -j 1 --poll-ms %u`", cfg.poll_ms);
		else
			snprintf(how, sizeof(how), "`serve --workers 1`");
		printf("\n2. submit to result, one at a time, trivial assignment, idle %s\n"
		       "   (%u samples each; times recorded by the service except the last "
		       "line)\n\n",
		       how, cfg.samples);
		printf("%-40s %9s %9s %9s %9s\n", "ms", "sqlite", "", "postgres", "");
		printf("%-40s %9s %9s %9s %9s\n", "", "p50", "p99", "p50", "p99");
		for (int c = 0; c < L_COLS; c++) {
			printf("%-40s", lat_names[c]);
			for (int b = 0; b < 2; b++)
				if (lat[b].measured && lat[b].n)
					printf(" %9.1f %9.1f", lat[b].p50[c], lat[b].p99[c]);
				else
					printf(" %9s %9s", "n/a", "n/a");
			printf("\n");
		}
		if (lat[0].failed || lat[1].failed)
			printf("not graded: sqlite %u, postgresql %u (left out)\n", lat[0].failed,
			       lat[1].failed);
	}
	if (cfg.phase[2]) {
		printf("\n3. class throughput: proctor class -j N against proctor worker -j N "
		       "--exit-when-idle\n   (sqlite store, submitted beforehand), wall seconds "
		       "spawn to exit, median of %u round%s\n\n",
		       cfg.rounds, cfg.rounds == 1 ? "" : "s");
		printf("%-26s %3s %9s %9s %14s\n", "submissions", "N", "class s", "service s",
		       "service/class");
		for (size_t k = 0; k < nsets; k++)
			for (int j = 0; j < 2; j++) {
				double c = median(sets[k].class_s[j], cfg.rounds),
				       sv = median(sets[k].svc_s[j], cfg.rounds);
				char label[64];
				snprintf(label, sizeof(label), "%s x%zu", sets[k].label, sets[k].n);
				printf("%-26s %3d %9.2f %9.2f %14.3f\n", label, j + 1, c, sv,
				       sv / c);
			}
		for (size_t k = 0; k < nsets; k++)
			printf("%s: last score sums: class %.1f, service %.1f%s%s\n", sets[k].label,
			       sets[k].class_score, sets[k].svc_score,
			       sets[k].svc_failed ? "; SERVICE JOBS WITHOUT A RESULT" : "",
			       sets[k].class_status_bad ? "; CLASS EXITED NON-ZERO" : "");
	}

	printf("\n%-58s %10s %10s %6s\n", "summary", "measured", "target", "");
	if (cfg.phase[0]) {
		snprintf(tgt, sizeof(tgt), ">= %.0f", TARGET_INTAKE);
		for (int b = 0; b < 2; b++) {
			char label[80];
			snprintf(label, sizeof(label), "intake %s, accepted submissions/s", bk[b]);
			printf("%-58s %10.0f %10s %6s\n", label, in[b].measured ? in[b].rate : NAN,
			       tgt, verdict(in[b].measured, in[b].rate >= TARGET_INTAKE));
		}
	}
	if (cfg.phase[1]) {
		snprintf(tgt, sizeof(tgt), "<= %.0f", TARGET_QUEUE_MS);
		for (int b = 0; b < 2; b++) {
			char label[80];
			bool m = lat[b].measured && lat[b].n > 0;
			double v = m ? lat[b].p50[L_TO_SANDBOX] : NAN;
			snprintf(label, sizeof(label),
				 "queue overhead p50 %s, accepted->sandbox, ms", bk[b]);
			printf("%-58s %10.1f %10s %6s\n", label, v, tgt,
			       verdict(m, v <= TARGET_QUEUE_MS));
		}
	}
	if (cfg.phase[2]) {
		snprintf(tgt, sizeof(tgt), "<= %.2f", TARGET_THROUGHPUT);
		for (size_t k = 0; k < nsets; k++)
			for (int j = 0; j < 2; j++) {
				char label[80];
				double ratio = median(sets[k].svc_s[j], cfg.rounds) /
					       median(sets[k].class_s[j], cfg.rounds);
				bool ok = sets[k].svc_failed == 0;
				snprintf(label, sizeof(label),
					 "service/class time, %s x%zu, %d worker%s", sets[k].label,
					 sets[k].n, j + 1, j ? "s" : "");
				printf("%-58s %10.3f %10s %6s\n", label, ratio,
				       sets[k].has_target ? tgt : "(none)",
				       sets[k].has_target ? verdict(ok, ratio <= TARGET_THROUGHPUT)
							  : "");
			}
		for (size_t k = 0; k < nsets; k++)
			free_set(&sets[k]);
	}
	if (getenv("SERVICE_BENCH_KEEP")) {
		note("kept %s", g_dir);
	} else {
		char *cmd = xasprintf("rm -rf -- '%s'", g_dir);
		if (system(cmd) != 0)
			note("could not remove %s", g_dir);
		free(cmd);
	}
	curl_global_cleanup();
	return 0;
}
