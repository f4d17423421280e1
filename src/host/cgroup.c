/* Control groups of slots and helpers: limits, accounting and kill, on v1-hybrid, v1 or v2. */
#include "host/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rawsys.h"
#include "util.h"

#define CG_ROOT "/sys/fs/cgroup"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

const char *cgroup_layout_name(enum cgroup_layout l)
{
	switch (l) {
	case CGROUP_HYBRID:
		return "hybrid (v1 controllers, v2 at " CG_ROOT "/unified)";
	case CGROUP_V1:
		return "v1";
	case CGROUP_V2:
		return "v2 (unified)";
	case CGROUP_NONE:
		break;
	}
	return "none";
}

static bool is_cgroup2(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

static bool exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/* The v2 group Proctor manages: the delegated group we were started in. */
static int v2_base(char *buf, size_t len, struct err *e)
{
	char text[4096];
	char *p, *nl;

	if (read_file_at(AT_FDCWD, "/proc/self/cgroup", text, sizeof(text), e) < 0)
		return -1;
	p = strstr(text, "0::");
	if (!p)
		return err_set(e, 0, "no v2 entry in /proc/self/cgroup");
	p += 3;
	nl = strchr(p, '\n');
	if (nl)
		*nl = '\0';
	/* A second proctor started in the same service group finds the first
	 * one's leaf; manage the service group itself. */
	size_t plen = strlen(p);
	if (plen >= 11 && strcmp(p + plen - 11, "/supervisor") == 0)
		p[plen - 11] = '\0';
	if (strcmp(p, "/") == 0)
		p[0] = '\0';
	if ((size_t)snprintf(buf, len, CG_ROOT "%s", p) >= len)
		return err_set(e, ENAMETOOLONG, "cgroup path");
	return 0;
}

int cgroup_detect(enum cgroup_layout *ret, char *detail, size_t detail_len, struct err *e)
{
	char base[4096], ctl[512] = "";

	if (is_cgroup2(CG_ROOT)) {
		if (v2_base(base, sizeof(base), e) < 0)
			return -1;
		char path[4200];
		snprintf(path, sizeof(path), "%s/cgroup.controllers", base);
		struct err ignored;
		if (read_file_at(AT_FDCWD, path, ctl, sizeof(ctl), &ignored) < 0)
			ctl[0] = '\0';
		ctl[strcspn(ctl, "\n")] = '\0';
		if (!strstr(ctl, "memory") || !strstr(ctl, "pids"))
			return err_set(e, 0,
				       "cgroup v2: '%s' does not delegate the memory and pids "
				       "controllers (has: '%s')",
				       base, ctl);
		snprintf(detail, detail_len, "managing %s; controllers: %s", base, ctl);
		*ret = CGROUP_V2;
		return 0;
	}
	static const char *const need[] = {"memory", "pids", "cpuacct"};
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		char path[128];
		snprintf(path, sizeof(path), CG_ROOT "/%s/cgroup.procs", need[i]);
		if (!exists(path))
			return err_set(e, 0, "cgroup v1: controller '%s' is not mounted at %s/%s",
				       need[i], CG_ROOT, need[i]);
	}
	bool unified = is_cgroup2(CG_ROOT "/unified");
	snprintf(detail, detail_len, "v1 memory, pids, cpuacct%s%s",
		 exists(CG_ROOT "/memory/memory.memsw.limit_in_bytes") ? " (with swap accounting)"
								       : "",
		 unified ? "; v2 at " CG_ROOT "/unified for cgroup.kill"
			 : "; no v2 mount: kill by walking cgroup.procs");
	*ret = unified ? CGROUP_HYBRID : CGROUP_V1;
	return 0;
}

