/* The sandbox keeper's wire: frames, error answers and root-only AF_UNIX sockets (sbxwire.h). */
#include "service/sbxwire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "capbuf.h"
#include "dynbuf.h"
#include "util.h"

static void put_be32(unsigned char *p, uint32_t v)
{
	for (int i = 3; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static void put_be64(unsigned char *p, uint64_t v)
{
	for (int i = 7; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

static uint64_t get_be(const unsigned char *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/* Up to len bytes; *got says how many came before EOF.  -1 with errno on
 * an error (EAGAIN: the socket's receive timeout). */
static int recv_all(int fd, void *buf, size_t len, size_t *got)
{
	char *p = buf;

	*got = 0;
	while (*got < len) {
		ssize_t n = read(fd, p + *got, len - *got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

/* The prefix and head text of a frame (the text malloc'd). */
static int encode_head(const json_t *head, size_t len, unsigned char prefix[SBX_PREFIX_LEN],
		       char **ret_text, size_t *ret_hlen, struct err *e)
{
	if (!json_is_object(head))
		return err_set(e, EINVAL, "sandbox frame: the head is not a JSON object");
	char *text = json_dumps(head, JSON_COMPACT);
	if (!text)
		return err_set(e, ENOMEM, "sandbox frame: encode the head");
	size_t hlen = strlen(text);
	if (hlen > SBX_HEAD_MAX) {
		free(text);
		return err_setk(e, ERR_TOO_LARGE, 0,
				"sandbox frame: a head of %zu bytes (at most %u)", hlen,
				SBX_HEAD_MAX);
	}
	memcpy(prefix, SBX_MAGIC, 4);
	put_be32(prefix + 4, (uint32_t)hlen);
	put_be64(prefix + 8, (uint64_t)len);
	*ret_text = text;
	*ret_hlen = hlen;
	return 0;
}

int sbx_send(int fd, const json_t *head, const void *data, size_t len, struct err *e)
{
	unsigned char prefix[SBX_PREFIX_LEN];
	char *text;
	size_t hlen;

	if (encode_head(head, len, prefix, &text, &hlen, e) < 0)
		return -1;
	int rc = send_all(fd, prefix, sizeof(prefix));
	if (rc == 0)
		rc = send_all(fd, text, hlen);
	if (rc == 0 && len > 0)
		rc = send_all(fd, data, len);
	int errnum = errno;
	free(text);
	return rc < 0 ? err_set(e, errnum, "sandbox frame: send") : 0;
}

int sbx_frame_add(struct dynbuf *b, const json_t *head, const void *data, size_t len,
		  struct err *e)
{
	unsigned char prefix[SBX_PREFIX_LEN];
	char *text;
	size_t hlen;

	if (encode_head(head, len, prefix, &text, &hlen, e) < 0)
		return -1;
	int rc = dynbuf_add(b, prefix, sizeof(prefix)) < 0 || dynbuf_add(b, text, hlen) < 0 ||
		 (len > 0 && dynbuf_add(b, data, len) < 0);
	free(text);
	return rc ? err_set(e, ENOMEM, "sandbox frame: %zu bytes", len) : 0;
}

/* A read that came short: the peer closed, timed out, or failed. */
static int short_read(struct err *e, int rc, size_t got, size_t want, const char *what)
{
	if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return err_set(e, ETIMEDOUT, "sandbox frame: %s", what);
	if (rc < 0)
		return err_set(e, errno, "sandbox frame: %s", what);
	return err_set(e, ECONNRESET, "sandbox frame: %s ended after %zu of %zu bytes", what, got,
		       want);
}

/* A frame's prefix checked: its lengths, or -1. */
static int check_prefix(const unsigned char *prefix, size_t data_max, uint64_t *ret_hlen,
			uint64_t *ret_dlen, struct err *e)
{
	if (memcmp(prefix, SBX_MAGIC, 4) != 0)
		return err_set(e, 0, "sandbox frame: not one (no \"" SBX_MAGIC "\" magic)");
	uint64_t hlen = get_be(prefix + 4, 4), dlen = get_be(prefix + 8, 8);
	if (hlen > SBX_HEAD_MAX)
		return err_setk(e, ERR_TOO_LARGE, 0,
				"sandbox frame: a head of %llu bytes (at most %u)",
				(unsigned long long)hlen, SBX_HEAD_MAX);
	if (dlen > data_max)
		return err_setk(e, ERR_TOO_LARGE, 0,
				"sandbox frame: %llu bytes of data, more than the %zu allowed",
				(unsigned long long)dlen, data_max);
	if (hlen == 0)
		return err_set(e, 0, "sandbox frame: an empty head");
	*ret_hlen = hlen;
	*ret_dlen = dlen;
	return 0;
}

/* A head's text as its JSON object; NULL with e set. */
static json_t *parse_head(const char *text, size_t hlen, struct err *e)
{
	/* jansson recurses once per level: the depth is bounded first. */
	if (json_nesting_exceeds(text, hlen, SBX_HEAD_DEPTH)) {
		err_set(e, 0, "sandbox frame: the head nests deeper than %d", SBX_HEAD_DEPTH);
		return NULL;
	}
	json_error_t jerr;
	/* JSON_ALLOW_NUL: a program's output is text with its NULs kept
	 * (run_result_to_json), and it crosses as such. */
	json_t *head = json_loadb(text, hlen, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL, &jerr);
	if (!head || !json_is_object(head)) {
		err_set(e, 0, "sandbox frame: the head is not a JSON object%s%s", head ? "" : ": ",
			head ? "" : jerr.text);
		json_decref(head);
		return NULL;
	}
	return head;
}

int sbx_recv(int fd, json_t **ret_head, void **ret_data, size_t *ret_len, size_t data_max,
	     struct err *e)
{
	unsigned char prefix[SBX_PREFIX_LEN];
	uint64_t hlen, dlen;
	size_t got;
	int rc = recv_all(fd, prefix, sizeof(prefix), &got);

	if (rc < 0 || got < sizeof(prefix))
		return short_read(e, rc, got, sizeof(prefix), "the prefix");
	if (check_prefix(prefix, data_max, &hlen, &dlen, e) < 0)
		return -1;
	char *text = malloc((size_t)hlen);
	if (!text)
		return err_set(e, ENOMEM, "sandbox frame: the head");
	rc = recv_all(fd, text, (size_t)hlen, &got);
	if (rc < 0 || got < hlen) {
		free(text);
		return short_read(e, rc, got, (size_t)hlen, "the head");
	}
	json_t *head = parse_head(text, (size_t)hlen, e);
	free(text);
	if (!head)
		return -1;

	void *data = NULL;
	if (dlen > 0) {
		data = malloc((size_t)dlen);
		if (!data) {
			json_decref(head);
			return err_set(e, ENOMEM, "sandbox frame: %llu bytes of data",
				       (unsigned long long)dlen);
		}
		rc = recv_all(fd, data, (size_t)dlen, &got);
		if (rc < 0 || got < dlen) {
			free(data);
			json_decref(head);
			return short_read(e, rc, got, (size_t)dlen, "the data");
		}
	}
	*ret_head = head;
	if (ret_data)
		*ret_data = data;
	else
		free(data);
	if (ret_len)
		*ret_len = (size_t)dlen;
	return 0;
}

int sbx_frame_take(const char *buf, size_t len, size_t data_max, json_t **ret_head,
		   const char **ret_data, size_t *ret_len, size_t *ret_used, struct err *e)
{
	uint64_t hlen, dlen;

	if (len < SBX_PREFIX_LEN)
		return 0;
	if (check_prefix((const unsigned char *)buf, data_max, &hlen, &dlen, e) < 0)
		return -1;
	if (len - SBX_PREFIX_LEN < hlen || len - SBX_PREFIX_LEN - hlen < dlen)
		return 0;
	json_t *head = parse_head(buf + SBX_PREFIX_LEN, (size_t)hlen, e);
	if (!head)
		return -1;
	*ret_head = head;
	*ret_data = buf + SBX_PREFIX_LEN + hlen;
	*ret_len = (size_t)dlen;
	*ret_used = SBX_PREFIX_LEN + (size_t)hlen + (size_t)dlen;
	return 1;
}

int sbx_send_error(int fd, const struct err *e)
{
	char msg[sizeof(e->msg) * 3];
	struct err ignored;

	/* Messages quote names from sandboxes: made valid UTF-8, which is all
	 * a JSON string may hold. */
	utf8_fix_into(msg, sizeof(msg), e->msg, strnlen(e->msg, sizeof(e->msg)));
	json_t *head = json_pack("{s:{s:i,s:s}}", "error", "kind", (int)e->kind, "message", msg);
	if (!head)
		return -1;
	int rc = sbx_send(fd, head, NULL, 0, &ignored);
	json_decref(head);
	return rc;
}

int sbx_error_of(const json_t *head, struct err *e)
{
	json_t *error = json_object_get(head, "error");

	if (!json_is_object(error))
		return 0;
	json_t *kind = json_object_get(error, "kind");
	const char *msg = json_string_value(json_object_get(error, "message"));
	json_int_t k = json_is_integer(kind) ? json_integer_value(kind) : -1;
	enum err_kind ek = k >= 0 && k < ERR_KIND_COUNT ? (enum err_kind)k : ERR_INTERNAL;
	return err_setk(e, ek, 0, "%s",
			msg ? msg : "the keeper answered an error without a message");
}

int sbx_peer_is_root(int fd, struct err *e)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return err_set(e, errno, "sandbox socket: SO_PEERCRED");
	/* SECURITY: only root's processes (serve, the keeper) speak this
	 * protocol: the socket's directory is root's 0700 too, so this holds
	 * even if a mode is ever wrong. */
	if (cred.uid != 0)
		return err_setk(e, ERR_FORBIDDEN, 0,
				"sandbox socket: the peer (pid %ld) runs as uid %lu, not root",
				(long)cred.pid, (unsigned long)cred.uid);
	return 0;
}

static int socket_addr(const char *path, struct sockaddr_un *sa, struct err *e)
{
	size_t len = strlen(path);

	*sa = (struct sockaddr_un){.sun_family = AF_UNIX};
	if (len == 0 || len >= sizeof(sa->sun_path))
		return err_set(e, ENAMETOOLONG,
			       "sandbox socket '%s': %zu bytes, an AF_UNIX path holds %zu (use a "
			       "shorter state directory)",
			       path, len, sizeof(sa->sun_path) - 1);
	memcpy(sa->sun_path, path, len + 1);
	return 0;
}

int sbx_connect(const char *path, int *ret_fd, struct err *e)
{
	struct sockaddr_un sa;

	if (socket_addr(path, &sa, e) < 0)
		return -1;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set(e, errno, "sandbox socket");
	/* Bounded sends (and the connect, which a full backlog would hold):
	 * a keeper busy with one call never holds the caller's thread long.
	 * The caller sets its own receive timeout. */
	struct timeval tv = {.tv_sec = SBX_SEND_TIMEOUT_S};
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	int rc;
	while ((rc = connect(fd, (struct sockaddr *)&sa, sizeof(sa))) < 0 && errno == EINTR)
		;
	if (rc < 0)
		return err_set(e, errno, "connect to '%s'", path);
	if (sbx_peer_is_root(fd, e) < 0)
		return err_wrap(e, "'%s'", path);
	*ret_fd = take_fd(&fd);
	return 0;
}

int sbx_listen(const char *path, int *ret_fd, struct err *e)
{
	struct sockaddr_un sa;
	struct stat st;

	if (socket_addr(path, &sa, e) < 0)
		return -1;
	_cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return err_set(e, errno, "sandbox socket");
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (errno != EADDRINUSE)
			return err_set(e, errno, "bind '%s'", path);
		/* A socket file nobody listens on is a dead keeper's: replaced.
		 * Anything else there stays, and so does a live keeper's. */
		_cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (probe < 0 || lstat(path, &st) < 0 || !S_ISSOCK(st.st_mode) ||
		    connect(probe, (struct sockaddr *)&sa, sizeof(sa)) == 0 ||
		    errno != ECONNREFUSED)
			return err_set(e, EADDRINUSE, "bind '%s'", path);
		if (unlink(path) < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			return err_set(e, errno, "bind '%s'", path);
	}
	/* The directory (root's, 0700) is what keeps others out; the mode is
	 * the second wall. */
	if (chmod(path, 0600) < 0 || listen(fd, 64) < 0) {
		int errnum = errno;
		unlink(path);
		return err_set(e, errnum, "listen on '%s'", path);
	}
	*ret_fd = take_fd(&fd);
	return 0;
}

int sbx_accept(int listen_fd, int *ret_fd, struct err *e)
{
	int fd;

	while ((fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (fd < 0)
		return err_set(e, errno, "accept");
	if (sbx_peer_is_root(fd, e) < 0) {
		close(fd);
		return -1;
	}
	*ret_fd = fd;
	return 0;
}
