#!/bin/bash
# Runs one fuzz target: first every input committed in
# tests/data/fuzz-regressions/<target>/ once, then libFuzzer for SECONDS
# from the corpus grown so far (build/fuzz/work/<target>/) and the seeds
# (build/fuzz/corpus/<target>/).  On a crash, leak or undefined behaviour
# prints the report and the input's path, and fails.
# Usage: [FUZZ_OPTS="-opt=value ..."] tests/fuzz/run.sh TARGET SECONDS
set -uo pipefail
cd "$(dirname "$0")/../.."
target=$1 seconds=$2
bin=build/fuzz/bin/fuzz_$target
work=build/fuzz/work/$target
crashes=build/fuzz/crashes/$target
log=build/fuzz/logs/$target.log
mkdir -p "$work" "$crashes" build/fuzz/logs
# UBSan reports are fatal (-fno-sanitize-recover); make them carry a trace.
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0

fail() {
    echo "fuzz $target: $1" >&2
    grep -E -A40 'ERROR: |runtime error|fuzz: ' "$log" | head -60 >&2
    ls "$crashes"/* 2>/dev/null | sed 's/^/  input: /' >&2
    exit 1
}

regressions=(tests/data/fuzz-regressions/"$target"/*)
if [ -e "${regressions[0]}" ]; then
    "$bin" -runs=1 "${regressions[@]}" > "$log" 2>&1 ||
        fail "a committed regression input fails again"
fi

opts=(-max_total_time="$seconds" -print_final_stats=1 -timeout=30 -rss_limit_mb=2048
      -artifact_prefix="$crashes/")
[ -f "tests/fuzz/$target.dict" ] && opts+=(-dict="tests/fuzz/$target.dict")
read -r -a extra <<< "${FUZZ_OPTS:-}" # more libFuzzer options, e.g. -use_value_profile=1
opts+=("${extra[@]}")
echo "fuzz $target: $seconds s (log: $log)"
"$bin" "${opts[@]}" "$work" "build/fuzz/corpus/$target" > "$log" 2>&1 || fail "crash"
