/* Grading one submission: sandbox, intake, build, test, report, verdict, score. */
#include "grade/grade.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nettle/hmac.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capbuf.h"
#include "digest.h"
#include "grade/compare.h"
#include "grade/guards.h"
#include "grade/opener.h"
#include "grade/pytest_guard.h"
#include "grade/report.h"
#include "grade/runtime_pyc.h"
#include "grade/split.h"
#include "grade/symcheck.h"
#include "grade/unpriv.h"
#include "host/statedir.h"
#include "image/image.h"
#include "result.h"
#include "util.h"

#ifndef PROCTOR_VERSION
#define PROCTOR_VERSION "0.1.0"
#endif

#define DISPLAY_CAP	 (64u << 10) /* output kept per stream in a result */
#define HELPER_TIMEOUT_S 60

/* Fixed environment of every graded run, on top of the sandbox's own, so
 * nothing incidental (hash seeds, time zone, bytecode caches, plugins a
 * submission could smuggle in) varies between two gradings. */
static char *const grade_env[] = {
    (char *)"PYTHONHASHSEED=0",
    (char *)"PYTHONDONTWRITEBYTECODE=1",
    (char *)"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1",
    (char *)"TZ=UTC",
    (char *)"LC_ALL=C.UTF-8",
    (char *)"SOURCE_DATE_EPOCH=0",
};

/* Everything one attempt builds up; the result document is made from it. */
struct attempt {
	const struct assignment *a;
	const struct grade_options *o;
	const char *submission;
	int dir_fd;		      /* class mode: the directory scanned, else -1 */
	const char *entry;	      /* class mode: submission's name in dir_fd */
	const struct opener_id *seen; /* class mode: what the scan found there */
	struct sandbox *sb;
	char staging[PATH_MAX];
	int staging_fd;	     /* the staging directory, flock'ed while this attempt lives; -1 */
	char report_dir[64]; /* in the sandbox, with a per-attempt nonce */
	json_t *steps, *tests, *sub;
	char *const *extra_env; /* added to grade_env for the test step (the pytest guard) */
	const char *stdin_path; /* a sandbox file as the step's stdin (I/O cases) */
	char *const *peer_argv; /* a split test step's program side (grade/split.h), or NULL */
	char *const *peer_env;
	size_t n_peer_env;
	const char *image_digest;
	size_t n_extra_env;
	const char *status;
	char reason[1024];
	double score;
	size_t passed;
	bool student_ran;   /* the submission's code has run in this attempt */
	bool create_failed; /* a sandbox could not be made (no free slot, the host): never
			       the submission's doing, whatever ran before */
	double time_factor; /* the backend's slowdown: time limits are scaled by it */
	bool zygote;	    /* the test step's harness is a fork of the template's zygote */
	const char *objects_check; /* "explicit", "default", "unchecked" or NULL (cc_check) */
	char snapshot[65];  /* the snapshot the sandbox was restored from, or "" */
	bool templated;	    /* ... the assignment's template (template_for()) */
	const struct runtime_pyc *pyc; /* the runtime's bytecode for the image, or NULL */
};

int grade_prepare(const char *isolation, const struct assignment *a, const struct sandbox_ops **ret,
		  char *why, size_t why_len, struct err *e)
{
	static const char *const names[] = {"any", "jail", "vm"};
	const char *want = isolation;

	/* An assignment that names its isolation gets exactly that one. */
	if (a->isolation != ASSIGNMENT_ISOLATION_ANY) {
		const char *req = names[a->isolation];
		if (strcmp(isolation, "auto") != 0 && strcmp(isolation, req) != 0)
			return err_setk(e, ERR_USAGE, 0,
					"--isolation %s: %s requires isolation '%s' (isolation: in "
					"assignment.yaml)",
					isolation, a->file, req);
		want = req;
	}
	if (sandbox_select(want, strcmp(a->image, "host") != 0, ret, why, why_len, e) < 0)
		return -1;
	/* Before any grading: a helper the sandbox's uid cannot execute would
	 * fail every attempt of every submission (grade_helper_check). */
	struct grade_options defaults = {0};
	if (grade_helper_check(&defaults, e) < 0)
		return -1;
	return (*ret)->prepare(e);
}

/* ---- small helpers --------------------------------------------------------- */

int grade_helper_path(const struct grade_options *o, char *buf, size_t len, struct err *e)
{
	if (!o->helper_path)
		return own_program("proctor-helper", X_OK, buf, len, e);
	snprintf(buf, len, "%s", o->helper_path);
	return 0;
}

int grade_helper_check(const struct grade_options *o, struct err *e)
{
	char path[PATH_MAX];
	int fd;

	if (grade_helper_path(o, path, sizeof(path), e) < 0 || (fd = unpriv_helper_open(path, e)) < 0)
		return -1;
	close(fd);
	return 0;
}

/* proctor-helper `argv` as the sandbox's uid, the slots hidden: c's
 * descriptors and input, unpriv_run()'s result (grade/unpriv.h); -2, never
 * the input's doing, also when there is no proctor-helper. */
static int run_helper(const struct attempt *at, char **argv, struct unpriv_call c, json_t **ans,
		      struct err *herr)
{
	char helper[PATH_MAX], slots_dir[PATH_MAX];

	if (grade_helper_path(at->o, helper, sizeof(helper), herr) < 0)
		return -2;
	snprintf(slots_dir, sizeof(slots_dir), "%s/slots", at->o->sandbox.state_dir);
	c.helper = helper;
	c.argv = argv;
	c.uid = at->sb->untrusted_uid;
	c.timeout_s = HELPER_TIMEOUT_S;
	c.hide_dir = slots_dir;
	return unpriv_run(&c, ans, herr);
}

/* Replace {report} and {report_dir} in one argv element. */
static char *subst(const char *arg, const char *report_dir)
{
	char out[8192];
	size_t o = 0;

	for (const char *p = arg; *p && o + 1 < sizeof(out);) {
		if (strncmp(p, "{report_dir}", 12) == 0) {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s", report_dir);
			p += 12;
		} else if (strncmp(p, "{report}", 8) == 0) {
			o += (size_t)snprintf(out + o, sizeof(out) - o, "%s/report", report_dir);
			p += 8;
		} else {
			out[o++] = *p++;
		}
		if (o >= sizeof(out))
			o = sizeof(out) - 1;
	}
	out[o] = '\0';
	return strdup(out);
}

static void free_argv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

/* argv of a step with substitutions, plus `extra` appended. */
static char **step_argv(const struct step *s, const char *report_dir, char *const *extra,
			size_t n_extra)
{
	char **v = calloc(s->argc + n_extra + 1, sizeof(char *));

	if (!v)
		return NULL;
	for (size_t i = 0; i < s->argc; i++)
		if (!(v[i] = subst(s->argv[i], report_dir)))
			goto fail;
	for (size_t i = 0; i < n_extra; i++)
		if (!(v[s->argc + i] = strdup(extra[i])))
			goto fail;
	return v;
fail:
	free_argv(v);
	return NULL;
}

static void set_verdict(struct attempt *at, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_verdict(struct attempt *at, const char *status, const char *fmt, ...)
{
	va_list ap;

	char raw[sizeof(at->reason)];

	at->status = status;
	va_start(ap, fmt);
	int n = vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	/* The reason quotes sandbox messages and names: whatever their bytes,
	 * and wherever the cap cuts, it is valid UTF-8, so it can always go
	 * into the result document. */
	utf8_fix_into(at->reason, sizeof(at->reason), raw,
		      n < 0			? 0
		      : (size_t)n < sizeof(raw) ? (size_t)n
						: sizeof(raw) - 1);
}

/* A JSON string of text that may hold any bytes (a path, a message
 * quoting a sandbox): repaired to valid UTF-8, never NULL for a non-NULL
 * string (jansson refuses ill-formed UTF-8, which would lose the whole
 * result document). */
static json_t *json_text(const char *s)
{
	size_t len;
	json_t *j = json_string(s);

	if (j)
		return j;
	char *fixed = utf8_sanitize(s, strlen(s), false, &len);
	j = fixed ? json_string(fixed) : NULL;
	free(fixed);
	return j ? j : json_string("");
}

/* The step's record in the result: run_result's fields, output cut to the
 * display cap. */
static json_t *step_json(const char *name, struct run_result *r)
{
	struct run_result shown = *r;

	struct capbuf *caps[] = {&shown.out, &shown.err};

	for (size_t i = 0; i < 2; i++)
		if (caps[i]->len > DISPLAY_CAP) {
			caps[i]->len = DISPLAY_CAP;
			caps[i]->truncated = true;
		}
	json_t *j = run_result_to_json(&shown);
	if (j) {
		json_object_set_new(j, "name", json_string(name));
		json_object_del(j, "schema_version");
	}
	return j;
}

/* ---- staging on the host ----------------------------------------------------- */

/*
 * Staging directories belong to live gradings.  Each is flock'ed by its
 * attempt for as long as it exists, so one whose lock can be taken belongs
 * to a grading that died (SIGKILL, a crash, a power cut) and holds a copy
 * of a submission nobody will remove: the next grading on this state
 * directory sweeps it, as slot leases clean a dead owner's slot.
 * staging/.lock closes the window between mkdtemp and the flock: creators
 * hold it shared across that window, the sweeper exclusively.
 */
#define STAGING_LOCK ".lock"

static void staging_sweep(int base_fd, int lock_fd)
{
	struct err ignored;
	char **names = NULL;
	size_t n = 0;

	if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0)
		return; /* someone is creating or sweeping: next time */
	dir_names(base_fd, SIZE_MAX, &names, &n, &ignored);
	for (size_t i = 0; i < n; i++) {
		const char *name = names[i];
		if (name[0] == '.')
			continue;
		int fd = openat(base_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			/* Its grading is gone. */
			rm_rf_children(fd, &ignored);
			unlinkat(base_fd, name, AT_REMOVEDIR);
		}
		close(fd);
	}
	free_names(names, n);
	flock(lock_fd, LOCK_UN);
}

