/* The commands of proctor-service: the grading service and its clients (docs/service.md). */
#ifndef PROCTOR_SERVICE_COMMANDS_H
#define PROCTOR_SERVICE_COMMANDS_H

int cmd_serve(int argc, char **argv);	/* serve.c */
int cmd_worker(int argc, char **argv);	/* worker.c */
int cmd_admin(int argc, char **argv);	/* admin.c */
int cmd_submit(int argc, char **argv);	/* client.c */
int cmd_status(int argc, char **argv);	/* client.c */
int cmd_results(int argc, char **argv); /* client.c */

#endif
