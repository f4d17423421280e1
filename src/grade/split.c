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

char **split_harness_argv(char *const *argv, enum runner_kind kind, const char *runtime_dir)
{
	const char *v[512];
	size_t n = 0, i = 1, argc = 0;
	const char *base;

	if (kind == RUNNER_NODE)
		return node_harness_argv(argv, runtime_dir ? runtime_dir : ".");
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
		size_t len = strlen(harness_argv[i]);
		if (len >= 18 && strcmp(harness_argv[i] + len - 18, "/proctor_split.mjs") == 0 &&
		    harness_argv[i + 1] && strcmp(harness_argv[i + 1], "harness") == 0) {
			const char *node[] = {harness_argv[0], harness_argv[i], "program"};
			return strv_dup(node, 3);
		}
	}
	return strv_dup(v, 4);
}
