/* Integration tests: the hostile corpus's submissions through `proctor run --json`. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

/*
 * Each test hands one corpus submission to `proctor run` exactly as a grader
 * would (the assignment's limits, its student-file allowlist, its hidden
 * tests), fetches the JUnit report, and turns proctor's result plus the report
 * into a verdict in the corpus's vocabulary (README "Verdict rules").  The
 * verdict must be the one cases.tsv expects or one of its alt_verdicts; the
 * tests then check what the case is really about (a limit that must trip,
 * host state that must not change, a canary that must not leak).
 *
 * Expected counts come from cases.tsv, limits and the build and run commands
 * from assignment.conf and test names from tests.list, all read at run time:
 * nothing is typed in twice.  CORPUS is the project's own corpus (a copy of
 * tests/corpus after its generate.sh) or, for test_corpus_shared, another
 * corpus in the same format that has these cases.
 */

#define MAX_ARGS	  64
#define MAX_DECLARED	  64
#define MAX_OK_EXITS	  8
#define MAX_CONF_BYTES	  (64 * 1024)
#define MAX_REPORT_BYTES  (8 * 1024 * 1024)
#define HARNESS_GRACE_S	  60  /* proctor must be done this long after --wall */
#define PROMPT_GRACE_S	  5.0 /* a flood must not delay proctor beyond wall + this */
#define AFTER_EXIT_S	  4.0 /* setup + teardown around the program's own wall time */
#define HOST_DISK_SLACK	  (300ull * 1024 * 1024)
#define REPORT_IN_SANDBOX "/work/report.xml" /* {report} of assignment.conf */

/* One assignment (python/ or c/) of the corpus. */
struct assignment {
	char dir[PATH_MAX]; /* $CORPUS/<lang> */
	char language[32];
	char student_files[256]; /* space-separated allowlist */
	char test_files[256];	 /* space-separated, below tests/ */
	char build[512];	 /* shell command, may be empty */
	char run[512];		 /* command; {report} not yet filled in */
	char cpu[32], wall[32], memory[32], pids[32], fsize[32], disk[32], output[32];
	double wall_s;
	long output_kib;
	int ok_exit[MAX_OK_EXITS]; /* runner exit codes that still count as finished */
	size_t n_ok_exit;
	char *declared[MAX_DECLARED]; /* tests.list; owned */
	size_t n_declared;
};

/* One row of cases.tsv. */
struct expectation {
	char status[32];
	int passed;
	int total;
	char alt[128]; /* "status:passed,..." or "-" */
};

/* What the JUnit report says about the declared tests. */
struct junit_count {
	int testcases; /* <testcase> elements */
	int declared;  /* distinct declared tests present */
	int passed;    /* declared, never with failure, error or skipped */
};

/* A verdict in the corpus's vocabulary. */
struct verdict {
	char status[32]; /* graded, timeout, memory_limit, crashed, error, proctor_error */
	int passed;
};

/* One `proctor run` of one case.  Free with case_run_done(). */
struct case_run {
	const char *name;
	struct assignment a;
	struct expectation e;
	char *tmpdir;	   /* owned; holds the fetched report */
	char *report_path; /* owned */
	struct proc_out out;
	double elapsed_s;
	bool have_report;
	struct junit_count jc;
	struct verdict v;
};

/* ---- small utilities ---------------------------------------------------- */

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	return s;
}

static void copy_str(char *dst, size_t cap, const char *src, const char *what)
{
	if (strlen(src) >= cap)
		fail_msg("%s too long: '%s'", what, src);
	strcpy(dst, src);
}

/* ---- skipping ----------------------------------------------------------- */

/* The corpus directory, or a skip (a failure under PROCTOR_MUST_WORK=1) when
 * the test cannot run here. */
static const char *corpus_or_skip(void)
{
	const char *corpus = getenv("CORPUS");
	const char *why = NULL;

	if (geteuid() != 0)
		why = "the jail needs root";
	else if (!corpus || !*corpus)
		why = "CORPUS is not set (meson configure -Dcorpus_dir=DIR, a copy of tests/corpus "
		      "after generate.sh)";
	if (why) {
		if (!harness_can_skip())
			fail_msg("cannot run the corpus tests: %s", why);
		print_message("[  SKIP    ] %s\n", why);
		skip();
	}
	return corpus;
}