static int staging_create(struct attempt *at, struct err *e)
{
	char base[PATH_MAX];
	int base_fd, lock_fd, rc = -1;

	if (state_subdir(at->o->sandbox.state_dir, "staging", 0711, base, sizeof(base), e) < 0)
		return -1;
	base_fd = open(base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (base_fd < 0)
		return err_set(e, errno, "open '%s'", base);
	lock_fd = openat(base_fd, STAGING_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (lock_fd < 0) {
		err_set(e, errno, "open '%s/%s'", base, STAGING_LOCK);
		goto out_close_base;
	}
	staging_sweep(base_fd, lock_fd);
	if (flock(lock_fd, LOCK_SH) < 0) {
		err_set(e, errno, "lock '%s/%s'", base, STAGING_LOCK);
		goto out_close_lock;
	}
	snprintf(at->staging, sizeof(at->staging), "%s/XXXXXX", base);
	if (!mkdtemp(at->staging)) {
		err_set(e, errno, "mkdtemp in '%s'", base);
		at->staging[0] = '\0';
		goto out_close_lock;
	}
	at->staging_fd = open(at->staging, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (at->staging_fd < 0 || flock(at->staging_fd, LOCK_EX | LOCK_NB) < 0) {
		err_set(e, errno, "lock '%s'", at->staging);
		goto out_close_lock;
	}
	rc = 0;
out_close_lock:
	close(lock_fd); /* drops the shared lock */
out_close_base:
	close(base_fd);
	return rc;
}

static void staging_remove(struct attempt *at)
{
	struct err ignored;

	if (at->staging[0]) {
		int fd = open(at->staging, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0) {
			rm_rf_children(fd, &ignored);
			close(fd);
		}
		rmdir(at->staging);
		at->staging[0] = '\0';
	}
	at->staging_fd = xclose(at->staging_fd); /* after the removal: never swept while we work */
}

/* A subdirectory of staging; `owner` may write it (the untrusted uid). */
static int staging_dir(struct attempt *at, const char *name, uid_t owner, char *path, size_t len,
		       struct err *e)
{
	snprintf(path, len, "%s/%s", at->staging, name);
	if (mkdir(path, 0700) < 0)
		return err_set(e, errno, "mkdir '%s'", path);
	if (chown(path, owner, owner) < 0)
		return err_set(e, errno, "chown '%s'", path);
	return 0;
}

/* ---- the steps ------------------------------------------------------------------ */

/* Time limits in an assignment mean native speed; a slower backend (a
 * microVM under software emulation) gets them multiplied by its factor. */
static void scale_times(struct limits *l, double factor)
{
	if (factor > 1.0) {
		l->cpu_ms = (uint64_t)((double)l->cpu_ms * factor + 0.5);
		l->wall_ms = (uint64_t)((double)l->wall_ms * factor + 0.5);
	}
}

/* grade_env and then `extra` into env[32]; how many. */
static size_t step_env(char **env, char *const *extra, size_t n_extra)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(grade_env) / sizeof(grade_env[0]); i++)
		env[n++] = grade_env[i];
	for (size_t i = 0; i < n_extra && n < 32; i++)
		env[n++] = extra[i];
	return n;
}

/*
 * Run one program in the attempt's sandbox and record it as a step.
 * Returns 0 with the result in *res (caller frees), or -1 when the sandbox
 * itself failed (Proctor's side, or a sandbox the program broke).
 */
static int run_step(struct attempt *at, const char *name, char **argv, const struct limits *limits,
		    int stdin_fd, size_t output_cap, struct run_result *res, struct err *e)
{
	char *env[32], *peer_env[32];
	size_t n = step_env(env, at->extra_env, at->n_extra_env);
	size_t n_peer = at->peer_argv ? step_env(peer_env, at->peer_env, at->n_peer_env) : 0;
	struct run_spec spec = {
	    .argv = argv,
	    .env = env,
	    .env_count = n,
	    .stdin_fd = stdin_fd,
	    .stdin_path = at->stdin_path,
	    .limits = *limits,
	    .peer_argv = at->peer_argv,
	    .peer_env = peer_env,
	    .peer_env_count = n_peer,
	    .zygote = at->zygote && at->peer_argv,
	    .time_factor = at->time_factor,
	};
	scale_times(&spec.limits, at->time_factor);

	if (run_result_init(res, output_cap) < 0)
		return err_set(e, ENOMEM, "step %s", name);
	int rc = sandbox_run(at->sb, &spec, res, e);
	json_array_append_new(at->steps, step_json(name, res));
	if (rc < 0) {
		run_result_free(res);
		return err_wrap(e, "step %s", name);
	}
	return 0;
}

/* Verdict of a build step; true when it succeeded. */
static bool build_verdict(struct attempt *at, const struct run_result *r)
{
	switch (r->status) {
	case RUN_OK:
		return true;
	case RUN_TIMEOUT:
		set_verdict(at, "timeout", "build: %s", r->message);
		return false;
	case RUN_MEMORY_LIMIT:
		set_verdict(at, "memory_limit", "build: %s", r->message);
		return false;
	case RUN_SIGNALED:
		set_verdict(at, "compile_error", "the build was killed by signal %d (%s)",
			    r->signal, strsignal(r->signal));
		return false;
	default:
		set_verdict(at, "compile_error", "the build failed with exit status %d",
			    r->exit_code);
		return false;
	}
}

/*
 * Take the submission through the unprivileged helper into staging/sub,
 * then copy it into /work.  A refused submission is a verdict (at->status).
 *
 * The helper is never given the path, which its uid may not even reach (a
 * 0700 home or mkdtemp directory): proctor opens the submission here and
 * hands over a descriptor, the archive's open file or a socket to an
 * opener that looks entries up below the directory opened here
 * (grade/opener.h).  A symlink swapped into the path afterwards changes
 * nothing.
 */
/* A templated sandbox has the hidden tests in /work already: what the
 * submission has under the same top-level names is dropped, as the tests
 * put over it would have replaced it. */
static int drop_shadowed(struct attempt *at, const char *sub, struct err *e)
{
	DIR *d = opendir(at->a->tests_dir);
	int sfd = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	struct dirent *de;
	int rc = 0;

	if (!d || sfd < 0) {
		rc = err_set(e, errno, "'%s'", d ? sub : at->a->tests_dir);
		goto out;
	}
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
		    fstatat(sfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (!S_ISDIR(st.st_mode) && unlinkat(sfd, de->d_name, 0) < 0)
			rc = err_set(e, errno, "remove '%s/%s'", sub, de->d_name);
		else if (S_ISDIR(st.st_mode))
			rc = rm_tree_at(sfd, de->d_name, e);
	}
out:
	if (d)
		closedir(d);
	xclose(sfd);
	return rc;
}

static int take_submission(struct attempt *at, struct err *e)
{
	char sub[PATH_MAX + 8];
	const struct assignment *a = at->a;
	struct opener_stat sst;
	json_t *req, *ans = NULL;
	struct err herr;
	int src = -1, sock = -1, dest = -1;
	pid_t opener = -1;

	if (staging_dir(at, "sub", at->sb->untrusted_uid, sub, sizeof(sub), e) < 0)
		return -1;
	int orc = at->dir_fd >= 0
		      ? opener_open_entry(at->dir_fd, at->entry, at->seen, &sst, &src, e)
		      : opener_open_root(at->submission, &sst, &src, e);
	if (orc < 0 && (e->errnum == ELOOP || e->errnum == ESTALE || e->errnum == EPERM)) {
		/* Swapped for a symlink or another inode since the scan, or a
		 * hard link to a file of someone else's: the submitter's
		 * doing, and nothing was read. */
		set_verdict(at, "rejected", "%s",
			    e->errnum == ELOOP ? "submission is a symbolic link"
			    : e->errnum == ESTALE
				? "submission was replaced while being graded"
				: "submission is a hard link to a file of another owner");
		return 0;
	}
	if (orc < 0)
		return err_wrap(e, "submission");
	if (src < 0) {
		set_verdict(at, "rejected", "%s",
			    S_ISLNK(sst.mode) ? "submission is a symbolic link"
					      : "submission is not a directory or a regular file");
		return 0;
	}
	if (S_ISDIR(sst.mode) && opener_start(src, &opener, &sock, e) < 0) {
		close(src);
		return -1;
	}
	dest = open(sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dest < 0) {
		err_set(e, errno, "open '%s'", sub);
		goto out_stop;
	}
	json_t *globs = json_array(), *required = json_array();
	for (size_t i = 0; i < a->n_files; i++)
		json_array_append_new(globs, json_string(a->files[i]));
	for (size_t i = 0; i < a->n_required; i++)
		json_array_append_new(required, json_string(a->required[i]));
	req = json_pack("{s:o, s:o, s:I, s:I, s:I}", "globs", globs, "required", required,
			"max_bytes", (json_int_t)a->max_bytes, "max_entries",
			(json_int_t)a->max_entries, "max_expanded",
			(json_int_t)(a->max_bytes * 16 + (64u << 20)));
	char *text = req ? json_dumps(req, JSON_COMPACT) : NULL;
	json_decref(req);
	if (!text) {
		err_set(e, ENOMEM, "intake request");
		goto out_stop;
	}
	char *argv[] = {(char *)"intake", NULL};
	/* From here the submission's bytes are being processed: a helper that
	 * dies on them does not earn the submission free retries. */
	at->student_ran = true;
	struct unpriv_call call = {
	    .stdin_fd = -1, .input = text, .fd3 = dest, .fd4 = sock >= 0 ? sock : src};
	int rc = run_helper(at, argv, call, &ans, &herr);
	free(text);
	close(dest);
	xclose(sock);
	opener_stop(opener);
	close(src);
	if (rc == -2)
		/* The helper's own failure (staging full, the opener gone): no
		 * input causes it, so retrying it costs the submission nothing. */
		at->student_ran = false;
	if (rc < 0)
		return err_set(e, 0, "intake helper: %s", herr.msg);
	if (rc > 0) {
		/* The helper refused this input: the submission's doing. */
		set_verdict(at, "rejected", "the submission could not be read: %s", herr.msg);
		return 0;
	}
	int rejected = 0;
	const char *reason = "", *digest = "";
	json_t *taken = NULL, *ignored = NULL;
	if (json_unpack(ans, "{s:b, s:s, s:o, s:o, s:s}", "rejected", &rejected, "reason", &reason,
			"taken", &taken, "ignored", &ignored, "digest", &digest) < 0 ||
	    !json_is_array(taken) || !json_is_array(ignored)) {
		json_decref(ans);
		set_verdict(at, "rejected", "the submission could not be read");
		return 0;
	}
	json_object_set(at->sub, "files", taken);
	json_object_set(at->sub, "ignored", ignored);
	json_object_set_new(at->sub, "digest", json_string(digest));
	if (rejected) {
		set_verdict(at, "rejected", "%s", reason);
		json_decref(ans);
		return 0;
	}
	json_decref(ans);
	if (at->templated && drop_shadowed(at, sub, e) < 0)
		return err_wrap(e, "the submission beside the template's tests");
	if (sandbox_put(at->sb, sub, "/work", 0, e) < 0)
		return err_wrap(e, "copy the submission in");
	return 0;
out_stop:
	xclose(dest);
	xclose(sock);
	opener_stop(opener);
	close(src);
	return -1;
}

/* Fresh, unguessable report directory, created right before the test step
 * so nothing the build left there can pass for a report. */
static int make_report_dir(struct attempt *at, unsigned flags, struct err *e)
{
	char empty[PATH_MAX + 16], name[32];

	if (random_hex(at->report_dir, sizeof(at->report_dir), "/tmp/.proctor-report-", 8, e) < 0)
		return -1;
	snprintf(name, sizeof(name), "empty-%.4s",
		 at->report_dir + strlen("/tmp/.proctor-report-"));
	if (staging_dir(at, name, at->sb->untrusted_uid, empty, sizeof(empty), e) < 0)
		return -1;
	return sandbox_put(at->sb, empty, at->report_dir, flags, e);
}

static bool ok_exit(const struct assignment *a, int code)
{
	for (size_t i = 0; i < a->n_ok_exit; i++)
		if (a->ok_exit[i] == code)
			return true;
	return false;
}

static const char *format_name(enum report_format f)
{
	return f == REPORT_TAP ? "tap" : f == REPORT_GRADESCOPE ? "gradescope" : "junit";
}

/* Parse a report copied to the host, without privilege.  1: verdict set. */
static int parse_report_file(struct attempt *at, const char *host, enum report_format fmt,
			     struct report *ret, struct err *e)
{
	char *argv[] = {(char *)"parse-report", (char *)format_name(fmt), NULL};
	struct err gerr;
	json_t *ans = NULL;
	int rc, fd = open(host, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return err_set(e, errno, "open '%s'", host);
	rc = run_helper(at, argv, (struct unpriv_call){.stdin_fd = fd, .fd3 = -1, .fd4 = -1}, &ans,
			&gerr);
	close(fd);
	if (rc < 0)
		return err_set(e, 0, "report helper: %s", gerr.msg);
	if (rc > 0) {
		set_verdict(at, "crashed", "the report is unusable: %s", gerr.msg);
		return 1;
	}
	rc = report_from_json(json_object_get(ans, "report"), ret, &gerr);
	json_decref(ans);
	if (rc < 0) {
		set_verdict(at, "crashed", "the report is unusable: %s", gerr.msg);
		return 1;
	}
	return 0;
}

/* Copy the report out and parse it without privilege.  On failure the
 * verdict is set (the report is the submission's responsibility). */
static int read_report(struct attempt *at, struct report *ret, struct err *e)
{
	const struct assignment *a = at->a;
	char host[PATH_MAX + 16], *path;
	struct err gerr;
	struct stat st;

	path = a->report_path ? subst(a->report_path, at->report_dir)
			      : subst("{report}", at->report_dir);
	if (!path)
		return err_set(e, ENOMEM, "report path");
	snprintf(host, sizeof(host), "%s/report", at->staging);
	int rc = sandbox_get(at->sb, path, host, &gerr);
	free(path);
	if (rc < 0) {
		set_verdict(at, "crashed", "no usable report: %s", gerr.msg);
		return 1;
	}
	if (lstat(host, &st) < 0 || !S_ISREG(st.st_mode)) {
		set_verdict(at, "crashed", "the report is not a regular file");
		return 1;
	}
	if ((uint64_t)st.st_size > a->report_max_bytes) {
		set_verdict(at, "crashed", "the report is larger than %llu KiB",
			    (unsigned long long)(a->report_max_bytes >> 10));
		return 1;
	}
	return parse_report_file(at, host, a->report_format, ret, e);
}

/* One entry of the result's "tests" (docs/result.md). */
static json_t *test_json(const char *name, const char *classname, const char *status, double score,
			 double max_score, enum visibility v, const char *message,
			 const char *reason)
{
	return json_pack("{s:s, s:o, s:s, s:f, s:f, s:s, s:o, s:o}", "name", name, "classname",
			 classname ? json_string(classname) : json_null(), "status", status,
			 "score", score, "max_score", max_score, "visibility", visibility_name(v),
			 "message", message ? json_text(message) : json_null(), "reason",
			 reason ? json_string(reason) : json_null());
}

/* Score the manifest against a parsed report; sets the verdict. */
static void score_report(struct attempt *at, const struct report *r)
{
	const struct assignment *a = at->a;
	struct manifest_test *m = calloc(a->n_tests ? a->n_tests : 1, sizeof(*m));
	struct matched_test *out = calloc(a->n_tests ? a->n_tests : 1, sizeof(*out));

	if (!m || !out) {
		free(m);
		free(out);
		set_verdict(at, "crashed", "out of memory while scoring");
		return;
	}
	for (size_t i = 0; i < a->n_tests; i++)
		m[i] = a->tests[i].t;
	size_t found = report_match(r, m, a->n_tests, out);
	json_array_clear(at->tests);
	for (size_t i = 0; i < a->n_tests; i++) {
		const struct test_decl *t = &a->tests[i];
		bool pass = out[i].outcome == OUTCOME_PASSED;
		if (pass) {
			at->passed++;
			at->score += t->t.points;
		}
		json_array_append_new(at->tests, test_json(t->t.name, t->t.classname,
							   test_outcome_name(out[i].outcome),
							   pass ? t->t.points : 0, t->t.points,
							   t->visibility, out[i].message, NULL));
	}
	if (found == 0)
		set_verdict(at, "crashed", "none of the %zu declared tests appear in the report",
			    a->n_tests);
	else
		set_verdict(at, "graded", "%s", "");
	free(m);
	free(out);
}

/* Every declared test, unscored: the verdict came before any report. */
static json_t *unscored_tests(const struct assignment *a)
{
	bool io = a->mode == GRADE_MODE_IO;
	size_t total = io ? a->n_cases : a->n_tests;
	json_t *tests = json_array();

	for (size_t i = 0; tests && i < total; i++)
		json_array_append_new(
		    tests,
		    io ? test_json(a->cases[i].name, NULL, "missing", 0, a->cases[i].points,
				   a->cases[i].visibility, NULL, NULL)
		       : test_json(a->tests[i].t.name, a->tests[i].t.classname, "missing", 0,
				   a->tests[i].t.points, a->tests[i].visibility, NULL, NULL));
	return tests;
}

/* ---- the pytest guard ---------------------------------------------------------- */

/* Write `len` bytes to a new staging file, root's (guard_host_file()). */
static int staging_file(struct attempt *at, const char *name, const void *data, size_t len,
			char *path, size_t path_len, struct err *e)
{
	snprintf(path, path_len, "%s/%s", at->staging, name);
	return guard_host_file(path, data, len, 0, e);
}

/* What a guarded or split test step adds to grade_env (guard_prepare). */
#define GUARD_ENV 10

/* Proctor's pytest configuration for a guarded run, used unless the hidden
 * tests bring a pytest.ini of their own. */
static const char guard_ini[] = "# Proctor's pytest configuration: none (docs/grading.md).\n"
				"[pytest]\n";

/* The environment of a guarded or split test step, built by guard_prepare().
 * The first GUARD_PEER_ENV entries are also a split run's program side's. */
#define GUARD_PEER_ENV 3
struct guard_env {
	char buf[GUARD_ENV][256];
	char *env[GUARD_ENV];
	size_t n;
	char visible[4000]; /* PROCTOR_SPLIT_VISIBLE=... (split_visible_env()) */
	char dir[64];	    /* where the split runtime is in the sandbox */
};

static void guard_env_add(struct guard_env *g, const char *name, const char *value)
{
	snprintf(g->buf[g->n], sizeof(g->buf[g->n]), "%s=%s", name, value);
	g->env[g->n] = g->buf[g->n];
	g->n++;
}

/* A split harness runs every visible test before any other
 * (proctor_split.py, docs/grading.md "Hidden inputs"): the manifest's
 * visible tests, one a line, NAME or NAME<tab>CLASSNAME, matched by
 * match.c's rules there; every other test (hidden, or not in the manifest)
 * runs after them.  Only the harness's environment holds them (after
 * GUARD_PEER_ENV).  Not set when every test is visible, nor when the names
 * do not fit (about a hundred visible tests): then the order is the
 * runner's; docs/grading.md says so. */
static void split_visible_env(struct guard_env *g, const struct assignment *a)
{
	size_t len = strlen("PROCTOR_SPLIT_VISIBLE="), others = 0;

	memcpy(g->visible, "PROCTOR_SPLIT_VISIBLE=", len + 1);
	for (size_t i = 0; i < a->n_tests; i++) {
		const struct manifest_test *t = &a->tests[i].t;
		if (a->tests[i].visibility != VIS_VISIBLE) {
			others++;
			continue;
		}
		int n = snprintf(g->visible + len, sizeof(g->visible) - len, "%s%s%s\n", t->name,
				 t->classname ? "\t" : "", t->classname ? t->classname : "");
		if (n < 0 || (size_t)n >= sizeof(g->visible) - len || strpbrk(t->name, "\n\t") ||
		    (t->classname && strpbrk(t->classname, "\n\t")))
			return;
		len += (size_t)n;
	}
	if (others && g->n < GUARD_ENV)
		g->env[g->n++] = g->visible;
}

/* Where an assignment's template keeps the runtime (template_for()). */
#define TEMPLATE_RUNTIME "/tmp/.proctor-runtime"

/* The split runtime's bytecode (runtime_pyc.h) beside its source in the
 * staged directory guard/, where both processes of the step import it
 * before any pycache prefix is set. */
static int runtime_pyc_put(struct attempt *at, struct err *e)
{
	char name[PATH_MAX], path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/guard/__pycache__", at->staging);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return err_set(e, errno, "mkdir '%s'", path);
	snprintf(name, sizeof(name), "guard/__pycache__/proctor_split.%s.pyc", at->pyc->tag);
	return staging_file(at, name, at->pyc->split, at->pyc->split_len, path, sizeof(path), e);
}

/* The JUnit split runtime's class files (guards.h: java_split_files) below
 * the staged directory guard/. */
static int java_runtime_put(struct attempt *at, struct err *e)
{
	char path[PATH_MAX + 32], name[PATH_MAX];

	if (!java_split_built)
		return err_set(e, 0,
			       "this proctor was built without the JUnit split runtime (no javac at "
			       "build time); set test.in_process: true");
	snprintf(path, sizeof(path), "%s/guard", at->staging);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return err_set(e, errno, "open '%s'", path);
	int rc = mkdir_p_at(dfd, "proctor/split", 0755, (uid_t)-1, (gid_t)-1, e);
	close(dfd);
	for (const struct guard_file *f = java_split_files; rc == 0 && f->name; f++) {
		snprintf(name, sizeof(name), "guard/%s", f->name);
		rc = staging_file(at, name, f->data, f->len, path, sizeof(path), e);
	}
	return rc;
}

/* The pytest guard, Proctor's pytest.ini and (split) the split runtime
 * (node --test's too, proctor_split.mjs) into the sandbox directory sbdir,
 * root-owned; with the runtime's
 * bytecode where at->pyc has it (a template compiles its own:
 * _precompile()). */
static int runtime_put(struct attempt *at, bool split, const char *sbdir, bool pyc, struct err *e)
{
	char path[PATH_MAX + 32], dir[PATH_MAX + 32];

	snprintf(dir, sizeof(dir), "%s/guard", at->staging);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return err_set(e, errno, "mkdir '%s'", dir);
	if (staging_file(at, "guard/proctor_guard.py", pytest_guard_source,
			 strlen(pytest_guard_source), path, sizeof(path), e) < 0 ||
	    staging_file(at, "guard/pytest.ini", guard_ini, strlen(guard_ini), path, sizeof(path),
			 e) < 0 ||
	    (split && staging_file(at, "guard/proctor_split.py", proctor_split_source,
				   proctor_split_source_len, path, sizeof(path), e) < 0) ||
	    (split && pyc && at->pyc && runtime_pyc_put(at, e) < 0) ||
	    (split && at->a->runner == RUNNER_NODE &&
	     staging_file(at, "guard/proctor_split.mjs", proctor_split_mjs_source,
			  proctor_split_mjs_source_len, path, sizeof(path), e) < 0) ||
	    (split && at->a->runner == RUNNER_JUNIT && java_runtime_put(at, e) < 0) ||
	    sandbox_put(at->sb, dir, sbdir, SANDBOX_PUT_PROTECTED, e) < 0)
		return err_wrap(e, "guard plugin");
	return 0;
}

/*
 * Arm the guard, or a split run, for the test step.  The plugin, Proctor's
 * pytest.ini and the split runtime go into a directory made now under a
 * fresh random name, root-owned, so neither the submission nor the build
 * (which came and went before it existed) can have put anything beside
 * them; with `key`, a one-time key goes into the fresh report directory
 * (read and deleted by the plugin before any test, hence before the
 * submission is imported).  The environment makes that directory all of
 * Python's start-up path: PYTHONSAFEPATH keeps the working directory off
 * sys.path (`python -m` would put it first, ahead of PYTHONPATH),
 * PYTHONNOUSERSITE keeps ~/.local (HOME is /work) and its .pth files out,
 * and pytest reads only the configuration given by -c (the hidden tests'
 * pytest.ini, else Proctor's empty one) with rootdir and confcutdir
 * /work, never an ini file or conftest.py outside it.  A split run loads
 * the plugin without a key: it keeps what the program wrote out of the
 * harness, and the report is the harness's own.
 */
static int guard_prepare(struct attempt *at, char *key, bool split, struct guard_env *g,
			 struct err *e)
{
	char path[PATH_MAX + 32], dst[PATH_MAX], sbdir[64], ini[96];
	unsigned owned = split ? SANDBOX_PUT_HARNESS_OWNED : 0;
	bool pytest = at->a->runner == RUNNER_PYTEST || at->a->pytest_guard;
	struct stat st;

	g->n = 0;
	snprintf(path, sizeof(path), "%s/guard-key", at->staging);
	if (key && guard_put_key(at->sb, path, at->report_dir, owned, key, e) < 0)
		return -1;
	if (at->templated) {
		/* The template put it before any submission was in the guest. */
		snprintf(sbdir, sizeof(sbdir), "%s", TEMPLATE_RUNTIME);
	} else if (random_hex(sbdir, sizeof(sbdir), "/tmp/.proctor-guard-", 8, e) < 0 ||
		   runtime_put(at, split, sbdir, true, e) < 0)
		return -1;
	snprintf(g->dir, sizeof(g->dir), "%s", sbdir);
	/* The hidden tests' own pytest.ini is root-owned in /work: theirs. */
	snprintf(ini, sizeof(ini), "%s/pytest.ini", sbdir);
	if (at->a->tests_dir) {
		snprintf(path, sizeof(path), "%s/pytest.ini", at->a->tests_dir);
		if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
			snprintf(ini, sizeof(ini), "/work/pytest.ini");
	}
	guard_env_add(g, "PYTHONPATH", sbdir);
	guard_env_add(g, "PYTHONSAFEPATH", "1");
	guard_env_add(g, "PYTHONNOUSERSITE", "1"); /* the program side's end here */
	if (pytest) {
		snprintf(dst, sizeof(dst),
			 "-p proctor_guard -c %s --rootdir=/work --confcutdir=/work", ini);
		guard_env_add(g, "PYTEST_ADDOPTS", dst);
	}
	if (key) {
		snprintf(dst, sizeof(dst), "%s/.key", at->report_dir);
		guard_env_add(g, "PROCTOR_GUARD_KEY_FILE", dst);
		snprintf(dst, sizeof(dst), "%s/guard.json", at->report_dir);
		guard_env_add(g, "PROCTOR_GUARD_OUT", dst);
	}
	/* A split harness reads bytecode only from sbdir/pycache once its
	 * runner is imported (proctor_split.py): a directory the program can
	 * neither create nor write (root's sbdir; a template's is the
	 * harness's). */
	if (split) {
		guard_env_add(g, "PROCTOR_SPLIT", "1");
		split_visible_env(g, at->a);
	}
	return 0;
}

/* Copy a small file out of the sandbox; false if it is missing or too big. */
static bool fetch_small(struct attempt *at, const char *sandbox_path, const char *name,
			uint64_t cap, char **ret, size_t *ret_len)
{
	char host[PATH_MAX + 32];
	struct err ignored;
	struct stat st;

	snprintf(host, sizeof(host), "%s/%s", at->staging, name);
	if (sandbox_get(at->sb, sandbox_path, host, &ignored) < 0 || lstat(host, &st) < 0 ||
	    !S_ISREG(st.st_mode) || (uint64_t)st.st_size > cap)
		return false;
	return read_whole_at(AT_FDCWD, host, O_NOFOLLOW, cap, ret, ret_len, &ignored) == 0;
}

/* A guard's summary `name` in the report directory, verified with the key
 * (name.sig: its HMAC-SHA256 in hex), parsed as the report in format fmt;
 * `what` names the guard in verdicts.  1: verdict set. */
static int read_signed(struct attempt *at, const char key[65], const char *name,
		       enum report_format fmt, const char *what, struct report *ret, struct err *e)
{
	char path[PATH_MAX], host[PATH_MAX + 32], *body = NULL, *sig = NULL;
	size_t body_len = 0, sig_len = 0;
	struct hmac_sha256_ctx ctx;
	uint8_t mac[SHA256_DIGEST_SIZE];
	char hex[2 * SHA256_DIGEST_SIZE + 1];
	int rc = 1;

	snprintf(path, sizeof(path), "%s/%s", at->report_dir, name);
	if (!fetch_small(at, path, name, at->a->report_max_bytes, &body, &body_len)) {
		set_verdict(at, "crashed",
			    "no signed %s summary: the test run did not finish normally (exited "
			    "early, or its report was forged)",
			    what);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s.sig", at->report_dir, name);
	if (!fetch_small(at, path, "guard.sig", 128, &sig, &sig_len)) {
		set_verdict(at, "crashed", "the %s summary is not signed", what);
		goto out;
	}
	hmac_sha256_set_key(&ctx, 64, (const uint8_t *)key);
	hmac_sha256_update(&ctx, body_len, (const uint8_t *)body);
	hmac_sha256_digest(&ctx, sizeof(mac), mac);
	for (size_t i = 0; i < sizeof(mac); i++)
		snprintf(hex + 2 * i, 3, "%02x", mac[i]);
	while (sig_len > 0 && (sig[sig_len - 1] == '\n' || sig[sig_len - 1] == ' '))
		sig_len--;
	unsigned diff = sig_len != 64;
	for (size_t i = 0; i < 64 && i < sig_len; i++)
		diff |= (unsigned)(hex[i] ^ sig[i]);
	if (diff) {
		set_verdict(at, "crashed", "the %s summary's signature does not verify", what);
		goto out;
	}
	snprintf(host, sizeof(host), "%s/%s", at->staging, name);
	rc = parse_report_file(at, host, fmt, ret, e);
out:
	free(body);
	free(sig);
	return rc;
}

/* The pytest guard's summary (guard_prepare()). */
static int read_guard(struct attempt *at, const char key[65], struct report *ret, struct err *e)
{
	return read_signed(at, key, "guard.json", REPORT_GRADESCOPE, "pytest", ret, e);
}

static int runner_mode(struct attempt *at, struct err *e)
{
	const struct assignment *a = at->a;
	bool split = assignment_split(a);
	struct run_result r;
	char **argv, **peer = NULL, key[65] = "";
	struct guard_env g;
	char *env[2];
	struct runner_guard rg = {0};
	bool rguard = !a->pytest_guard && runner_guard_applies(a);

	if (make_report_dir(at, split ? SANDBOX_PUT_HARNESS_OWNED : 0, e) < 0)
		return -1;
	if (a->pytest_guard || split) {
		if (guard_prepare(at, a->pytest_guard ? key : NULL, split, &g, e) < 0)
			return -1;
		at->extra_env = g.env;
		at->n_extra_env = g.n;
	}
	argv = step_argv(&a->test, at->report_dir, NULL, 0);
	if (argv && split) {
		char **h = split_harness_argv(argv, a->runner, g.dir);
		free_argv(argv);
		if (!h && a->runner == RUNNER_JUNIT)
			return err_setk(e, ERR_INPUT, 0,
					"test.run: a split JUnit run finds neither `-jar <launcher jar>` "
					"nor `-cp <class path> org.junit.platform.console.ConsoleLauncher` in "
					"it (or set test.in_process: true)");
		argv = h;
		if (argv && !(peer = split_program_argv(argv))) {
			free_argv(argv);
			argv = NULL;
		}
		at->peer_argv = peer;
		at->peer_env = g.env;
		at->n_peer_env = GUARD_PEER_ENV;
	}
	if (!argv)
		return err_set(e, ENOMEM, "test argv");
	if (rguard) { /* node --test, JUnit: by default (grade/guards.h) */
		int arm =
		    runner_guard_arm(at->sb, at->staging, at->report_dir,
				     split ? SANDBOX_PUT_HARNESS_OWNED : 0, a->runner, argv, &rg, e);
		free_argv(argv);
		if (arm < 0) {
			runner_guard_free(&rg);
			return -1;
		}
		argv = rg.argv;
		rg.argv = NULL;
		env[0] = rg.env[0];
		env[1] = rg.env[1];
		at->extra_env = env;
		at->n_extra_env = 2;
		/* A split node run: the guard reporter is the harness's, as are
		 * its key (above) and the split run's variables. */
		if (split && g.n + 2 <= GUARD_ENV) {
			g.env[g.n++] = env[0];
			g.env[g.n++] = env[1];
			at->extra_env = g.env;
			at->n_extra_env = g.n;
		}
	}
	at->student_ran = true;
	int rc =
	    run_step(at, "test", argv, &a->test.limits, -1, a->test.limits.output_bytes, &r, e);
	at->extra_env = NULL;
	at->n_extra_env = 0;
	at->peer_argv = NULL;
	at->n_peer_env = 0;
	free_argv(peer);
	free_argv(argv);
	if (rc < 0)
		return -1;
	if (r.status == RUN_TIMEOUT)
		set_verdict(at, "timeout", "test: %s", r.message);
	else if (r.status == RUN_MEMORY_LIMIT)
		set_verdict(at, "memory_limit", "test: %s", r.message);
	else if (r.status == RUN_SIGNALED)
		set_verdict(at, "crashed", "the test runner was killed by signal %d (%s)", r.signal,
			    strsignal(r.signal));
	else if (split && r.exit_code == SPLIT_NOT_STARTED_STATUS) {
		run_result_free(&r);
		return err_set(e, 0,
			       "split run: the program side did not start (see the test step)");
	} else if (split && a->runner == RUNNER_JUNIT &&
		   r.exit_code == SPLIT_TESTS_DO_NOT_COMPILE_STATUS) {
		set_verdict(at, "compile_error",
			    "the tests do not compile against the submission's classes (a method or "
			    "class they use is missing or has another signature; the test step's "
			    "output says which)");
	} else if (split && a->runner == RUNNER_JUNIT && r.exit_code == SPLIT_NO_STAND_INS_STATUS) {
		run_result_free(&r);
		return err_set(e, 0,
			       "split run: the submission's classes cannot be stood in for (the test "
			       "step's output says why; test.in_process: true runs them in one "
			       "process)");
	} else if (split && r.exit_code == SPLIT_ABORT_STATUS)
		set_verdict(at, "crashed",
			    "the submission's process ended during a call from the tests, or broke "
			    "the split protocol (the test step's output says which)");
	else if (!ok_exit(a, r.exit_code))
		set_verdict(at, "crashed",
			    "the test runner's exit status %d is not a normal finish", r.exit_code);
	run_result_free(&r);
	if (at->status)
		return 0;

	struct report rep = {0};
	rc = a->pytest_guard ? read_guard(at, key, &rep, e)
	     : rguard	     ? read_signed(at, rg.key, RUNNER_GUARD_SUMMARY, REPORT_JUNIT,
					   a->runner == RUNNER_NODE ? "node --test" : "JUnit", &rep, e)
			     : read_report(at, &rep, e);
	if (rc < 0)
		return -1;
	if (rc == 0) {
		score_report(at, &rep);
		report_free(&rep);
	}
	return 0;
}

/* ---- I/O mode ---------------------------------------------------------------------- */

/* A new sandbox.  Failing to make one (every slot of the host busy past
 * the wait, a host fault) is Proctor's, even after the submission ran. */
static int attempt_create(struct attempt *at, const struct sandbox_options *so,
			  struct sandbox **ret, struct err *e)
{
	if (at->o->ops->create(so, ret, e) < 0) {
		at->create_failed = true;
		return -1;
	}
	if (at->o->on_sandbox)
		at->o->on_sandbox(at->o->on_sandbox_ctx);
	return 0;
}

/* A fresh sandbox for one case, holding the built tree. */
static int case_sandbox(struct attempt *at, const char *built, const struct limits *l,
			struct sandbox **ret, struct err *e)
{
	struct sandbox_options so = at->o->sandbox;

	so.disk_bytes = l->disk_bytes;
	if (attempt_create(at, &so, ret, e) < 0)
		return -1;
	if (sandbox_put(*ret, built, "/work", 0, e) < 0) {
		sandbox_destroy(*ret);
		*ret = NULL;
		return err_wrap(e, "copy the built program in");
	}
	return 0;
}

/* Run the instructor's checker on (input, expected, output) in its own sandbox.
 * Returns 1 accepted, 0 wrong answer, -1 error (message in e). */
static int run_checker(struct attempt *at, const struct io_case *c, const char *out_path,
		       struct err *e)
{
	const struct assignment *a = at->a;
	struct sandbox_options so = at->o->sandbox;
	struct sandbox *sb = NULL;
	struct run_result r;
	int verdict = -1;

	so.disk_bytes = a->checker.limits.disk_bytes;
	if (attempt_create(at, &so, &sb, e) < 0)
		return -1;
	if ((a->tests_dir &&
	     sandbox_put(sb, a->tests_dir, "/work", SANDBOX_PUT_PROTECTED, e) < 0) ||
	    (c->stdin_path &&
	     sandbox_put(sb, c->stdin_path, "/work/.case/input", SANDBOX_PUT_PROTECTED, e) < 0) ||
	    sandbox_put(sb, c->expected_path, "/work/.case/expected", SANDBOX_PUT_PROTECTED, e) <
		0 ||
	    sandbox_put(sb, out_path, "/work/.case/output", SANDBOX_PUT_PROTECTED, e) < 0)
		goto out;
	char *extra[] = {(char *)(c->stdin_path ? "/work/.case/input" : "/dev/null"),
			 (char *)"/work/.case/expected", (char *)"/work/.case/output"};
	char **argv = step_argv(&a->checker, "/tmp", extra, 3);
	if (!argv) {
		err_set(e, ENOMEM, "checker argv");
		goto out;
	}
	struct run_spec spec = {.argv = argv,
				.env = grade_env,
				.env_count = sizeof(grade_env) / sizeof(grade_env[0]),
				.stdin_fd = -1,
				.limits = a->checker.limits,
				.time_factor = at->time_factor};
	scale_times(&spec.limits, at->time_factor);
	if (run_result_init(&r, DISPLAY_CAP) == 0) {
		if (sandbox_run(sb, &spec, &r, e) == 0) {
			if (r.status == RUN_OK)
				verdict = 1;
			else if (r.status == RUN_NONZERO_EXIT && r.exit_code == 1)
				verdict = 0;
			else
				err_set(e, 0, "the checker failed (%s, exit %d)",
					run_status_name(r.status), r.exit_code);
		}
		run_result_free(&r);
	}
	free_argv(argv);
out:
	sandbox_destroy(sb);
	return verdict;
}

static void case_record(struct attempt *at, const struct io_case *c, const char *status,
			const char *reason, const char *message)
{
	bool pass = strcmp(status, "passed") == 0;

	if (pass) {
		at->passed++;
		at->score += c->points;
	}
	json_array_append_new(at->tests, test_json(c->name, NULL, status, pass ? c->points : 0,
						   c->points, c->visibility, message, reason));
}

static int io_case(struct attempt *at, const char *built, const struct io_case *c, struct err *e)
{
	const struct assignment *a = at->a;
	struct sandbox *sb = NULL;
	struct run_result r;
	char name[300], out_path[PATH_MAX + 32];
	int rc = -1;

	if (case_sandbox(at, built, &c->limits, &sb, e) < 0)
		return -1;
	/* The input is copied in, root-owned, rather than handed over as a host
	 * descriptor, whose /proc/self/fd/0 link would show the host path. */
	if (c->stdin_path &&
	    sandbox_put(sb, c->stdin_path, "/tmp/.proctor-stdin", SANDBOX_PUT_PROTECTED, e) < 0) {
		err_wrap(e, "case input");
		goto out;
	}
	char **argv = step_argv(&a->io_run, "/tmp", c->args, c->n_args);
	if (!argv) {
		err_set(e, ENOMEM, "case argv");
		goto out;
	}
	struct sandbox *saved = at->sb;
	at->sb = sb;
	snprintf(name, sizeof(name), "case:%s", c->name);
	at->stdin_path = c->stdin_path ? "/tmp/.proctor-stdin" : NULL;
	rc = run_step(at, name, argv, &c->limits, -1, a->io_output_max, &r, e);
	at->stdin_path = NULL;
	at->sb = saved;
	free_argv(argv);
	/* The case's sandbox is done: its slot is free before the checker's
	 * sandbox takes one, so a grading holds one slot at a time. */
	sandbox_destroy(sb);
	sb = NULL;
	if (rc < 0)
		goto out;

	if (r.status == RUN_TIMEOUT)
		case_record(at, c, "failed", "timeout", r.message);
	else if (r.status == RUN_MEMORY_LIMIT)
		case_record(at, c, "failed", "memory_limit", r.message);
	else if (r.status == RUN_SIGNALED || r.status == RUN_NONZERO_EXIT)
		case_record(at, c, "failed", "runtime_error",
			    r.status == RUN_SIGNALED ? strsignal(r.signal)
						     : "non-zero exit status");
	else if (r.out.truncated)
		case_record(at, c, "failed", "output_limit", "the output is larger than the cap");
	else {
		size_t exp_len = 0;
		char *exp = NULL;
		if (read_whole_at(AT_FDCWD, c->expected_path, 0, a->io_output_max * 2, &exp,
				  &exp_len, e) < 0) {
			run_result_free(&r);
			rc = -1;
			goto out;
		}
		int ok;
		if (a->checker.present) {
			snprintf(out_path, sizeof(out_path), "%s/output-%zu", at->staging,
				 json_array_size(at->tests));
			int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd < 0 || write_all(fd, r.out.data, r.out.len) < 0) {
				xclose(fd);
				free(exp);
				run_result_free(&r);
				rc = err_set(e, errno, "'%s'", out_path);
				goto out;
			}
			close(fd);
			struct err cerr;
			ok = run_checker(at, c, out_path, &cerr);
			if (ok < 0)
				case_record(at, c, "error", "checker_error", cerr.msg);
		} else {
			ok = compare_output(a->compare, a->float_tolerance, r.out.data, r.out.len,
					    exp, exp_len);
		}
		free(exp);
		if (ok == 1)
			case_record(at, c, "passed", "accepted", NULL);
		else if (ok == 0)
			case_record(at, c, "failed", "wrong_answer",
				    "the output differs from the expected output");
	}
	run_result_free(&r);
	rc = 0;
out:
	sandbox_destroy(sb);
	return rc;
}

static int io_mode(struct attempt *at, struct err *e)
{
	char built[PATH_MAX + 16];

	/* The built tree (submission, tests, build outputs) is copied out once
	 * and into a fresh sandbox for each case. */
	snprintf(built, sizeof(built), "%s/built", at->staging);
	if (sandbox_get(at->sb, "/work", built, e) < 0)
		return err_wrap(e, "copy the built program out");
	/* One slot at a time: the build's goes back before the cases take
	 * theirs (holding it made every case need a second slot). */
	sandbox_destroy(at->sb);
	at->sb = NULL;
	json_array_clear(at->tests);
	at->student_ran = true;
	for (size_t i = 0; i < at->a->n_cases; i++)
		if (io_case(at, built, &at->a->cases[i], e) < 0)
			return -1;
	set_verdict(at, "graded", "%s", "");
	return 0;
}

/* ---- one attempt ---------------------------------------------------------------- */

static uint64_t max_disk(const struct assignment *a)
{
	uint64_t d = 0;
	const struct step *s[] = {&a->setup, &a->build, &a->test};

	for (size_t i = 0; i < 3; i++)
		if (s[i]->present && s[i]->limits.disk_bytes > d)
			d = s[i]->limits.disk_bytes;
	return d ? d : 64ull << 20;
}

uint64_t grade_budget_ns(const struct assignment *a, double time_factor)
{
	const struct step *steps[] = {&a->setup, &a->build, &a->test};
	uint64_t ms = 60000;

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i]->present)
			ms += steps[i]->limits.wall_ms;
	for (size_t i = 0; i < a->n_cases; i++) {
		ms += a->cases[i].limits.wall_ms;
		if (a->checker.present)
			ms += a->checker.limits.wall_ms;
	}
	ms *= 2ull * (a->retries + 1);
	/* A slower backend has its limits scaled (grade.c), and so the wait. */
	return (uint64_t)((double)(ms + 300000) * time_factor) * 1000000ull;
}

