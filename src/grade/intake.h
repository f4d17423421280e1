/* Submission intake: a directory or archive in, only the allowlisted files out, hostile input refused. */
#ifndef PROCTOR_GRADE_INTAKE_H
#define PROCTOR_GRADE_INTAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct intake_rules {
	const char *const *globs;   /* fnmatch(FNM_PATHNAME) patterns on the relative path */
	size_t n_globs;
	const char *const *required; /* relative paths that must be taken */
	size_t n_required;
	uint64_t max_bytes;          /* total bytes of taken files (submission.max_bytes) */
	uint64_t max_entries;        /* entries looked at, taken or not (default 10000) */
	uint64_t max_expanded;       /* total uncompressed bytes read from an archive */
	/* Take every regular file (globs unused) and every directory, empty
	 * ones too, and keep the layout as it is, never stripping a lone
	 * top-level directory: an upload of a tree (the sandbox API's), not a
	 * submission. */
	bool as_is;
};

/* What intake did.  Lists are owned; free with intake_result_free(). */
struct intake_result {
	bool rejected;               /* the whole submission is refused */
	char reason[512];            /* why, naming the entry: "entry '../x': leaves the tree" */
	char **taken;                /* relative paths written to the destination, sorted */
	size_t n_taken;
	char **ignored;              /* entries present but not allowlisted (capped at 1000) */
	size_t n_ignored;
	uint64_t bytes_taken;
	char digest[65];             /* SHA-256 (hex) over the sorted (path, size, content) of taken files */
};

/*
 * Take a submission from the open descriptor src_fd (still the caller's
 * afterwards; intake never resolves a path of the submission's own):
 *
 *   a regular file: a .zip, .tar, .tar.gz/.tgz archive (libarchive, by
 *     content; read from offset 0, twice, so it must be seekable);
 *   a directory: read below it with the caller's credentials;
 *   a socket: the helper's end of proctor's opener (opener_start()), a
 *     directory read below the root proctor opened, with its credentials;
 *   anything else is refused.
 *
 * If everything sits in one top-level directory (macOS's __MACOSX beside
 * it aside), that directory is stripped, unless a glob starts with its
 * name ("src/..."), so an assignment that expects src/ gets it.  Only
 * regular files whose relative path matches a glob are written, below
 * dest_dirfd, with openat2 (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), mode
 * 0644 or 0755, creating subdirectories as needed.
 *
 * Refused (rejected = true, nothing needs cleaning by the caller beyond
 * dest_dirfd): absolute paths, ".." components, names that are not valid
 * UTF-8 or contain control characters (or backslashes), symlinks or hard
 * links anywhere in an archive, device/FIFO/socket entries, setuid/setgid
 * bits on files (a directory's are ignored: intake makes its own), more
 * than max_entries entries, taken bytes over max_bytes, expanded bytes
 * over max_expanded (zip bombs), a required file missing, a file both
 * present as a directory and a file (or twice).  In a *directory*
 * submission, symlinks are ignored (listed in `ignored` with " (symlink)")
 * and never followed, mount points are not crossed (" (other
 * filesystem)"), and a subdirectory below which no glob can match is
 * listed as "dir/" and not entered.
 *
 * All or nothing: files are written to a staging directory below
 * dest_dirfd and renamed into place (never over an existing name) only if
 * the submission is accepted.  On rejection dest_dirfd is left as it was,
 * and taken/ignored are empty.  Returns -1 only for Proctor's own failures
 * (I/O on the destination, out of memory, the opener failing, a part of
 * the submission the reading credentials cannot read), leaving *ret
 * untouched; a bad submission is a verdict, not an error.
 */
int intake_submission(int src_fd, int dest_dirfd, const struct intake_rules *rules,
		      struct intake_result *ret, struct err *e);

void intake_result_free(struct intake_result *r);

#endif
