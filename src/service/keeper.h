/* What the sandbox keeper's files share (keeper.c: the process and exec; keeper_files.c: files). */
#ifndef PROCTOR_SERVICE_KEEPER_H
#define PROCTOR_SERVICE_KEEPER_H

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "image/image.h"
#include "sandbox.h"

/* Exit statuses: serve records a sandbox's end from them (the doc's table). */
#define KEEPER_EXIT_DESTROYED 0
#define KEEPER_EXIT_LEASE     10
#define KEEPER_EXIT_CREATE    11
#define KEEPER_EXIT_ORPHANED  12 /* the server died while it waited: it destroyed the sandbox */
#define KEEPER_EXIT_IDLE      13 /* no call came for the idle timeout */

#define SECRET_LEN     64
#define ENV_MAX	       256	  /* variables of the create's env, and of an exec's */
#define ENV_VALUE_MAX  32768	  /* bytes of one value */
#define ARGV_MAX       4096	  /* arguments of one exec */
#define ARGV_BYTES_MAX (1u << 20) /* their bytes in all */
#define OUTPUT_MAX     (1u << 20) /* kept per stream of an exec's output */
#define LEASE_MS_MAX   (7ull * 86400000ull)
#define PATH_ARG_MAX   4095
#define KEEPER_TOPS_MAX 64 /* as the jail binds (jail/mount.c) */
/* A call that stalls mid-frame (a caller that died holding the
 * connection) must not hold the sandbox's only thread for long. */
#define IO_TIMEOUT_S 30

struct keeper_options {
	const char *state_dir;
	const char *socket;
	unsigned parent;
	unsigned ready_fd;
};

struct keeper {
	int64_t id;
	const char *state_dir;
	char secret[SECRET_LEN + 1];
	unsigned vcpu;
	uint64_t memory_bytes, disk_bytes;
	uint64_t lease_end_ms; /* monotonic_ms() */
	uint64_t idle_ms;      /* no call for this long ends the sandbox; 0: never */
	uint64_t last_call_ms; /* monotonic_ms() at the end of the last call */
	char **env;	       /* "NAME=VALUE" of the create, added to every exec's */
	size_t n_env;
	struct image_info img; /* the sandbox's system tree: lives as long as it */
	const struct sandbox_ops *ops;
	struct sandbox *sb;
	double time_factor; /* the backend's slowdown (>1: a microVM under TCG) */
	char dir[PATH_MAX]; /* DIR/service/sbx: the socket and the transfers' temporary files */
	int dir_fd;
	const char *socket;
	int listen_fd;
	bool destroy_asked;
	/* The program's own top-level directories put so far (/grader): what a
	 * snapshot takes beside /work and /tmp (programs cannot make one). */
	char tops[KEEPER_TOPS_MAX][NAME_MAX + 1];
	unsigned n_tops;
};

/* After a put that succeeded at the tree path `rel`: remember its top. */
void keeper_note_top(struct keeper *k, const char *rel);

/* The `path` member, and the path below the writable tree it names (a
 * path sandbox_path_rel() refuses is ERR_INPUT). */
int member_path(const json_t *head, const char **ret, char *rel, size_t rel_len, struct err *e);
/* A temporary file name below k->dir, for one transfer. */
int temp_name(char *buf, size_t cap, const char *prefix, struct err *e);
/* Send `answer` (NULL: out of memory) and `data`, and drop the answer. */
int send_answer(int fd, json_t *answer, const void *data, size_t len, struct err *e);

/* "NAME=VALUE" strings of the object obj[key] (absent or null: none)
 * appended to *v; env_free() frees them. */
int env_append(const json_t *obj, const char *key, char ***v, size_t *n, struct err *e);
void env_free(char **v, size_t n);

/* The calls (keeper_exec.c, keeper_files.c): one frame in, the answer out. */
typedef int keeper_op(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
		      struct err *e);
keeper_op op_exec, op_write, op_read, op_list, op_stat, op_remove, op_mkdir, op_upload, op_download,
    op_snapshot, op_restore;

#endif
