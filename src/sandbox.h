/* The sandbox interface: one set of verbs, backends chosen at run time. */
#ifndef PROCTOR_SANDBOX_H
#define PROCTOR_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"
#include "result.h"
#include "runlimits.h"

/*
 * Theory of operation
 * -------------------
 * A sandbox is a throwaway place to run untrusted programs: create() leases
 * a slot and makes an empty writable tree (/work, /tmp), put() copies host
 * files in, run() executes one program with its own limits and fills a
 * run_result (any number of runs share the writable tree, e.g. build then
 * test), get() copies files out, destroy() kills everything that is
 * left and frees the slot.  After destroy() no process, mount, cgroup or
 * file of the sandbox remains; only the permanent per-slot cgroups and the
 * slot's lock file stay for reuse.
 *
 * Backends implement the verbs behind a const ops table.  The jail
 * (namespaces + cgroups + seccomp) works wherever Proctor runs as root; the
 * microVM backend (a QEMU guest per sandbox) implements the same table.
 * probe() says whether a backend can work on this host and, if not, why.
 * Both stand on the host layer (host/: slot leases, cgroups, the seccomp
 * filter, the state directory) and neither includes the other's headers;
 * grading reaches a backend only through this table, and commands pick one
 * through the registry below.
 */

struct sandbox;

/*
 * Slot N runs as uid = gid = SANDBOX_UID_BASE + N.  Far above the ranges
 * distributions hand out (system, regular, systemd DynamicUser 61184-65519,
 * subordinate ids for containers from 100000), so a slot uid is never a
 * real account's.
 */
#define SANDBOX_UID_BASE 1600000000u

/* Where slots, images and snapshots live unless --state-dir or
 * $PROCTOR_STATE_DIR says otherwise. */
#define DEFAULT_STATE_DIR "/var/lib/proctor"

struct sandbox;

/*
 * A template: what every sandbox of one assignment starts with before its
 * submission arrives (the hidden tests, Proctor's runtime, a zygote of the
 * test runner; docs/vm.md, "Assignment snapshots").  A backend that can
 * keep one (the microVM: a snapshot of the guest after prepare() ran,
 * under a key of its own and `key`) creates each sandbox from it and says
 * so in sandbox.templated; one that cannot ignores it, and the caller does
 * prepare()'s work itself.  `key` must change whenever what prepare() puts
 * or starts does (the assignment's digest, Proctor's version, the limits);
 * `name` says whose it is, for clean-up (at most one kept per name and
 * machine).
 */
struct sandbox_template {
	const char *key;
	const char *name;
	int (*prepare)(struct sandbox *sb, void *ctx, struct err *e);
	void *ctx;
};

/* Options fixed for the life of a sandbox. */
struct sandbox_options {
	const char *state_dir; /* slot locks and scratch mounts live here */
	unsigned max_slots;    /* how many sandboxes may exist at once on this host */
	uid_t uid_base;	       /* slot N runs as uid/gid uid_base + N */
	uint64_t disk_bytes;   /* size of the writable tree */
	const char
	    *system_dir; /* read-only system tree: an image's rootfs, or NULL for the host's */
	uint64_t memory_bytes; /* the most memory any run will ask for (0: the default);
				  a microVM's RAM shape is chosen by it */
	const struct sandbox_template *tmpl; /* or NULL */
	/* Lease a slot only if one is free now: a host with every slot taken
	 * fails create() at once with ERR_BUSY, instead of waiting up to
	 * SLOT_WAIT_MS for one (host/slot.h).  For a caller that has its own
	 * answer to a full host (the sandbox API's 429 `capacity`).  The jail
	 * honours it; the microVM backend still waits. */
	bool slot_no_wait;
};

