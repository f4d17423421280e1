/* Integration tests: `proctor class` grading a small class, resuming, never overwriting,
 * interrupted. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

/*
 * A temporary class of submissions of examples/python-pytest: alice (the
 * reference solution), bob (the same files again: a regrade must agree),
 * carol (partial credit), dave (a syntax error), erin.zip (the reference
 * solution as a zip archive), plus entries that are not submissions (a
 * hidden directory, a text file).  One full run is made in the group
 * setup; the tests then check what it wrote, that it is never overwritten
 * by accident, that --resume grades only what has no verdict, and that an
 * interrupted run keeps what it wrote.  Expected scores are never typed
 * in: the reference solution must get max_score, whatever that is.
 */

#ifndef EXAMPLES_DIR
#error "EXAMPLES_DIR must name the examples/ directory (meson passes it)"
#endif

#define ASSIGNMENT	EXAMPLES_DIR "/python-pytest"
#define SUBMISSIONS	ASSIGNMENT "/submissions"
#define CLASS_TIMEOUT_S 600
#define QUICK_TIMEOUT_S 30
#define MAX_ROWS	32
#define MAX_FIELDS	8
#define MAX_LINES	64
#define N_GRADED	5 /* alice, bob, carol, dave, erin.zip */

struct fixture {
	bool can_run; /* root: the group setup graded the class */
	char *tmp;    /* owned temporary directory */
	char class_dir[PATH_MAX];
	char csv[PATH_MAX], jsonl[PATH_MAX];
	struct proc_out first; /* the first full run */
};

/* ---- files -------------------------------------------------------------- */

static void make_dir(const char *path)
{
	if (mkdir(path, 0755) < 0)
		fail_msg("mkdir %s: %s", path, strerror(errno));
}

/* A submission directory holding one solution.py. */
static void make_submission(const char *class_dir, const char *name, const char *source)
{
	char dir[PATH_MAX], file[PATH_MAX];

	harness_path_join(dir, class_dir, name);
	make_dir(dir);
	harness_path_join(file, dir, "solution.py");
	harness_write(NULL, file, source, strlen(source));
}

static char *example_solution(const char *which)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/%s/solution.py", SUBMISSIONS, which);
	return harness_read(path, NULL);
}

/* ---- a zip archive, stored (no compression) ----------------------------- */

static uint32_t crc32_of(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1)));
	}
	return ~c;
}

static void put16(FILE *f, unsigned v)
{
	fputc(v & 0xff, f);
	fputc((v >> 8) & 0xff, f);
}

static void put32(FILE *f, uint32_t v)
{
	put16(f, v & 0xffff);
	put16(f, v >> 16);
}

/* A zip with one regular file `name` holding `data`. */
static void write_zip(const char *path, const char *name, const char *data)
{
	size_t len = strlen(data), nlen = strlen(name);
	uint32_t crc = crc32_of((const unsigned char *)data, len);
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	/* local file header */
	put32(f, 0x04034b50);
	put16(f, 20);
	put16(f, 0);
	put16(f, 0);
	put16(f, 0);
	put16(f, 0x21); /* 1980-01-01 */
	put32(f, crc);
	put32(f, (uint32_t)len);
	put32(f, (uint32_t)len);
	put16(f, (unsigned)nlen);
	put16(f, 0);
	fwrite(name, 1, nlen, f);
	fwrite(data, 1, len, f);
	long cd_offset = ftell(f);
	/* central directory */
	put32(f, 0x02014b50);
	put16(f, 0x0314); /* made by: Unix, 2.0 */
	put16(f, 20);
	put16(f, 0);
	put16(f, 0);
	put16(f, 0);
	put16(f, 0x21);
	put32(f, crc);
	put32(f, (uint32_t)len);
	put32(f, (uint32_t)len);
	put16(f, (unsigned)nlen);
	put16(f, 0);
	put16(f, 0);
	put16(f, 0);
	put16(f, 0);
	put32(f, (uint32_t)0100644 << 16);
	put32(f, 0);
	fwrite(name, 1, nlen, f);
	long cd_end = ftell(f);
	/* end of central directory */
	put32(f, 0x06054b50);
	put16(f, 0);
	put16(f, 0);
	put16(f, 1);
	put16(f, 1);
	put32(f, (uint32_t)(cd_end - cd_offset));
	put32(f, (uint32_t)cd_offset);
	put16(f, 0);
	assert_int_equal(fclose(f), 0);
}

