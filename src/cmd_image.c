/* `proctor image`: build, list, show and remove system images (docs/images.md). */
#include "cmd_image.h"

#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "vm/vm.h"

#define DEFAULT_STATE_DIR "/var/lib/proctor"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: proctor image COMMAND [OPTIONS]\n\n"
		"System images: the read-only system tree a sandbox runs on, built from\n"
		"Debian packages with mmdebstrap (see docs/images.md).\n\n"
		"commands:\n"
		"  build [--json] RECIPE   build RECIPE (YAML) into the next version of its name\n"
		"  ls [--json]             list every image version\n"
		"  show [--json] PIN       resolve a pin: NAME@VERSION, sha256:HEX or host\n"
		"  rm NAME@VERSION         remove one version (its number is never reused)\n\n"
		"options:\n"
		"  --json             print JSON instead of text\n"
		"  --state-dir DIR    images live in DIR/images (default %s,\n"
		"                     or $PROCTOR_STATE_DIR)\n\n"
		"EXIT STATUS\n"
		"  0  done\n"
		"  1  build: the build failed (mmdebstrap: an unknown package, the mirror;\n"
		"     a setup command of the recipe)\n"
		"  2  usage error, an invalid recipe, or a pin that names no image\n"
		"  3  Proctor's own failure\n",
		DEFAULT_STATE_DIR);
}

static int exit_status(int rc)
{
	switch (rc) {
	case 0:
		return 0;
	case IMAGE_BUILD_FAILED:
		return 1;
	case IMAGE_BAD_INPUT:
		return 2;
	default:
		return 3;
	}
}

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
	if (!j || json_dumpf(j, stdout, JSON_INDENT(2)) < 0) {
		json_decref(j);
		fprintf(stderr, "proctor: image: cannot print JSON\n");
		return 3;
	}
	fputc('\n', stdout);
	json_decref(j);
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
	static const struct option longopts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"state-dir", required_argument, NULL, 's'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *state_dir = getenv("PROCTOR_STATE_DIR"), *sub;
	bool json = false;
	struct image_info info;
	struct err e = {0};
	int rc;

	if (!state_dir || !*state_dir)
		state_dir = DEFAULT_STATE_DIR;
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	sub = argv[1];
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
		usage(stdout);
		return 0;
	}
	if (strcmp(sub, "build") && strcmp(sub, "ls") && strcmp(sub, "show") && strcmp(sub, "rm")) {
		fprintf(stderr,
			"proctor: image: unknown command '%s' (try 'proctor image --help')\n", sub);
		return 2;
	}
	/* Options after the command word: getopt sees "build --json X" as
	 * a program named "build". */
	int ac = argc - 1;
	char **av = argv + 1;
	opterr = 0;
	optind = 1;
	for (;;) {
		int c = getopt_long(ac, av, "+h", longopts, NULL);
		if (c == -1)
			break;
		switch (c) {
		case 'j':
			json = true;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr,
				"proctor: image %s: unknown option or missing value '%s' "
				"(see 'proctor image --help')\n",
				sub, av[optind - 1]);
			return 2;
		}
	}
	int nargs = ac - optind;
	char **args = av + optind;
	int want = strcmp(sub, "ls") == 0 ? 0 : 1;
	if (nargs != want) {
		fprintf(stderr, "proctor: image %s: expected %s (see 'proctor image --help')\n",
			sub,
			!strcmp(sub, "ls")	? "no arguments"
			: !strcmp(sub, "build") ? "one RECIPE"
			: !strcmp(sub, "show")	? "one PIN"
						: "one NAME@VERSION");
		return 2;
	}
	if (json && !strcmp(sub, "rm")) {
		fprintf(stderr, "proctor: image rm: --json is not an option of rm\n");
		return 2;
	}

	if (!strcmp(sub, "build")) {
		rc = image_build(state_dir, args[0], &info, &e);
		if (rc < 0) {
			fprintf(stderr, "proctor: %s\n", e.msg);
			return exit_status(rc);
		}
		if (json)
			return print_json(info_json(&info));
		print_info(&info);
		return 0;
	}
	if (!strcmp(sub, "show")) {
		rc = image_resolve(state_dir, args[0], &info, &e);
		if (rc < 0) {
			fprintf(stderr, "proctor: image show: %s\n", e.msg);
			return exit_status(rc);
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
		/* Its microVM snapshots and kits go with it. */
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
		if (rc == 0 && gone_dir[0])
			vm_forget_image(state_dir, gone_dir);
		if (rc < 0) {
			fprintf(stderr, "proctor: %s\n", e.msg);
			return exit_status(rc);
		}
		return 0;
	}
	/* ls */
	struct image_info *all = NULL;
	size_t n = 0;
	rc = image_list(state_dir, &all, &n, &e);
	if (rc < 0) {
		fprintf(stderr, "proctor: image ls: %s\n", e.msg);
		return exit_status(rc);
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
