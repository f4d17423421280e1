#!/bin/bash
# The service's durable intake side by side with an earlier build, in one run
# (bench/README.md, "service_ab"):
#
#   bench/service_ab.sh [BASE] [ROUNDS] [NEW]
#
# BASE is a revision (default a3b2b8a: the service before its reshaping into
# a route table, handlers by resource and a gate that checks a token once);
# it is built in a git worktree under /var/tmp, release, beside this tree's
# build-rel (or NEW, a revision built in a worktree of its own: a tree with
# work in progress need not build).  Each round runs `service_bench --intake-only` with the base's
# binaries and with this tree's, in alternating order (SQLite and PostgreSQL
# each time), and the medians of accepted/s and server CPU per submission
# are printed with their ratios, this tree over the base.  Intake grades
# nothing, so no lock is needed.  Exits 0 whatever the numbers are.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
base=${1:-a3b2b8a}
rounds=${2:-3}
new=build-rel
old_src=/var/tmp/proctor-ab-$(git rev-parse --short "$base")
new_src=$here
if [ -n "${3:-}" ]; then
	new_src=/var/tmp/proctor-ab-$(git rev-parse --short "$3")
	[ -d "$new_src" ] || git worktree add --detach "$new_src" "$3" >/dev/null
fi

build() { # DIR SRC
	if [ ! -f "$2/$1/build.ninja" ]; then
		(cd "$2" && meson setup "$1" --buildtype=release -Dwerror=true >/dev/null)
	fi
	(cd "$2" && meson compile -C "$1" proctor:executable proctor-service proctor-helper \
		service_bench >/dev/null)
}
if [ ! -d "$old_src" ]; then
	git worktree add --detach "$old_src" "$base" >/dev/null
fi
build build-rel "$old_src"
build "$new" "$new_src"

out=$(mktemp -d /var/tmp/proctor-ab.XXXXXX)
trap 'rm -rf "$out"' EXIT
run() { # SRC BUILD TAG ROUND
	(cd "$1" && "$2/service_bench" --proctor "$2/proctor" --example examples/python-pytest \
		--intake-only) >"$out/$3.$4" 2>&1 || echo "service_ab: the $3 run $4 failed" >&2
}
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then
		run "$old_src" build-rel old "$r"; run "$new_src" "$new" new "$r"
	else
		run "$new_src" "$new" new "$r"; run "$old_src" build-rel old "$r"
	fi
done

/usr/bin/python3 - "$out" "$rounds" "$base" <<'PY'
import glob, os, re, statistics, sys
out, rounds, base = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def rows(tag):
    got = {}
    for f in sorted(glob.glob(os.path.join(out, tag + ".*"))):
        for line in open(f):
            m = re.match(r"(sqlite|postgresql)\s+\d+\s+\d+\s+[\d.]+\s+(\d+)\s+[\d.]+ ms\s+[\d.]+ ms\s+([\d.]+) ms", line)
            if m:
                got.setdefault(m.group(1), []).append((float(m.group(2)), float(m.group(3))))
    return got
old, new = rows("old"), rows("new")
print(f"intake, {rounds} alternating rounds: base {base} vs this tree (medians)")
print(f"{'backend':<12} {'base/s':>8} {'tree/s':>8} {'ratio':>6}   {'base CPU':>9} {'tree CPU':>9} {'ratio':>6}")
for b in ("sqlite", "postgresql"):
    if b not in old or b not in new:
        print(f"{b:<12} n/a"); continue
    ro = statistics.median(x[0] for x in old[b]); rn = statistics.median(x[0] for x in new[b])
    co = statistics.median(x[1] for x in old[b]); cn = statistics.median(x[1] for x in new[b])
    print(f"{b:<12} {ro:8.0f} {rn:8.0f} {rn / ro:6.2f}   {co:7.2f}ms {cn:7.2f}ms {cn / co:6.2f}")
PY
