/* Number statistics: reference solution.
 * Reads real numbers from stdin until end of input (at least one), prints
 * count, sum, min, max, mean and median, one "name value" per line. */
#include <stdio.h>
#include <stdlib.h>

static int compare_doubles(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

int main(void)
{
	size_t count = 0, cap = 1024;
	double *nums = malloc(cap * sizeof *nums);
	double x, sum = 0;

	if (nums == NULL)
		return 1;
	while (scanf("%lf", &x) == 1) {
		if (count == cap) {
			cap *= 2;
			double *bigger = realloc(nums, cap * sizeof *nums);
			if (bigger == NULL)
				return 1;
			nums = bigger;
		}
		nums[count++] = x;
		sum += x;
	}
	if (count == 0)
		return 1;

	qsort(nums, count, sizeof *nums, compare_doubles);
	double median = count % 2 ? nums[count / 2]
				  : (nums[count / 2 - 1] + nums[count / 2]) / 2;

	printf("count %zu\n", count);
	printf("sum %.15g\n", sum);
	printf("min %.15g\n", nums[0]);
	printf("max %.15g\n", nums[count - 1]);
	printf("mean %.15g\n", sum / count);
	printf("median %.15g\n", median);
	free(nums);
	return 0;
}
