#!/bin/bash
# Runs the Check test programs given as arguments, then every tests/e2e-*.sh
# script, and prints one summary line "N passed, M failed".
set -u
cd "$(dirname "$0")/.."
passed=0 failed=0 failed_names=()
for t in "$@"; do
    echo "== $t"
    if "$t"; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_names+=("$t"); fi
done
for s in tests/e2e-*.sh; do
    [ -e "$s" ] || continue
    echo "== $s"
    if bash "$s"; then passed=$((passed + 1)); else failed=$((failed + 1)); failed_names+=("$s"); fi
done
echo
[ "$failed" -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