/* ---- CSV (RFC 4180) and JSON lines -------------------------------------- */

struct csv {
	size_t n_rows;
	size_t n_fields[MAX_ROWS];
	char *field[MAX_ROWS][MAX_FIELDS]; /* owned */
};

/* Parse a whole CSV file whose records end in CRLF. */
static void csv_parse(const char *text, struct csv *ret)
{
	const char *p = text;

	memset(ret, 0, sizeof(*ret));
	while (*p) {
		size_t r = ret->n_rows++;
		assert_true(r < MAX_ROWS);
		for (;;) {
			char buf[4096];
			size_t n = 0;
			if (*p == '"') {
				for (p++;; p++) {
					assert_true(*p != '\0');
					if (*p == '"' && p[1] == '"') {
						buf[n++] = '"';
						p++;
					} else if (*p == '"') {
						p++;
						break;
					} else {
						buf[n++] = *p;
					}
					assert_true(n < sizeof buf - 1);
				}
			} else {
				while (*p && *p != ',' && *p != '\r' && *p != '\n') {
					buf[n++] = *p++;
					assert_true(n < sizeof buf - 1);
				}
			}
			buf[n] = '\0';
			assert_true(ret->n_fields[r] < MAX_FIELDS);
			ret->field[r][ret->n_fields[r]++] = strdup(buf);
			if (*p == ',') {
				p++;
				continue;
			}
			/* Every record ends in CRLF, the last one too. */
			assert_int_equal(p[0], '\r');
			assert_int_equal(p[1], '\n');
			p += 2;
			break;
		}
	}
}

static void csv_free(struct csv *c)
{
	for (size_t r = 0; r < c->n_rows; r++)
		for (size_t i = 0; i < c->n_fields[r]; i++)
			free(c->field[r][i]);
}

/* The row whose first field is `name`, or -1. */
static long csv_find(const struct csv *c, const char *name)
{
	for (size_t r = 1; r < c->n_rows; r++)
		if (strcmp(c->field[r][0], name) == 0)
			return (long)r;
	return -1;
}

/* Split a file into lines (each must end in '\n'); `lines` point into `text`. */
static size_t split_lines(char *text, char **lines)
{
	size_t n = 0;

	for (char *p = text; *p;) {
		char *nl = strchr(p, '\n');
		assert_non_null(nl);
		*nl = '\0';
		assert_true(n < MAX_LINES);
		lines[n++] = p;
		p = nl + 1;
	}
	return n;
}

static json_t *parse_result_line(const char *line)
{
	json_error_t je;
	json_t *j = json_loads(line, 0, &je);

	if (!j)
		fail_msg("a JSON line does not parse (%s): %.200s", je.text, line);
	assert_true(json_is_object(j));
	assert_non_null(json_string_value(json_object_get(j, "submission_name")));
	assert_non_null(json_string_value(json_object_get(j, "status")));
	return j;
}

static const char *jname(const json_t *j)
{
	return json_string_value(json_object_get(j, "submission_name"));
}

/* ---- running proctor ---------------------------------------------------- */

/* A usage error: exit 2 and exactly one line on stderr starting "proctor: ". */
static void expect_usage_error(char *const *args, const char *mention)
{
	struct proc_out o;

	harness_run(&o, NULL, QUICK_TIMEOUT_S, args);
	if (o.exit_status != 2 || strncmp(o.err, "proctor: ", 9) != 0 ||
	    strchr(o.err, '\n') != o.err + o.err_len - 1 || (mention && !strstr(o.err, mention)))
		fail_msg("class %s %s: want exit 2 and one 'proctor: ' line%s%s, got %d: %s",
			 args[1] ? args[1] : "", args[1] && args[2] ? args[2] : "",
			 mention ? " naming " : "", mention ? mention : "", o.exit_status, o.err);
	proc_out_free(&o);
}

/* ---- group setup: a class, graded once ---------------------------------- */

