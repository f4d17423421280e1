/* TAP 13/14 reports (node --test, Test::More, tap producers) read line by line. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grade/report.h"
#include "util.h"

/*
 * What counts:
 * - Only unindented "ok"/"not ok" lines are tests.  Indented lines belong to
 *   subtests (TAP 14 "# Subtest:" blocks, node's describe()) and are not
 *   tests of their own: their parent's line carries their verdict.
 * - Directives: "# SKIP" makes a test skipped whatever its ok/not ok.
 *   "# TODO" marks a test expected to fail, and a TODO failure is not a
 *   failure: "not ok # TODO" is skipped (it did not pass, and it earns what
 *   a skip earns), "ok # TODO" passed.
 * - "Bail out!" (at any indentation: it stops the whole run) ends the
 *   report; later lines are ignored.  Bail-out needs no flag of its own:
 *   the tests it prevented are either numbers of the plan, reported below
 *   as missing with the bail-out line as message, or absent, which the
 *   manifest match reports as missing.
 * - A plan "1..N" (first or last) whose numbers 1..N were not all seen adds
 *   one entry "<missing test K>", outcome error, per unseen number.
 * - Message: a test's YAML block ("  ---" ... "  ...") `message:`, else its
 *   `error:` (node writes that), else the directive's reason.
 * - Input with a NUL byte, or without any version, plan, test or bail-out
 *   line, is not TAP.  Lines longer than TAP_MAX_LINE are cut.
 */

#define TAP_MAX_LINE (64u * 1024)

/* Text capped at max_message + 4 bytes: enough for report_str() to cut. */
struct text {
	char *buf;
	size_t len, keep;
	bool cut, set;
};

enum yaml_state { YAML_NONE, YAML_CAN_START, YAML_IN };

struct tap_state {
	const struct report_caps *caps;
	struct report report;
	uint64_t *numbers; /* test number of each kept entry */
	size_t numbers_alloc;
	uint64_t next; /* the number of an unnumbered test: last + 1 */
	bool seen_tap;
	bool have_plan;
	uint64_t plan;
	bool bailed;
	char *bail_line;
	char *scratch; /* TAP_MAX_LINE + 1 bytes for unescaping */

	/* The YAML block under the last test line. */
	enum yaml_state yaml;
	size_t yaml_indent;
	bool yaml_for_kept; /* the last test line's entry was kept */
	struct text y_message, y_error;
	struct text *block;  /* a "|" or ">" scalar being collected */
	size_t block_indent; /* 0 until its first line */
	struct err err;
};

static int text_add(struct text *t, const char *s, size_t n, struct err *e)
{
	size_t room;

	t->set = true;
	if (!t->buf) {
		t->buf = malloc(t->keep);
		if (!t->buf)
			return err_set(e, ENOMEM, "TAP message");
	}
	room = t->keep - t->len;
	if (n > room) {
		n = room;
		t->cut = true;
	}
	memcpy(t->buf + t->len, s, n);
	t->len += n;
	return 0;
}

static void text_reset(struct text *t)
{
	t->len = 0;
	t->cut = t->set = false;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static void trim(const char **s, size_t *len)
{
	while (*len > 0 && is_blank(**s)) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && is_blank((*s)[*len - 1]))
		(*len)--;
}

static bool starts_with(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);

	return len >= n && memcmp(s, prefix, n) == 0;
}

/* ---- YAML diagnostics: just enough for message:/error: ---- */

/* A quoted scalar on one line: '...' ('' is a quote) or "..." (\ escapes). */
static int yaml_quoted(struct text *t, const char *s, size_t len, struct err *e)
{
	char q = s[0];
	size_t i = 1;

	for (; i < len; i++) {
		char c = s[i];

		if (c == q && q == '\'' && i + 1 < len && s[i + 1] == '\'')
			i++; /* '' inside single quotes stands for one */
		else if (c == q)
			break;
		else if (c == '\\' && q == '"' && i + 1 < len) {
			c = s[++i];
			c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
		}
		if (text_add(t, &c, 1, e) < 0)
			return -1;
	}
	return 0;
}

