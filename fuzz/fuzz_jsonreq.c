/* libFuzzer target: service API request bodies (jsonreq_parse and the typed field readers). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "service/jsonreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const allowed[] = {"assignment", "student", "callback_url", "labels",
					      "wait", NULL};
	json_t *doc = NULL;
	struct err e;
	const char *s;
	int64_t n = 0;

	if (jsonreq_parse((const char *)data, size, 1 << 20, &doc, &e) < 0) {
		/* The message must be a C string of bounded length. */
		if (strnlen(e.msg, sizeof(e.msg)) == sizeof(e.msg))
			abort();
		return 0;
	}
	jsonreq_only(doc, allowed, &e);
	jsonreq_string(doc, "student", false, 256, &s, &e);
	jsonreq_string(doc, "assignment", true, 64, &s, &e);
	jsonreq_int(doc, "wait", false, 0, 600, &n, &e);
	json_decref(doc);
	return 0;
}
