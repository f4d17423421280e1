/* The opener: looking up a submission's entries below the root proctor opened. */
#include "grade/opener.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util.h"

/*
 * The protocol on the socket (SOCK_SEQPACKET: one message is one request
 * or one answer, never split or merged).  A request is struct request and
 * then the relative path, without a NUL, at most OPENER_PATH_MAX bytes.
 * OP_LOOKUP is answered by one struct answer, with the descriptor
 * (SCM_RIGHTS) when one was wanted and the entry is a regular file.
 * OP_LIST is answered by messages of a struct answer (errnum 0, mode
 * LIST_MORE or LIST_LAST, size the bytes that follow) and at most
 * LIST_CHUNK bytes of names, each ended by a NUL, at most `max` names in
 * all; or by one struct answer with errnum set.
 */
#define OPENER_PATH_MAX 4095
#define OP_LOOKUP	0
#define OP_LOOKUP_FD	1
#define OP_LIST		2
#define LIST_MORE	1
#define LIST_LAST	0
#define LIST_CHUNK	16384

struct request {
	uint32_t op;
	uint32_t max; /* OP_LIST: names at most */
};

struct answer {
	int32_t errnum; /* 0, or why the lookup failed */
	uint32_t mode;
	uint64_t size;
};

/* Reopen the O_PATH descriptor pfd (looked up as `what`, stat st) for reading. */
static int reopen(int pfd, const struct stat *st, const char *what, int *ret_fd, struct err *e)
{
	char proc[64];
	struct stat again;
	int fd;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	/* SECURITY: through the O_PATH descriptor this opens the very inode
	 * that was looked up and whose type was checked, whatever its name
	 * points to by now; only a directory or a regular file gets here, so
	 * no device or FIFO is ever opened with proctor's credentials. */
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | (S_ISDIR(st->st_mode) ? O_DIRECTORY : 0));
	if (fd < 0)
		/* A deleted file still reopens: ENOENT means no /proc, which
		 * must not pass for "the entry is gone". */
		return err_set(e, errno == ENOENT ? EIO : errno, "reopen '%s' through /proc", what);
	if (fstat(fd, &again) < 0 || again.st_dev != st->st_dev || again.st_ino != st->st_ino) {
		close(fd);
		return err_set(e, EIO, "reopen '%s': another file came back", what);
	}
	*ret_fd = fd;
	return 0;
}

/* Describe pfd and, if wanted, open it for reading when it is a regular
 * file (or also a directory, when dir_too). */
static int describe(int pfd, const char *what, bool dir_too, struct opener_stat *ret_st,
		    int *ret_fd, struct err *e)
{
	struct stat st;
	int fd = -1;

	if (fstat(pfd, &st) < 0)
		return err_set(e, errno, "stat '%s'", what);
	if (ret_fd && (S_ISREG(st.st_mode) || (dir_too && S_ISDIR(st.st_mode))) &&
	    reopen(pfd, &st, what, &fd, e) < 0)
		return -1;
	ret_st->mode = st.st_mode;
	ret_st->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	if (ret_fd)
		*ret_fd = fd;
	return 0;
}

int opener_open_root(const char *path, struct opener_stat *ret_st, int *ret_fd, struct err *e)
{
	/* O_PATH: nothing is opened for reading before its type is known. */
	int pfd = open(path, O_PATH | O_CLOEXEC);
	int rc;

	if (pfd < 0)
		return err_set(e, errno, "open '%s'", path);
	rc = describe(pfd, path, true, ret_st, ret_fd, e);
	close(pfd);
	return rc;
}

/* O_PATH below rootfd, as above; open_beneath() adds O_NOFOLLOW, so a
 * symlink as the last component is described, not followed, and
 * RESOLVE_NO_SYMLINKS refuses one anywhere before it. */
static int open_path(int rootfd, const char *rel, struct err *e)
{
	int pfd = open_beneath(rootfd, *rel ? rel : ".", O_PATH, 0);

	return pfd < 0 ? err_set(e, errno, "open") : pfd;
}

int opener_lookup(int rootfd, const char *rel, struct opener_stat *ret_st, int *ret_fd,
		  struct err *e)
{
	int pfd = open_path(rootfd, rel, e);
	int rc;

	if (pfd < 0)
		return -1;
	rc = describe(pfd, rel, false, ret_st, ret_fd, e);
	close(pfd);
	return rc;
}

int opener_list(int rootfd, const char *rel, size_t max, opener_name_fn *fn, void *arg,
		struct err *e)
{
	struct opener_stat st;
	struct dirent *de;
	size_t n = 0;
	int pfd, fd = -1, rc = 0;
	DIR *d;

