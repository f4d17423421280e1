/* Unit tests of limits.c: defaults, the limit table, and parsing of user-written limits. */
#include <linux/capability.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "harness.h"
#include "runlimits.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* The options in the order docs/cli-contract.md lists them. */
static const char *const contract_names[] = {
    "cpu", "wall", "memory", "pids", "fsize", "disk", "output", "nofile",
};

/* Where the test expects each named limit to land; written independently of
 * limits.c so a wrong offset there shows up here. */
static uint64_t *field_of(struct limits *l, const char *name)
{
	if (strcmp(name, "cpu") == 0)
		return &l->cpu_ms;
	if (strcmp(name, "wall") == 0)
		return &l->wall_ms;
	if (strcmp(name, "memory") == 0)
		return &l->memory_bytes;
	if (strcmp(name, "pids") == 0)
		return &l->pids;
	if (strcmp(name, "fsize") == 0)
		return &l->fsize_bytes;
	if (strcmp(name, "disk") == 0)
		return &l->disk_bytes;
	if (strcmp(name, "output") == 0)
		return &l->output_bytes;
	if (strcmp(name, "nofile") == 0)
		return &l->nofile;
	fail_msg("no field for limit '%s'", name);
	return NULL;
}

/* Bytes (or ms, or a count) that `written` in the row's unit stands for. */
static uint64_t scale(const struct limit_desc *d, uint64_t written)
{
	switch (d->unit) {
	case LIMIT_UNIT_MIB:
		return written << 20;
	case LIMIT_UNIT_KIB:
		return written << 10;
	case LIMIT_UNIT_SECONDS:
	case LIMIT_UNIT_COUNT:
		return written;
	}
	fail_msg("unknown unit %d", (int)d->unit);
	return 0;
}

/* Write a table bound as the user would type it: ms as "S.mmm" for seconds. */
static void bound_text(const struct limit_desc *d, uint64_t v, char *buf, size_t cap)
{
	if (d->unit == LIMIT_UNIT_SECONDS)
		snprintf(buf, cap, "%llu.%03llu", (unsigned long long)(v / 1000),
			 (unsigned long long)(v % 1000));
	else
		snprintf(buf, cap, "%llu", (unsigned long long)v);
}

static const struct limit_desc *find_desc(const char *name)
{
	unsigned n;
	const struct limit_desc *t = limits_table(&n);

	for (unsigned i = 0; i < n; i++)
		if (strcmp(t[i].name, name) == 0)
			return &t[i];
	fail_msg("limit '%s' not in the table", name);
	return NULL;
}

/* Set one limit on fresh defaults; assert success and return the stored value. */
static uint64_t set_ok(const char *name, const char *text)
{
	struct limits l;
	struct err e = {0};

	limits_default(&l);
	if (limits_set(&l, name, text, &e) != 0)
		fail_msg("--%s '%s' rejected: %s", name, text, e.msg);
	return *field_of(&l, name);
}

/* Set one limit; assert it fails, leaves the limits untouched, and that the
 * message names the option and the value. */
static void set_fails(const char *name, const char *text)
{
	struct limits l, before;
	struct err e = {0};
	char opt[64];

	limits_default(&l);
	before = l;
	if (limits_set(&l, name, text, &e) != -1)
		fail_msg("--%s '%s' accepted as %llu", name, text,
			 (unsigned long long)*field_of(&l, name));
	assert_memory_equal(&l, &before, sizeof(l));
	snprintf(opt, sizeof(opt), "--%s", name);
	assert_non_null(strstr(e.msg, opt));
	/* The value is quoted as typed, control characters shown as '?' and
	 * long text cut, so the message stays one line. */
	char shown[64];
	size_t i = 0;
	for (; text[i] && i + 1 < sizeof(shown); i++)
		shown[i] = (unsigned char)text[i] < 0x20 || text[i] == 0x7f ? '?' : text[i];
	shown[i] = '\0';
	if (shown[0] != '\0')
		assert_non_null(strstr(e.msg, shown));
	assert_null(strchr(e.msg, '\n'));
	/* A typo is the user's fault, not a system error: a usage error. */
	assert_int_equal(e.errnum, 0);
	assert_int_equal(e.kind, ERR_USAGE);
}

