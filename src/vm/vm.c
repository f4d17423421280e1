/* The microVM backend: each sandbox a QEMU `microvm` guest with its own kernel, from a snapshot. */

/*
 * Theory of operation
 * -------------------
 * The guest side is hypervisor-neutral: an image's read-only filesystem
 * (rootfs.squashfs), Debian's cloud kernel booted through PVH (vm/vmlinux of
 * the image) and an initramfs holding the modules and proctor-agent as init
 * (agent/agent.c).  The host talks to the agent over one virtio-serial port
 * with the protocol of vm/proto.h; every byte the guest sends is parsed with
 * caps on lengths and counts, and a guest that stops answering is killed.
 *
 * create() leases a slot (host/slot.h: uid, cgroups, lock; the jail leases
 * the same ones), picks the RAM shape, and restores the snapshot for (image,
 * kernel, initramfs, agent, QEMU, shape, command line, host CPU, TSC rate) --
 * building it first if there is none: a cold boot to the agent's hello,
 * P_QUIESCE (sync, drop caches), then a QMP migrate to a file with the
 * x-ignore-shared capability: guest RAM is a memory-backend-file shared with
 * <key>.state.ram (pages never touched stay holes), so only device state goes
 * into <key>.state.  A restore maps that RAM from a sealed memfd (copied once
 * per process, holes kept) privately, copy on write: every VM of the process
 * shares the pages it only reads, and no QEMU can write what later sandboxes
 * restore (QEMU 7.2 opens a mem-path read-write, so the file itself could not
 * be handed to it).  QEMU starts with -incoming defer, gets the same
 * capability over QMP and loads the device state; the guest continues where
 * it was, blocked reading the channel, and the host's P_SETUP gives it fresh
 * random bytes, the clock and its disk size.
 *
 * QEMU is untrusted surface: how its process is confined is in qemu.c.
 * It runs as a uid of its own (the slot's + VM_QEMU_UID_OFFSET, not the uid
 * proctor-helper uses for the sandbox's files) and has no network device.
 * A snapshot that does not restore is discarded and rebuilt once; with
 * $PROCTOR_VM_POOL, VMs are restored ahead (in the background: the QMP
 * commands are queued without waiting for QEMU) and wait for P_SETUP.
 *
 * Templates (sandbox_options.tmpl; docs/vm.md, "Assignment snapshots"): a
 * snapshot of its own per (image snapshot, template key, disk size), built
 * by restoring the image's snapshot with its RAM a writable memfd shared
 * with QEMU (RAM_TEMPLATE), P_SETUP, the template's prepare() through the
 * sandbox verbs (puts, zygote()), P_QUIESCE and the same migrate; the memfd
 * becomes the template's RAM file.  Sandboxes are then restored from it
 * like from any snapshot and say so (sandbox.templated).  A template that
 * fails to build is noted (<key>.failed) and the sandbox is made without.
 *
 * Limits: the agent enforces a run's limits inside the guest (cgroup v2,
 * rlimits, uid 1000); the host adds the hard ones: the wall clock (the VM is
 * killed when no answer comes in time) and QEMU's own cgroup.  destroy()
 * kills QEMU, waits for the slot's cgroups to empty and removes the run
 * directory.
 */
#include "vm/vm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "digest.h"
#include "host/cgroup.h"
#include "host/slot.h"
#include "host/statedir.h"
#include "host/tree.h"
#include "util.h"
#include "vm/kit.h"
#include "vm/proto.h"
#include "vm/vm_impl.h"

static const unsigned shapes_mib[] = {512, 1024, 2048, 4096};

static struct vm_timing last_timing;

void vm_last_timing(struct vm_timing *ret)
{
	*ret = last_timing;
}

void vm_trace(const char *what)
{
	static int on = -1;
	static uint64_t start_ns;

	if (on < 0) {
		on = getenv("PROCTOR_VM_DEBUG") != NULL;
		/* The process's start, from /proc/self/stat (clock ticks since boot). */
		char buf[1024];
		struct err ignored;
		if (on &&
		    read_file_at(AT_FDCWD, "/proc/self/stat", buf, sizeof(buf), &ignored) == 0) {
			char *p = strrchr(buf, ')');
			for (int f = 2; p && f < 22; f++)
				p = strchr(p + 1, ' ');
			struct timespec bt;
			clock_gettime(CLOCK_BOOTTIME, &bt);
			uint64_t boot_ns =
			    (uint64_t)bt.tv_sec * 1000000000ull + (uint64_t)bt.tv_nsec;
			uint64_t st = p ? strtoull(p + 1, NULL, 10) *
					      (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK))
					: boot_ns;
			start_ns = now_ns() - (boot_ns - st);
		}
	}
	if (on)
		fprintf(stderr, "vm: +%.1f ms %s\n", (double)(now_ns() - start_ns) / 1e6, what);
}

/* ---- paths of an image ---- */

static int image_paths(const char *system_dir, struct vm_image *im, struct err *e)
{
	char json[PATH_MAX + 16];
	json_error_t je;
	json_t *j;
	const char *d;

	if (!system_dir || strcmp(system_dir, "/") == 0)
		return err_set(e, 0,
			       "isolation 'vm' needs an image: pin one (image: NAME@VERSION "
			       "in assignment.yaml, or --image); the host's own tree cannot "
			       "boot as a guest");
	snprintf(im->dir, sizeof(im->dir), "%s", system_dir);
	char *slash = strrchr(im->dir, '/');
	if (!slash || strcmp(slash, "/rootfs") != 0)
		return err_set(e, 0, "'%s' is not an image's rootfs directory", system_dir);
	*slash = '\0';
	snprintf(im->vmlinux, sizeof(im->vmlinux), "%s/vm/vmlinux", im->dir);
	snprintf(im->modules, sizeof(im->modules), "%s/vm/modules", im->dir);
	snprintf(im->squashfs, sizeof(im->squashfs), "%s/rootfs.squashfs", im->dir);
	snprintf(json, sizeof(json), "%s/image.json", im->dir);
	if (access(im->vmlinux, R_OK) < 0)
		return err_set(e, errno,
			       "image %s has no guest kernel (%s); rebuild it with "
			       "'proctor image build'",
			       im->dir, im->vmlinux);
	if (access(im->squashfs, R_OK) < 0)
		return err_set(e, errno, "image %s: %s", im->dir, im->squashfs);
	j = json_load_file(json, 0, &je);
	if (!j || !(d = json_string_value(json_object_get(j, "digest")))) {
		json_decref(j);
		return err_set(e, 0, "image %s: %s is missing or has no digest", im->dir, json);
	}
	snprintf(im->digest, sizeof(im->digest), "%s", d);
	json_decref(j);
	return 0;
}

/* ---- the channel ---- */

