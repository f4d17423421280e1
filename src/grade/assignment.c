/* Loading assignment.yaml: a strict schema, paths kept inside its directory, defaults, digest. */
#include "grade/assignment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <libfyaml.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "digest.h"
#include "util.h"
#include "yamlfile.h"

/*
 * Theory of operation.  An instructor wrote the file, but it is read like
 * any input that may be wrong in every way, and the first mistake stops the
 * load with one line, "FILE:LINE: key.path: what is wrong"
 * (docs/assignment.md, "Errors").  In order:
 *
 *  1. read: a regular file of at most 1 MiB, without NUL or control
 *     characters (libfyaml would silently drop some);
 *  2. a pass over libfyaml's events reports syntax errors (and bad UTF-8)
 *     with their line, and refuses anchors, aliases (so merge keys) and a
 *     second document: what runs is exactly what the text says;
 *  3. the tree is walked against the key lists below: unknown, duplicate or
 *     missing keys, wrong types and out-of-range numbers are errors;
 *  4. paths are resolved with realpath() and must exist inside the
 *     assignment directory; expected outputs may not sit in tests_dir,
 *     which is copied into the sandbox;
 *  5. the digest covers the text and every file the grader will read.
 *
 * The directory is trusted not to change while Proctor uses it: paths are
 * checked here, once.
 */

#define ITEMS_MAX      10000  /* entries of one list: tests, cases, argv, globs */
#define TREE_FILES_MAX 100000 /* files below tests_dir */
#define POINTS_MAX     1e6
#define RUNNER_NEEDS   " (mode runner needs test, report and tests)"

/* Enum names, in the order of the enums of assignment.h. */
static const char *const mode_names[] = {"runner", "io", NULL};
static const char *const isolation_names[] = {"any", "jail", "vm", NULL};
static const char *const format_names[] = {"junit", "tap", "gradescope", NULL};
static const char *const visibility_names[] = {"visible", "hidden", "after_due_date",
					       "after_published", NULL};
static const char *const compare_names[] = {"exact", "trailing_whitespace", "tokens", "float",
					    NULL};

/* The keys each map may have, in the order messages list them. */
static const char *const top_keys[] = {"name",	"image", "mode",    "submission", "tests_dir",
				       "setup", "build", "test",    "ok_exit",	  "report",
				       "tests", "io",	 "retries", "isolation",  NULL};
static const char *const submission_keys[] = {"files", "required", "max_bytes", "max_files", NULL};
static const char *const step_keys[] = {"run", "limits", NULL};
static const char *const build_keys[] = {"run", "limits", "objects", NULL};
static const char *const objects_keys[] = {"files", "allow", NULL};
static const char *const test_step_keys[] = {"run", "limits", "ok_exit", "in_process", NULL};
static const char *const report_keys[] = {"format", "path", "max_kb", "pytest_guard", NULL};
static const char *const bool_names[] = {"false", "true", NULL};
static const char *const test_keys[] = {"name", "classname", "points", "visibility", NULL};
static const char *const io_keys[] = {"run",	"compare",	 "float_tolerance", "checker",
				      "limits", "output_max_kb", "cases",	    NULL};
static const char *const case_keys[] = {"name",	  "stdin",	"expected", "args",
					"points", "visibility", "limits",   NULL};
/* Limit keys, and the names of runlimits.c's table rows at the same index. */
static const char *const limit_keys[] = {"cpu_s",   "wall_s",	 "memory_mb", "pids", "fsize_mb",
					 "disk_mb", "output_kb", "nofile",    NULL};
static const char *const limit_names[] = {"cpu",   "wall", "memory", "pids",
					  "fsize", "disk", "output", "nofile"};

const char *visibility_name(enum visibility v)
{
	return (unsigned)v <= VIS_AFTER_PUBLISHED ? visibility_names[v] : "invalid";
}

static int missing(struct yaml_ctx *c, const struct yaml_field *f, const char *why)
{
	return yaml_fail(c, f->line, f->path, "missing required key%s", why);
}

/* A name shown to people (tests, cases, classnames): printable, non-empty. */
static int get_name(struct yaml_ctx *c, const struct yaml_field *f, char **ret)
{
	if (yaml_get_string(c, f, ret) < 0)
		return -1;
	if (!**ret || yaml_has_control(*ret))
		return yaml_fail(c, f->line, f->path,
				 "must be non-empty, without control characters");
	return 0;
}

/* The text of a plain scalar, for a number: "5" in quotes is a string. */
static int get_plain(struct yaml_ctx *c, const struct yaml_field *f, const char *what, char *buf,
		     size_t cap)
{
	size_t len = 0;
	const char *s;
	char b[64];

	if (!f->v || !fy_node_is_scalar(f->v) || yaml_is_null(f->v) ||
	    fy_node_get_style(f->v) != FYNS_PLAIN)
		return yaml_fail(c, f->line, f->path, "expected %s, got %s", what, yaml_kind(f->v));
	s = fy_node_get_scalar(f->v, &len);
	if (len >= cap)
		return yaml_fail(c, f->line, f->path, "expected %s, got '%s'", what,
				 yaml_shown(s, len, b, sizeof(b)));
	memcpy(buf, s, len);
	buf[len] = '\0';
	return 0;
}

static int get_number(struct yaml_ctx *c, const struct yaml_field *f, double min, double max,
		      double *ret)
{
	char text[64], what[96], *end;
	double v;

	snprintf(what, sizeof(what), "a number from %.15g to %.15g", min, max);
	if (get_plain(c, f, what, text, sizeof(text)) < 0)
		return -1;
	/* Decimal notation only: strtod() alone also takes hex, inf, nan and spaces. */
	errno = 0;
	v = strtod(text, &end);
	if (strspn(text, "0123456789.eE+-") != strlen(text) || end == text || *end ||
	    errno == ERANGE || !isfinite(v) || v < min || v > max)
		return yaml_fail(c, f->line, f->path, "expected %s, got '%s'", what, text);
	*ret = v;
	return 0;
}

