/* Unit tests of intake.c: hostile archives and directories, built at test time with libarchive. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grade/intake.h"
#include "grade/opener.h"
#include "grade/unpriv.h"
#include "harness.h"
#include "util.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MIB	     (UINT64_C(1) << 20)

/* The tree of one test: root/in holds the submission, root/d1/d2/d3/dest
 * is the destination, deep enough that "../../x" from it still lands
 * inside root, where the escape check looks. */
struct fx {
	char root[PATH_MAX];
	char in[PATH_MAX + 16];
	char dest[PATH_MAX + 32];
	int destfd;
};

static const char *const default_globs[] = {"solution.py"};
static const char *const default_required[] = {"solution.py"};

static struct intake_rules default_rules(void)
{
	return (struct intake_rules){
	    .globs = default_globs,
	    .n_globs = ARRAY_LEN(default_globs),
	    .required = default_required,
	    .n_required = ARRAY_LEN(default_required),
	    .max_bytes = MIB,
	    .max_entries = 10000,
	    .max_expanded = 64 * MIB,
	};
}

static const char solution[] = "def is_prime(n):\n    return n > 1\n";

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	char d[PATH_MAX + 32];

	assert_non_null(f);
	snprintf(f->root, sizeof(f->root), "/tmp/test_intake.XXXXXX");
	assert_non_null(mkdtemp(f->root));
	snprintf(f->in, sizeof(f->in), "%s/in", f->root);
	assert_int_equal(mkdir(f->in, 0755), 0);
	snprintf(d, sizeof(d), "%s/d1/d2/d3/dest", f->root);
	struct err e;
	assert_int_equal(mkdir_p_at(AT_FDCWD, d, 0755, (uid_t)-1, (gid_t)-1, &e), 0);
	snprintf(f->dest, sizeof(f->dest), "%s", d);
	f->destfd = open(f->dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->destfd >= 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;
	struct err e;
	int fd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	/* Tests make unreadable or odd entries; removal must not depend on them. */
	if (fd >= 0) {
		rm_rf_children(fd, &e);
		close(fd);
	}
	rmdir(f->root);
	close(f->destfd);
	free(f);
	return 0;
}

/* ---- archive writers ---- */

enum fmt { FMT_ZIP, FMT_TAR, FMT_TGZ };
static const char *const fmt_ext[] = {"zip", "tar", "tar.gz"};

static struct archive *aw_open(const char *path, enum fmt fmt)
{
	struct archive *a = archive_write_new();

	assert_non_null(a);
	switch (fmt) {
	case FMT_ZIP:
		assert_int_equal(archive_write_set_format_zip(a), ARCHIVE_OK);
		archive_write_set_options(a, "zip:compression-level=1");
		break;
	case FMT_TAR:
		assert_int_equal(archive_write_set_format_gnutar(a), ARCHIVE_OK);
		break;
	case FMT_TGZ:
		assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
		assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
		archive_write_set_options(a, "gzip:compression-level=1");
		break;
	}
	assert_int_equal(archive_write_open_filename(a, path), ARCHIVE_OK);
	return a;
}

static void aw_close(struct archive *a)
{
	assert_int_equal(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
}

/* One entry; `mode` carries the file type.  Header warnings (a name that
 * cannot be translated) are fine: the raw name is still written. */
static void aw_entry(struct archive *a, const char *name, mode_t mode, const void *data, size_t len,
		     const char *symlink, const char *hardlink, dev_t rdev)
{
	struct archive_entry *ae = archive_entry_new();

	archive_entry_copy_pathname(ae, name);
	archive_entry_set_mode(ae, mode);
	archive_entry_set_size(ae, (la_int64_t)len);
	archive_entry_set_mtime(ae, 1700000000, 0);
	if (symlink)
		archive_entry_copy_symlink(ae, symlink);
	if (hardlink)
		archive_entry_copy_hardlink(ae, hardlink);
	if (rdev)
		archive_entry_set_rdev(ae, rdev);
	assert_true(archive_write_header(a, ae) >= ARCHIVE_WARN);
	if (len)
		assert_int_equal(archive_write_data(a, data, len), (la_ssize_t)len);
	archive_entry_free(ae);
}

static void aw_file(struct archive *a, const char *name, const char *text)
{
	aw_entry(a, name, AE_IFREG | 0644, text, strlen(text), NULL, NULL, 0);
}

static void aw_dir(struct archive *a, const char *name)
{
	aw_entry(a, name, AE_IFDIR | 0755, NULL, 0, NULL, NULL, 0);
}

/* `size` zero bytes, as a file whose header declares them. */
static void aw_zeros(struct archive *a, const char *name, uint64_t size)
{
	static const char zeros[1 << 16];
	struct archive_entry *ae = archive_entry_new();

	archive_entry_copy_pathname(ae, name);
	archive_entry_set_mode(ae, AE_IFREG | 0644);
	archive_entry_set_size(ae, (la_int64_t)size);
	assert_int_equal(archive_write_header(a, ae), ARCHIVE_OK);
	for (uint64_t done = 0; done < size; done += sizeof(zeros))
		assert_true(archive_write_data(a, zeros, sizeof(zeros)) > 0);
	archive_entry_free(ae);
}

static void in_path(struct fx *f, char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", f->in, name);
}

/* ---- checks ---- */

/* Take `path` as proctor and its helper do: opened here (opener.h), an
 * archive handed over as its open file, a directory read through an
 * opener process. */
static int take(int destfd, const char *path, const struct intake_rules *rules,
		struct intake_result *r, struct err *e)
{
	struct opener_stat st;
	int src, sock = -1, rc;
	pid_t pid = -1;

	if (opener_open_root(path, &st, &src, e) < 0)
		return -1;
	if (src < 0) /* neither file nor directory: intake must refuse it */
		src = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (src < 0)
		return err_set(e, errno, "open '%s'", path);
	if (S_ISDIR(st.mode) && opener_start(src, &pid, &sock, e) < 0) {
		close(src);
		return -1;
	}
	rc = intake_submission(sock >= 0 ? sock : src, destfd, rules, r, e);
	xclose(sock);
	opener_stop(pid);
	close(src);
	return rc;
}

static int run(struct fx *f, const char *path, const struct intake_rules *rules,
	       struct intake_result *r)
{
	struct err e = {0};
	int rc = take(f->destfd, path, rules, r, &e);

	if (rc != 0)
		fail_msg("intake_submission failed: %s", e.msg);
	return rc;
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/* Names starting with "adv_" anywhere below dir, except below `skip`
 * (the destination) and the submission itself. */
static size_t escaped_below(const char *dir, const char *skip, const char *in)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char p[PATH_MAX];
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (strcmp(p, skip) == 0 || strcmp(p, in) == 0)
			continue;
		if (strncmp(de->d_name, "adv_", 4) == 0) {
			print_message("escaped: %s\n", p);
			n++;
		}
		if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			n += escaped_below(p, skip, in);
	}
	closedir(d);
	return n;
}

static void assert_contained(struct fx *f)
{
	struct stat st;

	assert_int_equal(escaped_below(f->root, f->dest, f->in), 0);
	assert_int_not_equal(lstat("/tmp/adv_zipslip_via_symlink", &st), 0);
}

static void assert_rejected(struct fx *f, struct intake_result *r, const char *why)
{
	if (!r->rejected)
		fail_msg("not rejected (taken %zu)", r->n_taken);
	if (why && !strstr(r->reason, why))
		fail_msg("reason '%s' does not mention '%s'", r->reason, why);
	assert_int_equal(r->n_taken, 0);
	assert_int_equal(r->bytes_taken, 0);
	assert_int_equal(count_entries(f->dest), 0);
	assert_contained(f);
}

/* Accepted, with exactly `n` taken files, the first ones given. */
static void assert_taken(struct fx *f, struct intake_result *r, size_t n, const char *first)
{
	if (r->rejected)
		fail_msg("rejected: %s", r->reason);
	assert_int_equal(r->n_taken, n);
	if (first)
		assert_string_equal(r->taken[0], first);
	assert_int_equal(strlen(r->digest), 64);
	assert_contained(f);
}

static void assert_file(struct fx *f, const char *rel, const char *content, mode_t mode)
{
	char buf[4096];
	struct stat st;
	int fd = openat(f->destfd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, mode);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, content);
}

