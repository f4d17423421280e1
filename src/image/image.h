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
 *   images/<name>/<version>/image.json        name, version, digest, suite, packages, recipe digest
 *   images/<name>/<version>/build.log         mmdebstrap's output
 * A version directory appears only complete (built under images/<name>/.build-*,
 * then renamed) and is never changed afterwards.
 */
struct image_info {
	char name[65];
	unsigned version;
	char digest[72];  /* "sha256:" + 64 hex: over the rootfs tree (paths, modes, owners, contents, link targets) */
	char rootfs[4096];    /* absolute path of rootfs/ */
	char squashfs[4096];  /* absolute path of rootfs.squashfs */
};

/*
 * Build the recipe (YAML, docs/images.md) into the next version of its
 * name with mmdebstrap in unshare mode (no host root inside the build;
 * setup commands run in the image's own user namespace), from the host's
 * configured Debian sources.  Progress goes to `log` (may be NULL).
 */
int image_build(const char *state_dir, const char *recipe, struct image_info *ret,
		struct err *e);

/* Resolve a pin: "host" (ret->rootfs "/" and the host digest), "NAME@VERSION", or
 * "sha256:HEX" (any version with that digest).  A bare NAME is refused: pin a version. */
int image_resolve(const char *state_dir, const char *pin, struct image_info *ret, struct err *e);

/* Every image version, sorted by name then version; *ret is malloc'd. */
int image_list(const char *state_dir, struct image_info **ret, size_t *ret_n, struct err *e);

/* Remove NAME@VERSION (its whole directory). */
int image_remove(const char *state_dir, const char *pin, struct err *e);

#endif
