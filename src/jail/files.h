/* The jail's put and get: moving files into and out of a sandbox's writable tree. */
#ifndef PROCTOR_JAIL_FILES_H
#define PROCTOR_JAIL_FILES_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

struct sandbox;

/*
 * Who a put's entries belong to (the put flags of sandbox.h, resolved by
 * jail_put): the owner and group, the permission bits kept of a file's
 * host mode (0755 or 0644) and of a directory's 0755, and whether the put
 * is the program's (protect false: its uid, everything kept) or not.  A
 * put that is not the program's takes every parent below "work" or "tmp"
 * for root, sticky (01777), so the program can neither delete nor rename
 * what is put; and its own directories get exactly its owner and mode,
 * even where the program made them first.
 */
struct put_owner {
	uid_t uid;
	gid_t gid;
	mode_t file_mask, dir_mask;
	bool protect;
	/* A put for the harness (its parents are sealed: files_put()); and
	 * the harness's uid, which keeps a parent of its own (any put). */
	bool harness;
	uid_t harness_uid;
};

/*
 * Copy a host file or directory tree to `rel` below scratch_fd, owned as
 * `o` says, under the put rule of tree_put() (host/tree.h): regular files
 * and directories only, anything else below a directory fails the put.
 * Destination components are opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS), so links planted by an earlier run are never
 * followed.
 */
int files_put(int scratch_fd, const char *host_path, const char *rel, const struct put_owner *o,
	      struct err *e);

/*
 * Copy the regular file `rel` below scratch_fd to host_path, at most
 * max_bytes; or, when `rel` is a directory, its tree of regular files and
 * directories (symlinks and special files skipped) into the new host
 * directory host_path, at most max_bytes in all.  A symlink, FIFO or device is refused
 * without being opened for reading (ERR_INPUT), a path that is not there is ERR_NOT_FOUND;
 * nothing outside the scratch tree can be reached. Messages name
 * the file as `shown` (the path the program sees).
 */
int files_get(struct sandbox *sb, int scratch_fd, const char *rel, const char *shown,
	      const char *host_path, uint64_t max_bytes, struct err *e);

/*
 * The entries of the directory `rel` below scratch_fd (sandbox_ops.list):
 * the directory opened with open_beneath(), each entry described by
 * fstatat(AT_SYMLINK_NOFOLLOW), names with control characters left out,
 * at most SANDBOX_LIST_MAX, sorted by name, into a malloc'd array.
 * Returns 0, 1 when entries were left out for the cap, -1 on failure.
 */
struct sandbox_dirent;
int files_list(int scratch_fd, const char *rel, const char *shown, struct sandbox_dirent **ret,
	       size_t *ret_n, struct err *e);

/*
 * Remove the entry `rel` below scratch_fd (sandbox_ops.remove): a file, a
 * symlink (itself, never its target), a special file, an empty directory,
 * or with `recursive` a whole tree (nothing below it followed).  Its
 * parent is opened with open_beneath(); a link on the way is ERR_INPUT, a
 * path not there ERR_NOT_FOUND, a top of the tree ("work") ERR_INPUT.
 */
int files_remove(int scratch_fd, const char *rel, const char *shown, bool recursive, struct err *e);

#endif
