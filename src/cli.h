/* The command line of every proctor command: one option table drives parsing, --help and usage errors. */
#ifndef PROCTOR_CLI_H
#define PROCTOR_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "err.h"
#include "sandbox.h" /* DEFAULT_STATE_DIR */

/*
 * Theory of operation
 * -------------------
 * A command describes itself once, in a `struct cli_command` holding a
 * table of `struct cli_option`.  cli_parse() reads argv with that table and
 * writes each value to the option's typed destination; the same table is
 * what cli_help() prints, so --help cannot forget an option.  -h and --help
 * are added to every table.
 *
 * Accepted spellings, as getopt_long(3) has them: `--name VALUE`,
 * `--name=VALUE`, a unique prefix of a long name, `-x VALUE`, `-xVALUE`,
 * short flags grouped (`-hx`), and `--` ending the options.  Operands may
 * come between options unless the command sets `stop_at_operand` (proctor
 * run: everything from the program on is the program's own argv).  A value
 * is taken as given, even when it starts with '-'; an empty value is no
 * value.
 *
 * Every mistake is one line on stderr and exit status 2, in one shape:
 *   proctor: CMD: unknown option '--bogus' (see 'proctor CMD --help')
 *   proctor: CMD: option '--cpu' needs a value (see 'proctor CMD --help')
 *   proctor: CMD: option '--json' takes no value (see 'proctor CMD --help')
 *   proctor: CMD: expected ASSIGNMENT and DIR, got 1 argument (see ...)
 * and a value the option refuses is named with the option:
 *   proctor: --slots: '0' is not a whole number from 1 to 256
 */

/* Sandbox slots of a host, unless --slots says otherwise, and the most. */
#define CLI_DEFAULT_SLOTS 64
#define CLI_MAX_SLOTS	  256

/* Return values of cli_parse(); a command exits with cli_exit_status(). */
enum {
	CLI_OK = 0,    /* parsed; go on */
	CLI_HELP = 1,  /* --help was printed on stdout: exit 0 */
	CLI_USAGE = 2, /* a usage error was printed on stderr: exit 2 */
};

/* What an option does with what follows it. */
enum cli_kind {
	CLI_FLAG,   /* no value; *(bool *)dest = true */
	CLI_STRING, /* *(const char **)dest = the value (a pointer into argv) */
	CLI_UINT,   /* a whole number in [min, max]; *(unsigned *)dest */
	CLI_CHOICE, /* one of `choices`; *(const char **)dest = the value */
	CLI_CALL,   /* call(opt, value, e); value is NULL when value_name is */
};

struct cli_option {
	const char *name;	/* long name without "--" */
	char short_name;	/* the letter of "-x", or 0 */
	enum cli_kind kind;
	const char *value_name; /* "N", "DIR" in --help; NULL: takes no value (CLI_FLAG,
				   or a CLI_CALL flag); required for the other kinds */
	const char *help;	/* '\n' starts a continuation line */
	const char *heading;	/* starts a group in --help ("limits"), or NULL */
	void *dest;
	unsigned min, max;	     /* CLI_UINT: inclusive bounds */
	const char *const *choices; /* CLI_CHOICE: NULL-terminated */
	/* CLI_CALL: store or refuse the value; on refusal e->msg is the whole
	 * message after "proctor: ", naming the option ("--env: ..."), and
	 * e->kind ERR_USAGE: a refusal is always reported as a usage error. */
	int (*call)(const struct cli_option *opt, char *value, struct err *e);
	bool *given; /* set to true when the option appears, or NULL */
};

struct cli_command;

/* A command word below a command (proctor run, proctor image build). */
struct cli_subcommand {
	const char *name;
	const char *summary;		  /* one line for the commands: list */
	int (*fn)(int argc, char **argv); /* argv[0] is the command word */
	const struct cli_command *cmd;	  /* its table, shown in the list; may be NULL */
};

