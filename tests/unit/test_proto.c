/* Unit tests of vm/proto.c: frame encoding, bounded decoding and the parsers of guest answers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vm/proto.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ---- */

/* Finish b and return its payload (after the header) and its length. */
static const unsigned char *payload_of(struct pbuf *b, size_t *len)
{
	assert_int_equal(pbuf_finish(b), 0);
	assert_true(b->len >= PROTO_HEADER);
	*len = b->len - PROTO_HEADER;
	return b->data + PROTO_HEADER;
}

/* A heap copy of exactly n bytes, so that ASan sees any read past the end. */
static unsigned char *dup_exact(const void *p, size_t n)
{
	unsigned char *c = malloc(n ? n : 1);

	assert_non_null(c);
	if (n)
		memcpy(c, p, n);
	return c;
}

/* Every strict prefix of b's payload and the payload plus one byte are refused by `parse`;
 * the payload itself is accepted. */
static void expect_exact_length(struct pbuf *b, int (*parse)(const unsigned char *, size_t))
{
	size_t len;
	const unsigned char *p = payload_of(b, &len);
	unsigned char *c;

	for (size_t n = 0; n < len; n++) {
		c = dup_exact(p, n);
		if (parse(c, n) != -1)
			fail_msg("a payload cut to %zu of %zu bytes was accepted", n, len);
		free(c);
	}
	c = malloc(len + 1);
	assert_non_null(c);
	memcpy(c, p, len);
	c[len] = 0;
	assert_int_equal(parse(c, len + 1), -1);
	assert_int_equal(parse(c, len), 0);
	free(c);
}

/* Build a P_EXIT payload in the agent's field order. */
static void build_exit(struct pbuf *b, uint32_t flags, uint32_t killed_for, int32_t exit_code,
		       int32_t sig, const char *message)
{
	pbuf_start(b, P_EXIT);
	pbuf_u32(b, flags);
	pbuf_u32(b, killed_for);
	pbuf_u32(b, (uint32_t)exit_code);
	pbuf_u32(b, (uint32_t)sig);
	pbuf_u64(b, 1500);		    /* cpu_ms */
	pbuf_u64(b, 2500);		    /* wall_ms */
	pbuf_u64(b, 1ull << 40);	    /* peak_memory_kib */
	pbuf_u64(b, 7);			    /* peak_pids */
	pbuf_u64(b, UINT64_MAX);	    /* out_total */
	pbuf_u64(b, 0x0123456789abcdefull); /* err_total */
	pbuf_str(b, message);
}

static int parse_exit_rc(uint32_t flags, uint32_t killed_for, int32_t exit_code, int32_t sig,
			 const char *message, struct proto_exit *x)
{
	struct pbuf b = {0};
	size_t len;
	const unsigned char *p;
	unsigned char *c;
	int rc;

	build_exit(&b, flags, killed_for, exit_code, sig, message);
	p = payload_of(&b, &len);
	c = dup_exact(p, len);
	rc = proto_parse_exit(c, len, x);
	free(c);
	pbuf_free(&b);
	return rc;
}

static void build_file(struct pbuf *b, const char *path, size_t path_len, uint32_t mode,
		       uint64_t size)
{
	pbuf_start(b, P_FILE);
	pbuf_bytes(b, path, path_len);
	pbuf_u32(b, mode);
	pbuf_u64(b, size);
}

/* proto_parse_file on a P_FILE carrying `path_len` bytes of `path`, into a buffer of `cap`. */
static int parse_file_rc(const char *path, size_t path_len, size_t cap, char *out, uint32_t *mode,
			 uint64_t *size)
{
	struct pbuf b = {0};
	size_t len;
	const unsigned char *p;
	unsigned char *c;
	int rc;

	build_file(&b, path, path_len, 0644, 42);
	p = payload_of(&b, &len);
	c = dup_exact(p, len);
	rc = proto_parse_file(c, len, out, cap, mode, size);
	free(c);
	pbuf_free(&b);
	return rc;
}

/* ---- encoding and the reader ---- */

static void test_pbuf_lays_out_header_and_fields_little_endian(void **state)
{
	/* version, type, two reserved zero bytes, payload length 25 */
	static const unsigned char head[] = {PROTO_VERSION, P_OUT, 0, 0, 25, 0, 0, 0};
	/* u32 0x12345678, u64 0x0123456789abcdef, bytes "a\0b", string "hi" */
	static const unsigned char body[] = {0x78, 0x56, 0x34, 0x12, 0xef, 0xcd, 0xab, 0x89, 0x67,
					     0x45, 0x23, 0x01, 3,    0,	   0,	 0,    'a',  0,
					     'b',  2,	 0,    0,    0,	   'h',	 'i'};
	struct pbuf b = {0};

	pbuf_start(&b, P_OUT);
	pbuf_u32(&b, 0x12345678u);
	pbuf_u64(&b, 0x0123456789abcdefull);
	pbuf_bytes(&b, "a\0b", 3);
	pbuf_str(&b, "hi");
	assert_false(b.failed);
	assert_int_equal(pbuf_finish(&b), 0);
	assert_int_equal(b.len, sizeof(head) + sizeof(body));
	assert_memory_equal(b.data, head, sizeof(head));
	assert_memory_equal(b.data + sizeof(head), body, sizeof(body));
	pbuf_free(&b);
	assert_null(b.data);
	assert_int_equal(b.len, 0);
}

