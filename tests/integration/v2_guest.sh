#!/bin/bash
# The jail's own test suite inside a microVM whose cgroups are pure v2 (the
# layout of stock Debian 12 hosts, which the development machines, hybrid
# v1+v2, cannot exercise).  The guest's root runs test_jail
# (`proctor run --privileged`), so the jail uses the v2 code path of
# src/host/cgroup.c: its run cgroup is the delegated base, with memory,
# pids and cpu.  Suite vm-long.  Prints the inner cmocka summary.
set -uo pipefail
: "${PROCTOR:?}" "${PROBE:?}" "${TEST_JAIL:?}" "${PROCTOR_STATE_DIR:?}"
images_dir=$(cd "$(dirname "$0")/../../images" && pwd)

pin=$("$PROCTOR" image ls --json --state-dir "$PROCTOR_STATE_DIR" |
	/usr/bin/python3 -c 'import json,sys
v=[i["version"] for i in json.load(sys.stdin) if i["name"]=="selftest"]
print("selftest@%d" % max(v) if v else "")')
if [ -z "$pin" ]; then
	echo "v2_guest: building $images_dir/selftest.yaml" >&2
	"$PROCTOR" image build --state-dir "$PROCTOR_STATE_DIR" "$images_dir/selftest.yaml" >&2 ||
		{ echo "v2_guest: image build failed" >&2; exit 1; }
	pin=$("$PROCTOR" image ls --json --state-dir "$PROCTOR_STATE_DIR" |
		/usr/bin/python3 -c 'import json,sys
print("selftest@%d" % max(i["version"] for i in json.load(sys.stdin) if i["name"]=="selftest"))')
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$PROCTOR" run --json --isolation vm --image "$pin" --privileged \
	--memory 2048 --disk 512 --cpu 7200 --wall 7200 --pids 4096 --output 4096 --nofile 4096 \
	--put "$PROCTOR:bin/proctor" --put "$PROBE:bin/probe" --put "$TEST_JAIL:bin/test_jail" \
	--env PROCTOR=/work/bin/proctor --env PROBE=/work/bin/probe \
	--env ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 --env CMOCKA_MESSAGE_OUTPUT=stdout \
	-- /bin/sh -c 'grep cgroup2 /proc/mounts >&2; cat /proc/self/cgroup >&2;
		exec /work/bin/test_jail' > "$out"
rc=$?
/usr/bin/python3 - "$out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(d["stdout"])
print("--- stderr ---\n" + d["stderr"], file=sys.stderr)
print("v2_guest: status %s, exit %s, %s" % (d["status"], d["exit_code"], d.get("message")),
      file=sys.stderr)
sys.exit(0 if d["status"] == "ok" else 1)
PY
py=$?
[ "$rc" -le 1 ] && [ "$py" -eq 0 ]
