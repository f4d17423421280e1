/* Submission intake: a directory or zip/tar archive in, only allowlisted regular files out. */

/*
 * Theory of operation.  This runs in proctor-helper as the sandbox slot's
 * uid, on bytes a student chose.  Three invariants:
 *
 * 1. Nothing is written outside dest_dirfd.  Every file is created with
 *    openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV) and
 *    O_EXCL, after its name passed check_name() (relative, no "..", UTF-8
 *    without control characters or backslashes).  Intake never creates a
 *    link, device or FIFO, so there is nothing to write through.
 *
 * 2. The caller sees all of the taken files or none.  They are written into
 *    a fresh staging directory below dest_dirfd, and its top-level entries
 *    are renamed into dest_dirfd only once the whole submission is accepted;
 *    a rejection or our own failure removes it.  (Only a failed final
 *    rename, our I/O fault reported as -1, could leave part behind.)
 *
 * 3. Everything the submission controls has a cap: entries looked at
 *    (counted before any data is read or written), bytes libarchive
 *    actually produced (max_expanded: a header may lie), bytes taken, path
 *    length, directory depth.
 *
 * 4. Only what proctor opened is read.  Intake gets a descriptor, never a
 *    path: an archive's open file, or a directory's, or (in the helper)
 *    the socket of proctor's opener, which looks entries up below the
 *    directory proctor opened (opener.h).  Every lookup is by relative
 *    path below that root, without symlinks or mount crossings, so a
 *    symlink swapped into the submission's path or tree after proctor
 *    opened it changes nothing, and the submission may sit where the
 *    helper's uid could never reach it (a 0700 home directory).
 *
 * Both kinds are read twice.  The first pass writes nothing: it counts,
 * refuses bad names and types, lists, and (for an archive) budgets declared
 * sizes and decides the top-level directory, the allowlist and name
 * conflicts.  The second pass checks everything again as it writes.  In a
 * directory, symlinks are listed as ignored and never followed, mount
 * points are not crossed, and a subdirectory below which no glob can match
 * is listed, not entered (a virtualenv costs one entry, not thousands).
 */
#include "grade/intake.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "grade/opener.h"
#include "scratch.h"
#include "util.h"

/* Internal return convention: 0 go on, REJECTED the submission was refused
 * (res->reason is set; stop), -1 our own failure (err is set). */
#define REJECTED 1

#define PATH_LEN_MAX   4095 /* bytes of a relative path, as PATH_MAX */
#define NAME_LEN_MAX   255  /* bytes of one component, as NAME_MAX */
#define IGNORED_MAX    1000
#define BUF_SIZE       65536
#define STAGING_PREFIX ".proctor-intake-"
/* macOS's zip adds this folder beside the real one; it must not stop the
 * top-level directory from being stripped. */
#define MACOS_JUNK "__MACOSX"

struct strv {
	char **v;
	size_t n, cap;
};

/* One archive entry as the scan pass saw it. */
struct arc_entry {
	char *path;	   /* normalized, before stripping; "" for the root itself */
	const char *final; /* path after stripping (points into path or ""), "" = skip */
	bool dir, take;
	uint64_t size; /* declared */
};

struct arc_list {
	struct arc_entry *v;
	size_t n, cap;
};

struct intake {
	const struct intake_rules *rules;
	struct intake_result *res; /* rejected and reason are written here */
	int staging;		   /* fd of the staging directory */
	int tree_fd;	      /* a directory submission: its directory, or the opener's socket */
	bool tree_remote;     /* tree_fd is the opener's socket (opener_request) */
	const char *tree_top; /* the stripped top-level directory, or "" */
	uint64_t pending;     /* names listed and not yet visited (list_dir) */
	struct strv taken, ignored;
	uint64_t entries, expanded, bytes_taken;
	bool dry_run;	   /* directory pass 1: count, check and list, write nothing */
	bool ignored_done; /* the ignored list is complete (directory pass 2) */
	char *buf;	   /* BUF_SIZE bytes */
};

static int strv_push(struct strv *s, const char *str, const char *suffix)
{
	char *copy;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));
		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	if (asprintf(&copy, "%s%s", str, suffix ? suffix : "") < 0)
		return -1;
	s->v[s->n++] = copy;
	return 0;
}

static void strv_free(struct strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	*s = (struct strv){0};
}

static void strv_sort(struct strv *s)
{
	if (s->n > 1) /* s->v may be NULL, which qsort() must not get */
		qsort(s->v, s->n, sizeof(*s->v), strcmp_ptr);
}

/* Length of the valid UTF-8 sequence at s (n > 0 bytes left) and its code
 * point, or 0: no overlong forms, no surrogates, nothing past U+10FFFF. */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	size_t len;
	uint32_t c, min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2, c = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3, c = s[0] & 0x0f, min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4, c = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* C0, DEL and C1 controls. */
static bool is_control(uint32_t c)
{
	return c < 0x20 || (c >= 0x7f && c <= 0x9f);
}

