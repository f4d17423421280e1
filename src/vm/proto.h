/* The host <-> guest agent protocol: frames and their fields (docs/vm-protocol.md). */
#ifndef PROCTOR_VM_PROTO_H
#define PROCTOR_VM_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * One byte channel (virtio-serial on QEMU, vsock on Firecracker later)
 * carries frames in both directions:
 *
 *   u8 version (PROTO_VERSION) | u8 type | u16 zero | u32 length | payload
 *
 * all little-endian, payload at most PROTO_MAX_PAYLOAD bytes.  A payload is
 * a sequence of fields: u32, u64 (little-endian) and byte strings (u32
 * length, then the bytes; no terminator).  A reader takes fields in the
 * order docs/vm-protocol.md lists them and refuses a frame with bytes left
 * over, a field cut short, or a string longer than its cap.
 *
 * This file has no dependency beyond libc: it is compiled into the static
 * guest agent as well as into proctor.  The host treats every byte from
 * the guest as hostile; the parsers here are what fuzz/fuzz_vmproto.c
 * feeds.
 */

#define PROTO_VERSION	  5
#define PROTO_HEADER	  8
#define PROTO_MAX_PAYLOAD (1u << 20)
/* File data travels in chunks of at most this many bytes. */
#define PROTO_CHUNK (256u * 1024)
/* Longest path, argument or environment string, and most of each. */
#define PROTO_MAX_STR  4096u
#define PROTO_MAX_ARGS 256u
#define PROTO_MAX_ENV  256u

enum proto_type {
	/* host -> guest */
	P_SETUP = 1,   /* fresh sandbox: seed, clock, writable tree */
	P_PUT = 2,     /* open a file for writing; P_DATA chunks follow, then P_PUT_END */
	P_DATA = 3,    /* a chunk of file data (both directions) */
	P_PUT_END = 4, /* close the file being put */
	P_MKDIR = 5,
	P_RUN = 6,
	P_GET = 7,     /* a file or a directory tree */
	P_QUIESCE = 8, /* about to be snapshotted: settle, drop caches */
	P_PING = 9,
	P_ZYGOTE = 10, /* start a template's zygote (docs/vm-protocol.md); payload as P_RUN */
	/* guest -> host */
	P_HELLO = 20,
	P_OK = 21,
	P_ERR = 22,
	P_OUT = 23, /* program output: u32 stream (1 stdout, 2 stderr), bytes */
	P_EXIT = 24,
	P_FILE = 25, /* a file of a P_GET answer; P_DATA chunks follow, then P_FILE_END */
	P_FILE_END = 26,
};

/* Flags of P_PUT and P_MKDIR (one at most): the put flags of sandbox.h.
 * PROTECTED: root's; HARNESS: root:1001, files & 0640, directories &
 * 0750; HARNESS_OWNED: 1001:1001 (a split run's harness), modes kept.
 * P_MKDIR only, with one of them: PARENT, the directory is a parent of
 * that put, made what put_parent_rule() (util.h) says (version 5). */
#define PROTO_PUT_PROTECTED	1u
#define PROTO_PUT_HARNESS	2u
#define PROTO_PUT_HARNESS_OWNED 4u
#define PROTO_PUT_PARENT	8u

/* Flags of P_RUN.  PRIVILEGED runs the program as the guest's root (still
 * chrooted, in the run cgroup, with /sys and cgroup2 mounted): only for
 * tests of Proctor itself inside a guest (`proctor run --privileged`),
 * never for submissions. */
#define PROTO_RUN_PRIVILEGED 1u
/* Start argv as a fork of the zygote (P_ZYGOTE) where the guest has one,
 * else as always: the same program, already started (docs/vm-protocol.md). */
#define PROTO_RUN_ZYGOTE 2u

/* Facts of P_EXIT, from which the host decides the verdict. */
#define PROTO_EXIT_EXITED      1u  /* exit_code valid */
#define PROTO_EXIT_SIGNALED    2u  /* signal valid */
#define PROTO_EXIT_EXEC_FAILED 4u  /* the program could not be started: message says why */
#define PROTO_EXIT_PIDS_HIT    8u  /* a fork/clone failed at the pids limit */
#define PROTO_EXIT_DISK_FULL   16u /* the writable tree was full */
#define PROTO_EXIT_OOM_KILL    32u /* the in-guest memory cgroup killed a process */
#define PROTO_EXIT_NOT_STARTED 64u /* the agent could not start it at all (the agent's fault) */

struct proto_exit {
	uint32_t flags;
	uint32_t killed_for; /* LIMIT_HIT_* bits the agent killed the program for */
	int32_t exit_code;
	int32_t signal;
	uint64_t cpu_ms, wall_ms, peak_memory_kib, peak_pids;
	uint64_t out_total, err_total; /* bytes written, sent or not */
	char message[256];
};

