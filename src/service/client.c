/* proctor submit, status and results: thin clients of the service's HTTP API (libcurl). */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "digest.h"
#include "dynbuf.h"
#include "service/commands.h"
#include "service/pack.h"
#include "util.h"

#define CLIENT_ERRORS                                                                              \
	"  2  usage error, or the server refused the request (4xx: a bad token, an\n"              \
	"     unknown id, an invalid field); the server's message is printed\n"                    \
	"  3  the server failed or cannot be reached (5xx, connection), or it is\n"                \
	"     busy (429: retry after the time printed)"
#define CLIENT_EXIT_STATUS "  0  done\n" CLIENT_ERRORS

/* Largest answer read (a result document with its raw output). */
#define ANSWER_MAX (80u << 20)

static size_t on_data(char *p, size_t size, size_t n, void *ctx)
{
	/* 0 (fewer than given) makes libcurl stop with CURLE_WRITE_ERROR. */
	return dynbuf_add(ctx, p, size * n) == 0 ? size * n : 0;
}

struct client {
	const char *server;
	const char *token;
	long timeout_s;
};

/*
 * One request: 0 with the HTTP status and the parsed JSON answer (NULL if
 * it was not JSON); -1 when no answer came (printed).
 */
static int call(const struct client *c, const char *method, const char *path, const char *body,
		const char *idem_key, long *ret_status, json_t **ret_doc)
{
	char url[4096], auth[256], idem[300];
	struct dynbuf a;
	struct curl_slist *h = NULL;
	CURL *curl = curl_easy_init();
	CURLcode rc;

	if (!curl) {
		fprintf(stderr, "proctor: cannot start libcurl\n");
		return -1;
	}
	dynbuf_init(&a, ANSWER_MAX);
	snprintf(url, sizeof(url), "%s%s", c->server, path);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", c->token ? c->token : "");
	if (c->token)
		h = curl_slist_append(h, auth);
	if (idem_key) {
		snprintf(idem, sizeof(idem), "Idempotency-Key: %s", idem_key);
		h = curl_slist_append(h, idem);
	}
	if (body)
		h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, c->timeout_s);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);
	if (body) {
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body));
	}
	rc = curl_easy_perform(curl);
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, ret_status);
	curl_slist_free_all(h);
	curl_easy_cleanup(curl);
	if (rc != CURLE_OK) {
		fprintf(stderr, "proctor: %s %s: %s\n", method, url,
			a.state == DYNBUF_TOO_LARGE ? "the answer is too large"
						    : curl_easy_strerror(rc));
		dynbuf_free(&a);
		return -1;
	}
	*ret_doc = a.s ? json_loads(a.s, 0, NULL) : NULL;
	dynbuf_free(&a);
	return 0;
}

/* An answer that is not a success: its message, and the exit status. */
static int refused(long status, json_t *doc)
{
	const char *code =
	    json_string_value(json_object_get(json_object_get(doc, "error"), "code"));
	const char *msg =
	    json_string_value(json_object_get(json_object_get(doc, "error"), "message"));

	fprintf(stderr, "proctor: the server answered %ld%s%s%s%s\n", status, code ? " " : "",
		code ? code : "", msg ? ": " : "", msg ? msg : "");
	/* The exit status of the code's kind (err.c's one table); a code this
	 * client does not know (a newer server's) by its HTTP status alike:
	 * the caller's request 2, retry later (429, 5xx) 3. */
	int exit_status = status >= 400 && status < 500 && status != 429 ? 2 : 3;
	enum err_kind kind = err_kind_of_code(code);
	if (kind != ERR_INTERNAL)
		exit_status = err_exit_status(kind);
	json_decref(doc);
	return exit_status;
}

static int print_doc(json_t *doc)
{
	int rc = json_dumpf(doc, stdout, JSON_INDENT(2)) == 0 ? 0 : 3;

	fputc('\n', stdout);
	return rc;
}

static int client_env(struct client *c)
{
	if (!c->server)
		c->server = getenv("PROCTOR_SERVER");
	if (!c->token)
		c->token = getenv("PROCTOR_TOKEN");
	if (!c->server || !*c->server)
		return cli_usage_error("--server URL (or $PROCTOR_SERVER) is required");
	if (!c->token || !*c->token)
		return cli_usage_error("--token TOKEN (or $PROCTOR_TOKEN) is required");
	return 0;
}

