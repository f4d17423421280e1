/* Unit tests of result.c: the JSON result format of docs/cli-contract.md, names and exit status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "result.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* U+FFFD REPLACEMENT CHARACTER */
#define R "\xEF\xBF\xBD"

enum json_kind {
	K_INT,
	K_STRING,
	K_BOOL,
	K_ARRAY,
	K_INT_OR_NULL,
	K_STRING_OR_NULL,
};

/* The result table of docs/cli-contract.md, schema_version 1. */
static const struct {
	const char *name;
	enum json_kind kind;
} contract_fields[] = {
    {"schema_version", K_INT},
    {"status", K_STRING},
    {"limits_hit", K_ARRAY},
    {"exit_code", K_INT_OR_NULL},
    {"signal", K_INT_OR_NULL},
    {"signal_name", K_STRING_OR_NULL},
    {"cpu_ms", K_INT},
    {"wall_ms", K_INT},
    {"peak_memory_kib", K_INT},
    {"peak_pids", K_INT},
    {"stdout", K_STRING},
    {"stderr", K_STRING},
    {"stdout_truncated", K_BOOL},
    {"stderr_truncated", K_BOOL},
    {"stdout_bytes", K_INT},
    {"stderr_bytes", K_INT},
    {"message", K_STRING_OR_NULL},
};

/* limits_hit names in bit order, as the contract lists them. */
static const char *const contract_limit_names[] = {
    "cpu", "wall", "memory", "pids", "fsize", "disk", "output", "nofile", "seccomp",
};

static const char *const contract_status_names[] = {
    "ok", "nonzero_exit", "signaled", "timeout", "memory_limit", "error",
};

static bool kind_matches(const json_t *v, enum json_kind k)
{
	switch (k) {
	case K_INT:
		return json_is_integer(v);
	case K_STRING:
		return json_is_string(v);
	case K_BOOL:
		return json_is_boolean(v);
	case K_ARRAY:
		return json_is_array(v);
	case K_INT_OR_NULL:
		return json_is_integer(v) || json_is_null(v);
	case K_STRING_OR_NULL:
		return json_is_string(v) || json_is_null(v);
	}
	return false;
}

/* Serialise, parse back and check every contract field and no other. */
static json_t *to_json_checked(const struct run_result *r)
{
	json_t *o = run_result_to_json(r);
	json_t *back;
	json_error_t jerr;
	char *text;

	assert_non_null(o);
	assert_true(json_is_object(o));
	for (size_t i = 0; i < ARRAY_LEN(contract_fields); i++) {
		json_t *v = json_object_get(o, contract_fields[i].name);
		if (!v)
			fail_msg("field '%s' missing", contract_fields[i].name);
		if (!kind_matches(v, contract_fields[i].kind))
			fail_msg("field '%s' has JSON type %d", contract_fields[i].name,
				 (int)json_typeof(v));
	}
	assert_int_equal(json_object_size(o), ARRAY_LEN(contract_fields));

	/* What a consumer sees: dumped text that parses back to the same
	 * object.  NUL is legal JSON ("\u0000") but jansson wants it allowed. */
	text = json_dumps(o, JSON_COMPACT);
	assert_non_null(text);
	back = json_loads(text, JSON_ALLOW_NUL, &jerr);
	if (!back)
		fail_msg("output does not parse back: %s", jerr.text);
	assert_true(json_equal(o, back));
	json_decref(back);
	free(text);
	return o;
}

static void init_result(struct run_result *r, size_t cap)
{
	assert_int_equal(run_result_init(r, cap), 0);
}

/* Fixture: every JSON test gets a fresh result with 64-byte caps, freed even
 * when an assertion fails. */
static int setup_result(void **state)
{
	struct run_result *r = malloc(sizeof(*r));

	if (!r || run_result_init(r, 64) < 0) {
		free(r);
		return -1;
	}
	*state = r;
	return 0;
}

static int teardown_result(void **state)
{
	struct run_result *r = *state;

	run_result_free(r);
	free(r);
	return 0;
}

/* Swap the fixture's buffers for ones with another cap. */
static void reinit_result(struct run_result *r, size_t cap)
{
	run_result_free(r);
	init_result(r, cap);
}

static void set_exited(struct run_result *r, int code)
{
	r->status = code == 0 ? RUN_OK : RUN_NONZERO_EXIT;
	r->exit_code = code;
	r->signal = 0;
}

