/* The jail's put and get: moving files into and out of a sandbox's writable tree. */
#include "jail/files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/tree.h"
#include "sandbox.h"
#include "util.h"

/* Whether a put's destination failed by the user's doing: the sandbox
 * paths given collide (a file where a directory must go, or the other way
 * round), the writable tree is full (--disk), or a symlink a program
 * planted is on the way (open_beneath: ELOOP, EXDEV), or a name is too
 * long. */
static bool put_dst_theirs(int errnum)
{
	return errnum == ENOTDIR || errnum == EISDIR || errnum == EEXIST || errnum == ENOSPC ||
	       errnum == EDQUOT || errnum == EFBIG || errnum == ELOOP || errnum == EXDEV ||
	       errnum == ENAMETOOLONG;
}

/* The kind of a failed open_beneath() of a path the caller named: not
 * there (or a file on the way: there is no such path) is ERR_NOT_FOUND; a
 * symlink, a path leaving the tree or a name too long is ERR_INPUT. */
static enum err_kind beneath_kind(int errnum)
{
	if (errnum == ENOENT || errnum == ENOTDIR)
		return ERR_NOT_FOUND;
	if (errnum == ELOOP || errnum == EXDEV || errnum == ENAMETOOLONG)
		return ERR_INPUT;
	return ERR_INTERNAL;
}

/* Copy `in` to `out`, at most `max` bytes.  A source that cannot be read,
 * or a destination that is full, is `theirs` to fix: ERR_INPUT for a put
 * (the user's file, or more than the writable tree holds). */
static int copy_fd(int in, int out, uint64_t max, const char *what, enum err_kind theirs,
		   struct err *e)
{
	char buf[65536];
	uint64_t total = 0;

	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err_setk(e, theirs, errno, "read '%s'", what);
		}
		if (n == 0)
			return 0;
		total += (uint64_t)n;
		if (total > max)
			return err_set(e, EFBIG, "'%s' is larger than %llu bytes", what,
				       (unsigned long long)max);
		if (write_all(out, buf, (size_t)n) < 0) {
			bool full = errno == ENOSPC || errno == EDQUOT || errno == EFBIG;
			return err_setk(e, full ? theirs : ERR_INTERNAL, errno, "write '%s'", what);
		}
	}
}

/*
 * Create the parents of `rel`: for the program's put, the program's (0755)
 * where created, left as they are otherwise; for any other put, each
 * parent below the top ("work" or "tmp") as put_parent_rule() (util.h)
 * says, the agent's rule too.
 */
static int parent_dirs(int scratch_fd, const char *rel, const struct put_owner *o, struct err *e)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(rel, '/');

	if (!slash)
		return 0;
	if ((size_t)(slash - rel) >= sizeof(dir))
		return err_set(e, ENAMETOOLONG, "'%s'", rel);
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
	for (char *p = dir;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		bool created = mkdirat(scratch_fd, dir, 0700) == 0;
		if (!created && errno != EEXIST)
			return err_set(e, errno, "mkdir '%s'", dir);
		/* An existing component must be a real directory, not a link. */
		int fd = open_beneath(scratch_fd, dir, O_RDONLY | O_DIRECTORY, 0);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0) {
			int saved_errno = errno;
			xclose(fd);
			return err_set(e, saved_errno, "'%s' is not a directory", dir);
		}
		int rc = 0;
		mode_t mode = 0755;
		if (!o->protect || !strchr(dir, '/')) {
			/* The program's parents, or "work" and "tmp" themselves
			 * (which always exist). */
			if (created)
				rc = fchown(fd, o->protect ? 0 : o->uid, o->protect ? 0 : o->gid) < 0 ||
				     fchmod(fd, 0755) < 0;
		} else if (put_parent_rule(&st, created, o->harness, o->harness_uid, &mode)) {
			rc = fchown(fd, 0, 0) < 0 || fchmod(fd, mode) < 0;
		}
		int saved_errno = errno;
		close(fd);
		if (rc)
			return err_set(e, saved_errno, "protect '%s'", dir);
		if (saved == '\0')
			break;
		*p = saved;
	}
	return 0;
}

