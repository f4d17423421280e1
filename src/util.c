/* Small helpers shared by every module: fds, files, time, bounded strings. */
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int xclose(int fd)
{
	if (fd >= 0) {
		int saved = errno;
		close(fd);
		errno = saved;
	}
	return -1;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t monotonic_ms(void)
{
	return now_ns() / 1000000u;
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	bool sock = true;

	while (len > 0) {
		ssize_t n = sock ? send(fd, p, len, MSG_NOSIGNAL) : write(fd, p, len);
		if (n < 0 && sock && errno == ENOTSOCK) {
			sock = false;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int write_file_at(int dirfd, const char *path, const char *value, struct err *e)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return err_set(e, errno, "open '%s'", path);
	if (write_all(fd, value, strlen(value)) < 0)
		return err_set(e, errno, "write '%s' to '%s'", value, path);
	return 0;
}

int read_file_at(int dirfd, const char *path, char *buf, size_t cap, struct err *e)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	size_t len = 0;

	if (fd < 0)
		return err_set(e, errno, "open '%s'", path);
	while (len + 1 < cap) {
		ssize_t n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set(e, errno, "read '%s'", path);
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return 0;
}

int own_program(const char *name, int amode, char *buf, size_t len, struct err *e)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0)
		return err_set(e, errno, "readlink /proc/self/exe");
	self[n] = '\0';
	*strrchr(self, '/') = '\0'; /* an absolute path */
	snprintf(buf, len, "%s/%s", self, name);
	if (access(buf, amode) == 0)
		return 0;
	snprintf(buf, len, "%s/../libexec/%s", self, name);
	if (access(buf, amode) == 0)
		return 0;
	return err_set(e, 0, "%s not found next to proctor (%s)", name, self);
}

int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int dir_names(int dirfd, size_t max, char ***ret, size_t *ret_n, struct err *e)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0;

	if (!d) {
		xclose(fd);
		return err_set(e, errno, "open the directory");
	}
	while (rc == 0 && (errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char **nv = n % 64 ? v : realloc(v, (n + 64) * sizeof(*v));
		if (n == max)
			rc = err_set(e, E2BIG, "more than %zu entries", max);
		else if (!nv || !(nv[n] = strdup(de->d_name)))
			rc = err_set(e, ENOMEM, "list the directory");
		else
			n++;
		v = nv ? nv : v;
	}
	if (rc == 0 && errno)
		rc = err_set(e, errno, "read the directory");
	closedir(d);
	if (rc < 0) {
		free_names(v, n);
		return -1;
	}
	if (n)
		qsort(v, n, sizeof(*v), strcmp_ptr);
	*ret = v;
	*ret_n = n;
	return 0;
}

void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

int write_new_at(int dirfd, const char *name, mode_t mode, const void *data, size_t len,
		 struct err *e)
{
	int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);

	if (fd < 0)
		return err_set(e, errno, "create '%s'", name);
	if (write_all(fd, data, len) < 0 || fsync(fd) < 0) {
		xclose(fd);
		return err_set(e, errno, "write '%s'", name);
	}
	close(fd);
	return 0;
}

int parse_u64(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t)(s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*ret = v;
	return 0;
}

int stat_field(const char *text, const char *key, uint64_t *ret)
{
	size_t klen = strlen(key);
	const char *p = text;

	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t linelen = eol ? (size_t)(eol - p) : strlen(p);
		if (linelen > klen && strncmp(p, key, klen) == 0 && p[klen] == ' ')
			return parse_u64(p + klen + 1, linelen - klen - 1, ret);
		p = eol ? eol + 1 : NULL;
	}
	return -1;
}

int open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how how = {
	    .flags = (uint64_t)(flags | O_CLOEXEC | O_NOFOLLOW),
	    .mode = (flags & O_CREAT) ? mode : 0,
	    .resolve =
		RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
	};

	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

