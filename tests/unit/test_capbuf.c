/* Unit tests of capbuf.c: the capped capture buffer, UTF-8 repair of captured output, terminal text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capbuf.h"
#include "err.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* U+FFFD REPLACEMENT CHARACTER */
#define R "\xEF\xBF\xBD"

/* ---- capbuf ---- */

static void test_capbuf_starts_empty(void **state)
{
	struct capbuf b;

	assert_int_equal(capbuf_init(&b, 16), 0);
	assert_non_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.cap, 16);
	assert_int_equal(b.total, 0);
	assert_false(b.truncated);
	capbuf_free(&b);
}

static void test_capbuf_keeps_first_cap_bytes(void **state)
{
	struct capbuf b;

	assert_int_equal(capbuf_init(&b, 8), 0);
	capbuf_append(&b, "hello ", 6);
	assert_false(b.truncated);
	capbuf_append(&b, "world", 5);
	assert_int_equal(b.len, 8);
	assert_memory_equal(b.data, "hello wo", 8);
	assert_int_equal(b.total, 11);
	assert_true(b.truncated);
	capbuf_append(&b, "more", 4);
	assert_int_equal(b.len, 8);
	assert_memory_equal(b.data, "hello wo", 8);
	assert_int_equal(b.total, 15);
	assert_true(b.truncated);
	capbuf_free(&b);
}

static void test_capbuf_exact_fit_is_not_truncated(void **state)
{
	struct capbuf b;

	assert_int_equal(capbuf_init(&b, 5), 0);
	capbuf_append(&b, "hello", 5);
	assert_int_equal(b.len, 5);
	assert_int_equal(b.total, 5);
	assert_false(b.truncated);
	capbuf_append(&b, "", 0);
	assert_false(b.truncated);
	capbuf_append(&b, "!", 1);
	assert_true(b.truncated);
	assert_int_equal(b.len, 5);
	assert_int_equal(b.total, 6);
	assert_memory_equal(b.data, "hello", 5);
	capbuf_free(&b);
}

static void test_capbuf_single_append_larger_than_cap(void **state)
{
	struct capbuf b;
	char big[100];

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)('a' + i % 26);
	assert_int_equal(capbuf_init(&b, 10), 0);
	capbuf_append(&b, big, sizeof(big));
	assert_int_equal(b.len, 10);
	assert_memory_equal(b.data, big, 10);
	assert_int_equal(b.total, sizeof(big));
	assert_true(b.truncated);
	capbuf_free(&b);
}

static void test_capbuf_zero_cap_counts_but_keeps_nothing(void **state)
{
	struct capbuf b;

	assert_int_equal(capbuf_init(&b, 0), 0);
	assert_non_null(b.data);
	capbuf_append(&b, "", 0);
	assert_false(b.truncated);
	assert_int_equal(b.total, 0);
	capbuf_append(&b, "abc", 3);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.total, 3);
	assert_true(b.truncated);
	capbuf_free(&b);
}

static void test_capbuf_many_small_appends(void **state)
{
	struct capbuf b;
	const size_t cap = 1000, writes = 100000;

	assert_int_equal(capbuf_init(&b, cap), 0);
	for (size_t i = 0; i < writes; i++) {
		char c = (char)(i % 251);
		capbuf_append(&b, &c, 1);
		assert_true(b.len <= cap);
	}
	assert_int_equal(b.len, cap);
	assert_int_equal(b.total, writes);
	assert_true(b.truncated);
	for (size_t i = 0; i < cap; i++)
		assert_int_equal((unsigned char)b.data[i], i % 251);
	capbuf_free(&b);
}

