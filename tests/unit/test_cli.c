/* Unit tests: the option parser of src/cli.c (spellings, operands, errors, help). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli.h"

struct vals {
	bool json;
	const char *out;
	unsigned jobs;
	const char *mode;
};

static const char *const modes[] = {"fast", "slow", NULL};

/* A command with one of each kind; parse() runs it on a copy of words. */
static int parse(struct vals *v, bool stop, int *ret_n, char **argv_out, const char *const *words)
{
	const struct cli_option options[] = {
	    {.name = "json", .kind = CLI_FLAG, .dest = &v->json, .help = "json"},
	    {.name = "out", .kind = CLI_STRING, .value_name = "FILE", .dest = &v->out, .help = "o"},
	    {.name = "jobs",
	     .short_name = 'j',
	     .kind = CLI_UINT,
	     .value_name = "N",
	     .dest = &v->jobs,
	     .min = 1,
	     .max = 8,
	     .help = "j"},
	    {.name = "mode",
	     .kind = CLI_CHOICE,
	     .value_name = "M",
	     .dest = &v->mode,
	     .choices = modes,
	     .help = "m"},
	};
	const struct cli_command cmd = {
	    .name = "test",
	    .options = options,
	    .n_options = sizeof(options) / sizeof(options[0]),
	    .exit_status = "  0  ok",
	    .operands = "ARGS",
	    .min_operands = 0,
	    .max_operands = 3,
	    .stop_at_operand = stop,
	};
	int argc = 0;
	for (; words[argc]; argc++)
		argv_out[argc] = (char *)words[argc];
	argv_out[argc] = NULL;
	/* Usage errors go to stderr; keep the test output clean. */
	fflush(stderr);
	FILE *saved = stderr;
	stderr = fopen("/dev/null", "w");
	int rc = cli_parse(&cmd, argc, argv_out, ret_n);
	fclose(stderr);
	stderr = saved;
	return rc;
}

static void test_cli_accepts_every_spelling_of_a_value(void **state)
{
	(void)state;
	char *argv[16];
	int n;
	const char *const a[] = {"test", "--out", "x", "--jobs=3", "--mode", "slow", "--json", NULL};
	struct vals v = {0};
	assert_int_equal(parse(&v, false, &n, argv, a), CLI_OK);
	assert_string_equal(v.out, "x");
	assert_int_equal(v.jobs, 3);
	assert_string_equal(v.mode, "slow");
	assert_true(v.json);
	assert_int_equal(n, 0);

	const char *const b[] = {"test", "-j4", "--ou=y", NULL}; /* a unique prefix */
	struct vals w = {0};
	assert_int_equal(parse(&w, false, &n, argv, b), CLI_OK);
	assert_int_equal(w.jobs, 4);
	assert_string_equal(w.out, "y");

	const char *const c[] = {"test", "-j", "5", "--out", "-dash-", NULL};
	struct vals x = {0};
	assert_int_equal(parse(&x, false, &n, argv, c), CLI_OK);
	assert_int_equal(x.jobs, 5);
	assert_string_equal(x.out, "-dash-"); /* a value is taken as given */
}

static void test_cli_moves_operands_down_and_stops_where_asked(void **state)
{
	(void)state;
	char *argv[16];
	int n;
	const char *const a[] = {"test", "one", "--json", "two", "--", "--out", NULL};
	struct vals v = {0};
	assert_int_equal(parse(&v, false, &n, argv, a), CLI_OK);
	assert_int_equal(n, 3);
	assert_string_equal(argv[1], "one");
	assert_string_equal(argv[2], "two");
	assert_string_equal(argv[3], "--out"); /* after "--" */
	assert_null(argv[4]);
	assert_true(v.json);

	/* run's way: the first operand ends the options. */
	const char *const b[] = {"test", "prog", "--json", NULL};
	struct vals w = {0};
	assert_int_equal(parse(&w, true, &n, argv, b), CLI_OK);
	assert_int_equal(n, 2);
	assert_string_equal(argv[2], "--json");
	assert_false(w.json);
}

static void test_cli_refuses_missing_bad_and_unknown_values(void **state)
{
	(void)state;
	char *argv[16];
	int n;
	const char *const cases[][5] = {
	    {"test", "--out", NULL},	      {"test", "--out=", NULL},
	    {"test", "-j", NULL},	      {"test", "--jobs", "0", NULL},
	    {"test", "--jobs", "9", NULL},    {"test", "--jobs", "2x", NULL},
	    {"test", "--mode", "medium", NULL}, {"test", "--json=1", NULL},
	    {"test", "--bogus", NULL},	      {"test", "-x", NULL},
	    {"test", "a", "b", "c", "d"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *words[6] = {0};
		for (size_t k = 0; k < 5 && cases[i][k]; k++)
			words[k] = cases[i][k];
		struct vals v = {0};
		if (parse(&v, false, &n, argv, words) != CLI_USAGE)
			fail_msg("case %zu (%s %s) was not a usage error", i, words[1],
				 words[2] ? words[2] : "");
	}
}

static void test_cli_help_lists_every_option_and_exit_status(void **state)
{
	(void)state;
	char *argv[16];
	int n;
	const char *const a[] = {"test", "--help", NULL};
	struct vals v = {0};
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	assert_non_null(mem);
	FILE *saved = stdout;
	stdout = mem;
	int rc = parse(&v, false, &n, argv, a);
	stdout = saved;
	fclose(mem);
	assert_int_equal(rc, CLI_HELP);
	assert_int_equal(cli_exit_status(rc), 0);
	static const char *const want[] = {"--json", "--out FILE", "-j, --jobs N", "--mode M",
					   "-h, --help", "EXIT STATUS"};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(text, want[i]))
			fail_msg("--help lacks '%s':\n%s", want[i], text);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cli_accepts_every_spelling_of_a_value),
	    cmocka_unit_test(test_cli_moves_operands_down_and_stops_where_asked),
	    cmocka_unit_test(test_cli_refuses_missing_bad_and_unknown_values),
	    cmocka_unit_test(test_cli_help_lists_every_option_and_exit_status),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
