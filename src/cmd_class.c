/* `proctor class`: a whole class graded by parallel worker processes, results kept as they come. */
#include "cmd_class.h"

/*
 * Theory of operation
 * -------------------
 * Two kinds of processes, one trust zone (both are Proctor, as root):
 *
 *   parent (proctor class)   single-threaded; owns DIR's listing, every
 *     |                      output file and all bookkeeping
 *     | grade_prepare() once, then fork(), one socketpair per worker
 *     v
 *   worker 1..N              grade_submission() one submission at a time;
 *                            its sandboxes die with it, and it dies with
 *                            the parent (PR_SET_PDEATHSIG)
 *
 * Processes, not threads: the sandbox code clones raw and keeps
 * process-wide state, which is only safe in a single-threaded process.
 *
 * Protocol on a worker's socket: the parent sends one submission index (4
 * bytes, host order) at a time; the worker answers with an 8-byte length
 * and the result document as compact JSON (no raw newline), carrying an
 * added "submission_name".  EOF from the parent means "no more work".  A
 * worker that dies, sends more than RESULT_MAX bytes, sends something that
 * is not a result, or takes longer than the assignment's limits can explain
 * is killed by pid, reaped and replaced; its submission is graded once more
 * and then recorded as status "error" (Proctor's failure, never the
 * student's).
 *
 * Durability: a result is appended to the JSON-lines file (the full record)
 * and fsync'ed, then its gradebook row is appended to the CSV and
 * fsync'ed, before it is counted.  Killing the parent in any way therefore
 * loses only submissions in flight; --resume reads the JSON lines back (an
 * incomplete last line, from a kill in mid-write, is cut off) and grades
 * what has no result or only an "error" one.  The CSV is derived data: it
 * is rewritten, sorted and atomically (rename), at the start and the end of
 * a run, and only appended to in between.
 *
 * Signals: SIGINT and SIGTERM are blocked in the parent and read from a
 * signalfd in the poll loop, so no handler and no global flag exist, and a
 * result that arrives after the signal is never recorded (checked with
 * sigpending() just before recording).  Workers ignore SIGINT (a Ctrl-C
 * reaches the whole process group; the parent decides what stops).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capbuf.h"
#include "cli.h"
#include "grade/assignment.h"
#include "grade/grade.h"
#include "util.h"
#include "vm/vm.h"

#ifndef PROCTOR_VERSION
#define PROCTOR_VERSION "0.1.0"
#endif

#define MAX_JOBS	CLI_MAX_SLOTS
#define MAX_SUBMISSIONS 100000
#define RESULT_MAX	(64ull << 20) /* bytes of one result document */
#define REASON_MAX	1024	      /* bytes of a reason kept for the gradebook */
#define GRADE_ATTEMPTS	2	      /* a submission whose worker failed is graded once more */
#define REDRAW_NS	(200ull * 1000000ull)
#define TICK_MS		1000 /* poll wake-up for the watchdog and the ETA */
#define STOP_GRACE_NS	(2ull * 1000000000ull)
#define HIST_BINS	10
#define HIST_WIDTH	40

/* Exit codes of a worker, seen only by the parent's messages. */
enum { WORKER_EXIT_SETUP = 70, WORKER_EXIT_PROTOCOL = 71, WORKER_EXIT_NOMEM = 72 };

static const char csv_header[] = "submission,status,score,max_score,passed,total,reason\r\n";

/* Statuses in the order the summary lists them; others follow as seen. */
static const char *const known_statuses[] = {"graded",	"compile_error", "rejected", "crashed",
					     "timeout", "memory_limit",	 "error"};

/* Parsed command line: the only mutable state of the command. */
struct class_options {
	unsigned jobs;	 /* 0: one per CPU */
	const char *out; /* NULL: no files, the summary only */
	bool resume;
	const char *isolation;
	const char *state_dir;
	unsigned slots;
	const char *assignment;
	const char *dir;
};

/* What the gradebook and the summary need of one result; the JSON lines
 * hold the rest. */
struct row {
	bool present;
	char status[32];
	bool has_score, has_max, has_counts;
	double score, max_score;
	long long passed, total;
	char *reason; /* owned, at most REASON_MAX bytes, or NULL */
};

/* One entry of DIR. */
struct submission {
	char *name;	   /* owned; printable UTF-8, no control characters */
	struct row row;	   /* its last result, when row.present */
	unsigned attempts; /* times handed to a worker in this run */
	bool this_run;	   /* row was recorded in this run */
};

struct worker {
	pid_t pid; /* 0: not running */
	int fd;	   /* the parent's end of the socketpair, nonblocking */
	long task; /* index of the submission being graded, -1: idle */
	uint64_t deadline_ns;
	unsigned char hdr[8];
	size_t hdr_got;
	char *buf; /* the result being received, room for a '\n'; owned */
	size_t len, got;
};

struct class_run {
	const struct class_options *o;
	struct assignment *a;
	struct grade_options go;
	struct submission *subs; /* sorted by name (strcmp) */
	size_t n;
	size_t *queue; /* indexes to hand out, room for each one twice */
	size_t qhead, qtail;
	struct worker workers[MAX_JOBS];
	unsigned n_workers;
	char *jsonl_path, *csv_path; /* owned; NULL when not written */
	int jsonl_fd, csv_fd, sig_fd;
	size_t todo, done, kept;
	size_t respawns; /* replacement workers started; capped */
	uint64_t start_ns, last_draw_ns, budget_ns;
	double time_factor; /* the backend's slowdown; 1 for the jail */
	bool tty, drawn, dirty;
	bool fatal;
	char fatal_msg[1100];
};

/* ---- command line ------------------------------------------------------- */

/* One line on stderr, "proctor: " first, whatever the user typed or a
 * file name holds (control characters become '?'). */
