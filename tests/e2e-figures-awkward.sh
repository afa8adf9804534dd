#!/bin/bash
# End to end: every figure from deliberately awkward data, through `make
# report DATA=...` in a copy of the tree: a partial download of one model
# (8 heads written, 4 of them deleted), a dataset of 3 heads, the SmolLM3-3B
# study with one checkpoint, a model with 12 heads; then one outlier head, the
# heads of one layer alone and empty profile bins planted in the tables and
# the figures drawn again. No
# stage may fail or print anything on stderr but the one warning of the
# partial download (which the report and the READMEs say too), every figure and README is
# made (a canvas saying what is missing where the run lacks the data), the
# key numbers are those of the data, and the robust scales count what they
# cut by their stated rule. Last, the one-model partial download alone:
# `make report DATA=... DATASETS=llama3.2-3b` renders all 33 study figures
# and the report.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

for p in qk-synth qk-plot qk-report; do
    if [ ! -x "bin/$p" ]; then
        echo "FAIL: bin/$p is missing (make bin/$p)" >&2
        exit 1
    fi
done

tree_under e2e-figures-awkward
REG=workflow/datasets.tsv

# ---- the downloads -----------------------------------------------------------------
synth() { # dataset, heads
    bin/qk-synth --quiet --out "$D" --dataset "$1" --heads "$2" --seed 11 || bad "qk-synth $1"
}
synth llama3.2-3b 8
# a partial download: the configurations of four heads are missing
for c in $(ls "$D/llama3.2-3b" | grep -E '^l[0-9]+h[0-9]+q$' | head -4); do
    rm -rf "$D/llama3.2-3b/$c" "$D/llama3.2-3b/${c%q}k"
done
rm -f "$D/llama3.2-3b/synth-truth.tsv"
synth qwen3-0.6b 3
synth llama3.2-1b 12
synth smollm3-3b-stage1-step-40000 3
expect_same "$(ls "$D/llama3.2-3b" | grep -cE 'q$')" 4 "the partial download holds 4 query heads"

# ---- the run ---------------------------------------------------------------------------
# the tree's make on its own (under make check, an inherited jobserver would
# make it warn on stderr)
tree_make() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TREE" --no-print-directory -j2 "$@"; }
run tree_make report DATA="$D"
expect_status 0 "make report on the awkward downloads"
# the partial download is said, in one line; nothing else is printed on stderr
listed=$(sed -n '/^## Captured Configs/,/^## Dataset/p' "$D/llama3.2-3b/README.md" | grep -c '^- `l')
present=$(ls "$D/llama3.2-3b" | grep -cE '^l[0-9]+h[0-9]+[qk]$')
expect_error_lines "make report: on stderr the partial download's warning alone" \
    "qk-load: warning: $D/llama3.2-3b: $present of $listed captured configs present (README.md lists them; "
partial="llama3.2-3b ($present of $listed captured configs present)"

STUDY_FIGURES=$(awk -f workflow/figures.awk -v emit=folders workflow/figures.rec | grep -v '^inventory/')
n_study=$(bin/qk-plot --list | grep -cv '^ *inventory/')
expect_same "$(echo "$STUDY_FIGURES" | wc -l)" "$n_study" "the registry lists the $n_study study figures qk-plot knows"
figures_complete() { # label
    local missing=""
    for f in inventory/01_vectors $STUDY_FIGURES; do
        for x in figure.png figure.svg figure.pdf figure.gp README.md numbers.tsv; do
            [ -s "$TREE/figures/$f/$x" ] || missing="$missing $f/$x"
        done
        grep -q '^## Key numbers' "$TREE/figures/$f/README.md" 2> /dev/null || missing="$missing $f:keys"
    done
    expect_same "$missing" "" "$1: every figure with its README ($missing)"
}
figures_complete "awkward run"
if [ -s "$TREE/report/index.html" ]; then ok; else bad "the report is written"; fi
page_text() { sed 's/<[^>]*>//g' "$TREE/report/index.html" | tr '\n' ' ' | tr -s ' '; }
# one SmolLM3 checkpoint: the text says so, with no course of training
text=$(page_text)
# the report and the READMEs of the figures made from it name the partial download
if [[ "$text" == *"Partial download: $partial. Its capture lists configs that are not in the data"* ]]; then
    ok; else bad "the report names the partial download"; fi
