/* Host-wide leases: numbered identities (sandbox slots, image build slots) one process holds at a time. */
#ifndef PROCTOR_HOST_LEASE_H
#define PROCTOR_HOST_LEASE_H

#include "err.h"

/*
 * A numbered identity on this host: sandbox slot N (its uid, its cgroups
 * .../proctor/slotN, its QEMU uid) or image build slot N (its uid range).
 * Those resources are host-wide whatever --state-dir a proctor uses, so
 * the lease is host-wide too: an exclusive flock(2) on
 * HOST_LEASE_DIR/<kind>/<N>.lock.  The kernel drops it when the owner
 * dies, so "lock taken" is exactly "the previous owner is gone", and only
 * then may its debris be cleaned.  Two proctors with different state
 * directories therefore never hold the same number at once.
 */
#define HOST_LEASE_DIR "/run/proctor"

/*
 * Lease the lowest free number below max of `kind` ("slots", "builders"),
 * waiting up to wait_ms for one to come free when all are busy (another
 * proctor's sandbox ends; polled with a growing back-off up to 100 ms).
 * On success *ret_index is the number and *ret_fd the lock, owned by the
 * caller (closing it ends the lease).  Still all busy after the wait: -1
 * with errnum EBUSY, kind ERR_BUSY and a message naming the count.
 */
int host_lease(const char *kind, unsigned max, unsigned wait_ms, unsigned *ret_index, int *ret_fd,
	       struct err *e);

#endif