/* The most memory any run of the assignment may use: a microVM's RAM is
 * sized for it. */
uint64_t grade_max_memory(const struct assignment *a)
{
	uint64_t m = 0;
	const struct step *s[] = {&a->setup, &a->build, &a->test, &a->checker};

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		if (s[i]->present && s[i]->limits.memory_bytes > m)
			m = s[i]->limits.memory_bytes;
	for (size_t i = 0; i < a->n_cases; i++)
		if (a->cases[i].limits.memory_bytes > m)
			m = a->cases[i].limits.memory_bytes;
	return m;
}

/* build.objects (grade/symcheck.h): the objects the build made define only
 * what the assignment allows, else a compile_error.  -1: Proctor's. */
static int check_objects(struct attempt *at, const struct build_objects *objects, struct err *e)
{
	char helper[PATH_MAX], slots_dir[PATH_MAX], why[sizeof(at->reason)];

	if (grade_helper_path(at->o, helper, sizeof(helper), e) < 0)
		return -1;
	snprintf(slots_dir, sizeof(slots_dir), "%s/slots", at->o->sandbox.state_dir);
	struct unpriv_call c = {.helper = helper,
				.uid = at->sb->untrusted_uid,
				.timeout_s = HELPER_TIMEOUT_S,
				.hide_dir = slots_dir};
	int rc = symcheck_objects(objects, at->sb, at->staging, &c, why, sizeof(why), e);
	if (rc > 0)
		set_verdict(at, "compile_error", "%s", why);
	return rc < 0 ? -1 : 0;
}

