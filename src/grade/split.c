/* Split runs: the argv of each side (the runtimes themselves are in runtimes/). */
#include "grade/split.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A NULL-terminated copy of the n strings of v, or NULL. */
static char **strv_dup(const char *const *v, size_t n)
{
	char **out = calloc(n + 1, sizeof(char *));

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!(out[i] = strdup(v[i]))) {
			for (size_t j = 0; j < i; j++)
				free(out[j]);
			free(out);
			return NULL;
		}
	return out;
}

/* node's options that take the next argument as their value. */
static bool node_option_takes_value(const char *o)
{
	static const char *const with_value[] = {"--test-reporter",
						 "--test-reporter-destination",
						 "--test-name-pattern",
						 "--test-skip-pattern",
						 "--test-concurrency",
						 "--test-timeout",
						 "--test-shard",
						 "--import",
						 "--require",
						 "-r",
						 "--loader",
						 "--experimental-loader",
						 "--conditions",
						 "-C",
						 "--env-file",
						 "--input-type",
						 "--stack-size",
						 "--max-old-space-size",
						 NULL};

	for (size_t i = 0; with_value[i]; i++)
		if (strcmp(o, with_value[i]) == 0)
			return true;
	return false;
}

/* `node [OPTIONS] --test FILES` -> `node [OPTIONS] DIR/proctor_split.mjs
 * harness FILES`: options stay before the script, --test goes, the rest
 * (test files, or none: the runtime finds node's default ones) after. */
static char **node_harness_argv(char *const *argv, const char *runtime_dir)
{
	size_t argc = 0, n = 0, nf = 0;
	char script[512];

	while (argv[argc])
		argc++;
	const char **v = calloc(argc + 3, sizeof(char *));
	const char **files = calloc(argc + 1, sizeof(char *));
	char **out = NULL;
	if (!v || !files)
		goto out;
	snprintf(script, sizeof(script), "%s/proctor_split.mjs", runtime_dir);
	v[n++] = argv[0];
	for (size_t i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			while (++i < argc)
				files[nf++] = argv[i];
			break;
		}
		if (argv[i][0] != '-') {
			files[nf++] = argv[i];
			continue;
		}
		if (strcmp(argv[i], "--test") == 0)
			continue;
		v[n++] = argv[i];
		if (node_option_takes_value(argv[i]) && i + 1 < argc)
			v[n++] = argv[++i];
	}
	v[n++] = script;
	v[n++] = "harness";
	for (size_t i = 0; i < nf; i++)
		v[n++] = files[i];
	out = strv_dup(v, n);
out:
	free(v);
	free(files);
	return out;
}

/* Java reaches an inherited socket only on fd 0 (System.inheritedChannel()):
 * both sides start under sh, which moves the channel from fd 3 to fd 0 and
 * the step's stdin to fd 3 (ProctorSplit.java). */
#define JAVA_SWAP "exec 4<&0 0<&3 3<&4 4<&-; exec \"$@\""
#define JAVA_MAIN "proctor.split.ProctorSplit"
#define LAUNCHER_MAIN "org.junit.platform.console.ConsoleLauncher"

static bool java_cp_option(const char *o)
{
	return strcmp(o, "-cp") == 0 || strcmp(o, "-classpath") == 0 ||
	       strcmp(o, "--class-path") == 0;
}

/* The JVM's options that take the next argument as their value. */
static bool java_option_takes_value(const char *o)
{
	static const char *const with_value[] = {
	    "-cp",	     "-classpath",    "--class-path",	"-p",	       "--module-path",
	    "--add-modules", "--add-opens",   "--add-exports", "--add-reads", "--patch-module",
	    "--limit-modules", "--upgrade-module-path", NULL};

	for (size_t i = 0; with_value[i]; i++)
		if (strcmp(o, with_value[i]) == 0)
			return true;
	return false;
}