/* What P_RUN carries besides argv and env. */
struct proto_run_limits {
	uint64_t cpu_ms, wall_ms, memory_bytes, pids, fsize_bytes, nofile, output_bytes;
	uint32_t flags; /* PROTO_RUN_* */
	/* run_spec.time_factor in thousandths (1000: none; version 5): the
	 * wall limit applies to the guest's busy time + idle time * factor. */
	uint32_t factor_milli;
};

/* A P_RUN request as the agent parses it; strings are malloc'd
 * (proto_run_free).  peer_argv[0] is NULL unless it is a split run. */
struct proto_run {
	char *argv[PROTO_MAX_ARGS + 1];
	char *env[PROTO_MAX_ENV + 1];
	char *peer_argv[PROTO_MAX_ARGS + 1];
	char *peer_env[PROTO_MAX_ENV + 1];
	char stdin_path[PROTO_MAX_STR];
	struct proto_run_limits l;
};

struct proto_hello {
	uint32_t version;
	char agent[64];	 /* the agent's build: "proctor-agent 0.1.0" */
	char kernel[64]; /* the guest kernel's release */
};

/* ---- encoding: a growable buffer holding one frame ---- */
struct pbuf {
	unsigned char *data;
	size_t len, cap;
	bool failed; /* out of memory or over PROTO_MAX_PAYLOAD: do not send */
};

/* Start a frame of `type` in `b` (reusing its memory). */
void pbuf_start(struct pbuf *b, unsigned type);
void pbuf_u32(struct pbuf *b, uint32_t v);
void pbuf_u64(struct pbuf *b, uint64_t v);
void pbuf_bytes(struct pbuf *b, const void *p, size_t n);
void pbuf_str(struct pbuf *b, const char *s);
/* Fill in the length; 0 if the frame is ready to send, -1 if it failed. */
int pbuf_finish(struct pbuf *b);
void pbuf_free(struct pbuf *b);

/* ---- decoding: a reader over one received payload ---- */
struct preader {
	const unsigned char *p;
	size_t left;
	bool bad; /* a field was cut short or too long; every later read fails too */
};

void preader_init(struct preader *r, const void *payload, size_t len);
uint32_t preader_u32(struct preader *r);
uint64_t preader_u64(struct preader *r);
/* A byte string of at most `max` bytes; *len receives its length.  The
 * pointer is into the payload (not terminated); NULL when bad. */
const unsigned char *preader_bytes(struct preader *r, size_t max, size_t *len);
/* A string copied to buf (NUL-terminated), at most cap-1 bytes, without NUL
 * bytes inside; -1 (and bad) otherwise. */
int preader_str(struct preader *r, char *buf, size_t cap);
/* 0 when every field was read and nothing is left over. */
int preader_end(struct preader *r);

/* Parse a frame header: 0 with *type and *len, or -1 for a wrong version,
 * non-zero reserved bits or a length over PROTO_MAX_PAYLOAD. */
int proto_header(const unsigned char h[PROTO_HEADER], unsigned *type, uint32_t *len);

/* Guest answers, parsed on the host.  Each returns 0 or -1 (malformed). */
int proto_parse_hello(const void *payload, size_t len, struct proto_hello *ret);
int proto_parse_exit(const void *payload, size_t len, struct proto_exit *ret);
/* P_OUT: stream 1 or 2 and the data (pointer into payload). */
int proto_parse_out(const void *payload, size_t len, unsigned *stream, const unsigned char **data,
		    size_t *n);
/* P_FILE: a path relative to the asked path ("" for the file itself, else
 * "a/b" without "." or ".." components), its mode and size.  -2: a
 * well-formed frame whose path holds a control character, which the host
 * leaves out (sandbox.get_skipped); -1: malformed. */
int proto_parse_file(const void *payload, size_t len, char *path, size_t cap, uint32_t *mode,
		     uint64_t *size);
/* P_ERR: the agent's one-line message, with control characters replaced. */
int proto_parse_err(const void *payload, size_t len, char *msg, size_t cap);

/* P_RUN, parsed by the agent: 0, or -1 (malformed: counts out of range, a
 * string over its cap or holding a NUL, unknown flags, a stdin path that
 * is not proto_path_ok, bytes left over).  Free with proto_run_free()
 * either way. */
int proto_parse_run(const void *payload, size_t len, struct proto_run *q);
void proto_run_free(struct proto_run *q);

/* A relative path of one or more components, none empty, "." or "..". */
bool proto_path_ok(const char *p);

#endif
