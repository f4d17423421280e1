/* System images -- building with mmdebstrap, the version store, pins and tree digests. */

/*
 * Theory of operation
 * -------------------
 * recipe.c reads the recipe; build.c runs the build; this file owns the
 * store (versions, pins, removal) and the tree digest.  A build is four
 * kinds of processes in two trust zones:
 *
 *   proctor (host root)
 *     |  leases a build slot N (host-wide: flock on /run/proctor/builders/N.lock),
 *     |  clone(NEWUSER|NEWPID|NEWNS), writes the child's uid/gid maps:
 *     |  0..65535 inside = IMAGE_BUILD_UID_BASE + N * 65536.. outside
 *     v
 *   build init (PID 1 of the new pid namespace, root of the new user
 *     |  namespace, no privilege on the host; mounts a private /tmp with
 *     |  the build's work directory at /tmp/build; reaps orphans)
 *     |  fork + exec
 *     v
 *   mmdebstrap --mode=unshare, and below it apt, dpkg, the packages'
 *   maintainer scripts and the recipe's setup commands (chroot into the tree)
 *
 * mmdebstrap run by a uid 0 that is not host root works as documented for
 * "root mode inside an unshared user namespace": it unshares its own mount
 * and pid namespaces, bind-mounts /dev nodes and /sys and mounts a /proc.
 * What it runs can touch on the host only what the slot's host uids (or
 * anybody) may: the work directory, files readable by all, the network
 * (apt needs it); no other build shares those uids.  It writes a tarball.
 *
 * Back as host root: the tarball is extracted with GNU tar, owners and
 * modes preserved (the numeric ids they had inside the namespace), then
 * mksquashfs makes the VM image and the tree is digested.  The version
 * number is picked under images/<name>/.lock, image.json is written, and
 * the build directory is renamed into place.  Every failure removes the
 * build directory (its log is kept as images/<name>/failed-build.log); a
 * build killed outright leaves it behind, and the next build of the name
 * removes it (each builder holds a flock on its own build directory, so a
 * live one is never touched).
 *
 * The store is trusted host state, root-owned below the state directory.
 * The trees in it came out of a build, so they are walked relative to
 * directory fds and never through a symlink.
 */
#include "image/image.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "host/lease.h"
#include "host/statedir.h"
#include "host/tool.h"
#include "image/build.h"
#include "image/recipe.h"
#include "util.h"
#include "vm/kit.h"

#define EXTRACT_TIMEOUT_S 1800
#define SQUASH_TIMEOUT_S  1800
#define JSON_MAX	  (1u << 20) /* bytes of image.json */
#define TREE_DEPTH_MAX	  256
#define DIR_ENTRIES_MAX	  (1u << 20)
#define VERSION_MAX	  999999999u

/* ---- small helpers ---- */

static int oom(struct err *e, const char *what)
{
	return err_set(e, ENOMEM, "%s", what);
}

/* "NAME@VERSION" with a valid name and a version 1..VERSION_MAX without
 * leading zeros. */
static bool parse_pin(const char *pin, char name[65], unsigned *ret_version)
{
	const char *at = strchr(pin, '@');
	size_t n = at ? (size_t)(at - pin) : 0;
	uint64_t v;

	if (!at || n == 0 || n > 64)
		return false;
	memcpy(name, pin, n);
	name[n] = '\0';
	if (!recipe_valid_name(name) || at[1] == '0' || parse_u64(at + 1, strlen(at + 1), &v) < 0 ||
	    v < 1 || v > VERSION_MAX)
		return false;
	*ret_version = (unsigned)v;
	return true;
}

/* A directory entry that is a version: digits, no leading zero. */
static bool version_name(const char *s, unsigned *ret)
{
	uint64_t v;

	if (s[0] == '0' || parse_u64(s, strlen(s), &v) < 0 || v < 1 || v > VERSION_MAX)
		return false;
	*ret = (unsigned)v;
	return true;
}

static bool valid_digest(const char *s)
{
	return strncmp(s, "sha256:", 7) == 0 && strspn(s + 7, "0123456789abcdef") == 64 &&
	       s[71] == '\0';
}

/* The absolute images directory below state_dir, created (state dir 0711,
 * images 0755) when `create`. */