/* Copy untrusted text into a message: control characters and bytes that
 * are not UTF-8 become '?', and long text is cut at a character boundary,
 * so the reason is always one line of valid UTF-8 (it goes into JSON). */
static void show(char *out, size_t cap, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), o = 0;

	for (size_t i = 0; i < n;) {
		uint32_t c = 0;
		size_t len = utf8_seq(p + i, n - i, &c);
		size_t need = len && !is_control(c) ? len : 1;
		if (o + need + 4 > cap) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		if (need == 1 && (len == 0 || is_control(c)))
			out[o] = '?';
		else
			memcpy(out + o, p + i, need);
		o += need;
		i += len ? len : 1;
	}
	out[o] = '\0';
}

/* Refuse the whole submission: "entry 'NAME': WHY" (or just WHY). */
__attribute__((format(printf, 3, 4))) static int reject(struct intake *in, const char *entry,
							const char *fmt, ...)
{
	char why[400], clean_why[400], name[100];
	struct intake_result *r = in->res;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	show(clean_why, sizeof(clean_why), why);
	r->rejected = true;
	if (entry) {
		show(name, sizeof(name), entry);
		snprintf(r->reason, sizeof(r->reason), "entry '%s': %s", name, clean_why);
	} else {
		snprintf(r->reason, sizeof(r->reason), "%s", clean_why);
	}
	return REJECTED;
}

/*
 * Validate an entry name and write its normalized form to out (at least
 * PATH_LEN_MAX + 1 bytes): empty and "." components dropped, no trailing
 * slash; "" for the root itself.
 */
static int check_name(struct intake *in, const char *raw, char *out)
{
	const unsigned char *p = (const unsigned char *)raw;
	size_t n = strlen(raw), o = 0;

	if (n == 0)
		return reject(in, raw, "empty name");
	if (n > PATH_LEN_MAX)
		return reject(in, raw, "name longer than %d bytes", PATH_LEN_MAX);
	for (size_t i = 0; i < n;) {
		uint32_t c = 0;
		size_t len = utf8_seq(p + i, n - i, &c);
		if (len == 0)
			return reject(in, raw, "name is not valid UTF-8");
		if (is_control(c))
			return reject(in, raw, "name contains a control character");
		if (c == '\\')
			return reject(in, raw, "name contains a backslash");
		i += len;
	}
	if (raw[0] == '/')
		return reject(in, raw, "absolute path");
	for (const char *c = raw; *c != '\0';) {
		size_t len = strcspn(c, "/");
		if (len == 2 && c[0] == '.' && c[1] == '.')
			return reject(in, raw, "leaves the tree ('..')");
		if (len > NAME_LEN_MAX)
			return reject(in, raw, "a component is longer than %d bytes", NAME_LEN_MAX);
		if (len > 0 && !(len == 1 && c[0] == '.')) {
			if (o > 0)
				out[o++] = '/';
			memcpy(out + o, c, len);
			o += len;
		}
		c += len;
		if (*c == '/')
			c++;
	}
	out[o] = '\0';
	return 0;
}

static bool matches(const struct intake_rules *rules, const char *path)
{
	if (rules->as_is)
		return true;
	for (size_t i = 0; i < rules->n_globs; i++)
		if (fnmatch(rules->globs[i], path, FNM_PATHNAME) == 0)
			return true;
	return false;
}

/* Whether some glob could match a path below directory `dir`.  With
 * FNM_PATHNAME a '/' is matched only by a '/', so the glob needs more
 * components than dir, and its first ones must match dir. */
static bool may_match_below(const struct intake_rules *rules, const char *dir)
{
	char prefix[PATH_LEN_MAX + 1];
	size_t k = 1;

	if (rules->as_is)
		return true;
	for (const char *s = dir; *s; s++)
		k += *s == '/';
	for (size_t i = 0; i < rules->n_globs; i++) {
		const char *g = rules->globs[i], *p = g;
		size_t seen = 0;
		while ((p = strchr(p, '/')) != NULL && ++seen < k)
			p++;
		if (!p)
			continue; /* k components or fewer */
		if ((size_t)(p - g) >= sizeof(prefix))
			return true; /* too long to judge: look inside */
		memcpy(prefix, g, (size_t)(p - g));
		prefix[p - g] = '\0';
		if (fnmatch(prefix, dir, FNM_PATHNAME) == 0)
			return true;
	}
	return false;
}

/* Whether a glob starts with the directory `top` (len bytes) and a slash,
 * as a glob for C files in "src" does: then a submission of just that
 * directory is laid out as the assignment expects, and is not stripped. */
static bool glob_names_dir(const struct intake_rules *rules, const char *top, size_t len)
{
	if (rules->as_is)
		return true; /* nothing is stripped */
	for (size_t i = 0; i < rules->n_globs; i++)
		if (strncmp(rules->globs[i], top, len) == 0 && rules->globs[i][len] == '/')
			return true;
	return false;
}

