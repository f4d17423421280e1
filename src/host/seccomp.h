/* The seccomp filter: the system calls an autograded program never needs, on either backend. */
#ifndef PROCTOR_HOST_SECCOMP_H
#define PROCTOR_HOST_SECCOMP_H

#include <linux/filter.h>

#include "err.h"

/*
 * Compile the filter (libseccomp) into classic BPF.  Runs at build time
 * (seccomp_gen.c); the table it produces is what sandboxes load.  The program is
 * owned by the caller; free prog->filter with free().  Loading it in the
 * child is then a single prctl with no allocation.
 */
int seccomp_build(struct sock_fprog *ret, struct err *e);

/* The filter every program in the jail and every proctor-helper gets,
 * compiled at build time (seccomp_load.c).  proctor-agent installs the same
 * table for every program in a guest (agent/agent.c). */
void seccomp_default_program(struct sock_fprog *ret);

/* Install a compiled filter (seccomp_load.c) in the calling process (no_new_privs must be set). */
int seccomp_install(const struct sock_fprog *prog, struct err *e);

#endif