/* Where a put's entries go in the jail: below the scratch tree, owned as o says. */
struct jail_sink {
	int scratch_fd;
	const struct put_owner *o;
};

static int sink_parents(void *ctx, const char *rel, struct err *e)
{
	struct jail_sink *k = ctx;

	if (parent_dirs(k->scratch_fd, rel, k->o, e) < 0)
		return put_dst_theirs(e->errnum) ? err_classify(e, ERR_INPUT) : -1;
	return 0;
}

static int sink_dir(void *ctx, const char *rel, struct err *e)
{
	struct jail_sink *k = ctx;
	const struct put_owner *o = k->o;
	mode_t mode = 0755 & o->dir_mask;

	if (mkdir_p_at(k->scratch_fd, rel, mode, o->uid, o->gid, e) < 0)
		return put_dst_theirs(e->errnum) ? err_classify(e, ERR_INPUT) : -1;
	if (o->protect && strchr(rel, '/')) {
		/* A protected tree (root's, mode kept) landing in a directory
		 * the program made takes it back as a parent (see parent_dirs);
		 * a harness tree's directories are exactly its owner's. */
		bool harness = o->uid != 0 || o->gid != 0;
		struct stat st;
		int fd = open_beneath(k->scratch_fd, rel, O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0 || fstat(fd, &st) < 0) {
			xclose(fd);
			return err_set(e, errno, "protect '%s'", rel);
		}
		int rc = 0;
		if (harness)
			rc = fchown(fd, o->uid, o->gid) < 0 || fchmod(fd, mode) < 0;
		else if (st.st_uid != 0)
			rc = fchown(fd, 0, 0) < 0 || fchmod(fd, 01777) < 0;
		int saved = errno;
		close(fd);
		if (rc)
			return err_set(e, saved, "protect '%s'", rel);
	}
	return 0;
}

static int sink_file(void *ctx, int src, const char *host_path, const char *rel, mode_t mode,
		     struct err *e)
{
	struct jail_sink *k = ctx;
	const struct put_owner *o = k->o;
	int dst = replace_beneath(k->scratch_fd, rel, 0600);

	mode &= o->file_mask;
	if (dst < 0)
		return err_setk(e, put_dst_theirs(errno) ? ERR_INPUT : ERR_INTERNAL, errno,
				"create '%s' in the sandbox", rel);
	int rc = copy_fd(src, dst, UINT64_MAX, host_path, ERR_INPUT, e);
	if (rc == 0 && (fchown(dst, o->uid, o->gid) < 0 || fchmod(dst, mode) < 0))
		rc = err_set(e, errno, "set owner of '%s'", rel);
	close(dst);
	return rc;
}

int files_put(int scratch_fd, const char *host_path, const char *rel, const struct put_owner *o,
	      struct err *e)
{
	struct jail_sink k = {.scratch_fd = scratch_fd, .o = o};
	const struct tree_sink sink = {
	    .ctx = &k, .parents = sink_parents, .dir = sink_dir, .file = sink_file};

	return tree_put(host_path, rel, &sink, e);
}

/* Copy the open directory `src_dir` to the host directory `host_path`
 * (created), regular files and directories only; *budget bytes in all. */
