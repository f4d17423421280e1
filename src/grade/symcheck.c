/* build.objects: the objects a submission's build made define only the symbols the assignment
 * allows. */
#include "grade/symcheck.h"

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "grade/elfscan.h"
#include "util.h"

/* The host's ELF identity: an object for another machine is not what the
 * build was asked to make here. */
#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#define HOST_UNWIND  0x70000001u /* SHT_X86_64_UNWIND: .eh_frame */
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#define HOST_UNWIND  0x70000003u /* SHT_AARCH64_ATTRIBUTES */
#elif defined(__riscv) && __riscv_xlen == 64
#define HOST_MACHINE EM_RISCV
#define HOST_UNWIND  0x70000003u /* SHT_RISCV_ATTRIBUTES */
#else
#define HOST_MACHINE EM_NONE /* unknown host: every object is refused */
#define HOST_UNWIND  0u
#endif
#define HOST_CLASS (sizeof(void *) == 8 ? 64 : 32)
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HOST_DATA ELFDATA2LSB
#else
#define HOST_DATA ELFDATA2MSB
#endif

#define SHT_GNU_ATTRIBUTES_ 0x6ffffff5u
#define SHT_LLVM_ADDRSIG_   0x6fff4c03u

/* Section types a compiler's object may hold.  Anything else is refused by
 * its number, so a type the linker treats specially (INIT_ARRAY, DYNAMIC,
 * LLVM's linker options and dependent libraries) never gets through
 * because nobody thought of it. */
static bool known_type(uint64_t t)
{
	switch (t) {
	case SHT_NULL:
	case SHT_PROGBITS:
	case SHT_SYMTAB:
	case SHT_STRTAB:
	case SHT_RELA:
	case SHT_NOTE:
	case SHT_NOBITS:
	case SHT_REL:
	case SHT_GROUP:
	case SHT_SYMTAB_SHNDX:
	case SHT_GNU_ATTRIBUTES_:
	case SHT_LLVM_ADDRSIG_:
		return true;
	default:
		return HOST_UNWIND != 0 && t == HOST_UNWIND;
	}
}

/* Names the linker or the loader gives a meaning beyond "code" or "data",
 * by prefix, and why each is refused. */
static const struct {
	const char *prefix;
	const char *why;
} special_sections[] = {
    {".init", "code run before main()"},
    {".preinit_array", "code run before main()"},
    {".ctors", "code run before main()"},
    {".fini", "code run after main()"},
    {".dtors", "code run after main()"},
    {".gnu.lto_", "compiler bytecode, compiled only at the link (build without -flto)"},
    {".gnu.linkonce", "a one-of-many definition the linker picks"},
    {".interp", "the program's loader"},
    {".dynamic", "dynamic linking"},
    {".dynsym", "dynamic linking"},
    {".dynstr", "dynamic linking"},
    {".got", "dynamic linking"},
    {".plt", "dynamic linking"},
    {".jcr", "class registration at start-up"},
    {".tm_clone_table", "transactional memory registration at start-up"},
    {".gnu.version", "symbol versions"},
    {".hash", "dynamic linking"},
    {".gnu.hash", "dynamic linking"},
};

/* Why section `name` of type `type` may not be linked, or NULL. */
static const char *special_section(const char *name, uint64_t type)
{
	if (type == SHT_INIT_ARRAY || type == SHT_PREINIT_ARRAY)
		return "code run before main()";
	if (type == SHT_FINI_ARRAY)
		return "code run after main()";
	for (size_t i = 0; i < sizeof(special_sections) / sizeof(special_sections[0]); i++)
		if (strncmp(name, special_sections[i].prefix, strlen(special_sections[i].prefix)) ==
		    0)
			return special_sections[i].why;
	return NULL;
}

static int refuse(char *why, size_t why_len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(char *why, size_t why_len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, why_len, fmt, ap);
	va_end(ap);
	return 1;
}

static int bad_answer(struct err *e, const char *object, const char *what)
{
	return err_set(e, 0, "the helper's answer about '%s' is malformed: %s", object, what);
}

/* sysnames.c, generated at build time (src/grade/cc/sysnames.py): sorted
 * bytewise. */
extern const char *const sysnames[];
extern const size_t sysnames_count;

bool symcheck_system_name(const char *name)
{
	char base[512];
	const char *key = base;

	/* A versioned definition (.symver: "fopen@GLIBC_2.2.5") by its name. */
	snprintf(base, sizeof(base), "%.*s", (int)strcspn(name, "@"), name);
	return bsearch(&key, sysnames, sysnames_count, sizeof(sysnames[0]), strcmp_ptr) != NULL;
}

