/* Project 1: statistics -- a student's solution (correct; prints every
 * number with %f, which the float comparison accepts). */
#include <stdio.h>
#include <stdlib.h>

double nums[1000000];

int cmp(const void *a, const void *b)
{
	double x = *(const double *)a;
	double y = *(const double *)b;
	if (x < y)
		return -1;
	if (x > y)
		return 1;
	return 0;
}

int main(void)
{
	int n = 0;
	double sum = 0, median;

	while (n < 1000000 && scanf("%lf", &nums[n]) == 1) {
		sum = sum + nums[n];
		n++;
	}
	qsort(nums, n, sizeof(double), cmp);
	if (n % 2 == 1)
		median = nums[n / 2];
	else
		median = (nums[n / 2 - 1] + nums[n / 2]) / 2;

	printf("count %d\n", n);
	printf("sum %f\n", sum);
	printf("min %f\n", nums[0]);
	printf("max %f\n", nums[n - 1]);
	printf("mean %f\n", sum / n);
	printf("median %f\n", median);
	return 0;
}
