#!/bin/bash
# End to end: the figures of the PCA study (qk-plot), the collage data
# (qk-pca-collage) and the report numbers (qk-summary --section pca) on a tiny synthetic
# run of two models and three SmolLM3 checkpoints, six heads each.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

for p in qk-synth qk-load qk-pca qk-taxonomy qk-merge qk-plot qk-report qk-pca-collage \
         qk-summary; do
    if [ ! -x "bin/$p" ]; then
        echo "FAIL: bin/$p is missing (make bin/$p)" >&2
        exit 1
    fi
done

T=build/tests/tmp/e2e-pca-figures
rm -rf "$T"
mkdir -p "$T/results/cross" "$T/results/training"
CROSS="qwen3-0.6b llama3.2-3b"
TRAINING="smollm3-3b-stage1-step-40000 smollm3-3b-stage2-step-4200000 smollm3-3b-lc-4k-to-32k-step-4000"

# ---- a tiny pipeline run ----------------------------------------------------------

synth_args=()
for d in $CROSS $TRAINING; do synth_args+=(--dataset "$d"); done
run bin/qk-synth --quiet --out "$T/data" --heads 6 "${synth_args[@]}"
expect_status 0 "qk-synth writes the datasets"
for d in $CROSS $TRAINING; do
    mkdir -p "$T/build/$d"
    bin/qk-load --quiet --dataset "$d" "$T/data/$d" -o "$T/build/$d/store.qks" &&
    bin/qk-pca --quiet --threads 1 "$T/build/$d/store.qks" &&
    bin/qk-taxonomy --output "$T/build/$d/taxonomy.tsv" "$T/build/$d/pca_heads.tsv" ||
        bad "pipeline on $d"
done
merge() { # study prefix output inputs...
    local prefix=$1 out=$2
    shift 2
    bin/qk-merge --model-from-dir ${prefix:+--strip-prefix "$prefix"} --output "$out" "$@" ||
        bad "qk-merge $out"
}
merge "" "$T/results/cross/qk.csv" $(for d in $CROSS; do echo "$T/build/$d/pca.tsv"; done)
merge "" "$T/results/cross/qk_heads.csv" $(for d in $CROSS; do echo "$T/build/$d/taxonomy.tsv"; done)
merge smollm3-3b- "$T/results/training/qk_heads.csv" \
    $(for d in $TRAINING; do echo "$T/build/$d/taxonomy.tsv"; done)
grep -v '^#' workflow/datasets.tsv > "$T/registry.tsv"
printf 'name\tvalue\nhigh\t0.7\nlow\t0.3\n' > "$T/thresholds.tsv"

# ---- the collage data ----------------------------------------------------------------

COLLAGE="$T/collage"
run bin/qk-pca-collage --max-points 300 --points-output "$COLLAGE-points.tsv" \
    --panels-output "$COLLAGE-panels.tsv" "$T/build/llama3.2-3b/store.qks"
expect_status 0 "qk-pca-collage writes its tables"
expect_same "$(awk 'NR > 1' "$COLLAGE-panels.tsv" | wc -l)" 4 "four panels"
expect_same "$(awk -F'\t' 'NR > 1 && ($14 != 1 && $14 != -1 || $15 != 1 && $15 != -1)' \
    "$COLLAGE-panels.tsv" | wc -l)" 0 "components oriented +-1"
check=$(awk -F'\t' 'NR > 1 { n[$1 $2]++ } END { for (k in n) if (n[k] > 300) print k }' \
    "$COLLAGE-points.tsv")
expect_same "$check" "" "at most --max-points points per kind and panel ($check)"
# the heads drawn are those of Python's random.Random(42).sample of the sorted heads
if command -v python3 > /dev/null; then
    want=$(python3 - "$T/build/llama3.2-3b/pca_heads.tsv" <<'PY'
import csv, random, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
heads = sorted((int(r["layer"]), int(r["head"])) for r in rows)
print(" ".join(f"{l}/{h}" for l, h in random.Random(42).sample(heads, 4)))
PY
)
    got=$(awk -F'\t' 'NR > 1 { printf "%s%s/%s", (NR > 2 ? " " : ""), $3, $4 }' "$COLLAGE-panels.tsv")
    expect_same "$got" "$want" "collage heads as random.Random(42).sample ($got vs $want)"
