/* Loading an image recipe: a strict schema, files kept inside the recipe's directory, a digest. */
#include "image/recipe.h"

#include <errno.h>
#include <fcntl.h>
#include <libfyaml.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "util.h"

/*
 * Read like assignment.yaml (src/grade/assignment.c, whose small helpers
 * are copied here): the text is checked byte by byte, libfyaml's events are
 * checked for anchors, aliases and second documents, then the tree is
 * walked against the key lists below, and the first mistake stops the load
 * with one line, "FILE:LINE: key.path: what is wrong".
 *
 * What a recipe says ends up in shell strings (mmdebstrap's hooks are shell
 * commands), so the checks here are also the first half of the quoting
 * argument: package names and suites are drawn from small alphabets, file
 * destinations from one that mmdebstrap's own word splitter cannot
 * misread, and setup arguments may hold anything but NUL and line breaks
 * (image.c quotes each of them).
 */

#define FILE_MAX     (1u << 20)	    /* bytes of the recipe */
#define ITEMS_MAX    1000	    /* entries of one list */
#define SRC_MAX	     (256ull << 20) /* bytes of one file copied into the image */
#define PATH_LEN     256	    /* a dotted key path in a message */
#define NAME_MAX_LEN 64
#define PKG_MAX_LEN  128
#define SUITE_MAX    32
#define DST_MAX	     1024

struct ctx {
	const char *file; /* the file as the caller named it, for messages */
	const char *dir;  /* realpath of the recipe's directory */
	struct err *e;
};

struct field {
	struct fy_node *v; /* NULL when the key is absent */
	int line;	   /* the key's line; the enclosing map's when absent; 0: unknown */
	char path[PATH_LEN];
};

static const char *const top_keys[] = {"name",	"suite", "variant", "packages",
				       "files", "setup", NULL};
static const char *const file_keys[] = {"src", "dst", "mode", NULL};
static const char *const variant_names[] = {"apt", "minbase", "essential", NULL};

const char *recipe_variant_name(enum recipe_variant v)
{
	return (unsigned)v <= RECIPE_VARIANT_ESSENTIAL ? variant_names[v] : "invalid";
}

bool recipe_valid_name(const char *name)
{
	size_t n = strlen(name);

	return n >= 1 && n <= NAME_MAX_LEN &&
	       strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789._-") == n &&
	       strchr("abcdefghijklmnopqrstuvwxyz0123456789", name[0]);
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

/* Text from the file as it may appear in a one-line message. */
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

/* ---- the text and the YAML ---- */

static int read_text(struct ctx *c, const char *path, char **ret, size_t *ret_len)
{
	struct stat st;
	char *buf = NULL;
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
				 "a second YAML document ('---'); a recipe is one document");
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
	fy_diag_destroy(diag);
	return r;
}

/* ---- keys and types ---- */

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
	int first[16] = {0};
	void *it = NULL;
	struct fy_node_pair *p;
	char path[PATH_LEN], buf[80], list[256];

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

/* A string of 1..max characters, each in `alphabet`, the first in `first`. */
static int get_word(struct ctx *c, const struct field *f, const char *what, const char *first,
		    const char *alphabet, size_t max, char **ret)
{
	char b[96];
	size_t n;

	if (get_string(c, f, ret) < 0)
		return -1;
	n = strlen(*ret);
	if (n == 0 || n > max || strspn(*ret, alphabet) != n || !strchr(first, (*ret)[0])) {
		fail(c, f->line, f->path, "'%s' is not %s", shown(*ret, n, b, sizeof(b)), what);
		free(*ret);
		*ret = NULL;
		return -1;
	}
	return 0;
}