static int ignore(struct intake *in, const char *path, const char *suffix, struct err *e)
{
	if (in->ignored_done || in->ignored.n >= IGNORED_MAX)
		return 0;
	if (strv_push(&in->ignored, path, suffix) < 0)
		return err_set(e, ENOMEM, "list ignored '%s'", path);
	return 0;
}

static int add_taken(struct intake *in, const char *path, uint64_t n)
{
	in->bytes_taken += n;
	if (in->bytes_taken > in->rules->max_bytes)
		return reject(in, path, "taken files exceed max_bytes (%" PRIu64 ")",
			      in->rules->max_bytes);
	return 0;
}

static int add_expanded(struct intake *in, const char *path, uint64_t n)
{
	if (n > in->rules->max_expanded || in->expanded > in->rules->max_expanded - n)
		return reject(in, path, "archive expands past %" PRIu64 " bytes",
			      in->rules->max_expanded);
	in->expanded += n;
	return 0;
}

/* Create `path` in the staging directory (parents too) for writing, and
 * record it as taken. */
static int take_create(struct intake *in, const char *path, bool exec, int *ret_fd, struct err *e)
{
	char parent[PATH_LEN_MAX + 1];
	const char *slash = strrchr(path, '/');
	mode_t mode = exec ? 0755 : 0644;
	int fd;

	if (slash) {
		memcpy(parent, path, (size_t)(slash - path));
		parent[slash - path] = '\0';
		if (mkdir_p_at(in->staging, parent, 0755, (uid_t)-1, (gid_t)-1, e) < 0)
			return err_wrap(e, "create '%s'", path);
	}
	/* SECURITY: confined below the staging directory, no symlinks, no
	 * mount crossing, never an existing file. */
	fd = open_beneath(in->staging, path, O_WRONLY | O_CREAT | O_EXCL, mode);
	if (fd < 0)
		return err_set(e, errno, "create '%s'", path);
	/* The exact mode, whatever the umask. */
	if (fchmod(fd, mode) < 0 || strv_push(&in->taken, path, NULL) < 0) {
		int saved = errno ? errno : ENOMEM;
		close(fd);
		return err_set(e, saved, "create '%s'", path);
	}
	*ret_fd = fd;
	return 0;
}

/* Sorts the taken list. */
static int check_required(struct intake *in)
{
	strv_sort(&in->taken);
	for (size_t i = 0; i < in->rules->n_required; i++) {
		const char *want = in->rules->required[i];
		if (!in->taken.n ||
		    !bsearch(&want, in->taken.v, in->taken.n, sizeof(char *), strcmp_ptr))
			return reject(in, NULL, "required file '%s' is missing", want);
	}
	return 0;
}

/* Why an entry of this type (S_IF* bits, as libarchive's AE_IF*) is refused;
 * NULL for regular files and directories. */
static const char *type_refusal(mode_t type)
{
	switch (type & S_IFMT) {
	case S_IFREG:
	case S_IFDIR:
		return NULL;
	case S_IFLNK:
		return "symbolic links are not accepted";
	case S_IFCHR:
	case S_IFBLK:
		return "device files are not accepted";
	case S_IFIFO:
		return "FIFOs are not accepted";
	case S_IFSOCK:
		return "sockets are not accepted";
	default:
		return "entries of unknown type are not accepted";
	}
}

/* ---- archives ---- */

static int arc_push(struct arc_list *l, const char *path, bool dir, uint64_t size)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct arc_entry *v = realloc(l->v, cap * sizeof(*v));
		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	char *copy = strdup(path);
	if (!copy)
		return -1;
	l->v[l->n++] = (struct arc_entry){.path = copy, .final = copy, .dir = dir, .size = size};
	return 0;
}

static void arc_free(struct arc_list *l)
{
	for (size_t i = 0; l->v && i < l->n; i++)
		free(l->v[i].path);
	free(l->v);
}

static struct archive *arc_open(struct intake *in, int fd, struct err *e, int *rc)
{
	struct archive *a;

	if (lseek(fd, 0, SEEK_SET) < 0) {
		*rc = err_set(e, errno, "rewind the submission");
		return NULL;
	}
	a = archive_read_new();
	if (!a) {
		*rc = err_set(e, ENOMEM, "archive_read_new");
		return NULL;
	}
	/* Formats are detected by content, never by the file name. */
	archive_read_support_filter_gzip(a);
	archive_read_support_format_zip(a);
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	if (archive_read_open_fd(a, fd, BUF_SIZE) != ARCHIVE_OK) {
		const char *msg = archive_error_string(a);
		*rc = reject(in, NULL, "submission is not a directory, zip or tar archive (%s)",
			     msg ? msg : "unrecognized");
		archive_read_free(a);
		return NULL;
	}
	return a;
}

/* A header or data read failed: the archive is damaged, or no archive. */
static int damaged(struct intake *in, struct archive *a, const char *entry)
{
	const char *msg = archive_error_string(a);

	if (!msg)
		msg = "read error";
	if (entry)
		return reject(in, entry, "archive is damaged: %s", msg);
	if (in->entries == 0)
		return reject(in, NULL, "submission is not a directory, zip or tar archive (%s)",
			      msg);
	return reject(in, NULL, "archive is damaged after %" PRIu64 " entries: %s", in->entries,
		      msg);
}