static bool listed(char **v, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

static void reset_dest(struct fx *f)
{
	struct err e;

	assert_int_equal(rm_rf_children(f->destfd, &e), 0);
}

/* Build an archive in every format with `fill`, run intake, check. */
typedef void fill_fn(struct archive *a, struct fx *f);

static void each_format(struct fx *f, fill_fn *fill, const char *why, const enum fmt *fmts,
			size_t n_fmts)
{
	struct intake_rules rules = default_rules();

	for (size_t i = 0; i < n_fmts; i++) {
		char path[PATH_MAX + 64], name[32];
		struct intake_result r = {0};
		snprintf(name, sizeof(name), "sub.%s", fmt_ext[fmts[i]]);
		in_path(f, path, sizeof(path), name);
		struct archive *a = aw_open(path, fmts[i]);
		fill(a, f);
		aw_close(a);
		run(f, path, &rules, &r);
		print_message("  %s: %s\n", fmt_ext[fmts[i]], r.rejected ? r.reason : "taken");
		if (why)
			assert_rejected(f, &r, why);
		intake_result_free(&r);
		reset_dest(f);
	}
}

static const enum fmt all_fmts[] = {FMT_ZIP, FMT_TAR, FMT_TGZ};
static const enum fmt tar_fmts[] = {FMT_TAR, FMT_TGZ};

static void write_at(const char *dir, const char *rel, const char *text, mode_t mode)
{
	char p[PATH_MAX + 64];
	struct err e;
	char *slash;

	snprintf(p, sizeof(p), "%s/%s", dir, rel);
	slash = strrchr(p, '/');
	*slash = '\0';
	assert_int_equal(mkdir_p_at(AT_FDCWD, p, 0755, (uid_t)-1, (gid_t)-1, &e), 0);
	*slash = '/';
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write_all(fd, text, strlen(text)), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

/* ---- accepted submissions ---- */

static void fill_plain(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
}

static void test_intake_takes_solution_from_every_format(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	char digest[65] = "";

	for (size_t i = 0; i < ARRAY_LEN(all_fmts); i++) {
		char path[PATH_MAX + 64], name[32];
		struct intake_result r = {0};
		/* A misleading name: formats are detected by content. */
		snprintf(name, sizeof(name), "sub%zu.txt", i);
		in_path(f, path, sizeof(path), name);
		struct archive *a = aw_open(path, all_fmts[i]);
		fill_plain(a, f);
		aw_close(a);
		run(f, path, &rules, &r);
		assert_taken(f, &r, 1, "solution.py");
		assert_int_equal(r.bytes_taken, strlen(solution));
		assert_file(f, "solution.py", solution, 0644);
		/* Only the taken file: no staging directory left behind. */
		assert_int_equal(count_entries(f->dest), 1);
		/* The digest depends on the files, not on the container. */
		if (i == 0)
			memcpy(digest, r.digest, sizeof(digest));
		assert_string_equal(r.digest, digest);
		intake_result_free(&r);
		reset_dest(f);
	}
}

/* Found by fuzz_intake under UBSan: empty lists reached qsort() as NULL. */
static void test_intake_accepts_with_empty_lists(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	char path[PATH_MAX + 64];
	struct archive *a;

	in_path(f, path, sizeof(path), "only.tar.gz");
	a = aw_open(path, FMT_TGZ);
	aw_file(a, "solution.py", solution);
	aw_close(a);
	run(f, path, &rules, &r);
	assert_taken(f, &r, 1, "solution.py");
	assert_int_equal(r.n_ignored, 0);
	assert_null(r.ignored);
	intake_result_free(&r);
	reset_dest(f);

	/* Nothing taken, nothing ignored. */
	rules.n_required = 0;
	a = aw_open(path, FMT_TGZ);
	aw_dir(a, "empty/");
	aw_close(a);
	run(f, path, &rules, &r);
	assert_taken(f, &r, 0, NULL);
	assert_int_equal(r.n_ignored, 0);
	intake_result_free(&r);
}

static void test_intake_digest_follows_content_not_order(void **state)
{
	struct fx *f = *state;
	static const char *const globs[] = {"*.py"};
	struct intake_rules rules = default_rules();
	char p1[PATH_MAX + 64], p2[PATH_MAX + 64], p3[PATH_MAX + 64];
	struct intake_result r1 = {0}, r2 = {0}, r3 = {0};
	struct archive *a;

	rules.globs = globs;
	rules.n_globs = 1;
	in_path(f, p1, sizeof(p1), "a.tar");
	in_path(f, p2, sizeof(p2), "b.zip");
	in_path(f, p3, sizeof(p3), "c.zip");
	a = aw_open(p1, FMT_TAR);
	aw_file(a, "solution.py", solution);
	aw_file(a, "helper.py", "x = 1\n");
	aw_close(a);
	a = aw_open(p2, FMT_ZIP);
	aw_file(a, "helper.py", "x = 1\n");
	aw_file(a, "solution.py", solution);
	aw_close(a);
	a = aw_open(p3, FMT_ZIP);
	aw_file(a, "helper.py", "x = 2\n");
	aw_file(a, "solution.py", solution);
	aw_close(a);
	run(f, p1, &rules, &r1);
	reset_dest(f);
	run(f, p2, &rules, &r2);
	reset_dest(f);
	run(f, p3, &rules, &r3);
	assert_taken(f, &r1, 2, "helper.py");
	assert_string_equal(r1.taken[1], "solution.py");
	assert_string_equal(r1.digest, r2.digest);
	assert_string_not_equal(r1.digest, r3.digest);
	intake_result_free(&r1);
	intake_result_free(&r2);
	intake_result_free(&r3);
}

static void test_intake_keeps_only_the_exec_bit(void **state)
{
	struct fx *f = *state;
	static const char *const globs[] = {"*"};
	struct intake_rules rules = default_rules();
	char path[PATH_MAX + 64];
	struct intake_result r = {0};
	struct archive *a;

	rules.globs = globs;
	rules.n_globs = 1;
	in_path(f, path, sizeof(path), "modes.tar");
	a = aw_open(path, FMT_TAR);
	aw_entry(a, "solution.py", AE_IFREG | 0600, "a", 1, NULL, NULL, 0);
	aw_entry(a, "run.sh", AE_IFREG | 01777, "b", 1, NULL, NULL, 0);
	aw_close(a);
	run(f, path, &rules, &r);
	assert_taken(f, &r, 2, "run.sh");
	assert_file(f, "solution.py", "a", 0644);
	assert_file(f, "run.sh", "b", 0755);
	intake_result_free(&r);
}

static void fill_one_top_dir(struct archive *a, struct fx *f)
{
	aw_dir(a, "./");
	aw_dir(a, "./proj/");
	aw_file(a, "./proj/solution.py", solution);
	aw_file(a, "./proj/notes.txt", "hi\n");
	aw_file(a, "__MACOSX/proj/._solution.py", "junk");
}

static void test_intake_strips_one_top_level_directory(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();

	for (size_t i = 0; i < ARRAY_LEN(all_fmts); i++) {
		char path[PATH_MAX + 64], name[32];
		struct intake_result r = {0};
		snprintf(name, sizeof(name), "top.%s", fmt_ext[all_fmts[i]]);
		in_path(f, path, sizeof(path), name);
		struct archive *a = aw_open(path, all_fmts[i]);
		fill_one_top_dir(a, f);
		aw_close(a);
		run(f, path, &rules, &r);
		assert_taken(f, &r, 1, "solution.py");
		assert_file(f, "solution.py", solution, 0644);
		assert_true(listed(r.ignored, r.n_ignored, "notes.txt"));
		assert_true(listed(r.ignored, r.n_ignored, "__MACOSX/proj/._solution.py"));
		intake_result_free(&r);
		reset_dest(f);
	}
}

static void test_intake_keeps_two_top_level_directories(void **state)
{
	struct fx *f = *state;
	static const char *const globs[] = {"a/*.py", "b/*.py"};
	struct intake_rules rules = default_rules();
	char path[PATH_MAX + 64];
	struct intake_result r = {0};
	struct archive *a;

	rules.globs = globs;
	rules.n_globs = 2;
	rules.n_required = 0;
	in_path(f, path, sizeof(path), "two.zip");
	a = aw_open(path, FMT_ZIP);
	aw_file(a, "a/x.py", "1");
	aw_file(a, "b/y.py", "2");
	aw_close(a);
	run(f, path, &rules, &r);
	assert_taken(f, &r, 2, "a/x.py");
	assert_string_equal(r.taken[1], "b/y.py");
	assert_file(f, "a/x.py", "1", 0644);
	assert_file(f, "b/y.py", "2", 0644);
	intake_result_free(&r);
}

/* An assignment that expects src/: a submission of just src/ is kept as is. */
static void test_intake_keeps_top_directory_a_glob_names(void **state)
{
	struct fx *f = *state;
	static const char *const globs[] = {"src/*.c"};
	static const char *const required[] = {"src/main.c"};
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	char path[PATH_MAX + 64];
	struct archive *a;

	rules.globs = globs;
	rules.n_globs = 1;
	rules.required = required;
	in_path(f, path, sizeof(path), "src.zip");
	a = aw_open(path, FMT_ZIP);
	aw_dir(a, "src/");
	aw_file(a, "src/main.c", "int main(void) { return 0; }\n");
	aw_close(a);
	run(f, path, &rules, &r);
	assert_taken(f, &r, 1, "src/main.c");
	intake_result_free(&r);
	reset_dest(f);

	write_at(f->in, "src/main.c", "int main(void) { return 0; }\n", 0644);
	run(f, f->in, &rules, &r);
	assert_taken(f, &r, 1, "src/main.c");
	assert_file(f, "src/main.c", "int main(void) { return 0; }\n", 0644);
	intake_result_free(&r);
}

static void fill_allowlist(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_file(a, "conftest.py", "import os\n");
	aw_file(a, "pytest.ini", "[pytest]\n");
	aw_file(a, "evil-1.0.dist-info/entry_points.txt", "[pytest11]\nevil = evil\n");
	aw_file(a, "evil-1.0.dist-info/METADATA", "Name: evil\n");
}

static void test_intake_takes_only_allowlisted_files(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();

	for (size_t i = 0; i < ARRAY_LEN(all_fmts); i++) {
		char path[PATH_MAX + 64], name[32];
		struct intake_result r = {0};
		snprintf(name, sizeof(name), "allow.%s", fmt_ext[all_fmts[i]]);
		in_path(f, path, sizeof(path), name);
		struct archive *a = aw_open(path, all_fmts[i]);
		fill_allowlist(a, f);
		aw_close(a);
		run(f, path, &rules, &r);
		assert_taken(f, &r, 1, "solution.py");
		assert_int_equal(count_entries(f->dest), 1);
		assert_true(listed(r.ignored, r.n_ignored, "conftest.py"));
		assert_true(listed(r.ignored, r.n_ignored, "pytest.ini"));
		assert_true(listed(r.ignored, r.n_ignored, "evil-1.0.dist-info/entry_points.txt"));
		assert_int_equal(r.n_ignored, 4);
		intake_result_free(&r);
		reset_dest(f);
	}
}

/* ---- directory submissions ---- */

static void test_intake_directory_takes_allowlisted_files(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};

	write_at(f->in, "solution.py", solution, 0755);
	write_at(f->in, "conftest.py", "import os\n", 0644);
	write_at(f->in, "pytest.ini", "[pytest]\n", 0644);
	write_at(f->in, "evil-1.0.dist-info/entry_points.txt", "[pytest11]\n", 0644);
	run(f, f->in, &rules, &r);
	assert_taken(f, &r, 1, "solution.py");
	assert_file(f, "solution.py", solution, 0755);
	assert_true(listed(r.ignored, r.n_ignored, "conftest.py"));
	assert_true(listed(r.ignored, r.n_ignored, "pytest.ini"));
	/* No glob can match below it, so it is listed, not walked. */
	assert_true(listed(r.ignored, r.n_ignored, "evil-1.0.dist-info/"));
	assert_int_equal(count_entries(f->dest), 1);
	intake_result_free(&r);
}

static void test_intake_directory_strips_one_top_level_directory(void **state)
{
	struct fx *f = *state;
	static const char *const globs[] = {"solution.py", "src/*.py"};
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};

	rules.globs = globs;
	rules.n_globs = 2;
	write_at(f->in, "proj/solution.py", solution, 0644);
	write_at(f->in, "proj/src/util.py", "u\n", 0644);
	write_at(f->in, "proj/tests/test_x.py", "t\n", 0644);
	write_at(f->in, "__MACOSX/proj/._solution.py", "junk", 0644);
	run(f, f->in, &rules, &r);
	assert_taken(f, &r, 2, "solution.py");
	assert_string_equal(r.taken[1], "src/util.py");
	assert_file(f, "src/util.py", "u\n", 0644);
	assert_true(listed(r.ignored, r.n_ignored, "tests/"));
	assert_true(listed(r.ignored, r.n_ignored, "__MACOSX/"));
	intake_result_free(&r);
}

