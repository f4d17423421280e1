/* libFuzzer target: stat_field() and parse_u64() on arbitrary text, against reference parsers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Keys Proctor reads from cgroup files, for inputs that carry no key. */
static const char *const keys[] = {
    "oom_kill", "oom", "max", "anon", "file", "usage_usec", "nr_periods", "under_oom",
};

static int ref_parse_u64(const char *s, size_t len, uint64_t *ret)
{
	uint64_t v = 0;

	if (len == 0)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
			return -1;
	}
	*ret = v;
	return 0;
}

/* The first line "key value" decides; a bad value there fails the lookup. */
static int ref_stat_field(const char *text, const char *key, uint64_t *ret)
{
	size_t klen = strlen(key);

	for (const char *line = text; *line;) {
		const char *nl = memchr(line, '\n', strlen(line));
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		if (len > klen && memcmp(line, key, klen) == 0 && line[klen] == ' ')
			return ref_parse_u64(line + klen + 1, len - klen - 1, ret);
		if (!nl)
			break;
		line = nl + 1;
	}
	return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, '\0', size);
	char *key, *text;
	uint64_t v = 7, ref_v = 7;
	int rc, ref_rc;

	/* parse_u64 on the raw bytes, which are not NUL-terminated. */
	rc = parse_u64((const char *)data, size, &v);
	ref_rc = ref_parse_u64((const char *)data, size, &ref_v);
	if (rc != ref_rc || v != ref_v)
		abort();

	/* "key\0text", or a selector byte picking a known key then text. */
	if (nul) {
		key = strndup((const char *)data, (size_t)(nul - data));
		text = strndup((const char *)nul + 1, size - (size_t)(nul - data) - 1);
	} else if (size > 0) {
		key = strdup(keys[data[0] % (sizeof(keys) / sizeof(keys[0]))]);
		text = strndup((const char *)data + 1, size - 1);
	} else {
		return 0;
	}
	if (!key || !text)
		abort();

	v = ref_v = 7;
	rc = stat_field(text, key, &v);
	ref_rc = ref_stat_field(text, key, &ref_v);
	if (rc != ref_rc || v != ref_v)
		abort();

	free(key);
	free(text);
	return 0;
}
