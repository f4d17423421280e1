/* Result callbacks: the outbox's deliveries POSTed signed, concurrently, retried with backoff. */
#include "service/callback.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "store/store.h"
#include "util.h"

/*
 * A batch is one multi handle and one easy handle per delivery, kept in
 * the sender from the pump that takes the batch to the pump that records
 * its last attempt.  A pump runs the transfers for one slice only: the
 * server's loop calls it between its signal checks, and a pump that ran
 * the batch to its end held that loop up to the timeout plus the grace
 * (12 s by default), deaf to SIGTERM.  curl enforces each transfer's
 * timeouts; the batch's deadline (the timeout plus DEADLINE_GRACE_MS from
 * its start) only guards against a transfer curl failed to end.  Rows are
 * held for the timeout plus HOLD_MARGIN_MS, which covers the grace, the
 * gaps between pumps and the recording of every outcome.
 */

#define DEADLINE_GRACE_MS 2000
#define HOLD_MARGIN_MS	  60000
#define WHY_MAX		  256
#define USER_AGENT	  "proctor-callback"

/* ---- configuration ---- */

void callback_config_default(struct callback_config *c)
{
	*c = (struct callback_config){.timeout_ms = 10000,
				      .connect_timeout_ms = 5000,
				      .max_attempts = 8,
				      .base_backoff_ms = 10000,
				      .max_backoff_ms = 3600 * 1000,
				      .batch = 32};
}

static int config_check(const struct callback_config *c, struct err *e)
{
	if (!c->secret || c->secret_len == 0)
		return err_setk(e, ERR_USAGE, 0, "callbacks: no signing secret");
	if (c->timeout_ms < 1 || c->timeout_ms > 600000 || c->connect_timeout_ms < 1 ||
	    c->connect_timeout_ms > c->timeout_ms)
		return err_setk(e, ERR_USAGE, 0,
				"callbacks: timeout %u ms, connect timeout %u ms: want 1 <= "
				"connect <= timeout <= 600000",
				c->timeout_ms, c->connect_timeout_ms);
	if (c->max_attempts < 1 || c->max_attempts > 100)
		return err_setk(e, ERR_USAGE, 0, "callbacks: %u attempts: want 1 to 100",
				c->max_attempts);
	if (c->base_backoff_ms < 0 || c->max_backoff_ms < c->base_backoff_ms ||
	    c->max_backoff_ms > (int64_t)30 * 24 * 3600 * 1000)
		return err_setk(e, ERR_USAGE, 0,
				"callbacks: backoff %lld ms up to %lld ms: want 0 <= base <= max "
				"<= 30 days",
				(long long)c->base_backoff_ms, (long long)c->max_backoff_ms);
	if (c->batch < 1 || c->batch > CALLBACK_BATCH_MAX)
		return err_setk(e, ERR_USAGE, 0, "callbacks: batch %u: want 1 to %d", c->batch,
				CALLBACK_BATCH_MAX);
	return 0;
}

/* ---- signatures and backoff ---- */

void callback_sign(const void *secret, size_t secret_len, int64_t timestamp, const void *body,
		   size_t body_len, char out[CALLBACK_SIG_HEX + 1])
{
	static const char hex[] = "0123456789abcdef";
	struct hmac_sha256_ctx ctx;
	uint8_t digest[SHA256_DIGEST_SIZE];
	char prefix[32];
	int n = snprintf(prefix, sizeof(prefix), "%lld.", (long long)timestamp);

	hmac_sha256_set_key(&ctx, secret_len, secret);
	hmac_sha256_update(&ctx, (size_t)n, (const uint8_t *)prefix);
	if (body_len)
		hmac_sha256_update(&ctx, body_len, body);
	hmac_sha256_digest(&ctx, sizeof(digest), digest);
	for (size_t i = 0; i < sizeof(digest); i++) {
		out[2 * i] = hex[digest[i] >> 4];
		out[2 * i + 1] = hex[digest[i] & 15];
	}
	out[CALLBACK_SIG_HEX] = '\0';
}

