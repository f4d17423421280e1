/* The microVM's guest kernel kit -- Debian's cloud kernel unpacked for QEMU, and the initramfs. */

/*
 * The kernel comes from the host's apt sources, like the image's packages:
 * apt-cache names the package the metapackage depends on, apt-get
 * downloads it and dpkg-deb unpacks it, all as root into a temporary
 * directory beside the kit.  What comes out of the package is trusted as
 * much as the packages an image installs, but is still read with bounds:
 * the bzImage header, the LZ4 blocks and the modules' ELF sections are
 * checked before use, and the unpacked tree is walked without following
 * symlinks.
 */
#include "vm/kit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <lz4.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "digest.h"
#include "host/tool.h"
#include "util.h"

#define KIT_APT_CACHE "/usr/bin/apt-cache"
#define KIT_APT_GET   "/usr/bin/apt-get"
#define KIT_DPKG_DEB  "/usr/bin/dpkg-deb"
#define KIT_SH	      "/bin/sh"

#define QUERY_TIMEOUT_S	   300
#define DOWNLOAD_TIMEOUT_S 1800
#define UNPACK_TIMEOUT_S   900
#define CAPTURE_MAX	   (64u << 10)	 /* bytes of a tool's output kept for parsing */
#define BZIMAGE_MAX	   (256u << 20)	 /* bytes of boot/vmlinuz-* */
#define VMLINUX_MAX	   (1ull << 30)	 /* bytes of the decompressed kernel */
#define LZ4_BLOCK_MAX	   (8u << 20)	 /* decompressed bytes of one legacy LZ4 block */
#define LZ4_LEGACY_MAGIC   0x184c2102u	 /* also found between concatenated streams */
#define MODULE_MAX	   (64u << 20)	 /* bytes of one .ko */
#define MODULES_MAX	   64		 /* modules in the kit, dependencies included */
#define MODULE_NAME_MAX	   56		 /* the kernel's MODULE_NAME_LEN, NUL included */
#define DEPENDS_MAX	   1024		 /* bytes of one module's depends= value */
#define KO_INDEX_MAX	   (1u << 16)	 /* .ko files in the package */
#define TREE_DEPTH_MAX	   32		 /* directories below lib/modules/<release>/kernel */
#define CPIO_FILE_MAX	   0xffffffffull /* newc's size field is 32 bits */
#define INITRAMFS_MODULES  256		 /* files in modules_dir */

/* What the guest needs, in the order they are wanted; dependencies they
 * name (depends=) are added before them. */
static const char *const kit_modules[] = {
    "virtio_ring", "virtio",   "virtio_mmio", "virtio_blk", "virtio_console",
    "virtio-rng",  "squashfs", "overlay",     "erofs",	    NULL,
};

/* ---- small helpers ---- */

static uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const unsigned char *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The type (DT_*) of the entry de of d, asking the file system when
 * readdir did not say; symlinks are not followed. */
static unsigned char entry_type(DIR *d, const struct dirent *de)
{
	struct stat st;

	if (de->d_type != DT_UNKNOWN)
		return de->d_type;
	if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return DT_UNKNOWN;
	return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
}

/* ---- host tools ---- */

/*
 * Run a host tool as root (tool_run) with its output, stdout and
 * stderr together, going to a memfd first: copied to log_fd afterwards and
 * its first CAPTURE_MAX - 1 bytes left NUL-terminated in out (CAPTURE_MAX
 * bytes, or NULL).  When the tool fails, apt's first error line ends the
 * message.  Returns 0 when the tool exited 0.
 */
static int run_captured(char *const argv[], int log_fd, unsigned timeout_s, char *out,
			struct err *e)
{
	char buf[8192], reason[512], msg[sizeof(e->msg)];
	size_t kept = 0;
	int fd = memfd_create("proctor-kit", MFD_CLOEXEC), rc;

	if (fd < 0)
		return err_set(e, errno, "memfd_create");
	tool_log_cmd(log_fd, "running", argv);
	rc = tool_run(argv, fd, timeout_s, e);
	if (lseek(fd, 0, SEEK_SET) < 0) {
		close(fd);
		return rc < 0 ? rc : err_set(e, errno, "read %s's output", argv[0]);
	}
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (out && kept + 1 < CAPTURE_MAX) {
			size_t take =
			    (size_t)n < CAPTURE_MAX - 1 - kept ? (size_t)n : CAPTURE_MAX - 1 - kept;
			memcpy(out + kept, buf, take);
			kept += take;
		}
		(void)write_all(log_fd, buf, (size_t)n);
	}
	close(fd);
	if (out)
		out[kept] = '\0';
	if (rc < 0 && out) {
		tool_apt_error(out, reason, sizeof(reason));
		if (reason[0]) {
			snprintf(msg, sizeof(msg), "%s", e->msg);
			err_set(e, 0, "%s: %s", msg, reason);
		}
	}
	return rc;
}

