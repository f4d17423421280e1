/* Integration tests: `proctor image` building, listing, pinning and removing system images. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <dirent.h>
#include <errno.h>
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
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

/*
 * images/small.yaml is built once, in the group setup, into a temporary
 * state directory (a build downloads from the host's configured Debian
 * mirror and takes about a minute); the tests then check what it made,
 * build it a second time (which must give the same digest: builds are
 * reproducible from the same mirror state), remove a version, and feed
 * bad recipes and pins.  The versions and digests expected are never typed
 * in: they are read from what `proctor image ls --json` says.
 */

#ifndef IMAGES_DIR
#error "IMAGES_DIR must name the images/ directory (meson passes it)"
#endif

#define SMALL_RECIPE	IMAGES_DIR "/small.yaml"
#define BUILD_TIMEOUT_S 600
#define QUICK_TIMEOUT_S 60
/* Builds run as host uids from here, 65536 per build slot, 64 slots
 * (src/image/build.h).  Other builds may run on the host meanwhile (another
 * test suite): ours are the processes whose output goes below our state
 * directory. */
#define BUILD_UID_MIN 1650000000u
#define BUILD_UID_END (1650000000u + 64u * 65536u)

struct fixture {
	bool can_run; /* root: the group setup built the image */
	bool keep;    /* a failure to look into: the temporary directory stays */
	char *tmp;    /* owned temporary directory */
	char state[PATH_MAX], recipes[PATH_MAX];
	struct proc_out first; /* the first build */
	long long first_ms;
};

static struct fixture *fx;

/* ---- helpers ------------------------------------------------------------ */

static void require_built(struct fixture *f)
{
	harness_require_root("building an image");
	if (!f->can_run)
		skip();
	if (f->first.exit_status != 0)
		fail_msg("the first build of %s exited %d; stderr:\n%s", SMALL_RECIPE,
			 f->first.exit_status, f->first.err);
}

/* An error is one line on stderr, starting "proctor: ". */
static void assert_one_line_error(const struct proc_out *o)
{
	if (strncmp(o->err, "proctor: ", 9) != 0 || o->err_len == 0 ||
	    o->err[o->err_len - 1] != '\n' || memchr(o->err, '\n', o->err_len - 1))
		fail_msg("expected one line starting 'proctor: ' on stderr, got:\n%s", o->err);
}

/* `proctor image ARGS... --state-dir STATE`, with a timeout. */
static void image_cmd(struct proc_out *o, int timeout_s, const char *a1, const char *a2,
		      const char *a3)
{
	char *args[8];
	size_t n = 0;

	args[n++] = (char *)"image";
	args[n++] = (char *)a1;
	args[n++] = (char *)"--state-dir";
	args[n++] = fx->state;
	if (a2)
		args[n++] = (char *)a2;
	if (a3)
		args[n++] = (char *)a3;
	args[n] = NULL;
	harness_run(o, NULL, timeout_s, args);
}

/* `image ls --json`: the array (the harness keeps only objects), owned by
 * the caller. */
static json_t *list_images(void)
{
	struct proc_out o;
	json_error_t je;

	image_cmd(&o, QUICK_TIMEOUT_S, "ls", "--json", NULL);
	if (o.exit_status != 0)
		fail_msg("image ls exited %d: %s", o.exit_status, o.err);
	json_t *all = json_loadb(o.out, o.out_len, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_array(all))
		fail_msg("image ls --json printed no JSON array (%s):\n%s", je.text, o.out);
	proc_out_free(&o);
	return all;
}

static const char *member(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	if (!s)
		fail_msg("no string '%s' in an image entry", key);
	return s;
}

static bool is_digest(const char *s)
{
	return strncmp(s, "sha256:", 7) == 0 && strspn(s + 7, "0123456789abcdef") == 64 &&
	       s[71] == '\0';
}

/* No directory .build-* or .rm-* below images/NAME: a build or a removal
 * leaves nothing half-done. */
static void assert_no_leftover_dirs(const char *name)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/images/%s", fx->state, name);
	if (!(d = opendir(path)))
		return;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, ".build-", 7) || !strncmp(de->d_name, ".rm-", 4))
			fail_msg("left behind: %s/%s", path, de->d_name);
	closedir(d);
}