/* One program to run in a sandbox. */
struct run_spec {
	char *const *argv; /* argv[0] is looked up in the sandbox's PATH */
	char *const *env;  /* NAME=VALUE added to the fixed minimal set; NULL-terminated */
	size_t env_count;
	int stdin_fd;		/* an open regular file, or -1 for empty input */
	const char *stdin_path; /* or a file already in the sandbox (e.g. put there); NULL: none */
	struct limits limits;
	/* The directory the program starts in: NULL for /work; else a path in
	 * the sandbox's view, absolute or relative to /work, changed to as the
	 * program's own identity after it dropped privilege, so it reaches
	 * only what the program could reach itself.  A directory that is not
	 * there, or not its to enter, ends the run `nonzero_exit` (exit code
	 * 127, as a program that cannot be executed) with a message: never an
	 * error of run().  The microVM backend refuses any but NULL
	 * (ERR_UNAVAILABLE) for now. */
	const char *cwd;
	/* Run as the sandbox's root: only the microVM backend can (the guest is
	 * the boundary), and only `proctor run --privileged` asks, to test
	 * Proctor itself inside a guest.  Never set for a submission. */
	bool privileged;
	/*
	 * A split run (docs/grading.md, "Tamper-proof runs"), or NULL: the
	 * program peer_argv runs beside argv, started at the same time, in
	 * the same limits, cgroups and namespaces.  argv then runs as the
	 * sandbox's harness identity (SANDBOX_HARNESS_UID_OFFSET above the
	 * program's uid in the jail, 1001 in a guest), which files put with
	 * SANDBOX_PUT_HARNESS* are for; peer_argv runs as the program's
	 * identity, like every other run, with peer_env instead of env.
	 * Each gets one end of a connected AF_UNIX stream socket as fd
	 * SANDBOX_CHANNEL_FD.  The run ends when argv's program exits: its
	 * status and usage are the run's, and the peer is killed with
	 * everything else that is left.  Both write to the run's output.
	 */
	char *const *peer_argv;
	char *const *peer_env;
	size_t peer_env_count;
	/* Start argv as a fork of the sandbox's zygote (zygote() below) where
	 * it has one; else, or when that fails, by exec as always.  Only for
	 * the argv the zygote was started to serve. */
	bool zygote;
	/* The backend's slowdown (sandbox_ops.time_factor, > 1 only for a
	 * microVM under TCG) by which the caller scaled limits.cpu_ms and
	 * limits.wall_ms; 0 or 1: none.  The slowdown is for computing, not
	 * for waiting: the wall limit then applies to the guest's busy time
	 * plus its idle time times the factor, so a sleep counts as long as
	 * in the jail (docs/vm.md, "The slowdown factor"). */
	double time_factor;
	/* Optional (NULL: none): called with each piece of the program's
	 * output as the supervisor reads it (stream 1 stdout, 2 stderr),
	 * before it is kept in the result, for a caller that shows output as
	 * it comes (the sandbox API's streamed exec).  It runs in the
	 * supervisor's loop, so it must not block for long: limits are
	 * checked between reads.  The jail calls it; the microVM backend does
	 * not yet (the result holds everything all the same). */
	void (*on_output)(void *ctx, int stream, const char *buf, size_t len);
	void *on_output_ctx;
};

/* One entry of a directory of the writable tree (sandbox_ops.list). */
struct sandbox_dirent {
	char name[256];
	char type; /* 'f' regular file, 'd' directory, 'l' symlink (never followed), 'o' other */
	uint64_t size;	  /* st_size: a symlink's is its target's length */
	unsigned mode;	  /* the permission bits, 07777 */
	int64_t mtime_ms; /* last modification, ms since the epoch */
};

/* The most entries list() returns for one directory. */
#define SANDBOX_LIST_MAX 10000

/* The descriptor both programs of a split run hold their channel on. */
#define SANDBOX_CHANNEL_FD 3

/* The harness identity of a split run in the jail: the slot's uid (and
 * gid) plus this, so also never a real account's nor another slot's. */
#define SANDBOX_HARNESS_UID_OFFSET 0x20000000u

/* The verbs of a backend.  Every function that can fail returns 0 or -1
 * and fills `e`.  A run whose program fails is not a failure of run():
 * the verdict is in the result. */
