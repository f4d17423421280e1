/* The writable tree's shape and when it counts as full: shared by the jail and the guest agent. */
#ifndef PROCTOR_SCRATCH_H
#define PROCTOR_SCRATCH_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The writable tree (/work, /tmp, /dev/shm) is one tmpfs of `--disk` bytes,
 * on the host (jail/mount.c: mount_scratch) and in a guest (agent/agent.c:
 * P_SETUP).  Header-only: the static guest agent links nothing of the
 * host's, and both sides must agree, or one program fills the disk on one
 * backend and not on the other.
 */

/* How deep a directory tree put into or taken out of the writable tree
 * (host/tree.c, jail/files.c, the agent), or a submission (grade/intake.c),
 * may nest: one bound for every walk over such trees. */
#define TREE_MAX_DEPTH 64

/* Free space below which the tree counts as full (the `disk` limit): a
 * program that filled it to within a few pages met the limit. */
#define SCRATCH_FULL_BYTES (64u * 1024)

/* How many files and directories the tree may hold: one per 2 KiB of
 * --disk, at least 8192 and at most 2^20. */
static inline uint64_t scratch_inodes(uint64_t disk_bytes)
{
	uint64_t n = disk_bytes / 2048;

	if (n < 8192)
		n = 8192;
	if (n > (1ull << 20))
		n = 1ull << 20;
	return n;
}

/* Whether the tree is full: almost no space, or no inode left. */
static inline bool scratch_full(uint64_t avail_bytes, uint64_t avail_inodes)
{
	return avail_bytes < SCRATCH_FULL_BYTES || avail_inodes == 0;
}

#endif
