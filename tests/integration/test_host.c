/* Integration tests: Proctor on a host: fresh state dirs, proctors side by side, 0700 dirs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"

#ifndef EXAMPLES_DIR
#error "EXAMPLES_DIR must name the examples/ directory (meson passes it)"
#endif

#define PY_ASSIGNMENT EXAMPLES_DIR "/python-pytest"
#define PY_CORRECT    PY_ASSIGNMENT "/submissions/correct"
#define IO_ASSIGNMENT EXAMPLES_DIR "/io-sum"

static void assert_no_mount_below(const char *dir)
{
	char line[8192];
	size_t dl = strlen(dir);
	FILE *f = fopen("/proc/self/mountinfo", "re");
	assert_non_null(f);
	while (fgets(line, sizeof line, f)) {
		char *save = NULL, *tok = strtok_r(line, " ", &save);
		for (int i = 0; tok && i < 4; i++)
			tok = strtok_r(NULL, " ", &save);
		if (tok && strncmp(tok, dir, dl) == 0 && tok[dl] == '/')
			fail_msg("a mount is left below %s: %s", dir, tok);
	}
	fclose(f);
}

/* Every command, on a state directory that does not exist yet, under the
 * strictest umask an operator's shell may have: each makes what it needs
 * with the modes the slots need, and works the first time. */
static void test_every_command_works_on_a_fresh_state_dir(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), dir[PATH_MAX], env[PATH_MAX + 32], out[PATH_MAX];
	struct proc_out o;
	struct stat st;
	struct {
		const char *what;
		char *args[12];
		int want_exit;
	} cmds[] = {
		{"grade", {"grade", "--json", PY_ASSIGNMENT, PY_CORRECT, NULL}, 0},
		{"class", {"class", "-j", "1", "--out", out, IO_ASSIGNMENT, IO_ASSIGNMENT "/submissions",
			   NULL},
		 0},
		{"run", {"run", "--json", "--", "/bin/true", NULL}, 0},
		{"image ls", {"image", "ls", NULL}, 0},
		{"doctor", {"doctor", NULL}, 0},
	};
	snprintf(out, sizeof out, "%s/grades.csv", tmp);

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		/* A new state directory two levels below an existing one, per command. */
		snprintf(dir, sizeof dir, "%s/state%zu/proctor", tmp, i);
		snprintf(env, sizeof env, "PROCTOR_STATE_DIR=%s", dir);
		char *extra[] = {env, NULL};
		mode_t old = umask(077);
		harness_run(&o, extra, 300, cmds[i].args);
		umask(old);
		if (o.exit_status != cmds[i].want_exit)
			fail_msg("%s on a fresh state dir: exit %d, want %d\nstdout: %.2000s\nstderr: "
				 "%.2000s",
				 cmds[i].what, o.exit_status, cmds[i].want_exit, o.out, o.err);
		if (!strcmp(cmds[i].what, "grade"))
			assert_string_equal(jstr(&o, "status"), "graded");
		if (!strcmp(cmds[i].what, "run"))
			assert_string_equal(jstr(&o, "status"), "ok");
		proc_out_free(&o);
		assert_no_mount_below(dir);
		/* Commands that sandboxed something made the state dir 0711
		 * (slot uids traverse it) whatever the umask. */
		if (stat(dir, &st) == 0)
			assert_int_equal(st.st_mode & 07777, 0711);
		else if (strcmp(cmds[i].what, "image ls") && strcmp(cmds[i].what, "doctor"))
			fail_msg("%s did not create its state directory %s", cmds[i].what, dir);
	}
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/* An existing state directory made by mkdtemp (0700, root's) only lacks
 * the traverse bits; one another user can write is refused by name. */
static void test_state_dir_modes_are_checked(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), dir[PATH_MAX], env[PATH_MAX + 32];
	struct proc_out o;
	struct stat st;
	char *args[] = {"run", "--json", "--", "/bin/true", NULL};

	snprintf(dir, sizeof dir, "%s/state", tmp);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(env, sizeof env, "PROCTOR_STATE_DIR=%s", dir);
	char *extra[] = {env, NULL};
	harness_run(&o, extra, 60, args);
	assert_int_equal(o.exit_status, 0);
	proc_out_free(&o);
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0711, 0711);

	assert_int_equal(chmod(dir, 0777), 0);
	harness_run(&o, extra, 60, args);
	assert_int_equal(o.exit_status, 3);
	if (!strstr(o.err, dir) || !strstr(o.err, "writable only by it"))
		fail_msg("want a message naming %s and the rule, got: %s", dir, o.err);
	proc_out_free(&o);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/* A proctor started in the background, its stdout in a file. */
