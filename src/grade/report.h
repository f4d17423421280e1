/* Test reports written by a runner inside the sandbox: the parsed form, shared by every format. */
#ifndef PROCTOR_GRADE_REPORT_H
#define PROCTOR_GRADE_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"

/* Numbers are part of the result format: retire, never reuse. */
enum test_outcome {
	OUTCOME_PASSED = 0,
	OUTCOME_FAILED = 1,  /* an assertion failed (<failure>, TAP "not ok", status "failed") */
	OUTCOME_ERROR = 2,   /* the test could not run properly (<error>: setup, exception) */
	OUTCOME_SKIPPED = 3, /* <skipped>, TAP "# SKIP" */
	OUTCOME_MISSING = 4, /* only in grading: a manifest test absent from the report */
};

const char *test_outcome_name(enum test_outcome o);

/* One test as the report states it.  Strings are owned by the report,
 * valid UTF-8, NUL-terminated, and capped (report_caps.max_message). */
struct report_entry {
	char *name;      /* JUnit name, TAP description, Gradescope name */
	char *classname; /* JUnit classname; NULL when the format has none */
	enum test_outcome outcome;
	char *message;   /* failure message/text, or NULL */
	double score;    /* Gradescope only; -1 when absent */
	double max_score;
};

struct report {
	struct report_entry *entries;
	size_t n;
	bool truncated; /* more entries than max_entries: the rest were dropped */
};

/* Caps for parsing hostile input; a report over max_bytes is refused. */
struct report_caps {
	size_t max_bytes;   /* whole document */
	size_t max_entries; /* tests kept */
	size_t max_depth;   /* XML element / JSON nesting depth */
	size_t max_message; /* bytes kept of each message */
};

/* Defaults: 8 MiB, 10000 entries, depth 64, messages 4 KiB. */
void report_caps_default(struct report_caps *c);

/* Parsers: 0 and a filled report, or -1 with a message saying why the
 * document is unusable ("not well-formed XML at line 3", "no <testsuite>").
 * A document that parses but holds no test is a valid, empty report. */
int junit_parse(const char *buf, size_t len, const struct report_caps *caps, struct report *ret,
		struct err *e);
int tap_parse(const char *buf, size_t len, const struct report_caps *caps, struct report *ret,
	      struct err *e);
int gradescope_parse(const char *buf, size_t len, const struct report_caps *caps,
		     struct report *ret, struct err *e);

void report_free(struct report *r);

/* Lossless JSON form, used to carry a report across the privilege boundary
 * (parsers run in an unprivileged child).  from_json validates types. */
json_t *report_to_json(const struct report *r);
int report_from_json(const json_t *j, struct report *ret, struct err *e);

#endif
