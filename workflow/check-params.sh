#!/bin/bash
# check-params.sh IDS: checks the values a run gives its parameters, before
# any work (workflow/validate.mk). Reads lines NAME US VALUE US CHECK US TYPED
# (US: the unit separator, \037, which no value holds)
# (TYPED: 1 when the command line or the environment gave the value, 0 for
# a default), CHECK as param and checked_by describe it (config.mk):
#   PROGRAM --OPTION  the program's own parser takes VALUE for OPTION
#                     (PROGRAM --check; then every option of a
#                     program with a typed value is checked together, for
#                     the rules that tie two of them)
#   dataset           one of IDS (the registry's and the run's datasets)
#   count             a whole number of at most 18 digits
#   one of: A B ...   one of these words
#   blas              native, or an OpenBLAS kernel this CPU runs (qk-report
#                     --blas-info with it)
# Prints one line for each value refused, "make: NAME=VALUE: problem", and
# exits 2 if any was; else prints nothing.
set -u
ids=" $1 "
status=0
declare -A prog_args prog_names prog_typed

refuse() { # name, value, problem
    echo "make: $1=$2: $3" >&2
    status=2
}

# the first line of a program's message, without "PROG: error: --OPTION: "
problem() {
    local line
    line=$(head -1 <<< "$1")
    line=${line#*: error: }
    echo "${line#--*: }"
}

while IFS=$'\037' read -r name value check typed; do
    # (no parameter takes blanks: a value with one is a list or a typo)
    if [ "$typed" = 1 ] && [[ $value =~ [[:space:]] ]]; then
        refuse "$name" "$value" "holds a blank or a control character"
        continue
    fi
    case $check in
    qk-*)
        prog=${check%% *} opt=${check#* }
        prog_args[$prog]+=" $(printf '%q %q' "$opt" "$value")"
        prog_names[$prog]+=" $name=$value"
        [ "$typed" = 1 ] || continue
        prog_typed[$prog]=1
        if ! msg=$(bin/"$prog" --check "$opt" "$value" 2>&1 >/dev/null); then
            refuse "$name" "$value" "$(problem "$msg") ($prog $opt)"
        fi ;;
    dataset)
        [ "$typed" = 1 ] && [[ $ids != *" $value "* ]] &&
            refuse "$name" "$value" "not a dataset of workflow/datasets.tsv or of DATA" ;;
    count)
        [ "$typed" = 1 ] && ! [[ $value =~ ^[0-9]{1,18}$ ]] &&
            refuse "$name" "$value" "expected a whole number from 0" ;;
    blas)
        [ "$typed" = 1 ] && [ "$value" != native ] &&
            ! msg=$(OPENBLAS_CORETYPE=$value bin/qk-report --blas-info 2>&1 >/dev/null) &&
            refuse "$name" "$value" "$(problem "$msg")" ;;
    "one of: "*)
        words=${check#one of: }
        [ "$typed" = 1 ] && [[ " $words " != *" $value "* ]] &&
            refuse "$name" "$value" "expected one of: $words" ;;
    esac
done
[ "$status" -eq 0 ] || exit "$status"
# the options of one program together (qk-taxonomy: --low not above --high)
for prog in "${!prog_typed[@]}"; do
    if ! msg=$(eval "bin/$prog --check ${prog_args[$prog]}" 2>&1 >/dev/null); then
        echo "make:${prog_names[$prog]}: $(problem "$msg") ($prog)" >&2
        status=2
    fi
done
exit "$status"