struct bg {
	pid_t pid;
	char out[PATH_MAX];
};

static void bg_start(struct bg *b, const char *tmp, const char *name, const char *state_dir,
		     char *const *args)
{
	char *argv[32];
	size_t n = 0;

	argv[n++] = (char *)harness_proctor();
	for (; *args && n < 30; args++)
		argv[n++] = *args;
	argv[n] = NULL;
	snprintf(b->out, sizeof b->out, "%s/%s.out", tmp, name);
	b->pid = fork();
	assert_true(b->pid >= 0);
	if (b->pid == 0) {
		int fd = open(b->out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || null < 0 || dup2(fd, 1) < 0 || dup2(null, 0) < 0)
			_exit(127);
		setenv("PROCTOR_STATE_DIR", state_dir, 1);
		execv(argv[0], argv);
		_exit(127);
	}
}

/* Wait for it (at most timeout_s; then it is killed by pid) and return its
 * stdout parsed as JSON. */
static json_t *bg_wait(struct bg *b, int timeout_s, int *ret_status)
{
	int status = 0;
	for (int i = 0; i < timeout_s * 10; i++) {
		pid_t r = waitpid(b->pid, &status, WNOHANG);
		if (r == b->pid)
			break;
		assert_true(r == 0);
		if (i == timeout_s * 10 - 1) {
			kill(b->pid, SIGKILL);
			waitpid(b->pid, &status, 0);
			fail_msg("proctor %d did not finish in %d s", (int)b->pid, timeout_s);
		}
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	*ret_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	json_error_t je;
	json_t *j = json_load_file(b->out, 0, &je);
	if (!j) {
		char *text = harness_slurp(b->out, 4096, NULL);
		fail_msg("proctor's output is not JSON (%s): %s", je.text, text ? text : "");
	}
	return j;
}

/*
 * A service worker and a CLI on one host are the common case: two proctors
 * with different state directories, sandboxes alive at the same time.
 * Each must keep its own: a long run in one must end "ok", not killed by
 * the other taking "its" slot, and the other's gradings get their right
 * verdicts meanwhile.
 */
static void test_two_state_dirs_side_by_side(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), a[PATH_MAX], b[PATH_MAX], env[PATH_MAX + 32];
	struct bg long_run;
	int status;

	snprintf(a, sizeof a, "%s/state-a", tmp);
	snprintf(b, sizeof b, "%s/state-b", tmp);
	char *sleeper[] = {"run", "--json", "--wall", "30", "--", "/bin/sleep", "4", NULL};
	bg_start(&long_run, tmp, "long", a, sleeper);
	/* Let it lease its slot and start the program. */
	struct timespec ts = {1, 0};
	nanosleep(&ts, NULL);

	snprintf(env, sizeof env, "PROCTOR_STATE_DIR=%s", b);
	char *extra[] = {env, NULL};
	for (int round = 0; round < 2; round++) {
		struct proc_out o;
		char *grade[] = {"grade", "--json", PY_ASSIGNMENT, PY_CORRECT, NULL};
		harness_run(&o, extra, 120, grade);
		if (o.exit_status != 0)
			fail_msg("grade beside another proctor: exit %d: %s", o.exit_status, o.err);
		assert_string_equal(jstr(&o, "status"), "graded");
		proc_out_free(&o);
		char *quick[] = {"run", "--json", "--", "/bin/true", NULL};
		harness_run(&o, extra, 60, quick);
		assert_int_equal(o.exit_status, 0);
		assert_string_equal(jstr(&o, "status"), "ok");
		proc_out_free(&o);
	}

	json_t *j = bg_wait(&long_run, 60, &status);
	const char *st = json_string_value(json_object_get(j, "status"));
	if (status != 0 || !st || strcmp(st, "ok") != 0) {
		char *text = json_dumps(j, JSON_COMPACT);
		fail_msg("the first proctor's sandbox was disturbed: exit %d, %s", status, text);
	}
	json_decref(j);
	assert_no_mount_below(a);
	assert_no_mount_below(b);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/* How many entries (other than dot files) a directory holds; -1 if it
 * cannot be read. */
static int count_entries(const char *path)
{
	char *cmd;
	int n = -1;
	if (asprintf(&cmd, "ls -A1 -- '%s' 2>/dev/null | grep -vc '^\\.'", path) < 0)
		fail_msg("out of memory");
	FILE *f = popen(cmd, "r");
	if (f && fscanf(f, "%d", &n) != 1)
		n = -1;
	if (f)
		pclose(f);
	free(cmd);
	return n;
}

/*
 * A grading killed with SIGKILL leaves its staging directory (a copy of
 * the submission) behind; the next grading on the state directory sweeps
 * it, and never a live grading's.
 */
static void test_killed_grading_staging_is_swept(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), dir[PATH_MAX], staging[PATH_MAX + 16], env[PATH_MAX + 32];
	struct bg victim;
	int status, n = 0;

	snprintf(dir, sizeof dir, "%s/state", tmp);
	snprintf(staging, sizeof staging, "%s/staging", dir);
	/* Busy for seconds: its test step spins to the CPU limit. */
	char *slow[] = {"grade", "--json", EXAMPLES_DIR "/c-tap",
			EXAMPLES_DIR "/c-tap/submissions/infinite_loop", NULL};
	bg_start(&victim, tmp, "victim", dir, slow);
	for (int i = 0; i < 200 && (n = count_entries(staging)) < 1; i++) {
		struct timespec ts = {0, 50 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
	assert_int_equal(n, 1);
	struct timespec ts = {0, 500 * 1000 * 1000};
	nanosleep(&ts, NULL);
	assert_int_equal(kill(victim.pid, SIGKILL), 0);
	assert_int_equal(waitpid(victim.pid, &status, 0), victim.pid);
	assert_int_equal(count_entries(staging), 1); /* the debris */

	/* A live grading's staging survives the sweep: start one, let the
	 * next sweep run beside it. */
	bg_start(&victim, tmp, "live", dir, slow);
	for (int i = 0; i < 200 && count_entries(staging) < 2; i++) {
		struct timespec t2 = {0, 50 * 1000 * 1000};
		nanosleep(&t2, NULL);
	}
	snprintf(env, sizeof env, "PROCTOR_STATE_DIR=%s", dir);
	char *extra[] = {env, NULL};
	struct proc_out o;
	char *quick[] = {"grade", "--json", EXAMPLES_DIR "/io-sum",
			 EXAMPLES_DIR "/io-sum/submissions/correct", NULL};
	harness_run(&o, extra, 120, quick);
	assert_int_equal(o.exit_status, 0);
	assert_string_equal(jstr(&o, "status"), "graded");
	proc_out_free(&o);
	json_t *j = bg_wait(&victim, 120, &status);
	assert_int_equal(status, 0);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "timeout");
	json_decref(j);
	/* The dead grading's copy is gone; the live one finished and removed its own. */
	assert_int_equal(count_entries(staging), 0);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/*
 * Waiting for a slot is never the student's fault.  With one slot on the
 * host an I/O-mode grading still gets its verdict (its build, cases and
 * checker each take the slot in turn), also while another proctor holds
 * that slot for a while: the grading waits for it.
 */
static void test_io_mode_grades_with_one_slot_while_another_holds_it(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), dir[PATH_MAX], env[PATH_MAX + 32];
	struct bg holder;
	struct proc_out o;
	int status;

	snprintf(dir, sizeof dir, "%s/state", tmp);
	snprintf(env, sizeof env, "PROCTOR_STATE_DIR=%s", dir);
	char *extra[] = {env, NULL};
	char *grade[] = {"grade", "--json", "--slots", "1", IO_ASSIGNMENT,
			 IO_ASSIGNMENT "/submissions/correct", NULL};
	harness_run(&o, extra, 300, grade);
	if (o.exit_status != 0 || strcmp(jstr(&o, "status"), "graded") != 0 ||
	    jint(&o, "passed") != jint(&o, "total"))
		fail_msg("I/O grading with one slot: exit %d\n%.3000s\n%.2000s", o.exit_status, o.out,
			 o.err);
	proc_out_free(&o);

	/* Every slot busy (one, held by another proctor's 3 s sandbox). */
	char *sleeper[] = {"run", "--json", "--slots", "1", "--", "/bin/sleep", "3", NULL};
	bg_start(&holder, tmp, "holder", dir, sleeper);
	struct timespec ts = {1, 0};
	nanosleep(&ts, NULL);
	harness_run(&o, extra, 300, grade);
	if (o.exit_status != 0 || strcmp(jstr(&o, "status"), "graded") != 0 ||
	    jint(&o, "passed") != jint(&o, "total"))
		fail_msg("I/O grading while the only slot was busy: exit %d\n%.3000s\n%.2000s",
			 o.exit_status, o.out, o.err);
	proc_out_free(&o);
	json_t *j = bg_wait(&holder, 60, &status);
	assert_int_equal(status, 0);
	json_decref(j);
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/* A limit the host cannot grant is refused when the assignment loads,
 * naming the file, line and limit, instead of failing every submission. */
static void test_assignment_limit_the_host_cannot_grant_is_refused(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), cmd[3 * PATH_MAX], yaml[PATH_MAX + 32];
	struct rlimit rl;
	struct proc_out o;

	assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
	/* Root without CAP_SYS_RESOURCE (this kind of host) cannot raise its
	 * hard limit; root with it can, up to fs.nr_open, which is the
	 * parser's own maximum (1048576): then nothing is left to refuse. */
	if (harness_has_cap(CAP_SYS_RESOURCE) || rl.rlim_max >= 1048576) {
		print_message("root can grant every nofile the parser accepts here\n");
		harness_rm_tree(tmp);
		free(tmp);
		skip();
	}
	unsigned long long want = (unsigned long long)rl.rlim_max + 1;
	snprintf(cmd, sizeof cmd, "cp -r '%s' '%s/a'", IO_ASSIGNMENT, tmp);
	assert_int_equal(system(cmd), 0);
	snprintf(yaml, sizeof yaml, "%s/a/assignment.yaml", tmp);
	/* The test step's limits line gains a nofile the host cannot grant. */
	snprintf(cmd, sizeof cmd, "sed -i 's/memory_mb: 64, pids: 8}/memory_mb: 64, pids: 8, nofile: %llu}/' '%s' && grep -q 'nofile: %llu' '%s'",
		 want, yaml, want, yaml);
	assert_int_equal(system(cmd), 0);
	char sub[PATH_MAX];
	snprintf(sub, sizeof sub, "%s/a/submissions/correct", tmp);
	char adir[PATH_MAX];
	snprintf(adir, sizeof adir, "%s/a", tmp);
	char *grade[] = {"grade", "--json", adir, sub, NULL};
	harness_run(&o, NULL, 60, grade);
	assert_int_equal(o.exit_status, 2);
	if (!strstr(o.err, "assignment.yaml:") || !strstr(o.err, "nofile") ||
	    !strstr(o.err, "more than this host can grant"))
		fail_msg("want the file, line and limit named, got: %s", o.err);
	proc_out_free(&o);
	harness_rm_tree(tmp);
	free(tmp);
}

/* ---- submissions and assignments where the helper's uid cannot reach ---- */

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
	char *cmd;
	va_list ap;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		fail_msg("out of memory");
	va_end(ap);
	if (system(cmd) != 0)
		fail_msg("failed: %s", cmd);
	free(cmd);
}

