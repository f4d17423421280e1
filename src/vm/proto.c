/* The host <-> guest agent protocol: encoding and bounds-checked decoding. */
#include "vm/proto.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void pbuf_reserve(struct pbuf *b, size_t more)
{
	size_t want;
	unsigned char *n;

	if (b->failed)
		return;
	if (more > PROTO_HEADER + PROTO_MAX_PAYLOAD - b->len) {
		b->failed = true;
		return;
	}
	want = b->len + more;
	if (want <= b->cap)
		return;
	if (want < 2 * b->cap)
		want = 2 * b->cap;
	if (want < 256)
		want = 256;
	n = realloc(b->data, want);
	if (!n) {
		b->failed = true;
		return;
	}
	b->data = n;
	b->cap = want;
}

void pbuf_start(struct pbuf *b, unsigned type)
{
	b->len = 0;
	b->failed = false;
	pbuf_reserve(b, PROTO_HEADER);
	if (b->failed)
		return;
	memset(b->data, 0, PROTO_HEADER);
	b->data[0] = PROTO_VERSION;
	b->data[1] = (unsigned char)type;
	b->len = PROTO_HEADER;
}

void pbuf_u32(struct pbuf *b, uint32_t v)
{
	pbuf_reserve(b, 4);
	if (b->failed)
		return;
	put_le32(b->data + b->len, v);
	b->len += 4;
}

void pbuf_u64(struct pbuf *b, uint64_t v)
{
	pbuf_u32(b, (uint32_t)v);
	pbuf_u32(b, (uint32_t)(v >> 32));
}

void pbuf_bytes(struct pbuf *b, const void *p, size_t n)
{
	if (n > PROTO_MAX_PAYLOAD) {
		b->failed = true;
		return;
	}
	pbuf_u32(b, (uint32_t)n);
	pbuf_reserve(b, n);
	if (b->failed)
		return;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
}

void pbuf_str(struct pbuf *b, const char *s)
{
	pbuf_bytes(b, s, strlen(s));
}

int pbuf_finish(struct pbuf *b)
{
	if (b->failed || b->len < PROTO_HEADER)
		return -1;
	put_le32(b->data + 4, (uint32_t)(b->len - PROTO_HEADER));
	return 0;
}

void pbuf_free(struct pbuf *b)
{
	free(b->data);
	*b = (struct pbuf){0};
}

void preader_init(struct preader *r, const void *payload, size_t len)
{
	r->p = payload;
	r->left = len;
	r->bad = false;
}

uint32_t preader_u32(struct preader *r)
{
	uint32_t v;

	if (r->bad || r->left < 4) {
		r->bad = true;
		return 0;
	}
	v = get_le32(r->p);
	r->p += 4;
	r->left -= 4;
	return v;
}

uint64_t preader_u64(struct preader *r)
{
	uint64_t lo = preader_u32(r);
	uint64_t hi = preader_u32(r);

	return lo | hi << 32;
}

const unsigned char *preader_bytes(struct preader *r, size_t max, size_t *len)
{
	uint32_t n = preader_u32(r);
	const unsigned char *p;

	if (r->bad || n > max || n > r->left) {
		r->bad = true;
		*len = 0;
		return NULL;
	}
	p = r->p;
	r->p += n;
	r->left -= n;
	*len = n;
	return p;
}

int preader_str(struct preader *r, char *buf, size_t cap)
{
	size_t n;
	const unsigned char *p = preader_bytes(r, cap ? cap - 1 : 0, &n);

	/* cap 0 has no room even for the terminator: refuse rather than write buf[0]. */
	if (!p || !cap || memchr(p, '\0', n)) {
		r->bad = true;
		if (cap)
			buf[0] = '\0';
		return -1;
	}
	memcpy(buf, p, n);
	buf[n] = '\0';
	return 0;
}

int preader_end(struct preader *r)
{
	return r->bad || r->left != 0 ? -1 : 0;
}

int proto_header(const unsigned char h[PROTO_HEADER], unsigned *type, uint32_t *len)
{
	if (h[0] != PROTO_VERSION || h[2] != 0 || h[3] != 0)
		return -1;
	*type = h[1];
	*len = get_le32(h + 4);
	return *len > PROTO_MAX_PAYLOAD ? -1 : 0;
}

/* Replace control characters so a message is one printable line. */
static void clean_line(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			*s = ' ';
}

int proto_parse_hello(const void *payload, size_t len, struct proto_hello *ret)
{
	struct preader r;

	preader_init(&r, payload, len);
	ret->version = preader_u32(&r);
	preader_str(&r, ret->agent, sizeof(ret->agent));
	preader_str(&r, ret->kernel, sizeof(ret->kernel));
	if (preader_end(&r) < 0)
		return -1;
	clean_line(ret->agent);
	clean_line(ret->kernel);
	return 0;
}