static void test_intake_directory_ignores_symlinks(void **state)
{
	struct fx *f = *state;
	/* Globs that would match the links' names if they were followed. */
	static const char *const globs[] = {"*", "*/*"};
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	char p[PATH_MAX + 64], outside[PATH_MAX + 64];

	rules.globs = globs;
	rules.n_globs = 2;
	write_at(f->in, "solution.py", solution, 0644);
	snprintf(outside, sizeof(outside), "%s/outside_secret", f->root);
	write_at(f->root, "outside_secret", "secret\n", 0644);
	static const char *const links[][2] = {
	    {"shadow_link", "/etc/shadow"},
	    {"passwd_link", "/etc/passwd"},
	    {"parent_escape", "../.."},
	    {"self_loop", "self_loop"},
	    {"root_link", "/"},
	};
	for (size_t i = 0; i < ARRAY_LEN(links); i++) {
		snprintf(p, sizeof(p), "%s/%s", f->in, links[i][0]);
		assert_int_equal(symlink(links[i][1], p), 0);
	}
	snprintf(p, sizeof(p), "%s/secret_link", f->in);
	assert_int_equal(symlink(outside, p), 0);
	run(f, f->in, &rules, &r);
	assert_taken(f, &r, 1, "solution.py");
	assert_int_equal(count_entries(f->dest), 1);
	for (size_t i = 0; i < ARRAY_LEN(links); i++) {
		char want[64];
		snprintf(want, sizeof(want), "%s (symlink)", links[i][0]);
		assert_true(listed(r.ignored, r.n_ignored, want));
	}
	assert_true(listed(r.ignored, r.n_ignored, "secret_link (symlink)"));
	intake_result_free(&r);
}

/* A tmpfs mounted inside the submission (in a private mount namespace of
 * a child) is listed as another filesystem, never entered. */
static void test_intake_directory_does_not_cross_mounts(void **state)
{
	struct fx *f = *state;
	char mnt[PATH_MAX + 64];
	int status;
	pid_t pid;

	write_at(f->in, "solution.py", solution, 0644);
	snprintf(mnt, sizeof(mnt), "%s/mnt", f->in);
	assert_int_equal(mkdir(mnt, 0755), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static const char *const globs[] = {"solution.py", "mnt/*"};
		struct intake_rules rules = default_rules();
		struct intake_result r = {0};
		struct err e;
		rules.globs = globs;
		rules.n_globs = 2;
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
		    mount("tmpfs", mnt, "tmpfs", 0, "size=1m") < 0)
			_exit(77);
		write_at(mnt, "adv_mounted.py", "x\n", 0644);
		if (take(f->destfd, f->in, &rules, &r, &e) < 0)
			_exit(2);
		if (r.rejected || r.n_taken != 1 ||
		    !listed(r.ignored, r.n_ignored, "mnt (other filesystem)"))
			_exit(3);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		print_message("no mount namespace here: skipped\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(count_entries(f->dest), 1);
	assert_contained(f);
}

/* Read below a directory descriptor with the caller's own credentials, a
 * file they cannot read is Proctor's setup problem (-1, retried), not the
 * student's; nothing is left in dest.  Run as uid 65534 in a child, so the
 * permission check is real even for root. */
static void test_intake_unreadable_file_is_our_error(void **state)
{
	struct fx *f = *state;
	int status, dirfd;
	pid_t pid;

	write_at(f->in, "helper.py", "x\n", 0644);
	write_at(f->in, "solution.py", solution, 0);
	assert_int_equal(chmod(f->dest, 0777), 0);
	dirfd = open(f->in, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static const char *const globs[] = {"*.py"};
		struct intake_rules rules = default_rules();
		struct intake_result r = {0};
		struct err e = {0};
		rules.globs = globs;
		if (geteuid() == 0 &&
		    (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0))
			_exit(77);
		if (intake_submission(dirfd, f->destfd, &rules, &r, &e) == 0)
			_exit(r.rejected ? 3 : 4);
		_exit(strstr(e.msg, "cannot read 'solution.py'") ? 0 : 5);
	}
	close(dirfd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(count_entries(f->dest), 0);
	assert_contained(f);
}

static void test_intake_directory_rejects_fifo_and_leaves_dest_empty(void **state)
{
	struct fx *f = *state;
	static const char *const globs[] = {"*"};
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	char p[PATH_MAX + 64];

	rules.globs = globs;
	rules.n_globs = 1;
	/* Taken files beside the FIFO: the first pass finds it, so none of
	 * them is written, whatever order readdir() uses. */
	for (int i = 0; i < 20; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%02d.py", i);
		write_at(f->in, name, "x\n", 0644);
	}
	write_at(f->in, "solution.py", solution, 0644);
	snprintf(p, sizeof(p), "%s/adv_fifo", f->in);
	assert_int_equal(mkfifo(p, 0644), 0);
	run(f, f->in, &rules, &r);
	assert_rejected(f, &r, "FIFO");
	intake_result_free(&r);
}

static void test_intake_directory_rejects_setuid_file(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};

	write_at(f->in, "solution.py", solution, 0644);
	write_at(f->in, "setuid_sh", "#!/bin/sh\nid\n", 04755);
	run(f, f->in, &rules, &r);
	assert_rejected(f, &r, "setuid");
	assert_non_null(strstr(r.reason, "setuid_sh"));
	intake_result_free(&r);
}

static void test_intake_empty_directory_misses_required_file(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};

	run(f, f->in, &rules, &r);
	assert_rejected(f, &r, "required file 'solution.py' is missing");
	intake_result_free(&r);

	/* Without required files, an empty submission is simply empty. */
	rules.n_required = 0;
	run(f, f->in, &rules, &r);
	assert_taken(f, &r, 0, NULL);
	assert_int_equal(count_entries(f->dest), 0);
	intake_result_free(&r);
}

