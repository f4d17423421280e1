/* libFuzzer target: tap_parse() on any bytes, then the invariants of the report it returns. */
#include "fuzz_report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_report(tap_parse, data, size);
	return 0;
}
