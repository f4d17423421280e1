/* Integration tests: the grading service's API over real HTTP against a real `proctor serve`,
 * on SQLite and on PostgreSQL, and checked against docs/openapi.yaml. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <archive.h>
#include <archive_entry.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <libfyaml.h>
#include <limits.h>
#include <netinet/in.h>
#include <nettle/base64.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "pgtest.h"
#include "service/pack.h"

/*
 * Each group (SQLite, then PostgreSQL) starts two real servers on loopback
 * with ports they pick themselves (`--listen 127.0.0.1:0`, the port read
 * from their "listening on" line):
 *
 *   main     --workers 2, courses A (cs101) and B (other): the graded flows
 *   pending  --workers 0 --queue-bound 1 on a database of its own: a
 *            submission that stays queued (429, `proctor results` exit 4)
 *
 * Both run with --max-upload 1 (MiB) so that oversized uploads are cheap
 * to send.  Tokens and a first assignment come from `proctor admin`, as an
 * operator's would; everything else goes through the API with libcurl.
 * What several tests need (a graded submission, a pending one) is made on
 * first use and kept for the group.  The last tests check the server
 * against docs/openapi.yaml (routes both ways, and every status code the
 * tests saw is declared for its operation), then stop both servers with
 * SIGTERM (exit 0, which under ASan also means no leak) and check that no
 * sandbox is left.  Only processes this suite started are ever signalled,
 * by pid.
 */

#define MAX_UPLOAD_MB 1
#define GRADE_WAIT_S  90

/* ---- the servers, courses and fixtures of a group -------------------------------- */

struct server {
	pid_t pid;
	char base[64];
	char out[PATH_MAX], err[PATH_MAX];
};

struct course {
	char name[32];
	char admin[128], instructor[128], submit[128];
	long long assignment; /* examples/python-pytest, uploaded with proctor admin */
};

struct env {
	const char *name;
	char skip[256];
	struct pgtest *pg;
	char *tmp;
	bool started, broken;
	char url[512], pending_url[512];
	struct server main, pending;
	struct course a, b, p;
	/* made on first use */
	long long api_assignment, api_version;
	long long graded;      /* a submission of course A graded 10/10 */
	json_t *graded_doc;    /* its document, instructor's view */
	long long pending_sub; /* a submission on the pending server */
};

static struct env sqlite_env = {.name = "sqlite"};
static struct env pg_env = {.name = "postgresql"};

/* ---- docs/openapi.yaml -------------------------------------------------------- */

struct op {
	char method[8];
	char path[96];
	bool open; /* security: [] */
	json_t *responses;
};

static struct op ops[64];
static size_t n_ops;
static json_t *spec;

/* Status codes the tests saw, per operation. */
struct seen {
	const struct op *op;
	long status;
};
static struct seen seen[512];
static size_t n_seen;

static bool segment_match(const char *tmpl, const char *path)
{
	for (;;) {
		size_t tl = strcspn(tmpl, "/"), pl = strcspn(path, "/");
		if (tmpl[0] == '{') {
			/* Every parameter of the API's paths is an id: digits. */
			if (pl == 0 || strspn(path, "0123456789") != pl)
				return false;
		} else if (tl != pl || strncmp(tmpl, path, tl) != 0) {
			return false;
		}
		tmpl += tl;
		path += pl;
		if (!*tmpl || !*path)
			return !*tmpl && !*path;
		tmpl++;
		path++;
	}
}

/* The operation of the spec that `method path` (no query) is, or NULL. */
static const struct op *spec_op(const char *method, const char *path)
{
	for (size_t i = 0; i < n_ops; i++)
		if (strcmp(ops[i].method, method) == 0 && segment_match(ops[i].path, path))
			return &ops[i];
	return NULL;
}

/* Outside a test: print and exit (cmocka's asserts need a test). */
static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("test_service: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void load_spec(void)
{
	static const char *const methods[] = {"get",   "put",  "post",	 "delete",
					      "patch", "head", "options"};
	const char *path = DOCS_DIR "/openapi.yaml";
	struct fy_document *fyd = fy_document_build_from_file(NULL, path);

	if (!fyd)
		die("%s does not parse as YAML", path);
	char *text = fy_emit_document_to_string(fyd, FYECF_MODE_JSON | FYECF_WIDTH_INF);
	fy_document_destroy(fyd);
	if (!text)
		die("%s: cannot emit it as JSON", path);
	json_error_t je;
	spec = json_loads(text, 0, &je);
	free(text);
	if (!spec)
		die("%s as JSON: %s", path, je.text);
	const char *version = json_string_value(json_object_get(spec, "openapi"));
	if (!version || strncmp(version, "3.0.", 4) != 0)
		die("%s: openapi is '%s', expected 3.0.x", path, version ? version : "");
	json_t *paths = json_object_get(spec, "paths"), *item;
	const char *p;
	if (!json_is_object(paths))
		die("%s: no paths", path);
	json_object_foreach(paths, p, item)
	{
		for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
			json_t *op = json_object_get(item, methods[m]);
			if (!op)
				continue;
			if (n_ops == sizeof(ops) / sizeof(ops[0]))
				die("%s: more than %zu operations", path, n_ops);
			struct op *o = &ops[n_ops++];
			for (size_t k = 0; methods[m][k]; k++)
				o->method[k] = (char)(methods[m][k] - 'a' + 'A');
			snprintf(o->path, sizeof(o->path), "%s", p);
			json_t *sec = json_object_get(op, "security");
			o->open = json_is_array(sec) && json_array_size(sec) == 0;
			o->responses = json_object_get(op, "responses");
			if (!json_is_object(o->responses) || json_object_size(o->responses) == 0)
				die("%s %s: no responses", o->method, o->path);
		}
	}
	if (!json_is_array(json_object_get(spec, "security")) ||
	    !json_object_get(
		json_object_get(json_object_get(spec, "components"), "securitySchemes"), "bearer"))
		die("%s: no bearer security scheme applied by default", path);
}

/* ---- a client ----------------------------------------------------------------- */

struct reply {
	long status;
	char *body;
	size_t len;
	char retry_after[32];
	char content_type[128];
	json_t *json;
};

static void reply_free(struct reply *r)
{
	free(r->body);
	if (r->json)
		json_decref(r->json);
	memset(r, 0, sizeof(*r));
}

static size_t on_body(char *p, size_t sz, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t k = sz * n;
	char *nb = realloc(r->body, r->len + k + 1);

	if (!nb)
		return 0;
	memcpy(nb + r->len, p, k);
	r->body = nb;
	r->len += k;
	r->body[r->len] = '\0';
	return k;
}

static size_t on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = sz * n;

	if (len > 13 && strncasecmp(p, "Retry-After: ", 13) == 0)
		snprintf(r->retry_after, sizeof(r->retry_after), "%.*s",
			 (int)strcspn(p + 13, "\r\n"), p + 13);
	if (len > 14 && strncasecmp(p, "Content-Type: ", 14) == 0)
		snprintf(r->content_type, sizeof(r->content_type), "%.*s",
			 (int)strcspn(p + 14, "\r\n"), p + 14);
	return len;
}

static void note_status(const char *method, const char *path, long status)
{
	char bare[512];

	snprintf(bare, sizeof(bare), "%.*s", (int)strcspn(path, "?"), path);
	const struct op *o = spec_op(method, bare);
	if (!o)
		return;
	for (size_t i = 0; i < n_seen; i++)
		if (seen[i].op == o && seen[i].status == status)
			return;
	if (n_seen < sizeof(seen) / sizeof(seen[0]))
		seen[n_seen++] = (struct seen){o, status};
}

/*
 * One request: `token` NULL sends no Authorization; `body` NULL sends none;
 * `headers` (NULL-terminated, may be NULL) are added.  The answer is parsed
 * as JSON when it is JSON; its status is noted for the spec check.
 */
