/* Capped capture buffer for a program's output, and UTF-8 repair for display. */
#include "capbuf.h"

#include <stdlib.h>
#include <string.h>

int capbuf_init(struct capbuf *b, size_t cap)
{
	*b = (struct capbuf){.cap = cap};
	b->data = malloc(cap ? cap : 1);
	return b->data ? 0 : -1;
}

void capbuf_append(struct capbuf *b, const void *buf, size_t n)
{
	size_t room = b->cap - b->len;
	size_t keep = n < room ? n : room;

	if (keep > 0) {
		memcpy(b->data + b->len, buf, keep);
		b->len += keep;
	}
	b->total += n;
	if (keep < n)
		b->truncated = true;
}

void capbuf_free(struct capbuf *b)
{
	free(b->data);
	*b = (struct capbuf){0};
}

/*
 * Length of the well-formed UTF-8 sequence at s (Unicode Table 3-7), or 0 if
 * the bytes there are ill-formed.  *ret_prefix receives how many leading
 * bytes form a valid prefix (the "maximal subpart"), at least 1.
 */
static size_t utf8_seq(const unsigned char *s, size_t avail, size_t *ret_prefix)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xBF;
	size_t need;

	if (c < 0x80) {
		*ret_prefix = 1;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
		need = 2;
	else if (c >= 0xE0 && c <= 0xEF) {
		need = 3;
		if (c == 0xE0)
			lo = 0xA0;
		else if (c == 0xED)
			hi = 0x9F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		need = 4;
		if (c == 0xF0)
			lo = 0x90;
		else if (c == 0xF4)
			hi = 0x8F;
	} else {
		*ret_prefix = 1;
		return 0;
	}
	size_t i = 1;
	for (; i < need && i < avail; i++) {
		unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
		if (s[i] < lo_i || s[i] > hi_i)
			break;
	}
	*ret_prefix = i;
	return i == need ? need : 0;
}

char *utf8_sanitize(const char *in, size_t len, bool cut, size_t *ret_len)
{
	const unsigned char *s = (const unsigned char *)in;
	/* Worst case: every byte becomes the 3-byte U+FFFD. */
	char *out = malloc(len * 3 + 1);
	size_t o = 0, i = 0;

	if (!out)
		return NULL;
	while (i < len) {
		size_t prefix;
		size_t n = utf8_seq(s + i, len - i, &prefix);
		if (n > 0) {
			memcpy(out + o, s + i, n);
			o += n;
			i += n;
			continue;
		}
		if (cut && i + prefix == len && prefix < 4 && s[i] >= 0xC2 && s[i] <= 0xF4)
			break; /* a character cut in half by the cap: drop it */
		memcpy(out + o, "\xEF\xBF\xBD", 3);
		o += 3;
		i += prefix;
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}
