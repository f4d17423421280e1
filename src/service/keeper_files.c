/* The sandbox keeper's calls on files: write, read, list, stat, remove, mkdir, upload, download, snapshot, restore (docs/sandbox-keeper.md, "Frames"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grade/unpriv.h"
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
	keeper_note_top(k, rel);
	return send_answer(fd, json_pack("{s:s,s:I}", "path", path, "size", (json_int_t)len), NULL,
			   0, e);
}

static const char *type_name(char t)
{
	switch (t) {
	case 'f': return "file";
	case 'd': return "dir";
	case 'l': return "link";
	default: return "other";
	}
}

/* What list() says of `path`'s own entry in its parent directory: found or
 * not (a path not listed is left to get(), which says why).  Sandbox paths
 * are listed, not tree paths: /grader/x's parent is /grader.  A top of the
 * tree (/work, /grader) has no listed parent: a directory when it lists. */
static bool stat_entry(struct keeper *k, const char *path, struct sandbox_dirent *ret)
{
	char parent[PATH_MAX];
	struct sandbox_dirent *v = NULL;
	size_t n = 0, len = strlen(path);
	struct err ignored;
	bool found = false;

	if (!k->ops->list || len >= sizeof(parent))
		return false;
	while (len > 1 && path[len - 1] == '/')
		len--;
	snprintf(parent, sizeof(parent), "%.*s", (int)len, path);
	char *slash = strrchr(parent, '/');
	const char *name = slash ? slash + 1 : parent;
	if (slash == parent) {
		/* A top: it is there if it lists. */
		if (k->ops->list(k->sb, parent, &v, &n, &ignored) < 0)
			return false;
		free(v);
		*ret = (struct sandbox_dirent){.type = 'd', .mode = 0755};
		snprintf(ret->name, sizeof(ret->name), "%s", name);
		return true;
	}
	if (slash)
		*slash = '\0';
	const char *dir = slash ? parent : "/work"; /* "a" is /work/a */
	if (k->ops->list(k->sb, dir, &v, &n, &ignored) < 0)
		return false;
	for (size_t i = 0; i < n && !found; i++)
		if (strcmp(v[i].name, name) == 0) {
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
	bool known = stat_entry(k, path, &ent);
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
			      type_name(v[i].type), "size", (json_int_t)v[i].size, "mode",
			      (int)v[i].mode, "mtime_ms", (json_int_t)v[i].mtime_ms));
	}
	free(v);
	return send_answer(fd,
			   entries ? json_pack("{s:s,s:o,s:b}", "path", path, "entries", entries,
					       "truncated", r == 1)
				   : NULL,
			   NULL, 0, e);
}

/* The members of a call on one path, and no data. */
static int path_call(const json_t *head, const char *const *members, size_t len,
		     const char **path, char *rel, size_t rel_len, struct err *e)
{
	if (jsonreq_only(head, members, e) < 0 || member_path(head, path, rel, rel_len, e) < 0)
		return -1;
	if (len > 0)
		return err_setk(e, ERR_INPUT, 0, "this call takes no data");
	return 0;
}

int op_stat(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
	    struct err *e)
{
	static const char *const members[] = {"op", "secret", "path", NULL};
	char rel[PATH_MAX];
	struct sandbox_dirent ent;
	const char *path;

	(void)data;
	if (path_call(head, members, len, &path, rel, sizeof(rel), e) < 0)
		return -1;
	if (!stat_entry(k, path, &ent))
		return send_answer(fd, json_pack("{s:s,s:b}", "path", path, "exists", 0), NULL, 0,
				   e);
	return send_answer(fd,
			   json_pack("{s:s,s:b,s:s,s:I,s:i,s:I}", "path", path, "exists", 1,
				     "type", type_name(ent.type), "size", (json_int_t)ent.size,
				     "mode", (int)ent.mode, "mtime_ms", (json_int_t)ent.mtime_ms),
			   NULL, 0, e);
}

int op_remove(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
	      struct err *e)
{
	static const char *const members[] = {"op", "secret", "path", "recursive", NULL};
	char rel[PATH_MAX];
	const char *path;
	bool recursive = false;

