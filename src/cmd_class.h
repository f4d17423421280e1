/* `proctor class`: every submission of a class graded in parallel, results kept as they come. */
#ifndef PROCTOR_CMD_CLASS_H
#define PROCTOR_CMD_CLASS_H

int cmd_class(int argc, char **argv);

#endif