static void say_v(const char *prefix, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void say_v(const char *prefix, const char *fmt, va_list ap)
{
	char raw[2048], line[2048];

	vsnprintf(raw, sizeof(raw), fmt, ap);
	text_printable(line, sizeof(line), raw, '?');
	fprintf(stderr, "proctor: %s%s\n", prefix, line);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say_v("", fmt, ap);
	va_end(ap);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && strcasecmp(s + n - k, suffix) == 0;
}

static int set_out(const struct cli_option *opt, char *value, struct err *e)
{
	if (!(ends_with(value, ".csv") || ends_with(value, ".jsonl")))
		return err_set(e, 0, "--out: '%s' does not end in .csv or .jsonl", value);
	*(const char **)opt->dest = value;
	return 0;
}

/* CLI_OK, CLI_HELP or CLI_USAGE (its message printed). */
static int parse_options(int argc, char **argv, struct class_options *o)
{
	bool slots_given = false;
	const struct cli_option options[] = {
	    {.name = "jobs",
	     .short_name = 'j',
	     .kind = CLI_UINT,
	     .value_name = "N",
	     .dest = &o->jobs,
	     .min = 1,
	     .max = MAX_JOBS,
	     .help = "submissions graded at once (default: one per CPU,\nat most --slots)"},
	    {.name = "out",
	     .kind = CLI_CALL,
	     .value_name = "FILE",
	     .dest = &o->out,
	     .call = set_out,
	     .help = "FILE.csv: a gradebook written as results come (columns\nsubmission, status, "
		     "score, max_score, passed, total,\nreason), and every full result to "
		     "FILE.jsonl beside it;\nFILE.jsonl: one result document per line"},
	    {.name = "resume",
	     .kind = CLI_FLAG,
	     .dest = &o->resume,
	     .help = "continue a run whose --out files exist: keep their\nresults, grade the "
		     "submissions without one and those\nwhose last result has status \"error\""},
	    CLI_OPTION_ISOLATION(&o->isolation, "the assignment pins an image, else jail; an\n"
						"assignment's isolation: is used instead of auto"),
	    CLI_OPTION_STATE_DIR(&o->state_dir, "slot mount points and staging"),
	    CLI_OPTION_SLOTS(&o->slots, &slots_given),
	};
	const struct cli_command cmd = {
	    .name = "class",
	    .synopsis = "ASSIGNMENT DIR",
	    .about = "Grade every submission in DIR against ASSIGNMENT (a directory holding\n"
		     "assignment.yaml, or that file), several at once.  A submission is a\n"
		     "subdirectory of DIR or a .zip, .tar, .tar.gz or .tgz file in it; names\n"
		     "starting with '.' and symbolic links are skipped.  Progress goes to stderr\n"
		     "(a redrawn bar on a terminal, one line per submission otherwise), the\n"
		     "summary to stdout.",
	    .options = options,
	    .n_options = sizeof(options) / sizeof(options[0]),
	    .notes = "An existing --out file is never overwritten: without --resume it is an\n"
		     "error.  Every result is on disk before it is counted, so an interrupted\n"
		     "run loses only the submissions being graded at that moment.",
	    .exit_status = "  0    every submission got a verdict, whatever its score\n"
			   "  2    usage error: bad option or value, an assignment that does not\n"
			   "       load, an unreadable DIR, an --out file that exists without --resume\n"
			   "  3    some submission ended in status \"error\" (Proctor's own failure),\n"
			   "       or the results could not be written\n"
			   "  130  interrupted by SIGINT (143: by SIGTERM); the summary covers what\n"
			   "       was graded",
	    .operands = "ASSIGNMENT and DIR",
	    .min_operands = 2,
	    .max_operands = 2,
	};
	int n, rc = cli_parse(&cmd, argc, argv, &n);

	if (rc != CLI_OK)
		return rc;
	if (o->resume && !o->out)
		return cli_usage_error("--resume: needs --out, the files of the run to continue");
	if (o->jobs > o->slots)
		return cli_usage_error("-j: %u workers need %u sandbox slots, but %s is %u", o->jobs,
				       o->jobs, slots_given ? "--slots" : "the default --slots",
				       o->slots);
	o->assignment = argv[1];
	o->dir = argv[2];
	return CLI_OK;
}

/* ---- small helpers ------------------------------------------------------ */

static void *xcalloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/* Printable UTF-8: valid, no C0 or C1 control characters, so a name is
 * safe on a terminal, in JSON and in a CSV. */
static bool printable_utf8(const char *s)
{
	if (!utf8_valid(s, strlen(s)))
		return false;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
			return false;
	return true;
}

/* A JSON string of `s` (a message that may hold any bytes): bytes that
 * are not valid UTF-8 become '?'. */
static json_t *json_text(const char *s)
{
	json_t *t = json_string(s);
	char *copy;

	if (t)
		return t;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	t = json_string(copy);
	free(copy);
	return t;
}

/* Copy at most `cap` bytes of UTF-8 `s` without cutting a character. */
static char *capped_copy(const char *s, size_t cap)
{
	size_t n = strlen(s);

	if (n > cap) {
		n = cap;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	return strndup(s, n);
}

/* A number for people: integers without decimals, else up to 4 decimals. */
static void fmt_num(char *buf, size_t len, double x)
{
	if (x > -1e15 && x < 1e15 && x == (double)(long long)x) {
		snprintf(buf, len, "%lld", (long long)x);
		return;
	}
	if (!(x > -1e15 && x < 1e15)) {
		snprintf(buf, len, "%.6g", x);
		return;
	}
	snprintf(buf, len, "%.4f", x);
	char *dot = strchr(buf, '.');
	if (dot) {
		char *end = dot + strlen(dot);
		while (end > dot + 1 && end[-1] == '0')
			*--end = '\0';
		if (end == dot + 1)
			*dot = '\0';
	}
}

static void fmt_duration(char *buf, size_t len, uint64_t s)
{
	if (s < 60)
		snprintf(buf, len, "%llus", (unsigned long long)s);
	else if (s < 3600)
		snprintf(buf, len, "%llum%02llus", (unsigned long long)(s / 60),
			 (unsigned long long)(s % 60));
	else
		snprintf(buf, len, "%lluh%02llum", (unsigned long long)(s / 3600),
			 (unsigned long long)(s % 3600 / 60));
}

static unsigned cpu_count(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && (n = CPU_COUNT(&set)) > 0)
		return (unsigned)n;
	long v = sysconf(_SC_NPROCESSORS_ONLN);
	return v > 0 ? (unsigned)v : 1;
}

static int fsync_parent_dir(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, r;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = fsync(fd);
	close(fd);
	return r;
}

/* ---- messages ----------------------------------------------------------- */

static void progress_clear(struct class_run *c)
{
	if (c->tty && c->drawn) {
		fputs("\r\033[K", stderr);
		c->drawn = false;
		c->dirty = true;
	}
}

static void warn(struct class_run *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct class_run *c, const char *fmt, ...)
{
	va_list ap;

	progress_clear(c);
	va_start(ap, fmt);
	say_v("warning: ", fmt, ap);
	va_end(ap);
}

/* ---- results ------------------------------------------------------------ */

static void row_clear(struct row *r)
{
	free(r->reason);
	*r = (struct row){0};
}

static bool valid_status(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= sizeof(((struct row *)0)->status))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || s[i] == '_'))
			return false;
	return true;
}

static bool finite_number(const json_t *v, double *ret)
{
	double x;

	if (!json_is_number(v))
		return false;
	x = json_number_value(v);
	if (!(x > -1e300 && x < 1e300))
		return false;
	*ret = x;
	return true;
}

static bool test_passed(const json_t *t)
{
	const char *keys[] = {"outcome", "status"};

	if (json_is_true(json_object_get(t, "passed")))
		return true;
	for (size_t i = 0; i < 2; i++) {
		const char *v = json_string_value(json_object_get(t, keys[i]));
		if (v)
			return strcmp(v, "passed") == 0;
	}
	return false;
}

/*
 * Take what the gradebook needs from a result document: status (required,
 * [a-z_]+), score and max_score (numbers), passed and total (integers, or
 * counted from "tests"), reason (or message).  -1 if `j` is not a result.
 */
static int row_from_json(const json_t *j, struct row *ret)
{
	struct row r = {.present = true};
	const json_t *v = json_object_get(j, "status");
	const json_t *passed = json_object_get(j, "passed"), *total = json_object_get(j, "total");
	const json_t *tests = json_object_get(j, "tests");

	if (!json_is_object(j) || !json_is_string(v) || !valid_status(json_string_value(v)))
		return -1;
	snprintf(r.status, sizeof(r.status), "%s", json_string_value(v));
	r.has_score = finite_number(json_object_get(j, "score"), &r.score);
	r.has_max = finite_number(json_object_get(j, "max_score"), &r.max_score);
	if (json_is_integer(passed) && json_is_integer(total)) {
		r.has_counts = true;
		r.passed = json_integer_value(passed);
		r.total = json_integer_value(total);
	} else if (json_is_array(tests)) {
		r.has_counts = true;
		r.total = (long long)json_array_size(tests);
		for (size_t i = 0; i < json_array_size(tests); i++)
			r.passed += test_passed(json_array_get(tests, i));
	}
	v = json_object_get(j, "reason");
	if (!json_is_string(v))
		v = json_object_get(j, "message");
	if (json_is_string(v) && json_string_value(v)[0]) {
		r.reason = capped_copy(json_string_value(v), REASON_MAX);
		if (!r.reason)
			return -1;
	}
	row_clear(ret);
	*ret = r;
	return 0;
}