static int vm_fail(struct vm *v, struct err *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void vm_kill(struct vm *v)
{
	if (v->pid > 0) {
		if (v->pidfd >= 0)
			syscall(SYS_pidfd_send_signal, v->pidfd, SIGKILL, NULL, 0);
		else
			kill(v->pid, SIGKILL);
		waitpid(v->pid, NULL, 0);
		v->pid = 0;
	}
	v->dead = true;
}

/* The last non-empty line of a log of the run directory, for messages. */
static void log_tail(const struct vm *v, const char *name, char *buf, size_t cap)
{
	char path[PATH_MAX + 32], tmp[4096];
	int fd;
	ssize_t n;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", v->run_dir, name);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	n = pread(fd, tmp, sizeof(tmp) - 1,
		  end > (off_t)sizeof(tmp) - 1 ? end - (off_t)sizeof(tmp) + 1 : 0);
	close(fd);
	if (n <= 0)
		return;
	tmp[n] = '\0';
	while (n > 0 && (tmp[n - 1] == '\n' || tmp[n - 1] == '\r'))
		tmp[--n] = '\0';
	char *line = strrchr(tmp, '\n');
	line = line ? line + 1 : tmp;
	for (char *c = line; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = ' ';
	snprintf(buf, cap, "%s", line);
}

/* The guest broke the protocol or went silent: kill it and say so, with
 * the last words of QEMU and of the guest's console. */
static int vm_fail(struct vm *v, struct err *e, const char *fmt, ...)
{
	va_list ap;
	char msg[512], qlog[256], clog[256];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	vm_kill(v);
	log_tail(v, "qemu.log", qlog, sizeof(qlog));
	log_tail(v, "console.log", clog, sizeof(clog));
	return err_set(e, 0,
		       "microVM: %s (the VM was killed; QEMU said: '%s'; the guest's "
		       "console said: '%s')",
		       msg, qlog, clog);
}

/* Send the frame in v->ob, whole, within REQUEST_TIMEOUT_MS: a guest that
 * stops reading (the agent stuck, QEMU wedged) ends the VM as a read that
 * gets no answer does, never a write blocked for good. */
static int chan_send(struct vm *v, struct err *e)
{
	const unsigned char *p = v->ob.data;
	uint64_t deadline = deadline_in(REQUEST_TIMEOUT_MS);

	if (pbuf_finish(&v->ob) < 0)
		return err_set(e, E2BIG, "microVM: a request is larger than the protocol allows");
	for (size_t n = v->ob.len; n;) {
		ssize_t w = send(v->chan, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return vm_fail(v, e, "writing to the guest: %s", strerror(errno));
		uint64_t now = now_ns();
		if (now >= deadline)
			return vm_fail(v, e, "the guest did not take a request in time");
		struct pollfd pfd = {.fd = v->chan, .events = POLLOUT};
		if (poll(&pfd, 1, (int)((deadline - now) / 1000000) + 1) < 0 && errno != EINTR)
			return vm_fail(v, e, "poll: %s", strerror(errno));
	}
	return 0;
}

/* Read exactly n bytes before the deadline (CLOCK_MONOTONIC ns). */
static int chan_read(struct vm *v, void *buf, size_t n, uint64_t deadline, struct err *e)
{
	unsigned char *p = buf;

	while (n) {
		uint64_t now = now_ns();
		if (now >= deadline)
			return vm_fail(v, e, "the guest agent did not answer in time");
		struct pollfd pfd = {.fd = v->chan, .events = POLLIN};
		int ms = (int)((deadline - now) / 1000000) + 1;
		int r = poll(&pfd, 1, ms);
		if (r < 0 && errno != EINTR)
			return vm_fail(v, e, "poll: %s", strerror(errno));
		if (r <= 0)
			continue;
		ssize_t got = read(v->chan, p, n);
		if (got < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (got <= 0)
			return vm_fail(v, e, "the guest closed the channel (QEMU exited?)");
		p += got;
		n -= (size_t)got;
	}
	return 0;
}

/* One frame from the guest; its payload is in v->ib. */
static int chan_recv(struct vm *v, unsigned *type, uint32_t *len, uint64_t deadline, struct err *e)
{
	unsigned char h[PROTO_HEADER];

	if (chan_read(v, h, sizeof(h), deadline, e) < 0)
		return -1;
	if (proto_header(h, type, len) < 0)
		return vm_fail(v, e, "the guest sent a malformed frame header");
	return chan_read(v, v->ib, *len, deadline, e);
}

/* Wait for P_OK; P_ERR becomes the error (the VM stays usable). */
static int expect_ok(struct vm *v, uint64_t timeout_ms, const char *what, struct err *e)
{
	unsigned t;
	uint32_t len;
	char msg[512];

	if (chan_recv(v, &t, &len, deadline_in(timeout_ms), e) < 0)
		return -1;
	if (t == P_OK && len == 0)
		return 0;
	if (t == P_ERR && proto_parse_err(v->ib, len, msg, sizeof(msg)) == 0)
		return err_set(e, 0, "%s: the guest agent says: %s", what, msg);
	return vm_fail(v, e, "%s: unexpected answer (type %u)", what, t);
}

/* ---- kit and snapshot caches ---- */

static int file_sha(const char *path, char hex[65], struct err *e)
{
	struct digest *d = digest_new();

	if (!d)
		return err_set(e, ENOMEM, "digest");
	if (digest_update_file(d, path, e) < 0) {
		digest_free(d);
		return -1;
	}
	digest_final(d, hex);
	return 0;
}

/* <state>/vm/kits/<key>/initramfs.cpio for this image's modules and this
 * agent, made once (under a lock) and never changed. */
static int kit_dir_for(const char *state, const struct vm_image *im, char *ret, size_t cap,
		       char kit_sha[65], struct err *e)
{
	char agent[PATH_MAX], asha[65], path[PATH_MAX + 32], lock[PATH_MAX + 8], key[65];
	char shafile[PATH_MAX + 32];
	struct digest *d;

	/* The agent binary is hashed once per process, not per sandbox. */
	static char cached_agent[PATH_MAX], cached_asha[65];
	if (own_program("proctor-agent", R_OK, agent, sizeof(agent), e) < 0)
		return -1;
	if (strcmp(agent, cached_agent) != 0) {
		if (file_sha(agent, cached_asha, e) < 0)
			return -1;
		snprintf(cached_agent, sizeof(cached_agent), "%s", agent);
	}
	snprintf(asha, sizeof(asha), "%s", cached_asha);
	if (!(d = digest_new()))
		return err_set(e, ENOMEM, "digest");
	digest_update_str(d, asha);
	digest_update_str(d, im->dir);
	digest_update_str(d, im->digest);
	digest_final(d, key);
	snprintf(ret, cap, "%s/vm/kits/%.32s", state, key);
	snprintf(path, sizeof(path), "%s/initramfs.cpio", ret);
	snprintf(shafile, sizeof(shafile), "%s/initramfs.sha256", ret);
	if (read_file_at(AT_FDCWD, shafile, kit_sha, 65, e) == 0 && strlen(kit_sha) == 64)
		return 0;
	if (state_subdir(state, "vm/kits", 0755, lock, sizeof(lock), e) < 0)
		return -1;
	snprintf(lock, sizeof(lock), "%s.lock", ret);
	_cleanup_close_ int lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX) < 0)
		return err_set(e, errno, "lock %s", lock);
	if (access(path, R_OK) != 0) {
		if (mkdir(ret, 0755) < 0 && errno != EEXIST)
			return err_set(e, errno, "mkdir %s", ret);
		unlink(path);
		if (vm_initramfs_write(path, agent, im->modules, e) < 0)
			return -1;
	}
	/* The image it belongs to, so removing the image removes it too. */
	char image_file[PATH_MAX + 16];
	snprintf(image_file, sizeof(image_file), "%s/image", ret);
	if (file_sha(path, kit_sha, e) < 0 || vm_touch(shafile) < 0 ||
	    write_file_at(AT_FDCWD, shafile, kit_sha, e) < 0 || vm_touch(image_file) < 0 ||
	    write_file_at(AT_FDCWD, image_file, im->dir, e) < 0)
		return -1;
	return 0;
}

/* The kernel's digest, recorded by the image build in vm/kernel.json (the
 * image is immutable, so it need not be hashed again per sandbox). */
static int kernel_sha(const struct vm_image *im, char hex[65], struct err *e)
{
	char path[PATH_MAX + 16];
	json_error_t je;
	json_t *j;
	const char *s;

	snprintf(path, sizeof(path), "%s/vm/kernel.json", im->dir);
	j = json_load_file(path, 0, &je);
	s = j ? json_string_value(json_object_get(j, "vmlinux_sha256")) : NULL;
	if (!s || strlen(s) != 64) {
		json_decref(j);
		return file_sha(im->vmlinux, hex, e);
	}
	snprintf(hex, 65, "%s", s);
	json_decref(j);
	return 0;
}

/* The key of a snapshot: everything that shapes the machine. */
static int snapshot_key(const struct vm_host *h, const struct vm_image *im, const char *kit_sha,
			unsigned ram_mib, char key[65], struct err *e)
{
	char vsha[65], cpu[256], cmdline[512];
	struct qemu_cmd c = {0};
	struct digest *d;

	if (kernel_sha(im, vsha, e) < 0)
		return -1;
	host_cpu_model(cpu, sizeof(cpu));
	kernel_cmdline(cmdline, sizeof(cmdline), h);
	qemu_argv(&c, h, ram_mib, RAM_RESTORE);
	if (!(d = digest_new()))
		return err_set(e, ENOMEM, "digest");
	digest_update_str(d, "proctor-vm-snapshot 1\n");
	digest_update_str(d, im->digest);
	digest_update_str(d, vsha);
	digest_update_str(d, kit_sha);
	digest_update_str(d, h->qemu);
	digest_update_str(d, cpu);
	for (size_t i = 0; i < c.argc; i++) {
		digest_update_str(d, c.argv[i]);
		digest_update(d, "\0", 1);
	}
	digest_final(d, key);
	return 0;
}

static int wait_hello(struct vm *v, uint64_t timeout_ms, struct err *e)
{
	unsigned t;
	uint32_t len;
	struct proto_hello hl;

	if (chan_recv(v, &t, &len, deadline_in(timeout_ms), e) < 0)
		return err_wrap(e, "waiting for the guest to boot");
	if (t != P_HELLO || proto_parse_hello(v->ib, len, &hl) < 0)
		return vm_fail(v, e, "the guest's first message is not a valid hello");
	if (hl.version != PROTO_VERSION)
		return vm_fail(v, e, "the guest agent speaks protocol %u, not %u", hl.version,
			       PROTO_VERSION);
	return 0;
}

static int setup_guest(struct vm *v, uint64_t timeout_ms, struct err *e)
{
	unsigned char seed[64];
	struct timespec ts;

	/* Fresh per sandbox, after any restore: two VMs of one snapshot share
	 * neither randomness nor a stale clock. */
	if (getrandom(seed, sizeof(seed), 0) != (ssize_t)sizeof(seed))
		return err_set(e, errno, "getrandom");
	clock_gettime(CLOCK_REALTIME, &ts);
	pbuf_start(&v->ob, P_SETUP);
	pbuf_u64(&v->ob, (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec);
	pbuf_u64(&v->ob, v->disk_bytes);
	pbuf_bytes(&v->ob, seed, sizeof(seed));
	if (chan_send(v, e) < 0)
		return -1;
	return expect_ok(v, timeout_ms, "setting up the guest", e);
}

#define IGNORE_SHARED                                                                              \
	"{\"execute\":\"migrate-set-capabilities\",\"arguments\":{\"capabilities\":"               \
	"[{\"capability\":\"x-ignore-shared\",\"state\":true}]}}\n"

/* Save the devices of v (QMP ready, guest quiesced) to fd; its RAM, a
 * shared file, stays where it is (x-ignore-shared). */
static int migrate_save(struct vm *v, int fd, struct err *e)
{
	json_t *r = NULL;

	if (qmp_cmd(v, IGNORE_SHARED, -1, NULL, e) < 0 ||
	    qmp_cmd(v, "{\"execute\":\"getfd\",\"arguments\":{\"fdname\":\"snap\"}}\n", fd, NULL,
		    e) < 0 ||
	    qmp_cmd(v, "{\"execute\":\"migrate\",\"arguments\":{\"uri\":\"fd:snap\"}}\n", -1, NULL,
		    e) < 0)
		return -1;
	for (uint64_t deadline = deadline_in(REQUEST_TIMEOUT_MS);;) {
		if (qmp_cmd(v, "{\"execute\":\"query-migrate\"}\n", -1, &r, e) < 0)
			return -1;
		const char *st = json_string_value(json_object_get(r, "status"));
		if (st && strcmp(st, "completed") == 0)
			break;
		if (!st || strcmp(st, "failed") == 0 || strcmp(st, "cancelled") == 0 ||
		    now_ns() > deadline) {
			err_set(e, 0, "saving the snapshot: migration %s", st ? st : "?");
			json_decref(r);
			return -1;
		}
		json_decref(r);
		r = NULL;
		usleep(10000);
	}
	json_decref(r);
	return fsync(fd) < 0 ? err_set(e, errno, "fsync the snapshot") : 0;
}

/* Boot a cold VM to the hello, quiesce it and save its state to `state`
 * (devices) and `state`.ram (guest RAM, sparse: pages never touched are holes). */
static int snapshot_save(struct vm *v, const struct vm_host *h, const struct vm_image *im,
			 const char *kit_dir, const char *state, struct err *e)
{
	char tmp[PATH_MAX + 16], ram_run[PATH_MAX + 8], ram[PATH_MAX + 16];
	int fd = -1, rc = -1;

	if (qemu_start(v, h, im, kit_dir, RAM_SAVE, -1, -1, e) < 0 ||
	    wait_hello(v, BOOT_TIMEOUT_MS, e) < 0)
		return err_wrap(e, "booting the snapshot VM");
	pbuf_start(&v->ob, P_QUIESCE);
	if (chan_send(v, e) < 0 || expect_ok(v, REQUEST_TIMEOUT_MS, "quiesce", e) < 0)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp", state);
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set(e, errno, "create %s", tmp);
	if (qmp_cmd(v, "", -1, NULL, e) < 0 ||
	    qmp_cmd(v, "{\"execute\":\"qmp_capabilities\"}\n", -1, NULL, e) < 0 ||
	    migrate_save(v, fd, e) < 0)
		goto out;
	vm_kill(v);
	/* The RAM QEMU wrote through: root's now, and never written again. */
	snprintf(ram_run, sizeof(ram_run), "%s/ram", v->run_dir);
	snprintf(ram, sizeof(ram), "%s.ram", state);
	if (chown(ram_run, 0, 0) < 0 || chmod(ram_run, 0644) < 0 || rename(ram_run, ram) < 0 ||
	    rename(tmp, state) < 0) {
		err_set(e, errno, "store %s", state);
		goto out;
	}
	rc = 0;
out:
	xclose(fd);
	if (rc < 0)
		unlink(tmp);
	vm_kill(v);
	return rc;
}

/* ---- restoring ---- */

/* The snapshot's RAM as a sealed memfd: QEMU maps it private (copy on
 * write), so every VM restored by this process shares the pages it only
 * reads, and none can change what the next one restores.  Copied once per
 * process and snapshot, holes kept. */
static char cached_path[PATH_MAX];
static int cached_fd = -1;

static void ram_memfd_forget(void)
{
	xclose(take_fd(&cached_fd));
	cached_path[0] = '\0';
}

/* Whether the 4 KiB page at p is all zero. */
static bool page_zero(const unsigned char *p)
{
	static const unsigned char zero[4096];

	return memcmp(p, zero, sizeof(zero)) == 0;
}

/* Copy the pages of [data, hole) of the mapped file that are not all zero
 * into fd, one pwrite per run of them (the memfd's other pages stay holes:
 * a guest's RAM is mostly zero even where the file has blocks). */
static int ram_copy_range(int fd, const unsigned char *map, off_t data, off_t hole, struct err *e)
{
	off_t run = -1;

	for (off_t p = data;; p += 4096) {
		bool end = p >= hole;
		bool zero = end || page_zero(map + p);
		if (!zero && run < 0)
			run = p;
		if (zero && run >= 0) {
			size_t n = (size_t)((end ? hole : p) - run);
			if (pwrite(fd, map + run, n, run) != (ssize_t)n)
				return err_set(e, errno, "fill the RAM memfd");
			run = -1;
		}
		if (end)
			return 0;
	}
}

/* The data of file in (size bytes, mapped at map) into fd, holes and
 * all-zero pages left out. */
static int ram_copy_sparse(int fd, int in, const unsigned char *map, off_t size, struct err *e)
{
	for (off_t off = 0; off < size;) {
		off_t data = lseek(in, off, SEEK_DATA);
		if (data < 0)
			return 0; /* only a hole is left */
		off_t hole = lseek(in, data, SEEK_HOLE);
		if (hole < 0)
			hole = size;
		if (ram_copy_range(fd, map, data, hole, e) < 0)
			return -1;
		off = hole;
	}
	return 0;
}

/* A memfd holding the RAM file at path (sealed if seal), or -1. */
static int ram_load(const char *path, bool seal, struct err *e)
{
	struct stat st;
	int in, fd;
	unsigned char *map = MAP_FAILED;

	in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (in < 0 || fstat(in, &st) < 0) {
		xclose(in);
		return err_set(e, errno, "open %s", path);
	}
	fd = memfd_create("proctor-vm-ram", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0 || ftruncate(fd, st.st_size) < 0) {
		err_set(e, errno, "memfd for %s", path);
		goto fail;
	}
	/* A restore's memfd has no holes: QEMU maps it private, and a guest
	 * page written over a hole would first fill the hole (a shmem page
	 * charged to QEMU's cgroup, which stays in this shared memfd, charged
	 * to the slot, after QEMU is gone) and then get its own copy (charged
	 * again).  Allocated here, every page of the memfd is this process's,
	 * once; a VM's cgroup is charged only for the pages its guest writes,
	 * at most its RAM.  shmem allocates without zeroing until a page is
	 * first touched: about 120 ms per 512 MiB (docs/vm.md). */
	if (seal && fallocate(fd, 0, 0, st.st_size) < 0) {
		err_set(e, errno, "allocate the RAM memfd for %s (%lld MiB)", path,
			(long long)(st.st_size >> 20));
		goto fail;
	}
	/* Read through a mapping of the page cache: one copy, not two. */
	if (st.st_size % 4096 != 0 ||
	    (map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, in, 0)) == MAP_FAILED) {
		err_set(e, errno, "map %s (%lld bytes)", path, (long long)st.st_size);
		goto fail;
	}
	if (ram_copy_sparse(fd, in, map, st.st_size, e) < 0)
		goto fail;
	if (seal &&
	    fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err_set(e, errno, "seal the RAM memfd");
		goto fail;
	}
	munmap(map, (size_t)st.st_size);
	close(in);
	return fd;
fail:
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	close(in);
	xclose(fd);
	return -1;
}

static int ram_memfd(const char *path, struct err *e)
{
	if (cached_fd >= 0 && strcmp(cached_path, path) == 0)
		return cached_fd;
	int fd = ram_load(path, true, e);
	if (fd < 0)
		return -1;
	if (cached_fd >= 0)
		close(cached_fd);
	cached_fd = fd;
	snprintf(cached_path, sizeof(cached_path), "%s", path);
	return fd;
}

/* QEMU was just started with -incoming defer: the same capability as the
 * save, then load.  The three commands go at once, without waiting for
 * QEMU's greeting: they wait in the monitor's socket until QEMU reads them,
 * so the restore proceeds while this process does other things (a
 * pre-started VM is restored and running by the time it is taken). */
static int restore_send(struct vm *v, struct err *e)
{
	char all[1024];

	snprintf(all, sizeof(all),
		 "{\"execute\":\"qmp_capabilities\"}\n%s"
		 "{\"execute\":\"migrate-incoming\",\"arguments\":{\"uri\":\"fd:%d\"}}\n",
		 IGNORE_SHARED, QFD_INCOMING);
	if (write_all(v->qmp, all, strlen(all)) < 0)
		return vm_fail(v, e, "restoring: QMP: %s", strerror(errno));
	return 0;
}

/* The greeting and the three answers of restore_send(), in order. */
static int restore_wait(struct vm *v, struct err *e)
{
	if (qmp_cmd(v, "", -1, NULL, e) < 0 || qmp_cmd(v, NULL, -1, NULL, e) < 0 ||
	    qmp_cmd(v, NULL, -1, NULL, e) < 0 || qmp_cmd(v, NULL, -1, NULL, e) < 0)
		return vm_fail(v, e, "restoring: %s", e->msg);
	vm_trace("QMP: migrate-incoming accepted");
	return 0;
}

/* ---- the sandbox verbs ---- */

static int vm_probe(struct err *e)
{
	char buf[128], agent[PATH_MAX];

	if (geteuid() != 0)
		return err_set(e, 0, "the microVM backend needs root (slots, cgroups, namespaces)");
	if (qemu_identity(buf, sizeof(buf), e) < 0)
		return -1;
	return own_program("proctor-agent", R_OK, agent, sizeof(agent), e);
}

static int vm_prepare(struct err *e)
{
	(void)e;
	return 0;
}

static unsigned pick_shape(uint64_t memory, uint64_t disk)
{
	uint64_t need = ((memory + disk) >> 20) + VM_RESERVE_MIB;

	for (size_t i = 0; i < sizeof(shapes_mib) / sizeof(shapes_mib[0]); i++)
		if (shapes_mib[i] >= need)
			return shapes_mib[i];
	return 0;
}

static void vm_destroy(struct sandbox *sb)
{
	struct vm *v = (struct vm *)sb;
	struct err ignored;

	if (!v)
		return;
	vm_trace("destroy");
	vm_kill(v);
	vm_trace("destroy: QEMU reaped");
	xclose(v->pidfd);
	xclose(v->start_err);
	xclose(v->chan);
	xclose(v->qmp);
	if (v->have_cg) {
		cgroup_kill_all(&v->cg, &ignored);
		if (v->cg_run)
			cgroup_run_end(&v->cg);
		cgroup_slot_close(&v->cg);
	}
	if (v->run_dir[0]) {
		int fd = open(v->run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			rm_rf_children(fd, &ignored);
			close(fd);
		}
		rmdir(v->run_dir);
	}
	vm_trace("destroy: cgroups and run directory");
	if (v->have_slot)
		slot_release(&v->slot);
	pbuf_free(&v->ob);
	free(v->ib);
	free(v);
}

static int make_run_dir(struct vm *v, const char *state, struct err *e)
{
	char parent[PATH_MAX];
	int fd;

	if (state_subdir(state, "vm/run", 0755, parent, sizeof(parent), e) < 0)
		return -1;
	snprintf(v->run_dir, sizeof(v->run_dir), "%s/%u", parent, v->slot.index);
	/* A dead owner's leftovers: the slot lease says it is gone. */
	fd = open(v->run_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0) {
		rm_rf_children(fd, e);
		close(fd);
		rmdir(v->run_dir);
	}
	if (mkdir(v->run_dir, 0700) < 0 || chown(v->run_dir, v->slot.uid + VM_QEMU_UID_OFFSET,
						 v->slot.gid + VM_QEMU_UID_OFFSET) < 0)
		return err_set(e, errno, "make %s", v->run_dir);
	snprintf(v->console, sizeof(v->console), "%s/console.log", v->run_dir);
	return 0;
}

static bool snapshots_enabled(void)
{
	const char *s = getenv("PROCTOR_VM_SNAPSHOT");

	return !s || strcmp(s, "0") != 0;
}

/* Everything a restore needs that does not depend on the sandbox. */
struct vm_plan {
	struct vm_host h;
	struct vm_image im;
	unsigned ram_mib;
	char kit_dir[PATH_MAX], kit_sha[65], key[65];
	char state[PATH_MAX + 16], lock[PATH_MAX + 16], ram[PATH_MAX + 32];
	char note[PATH_MAX + 16]; /* <key>.json: which image and shape, for clean-up */
	char snap_dir[PATH_MAX];
	bool is_template; /* a template's snapshot (template_plan()), never built cold */
};

static void plan_paths(struct vm_plan *p)
{
	snprintf(p->state, sizeof(p->state), "%s/%.40s.state", p->snap_dir, p->key);
	snprintf(p->lock, sizeof(p->lock), "%s/%.40s.lock", p->snap_dir, p->key);
	snprintf(p->ram, sizeof(p->ram), "%s.ram", p->state);
	snprintf(p->note, sizeof(p->note), "%s/%.40s.json", p->snap_dir, p->key);
}

static int plan(const struct sandbox_options *opts, struct vm_plan *p, struct err *e)
{
	struct limits dl;
	char snap_dir[PATH_MAX];

	limits_default(&dl);
	p->ram_mib =
	    pick_shape(opts->memory_bytes ? opts->memory_bytes : dl.memory_bytes, opts->disk_bytes);
	if (!p->ram_mib)
		return err_set(e, 0,
			       "microVM: memory + disk (%llu MiB) do not fit the largest VM shape "
			       "(%u MiB less %u MiB for the guest itself)",
			       (unsigned long long)((opts->memory_bytes + opts->disk_bytes) >> 20),
			       shapes_mib[sizeof(shapes_mib) / sizeof(shapes_mib[0]) - 1],
			       VM_RESERVE_MIB);
	if (image_paths(opts->system_dir, &p->im, e) < 0 || vm_host_info(&p->h, e) < 0)
		return -1;
	vm_trace("plan: image and host");
	if (kit_dir_for(opts->state_dir, &p->im, p->kit_dir, sizeof(p->kit_dir), p->kit_sha, e) <
		0 ||
	    snapshot_key(&p->h, &p->im, p->kit_sha, p->ram_mib, p->key, e) < 0)
		return -1;
	vm_trace("plan: kit and snapshot key");
	if (state_subdir(opts->state_dir, "vm/snapshots", 0755, snap_dir, sizeof(snap_dir), e) < 0)
		return -1;
	snprintf(p->snap_dir, sizeof(p->snap_dir), "%s", snap_dir);
	plan_paths(p);
	return 0;
}

/* A VM with its slot, cgroups and run directory, no QEMU yet. */
static struct vm *vm_new(const struct sandbox_options *opts, unsigned ram_mib, struct err *e)
{
	struct vm *v = calloc(1, sizeof(*v));

	if (!v || !(v->ib = malloc(PROTO_MAX_PAYLOAD))) {
		free(v);
		err_set(e, ENOMEM, "microVM");
		return NULL;
	}
	v->base.ops = &vm_ops;
	v->pidfd = v->chan = v->qmp = v->start_err = -1;
	v->disk_bytes = opts->disk_bytes;
	v->ram_mib = ram_mib;
	if (slot_lease(opts->state_dir, opts->max_slots, opts->uid_base, &v->slot, e) < 0)
		goto fail;
	v->have_slot = true;
	v->base.untrusted_uid = v->slot.uid;
	if (cgroup_slot_open(&v->cg, v->slot.index, e) < 0)
		goto fail;
	v->have_cg = true;
	if (make_run_dir(v, opts->state_dir, e) < 0)
		goto fail;
	return v;
fail:
	vm_destroy(&v->base);
	return NULL;
}

/*
 * Remove the snapshots of image_dir (of every shape when ram_mib is 0, else
 * of that shape) except the one keyed `keep`: a new snapshot of the same
 * machine makes older ones (another agent, QEMU or kernel command line)
 * dead weight, ~100 MB each.  One being built (its lock held) is left.  A
 * process restoring from a removed one keeps its open files.
 */
static void snapshot_sweep(const char *snap_dir, const char *image_dir, unsigned ram_mib,
			   const char *keep, const char *tmpl_name, const char *base)
{
	DIR *d = opendir(snap_dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char path[PATH_MAX + 300], key[64];
		size_t n = strlen(de->d_name);
		json_error_t je;
		json_t *j;

		if (n != 45 || strcmp(de->d_name + 40, ".json") != 0 ||
		    (keep && strncmp(de->d_name, keep, 40) == 0))
			continue;
		snprintf(key, sizeof(key), "%.40s", de->d_name);
		snprintf(path, sizeof(path), "%s/%s", snap_dir, de->d_name);
		j = json_load_file(path, 0, &je);
		const char *img = json_string_value(json_object_get(j, "image"));
		json_int_t ram = json_integer_value(json_object_get(j, "ram_mib"));
		const char *tn = json_string_value(json_object_get(j, "template"));
		const char *tb = json_string_value(json_object_get(j, "base"));
		struct stat st;
		/* A template sweep: the same assignment's on the same base, or
		 * any whose assignment file is gone. */
		bool match = img && strcmp(img, image_dir) == 0 && (!ram_mib || ram == ram_mib) &&
			     (!tmpl_name ||
			      (tn && ((strcmp(tn, tmpl_name) == 0 && tb && strcmp(tb, base) == 0) ||
				      stat(tn, &st) < 0)));
		json_decref(j);
		if (!match)
			continue;
		snprintf(path, sizeof(path), "%s/%s.lock", snap_dir, key);
		int lfd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (lfd < 0 || flock(lfd, LOCK_EX | LOCK_NB) < 0) {
			xclose(lfd);
			continue;
		}
		static const char *const ext[] = {".state", ".state.ram", ".json", ".failed"};
		for (size_t i = 0; i < 4; i++) {
			snprintf(path, sizeof(path), "%s/%s%s", snap_dir, key, ext[i]);
			unlink(path);
		}
		close(lfd);
	}
	if (d)
		closedir(d);
}

void vm_forget_image(const char *state_dir, const char *image_dir)
{
	char dir[PATH_MAX];
	DIR *d;
	struct dirent *de;
	struct err ignored;

	snprintf(dir, sizeof(dir), "%s/vm/snapshots", state_dir);
	snapshot_sweep(dir, image_dir, 0, NULL, NULL, NULL);
	snprintf(dir, sizeof(dir), "%s/vm/kits", state_dir);
	if (!(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		char path[PATH_MAX + 300], img[PATH_MAX];
		if (de->d_name[0] == '.' || strchr(de->d_name, '.'))
			continue;
		snprintf(path, sizeof(path), "%s/%s/image", dir, de->d_name);
		if (read_file_at(AT_FDCWD, path, img, sizeof(img), &ignored) < 0 ||
		    strcmp(img, image_dir) != 0)
			continue;
		rm_tree_at(dirfd(d), de->d_name, &ignored);
	}
	closedir(d);
}

/* The snapshot of the plan exists afterwards: built by v (then v is reset
 * for reuse) unless another process had or has built it.  0 or -1. */
static int ensure_snapshot(struct vm *v, const struct vm_plan *p, struct err *e)
{
	int lfd;

	if (access(p->state, R_OK) == 0)
		return 0;
	if (p->is_template)
		return err_set(e, ENOENT, "the template snapshot %s is gone", p->state);
	lfd = open(p->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX) < 0) {
		xclose(lfd);
		return err_set(e, errno, "lock %s", p->lock);
	}
	if (access(p->state, R_OK) != 0) {
		if (snapshot_save(v, &p->h, &p->im, p->kit_dir, p->state, e) < 0) {
			close(lfd);
			return err_wrap(e, "microVM snapshot of %s", p->im.dir);
		}
		last_timing.snapshot_built = true;
		json_t *note = json_pack("{s:s, s:s, s:i, s:s}", "image", p->im.dir, "digest",
					 p->im.digest, "ram_mib", (int)p->ram_mib, "key", p->key);
		if (note)
			json_dump_file(note, p->note, JSON_COMPACT);
		json_decref(note);
		snapshot_sweep(p->snap_dir, p->im.dir, p->ram_mib, p->key, NULL, NULL);
		v->dead = false;
		cgroup_kill_all(&v->cg, e);
		cgroup_run_end(&v->cg);
		v->cg_run = false;
		xclose(take_fd(&v->chan));
		xclose(take_fd(&v->qmp));
		xclose(take_fd(&v->pidfd));
	}
	close(lfd);
	return 0;
}

/* Remove a snapshot that failed to restore (under its lock), with every
 * pre-started VM and the cached RAM of it. */
static void discard_snapshot(const struct vm_plan *p)
{
	int lfd = open(p->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	vm_pool_drain();
	ram_memfd_forget();
	if (lfd >= 0 && flock(lfd, LOCK_EX) == 0) {
		unlink(p->state);
		unlink(p->ram);
	}
	xclose(lfd);
}

/* Start QEMU waiting for the snapshot (-incoming defer), without waiting
 * for it to be executed (qemu_started() does): the slow part of a restore,
 * which a pre-started VM has done already. */
static int prestart(struct vm *v, const struct vm_plan *p, struct err *e)
{
	int sfd = open(p->state, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), mfd, rc = -1;

	if (sfd < 0)
		return err_set(e, errno, "open %s", p->state);
	mfd = ram_memfd(p->ram, e);
	vm_trace("snapshot RAM memfd");
	if (mfd >= 0)
		rc = qemu_start_async(v, &p->h, &p->im, p->kit_dir, RAM_RESTORE, sfd, mfd, e);
	vm_trace("QEMU forked");
	close(sfd);
	return rc;
}

/*
 * Pre-started VMs ($PROCTOR_VM_POOL, else pool_hint(), else 0; at most 8):
 * QEMU processes of this process already started on a snapshot and waiting
 * for it, each with its slot leased.  create() takes one whose snapshot key matches and
 * starts a replacement in the background.  They die with the process
 * (PDEATHSIG); vm_pool_drain() removes them properly.
 */
static struct {
	struct vm *v[8];
	char key[8][65];
	size_t n;
	unsigned hint; /* pool_hint(): the size without $PROCTOR_VM_POOL */
} pool;

static size_t pool_target(void)
{
	const char *s = getenv("PROCTOR_VM_POOL");
	long n = s ? strtol(s, NULL, 10) : (long)pool.hint;

	return n < 0 ? 0 : n > 8 ? 8 : (size_t)n;
}

static void vm_pool_hint(unsigned n)
{
	pool.hint = n;
}

void vm_pool_drain(void)
{
	while (pool.n > 0)
		vm_destroy(&pool.v[--pool.n]->base);
}

static void pool_fill(const struct sandbox_options *opts, const struct vm_plan *p)
{
	static bool registered;
	struct err ignored;

	if (!registered) {
		atexit(vm_pool_drain);
		registered = true;
	}
	while (pool.n < pool_target()) {
		struct vm *v = vm_new(opts, p->ram_mib, &ignored);
		if (!v)
			return;
		/* Restored now, in the background; a P_PING queued behind it
		 * runs the agent's and the guest kernel's request path once,
		 * so that QEMU has translated it (TCG) before P_SETUP. */
		pbuf_start(&v->ob, P_PING);
		if (prestart(v, p, &ignored) < 0 || restore_send(v, &ignored) < 0 ||
		    chan_send(v, &ignored) < 0) {
			vm_destroy(&v->base);
			return;
		}
		snprintf(pool.key[pool.n], sizeof(pool.key[0]), "%s", p->key);
		pool.v[pool.n++] = v;
	}
}

static struct vm *pool_take(const struct vm_plan *p, uint64_t disk_bytes)
{
	for (size_t i = 0; i < pool.n; i++) {
		if (strcmp(pool.key[i], p->key) != 0)
			continue;
		struct vm *v = pool.v[i];
		pool.v[i] = pool.v[pool.n - 1];
		memcpy(pool.key[i], pool.key[pool.n - 1], sizeof(pool.key[0]));
		pool.n--;
		v->disk_bytes = disk_bytes;
		return v;
	}
	return NULL;
}

/* ---- templates (sandbox.h, struct sandbox_template; docs/vm.md) ---- */

/* The plan of opts->tmpl over the image's plan p: a key of both (and of
 * the writable tree's size, which the template's guest was set up with). */
static int template_plan(const struct sandbox_options *opts, const struct vm_plan *p,
			 struct vm_plan *tp, struct err *e)
{
	struct digest *d = digest_new();
	char disk[32];

	if (!d)
		return err_set(e, ENOMEM, "digest");
	*tp = *p;
	snprintf(disk, sizeof(disk), "%llu", (unsigned long long)opts->disk_bytes);
	digest_update_str(d, "proctor-vm-template 1\n");
	digest_update_str(d, p->key);
	digest_update(d, "\0", 1);
	digest_update_str(d, opts->tmpl->key);
	digest_update(d, "\0", 1);
	digest_update_str(d, disk);
	digest_final(d, tp->key);
	tp->is_template = true;
	plan_paths(tp);
	return 0;
}

/* The guest RAM in memfd mfd, written to path as a sparse file. */
static int ram_store(int mfd, const char *path, struct err *e)
{
	char tmp[PATH_MAX + 40];
	struct stat st;
	unsigned char *map = MAP_FAILED;
	int out = -1, rc = -1;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (fstat(mfd, &st) < 0 ||
	    (map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, mfd, 0)) == MAP_FAILED ||
	    (out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0 ||
	    ftruncate(out, st.st_size) < 0) {
		err_set(e, errno, "write %s", tmp);
		goto out;
	}
	if (ram_copy_sparse(out, mfd, map, st.st_size, e) < 0)
		goto out;
	if (fsync(out) < 0 || rename(tmp, path) < 0) {
		err_set(e, errno, "store %s", path);
		goto out;
	}
	rc = 0;
out:
	if (map != MAP_FAILED)
		munmap(map, (size_t)st.st_size);
	xclose(out);
	if (rc < 0)
		unlink(tmp);
	return rc;
}

/*
 * Build the template snapshot tp: restore the image's snapshot p into a VM
 * whose RAM is a writable copy (RAM_TEMPLATE), set it up as any sandbox,
 * let the template's prepare() put and start what it will, quiesce, and
 * save the devices beside that RAM.  Under the template's lock; 0 when it
 * exists afterwards, -2 when prepare() failed (the template's own doing:
 * noted, not tried again for a while), -1 for anything else (tried again
 * by the next create()).
 */
static int template_build(const struct sandbox_options *opts, const struct vm_plan *p,
			  const struct vm_plan *tp, struct err *e)
{
	char tmp[PATH_MAX + 40];
	struct vm *v = NULL;
	int lfd, sfd = -1, mfd = -1, out = -1, rc = -1;

	lfd = open(tp->lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0 || flock(lfd, LOCK_EX) < 0) {
		xclose(lfd);
		return err_set(e, errno, "lock %s", tp->lock);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", tp->state);
	if (access(tp->state, R_OK) == 0) {
		rc = 0;
		goto out;
	}
	vm_trace("template: build");
	if (!(v = vm_new(opts, p->ram_mib, e)) || ensure_snapshot(v, p, e) < 0)
		goto out;
	if ((sfd = open(p->state, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
		err_set(e, errno, "open %s", p->state);
		goto out;
	}
	if ((mfd = ram_load(p->ram, false, e)) < 0 ||
	    qemu_start(v, &p->h, &p->im, p->kit_dir, RAM_TEMPLATE, sfd, mfd, e) < 0 ||
	    restore_send(v, e) < 0 || restore_wait(v, e) < 0 ||
	    setup_guest(v, RESTORE_TIMEOUT_MS, e) < 0)
		goto out;
	if (opts->tmpl->prepare(&v->base, opts->tmpl->ctx, e) < 0) {
		err_wrap(e, "preparing the template");
		rc = -2;
		goto out;
	}
	vm_trace("template: prepared");
	pbuf_start(&v->ob, P_QUIESCE);
	if (chan_send(v, e) < 0 || expect_ok(v, REQUEST_TIMEOUT_MS, "quiesce", e) < 0)
		goto out;
	unlink(tmp);
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
		err_set(e, errno, "create %s", tmp);
		goto out;
	}
	if (migrate_save(v, out, e) < 0)
		goto out;
	vm_kill(v);
	if (ram_store(mfd, tp->ram, e) < 0)
		goto out;
	if (rename(tmp, tp->state) < 0) {
		err_set(e, errno, "store %s", tp->state);
		goto out;
	}
	json_t *note = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s}", "image", p->im.dir, "digest",
				 p->im.digest, "ram_mib", (int)p->ram_mib, "key", tp->key,
				 "template", opts->tmpl->name, "base", p->key);
	if (note)
		json_dump_file(note, tp->note, JSON_COMPACT);
	json_decref(note);
	chmod(tp->note, 0600);
	snapshot_sweep(p->snap_dir, p->im.dir, p->ram_mib, tp->key, opts->tmpl->name, p->key);
	last_timing.snapshot_built = true;
	vm_trace("template: saved");
	rc = 0;
out:
	if (rc < 0)
		unlink(tmp);
	xclose(out);
	xclose(sfd);
	xclose(mfd);
	if (v)
		vm_destroy(&v->base);
	close(lfd);
	return rc;
}

/* A template that failed to build is not tried again for a while: its
 * <key>.failed says why (docs/vm.md). */
#define TEMPLATE_RETRY_S 600

static bool template_failed_recently(const struct vm_plan *tp)
{
	char path[PATH_MAX + 48];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%.40s.failed", tp->snap_dir, tp->key);
	return stat(path, &st) == 0 && time(NULL) - st.st_mtime < TEMPLATE_RETRY_S;
}

static void template_mark_failed(const struct vm_plan *tp, const char *why)
{
	char path[PATH_MAX + 48];

	snprintf(path, sizeof(path), "%s/%.40s.failed", tp->snap_dir, tp->key);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		dprintf(fd, "%s\n", why);
		close(fd);
	}
	if (getenv("PROCTOR_VM_DEBUG"))
		fprintf(stderr, "vm: template not built (not tried again for %d s): %s\n",
			TEMPLATE_RETRY_S, why);
}

/* The template's plan in *tp, its snapshot built if need be: true when
 * sandboxes are to be restored from it. */
static bool template_ready(const struct sandbox_options *opts, const struct vm_plan *p,
			   struct vm_plan *tp)
{
	struct err te;

	if (template_plan(opts, p, tp, &te) < 0)
		return false;
	if (access(tp->state, R_OK) == 0)
		return true;
	if (template_failed_recently(tp))
		return false;
	int rc = template_build(opts, p, tp, &te);
	if (rc == -2)
		template_mark_failed(tp, te.msg);
	else if (rc < 0 && getenv("PROCTOR_VM_DEBUG"))
		fprintf(stderr, "vm: template not built: %s\n", te.msg);
	return rc == 0;
	return true;
}

static void plan_swap(struct vm_plan **a, struct vm_plan **b)
{
	struct vm_plan *t = *a;
	*a = *b;
	*b = t;
}

static int vm_create(const struct sandbox_options *opts, struct sandbox **ret, struct err *e)
{
	struct vm_plan *p = calloc(1, sizeof(*p)), *tp = NULL;
	struct vm *v = NULL;
	uint64_t t0 = now_ns();

	memset(&last_timing, 0, sizeof(last_timing));
	if (!p)
		return err_set(e, ENOMEM, "microVM");
	if (!snapshots_enabled()) {
		struct limits dl;
		limits_default(&dl);
		unsigned shape = pick_shape(
		    opts->memory_bytes ? opts->memory_bytes : dl.memory_bytes, opts->disk_bytes);
		if (image_paths(opts->system_dir, &p->im, e) < 0 || vm_host_info(&p->h, e) < 0 ||
		    kit_dir_for(opts->state_dir, &p->im, p->kit_dir, sizeof(p->kit_dir), p->kit_sha,
				e) < 0)
			goto fail;
		if (!shape) {
			err_set(e, 0, "microVM: memory + disk do not fit the largest VM shape");
			goto fail;
		}
		if (!(v = vm_new(opts, shape, e)) ||
		    qemu_start(v, &p->h, &p->im, p->kit_dir, RAM_PLAIN, -1, -1, e) < 0 ||
		    wait_hello(v, BOOT_TIMEOUT_MS, e) < 0 ||
		    setup_guest(v, REQUEST_TIMEOUT_MS, e) < 0)
			goto fail;
		last_timing.ready_ms = (double)(now_ns() - t0) / 1e6;
		free(p);
		*ret = &v->base;
		return 0;
	}
	vm_trace("create");
	if (plan(opts, p, e) < 0)
		goto fail;
	if (opts->tmpl) {
		if (!(tp = calloc(1, sizeof(*tp)))) {
			err_set(e, ENOMEM, "microVM");
			goto fail;
		}
		if (template_ready(opts, p, tp))
			plan_swap(&p, &tp);
		if (last_timing.snapshot_built)
			t0 = now_ns();
	}
	uint64_t t1;
	for (int attempt = 0;; attempt++) {
		bool from_pool = attempt == 0 && (v = pool_take(p, opts->disk_bytes));
		last_timing.prestarted = from_pool;
		if (!from_pool) {
			if (!(v = vm_new(opts, p->ram_mib, e)))
				goto fail;
			bool have = ensure_snapshot(v, p, e) == 0;
			if (have && last_timing.snapshot_built)
				t0 = now_ns();
			if (!have || prestart(v, p, e) < 0) {
				vm_destroy(&v->base);
				v = NULL;
				if (p->is_template) { /* gone meanwhile: on without it */
					plan_swap(&p, &tp);
					attempt = -1;
					continue;
				}
				if (!have || attempt > 0 || last_timing.snapshot_built)
					goto fail;
				discard_snapshot(p); /* e.g. its .ram is gone: rebuild */
				continue;
			}
		}
		t1 = now_ns();
		bool sent = from_pool || restore_send(v, e) == 0;
		/* QEMU that could not start says why; the snapshot is not to blame. */
		if (qemu_started(v, e) < 0)
			goto fail;
		if (sent && restore_wait(v, e) == 0 &&
		    (!from_pool || expect_ok(v, RESTORE_TIMEOUT_MS, "ping", e) == 0) &&
		    setup_guest(v, RESTORE_TIMEOUT_MS, e) == 0)
			break;
		err_wrap(e, "restoring the snapshot %s", p->state);
		if (p->is_template) {
			/* Rebuilt by a later create(); this one goes on from the
			 * image's snapshot, without the template. */
			vm_destroy(&v->base);
			v = NULL;
			discard_snapshot(p);
			plan_swap(&p, &tp);
			attempt = -1;
			continue;
		}
		if (attempt > 0 || last_timing.snapshot_built)
			goto fail;
		/* A snapshot that does not restore (truncated, corrupt, or from a
		 * machine its key did not tell apart) is removed and built anew,
		 * once. */
		vm_destroy(&v->base);
		v = NULL;
		discard_snapshot(p);
	}
	if (getenv("PROCTOR_VM_DEBUG"))
		fprintf(stderr, "vm: %s, restore and setup %.1f ms\n",
			last_timing.prestarted ? "pre-started" : "started now",
			(double)(now_ns() - t1) / 1e6);
	last_timing.ready_ms = (double)(now_ns() - t0) / 1e6;
	last_timing.restored = true;
	vm_trace("guest set up (ready)");
	v->base.templated = p->is_template;
	snprintf(v->base.snapshot, sizeof(v->base.snapshot), "%s", p->key);
	pool_fill(opts, p);
	free(p);
	free(tp);
	*ret = &v->base;
	return 0;
fail:
	if (v)
		vm_destroy(&v->base);
	free(p);
	free(tp);
	return -1;
}

/* The one PROTO_PUT_* flag of a put's SANDBOX_PUT_* flags (the jail's
 * order: a harness-owned put is not also root's). */
static uint32_t put_flags(unsigned flags)
{
	if (flags & SANDBOX_PUT_HARNESS_OWNED)
		return PROTO_PUT_HARNESS_OWNED;
	if (flags & SANDBOX_PUT_HARNESS)
		return PROTO_PUT_HARNESS;
	return flags & SANDBOX_PUT_PROTECTED ? PROTO_PUT_PROTECTED : 0;
}

/* Every put that is not the program's (its parents: put_parent_rule()). */
#define PUT_NOT_THE_PROGRAMS                                                                       \
	(SANDBOX_PUT_PROTECTED | SANDBOX_PUT_HARNESS | SANDBOX_PUT_HARNESS_OWNED)

/*
 * A put's requests are pipelined: each P_MKDIR and P_PUT is sent without
 * waiting for its answer, up to PUT_WINDOW unanswered, and the answers
 * (in order) are read as the window fills and at the end.  One round trip
 * per request put a tree of 20,000 small files in 7.3 s under TCG, the
 * pipeline in 4.4 s (the jail: 0.4 s; the rest is the agent's work per
 * file).  The answers are a few bytes each, so the window never fills the
 * channel's buffers the other way.  Once a refusal is read nothing more
 * is sent (requests already on their way, at most 63, are still carried
 * out, as files of a put that fails); the first refusal is the put's
 * error.  A put's parents are answered before anything goes below them.
 */
#define PUT_WINDOW 64

struct put_pipe {
	unsigned pending; /* requests sent, not answered yet */
	bool refused;	  /* an answer was P_ERR: *first holds it */
	struct err first;
};

/* Read one pending answer; -1 only when the VM failed (a refusal is kept). */
static int pipe_take(struct vm *v, struct put_pipe *pp, struct err *e)
{
	struct err answer;

	pp->pending--;
	if (expect_ok(v, REQUEST_TIMEOUT_MS, "put", &answer) == 0)
		return 0;
	if (v->dead) {
		*e = answer;
		return -1;
	}
	if (!pp->refused) {
		pp->refused = true;
		pp->first = answer;
	}
	return 0;
}

/* A request was sent: make room in the window. */
static int pipe_sent(struct vm *v, struct put_pipe *pp, struct err *e)
{
	pp->pending++;
	while (pp->pending >= PUT_WINDOW)
		if (pipe_take(v, pp, e) < 0)
			return -1;
	if (pp->refused) {
		*e = pp->first;
		return -1;
	}
	return 0;
}

/* Every answer read: 0, or the first refusal (or the VM's failure). */
static int pipe_drain(struct vm *v, struct put_pipe *pp, struct err *e)
{
	while (pp->pending)
		if (pipe_take(v, pp, e) < 0)
			return -1;
	if (pp->refused) {
		*e = pp->first;
		return -1;
	}
	return 0;
}

/* After a failure on this side: the answers still owed are read, so the
 * next request meets its own. */
static void pipe_abandon(struct vm *v, struct put_pipe *pp)
{
	struct err ignored;

	while (!v->dead && pp->pending)
		if (pipe_take(v, pp, &ignored) < 0)
			break;
}

/* Make the directory rel with mode, owned as the agent's do_mkdir() says
 * for the P_MKDIR flags pflags (answered through pp). */
static int send_mkdir(struct vm *v, struct put_pipe *pp, const char *rel, mode_t mode,
		      uint32_t pflags, struct err *e)
{
	pbuf_start(&v->ob, P_MKDIR);
	pbuf_str(&v->ob, rel);
	pbuf_u32(&v->ob, mode);
	pbuf_u32(&v->ob, pflags);
	if (chan_send(v, e) < 0)
		return -1;
	return pipe_sent(v, pp, e);
}

/* The parents of rel below its top directory ("work" or "tmp"): the
 * program's (0755) for its own put, else put_parent_rule()'s. */
static int send_parents(struct vm *v, struct put_pipe *pp, const char *rel, unsigned flags,
			struct err *e)
{
	char dir[PATH_MAX];
	uint32_t pflags = flags & PUT_NOT_THE_PROGRAMS ? put_flags(flags) | PROTO_PUT_PARENT : 0;

	snprintf(dir, sizeof(dir), "%s", rel);
	for (char *p = strchr(dir, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (strchr(dir, '/') && send_mkdir(v, pp, dir, 0755, pflags, e) < 0)
			return -1;
		*p = '/';
	}
	return 0;
}

static int send_file(struct vm *v, struct put_pipe *pp, int fd, const char *host_path,
		     const char *rel, mode_t mode, unsigned flags, struct err *e)
{
	static unsigned char chunk[PROTO_CHUNK];

	pbuf_start(&v->ob, P_PUT);
	pbuf_str(&v->ob, rel);
	pbuf_u32(&v->ob, mode);
	pbuf_u32(&v->ob, put_flags(flags));
	if (chan_send(v, e) < 0)
		return -1;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			/* The agent waits for the end: finish the request first. */
			int saved = errno;
			pbuf_start(&v->ob, P_PUT_END);
			if (chan_send(v, e) < 0)
				return -1;
			pp->pending++;
			return err_set(e, saved, "read '%s'", host_path);
		}
		if (n == 0)
			break;
		pbuf_start(&v->ob, P_DATA);
		pbuf_bytes(&v->ob, chunk, (size_t)n);
		if (chan_send(v, e) < 0)
			return -1;
	}
	pbuf_start(&v->ob, P_PUT_END);
	if (chan_send(v, e) < 0)
		return -1;
	return pipe_sent(v, pp, e);
}

