#!/bin/bash
# Replays every input a fuzz target once crashed on
# (tests/data/fuzz-regressions/<target>/), with the gcc build of the target
# (build/tests/fuzz-replay/<target>): each must run through, and the target
# must note the outcome tests/data/fuzz-regressions/expected.tsv gives
# (the exact error message of the check that now refuses the input).
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

dir=tests/data/fuzz-regressions
expected=$dir/expected.tsv
for input in "$dir"/*/*; do
    target=$(basename "$(dirname "$input")")
    file=$(basename "$input")
    lines=$(awk -F'\t' -v t="$target" -v f="$file" '$1 == t && $2 == f { print $3 }' "$expected")
    if [ -z "$lines" ]; then
        bad "$target/$file: no expected outcome in $expected"
        continue
    fi
    run "build/tests/fuzz-replay/$target" "$input"
    expect_status 0 "$target/$file: replayed cleanly"
    while IFS= read -r line; do
        if grep -qxF -- "$line" "$e2e_out"; then ok; else
            bad "$target/$file: output lacks '$line'"
            sed 's/^/  got: /' "$e2e_out" | head -8 >&2
        fi
    done <<< "$lines"
done
# every expectation belongs to a committed input
while IFS=$'\t' read -r target file _; do
    case $target in '#'*|'') continue ;; esac
    if [ -e "$dir/$target/$file" ]; then ok; else bad "$expected names a missing $target/$file"; fi
done < "$expected"
finish
