#!/bin/bash
# Time to grade the Python example's four submissions with --isolation vm
# against --isolation jail, side by side in one run, on the same image.
#
#   bench/vm_grade.sh PROCTOR IMAGE_PIN [STATE_DIR] [ROUNDS]
#
# Prints per-submission seconds (median over ROUNDS, default 3) and the
# ratio vm/jail.  The VM's time limits are scaled by its slowdown factor
# (docs/vm.md), so a submission that times out takes longer there.
set -euo pipefail
proctor=$1 pin=$2 state=${3:-/var/lib/proctor} rounds=${4:-3}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$top/examples/python-pytest" "$tmp/a"
chmod -R a+rX "$tmp"
echo "image: $pin" >> "$tmp/a/assignment.yaml"
printf '%-14s %10s %10s %7s\n' submission jail_s vm_s ratio
for sub in correct partial syntax_error sys_exit; do
	for iso in jail vm; do
		times=()
		for _ in $(seq "$rounds"); do
			t0=$(date +%s.%N)
			"$proctor" grade --json --isolation "$iso" --state-dir "$state" "$tmp/a" \
				"$top/examples/python-pytest/submissions/$sub" > "$tmp/out.json"
			t1=$(date +%s.%N)
			times+=("$(echo "$t1 - $t0" | bc)")
		done
		med=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (rounds + 1) / 2 ))p")
		status=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["status"], "%d/%d" % (d["passed"], d["total"]), d.get("time_factor"))' "$tmp/out.json")
		eval "t_$iso=$med; s_$iso=\"$status\""
	done
	printf '%-14s %10.2f %10.2f %7.1f   jail: %s | vm: %s\n' "$sub" "$t_jail" "$t_vm" \
		"$(echo "$t_vm / $t_jail" | bc -l)" "$s_jail" "$s_vm"
done
