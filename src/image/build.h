/* Image builds: mmdebstrap in namespaces of its own, with the host's apt sources retargeted. */
#ifndef PROCTOR_IMAGE_BUILD_H
#define PROCTOR_IMAGE_BUILD_H

#include <sys/types.h>

#include "err.h"
#include "image/recipe.h"

/* Host uids (and gids) of builds.  A build leases build slot N (of
 * IMAGE_BUILD_SLOTS) and maps ids 0..65535 inside its user namespace to
 * IMAGE_BUILD_UID_BASE + N * IMAGE_BUILD_IDS.. outside, so two builds at
 * once never share a uid.  Far from the sandbox slots (SANDBOX_UID_BASE,
 * 1600000000 + slot) and from the usual subuid ranges. */
#define IMAGE_BUILD_UID_BASE 1650000000u
#define IMAGE_BUILD_IDS	     65536u
#define IMAGE_BUILD_SLOTS    64u

#define IMAGE_MMDEBSTRAP "/usr/bin/mmdebstrap"
#define IMAGE_TAR	 "/usr/bin/tar"
#define IMAGE_MKSQUASHFS "/usr/bin/mksquashfs"

/*
 * Build the recipe's tree as rootfs.tar in workfd, a directory owned by
 * `base`, the host uid and gid of the build's root (its leased range);
 * the host's apt sources (retargeted at the recipe's suite) and the
 * recipe's files are copied into it first.  mmdebstrap's output goes to
 * log_fd.  Returns 0 or -1: ERR_BUILD_FAILED when mmdebstrap ran and failed
 * (e: "mmdebstrap failed: E: Unable to locate package x", its first error
 * line), else ERR_INTERNAL.
 */
int build_mmdebstrap(const struct recipe *r, int workfd, int log_fd, uid_t base, struct err *e);

#endif
