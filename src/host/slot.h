/* Sandbox slots: the identity (uid, cgroups, directory) a sandbox of either backend leases. */
#ifndef PROCTOR_HOST_SLOT_H
#define PROCTOR_HOST_SLOT_H

#include <limits.h>
#include <sys/types.h>

#include "err.h"

/*
 * A slot is the identity a sandbox borrows: an index, a uid/gid, permanent
 * cgroups and a directory <state>/slots/<index>/ holding the scratch mount
 * point (scratch/) and the new root's mount point (root/).  The uid and the
 * cgroups are host-wide, so a slot is held by a host-wide lease
 * (host/lease.h: /run/proctor/slots/<index>.lock), whatever the state
 * directory: two proctors with different state directories never get the
 * same index.  The kernel drops the lock when its owner dies, so "lock
 * acquired" is exactly "the previous owner is gone": only then is its debris
 * cleaned up.  Live slots of other proctor processes are never touched.
 */
struct slot {
	unsigned index;
	uid_t uid;
	gid_t gid;
	int lock_fd;              /* the host-wide lease */
	int dir_fd;               /* <state>/slots/<index> */
	char dir[PATH_MAX];
};

/* How long a lease waits for a slot when all are busy: a sandbox of another
 * proctor on the host (or another worker) will end; failing at once would
 * make the wait somebody's verdict. */
#define SLOT_WAIT_MS 120000u

/* Lease the first free slot of max_slots (waiting up to SLOT_WAIT_MS while
 * all are busy) and clean what a dead owner left. */
int slot_lease(const char *state_dir, unsigned max_slots, uid_t uid_base, struct slot *ret,
	       struct err *e);
/* The same, waiting at most wait_ms (0: a slot free now, or EBUSY). */
int slot_lease_within(const char *state_dir, unsigned max_slots, uid_t uid_base, unsigned wait_ms,
		      struct slot *ret, struct err *e);

/* Unmount the slot's scratch tree (all stacked mounts); idempotent. */
void slot_unmount_scratch(struct slot *s);

/* Drop the lease.  The caller has already killed and unmounted. */
void slot_release(struct slot *s);

#endif