static int get_uint(struct yaml_ctx *c, const struct yaml_field *f, uint64_t min, uint64_t max,
		    uint64_t *ret)
{
	char text[32], what[96];
	uint64_t v;

	snprintf(what, sizeof(what), "a whole number from %llu to %llu", (unsigned long long)min,
		 (unsigned long long)max);
	if (get_plain(c, f, what, text, sizeof(text)) < 0)
		return -1;
	if (parse_u64(text, strlen(text), &v) < 0 || v < min || v > max)
		return yaml_fail(c, f->line, f->path, "expected %s, got '%s'", what, text);
	*ret = v;
	return 0;
}

static int get_enum(struct yaml_ctx *c, const struct yaml_field *f, const char *const *names,
		    int *ret)
{
	char list[256], b[64];
	size_t len = 0;
	const char *s;

	for (int i = 0; names[i]; i++) {
		if (yaml_text_is(f->v, names[i])) {
			*ret = i;
			return 0;
		}
	}
	yaml_list_str(names, list, sizeof(list));
	if (!f->v || !fy_node_is_scalar(f->v) || yaml_is_null(f->v))
		return yaml_fail(c, f->line, f->path, "expected one of %s, got %s", list,
				 yaml_kind(f->v));
	s = fy_node_get_scalar(f->v, &len);
	return yaml_fail(c, f->line, f->path, "expected one of %s, got '%s'", list,
			 yaml_shown(s, len, b, sizeof(b)));
}

