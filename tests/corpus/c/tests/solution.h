/* The functions a student's solution.c implements (instructor-provided). */
#ifndef CORPUS_SOLUTION_H
#define CORPUS_SOLUTION_H

#include <stddef.h>

int digit_sum(long n);				  /* sum of the decimal digits of |n| */
long power_mod(long base, long exp, long mod);	  /* base^exp mod mod; exp >= 0, mod > 0 */
void to_upper(char *s);				  /* ASCII letters, in place */
int count_char(const char *s, char c);		  /* occurrences of c in s */
int max_of(const int *a, size_t n);		  /* largest of a[0..n-1]; n > 0 */
int is_sorted(const int *a, size_t n);		  /* 1 if non-decreasing (n may be 0), else 0 */
long bin_search(const int *a, size_t n, int key); /* an index of key in sorted a, or -1 */

#endif
