/* proctor-agent: the guest's init (PID 1) inside a Proctor microVM. */

/*
 * Theory of operation
 * -------------------
 * The kernel starts this from the initramfs.  At boot it mounts /dev, /proc,
 * /sys and cgroup2, loads the modules listed in /lib/modules/order, mounts the
 * read-only image (/dev/vda, squashfs or erofs) at /ro, finds the virtio-serial
 * port named "proctor" and says P_HELLO.  That state is what a snapshot
 * captures, with the writable tree already made (a tmpfs, an overlay of it on
 * /ro at /newroot, /work, /tmp, a minimal /dev and a /proc with hidepid).
 * What is per sandbox happens at P_SETUP, after a restore: the host's random
 * bytes are mixed into the kernel's pool and the CRNG is reseeded, the clock
 * is set, and the tmpfs gets the sandbox's disk size.
 *
 * Then it serves requests one at a time (docs/vm-protocol.md): files in and
 * out below the writable tree /rw, whose work/ and tmp/ are the program's /work
 * and /tmp (open_beneath(): no symlink, magic link or mount crossed, so a link
 * planted by the program cannot redirect the agent), and runs.  A run
 * forks a child that joins a fresh cgroup "run" (memory.max, pids.max),
 * chroots into /newroot, drops to uid/gid 1000 with rlimits and
 * no_new_privs, and execs.  The agent stays outside in cgroup "agent" with
 * a high cpu.weight, nice -20 and oom_score_adj -1000, so a fork bomb or a
 * memory hog ends in a verdict instead of a dead agent.  It samples CPU
 * (cpu.stat), memory (what the cgroup holds beyond reclaimable cache and
 * the writable tree's files, as the jail does) and wall clock every 10 ms,
 * kills the whole run cgroup (cgroup.kill) at a limit or when the program
 * exits (no daemon survives a run), streams capped output as P_OUT and ends
 * with P_EXIT: the raw facts; the host decides the verdict.  Limits are
 * the jail's, measured the same way, so that a program gets the same
 * verdict on both backends (docs/run-result.md, "Verdicts by limit"); the
 * guest always overcommits, so only the cgroup limits memory.
 *
 * The host kills the VM when it stops answering; the agent never needs to
 * be asked twice.  Only libc and the project's libc-only helpers (util.c,
 * err.c, vm/proto.c): this is linked statically.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/random.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scratch.h"
#include "seccomp_table.h" /* generated at build time from src/host/seccomp.c */
#include "util.h"
#include "vm/proto.h"

#define AGENT_VERSION "proctor-agent 0.1.0"
#define STUDENT_ID    1000
#define HARNESS_ID    1001 /* a split run's harness (run_spec.peer_argv in src/sandbox.h) */
#define CG	      "/sys/fs/cgroup"
#define ROOT	      "/newroot"
#define TICK_MS	      10

/* Mirrors of the host's LIMIT_HIT_* bits (src/result.h). */
enum { HIT_CPU = 1, HIT_WALL = 2, HIT_MEMORY = 4 };

extern char **environ;

static int chan = -1;	    /* the virtio-serial port */
static uint64_t disk_bytes; /* of the writable tree */
static struct pbuf ob;	    /* the frame being sent */
static unsigned char *ib;   /* the payload being received */
/* The writable tree /rw, after P_SETUP: requests name paths below it and
 * open_beneath() resolves them (work/ and tmp/ are directories of the one
 * tmpfs, so no path of a request crosses a mount). */
static int treefd = -1;

static void console(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void console(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("proctor-agent: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static _Noreturn void halt(const char *why)
{
	console("fatal: %s (errno %d: %s)", why, errno, strerror(errno));
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}

/* ---- the channel ---- */

/* Read exactly n bytes.  While the host side is not connected (between a
 * snapshot and a restore) a read returns 0: wait and try again. */
static void chan_read(void *buf, size_t n)
{
	unsigned char *p = buf;

	while (n) {
		ssize_t r = read(chan, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno != EAGAIN)
			halt("read from the host channel");
		if (r <= 0) {
			struct pollfd pfd = {.fd = chan, .events = POLLIN};
			if (poll(&pfd, 1, 20) < 0 && errno != EINTR)
				halt("poll the host channel");
			continue;
		}
		p += r;
		n -= (size_t)r;
	}
}

static void chan_write(const void *buf, size_t n)
{
	const unsigned char *p = buf;

	while (n) {
		ssize_t r = write(chan, p, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = chan, .events = POLLOUT};
			poll(&pfd, 1, 20);
			continue;
		}
		if (r <= 0)
			halt("write to the host channel");
		p += r;
		n -= (size_t)r;
	}
}

static void send_frame(void)
{
	if (pbuf_finish(&ob) < 0)
		halt("build a frame");
	chan_write(ob.data, ob.len);
}

static void send_ok(void)
{
	pbuf_start(&ob, P_OK);
	send_frame();
}

static void send_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void send_err(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pbuf_start(&ob, P_ERR);
	pbuf_str(&ob, msg);
	send_frame();
}

static unsigned recv_frame(uint32_t *len)
{
	unsigned char h[PROTO_HEADER];
	unsigned type;

	chan_read(h, sizeof(h));
	if (proto_header(h, &type, len) < 0) {
		errno = EPROTO;
		halt("a malformed frame header from the host");
	}
	chan_read(ib, *len);
	return type;
}

/* ---- small file helpers ---- */

/* A knob of cgroupfs, procfs or sysfs; -1 with errno set. */
static int write_str(const char *path, const char *s)
{
	struct err e;

	if (write_file_at(AT_FDCWD, path, s, &e) == 0)
		return 0;
	errno = e.errnum;
	return -1;
}

static int write_u64(const char *path, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return write_str(path, buf);
}

static int read_text(const char *path, char *buf, size_t cap)
{
	struct err e;

	return read_file_at(AT_FDCWD, path, buf, cap, &e);
}

/* A field of a "key value" file (cpu.stat, memory.events, pids.events);
 * 0 when it is absent or not a number. */
static uint64_t stat_key(const char *path, const char *key)
{
	char buf[8192];
	uint64_t v;

	if (read_text(path, buf, sizeof(buf)) < 0 || stat_field(buf, key, &v) < 0)
		return 0;
	return v;
}

/* A file holding one number (memory.current, memory.peak, pids.current). */
static uint64_t read_u64(const char *path)
{
	char buf[64];
	uint64_t v;

	if (read_text(path, buf, sizeof(buf)) < 0 || parse_u64(buf, strcspn(buf, "\n"), &v) < 0)
		return 0;
	return v;
}

/* Split rel into its parent (opened) and last component. */
static int open_parent(const char *rel, char *last, size_t cap)
{
	char dir[PROTO_MAX_STR];
	const char *slash = strrchr(rel, '/');

	if (!slash) {
		snprintf(last, cap, "%s", rel);
		return fcntl(treefd, F_DUPFD_CLOEXEC, 0);
	}
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - rel), rel);
	snprintf(last, cap, "%s", slash + 1);
	return open_beneath(treefd, dir, O_RDONLY | O_DIRECTORY, 0);
}

/* ---- boot ---- */