static void test_limits_default_values(void **state)
{
	struct limits l;

	limits_default(&l);
	assert_int_equal(l.cpu_ms, 10 * 1000);
	assert_int_equal(l.wall_ms, 20 * 1000);
	assert_int_equal(l.memory_bytes, 256ull * 1024 * 1024);
	assert_int_equal(l.pids, 64);
	assert_int_equal(l.fsize_bytes, 64ull * 1024 * 1024);
	assert_int_equal(l.disk_bytes, 64ull * 1024 * 1024);
	assert_int_equal(l.output_bytes, 64ull * 1024);
	assert_int_equal(l.nofile, 256);
}

static void test_limits_default_fills_every_field(void **state)
{
	struct limits l;

	memset(&l, 0xA5, sizeof(l));
	limits_default(&l);
	for (size_t i = 0; i < ARRAY_LEN(contract_names); i++)
		assert_true(*field_of(&l, contract_names[i]) != 0xA5A5A5A5A5A5A5A5ull);
}

static void test_limits_table_lists_contract_options_in_order(void **state)
{
	unsigned n = 0;
	const struct limit_desc *t = limits_table(&n);

	assert_non_null(t);
	assert_int_equal(n, ARRAY_LEN(contract_names));
	for (unsigned i = 0; i < n; i++) {
		assert_string_equal(t[i].name, contract_names[i]);
		assert_true(t[i].min <= t[i].max);
		assert_non_null(t[i].help);
	}
}

static void test_limits_table_units_match_contract(void **state)
{
	assert_int_equal(find_desc("cpu")->unit, LIMIT_UNIT_SECONDS);
	assert_int_equal(find_desc("wall")->unit, LIMIT_UNIT_SECONDS);
	assert_int_equal(find_desc("memory")->unit, LIMIT_UNIT_MIB);
	assert_int_equal(find_desc("pids")->unit, LIMIT_UNIT_COUNT);
	assert_int_equal(find_desc("fsize")->unit, LIMIT_UNIT_MIB);
	assert_int_equal(find_desc("disk")->unit, LIMIT_UNIT_MIB);
	assert_int_equal(find_desc("output")->unit, LIMIT_UNIT_KIB);
	assert_int_equal(find_desc("nofile")->unit, LIMIT_UNIT_COUNT);
}

static void test_limits_table_bounds_match_contract(void **state)
{
	static const struct {
		const char *name;
		uint64_t min, max; /* ms for seconds, else the written unit */
	} want[] = {
	    {"cpu", 1, 86400000},   {"wall", 1, 86400000},  {"memory", 4, 1048576},
	    {"pids", 1, 65536},	    {"fsize", 1, 1048576},  {"disk", 1, 1048576},
	    {"output", 0, 1048576}, {"nofile", 4, 1048576},
	};

	for (size_t i = 0; i < ARRAY_LEN(want); i++) {
		const struct limit_desc *d = find_desc(want[i].name);
		assert_int_equal(d->min, want[i].min);
		assert_int_equal(d->max, want[i].max);
	}
}

static void test_limits_defaults_are_within_bounds(void **state)
{
	unsigned n;
	const struct limit_desc *t = limits_table(&n);
	struct limits l;

	limits_default(&l);
	for (unsigned i = 0; i < n; i++) {
		uint64_t v = *field_of(&l, t[i].name);
		assert_true(v >= scale(&t[i], t[i].min));
		assert_true(v <= scale(&t[i], t[i].max));
	}
}

static void test_limits_parses_whole_seconds_to_ms(void **state)
{
	assert_int_equal(set_ok("cpu", "2"), 2000);
	assert_int_equal(set_ok("wall", "2"), 2000);
	assert_int_equal(set_ok("cpu", "1"), 1000);
	assert_int_equal(set_ok("wall", "86400"), 86400000);
}