static void test_pbuf_and_preader_round_trip_every_field_kind(void **state)
{
	static const uint32_t u32s[] = {0, 1, 0x7fffffffu, 0x80000000u, UINT32_MAX};
	static const uint64_t u64s[] = {0,	   1, UINT32_MAX, 1ull << 32, 0x8000000000000000ull,
					UINT64_MAX};
	static const unsigned char bin[] = {0, 0xff, '\n', 0x80, 0};
	struct pbuf b = {0};
	struct preader r;
	size_t len, n;
	const unsigned char *p, *d;
	char s[16];

	pbuf_start(&b, P_DATA);
	for (size_t i = 0; i < ARRAY_LEN(u32s); i++)
		pbuf_u32(&b, u32s[i]);
	for (size_t i = 0; i < ARRAY_LEN(u64s); i++)
		pbuf_u64(&b, u64s[i]);
	pbuf_bytes(&b, bin, sizeof(bin));
	pbuf_bytes(&b, NULL, 0);
	pbuf_str(&b, "");
	pbuf_str(&b, "proctor");
	p = payload_of(&b, &len);

	preader_init(&r, p, len);
	for (size_t i = 0; i < ARRAY_LEN(u32s); i++)
		assert_int_equal(preader_u32(&r), u32s[i]);
	for (size_t i = 0; i < ARRAY_LEN(u64s); i++)
		assert_true(preader_u64(&r) == u64s[i]);
	d = preader_bytes(&r, sizeof(bin), &n);
	assert_non_null(d);
	assert_int_equal(n, sizeof(bin));
	assert_memory_equal(d, bin, sizeof(bin));
	d = preader_bytes(&r, 0, &n);
	assert_non_null(d);
	assert_int_equal(n, 0);
	assert_int_equal(preader_str(&r, s, sizeof(s)), 0);
	assert_string_equal(s, "");
	assert_int_equal(preader_str(&r, s, sizeof(s)), 0);
	assert_string_equal(s, "proctor");
	assert_false(r.bad);
	assert_int_equal(preader_end(&r), 0);
	pbuf_free(&b);
}

static void test_pbuf_start_reuses_the_buffer_and_clears_failure(void **state)
{
	struct pbuf b = {0};
	size_t len;

	pbuf_start(&b, P_DATA);
	pbuf_bytes(&b, "x", (size_t)PROTO_MAX_PAYLOAD + 1);
	assert_true(b.failed);
	pbuf_start(&b, P_OK);
	assert_false(b.failed);
	payload_of(&b, &len);
	assert_int_equal(len, 0);
	assert_int_equal(b.data[1], P_OK);
	pbuf_free(&b);
}

static void test_pbuf_refuses_payload_over_max(void **state)
{
	struct pbuf b = {0};
	unsigned char *big = calloc(1, (size_t)PROTO_MAX_PAYLOAD + 1);
	size_t len;

	assert_non_null(big);
	/* Exactly PROTO_MAX_PAYLOAD: a u32 length and MAX - 4 bytes. */
	pbuf_start(&b, P_DATA);
	pbuf_bytes(&b, big, PROTO_MAX_PAYLOAD - 4);
	assert_false(b.failed);
	payload_of(&b, &len);
	assert_int_equal(len, PROTO_MAX_PAYLOAD);
	/* One field more does not fit. */
	pbuf_u32(&b, 1);
	assert_true(b.failed);
	assert_int_equal(pbuf_finish(&b), -1);
	/* Nor does one byte more in the string itself. */
	pbuf_start(&b, P_DATA);
	pbuf_bytes(&b, big, PROTO_MAX_PAYLOAD - 3);
	assert_true(b.failed);
	assert_int_equal(pbuf_finish(&b), -1);
	/* A string longer than any payload is refused before it is read. */
	pbuf_start(&b, P_DATA);
	pbuf_bytes(&b, big, (size_t)PROTO_MAX_PAYLOAD + 1);
	assert_true(b.failed);
	assert_int_equal(pbuf_finish(&b), -1);
	/* The same limit reached one u32 at a time. */
	pbuf_start(&b, P_DATA);
	for (size_t i = 0; i < PROTO_MAX_PAYLOAD / 4; i++)
		pbuf_u32(&b, (uint32_t)i);
	assert_false(b.failed);
	pbuf_u64(&b, 0);
	assert_true(b.failed);
	assert_int_equal(pbuf_finish(&b), -1);
	pbuf_free(&b);
	free(big);
}

static void test_pbuf_finish_refuses_an_unstarted_frame(void **state)
{
	struct pbuf b = {0};

	assert_int_equal(pbuf_finish(&b), -1);
	pbuf_free(&b);
}

