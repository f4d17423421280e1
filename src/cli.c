/* The command line of every proctor command: parsing, --help and usage errors from one option table. */
#include "cli.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capbuf.h"
#include "util.h"

/* Added to every table: the parser answers it itself. */
static const struct cli_option help_option = {
    .name = "help", .short_name = 'h', .kind = CLI_FLAG, .help = "print this help and exit"};

#define MAX_COLUMN 22 /* option spellings wider than this put their help below */

/* ---- messages ----------------------------------------------------------- */

static void usage_line_v(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
static void usage_line_v(const char *fmt, va_list ap)
{
	char raw[2048], line[2048];

	vsnprintf(raw, sizeof(raw), fmt, ap);
	text_printable(line, sizeof(line), raw, '?');
	fprintf(stderr, "proctor: %s\n", line);
}

void cli_say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_line_v(fmt, ap);
	va_end(ap);
}

int cli_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	usage_line_v(fmt, ap);
	va_end(ap);
	return CLI_USAGE;
}

int cli_fail(const struct err *e)
{
	cli_say("%s", e->msg);
	return err_exit_status(e->kind);
}

/* A mistake in the command line itself, in the one shape every command
 * shares: "proctor: CMD: what (see 'proctor CMD --help')". */
static int parse_error(const struct cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int parse_error(const struct cli_command *cmd, const char *fmt, ...)
{
	char what[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (cmd->name)
		return cli_usage_error("%s: %s (see 'proctor %s --help')", cmd->name, what,
				       cmd->name);
	return cli_usage_error("%s (see 'proctor --help')", what);
}

int cli_parse_uint(const char *opt, const char *text, unsigned min, unsigned max, unsigned *ret)
{
	uint64_t v;

	if (parse_u64(text, strlen(text), &v) < 0 || v < min || v > max)
		return cli_usage_error("%s: '%s' is not a whole number from %u to %u", opt, text,
				       min, max);
	*ret = (unsigned)v;
	return 0;
}

const char *cli_state_dir(void)
{
	const char *dir = getenv("PROCTOR_STATE_DIR");

	return dir && *dir ? dir : DEFAULT_STATE_DIR;
}

/* ---- parsing ------------------------------------------------------------ */

static const struct cli_option *option_at(const struct cli_command *cmd, size_t i)
{
	return i < cmd->n_options ? &cmd->options[i] : &help_option;
}

/* The option `--NAME`, with `len` bytes of name given: an exact match, else
 * the one option the name is a prefix of.  NULL, with a usage error
 * printed, for none or several. */
static const struct cli_option *find_long(const struct cli_command *cmd, const char *name,
					  size_t len, int *ret_rc)
{
	const struct cli_option *found = NULL;
	char names[512] = "";
	size_t matches = 0;

	for (size_t i = 0; i <= cmd->n_options; i++) {
		const struct cli_option *o = option_at(cmd, i);
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
			return o;
	}
	for (size_t i = 0; i <= cmd->n_options; i++) {
		const struct cli_option *o = option_at(cmd, i);
		if (strncmp(o->name, name, len) != 0)
			continue;
		size_t used = strlen(names);
		snprintf(names + used, sizeof(names) - used, "%s--%s", matches ? ", " : "",
			 o->name);
		found = o;
		matches++;
	}
	if (matches == 1)
		return found;
	if (matches == 0)
		*ret_rc = parse_error(cmd, "unknown option '--%.*s'", (int)len, name);
	else
		*ret_rc = parse_error(cmd, "option '--%.*s' is ambiguous (%s)", (int)len, name,
				      names);
	return NULL;
}

static const struct cli_option *find_short(const struct cli_command *cmd, char c)
{
	for (size_t i = 0; i <= cmd->n_options; i++) {
		const struct cli_option *o = option_at(cmd, i);
		if (o->short_name && o->short_name == c)
			return o;
	}
	return NULL;
}

static int choice_error(const char *spelled, const char *value, const char *const *choices)
{
	char list[512] = "";
	size_t n = 0;

	while (choices[n])
		n++;
	for (size_t i = 0; i < n; i++) {
		size_t used = strlen(list);
		snprintf(list + used, sizeof(list) - used, "%s%s",
			 i == 0 ? "" : i + 1 == n ? " or " : ", ", choices[i]);
	}
	return cli_usage_error("%s: '%s' is not %s", spelled, value, list);
}

/* Store one option's value; `spelled` is how the user named it ("-j",
 * "--jobs"), for the messages.  CLI_OK, CLI_HELP or CLI_USAGE. */
static int apply(const struct cli_command *cmd, const struct cli_option *o, const char *spelled,
		 char *value)
{
	struct err e;

	if (o == &help_option) {
		cli_help(stdout, cmd);
		return CLI_HELP;
	}
	if (o->given)
		*o->given = true;
	switch (o->kind) {
	case CLI_FLAG:
		*(bool *)o->dest = true;
		return CLI_OK;
	case CLI_STRING:
		*(const char **)o->dest = value;
		return CLI_OK;
	case CLI_UINT:
		return cli_parse_uint(spelled, value, o->min, o->max, o->dest) ? CLI_USAGE : CLI_OK;
	case CLI_CHOICE:
		for (size_t i = 0; o->choices[i]; i++) {
			if (strcmp(o->choices[i], value) == 0) {
				*(const char **)o->dest = o->choices[i];
				return CLI_OK;
			}
		}
		return choice_error(spelled, value, o->choices);
	case CLI_CALL:
		if (o->call(o, value, &e) < 0)
			return cli_usage_error("%s", e.msg);
		return CLI_OK;
	}
	return cli_usage_error("%s: unknown kind of option", spelled);
}

/* `--NAME`, `--NAME=VALUE` or `--NAME VALUE` at argv[*i]. */
static int parse_long(const struct cli_command *cmd, int argc, char **argv, int *i)
{
	char *name = argv[*i] + 2, *eq = strchr(name, '=');
	size_t len = eq ? (size_t)(eq - name) : strlen(name);
	int rc = CLI_USAGE;
	const struct cli_option *o = find_long(cmd, name, len, &rc);
	char spelled[128];

	if (!o)
		return rc;
	snprintf(spelled, sizeof(spelled), "--%s", o->name);
	if (!o->value_name) {
		if (eq)
			return parse_error(cmd, "option '%s' takes no value", spelled);
		return apply(cmd, o, spelled, NULL);
	}
	char *value = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
	if (!value || !*value)
		return parse_error(cmd, "option '%s' needs a value", spelled);
	return apply(cmd, o, spelled, value);
}

/* `-x`, `-xVALUE`, `-x VALUE` or flags grouped, `-hx`, at argv[*i]. */
static int parse_short(const struct cli_command *cmd, int argc, char **argv, int *i)
{
	for (char *p = argv[*i] + 1; *p; p++) {
		const struct cli_option *o = find_short(cmd, *p);
		char spelled[3] = {'-', *p, '\0'};
		int rc;

		if (!o)
			return parse_error(cmd, "unknown option '%s'", spelled);
		if (!o->value_name) {
			rc = apply(cmd, o, spelled, NULL);
			if (rc != CLI_OK)
				return rc;
			continue;
		}
		char *value = p[1] ? p + 1 : *i + 1 < argc ? argv[++*i] : NULL;
		if (!value || !*value)
			return parse_error(cmd, "option '%s' needs a value", spelled);
		return apply(cmd, o, spelled, value);
	}
	return CLI_OK;
}

int cli_parse(const struct cli_command *cmd, int argc, char **argv, int *ret_n)
{
	bool options_done = false;
	int n = 0, rc;

	/* Operands are moved down to argv[1 + n]; 1 + n <= i always, so only
	 * slots already read are written. */
	for (int i = 1; i < argc; i++) {
		char *arg = argv[i];

		if (options_done || arg[0] != '-' || arg[1] == '\0') {
			argv[1 + n++] = arg;
			options_done = options_done || cmd->stop_at_operand;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			options_done = true;
			continue;
		}
		rc = arg[1] == '-' ? parse_long(cmd, argc, argv, &i) : parse_short(cmd, argc, argv, &i);
		if (rc != CLI_OK)
			return rc;
	}
	argv[1 + n] = NULL;
	if (n < cmd->min_operands || (cmd->max_operands >= 0 && n > cmd->max_operands))
		return parse_error(cmd, "expected %s, got %d argument%s", cmd->operands, n,
				   n == 1 ? "" : "s");
	*ret_n = n;
	return CLI_OK;
}

bool cli_dispatch(const struct cli_command *cmd, int argc, char **argv, int *ret_status)
{
	int n, rc = cli_parse(cmd, argc, argv, &n);

	if (rc != CLI_OK) {
		*ret_status = cli_exit_status(rc);
		return true;
	}
	if (n == 0)
		return false;
	if (strcmp(argv[1], "help") == 0) {
		cli_help(stdout, cmd);
		*ret_status = 0;
		return true;
	}
	for (size_t i = 0; i < cmd->n_subcommands; i++) {
		if (strcmp(argv[1], cmd->subcommands[i].name) == 0) {
			*ret_status = cmd->subcommands[i].fn(n, argv + 1);
			return true;
		}
	}
	*ret_status = parse_error(cmd, "unknown command '%s'", argv[1]);
	return true;
}

/* ---- help --------------------------------------------------------------- */

static void spell(const struct cli_option *o, char *buf, size_t len)
{
	if (o->short_name)
		snprintf(buf, len, "-%c, --%s%s%s", o->short_name, o->name,
			 o->value_name ? " " : "", o->value_name ? o->value_name : "");
	else
		snprintf(buf, len, "--%s%s%s", o->name, o->value_name ? " " : "",
			 o->value_name ? o->value_name : "");
}

/* Text with each line after a '\n' indented by `indent` columns. */
static void indented(FILE *f, const char *text, int indent)
{
	for (const char *p = text; *p; p++) {
		fputc(*p, f);
		if (*p == '\n' && p[1])
			fprintf(f, "%*s", indent, "");
	}
	fputc('\n', f);
}

void cli_options_synopsis(const struct cli_command *cmd, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < cmd->n_options && used < len; i++) {
		const struct cli_option *o = &cmd->options[i];
		snprintf(buf + used, len - used, "%s[--%s%s%s]", i ? " " : "", o->name,
			 o->value_name ? " " : "", o->value_name ? o->value_name : "");
		used = strlen(buf);
	}
}

static void print_commands(FILE *f, const struct cli_command *cmd)
{
	int width = 0;
	char syn[512];

	for (size_t i = 0; i < cmd->n_subcommands; i++) {
		int w = (int)strlen(cmd->subcommands[i].name);
		width = w > width ? w : width;
	}
	fprintf(f, "commands:\n");
	for (size_t i = 0; i < cmd->n_subcommands; i++) {
		const struct cli_subcommand *s = &cmd->subcommands[i];
		fprintf(f, "  %-*s  %s\n", width, s->name, s->summary);
		if (s->cmd) {
			cli_options_synopsis(s->cmd, syn, sizeof(syn));
			const char *operands = s->cmd->synopsis ? s->cmd->synopsis : "";
			fprintf(f, "  %*s  proctor %s%s%s%s%s\n", width, "", s->cmd->name,
				syn[0] ? " " : "", syn, operands[0] ? " " : "", operands);
		}
	}
	fputc('\n', f);
}

void cli_help(FILE *f, const struct cli_command *cmd)
{
	char buf[160];
	int width = 0;

	const char *syn = cmd->synopsis ? cmd->synopsis : "";

	fprintf(f, "usage: proctor%s%s [OPTIONS]%s%s\n\n", cmd->name ? " " : "",
		cmd->name ? cmd->name : "", syn[0] ? " " : "", syn);
	if (cmd->about)
		fprintf(f, "%s\n\n", cmd->about);
	if (cmd->n_subcommands)
		print_commands(f, cmd);
	for (size_t i = 0; i <= cmd->n_options; i++) {
		spell(option_at(cmd, i), buf, sizeof(buf));
		int w = (int)strlen(buf);
		if (w <= MAX_COLUMN && w > width)
			width = w;
	}
	for (size_t i = 0; i <= cmd->n_options; i++) {
		const struct cli_option *o = option_at(cmd, i);
		if (o->heading)
			fprintf(f, "%s%s:\n", i ? "\n" : "", o->heading);
		else if (i == 0)
			fprintf(f, "options:\n");
		spell(o, buf, sizeof(buf));
		if ((int)strlen(buf) > width)
			fprintf(f, "  %s\n  %*s  ", buf, width, "");
		else
			fprintf(f, "  %-*s  ", width, buf);
		indented(f, o->help, width + 4);
	}
	if (cmd->notes)
		fprintf(f, "\n%s\n", cmd->notes);
	fprintf(f, "\nEXIT STATUS\n%s\n", cmd->exit_status);
}