ssize_t send_with_fds(int sock, const struct iovec *iov, size_t n, const int *fds, size_t nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(SEND_FDS_MAX * sizeof(int))];
	} ctl = {0};
	struct msghdr m = {.msg_iov = (struct iovec *)iov, .msg_iovlen = n};
	ssize_t sent;

	if (nfds > SEND_FDS_MAX) {
		errno = EINVAL;
		return -1;
	}
	if (nfds > 0) {
		m.msg_control = ctl.buf;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	while ((sent = sendmsg(sock, &m, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return sent;
}

ssize_t send_with_fd(int sock, const struct iovec *iov, size_t n, int fd)
{
	return send_with_fds(sock, iov, n, &fd, fd >= 0 ? 1 : 0);
}

ssize_t recv_with_fds(int sock, void *buf, size_t len, int *fds, size_t max, size_t *nfds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(SEND_FDS_MAX * sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = len};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctl.buf,
			   .msg_controllen =
			       CMSG_SPACE((max < SEND_FDS_MAX ? max : SEND_FDS_MAX) * sizeof(int))};
	bool extra = false;
	ssize_t n;

	*nfds = 0;
	while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -1;
	/* Every descriptor that came is either handed back or closed. */
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*nfds < max)
				fds[(*nfds)++] = fd;
			else {
				close(fd);
				extra = true;
			}
		}
	}
	if (extra || (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC))) {
		while (*nfds > 0)
			close(fds[--*nfds]);
		errno = (m.msg_flags & MSG_TRUNC) ? EMSGSIZE : EMFILE;
		return -1;
	}
	return n;
}

ssize_t recv_with_fd(int sock, void *buf, size_t len, int *ret_fd)
{
	size_t n = 0;
	ssize_t r = recv_with_fds(sock, buf, len, ret_fd, 1, &n);

	if (n == 0)
		*ret_fd = -1;
	return r;
}

int mkdir_p_at(int dirfd, const char *path, mode_t mode, uid_t uid, gid_t gid, struct err *e)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return err_set(e, ENAMETOOLONG, "mkdir '%s'", path);
	memcpy(buf, path, len + 1);
	for (char *p = buf;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (buf[0] != '\0') {
			if (mkdirat(dirfd, buf, mode) == 0) {
				if (uid != (uid_t)-1 &&
				    fchownat(dirfd, buf, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
					return err_set(e, errno, "chown '%s'", buf);
			} else if (errno != EEXIST) {
				return err_set(e, errno, "mkdir '%s'", buf);
			}
			/* An existing component must be a real directory; below a
			 * directory fd (a sandbox tree) it must not be a link. */
			int fd = dirfd == AT_FDCWD
				     ? open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC)
				     : open_beneath(dirfd, buf, O_PATH | O_DIRECTORY, 0);
			if (fd < 0)
				return err_set(e, errno, "'%s' is not a directory", buf);
			close(fd);
		}
		if (saved == '\0')
			break;
		*p = saved;
	}
	return 0;
}

bool name_has_control(const char *name)
{
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			return true;
	return false;
}

int replace_beneath(int dirfd, const char *rel, mode_t mode)
{
	char dir[4096];
	const char *slash = strrchr(rel, '/'), *last = slash ? slash + 1 : rel;
	int pfd, fd;

	if (slash && (size_t)(slash - rel) >= sizeof(dir)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (slash) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
		pfd = open_beneath(dirfd, dir, O_RDONLY | O_DIRECTORY, 0);
	} else {
		pfd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	}
	if (pfd < 0)
		return -1;
	if (unlinkat(pfd, last, 0) < 0 && errno != ENOENT) {
		int saved = errno; /* EISDIR: a directory in the way */
		close(pfd);
		errno = saved;
		return -1;
	}
	fd = openat(pfd, last, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	int saved = errno;
	close(pfd);
	errno = saved;
	return fd;
}

bool put_parent_rule(const struct stat *st, bool created, bool harness, uid_t harness_uid,
		     mode_t *mode)
{
	if (harness) {
		*mode = 0755;
		return created || (st->st_uid != 0 && st->st_uid != harness_uid) ||
		       (st->st_mode & 07022) != 0;
	}
	*mode = 01777;
	return created || (st->st_uid != 0 && st->st_uid != harness_uid);
}

int rm_rf_children(int dirfd, struct err *e)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (fd < 0)
		return err_set(e, errno, "open directory");
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_set(e, errno, "fdopendir");
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (unlinkat(dirfd, de->d_name, 0) == 0)
			continue;
		if (errno != EISDIR) {
			rc = err_set(e, errno, "unlink '%s'", de->d_name);
			break;
		}
		int sub =
		    openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0 || rm_rf_children(sub, e) < 0) {
			if (sub < 0)
				rc = err_set(e, errno, "open '%s'", de->d_name);
			else
				rc = err_wrap(e, "%s", de->d_name);
			xclose(sub);
			break;
		}
		close(sub);
		if (unlinkat(dirfd, de->d_name, AT_REMOVEDIR) < 0) {
			rc = err_set(e, errno, "rmdir '%s'", de->d_name);
			break;
		}
	}
	closedir(d);
	return rc;
}