static void test_preader_refuses_cut_fields_and_stays_bad(void **state)
{
	static const unsigned char three[] = {1, 2, 3};
	static const unsigned char seven[] = {1, 2, 3, 4, 5, 6, 7};
	static const unsigned char str_cut[] = {5, 0, 0, 0, 'a', 'b'};
	unsigned char *c;
	struct preader r;
	size_t n = 99;

	c = dup_exact(three, sizeof(three));
	preader_init(&r, c, sizeof(three));
	assert_int_equal(preader_u32(&r), 0);
	assert_true(r.bad);
	assert_int_equal(preader_end(&r), -1);
	free(c);

	c = dup_exact(seven, sizeof(seven));
	preader_init(&r, c, sizeof(seven));
	preader_u64(&r); /* the value of a cut field is unspecified */
	assert_true(r.bad);
	assert_int_equal(preader_end(&r), -1);
	free(c);

	c = dup_exact(str_cut, sizeof(str_cut));
	preader_init(&r, c, sizeof(str_cut));
	assert_null(preader_bytes(&r, 100, &n));
	assert_int_equal(n, 0);
	assert_true(r.bad);
	/* Every later read fails too, even one that would fit. */
	assert_int_equal(preader_u32(&r), 0);
	assert_int_equal(preader_end(&r), -1);
	free(c);
}

static void test_preader_refuses_a_string_over_its_cap(void **state)
{
	struct pbuf b = {0};
	struct preader r;
	size_t len, n;
	const unsigned char *p;
	char s[4];

	pbuf_start(&b, P_DATA);
	pbuf_str(&b, "abc");
	pbuf_str(&b, "abcd");
	p = payload_of(&b, &len);

	preader_init(&r, p, len);
	assert_int_equal(preader_str(&r, s, sizeof(s)), 0);
	assert_string_equal(s, "abc");
	assert_int_equal(preader_str(&r, s, sizeof(s)), -1);
	assert_string_equal(s, "");
	assert_true(r.bad);

	preader_init(&r, p, len);
	assert_non_null(preader_bytes(&r, 3, &n));
	assert_null(preader_bytes(&r, 3, &n));
	assert_int_equal(preader_end(&r), -1);
	pbuf_free(&b);
}

static void test_preader_refuses_nul_inside_a_string(void **state)
{
	struct pbuf b = {0};
	struct preader r;
	size_t len;
	const unsigned char *p;
	char s[16];

	pbuf_start(&b, P_DATA);
	pbuf_bytes(&b, "a\0b", 3);
	p = payload_of(&b, &len);
	preader_init(&r, p, len);
	assert_int_equal(preader_str(&r, s, sizeof(s)), -1);
	assert_string_equal(s, "");
	assert_int_equal(preader_end(&r), -1);
	pbuf_free(&b);
}

static void test_preader_str_never_writes_a_zero_sized_buffer(void **state)
{
	struct pbuf b = {0};
	struct preader r;
	size_t len;
	const unsigned char *p;
	char guard[2] = {'x', 'x'};

	pbuf_start(&b, P_DATA);
	pbuf_str(&b, "");
	p = payload_of(&b, &len);
	preader_init(&r, p, len);
	assert_int_equal(preader_str(&r, guard, 0), -1);
	assert_int_equal(guard[0], 'x');
	assert_int_equal(preader_end(&r), -1);
	pbuf_free(&b);
}

static void test_preader_end_refuses_trailing_bytes(void **state)
{
	static const unsigned char five[] = {1, 0, 0, 0, 9};
	struct preader r;

	preader_init(&r, five, sizeof(five));
	assert_int_equal(preader_u32(&r), 1);
	assert_int_equal(preader_end(&r), -1);
	preader_init(&r, five, 4);
	assert_int_equal(preader_u32(&r), 1);
	assert_int_equal(preader_end(&r), 0);
	preader_init(&r, NULL, 0);
	assert_int_equal(preader_end(&r), 0);
}

/* ---- the header ---- */

static void test_header_parses_type_and_length(void **state)
{
	unsigned char h[PROTO_HEADER] = {PROTO_VERSION, P_EXIT, 0, 0, 0x04, 0x03, 0x02, 0x00};
	unsigned type = 0;
	uint32_t len = 0;

	assert_int_equal(proto_header(h, &type, &len), 0);
	assert_int_equal(type, P_EXIT);
	assert_int_equal(len, 0x020304);
	/* Unknown types pass: the conversation decides what is expected. */
	h[1] = 0xff;
	assert_int_equal(proto_header(h, &type, &len), 0);
	assert_int_equal(type, 0xff);
}

static void test_header_refuses_another_version(void **state)
{
	unsigned char h[PROTO_HEADER] = {0, P_OK, 0, 0, 0, 0, 0, 0};
	unsigned type;
	uint32_t len;

	assert_int_equal(proto_header(h, &type, &len), -1);
	h[0] = PROTO_VERSION + 1;
	assert_int_equal(proto_header(h, &type, &len), -1);
	h[0] = 0xff;
	assert_int_equal(proto_header(h, &type, &len), -1);
}

static void test_header_refuses_reserved_bits(void **state)
{
	unsigned type;
	uint32_t len;

	for (int byte = 2; byte <= 3; byte++)
		for (int bit = 0; bit < 8; bit++) {
			unsigned char h[PROTO_HEADER] = {PROTO_VERSION, P_OK, 0, 0, 0, 0, 0, 0};
			h[byte] = (unsigned char)(1u << bit);
			assert_int_equal(proto_header(h, &type, &len), -1);
		}
}