static int get_tree(struct sandbox *sb, int src_dir, const char *shown, const char *host_path,
		    uint64_t *budget, int depth, struct err *e)
{
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (depth > TREE_MAX_DEPTH) {
		close(src_dir);
		return err_set(e, ELOOP, "'%s' is nested too deeply", shown);
	}
	if (mkdir(host_path, 0755) < 0 && errno != EEXIST) {
		xclose(src_dir);
		return err_set(e, errno, "'%s'", host_path);
	}
	d = fdopendir(src_dir);
	if (!d) {
		close(src_dir);
		return err_set(e, errno, "read directory '%s'", shown);
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		char sub_host[PATH_MAX], sub_shown[PATH_MAX];
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (name_has_control(de->d_name)) {
			char rel[PATH_MAX];
			snprintf(rel, sizeof(rel), "%s/%s", shown, de->d_name);
			sandbox_get_skip(sb, rel);
			continue;
		}
		if ((size_t)snprintf(sub_host, sizeof(sub_host), "%s/%s", host_path, de->d_name) >=
			sizeof(sub_host) ||
		    (size_t)snprintf(sub_shown, sizeof(sub_shown), "%s/%s", shown, de->d_name) >=
			sizeof(sub_shown)) {
			rc = err_set(e, ENAMETOOLONG, "path below '%s'", shown);
			break;
		}
		/* O_NOFOLLOW: a symlink the program left is skipped, never followed. */
		int fd =
		    openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0) {
			close(fd);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			rc = get_tree(sb, fd, sub_shown, sub_host, budget, depth + 1, e);
			continue;
		}
		if (S_ISREG(st.st_mode)) {
			int dst =
			    open(sub_host, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
				 (st.st_mode & 0111) ? 0755 : 0644);
			if (dst < 0)
				rc = err_set(e, errno, "'%s'", sub_host);
			else {
				rc = copy_fd(fd, dst, *budget, sub_shown, ERR_INTERNAL, e);
				if (rc == 0)
					*budget -= (uint64_t)st.st_size < *budget
						       ? (uint64_t)st.st_size
						       : *budget;
				close(dst);
			}
		}
		close(fd);
	}
	closedir(d);
	return rc;
}

int files_get(struct sandbox *sb, int scratch_fd, const char *rel, const char *shown,
	      const char *host_path, uint64_t max_bytes, struct err *e)
{
	struct stat st;
	/* O_NONBLOCK: opening a FIFO the program left there must not block us;
	 * device nodes cannot exist on the nodev scratch tmpfs. */
	int src = open_beneath(scratch_fd, rel, O_RDONLY | O_NONBLOCK, 0), dst, rc;

	if (src < 0) {
		if (errno == ELOOP || errno == EXDEV)
			return err_setk(e, ERR_INPUT, 0, "'%s' is a symlink or leaves the sandbox",
					shown);
		return err_setk(e, beneath_kind(errno), errno, "'%s'", shown);
	}
	if (fstat(src, &st) == 0 && S_ISDIR(st.st_mode)) {
		uint64_t budget = max_bytes;
		return get_tree(sb, src, shown, host_path, &budget, 0, e); /* owns src */
	}
	if (fstat(src, &st) < 0) {
		int errnum = errno;
		close(src);
		return err_set(e, errnum, "stat '%s'", shown);
	}
	if (!S_ISREG(st.st_mode)) {
		close(src);
		return err_setk(e, ERR_INPUT, 0, "'%s' is not a regular file or directory", shown);
	}
	dst = open(host_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		   (st.st_mode & 0111) ? 0755 : 0644);
	if (dst < 0) {
		xclose(src);
		return err_set(e, errno, "'%s'", host_path);
	}
	rc = copy_fd(src, dst, max_bytes, shown, ERR_INTERNAL, e);
	close(src);
	close(dst);
	return rc;
}

static int dirent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sandbox_dirent *)a)->name,
		      ((const struct sandbox_dirent *)b)->name);
}