/* Validate one header: its name (normalized into out) and its type. */
static int check_entry(struct intake *in, struct archive_entry *ae, char *out, bool *ret_dir)
{
	const char *raw = archive_entry_pathname(ae), *why;
	mode_t type = archive_entry_filetype(ae);
	int rc;

	if (!raw)
		raw = archive_entry_pathname_utf8(ae);
	if (!raw)
		return reject(in, NULL, "entry %" PRIu64 ": name cannot be read", in->entries);
	rc = check_name(in, raw, out);
	if (rc)
		return rc;
	if (archive_entry_hardlink(ae))
		return reject(in, raw, "hard links are not accepted");
	if (archive_entry_symlink(ae))
		type = AE_IFLNK;
	why = type_refusal(type);
	if (why)
		return reject(in, raw, "%s", why);
	/* Directories may carry setgid (shared project folders); we create
	 * our own directories, so only files matter. */
	if (type == AE_IFREG && (archive_entry_mode(ae) & (S_ISUID | S_ISGID)))
		return reject(in, raw, "setuid/setgid files are not accepted");
	*ret_dir = type == AE_IFDIR;
	return 0;
}

/* Read past the data of the current entry, writing it to out_fd if >= 0.
 * A skipped entry with a declared size is charged that size without being
 * decompressed (a gzip stream still inflates it, but no more: the tar
 * header's size is exactly what follows); everything actually read is
 * charged as read. */
static int consume(struct intake *in, struct archive *a, struct archive_entry *ae, const char *path,
		   int out_fd, struct err *e)
{
	if (out_fd < 0 && archive_entry_size_is_set(ae)) {
		int64_t size = archive_entry_size(ae);
		if (size > 0 && add_expanded(in, path, (uint64_t)size))
			return REJECTED;
		if (archive_read_data_skip(a) != ARCHIVE_OK)
			return damaged(in, a, path);
		return 0;
	}
	for (;;) {
		la_ssize_t n = archive_read_data(a, in->buf, BUF_SIZE);
		if (n == 0)
			return 0;
		if (n < 0)
			return damaged(in, a, path);
		if (add_expanded(in, path, (uint64_t)n))
			return REJECTED;
		if (out_fd < 0)
			continue;
		if (add_taken(in, path, (uint64_t)n))
			return REJECTED;
		if (write_all(out_fd, in->buf, (size_t)n) < 0)
			return err_set(e, errno, "write '%s'", path);
	}
}

/*
 * One reading of the archive.  Pass 1 (l->n == 0 on entry): count, check,
 * charge declared sizes, list into l.  Pass 2: the same entries again, the
 * taken ones written to the staging directory.
 */
static int read_pass(struct intake *in, int fd, struct arc_list *l, bool write, struct err *e)
{
	char path[PATH_LEN_MAX + 1];
	struct archive_entry *ae;
	struct archive *a;
	int rc = 0;

	a = arc_open(in, fd, e, &rc);
	if (!a)
		return rc;
	in->expanded = 0;
	for (size_t i = 0; rc == 0; i++) {
		int r = archive_read_next_header(a, &ae), out = -1;
		bool dir = false;
		if (r == ARCHIVE_EOF) {
			if (write && i != l->n)
				rc = reject(in, NULL, "archive reads differently the second time");
			break;
		}
		if (r < ARCHIVE_WARN) {
			rc = damaged(in, a, NULL);
			break;
		}
		if (!write && ++in->entries > in->rules->max_entries) {
			rc = reject(in, NULL, "more than %" PRIu64 " entries",
				    in->rules->max_entries);
			break;
		}
		rc = check_entry(in, ae, path, &dir);
		if (rc)
			break;
		if (!write) {
			int64_t size = archive_entry_size_is_set(ae) ? archive_entry_size(ae) : 0;
			if (arc_push(l, path, dir, size > 0 ? (uint64_t)size : 0) < 0)
				rc = err_set(e, ENOMEM, "list entries");
		} else if (i >= l->n || strcmp(path, l->v[i].path) != 0 || dir != l->v[i].dir) {
			rc = reject(in, path, "archive reads differently the second time");
		} else if (l->v[i].take) {
			rc = take_create(in, l->v[i].final, archive_entry_mode(ae) & 0111, &out, e);
		} else if (dir && in->rules->as_is && l->v[i].final[0]) {
			/* An upload keeps its empty directories too (staging
			 * holds only what intake made: no link to follow). */
			if (mkdir_p_at(in->staging, l->v[i].final, 0755, (uid_t)-1, (gid_t)-1, e) < 0)
				rc = err_wrap(e, "create '%s'", l->v[i].final);
		}
		if (rc == 0)
			rc = consume(in, a, ae, out >= 0 ? l->v[i].final : path, out, e);
		xclose(out);
	}
	archive_read_free(a);
	return rc;
}