static void test_header_refuses_length_over_max(void **state)
{
	static const uint32_t lens[] = {PROTO_MAX_PAYLOAD + 1, PROTO_MAX_PAYLOAD * 2, 0x80000000u,
					UINT32_MAX};
	unsigned char h[PROTO_HEADER] = {PROTO_VERSION, P_DATA, 0, 0, 0, 0, 0, 0};
	unsigned type;
	uint32_t len;

	for (int i = 0; i < 4; i++)
		h[4 + i] = (unsigned char)(PROTO_MAX_PAYLOAD >> (8 * i));
	assert_int_equal(proto_header(h, &type, &len), 0);
	assert_int_equal(len, PROTO_MAX_PAYLOAD);
	for (size_t k = 0; k < ARRAY_LEN(lens); k++) {
		for (int i = 0; i < 4; i++)
			h[4 + i] = (unsigned char)(lens[k] >> (8 * i));
		assert_int_equal(proto_header(h, &type, &len), -1);
	}
}

static void test_header_of_a_built_frame_round_trips(void **state)
{
	struct pbuf b = {0};
	unsigned type;
	uint32_t len;

	pbuf_start(&b, P_ERR);
	pbuf_str(&b, "nope");
	assert_int_equal(pbuf_finish(&b), 0);
	assert_int_equal(proto_header(b.data, &type, &len), 0);
	assert_int_equal(type, P_ERR);
	assert_int_equal(len, b.len - PROTO_HEADER);
	pbuf_free(&b);
}

/* ---- P_HELLO ---- */

static int hello_rc(const unsigned char *p, size_t n)
{
	struct proto_hello h;

	return proto_parse_hello(p, n, &h);
}

static void test_hello_parses_the_agents_frame(void **state)
{
	struct pbuf b = {0};
	struct proto_hello h;
	size_t len;
	const unsigned char *p;

	pbuf_start(&b, P_HELLO);
	pbuf_u32(&b, PROTO_VERSION);
	pbuf_str(&b, "proctor-agent 0.1.0");
	pbuf_str(&b, "6.1.0-18-cloud-amd64");
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_hello(p, len, &h), 0);
	assert_int_equal(h.version, PROTO_VERSION);
	assert_string_equal(h.agent, "proctor-agent 0.1.0");
	assert_string_equal(h.kernel, "6.1.0-18-cloud-amd64");
	expect_exact_length(&b, hello_rc);
	pbuf_free(&b);
}

static void test_hello_passes_another_version_for_the_host_to_refuse(void **state)
{
	struct pbuf b = {0};
	struct proto_hello h;
	size_t len;
	const unsigned char *p;

	pbuf_start(&b, P_HELLO);
	pbuf_u32(&b, PROTO_VERSION + 1);
	pbuf_str(&b, "a");
	pbuf_str(&b, "k");
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_hello(p, len, &h), 0);
	assert_int_equal(h.version, PROTO_VERSION + 1);
	pbuf_free(&b);
}

static void test_hello_refuses_strings_over_cap_or_with_nul(void **state)
{
	char s63[64], s64[65];
	struct pbuf b = {0};
	struct proto_hello h;
	size_t len;
	const unsigned char *p;

	memset(s63, 'a', 63);
	s63[63] = '\0';
	memset(s64, 'a', 64);
	s64[64] = '\0';

	pbuf_start(&b, P_HELLO);
	pbuf_u32(&b, PROTO_VERSION);
	pbuf_str(&b, s63);
	pbuf_str(&b, s63);
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_hello(p, len, &h), 0);
	assert_int_equal(strlen(h.agent), 63);
	assert_int_equal(strlen(h.kernel), 63);

	pbuf_start(&b, P_HELLO);
	pbuf_u32(&b, PROTO_VERSION);
	pbuf_str(&b, s64);
	pbuf_str(&b, "k");
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_hello(p, len, &h), -1);

	pbuf_start(&b, P_HELLO);
	pbuf_u32(&b, PROTO_VERSION);
	pbuf_str(&b, "a");
	pbuf_str(&b, s64);
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_hello(p, len, &h), -1);

	pbuf_start(&b, P_HELLO);
	pbuf_u32(&b, PROTO_VERSION);
	pbuf_bytes(&b, "a\0b", 3);
	pbuf_str(&b, "k");
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_hello(p, len, &h), -1);
	pbuf_free(&b);
}

static void test_hello_replaces_control_characters(void **state)
{
	struct pbuf b = {0};
	struct proto_hello h;
	size_t len;
	const unsigned char *p;

	pbuf_start(&b, P_HELLO);
	pbuf_u32(&b, PROTO_VERSION);
	pbuf_str(&b, "agent\r\n\x1b[31mred\x7f");
	pbuf_str(&b, "\t6.1\x01\xc3\xa9");
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_hello(p, len, &h), 0);
	assert_string_equal(h.agent, "agent   [31mred ");
	/* Bytes from 0x80 up are not control characters: UTF-8 stays. */
	assert_string_equal(h.kernel, " 6.1 \xc3\xa9");
	pbuf_free(&b);
}

/* ---- P_EXIT ---- */

static int exit_rc(const unsigned char *p, size_t n)
{
	struct proto_exit x;

	return proto_parse_exit(p, n, &x);
}

