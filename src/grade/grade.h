/* Grading one submission: sandbox, intake, build, test, report, verdict, score. */
#ifndef PROCTOR_GRADE_GRADE_H
#define PROCTOR_GRADE_GRADE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "err.h"
#include "grade/assignment.h"
#include "sandbox.h"

struct opener_id;

/*
 * Theory of operation: docs/grading.md.  In short, every attempt gets a
 * fresh sandbox; the submission is taken by an unprivileged helper
 * (proctor-helper intake) into a host staging directory and copied in;
 * hidden tests are copied in root-owned and read-only; build and test run
 * with the assignment's limits; the report is copied out as a regular file
 * and parsed by the unprivileged helper; the host alone decides the verdict
 * (the runner's exit code only tells a crash from a normal finish).
 */

struct grade_options {
	const struct sandbox_ops *ops;   /* from grade_prepare() */
	struct sandbox_options sandbox;  /* state dir, slots, uid base; disk set per step */
	const char *helper_path;         /* proctor-helper; NULL: next to /proc/self/exe */
	/* Called after each sandbox is made (the first says "sandbox ready"), or NULL. */
	void (*on_sandbox)(void *ctx);
	void *on_sandbox_ctx;
};

/* Select the backend and do its process-wide setup.  Call once, before
 * forking workers or starting threads.  `why` says which backend and why. */
int grade_prepare(const char *isolation, const struct assignment *a,
		  const struct sandbox_ops **ret, char *why, size_t why_len, struct err *e);

/*
 * Grade `submission` (a directory or an archive) against `a`.  Always
 * produces a result document in *ret (docs/result.md, instructor view):
 * a student's failure is a status, and Proctor's own failure is status
 * "error" after the assignment's retries (or "crashed" when the failure
 * happened after the submission's code ran, so a submission cannot buy
 * endless free retries).  Returns -1 only when not even a document could
 * be built (out of memory), with e filled.
 */
int grade_submission(const struct assignment *a, const char *submission,
		     const struct grade_options *o, json_t **ret, struct err *e);

/*
 * grade_submission() for the entry `name` of the directory dir_fd, as
 * `proctor class` found it (`seen`, or NULL): it is opened below dir_fd
 * with no symlink followed, and must still be that inode, else the
 * submission is rejected (it was swapped since the scan).  `shown` is the
 * path the result document names.
 */
int grade_submission_entry(const struct assignment *a, int dir_fd, const char *name,
			   const struct opener_id *seen, const char *shown,
			   const struct grade_options *o, json_t **ret, struct err *e);

/*
 * The result document of a submission Proctor could not grade at all (its
 * grading worker failed): status "error", nothing scored, each declared
 * test "missing"; what only grading would know (steps, the submission's
 * digest and files, the image) is empty or null.  NULL: out of memory.
 */
json_t *grade_error_document(const struct assignment *a, const char *submission,
			     const struct grade_options *o, const char *reason, unsigned attempts,
			     double time_factor);

/* The longest one grading of `a` may take on a backend whose time limits
 * are multiplied by time_factor (every step and case at its wall limit,
 * the assignment's retries, a margin): a scheduler's budget. */
uint64_t grade_budget_ns(const struct assignment *a, double time_factor);

/* The largest memory limit of any step or case of `a`, bytes. */
uint64_t grade_max_memory(const struct assignment *a);

/* The path of proctor-helper: o->helper_path, else next to this program,
 * else the installed libexec one. */
int grade_helper_path(const struct grade_options *o, char *buf, size_t len, struct err *e);

/* That proctor-helper exists and the sandbox's unprivileged uid may execute
 * it (unpriv_helper_open): -1 with an ERR_UNAVAILABLE naming the file, its
 * mode and the chmod otherwise.  grade_prepare() checks it. */
int grade_helper_check(const struct grade_options *o, struct err *e);

/* The student view: hidden tests' names, messages and all raw output removed. */
json_t *grade_student_view(const json_t *result);

/* Gradescope results.json built from a result, following visibility. */
json_t *grade_to_gradescope(const json_t *result);

/* Whether a regrade changed a score: NaN (no score) equals NaN and nothing
 * else.  The one rule of the API's "score_changed", a regrade's changes
 * and its count. */
bool grade_score_changed(double before, double after);

/* A readable summary for a terminal. */
void grade_print_summary(FILE *f, const json_t *result);

#endif
