/* Unit tests: build.objects, objects compiled here read by elfscan and judged by symcheck (no
 * sandbox, nothing run). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "grade/elfscan.h"
#include "grade/symcheck.h"
#include "harness.h"

static char *tmp;

static int setup(void **state)
{
	(void)state;
	tmp = harness_tmpdir();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	harness_rm_tree(tmp);
	free(tmp);
	return 0;
}

/* `src` compiled with `cc -c flags`; its bytes (caller frees). */
static char *compile(const char *src, const char *flags, size_t *len)
{
	char cmd[4096], path[4096];

	harness_write_text(tmp, "t.c", src);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && rm -f t.o && cc -std=gnu11 -O1 -g -w %s -c t.c -o t.o", tmp, flags);
	int st = system(cmd);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	snprintf(path, sizeof(path), "%s/t.o", tmp);
	return harness_read(path, len);
}

static const char *const default_allow[] = {"solve", "helper_*", NULL};

/* The verdict on bytes `buf`: 0 may be linked, 1 refused (why), -2 the
 * helper side refused to read it; -1 a malformed answer. */
static int judge_bytes(char *buf, size_t len, char *why, size_t why_len)
{
	struct build_objects o = {.allow = (char **)default_allow, .n_allow = 2};
	struct err e;
	json_t *facts;

	if (elfscan_object(buf, len, &facts, &e) < 0) {
		snprintf(why, why_len, "%s", e.msg);
		return -2;
	}
	int rc = symcheck_classify(facts, "t.o", &o, why, why_len, &e);
	json_decref(facts);
	return rc;
}

static int judge(const char *src, const char *flags, char *why, size_t why_len)
{
	size_t len;
	char *buf = compile(src, flags, &len);
	int rc = judge_bytes(buf, len, why, why_len);

	free(buf);
	return rc;
}

#define assert_refused(src, flags, text)                                                           \
	do {                                                                                       \
		char why_[1024] = "";                                                              \
		int rc_ = judge(src, flags, why_, sizeof(why_));                                   \
		if (rc_ != 1 || !strstr(why_, text))                                               \
			fail_msg("expected a refusal mentioning %s, got %d: %s", text, rc_, why_); \
	} while (0)

static void test_allowed_functions_and_statics_pass(void **state)
{
	(void)state;
	char why[1024] = "";
	int rc = judge("#include <string.h>\n#include <stdio.h>\n"
		       "static int twice(int x) { return 2 * x; }\n"
		       "static int table[4] = {1, 2, 3, 4};\n"
		       "int helper_sum(int x) { return twice(x) + table[x & 3]; }\n"
		       "int solve(const char *s) { char b[32]; snprintf(b, sizeof b, \"%s\", s);"
		       " return helper_sum((int)strlen(b)); }\n",
		       "", why, sizeof(why));
	if (rc != 0)
		fail_msg("refused: %s", why);
	/* Thread-local data is only data: no code runs for it at load. */
	rc = judge("static _Thread_local int counter = 3;\nint solve(void) { return counter++; }\n",
		   "", why, sizeof(why));
	if (rc != 0)
		fail_msg("thread-local data refused: %s", why);
}

static void test_a_symbol_not_allowed_is_named(void **state)
{
	(void)state;
	assert_refused("int solve(void) { return 0; }\nint other(void) { return 1; }\n", "",
		       "defines 'other', which the assignment does not allow");
	assert_refused("#include <stddef.h>\nint snprintf(char *s, size_t n, const char *f, ...)"
		       " { (void)s; (void)n; (void)f; return 0; }\n",
		       "", "'snprintf'");
	assert_refused("int strcmp(const char *a, const char *b) __attribute__((weak));\n"
		       "int strcmp(const char *a, const char *b) { (void)a; (void)b; return 0; }\n",
		       "", "'strcmp'");
	assert_refused("int main(void) { return 0; }\n", "", "'main'");
	/* Hidden visibility still links across objects; common and global
	 * data are definitions too; a .symver name is a name. */
	assert_refused("__attribute__((visibility(\"hidden\"))) int fopen(void) { return 0; }\n",
		       "", "'fopen'");
	assert_refused("int stdout_copy;\n", "-fcommon", "'stdout_copy'");
	assert_refused("int errno_table[3] = {1};\n", "", "'errno_table'");
	assert_refused(
	    "int impl(void) { return 0; }\n__asm__(\".symver impl, puts@GLIBC_2.2.5\");\n", "",
	    "defines 'impl'");
	assert_refused("__asm__(\".globl printf\\n.set printf, 0x1000\");\n", "", "'printf'");
}

