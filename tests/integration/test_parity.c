/*
 * One table of programs, run on one backend per invocation: each limit
 * gets the verdict docs/run-result.md ("Verdicts by limit") gives it, on
 * the jail and on the microVM alike, and --put follows one rule on both.
 *
 * PARITY_ISOLATION names the backend: "jail" (suite integration) or "vm"
 * (suite vm, with its own PROCTOR_STATE_DIR where the small image is built
 * once; every case keeps memory + disk within the smallest VM shape, so one
 * snapshot serves them all).  Each case is checked against the document's
 * row: the status and the whole limits_hit, plus a line of the program's
 * output that shows it really did what the row says, so a case never passes
 * on silence.  Every row of the document is exercised on both backends,
 * except that a row whose limit column says "jail only" is skipped on the
 * microVM.
 *
 * Without root (or QEMU, for vm) the tests skip, unless PROCTOR_MUST_WORK=1.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#define RUN_TIMEOUT_S 300
#define MAX_ROWS      64

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NONE   ((const char *const[]){NULL})

/* A row of the document's table. */
struct row {
	char name[64];
	char status[32];
	char limits[128]; /* limits_hit names, space-separated, in the document's order */
	bool jail_only;
	int runs; /* cases run against it here */
};

static struct row rows[MAX_ROWS];
static size_t n_rows;
static bool vm;
static char image_pin[64];
static char setup_why[4096];
static bool ready;

/* One program.  `row` names its row of the document; a case without a
 * limit (row NULL) states its own status.  `want` must appear in its
 * stdout or stderr, `deny` must not. */
struct pcase {
	const char *row;
	const char *status;
	const char *const *opts;
	const char *const *argv; /* "./probe ...": the probe is put into /work first */
	const char *want, *deny;
	int exit_code; /* checked when >= 0 */
};

static const char shared_py[] = "import mmap\n"
				"m = mmap.mmap(-1, 128 << 20)\n"
				"c = b'x' * (1 << 20)\n"
				"for i in range(128):\n"
				"    m.write(c)\n"
				"print('done')\n";

static const char inodes_py[] = "n = 0\n"
				"try:\n"
				"    while True:\n"
				"        open('/work/f%d' % n, 'w').close()\n"
				"        n += 1\n"
				"except OSError as e:\n"
				"    print('errno', e.errno, 'files', n)\n";

static const struct pcase cases[] = {
    /* No limit: the program's own ending. */
    {NULL, "ok", NONE, L("./probe", "true"), NULL, NULL, 0},
    {NULL, "nonzero_exit", NONE, L("./probe", "exit", "3"), "exiting code=3", NULL, 3},
    {NULL, "signaled", NONE, L("./probe", "segv"), NULL, NULL, -1},
    {NULL, "nonzero_exit", NONE, L("./nosuch"), NULL, NULL, 127},
    /* One or more per row of the document. */
    {"cpu", NULL, L("--cpu", "1", "--wall", "30"), L("./probe", "spin"), "result spinning", NULL,
     -1},
    {"wall", NULL, L("--wall", "2", "--cpu", "30"), L("./probe", "sleep", "100"), "result sleeping",
     NULL, -1},
    {"memory", NULL, L("--memory", "64"), L("./probe", "memhog", "1024"), "progress mib=", "result",
     -1},
    {"memory", NULL, L("--memory", "64", "--disk", "256"), L("./probe", "memburst", "200"), NULL,
     "result", -1},
    /* More than the guest's RAM in one malloc: granted, then touched. */
    {"memory-large", NULL, L("--memory", "128"), L("./probe", "memburst", "1024"), NULL, "result",
     -1},
    {"memory-large", NULL, L("--memory", "128"), L("python3", "-c", "b = bytearray(1 << 30)"), NULL,
     "MemoryError", -1},
    {"memory-shared", NULL, L("--memory", "32", "--disk", "256"), L("python3", "-c", shared_py),
     NULL, "done", -1},
    {"memory-kernel", NULL, L("--memory", "64", "--disk", "16", "--nofile", "4096"),
     L("./probe", "sockbuf", "160"), NULL, "result", -1},
    {"pids", NULL, L("--pids", "16"), L("./probe", "threads", "40"), "errno=EAGAIN", NULL, 0},
    {"pids-forkbomb", NULL, L("--pids", "16", "--wall", "2", "--cpu", "100"),
     L("./probe", "forkbomb"), "result forking", NULL, -1},
    {"fsize", NULL, L("--fsize", "1"),
     L("dd", "if=/dev/zero", "of=/work/big", "bs=65536", "count=64"), NULL, NULL, -1},
    {"fsize-caught", NULL, L("--fsize", "1", "--disk", "32"), L("./probe", "bigfile", "/work/big"),
     "errno=EFBIG bytes=1048576", NULL, 0},
    {"disk", NULL, L("--disk", "16"), L("./probe", "filldisk", "/work"), "errno=ENOSPC", NULL, 0},
    {"disk", NULL, L("--disk", "16"), L("./probe", "filldisk", "/dev/shm"), "errno=ENOSPC", NULL,
     0},
    {"disk-inodes", NULL, L("--disk", "16"), L("python3", "-c", inodes_py), "errno 28", NULL, 0},
    {"output", NULL, L("--output", "64"), L("./probe", "flood", "1"), NULL, NULL, 0},
    {"nofile", NULL, L("--nofile", "32"), L("./probe", "nofile"), "errno=EMFILE", NULL, 0},
    {"seccomp", NULL, NONE, L("./probe", "kexec"), "attempt kexec_load", NULL, -1},
    {"raised-signal", NULL, NONE, L("./probe", "selfsig", "31", "kill"), "errno=EPERM", NULL, 1},
    {"raised-signal", NULL, NONE, L("./probe", "selfsig", "25", "rlimit"), "errno=EPERM", NULL, 1},
    {"raised-signal", NULL, NONE, L("./probe", "selfsig", "25", "timer"), "errno=ENOSYS", NULL, 1},
    {"raised-signal", NULL, NONE, L("./probe", "selfsig", "25", "fsetsig_hi"), "errno=EPERM", NULL,
     1},
    {"raised-signal", NULL, NONE, L("./probe", "selfsig", "31", "seccomp_hi"), "errno=EPERM", NULL,
     1},
    {"raised-signal", NULL, NONE, L("./probe", "selfsig", "31", "dispatch"), "errno=EPERM", NULL, 1},
};

