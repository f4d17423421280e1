/* proctor admin: tokens, assignments and course budgets, straight on the store (for the operator's
 * shell). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "grade/assignment.h"
#include "service/commands.h"
#include "service/pack.h"
#include "store/store.h"
#include "util.h"

#define ADMIN_EXIT_STATUS                                                                          \
	"  0  done (the token or the id is on stdout)\n"                                           \
	"  2  usage error, or the assignment directory is not valid\n"                             \
	"  3  Proctor's own failure (the store)"

static int run_admin_command(int argc, char **argv);

static const struct cli_command token_cmd = {.name = "admin token", .operands = "no arguments"};
static const struct cli_command assignment_cmd = {
    .name = "admin assignment", .synopsis = "DIR", .operands = "one DIR"};
static const struct cli_command budget_cmd = {.name = "admin budget", .operands = "no arguments"};

static const struct cli_subcommand admin_words[] = {
    {"token",
     "print a new token of --course (created if new) with --scope and its own\n"
     "limits, or --revoke one, or --set-limits of one",
     run_admin_command, &token_cmd},
    {"assignment", "upload assignment DIR to --course; print its id", run_admin_command,
     &assignment_cmd},
    {"budget", "set or lift (--cpu-cap none) a course's daily CPU-seconds cap", run_admin_command,
     &budget_cmd},
};

static const struct cli_command admin_cmd = {
    .name = "admin",
    .synopsis = "COMMAND [ARGS]",
    .about = "Administer the grading service's store directly (docs/service.md): the\n"
	     "first token of a course comes from here.",
    .subcommands = admin_words,
    .n_subcommands = sizeof(admin_words) / sizeof(admin_words[0]),
    .exit_status = ADMIN_EXIT_STATUS,
    .operands = "COMMAND",
    .max_operands = -1,
    .stop_at_operand = true,
};

int cmd_admin(int argc, char **argv)
{
	int status;

	if (cli_dispatch(&admin_cmd, argc, argv, &status))
		return status;
	return cli_usage_error("admin: expected a COMMAND: token, assignment or budget (see "
			       "'proctor admin --help')");
}

static int report_failure(const struct err *e)
{
	if (err_exit_status(e->kind) == 2)
		return cli_usage_error("%s", e->msg);
	service_log("admin", "%s", e->msg);
	return err_exit_status(e->kind);
}

static int upload_assignment(struct store *st, const char *course, const char *dir, struct err *e)
{
	struct assignment *a = NULL;
	struct store_version v;
	int64_t course_id, version_id;
	int version_no;
	void *data = NULL;
	size_t len = 0;

	if (assignment_load(dir, &a, e) < 0)
		return err_classify(e, ERR_INPUT);
	int rc = pack_path(dir, 256ull << 20, &data, &len, e);
	if (rc == 0 && (rc = store_course_ensure(st, course, true, &course_id, e)) == 0 &&
	    (rc = store_assignment_add_version(st, course_id, a->name, data, len, a->image,
					       &version_id, &version_no, e)) == 0 &&
	    (rc = store_version_get(st, version_id, &v, e)) == 0) {
		printf("%lld\n", (long long)v.assignment_id);
		service_log("admin", "assignment '%s' (id %lld) version %d, image %s", a->name,
			    (long long)v.assignment_id, version_no, a->image);
	}
	free(data);
	assignment_free(a);
	return rc < 0 ? -1 : 0;
}

/* A token's limit from the command line: 0..max, or "none" (-1); absent
 * leaves *ret.  Else a usage error is printed and -1. */
static int parse_limit(const char *name, const char *text, int64_t max, int64_t *ret)
{
	uint64_t v;

	if (!text)
		return 0;
	if (strcmp(text, "none") == 0) {
		*ret = -1;
		return 0;
	}
	if (parse_u64(text, strlen(text), &v) < 0 || v > (uint64_t)max) {
		cli_usage_error("admin token: --%s: '%s' is not a number from 0 to %lld, or none",
				name, text, (long long)max);
		return -1;
	}
	*ret = (int64_t)v;
	return 0;
}

