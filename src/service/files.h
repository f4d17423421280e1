/* The files a service worker grades from: assignment versions unpacked once per host, submissions
 * spooled per attempt. */
#ifndef PROCTOR_SERVICE_FILES_H
#define PROCTOR_SERVICE_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct store;

/*
 * A worker needs nothing but the database and its images: an assignment
 * version's archive comes out of the store's blobs and is unpacked once per
 * host into STATE/service/assignments/SHA256/ (the archive's digest names
 * it, so two versions with the same archive share it and a half-written
 * directory is never seen: it is unpacked beside and renamed in).
 *
 * The archive is untrusted structure even from an instructor's token: it is
 * unpacked by proctor-helper intake (libarchive, no privilege, uid
 * SVC_UNPACK_UID, the intake's refusals: links, devices, "..", bombs), then
 * made root's and read-only before anything reads it as an assignment.
 */

/* The unprivileged uid that unpacks assignment archives: below every slot's. */
#define SVC_UNPACK_UID 1599999999u

/* Limits of an unpacked assignment. */
#define SVC_ASSIGNMENT_MAX_BYTES    (256ull << 20)
#define SVC_ASSIGNMENT_MAX_ENTRIES  20000
#define SVC_ASSIGNMENT_MAX_EXPANDED (1ull << 30)

/*
 * The directory of the assignment whose archive has digest `sha256`,
 * unpacking it first if this host has not: `helper` is proctor-helper's
 * path.  A refused archive is ERR_INPUT (the version cannot be graded
 * anywhere); a store or disk failure is ERR_INTERNAL.
 */
int svc_assignment_dir(struct store *st, const char *state_dir, const char *helper,
		       const char *sha256, char *ret, size_t cap, struct err *e);

/* Write blob `sha256` to a new 0600 file STATE/service/spool/NAME; ret gets its path. */
int svc_spool_blob(struct store *st, const char *state_dir, const char *sha256, const char *name,
		   char *ret, size_t cap, struct err *e);

#endif
