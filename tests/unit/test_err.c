/* Unit tests of err.c: kinds that survive the way up, the one table of what they mean, and cuts on
 * character boundaries. */
#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "err.h"
#include "grade/assignment.h"
#include "grade/grade.h"
#include "host/tree.h"
#include "sandbox.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Well-formed UTF-8 (no overlong forms, surrogates or values past U+10FFFF). */
static bool valid_utf8(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		unsigned c = *s, cp;
		size_t n;

		if (c < 0x80) {
			s++;
			continue;
		} else if (c >= 0xc2 && c <= 0xdf) {
			n = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			n = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			n = 3;
			cp = c & 0x07;
		} else {
			return false;
		}
		for (size_t i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		s += n + 1;
	}
	return true;
}

/* `pad` ASCII bytes, then the character `ch` repeated up to len-1 bytes. */
static void fill(char *buf, size_t len, size_t pad, const char *ch)
{
	size_t n = 0, w = strlen(ch);

	while (n < pad && n + 1 < len)
		buf[n++] = 'x';
	while (n + w < len) {
		memcpy(buf + n, ch, w);
		n += w;
	}
	buf[n] = '\0';
}

static const char *const characters[] = {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80"};

/* ---- kinds on the way up ---- */

static void test_err_set_is_proctors_own_failure(void **state)
{
	(void)state;
	struct err e;

	err_setk(&e, ERR_INPUT, 0, "earlier");
	err_set(&e, EIO, "read '%s'", "x");
	/* A struct reused after a user's error is not left saying "user". */
	assert_int_equal(e.kind, ERR_INTERNAL);
	assert_int_equal(e.errnum, EIO);
	assert_string_equal(e.msg, "read 'x': Input/output error");
}

static void test_err_setk_sets_kind_errnum_and_message(void **state)
{
	(void)state;
	struct err e;

	assert_int_equal(err_setk(&e, ERR_NOT_FOUND, ENOENT, "image %s@%u", "small", 9), -1);
	assert_int_equal(e.kind, ERR_NOT_FOUND);
	assert_int_equal(e.errnum, ENOENT);
	assert_string_equal(e.msg, "image small@9: No such file or directory");
	assert_int_equal(err_setk(&e, ERR_USAGE, 0, "--cpu: 'x'"), -1);
	assert_int_equal(e.kind, ERR_USAGE);
	assert_int_equal(e.errnum, 0);
	assert_string_equal(e.msg, "--cpu: 'x'");
}

static void test_err_wrap_keeps_kind_and_errnum(void **state)
{
	(void)state;
	struct err e;

	for (int k = 0; k < ERR_KIND_COUNT; k++) {
		err_setk(&e, (enum err_kind)k, EACCES, "open");
		assert_int_equal(err_wrap(&e, "put '%s'", "a.txt"), -1);
		assert_int_equal(err_wrap(&e, "sandbox"), -1);
		assert_int_equal(e.kind, k);
		assert_int_equal(e.errnum, EACCES);
		assert_string_equal(e.msg, "sandbox: put 'a.txt': open: Permission denied");
	}
}

static void test_err_classify_changes_only_the_kind(void **state)
{
	(void)state;
	struct err e;

	err_set(&e, ETIMEDOUT, "apt-get download");
	assert_int_equal(err_classify(&e, ERR_BUILD_FAILED), -1);
	assert_int_equal(e.kind, ERR_BUILD_FAILED);
	assert_int_equal(e.errnum, ETIMEDOUT);
	assert_string_equal(e.msg, "apt-get download: Connection timed out");
}

/* ---- the table ---- */

static void test_err_table_is_total(void **state)
{
	(void)state;

	for (int k = 0; k < ERR_KIND_COUNT; k++) {
		const char *code = err_code((enum err_kind)k);
		int exit_status = err_exit_status((enum err_kind)k);
		int http = err_http_status((enum err_kind)k);

		assert_non_null(code);
		assert_true(code[0] != '\0');
		/* A code is a stable identifier: lowercase words joined by '_'. */
		for (const char *c = code; *c; c++)
			assert_true((*c >= 'a' && *c <= 'z') || *c == '_');
		/* 0 is success; 1 the user's thing failed; 2 the user's request or
		 * file; 3 Proctor or the host.  Nothing else is a command's. */
		assert_true(exit_status >= 1 && exit_status <= 3);
		assert_true(http >= 400 && http <= 599);
		/* The user's fault is a 4xx and never exit 3; ours a 5xx and exit
		 * 3, and so is a 429: the service asks to be retried later. */
		assert_int_equal(http >= 500 || http == 429, exit_status == 3);
	}
}

static void test_err_codes_are_unique(void **state)
{
	(void)state;

	for (int i = 0; i < ERR_KIND_COUNT; i++)
		for (int j = i + 1; j < ERR_KIND_COUNT; j++)
			assert_string_not_equal(err_code((enum err_kind)i),
						err_code((enum err_kind)j));
}

/* Numbers that users and the database see never change meaning: this table
 * only grows.  Changing a row here is changing a published contract. */
static void test_err_kinds_keep_their_numbers_codes_and_statuses(void **state)
{
	(void)state;
	static const struct {
		enum err_kind kind;
		int number;
		const char *code;
		int exit_status, http;
	} published[] = {
	    {ERR_INTERNAL, 0, "internal", 3, 500},
	    {ERR_USAGE, 1, "invalid_request", 2, 400},
	    {ERR_INPUT, 2, "invalid_input", 2, 422},
	    {ERR_NOT_FOUND, 3, "not_found", 2, 404},
	    {ERR_UNAVAILABLE, 4, "unavailable", 3, 503},
	    {ERR_BUSY, 5, "busy", 3, 503},
	    {ERR_BUILD_FAILED, 6, "build_failed", 1, 422},
	    {ERR_UNAUTHORIZED, 7, "unauthorized", 2, 401},
	    {ERR_FORBIDDEN, 8, "forbidden", 2, 403},
	    {ERR_TOO_LARGE, 9, "too_large", 2, 413},
	    {ERR_QUEUE_FULL, 10, "queue_full", 3, 429},
	    {ERR_SUBMISSION_LIMIT, 11, "submission_limit", 2, 403},
	    {ERR_TOO_SOON, 12, "too_soon", 3, 429},
	    {ERR_BUDGET_EXCEEDED, 13, "budget_exceeded", 2, 403},
	    {ERR_CAPACITY, 14, "capacity", 3, 429},
	};

	assert_int_equal(ARRAY_LEN(published), ERR_KIND_COUNT);
	for (size_t i = 0; i < ARRAY_LEN(published); i++) {
		assert_int_equal((int)published[i].kind, published[i].number);
		assert_string_equal(err_code(published[i].kind), published[i].code);
		assert_int_equal(err_exit_status(published[i].kind), published[i].exit_status);
		assert_int_equal(err_http_status(published[i].kind), published[i].http);
	}
}

static void test_err_unknown_kind_maps_as_internal(void **state)
{
	(void)state;

	assert_string_equal(err_code(ERR_KIND_COUNT), "internal");
	assert_int_equal(err_exit_status(ERR_KIND_COUNT), 3);
	int bogus = -1;
	assert_int_equal(err_http_status((enum err_kind)bogus), 500);
}

static void test_err_kind_of_code_reads_back_every_code(void **state)
{
	(void)state;

	for (int k = 0; k < ERR_KIND_COUNT; k++)
		assert_int_equal(err_kind_of_code(err_code((enum err_kind)k)), k);
	assert_int_equal(err_kind_of_code("no_such_code"), ERR_INTERNAL);
	assert_int_equal(err_kind_of_code(NULL), ERR_INTERNAL);
}

/* docs/cli-contract.md, "Error kinds": one row per kind, "| `code` | exit |
 * http | ...", agreeing with the table. */
static void test_err_table_is_the_documented_one(void **state)
{
	(void)state;
	FILE *f = fopen(DOCS_DIR "/cli-contract.md", "r");
	char line[1024];
	bool in_section = false;
	int rows = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "## ", 3) == 0)
			in_section = strcmp(line, "## Error kinds\n") == 0;
		if (!in_section || strncmp(line, "| `", 3) != 0)
			continue;
		char code[64];
		int exit_status, http;
		/* The test's own reading of a file in the repository. */
		assert_int_equal(
		    sscanf(line, "| `%63[a-z_]` | %d | %d |", code, &exit_status, &http), 3);
		int k = 0;
		while (k < ERR_KIND_COUNT && strcmp(err_code((enum err_kind)k), code) != 0)
			k++;
		if (k == ERR_KIND_COUNT)
			fail_msg("docs/cli-contract.md lists code '%s', which no kind has", code);
		assert_int_equal(exit_status, err_exit_status((enum err_kind)k));
		assert_int_equal(http, err_http_status((enum err_kind)k));
		rows++;
	}
	fclose(f);
	assert_int_equal(rows, ERR_KIND_COUNT);
}

