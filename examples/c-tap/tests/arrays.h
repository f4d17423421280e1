/* Array functions the student implements in solution.c (given to students). */
#ifndef ARRAYS_H
#define ARRAYS_H

#include <stddef.h>

int array_max(const int *a, size_t n);       /* largest element; n >= 1 */
double array_mean(const int *a, size_t n);   /* arithmetic mean; n >= 1 */
void array_reverse(int *a, size_t n);        /* reverse in place; n may be 0 */
size_t count_even(const int *a, size_t n);   /* how many elements are even */
int is_sorted(const int *a, size_t n);       /* 1 if non-decreasing, else 0 */

#endif
