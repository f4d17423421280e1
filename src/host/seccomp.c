/* The seccomp filter: the system calls an autograded program never needs, on either backend. */
#include "host/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

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
	/* Both deliver a signal of the program's choosing, named through a
	 * struct sigevent the filter cannot read (see limit_signal_rules);
	 * ENOSYS, because programs that use them fall back quietly (coreutils
	 * `timeout` warns on EPERM, and does its job with setitimer). */
	"timer_create", "mq_notify",
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
	/* A filter of the program's own could kill it with SIGSYS. */
	"seccomp",
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

/*
 * The signals that report a limit: SIGSYS (this filter's kill), SIGXCPU and
 * SIGXFSZ (RLIMIT_CPU and RLIMIT_FSIZE).  A verdict names a limit only when
 * the limit was reached, so the program must not be able to raise them at
 * itself or have the kernel raise them for a limit of its own: every way
 * of sending a signal of its choosing refuses these three (EPERM), as do
 * changing RLIMIT_FSIZE, a seccomp filter of its own and syscall user
 * dispatch (both end in SIGSYS).  RLIMIT_CPU may be lowered (a test that
 * bounds a child process does): a SIGXCPU counts as the CPU limit only
 * when the run's CPU time reached it (result.c).
 */
static const int limit_signals[] = {SIGSYS, SIGXCPU, SIGXFSZ};

/* Arguments the kernel reads as int or unsigned int (signal numbers,
 * fcntl and ioctl commands, prctl options, rlimit resources): compare the
 * low 32 bits only, so a value with garbage above them (which the kernel
 * ignores) cannot slip by. */
#define INT_ARG(n, v)                                                                      \
	((struct scmp_arg_cmp){.arg = (n), .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xffffffffu,  \
			       .datum_b = (scmp_datum_t)(v)})
/* clone's exit signal is the low byte of its flags. */
#define EXIT_SIGNAL_ARG(sig)                                                               \
	((struct scmp_arg_cmp){.arg = 0, .op = SCMP_CMP_MASKED_EQ, .datum_a = 0xff,            \
			       .datum_b = (scmp_datum_t)(sig)})
#define NONZERO_ARG(n)                                                                     \
	((struct scmp_arg_cmp){.arg = (n), .op = SCMP_CMP_NE, .datum_a = 0, .datum_b = 0})

#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#endif

static int rule(scmp_filter_ctx ctx, const char *name, unsigned n, struct scmp_arg_cmp a,
		struct scmp_arg_cmp b, struct err *e)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0;
	int rc = n == 1 ? seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, a)
			: seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2, a, b);
	if (rc < 0)
		return err_set(e, -rc, "seccomp rule for %s", name);
	return 0;
}

static int limit_signal_rules(scmp_filter_ctx ctx, struct err *e)
{
	const struct scmp_arg_cmp none = {0};

	for (size_t i = 0; i < sizeof(limit_signals) / sizeof(limit_signals[0]); i++) {
		int sig = limit_signals[i];
		if (rule(ctx, "kill", 1, INT_ARG(1, sig), none, e) < 0 ||
		    rule(ctx, "tkill", 1, INT_ARG(1, sig), none, e) < 0 ||
		    rule(ctx, "tgkill", 1, INT_ARG(2, sig), none, e) < 0 ||
		    rule(ctx, "rt_sigqueueinfo", 1, INT_ARG(1, sig), none, e) < 0 ||
		    rule(ctx, "rt_tgsigqueueinfo", 1, INT_ARG(2, sig), none, e) < 0 ||
		    rule(ctx, "pidfd_send_signal", 1, INT_ARG(1, sig), none, e) < 0 ||
		    /* I/O readiness, leases and dnotify signal with F_SETSIG's number. */
		    rule(ctx, "fcntl", 2, INT_ARG(1, F_SETSIG), INT_ARG(2, sig), e) < 0 ||
		    rule(ctx, "prctl", 2, INT_ARG(0, PR_SET_PDEATHSIG), INT_ARG(1, sig), e) < 0 ||
		    rule(ctx, "ioctl", 2, INT_ARG(1, TIOCSIG), INT_ARG(2, sig), e) < 0 ||
		    rule(ctx, "clone", 1, EXIT_SIGNAL_ARG(sig), none, e) < 0)
			return -1;
	}
	if (rule(ctx, "setrlimit", 1, INT_ARG(0, RLIMIT_FSIZE), none, e) < 0 ||
	    rule(ctx, "prlimit64", 2, INT_ARG(1, RLIMIT_FSIZE), NONZERO_ARG(2), e) < 0 ||
	    rule(ctx, "prctl", 1, INT_ARG(0, PR_SET_SECCOMP), none, e) < 0 ||
	    rule(ctx, "prctl", 1, INT_ARG(0, PR_SET_SYSCALL_USER_DISPATCH), none, e) < 0)
		return -1;
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
	/* SECURITY: a signal that reports a limit comes only from the limit. */
	if (limit_signal_rules(ctx, e) < 0)
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