/* Create or reuse <parent>/proctor/<leaf>; its directory fd. */
static int open_leaf(const char *parent, const char *leaf, struct err *e)
{
	char path[4300];
	int fd;

	snprintf(path, sizeof(path), "%s/proctor/%s", parent, leaf);
	if (mkdir_p_at(AT_FDCWD, path, 0755, (uid_t)-1, 0, e) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set(e, errno, "open cgroup '%s'", path);
	return fd;
}

static int open_group(const char *parent, unsigned index, struct err *e)
{
	char leaf[32];

	snprintf(leaf, sizeof(leaf), "slot%u", index);
	return open_leaf(parent, leaf, e);
}

/* Move every process listed in dirfd's cgroup.procs into `dest` (a
 * cgroup.procs path below dirfd), until none is left: processes may fork
 * while we move them. */
static int v2_empty_into(int dirfd, const char *dest, struct err *e)
{
	char procs[8192];

	for (int round = 0; round < 100; round++) {
		struct err ignored;
		bool moved = false;

		if (read_file_at(dirfd, "cgroup.procs", procs, sizeof(procs), e) < 0)
			return -1;
		char *save = NULL;
		for (char *pid = strtok_r(procs, "\n", &save); pid;
		     pid = strtok_r(NULL, "\n", &save))
			/* A process that exited meanwhile is ESRCH: fine. */
			if (write_file_at(dirfd, dest, pid, &ignored) == 0)
				moved = true;
		if (!moved)
			return 0;
	}
	return err_set(e, EBUSY, "processes keep appearing");
}

/* v2: make `base` able to hand memory/pids/cpu to children.  A group with
 * processes in it cannot, so proctor moves itself into a leaf first. */
static int v2_prepare(const char *base, unsigned index, int *ret_slot, struct err *e)
{
	char path[4400], procs[64];
	struct err ignored;
	int base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC), slot_fd;

	if (base_fd < 0)
		return err_set(e, errno, "open cgroup '%s'", base);
	if (strcmp(base, CG_ROOT) != 0 &&
	    read_file_at(base_fd, "cgroup.procs", procs, sizeof(procs), &ignored) == 0 &&
	    procs[0] != '\0') {
		if (mkdirat(base_fd, "supervisor", 0755) < 0 && errno != EEXIST) {
			close(base_fd);
			return err_set(e, errno, "mkdir '%s/supervisor'", base);
		}
		/* Every process of the base, not just proctor: a group with
		 * processes cannot enable controllers for its children (the
		 * "no internal processes" rule), and the service that started
		 * proctor (a shell, a test driver) lives there too.  Found by
		 * running the jail's suite in a pure v2 guest. */
		if (v2_empty_into(base_fd, "supervisor/cgroup.procs", e) < 0) {
			close(base_fd);
			return err_wrap(e, "move the processes of '%s' into '%s/supervisor'", base,
					base);
		}
	}
	if (write_file_at(base_fd, "cgroup.subtree_control", "+memory +pids", e) < 0) {
		close(base_fd);
		return err_wrap(e, "enable memory and pids below '%s' (is it delegated?)", base);
	}
	write_file_at(base_fd, "cgroup.subtree_control", "+cpu", &ignored);
	close(base_fd);
	snprintf(path, sizeof(path), "%s/proctor", base);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return err_set(e, errno, "mkdir '%s'", path);
	snprintf(path, sizeof(path), "%s/proctor/cgroup.subtree_control", base);
	if (write_file_at(AT_FDCWD, path, "+memory +pids", e) < 0)
		return err_wrap(e, "enable memory and pids below '%s/proctor'", base);
	write_file_at(AT_FDCWD, path, "+cpu", &ignored);
	slot_fd = open_group(base, index, e);
	if (slot_fd < 0)
		return -1;
	/* The run's leaf gets its own pids counters; memory stays on the slot. */
	if (write_file_at(slot_fd, "cgroup.subtree_control", "+pids", e) < 0) {
		close(slot_fd);
		return err_wrap(e, "enable pids below slot %u", index);
	}
	*ret_slot = slot_fd;
	return 0;
}

int cgroup_slot_open(struct cgroup_slot *cg, unsigned index, struct err *e)
{
	char detail[512];

	*cg = (struct cgroup_slot){.index = index,
				   .mem_fd = -1,
				   .cpu_fd = -1,
				   .pids_fd = -1,
				   .kill_fd = -1,
				   .run_fd = -1,
				   .run_kill_fd = -1,
				   .peak_fd = -1,
				   .watch_fd = -1};
	if (cgroup_detect(&cg->layout, detail, sizeof(detail), e) < 0)
		return -1;
	if (cg->layout == CGROUP_V2) {
		char base[4096];
		int fd = -1;
		if (v2_base(base, sizeof(base), e) < 0 || v2_prepare(base, index, &fd, e) < 0)
			return -1;
		cg->mem_fd = fd;
		cg->cpu_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		cg->pids_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		cg->kill_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	} else {
		if ((cg->mem_fd = open_group(CG_ROOT "/memory", index, e)) < 0 ||
		    (cg->cpu_fd = open_group(CG_ROOT "/cpuacct", index, e)) < 0 ||
		    (cg->pids_fd = open_group(CG_ROOT "/pids", index, e)) < 0)
			goto out_close;
		if (cg->layout == CGROUP_HYBRID &&
		    (cg->kill_fd = open_group(CG_ROOT "/unified", index, e)) < 0)
			goto out_close;
	}
	/* A dead owner may have left processes or a run group behind. */
	if (cgroup_kill_all(cg, e) < 0)
		goto out_close;
	if ((unlinkat(cg->pids_fd, "run", AT_REMOVEDIR) < 0 && errno != ENOENT) ||
	    (cg->layout == CGROUP_HYBRID && unlinkat(cg->kill_fd, "run", AT_REMOVEDIR) < 0 &&
	     errno != ENOENT)) {
		err_set(e, errno, "remove stale run group of slot %u", index);
		goto out_close;
	}
	return 0;
out_close:
	cgroup_slot_close(cg);
	return -1;
}

