/* Unit tests of the guest kernel kit (vm/kit.c): the initramfs read back by a cpio reader of
 * our own, and the bzImage extractor on synthetic LZ4-legacy kernels.  Nothing is downloaded. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <lz4.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "vm/kit.h"

/* ---- helpers ---- */

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* ---- a cpio "newc" reader ---- */

struct entry {
	char name[256];
	uint32_t ino, mode, uid, gid, nlink, mtime, size, rmajor, rminor;
	const unsigned char *data;
};

static uint32_t hex8(const unsigned char *p)
{
	char s[9];
	char *end;
	unsigned long v;

	memcpy(s, p, 8);
	s[8] = '\0';
	v = strtoul(s, &end, 16);
	assert_true(end == s + 8);
	return (uint32_t)v;
}

/* Parse the archive into at most cap entries (the trailer included, last);
 * every header, name and file padded to 4 bytes, nothing after the trailer. */
static size_t cpio_parse(const unsigned char *b, size_t len, struct entry *v, size_t cap)
{
	size_t pos = 0, n = 0;

	for (;;) {
		struct entry *x = &v[n];
		assert_true(n < cap);
		assert_true(pos % 4 == 0);
		assert_true(len - pos >= 110);
		assert_memory_equal(b + pos, "070701", 6);
		uint32_t f[13];
		for (int i = 0; i < 13; i++)
			f[i] = hex8(b + pos + 6 + 8 * i);
		x->ino = f[0];
		x->mode = f[1];
		x->uid = f[2];
		x->gid = f[3];
		x->nlink = f[4];
		x->mtime = f[5];
		x->size = f[6];
		x->rmajor = f[9];
		x->rminor = f[10];
		assert_int_equal(f[7], 0);  /* devmajor */
		assert_int_equal(f[8], 0);  /* devminor */
		assert_int_equal(f[12], 0); /* check */
		uint32_t namesize = f[11];
		assert_true(namesize >= 2 && namesize <= sizeof(x->name));
		assert_true(len - pos - 110 >= namesize);
		assert_int_equal(b[pos + 110 + namesize - 1], '\0');
		memcpy(x->name, b + pos + 110, namesize);
		pos = (pos + 110 + namesize + 3) & ~(size_t)3;
		assert_true(len - pos >= x->size);
		x->data = b + pos;
		pos = (pos + x->size + 3) & ~(size_t)3;
		n++;
		if (strcmp(x->name, "TRAILER!!!") == 0)
			break;
	}
	assert_int_equal(pos, len);
	return n;
}

/* ---- the initramfs ---- */

static void test_initramfs_parses_back_and_is_deterministic(void **state)
{
	(void)state;
	char *dir = harness_tmpdir();
	char agent[PATH_MAX], mods[PATH_MAX], out1[PATH_MAX], out2[PATH_MAX], tmp[PATH_MAX];
	static const char agent_bytes[] = "\177ELF fake agent, an odd length";
	static const char order[] = "b-mod.ko\na_mod.ko\n";
	unsigned char big[5001];
	struct entry v[32];
	struct err e;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7);
	snprintf(agent, sizeof(agent), "%s/agent", dir);
	snprintf(mods, sizeof(mods), "%s/modules", dir);
	snprintf(out1, sizeof(out1), "%s/one.cpio", dir);
	snprintf(out2, sizeof(out2), "%s/two.cpio", dir);
	harness_write(dir, "agent", agent_bytes, sizeof(agent_bytes) - 1);
	assert_int_equal(mkdir(mods, 0755), 0);
	/* Created out of name order: the archive sorts them. */
	harness_write(dir, "modules/order", order, sizeof(order) - 1);
	harness_write(dir, "modules/b-mod.ko", big, sizeof(big));
	harness_write(dir, "modules/a_mod.ko", "", 0);

	assert_int_equal(vm_initramfs_write(out1, agent, mods, &e), 0);
	assert_int_equal(vm_initramfs_write(out2, agent, mods, &e), 0);
	struct stat st;
	assert_int_equal(stat(out1, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	size_t len1, len2;
	unsigned char *a = (unsigned char *)harness_read(out1, &len1),
		      *b = (unsigned char *)harness_read(out2, &len2);
	assert_int_equal(len1, len2);
	assert_memory_equal(a, b, len1);

	static const struct {
		const char *name;
		uint32_t mode;
		const void *data;
		size_t size;
	} want[] = {
	    {"dev", S_IFDIR | 0755, NULL, 0},
	    {"dev/console", S_IFCHR | 0600, NULL, 0},
	    {"proc", S_IFDIR | 0755, NULL, 0},
	    {"sys", S_IFDIR | 0755, NULL, 0},
	    {"lib", S_IFDIR | 0755, NULL, 0},
	    {"lib/modules", S_IFDIR | 0755, NULL, 0},
	    {"newroot", S_IFDIR | 0755, NULL, 0},
	    {"init", S_IFREG | 0755, agent_bytes, sizeof(agent_bytes) - 1},
	    {"lib/modules/a_mod.ko", S_IFREG | 0644, "", 0},
	    {"lib/modules/b-mod.ko", S_IFREG | 0644, NULL, sizeof(big)},
	    {"lib/modules/order", S_IFREG | 0644, order, sizeof(order) - 1},
	    {"TRAILER!!!", 0, NULL, 0},
	};
	size_t n_want = sizeof(want) / sizeof(want[0]);
	size_t n = cpio_parse(a, len1, v, sizeof(v) / sizeof(v[0]));
	assert_int_equal(n, n_want);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(v[i].name, want[i].name);
		assert_int_equal(v[i].mode, want[i].mode);
		assert_int_equal(v[i].size, want[i].size);
		assert_int_equal(v[i].uid, 0);
		assert_int_equal(v[i].gid, 0);
		assert_int_equal(v[i].mtime, 0);
		if (i + 1 < n)
			assert_int_equal(v[i].ino, i + 1);
		if (want[i].data && want[i].size)
			assert_memory_equal(v[i].data, want[i].data, want[i].size);
		if (S_ISCHR(want[i].mode)) {
			assert_int_equal(v[i].rmajor, 5);
			assert_int_equal(v[i].rminor, 1);
		} else {
			assert_int_equal(v[i].rmajor, 0);
			assert_int_equal(v[i].rminor, 0);
		}
	}
	assert_memory_equal(v[9].data, big, sizeof(big));

	/* An existing archive is never replaced, and no .tmp is left. */
	assert_int_equal(vm_initramfs_write(out1, agent, mods, &e), -1);
	assert_int_equal(e.errnum, EEXIST);
	snprintf(tmp, sizeof(tmp), "%s.tmp", out1);
	assert_int_equal(access(tmp, F_OK), -1);
	free(a);
	free(b);
	harness_rm_tree(dir);
	free(dir);
}

