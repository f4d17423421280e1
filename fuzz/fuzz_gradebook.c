/* libFuzzer target: gradebook_resume() on any file: no crash, rows only from valid results, the file left ending in a whole line. */
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grade/gradebook.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	const char *names[] = {"alice", "bob", "b\xc3\xa9", "erin.zip"};
	struct gradebook *g = gradebook_new();
	struct err e;
	int fd;

	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz_gradebook.%d.jsonl", (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (!g || fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	close(fd);
	for (size_t i = 0; i < 4; i++)
		if (gradebook_add(g, names[i], &e) < 0)
			abort();
	gradebook_sort(g);
	g->line_max = 4096; /* lines past the cap within a short input */
	if (gradebook_set_out(g, path, true, &e) < 0 || gradebook_resume(g, &e) < 0)
		abort();
	for (size_t i = 0; i < g->n; i++) {
		const struct gradebook_row *r = &g->subs[i].row;
		if (!r->present)
			continue;
		if (!r->status[0] || strspn(r->status, "abcdefghijklmnopqrstuvwxyz_") !=
					 strlen(r->status))
			abort();
		if (r->reason && (!r->reason[0] || strlen(r->reason) > GRADEBOOK_REASON_MAX))
			abort();
	}
	/* What is left ends in a newline (or is empty): the next append is a line of its own. */
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) < 0)
		abort();
	long end = ftell(f);
	if (end > 0) {
		fseek(f, -1, SEEK_END);
		if (fgetc(f) != '\n')
			abort();
	}
	fclose(f);
	gradebook_free(g);
	unlink(path);
	return 0;
}
