/* proctor-helper: the unprivileged side that parses what submissions produced. */

/*
 * proctor runs this program as a sandbox slot's uid, with no capabilities,
 * no_new_privs and tight rlimits (src/grade/unpriv.c), for the jobs
 * that read untrusted structure: unpacking a submission (libarchive),
 * parsing a test report (libxml2, TAP, JSON) and reading the objects a
 * submission's build made (libelf).  It writes one JSON document
 * on stdout; proctor validates it (report_from_json) before using it.  A
 * crash or a hang here is a verdict about the input, never a privilege.
 *
 *   proctor-helper parse-report junit|tap|gradescope   < report   > report.json
 *   proctor-helper intake   (request JSON on stdin; fd 3: destination dir;
 *                            fd 4: the submission) > result.json
 *   proctor-helper scan-object  < object.o  > facts.json  (libelf: build.objects)
 *
 * The submission comes as a descriptor proctor opened, never as a path
 * (this uid may not be able to reach it): an archive's open file, or a
 * socket to proctor's opener for a directory (src/grade/opener.h).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capbuf.h"
#include "grade/elfscan.h"
#include "grade/intake.h"
#include "service/pack.h"
#include "util.h"
#include "grade/report.h"

/* All of fd, or *ret_over once more than `cap` bytes came: at most cap + 1
 * bytes are ever read. */