static int class_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[PATH_MAX], out_dir[PATH_MAX];

	assert_non_null(f);
	*state = f;
	/* mkdtemp's 0700, as an instructor's home directory would be: proctor
	 * opens the submissions and hands them to the unprivileged helper. */
	f->tmp = harness_tmpdir();
	harness_path_join(f->class_dir, f->tmp, "class");
	make_dir(f->class_dir);
	harness_path_join(out_dir, f->tmp, "out");
	make_dir(out_dir);
	harness_path_join(f->csv, out_dir, "grades.csv");
	harness_path_join(f->jsonl, out_dir, "grades.jsonl");

	char *correct = example_solution("correct");
	char *partial = example_solution("partial");
	char *broken = example_solution("syntax_error");
	make_submission(f->class_dir, "alice", correct);
	make_submission(f->class_dir, "bob", correct);
	make_submission(f->class_dir, "carol", partial);
	make_submission(f->class_dir, "dave", broken);
	harness_path_join(path, f->class_dir, "erin.zip");
	write_zip(path, "solution.py", correct);
	/* Not submissions: a hidden directory and a text file. */
	make_submission(f->class_dir, ".hidden", broken);
	harness_path_join(path, f->class_dir, "notes.txt");
	harness_write(NULL, path, "not a submission\n", 17);
	free(correct);
	free(partial);
	free(broken);

	if (geteuid() != 0)
		return 0; /* each grading test skips or fails on its own */
	f->can_run = true;
	harness_run(
	    &f->first, NULL, CLASS_TIMEOUT_S,
	    (char *const[]){"class", "-j", "2", "--out", f->csv, ASSIGNMENT, f->class_dir, NULL});
	return 0;
}

static int class_teardown(void **state)
{
	struct fixture *f = *state;

	if (f->can_run)
		proc_out_free(&f->first);
	harness_rm_tree(f->tmp);
	free(f->tmp);
	free(f);
	return 0;
}

static void require_class(struct fixture *f)
{
	harness_require_root("the jail");
	if (!f->can_run)
		skip();
	if (f->first.exit_status != 0)
		fail_msg("the class run exited %d; stderr:\n%s\nstdout:\n%s", f->first.exit_status,
			 f->first.err, f->first.out);
}

/* ---- tests -------------------------------------------------------------- */

static void test_class_help_lists_exit_status(void **state)
{
	struct proc_out o;

	(void)state;
	harness_run(&o, NULL, QUICK_TIMEOUT_S, (char *const[]){"class", "--help", NULL});
	assert_int_equal(o.exit_status, 0);
	assert_non_null(strstr(o.out, "usage: proctor class"));
	assert_non_null(strstr(o.out, "EXIT STATUS"));
	assert_non_null(strstr(o.out, "--resume"));
	proc_out_free(&o);
}

static void test_class_bad_options_are_usage_errors(void **state)
{
	struct fixture *f = *state;
	char missing[PATH_MAX], not_assignment[PATH_MAX], txt[PATH_MAX];
	const char *a = ASSIGNMENT, *d = f->class_dir;

	harness_path_join(missing, f->tmp, "no-such-dir");
	harness_path_join(not_assignment, f->tmp, "out");
	harness_path_join(txt, f->tmp, "grades.txt");
	const char *bad_jobs[] = {"0", "-1", "abc", "1.5", "", "257", "99999999999999999999", NULL};
	for (size_t i = 0; bad_jobs[i]; i++) {
		expect_usage_error(
		    (char *const[]){"class", "-j", (char *)bad_jobs[i], (char *)a, (char *)d, NULL},
		    "-j");
		char opt[64];
		snprintf(opt, sizeof opt, "--jobs=%s", bad_jobs[i]);
		expect_usage_error((char *const[]){"class", opt, (char *)a, (char *)d, NULL}, "-j");
	}
	/* More workers than sandbox slots. */
	expect_usage_error(
	    (char *const[]){"class", "-j", "8", "--slots", "4", (char *)a, (char *)d, NULL},
	    "--slots");
	expect_usage_error((char *const[]){"class", (char *)a, (char *)d, "-j", NULL}, "-j");
	expect_usage_error((char *const[]){"class", "--slots", "0", (char *)a, (char *)d, NULL},
			   "--slots");
	expect_usage_error((char *const[]){"class", "--bogus", (char *)a, (char *)d, NULL},
			   "--bogus");
	expect_usage_error((char *const[]){"class", "--out", txt, (char *)a, (char *)d, NULL},
			   "grades.txt");
	expect_usage_error((char *const[]){"class", "--resume", (char *)a, (char *)d, NULL},
			   "--resume");
	expect_usage_error((char *const[]){"class", (char *)a, NULL}, NULL);
	expect_usage_error((char *const[]){"class", (char *)a, (char *)d, (char *)d, NULL}, NULL);
	/* An assignment that does not load, a DIR that cannot be read. */
	expect_usage_error((char *const[]){"class", not_assignment, (char *)d, NULL}, NULL);
	expect_usage_error((char *const[]){"class", (char *)a, missing, NULL}, "no-such-dir");
}