static void set_signaled(struct run_result *r, int sig)
{
	r->status = RUN_SIGNALED;
	r->exit_code = -1;
	r->signal = sig;
}

static void test_result_init_starts_neutral(void **state)
{
	struct run_result r;

	memset(&r, 0x5A, sizeof(r));
	init_result(&r, 16);
	assert_int_equal(r.status, RUN_OK);
	assert_int_equal(r.limits_hit, 0);
	assert_int_equal(r.exit_code, -1);
	assert_int_equal(r.signal, 0);
	assert_int_equal(r.cpu_ms, 0);
	assert_int_equal(r.peak_pids, 0);
	assert_string_equal(r.message, "");
	assert_int_equal(r.out.cap, 16);
	assert_int_equal(r.err.cap, 16);
	assert_int_equal(r.out.total, 0);
	run_result_free(&r);
}

static void test_result_json_has_every_contract_field(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	set_exited(r, 0);
	r->cpu_ms = 1234;
	r->wall_ms = 5678;
	r->peak_memory_kib = 9012;
	r->peak_pids = 3;
	capbuf_append(&r->out, "hello\n", 6);
	capbuf_append(&r->err, "warn\n", 5);
	o = to_json_checked(r);

	assert_int_equal(json_integer_value(json_object_get(o, "schema_version")), 1);
	assert_string_equal(json_string_value(json_object_get(o, "status")), "ok");
	assert_int_equal(json_array_size(json_object_get(o, "limits_hit")), 0);
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), 0);
	assert_true(json_is_null(json_object_get(o, "signal")));
	assert_true(json_is_null(json_object_get(o, "signal_name")));
	assert_int_equal(json_integer_value(json_object_get(o, "cpu_ms")), 1234);
	assert_int_equal(json_integer_value(json_object_get(o, "wall_ms")), 5678);
	assert_int_equal(json_integer_value(json_object_get(o, "peak_memory_kib")), 9012);
	assert_int_equal(json_integer_value(json_object_get(o, "peak_pids")), 3);
	assert_string_equal(json_string_value(json_object_get(o, "stdout")), "hello\n");
	assert_string_equal(json_string_value(json_object_get(o, "stderr")), "warn\n");
	assert_true(json_is_false(json_object_get(o, "stdout_truncated")));
	assert_true(json_is_false(json_object_get(o, "stderr_truncated")));
	assert_int_equal(json_integer_value(json_object_get(o, "stdout_bytes")), 6);
	assert_int_equal(json_integer_value(json_object_get(o, "stderr_bytes")), 5);
	assert_true(json_is_null(json_object_get(o, "message")));
	json_decref(o);
}

static void test_result_json_exit_code_null_when_signaled(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	set_signaled(r, 11);
	o = to_json_checked(r);
	assert_string_equal(json_string_value(json_object_get(o, "status")), "signaled");
	assert_true(json_is_null(json_object_get(o, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(o, "signal")), 11);
	assert_string_equal(json_string_value(json_object_get(o, "signal_name")), "SIGSEGV");
	json_decref(o);
}

static void test_result_json_signal_null_when_exited(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	set_exited(r, 42);
	o = to_json_checked(r);
	assert_string_equal(json_string_value(json_object_get(o, "status")), "nonzero_exit");
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), 42);
	assert_true(json_is_null(json_object_get(o, "signal")));
	assert_true(json_is_null(json_object_get(o, "signal_name")));
	json_decref(o);
}

static void test_result_json_exit_code_255_is_kept(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	set_exited(r, 255);
	o = to_json_checked(r);
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")), 255);
	json_decref(o);
}

static void test_result_json_timeout_reports_sigkill(void **state)
{
	struct run_result *r = *state;
	json_t *o, *hits;

	set_signaled(r, 9);
	r->status = RUN_TIMEOUT;
	r->limits_hit = LIMIT_HIT_WALL;
	o = to_json_checked(r);
	assert_string_equal(json_string_value(json_object_get(o, "status")), "timeout");
	assert_true(json_is_null(json_object_get(o, "exit_code")));
	assert_int_equal(json_integer_value(json_object_get(o, "signal")), 9);
	assert_string_equal(json_string_value(json_object_get(o, "signal_name")), "SIGKILL");
	hits = json_object_get(o, "limits_hit");
	assert_int_equal(json_array_size(hits), 1);
	assert_string_equal(json_string_value(json_array_get(hits, 0)), "wall");
	json_decref(o);
}

