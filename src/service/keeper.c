/* proctor-keeper sandbox-keeper: the process that holds one live sandbox of the sandbox API. */

/*
 * Theory of operation (docs/sandbox-keeper.md)
 * -------------------
 *
 *   proctor serve (HTTP threads, root)
 *     | posix_spawn, a socketpair end as --ready-fd: the create frame in,
 *     | {"ok": true} or an error frame out
 *     v
 *   keeper (this file: one per sandbox, single-threaded, root)
 *     | sandbox_ops of the jail: create, put, run, get, list, destroy
 *     v
 *   the sandbox (jail/jail.c: its init and the program, slot uid)
 *
 * serve talks to the keeper over an AF_UNIX socket in DIR/service/sbx
 * (root's, 0700; the socket 0600; each end checks the other is root), one
 * connection per call: one frame in, one frame out (service/sbxwire.h).
 * Every frame carries the sandbox's secret, compared in constant time.
 * The keeper never trusts what the sandbox's programs left behind: files
 * cross through the jail's put and get, which open nothing outside the
 * sandbox's tree and follow no link.
 *
 * Three things end a keeper, each with its own exit status: a `destroy`
 * call (0), the end of its lease (10: it waits for calls with the time
 * left as its poll timeout and clamps each exec's wall limit to it), and
 * its parent's death (SIGKILL by PR_SET_PDEATHSIG; the jail is built so
 * that killing its holder leaves nothing running or mounted; while it
 * waits for a call it watches the parent's pidfd instead, destroys the
 * sandbox and exits 12).  A sandbox that could not be created is 11, its
 * error sent on the ready descriptor.  Between calls the keeper starts the
 * next exec's init ahead (sandbox_warm()), so an exec only sends its run.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <nettle/memops.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capbuf.h"
#include "cli.h"
#include "host/statedir.h"
#include "image/image.h"
#include "result.h"
#include "runlimits.h"
#include "sandbox.h"
#include "service/commands.h"
#include "service/jsonreq.h"
#include "service/sbxwire.h"
#include "util.h"

#include "service/keeper.h"

/* ---- the request's members ---------------------------------------------- */

