/* Test harness: run the real proctor binary, check what it left behind; helpers for every suite. */
#ifndef PROCTOR_TEST_HARNESS_H
#define PROCTOR_TEST_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* What one `proctor` invocation produced.  Free with proc_out_free(). */
struct proc_out {
	int exit_status; /* exit code of proctor itself; 128+N if killed by signal N */
	char *out;	 /* its stdout, NUL-terminated (may contain earlier NULs) */
	size_t out_len;
	char *err; /* its stderr, NUL-terminated */
	size_t err_len;
	json_t *json; /* stdout parsed as JSON when it is JSON, else NULL */
};

/* Path of the proctor binary ($PROCTOR) and of the static probe ($PROBE). */
const char *harness_proctor(void);
const char *harness_probe(void);

/*
 * Run `$PROCTOR args...` (args NULL-terminated, not including the binary),
 * with the current environment plus `extra_env` (NULL-terminated
 * "NAME=VALUE" list, may be NULL), stdin from /dev/null, capture stdout
 * and stderr fully, wait, and parse stdout as JSON if it parses.
 * Aborts the test (cmocka fail) if proctor itself cannot be spawned or does
 * not finish within `timeout_s` seconds (then it is killed by pid).
 */
void harness_run(struct proc_out *o, char *const *extra_env, int timeout_s, char *const *args);
void proc_out_free(struct proc_out *o);

/* Convenience accessors on o->json; fail the test if the key is absent. */
const char *jstr(const struct proc_out *o, const char *key);
long long jint(const struct proc_out *o, const char *key); /* null -> -1 */
bool jbool(const struct proc_out *o, const char *key);
bool jlimit_hit(const struct proc_out *o, const char *limit); /* in limits_hit[] */

/*
 * Assert that no sandbox is left: no process whose uid is in the slot uid
 * range [1600000000, 1600000000+256), no mount below the state dir
 * (PROCTOR_STATE_DIR or /var/lib/proctor) in /proc/self/mountinfo, and
 * below every /sys/fs/cgroup/<controller>/proctor and
 * /sys/fs/cgroup/unified/proctor only directories named slotN or helperN,
 * each with no child group and an empty cgroup.procs.  Waits up to 2 s for the
 * kernel to finish tearing down.  Fails the test with the leftover named.
 */
void harness_assert_clean(void);

/* Fail the test if a mount is left below `dir` (/proc/self/mountinfo): a
 * state directory other than the one harness_assert_clean() checks. */
void harness_assert_no_mount_below(const char *dir);

/* Make a fresh temporary directory for a test; returns a malloc'd path. */
char *harness_tmpdir(void);

/* Whether the suite may skip tests that need root and namespaces; false
 * when PROCTOR_MUST_WORK=1 (CI), where a missing feature is a failure. */
bool harness_can_skip(void);

/* Go on when `ok`; else skip the calling test saying "what: why", or fail
 * it where harness_can_skip() says that `what` must work. */
void harness_require(bool ok, const char *what, const char *why);
/* harness_require() of root for `what` ("the jail", "building an image"). */
void harness_require_root(const char *what);
/* The same as a cmocka setup function, for tests that all need root. */
int harness_setup_root(void **state);
/* Whether this process has capability `cap` (CAP_SYS_RESOURCE, ...) in
 * its effective set. */
bool harness_has_cap(int cap);

/*
 * Start `$PROCTOR args...` (args NULL-terminated) in the background with
 * stdin from /dev/null and stdout and stderr into the files `out` and `err`;
 * fails the test if it cannot be spawned.  harness_wait_child() waits for
 * such a child: its exit status, 128+N if killed by signal N; after
 * timeout_ms it is killed (by pid) and the test fails.
 */
pid_t harness_spawn(const char *const *args, const char *out, const char *err);
int harness_wait_child(pid_t pid, long long timeout_ms);

/* Shared by the corpus suites: a file's first `cap` bytes, NUL-terminated
 * (NULL if it cannot be read; ret_len may be NULL); a string with blanks
 * and line ends trimmed in place; a whole decimal in [lo, hi]; monotonic
 * seconds. */
char *harness_slurp(const char *path, size_t cap, size_t *ret_len);
char *harness_trim(char *s);
/* Whether s is well-formed UTF-8: no overlong form, surrogate, code point
 * above U+10FFFF or cut character. */
bool harness_valid_utf8(const char *s);
bool harness_parse_int(const char *s, long lo, long hi, long *ret);
double harness_now_s(void);

/* The monotonic clock in milliseconds; a sleep that resumes after signals. */
long long harness_now_ms(void);
void harness_sleep_ms(long ms);

/* $PROCTOR_STATE_DIR, or the default /var/lib/proctor. */
const char *harness_state_dir(void);

/* Files for the tests (every failure fails the test): "a/b" into a
 * PATH_MAX buffer; the file dir/rel (rel alone when dir is NULL) created or
 * truncated with data or text; a whole regular file, NUL-terminated and
 * malloc'd (ret_len may be NULL). */
void harness_path_join(char *buf, const char *a, const char *b);
void harness_write(const char *dir, const char *rel, const void *data, size_t len);
void harness_write_text(const char *dir, const char *rel, const char *text);
char *harness_read(const char *path, size_t *ret_len);

/* Remove a file or directory tree, following no symlink; what cannot be
 * removed is reported, not failed (a test's temporary tree). */
void harness_rm_tree(const char *path);

/*
 * For the microVM suites: the pin ("small@3") of the first image called
 * `name` in the state directory (PROCTOR_STATE_DIR) that has a guest
 * kernel, building `recipe` there first when there is none (minutes).
 * -1 with the reason in `why` when it cannot work here: not root, no QEMU,
 * the build failed.
 */
int harness_vm_image(const char *recipe, const char *name, char *pin, size_t cap, char *why,
		     size_t why_cap);

/*
 * A swap timed by fanotify, so a test of a swap race is never a race the
 * test may lose: a child holds the first open under `watch` (FAN_OPEN_PERM,
 * plus `mark_flags`: FAN_ONDIR for the directory itself, FAN_EVENT_ON_CHILD
 * for entries in it) until it has renamed `path` to `aside` and made `path`
 * a symlink to `target`, then allows every open.  Returns the listener's
 * pid and, in *ret_report, the read end of its report; -1 with errno set
 * where fanotify permission events are not available.
 */
pid_t harness_swap_on_first_open(const char *watch, unsigned mark_flags, const char *path,
				 const char *aside, const char *target, int *ret_report);

/* Stop the listener; whether it made the swap. */
bool harness_swap_done(pid_t listener, int report);

#endif
