/* The microVM backend: one QEMU microvm per sandbox, restored from a snapshot. */
#ifndef PROCTOR_VM_VM_H
#define PROCTOR_VM_VM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sandbox.h"

extern const struct sandbox_ops vm_ops;

/* QEMU of slot N runs as uid_base + VM_QEMU_UID_OFFSET + N: above every slot
 * uid (at most 256 slots), below the image builders' range. */
#define VM_QEMU_UID_OFFSET 256u

/* Guest RAM shapes in MiB: a snapshot restores only into an identical
 * machine, so every VM has one of these.  The smallest that holds the
 * run's memory + disk + VM_RESERVE_MIB is taken. */
#define VM_RESERVE_MIB 192u

/* How the backend runs on this host, for doctor and results. */
struct vm_host {
	bool kvm;	  /* -accel kvm; else TCG software emulation */
	char accel[8];	  /* "kvm" or "tcg" */
	unsigned tsc_khz; /* the host's TSC rate, for tsc_early_khz= */
	char qemu[128];	  /* "QEMU emulator version 7.2.x ..." first line */
	char why[256];	  /* why kvm was not used */
};

int vm_host_info(struct vm_host *ret, struct err *e);

/* The first line of `qemu-system-x86_64 -version` (runs it once per process). */
int vm_qemu_version(char *buf, size_t cap, struct err *e);

/*
 * The slowdown factor of this backend against native execution, its
 * time_factor() (sandbox.h): grading scales an assignment's time limits by
 * it.  1.0 with KVM; under TCG the factor `proctor doctor --measure-vm`
 * stored in <state>/vm/factor.json or, when none was, VM_DEFAULT_TCG_FACTOR
 * (*measured false).
 */
#define VM_DEFAULT_TCG_FACTOR 8.0

/* Store a factor measured on this host (the command that measures is
 * `proctor doctor --measure-vm`) in <state>/vm/factor.json, with the CPU
 * times of the last native and guest runs it came from and the accelerator
 * and QEMU of `h`. */
int vm_factor_store(const char *state_dir, double factor, const struct vm_host *h,
		    uint64_t native_cpu_ms, uint64_t vm_cpu_ms, struct err *e);

/* Per-VM timing of the last create(), for benchmarks: milliseconds from
 * the request to the agent's first answer, and whether it was a restore. */
struct vm_timing {
	double ready_ms;
	bool restored;
	bool snapshot_built; /* this create() had to build the snapshot first */
	bool prestarted;     /* it took a pre-started QEMU ($PROCTOR_VM_POOL) */
};
void vm_last_timing(struct vm_timing *ret);

/* Remove the snapshots and kits made for the image directory image_dir
 * (images/<name>/<version>), e.g. when the image is removed. */
void vm_forget_image(const char *state_dir, const char *image_dir);

/* With $PROCTOR_VM_DEBUG set: "vm: +MS what" on stderr, MS since the
 * process started (for where a create, run and destroy spend their time). */
void vm_trace(const char *what);

/* Destroy this process's pre-started VMs ($PROCTOR_VM_POOL); also run at exit. */
void vm_pool_drain(void);

/* The QEMU process of a VM sandbox (for measurements); 0 if none. */
pid_t vm_sandbox_pid(const struct sandbox *sb);

#endif
