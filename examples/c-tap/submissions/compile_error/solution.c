/* Lab 3: arrays -- a student's solution (does not compile: an undeclared
 * variable and a missing semicolon). */
#include "arrays.h"

int array_max(const int *a, size_t n)
{
	int max = a[0];
	for (size_t i = 1; i < n; i++)
		if (a[i] > max)
			max = a[i];
	return max;
}

double array_mean(const int *a, size_t n)
{
	double total = 0;
	for (size_t i = 0; i < n; i++)
		total += a[i];
	return total / n;
}

void array_reverse(int *a, size_t n)
{
	for (size_t i = 0; i < n / 2; i++) {
		tmp = a[i];
		a[i] = a[n - 1 - i];
		a[n - 1 - i] = tmp;
	}
}

size_t count_even(const int *a, size_t n)
{
	size_t count = 0;
	for (size_t i = 0; i < n; i++)
		if (a[i] % 2 == 0)
			count++;
	return count
}

int is_sorted(const int *a, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (a[i - 1] > a[i])
			return 0;
	return 1;
}