/* ---- the compiler shim (grade/cc/proctor_cc.sh; docs/grading.md, "C and C++") ---- */

/*
 * A runner assignment whose build compiles the submission's C or C++
 * sources, and that names no build.objects, is still checked: the build
 * finds Proctor's compiler shim first on its PATH, which compiles each
 * source of the submission it sees on its own, too, to an object it lists
 * in `out`; after the build those objects are checked as build.objects'
 * would be, refusing every name the system libraries define instead of
 * an allow list.  A source the shim never saw (a compiler called by an
 * absolute path, a driver that #includes the source) leaves the grading
 * "unchecked" (objects_check in the result; `proctor assignment check`
 * says so).
 */
extern const char proctor_cc_source[];
extern const unsigned long proctor_cc_source_len;

#define CC_PATH	       "/usr/local/bin:/usr/bin:/bin"
#define CC_SOURCES_MAX SYMCHECK_CC_MAX

#define CC_ENV 5

struct cc_shim {
	char dir[64], out[64];
	char *sources; /* "/work/NAME\n" per source */
	size_t n_sources;
	char *files; /* "/work/NAME\n" per file of the submission */
	char *env[CC_ENV];
};

static void cc_shim_free(struct cc_shim *s)
{
	free(s->sources);
	free(s->files);
	for (size_t i = 0; i < CC_ENV; i++)
		free(s->env[i]);
	*s = (struct cc_shim){0};
}