/* If every entry (but macOS's junk folder) is the directory X or below X/,
 * point *ret_top at X and return its length; else 0. */
static size_t strip_top(const struct arc_list *l, const char **ret_top)
{
	const char *top = NULL;
	size_t top_len = 0;

	for (size_t i = 0; i < l->n; i++) {
		const char *p = l->v[i].path;
		size_t len = strcspn(p, "/");
		if (len == 0)
			continue; /* the root itself */
		if (len == strlen(MACOS_JUNK) && strncmp(p, MACOS_JUNK, len) == 0)
			continue;
		if (p[len] == '\0' && !l->v[i].dir)
			return 0; /* a file at the top */
		if (!top) {
			top = p;
			top_len = len;
		} else if (len != top_len || strncmp(p, top, len) != 0) {
			return 0;
		}
	}
	*ret_top = top;
	return top_len;
}

static int cmp_final(const void *a, const void *b)
{
	return strcmp((*(struct arc_entry *const *)a)->final,
		      (*(struct arc_entry *const *)b)->final);
}

/* Strip, refuse ambiguous names, choose what to take, charge declared sizes. */
static int plan(struct intake *in, struct arc_list *l, struct err *e)
{
	const char *top = NULL;
	size_t strip = strip_top(l, &top), n = 0;
	struct arc_entry **sorted;
	char key[PATH_LEN_MAX + 1];
	struct arc_entry probe = {.final = key}, *pp = &probe;
	uint64_t declared = 0;
	int rc = 0;

	if (strip && glob_names_dir(in->rules, top, strip))
		strip = 0;
	for (size_t i = 0; strip && i < l->n; i++) {
		/* X/a becomes a, X itself "" (skipped); __MACOSX/.. stays. */
		char *p = l->v[i].path;
		if (strncmp(p, top, strip) == 0 && (p[strip] == '/' || p[strip] == '\0'))
			l->v[i].final = p + strip + (p[strip] == '/');
	}

	sorted = malloc((l->n ? l->n : 1) * sizeof(*sorted));
	if (!sorted)
		return err_set(e, ENOMEM, "sort entries");
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].final[0] != '\0')
			sorted[n++] = &l->v[i];
	qsort(sorted, n, sizeof(*sorted), cmp_final);
	/* The same name twice (but a directory twice) is ambiguous. */
	for (size_t i = 1; i < n && !rc; i++) {
		struct arc_entry *a = sorted[i - 1], *b = sorted[i];
		if (strcmp(a->final, b->final) != 0 || (a->dir && b->dir))
			continue;
		rc = reject(in, b->path,
			    a->dir != b->dir ? "is both a file and a directory" : "appears twice");
	}
	/* A file must not also be a parent of another entry. */
	for (size_t i = 0; i < n && !rc; i++) {
		const char *f = sorted[i]->final;
		for (const char *s = strchr(f, '/'); s && !rc; s = strchr(s + 1, '/')) {
			memcpy(key, f, (size_t)(s - f));
			key[s - f] = '\0';
			struct arc_entry **hit =
			    bsearch(&pp, sorted, n, sizeof(*sorted), cmp_final);
			if (hit && !(*hit)->dir)
				rc = reject(in, (*hit)->path, "is both a file and a directory");
		}
	}
	free(sorted);

	for (size_t i = 0; i < l->n && !rc; i++) {
		struct arc_entry *x = &l->v[i];
		if (x->dir || x->final[0] == '\0')
			continue;
		x->take = matches(in->rules, x->final);
		if (!x->take) {
			rc = ignore(in, x->final, NULL, e);
			continue;
		}
		declared += x->size;
		if (declared > in->rules->max_bytes || declared < x->size)
			rc = reject(in, x->path, "taken files exceed max_bytes (%" PRIu64 ")",
				    in->rules->max_bytes);
	}
	return rc;
}

static int take_archive(struct intake *in, int fd, struct err *e)
{
	struct arc_list l = {0};
	int rc = read_pass(in, fd, &l, false, e);

	if (rc == 0)
		rc = plan(in, &l, e);
	if (rc == 0)
		rc = read_pass(in, fd, &l, true, e);
	arc_free(&l);
	return rc;
}

/* ---- directories ---- */

/*
 * A directory is read through lookups by relative path (opener.h): below
 * the directory descriptor itself with the caller's credentials, or, in
 * the helper, through the socket of proctor's opener, which may read what
 * the helper's uid may not.  Either way nothing is ever resolved outside
 * the tree proctor opened, through a symlink or across a mount.
 */
static int tree_path(struct intake *in, const char *rel, char full[PATH_LEN_MAX + 1])
{
	const char *top = in->tree_top;

	if ((size_t)snprintf(full, PATH_LEN_MAX + 1, "%s%s%s", top, *top && *rel ? "/" : "", rel) >
	    PATH_LEN_MAX)
		return reject(in, rel, "a name below is longer than %d bytes", PATH_LEN_MAX);
	return 0;
}

