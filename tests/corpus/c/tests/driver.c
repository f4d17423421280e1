/* The instructor's hidden test driver for the corpus's C assignment.
 *
 * Runs the ten declared tests in order in this process, prints one TAP line
 * per test on stdout as it goes, and writes a JUnit XML report to argv[1]
 * only after the last test: a crash or a hang leaves no report at all.
 * Exit status: 0 every test passed, 1 some failed, 2 usage or report error.
 *
 * Comparisons use this file's own helpers, not the C library's, so a
 * solution.c that redefines strcmp() or memcmp() cannot make a check pass.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>

#include "solution.h"

/* A test returns NULL when it passes, or what went wrong. */
typedef const char *(*test_fn)(void);

static int same_text(const char *a, const char *b)
{
	while (*a && *a == *b) {
		a++;
		b++;
	}
	return *a == *b;
}

static const char *test_digit_sum_basic(void)
{
	if (digit_sum(0) != 0)
		return "digit_sum(0) != 0";
	if (digit_sum(12345) != 15)
		return "digit_sum(12345) != 15";
	return NULL;
}

static const char *test_digit_sum_negative(void)
{
	return digit_sum(-4071) == 12 ? NULL : "digit_sum(-4071) != 12";
}

static const char *test_power_mod_small(void)
{
	if (power_mod(3, 4, 100) != 81)
		return "power_mod(3, 4, 100) != 81";
	if (power_mod(7, 0, 13) != 1)
		return "power_mod(7, 0, 13) != 1";
	return NULL;
}

static const char *test_power_mod_large(void)
{
	/* 2^62 overflows a naive product; Fermat: 2^(p-1) = 1 mod p. */
	return power_mod(2, 1000000006, 1000000007) == 1
		   ? NULL
		   : "power_mod(2, p-1, p) != 1 for p = 1e9+7";
}

static const char *test_to_upper(void)
{
	char s[] = "Proctor 2.0, ok?";
	to_upper(s);
	return same_text(s, "PROCTOR 2.0, OK?") ? NULL : "to_upper(\"Proctor 2.0, ok?\") is wrong";
}

static const char *test_count_char(void)
{
	if (count_char("mississippi", 's') != 4)
		return "count_char(\"mississippi\", 's') != 4";
	if (count_char("", 'x') != 0)
		return "count_char(\"\", 'x') != 0";
	return NULL;
}

static const char *test_max_of(void)
{
	static const int a[] = {-7, -2, -9};
	static const int b[] = {4, 19, 19, 3};
	if (max_of(a, 3) != -2)
		return "max_of({-7, -2, -9}) != -2";
	return max_of(b, 4) == 19 ? NULL : "max_of({4, 19, 19, 3}) != 19";
}

static const char *test_is_sorted(void)
{
	static const int up[] = {1, 2, 2, 5}, down[] = {3, 1};
	if (is_sorted(up, 4) != 1)
		return "{1, 2, 2, 5} is sorted";
	if (is_sorted(down, 2) != 0)
		return "{3, 1} is not sorted";
	return is_sorted(up, 0) == 1 ? NULL : "an empty array is sorted";
}

static const char *test_bin_search_found(void)
{
	static const int a[] = {2, 3, 5, 7, 11, 13, 17};
	for (long i = 0; i < 7; i++)
		if (bin_search(a, 7, a[i]) != i)
			return "bin_search misses a present key";
	return NULL;
}

static const char *test_bin_search_missing(void)
{
	static const int a[] = {2, 3, 5, 7, 11, 13, 17};
	if (bin_search(a, 7, 4) != -1 || bin_search(a, 7, 1) != -1 || bin_search(a, 7, 99) != -1)
		return "bin_search finds a missing key";
	return bin_search(a, 0, 2) == -1 ? NULL : "bin_search finds a key in an empty array";
}

static const struct {
	const char *name;
	test_fn fn;
} tests[] = {
    {"test_digit_sum_basic", test_digit_sum_basic},
    {"test_digit_sum_negative", test_digit_sum_negative},
    {"test_power_mod_small", test_power_mod_small},
    {"test_power_mod_large", test_power_mod_large},
    {"test_to_upper", test_to_upper},
    {"test_count_char", test_count_char},
    {"test_max_of", test_max_of},
    {"test_is_sorted", test_is_sorted},
    {"test_bin_search_found", test_bin_search_found},
    {"test_bin_search_missing", test_bin_search_missing},
};
#define N_TESTS (sizeof(tests) / sizeof(tests[0]))

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

int main(int argc, char **argv)
{
	const char *why[N_TESTS];
	unsigned failed = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s REPORT.xml\n", argv[0]);
		return 2;
	}
	printf("TAP version 13\n1..%zu\n", N_TESTS);
	fflush(stdout);
	for (size_t i = 0; i < N_TESTS; i++) {
		why[i] = tests[i].fn();
		failed += why[i] != NULL;
		printf("%s %zu - %s%s%s\n", why[i] ? "not ok" : "ok", i + 1, tests[i].name,
		       why[i] ? " # " : "", why[i] ? why[i] : "");
		fflush(stdout);
	}

	FILE *f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<testsuite name=\"corpus_c\" tests=\"%zu\" failures=\"%u\" errors=\"0\">\n",
		N_TESTS, failed);
	for (size_t i = 0; i < N_TESTS; i++) {
		fprintf(f, "  <testcase classname=\"driver\" name=\"%s\"", tests[i].name);
		if (why[i]) {
			fputs("><failure message=\"", f);
			xml_text(f, why[i]);
			fputs("\"/></testcase>\n", f);
		} else {
			fputs("/>\n", f);
		}
	}
	fputs("</testsuite>\n", f);
	if (fclose(f) != 0) {
		perror(argv[1]);
		return 2;
	}
	return failed ? 1 : 0;
}