/* A line at the block's own indentation: "key: value". */
static int yaml_key(struct tap_state *st, const char *s, size_t len)
{
	struct text *t;
	size_t klen;

	if (starts_with(s, len, "message:")) {
		t = &st->y_message;
		klen = 8;
	} else if (starts_with(s, len, "error:")) {
		t = &st->y_error;
		klen = 6;
	} else {
		return 0;
	}
	s += klen;
	len -= klen;
	trim(&s, &len);
	text_reset(t);
	if (len > 0 && (s[0] == '|' || s[0] == '>')) {
		/* Block scalar: its lines follow, more indented.  Both styles
		 * keep their line breaks; chomping is left to the final trim. */
		t->set = true;
		st->block = t;
		st->block_indent = 0;
		return 0;
	}
	if (len > 0 && (s[0] == '\'' || s[0] == '"'))
		return yaml_quoted(t, s, len, &st->err);
	return text_add(t, s, len, &st->err);
}

static int yaml_line(struct tap_state *st, const char *line, size_t len, size_t indent)
{
	if (st->block) {
		if (indent == len) /* blank: part of the scalar, unless leading */
			return st->block->len > 0 ? text_add(st->block, "\n", 1, &st->err) : 0;
		if (indent > st->yaml_indent) {
			size_t strip;

			if (st->block_indent == 0)
				st->block_indent = indent;
			strip = indent < st->block_indent ? indent : st->block_indent;
			if (st->block->len > 0 && text_add(st->block, "\n", 1, &st->err) < 0)
				return -1;
			return text_add(st->block, line + strip, len - strip, &st->err);
		}
		st->block = NULL;
	}
	if (indent == st->yaml_indent)
		return yaml_key(st, line + indent, len - indent);
	return 0;
}

/* The block ended: a non-empty message in it replaces the last entry's. */
static int yaml_end(struct tap_state *st)
{
	struct text *t = st->y_message.set ? &st->y_message : &st->y_error;
	struct report_entry *last;
	size_t len = t->len;
	char *msg;

	st->yaml = YAML_NONE;
	st->block = NULL;
	while (!t->cut && len > 0 && (t->buf[len - 1] == '\n' || is_blank(t->buf[len - 1])))
		len--;
	if (!st->yaml_for_kept || len == 0)
		return 0;
	msg = report_str(t->buf, len, st->caps->max_message, t->cut);
	if (!msg)
		return err_set(&st->err, ENOMEM, "TAP message");
	last = &st->report.entries[st->report.n - 1];
	free(last->message);
	last->message = msg;
	return 0;
}

/* ---- test lines ---- */

/* "1..N", optionally followed by a "# comment". */
static void plan_line(struct tap_state *st, const char *s, size_t len)
{
	size_t d = 3;
	uint64_t n;

	while (d < len && d < 3 + 20 && s[d] >= '0' && s[d] <= '9')
		d++;
	if (d == 3 || parse_u64(s + 3, d - 3, &n) < 0)
		return;
	while (d < len && is_blank(s[d]))
		d++;
	if (d < len && s[d] != '#')
		return;
	st->seen_tap = true;
	if (!st->have_plan) {
		st->have_plan = true;
		st->plan = n;
	}
}

/* The description up to an unescaped '#', with "\#" and "\\" unescaped;
 * returns its length in st->scratch and points *ret_directive past '#'. */
static size_t description(struct tap_state *st, const char *s, size_t len,
			  const char **ret_directive)
{
	size_t o = 0, i = 0;

	*ret_directive = NULL;
	for (; i < len; i++) {
		if (s[i] == '\\' && i + 1 < len && (s[i + 1] == '#' || s[i + 1] == '\\')) {
			st->scratch[o++] = s[++i];
			continue;
		}
		if (s[i] == '#') {
			*ret_directive = s + i + 1;
			break;
		}
		st->scratch[o++] = s[i];
	}
	return o;
}

