/* Integration tests: every command's options, as the real binary parses them: one message shape, exit 2. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "harness.h"

/* Every command and command word, as typed. */
static const char *const commands[] = {"run",	  "grade",	 "class",    "assignment check",
				       "doctor",  "image build", "image ls", "image show",
				       "image rm"};

#define MAX_OPTS 64

struct opt {
	char name[64];	/* "cpu" */
	char short_name; /* 'j', or 0 */
	bool value;	/* takes a value */
};

/* Split "image build" into argv words after the binary; returns the count. */
static int words(const char *cmd, char *buf, size_t len, char **argv)
{
	int n = 0;
	snprintf(buf, len, "%s", cmd);
	for (char *save = NULL, *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
		argv[n++] = w;
	return n;
}

/*
 * The options a command's --help lists: lines "  --name VALUE  help",
 * "  -x, --name VALUE  help" or "  --flag  help" in its option sections.
 * The table drives both, so this is the parser's own list.
 */
static size_t help_options(const char *cmd, struct opt *opts)
{
	char buf[128], *argv[8];
	int n = words(cmd, buf, sizeof buf, argv);
	argv[n++] = "--help";
	argv[n] = NULL;
	struct proc_out o;
	harness_run(&o, NULL, 30, argv);
	if (o.exit_status != 0)
		fail_msg("proctor %s --help: exit %d: %s", cmd, o.exit_status, o.err);
	if (!strstr(o.out, "EXIT STATUS"))
		fail_msg("proctor %s --help has no EXIT STATUS section", cmd);
	size_t k = 0;
	for (char *save = NULL, *line = strtok_r(o.out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *p = line;
		struct opt x = {0};
		if (strncmp(p, "  -", 3) != 0)
			continue;
		p += 2;
		if (p[1] != '-') { /* "-x, --name" */
			x.short_name = p[1];
			if (strncmp(p + 2, ", --", 4) != 0)
				continue;
			p += 4;
		}
		if (strncmp(p, "--", 2) != 0)
			continue;
		p += 2;
		size_t len = strcspn(p, " ");
		if (len == 0 || len >= sizeof x.name)
			continue;
		memcpy(x.name, p, len);
		/* A value name follows after one space ("--cpu S"), help after two. */
		x.value = p[len] == ' ' && p[len + 1] != ' ' && p[len + 1] != '\0';
		assert_true(k < MAX_OPTS);
		opts[k++] = x;
	}
	proc_out_free(&o);
	return k;
}

static void expect_usage_error(const char *cmd, char **argv, const char *want)
{
	struct proc_out o;
	harness_run(&o, NULL, 30, argv);
	if (o.exit_status != 2 || strcmp(o.err, want) != 0)
		fail_msg("proctor %s: exit %d, stderr '%s'; want exit 2 and '%s'", cmd,
			 o.exit_status, o.err, want);
	proc_out_free(&o);
}

/* Each option that takes a value, given none: last on the line, with an
 * empty `=`, and (for short forms) as -x alone. */
static void test_every_option_without_its_value_is_one_message_and_exit_2(void **state)
{
	(void)state;
	size_t checked = 0;

	for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++) {
		struct opt opts[MAX_OPTS];
		size_t n = help_options(commands[c], opts);
		assert_true(n >= 2); /* at least one real option and --help */
		for (size_t i = 0; i < n; i++) {
			char buf[128], *argv[8], arg[96], want[512];
			if (!opts[i].value)
				continue;
			snprintf(want, sizeof want,
				 "proctor: %s: option '--%s' needs a value (see 'proctor %s --help')\n",
				 commands[c], opts[i].name, commands[c]);
			int k = words(commands[c], buf, sizeof buf, argv);
			snprintf(arg, sizeof arg, "--%s", opts[i].name);
			argv[k] = arg;
			argv[k + 1] = NULL;
			expect_usage_error(commands[c], argv, want);
			snprintf(arg, sizeof arg, "--%s=", opts[i].name);
			expect_usage_error(commands[c], argv, want);
			if (opts[i].short_name) {
				snprintf(want, sizeof want,
					 "proctor: %s: option '-%c' needs a value (see 'proctor %s "
					 "--help')\n",
					 commands[c], opts[i].short_name, commands[c]);
				snprintf(arg, sizeof arg, "-%c", opts[i].short_name);
				expect_usage_error(commands[c], argv, want);
			}
			checked++;
		}
	}
	/* run's limits alone are eight options with values. */
	assert_true(checked >= 8 + 1);
	print_message("%zu options with values checked\n", checked);
}

/* Unknown options and flags given a value: the same shape everywhere. */
static void test_unknown_option_and_flag_with_value_have_one_shape(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++) {
		char buf[128], *argv[8], want[512];
		int k = words(commands[c], buf, sizeof buf, argv);
		argv[k] = "--no-such-option";
		argv[k + 1] = NULL;
		snprintf(want, sizeof want,
			 "proctor: %s: unknown option '--no-such-option' (see 'proctor %s --help')\n",
			 commands[c], commands[c]);
		expect_usage_error(commands[c], argv, want);
		argv[k] = "--help=yes";
		snprintf(want, sizeof want,
			 "proctor: %s: option '--help' takes no value (see 'proctor %s --help')\n",
			 commands[c], commands[c]);
		expect_usage_error(commands[c], argv, want);
	}
}

