/* The QEMU process of a microVM sandbox: host facts, command line, confinement, QMP. */

/*
 * QEMU is untrusted surface.  qemu_start() forks a child that joins the
 * slot's cgroups, unshares mount, network, IPC and UTS namespaces, pivots
 * into a 1 MiB tmpfs root holding only /usr (read-only), a /dev with null,
 * zero and urandom (and kvm when used), /proc with hidepid=2, the image and
 * the kit (read-only) and the VM's run directory, disables transparent huge
 * pages, drops to a uid of its own (slot + VM_QEMU_UID_OFFSET) with
 * no_new_privs and PDEATHSIG, and execs QEMU with its own seccomp filter
 * (-sandbox on).  Only the agent's channel, QMP, and for a restore the state
 * file and the RAM memfd reach it, at fixed fd numbers.
 */
#include "vm/vm_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "runlimits.h"

const char *qemu_binary(void)
{
	const char *q = getenv("PROCTOR_QEMU");
	return q && *q == '/' ? q : QEMU_DEFAULT;
}

/* ---- host facts ---- */

static unsigned host_tsc_khz(void)
{
	char buf[1 << 16];
	int n;
	FILE *f;

	/* The kernel's own calibration, as it printed it at boot. */
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf) - 1);
	if (n > 0) {
		buf[n] = '\0';
		char *p = strstr(buf, "tsc: Detected ");
		if (!p)
			p = strstr(buf, "tsc: Refined TSC clocksource calibration: ");
		if (p) {
			p = strchr(p, ':') + 1;
			while (*p && (*p < '0' || *p > '9'))
				p++;
			double mhz = strtod(p, NULL);
			if (mhz > 100)
				return (unsigned)(mhz * 1000 + 0.5);
		}
	}
	/* Else what /proc/cpuinfo says of the first CPU. */
	f = fopen("/proc/cpuinfo", "re");
	while (f && fgets(buf, sizeof(buf), f)) {
		if (strncmp(buf, "cpu MHz", 7) == 0) {
			char *c = strchr(buf, ':');
			fclose(f);
			return c ? (unsigned)(strtod(c + 1, NULL) * 1000 + 0.5) : 0;
		}
	}
	if (f)
		fclose(f);
	return 0;
}

void host_cpu_model(char *buf, size_t cap)
{
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "re");

	snprintf(buf, cap, "unknown");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) == 0) {
			char *c = strchr(line, ':');
			if (c) {
				c++;
				c[strcspn(c, "\n")] = '\0';
				snprintf(buf, cap, "%s", c + (*c == ' '));
			}
			break;
		}
	}
	if (f)
		fclose(f);
}