struct sandbox_ops {
	const char *name;
	/* 0 if the backend can work here; else -1 with the reason in `e`. */
	int (*probe)(struct err *e);
	/* Process-wide setup, called once by a command before it creates
	 * sandboxes and before it starts any thread. */
	int (*prepare)(struct err *e);
	int (*create)(const struct sandbox_options *opts, struct sandbox **ret, struct err *e);
	/* Copy a host file or directory to a path in the writable tree, by
	 * the one rule of tree_put() (host/tree.h): regular files and
	 * directories only; anything else below a directory fails the put. */
	int (*put)(struct sandbox *sb, const char *host_path, const char *sandbox_path,
		   unsigned flags, struct err *e);
	int (*run)(struct sandbox *sb, const struct run_spec *spec, struct run_result *res,
		   struct err *e);
	/* Copy a regular file, or a directory tree of regular files (links and
	 * special files are skipped), of the writable tree out to a host path;
	 * at most the sandbox's disk size in all.  A file is written 0755 when
	 * any execute bit is set in the sandbox, 0644 otherwise; an entry whose
	 * name holds a control character is left out (sandbox_get_skip()); a
	 * tree nested deeper than TREE_MAX_DEPTH fails.  Refusals that are the
	 * caller's say so: ERR_NOT_FOUND for a path that is not there,
	 * ERR_INPUT for a symlink (on the way or at the end), a FIFO or a
	 * device (put() likewise: ERR_INPUT for a destination that collides,
	 * is full, or has a symlink on its way); a path sandbox_path_rel()
	 * refuses is ERR_USAGE. */
	int (*get)(struct sandbox *sb, const char *sandbox_path, const char *host_path,
		   struct err *e);
	/* Optional (NULL: the backend cannot list).  The entries of the
	 * directory sandbox_path of the writable tree, sorted by name, in a
	 * malloc'd array the caller frees (*ret_n may be 0, *ret then NULL):
	 * one lstat each, no link followed, at most SANDBOX_LIST_MAX of them;
	 * entries whose names hold a control character are left out.
	 * Returns 0, or 1 when the directory held more entries than were
	 * returned; -1 with ERR_NOT_FOUND when it does not exist, ERR_INPUT
	 * when it is not a directory or a symlink is on the way, and
	 * sandbox_path_rel()'s ERR_USAGE for a path it refuses. */
	int (*list)(struct sandbox *sb, const char *sandbox_path, struct sandbox_dirent **ret,
		    size_t *ret_n, struct err *e);
	/* Optional (NULL: the backend cannot).  Remove the entry sandbox_path
	 * of the writable tree: a file, a link (never followed), an empty
	 * directory, or with `recursive` a whole tree.  ERR_NOT_FOUND when it
	 * is not there, ERR_INPUT for a link on the way, a directory not empty
	 * or the top of the tree, sandbox_path_rel()'s ERR_USAGE. */
	int (*remove)(struct sandbox *sb, const char *sandbox_path, bool recursive, struct err *e);
	/* Kill, unmount, remove, release.  Accepts NULL. */
	void (*destroy)(struct sandbox *sb);
	/* What an assignment's time limits are multiplied by on this backend
	 * and host: its slowdown against native execution.  1 for the jail;
	 * the microVM's is in vm/vm.h.  *measured (NULL: not asked) says
	 * whether the factor is one measured on this host and stored below
	 * state_dir, rather than a fixed value. */
	double (*time_factor)(const char *state_dir, bool *measured);
	/* Optional (NULL: none kept).  Sandboxes this process starts ahead so
	 * that create() returns sooner (the microVM's pre-started QEMUs, the
	 * jail's prepared jails): pool_hint(n) asks for n, unless the user
	 * chose ($PROCTOR_VM_POOL, $PROCTOR_JAIL_POOL); pool_drain() destroys
	 * those kept now (also done at exit()); pool_fill() makes the missing
	 * ones now, for a backend that does not make them in the background
	 * (the jail's), called by a process about to wait for work. */
	void (*pool_hint)(unsigned n);
	void (*pool_drain)(void);
	void (*pool_fill)(void);
	/* Optional (NULL: none).  In a template's prepare(): start spec's argv
	 * (a split run's harness, proctor_split.py's `zygote` mode) as the
	 * harness identity, loaded and waiting to fork once per run that asks
	 * (run_spec.zygote).  0 once it says it is ready. */
	int (*zygote)(struct sandbox *sb, const struct run_spec *spec, struct err *e);
	/* Optional (NULL: nothing to do ahead).  Start now, while the caller
	 * is idle, what sb's next run() needs before it knows its spec (the
	 * jail: its init, which builds the root and joins the run's groups
	 * while it waits), so that the run starts sooner.  Nothing of a run
	 * is decided by it: the run's limits are set when the run starts.
	 * Does nothing when that is made already; a failure is left for the
	 * run to meet. */
	void (*warm)(struct sandbox *sb);
};

