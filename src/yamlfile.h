/* Strict YAML documents of Proctor's own: assignment.yaml and image recipes. */
#ifndef PROCTOR_YAMLFILE_H
#define PROCTOR_YAMLFILE_H

#include <libfyaml.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/*
 * Both files are read like any input that may be wrong in every way, and
 * the first mistake stops the load with one line, "FILE:LINE: key.path:
 * what is wrong": a regular file of at most YAML_FILE_MAX bytes without NUL
 * or control characters; one document; no anchors, aliases or merge keys;
 * then the tree is walked with the lookups below.
 */

#define YAML_FILE_MAX (1u << 20) /* bytes of one file */
#define YAML_PATH_LEN 256	 /* a dotted key path in a message */

struct yaml_ctx {
	const char *file; /* the file as the caller named it, for messages */
	const char *dir;  /* realpath of the file's directory */
	struct err *e;
	const char *noun;   /* "an assignment", "a recipe": what one document is */
	unsigned max_items; /* entries of one list */
};

/* A value looked up in a map: the node, and how to point at it. */
struct yaml_field {
	struct fy_node *v; /* NULL when the key is absent */
	int line;	   /* the key's line; the enclosing map's when absent; 0: unknown */
	char path[YAML_PATH_LEN];
};

/* Set c->e to "FILE[:LINE]: [PATH: ]MESSAGE", the user's file at fault
 * (ERR_INPUT); returns -1.  yaml_oom() is Proctor's (ERR_INTERNAL). */
__attribute__((format(printf, 4, 5))) int yaml_fail(struct yaml_ctx *c, int line, const char *path,
						    const char *fmt, ...);
int yaml_oom(struct yaml_ctx *c);
/* Text from the file as it may appear in a one-line message. */
const char *yaml_shown(const char *s, size_t len, char *buf, size_t cap);

/* Read the file (checks above); *ret is malloc'd and NUL-terminated. */
int yaml_read_text(struct yaml_ctx *c, const char *path, char **ret, size_t *ret_len);
/* Parse one document, refusing anchors, aliases and a second document. */
int yaml_parse(struct yaml_ctx *c, const char *text, size_t len, struct fy_document **ret);

int yaml_token_line(struct fy_token *t);
/* The line a node starts on (for collections: their first scalar's). */
int yaml_node_line(struct fy_node *n, int fallback);
bool yaml_is_null(struct fy_node *n);
/* "a string", "a list", ... for messages. */
const char *yaml_kind(struct fy_node *n);
bool yaml_text_is(struct fy_node *n, const char *text);
/* prefix.key into out (YAML_PATH_LEN). */
void yaml_join(char *out, const char *prefix, const char *key);
/* "a, b, c" of a NULL-terminated list. */
void yaml_list_str(const char *const *names, char *buf, size_t cap);
/* f is a map with only `allowed` keys, none twice. */
int yaml_check_keys(struct yaml_ctx *c, const struct yaml_field *f, const char *const *allowed);
bool yaml_lookup(const struct yaml_field *map, const char *key, struct yaml_field *ret);
void yaml_next_item(const struct yaml_field *list, void **it, size_t i, struct yaml_field *ret);
int yaml_get_string(struct yaml_ctx *c, const struct yaml_field *f, char **ret);
/* The length of a list of at most c->max_items (and, if nonempty, at least 1). */
int yaml_get_list(struct yaml_ctx *c, const struct yaml_field *f, const char *what, bool nonempty,
		  size_t *ret_n);
void yaml_free_strv(char **v);
/* Whether a relative path has a ".." component; whether p is dir or below it. */
bool yaml_has_control(const char *s); /* a C0 control or DEL */
bool yaml_has_dotdot(const char *p);
bool yaml_path_within(const char *dir, const char *p);

/*
 * A path of the file, relative to its directory c->dir (`where` in
 * messages: "the assignment directory"), resolved, symlinks followed, to
 * an existing entry of `type` (S_IFDIR or S_IFREG) strictly inside it, at
 * most max_size bytes (0: any): the malloc'd absolute path in *ret.
 */
int yaml_resolve_path(struct yaml_ctx *c, const struct yaml_field *f, const char *where,
		      unsigned type, unsigned long long max_size, char **ret);

#endif
