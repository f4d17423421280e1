/* Process Isolator -- sandbox slots: leased with a lock so many proctors share one host. */
#include "jail/slot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

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
	char path[PATH_MAX];

	if (mkdir_p_at(AT_FDCWD, state_dir, 0711, (uid_t)-1, 0, e) < 0)
		return err_wrap(e, "state directory");
	if ((size_t)snprintf(path, sizeof(path), "%s/slots", state_dir) >= sizeof(path))
		return err_set(e, ENAMETOOLONG, "state directory '%s'", state_dir);
	if (mkdir(path, 0711) < 0 && errno != EEXIST)
		return err_set(e, errno, "mkdir '%s'", path);

	for (unsigned i = 0; i < max_slots; i++) {
		struct slot s = {.index = i, .uid = uid_base + i, .gid = uid_base + i};
		snprintf(path, sizeof(path), "%s/slots/%u.lock", state_dir, i);
		s.lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (s.lock_fd < 0)
			return err_set(e, errno, "open slot lock '%s'", path);
		if (flock(s.lock_fd, LOCK_EX | LOCK_NB) < 0) {
			int saved = errno;
			close(s.lock_fd);
			if (saved == EWOULDBLOCK)
				continue;
			return err_set(e, saved, "lock '%s'", path);
		}

		snprintf(s.dir, sizeof(s.dir), "%s/slots/%u", state_dir, i);
		if (mkdir(s.dir, 0711) < 0 && errno != EEXIST) {
			err_set(e, errno, "mkdir '%s'", s.dir);
			close(s.lock_fd);
			return -1;
		}
		s.dir_fd = open(s.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (s.dir_fd < 0) {
			err_set(e, errno, "open '%s'", s.dir);
			close(s.lock_fd);
			return -1;
		}
		if (clean_slot(&s, e) < 0) {
			close(s.dir_fd);
			close(s.lock_fd);
			return -1;
		}
		*ret = s;
		return 0;
	}
	return err_set(e, EBUSY, "all %u sandbox slots in '%s' are busy (raise --slots)",
		       max_slots, state_dir);
}

void slot_release(struct slot *s)
{
	/* The scratch tree was a tmpfs, already unmounted; the empty mount
	 * points stay for the next lease. */
	s->dir_fd = xclose(s->dir_fd);
	s->lock_fd = xclose(s->lock_fd); /* drops the flock */
}