/* 100 directories of 100 files, beside solution.py; in `dir`. */
static void many_files(const char *dir)
{
	char p[PATH_MAX + 64];

	write_at(dir, "solution.py", solution, 0644);
	for (int i = 0; i < 100; i++) {
		snprintf(p, sizeof(p), "%s/junk/d%02d", dir, i);
		struct err e;
		assert_int_equal(mkdir_p_at(AT_FDCWD, p, 0755, (uid_t)-1, (gid_t)-1, &e), 0);
		for (int j = 0; j < 100; j++) {
			char fp[PATH_MAX + 80];
			snprintf(fp, sizeof(fp), "%s/f%02d.txt", p, j);
			int fd = open(fp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
			assert_true(fd >= 0);
			assert_int_equal(write_all(fd, "1\n", 2), 0);
			close(fd);
		}
	}
}

static void test_intake_many_tiny_files_in_bounded_time(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	static const char *const all_txt[] = {"solution.py", "junk/*/*.txt"};
	static const char *const some_txt[] = {"solution.py", "junk/d0?/*.txt"};
	uint64_t t0;

	many_files(f->in);
	/* Only solution.py allowlisted: junk/ is not walked. */
	t0 = now_ns();
	run(f, f->in, &rules, &r);
	assert_true(now_ns() - t0 < 3000000000ull);
	assert_taken(f, &r, 1, "solution.py");
	assert_true(listed(r.ignored, r.n_ignored, "junk/"));
	intake_result_free(&r);
	reset_dest(f);

	/* Everything allowlisted: 10,102 entries are over the default cap. */
	rules.globs = all_txt;
	rules.n_globs = 2;
	t0 = now_ns();
	run(f, f->in, &rules, &r);
	assert_true(now_ns() - t0 < 3000000000ull);
	assert_rejected(f, &r, "more than 10000 entries");
	intake_result_free(&r);

	/* A thousand of them taken (file creation on a disk, not intake, is
	 * what costs here: ~0.1-0.4 ms a file on ext4, ~6 us on tmpfs). */
	rules.globs = some_txt;
	t0 = now_ns();
	run(f, f->in, &rules, &r);
	assert_true(now_ns() - t0 < 5000000000ull);
	assert_taken(f, &r, 1001, "junk/d00/f00.txt");
	assert_string_equal(r.taken[1000], "solution.py");
	assert_true(listed(r.ignored, r.n_ignored, "junk/d10/"));
	intake_result_free(&r);
}

static void test_intake_many_tiny_files_in_an_archive(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	char path[PATH_MAX + 64];
	struct archive *a;
	uint64_t t0;

	in_path(f, path, sizeof(path), "many.tar.gz");
	a = aw_open(path, FMT_TGZ);
	aw_file(a, "solution.py", solution);
	for (int i = 0; i < 100; i++)
		for (int j = 0; j < 100; j++) {
			char name[64];
			snprintf(name, sizeof(name), "junk/d%02d/f%02d.txt", i, j);
			aw_file(a, name, "1\n");
		}
	aw_close(a);
	/* 10,001 entries: refused at the default cap, before any data. */
	t0 = now_ns();
	run(f, path, &rules, &r);
	assert_true(now_ns() - t0 < 3000000000ull);
	assert_rejected(f, &r, "more than 10000 entries");
	intake_result_free(&r);

	rules.max_entries = 20000;
	t0 = now_ns();
	run(f, path, &rules, &r);
	assert_true(now_ns() - t0 < 3000000000ull);
	assert_taken(f, &r, 1, "solution.py");
	assert_int_equal(r.n_ignored, 1000); /* the list is capped */
	intake_result_free(&r);
}

/* ---- hostile archives ---- */

static void fill_dotdot(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_file(a, "../../adv_zipslip_rel", "escaped\n");
}

static void test_intake_rejects_dotdot(void **state)
{
	each_format(*state, fill_dotdot, "leaves the tree", all_fmts, ARRAY_LEN(all_fmts));
}

static void fill_absolute(struct archive *a, struct fx *f)
{
	char name[PATH_MAX + 32];

	/* Absolute, and pointing into the test tree where we look. */
	snprintf(name, sizeof(name), "%s/adv_zipslip_abs", f->root);
	aw_file(a, "solution.py", solution);
	aw_file(a, name, "escaped\n");
}

static void test_intake_rejects_absolute_path(void **state)
{
	each_format(*state, fill_absolute, "absolute path", all_fmts, ARRAY_LEN(all_fmts));
}

static void fill_etc(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_file(a, "/etc/adv_zipslip_etc", "escaped\n");
}

static void test_intake_rejects_etc_path(void **state)
{
	struct stat st;

	each_format(*state, fill_etc, "entry '/etc/adv_zipslip_etc': absolute path", all_fmts,
		    ARRAY_LEN(all_fmts));
	assert_int_not_equal(lstat("/etc/adv_zipslip_etc", &st), 0);
}

static void fill_mid_dotdot(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_file(a, "sub/../../adv_zipslip_mid", "escaped\n");
}

static void test_intake_rejects_dotdot_in_the_middle(void **state)
{
	each_format(*state, fill_mid_dotdot, "leaves the tree", all_fmts, ARRAY_LEN(all_fmts));
}

static void fill_symlink_then_file(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_entry(a, "lnk", AE_IFLNK | 0777, NULL, 0, f->root, NULL, 0);
	aw_file(a, "lnk/adv_zipslip_via_symlink", "escaped\n");
}

static void test_intake_rejects_symlink_then_file_through_it(void **state)
{
	each_format(*state, fill_symlink_then_file, "entry 'lnk': symbolic links", all_fmts,
		    ARRAY_LEN(all_fmts));
}

static void fill_hardlink(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_entry(a, "hardlink_passwd", AE_IFREG | 0644, NULL, 0, NULL, "/etc/passwd", 0);
}

static void test_intake_rejects_hardlink_to_passwd(void **state)
{
	each_format(*state, fill_hardlink, "entry 'hardlink_passwd': hard links", tar_fmts,
		    ARRAY_LEN(tar_fmts));
}

static void fill_setuid(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_entry(a, "setuid_sh", AE_IFREG | 04755, "#!/bin/sh\n", 10, NULL, NULL, 0);
}

static void test_intake_rejects_setuid_file(void **state)
{
	each_format(*state, fill_setuid, "entry 'setuid_sh': setuid", all_fmts,
		    ARRAY_LEN(all_fmts));
}

static void fill_chardev(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_entry(a, "dev_mem", AE_IFCHR | 0666, NULL, 0, NULL, NULL, makedev(1, 1));
}

static void test_intake_rejects_char_device(void **state)
{
	each_format(*state, fill_chardev, "entry 'dev_mem': device", tar_fmts, ARRAY_LEN(tar_fmts));
}

static void fill_fifo(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_entry(a, "fifo", AE_IFIFO | 0666, NULL, 0, NULL, NULL, 0);
}

static void test_intake_rejects_fifo(void **state)
{
	each_format(*state, fill_fifo, "entry 'fifo': FIFO", tar_fmts, ARRAY_LEN(tar_fmts));
}

static void fill_backslash(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_file(a, "..\\..\\adv_zipslip_backslash", "escaped\n");
}

static void test_intake_rejects_backslash_names(void **state)
{
	each_format(*state, fill_backslash, "backslash", all_fmts, ARRAY_LEN(all_fmts));
}

static void fill_newline(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_file(a, "adv_new\nline.py", "x\n");
}

static void fill_bad_utf8(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_file(a, "adv_bad\xff\xfe.py", "x\n");
}

static void test_intake_rejects_control_and_invalid_utf8_names(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	fill_fn *fills[] = {fill_newline, fill_bad_utf8};
	const char *why[] = {"entry 'adv_new?line.py': name contains a control character",
			     "entry 'adv_bad??.py': name is not valid UTF-8"};

	for (size_t k = 0; k < ARRAY_LEN(fills); k++)
		for (size_t i = 0; i < ARRAY_LEN(all_fmts); i++) {
			char path[PATH_MAX + 64], name[32];
			struct intake_result r = {0};
			snprintf(name, sizeof(name), "names%zu.%s", k, fmt_ext[all_fmts[i]]);
			in_path(f, path, sizeof(path), name);
			struct archive *a = aw_open(path, all_fmts[i]);
			fills[k](a, f);
			aw_close(a);
			run(f, path, &rules, &r);
			assert_rejected(f, &r, why[k]);
			intake_result_free(&r);
		}
}

static void test_intake_rejects_overlong_names(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	char path[PATH_MAX + 64], name[5000];
	const struct {
		size_t len;
		bool slashes;
		const char *why;
	} cases[] = {
	    {300, false, "a component is longer than 255 bytes"},
	    {4500, true, "name longer than 4095 bytes"},
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct intake_result r = {0};
		memset(name, 'n', cases[i].len);
		name[cases[i].len] = '\0';
		for (size_t k = 100; cases[i].slashes && k < cases[i].len; k += 100)
			name[k] = '/';
		snprintf(path, sizeof(path), "%s/long%zu.tar", f->in, i);
		struct archive *a = aw_open(path, FMT_TAR);
		aw_file(a, "solution.py", solution);
		aw_file(a, name, "x");
		aw_close(a);
		run(f, path, &rules, &r);
		assert_rejected(f, &r, cases[i].why);
		intake_result_free(&r);
	}
}

static void test_intake_directory_rejects_control_character_name(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};

	write_at(f->in, "solution.py", solution, 0644);
	write_at(f->in, "notes\x1b[2J.txt", "x", 0644);
	run(f, f->in, &rules, &r);
	assert_rejected(f, &r, "entry 'notes?[2J.txt': name contains a control character");
	intake_result_free(&r);
}

static void test_intake_rejects_file_that_is_also_a_directory(void **state)
{
	struct fx *f = *state;
	static const char *const globs[] = {"*", "*/*"};
	struct intake_rules rules = default_rules();
	const char *cases[][2] = {{"a", "a/b"}, {"a/b", "a"}, {"a", "a"}};

	rules.globs = globs;
	rules.n_globs = 2;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char path[PATH_MAX + 64], name[32];
		struct intake_result r = {0};
		snprintf(name, sizeof(name), "conflict%zu.tar", i);
		in_path(f, path, sizeof(path), name);
		struct archive *a = aw_open(path, FMT_TAR);
		aw_file(a, "solution.py", solution);
		aw_file(a, cases[i][0], "1");
		aw_file(a, cases[i][1], "2");
		aw_close(a);
		run(f, path, &rules, &r);
		assert_rejected(f, &r, i < 2 ? "is both a file and a directory" : "appears twice");
		intake_result_free(&r);
	}
}

static void fill_too_many(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	for (int i = 0; i < 20000; i++) {
		char name[32];
		snprintf(name, sizeof(name), "f%05d", i);
		aw_file(a, name, "");
	}
}

static void test_intake_rejects_20001_entries(void **state)
{
	uint64_t t0 = now_ns();

	each_format(*state, fill_too_many, "more than 10000 entries", all_fmts,
		    ARRAY_LEN(all_fmts));
	assert_true(now_ns() - t0 < 10000000000ull);
}

static void fill_bomb(struct archive *a, struct fx *f)
{
	aw_file(a, "solution.py", solution);
	aw_zeros(a, "adv_bomb.bin", UINT64_C(1) << 30);
}

static void test_intake_rejects_zip_bomb(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	const enum fmt fmts[] = {FMT_ZIP, FMT_TGZ};

	for (size_t i = 0; i < ARRAY_LEN(fmts); i++) {
		char path[PATH_MAX + 64], name[32];
		struct intake_result r = {0};
		struct stat st;
		snprintf(name, sizeof(name), "bomb.%s", fmt_ext[fmts[i]]);
		in_path(f, path, sizeof(path), name);
		struct archive *a = aw_open(path, fmts[i]);
		fill_bomb(a, f);
		aw_close(a);
		assert_int_equal(stat(path, &st), 0);
		assert_true(st.st_size < 8 * (int64_t)MIB);
		uint64_t t0 = now_ns();
		run(f, path, &rules, &r);
		/* Refused on the declared size, before inflating anything. */
		assert_true(now_ns() - t0 < 2000000000ull);
		assert_rejected(f, &r, "archive expands past");
		intake_result_free(&r);
	}
}

