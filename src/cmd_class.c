/* `proctor class`: a whole class graded in parallel, results kept as they come. */
#include "cmd_class.h"

/*
 * Theory of operation
 * -------------------
 * The command lists DIR into a gradebook (src/grade/gradebook.h: the rows,
 * the JSON lines and the CSV, --resume), hands every submission without a
 * verdict to the scheduler (src/grade/sched.h: worker processes, budgets,
 * retries) and records each result as it comes, before counting it: an
 * interrupted run loses only the submissions in flight.  A submission
 * whose worker failed twice is recorded as status "error" (Proctor's
 * failure, never the student's).
 *
 * Signals: SIGINT and SIGTERM are blocked and read from a signalfd that
 * the scheduler watches with its workers, so no handler and no global flag
 * exist, and a result that arrives after the signal is never recorded (the
 * signalfd is read after each result is taken, before it is recorded).
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capbuf.h"
#include "cli.h"
#include "grade/assignment.h"
#include "grade/grade.h"
#include "grade/gradebook.h"
#include "grade/sched.h"
#include "util.h"

#define MAX_JOBS	CLI_MAX_SLOTS
#define MAX_SUBMISSIONS 100000
#define GRADE_ATTEMPTS	2 /* a submission whose worker failed is graded once more */
#define REDRAW_NS	(200ull * 1000000ull)
#define TICK_MS		1000 /* wake-up for the watchdog and the ETA */
#define HIST_BINS	10
#define HIST_WIDTH	40

_Static_assert(MAX_JOBS <= SCHED_MAX_WORKERS, "-j allows more workers than the scheduler has");

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

struct class_run {
	const struct class_options *o;
	struct assignment *a;
	struct grade_options go;
	struct gradebook *g; /* DIR's submissions, sorted by name; a job's id is an index */
	struct sched *s;
	int dir_fd; /* DIR, as scanned: each submission is opened below it, never by path */
	int sig_fd;
	size_t todo, done, kept;
	uint64_t start_ns, last_draw_ns, budget_ns;
	double time_factor; /* the backend's slowdown; 1 for the jail */
	bool tty, drawn, dirty;
	bool fatal;
	struct err fatal_err; /* the first failure that stops the run */
};

/* ---- command line ------------------------------------------------------- */

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
	     .kind = CLI_STRING,
	     .value_name = "FILE",
	     .dest = &o->out,
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
	char msg[2048];
	va_list ap;

	progress_clear(c);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	cli_say("warning: %s", msg);
}

/* ---- DIR ---------------------------------------------------------------- */

static bool is_archive_name(const char *name)
{
	static const char *const ext[] = {".zip", ".tar", ".tar.gz", ".tgz"};
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (n > strlen(ext[i]) && strcasecmp(name + n - strlen(ext[i]), ext[i]) == 0)
			return true;
	return false;
}

/* List DIR's submissions, sorted by name. */
static int scan_dir(struct class_run *c, struct err *e)
{
	const char *dir = c->o->dir;
	size_t dlen = strlen(dir);
	char shown[NAME_MAX + 1];
	DIR *d;

	/* SECURITY: DIR is opened once, here, and every submission is later
	 * opened below this descriptor by the name the scan found, with no
	 * symlink followed, and checked to be the inode the scan saw
	 * (grade_submission_entry): a student who can write DIR (a drop box)
	 * cannot swap their entry for a symlink to the reference solution or
	 * another student's submission between the scan and the grading. */
	c->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int lfd = c->dir_fd < 0 ? -1 : fcntl(c->dir_fd, F_DUPFD_CLOEXEC, 3);
	d = lfd >= 0 ? fdopendir(lfd) : NULL;
	if (!d) {
		xclose(lfd);
		return err_setk(e, ERR_INPUT, errno, "cannot read DIR '%s'", dir);
	}
	for (;;) {
		struct dirent *de;
		struct stat st;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno) {
				int saved = errno;
				closedir(d);
				return err_setk(e, ERR_INPUT, saved, "cannot read DIR '%s'", dir);
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
		if (strcmp(shown, de->d_name) != 0) { /* not printable UTF-8 */
			warn(c, "skipping '%s/%s': the name is not printable UTF-8", dir, shown);
			continue;
		}
		if (dlen + 1 + strlen(de->d_name) >= PATH_MAX) {
			warn(c, "skipping '%s/%s': the path is too long", dir, shown);
			continue;
		}
		if (c->g->n == MAX_SUBMISSIONS) {
			closedir(d);
			return err_setk(e, ERR_INPUT, 0, "DIR '%s' holds more than %d submissions",
					dir, MAX_SUBMISSIONS);
		}
		if (gradebook_add(c->g, de->d_name, e) < 0) {
			closedir(d);
			return err_set(e, ENOMEM, "listing DIR '%s'", dir);
		}
		c->g->subs[c->g->n - 1].seen =
		    (struct opener_id){.dev = st.st_dev, .ino = st.st_ino};
	}
	closedir(d);
	gradebook_sort(c->g);
	return 0;
}

