/* `proctor run`: one program in a fresh sandbox. */
#include "cmd_run.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "result.h"
#include "runlimits.h"
#include "sandbox.h"
#include "util.h"

#define DEFAULT_SLOTS 64
#define MAX_SLOTS     256
#define MAX_LIST      256

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

enum {
	OPT_ISOLATION = 256,
	OPT_ENV,
	OPT_STDIN,
	OPT_PUT,
	OPT_GET,
	OPT_JSON,
	OPT_STATE_DIR,
	OPT_SLOTS,
	OPT_IMAGE,
	OPT_PRIVILEGED,
	OPT_HELP,
	OPT_LIMIT_BASE = 512, /* + index into the limit table */
};

static void run_usage(FILE *f)
{
	unsigned n;
	const struct limit_desc *t = limits_table(&n);
	struct limits d;

	limits_default(&d);
	fprintf(f, "usage: proctor run [OPTIONS] -- PROGRAM [ARGS...]\n\n"
		   "Run PROGRAM in a fresh sandbox and report how it ended.\n\nlimits:\n");
	const uint64_t defaults[] = {d.cpu_ms,
				     d.wall_ms,
				     d.memory_bytes >> 20,
				     d.pids,
				     d.fsize_bytes >> 20,
				     d.disk_bytes >> 20,
				     d.output_bytes >> 10,
				     d.nofile};
	for (unsigned i = 0; i < n; i++) {
		if (t[i].unit == LIMIT_UNIT_SECONDS)
			fprintf(f, "  --%-7s S     %s (default %g)\n", t[i].name, t[i].help,
				(double)defaults[i] / 1000);
		else
			fprintf(f, "  --%-7s N     %s (default %llu)\n", t[i].name, t[i].help,
				(unsigned long long)defaults[i]);
	}
	fprintf(f,
		"\noptions:\n"
		"  --isolation NAME   auto (default), jail or vm; auto picks vm when /dev/kvm\n"
		"                     works and --image pins an image, else jail\n"
		"  --image PIN        system tree: host (default), NAME@VERSION or sha256:HEX\n"
		"                     (proctor image ls)\n"
		"  --env NAME=VALUE   add to the sandbox environment (repeatable)\n"
		"  --stdin FILE       program's stdin (default: empty)\n"
		"  --put HOST:SANDBOX copy a host file or directory in (repeatable)\n"
		"  --get SANDBOX:HOST copy a regular file out after the run (repeatable)\n"
		"  --json             print the result as JSON (docs/run-result.md)\n"
		"  --privileged       run PROGRAM as root inside a microVM guest (with\n"
		"                     /sys and cgroup2), to test Proctor itself in a\n"
		"                     guest; --isolation vm only, never for submissions\n"
		"  --state-dir DIR    slot locks and scratch mounts (default %s,\n"
		"                     or $PROCTOR_STATE_DIR)\n"
		"  --slots N          sandboxes allowed at once on this host (default %d)\n\n"
		"SANDBOX paths are relative to /work, or absolute below /work or /tmp.\n\n"
		"EXIT STATUS\n"
		"  0  the program exited with 0 and hit no limit\n"
		"  1  the program failed, was killed or hit a limit\n"
		"  2  usage error: bad option, value or path\n"
		"  3  Proctor's own failure (status \"error\")\n",
		DEFAULT_STATE_DIR, DEFAULT_SLOTS);
}

/* One line on stderr naming the option or path; the usage exit status. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("proctor: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 2;
}

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

/* Split "A:B" at the first (first=true) or last colon. */
static int split_pair(char *arg, bool first, char *ret[2])
{
	char *colon = first ? strchr(arg, ':') : strrchr(arg, ':');

	if (!colon || colon == arg || colon[1] == '\0')
		return -1;
	*colon = '\0';
	ret[0] = arg;
	ret[1] = colon + 1;
	return 0;
}