/* ---- the corpus's own files --------------------------------------------- */

static void load_declared(struct assignment *a)
{
	char *path = xasprintf("%s/tests.list", a->dir);
	char *text = harness_slurp(path, MAX_CONF_BYTES, NULL);

	if (!text)
		fail_msg("cannot read %s", path);
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line = harness_trim(line);
		if (!*line || *line == '#')
			continue;
		assert_true(a->n_declared < MAX_DECLARED);
		a->declared[a->n_declared] = strdup(line);
		assert_non_null(a->declared[a->n_declared]);
		a->n_declared++;
	}
	free(text);
	free(path);
	assert_true(a->n_declared > 0);
}

static void load_assignment(struct assignment *a, const char *corpus, const char *lang)
{
	memset(a, 0, sizeof(*a));
	int n = snprintf(a->dir, sizeof(a->dir), "%s/%s", corpus, lang);
	assert_true(n > 0 && (size_t)n < sizeof(a->dir));

	char *path = xasprintf("%s/assignment.conf", a->dir);
	char *text = harness_slurp(path, MAX_CONF_BYTES, NULL);
	if (!text)
		fail_msg("cannot read %s (is CORPUS a copy of tests/corpus?)", path);

	struct {
		const char *key;
		char *dst;
	} limits[] = {
	    {"cpu_s", a->cpu},	      {"wall_s", a->wall},    {"memory_mb", a->memory},
	    {"pids", a->pids},	      {"fsize_mb", a->fsize}, {"disk_mb", a->disk},
	    {"output_kb", a->output},
	};
	char ok_exit[64] = "";
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (*harness_trim(line) == '#' || !eq)
			continue;
		*eq = '\0';
		char *key = harness_trim(line), *val = harness_trim(eq + 1);
		if (strcmp(key, "language") == 0)
			copy_str(a->language, sizeof(a->language), val, key);
		else if (strcmp(key, "student_files") == 0)
			copy_str(a->student_files, sizeof(a->student_files), val, key);
		else if (strcmp(key, "test_files") == 0)
			copy_str(a->test_files, sizeof(a->test_files), val, key);
		else if (strcmp(key, "build") == 0)
			copy_str(a->build, sizeof(a->build), val, key);
		else if (strcmp(key, "run") == 0)
			copy_str(a->run, sizeof(a->run), val, key);
		else if (strcmp(key, "runner_ok_exit") == 0)
			copy_str(ok_exit, sizeof(ok_exit), val, key);
		for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
			if (strcmp(key, limits[i].key) == 0)
				copy_str(limits[i].dst, 32, val, key);
	}
	free(text);

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++)
		if (!*limits[i].dst)
			fail_msg("%s: no %s", path, limits[i].key);
	if (!*a->language || !*a->student_files || !*a->test_files || !*a->run || !*ok_exit)
		fail_msg("%s: language, student_files, test_files, run or runner_ok_exit missing",
			 path);

	char *end;
	a->wall_s = strtod(a->wall, &end);
	assert_true(*end == '\0' && a->wall_s > 0);
	assert_true(harness_parse_int(a->output, 0, 1048576, &a->output_kib));
	char *tok_save = NULL;
	for (char *tok = strtok_r(ok_exit, " ", &tok_save); tok;
	     tok = strtok_r(NULL, " ", &tok_save)) {
		long v = 0;
		assert_true(harness_parse_int(tok, 0, 255, &v));
		assert_true(a->n_ok_exit < MAX_OK_EXITS);
		a->ok_exit[a->n_ok_exit++] = (int)v;
	}
	free(path);
	load_declared(a);
}

static void free_assignment(struct assignment *a)
{
	for (size_t i = 0; i < a->n_declared; i++)
		free(a->declared[i]);
	a->n_declared = 0;
}

static void load_expectation(const struct assignment *a, const char *case_name,
			     struct expectation *e)
{
	char *path = xasprintf("%s/cases.tsv", a->dir);
	char *text = harness_slurp(path, MAX_CONF_BYTES, NULL);
	bool found = false;