#define CLIENT_OPTIONS(c)                                                                          \
	{.name = "server",                                                                         \
	 .kind = CLI_STRING,                                                                       \
	 .value_name = "URL",                                                                      \
	 .dest = &(c).server,                                                                      \
	 .help = "the service, e.g. http://127.0.0.1:8080 ($PROCTOR_SERVER)"},                     \
	{                                                                                          \
		.name = "token", .kind = CLI_STRING, .value_name = "TOKEN", .dest = &(c).token,    \
		.help = "a bearer token of the course ($PROCTOR_TOKEN)"                            \
	}

int cmd_submit(int argc, char **argv)
{
	struct client c = {.timeout_s = 300};
	const char *student = NULL, *callback = NULL, *key = NULL;
	unsigned assignment = 0;
	const struct cli_option opts[] = {
	    CLIENT_OPTIONS(c),
	    {.name = "assignment",
	     .kind = CLI_UINT,
	     .value_name = "ID",
	     .dest = &assignment,
	     .min = 1,
	     .max = 4000000000u,
	     .help = "the assignment's id (proctor admin assignment prints it)"},
	    {.name = "student",
	     .kind = CLI_STRING,
	     .value_name = "S",
	     .dest = &student,
	     .help = "the student's label"},
	    {.name = "callback",
	     .kind = CLI_STRING,
	     .value_name = "URL",
	     .dest = &callback,
	     .help = "POST the result here when it is recorded (signed)"},
	    {.name = "idempotency-key",
	     .kind = CLI_STRING,
	     .value_name = "KEY",
	     .dest = &key,
	     .help = "a retried submit with the same KEY returns the same id"},
	};
	const struct cli_command cmd = {
	    .name = "submit",
	    .synopsis = "--assignment ID FILE_OR_DIR",
	    .about = "Submit a file, a directory or an archive (.zip, .tar, .tar.gz) to the\n"
		     "service and print the new submission's id.",
	    .options = opts,
	    .n_options = sizeof(opts) / sizeof(opts[0]),
	    .exit_status = CLIENT_EXIT_STATUS,
	    .operands = "one FILE_OR_DIR",
	    .min_operands = 1,
	    .max_operands = 1};
	struct err e;
	void *data = NULL;
	size_t len = 0;
	long status = 0;
	json_t *doc = NULL;
	int n, r;

	r = cli_parse(&cmd, argc, argv, &n);
	if (r != CLI_OK)
		return cli_exit_status(r);
	if ((r = client_env(&c)) != 0)
		return r;
	if (!assignment)
		return cli_usage_error("submit: --assignment ID is required");
	if (pack_path(argv[1], 256ull << 20, &data, &len, &e) < 0)
		return cli_usage_error("submit: %s", e.msg);
	char *b64 = base64_of(data, len);
	free(data);
	json_t *req =
	    b64 ? json_pack("{s:I, s:s?, s:s?, s:s}", "assignment", (json_int_t)assignment,
			    "student", student, "callback_url", callback, "archive", b64)
		: NULL;
	free(b64);
	char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!body) {
		fprintf(stderr, "proctor: submit: out of memory\n");
		return 3;
	}
	r = call(&c, "POST", "/v1/submissions", body, key, &status, &doc);
	free(body);
	if (r < 0)
		return 3;
	if (status != 200 && status != 202)
		return refused(status, doc);
	printf("%lld\n", (long long)json_integer_value(json_object_get(doc, "submission_id")));
	json_decref(doc);
	return 0;
}

/* A verdict: a result document's status (a regrade pending beside it
 * changes nothing), or the job ended. */
static bool has_verdict(const json_t *doc)
{
	const char *state =
	    json_string_value(json_object_get(json_object_get(doc, "service"), "state"));
	return json_is_string(json_object_get(doc, "status")) ||
	       (state && (strcmp(state, "done") == 0 || strcmp(state, "error") == 0));
}

