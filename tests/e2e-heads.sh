#!/bin/bash
# End to end: every analysed head in one place. In a copy of the tree, `make
# heads` on one dataset of each study publishes results/heads.csv (one row a
# query head, as many as the inventories count, every value the study
# table's to the last digit: tests/heads-check.py), results/README.md (every
# column of every table it publishes, from workflow/columns.tsv) and
# report/heads.html; `make heads/DATASET/lLLhHH` draws one head's four
# figures, and a second call runs nothing. qk-heads refuses study tables
# that disagree; the README refuses an undocumented column.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

tree_under e2e-heads
DS="llama3.2-1b llama3.1-8b smollm3-3b-stage1-step-40000"
mkdir -p "$TREE/data/synth"
for d in $DS; do [ -d "data/synth/$d" ] && cp -a "data/synth/$d" "$TREE/data/synth/"; done
mk() { run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TREE" --no-print-directory -j2 "$@" DATASETS="$DS"; }

mk heads
expect_status 0 "make heads on one dataset of each study"
for f in results/heads.csv results/README.md report/heads.html; do
    if [ -s "$TREE/$f" ]; then ok; else bad "make heads publishes $f"; fi
done

# the table: its rows and values against the study tables and inventories
run /usr/bin/python3 tests/heads-check.py table "$TREE"
expect_status 0 "heads.csv agrees with the study tables and the inventories ($(tail -1 "$e2e_out"))"
studies=$(awk -F, 'NR > 1 { print $5 }' "$TREE/results/heads.csv" | sort -u | tr '\n' ' ')
expect_same "$studies" "attention_plasticity extra smollm3_training_progress " "heads.csv holds the heads of the three studies"

# the checker fails on a value that differs in its last digit
cp -a "$TREE/results" "$T/changed"
awk -F, -v OFS=, 'NR == 3 { $15 = $15 "1" } { print }' "$TREE/results/heads.csv" > "$T/changed/heads.csv"
for d in $DS; do mkdir -p "$T/check/build/$d" && cp "$TREE/build/$d/inventory.tsv" "$T/check/build/$d/"; done
cp -a "$T/changed" "$T/check/results"
run /usr/bin/python3 tests/heads-check.py table "$T/check"
expect_status 1 "the checker notices a bias_strength one digit longer"

# the README: a section per published table; an undocumented column stops it
for f in $(cd "$TREE" && find results -name '*.csv' | sort); do
    if grep -qF "## \`$f\`" "$TREE/results/README.md"; then ok; else bad "results/README.md describes $f"; fi
done
if grep -qF '| `bias_strength` | number | score per token |' "$TREE/results/README.md"; then ok; else
    bad "results/README.md gives a column's type and unit"; fi
printf 'no_such_column\n1\n' > "$T/odd.csv"
run awk -f workflow/results-readme.awk -v stage=x workflow/columns.tsv "$T/odd.csv"
expect_status 2 "an undocumented column stops the README"
expect_out_contains_err "no row for column no_such_column of odd.csv" "and is named"

# a head one analysis lacks (the PCA skips a head with too few rows) keeps
# its row, with that analysis' cells empty
R=$TREE/results
head -n -1 "$R/extra/rotated.csv" > "$T/rotated.csv"
run bin/qk-heads --registry "$TREE/build/sets/registry.tsv" --output "$T/heads.csv" \
    "$R/extra/qk_heads.csv" "$T/rotated.csv" "$R/extra/head_metrics.csv"
expect_status 0 "qk-heads: a head missing from rotated.csv"
expect_same "$(awk 'END { print NR - 1 }' "$T/heads.csv")" "$(awk 'END { print NR - 1 }' "$R/extra/qk_heads.csv")" \
    "every head of the PCA's table has its row"
empty=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $c["abs_r_q_a"] == "" && $c["plane_var_fraction"] == "" && $c["ap_overall"] != "" { n++ } END { print n + 0 }' "$T/heads.csv")
expect_same "$empty" 1 "the head rotated.csv lacks: its rotation cells empty, the others kept"
# qk-heads refuses a study whose tables disagree on a key head
rm -f "$T/heads.csv"
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "kv_head") c = i }
    NR == 2 { $c = $c + 1 } { print }' "$R/extra/rotated.csv" > "$T/rotated.csv"
run bin/qk-heads --registry "$TREE/build/sets/registry.tsv" --output "$T/heads.csv" \
    "$R/extra/qk_heads.csv" "$T/rotated.csv" "$R/extra/head_metrics.csv"
expect_status 2 "qk-heads: a key head the tables disagree on"
expect_one_line_naming "$T/rotated.csv" "key head" "the error names the table and the head"
if [ ! -e "$T/heads.csv" ]; then ok; else bad "no table is written after the error"; fi
run bin/qk-heads --registry "$TREE/build/sets/registry.tsv" --output "$T/heads.csv" "$R/extra/qk_heads.csv"
expect_status 1 "qk-heads: tables not in triples"

# one head's figures
head=$(awk -F, '$2 == "llama3.2-1b" { print $1; exit }' "$R/heads.csv")
mk "heads/$head"
expect_status 0 "make heads/$head"
for fig in pca_scatter ab_plane complement_planes plasticity_profile; do
    for f in figure.png figure.svg figure.pdf; do
        if [ -s "$TREE/heads/$head/$fig/$f" ]; then ok; else bad "heads/$head/$fig/$f"; fi
    done
done
layer=$((10#$(sed 's/.*\/l\([0-9]*\)h.*/\1/' <<< "$head"))) qhead=$((10#${head##*h}))
if grep -q "^0	llama3.2-1b	$layer	$qhead	" "$TREE/build/heads/$head/pca_panels.tsv"; then ok; else
    bad "the PCA scatter draws head $head"; fi
if [ "$(awk -F, 'NR > 1' "$TREE/build/heads/$head/profile.csv" | cut -d, -f1-3 | sort -u)" = \
     "llama3.2-1b,$layer,$qhead" ]; then ok; else bad "the profile holds the head's rows alone"; fi
mk "heads/$head"
expect_status 0 "make heads/$head again"
if grep -qE 'PLOT|HEADPCA|HEADROT|PUBLISH' "$e2e_out"; then bad "a second call runs nothing ($(head -3 "$e2e_out"))"; else ok; fi
mk heads/no-such-model/l00h00
expect_status 2 "make heads/ of a dataset not in the run"
expect_out_contains_err "no-such-model is no dataset of this run" "names the dataset"
mk heads/llama3.2-1b/l99h99
expect_status_in "1 2" "make heads/ of a head the dataset lacks"
expect_out_contains_err "no analysable query head l99h99" "names the head"
mk heads/llama3.2-1b/layer3
expect_status 2 "make heads/ of a malformed head"
expect_out_contains_err "expected a head lLLhHH" "says the form"
if [ ! -d "$TREE/heads/no-such-model" ] && [ ! -d "$TREE/heads/llama3.2-1b/l99h99" ]; then ok; else
    bad "a failed head target publishes nothing"; fi

finish
