/* `proctor grade`: one submission against one assignment. */
#include "cmd_grade.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "grade/assignment.h"
#include "grade/grade.h"

/* Parsed command line: the only mutable state of the command. */
struct grade_cli {
	const char *format, *view, *out, *isolation, *state_dir;
	unsigned slots;
};

/* --json is --format json, and the later of the two wins. */
static int set_json(const struct cli_option *opt, char *value, struct err *e)
{
	*(const char **)opt->dest = "json";
	return 0;
}

int cmd_grade(int argc, char **argv)
{
	static const char *const formats[] = {"text", "json", "gradescope", NULL};
	static const char *const views[] = {"instructor", "student", NULL};
	struct grade_cli c = {.format = "text",
			      .view = "instructor",
			      .isolation = "auto",
			      .state_dir = cli_state_dir(),
			      .slots = CLI_DEFAULT_SLOTS};
	const struct cli_option table[] = {
	    {.name = "json",
	     .kind = CLI_CALL,
	     .dest = &c.format,
	     .call = set_json,
	     .help = "print the result document as JSON (docs/result.md;\nsame as --format json)"},
	    {.name = "format",
	     .kind = CLI_CHOICE,
	     .value_name = "F",
	     .dest = &c.format,
	     .choices = formats,
	     .help = "text (default), json, or gradescope (results.json)"},
	    {.name = "view",
	     .kind = CLI_CHOICE,
	     .value_name = "V",
	     .dest = &c.view,
	     .choices = views,
	     .help = "instructor (default) or student: hidden tests and raw\noutput removed"},
	    {.name = "out",
	     .kind = CLI_STRING,
	     .value_name = "FILE",
	     .dest = &c.out,
	     .help = "write the document to FILE instead of stdout"},
	    CLI_OPTION_ISOLATION(&c.isolation,
				 "the assignment pins an image, else jail; an\nassignment's "
				 "isolation: is used instead of auto"),
	    CLI_OPTION_STATE_DIR(&c.state_dir, "slot locks and scratch"),
	    CLI_OPTION_SLOTS(&c.slots, NULL),
	};
	const struct cli_command cmd = {
	    .name = "grade",
	    .synopsis = "ASSIGNMENT SUBMISSION",
	    .about = "Grade one SUBMISSION (a directory, .zip, .tar or .tar.gz) against ASSIGNMENT\n"
		     "(a directory holding assignment.yaml; see docs/assignment.md).",
	    .options = table,
	    .n_options = sizeof(table) / sizeof(table[0]),
	    .exit_status = "  0  a verdict was produced, whatever the score\n"
			   "  2  usage error, or the assignment is invalid\n"
			   "  3  Proctor's own failure (status \"error\"): retry later",
	    .operands = "ASSIGNMENT and SUBMISSION",
	    .min_operands = 2,
	    .max_operands = 2,
	    .stop_at_operand = true,
	};
	struct grade_options o = {.sandbox.uid_base = SANDBOX_UID_BASE};
	struct assignment *a = NULL;
	json_t *result = NULL, *shown = NULL;
	char why[256];
	struct err e;
	int n, status, r = cli_parse(&cmd, argc, argv, &n);

	if (r != CLI_OK)
		return cli_exit_status(r);
	o.sandbox.state_dir = c.state_dir;
	o.sandbox.max_slots = c.slots;
	if (access(argv[2], F_OK) < 0) {
		err_setk(&e, ERR_INPUT, errno, "grade: submission '%s'", argv[2]);
		goto out_fail;
	}
	if (assignment_load(argv[1], &a, &e) < 0 ||
	    grade_prepare(c.isolation, a, &o.ops, why, sizeof(why), &e) < 0 ||
	    grade_submission(a, argv[2], &o, &result, &e) < 0)
		goto out_fail;
	status = strcmp(json_string_value(json_object_get(result, "status")), "error") == 0
		     ? err_exit_status(ERR_INTERNAL) /* Proctor's own failure */
		     : 0;
	shown = strcmp(c.view, "student") == 0 ? grade_student_view(result) : json_incref(result);
	if (strcmp(c.format, "gradescope") == 0) {
		json_t *gs = grade_to_gradescope(shown);
		json_decref(shown);
		shown = gs;
	}
	FILE *f = c.out ? fopen(c.out, "w") : stdout;
	if (!f) {
		err_setk(&e, ERR_USAGE, errno, "--out '%s'", c.out);
		goto out_fail;
	}
	if (strcmp(c.format, "text") == 0)
		grade_print_summary(f, shown);
	else {
		json_dumpf(shown, f, JSON_INDENT(2) | JSON_ENSURE_ASCII);
		fputc('\n', f);
	}
	if (c.out && fclose(f) != 0) {
		err_set(&e, errno, "--out '%s'", c.out);
		goto out_fail;
	}
	goto out;
out_fail:
	status = cli_fail(&e);
out:
	json_decref(shown);
	json_decref(result);
	assignment_free(a);
	return status;
}
