/* Integration-test harness: run the real proctor binary and check what it left behind. */
#ifndef PROCTOR_TEST_HARNESS_H
#define PROCTOR_TEST_HARNESS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

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

/* Make a fresh temporary directory for a test; returns a malloc'd path. */
char *harness_tmpdir(void);

/* Whether the suite may skip tests that need root and namespaces; false
 * when PROCTOR_MUST_WORK=1 (CI), where a missing feature is a failure. */
bool harness_can_skip(void);

/* Shared by the corpus suites: a file's first `cap` bytes, NUL-terminated
 * (NULL if it cannot be read; ret_len may be NULL); a string with blanks
 * and line ends trimmed in place; a whole decimal in [lo, hi]; monotonic
 * seconds. */
char *harness_slurp(const char *path, size_t cap, size_t *ret_len);
char *harness_trim(char *s);
bool harness_parse_int(const char *s, long lo, long hi, long *ret);
double harness_now_s(void);

/*
 * For the microVM suites: the pin ("small@3") of the first image called
 * `name` in the state directory (PROCTOR_STATE_DIR) that has a guest
 * kernel, building `recipe` there first when there is none (minutes).
 * -1 with the reason in `why` when it cannot work here: not root, no QEMU,
 * the build failed.
 */
int harness_vm_image(const char *recipe, const char *name, char *pin, size_t cap, char *why,
		     size_t why_cap);

#endif
