/* Integration tests: the grader's own attack surface (a submission must not make itself ungradable). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

static int setup_root(void **state)
{
	(void)state;
	if (geteuid() != 0) {
		if (harness_can_skip())
			skip();
		fail_msg("these tests need root (PROCTOR_MUST_WORK=1 forbids skipping)");
	}
	return 0;
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "we");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

static void rm_tree(const char *path)
{
	char *cmd;
	if (asprintf(&cmd, "rm -rf -- '%s'", path) < 0)
		fail_msg("out of memory");
	if (system(cmd) != 0)
		print_message("could not remove %s\n", path);
	free(cmd);
}

/* Whether s is well-formed UTF-8 (no overlongs, surrogates, or cut tails). */
static bool valid_utf8(const unsigned char *s)
{
	while (*s) {
		size_t n = *s < 0x80 ? 1 : (*s >> 5) == 6 ? 2 : (*s >> 4) == 14 ? 3 : (*s >> 3) == 30 ? 4 : 0;
		if (!n || (n == 2 && *s < 0xc2))
			return false;
		for (size_t i = 1; i < n; i++)
			if ((s[i] & 0xc0) != 0x80)
				return false;
		s += n;
	}
	return true;
}

/*
 * An assignment whose test step runs the submission's own attack.sh with
 * the report path (the runner stands in for any runner that imports the
 * student's code): TAP, one declared test.
 */
static char *make_assignment(const char *tmp, const char *attack)
{
	char *dir, sub[PATH_MAX];
	assert_int_equal(chmod(tmp, 0755), 0);
	if (asprintf(&dir, "%s/assignment", tmp) < 0)
		fail_msg("out of memory");
	assert_int_equal(mkdir(dir, 0755), 0);
	write_file(dir, "assignment.yaml",
		   "name: surface\n"
		   "mode: runner\n"
		   "submission:\n"
		   "  files: [attack.sh]\n"
		   "  required: [attack.sh]\n"
		   "test:\n"
		   "  run: [sh, attack.sh, \"{report}\"]\n"
		   "  limits: {cpu_s: 5, wall_s: 10}\n"
		   "ok_exit: [0, 1]\n"
		   "report:\n"
		   "  format: tap\n"
		   "tests:\n"
		   "  - {name: only, points: 1}\n");
	snprintf(sub, sizeof sub, "%s/submission", tmp);
	assert_int_equal(mkdir(sub, 0755), 0);
	write_file(sub, "attack.sh", attack);
	return dir;
}

/*
 * The report path turned into a directory tree whose names are raw bytes
 * (\xff\xfe, controls, an escape sequence) and valid UTF-8 long enough to
 * be cut mid-character: the result document is still written, its reason
 * valid UTF-8, the verdict the student's (no credit), never Proctor's
 * "error".
 */
static void test_report_dir_with_odd_names_still_gets_a_result(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), sub[PATH_MAX];
	/* 1 + 127 two-byte characters = 255 bytes: any cut at an even offset
	 * from the start of a message splits one. */
	char *dir = make_assignment(
		tmp, "r=\"$1\"\n"
		     "mkdir -p \"$r\" && cd \"$r\" || exit 0\n"
		     "mkdir \"$(printf 'a\\033[2J\\r\\n')\" \"$(printf '\\377\\376')\"\n"
		     "cd \"$(printf '\\377\\376')\" || exit 0\n"
		     /* Deeper than PATH_MAX, so copying it out fails quoting the path. */
		     "long=a; i=0; while [ $i -lt 127 ]; do long=\"${long}\303\251\"; i=$((i+1)); done\n"
		     "d=0; while [ $d -lt 20 ]; do mkdir \"$long\" && cd \"$long\" || break; d=$((d+1)); done\n"
		     ": > \"$(printf 'x\\377y')\"\n"
		     "exit 0\n");
	snprintf(sub, sizeof sub, "%s/submission", tmp);
	for (int view = 0; view < 2; view++) {
		struct proc_out o;
		char *args[] = {"grade", "--json", "--view", view ? "student" : "instructor", dir, sub,
				NULL};
		harness_run(&o, NULL, 120, args);
		if (o.exit_status != 0 || !o.json)
			fail_msg("grade: exit %d, no result document\nstdout: %.2000s\nstderr: %.2000s",
				 o.exit_status, o.out, o.err);
		const char *st = jstr(&o, "status");
		if (strcmp(st, "crashed") && strcmp(st, "rejected"))
			fail_msg("verdict %s, want the student's crashed (report not a regular file)", st);
		json_t *reason = json_object_get(o.json, "reason");
		if (json_is_string(reason))
			assert_true(valid_utf8((const unsigned char *)json_string_value(reason)));
		assert_true(valid_utf8((const unsigned char *)o.out));
		proc_out_free(&o);
	}
	/* The text summary too: a result, on the terminal, without raw controls. */
	struct proc_out o;
	char *args[] = {"grade", dir, sub, NULL};
	harness_run(&o, NULL, 120, args);
	assert_int_equal(o.exit_status, 0);
	assert_null(strchr(o.out, '\033'));
	proc_out_free(&o);
	free(dir);
	rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_report_dir_with_odd_names_still_gets_a_result,
				       setup_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