/* A Debian package name (policy 5.6.1): [a-z0-9][a-z0-9+.-]+. */
static bool valid_package(const char *s, size_t len)
{
	if (len < 2 || len > 128 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9')))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '+' ||
		      s[i] == '.' || s[i] == '-'))
			return false;
	return true;
}

/* A Debian version (policy 5.6.12) as far as its characters go. */
static bool valid_version(const char *s, size_t len)
{
	if (len < 1 || len > 128 || !(s[0] >= '0' && s[0] <= '9'))
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || strchr(".+~:-", s[i])))
			return false;
	return true;
}

/* The kernel package VM_KERNEL_METAPACKAGE depends on, in its candidate
 * version: "  Depends: linux-image-6.1.0-57-cloud-amd64". */
static int kernel_package(int log_fd, char ret[129], char *out, struct err *e)
{
	char *argv[] = {(char *)KIT_APT_CACHE, (char *)"depends", (char *)"--important",
			(char *)VM_KERNEL_METAPACKAGE, NULL};

	if (run_captured(argv, log_fd, QUERY_TIMEOUT_S, out, e) < 0)
		return err_classify(e, ERR_BUILD_FAILED);
	for (char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		l += strspn(l, " |");
		if (strncmp(l, "Depends: linux-image-", 21) != 0)
			continue;
		l += 9;
		size_t len = strcspn(l, "\n");
		if (!valid_package(l, len))
			continue;
		memcpy(ret, l, len);
		ret[len] = '\0';
		return 0;
	}
	return err_setk(e, ERR_BUILD_FAILED, 0, "%s depends on no linux-image-* package",
			VM_KERNEL_METAPACKAGE);
}

/* Download pkg's candidate into the directory dl (apt-get download writes
 * into its working directory) and name the .deb in ret. */
static int download(const char *pkg, const char *dl, int log_fd, char ret[NAME_MAX + 1], char *out,
		    struct err *e)
{
	/* The directory is the shell's $1, never part of its script. */
	char *argv[] = {
	    (char *)KIT_SH,	(char *)"-c", (char *)"cd -- \"$1\" && shift && exec \"$@\"",
	    (char *)"sh",	(char *)dl,   (char *)KIT_APT_GET,
	    (char *)"-q",	(char *)"-o", (char *)"APT::Sandbox::User=root",
	    (char *)"download", (char *)pkg,  NULL};
	struct dirent *de;
	unsigned found = 0;
	DIR *d;

	if (run_captured(argv, log_fd, DOWNLOAD_TIMEOUT_S, out, e) < 0) {
		err_wrap(e, "download %s", pkg);
		return err_classify(e, ERR_BUILD_FAILED);
	}
	d = opendir(dl);
	if (!d)
		return err_set(e, errno, "open '%s'", dl);
	while ((de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name);
		if (entry_type(d, de) == DT_REG && len > 4 &&
		    strcmp(de->d_name + len - 4, ".deb") == 0) {
			snprintf(ret, NAME_MAX + 1, "%s", de->d_name);
			found++;
		}
	}
	closedir(d);
	if (found != 1)
		return err_set(e, 0, "apt-get download %s left %u .deb files, not 1", pkg, found);
	return 0;
}

/* The only entry of the directory `path` below dirfd, a directory itself:
 * lib/modules/<release>. */
static int only_subdir(int dirfd, const char *path, char ret[NAME_MAX + 1], struct err *e)
{
	int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct dirent *de;
	unsigned n = 0;
	DIR *d;

	if (fd < 0 || !(d = fdopendir(fd))) {
		xclose(fd);
		return err_set(e, errno, "the package has no %s", path);
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (entry_type(d, de) == DT_DIR && de->d_name[0] != '.')
			snprintf(ret, NAME_MAX + 1, "%s", de->d_name);
		n++;
	}
	closedir(d);
	if (n != 1 || !ret[0])
		return err_set(e, 0, "the package's %s holds %u entries, not one directory", path,
			       n);
	return 0;
}

/* ---- the bzImage ---- */