/* Values are taken in both spellings, doctor's --state-dir included. */
static void test_equals_and_separate_values_are_both_accepted(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), arg[4200];
	struct proc_out a, b;

	snprintf(arg, sizeof arg, "--state-dir=%s", tmp);
	char *eq[] = {"doctor", "--json", arg, NULL};
	char *sep[] = {"doctor", "--json", "--state-dir", tmp, NULL};
	harness_run(&a, NULL, 60, eq);
	harness_run(&b, NULL, 60, sep);
	assert_true(a.exit_status == 0 || a.exit_status == 1);
	assert_int_equal(a.exit_status, b.exit_status);
	assert_non_null(a.json);
	assert_non_null(b.json);
	proc_out_free(&a);
	proc_out_free(&b);
	char *ls[] = {"image", "ls", "--json", arg, NULL};
	harness_run(&a, NULL, 60, ls);
	assert_int_equal(a.exit_status, 0);
	proc_out_free(&a);
	char cmd[4300];
	snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", tmp);
	assert_int_equal(system(cmd), 0);
	free(tmp);
}

static void write_text(const char *dir, const char *name, const char *text)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static void expect_usage_error_naming(const char *cmd, char **argv, const char *named)
{
	struct proc_out o;
	harness_run(&o, NULL, 30, argv);
	if (o.exit_status != 2 || strncmp(o.err, "proctor: ", 9) != 0 ||
	    strchr(o.err, '\n') != o.err + o.err_len - 1 || !strstr(o.err, named))
		fail_msg("proctor %s: exit %d, stderr '%s'; want exit 2 and one line naming '%s'",
			 cmd, o.exit_status, o.err, named);
	proc_out_free(&o);
}

/* The backend is the user's to choose: a name no backend has, or one the
 * assignment's isolation: forbids, is a usage error (exit 2) in every
 * command that takes --isolation, told apart from a backend this host
 * cannot run (exit 3) by the error's kind, not its text. */
static void test_isolation_nobody_has_or_the_assignment_forbids_is_exit_2(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), any[4200], vm[4200], subs[4200], sub[4200], cmd[4300];
	const char *yaml = "name: minimal\nsubmission:\n  files: [main.c]\ntest:\n"
			   "  run: [./run_tests]\nreport:\n  format: tap\ntests:\n  - name: adds\n";
	char vm_yaml[512];

	snprintf(any, sizeof any, "%s/any", tmp);
	snprintf(vm, sizeof vm, "%s/vm", tmp);
	snprintf(subs, sizeof subs, "%s/subs", tmp);
	snprintf(sub, sizeof sub, "%s/subs/s1", tmp);
	assert_int_equal(mkdir(any, 0755), 0);
	assert_int_equal(mkdir(vm, 0755), 0);
	assert_int_equal(mkdir(subs, 0755), 0);
	assert_int_equal(mkdir(sub, 0755), 0);
	write_text(any, "assignment.yaml", yaml);
	snprintf(vm_yaml, sizeof vm_yaml, "%sisolation: vm\n", yaml);
	write_text(vm, "assignment.yaml", vm_yaml);
	write_text(sub, "main.c", "int main(void) { return 0; }\n");

	const char *unknown = "proctor: --isolation: unknown backend 'bogus' (auto, jail, vm)\n";
	char *run[] = {"run", "--isolation", "bogus", "--", "true", NULL};
	expect_usage_error("run", run, unknown);
	char *grade[] = {"grade", "--isolation", "bogus", any, sub, NULL};
	expect_usage_error("grade", grade, unknown);
	char *class[] = {"class", "--isolation", "bogus", any, subs, NULL};
	expect_usage_error("class", class, unknown);
	char *check[] = {"assignment",	"check", "--isolation", "bogus",
			 "--reference", sub,	 any,		NULL};
	expect_usage_error("assignment check", check, unknown);

	char *grade_jail[] = {"grade", "--isolation", "jail", vm, sub, NULL};
	expect_usage_error_naming("grade", grade_jail, "requires isolation 'vm'");
	char *class_jail[] = {"class", "--isolation", "jail", vm, subs, NULL};
	expect_usage_error_naming("class", class_jail, "requires isolation 'vm'");
	char *check_jail[] = {"assignment", "check", "--isolation", "jail", "--reference",
			      sub,	    vm,	     NULL};
	expect_usage_error_naming("assignment check", check_jail, "requires isolation 'vm'");

	snprintf(cmd, sizeof cmd, "rm -rf -- '%s'", tmp);
	assert_int_equal(system(cmd), 0);
	free(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_option_without_its_value_is_one_message_and_exit_2),
	    cmocka_unit_test(test_unknown_option_and_flag_with_value_have_one_shape),
	    cmocka_unit_test(test_equals_and_separate_values_are_both_accepted),
	    cmocka_unit_test(test_isolation_nobody_has_or_the_assignment_forbids_is_exit_2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
