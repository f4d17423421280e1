/* Image builds: mmdebstrap in namespaces of its own, with the host's apt sources retargeted. */
#include "image/build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host/tool.h"
#include "util.h"

#define BUILD_TIMEOUT_S 3600 /* mmdebstrap: downloads and installs */
/* Fixed, so two builds from the same mirror state give the same tree
 * (mmdebstrap clamps times and cleans up logs with it): 2024-01-01 UTC. */
#define SOURCE_DATE_EPOCH "1704067200"
#define SOURCES_MAX	  (1u << 20) /* bytes of one host apt sources file */
#define LOG_TAIL	  (64u << 10)
#define HOST_SOURCES_DIR  "/etc/apt/sources.list.d"
/* Where the work directory appears inside the build's mount namespace. */
#define BUILD_DIR "/tmp/build"

/* ---- the build's namespaces ---- */

/*
 * PID 1 of the build's pid namespace and first process of its user and
 * mount namespaces, started by run_mmdebstrap() with fd 4 the go pipe and
 * fd 5 a detached copy of the work directory's mount.  Waits until the
 * parent has written the id maps, becomes the namespace's root, puts the
 * work directory at BUILD_DIR, runs mmdebstrap there and reaps every
 * process until mmdebstrap exits.  Its own exit ends the pid namespace:
 * nothing of the build outlives it, and it dies with proctor (PDEATHSIG).
 */
