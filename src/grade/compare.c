/* I/O mode: comparing a program's output with the expected output, on the host. */
#include "grade/compare.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Next line of [*p, end) without its newline and trailing blanks. */
static bool next_line(const char **p, const char *end, const char **ret, size_t *ret_len)
{
	if (*p >= end)
		return false;
	const char *s = *p, *nl = memchr(s, '\n', (size_t)(end - s));
	const char *e = nl ? nl : end;
	*p = nl ? nl + 1 : end;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	*ret = s;
	*ret_len = (size_t)(e - s);
	return true;
}

/* Length of the text without trailing whitespace-only lines. */
static size_t trim_end(const char *s, size_t len)
{
	while (len > 0 && is_space(s[len - 1]))
		len--;
	return len;
}

static bool cmp_lines(const char *a, size_t alen, const char *b, size_t blen)
{
	const char *pa = a, *pb = b, *ea = a + trim_end(a, alen), *eb = b + trim_end(b, blen);
	const char *la, *lb;
	size_t na, nb;

	for (;;) {
		bool ha = next_line(&pa, ea, &la, &na), hb = next_line(&pb, eb, &lb, &nb);
		if (!ha || !hb)
			return ha == hb;
		if (na != nb || memcmp(la, lb, na) != 0)
			return false;
	}
}

static bool next_token(const char **p, const char *end, const char **ret, size_t *ret_len)
{
	const char *s = *p;

	while (s < end && is_space(*s))
		s++;
	if (s >= end)
		return false;
	const char *e = s;
	while (e < end && !is_space(*e))
		e++;
	*p = e;
	*ret = s;
	*ret_len = (size_t)(e - s);
	return true;
}

/* Parse a whole token as a finite number; tokens are copied to a bounded
 * buffer because strtod needs a terminator. */
static bool token_number(const char *t, size_t n, double *ret)
{
	char buf[128];
	char *end;

	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, t, n);
	buf[n] = '\0';
	/* No hex floats, inf or nan: only what a judge means by a number. */
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789+-.eE", buf[i]))
			return false;
	*ret = strtod(buf, &end);
	return *end == '\0' && isfinite(*ret);
}

static bool cmp_tokens(bool floats, double tol, const char *a, size_t alen, const char *b,
		       size_t blen)
{
	const char *pa = a, *pb = b, *ea = a + alen, *eb = b + blen, *ta, *tb;
	size_t na, nb;

	for (;;) {
		bool ha = next_token(&pa, ea, &ta, &na), hb = next_token(&pb, eb, &tb, &nb);
		if (!ha || !hb)
			return ha == hb;
		if (na == nb && memcmp(ta, tb, na) == 0)
			continue;
		double x, y;
		if (!floats || !token_number(ta, na, &x) || !token_number(tb, nb, &y))
			return false;
		double d = fabs(x - y);
		if (!(d <= tol || d <= tol * fabs(y)))
			return false;
	}
}

bool compare_output(enum compare_mode mode, double tol, const char *out, size_t out_len,
		    const char *exp, size_t exp_len)
{
	switch (mode) {
	case CMP_EXACT:
		return out_len == exp_len && memcmp(out, exp, out_len) == 0;
	case CMP_TRAILING_WS:
		return cmp_lines(out, out_len, exp, exp_len);
	case CMP_TOKENS:
		return cmp_tokens(false, tol, out, out_len, exp, exp_len);
	case CMP_FLOAT:
		return cmp_tokens(true, tol, out, out_len, exp, exp_len);
	}
	return false;
}
