/* The jail backend: namespaces, cgroups and seccomp behind sandbox_ops. */
#ifndef PROCTOR_JAIL_JAIL_H
#define PROCTOR_JAIL_JAIL_H

#include "sandbox.h"

extern const struct sandbox_ops jail_ops;

#endif