/* Where a put's entries go in a microVM: P_MKDIR and P_PUT to the agent. */
struct vm_sink {
	struct vm *v;
	unsigned flags;
	struct put_pipe pp;
};

static int sink_parents(void *ctx, const char *rel, struct err *e)
{
	struct vm_sink *k = ctx;

	/* Answered before anything is put below them: a parent that could not
	 * be sealed must not receive a file (one round trip per put). */
	if (send_parents(k->v, &k->pp, rel, k->flags, e) < 0)
		return -1;
	return pipe_drain(k->v, &k->pp, e);
}

static int sink_dir(void *ctx, const char *rel, struct err *e)
{
	struct vm_sink *k = ctx;

	/* /work and /tmp themselves stay the sandbox's, root's and 01777,
	 * whatever a tree put onto them is for (hidden tests for the harness
	 * go into /work, which the program must still enter). */
	if (!strchr(rel, '/') && (k->flags & PUT_NOT_THE_PROGRAMS))
		return send_mkdir(k->v, &k->pp, rel, 01777, PROTO_PUT_PROTECTED, e);
	return send_mkdir(k->v, &k->pp, rel, 0755, put_flags(k->flags), e);
}

static int sink_file(void *ctx, int fd, const char *host_path, const char *rel, mode_t mode,
		     struct err *e)
{
	struct vm_sink *k = ctx;

