#!/bin/bash
# End-to-end run of the Make pipeline on a small synthetic dataset, in a
# copy of the source tree (so the real outputs are left alone): make report
# works, lists the datasets, a second make runs no stage, and touching one
# dataset's input reruns only that dataset's chain and what merges it.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

tree=build/tests/tmp/pipeline
copy_tree "$tree"

sets="llama3.2-1b smollm3-3b-stage1-step-40000 mistral-v0.2-7b"
mk() { make -C "$tree" --no-print-directory V=1 DATASETS="$sets" SCALE=demo "$@"; }

run mk -j2 report
expect_status 0 "make report on three datasets"
expect_missing "$tree/report/index.html.tmp" "no temporary report"
for d in $sets; do
    if grep -q "<td>$d</td>" "$tree/report/index.html"; then ok; else bad "report lists $d"; fi
    run bin/qk-load --verify "$tree/build/$d/store.qks"
    expect_status 0 "store of $d verifies"
done

# nothing to do the second time
run mk report
expect_status 0 "second make report"
if grep -qE '^[[:space:]]*bin/' "$e2e_out"; then bad "second make runs no program"; else ok; fi

# touching one dataset's input reruns its chain and what merges it, nothing
# else: the stage programs that ran are read from make's command lines
sleep 1
touch "$tree/data/synth/llama3.2-1b/synth-truth.tsv"
run mk report
expect_status 0 "make report after touching one input"
ran=$(grep -oE '^[[:space:]]*bin/qk-[a-z-]+' "$e2e_out" | sed 's/^[[:space:]]*//' | sort | uniq -c)
echo "$ran" > "$tree/stages-ran.txt"
if grep -qE "^[[:space:]]*bin/qk-load .*--dataset llama3.2-1b" "$e2e_out"; then ok; else bad "touched dataset is reloaded"; fi
if grep -qE "^[[:space:]]*bin/qk-(pca|rotate|plasticity) .*build/llama3.2-1b/" "$e2e_out"; then ok; else bad "its analyses rerun"; fi
if grep -E "^[[:space:]]*bin/qk-[a-z-]+ .*build/(mistral-v0.2-7b|smollm3-3b-stage1-step-40000)/store.qks" "$e2e_out" |
   grep -q .; then bad "untouched datasets are not reanalysed"; else ok; fi
for stage in qk-load qk-pca qk-taxonomy qk-plasticity qk-complement; do
    n=$(grep -cE "^[[:space:]]*bin/$stage " "$e2e_out")
    if [ "$n" -eq 1 ]; then ok; else bad "$stage ran once (ran $n times)"; fi
done
if grep -qE "^[[:space:]]*bin/qk-synth" "$e2e_out"; then bad "no synthetic data rewritten"; else ok; fi
if grep -qE "^[[:space:]]*bin/qk-report --template templates/report.html.in" "$e2e_out"; then ok; else bad "the report is rerendered"; fi
run mk report
if grep -qE '^[[:space:]]*bin/' "$e2e_out"; then bad "and then nothing is left to do"; else ok; fi

# the pipeline on "real downloads": the synthetic folder given as DATA;
# a changed Parquet file reloads that dataset
run make -C "$tree" --no-print-directory V=1 DATA=data/synth DATASETS=mistral-v0.2-7b load
expect_status 0 "DATA=: the synthetic folder as downloads"
expect_out "bin/qk-load --quiet --registry workflow/datasets.tsv --dataset mistral-v0.2-7b" "DATA=: another source reloads the dataset"
run make -C "$tree" --no-print-directory V=1 DATA=data/synth DATASETS=mistral-v0.2-7b load
if grep -qE '^[[:space:]]*bin/' "$e2e_out"; then bad "DATA=: stores up to date"; else ok; fi
touch "$(ls -d "$tree"/data/synth/mistral-v0.2-7b/l*q | head -1)/data.parquet"
run make -C "$tree" --no-print-directory V=1 DATA=data/synth DATASETS=mistral-v0.2-7b load
expect_status 0 "DATA= after touching a file"
expect_out "bin/qk-load --quiet --registry workflow/datasets.tsv --dataset mistral-v0.2-7b" "DATA=: a changed file reloads its dataset"

finish