static int images_dir(const char *state_dir, bool create, char *buf, size_t cap, struct err *e)
{
	char real[PATH_MAX];

	if (create && state_subdir(state_dir, "images", 0755, real, sizeof(real), e) < 0)
		return -1;
	if (!realpath(state_dir, real)) {
		if (!create && errno == ENOENT) {
			snprintf(buf, cap, "%s/images", state_dir);
			return 0;
		}
		return err_set(e, errno, "state directory '%s'", state_dir);
	}
	if ((size_t)snprintf(buf, cap, "%s/images", strcmp(real, "/") ? real : "") >= cap)
		return err_set(e, ENAMETOOLONG, "state directory '%s'", state_dir);
	return 0;
}

/* Write a whole file below dirfd: to a temporary name, then renamed over `path`. */
static int write_at(int dirfd, const char *path, const char *data, size_t len, mode_t mode,
		    struct err *e)
{
	char tmp[300];
	int fd;

	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.tmp", path) >= sizeof(tmp))
		return err_set(e, ENAMETOOLONG, "'%s'", path);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
	if (fd < 0)
		return err_set(e, errno, "create '%s'", tmp);
	if (write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		int saved = errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		return err_set(e, saved, "write '%s'", tmp);
	}
	close(fd);
	if (renameat(dirfd, tmp, dirfd, path) < 0) {
		int saved = errno;
		unlinkat(dirfd, tmp, 0);
		return err_set(e, saved, "rename '%s'", tmp);
	}
	return 0;
}

/* The name's directory fd, and its lock taken (LOCK_EX, waiting). */
static int open_name_locked(const char *images, const char *name, bool create, int *ret_dir,
			    int *ret_lock, struct err *e)
{
	char path[PATH_MAX];
	int dir, lock;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", images, name) >= sizeof(path))
		return err_set(e, ENAMETOOLONG, "image directory of '%s'", name);
	if (create && mkdir(path, 0755) < 0 && errno != EEXIST)
		return err_set(e, errno, "mkdir '%s'", path);
	dir = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir < 0)
		return err_set(e, errno, "open '%s'", path);
	lock = openat(dir, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lock < 0) {
		xclose(dir);
		return err_set(e, errno, "open '%s/.lock'", path);
	}
	while (flock(lock, LOCK_EX) < 0) {
		if (errno != EINTR) {
			xclose(lock);
			xclose(dir);
			return err_set(e, errno, "lock '%s/.lock'", path);
		}
	}
	*ret_dir = dir;
	*ret_lock = lock;
	return 0;
}

/* The highest version of a name ever given out: the largest version
 * directory or the number in .last-version, whichever is higher. */
static int highest_version(int namefd, unsigned *ret, struct err *e)
{
	unsigned best = 0, v;
	char buf[32], **names;
	size_t n;
	struct err ignored;

	if (dir_names(namefd, DIR_ENTRIES_MAX, &names, &n, e) < 0)
		return err_wrap(e, "list versions");
	for (size_t i = 0; i < n; i++)
		if (version_name(names[i], &v) && v > best)
			best = v;
	free_names(names, n);
	if (read_file_at(namefd, ".last-version", buf, sizeof(buf), &ignored) == 0) {
		buf[strcspn(buf, "\n")] = '\0';
		if (version_name(buf, &v) && v > best)
			best = v;
	}
	*ret = best;
	return 0;
}

/* Under the name's lock: remove what dead builders and removers left.  A
 * live build holds a flock on its own directory; a remover holds the name
 * lock for its whole run, so every .rm-* seen here is stale. */
