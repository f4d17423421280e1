/* Matching the assignment's manifest of tests against a parsed report. */
#ifndef PROCTOR_GRADE_MATCH_H
#define PROCTOR_GRADE_MATCH_H

#include <stddef.h>

#include "grade/report.h"

/* One test the assignment declares (the manifest). */
struct manifest_test {
	char *name;      /* required */
	char *classname; /* optional: must then match too */
	double points;
};

/* The verdict of one manifest test. */
struct matched_test {
	enum test_outcome outcome; /* OUTCOME_MISSING when no entry matched */
	size_t matches;            /* report entries that matched */
	const char *message;       /* borrowed from the report: first non-passing entry's */
};

/*
 * Rules (docs/assignment.md, "How tests are matched"):
 * an entry matches a manifest test when its name equals the manifest name,
 * or equals it followed by a parameter suffix "[...]" or "(...)" (pytest
 * parametrize, JUnit 5 "name()" and "name(int)[1]"), and, when the manifest
 * test has a classname, the entry's classname equals it or ends with
 * "." + classname.  Several matching entries (parameterized or duplicated)
 * pass only if all pass: any failed/error entry makes the test failed/error
 * (error wins over failed), else any skipped makes it skipped.  TAP entries
 * are matched by description the same way.  Undeclared entries are ignored.
 * `out` has n_tests elements.  Returns how many manifest tests matched at
 * least one entry.
 */
size_t report_match(const struct report *r, const struct manifest_test *tests, size_t n_tests,
		    struct matched_test *out);

#endif
