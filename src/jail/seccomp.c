/* Process Isolator -- seccomp: the system calls an autograded program never needs. */
#include "jail/seccomp.h"

#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "util.h"

/*
 * Three answers.  ENOSYS for interfaces a runtime probes and falls back
 * from (glibc tries clone3, libuv and the JVM try io_uring).  EPERM for
 * things a program may attempt harmlessly and must simply be refused
 * (debugging other processes, namespaces, mounts, kernel keyrings, BPF).
 * Kill for calls no autograded program makes, whose use means an attack:
 * the run is reported with limits_hit "seccomp".
 */
static const char *const enosys_calls[] = {
	"clone3", "io_uring_setup", "io_uring_enter", "io_uring_register",
};

static const char *const eperm_calls[] = {
	"ptrace", "process_vm_readv", "process_vm_writev", "mount", "umount2",
	"pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
	"fsmount", "fspick", "mount_setattr", "unshare", "setns", "bpf",
	"perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key",
	"name_to_handle_at", "open_by_handle_at", "fanotify_init", "settimeofday",
	"clock_settime", "clock_adjtime", "adjtimex", "syslog", "quotactl",
	"quotactl_fd", "lookup_dcookie", "vhangup", "personality", "mbind",
	"migrate_pages", "move_pages", "set_mempolicy", "pidfd_getfd",
	"process_madvise", "landlock_create_ruleset",
};

static const char *const kill_calls[] = {
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "reboot", "swapon", "swapoff", "acct", "iopl", "ioperm",
	"create_module", "nfsservctl", "uselib",
};

#define NS_FLAGS                                                                           \
	(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |         \
	 CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME)

static int add_list(scmp_filter_ctx ctx, uint32_t action, const char *const *names, size_t n,
		    struct err *e)
{
	for (size_t i = 0; i < n; i++) {
		int nr = seccomp_syscall_resolve_name(names[i]);
		if (nr == __NR_SCMP_ERROR)
			continue; /* not a call on this architecture */
		int rc = seccomp_rule_add(ctx, action, nr, 0);
		if (rc < 0)
			return err_set(e, -rc, "seccomp rule for %s", names[i]);
	}
	return 0;
}

int seccomp_build(struct sock_fprog *ret, struct err *e)
{
	/* SECURITY: default allow with a deny list, because the programs are
	 * arbitrary language runtimes; a foreign architecture (32-bit int 0x80,
	 * x32) is killed, so the deny list cannot be bypassed by syscall number
	 * aliasing. */
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc, fd = -1;

	if (!ctx)
		return err_set(e, ENOMEM, "seccomp_init");
	rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
	if (rc < 0) {
		err_set(e, -rc, "seccomp bad-arch action");
		goto out_release;
	}
	if (add_list(ctx, SCMP_ACT_ERRNO(ENOSYS), enosys_calls,
		     sizeof(enosys_calls) / sizeof(enosys_calls[0]), e) < 0 ||
	    add_list(ctx, SCMP_ACT_ERRNO(EPERM), eperm_calls,
		     sizeof(eperm_calls) / sizeof(eperm_calls[0]), e) < 0 ||
	    add_list(ctx, SCMP_ACT_KILL_PROCESS, kill_calls,
		     sizeof(kill_calls) / sizeof(kill_calls[0]), e) < 0)
		goto out_release;
	/* SECURITY: user namespaces work unprivileged on these hosts; clone
	 * with any namespace flag is refused so the program cannot build a
	 * namespace in which it is root. */
	for (unsigned bit = 0; bit < 64; bit++) {
		unsigned long long flag = 1ull << bit;
		if (!(NS_FLAGS & flag))
			continue;
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone), 1,
				      SCMP_A0(SCMP_CMP_MASKED_EQ, flag, flag));
		if (rc < 0) {
			err_set(e, -rc, "seccomp rule for clone flags");
			goto out_release;
		}
	}

	fd = memfd_create("proctor-seccomp", MFD_CLOEXEC);
	if (fd < 0) {
		err_set(e, errno, "memfd_create");
		goto out_release;
	}
	rc = seccomp_export_bpf(ctx, fd);
	if (rc < 0) {
		err_set(e, -rc, "seccomp_export_bpf");
		goto out_close;
	}
	off_t size = lseek(fd, 0, SEEK_END);
	if (size <= 0 || size % (off_t)sizeof(struct sock_filter) != 0) {
		err_set(e, EINVAL, "seccomp program of %lld bytes", (long long)size);
		goto out_close;
	}
	struct sock_filter *insns = malloc((size_t)size);
	if (!insns || pread(fd, insns, (size_t)size, 0) != size) {
		free(insns);
		err_set(e, errno ? errno : EIO, "read seccomp program");
		goto out_close;
	}
	ret->len = (unsigned short)((size_t)size / sizeof(struct sock_filter));
	ret->filter = insns;
	close(fd);
	seccomp_release(ctx);
	return 0;

out_close:
	close(fd);
out_release:
	seccomp_release(ctx);
	return -1;
}