	return send_file(k->v, &k->pp, fd, host_path, rel, mode, k->flags, e);
}

/* sandbox_path_rel(), but the guest's tree has /work and /tmp only: a
 * directory of the program's own at the top is the jail's for now. */
static int vm_path_rel(const char *sandbox_path, char *rel, size_t len, struct err *e)
{
	size_t n = strlen(SANDBOX_TREE_ROOT);

	if (sandbox_path_rel(sandbox_path, rel, len, e) < 0)
		return -1;
	if (strncmp(rel, SANDBOX_TREE_ROOT "/", n + 1) == 0)
		return err_setk(e, ERR_UNAVAILABLE, 0,
				"sandbox path '%s': a microVM's writable tree is /work and /tmp "
				"(other top-level directories are the jail's)",
				sandbox_path);
	return 0;
}

static int vm_put(struct sandbox *sb, const char *host_path, const char *sandbox_path,
		  unsigned flags, struct err *e)
{
	struct vm *v = (struct vm *)sb;
	struct vm_sink k = {.v = v, .flags = flags};
	const struct tree_sink sink = {
	    .ctx = &k, .parents = sink_parents, .dir = sink_dir, .file = sink_file};
	char rel[PATH_MAX];

	if (v->dead)
		return err_set(e, 0, "microVM: the VM is gone");
	if (vm_path_rel(sandbox_path, rel, sizeof(rel), e) < 0)
		return -1;
	if (tree_put(host_path, rel, &sink, e) == 0)
		return pipe_drain(v, &k.pp, e) < 0 ? err_wrap(e, "put '%s'", host_path) : 0;
	pipe_abandon(v, &k.pp);
	return -1;
}

