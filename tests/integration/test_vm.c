/*
 * The microVM backend end to end: `proctor run --isolation vm` on a small
 * image built here, with the jail's hostile cases (secret readers, network,
 * a persister followed by a checker), guest freshness after a restore
 * (random bytes, clock), and bad input (no image, an image without a guest
 * kernel, QEMU missing, a guest that dies) -- always a clear error and
 * nothing left behind.  Every limit's verdict is checked by test_parity.c,
 * which runs the same table on the jail and here.
 *
 * The group setup builds images/small.yaml into $PROCTOR_STATE_DIR (a state
 * directory of this suite's own, see tests/meson.build) unless an image is
 * already there, and boots it once (which builds the snapshot).  QEMU runs
 * under TCG where /dev/kvm is missing; without QEMU or root the tests skip,
 * unless PROCTOR_MUST_WORK=1.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"

#define RUN_TIMEOUT_S	300

static char image_pin[64];
static bool ready;
static char setup_why[4096];

#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

static void proctor(struct proc_out *o, char *const *env, int timeout_s, const char *const *args)
{
	const char *argv[64];
	size_t n = 0;

	for (size_t i = 0; args[i]; i++) {
		assert_true(n < 60);
		argv[n++] = args[i];
	}
	argv[n] = NULL;
	harness_run(o, env, timeout_s, (char *const *)argv);
}

/* `proctor run --json --isolation vm --image PIN OPTS --put probe -- ./probe ARGS`. */
static void run_vm(struct proc_out *o, const char *const *opts, const char *const *pargs)
{
	const char *argv[96];
	size_t n = 0;
	char put[4200];

	snprintf(put, sizeof(put), "%s:probe", harness_probe());
	argv[n++] = "run";
	argv[n++] = "--json";
	argv[n++] = "--isolation";
	argv[n++] = "vm";
	argv[n++] = "--image";
	argv[n++] = image_pin;
	for (size_t i = 0; opts && opts[i]; i++)
		argv[n++] = opts[i];
	if (pargs && strcmp(pargs[0], "./probe") == 0) {
		argv[n++] = "--put";
		argv[n++] = put;
	}
	argv[n++] = "--";
	for (size_t i = 0; pargs && pargs[i]; i++) {
		assert_true(n < 94);
		argv[n++] = pargs[i];
	}
	argv[n] = NULL;
	harness_run(o, NULL, RUN_TIMEOUT_S, (char *const *)argv);
	if (!o->json)
		fail_msg("proctor printed no JSON (exit %d); stderr:\n%s", o->exit_status, o->err);
}

static void expect(const struct proc_out *o, const char *status, const char *limit)
{
	const char *got = jstr(o, "status");
	if (strcmp(got, status) != 0)
		fail_msg("status %s, want %s; result: %s\nstderr: %s", got, status, o->out, o->err);
	if (limit && !jlimit_hit(o, limit))
		fail_msg("limits_hit lacks %s; result: %s", limit, o->out);
}

static bool out_has(const struct proc_out *o, const char *needle)
{
	const char *s = jstr(o, "stdout");
	return strstr(s, needle) != NULL;
}

/* ---- group setup: an image with a guest kernel, booted once ------------------- */

static int group_setup(void **state)
{
	struct proc_out o = {0};

	(void)state;
	if (harness_vm_image(IMAGES_DIR "/small.yaml", "small", image_pin, sizeof(image_pin),
			     setup_why, sizeof(setup_why)) < 0)
		return 0;
	/* The first VM builds the snapshot. */
	run_vm(&o, NULL, L("/bin/true"));
	if (o.exit_status != 0) {
		snprintf(setup_why, sizeof(setup_why), "the first VM failed (exit %d): %.3000s",
			 o.exit_status, o.err);
		proc_out_free(&o);
		return 0;
	}
	proc_out_free(&o);
	ready = true;
	return 0;
}

