/* A syntax error: the build step fails. */
#include "solution.h"

int digit_sum(long n)
{
	return n % 10 +
}
