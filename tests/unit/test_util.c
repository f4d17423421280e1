/* Unit tests of shared helpers: err.c's bounded messages, util.c's parsers and fd passing,
 * sandbox_path_rel(). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "err.h"
#include "harness.h"
#include "sandbox.h"
#include "util.h"

#define MSG_MAX (sizeof(((struct err *)0)->msg) - 1) /* longest message */

/* n copies of the UTF-8 string unit, NUL-terminated, in buf. */
static char *repeat(char *buf, size_t cap, const char *unit, size_t n)
{
	size_t ul = strlen(unit);

	assert_true(n * ul < cap);
	for (size_t i = 0; i < n; i++)
		memcpy(buf + i * ul, unit, ul);
	buf[n * ul] = '\0';
	return buf;
}

/* ---- err_set / err_wrap ---------------------------------------------------- */

static void test_err_wrap_prefixes_context(void **state)
{
	struct err e;

	(void)state;
	assert_int_equal(err_set(&e, ENOENT, "open '%s'", "a.txt"), -1);
	assert_int_equal(err_wrap(&e, "put '%s'", "a.txt"), -1);
	assert_string_equal(e.msg, "put 'a.txt': open 'a.txt': No such file or directory");
	assert_int_equal(e.errnum, ENOENT);
}

static void test_err_wrap_cuts_the_inner_message_to_fit(void **state)
{
	static char inner[2048];
	struct err e;

	(void)state;
	err_set(&e, 0, "%s", repeat(inner, sizeof(inner), "x", MSG_MAX));
	assert_int_equal(strlen(e.msg), MSG_MAX);
	err_wrap(&e, "ctx");
	assert_int_equal(strlen(e.msg), MSG_MAX);
	assert_memory_equal(e.msg, "ctx: xxx", 8);
}

static void test_err_wrap_keeps_the_outer_context_of_an_overlong_prefix(void **state)
{
	static char prefix[4096];
	struct err e;

	(void)state;
	err_set(&e, 0, "inner");
	err_wrap(&e, "%s", repeat(prefix, sizeof(prefix), "p", 3000));
	assert_true(strlen(e.msg) <= MSG_MAX);
	assert_memory_equal(e.msg, "ppp", 3);
	/* The prefix is cut, the separator and what is left of the inner
	 * message follow it. */
	assert_non_null(strstr(e.msg, "p: "));
}

static void test_err_wrap_never_cuts_a_utf8_character(void **state)
{
	static char text[4096];
	struct err e;

	(void)state;
	/* 511 two-byte characters fill the message but one byte; after a
	 * two-byte prefix the room for them is odd, so the cut falls inside
	 * a character, which is dropped whole. */
	err_set(&e, 0, "%s", repeat(text, sizeof(text), "\xc3\xa9", 511));
	assert_int_equal(strlen(e.msg), 1022);
	err_wrap(&e, "ab");
	assert_true(harness_valid_utf8(e.msg));
	assert_int_equal(strlen(e.msg), 2 + 2 + 1018);

	/* A prefix longer than its buffer, cut inside a character. */
	err_set(&e, 0, "inner");
	err_wrap(&e, "%s", repeat(text, sizeof(text), "\xc3\xa9", 300));
	assert_true(harness_valid_utf8(e.msg));
	assert_non_null(strstr(e.msg, ": inner"));

	/* Three- and four-byte characters too. */
	err_set(&e, 0, "%s", repeat(text, sizeof(text), "\xe2\x82\xac", 341));
	err_wrap(&e, "ab");
	assert_true(harness_valid_utf8(e.msg));
	err_set(&e, 0, "%s", repeat(text, sizeof(text), "\xf0\x9f\x98\x80", 255));
	err_wrap(&e, "ab");
	assert_true(harness_valid_utf8(e.msg));
	assert_true(strlen(e.msg) <= MSG_MAX);
}

static void test_err_wrap_repeated_stays_bounded(void **state)
{
	struct err e;

	(void)state;
	err_set(&e, EACCES, "open");
	for (int i = 0; i < 200; i++)
		err_wrap(&e, "level %d of a deep call chain", i);
	assert_true(strlen(e.msg) <= MSG_MAX);
	assert_memory_equal(e.msg, "level 199 of a deep call chain: level 198", 41);
	assert_int_equal(e.errnum, EACCES);
}

static void test_err_set_cuts_the_message_not_the_system_reason(void **state)
{
	static char text[4096];
	struct err e;
	const char *reason = ": No such file or directory";

	(void)state;
	err_set(&e, ENOENT, "%s", repeat(text, sizeof(text), "\xc3\xa9", 1000));
	assert_true(strlen(e.msg) <= MSG_MAX);
	assert_true(harness_valid_utf8(e.msg));
	assert_string_equal(e.msg + strlen(e.msg) - strlen(reason), reason);
}

/* ---- parse_u64 / stat_field ------------------------------------------------ */