/* The compression a kernel payload starts with (lib/decompress.c), or NULL. */
static const char *payload_format(const unsigned char *p, size_t len)
{
	static const struct {
		const char *name;
		unsigned char magic[6];
		size_t len;
	} formats[] = {
	    {"LZ4", {0x02, 0x21, 0x4c, 0x18}, 4},
	    {"gzip", {0x1f, 0x8b}, 2},
	    {"gzip", {0x1f, 0x9e}, 2},
	    {"bzip2", {'B', 'Z', 'h'}, 3},
	    {"LZMA", {0x5d, 0x00, 0x00}, 3},
	    {"XZ", {0xfd, '7', 'z', 'X', 'Z', 0x00}, 6},
	    {"LZO", {0x89, 'L', 'Z', 'O'}, 4},
	    {"zstd", {0x28, 0xb5, 0x2f, 0xfd}, 4},
	};

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (len >= formats[i].len && memcmp(p, formats[i].magic, formats[i].len) == 0)
			return formats[i].name;
	return NULL;
}

/*
 * LZ4's legacy format after its magic: blocks of [le32 compressed size]
 * [block], each decompressing to at most LZ4_BLOCK_MAX bytes, and maybe
 * the magic again between concatenated streams.  The kernel's build
 * appends the decompressed size as le32, which reads as a block size larger
 * than what is left: that ends the stream, and must match.
 */
static int lz4_legacy(const unsigned char *p, size_t len, int out_fd, struct err *e)
{
	unsigned char *dst = malloc(LZ4_BLOCK_MAX);
	uint64_t total = 0;
	size_t pos = 0;
	int rc = -1;

	if (!dst)
		return err_set(e, ENOMEM, "LZ4 buffer");
	while (len - pos >= 4) {
		uint32_t bs = le32(p + pos);
		if (bs == LZ4_LEGACY_MAGIC) {
			pos += 4;
			continue;
		}
		if (bs > len - pos - 4)
			break;
		if (bs == 0 || bs > (uint32_t)LZ4_compressBound(LZ4_BLOCK_MAX)) {
			err_set(e, 0, "corrupt LZ4 block size %u at payload offset %zu", bs, pos);
			goto out_free;
		}
		int n = LZ4_decompress_safe((const char *)p + pos + 4, (char *)dst, (int)bs,
					    LZ4_BLOCK_MAX);
		if (n < 0) {
			err_set(e, 0, "the LZ4 block at payload offset %zu does not decompress",
				pos);
			goto out_free;
		}
		if (total == 0 && (n < 4 || memcmp(dst, "\177ELF", 4) != 0)) {
			err_set(e, 0, "the decompressed kernel is not an ELF file");
			goto out_free;
		}
		total += (uint64_t)n;
		if (total > VMLINUX_MAX) {
			err_set(e, 0, "the decompressed kernel is larger than %llu bytes",
				(unsigned long long)VMLINUX_MAX);
			goto out_free;
		}
		if (write_all(out_fd, dst, (size_t)n) < 0) {
			err_set(e, errno, "write the kernel");
			goto out_free;
		}
		pos += 4 + (size_t)bs;
	}
	if (total == 0) {
		err_set(e, 0, "the LZ4 payload holds no data");
		goto out_free;
	}
	if (len - pos == 4 && le32(p + pos) != (uint32_t)total) {
		err_set(e, 0, "the payload decompressed to %llu bytes, its trailer says %u",
			(unsigned long long)total, le32(p + pos));
		goto out_free;
	}
	if (len - pos != 4 && len - pos != 0) {
		err_set(e, 0, "%zu stray bytes after the last LZ4 block", len - pos);
		goto out_free;
	}
	rc = 0;
out_free:
	free(dst);
	return rc;
}

int vm_vmlinux_extract(const void *bzimage, size_t len, int out_fd, struct err *e)
{
	const unsigned char *b = bzimage;
	const char *format;

	/* Documentation/arch/x86/boot.rst: the real-mode header at 0x1f1,
	 * "HdrS" at 0x202, payload_offset/payload_length since protocol 2.08,
	 * counted from the protected-mode code after the setup sectors. */
	if (len < 0x250 || memcmp(b + 0x202, "HdrS", 4) != 0)
		return err_set(e, 0, "not a bzImage (no setup header)");
	if (le16(b + 0x206) < 0x208)
		return err_set(e, 0, "bzImage boot protocol %u.%02u is older than 2.08", b[0x207],
			       b[0x206]);
	uint64_t setup = ((uint64_t)(b[0x1f1] ? b[0x1f1] : 4) + 1) * 512;
	uint64_t off = setup + le32(b + 0x248), plen = le32(b + 0x24c);
	if (off > len || plen > len - off)
		return err_set(e, 0,
			       "the bzImage's payload (%llu bytes at %llu) runs past its end (%zu)",
			       (unsigned long long)plen, (unsigned long long)off, len);
	format = payload_format(b + off, plen);
	if (!format)
		return err_set(e, 0, "the bzImage's payload is in an unknown format");
	if (strcmp(format, "LZ4") != 0)
		return err_set(
		    e, 0, "the bzImage's payload is %s-compressed; only LZ4 is supported", format);
	if (lz4_legacy(b + off + 4, plen - 4, out_fd, e) < 0)
		return err_wrap(e, "decompress the bzImage");
	return 0;
}