/* GET a submission, waiting up to wait_s for a verdict (in server-capped steps). */
static int fetch(struct client *c, const char *id, unsigned wait_s, json_t **ret)
{
	char path[128];
	long status = 0;
	json_t *doc = NULL;
	uint64_t deadline = now_ns() + (uint64_t)wait_s * 1000000000ull;
	char *end;

	errno = 0;
	long long v = strtoll(id, &end, 10);
	if (!*id || *end || v <= 0 || errno)
		return cli_usage_error("'%s' is not a submission id", id);
	for (;;) {
		uint64_t now = now_ns();
		/* Whole seconds, rounded up: the server waits at least a second
		 * while any time is left, so the loop never spins. */
		unsigned left = now < deadline
				    ? (unsigned)((deadline - now + 999999999ull) / 1000000000ull)
				    : 0;
		snprintf(path, sizeof(path), "/v1/submissions/%lld?wait=%u", v, left);
		c->timeout_s = (long)left + 30;
		if (call(c, "GET", path, NULL, NULL, &status, &doc) < 0)
			return 3;
		if (status != 200)
			return refused(status, doc);
		const char *state =
		    json_string_value(json_object_get(json_object_get(doc, "service"), "state"));
		if (!state || has_verdict(doc) || now_ns() >= deadline) {
			*ret = doc;
			return 0;
		}
		json_decref(doc);
	}
}

static int show(int argc, char **argv, bool results)
{
	struct client c = {0};
	unsigned wait_s = 0;
	bool json = false;
	const struct cli_option opts[] = {
	    CLIENT_OPTIONS(c),
	    {.name = "wait",
	     .kind = CLI_UINT,
	     .value_name = "SECONDS",
	     .dest = &wait_s,
	     .max = 86400,
	     .help = "wait up to SECONDS for a verdict"},
	    CLI_OPTION_JSON(&json, "the whole document"),
	};
	const struct cli_command cmd = {
	    .name = results ? "results" : "status",
	    .synopsis = "ID",
	    .about = results ? "Print a submission's result document (docs/result.md) with the "
			       "service's\nfields under \"service\" (docs/api.md)."
			     : "Print one line: the submission's id, state, status and score.",
	    .options = opts,
	    .n_options = sizeof(opts) / sizeof(opts[0]) - (results ? 1 : 0),
	    .exit_status = results
			       ? "  0  the submission has a verdict (printed)\n"
				 "  4  it has none yet (still queued or running)\n" CLIENT_ERRORS
			       : CLIENT_EXIT_STATUS,
	    .operands = "one ID",
	    .min_operands = 1,
	    .max_operands = 1};
	json_t *doc = NULL;
	int n, r;

	r = cli_parse(&cmd, argc, argv, &n);
	if (r != CLI_OK)
		return cli_exit_status(r);
	if ((r = client_env(&c)) != 0)
		return r;
	if ((r = fetch(&c, argv[1], wait_s, &doc)) != 0)
		return r;
	bool verdict = has_verdict(doc);
	if (results || json) {
		r = print_doc(doc);
	} else {
		json_t *svc = json_object_get(doc, "service");
		printf("%lld %s %s %g/%g\n",
		       (long long)json_integer_value(json_object_get(svc, "submission_id")),
		       json_string_value(json_object_get(svc, "state")),
		       json_is_string(json_object_get(doc, "status"))
			   ? json_string_value(json_object_get(doc, "status"))
			   : "-",
		       json_number_value(json_object_get(doc, "score")),
		       json_number_value(json_object_get(doc, "max_score")));
		r = 0;
	}
	json_decref(doc);
	if (r)
		return r;
	return results && !verdict ? 4 : 0;
}

int cmd_status(int argc, char **argv)
{
	return show(argc, argv, false);
}

int cmd_results(int argc, char **argv)
{
	return show(argc, argv, true);
}

/* ---- proctor sandbox ---- */

/* A JSON body: the document's text, or NULL (printed) when out of memory. */
static char *body_of(json_t *doc)
{
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;

	json_decref(doc);
	if (!text)
		fprintf(stderr, "proctor: sandbox: out of memory\n");
	return text;
}

/* The argv operands as a JSON array. */
static json_t *argv_json(int argc, char **argv)
{
	json_t *a = json_array();

	for (int i = 0; a && i < argc; i++)
		json_array_append_new(a, json_string(argv[i]));
	return a;
}

