/* Integration tests: the grading service under crashes, on SQLite and PostgreSQL (issue 11). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "pgtest.h"
#include "service/http.h"
#include "store/store.h"
#include "storepeek.h"

/*
 * Real components only: `proctor serve` and `proctor worker` processes
 * started here, a real SQLite file and a real PostgreSQL (pgtest), HTTP on
 * loopback (libcurl), a callback receiver in this process.
 *
 * - The crash test: a burst of submissions over HTTP from a few client
 *   threads (each with an Idempotency-Key, retried with the same key on a
 *   connection error or a 5xx) while worker processes are SIGKILLed at
 *   random and replaced, and the server is SIGKILLed once mid-burst and
 *   started again on the same port and database.  Then: every
 *   acknowledged submission exists, is done, has exactly one result and
 *   one outbox row; no other submission exists; nothing is queued or
 *   running; every callback was delivered at least once (when the server
 *   delivers callbacks, see callbacks_wired()).  Each submission allows
 *   10 attempts: with the default 3, a job whose worker is killed three
 *   times in a row rightly ends as `error` (rare, but not never, at this
 *   kill rate), and "every one done" would be flaky.  The 1,000
 *   submissions take about a minute per database here (two cores, ASan);
 *   SERVICE_CRASH_N sets another burst, SERVICE_CRASH_SEED the chaos's
 *   random choices.
 * - A fenced worker: A claims a slow job and is SIGSTOPped past its lease;
 *   B claims it and records the result; A, resumed, records nothing.
 * - A job past its last attempt: an image pin that does not exist is
 *   Proctor's failure, retried, then `error`, not gradable, with a reason.
 * - Multi-host: three workers, each in its own network namespace (only its
 *   own loopback, so PostgreSQL is reached through its Unix socket) and
 *   UTS namespace (its own host name), with its own state directory; the
 *   attempts say which worker on which host graded each job.
 */

#define CRASH_N_DEFAULT 1000
#define LEASE_S		"3"
#define CLIENT_THREADS	4
#define CRASH_WORKERS	3
/* The flag that lets `proctor serve` call a loopback receiver: callbacks
 * are refused for non-public addresses by default (src/service/callback.h). */
#define CALLBACK_PRIVATE_FLAG "--callback-private"

static struct pgtest *pg;
static char pg_skip[256];
static int db_counter;
static uint64_t rng_state;

/* ---- small utilities ----------------------------------------------------- */