static void test_capbuf_counts_past_four_gib(void **state)
{
	struct capbuf b;
	const size_t chunk = 1u << 20;
	char *buf = calloc(1, chunk);
	const uint64_t rounds = (UINT64_C(5) << 30) / chunk;

	assert_non_null(buf);
	buf[0] = 'x';
	assert_int_equal(capbuf_init(&b, 4), 0);
	for (uint64_t i = 0; i < rounds; i++)
		capbuf_append(&b, buf, chunk);
	assert_int_equal(b.total, rounds * chunk);
	assert_true(b.total > UINT32_MAX);
	assert_int_equal(b.len, 4);
	assert_memory_equal(b.data, "x\0\0\0", 4);
	capbuf_free(&b);
	free(buf);
}

static void test_capbuf_free_resets_and_is_repeatable(void **state)
{
	struct capbuf b;

	assert_int_equal(capbuf_init(&b, 4), 0);
	capbuf_append(&b, "abcdef", 6);
	capbuf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
	assert_int_equal(b.total, 0);
	assert_false(b.truncated);
	capbuf_free(&b);
}

/* ---- an independent UTF-8 validator, written from RFC 3629 rather than
 * Unicode Table 3-7: decode the code point, then reject overlongs,
 * surrogates and values above U+10FFFF. ---- */

/* Sequence length announced by a lead byte, or 0 if it cannot lead. */
static size_t lead_len(unsigned char c)
{
	if ((c & 0x80) == 0x00)
		return 1;
	if ((c & 0xE0) == 0xC0)
		return 2;
	if ((c & 0xF0) == 0xE0)
		return 3;
	if ((c & 0xF8) == 0xF0)
		return 4;
	return 0;
}