/* ---- the document's table ---------------------------------------------------- */

/* The text between the first pair of backticks of `cell`, or the cell trimmed. */
static void cell_word(const char *cell, char *out, size_t cap)
{
	const char *a = strchr(cell, '`'), *b = a ? strchr(a + 1, '`') : NULL;
	size_t n;

	if (a && b) {
		n = (size_t)(b - a - 1);
		if (n >= cap)
			n = cap - 1;
		memcpy(out, a + 1, n);
		out[n] = '\0';
		return;
	}
	snprintf(out, cap, "%s", cell);
	harness_trim(out);
}

/* Every backticked word of `cell`, space-separated. */
static void cell_words(const char *cell, char *out, size_t cap)
{
	out[0] = '\0';
	for (const char *p = strchr(cell, '`'); p; p = strchr(p + 1, '`')) {
		const char *end = strchr(p + 1, '`');
		if (!end)
			break;
		size_t len = strlen(out);
		snprintf(out + len, cap - len, "%s%.*s", len ? " " : "", (int)(end - p - 1), p + 1);
		p = end;
	}
}

static void load_rows(void)
{
	char *doc = harness_slurp(DOCS_DIR "/run-result.md", 1 << 20, NULL);
	char *p;

	if (!doc)
		fail_msg("cannot read %s", DOCS_DIR "/run-result.md");
	p = strstr(doc, "\n## Verdicts by limit\n");
	if (!p)
		fail_msg("run-result.md has no section 'Verdicts by limit'");
	p = strstr(p, "\n| case |");
	if (!p)
		fail_msg("'Verdicts by limit' has no table");
	p = strchr(p + 1, '\n');	    /* the header */
	p = p ? strchr(p + 1, '\n') : NULL; /* the |---| line */
	while (p && p[1] == '|') {
		char *line = p + 1, *end = strchr(line, '\n'), *cell[6] = {0};
		size_t n = 0;
		if (!end)
			break;
		*end = '\0';
		for (char *c = line; (c = strchr(c, '|')) && n < 6; c++) {
			*c = '\0';
			cell[n++] = c + 1;
		}
		if (n != 6)
			fail_msg("a row of 'Verdicts by limit' has %zu columns, want 5", n - 1);
		assert_true(n_rows < MAX_ROWS);
		struct row *r = &rows[n_rows++];
		cell_word(cell[0], r->name, sizeof(r->name));
		cell_word(cell[3], r->status, sizeof(r->status));
		cell_words(cell[4], r->limits, sizeof(r->limits));
		r->jail_only = strstr(cell[1], "jail only") != NULL;
		p = end;
	}
	free(doc);
	if (n_rows == 0)
		fail_msg("'Verdicts by limit' has no rows");
}

