/* Three bugs, seven of the ten tests pass: digit_sum of a negative number
 * is wrong (the remainder is negative), power_mod(x, 0, m) is x, not 1,
 * and to_upper stops at the first space. */
#include "solution.h"

int digit_sum(long n)
{
	int sum = 0;

	for (; n; n /= 10)
		sum += (int)(n % 10);
	return sum;
}

long power_mod(long base, long exp, long mod)
{
	long result = base % mod;

	/* Square and multiply, but x^0 comes out as x. */
	for (long bit = 1L << 62; bit > 1; bit >>= 1) {
		if (bit > exp)
			continue;
		result = result * result % mod;
		if (exp & (bit >> 1))
			result = result * (base % mod) % mod;
	}
	return result;
}

void to_upper(char *s)
{
	for (; *s && *s != ' '; s++)
		if (*s >= 'a' && *s <= 'z')
			*s = (char)(*s - 32);
}

int count_char(const char *s, char c)
{
	int n = 0;

	while (*s)
		if (*s++ == c)
			n++;
	return n;
}

int max_of(const int *a, size_t n)
{
	int m = a[--n];

	while (n--)
		if (a[n] > m)
			m = a[n];
	return m;
}

int is_sorted(const int *a, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++)
		if (a[i] > a[i + 1])
			return 0;
	return 1;
}

long bin_search(const int *a, size_t n, int key)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] == key)
			return (long)i;
	return -1;
}
