/* Error reporting: formatting and wrapping of struct err. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_set(struct err *e, int errnum, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	if (n < 0)
		e->msg[0] = '\0';
	if (errnum != 0) {
		size_t len = strlen(e->msg);
		snprintf(e->msg + len, sizeof(e->msg) - len, ": %s", strerror(errnum));
	}
	e->errnum = errnum;
	return -1;
}

int err_wrap(struct err *e, const char *fmt, ...)
{
	char prefix[512], old[sizeof(e->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof(old));
	/* Truncation keeps the outer context, which names the file or option. */
	size_t plen = strlen(prefix);
	if (plen > sizeof(e->msg) - 3)
		plen = sizeof(e->msg) - 3;
	memcpy(e->msg, prefix, plen);
	memcpy(e->msg + plen, ": ", 2);
	size_t room = sizeof(e->msg) - plen - 3;
	size_t olen = strnlen(old, room);
	memcpy(e->msg + plen + 2, old, olen);
	e->msg[plen + 2 + olen] = '\0';
	return -1;
}
