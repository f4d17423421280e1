/* Image recipes: the YAML that says what goes into a system image (docs/images.md). */
#ifndef PROCTOR_IMAGE_RECIPE_H
#define PROCTOR_IMAGE_RECIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "err.h"

enum recipe_variant {
	RECIPE_VARIANT_APT,	  /* Essential: yes + apt (mmdebstrap --variant=apt) */
	RECIPE_VARIANT_MINBASE,	  /* + Priority: required */
	RECIPE_VARIANT_ESSENTIAL, /* Essential: yes only: no apt in the image */
};

/* One file copied from the recipe's directory into the image. */
struct recipe_file {
	char *src; /* absolute: realpath of a regular file strictly inside the recipe's directory */
	char *dst; /* absolute path in the image, normalized, of the characters
		      [A-Za-z0-9._+@%=:,/-] */
	mode_t mode; /* 0000..0777 */
};

/*
 * A loaded recipe.  Every string is owned by the recipe and lives until
 * recipe_free().  Lists are NULL-terminated as well as counted.
 */
struct recipe {
	char *file; /* absolute path of the recipe */
	char *dir;  /* realpath of its directory: files' src are relative to it */
	char *name; /* [a-z0-9][a-z0-9._-]{0,63}, not "host" */
	char *suite;
	enum recipe_variant variant;
	char **packages; /* Debian package names */
	size_t n_packages;
	struct recipe_file *files;
	size_t n_files;
	char ***setup; /* argv lists run in the image, in order, after the files are in */
	size_t n_setup;
	char digest[72]; /* "sha256:" + hex over the text and the contents of every file */
};

/* Load and check `path` strictly (unknown keys, wrong types: "FILE:LINE: key: what"). */
int recipe_load(const char *path, struct recipe **ret, struct err *e);
void recipe_free(struct recipe *r);

const char *recipe_variant_name(enum recipe_variant v);

/* A valid image name: [a-z0-9][a-z0-9._-]{0,63}. */
bool recipe_valid_name(const char *name);

#endif
