/* The sandbox keeper's calls on files: write, read, list (docs/sandbox-keeper.md, "Frames"). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/jsonreq.h"
#include "service/keeper.h"
#include "util.h"

int op_write(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
	     struct err *e)
{
	static const char *const members[] = {"op", "secret", "path", "executable", NULL};
	char rel[PATH_MAX], name[64], host[PATH_MAX + 64];
	const char *path;
	bool exec = false;

	if (jsonreq_only(head, members, e) < 0 ||
	    member_path(head, &path, rel, sizeof(rel), e) < 0 ||
	    jsonreq_bool(head, "executable", false, &exec, e) < 0 ||
	    temp_name(name, sizeof(name), "w-", e) < 0)
		return -1;
	/* The bytes go through a file of root's in a directory of root's, and
	 * into the sandbox by its put, like any file put in. */
	_cleanup_close_ int tmp =
	    openat(k->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (tmp < 0)
		return err_set(e, errno, "create '%s/%s'", k->dir, name);
	int rc = write_all(tmp, data, len) < 0 || fchmod(tmp, exec ? 0755 : 0644) < 0
		     ? err_set(e, errno, "write '%s/%s'", k->dir, name)
		     : 0;
	tmp = xclose(tmp);
	snprintf(host, sizeof(host), "%s/%s", k->dir, name);
	if (rc == 0)
		rc = sandbox_put(k->sb, host, path, 0, e);
	unlinkat(k->dir_fd, name, 0);
	if (rc < 0)
		return -1;
	return send_answer(fd, json_pack("{s:s,s:I}", "path", path, "size", (json_int_t)len), NULL,
			   0, e);
}

/* What list() says of rel's own entry in its parent directory: found or
 * not (a path not listed is left to get(), which says why). */
static bool stat_entry(struct keeper *k, const char *rel, struct sandbox_dirent *ret)
{
	char parent[PATH_MAX];
	struct sandbox_dirent *v = NULL;
	size_t n = 0;
	struct err ignored;
	const char *slash = strrchr(rel, '/');
	bool found = false;

	if (!slash || !k->ops->list)
		return false;
	snprintf(parent, sizeof(parent), "/%.*s", (int)(slash - rel), rel);
	if (k->ops->list(k->sb, parent, &v, &n, &ignored) < 0)
		return false;
	for (size_t i = 0; i < n && !found; i++)
		if (strcmp(v[i].name, slash + 1) == 0) {
			*ret = v[i];
			found = true;
		}
	free(v);
	return found;
}

int op_read(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
	    struct err *e)
{
	static const char *const members[] = {"op", "secret", "path", NULL};
	char rel[PATH_MAX], name[64], host[PATH_MAX + 64];
	struct sandbox_dirent ent;
	const char *path;
	char *buf = NULL;
	size_t n = 0;
	struct stat st = {0};

	(void)data;
	if (jsonreq_only(head, members, e) < 0 || member_path(head, &path, rel, sizeof(rel), e) < 0)
		return -1;
	if (len > 0)
		return err_setk(e, ERR_INPUT, 0, "a read takes no data");
	/* Refused before anything is copied: a directory (the top of the tree
	 * is one) and a file past the cap.  The sandbox runs nothing between
	 * calls, so what the listing says still holds for the get. */
	bool known = stat_entry(k, rel, &ent);
	if (!strchr(rel, '/') || (known && ent.type == 'd'))
		return err_setk(e, ERR_INPUT, 0, "'%s' is a directory", path);
	if (known && ent.type != 'f')
		return err_setk(e, ERR_INPUT, 0, "'%s' is a %s, not a regular file", path,
				ent.type == 'l' ? "symlink" : "special file");
	if (known && ent.size > k->disk_bytes)
		return err_setk(e, ERR_TOO_LARGE, 0, "'%s' is larger than %llu bytes", path,
				(unsigned long long)k->disk_bytes);
	if (temp_name(name, sizeof(name), "r-", e) < 0)
		return -1;
	snprintf(host, sizeof(host), "%s/%s", k->dir, name);
	if (sandbox_get(k->sb, path, host, e) < 0) {
		rm_tree_at(k->dir_fd, name, &(struct err){0});
		unlinkat(k->dir_fd, name, 0);
		return -1;
	}
	int rc = 0;
	if (fstatat(k->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		rc = err_set(e, errno, "'%s'", host);
	else if (S_ISDIR(st.st_mode)) /* the listing did not show it */
		rc = err_setk(e, ERR_INPUT, 0, "'%s' is a directory", path);
	else if (read_whole_at(k->dir_fd, name, O_NOFOLLOW, (size_t)k->disk_bytes, &buf, &n, e) < 0)
		rc = e->errnum == EFBIG ? err_classify(e, ERR_TOO_LARGE) : -1;
	if (S_ISDIR(st.st_mode))
		rm_tree_at(k->dir_fd, name, &(struct err){0});
	else
		unlinkat(k->dir_fd, name, 0);
	if (rc == 0) {
		unsigned mode = known ? ent.mode : (unsigned)(st.st_mode & 07777);
		rc = send_answer(fd,
				 json_pack("{s:s,s:I,s:i}", "path", path, "size", (json_int_t)n,
					   "mode", (int)mode),
				 buf, n, e);
	}
	free(buf);
	return rc;
}

int op_list(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
	    struct err *e)
{
	static const char *const members[] = {"op", "secret", "path", NULL};
	static const char *const types[] = {
	    ['f'] = "file", ['d'] = "dir", ['l'] = "link", ['o'] = "other"};
	char rel[PATH_MAX];
	struct sandbox_dirent *v = NULL;
	size_t n = 0;
	const char *path;

	(void)data;
	if (jsonreq_only(head, members, e) < 0 || member_path(head, &path, rel, sizeof(rel), e) < 0)
		return -1;
	if (len > 0)
		return err_setk(e, ERR_INPUT, 0, "a list takes no data");
	if (!k->ops->list)
		return err_setk(e, ERR_UNAVAILABLE, 0, "the %s backend cannot list a directory",
				k->ops->name);
	int r = k->ops->list(k->sb, path, &v, &n, e);
	if (r < 0)
		return e->kind == ERR_USAGE ? err_classify(e, ERR_INPUT) : -1;
	json_t *entries = json_array();
	for (size_t i = 0; entries && i < n; i++) {
		/* A JSON string holds UTF-8 only: a name that is not is left
		 * out, as the jail leaves out names with control characters. */
		if (!utf8_valid(v[i].name, strlen(v[i].name)))
			continue;
		json_array_append_new(
		    entries,
		    json_pack("{s:s,s:s,s:I,s:i,s:I}", "name", v[i].name, "type",
			      types[(unsigned char)v[i].type] ? types[(unsigned char)v[i].type]
							      : "other",
			      "size", (json_int_t)v[i].size, "mode", (int)v[i].mode, "mtime_ms",
			      (json_int_t)v[i].mtime_ms));
	}
	free(v);
	return send_answer(fd,
			   entries ? json_pack("{s:s,s:o,s:b}", "path", path, "entries", entries,
					       "truncated", r == 1)
				   : NULL,
			   NULL, 0, e);
}