/* Every backend embeds this first, so the generic helpers can dispatch. */
struct sandbox {
	const struct sandbox_ops *ops;
	/* A host uid unique to this sandbox while it exists (its slot's), for
	 * helpers that handle what the submission produced without privilege. */
	uid_t untrusted_uid;
	/* Created from sandbox_options.tmpl, whose prepare() has run; then
	 * snapshot names the snapshot it was restored from. */
	bool templated;
	char snapshot[65];
	/* The last get()'s entries left out because their names hold control
	 * characters (the host writes none: the same on every backend), and
	 * the first of them with those characters as '?'. */
	unsigned get_skipped;
	char get_skipped_first[256];
};

/* Flags of put(). */
enum {
	/* Owned by root and not writable by the program; in /work (a sticky,
	 * root-owned directory) the program can neither change, delete nor
	 * rename it.  For hidden tests and instructor files. */
	SANDBOX_PUT_PROTECTED = 1u << 0,
	/* Readable by the harness of a split run only: root-owned, group the
	 * harness's, files 0640 and directories 0750 (0644/0755 otherwise
	 * cut down), so the program can neither read nor change it.  For
	 * hidden tests whose runner never lets the program read them. */
	SANDBOX_PUT_HARNESS = 1u << 1,
	/* Owned by the harness identity (uid and gid), modes kept: the report
	 * directory of a split run, which only the harness may write. */
	SANDBOX_PUT_HARNESS_OWNED = 1u << 2,
};

/* The backends compiled in, in order of preference for `auto`. */
const struct sandbox_ops *const *sandbox_backends(size_t *count);

/* The backend called `name` ("jail", "vm"), whether or not it can work on
 * this host (see probe()); NULL when none is. */
const struct sandbox_ops *sandbox_backend(const char *name);

/* Pick a backend by name ("auto", "jail", "vm").  `why` receives a sentence
 * saying which backend was picked and why.  auto picks the microVM only where
 * it runs at native speed (/dev/kvm) and an image is pinned to boot. */
int sandbox_select(const char *name, bool have_image, const struct sandbox_ops **ret, char *why,
		   size_t why_len, struct err *e);

/* Every backend's pool_drain(), for a process about to _exit() (a worker). */
void sandbox_pool_drain(void);

/* Every backend's pool_fill(), for a process about to wait for work. */
void sandbox_pool_fill(void);

/*
 * Where the writable tree keeps the program's own top-level directories:
 * /grader/x is SANDBOX_TREE_ROOT "/grader/x" in the tree, and the jail
 * binds each directory there at /NAME when it builds a run's root
 * (jail/mount.c).  The microVM backend has none yet (ERR_UNAVAILABLE).
 */
#define SANDBOX_TREE_ROOT "root"

/*
 * Map a path as the program sees it to one relative to the writable tree:
 * "a/b" and "/work/a/b" -> "work/a/b", "/tmp/x" -> "tmp/x", and any other
 * absolute path outside the system's directories (/usr, /etc, /bin,
 * /sbin, /lib*, /proc, /dev, /sys, /var, /run) below SANDBOX_TREE_ROOT:
 * "/grader/t.py" -> "root/grader/t.py".  A system directory, "/", a "."
 * or ".." component or an empty path is refused (ERR_USAGE), naming the
 * path; trailing slashes are dropped.
 */
int sandbox_path_rel(const char *sandbox_path, char *buf, size_t len, struct err *e);

/* Whether /dev/kvm can be opened for reading and writing. */
bool host_has_kvm(char *why, size_t why_len);

static inline int sandbox_put(struct sandbox *sb, const char *h, const char *s, unsigned flags,
			      struct err *e)
{
	return sb->ops->put(sb, h, s, flags, e);
}
static inline int sandbox_get(struct sandbox *sb, const char *s, const char *h, struct err *e)
{
	sb->get_skipped = 0;
	sb->get_skipped_first[0] = '\0';
	return sb->ops->get(sb, s, h, e);
}

/* Note an entry get() left out: its name (below the path asked for)
 * holds control characters. */
void sandbox_get_skip(struct sandbox *sb, const char *name);

static inline int sandbox_run(struct sandbox *sb, const struct run_spec *spec,
			      struct run_result *res, struct err *e)
{
	return sb->ops->run(sb, spec, res, e);
}
static inline void sandbox_warm(struct sandbox *sb)
{
	if (sb->ops->warm)
		sb->ops->warm(sb);
}
static inline void sandbox_destroy(struct sandbox *sb)
{
	if (sb)
		sb->ops->destroy(sb);
}

#endif
