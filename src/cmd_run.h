/* `proctor run`: one program in a fresh sandbox. */
#ifndef PROCTOR_CMD_RUN_H
#define PROCTOR_CMD_RUN_H

int cmd_run(int argc, char **argv);

#endif
