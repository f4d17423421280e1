/* The jail's credentials and rlimits: what the program runs as and with. */
#include "jail/creds.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rawsys.h"

static int set_limit(int resource, const char *name, rlim_t soft, rlim_t hard, struct err *e)
{
	struct rlimit rl = {.rlim_cur = soft, .rlim_max = hard};

	if (setrlimit(resource, &rl) < 0)
		return err_set(e, errno, "setrlimit %s", name);
	return 0;
}

int creds_set_rlimits(const struct limits *l, struct err *e)
{
	/* CPU: the cgroup total is the real limit (jail.c samples it); this
	 * per-process backstop only fires if the supervisor were stalled. */
	rlim_t cpu_s = (rlim_t)(l->cpu_ms / 1000 + 2);

	if (set_limit(RLIMIT_CORE, "core", 0, 0, e) < 0 ||
	    set_limit(RLIMIT_FSIZE, "fsize", l->fsize_bytes, l->fsize_bytes, e) < 0 ||
	    set_limit(RLIMIT_NOFILE, "nofile", l->nofile, l->nofile, e) < 0 ||
	    set_limit(RLIMIT_CPU, "cpu", cpu_s, cpu_s + 1, e) < 0 ||
	    /* Counted per uid host-wide, which is why each slot has its own
	     * uid.  The pids cgroup is the real limit and must trip first (its
	     * pids.events is how the verdict learns of it), so this backstop
	     * sits above it. */
	    set_limit(RLIMIT_NPROC, "nproc", l->pids + 16, l->pids + 16, e) < 0 ||
	    set_limit(RLIMIT_MEMLOCK, "memlock", 0, 0, e) < 0 ||
	    set_limit(RLIMIT_MSGQUEUE, "msgqueue", 0, 0, e) < 0)
		return -1;
	return 0;
}

int creds_drop_bounding(struct err *e)
{
	int cap;
	long r;

	/* SECURITY: clear the bounding set while we still hold CAP_SETPCAP, so
	 * no execve can ever regain a capability, and the ambient set.  The
	 * program's process shares init's errno while init builds the root
	 * (rawsys.h): every decision is made from the value the kernel
	 * returned.  The kernel's capabilities end at the first that
	 * PR_CAPBSET_READ calls invalid (cap_last_cap, without /proc). */
	for (cap = 0; cap < 64; cap++) {
		r = RAW2(SYS_prctl, PR_CAPBSET_READ, cap);
		if (r == -EINVAL)
			break;
		if (r < 0)
			return err_set(e, (int)-r, "read capability %d of the bounding set", cap);
		if (r == 1 && (r = RAW2(SYS_prctl, PR_CAPBSET_DROP, cap)) < 0)
			return err_set(e, (int)-r, "drop capability %d from the bounding set", cap);
	}
	if (cap <= CAP_SYS_ADMIN)
		return err_set(e, 0, "the bounding set ends at capability %d: not a kernel this runs on",
			       cap);
	r = RAW5(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
	if (r < 0 && r != -EINVAL)
		return err_set(e, (int)-r, "clear ambient capabilities");
	return 0;
}

int creds_drop(uid_t uid, gid_t gid, struct err *e)
{
	/* SECURITY: the bounding and ambient sets must be empty already
	 * (creds_drop_bounding): checked, not assumed. */
	if (prctl(PR_CAPBSET_READ, CAP_SETUID, 0, 0, 0) != 0 ||
	    prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0) != 0)
		return err_set(e, 0, "the bounding set was not cleared before dropping to uid %u",
			       (unsigned)uid);
	/* SECURITY: groups first, while we are still root; then gid, then uid.
	 * Changing all three uids away from 0 clears the permitted and
	 * effective capability sets (no SECBIT_KEEP_CAPS). */
	if (setgroups(1, &gid) < 0)
		return err_set(e, errno, "setgroups");
	if (setresgid(gid, gid, gid) < 0)
		return err_set(e, errno, "setresgid %u", (unsigned)gid);
	if (setresuid(uid, uid, uid) < 0)
		return err_set(e, errno, "setresuid %u", (unsigned)uid);
	/* SECURITY: setuid binaries and file capabilities no longer elevate. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return err_set(e, errno, "set no_new_privs");
	return 0;
}