/* ---- cuts ---- */

static void test_err_setk_truncation_keeps_the_kind_and_the_reason(void **state)
{
	(void)state;
	char text[3000];
	struct err e;

	for (size_t c = 0; c < ARRAY_LEN(characters); c++) {
		for (size_t pad = 0; pad < 4; pad++) {
			fill(text, sizeof(text), pad, characters[c]);
			err_setk(&e, ERR_INPUT, ENOENT, "%s", text);
			assert_int_equal(e.kind, ERR_INPUT);
			assert_int_equal(e.errnum, ENOENT);
			assert_true(strlen(e.msg) < sizeof(e.msg));
			assert_true(valid_utf8(e.msg));
			const char *reason = ": No such file or directory";
			size_t len = strlen(e.msg), rlen = strlen(reason);
			assert_string_equal(e.msg + len - rlen, reason);
			/* Only as much was cut as had to be: less than one character. */
			assert_true(len + strlen(characters[c]) > sizeof(e.msg) - 1);
		}
	}
}

static void test_err_wrap_cuts_the_old_message_on_a_character_boundary(void **state)
{
	(void)state;
	char text[3000];
	struct err e;

	for (size_t c = 0; c < ARRAY_LEN(characters); c++) {
		for (size_t pad = 0; pad < 4; pad++) {
			fill(text, sizeof(text), pad, characters[c]);
			err_setk(&e, ERR_NOT_FOUND, 0, "%s", text);
			err_wrap(&e, "image '%s'", "small@9");
			assert_int_equal(e.kind, ERR_NOT_FOUND);
			assert_true(valid_utf8(e.msg));
			/* The context, which names the file or option, is whole. */
			assert_memory_equal(e.msg, "image 'small@9': ", 17);
			size_t len = strlen(e.msg);
			assert_true(len < sizeof(e.msg));
			assert_true(len + strlen(characters[c]) > sizeof(e.msg) - 1);
		}
	}
}

