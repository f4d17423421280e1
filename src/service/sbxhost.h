/* The serve side of live sandboxes: spawning a keeper per sandbox, reaping them, killing one (docs/sandbox-keeper.md). */
#ifndef PROCTOR_SERVICE_SBXHOST_H
#define PROCTOR_SERVICE_SBXHOST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "store/store.h"

/*
 * Safe from any HTTP thread: a keeper is started with posix_spawn (never a
 * fork of this threaded process) and remembered by pid, and serve's
 * background loop reaps exactly those pids and records how each sandbox
 * ended.  A keeper sets its own death signal: it dies with serve.
 */
struct sbx_host;

/* `exe`: proctor-service (this program), whose `sandbox-keeper` command a
 * keeper runs, through proctor-keeper beside it when that is there (the
 * same command in a program that starts fast); `state_dir`: --state-dir,
 * `slots`: --slots.  Makes STATE/service/sbx (root's, 0700). */
int sbx_host_new(const char *exe, const char *state_dir, unsigned slots, struct sbx_host **ret,
		 struct err *e);
void sbx_host_free(struct sbx_host *h);
/* Which host this is in the store's placement: hostname:state-dir. */
const char *sbx_host_key(const struct sbx_host *h);
unsigned sbx_host_slots(const struct sbx_host *h);

/*
 * Start the keeper of sandbox `id` with the create request `create` (its
 * members as docs/sandbox-keeper.md lists them; `op` and `max_slots` are
 * added here) and wait for it to be ready: 0 with its pid and socket path;
 * -1 with the keeper's own error (ERR_BUSY when the host has no free slot)
 * once it exited.
 */
int sbx_host_spawn(struct sbx_host *h, int64_t id, json_t *create, pid_t *ret_pid, char *socket,
		   size_t socket_len, struct err *e);
/* SIGKILL the keeper of sandbox `id` if this host spawned it and it runs. */
void sbx_host_kill(struct sbx_host *h, int64_t id);
/* How many keepers run (exited ones not reaped yet left out). */
size_t sbx_host_live(struct sbx_host *h);
/*
 * Reap the keepers that ended and record each end in the store (exit 10:
 * expired, 0: deleted, 11: failed, else lost).  Returns how many ended.
 * From serve's background loop only.
 */
size_t sbx_host_reap(struct sbx_host *h, struct store *st);

#endif
