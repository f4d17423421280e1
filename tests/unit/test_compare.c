/* Unit tests: I/O-mode output comparison on the host. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "grade/compare.h"

static bool cmp(enum compare_mode m, const char *out, const char *exp)
{
	return compare_output(m, 1e-6, out, strlen(out), exp, strlen(exp));
}

static void test_exact_is_byte_for_byte(void **state)
{
	(void)state;
	assert_true(cmp(CMP_EXACT, "1 2\n", "1 2\n"));
	assert_false(cmp(CMP_EXACT, "1 2", "1 2\n"));
	assert_false(cmp(CMP_EXACT, "1  2\n", "1 2\n"));
	assert_true(compare_output(CMP_EXACT, 0, "a\0b", 3, "a\0b", 3));
	assert_false(compare_output(CMP_EXACT, 0, "a\0b", 3, "a\0c", 3));
}

static void test_trailing_whitespace_ignores_line_ends_only(void **state)
{
	(void)state;
	assert_true(cmp(CMP_TRAILING_WS, "1 2  \r\n3\t\n\n\n", "1 2\n3"));
	assert_true(cmp(CMP_TRAILING_WS, "", "\n\n"));
	assert_false(cmp(CMP_TRAILING_WS, " 1 2\n", "1 2\n"));
	assert_false(cmp(CMP_TRAILING_WS, "1 2\n\n3\n", "1 2\n3\n"));
	assert_false(cmp(CMP_TRAILING_WS, "1\n2\n", "1\n2\n3\n"));
}

static void test_tokens_ignore_all_spacing(void **state)
{
	(void)state;
	assert_true(cmp(CMP_TOKENS, "1\n2   3", " 1 2\n3\n"));
	assert_false(cmp(CMP_TOKENS, "1 2", "1 2 3"));
	assert_false(cmp(CMP_TOKENS, "1.0", "1"));
}

static void test_float_tolerance_absolute_and_relative(void **state)
{
	(void)state;
	assert_true(cmp(CMP_FLOAT, "3.1415930", "3.1415926"));
	assert_false(cmp(CMP_FLOAT, "3.1416", "3.1415926"));
	assert_true(cmp(CMP_FLOAT, "1000000.5", "1000000.0")); /* relative 5e-7 */
	assert_true(cmp(CMP_FLOAT, "sum 2.0000001", "sum 2"));
	assert_false(cmp(CMP_FLOAT, "sum 2", "total 2"));
}

static void test_float_rejects_nan_inf_and_hex(void **state)
{
	(void)state;
	assert_false(cmp(CMP_FLOAT, "nan", "1"));
	assert_false(cmp(CMP_FLOAT, "inf", "1e400"));
	assert_false(cmp(CMP_FLOAT, "0x1p0", "1"));
	assert_true(cmp(CMP_FLOAT, "nan", "nan")); /* equal tokens are equal */
}

static void test_huge_token_is_compared_as_text(void **state)
{
	(void)state;
	char a[600], b[600];
	memset(a, '1', sizeof(a) - 1);
	a[sizeof(a) - 1] = '\0';
	memcpy(b, a, sizeof(a));
	assert_true(cmp(CMP_FLOAT, a, b));
	b[300] = '2';
	assert_false(cmp(CMP_FLOAT, a, b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_is_byte_for_byte),
		cmocka_unit_test(test_trailing_whitespace_ignores_line_ends_only),
		cmocka_unit_test(test_tokens_ignore_all_spacing),
		cmocka_unit_test(test_float_tolerance_absolute_and_relative),
		cmocka_unit_test(test_float_rejects_nan_inf_and_hex),
		cmocka_unit_test(test_huge_token_is_compared_as_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
