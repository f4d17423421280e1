/* libFuzzer target: symcheck_cc_list() on any list the build's uid could have written: no crash,
 * only objects named as the shim names them, only sources of the submission. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grade/symcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char out[] = "/tmp/.proctor-objects-0a1b2c3d";
	static const char sources[] = "/work/solution.c\n/work/lib/util.cc\n";
	struct symcheck_cc_list l;
	char *text = malloc(size + 1);

	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	symcheck_cc_list(text, out, sources, &l);
	if (l.n > SYMCHECK_CC_MAX || l.seen > 2)
		abort();
	for (size_t i = 0; i < l.n; i++) {
		if (strncmp(l.objects[i], out, sizeof(out) - 1) != 0 ||
		    strlen(l.objects[i]) != sizeof(out) - 1 + 11)
			abort();
		if (strcmp(l.sources[i], "solution.c") != 0 && strcmp(l.sources[i], "lib/util.cc") != 0)
			abort();
	}
	if (l.failed && strcmp(l.failed, "solution.c") != 0 && strcmp(l.failed, "lib/util.cc") != 0)
		abort();
	free(text);
	return 0;
}
