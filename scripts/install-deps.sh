#!/bin/bash
# Install what Proctor needs to build, test and run on Debian 12 (as root).
# Idempotent: apt runs only when a package is missing.
set -euo pipefail

packages=(
	build-essential meson ninja-build pkg-config   # build
	libjansson-dev libseccomp-dev                  # runtime libraries (JSON, seccomp)
	libcmocka-dev                                  # unit and integration tests
	clang libclang-rt-14-dev                       # libFuzzer targets
	python3 python3-pytest                         # the corpus's Python assignment runs pytest
	bubblewrap util-linux                          # benchmark peers (bwrap, unshare)
	make gcc libc6-dev                             # the corpus's C assignment builds in the sandbox
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	echo "install-deps: installing ${missing[*]}" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
