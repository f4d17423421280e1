/* The bytecode of Proctor's Python runtime, compiled once per image. */
#ifndef PROCTOR_GRADE_RUNTIME_PYC_H
#define PROCTOR_GRADE_RUNTIME_PYC_H

#include <stddef.h>

#include "sandbox.h"

/*
 * Theory of operation.  A guarded or split test step imports Proctor's own
 * modules (the pytest guard and proctor_split.py) from a root-owned
 * directory made for that step, where Python can write no bytecode: each
 * such step compiled them from source, 40 ms natively for proctor_split.py
 * alone, twice in a split run (harness and program side), ten times that
 * under emulation.
 *
 * Now they are compiled once per image (its digest) and runtime (both
 * sources), in a throwaway sandbox of that image that holds nothing but
 * the two sources, by the image's own python3, as checked-hash .pyc files
 * (PEP 552): Python compares the hash in the file with the source it sits
 * beside, so a stale or foreign one is never used, only ignored.  They are
 * kept in STATE/pyc/KEY/ (with the image's digest in KEY/image) and in this
 * process; each step puts them beside the sources, root-owned (grade.c,
 * runtime_put()).  A new entry replaces the same image's entries of other
 * runtimes; `proctor image rm` removes the image's.
 *
 * An image without a python3 that can compile them is noted (KEY.none) and
 * not asked again; any other failure leaves the step as it was: compiled
 * from source.  Never a reason to fail a grading.
 */

struct runtime_pyc {
	char key[65];
	char tag[32];	     /* sys.implementation.cache_tag, e.g. "cpython-311" */
	char *split, *guard; /* the .pyc files' bytes */
	size_t split_len, guard_len;
};

/*
 * The runtime's bytecode for the image `image_digest`, whose sandboxes are
 * made with (ops, so): from this process, the state directory, or compiled
 * now in a sandbox of its own, with `work` a host directory of the caller's
 * to stage files in.  `time_factor` scales the compile run's time limits.
 * NULL when there is none (see above); the result lives as long as the
 * process.
 */
const struct runtime_pyc *runtime_pyc_for(const struct sandbox_ops *ops,
					  const struct sandbox_options *so,
					  const char *image_digest, const char *work,
					  double time_factor);

/* Remove STATE/pyc's entries for the image image_digest (proctor image rm). */
void runtime_pyc_forget(const char *state_dir, const char *image_digest);

#endif
