/* Walking a host file or directory tree that is put into a sandbox: one rule for every backend. */
#include "host/tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* What a put refuses, for its message. */
static const char *type_name(mode_t m)
{
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	return "of an unknown type";
}

static int refuse(const char *path, mode_t m, struct err *e)
{
	return err_setk(e, ERR_INPUT, 0,
			"'%s' is %s: a put copies only regular files and directories", path,
			type_name(m));
}

static mode_t file_mode(const struct stat *st)
{
	return (st->st_mode & 0111) ? 0755 : 0644;
}

/*
 * Open what lstat (or, at the top, stat) saw as `want`.  O_NOFOLLOW and
 * O_NONBLOCK, and the same inode afterwards: an entry swapped for a link,
 * a FIFO or another file in between is refused, never followed or waited on.
 */
static int open_seen(int dir_fd, const char *name, int nofollow, const struct stat *want,
		     const char *shown, struct err *e)
{
	int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0) |
		    (S_ISDIR(want->st_mode) ? O_DIRECTORY : 0);
	int fd = openat(dir_fd, name, flags);
	struct stat st;

	if (fd < 0)
		return err_setk(e, ERR_INPUT, errno, "'%s'", shown);
	if (fstat(fd, &st) < 0) {
		xclose(fd);
		return err_setk(e, ERR_INPUT, errno, "stat '%s'", shown);
	}
	if (st.st_dev != want->st_dev || st.st_ino != want->st_ino) {
		close(fd);
		return err_setk(e, ERR_INPUT, 0, "'%s' was replaced while it was being copied",
				shown);
	}
	return fd;
}

/* Append "/name" to the path in buf (length *len); false if it would not fit. */
static bool append(char *buf, size_t *len, const char *name)
{
	size_t n = strlen(name);

	if (*len + 1 + n >= PATH_MAX)
		return false;
	buf[(*len)++] = '/';
	memcpy(buf + *len, name, n + 1);
	*len += n;
	return true;
}

/* Copy the open directory dir_fd (owned) whose paths are host[0..hlen) and
 * rel[0..rlen); both buffers are PATH_MAX and restored on return. */
static int walk(int dir_fd, char *host, size_t hlen, char *rel, size_t rlen,
		const struct tree_sink *s, int depth, struct err *e)
{
	DIR *d;
	int rc = 0;

	if (depth > TREE_MAX_DEPTH) {
		close(dir_fd);
		return err_setk(e, ERR_INPUT, ELOOP, "'%s' is nested more than %d levels deep",
				host, TREE_MAX_DEPTH);
	}
	if (s->dir(s->ctx, rel, e) < 0) {
		close(dir_fd);
		return -1;
	}
	if (!(d = fdopendir(dir_fd))) {
		xclose(dir_fd);
		return err_setk(e, ERR_INPUT, errno, "read directory '%s'", host);
	}
	while (rc == 0) {
		struct dirent *de;
		struct stat st;
		size_t hl = hlen, rl = rlen;

		errno = 0;
		if (!(de = readdir(d))) {
			if (errno)
				rc = err_setk(e, ERR_INPUT, errno, "read directory '%s'", host);
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (!append(host, &hl, de->d_name) || !append(rel, &rl, de->d_name)) {
			host[hlen] = rel[rlen] = '\0';
			rc = err_setk(e, ERR_INPUT, ENAMETOOLONG, "a name below '%s'", host);
			break;
		}
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			rc = err_setk(e, ERR_INPUT, errno, "'%s'", host);
		else if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
			rc = refuse(host, st.st_mode, e);
		else {
			int fd = open_seen(dirfd(d), de->d_name, 1, &st, host, e);
			if (fd < 0)
				rc = -1;
			else if (S_ISDIR(st.st_mode))
				rc = walk(fd, host, hl, rel, rl, s, depth + 1, e); /* owns fd */
			else {
				rc = s->file(s->ctx, fd, host, rel, file_mode(&st), e);
				close(fd);
			}
		}
		host[hlen] = rel[rlen] = '\0';
	}
	closedir(d);
	return rc;
}

int tree_put(const char *host_path, const char *rel, const struct tree_sink *s, struct err *e)
{
	char host[PATH_MAX], dst[PATH_MAX];
	struct stat st;
	int fd, rc;

	if ((size_t)snprintf(host, sizeof(host), "%s", host_path) >= sizeof(host) ||
	    (size_t)snprintf(dst, sizeof(dst), "%s", rel) >= sizeof(dst))
		return err_setk(e, ERR_INPUT, ENAMETOOLONG, "'%s'", host_path);
	/* The top is the caller's own path: a symlink to it is followed. */
	if (stat(host, &st) < 0)
		return err_setk(e, ERR_INPUT, errno, "'%s'", host);
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return refuse(host, st.st_mode, e);
	if ((fd = open_seen(AT_FDCWD, host, 0, &st, host, e)) < 0)
		return -1;
	if (s->parents && s->parents(s->ctx, dst, e) < 0) {
		close(fd);
		return -1;
	}
	if (S_ISDIR(st.st_mode))
		return walk(fd, host, strlen(host), dst, strlen(dst), s, 0, e); /* owns fd */
	rc = s->file(s->ctx, fd, host, dst, file_mode(&st), e);
	close(fd);
	return rc;
}
