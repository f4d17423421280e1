/* The serve side of live sandboxes (sbxhost.h, docs/sandbox-keeper.md). */
#include "service/sbxhost.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "service/sbxwire.h"
#include "util.h"

extern char **environ;

/* How long a keeper may take to create its sandbox (an image's first
 * use resolves it; a jail takes tens of milliseconds). */
#define READY_TIMEOUT_S 60
/* The descriptor a keeper reads its create request from. */
#define READY_FD 3

struct keeper {
	int64_t id;
	pid_t pid;
};

struct sbx_host {
	char exe[PATH_MAX];
	char state_dir[PATH_MAX];
	char dir[PATH_MAX]; /* STATE/service/sbx */
	char key[512];
	unsigned slots;
	pthread_mutex_t lock; /* the keepers below */
	struct keeper *keepers;
	size_t n, cap;
};

static int make_dir(const char *path, mode_t mode, struct err *e)
{
	if (mkdir(path, mode) < 0 && errno != EEXIST)
		return err_set(e, errno, "mkdir %s", path);
	return 0;
}

int sbx_host_new(const char *exe, const char *state_dir, unsigned slots, struct sbx_host **ret,
		 struct err *e)
{
	struct sbx_host *h = calloc(1, sizeof(*h));
	char host[256] = "";
	char real[PATH_MAX];

	if (!h)
		return err_set(e, ENOMEM, "sandbox host");
	/* A state directory that does not exist yet is made, as every other
	 * command that uses one does on first use. */
	if (mkdir_p_at(AT_FDCWD, state_dir, 0755, 0, 0, e) < 0) {
		free(h);
		return err_wrap(e, "--state-dir");
	}
	if (!realpath(exe, h->exe) || !realpath(state_dir, real)) {
		int saved = errno;
		free(h);
		return err_set(e, saved, "sandbox host: %s", state_dir);
	}
	/* proctor-keeper beside `exe` (as built and as installed) holds the
	 * same command and starts in a fraction of the time. */
	char keeper[PATH_MAX + 32];
	const char *slash = strrchr(h->exe, '/');
	snprintf(keeper, sizeof(keeper), "%.*s/proctor-keeper", (int)(slash - h->exe), h->exe);
	if (access(keeper, X_OK) == 0 && strlen(keeper) < sizeof(h->exe))
		snprintf(h->exe, sizeof(h->exe), "%s", keeper);
	snprintf(h->state_dir, sizeof(h->state_dir), "%s", real);
	gethostname(host, sizeof(host) - 1);
	snprintf(h->key, sizeof(h->key), "%s:%s", host, real);
	char service[PATH_MAX + 16];
	snprintf(service, sizeof(service), "%s/service", real);
	snprintf(h->dir, sizeof(h->dir), "%s/service/sbx", real);
	if (make_dir(service, 0700, e) < 0 || make_dir(h->dir, 0700, e) < 0 ||
	    (chmod(h->dir, 0700) < 0 && err_set(e, errno, "chmod %s", h->dir) < 0)) {
		free(h);
		return -1;
	}
	h->slots = slots;
	pthread_mutex_init(&h->lock, NULL);
	*ret = h;
	return 0;
}

void sbx_host_free(struct sbx_host *h)
{
	if (!h)
		return;
	pthread_mutex_destroy(&h->lock);
	free(h->keepers);
	free(h);
}

const char *sbx_host_key(const struct sbx_host *h)
{
	return h->key;
}

unsigned sbx_host_slots(const struct sbx_host *h)
{
	return h->slots;
}

static int remember(struct sbx_host *h, int64_t id, pid_t pid)
{
	pthread_mutex_lock(&h->lock);
	if (h->n == h->cap) {
		size_t cap = h->cap ? h->cap * 2 : 16;
		struct keeper *k = realloc(h->keepers, cap * sizeof(*k));
		if (!k) {
			pthread_mutex_unlock(&h->lock);
			return -1;
		}
		h->keepers = k;
		h->cap = cap;
	}
	h->keepers[h->n++] = (struct keeper){id, pid};
	pthread_mutex_unlock(&h->lock);
	return 0;
}

/* posix_spawn the keeper with `fd` as its READY_FD, nothing else of ours
 * open, default signals and an empty mask (serve blocks its signals for a
 * signalfd, which a child would inherit). */