	if (!text)
		fail_msg("cannot read %s", path);
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		char *col[5];
		size_t n = 0;
		char *p = line;
		while (n < 5) {
			col[n++] = p;
			p = strchr(p, '\t');
			if (!p)
				break;
			*p++ = '\0';
		}
		if (n < 5 || strcmp(col[0], case_name) != 0)
			continue;
		long passed = 0, total = 0;
		if (!harness_parse_int(col[2], 0, 1000, &passed) ||
		    !harness_parse_int(col[3], 1, 1000, &total))
			fail_msg("%s: bad counts for %s", path, case_name);
		copy_str(e->status, sizeof(e->status), col[1], "expected_status");
		copy_str(e->alt, sizeof(e->alt), harness_trim(col[4]), "alt_verdicts");
		e->passed = (int)passed;
		e->total = (int)total;
		found = true;
	}
	free(text);
	if (!found)
		fail_msg("%s has no row for %s", path, case_name);
	free(path);
	if ((size_t)e->total != a->n_declared)
		fail_msg("%s: expected_total %d but tests.list declares %zu", case_name, e->total,
			 a->n_declared);
}

/* ---- the JUnit report --------------------------------------------------- */

static bool has(const char *from, const char *to, const char *needle)
{
	return memmem(from, (size_t)(to - from), needle, strlen(needle)) != NULL;
}

/* Substring counting, not XML parsing: each "<testcase" up to the next one is
 * a test; it passed if it holds no <failure, <error or <skipped.  Only tests
 * named in tests.list count, each once; a declared test that fails anywhere
 * fails. */
static void junit_count(const char *xml, size_t len, const struct assignment *a,
			struct junit_count *c)
{
	static const char tag[] = "<testcase";
	const size_t tag_len = sizeof(tag) - 1;
	const char *end = xml + len;
	bool seen[MAX_DECLARED] = {false}, failed[MAX_DECLARED] = {false};

	memset(c, 0, sizeof(*c));
	const char *p = memmem(xml, len, tag, tag_len);
	while (p) {
		const char *body = p + tag_len;
		const char *next = memmem(body, (size_t)(end - body), tag, tag_len);
		const char *seg_end = next ? next : end;
		if (body < end && *body != ' ' && *body != '\t' && *body != '\n' && *body != '>' &&
		    *body != '/') {
			p = next; /* "<testcases" or such: not ours */
			continue;
		}
		c->testcases++;
		const char *tag_end = memchr(body, '>', (size_t)(seg_end - body));
		if (!tag_end)
			tag_end = seg_end;
		const char *name = memmem(body, (size_t)(tag_end - body), " name=\"", 7);
		if (name) {
			name += 7;
			const char *q = memchr(name, '"', (size_t)(tag_end - name));
			size_t nlen = q ? (size_t)(q - name) : 0;
			bool bad = has(body, seg_end, "<failure") || has(body, seg_end, "<error") ||
				   has(body, seg_end, "<skipped");
			for (size_t i = 0; q && i < a->n_declared; i++) {
				if (strlen(a->declared[i]) == nlen &&
				    memcmp(a->declared[i], name, nlen) == 0) {
					seen[i] = true;
					failed[i] = failed[i] || bad;
				}
			}
		}
		p = next;
	}
	for (size_t i = 0; i < a->n_declared; i++) {
		c->declared += seen[i];
		c->passed += seen[i] && !failed[i];
	}
}

/* ---- running a case ----------------------------------------------------- */

struct argv_buf {
	char *v[MAX_ARGS + 1];
	size_t n;
};