void cgroup_slot_close(struct cgroup_slot *cg)
{
	xclose(cg->mem_fd);
	xclose(cg->cpu_fd);
	xclose(cg->pids_fd);
	xclose(cg->kill_fd);
	xclose(cg->run_fd);
	xclose(cg->run_kill_fd);
	xclose(cg->peak_fd);
	xclose(cg->watch_fd);
	cg->mem_fd = cg->cpu_fd = cg->pids_fd = cg->kill_fd = cg->run_fd = cg->peak_fd = -1;
	cg->run_kill_fd = cg->watch_fd = -1;
}

static int read_u64_at(int dirfd, const char *file, uint64_t *ret, struct err *e)
{
	char buf[64];

	if (read_file_at(dirfd, file, buf, sizeof(buf), e) < 0)
		return -1;
	if (parse_u64(buf, strcspn(buf, "\n"), ret) < 0)
		return err_set(e, 0, "unexpected content in '%s'", file);
	return 0;
}

static int read_field_at(int dirfd, const char *file, const char *key, uint64_t *ret, struct err *e)
{
	char buf[8192];

	if (read_file_at(dirfd, file, buf, sizeof(buf), e) < 0)
		return -1;
	if (stat_field(buf, key, ret) < 0)
		return err_set(e, 0, "no '%s' in '%s'", key, file);
	return 0;
}

static int read_cpu_ns(struct cgroup_slot *cg, uint64_t *ret, struct err *e)
{
	if (cg->layout != CGROUP_V2)
		return read_u64_at(cg->cpu_fd, "cpuacct.usage", ret, e);
	uint64_t usec;
	if (read_field_at(cg->cpu_fd, "cpu.stat", "usage_usec", &usec, e) < 0)
		return -1;
	*ret = usec * 1000;
	return 0;
}

static int read_oom_kills(struct cgroup_slot *cg, uint64_t *ret, struct err *e)
{
	if (cg->layout == CGROUP_V2)
		return read_field_at(cg->mem_fd, "memory.events", "oom_kill", ret, e);
	return read_field_at(cg->mem_fd, "memory.oom_control", "oom_kill", ret, e);
}

/* Page cache left charged to a slot's group below which a run does not
 * reclaim it: at most this much of an earlier run in the next one's peak. */
#define RECLAIM_MIN_BYTES (64u << 10)

void cgroup_run_reclaim(struct cgroup_slot *cg)
{
	struct err ignored;
	char stat[8192];
	uint64_t cache = 0, shmem = 0;

	/* The write costs 0.6 to 0.9 ms however little there is to give back
	 * (the kernel drains every CPU's page lists first), and a slot's group
	 * mostly holds a few pages of cache or none: reclaimed only when
	 * there is more. */
	cg->reclaimed = true;
	if (read_file_at(cg->mem_fd, "memory.stat", stat, sizeof(stat), &ignored) == 0 &&
	    stat_field(stat, cg->layout == CGROUP_V2 ? "file" : "total_cache", &cache) == 0) {
		stat_field(stat, cg->layout == CGROUP_V2 ? "shmem" : "total_shmem", &shmem);
		if (cache < shmem + RECLAIM_MIN_BYTES)
			return;
	}
	if (cg->layout == CGROUP_V2)
		write_file_at(cg->mem_fd, "memory.reclaim", "1G", &ignored);
	else
		write_file_at(cg->mem_fd, "memory.force_empty", "0", &ignored);
}

