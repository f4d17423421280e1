/* The state directory and its subdirectories, made on first use with the modes sandboxes need. */
#ifndef PROCTOR_HOST_STATEDIR_H
#define PROCTOR_HOST_STATEDIR_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

/*
 * Make sure `state_dir` exists (created 0711: slot uids and QEMU's uid must
 * traverse it to reach their own subdirectories, nobody may list it) and
 * that the path `sub` below it exists with `mode` for every directory this
 * call creates (exact modes, whatever the umask; existing ones are kept).
 * An existing root-owned state directory others cannot traverse (mkdtemp's
 * 0700) gets the traverse bits added; one that is not root's, or that
 * anyone but root can write, is refused with a message naming it.  `sub` may be
 * NULL or "" for the state directory alone, or several components
 * ("vm/snapshots").  The full path is written to ret (cap bytes).
 */
int state_subdir(const char *state_dir, const char *sub, mode_t mode, char *ret, size_t cap,
		 struct err *e);

#endif
