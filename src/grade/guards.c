/* Proctor's guards for node --test and the JUnit console launcher (theory in guards.h). */
#include "grade/guards.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

#define LAUNCHER_MAIN "org.junit.platform.console.ConsoleLauncher"

bool runner_guard_applies(const struct assignment *a)
{
	return a->mode == GRADE_MODE_RUNNER &&
	       (a->runner == RUNNER_NODE || a->runner == RUNNER_JUNIT);
}

/* argv with `n` strings inserted before index `at`; NULL when out of memory. */
static char **insert_args(char *const *argv, size_t at, char *const *add, size_t n)
{
	size_t argc = 0;

	while (argv[argc])
		argc++;
	char **v = calloc(argc + n + 1, sizeof(char *));
	if (!v)
		return NULL;
	for (size_t i = 0, o = 0; i <= argc; i++) {
		if (i == at)
			for (size_t k = 0; k < n; k++)
				if (!(v[o++] = strdup(add[k])))
					goto fail;
		if (i < argc && !(v[o++] = strdup(argv[i])))
			goto fail;
	}
	return v;
fail:
	for (size_t i = 0; i < argc + n; i++)
		free(v[i]);
	free(v);
	return NULL;
}

static bool names_reporter(char *const *argv)
{
	for (size_t i = 1; argv[i]; i++)
		if (strcmp(argv[i], "--test-reporter") == 0 ||
		    strncmp(argv[i], "--test-reporter=", 16) == 0)
			return true;
	return false;
}

static char **node_argv(char *const *argv, const char *guard_dir, struct err *e)
{
	char reporter[PATH_MAX];
	char *add[] = {reporter, (char *)"--test-reporter-destination=/dev/null",
		       (char *)"--test-reporter=tap", (char *)"--test-reporter-destination=stdout"};

	snprintf(reporter, sizeof(reporter), "--test-reporter=%s/proctor_guard.mjs", guard_dir);
	char **v = insert_args(argv, 1, add, names_reporter(argv) ? 2 : 4);
	if (!v)
		err_set(e, ENOMEM, "test argv");
	return v;
}

static char **junit_argv(char *const *argv, const char *guard_dir, struct err *e)
{
	char *add[] = {(char *)"--class-path", (char *)guard_dir};

	for (size_t i = 1; argv[i]; i++) {
		size_t at = 0;
		/* A split run's harness (grade/split.h): the launcher's options
		 * follow "harness". */
		if (strcmp(argv[i], "proctor.split.ProctorSplit") == 0 && argv[i + 1] &&
		    strcmp(argv[i + 1], "harness") == 0)
			at = i + 2;
		else if (strcmp(argv[i], "-jar") == 0 && argv[i + 1]) {
			at = i + 2; /* the launcher's options follow its jar */
			if (argv[at] && strcmp(argv[at], "execute") == 0)
				at++;
		} else if (strcmp(argv[i], LAUNCHER_MAIN) == 0) {
			/* The launcher as a main class: the guard goes first on the JVM's
			 * class path, ahead of anything the program could have built. */
			for (size_t k = 1; k < i; k++)
				if ((strcmp(argv[k], "-cp") == 0 ||
				     strcmp(argv[k], "-classpath") == 0 ||
				     strcmp(argv[k], "--class-path") == 0) &&
				    k + 1 < i) {
					char **v = insert_args(argv, 0, NULL, 0);
					char *cp = NULL;
					if (v &&
					    asprintf(&cp, "%s:%s", guard_dir, argv[k + 1]) >= 0) {
						free(v[k + 1]);
						v[k + 1] = cp;
						return v;
					}
					for (size_t j = 0; v && v[j]; j++)
						free(v[j]);
					free(v);
					err_set(e, ENOMEM, "test argv");
					return NULL;
				}
			break;
		}
		if (at) {
			char **v = insert_args(argv, at, add, 2);
			if (!v)
				err_set(e, ENOMEM, "test argv");
			return v;
		}
	}
	err_setk(e, ERR_INPUT, 0,
		 "test.run: the JUnit guard finds neither `-jar <launcher jar>` nor `-cp <class "
		 "path> " LAUNCHER_MAIN "` in it");
	return NULL;
}

