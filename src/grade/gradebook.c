/* The gradebook of `proctor class`: rows from result documents, the JSON lines and the CSV,
 * --resume. */
#include "grade/gradebook.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capbuf.h"
#include "util.h"

static const char csv_header[] = "submission,status,score,max_score,passed,total,reason\r\n";

char *gradebook_fmt_num(char *buf, size_t len, double x)
{
	if (!(x > -1e15 && x < 1e15)) {
		snprintf(buf, len, "%.6g", x);
		return buf;
	}
	if (x == (double)(long long)x) {
		snprintf(buf, len, "%lld", (long long)x);
		return buf;
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
	return buf;
}

/* The directory of `path`, with its '/', or "." */
static void parent_dir(const char *path, char dir[PATH_MAX])
{
	const char *slash = strrchr(path, '/');

	snprintf(dir, PATH_MAX, "%.*s", slash ? (int)(slash - path + 1) : 1, slash ? path : ".");
}

/* A name made or renamed in the directory of `path` survives a crash. */
static void fsync_parent_dir(const char *path)
{
	char dir[PATH_MAX];
	int fd;

	parent_dir(path, dir);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

void gradebook_row_clear(struct gradebook_row *r)
{
	free(r->reason);
	*r = (struct gradebook_row){0};
}

static bool valid_status(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= sizeof(((struct gradebook_row *)0)->status))
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

int gradebook_row_from_json(const json_t *j, struct gradebook_row *ret)
{
	struct gradebook_row r = {.present = true};
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
		char reason[GRADEBOOK_REASON_MAX + 1]; /* cut on a character boundary */
		utf8_fix_into(reason, sizeof(reason), json_string_value(v),
			      strlen(json_string_value(v)));
		r.reason = strdup(reason);
		if (!r.reason)
			return -1;
	}
	gradebook_row_clear(ret);
	*ret = r;
	return 0;
}

/* One CSV text cell (csv_cell: quoted, one line, no formula): submission
 * names and reasons come from students.  False when out of memory. */
static bool csv_text(FILE *f, const char *s)
{
	char *cell = csv_cell(s);
	bool ok = cell && fputs(cell, f) >= 0;

	free(cell);
	return ok;
}

/* The gradebook row of one submission, "\r\n"-terminated; malloc'd. */
static char *csv_row(const char *name, const struct gradebook_row *r)
{
	char *buf = NULL, score[64], max[64];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool ok;

	if (!f)
		return NULL;
	ok = csv_text(f, name) && fputc(',', f) != EOF && csv_text(f, r->status);
	fprintf(f, ",%s,%s", r->has_score ? gradebook_fmt_num(score, sizeof(score), r->score) : "",
		r->has_max ? gradebook_fmt_num(max, sizeof(max), r->max_score) : "");
	if (r->has_counts)
		fprintf(f, ",%lld,%lld,", r->passed, r->total);
	else
		fputs(",,,", f);
	if (r->reason)
		ok = ok && csv_text(f, r->reason);
	fputs("\r\n", f);
	if (fclose(f) != 0 || !ok) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct gradebook_entry *)a)->name,
		      ((const struct gradebook_entry *)b)->name);
}

struct gradebook *gradebook_new(void)
{
	struct gradebook *g = calloc(1, sizeof(*g));

	if (g)
		*g = (struct gradebook){
		    .jsonl_fd = -1, .csv_fd = -1, .line_max = GRADEBOOK_RESULT_MAX};
	return g;
}

struct gradebook *gradebook_free(struct gradebook *g)
{
	if (!g)
		return NULL;
	for (size_t i = 0; i < g->n; i++) {
		free(g->subs[i].name);
		gradebook_row_clear(&g->subs[i].row);
	}
	free(g->subs);
	free(g->jsonl_path);
	free(g->csv_path);
	xclose(g->jsonl_fd);
	xclose(g->csv_fd);
	free(g);
	return NULL;
}

int gradebook_add(struct gradebook *g, const char *name, struct err *e)
{
	if (g->n == g->cap) {
		size_t ncap = g->cap ? g->cap * 2 : 64;
		struct gradebook_entry *s = realloc(g->subs, ncap * sizeof(*s));
		if (!s)
			return err_set(e, ENOMEM, "adding '%s'", name);
		g->subs = s;
		g->cap = ncap;
	}
	g->subs[g->n] = (struct gradebook_entry){.name = strdup(name)};
	if (!g->subs[g->n].name)
		return err_set(e, ENOMEM, "adding '%s'", name);
	g->n++;
	return 0;
}