static double jnum(const struct proc_out *o, const char *key)
{
	return json_number_value(json_object_get(o->json, key));
}

/* `proctor grade` must give `status`, and full marks when it is graded. */
static void grade_expect(char *const *extra, const char *assignment, const char *submission,
			 const char *status)
{
	struct proc_out o;
	char *args[] = {"grade", "--json", (char *)assignment, (char *)submission, NULL};

	harness_run(&o, extra, 300, args);
	if (!o.json || strcmp(jstr(&o, "status"), status) != 0 ||
	    (strcmp(status, "graded") == 0 && jnum(&o, "score") != jnum(&o, "max_score")))
		fail_msg("grade %s: exit %d, want %s with full marks\n%.3000s\n%.2000s", submission,
			 o.exit_status, status, o.out, o.err);
	proc_out_free(&o);
}

/*
 * An instructor's files usually sit in a 0700 directory (a home
 * directory, Python's mkdtemp), often with 0600 files, owned by root or by
 * the instructor: the helper's uid can reach none of it by path.  Every
 * way in must still grade: a directory submission, an archive, `proctor
 * class` over a directory of both, and an I/O assignment whose cases are
 * read from there.
 */
static void test_grades_from_0700_dirs_owned_by_root_and_another_user(void **state)
{
	(void)state;
	const unsigned owners[] = {0, 65534};

	for (size_t i = 0; i < sizeof(owners) / sizeof(owners[0]); i++) {
		char *tmp = harness_tmpdir(), home[PATH_MAX], py[PATH_MAX + 8], io[PATH_MAX + 8];
		char sub[PATH_MAX + 8], tgz[PATH_MAX + 16], class_dir[PATH_MAX + 8];
		char out[PATH_MAX + 16], env[PATH_MAX + 32];

		snprintf(home, sizeof home, "%s/home", tmp);
		snprintf(py, sizeof py, "%s/py", home);
		snprintf(io, sizeof io, "%s/io", home);
		snprintf(sub, sizeof sub, "%s/sub", home);
		snprintf(tgz, sizeof tgz, "%s/sub.tar.gz", home);
		snprintf(class_dir, sizeof class_dir, "%s/class", home);
		snprintf(out, sizeof out, "%s/grades.jsonl", tmp);
		snprintf(env, sizeof env, "PROCTOR_STATE_DIR=%s/state", tmp);
		char *extra[] = {env, NULL};
		sh("mkdir '%s' && cp -r '%s' '%s' && cp -r '%s' '%s' && cp -r '%s' '%s' && "
		   "tar -C '%s' -czf '%s' . && mkdir '%s' && cp -r '%s' '%s/alice' && "
		   "cp '%s' '%s/bob.tar.gz' && chmod -R go-rwx '%s' && chown -R %u:%u '%s'",
		   home, PY_ASSIGNMENT, py, IO_ASSIGNMENT, io, PY_CORRECT, sub, PY_CORRECT, tgz,
		   class_dir, PY_CORRECT, class_dir, tgz, class_dir, home, owners[i], owners[i],
		   home);
		print_message("owner %u: %s is 0700, its files 0600\n", owners[i], home);

		grade_expect(extra, py, sub, "graded");
		grade_expect(extra, py, tgz, "graded");
		char io_sub[PATH_MAX + 32];
		snprintf(io_sub, sizeof io_sub, "%s/submissions/correct", io);
		grade_expect(extra, io, io_sub, "graded");

		struct proc_out o;
		char *args[] = {"class", "-j", "1", "--out", out, py, class_dir, NULL};
		harness_run(&o, extra, 300, args);
		if (o.exit_status != 0)
			fail_msg("class from a 0700 dir: exit %d\n%.2000s", o.exit_status, o.err);
		proc_out_free(&o);
		char *text = harness_slurp(out, 1 << 20, NULL);
		assert_non_null(text);
		size_t rows = 0;
		for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			json_error_t je;
			json_t *j = json_loads(line, 0, &je);
			assert_non_null(j);
			const char *st = json_string_value(json_object_get(j, "status"));
			if (!st || strcmp(st, "graded") != 0 ||
			    json_number_value(json_object_get(j, "score")) !=
				json_number_value(json_object_get(j, "max_score")))
				fail_msg("class row not graded with full marks: %s", line);
			rows++;
			json_decref(j);
		}
		assert_int_equal(rows, 2);
		free(text);
		harness_rm_tree(tmp);
		free(tmp);
	}
	harness_assert_clean();
}