fi
# PC0 of the refit equals qk-pca's (up to the solver orientation)
check=$(awk -F'\t' 'FNR == 1 { next } FILENAME == ARGV[1] { ev[$1 "/" $2] = $7; rq[$1 "/" $2] = $8; next }
    { k = $3 "/" $4; d = $8 - ev[k]; if (d < 0) d = -d; e = $10 * $14 - rq[k]; if (e < 0) e = -e
      if (d > 1e-12 || e > 1e-12) print k }' "$T/build/llama3.2-3b/pca_heads.tsv" "$COLLAGE-panels.tsv")
expect_same "$check" "" "collage PC0 equals the qk-pca fit ($check)"

# one panel: the first panel draws the query bar, a plot of its own the key bar
run bin/qk-pca-collage --panels 1 --max-points 300 --points-output "$COLLAGE-points1.tsv" \
    --panels-output "$COLLAGE-panels1.tsv" "$T/build/llama3.2-3b/store.qks"
expect_status 0 "qk-pca-collage --panels 1"
run bin/qk-plot --figure qk-pca/06 --out "$T/one06" --input points="$COLLAGE-points1.tsv" \
    --input panels="$COLLAGE-panels1.tsv" --input heads="$T/results/cross/qk_heads.csv" --input registry="$T/registry.tsv"
expect_status 0 "qk-pca/06 with one panel"
bars=$(for b in query key; do grep -c "^set cblabel \"${b^} position" "$T/one06/figure.gp"; done | tr '\n' ' ')
expect_same "$bars$(grep -c '^plot ' "$T/one06/figure.gp")" "1 1 2" "qk-pca/06, one panel: query and key bars"
if grep -q "queries and keys of one head in the plane of its first two" "$T/one06/figure.gp"; then ok; else
    bad "qk-pca/06, one panel: the title says one head"; fi

# ---- every figure twice --------------------------------------------------------------

X="$T/results/cross"
TR="$T/results/training"
figure_inputs() { # NN
    case $1 in
    01|05) echo "qk=$X/qk.csv" ;;
    02) echo "heads=$X/qk_heads.csv registry=$T/registry.tsv thresholds=$T/thresholds.tsv" ;;
    03|04) echo "heads=$X/qk_heads.csv registry=$T/registry.tsv" ;;
    06) echo "points=$COLLAGE-points.tsv panels=$COLLAGE-panels.tsv heads=$X/qk_heads.csv registry=$T/registry.tsv" ;;
    08|12) echo "heads=$TR/qk_heads.csv registry=$T/registry.tsv thresholds=$T/thresholds.tsv" ;;
    *) echo "heads=$TR/qk_heads.csv registry=$T/registry.tsv" ;;
    esac
}
printf 'dataset\tstore_bytes\tstore_checksum\n' > "$T/stores.tsv"
printf 'stage\tparameter\tvalue\n' > "$T/parameters.tsv"
render() { # NN out-dir
    local args=()
    for i in $(figure_inputs "$1"); do args+=(--input "$i"); done
    run bin/qk-plot --figure "qk-pca/$1" --out "$2" "${args[@]}"
    expect_status 0 "qk-plot qk-pca/$1"
    bin/qk-report --markdown --template templates/figure-README.md.in --output "$2/README.md" \
        --values "$2/readme.tsv" --table numbers="$2/numbers.tsv" --table inputs="$2/inputs.tsv" \
        --table stores="$T/stores.tsv" --table parameters="$T/parameters.tsv" \
        --set suite_version=test --set data_source=test --set data_partial= --set rebuild_args= || bad "README of qk-pca/$1"
}
FIGS="01 02 03 04 05 06 07 08 09 10 11 12"
for n in $FIGS; do
    render "$n" "$T/a/$n"
    render "$n" "$T/b/$n"
    png=$T/a/$n/figure.png svg=$T/a/$n/figure.svg
    if [ -s "$png" ] && [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
       [ "$(stat -c %s "$png")" -gt 20000 ]; then ok; else bad "qk-pca/$n: figure.png missing or trivial"; fi
    if [ -s "$svg" ] && grep -q '<svg' "$svg" && [ "$(stat -c %s "$svg")" -gt 10000 ]; then ok; else
        bad "qk-pca/$n: figure.svg missing or trivial"; fi
    expect_pdf "$T/a/$n/figure.pdf" "qk-pca/$n: figure.pdf complete, fonts embedded, dated"
    keys=$(awk 'NR > 1' "$T/a/$n/numbers.tsv" | wc -l)
    if [ "$keys" -ge 2 ] && grep -q '^## Key numbers' "$T/a/$n/README.md" &&
       grep -qF "| $(sed -n 2p "$T/a/$n/numbers.tsv" | cut -f1)" "$T/a/$n/README.md"; then ok; else
        bad "qk-pca/$n: README lacks the key numbers"; fi
    for f in figure.png figure.svg figure.pdf figure.gp README.md numbers.tsv; do
        cmp -s "$T/a/$n/$f" "$T/b/$n/$f" || bad "qk-pca/$n: $f differs between two runs"
    done
    ok
done

# ---- the text conventions (docs/figure-style.md) -------------------------------------------

run python3 tests/style-check.py figures "$T/a"
expect_status 0 "every figure's text follows the house style ($(head -c 300 "$e2e_out"))"
# 12 draws every threshold its subtitle names: r_q = low, high (x) and
# r_k = +-low, +-high (y), in each panel
panels=$(grep -c '^plot \$c' "$T/a/12/figure.gp")
for y in -0.7 -0.3 0.3 0.7; do
    expect_same "$(grep -c "^set arrow from graph 0, first $y to graph 1, first $y .*dt 2" "$T/a/12/figure.gp")" "$panels" \
        "qk-pca/12: a dashed line at r_k = $y in each of the $panels panels"
done
if grep -q 'taxonomy thresholds 0.3 and 0.7 of' "$T/a/12/figure.gp"; then ok; else
    bad "qk-pca/12: the subtitle names the thresholds it draws"; fi
# the checkpoints' context (4K, 4K, 32K): named under the axis of 07-09, beside
# the rows of 10-11 and in the panel titles of 12, with a dashed line where it
# changes; steps with a lowercase k
for n in 07 08 09; do
    expect_same "$(grep -c '^set arrow 6. from 1.5, graph 0 to 1.5, graph 1 nohead back dt 2' "$T/a/$n/figure.gp") $(grep -o '^set label 6. "{/:Italic [0-9]*K context}" at [0-9.]*' "$T/a/$n/figure.gp" | cut -d" " -f4-8 | tr '\n' ' ')" \
        '1 "{/:Italic 4K context}" at 0.50 "{/:Italic 32K context}" at 2.00 ' "qk-pca/$n: the context under each run of checkpoints"
done
for n in 10 11; do
    expect_same "$(grep -c '^set arrow 6. from graph 0, first 1.5 to graph 1, first 1.5 ' "$T/a/$n/figure.gp") $(grep -o '^set label 6. "{/:Italic [0-9]*K}" at screen [0-9.]*, first [0-9.]*' "$T/a/$n/figure.gp" | sed 's/ at screen [0-9.]*,//' | cut -d' ' -f4- | tr '\n' ' ')" \
        '1 "{/:Italic 4K}" first 0.50 "{/:Italic 32K}" first 2.00 ' "qk-pca/$n: the context beside each run of rows"
    expect_same "$(grep -o '^set ytics scale 0 (.*)' "$T/a/$n/figure.gp")" 'set ytics scale 0 ("S1 40k" 0, "S2 4.2M" 1, "LC1 4k" 2)' \
        "qk-pca/$n: rows labelled with steps in k = 1000"
done
expect_same "$(grep -o '^set title "[^"]*"' "$T/a/12/figure.gp" | tr '\n' '|')" \
    'set title "S1 40k, 4K context (n = 6)"|set title "S2 4.2M, 4K context (n = 6)"|set title "LC1 4k, 32K context (n = 6)"|' \
    "qk-pca/12: panel titles name the step and context"
for n in 07 08 09 10 11 12; do
    if grep -q 'steps in k = 1000, context' "$T/a/$n/figure.gp"; then ok; else
        bad "qk-pca/$n: the subtitle says the units of steps and context"; fi
done
# 05 and 08: the axis in percent as the labels on the bars ("34.1 %" at 34.1)
check=$(awk '/^\$pcs << EOD/ { on = 1; next } /^EOD/ { on = 0 } on {
    gsub(/"/, "", $4); gsub(/"/, "", $5); if (sprintf("%.1f", $2) != $4 || $5 != "%") print }' "$T/a/05/figure.gp")
expect_same "$check" "" "qk-pca/05: each bar's label is its height in percent ($check)"
if grep -q '^set ylabel "Mean explained variance (%)' "$T/a/05/figure.gp"; then ok; else
    bad "qk-pca/05: the y label says the axis is in percent"; fi
check=$(awk '/^\$shares << EOD/ { on = 1; next } /^EOD/ { on = 0 } on && $NF + 0 != 100 { print }' "$T/a/08/figure.gp")
expect_same "$check" "" "qk-pca/08: the stacked shares reach 100 (percent) at every checkpoint ($check)"
if grep -q '^set ylabel "Share of heads (%)"' "$T/a/08/figure.gp" && grep -q '^set yrange \[0:100\]' "$T/a/08/figure.gp"
then ok; else bad "qk-pca/08: the y axis is the share of heads in percent, 0 to 100"; fi

# ---- key numbers against an independent computation ------------------------------------

key() { # figure, quantity
    awk -F'\t' -v q="$2" '$1 == q { print $2 }' "$T/a/$1/numbers.tsv"
}
want=$(awk -F, 'NR > 1 && $5 == 0 { s += $7; n++ } END { printf "%.3f", s / n }' "$X/qk.csv")
expect_same "$(key 01 'mean r_q, PC0')" "$want" "figure 01: grand mean r_q on PC0 = awk ($want)"
want=$(awk -F, 'NR > 1 && $5 == 3 { s += $8; n++ } END { printf "%.3f", s / n }' "$X/qk.csv")
expect_same "$(key 01 'mean r_k, PC3')" "$want" "figure 01: grand mean r_k on PC3 = awk ($want)"
want=$(awk -F, 'NR > 1 && $5 == 0 { s += $6; n++ } END { printf "%.1f%%", 100 * s / n }' "$X/qk.csv")
expect_same "$(key 05 'mean explained variance, PC0')" "$want" "figure 05: mean EV of PC0 = awk ($want)"
# heatmap row of Qwen3-0.6B (28 layers): bin = int(10 * layer / 27), capped at 9
want=$(awk -F, 'NR > 1 && $1 == "qwen3-0.6b" { b = int(10 * $2 / 27); if (b > 9) b = 9; s[b] += $9; n[b]++ }
    END { for (b = 0; b < 10; b++) printf "%s%s", (b ? " " : ""), (n[b] ? sprintf("%.2f", s[b] / n[b]) : "-") }' \
    "$X/qk_heads.csv")
expect_same "$(key 03 'mean r_q (PC0) by depth bin 0.0-0.9, Qwen3-0.6B')" "$want" \
    "figure 03: Qwen3-0.6B row = awk ($want)"
want=$(awk -F, 'NR > 1 && $1 == "stage1-step-40000" { s += $10; ss += $10 * $10; n++ }
    END { m = s / n; printf "%.3f (%.3f)", m, sqrt((ss - n * m * m) / (n - 1)) }' "$TR/qk_heads.csv")
expect_same "$(key 07 'S1-40k, r_k (PC0): mean (SD)')" "$want" "figure 07: S1-40k r_k = awk ($want)"

# ---- the report numbers ------------------------------------------------------------------

V=$T/pca.numbers
# the thresholds' record, as make writes it, from qk-taxonomy's defaults
bin/qk-taxonomy --print-defaults | awk -F'\t' '{ print "PCA_TAX_" toupper($1) "=" $2 }' > "$T/pca.txt"
pca_summary() { # output, inputs...
    local out=$1
    shift
    bin/qk-summary --section pca --input registry="$T/registry.tsv" --params "$T/pca.txt" "$@" \
        --output "$out"
}
run pca_summary "$V" --input components="$X/qk.csv" --input heads="$X/qk_heads.csv" \
    --input training-heads="$TR/qk_heads.csv"
expect_status 0 "qk-summary --section pca"
expect_same "$(printf '%.3f' "$(number "$V" pca.pc0.rq_mean)")" "$(key 01 'mean r_q, PC0')" \
    "summary and figure 01 agree on r_q PC0"
expect_same "$(number "$V" pca.heads)" 12 "summary counts 12 cross-model heads"
expect_same "$(grep -c '^row	pca.training	' "$V")" 3 "one training row per checkpoint"
expect_same "$(awk -F'\t' '$1 == "row" && $2 == "pca.families" { printf "%s ", $3 }' "$V")" "llama qwen " \
    "families in registry order, as the figures draw them"
expect_same "$(number "$V" pca.family.qwen.label) $(number "$V" pca.family.llama.label)" \
    "Qwen3 Llama-3.2" "a family with one model in the run is named as the registry's study names it"
# the S1-40k row of the training table = awk over its heads
want=$(awk -F, 'NR > 1 && $1 == "stage1-step-40000" { s += $10; n++ } END { printf "%.6f", s / n }' "$TR/qk_heads.csv")
expect_same "$(printf '%.6f' "$(number "$V" pca.smollm3-3b-stage1-step-40000.rk_mean)")" "$want" \
    "training row keyed by dataset id = awk ($want)"
# shares: the five categories of a model add up to 100 %
sum=$(for c in posdom qpos kpos content mixed; do number "$V" "pca.qwen3-0.6b.${c}_pct"; done |
    awk '{ s += $1 } END { printf "%.6f", s }')
expect_same "$sum" "100.000000" "the taxonomy shares of a model add up to 100"
run pca_summary "$T/bad.numbers" --param PCA_TAX_HIGH=0.2 --param PCA_TAX_LOW=0.9
expect_status 1 "qk-summary --section pca with low above high"
expect_one_line_naming "PCA_TAX_LOW=0.9" "is above PCA_TAX_HIGH=0.2" "low above high: one line"
run pca_summary "$T/none.numbers"
expect_status 0 "qk-summary --section pca without studies"
expect_same "$(number "$T/none.numbers" pca.pc0.rq_mean) $(number "$T/none.numbers" pca.t.last.rq_mean)" \
    "missing missing" "values are missing without studies"
expect_same "$(cut -f1,2 "$T/none.numbers" | grep '^value' | grep -c 'pca\.t\.')" \
    "$(cut -f1,2 "$V" | grep '^value' | grep -c 'pca\.t\.[a-z]')" "the same training keys with and without the study"
expect_same "$(typeset_value "$T/none.numbers" pca.heads)" "n/a" "a missing value is typeset n/a"

# ---- heads without spread (values NaN) ------------------------------------------------------

# one head of Qwen3-0.6B without a finite r_q0 (and its r_q on every component): the means
# are over the other heads, in the figures and in the report numbers alike
awk -F, -v OFS=, 'NR == 2 { $9 = "nan" } { print }' "$X/qk_heads.csv" > "$T/nan_heads.csv"
awk -F, -v OFS=, -v l="$(sed -n 2p "$X/qk_heads.csv" | cut -d, -f2)" \
    -v h="$(sed -n 2p "$X/qk_heads.csv" | cut -d, -f3)" \
    'NR > 1 && $2 == l && $3 == h && $1 == "qwen3-0.6b" { $7 = "nan" } { print }' "$X/qk.csv" > "$T/nan_qk.csv"
expect_same "$(grep -c nan "$T/nan_qk.csv")" 10 "one head's r_q is NaN on its ten components"
run bin/qk-plot --figure qk-pca/03 --out "$T/nan03" --input heads="$T/nan_heads.csv" \
    --input registry="$T/registry.tsv"
expect_status 0 "figure 03 with a NaN head"
want=$(awk -F, 'NR > 1 && $1 == "qwen3-0.6b" && $9 != "nan" { b = int(10 * $2 / 27); if (b > 9) b = 9; s[b] += $9; n[b]++ }
    END { for (b = 0; b < 10; b++) printf "%s%s", (b ? " " : ""), (n[b] ? sprintf("%.2f", s[b] / n[b]) : "-") }' \
    "$T/nan_heads.csv")
expect_same "$(awk -F'\t' '$1 == "mean r_q (PC0) by depth bin 0.0-0.9, Qwen3-0.6B" { print $2 }' \
    "$T/nan03/numbers.tsv")" "$want" "figure 03 averages the finite heads ($want)"
run pca_summary "$T/nan.numbers" --input components="$T/nan_qk.csv" --input heads="$T/nan_heads.csv"
expect_status 0 "qk-summary with a NaN head"
want=$(awk -F, 'NR > 1 && $5 == 0 && $7 != "nan" { s += $7; n++ } END { printf "%.6f", s / n }' "$T/nan_qk.csv")
expect_same "$(printf '%.6f' "$(number "$T/nan.numbers" pca.pc0.rq_mean)")" "$want" \
    "the report's mean r_q of PC0 is over the finite heads ($want)"
# no head with a finite value: the figure says so on its canvas
awk -F, -v OFS=, 'NR > 1 { $6 = "nan" } { print }' "$X/qk.csv" > "$T/nan_ev.csv"
run bin/qk-plot --figure qk-pca/05 --out "$T/nan05" --input qk="$T/nan_ev.csv"
expect_status 0 "figure 05 without a finite explained variance"
expect_same "$(awk -F'\t' '$1 == "drawn" { print $2 }' "$T/nan05/numbers.tsv" | cut -c1-3)" "no:" \
    "figure 05 is the canvas that says it is not drawn"
awk -F, -v OFS=, 'NR > 1 { $9 = "nan" } { print }' "$X/qk_heads.csv" > "$T/nan_all.csv"
run bin/qk-plot --figure qk-pca/03 --out "$T/nan03all" --input heads="$T/nan_all.csv" \
    --input registry="$T/registry.tsv"
expect_status 0 "figure 03 without a finite r_q0"
expect_same "$(awk -F'\t' '$1 == "drawn" { print $2 }' "$T/nan03all/numbers.tsv" | cut -c1-3)" "no:" \
    "figure 03 is the canvas that says it is not drawn"
expect_same "$(cat "$e2e_err")" "" "nothing on stderr (no gnuplot warning)"
# a taxonomy threshold that is no number is bad data, named
printf 'name\tvalue\nhigh\tnan\nlow\t0.3\n' > "$T/nan_thresholds.tsv"
run bin/qk-plot --figure qk-pca/02 --out "$T/nan02" --input heads="$X/qk_heads.csv" \
    --input registry="$T/registry.tsv" --input thresholds="$T/nan_thresholds.tsv"
expect_status 2 "a NaN threshold exits 2"
expect_one_line_naming "$T/nan_thresholds.tsv" "not a finite number" "the error names the thresholds table"

# ---- negative means: the heatmaps show them on a scale of -1 to 1 -------------------------

# every r_k of the LC checkpoint -0.70, of S1-40k 0.0, the others' positive (|r_k|): the
# heatmap of r_k draws -0.70 below the colour of 0, with white text like a cell of +0.70
awk -F, -v OFS=, 'NR > 1 { $10 = $1 ~ /^lc-/ ? -0.7 : $1 ~ /^stage1/ ? 0 : ($10 < 0 ? -$10 : $10) }
    { print }' "$TR/qk_heads.csv" > "$T/neg_heads.csv"
awk -F, -v OFS=, 'NR > 1 { $10 = $10 < 0 ? -$10 : $10 } { print }' "$TR/qk_heads.csv" > "$T/pos_heads.csv"
for table in neg pos; do
    run bin/qk-plot --figure qk-pca/11 --out "$T/${table}11" --input heads="$T/${table}_heads.csv" \
        --input registry="$T/registry.tsv"
    expect_status 0 "figure 11 with the $table table"
done
cells=$(awk -F'\t' '$1 ~ /^mean r_k .*LC1-4k$/ { print $2 }' "$T/neg11/numbers.tsv")
expect_same "$(echo "$cells" | tr ' ' '\n' | sort -u | tr '\n' ' ')" "- -0.70 " \
    "figure 11: the LC row holds -0.70 (and empty bins) ($cells)"
want=$(echo "$cells" | tr ' ' '\n' | grep -c -- '-0.70')
expect_same "$(awk -F'\t' '$1 == "cells with a mean below 0" { print $2 }' "$T/neg11/numbers.tsv")" \
    "$want" "figure 11 counts $want cells below 0"
expect_same "$(awk -F'\t' '$1 == "colour scale" { print $2 }' "$T/neg11/numbers.tsv")" \
    "-1 to 1 (Blues below 0, Reds above)" "figure 11: negative cells widen the scale to -1 to 1"
expect_same "$(grep -c '^set cbrange \[-1:1\]$' "$T/neg11/figure.gp")" 1 "figure 11: cbrange [-1:1]"
expect_same "$(grep '^set palette defined' "$T/neg11/figure.gp" | grep -o "^set palette defined (-8 '#08306b', .*, 0 '#fff5f0', .*, 8 '#67000d')$" | wc -l)" \
    1 "figure 11: Blues below 0, Reds above"
expect_same "$(awk '$3 == "-0.700000" && $4 != 16777215' "$T/neg11/figure.gp" | wc -l)" 0 \
    "figure 11: white text on the cells of -0.70"
expect_same "$(awk '$3 == "-0.700000"' "$T/neg11/figure.gp" | wc -l)" "$want" \
    "figure 11: the $want cells of -0.70 are drawn"
expect_same "$(awk -F'\t' '$1 == "colour scale" { print $2 }' "$T/pos11/numbers.tsv") $(grep -c '^set cbrange \[0:1\]$' "$T/pos11/figure.gp")" \
    "0 to 1 (Reds) 1" "figure 11 without a negative cell: 0 to 1 in Reds, as the reference"
# r_q below 0 in figure 03: the other way round
awk -F, -v OFS=, 'NR > 1 && $1 == "qwen3-0.6b" { $9 = -0.9 } { print }' "$X/qk_heads.csv" > "$T/neg_rq.csv"
run bin/qk-plot --figure qk-pca/03 --out "$T/neg03" --input heads="$T/neg_rq.csv" \
    --input registry="$T/registry.tsv"
expect_status 0 "figure 03 with negative r_q"
expect_same "$(awk -F'\t' '$1 == "colour scale" { print $2 }' "$T/neg03/numbers.tsv")" \
    "-1 to 1 (Reds below 0, Blues above)" "figure 03: negative r_q in Reds below 0"
expect_same "$(grep -c '^set cbrange \[-1:1\]$' "$T/neg03/figure.gp")" 1 "figure 03: cbrange [-1:1]"

# ---- one checkpoint: error bars of one SD ---------------------------------------------------

# a band needs two checkpoints; with one, figures 07 and 09 draw the SD as error bars about the
# mean (columns mean, SD of $t), as the legend says
awk -F, 'NR == 1 || $1 == "stage1-step-40000"' "$TR/qk_heads.csv" > "$T/one_checkpoint.csv"
for n in 07 09; do
    run bin/qk-plot --figure qk-pca/$n --out "$T/one$n" --input heads="$T/one_checkpoint.csv" \
        --input registry="$T/registry.tsv"
    expect_status 0 "figure $n with one checkpoint"
done
expect_same "$(grep -c 'with yerrorbars' "$T/one07/figure.gp") $(grep -c 'with filledcurves' "$T/one07/figure.gp")" \
    "2 0" "figure 07, one checkpoint: error bars of r_q and r_k, no band"
expect_same "$(sed -n 's/.*\$t using ([^)]*):\([0-9]:[0-9]\) with yerrorbars.*/\1/p' "$T/one07/figure.gp" | tr '\n' ' ')" \
    "2:3 4:5 " "figure 07: the error bars are the SD columns about the means"
expect_same "$(grep -c 'with yerrorbars' "$T/one09/figure.gp") $(grep -c 'with filledcurves' "$T/one09/figure.gp")" \
    "1 0" "figure 09, one checkpoint: an error bar, no band"
want=$(awk -F, 'NR > 1 { s += $10; ss += $10 * $10; n++ }
    END { m = s / n; printf "%.3f %.3f", m, sqrt((ss - n * m * m) / (n - 1)) }' "$T/one_checkpoint.csv")
expect_same "$(awk '/^\$t << EOD/ { getline; printf "%.3f %.3f", $4, $5 }' "$T/one07/figure.gp")" "$want" \
    "figure 07: the r_k error bar is mean +- SD of the heads = awk ($want)"
expect_same "$(grep -c 'error bar of one standard deviation' "$T/one07/figure.gp")" 1 \
    "figure 07: the subtitle says error bar"
expect_same "$(grep -c 'with yerrorbars' "$T/a/07/figure.gp") $(grep -c 'with filledcurves' "$T/a/07/figure.gp")" \
    "0 2" "figure 07 with three checkpoints: bands"

# ---- errors ------------------------------------------------------------------------------

# a heads table without r_k0: exit 2, one line naming the file
awk -F, -v OFS=, '{ $10 = ""; print }' "$X/qk_heads.csv" | sed 's/,,/,/' > "$T/no_rk.csv"
run bin/qk-plot --figure qk-pca/04 --out "$T/err" --input heads="$T/no_rk.csv" \
    --input registry="$T/registry.tsv"
expect_status 2 "missing column r_k0 exits 2"
expect_one_line_naming "$T/no_rk.csv" "r_k0" "the error names the table and the column"
cut -d, -f1-5,7- "$X/qk.csv" > "$T/no_ev.csv"
run bin/qk-plot --figure qk-pca/05 --out "$T/err" --input qk="$T/no_ev.csv"
expect_status 2 "missing column explained_variance exits 2"
expect_one_line_naming "$T/no_ev.csv" "explained_variance" "the error names the qk table"
run bin/qk-plot --figure qk-pca/02 --out "$T/err" --input heads="$X/qk_heads.csv" \
    --input registry="$T/registry.tsv"
expect_status_in "1 2" "a missing input table is an error"
expect_out_contains_err "thresholds" "the error names the missing input"
run pca_summary "$T/x.numbers" --input training-heads="$T/no_rk.csv"
expect_status 2 "qk-summary: missing column exits 2"
expect_one_line_naming "$T/no_rk.csv" "r_k0" "qk-summary names the table"
expect_missing "$T/x.numbers" "no numbers file after an error"
run pca_summary "$T/x.numbers" --input components="$X/qk.csv"
expect_status 1 "qk-summary: components without heads is a usage error"
run pca_summary "$T/x.numbers" --input nonsense="$X/qk.csv"
expect_status 1 "qk-summary: an input the section does not know"
expect_out_contains_err "nonsense" "the usage error names the input"

finish
