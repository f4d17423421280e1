/* The state directory and its subdirectories, made on first use with the modes sandboxes need. */
#include "host/statedir.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* mkdir with the exact mode; 1 when it made the directory, 0 when it existed. */
static int make_dir(const char *path, mode_t mode, struct err *e)
{
	struct stat st;

	if (mkdir(path, mode) == 0) {
		if (chmod(path, mode) < 0) /* the umask trimmed it */
			return err_set(e, errno, "chmod '%s'", path);
		return 1;
	}
	if (errno != EEXIST)
		return err_set(e, errno, "mkdir '%s'", path);
	if (stat(path, &st) < 0)
		return err_set(e, errno, "'%s'", path);
	if (!S_ISDIR(st.st_mode))
		return err_set(e, ENOTDIR, "'%s'", path);
	return 0;
}

int state_subdir(const char *state_dir, const char *sub, mode_t mode, char *ret, size_t cap,
		 struct err *e)
{
	char buf[4096];
	struct stat st;
	size_t len = strlen(state_dir);
	int rc;

	if (len == 0)
		return err_set(e, EINVAL, "the state directory is an empty path");
	if (len >= sizeof(buf))
		return err_set(e, ENAMETOOLONG, "state directory '%.64s...'", state_dir);
	/* The state directory's parents (/var/lib) are ordinary 0755 ones. */
	memcpy(buf, state_dir, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		rc = make_dir(buf, 0755, e);
		*p = '/';
		if (rc < 0)
			return err_wrap(e, "state directory");
	}
	if ((rc = make_dir(state_dir, 0711, e)) < 0)
		return err_wrap(e, "state directory");
	if (stat(state_dir, &st) < 0)
		return err_set(e, errno, "state directory '%s'", state_dir);
	/* SECURITY: slots, staging and snapshots below it are trusted; a state
	 * directory another user can write could swap them for links. */
	if (st.st_uid != 0 || (st.st_mode & 022))
		return err_set(e, 0,
			       "state directory '%s' must be owned by root and writable only by it "
			       "(it is mode %04o, uid %u)",
			       state_dir, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
	/* An existing root-owned directory made 0700 (mkdtemp, a umask of
	 * 077) only lacks the traverse bits the slot uids need. */
	if ((st.st_mode & 0711) != 0711 && chmod(state_dir, (st.st_mode & 07777) | 0711) < 0)
		return err_set(e, errno, "chmod state directory '%s'", state_dir);
	if (!sub || !*sub) {
		if ((size_t)snprintf(ret, cap, "%s", state_dir) >= cap)
			return err_set(e, ENAMETOOLONG, "state directory '%s'", state_dir);
		return 0;
	}
	if ((size_t)snprintf(buf, sizeof(buf), "%s/%s", state_dir, sub) >= sizeof(buf) ||
	    strlen(buf) >= cap)
		return err_set(e, ENAMETOOLONG, "'%s/%s'", state_dir, sub);
	for (char *p = buf + len + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (make_dir(buf, mode, e) < 0)
			return -1;
		if (!saved)
			break;
		*p = saved;
	}
	memcpy(ret, buf, strlen(buf) + 1);
	return 0;
}
