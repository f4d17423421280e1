/* libFuzzer target: text_escape(), text_printable(), utf8_fix_into() and err_set() give valid UTF-8 within their caps, whatever the bytes and the cut. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capbuf.h"
#include "err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* RFC 3629 decoding, independent of capbuf.c's tables. */
static bool valid_utf8(const unsigned char *s, size_t len)
{
	static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};

	for (size_t i = 0; i < len;) {
		unsigned char c = s[i];
		size_t n = c < 0x80		? 1
			   : (c & 0xE0) == 0xC0 ? 2
			   : (c & 0xF0) == 0xE0 ? 3
			   : (c & 0xF8) == 0xF0 ? 4
						: 0;
		uint32_t cp;

		if (n == 0 || n > len - i)
			return false;
		cp = n == 1 ? c : (uint32_t)(c & (0x7F >> n));
		for (size_t k = 1; k < n; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i + k] & 0x3F);
		}
		if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return false;
		i += n;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	/* The first two bytes choose the cap (0..2047), the rest is the text. */
	size_t cap = ((size_t)data[0] << 8 | data[1]) & 2047;
	const char *src = (const char *)data + 2;
	size_t len = size - 2;
	char *dst = malloc(cap + 1);
	if (!dst)
		abort();

	memset(dst, 'Z', cap + 1);
	text_escape(dst, cap, src, len);
	if (cap > 0) {
		size_t n = strnlen(dst, cap);
		if (n >= cap || !valid_utf8((unsigned char *)dst, n))
			abort();
		/* Nothing a terminal or a JSON encoder would choke on. */
		for (size_t i = 0; i < n; i++)
			if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f)
				abort();
		for (size_t i = 0; i + 1 < n; i++)
			if ((unsigned char)dst[i] == 0xC2 && (unsigned char)dst[i + 1] <= 0x9F)
				abort();
		/* Printable ASCII without backslashes that fits comes through as it is. */
		bool plain = len < cap;
		for (size_t i = 0; plain && i < len; i++)
			plain = src[i] >= 0x20 && src[i] < 0x7f && src[i] != '\\';
		if (plain && (n != len || memcmp(dst, src, len) != 0))
			abort();
	}
	if (dst[cap] != 'Z')
		abort(); /* wrote past the cap */

	/* text_printable: one line a terminal shows as it is, within the cap. */
	char *line = malloc(len + 1);
	if (!line)
		abort();
	memcpy(line, src, len);
	line[len] = '\0';
	memset(dst, 'Z', cap + 1);
	text_printable(dst, cap, line, '?');
	if (cap > 0) {
		size_t k = strnlen(dst, cap);
		if (k >= cap || !valid_utf8((unsigned char *)dst, k))
			abort();
		for (size_t i = 0; i < k; i++)
			if ((unsigned char)dst[i] < 0x20 || dst[i] == 0x7f ||
			    ((unsigned char)dst[i] == 0xC2 && (unsigned char)dst[i + 1] <= 0x9F))
				abort();
	}
	if (dst[cap] != 'Z')
		abort();
	free(line);

	memset(dst, 'Z', cap + 1);
	size_t n = utf8_fix_into(dst, cap, src, len);
	if (cap > 0 && (n >= cap || dst[n] != '\0' || !valid_utf8((unsigned char *)dst, n)))
		abort();
	if (dst[cap] != 'Z')
		abort();

	/* err_set cuts at sizeof(msg) on a character boundary: from valid
	 * UTF-8 input, a valid message. */
	char *text = malloc(len + 1);
	if (!text)
		abort();
	memcpy(text, src, len);
	text[len] = '\0';
	size_t tl = strlen(text);
	if (valid_utf8((unsigned char *)text, tl)) {
		struct err e;
		err_set(&e, data[0] & 1 ? 2 : 0, "%s", text);
		if (!valid_utf8((unsigned char *)e.msg, strlen(e.msg)))
			abort();
		err_wrap(&e, "%s", text);
		if (!valid_utf8((unsigned char *)e.msg, strlen(e.msg)))
			abort();
	}
	free(text);
	free(dst);
	return 0;
}