static const char *const base_env[] = {
    "PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/work", "TMPDIR=/tmp", "LANG=C.UTF-8", "PWD=/work",
};

/* argv (argc entries) and env (env_total with the base entries, whose
 * own are not checked) within the protocol's caps. */
static int check_strings(char *const *argv, size_t argc, char *const *env, size_t env_total,
			 const char *whose, struct err *e)
{
	size_t nbase = sizeof(base_env) / sizeof(base_env[0]);

	if (argc == 0 || argc > PROTO_MAX_ARGS || env_total > PROTO_MAX_ENV)
		return err_set(e, E2BIG,
			       "microVM: %s%zu arguments and %zu environment entries "
			       "(at most %u and %u)",
			       whose, argc, env_total, PROTO_MAX_ARGS, PROTO_MAX_ENV);
	for (size_t i = 0; i < argc; i++)
		if (strlen(argv[i]) > PROTO_MAX_STR)
			return err_set(e, E2BIG, "microVM: %sargument %zu is longer than %u bytes",
				       whose, i, PROTO_MAX_STR);
	for (size_t i = 0; i + nbase < env_total; i++)
		if (strlen(env[i]) > PROTO_MAX_STR)
			return err_set(e, E2BIG,
				       "microVM: %senvironment entry %zu is longer than %u bytes",
				       whose, i, PROTO_MAX_STR);
	return 0;
}

