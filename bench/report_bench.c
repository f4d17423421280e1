/*
 * report_bench: how report parsing time grows with the report's size.
 *
 *   build/report_bench [ROUNDS] [N_KIB]    (meson compile -C build report_bench)
 *
 * Every shape of bench/report_shapes.h (the worst documents per byte within
 * the parsers' caps, and hostile ones that must be refused) is parsed at N,
 * 2N, 4N and 8N bytes (default N = 1 MiB, so 8N is the 8 MiB cap), in
 * ROUNDS rounds (default 5) that each parse every document once, in a
 * shuffled order: drift of a noisy machine falls on all sizes alike.  It
 * prints the median CPU time of the parsing thread per document, the ratios
 * t(2N)/t(N), t(4N)/t(N), t(8N)/t(N) (linear: 2, 4, 8; quadratic: 4, 16,
 * 64) and the time per byte at 8N.  A measurement, not a test: it exits 0
 * whatever the numbers are, 2 on a bad argument, 1 when a shape parses
 * differently than expected (accepted where it must be refused or the
 * reverse).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report_shapes.h"

#define SIZES 4

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool parse_arg(const char *s, unsigned long lo, unsigned long hi, unsigned long *ret)
{
	char *end;

	errno = 0;
	*ret = strtoul(s, &end, 10);
	return errno == 0 && end != s && *end == '\0' && *ret >= lo && *ret <= hi;
}

int main(int argc, char **argv)
{
	unsigned long rounds = 5, n_kib = 1024;
	struct report_caps caps;
	char *doc[REPORT_SHAPES][SIZES];
	size_t len[REPORT_SHAPES][SIZES];
	uint64_t *t[REPORT_SHAPES][SIZES];
	size_t order[REPORT_SHAPES * SIZES];
	int status = 0;

	if (argc > 3 || (argc > 1 && !parse_arg(argv[1], 1, 1000, &rounds)) ||
	    (argc > 2 && !parse_arg(argv[2], 16, 1024, &n_kib))) {
		fprintf(stderr, "usage: %s [ROUNDS (1-1000)] [N_KIB (16-1024)]\n", argv[0]);
		return 2;
	}
	report_caps_default(&caps);
	for (size_t s = 0; s < REPORT_SHAPES; s++) {
		for (size_t k = 0; k < SIZES; k++) {
			doc[s][k] = report_shape_make(&report_shapes[s], &caps,
						      (size_t)(n_kib << 10) << k, &len[s][k]);
			t[s][k] = calloc(rounds, sizeof(uint64_t));
			if (!doc[s][k] || !t[s][k]) {
				fprintf(stderr, "out of memory\n");
				return 1;
			}
		}
	}
	for (size_t i = 0; i < REPORT_SHAPES * SIZES; i++)
		order[i] = i;
	srand((unsigned)time(NULL));
	for (unsigned long r = 0; r < rounds; r++) {
		for (size_t i = REPORT_SHAPES * SIZES - 1; i > 0; i--) {
			size_t j = (size_t)rand() % (i + 1), x = order[i];

			order[i] = order[j];
			order[j] = x;
		}
		for (size_t i = 0; i < REPORT_SHAPES * SIZES; i++) {
			size_t s = order[i] / SIZES, k = order[i] % SIZES;
			const struct report_shape *sh = &report_shapes[s];
			struct report rep;
			struct err e;
			uint64_t t0 = cpu_ns();
			int rc = sh->parse(doc[s][k], len[s][k], &caps, &rep, &e);

			t[s][k][r] = cpu_ns() - t0;
			if (rc == 0)
				report_free(&rep);
			if ((rc < 0) != sh->refused) {
				fprintf(stderr, "%s at %zu bytes: %s\n", sh->name, len[s][k],
					rc < 0 ? e.msg : "accepted, want refused");
				status = 1;
			}
		}
	}

	printf("median CPU ms of %lu rounds; N = %lu KiB; caps: %zu attributes, names %zu B, "
	       "depth %zu, %zu namespaces\n\n",
	       rounds, n_kib, caps.max_attrs, caps.max_name, caps.max_depth, caps.max_ns);
	printf("%-20s %-8s %9s %9s %9s %9s %7s %7s %7s %9s\n", "shape", "verdict", "N", "2N", "4N",
	       "8N", "2N/N", "4N/N", "8N/N", "ns/B@8N");
	for (size_t s = 0; s < REPORT_SHAPES; s++) {
		double med[SIZES];

		for (size_t k = 0; k < SIZES; k++) {
			qsort(t[s][k], rounds, sizeof(uint64_t), cmp_u64);
			med[k] = (double)t[s][k][rounds / 2];
		}
		printf("%-20s %-8s %9.2f %9.2f %9.2f %9.2f %7.2f %7.2f %7.2f %9.2f\n",
		       report_shapes[s].name, report_shapes[s].refused ? "refused" : "parsed",
		       med[0] / 1e6, med[1] / 1e6, med[2] / 1e6, med[3] / 1e6,
		       med[0] > 0 ? med[1] / med[0] : 0, med[0] > 0 ? med[2] / med[0] : 0,
		       med[0] > 0 ? med[3] / med[0] : 0, med[3] / (double)len[s][SIZES - 1]);
		for (size_t k = 0; k < SIZES; k++) {
			free(doc[s][k]);
			free(t[s][k]);
		}
	}
	return status;
}
