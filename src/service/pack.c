/* Packing a directory or a file into the archive a client uploads (pack.h). */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "service/pack.h"

struct membuf {
	unsigned char *p;
	size_t len, cap, max;
	bool over;
};

static la_ssize_t mem_write(struct archive *a, void *ctx, const void *buf, size_t n)
{
	struct membuf *m = ctx;

	if (m->len + n > m->max) {
		m->over = true;
		archive_set_error(a, EFBIG, "larger than the upload limit");
		return -1;
	}
	if (m->len + n > m->cap) {
		size_t ncap = m->cap ? m->cap : 65536;
		while (ncap < m->len + n)
			ncap *= 2;
		unsigned char *np = realloc(m->p, ncap);
		if (!np) {
			archive_set_error(a, ENOMEM, "out of memory");
			return -1;
		}
		m->p = np;
		m->cap = ncap;
	}
	memcpy(m->p + m->len, buf, n);
	m->len += n;
	return (la_ssize_t)n;
}

static int read_file(const char *path, uint64_t max, void **ret, size_t *len, struct err *e)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;

	if (fd < 0 || fstat(fd, &sb) < 0) {
		err_setk(e, ERR_INPUT, errno, "'%s'", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if ((uint64_t)sb.st_size > max) {
		close(fd);
		return err_setk(e, ERR_INPUT, 0, "'%s' is %lld bytes; the limit is %llu", path,
				(long long)sb.st_size, (unsigned long long)max);
	}
	unsigned char *buf = malloc((size_t)sb.st_size + 1);
	size_t got = 0;
	while (buf && got < (size_t)sb.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (!buf || got != (size_t)sb.st_size) {
		free(buf);
		return err_setk(e, ERR_INPUT, errno, "read '%s'", path);
	}
	*ret = buf;
	*len = got;
	return 0;
}

/* One regular file or directory entry, with fixed owner, time and modes. */
static int add_entry(struct archive *a, const char *host, const char *name, const struct stat *sb,
		     struct err *e)
{
	struct archive_entry *en = archive_entry_new();
	void *data = NULL;
	size_t len = 0;
	int rc = 0;

	if (!en)
		return err_set(e, ENOMEM, "archive entry");
	archive_entry_set_pathname(en, name);
	archive_entry_set_mtime(en, 0, 0);
	if (S_ISDIR(sb->st_mode)) {
		archive_entry_set_filetype(en, AE_IFDIR);
		archive_entry_set_perm(en, 0755);
	} else {
		if (read_file(host, PACK_MAX, &data, &len, e) < 0) {
			archive_entry_free(en);
			return -1;
		}
		archive_entry_set_filetype(en, AE_IFREG);
		archive_entry_set_perm(en, sb->st_mode & 0111 ? 0755 : 0644);
		archive_entry_set_size(en, (la_int64_t)len);
	}
	if (archive_write_header(a, en) != ARCHIVE_OK ||
	    (len && archive_write_data(a, data, len) != (la_ssize_t)len))
		rc = err_set(e, 0, "pack '%s': %s", host, archive_error_string(a));
	free(data);
	archive_entry_free(en);
	return rc;
}

static int add_tree(struct archive *a, const char *host, const char *name, int depth, struct err *e)
{
	struct dirent **list = NULL;
	int n = scandir(host, &list, NULL, alphasort), rc = 0;

	if (n < 0)
		return err_setk(e, ERR_INPUT, errno, "'%s'", host);
	if (depth > 32)
		rc = err_setk(e, ERR_INPUT, 0, "'%s' nests deeper than 32 directories", host);
	for (int i = 0; i < n && rc == 0; i++) {
		const char *d = list[i]->d_name;
		char hp[PATH_MAX], np[PATH_MAX];
		struct stat sb;
		if (strcmp(d, ".") == 0 || strcmp(d, "..") == 0)
			continue;
		snprintf(hp, sizeof(hp), "%s/%s", host, d);
		snprintf(np, sizeof(np), "%s%s%s", name, *name ? "/" : "", d);
		if (lstat(hp, &sb) < 0)
			rc = err_setk(e, ERR_INPUT, errno, "'%s'", hp);
		else if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
			rc = err_setk(e, ERR_INPUT, 0,
				      "'%s' is not a regular file or a directory (symlinks are "
				      "not packed)",
				      hp);
		else if ((rc = add_entry(a, hp, np, &sb, e)) == 0 && S_ISDIR(sb.st_mode))
			rc = add_tree(a, hp, np, depth + 1, e);
	}
	for (int i = 0; i < n; i++)
		free(list[i]);
	free(list);
	return rc;
}

static bool is_archive_name(const char *p)
{
	static const char *const ext[] = {".zip", ".tar", ".tar.gz", ".tgz"};
	size_t n = strlen(p);

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		size_t k = strlen(ext[i]);
		if (n > k && strcmp(p + n - k, ext[i]) == 0)
			return true;
	}
	return false;
}

int pack_path(const char *path, uint64_t max, void **ret, size_t *ret_len, struct err *e)
{
	struct membuf m = {.max = max};
	struct stat sb;
	struct archive *a;
	int rc;

	if (stat(path, &sb) < 0)
		return err_setk(e, ERR_INPUT, errno, "'%s'", path);
	if (S_ISREG(sb.st_mode) && is_archive_name(path)) {
		if ((uint64_t)sb.st_size > max)
			return err_setk(e, ERR_INPUT, 0, "'%s' is %lld bytes; the limit is %llu",
					path, (long long)sb.st_size, (unsigned long long)max);
		return read_file(path, max, ret, ret_len, e);
	}
	if (!S_ISREG(sb.st_mode) && !S_ISDIR(sb.st_mode))
		return err_setk(e, ERR_INPUT, 0, "'%s' is not a file or a directory", path);
	a = archive_write_new();
	if (!a)
		return err_set(e, ENOMEM, "archive");
	/* Deterministic: ustar (a pax header, named without a pid, only for
	 * a name ustar cannot hold), gzip without a timestamp, sorted names,
	 * owner root, time 0; the same tree packs to the same bytes (and
	 * digest). */
	/* Names are bytes (hdrcharset=BINARY): never translated through the
	 * locale, which fails for a name that is not ASCII in the C locale. */
	if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
	    archive_write_set_format_option(a, "pax", "hdrcharset", "BINARY") != ARCHIVE_OK ||
	    archive_write_add_filter_gzip(a) != ARCHIVE_OK ||
	    archive_write_set_filter_option(a, "gzip", "timestamp", NULL) != ARCHIVE_OK ||
	    archive_write_open2(a, &m, NULL, mem_write, NULL, NULL) != ARCHIVE_OK) {
		rc = err_set(e, 0, "archive: %s", archive_error_string(a));
		goto out;
	}
	if (S_ISDIR(sb.st_mode)) {
		rc = add_tree(a, path, "", 0, e);
	} else {
		const char *base = strrchr(path, '/');
		rc = add_entry(a, path, base ? base + 1 : path, &sb, e);
	}
	if (rc == 0 && archive_write_close(a) != ARCHIVE_OK)
		rc = err_set(e, 0, "archive: %s", archive_error_string(a));
	if (m.over)
		rc = err_setk(e, ERR_INPUT, 0, "'%s' packs to more than %llu bytes", path,
			      (unsigned long long)max);
out:
	archive_write_free(a);
	if (rc < 0) {
		free(m.p);
		return -1;
	}
	*ret = m.p;
	*ret_len = m.len;
	return 0;
}