/* Whether env (n entries) sets the variable of base entry `kv`: then the
 * base entry is left out, so the guest's environment has one of each (a
 * build's PATH with Proctor's compiler shim first, grade.c). */
static bool overridden(const char *kv, char *const *env, size_t n)
{
	size_t klen = strcspn(kv, "=") + 1;

	for (size_t i = 0; i < n; i++)
		if (strncmp(env[i], kv, klen) == 0)
			return true;
	return false;
}

/* The base entries env does not override, one after the other. */
static uint32_t base_kept(char *const *env, size_t n)
{
	uint32_t k = 0;

	for (size_t i = 0; i < sizeof(base_env) / sizeof(base_env[0]); i++)
		k += !overridden(base_env[i], env, n);
	return k;
}

static void encode_env(struct vm *v, char *const *env, size_t n)
{
	pbuf_u32(&v->ob, base_kept(env, n) + (uint32_t)n);
	for (size_t i = 0; i < sizeof(base_env) / sizeof(base_env[0]); i++)
		if (!overridden(base_env[i], env, n))
			pbuf_str(&v->ob, base_env[i]);
	for (size_t i = 0; i < n; i++)
		pbuf_str(&v->ob, env[i]);
}

/* A P_RUN (or P_ZYGOTE) frame of spec into v->ob. */
static void encode_run(struct vm *v, unsigned type, const struct run_spec *spec, size_t argc,
		       size_t peer_argc, const char *stdin_rel)
{
	const struct limits *l = &spec->limits;

	pbuf_start(&v->ob, type);
	pbuf_u32(&v->ob, (uint32_t)argc);
	for (size_t i = 0; i < argc; i++)
		pbuf_str(&v->ob, spec->argv[i]);
	encode_env(v, spec->env, spec->env_count);
	pbuf_str(&v->ob, stdin_rel);
	pbuf_u64(&v->ob, l->cpu_ms);
	pbuf_u64(&v->ob, l->wall_ms);
	pbuf_u64(&v->ob, l->memory_bytes);
	pbuf_u64(&v->ob, l->pids);
	pbuf_u64(&v->ob, l->fsize_bytes);
	pbuf_u64(&v->ob, l->nofile);
	pbuf_u64(&v->ob, l->output_bytes);
	pbuf_u32(&v->ob, (spec->privileged ? PROTO_RUN_PRIVILEGED : 0) |
			     (spec->zygote ? PROTO_RUN_ZYGOTE : 0));
	double f = spec->time_factor > 1.0 ? spec->time_factor : 1.0;
	pbuf_u32(&v->ob, (uint32_t)(f > 100.0 ? 100000 : f * 1000.0 + 0.5));
	/* The peer of a split run, with the same base environment. */
	pbuf_u32(&v->ob, (uint32_t)peer_argc);
	for (size_t i = 0; i < peer_argc; i++)
		pbuf_str(&v->ob, spec->peer_argv[i]);
	if (peer_argc)
		encode_env(v, spec->peer_env, spec->peer_env_count);
	else
		pbuf_u32(&v->ob, 0);
}

