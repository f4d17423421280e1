/* `proctor assignment check`: grade the reference, an empty and a broken submission before students
 * do. */
#include "cmd_assignment.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capbuf.h"
#include "cli.h"
#include "grade/assignment.h"
#include "grade/grade.h"
#include "util.h"

#define CHECK_EXIT_STATUS                                                                          \
	"  0  every check passed\n"                                                                \
	"  1  some check failed: the assignment needs fixing (each failure says why)\n"            \
	"  2  usage error, the assignment is invalid, or the reference cannot be read\n"           \
	"  3  Proctor's own failure: some grading ended in status \"error\"; retry later"

/* Bytes of one test's message shown on a terminal (JSON has all of it). */
#define SHOWN_MESSAGE 240

static int check_word(int argc, char **argv);

static const struct cli_command check_cmd = {
    .name = "assignment check", .synopsis = "DIR", .operands = "one DIR"};

static const struct cli_subcommand assignment_words[] = {
    {"check", "grade the reference, an empty and a syntax-error submission", check_word,
     &check_cmd},
};

static const struct cli_command assignment_cmd = {
    .name = "assignment",
    .synopsis = "COMMAND [ARGS]",
    .about = "Commands on an assignment itself (a directory holding assignment.yaml; see\n"
	     "docs/assignment.md).  'proctor assignment COMMAND --help' lists the command's\n"
	     "options.",
    .subcommands = assignment_words,
    .n_subcommands = sizeof(assignment_words) / sizeof(assignment_words[0]),
    .exit_status = CHECK_EXIT_STATUS,
    .operands = "COMMAND",
    .min_operands = 0,
    .max_operands = -1,
    .stop_at_operand = true,
};

int cmd_assignment(int argc, char **argv)
{
	int status;

	if (cli_dispatch(&assignment_cmd, argc, argv, &status))
		return status;
	return cli_usage_error("assignment: expected a COMMAND: check (see 'proctor assignment "
			       "--help')");
}

/* ---- the checks' record -------------------------------------------------- */

/* One run of the command: what every check needs, and what they found. */
struct checker {
	const struct assignment *a;
	struct grade_options o;
	json_t *checks;	    /* the document's checks[], in order */
	char isolation[16]; /* of the first grading ("jail", "vm"), for the document */
	bool failed;	    /* some check failed: exit 1 */
	bool broke;	    /* some grading ended in status "error": exit 3 */
	bool text;	    /* print each check as it ends */
};

/* A check's object: name, expected, got, result, details[], tests[]. */
static json_t *check_new(const char *name, const char *expected)
{
	return json_pack("{s:s, s:s, s:n, s:s, s:[], s:[], s:n}", "name", name, "expected",
			 expected, "got", "result", "pass", "details", "tests", "grading");
}

