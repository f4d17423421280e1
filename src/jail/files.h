/* The jail's files: copying them into and out of a sandbox's writable tree. */
#ifndef PROCTOR_JAIL_FILES_H
#define PROCTOR_JAIL_FILES_H

#include <stdint.h>
#include <sys/types.h>

#include "err.h"

/*
 * Copy a host file or directory tree to `rel` below scratch_fd, owned by
 * uid/gid, under the put rule of tree_put() (host/tree.h): regular files
 * and directories only, anything else below a directory fails the put.
 * Destination components are opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), so links planted by an earlier run are never
 * followed.
 */
int files_put(int scratch_fd, const char *host_path, const char *rel, uid_t uid, gid_t gid,
	      struct err *e);

/*
 * Copy the regular file `rel` below scratch_fd to host_path, at most
 * max_bytes; or, when `rel` is a directory, its tree of regular files and
 * directories (symlinks and special files skipped) into the new host
 * directory host_path, at most max_bytes in all.  A symlink, directory, FIFO or device is refused without being
 * opened for reading; nothing outside the scratch tree can be reached.
 * Messages name the file as `shown` (the path the program sees).
 */
int files_get(int scratch_fd, const char *rel, const char *shown, const char *host_path,
	      uint64_t max_bytes, struct err *e);

#endif
