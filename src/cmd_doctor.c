/* `proctor doctor`: what this host supports, which isolation `auto` uses, the VM's slowdown. */
#include "cmd_doctor.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "cli.h"
#include "grade/grade.h"
#include "host/cgroup.h"
#include "image/image.h"
#include "sandbox.h"
#include "util.h"
#include "vm/vm.h"

struct check {
	const char *name;
	const char *state; /* "ok", "missing" or "info" */
	char detail[512];
};

#define MAX_CHECKS 24

static void add(struct check *c, size_t *n, const char *name, const char *state, const char *detail)
{
	if (*n >= MAX_CHECKS)
		return;
	c[*n].name = name;
	c[*n].state = state;
	snprintf(c[*n].detail, sizeof(c[*n].detail), "%s", detail);
	(*n)++;
}

/* ---- --measure-vm: the microVM's slowdown factor ---- */

/* A CPU-bound shell loop: dash is in every Debian image. */
static int timed_loop(const struct sandbox_ops *ops, const struct sandbox_options *so,
		      uint64_t *ret_ms, struct err *e)
{
	struct sandbox *sb;
	struct run_result r;
	char *argv[] = {(char *)"/bin/sh", (char *)"-c",
			(char *)"i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done", NULL};
	struct run_spec spec = {.argv = argv, .stdin_fd = -1};
	int rc = -1;

	limits_default(&spec.limits);
	spec.limits.cpu_ms = spec.limits.wall_ms = 300000;
	if (run_result_init(&r, 4096) < 0)
		return err_set(e, ENOMEM, "measure");
	if (ops->create(so, &sb, e) < 0)
		goto out;
	if (sandbox_run(sb, &spec, &r, e) == 0) {
		if (r.status != RUN_OK)
			err_set(e, 0, "the measuring loop ended with status %s under %s",
				run_status_name(r.status), ops->name);
		else {
			*ret_ms = r.cpu_ms ? r.cpu_ms : 1;
			rc = 0;
		}
	}
	sandbox_destroy(sb);
out:
	run_result_free(&r);
	return rc;
}

/* Measure the factor (a CPU-bound program natively in the jail and in a VM,
 * both of `image_rootfs`) and store it where the microVM backend reads it.
 * Slow: boots a VM. */
static int measure_vm_factor(const char *state_dir, const char *image_rootfs, double *ret,
			     struct err *e)
{
	struct sandbox_options so = {.state_dir = state_dir,
				     .max_slots = 64,
				     .uid_base = SANDBOX_UID_BASE,
				     .disk_bytes = 16u << 20,
				     .system_dir = image_rootfs,
				     .memory_bytes = 256u << 20};
	const struct sandbox_ops *native = sandbox_backend("jail"), *vm = sandbox_backend("vm");
	double ratios[3];
	uint64_t native_ms = 0, vm_ms = 0;
	struct vm_host h;

	if (!native || !vm)
		return err_set(e, 0, "this proctor lacks the jail or the microVM backend");
	if (vm_host_info(&h, e) < 0 || native->probe(e) < 0 || native->prepare(e) < 0)
		return -1;
	/* The same binary (the image's dash) natively in the jail and in a VM,
	 * interleaved, three times; the median ratio of CPU time. */
	for (int i = 0; i < 3; i++) {
		if (timed_loop(native, &so, &native_ms, e) < 0 ||
		    timed_loop(vm, &so, &vm_ms, e) < 0)
			return err_wrap(e, "measure the slowdown");
		ratios[i] = (double)vm_ms / (double)native_ms;
	}
	double lo = ratios[0] < ratios[1] ? ratios[0] : ratios[1],
	       hi = ratios[0] < ratios[1] ? ratios[1] : ratios[0],
	       median = ratios[2] < lo	 ? lo
			: ratios[2] > hi ? hi
					 : ratios[2];
	*ret = median < 1.0 ? 1.0 : median;
	return vm_factor_store(state_dir, *ret, &h, native_ms, vm_ms, e);
}