static int parse_options(int argc, char **argv, struct run_options *o)
{
	unsigned n;
	const struct limit_desc *t = limits_table(&n);
	struct option longopts[32];
	size_t k = 0;
	struct err e;

	for (unsigned i = 0; i < n; i++)
		longopts[k++] =
		    (struct option){t[i].name, required_argument, NULL, (int)(OPT_LIMIT_BASE + i)};
	longopts[k++] = (struct option){"isolation", required_argument, NULL, OPT_ISOLATION};
	longopts[k++] = (struct option){"env", required_argument, NULL, OPT_ENV};
	longopts[k++] = (struct option){"stdin", required_argument, NULL, OPT_STDIN};
	longopts[k++] = (struct option){"put", required_argument, NULL, OPT_PUT};
	longopts[k++] = (struct option){"get", required_argument, NULL, OPT_GET};
	longopts[k++] = (struct option){"json", no_argument, NULL, OPT_JSON};
	longopts[k++] = (struct option){"state-dir", required_argument, NULL, OPT_STATE_DIR};
	longopts[k++] = (struct option){"slots", required_argument, NULL, OPT_SLOTS};
	longopts[k++] = (struct option){"image", required_argument, NULL, OPT_IMAGE};
	longopts[k++] = (struct option){"privileged", no_argument, NULL, OPT_PRIVILEGED};
	longopts[k++] = (struct option){"help", no_argument, NULL, OPT_HELP};
	longopts[k] = (struct option){0};

	opterr = 0;
	optind = 1;
	for (;;) {
		int longindex = -1;
		int c = getopt_long(argc, argv, "+h", longopts, &longindex);
		if (c == -1)
			break;
		if (c >= OPT_LIMIT_BASE && c < OPT_LIMIT_BASE + (int)n) {
			if (limits_set(&o->limits, t[c - OPT_LIMIT_BASE].name, optarg, &e) < 0)
				return usage_error("%s%s", e.msg, "");
			continue;
		}
		switch (c) {
		case OPT_ISOLATION:
			o->isolation = optarg;
			break;
		case OPT_ENV:
			if (!valid_env_name(optarg))
				return usage_error(
				    "--env: '%s' is not NAME=VALUE with NAME made of "
				    "letters, digits and '_'%s",
				    optarg, "");
			if (o->n_env == MAX_LIST)
				return usage_error("--env: more than %s variables%s", "256", "");
			o->env[o->n_env++] = optarg;
			break;
		case OPT_STDIN:
			o->stdin_path = optarg;
			break;
		case OPT_PRIVILEGED:
			o->privileged = true;
			break;
		case OPT_PUT:
			if (o->n_put == MAX_LIST)
				return usage_error("--put: more than %s files%s", "256", "");
			if (split_pair(optarg, false, o->put[o->n_put]) < 0)
				return usage_error("--put: '%s' is not HOST:SANDBOX%s", optarg, "");
			o->n_put++;
			break;
		case OPT_GET:
			if (o->n_get == MAX_LIST)
				return usage_error("--get: more than %s files%s", "256", "");
			if (split_pair(optarg, true, o->get[o->n_get]) < 0)
				return usage_error("--get: '%s' is not SANDBOX:HOST%s", optarg, "");
			o->n_get++;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_IMAGE:
			o->image = optarg;
			break;
		case OPT_STATE_DIR:
			o->state_dir = optarg;
			break;
		case OPT_SLOTS: {
			uint64_t v;
			if (parse_u64(optarg, strlen(optarg), &v) < 0 || v < 1 || v > MAX_SLOTS)
				return usage_error("--slots: '%s' is not a whole number from 1 to "
						   "%s",
						   optarg, "256");
			o->slots = (unsigned)v;
			break;
		}
		case OPT_HELP:
		case 'h':
			run_usage(stdout);
			exit(0);
		case ':':
			return usage_error("option '%s' needs a value%s", argv[optind - 1], "");
		default:
			return usage_error("unknown option '%s' (see 'proctor run --help')%s",
					   argv[optind - 1], "");
		}
	}
	if (optind >= argc)
		return usage_error("run: no program given (proctor run [OPTIONS] -- PROGRAM "
				   "[ARGS...])%s%s",
				   "", "");
	o->argv = argv + optind;
	return 0;
}