static void detail(json_t *check, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void detail(json_t *check, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	json_array_append_new(json_object_get(check, "details"), json_string(line));
}

/* Text from an assignment or a report, on one line and harmless to a
 * terminal, at most `max` bytes. */
static void print_clean(FILE *f, const char *s, size_t max)
{
	char line[1024];

	text_printable(line, max + 1 < sizeof(line) ? max + 1 : sizeof(line), s ? s : "", ' ');
	fputs(line, f);
}

static void print_check(const json_t *c)
{
	const char *result = json_string_value(json_object_get(c, "result"));
	const char *got = json_string_value(json_object_get(c, "got"));
	const json_t *v;
	size_t i;

	printf("  %-4s  %-12s expected ",
	       strcmp(result, "fail") == 0	 ? "FAIL"
	       : strcmp(result, "warn") == 0 ? "WARN"
					     : result,
	       json_string_value(json_object_get(c, "name")));
	print_clean(stdout, json_string_value(json_object_get(c, "expected")), 300);
	if (got) {
		fputs("; got ", stdout);
		print_clean(stdout, got, 300);
	}
	fputc('\n', stdout);
	json_array_foreach(json_object_get(c, "details"), i, v)
	{
		fputs("        ", stdout);
		print_clean(stdout, json_string_value(v), 1000);
		fputc('\n', stdout);
	}
	json_array_foreach(json_object_get(c, "tests"), i, v)
	{
		const char *msg = json_string_value(json_object_get(v, "message"));
		printf("          %-7s ", json_string_value(json_object_get(v, "status")));
		print_clean(stdout, json_string_value(json_object_get(v, "name")), 200);
		if (msg) {
			fputs(": ", stdout);
			print_clean(stdout, msg, SHOWN_MESSAGE);
		}
		fputc('\n', stdout);
	}
	fflush(stdout);
}

/* The check is done: record it, count a failure, print it on a terminal. */
static void check_end(struct checker *k, json_t *c, const char *result)
{
	json_object_set_new(c, "result", json_string(result));
	if (strcmp(result, "fail") == 0)
		k->failed = true;
	json_array_append_new(k->checks, c);
	if (k->text)
		print_check(c);
}

/* ---- gradings ------------------------------------------------------------- */

static const char *rstr(const json_t *r, const char *key)
{
	return json_string_value(json_object_get(r, key));
}

static double rnum(const json_t *r, const char *key)
{
	return json_number_value(json_object_get(r, key));
}

/* Grade `submission` against `a` (the loaded assignment or a variant of
 * it); -1 only when not even a document could be built. */
static int grade(struct checker *k, const struct assignment *a, const char *submission,
		 json_t **ret, struct err *e)
{
	if (grade_submission(a, submission, &k->o, ret, e) < 0)
		return err_wrap(e, "assignment check: grading '%s'", submission);
	if (!k->isolation[0] && rstr(*ret, "isolation"))
		snprintf(k->isolation, sizeof(k->isolation), "%s", rstr(*ret, "isolation"));
	return 0;
}

/* What a grading got, in the check's `got` and `grading`; its reason, if
 * any, as a detail.  A status "error" is Proctor's failure (exit 3). */
static void record_grading(struct checker *k, json_t *c, const json_t *r)
{
	char got[256];
	const char *status = rstr(r, "status"), *reason = rstr(r, "reason");

	snprintf(got, sizeof(got), "%s, %g/%g (%lld/%lld tests passed)", status, rnum(r, "score"),
		 rnum(r, "max_score"), (long long)json_integer_value(json_object_get(r, "passed")),
		 (long long)json_integer_value(json_object_get(r, "total")));
	json_object_set_new(c, "got", json_string(got));
	json_object_set_new(c, "grading",
			    json_pack("{s:s, s:O, s:f, s:f}", "status", status, "reason",
				      json_object_get(r, "reason"), "score", rnum(r, "score"),
				      "max_score", rnum(r, "max_score")));
	if (reason)
		detail(c, "reason: %s", reason);
	if (strcmp(status, "error") == 0) {
		k->broke = true;
		detail(c, "status error is Proctor's own failure, not the assignment's: check "
			  "again later");
	}
}

static bool full_marks(const json_t *r)
{
	return strcmp(rstr(r, "status"), "graded") == 0 &&
	       fabs(rnum(r, "score") - rnum(r, "max_score")) < 1e-9;
}

static bool test_passed(const json_t *t)
{
	return strcmp(json_string_value(json_object_get(t, "status")), "passed") == 0;
}

/* A result's test entry as a check lists it: name, classname, status and
 * the report's message (I/O mode: the case's reason). */
static json_t *test_entry(const json_t *t)
{
	json_t *msg = json_object_get(t, "message");

	if (!json_is_string(msg))
		msg = json_object_get(t, "reason");
	return json_pack("{s:O, s:O, s:O, s:O}", "name", json_object_get(t, "name"), "classname",
			 json_object_get(t, "classname"), "status", json_object_get(t, "status"),
			 "message", msg ? msg : json_null());
}

/* Add to c's tests[] each test of r that passed (`passed`) or did not;
 * their names, comma-separated, into names.  The count. */
static size_t list_tests(json_t *c, const json_t *r, bool passed, char *names, size_t len)
{
	const json_t *t;
	size_t i, n = 0, used = 0;

	names[0] = '\0';
	json_array_foreach(json_object_get(r, "tests"), i, t)
	{
		if (test_passed(t) != passed)
			continue;
		json_array_append_new(json_object_get(c, "tests"), test_entry(t));
		if (used < len)
			snprintf(names + used, len - used, "%s%s", n ? ", " : "",
				 json_string_value(json_object_get(t, "name")));
		used = strlen(names);
		n++;
	}
	return n;
}

/* ---- the checks ------------------------------------------------------------ */

/* How the test step runs, for the load check's line. */
static const char *test_mode(const struct assignment *a)
{
	if (a->mode == GRADE_MODE_IO)
		return "I/O mode: each case runs the program alone";
	if (assignment_split(a))
		return "the tests run split from the submission (tamper-proof)";
	if (a->in_process)
		return "the tests and the submission share one process (test.in_process: true)";
	return "the test runner and the submission share one process";
}

static void check_load(struct checker *k)
{
	const struct assignment *a = k->a;
	json_t *c = check_new("load", "a valid assignment.yaml");
	char got[512];

	snprintf(got, sizeof(got), "%zu %s, max score %g; %s",
		 a->mode == GRADE_MODE_IO ? a->n_cases : a->n_tests,
		 a->mode == GRADE_MODE_IO ? "cases" : "tests", a->max_score, test_mode(a));
	json_object_set_new(c, "got", json_string(got));
	check_end(k, c, "pass");
}

/* The reference must get every point.  The graded result stays in *ret. */
static int check_reference(struct checker *k, const char *reference, json_t **ret, struct err *e)
{
	json_t *c = check_new("reference", "graded with the maximum score"), *r;
	char names[2048];

	if (grade(k, k->a, reference, &r, e) < 0) {
		json_decref(c);
		return -1;
	}
	detail(c, "submission: %s", reference);
	record_grading(k, c, r);
	bool full = full_marks(r);
	size_t n = list_tests(c, r, false, names, sizeof(names));
	if (!full && n)
		detail(c, "the reference does not pass: %s", names);
	else if (n)
		detail(c, "%zu test(s) worth no points do not pass: %s", n, names);
	check_end(k, c, full ? "pass" : "fail");
	*ret = r;
	return 0;
}

/* Whether a submission name is a plain path, not a pattern. */
static bool plain_name(const char *glob)
{
	return glob[0] && !strpbrk(glob, "*?[\\");
}

/* What the syntax-error submission holds in `name`: text its language
 * cannot parse, chosen by the name's extension. */
static const char *garbage_for(const char *name)
{
	static const struct {
		const char *ext, *text;
	} table[] = {
	    {".py", "def (:\n"},      {".c", "int x = ;\n"},	{".h", "int x = ;\n"},
	    {".cpp", "int x = ;\n"},  {".cc", "int x = ;\n"},	{".cxx", "int x = ;\n"},
	    {".hpp", "int x = ;\n"},  {".java", "class {\n"},	{".js", "function (\n"},
	    {".mjs", "function (\n"}, {".cjs", "function (\n"},
	};
	const char *dot = strrchr(name, '.');

	for (size_t i = 0; dot && i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(dot, table[i].ext) == 0)
			return table[i].text;
	return ")]}> @#$%^&* not a program in any language <{[(\n\x01\x7f\n";
}

/*
 * Make dir/sub holding a file for each name the submission must or may
 * have by name: submission.required, and each files glob that is a plain
 * path.  Empty files when `garbage` is false.  The count of files made.
 */
static int make_submission(const struct assignment *a, const char *dir, const char *sub,
			   bool garbage, json_t *c, struct err *e)
{
	char root[PATH_MAX], path[PATH_MAX];
	int made = 0;

	snprintf(root, sizeof(root), "%s/%s", dir, sub);
	if (mkdir(root, 0755) < 0)
		return err_set(e, errno, "assignment check: mkdir '%s'", root);
	for (size_t i = 0; i < a->n_required + a->n_files; i++) {
		const char *name = i < a->n_required ? a->required[i] : a->files[i - a->n_required];
		if (!plain_name(name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, name);
		char *slash = strrchr(path, '/');
		*slash = '\0';
		if (mkdir_p_at(AT_FDCWD, path, 0755, (uid_t)-1, (gid_t)-1, e) < 0)
			return err_wrap(e, "assignment check");
		*slash = '/';
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno == EEXIST)
			continue; /* required and a plain glob both */
		if (fd < 0)
			return err_set(e, errno, "assignment check: create '%s'", path);
		const char *text = garbage ? garbage_for(name) : "";
		int wr = write_all(fd, text, strlen(text));
		if (close(fd) < 0 || wr < 0)
			return err_set(e, errno, "assignment check: write '%s'", path);
		if (garbage) {
			char shown[128]; /* the text, without its line end */
			text_escape(shown, sizeof(shown), text, strlen(text) - 1);
			detail(c, "%s holds \"%s\"", name, shown);
		}
		made++;
	}
	return made;
}

/* An empty or a syntax-error submission must score 0 without an error. */
static int check_zero(struct checker *k, const char *name, const char *tmp, bool garbage,
		      struct err *e)
{
	json_t *c = check_new(name, "0 points, any status but error"), *r = NULL;
	char names[2048];
	int made = make_submission(k->a, tmp, name, garbage, c, e);

	if (made < 0) {
		json_decref(c);
		return -1;
	}
	if (made == 0) {
		detail(c, "submission.required is empty and no submission.files entry is a plain "
			  "name: there is no file to write");
		check_end(k, c, "skip");
		return 0;
	}
	if (!garbage)
		detail(c, "an empty file for each of submission.required and each plain name of "
			  "submission.files");
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	if (grade(k, k->a, path, &r, e) < 0) {
		json_decref(c);
		return -1;
	}
	record_grading(k, c, r);
	bool zero = strcmp(rstr(r, "status"), "error") != 0 && rnum(r, "score") == 0;
	size_t n = list_tests(c, r, true, names, sizeof(names));
	if (n)
		detail(c, "%s on %s submission, so %s not test it: %s",
		       n == 1 ? "this test passes" : "these tests pass",
		       garbage ? "a syntax-error" : "an empty", n == 1 ? "it does" : "they do",
		       names);
	if (strcmp(rstr(r, "status"), "rejected") == 0)
		detail(c, "intake refused it, so no test ran");
	json_decref(r);
	check_end(k, c, zero ? "pass" : "fail");
	return 0;
}

/*
 * The reference lost points in a split run: grade it again with the tests
 * and the submission in one process (a copy of the assignment, no file
 * changed).  Tests that pass there and failed split do not work split.
 */
static int check_tamper_proof(struct checker *k, const char *reference, const json_t *split,
			      struct err *e)
{
	json_t *c = check_new("tamper_proof",
			      "the reference gets no test in one process that it fails split");
	const struct assignment *a = k->a;

	if (!assignment_split(a)) {
		detail(c, "%s: there is no split run to compare", test_mode(a));
		check_end(k, c, "skip");
		return 0;
	}
	if (full_marks(split)) {
		json_object_set_new(c, "got", json_string("the reference gets the maximum split"));
		check_end(k, c, "pass");
		return 0;
	}
	if (a->runner == RUNNER_JUNIT) {
		/* In one process the build must compile the tests too: not the
		 * same assignment, so no comparison is made. */
		detail(c, "the reference lost points split; a JUnit assignment in one process "
			  "needs a build that compiles the tests too, so no comparison is made: "
			  "the test step's output names what the split run could not do "
			  "(docs/grading.md, \"Java: JUnit, split\")");
		check_end(k, c, "skip");
		return 0;
	}
	struct assignment one = *a; /* shares a's memory; never freed */
	json_t *r;
	one.in_process = true;
	if (grade(k, &one, reference, &r, e) < 0) {
		json_decref(c);
		return -1;
	}
	record_grading(k, c, r);
	json_object_set_new(c, "got",
			    json_sprintf("in one process %s, %g/%g; split %s, %g/%g",
					 rstr(r, "status"), rnum(r, "score"), rnum(r, "max_score"),
					 rstr(split, "status"), rnum(split, "score"),
					 rnum(split, "max_score")));
	/* Tests are in declaration order in both documents. */
	const json_t *ts = json_object_get(split, "tests"), *to = json_object_get(r, "tests"), *t;
	char names[2048] = "";
	size_t i, n = 0, used = 0;
	json_array_foreach(ts, i, t)
	{
		const json_t *other = json_array_get(to, i);
		if (test_passed(t) || !other || !test_passed(other))
			continue;
		json_array_append_new(json_object_get(c, "tests"), test_entry(t));
		if (used < sizeof(names))
			snprintf(names + used, sizeof(names) - used, "%s%s", n ? ", " : "",
				 json_string_value(json_object_get(t, "name")));
		used = strlen(names);
		n++;
	}
	if (n)
		detail(c,
		       "these tests do not work in tamper-proof mode: %s; see docs/grading.md "
		       "'What does not work split'; fix the tests, or set test.in_process: true "
		       "and accept what it gives up (messages below are from the split run)",
		       names);
	else if (strcmp(rstr(r, "status"), "error") != 0)
		detail(c, "every test the reference fails split also fails in one process: the "
			  "reference or those tests are wrong, not the split");
	bool broke = strcmp(rstr(r, "status"), "error") == 0;
	json_decref(r);
	check_end(k, c, n || broke ? "fail" : "pass");
	return 0;
}

/*
 * Whether the submission can change the verdict from inside the test step
 * (docs/grading.md, "Threat model"), from the assignment and what the
 * reference's grading says of its build: "pass" when it cannot, else
 * "warn" with why and what to change.  A warning does not fail the check:
 * the assignment grades as it says, with this on record.
 */
/*
 * node's options that load or read a file in the harness process before
 * its stand-in hooks exist (docs/grading.md, "JavaScript"): their value
 * must be a regular file of tests_dir, named relative to /work, or the
 * submission could provide a file of that name (or a package, for a bare
 * specifier) and run in the harness as the tests' own.  The first value
 * that is not, or NULL.
 */
static const char *node_preload_outside_tests(const struct assignment *a, const char **opt)
{
	static const char *const preload[] = {"--import", "--require", "-r", "--loader",
					      "--experimental-loader", "--env-file", NULL};
	char **argv = a->test.argv;

	for (size_t i = 1; argv && argv[i]; i++) {
		const char *value = NULL;
		for (size_t j = 0; preload[j] && !value; j++) {
			size_t n = strlen(preload[j]);
			if (strcmp(argv[i], preload[j]) == 0)
				value = argv[i + 1] ? argv[i + 1] : "";
			else if (strncmp(argv[i], preload[j], n) == 0 && argv[i][n] == '=')
				value = argv[i] + n + 1;
			if (value)
				*opt = preload[j];
		}
		if (!value)
			continue;
		const char *rel = strncmp(value, "./", 2) == 0 ? value + 2 : value;
		struct stat st;
		char path[PATH_MAX];
		bool ours = a->tests_dir && (strncmp(value, "./", 2) == 0 || strchr(value, '/')) &&
			    rel[0] != '/' && !strstr(rel, "..") &&
			    (size_t)snprintf(path, sizeof(path), "%s/%s", a->tests_dir, rel) <
				sizeof(path) &&
			    lstat(path, &st) == 0 && S_ISREG(st.st_mode);
		if (!ours)
			return value;
	}
	return NULL;
}

static void check_protection(struct checker *k, const json_t *ref)
{
	json_t *c = check_new("protection", "the submission cannot change its verdict from "
					    "inside the test step");
	const struct assignment *a = k->a;
	const char *objects = rstr(ref, "objects_check");

	if (a->mode == GRADE_MODE_IO) {
		json_object_set_new(c, "got", json_string("I/O mode: each case runs the program "
							  "alone, its output compared on the host"));
		check_end(k, c, "pass");
		return;
	}
	const char *opt = NULL, *preload = NULL;
	if (assignment_split(a) && a->runner == RUNNER_NODE)
		preload = node_preload_outside_tests(a, &opt);
	if (preload) {
		json_object_set_new(c, "got",
				    json_sprintf("test.run's %s %s is loaded by the harness before "
						 "its stand-in hooks, and is not a file of tests_dir",
						 opt, preload));
		detail(c, "a file (or package) of that name the submission provides would run "
			  "or be read in the harness as the tests' own; put it in tests_dir and "
			  "name it ./FILE, or import it from the test files (docs/grading.md, "
			  "\"JavaScript: node --test, split by default\")");
		check_end(k, c, "warn");
		return;
	}
	if (assignment_split(a)) {
		json_object_set_new(c, "got", json_string("the tests run split from the "
							  "submission, in another process and uid"));
		check_end(k, c, "pass");
		return;
	}
	if (a->in_process) {
		json_object_set_new(c, "got",
				    json_string("test.in_process: true: the submission shares the "
						"test runner's process"));
		detail(c, "it can patch the test framework, return objects equal to anything, "
			  "read the tests, forge the report and exit; remove test.in_process "
			  "unless the tests cannot run split (the tamper_proof check names those)");
		check_end(k, c, "warn");
		return;
	}
	if (objects && strcmp(objects, "unchecked") == 0) {
		json_object_set_new(c, "got", json_string("the build compiled a C or C++ source "
							  "of the submission out of Proctor's "
							  "sight: its objects were not checked"));
		detail(c, "call the compiler by its name (cc, gcc, g++, clang), not by a path; "
			  "compile the submission's sources themselves, and #include none of its "
			  "files from the driver; build without -fsanitize, --coverage or -flto "
			  "(they put code before main() into every object); or name the objects "
			  "in build.objects (docs/assignment.md)");
		check_end(k, c, "warn");
		return;
	}
	if (objects) {
		json_object_set_new(
		    c, "got",
		    json_sprintf("the objects of the submission are checked (%s): no constructor, "
				 "destructor, IFUNC or stand-in for a library function",
				 strcmp(objects, "explicit") == 0 ? "build.objects" : "by default"));
		detail(c, "once the driver calls it, the code under test still shares the "
			  "driver's process: it can write a report and exit, or overwrite the "
			  "driver's memory; I/O mode is the tamper-proof choice for compiled "
			  "languages (docs/grading.md, \"C and C++\")");
		check_end(k, c, "warn");
		return;
	}
	const char *who = a->runner == RUNNER_NODE	  ? "node --test"
			  : a->runner == RUNNER_JUNIT ? "the JUnit launcher"
						      : "the test runner";
	json_object_set_new(c, "got", json_sprintf("%s and the submission share one process", who));
	if (a->runner == RUNNER_NODE || a->runner == RUNNER_JUNIT)
		detail(c, "Proctor's guard stops a forged report and an early exit, but the "
			  "submission can patch the assertion library or reach the runner by "
			  "reflection; remove test.in_process to run the tests split; I/O "
			  "mode is tamper-proof (docs/grading.md, \"The node and JUnit guards\")");
	else
		detail(c, "the submission can forge the report or change what the runner "
			  "records; use I/O mode, or a Python runner (split by default)");
	check_end(k, c, "warn");
}

/* ---- the command ---------------------------------------------------------- */

static void print_summary(const struct checker *k)
{
	const json_t *c;
	size_t i, failed = 0;
	char names[512] = "";

	const char *warned = NULL;
	json_array_foreach(k->checks, i, c)
	{
		if (strcmp(json_string_value(json_object_get(c, "result")), "warn") == 0 &&
		    strcmp(json_string_value(json_object_get(c, "name")), "protection") == 0)
			warned = "but the test step is not tamper-proof (protection, above)";
		if (strcmp(json_string_value(json_object_get(c, "result")), "fail") != 0)
			continue;
		size_t used = strlen(names);
		snprintf(names + used, sizeof(names) - used, "%s%s", failed ? ", " : "",
			 json_string_value(json_object_get(c, "name")));
		failed++;
	}
	if (k->broke)
		printf("some grading ended in status error (Proctor's own failure): check again "
		       "later\n");
	else if (failed)
		printf("%zu of %zu checks failed: %s\n", failed, json_array_size(k->checks), names);
	else if (warned)
		printf("every check passed; %s\n", warned);
	else
		printf("every check passed\n");
}

static int print_document(const struct checker *k, const char *reference)
{
	const struct assignment *a = k->a;
	json_t *doc =
	    json_pack("{s:i, s:{s:s, s:s, s:s}, s:s, s:s?, s:b, s:O}", "schema_version", 1,
		      "assignment", "name", a->name, "dir", a->dir, "digest", a->digest,
		      "reference", reference, "isolation", k->isolation[0] ? k->isolation : NULL,
		      "passed", !k->failed && !k->broke, "checks", k->checks);
	int rc = doc ? json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_ENSURE_ASCII) : -1;

	json_decref(doc);
	if (rc < 0) {
		cli_say("assignment check: cannot print JSON");
		return err_exit_status(ERR_INTERNAL);
	}
	fputc('\n', stdout);
	return 0;
}

