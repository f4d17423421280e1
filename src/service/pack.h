/* Packing a directory or a file into the archive a client uploads. */
#ifndef PROCTOR_SERVICE_PACK_H
#define PROCTOR_SERVICE_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Largest file packed. */
#define PACK_MAX (256ull << 20)

/*
 * The bytes to upload for `path` (malloc'd into *ret, at most `max`): an
 * existing .zip, .tar, .tar.gz or .tgz as it is; otherwise a gzip'd ustar
 * (a pax header for a name ustar cannot hold)
 * archive of the directory's tree, or of the one file under its base name.
 * Packing is deterministic (sorted names, owner root, mtime 0, modes 0644
 * or 0755, no gzip timestamp), so an unchanged directory packs to the same
 * digest and an assignment upload that changed nothing adds no version.
 * Anything but regular files and directories (a symlink, a FIFO) is
 * refused, naming it: ERR_INPUT, as is an unreadable path.
 */
int pack_path(const char *path, uint64_t max, void **ret, size_t *ret_len, struct err *e);

#endif
