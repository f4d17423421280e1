/* The bytecode of Proctor's Python runtime, compiled once per image. */
#ifndef PROCTOR_GRADE_RUNTIME_PYC_H
#define PROCTOR_GRADE_RUNTIME_PYC_H

#include <stddef.h>

#include "sandbox.h"

/*
 * Theory of operation.  A split test step imports Proctor's runtime,
 * proctor_split.py, in both its processes (harness and program side) from
 * a root-owned directory made for that step, where Python can write no
 * bytecode: each step compiled it from source twice, 15-20 ms each natively,
 * ten times that under emulation.
 *
 * Now it is compiled once per image (its digest) and runtime (the source),
 * in a throwaway sandbox of that image that holds nothing but the source,
 * by the image's own python3, as a checked-hash .pyc (PEP 552): Python
 * uses it only beside a source whose hash it records, so a stale one or
 * one of other source is ignored.  Its code is trusted because of where it
 * comes from (a sandbox no submission ran in) and where it is kept (root's
 * STATE/pyc/KEY/, with the image's digest in KEY/image); it is cached in
 * this process too, and each split step puts it beside the source,
 * root-owned (grade.c, runtime_put()).  A new entry removes the same
 * image's entries of other runtimes a day old; `proctor image rm` all of
 * the image's.
 *
 * The pytest guard gets none: pytest compiles a `-p` plugin itself (its
 * assertion rewriting) and never reads a .pyc of Python's for it.
 *
 * An image whose python3 fails to compile it is noted (KEY.none) and not
 * asked again; any other failure is remembered by this process only, and
 * the steps compile from source, as before.  Never a reason to fail a
 * grading.
 */

struct runtime_pyc {
	char key[65];
	char tag[32]; /* sys.implementation.cache_tag, e.g. "cpython-311" */
	char *split;  /* proctor_split's .pyc */
	size_t split_len;
};

/*
 * The runtime's bytecode for the image `image_digest`, whose sandboxes are
 * made with (ops, so): from this process, the state directory, or compiled
 * now in a sandbox of its own, staging files in `staging`/pyc (a host
 * directory of the caller's; made only then).  `time_factor` scales the
 * compile run's time limits.
 * NULL when there is none (see above); the result lives as long as the
 * process.
 */
const struct runtime_pyc *runtime_pyc_for(const struct sandbox_ops *ops,
					  const struct sandbox_options *so,
					  const char *image_digest, const char *staging,
					  double time_factor);

/* Remove STATE/pyc's entries for the image image_digest (proctor image rm). */
void runtime_pyc_forget(const char *state_dir, const char *image_digest);

#endif