static void test_limits_parses_fractional_seconds_to_ms(void **state)
{
	static const struct {
		const char *text;
		uint64_t ms;
	} cases[] = {
	    {"0.5", 500},   {"1.5", 1500},   {"0.25", 250},	      {"0.001", 1},
	    {"3.14", 3140}, {"1.0", 1000},   {"1.00", 1000},	      {"1.000", 1000},
	    {"2.05", 2050}, {"2.005", 2005}, {"0.999", 999},	      {"86399.999", 86399999},
	    {"0.010", 10},  {"10.1", 10100}, {"86400.000", 86400000},
	};

	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(set_ok("cpu", cases[i].text), cases[i].ms);
		assert_int_equal(set_ok("wall", cases[i].text), cases[i].ms);
	}
}

static void test_limits_parses_mib_to_bytes(void **state)
{
	assert_int_equal(set_ok("memory", "4"), 4ull << 20);
	assert_int_equal(set_ok("memory", "256"), 256ull << 20);
	assert_int_equal(set_ok("memory", "1048576"), 1ull << 40);
	assert_int_equal(set_ok("fsize", "1"), 1ull << 20);
	assert_int_equal(set_ok("fsize", "100"), 100ull << 20);
	assert_int_equal(set_ok("disk", "1"), 1ull << 20);
	assert_int_equal(set_ok("disk", "512"), 512ull << 20);
}

static void test_limits_parses_kib_to_bytes(void **state)
{
	assert_int_equal(set_ok("output", "0"), 0);
	assert_int_equal(set_ok("output", "1"), 1024);
	assert_int_equal(set_ok("output", "64"), 65536);
	assert_int_equal(set_ok("output", "1048576"), 1ull << 30);
}

static void test_limits_parses_counts_verbatim(void **state)
{
	assert_int_equal(set_ok("pids", "1"), 1);
	assert_int_equal(set_ok("pids", "100"), 100);
	assert_int_equal(set_ok("pids", "65536"), 65536);
	assert_int_equal(set_ok("nofile", "4"), 4);
	assert_int_equal(set_ok("nofile", "1024"), 1024);
	assert_int_equal(set_ok("nofile", "1048576"), 1048576);
}

static void test_limits_accepts_both_bounds_of_every_limit(void **state)
{
	unsigned n;
	const struct limit_desc *t = limits_table(&n);
	char text[64];

	for (unsigned i = 0; i < n; i++) {
		bound_text(&t[i], t[i].min, text, sizeof(text));
		assert_int_equal(set_ok(t[i].name, text), scale(&t[i], t[i].min));
		bound_text(&t[i], t[i].max, text, sizeof(text));
		assert_int_equal(set_ok(t[i].name, text), scale(&t[i], t[i].max));
	}
}

static void test_limits_rejects_just_outside_bounds_of_every_limit(void **state)
{
	unsigned n;
	const struct limit_desc *t = limits_table(&n);
	char text[64];

	for (unsigned i = 0; i < n; i++) {
		if (t[i].min > 0) {
			bound_text(&t[i], t[i].min - 1, text, sizeof(text));
			set_fails(t[i].name, text);
		}
		bound_text(&t[i], t[i].max + 1, text, sizeof(text));
		set_fails(t[i].name, text);
	}
}

static void test_limits_sets_only_the_named_field(void **state)
{
	unsigned n;
	const struct limit_desc *t = limits_table(&n);
	char text[64];

	for (unsigned i = 0; i < n; i++) {
		struct limits l, before;
		struct err e = {0};

		limits_default(&l);
		before = l;
		bound_text(&t[i], t[i].max, text, sizeof(text));
		assert_int_equal(limits_set(&l, t[i].name, text, &e), 0);
		*field_of(&before, t[i].name) = scale(&t[i], t[i].max);
		assert_memory_equal(&l, &before, sizeof(l));
	}
}