/* What `rel` is; with ret_fd, a read-only descriptor if a regular file. */
static int tree_lookup(struct intake *in, const char *rel, struct opener_stat *ret_st, int *ret_fd,
		       struct err *e)
{
	char full[PATH_LEN_MAX + 1];

	if (tree_path(in, rel, full))
		return REJECTED;
	if (in->tree_remote)
		return opener_request(in->tree_fd, full, ret_st, ret_fd, e);
	return opener_lookup(in->tree_fd, full, ret_st, ret_fd, e);
}

/* A lookup below the submission failed (e->errnum says why): a symlink or
 * mount point that appeared since the listing is ignored, an entry gone
 * since is skipped.  A directory on the way that is no directory any more
 * (ENOTDIR), a file held by the student's lease (EBUSY) and a hard link to
 * a file of someone else's (EPERM) are the submission's doing.  Anything
 * else is ours: the helper reads through proctor's opener, and a student
 * is not charged for how the operator stored the submission. */
static int lookup_failed(struct intake *in, const char *path, struct err *e)
{
	if (e->errnum == ELOOP)
		return ignore(in, path, " (symlink)", e);
	if (e->errnum == EXDEV)
		return ignore(in, path, " (other filesystem)", e);
	if (e->errnum == ENOENT)
		return 0;
	if (e->errnum == ENOTDIR || e->errnum == EBUSY)
		return reject(in, path, "changed while being read");
	if (e->errnum == EPERM)
		return reject(in, path, "a hard link to a file the submitter does not own");
	return err_wrap(e, "cannot read '%s' of the submission", path);
}

static int copy_file(struct intake *in, const char *path, struct err *e)
{
	struct opener_stat st;
	_cleanup_close_ int src = -1, out = -1;
	int rc;

	/* The descriptor is of the inode the lookup described, opened only
	 * if it is a regular file: a FIFO, device or directory swapped in
	 * since the listing is described, never opened. */
	rc = tree_lookup(in, path, &st, &src, e);
	if (rc)
		return rc == REJECTED ? rc : lookup_failed(in, path, e);
	if (S_ISLNK(st.mode))
		return ignore(in, path, " (symlink)", e);
	if (!S_ISREG(st.mode) || src < 0) {
		const char *why = type_refusal(st.mode);
		return reject(in, path, "%s", why ? why : "changed while being read");
	}
	if (st.mode & (S_ISUID | S_ISGID))
		return reject(in, path, "setuid/setgid files are not accepted");
	rc = take_create(in, path, st.mode & 0111, &out, e);
	while (rc == 0) {
		ssize_t n = read(src, in->buf, BUF_SIZE);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			rc = err_set(e, errno, "read '%s'", path);
		else if (n == 0)
			break;
		else if ((rc = add_taken(in, path, (uint64_t)n)) == 0 &&
			 write_all(out, in->buf, (size_t)n) < 0)
			rc = err_set(e, errno, "write '%s'", path);
	}
	return rc;
}

static int walk(struct intake *in, const char *rel, unsigned depth, struct err *e);

static int visit(struct intake *in, const char *name, const char *rel, unsigned depth,
		 struct err *e)
{
	char path[PATH_LEN_MAX + 2], clean[PATH_LEN_MAX + 1];
	struct opener_stat st;
	int rc;

	in->pending--;
	if (++in->entries > in->rules->max_entries)
		return reject(in, NULL, "more than %" PRIu64 " entries", in->rules->max_entries);
	if ((size_t)snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", name) >=
	    sizeof(path))
		return reject(in, rel, "a name below is longer than %d bytes", PATH_LEN_MAX);
	rc = check_name(in, path, clean);
	if (rc)
		return rc;
	rc = tree_lookup(in, path, &st, NULL, e);
	if (rc)
		return rc == REJECTED ? rc : lookup_failed(in, path, e);
	if (S_ISLNK(st.mode))
		return ignore(in, path, " (symlink)", e);
	if (S_ISREG(st.mode)) {
		if (st.mode & (S_ISUID | S_ISGID))
			return reject(in, path, "setuid/setgid files are not accepted");
		if (!matches(in->rules, path))
			return ignore(in, path, NULL, e);
		if (!in->dry_run)
			return copy_file(in, path, e);
		if (strv_push(&in->taken, path, NULL) < 0)
			return err_set(e, ENOMEM, "list taken '%s'", path);
		return add_taken(in, path, st.size);
	}
	if (!S_ISDIR(st.mode))
		return reject(in, path, "%s", type_refusal(st.mode));
	if (!may_match_below(in->rules, path))
		return ignore(in, path, "/", e);
	if (depth >= TREE_MAX_DEPTH)
		return reject(in, path, "nested deeper than %d directories", TREE_MAX_DEPTH);
	return walk(in, path, depth + 1, e);
}

static int push_name(const char *name, void *arg, struct err *e)
{
	if (strv_push(arg, name, NULL) < 0)
		return err_set(e, ENOMEM, "list");
	return 0;
}