/* The default check (no build.objects): any name of the student's own,
 * none a system library defines, versioned or not; constructors as ever. */
static int judge_default(const char *src, char *why, size_t why_len)
{
	struct build_objects o = {.deny_system = true};
	size_t len;
	char *buf = compile(src, "", &len);
	struct err e;
	json_t *facts;

	assert_int_equal(elfscan_object(buf, len, &facts, &e), 0);
	free(buf);
	int rc = symcheck_classify(facts, "solution.c", &o, why, why_len, &e);
	json_decref(facts);
	return rc;
}

static void test_default_check_refuses_system_names(void **state)
{
	static const char *const refused[][2] = {
	    {"#include <stdio.h>\nFILE *fopen(const char *p, const char *m)"
	     " { (void)p; (void)m; return 0; }\n",
	     "'fopen'"},
	    {"double sqrt(double x) { return x; }\n", "'sqrt'"},
	    {"#include <stddef.h>\nint memcmp(const void *a, const void *b, size_t n)"
	     " { (void)a; (void)b; (void)n; return 0; }\n",
	     "'memcmp'"},
	    {"int atexit(void (*f)(void)) { (void)f; return 0; }\n", "'atexit'"},
	    {"int _IO_stdin_used = 1;\n", "'_IO_stdin_used'"},
	    {"int impl(void) { return 0; }\n__asm__(\".symver impl, puts@GLIBC_2.2.5\");\n",
	     "'puts@GLIBC_2.2.5'"},
	    {"#include <stdio.h>\n__attribute__((constructor)) static void f(void) { puts(\"x\"); }\n",
	     ".init_array"},
	    {"void __gmon_start__(void) {}\n", "'__gmon_start__', a name reserved"},
	    {"void (*__init_array_start[1])(void);\n", "'__init_array_start'"},
	    {"int _Secret = 3;\n", "'_Secret'"},
	};
	char why[1024];

	(void)state;
	assert_true(symcheck_system_name("printf") && symcheck_system_name("_Znwm") &&
		    symcheck_system_name("fopen@GLIBC_2.2.5") && symcheck_system_name("_start"));
	assert_false(symcheck_system_name("array_max") || symcheck_system_name("solve"));
	assert_true(symcheck_reserved_name("__gmon_start__") && symcheck_reserved_name("_Exit2"));
	assert_false(symcheck_reserved_name("_ZN3foo3barEv") || symcheck_reserved_name("_helper") ||
		     symcheck_reserved_name("helper__x"));
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		why[0] = '\0';
		int rc = judge_default(refused[i][0], why, sizeof(why));
		if (rc != 1 || !strstr(why, refused[i][1]) || !strstr(why, "solution.c"))
			fail_msg("case %zu: expected a refusal naming %s, got %d: %s", i,
				 refused[i][1], rc, why);
	}
	/* Any name of the student's own, without an allow list. */
	int rc = judge_default("static int twice(int x) { return 2 * x; }\n"
			       "int array_max(const int *a, int n) { return n ? twice(a[0]) : 0; }\n"
			       "int my_helper(void) { return 1; }\n",
			       why, sizeof(why));
	if (rc != 0)
		fail_msg("refused: %s", why);
}

/* The compiler shim's list: only its own object names, only the
 * submission's sources, every line read. */