static void call(const struct server *s, const char *method, const char *path, const char *token,
		 const char *body, const char *const *headers, struct reply *r)
{
	char url[8192], auth[300];
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;

	memset(r, 0, sizeof(*r));
	assert_non_null(c);
	snprintf(url, sizeof(url), "%s%s", s->base, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 120L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (token) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	for (size_t i = 0; headers && headers[i]; i++)
		h = curl_slist_append(h, headers[i]);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
		h = curl_slist_append(h, "Content-Type: application/json");
	}
	h = curl_slist_append(h, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	CURLcode rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (rc != CURLE_OK)
		fail_msg("%s %s: %s", method, url, curl_easy_strerror(rc));
	if (r->body)
		r->json = json_loads(r->body, 0, NULL);
	note_status(method, path, r->status);
}

/* The member at a dotted path ("service.times.started_ms"), or NULL. */
static json_t *at(const json_t *doc, const char *dotted)
{
	char key[128];
	json_t *v = (json_t *)doc;

	while (v && *dotted) {
		size_t n = strcspn(dotted, ".");
		snprintf(key, sizeof(key), "%.*s", (int)n, dotted);
		v = json_object_get(v, key);
		dotted += n + (dotted[n] == '.');
	}
	return v;
}

static long long int_at(const struct reply *r, const char *dotted)
{
	json_t *v = at(r->json, dotted);
	if (!json_is_integer(v))
		fail_msg("'%s' is not an integer in: %.2000s", dotted, r->body ? r->body : "");
	return (long long)json_integer_value(v);
}

static const char *str_at(const struct reply *r, const char *dotted)
{
	json_t *v = at(r->json, dotted);
	if (!json_is_string(v))
		fail_msg("'%s' is not a string in: %.2000s", dotted, r->body ? r->body : "");
	return json_string_value(v);
}

static void expect_status(const struct reply *r, long status)
{
	if (r->status != status)
		fail_msg("status %ld, want %ld: %.2000s", r->status, status,
			 r->body ? r->body : "");
	if (!r->json)
		fail_msg("status %ld with a body that is not JSON: %.2000s", r->status,
			 r->body ? r->body : "");
}

static void expect_error(const struct reply *r, long status, const char *code)
{
	expect_status(r, status);
	const char *got = json_string_value(at(r->json, "error.code"));
	if (!got || strcmp(got, code) != 0)
		fail_msg("error code %s, want %s: %s", got ? got : "(none)", code, r->body);
	if (!json_is_string(at(r->json, "error.message")))
		fail_msg("an error without a message: %s", r->body);
}

/* Whether the answer is the server's "no such route" (not a missing resource). */
static bool no_route(const struct reply *r)
{
	const char *msg = json_string_value(at(r->json, "error.message"));
	return r->status == 404 && msg && strncmp(msg, "no route", 8) == 0;
}

/* ---- archives ----------------------------------------------------------------- */

static char *base64_of(const void *data, size_t len)
{
	char *out = malloc(BASE64_ENCODE_RAW_LENGTH(len) + 1);

	assert_non_null(out);
	base64_encode_raw(out, len, data);
	out[BASE64_ENCODE_RAW_LENGTH(len)] = '\0';
	return out;
}

/* The base64 of what `proctor submit` uploads for a directory. */
static char *packed(const char *dir)
{
	void *data = NULL;
	size_t len = 0;
	struct err e;

	if (pack_path(dir, 64u << 20, &data, &len, &e) < 0)
		fail_msg("pack %s: %s", dir, e.msg);
	char *b64 = base64_of(data, len);
	free(data);
	return b64;
}

/* A zip with a correct solution.py and 100 MiB of zeros deflated to ~100 KiB. */
static char *zip_bomb(void)
{
	size_t cap = 4u << 20, used = 0, sol_len = 0;
	void *buf = malloc(cap), *zeros = calloc(1, 1u << 20);
	char *solution =
	    harness_read(EXAMPLES_DIR "/python-pytest/submissions/correct/solution.py", &sol_len);
	struct archive *a = archive_write_new();
	struct archive_entry *en = archive_entry_new();

	assert_non_null(buf);
	assert_non_null(zeros);
	assert_int_equal(archive_write_set_format_zip(a), ARCHIVE_OK);
	assert_int_equal(archive_write_open_memory(a, buf, cap, &used), ARCHIVE_OK);
	archive_entry_set_pathname(en, "solution.py");
	archive_entry_set_filetype(en, AE_IFREG);
	archive_entry_set_perm(en, 0644);
	archive_entry_set_size(en, (la_int64_t)sol_len);
	assert_int_equal(archive_write_header(a, en), ARCHIVE_OK);
	assert_int_equal(archive_write_data(a, solution, sol_len), (la_ssize_t)sol_len);
	archive_entry_clear(en);
	archive_entry_set_pathname(en, "data/zeros.bin");
	archive_entry_set_filetype(en, AE_IFREG);
	archive_entry_set_perm(en, 0644);
	archive_entry_set_size(en, (la_int64_t)100 << 20);
	assert_int_equal(archive_write_header(a, en), ARCHIVE_OK);
	for (int i = 0; i < 100; i++)
		assert_int_equal(archive_write_data(a, zeros, 1u << 20), 1 << 20);
	if (archive_write_close(a) != ARCHIVE_OK)
		fail_msg("zip: %s", archive_error_string(a));
	archive_entry_free(en);
	archive_write_free(a);
	assert_true(used > 0 && used < (MAX_UPLOAD_MB << 20) / 2);
	char *b64 = base64_of(buf, used);
	free(buf);
	free(zeros);
	free(solution);
	return b64;
}

/* ---- servers and the proctor binary --------------------------------------------- */

/* `proctor args...` that must exit 0; its stdout, trimmed (malloc'd). */
static char *proctor_ok(char *const *args)
{
	struct proc_out o;

	harness_run(&o, NULL, 120, args);
	if (o.exit_status != 0)
		fail_msg("proctor %s %s: exit %d: %s", args[0], args[1], o.exit_status, o.err);
	char *s = strdup(harness_trim(o.out));
	proc_out_free(&o);
	assert_non_null(s);
	return s;
}

static void make_course(const char *db, struct course *c, const char *name, bool assignment)
{
	static const char *const scopes[] = {"admin", "instructor", "submit"};
	char *dest[] = {c->admin, c->instructor, c->submit};

	snprintf(c->name, sizeof(c->name), "%s", name);
	for (int i = 0; i < 3; i++) {
		char *args[] = {"admin",    "token",	       "--db",
				(char *)db, "--course",	       c->name,
				"--scope",  (char *)scopes[i], NULL};
		char *tok = proctor_ok(args);
		assert_true(strncmp(tok, "prt_", 4) == 0 && strlen(tok) < 128);
		snprintf(dest[i], 128, "%s", tok);
		free(tok);
	}
	if (assignment) {
		char *args[] = {"admin",
				"assignment",
				"--db",
				(char *)db,
				"--course",
				c->name,
				EXAMPLES_DIR "/python-pytest",
				NULL};
		char *id = proctor_ok(args);
		c->assignment = atoll(id);
		free(id);
		assert_true(c->assignment > 0);
	}
}

static void server_start(struct server *s, const char *dir, const char *tag, const char *db,
			 const char *workers, const char *queue_bound)
{
	char mb[16];
	const char *args[] = {"serve",	   "--listen",	 "127.0.0.1:0",	 "--db", db,
			      "--workers", workers,	 "--max-upload", mb,	 "--queue-bound",
			      queue_bound, "--wait-max", "120",		 NULL};

	snprintf(mb, sizeof(mb), "%d", MAX_UPLOAD_MB);
	snprintf(s->out, sizeof(s->out), "%s/%s.out", dir, tag);
	snprintf(s->err, sizeof(s->err), "%s/%s.err", dir, tag);
	s->pid = harness_spawn(args, s->out, s->err);
	long long deadline = harness_now_ms() + 60000;
	for (;;) {
		char *text = harness_slurp(s->err, 1 << 20, NULL);
		const char *l = text ? strstr(text, "listening on 127.0.0.1:") : NULL;
		if (l) {
			int port = atoi(l + strlen("listening on 127.0.0.1:"));
			free(text);
			assert_true(port > 0 && port < 65536);
			snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%d", port);
			return;
		}
		int st;
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			s->pid = 0;
			fail_msg("proctor serve (%s) ended before listening: %s", tag,
				 text ? text : "");
		}
		free(text);
		if (harness_now_ms() > deadline)
			fail_msg("proctor serve (%s) did not listen within 60 s", tag);
		harness_sleep_ms(50);
	}
}

/* The pids of a process's children (serve's worker process). */
static size_t children_of(pid_t pid, pid_t *ret, size_t cap)
{
	char path[64];
	size_t n = 0;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	int c;
	while (n < cap && fscanf(f, "%d", &c) == 1)
		ret[n++] = (pid_t)c;
	fclose(f);
	return n;
}

/*
 * SIGTERM and wait; the exit status, or -1 when it had to be killed (then
 * serve's worker process, which it would have stopped, is killed too).
 */
static int server_stop(struct server *s, long long timeout_ms)
{
	if (s->pid <= 0)
		return 0;
	pid_t kids[8];
	size_t n = children_of(s->pid, kids, 8);
	kill(s->pid, SIGTERM);
	long long deadline = harness_now_ms() + timeout_ms;
	int st, status = -1;
	for (;;) {
		if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
			status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			break;
		}
		if (harness_now_ms() > deadline) {
			kill(s->pid, SIGKILL);
			waitpid(s->pid, &st, 0);
			for (size_t i = 0; i < n; i++)
				kill(kids[i], SIGKILL);
			break;
		}
		harness_sleep_ms(20);
	}
	s->pid = 0;
	return status;
}

/*
 * The suite is a child subreaper: a worker process whose serve died (a
 * crash) is reparented here rather than to init.  End those by pid: only
 * this process's own children that are proctor-service processes.
 */
static void end_orphans(void)
{
	pid_t kids[64];
	size_t n = children_of(getpid(), kids, 64);

	for (size_t i = 0; i < n; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)kids[i]);
		char *cmd = harness_slurp(path, 4096, NULL);
		bool ours = cmd && strstr(cmd, "proctor-service") != NULL;
		free(cmd);
		if (!ours)
			continue;
		fprintf(stderr, "test_service: ending orphaned proctor-service %d\n", (int)kids[i]);
		kill(kids[i], SIGTERM);
		long long deadline = harness_now_ms() + 10000;
		int st;
		while (waitpid(kids[i], &st, WNOHANG) == 0) {
			if (harness_now_ms() > deadline) {
				kill(kids[i], SIGKILL);
				waitpid(kids[i], &st, 0);
				break;
			}
			harness_sleep_ms(20);
		}
	}
}

static void print_log(const struct server *s)
{
	char *text = harness_slurp(s->err, 64 << 10, NULL);
	if (text)
		fprintf(stderr, "---- %s ----\n%s\n", s->err, text);
	free(text);
}

/* The group's servers and courses, started by the first test that needs them. */
static struct env *ready(void **state)
{
	struct env *v = *state;
	char why[512];

	if (v->skip[0])
		skip();
	harness_require_root("the service's workers (the jail)");
	if (v->broken)
		fail_msg("the %s servers did not start (see the first failure)", v->name);
	if (v->started)
		return v;
	v->broken = true;
	if (v->pg) {
		if (pgtest_createdb(v->pg, "svc_main", v->url, sizeof(v->url), why, sizeof(why)) <
			0 ||
		    pgtest_createdb(v->pg, "svc_pending", v->pending_url, sizeof(v->pending_url),
				    why, sizeof(why)) < 0)
			fail_msg("createdb: %s", why);
	} else {
		snprintf(v->url, sizeof(v->url), "sqlite:%s/main.db", v->tmp);
		snprintf(v->pending_url, sizeof(v->pending_url), "sqlite:%s/pending.db", v->tmp);
	}
	make_course(v->url, &v->a, "cs101", true);
	make_course(v->url, &v->b, "other", true);
	make_course(v->pending_url, &v->p, "cs101", true);
	server_start(&v->main, v->tmp, "main", v->url, "2", "10000");
	server_start(&v->pending, v->tmp, "pending", v->pending_url, "0", "1");
	v->broken = false;
	v->started = true;
	return v;
}

/* ---- fixtures --------------------------------------------------------------------- */

static char *submission_body(long long assignment, const char *student, const char *archive)
{
	json_t *doc = json_pack("{s:I, s:s?, s:s}", "assignment", (json_int_t)assignment, "student",
				student, "archive", archive);
	char *text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	assert_non_null(text);
	return text;
}

/* POST a submission of examples/python-pytest's correct solution. */
static void submit_correct(const struct server *s, const char *token, long long assignment,
			   const char *student, const char *key, struct reply *r)
{
	char *archive = packed(EXAMPLES_DIR "/python-pytest/submissions/correct");
	char *body = submission_body(assignment, student, archive);
	char hdr[400];
	const char *const headers[] = {hdr, NULL};

	snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", key ? key : "");
	call(s, "POST", "/v1/submissions", token, body, key ? headers : NULL, r);
	free(body);
	free(archive);
}

