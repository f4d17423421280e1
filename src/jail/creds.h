/* The jail's credentials and rlimits: what the program runs as and with. */
#ifndef PROCTOR_JAIL_CREDS_H
#define PROCTOR_JAIL_CREDS_H

#include <sys/types.h>

#include "err.h"
#include "runlimits.h"

/* Apply the per-process rlimits of a run (core 0, fsize, nofile, cpu
 * backstop, nproc backstop). */
int creds_set_rlimits(const struct limits *l, struct err *e);

/* Empty the bounding and ambient capability sets (as root, before
 * creds_drop, which refuses to run otherwise): every capability the kernel
 * has, decided from the kernel's return values alone (rawsys.h), so it is
 * safe in a process that shares its errno with another. */
int creds_drop_bounding(struct err *e);

/* Become uid/gid with no supplementary groups and no capabilities in any
 * set (the bounding and ambient ones emptied by creds_drop_bounding), then
 * set no_new_privs. */
int creds_drop(uid_t uid, gid_t gid, struct err *e);

#endif
