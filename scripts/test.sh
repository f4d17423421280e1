#!/bin/bash
# The whole test suite: install dependencies, build with ASan+UBSan and
# warnings as errors, run unit and integration tests (including the hostile
# corpus of tests/corpus, and ../shared/corpus as well when it exists) and
# print one closing line: "N passed, N failed".
# Needs root (namespaces, cgroups, mounts).  CI=true turns skips into failures.
set -uo pipefail
cd "$(dirname "$0")/.."
top=$(pwd)

if [ "$(id -u)" -ne 0 ]; then
	echo "scripts/test.sh: the sandbox tests need root" >&2
	exit 2
fi
./scripts/install-deps.sh || exit 2

build=build-test
# A writable copy of a corpus (`cp -r` keeps its symlinks), with the cases
# its generate.sh makes.
corpus_copy() {
	rm -rf "$2" && cp -r "$1" "$2" && chmod -R u+w "$2" &&
		(cd "$2" && ./generate.sh >/dev/null) ||
		{ echo "scripts/test.sh: generate.sh of $1 failed" >&2; exit 2; }
}
# The project's own hostile corpus, always.
corpus="$top/$build-corpus"
corpus_copy "$top/tests/corpus" "$corpus"
# An extra corpus in the same format beside the checkout, when there is one:
# its suites (test_corpus_shared, test_grade_corpus_shared) exist only then.
shared="$top/$build-corpus-shared"
if [ -d "$top/../shared/corpus" ]; then
	corpus_copy "$top/../shared/corpus" "$shared"
else
	rm -rf "$shared"
	shared=""
fi

if [ ! -d "$build" ]; then
	meson setup "$build" -Db_sanitize=address,undefined -Db_lundef=false \
		-Dc_args=-fno-sanitize-recover=all -Dcorpus_dir="$corpus" \
		-Dshared_corpus_dir="$shared" >/dev/null || exit 2
else
	# --reconfigure, not `meson configure`: it also learns options added to
	# meson_options.txt since the build directory was made.
	meson setup --reconfigure "$build" -Dcorpus_dir="$corpus" \
		-Dshared_corpus_dir="$shared" >/dev/null || exit 2
fi
meson compile -C "$build" >/dev/null || { meson compile -C "$build"; exit 2; }

if [ "${CI:-}" = "true" ]; then
	export PROCTOR_MUST_WORK=1
fi
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export CMOCKA_MESSAGE_OUTPUT=stdout
# The default gate includes the microVM suite (it builds images/small.yaml
# once into /var/lib/proctor-vmtest, a few minutes, then boots it).  Left
# out: the image suite (two more image builds: ./scripts/test.sh --suite
# image) and --suite vm-long: the whole corpus graded in microVMs (12 min
# under TCG) and the jail's suite inside a pure cgroup v2 guest.
if [ "$#" -eq 0 ]; then
	set -- --no-suite image --no-suite vm-long
fi
meson test -C "$build" --print-errorlogs --num-processes 2 "$@"
meson_rc=$?

# Count individual cmocka tests across every test program; a program that
# died without a cmocka summary counts as one failure.
/usr/bin/python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, re, sys
passed = failed = skipped = 0
for line in open(sys.argv[1]):
    t = json.loads(line)
    out = (t.get("stdout") or "") + (t.get("stderr") or "")
    p = re.findall(r"\[  PASSED  \] (\d+) test", out)
    f = re.findall(r"\[  FAILED  \] (\d+) test", out)
    s = re.findall(r"\[  SKIPPED \] (\d+) test", out)
    passed += sum(map(int, p)); failed += sum(map(int, f)); skipped += sum(map(int, s))
    if t.get("result") not in ("OK", "SKIP", "EXPECTEDFAIL") and not f:
        failed += 1
        print("test program %s: %s without a cmocka summary" % (t.get("name"), t.get("result")))
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
PY
exit $meson_rc
