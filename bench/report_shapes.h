/* Worst-case test reports of any size, for bench/report_bench.c and tests/unit/test_report.c. */
#ifndef PROCTOR_BENCH_REPORT_SHAPES_H
#define PROCTOR_BENCH_REPORT_SHAPES_H

/*
 * Each shape writes a document of close to `size` bytes (never more) that
 * is as expensive per byte as its kind gets within the parsers' caps, or
 * one that crosses a cap and must be refused cheaply.  The parse time of a
 * shape must grow in proportion to its size: the unit test checks that the
 * time of 8N stays far from the 64-fold a quadratic parse would take, and
 * the bench prints the ratios measured side by side.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grade/report.h"

typedef int (*report_parse_fn)(const char *, size_t, const struct report_caps *, struct report *,
			       struct err *);

/* A growing document that never passes its size. */
struct shape_buf {
	char *buf;
	size_t len, size;
};

static bool shape_fits(const struct shape_buf *b, size_t n)
{
	return b->len + n <= b->size;
}

static bool shape_add(struct shape_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool shape_add(struct shape_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(b->buf + b->len, b->size - b->len + 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n > b->size - b->len) {
		b->buf[b->len] = '\0';
		return false;
	}
	b->len += (size_t)n;
	return true;
}

static void shape_fill(struct shape_buf *b, char c, size_t n)
{
	memset(b->buf + b->len, c, n);
	b->len += n;
	b->buf[b->len] = '\0';
}

/* ---- JUnit ---- */

/* The issue's report: one <testcase> with as many attributes as fit. */
static void junit_one_tag(struct shape_buf *b, const struct report_caps *c)
{
	const char *tail = "/></testsuite>";

	shape_add(b, "<testsuite><testcase name=\"t\"");
	for (unsigned long i = 0; shape_fits(b, 24 + strlen(tail)); i++)
		shape_add(b, " a%lu=\"\"", i);
	shape_add(b, "%s", tail);
}

/* Testcases with max_attrs distinct attributes each (pairwise checks). */
static void junit_attrs(struct shape_buf *b, const struct report_caps *c)
{
	shape_add(b, "<testsuite>");
	while (shape_fits(b, c->max_attrs * 12 + 40)) {
		shape_add(b, "<testcase");
		for (size_t i = 0; i < c->max_attrs; i++)
			shape_add(b, " a%zu=\"\"", i);
		shape_add(b, "/>");
	}
	shape_add(b, "</testsuite>");
}

/* max_ns declarations in scope, then elements with max_attrs attributes of
 * the first-declared prefix (the last one a lookup finds) and the same
 * local name. */
static void junit_ns(struct shape_buf *b, const struct report_caps *c)
{
	size_t ns = c->max_ns < c->max_attrs ? c->max_ns : c->max_attrs;

	shape_add(b, "<testsuite");
	for (size_t i = 0; i < ns; i++)
		shape_add(b, " xmlns:p%zu=\"urn:p%zu\"", i, i);
	shape_add(b, ">");
	while (shape_fits(b, c->max_attrs * 14 + 40)) {
		shape_add(b, "<p0:x");
		for (size_t i = 0; i < c->max_attrs && i < ns; i++)
			shape_add(b, " p%zu:a=\"\"", i);
		shape_add(b, "/>");
	}
	shape_add(b, "</testsuite>");
}

/* Nesting to max_depth, again and again. */
static void junit_deep(struct shape_buf *b, const struct report_caps *c)
{
	size_t inner = c->max_depth - 1;

	shape_add(b, "<testsuites>");
	while (shape_fits(b, inner * 8 + 20)) {
		for (size_t i = 0; i < inner; i++)
			shape_add(b, "<a>");
		for (size_t i = 0; i < inner; i++)
			shape_add(b, "</a>");
	}
	shape_add(b, "</testsuites>");
}

/* Element and attribute names of max_name bytes. */
static void junit_names(struct shape_buf *b, const struct report_caps *c)
{
	shape_add(b, "<testsuite>");
	while (shape_fits(b, c->max_name * 3 + 20)) {
		shape_add(b, "<");
		shape_fill(b, 'n', c->max_name);
		shape_add(b, " ");
		shape_fill(b, 'a', c->max_name);
		shape_add(b, "=\"\"/>");
	}
	shape_add(b, "</testsuite>");
}

/* Testcases with a failure, far past max_entries. */
static void junit_testcases(struct shape_buf *b, const struct report_caps *c)
{
	shape_add(b, "<testsuites><testsuite name=\"s\">");
	for (unsigned long i = 0; shape_fits(b, 160); i++)
		shape_add(b,
			  "<testcase name=\"test_%lu\" classname=\"pkg.Mod\" time=\"0.001\">"
			  "<failure message=\"assert 1 == 2\">trace</failure></testcase>",
			  i);
	shape_add(b, "</testsuite></testsuites>");
}

/* A comment holding a bad character, then a tag with attributes as many
 * as fit: libxml2 resumes the comment as content after its error. */
static void junit_bad_comment(struct shape_buf *b, const struct report_caps *c)
{
	const char *tail = "/>--></testsuite>";

	shape_add(b, "<testsuite><!--\x01<a");
	for (unsigned long i = 0; shape_fits(b, 24 + strlen(tail)); i++)
		shape_add(b, " a%lu=\"\"", i);
	shape_add(b, "%s", tail);
}

/* ---- TAP ---- */

static void tap_lines(struct shape_buf *b, const struct report_caps *c)
{
	shape_add(b, "TAP version 13\n");
	for (unsigned long i = 1; shape_fits(b, 60); i++)
		shape_add(b, "%s %lu - test number %lu\n", i % 3 ? "ok" : "not ok", i, i);
}

static void tap_yaml(struct shape_buf *b, const struct report_caps *c)
{
	shape_add(b, "TAP version 13\n");
	for (unsigned long i = 1; shape_fits(b, 120); i++)
		shape_add(b, "not ok %lu - t\n  ---\n  message: \"a \\\"quoted\\\" text\"\n  ...\n",
			  i);
}

/* Lines of 100 KB (cut at 64 KiB), escapes all along. */
static void tap_long_lines(struct shape_buf *b, const struct report_caps *c)
{
	for (unsigned long i = 1; shape_fits(b, 100040); i++) {
		shape_add(b, "ok %lu - ", i);
		for (size_t k = 0; k < 50000; k++)
			shape_add(b, "\\#");
		shape_add(b, "\n");
	}
}

/* ---- Gradescope ---- */

static void gs_tests(struct shape_buf *b, const struct report_caps *c)
{
	shape_add(b, "{\"tests\": [");
	for (unsigned long i = 0; shape_fits(b, 120); i++)
		shape_add(
		    b, "%s{\"name\": \"t%lu\", \"score\": 1, \"max_score\": 2, \"output\": \"x\"}",
		    i ? ", " : "", i);
	shape_add(b, "]}");
}

static void gs_keys(struct shape_buf *b, const struct report_caps *c)
{
	shape_add(b, "{\"tests\": [{\"name\": \"t\"");
	for (unsigned long i = 0; shape_fits(b, 40); i++)
		shape_add(b, ", \"k%lu\": 0", i);
	shape_add(b, "}]}");
}

static void gs_deep(struct shape_buf *b, const struct report_caps *c)
{
	size_t inner = c->max_depth - 2;

	shape_add(b, "{\"x\": [");
	for (unsigned long i = 0; shape_fits(b, inner * 2 + 10); i++) {
		shape_add(b, "%s", i ? "," : "");
		shape_fill(b, '[', inner);
		shape_fill(b, ']', inner);
	}
	shape_add(b, "]}");
}

static void gs_number(struct shape_buf *b, const struct report_caps *c)
{
	shape_add(b, "{\"score\": 1.");
	shape_fill(b, '1', b->size - b->len - 1);
	shape_add(b, "}");
}

struct report_shape {
	const char *name;
	report_parse_fn parse;
	bool refused; /* it crosses a cap: the parser must refuse it */
	void (*make)(struct shape_buf *b, const struct report_caps *c);
};

static const struct report_shape report_shapes[] = {
    {"junit_one_tag_attrs", junit_parse, true, junit_one_tag},
    {"junit_attrs_at_cap", junit_parse, false, junit_attrs},
    {"junit_ns_at_cap", junit_parse, false, junit_ns},
    {"junit_deep_at_cap", junit_parse, false, junit_deep},
    {"junit_names_at_cap", junit_parse, false, junit_names},
    {"junit_testcases", junit_parse, false, junit_testcases},
    {"junit_bad_comment", junit_parse, true, junit_bad_comment},
    {"tap_lines", tap_parse, false, tap_lines},
    {"tap_yaml", tap_parse, false, tap_yaml},
    {"tap_long_lines", tap_parse, false, tap_long_lines},
    {"gradescope_tests", gradescope_parse, false, gs_tests},
    {"gradescope_keys", gradescope_parse, false, gs_keys},
    {"gradescope_deep", gradescope_parse, false, gs_deep},
    {"gradescope_number", gradescope_parse, false, gs_number},
};

#define REPORT_SHAPES (sizeof(report_shapes) / sizeof(report_shapes[0]))

/* A new document of the shape, at most `size` bytes; NULL on OOM. */
static char *report_shape_make(const struct report_shape *s, const struct report_caps *c,
			       size_t size, size_t *ret_len)
{
	struct shape_buf b = {.buf = malloc(size + 1), .size = size};

	*ret_len = 0;
	if (!b.buf)
		return NULL;
	b.buf[0] = '\0';
	s->make(&b, c);
	*ret_len = b.len;
	return b.buf;
}

#endif