static int test_line(struct tap_state *st, const char *s, size_t len, bool ok)
{
	struct report_entry en = {.score = -1, .max_score = -1};
	const char *desc, *dir, *reason = NULL;
	size_t i = 0, dlen, rlen = 0, kept;
	uint64_t num;
	bool skip = false, todo = false;

	st->seen_tap = true;
	trim(&s, &len);
	/* Optional number. */
	while (i < len && i < 20 && s[i] >= '0' && s[i] <= '9')
		i++;
	if (i > 0 && (i == len || is_blank(s[i])) && parse_u64(s, i, &num) == 0) {
		s += i;
		len -= i;
	} else {
		num = st->next;
	}
	st->next = num == UINT64_MAX ? num : num + 1;
	trim(&s, &len);
	if (len > 0 && s[0] == '-' && (len == 1 || is_blank(s[1]))) {
		s++;
		len--;
	}
	dlen = description(st, s, len, &dir);
	if (dir) {
		size_t dirlen = len - (size_t)(dir - s);

		trim(&dir, &dirlen);
		skip = dirlen >= 4 && strncasecmp(dir, "skip", 4) == 0;
		todo = dirlen >= 4 && strncasecmp(dir, "todo", 4) == 0;
		if (skip || todo) {
			size_t k = 4;

			/* "# SKIP reason", "# skipped: reason" */
			while (k < dirlen && ((dir[k] | 0x20) >= 'a' && (dir[k] | 0x20) <= 'z'))
				k++;
			if (k < dirlen && dir[k] == ':')
				k++;
			reason = dir + k;
			rlen = dirlen - k;
			trim(&reason, &rlen);
		}
	}
	desc = st->scratch;
	trim(&desc, &dlen);

	if (skip || (!ok && todo))
		en.outcome = OUTCOME_SKIPPED;
	else
		en.outcome = ok ? OUTCOME_PASSED : OUTCOME_FAILED;
	en.name = report_str(desc, dlen, st->caps->max_message, false);
	if (rlen > 0)
		en.message = report_str(reason, rlen, st->caps->max_message, false);
	if (!en.name || (rlen > 0 && !en.message)) {
		free(en.name);
		free(en.message);
		return err_set(&st->err, ENOMEM, "TAP test");
	}

	st->yaml = YAML_CAN_START;
	kept = st->report.n;
	if (report_append(&st->report, st->caps, &en, &st->err) < 0)
		return -1;
	st->yaml_for_kept = st->report.n > kept;
	if (!st->yaml_for_kept)
		return 0;
	if (kept == st->numbers_alloc) {
		size_t want = st->report.alloc;
		uint64_t *grown = reallocarray(st->numbers, want, sizeof(*grown));

		if (!grown)
			return err_set(&st->err, ENOMEM, "TAP test numbers");
		st->numbers = grown;
		st->numbers_alloc = want;
	}
	st->numbers[kept] = num;
	return 0;
}

