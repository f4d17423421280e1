/* I/O mode: comparing a program's output with the expected output, on the host. */
#ifndef PROCTOR_GRADE_COMPARE_H
#define PROCTOR_GRADE_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

#include "grade/assignment.h"

/*
 * true when `out` is accepted against `exp` under `mode`:
 *  CMP_EXACT        byte for byte;
 *  CMP_TRAILING_WS  line by line with trailing spaces, tabs and CRs removed
 *                   from each line, and trailing empty lines ignored;
 *  CMP_TOKENS       the sequences of whitespace-separated tokens are equal;
 *  CMP_FLOAT        tokens, where two tokens that both parse completely as
 *                   finite numbers match when |a-b| <= tol or
 *                   |a-b| <= tol*|b|; other tokens must be equal.
 * Neither buffer needs to be NUL-terminated.  Nothing is allocated.
 */
bool compare_output(enum compare_mode mode, double tol, const char *out, size_t out_len,
		    const char *exp, size_t exp_len);

#endif