	pfd = open_path(rootfd, rel, e);
	if (pfd < 0)
		return -1;
	rc = describe(pfd, rel, true, &st, &fd, e);
	close(pfd);
	if (rc < 0)
		return -1;
	if (!S_ISDIR(st.mode)) {
		xclose(fd);
		return err_set(e, S_ISLNK(st.mode) ? ELOOP : ENOTDIR, "list");
	}
	d = fdopendir(fd);
	if (!d) {
		rc = err_set(e, errno, "list");
		close(fd);
		return rc;
	}
	while (rc == 0 && n < max) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				rc = err_set(e, errno, "list");
			break;
		}
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		rc = fn(de->d_name, arg, e);
	}
	closedir(d);
	return rc;
}

/* ---- the opener process ---- */

static int send_answer(int sock, const struct answer *a, const void *extra, size_t extra_len,
		       int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov[2] = {{.iov_base = (void *)a, .iov_len = sizeof(*a)},
			       {.iov_base = (void *)extra, .iov_len = extra_len}};
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = extra_len ? 2 : 1};

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.buf;
		m.msg_controllen = sizeof(ctl.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while (sendmsg(sock, &m, MSG_NOSIGNAL) < 0)
		if (errno != EINTR)
			return -1;
	return 0;
}

/* Names batched into LIST_CHUNK-byte answers. */
struct chunk {
	int sock;
	size_t len;
	char buf[LIST_CHUNK];
};

static int chunk_flush(struct chunk *c, uint32_t more)
{
	struct answer a = {.errnum = 0, .mode = more, .size = c->len};
	int rc = send_answer(c->sock, &a, c->buf, c->len, -1);

	c->len = 0;
	return rc;
}

static int chunk_add(const char *name, void *arg, struct err *e)
{
	struct chunk *c = arg;
	size_t len = strlen(name) + 1;

	if (c->len + len > sizeof(c->buf) && chunk_flush(c, LIST_MORE) < 0)
		return err_set(e, errno, "send");
	memcpy(c->buf + c->len, name, len);
	c->len += len;
	return 0;
}

/* One request: its answers sent.  -1 when the helper's end is gone. */
static int serve_one(int rootfd, int sock, const struct request *rq, const char *rel)
{
	struct chunk c;
	struct answer a = {0};
	struct opener_stat st = {0};
	struct err e = {0};
	int fd = -1, rc;

	if (rq->op == OP_LIST) {
		c.sock = sock;
		c.len = 0;
		if (opener_list(rootfd, rel, rq->max, chunk_add, &c, &e) == 0)
			return chunk_flush(&c, LIST_LAST);
		if (e.errnum == EPIPE || e.errnum == ECONNRESET)
			return -1;
		a.errnum = e.errnum ? e.errnum : EIO;
		return send_answer(sock, &a, NULL, 0, -1);
	}
	if (opener_lookup(rootfd, rel, &st, rq->op == OP_LOOKUP_FD ? &fd : NULL, &e) < 0)
		a.errnum = e.errnum ? e.errnum : EIO;
	a.mode = st.mode;
	a.size = st.size;
	rc = send_answer(sock, &a, NULL, 0, fd);
	xclose(fd);
	return rc;
}

/* Answer requests until the helper's end is closed.  Requests are the
 * helper's, so each is checked before use; descriptors it may have
 * attached are discarded by the kernel (recv() takes no control data). */
static void serve(int rootfd, int sock)
{
	char req[sizeof(struct request) + OPENER_PATH_MAX + 2];

	for (;;) {
		ssize_t n = recv(sock, req, sizeof(req) - 1, 0);
		struct request rq;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		if ((size_t)n < sizeof(rq)) {
			struct answer a = {.errnum = EINVAL};
			if (send_answer(sock, &a, NULL, 0, -1) < 0)
				return;
			continue;
		}
		memcpy(&rq, req, sizeof(rq));
		char *rel = req + sizeof(rq);
		size_t len = (size_t)n - sizeof(rq);
		if (len > OPENER_PATH_MAX || rq.op > OP_LIST || memchr(rel, '\0', len)) {
			struct answer a = {.errnum = EINVAL};
			if (send_answer(sock, &a, NULL, 0, -1) < 0)
				return;
			continue;
		}
		rel[len] = '\0';
		if (serve_one(rootfd, sock, &rq, rel) < 0)
			return;
	}
}

/* Close every descriptor but 0-2, a and b. */
static void keep_only(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	if (lo > 3)
		syscall(SYS_close_range, 3u, (unsigned)lo - 1, 0u);
	if (hi > lo + 1)
		syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0u);
	syscall(SYS_close_range, (unsigned)hi + 1, ~0u, 0u);
}