static int get_list(struct ctx *c, const struct field *f, const char *what, size_t *ret_n)
{
	int n;

	if (!f->v || !fy_node_is_sequence(f->v))
		return fail(c, f->line, f->path, "expected a list of %s, got %s", what, kind(f->v));
	n = fy_node_sequence_item_count(f->v);
	if (n < 0 || n > ITEMS_MAX)
		return fail(c, f->line, f->path, "more than %d items", ITEMS_MAX);
	*ret_n = (size_t)n;
	return 0;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* ---- the sections ---- */

#define LOWER_DIGITS "abcdefghijklmnopqrstuvwxyz0123456789"

static int parse_packages(struct ctx *c, const struct field *f, struct recipe *r)
{
	void *it = NULL;
	size_t n;

	if (get_list(c, f, "Debian package names", &n) < 0)
		return -1;
	if (!(r->packages = calloc(n + 1, sizeof(*r->packages))))
		return oom(c);
	for (size_t i = 0; i < n; i++) {
		struct field item;
		next_item(f, &it, i, &item);
		/* Debian policy 5.6.1: lower case letters, digits, + - and .,
		 * at least two characters, starting with a letter or digit. */
		if (get_word(c, &item, "a Debian package name ([a-z0-9][a-z0-9.+-]+)", LOWER_DIGITS,
			     LOWER_DIGITS ".+-", PKG_MAX_LEN, &r->packages[i]) < 0)
			return -1;
		if (strlen(r->packages[i]) < 2)
			return fail(c, item.line, item.path,
				    "'%s' is not a Debian package name (at least two characters)",
				    r->packages[i]);
		for (size_t k = 0; k < i; k++)
			if (strcmp(r->packages[k], r->packages[i]) == 0)
				return fail(c, item.line, item.path, "'%s' is listed twice",
					    r->packages[i]);
		r->n_packages = i + 1;
	}
	return 0;
}

static bool has_dotdot(const char *p)
{
	for (const char *s = p; (s = strstr(s, "..")); s += 2)
		if ((s == p || s[-1] == '/') && (s[2] == '\0' || s[2] == '/'))
			return true;
	return false;
}

static bool path_within(const char *dir, const char *p)
{
	size_t n = strlen(dir);
	return n == 1 || (strncmp(p, dir, n) == 0 && (p[n] == '/' || p[n] == '\0'));
}

/* src: relative to the recipe's directory, an existing regular file strictly inside it. */
static int resolve_src(struct ctx *c, const struct field *f, char **ret)
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
	if (!*rel)
		fail(c, f->line, f->path, "must be a non-empty path");
	else if (rel[0] == '/')
		fail(c, f->line, f->path, "'%s' must be relative to the recipe's directory", b);
	else if (has_dotdot(rel))
		fail(c, f->line, f->path, "'%s' must not contain '..'", b);
	else if (!(real = realpath(joined, NULL)) && (errno == ENOENT || errno == ENOTDIR))
		fail(c, f->line, f->path, "'%s' does not exist", b);
	else if (!real || stat(real, &st) < 0)
		err_set(c->e, errno, "%s:%d: %s: '%s'", c->file, f->line, f->path, b);
	else if (!path_within(c->dir, real) || strcmp(real, c->dir) == 0)
		fail(c, f->line, f->path, "'%s' leads outside the recipe's directory", b);
	else if (!S_ISREG(st.st_mode))
		fail(c, f->line, f->path, "'%s' is not a regular file", b);
	else if ((unsigned long long)st.st_size > SRC_MAX)
		fail(c, f->line, f->path, "'%s' is larger than %llu MiB", b, SRC_MAX >> 20);
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

/* dst: absolute and normalized ("/a/b", no "//", ".", "..", trailing "/"),
 * of characters that need no quoting in mmdebstrap's special hooks, which
 * split words with Perl's shellwords (whose single quotes differ from sh's). */
static int check_dst(struct ctx *c, const struct field *f, const char *dst)
{
	static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
				 "._+@%=:,/-";
	char b[128];
	size_t n = strlen(dst);

	shown(dst, n, b, sizeof(b));
	if (dst[0] != '/' || n < 2 || n > DST_MAX || dst[n - 1] == '/' || strstr(dst, "//") ||
	    has_dotdot(dst) || strstr(dst, "/./"))
		return fail(c, f->line, f->path,
			    "'%s' must be an absolute path to a file (like /etc/pip.conf), "
			    "without '.', '..', '//' or a trailing '/'",
			    b);
	if (strspn(dst, ok) != n)
		return fail(c, f->line, f->path,
			    "'%s': only letters, digits and . _ + @ %% = : , / - may appear", b);
	/* Mount points during the build, empty in the image. */
	for (const char *const *m = (const char *const[]){"/proc", "/sys", "/dev", NULL}; *m; m++) {
		size_t ml = strlen(*m);
		if (strncmp(dst, *m, ml) == 0 && (dst[ml] == '/' || dst[ml] == '\0'))
			return fail(c, f->line, f->path,
				    "'%s' is below %s, which the image does not keep", b, *m);
	}
	return 0;
}

static int parse_mode(struct ctx *c, const struct field *f, mode_t *ret)
{
	char *s = NULL, b[64];
	unsigned v = 0;
	size_t n;

	if (get_string(c, f, &s) < 0)
		return -1;
	n = strlen(s);
	if (n < 3 || n > 4 || strspn(s, "01234567") != n || (n == 4 && s[0] != '0')) {
		fail(c, f->line, f->path,
		     "'%s' is not a file mode in octal from 0000 to 0777 (like \"0644\")",
		     shown(s, n, b, sizeof(b)));
		free(s);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		v = v * 8 + (unsigned)(s[i] - '0');
	free(s);
	*ret = (mode_t)v;
	return 0;
}

static int parse_files(struct ctx *c, const struct field *f, struct recipe *r)
{
	void *it = NULL;
	size_t n;

	if (get_list(c, f, "files ({src, dst, mode})", &n) < 0)
		return -1;
	if (!(r->files = calloc(n + 1, sizeof(*r->files))))
		return oom(c);
	for (size_t i = 0; i < n; i++) {
		struct field item, src, dst, mode;
		struct recipe_file *rf = &r->files[i];

		next_item(f, &it, i, &item);
		r->n_files = i + 1;
		rf->mode = 0644;
		if (check_keys(c, &item, file_keys) < 0)
			return -1;
		if (!lookup(&item, "src", &src))
			return fail(c, src.line, src.path, "missing required key");
		if (!lookup(&item, "dst", &dst))
			return fail(c, dst.line, dst.path, "missing required key");
		if (resolve_src(c, &src, &rf->src) < 0 || get_string(c, &dst, &rf->dst) < 0 ||
		    check_dst(c, &dst, rf->dst) < 0)
			return -1;
		if (lookup(&item, "mode", &mode) && parse_mode(c, &mode, &rf->mode) < 0)
			return -1;
		for (size_t k = 0; k < i; k++)
			if (strcmp(r->files[k].dst, rf->dst) == 0)
				return fail(c, dst.line, dst.path,
					    "'%s' is the dst of files[%zu] too", rf->dst, k);
	}
	return 0;
}

/* setup: a list of argv lists.  Any text but NUL and line breaks: each
 * argument is quoted for the shell by image.c, and a line break would end
 * mmdebstrap's hook line. */
static int parse_setup(struct ctx *c, const struct field *f, struct recipe *r)
{
	void *it = NULL;
	size_t n;

	if (get_list(c, f, "commands (each a list like [update-ca-certificates])", &n) < 0)
		return -1;
	if (!(r->setup = calloc(n + 1, sizeof(*r->setup))))
		return oom(c);
	for (size_t i = 0; i < n; i++) {
		struct field item;
		void *ait = NULL;
		size_t argc;

		next_item(f, &it, i, &item);
		if (item.v && fy_node_is_scalar(item.v) && !is_null(item.v))
			return fail(c, item.line, item.path,
				    "expected a list of strings (an argv like [useradd, -m, "
				    "student]; no shell is involved), got a string");
		if (get_list(c, &item, "strings", &argc) < 0)
			return -1;
		if (argc == 0)
			return fail(c, item.line, item.path, "must not be empty");
		if (!(r->setup[i] = calloc(argc + 1, sizeof(char *))))
			return oom(c);
		r->n_setup = i + 1;
		for (size_t k = 0; k < argc; k++) {
			struct field arg;
			char *s;
			next_item(&item, &ait, k, &arg);
			if (get_string(c, &arg, &r->setup[i][k]) < 0)
				return -1;
			s = r->setup[i][k];
			if (strpbrk(s, "\n\r"))
				return fail(c, arg.line, arg.path, "a line break is not allowed");
			if (k == 0 && !*s)
				return fail(c, arg.line, arg.path,
					    "the program (first item) must not be empty");
		}
	}
	return 0;
}

static int parse_root(struct ctx *c, struct fy_node *node, struct recipe *r)
{
	struct field root = {.v = node, .line = node_line(node, 1), .path = ""}, f;
	int v;

	if (check_keys(c, &root, top_keys) < 0)
		return -1;
	if (!lookup(&root, "name", &f))
		return fail(c, f.line, "name", "missing required key");
	if (get_word(c, &f, "an image name ([a-z0-9][a-z0-9._-], at most 64 characters)",
		     LOWER_DIGITS, LOWER_DIGITS "._-", NAME_MAX_LEN, &r->name) < 0)
		return -1;
	if (strcmp(r->name, "host") == 0)
		return fail(c, f.line, f.path,
			    "'host' is reserved: it pins the host's own system tree");
	if (lookup(&root, "suite", &f)) {
		free(r->suite);
		r->suite = NULL;
		if (get_word(c, &f, "a Debian suite (like bookworm or stable)",
			     "abcdefghijklmnopqrstuvwxyz", LOWER_DIGITS ".-", SUITE_MAX,
			     &r->suite) < 0)
			return -1;
	}
	if (lookup(&root, "variant", &f)) {
		char list[96], b[64];
		size_t len = 0;
		const char *s;
		for (v = 0; variant_names[v] && !text_is(f.v, variant_names[v]); v++)
			;
		if (!variant_names[v]) {
			list_str(variant_names, list, sizeof(list));
			if (!f.v || !fy_node_is_scalar(f.v) || is_null(f.v))
				return fail(c, f.line, f.path, "expected one of %s, got %s", list,
					    kind(f.v));
			s = fy_node_get_scalar(f.v, &len);
			return fail(c, f.line, f.path, "expected one of %s, got '%s'", list,
				    shown(s, len, b, sizeof(b)));
		}
		r->variant = (enum recipe_variant)v;
	}
	if (lookup(&root, "packages", &f) && parse_packages(c, &f, r) < 0)
		return -1;
	if (lookup(&root, "files", &f) && parse_files(c, &f, r) < 0)
		return -1;
	if (lookup(&root, "setup", &f) && parse_setup(c, &f, r) < 0)
		return -1;
	return 0;
}

/* Over the text and every file's contents and mode, in the order of the recipe. */
static int compute_digest(struct ctx *c, struct recipe *r, const char *text, size_t len)
{
	struct digest *d = digest_new();
	char hex[65], mode[16];

	if (!d)
		return oom(c);
	digest_update_str(d, "proctor-recipe-1");
	digest_update(d, text, len);
	for (size_t i = 0; i < r->n_files; i++) {
		snprintf(mode, sizeof(mode), "%04o", (unsigned)r->files[i].mode);
		digest_update_str(d, r->files[i].dst);
		digest_update_str(d, mode);
		if (digest_update_file(d, r->files[i].src, c->e) < 0) {
			digest_free(d);
			return err_wrap(c->e, "%s: files[%zu].src", c->file, i);
		}
	}
	digest_final(d, hex);
	snprintf(r->digest, sizeof(r->digest), "sha256:%s", hex);
	return 0;
}

int recipe_load(const char *path, struct recipe **ret, struct err *e)
{
	struct recipe *r = calloc(1, sizeof(*r));
	struct fy_document *doc = NULL;
	char *text = NULL, *dir = NULL;
	struct ctx c = {.file = path, .e = e};
	size_t len = 0;
	int rc = -1;

	if (!r)
		return err_set(e, ENOMEM, "%s", path);
	r->variant = RECIPE_VARIANT_APT;
	if (!(r->file = realpath(path, NULL))) {
		err_set(e, errno, "%s", path);
		goto out_free;
	}
	if (!(dir = strdup(r->file)) || !(r->suite = strdup("bookworm"))) {
		oom(&c);
		goto out_free;
	}
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else
		*slash = '\0';
	r->dir = dir;
	dir = NULL;
	c.dir = r->dir;
	if (read_text(&c, r->file, &text, &len) < 0 || parse_yaml(&c, text, len, &doc) < 0 ||
	    parse_root(&c, fy_document_root(doc), r) < 0 || compute_digest(&c, r, text, len) < 0)
		goto out_free;
	if (!r->packages && !(r->packages = calloc(1, sizeof(char *)))) {
		oom(&c);
		goto out_free;
	}
	*ret = r;
	r = NULL;
	rc = 0;
out_free:
	if (doc)
		fy_document_destroy(doc);
	free(text);
	free(dir);
	recipe_free(r);
	return rc;
}

void recipe_free(struct recipe *r)
{
	if (!r)
		return;
	free(r->file);
	free(r->dir);
	free(r->name);
	free(r->suite);
	free_strv(r->packages);
	for (size_t i = 0; r->files && i < r->n_files; i++) {
		free(r->files[i].src);
		free(r->files[i].dst);
	}
	free(r->files);
	for (size_t i = 0; r->setup && i < r->n_setup; i++)
		free_strv(r->setup[i]);
	free(r->setup);
	free(r);
}