static void test_exit_parses_every_field(void **state)
{
	struct pbuf b = {0};
	struct proto_exit x;

	assert_int_equal(
	    parse_exit_rc(PROTO_EXIT_EXITED | PROTO_EXIT_PIDS_HIT | PROTO_EXIT_OOM_KILL, 1 | 4, 3,
			  0, "bye", &x),
	    0);
	assert_int_equal(x.flags, PROTO_EXIT_EXITED | PROTO_EXIT_PIDS_HIT | PROTO_EXIT_OOM_KILL);
	assert_int_equal(x.killed_for, 5);
	assert_int_equal(x.exit_code, 3);
	assert_int_equal(x.signal, 0);
	assert_true(x.cpu_ms == 1500);
	assert_true(x.wall_ms == 2500);
	assert_true(x.peak_memory_kib == 1ull << 40);
	assert_true(x.peak_pids == 7);
	assert_true(x.out_total == UINT64_MAX);
	assert_true(x.err_total == 0x0123456789abcdefull);
	assert_string_equal(x.message, "bye");

	build_exit(&b, PROTO_EXIT_SIGNALED, 2, 0, 9, "killed");
	expect_exact_length(&b, exit_rc);
	pbuf_free(&b);
}

static void test_exit_checks_exit_code_range_when_exited(void **state)
{
	struct proto_exit x;

	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXITED, 0, 0, 0, "", &x), 0);
	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXITED, 0, 255, 0, "", &x), 0);
	assert_int_equal(x.exit_code, 255);
	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXITED, 0, 256, 0, "", &x), -1);
	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXITED, 0, -1, 0, "", &x), -1);
	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXITED, 0, INT32_MIN, 0, "", &x), -1);
	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXITED, 0, INT32_MAX, 0, "", &x), -1);
	/* Without EXITED the code is not looked at: the agent sends -1 when the
	 * program never started. */
	assert_int_equal(parse_exit_rc(PROTO_EXIT_NOT_STARTED, 0, -1, 0, "fork: x", &x), 0);
	assert_int_equal(x.exit_code, -1);
	assert_int_equal(parse_exit_rc(0, 2, 256, 0, "", &x), 0);
}

static void test_exit_checks_signal_range_when_signaled(void **state)
{
	struct proto_exit x;

	assert_int_equal(parse_exit_rc(PROTO_EXIT_SIGNALED, 0, -1, 1, "", &x), 0);
	assert_int_equal(parse_exit_rc(PROTO_EXIT_SIGNALED, 0, -1, 64, "", &x), 0);
	assert_int_equal(x.signal, 64);
	assert_int_equal(parse_exit_rc(PROTO_EXIT_SIGNALED, 0, -1, 0, "", &x), -1);
	assert_int_equal(parse_exit_rc(PROTO_EXIT_SIGNALED, 0, -1, 65, "", &x), -1);
	assert_int_equal(parse_exit_rc(PROTO_EXIT_SIGNALED, 0, -1, -1, "", &x), -1);
	/* Without SIGNALED the signal is not looked at. */
	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXITED, 0, 0, 65, "", &x), 0);
}

static void test_exit_refuses_exited_and_signaled_together(void **state)
{
	struct proto_exit x;

	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXITED | PROTO_EXIT_SIGNALED, 0, 0, 9, "", &x),
			 -1);
	assert_int_equal(parse_exit_rc(UINT32_MAX & ~PROTO_EXIT_SIGNALED, 0, 0, 0, "", &x), 0);
	assert_int_equal(parse_exit_rc(UINT32_MAX, 0, 0, 9, "", &x), -1);
}

static void test_exit_refuses_unknown_killed_for_bits(void **state)
{
	struct proto_exit x;

	assert_int_equal(parse_exit_rc(0, (1u << 9) - 1, 0, 0, "", &x), 0);
	assert_int_equal(x.killed_for, (1u << 9) - 1);
	assert_int_equal(parse_exit_rc(0, 1u << 9, 0, 0, "", &x), -1);
	assert_int_equal(parse_exit_rc(0, 1u << 31, 0, 0, "", &x), -1);
	assert_int_equal(parse_exit_rc(0, UINT32_MAX, 0, 0, "", &x), -1);
}

static void test_exit_message_cap_nul_and_control_characters(void **state)
{
	struct proto_exit x;
	char m255[256], m256[257];
	struct pbuf b = {0};
	size_t len;
	const unsigned char *p;

	memset(m255, 'm', 255);
	m255[255] = '\0';
	memset(m256, 'm', 256);
	m256[256] = '\0';
	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXITED, 0, 1, 0, m255, &x), 0);
	assert_int_equal(strlen(x.message), 255);
	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXITED, 0, 1, 0, m256, &x), -1);

	assert_int_equal(parse_exit_rc(PROTO_EXIT_EXEC_FAILED | PROTO_EXIT_EXITED, 0, 127, 0,
				       "cannot execute\n'x'\x1b]0;pwned\x07\x7f", &x),
			 0);
	assert_string_equal(x.message, "cannot execute 'x' ]0;pwned  ");

	pbuf_start(&b, P_EXIT);
	for (int i = 0; i < 4; i++)
		pbuf_u32(&b, 0);
	for (int i = 0; i < 6; i++)
		pbuf_u64(&b, 0);
	pbuf_bytes(&b, "a\0b", 3);
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_exit(p, len, &x), -1);
	pbuf_free(&b);
}

/* ---- P_OUT ---- */

static int out_rc(const unsigned char *p, size_t n)
{
	unsigned stream;
	const unsigned char *d;
	size_t dn;

	return proto_parse_out(p, n, &stream, &d, &dn);
}