static bool env_name_ok(const char *name)
{
	if (!name[0] || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (const char *p = name; *p; p++)
		if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9')))
			return false;
	return true;
}

/* Append the members of the object `env` (absent or null: none) to *v as
 * malloc'd "NAME=VALUE" strings. */
int env_append(const json_t *obj, const char *key, char ***v, size_t *n, struct err *e)
{
	const json_t *env = json_object_get(obj, key);
	const char *name;
	json_t *value;

	if (!env || json_is_null(env))
		return 0;
	if (!json_is_object(env))
		return err_setk(e, ERR_INPUT, 0, "'%s' must be an object of strings", key);
	if (json_object_size(env) > ENV_MAX)
		return err_setk(e, ERR_INPUT, 0, "'%s' has more than %d variables", key, ENV_MAX);
	char **nv = realloc(*v, (*n + json_object_size(env) + 1) * sizeof(char *));
	if (!nv)
		return err_set(e, ENOMEM, "'%s'", key);
	*v = nv;
	json_object_foreach((json_t *)env, name, value)
	{
		const char *s = json_string_value(value);
		if (!env_name_ok(name))
			return err_setk(e, ERR_INPUT, 0,
					"'%s': a variable's name is letters, digits and '_', not "
					"starting with a digit",
					key);
		if (!s || json_string_length(value) > ENV_VALUE_MAX)
			return err_setk(
			    e, ERR_INPUT, 0,
			    "'%s': the value of %s must be a string of at most %d bytes", key, name,
			    ENV_VALUE_MAX);
		size_t len = strlen(name) + json_string_length(value) + 2;
		char *kv = malloc(len);
		if (!kv)
			return err_set(e, ENOMEM, "'%s'", key);
		snprintf(kv, len, "%s=%s", name, s);
		(*v)[(*n)++] = kv;
		(*v)[*n] = NULL;
	}
	return 0;
}

void env_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static bool hex_ok(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

/* The `path` member, and the path below the writable tree it names: a path
 * sandbox_path_rel() refuses (not below /work or /tmp, "." or "..") is
 * the caller's, ERR_INPUT (docs/sandbox-keeper.md). */
int member_path(const json_t *head, const char **ret, char *rel, size_t rel_len,
		       struct err *e)
{
	if (jsonreq_string(head, "path", true, PATH_ARG_MAX, ret, e) < 0)
		return -1;
	if (sandbox_path_rel(*ret, rel, rel_len, e) < 0)
		return err_classify(e, ERR_INPUT);
	return 0;
}

void keeper_note_top(struct keeper *k, const char *rel)
{
	size_t n = strlen(SANDBOX_TREE_ROOT), len;
	const char *top = rel + n + 1;

	if (strncmp(rel, SANDBOX_TREE_ROOT "/", n + 1) != 0)
		return; /* /work or /tmp: always taken */
	len = strcspn(top, "/");
	if (len == 0 || len > NAME_MAX)
		return;
	for (unsigned i = 0; i < k->n_tops; i++)
		if (strlen(k->tops[i]) == len && strncmp(k->tops[i], top, len) == 0)
			return;
	if (k->n_tops < KEEPER_TOPS_MAX)
		snprintf(k->tops[k->n_tops++], sizeof(k->tops[0]), "%.*s", (int)len, top);
}

/* ---- creating the sandbox ------------------------------------------------ */

static int parse_create(struct keeper *k, const json_t *head, const char **image,
			const char **isolation, unsigned *max_slots, uint64_t *lease_ms,
			struct err *e)
{
	static const char *const members[] = {"op",   "id",	    "secret",	"image",
					      "vcpu", "memory_mib", "disk_mib", "lease_ms",
					      "env",  "max_slots",  "idle_ms",	"isolation", NULL};
	const char *op, *secret;
	int64_t id = 0, vcpu = 1, mem = 0, disk = 0, lease = 0, idle = 0, slots = CLI_DEFAULT_SLOTS;

	if (jsonreq_only(head, members, e) < 0 || jsonreq_string(head, "op", true, 16, &op, e) < 0)
		return -1;
	if (strcmp(op, "create") != 0)
		return err_setk(e, ERR_INPUT, 0, "the first frame must be op 'create', not '%s'",
				op);
	if (jsonreq_int(head, "id", true, 1, INT64_MAX, &id, e) < 0 ||
	    jsonreq_string(head, "secret", true, SECRET_LEN, &secret, e) < 0 ||
	    jsonreq_string(head, "image", true, 200, image, e) < 0 ||
	    jsonreq_string(head, "isolation", false, 16, isolation, e) < 0 ||
	    jsonreq_int(head, "vcpu", false, 1, 64, &vcpu, e) < 0 ||
	    jsonreq_int(head, "memory_mib", true, 4, 1048576, &mem, e) < 0 ||
	    jsonreq_int(head, "disk_mib", true, 1, 1048576, &disk, e) < 0 ||
	    jsonreq_int(head, "lease_ms", true, 1, (int64_t)LEASE_MS_MAX, &lease, e) < 0 ||
	    jsonreq_int(head, "idle_ms", false, 0, (int64_t)LEASE_MS_MAX, &idle, e) < 0 ||
	    jsonreq_int(head, "max_slots", false, 1, CLI_MAX_SLOTS, &slots, e) < 0 ||
	    env_append(head, "env", &k->env, &k->n_env, e) < 0)
		return -1;
	if (strlen(secret) != SECRET_LEN || !hex_ok(secret, SECRET_LEN))
		return err_setk(e, ERR_INPUT, 0, "'secret' must be %d lowercase hex digits",
				SECRET_LEN);
	memcpy(k->secret, secret, SECRET_LEN + 1);
	k->id = id;
	k->vcpu = (unsigned)vcpu;
	k->memory_bytes = (uint64_t)mem << 20;
	k->disk_bytes = (uint64_t)disk << 20;
	k->idle_ms = (uint64_t)idle;
	*max_slots = (unsigned)slots;
	*lease_ms = (uint64_t)lease;
	return 0;
}

/* The socket's directory must keep everyone but root out: the wall that
 * SO_PEERCRED and the secret stand behind. */
static int check_socket_dir(const char *socket, struct err *e)
{
	char dir[PATH_MAX];
	struct stat st;
	const char *slash = strrchr(socket, '/');

	if (!slash || slash == socket || (size_t)(slash - socket) >= sizeof(dir))
		return err_setk(e, ERR_USAGE, 0,
				"--socket: '%s' is not an absolute path in a directory", socket);
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - socket), socket);
	if (stat(dir, &st) < 0)
		return err_set(e, errno, "--socket: '%s'", dir);
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 077) != 0)
		return err_set(e, 0,
			       "--socket: '%s' must be a directory of root's that only root may "
			       "enter (0700)",
			       dir);
	return 0;
}

static int create_sandbox(struct keeper *k, const struct keeper_options *o, int ready_fd,
			  struct err *e)
{
	json_t *head = NULL;
	void *data = NULL;
	size_t len;
	const char *image, *isolation = NULL;
	unsigned max_slots = 0;
	uint64_t lease_ms = 0;
	char why[256];
	int rc = -1;

