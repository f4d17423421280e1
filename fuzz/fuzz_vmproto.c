/* libFuzzer target: the host's parsing of guest bytes (vm/proto.c) over a stream of frames. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vm/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A parsed string: terminated inside its buffer and one printable line. */
static void check_line(const char *s, size_t cap)
{
	const char *end = memchr(s, '\0', cap);

	if (!end)
		abort();
	for (; s < end; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			abort();
}

/* What the host does with one frame of a guest's answer; false where it kills the VM. */
static bool one_frame(unsigned type, const unsigned char *p, size_t len)
{
	switch (type) {
	case P_HELLO: {
		struct proto_hello h;
		if (proto_parse_hello(p, len, &h) < 0)
			return false;
		check_line(h.agent, sizeof(h.agent));
		check_line(h.kernel, sizeof(h.kernel));
		return true;
	}
	case P_EXIT: {
		struct proto_exit x;
		if (proto_parse_exit(p, len, &x) < 0)
			return false;
		if ((x.flags & PROTO_EXIT_EXITED) && (x.exit_code < 0 || x.exit_code > 255))
			abort();
		if ((x.flags & PROTO_EXIT_SIGNALED) && (x.signal < 1 || x.signal > 64))
			abort();
		if ((x.flags & PROTO_EXIT_EXITED) && (x.flags & PROTO_EXIT_SIGNALED))
			abort();
		if (x.killed_for >= 1u << 9)
			abort();
		check_line(x.message, sizeof(x.message));
		return true;
	}
	case P_OUT: {
		unsigned stream;
		const unsigned char *d;
		size_t n;
		if (proto_parse_out(p, len, &stream, &d, &n) < 0)
			return false;
		if ((stream != 1 && stream != 2) || !d || d < p || n > len || d + n != p + len)
			abort();
		return true;
	}
	case P_FILE: {
		char path[PROTO_MAX_STR];
		uint32_t mode;
		uint64_t size;
		if (proto_parse_file(p, len, path, sizeof(path), &mode, &size) < 0)
			return false;
		check_line(path, sizeof(path));
		if ((path[0] && !proto_path_ok(path)) || path[0] == '/' || mode > 0777)
			abort();
		return true;
	}
	case P_ERR: {
		char msg[512];
		if (proto_parse_err(p, len, msg, sizeof(msg)) < 0)
			return false;
		check_line(msg, sizeof(msg));
		return true;
	}
	case P_DATA: {
		struct preader r;
		const unsigned char *d;
		size_t n;
		preader_init(&r, p, len);
		d = preader_bytes(&r, PROTO_MAX_PAYLOAD, &n);
		if (!d || preader_end(&r) < 0)
			return false;
		if (d != p + 4 || n != len - 4)
			abort();
		return true;
	}
	case P_OK:
	case P_FILE_END:
		return len == 0;
	default:
		return false; /* an unexpected frame: the host kills the VM */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	while (size >= PROTO_HEADER) {
		unsigned type;
		uint32_t len;
		unsigned char *payload;
		bool go_on;

		if (proto_header(data, &type, &len) < 0)
			break;
		if (len > PROTO_MAX_PAYLOAD)
			abort();
		data += PROTO_HEADER;
		size -= PROTO_HEADER;
		if (len > size)
			break; /* the host would wait for the rest, then time out */
		/* The payload in a buffer of exactly its length, as the host's parsers must
		 * not read past the frame even where the channel buffer goes on. */
		payload = malloc(len ? len : 1);
		if (!payload)
			abort();
		memcpy(payload, data, len);
		go_on = one_frame(type, payload, len);
		free(payload);
		if (!go_on)
			break;
		data += len;
		size -= len;
	}
	return 0;
}