/* No process of a build of ours is left: none runs as a build uid with its
 * stderr below our state directory (the build's log). */
static void assert_no_build_process(void)
{
	char path[64], line[256], target[PATH_MAX];
	size_t state_len = strlen(fx->state);
	struct dirent *de;
	DIR *d = opendir("/proc");

	assert_non_null(d);
	while ((de = readdir(d))) {
		unsigned long uid = 0;
		bool build = false;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Uid:\t%lu", &uid) == 1)
				build = uid >= BUILD_UID_MIN && uid < BUILD_UID_END;
		fclose(f);
		if (!build)
			continue;
		/* Any descriptor below our state directory: the build's log, its
		 * work directory. */
		char fddir[64];
		snprintf(fddir, sizeof(fddir), "/proc/%s/fd", de->d_name);
		DIR *fds = opendir(fddir);
		struct dirent *fe;
		while (fds && (fe = readdir(fds))) {
			snprintf(path, sizeof(path), "%s/%.16s", fddir, fe->d_name);
			ssize_t n = readlink(path, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			if (strncmp(target, fx->state, state_len) == 0 && target[state_len] == '/')
				fail_msg("process %s (uid %lu, fd %s -> %s) outlived its build",
					 de->d_name, uid, fe->d_name, target);
		}
		if (fds)
			closedir(fds);
	}
	closedir(d);
}

/* ---- fixture ------------------------------------------------------------ */

static int image_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	fx = f;
	*state = f;
	f->tmp = harness_tmpdir();
	harness_path_join(f->state, f->tmp, "state");
	harness_path_join(f->recipes, f->tmp, "recipes");
	assert_int_equal(mkdir(f->recipes, 0755), 0);
	if (geteuid() != 0)
		return 0; /* each building test skips or fails on its own */
	f->can_run = true;
	long long t0 = harness_now_ms();
	image_cmd(&f->first, BUILD_TIMEOUT_S, "build", "--json", SMALL_RECIPE);
	f->first_ms = harness_now_ms() - t0;
	print_message("built %s in %.1f s\n", SMALL_RECIPE, (double)f->first_ms / 1000);
	return 0;
}

static int image_teardown(void **state)
{
	struct fixture *f = *state;

	if (f->can_run)
		proc_out_free(&f->first);
	if (f->keep)
		print_message("kept %s to look into\n", f->tmp);
	else
		harness_rm_tree(f->tmp);
	free(f->tmp);
	free(f);
	fx = NULL;
	return 0;
}

/* ---- tests -------------------------------------------------------------- */

static void test_image_help_lists_exit_status(void **state)
{
	struct proc_out o;

	(void)state;
	harness_run(&o, NULL, QUICK_TIMEOUT_S, (char *const[]){"image", "--help", NULL});
	assert_int_equal(o.exit_status, 0);
	assert_non_null(strstr(o.out, "EXIT STATUS"));
	proc_out_free(&o);
	harness_run(&o, NULL, QUICK_TIMEOUT_S, (char *const[]){"image", "frobnicate", NULL});
	assert_int_equal(o.exit_status, 2);
	assert_one_line_error(&o);
	proc_out_free(&o);
}

static void test_image_build_lists_version_1_with_a_digest(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX];
	struct stat st;

	require_built(f);
	assert_string_equal(jstr(&f->first, "pin"), "small@1");
	json_t *all = list_images();
	assert_int_equal(json_array_size(all), 1);
	json_t *img = json_array_get(all, 0);
	assert_string_equal(member(img, "name"), "small");
	assert_int_equal(json_integer_value(json_object_get(img, "version")), 1);
	if (!is_digest(member(img, "digest")))
		fail_msg("not a sha256 digest: %s", member(img, "digest"));
	assert_string_equal(member(img, "digest"), jstr(&f->first, "digest"));
	/* The tree has what the recipe asked for; the VM image is there. */
	static const char *const want[] = {"usr/bin/python3", "usr/bin/gcc", "usr/bin/make",
					   "usr/include/stdio.h",
					   "usr/lib/python3/dist-packages/pytest"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", member(img, "rootfs"), want[i]);
		if (lstat(path, &st) < 0)
			fail_msg("the image has no %s", want[i]);
	}
	snprintf(path, sizeof(path), "%s/etc/passwd", member(img, "rootfs"));
	assert_int_equal(lstat(path, &st), 0);
	assert_int_equal(st.st_uid, 0); /* owners as inside the build, not its host uids */
	assert_int_equal(stat(member(img, "squashfs"), &st), 0);
	assert_true(st.st_size > 1 << 20);
	print_message("small@1: squashfs %.1f MiB\n", (double)st.st_size / (1 << 20));
	assert_no_leftover_dirs("small");
	assert_no_build_process();
	json_decref(all);
}

