/* Capped capture buffer for a program's output, UTF-8 repair, and text made safe to display. */
#include "capbuf.h"

#include <stdio.h>
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

size_t utf8_fix_into(char *dst, size_t cap, const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0, i = 0;

	if (cap == 0)
		return 0;
	while (i < len) {
		size_t prefix, n = utf8_seq(s + i, len - i, &prefix);
		const char *piece = n ? src + i : "\xEF\xBF\xBD";
		size_t plen = n ? n : 3;
		if (n == 1 && s[i] == '\0')
			break; /* a C string ends here */
		if (o + plen > cap - 1)
			break; /* whole characters only */
		memcpy(dst + o, piece, plen);
		o += plen;
		i += n ? n : prefix;
	}
	dst[o] = '\0';
	return o;
}

/* One character of text_escape's output: the bytes at s (n of them, from
 * utf8_seq) as kept or escaped into piece; returns the piece's length and
 * sets *ret_used to the input bytes it stands for. */
static size_t escape_piece(const unsigned char *s, size_t avail, char piece[16], size_t *ret_used)
{
	size_t prefix, n = utf8_seq(s, avail, &prefix), plen = 0;
	bool c1 = n == 2 && s[0] == 0xC2 && s[1] <= 0x9F;

	if (n == 1 && s[0] >= 0x20 && s[0] != 0x7f && s[0] != '\\') {
		piece[plen++] = (char)s[0];
	} else if (n > 1 && !c1) {
		memcpy(piece, s, n);
		plen = n;
	} else {
		/* A control, DEL, C1, backslash or one byte of an ill-formed
		 * sequence: shown as \xNN, never passed on to a terminal or a
		 * JSON encoder. */
		if (n == 0)
			n = 1;
		for (size_t k = 0; k < n; k++)
			plen += (size_t)snprintf(piece + plen, 16 - plen, "\\x%02x", s[k]);
	}
	*ret_used = n;
	return plen;
}

char *text_escape(char *dst, size_t cap, const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t o = 0, total = 0, used, limit;
	char piece[16];

	if (cap == 0)
		return dst;
	/* Does it all fit?  Else stop where "..." still does. */
	for (size_t i = 0; i < len && total <= cap - 1; i += used)
		total += escape_piece(s + i, len - i, piece, &used);
	limit = total <= cap - 1 ? cap - 1 : (cap - 1 >= 3 ? cap - 1 - 3 : 0);
	for (size_t i = 0; i < len; i += used) {
		size_t plen = escape_piece(s + i, len - i, piece, &used);
		if (o + plen > limit)
			break;
		memcpy(dst + o, piece, plen);
		o += plen;
	}
	if (total > cap - 1) {
		size_t keep = cap - 1 - o < 3 ? cap - 1 - o : 3;
		memcpy(dst + o, "...", keep);
		o += keep;
	}
	dst[o] = '\0';
	return dst;
}

bool utf8_valid(const char *s, size_t len)
{
	size_t prefix, n;

	for (size_t i = 0; i < len; i += n)
		if ((n = utf8_seq((const unsigned char *)s + i, len - i, &prefix)) == 0)
			return false;
	return true;
}

void text_printable(char *dst, size_t len, const char *src, char repl)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t n = strlen(src), o = 0, used, prefix;
	bool utf8 = utf8_valid(src, n);

	if (len == 0)
		return;
	for (size_t i = 0; i < n; i += used) {
		used = utf8 ? utf8_seq(s + i, n - i, &prefix) : 1;
		bool control = s[i] < 0x20 || s[i] == 0x7f || (s[i] >= 0x80 && !utf8) ||
			       (used == 2 && s[i] == 0xc2 && s[i + 1] <= 0x9f);
		size_t plen = control ? 1 : used;
		if (o + plen > len - 1)
			break; /* whole characters only */
		if (control)
			dst[o] = repl;
		else
			memcpy(dst + o, s + i, used);
		o += plen;
	}
	dst[o] = '\0';
}
