/* digit_sum recurses without end, with a frame the compiler cannot drop:
 * the stack overflows and the binary dies with SIGSEGV. */
#include "solution.h"

#pragma GCC diagnostic ignored "-Winfinite-recursion"

int digit_sum(long n)
{
	volatile char frame[512];

	frame[n & 511] = (char)n;
	return frame[0] + digit_sum(n + 1) + 1;
}

long power_mod(long base, long exp, long mod)
{
	unsigned long long result = 1 % mod, b = (unsigned long long)(base % mod + mod) % mod;

	for (; exp > 0; exp >>= 1) {
		if (exp & 1)
			result = (unsigned long long)((unsigned __int128)result * b % mod);
		b = (unsigned long long)((unsigned __int128)b * b % mod);
	}
	return (long)result;
}

void to_upper(char *s)
{
	for (; *s; s++)
		if (*s >= 'a' && *s <= 'z')
			*s = (char)(*s - 'a' + 'A');
}

int count_char(const char *s, char c)
{
	int n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

int max_of(const int *a, size_t n)
{
	int m = a[0];

	for (size_t i = 1; i < n; i++)
		if (a[i] > m)
			m = a[i];
	return m;
}

int is_sorted(const int *a, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (a[i - 1] > a[i])
			return 0;
	return 1;
}

long bin_search(const int *a, size_t n, int key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid] == key)
			return (long)mid;
		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}
