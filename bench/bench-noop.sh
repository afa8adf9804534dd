#!/bin/bash
# bench-noop.sh DIR: the time of a `make report` that has nothing to do, the
# way a user runs it, in a copy of the tree under DIR with every demo
# dataset built: the median of 7 runs beside the goal of 1 s, and the parts
# (reading the Makefile, the lock, the check of the packages), and whether
# the runs checked parameters that nobody typed. Prints figures; fails only
# if the build itself fails.
set -eu
dir=$1
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh
copy_tree "$dir/tree"
clean_env=(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u QK_INNER -u QK_LOCKED -u QK_MAKE_PID)
"${clean_env[@]}" make -C "$dir/tree" --no-print-directory -j2 report > "$dir/build.log" 2>&1 ||
    { tail -5 "$dir/build.log"; exit 1; }
times=()
rm -f "$dir/tree/build/.validate.err"
for _ in 1 2 3 4 5 6 7; do
    s=$EPOCHREALTIME
    "${clean_env[@]}" make -C "$dir/tree" --no-print-directory report > "$dir/noop.log" 2>&1
    e=$EPOCHREALTIME
    times+=("$(awk -v s="${s/,/.}" -v e="${e/,/.}" 'BEGIN { printf "%.3f", e - s }')")
done
ran=$(grep -c '^  ' "$dir/noop.log" || true)
median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n 4p)
echo "no-op make report ($(grep -c . "$dir/tree/workflow/datasets.tsv") registry lines, $ran steps run): median $median s of 7 (goal < 1 s); all: ${times[*]}"
# nothing was typed, so no make that checks parameters may have run (workflow/run.sh)
[ -e "$dir/tree/build/.validate.err" ] && echo "  (these runs also ran the parameter check, which only typed parameters need)"
part() { # label, command...
    local label=$1 s e
    shift
    s=$EPOCHREALTIME
    "$@" > /dev/null 2>&1
    e=$EPOCHREALTIME
    awk -v l="$label" -v s="${s/,/.}" -v e="${e/,/.}" 'BEGIN { printf "  %-28s %.3f s\n", l, e - s }'
}
part "package check (uncached)" sh "$dir/tree/workflow/deps.sh"
part "inner make alone" "${clean_env[@]}" QK_INNER="$(cd "$dir/tree" && pwd)" make -C "$dir/tree" --no-print-directory report
