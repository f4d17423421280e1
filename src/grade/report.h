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
	size_t alloc;   /* entries allocated (private to report.c) */
};

/* Caps for parsing hostile input; a report over max_bytes is refused, and
 * so is an XML document over max_depth, max_attrs, max_name or max_ns. */
struct report_caps {
	size_t max_bytes;   /* whole document */
	size_t max_entries; /* tests kept */
	size_t max_depth;   /* XML element / JSON nesting depth */
	size_t max_message; /* bytes kept of each message */
	size_t max_attrs;   /* attributes of one XML element, namespace declarations included */
	size_t max_name;    /* bytes of one XML element or attribute name */
	size_t max_ns;      /* XML namespace declarations in scope at once */
};

/* Defaults: 8 MiB, 10000 entries, depth 64, messages 4 KiB; XML: 256
 * attributes per element, names of 256 bytes, 64 namespace declarations. */
void report_caps_default(struct report_caps *c);

/* Parsers: 0 and a filled report, or -1 with a message saying why the
 * document is unusable ("not well-formed XML at line 3", "no <testsuite>").
 * A document that parses but holds no test is a valid, empty report.
 * `caps` NULL means the defaults. */
int junit_parse(const char *buf, size_t len, const struct report_caps *caps, struct report *ret,
		struct err *e);
int tap_parse(const char *buf, size_t len, const struct report_caps *caps, struct report *ret,
	      struct err *e);
int gradescope_parse(const char *buf, size_t len, const struct report_caps *caps,
		     struct report *ret, struct err *e);

/* Frees the entries and their strings and zeroes *r; accepts NULL. */
void report_free(struct report *r);

/* Lossless JSON form, used to carry a report across the privilege boundary
 * (parsers run in an unprivileged child):
 *   {"entries": [{"name": str, "classname": str|null, "outcome": "passed",
 *                 "message": str|null, "score": num, "max_score": num}],
 *    "truncated": bool}
 * to_json returns a new reference, NULL on OOM.  from_json trusts nothing:
 * any missing or extra key, wrong type, unknown outcome ("missing" too: it
 * only exists in grading), string with NUL or invalid UTF-8, string longer
 * than caps->max_message, more than caps->max_entries entries or non-finite
 * score is refused.  report_from_json() uses the default caps. */
json_t *report_to_json(const struct report *r);
int report_from_json(const json_t *j, struct report *ret, struct err *e);
int report_from_json_caps(const json_t *j, const struct report_caps *caps, struct report *ret,
			  struct err *e);

/* ---- for the parsers ---- */

/* A new string holding [s, s+len) made valid UTF-8 (ill-formed bytes become
 * U+FFFD; with `cut`, a character cut in half at the end is dropped), ending
 * at the first NUL, then cut to at most `max` bytes at a character boundary.
 * NULL on OOM. */
char *report_str(const char *s, size_t len, size_t max, bool cut);

/* Append *entry, which gives up its strings whatever happens: a full report
 * (caps->max_entries) frees them and sets r->truncated.  -1 only on OOM. */
int report_append(struct report *r, const struct report_caps *caps, struct report_entry *entry,
		  struct err *e);

#endif