static void test_class_grades_every_submission_into_a_gradebook(void **state)
{
	struct fixture *f = *state;
	struct csv c;

	require_class(f);
	char *text = harness_read(f->csv, NULL);
	csv_parse(text, &c);
	free(text);
	assert_int_equal(c.n_fields[0], 7);
	const char *header[] = {"submission", "status", "score", "max_score",
				"passed",     "total",	"reason"};
	for (size_t i = 0; i < 7; i++)
		assert_string_equal(c.field[0][i], header[i]);
	/* One row per submission, sorted by name; nothing else. */
	const char *names[N_GRADED] = {"alice", "bob", "carol", "dave", "erin.zip"};
	assert_int_equal(c.n_rows, 1 + N_GRADED);
	for (size_t i = 0; i < N_GRADED; i++) {
		assert_string_equal(c.field[1 + i][0], names[i]);
		assert_int_equal(c.n_fields[1 + i], 7);
	}
	long alice = csv_find(&c, "alice"), bob = csv_find(&c, "bob"),
	     carol = csv_find(&c, "carol");
	long dave = csv_find(&c, "dave"), erin = csv_find(&c, "erin.zip");
	/* The reference solution gets every point, as a directory or a zip. */
	for (long r = alice, k = 0; k < 2; r = erin, k++) {
		assert_string_equal(c.field[r][1], "graded");
		assert_string_equal(c.field[r][2], c.field[r][3]);
		assert_string_equal(c.field[r][4], c.field[r][5]);
		assert_true(atof(c.field[r][3]) > 0);
	}
	/* The same files graded twice get the same row. */
	for (size_t i = 1; i < 7; i++)
		assert_string_equal(c.field[alice][i], c.field[bob][i]);
	/* Partial credit. */
	assert_string_equal(c.field[carol][1], "graded");
	assert_true(atoi(c.field[carol][4]) > 0);
	assert_true(atoi(c.field[carol][4]) < atoi(c.field[carol][5]));
	assert_true(atof(c.field[carol][2]) < atof(c.field[carol][3]));
	/* A broken submission is the student's failure, with a reason, never
	 * Proctor's "error". */
	assert_string_not_equal(c.field[dave][1], "graded");
	assert_string_not_equal(c.field[dave][1], "error");
	assert_string_equal(c.field[dave][2], "0");
	assert_true(strlen(c.field[dave][6]) > 0);
	csv_free(&c);

	/* Progress without a terminal: one line per submission. */
	for (size_t i = 0; i < N_GRADED; i++) {
		char want[64];
		snprintf(want, sizeof want, "] %s: ", names[i]);
		assert_non_null(strstr(f->first.err, want));
	}
	assert_non_null(strstr(f->first.err, "[5/5] "));
	assert_null(strstr(f->first.err, ".hidden"));
	assert_null(strstr(f->first.err, "notes.txt"));
	/* The summary: counts by status, mean and median, a histogram. */
	assert_non_null(strstr(f->first.out, "graded"));
	assert_non_null(strstr(f->first.out, "mean"));
	assert_non_null(strstr(f->first.out, "median"));
	assert_non_null(strstr(f->first.out, "#"));
	harness_assert_clean();
}