	if (sbx_recv(ready_fd, &head, &data, &len, 0, e) < 0) {
		err_wrap(e, "the create request");
		goto out;
	}
	if (parse_create(k, head, &image, &isolation, &max_slots, &lease_ms, e) < 0)
		goto out;
	/* The lease runs from the request, so it never ends after the one
	 * serve recorded when it sent it. */
	k->lease_end_ms = monotonic_ms() + lease_ms;
	k->state_dir = o->state_dir;
	k->last_call_ms = monotonic_ms();
	bool host = strcmp(image, "host") == 0;
	/* "jail" unless asked: "vm" (an image's guest), or "auto" (the
	 * microVM where the host has KVM and an image is pinned). */
	if (sandbox_select(isolation ? isolation : "jail", !host, &k->ops, why, sizeof(why), e) <
		0 ||
	    k->ops->prepare(e) < 0)
		goto out;
	k->time_factor = k->ops->time_factor(o->state_dir, NULL);
	snprintf(k->img.rootfs, sizeof(k->img.rootfs), "/");
	if (!host && image_resolve(o->state_dir, image, &k->img, e) < 0) {
		err_wrap(e, "image");
		goto out;
	}
	const struct sandbox_options so = {
	    .state_dir = o->state_dir,
	    .max_slots = max_slots,
	    .uid_base = SANDBOX_UID_BASE,
	    .disk_bytes = k->disk_bytes,
	    .system_dir = host ? NULL : k->img.rootfs,
	    .memory_bytes = k->memory_bytes,
	    .slot_no_wait = true, /* a full host is the API's 429, not a wait here */
	};
	if (k->ops->create(&so, &k->sb, e) < 0)
		goto out;
	if (state_subdir(o->state_dir, "service/sbx", 0700, k->dir, sizeof(k->dir), e) < 0 ||
	    check_socket_dir(o->socket, e) < 0)
		goto out;
	k->dir_fd = open(k->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (k->dir_fd < 0) {
		err_set(e, errno, "open '%s'", k->dir);
		goto out;
	}
	if (sbx_listen(o->socket, &k->listen_fd, e) < 0)
		goto out;
	k->socket = o->socket;
	rc = 0;
out:
	json_decref(head);
	free(data);
	return rc;
}

/* ---- the calls ------------------------------------------------------------ */

/* A temporary file name below k->dir, for one transfer. */
int temp_name(char *buf, size_t cap, const char *prefix, struct err *e)
{
	return random_hex(buf, cap, prefix, 12, e);
}

int send_answer(int fd, json_t *answer, const void *data, size_t len, struct err *e)
{
	if (!answer)
		return err_set(e, ENOMEM, "the answer");
	int rc = sbx_send(fd, answer, data, len, e);
	json_decref(answer);
	return rc;
}

static int op_destroy(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
		      struct err *e)
{
	static const char *const members[] = {"op", "secret", NULL};

	(void)data;
	(void)len;
	if (jsonreq_only(head, members, e) < 0)
		return -1;
	/* Answered first: the caller records the end, then the sandbox goes. */
	k->destroy_asked = true;
	return send_answer(fd, json_pack("{s:b}", "ok", 1), NULL, 0, e);
}

/* set_timeout: the lease ends lease_ms from now, longer or shorter than it
 * was (never past LEASE_MS_MAX); the answer says what is left. */
static int op_lease(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
		    struct err *e)
{
	static const char *const members[] = {"op", "secret", "lease_ms", "idle_ms", NULL};
	int64_t lease = 0, idle = (int64_t)k->idle_ms;

