/* libFuzzer target: intake_submission() on arbitrary bytes as an archive, into a fresh destination.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grade/intake.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The tree, made once per process (tmpfs when there is one: creating files
 * on a disk costs far more than intake does):
 *   ROOT/a/b/dest   the destination, made and removed for each input
 * Deep enough that "../../x" from dest still lands below ROOT, where the
 * check looks.  The input itself lives in a memfd, outside the tree.
 */
struct fuzz_env {
	char root[64];
	char dest[96];
	int memfd; /* the input, handed to intake as its descriptor */
};

static struct fuzz_env fe; /* set up once by env(), read-only afterwards */

/* Remove the (then empty) tree when libFuzzer exits. */
static void env_cleanup(void)
{
	char p[96];

	snprintf(p, sizeof(p), "%s/a/b", fe.root);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/a", fe.root);
	rmdir(p);
	rmdir(fe.root);
}

static struct fuzz_env *env(void)
{
	struct err e;
	char dir[96];

	if (fe.root[0])
		return &fe;
	snprintf(fe.root, sizeof(fe.root), "%s/fuzz_intake.XXXXXX",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (!mkdtemp(fe.root))
		abort();
	snprintf(fe.dest, sizeof(fe.dest), "%s/a/b/dest", fe.root);
	snprintf(dir, sizeof(dir), "%s/a/b", fe.root);
	if (mkdir_p_at(AT_FDCWD, dir, 0755, (uid_t)-1, (gid_t)-1, &e) < 0)
		abort();
	fe.memfd = memfd_create("fuzz_intake_input", MFD_CLOEXEC);
	if (fe.memfd < 0)
		abort();
	atexit(env_cleanup);
	return &fe;
}

/* Count regular files below dirfd; abort on anything that is not a
 * regular file or a directory (intake never makes links or devices). */
static size_t count_files(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	size_t n = 0;

	if (!d)
		abort();
	while ((de = readdir(d)) != NULL) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			abort();
		if (S_ISREG(st.st_mode)) {
			if (st.st_mode & (S_ISUID | S_ISGID))
				abort();
			n++;
		} else if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				abort();
			n += count_files(sub);
			close(sub);
		} else {
			abort();
		}
	}
	closedir(d);
	return n;
}

/* Only a/b/dest below the root, and only b/dest below a. */
static void check_nothing_escaped(const char *root)
{
	char p[160];
	const char *levels[][2] = {{"", "a"}, {"/a", "b"}, {"/a/b", "dest"}};

	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s%s", root, levels[i][0]);
		DIR *d = opendir(p);
		struct dirent *de;
		if (!d)
			abort();
		while ((de = readdir(d)) != NULL)
			if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
			    strcmp(de->d_name, levels[i][1]) != 0)
				abort();
		closedir(d);
	}
}

/* Relative, no ".." component, strictly sorted. */
static void check_list(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!v[i] || v[i][0] == '/' || v[i][0] == '\0')
			abort();
		for (const char *c = v[i]; *c;) {
			size_t len = strcspn(c, "/");
			if (len == 2 && c[0] == '.' && c[1] == '.')
				abort();
			c += len + (c[len] == '/');
		}
		if (i > 0 && strcmp(v[i - 1], v[i]) >= 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const globs[] = {"*", "*/*", "*/*/*"};
	static const char *const required[] = {"solution.py"};
	struct fuzz_env *fz = env();
	struct intake_rules rules = {
	    .globs = globs,
	    .n_globs = 3,
	    .required = required,
	    /* Whether solution.py is required: the last byte decides, so
	     * both the accepting and the refusing ends are reached. */
	    .n_required = size > 0 && (data[size - 1] & 1),
	    .max_bytes = 1 << 20,
	    .max_entries = 256,
	    .max_expanded = 8 << 20,
	};
	struct intake_result r = {0};
	struct err e;
	int destfd, rc;

	if (ftruncate(fz->memfd, 0) < 0 || pwrite(fz->memfd, data, size, 0) != (ssize_t)size)
		abort();
	if (mkdir(fz->dest, 0755) < 0)
		abort();
	destfd = open(fz->dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (destfd < 0)
		abort();

	rc = intake_submission(fz->memfd, destfd, &rules, &r, &e);
	/* -1 is Proctor's own failure; no input may cause one. */
	if (rc != 0) {
		fprintf(stderr, "intake_submission: %s\n", e.msg);
		abort();
	}
	if (strnlen(r.reason, sizeof(r.reason)) == sizeof(r.reason))
		abort();
	for (const char *c = r.reason; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			abort();
	if (r.rejected) {
		if (r.reason[0] == '\0' || r.n_taken != 0 || r.bytes_taken != 0)
			abort();
	} else if (strlen(r.digest) != 64 || r.bytes_taken > rules.max_bytes) {
		abort();
	}
	check_list(r.taken, r.n_taken);
	check_list(r.ignored, r.n_ignored);
	/* Exactly the taken files, as regular files, and nothing else. */
	if (count_files(destfd) != r.n_taken)
		abort();
	for (size_t i = 0; i < r.n_taken; i++) {
		struct stat st;
		if (fstatat(destfd, r.taken[i], &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			abort();
	}
	check_nothing_escaped(fz->root);

	if (rm_rf_children(destfd, &e) < 0)
		abort();
	close(destfd);
	if (rmdir(fz->dest) < 0)
		abort();
	intake_result_free(&r);
	return 0;
}
