/* libFuzzer target: callback URLs from API clients (callback_url_check) and the signature
 * headers a receiver checks (callback_verify). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service/callback.h"

/*
 * The input is "URL\nTIMESTAMP\nSIGNATURE\nBODY": the URL goes to the check
 * as a C string, the other parts to the verifier (the body as bytes).
 */
static const char *field(char **p)
{
	char *s = *p, *nl = s ? strchr(s, '\n') : NULL;

	if (nl) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = NULL;
	}
	return s ? s : "";
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1), *p = text;
	struct err e;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	const char *url = field(&p), *ts = field(&p), *sig = field(&p);
	const char *body = p ? p : "";
	if (callback_url_check(url, &e) < 0 && strnlen(e.msg, sizeof(e.msg)) == sizeof(e.msg))
		abort();
	callback_verify("secret", 6, ts, sig, body, strlen(body), 1700000000, 300);
	free(text);
	return 0;
}