static void test_class_jsonl_holds_every_result_document(void **state)
{
	struct fixture *f = *state;
	char *lines[MAX_LINES];
	json_t *alice = NULL, *bob = NULL;

	require_class(f);
	char *text = harness_read(f->jsonl, NULL);
	size_t n = split_lines(text, lines);
	assert_int_equal(n, N_GRADED);
	for (size_t i = 0; i < n; i++) {
		json_t *j = parse_result_line(lines[i]);
		assert_int_equal(json_integer_value(json_object_get(j, "schema_version")), 1);
		assert_true(json_is_array(json_object_get(j, "tests")));
		if (strcmp(jname(j), "alice") == 0)
			alice = j;
		else if (strcmp(jname(j), "bob") == 0)
			bob = j;
		else
			json_decref(j);
	}
	assert_non_null(alice);
	assert_non_null(bob);
	/* A duplicate submission: the same verdict, score and per-test outcomes. */
	const char *same[] = {"status", "score", "max_score", "passed", "total", "tests"};
	for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
		if (!json_equal(json_object_get(alice, same[i]), json_object_get(bob, same[i])))
			fail_msg("alice and bob differ in '%s'", same[i]);
	json_t *da = json_object_get(json_object_get(alice, "submission"), "digest");
	json_t *db = json_object_get(json_object_get(bob, "submission"), "digest");
	assert_true(json_is_string(da));
	assert_true(json_equal(da, db));
	json_decref(alice);
	json_decref(bob);
	free(text);
}

static void test_class_refuses_to_overwrite_its_output(void **state)
{
	struct fixture *f = *state;
	size_t csv_len, jsonl_len;

	require_class(f);
	char *csv_before = harness_read(f->csv, &csv_len);
	char *jsonl_before = harness_read(f->jsonl, &jsonl_len);
	expect_usage_error(
	    (char *const[]){"class", "--out", f->csv, ASSIGNMENT, f->class_dir, NULL},
	    "grades.csv");
	expect_usage_error(
	    (char *const[]){"class", "--out", f->jsonl, ASSIGNMENT, f->class_dir, NULL},
	    "grades.jsonl");
	char *csv_after = harness_read(f->csv, NULL), *jsonl_after = harness_read(f->jsonl, NULL);
	assert_memory_equal(csv_before, csv_after, csv_len + 1);
	assert_memory_equal(jsonl_before, jsonl_after, jsonl_len + 1);
	free(csv_before);
	free(csv_after);
	free(jsonl_before);
	free(jsonl_after);
}

/*
 * The earlier run's JSON lines are edited: carol's result removed, an
 * "error" result appended for dave, and an incomplete line left at the end
 * (as a run killed mid-write leaves it).  --resume must grade exactly carol
 * and dave, keep every other line byte for byte, drop the incomplete one,
 * and end with the same gradebook as the first run.
 */