/* A timestamp header: 1 to 18 decimal digits (no sign, no space). */
static bool parse_seconds(const char *s, int64_t *ret)
{
	int64_t v = 0;
	size_t i = 0;

	for (; s[i] && i < 18; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	if (i == 0 || s[i])
		return false;
	*ret = v;
	return true;
}

/* Whether one "scheme=value" item of a signature header is v1=<expected>. */
static bool item_matches(const char *item, size_t len, const char *expected)
{
	while (len && (*item == ' ' || *item == '\t')) {
		item++;
		len--;
	}
	while (len && (item[len - 1] == ' ' || item[len - 1] == '\t'))
		len--;
	if (len != 3 + CALLBACK_SIG_HEX || memcmp(item, "v1=", 3) != 0)
		return false;
	return memeql_sec(item + 3, expected, CALLBACK_SIG_HEX) != 0;
}

bool callback_verify(const void *secret, size_t secret_len, const char *timestamp,
		     const char *signature, const void *body, size_t body_len, int64_t now_s,
		     int64_t tolerance_s)
{
	char expected[CALLBACK_SIG_HEX + 1];
	int64_t ts;
	bool ok = false;

	if (!timestamp || !signature || (!body && body_len) || tolerance_s < 0 ||
	    !parse_seconds(timestamp, &ts))
		return false;
	if (ts > now_s ? ts - now_s > tolerance_s : now_s - ts > tolerance_s)
		return false;
	callback_sign(secret, secret_len, ts, body, body_len, expected);
	for (const char *p = signature;;) {
		size_t len = strcspn(p, ",");
		ok |= item_matches(p, len, expected);
		if (!p[len])
			break;
		p += len + 1;
	}
	return ok;
}

int64_t callback_backoff_ms(const struct callback_config *c, int attempt, uint64_t rnd)
{
	int64_t wait = c->base_backoff_ms, cap = c->max_backoff_ms;

	for (int i = 1; i < attempt && wait < cap; i++)
		wait = wait > cap / 2 ? cap : wait * 2;
	if (wait > cap)
		wait = cap;
	if (wait <= 0)
		return 0;
	int64_t half = wait / 2;
	return wait - half + (int64_t)(rnd % (uint64_t)(half + 1));
}

static uint64_t random_jitter(void)
{
	uint64_t r;
	struct timespec ts;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) == (ssize_t)sizeof(r))
		return r;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)ts.tv_sec;
}

/* ---- addresses ---- */

static bool v4_private(uint32_t a)
{
	static const struct {
		uint32_t net, mask;
	} nets[] = {
	    {0x00000000, 0xff000000}, /* 0/8: "this network" */
	    {0x0a000000, 0xff000000}, /* 10/8 */
	    {0x64400000, 0xffc00000}, /* 100.64/10: shared (carrier NAT) */
	    {0x7f000000, 0xff000000}, /* 127/8: loopback */
	    {0xa9fe0000, 0xffff0000}, /* 169.254/16: link-local, cloud metadata */
	    {0xac100000, 0xfff00000}, /* 172.16/12 */
	    {0xc0000000, 0xffffff00}, /* 192.0.0/24: protocol assignments */
	    {0xc0000200, 0xffffff00}, /* 192.0.2/24: documentation */
	    {0xc0a80000, 0xffff0000}, /* 192.168/16 */
	    {0xc6120000, 0xfffe0000}, /* 198.18/15: benchmarking */
	    {0xc6336400, 0xffffff00}, /* 198.51.100/24: documentation */
	    {0xcb007100, 0xffffff00}, /* 203.0.113/24: documentation */
	    {0xe0000000, 0xf0000000}, /* 224/4: multicast */
	    {0xf0000000, 0xf0000000}, /* 240/4: reserved, broadcast */
	};
	for (size_t i = 0; i < sizeof(nets) / sizeof(nets[0]); i++)
		if ((a & nets[i].mask) == nets[i].net)
			return true;
	return false;
}

