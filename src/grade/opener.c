/* The opener: looking up a submission's entries below the root proctor opened. */
#include "grade/opener.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/fsuid.h>
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
	/* O_NONBLOCK: a file under a write lease the student took fails at
	 * once with EWOULDBLOCK instead of holding proctor for the lease break
	 * time (45 s by default) per file; cleared below, so reads block as
	 * usual.  EWOULDBLOCK then reads as a file changing while being read. */
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
			    (S_ISDIR(st->st_mode) ? O_DIRECTORY : 0));
	if (fd < 0)
		/* A deleted file still reopens: ENOENT means no /proc, which
		 * must not pass for "the entry is gone". */
		return err_set(e,
			       errno == ENOENT	      ? EIO
			       : errno == EWOULDBLOCK ? EBUSY
						      : errno,
			       "reopen '%s' through /proc", what);
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
		xclose(fd);
		return err_set(e, errno, "reopen '%s'", what);
	}
	if (fstat(fd, &again) < 0 || again.st_dev != st->st_dev || again.st_ino != st->st_ino) {
		close(fd);
		return err_set(e, EIO, "reopen '%s': another file came back", what);
	}
	*ret_fd = fd;
	return 0;
}

/*
 * A regular file with more than one name, owned by someone else than
 * `owner` (the owner of the tree it was found in), or by root: a hard link
 * the submitter made to a file that is not theirs (`ln /etc/shadow
 * hw3/solution.py` where fs.protected_hardlinks=0).  Its name proves
 * nothing about who may read it, so it is not read.
 */
static bool foreign_hard_link(const struct stat *st, uid_t owner)
{
	return S_ISREG(st->st_mode) && st->st_nlink > 1 && (st->st_uid != owner || st->st_uid == 0);
}

/* Describe pfd and, if wanted, open it for reading when it is a regular
 * file (or also a directory, when dir_too).  With `owner` set, a hard link
 * to a file of someone else's fails with EPERM before it is opened. */
static int describe(int pfd, const char *what, bool dir_too, const uid_t *owner,
		    struct opener_stat *ret_st, int *ret_fd, struct err *e)
{
	struct stat st;
	int fd = -1;

	if (fstat(pfd, &st) < 0)
		return err_set(e, errno, "stat '%s'", what);
	/* SECURITY: the opener may read what the tree's owner could not
	 * (a root-owned tree, CAP_DAC_OVERRIDE before it drops it); a hard
	 * link is the one way to bring such a file into the tree without
	 * a symlink or a mount, which the lookup refuses. */
	if (owner && foreign_hard_link(&st, *owner))
		return err_set(e, EPERM, "'%s' is a hard link to a file of uid %lu", what,
			       (unsigned long)st.st_uid);
	if (ret_fd && (S_ISREG(st.st_mode) || (dir_too && S_ISDIR(st.st_mode))) &&
	    reopen(pfd, &st, what, &fd, e) < 0)
		return -1;
	ret_st->mode = st.st_mode;
	ret_st->size = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	ret_st->uid = st.st_uid;
	ret_st->gid = st.st_gid;
	if (ret_fd)
		*ret_fd = fd;
	return 0;
}

