/* Unit tests of image recipes (recipe.c: defaults, every refusal with its file:line: key) and
 * of the tree digest and pins (image.c), without building anything. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "image/image.h"
#include "image/recipe.h"

/* ---- helpers ---- */

/* Load `text` as DIR/r.yaml; the recipe, or NULL with the message in e. */
static struct recipe *load_text(const char *dir, const char *text, struct err *e)
{
	char path[PATH_MAX];
	struct recipe *r = NULL;

	harness_write_text(dir, "r.yaml", text);
	snprintf(path, sizeof(path), "%s/r.yaml", dir);
	if (recipe_load(path, &r, e) < 0)
		return NULL;
	return r;
}

/* Loading `text` fails with exactly "DIR/r.yaml<tail>", the recipe's fault. */
static void expect_error(const char *text, const char *tail)
{
	char *dir = harness_tmpdir(), want[2048];
	struct err e = {0};

	harness_write_text(dir, "hello.txt", "hello\n");
	snprintf(want, sizeof(want), "%s/r.yaml%s", dir, tail);
	struct recipe *r = load_text(dir, text, &e);
	if (r)
		fail_msg("expected '%s', but the recipe loaded", want);
	assert_string_equal(e.msg, want);
	assert_int_equal(e.kind, ERR_INPUT);
	harness_rm_tree(dir);
	free(dir);
}

/* ---- recipes ---- */

static void test_recipe_defaults(void **state)
{
	char *dir = harness_tmpdir();
	struct err e = {0};

	(void)state;
	struct recipe *r = load_text(dir, "name: tiny\n", &e);
	if (!r)
		fail_msg("%s", e.msg);
	assert_string_equal(r->name, "tiny");
	assert_string_equal(r->suite, "bookworm");
	assert_int_equal(r->variant, RECIPE_VARIANT_APT);
	assert_int_equal(r->n_packages, 0);
	assert_non_null(r->packages);
	assert_null(r->packages[0]);
	assert_int_equal(r->n_files, 0);
	assert_int_equal(r->n_setup, 0);
	assert_int_equal(strncmp(r->digest, "sha256:", 7), 0);
	assert_int_equal(strlen(r->digest), 71);
	recipe_free(r);
	harness_rm_tree(dir);
	free(dir);
}

