#!/bin/bash
# Set up Proctor and grade the bundled examples (as root, Debian 12):
# install dependencies, build a release binary (-O3, warnings as errors),
# check the host, grade every submission of every example and compare each
# verdict with the example's EXPECTED.tsv, grade the Python example's whole
# class, and show two hostile programs stopped by their limits.
# Exits 0 only when the build worked and every verdict is the expected one;
# a failing step prints its own output and the script exits non-zero.
set -uo pipefail
cd "$(dirname "$0")/.."

die() {
	echo "demo.sh: $*" >&2
	exit 1
}

./scripts/install-deps.sh || die "installing the dependencies failed (see above)"

build=build-release
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if [ ! -f "$build/build.ninja" ]; then
	if ! meson setup "$build" --buildtype=release >"$log" 2>&1; then
		cat "$log" >&2
		die "meson setup $build failed (its output is above)"
	fi
fi
if ! meson compile -C "$build" >"$log" 2>&1; then
	cat "$log" >&2
	die "the release build failed (its output is above)"
fi
p=$build/proctor
py=/usr/bin/python3

echo "== proctor doctor"
$p doctor || die "proctor doctor found no isolation that works on this host"

# One line per submission: the verdict Proctor gave, and whether it is the
# one the example's EXPECTED.tsv asks for (status, passed/total, score).
differs=0
graded=0
for dir in examples/*/; do
	ex=$(basename "$dir")
	expected="$dir/EXPECTED.tsv"
	[ -f "$expected" ] || continue
	echo
	echo "== proctor grade examples/$ex (each submission, against EXPECTED.tsv)"
	while IFS=$'\t' read -r sub status passed total score max _; do
		[ "$sub" = "submission" ] && continue
		[ -n "$sub" ] || continue
		out=$($p grade --json "examples/$ex" "examples/$ex/submissions/$sub" 2>"$log")
		rc=$?
		graded=$((graded + 1))
		line=$(printf '%s' "$out" | $py -c '
import json, sys
want = sys.argv[1:]
try:
    d = json.load(sys.stdin)
except ValueError:
    print("DIFFERS no result document"); sys.exit(0)
got = (d.get("status"), d.get("passed"), d.get("total"), d.get("score"), d.get("max_score"))
ok = (got[0] == want[0] and got[1] == int(want[1]) and got[2] == int(want[2])
      and abs((got[3] or 0) - float(want[3])) < 1e-9 and abs((got[4] or 0) - float(want[4])) < 1e-9)
text = "%s %s/%s tests, score %g/%g" % (got[0], got[1], got[2], got[3] or 0, got[4] or 0)
if ok:
    print("ok      " + text)
else:
    print("DIFFERS %s (expected %s %s/%s, score %s/%s)" % ((text,) + tuple(want)))
' "$status" "$passed" "$total" "$score" "$max")
		printf '  %-16s %s\n' "$sub" "$line"
		if [ "${line#ok}" = "$line" ]; then
			differs=$((differs + 1))
			echo "    (proctor grade exit status $rc)"
			sed 's/^/    /' "$log" | head -20
		fi
	done <"$expected"
done

echo
echo "== proctor grade examples/python-pytest examples/python-pytest/submissions/partial (the text view)"
$p grade examples/python-pytest examples/python-pytest/submissions/partial || true

outdir=$(mktemp -d)
out=$outdir/results.csv
echo
echo "== proctor class -j 2 --out $out examples/python-pytest examples/python-pytest/submissions"
$p class -j 2 --out "$out" examples/python-pytest examples/python-pytest/submissions
rc=$?
if [ "$rc" -ne 0 ]; then
	differs=$((differs + 1))
	echo "  (proctor class exit status $rc)"
fi
echo "gradebook: $out"
cat "$out"

echo
echo "== proctor run: a fork bomb and a memory hog, each in its own sandbox"
$p run --pids 32 --wall 2 --put examples/run/forkbomb.py:forkbomb.py -- python3 forkbomb.py
[ $? -eq 1 ] || differs=$((differs + 1))
$p run --memory 64 --put examples/run/memhog.py:memhog.py -- python3 memhog.py
[ $? -eq 1 ] || differs=$((differs + 1))

echo
if [ "$differs" -ne 0 ]; then
	die "$differs of $graded verdicts (or steps) differ from what the examples expect"
fi
echo "demo.sh: all $graded submissions got the verdicts their EXPECTED.tsv give"
