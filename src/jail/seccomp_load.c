/* The jail's seccomp step: the filter compiled at build time, installed in the program. */
#include <errno.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

#include "jail/seccomp.h"
#include "seccomp_table.h"

void seccomp_default_program(struct sock_fprog *ret)
{
	ret->len = sizeof(seccomp_program) / sizeof(seccomp_program[0]);
	ret->filter = (struct sock_filter *)seccomp_program;
}

int seccomp_install(const struct sock_fprog *prog, struct err *e)
{
	/* SECURITY: installed last before execve, after the uid change and
	 * no_new_privs, so the filter binds the program and everything it forks. */
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog, 0, 0) < 0)
		return err_set(e, errno, "install seccomp filter");
	return 0;
}