/* Long-poll until the submission's latest job (job_id > 0: that one) has ended. */
static void wait_verdict(const struct server *s, const char *token, long long id, long long job_id,
			 struct reply *r)
{
	char path[128];
	long long deadline = harness_now_ms() + GRADE_WAIT_S * 1000LL;

	snprintf(path, sizeof(path), "/v1/submissions/%lld?wait=30", id);
	for (;;) {
		call(s, "GET", path, token, NULL, NULL, r);
		expect_status(r, 200);
		const char *state = str_at(r, "service.state");
		bool ended = strcmp(state, "done") == 0 || strcmp(state, "error") == 0;
		if (ended && (job_id <= 0 || int_at(r, "service.job_id") == job_id))
			return;
		if (harness_now_ms() > deadline)
			fail_msg("submission %lld has no verdict after %d s (stuck?): %.2000s", id,
				 GRADE_WAIT_S, r->body);
		reply_free(r);
	}
}

/* An assignment uploaded through POST /v1/assignments, then a submission
 * to it graded 10/10 (the document kept, instructor's view). */
static long long graded(struct env *v)
{
	struct reply r;

	if (v->graded)
		return v->graded;
	char *archive = packed(EXAMPLES_DIR "/python-pytest");
	json_t *req =
	    json_pack("{s:s, s:s, s:s}", "name", "api-pytest", "image", "host", "archive", archive);
	char *body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	free(archive);
	call(&v->main, "POST", "/v1/assignments", v->a.instructor, body, NULL, &r);
	expect_status(&r, 201);
	v->api_assignment = int_at(&r, "assignment_id");
	v->api_version = int_at(&r, "version_id");
	assert_int_equal(int_at(&r, "version"), 1);
	assert_string_equal(str_at(&r, "name"), "api-pytest");
	assert_int_equal(strlen(str_at(&r, "archive_sha256")), 64);
	reply_free(&r);
	/* The same archive again adds no version. */
	call(&v->main, "POST", "/v1/assignments", v->a.instructor, body, NULL, &r);
	expect_status(&r, 201);
	assert_int_equal(int_at(&r, "version_id"), v->api_version);
	assert_int_equal(int_at(&r, "version"), 1);
	reply_free(&r);
	free(body);

	submit_correct(&v->main, v->a.submit, v->api_assignment, "alice", NULL, &r);
	expect_status(&r, 202);
	long long id = int_at(&r, "submission_id");
	assert_true(id > 0 && int_at(&r, "job_id") > 0);
	assert_int_equal(int_at(&r, "assignment_id"), v->api_assignment);
	assert_string_equal(str_at(&r, "state"), "queued");
	assert_true(json_is_false(at(r.json, "existing")));
	reply_free(&r);
	wait_verdict(&v->main, v->a.instructor, id, 0, &r);
	if (strcmp(str_at(&r, "service.state"), "done") != 0 ||
	    strcmp(str_at(&r, "status"), "graded") != 0)
		fail_msg("not graded: %.3000s", r.body);
	v->graded_doc = json_incref(r.json);
	v->graded = id;
	reply_free(&r);
	return id;
}

/* A submission on the pending server (no workers): queued for good. */
static long long pending(struct env *v)
{
	struct reply r;

	if (v->pending_sub)
		return v->pending_sub;
	submit_correct(&v->pending, v->p.submit, v->p.assignment, "bob", "the-pending-one", &r);
	expect_status(&r, 202);
	v->pending_sub = int_at(&r, "submission_id");
	reply_free(&r);
	return v->pending_sub;
}

static void gethost(char *buf, size_t len)
{
	if (gethostname(buf, len) < 0)
		snprintf(buf, len, "unknown");
	buf[len - 1] = '\0';
}

/* ---- tests ------------------------------------------------------------------------ */

