/* `proctor grade`: one submission against one assignment. */
#include "cmd_grade.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grade/assignment.h"
#include "grade/grade.h"
#include "util.h"



static void usage(FILE *f)
{
	fprintf(f,
		"usage: proctor grade [OPTIONS] ASSIGNMENT SUBMISSION\n\n"
		"Grade one SUBMISSION (a directory, .zip, .tar or .tar.gz) against ASSIGNMENT\n"
		"(a directory holding assignment.yaml; see docs/assignment.md).\n\n"
		"options:\n"
		"  --json               print the result document (docs/result.md)\n"
		"  --format F           text (default), json, or gradescope (results.json)\n"
		"  --view V             instructor (default) or student: hidden tests and raw\n"
		"                       output removed\n"
		"  --out FILE           write the document to FILE instead of stdout\n"
		"  --isolation NAME     auto (default), jail or vm; auto picks vm when /dev/kvm\n"
		"                       works and the assignment pins an image, else jail; an\n"
		"                       assignment's isolation: is used instead of auto\n"
		"  --state-dir DIR      slot locks and scratch (default %s or $PROCTOR_STATE_DIR)\n"
		"  --slots N            sandboxes allowed at once on this host (default 64)\n\n"
		"EXIT STATUS\n"
		"  0  a verdict was produced, whatever the score\n"
		"  2  usage error, or the assignment is invalid\n"
		"  3  Proctor's own failure (status \"error\"): retry later\n",
		DEFAULT_STATE_DIR);
}

int cmd_grade(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"json", no_argument, NULL, 'j'},	 {"format", required_argument, NULL, 'f'},
		{"view", required_argument, NULL, 'v'},	 {"out", required_argument, NULL, 'o'},
		{"isolation", required_argument, NULL, 'i'},
		{"state-dir", required_argument, NULL, 's'},
		{"slots", required_argument, NULL, 'n'}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *format = "text", *view = "instructor", *out = NULL, *isolation = "auto";
	const char *state_dir = getenv("PROCTOR_STATE_DIR");
	unsigned slots = 64;
	struct err e;

	if (!state_dir || !*state_dir)
		state_dir = DEFAULT_STATE_DIR;
	opterr = 0;
	optind = 1;
	for (;;) {
		int c = getopt_long(argc, argv, "+h", longopts, NULL);
		if (c == -1)
			break;
		switch (c) {
		case 'j':
			format = "json";
			break;
		case 'f':
			format = optarg;
			if (strcmp(format, "text") && strcmp(format, "json") &&
			    strcmp(format, "gradescope")) {
				fprintf(stderr, "proctor: --format: '%s' is not text, json or "
						"gradescope\n", optarg);
				return 2;
			}
			break;
		case 'v':
			view = optarg;
			if (strcmp(view, "instructor") && strcmp(view, "student")) {
				fprintf(stderr, "proctor: --view: '%s' is not instructor or student\n",
					optarg);
				return 2;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'i':
			isolation = optarg;
			break;
		case 's':
			state_dir = optarg;
			break;
		case 'n': {
			uint64_t v;
			if (parse_u64(optarg, strlen(optarg), &v) < 0 || v < 1 || v > 256) {
				fprintf(stderr, "proctor: --slots: '%s' is not a whole number from 1 "
						"to 256\n", optarg);
				return 2;
			}
			slots = (unsigned)v;
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "proctor: grade: unknown option or missing value '%s' "
					"(see 'proctor grade --help')\n", argv[optind - 1]);
			return 2;
		}
	}
	if (argc - optind != 2) {
		fprintf(stderr, "proctor: grade: expected ASSIGNMENT and SUBMISSION (see "
				"'proctor grade --help')\n");
		return 2;
	}
	const char *apath = argv[optind], *spath = argv[optind + 1];
	if (access(spath, F_OK) < 0) {
		fprintf(stderr, "proctor: grade: submission '%s': %s\n", spath, strerror(errno));
		return 2;
	}
	struct assignment *a = NULL;
	if (assignment_load(apath, &a, &e) < 0) {
		fprintf(stderr, "proctor: %s\n", e.msg);
		return 2;
	}
	struct grade_options o = {
		.sandbox = {.state_dir = state_dir, .max_slots = slots, .uid_base = SANDBOX_UID_BASE},
	};
	char why[256];
	if (grade_prepare(isolation, a, &o.ops, why, sizeof(why), &e) < 0) {
		fprintf(stderr, "proctor: %s\n", e.msg);
		assignment_free(a);
		return strncmp(e.msg, "--isolation", 11) == 0 ? 2 : 3;
	}
	json_t *result = NULL;
	if (grade_submission(a, spath, &o, &result, &e) < 0) {
		fprintf(stderr, "proctor: %s\n", e.msg);
		assignment_free(a);
		return 3;
	}
	int status = strcmp(json_string_value(json_object_get(result, "status")), "error") == 0 ? 3 : 0;
	json_t *shown = strcmp(view, "student") == 0 ? grade_student_view(result) : json_incref(result);
	if (strcmp(format, "gradescope") == 0) {
		json_t *gs = grade_to_gradescope(shown);
		json_decref(shown);
		shown = gs;
	}
	FILE *f = out ? fopen(out, "w") : stdout;
	if (!f) {
		fprintf(stderr, "proctor: --out '%s': %s\n", out, strerror(errno));
		status = 2;
	} else {
		if (strcmp(format, "text") == 0)
			grade_print_summary(f, shown);
		else {
			json_dumpf(shown, f, JSON_INDENT(2) | JSON_ENSURE_ASCII);
			fputc('\n', f);
		}
		if (out && fclose(f) != 0) {
			fprintf(stderr, "proctor: --out '%s': %s\n", out, strerror(errno));
			status = 3;
		}
	}
	json_decref(shown);
	json_decref(result);
	assignment_free(a);
	return status;
}