/* The names in directory `rel`, read all at once so that no descriptor is
 * held while the entries are visited: at most one more than the entry
 * budget leaves room for, which is enough for visit() to refuse the
 * submission at the right entry. */
static int list_dir(struct intake *in, const char *rel, struct strv *names, struct err *e)
{
	const uint64_t max = in->rules->max_entries, used = in->entries + in->pending;
	const uint64_t left = used >= max ? 0 : max - used;
	const size_t room = left >= SIZE_MAX ? SIZE_MAX : (size_t)left + 1;
	char full[PATH_LEN_MAX + 1];
	int rc;

	if (tree_path(in, rel, full))
		return REJECTED;
	if (in->tree_remote)
		rc = opener_request_list(in->tree_fd, full, room, push_name, names, e);
	else
		rc = opener_list(in->tree_fd, full, room, push_name, names, e);
	if (rc < 0) {
		strv_free(names);
		if (*rel == '\0')
			return err_wrap(e, "read the submission");
		/* Replaced since it was looked at. */
		if (e->errnum == ENOTDIR)
			return reject(in, rel, "changed while being read");
		return lookup_failed(in, rel, e);
	}
	in->pending += names->n;
	return 0;
}

static int walk(struct intake *in, const char *rel, unsigned depth, struct err *e)
{
	struct strv names = {0};
	int rc = list_dir(in, rel, &names, e);
	size_t i = 0;

	while (rc == 0 && i < names.n)
		rc = visit(in, names.v[i++], rel, depth, e);
	in->pending -= names.n - i; /* the ones a stop left unvisited */
	strv_free(&names);
	return rc;
}

/* A directory submission: strip a lone top-level directory, then walk. */
static int take_directory(struct intake *in, struct err *e)
{
	char top[NAME_LEN_MAX + 1] = "", clean[PATH_LEN_MAX + 1];
	struct strv names = {0};
	size_t others = 0;
	uint64_t base;
	bool junk = false;
	struct opener_stat st;
	struct err ignored;
	int rc;

	in->tree_top = "";
	rc = list_dir(in, "", &names, e);
	in->pending = 0;
	for (size_t i = 0; rc == 0 && i < names.n; i++) {
		if (strcmp(names.v[i], MACOS_JUNK) == 0)
			junk = true;
		else if (others++ == 0)
			snprintf(top, sizeof(top), "%s", names.v[i]);
	}
	strv_free(&names);
	if (rc)
		return rc;
	if (others == 1 && tree_lookup(in, top, &st, NULL, &ignored) == 0 && S_ISDIR(st.mode) &&
	    !glob_names_dir(in->rules, top, strlen(top))) {
		in->entries += 1 + junk;
		if (in->entries > in->rules->max_entries)
			return reject(in, NULL, "more than %" PRIu64 " entries",
				      in->rules->max_entries);
		rc = check_name(in, top, clean);
		if (rc == 0 && junk)
			rc = ignore(in, MACOS_JUNK, "/", e);
		if (rc)
			return rc;
		in->tree_top = top;
	}
	/* Pass 1 writes nothing, so a refused submission costs no writes;
	 * pass 2 checks everything again as it copies. */
	base = in->entries;
	in->dry_run = true;
	rc = walk(in, "", 0, e);
	if (rc == 0)
		rc = check_required(in);
	strv_free(&in->taken);
	in->entries = base;
	in->bytes_taken = 0;
	in->dry_run = false;
	in->ignored_done = true;
	if (rc == 0)
		rc = walk(in, "", 0, e);
	in->tree_top = "";
	return rc;
}

/* ---- result ---- */

/* SHA-256 over (path, size, content) of the taken files in path order. */
static int digest_taken(struct intake *in, char hex[65], struct err *e)
{
	struct digest *d = digest_new();
	int rc = 0;

	if (!d)
		return err_set(e, ENOMEM, "digest");
	for (size_t i = 0; i < in->taken.n && rc == 0; i++) {
		const char *path = in->taken.v[i];
		int fd = open_beneath(in->staging, path, O_RDONLY, 0);
		struct stat st;
		uint64_t size;
		unsigned char le[8]; /* the size, little-endian */

		if (fd < 0 || fstat(fd, &st) < 0) {
			rc = err_set(e, errno, "digest '%s'", path);
			xclose(fd);
			break;
		}
		size = (uint64_t)st.st_size;
		for (int b = 0; b < 8; b++)
			le[b] = (unsigned char)(size >> (8 * b));
		digest_update_str(d, path);
		digest_update(d, le, sizeof(le));
		for (;;) {
			ssize_t n = read(fd, in->buf, BUF_SIZE);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0)
				rc = err_set(e, errno, "digest '%s'", path);
			if (n <= 0)
				break;
			digest_update(d, in->buf, (size_t)n);
		}
		close(fd);
	}
	if (rc < 0) {
		digest_free(d);
		return rc;
	}
	digest_final(d, hex);
	return 0;
}

