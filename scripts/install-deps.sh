#!/bin/bash
# Install what Proctor needs to build, test and run on Debian 12 (as root).
# Idempotent: apt runs only when a package is missing.
set -euo pipefail

packages=(
	build-essential meson ninja-build pkg-config   # build
	libjansson-dev libseccomp-dev                  # runtime libraries (JSON, seccomp)
	libxml2-dev libarchive-dev libfyaml-dev nettle-dev  # reports, submissions, assignments, digests
	libelf-dev                                     # build.objects: a C/C++ build's objects (helper only)
	liblz4-dev                                     # the microVM's guest kernel (LZ4-compressed)
	libcmocka-dev                                  # unit and integration tests
	clang libclang-rt-14-dev                       # libFuzzer targets
	python3 python3-pytest                         # the corpus's Python assignment runs pytest
	bubblewrap util-linux                          # benchmark peers (bwrap, unshare)
	make gcc libc6-dev                             # the corpus's C assignment builds in the sandbox
	openjdk-17-jdk-headless junit5                 # the Java + JUnit 5 example
	mmdebstrap squashfs-tools                      # proctor image build: the tree, rootfs.squashfs
	uidmap                                         # mmdebstrap's unprivileged mode
	qemu-system-x86                                # the microVM backend (QEMU microvm, KVM or TCG)
	libmicrohttpd-dev libcurl4-openssl-dev         # the service: its HTTP front; the tests' HTTP client and callbacks
	libsqlite3-dev libpq-dev                       # the service's job store: SQLite (default), PostgreSQL (many hosts)
	postgresql                                     # a real PostgreSQL the store tests start themselves (not a service)
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
# The JavaScript example needs node >= 20 (node --test); Debian 12's nodejs is 18.
if ! command -v node >/dev/null 2>&1; then
	echo "install-deps: no node on PATH; installing Debian's nodejs (the JS example needs >= 20)" >&2
	apt-get install -y -qq --no-install-recommends nodejs >/dev/null
fi