int cgroup_run_limits(struct cgroup_slot *cg, const struct limits *l, struct err *e)
{
	char val[32];
	struct err ignored;

	/*
	 * SECURITY: the memory hard limit covers the program's memory plus the
	 * writable tmpfs (its pages are charged to the writer's group), so a
	 * full disk is ENOSPC rather than an OOM kill; the program's own
	 * anonymous memory is held to the memory limit by the supervisor's
	 * sampling (jail/jail.c), and never exceeds memory + disk.
	 */
	cg->mem_limit_bytes = l->memory_bytes;
	cg->hard_limit_bytes = l->memory_bytes + l->disk_bytes;
	snprintf(val, sizeof(val), "%llu", (unsigned long long)(l->memory_bytes + l->disk_bytes));
	if (!cg->reclaimed)
		cgroup_run_reclaim(cg);
	if (cg->layout == CGROUP_V2) {
		if (write_file_at(cg->mem_fd, "memory.max", val, e) < 0)
			return err_wrap(e, "set memory limit");
		if (write_file_at(cg->mem_fd, "memory.swap.max", "0", e) < 0 && e->errnum != ENOENT)
			return err_wrap(e, "disable swap");
		write_file_at(cg->mem_fd, "memory.oom.group", "1", &ignored);
		xclose(cg->peak_fd);
		cg->peak_fd = openat(cg->mem_fd, "memory.peak", O_RDWR | O_CLOEXEC);
		if (cg->peak_fd >= 0 && write(cg->peak_fd, "reset\n", 6) < 0)
			cg->peak_fd = xclose(cg->peak_fd); /* kernel < 6.12: sample instead */
	} else {
		/* memsw must stay >= limit: raise memsw first when growing. */
		write_file_at(cg->mem_fd, "memory.memsw.limit_in_bytes", "-1", &ignored);
		if (write_file_at(cg->mem_fd, "memory.limit_in_bytes", val, e) < 0)
			return err_wrap(e, "set memory limit");
		if (faccessat(cg->mem_fd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0 &&
		    write_file_at(cg->mem_fd, "memory.memsw.limit_in_bytes", val, e) < 0)
			return err_wrap(e, "set memory+swap limit");
		if (write_file_at(cg->mem_fd, "memory.max_usage_in_bytes", "0", e) < 0)
			return err_wrap(e, "reset peak memory");
	}
	if (read_cpu_ns(cg, &cg->cpu_base_ns, e) < 0 || read_oom_kills(cg, &cg->oom_base, e) < 0)
		return -1;
	cg->sampled_peak_bytes = cg->sampled_peak_pids = 0;
	snprintf(val, sizeof(val), "%llu", (unsigned long long)l->pids);
	if (cg->run_fd < 0)
		return err_set(e, 0, "slot %u has no run group", cg->index);
	if (write_file_at(cg->run_fd, "pids.max", val, e) < 0)
		return err_wrap(e, "set pids limit");
	cg->pids_limit = l->pids;
	return 0;
}

/*
 * The file a process writes "0" into to join the group of dirfd.  On a v1
 * hierarchy `tasks`: it moves only the writing thread, and the kernel then
 * skips the global cgroup_threadgroup_rwsem, whose write side waits for an
 * RCU grace period unless another migration happened within the last one
 * (7 to 10 ms on the development host, 0.03 ms through `tasks`).  So the
 * writer must be single-threaded (a fork child before exec, the jail's
 * program stub): then the thread is the whole process.  A v2 group only
 * takes whole processes, through cgroup.procs.
 */
static const char *join_file(const struct cgroup_slot *cg, int dirfd)
{
	return cg->layout != CGROUP_V2 && dirfd != cg->kill_fd ? "tasks" : "cgroup.procs";
}

int cgroup_run_group(struct cgroup_slot *cg, unsigned flags, int *ret_fds, size_t *ret_nfds,
		     int *ret_into, struct err *e)
{
	size_t n = 0;
	int fds[CGROUP_MAX_JOIN];

	*ret_into = -1;
	cg->reclaimed = false;
	if (mkdirat(cg->pids_fd, "run", 0755) < 0)
		return err_set(e, errno, "create run group of slot %u", cg->index);
	cg->run_fd = openat(cg->pids_fd, "run", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cg->run_fd < 0)
		return err_set(e, errno, "open run group");
	/*
	 * A hybrid host's v2 group has no controllers, so the program's
	 * parent may be in it too: it is cloned into a group of the run's
	 * own below the slot's.  Its own, made now, because a clone into a
	 * group that has ever been killed through cgroup.kill is killed at
	 * birth by the kernels this was written on (6.18: the clone compares
	 * the group's count of kills with the parent's own group's); the
	 * slot's cgroup.kill still reaches it.
	 */
	if ((flags & CGROUP_RUN_CLONE_INTO) && cg->layout == CGROUP_HYBRID) {
		if (mkdirat(cg->kill_fd, "run", 0755) < 0)
			return err_set(e, errno, "create the v2 run group of slot %u", cg->index);
		cg->run_kill_fd = openat(cg->kill_fd, "run", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (cg->run_kill_fd < 0)
			return err_set(e, errno, "open the v2 run group");
	}

	/* The program joins every hierarchy it is accounted in, but the one
	 * its parent was cloned into. */
	int dirs[CGROUP_MAX_JOIN] = {cg->run_fd, -1, -1, -1};
	size_t ndirs = 1;
	if (cg->layout != CGROUP_V2) {
		dirs[ndirs++] = cg->mem_fd;
		dirs[ndirs++] = cg->cpu_fd;
		if (cg->kill_fd >= 0 && cg->run_kill_fd < 0)
			dirs[ndirs++] = cg->kill_fd;
	}
	for (size_t i = 0; i < ndirs; i++) {
		fds[n] = openat(dirs[i], join_file(cg, dirs[i]), O_WRONLY | O_CLOEXEC);
		if (fds[n] < 0) {
			int saved = errno;
			while (n > 0)
				close(fds[--n]);
			return err_set(e, saved, "open the run group's %s", join_file(cg, dirs[i]));
		}
		n++;
	}
	memcpy(ret_fds, fds, n * sizeof(int));
	*ret_nfds = n;
	*ret_into = cg->run_kill_fd;
	return 0;
}

int cgroup_run_begin(struct cgroup_slot *cg, const struct limits *l, int *ret_fds, size_t *ret_nfds,
		     struct err *e)
{
	int into;

	if (cgroup_run_group(cg, 0, ret_fds, ret_nfds, &into, e) < 0)
		return -1;
	if (cgroup_run_limits(cg, l, e) == 0)
		return 0;
	while (*ret_nfds > 0)
		close(ret_fds[--*ret_nfds]);
	return -1;
}

int cgroup_sample(struct cgroup_slot *cg, struct cgroup_usage *u, struct err *e)
{
	uint64_t v;
	struct err ignored;
	char stat[8192];

	*u = (struct cgroup_usage){0};
	if (read_cpu_ns(cg, &v, e) < 0)
		return -1;
	u->cpu_ns = v > cg->cpu_base_ns ? v - cg->cpu_base_ns : 0;
	if (read_oom_kills(cg, &v, e) < 0)
		return -1;
	u->oom_kills = v - cg->oom_base;

	if (read_file_at(cg->mem_fd, "memory.stat", stat, sizeof(stat), e) < 0)
		return -1;
	/* v2's "file" and v1's "total_cache" both include shmem. */
	uint64_t cache = 0, cur = 0;
	if (stat_field(stat, cg->layout == CGROUP_V2 ? "file" : "total_cache", &cache) < 0)
		cache = 0;
	if (stat_field(stat, cg->layout == CGROUP_V2 ? "shmem" : "total_shmem", &u->shmem_bytes) <
	    0)
		u->shmem_bytes = 0;
	if (read_u64_at(cg->mem_fd,
			cg->layout == CGROUP_V2 ? "memory.current" : "memory.usage_in_bytes", &cur,
			e) < 0)
		return -1;
	uint64_t anon = 0;
	if (stat_field(stat, cg->layout == CGROUP_V2 ? "anon" : "total_rss", &anon) < 0)
		anon = 0;
	uint64_t reclaimable = cache > u->shmem_bytes ? cache - u->shmem_bytes : 0;
	u->charged_bytes = cur;
	u->held_bytes = cur > reclaimable ? cur - reclaimable : 0;
	u->kernel_bytes = u->held_bytes > anon + u->shmem_bytes
			      ? u->held_bytes - anon - u->shmem_bytes
			      : 0;
	if (cur > cg->sampled_peak_bytes)
		cg->sampled_peak_bytes = cur;
	if (cg->layout != CGROUP_V2) {
		if (read_u64_at(cg->mem_fd, "memory.max_usage_in_bytes", &u->peak_bytes, e) < 0)
			return -1;
	} else if (cg->peak_fd >= 0) {
		char buf[64];
		ssize_t r = pread(cg->peak_fd, buf, sizeof(buf) - 1, 0);
		if (r > 0 && parse_u64(buf, strcspn(buf, "\n"), &v) == 0)
			u->peak_bytes = v;
	}
	if (u->peak_bytes < cg->sampled_peak_bytes)
		u->peak_bytes = cg->sampled_peak_bytes;

	if (cg->run_fd >= 0) {
		/* A fork the limit refuses is counted, then taken back: a
		 * sample of pids.current can catch the count one or more
		 * above pids.max for that moment.  No process ever ran past
		 * the limit, so the peak is at most the limit. */
		if (read_u64_at(cg->run_fd, "pids.current", &cur, &ignored) == 0) {
			if (cg->pids_limit && cur > cg->pids_limit)
				cur = cg->pids_limit;
			if (cur > cg->sampled_peak_pids)
				cg->sampled_peak_pids = cur;
		}
		if (read_u64_at(cg->run_fd, "pids.peak", &v, &ignored) == 0 &&
		    v > cg->sampled_peak_pids)
			cg->sampled_peak_pids = v;
		if (read_field_at(cg->run_fd, "pids.events", "max", &v, &ignored) == 0)
			u->pids_max_hit = v > 0;
	}
	u->peak_pids = cg->sampled_peak_pids;
	return 0;
}

/* `events`: the kill group's cgroup.events, open (reading it from that
 * descriptor re-arms its poll()), or -1. */
static bool group_empty(struct cgroup_slot *cg, int events)
{
	char buf[256];
	struct err ignored;
	uint64_t populated;
	ssize_t n;

	if (events >= 0 && (n = pread(events, buf, sizeof(buf) - 1, 0)) > 0) {
		buf[n] = '\0';
		if (stat_field(buf, "populated", &populated) == 0)
			return populated == 0;
	}
	/* v1 only: the memory group holds every process of the sandbox. */
	if (read_file_at(cg->mem_fd, "cgroup.procs", buf, sizeof(buf), &ignored) < 0)
		return false;
	return buf[0] == '\0';
}

/* v1 without a v2 mount: kill what cgroup.procs lists until nothing is left. */
static void kill_listed(struct cgroup_slot *cg)
{
	char buf[65536];
	struct err ignored;

	if (read_file_at(cg->mem_fd, "cgroup.procs", buf, sizeof(buf), &ignored) < 0)
		return;
	for (char *p = buf; *p;) {
		size_t len = strcspn(p, "\n");
		uint64_t pid;
		if (parse_u64(p, len, &pid) == 0 && pid > 1)
			kill((pid_t)pid, SIGKILL);
		p += len + (p[len] == '\n');
	}
}

int cgroup_kill_all(struct cgroup_slot *cg, struct err *e)
{
	struct timespec tick = {0, 1000000};
	struct err ignored;
	/* With a v2 group the kernel says when it empties: poll() of its
	 * cgroup.events wakes at the change, where a 1 ms tick made every
	 * run's teardown wait a millisecond it did not need. */
	int events =
	    cg->kill_fd >= 0 ? openat(cg->kill_fd, "cgroup.events", O_RDONLY | O_CLOEXEC) : -1;

	for (int i = 0; i < 5000; i++) {
		if (group_empty(cg, events)) {
			xclose(events);
			return 0;
		}
		if (cg->kill_fd >= 0) {
			if (i % 100 == 0 &&
			    write_file_at(cg->kill_fd, "cgroup.kill", "1", &ignored) < 0)
				kill_listed(cg);
		} else {
			kill_listed(cg);
		}
		struct pollfd p = {.fd = events, .events = POLLPRI};
		if (events < 0 || poll(&p, 1, 1) < 0)
			nanosleep(&tick, NULL);
	}
	xclose(events);
	return err_set(e, 0, "processes of slot %u survived SIGKILL for 5 s", cg->index);
}

int cgroup_kill_run(struct cgroup_slot *cg, struct err *e)
{
	struct timespec tick = {0, 200000};
	struct err ignored;
	char buf[64];

	if (cg->run_kill_fd < 0)
		return cgroup_kill_all(cg, e);
	/* The v1 memory group holds the program's processes and not the
	 * parent (cloned into the v2 group only): empty once they are gone,
	 * which cgroup.kill (the v2 group holds them too) sees to. */
	for (int i = 0; i < 25000; i++) {
		if (i % 500 == 0)
			write_file_at(cg->kill_fd, "cgroup.kill", "1", &ignored);
		if (read_file_at(cg->mem_fd, "cgroup.procs", buf, sizeof(buf), &ignored) == 0 &&
		    buf[0] == '\0')
			return 0;
		nanosleep(&tick, NULL);
	}
	return err_set(e, 0, "processes of slot %u survived SIGKILL for 5 s", cg->index);
}

int cgroup_reclaim(struct cgroup_slot *cg, uint64_t bytes)
{
	char val[32];
	struct err ignored;
	uint64_t cur;

	if (cg->layout == CGROUP_V2) {
		snprintf(val, sizeof(val), "%llu", (unsigned long long)bytes);
		return write_file_at(cg->mem_fd, "memory.reclaim", val, &ignored);
	}
	if (read_u64_at(cg->mem_fd, "memory.usage_in_bytes", &cur, &ignored) < 0 || cur <= bytes)
		return -1;
	snprintf(val, sizeof(val), "%llu", (unsigned long long)(cur - bytes));
	int rc = write_file_at(cg->mem_fd, "memory.limit_in_bytes", val, &ignored);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)cg->hard_limit_bytes);
	write_file_at(cg->mem_fd, "memory.limit_in_bytes", val, &ignored);
	return rc;
}