int opener_open_root(const char *path, struct opener_stat *ret_st, int *ret_fd, struct err *e)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	/* "hw3/" names hw3 itself: the trailing slash would make the kernel
	 * follow a symlink there, so it goes. */
	if (len >= sizeof(buf))
		return err_set(e, ENAMETOOLONG, "open '%s'", path);
	memcpy(buf, path, len + 1);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	/* The directory holding it, whose owner's hard links are the only
	 * ones taken ("/" and names ending in "." or ".." are directories,
	 * which have none). */
	char *slash = strrchr(buf, '/');
	const char *name = slash ? slash + 1 : buf;
	int parent = AT_FDCWD;
	uid_t owner;
	struct stat pst;
	if (*name && strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
		if (slash)
			*slash = '\0';
		parent = open(!slash	     ? "."
			      : slash == buf ? "/"
					     : buf,
			      O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0 || fstat(parent, &pst) < 0) {
			int saved = errno;
			if (parent >= 0)
				close(parent);
			return err_set(e, saved, "open the directory of '%s'", path);
		}
		owner = pst.st_uid;
	} else {
		name = buf;
	}
	/* O_PATH: nothing is opened for reading before its type is known.
	 * SECURITY: O_NOFOLLOW on the last component, the submission itself:
	 * the operator's way to it may go through symlinks (the operator's
	 * choice), but a symlink the submitter put at the submission's own
	 * name, to a file of anybody's, is described (S_IFLNK), not followed;
	 * and a hard link there to a file of another owner than the
	 * directory's (or root's) is refused (EPERM). */
	int pfd = openat(parent, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	int rc;

	if (pfd < 0) {
		rc = err_set(e, errno, "open '%s'", path);
		goto out_parent;
	}
	rc = describe(pfd, path, true, parent == AT_FDCWD ? NULL : &owner, ret_st, ret_fd, e);
	close(pfd);
out_parent:
	if (parent != AT_FDCWD)
		close(parent);
	return rc;
}

int opener_open_entry(int dirfd, const char *name, const struct opener_id *seen,
		      struct opener_stat *ret_st, int *ret_fd, struct err *e)
{
	struct stat dst, st;
	int pfd, rc;

