/* An instructor's assignment: assignment.yaml parsed and validated, paths resolved. */
#ifndef PROCTOR_GRADE_ASSIGNMENT_H
#define PROCTOR_GRADE_ASSIGNMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "grade/match.h"
#include "runlimits.h"

enum report_format { REPORT_JUNIT = 0, REPORT_TAP = 1, REPORT_GRADESCOPE = 2 };
enum grade_mode { GRADE_MODE_RUNNER = 0, GRADE_MODE_IO = 1 };
/* The test runner test.run starts, as far as Proctor knows it
 * (assignment_runner_kind()): what decides the tamper-proof defaults. */
enum runner_kind {
	RUNNER_OTHER = 0,
	RUNNER_PYTEST,   /* python3 -m pytest ..., pytest ... */
	RUNNER_UNITTEST, /* python3 -m unittest ..., python3 -m xmlrunner ... */
	RUNNER_NODE,     /* node --test ... */
	RUNNER_JUNIT,    /* java ... junit-platform-console-standalone ... */
};
/* Gradescope's vocabulary. */
enum visibility {
	VIS_VISIBLE = 0,
	VIS_HIDDEN = 1,
	VIS_AFTER_DUE_DATE = 2,
	VIS_AFTER_PUBLISHED = 3,
};
enum compare_mode { CMP_EXACT = 0, CMP_TRAILING_WS = 1, CMP_TOKENS = 2, CMP_FLOAT = 3 };

const char *visibility_name(enum visibility v);

/* A command of the assignment: an argv array (never a shell string) and
 * the limits it runs under (defaults filled in for keys not given). */
struct step {
	bool present;
	char **argv; /* NULL-terminated; may contain {report} and {report_dir} */
	size_t argc;
	struct limits limits;
};

struct test_decl {
	struct manifest_test t; /* name, classname, points */
	enum visibility visibility;
};

/* One I/O-mode case.  Paths are absolute host paths inside the assignment
 * directory; expected output never enters a sandbox. */
struct io_case {
	char *name;
	char *stdin_path;    /* NULL: empty input */
	char *expected_path; /* required */
	char **args;         /* extra argv appended to io.run; NULL-terminated */
	size_t n_args;
	double points;
	enum visibility visibility;
	struct limits limits;
};

/* build.objects: the object files the build makes from the submission
 * and the only global symbols they may define (grade/symcheck.h).  No
 * files: no check. */
struct build_objects {
	char **files; /* paths relative to /work, NULL-terminated */
	size_t n_files;
	char **allow; /* fnmatch(3) globs over symbol names, NULL-terminated */
	size_t n_allow;
	/* Set by the grader, never by assignment.yaml: the default check of a
	 * build without build.objects (grade.c, "the compiler shim").  files
	 * are then absolute sandbox paths, names what messages call them (the
	 * sources), and instead of `allow` every name the system libraries
	 * define is refused (symcheck.h). */
	bool deny_system;
	char **names;
};

/* isolation: which backend may grade it, so a mixed fleet never grades one
 * assignment two ways. */
enum assignment_isolation {
	ASSIGNMENT_ISOLATION_ANY = 0,
	ASSIGNMENT_ISOLATION_JAIL = 1,
	ASSIGNMENT_ISOLATION_VM = 2,
};

struct assignment {
	char *dir;        /* absolute path of the assignment directory */
	char *file;       /* absolute path of assignment.yaml */
	char *name;
	char *image;      /* "host", "NAME@VERSION" or "sha256:HEX" (src/image/image.h) */
	enum assignment_isolation isolation; /* default any */
	/* submission: */
	char **files;     /* globs */
	size_t n_files;
	char **required;
	size_t n_required;
	uint64_t max_bytes;   /* default 1 MiB */
	uint64_t max_entries; /* default 10000 */
	char *tests_dir;      /* absolute, or NULL */
	struct step setup, build, test;
	struct build_objects objects; /* build.objects */
	int ok_exit[32];
	size_t n_ok_exit;     /* default {0} */
	enum report_format report_format;
	char *report_path;    /* report.path, may use {report_dir}; NULL: {report} */
	uint64_t report_max_bytes; /* default 8 MiB */
	bool pytest_guard;    /* report.pytest_guard: verdicts from Proctor's signed pytest summary */
	enum runner_kind runner; /* what test.run starts */
	/* test.in_process: the tests and the submission share one process, as
	 * before tamper-proof runs (Python runners only; default false). */
	bool in_process;
	struct test_decl *tests;
	size_t n_tests;
	enum grade_mode mode;
	/* io mode: */
	struct step io_run;   /* the program run once per case (argv; limits = case default) */
	struct io_case *cases;
	size_t n_cases;
	enum compare_mode compare;
	double float_tolerance; /* absolute and relative, default 1e-6 */
	struct step checker;    /* optional: argv gets input, expected, output file paths appended */
	uint64_t io_output_max; /* bytes of program output compared, default 16 MiB */
	unsigned retries;       /* infrastructure retries per submission, default 2 */
	double max_score;       /* sum of points */
	char digest[65];        /* SHA-256 over assignment.yaml and every file of tests_dir and cases */
};

/*
 * Load `dir`/assignment.yaml (or `dir` itself if it names a .yaml file).
 * Errors name the file, line and key: "assignment.yaml:12: test.limits.cpu_s:
 * expected a positive number, got 'x'"; an unknown key, a wrong type, a
 * missing required key, a path that escapes the assignment directory or does
 * not exist, a duplicate test name, or an empty argv is an error.
 */
int assignment_load(const char *dir, struct assignment **ret, struct err *e);

/* Which runner argv starts (the basename of argv[0], `-m MODULE`, the
 * options node and java are given). */
enum runner_kind assignment_runner_kind(char *const *argv);

/* Whether a test step of `a` runs split (docs/grading.md, "Tamper-proof
 * runs"): a Python runner (pytest, unittest) not opted out with
 * test.in_process. */
bool assignment_split(const struct assignment *a);
void assignment_free(struct assignment *a);

#endif
