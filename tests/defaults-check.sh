#!/bin/bash
# defaults-check.sh [ROOT]: every parameter's default is written once. For
# each default of include/qk/defaults.h (QK_DEFAULT_<VAR> VALUE) and the
# program option workflow/*.mk checks VAR with ("qk-prog --opt"), looks in
# workflow/*.mk, src/, include/ and docs/ for VALUE written beside the
# parameter's name or option: "VAR,VALUE", "VAR=VALUE", "VAR ?= VALUE", a
# table row of VAR with a cell VALUE, and, in the docs and the option's
# program, "--opt ... (default VALUE" and "opt" ... "default VALUE" on one
# line. Prints each place of a default written more than once and
# exits 1; else prints how many defaults it checked and exits 0.
set -u
root=${1:-.}
cd "$root" || exit 2
status=0 n=0
places() { # var, program, option, value: file:line of each place
    local var=$1 prog=$2 opt=$3 v=${4//./\\.}
    {
        grep -rnHE "\<$var( *,| *=| *[?:]= *)$v\>|\<$var\>.*\| *$v( *\||\s*\()" \
            workflow/*.mk src include docs 2>/dev/null
        # an option's default where the option is described: its program
        # and the docs
        [ -n "$opt" ] && grep -rnHE -- "--$opt\>.*\(default:? $v\>|\"$opt\".*default:? $v\>" \
            workflow/*.mk docs src/$prog.c src/$prog 2>/dev/null
        grep -nHE "^#define QK_DEFAULT_$var $v\$" include/qk/defaults.h
    } | cut -d: -f1,2 | sort -u
}
while read -r _ name value; do
    var=${name#QK_DEFAULT_}
    check=$(grep -hoE "call param,$var,[^,]*,qk-[a-z-]+ --[a-z0-9-]+" workflow/*.mk | cut -d, -f4)
    prog=${check% *} opt=${check#* --}
    n=$((n + 1))
    found=$(places "$var" "$prog" "$opt" "$value")
    if [ "$(grep -c . <<< "$found")" -gt 1 ]; then
        echo "default $var=$value${opt:+ (--$opt)} is written in more than one place:" $found
        status=1
    fi
done < <(grep -E '^#define QK_DEFAULT_[A-Z0-9_]+ ' include/qk/defaults.h)
[ "$status" -eq 0 ] && echo "$n defaults, each written once"
exit "$status"
