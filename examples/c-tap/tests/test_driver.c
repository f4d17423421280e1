/* Hidden tests for the array assignment: 7 tests, run in order.
 * Prints TAP on stdout as it goes (for the student's log) and writes the
 * same TAP to the report file argv[1] once every test has run, so a run
 * that dies or exits early leaves no report.
 * Exit status: 0 all passed, 1 some failed, 2 usage or report error. */
#include <stdio.h>
#include <string.h>

#include "arrays.h"

#define N_TESTS 7

static char failure[200]; /* why the current test failed; "" if it passed */

#define CHECK(cond)                                                        \
	do {                                                               \
		if (!(cond) && failure[0] == '\0')                         \
			snprintf(failure, sizeof failure, "line %d: %s",   \
				 __LINE__, #cond);                         \
	} while (0)

static void max_of_positive_numbers(void)
{
	int a[] = {3, 9, 2, 7};
	CHECK(array_max(a, 4) == 9);
}

static void max_of_negative_numbers(void)
{
	int a[] = {-8, -3, -5};
	CHECK(array_max(a, 3) == -3);
}

static void mean_is_not_rounded(void)
{
	int a[] = {1, 2, 4};
	double m = array_mean(a, 3);
	CHECK(m > 2.3333 && m < 2.3334);
}

static void reverse_odd_length(void)
{
	int a[] = {1, 2, 3, 4, 5};
	int want[] = {5, 4, 3, 2, 1};
	array_reverse(a, 5);
	CHECK(memcmp(a, want, sizeof a) == 0);
}

static void reverse_even_length_and_empty(void)
{
	int a[] = {1, 2, 3, 4};
	int want[] = {4, 3, 2, 1};
	array_reverse(a, 4);
	CHECK(memcmp(a, want, sizeof a) == 0);
	array_reverse(a, 0);
	CHECK(memcmp(a, want, sizeof a) == 0);
}

static void count_even_with_negatives(void)
{
	int a[] = {2, -4, 7, 0, -3};
	CHECK(count_even(a, 5) == 3);
}

static void sorted_and_unsorted(void)
{
	int up[] = {1, 2, 2, 5};
	int down[] = {1, 3, 2};
	CHECK(is_sorted(up, 4) == 1);
	CHECK(is_sorted(down, 3) == 0);
	CHECK(is_sorted(up, 1) == 1);
}

static const struct {
	const char *name;
	void (*run)(void);
} tests[N_TESTS] = {
	{"max_of_positive_numbers", max_of_positive_numbers},
	{"max_of_negative_numbers", max_of_negative_numbers},
	{"mean_is_not_rounded", mean_is_not_rounded},
	{"reverse_odd_length", reverse_odd_length},
	{"reverse_even_length_and_empty", reverse_even_length_and_empty},
	{"count_even_with_negatives", count_even_with_negatives},
	{"sorted_and_unsorted", sorted_and_unsorted},
};

int main(int argc, char **argv)
{
	static char lines[N_TESTS][300];
	int failed = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s REPORT\n", argv[0]);
		return 2;
	}
	printf("TAP version 13\n1..%d\n", N_TESTS);
	fflush(stdout);
	for (int i = 0; i < N_TESTS; i++) {
		failure[0] = '\0';
		tests[i].run();
		if (failure[0] != '\0') {
			failed++;
			snprintf(lines[i], sizeof lines[i], "not ok %d - %s # %s", i + 1,
				 tests[i].name, failure);
		} else {
			snprintf(lines[i], sizeof lines[i], "ok %d - %s", i + 1, tests[i].name);
		}
		printf("%s\n", lines[i]);
		fflush(stdout);
	}

	FILE *report = fopen(argv[1], "w");
	if (report == NULL) {
		perror(argv[1]);
		return 2;
	}
	fprintf(report, "TAP version 13\n1..%d\n", N_TESTS);
	for (int i = 0; i < N_TESTS; i++)
		fprintf(report, "%s\n", lines[i]);
	if (fclose(report) != 0) {
		perror(argv[1]);
		return 2;
	}
	return failed ? 1 : 0;
}