static void test_initramfs_refuses_what_is_not_a_file(void **state)
{
	(void)state;
	char *dir = harness_tmpdir();
	char agent[PATH_MAX], mods[PATH_MAX], out[PATH_MAX], tmp[PATH_MAX], sub[PATH_MAX];
	struct err e;

	snprintf(agent, sizeof(agent), "%s/agent", dir);
	snprintf(mods, sizeof(mods), "%s/modules", dir);
	snprintf(out, sizeof(out), "%s/initramfs", dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", out);
	snprintf(sub, sizeof(sub), "%s/modules/sub", dir);
	harness_write(dir, "agent", "x", 1);
	assert_int_equal(mkdir(mods, 0755), 0);

	/* No agent. */
	assert_int_equal(vm_initramfs_write(out, "/nonexistent/agent", mods, &e), -1);
	assert_non_null(strstr(e.msg, "/nonexistent/agent"));
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(access(out, F_OK), -1);

	/* A directory among the modules. */
	assert_int_equal(mkdir(sub, 0755), 0);
	assert_int_equal(vm_initramfs_write(out, agent, mods, &e), -1);
	assert_non_null(strstr(e.msg, "'sub' is not a regular file"));
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(access(out, F_OK), -1);
	harness_rm_tree(dir);
	free(dir);
}

/* ---- the bzImage ---- */

#define BLOCK (8u << 20) /* LZ4 legacy block */

/* An ELF-looking kernel of len bytes, compressible but not trivially. */
static unsigned char *fake_kernel(size_t len)
{
	unsigned char *k = malloc(len);
	uint32_t x = 12345;

	assert_non_null(k);
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		k[i] = (unsigned char)((x >> 16) % 16);
	}
	memcpy(k, "\177ELF", 4);
	return k;
}

/*
 * A bzImage around kernel as an LZ4-legacy payload: setup_sects at 0x1f1
 * (0 meaning 4), "HdrS", protocol 2.15, payload_offset and payload_length
 * from the end of the setup sectors, then the kernel's size appended as
 * the kernel's build does.  payload_magic replaces the LZ4 magic when not
 * NULL (another compression).
 */
static unsigned char *fake_bzimage(const unsigned char *kernel, size_t klen, unsigned setup_sects,
				   const unsigned char *payload_magic, size_t *ret_len)
{
	size_t setup = ((setup_sects ? setup_sects : 4) + 1) * 512, gap = 100;
	size_t cap =
	    setup + gap + 4 + (klen / BLOCK + 1) * (4 + (size_t)LZ4_compressBound(BLOCK)) + 4 + 64;
	unsigned char *b = calloc(1, cap);
	size_t pos = setup + gap;

	assert_non_null(b);
	b[0x1f1] = (unsigned char)setup_sects;
	memcpy(b + 0x202, "HdrS", 4);
	b[0x206] = 0x0f;
	b[0x207] = 0x02;
	memcpy(b + pos, payload_magic ? payload_magic : (const unsigned char *)"\x02\x21\x4c\x18",
	       4);
	pos += 4;
	for (size_t off = 0; off < klen; off += BLOCK) {
		int in = (int)(klen - off < BLOCK ? klen - off : BLOCK);
		int n = LZ4_compress_default((const char *)kernel + off, (char *)b + pos + 4, in,
					     LZ4_compressBound(BLOCK));
		assert_true(n > 0);
		put_le32(b + pos, (uint32_t)n);
		pos += 4 + (size_t)n;
	}
	put_le32(b + pos, (uint32_t)klen);
	pos += 4;
	put_le32(b + 0x248, (uint32_t)gap);
	put_le32(b + 0x24c, (uint32_t)(pos - setup - gap));
	*ret_len = pos + 64; /* whatever follows the payload in the file */
	return b;
}

