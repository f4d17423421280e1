/* build.objects: the objects a submission's build made define only the symbols the assignment
 * allows. */
#ifndef PROCTOR_GRADE_SYMCHECK_H
#define PROCTOR_GRADE_SYMCHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "err.h"
#include "grade/assignment.h"
#include "grade/unpriv.h"
#include "sandbox.h"

/*
 * Theory of operation.  In runner mode a C or C++ submission is linked
 * into the instructor's test driver, so anything its object brings to the
 * link runs with the driver's authority: a constructor that writes an
 * all-pass report and exits before main(), a definition of snprintf or
 * strcmp that the driver then calls instead of libc's, an IFUNC whose
 * resolver runs while the program loads.  After the build step succeeds
 * and before anything the build made runs, proctor copies each object of
 * build.objects out of the sandbox (a regular file, at most
 * ELFSCAN_MAX_BYTES), has proctor-helper read it without privilege
 * (grade/elfscan.h: facts only, as JSON) and decides here, on that
 * answer, whether the object may be linked:
 *
 *  - a relocatable ELF object of this host's machine, class and byte order;
 *  - every section of a known type, none that the linker or the loader
 *    turns into code run before or after main() (.init, .fini,
 *    .init_array*, .fini_array*, .preinit_array*, .ctors*, .dtors*, or a
 *    section of type INIT_ARRAY, FINI_ARRAY or PREINIT_ARRAY, and the
 *    relocations that fill them), none that hands the link to something
 *    else (.gnu.lto_* bytecode, .interp, .dynamic, linker options);
 *  - no STT_GNU_IFUNC symbol, local or global;
 *  - every defined symbol that is not local (global, weak, unique; common
 *    and absolute ones included; hidden visibility changes nothing in a
 *    static link) matches a glob of build.objects.allow.
 * The first problem is the verdict (compile_error, docs/result.md), named
 * with the object and the symbol or section.
 *
 * It cannot see what the object's code does once called: in runner mode
 * the submission still shares the driver's process (docs/grading.md).
 */
/*
 * Without build.objects, a build that compiles the submission's C or C++
 * sources still gets these checks (grade.c, "the compiler shim"): each
 * source, compiled on its own by the shim, is checked as an object of
 * build.objects would be, except that instead of an allow list every name
 * a system library defines (the C library, libm, libstdc++, libgcc: the
 * build host's, listed at build time) is refused, so the object can
 * neither run code before main() nor stand in for a function the test
 * driver calls (deny_system in struct build_objects).
 */
bool symcheck_system_name(const char *name);

/* The objects the compiler shim listed (grade.c, "the compiler shim"). */
#define SYMCHECK_CC_MAX 64
struct symcheck_cc_list {
	size_t n;				  /* objects to check */
	const char *objects[SYMCHECK_CC_MAX];	  /* OUT/XXXXXXXX.o, in the list's text */
	const char *sources[SYMCHECK_CC_MAX];	  /* the source each was made of, "NAME" */
	const char *failed; /* a source that compiled as asked but not alone, or NULL */
	bool unsure;	    /* an option that puts code before main() into every object */
	bool included;	    /* a file of the submission's went into another object */
	bool too_many;	    /* more objects than SYMCHECK_CC_MAX: not all can be checked */
	size_t seen;	    /* how many of `sources` have an object */
};

/*
 * Parse the shim's list `text` (a file the build's uid wrote: untrusted;
 * changed in place, and the result points into it).  Only objects named
 * as the shim names them in `out` ("OUT/XXXXXXXX.o", 8 letters or digits)
 * for a source among `sources` ("/work/NAME\n" lines) are kept; every
 * line is read, so a "fail", "unsure" or "included" after many objects
 * still counts.
 */
void symcheck_cc_list(char *text, const char *out, const char *sources, struct symcheck_cc_list *l);

/* Whether name is reserved to the implementation in C (two underscores, or
 * one and a capital), not a C++ mangled name: the default check refuses
 * those too, since the start files and the linker call some of them. */
bool symcheck_reserved_name(const char *name);

/*
 * Decide on the helper's answer about `object` (its name in messages).
 * 0: it may be linked; 1: refused, the reason in why (the submission's
 * doing); -1: the answer is not what elfscan_object() writes (the
 * helper's fault: Proctor's, retried), reason in e.
 */
int symcheck_classify(const json_t *facts, const char *object, const struct build_objects *o,
		      char *why, size_t why_len, struct err *e);

/*
 * Check every object of o in sb's /work: copy it to `staging`/objects/,
 * scan it with the helper (`call`: helper, uid, timeout and hidden
 * directory filled in by the caller; argv and descriptors set here), then
 * classify.  0: all may be linked; 1: refused, the reason in why (an object
 * missing, not a regular file, too big, unreadable, or breaking a rule);
 * -1: Proctor's failure (copying, the helper) with e, to be retried.
 */
int symcheck_objects(const struct build_objects *o, struct sandbox *sb, const char *staging,
		     const struct unpriv_call *call, char *why, size_t why_len, struct err *e);

#endif