/* Run argv in sandbox `id` and pass its output through: the program's exit
 * status (128 + a signal, 3 when Proctor failed), or an error's. */
static int sandbox_exec(const struct client *c, long long id, int argc, char **argv,
			unsigned timeout_ms, bool json)
{
	char path[96];
	long status = 0;
	json_t *doc = NULL;

	snprintf(path, sizeof(path), "/v1/sandboxes/%lld/exec", id);
	char *body = body_of(json_pack("{s:o, s:I}", "argv", argv_json(argc, argv), "timeout_ms",
				       (json_int_t)timeout_ms));
	if (!body)
		return 3;
	int r = call(c, "POST", path, body, NULL, &status, &doc);
	free(body);
	if (r < 0)
		return 3;
	if (status != 200)
		return refused(status, doc);
	if (json) {
		r = print_doc(doc);
		json_decref(doc);
		return r;
	}
	const char *out = json_string_value(json_object_get(doc, "stdout"));
	const char *err = json_string_value(json_object_get(doc, "stderr"));
	const char *verdict = json_string_value(json_object_get(doc, "status"));
	json_t *code = json_object_get(doc, "exit_code"), *sig = json_object_get(doc, "signal");
	fputs(out ? out : "", stdout);
	fputs(err ? err : "", stderr);
	fflush(stdout);
	if (verdict && strcmp(verdict, "ok") != 0 && strcmp(verdict, "nonzero_exit") != 0)
		fprintf(stderr, "proctor: sandbox: %s%s%s\n", verdict,
			json_is_string(json_object_get(doc, "limit")) ? ", limit " : "",
			json_is_string(json_object_get(doc, "limit"))
			    ? json_string_value(json_object_get(doc, "limit"))
			    : "");
	r = json_is_integer(code)  ? (int)json_integer_value(code)
	    : json_is_integer(sig) ? 128 + (int)json_integer_value(sig)
	    : verdict && strcmp(verdict, "error") == 0 ? 3
						       : 1;
	json_decref(doc);
	return r;
}

static int sandbox_delete(const struct client *c, long long id)
{
	char path[96];
	long status = 0;
	json_t *doc = NULL;

	snprintf(path, sizeof(path), "/v1/sandboxes/%lld", id);
	if (call(c, "DELETE", path, NULL, NULL, &status, &doc) < 0)
		return 3;
	if (status != 200)
		return refused(status, doc);
	json_decref(doc);
	return 0;
}

static int sandbox_id(const char *text, long long *ret)
{
	uint64_t v;

	if (parse_u64(text, strlen(text), &v) < 0 || v == 0 || v > INT64_MAX)
		return cli_usage_error("sandbox: '%s' is not a sandbox id", text);
	*ret = (long long)v;
	return 0;
}

