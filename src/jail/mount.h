/* The jail's mounts: the sandbox's fresh root, built inside its mount namespace. */
#ifndef PROCTOR_JAIL_MOUNT_H
#define PROCTOR_JAIL_MOUNT_H

#include <sys/types.h>

#include "err.h"

struct mount_plan {
	const char *root_dir;	 /* empty directory to build the new root on */
	const char *scratch_dir; /* the slot's writable tmpfs: work/, tmp/, shm/ */
	const char *system_dir;	 /* read-only system tree: "/" = the host's /usr and friends */
	uid_t uid;		 /* the program's ("student" in /etc/passwd and /etc/group) */
	gid_t gid;
	uid_t harness_uid; /* a split run's harness ("harness") */
	gid_t harness_gid;
};

/*
 * Called by the sandbox's init (PID 1 of a new pid namespace, in a new
 * mount namespace, still root).  Builds a tmpfs root holding read-only
 * binds of the system tree, a generated minimal /etc, a minimal /dev, a
 * fresh /proc and the writable /work, /tmp and /dev/shm (and each
 * directory of the tree's SANDBOX_TREE_ROOT at /NAME), then
 * pivot_root()s into it and detaches the host's tree.  Afterwards the
 * only host paths reachable are the read-only system binds.
 */
int mount_build_root(const struct mount_plan *p, struct err *e);

/* Mount the scratch tmpfs of `bytes` on `dir` in the host namespace and
 * create work/, tmp/, shm/ and SANDBOX_TREE_ROOT/ in it. */
int mount_scratch(const char *dir, unsigned long long bytes, uid_t uid, gid_t gid, struct err *e);

#endif
