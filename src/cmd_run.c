/* `proctor run`: one program in a fresh sandbox. */
#include "cmd_run.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "image/image.h"
#include "result.h"
#include "runlimits.h"
#include "sandbox.h"
#include "util.h"
#include "vm/vm.h"

#define MAX_LIST 256

/* Parsed command line: the only mutable state of the command. */
struct run_options {
	struct limits limits;
	const char *isolation;
	const char *state_dir;
	const char *image; /* pin, default "host" */
	unsigned slots;
	bool json;
	bool privileged; /* --privileged: root in a microVM guest, for Proctor's own tests */
	const char *stdin_path;
	char *env[MAX_LIST];
	size_t n_env;
	char *put[MAX_LIST][2]; /* host, sandbox */
	size_t n_put;
	char *get[MAX_LIST][2]; /* sandbox, host */
	size_t n_get;
	char **argv;
};

static bool valid_env_name(const char *kv)
{
	size_t n = strcspn(kv, "=");

	if (n == 0 || kv[n] != '=' || (kv[0] >= '0' && kv[0] <= '9'))
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = kv[i];
		if (!(ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9')))
			return false;
	}
	return true;
}

/* ---- option handlers: dest is the struct limits or the run_options ---- */

static int set_limit(const struct cli_option *opt, char *value, struct err *e)
{
	return limits_set(opt->dest, opt->name, value, e);
}

static int add_env(const struct cli_option *opt, char *value, struct err *e)
{
	struct run_options *o = opt->dest;

	if (!valid_env_name(value))
		return err_setk(e, ERR_USAGE, 0,
				"--env: '%s' is not NAME=VALUE with NAME made of letters, digits "
				"and '_'",
				value);
	if (o->n_env == MAX_LIST)
		return err_setk(e, ERR_USAGE, 0, "--env: more than %d variables", MAX_LIST);
	o->env[o->n_env++] = value;
	return 0;
}

/* --put HOST:SANDBOX, split at the last colon; --get SANDBOX:HOST, at the first. */
static int add_pair(const struct cli_option *opt, char *value, struct err *e)
{
	struct run_options *o = opt->dest;
	bool put = strcmp(opt->name, "put") == 0;
	size_t *n = put ? &o->n_put : &o->n_get;
	char *colon = put ? strrchr(value, ':') : strchr(value, ':');

	if (*n == MAX_LIST)
		return err_setk(e, ERR_USAGE, 0, "--%s: more than %d files", opt->name, MAX_LIST);
	if (!colon || colon == value || colon[1] == '\0')
		return err_setk(e, ERR_USAGE, 0, "--%s: '%s' is not %s", opt->name, value,
				opt->value_name);
	char **pair = put ? o->put[*n] : o->get[*n];
	*colon = '\0';
	pair[0] = value;
	pair[1] = colon + 1;
	(*n)++;
	return 0;
}

#define MAX_LIMITS 16
#define RUN_OPTIONS 16 /* room for the options besides the limits */

/* The limits, from the limit table, then the rest; `help` holds the limits'
 * help texts with their defaults. */
static size_t run_table(struct run_options *o, struct cli_option *t, char help[][128])
{
	unsigned n;
	const struct limit_desc *d = limits_table(&n);
	struct limits def;
	size_t k = 0;

	limits_default(&def);
	for (unsigned i = 0; i < n && i < MAX_LIMITS; i++) {
		bool secs = d[i].unit == LIMIT_UNIT_SECONDS;
		uint64_t v = *(const uint64_t *)(const void *)((const char *)&def + d[i].off);
		if (secs)
			snprintf(help[i], 128, "%s (default %g)", d[i].help, (double)v / 1000);
		else
			snprintf(help[i], 128, "%s (default %llu)", d[i].help,
				 (unsigned long long)(v >> (d[i].unit == LIMIT_UNIT_MIB	  ? 20
							    : d[i].unit == LIMIT_UNIT_KIB ? 10
											  : 0)));
		t[k++] = (struct cli_option){.name = d[i].name,
					     .kind = CLI_CALL,
					     .value_name = secs ? "S" : "N",
					     .help = help[i],
					     .heading = i == 0 ? "limits" : NULL,
					     .dest = &o->limits,
					     .call = set_limit};
	}
	const struct cli_option rest[] = {
	    CLI_OPTION_ISOLATION(&o->isolation, "--image pins an image, else jail"),
	    {.name = "image",
	     .kind = CLI_STRING,
	     .value_name = "PIN",
	     .dest = &o->image,
	     .help = "system tree: host (default), NAME@VERSION or sha256:HEX\n(proctor image ls)"},
	    {.name = "env",
	     .kind = CLI_CALL,
	     .value_name = "NAME=VALUE",
	     .dest = o,
	     .call = add_env,
	     .help = "add to the sandbox environment (repeatable)"},
	    {.name = "stdin",
	     .kind = CLI_STRING,
	     .value_name = "FILE",
	     .dest = &o->stdin_path,
	     .help = "program's stdin (default: empty)"},
	    {.name = "put",
	     .kind = CLI_CALL,
	     .value_name = "HOST:SANDBOX",
	     .dest = o,
	     .call = add_pair,
	     .help = "copy a host file or directory in (repeatable)"},
	    {.name = "get",
	     .kind = CLI_CALL,
	     .value_name = "SANDBOX:HOST",
	     .dest = o,
	     .call = add_pair,
	     .help = "copy a regular file out after the run (repeatable)"},
	    CLI_OPTION_JSON(&o->json, "the result (docs/run-result.md)"),
	    {.name = "privileged",
	     .kind = CLI_FLAG,
	     .dest = &o->privileged,
	     .help = "run PROGRAM as root inside a microVM guest (with\n/sys and cgroup2), to test "
		     "Proctor itself in a\nguest; --isolation vm only, never for submissions"},
	    CLI_OPTION_STATE_DIR(&o->state_dir, "slot locks and scratch mounts"),
	    CLI_OPTION_SLOTS(&o->slots, NULL),
	};
	_Static_assert(sizeof(rest) / sizeof(rest[0]) <= RUN_OPTIONS, "raise RUN_OPTIONS");
	for (size_t i = 0; i < sizeof(rest) / sizeof(rest[0]); i++)
		t[k++] = rest[i];
	t[n < MAX_LIMITS ? n : MAX_LIMITS].heading = "options";
	return k;
}

static int parse_options(int argc, char **argv, struct run_options *o)
{
	struct cli_option table[MAX_LIMITS + RUN_OPTIONS];
	char help[MAX_LIMITS][128];
	const struct cli_command cmd = {
	    .name = "run",
	    .synopsis = "-- PROGRAM [ARGS...]",
	    .about = "Run PROGRAM in a fresh sandbox and report how it ended.",
	    .options = table,
	    .n_options = run_table(o, table, help),
	    .notes = "SANDBOX paths are relative to /work, or absolute below /work or /tmp.",
	    .exit_status = "  0  the program exited with 0 and hit no limit\n"
			   "  1  the program failed, was killed or hit a limit\n"
			   "  2  usage error: bad option, value or path\n"
			   "  3  Proctor's own failure (status \"error\")",
	    .operands = "PROGRAM [ARGS...]",
	    .min_operands = 1,
	    .max_operands = -1,
	    .stop_at_operand = true,
	};
	int n;
	int rc = cli_parse(&cmd, argc, argv, &n);

	if (rc == CLI_OK)
		o->argv = argv + 1;
	return rc;
}

/* Checks that need no sandbox, so a typo costs nothing and leaves nothing. */
static int check_paths(struct run_options *o, int *ret_stdin)
{
	struct err e;
	char rel[4096];

	for (size_t i = 0; i < o->n_put; i++) {
		if (access(o->put[i][0], R_OK) < 0)
			return cli_usage_error("--put: cannot read '%s': %s", o->put[i][0],
					   strerror(errno));
		if (sandbox_path_rel(o->put[i][1], rel, sizeof(rel), &e) < 0)
			return cli_usage_error("--put: %s", e.msg);
	}
	for (size_t i = 0; i < o->n_get; i++)
		if (sandbox_path_rel(o->get[i][0], rel, sizeof(rel), &e) < 0)
			return cli_usage_error("--get: %s", e.msg);
	*ret_stdin = -1;
	if (o->stdin_path) {
		struct stat st;
		int fd = open(o->stdin_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return cli_usage_error("--stdin: cannot read '%s': %s", o->stdin_path,
					   strerror(errno));
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			return cli_usage_error("--stdin: '%s' is not a regular file", o->stdin_path);
		}
		*ret_stdin = fd;
	}
	return 0;
}

/* `get_errors` lists the --get files that could not be copied out (JSON
 * array of strings, or NULL for none). */
static void print_result(const struct run_options *o, const struct run_result *r,
			 json_t *get_errors)
{
	if (o->json) {
		json_t *j = run_result_to_json(r);
		if (j) {
			json_object_set_new(j, "get_errors",
					    get_errors ? json_incref(get_errors) : json_array());
			json_dumpf(j, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
			fputc('\n', stdout);
			json_decref(j);
		}
	} else {
		run_result_print_text(stdout, r);
		for (size_t i = 0; get_errors && i < json_array_size(get_errors); i++)
			printf("--get failed: %s\n",
			       json_string_value(json_array_get(get_errors, i)));
	}
	fflush(stdout);
}

/* A failure before the program ran, reported as its kind says: the user's
 * (a usage error, exit 2) as one line after `what` ("--put: "), any other
 * as Proctor's own: status "error" in the requested format, exit 3. */
static int failure(const struct run_options *o, struct run_result *r, const char *what,
		   const struct err *e)
{
	if (err_exit_status(e->kind) == 2)
		return cli_usage_error("%s%s", what, e->msg);
	cli_say("%s", e->msg);
	r->status = RUN_ERROR;
	snprintf(r->message, sizeof(r->message), "%s", e->msg);
	if (o->json)
		print_result(o, r, NULL);
	return run_result_exit_status(r);
}

int cmd_run(int argc, char **argv)
{
	struct run_options o = {.isolation = "auto", .slots = CLI_DEFAULT_SLOTS, .image = "host"};
	const struct sandbox_ops *ops;
	struct sandbox *sb = NULL;
	struct run_result res;
	struct err e;
	char why[256];
	int stdin_fd = -1, status, r;
	json_t *get_errors = NULL;

	limits_default(&o.limits);
	o.state_dir = cli_state_dir();
	r = parse_options(argc, argv, &o);
	if (r != CLI_OK)
		return cli_exit_status(r);
	if (o.privileged && strcmp(o.isolation, "vm") != 0)
		return cli_usage_error("--privileged needs --isolation vm (the guest is the boundary)");
	/* A limit this host cannot grant would fail in sandbox setup: it is
	 * the user's to change, named now. */
	if (limits_check_host(&o.limits, &e) < 0)
		return cli_usage_error("--%s", e.msg);
	if ((r = check_paths(&o, &stdin_fd)) != 0)
		return r;
	if (run_result_init(&res, (size_t)o.limits.output_bytes) < 0) {
		cli_say("out of memory");
		return err_exit_status(ERR_INTERNAL);
	}
	if (sandbox_select(o.isolation, strcmp(o.image, "host") != 0, &ops, why, sizeof(why), &e) <
	    0) {
		status = failure(&o, &res, "", &e); /* the message names --isolation */
		goto out;
	}

	if (ops->prepare(&e) < 0) {
		status = failure(&o, &res, "", &e);
		goto out;
	}
	/* The host needs no lookup: its digest (a hash of the package
	 * database, most of a millisecond) is not part of a run's result. */
	struct image_info img = {.rootfs = "/"};
	bool host = strcmp(o.image, "host") == 0;
	if (!host && image_resolve(o.state_dir, o.image, &img, &e) < 0) {
		status = failure(&o, &res, "--image: ", &e);
		goto out;
	}
	struct sandbox_options sopts = {
	    .state_dir = o.state_dir,
	    .max_slots = o.slots,
	    .uid_base = SANDBOX_UID_BASE,
	    .disk_bytes = o.limits.disk_bytes,
	    .system_dir = host ? NULL : img.rootfs,
	    .memory_bytes = o.limits.memory_bytes,
	};
	vm_trace("run: options, backend and image");
	if (ops->create(&sopts, &sb, &e) < 0) {
		status = failure(&o, &res, "", &e);
		goto out;
	}
	for (size_t i = 0; i < o.n_put; i++) {
		if (sandbox_put(sb, o.put[i][0], o.put[i][1], 0, &e) < 0) {
			/* The host side was checked up front; what is left of the
			 * user's is a file the put refuses, cannot read, or that
			 * does not fit (ERR_INPUT, host/tree.c and the backends). */
			status = failure(&o, &res, "--put: ", &e);
			goto out;
		}
	}
	struct run_spec spec = {
	    .argv = o.argv,
	    .env = o.env,
	    .env_count = o.n_env,
	    .stdin_fd = stdin_fd,
	    .limits = o.limits,
	    .privileged = o.privileged,
	};
	if (sandbox_run(sb, &spec, &res, &e) < 0) {
		status = failure(&o, &res, "", &e);
		goto out;
	}
	vm_trace("run: ran");
	get_errors = json_array();
	status = run_result_exit_status(&res);
	if (res.status == RUN_NONZERO_EXIT && res.message[0])
		fprintf(stderr, "proctor: %s\n", res.message); /* e.g. the program was not found */
	for (size_t i = 0; i < o.n_get; i++) {
		if (sandbox_get(sb, o.get[i][0], o.get[i][1], &e) < 0) {
			/* The program did not leave the file it was asked for:
			 * its failure, not a usage error. */
			fprintf(stderr, "proctor: --get: %s\n", e.msg);
			json_array_append_new(get_errors, json_string(e.msg));
			if (status == 0)
				status = 1;
		} else if (sb->get_skipped) {
			/* Left out, not failed: the rest of the tree is there. */
			fprintf(stderr,
				"proctor: --get %s: left out %u entr%s whose name holds a control "
				"character (first: %s)\n",
				o.get[i][0], sb->get_skipped, sb->get_skipped == 1 ? "y" : "ies",
				sb->get_skipped_first);
		}
	}
	print_result(&o, &res, get_errors);
out:
	json_decref(get_errors);
	sandbox_destroy(sb);
	xclose(stdin_fd);
	run_result_free(&res);
	vm_trace("run: done");
	return status;
}
