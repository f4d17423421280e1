/* Unit tests of dynbuf.c: the one growable buffer with a hard cap. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "dynbuf.h"

static void test_dynbuf_adds_and_takes(void **state)
{
	(void)state;
	struct dynbuf b;
	size_t len = 99;

	dynbuf_init(&b, 64);
	assert_int_equal(dynbuf_adds(&b, "a,"), 0);
	assert_int_equal(dynbuf_addf(&b, "%d-%s", 42, "x"), 0);
	assert_int_equal(dynbuf_add(&b, "\0z", 2), 0); /* bytes, NUL included */
	char *s = dynbuf_take(&b, &len);
	assert_int_equal(len, 8);
	assert_memory_equal(s, "a,42-x\0z", 9); /* and NUL-terminated */
	free(s);
	/* Taken: empty again, usable again. */
	assert_null(b.s);
	assert_int_equal(dynbuf_adds(&b, "again"), 0);
	s = dynbuf_take(&b, NULL);
	assert_string_equal(s, "again");
	free(s);
}

static void test_dynbuf_empty_take_is_an_empty_string(void **state)
{
	(void)state;
	struct dynbuf b;
	size_t len = 99;

	dynbuf_init(&b, 10);
	char *s = dynbuf_take(&b, &len);
	assert_non_null(s);
	assert_string_equal(s, "");
	assert_int_equal(len, 0);
	free(s);
}

/* Exactly max fits; one more byte fails, and the failure sticks. */
static void test_dynbuf_cap_is_exact_and_failure_sticks(void **state)
{
	(void)state;
	struct dynbuf b;
	char big[100];

	memset(big, 'x', sizeof(big));
	dynbuf_init(&b, 100);
	assert_int_equal(dynbuf_add(&b, big, 60), 0);
	assert_int_equal(dynbuf_add(&b, big, 40), 0);
	assert_int_equal(b.len, 100);
	assert_true(b.cap <= 101); /* never more room than the cap needs */
	assert_int_equal(dynbuf_add(&b, "y", 1), -1);
	assert_int_equal(b.state, DYNBUF_TOO_LARGE);
	/* What it held is released at once, and later adds do nothing. */
	assert_null(b.s);
	assert_int_equal(b.len, 0);
	assert_int_equal(dynbuf_adds(&b, ""), -1);
	assert_int_equal(dynbuf_addf(&b, "%s", "z"), -1);
	assert_null(dynbuf_take(&b, NULL));
	dynbuf_free(&b);
}

/* A formatted piece past the cap fails whether or not it fitted the room
 * already allocated. */
static void test_dynbuf_addf_respects_the_cap(void **state)
{
	(void)state;
	struct dynbuf b;

	dynbuf_init(&b, 8);
	assert_int_equal(dynbuf_addf(&b, "%s", "12345678"), 0);
	assert_int_equal(dynbuf_addf(&b, "%d", 9), -1);
	assert_int_equal(b.state, DYNBUF_TOO_LARGE);
	dynbuf_free(&b);

	/* A piece larger than the room allocated so far, up to the cap exactly. */
	dynbuf_init(&b, 5000);
	assert_int_equal(dynbuf_adds(&b, "a"), 0);
	assert_int_equal(dynbuf_addf(&b, "%4999d", 1), 0);
	assert_int_equal(b.len, 5000);
	assert_int_equal(b.s[4999], '1');
	assert_int_equal(dynbuf_addf(&b, "%d", 2), -1);
	dynbuf_free(&b);
}

/* Growth across many pieces keeps every byte, in order. */
static void test_dynbuf_grows_past_its_first_allocation(void **state)
{
	(void)state;
	struct dynbuf b;

	dynbuf_init(&b, 1u << 20);
	for (int i = 0; i < 20000; i++)
		assert_int_equal(dynbuf_addf(&b, "%05d\n", i), 0);
	size_t len;
	char *s = dynbuf_take(&b, &len);
	assert_int_equal(len, 20000 * 6);
	assert_memory_equal(s + 6 * 12345, "12345\n", 6);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_dynbuf_adds_and_takes),
	    cmocka_unit_test(test_dynbuf_empty_take_is_an_empty_string),
	    cmocka_unit_test(test_dynbuf_cap_is_exact_and_failure_sticks),
	    cmocka_unit_test(test_dynbuf_addf_respects_the_cap),
	    cmocka_unit_test(test_dynbuf_grows_past_its_first_allocation),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