/* Make a zip's central directory claim `size` bytes for every entry. */
static void zip_lie_about_sizes(const char *path, uint32_t size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);
	struct stat st;
	unsigned char *buf;
	size_t patched = 0;

	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	for (size_t i = 0; i + 46 <= (size_t)st.st_size; i++) {
		if (memcmp(buf + i, "PK\1\2", 4) != 0)
			continue;
		/* Uncompressed size at offset 24, little-endian. */
		for (int b = 0; b < 4; b++)
			buf[i + 24 + b] = (unsigned char)(size >> (8 * b));
		patched++;
	}
	assert_true(patched > 0);
	assert_int_equal(pwrite(fd, buf, (size_t)st.st_size, 0), st.st_size);
	free(buf);
	close(fd);
}

static void test_intake_counts_bytes_actually_inflated(void **state)
{
	struct fx *f = *state;
	static const char *const globs[] = {"*.py"};
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	char path[PATH_MAX + 64];
	struct archive *a;

	/* Taken file first, so something is written before the refusal;
	 * then a taken "bomb.py" whose header says 10 bytes. */
	rules.globs = globs;
	rules.n_globs = 1;
	rules.max_bytes = 512 * MIB;
	in_path(f, path, sizeof(path), "liar.zip");
	a = aw_open(path, FMT_ZIP);
	aw_file(a, "solution.py", solution);
	aw_zeros(a, "adv_bomb.py", 256 * MIB);
	aw_close(a);
	zip_lie_about_sizes(path, 10);
	run(f, path, &rules, &r);
	print_message("  liar: %s\n", r.reason);
	assert_rejected(f, &r, "adv_bomb.py");
	intake_result_free(&r);
}

static void test_intake_rejects_file_over_max_bytes(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();

	for (size_t i = 0; i < ARRAY_LEN(all_fmts); i++) {
		char path[PATH_MAX + 64], name[32];
		struct intake_result r = {0};
		snprintf(name, sizeof(name), "big.%s", fmt_ext[all_fmts[i]]);
		in_path(f, path, sizeof(path), name);
		struct archive *a = aw_open(path, all_fmts[i]);
		aw_zeros(a, "solution.py", MIB + 1);
		aw_close(a);
		run(f, path, &rules, &r);
		assert_rejected(f, &r, "entry 'solution.py': taken files exceed max_bytes");
		intake_result_free(&r);
	}

	/* The same cap on a directory submission. */
	char big[PATH_MAX + 64];
	struct intake_result r = {0};
	snprintf(big, sizeof(big), "%s/solution.py", f->in);
	int fd = open(big, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(MIB + 1)), 0);
	close(fd);
	run(f, f->in, &rules, &r);
	assert_rejected(f, &r, "taken files exceed max_bytes");
	intake_result_free(&r);
}

static void test_intake_rejects_missing_required_file(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();

	for (size_t i = 0; i < ARRAY_LEN(all_fmts); i++) {
		char path[PATH_MAX + 64], name[32];
		struct intake_result r = {0};
		snprintf(name, sizeof(name), "missing.%s", fmt_ext[all_fmts[i]]);
		in_path(f, path, sizeof(path), name);
		struct archive *a = aw_open(path, all_fmts[i]);
		aw_file(a, "Solution.py", solution);
		aw_close(a);
		run(f, path, &rules, &r);
		assert_rejected(f, &r, "required file 'solution.py' is missing");
		intake_result_free(&r);
	}
}

static void test_intake_rejects_plain_file(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	char path[PATH_MAX + 64];

	write_at(f->in, "solution.py", solution, 0644);
	in_path(f, path, sizeof(path), "solution.py");
	run(f, path, &rules, &r);
	assert_rejected(f, &r, "not a directory, zip or tar archive");
	intake_result_free(&r);

	write_at(f->in, "empty.zip", "", 0644);
	in_path(f, path, sizeof(path), "empty.zip");
	run(f, path, &rules, &r);
	assert_rejected(f, &r, "not a directory, zip or tar archive");
	intake_result_free(&r);
}

static void test_intake_rejects_truncated_archive(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	char path[PATH_MAX + 64];
	struct stat st;

	for (size_t i = 0; i < ARRAY_LEN(all_fmts); i++) {
		struct intake_result r = {0};
		char name[32];
		snprintf(name, sizeof(name), "cut.%s", fmt_ext[all_fmts[i]]);
		in_path(f, path, sizeof(path), name);
		struct archive *a = aw_open(path, all_fmts[i]);
		aw_zeros(a, "solution.py", 200000);
		aw_file(a, "other.txt", "x");
		aw_close(a);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(truncate(path, st.st_size / 2), 0);
		run(f, path, &rules, &r);
		assert_rejected(f, &r, NULL);
		intake_result_free(&r);
	}
}

/* Every reason is one line of valid UTF-8, whatever the entry is called. */
static void test_intake_reason_shows_control_characters_as_question_marks(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	char path[PATH_MAX + 64], name[600];
	struct archive *a;

	in_path(f, path, sizeof(path), "esc.tar");
	a = aw_open(path, FMT_TAR);
	memset(name, 'x', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memcpy(name, "\x1b[31m\r\t", 7);
	aw_file(a, name, "x");
	aw_close(a);
	run(f, path, &rules, &r);
	assert_rejected(f, &r, "entry '?[31m??xxx");
	for (const char *c = r.reason; *c; c++)
		assert_true((unsigned char)*c >= 0x20 && *c != 0x7f);
	assert_true(strlen(r.reason) < 300);
	intake_result_free(&r);
}

/* Our own failures (no submission descriptor, an opener that is gone)
 * are -1 and leave dest as it was. */
static void test_intake_leaves_dest_alone_when_it_fails(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	struct err e = {0};
	int sv[2];

	assert_int_equal(intake_submission(-1, f->destfd, &rules, &r, &e), -1);
	assert_non_null(strstr(e.msg, "descriptor"));
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	close(sv[1]);
	assert_int_equal(intake_submission(sv[0], f->destfd, &rules, &r, &e), -1);
	close(sv[0]);
	assert_int_equal(count_entries(f->dest), 0);
	assert_int_equal(r.n_taken, 0);
}

/* ---- descriptors, not paths (opener.h) ---- */

#define OTHER_UID  1234	 /* owns the submission */
#define HELPER_UID 65534 /* reads it, as the helper's slot uid would */

static void chown_path(const char *dir, const char *rel, mode_t mode)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s%s%s", dir, *rel ? "/" : "", rel);
	assert_int_equal(lchown(p, OTHER_UID, OTHER_UID), 0);
	assert_int_equal(chmod(p, mode), 0);
}

/*
 * In a child as HELPER_UID, as the helper runs: first make sure that uid
 * cannot open `unreachable` by its path, then take the submission from
 * the descriptor src.  Returns the child's exit status: 0 accepted with
 * n_want files, 3 rejected, 4 our error, 5 another count, 6 the path was
 * reachable after all, 77 the uid could not be changed.
 */
static int intake_as_helper(struct fx *f, int src, const char *unreachable,
			    const struct intake_rules *rules, size_t n_want)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		struct intake_result r = {0};
		struct err e = {0};
		if (setresgid(HELPER_UID, HELPER_UID, HELPER_UID) < 0 ||
		    setresuid(HELPER_UID, HELPER_UID, HELPER_UID) < 0)
			_exit(77);
		int fd = open(unreachable, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 || errno != EACCES)
			_exit(6);
		if (intake_submission(src, f->destfd, rules, &r, &e) < 0) {
			fprintf(stderr, "intake_submission: %s\n", e.msg);
			_exit(4);
		}
		if (r.rejected) {
			fprintf(stderr, "rejected: %s\n", r.reason);
			_exit(3);
		}
		_exit(r.n_taken == n_want ? 0 : 5);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static void assert_file_is(struct fx *f, const char *rel, const char *want)
{
	char *got = NULL;
	struct err e;

	assert_int_equal(read_whole_at(f->destfd, rel, O_NOFOLLOW, 1 << 20, &got, NULL, &e), 0);
	assert_string_equal(got, want);
	free(got);
}

/*
 * A mkdtemp-style submission (0700, files 0600) owned by another uid,
 * below root's 0700 test directory: the helper's uid cannot reach any of
 * it by path, yet takes it whole through the opener that proctor (root
 * here) started on the directory it opened.
 */
static void test_intake_reads_a_0700_tree_of_another_uid_through_the_opener(void **state)
{
	struct fx *f = *state;
	static const char *const globs[] = {"solution.py", "pkg/*.py"};
	struct intake_rules rules = default_rules();
	char unreachable[PATH_MAX + 64];
	struct opener_stat st;
	struct err e;
	int src, sock, status;
	pid_t pid;

	harness_require_root("owning files as another uid");
	rules.globs = globs;
	rules.n_globs = ARRAY_LEN(globs);
	write_at(f->in, "solution.py", solution, 0600);
	write_at(f->in, "pkg/util.py", "X = 1\n", 0600);
	chown_path(f->in, "solution.py", 0600);
	chown_path(f->in, "pkg/util.py", 0600);
	chown_path(f->in, "pkg", 0700);
	chown_path(f->in, "", 0700);
	assert_int_equal(chmod(f->dest, 0777), 0);
	snprintf(unreachable, sizeof(unreachable), "%s/solution.py", f->in);

	assert_int_equal(opener_open_root(f->in, &st, &src, &e), 0);
	assert_true(S_ISDIR(st.mode) && src >= 0);
	assert_int_equal(opener_start(src, &pid, &sock, &e), 0);
	status = intake_as_helper(f, sock, unreachable, &rules, 2);
	close(sock);
	opener_stop(pid);
	close(src);
	if (status == 77)
		skip();
	assert_int_equal(status, 0);
	assert_file_is(f, "solution.py", solution);
	assert_file_is(f, "pkg/util.py", "X = 1\n");
	assert_contained(f);
}

