/* Error reporting: formatting and wrapping of struct err, and what each kind of error means. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * The longest prefix of s[0, len) that does not end inside a UTF-8
 * character.  Messages quote names from sandboxes and are cut to fit
 * `msg`: a cut through a multibyte character would leave an ill-formed
 * tail that no JSON encoder accepts.  (Bytes that were ill-formed to begin
 * with are the quoting side's business: text_escape in capbuf.h.)
 */
static size_t char_boundary(const char *s, size_t len)
{
	size_t i = len, back = 0;

	while (i > 0 && back < 4 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
		i--;
		back++;
	}
	if (i == 0)
		return len;
	unsigned char lead = (unsigned char)s[i - 1];
	size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
	if (lead >= 0xC0 && back + 1 < need)
		return i - 1; /* the last character is incomplete: drop it */
	return len;
}

static void set_v(struct err *e, enum err_kind kind, int errnum, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
static void set_v(struct err *e, enum err_kind kind, int errnum, const char *fmt, va_list ap)
{
	char suffix[160] = "";
	int n = vsnprintf(e->msg, sizeof(e->msg), fmt, ap);

	if (n < 0)
		e->msg[0] = '\0';
	if (errnum != 0)
		snprintf(suffix, sizeof(suffix), ": %s", strerror(errnum));
	/* Cut the message, not the system's reason, on a character boundary. */
	size_t len = strlen(e->msg), slen = strlen(suffix), room = sizeof(e->msg) - 1 - slen;
	if (len > room)
		len = room;
	if (n >= 0 && (size_t)n > len)
		len = char_boundary(e->msg, len);
	memcpy(e->msg + len, suffix, slen + 1);
	e->errnum = errnum;
	e->kind = kind;
}

int err_set(struct err *e, int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_v(e, ERR_INTERNAL, errnum, fmt, ap);
	va_end(ap);
	return -1;
}

int err_setk(struct err *e, enum err_kind kind, int errnum, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	set_v(e, kind, errnum, fmt, ap);
	va_end(ap);
	return -1;
}

int err_wrap(struct err *e, const char *fmt, ...)
{
	char prefix[512], old[sizeof(e->msg)];
	va_list ap;

	va_start(ap, fmt);
	int n = vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof(old));
	/* Truncation keeps the outer context, which names the file or option. */
	size_t plen = strlen(prefix);
	if (n >= 0 && (size_t)n > plen)
		plen = char_boundary(prefix, plen);
	if (plen > sizeof(e->msg) - 3)
		plen = char_boundary(prefix, sizeof(e->msg) - 3);
	memcpy(e->msg, prefix, plen);
	memcpy(e->msg + plen, ": ", 2);
	size_t room = sizeof(e->msg) - plen - 3;
	size_t olen = strnlen(old, room);
	if (olen < strlen(old))
		olen = char_boundary(old, olen);
	memcpy(e->msg + plen + 2, old, olen);
	e->msg[plen + 2 + olen] = '\0';
	return -1;
}

int err_classify(struct err *e, enum err_kind kind)
{
	e->kind = kind;
	return -1;
}

/*
 * The one table from kinds to what users and programs see: the exit status
 * of every command (docs/cli-contract.md, "Error kinds"), and the HTTP
 * status and stable code the service answers with.  Rows are never
 * renumbered or reused; every kind has one (tests/unit/test_err.c).
 */
static const struct {
	int exit_status;
	int http_status;
	const char *code;
} kinds[ERR_KIND_COUNT] = {
    [ERR_INTERNAL] = {3, 500, "internal"},	   /* Proctor's own: retry later */
    [ERR_USAGE] = {2, 400, "invalid_request"},	   /* a malformed option or request */
    [ERR_INPUT] = {2, 422, "invalid_input"},	   /* the user's file */
    [ERR_NOT_FOUND] = {2, 404, "not_found"},	   /* named but not there */
    [ERR_UNAVAILABLE] = {3, 503, "unavailable"},   /* not on this host */
    [ERR_BUSY] = {3, 503, "busy"},		   /* every slot leased: retry later */
    [ERR_BUILD_FAILED] = {1, 422, "build_failed"}, /* the user's build ran and failed */
    [ERR_UNAUTHORIZED] = {2, 401, "unauthorized"},
    [ERR_FORBIDDEN] = {2, 403, "forbidden"},
    [ERR_TOO_LARGE] = {2, 413, "too_large"},
    [ERR_QUEUE_FULL] = {3, 429, "queue_full"},		    /* retry later */
    [ERR_SUBMISSION_LIMIT] = {2, 403, "submission_limit"},
    [ERR_TOO_SOON] = {3, 429, "too_soon"},		    /* retry later */
    [ERR_BUDGET_EXCEEDED] = {2, 403, "budget_exceeded"},
    [ERR_CAPACITY] = {3, 429, "capacity"}, /* retry later */
};

static enum err_kind known(enum err_kind kind)
{
	return (unsigned)kind < ERR_KIND_COUNT ? kind : ERR_INTERNAL;
}

int err_exit_status(enum err_kind kind)
{
	return kinds[known(kind)].exit_status;
}

int err_http_status(enum err_kind kind)
{
	return kinds[known(kind)].http_status;
}

const char *err_code(enum err_kind kind)
{
	return kinds[known(kind)].code;
}

enum err_kind err_kind_of_code(const char *code)
{
	for (int k = 0; code && k < ERR_KIND_COUNT; k++)
		if (strcmp(kinds[k].code, code) == 0)
			return (enum err_kind)k;
	return ERR_INTERNAL;
}