static void test_result_json_seccomp_kill_names_sigsys(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	set_signaled(r, 31);
	r->limits_hit = LIMIT_HIT_SECCOMP;
	o = to_json_checked(r);
	assert_int_equal(json_integer_value(json_object_get(o, "signal")), 31);
	assert_string_equal(json_string_value(json_object_get(o, "signal_name")), "SIGSYS");
	assert_string_equal(json_string_value(json_array_get(json_object_get(o, "limits_hit"), 0)),
			    "seccomp");
	json_decref(o);
}

static void test_result_json_message_null_when_empty_else_string(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	set_exited(r, 127);
	o = to_json_checked(r);
	assert_true(json_is_null(json_object_get(o, "message")));
	json_decref(o);

	snprintf(r->message, sizeof(r->message), "cannot execute 'x': No such file or directory");
	o = to_json_checked(r);
	assert_string_equal(json_string_value(json_object_get(o, "message")),
			    "cannot execute 'x': No such file or directory");
	json_decref(o);
}

static void test_result_json_message_of_maximum_length(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	set_exited(r, 1);
	memset(r->message, 'm', sizeof(r->message) - 1);
	r->message[sizeof(r->message) - 1] = '\0';
	o = to_json_checked(r);
	assert_int_equal(json_string_length(json_object_get(o, "message")), sizeof(r->message) - 1);
	json_decref(o);
}

/* A message quotes user-supplied names (the program path), which need not
 * be UTF-8; the result must still be produced. */
static void test_result_json_message_with_invalid_utf8_is_still_valid(void **state)
{
	struct run_result *r = *state;
	json_t *o, *m;

	set_exited(r, 127);
	snprintf(r->message, sizeof(r->message),
		 "cannot execute 'caf\xE9': No such file or directory");
	o = run_result_to_json(r);
	if (!o)
		fail_msg("run_result_to_json returned NULL for message \"%s\"", r->message);
	m = json_object_get(o, "message");
	assert_true(json_is_string(m));
	assert_non_null(strstr(json_string_value(m), "caf" R));
	json_decref(o);
}

static void test_result_json_limits_hit_order_and_names(void **state)
{
	struct run_result *r = *state;
	json_t *o, *hits;

	assert_int_equal(LIMIT_HIT_COUNT, ARRAY_LEN(contract_limit_names));
	set_signaled(r, 9);
	r->limits_hit = (1u << LIMIT_HIT_COUNT) - 1;
	o = to_json_checked(r);
	hits = json_object_get(o, "limits_hit");
	assert_int_equal(json_array_size(hits), LIMIT_HIT_COUNT);
	for (unsigned i = 0; i < LIMIT_HIT_COUNT; i++)
		assert_string_equal(json_string_value(json_array_get(hits, i)),
				    contract_limit_names[i]);
	json_decref(o);
}

static void test_result_json_limits_hit_each_bit_alone(void **state)
{
	struct run_result *r = *state;

	set_exited(r, 1);
	for (unsigned i = 0; i < LIMIT_HIT_COUNT; i++) {
		json_t *o, *hits;
		r->limits_hit = 1u << i;
		o = to_json_checked(r);
		hits = json_object_get(o, "limits_hit");
		assert_int_equal(json_array_size(hits), 1);
		assert_string_equal(json_string_value(json_array_get(hits, 0)),
				    contract_limit_names[i]);
		json_decref(o);
	}
}

static void test_result_json_limits_hit_follows_bit_order_not_setting_order(void **state)
{
	struct run_result *r = *state;
	json_t *o, *hits;

	set_signaled(r, 31);
	r->limits_hit = LIMIT_HIT_SECCOMP;
	r->limits_hit |= LIMIT_HIT_OUTPUT;
	r->limits_hit |= LIMIT_HIT_CPU;
	o = to_json_checked(r);
	hits = json_object_get(o, "limits_hit");
	assert_int_equal(json_array_size(hits), 3);
	assert_string_equal(json_string_value(json_array_get(hits, 0)), "cpu");
	assert_string_equal(json_string_value(json_array_get(hits, 1)), "output");
	assert_string_equal(json_string_value(json_array_get(hits, 2)), "seccomp");
	json_decref(o);
}

