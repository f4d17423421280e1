/* The gradebook of `proctor class`: each submission's last result, kept in JSON lines and a CSV. */
#ifndef PROCTOR_GRADE_GRADEBOOK_H
#define PROCTOR_GRADE_GRADEBOOK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "grade/opener.h"

/*
 * Durability: a result is appended to the JSON-lines file (the full record)
 * and fsync'ed, then its row is appended to the CSV and fsync'ed, before
 * gradebook_record() returns.  Killing the process in any way therefore
 * loses only results not yet recorded; gradebook_resume() reads the JSON
 * lines back (an incomplete last line, from a kill in mid-write, is cut
 * off).  The CSV is derived data: gradebook_open() and
 * gradebook_rewrite_csv() rewrite it whole, sorted, and atomically
 * (rename); in between it is only appended to.
 *
 * Not thread-safe; the fds are O_CLOEXEC and a forked worker must close
 * them (a worker never writes the gradebook).  A failure of set_out,
 * resume or open is the user's (the files --out names: ERR_USAGE,
 * ERR_INPUT) unless memory ran out; of record and rewrite_csv, Proctor's.
 */

#define GRADEBOOK_RESULT_MAX (64ull << 20) /* bytes of one result document */
#define GRADEBOOK_REASON_MAX 1024	   /* bytes of a reason kept for the CSV */

/* What the CSV and the summary need of one result; the JSON lines hold the rest. */
struct gradebook_row {
	bool present;
	char status[32]; /* [a-z_]+ */
	bool has_score, has_max, has_counts;
	double score, max_score;
	long long passed, total;
	char *reason; /* owned, at most GRADEBOOK_REASON_MAX bytes, or NULL */
};

struct gradebook_entry {
	char *name;		  /* owned; the caller vouches that it is printable UTF-8 */
	struct gradebook_row row; /* its last result, when row.present */
	bool this_run;		  /* row recorded by gradebook_record() */
	struct opener_id seen;	  /* the inode the scan found (set by the caller) */
};

/* Everything is owned by the gradebook and valid until gradebook_free(). */
struct gradebook {
	struct gradebook_entry *subs; /* sorted by name (strcmp) after gradebook_sort() */
	size_t n, cap;
	bool resume;
	char *jsonl_path, *csv_path; /* NULL: not written */
	int jsonl_fd, csv_fd;	     /* -1 until gradebook_open() */
	size_t line_max;	     /* longest JSON line read back; GRADEBOOK_RESULT_MAX */
	size_t bad_lines;	     /* gradebook_resume(): lines that are not results, ignored */
	bool dropped_tail;	     /* gradebook_resume(): an incomplete last line was cut off */
};

/* An empty gradebook without files; NULL when out of memory. */
struct gradebook *gradebook_new(void);
struct gradebook *gradebook_free(struct gradebook *g);

/* Add a submission without a result (in any order; then gradebook_sort()). */
int gradebook_add(struct gradebook *g, const char *name, struct err *e);
void gradebook_sort(struct gradebook *g);

/*
 * Keep the gradebook in `out`: FILE.jsonl alone, or FILE.csv with FILE.jsonl
 * beside it.  Refuses what would overwrite an earlier run unless `resume`,
 * files that are not regular, and a directory that cannot be written.
 * Nothing is opened yet.  Messages name the option (--out, --resume).
 */
int gradebook_set_out(struct gradebook *g, const char *out, bool resume, struct err *e);

/*
 * Read the JSON lines of an earlier run (a missing file is an empty one):
 * the last valid result of each submission wins; results of names not in
 * the gradebook are ignored; other lines are counted in bad_lines.  An
 * incomplete last line is cut off the file (dropped_tail), so the next
 * append starts on a line of its own; a whole result without its newline
 * gets one.
 */
int gradebook_resume(struct gradebook *g, struct err *e);

/* Open the files for appending (the JSON lines created, exclusively unless
 * resuming) and rewrite the CSV from the rows present. */
int gradebook_open(struct gradebook *g, struct err *e);

/*
 * Keep `doc`, the result of subs[i]: `line` (len bytes, its compact JSON
 * ending in '\n') appended to the JSON lines, then its row to the CSV, each
 * on disk before this returns.  Fails when `doc` is not a result.
 */
int gradebook_record(struct gradebook *g, size_t i, const char *line, size_t len, const json_t *doc,
		     struct err *e);

/* Rewrite the CSV, sorted, when there is one. */
int gradebook_rewrite_csv(struct gradebook *g, struct err *e);

/*
 * The row of a result document: status (required, [a-z_]+), score and
 * max_score (numbers), passed and total (integers, or counted from
 * "tests"), reason (or message).  -1 if `j` is not a result; *ret is
 * written only on success (any row it held is cleared).
 */
int gradebook_row_from_json(const json_t *j, struct gradebook_row *ret);
void gradebook_row_clear(struct gradebook_row *r);

/* A number as the CSV and the summary show it: integers without
 * decimals, else up to 4 decimals.  Returns buf. */
char *gradebook_fmt_num(char *buf, size_t len, double x);

#endif
