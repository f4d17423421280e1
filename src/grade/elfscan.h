/* Reading a compiled object's header, sections and global symbols (libelf): proctor-helper's side
 * of build.objects. */
#ifndef PROCTOR_GRADE_ELFSCAN_H
#define PROCTOR_GRADE_ELFSCAN_H

#include <jansson.h>
#include <stddef.h>

#include "err.h"

/*
 * The object comes from a submission's build, so its bytes are hostile:
 * elfscan_object() runs only in proctor-helper (without privilege,
 * src/grade/unpriv.c) and reports facts, never a verdict.  proctor checks
 * the answer's shape and decides (grade/symcheck.h), so a parser bug here
 * costs at most a wrong answer about this one object.
 *
 * The answer (docs/assignment.md, "build.objects"):
 *   {"class": 32|64, "data": 1 (LSB) | 2 (MSB), "type": e_type,
 *    "machine": e_machine,
 *    "sections": [{"name", "type", "flags", "info"}, ...]   every section, by index
 *    "symbols":  [{"name", "bind", "type", "shndx"}, ...]}  every symbol of the
 *                symbol table that is not a plain local one (its binding is not
 *                STB_LOCAL, or its type is STT_GNU_IFUNC)
 * Refused (-1, the reason in e): not an ELF file (an archive, text, LLVM
 * bitcode), anything libelf cannot read, a section or symbol name that is
 * not valid UTF-8 or longer than ELFSCAN_MAX_NAME, more than the caps.
 */
#define ELFSCAN_MAX_BYTES    (64ull << 20) /* one object file */
#define ELFSCAN_MAX_SECTIONS 65536u
#define ELFSCAN_MAX_SYMBOLS  262144u
#define ELFSCAN_MAX_NAME     4096u

/* libelf may rewrite buf in place (an object of the other byte order is
 * converted where it lies), so it must be the caller's own copy. */
int elfscan_object(void *buf, size_t len, json_t **ret, struct err *e);

#endif