static int tap_line(struct tap_state *st, const char *line, size_t len)
{
	size_t indent = 0;
	const char *s;
	size_t n;

	while (indent < len && is_blank(line[indent]))
		indent++;
	s = line + indent;
	n = len - indent;

	if (st->yaml == YAML_IN) {
		if (n == 3 && memcmp(s, "...", 3) == 0 && indent <= st->yaml_indent)
			return yaml_end(st);
		if (n == 0 || indent >= st->yaml_indent)
			return yaml_line(st, line, len, indent);
		if (yaml_end(st) < 0) /* dedented without "...": over */
			return -1;
	}
	if (st->yaml == YAML_CAN_START) {
		st->yaml = YAML_NONE;
		if (indent > 0 && n == 3 && memcmp(s, "---", 3) == 0) {
			st->yaml = YAML_IN;
			st->yaml_indent = indent;
			text_reset(&st->y_message);
			text_reset(&st->y_error);
			return 0;
		}
	}
	if (starts_with(s, n, "Bail out!")) {
		st->seen_tap = true;
		st->bailed = true;
		trim(&s, &n);
		st->bail_line = report_str(s, n, st->caps->max_message, false);
		return st->bail_line ? 0 : err_set(&st->err, ENOMEM, "TAP bail out");
	}
	if (indent > 0)
		return 0; /* a subtest's line, or noise */
	if (starts_with(s, n, "TAP version ")) {
		st->seen_tap = true;
		return 0;
	}
	if (starts_with(s, n, "1.."))
		plan_line(st, s, n);
	else if (starts_with(s, n, "ok") && (n == 2 || is_blank(s[2])))
		return test_line(st, s + 2, n - 2, true);
	else if (starts_with(s, n, "not ok") && (n == 6 || is_blank(s[6])))
		return test_line(st, s + 6, n - 6, false);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Numbers 1..plan not seen.  Each step either adds an entry or passes a
 * seen number, so a plan of 2^64-1 costs max_entries steps, not 2^64. */
static int add_missing(struct tap_state *st)
{
	size_t kept = st->report.n, i = 0;
	char name[48];

	if (kept > 0)
		qsort(st->numbers, kept, sizeof(*st->numbers), cmp_u64);
	for (uint64_t k = 1; k <= st->plan && !st->report.truncated; k++) {
		struct report_entry en = {.outcome = OUTCOME_ERROR, .score = -1, .max_score = -1};

		while (i < kept && st->numbers[i] < k)
			i++;
		if (i < kept && st->numbers[i] == k)
			continue;
		snprintf(name, sizeof(name), "<missing test %llu>", (unsigned long long)k);
		en.name = strdup(name);
		if (st->bail_line)
			en.message = strdup(st->bail_line);
		if (!en.name || (st->bail_line && !en.message)) {
			free(en.name);
			free(en.message);
			return err_set(&st->err, ENOMEM, "TAP missing tests");
		}
		if (report_append(&st->report, st->caps, &en, &st->err) < 0)
			return -1;
	}
	return 0;
}

static int tap_run(struct tap_state *st, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	if (len > 0 && memchr(buf, '\0', len))
		return err_set(&st->err, 0, "not TAP: the report holds a NUL byte");
	st->scratch = malloc(TAP_MAX_LINE + 1);
	st->y_message.keep = st->y_error.keep = st->caps->max_message + 4;
	if (!st->scratch)
		return err_set(&st->err, ENOMEM, "TAP parser");
	while (p < end && !st->bailed) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = (size_t)((nl ? nl : end) - p);
		const char *next = nl ? nl + 1 : end;

		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n > TAP_MAX_LINE)
			n = TAP_MAX_LINE;
		if (tap_line(st, p, n) < 0)
			return -1;
		p = next;
	}
	if (st->yaml == YAML_IN && yaml_end(st) < 0)
		return -1;
	if (!st->seen_tap)
		return err_set(&st->err, 0, "not TAP: no version, plan or test line");
	if (st->have_plan)
		return add_missing(st);
	return 0;
}

int tap_parse(const char *buf, size_t len, const struct report_caps *caps, struct report *ret,
	      struct err *e)
{
	struct report_caps defaults;
	struct tap_state st = {0};
	int rc;

	if (!caps) {
		report_caps_default(&defaults);
		caps = &defaults;
	}
	if (len > caps->max_bytes)
		return err_set(e, 0, "TAP report is %zu bytes, more than %zu", len,
			       caps->max_bytes);
	if (len == 0)
		return err_set(e, 0, "TAP report is empty");
	st.caps = caps;
	st.next = 1;
	rc = tap_run(&st, buf, len);
	if (rc == 0) {
		*ret = st.report;
		st.report = (struct report){0};
	} else {
		*e = st.err;
	}
	report_free(&st.report);
	free(st.numbers);
	free(st.scratch);
	free(st.bail_line);
	free(st.y_message.buf);
	free(st.y_error.buf);
	return rc;
}
