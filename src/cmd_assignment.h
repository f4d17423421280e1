/* `proctor assignment`: commands on an assignment itself (check: try it before students do). */
#ifndef PROCTOR_CMD_ASSIGNMENT_H
#define PROCTOR_CMD_ASSIGNMENT_H

/*
 * `proctor assignment check DIR [--reference SUB]` grades, in the
 * assignment's default mode, what an instructor should try before any
 * student does (docs/assignment.md, "Checking an assignment"):
 *
 *   load          assignment.yaml is valid (errors as `proctor grade` has them)
 *   reference     the reference solution gets the maximum
 *   empty         an empty file for each name the submission must have gets 0
 *   syntax_error  the same names holding text no compiler accepts gets 0
 *   tamper_proof  for a split Python test step whose reference lost points:
 *                 which of those tests pass when the tests and the submission
 *                 share one process (the tests, not the reference, are wrong)
 *
 * A grading that ends in status "error" is Proctor's failure, not the
 * assignment's: the command then exits 3, as `proctor grade` does.
 */
int cmd_assignment(int argc, char **argv);

#endif
