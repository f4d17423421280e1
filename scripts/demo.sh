#!/bin/bash
# Set up and show the sandbox core on the bundled examples (as root):
# install dependencies, build a release binary, check the host, then run a
# well-behaved program, a fork bomb and a memory hog, each in its own sandbox.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
if [ ! -d build-release ]; then
	meson setup build-release --buildtype=release >/dev/null
fi
meson compile -C build-release proctor:executable >/dev/null
p=build-release/proctor

echo "== proctor doctor"
$p doctor || true
show() {
	echo
	echo "== proctor run $*"
	$p run "$@" || echo "(exit status $?)"
}
show --put examples/run/hello.py:hello.py -- python3 hello.py
show --pids 32 --wall 2 --put examples/run/forkbomb.py:forkbomb.py -- python3 forkbomb.py
show --memory 64 --put examples/run/memhog.py:memhog.py -- python3 memhog.py
show --json --output 1 -- /bin/sh -c 'yes | head -c 100000000'