static void argv_add(struct argv_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void argv_add(struct argv_buf *b, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	assert_true(b->n < MAX_ARGS);
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	assert_true(n >= 0);
	b->v[b->n++] = s;
	b->v[b->n] = NULL;
}

static void argv_free(struct argv_buf *b)
{
	for (size_t i = 0; i < b->n; i++)
		free(b->v[i]);
	b->n = 0;
}

/* Print what a failing check needs to be understood, then fail. */
static void dump_run(const struct case_run *r)
{
	const int cap = 3000;

	fprintf(stderr,
		"--- %s: proctor exit %d after %.1f s; report %s (%d testcases, %d declared, "
		"%d passed); verdict %s:%d\n",
		r->name, r->out.exit_status, r->elapsed_s, r->have_report ? "fetched" : "missing",
		r->jc.testcases, r->jc.declared, r->jc.passed, r->v.status, r->v.passed);
	fprintf(stderr, "--- proctor stderr:\n%.*s\n", cap, r->out.err ? r->out.err : "");
	if (!r->out.json) {
		fprintf(stderr, "--- proctor stdout (not JSON):\n%.*s\n", cap,
			r->out.out ? r->out.out : "");
		return;
	}
	json_t *copy = json_deep_copy(r->out.json);
	for (int i = 0; copy && i < 2; i++) {
		const char *key = i ? "stderr" : "stdout";
		const char *s = json_string_value(json_object_get(copy, key));
		if (s && strlen(s) > (size_t)cap) {
			char *cut = strndup(s, (size_t)cap);
			json_object_set_new(copy, key, json_string(cut ? cut : ""));
			free(cut);
		}
	}
	char *txt = copy ? json_dumps(copy, JSON_INDENT(1)) : NULL;
	fprintf(stderr, "--- result:\n%s\n", txt ? txt : "(cannot print)");
	free(txt);
	json_decref(copy);
}

static void check_that(bool ok, const struct case_run *r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check_that(bool ok, const struct case_run *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (ok)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	dump_run(r);
	print_error("%s: %s\n", r->name, msg);
	fail();
}

static const char *status_of(const struct case_run *r)
{
	return jstr(&r->out, "status");
}

static bool status_is(const struct case_run *r, const char *status)
{
	return strcmp(status_of(r), status) == 0;
}

/* Proctor's result plus the report, judged by the corpus README's rules in
 * order; a run is never "graded" without a report naming declared tests. */
static void judge(struct case_run *r)
{
	const char *st = status_of(r);
	struct verdict *v = &r->v;
	const char *name = "graded";

	v->passed = 0;
	if (strcmp(st, "error") == 0) {
		name = "proctor_error";
	} else if (strcmp(st, "timeout") == 0) {
		name = "timeout";
	} else if (strcmp(st, "memory_limit") == 0) {
		name = "memory_limit";
	} else if (strcmp(st, "signaled") == 0) {
		name = "crashed";
	} else if (strcmp(st, "ok") == 0 || strcmp(st, "nonzero_exit") == 0) {
		long long code = jint(&r->out, "exit_code");
		bool ok_exit = false;
		for (size_t i = 0; i < r->a.n_ok_exit; i++)
			ok_exit = ok_exit || code == r->a.ok_exit[i];
		if (code > 128 && code <= 128 + 64)
			name = "crashed"; /* a shell reporting its child's signal */
		else if (!ok_exit || !r->have_report || r->jc.declared == 0)
			name = "error";
		else
			v->passed = r->jc.passed;
	} else {
		check_that(false, r, "unknown status '%s'", st);
	}
	copy_str(v->status, sizeof(v->status), name, "verdict");
}

static bool verdict_listed(const char *list, const struct verdict *v)
{
	char buf[128];
	char *save = NULL;

	if (strcmp(list, "-") == 0)
		return false;
	copy_str(buf, sizeof(buf), list, "alt_verdicts");
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		long passed;
		if (!colon)
			continue;
		*colon = '\0';
		if (strcmp(harness_trim(tok), v->status) == 0 &&
		    harness_parse_int(harness_trim(colon + 1), 0, 1000, &passed) &&
		    passed == v->passed)
			return true;
	}
	return false;
}

/* Contract: 0 status ok, 1 the program failed or hit a limit (output
 * truncation alone does not count), 3 proctor's own error. */
static int contract_exit_status(const struct case_run *r)
{
	const char *st = status_of(r);
	json_t *hits = json_object_get(r->out.json, "limits_hit");

	if (strcmp(st, "error") == 0)
		return 3;
	if (strcmp(st, "ok") != 0)
		return 1;
	for (size_t i = 0; i < json_array_size(hits); i++) {
		const char *hit = json_string_value(json_array_get(hits, i));
		if (!hit || strcmp(hit, "output") != 0)
			return 1;
	}
	return 0;
}

/* "{report}" in `cmd` filled in; owned by the caller. */
static char *fill_report(const char *cmd)
{
	static const char key[] = "{report}";
	char *out = xasprintf("%s", cmd);
	char *at;

	while ((at = strstr(out, key)) != NULL) {
		*at = '\0';
		char *next = xasprintf("%s%s%s", out, REPORT_IN_SANDBOX, at + sizeof(key) - 1);
		free(out);
		out = next;
	}
	return out;
}

/* The assignment's build and run as one program: the run command split on
 * blanks when there is no build, else `sh -c 'BUILD && exec RUN'`, so the
 * runner is the same process in both (its own signal, its own parent). */
static void add_command(struct argv_buf *args, const struct assignment *a)
{
	char *run = fill_report(a->run);

	if (*a->build) {
		argv_add(args, "/bin/sh");
		argv_add(args, "-c");
		argv_add(args, "%s && exec %s", a->build, run);
	} else {
		char *save = NULL;
		for (char *w = strtok_r(run, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
			argv_add(args, "%s", w);
	}
	free(run);
}

/*
 * Run one case the way a grader would: the assignment's limits, only the
 * allowlisted student files, the hidden test files, the report fetched back.
 * `extra_env` is added to proctor's own environment (NULL for none).
 */
static void run_case(struct case_run *r, const char *lang, const char *case_name,
		     char *const *extra_env)
{
	const char *corpus = corpus_or_skip();
	struct argv_buf args = {.n = 0};

	memset(r, 0, sizeof(*r));
	r->name = case_name;
	load_assignment(&r->a, corpus, lang);
	load_expectation(&r->a, case_name, &r->e);
	r->tmpdir = harness_tmpdir();
	r->report_path = xasprintf("%s/report.xml", r->tmpdir);

	argv_add(&args, "run");
	argv_add(&args, "--json");
	argv_add(&args, "--cpu");
	argv_add(&args, "%s", r->a.cpu);
	argv_add(&args, "--wall");
	argv_add(&args, "%s", r->a.wall);
	argv_add(&args, "--memory");
	argv_add(&args, "%s", r->a.memory);
	argv_add(&args, "--pids");
	argv_add(&args, "%s", r->a.pids);
	argv_add(&args, "--fsize");
	argv_add(&args, "%s", r->a.fsize);
	argv_add(&args, "--disk");
	argv_add(&args, "%s", r->a.disk);
	argv_add(&args, "--output");
	argv_add(&args, "%s", r->a.output);

	/* Only the allowlisted student files: a submission's conftest.py,
	 * plugins or symlinks never reach the sandbox. */
	char files[256], *save = NULL;
	copy_str(files, sizeof(files), r->a.student_files, "student_files");
	for (char *f = strtok_r(files, " ", &save); f; f = strtok_r(NULL, " ", &save)) {
		char *host = xasprintf("%s/submissions/%s/%s", r->a.dir, case_name, f);
		struct stat st;
		if (lstat(host, &st) == 0 && S_ISREG(st.st_mode)) {
			argv_add(&args, "--put");
			argv_add(&args, "%s:%s", host, f);
		}
		free(host);
	}
	copy_str(files, sizeof(files), r->a.test_files, "test_files");
	for (char *f = strtok_r(files, " ", &save); f; f = strtok_r(NULL, " ", &save)) {
		argv_add(&args, "--put");
		argv_add(&args, "%s/tests/%s:%s", r->a.dir, f, f);
	}
	argv_add(&args, "--get");
	argv_add(&args, "report.xml:%s", r->report_path);
	argv_add(&args, "--");
	add_command(&args, &r->a);

	double t0 = harness_now_s();
	harness_run(&r->out, extra_env, (int)r->a.wall_s + HARNESS_GRACE_S, args.v);
	r->elapsed_s = harness_now_s() - t0;
	argv_free(&args);

	size_t len = 0;
	char *xml = harness_slurp(r->report_path, MAX_REPORT_BYTES, &len);
	r->have_report = xml != NULL;
	if (xml)
		junit_count(xml, len, &r->a, &r->jc);
	free(xml);

	check_that(r->out.json != NULL, r, "proctor printed no JSON result");
	judge(r);
	check_that(
	    strcmp(r->v.status, "proctor_error") != 0, r,
	    "proctor reported its own failure (status error); a submission must never cause that");

	const char *st = status_of(r);
	int want_exit = contract_exit_status(r);
	print_message("[  CASE    ] %s: status %s, exit %d, verdict %s:%d, %.1f s\n", r->name, st,
		      r->out.exit_status, r->v.status, r->v.passed, r->elapsed_s);
	if (r->have_report)
		check_that(r->out.exit_status == want_exit, r,
			   "proctor exited %d for status %s (contract: %d)", r->out.exit_status, st,
			   want_exit);
	else
		check_that(r->out.exit_status == want_exit || r->out.exit_status == 1 ||
			       r->out.exit_status == 2,
			   r, "proctor exited %d for status %s without a report",
			   r->out.exit_status, st);
}

/* The verdict must be the expected one of cases.tsv or one of its alternatives. */
static void check_verdict(const struct case_run *r)
{
	bool ok = (strcmp(r->v.status, r->e.status) == 0 && r->v.passed == r->e.passed) ||
		  verdict_listed(r->e.alt, &r->v);

	check_that(ok, r, "verdict %s:%d, cases.tsv expects %s:%d (alternatives: %s)", r->v.status,
		   r->v.passed, r->e.status, r->e.passed, r->e.alt);
}

static void case_run_done(struct case_run *r)
{
	unlink(r->report_path);
	rmdir(r->tmpdir);
	free(r->report_path);
	free(r->tmpdir);
	proc_out_free(&r->out);
	free_assignment(&r->a);
}

/* Run, judge against cases.tsv, and leave `r` for the case's own checks. */
static void run_and_judge(struct case_run *r, const char *lang, const char *case_name,
			  char *const *extra_env)
{
	run_case(r, lang, case_name, extra_env);
	check_verdict(r);
}

/* ---- shared checks ------------------------------------------------------ */

static void check_full_marks(const struct case_run *r)
{
	check_that(strcmp(r->v.status, "graded") == 0 && r->v.passed == r->e.total &&
		       r->jc.declared == r->e.total,
		   r, "expected every declared test (%d) to pass", r->e.total);
}

static void check_timed_out(const struct case_run *r)
{
	check_that(status_is(r, "timeout"), r, "expected status timeout");
	check_that(jlimit_hit(&r->out, "cpu") || jlimit_hit(&r->out, "wall"), r,
		   "a timeout must name cpu or wall in limits_hit");
}

static void check_memory_limit(const struct case_run *r)
{
	check_that(status_is(r, "memory_limit"), r, "expected status memory_limit");
	check_that(jlimit_hit(&r->out, "memory"), r, "limits_hit lacks memory");
}

/* Kept output stays within --output per stream, truncation is reported, and
 * proctor was not slowed down by draining the rest. */
static void check_flood_handled(const struct case_run *r)
{
	const long long cap = (long long)r->a.output_kib * 1024;
	static const char *const streams[] = {"stdout", "stderr"};

	for (size_t i = 0; i < 2; i++) {
		char key[32];
		json_t *s = json_object_get(r->out.json, streams[i]);
		check_that(json_is_string(s), r, "%s is not a string", streams[i]);
		check_that((long long)json_string_length(s) <= cap, r,
			   "%s kept %zu bytes, over --output %lld bytes", streams[i],
			   json_string_length(s), cap);
		snprintf(key, sizeof(key), "%s_bytes", streams[i]);
		long long bytes = jint(&r->out, key);
		snprintf(key, sizeof(key), "%s_truncated", streams[i]);
		if (bytes > cap) {
			check_that(jbool(&r->out, key), r, "%s over the cap but not truncated",
				   streams[i]);
			check_that(jlimit_hit(&r->out, "output"), r,
				   "%s truncated but limits_hit lacks output", streams[i]);
		}
	}
	check_that(r->elapsed_s <= r->a.wall_s + PROMPT_GRACE_S, r,
		   "proctor took %.1f s, more than --wall + %.0f s", r->elapsed_s, PROMPT_GRACE_S);
}

struct host_file {
	struct stat st;
	char *content;
	size_t len;
};

static void host_file_snapshot(const char *path, struct host_file *h)
{
	assert_int_equal(lstat(path, &h->st), 0);
	h->content = harness_slurp(path, MAX_REPORT_BYTES, &h->len);
	assert_non_null(h->content);
}

static void check_host_file_unchanged(const struct case_run *r, const char *path,
				      struct host_file *before)
{
	struct host_file after;

	host_file_snapshot(path, &after);
	check_that(
	    after.st.st_ino == before->st.st_ino && after.st.st_mode == before->st.st_mode &&
		after.st.st_uid == before->st.st_uid && after.st.st_size == before->st.st_size &&
		after.st.st_mtim.tv_sec == before->st.st_mtim.tv_sec &&
		after.st.st_mtim.tv_nsec == before->st.st_mtim.tv_nsec &&
		after.len == before->len && memcmp(after.content, before->content, after.len) == 0,
	    r, "host %s changed", path);
	free(after.content);
	free(before->content);
}

static unsigned long long host_free_bytes(const char *path)
{
	struct statvfs sv;

	assert_int_equal(statvfs(path, &sv), 0);
	return (unsigned long long)sv.f_bavail * sv.f_frsize;
}

/* ---- the cases ---------------------------------------------------------- */

static void test_py_correct_scores_full_marks(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "python", "py_correct", NULL);
	check_full_marks(&r);
	case_run_done(&r);
	harness_assert_clean();
}

static void test_c_correct_scores_full_marks(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "c", "c_correct", NULL);
	check_full_marks(&r);
	case_run_done(&r);
	harness_assert_clean();
}

static void test_py_fork_bomb_is_held_by_pids_limit(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "python", "py_fork_bomb", NULL);
	check_timed_out(&r);
	check_that(jlimit_hit(&r.out, "pids"), &r, "limits_hit lacks pids");
	case_run_done(&r);
	harness_assert_clean();
}