/* Is [s, s+n) exactly one well-formed character? */
static bool one_char_ok(const unsigned char *s, size_t n)
{
	static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
	uint32_t cp;

	if (n == 0 || lead_len(s[0]) != n)
		return false;
	cp = n == 1 ? s[0] : (uint32_t)(s[0] & (0x7F >> n));
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return false;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if (cp < min_cp[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return false;
	return true;
}

static bool valid_utf8(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;

	for (size_t i = 0; i < len;) {
		size_t n = lead_len(s[i]);
		if (n == 0 || n > len - i || !one_char_ok(s + i, n))
			return false;
		i += n;
	}
	return true;
}

/* Can [s, s+k) be completed to a well-formed character?  Only the second
 * byte is ever constrained beyond 80..BF, so padding with all-80 or all-BF
 * finds a completion whenever one exists. */
static bool valid_prefix(const unsigned char *s, size_t k)
{
	size_t n = lead_len(s[0]);
	unsigned char lo[4], hi[4];

	if (n == 0 || k > n)
		return false;
	memcpy(lo, s, k);
	memcpy(hi, s, k);
	for (size_t i = k; i < n; i++) {
		lo[i] = 0x80;
		hi[i] = 0xBF;
	}
	return one_char_ok(lo, n) || one_char_ok(hi, n);
}

/* Reference sanitizer: substitution of maximal subparts, built on
 * valid_prefix().  `out` must hold 3*len bytes. */
static size_t ref_sanitize(const char *in, size_t len, bool cut, char *out)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t o = 0;

	for (size_t i = 0; i < len;) {
		size_t k = 0, n = lead_len(s[i]);
		while (k < 4 && i + k < len && valid_prefix(s + i, k + 1))
			k++;
		if (k > 0 && k == n) {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
			continue;
		}
		if (k > 0 && cut && i + k == len)
			break;
		memcpy(out + o, R, 3);
		o += 3;
		i += k > 0 ? k : 1;
	}
	return o;
}

static void test_validator_agrees_with_known_vectors(void **state)
{
	assert_true(valid_utf8("", 0));
	assert_true(valid_utf8("abc", 3));
	assert_true(valid_utf8("\xC2\x80", 2));
	assert_true(valid_utf8("\xED\x9F\xBF", 3));
	assert_true(valid_utf8("\xF4\x8F\xBF\xBF", 4));
	assert_false(valid_utf8("\xC0\x80", 2));
	assert_false(valid_utf8("\xE0\x80\x80", 3));
	assert_false(valid_utf8("\xED\xA0\x80", 3));
	assert_false(valid_utf8("\xF4\x90\x80\x80", 4));
	assert_false(valid_utf8("\xF5\x80\x80\x80", 4));
	assert_false(valid_utf8("\x80", 1));
	assert_false(valid_utf8("\xE2\x82", 2));
	assert_true(valid_prefix((const unsigned char *)"\xE0", 1));
	assert_true(valid_prefix((const unsigned char *)"\xE0\xA0", 2));
	assert_false(valid_prefix((const unsigned char *)"\xE0\x9F", 2));
	assert_false(valid_prefix((const unsigned char *)"\xC1", 1));
}

/* ---- utf8_sanitize ---- */

/* Sanitize and compare with the expected bytes; also check validity, the
 * length bound and the NUL terminator. */
static void check_sanitize(const char *in, size_t len, bool cut, const char *want, size_t wlen)
{
	size_t olen = (size_t)-1;
	char *out = utf8_sanitize(in, len, cut, &olen);

	assert_non_null(out);
	assert_int_equal(olen, wlen);
	assert_memory_equal(out, want, wlen);
	assert_int_equal(out[olen], '\0');
	assert_true(valid_utf8(out, olen));
	assert_true(olen <= len * 3);
	free(out);
}

/* Both cut values give `want` (the input does not end in a partial character). */
#define SAME(in, want)                                                                             \
	do {                                                                                       \
		check_sanitize(in, sizeof(in) - 1, false, want, sizeof(want) - 1);                 \
		check_sanitize(in, sizeof(in) - 1, true, want, sizeof(want) - 1);                  \
	} while (0)
#define KEPT(in) SAME(in, in)

static void test_utf8_keeps_empty_input(void **state)
{
	check_sanitize("", 0, false, "", 0);
	check_sanitize("", 0, true, "", 0);
}

static void test_utf8_keeps_ascii_verbatim(void **state)
{
	char all[128];

	KEPT("hello, world\n");
	for (int i = 0; i < 128; i++)
		all[i] = (char)i;
	check_sanitize(all, sizeof(all), false, all, sizeof(all));
	check_sanitize(all, sizeof(all), true, all, sizeof(all));
}

static void test_utf8_keeps_two_byte_sequences(void **state)
{
	KEPT("\xC2\x80");				      /* U+0080, first 2-byte */
	KEPT("\xC3\xA9t\xC3\xA9");			      /* "été" */
	KEPT("\xDF\xBF");				      /* U+07FF, last 2-byte */
	KEPT("\xCE\xBA\xE1\xBD\xB9\xCF\x83\xCE\xBC\xCE\xB5"); /* Kuhn 1: "κόσμε" */
}

static void test_utf8_keeps_three_byte_sequences(void **state)
{
	KEPT("\xE0\xA0\x80"); /* U+0800, first 3-byte */
	KEPT("\xE2\x82\xAC"); /* EURO SIGN */
	KEPT("\xED\x9F\xBF"); /* U+D7FF, last before the surrogates */
	KEPT("\xEE\x80\x80"); /* U+E000, first after the surrogates */
	KEPT("\xEF\xBF\xBD"); /* U+FFFD itself */
	KEPT("\xEF\xBF\xBE"); /* U+FFFE, a noncharacter but well-formed */
	KEPT("\xEF\xBF\xBF"); /* U+FFFF, last 3-byte */
}

static void test_utf8_keeps_four_byte_sequences(void **state)
{
	KEPT("\xF0\x90\x80\x80"); /* U+10000, first 4-byte */
	KEPT("\xF0\x9F\x98\x80"); /* GRINNING FACE */
	KEPT("\xF3\xBF\xBF\xBF"); /* U+FFFFF */
	KEPT("\xF4\x8F\xBF\xBF"); /* U+10FFFF, last code point */
}

static void test_utf8_keeps_nul_bytes(void **state)
{
	KEPT("\0");
	KEPT("a\0b\0\0c");
	SAME("\0\xFF\0", "\0" R "\0");
}

static void test_utf8_replaces_each_byte_that_cannot_start_a_sequence(void **state)
{
	for (int c = 0x80; c < 0x100; c++) {
		char in[3] = {'a', (char)c, 'b'};
		bool lead = c >= 0xC2 && c <= 0xF4;
		/* Followed by 'b', even a lead byte is an ill-formed subpart of 1. */
		check_sanitize(in, 3, false, "a" R "b", 5);
		check_sanitize(in, 3, true, "a" R "b", 5);
		/* Alone at the end: only a lead byte is a cut character. */
		check_sanitize(in, 2, false, "a" R, 4);
		check_sanitize(in, 2, true, lead ? "a" : "a" R, lead ? 1 : 4);
	}
}

static void test_utf8_replaces_lone_continuation_bytes(void **state)
{
	SAME("\x80", R);
	SAME("\xBF", R);
	SAME("a\x80\x81\x82z", "a" R R R "z");
	/* Kuhn 3.1.9: all 64 continuation bytes, one U+FFFD each. */
	char in[64], want[64 * 3];
	for (int i = 0; i < 64; i++) {
		in[i] = (char)(0x80 + i);
		memcpy(want + 3 * i, R, 3);
	}
	check_sanitize(in, sizeof(in), false, want, sizeof(want));
	check_sanitize(in, sizeof(in), true, want, sizeof(want));
}

static void test_utf8_replaces_overlong_forms_byte_by_byte(void **state)
{
	/* Kuhn 4.1: overlong '/' */
	SAME("\xC0\xAF", R R);
	SAME("\xE0\x80\xAF", R R R);
	SAME("\xF0\x80\x80\xAF", R R R R);
	SAME("\xF8\x80\x80\x80\xAF", R R R R R);
	SAME("\xFC\x80\x80\x80\x80\xAF", R R R R R R);
	/* Kuhn 4.2: maximal overlongs */
	SAME("\xC1\xBF", R R);
	SAME("\xE0\x9F\xBF", R R R);
	SAME("\xF0\x8F\xBF\xBF", R R R R);
	/* Kuhn 4.3: overlong NUL */
	SAME("\xC0\x80", R R);
	SAME("\xE0\x80\x80", R R R);
	SAME("\xF0\x80\x80\x80", R R R R);
}

static void test_utf8_replaces_surrogates_byte_by_byte(void **state)
{
	/* Kuhn 5.1: single surrogates */
	SAME("\xED\xA0\x80", R R R);
	SAME("\xED\xAD\xBF", R R R);
	SAME("\xED\xAE\x80", R R R);
	SAME("\xED\xAF\xBF", R R R);
	SAME("\xED\xB0\x80", R R R);
	SAME("\xED\xBE\x80", R R R);
	SAME("\xED\xBF\xBF", R R R);
	/* Kuhn 5.2: a CESU-8 pair */
	SAME("\xED\xA0\x80\xED\xB0\x80", R R R R R R);
}

static void test_utf8_replaces_beyond_u10ffff(void **state)
{
	SAME("\xF4\x90\x80\x80", R R R R); /* U+110000 */
	SAME("\xF5\x80\x80\x80", R R R R);
	SAME("\xF7\xBF\xBF\xBF", R R R R);
	SAME("\xFE", R);
	SAME("\xFF", R);
	SAME("\xFE\xFE\xFF\xFF", R R R R);
}

static void test_utf8_replaces_truncated_sequence_in_the_middle_once(void **state)
{
	SAME("\xC3\x61", R "a");
	SAME("\xE2\x82\x61", R "a");
	SAME("\xE2\x61", R "a");
	SAME("\xF0\x9F\x98\x61", R "a");
	SAME("\xF0\x9F\x61", R "a");
	SAME("\xF0\x61", R "a");
	/* Kuhn 3.4, last byte missing from each length, concatenated:
	 * C0 | E0 | 80 | F0 | 80 | 80 | F8 | 80 80 80 | FC | 80 80 80 80 (15)
	 * DF | EF BF | F7 | BF BF | FB | BF BF BF | FD | BF BF BF BF (14) */
	static const char kuhn_3_4[] =
	    "\xC0\xE0\x80\xF0\x80\x80\xF8\x80\x80\x80\xFC\x80\x80\x80\x80"
	    "\xDF\xEF\xBF\xF7\xBF\xBF\xFB\xBF\xBF\xBF\xFD\xBF\xBF\xBF\xBF";
	char want[29 * 3];
	for (size_t i = 0; i < 29; i++)
		memcpy(want + 3 * i, R, 3);
	check_sanitize(kuhn_3_4, sizeof(kuhn_3_4) - 1, false, want, sizeof(want));
	check_sanitize(kuhn_3_4, sizeof(kuhn_3_4) - 1, true, want, sizeof(want));
	/* A truncated sequence right before a complete one. */
	SAME("\xE2\x82\xE2\x82\xAC", R "\xE2\x82\xAC");
	SAME("\xF0\x9F\xF0\x9F\x98\x80", R "\xF0\x9F\x98\x80");
}

static void test_utf8_unicode_table_3_8_examples(void **state)
{
	/* The Unicode Standard, ch. 3, "U+FFFD Substitution of Maximal Subparts". */
	SAME("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64", "a" R R R "b" R "c" R R "d");
	/* Table 3-8: non-shortest forms */
	SAME("\xC0\xAF\xE0\x80\xBF\xF0\x81\x82\x41", R R R R R R R R "A");
	/* Table 3-9: ill-formed sequences for surrogates */
	SAME("\xED\xA0\x80\xED\xBF\xBF\xED\xAF\x41", R R R R R R R R "A");
	/* Table 3-10: other ill-formed sequences */
	SAME("\xF4\x91\x92\x93\xFF\x41\x80\xBF\x42", R R R R R "A" R R "B");
	/* Table 3-11: truncated sequences */
	SAME("\xE1\x80\xE2\xF0\x91\x92\xF1\xBF\x41", R R R R "A");
}

static void test_utf8_cut_drops_partial_character_at_end(void **state)
{
	static const struct {
		const char *in;
		size_t len;
		const char *keep; /* what remains with cut=true */
		size_t klen;
	} cases[] = {
	    {"ab\xC3", 3, "ab", 2},
	    {"ab\xE2", 3, "ab", 2},
	    {"ab\xE2\x82", 4, "ab", 2},
	    {"ab\xE0\xA0", 4, "ab", 2},
	    {"ab\xED\x9F", 4, "ab", 2},
	    {"ab\xF0", 3, "ab", 2},
	    {"ab\xF0\x9F", 4, "ab", 2},
	    {"ab\xF0\x9F\x98", 5, "ab", 2},
	    {"ab\xF4\x8F\xBF", 5, "ab", 2},
	    {"\xE2\x82", 2, "", 0},
	    {"\xC3\xA9\xC3", 3, "\xC3\xA9", 2},
	    /* Bad bytes before the cut are still replaced. */
	    {"\xFF\xE2\x82", 3, R, 3},
	    {"\xE2\x82\x61\xE2\x82", 5, R "a", 4},
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		char want[32];
		size_t wlen = cases[i].klen;

		check_sanitize(cases[i].in, cases[i].len, true, cases[i].keep, cases[i].klen);
		/* Without cut the partial character is one U+FFFD. */
		memcpy(want, cases[i].keep, wlen);
		memcpy(want + wlen, R, 3);
		check_sanitize(cases[i].in, cases[i].len, false, want, wlen + 3);
	}
}

static void test_utf8_cut_keeps_complete_character_at_end(void **state)
{
	KEPT("ab\xC3\xA9");
	KEPT("ab\xE2\x82\xAC");
	KEPT("ab\xF0\x9F\x98\x80");
}

static void test_utf8_cut_still_replaces_ill_formed_end(void **state)
{
	/* Not a prefix of any character: replaced even when cut. */
	SAME("a\x80", "a" R);
	SAME("a\xC0", "a" R);
	SAME("a\xC1", "a" R);
	SAME("a\xF5", "a" R);
	SAME("a\xFF", "a" R);
	SAME("a\xE0\x80", "a" R R);
	SAME("a\xE0\x9F", "a" R R);
	SAME("a\xED\xA0", "a" R R);
	SAME("a\xF0\x8F", "a" R R);
	SAME("a\xF4\x90", "a" R R);
	SAME("a\xF4\x90\x80", "a" R R R);
	/* Valid prefix broken by the last byte. */
	SAME("a\xE2\x41", "a" R "A");
	SAME("a\xF0\x9F\x41", "a" R "A");
}

static void test_utf8_output_length_bound_is_reached_by_all_bad_bytes(void **state)
{
	char in[256], *out;
	size_t olen;

	memset(in, 0xFF, sizeof(in));
	out = utf8_sanitize(in, sizeof(in), false, &olen);
	assert_non_null(out);
	assert_int_equal(olen, sizeof(in) * 3);
	assert_true(valid_utf8(out, olen));
	free(out);
}

static void test_utf8_does_not_read_past_len(void **state)
{
	/* The byte after `len` would complete the sequence; it must not be used. */
	char *in = malloc(3);
	size_t olen;
	char *out;

	assert_non_null(in);
	memcpy(in, "\xE2\x82\xAC", 3);
	out = utf8_sanitize(in, 2, false, &olen);
	assert_non_null(out);
	assert_int_equal(olen, 3);
	assert_memory_equal(out, R, 3);
	free(out);
	free(in);
}

/* Deterministic xorshift64*, so a failure reproduces from the seed. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

/* Mostly bytes that matter to UTF-8: leads, continuations, boundary values. */
static unsigned char random_byte(uint64_t *s)
{
	static const unsigned char pick[] = {
	    0x00, 'a',	0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
	    0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFC, 0xFE, 0xFF,
	};
	uint64_t r = rng_next(s);

	switch (r % 4) {
	case 0:
		return (unsigned char)(r >> 8);
	case 1:
		return (unsigned char)(0x80 + (r >> 8) % 64); /* continuation */
	default:
		return pick[(r >> 8) % sizeof(pick)];
	}
}

static void test_utf8_random_buffers_match_reference(void **state)
{
	uint64_t seed = 0x9E3779B97F4A7C15ull;
	char in[64], ref[64 * 3];

	for (int round = 0; round < 10000; round++) {
		size_t len = (size_t)(rng_next(&seed) % (sizeof(in) + 1));
		for (size_t i = 0; i < len; i++)
			in[i] = (char)random_byte(&seed);
		for (int c = 0; c < 2; c++) {
			bool cut = c == 1;
			size_t olen, rlen = ref_sanitize(in, len, cut, ref);
			char *out = utf8_sanitize(in, len, cut, &olen);
			assert_non_null(out);
			if (!valid_utf8(out, olen) || olen != rlen || memcmp(out, ref, rlen) != 0) {
				print_error("round %d cut=%d input:", round, c);
				for (size_t i = 0; i < len; i++)
					print_error(" %02X", (unsigned char)in[i]);
				print_error("\n");
			}
			assert_true(valid_utf8(out, olen));
			assert_true(olen <= len * 3);
			assert_int_equal(out[olen], '\0');
			assert_int_equal(olen, rlen);
			assert_memory_equal(out, ref, rlen);
			/* Valid input passes through untouched. */
			if (valid_utf8(in, len)) {
				assert_int_equal(olen, len);
				assert_memory_equal(out, in, len);
			}
			/* Repair is idempotent. */
			size_t olen2;
			char *out2 = utf8_sanitize(out, olen, cut, &olen2);
			assert_non_null(out2);
			assert_int_equal(olen2, olen);
			assert_memory_equal(out2, out, olen);
			free(out2);
			free(out);
		}
	}
}

/* ---- text_escape, utf8_fix_into, err_set cuts --------------------------- */

static void test_text_escape_keeps_printable_utf8_and_escapes_the_rest(void **state)
{
	(void)state;
	char out[128];
	const char in[] = "a\xc3\xa9\xff\xfe\x1b[2J\r\n\\\xc2\x85z";
	text_escape(out, sizeof(out), in, sizeof(in) - 1);
	assert_string_equal(out, "a\xc3\xa9\\xff\\xfe\\x1b[2J\\x0d\\x0a\\x5c\\xc2\\x85z");
}

static void test_text_escape_short_text_fits_without_dots(void **state)
{
	(void)state;
	char out[4];
	/* Found by fuzz_text: two bytes in a 4-byte buffer were cut to "...". */
	text_escape(out, sizeof(out), "\"p", 2);
	assert_string_equal(out, "\"p");
	text_escape(out, sizeof(out), "abc", 3);
	assert_string_equal(out, "abc");
	text_escape(out, sizeof(out), "abcd", 4);
	assert_string_equal(out, "...");
}

static void test_text_escape_cuts_on_a_character_boundary(void **state)
{
	(void)state;
	char out[9];
	/* Five two-byte characters do not fit in 8 bytes: whole ones, then "...". */
	text_escape(out, sizeof(out), "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 10);
	assert_string_equal(out, "\xc3\xa9\xc3\xa9...");
	/* An escape is never split either. */
	text_escape(out, sizeof(out), "\xff\xff\xff", 3);
	assert_string_equal(out, "\\xff...");
}

static void test_utf8_fix_into_repairs_and_cuts_whole_characters(void **state)
{
	(void)state;
	char out[6];
	assert_int_equal(utf8_fix_into(out, sizeof(out), "a\xffz", 3), 5);
	assert_string_equal(out, "a\xef\xbf\xbdz");
	assert_int_equal(utf8_fix_into(out, sizeof(out), "ab\xe2\x82\xac", 5), 5);
	assert_string_equal(out, "ab\xe2\x82\xac");
	assert_int_equal(utf8_fix_into(out, sizeof(out), "abc\xe2\x82\xac", 6), 3);
	assert_string_equal(out, "abc");
}

static void test_text_printable_makes_one_safe_line(void **state)
{
	(void)state;
	char out[16];
	text_printable(out, sizeof(out), "a\x1b[2J\nb", '?');
	assert_string_equal(out, "a?[2J?b");
	text_printable(out, sizeof(out), "a\tb\r\n\xc2\x9b" "c", ' ');
	assert_string_equal(out, "a b   c"); /* C1 CSI: one character, one space */
	/* Not UTF-8: every byte past ASCII is replaced, C1 lead bytes too. */
	text_printable(out, sizeof(out), "x\xff\xc2\x9b", '?');
	assert_string_equal(out, "x???");
	text_printable(out, 5, "ab\xc3\xa9\xc3\xa9", '?'); /* a character cut by the cap is dropped */
	assert_string_equal(out, "ab\xc3\xa9");
	text_printable(out, 1, "abc", '?');
	assert_string_equal(out, "");
	assert_true(utf8_valid("caf\xc3\xa9", 5));
	assert_false(utf8_valid("\xc0\xaf", 2));     /* overlong '/' */
	assert_false(utf8_valid("\xed\xa0\x80", 3)); /* a surrogate */
}

static void test_err_set_cuts_a_long_message_on_a_character_boundary(void **state)
{
	(void)state;
	struct err e;
	char text[2000];
	size_t n = 0;
	/* Two-byte characters from offset 0: the cut at 1023 bytes falls inside one. */
	while (n + 2 < sizeof(text)) {
		text[n++] = '\xc3';
		text[n++] = '\xa9';
	}
	text[n] = '\0';
	err_set(&e, 0, "%s", text);
	size_t len = strlen(e.msg);
	assert_true(len <= sizeof(e.msg) - 1);
	assert_true((unsigned char)e.msg[len - 1] == 0xa9);
	/* The system's reason survives a cut of the message before it. */
	err_set(&e, 2, "%s", text);
	len = strlen(e.msg);
	assert_string_equal(e.msg + len - strlen(": No such file or directory"),
			    ": No such file or directory");
	assert_true((unsigned char)e.msg[len - strlen(": No such file or directory") - 1] == 0xa9);
	err_wrap(&e, "%s", text);
	len = strlen(e.msg);
	assert_true((unsigned char)e.msg[len - 1] == 0xa9 || e.msg[len - 1] == ' ' ||
		    (unsigned char)e.msg[len - 1] < 0x80);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_capbuf_starts_empty),
	    cmocka_unit_test(test_capbuf_keeps_first_cap_bytes),
	    cmocka_unit_test(test_capbuf_exact_fit_is_not_truncated),
	    cmocka_unit_test(test_capbuf_single_append_larger_than_cap),
	    cmocka_unit_test(test_capbuf_zero_cap_counts_but_keeps_nothing),
	    cmocka_unit_test(test_capbuf_many_small_appends),
	    cmocka_unit_test(test_capbuf_counts_past_four_gib),
	    cmocka_unit_test(test_capbuf_free_resets_and_is_repeatable),
	    cmocka_unit_test(test_validator_agrees_with_known_vectors),
	    cmocka_unit_test(test_utf8_keeps_empty_input),
	    cmocka_unit_test(test_utf8_keeps_ascii_verbatim),
	    cmocka_unit_test(test_utf8_keeps_two_byte_sequences),
	    cmocka_unit_test(test_utf8_keeps_three_byte_sequences),
	    cmocka_unit_test(test_utf8_keeps_four_byte_sequences),
	    cmocka_unit_test(test_utf8_keeps_nul_bytes),
	    cmocka_unit_test(test_utf8_replaces_each_byte_that_cannot_start_a_sequence),
	    cmocka_unit_test(test_utf8_replaces_lone_continuation_bytes),
	    cmocka_unit_test(test_utf8_replaces_overlong_forms_byte_by_byte),
	    cmocka_unit_test(test_utf8_replaces_surrogates_byte_by_byte),
	    cmocka_unit_test(test_utf8_replaces_beyond_u10ffff),
	    cmocka_unit_test(test_utf8_replaces_truncated_sequence_in_the_middle_once),
	    cmocka_unit_test(test_utf8_unicode_table_3_8_examples),
	    cmocka_unit_test(test_utf8_cut_drops_partial_character_at_end),
	    cmocka_unit_test(test_utf8_cut_keeps_complete_character_at_end),
	    cmocka_unit_test(test_utf8_cut_still_replaces_ill_formed_end),
	    cmocka_unit_test(test_utf8_output_length_bound_is_reached_by_all_bad_bytes),
	    cmocka_unit_test(test_utf8_does_not_read_past_len),
	    cmocka_unit_test(test_utf8_random_buffers_match_reference),
	    cmocka_unit_test(test_text_escape_keeps_printable_utf8_and_escapes_the_rest),
	    cmocka_unit_test(test_text_escape_short_text_fits_without_dots),
	    cmocka_unit_test(test_text_escape_cuts_on_a_character_boundary),
	    cmocka_unit_test(test_utf8_fix_into_repairs_and_cuts_whole_characters),
	    cmocka_unit_test(test_text_printable_makes_one_safe_line),
	    cmocka_unit_test(test_err_set_cuts_a_long_message_on_a_character_boundary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