static bool c_source(const char *name)
{
	static const char *const ext[] = {".c", ".cc", ".cpp", ".cxx", ".c++", ".cp", ".C", ".CPP"};
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < sizeof(ext) / sizeof(ext[0]); i++)
		if (strcmp(dot, ext[i]) == 0)
			return true;
	return false;
}

/* The submission's sources into s->sources; 0 with none (no shim). */
static int cc_sources(struct attempt *at, struct cc_shim *s, struct err *e)
{
	size_t i, len = 0;
	json_t *f;

	size_t flen = 0;
	json_array_foreach(json_object_get(at->sub, "files"), i, f)
	{
		const char *name = json_string_value(f);
		if (name && !strpbrk(name, "\n\t")) {
			char *g = realloc(s->files, flen + strlen(name) + 8);
			if (!g)
				return err_set(e, ENOMEM, "the submission's files");
			s->files = g;
			flen += (size_t)sprintf(s->files + flen, "/work/%s\n", name);
		}
		if (!name || !c_source(name))
			continue;
		/* A name the list cannot hold is counted, never seen: the
		 * grading says "unchecked". */
		if (strpbrk(name, "\n\t")) {
			s->n_sources++;
			continue;
		}
		char *grown = realloc(s->sources, len + strlen(name) + 8);
		if (!grown)
			return err_set(e, ENOMEM, "the submission's sources");
		s->sources = grown;
		len += (size_t)sprintf(s->sources + len, "/work/%s\n", name);
		s->n_sources++;
	}
	if (s->n_sources && ((!s->sources && !(s->sources = strdup(""))) ||
			     (!s->files && !(s->files = strdup("")))))
		return err_set(e, ENOMEM, "the submission's sources");
	return 0;
}

