/* Leaves a daemon behind: in the first call the driver makes (no
 * constructor: Proctor refuses those before anything runs), forks a session leader that
 * ignores SIGTERM and SIGHUP, keeps stdout and stderr open and sleeps for an
 * hour.  The solution is correct; a grader that waits for EOF on the output
 * pipes, or for every process to exit, hangs instead of grading 10/10. */
#define _DEFAULT_SOURCE
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void leave_daemon(void)
{
	pid_t child = fork();

	if (child == 0) {
		setsid();
		if (fork() == 0) {
			signal(SIGTERM, SIG_IGN);
			signal(SIGHUP, SIG_IGN);
			for (int i = 0; i < 3600; i++)
				sleep(1);
		}
		_exit(0);
	}
	if (child > 0)
		waitpid(child, NULL, 0);
}
#include "solution.h"

int digit_sum(long n)
{
	static int once;

	if (!once++)
		leave_daemon();
	unsigned long u = n < 0 ? 0ul - (unsigned long)n : (unsigned long)n;
	int sum = 0;

	for (; u; u /= 10)
		sum += (int)(u % 10);
	return sum;
}

long power_mod(long base, long exp, long mod)
{
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
	for (; *s; s++)
		if (*s >= 'a' && *s <= 'z')
			*s = (char)(*s - 'a' + 'A');
}

int count_char(const char *s, char c)
{
	int n = 0;

	for (; *s; s++)
		n += *s == c;
	return n;
}

int max_of(const int *a, size_t n)
{
	int m = a[0];

	for (size_t i = 1; i < n; i++)
		if (a[i] > m)
			m = a[i];
	return m;
}

int is_sorted(const int *a, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (a[i - 1] > a[i])
			return 0;
	return 1;
}

long bin_search(const int *a, size_t n, int key)
{
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