/* Checks that need no sandbox, so a typo costs nothing and leaves nothing. */
static int check_paths(struct run_options *o, int *ret_stdin)
{
	struct err e;
	char rel[4096];

	for (size_t i = 0; i < o->n_put; i++) {
		if (access(o->put[i][0], R_OK) < 0)
			return usage_error("--put: cannot read '%s': %s", o->put[i][0],
					   strerror(errno));
		if (sandbox_path_rel(o->put[i][1], rel, sizeof(rel), &e) < 0)
			return usage_error("--put: %s%s", e.msg, "");
	}
	for (size_t i = 0; i < o->n_get; i++)
		if (sandbox_path_rel(o->get[i][0], rel, sizeof(rel), &e) < 0)
			return usage_error("--get: %s%s", e.msg, "");
	*ret_stdin = -1;
	if (o->stdin_path) {
		struct stat st;
		int fd = open(o->stdin_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return usage_error("--stdin: cannot read '%s': %s", o->stdin_path,
					   strerror(errno));
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			return usage_error("--stdin: '%s' is not a regular file%s", o->stdin_path,
					   "");
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

/* Report Proctor's own failure in the requested format; exit status 3. */
static int internal_error(const struct run_options *o, struct run_result *r, const char *msg)
{
	fprintf(stderr, "proctor: %s\n", msg);
	r->status = RUN_ERROR;
	snprintf(r->message, sizeof(r->message), "%s", msg);
	if (o->json)
		print_result(o, r, NULL);
	return 3;
}

int cmd_run(int argc, char **argv)
{
	struct run_options o = {.isolation = "auto", .slots = DEFAULT_SLOTS, .image = "host"};
	const struct sandbox_ops *ops;
	struct sandbox *sb = NULL;
	struct run_result res;
	struct err e;
	char why[256];
	int stdin_fd = -1, status;
	json_t *get_errors = NULL;

	limits_default(&o.limits);
	o.state_dir = getenv("PROCTOR_STATE_DIR");
	if (!o.state_dir || !*o.state_dir)
		o.state_dir = DEFAULT_STATE_DIR;
	if (parse_options(argc, argv, &o) != 0)
		return 2;
	if (o.privileged && strcmp(o.isolation, "vm") != 0)
		return usage_error(
		    "--privileged needs --isolation vm (the guest is the boundary)%s", "");
	if (check_paths(&o, &stdin_fd) != 0)
		return 2;
	if (run_result_init(&res, (size_t)o.limits.output_bytes) < 0) {
		fprintf(stderr, "proctor: out of memory\n");
		return 3;
	}
	if (sandbox_select(o.isolation, strcmp(o.image, "host") != 0, &ops, why, sizeof(why), &e) <
	    0) {
		status = strncmp(e.msg, "--isolation", 11) == 0 ? usage_error("%s%s", e.msg, "")
								: internal_error(&o, &res, e.msg);
		goto out;
	}

	if (ops->prepare(&e) < 0) {
		status = internal_error(&o, &res, e.msg);
		goto out;
	}
	struct image_info img;
	int irc = image_resolve(o.state_dir, o.image, &img, &e);
	if (irc == IMAGE_BAD_INPUT) {
		status = usage_error("--image: %s", e.msg);
		goto out;
	} else if (irc != 0) {
		status = internal_error(&o, &res, e.msg);
		goto out;
	}
	struct sandbox_options sopts = {
	    .state_dir = o.state_dir,
	    .max_slots = o.slots,
	    .uid_base = SANDBOX_UID_BASE,
	    .disk_bytes = o.limits.disk_bytes,
	    .system_dir = strcmp(o.image, "host") == 0 ? NULL : img.rootfs,
	    .memory_bytes = o.limits.memory_bytes,
	};
	if (ops->create(&sopts, &sb, &e) < 0) {
		status = internal_error(&o, &res, e.msg);
		goto out;
	}
	for (size_t i = 0; i < o.n_put; i++) {
		if (sandbox_put(sb, o.put[i][0], o.put[i][1], 0, &e) < 0) {
			/* The host side was checked up front; a failure here is a
			 * file that did not fit or could not be read. */
			status = usage_error("--put: %s%s", e.msg, "");
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
		status = internal_error(&o, &res, e.msg);
		goto out;
	}
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
		}
	}
	print_result(&o, &res, get_errors);
out:
	json_decref(get_errors);
	sandbox_destroy(sb);
	xclose(stdin_fd);
	run_result_free(&res);
	return status;
}