static _Noreturn void build_init(char *const argv[], char *const envp[])
{
	char b;
	pid_t pid;
	int st;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		tool_child_fail(3, "set the parent-death signal");
	if (read(4, &b, 1) != 1)
		_exit(126); /* the parent is gone or gave up */
	/* SECURITY: drop host root's supplementary groups first (the namespace
	 * does not map them, yet they would still open group-readable files),
	 * then become uid/gid 0 of the namespace, which is host uid/gid
	 * `base` (write_id_map): capabilities over this namespace only. */
	if (setgroups(0, NULL) < 0)
		tool_child_fail(3, "drop supplementary groups");
	if (setresgid(0, 0, 0) < 0 || setresuid(0, 0, 0) < 0)
		tool_child_fail(3, "become root of the build's user namespace");
	/* The uid change cleared the death signal: set it again, then make
	 * sure the parent did not die in between (it holds the go pipe open
	 * until the build is over; getppid() says 0 across a pid namespace). */
	struct pollfd parent = {.fd = 4, .events = POLLIN};
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		tool_child_fail(3, "set the parent-death signal");
	if (poll(&parent, 1, 0) != 0)
		_exit(126);
	close(4);
	/* SECURITY: mounts made here stay here: the mount namespace is the
	 * build's own (owned by its user namespace) and receives, but never
	 * sends, mount events.  The work directory is bound at BUILD_DIR on a
	 * fresh /tmp: the state directory's path need not be searchable by
	 * the build's uid, and the build sees none of the host's /tmp. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		tool_child_fail(3, "make the build's mounts private");
	if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777,size=256m") < 0)
		tool_child_fail(3, "mount a tmpfs on /tmp");
	if (mkdir(BUILD_DIR, 0755) < 0 ||
	    move_mount(5, "", AT_FDCWD, BUILD_DIR, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		tool_child_fail(3, "bind the work directory on " BUILD_DIR);
	close(5);
	if (chdir(BUILD_DIR) < 0)
		tool_child_fail(3, "enter " BUILD_DIR);
	pid = fork();
	if (pid < 0)
		tool_child_fail(3, "fork");
	if (pid == 0) {
		execve(argv[0], argv, envp);
		tool_child_fail(3, "exec");
	}
	for (;;) {
		pid_t w = waitpid(-1, &st, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			_exit(125);
		if (w == pid)
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
}

static int write_id_map(pid_t pid, const char *file, uid_t base, struct err *e)
{
	char path[64], map[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, file);
	snprintf(map, sizeof(map), "0 %u %u\n", (unsigned)base, IMAGE_BUILD_IDS);
	return write_file_at(AT_FDCWD, path, map, e);
}

/* Why mmdebstrap failed, from the log's tail: its first "E: " line (the
 * root cause: "E: Unable to locate package x"), or "" when it has none. */
static void log_reason(int log_fd, char *buf, size_t cap)
{
	struct stat st;
	char *tail;
	off_t from;
	ssize_t n;

	buf[0] = '\0';
	if (fstat(log_fd, &st) < 0 || !(tail = malloc(LOG_TAIL + 1)))
		return;
	from = st.st_size > (off_t)LOG_TAIL ? st.st_size - (off_t)LOG_TAIL : 0;
	n = pread(log_fd, tail, LOG_TAIL, from);
	if (n <= 0) {
		free(tail);
		return;
	}
	tail[n] = '\0';
	tool_apt_error(tail, buf, cap);
	free(tail);
}

/* Run mmdebstrap (argv, envp) in the build's namespaces with cwd work_fd.
 * Returns 0, or -1: ERR_BUILD_FAILED when it ran and failed (e: its first
 * error line, or its exit status), ERR_INTERNAL when it could not be run. */
static int run_mmdebstrap(char *const argv[], char *const envp[], int work_fd, int log_fd,
			  uid_t base, struct err *e)
{
	int rep[2] = {-1, -1}, go[2] = {-1, -1}, pidfd = -1, tree = -1, st, rc = -1;
	char buf[64], reason[512];
	pid_t pid;

	if (pipe2(rep, O_CLOEXEC) < 0 || pipe2(go, O_CLOEXEC) < 0) {
		err_set(e, errno, "pipe");
		goto out_close;
	}
	/* A detached copy of the work directory's mount, for build_init to
	 * attach in its own mount namespace (a plain bind from an fd of the
	 * host's namespace is refused there). */
	tree = open_tree(work_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (tree < 0) {
		err_set(e, errno, "clone the work directory's mount");
		goto out_close;
	}
	/* SECURITY: a new user namespace, mapped below, so that the build's
	 * root is an unprivileged host uid; a new pid namespace, so that
	 * killing its init kills every process of the build; a new mount
	 * namespace for the build's own mounts (build_init). */
	pid = (pid_t)syscall(SYS_clone,
			     CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_PIDFD | SIGCHLD,
			     NULL, &pidfd, NULL, 0);
	if (pid < 0) {
		err_set(e, errno, "create the build's user and pid namespaces");
		goto out_close;
	}
	if (pid == 0) {
		int extra[2] = {go[0], tree};
		tool_child_setup(log_fd, rep[1], extra, 2);
		build_init(argv, envp);
	}
	close(take_fd(&rep[1]));
	close(take_fd(&go[0]));
	close(take_fd(&tree));
	bool mapped = write_id_map(pid, "uid_map", base, e) == 0 &&
		      write_id_map(pid, "gid_map", base, e) == 0;
	if (!mapped || write(go[1], "g", 1) != 1) {
		if (mapped)
			err_set(e, errno, "start the build");
		syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
		tool_wait(pid, pidfd, 0, &st);
		err_wrap(e, "set up the build's user namespace");
		goto out_close;
	}
	int timed_out = tool_wait(pid, pidfd, BUILD_TIMEOUT_S, &st);
	if (tool_read_report(rep[0], "mmdebstrap", e) < 0)
		goto out_close;
	if (timed_out < 0) {
		err_setk(e, ERR_BUILD_FAILED, 0, "mmdebstrap took longer than %u s and was killed",
			 BUILD_TIMEOUT_S);
	} else if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		/* Its first error line says why better than its status. */
		log_reason(log_fd, reason, sizeof(reason));
		if (reason[0])
			err_setk(e, ERR_BUILD_FAILED, 0, "mmdebstrap failed: %s", reason);
		else
			err_setk(e, ERR_BUILD_FAILED, 0, "mmdebstrap failed (%s)",
				 tool_status_text(st, buf, sizeof(buf)));
	} else {
		rc = 0;
	}
out_close:
	xclose(rep[0]);
	xclose(rep[1]);
	xclose(go[0]);
	xclose(go[1]);
	xclose(tree);
	return rc;
}

/* ---- the build's inputs ---- */

/* A growing string with a cap. */
struct sbuf {
	char *p;
	size_t len, cap;
};

static int sbuf_add(struct sbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		if (cap > 4 * SOURCES_MAX)
			return -1;
		char *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

/* The host's release codename (VERSION_CODENAME in /etc/os-release), or "". */
static void host_codename(char *buf, size_t cap)
{
	char text[4096];
	size_t len = 0;
	const char *p;
	int fd;

	buf[0] = '\0';
	/* A symlink to /usr/lib/os-release on Debian: followed (host configuration). */
	if ((fd = open("/etc/os-release", O_RDONLY | O_CLOEXEC)) < 0)
		return;
	for (;;) {
		ssize_t n = read(fd, text + len, sizeof(text) - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	text[len] = '\0';
	for (p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, "VERSION_CODENAME=", 17) == 0) {
			p += 17;
			size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789-");
			if (n < cap)
				snprintf(buf, cap, "%.*s", (int)n, p);
			return;
		}
	}
}

/* One suite token, with the host's codename swapped for the recipe's
 * suite: bookworm -> trixie, bookworm-security -> trixie-security. */
static int add_suite(struct sbuf *b, const char *t, size_t n, const char *host, const char *suite)
{
	size_t hl = strlen(host);

	if (!hl || n < hl || memcmp(t, host, hl) != 0 || (n > hl && t[hl] != '-'))
		return sbuf_add(b, t, n);
	if (sbuf_add(b, suite, strlen(suite)) < 0)
		return -1;
	return sbuf_add(b, t + hl, n - hl);
}

/* [s, end): whitespace-separated suite tokens. */
static int add_suite_words(struct sbuf *b, const char *s, const char *end, const char *host,
			   const char *suite)
{
	while (s < end) {
		size_t n = 0;
		while (s + n < end && (s[n] == ' ' || s[n] == '\t'))
			n++;
		if (sbuf_add(b, s, n) < 0)
			return -1;
		s += n;
		for (n = 0; s + n < end && s[n] != ' ' && s[n] != '\t'; n++)
			;
		if (n && add_suite(b, s, n, host, suite) < 0)
			return -1;
		s += n;
	}
	return 0;
}

static const char *skip_blank(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static const char *skip_word(const char *p, const char *end)
{
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	return p;
}

/*
 * The host's sources file, retargeted at `suite`: in deb822 files the
 * Suites: field (with its continuation lines), in one-line files the third
 * word of each deb/deb-src line (after an optional [options] block).
 */
static int retarget(const char *text, size_t len, bool deb822, const char *host, const char *suite,
		    struct sbuf *out)
{
	const char *l = text, *end = text + len;
	bool in_suites = false;
	int rc = 0;

	while (rc == 0 && l < end) {
		const char *eol = memchr(l, '\n', (size_t)(end - l));
		if (!eol)
			eol = end;
		if (deb822) {
			if (*l == ' ' || *l == '\t') {
				rc = in_suites ? add_suite_words(out, l, eol, host, suite)
					       : sbuf_add(out, l, (size_t)(eol - l));
			} else if (*l == '#') {
				rc = sbuf_add(out, l, (size_t)(eol - l));
			} else {
				in_suites = eol - l >= 7 && strncasecmp(l, "Suites:", 7) == 0;
				if (!in_suites)
					rc = sbuf_add(out, l, (size_t)(eol - l));
				else if ((rc = sbuf_add(out, l, 7)) == 0)
					rc = add_suite_words(out, l + 7, eol, host, suite);
			}
		} else {
			const char *p = skip_blank(l, eol), *w = skip_word(p, eol), *t = NULL, *te;
			if ((w - p == 3 && !strncmp(p, "deb", 3)) ||
			    (w - p == 7 && !strncmp(p, "deb-src", 7))) {
				p = skip_blank(w, eol);
				if (p < eol && *p == '[') {
					const char *close = memchr(p, ']', (size_t)(eol - p));
					p = close ? skip_blank(close + 1, eol) : eol;
				}
				p = skip_blank(skip_word(p, eol), eol); /* the URI */
				if (p < eol)
					t = p;
			}
			if (t) {
				te = skip_word(t, eol);
				rc = sbuf_add(out, l, (size_t)(t - l));
				if (rc == 0)
					rc = add_suite(out, t, (size_t)(te - t), host, suite);
				if (rc == 0)
					rc = sbuf_add(out, te, (size_t)(eol - te));
			} else {
				rc = sbuf_add(out, l, (size_t)(eol - l));
			}
		}
		if (rc == 0 && eol < end)
			rc = sbuf_add(out, "\n", 1);
		l = eol + 1;
	}
	return rc;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* A NULL-terminated list of owned strings. */
struct strv {
	char **v;
	size_t n, cap;
	bool failed; /* an allocation failed: checked once at the end */
};

static void strv_take(struct strv *s, char *owned)
{
	if (!owned || s->failed) {
		free(owned);
		s->failed = true;
		return;
	}
	if (s->n + 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));
		if (!v) {
			free(owned);
			s->failed = true;
			return;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = owned;
	s->v[s->n] = NULL;
}

__attribute__((format(printf, 2, 3))) static void strv_addf(struct strv *s, const char *fmt, ...)
{
	va_list ap;
	char *p = NULL;

	va_start(ap, fmt);
	if (vasprintf(&p, fmt, ap) < 0)
		p = NULL;
	va_end(ap);
	strv_take(s, p);
}

static bool apt_file_name(const char *n)
{
	size_t len = strlen(n);

	/* apt reads only these names from sources.list.d */
	if (strspn(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != len)
		return false;
	return (len > 5 && !strcmp(n + len - 5, ".list")) ||
	       (len > 8 && !strcmp(n + len - 8, ".sources"));
}

static int source_filter(const struct dirent *de)
{
	return apt_file_name(de->d_name);
}

/* Write the host's apt sources, retargeted at the suite, into work/sources/
 * (readable by the build's root); add "sources/NAME" for each to `mirrors`. */
static int write_sources(int workfd, const char *suite, uid_t base, struct strv *mirrors,
			 struct err *e)
{
	char host[64], from[PATH_MAX];
	struct dirent **names = NULL;
	int n = 0, dirfd = -1, rc = -1;
	size_t written = 0;

	host_codename(host, sizeof(host));
	if (mkdirat(workfd, "sources", 0755) < 0 ||
	    fchownat(workfd, "sources", base, (gid_t)base, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (dirfd = openat(workfd, "sources", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return err_set(e, errno, "work directory 'sources'");
	n = scandir(HOST_SOURCES_DIR, &names, source_filter, alphasort);
	if (n < 0 && errno != ENOENT) {
		err_set(e, errno, "read %s", HOST_SOURCES_DIR);
		goto out;
	}
	/* -1: /etc/apt/sources.list, then sources.list.d in apt's order. */
	for (int i = -1; i < (n < 0 ? 0 : n); i++) {
		const char *name = i < 0 ? "sources.list" : names[i]->d_name;
		struct sbuf out = {0};
		struct stat st;
		char *text = NULL;
		size_t len = 0;

		snprintf(from, sizeof(from), "%s/%s", i < 0 ? "/etc/apt" : HOST_SOURCES_DIR, name);
		if (stat(from, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (read_whole_at(AT_FDCWD, from, 0, SOURCES_MAX, &text, &len, e) < 0)
			goto out;
		size_t nl = strlen(name);
		bool deb822 = nl > 8 && !strcmp(name + nl - 8, ".sources");
		int r = strcmp(host, suite) == 0 ? sbuf_add(&out, text, len)
						 : retarget(text, len, deb822, host, suite, &out);
		free(text);
		if (r == 0 && !out.p)
			r = sbuf_add(&out, "", 0);
		if (r < 0) {
			free(out.p);
			err_set(e, ENOMEM, "apt sources '%s'", from);
			goto out;
		}
		int fd =
		    openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
		if (fd < 0 || write_all(fd, out.p, out.len) < 0) {
			err_set(e, errno, "copy apt sources '%s'%s", from,
				errno == EEXIST ? " (two host sources files of that name)" : "");
			xclose(fd);
			free(out.p);
			goto out;
		}
		close(fd);
		free(out.p);
		strv_addf(mirrors, "sources/%s", name);
		written++;
	}
	if (written == 0) {
		err_set(e, 0,
			"no apt sources on this host (/etc/apt/sources.list, " HOST_SOURCES_DIR
			"/*.sources or *.list)");
		goto out;
	}
	rc = 0;
out:
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	xclose(dirfd);
	return rc;
}

/* Copy the recipe's files into work/files/<i>, readable only by the
 * build's root: mmdebstrap uploads them from there, so the host files need
 * not be readable by it, and what is built is what was copied. */
static int stage_files(int workfd, const struct recipe *r, uid_t base, struct err *e)
{
	char buf[65536], name[32];
	int dirfd;

	if (r->n_files == 0)
		return 0;
	if (mkdirat(workfd, "files", 0700) < 0 ||
	    fchownat(workfd, "files", base, (gid_t)base, AT_SYMLINK_NOFOLLOW) < 0 ||
	    (dirfd = openat(workfd, "files", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return err_set(e, errno, "work directory 'files'");
	for (size_t i = 0; i < r->n_files; i++) {
		int in = open(r->files[i].src, O_RDONLY | O_CLOEXEC | O_NOFOLLOW), out = -1;
		snprintf(name, sizeof(name), "%zu", i);
		if (in >= 0)
			out = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (in < 0 || out < 0 || fchown(out, base, (gid_t)base) < 0) {
			err_set(e, errno, "copy '%s'", r->files[i].src);
			goto out_fail;
		}
		for (;;) {
			ssize_t n = read(in, buf, sizeof(buf));
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 || (n > 0 && write_all(out, buf, (size_t)n) < 0)) {
				err_set(e, errno, "copy '%s'", r->files[i].src);
				goto out_fail;
			}
			if (n == 0)
				break;
		}
		close(in);
		close(out);
		continue;
	out_fail:
		xclose(in);
		xclose(out);
		close(dirfd);
		return -1;
	}
	close(dirfd);
	return 0;
}

/* s in single quotes for sh: ' becomes '\''.  The recipe has refused NUL
 * and line breaks, the only characters quoting cannot carry here (a hook
 * is one line of mmdebstrap's command line). */
static char *sh_quote(const char *s)
{
	size_t n = 3;
	char *q, *p;

	for (const char *c = s; *c; c++)
		n += *c == '\'' ? 4 : 1;
	if (!(q = malloc(n)))
		return NULL;
	p = q;
	*p++ = '\'';
	for (const char *c = s; *c; c++) {
		if (*c == '\'') {
			memcpy(p, "'\\''", 4);
			p += 4;
		} else {
			*p++ = *c;
		}
	}
	*p++ = '\'';
	*p = '\0';
	return q;
}

/*
 * mmdebstrap's command line.  Hooks, in order: each file (its parent
 * directories made, uploaded, its mode set, all inside the image), then
 * each setup command, chrooted into the image.  A hook that is not one of
 * mmdebstrap's special commands runs as `sh -c HOOK exec ROOT`, so every
 * word from the recipe is quoted by sh_quote(); upload's paths are split
 * by Perl's shellwords instead, which is why recipe.c limits a file's
 * destination to characters that need no quoting at all, and the source
 * is a relative path of our own.
 */
static void mmdebstrap_argv(const struct recipe *r, struct strv *mirrors, struct strv *a)
{
	strv_addf(a, "%s", IMAGE_MMDEBSTRAP);
	strv_addf(a, "--mode=unshare");
	strv_addf(a, "--variant=%s", recipe_variant_name(r->variant));
	strv_addf(a, "--format=tar");
	if (r->n_packages > 0) {
		struct sbuf inc = {0};
		int bad = sbuf_add(&inc, "--include=", 10);
		for (size_t i = 0; i < r->n_packages && bad == 0; i++)
			bad = (i && sbuf_add(&inc, ",", 1) < 0) ||
			      sbuf_add(&inc, r->packages[i], strlen(r->packages[i])) < 0;
		strv_take(a, bad ? (free(inc.p), NULL) : inc.p);
	}
	for (size_t i = 0; i < r->n_files; i++) {
		const struct recipe_file *f = &r->files[i];
		char *dst = sh_quote(f->dst), *parent = strdup(f->dst);
		char *slash = parent ? strrchr(parent, '/') : NULL;
		if (slash)
			*slash = '\0';
		char *qparent = parent ? sh_quote(parent) : NULL;
		if (!dst || !qparent) {
			a->failed = true;
		} else {
			if (parent[0])
				strv_addf(a, "--customize-hook=chroot \"$1\" mkdir -p -- %s",
					  qparent);
			strv_addf(a, "--customize-hook=upload files/%zu %s", i, f->dst);
			strv_addf(a, "--customize-hook=chroot \"$1\" chmod %04o -- %s",
				  (unsigned)f->mode, dst);
		}
		free(dst);
		free(parent);
		free(qparent);
	}
	for (size_t i = 0; i < r->n_setup; i++) {
		struct sbuf cmd = {0};
		int bad = sbuf_add(&cmd, "--customize-hook=chroot \"$1\"", 28);
		for (char **arg = r->setup[i]; *arg && bad == 0; arg++) {
			char *q = sh_quote(*arg);
			bad = !q || sbuf_add(&cmd, " ", 1) < 0 || sbuf_add(&cmd, q, strlen(q)) < 0;
			free(q);
		}
		strv_take(a, bad ? (free(cmd.p), NULL) : cmd.p);
	}
	strv_addf(a, "%s", r->suite);
	strv_addf(a, "rootfs.tar");
	for (size_t i = 0; i < mirrors->n; i++)
		strv_addf(a, "%s", mirrors->v[i]);
}

/* The environment of the build: no host variables beyond proxies. */
static void build_env(struct strv *env)
{
	static const char *const pass[] = {"http_proxy",  "https_proxy", "no_proxy", "HTTP_PROXY",
					   "HTTPS_PROXY", "NO_PROXY",	 NULL};

	strv_addf(env, "PATH=/usr/sbin:/usr/bin:/sbin:/bin");
	strv_addf(env, "LC_ALL=C.UTF-8");
	strv_addf(env, "HOME=" BUILD_DIR);
	strv_addf(env, "TMPDIR=" BUILD_DIR);
	strv_addf(env, "SOURCE_DATE_EPOCH=%s", SOURCE_DATE_EPOCH);
	for (size_t i = 0; pass[i]; i++) {
		const char *v = getenv(pass[i]);
		if (v && strlen(v) < 4096 && !strpbrk(v, "\n\r"))
			strv_addf(env, "%s=%s", pass[i], v);
	}
}

int build_mmdebstrap(const struct recipe *r, int workfd, int log_fd, uid_t base, struct err *e)
{
	struct strv mirrors = {0}, argv = {0}, env = {0};
	int rc = -1;

	if (write_sources(workfd, r->suite, base, &mirrors, e) < 0 ||
	    stage_files(workfd, r, base, e) < 0)
		goto out;
	mmdebstrap_argv(r, &mirrors, &argv);
	build_env(&env);
	if (mirrors.failed || argv.failed || env.failed) {
		err_set(e, ENOMEM, "mmdebstrap's command line");
		goto out;
	}
	tool_log_cmd(log_fd, "running", argv.v);
	rc = run_mmdebstrap(argv.v, env.v, workfd, log_fd, base, e);
out:
	free_strv(mirrors.v);
	free_strv(argv.v);
	free_strv(env.v);
	return rc;
}
