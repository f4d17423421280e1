/* The bytecode of Proctor's Python runtime (theory in runtime_pyc.h). */
#include "grade/runtime_pyc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "grade/guards.h"
#include "grade/split.h"
#include "host/statedir.h"
#include "result.h"
#include "util.h"

/* A .pyc of ours is a few tens of KiB; anything much larger is not one. */
#define PYC_MAX (1u << 20)

/* In the throwaway sandbox: the sources (root's) and the output. */
#define PYC_SRC "/tmp/.proctor-pyc"
#define PYC_OUT "/tmp/pyc"

static const char compile_py[] =
    "import os, py_compile, sys\n"
    "src, out = sys.argv[1], sys.argv[2]\n"
    "os.makedirs(out)\n"
    "py_compile.compile(os.path.join(src, 'proctor_split.py'),\n"
    "                   cfile=os.path.join(out, 'proctor_split.pyc'), doraise=True,\n"
    "                   invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)\n"
    "with open(os.path.join(out, 'tag'), 'w') as f:\n"
    "    f.write(sys.implementation.cache_tag)\n";

/* What this process knows: key's bytecode (tag set), or that there is none
 * for key (tag empty: the image cannot, or making it failed here once).
 * The key depends on the image only (the source is this binary's), so a
 * grading of the same image finds it by the digest, without hashing. */
static struct runtime_pyc cached;
static char cached_image[80];

/* An entry of another runtime is left for this long to whichever Proctor
 * still uses it (two versions may share a state directory while one
 * replaces the other), then removed by the next new entry of its image. */
#define STALE_AFTER_S (24 * 3600)

static void pyc_key(const char *image_digest, char key[65])
{
	struct digest *d = digest_new();

	if (!d) {
		key[0] = '\0';
		return;
	}
	digest_update_str(d, "proctor-runtime-pyc 2\n");
	digest_update_str(d, image_digest);
	digest_update(d, "\0", 1);
	digest_update(d, proctor_split_source, proctor_split_source_len);
	digest_final(d, key);
}

/* A cache tag is a short name of letters, digits, '-', '_' and '.'. */
static bool tag_ok(const char *s, size_t len)
{
	if (len == 0 || len >= sizeof(cached.tag))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && !strchr("-_.", s[i]))
			return false;
	return true;
}

/* A checked-hash .pyc (PEP 552: flags 0b11 after the magic): Python checks
 * the hash of the source it sits beside before it uses it. */
static bool pyc_ok(const char *p, size_t len)
{
	return len > 16 && p[2] == '\r' && p[3] == '\n' && p[4] == 3 && !p[5] && !p[6] && !p[7];
}

/* The files of dirfd into r (tag, split), checked. */
static int load(int dirfd, struct runtime_pyc *r)
{
	char *tag = NULL;
	size_t tag_len = 0;
	struct err ignored;

	if (read_whole_at(dirfd, "tag", O_NOFOLLOW, sizeof(r->tag), &tag, &tag_len, &ignored) < 0 ||
	    !tag_ok(tag, tag_len) ||
	    read_whole_at(dirfd, "proctor_split.pyc", O_NOFOLLOW, PYC_MAX, &r->split, &r->split_len,
			  &ignored) < 0 ||
	    !pyc_ok(r->split, r->split_len)) {
		free(tag);
		free(r->split);
		r->split = NULL;
		return -1;
	}
	memcpy(r->tag, tag, tag_len + 1);
	free(tag);
	return 0;
}

/* Compile in a sandbox of the image: 1 done (files in work/out), 0 the
 * image cannot (its python3 exited with a failure), -1 anything else
 * (Proctor's failure, a limit, a signal: not the image's to answer for). */
static int compile_in_sandbox(const struct sandbox_ops *ops, const struct sandbox_options *so,
			      const char *work, double factor)
{
	char src[PATH_MAX], path[PATH_MAX + 32], host[PATH_MAX + 32];
	char *argv[] = {"python3", "-c", (char *)compile_py, PYC_SRC, PYC_OUT, NULL};
	static const char *const outs[] = {"tag", "proctor_split.pyc"};
	struct sandbox_options o = *so;
	struct run_spec spec = {.argv = argv, .stdin_fd = -1};
	struct run_result res;
	struct sandbox *sb = NULL;
	struct err e;
	int rc = -1;

	snprintf(src, sizeof(src), "%s/src", work);
	snprintf(path, sizeof(path), "%s/out", work);
	if ((mkdir(work, 0755) < 0 && errno != EEXIST) ||
	    (mkdir(src, 0755) < 0 && errno != EEXIST) || (mkdir(path, 0755) < 0 && errno != EEXIST))
		return -1;
	snprintf(path, sizeof(path), "%s/proctor_split.py", src);
	unlink(path);
	if (guard_host_file(path, proctor_split_source, proctor_split_source_len, 0, &e) < 0)
		return -1;
	o.tmpl = NULL;
	limits_default(&spec.limits);
	o.disk_bytes = spec.limits.disk_bytes;
	spec.limits.cpu_ms = (uint64_t)(20000 * factor);
	spec.limits.wall_ms = (uint64_t)(40000 * factor);
	if (run_result_init(&res, 4096) < 0)
		return -1;
	if (ops->create(&o, &sb, &e) < 0)
		goto out;
	if (sandbox_put(sb, src, PYC_SRC, SANDBOX_PUT_PROTECTED, &e) < 0 ||
	    sandbox_run(sb, &spec, &res, &e) < 0)
		goto out;
	if (res.status != RUN_OK) {
		if (res.status == RUN_NONZERO_EXIT)
			rc = 0;
		goto out;
	}
	for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		snprintf(path, sizeof(path), PYC_OUT "/%s", outs[i]);
		snprintf(host, sizeof(host), "%s/out/%s", work, outs[i]);
		unlink(host);
		if (sandbox_get(sb, path, host, &e) < 0)
			goto out;
	}
	rc = 1;