struct cli_command {
	const char *name;     /* "run", "image build"; NULL for proctor itself */
	const char *synopsis; /* operands after "[OPTIONS] " in the usage line */
	const char *about;    /* paragraphs between the usage line and the options */
	const struct cli_subcommand *subcommands; /* listed as commands:, or NULL */
	size_t n_subcommands;
	const struct cli_option *options;
	size_t n_options;
	const char *notes;	 /* paragraphs after the options, or NULL */
	const char *exit_status; /* the EXIT STATUS section, one "  N  meaning" line each */
	const char *operands;	 /* what the operands are, for the count error:
				    "ASSIGNMENT and DIR" */
	int min_operands, max_operands; /* max_operands -1: any number */
	bool stop_at_operand;		/* the first operand ends the options */
};

/*
 * Parse argv[1..argc) (argv[0] is the command word) with cmd's table.
 * CLI_OK: every option is stored, and the operands, in order, are moved to
 * argv[1..1 + *ret_n] with argv[1 + *ret_n] = NULL.  CLI_HELP: --help was
 * printed on stdout.  CLI_USAGE: one line was printed on stderr.  Values
 * stored are pointers into argv, valid as long as argv is.
 */
int cli_parse(const struct cli_command *cmd, int argc, char **argv, int *ret_n);

/* The exit status for a cli_parse() result other than CLI_OK. */
static inline int cli_exit_status(int parse_result)
{
	return parse_result == CLI_HELP ? 0 : err_exit_status(ERR_USAGE);
}

/* The whole --help text of cmd. */
void cli_help(FILE *f, const struct cli_command *cmd);

/*
 * A command made of command words (proctor, proctor image): its own
 * options up to the first operand, then the word, whose fn runs with argv
 * from the word on.  Returns true with *ret_status set when a word ran,
 * help was printed ("help" is a word too) or a usage error was; false when
 * the options parsed and no word followed.
 */
bool cli_dispatch(const struct cli_command *cmd, int argc, char **argv, int *ret_status);

/* The option part of a usage line, "[--json] [--state-dir DIR]", into buf. */
void cli_options_synopsis(const struct cli_command *cmd, char *buf, size_t len);

/* One line on stderr, "proctor: " and the message, whatever the user typed
 * (control characters, and bytes of text that is not UTF-8, become '?'). */
void cli_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cli_say() and 2, the usage exit status. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* cli_say() of e's message, and the exit status of its kind. */
int cli_fail(const struct err *e);

/* Parse a whole decimal number in [min, max]; on failure print
 * "proctor: OPT: 'TEXT' is not a whole number from MIN to MAX" and return 2. */
int cli_parse_uint(const char *opt, const char *text, unsigned min, unsigned max,
		   unsigned *ret);

/* The state directory before --state-dir: $PROCTOR_STATE_DIR when set and
 * not empty, else DEFAULT_STATE_DIR. */
const char *cli_state_dir(void);

/* The options every command that has them spells and explains alike.
 * `what` is the --help text before the default. */
#define CLI_STR_(x) #x
#define CLI_STR(x)  CLI_STR_(x)
#define CLI_OPTION_JSON(dest_, what)                                                               \
	{.name = "json", .kind = CLI_FLAG, .dest = (dest_), .help = "print " what " as JSON"}
#define CLI_OPTION_STATE_DIR(dest_, what)                                                          \
	{.name = "state-dir",                                                                      \
	 .kind = CLI_STRING,                                                                       \
	 .value_name = "DIR",                                                                      \
	 .dest = (dest_),                                                                          \
	 .help = what " (default " DEFAULT_STATE_DIR ",\nor $PROCTOR_STATE_DIR)"}
#define CLI_OPTION_SLOTS(dest_, given_)                                                            \
	{.name = "slots",                                                                          \
	 .kind = CLI_UINT,                                                                         \
	 .value_name = "N",                                                                        \
	 .dest = (dest_),                                                                          \
	 .min = 1,                                                                                 \
	 .max = CLI_MAX_SLOTS,                                                                     \
	 .given = (given_),                                                                        \
	 .help = "sandboxes allowed at once on this host (default " CLI_STR(                       \
	     CLI_DEFAULT_SLOTS) ")"}
#define CLI_OPTION_ISOLATION(dest_, what)                                                          \
	{.name = "isolation",                                                                      \
	 .kind = CLI_STRING,                                                                       \
	 .value_name = "NAME",                                                                     \
	 .dest = (dest_),                                                                          \
	 .help = "auto (default), jail or vm; auto picks vm when /dev/kvm\nworks and " what}

#endif