static int run_admin_command(int argc, char **argv)
{
	const char *db = NULL, *course = NULL, *scope_name = NULL, *cap = NULL, *revoke = NULL;
	const char *spend = NULL, *live = NULL, *set_limits = NULL;
	bool is_token = strcmp(argv[0], "token") == 0, is_budget = strcmp(argv[0], "budget") == 0;
	const struct cli_option opts[] = {
	    {.name = "db",
	     .kind = CLI_STRING,
	     .value_name = "URL",
	     .dest = &db,
	     .help = "the store: sqlite:PATH or postgresql://..."},
	    {.name = "course",
	     .kind = CLI_STRING,
	     .value_name = "NAME",
	     .dest = &course,
	     .help = "the course"},
	    {.name = "scope",
	     .kind = CLI_STRING,
	     .value_name = "SCOPE",
	     .dest = &scope_name,
	     .help = "token: submit, instructor or admin"},
	    {.name = "cpu-cap",
	     .kind = CLI_STRING,
	     .value_name = "SECONDS",
	     .dest = &cap,
	     .help = "budget: CPU-seconds a day, or 'none'"},
	    {.name = "revoke",
	     .kind = CLI_STRING,
	     .value_name = "ID",
	     .dest = &revoke,
	     .help = "token: revoke the course's token ID (GET /v1/tokens lists them) instead"},
	    {.name = "daily-spend-micros",
	     .kind = CLI_STRING,
	     .value_name = "N",
	     .dest = &spend,
	     .help = "token: its sandboxes' metered cost a UTC day, in\n"
		     "micro-dollars (0 to 10^12, or 'none', the default)"},
	    {.name = "max-live-sandboxes",
	     .kind = CLI_STRING,
	     .value_name = "N",
	     .dest = &live,
	     .help = "token: its sandboxes live at once (0 to 100000, or\n'none', the default)"},
	    {.name = "set-limits",
	     .kind = CLI_STRING,
	     .value_name = "ID",
	     .dest = &set_limits,
	     .help = "token: give the course's token ID the two limits above\n"
		     "(one not given: none) instead of a new token"},
	};
	struct cli_command cmd = is_token ? token_cmd : is_budget ? budget_cmd : assignment_cmd;
	struct store *st = NULL;
	enum store_scope scope = STORE_SCOPE_SUBMIT;
	char token[STORE_TOKEN_LEN + 1];
	int64_t course_id;
	double cpu = NAN;
	struct err e;
	int n, r;

	cmd.options = opts;
	cmd.n_options = sizeof(opts) / sizeof(opts[0]);
	cmd.exit_status = ADMIN_EXIT_STATUS;
	cmd.min_operands = cmd.max_operands = is_token || is_budget ? 0 : 1;
	r = cli_parse(&cmd, argc, argv, &n);
	if (r != CLI_OK)
		return cli_exit_status(r);
	if (!db || !course)
		return cli_usage_error("admin %s: --db and --course are required", argv[0]);
	uint64_t revoke_id = 0;
	if (revoke && (!is_token || parse_u64(revoke, strlen(revoke), &revoke_id) < 0 ||
		       revoke_id == 0 || revoke_id > INT64_MAX))
		return cli_usage_error(is_token ? "admin token: --revoke: '%s' is not a token id"
						: "admin %s: --revoke is for admin token only",
				       is_token ? revoke : argv[0]);
	uint64_t limits_id = 0;
	struct store_token_limits limits = STORE_TOKEN_UNLIMITED;
	if ((spend || live || set_limits) && !is_token)
		return cli_usage_error("admin %s: --daily-spend-micros, --max-live-sandboxes and "
				       "--set-limits are for admin token only",
				       argv[0]);
	if (set_limits && (revoke || parse_u64(set_limits, strlen(set_limits), &limits_id) < 0 ||
			   limits_id == 0 || limits_id > INT64_MAX))
		return cli_usage_error(revoke ? "admin token: --set-limits and --revoke: one at a time"
					      : "admin token: --set-limits: '%s' is not a token id",
				       set_limits);
	if (parse_limit("daily-spend-micros", spend, STORE_SPEND_MICROS_MAX,
			&limits.daily_spend_micros) < 0 ||
	    parse_limit("max-live-sandboxes", live, STORE_LIVE_SANDBOXES_MAX,
			&limits.max_live_sandboxes) < 0)
		return 2;
	if (revoke && (spend || live))
		return cli_usage_error("admin token: --revoke takes no limits");
	if (is_token && !revoke && !set_limits &&
	    (!scope_name || store_scope_parse(scope_name, &scope, &e) < 0))
		return cli_usage_error("admin token: --scope must be submit, instructor or admin");
	if (is_budget) {
		char *end;
		if (!cap)
			return cli_usage_error(
			    "admin budget: --cpu-cap SECONDS or none is required");
		if (strcmp(cap, "none") != 0 &&
		    ((cpu = strtod(cap, &end)) < 0 || *end || end == cap))
			return cli_usage_error("--cpu-cap: '%s' is not a number of seconds or none",
					       cap);
	}
	if (store_open(db, &st, &e) < 0) {
		err_wrap(&e, "--db");
		return report_failure(&e);
	}
	if (revoke) {
		r = store_course_ensure(st, course, false, &course_id, &e);
		if (r == 0)
			r = store_token_revoke(st, course_id, (int64_t)revoke_id, &e);
	} else if (set_limits) {
		r = store_course_ensure(st, course, false, &course_id, &e);
		if (r == 0)
			r = store_token_set_limits(st, course_id, (int64_t)limits_id, &limits, &e);
	} else if (is_token)
		r = store_token_mint(st, course, scope, &limits, token, NULL, &e);
	else if (is_budget) {
		r = store_course_ensure(st, course, false, &course_id, &e);
		if (r == 0)
			r = store_course_set_cpu_cap(st, course_id, cpu, &e);
	} else
		r = upload_assignment(st, course, argv[1], &e);
	store_close(st);
	if (r < 0)
		return r == STORE_NOT_FOUND ? (err_classify(&e, ERR_NOT_FOUND), report_failure(&e))
					    : report_failure(&e);
	if (revoke)
		service_log("admin", "token %llu of course '%s' revoked",
			    (unsigned long long)revoke_id, course);
	else if (set_limits)
		service_log("admin", "token %llu of course '%s': limits set",
			    (unsigned long long)limits_id, course);
	else if (is_token)
		printf("%s\n", token);
	return 0;
}
