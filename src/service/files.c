/* The files a service worker grades from (files.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grade/unpriv.h"
#include "host/lease.h"
#include "host/statedir.h"
#include "service/files.h"
#include "store/store.h"
#include "util.h"

/* How long an unpack waits for another one on this host (theirs is
 * bounded by the helper's 120 s). */
#define UNPACK_WAIT_MS 2000

/* Depth of the globs that take every file of an assignment. */
#define UNPACK_DEPTH 16

/* A working copy of a blob the store keeps durably: no fsync (a crash
 * loses the job's lease, and its next attempt spools the blob again). */
static int write_file(const char *path, const void *data, size_t len, struct err *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return err_set(e, errno, "create '%s'", path);
	if (write_all(fd, data, len) < 0) {
		err_set(e, errno, "write '%s'", path);
		close(fd);
		unlink(path);
		return -1;
	}
	close(fd);
	return 0;
}

int svc_spool_blob(struct store *st, const char *state_dir, const char *sha256, const char *name,
		   char *ret, size_t cap, struct err *e)
{
	char dir[PATH_MAX];
	void *data = NULL;
	size_t len = 0;

	if (state_subdir(state_dir, "service/spool", 0700, dir, sizeof(dir), e) < 0)
		return -1;
	if ((size_t)snprintf(ret, cap, "%s/%s", dir, name) >= cap)
		return err_set(e, ENAMETOOLONG, "spool file '%s'", name);
	unlink(ret); /* a previous attempt's, left by a killed worker */
	if (store_blob_get(st, sha256, &data, &len, e) < 0)
		return err_wrap(e, "blob %.12s", sha256);
	int rc = write_file(ret, data ? data : "", len, e);
	free(data);
	return rc;
}

/* Every file and directory below the unpacked tree becomes root's and read-only. */
static int seal_one(const char *path, const struct stat *sb, int type, struct FTW *f)
{
	(void)f;
	if (type != FTW_F && type != FTW_D && type != FTW_DP)
		return -1; /* intake writes nothing else */
	if (lchown(path, 0, 0) < 0)
		return -1;
	return chmod(path, S_ISDIR(sb->st_mode) ? 0755 : (sb->st_mode & 0111 ? 0555 : 0444));
}

static json_t *intake_request(void)
{
	json_t *globs = json_array();
	char glob[2 * UNPACK_DEPTH + 3] = "*";

	for (int i = 0; i < UNPACK_DEPTH; i++) {
		json_array_append_new(globs, json_string(glob));
		strcat(glob, "/*");
	}
	return json_pack("{s:o, s:[s], s:I, s:I, s:I}", "globs", globs, "required",
			 "assignment.yaml", "max_bytes", (json_int_t)SVC_ASSIGNMENT_MAX_BYTES,
			 "max_entries", (json_int_t)SVC_ASSIGNMENT_MAX_ENTRIES, "max_expanded",
			 (json_int_t)SVC_ASSIGNMENT_MAX_EXPANDED);
}

/* Run proctor-helper intake on archive_fd into dest (owned by the unpack uid). */
static int unpack(const char *state_dir, const char *helper, int archive_fd, const char *dest,
		  struct err *e)
{
	char slots[PATH_MAX], *text;
	json_t *req = intake_request(), *ans = NULL;
	struct err herr;
	int dest_fd, rejected = 0;
	const char *reason = "";

