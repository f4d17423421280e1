/* JSON request bodies of the service API: bounded parsing and typed fields with errors naming them. */
#ifndef PROCTOR_SERVICE_JSONREQ_H
#define PROCTOR_SERVICE_JSONREQ_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Nesting deeper than this is refused before jansson sees the text. */
#define JSONREQ_MAX_DEPTH 32

/*
 * Parse a request body that must be one JSON object: at most `max_len`
 * bytes, nesting at most JSONREQ_MAX_DEPTH, valid UTF-8, no NUL in
 * strings, no duplicate keys.  On success *ret is a new reference.  The
 * error names the line and column for malformed text.
 */
int jsonreq_parse(const char *text, size_t len, size_t max_len, json_t **ret, struct err *e);

/*
 * A document a user gives (a policy, an extension) as jsonreq_parse reads a
 * body, nesting at most `depth`; the errors are ERR_INPUT, prefixed with
 * `what` ("policy: expected a JSON object").
 */
int jsonreq_parse_doc(const char *text, size_t len, size_t max_len, int depth, const char *what,
		      json_t **ret, struct err *e);

/* Refuse members other than `allowed` (NULL-terminated), naming the first
 * (cut, controls shown as '?'). */
int jsonreq_only(const json_t *obj, const char *const *allowed, struct err *e);
/* The same in a nested object: names are shown after `prefix` ("late."). */
int jsonreq_only_at(const json_t *obj, const char *const *allowed, const char *prefix,
		    struct err *e);

/*
 * A string member of 1..max_len bytes without control characters.
 * Absent: *ret = NULL and 0 when !required, an error naming it otherwise.
 * The pointer is valid while obj is.
 */
int jsonreq_string(const json_t *obj, const char *key, bool required, size_t max_len,
		   const char **ret, struct err *e);

/* An integer member within lo..hi; absent (or null) and !required leaves
 * *ret alone. */
int jsonreq_int(const json_t *obj, const char *key, bool required, int64_t lo, int64_t hi,
		int64_t *ret, struct err *e);
/* The same in a nested object: named after `prefix` ("late."). */
int jsonreq_int_at(const json_t *obj, const char *prefix, const char *key, bool required,
		   int64_t lo, int64_t hi, int64_t *ret, struct err *e);

/* A boolean member; absent or null: def. */
int jsonreq_bool(const json_t *obj, const char *key, bool def, bool *ret, struct err *e);

#endif
