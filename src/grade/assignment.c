/* Loading assignment.yaml: a strict schema, paths kept inside the assignment directory, defaults,
 * digest. */
#include "grade/assignment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <libfyaml.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "util.h"

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

#define FILE_MAX       (1u << 20) /* bytes of assignment.yaml */
#define ITEMS_MAX      10000	  /* entries of one list: tests, cases, argv, globs */
#define TREE_FILES_MAX 100000	  /* files below tests_dir */
#define POINTS_MAX     1e6
#define PATH_LEN       256 /* a dotted key path in a message */
#define RUNNER_NEEDS   " (mode runner needs test, report and tests)"

struct ctx {
	const char *file; /* the file as the caller named it, for messages */
	const char *dir;  /* realpath of the assignment directory */
	struct err *e;
};

/* A value looked up in a map: the node, and how to point at it. */
struct field {
	struct fy_node *v; /* NULL when the key is absent */
	int line;	   /* the key's line; the enclosing map's when absent; 0: unknown */
	char path[PATH_LEN];
};

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
				       "tests", "io",	 "retries", "isolation", NULL};
static const char *const submission_keys[] = {"files", "required", "max_bytes", "max_files", NULL};
static const char *const step_keys[] = {"run", "limits", NULL};
static const char *const test_step_keys[] = {"run", "limits", "ok_exit", NULL};
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

/* ---- messages ---- */

__attribute__((format(printf, 4, 5))) static int fail(struct ctx *c, int line, const char *path,
						      const char *fmt, ...)
{
	char msg[768], where[24] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0)
		snprintf(where, sizeof(where), ":%d", line);
	if (path && *path)
		return err_set(c->e, 0, "%s%s: %s: %s", c->file, where, path, msg);
	return err_set(c->e, 0, "%s%s: %s", c->file, where, msg);
}

static int oom(struct ctx *c)
{
	return err_set(c->e, ENOMEM, "%s", c->file);
}

/* Text from the file as it may appear in a one-line message: cut, and
 * control characters replaced. */