#define WATCH_SLACK_BYTES (1ull << 20)

/*
 * Registering a v1 threshold makes the kernel wait for an RCU grace period
 * after the threshold is already in force (7 to 20 ms on the development
 * host), and a supervisor blocked there notices a program's exit that much
 * late: it was most of a short run's time.  So a child writes the
 * registration: a clone sharing our memory (no page tables copied) but
 * with its own copy of the descriptor table, so the descriptors it names
 * stay valid whatever we close meanwhile.  Its exit signal is 0, so only
 * its pidfd reaps it (never a waitpid(-1) of the caller); those still
 * waiting are reaped at the next arming, at most ARMERS at once.
 */
#define ARMERS 8
static struct armer {
	bool busy; /* a child registering, reaped through pidfd */
	int pidfd;
	int cfd;
	char line[96];
	char stack[16384] __attribute__((aligned(16)));
} armers[ARMERS];

static int armer_main(void *arg)
{
	struct armer *a = arg;

	/* Raw system calls (rawsys.h): we share the caller's errno while it
	 * runs on; and exit(2) as a plain system call, as a noreturn call
	 * would have a sanitizer look for this stack among the process's. */
	RAW1(SYS_exit, RAW3(SYS_write, a->cfd, a->line, strlen(a->line)) < 0);
	return 0;
}

