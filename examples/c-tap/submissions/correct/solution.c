/* Lab 3: arrays -- a student's solution (correct). */
#include "arrays.h"

int array_max(const int *a, size_t n)
{
	int max = a[0];
	size_t i;
	for (i = 0; i < n; i++) {
		if (a[i] > max) {
			max = a[i];
		}
	}
	return max;
}

double array_mean(const int *a, size_t n)
{
	double total = 0;
	size_t i;
	for (i = 0; i < n; i++) {
		total = total + a[i];
	}
	return total / n;
}

void array_reverse(int *a, size_t n)
{
	size_t i;
	for (i = 0; i < n / 2; i++) {
		int tmp = a[i];
		a[i] = a[n - 1 - i];
		a[n - 1 - i] = tmp;
	}
}

size_t count_even(const int *a, size_t n)
{
	size_t i, count = 0;
	for (i = 0; i < n; i++) {
		if (a[i] % 2 == 0) {
			count++;
		}
	}
	return count;
}

int is_sorted(const int *a, size_t n)
{
	size_t i;
	for (i = 0; i + 1 < n; i++) {
		if (a[i] > a[i + 1]) {
			return 0;
		}
	}
	return 1;
}