static void sweep_stale(int namefd)
{
	char **names = NULL;
	size_t n = 0;
	struct err ignored;

	dir_names(namefd, DIR_ENTRIES_MAX, &names, &n, &ignored);
	for (size_t i = 0; i < n; i++) {
		bool build = strncmp(names[i], ".build-", 7) == 0;
		if (!build && strncmp(names[i], ".rm-", 4) != 0)
			continue;
		if (build) {
			int b = openat(namefd, names[i],
				       O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (b < 0)
				continue;
			bool dead = flock(b, LOCK_EX | LOCK_NB) == 0;
			close(b);
			if (!dead)
				continue;
		}
		rm_tree_at(namefd, names[i], &ignored);
	}
	free_names(names, n);
}

/* ---- image.json ---- */

static int read_info(const char *images, const char *name, unsigned version, struct image_info *ret,
		     struct err *e)
{
	char dir[PATH_MAX], *text = NULL;
	struct stat st;
	json_error_t je;
	json_t *j;
	int dfd, rc = -1;

	if ((size_t)snprintf(dir, sizeof(dir), "%s/%s/%u", images, name, version) >= sizeof(dir))
		return err_set(e, ENAMETOOLONG, "image %s@%u", name, version);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0 && (errno == ENOENT || errno == ENOTDIR))
		return err_setk(e, ERR_NOT_FOUND, 0, "no image %s@%u in %s", name, version, images);
	if (dfd < 0)
		return err_set(e, errno, "image %s@%u: open '%s'", name, version, dir);
	if (read_whole_at(dfd, "image.json", O_NOFOLLOW, JSON_MAX, &text, NULL, e) < 0) {
		close(dfd);
		return err_wrap(e, "image %s@%u is damaged", name, version);
	}
	j = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	free(text);
	const char *jname = json_string_value(json_object_get(j, "name"));
	const char *jdigest = json_string_value(json_object_get(j, "digest"));
	json_int_t jversion = json_integer_value(json_object_get(j, "version"));
	if (!json_is_object(j) || !jname || strcmp(jname, name) != 0 || jversion != version ||
	    !jdigest || !valid_digest(jdigest))
		err_set(e, 0, "image %s@%u is damaged: image.json does not describe it", name,
			version);
	else if (fstatat(dfd, "rootfs", &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		err_set(e, 0, "image %s@%u is damaged: no rootfs directory", name, version);
	else
		rc = 0;
	if (rc == 0) {
		memset(ret, 0, sizeof(*ret));
		snprintf(ret->name, sizeof(ret->name), "%s", name);
		ret->version = version;
		snprintf(ret->digest, sizeof(ret->digest), "%s", jdigest);
		snprintf(ret->rootfs, sizeof(ret->rootfs), "%s/rootfs", dir);
		snprintf(ret->squashfs, sizeof(ret->squashfs), "%s/rootfs.squashfs", dir);
	}
	json_decref(j);
	close(dfd);
	return rc;
}

static const char *utc_now(char buf[32])
{
	time_t t = time(NULL);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
	return buf;
}

static int write_info(int dirfd, const struct recipe *r, unsigned version, const char *digest,
		      unsigned long long squashfs_bytes, double build_s, struct err *e)
{
	json_t *pkgs = json_array(), *j;
	char when[32], *text;
	int rc;

	for (size_t i = 0; pkgs && i < r->n_packages; i++)
		json_array_append_new(pkgs, json_string(r->packages[i]));
	j = json_pack("{s:i, s:s, s:I, s:s, s:s, s:s, s:o, s:s, s:s, s:s, s:I, s:I}",
		      "schema_version", 1, "name", r->name, "version", (json_int_t)version,
		      "digest", digest, "suite", r->suite, "variant",
		      recipe_variant_name(r->variant), "packages", pkgs, "recipe", r->file,
		      "recipe_digest", r->digest, "created", utc_now(when), "squashfs_bytes",
		      (json_int_t)squashfs_bytes, "build_seconds", (json_int_t)(build_s + 0.5));
	if (!j)
		return oom(e, "image.json");
	text = json_dumps(j, JSON_INDENT(2));
	json_decref(j);
	if (!text)
		return oom(e, "image.json");
	size_t len = strlen(text);
	char *nl = realloc(text, len + 2);
	if (!nl) {
		free(text);
		return oom(e, "image.json");
	}
	text = nl;
	text[len++] = '\n';
	text[len] = '\0';
	rc = write_at(dirfd, "image.json", text, len, 0644, e);
	free(text);
	return rc;
}

/* ---- the tree digest ---- */

struct walk {
	struct digest *d;
	char path[PATH_MAX]; /* "" for the root, then "/etc", "/etc/passwd" */
	size_t len;
	char *buf;
	struct err *e;
};

static int walk_entry(struct walk *w, int dirfd, const char *name, unsigned depth);

/* The entries of the directory fd, in byte order of their names. */
static int walk_dir(struct walk *w, int fd, unsigned depth)
{
	char **names;
	size_t n;
	int rc = 0;

	if (dir_names(fd, DIR_ENTRIES_MAX, &names, &n, w->e) < 0)
		return err_wrap(w->e, "directory '%s/'", w->path);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		size_t len = w->len, nl = strlen(names[i]);
		if (len + 1 + nl >= sizeof(w->path)) {
			rc = err_set(w->e, ENAMETOOLONG, "'%s/%s'", w->path, names[i]);
			break;
		}
		w->path[len] = '/';
		memcpy(w->path + len + 1, names[i], nl + 1);
		w->len = len + 1 + nl;
		rc = walk_entry(w, fd, names[i], depth);
		w->len = len;
		w->path[len] = '\0';
	}
	free_names(names, n);
	return rc;
}

/* One entry: its path, then "TYPE MODE UID GID SIZE[ MAJOR:MINOR]", then the
 * contents (regular files), the target (symlinks) or the entries (dirs). */
static int walk_entry(struct walk *w, int dirfd, const char *name, unsigned depth)
{
	const char *shown = w->len ? w->path : "/";
	char meta[128], target[PATH_MAX + 1];
	unsigned long long size = 0;
	struct stat st;
	char type;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return err_set(w->e, errno, "'%s'", shown);
	switch (st.st_mode & S_IFMT) {
	case S_IFREG:
		type = 'f';
		size = (unsigned long long)st.st_size;
		break;
	case S_IFDIR:
		type = 'd';
		break;
	case S_IFLNK:
		type = 'l';
		break;
	case S_IFCHR:
		type = 'c';
		break;
	case S_IFBLK:
		type = 'b';
		break;
	case S_IFIFO:
		type = 'p';
		break;
	default:
		type = 's';
		break;
	}
	if (type == 'l') {
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target));
		if (n < 0 || n >= (ssize_t)sizeof(target))
			return err_set(w->e, n < 0 ? errno : ENAMETOOLONG, "readlink '%s'", shown);
		target[n] = '\0';
		size = (unsigned long long)n;
	}
	int m =
	    snprintf(meta, sizeof(meta), "%c %04o %u %u %llu", type, (unsigned)(st.st_mode & 07777),
		     (unsigned)st.st_uid, (unsigned)st.st_gid, size);
	if (type == 'c' || type == 'b')
		snprintf(meta + m, sizeof(meta) - (size_t)m, " %u:%u", major(st.st_rdev),
			 minor(st.st_rdev));
	digest_update_str(w->d, shown);
	digest_update_str(w->d, meta);
	if (type == 'l') {
		digest_update_str(w->d, target);
	} else if (type == 'f') {
		unsigned long long got = 0;
		int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			return err_set(w->e, errno, "open '%s'", shown);
		for (;;) {
			ssize_t n = read(fd, w->buf, 1 << 20);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				xclose(fd);
				return err_set(w->e, errno, "read '%s'", shown);
			}
			if (n == 0)
				break;
			got += (unsigned long long)n;
			if (got > size)
				break;
			digest_update(w->d, w->buf, (size_t)n);
		}
		close(fd);
		if (got != size)
			return err_set(w->e, 0, "'%s' changed while it was digested", shown);
	} else if (type == 'd') {
		if (depth >= TREE_DEPTH_MAX)
			return err_set(w->e, ELOOP, "'%s': deeper than %d directories", shown,
				       TREE_DEPTH_MAX);
		int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return err_set(w->e, errno, "open '%s'", shown);
		int rc = walk_dir(w, fd, depth + 1);
		close(fd);
		return rc;
	}
	return 0;
}

