/* The opener: the intake helper reads a submission through descriptors proctor opened. */
#ifndef PROCTOR_GRADE_OPENER_H
#define PROCTOR_GRADE_OPENER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/*
 * The intake helper runs as a sandbox's unprivileged uid, which cannot
 * reach a submission kept below an instructor's 0700 home or mkdtemp
 * directory, nor read its 0600 files.  So the helper is never given a
 * path.  Proctor opens the submission itself (opener_open_root, by the
 * operator's path, as the shell would) and hands the helper a descriptor:
 *
 *   an archive:   the open file, which libarchive reads from the descriptor;
 *   a directory:  a socket to an opener process (opener_start), which keeps
 *                 proctor's credentials and the directory's descriptor and
 *                 answers one request at a time: "what is REL below the
 *                 root, and a read-only descriptor of it if it is a regular
 *                 file" (opener_request), "which names does directory REL
 *                 hold" (opener_request_list).
 *
 * Every answer is found with openat2() below the root descriptor,
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV, so no request,
 * and no change to the tree after proctor opened it (a symlink or mount
 * swapped in), reaches anything outside that tree.  Only regular files are
 * handed out, read-only: a device or FIFO is described, never opened, and
 * a directory is listed by the opener, never handed out, because from a
 * directory descriptor opened in proctor's mount namespace the helper
 * could walk ".." to whatever is world-searchable on the host, the slots
 * its own namespace hides included.  The helper thus gets what it could get
 * by reading the submission, and nothing else; every decision about the
 * bytes (names, allowlist, caps) stays in the helper (intake.c).
 */

/* What a lookup found. */
struct opener_stat {
	mode_t mode;   /* st_mode: the type and permission bits */
	uint64_t size; /* st_size */
	uid_t uid;     /* st_uid, st_gid (opener_open_root/_entry only; the */
	gid_t gid;     /* socket does not carry them) */
};

/* Which inode a scan of a directory found under a name. */
struct opener_id {
	dev_t dev;
	ino_t ino;
};

/* Called with each name of a listed directory ("." and ".." left out);
 * anything but 0 stops the listing with that error (e set). */
typedef int opener_name_fn(const char *name, void *arg, struct err *e);

/*
 * The submission at `path`, as the operator named it (symlinks on the way
 * followed, but not one at the submission's own name, which is described
 * as S_IFLNK), with the caller's credentials: *ret_st, and *ret_fd an
 * O_RDONLY descriptor if it is a directory or a regular file, else -1 (it
 * is not opened for reading).  The descriptor belongs to the caller.
 * EPERM when it is a hard link to a file of another owner than its
 * directory's (or of root).
 */
int opener_open_root(const char *path, struct opener_stat *ret_st, int *ret_fd, struct err *e);

/*
 * The same for entry `name` of the directory dirfd (a submission `proctor
 * class` found there), resolved with no symlink and no mount crossing:
 * ELOOP when it is a symlink by now, ESTALE when it is not the inode `seen`
 * (if not NULL) any more, EPERM when it is a hard link to a file of
 * another owner than the directory's (or root's).
 */
int opener_open_entry(int dirfd, const char *name, const struct opener_id *seen,
		      struct opener_stat *ret_st, int *ret_fd, struct err *e);

/*
 * `rel` below the directory rootfd ("" is rootfd itself) with the caller's
 * credentials, as described above: *ret_st, and if ret_fd is not NULL an
 * O_RDONLY descriptor if it is a regular file (else -1).  A symlink as the
 * last component is described (S_IFLNK), not followed.  On failure
 * e->errnum tells why: ELOOP a symlink on the way, EXDEV a mount point or
 * a path leaving the tree, ENOENT gone, EACCES not readable, EPERM a hard
 * link to a file of another owner than rootfd's (or of root), EBUSY under
 * a lease.
 */
int opener_lookup(int rootfd, const char *rel, struct opener_stat *ret_st, int *ret_fd,
		  struct err *e);

/*
 * The names in directory `rel` below rootfd, found as opener_lookup()
 * finds it, in readdir order, at most max of them, each passed to fn.
 * e->errnum as above, and ELOOP also when rel is itself a symlink,
 * ENOTDIR when it is anything else but a directory.
 */
int opener_list(int rootfd, const char *rel, size_t max, opener_name_fn *fn, void *arg,
		struct err *e);

/*
 * Fork the opener process, which answers requests below rootfd until the
 * other end of the socket is closed.  *ret_sock is that end (AF_UNIX
 * SOCK_SEQPACKET, O_CLOEXEC) for the helper; stop the process with
 * opener_stop() once the helper is done.
 */
int opener_start(int rootfd, pid_t *ret_pid, int *ret_sock, struct err *e);

/* Kill the opener by pid and reap it; accepts pid <= 0.  Returns -1, for
 * `pid = opener_stop(pid)`. */
pid_t opener_stop(pid_t pid);

/* opener_lookup() and opener_list() through the opener's socket (the
 * helper's side). */
int opener_request(int sock, const char *rel, struct opener_stat *ret_st, int *ret_fd,
		   struct err *e);
int opener_request_list(int sock, const char *rel, size_t max, opener_name_fn *fn, void *arg,
			struct err *e);

#endif
