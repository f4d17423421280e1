/* Matching the assignment's manifest of tests against a parsed report (rules in match.h). */
#include "grade/match.h"

#include <string.h>

/* What follows the manifest name in an entry's name: a parameter suffix
 * "[...]" (pytest), "(...)" or "(...)[...]" (JUnit 5), or nothing. */
static bool is_param_suffix(const char *s)
{
	size_t len = strlen(s);

	if (len < 2)
		return false;
	if (s[0] == '[')
		return s[len - 1] == ']';
	if (s[0] != '(')
		return false;
	if (s[len - 1] == ')')
		return true;
	return s[len - 1] == ']' && strstr(s, ")[") != NULL;
}

static bool name_matches(const char *entry, const char *want)
{
	size_t n = strlen(want);

	if (strncmp(entry, want, n) != 0)
		return false;
	return entry[n] == '\0' || is_param_suffix(entry + n);
}

/* Equal, or a dotted suffix: "PrimeTest" matches "edu.uni.PrimeTest". */
static bool classname_matches(const char *entry, const char *want)
{
	size_t len, n;

	if (!entry)
		return false;
	len = strlen(entry);
	n = strlen(want);
	if (len == n)
		return strcmp(entry, want) == 0;
	return len > n && entry[len - n - 1] == '.' && strcmp(entry + len - n, want) == 0;
}

/* How bad an outcome is when several entries match: error > failed >
 * skipped > passed.  Anything else (no parser reports "missing") counts as
 * an error rather than being trusted. */
static int severity(enum test_outcome o)
{
	switch (o) {
	case OUTCOME_PASSED:
		return 0;
	case OUTCOME_SKIPPED:
		return 1;
	case OUTCOME_FAILED:
		return 2;
	case OUTCOME_ERROR:
	default:
		return 3;
	}
}

static void match_one(const struct report *r, const struct manifest_test *t,
		      struct matched_test *out)
{
	bool seen_non_passing = false;

	*out = (struct matched_test){.outcome = OUTCOME_MISSING};
	for (size_t i = 0; i < r->n; i++) {
		const struct report_entry *en = &r->entries[i];
		enum test_outcome o = en->outcome;

		if (!name_matches(en->name, t->name))
			continue;
		if (t->classname && !classname_matches(en->classname, t->classname))
			continue;
		if (severity(o) == 3)
			o = OUTCOME_ERROR;
		if (out->matches++ == 0 || severity(o) > severity(out->outcome))
			out->outcome = o;
		if (o != OUTCOME_PASSED && !seen_non_passing) {
			out->message = en->message; /* the first non-passing entry's */
			seen_non_passing = true;
		}
	}
}

size_t report_match(const struct report *r, const struct manifest_test *tests, size_t n_tests,
		    struct matched_test *out)
{
	size_t matched = 0;

	for (size_t i = 0; i < n_tests; i++) {
		match_one(r, &tests[i], &out[i]);
		if (out[i].matches > 0)
			matched++;
	}
	return matched;
}