static uint32_t v4_at(const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static bool prefix_is(const uint8_t *b, const uint8_t *p, size_t bytes)
{
	return memcmp(b, p, bytes) == 0;
}

static bool v6_private(const uint8_t b[16])
{
	static const uint8_t zero[12] = {0};
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	static const uint8_t nat64[12] = {0, 0x64, 0xff, 0x9b};
	static const uint8_t nat64_local[6] = {0, 0x64, 0xff, 0x9b, 0, 1};
	static const uint8_t discard[8] = {0x01, 0x00};
	static const uint8_t doc[4] = {0x20, 0x01, 0x0d, 0xb8};
	static const uint8_t teredo[4] = {0x20, 0x01, 0, 0};

	if (prefix_is(b, mapped, 12) || prefix_is(b, nat64, 12))
		return v4_private(v4_at(b + 12));
	if (b[0] == 0x20 && b[1] == 0x02) /* 6to4: the IPv4 address follows */
		return v4_private(v4_at(b + 2));
	return prefix_is(b, zero, 12) ||       /* ::/96: unspecified, loopback, compatible */
	       prefix_is(b, nat64_local, 6) || /* 64:ff9b:1::/48 */
	       prefix_is(b, discard, 8) ||     /* 100::/64 */
	       prefix_is(b, doc, 4) ||	       /* 2001:db8::/32 */
	       prefix_is(b, teredo, 4) ||      /* 2001::/32 */
	       (b[0] & 0xfe) == 0xfc ||	       /* fc00::/7: unique local */
	       (b[0] == 0xfe && (b[1] & 0x80) == 0x80) || /* fe80::/10, fec0::/10 */
	       b[0] == 0xff;				  /* ff00::/8: multicast */
}

bool callback_addr_is_private(const struct sockaddr *sa, socklen_t len)
{
	struct sockaddr_storage ss;

	if (!sa || len < sizeof(sa_family_t) || len > sizeof(ss))
		return true;
	memset(&ss, 0, sizeof(ss));
	memcpy(&ss, sa, len);
	if (ss.ss_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)&ss;
		return v4_private(ntohl(in->sin_addr.s_addr));
	}
	if (ss.ss_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&ss;
		return v6_private(in6->sin6_addr.s6_addr);
	}
	return true; /* not an internet address: nothing to call */
}

/* ---- URLs ---- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int curl_ready(struct err *e)
{
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return err_set(e, 0, "libcurl: %s", curl_easy_strerror(curl_init_rc));
	return 0;
}

static int check_url_chars(const char *url, struct err *e)
{
	if (!url || !url[0])
		return err_setk(e, ERR_INPUT, 0, "callback URL: empty");
	size_t len = strnlen(url, CALLBACK_URL_MAX + 1);
	if (len > CALLBACK_URL_MAX)
		return err_setk(e, ERR_INPUT, 0, "callback URL: longer than %d bytes",
				CALLBACK_URL_MAX);
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)url[i];
		if (ch <= 0x20 || ch >= 0x7f)
			return err_setk(e, ERR_INPUT, 0,
					"callback URL: byte %zu is a space, a control character "
					"or not ASCII (percent-encode it; punycode for hosts)",
					i + 1);
	}
	return 0;
}

/* Whether the parsed URL has `part` (a user name, a password). */
static bool has_part(CURLU *u, CURLUPart part)
{
	char *v = NULL;
	CURLUcode rc = curl_url_get(u, part, &v, 0);

	curl_free(v);
	return rc == CURLUE_OK;
}

static int check_url_parts(CURLU *u, struct err *e)
{
	char *scheme = NULL, *host = NULL;
	int rc = 0;

	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0))
		rc = err_setk(e, ERR_INPUT, 0, "callback URL: the scheme must be http or https");
	else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !host[0])
		rc = err_setk(e, ERR_INPUT, 0, "callback URL: no host");
	else if (has_part(u, CURLUPART_USER) || has_part(u, CURLUPART_PASSWORD) ||
		 has_part(u, CURLUPART_OPTIONS))
		rc = err_setk(e, ERR_INPUT, 0,
			      "callback URL: a user name or password is not allowed (the "
			      "signature authenticates deliveries)");
	curl_free(scheme);
	curl_free(host);
	return rc;
}

int callback_url_check(const char *url, struct err *e)
{
	if (check_url_chars(url, e) < 0 || curl_ready(e) < 0)
		return -1;
	CURLU *u = curl_url();
	if (!u)
		return err_set(e, ENOMEM, "callback URL");
	CURLUcode uc = curl_url_set(u, CURLUPART_URL, url, 0);
	int rc = uc == CURLUE_OK
		     ? check_url_parts(u, e)
		     : err_setk(e, ERR_INPUT, 0, "callback URL: %s", curl_url_strerror(uc));
	curl_url_cleanup(u);
	return rc;
}

/* ---- one transfer ---- */

