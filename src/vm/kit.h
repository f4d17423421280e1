/* The microVM's guest kernel kit: Debian's cloud kernel unpacked for QEMU, and the initramfs. */
#ifndef PROCTOR_VM_KIT_H
#define PROCTOR_VM_KIT_H

#include <stddef.h>

#include "err.h"

/* The Debian metapackage whose dependency is the kernel fetched. */
#define VM_KERNEL_METAPACKAGE "linux-image-cloud-amd64"

/*
 * Make out_dir (mode 0755; it must not exist yet) holding the guest kernel
 * of the package VM_KERNEL_METAPACKAGE depends on (its candidate version in
 * the host's apt sources), downloaded with apt-get and unpacked with
 * dpkg-deb, both run as root with their output to log_fd:
 *   vmlinux       the uncompressed ELF kernel out of boot/vmlinuz-* (its PVH
 *                 ELF note lets QEMU's -kernel boot it directly)
 *   modules/      the modules a microVM needs (virtio over MMIO, block,
 *                 console, rng; squashfs, overlay, erofs) and every module
 *                 they depend on, flat, with modules/order: their file
 *                 names, one a line, each after the modules it depends on
 *   kernel.json   {"package", "version", "release", "vmlinux_sha256"}
 * The download and the unpacked package live in a temporary directory
 * beside out_dir, removed on every path; on failure out_dir is removed too.
 * Needs root.  Returns 0 or -1: ERR_BUILD_FAILED when apt could not find
 * or download the kernel package (the host's apt sources, the mirror: the
 * image build's failure), else ERR_INTERNAL (a system call, the disk, a
 * host tool, a package that is not what a kernel package should be).
 */
int vm_kernel_fetch(const char *out_dir, int log_fd, struct err *e);

/*
 * Write the initramfs at path: an uncompressed cpio "newc" archive with the
 * directories dev, proc, sys, lib, lib/modules and newroot, the console
 * node dev/console (5,1), agent_path as /init (0755) and every regular
 * file of modules_dir (order included) under lib/modules/ (0644), all
 * owned by root.  Times are 0 and inode numbers count up in archive order,
 * so the same inputs give the same bytes.  Written to "path.tmp" (created
 * O_EXCL, 0644) and renamed to path, which must not exist.
 */
int vm_initramfs_write(const char *path, const char *agent_path, const char *modules_dir,
		       struct err *e);

/*
 * Write the kernel inside a bzImage (len bytes at bzimage) to out_fd: the
 * payload named by its setup header, decompressed.  Only LZ4's legacy
 * format (what Debian's kernels use) is supported; another compression is
 * refused by name.  The result must be an ELF file.  On failure out_fd may
 * hold part of it.
 */
int vm_vmlinux_extract(const void *bzimage, size_t len, int out_fd, struct err *e);

#endif
