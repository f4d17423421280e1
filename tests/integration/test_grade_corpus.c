/* Integration tests: every corpus case through `proctor grade`, judged by cases.tsv. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
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
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

/*
 * One cmocka test per row of the corpus's cases.tsv (python/ and c/), made
 * at run time: each grades the row's submission with the real
 * `proctor grade --json` against the corpus assignment expressed in
 * Proctor's own format, maps Proctor's verdict onto the corpus's vocabulary
 * and compares it with the row.  The assignment.yaml is the corpus's own
 * (<lang>/assignment.yaml, as in tests/corpus) when it has one, else
 * tests/data/corpus-assignments/<lang>/assignment.yaml (for a corpus that
 * is not ours); it is copied with the corpus's hidden tests/ into a
 * temporary assignment directory before the tests run.  A case directory
 * holding submission.tar or submission.zip is also handed in as each
 * archive, under the same row.  `must` rows fail when the
 * verdict is wrong; `should` and `observe` rows are only reported.  Whatever
 * the severity, Proctor's own "error" status, an exit status other than 0,
 * a leaked canary, an escaped zip-slip file or a sandbox left behind fail.
 *
 * Counts, test names and expectations come from the corpus (cases.tsv,
 * tests.list) at run time; nothing is typed in twice.
 */

#ifndef TEST_DATA
#error "TEST_DATA must name tests/data (meson passes it)"
#endif

#define CORPUS_ASSIGNMENTS TEST_DATA "/corpus-assignments"

#define MAX_CASES	 128
#define MAX_DECLARED	 64
#define MAX_TEXT_BYTES	 (256 * 1024)
#define MAX_FAILURES	 16
#define FAILURE_LEN	 640
#define GRADE_TIMEOUT_S	 240 /* retries x (build + test wall) + intake, with room */
#define SCAN_MAX_DEPTH	 40
#define SCAN_MAX_ENTRIES 2000000
#define DUMP_CAP	 1500

/* One assignment (python/ or c/) of the corpus. */
struct lang {
	const char *name;	      /* "python", "c" */
	char dir[PATH_MAX];	      /* $CORPUS/<name> */
	char *assignment;	      /* temporary assignment dir (yaml + tests/); owned */
	char *declared[MAX_DECLARED]; /* tests.list, in order; owned */
	size_t n_declared;
};

/* Extra checks some cases need. */
enum {
	CHECK_CANARY = 1 << 0,	     /* run with canaries in proctor's env; none may show */
	CHECK_ZIPSLIP = 1 << 1,	     /* no adv_zipslip_* file anywhere afterwards */
	CHECK_REGRADE = 1 << 2,	     /* a second grading gives the same outcome */
	CHECK_STUDENT_VIEW = 1 << 3, /* --view student hides hidden tests and raw output */
};

/* One grading: a row of cases.tsv and the submission path to hand in. */
struct grade_case {
	char title[160]; /* the row's case, or case/archive for an archive */
	char row[64];	 /* the row's case */
	struct lang *lang;
	char submission[PATH_MAX + 128];
	char zipslip_dir[PATH_MAX + 128]; /* the submission dir itself: the scan skips it */
	char status[32];		  /* expected_status */
	int passed, total;
	char alt[128];	   /* alt_verdicts: "status:passed,..." or "-" */
	char severity[16]; /* must, should, observe */
	unsigned checks;   /* CHECK_* */
};

/* Why the suite cannot run (skip) or is broken (fail); a test of its own. */
struct suite_problem {
	bool skip;
	char msg[PATH_MAX + 256];
};

/* What one test collects before failing once with all of it. */
struct failures {
	size_t n;
	char msg[MAX_FAILURES][FAILURE_LEN];
};

static void failure(struct failures *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failure(struct failures *f, const char *fmt, ...)
{
	va_list ap;

	if (f->n >= MAX_FAILURES)
		return;
	va_start(ap, fmt);
	vsnprintf(f->msg[f->n], FAILURE_LEN, fmt, ap);
	va_end(ap);
	f->n++;
}

static bool copy_str(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return false;
	memcpy(dst, src, n + 1);
	return true;
}

/* ---- the temporary assignment directories ----------------------------------- */

/* Copy regular file `name` from directory fd `from` into `to`. */
static int copy_file_at(int from, int to, const char *name, mode_t mode, char *why, size_t wlen)
{
	int in = openat(from, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0) {
		snprintf(why, wlen, "open %s: %s", name, strerror(errno));
		return -1;
	}
	int out = openat(to, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode & 0755);
	if (out < 0) {
		snprintf(why, wlen, "create %s: %s", name, strerror(errno));
		close(in);
		return -1;
	}
	char buf[65536];
	int rc = 0;
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			break;
		if (n < 0) {
			snprintf(why, wlen, "read %s: %s", name, strerror(errno));
			rc = -1;
			break;
		}
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				snprintf(why, wlen, "write %s: %s", name, strerror(errno));
				rc = -1;
				break;
			}
			off += w;
		}
		if (rc < 0)
			break;
	}
	close(in);
	if (close(out) < 0 && rc == 0) {
		snprintf(why, wlen, "close %s: %s", name, strerror(errno));
		rc = -1;
	}
	return rc;
}