int image_tree_digest(const char *root, char ret[72], struct err *e)
{
	struct walk w = {.e = e};
	char hex[65];
	int rc = -1, fd;

	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, errno, "open '%s'", root);
	w.d = digest_new();
	w.buf = malloc(1 << 20);
	if (!w.d || !w.buf) {
		err_set(e, ENOMEM, "digest '%s'", root);
		goto out;
	}
	digest_update_str(w.d, "proctor-tree-1");
	/* The root itself, as "/", with the parent-relative name ".". */
	if (walk_entry(&w, fd, ".", 0) < 0) {
		err_wrap(e, "digest '%s'", root);
		goto out;
	}
	digest_final(w.d, hex);
	w.d = NULL;
	snprintf(ret, 72, "sha256:%s", hex);
	rc = 0;
out:
	digest_free(w.d);
	free(w.buf);
	close(fd);
	return rc;
}

/* ---- build ---- */

/* Under the name's lock: the next version, image.json, the rename into
 * place, .last-version. */
static int publish(const char *images, const struct recipe *r, int namefd, int lockfd, int buildfd,
		   const char *build_name, const char *digest, double build_s,
		   struct image_info *ret, struct err *e)
{
	char vname[16], path[PATH_MAX];
	unsigned best = 0;
	struct stat st;
	int rc = -1;