static void load_modules(void)
{
	FILE *f = fopen("/lib/modules/order", "re");
	char line[256];

	if (!f)
		halt("open /lib/modules/order");
	while (fgets(line, sizeof(line), f)) {
		char path[300];
		int fd;

		line[strcspn(line, "\r\n")] = '\0';
		if (!line[0])
			continue;
		snprintf(path, sizeof(path), "/lib/modules/%s", line);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			halt(path);
		if (syscall(SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
			console("module %s: %s", line, strerror(errno));
		close(fd);
	}
	fclose(f);
}

/* The virtio-serial port whose name is "proctor", as /dev/vportNpM. */
static int open_port(void)
{
	for (int tries = 0; tries < 500; tries++) {
		DIR *d = opendir("/sys/class/virtio-ports");
		struct dirent *de;

		while (d && (de = readdir(d))) {
			char path[512], name[64];
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "/sys/class/virtio-ports/%s/name", de->d_name);
			if (read_text(path, name, sizeof(name)) < 0)
				continue;
			name[strcspn(name, "\n")] = '\0';
			if (strcmp(name, "proctor") != 0)
				continue;
			snprintf(path, sizeof(path), "/dev/%s", de->d_name);
			closedir(d);
			int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY);
			if (fd < 0)
				halt(path);
			return fd;
		}
		if (d)
			closedir(d);
		usleep(10000);
	}
	errno = ENODEV;
	halt("no virtio-serial port named 'proctor'");
}

static void mount_image(void)
{
	for (int tries = 0; tries < 500; tries++) {
		if (access("/dev/vda", F_OK) == 0)
			break;
		usleep(10000);
	}
	mkdir("/ro", 0755);
	if (mount("/dev/vda", "/ro", "squashfs", MS_RDONLY | MS_NODEV, NULL) < 0 &&
	    mount("/dev/vda", "/ro", "erofs", MS_RDONLY | MS_NODEV, NULL) < 0)
		halt("mount the image /dev/vda (squashfs or erofs)");
}