if grep -qF "Partial download: $partial. Rebuild with" "$TREE/figures/qk-pca/01_pc_roles/README.md" &&
   ! grep -q "Partial download" "$TREE/figures/attention-plasticity/02_bucket_heatmap_qwen3_14b/README.md"; then
    ok; else bad "the READMEs of the figures made from the partial download name it, no other"; fi
if [[ "$text" == *"analysed at one checkpoint, S1-40k, with a context window of 4,096 tokens."* &&
      "$text" == *"analysed at one training checkpoint of SmolLM3-3B, S1-40k ("* &&
      "$text" == *"against rk at its one checkpoint,"* && "$text" != *"At the next checkpoint"* &&
      "$text" != *"from S1-40k to S1-40k"* && "$text" != *"(1 times)"* ]]; then ok; else
    bad "one SmolLM3 checkpoint: the text fits one checkpoint"; fi

key() { # figure dir (study/NN_name), quantity
    awk -F'\t' -v q="$2" '$1 == q { print $2 }' "$TREE/figures/$1/numbers.tsv"
}
canvases() { # the figures drawn as a canvas, sorted
    for f in $STUDY_FIGURES; do
        [ -n "$(key "$f" drawn)" ] && echo "$f"
    done | sort | tr '\n' ' '
}
want="attention-plasticity/01_bucket_heatmap_ministral3_14b attention-plasticity/02_bucket_heatmap_qwen3_14b \
attention-plasticity/04_bucket_heatmap_llama3.2_11b attention-plasticity/05_profile_ministral3_3b \
attention-plasticity/06_profile_qwen3_4b attention-plasticity/08_component_weights_qwen3_14b \
attention-plasticity/10_ap_drop_vs_lbp attention-plasticity/11_extra_models_ruler "
expect_same "$(canvases)" "$want" "canvases exactly where the run lacks the data"
expect_same "$(key attention-plasticity/10_ap_drop_vs_lbp 'this run')" \
    "1 model of this run has both a published LongBench-Pro score and an AP_drop: Llama-3.2-3B; a correlation needs at least 3." \
    "figure 10 says why it is not drawn"
R0=$TREE/results
if grep -qF 'no rows of Qwen3-14B (dataset qwen3-14b)' "$TREE/figures/attention-plasticity/02_bucket_heatmap_qwen3_14b/README.md"; then
    ok; else bad "the README of a canvas says which model the run lacks"; fi
# ... names the parameter that chooses the model and a model of the run its table holds
suggested=$(key attention-plasticity/02_bucket_heatmap_qwen3_14b 'this run' |
    sed -n 's/.*Choose a model of this run with the parameter PLAST_FIG02_MODEL: make report PLAST_FIG02_MODEL=\([^ ]*\) draws .*/\1/p')
if [ -n "$suggested" ] && grep -q "^$suggested," "$R0/attention_plasticity/model_pair2d.csv"; then ok; else
    bad "the heatmap canvas names PLAST_FIG02_MODEL and a model its table holds ($suggested)"; fi
# the canvases' titles are enhanced text: AP_drop a subscript, as figure 10 draws it
expect_same "$(sed -n 's/^set label 901 "\(.*\)" at screen .*/\1/p' "$TREE/figures/attention-plasticity/10_ap_drop_vs_lbp/figure.gp")" \
    "AP_{/*1.2 drop} against published LongBench-Pro scores" "figure 10's canvas: its drawn title"
# the one heatmap drawn: the shared scale has only its model's cells
expect_same "$(key attention-plasticity/03_bucket_heatmap_llama3.2_3b 'colour scale decided by' | cut -d, -f1)" \
    "Llama-3.2-3B (1 model" "the one heatmap of the run: a scale of its model alone"

# ---- key numbers from the data --------------------------------------------------------
R=$TREE/results
expect_same "$(key inventory/01_vectors 'query heads')" \
    "$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } { s += $c["q_heads"] } END { print s }' \
        "$TREE/build/report/inventory.tsv")" "inventory: query heads = the inventory's sum"