static void test_the_shims_list_is_read_whole_and_strictly(void **state)
{
	static const char out[] = "/tmp/.proctor-objects-0a1b2c3d";
	static const char sources[] = "/work/solution.c\n/work/more.c\n";
	struct symcheck_cc_list l;
	char text[16384];
	size_t len = 0;

	(void)state;
	len += (size_t)snprintf(text + len, sizeof(text) - len,
				"ok\t/work/solution.c\t%s/AbCdEf12.o\n"
				"ok\t/work/other.c\t%s/AbCdEf13.o\n"	    /* not a source */
				"ok\t/work/more.c\t/tmp/elsewhere/AbCdEf14.o\n" /* not the shim's */
				"ok\t/work/more.c\t%s/../x/AbCdEf1.o\n"
				"junk line\n",
				out, out, out);
	for (int i = 0; i < 70; i++)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "ok\t/work/solution.c\t%s/%08d.o\n",
					out, i);
	len += (size_t)snprintf(text + len, sizeof(text) - len,
				"fail\t/work/more.c\nincluded\t/work/solution.h\nunsure\t-pg\n");
	symcheck_cc_list(text, out, sources, &l);
	assert_int_equal(l.n, SYMCHECK_CC_MAX);
	assert_true(l.too_many && l.included && l.unsure);
	assert_non_null(l.failed);
	assert_string_equal(l.failed, "more.c");
	assert_string_equal(l.sources[0], "solution.c");
	assert_int_equal(l.seen, 1); /* more.c has no object */
}

/* (gcc drops a constructor or destructor that does nothing: these write.) */
static void test_code_before_or_after_main_is_refused(void **state)
{
	(void)state;
	assert_refused(
	    "static volatile int v;\n__attribute__((constructor)) static void c(void) { v = 1; }\n",
	    "", "'.init_array' (code run before main())");
	assert_refused("static volatile int v;\n__attribute__((constructor(101))) static void "
		       "c(void) { v = 1; }\n",
		       "", "'.init_array.00101'");
	assert_refused(
	    "static volatile int v;\n__attribute__((destructor)) static void d(void) { v = 1; }\n",
	    "", "'.fini_array' (code run after main())");
	assert_refused("static void f(void) {}\n"
		       "__attribute__((section(\".ctors\"), used)) static void (*p)(void) = f;\n",
		       "", "'.ctors'");
	assert_refused(
	    "static void f(void) {}\n"
	    "__attribute__((section(\".preinit_array\"), used)) static void (*p)(void) = f;\n",
	    "", "'.preinit_array'");
	assert_refused("__asm__(\".section .init,\\\"ax\\\"\\n nop\\n .text\");\n", "", "'.init'");
	assert_refused("__asm__(\".section .fini,\\\"ax\\\"\\n nop\\n .text\");\n", "", "'.fini'");
	/* A function pointer in a section of type INIT_ARRAY under another name. */
	assert_refused(
	    "__asm__(\".section .mydata,\\\"aw\\\",@init_array\\n .quad 0\\n .text\");\n", "",
	    "'.mydata'");
}

static void test_ifunc_is_refused_even_when_local_or_allowed(void **state)
{
	(void)state;
#define IFUNC_SRC(storage)                                                                         \
	"static int impl(void) { return 1; }\n"                                                    \
	"static int (*res(void))(void) { return impl; }\n" storage                                 \
	" int solve(void) __attribute__((ifunc(\"res\")));\n"                                      \
	"int call(void) { return solve(); }\n"
	assert_refused(IFUNC_SRC(""), "", "defines 'solve' as an IFUNC");
	const char *text = IFUNC_SRC("static");
	assert_refused(text, "", "as an IFUNC");
}

static void test_lto_bytecode_is_refused(void **state)
{
	(void)state;
	char why[1024] = "";
	int rc = judge("int solve(void) { return 0; }\n", "-flto", why, sizeof(why));
	assert_int_equal(rc, 1);
	assert_non_null(strstr(why, "(build without -flto)"));
}