/* vm_vmlinux_extract into a memfd; its output (malloc'd) or NULL with e. */
static unsigned char *extract(const unsigned char *bz, size_t len, size_t *ret_len, struct err *e)
{
	int fd = memfd_create("test-kit", MFD_CLOEXEC);
	unsigned char *out = NULL;
	struct stat st;

	assert_true(fd >= 0);
	if (vm_vmlinux_extract(bz, len, fd, e) == 0) {
		assert_int_equal(fstat(fd, &st), 0);
		out = malloc((size_t)st.st_size + 1);
		assert_non_null(out);
		assert_int_equal(pread(fd, out, (size_t)st.st_size, 0), st.st_size);
		*ret_len = (size_t)st.st_size;
	}
	close(fd);
	return out;
}

static void test_vmlinux_extract_lz4_legacy_across_blocks(void **state)
{
	(void)state;
	/* Two full 8 MiB blocks and a partial one. */
	size_t klen = 2 * BLOCK + 12345, blen, olen;
	unsigned char *k = fake_kernel(klen);
	struct err e;

	for (unsigned sects = 0; sects <= 1; sects++) {
		unsigned char *bz = fake_bzimage(k, klen, sects, NULL, &blen);
		unsigned char *out = extract(bz, blen, &olen, &e);
		assert_non_null(out);
		assert_int_equal(olen, klen);
		assert_memory_equal(out, k, klen);
		free(out);
		free(bz);
	}
	free(k);
}

static void test_vmlinux_extract_refuses_other_formats_and_damage(void **state)
{
	(void)state;
	static const struct {
		const char *name;
		unsigned char magic[4];
	} formats[] = {
	    {"gzip", {0x1f, 0x8b, 0x08, 0x00}},
	    {"zstd", {0x28, 0xb5, 0x2f, 0xfd}},
	    {"bzip2", {'B', 'Z', 'h', '9'}},
	};
	size_t klen = 4096, blen, olen;
	unsigned char *k = fake_kernel(klen), *bz, *out;
	struct err e;
	char want[128];

	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		bz = fake_bzimage(k, klen, 2, formats[i].magic, &blen);
		out = extract(bz, blen, &olen, &e);
		assert_null(out);
		snprintf(want, sizeof(want), "is %s-compressed", formats[i].name);
		assert_non_null(strstr(e.msg, want));
		free(bz);
	}

	/* No setup header. */
	bz = fake_bzimage(k, klen, 2, NULL, &blen);
	memcpy(bz + 0x202, "NotS", 4);
	assert_null(extract(bz, blen, &olen, &e));
	assert_non_null(strstr(e.msg, "not a bzImage"));
	free(bz);

	/* A payload that runs past the end of the file. */
	bz = fake_bzimage(k, klen, 2, NULL, &blen);
	put_le32(bz + 0x24c, (uint32_t)blen);
	assert_null(extract(bz, blen, &olen, &e));
	assert_non_null(strstr(e.msg, "runs past its end"));
	free(bz);

	/* A kernel that is not ELF. */
	k[0] = 'X';
	bz = fake_bzimage(k, klen, 2, NULL, &blen);
	assert_null(extract(bz, blen, &olen, &e));
	assert_non_null(strstr(e.msg, "not an ELF file"));
	free(bz);
	k[0] = 0x7f;

	/* A trailer that disagrees with what came out. */
	bz = fake_bzimage(k, klen, 2, NULL, &blen);
	size_t plen = (size_t)bz[0x24c] | (size_t)bz[0x24d] << 8 | (size_t)bz[0x24e] << 16;
	put_le32(bz + 3 * 512 + 100 + plen - 4, (uint32_t)klen + 1);
	assert_null(extract(bz, blen, &olen, &e));
	assert_non_null(strstr(e.msg, "trailer says"));
	free(bz);

	/* A block cut short: its size field says less than it holds. */
	bz = fake_bzimage(k, klen, 2, NULL, &blen);
	unsigned char *size_field = bz + 3 * 512 + 100 + 4;
	put_le32(size_field, (uint32_t)(size_field[0] | size_field[1] << 8) - 7);
	assert_null(extract(bz, blen, &olen, &e));
	assert_non_null(strstr(e.msg, "does not decompress"));
	free(bz);
	free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_initramfs_parses_back_and_is_deterministic),
	    cmocka_unit_test(test_initramfs_refuses_what_is_not_a_file),
	    cmocka_unit_test(test_vmlinux_extract_lz4_legacy_across_blocks),
	    cmocka_unit_test(test_vmlinux_extract_refuses_other_formats_and_damage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