struct xfer {
	struct store_delivery *d;
	CURL *h;
	struct curl_slist *headers;
	bool added;	  /* in the multi handle */
	bool done;	  /* curl finished it (rc is its result) */
	bool skip;	  /* never sent: why says so */
	bool capped;	  /* the answer's body passed CALLBACK_RESPONSE_MAX */
	bool recorded;	  /* its attempt is recorded (or failed to be): nothing left to do */
	bool public_only; /* connect to public addresses only */
	CURLcode rc;
	long status; /* HTTP status of the answer, 0: none */
	size_t body_len;
	char refused[INET6_ADDRSTRLEN]; /* a non-public address curl was kept from */
	char errbuf[CURL_ERROR_SIZE];
	char why[WHY_MAX];
};

static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t len = size * n;

	(void)p;
	if (len > CALLBACK_RESPONSE_MAX - x->body_len) {
		x->capped = true;
		return CURL_WRITEFUNC_ERROR;
	}
	x->body_len += len;
	return len;
}

static curl_socket_t on_open(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct xfer *x = arg;

	if (x->public_only && purpose == CURLSOCKTYPE_IPCXN &&
	    callback_addr_is_private(&a->addr, a->addrlen)) {
		const void *where =
		    a->family == AF_INET6
			? (const void *)&((struct sockaddr_in6 *)(void *)&a->addr)->sin6_addr
			: (const void *)&((struct sockaddr_in *)(void *)&a->addr)->sin_addr;
		if (!inet_ntop(a->family, where, x->refused, sizeof(x->refused)))
			snprintf(x->refused, sizeof(x->refused), "?");
		return CURL_SOCKET_BAD;
	}
	/* A batch's connections outlive a pump, and the server may start a
	 * worker meanwhile: the worker must not inherit them. */
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int add_header(struct curl_slist **list, const char *name, const char *value)
{
	char line[256];
	snprintf(line, sizeof(line), "%s%s", name, value);
	struct curl_slist *l = curl_slist_append(*list, line);
	if (!l)
		return -1;
	*list = l;
	return 0;
}

static int make_headers(struct xfer *x, const struct callback_config *c, int64_t now_s)
{
	const char *body = x->d->payload;
	char ts[24], sig[CALLBACK_SIG_HEX + 1];

	snprintf(ts, sizeof(ts), "%lld", (long long)now_s);
	callback_sign(c->secret, c->secret_len, now_s, body, strlen(body), sig);
	if (add_header(&x->headers, "Content-Type: ", "application/json") < 0 ||
	    add_header(&x->headers, "Proctor-Delivery: ", x->d->delivery_id) < 0 ||
	    add_header(&x->headers, "Proctor-Timestamp: ", ts) < 0 ||
	    add_header(&x->headers, "Proctor-Signature: v1=", sig) < 0 ||
	    add_header(&x->headers, "Expect:", "") < 0) /* no 100-continue round trip */
		return -1;
	return 0;
}

/* The options of every delivery: what the header comment promises. */
static bool set_options(struct xfer *x, const struct callback_config *c)
{
	CURL *h = x->h;
	const char *body = x->d->payload;

	x->public_only = !c->allow_private && !c->proxy;

	return curl_easy_setopt(h, CURLOPT_URL, x->d->url) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_PRIVATE, x) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_POSTFIELDS, body) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body)) ==
		   CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_HTTPHEADER, x->headers) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_USERAGENT, USER_AGENT) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_MAXREDIRS, 0L) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms) ==
		   CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_PROXY, c->proxy ? c->proxy : "") == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_NOPROXY, "") == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->errbuf) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_WRITEDATA, x) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, on_open) == CURLE_OK &&
	       curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, x) == CURLE_OK;
}

/* Make the easy handle of a delivery; false (with x->why) when it cannot be sent. */
static bool xfer_prepare(struct xfer *x, const struct callback_config *c, int64_t now_s)
{
	struct err ue;

	if (callback_url_check(x->d->url, &ue) < 0) {
		x->skip = true;
		snprintf(x->why, sizeof(x->why), "%s", ue.msg);
		return false;
	}
	x->h = curl_easy_init();
	if (!x->h || make_headers(x, c, now_s) < 0 || !set_options(x, c)) {
		snprintf(x->why, sizeof(x->why), "could not set up the request");
		return false;
	}
	return true;
}