static struct row *find_row(const char *name)
{
	for (size_t i = 0; i < n_rows; i++)
		if (strcmp(rows[i].name, name) == 0)
			return &rows[i];
	fail_msg("docs/run-result.md has no row '%s' in 'Verdicts by limit'", name);
	return NULL;
}

/* ---- running ----------------------------------------------------------------- */

static int group_setup(void **state)
{
	const char *iso = getenv("PARITY_ISOLATION");

	(void)state;
	vm = iso && strcmp(iso, "vm") == 0;
	if (geteuid() != 0) {
		snprintf(setup_why, sizeof(setup_why), "not root");
		return 0;
	}
	if (vm && harness_vm_image(IMAGES_DIR "/small.yaml", "small", image_pin, sizeof(image_pin),
				   setup_why, sizeof(setup_why)) < 0)
		return 0;
	ready = true;
	return 0;
}

/* `proctor run --json --isolation ISO [--image PIN] OPTS [--put probe] -- ARGV`. */
static void run_on_backend(struct proc_out *o, const char *const *opts, const char *const *argv)
{
	const char *a[96];
	size_t n = 0;
	char put[PATH_MAX + 16];

	a[n++] = "run";
	a[n++] = "--json";
	a[n++] = "--isolation";
	a[n++] = vm ? "vm" : "jail";
	if (vm) {
		a[n++] = "--image";
		a[n++] = image_pin;
	}
	for (size_t i = 0; opts[i]; i++) {
		assert_true(n < 80);
		a[n++] = opts[i];
	}
	if (strcmp(argv[0], "./probe") == 0) {
		snprintf(put, sizeof(put), "%s:probe", harness_probe());
		a[n++] = "--put";
		a[n++] = put;
	}
	a[n++] = "--";
	for (size_t i = 0; argv[i]; i++) {
		assert_true(n < 94);
		a[n++] = argv[i];
	}
	a[n] = NULL;
	harness_run(o, NULL, RUN_TIMEOUT_S, (char *const *)a);
}

/* limits_hit as the document writes it: names in order, space-separated. */
static void limits_of(const struct proc_out *o, char *out, size_t cap)
{
	json_t *hits = json_object_get(o->json, "limits_hit");
	json_t *v;
	size_t i;

	out[0] = '\0';
	if (!json_is_array(hits))
		fail_msg("no limits_hit array: %s", o->out);
	json_array_foreach(hits, i, v)
	{
		size_t len = strlen(out);
		snprintf(out + len, cap - len, "%s%s", len ? " " : "", json_string_value(v));
	}
}

static bool output_has(const struct proc_out *o, const char *needle)
{
	return strstr(jstr(o, "stdout"), needle) || strstr(jstr(o, "stderr"), needle);
}

static void describe(const struct pcase *c, char *buf, size_t cap)
{
	buf[0] = '\0';
	for (size_t i = 0; c->opts[i]; i++) {
		size_t len = strlen(buf);
		snprintf(buf + len, cap - len, "%s ", c->opts[i]);
	}
	for (size_t i = 0; c->argv[i]; i++) {
		size_t len = strlen(buf);
		const char *nl = strchr(c->argv[i], '\n');
		snprintf(buf + len, cap - len, "%s%.*s%s", i ? " " : "-- ",
			 nl ? (int)(nl - c->argv[i]) : (int)strlen(c->argv[i]), c->argv[i],
			 nl ? "..." : "");
	}
}

static void test_each_limit_gives_the_documented_verdict(void **state)
{
	(void)state;
	harness_require(ready, vm ? "the vm backend" : "the jail backend", setup_why);
	load_rows();
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pcase *c = &cases[i];
		struct row *r = c->row ? find_row(c->row) : NULL;
		const char *status = r ? r->status : c->status;
		const char *limits = r ? r->limits : "";
		char what[512], got[128];
		struct proc_out o = {0};

		if (r && r->jail_only && vm)
			continue;
		describe(c, what, sizeof(what));
		double t0 = harness_now_s();
		run_on_backend(&o, c->opts, c->argv);
		if (!o.json)
			fail_msg("%s: proctor printed no JSON (exit %d); stderr: %s", what,
				 o.exit_status, o.err);
		limits_of(&o, got, sizeof(got));
		print_message("%-14s %-13s [%s] %.1f s  %s\n", r ? r->name : "-",
			      jstr(&o, "status"), got, harness_now_s() - t0, what);
		if (strcmp(jstr(&o, "status"), status) != 0 || strcmp(got, limits) != 0)
			fail_msg("%s on %s: status %s, limits_hit [%s]; want %s [%s]%s%s\n"
				 "result: %.4000s",
				 what, vm ? "vm" : "jail", jstr(&o, "status"), got, status, limits,
				 r ? " (docs/run-result.md, row " : "", r ? r->name : "", o.out);
		if (c->want && !output_has(&o, c->want))
			fail_msg("%s: no '%s' in its output: %.4000s", what, c->want, o.out);
		if (c->deny && output_has(&o, c->deny))
			fail_msg("%s: '%s' in its output: %.4000s", what, c->deny, o.out);
		if (c->exit_code >= 0 && jint(&o, "exit_code") != c->exit_code)
			fail_msg("%s: exit_code %lld, want %d", what, jint(&o, "exit_code"),
				 c->exit_code);
		if (r)
			r->runs++;
		proc_out_free(&o);
		harness_assert_clean();
	}
	/* The document has no row this test does not check. */
	for (size_t i = 0; i < n_rows; i++)
		if (rows[i].runs == 0 && !(vm && rows[i].jail_only))
			fail_msg("docs/run-result.md row '%s' has no case here", rows[i].name);
}

