/* Integration tests: build.objects refuses C submissions that tamper with the test driver from
 * inside its process. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "harness.h"

#ifndef EXAMPLES_DIR
#error "EXAMPLES_DIR must point at examples/"
#endif
#ifndef TEST_DATA
#error "TEST_DATA must point at tests/data/"
#endif

#define CASES TEST_DATA "/c-objects"

struct row {
	char name[128], status[64], reason_has[128], without[64];
};

/* tests/data/c-objects/cases.tsv: case, expected_status, a text the
 * reason must hold, the verdict without the check (STATUS:SCORE), what the
 * case does. */
static size_t read_cases(struct row *rows, size_t cap)
{
	char line[4096];
	size_t n = 0;
	FILE *f = fopen(CASES "/cases.tsv", "r");

	assert_non_null(f);
	assert_non_null(fgets(line, sizeof(line), f)); /* header */
	while (n < cap && fgets(line, sizeof(line), f)) {
		struct row *r = &rows[n];
		if (sscanf(line, "%127[^\t]\t%63[^\t]\t%127[^\t]\t%63[^\t]", r->name, r->status,
			   r->reason_has, r->without) == 4)
			n++;
	}
	fclose(f);
	return n;
}

static json_t *grade(const char *assignment, const char *submission)
{
	char *args[] = {"grade", "--json", (char *)assignment, (char *)submission, NULL};
	struct proc_out o;

	harness_run(&o, NULL, 600, args);
	if (o.exit_status != 0 || !o.json)
		fail_msg("grade %s: exit %d, no result document\nstderr: %.2000s", submission,
			 o.exit_status, o.err);
	json_t *doc = json_incref(o.json);
	proc_out_free(&o);
	harness_assert_clean();
	return doc;
}

static const char *status_of(json_t *doc)
{
	return json_string_value(json_object_get(doc, "status"));
}

static const char *reason_of(json_t *doc)
{
	const char *r = json_string_value(json_object_get(doc, "reason"));
	return r ? r : "";
}

/*
 * Every hostile case against examples/c-tap as it ships (build.objects
 * on): the verdict of cases.tsv (the submission's, never "error"), a
 * reason naming what was refused, and no point.
 */
static void test_tampering_objects_score_nothing(void **state)
{
	(void)state;
	struct row rows[64];
	size_t n = read_cases(rows, 64);
	char sub[PATH_MAX];

	harness_require_root("grading");
	assert_true(n >= 8);
	for (size_t i = 0; i < n; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", CASES, rows[i].name);
		json_t *doc = grade(EXAMPLES_DIR "/c-tap", sub);
		print_message("[  CASE    ] %s: %s, %s\n", rows[i].name, status_of(doc),
			      reason_of(doc));
		if (strcmp(status_of(doc), rows[i].status) != 0)
			fail_msg("%s: status %s, expected %s (reason: %s)", rows[i].name,
				 status_of(doc), rows[i].status, reason_of(doc));
		if (!strstr(reason_of(doc), rows[i].reason_has))
			fail_msg("%s: reason '%s' does not mention %s", rows[i].name,
				 reason_of(doc), rows[i].reason_has);
		assert_true(json_number_value(json_object_get(doc, "score")) == 0.0);
		assert_int_equal(json_integer_value(json_object_get(doc, "passed")), 0);
		json_decref(doc);
	}
}

/* examples/c-tap copied to `dir` with its build.objects block taken out;
 * `out_of_sight`: its Makefile calls the compiler by its absolute path,
 * which Proctor's compiler shim does not see, so no check is made. */
static void copy_without_check(const char *dir, bool out_of_sight)
{
	static const char *const files[] = {"tests/Makefile", "tests/arrays.h",
					    "tests/test_driver.c"};
	char path[PATH_MAX];
	size_t len;

	snprintf(path, sizeof(path), "%s/tests", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/c-tap/%s", EXAMPLES_DIR, files[i]);
		char *text = harness_read(path, &len);
		char *cc = out_of_sight ? strstr(text, "CC = gcc\n") : NULL;
		if (out_of_sight && !cc && strcmp(files[i], "tests/Makefile") == 0)
			fail_msg("%s has no line 'CC = gcc'", path);
		if (cc) {
			harness_write(dir, files[i], text, (size_t)(cc - text));
			char rest[8192];
			snprintf(rest, sizeof(rest), "%.*sCC = /usr/bin/gcc\n%s", (int)(cc - text),
				 text, cc + strlen("CC = gcc\n"));
			harness_write_text(dir, files[i], rest);
		} else {
			harness_write(dir, files[i], text, len);
		}
		free(text);
	}
	snprintf(path, sizeof(path), "%s/c-tap/assignment.yaml", EXAMPLES_DIR);
	char *yaml = harness_read(path, &len);
	char *start = strstr(yaml, "  objects:\n"), *allow = start ? strstr(start, "allow:") : NULL;
	assert_non_null(allow);
	char *end = strchr(allow, '\n') + 1;
	memmove(start, end, strlen(end) + 1);
	assert_null(strstr(yaml, "objects"));
	harness_write_text(dir, "assignment.yaml", yaml);
	free(yaml);
}