static void test_c_fork_loop_is_held_by_pids_limit(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "c", "c_fork_loop", NULL);
	check_timed_out(&r);
	check_that(jlimit_hit(&r.out, "pids"), &r, "limits_hit lacks pids");
	case_run_done(&r);
	harness_assert_clean();
}

static void test_py_memory_hog_hits_memory_limit(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "python", "py_memory_hog", NULL);
	check_memory_limit(&r);
	case_run_done(&r);
	harness_assert_clean();
}

static void test_c_memory_hog_hits_memory_limit(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "c", "c_memory_hog", NULL);
	check_memory_limit(&r);
	case_run_done(&r);
	harness_assert_clean();
}

static void test_py_infinite_loop_times_out(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "python", "py_infinite_loop", NULL);
	check_timed_out(&r);
	case_run_done(&r);
	harness_assert_clean();
}

static void test_c_infinite_loop_times_out(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "c", "c_infinite_loop", NULL);
	check_timed_out(&r);
	case_run_done(&r);
	harness_assert_clean();
}

static void test_py_sleep_forever_times_out_on_wall_clock(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "python", "py_sleep_forever", NULL);
	check_timed_out(&r);
	check_that(jlimit_hit(&r.out, "wall"), &r, "a sleeper must hit the wall-clock limit");
	case_run_done(&r);
	harness_assert_clean();
}