/* Put the shim under its names and make the build's environment. */
static int cc_shim_put(struct attempt *at, struct cc_shim *s, struct err *e)
{
	static const char *const names[] = {"cc", "gcc", "c++", "g++", "clang", "clang++"};
	char host[PATH_MAX], file[PATH_MAX + 16];

	if (random_hex(s->dir, sizeof(s->dir), "/tmp/.proctor-cc-", 8, e) < 0 ||
	    random_hex(s->out, sizeof(s->out), "/tmp/.proctor-objects-", 8, e) < 0)
		return -1;
	snprintf(host, sizeof(host), "%s/cc", at->staging);
	if (mkdir(host, 0755) < 0 && errno != EEXIST)
		return err_set(e, errno, "mkdir '%s'", host);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(file, sizeof(file), "%s/%s", host, names[i]);
		if (guard_host_file(file, proctor_cc_source, proctor_cc_source_len, 0, e) < 0)
			return -1;
		if (chmod(file, 0755) < 0)
			return err_set(e, errno, "chmod '%s'", file);
	}
	if (sandbox_put(at->sb, host, s->dir, SANDBOX_PUT_PROTECTED, e) < 0)
		return err_wrap(e, "the compiler shim");
	if (asprintf(&s->env[0], "PATH=%s:%s", s->dir, CC_PATH) < 0 ||
	    asprintf(&s->env[1], "PROCTOR_CC_PATH=%s", CC_PATH) < 0 ||
	    asprintf(&s->env[2], "PROCTOR_CC_SOURCES=%s", s->sources) < 0 ||
	    asprintf(&s->env[3], "PROCTOR_CC_OUT=%s", s->out) < 0 ||
	    asprintf(&s->env[4], "PROCTOR_CC_FILES=%s", s->files) < 0) {
		for (size_t i = 0; i < CC_ENV; i++)
			s->env[i] = NULL; /* asprintf leaves them undefined */
		return err_set(e, ENOMEM, "the compiler shim's environment");
	}
	return 0;
}