static uint64_t rnd(void)
{
	/* xorshift64*: reproducible from the seed printed at start. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static long rnd_between(long lo, long hi)
{
	return lo + (long)(rnd() % (uint64_t)(hi - lo + 1));
}

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

static void print_tail(const char *path, size_t bytes)
{
	size_t len = 0;
	char *text = harness_slurp(path, 1u << 24, &len);

	if (!text)
		return;
	const char *from = len > bytes ? text + len - bytes : text;
	printf("---- %s (last %zu bytes) ----\n%s\n----\n", path, bytes, from);
	fflush(stdout);
	free(text);
}

static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static char *base64(const unsigned char *p, size_t n)
{
	static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	char *out = malloc((n + 2) / 3 * 4 + 1), *o = out;

	assert_non_null(out);
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) |
			     (i + 2 < n ? p[i + 2] : 0);
		*o++ = t[v >> 18 & 63];
		*o++ = t[v >> 12 & 63];
		*o++ = i + 1 < n ? t[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? t[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

static void mkdirs(const char *path)
{
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1;; p++) {
		if (*p && *p != '/')
			continue;
		char c = *p;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			fail_msg("mkdir %s: %s", buf, strerror(errno));
		*p = c;
		if (!c)
			break;
	}
}

/* Run a host command (not proctor) and require exit 0. */
static void run_cmd(const char *const *argv)
{
	pid_t pid = fork();
	int st;

	assert_true(pid >= 0);
	if (pid == 0) {
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("%s failed (status %d)", argv[0], st);
}

/* ---- processes started by a test ------------------------------------------ */

/* Every process a test started and has not reaped: the teardown kills
 * them (by pid) if the test failed half-way. */
#define MAX_PROCS 64
static pid_t procs[MAX_PROCS];

static void proc_add(pid_t pid)
{
	for (int i = 0; i < MAX_PROCS; i++)
		if (procs[i] == 0) {
			procs[i] = pid;
			return;
		}
	fail_msg("too many processes");
}

static void proc_forget(pid_t pid)
{
	for (int i = 0; i < MAX_PROCS; i++)
		if (procs[i] == pid)
			procs[i] = 0;
}

/* Reap `pid` if it ended: its status as harness_wait_child() gives it, or -1. */
static int proc_poll(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, WNOHANG) != pid)
		return -1;
	proc_forget(pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int proc_kill_wait(pid_t pid, int sig)
{
	int st;

	kill(pid, sig);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	proc_forget(pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Wait at most timeout_ms for `pid`: its status, or -1 (still running). */
static int proc_wait(pid_t pid, long long timeout_ms)
{
	long long deadline = harness_now_ms() + timeout_ms;

	for (;;) {
		int r = proc_poll(pid);
		if (r >= 0 || harness_now_ms() > deadline)
			return r;
		harness_sleep_ms(20);
	}
}

/*
 * Start `proctor args...` with stdout and stderr appended to `log`.  With
 * `host` the process gets network and UTS namespaces of its own first
 * (unshare, as `unshare --net --uts` would): only a loopback of its own,
 * which is down, and `host` as its host name: a simulated host.
 */
static pid_t spawn(const char *const *args, const char *log, const char *host)
{
	const char *argv[64];
	size_t n = 0;

	argv[n++] = harness_proctor();
	for (size_t i = 0; args[i]; i++) {
		assert_true(n < 62);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Async-signal-safe only: the test may have threads. */
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(126);
		if (host && (unshare(CLONE_NEWNET | CLONE_NEWUTS) < 0 ||
			     sethostname(host, strlen(host)) < 0))
			_exit(125);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	proc_add(pid);
	return pid;
}

/* ---- HTTP client ------------------------------------------------------------ */

struct reply {
	long status;
	char *body;
	size_t len;
};

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t take = sz * n;
	char *nb = realloc(r->body, r->len + take + 1);

	if (!nb)
		return 0;
	r->body = nb;
	memcpy(r->body + r->len, p, take);
	r->len += take;
	r->body[r->len] = '\0';
	return take;
}

static void reply_clear(struct reply *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* One request on handle `c` (reused: keep-alive); body NULL for GET. */
static CURLcode http_call(CURL *c, const char *method, const char *url, const char *token,
			  const char *idem_key, const char *body, long timeout_s, struct reply *r)
{
	struct curl_slist *h = NULL;
	char hdr[512];

	reply_clear(r);
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (token) {
		snprintf(hdr, sizeof(hdr), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, hdr);
	}
	if (idem_key) {
		snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", idem_key);
		h = curl_slist_append(h, hdr);
	}
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
		h = curl_slist_append(h, "Content-Type: application/json");
	}
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	CURLcode rc = curl_easy_perform(c);
	if (rc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(h);
	return rc;
}

/* GET `path` with a token; the answer as JSON (the test fails otherwise). */
static json_t *get_json(const char *base, const char *token, const char *path, long want)
{
	char url[512];
	struct reply r = {0};
	CURL *c = curl_easy_init();

	assert_non_null(c);
	snprintf(url, sizeof(url), "%s%s", base, path);
	CURLcode rc = http_call(c, "GET", url, token, NULL, NULL, 30, &r);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK)
		fail_msg("GET %s: %s", path, curl_easy_strerror(rc));
	if (r.status != want)
		fail_msg("GET %s: status %ld, want %ld: %s", path, r.status, want,
			 r.body ? r.body : "");
	json_t *doc = json_loads(r.body ? r.body : "", 0, NULL);
	if (!doc)
		fail_msg("GET %s: not JSON: %s", path, r.body ? r.body : "");
	reply_clear(&r);
	return doc;
}

/* ---- the callback receiver -------------------------------------------------- */

struct receiver {
	struct http_server *srv;
	char url[128];
	pthread_mutex_t lock;
	size_t posts;	 /* every POST received */
	size_t bad;	 /* POSTs that were not a delivery */
	char (*ids)[33]; /* distinct delivery ids */
	int64_t *subs;	 /* their submission ids */
	size_t n, cap;
};

static void receive(void *ctx, const struct http_request *rq, struct http_response *rs)
{
	struct receiver *r = ctx;
	json_t *doc = json_loads(rq->body, 0, NULL);
	const char *id = json_string_value(json_object_get(doc, "delivery_id"));
	json_t *sub = json_object_get(doc, "submission_id");

	pthread_mutex_lock(&r->lock);
	r->posts++;
	if (strcmp(rq->method, "POST") != 0 || !id || strlen(id) != 32 || !json_is_integer(sub)) {
		r->bad++;
	} else {
		/* Deduplicate by delivery id: a redelivery is acknowledged, not counted. */
		bool seen = false;
		for (size_t i = 0; i < r->n && !seen; i++)
			seen = strcmp(r->ids[i], id) == 0;
		if (!seen) {
			if (r->n == r->cap) {
				size_t ncap = r->cap ? r->cap * 2 : 256;
				r->ids = realloc(r->ids, ncap * sizeof(*r->ids));
				r->subs = realloc(r->subs, ncap * sizeof(*r->subs));
				r->cap = ncap;
			}
			if (r->ids && r->subs) {
				snprintf(r->ids[r->n], sizeof(r->ids[r->n]), "%s", id);
				r->subs[r->n] = json_integer_value(sub);
				r->n++;
			}
		}
	}
	pthread_mutex_unlock(&r->lock);
	json_decref(doc);
	http_json(rs, 200, strdup("{\"ok\":true}"));
}

/* The crash test's receiver: not on a stack, so that a delivery arriving
 * after a failed test finds it (the teardown stops it). */
static struct receiver receiver;

static void receiver_start(struct receiver *r)
{
	struct http_limits l;
	struct err e;

	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	http_limits_default(&l);
	l.max_body = 8u << 20;
	l.per_ip = 256;
	l.threads = 4;
	if (http_server_start("127.0.0.1:0", &l, NULL, receive, r, &r->srv, &e) < 0)
		fail_msg("callback receiver: %s", e.msg);
	snprintf(r->url, sizeof(r->url), "http://127.0.0.1:%u/hook",
		 (unsigned)http_server_port(r->srv));
}

static void receiver_stop(struct receiver *r)
{
	if (!r->srv)
		return;
	http_server_stop(r->srv);
	r->srv = NULL;
	free(r->ids);
	free(r->subs);
	pthread_mutex_destroy(&r->lock);
}

static size_t receiver_distinct(struct receiver *r)
{
	pthread_mutex_lock(&r->lock);
	size_t n = r->n;
	pthread_mutex_unlock(&r->lock);
	return n;
}

/* ---- one service under test ------------------------------------------------- */

struct svc {
	const char *db_kind; /* "sqlite" or "postgresql" */
	char *tmp;
	char db[PATH_MAX + 64];	       /* the URL server and workers use */
	char db_socket[PATH_MAX + 64]; /* postgresql: the same database through its socket */
	char state[PATH_MAX];
	char token[STORE_TOKEN_LEN + 1];
	int64_t course_id;
	int port;
	char base[64];
	pid_t server;
	int server_gen;
	bool callbacks;
	char secret_file[PATH_MAX];
	bool private_flag;
	struct store *st; /* the test's own connection, to check */
};

/* Whether `proctor serve` delivers callbacks to a loopback receiver: it
 * takes a secret file and lets private addresses be called.  (On a main
 * without the callback sender, --callback-secret-file alone is parsed but
 * nothing is sent.)  SERVICE_CRASH_CALLBACKS=1 forces the checks on, =0
 * off. */
static bool callbacks_wired(bool *ret_private_flag)
{
	static int known = -1;
	static bool private_flag;
	const char *force = getenv("SERVICE_CRASH_CALLBACKS");

	if (known < 0) {
		struct proc_out o;
		char *args[] = {"serve", "--help", NULL};
		harness_run(&o, NULL, 30, args);
		bool secret = strstr(o.out, "--callback-secret-file") != NULL;
		private_flag = strstr(o.out, CALLBACK_PRIVATE_FLAG) != NULL;
		known = secret && private_flag;
		proc_out_free(&o);
	}
	*ret_private_flag = private_flag;
	if (force && *force)
		return strcmp(force, "1") == 0;
	return known == 1;
}

/* The trivial assignment (I/O mode, image host, jail): `sh sol.sh` must
 * print 42.  `image` NULL: host. */
static void write_assignment(const char *dir, const char *name, const char *image)
{
	char yaml[1024], cases[PATH_MAX];

	snprintf(cases, sizeof(cases), "%s/cases", dir);
	mkdirs(cases);
	snprintf(yaml, sizeof(yaml),
		 "name: %s\n%s%s%smode: io\nsubmission:\n  files: [sol.sh]\n  required: "
		 "[sol.sh]\nio:\n  run: [/bin/sh, sol.sh]\n  limits: {cpu_s: 20, wall_s: 40}\n"
		 "  cases:\n    - {name: answer, expected: cases/answer.out}\n",
		 name, image ? "image: " : "", image ? image : "", image ? "\n" : "");
	harness_write_text(dir, "assignment.yaml", yaml);
	harness_write_text(dir, "cases/answer.out", "42\n");
}

/* A submission archive (tar of sol.sh) as base64. */
static char *submission_b64(const char *tmp, const char *tag, const char *script)
{
	char dir[PATH_MAX], tar[PATH_MAX];
	size_t len;

	snprintf(dir, sizeof(dir), "%s/sub-%s", tmp, tag);
	snprintf(tar, sizeof(tar), "%s/sub-%s.tar", tmp, tag);
	mkdirs(dir);
	harness_write_text(dir, "sol.sh", script);
	const char *argv[] = {"tar", "-C", dir, "-cf", tar, "sol.sh", NULL};
	run_cmd(argv);
	char *data = harness_read(tar, &len);
	char *b64 = base64((unsigned char *)data, len);
	free(data);
	return b64;
}

/* The service of the running test, for the teardown after a failure. */
static struct svc *current;

static void svc_init(struct svc *s, const char *db_kind)
{
	char why[512], name[64];
	struct err e;

	memset(s, 0, sizeof(*s));
	s->db_kind = db_kind;
	s->server = -1;
	bool sqlite = strcmp(db_kind, "sqlite") == 0;
	if (!sqlite && pg_skip[0]) {
		if (pgtest_must_work())
			fail_msg("PostgreSQL needed (PROCTOR_MUST_WORK=1): %s", pg_skip);
		skip();
	}
	s->tmp = harness_tmpdir();
	current = s;
	snprintf(s->state, sizeof(s->state), "%s/state", s->tmp);
	if (sqlite) {
		snprintf(s->db, sizeof(s->db), "sqlite:%s/service.db", s->tmp);
	} else {
		snprintf(name, sizeof(name), "svc%d", ++db_counter);
		if (pgtest_createdb(pg, name, s->db, sizeof(s->db), why, sizeof(why)) < 0)
			fail_msg("createdb: %s", why);
		assert_int_equal(pgtest_socket_url(pg, name, s->db_socket, sizeof(s->db_socket)),
				 0);
	}
	struct proc_out o;
	char *tok[] = {"admin", "token",   "--db",  s->db, "--course",
		       "crash", "--scope", "admin", NULL};
	harness_run(&o, NULL, 60, tok);
	if (o.exit_status != 0)
		fail_msg("admin token: exit %d: %s", o.exit_status, o.err);
	snprintf(s->token, sizeof(s->token), "%s", harness_trim(o.out));
	proc_out_free(&o);
	if (store_open(s->db, &s->st, &e) < 0)
		fail_msg("store_open %s: %s", s->db, e.msg);
	assert_int_equal(store_course_ensure(s->st, "crash", false, &s->course_id, &e), 0);
	s->port = free_port();
	snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%d", s->port);
}

/* Upload an assignment directory with `proctor admin assignment`: its id. */
static int64_t svc_assignment(struct svc *s, const char *name, const char *image)
{
	char dir[PATH_MAX];
	struct proc_out o;
	long id = 0;

	snprintf(dir, sizeof(dir), "%s/assignment-%s", s->tmp, name);
	write_assignment(dir, name, image);
	char *args[] = {"admin", "assignment", "--db", s->db, "--course", "crash", dir, NULL};
	harness_run(&o, NULL, 60, args);
	if (o.exit_status != 0 || !harness_parse_int(harness_trim(o.out), 1, LONG_MAX, &id))
		fail_msg("admin assignment: exit %d: %s %s", o.exit_status, o.out, o.err);
	proc_out_free(&o);
	return id;
}

/* Start `proctor serve` and wait for /healthz; false with the reason in
 * `why` (never fails the test: client threads may be running). */
static bool server_try_start(struct svc *s, char *why, size_t why_len)
{
	char listen[64], log[PATH_MAX + 32];
	const char *args[24];
	size_t n = 0;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", s->port);
	snprintf(log, sizeof(log), "%s/serve-%d.log", s->tmp, ++s->server_gen);
	args[n++] = "serve";
	args[n++] = "--listen";
	args[n++] = listen;
	args[n++] = "--db";
	args[n++] = s->db;
	args[n++] = "--workers";
	args[n++] = "0";
	args[n++] = "--state-dir";
	args[n++] = s->state;
	args[n++] = "--lease";
	args[n++] = LEASE_S;
	if (s->callbacks) {
		args[n++] = "--callback-secret-file";
		args[n++] = s->secret_file;
		if (s->private_flag)
			args[n++] = CALLBACK_PRIVATE_FLAG;
	}
	args[n] = NULL;
	s->server = spawn(args, log, NULL);

	/* Ready when /healthz answers; the port may still be in TIME_WAIT. */
	char url[128];
	struct reply r = {0};
	CURL *c = curl_easy_init();
	long long deadline = harness_now_ms() + 30000;
	snprintf(url, sizeof(url), "%s/healthz", s->base);
	for (;;) {
		if (http_call(c, "GET", url, NULL, NULL, NULL, 2, &r) == CURLE_OK &&
		    r.status == 200)
			break;
		int st = proc_poll(s->server);
		if (st >= 0 || harness_now_ms() > deadline) {
			curl_easy_cleanup(c);
			reply_clear(&r);
			print_tail(log, 4000);
			snprintf(why, why_len, "proctor serve did not answer /healthz (%s)",
				 st >= 0 ? "it exited" : "timeout");
			return false;
		}
		harness_sleep_ms(50);
	}
	reply_clear(&r);
	curl_easy_cleanup(c);
	return true;
}

static void server_start(struct svc *s)
{
	char why[256];

	if (!server_try_start(s, why, sizeof(why)))
		fail_msg("%s", why);
}

/* Start `proctor worker` named `name`: with `host`, in a simulated host of
 * its own (spawn()), grading from `db` with state directory `state`. */
static pid_t worker_start(struct svc *s, const char *name, const char *db, const char *state,
			  const char *host, const char *const *extra)
{
	char log[PATH_MAX + 64];
	const char *args[32] = {"worker",  "--db",	db,	  "-j", "1",
				"--lease", LEASE_S,	"--name", name, "--state-dir",
				state,	   "--backoff", "1",	  NULL};
	size_t n = 13;

	for (size_t i = 0; extra && extra[i]; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	snprintf(log, sizeof(log), "%s/worker-%s.log", s->tmp, name);
	return spawn(args, log, host);
}

static void worker_log(const struct svc *s, const char *name, char *path, size_t cap)
{
	snprintf(path, cap, "%s/worker-%s.log", s->tmp, name);
}

static void svc_done(struct svc *s, bool remove)
{
	if (s->server > 0 && proc_poll(s->server) < 0) {
		int st = proc_kill_wait(s->server, SIGTERM);
		if (st != 0)
			fail_msg("proctor serve exited %d after SIGTERM", st);
	}
	s->st = store_close(s->st);
	harness_assert_no_mount_below(s->state);
	if (remove)
		harness_rm_tree(s->tmp);
	free(s->tmp);
	s->tmp = NULL;
	current = NULL;
}

/* POST one submission; its id, or -1 with the reason in `why`.  Retries
 * (same key) on a connection error, a 5xx and a 429, until `deadline`. */
static int64_t submit(CURL *c, const struct svc *s, const char *key, const char *body,
		      const atomic_llong *deadline, unsigned *retries, bool *replayed, char *why,
		      size_t why_len)
{
	char url[128];
	struct reply r = {0};
	int64_t id = -1;

	snprintf(url, sizeof(url), "%s/v1/submissions", s->base);
	*replayed = false;
	for (;;) {
		CURLcode rc = http_call(c, "POST", url, s->token, key, body, 30, &r);
		if (rc == CURLE_OK && (r.status == 202 || r.status == 200)) {
			json_t *doc = json_loads(r.body ? r.body : "", 0, NULL);
			json_t *v = json_object_get(doc, "submission_id");
			if (json_is_integer(v)) {
				id = json_integer_value(v);
				*replayed = r.status == 200;
			} else {
				snprintf(why, why_len, "%s: status %ld without an id: %.300s", key,
					 r.status, r.body ? r.body : "");
			}
			json_decref(doc);
			break;
		}
		bool again = rc != CURLE_OK || r.status >= 500 || r.status == 429;
		if (!again || harness_now_ms() > atomic_load(deadline)) {
			snprintf(why, why_len, "%s: %s, status %ld: %.300s", key,
				 rc != CURLE_OK ? curl_easy_strerror(rc) : "answered", r.status,
				 r.body ? r.body : "");
			break;
		}
		(*retries)++;
		harness_sleep_ms(r.status == 429 ? 500 : 50);
	}
	reply_clear(&r);
	return id;
}

/* The job of a submission (the latest; a burst has one per submission). */
static struct store_submission_view view_of(struct svc *s, int64_t sub)
{
	struct store_submission_view v = {0};
	struct err e;

	if (store_submission_get(s->st, sub, &v, &e) < 0)
		fail_msg("submission %lld: %s", (long long)sub, e.msg);
	return v;
}

/* The course's jobs by state; false (n untouched) when the store did not
 * answer. */
static bool job_counts_try(struct svc *s, int64_t n[STORE_JOB_STATES])
{
	struct store_course_counts cc[8];
	size_t k = 0;
	struct err e;

	if (store_job_counts(s->st, cc, 8, &k, &e) < 0)
		return false;
	memset(n, 0, sizeof(int64_t) * STORE_JOB_STATES);
	for (size_t i = 0; i < k; i++)
		if (cc[i].course_id == s->course_id)
			memcpy(n, cc[i].n, sizeof(cc[i].n));
	return true;
}

static void job_counts(struct svc *s, int64_t n[STORE_JOB_STATES])
{
	if (!job_counts_try(s, n))
		fail_msg("the store's job counts cannot be read");
}

/* ---- the crash test --------------------------------------------------------- */

struct burst {
	struct svc *s;
	const char *b64;
	int64_t assignment;
	const char *callback_url;
	int n;
	char tag[16];
	int64_t *ids;
	atomic_int next;     /* the next submission index to send */
	atomic_int acked;    /* acknowledged */
	atomic_uint retries; /* requests sent again with the same key */
	atomic_uint replays; /* answered 200: the key had been committed before */
	atomic_int failed;
	atomic_llong deadline; /* the clients give up on a submission after it */
	pthread_mutex_t lock;
	char why[512];
};

static void *client(void *arg)
{
	struct burst *b = arg;
	CURL *c = curl_easy_init();
	size_t cap = strlen(b->b64) + 1024;
	char *body = malloc(cap), key[64], why[512];

	for (int i; c && body && (i = atomic_fetch_add(&b->next, 1)) < b->n;) {
		unsigned retries = 0;
		bool replayed;
		snprintf(key, sizeof(key), "crash-%s-%d", b->tag, i);
		snprintf(body, cap,
			 "{\"assignment\":%lld,\"student\":\"s%d\",\"attempts\":10%s%s%s,"
			 "\"archive\":\"%s\"}",
			 (long long)b->assignment, i, b->callback_url ? ",\"callback_url\":\"" : "",
			 b->callback_url ? b->callback_url : "", b->callback_url ? "\"" : "",
			 b->b64);
		int64_t id =
		    submit(c, b->s, key, body, &b->deadline, &retries, &replayed, why, sizeof(why));
		atomic_fetch_add(&b->retries, retries);
		if (id < 0) {
			pthread_mutex_lock(&b->lock);
			snprintf(b->why, sizeof(b->why), "%s", why);
			pthread_mutex_unlock(&b->lock);
			atomic_fetch_add(&b->failed, 1);
			continue;
		}
		b->ids[i] = id;
		if (replayed)
			atomic_fetch_add(&b->replays, 1);
		atomic_fetch_add(&b->acked, 1);
	}
	free(body);
	curl_easy_cleanup(c);
	return NULL;
}

/* Say why attempts failed on Proctor's side (the workers' logs). */
static void print_retried(const struct svc *s)
{
	char pattern[PATH_MAX];
	glob_t g;
	int shown = 0;

	snprintf(pattern, sizeof(pattern), "%s/worker-*.log", s->tmp);
	if (glob(pattern, 0, NULL, &g) != 0)
		return;
	for (size_t i = 0; i < g.gl_pathc && shown < 8; i++) {
		char *text = harness_slurp(g.gl_pathv[i], 1u << 22, NULL), *save = NULL;
		for (char *line = text ? strtok_r(text, "\n", &save) : NULL; line && shown < 8;
		     line = strtok_r(NULL, "\n", &save))
			if (strstr(line, "retried later")) {
				note("  %s", line);
				shown++;
			}
		free(text);
	}
	globfree(&g);
}

static int crash_n(void)
{
	long n = CRASH_N_DEFAULT;
	const char *env = getenv("SERVICE_CRASH_N");

	if (env && *env && !harness_parse_int(env, 1, 100000, &n))
		fail_msg("SERVICE_CRASH_N=%s: want a number of submissions", env);
	return (int)n;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

struct crash_worker {
	pid_t pid;
	char name[32];
};

static void crash_run(const char *db_kind)
{
	struct svc s;
	struct receiver *rcv = &receiver;
	struct burst b = {0};
	struct crash_worker w[CRASH_WORKERS];
	int gen = 0, kills = 0, restarts = 0, own_exits = 0;
	char why[1024] = "";
	pthread_t th[CLIENT_THREADS];

	svc_init(&s, db_kind);
	s.callbacks = callbacks_wired(&s.private_flag);
	if (s.callbacks) {
		snprintf(s.secret_file, sizeof(s.secret_file), "%s/secret", s.tmp);
		harness_write_text(NULL, s.secret_file, "crash-test-secret-0123456789abcdef\n");
	}
	receiver_start(rcv);
	int64_t assignment = svc_assignment(&s, "trivial", NULL);
	char *b64 = submission_b64(s.tmp, "ok", "echo 42\n");
	int n = crash_n();
	note("crash[%s]: %d submissions, %d client threads, %d workers (-j 1, --lease %s), "
	     "callbacks %s, seed %llu",
	     db_kind, n, CLIENT_THREADS, CRASH_WORKERS, LEASE_S,
	     s.callbacks ? "delivered and checked" : "recorded in the outbox only (not wired)",
	     (unsigned long long)rng_state);

	server_start(&s);
	long long t0 = harness_now_ms();
	for (int i = 0; i < CRASH_WORKERS; i++) {
		snprintf(w[i].name, sizeof(w[i].name), "w%d", ++gen);
		w[i].pid = worker_start(&s, w[i].name, s.db, s.state, NULL, NULL);
	}

	b.s = &s;
	b.b64 = b64;
	b.assignment = assignment;
	b.callback_url = rcv->url;
	b.n = n;
	snprintf(b.tag, sizeof(b.tag), "%s", db_kind);
	b.ids = calloc((size_t)n, sizeof(*b.ids));
	assert_non_null(b.ids);
	atomic_store(&b.deadline, t0 + 120000 + (long long)n * 200);
	pthread_mutex_init(&b.lock, NULL);
	for (int i = 0; i < CLIENT_THREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, client, &b), 0);

	/* The chaos: kill a random worker every 0.3 to 1.5 s while the burst
	 * is on and until 90% is done; restart the server once, mid-burst. */
	long long next_kill = t0 + rnd_between(300, 1500), burst_ms = -1, down_ms = 0;
	long long deadline = t0 + 180000 + (long long)n * 600, last_count = 0;
	int64_t cnt[STORE_JOB_STATES] = {0};
	for (;;) {
		long long now = harness_now_ms();
		int acked = atomic_load(&b.acked), settled = acked + atomic_load(&b.failed);
		if (burst_ms < 0 && settled == n)
			burst_ms = now - t0;
		if (!restarts && acked >= n / 2) {
			int st = proc_kill_wait(s.server, SIGKILL);
			long long t = harness_now_ms();
			restarts++;
			note("crash[%s]: server SIGKILLed (status %d) after %d acknowledged",
			     db_kind, st, acked);
			/* No fail_msg() while the client threads run: stop them first. */
			if (!server_try_start(&s, why, sizeof(why))) {
				atomic_store(&b.next, n);
				atomic_store(&b.deadline, 0);
				break;
			}
			down_ms = harness_now_ms() - t;
		}
		if (now - last_count >= 250 && job_counts_try(&s, cnt))
			last_count = now;
		bool chaos = settled < n || cnt[STORE_JOB_DONE] < (int64_t)n * 9 / 10;
		for (int i = 0; i < CRASH_WORKERS; i++) {
			int st = proc_poll(w[i].pid);
			if (st < 0)
				continue;
			/* A worker must not end by itself. */
			char log[PATH_MAX + 64];
			worker_log(&s, w[i].name, log, sizeof(log));
			print_tail(log, 3000);
			snprintf(why, sizeof(why), "worker %s ended by itself with status %d",
				 w[i].name, st);
			own_exits++;
			snprintf(w[i].name, sizeof(w[i].name), "w%d", ++gen);
			w[i].pid = worker_start(&s, w[i].name, s.db, s.state, NULL, NULL);
		}
		if (chaos && now >= next_kill) {
			int i = (int)(rnd() % CRASH_WORKERS);
			proc_kill_wait(w[i].pid, SIGKILL);
			kills++;
			snprintf(w[i].name, sizeof(w[i].name), "w%d", ++gen);
			w[i].pid = worker_start(&s, w[i].name, s.db, s.state, NULL, NULL);
			next_kill = now + rnd_between(300, 1500);
		}
		if (settled == n && cnt[STORE_JOB_DONE] + cnt[STORE_JOB_ERROR] >= acked &&
		    cnt[STORE_JOB_QUEUED] + cnt[STORE_JOB_RUNNING] == 0)
			break;
		if (now > deadline) {
			snprintf(
			    why, sizeof(why),
			    "not drained after %lld s: %d acknowledged, %d failed; jobs queued "
			    "%lld, running %lld, done %lld, error %lld",
			    (now - t0) / 1000, acked, atomic_load(&b.failed),
			    (long long)cnt[STORE_JOB_QUEUED], (long long)cnt[STORE_JOB_RUNNING],
			    (long long)cnt[STORE_JOB_DONE], (long long)cnt[STORE_JOB_ERROR]);
			atomic_store(&b.next, n); /* the clients stop */
			break;
		}
		harness_sleep_ms(50);
	}
	for (int i = 0; i < CLIENT_THREADS; i++)
		pthread_join(th[i], NULL);
	long long drained_ms = harness_now_ms() - t0;
	/* The workers left finish nothing more: SIGTERM, exit 0. */
	for (int i = 0; i < CRASH_WORKERS; i++) {
		kill(w[i].pid, SIGTERM);
		int st = proc_wait(w[i].pid, 60000);
		if (st != 0) {
			char log[PATH_MAX + 64];
			worker_log(&s, w[i].name, log, sizeof(log));
			print_tail(log, 3000);
			if (st < 0)
				proc_kill_wait(w[i].pid, SIGKILL);
			fail_msg("worker %s: status %d after SIGTERM, want 0", w[i].name, st);
		}
	}
	if (why[0]) {
		char log[PATH_MAX + 32];
		snprintf(log, sizeof(log), "%s/serve-%d.log", s.tmp, s.server_gen);
		print_tail(log, 3000);
		fail_msg("crash[%s]: %s (kept %s)", db_kind, why, s.tmp);
	}
	if (atomic_load(&b.failed))
		fail_msg("crash[%s]: %d submissions were never acknowledged; last: %s", db_kind,
			 atomic_load(&b.failed), b.why);

	/* None lost, none invented: the course holds exactly the acknowledged
	 * submissions, one per idempotency key. */
	int64_t *sorted = malloc((size_t)n * sizeof(*sorted)), *listed = NULL;
	size_t n_listed = 0;
	struct err e;
	memcpy(sorted, b.ids, (size_t)n * sizeof(*sorted));
	qsort(sorted, (size_t)n, sizeof(*sorted), cmp_i64);
	for (int i = 1; i < n; i++)
		if (sorted[i] == sorted[i - 1])
			fail_msg("two idempotency keys got submission %lld", (long long)sorted[i]);
	for (int64_t after = 0;;) {
		size_t got;
		listed = realloc(listed, (n_listed + 1000) * sizeof(*listed));
		assert_non_null(listed);
		assert_int_equal(store_submission_list(s.st, s.course_id, NULL, after,
						       listed + n_listed, 1000, &got, &e),
				 0);
		n_listed += got;
		if (got < 1000)
			break;
		after = listed[n_listed - 1];
	}
	if (n_listed != (size_t)n)
		fail_msg("crash[%s]: the course holds %zu submissions, %d were acknowledged",
			 db_kind, n_listed, n);
	qsort(listed, n_listed, sizeof(*listed), cmp_i64);
	assert_memory_equal(listed, sorted, (size_t)n * sizeof(*sorted));

	/* Each one done, exactly one result, one outbox row; count the attempts. */
	int64_t cnt_end[STORE_JOB_STATES];
	job_counts(&s, cnt_end);
	assert_int_equal(cnt_end[STORE_JOB_QUEUED], 0);
	assert_int_equal(cnt_end[STORE_JOB_RUNNING], 0);
	assert_int_equal(cnt_end[STORE_JOB_ERROR], 0);
	assert_int_equal(cnt_end[STORE_JOB_DONE], n);
	unsigned attempts = 0, regraded = 0, lost = 0, failed = 0, max_att = 0;
	for (int i = 0; i < n; i++) {
		struct store_submission_view v = view_of(&s, sorted[i]);
		struct store_attempt at[32];
		struct store_outbox_row ob[4];
		size_t n_at = 0, n_ob = 0, done = 0;
		int64_t results = -1;
		if (v.job.state != STORE_JOB_DONE || !v.has_result)
			fail_msg("submission %lld: state %s, result %d", (long long)sorted[i],
				 store_job_state_name(v.job.state), v.has_result);
		json_t *doc = json_loads(v.result.doc_json, 0, NULL);
		const char *status = json_string_value(json_object_get(doc, "status"));
		if (!status || strcmp(status, "graded") != 0 || v.result.score != 1.0)
			fail_msg("submission %lld: status %s, score %g", (long long)sorted[i],
				 status ? status : "(none)", v.result.score);
		json_decref(doc);
		assert_int_equal(store_result_count(s.st, sorted[i], &results, &e), 0);
		if (results != 1)
			fail_msg("submission %lld has %lld results", (long long)sorted[i],
				 (long long)results);
		assert_int_equal(store_job_attempts(s.st, v.job.job_id, at, 32, &n_at, &e), 0);
		for (size_t k = 0; k < n_at; k++) {
			if (strcmp(at[k].outcome, "done") == 0) {
				done++;
				if (at[k].attempt != v.job.attempt)
					fail_msg("job %lld: attempt %d is done, the job says %d",
						 (long long)v.job.job_id, at[k].attempt,
						 v.job.attempt);
			} else if (strcmp(at[k].outcome, "lease_expired") == 0) {
				lost++;
			} else if (strcmp(at[k].outcome, "failed") == 0) {
				failed++; /* Proctor's own failure, retried */
			} else if (strcmp(at[k].outcome, "released") != 0) {
				fail_msg("job %lld attempt %d: outcome %s", (long long)v.job.job_id,
					 at[k].attempt, at[k].outcome);
			}
		}
		if (done != 1)
			fail_msg("job %lld: %zu attempts done, want 1", (long long)v.job.job_id,
				 done);
		attempts += (unsigned)n_at;
		regraded += n_at > 1;
		max_att = n_at > max_att ? (unsigned)n_at : max_att;
		assert_int_equal(store_outbox_for_job(s.st, v.job.job_id, ob, 4, &n_ob, &e), 0);
		if (n_ob != 1)
			fail_msg("job %lld: %zu outbox rows, want 1", (long long)v.job.job_id,
				 n_ob);
		store_submission_view_clear(&v);
	}
	/* The API says the same: one result per submission. */
	for (int i = 0; i < n; i++) {
		char path[96];
		snprintf(path, sizeof(path), "/v1/submissions/%lld/results", (long long)sorted[i]);
		json_t *doc = get_json(s.base, s.token, path, 200);
		size_t k = json_array_size(json_object_get(doc, "results"));
		json_decref(doc);
		if (k != 1)
			fail_msg("%s: %zu results, want 1", path, k);
	}

	/* A key sent again after the restart answers the same submission, and
	 * adds nothing. */
	CURL *c = curl_easy_init();
	unsigned replay_checked = 0;
	for (int i = 0; i<n; i += n / 10> 0 ? n / 10 : 1) {
		char key[64], *body = malloc(strlen(b64) + 256);
		unsigned retries = 0;
		bool replayed = false;
		snprintf(key, sizeof(key), "crash-%s-%d", db_kind, i);
		sprintf(body, "{\"assignment\":%lld,\"student\":\"s%d\",\"archive\":\"%s\"}",
			(long long)assignment, i, b64);
		atomic_llong until = harness_now_ms() + 30000;
		int64_t id =
		    submit(c, &s, key, body, &until, &retries, &replayed, why, sizeof(why));
		free(body);
		if (id != b.ids[i] || !replayed)
			fail_msg("key %s sent again: submission %lld (replayed %d), first %lld",
				 key, (long long)id, replayed, (long long)b.ids[i]);
		replay_checked++;
	}
	curl_easy_cleanup(c);
	job_counts(&s, cnt_end);
	assert_int_equal(cnt_end[STORE_JOB_DONE], n);
	assert_int_equal(cnt_end[STORE_JOB_QUEUED] + cnt_end[STORE_JOB_RUNNING], 0);

	/* Every callback delivered at least once, deduplicated by delivery id. */
	size_t got = 0;
	if (s.callbacks) {
		long long until = harness_now_ms() + 180000;
		while ((got = receiver_distinct(rcv)) < (size_t)n && harness_now_ms() < until)
			harness_sleep_ms(100);
		pthread_mutex_lock(&rcv->lock);
		int64_t *subs = malloc(rcv->n * sizeof(*subs) + 1);
		memcpy(subs, rcv->subs, rcv->n * sizeof(*subs));
		size_t posts = rcv->posts, bad = rcv->bad, distinct = rcv->n;
		pthread_mutex_unlock(&rcv->lock);
		qsort(subs, distinct, sizeof(*subs), cmp_i64);
		if (bad)
			fail_msg("the receiver got %zu POSTs that are not deliveries", bad);
		if (distinct != (size_t)n)
			fail_msg("crash[%s]: %zu distinct deliveries, want %d (one per submission)",
				 db_kind, distinct, n);
		assert_memory_equal(subs, sorted, (size_t)n * sizeof(*sorted));
		free(subs);
		note("crash[%s]: callbacks: %zu POSTs, %zu distinct deliveries (%zu redelivered)",
		     db_kind, posts, distinct, posts - distinct);
	}
	note("crash[%s]: %d acknowledged (%u answered as replays of a committed key), %u client "
	     "retries; %d worker SIGKILLs, %d server restart (down %lld ms), %d workers ended by "
	     "themselves; %u keys sent again afterwards answered their first id",
	     db_kind, n, atomic_load(&b.replays), atomic_load(&b.retries), kills, restarts, down_ms,
	     own_exits, replay_checked);
	note("crash[%s]: %u attempts for %d jobs (%u graded more than once, at most %u attempts "
	     "for one; %u attempts lost their lease, %u failed on Proctor's side and were retried)",
	     db_kind, attempts, n, regraded, max_att, lost, failed);
	if (failed)
		print_retried(&s);
	note("crash[%s]: burst acknowledged in %.1f s, all graded in %.1f s, checked in %.1f s",
	     db_kind, (double)burst_ms / 1000, (double)drained_ms / 1000,
	     (double)(harness_now_ms() - t0) / 1000);
	free(sorted);
	free(listed);
	free(b.ids);
	free(b64);
	pthread_mutex_destroy(&b.lock);
	receiver_stop(rcv);
	svc_done(&s, true);
	harness_assert_clean();
}

static void test_crash_burst_sqlite(void **state)
{
	(void)state;
	harness_require_root("the service's workers");
	crash_run("sqlite");
}

static void test_crash_burst_postgresql(void **state)
{
	(void)state;
	harness_require_root("the service's workers");
	crash_run("postgresql");
}

/* ---- a fenced worker ---------------------------------------------------------- */

/* Wait until `cond` holds for job `job`, at most timeout_ms. */
static bool wait_job(struct svc *s, int64_t job, long long timeout_ms,
		     bool (*cond)(const struct store_job *j, const void *arg), const void *arg,
		     struct store_job *ret)
{
	long long deadline = harness_now_ms() + timeout_ms;
	struct err e;

	for (;;) {
		if (store_job_get(s->st, job, ret, &e) < 0)
			fail_msg("job %lld: %s", (long long)job, e.msg);
		if (cond(ret, arg))
			return true;
		if (harness_now_ms() > deadline)
			return false;
		harness_sleep_ms(50);
	}
}

static bool running_ready_by(const struct store_job *j, const void *arg)
{
	return j->state == STORE_JOB_RUNNING && strcmp(j->worker, arg) == 0 &&
	       j->sandbox_ready_ms > 0;
}

static bool finished(const struct store_job *j, const void *arg)
{
	(void)arg;
	return j->state == STORE_JOB_DONE || j->state == STORE_JOB_ERROR;
}

/* Submit over HTTP (one try after the server answered /healthz). */
static int64_t submit_one(struct svc *s, int64_t assignment, const char *b64, const char *key,
			  int attempts, int64_t *ret_job)
{
	CURL *c = curl_easy_init();
	char *body = malloc(strlen(b64) + 256), why[512];
	unsigned retries = 0;
	bool replayed;

	sprintf(body, "{\"assignment\":%lld,\"attempts\":%d,\"archive\":\"%s\"}",
		(long long)assignment, attempts, b64);
	atomic_llong until = harness_now_ms() + 30000;
	int64_t id = submit(c, s, key, body, &until, &retries, &replayed, why, sizeof(why));
	free(body);
	curl_easy_cleanup(c);
	if (id < 0)
		fail_msg("submit: %s", why);
	struct store_submission_view v = view_of(s, id);
	*ret_job = v.job.job_id;
	store_submission_view_clear(&v);
	return id;
}

static void fenced_run(const char *db_kind)
{
	struct svc s;
	struct store_job j;
	struct err e;
	char log_a[PATH_MAX + 64], log_b[PATH_MAX + 64];

	svc_init(&s, db_kind);
	int64_t assignment = svc_assignment(&s, "slow", NULL);
	/* Slow enough that B claims it while A's grading is still running. */
	char *b64 = submission_b64(s.tmp, "slow", "sleep 6\necho 42\n");
	server_start(&s);
	int64_t job, sub = submit_one(&s, assignment, b64, "fenced-1", 3, &job);
	free(b64);

	pid_t a = worker_start(&s, "A", s.db, s.state, NULL, NULL);
	worker_log(&s, "A", log_a, sizeof(log_a));
	worker_log(&s, "B", log_b, sizeof(log_b));
	if (!wait_job(&s, job, 60000, running_ready_by, "A", &j)) {
		print_tail(log_a, 3000);
		fail_msg("worker A did not start grading job %lld", (long long)job);
	}
	/* A pauses (its grading process does not) and stays paused past its lease. */
	assert_int_equal(kill(a, SIGSTOP), 0);
	long long stopped = harness_now_ms();
	pid_t b = worker_start(&s, "B", s.db, s.state, NULL, NULL);
	bool done = wait_job(&s, job, 90000, finished, NULL, &j);
	long long paused_ms = harness_now_ms() - stopped;
	if (!done || j.state != STORE_JOB_DONE || strcmp(j.worker, "B") != 0) {
		print_tail(log_b, 3000);
		fail_msg("job %lld: state %s by '%s', want done by B", (long long)job,
			 store_job_state_name(j.state), j.worker);
	}
	/* A's grading ended long ago; A resumes with its result in hand. */
	assert_int_equal(kill(a, SIGCONT), 0);
	long long until = harness_now_ms() + 20000;
	char *text = NULL;
	for (;;) {
		free(text);
		text = harness_slurp(log_a, 1u << 20, NULL);
		if ((text && strstr(text, "lease lost")) || harness_now_ms() > until)
			break;
		harness_sleep_ms(100);
	}
	if (!text || !strstr(text, "lease lost")) {
		print_tail(log_a, 3000);
		fail_msg("worker A did not report its lost lease after SIGCONT");
	}
	bool at_completion = strstr(text, "the result is dropped") != NULL;
	free(text);
	/* Give A the time to try anything else, then both stop cleanly. */
	harness_sleep_ms(1000);
	assert_int_equal(proc_kill_wait(a, SIGTERM), 0);
	assert_int_equal(proc_kill_wait(b, SIGTERM), 0);

	/* Exactly one result, B's: attempt 1 (A) lost its lease, attempt 2 (B) done. */
	int64_t results;
	struct store_attempt at[8];
	size_t n_at;
	assert_int_equal(store_result_count(s.st, sub, &results, &e), 0);
	assert_int_equal(results, 1);
	assert_int_equal(store_job_attempts(s.st, job, at, 8, &n_at, &e), 0);
	if (n_at != 2 || strcmp(at[0].worker, "A") != 0 || strcmp(at[1].worker, "B") != 0 ||
	    strcmp(at[0].outcome, "lease_expired") != 0 || strcmp(at[1].outcome, "done") != 0)
		fail_msg("attempts: %zu: [%s %s] [%s %s], want A lease_expired, B done", n_at,
			 n_at > 0 ? at[0].worker : "", n_at > 0 ? at[0].outcome : "",
			 n_at > 1 ? at[1].worker : "", n_at > 1 ? at[1].outcome : "");
	assert_int_equal(j.attempt, 2);
	/* B claimed only once A's lease (3 s, extended at sandbox start) had expired. */
	if (at[1].started_ms - at[0].started_ms < 3000)
		fail_msg("B claimed %lld ms after A: before A's lease expired",
			 (long long)(at[1].started_ms - at[0].started_ms));
	char path[96];
	snprintf(path, sizeof(path), "/v1/submissions/%lld/results", (long long)sub);
	json_t *doc = get_json(s.base, s.token, path, 200);
	assert_int_equal(json_array_size(json_object_get(doc, "results")), 1);
	json_decref(doc);
	note("fenced[%s]: A paused %.1f s; B claimed %.1f s after A and recorded the only result; "
	     "A, resumed, was fenced %s",
	     db_kind, (double)paused_ms / 1000,
	     (double)(at[1].started_ms - at[0].started_ms) / 1000,
	     at_completion ? "at completion (its result dropped)" : "at its next heartbeat");
	svc_done(&s, true);
	harness_assert_clean();
}

static void test_fenced_worker_sqlite(void **state)
{
	(void)state;
	harness_require_root("the service's workers");
	fenced_run("sqlite");
}

static void test_fenced_worker_postgresql(void **state)
{
	(void)state;
	harness_require_root("the service's workers");
	fenced_run("postgresql");
}

/* ---- past the last attempt ------------------------------------------------------ */

static void last_attempt_run(const char *db_kind)
{
	struct svc s;
	struct store_job j;
	struct err e;
	char log[PATH_MAX + 64];

	svc_init(&s, db_kind);
	/* An image pin no host has: Proctor's failure on every attempt. */
	int64_t assignment = svc_assignment(&s, "noimage", "nosuch-image@1");
	char *b64 = submission_b64(s.tmp, "ok", "echo 42\n");
	server_start(&s);
	int64_t job, sub = submit_one(&s, assignment, b64, "last-1", 2, &job);
	free(b64);
	const char *extra[] = {"--backoff", "0", "--exit-when-idle", NULL};
	pid_t w = worker_start(&s, "W", s.db, s.state, NULL, extra);
	worker_log(&s, "W", log, sizeof(log));
	int st = proc_wait(w, 120000);
	if (st != 0) {
		print_tail(log, 3000);
		if (st < 0)
			proc_kill_wait(w, SIGKILL);
		fail_msg("worker: status %d, want 0 (idle)", st);
	}
	assert_int_equal(store_job_get(s.st, job, &j, &e), 0);
	if (j.state != STORE_JOB_ERROR || !j.not_gradable || !j.error[0] || j.attempt != 2) {
		print_tail(log, 3000);
		fail_msg("job: state %s, not_gradable %d, attempt %d, error '%s'; want error, not "
			 "gradable, 2 attempts, a reason",
			 store_job_state_name(j.state), j.not_gradable, j.attempt, j.error);
	}
	if (!strstr(j.error, "nosuch-image"))
		fail_msg("the reason does not name the image: %s", j.error);
	struct store_attempt at[8];
	size_t n_at;
	int64_t results;
	assert_int_equal(store_job_attempts(s.st, job, at, 8, &n_at, &e), 0);
	assert_int_equal(n_at, 2);
	for (size_t i = 0; i < n_at; i++)
		assert_string_equal(at[i].outcome, "failed");
	assert_int_equal(store_result_count(s.st, sub, &results, &e), 0);
	assert_int_equal(results, 0);
	/* The API: status error with the reason, not gradable. */
	char path[64];
	snprintf(path, sizeof(path), "/v1/submissions/%lld", (long long)sub);
	json_t *doc = get_json(s.base, s.token, path, 200);
	json_t *svc = json_object_get(doc, "service");
	assert_string_equal(json_string_value(json_object_get(doc, "status")), "error");
	assert_non_null(strstr(json_string_value(json_object_get(doc, "reason")), "nosuch-image"));
	assert_string_equal(json_string_value(json_object_get(svc, "state")), "error");
	assert_true(json_is_true(json_object_get(svc, "not_gradable")));
	json_decref(doc);
	note("last attempt[%s]: error after %d attempts, not gradable: %s", db_kind, j.attempt,
	     j.error);
	svc_done(&s, true);
	harness_assert_clean();
}

static void test_last_attempt_ends_as_error_sqlite(void **state)
{
	(void)state;
	harness_require_root("the service's workers");
	last_attempt_run("sqlite");
}

static void test_last_attempt_ends_as_error_postgresql(void **state)
{
	(void)state;
	harness_require_root("the service's workers");
	last_attempt_run("postgresql");
}

/* ---- multi-host ------------------------------------------------------------------- */

#define HOSTS	3
#define MULTI_N 30

static void test_multi_host_postgresql(void **state)
{
	(void)state;
	struct svc s;
	struct err e;
	char host_state[HOSTS][PATH_MAX], host_name[HOSTS][32], worker_name[HOSTS][32];
	pid_t w[HOSTS];
	int64_t subs[MULTI_N], jobs[MULTI_N];
	int per[HOSTS] = {0};

	harness_require_root("the service's workers and network namespaces");
	svc_init(&s, "postgresql");
	int64_t assignment = svc_assignment(&s, "trivial", NULL);
	/* A little slow, so that all three hosts get some. */
	char *b64 = submission_b64(s.tmp, "ok", "sleep 0.3\necho 42\n");
	server_start(&s);
	for (int i = 0; i < MULTI_N; i++) {
		char key[32];
		snprintf(key, sizeof(key), "multi-%d", i);
		subs[i] = submit_one(&s, assignment, b64, key, 3, &jobs[i]);
	}
	free(b64);

	/* The namespace is real: from inside, PostgreSQL's loopback TCP port
	 * on this host is out of reach; only its socket file is not. */
	char probe_state[PATH_MAX], log[PATH_MAX + 64];
	snprintf(probe_state, sizeof(probe_state), "%s/host-probe", s.tmp);
	const char *idle[] = {"--exit-when-idle", NULL};
	pid_t probe = worker_start(&s, "probe", s.db, probe_state, "sim-probe", idle);
	int st = proc_wait(probe, 60000);
	worker_log(&s, "probe", log, sizeof(log));
	char *text = harness_slurp(log, 1u << 20, NULL);
	if (st != 3 || !text || !strstr(text, "--db")) {
		print_tail(log, 3000);
		if (st < 0)
			proc_kill_wait(probe, SIGKILL);
		fail_msg("a worker in its own network namespace reached PostgreSQL over TCP "
			 "(status %d)",
			 st);
	}
	free(text);

	for (int h = 0; h < HOSTS; h++) {
		snprintf(host_state[h], sizeof(host_state[h]), "%s/host-%d", s.tmp, h + 1);
		snprintf(host_name[h], sizeof(host_name[h]), "sim-host-%d", h + 1);
		snprintf(worker_name[h], sizeof(worker_name[h]), "worker-%d", h + 1);
		w[h] = worker_start(&s, worker_name[h], s.db_socket, host_state[h], host_name[h],
				    idle);
	}
	for (int h = 0; h < HOSTS; h++) {
		st = proc_wait(w[h], 180000);
		if (st != 0) {
			worker_log(&s, worker_name[h], log, sizeof(log));
			print_tail(log, 3000);
			if (st < 0)
				proc_kill_wait(w[h], SIGKILL);
			fail_msg("%s: status %d, want 0 (idle)", worker_name[h], st);
		}
	}
	/* Every job done once; its attempt names a worker and that worker's host. */
	for (int i = 0; i < MULTI_N; i++) {
		struct store_submission_view v = view_of(&s, subs[i]);
		struct store_attempt at[8];
		size_t n_at;
		if (v.job.state != STORE_JOB_DONE || !v.has_result || v.result.score != 1.0)
			fail_msg("submission %lld: %s, score %g", (long long)subs[i],
				 store_job_state_name(v.job.state), v.result.score);
		assert_int_equal(store_job_attempts(s.st, jobs[i], at, 8, &n_at, &e), 0);
		/* Nothing was killed here: one attempt each. */
		if (n_at != 1)
			fail_msg("job %lld: %zu attempts; the first: %s on %s, %s",
				 (long long)jobs[i], n_at, at[0].worker, at[0].host, at[0].outcome);
		int h = 0;
		while (h < HOSTS && strcmp(at[0].worker, worker_name[h]) != 0)
			h++;
		if (h == HOSTS || strcmp(at[0].host, host_name[h]) != 0 ||
		    strcmp(v.job.host, host_name[h]) != 0)
			fail_msg("job %lld: graded by '%s' on '%s'", (long long)jobs[i],
				 at[0].worker, at[0].host);
		per[h]++;
		store_submission_view_clear(&v);
	}
	/* Through the API too: the attempts name the worker and host. */
	char path[64];
	snprintf(path, sizeof(path), "/v1/submissions/%lld", (long long)subs[0]);
	json_t *doc = get_json(s.base, s.token, path, 200);
	json_t *at0 =
	    json_array_get(json_object_get(json_object_get(doc, "service"), "attempts"), 0);
	const char *api_host = json_string_value(json_object_get(at0, "host"));
	assert_non_null(api_host);
	assert_non_null(strstr(api_host, "sim-host-"));
	json_decref(doc);
	for (int h = 0; h < HOSTS; h++) {
		char dir[PATH_MAX + 32];
		struct stat sb;
		if (per[h] == 0)
			fail_msg("%s on %s graded nothing (%d, %d, %d)", worker_name[h],
				 host_name[h], per[0], per[1], per[2]);
		/* Each host unpacked the assignment into its own state directory. */
		snprintf(dir, sizeof(dir), "%s/service/assignments", host_state[h]);
		if (stat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode))
			fail_msg("%s has no assignments of its own", host_state[h]);
		harness_assert_no_mount_below(host_state[h]);
	}
	note("multi-host: %d jobs graded by %s/%s: %d, %s/%s: %d, %s/%s: %d", MULTI_N,
	     worker_name[0], host_name[0], per[0], worker_name[1], host_name[1], per[1],
	     worker_name[2], host_name[2], per[2]);
	svc_done(&s, true);
	harness_assert_clean();
}

static int teardown_procs(void **state)
{
	(void)state;
	for (int i = 0; i < MAX_PROCS; i++)
		if (procs[i] > 0) {
			kill(procs[i], SIGCONT);
			proc_kill_wait(procs[i], SIGKILL);
		}
	receiver_stop(&receiver);
	if (current) {
		/* A failed test: its files are kept for a look. */
		printf("# kept %s\n", current->tmp);
		current->st = store_close(current->st);
		free(current->tmp);
		current = NULL;
	}
	return 0;
}

/* ---- main ------------------------------------------------------------------------- */

static int setup(void **state)
{
	(void)state;
	const char *seed = getenv("SERVICE_CRASH_SEED");

	rng_state = seed && *seed ? strtoull(seed, NULL, 10) : (uint64_t)harness_now_ms();
	if (!rng_state)
		rng_state = 1;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (geteuid() != 0) {
		snprintf(pg_skip, sizeof(pg_skip), "not root");
		return 0;
	}
	int rc = pgtest_start(&pg, pg_skip, sizeof(pg_skip));
	if (rc < 0) {
		fprintf(stderr, "PostgreSQL: %s\n", pg_skip);
		return -1;
	}
	if (rc == 0)
		pg_skip[0] = '\0';
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pgtest_stop(pg);
	pg = NULL;
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest all[] = {
	    cmocka_unit_test_teardown(test_crash_burst_sqlite, teardown_procs),
	    cmocka_unit_test_teardown(test_crash_burst_postgresql, teardown_procs),
	    cmocka_unit_test_teardown(test_fenced_worker_sqlite, teardown_procs),
	    cmocka_unit_test_teardown(test_fenced_worker_postgresql, teardown_procs),
	    cmocka_unit_test_teardown(test_last_attempt_ends_as_error_sqlite, teardown_procs),
	    cmocka_unit_test_teardown(test_last_attempt_ends_as_error_postgresql, teardown_procs),
	    cmocka_unit_test_teardown(test_multi_host_postgresql, teardown_procs),
	};
	const char *only = getenv("SERVICE_CRASH_ONLY");
	/* SERVICE_CRASH_ONLY=crash: only the two crash tests (e.g. a bigger SERVICE_CRASH_N). */
	size_t n = only && strcmp(only, "crash") == 0 ? 2 : sizeof(all) / sizeof(all[0]);
	return _cmocka_run_group_tests("test_service_crash", all, n, setup, teardown);
}