/* ---- --put: one rule ----------------------------------------------------------- */

static void write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	char path[PATH_MAX];

	harness_path_join(path, dir, name);
	harness_write_text(NULL, path, text);
	assert_int_equal(chmod(path, mode), 0);
}

/* `--put HOST:in` must fail before the run with exit 2, naming `named` as `kind`. */
static void expect_put_refused(const char *host, const char *named, const char *kind)
{
	char put[PATH_MAX + 8];
	struct proc_out o = {0};

	snprintf(put, sizeof(put), "%s:in", host);
	run_on_backend(&o, L("--put", put), L("/bin/true"));
	if (o.exit_status != 2 || !strstr(o.err, named) || !strstr(o.err, kind))
		fail_msg("--put %s: exit %d, want 2 with a message naming '%s' as %s; stderr: %s",
			 host, o.exit_status, named, kind, o.err);
	proc_out_free(&o);
	harness_assert_clean();
}

static void test_put_copies_only_regular_files_and_directories(void **state)
{
	static char dir[PATH_MAX]; /* not leaked when an assertion jumps out */
	char path[PATH_MAX], put[PATH_MAX + 8], cmd[PATH_MAX + 16];
	struct proc_out o = {0};

	(void)state;
	harness_require(ready, vm ? "the vm backend" : "the jail backend", setup_why);
	char *tmp = harness_tmpdir();
	snprintf(dir, sizeof(dir), "%s", tmp);
	free(tmp);

	/* A tree of files and directories arrives whole, execute bits kept;
	 * the top may be reached through a symlink (the caller's own path). */
	snprintf(path, sizeof(path), "%s/good", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(cmd, sizeof(cmd), "%s/sub", path);
	assert_int_equal(mkdir(cmd, 0755), 0);
	write_file(cmd, "a.txt", "alpha\n", 0644);
	write_file(path, "run.sh", "#!/bin/sh\necho ran\n", 0755);
	snprintf(cmd, sizeof(cmd), "%s/goodlink", dir);
	assert_int_equal(symlink(path, cmd), 0);
	snprintf(put, sizeof(put), "%s:in", cmd);
	run_on_backend(
	    &o, L("--put", put),
	    L("/bin/sh", "-c", "cat in/sub/a.txt; in/run.sh; test -x in/sub/a.txt || echo plain"));
	if (strcmp(jstr(&o, "status"), "ok") != 0 ||
	    strcmp(jstr(&o, "stdout"), "alpha\nran\nplain\n") != 0)
		fail_msg("a plain tree: %s", o.out);
	proc_out_free(&o);
	harness_assert_clean();

	/* A symlink below the top: refused, never followed. */
	snprintf(path, sizeof(path), "%s/withlink", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	write_file(path, "a.txt", "alpha\n", 0644);
	snprintf(cmd, sizeof(cmd), "%s/passwd", path);
	assert_int_equal(symlink("/etc/passwd", cmd), 0);
	expect_put_refused(path, "withlink/passwd", "symbolic link");

	/* A FIFO below the top: refused, never opened (it would block). */
	snprintf(path, sizeof(path), "%s/withfifo", dir);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(cmd, sizeof(cmd), "%s/deep", path);
	assert_int_equal(mkdir(cmd, 0755), 0);
	snprintf(cmd, sizeof(cmd), "%s/deep/pipe", path);
	assert_int_equal(mkfifo(cmd, 0644), 0);
	expect_put_refused(path, "withfifo/deep/pipe", "FIFO");

	/* The top itself must be a file or a directory. */
	expect_put_refused(cmd, "deep/pipe", "FIFO");

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_each_limit_gives_the_documented_verdict),
	    cmocka_unit_test(test_put_copies_only_regular_files_and_directories),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