static int vm_zygote(struct sandbox *sb, const struct run_spec *spec, struct err *e)
{
	struct vm *v = (struct vm *)sb;
	size_t argc = 0, envc = sizeof(base_env) / sizeof(base_env[0]);

	if (v->dead)
		return err_set(e, 0, "microVM: the VM is gone");
	while (spec->argv[argc])
		argc++;
	if (check_strings(spec->argv, argc, spec->env, spec->env_count + envc, "zygote ", e) < 0)
		return -1;
	encode_run(v, P_ZYGOTE, spec, argc, 0, "");
	if (chan_send(v, e) < 0)
		return -1;
	return expect_ok(v, spec->limits.wall_ms + RUN_GRACE_MS, "starting the zygote", e);
}

static int vm_run(struct sandbox *sb, const struct run_spec *spec, struct run_result *res,
		  struct err *e)
{
	struct vm *v = (struct vm *)sb;
	const struct limits *l = &spec->limits;
	char stdin_rel[PATH_MAX] = "";
	size_t argc = 0, peer_argc = 0, envc = sizeof(base_env) / sizeof(base_env[0]);
	struct proto_exit x;
	uint64_t deadline;

	if (v->dead)
		return err_set(e, 0, "microVM: the VM is gone");
	if (spec->cwd)
		/* The agent starts every program in /work (proto.h has no
		 * directory to send): said, rather than run elsewhere. */
		return err_setk(
		    e, ERR_UNAVAILABLE, 0,
		    "microVM: a run in a directory other than /work is not supported yet");
	if (spec->stdin_fd >= 0) {
		/* The input goes in as a protected file the run reads. */
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", spec->stdin_fd);
		snprintf(stdin_rel, sizeof(stdin_rel), "tmp/.proctor-stdin");
		if (lseek(spec->stdin_fd, 0, SEEK_SET) < 0 && errno != ESPIPE)
			return err_set(e, errno, "stdin");
		struct put_pipe pp = {0};
		if (send_file(v, &pp, spec->stdin_fd, "stdin", stdin_rel, 0644,
			      SANDBOX_PUT_PROTECTED, e) < 0) {
			pipe_abandon(v, &pp);
			return -1;
		}
		if (pipe_drain(v, &pp, e) < 0)
			return -1;
	} else if (spec->stdin_path &&
		   vm_path_rel(spec->stdin_path, stdin_rel, sizeof(stdin_rel), e) < 0)
		return -1;
	while (spec->argv[argc])
		argc++;
	while (spec->peer_argv && spec->peer_argv[peer_argc])
		peer_argc++;
	if (spec->peer_argv && peer_argc == 0)
		return err_set(e, EINVAL, "a split run's peer_argv is empty");
	if (check_strings(spec->argv, argc, spec->env, spec->env_count + envc, "", e) < 0 ||
	    (spec->peer_argv && check_strings(spec->peer_argv, peer_argc, spec->peer_env,
					      spec->peer_env_count + envc, "peer ", e) < 0))
		return -1;
	encode_run(v, P_RUN, spec, argc, peer_argc, stdin_rel);
	if (chan_send(v, e) < 0)
		return -1; /* The hard limit: the guest has the wall clock (and CPU, which cannot
			    * exceed it on one vCPU) plus a grace to answer, then it is killed. */
	uint64_t budget = (l->wall_ms > l->cpu_ms ? l->wall_ms : l->cpu_ms) + RUN_GRACE_MS;
	deadline = deadline_in(budget);
	for (;;) {
		unsigned t, stream;
		uint32_t len;
		const unsigned char *data;
		size_t n;
		struct err ce;

		if (chan_recv(v, &t, &len, deadline, &ce) < 0) {
			if (!v->dead || now_ns() < deadline)
				return err_set(e, 0, "%s", ce.msg);
			/* Silent past every limit: a wedged guest is the
			 * program's timeout, enforced from outside. */
			res->status = RUN_TIMEOUT;
			res->limits_hit |= LIMIT_HIT_WALL;
			res->signal = SIGKILL;
			res->wall_ms = budget;
			snprintf(res->message, sizeof(res->message),
				 "wall-clock limit of %.3f s exceeded; the guest stopped "
				 "answering and the VM was killed",
				 (double)l->wall_ms / 1000);
			return 0;
		}
		if (t == P_OUT) {
			if (proto_parse_out(v->ib, len, &stream, &data, &n) < 0)
				return vm_fail(v, e, "a malformed output frame");
			capbuf_append(stream == 1 ? &res->out : &res->err, data, n);
			continue;
		}
		if (t == P_EXIT) {
			if (proto_parse_exit(v->ib, len, &x) < 0)
				return vm_fail(v, e, "a malformed exit frame");
			break;
		}
		if (t == P_ERR) {
			char msg[512];
			if (proto_parse_err(v->ib, len, msg, sizeof(msg)) < 0)
				return vm_fail(v, e, "a malformed error frame");
			return err_set(e, 0, "microVM: run: the guest agent says: %s", msg);
		}
		return vm_fail(v, e, "unexpected frame type %u during a run", t);
	}
	if (x.flags & PROTO_EXIT_NOT_STARTED)
		return err_set(e, 0, "microVM: the guest agent could not start the program: %s",
			       x.message);
	/* What the guest counted; what was kept was counted here. */
	if (x.out_total > res->out.total)
		res->out.total = x.out_total;
	if (x.err_total > res->err.total)
		res->err.total = x.err_total;
	res->out.truncated = res->out.total > res->out.cap || res->out.total > l->output_bytes;
	res->err.truncated = res->err.total > res->err.cap || res->err.total > l->output_bytes;
	res->cpu_ms = x.cpu_ms;
	res->wall_ms = x.wall_ms;
	res->peak_memory_kib = x.peak_memory_kib;
	res->peak_pids = x.peak_pids;
	if (x.flags & PROTO_EXIT_PIDS_HIT)
		res->limits_hit |= LIMIT_HIT_PIDS;
	if (x.flags & PROTO_EXIT_DISK_FULL)
		res->limits_hit |= LIMIT_HIT_DISK;
	if (res->out.truncated || res->err.truncated)
		res->limits_hit |= LIMIT_HIT_OUTPUT;
	if (x.flags & PROTO_EXIT_SIGNALED)
		res->signal = x.signal;
	else if (x.flags & PROTO_EXIT_EXITED)
		res->exit_code = x.exit_code;
	else if (x.killed_for)
		res->signal = SIGKILL;
	run_result_classify(res, l,
			    x.killed_for & (LIMIT_HIT_CPU | LIMIT_HIT_WALL | LIMIT_HIT_MEMORY),
			    (x.flags & PROTO_EXIT_OOM_KILL) != 0,
			    (x.flags & PROTO_EXIT_EXEC_FAILED) ? x.message : NULL);
	return 0;
}

