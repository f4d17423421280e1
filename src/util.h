/* Small helpers shared by every module: fds, files, time, bounded strings. */
#ifndef PROCTOR_UTIL_H
#define PROCTOR_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "err.h"

/* Steal an fd, leaving -1 behind, so an ownership transfer is visible
 * (bubblewrap's steal_fd). */
static inline int take_fd(int *fd)
{
	int v = *fd;
	*fd = -1;
	return v;
}

/* close() that keeps errno and accepts -1; returns -1 for `fd = xclose(fd)`. */
int xclose(int fd);

/* `_cleanup_close_ int fd = ...;` closes fd when it goes out of scope, so a
 * function with early returns needs no goto ladder (bubblewrap's utils.h);
 * take_fd() hands it on, `fd = xclose(fd)` closes it early. */
static inline void closep(int *fd)
{
	xclose(*fd);
}
#define _cleanup_close_ __attribute__((cleanup(closep)))

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t now_ns(void);
/* The same in milliseconds: for deadlines and timers kept in ms. */
uint64_t monotonic_ms(void);

/* CPUs this process may run on (its affinity mask), at least 1. */
unsigned cpus_available(void);

/* Write all of buf, retrying on EINTR and short writes. */
int write_all(int fd, const void *buf, size_t len);
/* write_all() for a socket: send() with MSG_NOSIGNAL (a peer gone is
 * EPIPE, never a SIGPIPE, which a threaded server or a supervisor must not
 * take), write() on anything else. */
int send_all(int fd, const void *buf, size_t len);

/* Write a short string to a (sysfs/cgroup) file relative to dirfd. */
int write_file_at(int dirfd, const char *path, const char *value, struct err *e);

/* Read at most cap-1 bytes of a small file relative to dirfd, NUL-terminated. */
int read_file_at(int dirfd, const char *path, char *buf, size_t cap, struct err *e);

/* A whole regular file below dirfd (open flags `oflags` added, e.g.
 * O_NOFOLLOW) of at most max bytes, into a malloc'd buffer with a NUL after
 * it; ret_len may be NULL.  Larger is EFBIG, anything but a regular file
 * an error. */
int read_whole_at(int dirfd, const char *path, int oflags, size_t max, char **ret, size_t *ret_len,
		  struct err *e);

/* The program `name` (proctor-helper, proctor-agent) beside the running
 * one, or in ../libexec (the installed layout), that access(2) allows
 * `amode` on: its path in buf. */
int own_program(const char *name, int amode, char *buf, size_t len, struct err *e);

/* strcmp() of two char * elements, for qsort() and bsearch(). */
int strcmp_ptr(const void *a, const void *b);

/* The names in the directory dirfd but "." and "..", sorted (strcmp), as
 * *ret_n malloc'd strings in a malloc'd array (free_names()); more than
 * max of them is E2BIG. */
int dir_names(int dirfd, size_t max, char ***ret, size_t *ret_n, struct err *e);
void free_names(char **v, size_t n);

/* Create `name` below dirfd (O_EXCL, no symlink followed) with `mode`,
 * holding len bytes of data, synced. */
int write_new_at(int dirfd, const char *name, mode_t mode, const void *data, size_t len,
		 struct err *e);

/* Parse an unsigned decimal without sign, spaces or overflow; the whole
 * string [s, s+len) must be digits. Returns 0 or -1. */
int parse_u64(const char *s, size_t len, uint64_t *ret);

/* Find "key value" on its own line in a flat-keyed stats file (memory.stat,
 * pids.events, memory.oom_control) and return value. */
int stat_field(const char *text, const char *key, uint64_t *ret);

/* mkdir -p below dirfd (no symlinks followed unless dirfd is AT_FDCWD, for
 * trusted host paths); each created dir gets mode and
 * owner uid/gid (uid (uid_t)-1 keeps root). */
int mkdir_p_at(int dirfd, const char *path, mode_t mode, uid_t uid, gid_t gid, struct err *e);

