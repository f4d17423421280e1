/* The sandbox interface: backend registry and `--isolation auto` selection. */
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "jail/jail.h"
#include "vm/vm.h"

static const struct sandbox_ops *const backends[] = {
	&jail_ops,
	&vm_ops,
};

void sandbox_get_skip(struct sandbox *sb, const char *name)
{
	if (sb->get_skipped++ == 0) {
		snprintf(sb->get_skipped_first, sizeof(sb->get_skipped_first), "%s", name);
		for (char *c = sb->get_skipped_first; *c; c++)
			if ((unsigned char)*c < 0x20 || *c == 0x7f)
				*c = '?';
	}
}

const struct sandbox_ops *const *sandbox_backends(size_t *count)
{
	*count = sizeof(backends) / sizeof(backends[0]);
	return backends;
}

const struct sandbox_ops *sandbox_backend(const char *name)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}

void sandbox_pool_drain(void)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i]->pool_drain)
			backends[i]->pool_drain();
}

void sandbox_pool_fill(void)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (backends[i]->pool_fill)
			backends[i]->pool_fill();
}

bool host_has_kvm(char *why, size_t why_len)
{
	int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (fd < 0) {
		snprintf(why, why_len, "/dev/kvm: %s", strerror(errno));
		return false;
	}
	close(fd);
	snprintf(why, why_len, "/dev/kvm is usable");
	return true;
}

int sandbox_select(const char *name, bool have_image, const struct sandbox_ops **ret, char *why,
		   size_t why_len, struct err *e)
{
	char kvm_why[128];
	struct err perr;

	if (strcmp(name, "auto") != 0) {
		const struct sandbox_ops *b = sandbox_backend(name);
		if (!b)
			return err_setk(e, ERR_USAGE, 0, "--isolation: unknown backend '%s' (auto, jail, vm)",
				       name);
		if (b->probe(&perr) < 0)
			return err_setk(e, ERR_UNAVAILABLE, 0, "isolation '%s' cannot work on this host: %s", name,
				       perr.msg);
		snprintf(why, why_len, "isolation '%s' was asked for", name);
		*ret = b;
		return 0;
	}

	/* A guest kernel is the stronger boundary, but under software
	 * emulation it is several times slower, and it boots only an image. */
	if (host_has_kvm(kvm_why, sizeof(kvm_why)) && have_image && vm_ops.probe(&perr) == 0) {
		snprintf(why, why_len, "auto picked 'vm': %s and an image is pinned", kvm_why);
		*ret = &vm_ops;
		return 0;
	}
	if (jail_ops.probe(&perr) == 0) {
		snprintf(why, why_len, "auto picked 'jail': %s",
			 !have_image ? "no image is pinned (a microVM boots only an image)"
				     : kvm_why);
		*ret = &jail_ops;
		return 0;
	}
	return err_setk(e, ERR_UNAVAILABLE, 0,
			"no isolation backend works on this host (run 'proctor doctor')");
}

/* Top-level names that are the system's, never the writable tree's: the
 * system tree, what the jail builds itself (etc, dev, proc, var with its
 * /var/tmp link), and the kernel's. */
static bool system_top(const char *name, size_t n)
{
	static const char *const tops[] = {"usr",    "etc",  "bin", "sbin", "lib", "lib32", "lib64",
					   "libx32", "proc", "dev", "sys",  "var", "run",   NULL};

	for (size_t i = 0; tops[i]; i++)
		if (strlen(tops[i]) == n && strncmp(name, tops[i], n) == 0)
			return true;
	return false;
}

int sandbox_path_rel(const char *sandbox_path, char *buf, size_t len, struct err *e)
{
	const char *rest;
	const char *top = "work";
	size_t top_len = 4;

	if (strcmp(sandbox_path, "/work") == 0 || strcmp(sandbox_path, "/work/") == 0 ||
	    strcmp(sandbox_path, "/tmp") == 0 || strcmp(sandbox_path, "/tmp/") == 0) {
		/* The top of the writable tree itself. */
		snprintf(buf, len, "%s", sandbox_path[1] == 'w' ? "work" : "tmp");
		return 0;
	}
	if (strncmp(sandbox_path, "/work/", 6) == 0) {
		rest = sandbox_path + 6;
	} else if (strncmp(sandbox_path, "/tmp/", 5) == 0) {
		rest = sandbox_path + 5;
		top = "tmp";
		top_len = 3;
	} else if (sandbox_path[0] == '/') {
		/* Any other top-level directory that is not the system's
		 * lives in the tree's "root" (/grader/x is root/grader/x). */
		while (*sandbox_path == '/' && sandbox_path[1] == '/')
			sandbox_path++;
		size_t n = strcspn(sandbox_path + 1, "/");
		if (n == 0)
			return err_setk(e, ERR_USAGE, 0,
					"sandbox path '/' is the system's root: name a file "
					"below /work, /tmp or a directory of your own");
		if (system_top(sandbox_path + 1, n))
			return err_setk(e, ERR_USAGE, 0,
					"sandbox path '%s' is in the system directory /%.*s, "
					"which is read-only",
					sandbox_path, (int)n, sandbox_path + 1);
		rest = sandbox_path + 1;
		top = SANDBOX_TREE_ROOT;
		top_len = strlen(SANDBOX_TREE_ROOT);
	} else {
		rest = sandbox_path;
	}
	if (rest[0] == '\0')
		return err_setk(e, ERR_USAGE, 0, "sandbox path '%s' names no file", sandbox_path);
	for (const char *p = rest; *p;) {
		size_t n = strcspn(p, "/");
		if ((n == 2 && p[0] == '.' && p[1] == '.') || (n == 1 && p[0] == '.'))
			return err_setk(e, ERR_USAGE, 0,
					"sandbox path '%s' has a '.' or '..' component",
					sandbox_path);
		p += n;
		while (*p == '/')
			p++;
	}
	size_t rest_len = strlen(rest);
	while (rest_len > 0 && rest[rest_len - 1] == '/')
		rest_len--; /* "/grader/" is the directory /grader */
	if ((size_t)snprintf(buf, len, "%.*s/%.*s", (int)top_len, top, (int)rest_len, rest) >= len)
		return err_setk(e, ERR_USAGE, ENAMETOOLONG, "sandbox path '%s'", sandbox_path);
	return 0;
}

