/* libFuzzer target: limits_set() on arbitrary text, for every limit name and an unknown one. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runlimits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t *field_of(struct limits *l, const char *name)
{
	if (strcmp(name, "cpu") == 0)
		return &l->cpu_ms;
	if (strcmp(name, "wall") == 0)
		return &l->wall_ms;
	if (strcmp(name, "memory") == 0)
		return &l->memory_bytes;
	if (strcmp(name, "pids") == 0)
		return &l->pids;
	if (strcmp(name, "fsize") == 0)
		return &l->fsize_bytes;
	if (strcmp(name, "disk") == 0)
		return &l->disk_bytes;
	if (strcmp(name, "output") == 0)
		return &l->output_bytes;
	if (strcmp(name, "nofile") == 0)
		return &l->nofile;
	abort();
}

static uint64_t unit_bytes(const struct limit_desc *d)
{
	switch (d->unit) {
	case LIMIT_UNIT_MIB:
		return UINT64_C(1) << 20;
	case LIMIT_UNIT_KIB:
		return UINT64_C(1) << 10;
	case LIMIT_UNIT_SECONDS:
	case LIMIT_UNIT_COUNT:
		return 1;
	}
	abort();
}

/* Reference for parse_seconds_ms: digits, optionally '.' and 1-3 digits. */
static int ref_seconds_ms(const char *s, uint64_t *ret)
{
	uint64_t secs = 0, frac = 0;
	size_t i = 0, fdigits = 0;

	if (s[0] < '0' || s[0] > '9')
		return -1;
	for (; s[i] >= '0' && s[i] <= '9'; i++)
		if (__builtin_mul_overflow(secs, 10, &secs) ||
		    __builtin_add_overflow(secs, (uint64_t)(s[i] - '0'), &secs))
			return -1;
	if (s[i] == '.') {
		for (i++; s[i] >= '0' && s[i] <= '9'; i++, fdigits++)
			if (fdigits < 3)
				frac = frac * 10 + (uint64_t)(s[i] - '0');
		if (fdigits == 0 || fdigits > 3)
			return -1;
		for (; fdigits < 3; fdigits++)
			frac *= 10;
	}
	if (s[i] != '\0')
		return -1;
	if (__builtin_mul_overflow(secs, 1000, &secs) || __builtin_add_overflow(secs, frac, &secs))
		return -1;
	*ret = secs;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned n;
	const struct limit_desc *t = limits_table(&n);
	const struct limit_desc *d;
	struct limits l, before;
	struct err e = {.errnum = -12345, .kind = ERR_KIND_COUNT};
	char *text;
	uint64_t ms, ref_ms;
	int rc, ref_rc;

	if (size == 0)
		return 0;
	d = data[0] % (n + 1) < n ? &t[data[0] % (n + 1)] : NULL;
	text = malloc(size);
	if (!text)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';

	limits_default(&l);
	before = l;
	rc = limits_set(&l, d ? d->name : "bogus", text, &e);
	if (rc == 0) {
		uint64_t v;
		if (!d)
			abort();
		v = *field_of(&l, d->name);
		if (v < d->min * unit_bytes(d) || v > d->max * unit_bytes(d))
			abort();
		if (v % unit_bytes(d) != 0)
			abort();
		/* Only the named limit changed. */
		*field_of(&before, d->name) = v;
		if (memcmp(&l, &before, sizeof(l)) != 0)
			abort();
	} else {
		if (rc != -1 || memcmp(&l, &before, sizeof(l)) != 0)
			abort();
		if (e.errnum == -12345 || strnlen(e.msg, sizeof(e.msg)) == sizeof(e.msg))
			abort();
		/* Every refusal is the user's: a usage error (exit 2), never
		 * Proctor's own, whatever the text. */
		if (e.kind != ERR_USAGE || err_exit_status(e.kind) != 2)
			abort();
		/* ... and names the option it refuses. */
		if (d) {
			char opt[32];
			snprintf(opt, sizeof(opt), "--%s: ", d->name);
			if (memcmp(e.msg, opt, strlen(opt)) != 0)
				abort();
		}
	}

	/* The seconds parser against its reference, on the same text. */
	ms = ref_ms = 0;
	rc = parse_seconds_ms(text, &ms);
	ref_rc = ref_seconds_ms(text, &ref_ms);
	/* limits.c may refuse a few values just below UINT64_MAX ms; never accept more. */
	if (rc == 0 && (ref_rc != 0 || ms != ref_ms))
		abort();
	if (rc != 0 && ref_rc == 0 && ref_ms < UINT64_MAX - 1000 * 1000)
		abort();

	free(text);
	return 0;
}