/* Whether a class path entry may be the program's to write: relative (below
 * /work), or below a directory the program can write in.  The harness's
 * JVM never loads a class from one. */
static bool java_program_path(const char *e)
{
	static const char *const writable[] = {"/work", "/tmp", "/var/tmp", "/dev/shm",
					       "/run", "/home", "/root", NULL};

	if (e[0] != '/' || strstr(e, "/../") || strstr(e, "/./"))
		return true;
	for (size_t i = 0; writable[i]; i++) {
		size_t n = strlen(writable[i]);
		if (strncmp(e, writable[i], n) == 0 && (e[n] == '/' || e[n] == 0))
			return true;
	}
	return false;
}

/* Append to `out` (capacity cap) the entries of class path `cp` that are not
 * the program's, each after a ':'. */
static void java_system_entries(char *out, size_t cap, const char *cp)
{
	char *copy = strdup(cp), *save = NULL;

	for (char *e = copy ? strtok_r(copy, ":", &save) : NULL; e; e = strtok_r(NULL, ":", &save)) {
		size_t len = strlen(out);
		if (!java_program_path(e) && len + strlen(e) + 2 < cap)
			snprintf(out + len, cap - len, ":%s", e);
	}
	free(copy);
}

/* `java [OPTIONS] -jar LAUNCHER.jar [execute] ARGS` or `java [OPTIONS] -cp CP
 * ConsoleLauncher ARGS` -> `sh -c SWAP sh java [OPTIONS] -cp RUNTIME:LAUNCHER
 * proctor.split.ProctorSplit harness ARGS`: the JVM's own class path keeps
 * only entries the program cannot have written (the launcher's jar); the
 * launcher's --class-path stays in ARGS, where the harness replaces the
 * program's entries with the tests it compiles. */
static char **java_harness_argv(char *const *argv, const char *runtime_dir)
{
	size_t argc = 0, n = 0;
	char cp[8192];
	const char *launcher = NULL;

	while (argv[argc])
		argc++;
	const char **v = calloc(argc + 12, sizeof(char *));
	char **out = NULL;
	if (!v)
		return NULL;
	snprintf(cp, sizeof(cp), "%s", runtime_dir);
	v[n++] = "/bin/sh";
	v[n++] = "-c";
	v[n++] = JAVA_SWAP;
	v[n++] = "sh";
	v[n++] = argv[0];
	/* The harness's JVM compiles the tests and runs JUnit once: the
	 * first-tier compiler alone costs it about 40% less CPU (bench/
	 * step_cost.py); the instructor's options, after it, may say otherwise.
	 * The program side's JVM keeps the JVM's default, as in one process. */
	v[n++] = "-XX:TieredStopAtLevel=1";
	size_t i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "-jar") == 0 && i + 1 < argc) {
			launcher = argv[i + 1];
			java_system_entries(cp, sizeof(cp), launcher);
			i += 2;
			if (i < argc && strcmp(argv[i], "execute") == 0)
				i++;
			break;
		}
		if (strcmp(argv[i], LAUNCHER_MAIN) == 0) {
			launcher = argv[i];
			i++;
			break;
		}
		if (java_cp_option(argv[i]) && i + 1 < argc) {
			java_system_entries(cp, sizeof(cp), argv[++i]);
			continue;
		}
		v[n++] = argv[i];
		if (java_option_takes_value(argv[i]) && i + 1 < argc)
			v[n++] = argv[++i];
	}
	if (!launcher)
		goto out;
	v[n++] = "-cp";
	v[n++] = cp;
	v[n++] = JAVA_MAIN;
	v[n++] = "harness";
	for (; i < argc; i++)
		v[n++] = argv[i];
	out = strv_dup(v, n);
out:
	free(v);
	return out;
}

/* The program side of java_harness_argv's harness: the same JVM options,
 * the runtime and the launcher's --class-path (the submission's classes). */