static void test_class_resume_grades_only_missing_and_error(void **state)
{
	struct fixture *f = *state;
	char *lines[MAX_LINES], *kept_lines[MAX_LINES];
	size_t n_kept = 0;
	struct proc_out o;

	require_class(f);
	char *csv_first = harness_read(f->csv, NULL);
	char *text = harness_read(f->jsonl, NULL);
	size_t n = split_lines(text, lines);
	FILE *w = fopen(f->jsonl, "wb");
	assert_non_null(w);
	for (size_t i = 0; i < n; i++) {
		json_t *j = parse_result_line(lines[i]);
		if (strcmp(jname(j), "carol") != 0) {
			fprintf(w, "%s\n", lines[i]);
			kept_lines[n_kept++] = lines[i];
		}
		json_decref(j);
	}
	const char *fake = "{\"submission_name\":\"dave\",\"status\":\"error\","
			   "\"reason\":\"test: pretend Proctor failed\"}";
	fprintf(w, "%s\n{\"submission_name\":\"erin.z", fake);
	assert_int_equal(fclose(w), 0);

	harness_run(&o, NULL, CLASS_TIMEOUT_S,
		    (char *const[]){"class", "--resume", "-j", "2", "--out", f->csv, ASSIGNMENT,
				    f->class_dir, NULL});
	if (o.exit_status != 0)
		fail_msg("resume exited %d: %s", o.exit_status, o.err);
	/* Only carol and dave were graded. */
	assert_non_null(strstr(o.err, "[2/2] "));
	assert_non_null(strstr(o.err, "] carol: "));
	assert_non_null(strstr(o.err, "] dave: "));
	assert_null(strstr(o.err, "] alice: "));
	assert_null(strstr(o.err, "] bob: "));
	assert_null(strstr(o.err, "] erin.zip: "));
	proc_out_free(&o);

	char *after = harness_read(f->jsonl, NULL);
	char *after_lines[MAX_LINES] = {0};
	size_t m = split_lines(after, after_lines);
	assert_int_equal(m, n_kept + 1 + 2);
	for (size_t i = 0; i < n_kept; i++)
		assert_string_equal(after_lines[i], kept_lines[i]);
	assert_string_equal(after_lines[n_kept], fake);
	bool carol = false, dave = false;
	for (size_t i = n_kept + 1; i < m; i++) {
		json_t *j = parse_result_line(after_lines[i]);
		carol |= strcmp(jname(j), "carol") == 0;
		dave |= strcmp(jname(j), "dave") == 0;
		assert_string_not_equal(json_string_value(json_object_get(j, "status")), "error");
		json_decref(j);
	}
	assert_true(carol && dave);
	/* Grading is deterministic: the same verdicts, scores and counts as
	 * the first run, in a gradebook with one row per submission. */
	struct csv c1, c2;
	char *csv_now = harness_read(f->csv, NULL);
	csv_parse(csv_first, &c1);
	csv_parse(csv_now, &c2);
	assert_int_equal(c1.n_rows, c2.n_rows);
	for (size_t r = 0; r < c1.n_rows; r++)
		for (size_t i = 0; i < 6; i++)
			assert_string_equal(c1.field[r][i], c2.field[r][i]);
	csv_free(&c1);
	csv_free(&c2);

	/* Nothing left to grade: nothing is written. */
	harness_run(
	    &o, NULL, QUICK_TIMEOUT_S,
	    (char *const[]){"class", "--resume", "--out", f->csv, ASSIGNMENT, f->class_dir, NULL});
	assert_int_equal(o.exit_status, 0);
	assert_null(strstr(o.err, "] alice: "));
	proc_out_free(&o);
	char *jsonl_again = harness_read(f->jsonl, NULL);
	char *csv_again = harness_read(f->csv, NULL);
	size_t m2 = split_lines(jsonl_again, after_lines);
	assert_int_equal(m2, m);
	assert_string_equal(csv_again, csv_now);
	free(jsonl_again);
	free(csv_again);
	free(csv_now);
	free(after);
	free(text);
	free(csv_first);
	harness_assert_clean();
}

/*
 * Slow submissions graded one at a time; SIGINT (then, in a second run,
 * SIGTERM) once the first result is on disk.  The run exits 130 (143),
 * every line it wrote is a whole result, and --resume completes the class
 * with each submission recorded exactly once.
 */