/* Receive a P_GET answer into host_path, at most `budget` bytes. */
static int vm_get(struct sandbox *sb, const char *sandbox_path, const char *host_path,
		  struct err *e)
{
	struct vm *v = (struct vm *)sb;
	char rel[PATH_MAX], frel[PROTO_MAX_STR], msg[512];
	uint64_t budget = v->disk_bytes, total = 0;
	_cleanup_close_ int out = -1, topfd = -1;
	bool skipping = false; /* the data of a file left out */

	if (v->dead)
		return err_set(e, 0, "microVM: the VM is gone");
	if (vm_path_rel(sandbox_path, rel, sizeof(rel), e) < 0)
		return -1;
	pbuf_start(&v->ob, P_GET);
	pbuf_str(&v->ob, rel);
	if (chan_send(v, e) < 0)
		return -1;
	for (;;) {
		unsigned t;
		uint32_t len, mode;
		uint64_t size;

		if (chan_recv(v, &t, &len, deadline_in(REQUEST_TIMEOUT_MS), e) < 0)
			return -1;
		if (t == P_OK && len == 0 && out < 0 && !skipping)
			return 0;
		if (t == P_ERR) {
			if (proto_parse_err(v->ib, len, msg, sizeof(msg)) < 0)
				return vm_fail(v, e, "a malformed error frame");
			return err_set(e, 0, "get '%s': %s", sandbox_path, msg);
		}
		if (t == P_FILE && out < 0 && !skipping) {
			int pr = proto_parse_file(v->ib, len, frel, sizeof(frel), &mode, &size);
			if (pr == -2) {
				/* A name the host does not write: left out, as the
				 * jail leaves it out (files.c get_tree()). */
				char shown[PATH_MAX + PROTO_MAX_STR];
				snprintf(shown, sizeof(shown), "%s/%s", sandbox_path, frel);
				sandbox_get_skip(sb, shown);
				skipping = true;
				continue;
			}
			if (pr < 0)
				return vm_fail(v, e, "a malformed file frame");
			/* Execute bits kept as the jail keeps them. */
			mode_t fmode = (mode & 0111) ? 0755 : 0644;
			if (frel[0] == '\0') {
				out = open(host_path,
					   O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
					   fmode);
			} else {
				if (topfd < 0) {
					if (mkdir(host_path, 0755) < 0 && errno != EEXIST) {
						err_set(e, errno, "mkdir '%s'", host_path);
						vm_kill(v);
						return -1;
					}
					topfd = open(host_path, O_RDONLY | O_DIRECTORY |
								    O_NOFOLLOW | O_CLOEXEC);
				}
				char *slash = strrchr(frel, '/');
				if (slash) {
					*slash = '\0';
					if (mkdir_p_at(topfd, frel, 0755, 0, 0, e) < 0) {
						vm_kill(v);
						return -1;
					}
					*slash = '/';
				}
				out = open_beneath(topfd, frel, O_WRONLY | O_CREAT | O_TRUNC, fmode);
			}
			if (out < 0) {
				err_set(e, errno, "write '%s/%s'", host_path, frel);
				vm_kill(v);
				return -1;
			}
			continue;
		}
		if (t == P_DATA && (out >= 0 || skipping)) {
			struct preader r;
			size_t n;
			const unsigned char *d;
			preader_init(&r, v->ib, len);
			d = preader_bytes(&r, PROTO_MAX_PAYLOAD, &n);
			if (!d || preader_end(&r) < 0)
				return vm_fail(v, e, "a malformed data frame");
			total += n;
			if (total > budget) {
				vm_kill(v);
				return err_set(e, EFBIG, "get '%s': more than %llu bytes",
					       sandbox_path, (unsigned long long)budget);
			}
			if (out >= 0 && write_all(out, d, n) < 0) {
				err_set(e, errno, "write '%s'", host_path);
				vm_kill(v);
				return -1;
			}
			continue;
		}
		if (t == P_FILE_END && len == 0 && (out >= 0 || skipping)) {
			xclose(take_fd(&out));
			skipping = false;
			continue;
		}
		return vm_fail(v, e, "unexpected frame type %u in a file transfer", t);
	}
}

pid_t vm_sandbox_pid(const struct sandbox *sb)
{
	return sb && sb->ops == &vm_ops ? ((const struct vm *)sb)->pid : 0;
}

/* ---- the slowdown factor ---- */

static double vm_time_factor(const char *state_dir, bool *measured)
{
	char path[PATH_MAX];
	json_error_t je;
	json_t *j;
	struct vm_host h;
	struct err e;
	double f = 0;

	if (measured)
		*measured = false;
	if (vm_host_info(&h, &e) == 0 && h.kvm)
		return 1.0;
	snprintf(path, sizeof(path), "%s/vm/factor.json", state_dir);
	j = json_load_file(path, 0, &je);
	if (j)
		f = json_number_value(json_object_get(j, "factor"));
	json_decref(j);
	if (f >= 1.0 && f <= 100.0) {
		if (measured)
			*measured = true;
		return f;
	}
	return VM_DEFAULT_TCG_FACTOR;
}

int vm_factor_store(const char *state_dir, double factor, const struct vm_host *h,
		    uint64_t native_cpu_ms, uint64_t vm_cpu_ms, struct err *e)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(path, sizeof(path), "%s/vm", state_dir);
	if (mkdir_p_at(AT_FDCWD, path, 0755, 0, 0, e) < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/vm/factor.json", state_dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (!(f = fopen(tmp, "we")))
		return err_set(e, errno, "write %s", tmp);
	fprintf(f,
		"{\"factor\": %.3f, \"accel\": \"%s\", \"native_cpu_ms\": %llu, "
		"\"vm_cpu_ms\": %llu, \"qemu\": \"%s\"}\n",
		factor, h->accel, (unsigned long long)native_cpu_ms, (unsigned long long)vm_cpu_ms,
		QEMU_BINARY);
	if (fclose(f) != 0 || rename(tmp, path) < 0)
		return err_set(e, errno, "write %s", path);
	return 0;
}

const struct sandbox_ops vm_ops = {
    .name = "vm",
    .probe = vm_probe,
    .prepare = vm_prepare,
    .create = vm_create,
    .put = vm_put,
    .run = vm_run,
    .get = vm_get,
    .destroy = vm_destroy,
    .time_factor = vm_time_factor,
    .pool_hint = vm_pool_hint,
    .pool_drain = vm_pool_drain,
    .zygote = vm_zygote,
};