static char **java_program_argv(char *const *h, size_t main_at)
{
	char cp[8192] = "", runtime[4096] = "";
	const char *v[64];
	size_t n = 0;

	for (size_t i = 0; i < 5 && i < main_at; i++)
		v[n++] = h[i];
	for (size_t i = 6; i < main_at && n < 56; i++) { /* h[5]: the harness's own option */
		if (strcmp(h[i], "-cp") == 0 && i + 1 < main_at) {
			const char *c = h[++i];
			snprintf(runtime, sizeof(runtime), "%.*s", (int)strcspn(c, ":"), c);
			continue;
		}
		v[n++] = h[i];
	}
	for (size_t i = main_at + 2; h[i]; i++) {
		const char *val = NULL;
		if ((java_cp_option(h[i]) || strcmp(h[i], "--classpath") == 0) && h[i + 1])
			val = h[++i];
		else if (strncmp(h[i], "--class-path=", 13) == 0)
			val = h[i] + 13;
		else if (strncmp(h[i], "--classpath=", 12) == 0)
			val = h[i] + 12;
		else if (strncmp(h[i], "-cp=", 4) == 0)
			val = h[i] + 4;
		if (val) {
			size_t len = strlen(cp);
			snprintf(cp + len, sizeof(cp) - len, "%s%s", len ? ":" : "", val);
		}
	}
	char full[12288];
	snprintf(full, sizeof(full), "%s:%s", runtime, cp[0] ? cp : ".");
	v[n++] = "-cp";
	v[n++] = full;
	v[n++] = JAVA_MAIN;
	v[n++] = "program";
	return strv_dup(v, n);
}

char **split_harness_argv(char *const *argv, enum runner_kind kind, const char *runtime_dir)
{
	const char *v[512];
	size_t n = 0, i = 1, argc = 0;
	const char *base;

	if (kind == RUNNER_NODE)
		return node_harness_argv(argv, runtime_dir ? runtime_dir : ".");
	if (kind == RUNNER_JUNIT)
		return java_harness_argv(argv, runtime_dir ? runtime_dir : ".");
	while (argv[argc])
		argc++;
	if (argc + 8 > sizeof(v) / sizeof(v[0]))
		return NULL;
	base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
	bool script = strcmp(base, "pytest") == 0 || strcmp(base, "py.test") == 0;
	v[n++] = script ? "python3" : argv[0];
	/* Interpreter options before -m stay where they were. */
	if (!script)
		for (; argv[i] && strcmp(argv[i], "-m") != 0; i++)
			v[n++] = argv[i];
	v[n++] = "-m";
	v[n++] = "proctor_split";
	v[n++] = "harness";
	if (script) {
		v[n++] = "pytest";
	} else {
		if (argv[i])
			i++; /* -m */
		if (argv[i])
			v[n++] = argv[i++];
		else
			v[n++] = kind == RUNNER_PYTEST ? "pytest" : "unittest";
	}
	for (; i < argc; i++)
		v[n++] = argv[i];
	return strv_dup(v, n);
}

char **split_program_argv(char *const *harness_argv)
{
	const char *v[] = {harness_argv[0], "-m", "proctor_split", "program"};

	for (size_t i = 1; harness_argv[i]; i++) {
		if (strcmp(harness_argv[i], JAVA_MAIN) == 0 && harness_argv[i + 1] &&
		    strcmp(harness_argv[i + 1], "harness") == 0 && i >= 5)
			return java_program_argv(harness_argv, i);
		size_t len = strlen(harness_argv[i]);
		if (len >= 18 && strcmp(harness_argv[i] + len - 18, "/proctor_split.mjs") == 0 &&
		    harness_argv[i + 1] && strcmp(harness_argv[i + 1], "harness") == 0) {
			const char *node[] = {harness_argv[0], harness_argv[i], "program"};
			return strv_dup(node, 3);
		}
	}
	return strv_dup(v, 4);
}