/* An archive the helper's uid cannot open (0600, another uid's, in a 0700
 * directory) is taken from the descriptor proctor opened. */
static void test_intake_reads_an_unreachable_archive_from_its_descriptor(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	char path[PATH_MAX + 64];
	struct opener_stat st;
	struct archive *a;
	struct err e;
	int src, status;

	harness_require_root("owning files as another uid");
	in_path(f, path, sizeof(path), "sub.zip");
	a = aw_open(path, FMT_ZIP);
	aw_file(a, "sub/solution.py", solution);
	aw_close(a);
	chown_path(f->in, "sub.zip", 0600);
	chown_path(f->in, "", 0700);
	assert_int_equal(chmod(f->dest, 0777), 0);

	assert_int_equal(opener_open_root(path, &st, &src, &e), 0);
	assert_true(S_ISREG(st.mode) && src >= 0);
	status = intake_as_helper(f, src, path, &rules, 1);
	close(src);
	if (status == 77)
		skip();
	assert_int_equal(status, 0);
	assert_file_is(f, "solution.py", solution);
	assert_contained(f);
}

/*
 * Once proctor has opened the submission, swapping symlinks in changes
 * nothing: the submission's path made a link to a decoy tree (or a decoy
 * archive), a subdirectory inside made a link to a directory outside.
 * Intake reads only what was opened: the original files, the link inside
 * listed as a symlink and never followed.
 */
static void test_intake_reads_only_what_was_opened_when_symlinks_are_swapped_in(void **state)
{
	struct fx *f = *state;
	static const char *const globs[] = {"*.py", "pkg/*.py"};
	struct intake_rules rules = default_rules();
	struct intake_result r = {0};
	char orig[PATH_MAX + 64], decoy[PATH_MAX + 64], outside[PATH_MAX + 64];
	char p[PATH_MAX + 96], q[PATH_MAX + 96];
	struct opener_stat st;
	struct archive *a;
	struct err e;
	int src, sock, fd;
	pid_t pid;

	rules.globs = globs;
	rules.n_globs = ARRAY_LEN(globs);
	write_at(f->in, "solution.py", solution, 0644);
	write_at(f->in, "pkg/util.py", "X = 1\n", 0644);
	snprintf(decoy, sizeof(decoy), "%s/decoy", f->root);
	snprintf(outside, sizeof(outside), "%s/outside", f->root);
	snprintf(orig, sizeof(orig), "%s.orig", f->in);
	write_at(decoy, "solution.py", "decoy = True\n", 0644);
	write_at(decoy, "decoy.py", "x\n", 0644);
	write_at(outside, "outside.py", "x\n", 0644);

	assert_int_equal(opener_open_root(f->in, &st, &src, &e), 0);
	assert_int_equal(opener_start(src, &pid, &sock, &e), 0);
	/* The swaps, after the open. */
	assert_int_equal(rename(f->in, orig), 0);
	assert_int_equal(symlink(decoy, f->in), 0);
	snprintf(p, sizeof(p), "%s/pkg", orig);
	snprintf(q, sizeof(q), "%s/pkg.old", orig);
	assert_int_equal(rename(p, q), 0);
	assert_int_equal(symlink(outside, p), 0);
	/* By path, the submission is the decoy now. */
	snprintf(p, sizeof(p), "%s/decoy.py", f->in);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	close(fd);

	assert_int_equal(intake_submission(sock, f->destfd, &rules, &r, &e), 0);
	close(sock);
	opener_stop(pid);
	close(src);
	assert_taken(f, &r, 1, "solution.py");
	assert_file_is(f, "solution.py", solution);
	assert_true(listed(r.ignored, r.n_ignored, "pkg (symlink)"));
	assert_true(listed(r.ignored, r.n_ignored, "pkg.old/"));
	assert_int_equal(count_entries(f->dest), 1);
	intake_result_free(&r);
	reset_dest(f);

	/* An archive: the path made a link to another archive after the open. */
	snprintf(p, sizeof(p), "%s/sub.tar", f->root);
	a = aw_open(p, FMT_TAR);
	aw_file(a, "solution.py", solution);
	aw_close(a);
	snprintf(q, sizeof(q), "%s/decoy.tar", f->root);
	a = aw_open(q, FMT_TAR);
	aw_file(a, "solution.py", "decoy = True\n");
	aw_file(a, "decoy.py", "x\n");
	aw_close(a);
	assert_int_equal(opener_open_root(p, &st, &src, &e), 0);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(intake_submission(src, f->destfd, &rules, &r, &e), 0);
	close(src);
	assert_taken(f, &r, 1, "solution.py");
	assert_file_is(f, "solution.py", solution);
	intake_result_free(&r);
}

static int collect(const char *name, void *arg, struct err *e)
{
	struct {
		char names[8][32];
		size_t n;
	} *got = arg;

	if (got->n == ARRAY_LEN(got->names))
		return err_set(e, E2BIG, "too many names");
	snprintf(got->names[got->n++], sizeof(got->names[0]), "%s", name);
	return 0;
}

/*
 * The opener answers only below its root: no "..", no absolute path, no
 * symlink followed; descriptors only of regular files, read-only (a FIFO
 * or device is described, never opened; a directory is listed, never
 * handed out); at most as many names as asked for; a malformed request
 * gets an error and the opener goes on answering.
 */
static void test_opener_answers_only_below_its_root(void **state)
{
	struct fx *f = *state;
	char p[PATH_MAX + 64], buf[64];
	struct opener_stat st;
	struct err e;
	int src, sock, fd;
	bool have_dev;
	pid_t pid;

	write_at(f->in, "solution.py", solution, 0644);
	write_at(f->in, "dir/x.py", "x\n", 0644);
	snprintf(p, sizeof(p), "%s/fifo", f->in);
	assert_int_equal(mkfifo(p, 0644), 0);
	snprintf(p, sizeof(p), "%s/etc_link", f->in);
	assert_int_equal(symlink("/etc", p), 0);
	snprintf(p, sizeof(p), "%s/null", f->in);
	have_dev = mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0;
	assert_int_equal(opener_open_root(f->in, &st, &src, &e), 0);
	assert_int_equal(opener_start(src, &pid, &sock, &e), 0);

	assert_int_equal(opener_request(sock, "solution.py", &st, &fd, &e), 0);
	assert_true(S_ISREG(st.mode) && st.size == strlen(solution) && fd >= 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(read(fd, buf, sizeof(buf)), (ssize_t)strlen(solution));
	close(fd);
	assert_int_equal(opener_request(sock, "", &st, &fd, &e), 0);
	assert_true(S_ISDIR(st.mode) && fd == -1);
	assert_int_equal(opener_request(sock, "dir", &st, &fd, &e), 0);
	assert_true(S_ISDIR(st.mode) && fd == -1);
	struct {
		char names[8][32];
		size_t n;
	} got = {0};
	assert_int_equal(opener_request_list(sock, "dir", 100, collect, &got, &e), 0);
	assert_int_equal(got.n, 1);
	assert_string_equal(got.names[0], "x.py");
	got.n = 0;
	assert_int_equal(opener_request_list(sock, "", 3, collect, &got, &e), 0);
	assert_int_equal(got.n, 3);
	got.n = 0;
	assert_int_equal(opener_request_list(sock, "", 100, collect, &got, &e), 0);
	assert_int_equal(got.n, have_dev ? 5 : 4);
	assert_int_equal(opener_request_list(sock, "solution.py", 100, collect, &got, &e), -1);
	assert_int_equal(e.errnum, ENOTDIR);
	assert_int_equal(opener_request_list(sock, "etc_link", 100, collect, &got, &e), -1);
	assert_int_equal(e.errnum, ELOOP);
	assert_int_equal(opener_request_list(sock, "..", 100, collect, &got, &e), -1);
	assert_int_equal(e.errnum, EXDEV);
	assert_int_equal(opener_request(sock, "fifo", &st, &fd, &e), 0);
	assert_true(S_ISFIFO(st.mode) && fd == -1);
	if (have_dev) {
		assert_int_equal(opener_request(sock, "null", &st, &fd, &e), 0);
		assert_true(S_ISCHR(st.mode) && fd == -1);
	}
	assert_int_equal(opener_request(sock, "etc_link", &st, &fd, &e), 0);
	assert_true(S_ISLNK(st.mode) && fd == -1);
	assert_int_equal(opener_request(sock, "etc_link/passwd", &st, &fd, &e), -1);
	assert_int_equal(e.errnum, ELOOP);
	assert_int_equal(opener_request(sock, "../in/solution.py", &st, &fd, &e), -1);
	assert_int_equal(e.errnum, EXDEV);
	assert_int_equal(opener_request(sock, "/etc/passwd", &st, &fd, &e), -1);
	assert_int_equal(e.errnum, EXDEV);
	assert_int_equal(opener_request(sock, "missing", &st, &fd, &e), -1);
	assert_int_equal(e.errnum, ENOENT);

	/* Malformed: short, a NUL inside, an unknown operation, too long. */
	static char big[6000], nul[32], op[32];
	const uint32_t lookup_fd[2] = {1, 0}, unknown[2] = {0x80, 0};
	memset(big, 'a', sizeof(big));
	memcpy(big, lookup_fd, sizeof(lookup_fd));
	memcpy(nul, lookup_fd, sizeof(lookup_fd));
	memcpy(nul + sizeof(lookup_fd), "solution.py\0x", 14);
	memcpy(op, unknown, sizeof(unknown));
	memcpy(op + sizeof(unknown), "solution.py", 11);
	const struct {
		const char *bytes;
		size_t len;
	} bad[] = {{"\x01", 1},
		   {nul, sizeof(lookup_fd) + 14},
		   {op, sizeof(unknown) + 11},
		   {big, sizeof(big)}};
	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		int32_t errnum = 0;
		char answer[64];
		assert_int_equal(send(sock, bad[i].bytes, bad[i].len, 0), (ssize_t)bad[i].len);
		assert_true(recv(sock, answer, sizeof(answer), 0) >= (ssize_t)sizeof(errnum));
		memcpy(&errnum, answer, sizeof(errnum));
		assert_int_equal(errnum, EINVAL);
	}
	assert_int_equal(opener_request(sock, "solution.py", &st, NULL, &e), 0);
	assert_true(S_ISREG(st.mode));
	close(sock);
	opener_stop(pid);
	close(src);
}

