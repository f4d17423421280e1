/* Split runs: the tests in a harness process, the submission in another. */
#ifndef PROCTOR_GRADE_SPLIT_H
#define PROCTOR_GRADE_SPLIT_H

#include <stddef.h>

#include "grade/assignment.h"

/*
 * Theory of operation: docs/grading.md, "Tamper-proof runs".  For a Python
 * runner or node --test (assignment_split()), the test step is one run of two programs
 * (struct run_spec's peer_argv): the harness, as the sandbox's harness
 * identity, runs the assignment's test command under proctor_split.py
 * (proctor_split.mjs for node),
 * which gives the tests stand-in modules for what the program wrote; the
 * program side, as the program's identity, runs that code when asked.
 * The hidden tests are put readable by the harness only
 * (SANDBOX_PUT_HARNESS) and the report directory is the harness's
 * (SANDBOX_PUT_HARNESS_OWNED), so nothing the submission runs can read
 * the tests or write the report.
 */

/* The Python runtime (src/grade/runtimes/python/proctor_split.py), embedded at build time. */
extern const char proctor_split_source[];
extern const unsigned long proctor_split_source_len;
/* The JavaScript runtime (src/grade/runtimes/node/proctor_split.mjs), likewise. */
extern const char proctor_split_mjs_source[];
extern const unsigned long proctor_split_mjs_source_len;

/*
 * The harness's argv for the test command `argv` (substituted) of runner
 * `kind`: `python3 -m pytest ARGS` becomes `python3 -m proctor_split
 * harness pytest ARGS` (the same interpreter), `pytest ARGS` becomes
 * `python3 -m proctor_split harness pytest ARGS`; `node [OPTIONS] --test
 * FILES` becomes `node [OPTIONS] RUNTIME_DIR/proctor_split.mjs harness
 * FILES` (--test dropped: the harness runs the test files in its own
 * process, with the options' reporters); the JUnit console launcher's
 * `java [OPTIONS] -jar LAUNCHER ARGS` becomes `sh -c SWAP sh java
 * -XX:TieredStopAtLevel=1 [OPTIONS] -cp RUNTIME_DIR:LAUNCHER
 * proctor.split.ProctorSplit harness ARGS`.  runtime_dir is where the
 * runtime is in the sandbox (node only).  NULL when out of memory.
 */
char **split_harness_argv(char *const *argv, enum runner_kind kind, const char *runtime_dir);

/* The program side's argv: `PYTHON -m proctor_split program`, with the
 * harness's interpreter; for node, `node RUNTIME_DIR/proctor_split.mjs
 * program`; for JUnit, `sh -c SWAP sh java [OPTIONS] -cp RUNTIME_DIR:CLASSES
 * proctor.split.ProctorSplit program` (CLASSES: the launcher's --class-path).
 * NULL when out of memory. */
char **split_program_argv(char *const *harness_argv);

/* The harness's exit status when the program side ended during a call or
 * broke the protocol (proctor_split.py's ABORT_STATUS): the run is crashed. */
#define SPLIT_ABORT_STATUS 70

/* The harness's exit status when the program side never started (before
 * any code of the submission's ran in the step): Proctor's failure. */
#define SPLIT_NOT_STARTED_STATUS 71

/* JUnit: the hidden tests do not compile against the submission's classes
 * (a method they call is missing, or has another signature): the
 * submission's compile_error. */
#define SPLIT_TESTS_DO_NOT_COMPILE_STATUS 72

/* JUnit: the submission's classes cannot be stood in for (a class of the
 * JDK's as superclass, an inner class), or Proctor's stand-ins do not
 * compile: Proctor's failure, said in the test step's output. */
#define SPLIT_NO_STAND_INS_STATUS 73

#endif