static int clean_after(void **state)
{
	char path[4200];
	struct stat st;

	(void)state;
	harness_assert_clean();
	/* Nothing of any VM's run directory survives its sandbox. */
	snprintf(path, sizeof(path), "%s/vm/run", harness_state_dir());
	for (int i = 0; i < 64; i++) {
		char p[4300];
		snprintf(p, sizeof(p), "%s/%d", path, i);
		if (stat(p, &st) == 0)
			fail_msg("%s is left behind", p);
	}
	return 0;
}

/* ---- tests -------------------------------------------------------------------- */

static void test_vm_runs_a_program_in_the_guest(void **state)
{
	struct proc_out o = {0};

	(void)state;
	harness_require(ready, "the microVM", setup_why);
	run_vm(&o, NULL, L("/bin/sh", "-c", "echo hello; uname -r; echo err >&2; exit 3"));
	expect(&o, "nonzero_exit", NULL);
	assert_int_equal(jint(&o, "exit_code"), 3);
	assert_true(out_has(&o, "hello\n"));
	assert_non_null(strstr(jstr(&o, "stderr"), "err\n"));
	/* Its own kernel: Debian's cloud kernel, not the host's. */
	assert_true(out_has(&o, "cloud-amd64"));
	assert_int_equal(o.exit_status, 1);
	proc_out_free(&o);
}

static void test_vm_secrets_network_and_privileges(void **state)
{
	const struct {
		const char *const *args;
		const char *want;
	} cases[] = {
	    {L("./probe", "readfile", "/etc/shadow"), "errno=EACCES"},
	    {L("./probe", "readfile", "/proc/1/environ"), "errno=ENOENT"},
	    {L("./probe", "connect", "127.0.0.1", "80"), "errno=ENETUNREACH"},
	    {L("./probe", "connect", "192.0.2.1", "80"), "errno=ENETUNREACH"},
	    {L("./probe", "whoami"), "uid=1000 gid=1000"},
	    {L("./probe", "mount"), "errno=EPERM"},
	    {L("./probe", "unshare"), "unshare=EPERM"},
	    {L("./probe", "ps"), "count=1"},
	};
	char host_secret[4200];

	(void)state;
	harness_require(ready, "the microVM", setup_why);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proc_out o = {0};
		run_vm(&o, L("--wall", "30"), cases[i].args);
		expect(&o, "ok", NULL);
		if (!out_has(&o, cases[i].want))
			fail_msg("%s %s: want '%s' in: %s", cases[i].args[1],
				 cases[i].args[2] ? cases[i].args[2] : "", cases[i].want, o.out);
		proc_out_free(&o);
	}
	/* A host file is simply not there: the guest has its own tree. */
	snprintf(host_secret, sizeof(host_secret), "%s/vm-test-secret", harness_state_dir());
	FILE *f = fopen(host_secret, "w");
	assert_non_null(f);
	fputs("ADV-CANARY-host-file\n", f);
	fclose(f);
	struct proc_out o = {0};
	run_vm(&o, NULL, L("./probe", "readfile", host_secret));
	unlink(host_secret);
	expect(&o, "ok", NULL);
	assert_true(out_has(&o, "errno=ENOENT"));
	proc_out_free(&o);
}

static void test_vm_environment_is_only_the_fixed_one(void **state)
{
	struct proc_out o = {0};
	char *env[] = {(char *)"PROCTOR_TEST_CANARY=ADV-CANARY-env", NULL};
	char put[4200];

	(void)state;
	harness_require(ready, "the microVM", setup_why);
	snprintf(put, sizeof(put), "%s:probe", harness_probe());
	const char *argv[] = {"run",   "--json", "--isolation", "vm",	   "--image", image_pin,
			      "--put", put,	 "--",		"./probe", "environ", NULL};
	harness_run(&o, env, RUN_TIMEOUT_S, (char *const *)argv);
	expect(&o, "ok", NULL);
	if (strstr(o.out, "ADV-CANARY") || !out_has(&o, "env HOME=/work") ||
	    !out_has(&o, "env PATH="))
		fail_msg("environment: %s", o.out);
	proc_out_free(&o);
}