static struct armer *free_armer(void)
{
	struct armer *found = NULL;

	for (size_t i = 0; i < ARMERS; i++) {
		struct armer *a = &armers[i];
		siginfo_t si = {0};
		if (a->busy &&
		    waitid(P_PIDFD, (id_t)a->pidfd, &si, WEXITED | WNOHANG | __WALL) == 0 &&
		    si.si_pid == 0)
			continue; /* still registering */
		if (a->busy) {
			close(a->pidfd);
			close(a->cfd);
			a->busy = false;
		}
		if (!found)
			found = a;
	}
	return found;
}

void cgroup_watch_memory(struct cgroup_slot *cg, uint64_t threshold)
{
	struct armer *a;

	/* Closing the previous eventfd unregisters its threshold (in a
	 * kernel worker, also after a grace period).  An armed one is kept
	 * when it is at most WATCH_SLACK_BYTES above what is asked (it fires
	 * that much late, and the 10 ms sampling still runs), or below it
	 * and not yet fired (it fires early: a sample, then a re-arm). */
	if (cg->watch_fd >= 0 && cg->watch_threshold <= threshold + WATCH_SLACK_BYTES &&
	    cg->watch_threshold >= threshold)
		return;
	if (cg->watch_fd >= 0 && cg->watch_threshold < threshold && !cg->watch_fired)
		return;
	cg->watch_fd = xclose(cg->watch_fd);
	cg->watch_fired = false;
	if (cg->layout == CGROUP_V2 || !(a = free_armer()))
		return;
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	int ufd = openat(cg->mem_fd, "memory.usage_in_bytes", O_RDONLY | O_CLOEXEC);
	a->cfd = openat(cg->mem_fd, "cgroup.event_control", O_WRONLY | O_CLOEXEC);
	snprintf(a->line, sizeof(a->line), "%d %d %llu", efd, ufd, (unsigned long long)threshold);
	if (efd >= 0 && ufd >= 0 && a->cfd >= 0 &&
	    clone(armer_main, a->stack + sizeof(a->stack), CLONE_VM | CLONE_PIDFD, a, &a->pidfd) >
		0) {
		a->busy = true;
		cg->watch_fd = efd;
		cg->watch_threshold = threshold;
		efd = -1;
	} else {
		xclose(a->cfd);
	}
	xclose(efd);
	xclose(ufd);
}

