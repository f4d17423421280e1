/* Capped capture buffer for a program's output, and UTF-8 repair for display. */
#ifndef PROCTOR_CAPBUF_H
#define PROCTOR_CAPBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Keeps the first `cap` bytes written to it and counts the rest.  Memory is
 * allocated once, at init, so a flood of any size costs `cap` bytes.
 * `data` is owned by the buffer and valid until capbuf_free().
 */
struct capbuf {
	char *data;
	size_t len;     /* bytes kept, <= cap */
	size_t cap;
	uint64_t total; /* bytes seen, kept or not */
	bool truncated; /* total > cap */
};

int capbuf_init(struct capbuf *b, size_t cap);
void capbuf_append(struct capbuf *b, const void *buf, size_t n);
void capbuf_free(struct capbuf *b);

/*
 * Return a newly allocated, NUL-terminated copy of [in, in+len) that is valid
 * UTF-8: every maximal ill-formed subsequence becomes U+FFFD (the W3C/Unicode
 * "substitution of maximal subparts" practice).  When `cut` is true the input
 * was truncated, and an incomplete but so-far-valid sequence at its very end
 * is dropped rather than replaced, so a cut never shows half a character.
 * NUL bytes are kept; `ret_len` receives the length.  Returns NULL on OOM.
 */
char *utf8_sanitize(const char *in, size_t len, bool cut, size_t *ret_len);

#endif