	(void)data;
	if (path_call(head, members, len, &path, rel, sizeof(rel), e) < 0 ||
	    jsonreq_bool(head, "recursive", false, &recursive, e) < 0)
		return -1;
	if (!k->ops->remove)
		return err_setk(e, ERR_UNAVAILABLE, 0, "the %s backend cannot remove a file",
				k->ops->name);
	if (k->ops->remove(k->sb, path, recursive, e) < 0)
		return e->kind == ERR_USAGE ? err_classify(e, ERR_INPUT) : -1;
	return send_answer(fd, json_pack("{s:s,s:b}", "path", path, "removed", 1), NULL, 0, e);
}

/* A fresh directory below k->dir for one transfer, its name in `name`. */
static int temp_dir(struct keeper *k, char *name, size_t cap, char *host, size_t host_cap,
		    struct err *e)
{
	if (temp_name(name, cap, "d-", e) < 0)
		return -1;
	if (mkdirat(k->dir_fd, name, 0700) < 0)
		return err_set(e, errno, "mkdir '%s/%s'", k->dir, name);
	snprintf(host, host_cap, "%s/%s", k->dir, name);
	return 0;
}

/* make_dir: the directory and its parents, the program's (0755); one that
 * is there already is fine, a file in the way is ERR_INPUT.  An empty
 * directory put there is the put rule's own mkdir -p. */
int op_mkdir(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
	     struct err *e)
{
	static const char *const members[] = {"op", "secret", "path", NULL};
	char rel[PATH_MAX], name[64], host[PATH_MAX + 64];
	const char *path;

	(void)data;
	if (path_call(head, members, len, &path, rel, sizeof(rel), e) < 0 ||
	    temp_dir(k, name, sizeof(name), host, sizeof(host), e) < 0)
		return -1;
	int rc = sandbox_put(k->sb, host, path, 0, e);
	unlinkat(k->dir_fd, name, AT_REMOVEDIR);
	if (rc < 0)
		return e->kind == ERR_USAGE ? err_classify(e, ERR_INPUT) : -1;
	keeper_note_top(k, rel);
	return send_answer(fd, json_pack("{s:s}", "path", path), NULL, 0, e);
}

/* The most entries an upload may hold: as a submission's intake counts
 * them, before anything is written. */
#define UPLOAD_ENTRIES_MAX 100000
/* The unpacking helper's time. */
#define UPLOAD_HELPER_S 120

/*
 * Unpack an archive (tar, tar.gz or zip) into a fresh directory below
 * k->dir, named in `name`, `host` its path, the way submissions are read:
 * proctor-helper's intake (grade/intake.c) as the sandbox's own uid in its
 * helper cgroup, never as root here, taking the archive as is: only
 * regular files and directories, names checked, every link, device, FIFO,
 * absolute name and ".." refusing the whole archive, at most the sandbox's
 * disk expanded (a bomb stops there) and UPLOAD_ENTRIES_MAX entries.
 * *ret_ans is intake's answer ("taken", "bytes_taken").  On failure the
 * directory is gone: ERR_INPUT for the archive's fault.
 */
