/* The jail's mounts: the sandbox's fresh root, built inside its mount namespace. */
#include "jail/mount.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox.h"
#include "scratch.h"
#include "util.h"

/* Top-level directories of the system tree, bound read-only when present. */
static const char *const system_dirs[] = {
	"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32",
};

/*
 * Entries of the host's /etc a program may need (dynamic loader, locale,
 * language runtimes).  An allowlist, not the whole /etc: configuration of
 * the grading host (database URLs, keys) must not be readable.
 */
static const char *const etc_allow[] = {
	"alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime",
	"timezone", "nsswitch.conf", "os-release", "debian_version", "mime.types",
	"protocols", "services", "java-17-openjdk", "java-21-openjdk", "python3",
	"python3.11", "ssl", "ca-certificates", "gai.conf", "magic", "perl",
	"inputrc", "bash.bashrc", "profile", "fonts", "R",
};

static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom"};

static int join(char *buf, size_t len, const char *a, const char *b, struct err *e)
{
	if ((size_t)snprintf(buf, len, "%s/%s", a, b) >= len)
		return err_set(e, ENAMETOOLONG, "path '%s/%s'", a, b);
	return 0;
}

/* SECURITY: every bind that reaches host data is remounted read-only, nosuid
 * and nodev, so the sandbox can neither change the host tree nor gain
 * privilege through a setuid binary or a device node on it. */
static int bind_ro(const char *src, const char *dst, unsigned long extra, struct err *e)
{
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
		return err_set(e, errno, "bind '%s' on '%s'", src, dst);
	if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | extra, NULL) < 0)
		return err_set(e, errno, "remount '%s' read-only", dst);
	return 0;
}

static int bind_rw(const char *src, const char *dst, struct err *e)
{
	if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
		return err_set(e, errno, "bind '%s' on '%s'", src, dst);
	if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, NULL) < 0)
		return err_set(e, errno, "remount '%s' nosuid,nodev", dst);
	return 0;
}

/* Recreate host entry `src` as `dst`: a symlink is copied, a directory or
 * file is bound read-only.  Missing or non-world-readable entries are skipped. */
static int mirror_entry(const char *src, const char *dst, unsigned long extra, struct err *e)
{
	struct stat st;
	char target[PATH_MAX];

	if (lstat(src, &st) < 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		ssize_t n = readlink(src, target, sizeof(target) - 1);
		if (n < 0)
			return 0;
		target[n] = '\0';
		if (symlink(target, dst) < 0)
			return err_set(e, errno, "symlink '%s'", dst);
		return 0;
	}
	if (!(st.st_mode & S_IROTH))
		return 0;
	if (S_ISDIR(st.st_mode)) {
		if (mkdir(dst, 0755) < 0)
			return err_set(e, errno, "mkdir '%s'", dst);
	} else if (S_ISREG(st.st_mode)) {
		int fd = open(dst, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0)
			return err_set(e, errno, "create '%s'", dst);
		close(fd);
	} else {
		return 0;
	}
	return bind_ro(src, dst, extra, e);
}

static int write_text(const char *path, const char *text, struct err *e)
{
	return write_new_at(AT_FDCWD, path, 0644, text, strlen(text), e);
}

static int build_etc(const struct mount_plan *p, const char *sys_etc, const char *etc,
		     struct err *e)
{
	char src[PATH_MAX], dst[PATH_MAX], text[512];

	if (mkdir(etc, 0755) < 0)
		return err_set(e, errno, "mkdir '%s'", etc);
	snprintf(text, sizeof(text),
		 "root:x:0:0:root:/root:/usr/sbin/nologin\n"
		 "student:x:%u:%u:Proctor sandbox:/work:/bin/sh\n"
		 "harness:x:%u:%u:Proctor test harness:/work:/bin/sh\n"
		 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		 (unsigned)p->uid, (unsigned)p->gid, (unsigned)p->harness_uid,
		 (unsigned)p->harness_gid);
	if (join(dst, sizeof(dst), etc, "passwd", e) < 0 || write_text(dst, text, e) < 0)
		return -1;
	snprintf(text, sizeof(text), "root:x:0:\nstudent:x:%u:\nharness:x:%u:\nnogroup:x:65534:\n",
		 (unsigned)p->gid, (unsigned)p->harness_gid);
	if (join(dst, sizeof(dst), etc, "group", e) < 0 || write_text(dst, text, e) < 0)
		return -1;
	if (join(dst, sizeof(dst), etc, "hosts", e) < 0 ||
	    write_text(dst, "127.0.0.1\tlocalhost proctor\n::1\tlocalhost ip6-localhost\n", e) < 0)
		return -1;
	if (join(dst, sizeof(dst), etc, "hostname", e) < 0 || write_text(dst, "proctor\n", e) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(etc_allow) / sizeof(etc_allow[0]); i++) {
		if (join(src, sizeof(src), sys_etc, etc_allow[i], e) < 0 ||
		    join(dst, sizeof(dst), etc, etc_allow[i], e) < 0 ||
		    mirror_entry(src, dst, MS_NODEV, e) < 0)
			return -1;
	}
	return 0;
}

