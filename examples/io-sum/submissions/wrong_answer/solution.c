/* Project 1: statistics -- a student's solution (wrong answers: reads
 * integers only, so decimals stop the input early, and the maximum starts
 * at 0, which is wrong when every number is negative). */
#include <stdio.h>
#include <stdlib.h>

int nums[1000000];

int cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int main(void)
{
	int n = 0, x;
	long sum = 0;
	int min = 0, max = 0;

	while (scanf("%d", &x) == 1) {
		if (n == 0 || x < min)
			min = x;
		if (x > max)
			max = x;
		nums[n] = x;
		sum += x;
		n++;
	}
	qsort(nums, n, sizeof(int), cmp);

	printf("count %d\n", n);
	printf("sum %ld\n", sum);
	printf("min %d\n", min);
	printf("max %d\n", max);
	printf("mean %f\n", (double)sum / n);
	if (n % 2 == 1)
		printf("median %d\n", nums[n / 2]);
	else
		printf("median %f\n", (nums[n / 2 - 1] + nums[n / 2]) / 2.0);
	return 0;
}
