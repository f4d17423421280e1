/* proctor: the command-line entry point, a table of subcommands. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_assignment.h"
#include "cmd_class.h"
#include "cmd_doctor.h"
#include "cmd_grade.h"
#include "cmd_image.h"
#include "cmd_run.h"
#include "util.h"

#ifndef PROCTOR_VERSION
#define PROCTOR_VERSION "0.1.0"
#endif

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{"run", cmd_run, "run one program in a fresh sandbox with limits"},
	{"grade", cmd_grade, "grade one submission against an assignment"},
	{"class", cmd_class, "grade every submission in a directory, in parallel"},
	{"assignment", cmd_assignment, "check an assignment before students see it"},
	{"doctor", cmd_doctor, "say what this host supports and which isolation 'auto' uses"},
	{"image", cmd_image, "build, list and remove system images (docs/images.md)"},
};

/* The service's commands live in proctor-service (src/service/main.c). */
static const struct command service_commands[] = {
    {"serve", NULL, "answer the grading service's HTTP API (docs/service.md)"},
    {"worker", NULL, "grade jobs of the service's store, on any number of hosts"},
    {"admin", NULL, "tokens, assignments and budgets, on the service's store"},
    {"submit", NULL, "submit a file or directory to the service"},
    {"status", NULL, "one line about a submission"},
    {"results", NULL, "a submission's result document"},
    {"sandbox", NULL, "sandboxes on the service: run, exec, ls, kill"},
};

/* Exec proctor-service next to this program, or the installed one. */
static int exec_service(char **argv)
{
	char path[PATH_MAX];
	struct err e;

	if (own_program("proctor-service", X_OK, path, sizeof(path), &e) == 0) {
		argv[0] = path;
		execv(path, argv);
		err_set(&e, errno, "exec '%s'", path);
	}
	cli_say("%s: cannot run proctor-service: %s", argv[1], e.msg);
	return err_exit_status(ERR_INTERNAL);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: proctor COMMAND [OPTIONS]\n\n"
		   "Proctor grades untrusted programs inside throwaway sandboxes.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nthe grading service (docs/service.md):\n");
	for (size_t i = 0; i < sizeof(service_commands) / sizeof(service_commands[0]); i++)
		fprintf(f, "  %-10s %s\n", service_commands[i].name, service_commands[i].summary);
	fprintf(f, "\n'proctor COMMAND --help' describes a command; 'man proctor' has the rest.\n\n"
		   "EXIT STATUS\n"
		   "  0  run: the program succeeded; grade: a verdict was produced;\n"
		   "     doctor: some isolation works\n"
		   "  1  the program failed or hit a limit (doctor: no isolation works;\n"
		   "     image build: the build failed; assignment check: a check failed)\n"
		   "  2  usage error: bad option, value or path\n"
		   "  3  Proctor's own failure (class: a submission ended in status \"error\")\n"
		   "  4  results: the submission has no verdict yet\n"
		   "  130, 143  class: interrupted by SIGINT / SIGTERM (nothing graded is lost)\n");
}

int main(int argc, char **argv)
{
	/* Every directory and file Proctor makes gets the mode its code names,
	 * whatever umask the operator's shell or a service manager passed on
	 * (a umask of 077 would lock slot uids out of their own slot). */
	umask(022);
	if (argc < 2) {
		usage(stderr);
		return err_exit_status(ERR_USAGE);
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("proctor %s\n", PROCTOR_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof(service_commands) / sizeof(service_commands[0]); i++)
		if (strcmp(argv[1], service_commands[i].name) == 0)
			return exec_service(argv);
	return cli_usage_error("unknown command '%s' (try 'proctor --help')", argv[1]);
}