	while (flock(lockfd, LOCK_EX) < 0)
		if (errno != EINTR)
			return err_set(e, errno, "lock images/%s", r->name);
	if (highest_version(namefd, &best, e) < 0)
		goto out_unlock;
	if (best >= VERSION_MAX) {
		err_set(e, 0, "%s has used every version number", r->name);
		goto out_unlock;
	}
	snprintf(vname, sizeof(vname), "%u", best + 1);
	if (fstatat(buildfd, "rootfs.squashfs", &st, AT_SYMLINK_NOFOLLOW) < 0) {
		err_set(e, errno, "rootfs.squashfs");
		goto out_unlock;
	}
	if (write_info(buildfd, r, best + 1, digest, (unsigned long long)st.st_size, build_s, e) <
	    0)
		goto out_unlock;
	/* The version appears complete, also after a power loss. */
	if (fchmod(buildfd, 0755) < 0 || syncfs(buildfd) < 0) {
		err_set(e, errno, "sync the image");
		goto out_unlock;
	}
	if (renameat(namefd, build_name, namefd, vname) < 0) {
		err_set(e, errno, "rename '%s' to '%s'", build_name, vname);
		goto out_unlock;
	}
	/* Best effort: the version directory itself also counts. */
	struct err ignored;
	write_at(namefd, ".last-version", vname, strlen(vname), 0644, &ignored);
	memset(ret, 0, sizeof(*ret));
	snprintf(ret->name, sizeof(ret->name), "%s", r->name);
	ret->version = best + 1;
	snprintf(ret->digest, sizeof(ret->digest), "%s", digest);
	snprintf(path, sizeof(path), "%s/%s/%s", images, r->name, vname);
	snprintf(ret->rootfs, sizeof(ret->rootfs), "%s/rootfs", path);
	snprintf(ret->squashfs, sizeof(ret->squashfs), "%s/rootfs.squashfs", path);
	rc = 0;
out_unlock:
	flock(lockfd, LOCK_UN);
	return rc;
}

/* The extracted tree has a dpkg database with at least one package. */
static bool installed_anything(int buildfd)
{
	struct stat st;
	int fd = open_beneath(buildfd, "rootfs/var/lib/dpkg/status", O_RDONLY, 0);
	bool ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;

	xclose(fd);
	return ok;
}

/* Lease a build slot: its uid range is the build's alone while *ret_fd
 * (the flock) stays open; the kernel drops the lock if proctor dies, and the
 * build's processes die with it. */
static int lease_builder(int *ret_fd, uid_t *ret_base, struct err *e)
{
	unsigned n;

	/* Host-wide: the uid ranges are the host's, whatever the state dir. */
	if (host_lease("builders", IMAGE_BUILD_SLOTS, 0, &n, ret_fd, e) < 0) {
		if (e->errnum == EBUSY)
			return err_setk(e, ERR_BUSY, 0,
					"all %u build slots are busy (builds running at once)",
					IMAGE_BUILD_SLOTS);
		return err_wrap(e, "lease a build slot");
	}
	*ret_base = (uid_t)(IMAGE_BUILD_UID_BASE + n * IMAGE_BUILD_IDS);
	return 0;
}

/* The build itself, in the build directory (locked, empty but for
 * build.log); the caller publishes or removes it. */
