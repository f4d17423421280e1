/* SHA-256 digests (Nettle) for reproducibility records. */
#include "digest.h"

#include <errno.h>
#include <fcntl.h>
#include <nettle/base64.h>
#include <nettle/sha2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct digest {
	struct sha256_ctx ctx;
};

struct digest *digest_new(void)
{
	struct digest *d = malloc(sizeof(*d));

	if (d)
		sha256_init(&d->ctx);
	return d;
}

void digest_update(struct digest *d, const void *buf, size_t len)
{
	sha256_update(&d->ctx, len, buf);
}

void digest_update_str(struct digest *d, const char *s)
{
	uint64_t len = strlen(s);

	digest_update(d, &len, sizeof(len));
	digest_update(d, s, len);
}

int digest_update_file(struct digest *d, const char *path, struct err *e)
{
	char buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return err_set(e, errno, "'%s'", path);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			int saved = errno;
			close(fd);
			return err_set(e, saved, "read '%s'", path);
		}
		if (n == 0)
			break;
		digest_update(d, buf, (size_t)n);
	}
	close(fd);
	return 0;
}

void digest_final(struct digest *d, char hex[65])
{
	uint8_t md[SHA256_DIGEST_SIZE];

	sha256_digest(&d->ctx, sizeof(md), md);
	for (unsigned i = 0; i < SHA256_DIGEST_SIZE; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	hex[64] = '\0';
	digest_free(d);
}

void digest_free(struct digest *d)
{
	free(d);
}

char *base64_of(const void *data, size_t len)
{
	char *out = malloc(BASE64_ENCODE_RAW_LENGTH(len) + 1);

	if (!out)
		return NULL;
	base64_encode_raw(out, len, data);
	out[BASE64_ENCODE_RAW_LENGTH(len)] = '\0';
	return out;
}