/* ---- modules ---- */

/* A .ko file of the package: its module name ('-' as '_') and path below
 * lib/modules/<release>/kernel. */
struct ko {
	char name[MODULE_NAME_MAX];
	char *path;
};

struct modules {
	struct ko *ko; /* every .ko of the package */
	size_t n_ko, cap_ko;
	int kernel_fd; /* lib/modules/<release>/kernel */
	int out_fd;    /* out_dir/modules */
	char name[MODULES_MAX][MODULE_NAME_MAX];
	bool done[MODULES_MAX]; /* false: being visited (its dependencies are) */
	size_t n;
	char order[MODULES_MAX * (NAME_MAX + 2)];
	size_t order_len;
};

static void module_name(const char *s, size_t len, char ret[MODULE_NAME_MAX])
{
	size_t i = 0;

	for (; i < len && i + 1 < MODULE_NAME_MAX; i++)
		ret[i] = s[i] == '-' ? '_' : s[i];
	ret[i] = '\0';
}

/* Index every *.ko below fd (path: its path from the kernel directory). */
static int index_ko(struct modules *m, int fd, const char *path, unsigned depth, struct err *e)
{
	struct dirent *de;
	int rc = 0;
	DIR *d;

	if (depth > TREE_DEPTH_MAX)
		return err_set(e, 0, "'%s' is nested too deep", path);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_set(e, errno, "open '%s'", path);
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		char sub[PATH_MAX];
		size_t len = strlen(de->d_name);
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s%s%s", path, path[0] ? "/" : "",
				     de->d_name) >= sizeof(sub)) {
			rc = err_set(e, ENAMETOOLONG, "'%s'", path);
			break;
		}
		unsigned char type = entry_type(d, de);
		if (type == DT_DIR) {
			int subfd = openat(dirfd(d), de->d_name,
					   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (subfd < 0)
				rc = err_set(e, errno, "open '%s'", sub);
			else
				rc = index_ko(m, subfd, sub, depth + 1, e);
			continue;
		}
		if (type != DT_REG || len <= 3 || len - 3 >= MODULE_NAME_MAX ||
		    strcmp(de->d_name + len - 3, ".ko") != 0)
			continue;
		if (m->n_ko == m->cap_ko) {
			size_t cap = m->cap_ko ? 2 * m->cap_ko : 256;
			struct ko *v =
			    cap <= KO_INDEX_MAX ? realloc(m->ko, cap * sizeof(*v)) : NULL;
			if (!v) {
				rc = err_set(e, cap <= KO_INDEX_MAX ? ENOMEM : 0,
					     "more than %u modules in the package", KO_INDEX_MAX);
				break;
			}
			m->ko = v;
			m->cap_ko = cap;
		}
		struct ko *k = &m->ko[m->n_ko];
		module_name(de->d_name, len - 3, k->name);
		k->path = strdup(sub);
		if (!k->path) {
			rc = err_set(e, ENOMEM, "index the modules");
			break;
		}
		m->n_ko++;
	}
	closedir(d);
	return rc;
}

/* The value of "depends=" in the .modinfo section of the ELF module
 * (empty when there is none), NUL-terminated in ret. */