/* The reference: --reference as given, else DIR/reference. */
static int find_reference(const struct assignment *a, const char *given, char *buf, size_t len,
			  struct err *e)
{
	if (given) {
		if (access(given, F_OK) < 0)
			return err_setk(e, ERR_INPUT, errno, "assignment check: --reference '%s'",
					given);
		snprintf(buf, len, "%s", given);
		return 0;
	}
	snprintf(buf, len, "%s/reference", a->dir);
	if (access(buf, F_OK) < 0)
		return err_setk(e, ERR_USAGE, errno,
				"assignment check: '%s' does not exist; name the reference "
				"solution with --reference SUB",
				buf);
	return 0;
}

static int run_checks(struct checker *k, const char *reference, const char *tmp, struct err *e)
{
	json_t *ref = NULL;
	int rc = -1;

	check_load(k);
	if (check_reference(k, reference, &ref, e) < 0)
		return -1;
	if (check_zero(k, "empty", tmp, false, e) < 0 ||
	    check_zero(k, "syntax_error", tmp, true, e) < 0 ||
	    check_tamper_proof(k, reference, ref, e) < 0)
		goto out;
	check_protection(k, ref);
	rc = 0;
out:
	json_decref(ref);
	return rc;
}

static int check_word(int argc, char **argv)
{
	const char *reference = NULL, *isolation = "auto", *state_dir = cli_state_dir();
	unsigned slots = CLI_DEFAULT_SLOTS;
	bool json = false;
	const struct cli_option options[] = {
	    {.name = "reference",
	     .kind = CLI_STRING,
	     .value_name = "SUB",
	     .dest = &reference,
	     .help = "the reference solution, a directory or archive as\n'proctor grade' takes "
		     "(default DIR/reference)"},
	    CLI_OPTION_JSON(&json, "the checks"),
	    CLI_OPTION_ISOLATION(&isolation, "the assignment pins an image, else jail; an\n"
					     "assignment's isolation: is used instead of auto"),
	    CLI_OPTION_STATE_DIR(&state_dir, "slot locks and scratch"),
	    CLI_OPTION_SLOTS(&slots, NULL),
	};
	struct cli_command cmd = check_cmd;
	cmd.about = "Check the assignment in DIR before students see it, in its default mode:\n"
		    "the reference solution must get the maximum score; an empty submission and\n"
		    "one whose files do not parse must get 0 (and no error); and when split\n"
		    "Python tests cost the reference points, which of them work only with the\n"
		    "tests and the submission in one process.  See docs/assignment.md.";
	cmd.options = options;
	cmd.n_options = sizeof(options) / sizeof(options[0]);
	cmd.exit_status = CHECK_EXIT_STATUS;
	cmd.min_operands = cmd.max_operands = 1;
	struct checker k = {.o.sandbox.uid_base = SANDBOX_UID_BASE};
	struct assignment *a = NULL;
	char ref[PATH_MAX], tmp[PATH_MAX], why[256];
	struct err e;
	int n, status, rc = cli_parse(&cmd, argc, argv, &n);

	if (rc != CLI_OK)
		return cli_exit_status(rc);
	k.text = !json;
	k.o.sandbox.state_dir = state_dir;
	k.o.sandbox.max_slots = slots;
	tmp[0] = '\0';
	if (assignment_load(argv[1], &a, &e) < 0 ||
	    find_reference(a, reference, ref, sizeof(ref), &e) < 0 ||
	    grade_prepare(isolation, a, &k.o.ops, why, sizeof(why), &e) < 0)
		goto out_fail;
	k.a = a;
	k.checks = json_array();
	const char *base = getenv("TMPDIR");
	snprintf(tmp, sizeof(tmp), "%s/proctor-check-XXXXXX", base && *base ? base : "/tmp");
	if (!k.checks || !mkdtemp(tmp)) {
		err_set(&e, errno, "assignment check: mkdtemp '%s'", tmp);
		tmp[0] = '\0';
		goto out_fail;
	}
	if (chmod(tmp, 0755) < 0) {
		err_set(&e, errno, "assignment check: chmod '%s'", tmp);
		goto out_fail;
	}
	if (k.text) {
		printf("proctor assignment check: %s (%s)\n", a->name, a->file);
		fflush(stdout);
	}
	if (run_checks(&k, ref, tmp, &e) < 0)
		goto out_fail;
	status = k.broke ? err_exit_status(ERR_INTERNAL) : k.failed ? 1 : 0;
	if (k.text)
		print_summary(&k);
	else if (print_document(&k, ref) != 0)
		status = err_exit_status(ERR_INTERNAL);
	goto out;
out_fail:
	status = cli_fail(&e);
out:
	if (tmp[0] && rm_tree_at(AT_FDCWD, tmp, &e) < 0)
		cli_say("%s", e.msg);
	json_decref(k.checks);
	assignment_free(a);
	return status;
}