static void test_image_rebuild_is_version_2_with_the_same_digest(void **state)
{
	struct fixture *f = *state;
	struct proc_out b;

	require_built(f);
	long long t0 = harness_now_ms();
	image_cmd(&b, BUILD_TIMEOUT_S, "build", "--json", SMALL_RECIPE);
	print_message("rebuilt in %.1f s\n", (double)(harness_now_ms() - t0) / 1000);
	if (b.exit_status != 0)
		fail_msg("the second build exited %d: %s", b.exit_status, b.err);
	assert_string_equal(jstr(&b, "pin"), "small@2");
	json_t *all = list_images();
	assert_int_equal(json_array_size(all), 2);
	const char *d1 = member(json_array_get(all, 0), "digest");
	const char *d2 = member(json_array_get(all, 1), "digest");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(all, 1), "version")), 2);
	if (strcmp(d1, d2) != 0) {
		f->keep = true;
		fail_msg("two builds of one recipe differ (not reproducible):\n  small@1 %s\n"
			 "  small@2 %s\ncompare %s and %s",
			 d1, d2, member(json_array_get(all, 0), "rootfs"),
			 member(json_array_get(all, 1), "rootfs"));
	}
	/* A pin by digest finds the lowest version with it. */
	struct proc_out s;
	image_cmd(&s, QUICK_TIMEOUT_S, "show", "--json", d1);
	assert_int_equal(s.exit_status, 0);
	assert_string_equal(jstr(&s, "pin"), "small@1");
	proc_out_free(&s);
	assert_no_leftover_dirs("small");
	json_decref(all);
	proc_out_free(&b);
}

static void test_image_rm_removes_one_version(void **state)
{
	struct fixture *f = *state;
	struct proc_out o;

	require_built(f);
	image_cmd(&o, QUICK_TIMEOUT_S, "show", "small@2", NULL);
	if (o.exit_status != 0)
		skip(); /* the rebuild test failed; it said why */
	proc_out_free(&o);
	image_cmd(&o, QUICK_TIMEOUT_S, "rm", "small@2", NULL);
	if (o.exit_status != 0)
		fail_msg("image rm small@2 exited %d: %s", o.exit_status, o.err);
	proc_out_free(&o);
	json_t *all = list_images();
	assert_int_equal(json_array_size(all), 1);
	assert_string_equal(member(json_array_get(all, 0), "pin"), "small@1");
	json_decref(all);
	image_cmd(&o, QUICK_TIMEOUT_S, "show", "small@2", NULL);
	assert_int_equal(o.exit_status, 2);
	assert_one_line_error(&o);
	proc_out_free(&o);
	image_cmd(&o, QUICK_TIMEOUT_S, "rm", "small@2", NULL);
	assert_int_equal(o.exit_status, 2);
	assert_one_line_error(&o);
	proc_out_free(&o);
	assert_no_leftover_dirs("small");
}