static void test_class_interrupt_keeps_what_was_written(void **state)
{
	struct fixture *f = *state;
	char dir[PATH_MAX], jsonl[PATH_MAX], out[PATH_MAX], err[PATH_MAX], name[32];
	const int n_subs = 4;
	const int sigs[] = {SIGINT, SIGTERM};

	harness_require_root("the jail");
	if (!f->can_run)
		skip();
	harness_path_join(dir, f->tmp, "slow-class");
	harness_path_join(jsonl, f->tmp, "slow.jsonl");
	harness_path_join(out, f->tmp, "slow.out");
	harness_path_join(err, f->tmp, "slow.err");
	make_dir(dir);
	char *correct = example_solution("correct");
	size_t len = strlen(correct);
	char *slow = malloc(len + 64);
	assert_non_null(slow);
	snprintf(slow, len + 64, "import time\ntime.sleep(1.5)\n%s", correct);
	for (int i = 0; i < n_subs; i++) {
		snprintf(name, sizeof name, "s%d", i);
		make_submission(dir, name, slow);
	}
	free(slow);
	free(correct);

	const char *first[] = {"class", "-j", "1", "--out", jsonl, ASSIGNMENT, dir, NULL};
	const char *again[] = {"class", "--resume", "-j", "1", "--out",
			       jsonl,	ASSIGNMENT, dir,  NULL};
	for (size_t k = 0; k < 2; k++) {
		size_t lines_before = 0;
		if (k > 0) {
			char *t = harness_read(jsonl, NULL);
			for (char *p = t; (p = strchr(p, '\n')); p++)
				lines_before++;
			free(t);
		}
		pid_t pid = harness_spawn(k == 0 ? first : again, out, err);
		/* Wait for one more result on disk, then interrupt. */
		long long deadline = harness_now_ms() + 120000;
		for (;;) {
			size_t lines = 0;
			struct stat st;
			if (stat(jsonl, &st) == 0) {
				char *t = harness_read(jsonl, NULL);
				for (char *p = t; (p = strchr(p, '\n')); p++)
					lines++;
				free(t);
			}
			if (lines > lines_before)
				break;
			if (harness_now_ms() > deadline) {
				kill(pid, SIGKILL);
				waitpid(pid, NULL, 0);
				fail_msg("no result was written in 120 s");
			}
			harness_sleep_ms(50);
		}
		assert_int_equal(kill(pid, sigs[k]), 0);
		assert_int_equal(harness_wait_child(pid, 60000), 128 + sigs[k]);
		char *summary = harness_read(out, NULL);
		assert_non_null(strstr(summary, "without a result"));
		free(summary);
	}

	/* Whole lines only, each submission at most once; then finish. */
	struct proc_out o;
	harness_run(
	    &o, NULL, CLASS_TIMEOUT_S,
	    (char *const[]){"class", "--resume", "-j", "2", "--out", jsonl, ASSIGNMENT, dir, NULL});
	if (o.exit_status != 0)
		fail_msg("the final resume exited %d: %s", o.exit_status, o.err);
	proc_out_free(&o);
	char *text = harness_read(jsonl, NULL);
	char *lines[MAX_LINES];
	size_t n = split_lines(text, lines);
	assert_int_equal(n, (size_t)n_subs);
	bool seen[4] = {false};
	for (size_t i = 0; i < n; i++) {
		json_t *j = parse_result_line(lines[i]);
		int idx = -1;
		assert_int_equal(sscanf(jname(j), "s%d", &idx), 1);
		assert_true(idx >= 0 && idx < n_subs && !seen[idx]);
		seen[idx] = true;
		assert_string_equal(json_string_value(json_object_get(j, "status")), "graded");
		json_decref(j);
	}
	free(text);
	harness_assert_clean();
}

/* ---- a drop box the students can write ---------------------------------- */

/* Run `proctor class` on `dir` into out_dir/grades.csv; the result lines. */
static size_t run_drop_box(const char *dir, const char *out_dir, char **text, char **lines)
{
	char csv[PATH_MAX], jsonl[PATH_MAX];
	struct proc_out o;

	harness_path_join(csv, out_dir, "grades.csv");
	harness_path_join(jsonl, out_dir, "grades.jsonl");
	harness_run(
	    &o, NULL, CLASS_TIMEOUT_S,
	    (char *const[]){"class", "-j", "1", "--out", csv, ASSIGNMENT, (char *)dir, NULL});
	if (o.exit_status != 0)
		fail_msg("class exited %d; stderr:\n%s", o.exit_status, o.err);
	proc_out_free(&o);
	*text = harness_read(jsonl, NULL);
	return split_lines(*text, lines);
}

/* The result line of `name`, which must have status `status` and a
 * reason naming `why`. */
static void expect_row(char **lines, size_t n, const char *name, const char *status,
		       const char *why)
{
	for (size_t i = 0; i < n; i++) {
		json_t *j = parse_result_line(lines[i]);
		if (strcmp(jname(j), name) != 0) {
			json_decref(j);
			continue;
		}
		const char *st = json_string_value(json_object_get(j, "status"));
		if (strcmp(st, status) != 0 || (why && !strstr(lines[i], why)))
			fail_msg("%s: want status %s naming '%s', got: %.400s", name, status,
				 why ? why : "", lines[i]);
		json_decref(j);
		return;
	}
	fail_msg("no result line for %s", name);
}

/*
 * M1: a student who can write DIR swaps their entry for a symlink to the
 * reference solution after the scan.  fanotify holds proctor's first open
 * in the output directory (the gradebook, opened after the scan and before
 * any grading) until the swap is done, so the order is certain.  The entry
 * is opened below DIR's descriptor without following symlinks: rejected,
 * the reference solution never read.
 */