static int unpack(struct keeper *k, const void *data, size_t len, char *name, size_t name_cap,
		  char *host, size_t host_cap, json_t **ret_ans, struct err *e)
{
	char helper[PATH_MAX], slots[PATH_MAX];
	const char *reason = "";
	json_t *ans = NULL;
	int rejected = 1, rc = -1;
	struct err herr;

	if (own_program("proctor-helper", X_OK, helper, sizeof(helper), e) < 0)
		return err_wrap(e, "unpack the archive");
	_cleanup_close_ int mfd = memfd_create("proctor-upload", MFD_CLOEXEC);
	if (mfd < 0 || write_all(mfd, data, len) < 0 || lseek(mfd, 0, SEEK_SET) < 0)
		return err_set(e, errno, "hold the archive");
	if (temp_dir(k, name, name_cap, host, host_cap, e) < 0)
		return -1;
	_cleanup_close_ int dest = openat(k->dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	json_t *req = json_pack("{s:[], s:[], s:I, s:I, s:I, s:b}", "globs", "required",
				"max_bytes", (json_int_t)k->disk_bytes, "max_entries",
				(json_int_t)UPLOAD_ENTRIES_MAX, "max_expanded",
				(json_int_t)k->disk_bytes, "as_is", 1);
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	snprintf(slots, sizeof(slots), "%s/slots", k->state_dir);
	struct unpriv_call call = {.helper = helper,
				   .argv = (char *[]){(char *)"intake", NULL},
				   .uid = k->sb->untrusted_uid,
				   .stdin_fd = -1,
				   .input = text,
				   .fd3 = dest,
				   .fd4 = mfd,
				   .timeout_s = UPLOAD_HELPER_S,
				   .hide_dir = slots};
	int hr = 0;
	if (dest < 0 || !text || fchown(dest, k->sb->untrusted_uid, k->sb->untrusted_uid) < 0)
		err_set(e, errno ? errno : ENOMEM, "prepare '%s'", host);
	else if ((hr = unpriv_run(&call, &ans, &herr)) > 0)
		err_setk(e, ERR_INPUT, 0, "the archive cannot be read: %s", herr.msg);
	else if (hr < 0)
		err_set(e, 0, "the unpacking helper: %s", herr.msg);
	else if (json_unpack(ans, "{s:b, s:s}", "rejected", &rejected, "reason", &reason) < 0)
		err_set(e, 0, "the unpacking helper answered garbage");
	else if (rejected)
		err_setk(e, ERR_INPUT, 0, "the archive is refused: %s", reason);
	else
		rc = 0;
	free(text);
	if (rc < 0) {
		struct err ignored;
		rm_tree_at(k->dir_fd, name, &ignored);
		json_decref(ans);
		return -1;
	}
	*ret_ans = ans;
	return 0;
}

/*
 * Pack the directory `name` below k->dir (a tree the backend's get took
 * out) into one gzip'd tar of at most `max` bytes (malloc'd into *ret), the
 * way it is unpacked: by proctor-helper, as the sandbox's own uid, which
 * reads the tree through the descriptor given it (the files are the
 * program's, modes 0644 or 0755) and writes the archive to a memfd of
 * ours.  Past `max` is ERR_TOO_LARGE.
 */
static int pack(struct keeper *k, const char *name, uint64_t max, void **ret, size_t *ret_len,
		struct err *e)
{
	char helper[PATH_MAX], slots[PATH_MAX];
	json_t *ans = NULL;
	struct err herr;
	int rc = -1;

	if (own_program("proctor-helper", X_OK, helper, sizeof(helper), e) < 0)
		return err_wrap(e, "pack the tree");
	_cleanup_close_ int dir = openat(k->dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_close_ int out = memfd_create("proctor-pack", MFD_CLOEXEC);
	if (dir < 0 || out < 0)
		return err_set(e, errno, "pack '%s/%s'", k->dir, name);
	char input[64];
	snprintf(input, sizeof(input), "{\"max\": %llu}", (unsigned long long)max);
	snprintf(slots, sizeof(slots), "%s/slots", k->state_dir);
	struct unpriv_call call = {.helper = helper,
				   .argv = (char *[]){(char *)"pack", NULL},
				   .uid = k->sb->untrusted_uid,
				   .stdin_fd = -1,
				   .input = input,
				   .fd3 = dir,
				   .fd4 = out,
				   .timeout_s = UPLOAD_HELPER_S,
				   .hide_dir = slots};
	int hr = unpriv_run(&call, &ans, &herr);
	json_int_t n = json_integer_value(json_object_get(ans, "bytes"));
	if (hr > 0) /* the one refusal: the tree is too large */
		err_setk(e, ERR_TOO_LARGE, 0, "the tree packs to more than %llu bytes",
			 (unsigned long long)max);
	else if (hr < 0)
		err_set(e, 0, "the packing helper: %s", herr.msg);
	else if (n <= 0 || (uint64_t)n > max)
		err_set(e, 0, "the packing helper answered %lld bytes", (long long)n);
	else if (!(*ret = malloc((size_t)n)))
		err_set(e, ENOMEM, "the archive");
	else if (pread(out, *ret, (size_t)n, 0) != (ssize_t)n) {
		err_set(e, errno, "read the archive");
		free(*ret);
		*ret = NULL;
	} else {
		*ret_len = (size_t)n;
		rc = 0;
	}
	json_decref(ans);
	return rc;
}

/* upload: the archive unpacked (unpack()) and put at `path`, a directory
 * made with its parents; what is there stays unless a file of the archive
 * replaces it.  A refused archive changes nothing in the sandbox. */
int op_upload(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
	      struct err *e)
{
	static const char *const members[] = {"op", "secret", "path", NULL};
	char rel[PATH_MAX], name[64], host[PATH_MAX + 64];
	const char *path;
	json_t *ans = NULL;
	int rc;

	if (jsonreq_only(head, members, e) < 0 || member_path(head, &path, rel, sizeof(rel), e) < 0 ||
	    unpack(k, data, len, name, sizeof(name), host, sizeof(host), &ans, e) < 0)
		return -1;
	if (sandbox_put(k->sb, host, path, 0, e) < 0) {
		rc = e->kind == ERR_USAGE ? err_classify(e, ERR_INPUT) : -1;
	} else {
		keeper_note_top(k, rel);
		rc = send_answer(
		    fd,
		    json_pack("{s:s,s:I,s:I}", "path", path, "files",
			      (json_int_t)json_array_size(json_object_get(ans, "taken")), "bytes",
			      json_integer_value(json_object_get(ans, "bytes_taken"))),
		    NULL, 0, e);
	}
	struct err ignored;
	rm_tree_at(k->dir_fd, name, &ignored);
	json_decref(ans);
	return rc;
}

/*
 * snapshot: the writable tree as one gzip'd tar (pack_path()), its top
 * directories as its top entries: work/, tmp/ and each of the program's
 * own (grader/).  Regular files and directories, modes 0644 or 0755, as
 * the backend's get takes them out (links and special files left out).
 */
int op_snapshot(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
		struct err *e)
{
	static const char *const members[] = {"op", "secret", NULL};
	char name[64], host[PATH_MAX + 64], sub[PATH_MAX + 64 + NAME_MAX + 2], path[NAME_MAX + 2];
	void *tar = NULL;
	size_t n = 0;
	int rc = 0;

	(void)data;
	if (jsonreq_only(head, members, e) < 0)
		return -1;
	if (len > 0)
		return err_setk(e, ERR_INPUT, 0, "a snapshot takes no data");
	/* 0755: the packing helper (the sandbox's uid) reads it through the
	 * descriptor it is given; k->dir (0700) still keeps it from the path. */
	if (temp_dir(k, name, sizeof(name), host, sizeof(host), e) < 0)
		return -1;
	if (fchmodat(k->dir_fd, name, 0755, 0) < 0) {
		rc = err_set(e, errno, "chmod '%s'", host);
		rm_tree_at(k->dir_fd, name, &(struct err){0});
		return rc;
	}
	for (unsigned i = 0; rc == 0 && i < k->n_tops + 2; i++) {
		const char *top = i == 0 ? "work" : i == 1 ? "tmp" : k->tops[i - 2];
		snprintf(path, sizeof(path), "/%s", top);
		snprintf(sub, sizeof(sub), "%s/%s", host, top);
		if (sandbox_get(k->sb, path, sub, e) < 0 && e->kind != ERR_NOT_FOUND)
			rc = -1;
	}
	uint64_t max = k->disk_bytes + k->disk_bytes / 8 + (1u << 20);
	if (rc == 0)
		rc = pack(k, name, max, &tar, &n, e);
	struct err ignored;
	rm_tree_at(k->dir_fd, name, &ignored);
	if (rc == 0)
		rc = send_answer(fd, json_pack("{s:I}", "bytes", (json_int_t)n), tar, n, e);
	free(tar);
	return rc;
}

/* restore: a snapshot's archive put back: each top entry of it (work/,
 * grader/) at /NAME by the put rule, after unpack() checked it like any
 * upload.  A top that is not a directory, or a system one, is ERR_INPUT. */
int op_restore(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
	       struct err *e)
{
	static const char *const members[] = {"op", "secret", NULL};
	char name[64], host[PATH_MAX + 64], sub[PATH_MAX + 64 + NAME_MAX + 2], path[NAME_MAX + 2];
	char rel[PATH_MAX];
	json_t *ans = NULL;
	struct dirent *de;
	int rc = 0;

	if (jsonreq_only(head, members, e) < 0 ||
	    unpack(k, data, len, name, sizeof(name), host, sizeof(host), &ans, e) < 0)
		return -1;
	DIR *d = opendir(host);
	if (!d)
		rc = err_set(e, errno, "read '%s'", host);
	while (rc == 0 && d && (de = readdir(d)) != NULL) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", host, de->d_name);
		snprintf(path, sizeof(path), "/%s", de->d_name);
		if (lstat(sub, &st) < 0 || !S_ISDIR(st.st_mode))
			rc = err_setk(e, ERR_INPUT, 0,
				      "the template's top entry '%s' is not a directory", de->d_name);
		else if (sandbox_path_rel(path, rel, sizeof(rel), e) < 0)
			rc = err_classify(e, ERR_INPUT);
		else if (sandbox_put(k->sb, sub, path, 0, e) < 0)
			rc = e->kind == ERR_USAGE ? err_classify(e, ERR_INPUT) : -1;
		else
			keeper_note_top(k, rel);
	}
	if (d)
		closedir(d);
	struct err ignored;
	rm_tree_at(k->dir_fd, name, &ignored);
	if (rc == 0)
		rc = send_answer(
		    fd,
		    json_pack("{s:I,s:I}", "files",
			      (json_int_t)json_array_size(json_object_get(ans, "taken")), "bytes",
			      json_integer_value(json_object_get(ans, "bytes_taken"))),
		    NULL, 0, e);
	json_decref(ans);
	return rc;
}

/*
 * download: the directory at `path` as one gzip'd tar (pack_path(): sorted
 * names, regular files and directories, modes 0644 or 0755), taken out by
 * the backend's get (links and special files left out, at most the disk's
 * size).  A file is ERR_INPUT: read takes one file.
 */
int op_download(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
		struct err *e)
{
	static const char *const members[] = {"op", "secret", "path", NULL};
	char rel[PATH_MAX], name[64], host[PATH_MAX + 64];
	struct sandbox_dirent ent;
	const char *path;
	void *tar = NULL;
	size_t n = 0;

	(void)data;
	if (path_call(head, members, len, &path, rel, sizeof(rel), e) < 0)
		return -1;
	if (stat_entry(k, path, &ent) && ent.type != 'd')
		return err_setk(e, ERR_INPUT, 0,
				"'%s' is not a directory (a download takes a directory; read "
				"takes a file)",
				path);
	if (temp_name(name, sizeof(name), "g-", e) < 0)
		return -1;
	snprintf(host, sizeof(host), "%s/%s", k->dir, name);
	int rc = sandbox_get(k->sb, path, host, e);
	if (rc < 0 && e->kind == ERR_USAGE)
		err_classify(e, ERR_INPUT);
	struct stat st;
	if (rc == 0 && (fstatat(k->dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			!S_ISDIR(st.st_mode)))
		rc = err_setk(e, ERR_INPUT, 0, "'%s' is not a directory", path);
	/* The archive of a full disk is a little larger than the files. */
	uint64_t max = k->disk_bytes + k->disk_bytes / 8 + (1u << 20);
	if (rc == 0)
		rc = pack(k, name, max, &tar, &n, e);
	struct err ignored;
	rm_tree_at(k->dir_fd, name, &ignored);
	unlinkat(k->dir_fd, name, 0);
	if (rc == 0)
		rc = send_answer(fd, json_pack("{s:s,s:I}", "path", path, "size", (json_int_t)n),
				 tar, n, e);
	free(tar);
	return rc;
}