/* ---- results ------------------------------------------------------------ */

/* Without a terminal, one line per finished submission:
 * "[12/300] alice: graded 7/10", then ": reason" when there is one. */
static void progress_line(struct class_run *c, const struct gradebook_entry *s)
{
	const struct gradebook_row *r = &s->row;
	char reason[GRADEBOOK_REASON_MAX + 1], points[160] = "", a[64], b[64];

	text_printable(reason, sizeof(reason), r->reason ? r->reason : "", '?');
	if (r->has_score && strcmp(r->status, "error") != 0)
		snprintf(points, sizeof(points), " %s%s%s",
			 gradebook_fmt_num(a, sizeof(a), r->score), r->has_max ? "/" : "",
			 r->has_max ? gradebook_fmt_num(b, sizeof(b), r->max_score) : "");
	fprintf(stderr, "[%zu/%zu] %s: %s%s%s%s\n", c->done, c->todo, s->name, r->status, points,
		reason[0] ? ": " : "", reason);
}

static void fail(struct class_run *c, const struct err *e)
{
	if (!c->fatal) {
		c->fatal = true;
		c->fatal_err = *e;
	}
}

/* Keep one result and count it. */
static void record(struct class_run *c, size_t i, const char *line, size_t len, const json_t *doc)
{
	struct err e;

	if (gradebook_record(c->g, i, line, len, doc, &e) < 0) {
		fail(c, &e);
		return;
	}
	c->done++;
	if (!c->tty)
		progress_line(c, &c->g->subs[i]);
	c->dirty = true;
}

/* `doc` with "submission_name" added; NULL (doc freed) when out of memory. */
static json_t *named(json_t *doc, const char *name)
{
	if (doc && json_object_set_new(doc, "submission_name", json_string(name)) < 0) {
		json_decref(doc);
		return NULL;
	}
	return doc;
}

/* The result document of a submission Proctor could not grade. */
static json_t *error_document(const struct class_run *c, const char *name, const char *reason,
			      unsigned attempts)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", c->o->dir, name);
	return named(grade_error_document(c->a, path, &c->go, reason, attempts, c->time_factor),
		     name);
}

/* Record Proctor's own failure for a submission: status "error". */
static void record_error(struct class_run *c, size_t idx, const char *reason, unsigned attempts)
{
	const char *name = c->g->subs[idx].name;
	struct err e;
	json_t *j = error_document(c, name, reason, attempts);
	char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
	char *line = s ? realloc(s, strlen(s) + 2) : NULL;

	if (!line) {
		free(s);
		json_decref(j);
		err_set(&e, ENOMEM, "recording the failure of '%s'", name);
		fail(c, &e);
		return;
	}
	strcat(line, "\n");
	record(c, idx, line, strlen(line), j);
	free(line);
	json_decref(j);
}

/* ---- workers ------------------------------------------------------------ */

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

/* In a worker: grade one submission (job->arg is its name, job->id its index). */
static json_t *grade_one(void *ctx, const struct sched_job *job)
{
	struct class_run *c = ctx;
	char path[PATH_MAX];
	json_t *res = NULL;
	struct err e;

	snprintf(path, sizeof(path), "%s/%s", c->o->dir, job->arg);
	if (job->id >= c->g->n || strcmp(c->g->subs[job->id].name, job->arg) != 0)
		return error_document(c, job->arg, "not a submission the scan found", 1);
	if (grade_submission_entry(c->a, c->dir_fd, job->arg, &c->g->subs[job->id].seen, path,
				   &c->go, &res, &e) < 0)
		return error_document(c, job->arg, e.msg, 1);
	return named(res, job->arg);
}

/* In a new worker: no output file, no signalfd. */
static void close_in_worker(void *ctx)
{
	struct class_run *c = ctx;

	xclose(c->g->jsonl_fd);
	xclose(c->g->csv_fd);
	xclose(c->sig_fd);
}

