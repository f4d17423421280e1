/* A growable byte buffer with a hard cap: request bodies, answers, exports (curl's dynbuf, in small). */
#ifndef PROCTOR_DYNBUF_H
#define PROCTOR_DYNBUF_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Text or bytes built piece by piece, never more than `max` bytes, always
 * NUL-terminated once anything was added.  The first failure (past the cap
 * or out of memory) is sticky: every later add does nothing, so a caller
 * adds a whole document and checks once at the end.  A failed buffer holds
 * nothing (its memory is released at once: a body past its cap costs no
 * memory while the rest of it is read and dropped).
 *
 * It differs from struct capbuf (capbuf.h) on purpose: a capbuf keeps the
 * first bytes of a program's output and counts the rest, since a truncated
 * capture is still worth showing; a dynbuf holds a whole document or
 * nothing, since half a JSON body or half a CSV is worth nothing.
 */
enum dynbuf_state {
	DYNBUF_OK = 0,
	DYNBUF_TOO_LARGE, /* an add would have passed max */
	DYNBUF_NO_MEMORY,
};

struct dynbuf {
	char *s;
	size_t len, cap;
	size_t max; /* bytes of content at most (the NUL not counted) */
	enum dynbuf_state state;
};

/* An empty buffer of at most `max` bytes; nothing is allocated yet. */
void dynbuf_init(struct dynbuf *b, size_t max);
/* Append n bytes: 0, or -1 (and the sticky state) when it cannot. */
int dynbuf_add(struct dynbuf *b, const void *p, size_t n);
int dynbuf_adds(struct dynbuf *b, const char *s);
int dynbuf_addf(struct dynbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The content, malloc'd and NUL-terminated ("" when nothing was added), and
 * the buffer emptied; NULL when it failed (or on OOM), the buffer freed. */
char *dynbuf_take(struct dynbuf *b, size_t *ret_len);
/* Release the content; the buffer is empty again (state and max kept). */
void dynbuf_free(struct dynbuf *b);

#endif
