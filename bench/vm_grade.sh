#!/bin/bash
# Time to grade the Python example's four submissions with --isolation vm
# against --isolation jail, side by side in one run, on the same image.
#
#   bench/vm_grade.sh PROCTOR IMAGE_PIN [STATE_DIR] [ROUNDS]
#
# Prints per-submission seconds (median over ROUNDS, default 3) and the
# ratios vm/jail (target: at most 2) and plain/jail.  The VM's time limits are scaled by its slowdown factor
# (docs/vm.md), so a submission that times out takes longer there.
set -euo pipefail
proctor=$1 pin=$2 state=${3:-/var/lib/proctor} rounds=${4:-3}
top=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$top/examples/python-pytest" "$tmp/a"
chmod -R a+rX "$tmp"
echo "image: $pin" >> "$tmp/a/assignment.yaml"
# Three ways, interleaved per round: the jail; the microVM from the
# assignment's template (docs/vm.md, "Assignment snapshots"); the microVM
# from the image's snapshot only (PROCTOR_NO_TEMPLATE=1).  A first,
# unrecorded grading builds the snapshots.
"$proctor" grade --json --isolation vm --state-dir "$state" "$tmp/a" \
	"$top/examples/python-pytest/submissions/correct" > /dev/null
PROCTOR_NO_TEMPLATE=1 "$proctor" grade --json --isolation vm --state-dir "$state" "$tmp/a" \
	"$top/examples/python-pytest/submissions/correct" > /dev/null
printf '%-14s %8s %8s %8s %9s %9s\n' submission jail_s vm_s plain_s vm/jail plain/jail
for sub in correct partial syntax_error sys_exit; do
	declare -A all=()
	for _ in $(seq "$rounds"); do
		for mode in jail vm plain; do
			iso=$mode env=()
			[ "$mode" = plain ] && iso=vm env=(PROCTOR_NO_TEMPLATE=1)
			t0=$(date +%s.%N)
			env "${env[@]}" "$proctor" grade --json --isolation "$iso" --state-dir "$state" \
				"$tmp/a" "$top/examples/python-pytest/submissions/$sub" > "$tmp/out.json"
			t1=$(date +%s.%N)
			all[$mode]+="$(echo "$t1 - $t0" | bc) "
			status=$(/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["status"], "%d/%d" % (d["passed"], d["total"]), "template" if (d.get("snapshot") or {}).get("template") else "-")' "$tmp/out.json")
			eval "s_$mode=\"$status\""
		done
	done
	for mode in jail vm plain; do
		# shellcheck disable=SC2086
		med=$(printf '%s\n' ${all[$mode]} | sort -n | sed -n "$(( (rounds + 1) / 2 ))p")
		eval "t_$mode=$med"
	done
	r=$(echo "$t_vm / $t_jail" | bc -l)
	printf '%-14s %8.2f %8.2f %8.2f %9.1f %9.1f   jail: %s | vm: %s | plain: %s\n' "$sub" \
		"$t_jail" "$t_vm" "$t_plain" "$r" "$(echo "$t_plain / $t_jail" | bc -l)" \
		"$s_jail" "$s_vm" "$s_plain"
	if [ "$(echo "$r > 2" | bc)" = 1 ]; then
		echo "TARGET MISSED: $sub vm/jail = $(printf '%.1f' "$r"), target <= 2"
	fi
	unset all
done
exit 0
