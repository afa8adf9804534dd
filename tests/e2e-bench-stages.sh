#!/bin/bash
# End to end: qk-bench-stages on a small store. Its figures are timings and
# are not checked; its table is (a make target and other benchmarks read
# it): the header, one line per stage asked for, the head counts of the
# stages, positive times, and nan for the stage times with --floor-only.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

for p in qk-synth qk-load qk-pca qk-rotate qk-complement qk-bench-stages; do
    if [ ! -x "bin/$p" ]; then
        echo "FAIL: bin/$p is missing (make bin/$p)" >&2
        exit 1
    fi
done

T=build/tests/tmp/e2e-bench-stages
DS=llama3.2-1b
rm -rf "$T"
mkdir -p "$T/tmp"
STORE=$T/store.qks

run bin/qk-synth --quiet --out "$T/data" --dataset $DS --heads 3
expect_status 0 "qk-synth writes the dataset"
run bin/qk-load --quiet --dataset $DS "$T/data/$DS" -o "$STORE"
expect_status 0 "qk-load writes the store"

run bin/qk-bench-stages --quiet --tmpdir "$T/tmp" "$STORE"
expect_status 0 "qk-bench-stages on every stage"
expect_out_lines 4 "a header and three stages"
check=$(awk -F'\t' 'NR == 1 { if ($0 != "stage\theads\tseconds\tfloor_seconds\tratio") print "header " $0; next }
    { want = NR == 2 ? "pca" : NR == 3 ? "rotate" : "complement"
      if ($1 != want) print "stage " $1 " on line " NR
      if ($2 != 3) print "heads " $2 " on line " NR
      if (!($3 > 0 && $4 > 0 && $5 > 0)) print "times " $3 " " $4 " " $5 " on line " NR }
    END { print "end" }' "$e2e_out")
expect_same "$check" "end" "stage lines ($check)"
if [ -z "$(ls -A "$T/tmp")" ]; then ok; else bad "qk-bench-stages left files in its --tmpdir"; fi

run bin/qk-bench-stages --quiet --floor-only --stages complement "$STORE"
expect_status 0 "qk-bench-stages --floor-only --stages complement"
expect_out_lines 2 "a header and one stage"
check=$(awk -F'\t' 'NR == 2 { print $1, $2, $3, ($4 > 0), $5 }' "$e2e_out")
expect_same "$check" "complement 3 nan 1 nan" "floor only: the stage time is nan"

run bin/qk-bench-stages --quiet --floor-only --stages pca,rotate --print floor "$STORE"
expect_status 0 "qk-bench-stages --print floor"
check=$(awk -F'\t' 'NR == 1 && NF == 2 && $1 == "floor" && $2 > 0 { print "ok" }' "$e2e_out")
expect_same "$check$(wc -l < "$e2e_out")" "ok1" "--print floor: one line floor<TAB>SECONDS"

# read: the reading of the rows alone, a floor without a stage program
run bin/qk-bench-stages --quiet --tmpdir "$T/tmp" --stages read "$STORE"
expect_status 0 "qk-bench-stages --stages read"
check=$(awk -F'\t' 'NR == 2 { print $1, $2, $3, ($4 > 0), $5 }' "$e2e_out")
expect_same "$check$(wc -l < "$e2e_out")" "read 3 nan 1 nan2" "read: its floor alone, no stage time"

run bin/qk-bench-stages --stages pca,sideways "$STORE"
expect_status 1 "qk-bench-stages with an unknown stage"
run bin/qk-bench-stages
expect_status 1 "qk-bench-stages without a store"
run bin/qk-bench-stages --quiet --stages pca "$T/missing.qks"
expect_status 2 "qk-bench-stages on a missing store"
run bin/qk-bench-stages --help
expect_status 0 "qk-bench-stages --help"
expect_out "Usage: qk-bench-stages" "qk-bench-stages --help text"

finish
