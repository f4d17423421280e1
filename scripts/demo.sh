#!/bin/bash
# Set up Proctor and grade the bundled example class (as root, Debian 12):
# install dependencies, build a release binary, check the host, grade one
# submission of each example, then grade the Python example's whole class.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
if [ ! -d build-release ]; then
	meson setup build-release --buildtype=release >/dev/null
fi
meson compile -C build-release proctor:executable proctor-helper >/dev/null
p=build-release/proctor

echo "== proctor doctor"
$p doctor || true

for ex in python-pytest c-tap js-node java-junit5 io-sum; do
	for sub in correct partial; do
		[ -d "examples/$ex/submissions/$sub" ] || continue
		echo
		echo "== proctor grade examples/$ex examples/$ex/submissions/$sub"
		$p grade "examples/$ex" "examples/$ex/submissions/$sub" || echo "(exit status $?)"
	done
done

if $p class --help >/dev/null 2>&1; then
	out=$(mktemp -d)/results.csv
	echo
	echo "== proctor class -j 2 --out $out examples/python-pytest examples/python-pytest/submissions"
	$p class -j 2 --out "$out" examples/python-pytest examples/python-pytest/submissions || echo "(exit status $?)"
	echo "gradebook: $out"
	cat "$out"
fi

echo
echo "== proctor run: a fork bomb and a memory hog, each in its own sandbox"
$p run --pids 32 --wall 2 --put examples/run/forkbomb.py:forkbomb.py -- python3 forkbomb.py || true
$p run --memory 64 --put examples/run/memhog.py:memhog.py -- python3 memhog.py || true