int cmd_sandbox(int argc, char **argv)
{
	struct client c = {.timeout_s = 3700};
	const char *image = NULL, *template = NULL;
	unsigned memory = 512, timeout_ms = 60000, lease = 600, wait_ms = 0;
	bool json = false;
	const struct cli_option opts[] = {
	    CLIENT_OPTIONS(c),
	    {.name = "image",
	     .kind = CLI_STRING,
	     .value_name = "PIN",
	     .dest = &image,
	     .help = "run: the image (name@N; default the host's system)"},
	    {.name = "template",
	     .kind = CLI_STRING,
	     .value_name = "NAME[@N]",
	     .dest = &template,
	     .help = "run: start from this template of the course (the latest\nversion without @N)"},
	    {.name = "wait-ms",
	     .kind = CLI_UINT,
	     .value_name = "MS",
	     .dest = &wait_ms,
	     .min = 0,
	     .max = 600000,
	     .help = "run: wait in line this long for room on a full server\n(default 0: "
		     "refused at once, exit status 3)"},
	    {.name = "memory-mib",
	     .kind = CLI_UINT,
	     .value_name = "N",
	     .dest = &memory,
	     .min = 16,
	     .max = 65536,
	     .help = "run: the sandbox's memory limit (default 512)"},
	    {.name = "timeout-ms",
	     .kind = CLI_UINT,
	     .value_name = "MS",
	     .dest = &timeout_ms,
	     .min = 1,
	     .max = 3600000,
	     .help = "run, exec: the command's wall-clock limit (default 60000)"},
	    {.name = "lease",
	     .kind = CLI_UINT,
	     .value_name = "SECONDS",
	     .dest = &lease,
	     .min = 1,
	     .max = 86400,
	     .help = "run: the sandbox's lease (default 600)"},
	    CLI_OPTION_JSON(&json, "run, exec: the command's whole document; ls: the sandboxes"),
	};
	const struct cli_command cmd = {
	    .name = "sandbox",
	    .synopsis = "run [--image PIN] [--template T] -- CMD... | exec ID -- CMD... | ls | "
			"kill ID",
	    .about = "Sandboxes on the service (docs/api.md, \"Sandboxes\").  run: one command\n"
		     "in a fresh sandbox, destroyed after; exec: one command in a live sandbox;\n"
		     "ls: the course's live sandboxes; kill: destroy one.",
	    .options = opts,
	    .n_options = sizeof(opts) / sizeof(opts[0]),
	    .exit_status = "  N  run, exec: the command's exit status (128 + a signal that ended it)\n"
			   "  0  ls, kill: done\n" CLIENT_ERRORS,
	    .operands = "a verb and its operands",
	    .min_operands = 1,
	    .max_operands = -1};
	long status = 0;
	json_t *doc = NULL;
	long long id = 0;
	int n, r;

	r = cli_parse(&cmd, argc, argv, &n);
	if (r != CLI_OK)
		return cli_exit_status(r);
	if ((r = client_env(&c)) != 0)
		return r;
	const char *verb = argv[1];
	if (strcmp(verb, "run") == 0) {
		/* The operands are argv[1..n]: the verb, then the command. */
		if (n < 2)
			return cli_usage_error("sandbox run: a command is required: run -- CMD...");
		char *body = body_of(json_pack(
		    "{s:s, s:I, s:I, s:s?, s:I}", "image", image ? image : "host", "memory_mib",
		    (json_int_t)memory, "timeout_seconds", (json_int_t)lease, "template", template,
		    "wait_for_capacity_ms", (json_int_t)wait_ms));
		if (!body)
			return 3;
		r = call(&c, "POST", "/v1/sandboxes", body, NULL, &status, &doc);
		free(body);
		if (r < 0)
			return 3;
		if (status != 201)
			return refused(status, doc);
		id = (long long)json_integer_value(json_object_get(doc, "id"));
		json_decref(doc);
		r = sandbox_exec(&c, id, n - 1, argv + 2, timeout_ms, json);
		/* Destroyed whatever the command did: its lease would end it
		 * anyway, but not before it is due. */
		sandbox_delete(&c, id);
		return r;
	}
	if (strcmp(verb, "exec") == 0) {
		if (n < 3)
			return cli_usage_error("sandbox exec: exec ID -- CMD...");
		if ((r = sandbox_id(argv[2], &id)) != 0)
			return r;
		return sandbox_exec(&c, id, n - 2, argv + 3, timeout_ms, json);
	}
	if (strcmp(verb, "kill") == 0) {
		if (n != 2)
			return cli_usage_error("sandbox kill: kill ID");
		if ((r = sandbox_id(argv[2], &id)) != 0)
			return r;
		return sandbox_delete(&c, id);
	}
	if (strcmp(verb, "ls") == 0) {
		if (n != 1)
			return cli_usage_error("sandbox ls takes no operand");
		if (call(&c, "GET", "/v1/sandboxes?live=1", NULL, NULL, &status, &doc) < 0)
			return 3;
		if (status != 200)
			return refused(status, doc);
		if (json) {
			r = print_doc(doc);
			json_decref(doc);
			return r;
		}
		size_t i;
		json_t *s;
		json_array_foreach(json_object_get(doc, "sandboxes"), i, s)
		{
			printf("%lld %s %s lease_end_ms=%lld\n",
			       (long long)json_integer_value(json_object_get(s, "id")),
			       json_string_value(json_object_get(s, "state")),
			       json_string_value(json_object_get(s, "image")),
			       (long long)json_integer_value(json_object_get(s, "lease_end_ms")));
		}
		json_decref(doc);
		return 0;
	}
	return cli_usage_error("sandbox: '%s' is not run, exec, ls or kill", verb);
}