/* The first line of `qemu -version`, cached for the process. */
int vm_qemu_version(char *buf, size_t cap, struct err *e)
{
	static char cached[128];
	int p[2];
	pid_t pid;

	if (cached[0]) {
		snprintf(buf, cap, "%s", cached);
		return 0;
	}
	if (access(QEMU_BINARY, X_OK) < 0)
		return err_set(e, errno,
			       "QEMU (%s) is not installed (apt-get install qemu-system-x86)",
			       QEMU_BINARY);
	if (pipe2(p, O_CLOEXEC) < 0)
		return err_set(e, errno, "pipe");
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return err_set(e, errno, "fork");
	}
	if (pid == 0) {
		dup2(p[1], 1);
		int nul = open("/dev/null", O_RDWR);
		dup2(nul, 0);
		dup2(nul, 2);
		execl(QEMU_BINARY, QEMU_BINARY, "-version", (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ssize_t n = read(p[0], cached, sizeof(cached) - 1);
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	if (n <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		cached[0] = '\0';
		return err_set(e, 0, "%s -version failed", QEMU_BINARY);
	}
	cached[n] = '\0';
	cached[strcspn(cached, "\n")] = '\0';
	snprintf(buf, cap, "%s", cached);
	return 0;
}

/* Which QEMU binary this is, without running it (40 ms saved per sandbox):
 * an upgrade changes its inode, size or time, and so every snapshot key. */
int qemu_identity(char *buf, size_t cap, struct err *e)
{
	struct stat st;

	if (stat(QEMU_BINARY, &st) < 0 || access(QEMU_BINARY, X_OK) < 0)
		return err_set(e, errno,
			       "QEMU (%s) is not installed (apt-get install qemu-system-x86)",
			       QEMU_BINARY);
	snprintf(buf, cap, "%s ino %llu size %lld mtime %lld.%09ld", QEMU_BINARY,
		 (unsigned long long)st.st_ino, (long long)st.st_size, (long long)st.st_mtim.tv_sec,
		 st.st_mtim.tv_nsec);
	return 0;
}

int vm_host_info(struct vm_host *ret, struct err *e)
{
	memset(ret, 0, sizeof(*ret));
	if (qemu_identity(ret->qemu, sizeof(ret->qemu), e) < 0)
		return -1;
	ret->kvm = host_has_kvm(ret->why, sizeof(ret->why));
	/* $PROCTOR_VM_ACCEL=tcg: software emulation even where KVM works (to
	 * measure both on one host; docs/vm.md).  Part of every snapshot key,
	 * as the accelerator is part of the command line. */
	const char *accel = getenv("PROCTOR_VM_ACCEL");
	if (ret->kvm && accel && strcmp(accel, "tcg") == 0) {
		ret->kvm = false;
		snprintf(ret->why, sizeof(ret->why), "$PROCTOR_VM_ACCEL=tcg asks for TCG");
	}
	/* QEMU opens /dev/kvm as its own unprivileged uid, without groups. */
	struct stat kst;
	if (ret->kvm && (stat("/dev/kvm", &kst) < 0 || (kst.st_mode & 0006) != 0006)) {
		ret->kvm = false;
		snprintf(ret->why, sizeof(ret->why),
			 "/dev/kvm is not readable and writable by others (mode %o), and QEMU "
			 "runs as an unprivileged uid",
			 (unsigned)(kst.st_mode & 07777));
	}
	snprintf(ret->accel, sizeof(ret->accel), "%s", ret->kvm ? "kvm" : "tcg");
	/* The kernel's calibration does not change: read the log once. */
	static unsigned tsc_khz;
	if (!tsc_khz)
		tsc_khz = host_tsc_khz();
	ret->tsc_khz = tsc_khz;
	return 0;
}

/* ---- QEMU ---- */

static void qa(struct qemu_cmd *c, const char *s)
{
	if (c->argc < sizeof(c->argv) / sizeof(c->argv[0]) - 1)
		c->argv[c->argc++] = (char *)s;
	c->argv[c->argc] = NULL;
}

static void qaf(struct qemu_cmd *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void qaf(struct qemu_cmd *c, const char *fmt, ...)
{
	va_list ap;

	if (c->nstr >= sizeof(c->strs) / sizeof(c->strs[0]))
		return;
	va_start(ap, fmt);
	vsnprintf(c->strs[c->nstr], sizeof(c->strs[0]), fmt, ap);
	va_end(ap);
	qa(c, c->strs[c->nstr++]);
}

/*
 * The guest kernel's command line: part of the snapshot key.  The guest
 * kernel is a boundary that matters (in a split run it keeps the harness
 * apart from the program), so KASLR is on (randomized once per snapshot:
 * every VM restored from it shares the layout) and, under KVM, the CPU
 * mitigations are the kernel's defaults.  Under TCG they are off: the
 * emulated CPU executes nothing speculatively, so there is nothing for
 * them to close, and each costs the emulation (docs/vm.md).
 */
void kernel_cmdline(char *buf, size_t cap, const struct vm_host *h)
{
	/* $PROCTOR_VM_MITIGATIONS=off: off under KVM too, only to measure what
	 * they cost (bench/README.md); part of the key, like the rest. */
	const char *m = getenv("PROCTOR_VM_MITIGATIONS");
	bool off = !h->kvm || (m && strcmp(m, "off") == 0);

	snprintf(buf, cap,
		 "console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init "
		 "tsc_early_khz=%u random.trust_cpu=off%s "
		 "cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1",
		 h->tsc_khz, off ? " mitigations=off" : "");
}

/* The machine: identical for a snapshot's boot and every restore of it.
 * Paths are those inside QEMU's own root (see qemu_child). */
void qemu_argv(struct qemu_cmd *c, const struct vm_host *h, unsigned ram_mib, enum ram_mode ram)
{
	char cmdline[512];

	kernel_cmdline(cmdline, sizeof(cmdline), h);
	qa(c, "qemu-system-x86_64");
	qa(c, "-M");
	qa(c, "microvm,rtc=on,acpi=on,pit=on,pic=on,isa-serial=on");
	qa(c, "-accel");
	qa(c, h->kvm ? "kvm" : "tcg,tb-size=128");
	qa(c, "-cpu");
	qa(c, h->kvm ? "host" : "max");
	qa(c, "-smp");
	qa(c, "1");
	qa(c, "-m");
	qaf(c, "%u", ram_mib);
	if (ram != RAM_PLAIN) {
		qa(c, "-object");
		if (ram == RAM_SAVE)
			qaf(c, "memory-backend-file,id=ram,size=%uM,mem-path=/run/ram,share=on",
			    ram_mib);
		else if (ram == RAM_TEMPLATE)
			qaf(c,
			    "memory-backend-file,id=ram,size=%uM,mem-path=/proc/self/fd/"
			    "%d,share=on",
			    ram_mib, QFD_RAM);
		else
			qaf(c,
			    "memory-backend-file,id=ram,size=%uM,mem-path=/proc/self/fd/"
			    "%d,share=off",
			    ram_mib, QFD_RAM);
		qa(c, "-machine");
		qa(c, "memory-backend=ram");
	}
	qa(c, "-nodefaults");
	qa(c, "-no-user-config");
	qa(c, "-display");
	qa(c, "none");
	qa(c, "-no-reboot");
	qa(c, "-kernel");
	qa(c, "/img/vm/vmlinux");
	qa(c, "-initrd");
	qa(c, "/kit/initramfs.cpio");
	qa(c, "-append");
	qaf(c, "%s", cmdline);
	qa(c, "-serial");
	qa(c, "file:/run/console.log");
	qa(c, "-drive");
	/* $PROCTOR_VM_ROOT_IMAGE=erofs boots the image's rootfs.erofs instead,
	 * where one was made by hand (to compare the two formats, docs/vm.md). */
	const char *fmt = getenv("PROCTOR_VM_ROOT_IMAGE");
	qaf(c, "id=root,file=/img/rootfs.%s,format=raw,if=none,readonly=on",
	    fmt && strcmp(fmt, "erofs") == 0 ? "erofs" : "squashfs");
	qa(c, "-device");
	qa(c, "virtio-blk-device,drive=root");
	qa(c, "-device");
	qa(c, "virtio-serial-device,max_ports=2");
	qa(c, "-chardev");
	qaf(c, "socket,id=agent,fd=%d", QFD_CHAN);
	qa(c, "-device");
	qa(c, "virtserialport,chardev=agent,name=proctor");
	qa(c, "-chardev");
	qaf(c, "socket,id=qmp,fd=%d", QFD_QMP);
	qa(c, "-mon");
	qa(c, "chardev=qmp,mode=control");
	qa(c, "-sandbox");
	qa(c, "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny");
	if (ram == RAM_RESTORE || ram == RAM_TEMPLATE) {
		/* Capabilities first (QMP), then migrate-incoming. */
		qa(c, "-incoming");
		qa(c, "defer");
	}
}

static int bind_ro(const char *src, const char *dst, bool rec)
{
	if (mount(src, dst, NULL, MS_BIND | (rec ? MS_REC : 0), NULL) < 0)
		return -1;
	return mount(NULL, dst, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		     NULL);
}

int vm_touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

	return fd < 0 ? -1 : close(fd);
}

/* In the child: QEMU's own root, holding only what it needs. */
static int qemu_root(const char *root, const struct vm *v, const struct vm_image *im,
		     const char *kit_dir, bool kvm)
{
	char p[PATH_MAX];
	static const char *const links[][2] = {
	    {"usr/bin", "bin"}, {"usr/lib", "lib"}, {"usr/lib64", "lib64"}, {"usr/sbin", "sbin"}};
	static const char *const devs[] = {"null", "zero", "urandom", "kvm"};

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") < 0)
		return -1;
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", root, links[i][1]);
		if (symlink(links[i][0], p) < 0)
			return -1;
	}
	static const char *const dirs[] = {"usr", "dev", "img", "kit", "run", "old", "tmp", "proc"};
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", root, dirs[i]);
		if (mkdir(p, 0755) < 0)
			return -1;
	}
	snprintf(p, sizeof(p), "%s/usr", root);
	if (bind_ro("/usr", p, true) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++) {
		char src[64];
		if (strcmp(devs[i], "kvm") == 0 && !kvm)
			continue;
		snprintf(src, sizeof(src), "/dev/%s", devs[i]);
		snprintf(p, sizeof(p), "%s/dev/%s", root, devs[i]);
		if (vm_touch(p) < 0 || mount(src, p, NULL, MS_BIND, NULL) < 0)
			return -1;
	}
	snprintf(p, sizeof(p), "%s/img", root);
	if (bind_ro(im->dir, p, false) < 0)
		return -1;
	/* For /proc/self/fd/N (the RAM memfd); hidepid: QEMU sees only itself
	 * and the other processes of its slot uid. */
	snprintf(p, sizeof(p), "%s/proc", root);
	if (mount("proc", p, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/kit", root);
	if (bind_ro(kit_dir, p, false) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/run", root);
	if (mount(v->run_dir, p, NULL, MS_BIND, NULL) < 0 ||
	    mount(NULL, p, NULL, MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/old", root);
	if (syscall(SYS_pivot_root, root, p) < 0 || chdir("/") < 0 ||
	    umount2("/old", MNT_DETACH) < 0 || rmdir("/old") < 0)
		return -1;
	return mount(NULL, "/", NULL, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV,
		     NULL);
}

static _Noreturn void qemu_child(struct vm *v, const struct vm_image *im, const char *kit_dir,
				 bool kvm, char *const argv[], int chan, int qmp, int incoming,
				 int ram, int log_fd, const int *cg_fds, size_t n_cg, int err_fd)
{
	char root[PATH_MAX];
	const char *step = "join the slot's cgroups";
	struct rlimit rl;

	for (size_t i = 0; i < n_cg; i++)
		if (write(cg_fds[i], "0", 1) != 1)
			goto fail;
	step = "set up fds";
	if (dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0)
		goto fail;
	/* Fixed numbers: move each above the range first, then into place. */
	int hi_chan = fcntl(chan, F_DUPFD, 100), hi_qmp = fcntl(qmp, F_DUPFD, 100);
	int hi_in = incoming >= 0 ? fcntl(incoming, F_DUPFD, 100) : -1;
	int hi_ram = ram >= 0 ? fcntl(ram, F_DUPFD, 100) : -1;
	int hi_err = fcntl(err_fd, F_DUPFD_CLOEXEC, 100);
	if (hi_chan < 0 || hi_qmp < 0 || hi_err < 0 || dup2(hi_chan, QFD_CHAN) < 0 ||
	    dup2(hi_qmp, QFD_QMP) < 0 || (hi_in >= 0 && dup2(hi_in, QFD_INCOMING) < 0) ||
	    (hi_ram >= 0 && dup2(hi_ram, QFD_RAM) < 0))
		goto fail;
	err_fd = hi_err;
	int nul = open("/dev/null", O_RDONLY);
	if (nul < 0 || dup2(nul, 0) < 0)
		goto fail;
	/* Nothing else of proctor's reaches QEMU (err_fd is close-on-exec). */
	if (hi_in < 0)
		close(QFD_INCOMING);
	if (hi_ram < 0)
		close(QFD_RAM);
	syscall(SYS_close_range, QFD_RAM + 1, err_fd - 1, 0);
	syscall(SYS_close_range, err_fd + 1, ~0U, 0);
	step = "unshare namespaces";
	if (unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS) < 0)
		goto fail;
	step = "build QEMU's root";
	snprintf(root, sizeof(root), "%s/root", v->slot.dir);
	if (qemu_root(root, v, im, kit_dir, kvm) < 0)
		goto fail;
	step = "set limits";
	rl = (struct rlimit){0, 0};
	setrlimit(RLIMIT_CORE, &rl);
	rl = (struct rlimit){256, 256};
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		goto fail;
	/* Guest RAM in 4 KiB pages: with transparent huge pages, one touched
	 * page makes a whole 2 MiB resident, and an idle guest costs its
	 * entire RAM (measured: 534 MiB PSS for a 512 MiB guest). */
	step = "disable transparent huge pages";
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
		goto fail;
	step = "drop privileges";
	uid_t qid = v->slot.uid + VM_QEMU_UID_OFFSET;
	if (setgroups(0, NULL) < 0 || setresgid(qid, qid, qid) < 0 ||
	    setresuid(qid, qid, qid) < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		goto fail;
	if (getppid() == 1)
		_exit(127);
	step = "exec QEMU";
	char *envp[] = {(char *)"PATH=/usr/bin", NULL};
	execve(QEMU_BINARY, argv, envp);
fail:;
	char msg[256];
	int n = snprintf(msg, sizeof(msg), "%s: %s", step, strerror(errno));
	if (write(err_fd, msg, (size_t)n) < 0) {
		/* nothing left to tell */
	}
	_exit(127);
}

int qemu_started(struct vm *v, struct err *e)
{
	char msg[256];

	if (v->start_err < 0)
		return 0;
	/* EOF when QEMU was executed (the pipe is close-on-exec), else why not. */
	ssize_t n = read(v->start_err, msg, sizeof(msg) - 1);
	xclose(take_fd(&v->start_err));
	if (n > 0) {
		msg[n] = '\0';
		if (v->pidfd >= 0)
			syscall(SYS_pidfd_send_signal, v->pidfd, SIGKILL, NULL, 0);
		waitpid(v->pid, NULL, 0);
		v->pid = 0;
		v->dead = true;
		return err_set(e, 0, "microVM: starting QEMU: %s", msg);
	}
	return 0;
}

int qemu_start(struct vm *v, const struct vm_host *h, const struct vm_image *im,
	       const char *kit_dir, enum ram_mode ram, int incoming_fd, int ram_fd, struct err *e)
{
	if (qemu_start_async(v, h, im, kit_dir, ram, incoming_fd, ram_fd, e) < 0)
		return -1;
	if (qemu_started(v, e) < 0) {
		xclose(take_fd(&v->chan));
		xclose(take_fd(&v->qmp));
		return -1;
	}
	return 0;
}

int qemu_start_async(struct vm *v, const struct vm_host *h, const struct vm_image *im,
		     const char *kit_dir, enum ram_mode ram, int incoming_fd, int ram_fd,
		     struct err *e)
{
	struct qemu_cmd c = {0};
	int chan[2] = {-1, -1}, qmp[2] = {-1, -1}, errp[2] = {-1, -1}, log_fd = -1;
	int cg_fds[8];
	size_t n_cg = 0;
	char log[PATH_MAX + 16];
	struct limits l;
	int rc = -1;

	qemu_argv(&c, h, v->ram_mib, ram);
	limits_default(&l);
	l.memory_bytes = ((uint64_t)v->ram_mib << 20) + QEMU_OVERHEAD_BYTES;
	l.disk_bytes = 0;
	l.pids = 64;
	if (cgroup_run_begin(&v->cg, &l, cg_fds, &n_cg, e) < 0)
		return err_wrap(e, "microVM: QEMU's cgroup");
	v->cg_run = true;
	snprintf(log, sizeof(log), "%s/qemu.log", v->run_dir);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, chan) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, qmp) < 0 ||
	    pipe2(errp, O_CLOEXEC) < 0 ||
	    (log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0644)) <
		0) {
		err_set(e, errno, "microVM: set up QEMU's channels");
		goto out;
	}
	pid_t pid = fork();
	if (pid < 0) {
		err_set(e, errno, "microVM: fork");
		goto out;
	}
	if (pid == 0)
		qemu_child(v, im, kit_dir, h->kvm, c.argv, chan[1], qmp[1], incoming_fd, ram_fd,
			   log_fd, cg_fds, n_cg, errp[1]);
	v->pid = pid;
	v->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	close(take_fd(&errp[1]));
	v->start_err = take_fd(&errp[0]);
	v->chan = take_fd(&chan[0]);
	v->qmp = take_fd(&qmp[0]);
	rc = 0;
out:
	for (size_t i = 0; i < n_cg; i++)
		close(cg_fds[i]);
	for (int i = 0; i < 2; i++) {
		xclose(chan[i]);
		xclose(qmp[i]);
		xclose(errp[i]);
	}
	xclose(log_fd);
	return rc;
}

/* ---- QMP, for saving snapshots ---- */

/* Send one command (optionally passing an fd) and wait for its answer,
 * skipping events.  0 on {"return"}, -1 with QEMU's message otherwise. */
int qmp_cmd(struct vm *v, const char *cmd, int pass_fd, json_t **ret, struct err *e)
{
	/* What was read past one answer belongs to the next call. */
	static char buf[65536];
	static size_t have;
	static int buf_owner = -1;
	struct iovec iov;
	uint64_t deadline = deadline_in(REQUEST_TIMEOUT_MS);

	if (ret)
		*ret = NULL;
	if (buf_owner != v->qmp) {
		have = 0;
		buf_owner = v->qmp;
	}
	if (!cmd) /* only the next answer */
		cmd = "";
	else if (!cmd[0])
		have = 0; /* a new QEMU's greeting */
	iov.iov_base = (void *)cmd;
	iov.iov_len = strlen(cmd);
	if (iov.iov_len && send_with_fd(v->qmp, &iov, 1, pass_fd) != (ssize_t)iov.iov_len)
		return err_set(e, errno, "QMP: send");
	for (;;) {
		char *nl;
		while ((nl = memchr(buf, '\n', have))) {
			json_error_t je;
			size_t linelen = (size_t)(nl - buf) + 1;
			json_t *j = json_loadb(buf, linelen, 0, &je);
			memmove(buf, buf + linelen, have - linelen);
			have -= linelen;
			if (!j)
				continue;
			if (json_object_get(j, "QMP") && !cmd[0]) {
				json_decref(j);
				return 0; /* the greeting */
			}
			json_t *r = json_object_get(j, "return");
			json_t *er = json_object_get(j, "error");
			if (r) {
				if (ret)
					*ret = json_incref(r);
				json_decref(j);
				return 0;
			}
			if (er) {
				const char *desc = json_string_value(json_object_get(er, "desc"));
				err_set(e, 0, "QMP: %s", desc ? desc : "error");
				json_decref(j);
				return -1;
			}
			json_decref(j);
		}
		uint64_t now = now_ns();
		if (now >= deadline || have == sizeof(buf))
			return err_set(e, ETIMEDOUT, "QMP: no answer");
		struct pollfd pfd = {.fd = v->qmp, .events = POLLIN};
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			continue;
		ssize_t n = read(v->qmp, buf + have, sizeof(buf) - have);
		if (n <= 0)
			return err_set(e, errno, "QMP: QEMU closed the monitor");
		have += (size_t)n;
	}
}
