/* In the first call the driver makes (no constructor: Proctor refuses those
 * before anything runs), tries to step outside the sandbox: connect to loopback and
 * to a documentation-only address, read /etc/shadow and PID 1's
 * environment, write into /usr, /etc and /, become root, make namespaces,
 * mount a file system, change root.  If anything works, every function
 * gives wrong answers (0/10); in a tight sandbox the solution is correct. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

static int escaped;

static void note(int worked, const char *what)
{
	if (worked) {
		escaped = 1;
		fprintf(stderr, "CORPUS-ESCAPE %s\n", what);
	}
}

static int tcp(const char *ip, int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	int ok = 0;

	if (fd < 0 || inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
		return 0;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		ok = 1;
	} else if (errno == EINPROGRESS) {
		/* A route exists: wait a moment for the answer. */
		fd_set w;
		struct timeval tv = {.tv_sec = 1};
		FD_ZERO(&w);
		FD_SET(fd, &w);
		int err = 0;
		socklen_t len = sizeof(err);
		if (select(fd + 1, NULL, &w, NULL, &tv) == 1 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
			ok = 1;
	}
	close(fd);
	return ok;
}

static int can_open(const char *path, int flags)
{
	int fd = open(path, flags | O_CLOEXEC, 0644);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

static void probe(void)
{
	note(tcp("127.0.0.1", 22), "tcp 127.0.0.1:22");
	note(tcp("127.0.0.1", 5432), "tcp 127.0.0.1:5432");
	note(tcp("198.51.100.42", 80), "tcp 198.51.100.42:80");
	note(can_open("/etc/shadow", O_RDONLY), "read /etc/shadow");
	note(can_open("/proc/1/environ", O_RDONLY), "read /proc/1/environ");
	note(can_open("/usr/corpus_probe", O_WRONLY | O_CREAT), "write /usr");
	note(can_open("/etc/corpus_probe", O_WRONLY | O_CREAT), "write /etc");
	note(can_open("/corpus_probe", O_WRONLY | O_CREAT), "write /");
	note(setuid(0) == 0 && getuid() == 0, "setuid(0)");
	note(unshare(CLONE_NEWUSER) == 0, "unshare(CLONE_NEWUSER)");
	note(unshare(CLONE_NEWNS) == 0, "unshare(CLONE_NEWNS)");
	note(mount("none", "/tmp", "tmpfs", 0, NULL) == 0, "mount tmpfs");
	note(chroot("/tmp") == 0, "chroot");
}
#include "solution.h"

int digit_sum(long n)
{
	static int once;

	if (!once++)
		probe();
	if (escaped)
		return -1;
	unsigned long u = n < 0 ? 0ul - (unsigned long)n : (unsigned long)n;
	int sum = 0;

	for (; u; u /= 10)
		sum += (int)(u % 10);
	return sum;
}

long power_mod(long base, long exp, long mod)
{
	if (escaped)
		return -1;
	unsigned long long result = 1 % mod, b = (unsigned long long)(base % mod + mod) % mod;

	for (; exp > 0; exp >>= 1) {
		if (exp & 1)
			result = (unsigned long long)((unsigned __int128)result * b % mod);
		b = (unsigned long long)((unsigned __int128)b * b % mod);
	}
	return (long)result;
}

void to_upper(char *s)
{
	if (escaped)
		return;
	for (; *s; s++)
		if (*s >= 'a' && *s <= 'z')
			*s = (char)(*s - 'a' + 'A');
}

int count_char(const char *s, char c)
{
	if (escaped)
		return -1;
	int n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

int max_of(const int *a, size_t n)
{
	if (escaped)
		return 0;
	int m = a[0];

	for (size_t i = 1; i < n; i++)
		if (a[i] > m)
			m = a[i];
	return m;
}

int is_sorted(const int *a, size_t n)
{
	if (escaped)
		return 2;
	for (size_t i = 1; i < n; i++)
		if (a[i - 1] > a[i])
			return 0;
	return 1;
}

long bin_search(const int *a, size_t n, int key)
{
	if (escaped)
		return -2;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid] == key)
			return (long)mid;
		if (a[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}