void gradebook_sort(struct gradebook *g)
{
	if (g->n > 1)
		qsort(g->subs, g->n, sizeof(*g->subs), cmp_name);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && strcasecmp(s + n - k, suffix) == 0;
}

int gradebook_set_out(struct gradebook *g, const char *out, bool resume, struct err *e)
{
	const char *paths[2];
	char dir[PATH_MAX];
	struct stat st;

	g->resume = resume;
	free(g->csv_path);
	free(g->jsonl_path);
	g->csv_path = g->jsonl_path = NULL;
	if (!ends_with(out, ".jsonl") && !ends_with(out, ".csv"))
		return err_setk(e, ERR_USAGE, 0, "--out: '%s' does not end in .csv or .jsonl", out);
	if (ends_with(out, ".jsonl")) {
		g->jsonl_path = strdup(out);
	} else if ((g->csv_path = strdup(out)) &&
		   asprintf(&g->jsonl_path, "%.*s.jsonl", (int)(strlen(out) - 4), out) < 0) {
		g->jsonl_path = NULL;
	}
	if (!g->jsonl_path)
		return err_set(e, 0, "--out: out of memory");
	/* Nothing is overwritten by accident. */
	paths[0] = g->csv_path;
	paths[1] = g->jsonl_path;
	for (size_t i = 0; i < 2; i++) {
		if (!paths[i])
			continue;
		if (lstat(paths[i], &st) == 0) {
			if (!resume)
				return err_setk(e, ERR_USAGE, 0,
						"--out: '%s' exists; add --resume to continue that "
						"run, or choose another file",
						paths[i]);
			if (!S_ISREG(st.st_mode))
				return err_setk(e, ERR_USAGE, 0,
						"--out: '%s' is not a regular file", paths[i]);
		} else if (errno != ENOENT) {
			return err_setk(e, ERR_USAGE, errno, "--out: cannot use '%s'", paths[i]);
		}
	}
	if (resume && g->csv_path && lstat(g->csv_path, &st) == 0 && lstat(g->jsonl_path, &st) < 0)
		return err_setk(e, ERR_USAGE, 0,
				"--resume: '%s' has no '%s' beside it to resume from", g->csv_path,
				g->jsonl_path);
	parent_dir(g->jsonl_path, dir);
	if (access(dir, W_OK | X_OK) < 0)
		return err_setk(e, ERR_USAGE, errno, "--out: cannot write in '%s'", dir);
	return 0;
}

/* One line of an earlier run's JSON lines; false if it is not a result.
 * Results of submissions not in the gradebook are ignored. */
static bool resume_line(struct gradebook *g, const char *line, size_t len)
{
	json_t *j = json_loadb(line, len, 0, NULL);
	const char *name = json_string_value(json_object_get(j, "submission_name"));
	struct gradebook_entry key = {.name = (char *)name}, *s = NULL;
	struct gradebook_row r = {0};
	bool ok = name && gradebook_row_from_json(j, &r) == 0;

	if (ok)
		s = bsearch(&key, g->subs, g->n, sizeof(*g->subs), cmp_name);
	if (s) {
		gradebook_row_clear(&s->row);
		s->row = r;
	} else {
		gradebook_row_clear(&r);
	}
	json_decref(j);
	return ok;
}