static void xfer_free(struct xfer *x, CURLM *m)
{
	if (x->added)
		curl_multi_remove_handle(m, x->h);
	if (x->h)
		curl_easy_cleanup(x->h);
	curl_slist_free_all(x->headers);
	x->h = NULL;
	x->headers = NULL;
	x->added = false;
}

/* ---- one batch ---- */

struct callback_sender {
	struct callback_config c;
	struct store_delivery *d; /* c.batch of them; the batch's first n are filled */
	struct xfer *x;		  /* the same */
	size_t n;		  /* deliveries in the batch; 0: none in flight */
	size_t unrecorded;	  /* of them, attempts not recorded yet */
	CURLM *m;		  /* the batch's transfers; NULL when it could not be made */
	uint64_t deadline_ms;	  /* monotonic_ms() after which no transfer may run */
};

static void collect_finished(CURLM *m)
{
	CURLMsg *msg;
	int left;

	while ((msg = curl_multi_info_read(m, &left))) {
		char *priv = NULL;
		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
		struct xfer *x = (struct xfer *)(void *)priv;
		if (!x)
			continue;
		x->done = true;
		x->rc = msg->data.result;
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
	}
}

/*
 * Let the transfers run until they have all ended, `until` (monotonic_ms)
 * has come or wake_fd is readable.  False when libcurl itself failed: the
 * transfers will not advance any more.
 */
static bool run_transfers(CURLM *m, uint64_t until, int wake_fd)
{
	struct curl_waitfd wake = {.fd = wake_fd, .events = CURL_WAIT_POLLIN};
	unsigned n_wake = wake_fd >= 0 ? 1 : 0;
	int running = 0;

	for (;;) {
		CURLMcode mc = curl_multi_perform(m, &running);
		collect_finished(m);
		uint64_t now = monotonic_ms();
		if (mc != CURLM_OK)
			return false;
		if (running == 0 || now >= until || wake.revents)
			return true;
		/* curl wakes earlier for its own timers (timeouts, connects). */
		if (curl_multi_poll(m, n_wake ? &wake : NULL, n_wake, (int)(until - now), NULL) !=
		    CURLM_OK)
			return false;
	}
}

/* Take the due rows and start their transfers; s->n is 0 when none is due. */
static int start_batch(struct callback_sender *s, struct store *st, struct err *e)
{
	size_t n = 0;
	int64_t now_s = (int64_t)time(NULL);

	if (store_outbox_take_due(st, (int64_t)s->c.timeout_ms + HOLD_MARGIN_MS, s->d, s->c.batch,
				  &n, e) < 0)
		return err_wrap(e, "callbacks");
	if (n == 0)
		return 0;
	memset(s->x, 0, n * sizeof(*s->x));
	s->n = s->unrecorded = n;
	s->deadline_ms = monotonic_ms() + s->c.timeout_ms + DEADLINE_GRACE_MS;
	s->m = curl_multi_init();
	for (size_t i = 0; i < n; i++) {
		struct xfer *x = &s->x[i];
		x->d = &s->d[i];
		if (!s->m)
			snprintf(x->why, sizeof(x->why), "could not set up the requests");
		else if (xfer_prepare(x, &s->c, now_s)) {
			x->added = curl_multi_add_handle(s->m, x->h) == CURLM_OK;
			if (!x->added)
				snprintf(x->why, sizeof(x->why), "could not start the request");
		}
	}
	if (s->m)
		curl_multi_setopt(s->m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)n);
	return 0;
}

/* Free what is left of the batch, recorded or not. */
static void end_batch(struct callback_sender *s)
{
	for (size_t i = 0; i < s->n; i++) {
		xfer_free(&s->x[i], s->m);
		store_delivery_clear(&s->d[i]);
	}
	if (s->m)
		curl_multi_cleanup(s->m);
	s->m = NULL;
	s->n = s->unrecorded = 0;
}

/* Only printable ASCII goes to the store (and from there to JSON). */
static void make_printable(char *s)
{
	size_t len = strcspn(s, "\r\n");
	s[len] = '\0';
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			*s = '?';
}

