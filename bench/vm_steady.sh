#!/bin/bash
# What emulation costs once every code path is translated: the same three
# Python commands (interpreter start, `py_compile`, a two-test pytest
# session) three times in a row in ONE microVM, and natively, side by
# side in one run.  The first pass in the guest pays TCG's translation of
# each path; the later passes find it translated (same QEMU, same guest
# pages), so their ratio to native is the floor of any microVM grading
# under TCG, however warm its QEMU was kept (issue 13, docs/vm-tcg-research.md).
#
#   bench/vm_steady.sh PROCTOR IMAGE_PIN [STATE_DIR]
#
# The image must have python3 and pytest (e.g. small@1).  A measurement,
# not a test: exits 0 unless it cannot run.
set -euo pipefail
proctor=$1 pin=$2 state=${3:-/var/lib/proctor}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/t.sh" <<'EOF'
py=${PY:-python3}
cd "${DIR:-/tmp}" && mkdir -p w && cd w
printf 'def add(a, b):\n    return a + b\n' > sol.py
printf 'from sol import add\ndef test_a():\n    assert add(1, 2) == 3\ndef test_b():\n    assert add(2, 2) == 4\n' > test_x.py
ms() { local s e; s=$(date +%s%N); "$@" > /dev/null 2>&1 || true; e=$(date +%s%N); echo $(( (e - s) / 1000000 )); }
for i in 1 2 3; do
	echo "$i start $(ms "$py" -c pass)"
	echo "$i py_compile $(ms "$py" -m py_compile sol.py)"
	echo "$i pytest $(ms "$py" -m pytest -q -p no:cacheprovider test_x.py)"
done
EOF
chmod a+rx "$tmp" "$tmp/t.sh"
"$proctor" run --isolation vm --image "$pin" --state-dir "$state" --wall 300 --cpu 300 \
	--output 16 --put "$tmp/t.sh:t.sh" -- /bin/sh t.sh > "$tmp/vm.txt"
mkdir "$tmp/native"
DIR=$tmp/native PY=/usr/bin/python3 /bin/sh "$tmp/t.sh" > "$tmp/native.txt"
/usr/bin/python3 - "$tmp/vm.txt" "$tmp/native.txt" <<'EOF'
import re, sys
def load(path):
    out = {}
    for line in open(path):
        m = re.match(r"^(\d) (\S+) (\d+)$", line.strip())
        if m:
            out[(int(m.group(1)), m.group(2))] = int(m.group(3))
    return out
vm, nat = load(sys.argv[1]), load(sys.argv[2])
if not vm:
    sys.exit("bench/vm_steady.sh: the guest printed no timings:\n" + open(sys.argv[1]).read())
print("%-12s %9s %9s %9s %9s  %s" % ("command", "vm 1st", "vm 3rd", "native", "3rd/nat", "1st/nat"))
for cmd in ("start", "py_compile", "pytest"):
    n = nat[(3, cmd)] or 1
    print("%-12s %7d ms %6d ms %6d ms %9.1f  %6.1f" % (cmd, vm[(1, cmd)], vm[(3, cmd)], nat[(3, cmd)],
          vm[(3, cmd)] / n, vm[(1, cmd)] / n))
EOF
