/* A correct solution with a helper function that is not static: the
 * object defines 'is_even' too, which build.objects.allow does not list. */
#include "arrays.h"

int array_max(const int *a, size_t n)
{
	int best = a[0];
	for (size_t i = 1; i < n; i++)
		if (a[i] > best)
			best = a[i];
	return best;
}

double array_mean(const int *a, size_t n)
{
	long long sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += a[i];
	return (double)sum / (double)n;
}

void array_reverse(int *a, size_t n)
{
	for (size_t i = 0, j = n; i + 1 < j; i++, j--) {
		int t = a[i];
		a[i] = a[j - 1];
		a[j - 1] = t;
	}
}

int is_even(int x)
{
	return x % 2 == 0;
}

size_t count_even(const int *a, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		if (is_even(a[i]))
			count++;
	return count;
}

int is_sorted(const int *a, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (a[i - 1] > a[i])
			return 0;
	return 1;
}