static void test_err_wrap_cuts_a_long_context_on_a_character_boundary(void **state)
{
	(void)state;
	char text[3000];
	struct err e;

	for (size_t c = 0; c < ARRAY_LEN(characters); c++) {
		for (size_t pad = 0; pad < 4; pad++) {
			fill(text, sizeof(text), pad, characters[c]);
			err_setk(&e, ERR_USAGE, EINVAL, "inner");
			err_wrap(&e, "%s", text);
			assert_int_equal(e.kind, ERR_USAGE);
			assert_int_equal(e.errnum, EINVAL);
			assert_true(valid_utf8(e.msg));
			assert_true(strlen(e.msg) < sizeof(e.msg));
			/* The context is cut, never the separator after it. */
			const char *sep = strstr(e.msg, ": inner: Invalid argument");
			assert_non_null(sep);
			assert_string_equal(sep, ": inner: Invalid argument");
		}
	}
}

static void test_err_wrap_of_a_full_message_stays_in_bounds(void **state)
{
	(void)state;
	char text[3000];
	struct err e;

	fill(text, sizeof(text), 0, "\xe2\x82\xac");
	err_setk(&e, ERR_BUSY, 0, "%s", text);
	for (int i = 0; i < 8; i++) {
		err_wrap(&e, "%s", text);
		assert_int_equal(e.kind, ERR_BUSY);
		assert_true(strlen(e.msg) < sizeof(e.msg));
		assert_true(valid_utf8(e.msg));
	}
	/* An empty context still separates. */
	err_setk(&e, ERR_BUSY, 0, "inner");
	err_wrap(&e, "%s", "");
	assert_string_equal(e.msg, ": inner");
}

/* ---- where the user's failures are told apart ---- */

static void test_an_isolation_no_backend_has_is_a_usage_error(void **state)
{
	(void)state;
	const struct sandbox_ops *ops = NULL;
	char why[128];
	struct err e;

	assert_int_equal(sandbox_select("bogus", false, &ops, why, sizeof(why), &e), -1);
	assert_int_equal(e.kind, ERR_USAGE);
	assert_string_equal(e.msg, "--isolation: unknown backend 'bogus' (auto, jail, vm)");
	assert_null(ops);
}