/* After a build that succeeded: check what the shim listed.  -1: Proctor's. */
static int cc_check(struct attempt *at, const struct cc_shim *s, struct err *e)
{
	char path[96], *list = NULL;
	struct symcheck_cc_list l;
	size_t len = 0;
	int rc = 0;

	at->objects_check = "unchecked";
	snprintf(path, sizeof(path), "%s/list", s->out);
	if (!fetch_small(at, path, "cc-list", 1u << 20, &list, &len))
		return 0; /* no source went through the shim */
	symcheck_cc_list(list, s->out, s->sources, &l);
	if (l.failed) {
		set_verdict(at, "compile_error",
			    "%s compiled as the build asked but not on its own with the same options, "
			    "so Proctor could not check what it links (docs/grading.md, \"C and C++\")",
			    l.failed);
		at->objects_check = "default";
	} else if (!l.unsure && l.n > 0) {
		/* (With an option that puts code before main() into every
		 * object nothing can be told apart: "unchecked".) */
		struct build_objects o = {.files = (char **)l.objects,
					  .n_files = l.n,
					  .deny_system = true,
					  .names = (char **)l.sources};
		rc = check_objects(at, &o, e);
		/* The check decided (a refusal), or saw every source, all its
		 * objects, and no file of the submission's in another object. */
		if (rc == 0 && (at->status || (l.seen == s->n_sources && !l.included &&
					       !l.too_many)))
			at->objects_check = "default";
	}
	free(list);
	return rc;
}

/* ---- the assignment's template (sandbox.h; docs/vm.md, "Assignment snapshots") ---- */

/*
 * A split Python assignment without a setup step gets a template where the
 * backend keeps one (the microVM): the hidden tests, the runtime in
 * TEMPLATE_RUNTIME and a zygote of the harness with its runner imported,
 * all before any submission is in the sandbox.  Everything a submission
 * brings still comes after, in the same order as without one.
 */
struct grade_template {
	struct sandbox_template t;
	struct attempt *at;
	char *zargv[6];
	struct limits limits;
	char key[65];
};

static char *const zygote_env[] = {
    (char *)"PYTHONPATH=" TEMPLATE_RUNTIME,
    (char *)"PYTHONSAFEPATH=1",
    (char *)"PYTHONNOUSERSITE=1",
};

static int template_prepare(struct sandbox *sb, void *ctx, struct err *e)
{
	struct grade_template *gt = ctx;
	struct attempt *at = gt->at;
	char *env[32];
	size_t n = step_env(env, zygote_env, sizeof(zygote_env) / sizeof(zygote_env[0]));
	struct run_spec spec = {.argv = gt->zargv,
				.env = env,
				.env_count = n,
				.stdin_fd = -1,
				.limits = gt->limits,
				.time_factor = at->time_factor};
	struct sandbox *own = at->sb;
	int rc = -1;

	char empty[PATH_MAX + 16];
	at->sb = sb;
	if (sandbox_put(sb, at->a->tests_dir, "/work", SANDBOX_PUT_HARNESS, e) < 0) {
		err_wrap(e, "copy the hidden tests in");
		goto out;
	}
	if (runtime_put(at, true, TEMPLATE_RUNTIME, false, e) < 0 ||
	    staging_dir(at, "empty-pyc", sb->untrusted_uid, empty, sizeof(empty), e) < 0)
		goto out;
	if (chmod(empty, 0755) < 0) {
		err_set(e, errno, "chmod '%s'", empty);
		goto out;
	}
	/* Bytecode directories only the harness can write, which the zygote
	 * fills with the runtime's (proctor_split.py's zygote_main): the
	 * program side's __pycache__ and the harness's pycache prefix. */
	if (sandbox_put(sb, empty, TEMPLATE_RUNTIME "/__pycache__", SANDBOX_PUT_HARNESS_OWNED, e) <
		0 ||
	    sandbox_put(sb, empty, TEMPLATE_RUNTIME "/pycache", SANDBOX_PUT_HARNESS_OWNED, e) < 0)
		goto out;
	rc = sb->ops->zygote(sb, &spec, e);
out:
	at->sb = own;
	return rc;
}

/* Whether the attempt's assignment gets a template on this backend; if so
 * gt is filled in for sandbox_options.tmpl. */