/* Texts no limit of any unit accepts. */
static const char *const bad_everywhere[] = {
    "-1",
    "-0",
    "+1",
    " 1",
    "1 ",
    "\t1",
    "1\n",
    "1e3",
    "1E3",
    "",
    " ",
    ".",
    ".5",
    "1.",
    "1.2345",
    "1.0000",
    "1..5",
    "1.2.3",
    "1,5",
    "0x10",
    "0X1f",
    "0b1",
    "abc",
    "1k",
    "64M",
    "inf",
    "nan",
    "99999999999999999999",
    "18446744073709551616",
    "18446744073709551615",
    "%s%s%s%n",
    "\xd9\xa1", /* ARABIC-INDIC DIGIT ONE */
};

static void test_limits_rejects_malformed_text_for_every_limit(void **state)
{
	unsigned n;
	const struct limit_desc *t = limits_table(&n);

	for (unsigned i = 0; i < n; i++)
		for (size_t j = 0; j < ARRAY_LEN(bad_everywhere); j++)
			set_fails(t[i].name, bad_everywhere[j]);
}

static void test_limits_rejects_negative_seconds(void **state)
{
	set_fails("cpu", "-1");
	set_fails("cpu", "-0.5");
	set_fails("wall", "-2");
}

static void test_limits_rejects_plus_sign(void **state)
{
	set_fails("cpu", "+1");
	set_fails("memory", "+256");
	set_fails("pids", "+1");
}

static void test_limits_rejects_surrounding_spaces(void **state)
{
	set_fails("cpu", " 1");
	set_fails("cpu", "1 ");
	set_fails("cpu", "1 .5");
	set_fails("cpu", "1. 5");
	set_fails("memory", " 256");
	set_fails("output", "64 ");
}

static void test_limits_rejects_exponent(void **state)
{
	set_fails("cpu", "1e3");
	set_fails("cpu", "1.5e1");
	set_fails("memory", "1e3");
}

static void test_limits_rejects_empty(void **state)
{
	set_fails("cpu", "");
	set_fails("output", "");
	set_fails("nofile", "");
}

static void test_limits_rejects_missing_digits_around_dot(void **state)
{
	set_fails("cpu", ".5");
	set_fails("cpu", "1.");
	set_fails("wall", ".");
}

static void test_limits_rejects_more_than_three_decimals(void **state)
{
	set_fails("cpu", "1.2345");
	set_fails("cpu", "0.0001");
	set_fails("wall", "1.0000");
}

static void test_limits_rejects_fraction_for_whole_units(void **state)
{
	set_fails("memory", "1.5");
	set_fails("memory", "256.0");
	set_fails("output", "0.5");
	set_fails("pids", "2.0");
	set_fails("nofile", "10.1");
}

static void test_limits_rejects_hex(void **state)
{
	set_fails("cpu", "0x10");
	set_fails("memory", "0x100");
	set_fails("pids", "0x40");
}

static void test_limits_rejects_overflow(void **state)
{
	set_fails("cpu", "99999999999999999999");
	set_fails("cpu", "18446744073709551616");
	set_fails("cpu", "18446744073709552"); /* *1000 overflows */
	set_fails("cpu", "18446744073709551.999");
	set_fails("memory", "99999999999999999999");
	/* Would wrap to a small number of bytes after << 20. */
	set_fails("memory", "17592186044416");
	set_fails("output", "18014398509481984");
	set_fails("pids", "18446744073709551616");
}

static void test_limits_rejects_zero_where_min_is_positive(void **state)
{
	unsigned n;
	const struct limit_desc *t = limits_table(&n);
	unsigned checked = 0;

	for (unsigned i = 0; i < n; i++) {
		if (t[i].min == 0)
			continue;
		set_fails(t[i].name, "0");
		if (t[i].unit == LIMIT_UNIT_SECONDS) {
			set_fails(t[i].name, "0.0");
			set_fails(t[i].name, "0.000");
		}
		checked++;
	}
	assert_true(checked > 0);
}