/*
 * The put rule for a parent directory (below /work or /tmp themselves) of a
 * put that is not the program's, one rule for both backends (the jail's
 * files.c, the agent's do_mkdir()).  st is the directory as it is now,
 * `created` whether this put just made it.  A protected put (root's files
 * in the program's tree) makes a parent root's and sticky, 01777, when it
 * was created now or was the program's: the program keeps adding files
 * there but can neither delete nor rename the protected ones; a parent
 * root or the harness (harness_uid) already owned is left as it is (a
 * root 0755 directory stays closed, the harness's stays the harness's).  A
 * harness put makes it root's, 0755, unless root or the harness already
 * owns it and neither group nor others may write it: nothing on the
 * harness's path or in its report directory is ever the program's to
 * write.  Returns true, with the mode (owner root:root), when the parent
 * must change.
 */
struct stat;
bool put_parent_rule(const struct stat *st, bool created, bool harness, uid_t harness_uid,
		     mode_t *mode);

/*
 * Create the regular file rel below dirfd (its parent opened with
 * open_beneath()) for writing with mode, replacing whatever that is not a
 * directory was there: a fresh inode, never a file the program made opened
 * in place (in a sticky, world-writable /work or /tmp, fs.protected_regular
 * refuses that even to root, and the program's file keeps its inode).
 * Returns the fd, or -1 with errno (EISDIR for a directory in the way).
 */
int replace_beneath(int dirfd, const char *rel, mode_t mode);

/* Whether a file name holds a control character (ASCII 0-31 or 127):
 * such names are never written on the host (sandbox.get_skipped), on
 * either backend (the jail's get, the agent's, the host's P_FILE check). */
bool name_has_control(const char *name);

/* openat2(2) confined below dirfd: no symlinks, no magic links, no
 * crossing mounts.  Returns the fd or -1 with errno set. */
int open_beneath(int dirfd, const char *path, int flags, mode_t mode);

/* sendmsg() of iov[0..n) with `fd` attached (SCM_RIGHTS) unless it is -1;
 * MSG_NOSIGNAL, retried on EINTR.  The bytes sent, or -1 with errno. */
ssize_t send_with_fd(int sock, const struct iovec *iov, size_t n, int fd);

/* The same with nfds (at most SEND_FDS_MAX; more: EINVAL) descriptors. */
#define SEND_FDS_MAX 8
ssize_t send_with_fds(int sock, const struct iovec *iov, size_t n, const int *fds, size_t nfds);

/* recvmsg() of at most len bytes, retried on EINTR; *ret_fd the descriptor
 * that came with them (SCM_RIGHTS, O_CLOEXEC), else -1.  -1 with errno
 * EMFILE when one came but did not fit, EMSGSIZE when the message was
 * longer than len; no descriptor is kept then. */
ssize_t recv_with_fd(int sock, void *buf, size_t len, int *ret_fd);

/* The same with up to max (at most SEND_FDS_MAX) descriptors into fds,
 * *nfds of them; more than max is EMFILE, and none is kept then. */
ssize_t recv_with_fds(int sock, void *buf, size_t len, int *fds, size_t max, size_t *nfds);

/* Remove everything below dirfd (not dirfd itself) without following links. */
int rm_rf_children(int dirfd, struct err *e);

/* Remove the directory `name` below dirfd and everything in it, never
 * following a symlink; a missing one is not an error. */
int rm_tree_at(int dirfd, const char *name, struct err *e);

/*
 * Whether JSON text nests arrays and objects deeper than `max`, counted on
 * the raw bytes in one pass that knows strings and escapes: for bounding a
 * parser (jansson recurses once per level) before it sees the text.
 */
bool json_nesting_exceeds(const char *s, size_t len, size_t max);

/* `prefix` then n (at most 32) random bytes in hex, into buf: a fresh,
 * unguessable name or key.  -1 with e set when buf is too small or the
 * kernel gives no randomness. */
/*
 * One CSV text cell (RFC 4180), for text a student or a submission may have
 * chosen: always quoted ("" for a quote inside); control characters become
 * spaces, so a row is one line; and a formula character (= + - @) at the
 * start of the cell or of any piece a spreadsheet's import could split off
 * (after , ; | or a tab, whichever separator it is told to use) gets an
 * apostrophe before it, so no piece is ever run as a formula.  Returns
 * what to write, malloc'd, or NULL when out of memory.
 */
char *csv_cell(const char *s);

int random_hex(char *buf, size_t cap, const char *prefix, size_t n, struct err *e);

#endif
