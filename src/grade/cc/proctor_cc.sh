#!/bin/bash
# Proctor's compiler shim (docs/assignment.md, "build.objects"; docs/grading.md,
# "C and C++").  When a runner assignment's build compiles C or C++ sources of
# the submission and the assignment names no build.objects, the build step
# finds this first on its PATH as cc, gcc, c++, g++, clang and clang++.  It
# runs the real compiler as asked; when that succeeds, it compiles each of the
# submission's sources on the command line once more, on its own, with the
# same options, to an object in PROCTOR_CC_OUT, and lists it there.  Proctor
# checks those objects after the build, before anything the build made runs:
# whatever the sources compile to may bring no constructor, destructor or
# IFUNC and define no function or variable of the C library.
#
#   PROCTOR_CC_PATH     the step's own PATH, where the real compiler is
#   PROCTOR_CC_SOURCES  the submission's sources, absolute, one per line
#   PROCTOR_CC_OUT      the directory of the objects and of their list
# The list has one line per source compiled: "ok<TAB>SOURCE<TAB>OBJECT", or
# "fail<TAB>SOURCE" when the source compiled as asked but not on its own.
set -u
me=${0##*/}
here=${0%/*}
out=${PROCTOR_CC_OUT:-}
real=
IFS=: read -r -a dirs <<<"${PROCTOR_CC_PATH:-/usr/local/bin:/usr/bin:/bin}"
for d in "${dirs[@]}"; do
	if [ -n "$d" ] && [ "$d" != "$here" ] && [ -x "$d/$me" ] && [ ! -d "$d/$me" ]; then
		real=$d/$me
		break
	fi
done
if [ -z "$real" ]; then
	echo "$me: command not found" >&2
	exit 127
fi
export PATH=${PROCTOR_CC_PATH:-$PATH}
"$real" "$@"
rc=$?
if [ "$rc" -ne 0 ] || [ -z "$out" ]; then
	exit "$rc"
fi

mapfile -t sources <<<"${PROCTOR_CC_SOURCES:-}"
# What stays of the command for compiling one source alone: every option
# but those that name outputs, choose the stage or only affect the link.
flags=()
mine=()
resolved=()
args=("$@")
n=${#args[@]}
i=0
while [ "$i" -lt "$n" ]; do
	a=${args[$i]}
	case $a in
	-o | -MF | -MT | -MQ | -L | -l | -Xlinker | -T | -u | -z)
		i=$((i + 2))
		continue
		;;
	-I | -D | -U | -include | -imacros | -isystem | -iquote | -idirafter | -iprefix | \
		-iwithprefix | -iwithprefixbefore | -isysroot | --sysroot | -x | -Xpreprocessor | \
		-Xassembler | -specs | -B)
		if [ $((i + 1)) -lt "$n" ]; then
			flags+=("$a" "${args[$((i + 1))]}")
		fi
		i=$((i + 2))
		continue
		;;
	-c | -S | -E | -M | -MM | -MD | -MMD | -MP | -MG | -shared | -rdynamic | -s | -static | \
		-static-* | -pie | -no-pie | -nostartfiles | -nodefaultlibs | -nostdlib | -l* | -L* | \
		-Wl,* | -o* | -MF* | -MT* | -MQ* | -)
		;;
	-*)
		flags+=("$a")
		;;
	*)
		p=$(readlink -f -- "$a" 2>/dev/null) || p=
		for s in "${sources[@]}"; do
			if [ -n "$s" ] && [ "$p" = "$s" ]; then
				# As the command names it: the same __FILE__.
				mine+=("$a")
				resolved+=("$p")
				break
			fi
		done
		;;
	esac
	i=$((i + 1))
done
mkdir -p "$out" || exit 1
for k in "${!mine[@]}"; do
	obj=$(mktemp "$out/XXXXXXXX.o") || exit 1
	if "$real" "${flags[@]}" -c -o "$obj" "${mine[$k]}" >/dev/null 2>&1; then
		printf 'ok\t%s\t%s\n' "${resolved[$k]}" "$obj" >>"$out/list"
	else
		printf 'fail\t%s\n' "${resolved[$k]}" >>"$out/list"
	fi
done
exit 0