int proto_parse_exit(const void *payload, size_t len, struct proto_exit *ret)
{
	struct preader r;

	preader_init(&r, payload, len);
	ret->flags = preader_u32(&r);
	ret->killed_for = preader_u32(&r);
	ret->exit_code = (int32_t)preader_u32(&r);
	ret->signal = (int32_t)preader_u32(&r);
	ret->cpu_ms = preader_u64(&r);
	ret->wall_ms = preader_u64(&r);
	ret->peak_memory_kib = preader_u64(&r);
	ret->peak_pids = preader_u64(&r);
	ret->out_total = preader_u64(&r);
	ret->err_total = preader_u64(&r);
	preader_str(&r, ret->message, sizeof(ret->message));
	if (preader_end(&r) < 0)
		return -1;
	/* Values the host later prints or compares: keep them in range. */
	if ((ret->flags & PROTO_EXIT_EXITED) && (ret->exit_code < 0 || ret->exit_code > 255))
		return -1;
	if ((ret->flags & PROTO_EXIT_SIGNALED) && (ret->signal < 1 || ret->signal > 64))
		return -1;
	if ((ret->flags & (PROTO_EXIT_EXITED | PROTO_EXIT_SIGNALED)) ==
	    (PROTO_EXIT_EXITED | PROTO_EXIT_SIGNALED))
		return -1;
	if (ret->killed_for >= 1u << 9)
		return -1;
	clean_line(ret->message);
	return 0;
}

int proto_parse_out(const void *payload, size_t len, unsigned *stream, const unsigned char **data,
		    size_t *n)
{
	struct preader r;

	preader_init(&r, payload, len);
	*stream = preader_u32(&r);
	*data = preader_bytes(&r, PROTO_MAX_PAYLOAD, n);
	if (preader_end(&r) < 0 || (*stream != 1 && *stream != 2))
		return -1;
	return 0;
}

bool proto_path_ok(const char *p)
{
	if (!*p)
		return false;
	for (;;) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (!*p)
			return true;
		p++;
	}
}

int proto_parse_file(const void *payload, size_t len, char *path, size_t cap, uint32_t *mode,
		     uint64_t *size)
{
	struct preader r;

	preader_init(&r, payload, len);
	preader_str(&r, path, cap);
	*mode = preader_u32(&r);
	*size = preader_u64(&r);
	if (preader_end(&r) < 0)
		return -1;
	*mode &= 0777;
	if (name_has_control(path))
		return path[0] && proto_path_ok(path) ? -2 : -1;
	if (path[0] && !proto_path_ok(path))
		return -1;
	return 0;
}

int proto_parse_err(const void *payload, size_t len, char *msg, size_t cap)
{
	struct preader r;

	preader_init(&r, payload, len);
	preader_str(&r, msg, cap);
	if (preader_end(&r) < 0)
		return -1;
	clean_line(msg);
	return 0;
}

/* A string field of at most PROTO_MAX_STR bytes, malloc'd; NULL when bad. */
static char *dup_field(struct preader *r)
{
	size_t n;
	const unsigned char *p = preader_bytes(r, PROTO_MAX_STR, &n);
	char *s;

	if (!p || memchr(p, '\0', n) || !(s = malloc(n + 1))) {
		r->bad = true;
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

/* A count (at most max, at least min) and that many strings into list. */
static int read_list(struct preader *r, char **list, uint32_t min, uint32_t max)
{
	uint32_t n = preader_u32(r);

	if (r->bad || n < min || n > max)
		return -1;
	for (uint32_t i = 0; i < n; i++)
		if (!(list[i] = dup_field(r)))
			return -1;
	return 0;
}

int proto_parse_run(const void *payload, size_t len, struct proto_run *q)
{
	struct preader r;

	memset(q, 0, sizeof(*q));
	preader_init(&r, payload, len);
	if (read_list(&r, q->argv, 1, PROTO_MAX_ARGS) < 0 ||
	    read_list(&r, q->env, 0, PROTO_MAX_ENV) < 0)
		return -1;
	preader_str(&r, q->stdin_path, sizeof(q->stdin_path));
	q->l.cpu_ms = preader_u64(&r);
	q->l.wall_ms = preader_u64(&r);
	q->l.memory_bytes = preader_u64(&r);
	q->l.pids = preader_u64(&r);
	q->l.fsize_bytes = preader_u64(&r);
	q->l.nofile = preader_u64(&r);
	q->l.output_bytes = preader_u64(&r);
	q->l.flags = preader_u32(&r);
	q->l.factor_milli = preader_u32(&r);
	/* Version 3: the peer of a split run (count 0: none). */
	if (read_list(&r, q->peer_argv, 0, PROTO_MAX_ARGS) < 0 ||
	    read_list(&r, q->peer_env, 0, PROTO_MAX_ENV) < 0)
		return -1;
	if (preader_end(&r) < 0 || (q->l.flags & ~(PROTO_RUN_PRIVILEGED | PROTO_RUN_ZYGOTE)) ||
	    q->l.factor_milli < 1000 || q->l.factor_milli > 100000 ||
	    (q->stdin_path[0] && !proto_path_ok(q->stdin_path)) ||
	    (!q->peer_argv[0] && q->peer_env[0]))
		return -1;
	return 0;
}

void proto_run_free(struct proto_run *q)
{
	char **lists[] = {q->argv, q->env, q->peer_argv, q->peer_env};

	for (size_t k = 0; k < 4; k++)
		for (size_t i = 0; lists[k][i]; i++) {
			free(lists[k][i]);
			lists[k][i] = NULL;
		}
}