static void setup_cgroups(void)
{
	mkdir(CG, 0755);
	if (mount("cgroup2", CG, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		halt("mount cgroup2");
	if (mkdir(CG "/agent", 0755) < 0 && errno != EEXIST)
		halt("mkdir " CG "/agent");
	if (write_str(CG "/agent/cgroup.procs", "0") < 0)
		halt("move the agent to its cgroup");
	if (write_str(CG "/cgroup.subtree_control", "+memory +pids +cpu") < 0)
		halt("enable the memory, pids and cpu controllers");
	write_str(CG "/agent/cpu.weight", "10000");
	write_str("/proc/self/oom_score_adj", "-1000");
	setpriority(PRIO_PROCESS, 0, -20);
	/* Memory is limited by the run's cgroup, as in the jail, never by the
	 * guest's size: with the default heuristic a small guest refuses one
	 * allocation larger than its RAM (Python's MemoryError, exit 1) where
	 * the host grants it and the limit then trips (memory_limit).  Always
	 * overcommit: the allocation succeeds, and touching it meets the limit. */
	if (write_str("/proc/sys/vm/overcommit_memory", "1") < 0)
		halt("set vm.overcommit_memory");
	/* SECURITY: the guest kernel keeps the harness apart from the program
	 * in a split run, so it is hardened as a boundary: no kernel addresses
	 * or log for uid 1000 and 1001, no perf or unprivileged BPF, and the
	 * sticky-directory rules (a file or FIFO the program made in /work or
	 * /tmp is not opened with O_CREAT by another uid; links to what it
	 * does not own are not followed or made).  Each must take where the
	 * kernel has it. */
	static const char *const hardening[][2] = {
	    {"/proc/sys/kernel/kptr_restrict", "2"},
	    {"/proc/sys/kernel/dmesg_restrict", "1"},
	    {"/proc/sys/kernel/perf_event_paranoid", "3"},
	    {"/proc/sys/kernel/unprivileged_bpf_disabled", "1"},
	    {"/proc/sys/fs/protected_regular", "2"},
	    {"/proc/sys/fs/protected_fifos", "2"},
	    {"/proc/sys/fs/protected_symlinks", "1"},
	    {"/proc/sys/fs/protected_hardlinks", "1"},
	};
	for (size_t i = 0; i < sizeof(hardening) / sizeof(hardening[0]); i++)
		if (write_str(hardening[i][0], hardening[i][1]) < 0 && errno != ENOENT)
			halt(hardening[i][0]); /* a kernel without one has none to set */
}

static void make_tree(void);

static void boot(void)
{
	mkdir("/dev", 0755);
	mkdir("/proc", 0555);
	mkdir("/sys", 0555);
	if (mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755") < 0 && errno != EBUSY)
		halt("mount /dev");
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		halt("mount /proc");
	if (mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		halt("mount /sys");
	/* stderr goes to the console (the host's log), nothing else does. */
	int con = open("/dev/console", O_RDWR | O_NOCTTY);
	if (con >= 0) {
		dup2(con, 2);
		if (con != 2)
			close(con);
	}
	int nul = open("/dev/null", O_RDWR);
	if (nul >= 0) {
		dup2(nul, 0);
		dup2(nul, 1);
		if (nul > 2)
			close(nul);
	}
	load_modules();
	mount_image();
	setup_cgroups();
	make_tree();
	chan = open_port();
}

static void hello(void)
{
	struct utsname u;

	uname(&u);
	pbuf_start(&ob, P_HELLO);
	pbuf_u32(&ob, PROTO_VERSION);
	pbuf_str(&ob, AGENT_VERSION);
	pbuf_str(&ob, u.release);
	send_frame();
}

/* ---- requests ---- */

static int make_dev(void)
{
	static const struct {
		const char *name;
		unsigned minor;
	} nodes[] = {{"null", 3}, {"zero", 5}, {"full", 7}, {"random", 8}, {"urandom", 9}};
	char p[64];

	if (mount("tmpfs", ROOT "/dev", "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755") < 0)
		return -1;
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		snprintf(p, sizeof(p), ROOT "/dev/%s", nodes[i].name);
		if (mknod(p, S_IFCHR | 0666, makedev(1, nodes[i].minor)) < 0 || chmod(p, 0666) < 0)
			return -1;
	}
	symlink("/proc/self/fd", ROOT "/dev/fd");
	symlink("/proc/self/fd/0", ROOT "/dev/stdin");
	symlink("/proc/self/fd/1", ROOT "/dev/stdout");
	symlink("/proc/self/fd/2", ROOT "/dev/stderr");
	/* /dev/shm is part of the disk budget. */
	if (mkdir("/rw/shm", 01777) < 0 || chmod("/rw/shm", 01777) < 0 ||
	    mkdir(ROOT "/dev/shm", 0755) < 0 ||
	    mount("/rw/shm", ROOT "/dev/shm", NULL, MS_BIND, NULL) < 0)
		return -1;
	return 0;
}

static void add_account(void)
{
	int fd = open(ROOT "/etc/passwd", O_WRONLY | O_APPEND | O_CLOEXEC);

	if (fd >= 0) {
		dprintf(fd, "student:x:%d:%d:student:/work:/bin/sh\n", STUDENT_ID, STUDENT_ID);
		dprintf(fd, "harness:x:%d:%d:Proctor test harness:/work:/bin/sh\n", HARNESS_ID,
			HARNESS_ID);
		close(fd);
	}
	fd = open(ROOT "/etc/group", O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd >= 0) {
		dprintf(fd, "student:x:%d:\nharness:x:%d:\n", STUDENT_ID, HARNESS_ID);
		close(fd);
	}
}

/* The writable tree, made at boot so a snapshot already holds it: a tmpfs
 * (resized per sandbox at P_SETUP), an overlay of it on the image at
 * /newroot, /work, /tmp, /proc with hidepid, a minimal /dev. */
static void make_tree(void)
{
	mkdir("/rw", 0755);
	mkdir(ROOT, 0755);
	if (mount("tmpfs", "/rw", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755") < 0 ||
	    mkdir("/rw/upper", 0755) < 0 || mkdir("/rw/ovl", 0755) < 0)
		halt("make the writable tree");
	if (mount("overlay", ROOT, "overlay", MS_NOSUID | MS_NODEV,
		  "lowerdir=/ro,upperdir=/rw/upper,workdir=/rw/ovl") < 0)
		halt("mount the overlay root");
	/* /work and /tmp are the tmpfs itself (bind mounts of its directories),
	 * not the overlay: file writes, limits and errors behave as on the
	 * jail's scratch tmpfs (RLIMIT_FSIZE raises SIGXFSZ there). */
	static const char *const scratch[] = {"work", "tmp"};
	for (size_t i = 0; i < 2; i++) {
		char rw[64], dst[64];
		snprintf(rw, sizeof(rw), "/rw/%s", scratch[i]);
		snprintf(dst, sizeof(dst), ROOT "/%s", scratch[i]);
		if (mkdir(rw, 01777) < 0 || chmod(rw, 01777) < 0 ||
		    (mkdir(dst, 01777) < 0 && errno != EEXIST) ||
		    mount(rw, dst, NULL, MS_BIND, NULL) < 0)
			halt("make /work and /tmp");
	}
	mkdir(ROOT "/proc", 0555);
	mkdir(ROOT "/dev", 0755);
	if (mount("proc", ROOT "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") < 0)
		halt("mount /newroot/proc");
	if (make_dev() < 0)
		halt("make /newroot/dev");
	add_account();
}

/* Quiesced after a P_SETUP (a template's snapshot): the next P_SETUP is
 * a restored copy's, and sets randomness, clock and size afresh. */
static bool resealed;

static void do_setup(uint32_t len)
{
	struct preader r;
	uint64_t clock_ns, disk;
	const unsigned char *seed;
	size_t seed_len;
	char opts[160];

	preader_init(&r, ib, len);
	clock_ns = preader_u64(&r);
	disk = preader_u64(&r);
	seed = preader_bytes(&r, 512, &seed_len);
	if (preader_end(&r) < 0 || seed_len < 32 || disk < (1u << 20))
		return send_err("malformed SETUP");
	if (treefd >= 0 && !resealed)
		return send_err("SETUP twice");

	/* Fresh randomness and a current clock: a restored snapshot shares
	 * both with every other VM restored from it. */
	struct {
		int entropy_count, buf_size;
		unsigned char buf[512];
	} pool = {.entropy_count = (int)seed_len * 8, .buf_size = (int)seed_len};
	memcpy(pool.buf, seed, seed_len);
	int rfd = open("/dev/urandom", O_RDWR | O_CLOEXEC);
	if (rfd < 0 || ioctl(rfd, RNDADDENTROPY, &pool) < 0 || ioctl(rfd, RNDRESEEDCRNG) < 0)
		return send_err("reseed the random generator: %s", strerror(errno));
	close(rfd);
	struct timespec ts = {.tv_sec = (time_t)(clock_ns / 1000000000u),
			      .tv_nsec = (long)(clock_ns % 1000000000u)};
	if (clock_settime(CLOCK_REALTIME, &ts) < 0)
		return send_err("set the clock: %s", strerror(errno));

	disk_bytes = disk;
	snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu", (unsigned long long)disk,
		 (unsigned long long)scratch_inodes(disk));
	if (mount(NULL, "/rw", NULL, MS_REMOUNT | MS_NOSUID | MS_NODEV, opts) < 0)
		return send_err("size the writable tree: %s", strerror(errno));
	if (!resealed)
		treefd = open("/rw", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	resealed = false;
	if (treefd < 0)
		return send_err("open the writable tree: %s", strerror(errno));
	send_ok();
}

static void chown_for(int fd, uint32_t flags, mode_t mode)
{
	if (flags & PROTO_PUT_HARNESS_OWNED) {
		fchown(fd, HARNESS_ID, HARNESS_ID);
		fchmod(fd, mode & 0777);
	} else if (flags & PROTO_PUT_HARNESS) {
		fchown(fd, 0, HARNESS_ID);
		fchmod(fd, mode & 0640);
	} else if (flags & PROTO_PUT_PROTECTED) {
		fchown(fd, 0, 0);
		fchmod(fd, mode & 0755);
	} else {
		fchown(fd, STUDENT_ID, STUDENT_ID);
		fchmod(fd, mode & 0777);
	}
}

/*
 * The jail's rule (jail/files.c), so a put leaves the same tree on both
 * backends.  A parent of a put that is not the program's (PROTO_PUT_PARENT)
 * is made what put_parent_rule() (util.h) says.  Otherwise a directory
 * this request creates belongs to the program (uid 1000, mode) or,
 * protected, to root (mode & 01777: 0755 for a directory of a protected
 * tree, 01777 for /work and /tmp themselves).  An existing directory is
 * left as it is, except under a protected put: one the program owns is
 * taken back (root, 01777), so it cannot be used to delete or rename what
 * is put in it.  A directory of a harness put gets exactly its owner and
 * mode, created or not: root:1001 mode & 0750, or 1001:1001 mode & 0777.
 */
static void do_mkdir(uint32_t len)
{
	struct preader r;
	char path[PROTO_MAX_STR], last[PROTO_MAX_STR];
	uint32_t mode, flags;
	struct stat st;
	bool created;
	int pfd, fd, rc = 0;

	preader_init(&r, ib, len);
	preader_str(&r, path, sizeof(path));
	mode = preader_u32(&r);
	flags = preader_u32(&r);
	if (preader_end(&r) < 0 || !proto_path_ok(path) || treefd < 0)
		return send_err("malformed MKDIR");
	if ((pfd = open_parent(path, last, sizeof(last))) < 0)
		return send_err("mkdir %s: %s", path, strerror(errno));
	created = mkdirat(pfd, last, 0700) == 0;
	if (!created && errno != EEXIST) {
		close(pfd);
		return send_err("mkdir %s: %s", path, strerror(errno));
	}
	close(pfd);
	if ((fd = open_beneath(treefd, path, O_RDONLY | O_DIRECTORY, 0)) < 0 ||
	    fstat(fd, &st) < 0) {
		int saved = errno;
		if (fd >= 0)
			close(fd);
		return send_err("mkdir %s: %s", path, strerror(saved));
	}
	mode_t pmode;
	if (flags & PROTO_PUT_PARENT) {
		bool harness = flags & (PROTO_PUT_HARNESS | PROTO_PUT_HARNESS_OWNED);
		if (put_parent_rule(&st, created, harness, HARNESS_ID, &pmode))
			rc = fchown(fd, 0, 0) < 0 || fchmod(fd, pmode) < 0;
	} else if (flags & PROTO_PUT_HARNESS_OWNED) {
		rc = fchown(fd, HARNESS_ID, HARNESS_ID) < 0 || fchmod(fd, mode & 0777) < 0;
	} else if (flags & PROTO_PUT_HARNESS) {
		rc = fchown(fd, 0, HARNESS_ID) < 0 || fchmod(fd, mode & 0750) < 0;
	} else if (!(flags & PROTO_PUT_PROTECTED)) {
		if (created)
			rc = fchown(fd, STUDENT_ID, STUDENT_ID) < 0 || fchmod(fd, mode & 0777) < 0;
	} else if (created) {
		rc = fchown(fd, 0, 0) < 0 || fchmod(fd, mode & 01777) < 0;
	} else if (st.st_uid != 0) {
		rc = fchown(fd, 0, 0) < 0 || fchmod(fd, 01777) < 0;
	}
	int saved = errno;
	close(fd);
	if (rc)
		return send_err("mkdir %s: set owner and mode: %s", path, strerror(saved));
	send_ok();
}

static void do_put(uint32_t len)
{
	struct preader r;
	char path[PROTO_MAX_STR], msg[512] = "";
	uint32_t mode, flags;
	int fd = -1;

	preader_init(&r, ib, len);
	preader_str(&r, path, sizeof(path));
	mode = preader_u32(&r);
	flags = preader_u32(&r);
	if (preader_end(&r) < 0 || !proto_path_ok(path) || treefd < 0)
		snprintf(msg, sizeof(msg), "malformed PUT");
	else if ((fd = replace_beneath(treefd, path, 0600)) < 0)
		snprintf(msg, sizeof(msg), "put %s: %s", path, strerror(errno));
	/* Take every chunk even after a failure, so the stream stays in step. */
	for (;;) {
		uint32_t n;
		unsigned t = recv_frame(&n);
		if (t == P_PUT_END)
			break;
		if (t != P_DATA) {
			errno = EPROTO;
			halt("PUT interrupted by another request");
		}
		preader_init(&r, ib, n);
		size_t dn;
		const unsigned char *d = preader_bytes(&r, PROTO_MAX_PAYLOAD, &dn);
		if (!d || preader_end(&r) < 0) {
			snprintf(msg, sizeof(msg), "malformed DATA");
			continue;
		}
		while (fd >= 0 && dn) {
			ssize_t w = write(fd, d, dn);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				snprintf(msg, sizeof(msg), "put %s: %s", path,
					 strerror(w < 0 ? errno : ENOSPC));
				close(fd);
				fd = -1;
				break;
			}
			d += w;
			dn -= (size_t)w;
		}
	}
	if (fd >= 0) {
		chown_for(fd, flags, mode);
		close(fd);
	}
	if (msg[0])
		return send_err("%s", msg);
	send_ok();
}

/* Send one regular file, opened, as P_FILE + P_DATA... + P_FILE_END. */
static int send_file(int fd, const char *rel, const struct stat *st)
{
	static unsigned char chunk[PROTO_CHUNK];

	pbuf_start(&ob, P_FILE);
	pbuf_str(&ob, rel);
	pbuf_u32(&ob, st->st_mode & 0777);
	pbuf_u64(&ob, (uint64_t)st->st_size);
	send_frame();
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		pbuf_start(&ob, P_DATA);
		pbuf_bytes(&ob, chunk, (size_t)n);
		send_frame();
	}
	pbuf_start(&ob, P_FILE_END);
	send_frame();
	return 0;
}

/* A directory tree: regular files only; links and special files skipped.
 * -1 when it is nested deeper than TREE_MAX_DEPTH or a path is too long
 * (rel_err says which): the jail's get fails on both (files.c get_tree()). */
static int send_tree(int dfd, const char *prefix, int depth, char *rel_err, size_t cap)
{
	DIR *d;
	struct dirent *de;
	int rc = 0;

	if (depth > TREE_MAX_DEPTH) {
		close(dfd);
		snprintf(rel_err, cap, "'%s' is nested too deeply", prefix);
		return -1;
	}
	if (!(d = fdopendir(dfd))) {
		close(dfd);
		return 0;
	}
	while (rc == 0 && (de = readdir(d))) {
		char rel[PROTO_MAX_STR];
		struct stat st;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(rel, sizeof(rel), "%s%s%s", prefix, prefix[0] ? "/" : "",
				     de->d_name) >= sizeof(rel)) {
			snprintf(rel_err, cap, "a path below '%s' is too long", prefix);
			rc = -1;
			break;
		}
		/* A name with a control character, whatever it is: one empty
		 * file frame, which the host counts as left out, never opened
		 * nor entered (the jail's get_tree() skips it so). */
		if (name_has_control(de->d_name)) {
			pbuf_start(&ob, P_FILE);
			pbuf_str(&ob, rel);
			pbuf_u32(&ob, 0);
			pbuf_u64(&ob, 0);
			send_frame();
			pbuf_start(&ob, P_FILE_END);
			send_frame();
			continue;
		}
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) < 0)
			close(fd);
		else if (S_ISREG(st.st_mode)) {
			send_file(fd, rel, &st);
			close(fd);
		} else if (S_ISDIR(st.st_mode))
			rc = send_tree(fd, rel, depth + 1, rel_err, cap);
		else
			close(fd);
	}
	closedir(d);
	return rc;
}