/* One CSV field (RFC 4180).  Control characters become spaces, so a row is
 * one line; text that a spreadsheet would run as a formula gets a leading
 * apostrophe (submission names and reasons come from students). */
static void csv_text(FILE *f, const char *s)
{
	bool guard = s[0] && strchr("=+-@", s[0]);
	bool quote = strpbrk(s, ",\"") != NULL;

	if (quote)
		fputc('"', f);
	if (guard)
		fputc('\'', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f) {
			fputc(' ', f);
			continue;
		}
		if (*p == '"')
			fputc('"', f);
		fputc(*p, f);
	}
	if (quote)
		fputc('"', f);
}

/* The gradebook row of one submission, "\r\n"-terminated; malloc'd. */
static char *csv_row(const char *name, const struct row *r)
{
	char *buf = NULL, num[64];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	csv_text(f, name);
	fprintf(f, ",%s,", r->status);
	if (r->has_score) {
		fmt_num(num, sizeof(num), r->score);
		fputs(num, f);
	}
	fputc(',', f);
	if (r->has_max) {
		fmt_num(num, sizeof(num), r->max_score);
		fputs(num, f);
	}
	if (r->has_counts)
		fprintf(f, ",%lld,%lld,", r->passed, r->total);
	else
		fputs(",,,", f);
	if (r->reason)
		csv_text(f, r->reason);
	fputs("\r\n", f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct submission *)a)->name, ((const struct submission *)b)->name);
}

static struct submission *find_submission(struct class_run *c, const char *name)
{
	struct submission key = {.name = (char *)name};

	return bsearch(&key, c->subs, c->n, sizeof(*c->subs), cmp_name);
}

/* ---- DIR ---------------------------------------------------------------- */

static bool is_archive_name(const char *name)
{
	return ends_with(name, ".zip") || ends_with(name, ".tar") || ends_with(name, ".tar.gz") ||
	       ends_with(name, ".tgz");
}

/* List DIR's submissions, sorted by name. */
static int scan_dir(struct class_run *c, struct err *e)
{
	const char *dir = c->o->dir;
	size_t cap = 0, dlen = strlen(dir);
	DIR *d = opendir(dir);
	char shown[NAME_MAX + 1];

	if (!d)
		return err_set(e, errno, "cannot read DIR '%s'", dir);
	for (;;) {
		struct dirent *de;
		struct stat st;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno) {
				int saved = errno;
				closedir(d);
				return err_set(e, saved, "cannot read DIR '%s'", dir);
			}
			break;
		}
		if (de->d_name[0] == '.')
			continue;
		text_printable(shown, sizeof(shown), de->d_name, '?');
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT) /* else gone since readdir */
				warn(c, "skipping '%s/%s': %s", dir, shown, strerror(errno));
			continue;
		}
		if (S_ISLNK(st.st_mode)) {
			warn(c, "skipping '%s/%s': a symbolic link", dir, shown);
			continue;
		}
		if (!S_ISDIR(st.st_mode) && !(S_ISREG(st.st_mode) && is_archive_name(de->d_name)))
			continue;
		if (!printable_utf8(de->d_name)) {
			warn(c, "skipping '%s/%s': the name is not printable UTF-8", dir, shown);
			continue;
		}
		if (dlen + 1 + strlen(de->d_name) >= PATH_MAX) {
			warn(c, "skipping '%s/%s': the path is too long", dir, shown);
			continue;
		}
		if (c->n == MAX_SUBMISSIONS) {
			closedir(d);
			return err_set(e, 0, "DIR '%s' holds more than %d submissions", dir,
				       MAX_SUBMISSIONS);
		}
		if (c->n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct submission *s = realloc(c->subs, ncap * sizeof(*s));
			if (!s) {
				closedir(d);
				return err_set(e, ENOMEM, "listing DIR '%s'", dir);
			}
			c->subs = s;
			cap = ncap;
		}
		c->subs[c->n] = (struct submission){.name = strdup(de->d_name)};
		if (!c->subs[c->n].name) {
			closedir(d);
			return err_set(e, ENOMEM, "listing DIR '%s'", dir);
		}
		c->n++;
	}
	closedir(d);
	if (c->n > 1)
		qsort(c->subs, c->n, sizeof(*c->subs), cmp_name);
	return 0;
}

/* ---- output files ------------------------------------------------------- */

/* --out names the JSON-lines file, or a CSV with the JSON lines beside it. */
static int out_paths(struct class_run *c)
{
	const char *out = c->o->out;
	size_t n = strlen(out);

	if (ends_with(out, ".jsonl")) {
		c->jsonl_path = strdup(out);
		return c->jsonl_path ? 0 : -1;
	}
	c->csv_path = strdup(out);
	if (!c->csv_path || asprintf(&c->jsonl_path, "%.*s.jsonl", (int)(n - 4), out) < 0) {
		c->jsonl_path = NULL;
		return -1;
	}
	return 0;
}

/* Nothing is overwritten by accident; 0 or the usage exit status. */
static int check_outputs(struct class_run *c)
{
	const char *paths[2] = {c->csv_path, c->jsonl_path};
	char dir[PATH_MAX];
	struct stat st;

	for (size_t i = 0; i < 2; i++) {
		if (!paths[i])
			continue;
		if (lstat(paths[i], &st) == 0) {
			if (!c->o->resume)
				return cli_usage_error(
				    "--out: '%s' exists; add --resume to continue that "
				    "run, or choose another file",
				    paths[i]);
			if (!S_ISREG(st.st_mode))
				return cli_usage_error("--out: '%s' is not a regular file", paths[i]);
		} else if (errno != ENOENT) {
			return cli_usage_error("--out: cannot use '%s': %s", paths[i], strerror(errno));
		}
	}
	if (c->o->resume && c->csv_path && lstat(c->csv_path, &st) == 0 &&
	    lstat(c->jsonl_path, &st) < 0)
		return cli_usage_error("--resume: '%s' has no '%s' beside it to resume from",
				   c->csv_path, c->jsonl_path);
	const char *slash = strrchr(c->jsonl_path, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - c->jsonl_path + 1), c->jsonl_path);
	if (access(dir, W_OK | X_OK) < 0)
		return cli_usage_error("--out: cannot write in '%s': %s", dir, strerror(errno));
	return 0;
}

/* One line of an earlier run's JSON lines; false if it is not a result.
 * Results of submissions no longer in DIR are ignored. */
static bool resume_line(struct class_run *c, const char *line, size_t len)
{
	json_t *j = json_loadb(line, len, 0, NULL);
	const char *name = json_string_value(json_object_get(j, "submission_name"));
	struct submission *s = name ? find_submission(c, name) : NULL;
	struct row r = {0};
	bool ok = name && row_from_json(j, &r) == 0;

	if (ok && s) {
		row_clear(&s->row);
		s->row = r;
	} else {
		row_clear(&r);
	}
	json_decref(j);
	return ok;
}