static void test_image_resolve_of_a_missing_version_fails_clearly(void **state)
{
	struct proc_out o;

	(void)state;
	image_cmd(&o, QUICK_TIMEOUT_S, "show", "small@9", NULL);
	assert_int_equal(o.exit_status, 2);
	assert_one_line_error(&o);
	assert_non_null(strstr(o.err, "small@9"));
	proc_out_free(&o);
	/* A bare name floats: it is refused, and so is garbage. */
	image_cmd(&o, QUICK_TIMEOUT_S, "show", "small", NULL);
	assert_int_equal(o.exit_status, 2);
	assert_one_line_error(&o);
	proc_out_free(&o);
	image_cmd(&o, QUICK_TIMEOUT_S, "show", "small@01", NULL);
	assert_int_equal(o.exit_status, 2);
	proc_out_free(&o);
	image_cmd(&o, QUICK_TIMEOUT_S, "show", "host", NULL);
	assert_int_equal(o.exit_status, 0);
	assert_non_null(strstr(o.out, "host sha256:"));
	proc_out_free(&o);
}

static void test_image_recipe_with_an_unknown_key_names_file_and_line(void **state)
{
	struct fixture *f = *state;
	struct proc_out o;
	char recipe[PATH_MAX];

	harness_path_join(recipe, f->recipes, "bad.yaml");
	harness_write_text(NULL, recipe, "# a typo on line 3\nname: bad\ncolour: blue\n");
	image_cmd(&o, QUICK_TIMEOUT_S, "build", recipe, NULL);
	assert_int_equal(o.exit_status, 2);
	assert_one_line_error(&o);
	if (!strstr(o.err, "bad.yaml:3: colour: unknown key"))
		fail_msg("expected 'bad.yaml:3: colour: unknown key', got: %s", o.err);
	proc_out_free(&o);
	/* A setup argument with a line break cannot become one hook line. */
	harness_path_join(recipe, f->recipes, "newline.yaml");
	harness_write_text(NULL, recipe, "name: nl\nsetup:\n  - [sh, -c, \"true\\nreboot\"]\n");
	image_cmd(&o, QUICK_TIMEOUT_S, "build", recipe, NULL);
	assert_int_equal(o.exit_status, 2);
	if (!strstr(o.err, "newline.yaml:3: setup[0][2]: a line break is not allowed"))
		fail_msg("expected the line break refused at newline.yaml:3, got: %s", o.err);
	proc_out_free(&o);
}

static void test_image_unknown_package_fails_with_its_name_and_leaves_nothing(void **state)
{
	struct fixture *f = *state;
	struct proc_out o;
	char recipe[PATH_MAX], path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	harness_require_root("building an image");
	harness_path_join(recipe, f->recipes, "nope.yaml");
	/* variant essential: the quickest way to the point where apt looks
	 * the package up. */
	harness_write_text(NULL, recipe,
			   "name: nope\nvariant: essential\npackages:\n"
			   "  - nopenope-does-not-exist\n");
	image_cmd(&o, BUILD_TIMEOUT_S, "build", recipe, NULL);
	if (o.exit_status != 1)
		fail_msg("expected exit status 1 (the build failed), got %d: %s", o.exit_status,
			 o.err);
	assert_one_line_error(&o);
	if (!strstr(o.err, "mmdebstrap failed") || !strstr(o.err, "nopenope-does-not-exist"))
		fail_msg("expected mmdebstrap's error naming the package, got: %s", o.err);
	snprintf(path, sizeof(path), "%s/images/nope", f->state);
	assert_non_null(d = opendir(path));
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    strcmp(de->d_name, ".lock") && strcmp(de->d_name, "failed-build.log"))
			fail_msg("a failed build left %s/%s", path, de->d_name);
	closedir(d);
	proc_out_free(&o);
	image_cmd(&o, QUICK_TIMEOUT_S, "show", "nope@1", NULL);
	assert_int_equal(o.exit_status, 2);
	proc_out_free(&o);
	assert_no_build_process();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_image_help_lists_exit_status),
	    cmocka_unit_test(test_image_build_lists_version_1_with_a_digest),
	    cmocka_unit_test(test_image_rebuild_is_version_2_with_the_same_digest),
	    cmocka_unit_test(test_image_rm_removes_one_version),
	    cmocka_unit_test(test_image_resolve_of_a_missing_version_fails_clearly),
	    cmocka_unit_test(test_image_recipe_with_an_unknown_key_names_file_and_line),
	    cmocka_unit_test(test_image_unknown_package_fails_with_its_name_and_leaves_nothing),
	};
	return cmocka_run_group_tests(tests, image_setup, image_teardown);
}
