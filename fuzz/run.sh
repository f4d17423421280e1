#!/bin/sh
# Build the libFuzzer targets and run each for a while on its seed corpus.
#
# Usage: fuzz/run.sh [SECONDS]    (per target, default 30)
# Exit status: 0 no target crashed, 1 a target crashed (its input is kept
# under build-fuzz/fuzz-artifacts/), 2 usage or build error.
#
# New inputs the fuzzer finds go to build-fuzz/fuzz-corpus/<target>/, never
# into the committed seeds under fuzz/corpus/.  A crash becomes a unit test.
set -eu

secs=${1:-30}
case $secs in
'' | *[!0-9]*)
	echo "usage: $0 [SECONDS]" >&2
	exit 2
	;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
build="build-fuzz"
targets="fuzz_utf8 fuzz_text fuzz_limits fuzz_stat_field fuzz_junit fuzz_tap fuzz_gradescope fuzz_intake fuzz_symbols fuzz_cclist fuzz_vmproto fuzz_gradebook fuzz_jsonreq fuzz_sbxwire fuzz_api fuzz_callback fuzz_policy"

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false || exit 2
else
	meson setup --reconfigure "$build" >/dev/null || exit 2 # targets added since
fi
# shellcheck disable=SC2046,SC2086 # one word per target
meson compile -C "$build" $(printf 'fuzz/%s ' $targets) || exit 2

# UBSan only prints by default; a finding must stop the run like ASan's do.
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export UBSAN_OPTIONS

status=0
mkdir -p "$build/fuzz-artifacts"
for t in $targets; do
	work="$build/fuzz-corpus/$t"
	log="$build/fuzz-$t.log"
	mkdir -p "$work"
	printf '%-16s %s s ... ' "$t" "$secs"
	if "$build/fuzz/$t" -max_total_time="$secs" -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$build/fuzz-artifacts/$t-" "$work" "fuzz/corpus/$t" \
		>"$log" 2>&1; then
		grep -E '^stat::number_of_executed_units' "$log" | sed 's/.*: */ok, runs: /'
	else
		echo "CRASH (log: $log)"
		grep -E 'ERROR|SUMMARY|Test unit written|^0x' "$log" | head -n 20 >&2 || true
		status=1
	fi
done
exit $status