/* Every case of cases.tsv graded against examples/c-tap without its
 * build.objects (copy_without_check), each result handed to `check`. */
static void grade_cases_without_objects(bool out_of_sight,
					void (*check)(const struct row *r, json_t *doc))
{
	struct row rows[64];
	size_t n = read_cases(rows, 64);
	char *tmp = harness_tmpdir(), sub[PATH_MAX], dir[PATH_MAX];

	harness_require_root("grading");
	assert_int_equal(chmod(tmp, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/c-tap", tmp);
	assert_int_equal(mkdir(dir, 0755), 0);
	copy_without_check(dir, out_of_sight);
	for (size_t i = 0; i < n; i++) {
		snprintf(sub, sizeof(sub), "%s/%s", CASES, rows[i].name);
		json_t *doc = grade(dir, sub);
		check(&rows[i], doc);
		json_decref(doc);
	}
	harness_rm_tree(tmp);
	free(tmp);
}

/* Without any check (the compiler out of the shim's sight): cases.tsv's
 * without_check verdict, the attack's full marks for wrong code. */
static void works_unchecked(const struct row *r, json_t *doc)
{
	char want[64];
	double score, got = json_number_value(json_object_get(doc, "score"));

	if (sscanf(r->without, "%63[^:]:%lf", want, &score) != 2)
		fail_msg("%s: without_check '%s' is not STATUS:SCORE", r->name, r->without);
	print_message("[  CASE    ] %s without the check: %s %g\n", r->name, status_of(doc), got);
	if (strcmp(status_of(doc), want) != 0 || got != score)
		fail_msg("%s without the check: %s %g, expected %s %g (reason: %s)", r->name,
			 status_of(doc), got, want, score, reason_of(doc));
	assert_string_equal(json_string_value(json_object_get(doc, "objects_check")), "unchecked");
}

/*
 * The same cases with the check taken out of the assignment and the
 * compiler called by its absolute path, which Proctor's compiler shim does
 * not see: each attack works, so the tests around it show the checks, not
 * a broken attack, scoring them 0.  Run in the sandbox like any submission.
 */
static void test_the_attacks_work_without_the_check(void **state)
{
	(void)state;
	grade_cases_without_objects(true, works_unchecked);
}

/* The default check refuses each attack as build.objects does; a helper
 * that is not static is a name of the student's own, with full marks. */
static void refused_by_default(const struct row *r, json_t *doc)
{
	bool helper = strcmp(r->name, "global_helper") == 0;

	print_message("[  CASE    ] %s by default: %s, %s\n", r->name, status_of(doc),
		      reason_of(doc));
	if (strcmp(status_of(doc), helper ? "graded" : r->status) != 0 ||
	    (!helper && !strstr(reason_of(doc), r->reason_has)))
		fail_msg("%s by default: %s (reason: %s), expected %s naming %s", r->name,
			 status_of(doc), reason_of(doc), helper ? "graded" : r->status,
			 r->reason_has);
	if (helper && json_number_value(json_object_get(doc, "score")) !=
			  json_number_value(json_object_get(doc, "max_score")))
		fail_msg("global_helper by default: %g, not full marks",
			 json_number_value(json_object_get(doc, "score")));
	assert_string_equal(json_string_value(json_object_get(doc, "objects_check")), "default");
}

/*
 * Without build.objects and with the compiler called by its name, as most
 * instructors write it: the default check (the compiler shim).
 */
static void test_the_default_check_refuses_them(void **state)
{
	(void)state;
	grade_cases_without_objects(false, refused_by_default);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_tampering_objects_score_nothing, harness_setup_root),
	    cmocka_unit_test_setup(test_the_attacks_work_without_the_check, harness_setup_root),
	    cmocka_unit_test_setup(test_the_default_check_refuses_them, harness_setup_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