static int modinfo_depends(const unsigned char *b, size_t len, char ret[DEPENDS_MAX], struct err *e)
{
	ret[0] = '\0';
	if (len < 64 || memcmp(b, "\177ELF", 4) != 0 || b[4] != 2 || b[5] != 1)
		return err_set(e, 0, "not a 64-bit little-endian ELF file");
	uint64_t shoff = le64(b + 0x28);
	uint16_t shentsize = le16(b + 0x3a), shnum = le16(b + 0x3c), shstrndx = le16(b + 0x3e);
	if (shentsize != 64 || shoff > len || (uint64_t)shnum * 64 > len - shoff ||
	    shstrndx >= shnum)
		return err_set(e, 0, "bad ELF section headers");
	const unsigned char *sh = b + shoff, *strsh = sh + (size_t)shstrndx * 64;
	uint64_t stroff = le64(strsh + 0x18), strsize = le64(strsh + 0x20);
	if (stroff > len || strsize > len - stroff)
		return err_set(e, 0, "bad ELF section name table");
	for (uint16_t i = 0; i < shnum; i++) {
		const unsigned char *s = sh + (size_t)i * 64;
		uint32_t name = le32(s);
		uint64_t off = le64(s + 0x18), size = le64(s + 0x20);
		if (name >= strsize || strsize - name < sizeof(".modinfo") ||
		    memcmp(b + stroff + name, ".modinfo", sizeof(".modinfo")) != 0)
			continue;
		if (off > len || size > len - off)
			return err_set(e, 0, "bad .modinfo section");
		/* NUL-separated "key=value" strings. */
		const char *p = (const char *)b + off, *end = p + size;
		while (p < end) {
			const char *nul = memchr(p, '\0', (size_t)(end - p));
			size_t n = nul ? (size_t)(nul - p) : (size_t)(end - p);
			if (n >= 8 && memcmp(p, "depends=", 8) == 0) {
				if (n - 8 >= DEPENDS_MAX)
					return err_set(e, 0, "depends= is too long");
				memcpy(ret, p + 8, n - 8);
				ret[n - 8] = '\0';
				return 0;
			}
			p += n + 1;
		}
		return 0;
	}
	return err_set(e, 0, "no .modinfo section (not a kernel module)");
}

/* Add module `want` to the kit after the modules it depends on (depth:
 * how many modules wait for it). */
static int add_module(struct modules *m, const char *want, unsigned depth, struct err *e)
{
	char name[MODULE_NAME_MAX], deps[DEPENDS_MAX];
	const struct ko *k = NULL;
	char *buf = NULL;
	size_t len, slot;
	int rc = -1;

	module_name(want, strlen(want), name);
	for (size_t i = 0; i < m->n; i++) {
		if (strcmp(m->name[i], name) != 0)
			continue;
		if (m->done[i])
			return 0;
		return err_set(e, 0, "module '%s' depends on itself (a cycle of depends=)", name);
	}
	if (m->n == MODULES_MAX || depth > MODULES_MAX)
		return err_set(e, 0, "more than %u modules", MODULES_MAX);
	for (size_t i = 0; i < m->n_ko; i++) {
		if (strcmp(m->ko[i].name, name) != 0)
			continue;
		if (k)
			return err_set(e, 0, "module '%s' is both '%s' and '%s'", name, k->path,
				       m->ko[i].path);
		k = &m->ko[i];
	}
	if (!k)
		return err_set(e, 0, "module '%s' is not in the package", want);
	slot = m->n++;
	snprintf(m->name[slot], MODULE_NAME_MAX, "%s", name);
	m->done[slot] = false;
	if (read_whole_at(m->kernel_fd, k->path, O_NOFOLLOW, MODULE_MAX, &buf, &len, e) < 0 ||
	    modinfo_depends((const unsigned char *)buf, len, deps, e) < 0) {
		err_wrap(e, "module '%s'", k->path);
		goto out_free;
	}
	for (char *d = deps, *next; *d; d = next) {
		size_t n = strcspn(d, ",");
		next = d + n + (d[n] == ',');
		d[n] = '\0';
		if (*d && add_module(m, d, depth + 1, e) < 0) {
			err_wrap(e, "module '%s'", name);
			goto out_free;
		}
	}
	const char *file = strrchr(k->path, '/') ? strrchr(k->path, '/') + 1 : k->path;
	if (write_new_at(m->out_fd, file, 0644, buf, len, e) < 0)
		goto out_free;
	m->order_len += (size_t)snprintf(m->order + m->order_len, sizeof(m->order) - m->order_len,
					 "%s\n", file);
	m->done[slot] = true;
	rc = 0;
out_free:
	free(buf);
	return rc;
}

/* Copy kit_modules and their dependencies from the unpacked package (xfd)
 * into out_fd's modules/, with modules/order. */
