/* The commands of proctor-service: the grading service and its clients (docs/service.md). */
#ifndef PROCTOR_SERVICE_COMMANDS_H
#define PROCTOR_SERVICE_COMMANDS_H

int cmd_serve(int argc, char **argv);	/* serve.c */
int cmd_worker(int argc, char **argv);	/* worker.c */
int cmd_admin(int argc, char **argv);	/* admin.c */
int cmd_submit(int argc, char **argv);	/* client.c */
int cmd_status(int argc, char **argv);	/* client.c */
int cmd_results(int argc, char **argv); /* client.c */
int cmd_sandbox(int argc, char **argv); /* client.c */
/* Internal: spawned by serve, one per live sandbox (docs/sandbox-keeper.md). */
int cmd_sandbox_keeper(int argc, char **argv); /* keeper.c */

/* What the service's commands say on stderr (serve's and worker's log,
 * admin's notes), one line per call: "proctor: COMMAND: message", with
 * control characters turned to '?' (cli_say), so a message that quotes a
 * submission's text stays one line.  Defined in main.c. */
void service_log(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
