/* libFuzzer target: the sandbox keeper's frames (service/sbxwire.c) as a receiver reads them. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "service/sbxwire.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A memory-backed descriptor holding len bytes, read from the start. */
static int memory_fd(const void *p, size_t len)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0 || write_all(fd, p, len) < 0 || lseek(fd, 0, SEEK_SET) < 0)
		abort();
	return fd;
}

/*
 * Read frames until one fails, as a keeper reads a call and serve an
 * answer, each with a small data cap; every frame read must survive a
 * send and a second read unchanged, and its error head (if it is one)
 * must come back as a kind of the table.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = memory_fd(data, size);
	json_t *head;
	void *body;
	size_t len;
	struct err e;

	for (int frames = 0; frames < 8 && sbx_recv(fd, &head, &body, &len, 4096, &e) == 0;
	     frames++) {
		if (!json_is_object(head) || len > 4096 || (len == 0) != (body == NULL))
			abort();
		if (sbx_error_of(head, &e) < 0 && (unsigned)e.kind >= ERR_KIND_COUNT)
			abort();
		int out = memfd_create("fuzz-out", MFD_CLOEXEC);
		json_t *again;
		void *body2;
		size_t len2;
		if (out < 0 || sbx_send(out, head, body, len, &e) < 0 ||
		    lseek(out, 0, SEEK_SET) < 0 ||
		    sbx_recv(out, &again, &body2, &len2, 4096, &e) < 0)
			abort();
		if (!json_equal(head, again) || len2 != len ||
		    (len && memcmp(body, body2, len) != 0))
			abort();
		json_decref(again);
		free(body2);
		close(out);
		json_decref(head);
		free(body);
	}
	close(fd);

	/* The same bytes read as a reader that cannot block takes them
	 * (sbx_frame_take over what has come): each frame it takes lies
	 * inside the bytes, and a prefix of the input never yields more. */
	const char *p = (const char *)data;
	size_t left = size;
	for (int frames = 0; frames < 8; frames++) {
		const char *d;
		size_t dlen, used;
		int r = sbx_frame_take(p, left, 4096, &head, &d, &dlen, &used, &e);
		if (r <= 0)
			break;
		if (!json_is_object(head) || used > left || dlen > 4096 || d < p ||
		    d + dlen != p + used)
			abort();
		json_decref(head);
		if (sbx_frame_take(p, used - 1, 4096, &head, &d, &dlen, &len, &e) == 1)
			abort(); /* one byte short is never a whole frame */
		p += used;
		left -= used;
	}
	return 0;
}