static void test_py_stdout_flood_is_capped_and_prompt(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "python", "py_stdout_flood", NULL);
	check_flood_handled(&r);
	case_run_done(&r);
	harness_assert_clean();
}

static void test_c_stdout_flood_is_capped_and_graded(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "c", "c_stdout_flood", NULL);
	check_flood_handled(&r);
	check_full_marks(&r);
	case_run_done(&r);
	harness_assert_clean();
}

static void test_py_disk_fill_stays_in_sandbox(void **state)
{
	struct case_run r;

	(void)state;
	unsigned long long before = host_free_bytes("/");
	run_and_judge(&r, "python", "py_disk_fill", NULL);
	unsigned long long after = host_free_bytes("/");
	check_that(!status_is(&r, "memory_limit") && !jlimit_hit(&r.out, "memory"), &r,
		   "filling the sandbox disk must not count as memory");
	check_that(after + HOST_DISK_SLACK >= before, &r,
		   "free space on the host's / dropped by %llu MiB", (before - after) >> 20);
	case_run_done(&r);
	harness_assert_clean();
}

/* The daemon keeps stdout open and outlives pytest: proctor must return when
 * the program exits and kill it, so the next run sees nothing of it. */
static void test_py_persist_spawn_leaves_nothing_for_next_run(void **state)
{
	struct case_run spawn, check;

	(void)state;
	run_and_judge(&spawn, "python", "py_persist_spawn", NULL);
	check_full_marks(&spawn);
	double ran_s = (double)jint(&spawn.out, "wall_ms") / 1000.0;
	check_that(spawn.elapsed_s < spawn.a.wall_s && spawn.elapsed_s <= ran_s + AFTER_EXIT_S,
		   &spawn,
		   "proctor returned %.1f s after a %.1f s run: it waited for the daemon's pipes",
		   spawn.elapsed_s, ran_s);
	case_run_done(&spawn);

	run_and_judge(&check, "python", "py_persist_check", NULL);
	check_full_marks(&check);
	case_run_done(&check);
	harness_assert_clean();
}