static int spawn(struct sbx_host *h, int fd, const char *socket, pid_t *ret, struct err *e)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	char parent[32], ready[16];
	int rc;

	snprintf(parent, sizeof(parent), "%ld", (long)getpid());
	snprintf(ready, sizeof(ready), "%d", READY_FD);
	char *argv[] = {h->exe,	   (char *)"sandbox-keeper", (char *)"--state-dir", h->state_dir,
			(char *)"--socket", (char *)socket,	     (char *)"--parent", parent,
			(char *)"--ready-fd", ready,		     NULL};
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, fd, READY_FD);
	posix_spawn_file_actions_addclosefrom_np(&fa, READY_FD + 1);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	rc = posix_spawn(ret, h->exe, &fa, &at, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc != 0)
		return err_set(e, rc, "spawn the sandbox keeper %s", h->exe);
	return 0;
}

int sbx_host_spawn(struct sbx_host *h, int64_t id, json_t *create, pid_t *ret_pid, char *socket,
		   size_t socket_len, struct err *e)
{
	int sv[2];
	pid_t pid;
	json_t *answer = NULL;

	if ((size_t)snprintf(socket, socket_len, "%s/%lld.sock", h->dir, (long long)id) >=
	    socket_len)
		return err_set(e, ENAMETOOLONG, "the sandbox socket under %s", h->dir);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_set(e, errno, "socketpair");
	json_object_set_new(create, "op", json_string("create"));
	json_object_set_new(create, "max_slots", json_integer(h->slots));
	struct timeval tv = {.tv_sec = READY_TIMEOUT_S};
	setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(sv[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int rc = spawn(h, sv[1], socket, &pid, e);
	close(sv[1]);
	if (rc < 0) {
		close(sv[0]);
		return -1;
	}
	if (remember(h, id, pid) < 0) {
		kill(pid, SIGKILL);
		close(sv[0]);
		return err_set(e, ENOMEM, "sandbox keepers");
	}
	/* The keeper answers once the sandbox exists and its socket listens,
	 * or with the reason it could not (then it exits 11). */
	if (sbx_send(sv[0], create, NULL, 0, e) < 0 ||
	    sbx_recv(sv[0], &answer, NULL, NULL, 0, e) < 0 || sbx_error_of(answer, e) < 0) {
		close(sv[0]);
		json_decref(answer);
		if (e->kind == ERR_INTERNAL && !answer)
			sbx_host_kill(h, id); /* no answer: it is stuck */
		return -1;
	}
	close(sv[0]);
	json_decref(answer);
	*ret_pid = pid;
	return 0;
}

void sbx_host_kill(struct sbx_host *h, int64_t id)
{
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->n; i++)
		if (h->keepers[i].id == id)
			kill(h->keepers[i].pid, SIGKILL); /* ours and not reaped yet */
	pthread_mutex_unlock(&h->lock);
}

size_t sbx_host_live(struct sbx_host *h)
{
	size_t n = 0;

	pthread_mutex_lock(&h->lock);
	/* A keeper that exited and is not reaped yet is not live: looked at
	 * without reaping it (WNOWAIT), which stays the reaper's. */
	for (size_t i = 0; i < h->n; i++) {
		siginfo_t si = {0};
		if (waitid(P_PID, (id_t)h->keepers[i].pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid == 0)
			n++;
	}
	pthread_mutex_unlock(&h->lock);
	return n;
}

/* How a keeper's end is recorded (docs/sandbox-keeper.md). */
static const char *end_state(int status, const char **reason)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		*reason = "deleted";
		return "deleted";
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 10) {
		*reason = "the lease ended";
		return "expired";
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 11) {
		*reason = "it could not be created";
		return "failed";
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 13) {
		*reason = "the idle timeout passed with no request";
		return "expired";
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 12) {
		/* Its server died (the keeper destroyed the sandbox): the
		 * server that starts next records it lost. */
		*reason = "its server stopped";
		return "lost";
	}
	*reason = WIFSIGNALED(status) ? "its keeper was killed" : "its keeper failed";
	return "lost";
}

size_t sbx_host_reap(struct sbx_host *h, struct store *st)
{
	size_t ended = 0;

	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->n;) {
		int status;
		pid_t r = waitpid(h->keepers[i].pid, &status, WNOHANG);
		if (r == 0 || (r < 0 && errno == EINTR)) {
			i++;
			continue;
		}
		int64_t id = h->keepers[i].id;
		h->keepers[i] = h->keepers[--h->n];
		ended++;
		if (r < 0)
			continue; /* not ours any more: nothing to record */
		const char *reason, *state = end_state(status, &reason);
		struct err e;
		/* A deleted one was recorded at the call; an end already
		 * recorded is not found, which is fine. */
		if (st && strcmp(state, "deleted") != 0)
			store_sandbox_end(st, id, state, reason, &e);
		char sock[PATH_MAX + 32];
		snprintf(sock, sizeof(sock), "%s/%lld.sock", h->dir, (long long)id);
		unlink(sock); /* a killed keeper leaves its socket */
	}
	pthread_mutex_unlock(&h->lock);
	return ended;
}
