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
    if grep -q ">$d</td>" "$tree/report/index.html"; then ok; else bad "report lists $d"; fi
    run bin/qk-load --verify "$tree/build/$d/store.qks"
    expect_status 0 "store of $d verifies"
done

# nothing to do the second time
run mk report
expect_status 0 "second make report"
if commands_run | grep -q '^bin/'; then bad "second make runs no program"; else ok; fi

# touching one dataset's input reruns its chain and what merges it, nothing
# else: the stage programs that ran are read from make's command lines
sleep 1
touch "$tree/data/synth/llama3.2-1b/synth-truth.tsv"
run mk report
expect_status 0 "make report after touching one input"
ran=$(commands_run | grep -oE '^bin/qk-[a-z-]+' | sort | uniq -c)
echo "$ran" > "$tree/stages-ran.txt"
if commands_run | grep -q "^bin/qk-load .*--dataset llama3.2-1b"; then ok; else bad "touched dataset is reloaded"; fi
if commands_run | grep -qE "^bin/qk-(pca|rotate|plasticity) .*build/llama3.2-1b/"; then ok; else bad "its analyses rerun"; fi
if commands_run | grep -E "^bin/qk-[a-z-]+ .*build/(mistral-v0.2-7b|smollm3-3b-stage1-step-40000)/store.qks" |
   grep -q .; then bad "untouched datasets are not reanalysed"; else ok; fi
for stage in qk-load qk-pca qk-taxonomy qk-plasticity qk-complement; do
    n=$(commands_run | grep -c "^bin/$stage ")
    if [ "$n" -eq 1 ]; then ok; else bad "$stage ran once (ran $n times)"; fi
done
if commands_run | grep -q "^bin/qk-synth"; then bad "no synthetic data rewritten"; else ok; fi
if commands_run | grep -q "^bin/qk-report --template templates/report.html.in"; then ok; else bad "the report is rerendered"; fi
run mk report
if commands_run | grep -q '^bin/'; then bad "and then nothing is left to do"; else ok; fi

# progress, make -j2: on a terminal (script(1) gives one) every line the
# terminal shows once drawn is a step line of at most 80 columns (the
# progress lines of two steps running at once are overwritten, never glued
# to a step line); into a file, the step lines alone, without control bytes
term_lines() { # the text each line leaves on the terminal: what follows its last \r
    sed -e 's/\r$//' -e 's/.*\r//' -e 's/\x1b\[K//g' "$e2e_out"
}
step_line='^  [A-Z]{2,8} +[^ ]+( +[0-9]+ heads)? +[0-9]+\.[0-9] s$'
# (the tree's make on its own: under make check an inherited jobserver warns;
# script(1) echoes what it reads on its stdin into the terminal: it reads none)
run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL script -qec "make -C $tree --no-print-directory -j2 DATASETS='$sets' SCALE=demo PLAST_MIN_PAIRS=33 report" /dev/null < /dev/null
expect_status 0 "make report on a terminal"
if grep -q $'\x1b\\[K' "$e2e_out" && term_lines | grep -q '^  PLAST   llama3.2-1b'; then ok; else
    bad "on a terminal: the steps and their progress lines are shown"; fi
odd=$(term_lines | grep -vE "$step_line" | head -3)
expect_same "$odd" "" "on a terminal: every line shown is a step line"
wide=$(tr '\r' '\n' < "$e2e_out" | sed 's/\x1b\[K//g' | awk 'length($0) > 80' | head -2)
expect_same "$wide" "" "on a terminal: no line or progress line wider than 80 columns"
run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$tree" --no-print-directory -j2 DATASETS="$sets" SCALE=demo report
expect_status 0 "make report into a file"
if grep -q $'[\r\x1b]' "$e2e_out"; then bad "into a file: no control bytes"; else ok; fi
odd=$(grep -vE "$step_line" "$e2e_out" | head -3)
expect_same "$odd" "" "into a file: every line is a step line"

# a TMPDIR where no file can be made stops make at once with one line and
# removes no output (the pruning of results/ and figures/ once read an
# empty list of outputs to keep from it and removed every figure; the
# publication must not either)
figures_now() { find "$tree/figures" "$tree/results" -type f | sort | md5sum; }
before=$(figures_now)
run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL TMPDIR="$tree/no-such-folder" make -C "$tree" \
    --no-print-directory DATASETS="$sets" SCALE=demo PLAST_MIN_PAIRS=34 report
expect_status 2 "make with an unusable TMPDIR"
expect_one_line_naming "TMPDIR=$tree/no-such-folder" "not a folder where files can be made" \
    "make with an unusable TMPDIR: one line naming it"
expect_same "$(figures_now)" "$before" "make with an unusable TMPDIR: no output removed"
run bash -c "cd '$tree' && workflow/publish.sh all build/sets/no-such-list"
expect_status 2 "publish.sh without its list fails"
expect_same "$(figures_now)" "$before" "publish.sh without its list removes nothing"

# a step under a locale whose decimal point is a comma (bash's clock,
# EPOCHREALTIME, follows it) times the step right and does not fail
mkdir -p "$tree/locales"
run localedef -i de_DE -f UTF-8 "$tree/locales/de_DE.UTF-8"
expect_status 0 "a German locale is made (Debian package locales)"
# (the old reading gave the fraction of the end time over 10^5: 0.0 to
# 0.9 s, or an error; a step of 1.2 s tells it apart)
run env LOCPATH="$tree/locales" LC_ALL=de_DE.UTF-8 workflow/qk-step TEST demo -- sleep 1.2
expect_status 0 "a step under de_DE.UTF-8"
secs=$(grep -oE '[0-9]+\.[0-9] s$' "$e2e_out" | tr -d ' s')
if [ -n "$secs" ] && awk -v s="$secs" 'BEGIN { exit !(s >= 1.2 && s < 30) }'; then ok; else
    bad "a step of 1.2 s under de_DE.UTF-8 is timed as such (got '$(cat "$e2e_out")')"; fi

# the pipeline on "real downloads": the synthetic folder given as DATA;
# a changed Parquet file reloads that dataset
run make -C "$tree" --no-print-directory V=1 DATA=data/synth DATASETS=mistral-v0.2-7b load
expect_status 0 "DATA=: the synthetic folder as downloads"
expect_out "bin/qk-load --quiet --registry workflow/datasets.tsv --dataset mistral-v0.2-7b" "DATA=: another source reloads the dataset"
run make -C "$tree" --no-print-directory V=1 DATA=data/synth DATASETS=mistral-v0.2-7b load
if commands_run | grep -q '^bin/'; then bad "DATA=: stores up to date"; else ok; fi
touch "$(ls -d "$tree"/data/synth/mistral-v0.2-7b/l*q | head -1)/data.parquet"
# (with POSIXLY_CORRECT in the environment, which would stop getopt at the
# first operand of qk-load DIR -o STORE)
run env POSIXLY_CORRECT=1 make -C "$tree" --no-print-directory V=1 DATA=data/synth DATASETS=mistral-v0.2-7b load
expect_status 0 "DATA= after touching a file"
expect_out "bin/qk-load --quiet --registry workflow/datasets.tsv --dataset mistral-v0.2-7b" "DATA=: a changed file reloads its dataset"

finish