/* Whether the attempt succeeded; otherwise x->why says why. */
static bool attempt_succeeded(struct xfer *x)
{
	bool answered = x->rc == CURLE_OK || (x->rc == CURLE_WRITE_ERROR && x->capped);

	if (x->skip || (!x->done && x->why[0]))
		return false;
	if (x->done && answered && x->status >= 200 && x->status < 300)
		return true;
	if (!x->done)
		snprintf(x->why, sizeof(x->why),
			 "the transfer did not end (deadline or libcurl failure)");
	else if (x->refused[0])
		snprintf(x->why, sizeof(x->why), "refused to connect to %s: not a public address",
			 x->refused);
	else if (!answered)
		snprintf(x->why, sizeof(x->why), "%s",
			 x->errbuf[0] ? x->errbuf : curl_easy_strerror(x->rc));
	else if (x->status >= 300 && x->status < 400)
		snprintf(x->why, sizeof(x->why), "HTTP %ld (redirects are not followed)",
			 x->status);
	else
		snprintf(x->why, sizeof(x->why), "HTTP %ld", x->status);
	make_printable(x->why);
	return false;
}

static int record_one(struct store *st, const struct callback_config *c, struct xfer *x,
		      struct callback_stats *s, struct err *e)
{
	bool ok = attempt_succeeded(x);
	int attempt = x->d->attempts + 1;
	int max = x->skip ? attempt : (int)c->max_attempts; /* a bad URL never gets better */
	int status = x->done && x->status > 0 && x->status < 1000 ? (int)x->status : 0;
	int64_t retry = callback_backoff_ms(c, attempt, random_jitter());

	if (store_outbox_record(st, x->d->outbox_id, ok, status, ok ? NULL : x->why, retry, max,
				e) < 0) {
		s->record_errors++;
		return err_wrap(e, "callback delivery %s", x->d->delivery_id);
	}
	if (ok)
		s->delivered++;
	else if (attempt >= max)
		s->failed++;
	else
		s->retried++;
	return 0;
}

/* Record every attempt that ended, and with `all` every one still running
 * too (as not ended); the batch ends with its last record. */
static int record_ended(struct callback_sender *s, struct store *st, bool all,
			struct callback_stats *stats, struct err *e)
{
	int rc = 0;
	struct err one;

	for (size_t i = 0; i < s->n; i++) {
		struct xfer *x = &s->x[i];
		if (x->recorded || (x->added && !x->done && !all))
			continue;
		if (record_one(st, &s->c, x, stats, &one) < 0 && rc == 0) {
			*e = one;
			rc = -1;
		}
		xfer_free(x, s->m);
		x->recorded = true;
		s->unrecorded--;
		stats->handled++;
	}
	if (s->unrecorded == 0)
		end_batch(s);
	return rc;
}

int callback_sender_new(const struct callback_config *c, struct callback_sender **ret,
			struct err *e)
{
	if (config_check(c, e) < 0 || curl_ready(e) < 0)
		return -1;
	struct callback_sender *s = calloc(1, sizeof(*s));
	if (s) {
		s->d = calloc(c->batch, sizeof(*s->d));
		s->x = calloc(c->batch, sizeof(*s->x));
	}
	if (!s || !s->d || !s->x) {
		callback_sender_free(s);
		return err_set(e, ENOMEM, "callbacks");
	}
	s->c = *c;
	*ret = s;
	return 0;
}

struct callback_sender *callback_sender_free(struct callback_sender *s)
{
	if (!s)
		return NULL;
	end_batch(s);
	free(s->d);
	free(s->x);
	free(s);
	return NULL;
}

size_t callback_in_flight(const struct callback_sender *s)
{
	return s->unrecorded;
}

int callback_pump(struct callback_sender *s, struct store *st, unsigned slice_ms, int wake_fd,
		  struct callback_stats *ret_stats, struct err *e)
{
	struct callback_stats stats = {0};

	if (ret_stats)
		*ret_stats = stats;
	if (s->n == 0 && start_batch(s, st, e) < 0)
		return -1;
	if (s->n == 0)
		return 0;
	uint64_t until = monotonic_ms() + slice_ms;
	bool advancing =
	    s->m && run_transfers(s->m, until < s->deadline_ms ? until : s->deadline_ms, wake_fd);
	int rc = record_ended(s, st, !advancing || monotonic_ms() >= s->deadline_ms, &stats, e);
	if (ret_stats)
		*ret_stats = stats;
	return rc < 0 ? -1 : (int)stats.handled;
}