static void test_class_entry_swapped_for_a_symlink_after_the_scan(void **state)
{
	(void)state;
	char drop[PATH_MAX], ref[PATH_MAX], out_dir[PATH_MAX], carol[PATH_MAX], moved[PATH_MAX];
	char *lines[MAX_LINES], *text;
	int report;
	pid_t listener;

	harness_require_root("the jail");
	char *tmp = harness_tmpdir();
	harness_path_join(drop, tmp, "drop");
	harness_path_join(ref, tmp, "ref");
	harness_path_join(out_dir, tmp, "out");
	harness_path_join(carol, drop, "carol");
	harness_path_join(moved, tmp, "carol.orig");
	make_dir(drop);
	make_dir(out_dir);
	char *correct = example_solution("correct"), *partial = example_solution("partial");
	make_submission(drop, "carol", partial);
	make_submission(tmp, "ref", correct);
	free(correct);
	free(partial);

	listener = harness_swap_on_first_open(out_dir, FAN_EVENT_ON_CHILD, carol, moved, ref, &report);
	if (listener < 0) {
		print_message("no fanotify permission events here (%s)\n", strerror(errno));
		harness_rm_tree(tmp);
		free(tmp);
		if (harness_can_skip())
			skip();
		fail_msg("fanotify is needed to order the swap (PROCTOR_MUST_WORK=1)");
	}
	size_t n = run_drop_box(drop, out_dir, &text, lines);
	assert_true(harness_swap_done(listener, report));
	expect_row(lines, n, "carol", "rejected", "symbolic link");
	free(text);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/*
 * S6: in a drop box of another uid's, an archive that is a hard link to a
 * root-only archive, and a directory whose solution.py is a hard link to a
 * root-only file (fs.protected_hardlinks=0 lets a student make both):
 * neither is read, both are rejected.
 */
static void test_class_hard_links_to_root_only_files_are_rejected(void **state)
{
	(void)state;
	char drop[PATH_MAX], out_dir[PATH_MAX], secret[PATH_MAX], path[PATH_MAX], dir[PATH_MAX];

	harness_require_root("the jail");
	char *tmp = harness_tmpdir(), *lines[MAX_LINES], *text;
	harness_path_join(drop, tmp, "drop");
	harness_path_join(out_dir, tmp, "out");
	make_dir(drop);
	make_dir(out_dir);
	char *correct = example_solution("correct");

	harness_path_join(secret, tmp, "secret.zip");
	write_zip(secret, "solution.py", correct);
	assert_int_equal(chmod(secret, 0600), 0);
	harness_path_join(path, drop, "eve.zip");
	assert_int_equal(link(secret, path), 0);

	harness_path_join(secret, tmp, "secret.py");
	harness_write(NULL, secret, correct, strlen(correct));
	assert_int_equal(chmod(secret, 0600), 0);
	harness_path_join(dir, drop, "mallory");
	make_dir(dir);
	harness_path_join(path, dir, "solution.py");
	assert_int_equal(link(secret, path), 0);
	free(correct);
	assert_int_equal(chown(dir, 1234, 1234), 0);
	assert_int_equal(chown(drop, 1234, 1234), 0);

	size_t n = run_drop_box(drop, out_dir, &text, lines);
	assert_int_equal(n, 2);
	expect_row(lines, n, "eve.zip", "rejected", "hard link");
	expect_row(lines, n, "mallory", "rejected", "hard link");
	free(text);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_class_help_lists_exit_status),
	    cmocka_unit_test(test_class_bad_options_are_usage_errors),
	    cmocka_unit_test(test_class_grades_every_submission_into_a_gradebook),
	    cmocka_unit_test(test_class_jsonl_holds_every_result_document),
	    cmocka_unit_test(test_class_refuses_to_overwrite_its_output),
	    cmocka_unit_test(test_class_resume_grades_only_missing_and_error),
	    cmocka_unit_test(test_class_interrupt_keeps_what_was_written),
	    cmocka_unit_test(test_class_entry_swapped_for_a_symlink_after_the_scan),
	    cmocka_unit_test(test_class_hard_links_to_root_only_files_are_rejected),
	};
	return cmocka_run_group_tests(tests, class_setup, class_teardown);
}
