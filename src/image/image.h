/* System images: built from Debian packages, immutable versions, resolved by pin. */
#ifndef PROCTOR_IMAGE_IMAGE_H
#define PROCTOR_IMAGE_IMAGE_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/*
 * Layout, below the state directory (default /var/lib/proctor):
 *   images/<name>/<version>/rootfs/           the root tree the jail mounts read-only
 *   images/<name>/<version>/rootfs.squashfs   the same tree for microVMs (lz4)
 *   images/<name>/<version>/vm/{vmlinux,modules/,kernel.json}
 *                                             the microVMs' guest kernel, its modules and
 *                                             where they came from (vm/kit.h)
 *   images/<name>/<version>/image.json        name, version, digest, suite, packages, recipe digest
 *   images/<name>/<version>/build.log         mmdebstrap's output
 *   images/<name>/.lock                       flock: picking a version, removing one
 *   images/<name>/.last-version               the highest version ever given out
 *   images/<name>/.build-XXXXXX/              a build in progress (flock'd by its builder)
 *   images/<name>/failed-build.log            the log of the last failed build
 *   images/.builders/<N>.lock                 flock: build slot N, whose uid range a build uses
 * A version directory appears only complete (built under images/<name>/.build-*,
 * then renamed) and is never changed afterwards.  Version numbers are never
 * reused, not even after `image rm` of the highest one.
 */
struct image_info {
	char name[65];
	unsigned version;
	char digest[72];     /* "sha256:" + 64 hex: over the rootfs tree (paths, modes, owners,
				contents, link targets) */
	char rootfs[4096];   /* absolute path of rootfs/ */
	char squashfs[4096]; /* absolute path of rootfs.squashfs ("" for "host") */
};

/* Every function here returns 0 or -1, and e->kind says whose failure it
 * is, for the caller's exit status:
 *   ERR_USAGE         a pin that is not NAME@VERSION, sha256:HEX or host
 *   ERR_INPUT         the recipe is wrong (recipe_load)
 *   ERR_NOT_FOUND     a well-formed pin that names no image
 *   ERR_BUILD_FAILED  the build itself: mmdebstrap (an unknown package, the
 *                     mirror), a setup command of the recipe, the guest kernel
 *   ERR_UNAVAILABLE   a build without root or without its host tools
 *   ERR_BUSY          every build slot is leased
 *   ERR_INTERNAL      Proctor's own failure: a system call, the disk, a host tool */

/*
 * Build the recipe (YAML, docs/images.md) into the next version of its
 * name with mmdebstrap in unshare mode from the host's configured Debian
 * sources.  mmdebstrap runs in a user namespace of its own whose root is an
 * unprivileged host uid of a leased build slot (IMAGE_BUILD_UID_BASE in
 * image/build.h), so package scripts and the recipe's setup commands never
 * run as host root; only the extraction of the tree (owners preserved) and
 * mksquashfs run as root.  Their output goes to the version's build.log.
 * Needs root.  On failure only images/<name>/failed-build.log is left.
 */
int image_build(const char *state_dir, const char *recipe, struct image_info *ret, struct err *e);

/* Resolve a pin: "host" (ret->rootfs "/" and the host digest), "NAME@VERSION", or
 * "sha256:HEX" (the lowest NAME@VERSION with that digest).  A bare NAME is refused:
 * pin a version. */
int image_resolve(const char *state_dir, const char *pin, struct image_info *ret, struct err *e);

/* Every image version, sorted by name then version; *ret is malloc'd (free() it).
 * No images directory yet: 0 images. */
int image_list(const char *state_dir, struct image_info **ret, size_t *ret_n, struct err *e);

/* Remove NAME@VERSION (its whole directory).  Do not remove an image a
 * running sandbox uses: its files disappear under it. */
int image_remove(const char *state_dir, const char *pin, struct err *e);

/* The digest recorded for image "host": "sha256:" + hex over the installed
 * package set (/var/lib/dpkg/status) and where the main tools and
 * directories lead.  The hex is what grade.c's image_digest("host")
 * computed before this module existed. */
void image_host_digest(char ret[72]);

/* The digest of a system tree (docs/images.md, "Digest"): every entry below
 * `root`, in sorted path order, with its type, mode, owner, size and
 * contents or link target; symlinks are never followed. */
int image_tree_digest(const char *root, char ret[72], struct err *e);

#endif
