/* Proctor's pytest guard: a summary only a normally finished pytest run can sign. */
#ifndef PROCTOR_GRADE_PYTEST_GUARD_H
#define PROCTOR_GRADE_PYTEST_GUARD_H

/*
 * Python source of the plugin (docs/grading.md, "The pytest guard").  It is
 * loaded with -p before collection, reads and deletes a one-time key file,
 * and at the end of a normal session writes a Gradescope-shaped summary of
 * every test's outcome plus its HMAC-SHA256 under that key.
 */
extern const char pytest_guard_source[];

#endif
