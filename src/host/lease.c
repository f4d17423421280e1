/* Host-wide leases: numbered identities (sandbox slots, image build slots) one process holds at a time. */
#include "host/lease.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* A root-owned directory nobody else can write, made whatever the umask. */
static int lease_dir(const char *path, struct err *e)
{
	struct stat st;

	if (mkdir(path, 0700) == 0 && chmod(path, 0700) < 0)
		return err_set(e, errno, "chmod '%s'", path);
	if (lstat(path, &st) < 0)
		return err_set(e, errno, "lease directory '%s'", path);
	/* SECURITY: whoever can write here can hold or steal every lease (and
	 * so make us clean a live sandbox): only root's own directory will do. */
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 022))
		return err_set(e, 0,
			       "lease directory '%s' must be a directory owned by root and writable "
			       "only by it",
			       path);
	return 0;
}

int host_lease(const char *kind, unsigned max, unsigned *ret_index, int *ret_fd, struct err *e)
{
	char dir[256], path[300];

	if (lease_dir(HOST_LEASE_DIR, e) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/%s", HOST_LEASE_DIR, kind);
	if (lease_dir(dir, e) < 0)
		return -1;
	for (unsigned i = 0; i < max; i++) {
		snprintf(path, sizeof(path), "%s/%u.lock", dir, i);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return err_set(e, errno, "open lease '%s'", path);
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			*ret_index = i;
			*ret_fd = fd;
			return 0;
		}
		int saved = errno;
		close(fd);
		if (saved != EWOULDBLOCK)
			return err_set(e, saved, "lock '%s'", path);
	}
	return err_set(e, EBUSY, "all %u %s in '%s' are leased by running proctors", max, kind, dir);
}