static void do_get(uint32_t len)
{
	struct preader r;
	char path[PROTO_MAX_STR];
	struct stat st;
	int fd;

	preader_init(&r, ib, len);
	preader_str(&r, path, sizeof(path));
	if (preader_end(&r) < 0 || !proto_path_ok(path) || treefd < 0)
		return send_err("malformed GET");
	fd = open_beneath(treefd, path, O_RDONLY | O_NONBLOCK, 0);
	if (fd < 0 || fstat(fd, &st) < 0)
		return send_err("get %s: %s", path, strerror(errno));
	if (S_ISREG(st.st_mode)) {
		send_file(fd, "", &st);
		close(fd);
	} else if (S_ISDIR(st.st_mode)) {
		char why[PROTO_MAX_STR + 64];
		if (send_tree(fd, "", 0, why, sizeof(why)) < 0)
			return send_err("get %s: %s", path, why);
	} else {
		close(fd);
		return send_err("get %s: not a regular file or directory", path);
	}
	send_ok();
}

/* Read a file of the image whole, into the page cache. */
static void warm_file(const char *path)
{
	static char buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
	if (fd >= 0)
		close(fd);
}

/* Before a snapshot: the caches of the boot dropped, then the files every
 * run starts with (the loader, its cache, libc, sh, true) read back in, so that no
 * restored VM decompresses them again (squashfs, emulated under TCG). */
