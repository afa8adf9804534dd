#!/bin/bash
# A parameter's default is written once (include/qk/defaults.h): the
# programs' --print-defaults and Make's defaults agree with it, and
# tests/defaults-check.sh passes on the tree and fails on a tree where a
# default is written a second time (in a program's help, a Make
# declaration or the docs).
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh
T=build/tests/tmp/e2e-defaults
rm -rf "$T" && mkdir -p "$T"

run bash tests/defaults-check.sh
expect_status 0 "defaults-check on the tree"
expect_out "each written once" "defaults-check counts the defaults"

# every parameter a program option takes: Make's default is the program's
while IFS=, read -r var prog opt; do
    want=$(bin/"$prog" --print-defaults | awk -F'\t' -v o="$opt" '$1 == o { print $2 }')
    run bin/"$prog" --print-defaults
    expect_status 0 "$prog --print-defaults"
    [ -n "$want" ] || { bad "$prog --print-defaults lacks --$opt ($var)"; continue; }
    got=$(make --no-print-directory -s QK_INNER="$PWD" QK_BUILDS_NOTHING=yes \
        --eval "print-$var: ; @echo \$($var)" "print-$var" 2>/dev/null)
    expect_same "$got" "$want" "make's $var is $prog --$opt's default"
done < <(grep -hoE 'call param,[A-Z0-9_]+,,qk-[a-z-]+ --[a-z0-9-]+' workflow/*.mk |
         sed 's/^call param,\([^,]*\),,\([^ ]*\) --\(.*\)$/\1,\2,\3/')

# a planted duplicate, in each kind of place, is found
plant() { # name, file, text to append
    rm -rf "$T/tree" && mkdir -p "$T/tree"
    cp -a workflow src include docs "$T/tree/"
    printf '%s\n' "$3" >> "$T/tree/$2"
    run bash tests/defaults-check.sh "$T/tree"
    expect_status 1 "defaults-check finds $1"
    expect_out "PLAST_MIN_PAIRS=32" "defaults-check names the parameter ($1)"
}
plant "a help text typing the default" src/qk-plasticity.c \
    '/* {OPT_MIN_PAIRS, "min-pairs", "N", "drop bins (default 32)"} */'
plant "a Make literal" workflow/plasticity.mk 'PLAST_MIN_PAIRS ?= 32'
plant "a docs table" docs/plasticity.md '| PLAST_MIN_PAIRS | --min-pairs | 32 |'
plant "an option in the docs" docs/plasticity.md '`--min-pairs N` (default 32)'
finish