static void test_out_parses_both_streams(void **state)
{
	struct pbuf b = {0};
	unsigned stream;
	const unsigned char *p, *d;
	size_t len, n;

	for (unsigned s = 1; s <= 2; s++) {
		pbuf_start(&b, P_OUT);
		pbuf_u32(&b, s);
		pbuf_bytes(&b, "out\0\n\xff", 6);
		p = payload_of(&b, &len);
		assert_int_equal(proto_parse_out(p, len, &stream, &d, &n), 0);
		assert_int_equal(stream, s);
		assert_int_equal(n, 6);
		assert_ptr_equal(d, p + 8);
		assert_memory_equal(d, "out\0\n\xff", 6);
		expect_exact_length(&b, out_rc);
	}
	pbuf_start(&b, P_OUT);
	pbuf_u32(&b, 1);
	pbuf_bytes(&b, NULL, 0);
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_out(p, len, &stream, &d, &n), 0);
	assert_int_equal(n, 0);
	pbuf_free(&b);
}

static void test_out_refuses_other_streams(void **state)
{
	static const uint32_t bad[] = {0, 3, 0x101, UINT32_MAX};
	struct pbuf b = {0};
	unsigned stream;
	const unsigned char *p, *d;
	size_t len, n;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		pbuf_start(&b, P_OUT);
		pbuf_u32(&b, bad[i]);
		pbuf_str(&b, "x");
		p = payload_of(&b, &len);
		assert_int_equal(proto_parse_out(p, len, &stream, &d, &n), -1);
	}
	pbuf_free(&b);
}

/* ---- P_FILE ---- */

static int file_rc(const unsigned char *p, size_t n)
{
	char path[PROTO_MAX_STR];
	uint32_t mode;
	uint64_t size;

	return proto_parse_file(p, n, path, sizeof(path), &mode, &size);
}

static void test_file_parses_path_mode_and_size(void **state)
{
	struct pbuf b = {0};
	char path[PROTO_MAX_STR];
	uint32_t mode;
	uint64_t size;
	const unsigned char *p;
	size_t len;

	build_file(&b, "out/report.xml", 14, 0100644, 1ull << 33);
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_file(p, len, path, sizeof(path), &mode, &size), 0);
	assert_string_equal(path, "out/report.xml");
	assert_int_equal(mode, 0644);
	assert_true(size == 1ull << 33);
	expect_exact_length(&b, file_rc);

	/* Only the permission bits survive. */
	build_file(&b, "a", 1, 0xffffffffu, 0);
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_file(p, len, path, sizeof(path), &mode, &size), 0);
	assert_int_equal(mode, 0777);
	pbuf_free(&b);
}

static void test_file_accepts_empty_path_for_the_file_itself(void **state)
{
	char path[16] = "junk";
	uint32_t mode;
	uint64_t size;

	assert_int_equal(parse_file_rc("", 0, sizeof(path), path, &mode, &size), 0);
	assert_string_equal(path, "");
	assert_int_equal(mode, 0644);
	assert_true(size == 42);
}

static void test_file_refuses_paths_that_leave_the_tree(void **state)
{
	static const char *const bad[] = {
	    ".",    "..",   "./a",  "a/.",   "a/..", "../a",   "a/../b",
	    "/abs", "/",    "a//b", "a/",    "//",   "a/./b",  "../\n", "a/../\t",
	};
	/* Well-formed paths with a control character: left out by the host
	 * (-2), the VM kept. */
	static const char *const control[] = {
	    "\n", "a\nb", "a\rb", "a\tb", "a\x1b", "\x7f", "a/\x01", "a b\x1f",
	};
	char path[PROTO_MAX_STR];
	uint32_t mode;
	uint64_t size;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++)
		if (parse_file_rc(bad[i], strlen(bad[i]), sizeof(path), path, &mode, &size) != -1)
			fail_msg("P_FILE path '%s' was accepted", bad[i]);
	for (size_t i = 0; i < ARRAY_LEN(control); i++)
		if (parse_file_rc(control[i], strlen(control[i]), sizeof(path), path, &mode,
				  &size) != -2)
			fail_msg("P_FILE path '%s' was not left out", control[i]);
	/* A NUL inside. */
	assert_int_equal(parse_file_rc("a\0b", 3, sizeof(path), path, &mode, &size), -1);
	assert_int_equal(parse_file_rc("a\0", 2, sizeof(path), path, &mode, &size), -1);
}

static void test_file_accepts_ordinary_names(void **state)
{
	static const char *const good[] = {
	    "a",	   "a/b",	"...",	  "a/...b",
	    ".hidden",	   "a/.b/c..d", "sp ace", "\xc3\xa9t\xc3\xa9",
	    "a-b_c.d/e~f",
	};
	char path[PROTO_MAX_STR];
	uint32_t mode;
	uint64_t size;

	for (size_t i = 0; i < ARRAY_LEN(good); i++) {
		if (parse_file_rc(good[i], strlen(good[i]), sizeof(path), path, &mode, &size) != 0)
			fail_msg("P_FILE path '%s' was refused", good[i]);
		assert_string_equal(path, good[i]);
	}
}

static void test_file_refuses_path_over_cap(void **state)
{
	char path[8], big[PROTO_MAX_STR], out[PROTO_MAX_STR];
	uint32_t mode;
	uint64_t size;

	assert_int_equal(parse_file_rc("abcdefg", 7, sizeof(path), path, &mode, &size), 0);
	assert_int_equal(parse_file_rc("abcdefgh", 8, sizeof(path), path, &mode, &size), -1);
	/* The host's buffer: PROTO_MAX_STR - 1 bytes and the NUL. */
	memset(big, 'a', sizeof(big));
	assert_int_equal(parse_file_rc(big, sizeof(big) - 1, sizeof(out), out, &mode, &size), 0);
	assert_int_equal(strlen(out), sizeof(big) - 1);
	assert_int_equal(parse_file_rc(big, sizeof(big), sizeof(out), out, &mode, &size), -1);
}