int opener_start(int rootfd, pid_t *ret_pid, int *ret_sock, struct err *e)
{
	pid_t parent = getpid(), pid;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return err_set(e, errno, "socketpair for the opener");
	pid = fork();
	if (pid < 0) {
		int saved = errno;
		close(sv[0]);
		close(sv[1]);
		return err_set(e, saved, "fork the opener");
	}
	if (pid == 0) {
		/* SECURITY: this process keeps proctor's credentials, so it
		 * does nothing but look up and list below rootfd, the tree
		 * proctor opened, and hand out read-only regular files; it
		 * holds no other descriptor of proctor's (no lease, lock or
		 * staging directory), and dies with proctor or when the
		 * helper's end closes. */
		close(sv[1]);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(1);
		keep_only(rootfd, sv[0]);
		serve(rootfd, sv[0]);
		_exit(0);
	}
	close(sv[0]);
	*ret_pid = pid;
	*ret_sock = sv[1];
	return 0;
}

pid_t opener_stop(pid_t pid)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	return -1;
}

/* ---- the helper's side ---- */

static int send_request(int sock, uint32_t op, uint32_t max, const char *rel, struct err *e)
{
	char req[sizeof(struct request) + OPENER_PATH_MAX];
	struct request rq = {.op = op, .max = max};
	size_t len = strlen(rel);
	ssize_t n;

	if (len > OPENER_PATH_MAX)
		return err_set(e, ENAMETOOLONG, "open");
	memcpy(req, &rq, sizeof(rq));
	memcpy(req + sizeof(rq), rel, len);
	while ((n = send(sock, req, sizeof(rq) + len, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	return n < 0 ? err_set(e, errno, "ask the opener") : 0;
}

int opener_request(int sock, const char *rel, struct opener_stat *ret_st, int *ret_fd,
		   struct err *e)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct answer a;
	struct iovec iov = {.iov_base = &a, .iov_len = sizeof(a)};
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = ctl.buf,
			   .msg_controllen = sizeof(ctl.buf)};
	int fd = -1;
	ssize_t n;

	if (send_request(sock, ret_fd ? OP_LOOKUP_FD : OP_LOOKUP, 0, rel, e) < 0)
		return -1;
	while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return err_set(e, errno, "the opener's answer");
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)) && fd < 0)
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	if (m.msg_flags & MSG_CTRUNC) {
		xclose(fd);
		return err_set(e, EMFILE, "the opener's answer: its descriptor did not fit");
	}
	if (n != (ssize_t)sizeof(a) || (m.msg_flags & MSG_TRUNC)) {
		xclose(fd);
		return err_set(e, n == 0 ? EPIPE : EPROTO, "the opener's answer");
	}
	if (a.errnum != 0) {
		xclose(fd);
		return err_set(e, a.errnum, "open");
	}
	if ((ret_fd && S_ISREG(a.mode)) != (fd >= 0)) {
		xclose(fd);
		return err_set(e, EPROTO, "the opener's answer: a descriptor %s",
			       fd >= 0 ? "not asked for" : "is missing");
	}
	ret_st->mode = a.mode;
	ret_st->size = a.size;
	if (ret_fd)
		*ret_fd = fd;
	return 0;
}

int opener_request_list(int sock, const char *rel, size_t max, opener_name_fn *fn, void *arg,
			struct err *e)
{
	char buf[sizeof(struct answer) + LIST_CHUNK + 1];
	size_t count = 0;
	int rc = 0;

	if (send_request(sock, OP_LIST, max > UINT32_MAX ? UINT32_MAX : (uint32_t)max, rel, e) < 0)
		return -1;
	/* Every answer is read, even after fn stopped, so the next request
	 * starts in step. */
	for (;;) {
		struct answer a;
		ssize_t n;

		while ((n = recv(sock, buf, sizeof(buf), 0)) < 0 && errno == EINTR)
			;
		if (n < 0)
			return err_set(e, errno, "the opener's answer");
		if (n < (ssize_t)sizeof(a))
			return err_set(e, n == 0 ? EPIPE : EPROTO, "the opener's answer");
		memcpy(&a, buf, sizeof(a));
		if (a.errnum != 0)
			return rc ? rc : err_set(e, a.errnum, "list");
		if (a.size != (size_t)n - sizeof(a) || a.size > LIST_CHUNK ||
		    (a.size && buf[n - 1] != '\0') || a.mode > LIST_MORE)
			return err_set(e, EPROTO, "the opener's list");
		for (size_t o = sizeof(a); o < (size_t)n && rc == 0;) {
			const char *name = buf + o;
			size_t len = strlen(name);
			if (len == 0 || len > 255 || strchr(name, '/') || ++count > max)
				return err_set(e, EPROTO, "the opener's list");
			rc = fn(name, arg, e);
			o += len + 1;
		}
		if (a.mode == LIST_LAST)
			return rc;
	}
}