/*
 * A symlink swapped into the submission's path after proctor opened it:
 * the grading reads what proctor opened, never what the path names later.
 * fanotify holds proctor's open of the submission directory until the
 * path is a link to a decoy (a submission that does not compile), so the
 * order is certain, not a race the test may lose.
 */
static void test_symlink_swapped_in_after_proctor_opened_the_submission(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), sub[PATH_MAX + 8], orig[PATH_MAX + 16], env[PATH_MAX + 32];
	int report;
	struct stat st;
	pid_t listener;

	snprintf(sub, sizeof sub, "%s/sub", tmp);
	snprintf(orig, sizeof orig, "%s/sub.orig", tmp);
	snprintf(env, sizeof env, "PROCTOR_STATE_DIR=%s/state", tmp);
	sh("cp -r '%s' '%s' && cp -r '%s/submissions/syntax_error' '%s/decoy'", PY_CORRECT, sub,
	   PY_ASSIGNMENT, tmp);
	/* Every open of the original directory is allowed; before the first,
	 * the decoy is put at its path. */
	listener = harness_swap_on_first_open(sub, FAN_ONDIR, sub, orig, "decoy", &report);
	if (listener < 0) {
		print_message("no fanotify permission events here (%s)\n", strerror(errno));
		harness_rm_tree(tmp);
		free(tmp);
		if (harness_can_skip())
			skip();
		fail_msg("fanotify is needed to order the swap (PROCTOR_MUST_WORK=1)");
	}
	char *extra[] = {env, NULL};
	grade_expect(extra, PY_ASSIGNMENT, sub, "graded");
	assert_true(harness_swap_done(listener, report));
	/* The path did lead to the decoy while the grading ran. */
	assert_int_equal(lstat(sub, &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	harness_rm_tree(tmp);
	free(tmp);
	harness_assert_clean();
}

/* The intake helper has no way to be told a path: a request naming one,
 * without the submission's descriptor (fd 4), is refused and nothing is
 * written. */
static void test_intake_helper_reads_no_path(void **state)
{
	(void)state;
	char *tmp = harness_tmpdir(), helper[PATH_MAX], dest[PATH_MAX + 8], req[2 * PATH_MAX];
	char answer[4096] = "";
	int in[2], out[2], status;
	size_t len = 0;
	pid_t pid;

	snprintf(helper, sizeof helper, "%s", harness_proctor());
	*strrchr(helper, '/') = '\0';
	strncat(helper, "/proctor-helper", sizeof helper - strlen(helper) - 1);
	snprintf(dest, sizeof dest, "%s/dest", tmp);
	assert_int_equal(mkdir(dest, 0700), 0);
	snprintf(req, sizeof req,
		 "{\"path\": \"%s\", \"globs\": [\"solution.py\"], \"required\": [], "
		 "\"max_bytes\": 65536, \"max_entries\": 100, \"max_expanded\": 1048576}",
		 PY_CORRECT);
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int d = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (d < 0 || dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(d, 3) < 0)
			_exit(127);
		close(4);
		execl(helper, "proctor-helper", "intake", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	assert_int_equal(write(in[1], req, strlen(req)), (ssize_t)strlen(req));
	close(in[1]);
	for (ssize_t n; (n = read(out[0], answer + len, sizeof answer - 1 - len)) > 0;)
		len += (size_t)n;
	close(out[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	answer[len] = '\0';
	/* No descriptor is proctor's mistake, not the input's: a "failure". */
	if (!strstr(answer, "\"failure\"") || !strstr(answer, "descriptor"))
		fail_msg("want a failure about the missing descriptor, got: %s", answer);
	assert_int_equal(count_entries(dest), 0);
	harness_rm_tree(tmp);
	free(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(test_every_command_works_on_a_fresh_state_dir,
				   harness_setup_root),
	    cmocka_unit_test_setup(test_state_dir_modes_are_checked, harness_setup_root),
	    cmocka_unit_test_setup(test_two_state_dirs_side_by_side, harness_setup_root),
	    cmocka_unit_test_setup(test_killed_grading_staging_is_swept, harness_setup_root),
	    cmocka_unit_test_setup(test_io_mode_grades_with_one_slot_while_another_holds_it,
				   harness_setup_root),
	    cmocka_unit_test_setup(test_assignment_limit_the_host_cannot_grant_is_refused,
				   harness_setup_root),
	    cmocka_unit_test_setup(test_grades_from_0700_dirs_owned_by_root_and_another_user,
				   harness_setup_root),
	    cmocka_unit_test_setup(test_symlink_swapped_in_after_proctor_opened_the_submission,
				   harness_setup_root),
	    cmocka_unit_test_setup(test_intake_helper_reads_no_path, harness_setup_root),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
