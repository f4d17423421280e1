/* Proctor's guards for node --test and the JUnit console launcher. */
#ifndef PROCTOR_GRADE_GUARDS_H
#define PROCTOR_GRADE_GUARDS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "grade/assignment.h"
#include "sandbox.h"

/*
 * Theory of operation (docs/grading.md, "The node and JUnit guards")
 * ------------------------------------------------------------------
 * In runner mode a test step that starts node --test (RUNNER_NODE) or the
 * JUnit console launcher (RUNNER_JUNIT) is graded from a summary Proctor's
 * own code writes, never from the report file the runner writes, with no
 * option to turn that off.  Right before the test step, after the build
 * (so nothing of the submission is running), runner_guard_arm():
 *
 *  - writes a one-time key (64 random hex digits) into the fresh report
 *    directory as .key, owned by the sandbox's uid;
 *  - puts the guard's files into a directory made now under a fresh random
 *    name, /tmp/.proctor-guard-<random>, root-owned (SANDBOX_PUT_PROTECTED):
 *    for node, a reporter module; for JUnit, a TestExecutionListener's class
 *    files and its ServiceLoader registration;
 *  - adds the guard to the instructor's argv (runner_guard_argv()) and
 *    PROCTOR_GUARD_KEY_FILE and PROCTOR_GUARD_OUT to its environment.
 *
 * The guard starts before any code of the submission: node loads reporters
 * in the runner's process before it starts the child process of the first
 * test file (which imports the submission), the launcher makes its
 * listeners before it discovers (loads) test classes.  It reads the key,
 * deletes the key file, records every test's outcome and only at the normal
 * end of the run writes report_dir/guard.xml (JUnit XML: classname, name,
 * failure, skipped) and guard.xml.sig, its HMAC-SHA256 under the key in
 * hex.  grade.c verifies it (read_signed(), Nettle) and parses the XML as
 * the report.  An early exit, a crash or a kill writes no summary, and the
 * report file a submission forges is never read.
 *
 * The sources are src/grade/guards/: proctor_guard.mjs embedded as is and
 * ProctorGuard.java compiled at build time (embed.py, meson.build), so no
 * grading compiles anything.
 */

/* One file of a guard: its path below the guard's directory and bytes. */
struct guard_file {
	const char *name; /* NULL ends a set */
	const unsigned char *data;
	size_t len;
};

/* Generated at build time (guards/embed.py). */
extern const struct guard_file node_guard_files[];
extern const struct guard_file junit_guard_files[];
/* Whether javac compiled the JUnit listener when Proctor was built. */
extern const bool junit_guard_built;
/* The split runtime for JUnit (src/grade/runtimes/java/), compiled at build
 * time: its class files (proctor/split/...), empty without javac. */
extern const struct guard_file java_split_files[];
extern const bool java_split_built;

/* Create the host file `path` holding len bytes: root's and 0644 when
 * owner is 0, else 0600 and owner's (uid and gid). */
int guard_host_file(const char *path, const void *data, size_t len, uid_t owner, struct err *e);

/*
 * A guard's one-time key (64 hex digits, fresh from the kernel) into
 * key[65], written to the host file `host` and put into the sandbox as
 * report_dir/.key with put flags `flags` (0: the sandbox's uid's; a split
 * run's: the harness's).  The pytest guard and the runner guards share it.
 */
int guard_put_key(struct sandbox *sb, const char *host, const char *report_dir, unsigned flags,
		  char key[65], struct err *e);

/* The summary's name in the report directory. */
#define RUNNER_GUARD_SUMMARY "guard.xml"

/* Whether a test step of `a` runs under the node or JUnit guard: runner
 * mode and test.run starting node --test or the JUnit console launcher. */
bool runner_guard_applies(const struct assignment *a);

/*
 * The test argv (substitutions done) with the guard of `kind` whose files
 * are at guard_dir in the sandbox, malloc'd, NULL-terminated:
 *  - node: --test-reporter=<guard_dir>/proctor_guard.mjs and
 *    --test-reporter-destination=/dev/null right after argv[0] (node pairs
 *    reporters with destinations in order); if argv names no reporter,
 *    also node's default for a pipe, tap to stdout, so the step's output
 *    stays what it was;
 *  - JUnit: `--class-path <guard_dir>` right after the launcher's jar
 *    (`-jar JAR`, and its `execute` subcommand if given), so the guard's
 *    directory is searched first by the launcher's class loader; with the
 *    launcher started as a main class (`-cp ...:JAR ...ConsoleLauncher`),
 *    guard_dir goes first in that -cp/-classpath/--class-path value.
 * An argv where the launcher cannot be found is ERR_INPUT naming test.run.
 */
char **runner_guard_argv(enum runner_kind kind, char *const *argv, const char *guard_dir,
			 struct err *e);

/* A guard armed for one test step. */
struct runner_guard {
	char key[65];
	char guard_dir[64];
	char env[2][PATH_MAX];
	char **argv; /* runner_guard_argv()'s */
};

/*
 * Arm the guard of `kind` in sb for a test step writing into report_dir
 * (which exists, owned by the sandbox's uid, or a split run's harness):
 * key (put with sandbox_put() flags key_flags), guard directory, argv and
 * environment as above.  Host files go below `staging` (an existing
 * directory of the attempt's).  A JUnit guard that was not built is
 * ERR_INTERNAL.
 */
int runner_guard_arm(struct sandbox *sb, const char *staging, const char *report_dir,
		     unsigned key_flags, enum runner_kind kind, char *const *argv,
		     struct runner_guard *g, struct err *e);
void runner_guard_free(struct runner_guard *g);

#endif