static void test_result_json_stdout_invalid_bytes_become_valid(void **state)
{
	struct run_result *r = *state;
	json_t *o;
	static const char sout[] =
	    "a\xFF\x62\xC0\xAF\x63\xED\xA0\x80";       /* a FF b C0 AF c ED A0 80 */
	static const char serr[] = "\x80\xE2\x82\x78"; /* 80 E2 82 x */

	set_exited(r, 0);
	capbuf_append(&r->out, sout, sizeof(sout) - 1);
	capbuf_append(&r->err, serr, sizeof(serr) - 1);
	o = to_json_checked(r);
	assert_string_equal(json_string_value(json_object_get(o, "stdout")),
			    "a" R "b" R R "c" R R R);
	assert_string_equal(json_string_value(json_object_get(o, "stderr")), R R "x");
	/* The byte counts are of what the program wrote, not of the repair. */
	assert_int_equal(json_integer_value(json_object_get(o, "stdout_bytes")), sizeof(sout) - 1);
	assert_int_equal(json_integer_value(json_object_get(o, "stderr_bytes")), sizeof(serr) - 1);
	json_decref(o);
}

static void test_result_json_stdout_keeps_nul_bytes(void **state)
{
	struct run_result *r = *state;
	json_t *o, *s;

	set_exited(r, 0);
	capbuf_append(&r->out, "a\0b", 3);
	o = to_json_checked(r);
	s = json_object_get(o, "stdout");
	assert_int_equal(json_string_length(s), 3);
	assert_memory_equal(json_string_value(s), "a\0b", 3);
	json_decref(o);
}

static void test_result_json_truncated_stdout_drops_cut_character(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	reinit_result(r, 4);
	set_exited(r, 0);
	r->limits_hit = LIMIT_HIT_OUTPUT;
	capbuf_append(&r->out, "abc\xE2\x82\xAC", 6); /* "abc€", cut inside the euro */
	o = to_json_checked(r);
	assert_string_equal(json_string_value(json_object_get(o, "stdout")), "abc");
	assert_true(json_is_true(json_object_get(o, "stdout_truncated")));
	assert_true(json_is_false(json_object_get(o, "stderr_truncated")));
	assert_int_equal(json_integer_value(json_object_get(o, "stdout_bytes")), 6);
	json_decref(o);
}

static void test_result_json_untruncated_partial_character_is_replaced(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	/* The program itself ended in half a character: that is shown. */
	set_exited(r, 0);
	capbuf_append(&r->out, "abc\xE2\x82", 5);
	o = to_json_checked(r);
	assert_string_equal(json_string_value(json_object_get(o, "stdout")), "abc" R);
	json_decref(o);
}

static void test_result_json_zero_output_cap(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	reinit_result(r, 0);
	set_exited(r, 0);
	capbuf_append(&r->out, "lost", 4);
	o = to_json_checked(r);
	assert_string_equal(json_string_value(json_object_get(o, "stdout")), "");
	assert_true(json_is_true(json_object_get(o, "stdout_truncated")));
	assert_int_equal(json_integer_value(json_object_get(o, "stdout_bytes")), 4);
	json_decref(o);
}

static void test_result_json_large_usage_numbers(void **state)
{
	struct run_result *r = *state;
	json_t *o;

	set_exited(r, 0);
	r->cpu_ms = 86400000;
	r->wall_ms = UINT64_C(1) << 40;
	r->peak_memory_kib = UINT64_C(1) << 40;
	r->peak_pids = 65536;
	o = to_json_checked(r);
	assert_int_equal(json_integer_value(json_object_get(o, "cpu_ms")), 86400000);
	assert_int_equal(json_integer_value(json_object_get(o, "wall_ms")), INT64_C(1) << 40);
	assert_int_equal(json_integer_value(json_object_get(o, "peak_memory_kib")), INT64_C(1)
											<< 40);
	assert_int_equal(json_integer_value(json_object_get(o, "peak_pids")), 65536);
	json_decref(o);
}

static void test_result_json_status_string_for_each_status(void **state)
{
	struct run_result *r = *state;

	for (unsigned s = 0; s < ARRAY_LEN(contract_status_names); s++) {
		json_t *o;
		r->status = (enum run_status)s;
		o = to_json_checked(r);
		assert_string_equal(json_string_value(json_object_get(o, "status")),
				    contract_status_names[s]);
		json_decref(o);
	}
}

