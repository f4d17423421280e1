/* proctor: the command-line entry point, a table of subcommands. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "cmd_class.h"
#include "cmd_doctor.h"
#include "cmd_grade.h"
#include "cmd_image.h"
#include "cmd_run.h"

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
	{"doctor", cmd_doctor, "say what this host supports and which isolation 'auto' uses"},
	{"image", cmd_image, "build, list and remove system images (docs/images.md)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: proctor COMMAND [OPTIONS]\n\n"
		   "Proctor grades untrusted programs inside throwaway sandboxes.\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'proctor COMMAND --help' describes a command; 'man proctor' has the rest.\n\n"
		   "EXIT STATUS\n"
		   "  0  run: the program succeeded; grade: a verdict was produced;\n"
		   "     doctor: some isolation works\n"
		   "  1  the program failed or hit a limit (doctor: no isolation works;\n"
		   "     image build: the build failed)\n"
		   "  2  usage error: bad option, value or path\n"
		   "  3  Proctor's own failure (class: a submission ended in status \"error\")\n"
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
	return cli_usage_error("unknown command '%s' (try 'proctor --help')", argv[1]);
}