static char *read_all(int fd, size_t cap, size_t *ret_len, bool *ret_over)
{
	size_t len = 0, size = 65536 < cap + 1 ? 65536 : cap + 1;
	char *buf = malloc(size + 1);

	*ret_over = false;
	if (!buf)
		return NULL;
	for (;;) {
		if (len == size) {
			if (size > cap) {
				*ret_over = true;
				break;
			}
			size_t nsize = size < (cap + 1) / 2 ? size * 2 : cap + 1;
			char *nb = realloc(buf, nsize + 1);
			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
			size = nsize;
		}
		ssize_t n = read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*ret_len = len;
	return buf;
}

static int emit(json_t *j)
{
	int rc = j && json_dumpf(j, stdout, JSON_COMPACT) == 0 && fflush(stdout) == 0 ? 0 : 1;

	json_decref(j);
	return rc;
}

/*
 * Refuse the input, saying why.  The reason may quote the input (a parser's
 * message naming a tag, libxml2's own text): it is repaired to valid UTF-8
 * here, because JSON cannot carry anything else, and a helper that cannot
 * answer is taken for a broken helper (Proctor's failure, retried) instead
 * of a refused input (the submission's).
 */
static int fail(const char *why)
{
	char text[sizeof(((struct err *)0)->msg)];

	utf8_fix_into(text, sizeof(text), why, strlen(why));
	json_t *j = json_pack("{s:s}", "error", text);
	if (!j)
		j = json_pack("{s:s}", "error", "the input is unusable (no message)");
	return emit(j);
}

/*
 * Our own failure, not the input's: a request proctor got wrong, out of
 * memory, the staging directory full or unwritable, the opener gone.
 * Answered as {"failure": why}, which proctor retries and never charges to
 * the submission (unpriv.h).
 */
static int our_failure(const char *why)
{
	char text[sizeof(((struct err *)0)->msg)];

	utf8_fix_into(text, sizeof(text), why, strlen(why));
	json_t *j = json_pack("{s:s}", "failure", text);
	return j ? emit(j) : 1;
}

static int parse_report(const char *format)
{
	struct report_caps caps;
	struct report r = {0};
	struct err e;
	size_t len;
	bool over;
	int rc;

	report_caps_default(&caps);
	char *buf = read_all(0, caps.max_bytes, &len, &over);
	if (!buf)
		return our_failure("out of memory");
	if (over) {
		free(buf);
		return fail("report is larger than the cap");
	}
	if (strcmp(format, "junit") == 0)
		rc = junit_parse(buf, len, &caps, &r, &e);
	else if (strcmp(format, "tap") == 0)
		rc = tap_parse(buf, len, &caps, &r, &e);
	else if (strcmp(format, "gradescope") == 0)
		rc = gradescope_parse(buf, len, &caps, &r, &e);
	else {
		free(buf);
		return our_failure("unknown report format");
	}
	free(buf);
	if (rc < 0)
		return fail(e.msg);
	json_t *j = report_to_json(&r);
	report_free(&r);
	return j ? emit(json_pack("{s:o}", "report", j)) : our_failure("out of memory");
}

static json_t *string_list(char **v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static int intake(void)
{
	json_error_t jerr;
	json_t *req = json_loadf(stdin, JSON_REJECT_DUPLICATES, &jerr), *g, *r;
	const char *globs[256], *required[256];
	struct intake_rules rules = {.globs = globs, .required = required};
	json_int_t max_bytes, max_entries, max_expanded;
	struct intake_result res = {0};
	struct err e;
	size_t i;

	if (!req || json_unpack(req, "{s:o, s:o, s:I, s:I, s:I}", "globs", &g, "required", &r,
				"max_bytes", &max_bytes, "max_entries", &max_entries,
				"max_expanded", &max_expanded) < 0 ||
	    !json_is_array(g) || !json_is_array(r) || json_array_size(g) > 256 ||
	    json_array_size(r) > 256) {
		json_decref(req);
		return our_failure("bad intake request");
	}
	for (i = 0; i < json_array_size(g); i++)
		globs[i] = json_string_value(json_array_get(g, i));
	rules.n_globs = i;
	for (i = 0; i < json_array_size(r); i++)
		required[i] = json_string_value(json_array_get(r, i));
	rules.n_required = i;
	for (i = 0; i < rules.n_globs; i++)
		if (!globs[i])
			return our_failure("bad intake request");
	for (i = 0; i < rules.n_required; i++)
		if (!required[i])
			return our_failure("bad intake request");
	rules.max_bytes = (uint64_t)max_bytes;
	rules.max_entries = (uint64_t)max_entries;
	rules.max_expanded = (uint64_t)max_expanded;
	/* An upload of a tree (the sandbox API's), not a submission. */
	rules.as_is = json_is_true(json_object_get(req, "as_is"));
	/* intake_submission() fails only for our own reasons; a submission
	 * it refuses is res.rejected. */
	if (intake_submission(4, 3, &rules, &res, &e) < 0) {
		json_decref(req);
		return our_failure(e.msg);
	}
	json_decref(req);
	json_t *out = json_pack("{s:b, s:s, s:o, s:o, s:I, s:s}", "rejected", res.rejected, "reason",
				res.reason, "taken", string_list(res.taken, res.n_taken), "ignored",
				string_list(res.ignored, res.n_ignored), "bytes_taken",
				(json_int_t)res.bytes_taken, "digest", res.digest);
	intake_result_free(&res);
	return out ? emit(out) : our_failure("out of memory");
}

/* The header, sections and non-local symbols of a compiled object
 * (grade/elfscan.h), as {"object": facts}; proctor decides what they mean
 * (grade/symcheck.h). */
static int scan_object(void)
{
	size_t len;
	bool over;
	json_t *facts;
	struct err e;

	char *buf = read_all(0, ELFSCAN_MAX_BYTES, &len, &over);
	if (!buf)
		return our_failure("out of memory");
	if (over) {
		free(buf);
		return fail("the object is larger than the cap");
	}
	int rc = elfscan_object(buf, len, &facts, &e);
	free(buf);
	if (rc < 0)
		return e.errnum == ENOMEM ? our_failure(e.msg) : fail(e.msg);
	return emit(json_pack("{s:o}", "object", facts));
}

/* The directory open at fd 3 packed as one gzip'd tar (service/pack.h:
 * deterministic, regular files and directories) into fd 4, at most
 * {"max"} bytes: {"bytes": N}.  For the sandbox keeper's download and
 * snapshot: the tree came out of a sandbox, so its names are a program's
 * (pack_path() takes them as bytes), and only an unprivileged process
 * walks it. */
static int pack(void)
{
	json_error_t jerr;
	json_t *req = json_loadf(stdin, JSON_REJECT_DUPLICATES, &jerr);
	json_int_t max = 0;
	void *data = NULL;
	size_t len = 0;
	struct err e;

	if (!req || json_unpack(req, "{s:I}", "max", &max) < 0 || max <= 0) {
		json_decref(req);
		return our_failure("bad pack request");
	}
	json_decref(req);
	/* The magic link reaches the directory proctor opened, whatever path
	 * it has (this uid could not walk to it). */
	/* Past `max` is the tree's doing (ERR_INPUT, no errno); anything
	 * else (a file this uid cannot read) is Proctor's. */
	if (pack_path("/proc/self/fd/3", (uint64_t)max, &data, &len, &e) < 0)
		return e.kind == ERR_INPUT && e.errnum == 0 ? fail(e.msg) : our_failure(e.msg);
	int rc = write_all(4, data, len) < 0 ? our_failure("write the archive") : 0;
	free(data);
	return rc ? rc : emit(json_pack("{s:I}", "bytes", (json_int_t)len));
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "parse-report") == 0)
		return parse_report(argv[2]);
	if (argc == 2 && strcmp(argv[1], "intake") == 0)
		return intake();
	if (argc == 2 && strcmp(argv[1], "scan-object") == 0)
		return scan_object();
	if (argc == 2 && strcmp(argv[1], "pack") == 0)
		return pack();
	fprintf(stderr, "usage: proctor-helper parse-report FORMAT | proctor-helper intake | "
			"proctor-helper scan-object | proctor-helper pack\n"
			"(run by proctor, unprivileged; not meant to be run by hand)\n");
	return 2;
}
