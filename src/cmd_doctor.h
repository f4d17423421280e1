/* `proctor doctor`: what this host supports. */
#ifndef PROCTOR_CMD_DOCTOR_H
#define PROCTOR_CMD_DOCTOR_H

int cmd_doctor(int argc, char **argv);

#endif
