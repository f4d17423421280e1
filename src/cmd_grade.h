/* `proctor grade`: one submission against one assignment. */
#ifndef PROCTOR_CMD_GRADE_H
#define PROCTOR_CMD_GRADE_H

int cmd_grade(int argc, char **argv);

#endif
