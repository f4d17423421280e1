/* proctor-keeper: `proctor-service sandbox-keeper` alone, in a program that starts fast. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "service/commands.h"

/*
 * serve spawns one keeper per sandbox (docs/sandbox-keeper.md), on the way
 * of every create.  proctor-service, which also holds the command, links
 * an HTTP server, two database clients and an HTTP client: 48 shared
 * libraries whose loading and relocation took 8 ms of CPU, 15 ms of a
 * busy server's create.  This program links only the jail and the
 * keeper's own files, statically where proctor is.  It takes the same
 * arguments, the command's name first.
 */
int main(int argc, char **argv)
{
	umask(022);
	if (argc >= 2 && strcmp(argv[1], "sandbox-keeper") == 0)
		return cmd_sandbox_keeper(argc - 1, argv + 1);
	fprintf(stderr, "usage: proctor-keeper sandbox-keeper OPTIONS (internal: serve runs it; "
			"docs/sandbox-keeper.md)\n");
	return 2;
}