/*
 * Read the JSON lines of an earlier run: the last result of each submission
 * wins.  An incomplete last line (the writer was killed mid-write) is cut
 * off so the next append starts on a line of its own.
 */
static int resume_read(struct class_run *c, struct err *e)
{
	char chunk[65536], *line = NULL;
	size_t len = 0, cap = 0, bad = 0;
	off_t pos = 0, good_end = 0;
	bool overlong = false;
	int fd = open(c->jsonl_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return errno == ENOENT
			   ? 0
			   : err_set(e, errno, "--resume: cannot open '%s'", c->jsonl_path);
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err_set(e, errno, "--resume: cannot read '%s'", c->jsonl_path);
			goto out_fail;
		}
		if (r == 0)
			break;
		for (size_t i = 0; i < (size_t)r;) {
			const char *nl = memchr(chunk + i, '\n', (size_t)r - i);
			size_t seg = nl ? (size_t)(nl - (chunk + i)) : (size_t)r - i;
			if (!overlong && len + seg > RESULT_MAX)
				overlong = true;
			if (!overlong) {
				if (len + seg + 1 > cap) {
					size_t ncap = (len + seg + 1) * 2;
					char *p = realloc(line, ncap);
					if (!p) {
						err_set(e, ENOMEM, "--resume: reading '%s'",
							c->jsonl_path);
						goto out_fail;
					}
					line = p;
					cap = ncap;
				}
				memcpy(line + len, chunk + i, seg);
				len += seg;
			}
			i += seg;
			pos += (off_t)seg;
			if (!nl)
				break;
			i++;
			pos++;
			good_end = pos;
			if (overlong || (len > 0 && !resume_line(c, line, len)))
				bad++;
			len = 0;
			overlong = false;
		}
	}
	if (pos > good_end && !overlong && resume_line(c, line, len)) {
		/* A whole result without its newline (an edited file): keep it. */
		if (lseek(fd, 0, SEEK_END) < 0 || write_all(fd, "\n", 1) < 0 || fsync(fd) < 0) {
			err_set(e, errno, "--resume: cannot write '%s'", c->jsonl_path);
			goto out_fail;
		}
	} else if (pos > good_end) {
		warn(c,
		     "'%s' ends in an incomplete line (the run writing it was killed); "
		     "dropping it",
		     c->jsonl_path);
		if (ftruncate(fd, good_end) < 0 || fsync(fd) < 0) {
			err_set(e, errno, "--resume: cannot truncate '%s'", c->jsonl_path);
			goto out_fail;
		}
	}
	if (bad)
		warn(c, "%zu line%s of '%s' %s not a result document; ignored", bad,
		     bad == 1 ? "" : "s", c->jsonl_path, bad == 1 ? "is" : "are");
	free(line);
	close(fd);
	return 0;
out_fail:
	free(line);
	close(fd);
	return -1;
}

/* Write the whole gradebook (header, one row per submission with a
 * result, sorted) to a temporary file, rename it over the CSV, and reopen
 * the CSV for appending. */