int cmd_doctor(int argc, char **argv)
{
	static const char *const ns[] = {"user", "pid", "net", "mnt", "ipc", "uts", "cgroup"};
	struct check c[MAX_CHECKS];
	size_t n = 0;
	char buf[512], path[512];
	bool json = false;
	const char *measure = NULL, *state_dir = cli_state_dir();
	struct err e;
	const struct cli_option options[] = {
	    CLI_OPTION_JSON(&json, "the checks"),
	    {.name = "measure-vm",
	     .kind = CLI_STRING,
	     .value_name = "PIN",
	     .dest = &measure,
	     .help = "measure the microVM backend's slowdown factor against\nthe jail on image PIN "
		     "(boots a VM; takes seconds) and\nstore it in <state>/vm/factor.json; grading "
		     "scales\ntime limits by it"},
	    CLI_OPTION_STATE_DIR(&state_dir, "where images and the factor live"),
	};
	const struct cli_command cmd = {
	    .name = "doctor",
	    .about = "Say what this host supports and which isolation 'auto' uses.",
	    .options = options,
	    .n_options = sizeof(options) / sizeof(options[0]),
	    .exit_status = "  0  some isolation backend works here (and the\n"
			   "     measurement, if asked, succeeded)\n"
			   "  1  none does, or the measurement failed\n"
			   "  2  usage error",
	    .operands = "no arguments",
	    .min_operands = 0,
	    .max_operands = 0,
	};
	int nargs, parsed = cli_parse(&cmd, argc, argv, &nargs);

	if (parsed != CLI_OK)
		return cli_exit_status(parsed);

	add(c, &n, "root", geteuid() == 0 ? "ok" : "missing",
	    geteuid() == 0 ? "running as root" : "the jail needs root");
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
		snprintf(path, sizeof(path), "/proc/self/ns/%s", ns[i]);
		bool have = access(path, F_OK) == 0;
		snprintf(buf, sizeof(buf), "%s namespaces %s", ns[i],
			 have ? "available" : "not in this kernel");
		add(c, &n, ns[i], have ? "ok" : "missing", buf);
	}
	enum cgroup_layout layout;
	char detail[512];
	if (cgroup_detect(&layout, detail, sizeof(detail), &e) == 0) {
		snprintf(buf, sizeof(buf), "%s: %s", cgroup_layout_name(layout), detail);
		add(c, &n, "cgroups", "ok", buf);
	} else {
		add(c, &n, "cgroups", "missing", e.msg);
	}
	char actions[256] = "";
	struct err ignored;
	bool seccomp = prctl(PR_GET_SECCOMP, 0, 0, 0, 0) >= 0;
	read_file_at(AT_FDCWD, "/proc/sys/kernel/seccomp/actions_avail", actions, sizeof(actions),
		     &ignored);
	actions[strcspn(actions, "\n")] = '\0';
	snprintf(buf, sizeof(buf), "seccomp filters %s%s%s", seccomp ? "available" : "unavailable",
		 actions[0] ? "; actions: " : "", actions);
	add(c, &n, "seccomp", seccomp && strstr(actions, "kill_process") ? "ok" : "missing", buf);
	bool kvm = host_has_kvm(buf, sizeof(buf));
	add(c, &n, "kvm", kvm ? "ok" : "missing", buf);
	struct vm_host qh;
	if (vm_host_info(&qh, &e) == 0)
		add(c, &n, "qemu", "ok", qh.qemu);
	else
		add(c, &n, "qemu", "missing", e.msg);

	/* proctor-helper parses what submissions produce as the sandbox's
	 * unprivileged uid, which must be able to execute it (grading
	 * refuses to start otherwise, grade_helper_check). */
	struct grade_options go = {0};
	if (grade_helper_check(&go, &e) == 0 && grade_helper_path(&go, path, sizeof(path), &e) == 0) {
		snprintf(buf, sizeof(buf), "%s, executable by the sandbox's unprivileged uid", path);
		add(c, &n, "helper", "ok", buf);
	} else {
		add(c, &n, "helper", "missing", e.msg);
	}
	size_t nb;
	const struct sandbox_ops *const *b = sandbox_backends(&nb);
	for (size_t i = 0; i < nb; i++) {
		bool works = b[i]->probe(&e) == 0;
		snprintf(buf, sizeof(buf), "backend '%s' %s%s", b[i]->name,
			 works ? "works here" : "cannot work: ", works ? "" : e.msg);
		add(c, &n, b[i]->name, works ? "ok" : "missing", buf);
	}
	struct vm_host vh;
	const struct sandbox_ops *vm = sandbox_backend("vm");
	if (vm && vm_host_info(&vh, &e) == 0) {
		bool measured;
		double f = vm->time_factor(state_dir, &measured);
		char ver[128] = "?";
		vm_qemu_version(ver, sizeof(ver), &e);
		snprintf(buf, sizeof(buf),
			 "%s, accelerator %s%s%s, TSC %u kHz; time limits scaled by %.2f (%s)", ver,
			 vh.accel, vh.kvm ? "" : " (software emulation: ", vh.kvm ? "" : vh.why,
			 vh.tsc_khz, f,
			 vh.kvm	    ? "hardware virtualization"
			 : measured ? "measured by 'proctor doctor --measure-vm'"
				    : "not measured yet: run 'proctor doctor --measure-vm PIN'");
		if (!vh.kvm)
			strncat(buf, ")", sizeof(buf) - strlen(buf) - 1);
		add(c, &n, "vm-accel", "ok", buf);
	}
	int measure_rc = 0;
	if (measure) {
		struct image_info img;
		double f = 0;
		if (image_resolve(state_dir, measure, &img, &e) != 0 ||
		    measure_vm_factor(state_dir, img.rootfs, &f, &e) < 0) {
			add(c, &n, "vm-factor", "missing", e.msg);
			measure_rc = 1;
		} else {
			snprintf(buf, sizeof(buf),
				 "measured %.2f on %s (stored in %s/vm/factor.json)", f, measure,
				 state_dir);
			add(c, &n, "vm-factor", "ok", buf);
		}
	}

	const struct sandbox_ops *chosen = NULL;
	char why[256];
	int rc = sandbox_select("auto", false, &chosen, why, sizeof(why), &e);

	if (json) {
		json_t *o = json_object(), *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:s}", "name", c[i].name,
							     "state", c[i].state, "detail",
							     c[i].detail));
		json_object_set_new(o, "checks", arr);
		json_object_set_new(o, "auto", rc == 0 ? json_string(chosen->name) : json_null());
		json_object_set_new(o, "auto_reason", json_string(rc == 0 ? why : e.msg));
		json_dumpf(o, stdout, JSON_INDENT(2));
		fputc('\n', stdout);
		json_decref(o);
	} else {
		for (size_t i = 0; i < n; i++)
			printf("%-8s %-8s %s\n", c[i].state, c[i].name, c[i].detail);
		printf("\nauto isolation: %s\n", rc == 0 ? why : e.msg);
	}
	return rc == 0 && measure_rc == 0 ? 0 : 1;
}