/* Remove the directory `name` below dirfd and everything in it, never
 * following a symlink. */
int rm_tree_at(int dirfd, const char *name, struct err *e)
{
	_cleanup_close_ int fd =
	    openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? 0 : err_set(e, errno, "open '%s'", name);
	if (rm_rf_children(fd, e) < 0)
		return err_wrap(e, "remove '%s'", name);
	fd = xclose(fd);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0)
		return err_set(e, errno, "rmdir '%s'", name);
	return 0;
}

int read_whole_at(int dirfd, const char *path, int oflags, size_t max, char **ret, size_t *ret_len,
		  struct err *e)
{
	_cleanup_close_ int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | oflags);
	struct stat st;
	size_t len = 0, cap;
	char *buf;

	if (fd < 0)
		return err_set(e, errno, "open '%s'", path);
	if (fstat(fd, &st) < 0)
		return err_set(e, errno, "stat '%s'", path);
	if (!S_ISREG(st.st_mode))
		return err_set(e, 0, "'%s' is not a regular file", path);
	/* Sized by fstat, but a file that grows meanwhile is still capped. */
	cap = (uint64_t)st.st_size < max ? (size_t)st.st_size + 1 : max + 1;
	if (!(buf = malloc(cap + 1)))
		return err_set(e, ENOMEM, "read '%s'", path);
	for (;;) {
		if (len == cap) {
			size_t ncap = cap > max / 2 ? max + 1 : 2 * cap;
			char *n;
			if (ncap <= cap || !(n = realloc(buf, ncap + 1))) {
				free(buf);
				return ncap <= cap
					   ? err_set(e, EFBIG, "'%s' is larger than %zu bytes",
						     path, max)
					   : err_set(e, ENOMEM, "read '%s'", path);
			}
			buf = n;
			cap = ncap;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int saved = errno;
			free(buf);
			return err_set(e, saved, "read '%s'", path);
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			free(buf);
			return err_set(e, EFBIG, "'%s' is larger than %zu bytes", path, max);
		}
	}
	buf[len] = '\0';
	*ret = buf;
	if (ret_len)
		*ret_len = len;
	return 0;
}

bool json_nesting_exceeds(const char *s, size_t len, size_t max)
{
	size_t depth = 0;
	bool in_string = false;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
		} else if (c == '"') {
			in_string = true;
		} else if (c == '[' || c == '{') {
			if (++depth > max)
				return true;
		} else if ((c == ']' || c == '}') && depth > 0) {
			depth--;
		}
	}
	return false;
}

unsigned cpus_available(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && (n = CPU_COUNT(&set)) > 0)
		return (unsigned)n;
	long v = sysconf(_SC_NPROCESSORS_ONLN);
	return v > 0 ? (unsigned)v : 1;
}

int random_hex(char *buf, size_t cap, const char *prefix, size_t n, struct err *e)
{
	unsigned char rnd[32];
	size_t len = (size_t)snprintf(buf, cap, "%s", prefix);

	if (n > sizeof(rnd) || len + 2 * n >= cap || getrandom(rnd, n, 0) != (ssize_t)n)
		return err_set(e, errno, "getrandom");
	for (size_t i = 0; i < n; i++)
		snprintf(buf + len + 2 * i, 3, "%02x", rnd[i]);
	return 0;
}

char *csv_cell(const char *s)
{
	size_t n = strlen(s);
	/* At most: two quotes, each byte doubled or given an apostrophe. */
	char *out = malloc(2 * n + 3), *o = out;
	bool piece_start = true;

	if (!out)
		return NULL;
	*o++ = '"';
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		unsigned char c = (*p < 0x20 || *p == 0x7f) ? ' ' : *p;
		if (piece_start && (c == '=' || c == '+' || c == '-' || c == '@'))
			*o++ = '\'';
		if (c == '"')
			*o++ = '"';
		*o++ = (char)c;
		piece_start = c == ',' || c == ';' || c == '|' || *p == '\t';
	}
	*o++ = '"';
	*o = '\0';
	return out;
}
