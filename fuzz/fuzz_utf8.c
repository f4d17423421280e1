/* libFuzzer target: utf8_sanitize() must turn any bytes into valid UTF-8, with and without cut. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capbuf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Independent of capbuf.c (RFC 3629 decoding rather than Table 3-7 ranges):
 * decode each character, then reject overlongs, surrogates and > U+10FFFF. */
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

static char *sanitize_checked(const uint8_t *data, size_t size, bool cut, size_t *ret_len)
{
	size_t len = SIZE_MAX;
	char *out = utf8_sanitize((const char *)data, size, cut, &len);

	if (!out)
		abort(); /* inputs are small: NULL here is not OOM */
	if (len > size * 3)
		abort();
	if (out[len] != '\0')
		abort();
	if (!valid_utf8((const unsigned char *)out, len))
		abort();
	/* Well-formed input passes through untouched. */
	if (valid_utf8(data, size) && (len != size || memcmp(out, data, size) != 0))
		abort();
	*ret_len = len;
	return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t whole_len, cut_len, again_len;
	char *whole = sanitize_checked(data, size, false, &whole_len);
	char *cut = sanitize_checked(data, size, true, &cut_len);
	char *again;

	/* A cut only ever drops the one U+FFFD the partial character became. */
	if (cut_len != whole_len &&
	    (cut_len + 3 != whole_len || memcmp(whole + cut_len, "\xEF\xBF\xBD", 3) != 0))
		abort();
	if (memcmp(cut, whole, cut_len) != 0)
		abort();

	/* Repair is idempotent. */
	again = sanitize_checked((const uint8_t *)whole, whole_len, false, &again_len);
	if (again_len != whole_len || memcmp(again, whole, whole_len) != 0)
		abort();

	free(again);
	free(cut);
	free(whole);
	return 0;
}