static bool template_for(struct attempt *at, struct grade_template *gt)
{
	const struct assignment *a = at->a;
	char **argv, **h = NULL;
	bool ok = false;

	memset(gt, 0, sizeof(*gt));
	const char *off = getenv("PROCTOR_NO_TEMPLATE");
	if (!at->o->ops->zygote || a->mode == GRADE_MODE_IO || !assignment_split(a) ||
	    a->setup.present || !a->tests_dir || (off && *off && strcmp(off, "0") != 0))
		return false;
	if ((argv = step_argv(&a->test, "/tmp", NULL, 0)))
		h = split_harness_argv(argv, a->runner, NULL);
	free_argv(argv);
	/* Interpreter options before -m would be lost in a fork: exec then. */
	if (!h || !h[1] || !h[2] || !h[3] || !h[4] || strcmp(h[1], "-m") != 0 ||
	    strcmp(h[2], "proctor_split") != 0 || strcmp(h[3], "harness") != 0)
		goto out;
	gt->zargv[0] = strdup(h[0]);
	gt->zargv[1] = (char *)"-m";
	gt->zargv[2] = (char *)"proctor_split";
	gt->zargv[3] = (char *)"zygote";
	gt->zargv[4] = strdup(h[4]);
	gt->limits = a->test.limits;
	scale_times(&gt->limits, at->time_factor);
	struct digest *d = gt->zargv[0] && gt->zargv[4] ? digest_new() : NULL;
	if (!d)
		goto out;
	char lim[256], self[128] = "";
	snprintf(lim, sizeof(lim), "%llu %llu %llu %llu %llu %llu",
		 (unsigned long long)gt->limits.cpu_ms, (unsigned long long)gt->limits.wall_ms,
		 (unsigned long long)gt->limits.memory_bytes, (unsigned long long)gt->limits.pids,
		 (unsigned long long)gt->limits.fsize_bytes, (unsigned long long)gt->limits.nofile);
	/* This build of Proctor (the version string stays while the code
	 * changes): what it puts and how, the guest's base environment. */
	struct stat st;
	if (stat("/proc/self/exe", &st) == 0)
		snprintf(self, sizeof(self), "%llu %lld %lld.%09ld", (unsigned long long)st.st_ino,
			 (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	const char *parts[] = {"proctor-grade-template 1",
			       PROCTOR_VERSION,
			       self,
			       a->digest,
			       proctor_split_source,
			       pytest_guard_source,
			       guard_ini,
			       TEMPLATE_RUNTIME,
			       gt->zargv[0],
			       gt->zargv[4],
			       lim};
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		digest_update_str(d, parts[i]);
		digest_update(d, "\0", 1);
	}
	for (size_t i = 0; i < sizeof(grade_env) / sizeof(grade_env[0]); i++)
		digest_update_str(d, grade_env[i]);
	for (size_t i = 0; i < sizeof(zygote_env) / sizeof(zygote_env[0]); i++)
		digest_update_str(d, zygote_env[i]);
	digest_final(d, gt->key);
	gt->at = at;
	gt->t = (struct sandbox_template){
	    .key = gt->key, .name = a->file, .prepare = template_prepare, .ctx = gt};
	ok = true;
out:
	free_argv(h);
	return ok;
}

static void template_free(struct grade_template *gt)
{
	free(gt->zargv[0]);
	free(gt->zargv[4]);
}

static int attempt_run(struct attempt *at, struct err *e)
{
	const struct assignment *a = at->a;
	struct sandbox_options so = at->o->sandbox;
	struct run_result r;
	struct grade_template gt;

	so.disk_bytes = max_disk(a);
	if (staging_create(at, e) < 0)
		return -1;
	if (template_for(at, &gt))
		so.tmpl = &gt.t;
	else if (a->mode != GRADE_MODE_IO && assignment_split(a) && a->runner != RUNNER_NODE &&
		 a->runner != RUNNER_JUNIT)
		at->pyc = runtime_pyc_for(at->o->ops, &at->o->sandbox, at->image_digest,
					  at->staging, at->time_factor);
	int crc = attempt_create(at, &so, &at->sb, e);
	template_free(&gt);
	if (crc < 0)
		return -1;
	at->templated = at->zygote = at->sb->templated;
	snprintf(at->snapshot, sizeof(at->snapshot), "%s", at->sb->snapshot);
	if (a->setup.present) {
		char **argv = step_argv(&a->setup, "/tmp", NULL, 0);
		if (!argv)
			return err_set(e, ENOMEM, "setup argv");
		int rc = run_step(at, "setup", argv, &a->setup.limits, -1, DISPLAY_CAP, &r, e);
		free_argv(argv);
		if (rc < 0)
			return -1;
		bool ok = r.status == RUN_OK;
		run_result_free(&r);
		if (!ok)
			return err_set(e, 0, "the assignment's setup step failed (see steps)");
	}
	if (take_submission(at, e) < 0)
		return -1;
	if (at->status) /* rejected */
		return 0;
	/* In a split run only the harness reads the hidden tests. */
	if (a->tests_dir && !at->templated &&
	    sandbox_put(at->sb, a->tests_dir, "/work",
			assignment_split(a) ? SANDBOX_PUT_HARNESS : SANDBOX_PUT_PROTECTED, e) < 0)
		return err_wrap(e, "copy the hidden tests in");
	if (a->build.present) {
		struct cc_shim shim = {0};
		/* The compiler shim, for a runner build of C or C++ sources
		 * without build.objects. */
		if (a->mode == GRADE_MODE_RUNNER && !a->objects.n_files &&
		    (cc_sources(at, &shim, e) < 0 ||
		     (shim.n_sources && shim.n_sources <= CC_SOURCES_MAX &&
		      cc_shim_put(at, &shim, e) < 0))) {
			cc_shim_free(&shim);
			return -1;
		}
		char **argv = step_argv(&a->build, "/tmp", NULL, 0);
		if (!argv) {
			cc_shim_free(&shim);
			return err_set(e, ENOMEM, "build argv");
		}
		at->student_ran = true;
		if (shim.env[0]) {
			at->extra_env = shim.env;
			at->n_extra_env = CC_ENV;
		}
		int rc = run_step(at, "build", argv, &a->build.limits, -1,
				  a->build.limits.output_bytes, &r, e);
		at->extra_env = NULL;
		at->n_extra_env = 0;
		free_argv(argv);
		bool ok = rc == 0 && build_verdict(at, &r);
		if (rc == 0)
			run_result_free(&r);
		if (ok && a->objects.n_files) {
			at->objects_check = "explicit";
			rc = check_objects(at, &a->objects, e);
		} else if (ok && shim.n_sources) {
			rc = shim.env[0] ? cc_check(at, &shim, e) : 0;
			if (!shim.env[0])
				at->objects_check = "unchecked";
		}
		cc_shim_free(&shim);
		if (rc < 0)
			return -1;
		if (!ok || at->status) /* the build failed, or its objects were refused */
			return 0;
	}
	return a->mode == GRADE_MODE_IO ? io_mode(at, e) : runner_mode(at, e);
}

/* ---- the result document ------------------------------------------------------- */

static json_t *document(struct attempt *at, unsigned attempts)
{
	const struct assignment *a = at->a;
	bool graded = at->status && strcmp(at->status, "graded") == 0;
	size_t total = a->mode == GRADE_MODE_IO ? a->n_cases : a->n_tests;

	if (!graded && json_array_size(at->tests) == 0) {
		json_decref(at->tests);
		at->tests = unscored_tests(a);
	}
	if (!graded) {
		at->score = 0;
		at->passed = 0;
		/* Not graded: keep the tests listed, none of them scored. */
		size_t i;
		json_t *t;
		json_array_foreach(at->tests, i, t)
		{
			json_object_set_new(t, "score", json_real(0));
			if (strcmp(json_string_value(json_object_get(t, "status")), "passed") == 0)
				json_object_set_new(t, "status", json_string("missing"));
		}
	}
	json_object_set_new(at->sub, "path", json_text(at->submission));
	/* No image digest: the document of a worker that failed (no image). */
	json_t *image = at->image_digest
			    ? json_pack("{s:s, s:s}", "name", a->image, "digest", at->image_digest)
			    : json_null();
	return json_pack(
	    "{s:i, s:s, s:s, s:o, s:f, s:f, s:I, s:I, s:O, s:O, s:O, s:{s:s, s:s}, "
	    "s:o, s:s, s:i, s:s, s:f, s:o, s:o}",
	    "schema_version", 1, "proctor_version", PROCTOR_VERSION, "status", at->status, "reason",
	    at->reason[0] ? json_text(at->reason) : json_null(), "score", at->score, "max_score",
	    a->max_score, "passed", (json_int_t)at->passed, "total", (json_int_t)total, "tests",
	    at->tests, "steps", at->steps, "submission", at->sub, "assignment", "name", a->name,
	    "digest", a->digest, "image", image, "isolation", at->o->ops->name, "attempts",
	    (int)attempts, "view", "instructor", "time_factor", at->time_factor, "snapshot",
	    at->snapshot[0]
		? json_pack("{s:s, s:b}", "key", at->snapshot, "template", at->templated)
		: json_null(),
	    "objects_check", at->objects_check ? json_string(at->objects_check) : json_null());
}

static void attempt_reset(struct attempt *at)
{
	json_decref(at->steps);
	json_decref(at->tests);
	json_decref(at->sub);
	at->steps = json_array();
	at->tests = json_array();
	at->sub = json_pack("{s:n, s:[], s:[]}", "digest", "files", "ignored");
	at->status = NULL;
	at->reason[0] = '\0';
	at->score = 0;
	at->passed = 0;
	at->student_ran = false;
	at->create_failed = false;
	at->objects_check = NULL;
}

json_t *grade_error_document(const struct assignment *a, const char *submission,
			     const struct grade_options *o, const char *reason, unsigned attempts,
			     double time_factor)
{
	struct attempt at = {.a = a, .o = o, .submission = submission, .time_factor = time_factor};
	json_t *doc;

	attempt_reset(&at);
	set_verdict(&at, "error", "%s", reason);
	doc = document(&at, attempts);
	json_decref(at.steps);
	json_decref(at.tests);
	json_decref(at.sub);
	return doc;
}

static int grade(const struct assignment *a, const char *submission, int dir_fd, const char *entry,
		 const struct opener_id *seen, const struct grade_options *o, json_t **ret,
		 struct err *e)
{
	struct grade_options oi = *o;
	struct attempt at = {.a = a,
			     .o = &oi,
			     .submission = submission,
			     .dir_fd = dir_fd,
			     .entry = entry,
			     .seen = seen,
			     .staging_fd = -1,
			     .time_factor = 1.0};
	unsigned attempts = 0;
	struct err aerr = {0};
	struct image_info img;

	/* The pinned system tree; a missing image is Proctor's (or the
	 * operator's) problem, never the student's. */
	if (image_resolve(o->sandbox.state_dir, a->image, &img, &aerr) != 0) {
		attempt_reset(&at);
		at.image_digest = "";
		set_verdict(&at, "error", "image '%s': %s", a->image, aerr.msg);
		goto out;
	}
	at.image_digest = img.digest;
	if (strcmp(a->image, "host") != 0)
		oi.sandbox.system_dir = img.rootfs;
	oi.sandbox.memory_bytes = grade_max_memory(a);
	at.time_factor = o->ops->time_factor(o->sandbox.state_dir, NULL);

	for (;;) {
		attempt_reset(&at);
		attempts++;
		int rc = attempt_run(&at, &aerr);
		sandbox_destroy(at.sb);
		at.sb = NULL;
		staging_remove(&at);
		if (rc == 0 && at.status)
			break;
		if (rc == 0)
			err_set(&aerr, 0, "grading produced no verdict");
		if (attempts <= a->retries)
			continue;
		/* Out of retries.  A failure after the submission's code ran is
		 * charged to the submission, so it cannot buy endless retries. */
		if (at.student_ran && !at.create_failed)
			set_verdict(&at, "crashed",
				    "the sandbox failed %u times while running the submission: %s",
				    attempts, aerr.msg);
		else
			set_verdict(&at, "error", "Proctor failed %u times: %s", attempts,
				    aerr.msg);
		json_array_clear(at.tests);
		break;
	}
out:
	*ret = document(&at, attempts);
	json_decref(at.steps);
	json_decref(at.tests);
	json_decref(at.sub);
	if (!*ret)
		return err_set(e, ENOMEM, "result document");
	return 0;
}

int grade_submission(const struct assignment *a, const char *submission,
		     const struct grade_options *o, json_t **ret, struct err *e)
{
	return grade(a, submission, -1, NULL, NULL, o, ret, e);
}

int grade_submission_entry(const struct assignment *a, int dir_fd, const char *name,
			   const struct opener_id *seen, const char *shown,
			   const struct grade_options *o, json_t **ret, struct err *e)
{
	return grade(a, shown, dir_fd, name, seen, o, ret, e);
}