static void do_quiesce(void)
{
	static const char *const warm[] = {
	    ROOT "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2",
	    ROOT "/usr/lib/x86_64-linux-gnu/libc.so.6",
	    ROOT "/usr/bin/dash",
	    ROOT "/usr/bin/true",
	    ROOT "/etc/ld.so.cache",
	};

	sync();
	/* A template (set up, with files and maybe a zygote) keeps its
	 * caches: what its runs read is what it has read. */
	if (treefd >= 0) {
		resealed = true;
		return send_ok();
	}
	write_str("/proc/sys/vm/drop_caches", "3");
	for (size_t i = 0; i < sizeof(warm) / sizeof(warm[0]); i++)
		warm_file(warm[i]);
	write_str("/proc/sys/vm/compact_memory", "1");
	send_ok();
}

/* ---- runs ---- */

/* A run's resource limits, on process `pid` (0: this one), as the jail
 * sets them (jail/creds.c).  CPU is a backstop only: it is counted over
 * the whole cgroup. */
static void set_rlimits(pid_t pid, const struct proto_run_limits *l)
{
	struct rlimit rl = {0, 0};

	prlimit(pid, RLIMIT_CORE, &rl, NULL);
	prlimit(pid, RLIMIT_MEMLOCK, &rl, NULL);
	prlimit(pid, RLIMIT_MSGQUEUE, &rl, NULL);
	rl.rlim_cur = rl.rlim_max = l->fsize_bytes;
	prlimit(pid, RLIMIT_FSIZE, &rl, NULL);
	rl.rlim_cur = rl.rlim_max = l->nofile;
	prlimit(pid, RLIMIT_NOFILE, &rl, NULL);
	rl.rlim_cur = l->cpu_ms / 1000 + 2;
	rl.rlim_max = rl.rlim_cur + 1;
	prlimit(pid, RLIMIT_CPU, &rl, NULL);
	rl.rlim_cur = rl.rlim_max = l->pids + 16;
	prlimit(pid, RLIMIT_NPROC, &rl, NULL);
}

/*
 * One program of a run: argv with env, as `id` (a split run's harness
 * HARNESS_ID, else STUDENT_ID), stdin `in`, and in a split run its end of
 * the channel as fd 3 (SANDBOX_CHANNEL_FD of src/sandbox.h), inherited.
 * errfd (CLOEXEC) receives errno if execve is not reached.
 */
static _Noreturn void child(const struct proto_run *q, char *const *argv, char *const *env,
			    uid_t id, int out, int err, int in, int errfd, int chanfd,
			    const char *cgroup_procs)
{
	int e;

	if (write_str(cgroup_procs, "0") < 0)
		goto fail;
	setsid();
	if (dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0)
		goto fail;
	/* The exec report moves out of the way of fd 3; the channel goes
	 * there without CLOEXEC (dup2 clears it; already there, cleared). */
	if ((e = fcntl(errfd, F_DUPFD_CLOEXEC, 10)) < 0)
		goto fail;
	errfd = e;
	if (chanfd >= 0 && (chanfd == 3 ? fcntl(3, F_SETFD, 0) : dup2(chanfd, 3)) < 0)
		goto fail;
	write_str("/proc/self/oom_score_adj", "0");
	setpriority(PRIO_PROCESS, 0, 0);
	if (chroot(ROOT) < 0 || chdir("/work") < 0)
		goto fail;
	set_rlimits(0, &q->l);
	if (!(q->l.flags & PROTO_RUN_PRIVILEGED) &&
	    (setgroups(0, NULL) < 0 || setresgid(id, id, id) < 0 || setresuid(id, id, id) < 0 ||
	     prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0))
		goto fail;
	/* SECURITY: the jail's system-call filter (src/host/seccomp.c), last
	 * before execve: the same calls are refused or fatal in both backends,
	 * and a signal that reports a limit (SIGSYS, SIGXCPU, SIGXFSZ) comes
	 * only from the limit.  A privileged run (Proctor's own tests in the
	 * guest) needs mounts and namespaces, so it goes without. */
	if (!(q->l.flags & PROTO_RUN_PRIVILEGED)) {
		struct sock_fprog prog = {
		    .len = sizeof(seccomp_program) / sizeof(seccomp_program[0]),
		    .filter = (struct sock_filter *)seccomp_program,
		};
		if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
			goto fail;
	}
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	environ = (char **)env;
	execvp(argv[0], argv);
fail:
	e = errno;
	if (write(errfd, &e, sizeof(e)) < 0) {
		/* nothing left to tell */
	}
	_exit(127);
}

/* For a privileged run (a test of Proctor itself in the guest): /sys and the
 * cgroup2 hierarchy inside the root, once.  The program's own cgroup is
 * "run", whose memory, pids and cpu controllers it may delegate further. */