static void test_vm_persister_leaves_nothing_for_the_next(void **state)
{
	struct proc_out o = {0};

	(void)state;
	harness_require(ready, "the microVM", setup_why);
	run_vm(&o, L("--wall", "30"),
	       L("/bin/sh", "-c",
		 "echo planted > /tmp/leftover; echo planted > /work/leftover; "
		 "(sleep 1000 &) ; echo done"));
	expect(&o, "ok", NULL);
	proc_out_free(&o);
	clean_after(NULL);
	run_vm(&o, NULL,
	       L("/bin/sh", "-c",
		 "ls /tmp/leftover /work/leftover 2>&1; ps -e 2>/dev/null | grep -c sleep; true"));
	expect(&o, "ok", NULL);
	if (strstr(jstr(&o, "stdout"), "planted") || !out_has(&o, "No such file"))
		fail_msg("the checker saw the persister: %s", o.out);
	proc_out_free(&o);
}

static void test_vm_restored_guests_get_fresh_random_and_clock(void **state)
{
	char first[256] = "";
	const char *const cmd[] = {"/bin/sh", "-c",
				   "od -An -tx1 -N32 /dev/urandom | tr -d ' \\n'; "
				   "echo; date +%s",
				   NULL};

	(void)state;
	harness_require(ready, "the microVM", setup_why);
	for (int i = 0; i < 2; i++) {
		struct proc_out o = {0};
		run_vm(&o, NULL, cmd);
		expect(&o, "ok", NULL);
		const char *s = jstr(&o, "stdout");
		const char *nl = strchr(s, '\n');
		assert_non_null(nl);
		long long t = atoll(nl + 1);
		long long now = (long long)time(NULL);
		if (t < now - 120 || t > now + 120)
			fail_msg("guest clock %lld, host %lld", t, now);
		if (i == 0)
			snprintf(first, sizeof(first), "%.*s", (int)(nl - s), s);
		else if (strncmp(first, s, (size_t)(nl - s)) == 0)
			fail_msg("two VMs from one snapshot read the same random bytes: %s", first);
		assert_true(strlen(first) == 64);
		proc_out_free(&o);
	}
}

static void test_vm_files_in_and_out(void **state)
{
	struct proc_out o = {0};
	char *dir = harness_tmpdir(), in[4200], out[4200], put[4300], get[4300];
	FILE *f;

	(void)state;
	harness_require(ready, "the microVM", setup_why);
	snprintf(in, sizeof(in), "%s/in.txt", dir);
	snprintf(out, sizeof(out), "%s/out.txt", dir);
	f = fopen(in, "w");
	assert_non_null(f);
	for (int i = 0; i < 100000; i++)
		fprintf(f, "line %d\n", i);
	fclose(f);
	snprintf(put, sizeof(put), "%s:data/in.txt", in);
	snprintf(get, sizeof(get), "/work/out.txt:%s", out);
	const char *const opts[] = {"--put", put, "--get", get, NULL};
	run_vm(&o, opts,
	       L("/bin/sh", "-c", "wc -l < data/in.txt > out.txt; cat data/in.txt | md5sum"));
	expect(&o, "ok", NULL);
	f = fopen(out, "r");
	assert_non_null(f);
	char buf[64] = "";
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "100000\n");
	proc_out_free(&o);
	free(dir);
}

/* Every snapshot file of the suite's state directory ending in `suffix`. */
static void damage_snapshots(const char *suffix, bool truncate_only)
{
	char dir[4200];
	DIR *d;
	struct dirent *de;

	snprintf(dir, sizeof(dir), "%s/vm/snapshots", harness_state_dir());
	d = opendir(dir);
	assert_non_null(d);
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name), k = strlen(suffix);
		if (n <= k || strcmp(de->d_name + n - k, suffix) != 0)
			continue;
		char path[4500];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (truncate_only)
			assert_int_equal(truncate(path, 100), 0);
		else
			assert_int_equal(unlink(path), 0);
	}
	closedir(d);
}

