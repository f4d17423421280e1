/* Sandbox slots: the identity (uid, cgroups, directory) a sandbox of either backend leases. */
#include "host/slot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/lease.h"
#include "host/statedir.h"
#include "util.h"

void slot_unmount_scratch(struct slot *s)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/scratch", s->dir);
	/* SECURITY: MNT_DETACH so a busy mount (a dead owner's leftover) cannot
	 * stop the slot from being reused; the tree is gone from the host at once. */
	for (int i = 0; i < 16 && umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) == 0; i++)
		;
}

/* The slot directory holds two permanent, empty mount points.  Whatever
 * else is there (or in them) is a dead owner's debris. */
static int clean_slot(struct slot *s, struct err *e)
{
	static const char *const points[] = {"scratch", "root"};

	slot_unmount_scratch(s);
	for (size_t i = 0; i < 2; i++) {
		if (mkdirat(s->dir_fd, points[i], 0755) == 0)
			continue;
		if (errno != EEXIST)
			return err_set(e, errno, "create mount point '%s/%s'", s->dir, points[i]);
		int fd = openat(s->dir_fd, points[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return err_set(e, errno, "open '%s/%s'", s->dir, points[i]);
		int rc = rm_rf_children(fd, e);
		close(fd);
		if (rc < 0)
			return err_wrap(e, "clean '%s/%s'", s->dir, points[i]);
	}
	return 0;
}

int slot_lease(const char *state_dir, unsigned max_slots, uid_t uid_base, struct slot *ret,
	       struct err *e)
{
	return slot_lease_within(state_dir, max_slots, uid_base, SLOT_WAIT_MS, ret, e);
}

int slot_lease_within(const char *state_dir, unsigned max_slots, uid_t uid_base, unsigned wait_ms,
		      struct slot *ret, struct err *e)
{
	char slots[PATH_MAX];
	unsigned i;

	if (state_subdir(state_dir, "slots", 0711, slots, sizeof(slots), e) < 0)
		return -1;
	struct slot s = {.lock_fd = -1, .dir_fd = -1};
	if (host_lease("slots", max_slots, wait_ms, &i, &s.lock_fd, e) < 0) {
		if (e->errnum == EBUSY)
			return err_setk(e, ERR_BUSY, EBUSY,
				       "all %u sandbox slots of this host stayed busy for %u s (raise "
				       "--slots)",
				       max_slots, wait_ms / 1000);
		return err_wrap(e, "lease a sandbox slot");
	}
	s.index = i;
	s.uid = s.gid = uid_base + i;
	if ((size_t)snprintf(s.dir, sizeof(s.dir), "%s/%u", slots, i) >= sizeof(s.dir)) {
		err_set(e, ENAMETOOLONG, "state directory '%s'", state_dir);
		goto out_unlock;
	}
	if (mkdir(s.dir, 0711) < 0 && errno != EEXIST) {
		err_set(e, errno, "mkdir '%s'", s.dir);
		goto out_unlock;
	}
	s.dir_fd = open(s.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (s.dir_fd < 0) {
		err_set(e, errno, "open '%s'", s.dir);
		goto out_unlock;
	}
	/* The lease is host-wide, so nobody, under any state directory, uses
	 * slot i now: what this state directory's slot i holds is debris. */
	if (clean_slot(&s, e) < 0)
		goto out_close_dir;
	*ret = s;
	return 0;

out_close_dir:
	close(s.dir_fd);
out_unlock:
	close(s.lock_fd);
	return -1;
}

void slot_release(struct slot *s)
{
	/* The scratch tree was a tmpfs, already unmounted; the empty mount
	 * points stay for the next lease. */
	s->dir_fd = xclose(s->dir_fd);
	s->lock_fd = xclose(s->lock_fd); /* drops the flock */
}