int gradebook_resume(struct gradebook *g, struct err *e)
{
	char chunk[65536], *line = NULL;
	size_t len = 0, cap = 0;
	off_t pos = 0, good_end = 0;
	bool overlong = false;
	int rc = -1, fd = open(g->jsonl_path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return errno == ENOENT ? 0
				       : err_setk(e, ERR_INPUT, errno, "--resume: cannot open '%s'",
						  g->jsonl_path);
	for (;;) {
		ssize_t r = read(fd, chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err_setk(e, ERR_INPUT, errno, "--resume: cannot read '%s'", g->jsonl_path);
			goto out_fail;
		}
		if (r == 0)
			break;
		for (size_t i = 0; i < (size_t)r;) {
			const char *nl = memchr(chunk + i, '\n', (size_t)r - i);
			size_t seg = nl ? (size_t)(nl - (chunk + i)) : (size_t)r - i;
			if (!overlong && len + seg > g->line_max)
				overlong = true;
			if (!overlong) {
				if (len + seg + 1 > cap) {
					size_t ncap = (len + seg + 1) * 2;
					char *p = realloc(line, ncap);
					if (!p) {
						err_set(e, ENOMEM, "--resume: reading '%s'",
							g->jsonl_path);
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
			if (overlong || (len > 0 && !resume_line(g, line, len)))
				g->bad_lines++;
			len = 0;
			overlong = false;
		}
	}
	if (pos > good_end && !overlong && resume_line(g, line, len)) {
		/* A whole result without its newline (an edited file): keep it. */
		if (lseek(fd, 0, SEEK_END) < 0 || write_all(fd, "\n", 1) < 0 || fsync(fd) < 0) {
			err_setk(e, ERR_INPUT, errno, "--resume: cannot write '%s'", g->jsonl_path);
			goto out_fail;
		}
	} else if (pos > good_end) {
		g->dropped_tail = true;
		if (ftruncate(fd, good_end) < 0 || fsync(fd) < 0) {
			err_setk(e, ERR_INPUT, errno, "--resume: cannot truncate '%s'",
				 g->jsonl_path);
			goto out_fail;
		}
	}
	rc = 0;
out_fail:
	free(line);
	close(fd);
	return rc;
}

int gradebook_rewrite_csv(struct gradebook *g, struct err *e)
{
	char tmp[PATH_MAX];
	int fd;

	if (!g->csv_path)
		return 0;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", g->csv_path) >= (int)sizeof(tmp))
		return err_set(e, ENAMETOOLONG, "'%s'", g->csv_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return err_set(e, errno, "cannot create '%s'", tmp);
	if (write_all(fd, csv_header, strlen(csv_header)) < 0)
		goto out_write;
	for (size_t i = 0; i < g->n; i++) {
		if (!g->subs[i].row.present)
			continue;
		char *r = csv_row(g->subs[i].name, &g->subs[i].row);
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
	if (rename(tmp, g->csv_path) < 0) {
		err_set(e, errno, "cannot rename '%s' to '%s'", tmp, g->csv_path);
		unlink(tmp);
		return -1;
	}
	fsync_parent_dir(g->csv_path);
	g->csv_fd = xclose(g->csv_fd);
	g->csv_fd = open(g->csv_path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
	if (g->csv_fd < 0)
		return err_set(e, errno, "cannot open '%s'", g->csv_path);
	return 0;
out_write:
	err_set(e, errno, "cannot write '%s'", tmp);
	close(fd);
	unlink(tmp);
	return -1;
}

int gradebook_open(struct gradebook *g, struct err *e)
{
	int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW;

	if (!g->resume)
		flags |= O_EXCL;
	g->jsonl_fd = open(g->jsonl_path, flags, 0644);
	if (g->jsonl_fd < 0)
		return err_setk(e, ERR_INPUT, errno, "--out: cannot create '%s'", g->jsonl_path);
	fsync_parent_dir(g->jsonl_path);
	if (gradebook_rewrite_csv(g, e) < 0) {
		err_classify(e, ERR_INPUT); /* the file the user named */
		return err_wrap(e, "--out");
	}
	return 0;
}

int gradebook_record(struct gradebook *g, size_t i, const char *line, size_t len, const json_t *doc,
		     struct err *e)
{
	struct gradebook_entry *s = &g->subs[i];
	struct gradebook_row parsed = {0};
	char *row;

	if (gradebook_row_from_json(doc, &parsed) < 0)
		return err_set(e, 0, "result of '%s' has no valid status", s->name);
	if (g->jsonl_fd >= 0 &&
	    (write_all(g->jsonl_fd, line, len) < 0 || fdatasync(g->jsonl_fd) < 0)) {
		gradebook_row_clear(&parsed);
		return err_set(e, errno, "cannot write '%s'", g->jsonl_path);
	}
	gradebook_row_clear(&s->row);
	s->row = parsed;
	if (g->csv_fd >= 0) {
		row = csv_row(s->name, &s->row);
		if (!row)
			return err_set(e, ENOMEM, "cannot write '%s'", g->csv_path);
		int w = write_all(g->csv_fd, row, strlen(row));
		free(row);
		if (w < 0 || fdatasync(g->csv_fd) < 0)
			return err_set(e, errno, "cannot write '%s'", g->csv_path);
	}
	s->this_run = true;
	return 0;
}
