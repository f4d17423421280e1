#!/bin/bash
# Proctor's compiler shim (docs/assignment.md, "build.objects"; docs/grading.md,
# "C and C++").  When a runner assignment's build compiles C or C++ sources of
# the submission and the assignment names no build.objects, the build step
# finds this first on its PATH as cc, gcc, c++, g++, clang and clang++.
# Before it runs the real compiler as asked, it compiles each of the
# submission's sources on the command line on its own, with the same
# options, to an object in PROCTOR_CC_OUT, and lists it there.  Proctor
# checks those objects after the build, before anything the build made runs:
# whatever the sources compile to may bring no constructor, destructor or
# IFUNC and define no function or variable of the C library.
#
#   PROCTOR_CC_PATH     the step's own PATH, where the real compiler is
#   PROCTOR_CC_SOURCES  the submission's sources, absolute, one per line
#   PROCTOR_CC_FILES    all the submission's files, absolute, one per line
#   PROCTOR_CC_OUT      the directory of the objects and of their list
# The list has one line per source compiled: "ok<TAB>SOURCE<TAB>OBJECT", or
# "fail<TAB>SOURCE" when the source does not compile on its own with the
# options of a command that compiles it; "included<TAB>FILE" when a source
# that is not the submission's includes a file of the submission's; and
# "unsure<TAB>OPTION" for an option that puts code before main() into every
# object (sanitizers, coverage), with which nothing can be checked.
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
if [ -z "$out" ]; then
	exec "$real" "$@"
fi

mapfile -t sources <<<"${PROCTOR_CC_SOURCES:-}"
mapfile -t files <<<"${PROCTOR_CC_FILES:-}"
# What stays of the command for compiling one source alone: every option
# but those that name outputs, choose the stage or only affect the link.
flags=()
mine=()
resolved=()
others=()
unsure=()
args=("$@")
n=${#args[@]}
i=0
while [ "$i" -lt "$n" ]; do
	a=${args[$i]}
	case $a in
	-o | -MF | -MT | -MQ | -L | -l | -Xlinker | -T | -u | -z | -e | -aux-info | -wrapper | \
		-dumpdir | -dumpbase | -dumpbase-ext)
		i=$((i + 2))
		continue
		;;
	-I | -D | -U | -include | -imacros | -isystem | -iquote | -idirafter | -iprefix | \
		-iwithprefix | -iwithprefixbefore | -isysroot | --sysroot | -x | -Xpreprocessor | \
		-Xassembler | -specs | -B | --param | -Xclang | -mllvm | -imultilib | -iplugindir)
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
	-fsanitize=* | --coverage | -fprofile-arcs | -pg | -finstrument-functions* | -flto*)
		# Options that put code before main() (or bytecode) into every
		# object: the check cannot tell the submission's from them.
		unsure+=("$a")
		flags+=("$a")
		;;
	-*)
		flags+=("$a")
		;;
	*)
		p=$(readlink -f -- "$a" 2>/dev/null) || p=
		found=
		for s in "${sources[@]}"; do
			if [ -n "$s" ] && [ "$p" = "$s" ]; then
				# As the command names it: the same __FILE__.
				mine+=("$a")
				resolved+=("$p")
				found=1
				break
			fi
		done
		case $a in
		*.c | *.cc | *.cp | *.cpp | *.cxx | *.c++ | *.C | *.CPP)
			if [ -z "$found" ] && [ -f "$a" ]; then
				others+=("$a")
			fi
			;;
		esac
		;;
	esac
	i=$((i + 1))
done
mkdir -p "$out" || exit 1
for f in "${unsure[@]}"; do
	printf 'unsure\t%s\n' "$f" >>"$out/list"
done
# Before the real compile, so both see the same files (a source cannot
# tell them apart by __has_include of what the real one makes).
for k in "${!mine[@]}"; do
	obj=$(mktemp "$out/XXXXXXXX.o") || exit 1
	if "$real" "${flags[@]}" -c -o "$obj" "${mine[$k]}" >/dev/null 2>&1; then
		printf 'ok\t%s\t%s\n' "${resolved[$k]}" "$obj" >>"$out/list"
	else
		printf 'fail\t%s\n' "${resolved[$k]}" >>"$out/list"
	fi
done
# A source of the instructor's that includes a file of the submission (a
# header it handed in) compiles that file into an object nobody checks.
for src in "${others[@]}"; do
	deps=$("$real" "${flags[@]}" -M "$src" 2>/dev/null) || continue
	for d in $deps; do
		case $d in *: | \\) continue ;; esac
		p=$(readlink -f -- "$d" 2>/dev/null) || continue
		for f in "${files[@]}"; do
			if [ -n "$f" ] && [ "$p" = "$f" ]; then
				printf 'included\t%s\n' "$p" >>"$out/list"
			fi
		done
	done
done
exec "$real" "$@"