/* ---- P_ERR ---- */

static int err_rc(const unsigned char *p, size_t n)
{
	char msg[512];

	return proto_parse_err(p, n, msg, sizeof(msg));
}

static void test_err_parses_and_replaces_control_characters(void **state)
{
	struct pbuf b = {0};
	char msg[512];
	const unsigned char *p;
	size_t len;

	pbuf_start(&b, P_ERR);
	pbuf_str(&b, "put work/x: No space left on device");
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_err(p, len, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "put work/x: No space left on device");
	expect_exact_length(&b, err_rc);

	pbuf_start(&b, P_ERR);
	pbuf_str(&b, "line one\nline two\r\x1b[2J\x7f\xe2\x9c\x93");
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_err(p, len, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "line one line two  [2J \xe2\x9c\x93");
	pbuf_free(&b);
}

static void test_err_refuses_nul_and_over_cap(void **state)
{
	struct pbuf b = {0};
	char msg[8];
	const unsigned char *p;
	size_t len;

	pbuf_start(&b, P_ERR);
	pbuf_bytes(&b, "bad\0news", 8);
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_err(p, len, msg, sizeof(msg)), -1);

	pbuf_start(&b, P_ERR);
	pbuf_str(&b, "1234567");
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_err(p, len, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "1234567");

	pbuf_start(&b, P_ERR);
	pbuf_str(&b, "12345678");
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_err(p, len, msg, sizeof(msg)), -1);
	pbuf_free(&b);
}

/* ---- paths ---- */

static void test_path_ok_table(void **state)
{
	static const struct {
		const char *path;
		bool ok;
	} cases[] = {
	    {"a", true},
	    {"work", true},
	    {"work/a.txt", true},
	    {"a/b/c/d", true},
	    {"...", true},
	    {".a", true},
	    {"a.", true},
	    {"..a", true},
	    {"a..", true},
	    {"a/.../b", true},
	    {"a b", true},
	    {"\xc3\xa9", true},
	    {"", false},
	    {".", false},
	    {"..", false},
	    {"/", false},
	    {"/a", false},
	    {"/abs/path", false},
	    {"a/", false},
	    {"a//b", false},
	    {"//a", false},
	    {"./a", false},
	    {"a/.", false},
	    {"a/./b", false},
	    {"../a", false},
	    {"a/..", false},
	    {"a/../b", false},
	    {"a/b/../../..", false},
	    {"work/../../etc", false},
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++)
		if (proto_path_ok(cases[i].path) != cases[i].ok)
			fail_msg("proto_path_ok(\"%s\") is not %s", cases[i].path,
				 cases[i].ok ? "true" : "false");
}

/* The time factor build_run() writes, in thousandths. */
static uint32_t run_factor = 1000;

/* A P_RUN as vm_run() lays it out: argv, env, stdin path, the limits, the
 * flags, (version 5) the time factor, then (version 3) the peer's argv and
 * env. */
static const unsigned char *build_run(struct pbuf *b, size_t npeer, size_t npeer_env,
				      uint32_t flags, size_t *len)
{
	pbuf_start(b, P_RUN);
	pbuf_u32(b, 2);
	pbuf_str(b, "sh");
	pbuf_str(b, "-c");
	pbuf_u32(b, 1);
	pbuf_str(b, "PATH=/bin");
	pbuf_str(b, "tmp/.proctor-stdin");
	for (int i = 0; i < 7; i++)
		pbuf_u64(b, 1000u + (unsigned)i);
	pbuf_u32(b, flags);
	pbuf_u32(b, run_factor);
	pbuf_u32(b, (uint32_t)npeer);
	for (size_t i = 0; i < npeer; i++)
		pbuf_str(b, i ? "1000" : "sleep");
	pbuf_u32(b, (uint32_t)npeer_env);
	for (size_t i = 0; i < npeer_env; i++)
		pbuf_str(b, "WHO=peer");
	return payload_of(b, len);
}

