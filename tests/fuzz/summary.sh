#!/bin/bash
# Prints one line per fuzz target from the final statistics of its last
# run (build/fuzz/logs/<target>.log): executions, executions per second,
# inputs in its corpus.
# Usage: tests/fuzz/summary.sh TARGET...
set -uo pipefail
cd "$(dirname "$0")/../.."
stat() { # name, log
    sed -n "s/^stat::$1: *//p" "$2" | tail -1
}
printf '%-10s %14s %10s %8s\n' target executions exec/s corpus
total=0
for t in "$@"; do
    log=build/fuzz/logs/$t.log
    runs=$(stat number_of_executed_units "$log")
    rate=$(stat average_exec_per_sec "$log")
    corpus=$(ls "build/fuzz/work/$t" 2>/dev/null | wc -l)
    printf '%-10s %14s %10s %8s\n' "$t" "${runs:-?}" "${rate:-?}" "$corpus"
    total=$((total + ${runs:-0}))
done
printf '%-10s %14s\n' total "$total"