static void test_run_status_numbers_never_change(void **state)
{
	assert_int_equal(RUN_OK, 0);
	assert_int_equal(RUN_NONZERO_EXIT, 1);
	assert_int_equal(RUN_SIGNALED, 2);
	assert_int_equal(RUN_TIMEOUT, 3);
	assert_int_equal(RUN_MEMORY_LIMIT, 4);
	assert_int_equal(RUN_ERROR, 5);
}

static void test_run_status_name_for_each_value(void **state)
{
	assert_string_equal(run_status_name(RUN_OK), "ok");
	assert_string_equal(run_status_name(RUN_NONZERO_EXIT), "nonzero_exit");
	assert_string_equal(run_status_name(RUN_SIGNALED), "signaled");
	assert_string_equal(run_status_name(RUN_TIMEOUT), "timeout");
	assert_string_equal(run_status_name(RUN_MEMORY_LIMIT), "memory_limit");
	assert_string_equal(run_status_name(RUN_ERROR), "error");
	for (unsigned s = 0; s < ARRAY_LEN(contract_status_names); s++)
		assert_string_equal(run_status_name((enum run_status)s), contract_status_names[s]);
}

static void test_run_status_name_out_of_range_is_not_null(void **state)
{
	assert_non_null(run_status_name((enum run_status)6));
	assert_non_null(run_status_name((enum run_status)1000));
	assert_non_null(run_status_name((enum run_status) - 1));
}

static void test_limit_hit_bits_match_name_order(void **state)
{
	assert_int_equal(LIMIT_HIT_CPU, 1u << 0);
	assert_int_equal(LIMIT_HIT_WALL, 1u << 1);
	assert_int_equal(LIMIT_HIT_MEMORY, 1u << 2);
	assert_int_equal(LIMIT_HIT_PIDS, 1u << 3);
	assert_int_equal(LIMIT_HIT_FSIZE, 1u << 4);
	assert_int_equal(LIMIT_HIT_DISK, 1u << 5);
	assert_int_equal(LIMIT_HIT_OUTPUT, 1u << 6);
	assert_int_equal(LIMIT_HIT_NOFILE, 1u << 7);
	assert_int_equal(LIMIT_HIT_SECCOMP, 1u << 8);
}

static void test_limit_hit_name_for_each_value(void **state)
{
	for (unsigned i = 0; i < LIMIT_HIT_COUNT; i++)
		assert_string_equal(limit_hit_name(i), contract_limit_names[i]);
	assert_non_null(limit_hit_name(LIMIT_HIT_COUNT));
	assert_non_null(limit_hit_name(1000));
	for (unsigned i = 0; i < LIMIT_HIT_COUNT; i++)
		assert_string_not_equal(limit_hit_name(LIMIT_HIT_COUNT), contract_limit_names[i]);
}

static int exit_status_of(enum run_status s, unsigned hits)
{
	struct run_result r;
	int rc;

	init_result(&r, 16);
	r.status = s;
	r.limits_hit = hits;
	rc = run_result_exit_status(&r);
	run_result_free(&r);
	return rc;
}

static void test_exit_status_ok_is_zero(void **state)
{
	assert_int_equal(exit_status_of(RUN_OK, 0), 0);
}

static void test_exit_status_ok_with_only_output_truncation_is_zero(void **state)
{
	assert_int_equal(exit_status_of(RUN_OK, LIMIT_HIT_OUTPUT), 0);
}

static void test_exit_status_ok_with_another_limit_is_one(void **state)
{
	for (unsigned i = 0; i < LIMIT_HIT_COUNT; i++) {
		unsigned bit = 1u << i;
		if (bit == LIMIT_HIT_OUTPUT)
			continue;
		assert_int_equal(exit_status_of(RUN_OK, bit), 1);
		assert_int_equal(exit_status_of(RUN_OK, bit | LIMIT_HIT_OUTPUT), 1);
	}
}

static void test_exit_status_program_failure_is_one(void **state)
{
	assert_int_equal(exit_status_of(RUN_NONZERO_EXIT, 0), 1);
	assert_int_equal(exit_status_of(RUN_NONZERO_EXIT, LIMIT_HIT_OUTPUT), 1);
	assert_int_equal(exit_status_of(RUN_SIGNALED, 0), 1);
	assert_int_equal(exit_status_of(RUN_SIGNALED, LIMIT_HIT_SECCOMP), 1);
}