static const char *shown(const char *s, size_t len, char *buf, size_t cap)
{
	size_t i = 0;

	for (; i < len && i + 4 < cap; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	if (i < len) {
		memcpy(buf + i, "...", 3);
		i += 3;
	}
	buf[i] = '\0';
	return buf;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* ---- step 1: the text ---- */

static int read_text(struct ctx *c, const char *path, char **ret, size_t *ret_len)
{
	struct stat st;
	char *buf = NULL;
	const char *nul;
	size_t len = 0;
	int r = -1, line = 1, fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return err_set(c->e, errno, "%s", c->file);
	if (fstat(fd, &st) < 0)
		err_set(c->e, errno, "%s", c->file);
	else if (!S_ISREG(st.st_mode))
		fail(c, 0, NULL, "not a regular file");
	else if (st.st_size > FILE_MAX)
		fail(c, 0, NULL, "larger than 1 MiB (%lld bytes)", (long long)st.st_size);
	else if (!(buf = malloc(FILE_MAX + 1)))
		oom(c);
	else
		r = 0;
	/* Reading one byte more than allowed catches a file that grew. */
	while (r == 0 && len <= FILE_MAX) {
		ssize_t n = read(fd, buf + len, FILE_MAX + 1 - len);
		if (n < 0 && errno != EINTR)
			r = err_set(c->e, errno, "%s: read", c->file);
		else if (n == 0)
			break;
		else if (n > 0)
			len += (size_t)n;
	}
	close(fd);
	if (r == 0 && len > FILE_MAX)
		r = fail(c, 0, NULL, "larger than 1 MiB");
	else if (r == 0 && len == 0)
		r = fail(c, 0, NULL, "the file is empty");
	else if (r == 0 && (nul = memchr(buf, '\0', len)))
		r = fail(c, 0, NULL, "not a text file (NUL byte at offset %zu)",
			 (size_t)(nul - buf));
	for (size_t i = 0; r == 0 && i < len; i++) {
		unsigned char b = (unsigned char)buf[i];
		line += b == '\n';
		if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f)
			r = fail(c, line, NULL,
				 "control character 0x%02x (only tab and newline may appear)", b);
	}
	if (r < 0) {
		free(buf);
		return -1;
	}
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* ---- step 2: YAML ---- */

static int token_line(struct fy_token *t)
{
	const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
	return m ? m->line + 1 : 0;
}

/* The line a node starts on (for collections: their first scalar's). */
static int node_line(struct fy_node *n, int fallback)
{
	void *it = NULL;
	struct fy_node_pair *p;
	int line = 0;

	if (n && fy_node_is_scalar(n))
		line = token_line(fy_node_get_scalar_token(n));
	else if (n && fy_node_is_mapping(n) && (p = fy_node_mapping_iterate(n, &it)))
		line = node_line(fy_node_pair_key(p), 0);
	else if (n && fy_node_is_sequence(n))
		line = node_line(fy_node_sequence_iterate(n, &it), 0);
	return line > 0 ? line : fallback;
}

static int syntax_error(struct ctx *c, struct fy_diag *diag)
{
	void *it = NULL;
	struct fy_diag_error *de = fy_diag_errors_iterate(diag, &it);
	char buf[256];

	if (!de || !de->msg)
		return fail(c, 0, NULL, "not valid YAML");
	/* de->line counts from 1, unlike fy_mark's. */
	return fail(c, de->line, NULL, "not valid YAML: %s",
		    shown(de->msg, strlen(de->msg), buf, sizeof(buf)));
}

static int parse_yaml(struct ctx *c, const char *text, size_t len, struct fy_document **ret)
{
	struct fy_diag_cfg dcfg;
	struct fy_diag *diag;
	struct fy_parser *fyp;
	struct fy_event *ev;
	struct fy_document *doc = NULL;
	int docs = 0, r = 0;

	fy_diag_cfg_default(&dcfg);
	dcfg.fp = NULL; /* library code does not print: errors are collected */
	if (!(diag = fy_diag_create(&dcfg)))
		return oom(c);
	fy_diag_set_collect_errors(diag, true);
	/* Duplicate keys are reported by check_keys(), with both lines. */
	struct fy_parse_cfg cfg = {
	    .flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG | FYPCF_ALLOW_DUPLICATE_KEYS,
	    .diag = diag,
	};
	fyp = fy_parser_create(&cfg);
	if (!fyp || fy_parser_set_string(fyp, text, len) < 0)
		r = oom(c);
	while (r == 0 && (ev = fy_parser_parse(fyp))) {
		const struct fy_mark *m = fy_event_start_mark(ev);
		int line = m ? m->line + 1 : 0;
		struct fy_token *t = ev->type == FYET_ALIAS	       ? ev->alias.anchor
				     : ev->type == FYET_SCALAR	       ? ev->scalar.anchor
				     : ev->type == FYET_MAPPING_START  ? ev->mapping_start.anchor
				     : ev->type == FYET_SEQUENCE_START ? ev->sequence_start.anchor
								       : NULL;
		size_t tlen = 0;
		const char *name = t ? fy_token_get_text(t, &tlen) : NULL;
		char buf[64];

		if (ev->type == FYET_DOCUMENT_START && ++docs > 1)
			r = fail(c, line, NULL,
				 "a second YAML document ('---'); an assignment is one document");
		else if (t)
			r = fail(c, ev->type == FYET_ALIAS ? line : token_line(t), NULL,
				 "%s '%c%s': anchors, aliases and merge keys are not supported; "
				 "write the value out",
				 ev->type == FYET_ALIAS ? "alias" : "anchor",
				 ev->type == FYET_ALIAS ? '*' : '&',
				 shown(name ? name : "", name ? tlen : 0, buf, sizeof(buf)));
		fy_parser_event_free(fyp, ev);
	}
	if (r == 0 && fy_parser_get_stream_error(fyp))
		r = syntax_error(c, diag);
	if (r == 0 && !(doc = fy_document_build_from_string(&cfg, text, len)))
		r = syntax_error(c, diag);
	if (r == 0 && !fy_document_root(doc))
		r = fail(c, 0, NULL, "no YAML document (only comments or blank lines)");
	if (r == 0)
		*ret = doc;
	else if (doc)
		fy_document_destroy(doc);
	if (fyp)
		fy_parser_destroy(fyp);
	fy_diag_destroy(diag); /* frees the collected errors; fy_diag_unref() would not */
	return r;
}

/* ---- step 3: keys and types ---- */

/* YAML's null: an empty value, ~ or null (plain, not quoted). */
static bool is_null(struct fy_node *n)
{
	size_t len = 0;
	const char *s;

	if (!n)
		return true;
	if (!fy_node_is_scalar(n) || fy_node_get_style(n) != FYNS_PLAIN)
		return false;
	s = fy_node_get_scalar(n, &len);
	return !s || len == 0 || (len == 1 && *s == '~') ||
	       (len == 4 &&
		(!memcmp(s, "null", 4) || !memcmp(s, "Null", 4) || !memcmp(s, "NULL", 4)));
}

static const char *kind(struct fy_node *n)
{
	if (is_null(n))
		return "nothing";
	if (fy_node_is_sequence(n))
		return "a list";
	if (fy_node_is_mapping(n))
		return "a map";
	return fy_node_get_style(n) == FYNS_PLAIN ? "a string" : "a quoted string";
}

static bool text_is(struct fy_node *n, const char *text)
{
	size_t len = 0;
	const char *s = n && fy_node_is_scalar(n) ? fy_node_get_scalar(n, &len) : NULL;
	return s && len == strlen(text) && memcmp(s, text, len) == 0;
}

static void join(char *out, const char *prefix, const char *key)
{
	snprintf(out, PATH_LEN, "%s%s%s", prefix, *prefix ? "." : "", key);
}

static void list_str(const char *const *names, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (size_t i = 0, used = 0; names[i] && used < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", names[i]);
}

/* f is a map whose keys are all in `allowed`, each once. */
static int check_keys(struct ctx *c, const struct field *f, const char *const *allowed)
{
	int first[16] = {0}; /* line where each allowed key was seen */
	void *it = NULL;
	struct fy_node_pair *p;
	char path[PATH_LEN], buf[80], list[512];

	if (!f->v || !fy_node_is_mapping(f->v))
		return fail(c, f->line, f->path, "expected a map, got %s", kind(f->v));
	while ((p = fy_node_mapping_iterate(f->v, &it))) {
		struct fy_node *k = fy_node_pair_key(p);
		int line = node_line(k, f->line);
		size_t i, len = 0;
		const char *s;

		if (!k || !fy_node_is_scalar(k) || is_null(k))
			return fail(c, line, f->path, "keys must be strings, got %s", kind(k));
		s = fy_node_get_scalar(k, &len);
		join(path, f->path, shown(s, len, buf, sizeof(buf)));
		if (text_is(k, "<<"))
			return fail(c, line, path,
				    "merge keys are not supported; write the keys out");
		for (i = 0; allowed[i] && !text_is(k, allowed[i]); i++)
			;
		if (!allowed[i]) {
			list_str(allowed, list, sizeof(list));
			return fail(c, line, path, "unknown key (expected %s)", list);
		}
		if (first[i])
			return fail(c, line, path, "duplicate key (first at line %d)", first[i]);
		first[i] = line;
	}
	return 0;
}

/* Look `key` up in the map `map` (already checked); true when present. */
static bool lookup(const struct field *map, const char *key, struct field *ret)
{
	void *it = NULL;
	struct fy_node_pair *p;

	join(ret->path, map->path, key);
	ret->v = NULL;
	ret->line = map->line;
	while ((p = fy_node_mapping_iterate(map->v, &it))) {
		if (text_is(fy_node_pair_key(p), key)) {
			ret->v = fy_node_pair_value(p);
			ret->line = node_line(fy_node_pair_key(p), map->line);
			return true;
		}
	}
	return false;
}

static int missing(struct ctx *c, const struct field *f, const char *why)
{
	return fail(c, f->line, f->path, "missing required key%s", why);
}

/* The next item of the list `list` (*it NULL at the start), as a field
 * named list[i].  Items are a linked list: iterating keeps loops linear. */
static void next_item(const struct field *list, void **it, size_t i, struct field *ret)
{
	ret->v = fy_node_sequence_iterate(list->v, it);
	ret->line = node_line(ret->v, list->line);
	snprintf(ret->path, PATH_LEN, "%s[%zu]", list->path, i);
}

static int get_string(struct ctx *c, const struct field *f, char **ret)
{
	size_t len = 0;
	const char *s;

	if (!f->v || !fy_node_is_scalar(f->v) || is_null(f->v))
		return fail(c, f->line, f->path, "expected a string, got %s", kind(f->v));
	s = fy_node_get_scalar(f->v, &len);
	if (memchr(s, '\0', len))
		return fail(c, f->line, f->path, "a NUL character is not allowed");
	*ret = strndup(s, len);
	return *ret ? 0 : oom(c);
}

/* A name shown to people (tests, cases, classnames): printable, non-empty. */
static int get_name(struct ctx *c, const struct field *f, char **ret)
{
	if (get_string(c, f, ret) < 0)
		return -1;
	if (!**ret || has_control(*ret))
		return fail(c, f->line, f->path, "must be non-empty, without control characters");
	return 0;
}

/* The text of a plain scalar, for a number: "5" in quotes is a string. */
static int get_plain(struct ctx *c, const struct field *f, const char *what, char *buf, size_t cap)
{
	size_t len = 0;
	const char *s;
	char b[64];

	if (!f->v || !fy_node_is_scalar(f->v) || is_null(f->v) ||
	    fy_node_get_style(f->v) != FYNS_PLAIN)
		return fail(c, f->line, f->path, "expected %s, got %s", what, kind(f->v));
	s = fy_node_get_scalar(f->v, &len);
	if (len >= cap)
		return fail(c, f->line, f->path, "expected %s, got '%s'", what,
			    shown(s, len, b, sizeof(b)));
	memcpy(buf, s, len);
	buf[len] = '\0';
	return 0;
}

static int get_number(struct ctx *c, const struct field *f, double min, double max, double *ret)
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
		return fail(c, f->line, f->path, "expected %s, got '%s'", what, text);
	*ret = v;
	return 0;
}

static int get_uint(struct ctx *c, const struct field *f, uint64_t min, uint64_t max, uint64_t *ret)
{
	char text[32], what[96];
	uint64_t v;

	snprintf(what, sizeof(what), "a whole number from %llu to %llu", (unsigned long long)min,
		 (unsigned long long)max);
	if (get_plain(c, f, what, text, sizeof(text)) < 0)
		return -1;
	if (parse_u64(text, strlen(text), &v) < 0 || v < min || v > max)
		return fail(c, f->line, f->path, "expected %s, got '%s'", what, text);
	*ret = v;
	return 0;
}

static int get_enum(struct ctx *c, const struct field *f, const char *const *names, int *ret)
{
	char list[256], b[64];
	size_t len = 0;
	const char *s;

	for (int i = 0; names[i]; i++) {
		if (text_is(f->v, names[i])) {
			*ret = i;
			return 0;
		}
	}
	list_str(names, list, sizeof(list));
	if (!f->v || !fy_node_is_scalar(f->v) || is_null(f->v))
		return fail(c, f->line, f->path, "expected one of %s, got %s", list, kind(f->v));
	s = fy_node_get_scalar(f->v, &len);
	return fail(c, f->line, f->path, "expected one of %s, got '%s'", list,
		    shown(s, len, b, sizeof(b)));
}

/* The length of a list of at most ITEMS_MAX items. */
static int get_list(struct ctx *c, const struct field *f, const char *what, bool nonempty,
		    size_t *ret_n)
{
	int n;

	if (!f->v || !fy_node_is_sequence(f->v))
		return fail(c, f->line, f->path, "expected a list of %s, got %s", what, kind(f->v));
	n = fy_node_sequence_item_count(f->v);
	if (n < 0 || n > ITEMS_MAX)
		return fail(c, f->line, f->path, "more than %d items", ITEMS_MAX);
	if (n == 0 && nonempty)
		return fail(c, f->line, f->path, "must not be empty");
	*ret_n = (size_t)n;
	return 0;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* A NULL-terminated copy of a list of strings. */
static int get_strings(struct ctx *c, const struct field *f, bool nonempty, char ***ret,
		       size_t *ret_n)
{
	void *it = NULL;
	size_t n;
	char **v;

	if (get_list(c, f, "strings", nonempty, &n) < 0)
		return -1;
	if (!(v = calloc(n + 1, sizeof(*v))))
		return oom(c);
	for (size_t i = 0; i < n; i++) {
		struct field item;
		next_item(f, &it, i, &item);
		if (get_string(c, &item, &v[i]) < 0) {
			free_strv(v);
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
static int parse_limits(struct ctx *c, const struct field *f, struct limits *l)
{
	unsigned nt;
	const struct limit_desc *table = limits_table(&nt), *d;

	if (check_keys(c, f, limit_keys) < 0)
		return -1;
	for (size_t k = 0; limit_keys[k]; k++) {
		struct field lf;
		char text[32], what[128];
		uint64_t v;
		int bad;
		struct err le;

		if (!lookup(f, limit_keys[k], &lf))
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
			return fail(c, lf.line, lf.path, "expected %s, got '%s'", what, text);
		if (limits_set(l, d->name, text, &le) < 0)
			return fail(c, lf.line, lf.path, "%s", le.msg);
	}
	return 0;
}

/* An argv: a non-empty list of strings, the first non-empty. */
static int parse_argv(struct ctx *c, const struct field *f, char ***ret, size_t *ret_n)
{
	if (f->v && fy_node_is_scalar(f->v) && !is_null(f->v))
		return fail(c, f->line, f->path,
			    "expected a list of strings (an argv like [make, test]; no shell "
			    "is involved), got a string");
	if (get_strings(c, f, true, ret, ret_n) < 0)
		return -1;
	if (!(*ret)[0][0])
		return fail(c, f->line, f->path, "the program (first item) must not be empty");
	return 0;
}

static int parse_step(struct ctx *c, const struct field *f, const char *const *keys,
		      const struct limits *base, struct step *s)
{
	struct field run, lim;

	if (check_keys(c, f, keys) < 0)
		return -1;
	if (!lookup(f, "run", &run))
		return missing(c, &run, "");
	if (parse_argv(c, &run, &s->argv, &s->argc) < 0)
		return -1;
	s->limits = *base;
	if (lookup(f, "limits", &lim) && parse_limits(c, &lim, &s->limits) < 0)
		return -1;
	s->present = true;
	return 0;
}

static int parse_ok_exit(struct ctx *c, const struct field *f, struct assignment *a)
{
	size_t max = sizeof(a->ok_exit) / sizeof(a->ok_exit[0]), n;
	void *it = NULL;

	if (get_list(c, f, "exit codes", true, &n) < 0)
		return -1;
	if (n > max)
		return fail(c, f->line, f->path, "more than %zu exit codes", max);
	for (size_t i = 0; i < n; i++) {
		struct field item;
		uint64_t v;
		next_item(f, &it, i, &item);
		if (get_uint(c, &item, 0, 255, &v) < 0)
			return -1;
		a->ok_exit[i] = (int)v;
	}
	a->n_ok_exit = n;
	return 0;
}

/* ---- step 4: paths ---- */

static bool has_dotdot(const char *p)
{
	for (const char *s = p; (s = strstr(s, "..")); s += 2)
		if ((s == p || s[-1] == '/') && (s[2] == '\0' || s[2] == '/'))
			return true;
	return false;
}

/* p is dir or below it (both absolute and normalized). */
static bool path_within(const char *dir, const char *p)
{
	size_t n = strlen(dir);
	return n == 1 || (strncmp(p, dir, n) == 0 && (p[n] == '/' || p[n] == '\0'));
}

/* A path of the YAML, relative to the assignment directory, resolved to an
 * existing directory or regular file strictly inside it. */
static int resolve_path(struct ctx *c, const struct field *f, bool want_dir, char **ret)
{
	char *rel = NULL, *joined = NULL, *real = NULL, b[128];
	struct stat st;
	int r = -1;

	if (get_string(c, f, &rel) < 0)
		return -1;
	if (asprintf(&joined, "%s/%s", c->dir, rel) < 0) {
		free(rel);
		return oom(c);
	}
	shown(rel, strlen(rel), b, sizeof(b));
	if (!*rel || has_control(rel))
		fail(c, f->line, f->path, "must be a non-empty path without control characters");
	else if (rel[0] == '/')
		fail(c, f->line, f->path, "'%s' must be relative to the assignment directory", b);
	else if (has_dotdot(rel))
		fail(c, f->line, f->path, "'%s' must not contain '..'", b);
	else if (!(real = realpath(joined, NULL)) && (errno == ENOENT || errno == ENOTDIR))
		fail(c, f->line, f->path, "'%s' does not exist", b);
	else if (!real || stat(real, &st) < 0)
		err_set(c->e, errno, "%s:%d: %s: '%s'", c->file, f->line, f->path, b);
	/* A symlink may point anywhere; what counts is where it leads. */
	else if (!path_within(c->dir, real))
		fail(c, f->line, f->path, "'%s' leads outside the assignment directory", b);
	else if (strcmp(real, c->dir) == 0)
		fail(c, f->line, f->path, "'%s' is the assignment directory itself", b);
	else if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode))
		fail(c, f->line, f->path, "'%s' is not a %s", b,
		     want_dir ? "directory" : "regular file");
	else
		r = 0;
	if (r == 0)
		*ret = real;
	else
		free(real);
	free(joined);
	free(rel);
	return r;
}

/* The items of a list of submission paths or globs: relative, without
 * "..", and, when `globs` is given, each taken by one of them. */
static int check_submission_paths(struct ctx *c, const struct field *list, char **v, size_t n,
				  char **globs, size_t n_globs)
{
	void *it = NULL;
	struct field item;
	char b[128];

	for (size_t i = 0; i < n; i++) {
		size_t g = 0;

		next_item(list, &it, i, &item);
		shown(v[i], strlen(v[i]), b, sizeof(b));
		if (!*v[i] || has_control(v[i]))
			return fail(c, item.line, item.path,
				    "must be non-empty, without control characters");
		if (v[i][0] == '/' || has_dotdot(v[i]))
			return fail(c, item.line, item.path,
				    "'%s' must be relative to the submission root, without '..'",
				    b);
		while (globs && g < n_globs && fnmatch(globs[g], v[i], FNM_PATHNAME) != 0)
			g++;
		if (globs && g == n_globs)
			return fail(
			    c, item.line, item.path,
			    "'%s' matches none of submission.files, so it can never be taken", b);
	}
	return 0;
}

/* ---- the sections ---- */

static int parse_submission(struct ctx *c, const struct field *root, struct assignment *a)
{
	struct field sub, files, req, f;

	if (!lookup(root, "submission", &sub))
		return missing(c, &sub, "");
	if (check_keys(c, &sub, submission_keys) < 0)
		return -1;
	if (!lookup(&sub, "files", &files))
		return missing(c, &files, "");
	if (get_strings(c, &files, true, &a->files, &a->n_files) < 0 ||
	    check_submission_paths(c, &files, a->files, a->n_files, NULL, 0) < 0)
		return -1;
	if (!lookup(&sub, "required", &req))
		a->required = calloc(1, sizeof(char *));
	else if (get_strings(c, &req, false, &a->required, &a->n_required) < 0)
		return -1;
	if (!a->required)
		return oom(c);
	if (check_submission_paths(c, &req, a->required, a->n_required, a->files, a->n_files) < 0)
		return -1;
	if ((lookup(&sub, "max_bytes", &f) && get_uint(c, &f, 1, 1ull << 30, &a->max_bytes) < 0) ||
	    (lookup(&sub, "max_files", &f) && get_uint(c, &f, 1, 1000000, &a->max_entries) < 0))
		return -1;
	return 0;
}

static int parse_report(struct ctx *c, const struct field *root, struct assignment *a)
{
	struct field rep, f;
	const char *p;
	uint64_t kb;
	int v;

	if (!lookup(root, "report", &rep))
		return missing(c, &rep, RUNNER_NEEDS);
	if (check_keys(c, &rep, report_keys) < 0)
		return -1;
	if (!lookup(&rep, "format", &f))
		return missing(c, &f, "");
	if (get_enum(c, &f, format_names, &v) < 0)
		return -1;
	a->report_format = (enum report_format)v;
	if (lookup(&rep, "path", &f)) {
		if (get_string(c, &f, &a->report_path) < 0)
			return -1;
		p = a->report_path;
		/* Where the grader may copy from: /work (relative), /tmp, {report_dir}. */
		if (!*p || has_control(p) || has_dotdot(p) ||
		    (p[0] == '/' && strncmp(p, "/work/", 6) != 0 && strncmp(p, "/tmp/", 5) != 0))
			return fail(c, f.line, f.path,
				    "must be a path relative to /work or below /work/, /tmp/ or "
				    "{report_dir}/, without '..'");
	}
	if (lookup(&rep, "max_kb", &f)) {
		if (get_uint(c, &f, 1, 1048576, &kb) < 0)
			return -1;
		a->report_max_bytes = kb << 10;
	}
	if (lookup(&rep, "pytest_guard", &f)) {
		if (get_enum(c, &f, bool_names, &v) < 0)
			return -1;
		a->pytest_guard = v == 1;
	}
	return 0;
}

/* The line of the name of item i of a list of maps, for "first at line N". */
static int name_line(const struct field *list, size_t i)
{
	struct field item = {fy_node_sequence_get_by_index(list->v, (int)i), list->line, ""}, name;

	lookup(&item, "name", &name);
	return name.line;
}

static int parse_tests(struct ctx *c, const struct field *root, struct assignment *a)
{
	struct field list, item, name, f;
	void *it = NULL;
	size_t n;
	int vis;
	char b[128];

	if (!lookup(root, "tests", &list))
		return missing(c, &list, RUNNER_NEEDS);
	if (get_list(c, &list, "tests", true, &n) < 0)
		return -1;
	if (!(a->tests = calloc(n, sizeof(*a->tests))))
		return oom(c);
	for (size_t i = 0; i < n; i++) {
		struct manifest_test *t = &a->tests[i].t;

		a->n_tests++;
		t->points = 1;
		next_item(&list, &it, i, &item);
		if (check_keys(c, &item, test_keys) < 0)
			return -1;
		if (!lookup(&item, "name", &name))
			return missing(c, &name, "");
		if (get_name(c, &name, &t->name) < 0 ||
		    (lookup(&item, "classname", &f) && get_name(c, &f, &t->classname) < 0) ||
		    (lookup(&item, "points", &f) &&
		     get_number(c, &f, 0, POINTS_MAX, &t->points) < 0))
			return -1;
		if (lookup(&item, "visibility", &f)) {
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
				return fail(c, name.line, name.path,
					    "duplicate test '%s' (first at line %d)",
					    shown(t->name, strlen(t->name), b, sizeof(b)),
					    name_line(&list, j));
		}
		a->max_score += t->points;
	}
	return 0;
}

static int parse_runner(struct ctx *c, const struct field *root, struct assignment *a)
{
	struct field test, top_ok, test_ok, io;
	struct limits base;
	bool in_test, at_top;

	if (lookup(root, "io", &io))
		return fail(c, io.line, io.path, "only used with mode: io");
	if (!lookup(root, "test", &test))
		return missing(c, &test, RUNNER_NEEDS);
	step_limits_default(&base);
	if (parse_step(c, &test, test_step_keys, &base, &a->test) < 0)
		return -1;
	in_test = lookup(&test, "ok_exit", &test_ok);
	at_top = lookup(root, "ok_exit", &top_ok);
	if (at_top && in_test)
		return fail(c, test_ok.line, test_ok.path,
			    "given twice (also at line %d); keep one", top_ok.line);
	if ((at_top && parse_ok_exit(c, &top_ok, a) < 0) ||
	    (in_test && parse_ok_exit(c, &test_ok, a) < 0))
		return -1;
	if (parse_report(c, root, a) < 0)
		return -1;
	return parse_tests(c, root, a);
}

static int parse_case(struct ctx *c, const struct field *item, const struct limits *base,
		      struct assignment *a, struct io_case *k)
{
	struct field f;
	int vis;

	k->points = 1;
	k->limits = *base;
	if (check_keys(c, item, case_keys) < 0)
		return -1;
	if (!lookup(item, "name", &f))
		return missing(c, &f, "");
	if (get_name(c, &f, &k->name) < 0)
		return -1;
	if (lookup(item, "stdin", &f) && resolve_path(c, &f, false, &k->stdin_path) < 0)
		return -1;
	if (!lookup(item, "expected", &f))
		return missing(c, &f, "");
	if (resolve_path(c, &f, false, &k->expected_path) < 0)
		return -1;
	/* SECURITY: expected output never enters a sandbox, and tests_dir is
	 * copied into every one. */
	if (a->tests_dir && path_within(a->tests_dir, k->expected_path))
		return fail(c, f.line, f.path,
			    "is inside tests_dir, which is copied into the sandbox; keep expected "
			    "output elsewhere");
	if (!lookup(item, "args", &f))
		k->args = calloc(1, sizeof(char *));
	else if (get_strings(c, &f, false, &k->args, &k->n_args) < 0)
		return -1;
	if (!k->args)
		return oom(c);
	if ((lookup(item, "points", &f) && get_number(c, &f, 0, POINTS_MAX, &k->points) < 0) ||
	    (lookup(item, "limits", &f) && parse_limits(c, &f, &k->limits) < 0))
		return -1;
	if (lookup(item, "visibility", &f)) {
		if (get_enum(c, &f, visibility_names, &vis) < 0)
			return -1;
		k->visibility = (enum visibility)vis;
	}
	return 0;
}

static int parse_io(struct ctx *c, const struct field *root, struct assignment *a)
{
	static const char *const runner_only[] = {"test", "ok_exit", "report", "tests", NULL};
	struct field io, f, list, item, name;
	void *it = NULL;
	struct limits base;
	size_t n;
	uint64_t kb;
	int v;
	char b[128];

	for (size_t i = 0; runner_only[i]; i++)
		if (lookup(root, runner_only[i], &f))
			return fail(c, f.line, f.path, "only used with mode: runner");
	if (!lookup(root, "io", &io))
		return missing(c, &io, " (mode io needs io.run and io.cases)");
	if (check_keys(c, &io, io_keys) < 0)
		return -1;
	/* The checker gets the defaults; the program and its cases io.limits. */
	step_limits_default(&base);
	if ((lookup(&io, "checker", &f) && parse_step(c, &f, step_keys, &base, &a->checker) < 0) ||
	    (lookup(&io, "limits", &f) && parse_limits(c, &f, &base) < 0))
		return -1;
	if (!lookup(&io, "run", &f))
		return missing(c, &f, "");
	if (parse_argv(c, &f, &a->io_run.argv, &a->io_run.argc) < 0)
		return -1;
	a->io_run.limits = base;
	a->io_run.present = true;
	if (lookup(&io, "compare", &f)) {
		if (get_enum(c, &f, compare_names, &v) < 0)
			return -1;
		a->compare = (enum compare_mode)v;
	}
	if (lookup(&io, "float_tolerance", &f) &&
	    get_number(c, &f, 0, 1e9, &a->float_tolerance) < 0)
		return -1;
	if (lookup(&io, "output_max_kb", &f)) {
		if (get_uint(c, &f, 1, 1048576, &kb) < 0)
			return -1;
		a->io_output_max = kb << 10;
	}
	if (!lookup(&io, "cases", &list))
		return missing(c, &list, "");
	if (get_list(c, &list, "cases", true, &n) < 0)
		return -1;
	if (!(a->cases = calloc(n, sizeof(*a->cases))))
		return oom(c);
	for (size_t i = 0; i < n; i++) {
		struct io_case *k = &a->cases[a->n_cases++];

		next_item(&list, &it, i, &item);
		if (parse_case(c, &item, &base, a, k) < 0)
			return -1;
		lookup(&item, "name", &name);
		for (size_t j = 0; j < i; j++)
			if (strcmp(a->cases[j].name, k->name) == 0)
				return fail(c, name.line, name.path,
					    "duplicate case '%s' (first at line %d)",
					    shown(k->name, strlen(k->name), b, sizeof(b)),
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

static int parse_root(struct ctx *c, struct fy_node *node, struct assignment *a,
		      int *ret_tests_dir_line)
{
	struct field root = {.v = node, .line = 0, .path = ""}, f;
	struct limits base;
	uint64_t retries;
	int mode = GRADE_MODE_RUNNER;
	char b[128];

	if (!fy_node_is_mapping(node))
		return fail(c, node_line(node, 0), NULL,
			    "expected a map of keys (name, submission, ...), got %s", kind(node));
	if (check_keys(c, &root, top_keys) < 0)
		return -1;
	if (lookup(&root, "mode", &f) && get_enum(c, &f, mode_names, &mode) < 0)
		return -1;
	a->mode = (enum grade_mode)mode;
	if (!lookup(&root, "name", &f))
		return missing(c, &f, "");
	if (get_string(c, &f, &a->name) < 0)
		return -1;
	if (!valid_id(a->name))
		return fail(c, f.line, f.path,
			    "'%s' must be 1 to 64 characters from A-Z a-z 0-9 . _ -",
			    shown(a->name, strlen(a->name), b, sizeof(b)));
	if (!lookup(&root, "image", &f))
		a->image = strdup("host");
	else if (get_string(c, &f, &a->image) < 0)
		return -1;
	if (!a->image)
		return oom(c);
	if (!valid_image_pin(a->image))
		return fail(c, f.line, f.path,
			    "'%s' is not an image pin: host, NAME@VERSION (e.g. python@3) or "
			    "sha256:<64 hex digits>",
			    shown(a->image, strlen(a->image), b, sizeof(b)));
	int iso = 0;
	if (lookup(&root, "isolation", &f) && get_enum(c, &f, isolation_names, &iso) < 0)
		return -1;
	a->isolation = (enum assignment_isolation)iso;
	if (parse_submission(c, &root, a) < 0)
		return -1;
	if (lookup(&root, "tests_dir", &f)) {
		if (resolve_path(c, &f, true, &a->tests_dir) < 0)
			return -1;
		*ret_tests_dir_line = f.line;
	}
	step_limits_default(&base);
	if ((lookup(&root, "setup", &f) && parse_step(c, &f, step_keys, &base, &a->setup) < 0) ||
	    (lookup(&root, "build", &f) && parse_step(c, &f, step_keys, &base, &a->build) < 0))
		return -1;
	if (lookup(&root, "retries", &f)) {
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

static int list_add(struct ctx *c, struct file_list *l, const char *rel)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char **v = realloc(l->rel, cap * sizeof(*v));
		if (!v)
			return oom(c);
		l->rel = v;
		l->cap = cap;
	}
	if (!(l->rel[l->n] = strdup(rel)))
		return oom(c);
	l->n++;
	return 0;
}

/* The regular files below c->dir/rel.  Symlinks and special files are
 * refused now, as files_put() would refuse them at every grading. */
static int walk_tree(struct ctx *c, const char *rel, int line, struct file_list *l)
{
	char *abs = NULL, b[128];
	struct dirent *de;
	DIR *d = NULL;
	int r = 0;

	if (asprintf(&abs, "%s/%s", c->dir, rel) < 0)
		return oom(c);
	if (!(d = opendir(abs)))
		r = err_set(c->e, errno, "%s:%d: tests_dir: '%s'", c->file, line, rel);
	while (r == 0 && (errno = 0, de = readdir(d))) {
		char *child = NULL;
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (asprintf(&child, "%s/%s", rel, de->d_name) < 0) {
			r = oom(c);
			break;
		}
		shown(child, strlen(child), b, sizeof(b));
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			r = err_set(c->e, errno, "%s:%d: tests_dir: '%s'", c->file, line, b);
		else if (S_ISDIR(st.st_mode))
			r = walk_tree(c, child, line, l);
		else if (!S_ISREG(st.st_mode))
			r = fail(c, line, "tests_dir",
				 "'%s' is a %s; only regular files and directories are copied", b,
				 S_ISLNK(st.st_mode) ? "symlink" : "special file");
		else if (l->n >= TREE_FILES_MAX)
			r = fail(c, line, "tests_dir", "more than %d files", TREE_FILES_MAX);
		else
			r = list_add(c, l, child);
		free(child);
	}
	if (r == 0 && errno != 0)
		r = err_set(c->e, errno, "%s:%d: tests_dir: '%s'", c->file, line, rel);
	if (d)
		closedir(d);
	free(abs);
	return r;
}

static int str_cmp(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

/*
 * SHA-256 over (name, size, content) of assignment.yaml as parsed, then of
 * each regular file of tests_dir and each case file, once each, sorted by
 * path relative to the assignment directory.  Names are length-prefixed
 * and sizes given, so no two sets of files produce the same stream.
 */
static int compute_digest(struct ctx *c, struct assignment *a, const char *text, size_t len,
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
		qsort(l.rel, l.n, sizeof(*l.rel), str_cmp);
	if (r == 0 && !(d = digest_new()))
		r = oom(c);
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
			r = oom(c);
			break;
		}
		if (stat(abs, &st) < 0)
			r = err_set(c->e, errno, "%s: '%s'", c->file, l.rel[i]);
		if (r == 0) {
			size = (uint64_t)st.st_size;
			digest_update_str(d, l.rel[i]);
			digest_update(d, &size, sizeof(size));
			if (digest_update_file(d, abs, c->e) < 0)
				r = err_wrap(c->e, "%s: digest", c->file);
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
		err_set(e, errno, "%s", *parent ? parent : ".");
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
	struct ctx c = {.e = e};
	int tests_dir_line = 0, r = -1;
	size_t len = 0;

	if (!a)
		return err_set(e, ENOMEM, "%s", dir);
	if (locate(dir, a, &shown_path, e) < 0)
		goto out_free;
	c.file = shown_path;
	c.dir = a->dir;
	set_defaults(a);
	if (read_text(&c, a->file, &text, &len) < 0 || parse_yaml(&c, text, len, &doc) < 0 ||
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
	free_strv(a->files);
	free_strv(a->required);
	free(a->tests_dir);
	free_strv(a->setup.argv);
	free_strv(a->build.argv);
	free_strv(a->test.argv);
	free(a->report_path);
	for (size_t i = 0; i < a->n_tests; i++) {
		free(a->tests[i].t.name);
		free(a->tests[i].t.classname);
	}
	free(a->tests);
	free_strv(a->io_run.argv);
	for (size_t i = 0; i < a->n_cases; i++) {
		free(a->cases[i].name);
		free(a->cases[i].stdin_path);
		free(a->cases[i].expected_path);
		free_strv(a->cases[i].args);
	}
	free(a->cases);
	free_strv(a->checker.argv);
	free(a);
}