static int build_dev(const struct mount_plan *p, const char *root, struct err *e)
{
	char dev[PATH_MAX], dst[PATH_MAX], src[PATH_MAX];

	if (join(dev, sizeof(dev), root, "dev", e) < 0)
		return -1;
	if (mkdir(dev, 0755) < 0)
		return err_set(e, errno, "mkdir '%s'", dev);
	for (size_t i = 0; i < sizeof(dev_nodes) / sizeof(dev_nodes[0]); i++) {
		snprintf(src, sizeof(src), "/dev/%s", dev_nodes[i]);
		if (join(dst, sizeof(dst), dev, dev_nodes[i], e) < 0)
			return -1;
		int fd = open(dst, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0666);
		if (fd < 0)
			return err_set(e, errno, "create '%s'", dst);
		close(fd);
		/* SECURITY: only these character devices exist in the sandbox;
		 * the bind keeps dev semantics for them alone (no nodev), but
		 * they are read-only binds of harmless nodes. */
		if (mount(src, dst, NULL, MS_BIND, NULL) < 0)
			return err_set(e, errno, "bind '%s'", src);
		if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC, NULL) < 0)
			return err_set(e, errno, "remount '%s'", dst);
	}
	static const char *const links[][2] = {
		{"/proc/self/fd", "fd"},     {"/proc/self/fd/0", "stdin"},
		{"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"},
	};
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		if (join(dst, sizeof(dst), dev, links[i][1], e) < 0)
			return -1;
		if (symlink(links[i][0], dst) < 0)
			return err_set(e, errno, "symlink '%s'", dst);
	}
	if (join(dst, sizeof(dst), dev, "shm", e) < 0 || mkdir(dst, 0755) < 0)
		return err_set(e, errno, "mkdir /dev/shm");
	if (join(src, sizeof(src), p->scratch_dir, "shm", e) < 0 || bind_rw(src, dst, e) < 0)
		return -1;
	return 0;
}

/*
 * The program's own top-level directories (/grader, /workspace: put there
 * through the sandbox API, sandbox_path_rel()): each directory in the
 * tree's SANDBOX_TREE_ROOT is bound read-write at /NAME.  Only the
 * supervisor writes that directory (the program never sees it whole), and
 * sandbox_path_rel() never names a system directory there; a name the
 * root already has is skipped all the same, and only real directories are
 * bound.  Called before the root is frozen read-only.
 */
#define OWN_TOPS_MAX 64

static int bind_own_tops(const struct mount_plan *p, const char *root, struct err *e)
{
	char src[PATH_MAX], dst[PATH_MAX];
	struct dirent *de;
	unsigned n = 0;
	int rc = 0;

	if (join(src, sizeof(src), p->scratch_dir, SANDBOX_TREE_ROOT, e) < 0)
		return -1;
	int fd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : err_set(e, errno, "open '%s'", src);
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_set(e, errno, "read '%s'", src);
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		struct stat st;
		if (de->d_name[0] == '.' || fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (++n > OWN_TOPS_MAX) {
			rc =
			    err_set(e, 0, "more than %d top-level directories of the program's own",
				    OWN_TOPS_MAX);
			break;
		}
		if (join(src, sizeof(src), p->scratch_dir, SANDBOX_TREE_ROOT, e) < 0 ||
		    strlen(src) + strlen(de->d_name) + 2 > sizeof(src) ||
		    join(dst, sizeof(dst), root, de->d_name, e) < 0) {
			rc = err_set(e, ENAMETOOLONG, "'%s'", de->d_name);
			break;
		}
		strcat(strcat(src, "/"), de->d_name);
		if (mkdir(dst, 0755) < 0) {
			if (errno == EEXIST)
				continue; /* the system's own name: never shadowed */
			rc = err_set(e, errno, "mkdir '%s'", dst);
			break;
		}
		rc = bind_rw(src, dst, e);
	}
	closedir(d);
	return rc;
}

