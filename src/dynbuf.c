/* A growable byte buffer with a hard cap (dynbuf.h). */
#include "dynbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first allocation: most answers and bodies fit. */
#define DYNBUF_FIRST 4096

void dynbuf_init(struct dynbuf *b, size_t max)
{
	*b = (struct dynbuf){.max = max};
}

static int fail(struct dynbuf *b, enum dynbuf_state why)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
	b->state = why;
	return -1;
}

/* Room for `n` more bytes and the NUL. */
static int reserve(struct dynbuf *b, size_t n)
{
	if (b->state != DYNBUF_OK)
		return -1;
	if (n > b->max - b->len)
		return fail(b, DYNBUF_TOO_LARGE);
	size_t need = b->len + n + 1;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : DYNBUF_FIRST;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	/* Never more than the cap allows: a body of exactly max bytes is
	 * held in max + 1, not in the next power of two. */
	if (cap > b->max + 1)
		cap = b->max + 1;
	char *grown = realloc(b->s, cap);
	if (!grown)
		return fail(b, DYNBUF_NO_MEMORY);
	b->s = grown;
	b->cap = cap;
	return 0;
}

int dynbuf_add(struct dynbuf *b, const void *p, size_t n)
{
	if (reserve(b, n) < 0)
		return -1;
	if (n)
		memcpy(b->s + b->len, p, n);
	b->len += n;
	b->s[b->len] = '\0';
	return 0;
}

int dynbuf_adds(struct dynbuf *b, const char *s)
{
	return dynbuf_add(b, s, strlen(s));
}

int dynbuf_addf(struct dynbuf *b, const char *fmt, ...)
{
	va_list ap;

	if (b->state != DYNBUF_OK)
		return -1;
	/* Most pieces fit in what is left: print once, measure only when not. */
	size_t room = b->cap > b->len ? b->cap - b->len : 0;
	va_start(ap, fmt);
	int n = vsnprintf(room ? b->s + b->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n < 0)
		return fail(b, DYNBUF_NO_MEMORY);
	if ((size_t)n < room) {
		if ((size_t)n > b->max - b->len)
			return fail(b, DYNBUF_TOO_LARGE);
		b->len += (size_t)n;
		return 0;
	}
	if (reserve(b, (size_t)n) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

char *dynbuf_take(struct dynbuf *b, size_t *ret_len)
{
	char *s = b->s;

	if (b->state != DYNBUF_OK) {
		dynbuf_free(b);
		return NULL;
	}
	if (!s)
		s = strdup("");
	if (ret_len)
		*ret_len = s ? b->len : 0;
	b->s = NULL;
	b->len = b->cap = 0;
	return s;
}

void dynbuf_free(struct dynbuf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}