static void test_not_an_object_of_this_host_is_refused(void **state)
{
	(void)state;
	char why[1024] = "", text[] = "not an object\n";
	size_t len;

	assert_int_equal(judge_bytes(text, sizeof(text) - 1, why, sizeof(why)), -2);
	assert_non_null(strstr(why, "not an ELF file"));
	char *buf = compile("int solve(void) { return 0; }\n", "", &len);
	/* Another machine (e_machine, bytes 18-19 of the header). */
	buf[18] = (char)0x28; /* EM_ARM */
	buf[19] = 0;
	assert_int_equal(judge_bytes(buf, len, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "not a relocatable object for this host"));
	free(buf);
	/* Truncated anywhere: refused or read, never a crash. */
	buf = compile("int solve(void) { return 0; }\n", "", &len);
	for (size_t cut = 0; cut < len; cut += 7) {
		char *copy = malloc(cut + 1);
		memcpy(copy, buf, cut);
		int rc = judge_bytes(copy, cut, why, sizeof(why));
		assert_true(rc == -2 || rc == 1 || rc == 0);
		free(copy);
	}
	free(buf);
	/* An archive is not an object. */
	char ar[] = "!<arch>\n";
	assert_int_equal(judge_bytes(ar, sizeof(ar) - 1, why, sizeof(why)), -2);
}

/* Answers no compiler makes, as a helper taken over could write them. */
static void test_answers_are_checked(void **state)
{
	(void)state;
	struct build_objects o = {.allow = (char **)default_allow, .n_allow = 2};
	char why[1024];
	struct err e;
	const char *head = "{\"class\": 64, \"data\": 1, \"type\": 1, \"machine\": 62, ";
	char text[2048];
	json_error_t jerr;

	/* A relocation section for a section that does not exist. */
	snprintf(
	    text, sizeof(text),
	    "%s\"sections\": [{\"name\": \"\", \"type\": 0, \"flags\": 0, \"info\": 0},"
	    "{\"name\": \".rela.x\", \"type\": 4, \"flags\": 64, \"info\": 9}], \"symbols\": []}",
	    head);
	json_t *j = json_loads(text, 0, &jerr);
	assert_int_equal(symcheck_classify(j, "t.o", &o, why, sizeof(why), &e), 1);
	assert_non_null(strstr(why, "for no section"));
	json_decref(j);
	/* A type nobody listed: LLVM's dependent libraries. */
	snprintf(text, sizeof(text),
		 "%s\"sections\": [{\"name\": \".deplibs\", \"type\": %u, \"flags\": 0, \"info\": "
		 "0}], \"symbols\": []}",
		 head, 0x6fff4c04u);
	j = json_loads(text, 0, &jerr);
	assert_int_equal(symcheck_classify(j, "t.o", &o, why, sizeof(why), &e), 1);
	assert_non_null(strstr(why, "does not know"));
	json_decref(j);
	/* A symbol without its binding, an answer without sections: the
	 * helper's fault, not the submission's. */
	snprintf(text, sizeof(text),
		 "%s\"sections\": [], \"symbols\": [{\"name\": \"x\", \"type\": 2, \"shndx\": 1}]}",
		 head);
	j = json_loads(text, 0, &jerr);
	assert_int_equal(symcheck_classify(j, "t.o", &o, why, sizeof(why), &e), -1);
	json_decref(j);
	j = json_loads("{\"class\": 64}", 0, &jerr);
	assert_int_equal(symcheck_classify(j, "t.o", &o, why, sizeof(why), &e), -1);
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_allowed_functions_and_statics_pass),
	    cmocka_unit_test(test_a_symbol_not_allowed_is_named),
	    cmocka_unit_test(test_code_before_or_after_main_is_refused),
	    cmocka_unit_test(test_ifunc_is_refused_even_when_local_or_allowed),
	    cmocka_unit_test(test_lto_bytecode_is_refused),
	    cmocka_unit_test(test_not_an_object_of_this_host_is_refused),
	    cmocka_unit_test(test_answers_are_checked),
	    cmocka_unit_test(test_default_check_refuses_system_names),
	    cmocka_unit_test(test_the_shims_list_is_read_whole_and_strictly),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