static void test_exit_status_limit_is_one(void **state)
{
	assert_int_equal(exit_status_of(RUN_TIMEOUT, LIMIT_HIT_CPU), 1);
	assert_int_equal(exit_status_of(RUN_TIMEOUT, LIMIT_HIT_WALL), 1);
	assert_int_equal(exit_status_of(RUN_MEMORY_LIMIT, LIMIT_HIT_MEMORY), 1);
	assert_int_equal(exit_status_of(RUN_TIMEOUT, 0), 1);
	assert_int_equal(exit_status_of(RUN_MEMORY_LIMIT, 0), 1);
}

static void test_exit_status_error_is_three(void **state)
{
	assert_int_equal(exit_status_of(RUN_ERROR, 0), 3);
	assert_int_equal(exit_status_of(RUN_ERROR, LIMIT_HIT_CPU | LIMIT_HIT_OUTPUT), 3);
}

static void test_result_text_summary_shows_verdict_and_repaired_output(void **state)
{
	struct run_result *r = *state;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	set_signaled(r, 11);
	r->limits_hit = LIMIT_HIT_PIDS | LIMIT_HIT_CPU;
	snprintf(r->message, sizeof(r->message), "segfault");
	capbuf_append(&r->out, "x\xFFy", 3);
	f = open_memstream(&text, &len);
	assert_non_null(f);
	run_result_print_text(f, r);
	assert_int_equal(fclose(f), 0);
	assert_non_null(strstr(text, "status: signaled"));
	assert_non_null(strstr(text, "signal 11"));
	assert_null(strstr(text, "exit code"));
	assert_non_null(strstr(text, "limits hit: cpu pids"));
	assert_non_null(strstr(text, "message: segfault"));
	assert_non_null(strstr(text, "x" R "y"));
	assert_null(strstr(text, "stderr")); /* nothing written there */
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_result_init_starts_neutral),
	    cmocka_unit_test_setup_teardown(test_result_json_has_every_contract_field, setup_result,
					    teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_exit_code_null_when_signaled,
					    setup_result, teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_signal_null_when_exited, setup_result,
					    teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_exit_code_255_is_kept, setup_result,
					    teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_timeout_reports_sigkill, setup_result,
					    teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_seccomp_kill_names_sigsys,
					    setup_result, teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_message_null_when_empty_else_string,
					    setup_result, teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_message_of_maximum_length,
					    setup_result, teardown_result),
	    cmocka_unit_test_setup_teardown(
		test_result_json_message_with_invalid_utf8_is_still_valid, setup_result,
		teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_limits_hit_order_and_names,
					    setup_result, teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_limits_hit_each_bit_alone,
					    setup_result, teardown_result),
	    cmocka_unit_test_setup_teardown(
		test_result_json_limits_hit_follows_bit_order_not_setting_order, setup_result,
		teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_stdout_invalid_bytes_become_valid,
					    setup_result, teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_stdout_keeps_nul_bytes, setup_result,
					    teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_truncated_stdout_drops_cut_character,
					    setup_result, teardown_result),
	    cmocka_unit_test_setup_teardown(
		test_result_json_untruncated_partial_character_is_replaced, setup_result,
		teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_zero_output_cap, setup_result,
					    teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_large_usage_numbers, setup_result,
					    teardown_result),
	    cmocka_unit_test_setup_teardown(test_result_json_status_string_for_each_status,
					    setup_result, teardown_result),
	    cmocka_unit_test(test_run_status_numbers_never_change),
	    cmocka_unit_test(test_run_status_name_for_each_value),
	    cmocka_unit_test(test_run_status_name_out_of_range_is_not_null),
	    cmocka_unit_test(test_limit_hit_bits_match_name_order),
	    cmocka_unit_test(test_limit_hit_name_for_each_value),
	    cmocka_unit_test(test_exit_status_ok_is_zero),
	    cmocka_unit_test(test_exit_status_ok_with_only_output_truncation_is_zero),
	    cmocka_unit_test(test_exit_status_ok_with_another_limit_is_one),
	    cmocka_unit_test(test_exit_status_program_failure_is_one),
	    cmocka_unit_test(test_exit_status_limit_is_one),
	    cmocka_unit_test(test_exit_status_error_is_three),
	    cmocka_unit_test_setup_teardown(
		test_result_text_summary_shows_verdict_and_repaired_output, setup_result,
		teardown_result),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