out:
	if (sb)
		sandbox_destroy(sb);
	run_result_free(&res);
	return rc;
}

/* The image an entry of the cache (a directory, or a KEY.none file) is
 * for: its file "image", or the .none file's text. */
static bool entry_is_for(int dirfd, const char *name, const char *image_digest)
{
	char path[300], *text = NULL;
	size_t len = strlen(name);
	struct err ignored;
	bool none = len > 5 && strcmp(name + len - 5, ".none") == 0;

	snprintf(path, sizeof(path), none ? "%s" : "%s/image", name);
	if (read_whole_at(dirfd, path, O_NOFOLLOW, 256, &text, NULL, &ignored) < 0)
		return false;
	bool same = strcmp(text, image_digest) == 0;
	free(text);
	return same;
}

/* Remove the cache's entries for image_digest, except `keep` and those
 * changed in the last min_age seconds. */
static void forget(const char *dir, const char *image_digest, const char *keep, time_t min_age)
{
	struct err ignored;
	char **names = NULL;
	size_t n = 0;
	struct stat st;
	time_t now = time(NULL);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (dfd < 0)
		return;
	if (dir_names(dfd, 4096, &names, &n, &ignored) == 0) {
		for (size_t i = 0; i < n; i++)
			if (names[i][0] != '.' && (!keep || strcmp(names[i], keep) != 0) &&
			    strlen(names[i]) < 200 &&
			    fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    now - st.st_mtime >= min_age &&
			    entry_is_for(dfd, names[i], image_digest))
				rm_tree_at(dfd, names[i], &ignored);
		free_names(names, n);
	}
	close(dfd);
}

void runtime_pyc_forget(const char *state_dir, const char *image_digest)
{
	char dir[PATH_MAX + 8];

	snprintf(dir, sizeof(dir), "%s/pyc", state_dir);
	forget(dir, image_digest, NULL, 0);
}

/* Move work/out into the cache as dir/key (another process may have put it
 * there first: then that one stays), and drop the same image's entries of
 * other runtimes that have not been made for a day (an earlier Proctor's). */
static void store(const char *dir, const char *key, const char *work, const char *image_digest)
{
	char from[PATH_MAX + 8], to[PATH_MAX + 80];
	struct err ignored;

	snprintf(from, sizeof(from), "%s/out/image", work);
	unlink(from);
	if (guard_host_file(from, image_digest, strlen(image_digest), 0, &ignored) < 0)
		return;
	snprintf(from, sizeof(from), "%s/out", work);
	snprintf(to, sizeof(to), "%s/%s", dir, key);
	if (rename(from, to) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		fprintf(stderr, "proctor: keeping the runtime's bytecode in %s: %s\n", to,
			strerror(errno));
	forget(dir, image_digest, key, STALE_AFTER_S);
}

/* Remember key in this process: with r's bytecode, or (r NULL) as none. */
static const struct runtime_pyc *remember(const char *image_digest, const char *key,
					  struct runtime_pyc *r)
{
	free(cached.split);
	memset(&cached, 0, sizeof(cached));
	if (r)
		cached = *r;
	snprintf(cached.key, sizeof(cached.key), "%s", key);
	snprintf(cached_image, sizeof(cached_image), "%s", image_digest);
	return r ? &cached : NULL;
}

const struct runtime_pyc *runtime_pyc_for(const struct sandbox_ops *ops,
					  const struct sandbox_options *so,
					  const char *image_digest, const char *staging,
					  double time_factor)
{
	char work[PATH_MAX + 8];
	char key[65], dir[PATH_MAX], path[PATH_MAX + 80];
	struct runtime_pyc r = {0};
	struct err ignored;

	snprintf(work, sizeof(work), "%s/pyc", staging);

	if (!image_digest || !image_digest[0] || getenv("PROCTOR_NO_RUNTIME_PYC"))
		return NULL;
	if (strcmp(cached_image, image_digest) == 0)
		return cached.tag[0] ? &cached : NULL;
	pyc_key(image_digest, key);
	if (!key[0])
		return NULL;
	if (state_subdir(so->state_dir, "pyc", 0755, dir, sizeof(dir), &ignored) < 0)
		return remember(image_digest, key, NULL);
	snprintf(path, sizeof(path), "%s/%s.none", dir, key);
	if (access(path, F_OK) == 0)
		return remember(image_digest, key, NULL);
	for (int round = 0; round < 2; round++) {
		snprintf(path, sizeof(path), "%s/%s", dir, key);
		int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			int lr = load(fd, &r);
			close(fd);
			if (lr == 0)
				return remember(image_digest, key, &r);
			/* Damaged: away with it, and made anew. */
			int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd >= 0) {
				rm_tree_at(dfd, key, &ignored);
				close(dfd);
			}
		}
		if (round > 0)
			break;
		/* Made once per process at most: a failure here is not tried
		 * again by every grading (each would make a sandbox). */
		int c = compile_in_sandbox(ops, so, work, time_factor);
		if (c < 0)
			break;
		if (c == 0) {
			snprintf(path, sizeof(path), "%s/%s.none", dir, key);
			unlink(path);
			guard_host_file(path, image_digest, strlen(image_digest), 0, &ignored);
			break;
		}
		store(dir, key, work, image_digest);
		/* Where the rename failed (another filesystem?), take what was made. */
		snprintf(path, sizeof(path), "%s/out", work);
		if (access(path, F_OK) == 0 &&
		    (fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
			int lr = load(fd, &r);
			close(fd);
			if (lr == 0)
				return remember(image_digest, key, &r);
		}
	}
	return remember(image_digest, key, NULL);
}
