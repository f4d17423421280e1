/* Host-wide leases: numbered identities (sandbox slots, image build slots) one process holds at a time. */
#include "host/lease.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
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

/* One pass over the numbers: 0 leased, 1 all busy, -1 failure. */
static int try_all(const char *dir, unsigned max, unsigned *ret_index, int *ret_fd, struct err *e)
{
	char path[300];

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
	return 1;
}

int host_lease(const char *kind, unsigned max, unsigned wait_ms, unsigned *ret_index, int *ret_fd,
	       struct err *e)
{
	char dir[256];
	unsigned waited = 0, pause = 5;
	int rc;

	if (lease_dir(HOST_LEASE_DIR, e) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/%s", HOST_LEASE_DIR, kind);
	if (lease_dir(dir, e) < 0)
		return -1;
	while ((rc = try_all(dir, max, ret_index, ret_fd, e)) == 1 && waited < wait_ms) {
		struct timespec ts = {0, (long)pause * 1000000L};
		nanosleep(&ts, NULL);
		waited += pause;
		pause = pause < 100 ? pause * 2 : 100;
	}
	if (rc == 1)
		return err_setk(e, ERR_BUSY, EBUSY,
				"all %u %s in '%s' were leased by running proctors for %u s", max,
				kind, dir, wait_ms / 1000);
	return rc;
}