char **runner_guard_argv(enum runner_kind kind, char *const *argv, const char *guard_dir,
			 struct err *e)
{
	if (kind == RUNNER_NODE)
		return node_argv(argv, guard_dir, e);
	if (kind == RUNNER_JUNIT)
		return junit_argv(argv, guard_dir, e);
	err_set(e, EINVAL, "runner_guard_argv: no guard for this runner");
	return NULL;
}

int guard_host_file(const char *path, const void *data, size_t len, uid_t owner, struct err *e)
{
	int fd =
	    open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, owner ? 0600 : 0644);

	if (fd < 0)
		return err_set(e, errno, "create '%s'", path);
	int rc = write_all(fd, data, len) < 0 || (owner && fchown(fd, owner, owner) < 0) ? -1 : 0;
	int saved = errno;
	close(fd);
	return rc < 0 ? err_set(e, saved, "write '%s'", path) : 0;
}

/* The guard's files below the new host directory `dir` (root-owned). */
static int write_guard_files(const char *dir, const struct guard_file *files, struct err *e)
{
	char path[PATH_MAX];

	if (mkdir(dir, 0755) < 0)
		return err_set(e, errno, "mkdir '%s'", dir);
	for (const struct guard_file *f = files; f->name; f++) {
		const char *slash = strrchr(f->name, '/');
		if (slash) {
			snprintf(path, sizeof(path), "%.*s", (int)(slash - f->name), f->name);
			int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd < 0)
				return err_set(e, errno, "open '%s'", dir);
			int rc = mkdir_p_at(dfd, path, 0755, (uid_t)-1, (gid_t)-1, e);
			close(dfd);
			if (rc < 0)
				return -1;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, f->name);
		if (guard_host_file(path, f->data, f->len, 0, e) < 0)
			return -1;
	}
	return 0;
}

int guard_put_key(struct sandbox *sb, const char *host, const char *report_dir, unsigned flags,
		  char key[65], struct err *e)
{
	char dst[PATH_MAX];

	if (random_hex(key, 65, "", 32, e) < 0 ||
	    guard_host_file(host, key, 64, sb->untrusted_uid, e) < 0)
		return -1;
	snprintf(dst, sizeof(dst), "%s/.key", report_dir);
	return sandbox_put(sb, host, dst, flags, e) < 0 ? err_wrap(e, "guard key") : 0;
}

int runner_guard_arm(struct sandbox *sb, const char *staging, const char *report_dir,
		     unsigned key_flags, enum runner_kind kind, char *const *argv,
		     struct runner_guard *g, struct err *e)
{
	char host[PATH_MAX];
	const struct guard_file *files =
	    kind == RUNNER_JUNIT ? junit_guard_files : node_guard_files;

	memset(g, 0, sizeof(*g));
	if (kind == RUNNER_JUNIT && !junit_guard_built)
		return err_set(e, 0,
			       "this proctor was built without the JUnit guard (no javac at "
			       "build time: docs/grading.md, \"The node and JUnit guards\")");
	if (random_hex(g->guard_dir, sizeof(g->guard_dir), "/tmp/.proctor-guard-", 8, e) < 0)
		return -1;
	snprintf(host, sizeof(host), "%s/runner-guard-key", staging);
	if (guard_put_key(sb, host, report_dir, key_flags, g->key, e) < 0)
		return -1;
	snprintf(host, sizeof(host), "%s/runner-guard", staging);
	if (write_guard_files(host, files, e) < 0 ||
	    sandbox_put(sb, host, g->guard_dir, SANDBOX_PUT_PROTECTED, e) < 0)
		return err_wrap(e, "guard files");
	snprintf(g->env[0], sizeof(g->env[0]), "PROCTOR_GUARD_KEY_FILE=%s/.key", report_dir);
	snprintf(g->env[1], sizeof(g->env[1]), "PROCTOR_GUARD_OUT=%s/" RUNNER_GUARD_SUMMARY,
		 report_dir);
	g->argv = runner_guard_argv(kind, argv, g->guard_dir, e);
	return g->argv ? 0 : -1;
}

void runner_guard_free(struct runner_guard *g)
{
	for (size_t i = 0; g->argv && g->argv[i]; i++)
		free(g->argv[i]);
	free(g->argv);
	g->argv = NULL;
}