static void test_limits_accepts_zero_output(void **state)
{
	assert_int_equal(set_ok("output", "0"), 0);
}

static void test_limits_rejects_above_max(void **state)
{
	set_fails("cpu", "86400.001");
	set_fails("cpu", "86401");
	set_fails("wall", "100000");
	set_fails("memory", "1048577");
	set_fails("pids", "65537");
	set_fails("output", "1048577");
	set_fails("nofile", "1048577");
}

static void test_limits_error_names_option_and_value(void **state)
{
	struct limits l;
	struct err e = {0};

	limits_default(&l);
	assert_int_equal(limits_set(&l, "cpu", "abc", &e), -1);
	assert_non_null(strstr(e.msg, "--cpu"));
	assert_non_null(strstr(e.msg, "'abc'"));

	assert_int_equal(limits_set(&l, "cpu", "100000", &e), -1);
	assert_non_null(strstr(e.msg, "--cpu"));
	assert_non_null(strstr(e.msg, "100000"));

	assert_int_equal(limits_set(&l, "memory", "2", &e), -1);
	assert_non_null(strstr(e.msg, "--memory"));
	assert_non_null(strstr(e.msg, "2"));
}

static void test_limits_out_of_range_error_gives_the_range(void **state)
{
	struct limits l;
	struct err e = {0};

	limits_default(&l);
	assert_int_equal(limits_set(&l, "memory", "2", &e), -1);
	assert_non_null(strstr(e.msg, "4"));
	assert_non_null(strstr(e.msg, "1048576"));

	assert_int_equal(limits_set(&l, "cpu", "0", &e), -1);
	assert_non_null(strstr(e.msg, "0.001"));
	assert_non_null(strstr(e.msg, "86400"));
}

static void test_limits_error_is_not_a_format_string(void **state)
{
	struct limits l;
	struct err e = {0};

	limits_default(&l);
	assert_int_equal(limits_set(&l, "pids", "%n%s%x", &e), -1);
	assert_non_null(strstr(e.msg, "%n%s%x"));
}

static void test_limits_rejects_very_long_text(void **state)
{
	char text[5000];

	memset(text, '9', sizeof(text) - 1);
	text[sizeof(text) - 1] = '\0';
	set_fails("cpu", text);
	set_fails("memory", text);
	memset(text, '0', sizeof(text) - 1);
	text[sizeof(text) - 2] = '1'; /* "000...01": long but small */
	assert_int_equal(set_ok("pids", text), 1);
}

static void test_limits_rejects_unknown_name(void **state)
{
	struct limits l, before;
	struct err e = {0};

	limits_default(&l);
	before = l;
	assert_int_equal(limits_set(&l, "cpus", "1", &e), -1);
	assert_non_null(strstr(e.msg, "cpus"));
	assert_int_equal(limits_set(&l, "", "1", &e), -1);
	assert_int_equal(limits_set(&l, "--cpu", "1", &e), -1);
	assert_int_equal(limits_set(&l, "CPU", "1", &e), -1);
	assert_memory_equal(&l, &before, sizeof(l));
}

static void test_parse_seconds_ms_converts(void **state)
{
	uint64_t ms = 0;

	assert_int_equal(parse_seconds_ms("0", &ms), 0);
	assert_int_equal(ms, 0);
	assert_int_equal(parse_seconds_ms("1.5", &ms), 0);
	assert_int_equal(ms, 1500);
	assert_int_equal(parse_seconds_ms("1000000000", &ms), 0);
	assert_int_equal(ms, 1000000000000ull);
	assert_int_equal(parse_seconds_ms("18446744073709550.999", &ms), 0);
	assert_int_equal(ms, 18446744073709550999ull);
}

static void test_parse_seconds_ms_leaves_output_alone_on_failure(void **state)
{
	static const char *const bad[] = {
	    "", ".5", "1.", "1.2345", "-1", "+1", "1e3", " 1", "1 ", "0x1", "99999999999999999999"};

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		uint64_t ms = 12345;
		assert_int_equal(parse_seconds_ms(bad[i], &ms), -1);
		assert_int_equal(ms, 12345);
	}
}