/* Sort the lists, check the required files, digest. */
static int finish(struct intake *in, struct err *e)
{
	int rc = check_required(in);

	if (rc)
		return rc;
	strv_sort(&in->ignored);
	return digest_taken(in, in->res->digest, e);
}

/* A fresh directory below dest, named with 64 random bits. */
static int staging_create(int dest, char *name, size_t cap, int *ret_fd, struct err *e)
{
	uint64_t r;

	if (getrandom(&r, sizeof(r), 0) != sizeof(r))
		return err_set(e, errno, "getrandom");
	snprintf(name, cap, STAGING_PREFIX "%016" PRIx64, r);
	if (mkdirat(dest, name, 0700) < 0)
		return err_set(e, errno, "create staging directory '%s'", name);
	*ret_fd = open_beneath(dest, name, O_RDONLY | O_DIRECTORY, 0);
	if (*ret_fd < 0) {
		int saved = errno;
		unlinkat(dest, name, AT_REMOVEDIR);
		return err_set(e, saved, "open staging directory '%s'", name);
	}
	return 0;
}

/* Move every top-level entry of staging into dest: an upload's empty
 * directories are no taken file's parent. */
static int publish_all(struct intake *in, int dest, struct err *e)
{
	int fd = openat(in->staging, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	int rc = 0;

	if (!d) {
		xclose(fd);
		return err_set(e, errno, "read the staging directory");
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (renameat2(in->staging, de->d_name, dest, de->d_name, RENAME_NOREPLACE) < 0)
			rc = err_set(e, errno, "move '%s' into the destination", de->d_name);
	}
	closedir(d);
	return rc;
}

/* Move each top-level entry of the (sorted) taken files into dest. */
static int publish(struct intake *in, int dest, struct err *e)
{
	char top[NAME_LEN_MAX + 1], prev[NAME_LEN_MAX + 1] = "";

	if (in->rules->as_is)
		return publish_all(in, dest, e);

	for (size_t i = 0; i < in->taken.n; i++) {
		size_t len = strcspn(in->taken.v[i], "/");
		memcpy(top, in->taken.v[i], len);
		top[len] = '\0';
		if (strcmp(top, prev) == 0)
			continue; /* the sort keeps everything below top/ together */
		memcpy(prev, top, len + 1);
		/* Never over something the caller already put there. */
		if (renameat2(in->staging, top, dest, top, RENAME_NOREPLACE) < 0)
			return err_set(e, errno, "move '%s' into the destination", top);
	}
	return 0;
}

int intake_submission(int src_fd, int dest_dirfd, const struct intake_rules *rules,
		      struct intake_result *ret, struct err *e)
{
	struct intake_result res = {0};
	struct intake in = {
	    .rules = rules, .res = &res, .staging = -1, .tree_fd = src_fd, .tree_top = ""};
	char staging_name[64];
	struct stat st;
	int rc;

	/* Only the descriptor: intake never resolves a path of the
	 * submission's own (it may not even be able to reach it). */
	if (fstat(src_fd, &st) < 0)
		return err_set(e, errno, "the submission's descriptor");
	in.tree_remote = S_ISSOCK(st.st_mode);
	in.buf = malloc(BUF_SIZE);
	if (!in.buf)
		return err_set(e, ENOMEM, "intake buffer");
	rc = staging_create(dest_dirfd, staging_name, sizeof(staging_name), &in.staging, e);
	if (rc == 0) {
		if (S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode))
			rc = take_directory(&in, e);
		else if (S_ISREG(st.st_mode))
			rc = take_archive(&in, src_fd, e);
		else
			rc = reject(&in, NULL, "submission is not a directory or a regular file");
	}
	if (rc == 0)
		rc = finish(&in, e);
	if (rc == 0)
		rc = publish(&in, dest_dirfd, e);
	if (in.staging >= 0) {
		/* Empty after publish(); holds everything after a rejection. */
		struct err ce;
		int crc = rm_rf_children(in.staging, &ce);
		if (crc == 0 && unlinkat(dest_dirfd, staging_name, AT_REMOVEDIR) < 0)
			crc = err_set(&ce, errno, "remove the staging directory");
		if (crc < 0 && rc >= 0) {
			*e = ce;
			rc = -1;
		}
		close(in.staging);
	}
	free(in.buf);
	if (rc < 0 || rc == REJECTED) {
		strv_free(&in.taken);
		strv_free(&in.ignored);
	}
	if (rc < 0)
		return -1;
	if (rc == 0) {
		res.taken = in.taken.v;
		res.n_taken = in.taken.n;
		res.ignored = in.ignored.v;
		res.n_ignored = in.ignored.n;
		res.bytes_taken = in.bytes_taken;
	}
	*ret = res;
	return 0;
}

void intake_result_free(struct intake_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n_taken; i++)
		free(r->taken[i]);
	free(r->taken);
	for (size_t i = 0; i < r->n_ignored; i++)
		free(r->ignored[i]);
	free(r->ignored);
	*r = (struct intake_result){0};
}
