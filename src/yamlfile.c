/* Strict YAML documents of Proctor's own: parsing, and lookups whose messages name line and key. */
#include "yamlfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- messages ---- */

int yaml_fail(struct yaml_ctx *c, int line, const char *path, const char *fmt, ...)
{
	char msg[768], where[24] = "";
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (line > 0)
		snprintf(where, sizeof(where), ":%d", line);
	if (path && *path)
		return err_setk(c->e, ERR_INPUT, 0, "%s%s: %s: %s", c->file, where, path, msg);
	return err_setk(c->e, ERR_INPUT, 0, "%s%s: %s", c->file, where, msg);
}

int yaml_oom(struct yaml_ctx *c)
{
	return err_set(c->e, ENOMEM, "%s", c->file);
}

/* Text from the file as it may appear in a one-line message: cut, and
 * control characters replaced. */
const char *yaml_shown(const char *s, size_t len, char *buf, size_t cap)
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

/* ---- step 1: the text ---- */

int yaml_read_text(struct yaml_ctx *c, const char *path, char **ret, size_t *ret_len)
{
	struct stat st;
	char *buf = NULL;
	const char *nul;
	size_t len = 0;
	int r = -1, line = 1, fd = open(path, O_RDONLY | O_CLOEXEC);

	/* A file the user named that cannot be read is theirs to fix. */
	if (fd < 0)
		return err_setk(c->e, ERR_INPUT, errno, "%s", c->file);
	if (fstat(fd, &st) < 0)
		err_setk(c->e, ERR_INPUT, errno, "%s", c->file);
	else if (!S_ISREG(st.st_mode))
		yaml_fail(c, 0, NULL, "not a regular file");
	else if (st.st_size > YAML_FILE_MAX)
		yaml_fail(c, 0, NULL, "larger than 1 MiB (%lld bytes)", (long long)st.st_size);
	else if (!(buf = malloc(YAML_FILE_MAX + 1)))
		yaml_oom(c);
	else
		r = 0;
	/* Reading one byte more than allowed catches a file that grew. */
	while (r == 0 && len <= YAML_FILE_MAX) {
		ssize_t n = read(fd, buf + len, YAML_FILE_MAX + 1 - len);
		if (n < 0 && errno != EINTR)
			r = err_setk(c->e, ERR_INPUT, errno, "%s: read", c->file);
		else if (n == 0)
			break;
		else if (n > 0)
			len += (size_t)n;
	}
	close(fd);
	if (r == 0 && len > YAML_FILE_MAX)
		r = yaml_fail(c, 0, NULL, "larger than 1 MiB");
	else if (r == 0 && len == 0)
		r = yaml_fail(c, 0, NULL, "the file is empty");
	else if (r == 0 && (nul = memchr(buf, '\0', len)))
		r = yaml_fail(c, 0, NULL, "not a text file (NUL byte at offset %zu)",
			      (size_t)(nul - buf));
	for (size_t i = 0; r == 0 && i < len; i++) {
		unsigned char b = (unsigned char)buf[i];
		line += b == '\n';
		if ((b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7f)
			r = yaml_fail(c, line, NULL,
				      "control character 0x%02x (only tab and newline may appear)",
				      b);
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

int yaml_token_line(struct fy_token *t)
{
	const struct fy_mark *m = t ? fy_token_start_mark(t) : NULL;
	return m ? m->line + 1 : 0;
}

/* The line a node starts on (for collections: their first scalar's). */
int yaml_node_line(struct fy_node *n, int fallback)
{
	void *it = NULL;
	struct fy_node_pair *p;
	int line = 0;

	if (n && fy_node_is_scalar(n))
		line = yaml_token_line(fy_node_get_scalar_token(n));
	else if (n && fy_node_is_mapping(n) && (p = fy_node_mapping_iterate(n, &it)))
		line = yaml_node_line(fy_node_pair_key(p), 0);
	else if (n && fy_node_is_sequence(n))
		line = yaml_node_line(fy_node_sequence_iterate(n, &it), 0);
	return line > 0 ? line : fallback;
}

static int yaml_syntax_error(struct yaml_ctx *c, struct fy_diag *diag)
{
	void *it = NULL;
	struct fy_diag_error *de = fy_diag_errors_iterate(diag, &it);
	char buf[256];

	if (!de || !de->msg)
		return yaml_fail(c, 0, NULL, "not valid YAML");
	/* de->line counts from 1, unlike fy_mark's. */
	return yaml_fail(c, de->line, NULL, "not valid YAML: %s",
			 yaml_shown(de->msg, strlen(de->msg), buf, sizeof(buf)));
}

int yaml_parse(struct yaml_ctx *c, const char *text, size_t len, struct fy_document **ret)
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
		return yaml_oom(c);
	fy_diag_set_collect_errors(diag, true);
	/* Duplicate keys are reported by yaml_check_keys(), with both lines. */
	struct fy_parse_cfg cfg = {
	    .flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG | FYPCF_ALLOW_DUPLICATE_KEYS,
	    .diag = diag,
	};
	fyp = fy_parser_create(&cfg);
	if (!fyp || fy_parser_set_string(fyp, text, len) < 0)
		r = yaml_oom(c);
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
			r = yaml_fail(c, line, NULL,
				      "a second YAML document ('---'); %s is one document",
				      c->noun);
		else if (t)
			r = yaml_fail(
			    c, ev->type == FYET_ALIAS ? line : yaml_token_line(t), NULL,
			    "%s '%c%s': anchors, aliases and merge keys are not supported; "
			    "write the value out",
			    ev->type == FYET_ALIAS ? "alias" : "anchor",
			    ev->type == FYET_ALIAS ? '*' : '&',
			    yaml_shown(name ? name : "", name ? tlen : 0, buf, sizeof(buf)));
		fy_parser_event_free(fyp, ev);
	}
	if (r == 0 && fy_parser_get_stream_error(fyp))
		r = yaml_syntax_error(c, diag);
	if (r == 0 && !(doc = fy_document_build_from_string(&cfg, text, len)))
		r = yaml_syntax_error(c, diag);
	if (r == 0 && !fy_document_root(doc))
		r = yaml_fail(c, 0, NULL, "no YAML document (only comments or blank lines)");
	if (r == 0)
		*ret = doc;
	else if (doc)
		fy_document_destroy(doc);
	if (fyp)
		fy_parser_destroy(fyp);
	fy_diag_destroy(diag); /* frees the collected errors; fy_diag_unref() would not */
	return r;
}

/* YAML's null: an empty value, ~ or null (plain, not quoted). */
bool yaml_is_null(struct fy_node *n)
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

/* ---- step 3: keys and types ---- */

const char *yaml_kind(struct fy_node *n)
{
	if (yaml_is_null(n))
		return "nothing";
	if (fy_node_is_sequence(n))
		return "a list";
	if (fy_node_is_mapping(n))
		return "a map";
	return fy_node_get_style(n) == FYNS_PLAIN ? "a string" : "a quoted string";
}

bool yaml_text_is(struct fy_node *n, const char *text)
{
	size_t len = 0;
	const char *s = n && fy_node_is_scalar(n) ? fy_node_get_scalar(n, &len) : NULL;
	return s && len == strlen(text) && memcmp(s, text, len) == 0;
}

void yaml_join(char *out, const char *prefix, const char *key)
{
	snprintf(out, YAML_PATH_LEN, "%s%s%s", prefix, *prefix ? "." : "", key);
}

void yaml_list_str(const char *const *names, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (size_t i = 0, used = 0; names[i] && used < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", names[i]);
}

/* f is a map whose keys are all in `allowed`, each once. */
int yaml_check_keys(struct yaml_ctx *c, const struct yaml_field *f, const char *const *allowed)
{
	int first[16] = {0}; /* line where each allowed key was seen */
	void *it = NULL;
	struct fy_node_pair *p;
	char path[YAML_PATH_LEN], buf[80], list[512];

	if (!f->v || !fy_node_is_mapping(f->v))
		return yaml_fail(c, f->line, f->path, "expected a map, got %s", yaml_kind(f->v));
	while ((p = fy_node_mapping_iterate(f->v, &it))) {
		struct fy_node *k = fy_node_pair_key(p);
		int line = yaml_node_line(k, f->line);
		size_t i, len = 0;
		const char *s;

		if (!k || !fy_node_is_scalar(k) || yaml_is_null(k))
			return yaml_fail(c, line, f->path, "keys must be strings, got %s",
					 yaml_kind(k));
		s = fy_node_get_scalar(k, &len);
		yaml_join(path, f->path, yaml_shown(s, len, buf, sizeof(buf)));
		if (yaml_text_is(k, "<<"))
			return yaml_fail(c, line, path,
					 "merge keys are not supported; write the keys out");
		for (i = 0; allowed[i] && !yaml_text_is(k, allowed[i]); i++)
			;
		if (!allowed[i]) {
			yaml_list_str(allowed, list, sizeof(list));
			return yaml_fail(c, line, path, "unknown key (expected %s)", list);
		}
		if (first[i])
			return yaml_fail(c, line, path, "duplicate key (first at line %d)",
					 first[i]);
		first[i] = line;
	}
	return 0;
}

/* Look `key` up in the map `map` (already checked); true when present. */
bool yaml_lookup(const struct yaml_field *map, const char *key, struct yaml_field *ret)
{
	void *it = NULL;
	struct fy_node_pair *p;

	yaml_join(ret->path, map->path, key);
	ret->v = NULL;
	ret->line = map->line;
	while ((p = fy_node_mapping_iterate(map->v, &it))) {
		if (yaml_text_is(fy_node_pair_key(p), key)) {
			ret->v = fy_node_pair_value(p);
			ret->line = yaml_node_line(fy_node_pair_key(p), map->line);
			return true;
		}
	}
	return false;
}

/* The next item of the list `list` (*it NULL at the start), as a field
 * named list[i].  Items are a linked list: iterating keeps loops linear. */
void yaml_next_item(const struct yaml_field *list, void **it, size_t i, struct yaml_field *ret)
{
	ret->v = fy_node_sequence_iterate(list->v, it);
	ret->line = yaml_node_line(ret->v, list->line);
	snprintf(ret->path, YAML_PATH_LEN, "%s[%zu]", list->path, i);
}

int yaml_get_string(struct yaml_ctx *c, const struct yaml_field *f, char **ret)
{
	size_t len = 0;
	const char *s;

	if (!f->v || !fy_node_is_scalar(f->v) || yaml_is_null(f->v))
		return yaml_fail(c, f->line, f->path, "expected a string, got %s", yaml_kind(f->v));
	s = fy_node_get_scalar(f->v, &len);
	if (memchr(s, '\0', len))
		return yaml_fail(c, f->line, f->path, "a NUL character is not allowed");
	*ret = strndup(s, len);
	return *ret ? 0 : yaml_oom(c);
}

/* The length of a list of at most c->max_items items. */
int yaml_get_list(struct yaml_ctx *c, const struct yaml_field *f, const char *what, bool nonempty,
		  size_t *ret_n)
{
	int n;

	if (!f->v || !fy_node_is_sequence(f->v))
		return yaml_fail(c, f->line, f->path, "expected a list of %s, got %s", what,
				 yaml_kind(f->v));
	n = fy_node_sequence_item_count(f->v);
	if (n < 0 || (unsigned)n > c->max_items)
		return yaml_fail(c, f->line, f->path, "more than %u items", c->max_items);
	if (n == 0 && nonempty)
		return yaml_fail(c, f->line, f->path, "must not be empty");
	*ret_n = (size_t)n;
	return 0;
}

void yaml_free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

bool yaml_has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

bool yaml_has_dotdot(const char *p)
{
	for (const char *s = p; (s = strstr(s, "..")); s += 2)
		if ((s == p || s[-1] == '/') && (s[2] == '\0' || s[2] == '/'))
			return true;
	return false;
}

int yaml_resolve_path(struct yaml_ctx *c, const struct yaml_field *f, const char *where,
		      unsigned type, unsigned long long max_size, char **ret)
{
	char *rel = NULL, *joined = NULL, *real = NULL, b[128];
	struct stat st;
	int r = -1;

	if (yaml_get_string(c, f, &rel) < 0)
		return -1;
	if (asprintf(&joined, "%s/%s", c->dir, rel) < 0) {
		free(rel);
		return yaml_oom(c);
	}
	yaml_shown(rel, strlen(rel), b, sizeof(b));
	if (!*rel || yaml_has_control(rel))
		yaml_fail(c, f->line, f->path,
			  "must be a non-empty path without control characters");
	else if (rel[0] == '/')
		yaml_fail(c, f->line, f->path, "'%s' must be relative to %s", b, where);
	else if (yaml_has_dotdot(rel))
		yaml_fail(c, f->line, f->path, "'%s' must not contain '..'", b);
	else if (!(real = realpath(joined, NULL)) && (errno == ENOENT || errno == ENOTDIR))
		yaml_fail(c, f->line, f->path, "'%s' does not exist", b);
	else if (!real || stat(real, &st) < 0)
		err_setk(c->e, ERR_INPUT, errno, "%s:%d: %s: '%s'", c->file, f->line, f->path, b);
	/* A symlink may point anywhere; what counts is where it leads. */
	else if (!yaml_path_within(c->dir, real))
		yaml_fail(c, f->line, f->path, "'%s' leads outside %s", b, where);
	else if (strcmp(real, c->dir) == 0)
		yaml_fail(c, f->line, f->path, "'%s' is %s itself", b, where);
	else if ((st.st_mode & S_IFMT) != type)
		yaml_fail(c, f->line, f->path, "'%s' is not a %s", b,
			  type == S_IFDIR ? "directory" : "regular file");
	else if (max_size && (unsigned long long)st.st_size > max_size)
		yaml_fail(c, f->line, f->path, "'%s' is larger than %llu MiB", b, max_size >> 20);
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

/* p is dir or below it (both absolute and normalized). */
bool yaml_path_within(const char *dir, const char *p)
{
	size_t n = strlen(dir);
	return n == 1 || (strncmp(p, dir, n) == 0 && (p[n] == '/' || p[n] == '\0'));
}