void cgroup_watch_fired(struct cgroup_slot *cg)
{
	uint64_t ticks;

	if (cg->watch_fd >= 0 && read(cg->watch_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		cg->watch_fd = xclose(cg->watch_fd);
	cg->watch_fired = true;
}

void cgroup_run_end(struct cgroup_slot *cg)
{
	cg->watch_fd = xclose(cg->watch_fd);
	cg->run_fd = xclose(cg->run_fd);
	cg->peak_fd = xclose(cg->peak_fd);
	if (cg->pids_fd >= 0)
		unlinkat(cg->pids_fd, "run", AT_REMOVEDIR);
	if (cg->run_kill_fd >= 0) {
		cg->run_kill_fd = xclose(cg->run_kill_fd);
		unlinkat(cg->kill_fd, "run", AT_REMOVEDIR);
	}
}

/* ---- the helper's group ---- */

/* Memory hard limit as cgroup_run_begin sets it, without the disk. */
static int set_memory_max(struct cgroup_slot *cg, uint64_t bytes, struct err *e)
{
	char val[32];
	struct err ignored;

	snprintf(val, sizeof(val), "%llu", (unsigned long long)bytes);
	if (cg->layout == CGROUP_V2) {
		if (write_file_at(cg->mem_fd, "memory.max", val, e) < 0)
			return -1;
		if (write_file_at(cg->mem_fd, "memory.swap.max", "0", e) < 0 && e->errnum != ENOENT)
			return -1;
		return 0;
	}
	write_file_at(cg->mem_fd, "memory.memsw.limit_in_bytes", "-1", &ignored);
	if (write_file_at(cg->mem_fd, "memory.limit_in_bytes", val, e) < 0)
		return -1;
	if (faccessat(cg->mem_fd, "memory.memsw.limit_in_bytes", F_OK, 0) == 0 &&
	    write_file_at(cg->mem_fd, "memory.memsw.limit_in_bytes", val, e) < 0)
		return -1;
	return 0;
}

static int helper_limits(struct cgroup_helper *h, const struct cgroup_helper_limits *l,
			 struct err *e)
{
	struct err ignored;
	char val[64];

	if (set_memory_max(&h->cg, l->memory_bytes, e) < 0)
		return err_wrap(e, "set the helper's memory limit");
	snprintf(val, sizeof(val), "%llu", (unsigned long long)l->pids);
	if (write_file_at(h->cg.pids_fd, "pids.max", val, e) < 0)
		return err_wrap(e, "set the helper's pids limit");
	if (h->quota_fd < 0)
		return 0;
	if (h->cg.layout == CGROUP_V2) {
		snprintf(val, sizeof(val), "%llu %llu", (unsigned long long)l->cpu_quota_us,
			 (unsigned long long)l->cpu_period_us);
		if (write_file_at(h->quota_fd, "cpu.max", val, e) < 0)
			return err_wrap(e, "set the helper's CPU quota");
		return 0;
	}
	/* The period first: a quota longer than the old period is refused. */
	write_file_at(h->quota_fd, "cpu.cfs_quota_us", "-1", &ignored);
	snprintf(val, sizeof(val), "%llu", (unsigned long long)l->cpu_period_us);
	if (write_file_at(h->quota_fd, "cpu.cfs_period_us", val, e) < 0)
		return err_wrap(e, "set the helper's CPU period");
	snprintf(val, sizeof(val), "%llu", (unsigned long long)l->cpu_quota_us);
	if (write_file_at(h->quota_fd, "cpu.cfs_quota_us", val, e) < 0)
		return err_wrap(e, "set the helper's CPU quota");
	return 0;
}

int cgroup_helper_open(struct cgroup_helper *h, unsigned long id,
		       const struct cgroup_helper_limits *l, struct err *e)
{
	char detail[512], leaf[32];
	int dirs[CGROUP_MAX_JOIN];
	size_t ndirs = 0;

	*h = (struct cgroup_helper){.cg = {.mem_fd = -1,
					   .cpu_fd = -1,
					   .pids_fd = -1,
					   .kill_fd = -1,
					   .run_fd = -1,
					   .run_kill_fd = -1,
					   .peak_fd = -1,
					   .watch_fd = -1},
				    .quota_fd = -1};
	for (size_t i = 0; i < CGROUP_MAX_JOIN; i++)
		h->join_fds[i] = -1;
	snprintf(leaf, sizeof(leaf), "helper%lu", id);
	if (cgroup_detect(&h->cg.layout, detail, sizeof(detail), e) < 0)
		return -1;
	if (h->cg.layout == CGROUP_V2) {
		char base[4096];
		int fd;

		if (v2_base(base, sizeof(base), e) < 0 || (fd = open_leaf(base, leaf, e)) < 0)
			return -1;
		h->cg.mem_fd = fd;
		h->cg.cpu_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		h->cg.pids_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		/* "cpu" is delegated where the host allows (v2_prepare). */
		if (faccessat(fd, "cpu.max", F_OK, 0) == 0)
			h->quota_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		dirs[ndirs++] = fd;
	} else {
		if ((h->cg.mem_fd = open_leaf(CG_ROOT "/memory", leaf, e)) < 0 ||
		    (h->cg.cpu_fd = open_leaf(CG_ROOT "/cpuacct", leaf, e)) < 0 ||
		    (h->cg.pids_fd = open_leaf(CG_ROOT "/pids", leaf, e)) < 0)
			goto out_close;
		/* The cpu controller: its own hierarchy, or one shared with
		 * cpuacct (cpu,cpuacct), where joining twice is harmless. */
		if (exists(CG_ROOT "/cpu/cpu.cfs_quota_us") &&
		    (h->quota_fd = open_leaf(CG_ROOT "/cpu", leaf, e)) < 0)
			goto out_close;
		dirs[ndirs++] = h->cg.mem_fd;
		dirs[ndirs++] = h->cg.cpu_fd;
		dirs[ndirs++] = h->cg.pids_fd;
		if (h->quota_fd >= 0)
			dirs[ndirs++] = h->quota_fd;
	}
	if (h->cg.cpu_fd < 0 || h->cg.pids_fd < 0) {
		err_set(e, errno, "dup cgroup fd");
		goto out_close;
	}
	if (helper_limits(h, l, e) < 0 || read_cpu_ns(&h->cg, &h->cg.cpu_base_ns, e) < 0 ||
	    read_oom_kills(&h->cg, &h->cg.oom_base, e) < 0)
		goto out_close;
	/* The helper joins between fork and exec, single-threaded: v1's
	 * `tasks` (join_file()). */
	for (size_t i = 0; i < ndirs; i++) {
		const char *file = join_file(&h->cg, dirs[i]);
		h->join_fds[i] = openat(dirs[i], file, O_WRONLY | O_CLOEXEC);
		if (h->join_fds[i] < 0) {
			err_set(e, errno, "open the helper's %s", file);
			goto out_close;
		}
		h->n_join++;
	}
	return 0;
out_close:
	cgroup_helper_close(h);
	return err_wrap(e, "cgroup %s", leaf);
}

int cgroup_helper_join(const struct cgroup_helper *h)
{
	for (size_t i = 0; i < h->n_join; i++) {
		if (write(h->join_fds[i], "0", 1) != 1)
			return -1;
	}
	return 0;
}

int cgroup_helper_usage(struct cgroup_helper *h, struct cgroup_helper_usage *ret, struct err *e)
{
	uint64_t cpu, oom;

	if (read_cpu_ns(&h->cg, &cpu, e) < 0 || read_oom_kills(&h->cg, &oom, e) < 0)
		return -1;
	ret->cpu_ns = cpu > h->cg.cpu_base_ns ? cpu - h->cg.cpu_base_ns : 0;
	ret->oom_kills = oom > h->cg.oom_base ? oom - h->cg.oom_base : 0;
	return 0;
}

void cgroup_helper_close(struct cgroup_helper *h)
{
	for (size_t i = 0; i < CGROUP_MAX_JOIN; i++)
		h->join_fds[i] = xclose(h->join_fds[i]);
	h->n_join = 0;
	h->quota_fd = xclose(h->quota_fd);
	cgroup_slot_close(&h->cg);
}
