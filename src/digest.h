/* SHA-256 digests (Nettle) for reproducibility records, and base64 text of bytes. */
#ifndef PROCTOR_DIGEST_H
#define PROCTOR_DIGEST_H

#include <stddef.h>

#include "err.h"

struct digest;

/* Start a SHA-256; NULL on OOM.  Free with digest_final() or digest_free(). */
struct digest *digest_new(void);
void digest_update(struct digest *d, const void *buf, size_t len);
/* Feed a string with its length first, so ("ab","c") != ("a","bc"). */
void digest_update_str(struct digest *d, const char *s);
/* Feed the contents of a file (by path, no symlink following). */
int digest_update_file(struct digest *d, const char *path, struct err *e);
/* Write 64 hex digits + NUL into hex and free d. */
void digest_final(struct digest *d, char hex[65]);
void digest_free(struct digest *d);

/* Bytes as base64 text (RFC 4648, padded), malloc'd; NULL when out of memory. */
char *base64_of(const void *data, size_t len);

#endif