static void test_parse_u64_takes_only_whole_decimals_in_range(void **state)
{
	uint64_t v = 7;

	(void)state;
	assert_int_equal(parse_u64("0", 1, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(parse_u64("18446744073709551615", 20, &v), 0);
	assert_true(v == UINT64_MAX);
	v = 7;
	static const char *const bad[] = {
	    "",	    "18446744073709551616", "-1", "+1", " 1", "1 ", "1x",
	    "0x10", "99999999999999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse_u64(bad[i], strlen(bad[i]), &v), -1);
		assert_int_equal(v, 7); /* untouched on failure */
	}
	/* Only [s, s+len) counts. */
	assert_int_equal(parse_u64("12\n", 2, &v), 0);
	assert_int_equal(v, 12);
}

static void test_stat_field_finds_the_whole_key_on_its_own_line(void **state)
{
	const char *stat = "anon 4096\nfile_mapped 9\nfile 123\nshmem 8192\nbad x1\n";
	uint64_t v = 0;

	(void)state;
	assert_int_equal(stat_field(stat, "file", &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(stat_field(stat, "shmem", &v), 0);
	assert_int_equal(v, 8192);
	assert_int_equal(stat_field(stat, "anon", &v), 0);
	assert_int_equal(v, 4096);
	v = 5;
	assert_int_equal(stat_field(stat, "fil", &v), -1);
	assert_int_equal(stat_field(stat, "pgfault", &v), -1);
	assert_int_equal(stat_field(stat, "bad", &v), -1);
	assert_int_equal(v, 5);
	/* The last line needs no line end. */
	assert_int_equal(stat_field("usage_usec 17", "usage_usec", &v), 0);
	assert_int_equal(v, 17);
}

/* ---- sandbox_path_rel ---------------------------------------------------- */

static void expect_rel(const char *path, const char *want)
{
	char buf[256];
	struct err e;

	if (sandbox_path_rel(path, buf, sizeof(buf), &e) < 0)
		fail_msg("'%s' refused: %s", path, e.msg);
	assert_string_equal(buf, want);
}

static void expect_refused(const char *path, const char *why)
{
	char buf[256], want[512];
	struct err e;

	assert_int_equal(sandbox_path_rel(path, buf, sizeof(buf), &e), -1);
	snprintf(want, sizeof(want), "sandbox path '%s' %s", path, why);
	assert_string_equal(e.msg, want);
}

static void test_sandbox_path_rel_maps_work_and_tmp(void **state)
{
	(void)state;
	expect_rel("/work", "work");
	expect_rel("/work/", "work");
	expect_rel("/tmp", "tmp");
	expect_rel("/tmp/", "tmp");
	expect_rel("a", "work/a");
	expect_rel("a/b", "work/a/b");
	expect_rel("/work/a/b", "work/a/b");
	expect_rel("/tmp/x", "tmp/x");
	expect_rel("/work/.hidden/...", "work/.hidden/...");
	expect_rel("tmp/x", "work/tmp/x"); /* relative is below /work */
	/* A top-level directory of the program's own lives in the tree's root. */
	expect_rel("/grader/t.py", "root/grader/t.py");
	expect_rel("/workshop/x", "root/workshop/x");
	expect_rel("/workspace/", "root/workspace");
	expect_rel("//autograder/a", "root/autograder/a");
	expect_rel("/library/x", "root/library/x"); /* not a lib* of the system's */
}

static void test_sandbox_path_rel_refuses_what_leaves_the_tree(void **state)
{
	(void)state;
	expect_refused("/etc/passwd", "is in the system directory /etc, which is read-only");
	expect_refused("/usr/bin/python3", "is in the system directory /usr, which is read-only");
	expect_refused("/lib64/x", "is in the system directory /lib64, which is read-only");
	expect_refused("/proc/1/environ", "is in the system directory /proc, which is read-only");
	expect_refused("/var/x", "is in the system directory /var, which is read-only");
	expect_refused("/", "is the system's root: name a file below /work, /tmp or a directory of your own");
	expect_refused("/grader/../etc", "has a '.' or '..' component");
	expect_refused("", "names no file");
	expect_refused("..", "has a '.' or '..' component");
	expect_refused("../etc", "has a '.' or '..' component");
	expect_refused("/work/a/../../etc", "has a '.' or '..' component");
	expect_refused("/tmp/./x", "has a '.' or '..' component");
	expect_refused("a/.", "has a '.' or '..' component");
}

static void test_sandbox_path_rel_refuses_what_does_not_fit(void **state)
{
	char buf[9];
	struct err e;

	(void)state;
	assert_int_equal(sandbox_path_rel("/work/abc", buf, sizeof(buf), &e), 0);
	assert_string_equal(buf, "work/abc");
	assert_int_equal(sandbox_path_rel("/work/abcd", buf, sizeof(buf), &e), -1);
	assert_int_equal(e.errnum, ENAMETOOLONG);
	assert_non_null(strstr(e.msg, "'/work/abcd'"));
}

/* ---- send_with_fd / recv_with_fd ----------------------------------------------- */

static void test_a_descriptor_crosses_a_socket_with_its_bytes(void **state)
{
	int sv[2], fd, got = -2;
	char text[] = "hello", buf[16];
	struct iovec iov = {.iov_base = text, .iov_len = 5};
	struct stat a, b;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	fd = open("/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(send_with_fd(sv[0], &iov, 1, fd), 5);
	assert_int_equal(recv_with_fd(sv[1], buf, sizeof(buf), &got), 5);
	assert_true(got >= 0 && got != fd);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(got, &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	assert_int_equal(fcntl(got, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(got);
	/* Without a descriptor: none comes; longer than the buffer: refused. */
	assert_int_equal(send_with_fd(sv[0], &iov, 1, -1), 5);
	assert_int_equal(recv_with_fd(sv[1], buf, sizeof(buf), &got), 5);
	assert_int_equal(got, -1);
	assert_int_equal(send_with_fd(sv[0], &iov, 1, fd), 5);
	assert_int_equal(recv_with_fd(sv[1], buf, 4, &got), -1);
	assert_int_equal(errno, EMSGSIZE);
	assert_int_equal(got, -1);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

/* The number of open descriptors of this process. */
static int open_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

/* Several descriptors in one message; more than the receiver takes is
 * refused, and none of them stays open. */
static void test_descriptors_cross_up_to_the_receivers_count(void **state)
{
	int sv[2], fds[3], got[3] = {-2, -2, -2};
	char text[] = "xy", buf[8];
	struct iovec iov = {.iov_base = text, .iov_len = 2};
	size_t n = 99;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (int i = 0; i < 3; i++)
		assert_true((fds[i] = open("/dev/null", O_RDONLY)) >= 0);
	assert_int_equal(send_with_fds(sv[0], &iov, 1, fds, 2), 2);
	assert_int_equal(recv_with_fds(sv[1], buf, sizeof(buf), got, 2, &n), 2);
	assert_int_equal(n, 2);
	assert_true(got[0] >= 0 && got[1] >= 0 && got[0] != got[1]);
	close(got[0]);
	close(got[1]);
	int before = open_fds();
	assert_int_equal(send_with_fds(sv[0], &iov, 1, fds, 3), 2);
	assert_int_equal(recv_with_fds(sv[1], buf, sizeof(buf), got, 2, &n), -1);
	assert_int_equal(errno, EMFILE);
	assert_int_equal(n, 0);
	assert_int_equal(open_fds(), before);
	/* One for a receiver of one: two are refused the same way. */
	int one = -2;
	assert_int_equal(send_with_fds(sv[0], &iov, 1, fds, 2), 2);
	assert_int_equal(recv_with_fd(sv[1], buf, sizeof(buf), &one), -1);
	assert_int_equal(errno, EMFILE);
	assert_int_equal(one, -1);
	assert_int_equal(open_fds(), before);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(sv[0]);
	close(sv[1]);
}

/* ---- dir_names ----------------------------------------------------------------- */

static void test_dir_names_are_sorted_and_capped(void **state)
{
	char *dir = harness_tmpdir(), path[4096], **names;
	const char *make[] = {"b", "a", "c.txt", ".hidden"};
	size_t n;
	struct err e;
	int fd;

	(void)state;
	for (size_t i = 0; i < 4; i++) {
		harness_path_join(path, dir, make[i]);
		harness_write(NULL, path, "x", 1);
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	assert_int_equal(dir_names(fd, 4, &names, &n, &e), 0);
	assert_int_equal(n, 4);
	assert_string_equal(names[0], ".hidden");
	assert_string_equal(names[1], "a");
	assert_string_equal(names[2], "b");
	assert_string_equal(names[3], "c.txt");
	free_names(names, n);
	assert_int_equal(dir_names(fd, 3, &names, &n, &e), -1);
	assert_int_equal(e.errnum, E2BIG);
	close(fd);
	harness_rm_tree(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_err_wrap_prefixes_context),
	    cmocka_unit_test(test_err_wrap_cuts_the_inner_message_to_fit),
	    cmocka_unit_test(test_err_wrap_keeps_the_outer_context_of_an_overlong_prefix),
	    cmocka_unit_test(test_err_wrap_never_cuts_a_utf8_character),
	    cmocka_unit_test(test_err_wrap_repeated_stays_bounded),
	    cmocka_unit_test(test_err_set_cuts_the_message_not_the_system_reason),
	    cmocka_unit_test(test_parse_u64_takes_only_whole_decimals_in_range),
	    cmocka_unit_test(test_stat_field_finds_the_whole_key_on_its_own_line),
	    cmocka_unit_test(test_sandbox_path_rel_maps_work_and_tmp),
	    cmocka_unit_test(test_sandbox_path_rel_refuses_what_leaves_the_tree),
	    cmocka_unit_test(test_sandbox_path_rel_refuses_what_does_not_fit),
	    cmocka_unit_test(test_a_descriptor_crosses_a_socket_with_its_bytes),
	    cmocka_unit_test(test_descriptors_cross_up_to_the_receivers_count),
	    cmocka_unit_test(test_dir_names_are_sorted_and_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