static int build_in(const struct recipe *r, const char *build_path, int buildfd, int log_fd,
		    uid_t base, char digest[72], struct err *e)
{
	char tar_path[PATH_MAX], rootfs[PATH_MAX], sqfs[PATH_MAX], vm[PATH_MAX];
	int workfd = -1, rc = -1;

	snprintf(tar_path, sizeof(tar_path), "%s/work/rootfs.tar", build_path);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", build_path);
	snprintf(sqfs, sizeof(sqfs), "%s/rootfs.squashfs", build_path);
	snprintf(vm, sizeof(vm), "%s/vm", build_path);
	/* work/ belongs to the build's root: mmdebstrap's temporary tree,
	 * its tarball, the apt sources and the staged files (in files/, 0700).
	 * Searchable by all, since apt downloads as the image's _apt user. */
	if (mkdirat(buildfd, "work", 0755) < 0 ||
	    fchownat(buildfd, "work", base, (gid_t)base, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (workfd = openat(buildfd, "work", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		err_set(e, errno, "make the work directory");
		goto out;
	}
	if (build_mmdebstrap(r, workfd, log_fd, base, e) < 0)
		goto out;
	/* Back as host root: the tree with its owners, then the VM image. */
	char *tar_argv[] = {(char *)IMAGE_TAR,
			    (char *)"--numeric-owner",
			    (char *)"--xattrs",
			    (char *)"--xattrs-include=*",
			    (char *)"-xpf",
			    tar_path,
			    (char *)"-C",
			    rootfs,
			    NULL};
	char *sq_argv[] = {(char *)IMAGE_MKSQUASHFS,
			   rootfs,
			   sqfs,
			   (char *)"-comp",
			   (char *)"lz4",
			   (char *)"-noappend",
			   (char *)"-reproducible",
			   (char *)"-mkfs-time",
			   (char *)"0",
			   (char *)"-all-time",
			   (char *)"0",
			   (char *)"-quiet",
			   (char *)"-no-progress",
			   NULL};
	if (mkdirat(buildfd, "rootfs", 0755) < 0) {
		err_set(e, errno, "mkdir rootfs");
		goto out;
	}
	tool_log_cmd(log_fd, "running", tar_argv);
	if (tool_run(tar_argv, log_fd, EXTRACT_TIMEOUT_S, e) < 0) {
		err_wrap(e, "extract the tree");
		goto out;
	}
	close(take_fd(&workfd));
	if (rm_tree_at(buildfd, "work", e) < 0)
		goto out;
	/* mmdebstrap succeeds with an empty tree when the suite has no
	 * packages in the sources it was given. */
	if (!installed_anything(buildfd)) {
		err_setk(e, ERR_BUILD_FAILED, 0,
			 "mmdebstrap installed no packages (is suite '%s' in the host's apt "
			 "sources?)",
			 r->suite);
		goto out;
	}
	tool_log_cmd(log_fd, "running", sq_argv);
	if (tool_run(sq_argv, log_fd, SQUASH_TIMEOUT_S, e) < 0) {
		err_wrap(e, "make rootfs.squashfs");
		goto out;
	}
	/* The microVM's kernel, from the host's apt sources like the tree:
	 * a package apt cannot find or fetch is the build's failure. */
	if (vm_kernel_fetch(vm, log_fd, e) < 0) {
		err_wrap(e, "fetch the guest kernel");
		goto out;
	}
	if (image_tree_digest(rootfs, digest, e) < 0)
		goto out;
	dprintf(log_fd, "proctor: digest %s\n", digest);
	rc = 0;
out:
	xclose(workfd);
	return rc;
}

int image_build(const char *state_dir, const char *recipe_path, struct image_info *ret,
		struct err *e)
{
	static const char *const tools[] = {IMAGE_MMDEBSTRAP, IMAGE_TAR, IMAGE_MKSQUASHFS, NULL};
	char images[PATH_MAX], build_path[PATH_MAX], digest[72], failed_log[PATH_MAX + 32];
	const char *build_name = NULL;
	struct recipe *r = NULL;
	int namefd = -1, lockfd = -1, buildfd = -1, log_fd = -1, slotfd = -1, rc = -1;
	uint64_t t0 = now_ns();
	uid_t base = 0;

	if (recipe_load(recipe_path, &r, e) < 0)
		return -1;
	if (geteuid() != 0) {
		err_setk(e, ERR_UNAVAILABLE, 0,
			 "image build: needs root (the tree is extracted with its owners)");
		goto out;
	}
	for (size_t i = 0; tools[i]; i++) {
		if (access(tools[i], X_OK) < 0) {
			err_setk(e, ERR_UNAVAILABLE, errno, "image build: %s", tools[i]);
			goto out;
		}
	}
	if (images_dir(state_dir, true, images, sizeof(images), e) < 0 ||
	    open_name_locked(images, r->name, true, &namefd, &lockfd, e) < 0) {
		err_wrap(e, "image build");
		goto out;
	}
	sweep_stale(namefd);
	if ((size_t)snprintf(build_path, sizeof(build_path), "%s/%s/.build-XXXXXX", images,
			     r->name) >= sizeof(build_path)) {
		err_set(e, ENAMETOOLONG, "image build: '%s'", images);
		goto out; /* closing lockfd unlocks it */
	}
	if (!mkdtemp(build_path)) {
		err_set(e, errno, "image build: make a build directory");
		goto out;
	}
	build_name = strrchr(build_path, '/') + 1;
	/* Locked before the name lock is let go, so no sweeper takes it. */
	buildfd = open(build_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (buildfd < 0 || flock(buildfd, LOCK_EX) < 0 || fchmod(buildfd, 0711) < 0) {
		err_set(e, errno, "image build: '%s'", build_path);
		goto out;
	}
	flock(lockfd, LOCK_UN);
	log_fd = openat(buildfd, "build.log", O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
			0644);
	if (log_fd < 0) {
		err_set(e, errno, "image build: create build.log");
		goto out;
	}
	if (lease_builder(&slotfd, &base, e) < 0) {
		err_wrap(e, "image build");
		goto out;
	}
	rc = build_in(r, build_path, buildfd, log_fd, base, digest, e);
	if (rc == 0)
		rc = publish(images, r, namefd, lockfd, buildfd, build_name, digest,
			     (double)(now_ns() - t0) / 1e9, ret, e);
	if (rc < 0)
		err_wrap(e, "image build");
out:
	if (rc < 0 && buildfd >= 0) {
		struct err ignored;
		/* Keep the log of the failure beside the versions; the rest goes. */
		if (renameat(buildfd, "build.log", namefd, "failed-build.log") == 0) {
			snprintf(failed_log, sizeof(failed_log), "%s/%s/failed-build.log", images,
				 r->name);
			size_t len = strlen(e->msg);
			snprintf(e->msg + len, sizeof(e->msg) - len, " (log: %s)", failed_log);
		}
		rm_tree_at(namefd, build_name, &ignored);
	}
	xclose(log_fd);
	xclose(slotfd);
	xclose(buildfd);
	xclose(lockfd);
	xclose(namefd);
	recipe_free(r);
	return rc;
}

/* ---- the store ---- */

static int cmp_info(const void *a, const void *b)
{
	const struct image_info *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->version > y->version) - (x->version < y->version);
}

int image_list(const char *state_dir, struct image_info **ret, size_t *ret_n, struct err *e)
{
	struct image_info *v = NULL;
	size_t n = 0, cap = 0;
	char images[PATH_MAX], path[PATH_MAX];
	struct dirent *de, *ve;
	DIR *d, *vd;
	unsigned version;
	int rc = 0;

	if (images_dir(state_dir, false, images, sizeof(images), e) < 0)
		return -1;
	if (!(d = opendir(images))) {
		if (errno != ENOENT)
			return err_set(e, errno, "list '%s'", images);
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	while (rc == 0 && (de = readdir(d))) {
		if (!recipe_valid_name(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", images, de->d_name);
		if (!(vd = opendir(path)))
			continue; /* not a directory */
		while (rc == 0 && (ve = readdir(vd))) {
			if (!version_name(ve->d_name, &version))
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 16;
				struct image_info *nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					rc = err_set(e, ENOMEM, "list images");
					break;
				}
				v = nv;
			}
			int r = read_info(images, de->d_name, version, &v[n], e);
			if (r == 0)
				n++;
			else if (e->kind != ERR_NOT_FOUND) /* that one: removed meanwhile */
				rc = r;
		}
		closedir(vd);
	}
	closedir(d);
	if (rc < 0) {
		free(v);
		return rc;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_info);
	*ret = v;
	*ret_n = n;
	return 0;
}

int image_resolve(const char *state_dir, const char *pin, struct image_info *ret, struct err *e)
{
	char images[PATH_MAX], name[65], b[80];
	unsigned version;

	if (strcmp(pin, "host") == 0) {
		memset(ret, 0, sizeof(*ret));
		snprintf(ret->name, sizeof(ret->name), "host");
		image_host_digest(ret->digest);
		snprintf(ret->rootfs, sizeof(ret->rootfs), "/");
		return 0;
	}
	snprintf(b, sizeof(b), "%.64s%s", pin, strlen(pin) > 64 ? "..." : "");
	for (char *c = b; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	if (strncmp(pin, "sha256:", 7) == 0) {
		struct image_info *all;
		size_t n;
		if (!valid_digest(pin))
			return err_setk(
			    e, ERR_USAGE, 0,
			    "image '%s': a digest is sha256: and 64 lowercase hex digits", b);
		if (image_list(state_dir, &all, &n, e) < 0)
			return -1;
		for (size_t i = 0; i < n; i++) {
			if (strcmp(all[i].digest, pin) == 0) {
				*ret = all[i];
				free(all);
				return 0;
			}
		}
		free(all);
		return err_setk(e, ERR_NOT_FOUND, 0, "no image has the digest %s", pin);
	}
	if (!strchr(pin, '@') && recipe_valid_name(pin))
		return err_setk(e, ERR_USAGE, 0,
				"image '%s': pin a version (%s@N) or a digest (sha256:HEX)", b, b);
	if (!parse_pin(pin, name, &version))
		return err_setk(e, ERR_USAGE, 0,
				"image '%s' is not NAME@VERSION, sha256:HEX or host", b);
	if (images_dir(state_dir, false, images, sizeof(images), e) < 0)
		return -1;
	return read_info(images, name, version, ret, e);
}

int image_remove(const char *state_dir, const char *pin, struct err *e)
{
	char images[PATH_MAX], name[65], vname[16], gone[32];
	unsigned version;
	struct stat st;
	int namefd, lockfd, rc = -1;

	if (!parse_pin(pin, name, &version))
		return err_setk(e, ERR_USAGE, 0, "image rm: '%.64s' is not NAME@VERSION", pin);
	if (images_dir(state_dir, false, images, sizeof(images), e) < 0)
		return -1;
	snprintf(vname, sizeof(vname), "%u", version);
	snprintf(gone, sizeof(gone), ".rm-%u", version);
	if (open_name_locked(images, name, false, &namefd, &lockfd, e) < 0) {
		if (e->errnum == ENOENT)
			return err_setk(e, ERR_NOT_FOUND, 0, "image rm: no image %s in %s", pin,
					images);
		return err_wrap(e, "image rm");
	}
	if (fstatat(namefd, vname, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		err_setk(e, ERR_NOT_FOUND, 0, "image rm: no image %s in %s", pin, images);
	else if (renameat(namefd, vname, namefd, gone) < 0) {
		/* First out of sight, so a resolve never sees half a tree. */
		err_set(e, errno, "image rm: %s", pin);
	} else if (rm_tree_at(namefd, gone, e) < 0) {
		err_wrap(e, "image rm: %s", pin);
	} else {
		rc = 0;
	}
	flock(lockfd, LOCK_UN);
	close(lockfd);
	close(namefd);
	return rc;
}

void image_host_digest(char ret[72])
{
	struct digest *d = digest_new();
	struct err ignored;
	char hex[65];
	static const char *const paths[] = {"/usr/bin/python3",
					    "/usr/bin/gcc",
					    "/usr/bin/node",
					    "/usr/bin/java",
					    "/bin",
					    "/lib",
					    "/lib64"};

	if (!d) {
		ret[0] = '\0';
		return;
	}
	digest_update_str(d, "host");
	/* The installed package set and where the main tools lead. */
	digest_update_file(d, "/var/lib/dpkg/status", &ignored);
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char target[PATH_MAX];
		char *rp = realpath(paths[i], target);
		digest_update_str(d, paths[i]);
		digest_update_str(d, rp ? rp : "-");
	}
	digest_final(d, hex);
	snprintf(ret, 72, "sha256:%s", hex);
}