expect_same "$(key inventory/01_vectors 'query heads')" 22 "inventory: 4 + 3 + 12 + 3 query heads"
expect_same "$(key qk-pca/01_pc_roles heads)" \
    "$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $c["pc"] == 0 { n++ } END { print n }' \
        "$R/attention_plasticity/qk.csv")" "pca 01: heads = rows of PC0"
expect_same "$(key qk-pca/06_collage_example 'heads drawn' | cut -d' ' -f1-3)" "4 of 4" \
    "pca 06: the collage draws the 4 heads of the partial download"
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
want=$(awk -F, -v c="$(col "$R/rotation/rotated.csv" bias_strength)" 'NR > 1 { n++; p += ($c > 0) }
    END { printf "%d of %d (%.1f%%)", p, n, 100 * p / n }' "$R/rotation/rotated.csv")
expect_same "$(key qk-rotation/04_bias_strength 'heads with bias_strength > 0')" "$want" \
    "rotation 04: heads with bias > 0 = awk ($want)"
expect_same "$(key qk-rotation/09_smollm_trajectory checkpoints)" 1 "rotation 09: one checkpoint"
for f in 09_smollm_trajectory 10_smollm_bias_decomposition; do
    if grep -q '{/:Italic 4K context}' "$TREE/figures/qk-rotation/$f/figure.gp" &&
       grep -q '"S1\\n40k" 0' "$TREE/figures/qk-rotation/$f/figure.gp"; then ok; else
        bad "rotation $f: the one checkpoint at step 40k with its 4K context"; fi
done
expect_same "$(key qk-pca/12_smollm_rq_rk_scatter_grid 'S1-40k: heads, mean r_q, mean r_k, heads with r_k < -0.3' | cut -d, -f1)" \
    3 "pca 12: the one checkpoint with its 3 heads"
expect_same "$(key attention-plasticity/09_smollm3_trajectory checkpoints)" "1 of 1 rows" \
    "plasticity 09: one checkpoint"
expect_same "$(key attention-plasticity/07_profile_llama3.2_3b 'heads with a profile')" 4 \
    "plasticity 07: the 4 heads of the partial download"
# empty depth bins: a cell per model and bin, empty where no head of the model falls in it
want=$(awk -F'\t' 'FILENAME == ARGV[1] { if (!/^#/ && $1 != "id") layers[$1] = $6; next }
    FNR == 1 { split($0, h, ","); for (i in h) c[h[i]] = i; next }
    { split($0, f, ","); m = f[c["model"]]; L = layers[m]; b = int(10 * f[c["layer"]] / (L - 1)); if (b > 9) b = 9
      seen[m, b] = 1; models[m] = 1 }
    END { for (m in models) for (b = 0; b < 10; b++) if (!((m, b) in seen)) e++; print e }' \
    "$REG" "$R/attention_plasticity/qk_heads.csv")
expect_same "$(key qk-pca/03_layer_heatmap_rq 'empty cells (no heads in that model and depth bin)')" "$want" \
    "pca 03: empty cells = awk over the heads and the registry ($want)"

# ---- one outlier head -------------------------------------------------------------------
# the largest bias of the 12-head model times 100
O=$T/outlier
mkdir -p "$O"
c=$(col "$R/rotation/rotated.csv" bias_strength)
top=$(awk -F, -v c="$c" 'NR > 1 && $1 == "llama3.2-1b" && (best == "" || $c > best) { best = $c; row = NR }
    END { print row }' "$R/rotation/rotated.csv")
awk -F, -v OFS=, -v c="$c" -v row="$top" 'NR == row { $c = $c * 100 } { print }' "$R/rotation/rotated.csv" \
    > "$O/rotated.csv"
for n in 04 06 07; do
    run bin/qk-plot --figure qk-rotation/$n --out "$O/$n" --input heads="$O/rotated.csv" --input registry=$REG
    expect_status 0 "rotation $n with an outlier head"
    if [ ! -s "$e2e_err" ]; then ok; else bad "rotation $n with an outlier: nothing on stderr"; fi
done
okey() { awk -F'\t' -v q="$2" '$1 == q { print $2 }' "$O/$1/numbers.tsv"; }
# the robust rule of docs/figure-style.md, computed independently
robust() { # values on stdin -> "below, above"
    python3 -c '
import math, sys
v = sorted(float(x) for x in sys.stdin.read().split() if x not in ("nan", "inf", "-inf"))
k = len(v)
def q(p):
    at = p * (k - 1); i = math.floor(at)
    return v[-1] if i >= k - 1 else v[i] + (at - i) * (v[i + 1] - v[i])
lo, hi = v[0], v[-1]
q1, q3 = q(0.25), q(0.75)
if k >= 8 and q3 > q1:
    flo = min(q1 - 3 * (q3 - q1), v[math.ceil(0.02 * (k - 1))])
    fhi = max(q3 + 3 * (q3 - q1), v[math.floor(0.98 * (k - 1))]); mid = (q1 + q3) / 2
    if v[0] < mid - 1.5 * (mid - flo): lo = flo
    if v[-1] > mid + 1.5 * (fhi - mid): hi = fhi
print(f"{sum(x < lo for x in v)}, {sum(x > hi for x in v)}")'
}
llama_bias() { awk -F, -v c="$c" 'NR > 1 && $1 ~ /^llama/ { printf "%.17g\n", 1000 * $c }' "$O/rotated.csv"; }
want=$(llama_bias | robust)
expect_same "$(okey 07 'Llama-3.2: heads off the drawn y scale (below, above)')" "$want" \
    "rotation 07: the heads cut from the Llama panel follow the rule ($want)"
expect_same "${want#*, }" 1 "the outlier is the one head above the Llama scale"
expect_same "$(okey 04 'Llama-3.2: heads off the drawn scale (below, above)' | cut -d' ' -f1-2)" "$want" \
    "rotation 04: the same head cut from the Llama histogram"
grep -q '▲ 1 above the scale' "$O/07/figure.gp" && ok || bad "rotation 07 marks the cut head on the canvas"

# ---- one layer: the bias heatmap of a single cell ---------------------------------------------
# the heads of one layer of one model (a partial download of one layer): one
# cell, a colour scale of one value widened to the value +- 10 %
L=$T/one-layer
mkdir -p "$L"
awk -F, -v c="$(col "$R/rotation/rotated.csv" layer)" 'NR == 1 { print; next }
    $1 == "llama3.2-1b" && (layer == "" || $c == layer) { layer = $c; print }' \
    "$R/rotation/rotated.csv" > "$L/rotated.csv"
run bin/qk-plot --figure qk-rotation/06 --out "$L/06" --input heads="$L/rotated.csv" --input registry=$REG
expect_status 0 "rotation 06 with the heads of one layer"
if [ ! -s "$e2e_err" ]; then ok; else bad "rotation 06 with one layer: nothing on stderr"; fi
want=$(awk -F, -v c="$(col "$L/rotated.csv" bias_strength)" 'NR > 1 { s += $c; n++ }
    END { v = 1000 * s / n; printf "%.2f to %.2f", v < 0 ? v : 0, v < 0 ? 0 : v }' "$L/rotated.csv")
expect_same "$(awk -F'\t' '$1 == "bias colour scale (x1e3)" { print $2 }' "$L/06/numbers.tsv")" "$want" \
    "rotation 06: the one cell's scale runs from 0 to its mean bias ($want)"
check=$(awk '/^set cbrange/ { split(substr($3, 2, length($3) - 2), e, ":"); if (!(e[1] + 0 < e[2] + 0)) print $0 }' \
    "$L/06/figure.gp")
expect_same "$check" "" "rotation 06: every colour range written with two ends apart ($check)"

# ---- empty profile bins -----------------------------------------------------------------
# bins 40 to 59 of Llama-3.2-3B emptied in the per-head and the mean profile
E=$T/empty
mkdir -p "$E"
for t in head_bucket_plasticity model_bucket_plasticity; do
    awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
        $1 == "llama3.2-3b" && $c["q_bin"] >= 40 && $c["q_bin"] < 60 { $c["ap"] = "nan" } { print }' \
        "$R/attention_plasticity/$t.csv" > "$E/$t.csv"
done
run bin/qk-plot --figure attention-plasticity/07 --model llama3.2-3b --out "$E/07" \
    --input profile="$E/head_bucket_plasticity.csv" --input mean="$E/model_bucket_plasticity.csv" \
    --input registry=$REG
expect_status 0 "a profile with 20 empty bins"
want=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == "llama3.2-3b" && $c["ap"] != "nan" { n++; full += ($c["n_heads"] >= 2) }
    END { print n " (" full ")" }' "$E/model_bucket_plasticity.csv")
got=$(awk -F'\t' '$1 == "bins of the mean profile (with enough heads)" { print $2 }' "$E/07/numbers.tsv")
expect_same "${got%%;*}" "$want" "plasticity 07: bins with a value (and with 2 of 4 heads) = awk ($want)"
# the gap is a gap: no line of the profile has a point in it or spans it
width=$(awk -F, '$1 == "llama3.2-3b" { print 2 * ($4 - $3); exit }' "$R/attention_plasticity/model_bucket_plasticity.csv")
check=$(awk -v w="$width" '/^\$(heads|full|thin) << EOD/ { on = 1; prev = ""; next } on && /^EOD/ { on = 0; next }
    on && NF == 0 { prev = ""; next }
    on && $1 != "NaN" { bin = $1 / w - 0.5; if (bin > 39.5 && bin < 59.5) print "point in the gap at " $1
        if (prev != "" && ($1 - prev) / w > 1.01) print "line from " prev " to " $1; prev = $1 }' "$E/07/figure.gp")
expect_same "$check" "" "plasticity 07: the lines break over the 20 empty bins ($check)"

# ---- metrics without a finite value (heads without spread) --------------------------------
N=$T/nan
mkdir -p "$N"
nan_column() { # table, column, output: the column set to nan in every row
    awk -F"$4" -v OFS="$4" -v col="$2" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == col) c = i; print; next }
        { $c = "nan"; print }' "$1" > "$3"
}
nan_column "$R/smollm3_training_progress/model_summary.csv" mean_bias_strength "$N/summary.csv" ,
run bin/qk-plot --figure qk-rotation/10 --out "$N/10" --input summary="$N/summary.csv" --input registry=$REG
expect_status 0 "rotation 10 with no finite mean bias"
if [ ! -s "$e2e_err" ]; then ok; else bad "rotation 10 without a bias: nothing on stderr"; fi
expect_same "$(grep -c 'no finite value' "$N/10/figure.gp")" 2 "rotation 10: both bias panels (per token, x L) say they have no value"
# the collage of the one-model run: its heads' centroids not finite
nan_column "$TREE/build/llama3.2-3b/rotated.tsv" mu_q_a "$N/rotated_q.tsv" "$(printf '\t')"
nan_column "$N/rotated_q.tsv" mu_k_b "$N/rotated.tsv" "$(printf '\t')"
run bin/qk-plot --figure qk-rotation/01 --model llama3.2-3b --out "$N/01" \
    --input points="$TREE/build/rotation/ab_points.tsv" --input panels="$TREE/build/rotation/points_panels.tsv" \
    --input heads="$N/rotated.tsv" --input registry=$REG
expect_status 0 "rotation 01 without finite centroids"
if [ ! -s "$e2e_err" ]; then ok; else bad "rotation 01 without centroids: nothing on stderr"; fi
expect_same "$(grep -c 'set label [12] "{/:Italic μ}' "$N/01/figure.gp")" 0 "rotation 01: no centroid marked"
expect_same "$(grep -cw nan "$N/01/numbers.tsv")" 0 "rotation 01: the key numbers say n/a, never nan"
expect_same "$(grep -c 'mu_q (a, b) (n/a, ' "$N/01/numbers.tsv")" 4 "rotation 01: the 4 heads' missing centroids read n/a"

# ---- the one-model partial download alone -----------------------------------------------
run tree_make report DATA="$D" DATASETS=llama3.2-3b
expect_status 0 "make report on the 4-head partial download of one model"
if [ ! -s "$e2e_err" ]; then ok; else bad "the one-model run printed on stderr"; fi
figures_complete "one-model run"
expect_same "$(key inventory/01_vectors 'query heads')" 4 "one-model run: the inventory has its 4 heads"
expect_same "$(key qk-pca/01_pc_roles heads) $(key qk-pca/01_pc_roles models)" "4 1" \
    "one-model run: pca 01 over 4 heads of 1 model"
expect_same "$(key attention-plasticity/03_bucket_heatmap_llama3.2_3b 'heads (most behind a cell)')" 4 \
    "one-model run: plasticity 03 over its 4 heads"
expect_same "$(key qk-pca/07_smollm_position_signal drawn)" "no: this run lacks the data of this figure" \
    "one-model run: the SmolLM3 figures are canvases"
if key qk-pca/07_smollm_position_signal 'this run' | grep -qF "(llama3.2-3b)" &&
   key qk-pca/07_smollm_position_signal 'this run' | grep -qF "results/smollm3_training_progress/qk_heads.csv"; then
    ok; else bad "one-model run: the canvas names the run's datasets and the table it lacks"; fi
# the report claims nothing about the profile figures' models the run lacks
expect_same "$(sed 's/<[^>]*>//g' "$TREE/report/index.html" | grep -o '[^ ]*: no plasticity values in this run' |
    tr '\n' ';')" \
    "Ministral-3-3B: no plasticity values in this run;Qwen3-4B: no plasticity values in this run;" \
    "one-model run: the absent profile models are said to be absent"
expect_same "$(grep -c 'Ministral-3-3B</span>: <b>' "$TREE/report/index.html")" 0 \
    "one-model run: no numbers or fan-out claim for an absent model"
# a family is named as in a run on every dataset, not after the one model present
expect_same "$(grep -F '| `pca.family.llama.label` |' "$TREE/report/numbers.md" | cut -d'|' -f3 | tr -d ' ')" \
    "Llama-3.2" "one-model run: the family is Llama-3.2, not Llama-3.2-3B"
# counts of one are singular; one study is not both
text=$(page_text)
if [[ "$text" == *"It covers 1 dataset (4 query heads,"* && "$text" == *"4 query heads of 1 model in 1 family;"* &&
      "$text" == *"over 4 heads of the cross-model study."* && "$text" != *" 1 datasets"* &&
      "$text" != *" 1 models"* && "$text" != *" 1 families"* ]]; then ok; else
    bad "one-model run: one dataset, model and family, one study"; fi
# a figure the run cannot draw is said to be not drawn, and no text refers to it
if [[ "$text" == *"(Figure 4.8 is not drawn in this run: its README says what it lacks.)"* &&
      "$text" != *"coordinates 0 to n/a"* ]]; then ok; else bad "one-model run: figure 4.8 not drawn, not described"; fi
# rotation 07 on the 4-head partial download: one family, so no claim of Simpson's paradox in
# the figure's title or the section's heading; its r with the 95 % interval and n
F07=$TREE/figures/qk-rotation/07_bias_vs_separation
if ! grep '^set multiplot title' "$F07/figure.gp" | grep -q Simpson &&
   grep -q '^set title "Llama-3.2  (r = .*(95 % CI .* to .*), n = 4 heads)"' "$F07/figure.gp" &&
   [ "$(key qk-rotation/07_bias_vs_separation "Simpson's reversal (every family r reverses the pooled r, 95% intervals apart from 0)")" = no ]
then ok; else bad "one-model run: rotation 07 claims no paradox and gives r with its interval and n"; fi
if [[ "$text" == *"3.4 Bias and separation Over all heads"* ]]; then ok; else
    bad "one-model run: the section's heading claims no paradox"; fi
expect_same "$(grep -F '| `rotation.r_bias_sep.simpson` |' "$TREE/report/numbers.md" | cut -d'|' -f3 | tr -d ' ')" \
    0 "one-model run: rotation.r_bias_sep.simpson is 0"
# rotation 09 and 10 of one checkpoint: its context under it
for f in 09_smollm_trajectory 10_smollm_bias_decomposition; do
    [ -n "$(key qk-rotation/$f drawn)" ] && continue # a canvas in this run
    grep -q '{/:Italic 4K context}' "$TREE/figures/qk-rotation/$f/figure.gp" && ok ||
        bad "rotation $f: the checkpoint's context"
done
# a canvas is as deterministic as a figure
for k in 1 2; do
    bin/qk-plot --figure qk-rotation/09 --out "$T/canvas$k" --absent summary=results/smollm3_training_progress/model_summary.csv \
        --input registry=$REG --run-datasets "llama3.2-3b" || bad "qk-plot draws the canvas ($k)"
done
same=1
for f in figure.png figure.svg figure.pdf figure.gp numbers.tsv inputs.tsv readme.tsv; do
    cmp -s "$T/canvas1/$f" "$T/canvas2/$f" || same=0
done
expect_same "$same" 1 "a canvas drawn twice is byte-identical"
# figure.pdf records SOURCE_DATE_EPOCH, else the epoch, in place of the time
# cairo wrote: the same 14 digits, nothing else moves
canvas_pdf() { # dir, SOURCE_DATE_EPOCH (empty: unset)
    local date=(-u SOURCE_DATE_EPOCH)
    [ -n "$2" ] && date=("SOURCE_DATE_EPOCH=$2")
    run env "${date[@]}" bin/qk-plot --figure qk-rotation/09 \
        --out "$1" --absent summary=results/smollm3_training_progress/model_summary.csv \
        --input registry=$REG --run-datasets "llama3.2-3b"
}
canvas_pdf "$T/canvas-epoch" ""
expect_status 0 "qk-plot without SOURCE_DATE_EPOCH"
expect_same "$(grep -a -o 'CreationDate (D:[0-9]*Z)' "$T/canvas-epoch/figure.pdf")" \
    "CreationDate (D:19700101000000Z)" "figure.pdf without SOURCE_DATE_EPOCH is dated 1970-01-01"
canvas_pdf "$T/canvas-day" 86400
expect_same "$(grep -a -o 'CreationDate (D:[0-9]*Z)' "$T/canvas-day/figure.pdf")" \
    "CreationDate (D:19700102000000Z)" "SOURCE_DATE_EPOCH=86400 dates figure.pdf 1970-01-02"
expect_same "$(cmp -l "$T/canvas-epoch/figure.pdf" "$T/canvas-day/figure.pdf" | wc -l)" 1 \
    "the two PDFs differ in the one digit of the day"
canvas_pdf "$T/canvas-bad" 12x
expect_status 1 "qk-plot with SOURCE_DATE_EPOCH=12x: usage error"
expect_one_line_naming SOURCE_DATE_EPOCH "'12x' is not a time in seconds" \
    "SOURCE_DATE_EPOCH=12x: one line saying so"
expect_missing "$T/canvas-bad/figure.pdf" "SOURCE_DATE_EPOCH=12x: no figure drawn"
expect_same "$(awk -F'\t' '$1 == "summary" { print $2 }' "$T/canvas1/inputs.tsv")" \
    "results/smollm3_training_progress/model_summary.csv (not made by this run)" "the canvas's inputs table names the absent table"
if [ "$TREE/report/index.html" -nt "$TREE/build/sets/run.txt" ] && grep -q 'llama3.2-3b' "$TREE/report/index.html"; then
    ok; else bad "one-model run: the report is written"; fi

# ---- no head large enough for a PCA ---------------------------------------------------
# every head of the collage's (and the study's only) dataset below the fit's
# minimum (PCA_MAX_ROWS=2 keeps 2 rows per kind): the collage and the PCA
# numbers list nothing, and the report is still made, with canvases
run tree_make report DATA="$D" DATASETS=llama3.2-3b PCA_MAX_ROWS=2
expect_status 0 "make report with no head large enough for a PCA"
expect_out_contains_err "qk-pca-collage: warning: build/llama3.2-3b/store.qks: no query head with enough rows" \
    "no PCA head: the collage says why it is empty"
expect_same "$(wc -l < "$TREE/build/pca/collage_panels.tsv")" 1 "no PCA head: the collage table has its header alone"
expect_same "$(key qk-pca/06_collage_example drawn)" "no: this run lacks the data of this figure" \
    "no PCA head: figure 06 is a canvas"
if key qk-pca/06_collage_example 'this run' | grep -qF "no head of the dataset has enough rows"; then
    ok; else bad "no PCA head: the canvas says why"; fi
if [ "$TREE/report/index.html" -nt "$TREE/build/pca/collage_panels.tsv" ]; then
    ok; else bad "no PCA head: the report is written"; fi

finish
