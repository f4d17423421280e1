/* proctor-service: the grading service's commands; `proctor
 * serve|worker|admin|submit|status|results` runs it. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <curl/curl.h>

#include "cli.h"
#include "service/commands.h"

/*
 * A program of its own, not a part of `proctor`: the service links an HTTP
 * server, two database clients and an HTTP client, while `proctor` stays a
 * small static binary that starts fast for every sandboxed run.  `proctor`
 * execs this program for the service's commands, so both spellings work.
 */

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
    {"serve", cmd_serve, "answer the service's HTTP API (and grade, with --workers)"},
    {"worker", cmd_worker, "grade jobs of the service's store"},
    {"admin", cmd_admin, "tokens, assignments and budgets, on the store"},
    {"submit", cmd_submit, "submit a file or directory to the service"},
    {"status", cmd_status, "one line about a submission"},
    {"results", cmd_results, "a submission's result document"},
    {"sandbox", cmd_sandbox, "sandboxes on the service: run, exec, ls, kill"},
    /* Internal, so not listed: serve spawns it (docs/sandbox-keeper.md). */
    {"sandbox-keeper", cmd_sandbox_keeper, NULL},
};

void service_log(const char *command, const char *fmt, ...)
{
	char line[1600];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	cli_say("%s: %s", command, line);
}

int main(int argc, char **argv)
{
	umask(022);
	if (argc >= 2)
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (strcmp(argv[1], commands[i].name) == 0) {
				curl_global_init(CURL_GLOBAL_DEFAULT);
				int rc = commands[i].fn(argc - 1, argv + 1);
				curl_global_cleanup();
				return rc;
			}
	FILE *f = argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0)
		      ? stdout
		      : stderr;
	fprintf(f, "usage: proctor COMMAND [OPTIONS]\n\nthe grading service's commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (commands[i].summary)
			fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	return f == stdout ? 0 : 2;
}