static void test_recipe_full(void **state)
{
	char *dir = harness_tmpdir(), path[PATH_MAX];
	struct err e = {0};

	(void)state;
	snprintf(path, sizeof(path), "%s/sub", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	harness_write_text(dir, "sub/pip.conf", "[global]\n");
	struct recipe *r = load_text(dir,
				     "name: py.3-x_y\n"
				     "suite: trixie\n"
				     "variant: minbase\n"
				     "packages: [python3, g++, libstdc++6]\n"
				     "files:\n"
				     "  - src: sub/pip.conf\n"
				     "    dst: /etc/pip.conf\n"
				     "    mode: \"0600\"\n"
				     "  - {src: sub/pip.conf, dst: /opt/x/y.conf, mode: 755}\n"
				     "setup:\n"
				     "  - [useradd, --system, grader]\n"
				     "  - [sh, -c, \"echo 'quoted' $HOME\"]\n",
				     &e);
	if (!r)
		fail_msg("%s", e.msg);
	assert_string_equal(r->suite, "trixie");
	assert_int_equal(r->variant, RECIPE_VARIANT_MINBASE);
	assert_int_equal(r->n_packages, 3);
	assert_string_equal(r->packages[1], "g++");
	assert_int_equal(r->n_files, 2);
	assert_string_equal(r->files[0].dst, "/etc/pip.conf");
	assert_int_equal(r->files[0].mode, 0600);
	assert_int_equal(r->files[1].mode, 0755);
	assert_non_null(strstr(r->files[0].src, "/sub/pip.conf"));
	assert_true(r->files[0].src[0] == '/');
	assert_int_equal(r->n_setup, 2);
	assert_string_equal(r->setup[1][2], "echo 'quoted' $HOME");
	assert_null(r->setup[1][3]);
	char digest[72];
	memcpy(digest, r->digest, sizeof(digest));
	recipe_free(r);
	/* A file's contents are part of the recipe's digest. */
	harness_write_text(dir, "sub/pip.conf", "[global]\nindex-url = x\n");
	snprintf(path, sizeof(path), "%s/r.yaml", dir);
	assert_int_equal(recipe_load(path, &r, &e), 0);
	assert_string_not_equal(r->digest, digest);
	recipe_free(r);
	harness_rm_tree(dir);
	free(dir);
}

static void test_recipe_refusals_name_file_line_and_key(void **state)
{
	(void)state;
	expect_error("name: x\ncolour: blue\n",
		     ":2: colour: unknown key (expected name, suite, variant, packages, files, "
		     "setup)");
	expect_error("suite: bookworm\n", ":1: name: missing required key");
	expect_error("name: Big\n",
		     ":1: name: 'Big' is not an image name ([a-z0-9][a-z0-9._-], at most 64 "
		     "characters)");
	expect_error("name: .hidden\n",
		     ":1: name: '.hidden' is not an image name ([a-z0-9][a-z0-9._-], at most 64 "
		     "characters)");
	expect_error("name: host\n",
		     ":1: name: 'host' is reserved: it pins the host's own system tree");
	expect_error("name: x\nname: y\n", ":2: name: duplicate key (first at line 1)");
	expect_error("name: x\nvariant: custom\n",
		     ":2: variant: expected one of apt, minbase, essential, got 'custom'");
	expect_error("name: x\nsuite: \"book worm\"\n",
		     ":2: suite: 'book worm' is not a Debian suite (like bookworm or stable)");
	expect_error("name: x\npackages: [python3, \"rm -rf\"]\n",
		     ":2: packages[1]: 'rm -rf' is not a Debian package name "
		     "([a-z0-9][a-z0-9.+-]+)");
	expect_error("name: x\npackages: [python3, -o]\n",
		     ":2: packages[1]: '-o' is not a Debian package name ([a-z0-9][a-z0-9.+-]+)");
	expect_error("name: x\npackages: [make, make]\n",
		     ":2: packages[1]: 'make' is listed twice");
	expect_error("name: x\npackages: python3\n",
		     ":2: packages: expected a list of Debian package names, got a string");
	expect_error("name: x\nfiles:\n  - {src: hello.txt}\n",
		     ":3: files[0].dst: missing required key");
	expect_error("name: x\nfiles:\n  - {src: ../etc/passwd, dst: /x}\n",
		     ":3: files[0].src: '../etc/passwd' must not contain '..'");
	expect_error("name: x\nfiles:\n  - {src: /etc/passwd, dst: /x}\n",
		     ":3: files[0].src: '/etc/passwd' must be relative to the recipe's directory");
	expect_error("name: x\nfiles:\n  - {src: nothere, dst: /x}\n",
		     ":3: files[0].src: 'nothere' does not exist");
	expect_error("name: x\nfiles:\n  - {src: hello.txt, dst: etc/x}\n",
		     ":3: files[0].dst: 'etc/x' must be an absolute path to a file (like "
		     "/etc/pip.conf), without '.', '..', '//' or a trailing '/'");
	expect_error("name: x\nfiles:\n  - {src: hello.txt, dst: \"/etc/a b\"}\n",
		     ":3: files[0].dst: '/etc/a b': only letters, digits and . _ + @ % = : , / - "
		     "may appear");
	expect_error("name: x\nfiles:\n  - {src: hello.txt, dst: \"/etc/it's\"}\n",
		     ":3: files[0].dst: '/etc/it's': only letters, digits and . _ + @ % = : , / - "
		     "may appear");
	expect_error("name: x\nfiles:\n  - {src: hello.txt, dst: /dev/sda}\n",
		     ":3: files[0].dst: '/dev/sda' is below /dev, which the image does not keep");
	expect_error("name: x\nfiles:\n  - {src: hello.txt, dst: /x, mode: \"4755\"}\n",
		     ":3: files[0].mode: '4755' is not a file mode in octal from 0000 to 0777 "
		     "(like \"0644\")");
	expect_error("name: x\nfiles:\n  - {src: hello.txt, dst: /x}\n  - {src: hello.txt, dst: "
		     "/x}\n",
		     ":4: files[1].dst: '/x' is the dst of files[0] too");
	expect_error("name: x\nsetup:\n  - \"apt-get install foo\"\n",
		     ":3: setup[0]: expected a list of strings (an argv like [useradd, -m, "
		     "student]; no shell is involved), got a string");
	/* An empty list has no line of its own: the enclosing key's is given. */
	expect_error("name: x\nsetup:\n  - []\n", ":2: setup[0]: must not be empty");
	expect_error("name: x\nsetup:\n  - [\"\", x]\n",
		     ":3: setup[0][0]: the program (first item) must not be empty");
	expect_error("name: x\nsetup:\n  - [sh, -c, \"a\\nb\"]\n",
		     ":3: setup[0][2]: a line break is not allowed");
	expect_error("name: x\nsetup:\n  - [sh, -c, \"a\\0b\"]\n",
		     ":3: setup[0][2]: a NUL character is not allowed");
	expect_error("name: &a x\n",
		     ":1: anchor '&a': anchors, aliases and merge keys are not supported; write "
		     "the value out");
	expect_error("name: x\n---\nname: y\n",
		     ":2: a second YAML document ('---'); a recipe is one document");
}

/* ---- pins ---- */

/* A refused pin: -1, of `kind`, and the user's to fix (exit status 2). */
static void expect_refused(int rc, const struct err *e, enum err_kind kind)
{
	assert_int_equal(rc, -1);
	assert_int_equal(e->kind, kind);
	assert_int_equal(err_exit_status(e->kind), 2);
}

static void test_resolve_refuses_bare_names_and_garbage(void **state)
{
	char *dir = harness_tmpdir();
	struct image_info info;
	struct err e = {0};

	(void)state;
	expect_refused(image_resolve(dir, "small", &info, &e), &e, ERR_USAGE);
	assert_string_equal(e.msg,
			    "image 'small': pin a version (small@N) or a digest (sha256:HEX)");
	expect_refused(image_resolve(dir, "small@0", &info, &e), &e, ERR_USAGE);
	expect_refused(image_resolve(dir, "small@01", &info, &e), &e, ERR_USAGE);
	expect_refused(image_resolve(dir, "Small@1", &info, &e), &e, ERR_USAGE);
	expect_refused(image_resolve(dir, "sha256:abc", &info, &e), &e, ERR_USAGE);
	/* Well-formed, but not there. */
	expect_refused(image_resolve(dir, "small@9", &info, &e), &e, ERR_NOT_FOUND);
	assert_non_null(strstr(e.msg, "no image small@9"));
	expect_refused(image_resolve(dir,
				     "sha256:"
				     "0123456789abcdef0123456789abcdef"
				     "0123456789abcdef0123456789abcdef",
				     &info, &e),
		       &e, ERR_NOT_FOUND);
	expect_refused(image_remove(dir, "small@9", &e), &e, ERR_NOT_FOUND);
	expect_refused(image_remove(dir, "host", &e), &e, ERR_USAGE);
	assert_int_equal(image_resolve(dir, "host", &info, &e), 0);
	assert_string_equal(info.rootfs, "/");
	assert_int_equal(strncmp(info.digest, "sha256:", 7), 0);
	struct image_info *all = NULL;
	size_t n = 1;
	assert_int_equal(image_list(dir, &all, &n, &e), 0);
	assert_int_equal(n, 0);
	free(all);
	harness_rm_tree(dir);
	free(dir);
}

/* ---- the tree digest ---- */

static void digest_of(const char *dir, char out[72])
{
	struct err e = {0};

	if (image_tree_digest(dir, out, &e) < 0)
		fail_msg("digest %s: %s", dir, e.msg);
	assert_int_equal(strlen(out), 71);
}

static void test_tree_digest_covers_contents_modes_links_and_names(void **state)
{
	char *dir = harness_tmpdir(), path[PATH_MAX], d0[72], d1[72];

	(void)state;
	snprintf(path, sizeof(path), "%s/etc", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	harness_write_text(dir, "etc/a", "A\n");
	harness_write_text(dir, "etc/b", "B\n");
	snprintf(path, sizeof(path), "%s/etc/link", dir);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	digest_of(dir, d0);
	digest_of(dir, d1);
	assert_string_equal(d0, d1); /* stable */

	/* Contents. */
	harness_write_text(dir, "etc/a", "a\n");
	digest_of(dir, d1);
	assert_string_not_equal(d0, d1);
	harness_write_text(dir, "etc/a", "A\n");
	digest_of(dir, d1);
	assert_string_equal(d0, d1);

	/* Mode. */
	snprintf(path, sizeof(path), "%s/etc/a", dir);
	assert_int_equal(chmod(path, 0600), 0);
	digest_of(dir, d1);
	assert_string_not_equal(d0, d1);
	assert_int_equal(chmod(path, 0644), 0);

	/* A link's target, never what it points at. */
	snprintf(path, sizeof(path), "%s/etc/link", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/etc/group", path), 0);
	digest_of(dir, d1);
	assert_string_not_equal(d0, d1);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(symlink("/etc/passwd", path), 0);

	/* Names: moving bytes from one file to another changes it. */
	char d2[72];
	digest_of(dir, d2);
	harness_write_text(dir, "etc/a", "A\nB\n");
	harness_write_text(dir, "etc/b", "");
	digest_of(dir, d1);
	assert_string_not_equal(d2, d1);
	harness_rm_tree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_recipe_defaults),
	    cmocka_unit_test(test_recipe_full),
	    cmocka_unit_test(test_recipe_refusals_name_file_line_and_key),
	    cmocka_unit_test(test_resolve_refuses_bare_names_and_garbage),
	    cmocka_unit_test(test_tree_digest_covers_contents_modes_links_and_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