/* ---- the corpus (CORPUS points at a copy of tests/corpus where generate.sh ran) ---- */

static const char *corpus_case(char *out, size_t cap, const char *rel)
{
	const char *c = getenv("CORPUS");
	struct stat st;

	if (!c || !*c)
		return NULL;
	snprintf(out, cap, "%s/python/submissions/%s", c, rel);
	return stat(out, &st) == 0 ? out : NULL;
}

/* Without the corpus: a skip, or a failure where it must be there (CI). */
static void corpus_missing(void)
{
	const char *must = getenv("PROCTOR_MUST_WORK");

	if (must && strcmp(must, "1") == 0)
		fail_msg("CORPUS unset or generate.sh not run (meson configure -Dcorpus_dir=DIR)");
	print_message("CORPUS unset or generate.sh not run: skipped\n");
	skip();
}

static void test_intake_corpus_zipslip(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	const char *names[] = {"py_zipslip/submission.tar", "py_zipslip/submission.zip"};
	char path[PATH_MAX];
	struct stat st;

	if (!corpus_case(path, sizeof(path), names[0]))
		corpus_missing();
	bool abs_before = lstat("/tmp/adv_zipslip_abs.txt", &st) == 0;
	for (size_t i = 0; i < ARRAY_LEN(names); i++) {
		struct intake_result r = {0};
		assert_non_null(corpus_case(path, sizeof(path), names[i]));
		run(f, path, &rules, &r);
		print_message("  %s: %s\n", names[i], r.rejected ? r.reason : "taken");
		if (r.rejected) {
			assert_rejected(f, &r, NULL);
		} else {
			assert_taken(f, &r, 1, "solution.py");
			assert_int_equal(count_entries(f->dest), 1);
		}
		assert_int_not_equal(lstat("/tmp/adv_zipslip_via_symlink.txt", &st), 0);
		if (!abs_before)
			assert_int_not_equal(lstat("/tmp/adv_zipslip_abs.txt", &st), 0);
		intake_result_free(&r);
		reset_dest(f);
	}
}

static void test_intake_corpus_directories(void **state)
{
	struct fx *f = *state;
	struct intake_rules rules = default_rules();
	char path[PATH_MAX];
	struct intake_result r = {0};

	if (!corpus_case(path, sizeof(path), "py_many_files"))
		corpus_missing();
	uint64_t t0 = now_ns();
	run(f, path, &rules, &r);
	assert_true(now_ns() - t0 < 3000000000ull);
	assert_taken(f, &r, 1, "solution.py");
	intake_result_free(&r);
	reset_dest(f);

	assert_non_null(corpus_case(path, sizeof(path), "py_symlink_passwd"));
	run(f, path, &rules, &r);
	assert_taken(f, &r, 1, "solution.py");
	/* generate.sh made them real symlinks. */
	assert_true(listed(r.ignored, r.n_ignored, "passwd_link (symlink)"));
	assert_true(listed(r.ignored, r.n_ignored, "parent_escape (symlink)"));
	intake_result_free(&r);
	reset_dest(f);

	assert_non_null(corpus_case(path, sizeof(path), "py_empty"));
	run(f, path, &rules, &r);
	assert_rejected(f, &r, "required file 'solution.py' is missing");
	intake_result_free(&r);
}

/* ---- the opener's credentials, the submission's name, the helper's life ---- */

/* The opener reads as the tree's owner: a root-only file inside a tree of
 * another uid's is not handed out, though the opener was forked from root. */
static void test_opener_reads_as_the_owner_of_the_tree(void **state)
{
	struct fx *f = *state;
	struct opener_stat st;
	struct err e;
	int src, sock, fd = -1;
	pid_t pid;

	harness_require_root("owning files as another uid");
	write_at(f->in, "solution.py", solution, 0600);
	write_at(f->in, "root-only.py", "SECRET = 1\n", 0600);
	chown_path(f->in, "solution.py", 0600);
	chown_path(f->in, "", 0700);
	assert_int_equal(opener_open_root(f->in, &st, &src, &e), 0);
	assert_int_equal(opener_start(src, &pid, &sock, &e), 0);
	assert_int_equal(opener_request(sock, "solution.py", &st, &fd, &e), 0);
	assert_true(fd >= 0);
	close(fd);
	fd = -1;
	assert_int_equal(opener_request(sock, "root-only.py", &st, &fd, &e), -1);
	assert_int_equal(e.errnum, EACCES);
	assert_int_equal(fd, -1);
	close(sock);
	opener_stop(pid);
	close(src);
}

/* S6: a hard link to a file of someone else's (here root's 0600 file,
 * linked into another uid's tree as fs.protected_hardlinks=0 allows) is
 * refused before it is opened, and the submission is rejected for it. */
