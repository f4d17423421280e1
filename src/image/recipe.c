/* Loading an image recipe: a strict schema, files kept inside the recipe's directory, a digest. */
#include "image/recipe.h"

#include <errno.h>
#include <libfyaml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "digest.h"
#include "yamlfile.h"

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

#define ITEMS_MAX    1000	    /* entries of one list */
#define SRC_MAX	     (256ull << 20) /* bytes of one file copied into the image */
#define NAME_MAX_LEN 64
#define PKG_MAX_LEN  128
#define SUITE_MAX    32
#define DST_MAX	     1024

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

/* A string of 1..max characters, each in `alphabet`, the first in `first`. */
static int get_word(struct yaml_ctx *c, const struct yaml_field *f, const char *what,
		    const char *first, const char *alphabet, size_t max, char **ret)
{
	char b[96];
	size_t n;

	if (yaml_get_string(c, f, ret) < 0)
		return -1;
	n = strlen(*ret);
	if (n == 0 || n > max || strspn(*ret, alphabet) != n || !strchr(first, (*ret)[0])) {
		yaml_fail(c, f->line, f->path, "'%s' is not %s", yaml_shown(*ret, n, b, sizeof(b)),
			  what);
		free(*ret);
		*ret = NULL;
		return -1;
	}
	return 0;
}

/* ---- the sections ---- */

#define LOWER_DIGITS "abcdefghijklmnopqrstuvwxyz0123456789"

static int parse_packages(struct yaml_ctx *c, const struct yaml_field *f, struct recipe *r)
{
	void *it = NULL;
	size_t n;

	if (yaml_get_list(c, f, "Debian package names", false, &n) < 0)
		return -1;
	if (!(r->packages = calloc(n + 1, sizeof(*r->packages))))
		return yaml_oom(c);
	for (size_t i = 0; i < n; i++) {
		struct yaml_field item;
		yaml_next_item(f, &it, i, &item);
		/* Debian policy 5.6.1: lower case letters, digits, + - and .,
		 * at least two characters, starting with a letter or digit. */
		if (get_word(c, &item, "a Debian package name ([a-z0-9][a-z0-9.+-]+)", LOWER_DIGITS,
			     LOWER_DIGITS ".+-", PKG_MAX_LEN, &r->packages[i]) < 0)
			return -1;
		if (strlen(r->packages[i]) < 2)
			return yaml_fail(
			    c, item.line, item.path,
			    "'%s' is not a Debian package name (at least two characters)",
			    r->packages[i]);
		for (size_t k = 0; k < i; k++)
			if (strcmp(r->packages[k], r->packages[i]) == 0)
				return yaml_fail(c, item.line, item.path, "'%s' is listed twice",
						 r->packages[i]);
		r->n_packages = i + 1;
	}
	return 0;
}

/* dst: absolute and normalized ("/a/b", no "//", ".", "..", trailing "/"),
 * of characters that need no quoting in mmdebstrap's special hooks, which
 * split words with Perl's shellwords (whose single quotes differ from sh's). */
