/* Process Isolator -- control groups: per-slot limits, accounting and kill, v1-hybrid or v2. */
#ifndef PROCTOR_JAIL_CGROUP_H
#define PROCTOR_JAIL_CGROUP_H

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
	int peak_fd;     /* v2 memory.peak opened for per-fd reset, or -1 */
	/* Counters at the start of the run, so usage is per run. */
	uint64_t cpu_base_ns, oom_base;
	uint64_t sampled_peak_bytes, sampled_peak_pids;
	uint64_t mem_limit_bytes;
};

/* Create or reuse the slot's groups and kill anything a dead owner left there. */
int cgroup_slot_open(struct cgroup_slot *cg, unsigned index, struct err *e);
void cgroup_slot_close(struct cgroup_slot *cg);

/*
 * Prepare one run: set limits (memory hard limit = memory + disk, because
 * tmpfs pages written by the program are charged to it), reset peaks,
 * snapshot counters, create the run's pids group, and open the
 * cgroup.procs files the program must join.  ret_fds receives up to
 * CGROUP_MAX_JOIN O_WRONLY|O_CLOEXEC fds, owned by the caller.
 */
int cgroup_run_begin(struct cgroup_slot *cg, const struct limits *l, int *ret_fds,
		     size_t *ret_nfds, struct err *e);

/* What the run used so far. */
struct cgroup_usage {
	uint64_t cpu_ns;
	uint64_t anon_bytes;  /* anonymous memory, for the soft memory check */
	uint64_t shmem_bytes; /* shared memory incl. tmpfs pages (the scratch tree's too) */
	uint64_t peak_bytes;
	uint64_t peak_pids;
	uint64_t oom_kills;   /* since cgroup_run_begin */
	bool pids_max_hit;
};
int cgroup_sample(struct cgroup_slot *cg, struct cgroup_usage *u, struct err *e);

/* SIGKILL every process in the slot and wait until the groups are empty. */
int cgroup_kill_all(struct cgroup_slot *cg, struct err *e);

/* Remove the run's pids group (the slot must be empty). */
void cgroup_run_end(struct cgroup_slot *cg);

#endif