/* A NULL-terminated copy of a list of strings. */
static int get_strings(struct yaml_ctx *c, const struct yaml_field *f, bool nonempty, char ***ret,
		       size_t *ret_n)
{
	void *it = NULL;
	size_t n;
	char **v;

	if (yaml_get_list(c, f, "strings", nonempty, &n) < 0)
		return -1;
	if (!(v = calloc(n + 1, sizeof(*v))))
		return yaml_oom(c);
	for (size_t i = 0; i < n; i++) {
		struct yaml_field item;
		yaml_next_item(f, &it, i, &item);
		if (yaml_get_string(c, &item, &v[i]) < 0) {
			yaml_free_strv(v);
			return -1;
		}
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

/* An image pin's syntax (whether it exists is checked when grading):
 * "host", "NAME@VERSION" or "sha256:HEX".  A bare name would float to
 * whatever was built last, so it is refused. */
static bool valid_image_pin(const char *p)
{
	if (strcmp(p, "host") == 0)
		return true;
	if (strncmp(p, "sha256:", 7) == 0) {
		size_t n = strspn(p + 7, "0123456789abcdef");
		return n == 64 && p[71] == '\0';
	}
	const char *at = strchr(p, '@');
	size_t name_len = at ? (size_t)(at - p) : 0;
	if (!at || name_len == 0 || name_len > 64 ||
	    strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789._-") != name_len)
		return false;
	size_t digits = strspn(at + 1, "0123456789");
	return digits > 0 && digits < 10 && at[1] != '0' && at[1 + digits] == '\0';
}

/* ---- limits and steps ---- */

/* docs/assignment.md's defaults: roomier than `proctor run`'s, since a build
 * or a test runner is a compiler or an interpreter with children. */
static void step_limits_default(struct limits *l)
{
	*l = (struct limits){
	    .cpu_ms = 10000,
	    .wall_ms = 20000,
	    .memory_bytes = 512ull << 20,
	    .pids = 128,
	    .fsize_bytes = 64ull << 20,
	    .disk_bytes = 256ull << 20,
	    .output_bytes = 64ull << 10,
	    .nofile = 256,
	};
}

/* Limits given in the map f override those in l.  The bounds are
 * runlimits.c's table, which also converts the units (limits_set). */
static int parse_limits(struct yaml_ctx *c, const struct yaml_field *f, struct limits *l)
{
	unsigned nt;
	const struct limit_desc *table = limits_table(&nt), *d;

	if (yaml_check_keys(c, f, limit_keys) < 0)
		return -1;
	for (size_t k = 0; limit_keys[k]; k++) {
		struct yaml_field lf;
		char text[32], what[128];
		uint64_t v;
		int bad;
		struct err le;

		if (!yaml_lookup(f, limit_keys[k], &lf))
			continue;
		for (d = table; d < table + nt && strcmp(d->name, limit_names[k]) != 0; d++)
			;
		if (d == table + nt)
			return err_set(c->e, EINVAL, "%s: no limit '%s'", c->file, limit_names[k]);
		if (d->unit == LIMIT_UNIT_SECONDS)
			snprintf(what, sizeof(what),
				 "a number of seconds from %llu.%03llu to %llu, at most 3 decimals",
				 (unsigned long long)(d->min / 1000),
				 (unsigned long long)(d->min % 1000),
				 (unsigned long long)(d->max / 1000));
		else
			snprintf(what, sizeof(what), "a whole number%s from %llu to %llu",
				 d->unit == LIMIT_UNIT_MIB   ? " of MiB"
				 : d->unit == LIMIT_UNIT_KIB ? " of KiB"
							     : "",
				 (unsigned long long)d->min, (unsigned long long)d->max);
		if (get_plain(c, &lf, what, text, sizeof(text)) < 0)
			return -1;
		if (d->unit == LIMIT_UNIT_SECONDS)
			bad = parse_seconds_ms(text, &v);
		else
			bad = parse_u64(text, strlen(text), &v);
		if (bad < 0 || v < d->min || v > d->max)
			return yaml_fail(c, lf.line, lf.path, "expected %s, got '%s'", what, text);
		if (limits_set(l, d->name, text, &le) < 0)
			return yaml_fail(c, lf.line, lf.path, "%s", le.msg);
		/* A limit this host cannot grant would fail every submission's
		 * run: refused now, naming the line. */
		if (limits_check_host(l, &le) < 0)
			return yaml_fail(c, lf.line, lf.path, "%s", le.msg);
	}
	return 0;
}

/* An argv: a non-empty list of strings, the first non-empty. */
static int parse_argv(struct yaml_ctx *c, const struct yaml_field *f, char ***ret, size_t *ret_n)
{
	if (f->v && fy_node_is_scalar(f->v) && !yaml_is_null(f->v))
		return yaml_fail(c, f->line, f->path,
				 "expected a list of strings (an argv like [make, test]; no shell "
				 "is involved), got a string");
	if (get_strings(c, f, true, ret, ret_n) < 0)
		return -1;
	if (!(*ret)[0][0])
		return yaml_fail(c, f->line, f->path, "the program (first item) must not be empty");
	return 0;
}

static int parse_step(struct yaml_ctx *c, const struct yaml_field *f, const char *const *keys,
		      const struct limits *base, struct step *s)
{
	struct yaml_field run, lim;

	if (yaml_check_keys(c, f, keys) < 0)
		return -1;
	if (!yaml_lookup(f, "run", &run))
		return missing(c, &run, "");
	if (parse_argv(c, &run, &s->argv, &s->argc) < 0)
		return -1;
	s->limits = *base;
	if (yaml_lookup(f, "limits", &lim) && parse_limits(c, &lim, &s->limits) < 0)
		return -1;
	s->present = true;
	return 0;
}

static int parse_ok_exit(struct yaml_ctx *c, const struct yaml_field *f, struct assignment *a)
{
	size_t max = sizeof(a->ok_exit) / sizeof(a->ok_exit[0]), n;
	void *it = NULL;

	if (yaml_get_list(c, f, "exit codes", true, &n) < 0)
		return -1;
	if (n > max)
		return yaml_fail(c, f->line, f->path, "more than %zu exit codes", max);
	for (size_t i = 0; i < n; i++) {
		struct yaml_field item;
		uint64_t v = 0;
		yaml_next_item(f, &it, i, &item);
		if (get_uint(c, &item, 0, 255, &v) < 0)
			return -1;
		a->ok_exit[i] = (int)v;
	}
	a->n_ok_exit = n;
	return 0;
}

/* A path of the YAML, relative to the assignment directory, resolved to an
 * existing directory or regular file strictly inside it. */
static int resolve_path(struct yaml_ctx *c, const struct yaml_field *f, bool want_dir, char **ret)
{
	return yaml_resolve_path(c, f, "the assignment directory", want_dir ? S_IFDIR : S_IFREG, 0,
				 ret);
}

/* The items of a list of submission paths or globs: relative, without
 * "..", and, when `globs` is given, each taken by one of them. */
static int check_submission_paths(struct yaml_ctx *c, const struct yaml_field *list, char **v,
				  size_t n, char **globs, size_t n_globs)
{
	void *it = NULL;
	struct yaml_field item;
	char b[128];

	for (size_t i = 0; i < n; i++) {
		size_t g = 0;

		yaml_next_item(list, &it, i, &item);
		yaml_shown(v[i], strlen(v[i]), b, sizeof(b));
		if (!*v[i] || yaml_has_control(v[i]))
			return yaml_fail(c, item.line, item.path,
					 "must be non-empty, without control characters");
		if (v[i][0] == '/' || yaml_has_dotdot(v[i]))
			return yaml_fail(
			    c, item.line, item.path,
			    "'%s' must be relative to the submission root, without '..'", b);
		while (globs && g < n_globs && fnmatch(globs[g], v[i], FNM_PATHNAME) != 0)
			g++;
		if (globs && g == n_globs)
			return yaml_fail(
			    c, item.line, item.path,
			    "'%s' matches none of submission.files, so it can never be taken", b);
	}
	return 0;
}

/*
 * build.objects: files are paths below /work (relative, no "..", no glob
 * characters: each names one file the build makes); allow is a list of
 * fnmatch(3) globs, possibly empty (an object that may define nothing).
 */
static int parse_objects(struct yaml_ctx *c, const struct yaml_field *f, struct build_objects *o)
{
	struct yaml_field files, allow, item;
	void *it = NULL;
	char b[128];

	if (yaml_check_keys(c, f, objects_keys) < 0)
		return -1;
	if (!yaml_lookup(f, "files", &files))
		return missing(c, &files, "");
	if (!yaml_lookup(f, "allow", &allow))
		return missing(c, &allow, " (the symbols the objects may define; [] for none)");
	if (get_strings(c, &files, true, &o->files, &o->n_files) < 0 ||
	    get_strings(c, &allow, false, &o->allow, &o->n_allow) < 0)
		return -1;
	for (size_t i = 0; i < o->n_files; i++) {
		const char *p = o->files[i];
		yaml_next_item(&files, &it, i, &item);
		yaml_shown(p, strlen(p), b, sizeof(b));
		if (!*p || yaml_has_control(p) || p[0] == '/' || yaml_has_dotdot(p) ||
		    strpbrk(p, "*?[") || strlen(p) > 1024)
			return yaml_fail(c, item.line, item.path,
					 "'%s' must be a file's path relative to /work, without "
					 "'..', glob characters or control characters",
					 b);
	}
	it = NULL;
	for (size_t i = 0; i < o->n_allow; i++) {
		const char *g = o->allow[i];
		yaml_next_item(&allow, &it, i, &item);
		if (!*g || yaml_has_control(g) || strlen(g) > 4096)
			return yaml_fail(c, item.line, item.path,
					 "must be a non-empty symbol name or glob, without control "
					 "characters");
	}
	return 0;
}

/* ---- the sections ---- */

static int parse_submission(struct yaml_ctx *c, const struct yaml_field *root, struct assignment *a)
{
	struct yaml_field sub, files, req, f;

	if (!yaml_lookup(root, "submission", &sub))
		return missing(c, &sub, "");
	if (yaml_check_keys(c, &sub, submission_keys) < 0)
		return -1;
	if (!yaml_lookup(&sub, "files", &files))
		return missing(c, &files, "");
	if (get_strings(c, &files, true, &a->files, &a->n_files) < 0 ||
	    check_submission_paths(c, &files, a->files, a->n_files, NULL, 0) < 0)
		return -1;
	if (!yaml_lookup(&sub, "required", &req))
		a->required = calloc(1, sizeof(char *));
	else if (get_strings(c, &req, false, &a->required, &a->n_required) < 0)
		return -1;
	if (!a->required)
		return yaml_oom(c);
	if (check_submission_paths(c, &req, a->required, a->n_required, a->files, a->n_files) < 0)
		return -1;
	if ((yaml_lookup(&sub, "max_bytes", &f) &&
	     get_uint(c, &f, 1, 1ull << 30, &a->max_bytes) < 0) ||
	    (yaml_lookup(&sub, "max_files", &f) &&
	     get_uint(c, &f, 1, 1000000, &a->max_entries) < 0))
		return -1;
	return 0;
}

static int parse_report(struct yaml_ctx *c, const struct yaml_field *root, struct assignment *a)
{
	struct yaml_field rep, f;
	const char *p;
	uint64_t kb;
	int v;

	if (!yaml_lookup(root, "report", &rep))
		return missing(c, &rep, RUNNER_NEEDS);
	if (yaml_check_keys(c, &rep, report_keys) < 0)
		return -1;
	if (!yaml_lookup(&rep, "format", &f))
		return missing(c, &f, "");
	if (get_enum(c, &f, format_names, &v) < 0)
		return -1;
	a->report_format = (enum report_format)v;
	if (yaml_lookup(&rep, "path", &f)) {
		if (yaml_get_string(c, &f, &a->report_path) < 0)
			return -1;
		p = a->report_path;
		/* Where the grader may copy from: /work (relative), /tmp, {report_dir}. */
		if (!*p || yaml_has_control(p) || yaml_has_dotdot(p) ||
		    (p[0] == '/' && strncmp(p, "/work/", 6) != 0 && strncmp(p, "/tmp/", 5) != 0))
			return yaml_fail(
			    c, f.line, f.path,
			    "must be a path relative to /work or below /work/, /tmp/ or "
			    "{report_dir}/, without '..'");
		/* Split, only the harness may write the report: {report_dir} is
		 * its own; /work and /tmp are the program's to write in too. */
		if (assignment_split(a) && strncmp(p, "{report_dir}/", 13) != 0)
			return yaml_fail(c, f.line, f.path,
					 "must be below {report_dir}/ when the tests run split from "
					 "the submission (Python runners; docs/grading.md), so the "
					 "program cannot rewrite the report; or set test.in_process: "
					 "true");
	}
	if (yaml_lookup(&rep, "max_kb", &f)) {
		if (get_uint(c, &f, 1, 1048576, &kb) < 0)
			return -1;
		a->report_max_bytes = kb << 10;
	}
	if (yaml_lookup(&rep, "pytest_guard", &f)) {
		if (get_enum(c, &f, bool_names, &v) < 0)
			return -1;
		a->pytest_guard = v == 1;
	}
	return 0;
}

/* The line of the name of item i of a list of maps, for "first at line N". */
static int name_line(const struct yaml_field *list, size_t i)
{
	struct yaml_field item = {fy_node_sequence_get_by_index(list->v, (int)i), list->line, ""},
			  name;

	yaml_lookup(&item, "name", &name);
	return name.line;
}

static int parse_tests(struct yaml_ctx *c, const struct yaml_field *root, struct assignment *a)
{
	struct yaml_field list, item, name, f;
	void *it = NULL;
	size_t n;
	int vis;
	char b[128];

	if (!yaml_lookup(root, "tests", &list))
		return missing(c, &list, RUNNER_NEEDS);
	if (yaml_get_list(c, &list, "tests", true, &n) < 0)
		return -1;
	if (!(a->tests = calloc(n, sizeof(*a->tests))))
		return yaml_oom(c);
	for (size_t i = 0; i < n; i++) {
		struct manifest_test *t = &a->tests[i].t;

		a->n_tests++;
		t->points = 1;
		yaml_next_item(&list, &it, i, &item);
		if (yaml_check_keys(c, &item, test_keys) < 0)
			return -1;
		if (!yaml_lookup(&item, "name", &name))
			return missing(c, &name, "");
		if (get_name(c, &name, &t->name) < 0 ||
		    (yaml_lookup(&item, "classname", &f) && get_name(c, &f, &t->classname) < 0) ||
		    (yaml_lookup(&item, "points", &f) &&
		     get_number(c, &f, 0, POINTS_MAX, &t->points) < 0))
			return -1;
		if (yaml_lookup(&item, "visibility", &f)) {
			if (get_enum(c, &f, visibility_names, &vis) < 0)
				return -1;
			a->tests[i].visibility = (enum visibility)vis;
		}
		/* A test without classname matches entries of every class
		 * (match.h), so it clashes with any test of the same name. */
		for (size_t j = 0; j < i; j++) {
			const struct manifest_test *o = &a->tests[j].t;
			if (strcmp(o->name, t->name) == 0 &&
			    (!o->classname || !t->classname ||
			     strcmp(o->classname, t->classname) == 0))
				return yaml_fail(c, name.line, name.path,
						 "duplicate test '%s' (first at line %d)",
						 yaml_shown(t->name, strlen(t->name), b, sizeof(b)),
						 name_line(&list, j));
		}
		a->max_score += t->points;
	}
	return 0;
}

/*
 * A split JUnit run compiles the hidden tests in the harness, against the
 * submission's classes (docs/grading.md, "Java: JUnit, split"): the build
 * step, run as the program, cannot read them, so a build command naming a
 * file or directory of tests_dir (javac ... SolutionTest.java) would fail
 * for every submission.  Said at load, naming the argument.
 */
static int junit_build_alone(struct yaml_ctx *c, const struct yaml_field *root,
			     const struct assignment *a)
{
	struct yaml_field f, run;
	char path[PATH_MAX];
	struct stat st;

	if (!assignment_split(a) || a->runner != RUNNER_JUNIT || !a->build.present || !a->tests_dir)
		return 0;
	for (size_t i = 1; a->build.argv[i]; i++) {
		const char *arg = a->build.argv[i];
		if (arg[0] == '-' || !arg[0] || yaml_has_dotdot(arg) || arg[0] == '/')
			continue;
		snprintf(path, sizeof(path), "%s/%s", a->tests_dir, arg);
		if (lstat(path, &st) < 0)
			continue;
		int line = yaml_lookup(root, "build", &f) && yaml_lookup(&f, "run", &run) ? run.line : 0;
		return yaml_fail(c, line, "build.run",
				 "names '%s', a file of tests_dir: the JUnit tests run split from "
				 "the submission by default, and the harness compiles them against "
				 "its classes (docs/grading.md, \"Java: JUnit, split\"), so the build "
				 "compiles the submission alone; leave '%s' out of build.run, or set "
				 "test.in_process: true",
				 arg, arg);
	}
	return 0;
}

static int parse_runner(struct yaml_ctx *c, const struct yaml_field *root, struct assignment *a)
{
	struct yaml_field test, top_ok, test_ok, io;
	struct limits base;
	bool in_test, at_top;

	if (yaml_lookup(root, "io", &io))
		return yaml_fail(c, io.line, io.path, "only used with mode: io");
	if (!yaml_lookup(root, "test", &test))
		return missing(c, &test, RUNNER_NEEDS);
	step_limits_default(&base);
	if (parse_step(c, &test, test_step_keys, &base, &a->test) < 0)
		return -1;
	a->runner = assignment_runner_kind(a->test.argv);
	if (yaml_lookup(&test, "in_process", &io)) {
		int v;
		if (get_enum(c, &io, bool_names, &v) < 0)
			return -1;
		if (v == 1 && a->runner != RUNNER_PYTEST && a->runner != RUNNER_UNITTEST &&
		    a->runner != RUNNER_NODE && a->runner != RUNNER_JUNIT)
			return yaml_fail(c, io.line, io.path,
					 "only Python runners (python3 -m pytest, python3 -m "
					 "unittest), node --test and the JUnit console launcher run "
					 "split; this runner always runs in one process");
		a->in_process = v == 1;
	}
	in_test = yaml_lookup(&test, "ok_exit", &test_ok);
	at_top = yaml_lookup(root, "ok_exit", &top_ok);
	if (at_top && in_test)
		return yaml_fail(c, test_ok.line, test_ok.path,
				 "given twice (also at line %d); keep one", top_ok.line);
	if ((at_top && parse_ok_exit(c, &top_ok, a) < 0) ||
	    (in_test && parse_ok_exit(c, &test_ok, a) < 0))
		return -1;
	if (parse_report(c, root, a) < 0 || junit_build_alone(c, root, a) < 0)
		return -1;
	return parse_tests(c, root, a);
}

static bool is_python(const char *base)
{
	if (strcmp(base, "python") == 0 || strcmp(base, "python3") == 0)
		return true;
	if (strncmp(base, "python3.", 8) != 0 || !base[8])
		return false;
	return strspn(base + 8, "0123456789") == strlen(base + 8);
}

enum runner_kind assignment_runner_kind(char *const *argv)
{
	const char *base;

	if (!argv || !argv[0])
		return RUNNER_OTHER;
	base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	if (strcmp(base, "pytest") == 0 || strcmp(base, "py.test") == 0)
		return RUNNER_PYTEST;
	if (is_python(base)) {
		/* Options before -m take no argument that could be "-m" (-X and
		 * -W do: skip theirs). */
		for (size_t i = 1; argv[i] && argv[i][0] == '-'; i++) {
			if (strcmp(argv[i], "-X") == 0 || strcmp(argv[i], "-W") == 0) {
				if (!argv[++i])
					break;
				continue;
			}
			if (strcmp(argv[i], "-m") != 0)
				continue;
			if (!argv[i + 1])
				break;
			if (strcmp(argv[i + 1], "pytest") == 0)
				return RUNNER_PYTEST;
			if (strcmp(argv[i + 1], "unittest") == 0 ||
			    strcmp(argv[i + 1], "xmlrunner") == 0)
				return RUNNER_UNITTEST;
			break;
		}
		return RUNNER_OTHER;
	}
	if (strcmp(base, "node") == 0 || strcmp(base, "nodejs") == 0) {
		for (size_t i = 1; argv[i]; i++)
			if (strcmp(argv[i], "--test") == 0)
				return RUNNER_NODE;
		return RUNNER_OTHER;
	}
	if (strcmp(base, "java") == 0)
		for (size_t i = 1; argv[i]; i++)
			if (strstr(argv[i], "junit-platform-console-standalone"))
				return RUNNER_JUNIT;
	return RUNNER_OTHER;
}

bool assignment_split(const struct assignment *a)
{
	return a->mode == GRADE_MODE_RUNNER && !a->in_process &&
	       (a->runner == RUNNER_PYTEST || a->runner == RUNNER_UNITTEST ||
		a->runner == RUNNER_NODE || a->runner == RUNNER_JUNIT);
}

static int parse_case(struct yaml_ctx *c, const struct yaml_field *item, const struct limits *base,
		      struct assignment *a, struct io_case *k)
{
	struct yaml_field f;
	int vis;

	k->points = 1;
	k->limits = *base;
	if (yaml_check_keys(c, item, case_keys) < 0)
		return -1;
	if (!yaml_lookup(item, "name", &f))
		return missing(c, &f, "");
	if (get_name(c, &f, &k->name) < 0)
		return -1;
	if (yaml_lookup(item, "stdin", &f) && resolve_path(c, &f, false, &k->stdin_path) < 0)
		return -1;
	if (!yaml_lookup(item, "expected", &f))
		return missing(c, &f, "");
	if (resolve_path(c, &f, false, &k->expected_path) < 0)
		return -1;
	/* SECURITY: expected output never enters a sandbox, and tests_dir is
	 * copied into every one. */
	if (a->tests_dir && yaml_path_within(a->tests_dir, k->expected_path))
		return yaml_fail(
		    c, f.line, f.path,
		    "is inside tests_dir, which is copied into the sandbox; keep expected "
		    "output elsewhere");
	if (!yaml_lookup(item, "args", &f))
		k->args = calloc(1, sizeof(char *));
	else if (get_strings(c, &f, false, &k->args, &k->n_args) < 0)
		return -1;
	if (!k->args)
		return yaml_oom(c);
	if ((yaml_lookup(item, "points", &f) && get_number(c, &f, 0, POINTS_MAX, &k->points) < 0) ||
	    (yaml_lookup(item, "limits", &f) && parse_limits(c, &f, &k->limits) < 0))
		return -1;
	if (yaml_lookup(item, "visibility", &f)) {
		if (get_enum(c, &f, visibility_names, &vis) < 0)
			return -1;
		k->visibility = (enum visibility)vis;
	}
	return 0;
}

static int parse_io(struct yaml_ctx *c, const struct yaml_field *root, struct assignment *a)
{
	static const char *const runner_only[] = {"test", "ok_exit", "report", "tests", NULL};
	struct yaml_field io, f, list, item, name;
	void *it = NULL;
	struct limits base;
	size_t n;
	uint64_t kb;
	int v;
	char b[128];

	for (size_t i = 0; runner_only[i]; i++)
		if (yaml_lookup(root, runner_only[i], &f))
			return yaml_fail(c, f.line, f.path, "only used with mode: runner");
	if (!yaml_lookup(root, "io", &io))
		return missing(c, &io, " (mode io needs io.run and io.cases)");
	if (yaml_check_keys(c, &io, io_keys) < 0)
		return -1;
	/* The checker gets the defaults; the program and its cases io.limits. */
	step_limits_default(&base);
	if ((yaml_lookup(&io, "checker", &f) &&
	     parse_step(c, &f, step_keys, &base, &a->checker) < 0) ||
	    (yaml_lookup(&io, "limits", &f) && parse_limits(c, &f, &base) < 0))
		return -1;
	if (!yaml_lookup(&io, "run", &f))
		return missing(c, &f, "");
	if (parse_argv(c, &f, &a->io_run.argv, &a->io_run.argc) < 0)
		return -1;
	a->io_run.limits = base;
	a->io_run.present = true;
	if (yaml_lookup(&io, "compare", &f)) {
		if (get_enum(c, &f, compare_names, &v) < 0)
			return -1;
		a->compare = (enum compare_mode)v;
	}
	if (yaml_lookup(&io, "float_tolerance", &f) &&
	    get_number(c, &f, 0, 1e9, &a->float_tolerance) < 0)
		return -1;
	if (yaml_lookup(&io, "output_max_kb", &f)) {
		if (get_uint(c, &f, 1, 1048576, &kb) < 0)
			return -1;
		a->io_output_max = kb << 10;
	}
	if (!yaml_lookup(&io, "cases", &list))
		return missing(c, &list, "");
	if (yaml_get_list(c, &list, "cases", true, &n) < 0)
		return -1;
	if (!(a->cases = calloc(n, sizeof(*a->cases))))
		return yaml_oom(c);
	for (size_t i = 0; i < n; i++) {
		struct io_case *k = &a->cases[a->n_cases++];

		yaml_next_item(&list, &it, i, &item);
		if (parse_case(c, &item, &base, a, k) < 0)
			return -1;
		yaml_lookup(&item, "name", &name);
		for (size_t j = 0; j < i; j++)
			if (strcmp(a->cases[j].name, k->name) == 0)
				return yaml_fail(c, name.line, name.path,
						 "duplicate case '%s' (first at line %d)",
						 yaml_shown(k->name, strlen(k->name), b, sizeof(b)),
						 name_line(&list, j));
		a->max_score += k->points;
	}
	return 0;
}

/* A name that goes into paths and URLs: [A-Za-z0-9._-]{1,64}, not . or .. */
static bool valid_id(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= 64 && strcmp(s, ".") != 0 && strcmp(s, "..") != 0 &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

static int parse_root(struct yaml_ctx *c, struct fy_node *node, struct assignment *a,
		      int *ret_tests_dir_line)
{
	struct yaml_field root = {.v = node, .line = 0, .path = ""}, f, obj;
	struct limits base;
	uint64_t retries;
	int mode = GRADE_MODE_RUNNER;
	char b[128];

	if (!fy_node_is_mapping(node))
		return yaml_fail(c, yaml_node_line(node, 0), NULL,
				 "expected a map of keys (name, submission, ...), got %s",
				 yaml_kind(node));
	if (yaml_check_keys(c, &root, top_keys) < 0)
		return -1;
	if (yaml_lookup(&root, "mode", &f) && get_enum(c, &f, mode_names, &mode) < 0)
		return -1;
	a->mode = (enum grade_mode)mode;
	if (!yaml_lookup(&root, "name", &f))
		return missing(c, &f, "");
	if (yaml_get_string(c, &f, &a->name) < 0)
		return -1;
	if (!valid_id(a->name))
		return yaml_fail(c, f.line, f.path,
				 "'%s' must be 1 to 64 characters from A-Z a-z 0-9 . _ -",
				 yaml_shown(a->name, strlen(a->name), b, sizeof(b)));
	if (!yaml_lookup(&root, "image", &f))
		a->image = strdup("host");
	else if (yaml_get_string(c, &f, &a->image) < 0)
		return -1;
	if (!a->image)
		return yaml_oom(c);
	if (!valid_image_pin(a->image))
		return yaml_fail(c, f.line, f.path,
				 "'%s' is not an image pin: host, NAME@VERSION (e.g. python@3) or "
				 "sha256:<64 hex digits>",
				 yaml_shown(a->image, strlen(a->image), b, sizeof(b)));
	int iso = 0;
	if (yaml_lookup(&root, "isolation", &f) && get_enum(c, &f, isolation_names, &iso) < 0)
		return -1;
	a->isolation = (enum assignment_isolation)iso;
	if (parse_submission(c, &root, a) < 0)
		return -1;
	if (yaml_lookup(&root, "tests_dir", &f)) {
		if (resolve_path(c, &f, true, &a->tests_dir) < 0)
			return -1;
		*ret_tests_dir_line = f.line;
	}
	step_limits_default(&base);
	if ((yaml_lookup(&root, "setup", &f) &&
	     parse_step(c, &f, step_keys, &base, &a->setup) < 0) ||
	    (yaml_lookup(&root, "build", &f) &&
	     parse_step(c, &f, build_keys, &base, &a->build) < 0))
		return -1;
	if (a->build.present && yaml_lookup(&f, "objects", &obj) &&
	    parse_objects(c, &obj, &a->objects) < 0)
		return -1;
	if (yaml_lookup(&root, "retries", &f)) {
		if (get_uint(c, &f, 0, 10, &retries) < 0)
			return -1;
		a->retries = (unsigned)retries;
	}
	return a->mode == GRADE_MODE_RUNNER ? parse_runner(c, &root, a) : parse_io(c, &root, a);
}

/* ---- step 5: the digest ---- */

struct file_list {
	char **rel; /* paths relative to the assignment directory */
	size_t n, cap;
};

static int list_add(struct yaml_ctx *c, struct file_list *l, const char *rel)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char **v = realloc(l->rel, cap * sizeof(*v));
		if (!v)
			return yaml_oom(c);
		l->rel = v;
		l->cap = cap;
	}
	if (!(l->rel[l->n] = strdup(rel)))
		return yaml_oom(c);
	l->n++;
	return 0;
}

/* The regular files below c->dir/rel.  Symlinks and special files are
 * refused now, as files_put() would refuse them at every grading. */
static int walk_tree(struct yaml_ctx *c, const char *rel, int line, struct file_list *l)
{
	char *abs = NULL, b[128];
	struct dirent *de;
	DIR *d = NULL;
	int r = 0;

	if (asprintf(&abs, "%s/%s", c->dir, rel) < 0)
		return yaml_oom(c);
	if (!(d = opendir(abs)))
		r = err_setk(c->e, ERR_INPUT, errno, "%s:%d: tests_dir: '%s'", c->file, line, rel);
	while (r == 0 && (errno = 0, de = readdir(d))) {
		char *child = NULL;
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (asprintf(&child, "%s/%s", rel, de->d_name) < 0) {
			r = yaml_oom(c);
			break;
		}
		yaml_shown(child, strlen(child), b, sizeof(b));
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			r = err_setk(c->e, ERR_INPUT, errno, "%s:%d: tests_dir: '%s'", c->file,
				     line, b);
		else if (S_ISDIR(st.st_mode))
			r = walk_tree(c, child, line, l);
		else if (!S_ISREG(st.st_mode))
			r = yaml_fail(c, line, "tests_dir",
				      "'%s' is a %s; only regular files and directories are copied",
				      b, S_ISLNK(st.st_mode) ? "symlink" : "special file");
		else if (l->n >= TREE_FILES_MAX)
			r = yaml_fail(c, line, "tests_dir", "more than %d files", TREE_FILES_MAX);
		else
			r = list_add(c, l, child);
		free(child);
	}
	if (r == 0 && errno != 0)
		r = err_setk(c->e, ERR_INPUT, errno, "%s:%d: tests_dir: '%s'", c->file, line, rel);
	if (d)
		closedir(d);
	free(abs);
	return r;
}

/*
 * SHA-256 over (name, size, content) of assignment.yaml as parsed, then of
 * each regular file of tests_dir and each case file, once each, sorted by
 * path relative to the assignment directory.  Names are length-prefixed
 * and sizes given, so no two sets of files produce the same stream.
 */
static int compute_digest(struct yaml_ctx *c, struct assignment *a, const char *text, size_t len,
			  int tests_dir_line)
{
	struct file_list l = {0};
	size_t skip = strlen(c->dir) + 1;
	struct digest *d = NULL;
	uint64_t size = len;
	int r = 0;

	if (a->tests_dir)
		r = walk_tree(c, a->tests_dir + skip, tests_dir_line, &l);
	for (size_t i = 0; r == 0 && i < a->n_cases; i++) {
		if (a->cases[i].stdin_path)
			r = list_add(c, &l, a->cases[i].stdin_path + skip);
		if (r == 0)
			r = list_add(c, &l, a->cases[i].expected_path + skip);
	}
	if (r == 0 && l.n > 0)
		qsort(l.rel, l.n, sizeof(*l.rel), strcmp_ptr);
	if (r == 0 && !(d = digest_new()))
		r = yaml_oom(c);
	if (r == 0) {
		digest_update_str(d, strrchr(a->file, '/') + 1);
		digest_update(d, &size, sizeof(size));
		digest_update(d, text, len);
	}
	for (size_t i = 0; r == 0 && i < l.n; i++) {
		char *abs = NULL;
		struct stat st;

		if (i > 0 && strcmp(l.rel[i], l.rel[i - 1]) == 0)
			continue;
		if (asprintf(&abs, "%s/%s", c->dir, l.rel[i]) < 0) {
			r = yaml_oom(c);
			break;
		}
		if (stat(abs, &st) < 0)
			r = err_setk(c->e, ERR_INPUT, errno, "%s: '%s'", c->file, l.rel[i]);
		if (r == 0) {
			size = (uint64_t)st.st_size;
			digest_update_str(d, l.rel[i]);
			digest_update(d, &size, sizeof(size));
			/* A file of the assignment that cannot be read. */
			if (digest_update_file(d, abs, c->e) < 0) {
				err_wrap(c->e, "%s: digest", c->file);
				r = err_classify(c->e, ERR_INPUT);
			}
		}
		free(abs);
	}
	if (r == 0)
		digest_final(d, a->digest); /* frees d */
	else
		digest_free(d);
	for (size_t i = 0; i < l.n; i++)
		free(l.rel[i]);
	free(l.rel);
	return r;
}

/* ---- entry points ---- */

/* Where the file is: *ret_shown as the caller wrote it, for messages; a->dir
 * the realpath of the directory named (even if assignment.yaml is a symlink
 * to elsewhere), a->file that directory's assignment.yaml. */
static int locate(const char *dir, struct assignment *a, char **ret_shown, struct err *e)
{
	size_t n = strlen(dir);
	bool is_file = n > 5 && strcmp(dir + n - 5, ".yaml") == 0;
	const char *slash = strrchr(dir, '/'), *name = "assignment.yaml";
	char *shown_path = NULL, *parent = strdup(dir);
	int r = -1;

	if (is_file) {
		name = slash ? slash + 1 : dir;
		shown_path = strdup(dir);
		if (parent)
			parent[name - dir] = '\0'; /* "x/a.yaml" -> "x/", "a.yaml" -> "" */
	} else if (asprintf(&shown_path, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name) <
		   0) {
		shown_path = NULL;
	}
	if (!shown_path || !parent)
		err_set(e, ENOMEM, "%s", dir);
	else if (!(a->dir = realpath(*parent ? parent : ".", NULL)))
		err_setk(e, ERR_INPUT, errno, "%s", *parent ? parent : ".");
	else if (asprintf(&a->file, "%s/%s", strcmp(a->dir, "/") ? a->dir : "", name) >= 0)
		r = 0;
	else {
		a->file = NULL;
		err_set(e, ENOMEM, "%s", dir);
	}
	free(parent);
	if (r == 0)
		*ret_shown = shown_path;
	else
		free(shown_path);
	return r;
}

static void set_defaults(struct assignment *a)
{
	a->max_bytes = 1u << 20;
	a->max_entries = 10000;
	a->ok_exit[0] = 0;
	a->n_ok_exit = 1;
	a->report_format = REPORT_JUNIT;
	a->report_max_bytes = 8u << 20;
	a->mode = GRADE_MODE_RUNNER;
	a->compare = CMP_TRAILING_WS;
	a->float_tolerance = 1e-6;
	a->io_output_max = 16u << 20;
	a->retries = 2;
	step_limits_default(&a->setup.limits);
	a->build.limits = a->test.limits = a->io_run.limits = a->checker.limits = a->setup.limits;
}

int assignment_load(const char *dir, struct assignment **ret, struct err *e)
{
	struct assignment *a = calloc(1, sizeof(*a));
	struct fy_document *doc = NULL;
	char *shown_path = NULL, *text = NULL;
	struct yaml_ctx c = {.e = e, .noun = "an assignment", .max_items = ITEMS_MAX};
	int tests_dir_line = 0, r = -1;
	size_t len = 0;

	if (!a)
		return err_set(e, ENOMEM, "%s", dir);
	if (locate(dir, a, &shown_path, e) < 0)
		goto out_free;
	c.file = shown_path;
	c.dir = a->dir;
	set_defaults(a);
	if (yaml_read_text(&c, a->file, &text, &len) < 0 || yaml_parse(&c, text, len, &doc) < 0 ||
	    parse_root(&c, fy_document_root(doc), a, &tests_dir_line) < 0 ||
	    compute_digest(&c, a, text, len, tests_dir_line) < 0)
		goto out_free;
	*ret = a;
	a = NULL;
	r = 0;
out_free:
	if (doc)
		fy_document_destroy(doc);
	free(text);
	free(shown_path);
	assignment_free(a);
	return r;
}

void assignment_free(struct assignment *a)
{
	if (!a)
		return;
	free(a->dir);
	free(a->file);
	free(a->name);
	free(a->image);
	yaml_free_strv(a->files);
	yaml_free_strv(a->required);
	free(a->tests_dir);
	yaml_free_strv(a->setup.argv);
	yaml_free_strv(a->build.argv);
	yaml_free_strv(a->objects.files);
	yaml_free_strv(a->objects.allow);
	yaml_free_strv(a->test.argv);
	free(a->report_path);
	for (size_t i = 0; i < a->n_tests; i++) {
		free(a->tests[i].t.name);
		free(a->tests[i].t.classname);
	}
	free(a->tests);
	yaml_free_strv(a->io_run.argv);
	for (size_t i = 0; i < a->n_cases; i++) {
		free(a->cases[i].name);
		free(a->cases[i].stdin_path);
		free(a->cases[i].expected_path);
		yaml_free_strv(a->cases[i].args);
	}
	free(a->cases);
	yaml_free_strv(a->checker.argv);
	free(a);
}
