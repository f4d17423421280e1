/* Proctor's pytest guard: a summary only a normally finished pytest run can sign. */
#ifndef PROCTOR_GRADE_PYTEST_GUARD_H
#define PROCTOR_GRADE_PYTEST_GUARD_H

/*
 * Python source of the plugin (docs/grading.md, "The pytest guard").  It is
 * loaded with -p before collection, reads and deletes a one-time key file,
 * keeps what the program wrote out of the runner (conftest.py, test files,
 * __init__.py, bytecode caches, modules shadowing hidden ones: "What the
 * program writes never steers the runner"), and at the end of a normal
 * session writes a Gradescope-shaped summary of every test's outcome plus
 * its HMAC-SHA256 under that key.  grade.c's guard_prepare() sets up the
 * start-up environment it relies on.
 */
extern const char pytest_guard_source[];

#endif
