#!/bin/bash
# Runs the Check test programs given as arguments, then every tests/e2e-*.sh
# script, and prints one summary line "N passed, M failed", after the
# seconds each took, longest first.
set -u
cd "$(dirname "$0")/.."
passed=0 failed=0 failed_names=() took=()
# one test: its line, then whether it passed and how long it took
one() { # name, command...
    local name=$1 start=$SECONDS
    shift
    echo "== $name"
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_names+=("$name"); fi
    took+=("$((SECONDS - start)) $name")
}
for t in "$@"; do
    one "$t" "$t"
done
for s in tests/e2e-*.sh; do
    [ -e "$s" ] || continue
    one "$s" bash "$s"
done
echo
echo "seconds per test, longest first:"
printf '%s\n' "${took[@]}" | sort -rn | awk '{ printf "  %5d  %s\n", $1, $2 }'
[ "$failed" -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