static void test_intake_rejects_a_hard_link_to_a_root_only_file(void **state)
{
	struct fx *f = *state;
	struct intake_result r = {0};
	struct opener_stat st;
	char secret[PATH_MAX + 32], alias[PATH_MAX + 32];
	struct err e = {0};
	int dirfd, fd = -1;

	harness_require_root("owning files as another uid");
	snprintf(secret, sizeof(secret), "%s/shadow", f->root);
	snprintf(alias, sizeof(alias), "%s/solution.py", f->in);
	write_at(f->root, "shadow", "root:$6$secret:::\n", 0600);
	assert_int_equal(link(secret, alias), 0);
	chown_path(f->in, "", 0755);

	dirfd = open(f->in, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	assert_int_equal(opener_lookup(dirfd, "solution.py", &st, &fd, &e), -1);
	assert_int_equal(e.errnum, EPERM);
	assert_int_equal(fd, -1);
	close(dirfd);

	struct intake_rules rules = default_rules();
	assert_int_equal(take(f->destfd, f->in, &rules, &r, &e), 0);
	assert_rejected(f, &r, "hard link");
	intake_result_free(&r);
}

/* S6, single mode: an archive that is a hard link to a root-only file, in
 * a directory of another uid's, is not opened. */
static void test_open_root_refuses_a_hard_link_to_a_root_only_file(void **state)
{
	struct fx *f = *state;
	char secret[PATH_MAX + 32], alias[PATH_MAX + 32];
	struct opener_stat st;
	struct err e = {0};
	int fd = -1;

	harness_require_root("owning files as another uid");
	snprintf(secret, sizeof(secret), "%s/secret.zip", f->root);
	snprintf(alias, sizeof(alias), "%s/hw3.zip", f->in);
	write_at(f->root, "secret.zip", "PK not really\n", 0600);
	assert_int_equal(link(secret, alias), 0);
	chown_path(f->in, "", 0755);
	assert_int_equal(opener_open_root(alias, &st, &fd, &e), -1);
	assert_int_equal(e.errnum, EPERM);
	assert_int_equal(fd, -1);
	/* The owner's own file, linked twice, is theirs to hand in. */
	assert_int_equal(lchown(secret, OTHER_UID, OTHER_UID), 0);
	assert_int_equal(opener_open_root(alias, &st, &fd, &e), 0);
	assert_true(S_ISREG(st.mode) && fd >= 0);
	close(fd);
}

/* M1, single mode: the operator's path may go through symlinks, but a
 * symlink at the submission's own name (trailing slash or not) is
 * described, never followed. */
static void test_open_root_does_not_follow_a_symlink_at_the_name(void **state)
{
	struct fx *f = *state;
	char link[PATH_MAX + 32], through[PATH_MAX + 32];
	struct opener_stat st;
	struct err e;
	int fd;

	snprintf(link, sizeof(link), "%s/link", f->root);
	assert_int_equal(symlink(f->in, link), 0);
	assert_int_equal(opener_open_root(link, &st, &fd, &e), 0);
	assert_true(S_ISLNK(st.mode));
	assert_int_equal(fd, -1);
	snprintf(through, sizeof(through), "%s/", link);
	assert_int_equal(opener_open_root(through, &st, &fd, &e), 0);
	assert_true(S_ISLNK(st.mode));
	assert_int_equal(fd, -1);

	snprintf(link, sizeof(link), "%s/parent", f->root);
	assert_int_equal(symlink(f->root, link), 0);
	snprintf(through, sizeof(through), "%s/in/", link);
	assert_int_equal(opener_open_root(through, &st, &fd, &e), 0);
	assert_true(S_ISDIR(st.mode));
	assert_true(fd >= 0);
	close(fd);
}

/* M1, class mode: an entry opened by name below the scanned directory is
 * refused once it is a symlink (ELOOP) or another inode (ESTALE). */
static void test_open_entry_refuses_an_entry_swapped_since_the_scan(void **state)
{
	struct fx *f = *state;
	char old[PATH_MAX + 32];
	struct opener_stat st;
	struct opener_id seen;
	struct stat sb;
	struct err e;
	int dirfd, fd;

	dirfd = open(f->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	assert_int_equal(fstatat(dirfd, "in", &sb, AT_SYMLINK_NOFOLLOW), 0);
	seen = (struct opener_id){.dev = sb.st_dev, .ino = sb.st_ino};
	assert_int_equal(opener_open_entry(dirfd, "in", &seen, &st, &fd, &e), 0);
	assert_true(S_ISDIR(st.mode) && fd >= 0);
	close(fd);

	snprintf(old, sizeof(old), "%s/in.old", f->root);
	assert_int_equal(renameat(dirfd, "in", dirfd, "in.old"), 0);
	assert_int_equal(symlinkat(old, dirfd, "in"), 0);
	fd = -1;
	assert_int_equal(opener_open_entry(dirfd, "in", &seen, &st, &fd, &e), -1);
	assert_int_equal(e.errnum, ELOOP);
	assert_int_equal(fd, -1);

	assert_int_equal(unlinkat(dirfd, "in", 0), 0);
	assert_int_equal(mkdirat(dirfd, "in", 0755), 0);
	assert_int_equal(opener_open_entry(dirfd, "in", &seen, &st, &fd, &e), -1);
	assert_int_equal(e.errnum, ESTALE);
	assert_int_equal(opener_open_entry(dirfd, "../in", NULL, &st, &fd, &e), -1);
	assert_int_equal(e.errnum, EINVAL);

	assert_int_equal(unlinkat(dirfd, "in", AT_REMOVEDIR), 0);
	assert_int_equal(renameat(dirfd, "in.old", dirfd, "in"), 0);
	close(dirfd);
}

/* N1: a file under the submitter's write lease fails at once (EBUSY, the
 * input's doing) instead of holding the opener for the lease break time. */
static void test_opener_fails_fast_on_a_leased_file(void **state)
{
	struct fx *f = *state;
	struct opener_stat st;
	struct err e;
	int dirfd, lfd, fd = -1;

	write_at(f->in, "solution.py", solution, 0644);
	dirfd = open(f->in, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dirfd >= 0);
	lfd = openat(dirfd, "solution.py", O_RDWR | O_CLOEXEC);
	assert_true(lfd >= 0);
	signal(SIGIO, SIG_IGN); /* the lease break notice */
	if (fcntl(lfd, F_SETLEASE, F_WRLCK) < 0) {
		close(lfd);
		close(dirfd);
		harness_require(false, "a write lease", strerror(errno));
		return;
	}
	uint64_t t0 = now_ns();
	assert_int_equal(opener_lookup(dirfd, "solution.py", &st, &fd, &e), -1);
	assert_true(now_ns() - t0 < 2000000000ull);
	assert_int_equal(e.errnum, EBUSY);
	assert_int_equal(fd, -1);
	fcntl(lfd, F_SETLEASE, F_UNLCK);
	close(lfd);
	close(dirfd);
	signal(SIGIO, SIG_DFL);
}

/* S5: the deadline holds after the helper closed its stdout: one that
 * closes fd 1 and sleeps is killed and reaped on time. */
static void test_unpriv_wait_kills_a_helper_that_closed_stdout(void **state)
{
	struct unpriv_wait w;
	int out[2];
	pid_t pid;

	(void)state;
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(out[0]);
		(void)!write(out[1], "{}", 2);
		close(out[1]);
		for (;;)
			pause();
	}
	close(out[1]);
	uint64_t t0 = now_ns();
	unpriv_wait(pid, out[0], 300, 1 << 20, &w);
	uint64_t took = now_ns() - t0;
	close(out[0]);
	assert_true(w.killed);
	assert_true(w.reaped);
	assert_true(WIFSIGNALED(w.status) && WTERMSIG(w.status) == SIGKILL);
	assert_true(took >= 250000000ull && took < 5000000000ull);
	assert_int_equal(w.len, 2);
	free(w.buf);
	assert_true(kill(pid, 0) < 0 && errno == ESRCH);

	/* And one that answers and exits is not killed. */
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(out[0]);
		(void)!write(out[1], "{\"a\":1}", 7);
		_exit(0);
	}
	close(out[1]);
	unpriv_wait(pid, out[0], 10000, 1 << 20, &w);
	close(out[0]);
	assert_false(w.killed);
	assert_true(WIFEXITED(w.status) && WEXITSTATUS(w.status) == 0);
	assert_int_equal(w.len, 7);
	free(w.buf);
}

/* M2: the helper's own failure (here staging cannot be made: the
 * destination was removed) is Proctor's (-2: retried, never charged), not
 * a refused input (1, "rejected"). */
static void test_unpriv_run_reports_a_staging_failure_as_ours(void **state)
{
	struct fx *f = *state;
	const char *helper = getenv("PROCTOR_HELPER");
	char dead[PATH_MAX + 32];
	struct opener_stat st;
	json_t *ans = NULL;
	struct err e = {0};
	int src, sock, dest, rc;
	pid_t pid;

	harness_require_root("running the helper as another uid");
	harness_require(helper && *helper, "the helper", "PROCTOR_HELPER is not set");
	if (!helper || !*helper)
		return;
	write_at(f->in, "solution.py", solution, 0644);
	snprintf(dead, sizeof(dead), "%s/dead", f->root);
	assert_int_equal(mkdir(dead, 0777), 0);
	dest = open(dead, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dest >= 0);
	assert_int_equal(rmdir(dead), 0);
	assert_int_equal(opener_open_root(f->in, &st, &src, &e), 0);
	assert_int_equal(opener_start(src, &pid, &sock, &e), 0);

	char *argv[] = {(char *)"intake", NULL};
	struct unpriv_call call = {
	    .helper = helper,
	    .argv = argv,
	    .uid = HELPER_UID,
	    .stdin_fd = -1,
	    .input = "{\"globs\":[\"*.py\"],\"required\":[],\"max_bytes\":1000000,"
		     "\"max_entries\":100,\"max_expanded\":100000000}",
	    .fd3 = dest,
	    .fd4 = sock,
	    .timeout_s = 30};
	rc = unpriv_run(&call, &ans, &e);
	close(dest);
	close(sock);
	opener_stop(pid);
	close(src);
	if (rc == -1 && strstr(e.msg, "cgroup")) {
		harness_require(false, "the helper's cgroup", e.msg);
		return;
	}
	json_decref(ans);
	if (rc != -2)
		fail_msg("unpriv_run returned %d (%s), not -2 (the helper's own failure)", rc,
			 e.msg);
	assert_non_null(strstr(e.msg, "staging"));
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_intake_takes_solution_from_every_format),
	    T(test_intake_accepts_with_empty_lists),
	    T(test_intake_digest_follows_content_not_order),
	    T(test_intake_keeps_only_the_exec_bit),
	    T(test_intake_strips_one_top_level_directory),
	    T(test_intake_keeps_two_top_level_directories),
	    T(test_intake_keeps_top_directory_a_glob_names),
	    T(test_intake_takes_only_allowlisted_files),
	    T(test_intake_directory_takes_allowlisted_files),
	    T(test_intake_directory_strips_one_top_level_directory),
	    T(test_intake_directory_ignores_symlinks),
	    T(test_intake_directory_does_not_cross_mounts),
	    T(test_intake_unreadable_file_is_our_error),
	    T(test_intake_directory_rejects_fifo_and_leaves_dest_empty),
	    T(test_intake_directory_rejects_setuid_file),
	    T(test_intake_empty_directory_misses_required_file),
	    T(test_intake_many_tiny_files_in_bounded_time),
	    T(test_intake_many_tiny_files_in_an_archive),
	    T(test_intake_rejects_dotdot),
	    T(test_intake_rejects_absolute_path),
	    T(test_intake_rejects_etc_path),
	    T(test_intake_rejects_dotdot_in_the_middle),
	    T(test_intake_rejects_symlink_then_file_through_it),
	    T(test_intake_rejects_hardlink_to_passwd),
	    T(test_intake_rejects_setuid_file),
	    T(test_intake_rejects_char_device),
	    T(test_intake_rejects_fifo),
	    T(test_intake_rejects_backslash_names),
	    T(test_intake_rejects_control_and_invalid_utf8_names),
	    T(test_intake_rejects_overlong_names),
	    T(test_intake_directory_rejects_control_character_name),
	    T(test_intake_rejects_file_that_is_also_a_directory),
	    T(test_intake_rejects_20001_entries),
	    T(test_intake_rejects_zip_bomb),
	    T(test_intake_counts_bytes_actually_inflated),
	    T(test_intake_rejects_file_over_max_bytes),
	    T(test_intake_rejects_missing_required_file),
	    T(test_intake_rejects_plain_file),
	    T(test_intake_rejects_truncated_archive),
	    T(test_intake_reason_shows_control_characters_as_question_marks),
	    T(test_intake_leaves_dest_alone_when_it_fails),
	    T(test_intake_reads_a_0700_tree_of_another_uid_through_the_opener),
	    T(test_intake_reads_an_unreachable_archive_from_its_descriptor),
	    T(test_intake_reads_only_what_was_opened_when_symlinks_are_swapped_in),
	    T(test_opener_answers_only_below_its_root),
	    T(test_intake_corpus_zipslip),
	    T(test_intake_corpus_directories),
	    T(test_opener_reads_as_the_owner_of_the_tree),
	    T(test_intake_rejects_a_hard_link_to_a_root_only_file),
	    T(test_open_root_refuses_a_hard_link_to_a_root_only_file),
	    T(test_open_root_does_not_follow_a_symlink_at_the_name),
	    T(test_open_entry_refuses_an_entry_swapped_since_the_scan),
	    T(test_opener_fails_fast_on_a_leased_file),
	    T(test_unpriv_wait_kills_a_helper_that_closed_stdout),
	    T(test_unpriv_run_reports_a_staging_failure_as_ours),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
