#!/bin/bash
# Build a release proctor and bench/service_bench.c, then measure the grading
# service against its targets (bench/README.md, "service_bench"):
#
#   flock /tmp/proctor-itest.lock bench/service_bench.sh [BENCH OPTIONS]
#   bench/service_bench.sh --intake-only          # grades nothing: no lock needed
#
# The build directory is build-rel (SERVICE_BENCH_BUILD=DIR for another); it
# is set up with --buildtype=release -Dwerror=true when it does not exist.
# Options after the script's name go to service_bench (--help lists them).
# Gradings make sandboxes, and the integration suites check host-wide that
# none is left behind: a run that grades holds /tmp/proctor-itest.lock.
# Under `flock` as above the script uses that hold; otherwise it takes the
# lock itself.  Exits 0 whatever the numbers are.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
build=${SERVICE_BENCH_BUILD:-build-rel}
lock=/tmp/proctor-itest.lock

if [ ! -f "$build/build.ninja" ]; then
	meson setup "$build" --buildtype=release -Dwerror=true >/dev/null
fi
if ! meson introspect "$build" --buildoptions | grep -q '"name": "buildtype", "value": "release"'; then
	echo "service_bench.sh: $build is not a release build; its numbers are not comparable" >&2
fi
if ! out=$(meson compile -C "$build" proctor:executable proctor-service proctor-helper \
	service_bench 2>&1); then
	echo "$out" >&2
	exit 1
fi

grades=1
for a in "$@"; do
	case $a in --intake-only | -h | --help) grades=0 ;; esac
done

# Whether an ancestor of this shell holds the lock (flock(1) running us).
held_by_ancestor() {
	[ -e "$lock" ] || return 1
	local inode holders pid
	inode=$(stat -c %i "$lock")
	holders=$(awk -v i=":$inode" '$2 == "FLOCK" && substr($6, length($6) - length(i) + 1) == i {print $5}' /proc/locks)
	[ -n "$holders" ] || return 1
	pid=$$
	while [ "$pid" -gt 1 ]; do
		for h in $holders; do [ "$h" = "$pid" ] && return 0; done
		pid=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null || echo 1)
	done
	return 1
}

run=("$build/service_bench" --proctor "$build/proctor" --example examples/python-pytest "$@")
if [ "$grades" = 1 ] && ! held_by_ancestor; then
	echo "service_bench.sh: taking $lock (held while the bench runs)" >&2
	exec flock "$lock" "${run[@]}"
fi
exec "${run[@]}"
