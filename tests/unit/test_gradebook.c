/* Unit tests of gradebook.c: reading an earlier run back (--resume), the CSV, refusing to
 * overwrite. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grade/gradebook.h"

/* A gradebook of four submissions, added out of order, and a directory for its files. */
struct fixture {
	char dir[64];
	char jsonl[128], csv[128];
	struct gradebook *g;
};

static const char *const names[] = {"carol", "alice", "erin.zip", "bob"};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct err e;

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_gradebook.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->jsonl, sizeof(f->jsonl), "%s/grades.jsonl", f->dir);
	snprintf(f->csv, sizeof(f->csv), "%s/grades.csv", f->dir);
	f->g = gradebook_new();
	assert_non_null(f->g);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(gradebook_add(f->g, names[i], &e), 0);
	gradebook_sort(f->g);
	*state = f;
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	gradebook_free(f->g);
	nftw(f->dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void write_file(const char *path, const char *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* The whole file, NUL-terminated; its length in *ret_len when asked. */
static char *read_file(const char *path, size_t *ret_len)
{
	FILE *fp = fopen(path, "rb");
	char *buf;
	long n;

	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	buf[n] = '\0';
	fclose(fp);
	if (ret_len)
		*ret_len = (size_t)n;
	return buf;
}

/* Resume from a JSON-lines file holding `text`. */
static void resume_from(struct fixture *f, const char *text, size_t len)
{
	struct err e;

	write_file(f->jsonl, text, len);
	if (gradebook_set_out(f->g, f->jsonl, true, &e) < 0 || gradebook_resume(f->g, &e) < 0)
		fail_msg("resume: %s", e.msg);
}

static const struct gradebook_row *row(const struct fixture *f, const char *name)
{
	for (size_t i = 0; i < f->g->n; i++)
		if (strcmp(f->g->subs[i].name, name) == 0)
			return &f->g->subs[i].row;
	fail_msg("no submission '%s'", name);
	return NULL;
}

static size_t rows_present(const struct fixture *f)
{
	size_t n = 0;

	for (size_t i = 0; i < f->g->n; i++)
		n += f->g->subs[i].row.present;
	return n;
}

#define ALICE                                                                                      \
	"{\"submission_name\":\"alice\",\"status\":\"graded\",\"score\":7,\"max_score\":10,"       \
	"\"passed\":7,\"total\":10,\"reason\":\"\"}\n"
#define BOB                                                                                        \
	"{\"submission_name\":\"bob\",\"status\":\"compile_error\",\"score\":0,"                   \
	"\"max_score\":10,\"passed\":0,\"total\":10,\"reason\":\"foo.c:1: error\"}\n"

/* ---- resume ------------------------------------------------------------- */

static void test_gradebook_sorts_by_name(void **state)
{
	struct fixture *f = *state;
	const char *want[] = {"alice", "bob", "carol", "erin.zip"};

	assert_int_equal(f->g->n, 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal(f->g->subs[i].name, want[i]);
}

static void test_gradebook_resume_reads_a_good_file(void **state)
{
	struct fixture *f = *state;
	const char text[] = ALICE BOB;
	size_t len;

	resume_from(f, text, strlen(text));
	const struct gradebook_row *a = row(f, "alice"), *b = row(f, "bob");
	assert_true(a->present);
	assert_string_equal(a->status, "graded");
	assert_true(a->has_score && a->has_max && a->has_counts);
	assert_true(a->score == 7 && a->max_score == 10);
	assert_int_equal(a->passed, 7);
	assert_int_equal(a->total, 10);
	assert_null(a->reason); /* an empty reason is none */
	assert_string_equal(b->status, "compile_error");
	assert_string_equal(b->reason, "foo.c:1: error");
	assert_false(row(f, "carol")->present);
	assert_int_equal(rows_present(f), 2);
	assert_int_equal(f->g->bad_lines, 0);
	assert_false(f->g->dropped_tail);
	char *after = read_file(f->jsonl, &len); /* not touched */
	assert_int_equal(len, strlen(text));
	assert_string_equal(after, text);
	free(after);
}

static void test_gradebook_resume_without_a_file_has_no_rows(void **state)
{
	struct fixture *f = *state;
	struct err e;

	assert_int_equal(gradebook_set_out(f->g, f->jsonl, true, &e), 0);
	assert_int_equal(gradebook_resume(f->g, &e), 0);
	assert_int_equal(rows_present(f), 0);
	assert_int_equal(access(f->jsonl, F_OK), -1); /* nor is one made */
}

/* A run killed in mid-write leaves part of a line: it is cut off the file,
 * so the next result starts on a line of its own. */
static void test_gradebook_resume_cuts_a_truncated_last_line(void **state)
{
	struct fixture *f = *state;
	const char text[] = ALICE "{\"submission_name\":\"erin.z";
	struct err e;
	size_t len;

	resume_from(f, text, strlen(text));
	assert_true(f->g->dropped_tail);
	assert_int_equal(f->g->bad_lines, 0);
	assert_true(row(f, "alice")->present);
	assert_false(row(f, "erin.zip")->present);
	char *after = read_file(f->jsonl, &len);
	assert_string_equal(after, ALICE);
	free(after);
	/* The next result is appended on a line of its own. */
	json_t *j = json_loads(BOB, 0, NULL);
	assert_int_equal(gradebook_open(f->g, &e), 0);
	assert_int_equal(gradebook_record(f->g, 1, BOB, strlen(BOB), j, &e), 0);
	json_decref(j);
	after = read_file(f->jsonl, &len);
	assert_string_equal(after, ALICE BOB);
	free(after);
}

/* A whole result without its newline (an edited file) is kept and gets one. */
static void test_gradebook_resume_keeps_a_whole_last_line_without_newline(void **state)
{
	struct fixture *f = *state;
	const char text[] = ALICE "{\"submission_name\":\"bob\",\"status\":\"graded\"}";

	resume_from(f, text, strlen(text));
	assert_false(f->g->dropped_tail);
	assert_true(row(f, "bob")->present);
	char *after = read_file(f->jsonl, NULL);
	assert_int_equal(after[strlen(after) - 1], '\n');
	assert_int_equal(strlen(after), strlen(text) + 1);
	free(after);
}

/* The last result of a submission wins, whatever it says ("error" too):
 * --resume grades again what last ended in "error". */
static void test_gradebook_resume_last_duplicate_wins(void **state)
{
	struct fixture *f = *state;
	const char text[] = ALICE "{\"submission_name\":\"alice\",\"status\":\"error\","
				  "\"reason\":\"worker died\"}\n"
				  "{\"submission_name\":\"bob\",\"status\":\"error\"}\n" BOB
				  /* A line that is not a result does not override one. */
				  "{\"submission_name\":\"bob\",\"status\":\"Bad Status\"}\n";

	resume_from(f, text, strlen(text));
	assert_string_equal(row(f, "alice")->status, "error");
	assert_string_equal(row(f, "alice")->reason, "worker died");
	assert_false(row(f, "alice")->has_score);
	assert_string_equal(row(f, "bob")->status, "compile_error");
	assert_int_equal(f->g->bad_lines, 1);
}

/* Fields the gradebook does not know are ignored; fields it knows with the
 * wrong type are as if absent; counts come from "tests" when not given. */
static void test_gradebook_resume_ignores_foreign_columns(void **state)
{
	struct fixture *f = *state;
	const char text[] =
	    "{\"submission_name\":\"alice\",\"status\":\"graded\",\"color\":\"blue\","
	    "\"score\":\"7\",\"max_score\":1e301,\"passed\":1.5,\"total\":3,"
	    "\"tests\":[{\"outcome\":\"passed\"},{\"status\":\"passed\"},{\"passed\":true},"
	    "{\"status\":\"failed\"},{}],\"message\":\"from message\",\"extra\":[1,2,{}]}\n"
	    /* a CSV header, a JSON array, a number, a string: not results */
	    "submission,status,score,max_score,passed,total,reason\n"
	    "[\"alice\",\"graded\"]\n"
	    "42\n"
	    "\"alice\"\n"
	    /* no name, a name that is not a string */
	    "{\"status\":\"graded\"}\n"
	    "{\"submission_name\":7,\"status\":\"graded\"}\n"
	    /* empty lines and CRLF endings are fine */
	    "\n\r\n"
	    "{\"submission_name\":\"bob\",\"status\":\"timeout\"}\r\n";

	resume_from(f, text, strlen(text));
	const struct gradebook_row *a = row(f, "alice");
	assert_string_equal(a->status, "graded");
	assert_false(a->has_score); /* a string */
	assert_false(a->has_max);   /* not a finite number we keep */
	assert_true(a->has_counts);
	assert_int_equal(a->passed, 3);
	assert_int_equal(a->total, 5);
	assert_string_equal(a->reason, "from message");
	assert_string_equal(row(f, "bob")->status, "timeout");
	/* "\r\n" alone is whitespace around nothing: not a result */
	assert_int_equal(f->g->bad_lines, 7);
}

static void test_gradebook_resume_refuses_bad_statuses(void **state)
{
	struct fixture *f = *state;
	const char text[] = "{\"submission_name\":\"alice\",\"status\":\"\"}\n"
			    "{\"submission_name\":\"alice\",\"status\":\"Graded\"}\n"
			    "{\"submission_name\":\"alice\",\"status\":\"graded;rm\"}\n"
			    "{\"submission_name\":\"alice\",\"status\":3}\n"
			    "{\"submission_name\":\"alice\",\"status\":null}\n"
			    "{\"submission_name\":\"alice\",\"status\":"
			    "\"a_status_of_thirty_two_bytes_xyz\"}\n"
			    "{\"submission_name\":\"alice\",\"status\":"
			    "\"a_status_of_thirty_one_bytes_xy\"}\n";

	resume_from(f, text, strlen(text));
	assert_int_equal(f->g->bad_lines, 6);
	assert_string_equal(row(f, "alice")->status, "a_status_of_thirty_one_bytes_xy");
}

/* Not UTF-8, or a NUL inside: not JSON, so not a result. */
static void test_gradebook_resume_refuses_bad_utf8(void **state)
{
	struct fixture *f = *state;
	const char text[] =
	    "{\"submission_name\":\"alice\",\"status\":\"graded\",\"reason\":\"\xff\"}\n"
	    "{\"submission_name\":\"al\xc3\",\"status\":\"graded\"}\n"
	    "{\"submission_name\":\"bob\",\"status\":\"graded\"}\0\n"
	    "{\"submission_name\":\"carol\",\"status\":\"graded\",\"reason\":\"caf\xc3\xa9\"}\n";

	resume_from(f, text, sizeof(text) - 1);
	assert_int_equal(f->g->bad_lines, 3);
	assert_false(row(f, "alice")->present);
	assert_false(row(f, "bob")->present);
	assert_string_equal(row(f, "carol")->reason, "caf\xc3\xa9");
}

/* A line longer than the cap is not read into memory, whole or in part;
 * reading goes on after it. */
static void test_gradebook_resume_refuses_huge_lines(void **state)
{
	struct fixture *f = *state;
	const char *who[] = {"alice", "bob", "carol"};
	const size_t cap = 1000, length[] = {cap, cap + 1, 150000}; /* the last spans reads */
	size_t reason_len = 0;
	struct err e;
	FILE *fp = fopen(f->jsonl, "wb");

	assert_non_null(fp);
	f->g->line_max = cap;
	for (size_t k = 0; k < 3; k++) {
		int head = fprintf(
		    fp, "{\"submission_name\":\"%s\",\"status\":\"graded\",\"reason\":\"", who[k]);
		if (k == 0)
			reason_len = length[k] - (size_t)head - 2;
		for (size_t i = (size_t)head; i < length[k] - 2; i++)
			fputc('x', fp);
		fputs("\"}\n", fp);
	}
	fputs("{\"submission_name\":\"erin.zip\",\"status\":\"graded\"}\n", fp);
	assert_int_equal(fclose(fp), 0);
	assert_int_equal(gradebook_set_out(f->g, f->jsonl, true, &e), 0);
	assert_int_equal(gradebook_resume(f->g, &e), 0);
	assert_true(row(f, "alice")->present); /* exactly at the cap */
	assert_int_equal(strlen(row(f, "alice")->reason), reason_len);
	assert_false(row(f, "bob")->present);
	assert_false(row(f, "carol")->present);
	assert_true(row(f, "erin.zip")->present);
	assert_int_equal(f->g->bad_lines, 2);
	assert_false(f->g->dropped_tail);
}

/* A huge last line without its newline is an incomplete line: cut off. */
static void test_gradebook_resume_cuts_a_huge_unterminated_tail(void **state)
{
	struct fixture *f = *state;
	size_t len = 300000;
	char *text = malloc(strlen(ALICE) + len);

	assert_non_null(text);
	memcpy(text, ALICE, strlen(ALICE));
	memset(text + strlen(ALICE), '{', len);
	f->g->line_max = 1000;
	resume_from(f, text, strlen(ALICE) + len);
	free(text);
	assert_true(f->g->dropped_tail);
	assert_true(row(f, "alice")->present);
	char *after = read_file(f->jsonl, NULL);
	assert_string_equal(after, ALICE);
	free(after);
}

/* Results of submissions no longer in DIR are neither rows nor errors. */
static void test_gradebook_resume_ignores_unknown_submissions(void **state)
{
	struct fixture *f = *state;
	const char text[] = "{\"submission_name\":\"mallory\",\"status\":\"graded\"}\n"
			    "{\"submission_name\":\"\",\"status\":\"graded\"}\n"
			    "{\"submission_name\":\"alice/../bob\",\"status\":\"graded\"}\n" ALICE;

	resume_from(f, text, strlen(text));
	assert_int_equal(f->g->n, 4);
	assert_int_equal(rows_present(f), 1);
	assert_true(row(f, "alice")->present);
	assert_int_equal(f->g->bad_lines, 0);
}

/* A reason is kept to GRADEBOOK_REASON_MAX bytes, never half a character. */
static void test_gradebook_row_caps_the_reason_on_a_character_boundary(void **state)
{
	(void)state;
	char reason[3 * GRADEBOOK_REASON_MAX];
	struct gradebook_row r = {0};

	/* 'a', then two-byte characters: the cap falls inside one. */
	reason[0] = 'a';
	for (size_t i = 1; i + 2 < sizeof(reason); i += 2)
		memcpy(reason + i, "\xc3\xa9", 2);
	reason[sizeof(reason) - 1] = '\0'; /* after a whole character */
	json_t *j = json_pack("{s:s, s:s}", "status", "crashed", "reason", reason);
	assert_non_null(j);
	assert_int_equal(gradebook_row_from_json(j, &r), 0);
	assert_int_equal(strlen(r.reason), GRADEBOOK_REASON_MAX - 1);
	assert_int_equal((unsigned char)r.reason[strlen(r.reason) - 1], 0xa9);
	gradebook_row_clear(&r);
	json_decref(j);
}

/* ---- files -------------------------------------------------------------- */

static void test_gradebook_refuses_to_overwrite_an_earlier_run(void **state)
{
	struct fixture *f = *state;
	struct err e;

	write_file(f->jsonl, ALICE, strlen(ALICE));
	assert_int_equal(gradebook_set_out(f->g, f->jsonl, false, &e), -1);
	assert_non_null(strstr(e.msg, "--out: "));
	assert_non_null(strstr(e.msg, "exists; add --resume"));
	/* A CSV whose JSON lines are gone cannot be resumed. */
	write_file(f->csv, "x", 1);
	unlink(f->jsonl);
	assert_int_equal(gradebook_set_out(f->g, f->csv, true, &e), -1);
	assert_non_null(strstr(e.msg, "--resume: "));
	assert_non_null(strstr(e.msg, "has no"));
	/* Not a regular file. */
	assert_int_equal(mkdir(f->jsonl, 0755), 0);
	assert_int_equal(gradebook_set_out(f->g, f->jsonl, true, &e), -1);
	assert_non_null(strstr(e.msg, "is not a regular file"));
	assert_int_equal(gradebook_set_out(f->g, "grades.txt", false, &e), -1);
}

/* The CSV: one row per result, sorted, RFC 4180 quoting, no control
 * characters, and no cell a spreadsheet would run as a formula. */
static void test_gradebook_writes_a_safe_sorted_csv(void **state)
{
	struct fixture *f = *state;
	const char *docs[] = {
	    /* carol */
	    ("{\"status\":\"graded\",\"score\":2.5,\"max_score\":3,\"passed\":1,\"total\":3,"
	     "\"reason\":\"=HYPERLINK(\\\"x\\\"), \\\"quoted\\\"\\r\\nnext\\u001b[2J\"}"),
	    /* alice */
	    "{\"status\":\"graded\",\"score\":0.333333333,\"max_score\":1e20}",
	    /* bob */
	    "{\"status\":\"timeout\",\"reason\":\"-1;=1+1|@x\\t+y\"}",
	};
	const size_t which[] = {2, 0, 1};
	struct err e;

	assert_int_equal(gradebook_set_out(f->g, f->csv, false, &e), 0);
	assert_int_equal(gradebook_open(f->g, &e), 0);
	for (size_t k = 0; k < 3; k++) {
		char line[512];
		json_t *j = json_loads(docs[k], 0, NULL);
		assert_non_null(j);
		snprintf(line, sizeof(line), "%s\n", docs[k]);
		assert_int_equal(gradebook_record(f->g, which[k], line, strlen(line), j, &e), 0);
		json_decref(j);
		assert_true(f->g->subs[which[k]].this_run);
	}
	const char *appended =
	    "submission,status,score,max_score,passed,total,reason\r\n"
	    "\"carol\",\"graded\",2.5,3,1,3,\"'=HYPERLINK(\"\"x\"\"), \"\"quoted\"\"  next [2J\"\r\n"
	    "\"alice\",\"graded\",0.3333,1e+20,,,\r\n"
	    "\"bob\",\"timeout\",,,,,\"'-1;'=1+1|'@x '+y\"\r\n";
	char *csv = read_file(f->csv, NULL);
	assert_string_equal(csv, appended);
	free(csv);
	/* Rewritten, it is sorted by name. */
	assert_int_equal(gradebook_rewrite_csv(f->g, &e), 0);
	csv = read_file(f->csv, NULL);
	assert_string_equal(csv, "submission,status,score,max_score,passed,total,reason\r\n"
				 "\"alice\",\"graded\",0.3333,1e+20,,,\r\n"
				 "\"bob\",\"timeout\",,,,,\"'-1;'=1+1|'@x '+y\"\r\n"
				 "\"carol\",\"graded\",2.5,3,1,3,\"'=HYPERLINK(\"\"x\"\"), \"\"quoted\"\"  "
				 "next [2J\"\r\n");
	free(csv);
	/* The JSON lines hold each document as given, in the order recorded. */
	char *jsonl = read_file(f->jsonl, NULL);
	assert_string_equal(jsonl,
			    "{\"status\":\"graded\",\"score\":2.5,\"max_score\":3,\"passed\":1,"
			    "\"total\":3,\"reason\":\"=HYPERLINK(\\\"x\\\"), "
			    "\\\"quoted\\\"\\r\\nnext\\u001b[2J\"}\n"
			    "{\"status\":\"graded\",\"score\":0.333333333,\"max_score\":1e20}\n"
			    "{\"status\":\"timeout\",\"reason\":\"-1;=1+1|@x\\t+y\"}\n");
	free(jsonl);
	/* A document without a valid status is refused, and nothing written. */
	json_t *bad = json_pack("{s:s}", "status", "Nope");
	assert_int_equal(gradebook_record(f->g, 3, "{}\n", 3, bad, &e), -1);
	json_decref(bad);
	assert_false(f->g->subs[3].row.present);
}

/* Resumed rows are in the rewritten CSV, and a second open without
 * --resume refuses the existing JSON lines. */
static void test_gradebook_open_rewrites_the_csv_from_resumed_rows(void **state)
{
	struct fixture *f = *state;
	struct err e;

	write_file(f->jsonl, BOB ALICE, strlen(BOB ALICE));
	assert_int_equal(gradebook_set_out(f->g, f->csv, true, &e), 0);
	assert_int_equal(gradebook_resume(f->g, &e), 0);
	assert_int_equal(gradebook_open(f->g, &e), 0);
	char *csv = read_file(f->csv, NULL);
	assert_string_equal(csv, "submission,status,score,max_score,passed,total,reason\r\n"
				 "\"alice\",\"graded\",7,10,7,10,\r\n"
				 "\"bob\",\"compile_error\",0,10,0,10,\"foo.c:1: error\"\r\n");
	free(csv);
	assert_false(f->g->subs[0].this_run);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_gradebook_sorts_by_name, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_resume_reads_a_good_file, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_resume_without_a_file_has_no_rows, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_resume_cuts_a_truncated_last_line, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(
		test_gradebook_resume_keeps_a_whole_last_line_without_newline, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_resume_last_duplicate_wins, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_resume_ignores_foreign_columns, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_resume_refuses_bad_statuses, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_resume_refuses_bad_utf8, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_resume_refuses_huge_lines, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_resume_cuts_a_huge_unterminated_tail,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_resume_ignores_unknown_submissions,
					    setup, teardown),
	    cmocka_unit_test(test_gradebook_row_caps_the_reason_on_a_character_boundary),
	    cmocka_unit_test_setup_teardown(test_gradebook_refuses_to_overwrite_an_earlier_run,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_writes_a_safe_sorted_csv, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gradebook_open_rewrites_the_csv_from_resumed_rows,
					    setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
