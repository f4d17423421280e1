/* libFuzzer target: build.objects' answer path, elfscan_object() on any bytes and
 * symcheck_classify() on its answer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grade/elfscan.h"
#include "grade/symcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * What proctor-helper does with an object, and what proctor does with the
 * answer: whatever the bytes, the scan refuses them or answers facts that
 * classify as may-be-linked or refused, never as a malformed answer (that
 * would charge the helper's own answer to Proctor), and a refusal always
 * says why.  The answer also survives its trip as JSON text.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *allow[] = {"solve", "helper_*", NULL};
	const struct build_objects o = {.allow = allow, .n_allow = 2};
	char why[1024];
	struct err e;
	json_t *facts;

	if (size > ELFSCAN_MAX_BYTES)
		return 0;
	/* libelf may convert the image in place: a copy of our own. */
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (elfscan_object(buf, size, &facts, &e) < 0) {
		free(buf);
		if (!e.msg[0])
			abort();
		return 0;
	}
	free(buf);
	char *text = json_dumps(facts, JSON_COMPACT);
	json_error_t jerr;
	json_t *back = text ? json_loads(text, JSON_REJECT_DUPLICATES, &jerr) : NULL;
	if (!back)
		abort();
	why[0] = '\0';
	int rc = symcheck_classify(back, "fuzz.o", &o, why, sizeof(why), &e);
	if (rc < 0 || (rc == 1 && !why[0]))
		abort();
	json_decref(back);
	json_decref(facts);
	free(text);
	return 0;
}