/* Copy the tree below directory fd `from` into directory fd `to`: regular
 * files and directories only (an instructor's tests dir holds nothing else). */
static int copy_tree_at(int from, int to, int depth, char *why, size_t wlen)
{
	if (depth > 16) {
		snprintf(why, wlen, "tests dir nested too deep");
		return -1;
	}
	int dup_fd = dup(from);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		snprintf(why, wlen, "opendir: %s", strerror(errno));
		if (dup_fd >= 0)
			close(dup_fd);
		return -1;
	}
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(from, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			snprintf(why, wlen, "stat %s: %s", de->d_name, strerror(errno));
			rc = -1;
		} else if (S_ISREG(st.st_mode)) {
			rc = copy_file_at(from, to, de->d_name, st.st_mode, why, wlen);
		} else if (S_ISDIR(st.st_mode)) {
			int sub_from = -1, sub_to = -1;
			if (mkdirat(to, de->d_name, 0755) < 0 ||
			    (sub_from = openat(from, de->d_name,
					       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
				0 ||
			    (sub_to = openat(to, de->d_name,
					     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) <
				0) {
				snprintf(why, wlen, "%s: %s", de->d_name, strerror(errno));
				rc = -1;
			} else {
				rc = copy_tree_at(sub_from, sub_to, depth + 1, why, wlen);
			}
			if (sub_from >= 0)
				close(sub_from);
			if (sub_to >= 0)
				close(sub_to);
		} else {
			snprintf(why, wlen, "%s is neither a file nor a directory", de->d_name);
			rc = -1;
		}
	}
	closedir(d);
	return rc;
}

/* A temporary assignment dir: the corpus's assignment.yaml for the language
 * (or this suite's, for a corpus without one) plus a copy of the corpus's
 * hidden tests as tests/. */
static int make_assignment_dir(struct lang *l, char *why, size_t wlen)
{
	const char *base = getenv("TMPDIR");
	char path[PATH_MAX], yaml_src[PATH_MAX], tests_src[PATH_MAX];
	int dir = -1, src = -1, dst = -1, ydir = -1, rc = -1;

	if (!base || !*base)
		base = "/tmp";
	snprintf(path, sizeof(path), "%s/proctor-grade-corpus-%s-XXXXXX", base, l->name);
	if (!mkdtemp(path)) {
		snprintf(why, wlen, "mkdtemp %s: %s", path, strerror(errno));
		return -1;
	}
	/* mkdtemp makes it 0700; the assignment is read as root, but keep it
	 * readable like any instructor's directory. */
	chmod(path, 0755);
	l->assignment = strdup(path);
	snprintf(yaml_src, sizeof(yaml_src), "%s/assignment.yaml", l->dir);
	if (access(yaml_src, F_OK) == 0)
		snprintf(yaml_src, sizeof(yaml_src), "%s", l->dir);
	else
		snprintf(yaml_src, sizeof(yaml_src), "%s/%s", CORPUS_ASSIGNMENTS, l->name);
	snprintf(tests_src, sizeof(tests_src), "%s/tests", l->dir);
	if (!l->assignment || (dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    (ydir = open(yaml_src, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		snprintf(why, wlen, "open %s or %s: %s", path, yaml_src, strerror(errno));
		goto out;
	}
	if (copy_file_at(ydir, dir, "assignment.yaml", 0644, why, wlen) < 0)
		goto out;
	/* GRADE_IMAGE=PIN: the same assignment on an image (for microVMs). */
	const char *image = getenv("GRADE_IMAGE");
	if (image && *image) {
		int yfd = openat(dir, "assignment.yaml", O_WRONLY | O_APPEND | O_CLOEXEC);
		if (yfd < 0 || dprintf(yfd, "image: %s\n", image) < 0) {
			snprintf(why, wlen, "append image: to %s/assignment.yaml", path);
			if (yfd >= 0)
				close(yfd);
			goto out;
		}
		close(yfd);
	}
	if ((src = open(tests_src, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    mkdirat(dir, "tests", 0755) < 0 ||
	    (dst = openat(dir, "tests", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		snprintf(why, wlen, "%s -> %s/tests: %s", tests_src, path, strerror(errno));
		goto out;
	}
	if (copy_tree_at(src, dst, 0, why, wlen) < 0)
		goto out;
	rc = 0;
out:
	if (dst >= 0)
		close(dst);
	if (src >= 0)
		close(src);
	if (ydir >= 0)
		close(ydir);
	if (dir >= 0)
		close(dir);
	return rc;
}

/* ---- the corpus's own files ---------------------------------------------------- */

static int load_declared(struct lang *l, char *why, size_t wlen)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/tests.list", l->dir);
	char *text = harness_slurp(path, MAX_TEXT_BYTES, NULL);
	if (!text) {
		snprintf(why, wlen, "cannot read %s", path);
		return -1;
	}
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line = harness_trim(line);
		if (!*line || *line == '#')
			continue;
		if (l->n_declared >= MAX_DECLARED || !(l->declared[l->n_declared] = strdup(line))) {
			snprintf(why, wlen, "%s: too many tests", path);
			free(text);
			return -1;
		}
		l->n_declared++;
	}
	free(text);
	if (l->n_declared == 0) {
		snprintf(why, wlen, "%s declares no test", path);
		return -1;
	}
	return 0;
}

static struct grade_case *add_case(struct grade_case *cases, size_t *n, char *why, size_t wlen)
{
	if (*n >= MAX_CASES) {
		snprintf(why, wlen, "more than %d cases", MAX_CASES);
		return NULL;
	}
	struct grade_case *c = &cases[(*n)++];
	memset(c, 0, sizeof(*c));
	return c;
}

/* Rows of <lang>/cases.tsv as gradings, in file order, except that the
 * check of py_persist_spawn's leftovers runs right after it and each
 * archive in a case directory (submission.tar, submission.zip) is also
 * handed in on its own. */
static int load_cases(struct lang *l, struct grade_case *cases, size_t *n, char *why, size_t wlen)
{
	char path[PATH_MAX + 16];
	static struct grade_case rows[MAX_CASES]; /* scratch, too big for the stack */
	size_t n_rows = 0;

	snprintf(path, sizeof(path), "%s/cases.tsv", l->dir);
	char *text = harness_slurp(path, MAX_TEXT_BYTES, NULL);
	if (!text) {
		snprintf(why, wlen, "cannot read %s (is CORPUS a copy of tests/corpus?)", path);
		return -1;
	}
	char *save = NULL;
	bool header = true;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *col[9];
		size_t nc = 0;
		if (header) { /* case expected_status ... */
			header = false;
			continue;
		}
		if (!*harness_trim(line))
			continue;
		for (char *p = line; nc < 9;) {
			col[nc++] = p;
			p = strchr(p, '\t');
			if (!p)
				break;
			*p++ = '\0';
		}
		long passed, total;
		struct grade_case *c = NULL;
		if (nc < 7 || n_rows >= MAX_CASES || !harness_parse_int(col[2], 0, 1000, &passed) ||
		    !harness_parse_int(col[3], 0, 1000, &total)) {
			snprintf(why, wlen, "%s: bad row '%s'", path, col[0]);
			free(text);
			return -1;
		}
		c = &rows[n_rows++];
		memset(c, 0, sizeof(*c));
		c->lang = l;
		c->passed = (int)passed;
		c->total = (int)total;
		int sn = snprintf(c->submission, sizeof(c->submission), "%s/submissions/%s", l->dir,
				  col[0]);
		if (!copy_str(c->row, sizeof(c->row), col[0]) ||
		    !copy_str(c->title, sizeof(c->title), col[0]) ||
		    !copy_str(c->status, sizeof(c->status), harness_trim(col[1])) ||
		    !copy_str(c->alt, sizeof(c->alt), harness_trim(col[4])) ||
		    !copy_str(c->severity, sizeof(c->severity), harness_trim(col[6])) || sn < 0 ||
		    (size_t)sn >= sizeof(c->submission)) {
			snprintf(why, wlen, "%s: row '%s' has an over-long field", path, col[0]);
			free(text);
			return -1;
		}
		if ((size_t)c->total != l->n_declared) {
			snprintf(why, wlen, "%s: %s expects %d tests, tests.list declares %zu",
				 path, c->row, c->total, l->n_declared);
			free(text);
			return -1;
		}
		if (!strcmp(c->row, "py_host_secrets"))
			c->checks |= CHECK_CANARY;
		if (!strcmp(c->row, "py_partial"))
			c->checks |= CHECK_REGRADE | CHECK_STUDENT_VIEW;
		if (!strcmp(c->row, "c_partial"))
			c->checks |= CHECK_REGRADE;
		if (!strcmp(c->row, "py_zipslip")) {
			c->checks |= CHECK_ZIPSLIP;
			memcpy(c->zipslip_dir, c->submission, sizeof(c->zipslip_dir));
		}
	}
	free(text);

	for (size_t i = 0; i < n_rows; i++) {
		struct grade_case *row = &rows[i];
		/* Placed right after py_persist_spawn below. */
		if (!strcmp(row->row, "py_persist_check"))
			continue;
		struct grade_case *c = add_case(cases, n, why, wlen);
		if (!c)
			return -1;
		*c = *row;
		if (!strcmp(row->row, "py_persist_spawn")) {
			for (size_t j = 0; j < n_rows; j++) {
				if (strcmp(rows[j].row, "py_persist_check"))
					continue;
				if (!(c = add_case(cases, n, why, wlen)))
					return -1;
				*c = rows[j];
			}
		}
		static const char *const archives[] = {"submission.tar", "submission.zip"};
		for (size_t k = 0; k < 2; k++) {
			char archive[PATH_MAX + 160];
			snprintf(archive, sizeof(archive), "%s/%s", row->submission, archives[k]);
			if (access(archive, F_OK) == 0) {
				if (!(c = add_case(cases, n, why, wlen)))
					return -1;
				*c = *row;
				snprintf(c->title, sizeof(c->title), "%s/%s", row->row,
					 archives[k]);
				size_t sl = strlen(c->submission); /* the row's dir */
				snprintf(c->submission + sl, sizeof(c->submission) - sl, "/%s",
					 archives[k]);
			}
		}
	}
	/* py_persist_check without py_persist_spawn: graded where it stands. */
	for (size_t i = 0; i < n_rows; i++) {
		bool placed = false;
		if (strcmp(rows[i].row, "py_persist_check"))
			continue;
		for (size_t j = 0; j < n_rows; j++)
			placed = placed || !strcmp(rows[j].row, "py_persist_spawn");
		if (!placed) {
			struct grade_case *c = add_case(cases, n, why, wlen);
			if (!c)
				return -1;
			*c = rows[i];
		}
	}
	return 0;
}

/* ---- reading proctor's result ------------------------------------------------ */

static const char *jstring(const json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* Proctor's verdict in the corpus's vocabulary (README "Verdict rules"):
 * compile_error and rejected are the corpus's "error" (no credit, the
 * student's fault); Proctor's crashed is the corpus's "crashed" only when the
 * test runner died from a signal, and its "error" otherwise (exit code not a
 * normal finish, report missing or unusable, no declared test in it).
 * Proctor's own error is "proctor_error", which always fails. */
static const char *corpus_status(const json_t *result)
{
	const char *st = jstring(result, "status");

	if (!st)
		return "unknown";
	if (!strcmp(st, "graded") || !strcmp(st, "timeout") || !strcmp(st, "memory_limit"))
		return st;
	if (!strcmp(st, "compile_error") || !strcmp(st, "rejected"))
		return "error";
	if (!strcmp(st, "error"))
		return "proctor_error";
	if (strcmp(st, "crashed"))
		return "unknown";
	const json_t *test = NULL, *s;
	size_t i;
	json_array_foreach(json_object_get(result, "steps"), i, s)
	{
		const char *name = jstring(s, "name");
		if (name && !strcmp(name, "test"))
			test = s;
	}
	const char *tst = test ? jstring(test, "status") : NULL;
	return tst && !strcmp(tst, "signaled") ? "crashed" : "error";
}

static long long jnum(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

static bool alt_listed(const char *list, const char *status, long long passed)
{
	char buf[128];
	char *save = NULL;

	if (!strcmp(list, "-") || !copy_str(buf, sizeof(buf), list))
		return false;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		long p;
		if (!colon)
			continue;
		*colon = '\0';
		if (!strcmp(harness_trim(tok), status) &&
		    harness_parse_int(harness_trim(colon + 1), 0, 1000, &p) && p == passed)
			return true;
	}
	return false;
}

/*
 * A verdict Proctor knowingly gives instead of the row's, for a corpus
 * graded with this suite's assignment.yaml (one without its own):
 * tests/data/corpus-assignments/<lang>/divergences.tsv, one line per row,
 * "case<TAB>status:passed<TAB>proctor status<TAB>why" (docs/grading.md
 * says why each holds).  True, with the why, when this outcome is listed.
 */
static bool divergence(const struct grade_case *c, const char *status, long long passed,
		       const char *proctor_status, char *why, size_t len)
{
	char path[PATH_MAX], line[1024], yaml[PATH_MAX];
	bool found = false;

	snprintf(yaml, sizeof(yaml), "%s/assignment.yaml", c->lang->dir);
	if (access(yaml, F_OK) == 0)
		return false; /* the corpus's own assignment: its verdicts hold */
	snprintf(path, sizeof(path), "%s/%s/divergences.tsv", CORPUS_ASSIGNMENTS, c->lang->name);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *col[4] = {line}, *save = NULL;
		col[0] = strtok_r(line, "\t\n", &save);
		for (int i = 1; i < 4 && col[i - 1]; i++)
			col[i] = strtok_r(NULL, "\t\n", &save);
		if (!col[3] || col[0][0] == '#' || strcmp(col[0], c->row) != 0 ||
		    !proctor_status || strcmp(col[2], proctor_status) != 0)
			continue;
		if (alt_listed(col[1], status, passed)) {
			snprintf(why, len, "%s", col[3]);
			found = true;
		}
	}
	fclose(f);
	return found;
}

static void print_capped(const char *label, const char *s)
{
	if (!s)
		return;
	size_t n = strlen(s);
	fprintf(stderr, "      %s (%zu bytes): %.*s%s\n", label, n, DUMP_CAP, s,
		n > DUMP_CAP ? " [...]" : "");
}

/* What a failing case needs to be understood: the verdict, each test, each
 * step with the start of its output, and proctor's own stderr. */
static void dump_result(const struct grade_case *c, const struct proc_out *o)
{
	fprintf(stderr, "--- %s: proctor exit %d\n", c->title, o->exit_status);
	if (o->err_len)
		print_capped("proctor stderr", o->err);
	if (!o->json) {
		print_capped("proctor stdout (not JSON)", o->out);
		return;
	}
	const json_t *r = o->json, *t;
	size_t i;
	fprintf(stderr, "    status %s, reason %s, score %g/%g, passed %lld/%lld, attempts %lld\n",
		jstring(r, "status"), jstring(r, "reason") ? jstring(r, "reason") : "null",
		json_number_value(json_object_get(r, "score")),
		json_number_value(json_object_get(r, "max_score")), jnum(r, "passed"),
		jnum(r, "total"), jnum(r, "attempts"));
	json_array_foreach(json_object_get(r, "tests"), i, t)
	{
		const char *msg = jstring(t, "message");
		fprintf(stderr, "    test %s: %s%s%.200s\n", jstring(t, "name"),
			jstring(t, "status"), msg ? ": " : "", msg ? msg : "");
	}
	json_array_foreach(json_object_get(r, "steps"), i, t)
	{
		char *hits = json_dumps(json_object_get(t, "limits_hit"), JSON_COMPACT);
		fprintf(stderr, "    step %s: %s, exit %lld, signal %lld, limits %s, %lld ms, %s\n",
			jstring(t, "name"), jstring(t, "status"), jnum(t, "exit_code"),
			jnum(t, "signal"), hits ? hits : "?", jnum(t, "wall_ms"),
			jstring(t, "message") ? jstring(t, "message") : "");
		free(hits);
		print_capped("stdout", jstring(t, "stdout"));
		print_capped("stderr", jstring(t, "stderr"));
	}
	const json_t *sub = json_object_get(r, "submission");
	char *files = json_dumps(json_object_get(sub, "files"), JSON_COMPACT);
	fprintf(stderr, "    submission files %s\n", files ? files : "?");
	free(files);
}

/* ---- running proctor grade ------------------------------------------------------ */

static void grade(struct proc_out *o, const struct grade_case *c, const char *view,
		  char *const *extra_env)
{
	char *args[10];
	size_t n = 0;

	args[n++] = (char *)"grade";
	args[n++] = (char *)"--json";
	/* GRADE_ISOLATION=vm: the same verdicts from another backend. */
	const char *iso = getenv("GRADE_ISOLATION");
	if (iso && *iso) {
		args[n++] = (char *)"--isolation";
		args[n++] = (char *)iso;
	}
	if (view) {
		args[n++] = (char *)"--view";
		args[n++] = (char *)view;
	}
	args[n++] = c->lang->assignment;
	args[n++] = (char *)c->submission;
	args[n] = NULL;
	/* Under a slower backend the limits are scaled, and so is the wait. */
	harness_run(o, extra_env, getenv("GRADE_ISOLATION") ? 8 * GRADE_TIMEOUT_S : GRADE_TIMEOUT_S,
		    args);
}

/* Proctor's side of every grading, whatever the severity of the row. */
static void check_proctor(const struct proc_out *o, const char *what, struct failures *f)
{
	if (!o->json) {
		failure(f, "%s: proctor printed no JSON result (exit %d)", what, o->exit_status);
		return;
	}
	const char *st = jstring(o->json, "status");
	if (!st)
		failure(f, "%s: the result has no status", what);
	else if (!strcmp(st, "error"))
		failure(f,
			"%s: proctor reported its own failure (status error: %s); a submission "
			"must never cause that",
			what,
			jstring(o->json, "reason") ? jstring(o->json, "reason") : "no reason");
	else if (!strcmp(corpus_status(o->json), "unknown"))
		failure(f, "%s: unknown status '%s'", what, st);
	if (o->exit_status != 0)
		failure(f, "%s: proctor exited %d; a verdict must exit 0", what, o->exit_status);
}

/* The result lists exactly the declared tests, in tests.list's order. */
static void check_manifest(const struct grade_case *c, const json_t *r, struct failures *f)
{
	const json_t *tests = json_object_get(r, "tests");
	const struct lang *l = c->lang;

	if (jnum(r, "total") != (long long)l->n_declared)
		failure(f, "total %lld, tests.list declares %zu", jnum(r, "total"), l->n_declared);
	if (json_array_size(tests) != l->n_declared) {
		failure(f, "tests[] has %zu entries, tests.list declares %zu",
			json_array_size(tests), l->n_declared);
		return;
	}
	for (size_t i = 0; i < l->n_declared; i++) {
		const char *name = jstring(json_array_get(tests, i), "name");
		if (!name || strcmp(name, l->declared[i]))
			failure(f, "tests[%zu] is '%s', tests.list says '%s'", i,
				name ? name : "null", l->declared[i]);
	}
}

static void check_regrade(const json_t *a, const json_t *b, struct failures *f)
{
	static const char *const same[] = {"status", "passed", "total"};

	for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++)
		if (!json_equal(json_object_get(a, same[i]), json_object_get(b, same[i])))
			failure(f, "regrade: %s differs", same[i]);
	if (json_number_value(json_object_get(a, "score")) !=
	    json_number_value(json_object_get(b, "score")))
		failure(f, "regrade: score %g, first grading %g",
			json_number_value(json_object_get(b, "score")),
			json_number_value(json_object_get(a, "score")));
	static const char *const digests[] = {"submission", "assignment", "image"};
	for (size_t i = 0; i < 3; i++) {
		const json_t *da = json_object_get(json_object_get(a, digests[i]), "digest");
		const json_t *db = json_object_get(json_object_get(b, digests[i]), "digest");
		if (!json_is_string(da) || !json_equal(da, db))
			failure(f, "regrade: %s.digest differs or is missing", digests[i]);
	}
	const json_t *ta = json_object_get(a, "tests"), *tb = json_object_get(b, "tests");
	if (json_array_size(ta) != json_array_size(tb)) {
		failure(f, "regrade: %zu tests, first grading %zu", json_array_size(tb),
			json_array_size(ta));
		return;
	}
	for (size_t i = 0; i < json_array_size(ta); i++) {
		const json_t *x = json_array_get(ta, i), *y = json_array_get(tb, i);
		const char *sx = jstring(x, "status"), *sy = jstring(y, "status");
		if (!json_equal(json_object_get(x, "name"), json_object_get(y, "name")) || !sx ||
		    !sy || strcmp(sx, sy))
			failure(f, "regrade: test %s is %s, first grading %s", jstring(x, "name"),
				sy ? sy : "null", sx ? sx : "null");
	}
}

/* --view student: the same verdict, no raw output, hidden tests anonymous. */
static void check_student_view(const json_t *full, const json_t *sv, struct failures *f)
{
	const json_t *t;
	size_t i, hidden = 0;

	if (!jstring(sv, "view") || strcmp(jstring(sv, "view"), "student"))
		failure(f, "student view: view is not \"student\"");
	if (!json_equal(json_object_get(full, "status"), json_object_get(sv, "status")) ||
	    !json_equal(json_object_get(full, "passed"), json_object_get(sv, "passed")) ||
	    json_number_value(json_object_get(full, "score")) !=
		json_number_value(json_object_get(sv, "score")))
		failure(f, "student view: status, passed or score differ from the instructor's");
	if (!json_is_null(json_object_get(json_object_get(sv, "submission"), "path")))
		failure(f, "student view: submission.path is not null");
	json_array_foreach(json_object_get(sv, "steps"), i, t)
	{
		if (!json_is_null(json_object_get(t, "stdout")) ||
		    !json_is_null(json_object_get(t, "stderr")))
			failure(f, "student view: step %s shows its stdout or stderr",
				jstring(t, "name"));
	}
	json_array_foreach(json_object_get(sv, "tests"), i, t)
	{
		const char *vis = jstring(t, "visibility"), *name = jstring(t, "name");
		char want[64];
		if (!vis || strcmp(vis, "hidden"))
			continue;
		snprintf(want, sizeof(want), "hidden test %zu", ++hidden);
		if (!name || strcmp(name, want) || !json_is_null(json_object_get(t, "classname")) ||
		    !json_is_null(json_object_get(t, "message")))
			failure(f,
				"student view: hidden test %zu shows its name, classname or "
				"message",
				hidden);
	}
}

/* ---- zip-slip leftovers ------------------------------------------------------------ */

struct scan {
	dev_t skip_dev; /* the submission dir itself, where the archives live */
	ino_t skip_ino;
	size_t entries;
	char found[PATH_MAX + 64];
};

/* Look below `path` (open as `dfd`) for a name starting with adv_zipslip_,
 * never following a symlink.  Bounded in depth and entries. */
static bool scan_at(int dfd, const char *path, int depth, struct scan *s)
{
	int dup_fd = dup(dfd);
	DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
	if (!d) {
		if (dup_fd >= 0)
			close(dup_fd);
		return false;
	}
	bool found = false;
	struct dirent *de;
	while (!found && (de = readdir(d)) != NULL && s->entries++ < SCAN_MAX_ENTRIES) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!strncmp(de->d_name, "adv_zipslip_", 12)) {
			snprintf(s->found, sizeof(s->found), "%s/%s", path, de->d_name);
			found = true;
			break;
		}
		if (depth >= SCAN_MAX_DEPTH ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (st.st_dev == s->skip_dev && st.st_ino == s->skip_ino)
			continue;
		int sub = openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		char sub_path[PATH_MAX + 64];
		snprintf(sub_path, sizeof(sub_path), "%s/%s", path, de->d_name);
		found = scan_at(sub, sub_path, depth + 1, s);
		close(sub);
	}
	closedir(d);
	return found;
}

/* The first adv_zipslip_* file under /tmp, the corpus copy (but for the
 * submission dir) or the state dir, into `where`; false if there is none. */
static bool zipslip_leftover(const struct grade_case *c, char *where, size_t len)
{
	const char *corpus = getenv("CORPUS");
	const char *roots[] = {"/tmp", corpus, harness_state_dir()};
	struct scan s = {0};
	struct stat st;

	if (stat(c->zipslip_dir, &st) == 0) {
		s.skip_dev = st.st_dev;
		s.skip_ino = st.st_ino;
	}
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		if (!roots[i] || !*roots[i])
			continue;
		int fd = open(roots[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		bool found = scan_at(fd, roots[i], 0, &s);
		close(fd);
		if (found) {
			snprintf(where, len, "%s", s.found);
			return true;
		}
	}
	return false;
}

/* ---- the tests ------------------------------------------------------------------- */

static void format_outcome(char *buf, size_t len, const char *status, long long passed,
			   long long total)
{
	snprintf(buf, len, "%s %lld/%lld", status, passed, total);
}

static void test_grade_case(void **state)
{
	static char *const canaries[] = {
	    "DATABASE_URL=postgres://x:ADV-CANARY-db@10.0.0.1/x",
	    "ADV_CANARY_SECRET=ADV-CANARY-123",
	    "GITHUB_TOKEN=ADV-CANARY-gh",
	    NULL,
	};
	const struct grade_case *c = *state;
	struct failures f = {.n = 0};
	struct proc_out o, again, student;
	char where[PATH_MAX + 64];

	memset(&again, 0, sizeof(again));
	memset(&student, 0, sizeof(student));
	if ((c->checks & CHECK_ZIPSLIP) && zipslip_leftover(c, where, sizeof(where)))
		fail_msg("%s: %s exists before grading (left by an earlier run?); remove it first",
			 c->title, where);

	double t0 = harness_now_s();
	grade(&o, c, NULL, (c->checks & CHECK_CANARY) ? canaries : NULL);
	double elapsed = harness_now_s() - t0;
	check_proctor(&o, "grade", &f);

	const char *got = o.json ? corpus_status(o.json) : "no_result";
	long long passed = o.json ? jnum(o.json, "passed") : -1;
	long long total = o.json ? jnum(o.json, "total") : -1;
	char got_s[96], want_s[96];
	format_outcome(got_s, sizeof(got_s), got, passed, total);
	format_outcome(want_s, sizeof(want_s), c->status, c->passed, c->total);
	print_message(
	    "[  CASE    ] %s: %s (expected %s%s%s) [proctor %s, %.1f s]\n", c->title, got_s, want_s,
	    strcmp(c->alt, "-") ? ", or " : "", strcmp(c->alt, "-") ? c->alt : "",
	    o.json && jstring(o.json, "status") ? jstring(o.json, "status") : "-", elapsed);

	bool row_ok = total == c->total && ((!strcmp(got, c->status) && passed == c->passed) ||
					    alt_listed(c->alt, got, passed));
	char diverges[512];
	if (!row_ok && divergence(c, got, passed, o.json ? jstring(o.json, "status") : NULL,
				  diverges, sizeof(diverges))) {
		print_message("[ DIVERGES ] %s: got %s, expected %s: %s\n", c->title, got_s, want_s,
			      diverges);
		row_ok = true;
	}
	if (!row_ok && !strcmp(c->severity, "must"))
		failure(&f, "verdict %s, cases.tsv expects %s (alternatives: %s)", got_s, want_s,
			c->alt);
	else if (!row_ok)
		print_message("[  %-8s] %s: got %s, expected %s%s%s\n",
			      !strcmp(c->severity, "should") ? "SHOULD" : "OBSERVE", c->title,
			      got_s, want_s, strcmp(c->alt, "-") ? " or " : "",
			      strcmp(c->alt, "-") ? c->alt : "");
	if (o.json)
		check_manifest(c, o.json, &f);

	if ((c->checks & CHECK_CANARY) && (memmem(o.out, o.out_len, "ADV-CANARY", 10) ||
					   memmem(o.err, o.err_len, "ADV-CANARY", 10)))
		failure(&f, "a canary from proctor's environment shows in its output");
	if ((c->checks & CHECK_ZIPSLIP) && zipslip_leftover(c, where, sizeof(where)))
		failure(&f, "%s escaped the extraction", where);

	if ((c->checks & CHECK_REGRADE) && o.json) {
		grade(&again, c, NULL, NULL);
		check_proctor(&again, "regrade", &f);
		if (again.json)
			check_regrade(o.json, again.json, &f);
	}
	if ((c->checks & CHECK_STUDENT_VIEW) && o.json) {
		grade(&student, c, "student", NULL);
		check_proctor(&student, "student view", &f);
		if (student.json)
			check_student_view(o.json, student.json, &f);
	}

	if (f.n) {
		dump_result(c, &o);
		for (size_t i = 0; i < f.n; i++)
			print_error("%s: %s\n", c->title, f.msg[i]);
	}
	proc_out_free(&o);
	proc_out_free(&again);
	proc_out_free(&student);
	harness_assert_clean();
	if (f.n)
		fail_msg("%s: %zu check(s) failed (first: %s)", c->title, f.n, f.msg[0]);
}

static void test_corpus_grading_cannot_run(void **state)
{
	const struct suite_problem *p = *state;

	if (p->skip && harness_can_skip()) {
		print_message("[  SKIP    ] %s\n", p->msg);
		skip();
	}
	fail_msg("cannot grade the corpus: %s", p->msg);
}

int main(void)
{
	static struct lang langs[] = {{.name = "python"}, {.name = "c"}};
	static struct grade_case cases[MAX_CASES];
	static struct CMUnitTest tests[MAX_CASES];
	static struct suite_problem problem;
	const char *corpus = getenv("CORPUS");
	size_t n = 0;
	int rc;

	if (geteuid() != 0) {
		problem.skip = true;
		snprintf(problem.msg, sizeof(problem.msg), "the jail needs root");
	} else if (!corpus || !*corpus) {
		problem.skip = true;
		snprintf(problem.msg, sizeof(problem.msg),
			 "CORPUS is not set (meson configure -Dcorpus_dir=DIR, a copy of "
			 "tests/corpus after generate.sh)");
	}
	for (size_t i = 0; !problem.msg[0] && i < sizeof(langs) / sizeof(langs[0]); i++) {
		struct lang *l = &langs[i];
		int dn = snprintf(l->dir, sizeof(l->dir), "%s/%s", corpus, l->name);
		if (dn < 0 || (size_t)dn >= sizeof(l->dir))
			snprintf(problem.msg, sizeof(problem.msg), "CORPUS path too long");
		else if (load_declared(l, problem.msg, sizeof(problem.msg)) < 0 ||
			 load_cases(l, cases, &n, problem.msg, sizeof(problem.msg)) < 0 ||
			 make_assignment_dir(l, problem.msg, sizeof(problem.msg)) < 0)
			problem.skip = false;
	}
	if (problem.msg[0]) {
		tests[0] = (struct CMUnitTest){.name = "corpus_grading",
					       .test_func = test_corpus_grading_cannot_run,
					       .initial_state = &problem};
		n = 1;
	} else {
		for (size_t i = 0; i < n; i++)
			tests[i] = (struct CMUnitTest){.name = cases[i].title,
						       .test_func = test_grade_case,
						       .initial_state = &cases[i]};
	}

	/* CORPUS_CASES=GLOB runs only the matching cases (when debugging one). */
	const char *only = getenv("CORPUS_CASES");
	if (only && *only)
		cmocka_set_test_filter(only);
	rc = _cmocka_run_group_tests("grade_corpus", tests, n, NULL, NULL);

	for (size_t i = 0; i < sizeof(langs) / sizeof(langs[0]); i++) {
		if (langs[i].assignment)
			harness_rm_tree(langs[i].assignment);
		free(langs[i].assignment);
		for (size_t j = 0; j < langs[i].n_declared; j++)
			free(langs[i].declared[j]);
	}
	return rc;
}