static int mount_system(void)
{
	static bool done;

	if (done)
		return 0;
	mkdir(ROOT "/sys", 0555);
	if (mount("sysfs", ROOT "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0 ||
	    mount("cgroup2", ROOT "/sys/fs/cgroup", "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return -1;
	done = true;
	return 0;
}

/* Bytes of files in the writable tree, and whether it is full (the disk
 * limit, by the rule the jail uses: scratch.h). */
static uint64_t tree_used(bool *full)
{
	struct statfs sf;

	if (statfs("/rw", &sf) < 0) {
		*full = false;
		return 0;
	}
	*full = scratch_full((uint64_t)sf.f_bavail * (uint64_t)sf.f_bsize, sf.f_ffree);
	return (uint64_t)(sf.f_blocks - sf.f_bfree) * (uint64_t)sf.f_bsize;
}

/*
 * The program's memory, measured as the jail measures it (jail.c,
 * check_budgets): what the run's cgroup is charged and reclaim cannot take
 * back -- anonymous memory, shared memory (memfd, shared mappings, SysV
 * shm) and kernel memory (socket buffers, pipes, page tables), i.e.
 * memory.current less the page cache that is not shmem -- less the files
 * of the writable tree, which the disk limit governs.
 */
/* Bytes of the writable tree that were there before the run started (put
 * in by the agent, in its own group, or charged to an earlier run's
 * group): never charged to this run's group, so never subtracted. */
static uint64_t run_files_uncharged;

static uint64_t run_memory(void)
{
	char stat[8192];
	uint64_t cur = read_u64(CG "/run/memory.current"), file = 0, shmem = 0;
	bool full;

	if (read_text(CG "/run/memory.stat", stat, sizeof(stat)) == 0) {
		stat_field(stat, "file", &file);
		stat_field(stat, "shmem", &shmem);
	}
	uint64_t reclaimable = file > shmem ? file - shmem : 0;
	uint64_t held = cur > reclaimable ? cur - reclaimable : 0;
	uint64_t files = tree_used(&full);
	files = files > run_files_uncharged ? files - run_files_uncharged : 0;
	if (files > shmem)
		files = shmem;
	return held > files ? held - files : 0;
}

/* Over the limit by the measure above: first ask the kernel for the excess
 * (and an eighth of the limit) back, as the jail does, since part may be
 * kernel memory that pressure reclaims (dentries, inodes); then measure
 * again. */
static bool run_over_memory(uint64_t limit)
{
	uint64_t mem = run_memory();
	char val[32];

	if (mem <= limit)
		return false;
	snprintf(val, sizeof(val), "%llu", (unsigned long long)(mem - limit + limit / 8));
	write_str(CG "/run/memory.reclaim", val);
	return run_memory() > limit;
}

static void kill_run(void)
{
	write_str(CG "/run/cgroup.kill", "1");
}

/* Forward what a pipe has, keeping at most cap bytes of each stream. */
static int drain(int fd, unsigned stream, uint64_t *total, uint64_t cap)
{
	static unsigned char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n == 0)
		return 0;
	if (*total < cap) {
		uint64_t room = cap - *total;
		size_t send = (uint64_t)n < room ? (size_t)n : (size_t)room;
		pbuf_start(&ob, P_OUT);
		pbuf_u32(&ob, stream);
		pbuf_bytes(&ob, buf, send);
		send_frame();
	}
	*total += (uint64_t)n;
	return 1;
}

/* Close both ends of a pipe or socket pair that are open (-1: not). */
static void close_pair(const int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0)
			close(p[i]);
}

/* ---- a template's zygote ---- */

/*
 * A zygote is a harness program started once, in a template (P_ZYGOTE),
 * before any submission's file is in the guest: it loads what every run of
 * it would load (pytest) and then forks a copy of itself per run.  It runs
 * as HARNESS_ID, chrooted, with the run's system-call filter and
 * no_new_privs, in cgroup "zygote", and holds one end of a SOCK_SEQPACKET
 * pair as fd 3; the agent keeps the other.  It says "ready" once loaded.
 * Per run (zygote_spawn) the agent sends argv and env, NUL-separated with
 * an empty string between them, and as SCM_RIGHTS stdin, stdout, stderr,
 * the read end of a "go" pipe and the run's channel; the zygote forks twice
 * so that the new process is the agent's (PID 1's) child and answers
 * "pid N".  The agent moves that process into the run's cgroup and sets
 * the run's rlimits before writing "g" to the go pipe: only then does it
 * run.  Anything amiss and the run starts as always, by exec.
 * The zygote's own state came from the template and is the same in every
 * VM restored from it; a forked run gets no more than an exec'd one would
 * (docs/vm-protocol.md, P_ZYGOTE).
 */
static pid_t zygote_pid = -1;
static int zygote_ctl = -1;

static void zygote_gone(void)
{
	if (zygote_pid > 0)
		kill(zygote_pid, SIGKILL);
	zygote_pid = -1;
	if (zygote_ctl >= 0)
		close(zygote_ctl);
	zygote_ctl = -1;
}

/* Receive one datagram from the zygote within ms; its length or -1. */
static ssize_t zygote_recv(char *buf, size_t cap, int ms)
{
	struct pollfd p = {.fd = zygote_ctl, .events = POLLIN};

	if (poll(&p, 1, ms) <= 0)
		return -1;
	ssize_t n = recv(zygote_ctl, buf, cap - 1, MSG_DONTWAIT);
	if (n > 0)
		buf[n] = 0;
	return n > 0 ? n : -1;
}

static void do_zygote(uint32_t len)
{
	static struct proto_run q;
	int sp[2] = {-1, -1}, po[2] = {-1, -1}, px[2] = {-1, -1};
	char msg[256] = "", out[512] = "";
	size_t out_n = 0;
	pid_t pid;

	if (proto_parse_run(ib, len, &q) < 0 || treefd < 0 || q.peer_argv[0]) {
		proto_run_free(&q);
		return send_err("malformed ZYGOTE");
	}
	zygote_gone();
	if ((mkdir(CG "/zygote", 0755) < 0 && errno != EEXIST) ||
	    write_u64(CG "/zygote/memory.max", q.l.memory_bytes) < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0 ||
	    pipe2(po, O_CLOEXEC) < 0 || pipe2(px, O_CLOEXEC) < 0) {
		snprintf(msg, sizeof(msg), "zygote: %s", strerror(errno));
		goto out;
	}
	int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	pid = fork();
	if (pid == 0)
		child(&q, q.argv, q.env, HARNESS_ID, po[1], po[1], nul, px[1], sp[1],
		      CG "/zygote/cgroup.procs");
	if (nul >= 0)
		close(nul);
	close(po[1]);
	close(px[1]);
	close(sp[1]);
	po[1] = px[1] = sp[1] = -1;
	if (pid < 0) {
		snprintf(msg, sizeof(msg), "zygote: fork: %s", strerror(errno));
		goto out;
	}
	zygote_pid = pid;
	zygote_ctl = sp[0];
	sp[0] = -1;
	/* Until it is ready: its output kept for the error, its exit noticed. */
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	uint64_t end = now_ns() / 1000000 + q.l.wall_ms;
	for (;;) {
		struct pollfd p[2] = {{.fd = zygote_ctl, .events = POLLIN},
				      {.fd = po[0], .events = POLLIN}};
		int st;
		poll(p, 2, TICK_MS);
		ssize_t n = read(po[0], out + out_n, sizeof(out) - 1 - out_n);
		if (n > 0)
			out_n += (size_t)n;
		if (out_n == sizeof(out) - 1)
			out_n = 0; /* keep reading: the last part matters */
		if (p[0].revents & POLLIN) {
			char ready[16];
			if (zygote_recv(ready, sizeof(ready), 0) == 5 &&
			    strcmp(ready, "ready") == 0)
				break;
			snprintf(msg, sizeof(msg), "zygote: not ready");
		} else if (waitpid(pid, &st, WNOHANG) == pid) {
			zygote_pid = -1;
			int e = 0;
			if (read(px[0], &e, sizeof(e)) == (ssize_t)sizeof(e))
				snprintf(msg, sizeof(msg), "zygote: cannot execute '%s': %s",
					 q.argv[0], strerror(e));
			else
				snprintf(msg, sizeof(msg), "zygote: exited with status %d",
					 WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		} else if (now_ns() / 1000000 > end)
			snprintf(msg, sizeof(msg), "zygote: not ready within %llu ms",
				 (unsigned long long)q.l.wall_ms);
		if (msg[0])
			break;
	}
out:
	if (msg[0]) {
		zygote_gone();
		out[out_n] = 0;
		for (size_t i = 0; i < out_n; i++)
			if ((unsigned char)out[i] < 32)
				out[i] = ' ';
		size_t m = strlen(msg);
		snprintf(msg + m, sizeof(msg) - m, "%s%.200s", out_n ? ": " : "",
			 out_n > 200 ? out + out_n - 200 : out);
	}
	close_pair(sp);
	close_pair(po);
	close_pair(px);
	proto_run_free(&q);
	if (msg[0])
		return send_err("%s", msg);
	send_ok();
}

/* The harness of run q as a fork of the zygote, in the run's cgroup with
 * its rlimits: its pid (a child of ours), or -1 to start it by exec. */
static pid_t zygote_spawn(const struct proto_run *q, int in, int out, int err, int chan)
{
	static char buf[PROTO_MAX_PAYLOAD];
	size_t n = 0;
	int go[2];
	pid_t pid = -1;
	char ans[64];

	if (zygote_pid <= 0 || pipe2(go, O_CLOEXEC) < 0)
		return -1;
	for (int pass = 0; pass < 2; pass++) {
		char *const *v = pass ? q->env : q->argv;
		for (size_t i = 0; v[i]; i++) {
			size_t l = strlen(v[i]) + 1;
			if (n + l + 1 > sizeof(buf))
				goto out;
			memcpy(buf + n, v[i], l);
			n += l;
		}
		buf[n++] = 0;
	}
	int fds[5] = {in, out, err, go[0], chan};
	struct iovec iov = {.iov_base = buf, .iov_len = n};
	if (send_with_fds(zygote_ctl, &iov, 1, fds, 5) != (ssize_t)n ||
	    zygote_recv(ans, sizeof(ans), 5000) < 0 || strncmp(ans, "pid ", 4) != 0) {
		zygote_gone();
		goto out;
	}
	long p = strtol(ans + 4, NULL, 10);
	char procs[32], path[64], stat[512], cg[64];
	snprintf(procs, sizeof(procs), "%ld", p);
	snprintf(path, sizeof(path), "/proc/%ld/stat", p);
	/* Ours (its parent exited and was reaped), forked by the zygote (in
	 * its cgroup, not the zygote itself), or not one to run. */
	const char *paren = read_text(path, stat, sizeof(stat)) == 0 ? strrchr(stat, ')') : NULL;
	snprintf(path, sizeof(path), "/proc/%ld/cgroup", p);
	if (p <= 1 || p == zygote_pid || !paren || strncmp(paren + 3, " 1 ", 3) != 0 ||
	    read_text(path, cg, sizeof(cg)) < 0 || strcmp(cg, "0::/zygote\n") != 0 ||
	    write_str(CG "/run/cgroup.procs", procs) < 0) {
		if (p > 1)
			kill((pid_t)p, SIGKILL);
		zygote_gone();
		goto out;
	}
	pid = (pid_t)p;
	set_rlimits(pid, &q->l);
	if (write(go[1], "g", 1) != 1) {
		kill(pid, SIGKILL);
		pid = -1;
	}
out:
	close(go[0]);
	close(go[1]);
	return pid;
}

/* The guest's idle time so far, ms (/proc/uptime's second field: the
 * vCPU halted, waiting for an interrupt). */
static uint64_t idle_ms(void)
{
	char buf[128];
	double up, idle;
	int fd = open("/proc/uptime", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lf %lf", &up, &idle) != 2 || idle < 0)
		return 0;
	return (uint64_t)(idle * 1000.0);
}

/* The guest's idle time since idle0 (ms), when a time factor needs it. */
static uint64_t idle_since(uint64_t idle0, const struct proto_run_limits *l)
{
	uint64_t cur = l->factor_milli > 1000 ? idle_ms() : 0;

	return cur > idle0 ? cur - idle0 : 0;
}

/*
 * The wall time a run is held to, against its limit (scaled by the time
 * factor, run_spec.time_factor): the time the guest was busy (the program,
 * the agent draining its output, the kernel: all emulated, all slowed)
 * plus the time the vCPU sat idle (the program asleep or waiting for
 * input: real time, not slowed) times the factor.  One vCPU, so idle time
 * is the whole guest's.
 */
static uint64_t wall_counted(uint64_t elapsed_ms, uint64_t idle, const struct proto_run_limits *l)
{
	if (idle > elapsed_ms)
		idle = elapsed_ms;
	return elapsed_ms - idle + idle * l->factor_milli / 1000;
}

static void do_run(uint32_t len)
{
	static struct proto_run q;
	struct proto_exit x = {.exit_code = -1};
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, px[2] = {-1, -1}, in = -1;
	int ch[2] = {-1, -1}, ppx[2] = {-1, -1}, nul = -1; /* a split run's channel, peer report */
	pid_t pid, peer = -1;
	bool peer_failed = false;
	uint64_t t0, t_end = 0, peak_pids = 0;
	bool exited = false, killed = false, out_open = true, err_open = true;
	int status = 0;

	bool split;
	if (proto_parse_run(ib, len, &q) < 0 || treefd < 0) {
		proto_run_free(&q);
		return send_err("malformed RUN");
	}
	/* A fresh IPC namespace for the run's processes, as the jail makes one
	 * per run: SysV objects an earlier run (the build) left are out of
	 * reach, and go with their namespace once its processes are gone.  A
	 * harness forked from a template's zygote stays in the zygote's. */
	if (unshare(CLONE_NEWIPC) < 0) {
		x.flags = PROTO_EXIT_NOT_STARTED;
		snprintf(x.message, sizeof(x.message), "a new IPC namespace: %s", strerror(errno));
		goto send;
	}
	/* A fresh run cgroup: peaks and event counters start at zero. */
	for (int i = 0; i < 200 && rmdir(CG "/run") < 0 && errno == EBUSY; i++)
		usleep(5000);
	if (mkdir(CG "/run", 0755) < 0 ||
	    write_u64(CG "/run/memory.max", q.l.memory_bytes + disk_bytes) < 0 ||
	    write_u64(CG "/run/pids.max", q.l.pids) < 0) {
		x.flags = PROTO_EXIT_NOT_STARTED;
		snprintf(x.message, sizeof(x.message), "make the run cgroup: %s", strerror(errno));
		goto send;
	}
	write_str(CG "/run/memory.swap.max", "0");
	write_str(CG "/run/cpu.weight", "100");
	if ((q.l.flags & PROTO_RUN_PRIVILEGED) && mount_system() < 0) {
		x.flags = PROTO_EXIT_NOT_STARTED;
		snprintf(x.message, sizeof(x.message), "mount /sys for a privileged run: %s",
			 strerror(errno));
		goto send;
	}
	if (q.stdin_path[0])
		in = open_beneath(treefd, q.stdin_path, O_RDONLY, 0);
	else
		in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		x.flags = PROTO_EXIT_NOT_STARTED;
		snprintf(x.message, sizeof(x.message), "open stdin: %s", strerror(errno));
		goto send;
	}
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 || pipe2(px, O_CLOEXEC) < 0) {
		x.flags = PROTO_EXIT_NOT_STARTED;
		snprintf(x.message, sizeof(x.message), "pipe: %s", strerror(errno));
		goto send;
	}
	/* A split run: the harness (argv, HARNESS_ID) and the peer
	 * (peer_argv, STUDENT_ID, stdin /dev/null), one end each of a
	 * connected stream pair as fd 3; the run is the harness's. */
	split = q.peer_argv[0] != NULL;
	if (split &&
	    (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ch) < 0 ||
	     pipe2(ppx, O_CLOEXEC) < 0 || (nul = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0)) {
		x.flags = PROTO_EXIT_NOT_STARTED;
		snprintf(x.message, sizeof(x.message), "the split run's channel: %s",
			 strerror(errno));
		goto send;
	}
	/* The run's group is new: nothing of the tree is charged to it yet. */
	bool tree_full;
	run_files_uncharged = tree_used(&tree_full);
	pid = -1;
	if ((q.l.flags & PROTO_RUN_ZYGOTE) && !(q.l.flags & PROTO_RUN_PRIVILEGED) && split)
		pid = zygote_spawn(&q, in, po[1], pe[1], ch[0]);
	/* From its release (a fork of the zygote) or its fork: a zygote that
	 * is slow to answer is not the program's time. */
	t0 = now_ns() / 1000000;
	uint64_t idle0 = q.l.factor_milli > 1000 ? idle_ms() : 0;
	if (pid < 0)
		pid = fork();
	if (pid < 0) {
		x.flags = PROTO_EXIT_NOT_STARTED;
		snprintf(x.message, sizeof(x.message), "fork: %s", strerror(errno));
		goto send;
	}
	if (pid == 0)
		child(&q, q.argv, q.env, split ? HARNESS_ID : STUDENT_ID, po[1], pe[1], in, px[1],
		      ch[0], CG "/run/cgroup.procs");
	if (split) {
		peer = fork();
		if (peer == 0)
			child(&q, q.peer_argv, q.peer_env, STUDENT_ID, po[1], pe[1], nul, ppx[1],
			      ch[1], CG "/run/cgroup.procs");
		if (peer < 0) {
			kill_run();
			x.flags = PROTO_EXIT_NOT_STARTED;
			snprintf(x.message, sizeof(x.message), "fork the peer: %s",
				 strerror(errno));
			while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
				;
			goto send;
		}
		close(ch[0]);
		close(ch[1]);
		close(ppx[1]);
		ch[0] = ch[1] = ppx[1] = -1;
	}
	close(po[1]);
	close(pe[1]);
	close(px[1]);
	po[1] = pe[1] = px[1] = -1;
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);

	uint64_t kill_at = 0;
	while (out_open || err_open || !exited) {
		struct pollfd p[2] = {{.fd = out_open ? po[0] : -1, .events = POLLIN},
				      {.fd = err_open ? pe[0] : -1, .events = POLLIN}};
		poll(p, 2, TICK_MS);
		if (out_open && (p[0].revents & (POLLIN | POLLHUP | POLLERR)))
			out_open = drain(po[0], 1, &x.out_total, q.l.output_bytes);
		if (err_open && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			err_open = drain(pe[0], 2, &x.err_total, q.l.output_bytes);
		/* Reap everything: orphans of the program are our children. */
		for (;;) {
			int st;
			pid_t w = waitpid(-1, &st, WNOHANG);
			if (w <= 0)
				break;
			if (w == zygote_pid) { /* reaped: its pid is no longer its own */
				zygote_pid = -1;
				zygote_gone();
			}
			if (w == pid && !exited) {
				exited = true;
				status = st;
				t_end = now_ns() / 1000000;
			}
			/* A peer that could not be executed ends the run as a
			 * program that could not be: exit 127, naming it. */
			int pe_errno;
			if (w == peer && !exited &&
			    read(ppx[0], &pe_errno, sizeof(pe_errno)) ==
				(ssize_t)sizeof(pe_errno)) {
				peer_failed = true;
				exited = true;
				status = 127 << 8;
				t_end = now_ns() / 1000000;
				x.flags |= PROTO_EXIT_EXEC_FAILED;
				snprintf(x.message, sizeof(x.message),
					 "peer: cannot execute '%s': %s", q.peer_argv[0],
					 strerror(pe_errno));
			}
		}
		uint64_t now = now_ns() / 1000000;
		uint64_t cur = read_u64(CG "/run/pids.current");
		if (cur > peak_pids)
			peak_pids = cur;
		if (!killed) {
			uint64_t cpu_us = stat_key(CG "/run/cpu.stat", "usage_usec");
			if (cpu_us / 1000 >= q.l.cpu_ms)
				x.killed_for |= HIT_CPU;
			else if (!exited && wall_counted(now - t0, idle_since(idle0, &q.l), &q.l) >
						q.l.wall_ms)
				x.killed_for |= HIT_WALL;
			else if (!exited && run_over_memory(q.l.memory_bytes))
				x.killed_for |= HIT_MEMORY;
			if (x.killed_for || exited) {
				/* The program is done (or out of a limit): no daemon
				 * outlives it, and its pipes reach EOF. */
				kill_run();
				killed = true;
				kill_at = now;
				if (!exited)
					t_end = now;
			}
		} else if (now - kill_at > 200) {
			kill_run();
			kill_at = now;
		}
	}
	int e;
	if (!peer_failed && read(px[0], &e, sizeof(e)) == (ssize_t)sizeof(e)) {
		x.flags |= PROTO_EXIT_EXEC_FAILED;
		snprintf(x.message, sizeof(x.message), "cannot execute '%s': %s", q.argv[0],
			 strerror(e));
	}
	if (WIFEXITED(status)) {
		x.flags |= PROTO_EXIT_EXITED;
		x.exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		x.flags |= PROTO_EXIT_SIGNALED;
		x.signal = WTERMSIG(status);
	}
	x.wall_ms = t_end - t0;
	x.cpu_ms = stat_key(CG "/run/cpu.stat", "usage_usec") / 1000;
	x.peak_memory_kib = read_u64(CG "/run/memory.peak") / 1024;
	x.peak_pids = peak_pids;
	if (stat_key(CG "/run/memory.events", "oom_kill") > 0)
		x.flags |= PROTO_EXIT_OOM_KILL;
	if (stat_key(CG "/run/pids.events", "max") > 0)
		x.flags |= PROTO_EXIT_PIDS_HIT;
	bool full;
	tree_used(&full);
	if (full)
		x.flags |= PROTO_EXIT_DISK_FULL;
send:
	close_pair(po);
	close_pair(pe);
	close_pair(px);
	close_pair(ch);
	close_pair(ppx);
	if (in >= 0)
		close(in);
	if (nul >= 0)
		close(nul);
	proto_run_free(&q);
	pbuf_start(&ob, P_EXIT);
	pbuf_u32(&ob, x.flags);
	pbuf_u32(&ob, x.killed_for);
	pbuf_u32(&ob, (uint32_t)x.exit_code);
	pbuf_u32(&ob, (uint32_t)x.signal);
	pbuf_u64(&ob, x.cpu_ms);
	pbuf_u64(&ob, x.wall_ms);
	pbuf_u64(&ob, x.peak_memory_kib);
	pbuf_u64(&ob, x.peak_pids);
	pbuf_u64(&ob, x.out_total);
	pbuf_u64(&ob, x.err_total);
	pbuf_str(&ob, x.message);
	send_frame();
}

int main(void)
{
	if (getpid() != 1) {
		fprintf(stderr, "proctor-agent: this is a microVM's init; it runs as PID 1 only\n");
		return 2;
	}
	if (!(ib = malloc(PROTO_MAX_PAYLOAD)))
		halt("malloc");
	boot();
	hello();
	for (;;) {
		uint32_t len;
		unsigned t = recv_frame(&len);

		switch (t) {
		case P_SETUP:
			do_setup(len);
			break;
		case P_MKDIR:
			do_mkdir(len);
			break;
		case P_PUT:
			do_put(len);
			break;
		case P_GET:
			do_get(len);
			break;
		case P_RUN:
			do_run(len);
			break;
		case P_QUIESCE:
			do_quiesce();
			break;
		case P_PING:
			send_ok();
			break;
		case P_ZYGOTE:
			do_zygote(len);
			break;
		default:
			send_err("unknown request type %u", t);
			break;
		}
	}
}
