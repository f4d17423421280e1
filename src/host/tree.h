/* Walking a host file or directory tree that is put into a sandbox: one rule for every backend. */
#ifndef PROCTOR_HOST_TREE_H
#define PROCTOR_HOST_TREE_H

#include <sys/types.h>

#include "err.h"
#include "scratch.h" /* TREE_MAX_DEPTH */

/*
 * Where a put's entries go: the backend's side of the copy (the jail
 * writes below its scratch tree, the microVM sends P_MKDIR and P_PUT).
 * Every callback returns 0 or -1 with `e` filled; the first failure ends
 * the walk.  `rel` is the destination relative to the writable tree
 * ("work/a/b"); `host_path` is the source as the messages name it.
 */
struct tree_sink {
	void *ctx;
	/* Make the parents of the destination `rel` (called once, after the
	 * top-level source was found to be a file or a directory); may be NULL. */
	int (*parents)(void *ctx, const char *rel, struct err *e);
	/* Make the directory `rel`; its parent exists. */
	int (*dir)(void *ctx, const char *rel, struct err *e);
	/* Copy the regular file open read-only at `fd` to `rel` with `mode`
	 * (0755 when the source has any execute bit, else 0644).  The walker
	 * closes fd. */
	int (*file)(void *ctx, int fd, const char *host_path, const char *rel, mode_t mode,
		    struct err *e);
};

/*
 * Copy the host file or directory `host_path` to `rel` through `sink`.
 *
 * The rule, the same on every backend: a put copies regular files and
 * directories, and nothing else.  `host_path` itself is the caller's own
 * path and may be reached through a symlink; it must then be a regular
 * file or a directory.  Below a directory, an entry that is anything else
 * -- a symlink, a FIFO, a socket, a device -- fails the whole put with a
 * message naming it and its type; it is never followed and never opened,
 * so a FIFO cannot block the copy and a device is never touched.  So do a
 * tree deeper than TREE_MAX_DEPTH and a path longer than PATH_MAX.  These
 * refusals, and a host file or directory that cannot be opened or read,
 * are the caller's to fix (ERR_INPUT); the sink's failures keep their own
 * kind.
 * Entries are taken in directory order; what was copied before a failure
 * stays (callers throw the sandbox away).
 */
int tree_put(const char *host_path, const char *rel, const struct tree_sink *sink, struct err *e);

#endif