static int copy_modules(int xfd, const char *release, int out_fd, struct err *e)
{
	struct modules *m = calloc(1, sizeof(*m));
	char kernel[PATH_MAX];
	int rc = -1;

	if (!m)
		return err_set(e, ENOMEM, "copy the modules");
	m->kernel_fd = m->out_fd = -1;
	snprintf(kernel, sizeof(kernel), "lib/modules/%s/kernel", release);
	if (mkdirat(out_fd, "modules", 0755) < 0 ||
	    (m->out_fd =
		 openat(out_fd, "modules", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fchmod(m->out_fd, 0755) < 0) {
		err_set(e, errno, "make modules/");
		goto out_free;
	}
	m->kernel_fd = open_beneath(xfd, kernel, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (m->kernel_fd < 0) {
		err_set(e, errno, "open the package's %s", kernel);
		goto out_free;
	}
	int walk_fd = openat(m->kernel_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (walk_fd < 0) {
		err_set(e, errno, "open the package's %s", kernel);
		goto out_free;
	}
	if (index_ko(m, walk_fd, "", 0, e) < 0)
		goto out_free;
	for (size_t i = 0; kit_modules[i]; i++)
		if (add_module(m, kit_modules[i], 0, e) < 0)
			goto out_free;
	rc = write_new_at(m->out_fd, "order", 0644, m->order, m->order_len, e);
out_free:
	xclose(m->kernel_fd);
	xclose(m->out_fd);
	for (size_t i = 0; i < m->n_ko; i++)
		free(m->ko[i].path);
	free(m->ko);
	free(m);
	return rc;
}

/* ---- the kit ---- */

struct fetch {
	char parent[PATH_MAX], base[NAME_MAX + 1], tmp[PATH_MAX], x[PATH_MAX + 8];
	char deb_path[PATH_MAX + NAME_MAX + 2];
	char pkg[129], version[129], release[NAME_MAX + 1], deb[NAME_MAX + 1], sha[65];
	char out[CAPTURE_MAX];
};

/* The kit's contents, once out_dir (out_fd, empty) and the temporary
 * directory f->tmp exist; the caller removes both as needed. */
static int fetch_into(struct fetch *f, const char *out_dir, int out_fd, int log_fd, struct err *e)
{
	char vmlinuz[PATH_MAX], vmlinux[PATH_MAX];
	char *bz = NULL;
	json_t *j = NULL;
	char *text = NULL;
	struct digest *d;
	size_t bz_len;
	int xfd = -1, fd = -1, rc;

	if ((rc = kernel_package(log_fd, f->pkg, f->out, e)) < 0 ||
	    (rc = download(f->pkg, f->tmp, log_fd, f->deb, f->out, e)) < 0)
		return rc;
	rc = -1;
	snprintf(f->deb_path, sizeof(f->deb_path), "%s/%s", f->tmp, f->deb);
	snprintf(f->x, sizeof(f->x), "%s/x", f->tmp);
	char *version_argv[] = {(char *)KIT_DPKG_DEB, (char *)"-f", f->deb_path, (char *)"Version",
				NULL};
	char *unpack_argv[] = {(char *)KIT_DPKG_DEB, (char *)"-x", f->deb_path, f->x, NULL};
	if (run_captured(version_argv, log_fd, QUERY_TIMEOUT_S, f->out, e) < 0)
		goto out;
	size_t vlen = strcspn(f->out, "\n");
	if (!valid_version(f->out, vlen)) {
		err_set(e, 0, "%s: no valid Version field", f->deb);
		goto out;
	}
	memcpy(f->version, f->out, vlen);
	f->version[vlen] = '\0';
	if (mkdir(f->x, 0700) < 0) {
		err_set(e, errno, "mkdir '%s'", f->x);
		goto out;
	}
	if (run_captured(unpack_argv, log_fd, UNPACK_TIMEOUT_S, NULL, e) < 0) {
		err_wrap(e, "unpack %s", f->deb);
		goto out;
	}
	xfd = open(f->x, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (xfd < 0) {
		err_set(e, errno, "open '%s'", f->x);
		goto out;
	}
	if (only_subdir(xfd, "lib/modules", f->release, e) < 0)
		goto out;
	snprintf(vmlinuz, sizeof(vmlinuz), "boot/vmlinuz-%s", f->release);
	fd = openat(out_fd, "vmlinux", O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		err_set(e, errno, "create vmlinux");
		goto out;
	}
	if (read_whole_at(xfd, vmlinuz, O_NOFOLLOW, BZIMAGE_MAX, &bz, &bz_len, e) < 0 ||
	    vm_vmlinux_extract(bz, bz_len, fd, e) < 0) {
		err_wrap(e, "%s", vmlinuz);
		goto out;
	}
	if (fsync(fd) < 0) {
		err_set(e, errno, "write vmlinux");
		goto out;
	}
	snprintf(vmlinux, sizeof(vmlinux), "%s/vmlinux", out_dir);
	if (!(d = digest_new())) {
		err_set(e, ENOMEM, "digest vmlinux");
		goto out;
	}
	if (digest_update_file(d, vmlinux, e) < 0) {
		digest_free(d);
		goto out;
	}
	digest_final(d, f->sha);
	if (copy_modules(xfd, f->release, out_fd, e) < 0) {
		err_wrap(e, "copy the modules");
		goto out;
	}
	j = json_pack("{s:s, s:s, s:s, s:s}", "package", f->pkg, "version", f->version, "release",
		      f->release, "vmlinux_sha256", f->sha);
	text = j ? json_dumps(j, JSON_INDENT(2)) : NULL;
	if (!text) {
		err_set(e, ENOMEM, "kernel.json");
		goto out;
	}
	size_t tlen = strlen(text);
	text[tlen] = '\n'; /* json_dumps' NUL becomes the last line's end */
	if (write_new_at(out_fd, "kernel.json", 0644, text, tlen + 1, e) < 0)
		goto out;
	dprintf(log_fd, "proctor: guest kernel %s %s (%s), vmlinux sha256 %s\n", f->pkg, f->version,
		f->release, f->sha);
	rc = 0;
out:
	free(text);
	json_decref(j);
	free(bz);
	xclose(fd);
	xclose(xfd);
	return rc;
}

int vm_kernel_fetch(const char *out_dir, int log_fd, struct err *e)
{
	static const char *const tools[] = {KIT_APT_CACHE, KIT_APT_GET, KIT_DPKG_DEB, KIT_SH, NULL};
	struct fetch *f = calloc(1, sizeof(*f));
	int parent_fd = -1, out_fd = -1, rc = -1;
	bool made = false;
	struct err ignored;
	size_t len = strlen(out_dir);

	if (!f)
		return err_set(e, ENOMEM, "fetch the guest kernel");
	for (size_t i = 0; tools[i]; i++) {
		if (access(tools[i], X_OK) < 0) {
			err_set(e, errno, "%s", tools[i]);
			goto out;
		}
	}
	while (len > 1 && out_dir[len - 1] == '/')
		len--;
	const char *slash = memrchr(out_dir, '/', len);
	size_t base_len = slash ? len - (size_t)(slash + 1 - out_dir) : len;
	size_t parent_len = !slash ? 1 : slash == out_dir ? 1 : (size_t)(slash - out_dir);
	if (len >= PATH_MAX - 16 || base_len == 0 || base_len > NAME_MAX) {
		err_set(e, ENAMETOOLONG, "'%s'", out_dir);
		goto out;
	}
	memcpy(f->parent, slash ? out_dir : ".", parent_len);
	memcpy(f->base, out_dir + len - base_len, base_len);
	if (strcmp(f->base, ".") == 0 || strcmp(f->base, "..") == 0) {
		err_set(e, EINVAL, "'%s'", out_dir);
		goto out;
	}
	parent_fd = open(f->parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent_fd < 0) {
		err_set(e, errno, "open '%s'", f->parent);
		goto out;
	}
	if (mkdirat(parent_fd, f->base, 0755) < 0) {
		err_set(e, errno, "mkdir '%s'", out_dir);
		goto out;
	}
	made = true;
	out_fd = openat(parent_fd, f->base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (out_fd < 0 || fchmod(out_fd, 0755) < 0) {
		err_set(e, errno, "open '%s'", out_dir);
		goto out;
	}
	snprintf(f->tmp, sizeof(f->tmp), "%s/.kit-XXXXXX", f->parent);
	if (!mkdtemp(f->tmp)) {
		f->tmp[0] = '\0';
		err_set(e, errno, "make a download directory beside '%s'", out_dir);
		goto out;
	}
	rc = fetch_into(f, out_dir, out_fd, log_fd, e);
out:
	if (f->tmp[0] && rm_tree_at(parent_fd, strrchr(f->tmp, '/') + 1, &ignored) < 0)
		dprintf(log_fd, "proctor: remove '%s': %s\n", f->tmp, ignored.msg);
	xclose(out_fd);
	if (rc < 0 && made)
		rm_tree_at(parent_fd, f->base, &ignored);
	xclose(parent_fd);
	free(f);
	return rc;
}

/* ---- the initramfs ---- */

/* One "newc" header (SUSv2 cpio with 8-hex-digit fields) and its name,
 * padded to 4 bytes; uid, gid and mtime 0. */
static int cpio_header(int fd, uint32_t ino, uint32_t mode, uint32_t nlink, uint64_t size,
		       uint32_t rmajor, uint32_t rminor, const char *name, struct err *e)
{
	char h[112 + PATH_MAX + 4];
	size_t namesize = strlen(name) + 1;
	int n;

	if (namesize > PATH_MAX || size > CPIO_FILE_MAX)
		return err_set(e, EFBIG, "'%s' does not fit in a cpio archive", name);
	n = snprintf(h, sizeof(h), "070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		     ino, mode, 0u, 0u, nlink, 0u, (uint32_t)size, 0u, 0u, rmajor, rminor,
		     (uint32_t)namesize, 0u);
	memcpy(h + n, name, namesize);
	n += (int)namesize;
	while (n % 4)
		h[n++] = '\0';
	if (write_all(fd, h, (size_t)n) < 0)
		return err_set(e, errno, "write the initramfs");
	return 0;
}

/* A regular file as cpio entry `name` from the open file src. */
static int cpio_file(int fd, uint32_t ino, uint32_t mode, const char *name, int src,
		     const char *what, struct err *e)
{
	static const char zero[4];
	char buf[65536];
	struct stat st;
	uint64_t left;

	if (fstat(src, &st) < 0)
		return err_set(e, errno, "stat '%s'", what);
	if (!S_ISREG(st.st_mode))
		return err_set(e, 0, "'%s' is not a regular file", what);
	if (cpio_header(fd, ino, S_IFREG | mode, 1, (uint64_t)st.st_size, 0, 0, name, e) < 0)
		return -1;
	for (left = (uint64_t)st.st_size; left > 0;) {
		ssize_t n = read(src, buf, left < sizeof(buf) ? (size_t)left : sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return err_set(e, n < 0 ? errno : 0, "read '%s'%s", what,
				       n < 0 ? "" : ": it shrank");
		if (write_all(fd, buf, (size_t)n) < 0)
			return err_set(e, errno, "write the initramfs");
		left -= (uint64_t)n;
	}
	if (st.st_size % 4 && write_all(fd, zero, 4 - (size_t)(st.st_size % 4)) < 0)
		return err_set(e, errno, "write the initramfs");
	return 0;
}

int vm_initramfs_write(const char *path, const char *agent_path, const char *modules_dir,
		       struct err *e)
{
	static const char *const dirs[] = {"dev", "proc", "sys", "lib", "lib/modules", "newroot"};
	char tmp[PATH_MAX], name[PATH_MAX];
	char **files = NULL;
	size_t n_files = 0;
	int fd = -1, src = -1, mfd = -1, rc = -1;
	uint32_t ino = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return err_set(e, ENAMETOOLONG, "'%s'", path);
	mfd = open(modules_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (mfd < 0)
		return err_set(e, errno, "open '%s'", modules_dir);
	if (dir_names(mfd, INITRAMFS_MODULES, &files, &n_files, e) < 0) {
		err_wrap(e, "'%s'", modules_dir);
		goto out_close;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		err_set(e, errno, "create '%s'", tmp);
		goto out_close;
	}
	if (fchmod(fd, 0644) < 0) { /* whatever the umask */
		err_set(e, errno, "chmod '%s'", tmp);
		goto out_unlink;
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (cpio_header(fd, ++ino, S_IFDIR | 0755, 2, 0, 0, 0, dirs[i], e) < 0)
			goto out_unlink;
		/* The kernel opens /dev/console for init's stdio before init runs. */
		if (strcmp(dirs[i], "dev") == 0 &&
		    cpio_header(fd, ++ino, S_IFCHR | 0600, 1, 0, 5, 1, "dev/console", e) < 0)
			goto out_unlink;
	}
	src = open(agent_path, O_RDONLY | O_CLOEXEC);
	if (src < 0) {
		err_set(e, errno, "open '%s'", agent_path);
		goto out_unlink;
	}
	if (cpio_file(fd, ++ino, 0755, "init", src, agent_path, e) < 0)
		goto out_unlink;
	src = xclose(src);
	for (size_t i = 0; i < n_files; i++) {
		snprintf(name, sizeof(name), "lib/modules/%s", files[i]);
		src = openat(mfd, files[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (src < 0) {
			err_set(e, errno, "open '%s/%s'", modules_dir, files[i]);
			goto out_unlink;
		}
		if (cpio_file(fd, ++ino, 0644, name, src, files[i], e) < 0) {
			err_wrap(e, "%s", modules_dir);
			goto out_unlink;
		}
		src = xclose(src);
	}
	if (cpio_header(fd, 0, 0, 1, 0, 0, 0, "TRAILER!!!", e) < 0)
		goto out_unlink;
	if (fsync(fd) < 0) {
		err_set(e, errno, "write '%s'", tmp);
		goto out_unlink;
	}
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) < 0) {
		err_set(e, errno, "rename '%s' to '%s'", tmp, path);
		goto out_unlink;
	}
	rc = 0;
out_unlink:
	if (rc < 0)
		unlink(tmp);
out_close:
	xclose(src);
	xclose(fd);
	xclose(mfd);
	free_names(files, n_files);
	return rc;
}
