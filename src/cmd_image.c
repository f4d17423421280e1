/* `proctor image`: build, list, show and remove system images (docs/images.md). */
#include "cmd_image.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "grade/runtime_pyc.h"
#include "image/image.h"
#include "vm/vm.h"

#define IMAGE_EXIT_STATUS                                                                          \
	"  0  done\n"                                                                              \
	"  1  build: the build failed (mmdebstrap: an unknown package, the mirror;\n"              \
	"     a setup command of the recipe)\n"                                                    \
	"  2  usage error, an invalid recipe, or a pin that names no image\n"                      \
	"  3  Proctor's own failure"

static const struct cli_command image_build_cmd = {
    .name = "image build", .synopsis = "RECIPE", .operands = "one RECIPE"};
static const struct cli_command image_ls_cmd = {.name = "image ls", .operands = "no arguments"};
static const struct cli_command image_show_cmd = {
    .name = "image show", .synopsis = "PIN", .operands = "one PIN"};
static const struct cli_command image_rm_cmd = {
    .name = "image rm", .synopsis = "NAME@VERSION", .operands = "one NAME@VERSION"};

static int image_word(int argc, char **argv);

static const struct cli_subcommand image_words[] = {
    {"build", "build RECIPE (YAML) into the next version of its name", image_word,
     &image_build_cmd},
    {"ls", "list every image version", image_word, &image_ls_cmd},
    {"show", "resolve a pin: NAME@VERSION, sha256:HEX or host", image_word, &image_show_cmd},
    {"rm", "remove one version (its number is never reused)", image_word, &image_rm_cmd},
};

static const struct cli_command image_cmd = {
    .name = "image",
    .synopsis = "COMMAND [ARGS]",
    .about = "System images: the read-only system tree a sandbox runs on, built from\n"
	     "Debian packages with mmdebstrap (see docs/images.md).  'proctor image\n"
	     "COMMAND --help' lists the command's options.",
    .subcommands = image_words,
    .n_subcommands = sizeof(image_words) / sizeof(image_words[0]),
    .exit_status = IMAGE_EXIT_STATUS,
    .operands = "COMMAND",
    .min_operands = 0,
    .max_operands = -1,
    .stop_at_operand = true,
};

static json_t *info_json(const struct image_info *i)
{
	char pin[96];

	if (i->version)
		snprintf(pin, sizeof(pin), "%s@%u", i->name, i->version);
	else
		snprintf(pin, sizeof(pin), "%s", i->name);
	return json_pack("{s:s, s:s, s:o, s:s, s:s, s:o}", "pin", pin, "name", i->name, "version",
			 i->version ? json_integer(i->version) : json_null(), "digest", i->digest,
			 "rootfs", i->rootfs, "squashfs",
			 i->squashfs[0] ? json_string(i->squashfs) : json_null());
}

static int print_json(json_t *j)
{
	int rc = j ? json_dumpf(j, stdout, JSON_INDENT(2)) : -1;

	json_decref(j);
	if (rc < 0) {
		cli_say("image: cannot print JSON");
		return err_exit_status(ERR_INTERNAL);
	}
	fputc('\n', stdout);
	return 0;
}

static void print_info(const struct image_info *i)
{
	if (i->version)
		printf("%s@%u %s\n", i->name, i->version, i->digest);
	else
		printf("%s %s\n", i->name, i->digest);
}

int cmd_image(int argc, char **argv)
{
	int status;

	if (cli_dispatch(&image_cmd, argc, argv, &status))
		return status;
	return cli_usage_error("image: expected a COMMAND: build, ls, show or rm (see 'proctor "
			       "image --help')");
}

/* One command word, argv[0]: its options and operands, then the work. */
static int image_word(int argc, char **argv)
{
	const char *state_dir = cli_state_dir(), *sub = argv[0];
	bool json = false;
	struct image_info info;
	struct err e = {0};
	int rc, nargs;
	bool rm = !strcmp(sub, "rm");
	const struct cli_option options[] = {
	    CLI_OPTION_STATE_DIR(&state_dir, "images live in DIR/images"),
	    CLI_OPTION_JSON(&json, "the result"),
	};
	const struct cli_command *word = !strcmp(sub, "build")	? &image_build_cmd
					 : !strcmp(sub, "ls")	? &image_ls_cmd
					 : !strcmp(sub, "show") ? &image_show_cmd
								: &image_rm_cmd;
	struct cli_command cmd = *word;
	cmd.about = "A command of 'proctor image' (see 'proctor image --help').";
	cmd.options = options;
	cmd.n_options = rm ? 1 : 2; /* rm prints nothing to put in JSON */
	cmd.exit_status = IMAGE_EXIT_STATUS;
	cmd.min_operands = cmd.max_operands = !strcmp(sub, "ls") ? 0 : 1;
	rc = cli_parse(&cmd, argc, argv, &nargs);
	if (rc != CLI_OK)
		return cli_exit_status(rc);
	char **args = argv + 1;

	if (!strcmp(sub, "build")) {
		if (image_build(state_dir, args[0], &info, &e) < 0)
			return cli_fail(&e);
		if (json)
			return print_json(info_json(&info));
		print_info(&info);
		return 0;
	}
	if (!strcmp(sub, "show")) {
		if (image_resolve(state_dir, args[0], &info, &e) < 0) {
			err_wrap(&e, "image show");
			return cli_fail(&e);
		}
		if (json)
			return print_json(info_json(&info));
		print_info(&info);
		printf("rootfs %s\n", info.rootfs);
		if (info.squashfs[0])
			printf("squashfs %s\n", info.squashfs);
		return 0;
	}
	if (!strcmp(sub, "rm")) {
		/* Its microVM snapshots and kits, and its runtime bytecode, go
		 * with it. */
		struct image_info gone;
		char gone_dir[sizeof(gone.rootfs)] = "";
		if (image_resolve(state_dir, args[0], &gone, &e) == 0 &&
		    strcmp(gone.rootfs, "/") != 0) {
			snprintf(gone_dir, sizeof(gone_dir), "%s", gone.rootfs);
			char *slash = strrchr(gone_dir, '/');
			if (slash)
				*slash = '\0';
		}
		rc = image_remove(state_dir, args[0], &e);
		if (rc == 0 && gone_dir[0]) {
			vm_forget_image(state_dir, gone_dir);
			runtime_pyc_forget(state_dir, gone.digest);
		}
		return rc < 0 ? cli_fail(&e) : 0;
	}
	/* ls */
	struct image_info *all = NULL;
	size_t n = 0;
	if (image_list(state_dir, &all, &n, &e) < 0) {
		err_wrap(&e, "image ls");
		return cli_fail(&e);
	}
	if (json) {
		json_t *arr = json_array();
		for (size_t i = 0; arr && i < n; i++)
			json_array_append_new(arr, info_json(&all[i]));
		free(all);
		return print_json(arr);
	}
	for (size_t i = 0; i < n; i++)
		print_info(&all[i]);
	free(all);
	return 0;
}