bool symcheck_reserved_name(const char *name)
{
	/* C's reserved identifiers: __gmon_start__ (crti.o's _init calls it
	 * when defined), __init_array_start (the linker's), __libc_*...  C++'s
	 * mangled names (_Z...) are the compiler's spelling of the program's
	 * own; clang's __clang_call_terminate is emitted into objects. */
	if (strncmp(name, "_Z", 2) == 0 || strcmp(name, "__clang_call_terminate") == 0)
		return false;
	return (name[0] == '_' && name[1] == '_') ||
	       (name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z');
}

/* Whether `obj` is a name the shim makes in `out` ("OUT/XXXXXXXX.o"). */
static bool cc_object_name(const char *out, const char *obj)
{
	size_t n = strlen(out);

	if (strncmp(obj, out, n) != 0 || obj[n] != '/' || strlen(obj + n + 1) != 10 ||
	    strcmp(obj + n + 9, ".o") != 0)
		return false;
	for (size_t i = n + 1; i < n + 9; i++)
		if (!isalnum((unsigned char)obj[i]))
			return false;
	return true;
}

/* Whether "/work/NAME" is one of the "/work/NAME\n" lines of sources. */
static bool cc_listed(const char *sources, const char *src)
{
	size_t len = strlen(src);

	for (const char *p = sources; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t l = nl ? (size_t)(nl - p) : strlen(p);
		if (l == len && strncmp(p, src, len) == 0)
			return true;
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

void symcheck_cc_list(char *text, const char *out, const char *sources, struct symcheck_cc_list *l)
{
	*l = (struct symcheck_cc_list){0};
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *src = strchr(line, '\t'), *obj = NULL;
		if (!src)
			continue;
		*src++ = '\0';
		if ((obj = strchr(src, '\t')))
			*obj++ = '\0';
		l->unsure |= strcmp(line, "unsure") == 0;
		l->included |= strcmp(line, "included") == 0;
		if (strncmp(src, "/work/", 6) != 0 || !cc_listed(sources, src))
			continue;
		if (strcmp(line, "fail") == 0 && !l->failed)
			l->failed = src + 6;
		if (strcmp(line, "ok") != 0 || !obj || !cc_object_name(out, obj))
			continue;
		if (l->n == SYMCHECK_CC_MAX) {
			l->too_many = true;
			continue;
		}
		l->objects[l->n] = obj;
		l->sources[l->n] = src + 6;
		l->n++;
	}
	/* Every source seen, at least once? */
	for (const char *p = sources; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		for (size_t i = 0; i < l->n; i++)
			if (len > 6 && strlen(l->sources[i]) == len - 6 &&
			    strncmp(p + 6, l->sources[i], len - 6) == 0) {
				l->seen++;
				break;
			}
		p = nl ? nl + 1 : NULL;
	}
}

static bool allowed(const struct build_objects *o, const char *name)
{
	for (size_t i = 0; i < o->n_allow; i++)
		if (fnmatch(o->allow[i], name, 0) == 0)
			return true;
	return false;
}

static int check_sections(const json_t *secs, const char *object, char *why, size_t why_len,
			  struct err *e)
{
	size_t n = json_array_size(secs);

	for (size_t i = 0; i < n; i++) {
		const char *name;
		json_int_t type, flags, info;
		if (json_unpack((json_t *)json_array_get(secs, i), "{s:s, s:I, s:I, s:I}", "name",
				&name, "type", &type, "flags", &flags, "info", &info) < 0 ||
		    type < 0 || info < 0)
			return bad_answer(e, object, "a section");
		const char *special = special_section(name, (uint64_t)type);
		if (special)
			return refuse(
			    why, why_len,
			    "%s has a section '%s' (%s), which build.objects never allows", object,
			    name, special);
		if (!known_type((uint64_t)type))
			return refuse(why, why_len,
				      "%s has a section '%s' of type %#llx, which build.objects "
				      "does not know and so does not allow",
				      object, name, (unsigned long long)type);
		if (type != SHT_REL && type != SHT_RELA)
			continue;
		/* A relocation section fills the section it names: check that
		 * one too (already refused above if it is itself special,
		 * whichever index comes first). */
		const char *target;
		json_int_t ttype;
		if (info == 0 || (size_t)info >= n ||
		    json_unpack((json_t *)json_array_get(secs, (size_t)info), "{s:s, s:I}", "name",
				&target, "type", &ttype) < 0)
			return refuse(why, why_len,
				      "%s has relocations '%s' for no section of the object (a "
				      "malformed object)",
				      object, name);
		special = special_section(target, (uint64_t)ttype);
		if (special)
			return refuse(why, why_len,
				      "%s has relocations for '%s' (%s), which build.objects never "
				      "allows",
				      object, target, special);
	}
	return 0;
}

static int check_symbols(const json_t *syms, const char *object, const struct build_objects *o,
			 char *why, size_t why_len, struct err *e)
{
	for (size_t i = 0; i < json_array_size(syms); i++) {
		const char *name;
		int bind, type;
		json_int_t shndx;
		if (json_unpack((json_t *)json_array_get(syms, i), "{s:s, s:i, s:i, s:I}", "name",
				&name, "bind", &bind, "type", &type, "shndx", &shndx) < 0)
			return bad_answer(e, object, "a symbol");
		if (type == STT_GNU_IFUNC)
			return refuse(why, why_len,
				      "%s defines '%s' as an IFUNC (its resolver runs while the "
				      "program loads), which build.objects never allows",
				      object, name);
		if (bind == STB_LOCAL || shndx == SHN_UNDEF)
			continue;
		if (o->deny_system && symcheck_system_name(name))
			return refuse(why, why_len,
				      "%s defines '%s', which the C library (or libm, libstdc++, "
				      "libgcc) defines: the program would call yours instead of "
				      "the library's; give yours another name or make it static",
				      object, name);
		if (o->deny_system && symcheck_reserved_name(name))
			return refuse(why, why_len,
				      "%s defines '%s', a name reserved to the implementation "
				      "(it begins with two underscores, or one and a capital): "
				      "the start files and the linker may call it; give yours "
				      "another name or make it static",
				      object, name);
		if (o->deny_system)
			continue;
		if (!allowed(o, name))
			return refuse(why, why_len,
				      "%s defines '%s', which the assignment does not allow "
				      "(build.objects.allow); a function or variable of your own "
				      "can be made static",
				      object, name);
	}
	return 0;
}

int symcheck_classify(const json_t *facts, const char *object, const struct build_objects *o,
		      char *why, size_t why_len, struct err *e)
{
	int cls, data, type, machine, rc;
	json_t *secs, *syms;

	if (json_unpack((json_t *)facts, "{s:i, s:i, s:i, s:i, s:o, s:o}", "class", &cls, "data",
			&data, "type", &type, "machine", &machine, "sections", &secs, "symbols",
			&syms) < 0 ||
	    !json_is_array(secs) || !json_is_array(syms))
		return bad_answer(e, object, "not the facts of an object");
	if (cls != HOST_CLASS || data != HOST_DATA || type != ET_REL || machine != HOST_MACHINE ||
	    HOST_MACHINE == EM_NONE)
		return refuse(why, why_len,
			      "%s is not a relocatable object for this host (ELF class %d, byte "
			      "order %d, type %d, machine %d; wanted %d, %d, %d, %d)",
			      object, cls, data, type, machine, HOST_CLASS, HOST_DATA, ET_REL,
			      HOST_MACHINE);
	rc = check_sections(secs, object, why, why_len, e);
	if (rc != 0)
		return rc;
	return check_symbols(syms, object, o, why, why_len, e);
}

/* Scan one object copied to `host`.  As symcheck_objects(). */
static int check_one(const struct build_objects *o, const char *object, const char *host,
		     const struct unpriv_call *call, char *why, size_t why_len, struct err *e)
{
	char *argv[] = {(char *)"scan-object", NULL};
	struct unpriv_call c = *call;
	struct err herr;
	json_t *ans = NULL;
	struct stat st;

	int fd = open(host, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		xclose(fd);
		return refuse(why, why_len,
			      "the build's '%s' is not a regular file (build.objects)", object);
	}
	if ((uint64_t)st.st_size > ELFSCAN_MAX_BYTES) {
		close(fd);
		return refuse(why, why_len,
			      "the build's '%s' is larger than %llu MiB (build.objects)", object,
			      ELFSCAN_MAX_BYTES >> 20);
	}
	c.argv = argv;
	c.stdin_fd = fd;
	c.input = NULL;
	c.fd3 = c.fd4 = -1;
	int rc = unpriv_run(&c, &ans, &herr);
	close(fd);
	if (rc < 0)
		return err_set(e, 0, "object helper on '%s': %s", object, herr.msg);
	if (rc > 0)
		return refuse(why, why_len, "%s is not an object build.objects can read: %s",
			      object, herr.msg);
	rc = symcheck_classify(json_object_get(ans, "object"), object, o, why, why_len, e);
	json_decref(ans);
	return rc;
}

int symcheck_objects(const struct build_objects *o, struct sandbox *sb, const char *staging,
		     const struct unpriv_call *call, char *why, size_t why_len, struct err *e)
{
	char dir[PATH_MAX], host[PATH_MAX + 32], src[1100];
	struct err gerr;

	snprintf(dir, sizeof(dir), "%s/objects", staging);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return err_set(e, errno, "mkdir '%s'", dir);
	for (size_t i = 0; i < o->n_files; i++) {
		const char *name = o->names ? o->names[i] : o->files[i];
		snprintf(src, sizeof(src), o->files[i][0] == '/' ? "%s" : "/work/%s", o->files[i]);
		snprintf(host, sizeof(host), "%s/%zu.o", dir, i);
		/* The build ran as the submission's uid; only what it made
		 * comes out, and only a regular file is read. */
		if (sandbox_get(sb, src, host, &gerr) < 0) {
			/* Missing, or a symbolic link (never followed): a build
			 * that did not make it.  Anything else is ours. */
			if (gerr.errnum == ENOENT || gerr.errnum == ENOTDIR || gerr.errnum == ELOOP)
				return refuse(why, why_len,
					      "the build made no '%s' (build.objects.files)", name);
			*e = gerr;
			return err_wrap(e, "copy '%s' out", src);
		}
		int rc = check_one(o, name, host, call, why, why_len, e);
		if (rc != 0)
			return rc;
	}
	return 0;
}
