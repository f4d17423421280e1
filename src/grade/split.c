/* Split runs: the argv of each side (the runtime itself is proctor_split.py). */
#include "grade/split.h"

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

char **split_harness_argv(char *const *argv, enum runner_kind kind)
{
	const char *v[512];
	size_t n = 0, i = 1, argc = 0;
	const char *base;

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

	return strv_dup(v, 4);
}