int mount_build_root(const struct mount_plan *p, struct err *e)
{
	char src[PATH_MAX], dst[PATH_MAX];
	const char *root = p->root_dir;

	/* SECURITY: nothing mounted below may propagate back to the host's
	 * namespace, and nothing the host mounts later may appear here. */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return err_set(e, errno, "make mounts private");
	/* SECURITY: the new root is a fresh tmpfs: no host file is reachable
	 * unless bound below. */
	if (mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV,
		  "size=1m,nr_inodes=512,mode=0755") < 0)
		return err_set(e, errno, "mount root tmpfs on '%s'", root);

	for (size_t i = 0; i < sizeof(system_dirs) / sizeof(system_dirs[0]); i++) {
		if (join(src, sizeof(src), p->system_dir, system_dirs[i], e) < 0 ||
		    join(dst, sizeof(dst), root, system_dirs[i], e) < 0)
			return -1;
		if (mirror_entry(src, dst, MS_NODEV, e) < 0)
			return err_wrap(e, "system tree");
	}
	if (join(src, sizeof(src), p->system_dir, "etc", e) < 0 ||
	    join(dst, sizeof(dst), root, "etc", e) < 0 || build_etc(p, src, dst, e) < 0)
		return err_wrap(e, "/etc");
	if (build_dev(p, root, e) < 0)
		return err_wrap(e, "/dev");

	static const char *const rw[] = {"work", "tmp"};
	for (size_t i = 0; i < 2; i++) {
		if (join(src, sizeof(src), p->scratch_dir, rw[i], e) < 0 ||
		    join(dst, sizeof(dst), root, rw[i], e) < 0)
			return -1;
		if (mkdir(dst, 0755) < 0)
			return err_set(e, errno, "mkdir '%s'", dst);
		if (bind_rw(src, dst, e) < 0)
			return -1;
	}
	if (join(dst, sizeof(dst), root, "var", e) < 0 || mkdir(dst, 0755) < 0)
		return err_set(e, errno, "mkdir /var");
	if (join(dst, sizeof(dst), root, "var/tmp", e) < 0 || symlink("/tmp", dst) < 0)
		return err_set(e, errno, "symlink /var/tmp");
	if (bind_own_tops(p, root, e) < 0)
		return err_wrap(e, "the program's own directories");

	/* SECURITY: a proc of the new pid namespace: host processes are not in
	 * it, and hidepid=invisible hides processes of other uids (the root
	 * init; in a split run the harness from the peer and the other way
	 * round) so their environ and cmdline cannot even be listed. */
	if (join(dst, sizeof(dst), root, "proc", e) < 0 || mkdir(dst, 0555) < 0)
		return err_set(e, errno, "mkdir /proc");
	if (mount("proc", dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=invisible") <
		    0 &&
	    mount("proc", dst, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2") < 0)
		return err_set(e, errno, "mount /proc");

	/* SECURITY: the root's own skeleton (etc, dev, mount points) is frozen. */
	if (mount(NULL, root, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		return err_set(e, errno, "remount root read-only");

	/* SECURITY: pivot_root(".", ".") stacks the old root under the new one;
	 * the lazy unmount then drops every host mount from this namespace. */
	if (chdir(root) < 0)
		return err_set(e, errno, "chdir '%s'", root);
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		return err_set(e, errno, "pivot_root");
	if (umount2(".", MNT_DETACH) < 0)
		return err_set(e, errno, "detach the host's root");
	if (chdir("/") < 0)
		return err_set(e, errno, "chdir /");
	return 0;
}

int mount_scratch(const char *dir, unsigned long long bytes, uid_t uid, gid_t gid,
		  struct err *e)
{
	char opts[128], path[PATH_MAX];
	unsigned long long inodes = scratch_inodes(bytes);

	snprintf(opts, sizeof(opts), "size=%llu,nr_inodes=%llu,mode=0755", bytes, inodes);
	/* SECURITY: the writable tree is a size-capped tmpfs that exists only
	 * for this sandbox; nosuid and nodev so nothing placed there gains
	 * privilege.  /work is root-owned and sticky like /tmp: the program
	 * creates files there, but cannot delete, rename or change the
	 * root-owned files put there protected (hidden tests). */
	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		return err_set(e, errno, "mount scratch tmpfs on '%s'", dir);
	static const struct {
		const char *name;
		mode_t mode;
		bool own;
	} subdirs[] = {{"work", 01777, false},
		       {"tmp", 01777, false},
		       {"shm", 01777, false},
		       {SANDBOX_TREE_ROOT, 0755, false}};
	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		if (join(path, sizeof(path), dir, subdirs[i].name, e) < 0)
			return -1;
		if (mkdir(path, subdirs[i].mode) < 0 || chmod(path, subdirs[i].mode) < 0)
			return err_set(e, errno, "mkdir '%s'", path);
		if (subdirs[i].own && chown(path, uid, gid) < 0)
			return err_set(e, errno, "chown '%s'", path);
	}
	return 0;
}