static int csv_rewrite(struct class_run *c, struct err *e)
{
	char tmp[PATH_MAX];
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", c->csv_path) >= (int)sizeof(tmp))
		return err_set(e, ENAMETOOLONG, "'%s'", c->csv_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return err_set(e, errno, "cannot create '%s'", tmp);
	if (write_all(fd, csv_header, strlen(csv_header)) < 0)
		goto out_write;
	for (size_t i = 0; i < c->n; i++) {
		if (!c->subs[i].row.present)
			continue;
		char *r = csv_row(c->subs[i].name, &c->subs[i].row);
		if (!r) {
			errno = ENOMEM;
			goto out_write;
		}
		int w = write_all(fd, r, strlen(r));
		free(r);
		if (w < 0)
			goto out_write;
	}
	if (fsync(fd) < 0)
		goto out_write;
	close(fd);
	if (rename(tmp, c->csv_path) < 0) {
		err_set(e, errno, "cannot rename '%s' to '%s'", tmp, c->csv_path);
		unlink(tmp);
		return -1;
	}
	fsync_parent_dir(c->csv_path);
	c->csv_fd = xclose(c->csv_fd);
	c->csv_fd = open(c->csv_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (c->csv_fd < 0)
		return err_set(e, errno, "cannot open '%s'", c->csv_path);
	return 0;
out_write:
	err_set(e, errno, "cannot write '%s'", tmp);
	close(fd);
	unlink(tmp);
	return -1;
}

static int open_outputs(struct class_run *c, struct err *e)
{
	int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW;

	if (!c->o->resume)
		flags |= O_EXCL;
	c->jsonl_fd = open(c->jsonl_path, flags, 0644);
	if (c->jsonl_fd < 0)
		return err_set(e, errno, "--out: cannot create '%s'", c->jsonl_path);
	fsync_parent_dir(c->jsonl_path);
	if (c->csv_path && csv_rewrite(c, e) < 0)
		return err_wrap(e, "--out");
	return 0;
}

/* Without a terminal, one line per finished submission:
 * "[12/300] alice: graded 7/10", then ": reason" when there is one. */
static void progress_line(struct class_run *c, const struct submission *s)
{
	const struct row *r = &s->row;
	char reason[REASON_MAX + 1], points[160] = "", a[64], b[64];

	text_printable(reason, sizeof(reason), r->reason ? r->reason : "", '?');
	if (r->has_score && strcmp(r->status, "error") != 0) {
		fmt_num(a, sizeof(a), r->score);
		fmt_num(b, sizeof(b), r->max_score);
		snprintf(points, sizeof(points), " %s%s%s", a, r->has_max ? "/" : "",
			 r->has_max ? b : "");
	}
	fprintf(stderr, "[%zu/%zu] %s: %s%s%s%s\n", c->done, c->todo, s->name, r->status, points,
		reason[0] ? ": " : "", reason);
}

/* Keep one result: the JSON line (the full record) first, then the
 * gradebook row, each on disk before the result is counted.  `line` ends
 * in '\n'. */
static int record(struct class_run *c, size_t idx, const char *line, size_t len, const json_t *j,
		  struct err *e)
{
	struct submission *s = &c->subs[idx];
	struct row parsed = {0};
	char *row;

	if (row_from_json(j, &parsed) < 0)
		return err_set(e, 0, "result of '%s' has no valid status", s->name);
	if (c->jsonl_fd >= 0 &&
	    (write_all(c->jsonl_fd, line, len) < 0 || fdatasync(c->jsonl_fd) < 0)) {
		row_clear(&parsed);
		return err_set(e, errno, "cannot write '%s'", c->jsonl_path);
	}
	row_clear(&s->row);
	s->row = parsed;
	if (c->csv_fd >= 0) {
		row = csv_row(s->name, &s->row);
		if (!row)
			return err_set(e, ENOMEM, "cannot write '%s'", c->csv_path);
		int w = write_all(c->csv_fd, row, strlen(row));
		free(row);
		if (w < 0 || fdatasync(c->csv_fd) < 0)
			return err_set(e, errno, "cannot write '%s'", c->csv_path);
	}
	s->this_run = true;
	c->done++;
	if (!c->tty)
		progress_line(c, s);
	c->dirty = true;
	return 0;
}

static void fail(struct class_run *c, const struct err *e)
{
	if (!c->fatal) {
		c->fatal = true;
		snprintf(c->fatal_msg, sizeof(c->fatal_msg), "%s", e->msg);
	}
}

/*
 * The result document (docs/result.md) of a submission Proctor could not
 * grade: status "error", every field present, nothing scored, each
 * declared test "missing".  What only grading would know (steps, the
 * submission's digest and files, the image) is empty or null.
 */
static json_t *error_document(const struct class_run *c, size_t idx, const char *reason,
			      unsigned attempts)
{
	const struct assignment *a = c->a;
	bool io = a->mode == GRADE_MODE_IO;
	size_t total = io ? a->n_cases : a->n_tests;
	json_t *tests = json_array();
	char path[PATH_MAX];

	for (size_t i = 0; tests && i < total; i++) {
		const char *classname = io ? NULL : a->tests[i].t.classname;
		json_array_append_new(
		    tests,
		    json_pack("{s:s, s:o, s:s, s:f, s:f, s:s, s:n, s:n}", "name",
			      io ? a->cases[i].name : a->tests[i].t.name, "classname",
			      classname ? json_string(classname) : json_null(), "status", "missing",
			      "score", 0.0, "max_score",
			      io ? a->cases[i].points : a->tests[i].t.points, "visibility",
			      visibility_name(io ? a->cases[i].visibility : a->tests[i].visibility),
			      "message", "reason"));
	}
	snprintf(path, sizeof(path), "%s/%s", c->o->dir, c->subs[idx].name);
	return json_pack(
	    "{s:i, s:s, s:s, s:o, s:f, s:f, s:I, s:I, s:o, s:[], "
	    "s:{s:o, s:n, s:[], s:[]}, s:{s:s, s:s}, s:n, s:s, s:i, s:s, s:s, s:f}",
	    "schema_version", 1, "proctor_version", PROCTOR_VERSION, "status", "error", "reason",
	    json_text(reason), "score", 0.0, "max_score", a->max_score, "passed", (json_int_t)0,
	    "total", (json_int_t)total, "tests", tests, "steps", "submission", "path",
	    json_text(path), "digest", "files", "ignored", "assignment", "name", a->name, "digest",
	    a->digest, "image", "isolation", c->go.ops->name, "attempts", (int)attempts, "view",
	    "instructor", "submission_name", c->subs[idx].name, "time_factor", c->time_factor);
}

/* Record Proctor's own failure for a submission: status "error". */
static void record_error(struct class_run *c, size_t idx, const char *reason)
{
	struct err e;
	json_t *j = error_document(c, idx, reason, c->subs[idx].attempts);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	char *line = s ? realloc(s, strlen(s) + 2) : NULL;

	if (!line) {
		free(s);
		json_decref(j);
		err_set(&e, ENOMEM, "recording the failure of '%s'", c->subs[idx].name);
		fail(c, &e);
		return;
	}
	strcat(line, "\n");
	if (record(c, idx, line, strlen(line), j, &e) < 0)
		fail(c, &e);
	free(line);
	json_decref(j);
}

/* ---- workers ------------------------------------------------------------ */

/* The longest a worker may plausibly take for one submission: every step
 * at its wall limit, with room for intake and copies, for each retry the
 * assignment allows, twice over. */
static uint64_t grading_budget_ns(const struct assignment *a, double time_factor)
{
	const struct step *steps[] = {&a->setup, &a->build, &a->test};
	uint64_t ms = 60000;

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		if (steps[i]->present)
			ms += steps[i]->limits.wall_ms;
	for (size_t i = 0; i < a->n_cases; i++) {
		ms += a->cases[i].limits.wall_ms;
		if (a->checker.present)
			ms += a->checker.limits.wall_ms;
	}
	ms *= 2ull * (a->retries + 1);
	/* A slower backend has its limits scaled (grade.c), and so the wait. */
	return (uint64_t)((double)(ms + 300000) * time_factor) * 1000000ull;
}

static int recv_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, (char *)buf + got, len - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return got == 0 && n == 0 ? 0 : -1;
		got += (size_t)n;
	}
	return 1;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A worker: grade what the parent hands out until it closes the socket. */
static void worker_main(struct class_run *c, int fd, pid_t parent) __attribute__((noreturn));
static void worker_main(struct class_run *c, int fd, pid_t parent)
{
	struct sigaction ign = {.sa_handler = SIG_IGN}, dfl = {.sa_handler = SIG_DFL};
	sigset_t none;

	/* A Ctrl-C reaches the whole process group; the parent decides what
	 * stops, and kills this worker by pid if needed. */
	sigaction(SIGINT, &ign, NULL);
	sigaction(SIGTERM, &dfl, NULL);
	sigaction(SIGPIPE, &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Never grade for a parent that is gone: nothing would record it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(WORKER_EXIT_SETUP);
	for (;;) {
		uint32_t idx;
		char path[PATH_MAX];
		json_t *res = NULL;
		struct err e;
		int r = recv_full(fd, &idx, sizeof(idx));

		if (r == 0) {
			vm_pool_drain(); /* pre-started microVMs: their files too */
			_exit(0);
		}
		if (r < 0 || idx >= c->n)
			_exit(WORKER_EXIT_PROTOCOL);
		const char *name = c->subs[idx].name;
		snprintf(path, sizeof(path), "%s/%s", c->o->dir, name);
		if (grade_submission(c->a, path, &c->go, &res, &e) < 0)
			res = error_document(c, idx, e.msg, 1);
		if (!res || json_object_set_new(res, "submission_name", json_string(name)) < 0)
			_exit(WORKER_EXIT_NOMEM);
		char *s = json_dumps(res, JSON_COMPACT);
		json_decref(res);
		if (!s)
			_exit(WORKER_EXIT_NOMEM);
		uint64_t len = strlen(s);
		if (send_all(fd, &len, sizeof(len)) < 0 || send_all(fd, s, len) < 0) {
			vm_pool_drain();
			_exit(0); /* the parent is gone */
		}
		free(s);
	}
}

static int worker_spawn(struct class_run *c, struct worker *w, struct err *e)
{
	int sv[2];
	pid_t parent = getpid(), pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return err_set(e, errno, "socketpair");
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		int saved = errno;
		close(sv[0]);
		close(sv[1]);
		return err_set(e, saved, "fork");
	}
	if (pid == 0) {
		/* Only what grading needs: no output file, no other worker's
		 * socket (its EOF must mean that worker is gone), no signalfd. */
		close(sv[0]);
		for (unsigned i = 0; i < c->n_workers; i++)
			xclose(c->workers[i].fd);
		xclose(c->jsonl_fd);
		xclose(c->csv_fd);
		xclose(c->sig_fd);
		worker_main(c, sv[1], parent);
	}
	close(sv[1]);
	if (fcntl(sv[0], F_SETFL, O_NONBLOCK) < 0) {
		/* Never happens on a socket; still, a blocking read would
		 * hang the whole run. */
		int saved = errno;
		close(sv[0]);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		return err_set(e, saved, "fcntl");
	}
	*w = (struct worker){.pid = pid, .fd = sv[0], .task = -1};
	return 0;
}

/* Kill by pid and reap (a child not yet reaped keeps its pid, so the kill
 * cannot hit another process); describe how it ended. */
static void worker_reap(struct worker *w, char *how, size_t len)
{
	int st = 0;

	if (w->pid > 0) {
		kill(w->pid, SIGKILL);
		while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	if (WIFSIGNALED(st))
		snprintf(how, len, "was killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(how, len, "exited with status %d", WEXITSTATUS(st));
	w->pid = 0;
	w->fd = xclose(w->fd);
	free(w->buf);
	w->buf = NULL;
	w->hdr_got = w->len = w->got = 0;
}

static bool queue_empty(const struct class_run *c)
{
	return c->qhead == c->qtail;
}

/*
 * A worker failed: it died, broke the protocol or overran its budget
 * (`why`; NULL: it died, say how).  Its submission is graded once more,
 * then recorded as "error"; the worker is replaced while work remains.
 */
static void worker_lost(struct class_run *c, struct worker *w, const char *why)
{
	char how[256], reason[512];
	pid_t pid = w->pid;
	long task = w->task;
	struct err e;

	worker_reap(w, how, sizeof(how));
	snprintf(reason, sizeof(reason), "grading worker %s", why ? why : how);
	w->task = -1;
	if (task >= 0) {
		struct submission *s = &c->subs[task];
		if (s->attempts < GRADE_ATTEMPTS) {
			warn(c, "worker %d %s while grading '%s'; grading it again", (int)pid,
			     why ? why : how, s->name);
			c->queue[c->qtail++] = (size_t)task;
		} else {
			warn(c,
			     "worker %d %s while grading '%s', again; recording status \"error\"",
			     (int)pid, why ? why : how, s->name);
			record_error(c, (size_t)task, reason);
		}
	}
	if (queue_empty(c) || c->fatal)
		return;
	if (c->respawns >= c->todo * GRADE_ATTEMPTS + MAX_JOBS) {
		warn(c, "too many grading workers failed; not starting another");
		return;
	}
	c->respawns++;
	if (worker_spawn(c, w, &e) < 0)
		warn(c, "cannot start a grading worker: %s", e.msg);
}

/* 1: a whole result is in w->buf (followed by '\n'); 0: more to come;
 * -1: the worker is gone or broke the protocol (`why` empty: gone). */
static int worker_receive(struct worker *w, char *why, size_t why_len)
{
	why[0] = '\0';
	for (;;) {
		ssize_t n;
		if (w->hdr_got < sizeof(w->hdr)) {
			n = recv(w->fd, w->hdr + w->hdr_got, sizeof(w->hdr) - w->hdr_got,
				 MSG_DONTWAIT);
		} else {
			n = recv(w->fd, w->buf + w->got, w->len - w->got, MSG_DONTWAIT);
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return -1;
		if (w->hdr_got < sizeof(w->hdr)) {
			uint64_t len;
			w->hdr_got += (size_t)n;
			if (w->hdr_got < sizeof(w->hdr))
				continue;
			memcpy(&len, w->hdr, sizeof(len));
			if (w->task < 0) {
				snprintf(why, why_len, "sent a result nobody asked for");
				return -1;
			}
			if (len == 0 || len > RESULT_MAX) {
				snprintf(why, why_len,
					 "sent a result of %llu bytes (the cap is %llu MiB)",
					 (unsigned long long)len, RESULT_MAX >> 20);
				return -1;
			}
			w->buf = malloc((size_t)len + 1);
			if (!w->buf) {
				snprintf(why, why_len, "sent a result too large to hold in memory");
				return -1;
			}
			w->len = (size_t)len;
			w->got = 0;
			continue;
		}
		w->got += (size_t)n;
		if (w->got == w->len) {
			w->buf[w->len] = '\n';
			return 1;
		}
	}
}

static bool stop_pending(void)
{
	sigset_t p;

	return sigpending(&p) == 0 && (sigismember(&p, SIGINT) || sigismember(&p, SIGTERM));
}

/* The signal waiting in the signalfd, or 0. */
static int take_signal(int sig_fd)
{
	struct signalfd_siginfo si;
	ssize_t n;

	do
		n = read(sig_fd, &si, sizeof(si));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(si) ? (int)si.ssi_signo : 0;
}

/* A whole result arrived from `w`: check it and record it. */
static void worker_result(struct class_run *c, struct worker *w)
{
	size_t idx = (size_t)w->task;
	json_error_t je;
	json_t *j = NULL;
	char why[256];
	struct err e;
	struct row probe = {0};

	if (memchr(w->buf, '\n', w->len)) {
		snprintf(why, sizeof(why), "sent a result with a raw newline");
		goto out_lost;
	}
	j = json_loadb(w->buf, w->len, 0, &je);
	if (!j || !json_is_object(j)) {
		snprintf(why, sizeof(why), "sent a result that is not a JSON object: %s",
			 j ? "" : je.text);
		goto out_lost;
	}
	const char *name = json_string_value(json_object_get(j, "submission_name"));
	if (!name || strcmp(name, c->subs[idx].name) != 0) {
		snprintf(why, sizeof(why), "sent a result for another submission");
		goto out_lost;
	}
	if (row_from_json(j, &probe) < 0) {
		snprintf(why, sizeof(why), "sent a result without a valid status");
		goto out_lost;
	}
	row_clear(&probe);
	if (record(c, idx, w->buf, w->len + 1, j, &e) < 0)
		fail(c, &e);
	json_decref(j);
	free(w->buf);
	w->buf = NULL;
	w->hdr_got = w->len = w->got = 0;
	w->task = -1;
	return;
out_lost:
	json_decref(j);
	worker_lost(c, w, why);
}

/* Hand one submission to each idle worker. */
static void dispatch(struct class_run *c)
{
	for (unsigned i = 0; i < c->n_workers && !queue_empty(c) && !c->fatal;) {
		struct worker *w = &c->workers[i];
		if (w->pid == 0 || w->task >= 0) {
			i++;
			continue;
		}
		uint32_t idx = (uint32_t)c->queue[c->qhead];
		ssize_t n = send(w->fd, &idx, sizeof(idx), MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n != (ssize_t)sizeof(idx)) {
			/* Its socket buffer is empty (one task at a time), so
			 * this is a dead worker; its replacement, if any, is
			 * tried next (replacements are capped, so this ends). */
			worker_lost(c, w, NULL);
			continue;
		}
		i++;
		c->qhead++;
		c->subs[idx].attempts++;
		w->task = (long)idx;
		w->deadline_ns = now_ns() + c->budget_ns;
	}
}

static unsigned workers_alive(const struct class_run *c, unsigned *busy)
{
	unsigned alive = 0;

	*busy = 0;
	for (unsigned i = 0; i < c->n_workers; i++) {
		if (c->workers[i].pid == 0)
			continue;
		alive++;
		*busy += c->workers[i].task >= 0;
	}
	return alive;
}

/* Tell workers to stop (EOF), kill busy ones by pid, and reap them all. */
static void workers_stop(struct class_run *c)
{
	uint64_t deadline = now_ns() + STOP_GRACE_NS;
	struct timespec ts = {0, 10 * 1000000L};
	char how[256];
	bool left;

	for (unsigned i = 0; i < c->n_workers; i++) {
		struct worker *w = &c->workers[i];
		if (w->pid == 0)
			continue;
		w->fd = xclose(w->fd);
		if (w->task >= 0)
			kill(w->pid, SIGTERM); /* its sandbox dies with it */
	}
	do {
		left = false;
		for (unsigned i = 0; i < c->n_workers; i++) {
			struct worker *w = &c->workers[i];
			if (w->pid == 0)
				continue;
			if (waitpid(w->pid, NULL, WNOHANG) == w->pid)
				w->pid = 0;
			else
				left = true;
		}
		if (left && now_ns() < deadline)
			nanosleep(&ts, NULL);
	} while (left && now_ns() < deadline);
	for (unsigned i = 0; i < c->n_workers; i++)
		if (c->workers[i].pid != 0)
			worker_reap(&c->workers[i], how, sizeof(how));
	for (unsigned i = 0; i < c->n_workers; i++) {
		free(c->workers[i].buf);
		c->workers[i].buf = NULL;
	}
}

/* ---- progress ----------------------------------------------------------- */

struct status_count {
	const char *status;
	size_t n;
};

#define MAX_STATUSES 16

/* Counts by status, known statuses first; the last slot collects "other". */
static size_t count_statuses(struct class_run *c, bool this_run, struct status_count *out)
{
	size_t k = 0, other = 0;

	for (size_t i = 0; i < sizeof(known_statuses) / sizeof(known_statuses[0]); i++)
		out[k++] = (struct status_count){known_statuses[i], 0};
	for (size_t i = 0; i < c->n; i++) {
		const struct submission *s = &c->subs[i];
		size_t j;
		if (!s->row.present || (this_run && !s->this_run))
			continue;
		for (j = 0; j < k && strcmp(out[j].status, s->row.status) != 0; j++)
			;
		if (j < k)
			out[j].n++;
		else if (k < MAX_STATUSES - 1)
			out[k++] = (struct status_count){s->row.status, 1};
		else
			other++;
	}
	if (other)
		out[k++] = (struct status_count){"other", other};
	return k;
}

static void status_counts_line(struct class_run *c, bool this_run, char *buf, size_t len)
{
	struct status_count sc[MAX_STATUSES];
	size_t k = count_statuses(c, this_run, sc), used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < k; i++) {
		if (!sc[i].n)
			continue;
		int r = snprintf(buf + used, len - used, "%s%s %zu", used ? ", " : "", sc[i].status,
				 sc[i].n);
		if (r < 0 || (size_t)r >= len - used)
			break;
		used += (size_t)r;
	}
}

/* The bar: done/total, rate, ETA, counts by status; at most every
 * REDRAW_NS unless forced. */
static void progress_draw(struct class_run *c, bool force)
{
	char line[512], counts[256], rate[32], eta[32];
	uint64_t t = now_ns(), elapsed = t - c->start_ns;
	struct winsize ws;
	size_t cols = 80;

	if (!c->tty || (!force && c->drawn && !c->dirty && t - c->last_draw_ns < 1000000000ull))
		return;
	if (!force && t - c->last_draw_ns < REDRAW_NS)
		return;
	if (c->done > 0 && elapsed > 0) {
		double per_s = (double)c->done / ((double)elapsed / 1e9);
		snprintf(rate, sizeof(rate), "%.1f/min", per_s * 60);
		fmt_duration(eta, sizeof(eta), (uint64_t)((double)(c->todo - c->done) / per_s));
	} else {
		snprintf(rate, sizeof(rate), "-/min");
		snprintf(eta, sizeof(eta), "-");
	}
	status_counts_line(c, true, counts, sizeof(counts));
	snprintf(line, sizeof(line), "[%zu/%zu] %s, ETA %s%s%s", c->done, c->todo, rate, eta,
		 counts[0] ? " | " : "", counts);
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
		cols = ws.ws_col;
	if (strlen(line) > cols - 1)
		line[cols - 1] = '\0'; /* a wrapped line cannot be redrawn in place */
	fprintf(stderr, "\r\033[K%s", line);
	c->drawn = true;
	c->dirty = false;
	c->last_draw_ns = t;
}

/* ---- summary ------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void print_summary(struct class_run *c, int sig)
{
	struct status_count sc[MAX_STATUSES];
	size_t k = count_statuses(c, false, sc), graded = 0, missing = 0, n_scores = 0;
	size_t bins[HIST_BINS] = {0}, n_frac = 0, most = 0;
	double *scores = xcalloc(c->n, sizeof(double)), sum = 0;
	char a[64], b[64], m[64], dir[PATH_MAX];

	for (size_t i = 0; i < c->n; i++) {
		const struct row *r = &c->subs[i].row;
		graded += c->subs[i].this_run;
		missing += !r->present;
		if (!r->present || !r->has_score || strcmp(r->status, "error") == 0)
			continue;
		if (scores)
			scores[n_scores++] = r->score;
		sum += r->score;
		double max = r->has_max && r->max_score > 0 ? r->max_score : c->a->max_score;
		if (max > 0) {
			double f = r->score / max;
			int bin = f <= 0 ? 0 : f >= 1 ? HIST_BINS - 1 : (int)(f * HIST_BINS);
			bins[bin]++;
			n_frac++;
		}
	}
	text_printable(dir, sizeof(dir), c->o->dir, '?');
	printf("%zu submission%s in %s: %zu graded in this run, %zu kept from an earlier run", c->n,
	       c->n == 1 ? "" : "s", dir, graded, c->kept);
	if (missing)
		printf(", %zu without a result%s", missing, sig ? " (interrupted)" : "");
	printf("\n");
	for (size_t i = 0; i < k; i++)
		if (sc[i].n)
			printf("  %-14s %zu\n", sc[i].status, sc[i].n);
	fmt_num(m, sizeof(m), c->a->max_score);
	if (n_scores > 0) {
		qsort(scores, n_scores, sizeof(double), cmp_double);
		double median = n_scores % 2
				    ? scores[n_scores / 2]
				    : (scores[n_scores / 2 - 1] + scores[n_scores / 2]) / 2;
		fmt_num(a, sizeof(a), sum / (double)n_scores);
		fmt_num(b, sizeof(b), median);
		printf("score (of %s): mean %s, median %s, over %zu submission%s\n", m, a, b,
		       n_scores, n_scores == 1 ? "" : "s");
	} else {
		printf("score (of %s): no scored submission\n", m);
	}
	if (n_frac > 0) {
		for (size_t i = 0; i < HIST_BINS; i++)
			if (bins[i] > most)
				most = bins[i];
		printf("score / max_score:\n");
		for (size_t i = 0; i < HIST_BINS; i++) {
			size_t w = (bins[i] * HIST_WIDTH + most - 1) / most;
			printf("  [%3zu%%,%4zu%%%c ", i * 100 / HIST_BINS,
			       (i + 1) * 100 / HIST_BINS, i == HIST_BINS - 1 ? ']' : ')');
			for (size_t j = 0; j < w; j++)
				putchar('#');
			printf("%*s %zu\n", (int)(HIST_WIDTH - w), "", bins[i]);
		}
	}
	free(scores);
	fflush(stdout);
}

/* ---- the run ------------------------------------------------------------ */

/* Grade until the queue is empty, a signal comes, or the results cannot be
 * written.  Returns the signal number, or 0. */
static int run_loop(struct class_run *c)
{
	struct pollfd pfd[MAX_JOBS + 1];
	struct worker *owner[MAX_JOBS + 1];

	for (;;) {
		unsigned busy, alive;
		char why[256];
		int k = 0, sig;

		dispatch(c);
		if (c->fatal)
			return 0;
		alive = workers_alive(c, &busy);
		if (busy == 0 && queue_empty(c))
			return 0;
		if (alive == 0) {
			/* Not one worker could be started: record what is left. */
			while (!queue_empty(c) && !c->fatal)
				record_error(c, c->queue[c->qhead++],
					     "no grading worker could be started");
			continue;
		}
		pfd[k++] = (struct pollfd){.fd = c->sig_fd, .events = POLLIN};
		for (unsigned i = 0; i < c->n_workers; i++) {
			if (c->workers[i].pid == 0)
				continue;
			owner[k] = &c->workers[i];
			pfd[k++] = (struct pollfd){.fd = c->workers[i].fd, .events = POLLIN};
		}
		int timeout = TICK_MS;
		if (c->tty && c->dirty)
			timeout = (int)(REDRAW_NS / 1000000);
		int r = poll(pfd, (nfds_t)k, timeout);
		if (r < 0 && errno != EINTR) {
			struct err e;
			err_set(&e, errno, "poll");
			fail(c, &e);
			return 0;
		}
		if (r > 0 && (pfd[0].revents & POLLIN) && (sig = take_signal(c->sig_fd)) != 0)
			return sig;
		for (int i = 1; r > 0 && i < k; i++) {
			struct worker *w = owner[i];
			if (!pfd[i].revents || w->pid == 0)
				continue;
			int got = worker_receive(w, why, sizeof(why));
			if (got == 0)
				continue;
			if (got < 0) {
				worker_lost(c, w, why[0] ? why : NULL);
				continue;
			}
			if (stop_pending())
				return take_signal(c->sig_fd); /* this result came too late */
			worker_result(c, w);
			if (c->fatal)
				return 0;
		}
		uint64_t t = now_ns();
		for (unsigned i = 0; i < c->n_workers; i++) {
			struct worker *w = &c->workers[i];
			if (w->pid != 0 && w->task >= 0 && t > w->deadline_ns) {
				snprintf(why, sizeof(why), "took longer than %llu s",
					 (unsigned long long)(c->budget_ns / 1000000000ull));
				worker_lost(c, w, why);
			}
		}
		progress_draw(c, false);
	}
}

int cmd_class(int argc, char **argv)
{
	struct class_options o = {.isolation = "auto", .slots = CLI_DEFAULT_SLOTS};
	struct class_run c = {.o = &o, .jsonl_fd = -1, .csv_fd = -1, .sig_fd = -1};
	const struct sandbox_ops *ops;
	sigset_t stop_set;
	char why[256];
	struct err e;
	int status, sig = 0, r;

	o.state_dir = cli_state_dir();
	r = parse_options(argc, argv, &o);
	if (r != CLI_OK)
		return cli_exit_status(r);
	c.tty = isatty(STDERR_FILENO) == 1;

	/* Everything that can be a usage error comes before any grading. */
	status = 2;
	if (assignment_load(o.assignment, &c.a, &e) < 0) {
		cli_usage_error("%s", e.msg);
		goto out;
	}
	if (scan_dir(&c, &e) < 0) {
		cli_usage_error("%s", e.msg);
		goto out;
	}
	if (o.out) {
		if (out_paths(&c) < 0) {
			cli_usage_error("--out: out of memory");
			goto out;
		}
		if (check_outputs(&c) != 0)
			goto out;
		if (o.resume && resume_read(&c, &e) < 0) {
			cli_usage_error("%s", e.msg);
			goto out;
		}
	}
	c.queue = xcalloc(2 * c.n, sizeof(*c.queue));
	if (!c.queue) {
		say("out of memory");
		status = 3;
		goto out;
	}
	for (size_t i = 0; i < c.n; i++) {
		struct row *row = &c.subs[i].row;
		if (row->present && strcmp(row->status, "error") != 0) {
			c.kept++;
			continue;
		}
		row_clear(row); /* graded again */
		c.queue[c.qtail++] = i;
	}
	c.todo = c.qtail;

	status = 3;
	if (grade_prepare(o.isolation, c.a, &ops, why, sizeof(why), &e) < 0) {
		if (strncmp(e.msg, "--isolation", 11) == 0)
			status = cli_usage_error("%s", e.msg);
		else
			say("%s", e.msg);
		goto out;
	}
	/* Each worker keeps one microVM pre-started (QEMU up, waiting for the
	 * snapshot), so a restore does not wait for QEMU to start. */
	if (ops == &vm_ops)
		setenv("PROCTOR_VM_POOL", "1", 0);
	c.go = (struct grade_options){
	    .ops = ops,
	    .sandbox = {.state_dir = o.state_dir,
			.max_slots = o.slots,
			.uid_base = SANDBOX_UID_BASE},
	};
	c.time_factor = 1.0;
	if (ops == &vm_ops) {
		bool measured;
		c.time_factor = vm_slowdown_factor(o.state_dir, &measured);
	}
	c.budget_ns = grading_budget_ns(c.a, c.time_factor);

	/* From here on SIGINT and SIGTERM arrive only through the signalfd:
	 * once an output file exists, the run ends with a summary. */
	sigemptyset(&stop_set);
	sigaddset(&stop_set, SIGINT);
	sigaddset(&stop_set, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_set, NULL);
	c.sig_fd = signalfd(-1, &stop_set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (c.sig_fd < 0) {
		say("signalfd: %s", strerror(errno));
		goto out;
	}
	if (o.out && open_outputs(&c, &e) < 0) {
		status = cli_usage_error("%s", e.msg);
		goto out;
	}
	unsigned jobs = o.jobs ? o.jobs : cpu_count();
	if (jobs > o.slots)
		jobs = o.slots;
	if (jobs > c.todo)
		jobs = (unsigned)c.todo;
	progress_clear(&c);
	say("grading %zu of %zu submission%s in %s with %u worker%s", c.todo, c.n,
	    c.n == 1 ? "" : "s", o.dir, jobs, jobs == 1 ? "" : "s");
	c.start_ns = now_ns();
	for (unsigned i = 0; i < jobs; i++) {
		if (worker_spawn(&c, &c.workers[c.n_workers], &e) < 0) {
			warn(&c, "cannot start a grading worker: %s", e.msg);
			break;
		}
		c.n_workers++;
	}
	c.dirty = true;
	if (c.todo > 0)
		sig = run_loop(&c);
	workers_stop(&c);
	if (c.tty) {
		progress_draw(&c, true); /* the last state stays on screen */
		fputc('\n', stderr);
		c.drawn = false;
	}
	if (c.fatal)
		say("%s; stopping", c.fatal_msg);
	if (c.csv_path && c.csv_fd >= 0 && csv_rewrite(&c, &e) < 0) {
		say("%s", e.msg);
		c.fatal = true;
	}
	print_summary(&c, sig);
	if (sig)
		status = 128 + sig;
	else if (c.fatal)
		status = 3;
	else {
		status = 0;
		for (size_t i = 0; i < c.n; i++)
			if (c.subs[i].row.present && strcmp(c.subs[i].row.status, "error") == 0)
				status = 3;
	}
	/* SIGINT and SIGTERM stay blocked: one that comes after the last poll
	 * changes nothing, every result is already on disk, and the exit
	 * status says how the run ended. */
out:
	xclose(c.sig_fd);
	xclose(c.jsonl_fd);
	xclose(c.csv_fd);
	for (size_t i = 0; i < c.n; i++) {
		free(c.subs[i].name);
		row_clear(&c.subs[i].row);
	}
	free(c.subs);
	free(c.queue);
	free(c.jsonl_path);
	free(c.csv_path);
	assignment_free(c.a);
	return status;
}