	(void)data;
	if (jsonreq_only(head, members, e) < 0 ||
	    jsonreq_int(head, "lease_ms", true, 1, (int64_t)LEASE_MS_MAX, &lease, e) < 0 ||
	    jsonreq_int(head, "idle_ms", false, 0, (int64_t)LEASE_MS_MAX, &idle, e) < 0)
		return -1;
	if (len > 0)
		return err_setk(e, ERR_INPUT, 0, "a lease call takes no data");
	k->lease_end_ms = monotonic_ms() + (uint64_t)lease;
	k->idle_ms = (uint64_t)idle;
	return send_answer(fd, json_pack("{s:I,s:I}", "lease_ms", (json_int_t)lease, "idle_ms",
					 (json_int_t)idle),
			   NULL, 0, e);
}

static const struct {
	const char *name;
	int (*fn)(struct keeper *k, int fd, const json_t *head, const void *data, size_t len,
		  struct err *e);
} ops[] = {
    {"exec", op_exec}, {"write", op_write},	{"read", op_read},
    {"list", op_list}, {"destroy", op_destroy}, {"lease", op_lease},
    {"stat", op_stat}, {"remove", op_remove}, {"mkdir", op_mkdir},
    {"upload", op_upload}, {"download", op_download},
    {"snapshot", op_snapshot}, {"restore", op_restore},
};

/* One call: a frame in, a frame out (the answer, or the error). */
static void serve_call(struct keeper *k, int fd)
{
	struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
	json_t *head = NULL;
	void *data = NULL;
	size_t len = 0;
	struct err e;
	int rc = -1;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* The data cap is the sandbox's disk: no file it could hold is
	 * refused, and nothing bigger is read into memory. */
	if (sbx_recv(fd, &head, &data, &len, (size_t)k->disk_bytes, &e) < 0)
		goto answer;
	const char *secret = json_string_value(json_object_get(head, "secret"));
	const char *op = json_string_value(json_object_get(head, "op"));
	/* SECURITY: the secret is compared in constant time, so the time of a
	 * refusal does not say how much of a guess was right. */
	if (!secret || strlen(secret) != SECRET_LEN || !memeql_sec(secret, k->secret, SECRET_LEN)) {
		err_setk(&e, ERR_UNAUTHORIZED, 0, "sandbox %lld: wrong secret", (long long)k->id);
		goto answer;
	}
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (op && strcmp(op, ops[i].name) == 0) {
			rc = ops[i].fn(k, fd, head, data, len, &e);
			goto answer;
		}
	err_setk(&e, ERR_INPUT, 0, "unknown op (exec, write, read, list, stat, remove, mkdir, upload, download, snapshot, restore, lease, destroy)");
answer:
	/* A failed answer (the caller gone) leaves nothing to say to anyone. */
	if (rc < 0)
		sbx_send_error(fd, &e);
	json_decref(head);
	free(data);
}

/* ---- the process ------------------------------------------------------------ */

/* Quiet after a call before the keeper starts the next exec's init. */
#define WARM_IDLE_MS 10

static _Noreturn void end(struct keeper *k, int status)
{
	sandbox_destroy(k->sb);
	if (k->socket)
		unlink(k->socket);
	exit(status);
}

static int parse_options(int argc, char **argv, struct keeper_options *o)
{
	bool ready_given = false;
	const struct cli_option table[] = {
	    CLI_OPTION_STATE_DIR(&o->state_dir, "slots, images and the socket's directory"),
	    {.name = "socket",
	     .kind = CLI_STRING,
	     .value_name = "PATH",
	     .dest = &o->socket,
	     .help = "listen here (in a directory of root's, 0700)"},
	    {.name = "parent",
	     .kind = CLI_UINT,
	     .value_name = "PID",
	     .dest = &o->parent,
	     .min = 1,
	     .max = 4194304,
	     .help = "the spawner: the keeper ends when it does"},
	    {.name = "ready-fd",
	     .kind = CLI_UINT,
	     .value_name = "N",
	     .dest = &o->ready_fd,
	     .min = 0,
	     .max = 65535,
	     .given = &ready_given,
	     .help = "the create request comes in here, the answer goes out"},
	};
	const struct cli_command cmd = {
	    .name = "sandbox-keeper",
	    .about = "Hold one sandbox of the sandbox API for proctor serve (internal: "
		     "docs/sandbox-keeper.md).",
	    .options = table,
	    .n_options = sizeof(table) / sizeof(table[0]),
	    .exit_status =
		"  0  destroyed by a destroy call\n"
		" 10  the lease ended\n"
		" 11  the sandbox could not be created (the error went to the ready fd)\n"
		" 12  its server died while it waited for a call (it destroyed the sandbox)\n"
		" 13  no call came for the idle timeout\n"
		"  2  usage error",
	    .max_operands = 0,
	};
	int n;
	int rc = cli_parse(&cmd, argc, argv, &n);

	if (rc == CLI_OK && (!o->socket || !o->parent || !ready_given)) {
		cli_usage_error("sandbox-keeper: --socket, --parent and --ready-fd are required");
		return CLI_USAGE;
	}
	return rc;
}

int cmd_sandbox_keeper(int argc, char **argv)
{
	struct keeper_options o = {.state_dir = cli_state_dir()};
	struct keeper k = {.dir_fd = -1, .listen_fd = -1};
	struct err e;
	int r;

	/* SECURITY: the sandbox dies with the server that handed it out; if
	 * the server is already gone, the parent check below sees it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if ((r = parse_options(argc, argv, &o)) != CLI_OK)
		return cli_exit_status(r);
	int ready = (int)o.ready_fd;
	if (fcntl(ready, F_SETFD, FD_CLOEXEC) < 0)
		return cli_usage_error("--ready-fd: %u is not an open descriptor", o.ready_fd);
	if ((unsigned)getppid() != o.parent) {
		cli_say("sandbox-keeper: the parent %u is gone", o.parent);
		return KEEPER_EXIT_CREATE;
	}
	/* The parent, to watch while idle (below); -1: PR_SET_PDEATHSIG only. */
	int parent_fd = (int)syscall(SYS_pidfd_open, (pid_t)o.parent, 0);
	/* A pool would hold a second slot for a sandbox that never comes. */
	unsetenv("PROCTOR_JAIL_POOL");
	unsetenv("PROCTOR_VM_POOL");
	signal(SIGPIPE, SIG_IGN);
	struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
	setsockopt(ready, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(ready, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

	if (create_sandbox(&k, &o, ready, &e) < 0) {
		sbx_send_error(ready, &e);
		close(ready);
		env_free(k.env, k.n_env);
		xclose(k.dir_fd);
		end(&k, KEEPER_EXIT_CREATE);
	}
	json_t *ok = json_pack("{s:b}", "ok", 1);
	r = ok ? sbx_send(ready, ok, NULL, 0, &e) : -1;
	json_decref(ok);
	close(ready);
	if (r < 0) /* the spawner is gone or gave up: nobody will ever call */
		end(&k, KEEPER_EXIT_CREATE);

	/* The next exec's start is made while the keeper waits (sandbox_warm:
	 * the jail's init, its root and its groups): at once after the create,
	 * which an exec almost always follows, and after WARM_IDLE_MS of quiet
	 * after a call, so that a burst of calls (a create, an exec, a destroy)
	 * does not pay for a start nobody uses. */
	uint64_t warm_at = monotonic_ms();
	bool idle = false;
	while (!k.destroy_asked) {
		/* Two clocks: the lease, and (when asked for) the time since
		 * the last call ended; a running exec is a call, so a command
		 * is never idle. */
		uint64_t now = monotonic_ms();
		uint64_t idle_end = k.idle_ms ? k.last_call_ms + k.idle_ms : UINT64_MAX;
		if (now >= k.lease_end_ms)
			break;
		if (now >= idle_end) {
			idle = true;
			break;
		}
		if (warm_at && now >= warm_at) {
			sandbox_warm(k.sb);
			warm_at = 0;
			continue;
		}
		uint64_t until = idle_end < k.lease_end_ms ? idle_end : k.lease_end_ms;
		if (warm_at && warm_at < until)
			until = warm_at;
		struct pollfd p[2] = {{.fd = k.listen_fd, .events = POLLIN},
				      {.fd = parent_fd, .events = POLLIN}};
		/* SECURITY: the sandbox still dies with the server.  While the
		 * keeper waits for a call, it watches the server's pidfd and
		 * destroys the sandbox itself when it ends (exit 12), instead of
		 * dying by PR_SET_PDEATHSIG, which would leave behind the
		 * warmed run's cgroups (the jail removes them in destroy, and
		 * only an empty group can be removed); everywhere else (a call,
		 * an exec) the death signal is armed.  A parent that died
		 * before the re-arm is seen by getppid() below. */
		if (parent_fd >= 0)
			prctl(PR_SET_PDEATHSIG, 0);
		int n = poll(p, 2, until - now > INT_MAX ? INT_MAX : (int)(until - now));
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if ((unsigned)getppid() != o.parent)
			break;
		if (n <= 0 || !(p[0].revents & POLLIN))
			continue; /* the clocks and the warming are checked above; EINTR too */
		int fd;
		if (sbx_accept(k.listen_fd, &fd, &e) < 0)
			continue; /* that caller's loss, not the sandbox's */
		warm_at = monotonic_ms() + WARM_IDLE_MS;
		serve_call(&k, fd);
		close(fd);
		k.last_call_ms = monotonic_ms();
	}
	int status = KEEPER_EXIT_LEASE;
	if (k.destroy_asked)
		status = KEEPER_EXIT_DESTROYED;
	else if ((unsigned)getppid() != o.parent)
		status = KEEPER_EXIT_ORPHANED;
	else if (idle)
		status = KEEPER_EXIT_IDLE;
	env_free(k.env, k.n_env);
	xclose(k.dir_fd);
	xclose(k.listen_fd);
	xclose(parent_fd);
	end(&k, status);
}