	text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!text)
		return err_set(e, ENOMEM, "intake request");
	/* The helper hides the slots' trees under a mount on STATE/slots: on a
	 * fresh state directory, no sandbox has made it yet. */
	if (state_subdir(state_dir, "slots", 0711, slots, sizeof(slots), e) < 0) {
		free(text);
		return -1;
	}
	dest_fd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dest_fd < 0) {
		free(text);
		return err_set(e, errno, "open '%s'", dest);
	}
	char *argv[] = {(char *)"intake", NULL};
	struct unpriv_call call = {.helper = helper,
				   .argv = argv,
				   .uid = SVC_UNPACK_UID,
				   .stdin_fd = -1,
				   .input = text,
				   .fd3 = dest_fd,
				   .fd4 = archive_fd,
				   .timeout_s = 120,
				   .hide_dir = slots};
	int rc = unpriv_run(&call, &ans, &herr);
	free(text);
	close(dest_fd);
	if (rc < 0)
		return err_set(e, 0, "intake helper: %s", herr.msg);
	if (rc > 0)
		return err_setk(e, ERR_INPUT, 0, "the assignment archive cannot be read: %s",
				herr.msg);
	if (json_unpack(ans, "{s:b, s:s}", "rejected", &rejected, "reason", &reason) < 0)
		rejected = 1;
	if (rejected)
		err_setk(e, ERR_INPUT, 0, "the assignment archive is refused: %s", reason);
	json_decref(ans);
	return rejected ? -1 : 0;
}

int svc_assignment_dir(struct store *st, const char *state_dir, const char *helper,
		       const char *sha256, char *ret, size_t cap, struct err *e)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 64], archive[PATH_MAX + 64], name[96];
	struct stat sb;
	int fd = -1, rc = -1, lock = -1;
	unsigned n;

	if (strlen(sha256) != 64 || strspn(sha256, "0123456789abcdef") != 64)
		return err_set(e, 0, "archive digest '%.70s' is not 64 hex digits", sha256);
	if (state_subdir(state_dir, "service/assignments", 0700, dir, sizeof(dir), e) < 0)
		return -1;
	if ((size_t)snprintf(ret, cap, "%s/%s", dir, sha256) >= cap)
		return err_set(e, ENAMETOOLONG, "assignment directory");
	if (lstat(ret, &sb) == 0 && S_ISDIR(sb.st_mode))
		return 0;

	/* SVC_UNPACK_UID is one uid for the whole host, and its helper group
	 * holds one process (a second helper could not start), so one unpack
	 * at a time on this host, whatever the state directory.  The wait is
	 * short (ERR_BUSY after it: the caller gives the job back rather than
	 * let its other leases age).  Another worker may have unpacked it
	 * while we waited. */
	if (host_lease("unpack", 1, UNPACK_WAIT_MS, &n, &lock, e) < 0)
		return err_wrap(e, "unpack an assignment");
	if (lstat(ret, &sb) == 0 && S_ISDIR(sb.st_mode)) {
		close(lock);
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s/.tmp-%s-%d", dir, sha256, (int)getpid());
	snprintf(name, sizeof(name), "assignment-%.16s-%d", sha256, (int)getpid());
	struct err ignored;
	rm_tree_at(AT_FDCWD, tmp, &ignored);
	if (svc_spool_blob(st, state_dir, sha256, name, archive, sizeof(archive), e) < 0)
		goto out;
	fd = open(archive, O_RDONLY | O_CLOEXEC);
	unlink(archive);
	if (fd < 0) {
		err_set(e, errno, "open '%s'", archive);
		goto out;
	}
	if (mkdir(tmp, 0700) < 0 || chown(tmp, SVC_UNPACK_UID, SVC_UNPACK_UID) < 0) {
		err_set(e, errno, "make '%s'", tmp);
		goto out;
	}
	if (unpack(state_dir, helper, fd, tmp, e) < 0)
		goto out;
	if (nftw(tmp, seal_one, 16, FTW_PHYS | FTW_DEPTH) != 0) {
		err_set(e, errno, "make '%s' root's and read-only", tmp);
		goto out;
	}
	if (rename(tmp, ret) < 0 && errno != EEXIST && errno != ENOTEMPTY) {
		err_set(e, errno, "rename '%s'", tmp);
		goto out;
	}
	rc = 0; /* renamed, or another worker of this host was first */
out:
	xclose(fd);
	rm_tree_at(AT_FDCWD, tmp, &ignored);
	close(lock);
	return rc;
}