static void test_vm_broken_snapshot_is_rebuilt(void **state)
{
	struct proc_out o = {0};

	(void)state;
	harness_require(ready, "the microVM", setup_why);
	/* A stale snapshot of the same image and shape (another key): the next
	 * snapshot built removes it. */
	char stale[4300], img_dir[4200];
	const char *ver = strchr(image_pin, '@') + 1;
	snprintf(img_dir, sizeof(img_dir), "%s/images/small/%s", harness_state_dir(), ver);
	static const char *const ext[] = {".json", ".state", ".state.ram", ".lock"};
	for (size_t i = 0; i < 4; i++) {
		snprintf(stale, sizeof(stale), "%s/vm/snapshots/%040d%s", harness_state_dir(), 0,
			 ext[i]);
		FILE *f = fopen(stale, "w");
		assert_non_null(f);
		if (i == 0)
			fprintf(f, "{\"image\": \"%s\", \"ram_mib\": 512}\n", img_dir);
		fclose(f);
	}
	/* A truncated device state, then a missing RAM file: each time the
	 * snapshot is thrown away and built again, and the run still works. */
	damage_snapshots(".state", true);
	run_vm(&o, NULL, L("/bin/echo", "after a truncated state"));
	expect(&o, "ok", NULL);
	proc_out_free(&o);
	snprintf(stale, sizeof(stale), "%s/vm/snapshots/%040d.state.ram", harness_state_dir(), 0);
	if (access(stale, F_OK) == 0)
		fail_msg("the stale snapshot %s was not removed", stale);
	clean_after(NULL);
	damage_snapshots(".state.ram", false);
	run_vm(&o, NULL, L("/bin/echo", "after a missing RAM file"));
	expect(&o, "ok", NULL);
	proc_out_free(&o);
}

static void test_vm_class_grades_in_microvms(void **state)
{
	struct proc_out o = {0};
	char *dir = harness_tmpdir(), cmd[16384], out[4200];
	FILE *f;
	char line[1024];
	int rows = 0, full = 0;

	(void)state;
	harness_require(ready, "the microVM", setup_why);
	/* The Python example on the image, four submissions, two workers that
	 * each keep a pre-started VM: every result as EXPECTED, nothing left. */
	snprintf(cmd, sizeof(cmd),
		 "cp -r %s/python-pytest %s/a && echo 'image: %s' >> %s/a/assignment.yaml && "
		 "mkdir %s/subs && cp -r %s/python-pytest/submissions/correct %s/subs/c1 && "
		 "cp -r %s/python-pytest/submissions/correct %s/subs/c2 && "
		 "cp -r %s/python-pytest/submissions/partial %s/subs/p1 && "
		 "cp -r %s/python-pytest/submissions/syntax_error %s/subs/s1 && chmod -R a+rX %s",
		 EXAMPLES_DIR, dir, image_pin, dir, dir, EXAMPLES_DIR, dir, EXAMPLES_DIR, dir,
		 EXAMPLES_DIR, dir, EXAMPLES_DIR, dir, dir);
	assert_int_equal(system(cmd), 0);
	char a[4300], subs[4300];
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(subs, sizeof(subs), "%s/subs", dir);
	snprintf(out, sizeof(out), "%s/out.csv", dir);
	proctor(&o, NULL, 1200,
		L("class", "-j", "2", "--isolation", "vm", "--state-dir", harness_state_dir(),
		  "--out", out, a, subs));
	if (o.exit_status != 0)
		fail_msg("class exited %d: %s", o.exit_status, o.err);
	f = fopen(out, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "submission", 10) == 0)
			continue;
		rows++;
		if ((strncmp(line, "\"c1\",", 5) == 0 || strncmp(line, "\"c2\",", 5) == 0) &&
		    strstr(line, ",\"graded\","))
			full++;
		if (strncmp(line, "\"s1\",", 5) == 0 && !strstr(line, "compile_error"))
			fail_msg("syntax_error: %s", line);
	}
	fclose(f);
	assert_int_equal(rows, 4);
	assert_int_equal(full, 2);
	proc_out_free(&o);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	free(dir);
}

