/* Internals shared by vm.c (sandbox verbs, snapshots) and qemu.c (the QEMU process). */
#ifndef PROCTOR_VM_VM_IMPL_H
#define PROCTOR_VM_VM_IMPL_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "host/cgroup.h"
#include "host/slot.h"
#include "util.h"
#include "vm/proto.h"
#include "vm/vm.h"

#ifndef QEMU_DEFAULT
#define QEMU_DEFAULT "/usr/bin/qemu-system-x86_64"
#endif
/* $PROCTOR_QEMU names another QEMU binary (an operator's own build). */
#define QEMU_BINARY qemu_binary()

const char *qemu_binary(void);

/* Fixed fds in the QEMU process. */
enum { QFD_CHAN = 3, QFD_QMP = 4, QFD_INCOMING = 5, QFD_RAM = 6 };

/* Host-side budgets: how long the guest may take to answer. */
#define BOOT_TIMEOUT_MS	    120000u
#define RESTORE_TIMEOUT_MS  60000u
#define REQUEST_TIMEOUT_MS  60000u
#define RUN_GRACE_MS	    15000u
#define QEMU_OVERHEAD_BYTES (384ull << 20)

struct vm {
	struct sandbox base;
	struct slot slot;
	struct cgroup_slot cg;
	bool have_slot, have_cg, cg_run;
	pid_t pid;
	int pidfd;
	int chan;
	int qmp;
	int start_err; /* qemu_start()'s report pipe, until qemu_started() read it */
	bool dead;     /* killed or broken: every later verb fails */
	char run_dir[PATH_MAX];
	char console[PATH_MAX];
	uint64_t disk_bytes;
	unsigned ram_mib;
	struct pbuf ob;
	unsigned char *ib;
};

/* An image's files a VM needs. */
struct vm_image {
	char dir[PATH_MAX]; /* images/<name>/<version> */
	char vmlinux[PATH_MAX];
	char modules[PATH_MAX];
	char squashfs[PATH_MAX];
	char digest[72]; /* of the rootfs tree, from image.json */
};

enum ram_mode {
	RAM_SAVE,     /* a snapshot's boot: RAM is the file /run/ram, shared (written through) */
	RAM_RESTORE,  /* a restore: RAM is the snapshot's sealed memfd, mapped private */
	RAM_PLAIN,    /* a cold boot without snapshots: anonymous RAM */
	RAM_TEMPLATE, /* a restore whose RAM is an unsealed memfd, shared (written through):
			 a template's VM, saved again once prepared */
};

struct qemu_cmd {
	char *argv[64];
	size_t argc;
	char strs[16][1024];
	size_t nstr;
};

static inline uint64_t deadline_in(uint64_t ms)
{
	return now_ns() + ms * 1000000ull;
}

/* Which QEMU binary this is (path, inode, size, mtime), without running it. */
int qemu_identity(char *buf, size_t cap, struct err *e);
/* The host's CPU model, as /proc/cpuinfo names it (part of snapshot keys). */
void host_cpu_model(char *buf, size_t cap);
/* The guest kernel's command line: part of the snapshot key. */
void kernel_cmdline(char *buf, size_t cap, const struct vm_host *h);
/* The machine: identical for a snapshot's boot and every restore of it. */
void qemu_argv(struct qemu_cmd *c, const struct vm_host *h, unsigned ram_mib, enum ram_mode ram);
/* Start QEMU for v, confined (qemu.c); for a restore, incoming_fd is the
 * state file and ram_fd the sealed memfd of the snapshot's RAM. */
int qemu_start(struct vm *v, const struct vm_host *h, const struct vm_image *im,
	       const char *kit_dir, enum ram_mode ram, int incoming_fd, int ram_fd, struct err *e);
/* Start QEMU without waiting for it to be executed (pre-started VMs):
 * qemu_started() collects the outcome later. */
int qemu_start_async(struct vm *v, const struct vm_host *h, const struct vm_image *im,
		     const char *kit_dir, enum ram_mode ram, int incoming_fd, int ram_fd,
		     struct err *e);
/* 0 once QEMU of v was executed (or already known to be), -1 with why not. */
int qemu_started(struct vm *v, struct err *e);
/* One QMP command (cmd "" waits for the greeting, NULL for the next answer). */
int qmp_cmd(struct vm *v, const char *cmd, int pass_fd, json_t **ret, struct err *e);
/* Create an empty file (0600) if it is missing. */
int vm_touch(const char *path);

#endif