static void test_run_parses_the_peer_of_a_split_run(void **state)
{
	struct pbuf b = {0};
	struct proto_run *q = calloc(1, sizeof(*q));
	const unsigned char *p;
	size_t len;

	assert_non_null(q);
	p = build_run(&b, 2, 1, 0, &len);
	assert_int_equal(proto_parse_run(p, len, q), 0);
	assert_string_equal(q->argv[0], "sh");
	assert_string_equal(q->argv[1], "-c");
	assert_null(q->argv[2]);
	assert_string_equal(q->env[0], "PATH=/bin");
	assert_string_equal(q->stdin_path, "tmp/.proctor-stdin");
	assert_true(q->l.cpu_ms == 1000 && q->l.output_bytes == 1006);
	assert_int_equal(q->l.factor_milli, 1000);
	assert_string_equal(q->peer_argv[0], "sleep");
	assert_string_equal(q->peer_argv[1], "1000");
	assert_null(q->peer_argv[2]);
	assert_string_equal(q->peer_env[0], "WHO=peer");
	assert_null(q->peer_env[1]);
	proto_run_free(q);
	assert_null(q->argv[0]);

	/* No peer: a plain run. */
	p = build_run(&b, 0, 0, PROTO_RUN_PRIVILEGED, &len);
	assert_int_equal(proto_parse_run(p, len, q), 0);
	assert_null(q->peer_argv[0]);
	assert_int_equal(q->l.flags, PROTO_RUN_PRIVILEGED);
	proto_run_free(q);

	/* A peer environment without a peer, unknown flags, a cut peer list
	 * and a trailing byte are malformed. */
	p = build_run(&b, 0, 1, 0, &len);
	assert_int_equal(proto_parse_run(p, len, q), -1);
	proto_run_free(q);
	p = build_run(&b, 1, 0, 4, &len);
	assert_int_equal(proto_parse_run(p, len, q), -1);
	proto_run_free(q);
	/* PROTO_RUN_ZYGOTE is a known flag. */
	p = build_run(&b, 1, 0, PROTO_RUN_ZYGOTE, &len);
	assert_int_equal(proto_parse_run(p, len, q), 0);
	assert_int_equal(q->l.flags, PROTO_RUN_ZYGOTE);
	proto_run_free(q);
	p = build_run(&b, 2, 1, 0, &len);
	assert_int_equal(proto_parse_run(p, len - 1, q), -1);
	proto_run_free(q);
	p = build_run(&b, 1, 0, 0, &len);
	pbuf_u32(&b, 0);
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_run(p, len, q), -1);
	proto_run_free(q);
	/* The time factor: 1 to 100, in thousandths; outside, malformed. */
	run_factor = 8250;
	p = build_run(&b, 0, 0, 0, &len);
	assert_int_equal(proto_parse_run(p, len, q), 0);
	assert_int_equal(q->l.factor_milli, 8250);
	proto_run_free(q);
	for (size_t i = 0; i < 2; i++) {
		run_factor = i ? 100001 : 999;
		p = build_run(&b, 0, 0, 0, &len);
		assert_int_equal(proto_parse_run(p, len, q), -1);
		proto_run_free(q);
	}
	run_factor = 1000;
	/* A peer count over the cap. */
	p = build_run(&b, 0, 0, 0, &len);
	b.len -= 8;
	pbuf_u32(&b, PROTO_MAX_ARGS + 1);
	pbuf_u32(&b, 0);
	p = payload_of(&b, &len);
	assert_int_equal(proto_parse_run(p, len, q), -1);
	proto_run_free(q);
	free(q);
	pbuf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_pbuf_lays_out_header_and_fields_little_endian),
	    cmocka_unit_test(test_pbuf_and_preader_round_trip_every_field_kind),
	    cmocka_unit_test(test_pbuf_start_reuses_the_buffer_and_clears_failure),
	    cmocka_unit_test(test_pbuf_refuses_payload_over_max),
	    cmocka_unit_test(test_pbuf_finish_refuses_an_unstarted_frame),
	    cmocka_unit_test(test_preader_refuses_cut_fields_and_stays_bad),
	    cmocka_unit_test(test_preader_refuses_a_string_over_its_cap),
	    cmocka_unit_test(test_preader_refuses_nul_inside_a_string),
	    cmocka_unit_test(test_preader_str_never_writes_a_zero_sized_buffer),
	    cmocka_unit_test(test_preader_end_refuses_trailing_bytes),
	    cmocka_unit_test(test_header_parses_type_and_length),
	    cmocka_unit_test(test_header_refuses_another_version),
	    cmocka_unit_test(test_header_refuses_reserved_bits),
	    cmocka_unit_test(test_header_refuses_length_over_max),
	    cmocka_unit_test(test_header_of_a_built_frame_round_trips),
	    cmocka_unit_test(test_hello_parses_the_agents_frame),
	    cmocka_unit_test(test_hello_passes_another_version_for_the_host_to_refuse),
	    cmocka_unit_test(test_hello_refuses_strings_over_cap_or_with_nul),
	    cmocka_unit_test(test_hello_replaces_control_characters),
	    cmocka_unit_test(test_exit_parses_every_field),
	    cmocka_unit_test(test_exit_checks_exit_code_range_when_exited),
	    cmocka_unit_test(test_exit_checks_signal_range_when_signaled),
	    cmocka_unit_test(test_exit_refuses_exited_and_signaled_together),
	    cmocka_unit_test(test_exit_refuses_unknown_killed_for_bits),
	    cmocka_unit_test(test_exit_message_cap_nul_and_control_characters),
	    cmocka_unit_test(test_out_parses_both_streams),
	    cmocka_unit_test(test_out_refuses_other_streams),
	    cmocka_unit_test(test_file_parses_path_mode_and_size),
	    cmocka_unit_test(test_file_accepts_empty_path_for_the_file_itself),
	    cmocka_unit_test(test_file_refuses_paths_that_leave_the_tree),
	    cmocka_unit_test(test_file_accepts_ordinary_names),
	    cmocka_unit_test(test_file_refuses_path_over_cap),
	    cmocka_unit_test(test_err_parses_and_replaces_control_characters),
	    cmocka_unit_test(test_err_refuses_nul_and_over_cap),
	    cmocka_unit_test(test_path_ok_table),
	    cmocka_unit_test(test_run_parses_the_peer_of_a_split_run),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