static int check_dst(struct yaml_ctx *c, const struct yaml_field *f, const char *dst)
{
	static const char ok[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
				 "._+@%=:,/-";
	char b[128];
	size_t n = strlen(dst);

	yaml_shown(dst, n, b, sizeof(b));
	if (dst[0] != '/' || n < 2 || n > DST_MAX || dst[n - 1] == '/' || strstr(dst, "//") ||
	    yaml_has_dotdot(dst) || strstr(dst, "/./"))
		return yaml_fail(c, f->line, f->path,
				 "'%s' must be an absolute path to a file (like /etc/pip.conf), "
				 "without '.', '..', '//' or a trailing '/'",
				 b);
	if (strspn(dst, ok) != n)
		return yaml_fail(c, f->line, f->path,
				 "'%s': only letters, digits and . _ + @ %% = : , / - may appear",
				 b);
	/* Mount points during the build, empty in the image. */
	for (const char *const *m = (const char *const[]){"/proc", "/sys", "/dev", NULL}; *m; m++) {
		size_t ml = strlen(*m);
		if (strncmp(dst, *m, ml) == 0 && (dst[ml] == '/' || dst[ml] == '\0'))
			return yaml_fail(c, f->line, f->path,
					 "'%s' is below %s, which the image does not keep", b, *m);
	}
	return 0;
}

static int parse_mode(struct yaml_ctx *c, const struct yaml_field *f, mode_t *ret)
{
	char *s = NULL, b[64];
	unsigned v = 0;
	size_t n;

	if (yaml_get_string(c, f, &s) < 0)
		return -1;
	n = strlen(s);
	if (n < 3 || n > 4 || strspn(s, "01234567") != n || (n == 4 && s[0] != '0')) {
		yaml_fail(c, f->line, f->path,
			  "'%s' is not a file mode in octal from 0000 to 0777 (like \"0644\")",
			  yaml_shown(s, n, b, sizeof(b)));
		free(s);
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		v = v * 8 + (unsigned)(s[i] - '0');
	free(s);
	*ret = (mode_t)v;
	return 0;
}

static int parse_files(struct yaml_ctx *c, const struct yaml_field *f, struct recipe *r)
{
	void *it = NULL;
	size_t n;

	if (yaml_get_list(c, f, "files ({src, dst, mode})", false, &n) < 0)
		return -1;
	if (!(r->files = calloc(n + 1, sizeof(*r->files))))
		return yaml_oom(c);
	for (size_t i = 0; i < n; i++) {
		struct yaml_field item, src, dst, mode;
		struct recipe_file *rf = &r->files[i];

		yaml_next_item(f, &it, i, &item);
		r->n_files = i + 1;
		rf->mode = 0644;
		if (yaml_check_keys(c, &item, file_keys) < 0)
			return -1;
		if (!yaml_lookup(&item, "src", &src))
			return yaml_fail(c, src.line, src.path, "missing required key");
		if (!yaml_lookup(&item, "dst", &dst))
			return yaml_fail(c, dst.line, dst.path, "missing required key");
		if (yaml_resolve_path(c, &src, "the recipe's directory", S_IFREG, SRC_MAX,
				      &rf->src) < 0 ||
		    yaml_get_string(c, &dst, &rf->dst) < 0 || check_dst(c, &dst, rf->dst) < 0)
			return -1;
		if (yaml_lookup(&item, "mode", &mode) && parse_mode(c, &mode, &rf->mode) < 0)
			return -1;
		for (size_t k = 0; k < i; k++)
			if (strcmp(r->files[k].dst, rf->dst) == 0)
				return yaml_fail(c, dst.line, dst.path,
						 "'%s' is the dst of files[%zu] too", rf->dst, k);
	}
	return 0;
}

/* setup: a list of argv lists.  Any text but NUL and line breaks: each
 * argument is quoted for the shell by image.c, and a line break would end
 * mmdebstrap's hook line. */
static int parse_setup(struct yaml_ctx *c, const struct yaml_field *f, struct recipe *r)
{
	void *it = NULL;
	size_t n;

	if (yaml_get_list(c, f, "commands (each a list like [update-ca-certificates])", false, &n) <
	    0)
		return -1;
	if (!(r->setup = calloc(n + 1, sizeof(*r->setup))))
		return yaml_oom(c);
	for (size_t i = 0; i < n; i++) {
		struct yaml_field item;
		void *ait = NULL;
		size_t argc;

		yaml_next_item(f, &it, i, &item);
		if (item.v && fy_node_is_scalar(item.v) && !yaml_is_null(item.v))
			return yaml_fail(c, item.line, item.path,
					 "expected a list of strings (an argv like [useradd, -m, "
					 "student]; no shell is involved), got a string");
		if (yaml_get_list(c, &item, "strings", false, &argc) < 0)
			return -1;
		if (argc == 0)
			return yaml_fail(c, item.line, item.path, "must not be empty");
		if (!(r->setup[i] = calloc(argc + 1, sizeof(char *))))
			return yaml_oom(c);
		r->n_setup = i + 1;
		for (size_t k = 0; k < argc; k++) {
			struct yaml_field arg;
			char *s;
			yaml_next_item(&item, &ait, k, &arg);
			if (yaml_get_string(c, &arg, &r->setup[i][k]) < 0)
				return -1;
			s = r->setup[i][k];
			if (strpbrk(s, "\n\r"))
				return yaml_fail(c, arg.line, arg.path,
						 "a line break is not allowed");
			if (k == 0 && !*s)
				return yaml_fail(c, arg.line, arg.path,
						 "the program (first item) must not be empty");
		}
	}
	return 0;
}

static int parse_root(struct yaml_ctx *c, struct fy_node *node, struct recipe *r)
{
	struct yaml_field root = {.v = node, .line = yaml_node_line(node, 1), .path = ""}, f;
	int v;

	if (yaml_check_keys(c, &root, top_keys) < 0)
		return -1;
	if (!yaml_lookup(&root, "name", &f))
		return yaml_fail(c, f.line, "name", "missing required key");
	if (get_word(c, &f, "an image name ([a-z0-9][a-z0-9._-], at most 64 characters)",
		     LOWER_DIGITS, LOWER_DIGITS "._-", NAME_MAX_LEN, &r->name) < 0)
		return -1;
	if (strcmp(r->name, "host") == 0)
		return yaml_fail(c, f.line, f.path,
				 "'host' is reserved: it pins the host's own system tree");
	if (yaml_lookup(&root, "suite", &f)) {
		free(r->suite);
		r->suite = NULL;
		if (get_word(c, &f, "a Debian suite (like bookworm or stable)",
			     "abcdefghijklmnopqrstuvwxyz", LOWER_DIGITS ".-", SUITE_MAX,
			     &r->suite) < 0)
			return -1;
	}
	if (yaml_lookup(&root, "variant", &f)) {
		char list[96], b[64];
		size_t len = 0;
		const char *s;
		for (v = 0; variant_names[v] && !yaml_text_is(f.v, variant_names[v]); v++)
			;
		if (!variant_names[v]) {
			yaml_list_str(variant_names, list, sizeof(list));
			if (!f.v || !fy_node_is_scalar(f.v) || yaml_is_null(f.v))
				return yaml_fail(c, f.line, f.path, "expected one of %s, got %s",
						 list, yaml_kind(f.v));
			s = fy_node_get_scalar(f.v, &len);
			return yaml_fail(c, f.line, f.path, "expected one of %s, got '%s'", list,
					 yaml_shown(s, len, b, sizeof(b)));
		}
		r->variant = (enum recipe_variant)v;
	}
	if (yaml_lookup(&root, "packages", &f) && parse_packages(c, &f, r) < 0)
		return -1;
	if (yaml_lookup(&root, "files", &f) && parse_files(c, &f, r) < 0)
		return -1;
	if (yaml_lookup(&root, "setup", &f) && parse_setup(c, &f, r) < 0)
		return -1;
	return 0;
}

/* Over the text and every file's contents and mode, in the order of the recipe. */
static int compute_digest(struct yaml_ctx *c, struct recipe *r, const char *text, size_t len)
{
	struct digest *d = digest_new();
	char hex[65], mode[16];

	if (!d)
		return yaml_oom(c);
	digest_update_str(d, "proctor-recipe-1");
	digest_update(d, text, len);
	for (size_t i = 0; i < r->n_files; i++) {
		snprintf(mode, sizeof(mode), "%04o", (unsigned)r->files[i].mode);
		digest_update_str(d, r->files[i].dst);
		digest_update_str(d, mode);
		if (digest_update_file(d, r->files[i].src, c->e) < 0) {
			digest_free(d);
			/* A file of the recipe that cannot be read. */
			err_wrap(c->e, "%s: files[%zu].src", c->file, i);
			return err_classify(c->e, ERR_INPUT);
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
	struct yaml_ctx c = {.file = path, .e = e, .noun = "a recipe", .max_items = ITEMS_MAX};
	size_t len = 0;
	int rc = -1;

	if (!r)
		return err_set(e, ENOMEM, "%s", path);
	r->variant = RECIPE_VARIANT_APT;
	if (!(r->file = realpath(path, NULL))) {
		err_setk(e, ERR_INPUT, errno, "%s", path);
		goto out_free;
	}
	if (!(dir = strdup(r->file)) || !(r->suite = strdup("bookworm"))) {
		yaml_oom(&c);
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
	if (yaml_read_text(&c, r->file, &text, &len) < 0 || yaml_parse(&c, text, len, &doc) < 0 ||
	    parse_root(&c, fy_document_root(doc), r) < 0 || compute_digest(&c, r, text, len) < 0)
		goto out_free;
	if (!r->packages && !(r->packages = calloc(1, sizeof(char *)))) {
		yaml_oom(&c);
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
	yaml_free_strv(r->packages);
	for (size_t i = 0; r->files && i < r->n_files; i++) {
		free(r->files[i].src);
		free(r->files[i].dst);
	}
	free(r->files);
	for (size_t i = 0; r->setup && i < r->n_setup; i++)
		yaml_free_strv(r->setup[i]);
	free(r->setup);
	free(r);
}
