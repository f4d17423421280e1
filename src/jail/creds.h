/* The jail's credentials and rlimits: what the program runs as and with. */
#ifndef PROCTOR_JAIL_CREDS_H
#define PROCTOR_JAIL_CREDS_H

#include <sys/types.h>

#include "err.h"
#include "runlimits.h"

/* Apply the per-process rlimits of a run (core 0, fsize, nofile, cpu
 * backstop, nproc backstop). */
int creds_set_rlimits(const struct limits *l, struct err *e);

/* Become uid/gid with no supplementary groups and no capabilities in any
 * set (bounding and ambient included), then set no_new_privs. */
int creds_drop(uid_t uid, gid_t gid, struct err *e);

#endif