	if (!*name || strchr(name, '/') || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return err_set(e, EINVAL, "open '%s': not a name in the directory", name);
	if (fstat(dirfd, &dst) < 0)
		return err_set(e, errno, "stat the directory of '%s'", name);
	/* SECURITY: the name is resolved again, in the directory scanned
	 * (dirfd, not its path, which the submitter may have changed), with
	 * no symlink and no mount crossing: an entry swapped for a symlink
	 * since the scan fails with ELOOP instead of leading root to the
	 * reference solution, another submission or a root-only file. */
	pfd = open_beneath(dirfd, name, O_PATH, 0);
	if (pfd < 0)
		return err_set(e, errno, "open '%s'", name);
	if (fstat(pfd, &st) < 0) {
		rc = err_set(e, errno, "stat '%s'", name);
		goto out_close;
	}
	if (S_ISLNK(st.st_mode)) { /* O_PATH | O_NOFOLLOW opened the link itself */
		rc = err_set(e, ELOOP, "'%s' is a symbolic link", name);
		goto out_close;
	}
	/* SECURITY: and it must be the very inode the scan saw: an entry
	 * renamed over (a directory or archive of someone else's moved in
	 * under this name) is not graded as this submission. */
	if (seen && (st.st_dev != seen->dev || st.st_ino != seen->ino)) {
		rc = err_set(e, ESTALE, "'%s' was replaced since the directory was scanned", name);
		goto out_close;
	}
	rc = describe(pfd, name, true, &dst.st_uid, ret_st, ret_fd, e);
out_close:
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

/* The owner of the tree below rootfd, whose hard links are its own. */
static int tree_owner(int rootfd, uid_t *ret_owner, struct err *e)
{
	struct stat st;

	if (fstat(rootfd, &st) < 0)
		return err_set(e, errno, "stat the submission");
	*ret_owner = st.st_uid;
	return 0;
}

int opener_lookup(int rootfd, const char *rel, struct opener_stat *ret_st, int *ret_fd,
		  struct err *e)
{
	uid_t owner;
	int pfd, rc;

	if (tree_owner(rootfd, &owner, e) < 0)
		return -1;
	pfd = open_path(rootfd, rel, e);
	if (pfd < 0)
		return -1;
	rc = describe(pfd, rel, false, &owner, ret_st, ret_fd, e);
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
	uid_t owner;
	DIR *d;

	if (tree_owner(rootfd, &owner, e) < 0)
		return -1;
	pfd = open_path(rootfd, rel, e);
	if (pfd < 0)
		return -1;
	rc = describe(pfd, rel, true, &owner, &st, &fd, e);
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
	struct iovec iov[2] = {{.iov_base = (void *)a, .iov_len = sizeof(*a)},
			       {.iov_base = (void *)extra, .iov_len = extra_len}};

	return send_with_fd(sock, iov, extra_len ? 2 : 1, fd) < 0 ? -1 : 0;
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

/*
 * In the opener: read the tree as its owner would.  The tree was opened
 * already (by proctor, through the operator's path, which may cross a 0700
 * home), and every lookup is relative to it, so no search permission above
 * it is needed, and no capability is kept.  -1 when a step fails.
 */
static int become_tree_owner(int rootfd)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct none[2] = {{0}};
	struct stat st;

	if (fstat(rootfd, &st) < 0)
		return -1;
	if (geteuid() == 0) {
		/* SECURITY: file access as the owner of the submission: root
		 * never reads through a name or a hard link in it a file its
		 * owner could not read; root's supplementary groups go too. */
		if (setgroups(0, NULL) < 0)
			return -1;
		setfsgid(st.st_gid);
		setfsuid(st.st_uid);
		if ((uid_t)setfsuid((uid_t)-1) != st.st_uid ||
		    (gid_t)setfsgid((gid_t)-1) != st.st_gid)
			return -1;
	}
	/* SECURITY: and with no capability at all (CAP_DAC_OVERRIDE and
	 * CAP_DAC_READ_SEARCH above all, which would bypass the owner's
	 * permissions), none to gain back. */
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -1;
	if (syscall(SYS_capset, &h, none) < 0)
		return -1;
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
}

int opener_start(int rootfd, pid_t *ret_pid, int *ret_sock, struct err *e)
{
	pid_t parent = getpid(), pid;
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return err_set(e, errno, "socketpair for the opener");
	pid = fork();
	if (pid < 0) {
		xclose(sv[0]);
		xclose(sv[1]);
		return err_set(e, errno, "fork the opener");
	}
	if (pid == 0) {
		/* SECURITY: this process does nothing but look up and list
		 * below rootfd, the tree proctor opened, and hand out
		 * read-only regular files, with the file access of the tree's
		 * owner and no capability; it holds no other descriptor of
		 * proctor's (no lease, lock or staging directory), and dies
		 * with proctor or when the helper's end closes. */
		close(sv[1]);
		keep_only(rootfd, sv[0]);
		if (become_tree_owner(rootfd) < 0)
			_exit(1);
		/* After the fsuid change, which clears the death signal; then
		 * make sure the parent did not die in between. */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
			_exit(1);
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
	struct request rq = {.op = op, .max = max};
	struct iovec iov[2] = {{.iov_base = &rq, .iov_len = sizeof(rq)},
			       {.iov_base = (void *)rel, .iov_len = strlen(rel)}};

	if (iov[1].iov_len > OPENER_PATH_MAX)
		return err_set(e, ENAMETOOLONG, "open");
	return send_with_fd(sock, iov, 2, -1) < 0 ? err_set(e, errno, "ask the opener") : 0;
}

int opener_request(int sock, const char *rel, struct opener_stat *ret_st, int *ret_fd,
		   struct err *e)
{
	struct answer a;
	int fd;
	ssize_t n;

	if (send_request(sock, ret_fd ? OP_LOOKUP_FD : OP_LOOKUP, 0, rel, e) < 0)
		return -1;
	n = recv_with_fd(sock, &a, sizeof(a), &fd);
	if (n < 0 && errno == EMFILE)
		return err_set(e, EMFILE, "the opener's answer: its descriptor did not fit");
	if (n < 0 && errno != EMSGSIZE)
		return err_set(e, errno, "the opener's answer");
	if (n != (ssize_t)sizeof(a)) {
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