static void test_service_upload_submit_and_long_poll(void **state)
{
	struct env *v = ready(state);
	long long id = graded(v);
	const json_t *doc = v->graded_doc;
	struct reply r;
	char host[256], path[128];

	/* The verdict, as `proctor grade` gives it. */
	assert_string_equal(json_string_value(at(doc, "status")), "graded");
	assert_true(json_number_value(at(doc, "score")) == 10.0);
	assert_true(json_number_value(at(doc, "max_score")) == 10.0);
	assert_string_equal(json_string_value(at(doc, "view")), "instructor");
	/* The service's fields: ids, state, attempts with worker and host, phase times. */
	assert_int_equal(json_integer_value(at(doc, "service.submission_id")), id);
	assert_int_equal(json_integer_value(at(doc, "service.version_id")), v->api_version);
	assert_string_equal(json_string_value(at(doc, "service.student")), "alice");
	assert_int_equal(strlen(json_string_value(at(doc, "service.submission_sha256"))), 64);
	assert_true(json_is_false(at(doc, "service.not_gradable")));
	assert_true(json_is_null(at(doc, "service.error")));
	assert_int_equal(json_integer_value(at(doc, "service.attempt")), 1);
	json_t *attempts = at(doc, "service.attempts");
	assert_int_equal(json_array_size(attempts), 1);
	json_t *a0 = json_array_get(attempts, 0);
	gethost(host, sizeof(host));
	assert_string_equal(json_string_value(json_object_get(a0, "host")), host);
	const char *worker = json_string_value(json_object_get(a0, "worker"));
	assert_non_null(worker);
	assert_true(strncmp(worker, host, strlen(host)) == 0 && worker[strlen(host)] == '/');
	assert_string_equal(json_string_value(json_object_get(a0, "outcome")), "done");
	assert_true(json_is_integer(json_object_get(a0, "ended_ms")));
	static const char *const phases[] = {"received_ms", "queued_ms", "started_ms",
					     "sandbox_ready_ms", "finished_ms"};
	long long prev = 0;
	for (size_t i = 0; i < sizeof(phases) / sizeof(phases[0]); i++) {
		char key[64];
		snprintf(key, sizeof(key), "service.times.%s", phases[i]);
		json_t *t = at(doc, key);
		if (!json_is_integer(t))
			fail_msg("%s is not a time", key);
		if (json_integer_value(t) < prev)
			fail_msg("%s is before the phase before it", key);
		prev = json_integer_value(t);
	}
	assert_true(json_is_null(at(doc, "service.times.delivered_ms")));

	/* A submit token gets the student's view: the hidden test unnamed. */
	snprintf(path, sizeof(path), "/v1/submissions/%lld?wait=0", id);
	call(&v->main, "GET", path, v->a.submit, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_string_equal(str_at(&r, "view"), "student");
	assert_null(strstr(r.body, "test_most_common_word_tie"));
	assert_string_equal(str_at(&r, "service.state"), "done");
	reply_free(&r);

	/* The assignment, to any token of its course. */
	snprintf(path, sizeof(path), "/v1/assignments/%lld", v->api_assignment);
	call(&v->main, "GET", path, v->a.submit, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_string_equal(str_at(&r, "name"), "api-pytest");
	assert_string_equal(str_at(&r, "image"), "host");
	assert_int_equal(int_at(&r, "version_id"), v->api_version);
	reply_free(&r);
}

/* Every format with every scope: a submit token never receives a hidden
 * test's name or failure output (expected values included), nor raw
 * output; an instructor's result does carry them (so the check can fail). */
static void test_service_every_format_with_every_scope(void **state)
{
	struct env *v = ready(state);
	struct reply r;
	char path[160], *hidden_msg = NULL;

	graded(v); /* the API's assignment */
	char *archive = packed(EXAMPLES_DIR "/python-pytest/submissions/partial");
	char *body = submission_body(v->api_assignment, "hana", archive);
	call(&v->main, "POST", "/v1/submissions", v->a.submit, body, NULL, &r);
	free(body);
	free(archive);
	expect_status(&r, 202);
	long long id = int_at(&r, "submission_id");
	reply_free(&r);
	wait_verdict(&v->main, v->a.instructor, id, 0, &r);
	assert_string_equal(str_at(&r, "status"), "graded");
	/* The hidden test failed, with pytest's message (the values it compared). */
	size_t i;
	json_t *t;
	json_array_foreach(at(r.json, "tests"), i, t)
	{
		const char *name = json_string_value(json_object_get(t, "name"));
		if (name && strcmp(name, "test_most_common_word_tie") == 0)
			hidden_msg = strdup(json_string_value(json_object_get(t, "message")));
	}
	reply_free(&r);
	if (!hidden_msg || strlen(hidden_msg) < 8)
		fail_msg("the hidden test has no failure message to look for");
	/* A distinctive piece of it: its first line, at most 40 bytes. */
	hidden_msg[strcspn(hidden_msg, "\n")] = '\0';
	if (strlen(hidden_msg) > 40)
		hidden_msg[40] = '\0';

	static const char *const formats[] = {"", "&format=result", "&format=student",
					      "&format=gradescope"};
	const char *const tokens[] = {v->a.submit, v->a.instructor, v->a.admin};
	for (size_t k = 0; k < 3; k++)
		for (size_t f = 0; f < 4; f++) {
			snprintf(path, sizeof(path), "/v1/submissions/%lld?wait=0%s", id, formats[f]);
			call(&v->main, "GET", path, tokens[k], NULL, NULL, &r);
			expect_status(&r, 200);
			bool student = k == 0 || f == 2;
			bool leaks = strstr(r.body, "test_most_common_word_tie") ||
				     strstr(r.body, hidden_msg) || strstr(r.body, "\"stdout\":\"");
			if (student && leaks)
				fail_msg("token %zu, '%s': the hidden test shows: %.3000s", k,
					 formats[f], r.body);
			/* Staff's own result and Gradescope output name it. */
			if (!student && !strstr(r.body, "test_most_common_word_tie"))
				fail_msg("token %zu, '%s': the instructor's answer lacks the "
					 "hidden test: %.2000s",
					 k, formats[f], r.body);
			reply_free(&r);
		}
	free(hidden_msg);
}

/*
 * A waiting long poll holds no thread (issue 23): 500 polls of a
 * submission that stays queued (`wait=60`, from 20 loopback addresses: 25
 * each, under the per-address limit of 32) and /healthz still answers at
 * once, where 16 polls used to take all 16 of the server's threads for a
 * minute.  The polls get no answer meanwhile; they are then dropped.
 */
#define POLLS 500

/* A `wait=60` poll of the pending submission, sent by hand from the
 * loopback address `from` (host order) to the pending server: its socket. */
static int raw_poll(struct env *v, uint32_t from_ip)
{
	struct sockaddr_in from = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};
	char req[512];
	unsigned port;
	long long id = pending(v);

	assert_int_equal(sscanf(v->pending.base, "http://127.0.0.1:%u", &port), 1);
	snprintf(req, sizeof(req),
		 "GET /v1/submissions/%lld?wait=60 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		 "Authorization: Bearer %s\r\n\r\n",
		 id, v->p.submit);
	from.sin_addr.s_addr = htonl(from_ip);
	to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	to.sin_port = htons((uint16_t)port);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	if (bind(fd, (struct sockaddr *)&from, sizeof(from)) < 0 ||
	    connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0 ||
	    write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		fail_msg("a poll from %08x: %s", from_ip, strerror(errno));
	return fd;
}

static void test_service_long_polls_hold_no_thread(void **state)
{
	struct env *v = ready(state);
	static int fds[POLLS];

	for (int i = 0; i < POLLS; i++)
		fds[i] = raw_poll(v, 0x7f000002u + (uint32_t)(i / 25));
	harness_sleep_ms(1000);

	/* /healthz, with a 10 s limit of its own (the polls wait 60 s). */
	CURL *c = curl_easy_init();
	char url[128];
	struct reply r = {0};
	long status = 0;
	assert_non_null(c);
	snprintf(url, sizeof(url), "%s/healthz", v->pending.base);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "*");
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	long long t0 = harness_now_ms();
	CURLcode rc = curl_easy_perform(c);
	long long took = harness_now_ms() - t0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	print_message("[  HEALTH  ] %s: /healthz in %lld ms beside %d waiting polls\n", v->name,
		      took, POLLS);
	if (rc != CURLE_OK || status != 200)
		fail_msg("/healthz beside %d waiting polls: %s, status %ld after %lld ms", POLLS,
			 curl_easy_strerror(rc), status, took);
	reply_free(&r);

	/* Every poll is still waiting: connected, no answer yet. */
	int answered = 0;
	for (int i = 0; i < POLLS; i++) {
		char b;
		ssize_t n = recv(fds[i], &b, 1, MSG_DONTWAIT);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			answered++;
		close(fds[i]);
	}
	if (answered)
		fail_msg("%d of %d polls of a queued submission were answered or closed within "
			 "their 60 s",
			 answered, POLLS);
}

static void test_service_health_ready_and_metrics_need_no_token(void **state)
{
	struct env *v = ready(state);
	struct reply r;

	call(&v->main, "GET", "/healthz", NULL, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_string_equal(str_at(&r, "status"), "ok");
	reply_free(&r);
	call(&v->main, "GET", "/readyz", NULL, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_string_equal(str_at(&r, "status"), "ready");
	reply_free(&r);

	/* After a graded job: the jobs gauge and the phase histogram (folded
	 * in by serve's once-a-second background loop). */
	graded(v);
	long long deadline = harness_now_ms() + 10000;
	for (;;) {
		call(&v->main, "GET", "/metrics", NULL, NULL, NULL, &r);
		assert_int_equal(r.status, 200);
		assert_true(strncmp(r.content_type, "text/plain", 10) == 0);
		const char *total =
		    strstr(r.body, "proctor_job_phase_seconds_count{phase=\"total\"} ");
		bool done = strstr(r.body, "state=\"done\"} ") != NULL;
		if (total && done &&
		    atoll(total + strlen("proctor_job_phase_seconds_count{phase=\"total\"} ")) >= 1)
			break;
		if (harness_now_ms() > deadline)
			fail_msg("no finished job in /metrics after 10 s:\n%.4000s", r.body);
		reply_free(&r);
		harness_sleep_ms(200);
	}
	assert_non_null(strstr(r.body, "# TYPE proctor_jobs gauge"));
	assert_non_null(strstr(r.body, "# TYPE proctor_job_phase_seconds histogram"));
	assert_non_null(
	    strstr(r.body, "proctor_job_phase_seconds_bucket{phase=\"queue\",le=\"+Inf\"}"));
	assert_non_null(strstr(r.body, "proctor_jobs{course=\""));
	reply_free(&r);
}

static void test_service_tokens_and_scopes(void **state)
{
	struct env *v = ready(state);
	struct reply r;
	const char *const basic[] = {"Authorization: Basic dXNlcjpwdw==", NULL};
	char path[128];

	call(&v->main, "GET", "/v1/course/budget", NULL, NULL, NULL, &r);
	expect_error(&r, 401, "unauthorized");
	reply_free(&r);
	call(&v->main, "GET", "/v1/course/budget", NULL, NULL, basic, &r);
	expect_error(&r, 401, "unauthorized");
	reply_free(&r);
	/* Well-formed but unknown; a known selector with a wrong secret; garbage. */
	char wrong[128];
	snprintf(wrong, sizeof(wrong), "%s", v->a.admin);
	wrong[strlen(wrong) - 1] = wrong[strlen(wrong) - 1] == '0' ? '1' : '0';
	const char *const bad[] = {
	    "prt_00000000000000000000000000000000000000000000000000000000000000000000000000000000",
	    wrong, "not-a-token"};
	for (size_t i = 0; i < 3; i++) {
		call(&v->main, "GET", "/v1/course/budget", bad[i], NULL, NULL, &r);
		expect_error(&r, 401, "unauthorized");
		reply_free(&r);
	}

	/* A submit token on instructor routes; an instructor's on admin routes. */
	call(&v->main, "GET", "/v1/submissions", v->a.submit, NULL, NULL, &r);
	expect_error(&r, 403, "forbidden");
	reply_free(&r);
	call(&v->main, "POST", "/v1/assignments", v->a.submit, "{}", NULL, &r);
	expect_error(&r, 403, "forbidden");
	reply_free(&r);
	call(&v->main, "GET", "/v1/course/budget", v->a.submit, NULL, NULL, &r);
	expect_error(&r, 403, "forbidden");
	reply_free(&r);
	snprintf(path, sizeof(path), "/v1/submissions/%lld/results", graded(v));
	call(&v->main, "GET", path, v->a.submit, NULL, NULL, &r);
	expect_error(&r, 403, "forbidden");
	reply_free(&r);
	call(&v->main, "PUT", "/v1/course/budget", v->a.instructor, "{\"daily_cpu_cap\":null}",
	     NULL, &r);
	expect_error(&r, 403, "forbidden");
	reply_free(&r);
	call(&v->main, "POST", "/v1/tokens", v->a.instructor, "{\"scope\":\"submit\"}", NULL, &r);
	expect_error(&r, 403, "forbidden");
	reply_free(&r);
	/* Scopes are ordered: admin can do what an instructor can. */
	call(&v->main, "GET", "/v1/submissions", v->a.admin, NULL, NULL, &r);
	expect_status(&r, 200);
	reply_free(&r);

	/* An admin makes tokens of its course; a new one works at once. */
	call(&v->main, "POST", "/v1/tokens", v->a.admin, "{\"scope\":\"submit\"}", NULL, &r);
	expect_status(&r, 201);
	assert_string_equal(str_at(&r, "scope"), "submit");
	assert_string_equal(str_at(&r, "course"), "cs101");
	char fresh[128];
	snprintf(fresh, sizeof(fresh), "%s", str_at(&r, "token"));
	reply_free(&r);
	snprintf(path, sizeof(path), "/v1/assignments/%lld", v->a.assignment);
	call(&v->main, "GET", path, fresh, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_string_equal(str_at(&r, "name"), "python-pytest");
	reply_free(&r);
	call(&v->main, "POST", "/v1/tokens", v->a.admin, "{\"scope\":\"root\"}", NULL, &r);
	expect_error(&r, 422, "invalid_input");
	reply_free(&r);

	/* The admin lists its course's tokens: the new one is there by its
	 * prefix, active, and no secret (nor any 64-hex hash) is shown. */
	call(&v->main, "GET", "/v1/tokens", v->a.instructor, NULL, NULL, &r);
	expect_error(&r, 403, "forbidden");
	reply_free(&r);
	call(&v->main, "GET", "/v1/tokens", v->a.admin, NULL, NULL, &r);
	expect_status(&r, 200);
	long long fresh_id = 0;
	json_t *tok;
	size_t k;
	json_array_foreach(at(r.json, "tokens"), k, tok)
	{
		const char *prefix = json_string_value(json_object_get(tok, "prefix"));
		assert_non_null(prefix);
		assert_int_equal(strlen(prefix), 20);
		if (strncmp(fresh, prefix, strlen(prefix)) == 0) {
			fresh_id = json_integer_value(json_object_get(tok, "token_id"));
			assert_string_equal(json_string_value(json_object_get(tok, "scope")),
					    "submit");
			assert_true(json_is_null(json_object_get(tok, "revoked_ms")));
		}
	}
	if (strstr(r.body, fresh + 20) || strstr(r.body, v->a.admin + 20))
		fail_msg("GET /v1/tokens shows a secret: %s", r.body);
	assert_true(fresh_id > 0);
	reply_free(&r);

	/* Another course's admin cannot revoke it; this one can, and the token
	 * is refused at once, by every route; a second revoke is 404. */
	snprintf(path, sizeof(path), "/v1/tokens/%lld", fresh_id);
	call(&v->main, "DELETE", path, v->b.admin, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	call(&v->main, "DELETE", path, v->a.instructor, NULL, NULL, &r);
	expect_error(&r, 403, "forbidden");
	reply_free(&r);
	call(&v->main, "DELETE", path, v->a.admin, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_int_equal(int_at(&r, "token_id"), fresh_id);
	assert_true(json_is_true(at(r.json, "revoked")));
	reply_free(&r);
	snprintf(path, sizeof(path), "/v1/assignments/%lld", v->a.assignment);
	call(&v->main, "GET", path, fresh, NULL, NULL, &r);
	expect_error(&r, 401, "unauthorized");
	reply_free(&r);
	snprintf(path, sizeof(path), "/v1/tokens/%lld", fresh_id);
	call(&v->main, "DELETE", path, v->a.admin, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	call(&v->main, "GET", "/v1/tokens", v->a.admin, NULL, NULL, &r);
	expect_status(&r, 200);
	json_array_foreach(at(r.json, "tokens"), k, tok)
	{
		if (json_integer_value(json_object_get(tok, "token_id")) == fresh_id)
			assert_true(json_is_integer(json_object_get(tok, "revoked_ms")));
	}
	reply_free(&r);

	/* The operator's way: `proctor admin token --revoke`, exit 2 for a
	 * token the course does not have. */
	char *mint[] = {"admin", "token", "--db", v->url, "--course", "cs101", "--scope",
			"submit", NULL};
	char *second = proctor_ok(mint);
	call(&v->main, "GET", "/v1/tokens", v->a.admin, NULL, NULL, &r);
	long long second_id = 0;
	json_array_foreach(at(r.json, "tokens"), k, tok)
	{
		const char *prefix = json_string_value(json_object_get(tok, "prefix"));
		if (prefix && strncmp(second, prefix, strlen(prefix)) == 0)
			second_id = json_integer_value(json_object_get(tok, "token_id"));
	}
	reply_free(&r);
	assert_true(second_id > 0);
	char id_text[32];
	snprintf(id_text, sizeof(id_text), "%lld", second_id);
	char *revoke[] = {"admin",  "token", "--db", v->url, "--course", "cs101", "--revoke",
			  id_text, NULL};
	struct proc_out o;
	harness_run(&o, NULL, 60, revoke);
	assert_int_equal(o.exit_status, 0);
	proc_out_free(&o);
	snprintf(path, sizeof(path), "/v1/assignments/%lld", v->a.assignment);
	call(&v->main, "GET", path, second, NULL, NULL, &r);
	expect_error(&r, 401, "unauthorized");
	reply_free(&r);
	harness_run(&o, NULL, 60, revoke);
	if (o.exit_status != 2 || !strstr(o.err, "no active token"))
		fail_msg("a second --revoke: exit %d, want 2 naming no active token: %s",
			 o.exit_status, o.err);
	proc_out_free(&o);
	free(second);
}

static void test_service_token_of_another_course_sees_nothing(void **state)
{
	struct env *v = ready(state);
	long long id = graded(v);
	struct reply r;
	char path[128];

	/* Course B's admin token: A's ids do not exist for it. */
	snprintf(path, sizeof(path), "/v1/submissions/%lld", id);
	call(&v->main, "GET", path, v->b.admin, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	call(&v->main, "GET", path, v->b.submit, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	snprintf(path, sizeof(path), "/v1/submissions/%lld/results", id);
	call(&v->main, "GET", path, v->b.admin, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	snprintf(path, sizeof(path), "/v1/submissions/%lld/regrade", id);
	call(&v->main, "POST", path, v->b.admin, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	snprintf(path, sizeof(path), "/v1/assignments/%lld", v->api_assignment);
	call(&v->main, "GET", path, v->b.admin, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	submit_correct(&v->main, v->b.submit, v->api_assignment, "mallory", NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	/* B's list does not hold A's submission. */
	call(&v->main, "GET", "/v1/submissions?student=alice", v->b.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_int_equal(json_array_size(at(r.json, "submissions")), 0);
	reply_free(&r);
}

static void test_service_list_submissions_by_student(void **state)
{
	struct env *v = ready(state);
	long long id = graded(v);
	struct reply r;
	size_t i;
	json_t *x;
	bool found = false;

	call(&v->main, "GET", "/v1/submissions?student=alice", v->a.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	json_array_foreach(at(r.json, "submissions"), i, x) found |= json_integer_value(x) == id;
	assert_true(found);
	assert_true(json_is_null(at(r.json, "next_after")));
	reply_free(&r);
	call(&v->main, "GET", "/v1/submissions?student=nobody", v->a.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_int_equal(json_array_size(at(r.json, "submissions")), 0);
	reply_free(&r);
	/* Digits only, within an id's range: a sign, a space or a number too
	 * large is refused, never read as something else. */
	static const char *const bad_after[] = {"soon", "%2B5", "%205", "-1",
						"99999999999999999999", ""};
	for (size_t k = 0; k < sizeof(bad_after) / sizeof(bad_after[0]); k++) {
		char path[96];
		snprintf(path, sizeof(path), "/v1/submissions?after=%s", bad_after[k]);
		call(&v->main, "GET", path, v->a.instructor, NULL, NULL, &r);
		expect_error(&r, 400, "invalid_request");
		reply_free(&r);
	}
}

static void test_service_idempotency_key_returns_the_same_submission(void **state)
{
	struct env *v = ready(state);
	struct reply r;
	char key[64], long_key[300];

	snprintf(key, sizeof(key), "retry-%s-%lld", v->name, harness_now_ms());
	submit_correct(&v->main, v->a.submit, v->a.assignment, "carol", key, &r);
	expect_status(&r, 202);
	long long sub = int_at(&r, "submission_id"), job = int_at(&r, "job_id");
	assert_true(json_is_false(at(r.json, "existing")));
	reply_free(&r);
	/* The retry: the same ids, nothing written. */
	submit_correct(&v->main, v->a.submit, v->a.assignment, "carol", key, &r);
	expect_status(&r, 200);
	assert_int_equal(int_at(&r, "submission_id"), sub);
	assert_int_equal(int_at(&r, "job_id"), job);
	assert_true(json_is_true(at(r.json, "existing")));
	reply_free(&r);
	/* Keys are per course: B's same key is B's own submission. */
	submit_correct(&v->main, v->b.submit, v->b.assignment, "carol", key, &r);
	expect_status(&r, 202);
	assert_true(int_at(&r, "submission_id") != sub);
	reply_free(&r);
	memset(long_key, 'k', 256);
	long_key[256] = '\0';
	submit_correct(&v->main, v->a.submit, v->a.assignment, "carol", long_key, &r);
	expect_error(&r, 422, "invalid_input");
	reply_free(&r);
}

/* POST /v1/submissions with `body`: an error of `status` and `code`. */
static void refused(const struct env *v, const char *body, long status, const char *code)
{
	struct reply r;

	call(&v->main, "POST", "/v1/submissions", v->a.submit, body, NULL, &r);
	if (r.status != status)
		fail_msg("%.200s: status %ld, want %ld: %s", body, r.status, status,
			 r.body ? r.body : "");
	expect_error(&r, status, code);
	reply_free(&r);
}

static void test_service_bad_requests_have_stable_codes(void **state)
{
	struct env *v = ready(state);
	struct reply r;
	char body[512], deep[200];

	/* Not one JSON object: 400 invalid_request. */
	refused(v, "{\"assignment\": 1, \"archive\": ", 400, "invalid_request");
	refused(v, "[1, 2]", 400, "invalid_request");
	refused(v, "", 400, "invalid_request");
	refused(v, "{\"a\":1,\"a\":2}", 400, "invalid_request");
	memset(deep, '[', sizeof(deep) - 1);
	deep[sizeof(deep) - 1] = '\0';
	refused(v, deep, 400, "invalid_request");
	/* Members: 422 invalid_input, naming them. */
	snprintf(body, sizeof(body), "{\"assignment\":%lld,\"archive\":\"aGk=\",\"admin\":true}",
		 v->a.assignment);
	refused(v, body, 422, "invalid_input");
	refused(v, "{\"archive\":\"aGk=\"}", 422, "invalid_input");
	refused(v, "{\"assignment\":\"1\",\"archive\":\"aGk=\"}", 422, "invalid_input");
	refused(v, "{\"assignment\":0,\"archive\":\"aGk=\"}", 422, "invalid_input");
	snprintf(body, sizeof(body), "{\"assignment\":%lld}", v->a.assignment);
	refused(v, body, 422, "invalid_input");
	snprintf(body, sizeof(body), "{\"assignment\":%lld,\"archive\":\"not base64!\"}",
		 v->a.assignment);
	refused(v, body, 422, "invalid_input");
	snprintf(body, sizeof(body),
		 "{\"assignment\":%lld,\"archive\":\"aGk=\",\"student\":\"a\\u0007b\"}",
		 v->a.assignment);
	refused(v, body, 422, "invalid_input");
	snprintf(body, sizeof(body), "{\"assignment\":%lld,\"archive\":\"aGk=\",\"attempts\":11}",
		 v->a.assignment);
	refused(v, body, 422, "invalid_input");
	/* An assignment that does not exist. */
	refused(v, "{\"assignment\":999999,\"archive\":\"aGk=\"}", 404, "not_found");

	/* The other bodies and parameters. */
	call(&v->main, "POST", "/v1/assignments", v->a.instructor,
	     "{\"name\":\"x\",\"archive\":\"aGk=\"}", NULL, &r);
	expect_error(&r, 422, "invalid_input");
	reply_free(&r);
	call(&v->main, "POST", "/v1/assignments", v->a.instructor,
	     "{\"name\":\"x\",\"image\":\"host\",\"archive\":\"aGk=\",\"zz\":1}", NULL, &r);
	expect_error(&r, 422, "invalid_input");
	reply_free(&r);
	call(&v->main, "POST", "/v1/assignments", v->a.instructor, "{", NULL, &r);
	expect_error(&r, 400, "invalid_request");
	reply_free(&r);
	call(&v->main, "PUT", "/v1/course/budget", v->a.admin, "{\"daily_cpu_cap\":-1}", NULL, &r);
	expect_error(&r, 422, "invalid_input");
	reply_free(&r);
	call(&v->main, "PUT", "/v1/course/budget", v->a.admin, "{\"daily_cpu_cap\":\"lots\"}", NULL,
	     &r);
	expect_error(&r, 422, "invalid_input");
	reply_free(&r);
	call(&v->main, "PUT", "/v1/course/budget", v->a.admin, "nope", NULL, &r);
	expect_error(&r, 400, "invalid_request");
	reply_free(&r);
	static const char *const bad_wait[] = {"soon", "-1", "%205", "%2B5", "86401"};
	for (size_t k = 0; k < sizeof(bad_wait) / sizeof(bad_wait[0]); k++) {
		char path[96];
		snprintf(path, sizeof(path), "/v1/submissions/1?wait=%s", bad_wait[k]);
		call(&v->main, "GET", path, v->a.submit, NULL, NULL, &r);
		expect_error(&r, 400, "invalid_request");
		reply_free(&r);
	}
	call(&v->main, "GET", "/v1/submissions/999999", v->a.submit, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	call(&v->main, "GET", "/v1/assignments/999999", v->a.submit, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	call(&v->main, "POST", "/v1/submissions/999999/regrade", v->a.instructor, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	call(&v->main, "GET", "/v1/nothing", v->a.admin, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	assert_true(no_route(&r));
	reply_free(&r);
	call(&v->main, "DELETE", "/v1/submissions", v->a.admin, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	assert_true(no_route(&r));
	reply_free(&r);
}

static void test_service_callback_url_with_a_bad_scheme_is_422(void **state)
{
	struct env *v = ready(state);
	static const char *const urls[] = {"ftp://example.org/hook",
					   "file:///etc/passwd",
					   "gopher://example.org/",
					   "javascript:alert(1)",
					   "http://user:secret@example.org/hook",
					   "http://example.org/a b",
					   "example.org/hook"};
	char body[512];

	for (size_t i = 0; i < sizeof(urls) / sizeof(urls[0]); i++) {
		snprintf(body, sizeof(body),
			 "{\"assignment\":%lld,\"archive\":\"aGk=\",\"callback_url\":\"%s\"}",
			 v->a.assignment, urls[i]);
		refused(v, body, 422, "invalid_input");
	}
}

static void test_service_oversized_uploads_are_413(void **state)
{
	struct env *v = ready(state);
	size_t max = (size_t)MAX_UPLOAD_MB << 20;
	struct reply r;

	/* A declared body past the server's limit: refused before it is read. */
	size_t huge = max * 3;
	char *body = malloc(huge + 1);
	assert_non_null(body);
	memset(body, ' ', huge);
	body[huge] = '\0';
	refused(v, body, 413, "too_large");
	free(body);

	/* A body the front takes but the route's cap does not. */
	size_t mid = max * 4 / 3 + (256u << 10);
	body = malloc(mid + 64);
	assert_non_null(body);
	int n = snprintf(body, 64, "{\"assignment\":%lld,\"archive\":\"", v->a.assignment);
	memset(body + n, 'A', mid);
	strcpy(body + n + mid, "\"}");
	refused(v, body, 413, "too_large");
	free(body);

	/* An archive a few bytes past --max-upload, in a body within every cap. */
	char *data = calloc(1, max + 3);
	assert_non_null(data);
	char *b64 = base64_of(data, max + 3);
	free(data);
	body = submission_body(v->a.assignment, "big", b64);
	refused(v, body, 413, "too_large");
	free(body);
	json_t *req =
	    json_pack("{s:s, s:s, s:s}", "name", "too-big", "image", "host", "archive", b64);
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	call(&v->main, "POST", "/v1/assignments", v->a.instructor, body, NULL, &r);
	expect_error(&r, 413, "too_large");
	reply_free(&r);
	/* Without a valid token the body is never read: 401 whatever its size. */
	call(&v->main, "POST", "/v1/assignments", NULL, body, NULL, &r);
	expect_error(&r, 401, "unauthorized");
	reply_free(&r);
	call(&v->main, "POST", "/v1/submissions", "prt_not-a-token", body, NULL, &r);
	expect_error(&r, 401, "unauthorized");
	reply_free(&r);
	free(body);
	free(b64);

	/* A route that takes no upload reads at most 64 KiB. */
	body = malloc(100 << 10);
	assert_non_null(body);
	memset(body, ' ', (100 << 10) - 3);
	strcpy(body + (100 << 10) - 3, "{}");
	char path[128];
	snprintf(path, sizeof(path), "/v1/assignments/%lld/policy", v->a.assignment);
	call(&v->main, "PUT", path, v->a.instructor, body, NULL, &r);
	expect_error(&r, 413, "too_large");
	reply_free(&r);
	free(body);
}

static void test_service_zip_bomb_is_rejected_by_intake(void **state)
{
	struct env *v = ready(state);
	struct reply r;
	char *bomb = zip_bomb();
	char *body = submission_body(v->a.assignment, "zipper", bomb);

	free(bomb);
	call(&v->main, "POST", "/v1/submissions", v->a.submit, body, NULL, &r);
	free(body);
	expect_status(&r, 202);
	long long id = int_at(&r, "submission_id");
	reply_free(&r);
	/* A verdict, charged to the student; not a crash, not a stuck job. */
	wait_verdict(&v->main, v->a.instructor, id, 0, &r);
	assert_string_equal(str_at(&r, "service.state"), "done");
	if (strcmp(str_at(&r, "status"), "rejected") != 0)
		fail_msg("a zip bomb got status %s: %.3000s", str_at(&r, "status"), r.body);
	assert_non_null(strstr(str_at(&r, "reason"), "expands"));
	assert_true(json_is_false(at(r.json, "service.not_gradable")));
	assert_true(json_number_value(at(r.json, "score")) == 0.0);
	reply_free(&r);
	/* The server is still there. */
	call(&v->main, "GET", "/healthz", NULL, NULL, NULL, &r);
	expect_status(&r, 200);
	reply_free(&r);
}

static void test_service_full_queue_is_429_with_retry_after(void **state)
{
	struct env *v = ready(state);
	struct reply r;

	pending(v); /* the one job --queue-bound 1 allows, never graded (--workers 0) */
	submit_correct(&v->pending, v->p.submit, v->p.assignment, "bob", NULL, &r);
	expect_error(&r, 429, "queue_full");
	assert_true(atoi(r.retry_after) > 0);
	reply_free(&r);
	/* A retry of the submission that was accepted is answered, full queue or not. */
	submit_correct(&v->pending, v->p.submit, v->p.assignment, "bob", "the-pending-one", &r);
	expect_status(&r, 200);
	assert_int_equal(int_at(&r, "submission_id"), pending(v));
	assert_true(json_is_true(at(r.json, "existing")));
	reply_free(&r);
	/* Reads still work while the queue is full. */
	call(&v->pending, "GET", "/v1/course/budget", v->p.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	reply_free(&r);
}

static void test_service_budget_cap_refuses_until_an_admin_lifts_it(void **state)
{
	struct env *v = ready(state);
	struct reply r;

	/* Course B, so that a failure here leaves course A's tests alone. */
	call(&v->main, "GET", "/v1/course/budget", v->b.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_string_equal(str_at(&r, "course"), "other");
	assert_true(json_is_null(at(r.json, "daily_cpu_cap")));
	assert_true(json_is_number(at(r.json, "cpu_seconds_today")));
	assert_true(json_is_number(at(r.json, "estimated_cost_today")));
	reply_free(&r);
	call(&v->main, "PUT", "/v1/course/budget", v->b.admin, "{\"daily_cpu_cap\":0}", NULL, &r);
	expect_status(&r, 200);
	assert_true(json_is_number(at(r.json, "daily_cpu_cap")) &&
		    json_number_value(at(r.json, "daily_cpu_cap")) == 0);
	reply_free(&r);
	submit_correct(&v->main, v->b.submit, v->b.assignment, "dave", NULL, &r);
	expect_error(&r, 403, "budget_exceeded");
	reply_free(&r);
	/* Only course B is capped. */
	call(&v->main, "GET", "/v1/course/budget", v->a.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_true(json_is_null(at(r.json, "daily_cpu_cap")));
	reply_free(&r);
	call(&v->main, "PUT", "/v1/course/budget", v->b.admin, "{\"daily_cpu_cap\":null}", NULL,
	     &r);
	expect_status(&r, 200);
	assert_true(json_is_null(at(r.json, "daily_cpu_cap")));
	reply_free(&r);
	submit_correct(&v->main, v->b.submit, v->b.assignment, "dave", NULL, &r);
	expect_status(&r, 202);
	reply_free(&r);
}

static void put_policy(struct env *v, long long assignment, const char *policy, long status)
{
	struct reply r;
	char path[128];

	snprintf(path, sizeof(path), "/v1/assignments/%lld/policy", assignment);
	call(&v->main, "PUT", path, v->a.instructor, policy, NULL, &r);
	expect_status(&r, status);
	reply_free(&r);
}

static void test_service_policy_limits_submissions_and_the_gradebook_shows_them(void **state)
{
	struct env *v = ready(state);
	long long assignment = v->a.assignment;
	struct reply r;
	char path[128];

	snprintf(path, sizeof(path), "/v1/assignments/%lld/policy", assignment);
	call(&v->main, "PUT", path, v->a.submit, "{}", NULL, &r);
	expect_error(&r, 403, "forbidden");
	reply_free(&r);
	put_policy(v, assignment, "{\"max_submissions\": 2, \"late.per\": 1}", 422);
	put_policy(v, assignment, "{\"max_submissions\": 0}", 422);
	/* At most 2 per student, counted one after the other. */
	put_policy(v, assignment, "{\"max_submissions\": 2}", 200);
	call(&v->main, "GET", path, v->a.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_int_equal(int_at(&r, "max_submissions"), 2);
	assert_string_equal(str_at(&r, "counting"), "latest");
	reply_free(&r);
	for (int i = 0; i < 2; i++) {
		submit_correct(&v->main, v->a.submit, assignment, "dora", NULL, &r);
		expect_status(&r, 202);
		reply_free(&r);
	}
	submit_correct(&v->main, v->a.submit, assignment, "dora", NULL, &r);
	expect_error(&r, 403, "submission_limit");
	reply_free(&r);
	/* A minimum interval: 429 too_soon, with when to come back. */
	put_policy(v, assignment, "{\"min_interval_s\": 3600}", 200);
	submit_correct(&v->main, v->a.submit, assignment, "erin", NULL, &r);
	expect_status(&r, 202);
	reply_free(&r);
	submit_correct(&v->main, v->a.submit, assignment, "erin", NULL, &r);
	expect_error(&r, 429, "too_soon");
	assert_true(atoi(r.retry_after) > 3500 && atoi(r.retry_after) <= 3600);
	reply_free(&r);
	/* An extension, listed; then removed. */
	snprintf(path, sizeof(path), "/v1/assignments/%lld/extensions", assignment);
	call(&v->main, "PUT", path, v->a.instructor, "{\"student\": \"erin\", \"extra_s\": 60}",
	     NULL, &r);
	expect_status(&r, 200);
	assert_string_equal(
	    json_string_value(at(json_array_get(at(r.json, "extensions"), 0), "student")), "erin");
	reply_free(&r);
	snprintf(path, sizeof(path), "/v1/assignments/%lld/extensions?student=erin", assignment);
	call(&v->main, "DELETE", path, v->a.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_int_equal(json_array_size(at(r.json, "extensions")), 0);
	reply_free(&r);
	put_policy(v, assignment, "{}", 200); /* the defaults again, for the other tests */

	/* The gradebook has dora and erin, as CSV with a header and as JSON. */
	snprintf(path, sizeof(path), "/v1/assignments/%lld/gradebook?format=csv", assignment);
	call(&v->main, "GET", path, v->a.instructor, NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.content_type, "text/csv"));
	assert_true(strncmp(r.body, "student,", 8) == 0);
	assert_non_null(strstr(r.body, "\n\"dora\","));
	assert_non_null(strstr(r.body, "\n\"erin\","));
	reply_free(&r);
	snprintf(path, sizeof(path), "/v1/assignments/%lld/gradebook?format=xls", assignment);
	call(&v->main, "GET", path, v->a.instructor, NULL, NULL, &r);
	expect_error(&r, 400, "invalid_request");
	reply_free(&r);
}

static void test_service_assignment_regrade_says_which_scores_changed(void **state)
{
	struct env *v = ready(state);
	long long id = graded(v);
	struct reply r;
	char path[128];

	snprintf(path, sizeof(path), "/v1/assignments/%lld/regrade", v->api_assignment);
	call(&v->main, "POST", path, v->a.instructor, "{\"scope\": \"bogus\"}", NULL, &r);
	expect_error(&r, 422, "invalid_input");
	reply_free(&r);
	call(&v->main, "POST", path, v->a.instructor,
	     "{\"scope\": \"student\", \"student\": \"alice\"}", NULL, &r);
	expect_status(&r, 202);
	assert_int_equal(int_at(&r, "jobs"), 1);
	long long regrade = int_at(&r, "regrade_id");
	reply_free(&r);
	snprintf(path, sizeof(path), "/v1/regrades/%lld?wait=%d", regrade, GRADE_WAIT_S);
	call(&v->main, "GET", path, v->a.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_true(json_is_true(at(r.json, "complete")));
	assert_int_equal(int_at(&r, "jobs"), 1);
	assert_int_equal(int_at(&r, "changed"), 0); /* 10/10 again */
	assert_int_equal(json_array_size(at(r.json, "changes")), 0);
	reply_free(&r);
	/* Another course's token does not see it. */
	call(&v->main, "GET", path, v->b.instructor, NULL, NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	/* Gradescope's format of the same submission: its tests, no service fields. */
	snprintf(path, sizeof(path), "/v1/submissions/%lld?format=gradescope", id);
	call(&v->main, "GET", path, v->a.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_true(json_is_array(at(r.json, "tests")));
	assert_null(json_object_get(r.json, "service"));
	reply_free(&r);
}

static void test_service_batch_answers_each_submission(void **state)
{
	struct env *v = ready(state);
	struct reply r;
	char key[64];
	char *archive = packed(EXAMPLES_DIR "/python-pytest/submissions/correct");

	snprintf(key, sizeof(key), "batch-%s-%lld", v->name, harness_now_ms());
	json_t *items = json_array();
	json_array_append_new(items, json_pack("{s:I, s:s, s:s, s:s}", "assignment",
					       (json_int_t)v->a.assignment, "student", "fay",
					       "archive", archive, "idempotency_key", key));
	json_array_append_new(items, json_pack("{s:I, s:s, s:s}", "assignment",
					       (json_int_t)v->a.assignment, "student", "gus",
					       "archive", archive));
	json_array_append_new(
	    items, json_pack("{s:I, s:s}", "assignment", (json_int_t)999999, "archive", archive));
	json_array_append_new(items, json_string("not an object"));
	assert_int_equal(json_array_size(items), 4);
	json_t *req = json_pack("{s:o}", "submissions", items);
	assert_non_null(req);
	char *body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	call(&v->main, "POST", "/v1/submissions/batch", v->a.submit, body, NULL, &r);
	expect_status(&r, 200);
	json_t *res = at(r.json, "results");
	assert_int_equal(json_array_size(res), 4);
	assert_int_equal(json_integer_value(at(json_array_get(res, 0), "status")), 202);
	long long first = json_integer_value(at(json_array_get(res, 0), "submission_id"));
	assert_true(first > 0);
	assert_int_equal(json_integer_value(at(json_array_get(res, 1), "status")), 202);
	assert_int_equal(json_integer_value(at(json_array_get(res, 2), "status")), 404);
	assert_string_equal(json_string_value(at(json_array_get(res, 2), "error.code")),
			    "not_found");
	assert_int_equal(json_integer_value(at(json_array_get(res, 3), "status")), 422);
	reply_free(&r);
	/* The same batch again: the keyed one is a replay, the other a new one. */
	call(&v->main, "POST", "/v1/submissions/batch", v->a.submit, body, NULL, &r);
	expect_status(&r, 200);
	res = at(r.json, "results");
	assert_int_equal(json_integer_value(at(json_array_get(res, 0), "status")), 200);
	assert_int_equal(json_integer_value(at(json_array_get(res, 0), "submission_id")), first);
	assert_true(json_is_true(at(json_array_get(res, 0), "existing")));
	reply_free(&r);
	call(&v->main, "POST", "/v1/submissions/batch", v->a.submit, "{\"submissions\": []}", NULL,
	     &r);
	expect_error(&r, 422, "invalid_input");
	reply_free(&r);
	free(body);
	free(archive);
}

static void test_service_regrade_adds_a_second_result(void **state)
{
	struct env *v = ready(state);
	long long id = graded(v);
	struct reply r;
	char path[128], body[128];

	snprintf(path, sizeof(path), "/v1/submissions/%lld/regrade", id);
	call(&v->main, "POST", path, v->a.submit, NULL, NULL, &r);
	expect_error(&r, 403, "forbidden");
	reply_free(&r);
	/* A version of another assignment; a version that does not exist. */
	snprintf(path, sizeof(path), "/v1/assignments/%lld", v->a.assignment);
	call(&v->main, "GET", path, v->a.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	long long other_version = int_at(&r, "version_id");
	reply_free(&r);
	assert_true(other_version != v->api_version);
	snprintf(path, sizeof(path), "/v1/submissions/%lld/regrade", id);
	snprintf(body, sizeof(body), "{\"version_id\":%lld}", other_version);
	call(&v->main, "POST", path, v->a.instructor, body, NULL, &r);
	expect_error(&r, 422, "invalid_input");
	reply_free(&r);
	call(&v->main, "POST", path, v->a.instructor, "{\"version_id\":999999}", NULL, &r);
	expect_error(&r, 404, "not_found");
	reply_free(&r);
	call(&v->main, "POST", path, v->a.instructor, "{\"version\":1}", NULL, &r);
	expect_error(&r, 422, "invalid_input");
	reply_free(&r);

	/* The regrade: a new job, then a second result beside the first. */
	long long first_job = json_integer_value(at(v->graded_doc, "service.job_id"));
	call(&v->main, "POST", path, v->a.instructor, NULL, NULL, &r); /* its latest version */
	expect_status(&r, 202);
	long long job = int_at(&r, "job_id");
	assert_true(job != first_job);
	assert_int_equal(int_at(&r, "submission_id"), id);
	assert_int_equal(int_at(&r, "version_id"), v->api_version);
	assert_string_equal(str_at(&r, "state"), "queued");
	reply_free(&r);
	wait_verdict(&v->main, v->a.instructor, id, job, &r);
	assert_string_equal(str_at(&r, "service.state"), "done");
	assert_string_equal(str_at(&r, "status"), "graded");
	reply_free(&r);

	snprintf(path, sizeof(path), "/v1/submissions/%lld/results", id);
	call(&v->main, "GET", path, v->a.instructor, NULL, NULL, &r);
	expect_status(&r, 200);
	assert_int_equal(int_at(&r, "submission_id"), id);
	json_t *list = at(r.json, "results");
	assert_int_equal(json_array_size(list), 2);
	json_t *r0 = json_array_get(list, 0), *r1 = json_array_get(list, 1);
	assert_int_equal(json_integer_value(json_object_get(r0, "job_id")), first_job);
	assert_int_equal(json_integer_value(json_object_get(r1, "job_id")), job);
	assert_true(json_number_value(json_object_get(r0, "score")) == 10.0);
	assert_true(json_number_value(json_object_get(r1, "score")) == 10.0);
	assert_true(json_is_false(json_object_get(r1, "score_changed")));
	assert_true(json_is_number(json_object_get(r1, "cpu_seconds")));
	assert_true(json_integer_value(json_object_get(r1, "result_id")) >
		    json_integer_value(json_object_get(r0, "result_id")));
	reply_free(&r);
}

/* A loopback port that nothing listens on (bound, then closed). */
static int dead_port(void)
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

static int cli(struct proc_out *o, char *const *args)
{
	harness_run(o, NULL, 180, args);
	return o->exit_status;
}

static void test_service_cli_exit_statuses(void **state)
{
	struct env *v = ready(state);
	long long id = graded(v), waiting = pending(v);
	struct proc_out o;
	char sid[32], wid[32], aid[32], down[64];
	const char *sub = EXAMPLES_DIR "/python-pytest/submissions/correct";

	snprintf(sid, sizeof(sid), "%lld", id);
	snprintf(wid, sizeof(wid), "%lld", waiting);
	snprintf(aid, sizeof(aid), "%lld", v->a.assignment);
	snprintf(down, sizeof(down), "http://127.0.0.1:%d", dead_port());

	/* results: 0 with the document when there is a verdict. */
	char *results[] = {"results", "--server", v->main.base, "--token", v->a.instructor,
			   "--wait",  "30",	  sid,		NULL};
	if (cli(&o, results) != 0)
		fail_msg("proctor results: exit %d: %s", o.exit_status, o.err);
	assert_non_null(o.json);
	assert_string_equal(jstr(&o, "status"), "graded");
	assert_string_equal(json_string_value(at(o.json, "service.state")), "done");
	proc_out_free(&o);
	char *status[] = {"status",	   "--server", v->main.base, "--token",
			  v->a.instructor, sid,	       NULL};
	assert_int_equal(cli(&o, status), 0);
	char want[64];
	snprintf(want, sizeof(want), "%lld done graded 10/10", id);
	assert_string_equal(harness_trim(o.out), want);
	proc_out_free(&o);

	/* 4 while it has none (the pending server has no workers). */
	char *pend[] = {"results", "--server", v->pending.base, "--token", v->p.instructor,
			wid,	   NULL};
	if (cli(&o, pend) != 4)
		fail_msg("proctor results of a queued submission: exit %d, want 4: %s",
			 o.exit_status, o.err);
	assert_string_equal(json_string_value(at(o.json, "service.state")), "queued");
	proc_out_free(&o);
	char *pend_status[] = {"status", "--server", v->pending.base, "--token", v->p.instructor,
			       wid,	 NULL};
	assert_int_equal(cli(&o, pend_status), 0);
	assert_non_null(strstr(o.out, " queued "));
	proc_out_free(&o);

	/* submit: 0 and the id; 2 on a 4xx; 3 on a 429 and when the server is down. */
	char *ok[] = {"submit", "--server",  v->main.base, "--token",	v->a.submit, "--assignment",
		      aid,	"--student", "erin",	   (char *)sub, NULL};
	if (cli(&o, ok) != 0)
		fail_msg("proctor submit: exit %d: %s", o.exit_status, o.err);
	assert_true(atoll(o.out) > 0);
	proc_out_free(&o);
	char *unknown[] = {"submit",	   "--server", v->main.base, "--token", v->a.submit,
			   "--assignment", "999999",   (char *)sub,  NULL};
	assert_int_equal(cli(&o, unknown), 2);
	assert_non_null(strstr(o.err, "404"));
	proc_out_free(&o);
	char *bad_token[] = {"submit",	     "--server", v->main.base, "--token", "prt_nope",
			     "--assignment", aid,	 (char *)sub,  NULL};
	assert_int_equal(cli(&o, bad_token), 2);
	assert_non_null(strstr(o.err, "401"));
	proc_out_free(&o);
	char pend_aid[32];
	snprintf(pend_aid, sizeof(pend_aid), "%lld", v->p.assignment);
	char *busy[] = {"submit",	"--server", v->pending.base, "--token", v->p.submit,
			"--assignment", pend_aid,   (char *)sub,     NULL};
	assert_int_equal(cli(&o, busy), 3);
	assert_non_null(strstr(o.err, "429"));
	proc_out_free(&o);
	char *nobody[] = {"submit",	  "--server", down,	   "--token", v->a.submit,
			  "--assignment", aid,	      (char *)sub, NULL};
	assert_int_equal(cli(&o, nobody), 3);
	proc_out_free(&o);
	char *nobody_results[] = {"results", "--server", down, "--token", v->a.submit, sid, NULL};
	assert_int_equal(cli(&o, nobody_results), 3);
	proc_out_free(&o);
}

/* ---- the server against docs/openapi.yaml ----------------------------------------- */

/* "/v1/submissions/{id}/results" with every parameter 1. */
static void instantiate(const char *tmpl, char *out, size_t cap)
{
	size_t n = 0;

	for (const char *p = tmpl; *p && n + 2 < cap; p++) {
		if (*p == '{') {
			out[n++] = '1';
			p += strcspn(p, "}");
			if (!*p)
				break;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
}

/* Path literals of the router (src/service/api.c): "/v1/submissions/", "/results", ... */
static size_t route_literals(char lits[][96], size_t cap)
{
	char *src = harness_read(SERVICE_API_C, NULL);
	size_t n = 0;

	for (const char *p = src; (p = strstr(p, "\"/")) && n < cap; p++) {
		size_t len = strcspn(p + 1, "\"");
		const char *s = p + 1;
		if (len < 2 || len >= 90 ||
		    strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789/_-") != len)
			continue;
		snprintf(lits[n], 96, "%.*s", (int)len, s);
		n++;
	}
	free(src);
	return n;
}

static void test_service_matches_openapi(void **state)
{
	struct env *v = ready(state);
	static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "PATCH"};
	struct reply r;
	char path[256];

	assert_true(n_ops >= 10);
	/* Every operation of the spec is answered (without a token: 401, or
	 * 200 where the spec says no security). */
	for (size_t i = 0; i < n_ops; i++) {
		instantiate(ops[i].path, path, sizeof(path));
		bool has_body =
		    strcmp(ops[i].method, "POST") == 0 || strcmp(ops[i].method, "PUT") == 0;
		call(&v->main, ops[i].method, path, NULL, has_body ? "{}" : NULL, NULL, &r);
		if (no_route(&r))
			fail_msg("the spec's %s %s: the server has no such route", ops[i].method,
				 ops[i].path);
		if (ops[i].open ? r.status != 200 : r.status != 401)
			fail_msg("%s %s without a token: %ld; the spec says %s", ops[i].method,
				 ops[i].path, r.status,
				 ops[i].open ? "no security (200)" : "bearer (401)");
		reply_free(&r);
	}

	/* Every route the server answers is in the spec: probe the spec's paths
	 * and the router's own literals with every method. */
	char lits[128][96], cand[512][160];
	size_t n_lits = route_literals(lits, 128), n_cand = 0;
	assert_true(n_lits >= 8);
	for (size_t i = 0; i < n_ops && n_cand < 512; i++)
		instantiate(ops[i].path, cand[n_cand++], sizeof(cand[0]));
	for (size_t l = 0; l < n_lits && n_cand < 512; l++) {
		snprintf(cand[n_cand++], sizeof(cand[0]), "%s%s", lits[l],
			 lits[l][strlen(lits[l]) - 1] == '/' ? "1" : "");
		for (size_t i = 0; i < n_ops && n_cand < 512; i++) {
			if (!strchr(ops[i].path, '{'))
				continue;
			char base[160];
			instantiate(ops[i].path, base, sizeof(base));
			snprintf(cand[n_cand++], sizeof(cand[0]), "%s%s", base, lits[l]);
		}
	}
	for (size_t c = 0; c < n_cand; c++)
		for (size_t m = 0; m < sizeof(methods) / sizeof(methods[0]); m++) {
			bool in_spec = spec_op(methods[m], cand[c]) != NULL;
			bool has_body =
			    strcmp(methods[m], "POST") == 0 || strcmp(methods[m], "PUT") == 0;
			call(&v->main, methods[m], cand[c], NULL, has_body ? "{}" : NULL, NULL, &r);
			bool answered = !no_route(&r);
			if (r.status == 404 && !r.json)
				fail_msg("%s %s: a 404 that is not a JSON error", methods[m],
					 cand[c]);
			if (answered != in_spec)
				fail_msg("%s %s: the server %s it, the spec %s it (%ld %s)",
					 methods[m], cand[c],
					 answered ? "answers" : "has no route for",
					 in_spec ? "has" : "lacks", r.status, r.body ? r.body : "");
			reply_free(&r);
		}

	/* Every status the tests saw (this group and the ones before) is declared. */
	for (size_t i = 0; i < n_seen; i++) {
		char code[8];
		snprintf(code, sizeof(code), "%ld", seen[i].status);
		if (!json_object_get(seen[i].op->responses, code))
			fail_msg("%s %s answered %ld, which docs/openapi.yaml does not declare",
				 seen[i].op->method, seen[i].op->path, seen[i].status);
	}
	/* Every error schema reference resolves to {"error": {"code", "message"}}. */
	json_t *err = at(spec, "components.schemas.Error.properties.error.required");
	assert_int_equal(json_array_size(err), 2);
}

static void test_service_stops_cleanly_leaving_no_sandbox(void **state)
{
	struct env *v = ready(state);
	int main_status = server_stop(&v->main, 60000);
	/* A poll waiting when the server stops gets its last answer (the
	 * submission as it stands), not a closed connection. */
	int fd = raw_poll(v, 0x7f000001u);
	harness_sleep_ms(300);
	int pending_status = server_stop(&v->pending, 60000);
	char head[64] = "";
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	if (poll(&pfd, 1, 10000) == 1)
		(void)!read(fd, head, sizeof(head) - 1);
	close(fd);
	if (strncmp(head, "HTTP/1.1 200", 12) != 0)
		fail_msg("a poll waiting while the server stopped got '%.40s', want HTTP/1.1 200",
			 head);

	if (main_status != 0 || pending_status != 0) {
		print_log(&v->main);
		print_log(&v->pending);
		fail_msg("after SIGTERM: main server %d, pending server %d (want 0; -1: killed)",
			 main_status, pending_status);
	}
	harness_assert_clean();
}

/* ---- groups --------------------------------------------------------------------------- */

static int setup_sqlite(void **state)
{
	*state = &sqlite_env;
	sqlite_env.tmp = strdup("/tmp/proctor-svctest.XXXXXX");
	return sqlite_env.tmp && mkdtemp(sqlite_env.tmp) ? 0 : -1;
}

static int setup_pg(void **state)
{
	*state = &pg_env;
	pg_env.tmp = strdup("/tmp/proctor-svctest.XXXXXX");
	if (!pg_env.tmp || !mkdtemp(pg_env.tmp))
		return -1;
	return pgtest_group_start(&pg_env.pg, pg_env.skip, sizeof(pg_env.skip));
}

static int teardown(void **state)
{
	struct env *v = *state;

	/* Only if a test failed before the last one stopped them. */
	if (server_stop(&v->main, 30000) != 0 || server_stop(&v->pending, 30000) != 0) {
		print_log(&v->main);
		print_log(&v->pending);
	}
	end_orphans();
	pgtest_stop(v->pg);
	v->pg = NULL;
	if (v->graded_doc)
		json_decref(v->graded_doc);
	v->graded_doc = NULL;
	if (v->tmp)
		harness_rm_tree(v->tmp);
	free(v->tmp);
	v->tmp = NULL;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_service_upload_submit_and_long_poll),
	    cmocka_unit_test(test_service_every_format_with_every_scope),
	    cmocka_unit_test(test_service_health_ready_and_metrics_need_no_token),
	    cmocka_unit_test(test_service_long_polls_hold_no_thread),
	    cmocka_unit_test(test_service_tokens_and_scopes),
	    cmocka_unit_test(test_service_token_of_another_course_sees_nothing),
	    cmocka_unit_test(test_service_list_submissions_by_student),
	    cmocka_unit_test(test_service_idempotency_key_returns_the_same_submission),
	    cmocka_unit_test(test_service_bad_requests_have_stable_codes),
	    cmocka_unit_test(test_service_callback_url_with_a_bad_scheme_is_422),
	    cmocka_unit_test(test_service_oversized_uploads_are_413),
	    cmocka_unit_test(test_service_zip_bomb_is_rejected_by_intake),
	    cmocka_unit_test(test_service_full_queue_is_429_with_retry_after),
	    cmocka_unit_test(test_service_policy_limits_submissions_and_the_gradebook_shows_them),
	    cmocka_unit_test(test_service_batch_answers_each_submission),
	    cmocka_unit_test(test_service_budget_cap_refuses_until_an_admin_lifts_it),
	    cmocka_unit_test(test_service_regrade_adds_a_second_result),
	    cmocka_unit_test(test_service_assignment_regrade_says_which_scores_changed),
	    cmocka_unit_test(test_service_cli_exit_statuses),
	    cmocka_unit_test(test_service_matches_openapi),
	    cmocka_unit_test(test_service_stops_cleanly_leaving_no_sandbox),
	};

	curl_global_init(CURL_GLOBAL_DEFAULT);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	load_spec();
	int failed = cmocka_run_group_tests_name("service_sqlite", tests, setup_sqlite, teardown);
	failed += cmocka_run_group_tests_name("service_postgresql", tests, setup_pg, teardown);
	json_decref(spec);
	curl_global_cleanup();
	return failed ? 1 : 0;
}
