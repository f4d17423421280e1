/* Resource limits of one sandboxed run: defaults, bounds, parsing of user text. */
#include "runlimits.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stddef.h>
#include <string.h>

#include "capbuf.h"
#include "util.h"

/*
 * Bounds are what a grader could mean, not what the kernel accepts: a limit
 * of zero CPU seconds or a million processes is a typo, and an absurd value
 * is refused with the range rather than silently clamped.
 */
#define AT(f) offsetof(struct limits, f)
static const struct limit_desc table[] = {
    {"cpu", LIMIT_UNIT_SECONDS, 1, 86400000, "CPU time of the whole sandbox, seconds", AT(cpu_ms)},
    {"wall", LIMIT_UNIT_SECONDS, 1, 86400000, "wall-clock time, seconds", AT(wall_ms)},
    {"memory", LIMIT_UNIT_MIB, 4, 1048576, "memory incl. swap, MiB", AT(memory_bytes)},
    {"pids", LIMIT_UNIT_COUNT, 1, 65536, "processes and threads at once", AT(pids)},
    {"fsize", LIMIT_UNIT_MIB, 1, 1048576, "largest file written, MiB", AT(fsize_bytes)},
    {"disk", LIMIT_UNIT_MIB, 1, 1048576, "writable space (/work, /tmp), MiB", AT(disk_bytes)},
    {"output", LIMIT_UNIT_KIB, 0, 1048576, "stdout/stderr kept per stream, KiB", AT(output_bytes)},
    {"nofile", LIMIT_UNIT_COUNT, 4, 1048576, "open files per process", AT(nofile)},
};

const struct limit_desc *limits_table(unsigned *count)
{
	*count = sizeof(table) / sizeof(table[0]);
	return table;
}

void limits_default(struct limits *l)
{
	*l = (struct limits){
		.cpu_ms = 10000,
		.wall_ms = 20000,
		.memory_bytes = 256ull << 20,
		.pids = 64,
		.fsize_bytes = 64ull << 20,
		.disk_bytes = 64ull << 20,
		.output_bytes = 64ull << 10,
		.nofile = 256,
	};
}

int parse_seconds_ms(const char *text, uint64_t *ret_ms)
{
	const char *dot = strchr(text, '.');
	size_t ilen = dot ? (size_t)(dot - text) : strlen(text);
	uint64_t secs = 0, frac = 0;

	if (ilen == 0 || parse_u64(text, ilen, &secs) < 0)
		return -1;
	if (dot) {
		size_t flen = strlen(dot + 1);
		if (flen == 0 || flen > 3 || parse_u64(dot + 1, flen, &frac) < 0)
			return -1;
		for (size_t i = flen; i < 3; i++)
			frac *= 10;
	}
	if (secs > UINT64_MAX / 1000 - 1)
		return -1;
	*ret_ms = secs * 1000 + frac;
	return 0;
}

int limits_set(struct limits *l, const char *name, const char *raw, struct err *e)
{
	const struct limit_desc *d = NULL;
	uint64_t v, *dst;
	char text[64];

	for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i].name, name) == 0)
			d = &table[i];
	if (!d)
		return err_setk(e, ERR_USAGE, 0, "unknown limit '%s'", name);
	dst = (uint64_t *)(void *)((char *)l + d->off);
	text_printable(text, sizeof(text), raw, '?'); /* for the messages */

	switch (d->unit) {
	case LIMIT_UNIT_SECONDS:
		if (parse_seconds_ms(raw, &v) < 0)
			return err_setk(e, ERR_USAGE, 0,
					"--%s: '%s' is not a number of seconds "
					"(like 2 or 0.5, at most 3 decimals)",
					name, text);
		if (v < d->min || v > d->max)
			return err_setk(e, ERR_USAGE, 0,
					"--%s: %s s is out of range (0.001 to %llu s)", name, text,
					(unsigned long long)(d->max / 1000));
		*dst = v;
		return 0;
	case LIMIT_UNIT_MIB:
	case LIMIT_UNIT_KIB:
	case LIMIT_UNIT_COUNT: {
		const char *unit = d->unit == LIMIT_UNIT_MIB   ? " MiB"
				   : d->unit == LIMIT_UNIT_KIB ? " KiB"
							       : "";
		if (parse_u64(raw, strlen(raw), &v) < 0)
			return err_setk(e, ERR_USAGE, 0, "--%s: '%s' is not a whole number%s", name,
					text, unit);
		if (v < d->min || v > d->max)
			return err_setk(e, ERR_USAGE, 0,
					"--%s: %s%s is out of range (%llu to %llu%s)", name, text,
					unit, (unsigned long long)d->min,
					(unsigned long long)d->max, unit);
		if (d->unit == LIMIT_UNIT_MIB)
			v <<= 20;
		else if (d->unit == LIMIT_UNIT_KIB)
			v <<= 10;
		*dst = v;
		return 0;
	}
	}
	return err_set(e, EINVAL, "--%s", name);
}

static bool have_sys_resource(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct d[2] = {{0}};

	if (syscall(SYS_capget, &h, d) < 0)
		return false;
	return (d[CAP_SYS_RESOURCE / 32].effective >> (CAP_SYS_RESOURCE % 32)) & 1;
}

/* The highest hard limit of `resource` a root proctor can set here. */
static uint64_t host_ceiling(int resource, bool privileged)
{
	struct rlimit rl;
	char buf[32];

	if (resource == RLIMIT_NOFILE && privileged) {
		uint64_t nr_open;
		struct err ignored;
		if (read_file_at(AT_FDCWD, "/proc/sys/fs/nr_open", buf, sizeof(buf), &ignored) ==
			0 &&
		    parse_u64(buf, strcspn(buf, "\n "), &nr_open) == 0)
			return nr_open;
		return 1048576; /* the kernel's default fs.nr_open */
	}
	if (privileged)
		return UINT64_MAX;
	if (getrlimit(resource, &rl) < 0 || rl.rlim_max == RLIM_INFINITY)
		return UINT64_MAX;
	return rl.rlim_max;
}

int limits_check_host(const struct limits *l, struct err *e)
{
	bool priv = have_sys_resource();
	const char *why = priv ? "" : " (proctor has no CAP_SYS_RESOURCE to raise it)";
	uint64_t c;

	if (l->nofile > (c = host_ceiling(RLIMIT_NOFILE, priv)))
		return err_setk(
		    e, ERR_USAGE, 0,
		    "nofile: %llu open files is more than this host can grant: its limit "
		    "is %llu%s",
		    (unsigned long long)l->nofile, (unsigned long long)c, why);
	if (l->fsize_bytes > (c = host_ceiling(RLIMIT_FSIZE, priv)))
		return err_setk(
		    e, ERR_USAGE, 0,
		    "fsize: %llu MiB is more than this host can grant: its limit is %llu "
		    "MiB%s",
		    (unsigned long long)(l->fsize_bytes >> 20), (unsigned long long)(c >> 20), why);
	/* creds.c sets RLIMIT_NPROC to pids + 16. */
	if (l->pids + 16 > (c = host_ceiling(RLIMIT_NPROC, priv)))
		return err_setk(
		    e, ERR_USAGE, 0,
		    "pids: %llu processes is more than this host can grant: its process "
		    "limit is %llu, and the sandbox needs pids + 16%s",
		    (unsigned long long)l->pids, (unsigned long long)c, why);
	return 0;
}
