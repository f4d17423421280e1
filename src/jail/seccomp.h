/* The seccomp filter of both backends: the system calls an autograded program never needs. */
#ifndef PROCTOR_JAIL_SECCOMP_H
#define PROCTOR_JAIL_SECCOMP_H

#include <linux/filter.h>

#include "err.h"

/*
 * Compile the filter (libseccomp) into classic BPF.  Runs at build time
 * (seccomp_gen.c); the table it produces is what sandboxes load.  The program is
 * owned by the caller; free prog->filter with free().  Loading it in the
 * child is then a single prctl with no allocation.
 */
int seccomp_build(struct sock_fprog *ret, struct err *e);

/* The filter every sandboxed program and every proctor-helper gets,
 * compiled at build time (seccomp_load.c). */
void seccomp_default_program(struct sock_fprog *ret);

/* Install a compiled filter (seccomp_load.c) in the calling process (no_new_privs must be set). */
int seccomp_install(const struct sock_fprog *prog, struct err *e);

#endif