int files_list(int scratch_fd, const char *rel, const char *shown, struct sandbox_dirent **ret,
	       size_t *ret_n, struct err *e)
{
	struct sandbox_dirent *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	bool more = false;
	int fd = open_beneath(scratch_fd, rel, O_RDONLY | O_DIRECTORY, 0);

	if (fd < 0) {
		int errnum = errno;
		if (errnum == ENOTDIR) {
			/* rel itself is not a directory (the caller's mistake), or
			 * a component on the way is not (then there is no rel). */
			int any = open_beneath(scratch_fd, rel, O_PATH, 0);
			bool exists = any >= 0;
			xclose(any);
			if (exists)
				return err_setk(e, ERR_INPUT, ENOTDIR, "'%s'", shown);
		}
		if (errnum == ELOOP || errnum == EXDEV)
			return err_setk(e, ERR_INPUT, 0, "'%s' is a symlink or leaves the sandbox",
					shown);
		return err_setk(e, beneath_kind(errnum), errnum, "'%s'", shown);
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		int errnum = errno;
		close(fd);
		return err_set(e, errnum, "read directory '%s'", shown);
	}
	while ((errno = 0, de = readdir(d)) != NULL) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    name_has_control(de->d_name))
			continue;
		if (n == SANDBOX_LIST_MAX) {
			more = true;
			break;
		}
		/* AT_SYMLINK_NOFOLLOW: a link is described, never followed. */
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone since readdir: not there */
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct sandbox_dirent *nv = realloc(v, ncap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return err_set(e, ENOMEM, "list '%s'", shown);
			}
			v = nv;
			cap = ncap;
		}
		struct sandbox_dirent *x = &v[n++];
		snprintf(x->name, sizeof(x->name), "%s", de->d_name);
		x->type = S_ISREG(st.st_mode)	? 'f'
			  : S_ISDIR(st.st_mode) ? 'd'
			  : S_ISLNK(st.st_mode) ? 'l'
						: 'o';
		x->size = (uint64_t)st.st_size;
		x->mode = (unsigned)(st.st_mode & 07777);
		x->mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
	}
	int errnum = errno;
	closedir(d);
	if (!more && errnum != 0) {
		free(v);
		return err_set(e, errnum, "read directory '%s'", shown);
	}
	if (n > 1)
		qsort(v, n, sizeof(*v), dirent_cmp);
	*ret = v;
	*ret_n = n;
	return more ? 1 : 0;
}

int files_remove(int scratch_fd, const char *rel, const char *shown, bool recursive, struct err *e)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(rel, '/');
	struct stat st;

	if (!slash)
		return err_setk(e, ERR_INPUT, 0, "'%s' is the top of the writable tree", shown);
	if ((size_t)(slash - rel) >= sizeof(parent))
		return err_setk(e, ERR_INPUT, ENAMETOOLONG, "'%s'", shown);
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - rel), rel);
	/* The parent is reached without a link on the way, and the entry
	 * itself is removed, never followed: a link the program planted goes,
	 * its target stays. */
	_cleanup_close_ int dir = open_beneath(scratch_fd, parent, O_RDONLY | O_DIRECTORY, 0);
	if (dir < 0)
		return err_setk(e, errno == ENOENT ? ERR_NOT_FOUND : ERR_INPUT, errno,
				errno == ENOENT ? "'%s' is not there"
						: "'%s': a link or a file is on the way",
				shown);
	if (fstatat(dir, slash + 1, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return err_setk(e, errno == ENOENT ? ERR_NOT_FOUND : ERR_INTERNAL, errno,
				"'%s' is not there", shown);
	if (!S_ISDIR(st.st_mode)) {
		if (unlinkat(dir, slash + 1, 0) < 0)
			return err_set(e, errno, "remove '%s'", shown);
		return 0;
	}
	if (recursive) {
		if (rm_tree_at(dir, slash + 1, e) < 0)
			return err_wrap(e, "'%s'", shown);
		return 0;
	}
	if (unlinkat(dir, slash + 1, AT_REMOVEDIR) < 0)
		return err_setk(
		    e, errno == ENOTEMPTY || errno == EEXIST ? ERR_INPUT : ERR_INTERNAL, errno,
		    "'%s' is a directory that is not empty (remove it recursively)", shown);
	return 0;
}
