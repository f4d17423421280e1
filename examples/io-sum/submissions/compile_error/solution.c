/* Project 1: statistics -- a student's solution (does not compile: the
 * variable is declared as total but used as sum). */
#include <stdio.h>

double nums[1000000];

int main(void)
{
	int n = 0;
	double total = 0;

	while (n < 1000000 && scanf("%lf", &nums[n]) == 1) {
		sum += nums[n];
		n++;
	}
	printf("count %d\n", n);
	printf("sum %f\n", sum);
	return 0;
}