static void test_py_host_secrets_sees_no_canary(void **state)
{
	static char *const canaries[] = {
	    "DATABASE_URL=postgres://x:ADV-CANARY-db@10.0.0.1/x",
	    "ADV_CANARY_SECRET=ADV-CANARY-123",
	    "GITHUB_TOKEN=ADV-CANARY-gh",
	    NULL,
	};
	struct case_run r;

	(void)state;
	run_and_judge(&r, "python", "py_host_secrets", canaries);
	check_full_marks(&r);
	check_that(!memmem(r.out.out, r.out.out_len, "ADV-CANARY", 10) &&
		       !memmem(r.out.err, r.out.err_len, "ADV-CANARY", 10),
		   &r, "a canary from proctor's environment shows in its output");
	case_run_done(&r);
	harness_assert_clean();
}

static void test_py_exfiltrate_finds_no_network(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "python", "py_exfiltrate", NULL);
	check_full_marks(&r);
	case_run_done(&r);
	harness_assert_clean();
}

static void test_py_kill_parent_scores_nothing(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "python", "py_kill_parent", NULL);
	check_that(r.v.passed == 0, &r, "killing its parent earned points");
	case_run_done(&r);
	harness_assert_clean();
}

static void test_py_segfault_is_crashed(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "python", "py_segfault", NULL);
	check_that(status_is(&r, "signaled") || status_is(&r, "nonzero_exit"), &r,
		   "expected status signaled or nonzero_exit");
	check_that(r.v.passed == 0, &r, "a crashed run earned points");
	case_run_done(&r);
	harness_assert_clean();
}

