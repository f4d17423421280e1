/* Control groups of slots and helpers: limits, accounting and kill, on v1-hybrid, v1 or v2. */
#ifndef PROCTOR_HOST_CGROUP_H
#define PROCTOR_HOST_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "runlimits.h"

enum cgroup_layout {
	CGROUP_NONE = 0,
	CGROUP_HYBRID, /* v1 controllers + a v2 mount at /sys/fs/cgroup/unified for kill */
	CGROUP_V1,     /* v1 controllers only */
	CGROUP_V2,     /* the unified hierarchy with a delegated subtree */
};

const char *cgroup_layout_name(enum cgroup_layout l);

/* Which layout this host has, and a sentence about usable controllers. */
int cgroup_detect(enum cgroup_layout *ret, char *detail, size_t detail_len, struct err *e);

#define CGROUP_MAX_JOIN 4

/*
 * The groups of one sandbox slot.  The slot groups are permanent and reused
 * (creating and removing memory groups at a high rate leaves "dying" groups
 * behind); only the pids group of a run is created per run, because
 * pids.peak cannot be reset.  Directory fds are owned and closed by
 * cgroup_slot_close().
 */
struct cgroup_slot {
	enum cgroup_layout layout;
	unsigned index;
	int mem_fd;      /* memory group (v2: the slot group) */
	int cpu_fd;      /* cpuacct group (v2: the slot group) */
	int pids_fd;     /* pids slot group (v2: the slot group) */
	int kill_fd;     /* group with cgroup.kill (hybrid: unified slot; v2: slot), or -1 */
	int run_fd;      /* per-run pids group "run", -1 between runs */
	int run_kill_fd; /* hybrid: per-run v2 group "run" below kill_fd, made when a
			  * run's parent is cloned into it (CGROUP_RUN_CLONE_INTO), or -1 */
	int peak_fd;     /* v2 memory.peak opened for per-fd reset, or -1 */
	int watch_fd;    /* v1 eventfd signalled when usage crosses a threshold, or -1 */
	uint64_t watch_threshold; /* the charge watch_fd is armed for */
	bool reclaimed;           /* cgroup_run_reclaim() since cgroup_run_group() */
	bool watch_fired;         /* watch_fd has fired since it was armed */
	/* Counters at the start of the run, so usage is per run. */
	uint64_t cpu_base_ns, oom_base;
	uint64_t sampled_peak_bytes, sampled_peak_pids;
	uint64_t pids_limit; /* the run's pids.max, 0 before cgroup_run_begin */
	uint64_t mem_limit_bytes;
	uint64_t hard_limit_bytes; /* the group's hard limit: memory + disk */
};

/* Create or reuse the slot's groups and kill anything a dead owner left there. */
int cgroup_slot_open(struct cgroup_slot *cg, unsigned index, struct err *e);
void cgroup_slot_close(struct cgroup_slot *cg);

/*
 * Prepare one run: set limits (memory hard limit = memory + disk, because
 * tmpfs pages written by the program are charged to it), reset peaks,
 * snapshot counters, create the run's pids group, and open the files
 * the program must join by (cgroup_run_group()'s, every group included).
 * ret_fds receives up to CGROUP_MAX_JOIN O_WRONLY|O_CLOEXEC fds, owned by
 * the caller.
 */
int cgroup_run_begin(struct cgroup_slot *cg, const struct limits *l, int *ret_fds,
		     size_t *ret_nfds, struct err *e);

/* cgroup_run_begin() in two halves, for a run whose program joins its
 * groups before its limits are known (a jail started ahead, jail/jail.c):
 * the run's pids group and the fds to join by; then the limits, peaks and
 * counters, taken when the run starts.
 *
 * The fds are the groups' `tasks` on v1 hierarchies (a write there skips
 * the RCU grace period a cgroup.procs write waits for after a quiet
 * moment, but moves only the writing thread: write from a single-threaded
 * process) and cgroup.procs on v2.  With CGROUP_RUN_CLONE_INTO the caller
 * may instead place the program's parent in a group by cloning it there
 * (clone3 CLONE_INTO_CGROUP, which waits for nothing): *ret_into is then
 * that group's directory fd (the cgroup_slot's, valid until
 * cgroup_run_end()), left out of ret_fds; or -1, and every group is in
 * ret_fds.  Only a group without controllers can take the parent too: a
 * hybrid host's v2 group (its cgroup.kill and `populated`). */
#define CGROUP_RUN_CLONE_INTO 1u
int cgroup_run_group(struct cgroup_slot *cg, unsigned flags, int *ret_fds, size_t *ret_nfds,
		     int *ret_into, struct err *e);
int cgroup_run_limits(struct cgroup_slot *cg, const struct limits *l, struct err *e);
/* Page cache an earlier run of the slot read in is still charged to the
 * slot's group: reclaim it, so that a run's peak is its own (0.6 to 0.9 ms
 * on v1; skipped when under 64 KiB of it is left).  cgroup_run_limits() does it unless it was done since
 * cgroup_run_group(): nothing is charged to the group before the program
 * runs, so a caller may do it earlier, off the run's way (the jail: while
 * its init builds the root, or while a jail launched ahead is idle). */
void cgroup_run_reclaim(struct cgroup_slot *cg);

