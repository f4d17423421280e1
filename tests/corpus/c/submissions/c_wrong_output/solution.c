/* Compiles and runs, but every answer is wrong; only the test that expects
 * "not found" passes by accident: 1/10. */
#include "solution.h"

int digit_sum(long n)
{
	(void)n;
	return 0;
}

long power_mod(long base, long exp, long mod)
{
	(void)exp;
	(void)mod;
	return base;
}

void to_upper(char *s)
{
	(void)s;
}

int count_char(const char *s, char c)
{
	(void)s;
	(void)c;
	return 0;
}

int max_of(const int *a, size_t n)
{
	(void)n;
	return a[0];
}

int is_sorted(const int *a, size_t n)
{
	(void)a;
	(void)n;
	return 0;
}

long bin_search(const int *a, size_t n, int key)
{
	(void)a;
	(void)n;
	(void)key;
	return -1;
}