static void test_an_isolation_the_assignment_forbids_is_a_usage_error(void **state)
{
	(void)state;
	struct assignment a = {.isolation = ASSIGNMENT_ISOLATION_VM,
			       .file = (char *)"a/assignment.yaml"};
	const struct sandbox_ops *ops = NULL;
	char why[128];
	struct err e;

	assert_int_equal(grade_prepare("jail", &a, &ops, why, sizeof(why), &e), -1);
	assert_int_equal(e.kind, ERR_USAGE);
	assert_int_equal(err_exit_status(e.kind), 2);
	assert_non_null(strstr(e.msg, "requires isolation 'vm'"));
}

static void test_a_bad_sandbox_path_is_a_usage_error(void **state)
{
	(void)state;
	static const char *const bad[] = {"/etc/passwd", "../x", "/work/a/../b", "/tmp/./x", "",
					  /* too long for the caller's buffer: still the path's */
					  "/work/a-name-longer-than-sixteen"};
	char rel[16];
	struct err e;

	for (size_t i = 0; i < ARRAY_LEN(bad); i++) {
		assert_int_equal(sandbox_path_rel(bad[i], rel, sizeof(rel), &e), -1);
		assert_int_equal(e.kind, ERR_USAGE);
	}
	assert_int_equal(sandbox_path_rel("/work/", rel, sizeof(rel), &e), 0);
	assert_string_equal(rel, "work");
}

static int sink_ok(void *ctx, const char *rel, struct err *e)
{
	return 0;
}

static int sink_file_ok(void *ctx, int fd, const char *host_path, const char *rel, mode_t mode,
			struct err *e)
{
	return 0;
}

static int sink_file_fails(void *ctx, int fd, const char *host_path, const char *rel, mode_t mode,
			   struct err *e)
{
	return err_set(e, EIO, "the backend");
}

static void test_what_a_put_refuses_is_the_users_and_the_backends_failure_is_ours(void **state)
{
	(void)state;
	const struct tree_sink ok = {.dir = sink_ok, .file = sink_file_ok};
	const struct tree_sink broken = {.dir = sink_ok, .file = sink_file_fails};
	char dir[] = "/tmp/test_err_XXXXXX", path[PATH_MAX], cmd[PATH_MAX + 16];
	struct err e;

	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/a.txt", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("alpha\n", f);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(tree_put(dir, "work/in", &ok, &e), 0);

	/* A FIFO below the top: refused, and the user's. */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0644), 0);
	assert_int_equal(tree_put(dir, "work/in", &ok, &e), -1);
	assert_int_equal(e.kind, ERR_INPUT);
	assert_non_null(strstr(e.msg, "is a FIFO"));
	assert_int_equal(unlink(path), 0);

	/* A host path that is not there: the user's. */
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(tree_put(path, "work/in", &ok, &e), -1);
	assert_int_equal(e.kind, ERR_INPUT);
	assert_int_equal(e.errnum, ENOENT);

	/* The backend failing to take a file: ours, whatever the walker is. */
	assert_int_equal(tree_put(dir, "work/in", &broken, &e), -1);
	assert_int_equal(e.kind, ERR_INTERNAL);
	assert_int_equal(e.errnum, EIO);

	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_err_set_is_proctors_own_failure),
	    cmocka_unit_test(test_err_setk_sets_kind_errnum_and_message),
	    cmocka_unit_test(test_err_wrap_keeps_kind_and_errnum),
	    cmocka_unit_test(test_err_classify_changes_only_the_kind),
	    cmocka_unit_test(test_err_table_is_total),
	    cmocka_unit_test(test_err_codes_are_unique),
	    cmocka_unit_test(test_err_kinds_keep_their_numbers_codes_and_statuses),
	    cmocka_unit_test(test_err_unknown_kind_maps_as_internal),
	    cmocka_unit_test(test_err_kind_of_code_reads_back_every_code),
	    cmocka_unit_test(test_err_table_is_the_documented_one),
	    cmocka_unit_test(test_err_setk_truncation_keeps_the_kind_and_the_reason),
	    cmocka_unit_test(test_err_wrap_cuts_the_old_message_on_a_character_boundary),
	    cmocka_unit_test(test_err_wrap_cuts_a_long_context_on_a_character_boundary),
	    cmocka_unit_test(test_err_wrap_of_a_full_message_stays_in_bounds),
	    cmocka_unit_test(test_an_isolation_no_backend_has_is_a_usage_error),
	    cmocka_unit_test(test_an_isolation_the_assignment_forbids_is_a_usage_error),
	    cmocka_unit_test(test_a_bad_sandbox_path_is_a_usage_error),
	    cmocka_unit_test(test_what_a_put_refuses_is_the_users_and_the_backends_failure_is_ours),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
