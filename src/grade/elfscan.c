/* Reading a compiled object's header, sections and global symbols (libelf): proctor-helper's side
 * of build.objects. */
#include "grade/elfscan.h"

#include <elf.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

#include "capbuf.h"

/* A name from string table `strndx` at `off`, checked: present, valid
 * UTF-8, at most ELFSCAN_MAX_NAME bytes.  NULL (reason in e) otherwise. */
static const char *name_at(Elf *elf, size_t strndx, size_t off, const char *what, size_t index,
			   struct err *e)
{
	const char *s = elf_strptr(elf, strndx, off);

	if (!s) {
		err_set(e, 0, "%s %zu: its name is outside the string table (%s)", what, index,
			elf_errmsg(-1));
		return NULL;
	}
	size_t len = strnlen(s, ELFSCAN_MAX_NAME + 1);
	if (len > ELFSCAN_MAX_NAME) {
		err_set(e, 0, "%s %zu: its name is longer than %u bytes", what, index,
			ELFSCAN_MAX_NAME);
		return NULL;
	}
	if (!utf8_valid(s, len)) {
		err_set(e, 0, "%s %zu: its name is not valid UTF-8", what, index);
		return NULL;
	}
	return s;
}

static int append(json_t *a, json_t *item, struct err *e)
{
	if (!item || json_array_append_new(a, item) < 0)
		return err_set(e, ENOMEM, "out of memory");
	return 0;
}

/* Every symbol of one SHT_SYMTAB section that is not a plain local. */
static int scan_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, json_t *syms, size_t *n_total,
		       struct err *e)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);

	if (!d || d->d_type != ELF_T_SYM || entsize == 0)
		return err_set(e, 0, "the symbol table is unreadable (%s)", elf_errmsg(-1));
	size_t n = d->d_size / entsize;
	if (n > ELFSCAN_MAX_SYMBOLS - *n_total)
		return err_set(e, 0, "more than %u symbols", ELFSCAN_MAX_SYMBOLS);
	*n_total += n;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		if (!gelf_getsym(d, (int)i, &s))
			return err_set(e, 0, "symbol %zu is unreadable (%s)", i, elf_errmsg(-1));
		unsigned bind = GELF_ST_BIND(s.st_info), type = GELF_ST_TYPE(s.st_info);
		if (bind == STB_LOCAL && type != STT_GNU_IFUNC)
			continue;
		const char *name = name_at(elf, sh->sh_link, s.st_name, "symbol", i, e);
		if (!name)
			return -1;
		if (append(syms,
			   json_pack("{s:s, s:i, s:i, s:I}", "name", name, "bind", (int)bind,
				     "type", (int)type, "shndx", (json_int_t)s.st_shndx),
			   e) < 0)
			return -1;
	}
	return 0;
}

static int scan(Elf *elf, json_t *out, struct err *e)
{
	GElf_Ehdr eh;
	size_t shnum, shstrndx, n_syms = 0;
	json_t *secs = json_array(), *syms = json_array();

	if (json_object_set_new(out, "sections", secs) < 0 ||
	    json_object_set_new(out, "symbols", syms) < 0)
		return err_set(e, ENOMEM, "out of memory");
	if (elf_kind(elf) != ELF_K_ELF)
		return err_set(e, 0, "not an ELF file%s",
			       elf_kind(elf) == ELF_K_AR ? " (an ar archive)" : "");
	if (!gelf_getehdr(elf, &eh))
		return err_set(e, 0, "the ELF header is unreadable (%s)", elf_errmsg(-1));
	int cls = gelf_getclass(elf);
	json_object_set_new(out, "class",
			    json_integer(cls == ELFCLASS64   ? 64
					 : cls == ELFCLASS32 ? 32
							     : 0));
	json_object_set_new(out, "data", json_integer(eh.e_ident[EI_DATA]));
	json_object_set_new(out, "type", json_integer(eh.e_type));
	json_object_set_new(out, "machine", json_integer(eh.e_machine));
	if (elf_getshdrnum(elf, &shnum) < 0 || elf_getshdrstrndx(elf, &shstrndx) < 0)
		return err_set(e, 0, "the section headers are unreadable (%s)", elf_errmsg(-1));
	if (shnum > ELFSCAN_MAX_SECTIONS)
		return err_set(e, 0, "more than %u sections", ELFSCAN_MAX_SECTIONS);
	for (size_t i = 0; i < shnum; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;
		if (!scn || !gelf_getshdr(scn, &sh))
			return err_set(e, 0, "section %zu is unreadable (%s)", i, elf_errmsg(-1));
		const char *name =
		    i == 0 ? "" : name_at(elf, shstrndx, sh.sh_name, "section", i, e);
		if (!name)
			return -1;
		if (append(secs,
			   json_pack("{s:s, s:I, s:I, s:I}", "name", name, "type",
				     (json_int_t)sh.sh_type, "flags",
				     (json_int_t)(sh.sh_flags & 0x7fffffffffffffffull), "info",
				     (json_int_t)sh.sh_info),
			   e) < 0)
			return -1;
		if (sh.sh_type == SHT_SYMTAB && scan_symtab(elf, scn, &sh, syms, &n_syms, e) < 0)
			return -1;
	}
	return 0;
}

int elfscan_object(void *buf, size_t len, json_t **ret, struct err *e)
{
	json_t *out = json_object();
	int rc = -1;

	if (!out)
		return err_set(e, ENOMEM, "out of memory");
	if (elf_version(EV_CURRENT) == EV_NONE) {
		json_decref(out);
		return err_set(e, 0, "libelf is unusable (%s)", elf_errmsg(-1));
	}
	Elf *elf = elf_memory(buf, len);
	if (!elf) {
		err_set(e, 0, "not an ELF file (%s)", elf_errmsg(-1));
		goto out;
	}
	rc = scan(elf, out, e);
	elf_end(elf);
out:
	if (rc < 0) {
		json_decref(out);
		return -1;
	}
	*ret = out;
	return 0;
}