/* What the run used so far. */
struct cgroup_usage {
	uint64_t cpu_ns;
	uint64_t charged_bytes; /* everything the kernel charges to the group now */
	/* What reclaim cannot take back: anonymous memory, shared memory
	 * (tmpfs pages, the scratch tree's too) and kernel memory charged to
	 * the group (socket buffers, pipes, page tables): charged_bytes less
	 * the reclaimable page cache.  The memory check's basis. */
	uint64_t held_bytes;
	uint64_t shmem_bytes;  /* shared memory incl. tmpfs pages (the scratch tree's too) */
	uint64_t kernel_bytes; /* the kernel memory part of held_bytes; some of it (dentries,
				* inodes) can be reclaimed after all: see cgroup_reclaim() */
	uint64_t peak_bytes;
	uint64_t peak_pids;
	uint64_t oom_kills;   /* since cgroup_run_begin */
	bool pids_max_hit;
};
int cgroup_sample(struct cgroup_slot *cg, struct cgroup_usage *u, struct err *e);

/*
 * Ask the kernel to take `bytes` back from the group now, as memory
 * pressure would: page cache and reclaimable kernel memory (the dentries
 * and inodes of a program that looks up a million names).  v2 writes
 * memory.reclaim; v1, which has no such file, lowers the hard limit by
 * that much for the moment of the write (the kernel reclaims or refuses
 * with EBUSY; it never OOM-kills for a limit write) and restores it.
 * Returns 0 when the kernel reclaimed it all.
 */
int cgroup_reclaim(struct cgroup_slot *cg, uint64_t bytes);

/*
 * Arm a wake-up for when the group's charge crosses `threshold` bytes:
 * cg->watch_fd (an eventfd, replaced on each call) becomes readable then.
 * Sampling every few milliseconds lets a fast allocator run far past the
 * memory limit between two samples; the kernel checks thresholds as it
 * charges, so the supervisor samples again within a page or so of the
 * crossing.  Only v1 has usage thresholds: on v2, and wherever arming
 * fails, watch_fd is -1 and periodic sampling is the only check.
 */
void cgroup_watch_memory(struct cgroup_slot *cg, uint64_t threshold);

/* Note that watch_fd fired (and drain it), so the next cgroup_watch_memory()
 * arms a new threshold whatever the old one was. */
void cgroup_watch_fired(struct cgroup_slot *cg);

/* SIGKILL every process in the slot and wait until the groups are empty. */
int cgroup_kill_all(struct cgroup_slot *cg, struct err *e);

/*
 * SIGKILL every process in the slot, and wait until those of the run's
 * program are gone: where the program's parent was cloned into the run's
 * v2 group (CGROUP_RUN_CLONE_INTO), it is killed too but not waited for
 * (the jail's init, whose exit tears its namespaces down, a millisecond
 * that no result needs); the caller reaps it, then calls cgroup_run_end().
 * Elsewhere cgroup_kill_all().
 */
int cgroup_kill_run(struct cgroup_slot *cg, struct err *e);

/* Remove the run's groups (the slot must be empty). */
void cgroup_run_end(struct cgroup_slot *cg);

/*
 * The group proctor-helper runs in while it parses what a submission
 * produced: <hierarchy>/proctor/helper<ID> beside the slot groups, ID being
 * the sandbox's uid (unique to the sandbox while it lives).  Not inside the
 * slot: the helper's memory would count against the run's memory + disk
 * limit, and its CPU against the run's counters.  Permanent and reused, as
 * the slot groups are.  Its CPU has a quota where the host has the cpu
 * controller (v1: a cpu hierarchy; v2: "cpu" delegated), and is accounted
 * everywhere; its memory and process count are capped.
 */
struct cgroup_helper_limits {
	uint64_t cpu_quota_us, cpu_period_us; /* at most quota of CPU time per period */
	uint64_t memory_bytes;		      /* hard limit: OOM kill beyond */
	uint64_t pids;
};

struct cgroup_helper {
	struct cgroup_slot cg;	       /* layout, mem_fd, cpu_fd (accounting), pids_fd; bases */
	int quota_fd;		       /* group with the cpu controller, or -1 */
	int join_fds[CGROUP_MAX_JOIN]; /* each hierarchy's tasks (v1) or cgroup.procs, O_WRONLY */
	size_t n_join;
};

struct cgroup_helper_usage {
	uint64_t cpu_ns;    /* since cgroup_helper_open */
	uint64_t oom_kills; /* since cgroup_helper_open */
};

/* Create or reuse the group, set its limits and snapshot its counters.
 * Owned fds; release with cgroup_helper_close(). */
int cgroup_helper_open(struct cgroup_helper *h, unsigned long id,
		       const struct cgroup_helper_limits *l, struct err *e);

/* In the helper's process, between fork and exec (single-threaded, as the
 * v1 `tasks` files need: cgroup_run_group()): move itself into every
 * hierarchy's group.  Only write(2): async-signal-safe.  -1 on failure. */
int cgroup_helper_join(const struct cgroup_helper *h);

/* What the group used since cgroup_helper_open (the helper has exited). */
int cgroup_helper_usage(struct cgroup_helper *h, struct cgroup_helper_usage *ret, struct err *e);

void cgroup_helper_close(struct cgroup_helper *h);

#endif
