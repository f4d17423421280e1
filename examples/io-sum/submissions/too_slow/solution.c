/* Project 1: statistics -- a student's solution (right answers, but it
 * sorts with bubble sort: fine on small inputs, far too slow on the big
 * case, which runs out of time). */
#include <stdio.h>

double nums[1000000];

int main(void)
{
	int n = 0;
	double sum = 0, median;

	while (n < 1000000 && scanf("%lf", &nums[n]) == 1) {
		sum += nums[n];
		n++;
	}
	for (int i = 0; i < n; i++) {
		for (int j = 0; j + 1 < n - i; j++) {
			if (nums[j] > nums[j + 1]) {
				double t = nums[j];
				nums[j] = nums[j + 1];
				nums[j + 1] = t;
			}
		}
	}
	if (n % 2 == 1)
		median = nums[n / 2];
	else
		median = (nums[n / 2 - 1] + nums[n / 2]) / 2;

	printf("count %d\n", n);
	printf("sum %.10g\n", sum);
	printf("min %.10g\n", nums[0]);
	printf("max %.10g\n", nums[n - 1]);
	printf("mean %.10g\n", sum / n);
	printf("median %.10g\n", median);
	return 0;
}