/* A worker's result must be a result, and the one of its submission. */
static int check_result(void *ctx, uint64_t id, const json_t *doc, char *why, size_t why_len)
{
	struct class_run *c = ctx;
	const char *name = json_string_value(json_object_get(doc, "submission_name"));
	struct gradebook_row probe = {0};

	if (!name || strcmp(name, c->g->subs[id].name) != 0) {
		snprintf(why, why_len, "sent a result for another submission");
		return -1;
	}
	if (gradebook_row_from_json(doc, &probe) < 0) {
		snprintf(why, why_len, "sent a result without a valid status");
		return -1;
	}
	gradebook_row_clear(&probe);
	return 0;
}

/* What the scheduler reports: results recorded, failures told. */
static void handle(struct class_run *c, const struct sched_result *ev)
{
	const char *name = ev->event == SCHED_NOTE ? NULL : c->g->subs[ev->id].name;
	char reason[600];

	switch (ev->event) {
	case SCHED_RESULT:
		record(c, ev->id, ev->line, ev->len, ev->doc);
		break;
	case SCHED_RETRY:
		warn(c, "worker %d %s while grading '%s'; grading it again", (int)ev->pid, ev->why,
		     name);
		break;
	case SCHED_FAILED:
		snprintf(reason, sizeof(reason), "%s", ev->why);
		if (ev->pid) {
			warn(c,
			     "worker %d %s while grading '%s', again; recording status \"error\"",
			     (int)ev->pid, ev->why, name);
			snprintf(reason, sizeof(reason), "grading worker %s", ev->why);
		}
		record_error(c, ev->id, reason, ev->attempts);
		break;
	case SCHED_NOTE:
		warn(c, "%s", ev->why);
		break;
	case SCHED_CANCELLED:
		break;
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
	for (size_t i = 0; i < c->g->n; i++) {
		const struct gradebook_entry *s = &c->g->subs[i];
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
	size_t n = c->g->n;
	double *scores = calloc(n ? n : 1, sizeof(double)), sum = 0;
	char a[64], b[64], m[64], dir[PATH_MAX];

	for (size_t i = 0; i < n; i++) {
		const struct gradebook_row *r = &c->g->subs[i].row;
		graded += c->g->subs[i].this_run;
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
	printf("%zu submission%s in %s: %zu graded in this run, %zu kept from an earlier run", n,
	       n == 1 ? "" : "s", dir, graded, c->kept);
	if (missing)
		printf(", %zu without a result%s", missing, sig ? " (interrupted)" : "");
	printf("\n");
	for (size_t i = 0; i < k; i++)
		if (sc[i].n)
			printf("  %-14s %zu\n", sc[i].status, sc[i].n);
	gradebook_fmt_num(m, sizeof(m), c->a->max_score);
	if (n_scores > 0) {
		qsort(scores, n_scores, sizeof(double), cmp_double);
		double median = n_scores % 2
				    ? scores[n_scores / 2]
				    : (scores[n_scores / 2 - 1] + scores[n_scores / 2]) / 2;
		printf("score (of %s): mean %s, median %s, over %zu submission%s\n", m,
		       gradebook_fmt_num(a, sizeof(a), sum / (double)n_scores),
		       gradebook_fmt_num(b, sizeof(b), median), n_scores, n_scores == 1 ? "" : "s");
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

/* Grade until every job is over, a signal comes, or the results cannot be
 * written.  Returns the signal number, or 0. */
static int run_loop(struct class_run *c)
{
	while (sched_pending(c->s) > 0) {
		struct sched_result ev;
		struct err e;
		int timeout = c->tty && c->dirty ? (int)(REDRAW_NS / 1000000) : TICK_MS;
		int r = sched_next_result(c->s, timeout, &ev, &e), sig = take_signal(c->sig_fd);

		if (r > 0 && !sig)
			handle(c, &ev);
		if (r > 0)
			sched_result_clear(&ev); /* a result that came with a signal is not kept */
		if (sig)
			return sig;
		if (r < 0)
			fail(c, &e);
		if (c->fatal)
			return 0;
		progress_draw(c, false);
	}
	return 0;
}

int cmd_class(int argc, char **argv)
{
	struct class_options o = {.isolation = "auto", .slots = CLI_DEFAULT_SLOTS};
	struct class_run c = {.o = &o, .dir_fd = -1, .sig_fd = -1};
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

	/* Everything that can be the user's mistake comes before any grading. */
	if (!(c.g = gradebook_new())) {
		err_set(&e, ENOMEM, "class");
		goto out_fail;
	}
	if ((o.out && gradebook_set_out(c.g, o.out, o.resume, &e) < 0) ||
	    assignment_load(o.assignment, &c.a, &e) < 0 || scan_dir(&c, &e) < 0 ||
	    (o.resume && gradebook_resume(c.g, &e) < 0))
		goto out_fail;
	if (c.g->dropped_tail)
		warn(&c,
		     "'%s' ends in an incomplete line (the run writing it was killed); dropping it",
		     c.g->jsonl_path);
	if (c.g->bad_lines)
		warn(&c, "%zu line%s of '%s' %s not a result document; ignored", c.g->bad_lines,
		     c.g->bad_lines == 1 ? "" : "s", c.g->jsonl_path,
		     c.g->bad_lines == 1 ? "is" : "are");
	for (size_t i = 0; i < c.g->n; i++) {
		struct gradebook_row *row = &c.g->subs[i].row;
		if (row->present && strcmp(row->status, "error") != 0)
			c.kept++;
		else
			gradebook_row_clear(row); /* graded again */
	}
	c.todo = c.g->n - c.kept;
	if (grade_prepare(o.isolation, c.a, &ops, why, sizeof(why), &e) < 0)
		goto out_fail;
	/* Each worker keeps one sandbox started ahead (a microVM's QEMU up,
	 * waiting for the snapshot), so a restore does not wait for it. */
	if (ops->pool_hint)
		ops->pool_hint(1);
	c.go = (struct grade_options){
	    .ops = ops,
	    .sandbox = {.state_dir = o.state_dir,
			.max_slots = o.slots,
			.uid_base = SANDBOX_UID_BASE},
	};
	c.time_factor = ops->time_factor(o.state_dir, NULL);
	c.budget_ns = grade_budget_ns(c.a, c.time_factor);

	/* From here on SIGINT and SIGTERM arrive only through the signalfd:
	 * once an output file exists, the run ends with a summary. */
	sigemptyset(&stop_set);
	sigaddset(&stop_set, SIGINT);
	sigaddset(&stop_set, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_set, NULL);
	c.sig_fd = signalfd(-1, &stop_set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (c.sig_fd < 0) {
		err_set(&e, errno, "signalfd");
		goto out_fail;
	}
	if (o.out && gradebook_open(c.g, &e) < 0)
		goto out_fail;
	unsigned jobs = o.jobs ? o.jobs : cpus_available();
	if (jobs > o.slots)
		jobs = o.slots;
	if (jobs > c.todo)
		jobs = (unsigned)c.todo;
	progress_clear(&c);
	cli_say("grading %zu of %zu submission%s in %s with %u worker%s", c.todo, c.g->n,
		c.g->n == 1 ? "" : "s", o.dir, jobs, jobs == 1 ? "" : "s");
	c.start_ns = now_ns();
	struct sched_options so = {.workers = jobs,
				   .attempts = GRADE_ATTEMPTS,
				   .result_max = GRADEBOOK_RESULT_MAX,
				   .wake_fd = c.sig_fd,
				   .ctx = &c,
				   .run = grade_one,
				   .in_worker = close_in_worker,
				   .check = check_result};
	if (sched_new(&so, &c.s, &e) < 0)
		goto out_fail;
	for (size_t i = 0; i < c.g->n; i++) {
		const struct gradebook_entry *s = &c.g->subs[i];
		struct sched_job job = {.id = i, .arg = s->name, .budget_ns = c.budget_ns};
		if (!s->row.present && sched_submit(c.s, &job, &e) < 0)
			goto out_fail;
	}
	c.dirty = true;
	sig = run_loop(&c);
	c.s = sched_free(c.s);
	if (c.tty) {
		progress_draw(&c, true); /* the last state stays on screen */
		fputc('\n', stderr);
		c.drawn = false;
	}
	if (c.fatal)
		cli_say("%s; stopping", c.fatal_err.msg);
	if (c.g->csv_fd >= 0 && gradebook_rewrite_csv(c.g, &e) < 0) {
		cli_say("%s", e.msg);
		fail(&c, &e);
	}
	print_summary(&c, sig);
	status = c.fatal ? err_exit_status(c.fatal_err.kind) : 0;
	for (size_t i = 0; i < c.g->n && status == 0; i++)
		if (c.g->subs[i].row.present && strcmp(c.g->subs[i].row.status, "error") == 0)
			status = err_exit_status(ERR_INTERNAL); /* Proctor's own failure */
	if (sig)
		status = 128 + sig;
	/* SIGINT and SIGTERM stay blocked: one that comes after the last poll
	 * changes nothing, every result is already on disk, and the exit
	 * status says how the run ended. */
	goto out;
out_fail:
	status = cli_fail(&e);
out:
	sched_free(c.s);
	xclose(c.dir_fd);
	xclose(c.sig_fd);
	gradebook_free(c.g);
	assignment_free(c.a);
	return status;
}