static void test_vm_bad_input_is_a_clear_error(void **state)
{
	struct proc_out o = {0};

	(void)state;
	harness_require(ready, "the microVM", setup_why);
	/* No such image: a usage error. */
	proctor(&o, NULL, 60, L("run", "--isolation", "vm", "--image", "small@999", "--", "true"));
	assert_int_equal(o.exit_status, 2);
	assert_non_null(strstr(o.err, "small@999"));
	proc_out_free(&o);
	/* The host's own tree cannot boot. */
	proctor(&o, NULL, 60, L("run", "--json", "--isolation", "vm", "--", "true"));
	assert_int_equal(o.exit_status, 3);
	assert_non_null(strstr(o.out, "needs an image"));
	proc_out_free(&o);
	/* QEMU missing. */
	char *env[] = {(char *)"PROCTOR_QEMU=/nonexistent/qemu-system-x86_64", NULL};
	const char *argv[] = {"run", "--isolation", "vm", "--image", image_pin, "--", "true", NULL};
	harness_run(&o, env, 60, (char *const *)argv);
	assert_int_equal(o.exit_status, 3);
	if (!strstr(o.err, "QEMU") && !strstr(o.out, "QEMU"))
		fail_msg("no word of QEMU: %s %s", o.out, o.err);
	proc_out_free(&o);
}

/* The QEMU of a running VM: a qemu-system process running as a slot uid
 * (the suite runs alone, so it is this test's). */
static pid_t find_qemu(void)
{
	for (int tries = 0; tries < 600; tries++) {
		DIR *d = opendir("/proc");
		struct dirent *de;
		while (d && (de = readdir(d))) {
			char path[300], buf[4096];
			if (de->d_name[0] < '1' || de->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
			FILE *f = fopen(path, "re");
			if (!f)
				continue;
			size_t n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
			buf[n] = '\0';
			char *uid = strstr(buf, "\nUid:");
			if (strncmp(buf, "Name:\tqemu-system-x86", 21) == 0 && uid &&
			    strtoul(uid + 5, NULL, 10) >= 1600000000ul) {
				pid_t pid = (pid_t)atoi(de->d_name);
				closedir(d);
				return pid;
			}
		}
		if (d)
			closedir(d);
		usleep(50000);
	}
	return 0;
}

static void test_vm_guest_that_dies_is_proctors_error(void **state)
{
	struct proc_out o = {0};
	pid_t killer;

	(void)state;
	harness_require(ready, "the microVM", setup_why);
	/* While the program sleeps, the VM dies (QEMU killed from outside, as
	 * an OOM kill or a crash of QEMU would): Proctor's error, not a verdict
	 * on the program, and nothing left behind. */
	killer = fork();
	assert_true(killer >= 0);
	if (killer == 0) {
		pid_t q = find_qemu();
		sleep(3);
		if (q > 0)
			kill(q, SIGKILL);
		_exit(q > 0 ? 0 : 1);
	}
	run_vm(&o, L("--wall", "60"), L("/bin/sleep", "30"));
	int st;
	waitpid(killer, &st, 0);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	expect(&o, "error", NULL);
	assert_int_equal(o.exit_status, 3);
	if (!strstr(o.out, "QEMU exited") && !strstr(o.out, "closed the channel"))
		fail_msg("no clear message: %s", o.out);
	proc_out_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_vm_runs_a_program_in_the_guest, clean_after),
	    cmocka_unit_test_teardown(test_vm_secrets_network_and_privileges, clean_after),
	    cmocka_unit_test_teardown(test_vm_environment_is_only_the_fixed_one, clean_after),
	    cmocka_unit_test_teardown(test_vm_persister_leaves_nothing_for_the_next, clean_after),
	    cmocka_unit_test_teardown(test_vm_restored_guests_get_fresh_random_and_clock,
				      clean_after),
	    cmocka_unit_test_teardown(test_vm_files_in_and_out, clean_after),
	    cmocka_unit_test_teardown(test_vm_broken_snapshot_is_rebuilt, clean_after),
	    cmocka_unit_test_teardown(test_vm_class_grades_in_microvms, clean_after),
	    cmocka_unit_test_teardown(test_vm_bad_input_is_a_clear_error, clean_after),
	    cmocka_unit_test_teardown(test_vm_guest_that_dies_is_proctors_error, clean_after),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}