static void test_c_segfault_is_crashed(void **state)
{
	struct case_run r;

	(void)state;
	run_and_judge(&r, "c", "c_segfault", NULL);
	check_that(r.v.passed == 0, &r, "a crashed run earned points");
	case_run_done(&r);
	harness_assert_clean();
}

static void test_py_symlink_passwd_leaves_host_passwd_alone(void **state)
{
	struct host_file passwd;
	struct case_run r;

	(void)state;
	corpus_or_skip();
	host_file_snapshot("/etc/passwd", &passwd);
	run_and_judge(&r, "python", "py_symlink_passwd", NULL);
	check_full_marks(&r);
	check_host_file_unchanged(&r, "/etc/passwd", &passwd);
	case_run_done(&r);
	harness_assert_clean();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_py_correct_scores_full_marks),
	    cmocka_unit_test(test_c_correct_scores_full_marks),
	    cmocka_unit_test(test_py_fork_bomb_is_held_by_pids_limit),
	    cmocka_unit_test(test_c_fork_loop_is_held_by_pids_limit),
	    cmocka_unit_test(test_py_memory_hog_hits_memory_limit),
	    cmocka_unit_test(test_c_memory_hog_hits_memory_limit),
	    cmocka_unit_test(test_py_infinite_loop_times_out),
	    cmocka_unit_test(test_c_infinite_loop_times_out),
	    cmocka_unit_test(test_py_sleep_forever_times_out_on_wall_clock),
	    cmocka_unit_test(test_py_stdout_flood_is_capped_and_prompt),
	    cmocka_unit_test(test_c_stdout_flood_is_capped_and_graded),
	    cmocka_unit_test(test_py_disk_fill_stays_in_sandbox),
	    cmocka_unit_test(test_py_persist_spawn_leaves_nothing_for_next_run),
	    cmocka_unit_test(test_py_host_secrets_sees_no_canary),
	    cmocka_unit_test(test_py_exfiltrate_finds_no_network),
	    cmocka_unit_test(test_py_kill_parent_scores_nothing),
	    cmocka_unit_test(test_py_segfault_is_crashed),
	    cmocka_unit_test(test_c_segfault_is_crashed),
	    cmocka_unit_test(test_py_symlink_passwd_leaves_host_passwd_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