/* The defaults fit every host; a limit above the process's own hard limit
 * fits only a root that may raise it (CAP_SYS_RESOURCE), never above
 * fs.nr_open for nofile. */
static void test_limits_check_host_refuses_what_the_host_cannot_grant(void **state)
{
	(void)state;
	struct limits l;
	struct rlimit rl;
	struct err e;

	limits_default(&l);
	assert_int_equal(limits_check_host(&l, &e), 0);

	bool privileged = harness_has_cap(CAP_SYS_RESOURCE);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);

	l.nofile = rl.rlim_max == RLIM_INFINITY ? 1048576 : rl.rlim_max;
	if (l.nofile <= 1048576)
		assert_int_equal(limits_check_host(&l, &e), 0);
	l.nofile = privileged ? 1048576ull + 1 : (unsigned long long)rl.rlim_max + 1;
	if (!privileged || l.nofile > 1048576) {
		assert_int_equal(limits_check_host(&l, &e), -1);
		assert_non_null(strstr(e.msg, "nofile"));
		assert_non_null(strstr(e.msg, "more than this host can grant"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_limits_default_values),
	    cmocka_unit_test(test_limits_default_fills_every_field),
	    cmocka_unit_test(test_limits_table_lists_contract_options_in_order),
	    cmocka_unit_test(test_limits_table_units_match_contract),
	    cmocka_unit_test(test_limits_table_bounds_match_contract),
	    cmocka_unit_test(test_limits_defaults_are_within_bounds),
	    cmocka_unit_test(test_limits_parses_whole_seconds_to_ms),
	    cmocka_unit_test(test_limits_parses_fractional_seconds_to_ms),
	    cmocka_unit_test(test_limits_parses_mib_to_bytes),
	    cmocka_unit_test(test_limits_parses_kib_to_bytes),
	    cmocka_unit_test(test_limits_parses_counts_verbatim),
	    cmocka_unit_test(test_limits_accepts_both_bounds_of_every_limit),
	    cmocka_unit_test(test_limits_rejects_just_outside_bounds_of_every_limit),
	    cmocka_unit_test(test_limits_sets_only_the_named_field),
	    cmocka_unit_test(test_limits_rejects_malformed_text_for_every_limit),
	    cmocka_unit_test(test_limits_rejects_negative_seconds),
	    cmocka_unit_test(test_limits_rejects_plus_sign),
	    cmocka_unit_test(test_limits_rejects_surrounding_spaces),
	    cmocka_unit_test(test_limits_rejects_exponent),
	    cmocka_unit_test(test_limits_rejects_empty),
	    cmocka_unit_test(test_limits_rejects_missing_digits_around_dot),
	    cmocka_unit_test(test_limits_rejects_more_than_three_decimals),
	    cmocka_unit_test(test_limits_rejects_fraction_for_whole_units),
	    cmocka_unit_test(test_limits_rejects_hex),
	    cmocka_unit_test(test_limits_rejects_overflow),
	    cmocka_unit_test(test_limits_rejects_zero_where_min_is_positive),
	    cmocka_unit_test(test_limits_accepts_zero_output),
	    cmocka_unit_test(test_limits_rejects_above_max),
	    cmocka_unit_test(test_limits_error_names_option_and_value),
	    cmocka_unit_test(test_limits_out_of_range_error_gives_the_range),
	    cmocka_unit_test(test_limits_error_is_not_a_format_string),
	    cmocka_unit_test(test_limits_rejects_very_long_text),
	    cmocka_unit_test(test_limits_rejects_unknown_name),
	    cmocka_unit_test(test_parse_seconds_ms_converts),
	    cmocka_unit_test(test_parse_seconds_ms_leaves_output_alone_on_failure),
	    cmocka_unit_test(test_limits_check_host_refuses_what_the_host_cannot_grant),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
