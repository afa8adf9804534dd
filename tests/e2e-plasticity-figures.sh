#!/bin/bash
# End to end: the figures of the plasticity study (qk-plot), the joint
# SmolLM3 table (qk-joint) and the report numbers (qk-summary --section
# plasticity and --section extra) on a tiny synthetic run: the six models the
# figures draw and the two extra models, four heads each, and three SmolLM3
# checkpoints through the rotation stage.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

for p in qk-synth qk-load qk-plasticity qk-rotate qk-complement qk-merge qk-plot qk-report \
         qk-joint qk-summary; do
    if [ ! -x "bin/$p" ]; then
        echo "FAIL: bin/$p is missing (make bin/$p)" >&2
        exit 1
    fi
done

T=build/tests/tmp/e2e-plasticity-figures
rm -rf "$T"
mkdir -p "$T/results/cross" "$T/results/training" "$T/results/extra"
CROSS="ministral3-3b ministral3-14b qwen3-4b qwen3-14b llama3.2-3b llama3.2-11b"
EXTRA="llama3.1-8b mistral-v0.2-7b"
TRAINING="smollm3-3b-stage1-step-40000 smollm3-3b-stage3-step-4720000 smollm3-3b-lc-4k-to-32k-step-4000"
X=$T/results/cross
J=$T/results/training
E=$T/results/extra

# ---- a tiny pipeline run ----------------------------------------------------------

synth_args=()
for d in $CROSS $EXTRA $TRAINING; do synth_args+=(--dataset "$d"); done
run bin/qk-synth --quiet --out "$T/data" --heads 4 "${synth_args[@]}"
expect_status 0 "qk-synth writes the datasets"
for d in $CROSS $EXTRA $TRAINING; do
    b=$T/build/$d
    mkdir -p "$b"
    bin/qk-load --quiet --dataset "$d" "$T/data/$d" -o "$b/store.qks" &&
    bin/qk-plasticity --quiet --threads 1 --out-dir "$b" "$b/store.qks" || bad "plasticity on $d"
done
for d in $TRAINING; do
    b=$T/build/$d
    bin/qk-rotate --quiet --threads 1 --family smollm3 --output "$b/rotation.tsv" \
        --axes-output "$b/rotation_axes.bin" "$b/store.qks" &&
    bin/qk-complement --quiet --threads 1 --axes "$b/rotation_axes.bin" --rotation "$b/rotation.tsv" \
        --pairs-output "$b/complement_pairs.tsv" --heads-output "$b/complement_heads.tsv" \
        --rotated-output "$b/rotated.tsv" "$b/store.qks" || bad "rotation on $d"
done
merge() { # prefix output tsv-name datasets...
    local prefix=$1 out=$2 name=$3
    shift 3
    bin/qk-merge --model-from-dir ${prefix:+--strip-prefix "$prefix"} --output "$out" \
        $(for d in "$@"; do echo "$T/build/$d/$name"; done) || bad "qk-merge $out"
}
merge "" "$X/model_pair2d.csv" plasticity_model_pair2d.tsv $CROSS
merge "" "$X/head_bucket_plasticity.csv" plasticity_profile.tsv $CROSS
merge "" "$X/model_bucket_plasticity.csv" plasticity_model_profile.tsv $CROSS
merge "" "$X/head_component_weights.csv" plasticity_weights.tsv $CROSS
merge "" "$X/model_report.csv" plasticity_model.tsv $CROSS
merge "" "$E/model_bucket_plasticity.csv" plasticity_model_profile.tsv $EXTRA
merge "" "$E/model_report.csv" plasticity_model.tsv $EXTRA
merge smollm3-3b- "$J/smollm3_model_report.csv" plasticity_model.tsv $TRAINING
merge smollm3-3b- "$J/rotated.csv" rotated.tsv $TRAINING
run bin/qk-rotate --summary --output "$J/model_summary.csv" "$J/rotated.csv"
expect_status 0 "qk-rotate --summary"
REG=workflow/datasets.tsv
BENCH=workflow/benchmarks.tsv

# ---- the joint table -------------------------------------------------------------------

JOINT=$J/joint_rotation_plasticity.csv
run bin/qk-joint --summary "$J/model_summary.csv" --plasticity "$J/smollm3_model_report.csv" \
    --registry $REG --output "$JOINT"
expect_status 0 "qk-joint writes the joint table"
expect_file_line "$JOINT" 1 "model,label,context_length,n_heads,bias_strength,abs_alpha_k,abs_r_k_a,separation_strength,plane_var_fraction,ap_overall,ap_first_20pct,ap_last_20pct,ap_drop" \
    "joint header"
expect_same "$(awk 'END { print NR }' "$JOINT")" 4 "one row per checkpoint"
expect_file_line "$JOINT" 2 "stage1-step-40000,S1-40k,4096," "first checkpoint, label and context"
# every value equals its source cell
check=$(awk -F, 'FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
    FILENAME == ARGV[1] { s[$1] = $0; next }
    FILENAME == ARGV[2] { p[$1] = $0; next }
    { split(s[$1], a, ","); split(p[$1], b, ",")
      if ($5 != a[col[ARGV[1], "mean_bias_strength"]] || $7 != a[col[ARGV[1], "mean_abs_r_k_a"]] ||
          $9 != a[col[ARGV[1], "mean_plane_var_fraction"]] ||
          $11 != b[col[ARGV[2], "ap_first_20pct"]] || $13 != b[col[ARGV[2], "ap_drop"]]) print $1 }' \
    "$J/model_summary.csv" "$J/smollm3_model_report.csv" "$JOINT")
expect_same "$check" "" "joint values copied from their sources ($check)"
head -2 "$J/model_summary.csv" > "$T/summary-short.csv"
run bin/qk-joint --summary "$T/summary-short.csv" --plasticity "$J/smollm3_model_report.csv" \
    --registry $REG --output "$T/joint-bad.csv"
expect_status 2 "a checkpoint missing from the summary"
expect_one_line_naming "$T/summary-short.csv" "stage3-step-4720000" "missing checkpoint names the file"
expect_missing "$T/joint-bad.csv" "no table on error"
sed '1s/mean_bias_strength/bias/' "$J/model_summary.csv" > "$T/summary-nocol.csv"
run bin/qk-joint --summary "$T/summary-nocol.csv" --plasticity "$J/smollm3_model_report.csv" \
    --registry $REG --output "$T/joint-bad.csv"
expect_status 2 "a summary without mean_bias_strength"
expect_one_line_naming "$T/summary-nocol.csv" "mean_bias_strength" "missing column names the file"

# ---- every figure, twice -----------------------------------------------------------------

fig_model() { # NN -> the model figures 01-08 show by default (workflow/plasticity.mk)
    case $1 in
    01) echo ministral3-14b ;; 02|08) echo qwen3-14b ;; 03|07) echo llama3.2-3b ;;
    04) echo llama3.2-11b ;; 05) echo ministral3-3b ;; 06) echo qwen3-4b ;;
    esac
}
fig_inputs() { # NN -> the --input arguments of that figure
    case $1 in
    01|02|03|04) echo "--model $(fig_model "$1") --input pair2d=$X/model_pair2d.csv --input registry=$REG" \
        "--input scale-cross=$X/model_pair2d.csv --value scale_models=$SCALE_MODELS" ;;
    05|06|07) echo "--model $(fig_model "$1") --input profile=$X/head_bucket_plasticity.csv --input mean=$X/model_bucket_plasticity.csv --input registry=$REG" ;;
    08) echo "--model $(fig_model "$1") --input weights=$X/head_component_weights.csv --input registry=$REG" ;;
    09) echo "--input joint=$JOINT" ;;
    10) echo "--input report=$X/model_report.csv --input benchmarks=$BENCH --input registry=$REG" ;;
    11) echo "--input mean=$E/model_bucket_plasticity.csv --input report=$E/model_report.csv --input benchmarks=$BENCH --input registry=$REG" ;;
    esac
}
FIGS="01 02 03 04 05 06 07 08 09 10 11"
SCALE_MODELS=ministral3-14b+qwen3-14b+llama3.2-3b+llama3.2-11b # the heatmaps' shared scale
printf 'dataset\tstore_bytes\tstore_checksum\n' > "$T/stores.tsv"
printf 'stage\tparameter\tvalue\n' > "$T/parameters.tsv"
render() { # NN, output dir
    bin/qk-plot --figure "attention-plasticity/$1" --out "$2" $(fig_inputs "$1") &&
    bin/qk-report --markdown --template templates/figure-README.md.in --output "$2/README.md" \
        --values "$2/readme.tsv" --table numbers="$2/numbers.tsv" --table inputs="$2/inputs.tsv" \
        --table stores="$T/stores.tsv" --table parameters="$T/parameters.tsv" \
        --set suite_version=test --set data_source=synthetic --set data_partial= --set rebuild_args=
}
for n in $FIGS; do
    run render "$n" "$T/fig/$n"
    expect_status 0 "figure $n renders"
    png=$T/fig/$n/figure.png svg=$T/fig/$n/figure.svg
    if [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
       [ "$(stat -c %s "$png")" -gt 20000 ]; then ok; else bad "figure $n: PNG missing or tiny"; fi
    if grep -q '<svg' "$svg" && [ "$(stat -c %s "$svg")" -gt 10000 ]; then ok; else
        bad "figure $n: SVG missing or tiny"; fi
    expect_pdf "$T/fig/$n/figure.pdf" "figure $n: PDF complete, fonts embedded, dated"
    if [ "$(awk 'END { print NR }' "$T/fig/$n/numbers.tsv")" -ge 3 ] &&
       grep -q '^## Key numbers' "$T/fig/$n/README.md" &&
       grep -qF "| $(sed -n 2p "$T/fig/$n/numbers.tsv" | cut -f1) |" "$T/fig/$n/README.md"; then ok
    else bad "figure $n: README lists no key numbers"; fi
    run render "$n" "$T/again/$n"
    same=1
    for f in figure.png figure.svg figure.pdf figure.gp numbers.tsv README.md; do
        cmp -s "$T/fig/$n/$f" "$T/again/$n/$f" || same=0
    done
    expect_same "$same" 1 "figure $n: a second run is byte-identical"
done
expect_no_temporaries "$T/fig/01" "no temporaries left"

key() { # NN, quantity -> value of the figure's key number
    awk -F'\t' -v q="$2" '$1 == q { print $2 }' "$T/fig/$1/numbers.tsv"
}

# ---- key numbers against independent computations --------------------------------------

# figure 10: Pearson r of AP_drop and the published scores
want=$(python3 - "$X/model_report.csv" "$BENCH" <<'PY'
import csv, math, sys
drop = {r["model"]: float(r["ap_drop"]) for r in csv.DictReader(open(sys.argv[1]))}
lbp = {}
for line in open(sys.argv[2]):
    f = line.rstrip("\n").split("\t")
    if not line.startswith("#") and len(f) > 3 and f[1] == "longbench-pro" and f[2] == "overall":
        lbp[f[0]] = float(f[3])
pts = [(drop[m], lbp[m]) for m in drop if m in lbp]
n = len(pts)
mx = sum(p[0] for p in pts) / n
my = sum(p[1] for p in pts) / n
sxy = sum((x - mx) * (y - my) for x, y in pts)
sxx = sum((x - mx) ** 2 for x, _ in pts)
syy = sum((y - my) ** 2 for _, y in pts)
print(f"{n} {sxy / math.sqrt(sxx * syy):.3f}")
PY
)
expect_same "$(key 10 'models with a published score') $(key 10 'Pearson r (AP_drop, LongBench-Pro)')" \
    "$want" "figure 10: n and Pearson r as computed from the CSV ($want)"

# figure 08: share of the first half and the peak of the second, from the per-head weights
want=$(awk -F, 'NR > 1 && $1 == "qwen3-14b" { s[$5] += $7; n[$5]++; if ($5 + 1 > d) d = $5 + 1 }
    END { for (c = 0; c < d; c++) { m = s[c] / n[c]; if (c < d / 2) h += m
              else if (c == d / 2 || m > best) { best = m; arg = c } }
          printf "%.4f %d, %.4f\n", h, arg, best }' "$X/head_component_weights.csv")
expect_same "$(key 08 'share in coordinates 0 to d/2 - 1') $(key 08 'peak of the second half (component, weight)')" \
    "$want" "figure 08: half share and peak as computed from the CSV ($want)"

# figure 05: the mean line in full only where at least half of the heads contribute
want=$(awk -F, '$1 == "ministral3-3b" && $6 != "nan" && $5 >= 2 { if (!a) a = $4; b = $4 } END { printf "%.1f, %.1f", a, b }' \
    "$X/model_bucket_plasticity.csv")
expect_same "$(key 05 'first and last bin centre with enough heads')" "$want" \
    "figure 05: the full mean line spans the bins with at least 2 of 4 heads ($want)"
expect_same "$(key 05 'heads a bin needs for the full mean line')" "2 (50% of 4)" "figure 05: the threshold"
# figure 05: mean of the red line over the first fifth of its bins = the model report's first 20 %
want=$(awk -F, 'FILENAME == ARGV[1] { if ($1 == "ministral3-3b" && $6 != "nan") { b[++n] = $2; a[n] = $6 }; next }
    $1 == "ministral3-3b" && FNR > 1 { for (i = 1; i <= n; i++) if (int(5 * (b[i] - b[1]) / (b[n] - b[1])) == 0) { s += a[i]; k++ }
      printf "%.4f %.4f\n", s / k, $11 }' "$X/model_bucket_plasticity.csv" "$X/model_report.csv")
got=$(key 05 'mean over the first 20 % of bins')
expect_same "$got $got" "$want" "figure 05: first 20 % from the profile and from the report ($want)"
# figures 05-07: the heads behind each bin over the bin's own interval, bin_start to
# bin_start + width (width = 2 (bin_centre - bin_start)), broken where a bin is missing
for n in 05 06 07; do
    m=$(fig_model $n)
    want=$(awk -F, -v m="$m" '$1 == m && $6 != "nan" {
        if (prev != "" && $2 != prev + 1) print ""
        w = 2 * ($4 - $3); printf "%.2f %d\n%.2f %d\n", $3, $5, $3 + w, $5; prev = $2 }' \
        "$X/model_bucket_plasticity.csv" | md5sum)
    got=$(awk '/^\$count << EOD/ { on = 1; next } /^EOD/ { on = 0 } on' "$T/fig/$n/figure.gp" | md5sum)
    expect_same "$got" "$want" "figure $n: each bin's heads over [bin_start, bin_start + width]"
    expect_same "$(grep -c '^plot \$count using 1:2 with lines ' "$T/fig/$n/figure.gp")" 1 \
        "figure $n: the counts joined as they are (no step shifting them)"
done

# ---- the heatmaps 01-04: one colour scale, masked cells ----------------------------------------

# the four colour bars carry one range, in the key numbers, the scripts and the SVG's bar labels
cb_labels() { grep -oE '>[0-9]\.[0-9]{2}<' "$1/figure.svg" | tr -d '<>' | tr '\n' ' '; }
for n in 02 03 04; do
    expect_same "$(key $n 'colour range (robust)')" "$(key 01 'colour range (robust)')" \
        "figure $n: the colour range of figure 01 ($(key 01 'colour range (robust)'))"
    expect_same "$(grep '^set cbrange' "$T/fig/$n/figure.gp")" "$(grep '^set cbrange' "$T/fig/01/figure.gp")" \
        "figure $n: the script's colour range is figure 01's"
    expect_same "$(cb_labels "$T/fig/$n")" "$(cb_labels "$T/fig/01")" "figure $n: the colour bar's numbers are figure 01's"
done
# (decided by the cells from at least 2 of the 4 heads of each model)
want=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 ~ /^(ministral3-14b|qwen3-14b|llama3.2-3b|llama3.2-11b)$/ && $c["ap"] != "nan" && $c["n_heads"] >= 2 { n++ }
    END { print n }' "$X/model_pair2d.csv")
expect_same "$(key 03 'colour scale decided by')" \
    "Ministral-3-14B, Qwen3-14B, Llama-3.2-3B and Llama-3.2-11B (4 models, $want cells)" \
    "the shared scale names its four models and the $want cells that decide it"
# the shared range is the robust range of the four models' cells pooled: the
# range figure 01 gives its own scale when the four are one model's cells
awk -F, -v OFS=, 'NR > 1 && $1 ~ /^(qwen3-14b|llama3.2-3b|llama3.2-11b)$/ { $1 = "ministral3-14b" } { print }' \
    "$X/model_pair2d.csv" > "$T/pair2d-pooled.csv"
run bin/qk-plot --figure attention-plasticity/01 --model ministral3-14b --out "$T/pooled" \
    --input pair2d="$T/pair2d-pooled.csv" --input registry=$REG --heatmap-scale own
expect_status 0 "the four models' cells as one model's heatmap"
expect_same "$(awk -F'\t' '$1 == "colour range (robust)" { print $2 }' "$T/pooled/numbers.tsv")" \
    "$(key 01 'colour range (robust)')" "the shared range = the own range of the pooled cells"
# --heatmap-scale own: each its own range, from its own cells
own_range() { # NN
    bin/qk-plot --figure "attention-plasticity/$1" --out "$T/own/$1" $(fig_inputs "$1") --heatmap-scale own &&
        awk -F'\t' '$1 == "colour range (robust)" { print $2 }' "$T/own/$1/numbers.tsv"
}
ranges=$(for n in 01 02 03 04; do own_range $n; done | sort -u | wc -l)
if [ "$ranges" -gt 1 ]; then ok; else bad "own scales: the four ranges differ ($ranges distinct)"; fi
expect_same "$(awk -F'\t' '$1 == "colour scale decided by" { print $2 }' "$T/own/02/numbers.tsv" | cut -d'(' -f1)" \
    "Qwen3-14B " "own scale: decided by the model alone"
if grep -q 'colour scale of this model alone' "$T/own/02/figure.gp"; then ok; else bad "own scale: the subtitle says so"; fi
# cells from too few heads: hatched, five lines each, their colour kept (no
# overlay); the legend names each kind of masked cell the figure has
for n in 01 02 03 04; do
    gp=$T/fig/$n/figure.gp
    thin=$(key $n 'cells from fewer than the minimum heads (hatched)' | cut -d' ' -f1)
    want=$(awk -F, -v m="$(fig_model $n)" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $1 == m && $c["ap"] != "nan" && $c["n_heads"] < 2' "$X/model_pair2d.csv" | wc -l)
    expect_same "$thin" "$want" "figure $n: hatched = cells from fewer than 2 of 4 heads ($want)"
    expect_same "$(awk '/^\$hatch << EOD/ { on = 1; next } /^EOD/ { on = 0 } on && $1 != "NaN"' "$gp" | wc -l)" \
        "$((5 * thin))" "figure $n: five hatch lines per hatched cell"
    expect_same "$(grep -c 'transparent solid' "$gp")" 0 "figure $n: no overlay on any cell"
    expect_same "$(grep -c '"from fewer than 2 of 4 heads (hatched)"' "$gp")" "$((thin > 0))" \
        "figure $n: the legend names the hatched cells where there are any"
    off=$(key $n 'cells below, above the colour range' | awk -F', ' '{ print $1 + $2 }')
    expect_same "$(grep -c '"beyond the colour range (drawn at its end)"' "$gp")" "$((off > 0))" \
        "figure $n: the legend names the cells beyond the range where there are any ($off)"
    expect_same "$(grep -c '"no pairs"' "$gp")" 1 "figure $n: the legend names the cells without pairs"
done

# ---- figure 10: r with its Fisher-z interval ------------------------------------------------
want=$(python3 - "$(key 10 'Pearson r (AP_drop, LongBench-Pro)')" "$(key 10 'models with a published score')" <<'PY'
import math, sys
r, n = float(sys.argv[1]), int(sys.argv[2])
z, h = math.atanh(r), 1.959964 / math.sqrt(n - 3)
print(f"{math.tanh(z - h):.3f} to {math.tanh(z + h):.3f}")
PY
)
expect_same "$(key 10 '95 % interval of r (Fisher z)')" "$want" "figure 10: the 95 % interval of r = Fisher z ($want)"
lo=$(printf '%+.2f' "${want%% to*}" | sed 's/^-/−/') hi=$(printf '%+.2f' "${want##*to }" | sed 's/^-/−/')
if grep -F "set label 902" "$T/fig/10/figure.gp" | grep -qF "(95 % CI $lo to $hi), n = $(key 10 'models with a published score') models; few points"; then
    ok; else bad "figure 10: the subtitle gives r's interval, n and that the points are few"; fi

# ---- figures 05-07: where the set of heads behind the mean changes ----------------------------
for n in 05 06 07; do
    want=$(python3 - "$(fig_model $n)" "$X/head_bucket_plasticity.csv" "$X/model_bucket_plasticity.csv" <<'PY'
import csv, math, sys
model = sys.argv[1]
heads = {}
for r in csv.DictReader(open(sys.argv[2])):
    if r["model"] == model and not math.isnan(float(r["ap"])):
        heads.setdefault(int(r["q_bin"]), set()).add((r["layer"], r["q_head"], r["k_head"]))
bins = [int(r["q_bin"]) for r in csv.DictReader(open(sys.argv[3]))
        if r["model"] == model and not math.isnan(float(r["ap"]))]
changes = sum(1 for a, b in zip(bins, bins[1:]) if b == a + 1 and heads.get(a) != heads.get(b))
print(f"{changes} of {len(bins)}")
PY
)
    expect_same "$(key $n 'bins where the set of heads changes (marked)')" "$want" \
        "figure $n: bins whose set of heads differs from the bin before ($want)"
    got=$(awk '/^\$change << EOD/ { on = 1; next } /^EOD/ { on = 0 } on && $1 != "NaN"' "$T/fig/$n/figure.gp" | wc -l)
    expect_same "$got" "${want%% of*}" "figure $n: one marker per change"
done

# ---- bad inputs: one line, exit 2, naming the file -----------------------------------------

cut -d, -f1-7 "$X/model_pair2d.csv" > "$T/pair2d-noap.csv"
run bin/qk-plot --figure attention-plasticity/01 --model ministral3-14b --out "$T/bad" \
    --input pair2d="$T/pair2d-noap.csv" --input registry=$REG
expect_status 2 "heatmap without the ap column"
expect_one_line_naming "$T/pair2d-noap.csv" "no column 'ap'" "missing column names the file"
sed '1s/component_weight/weight/' "$X/head_component_weights.csv" > "$T/weights-renamed.csv"
run bin/qk-plot --figure attention-plasticity/08 --model qwen3-14b --out "$T/bad" \
    --input weights="$T/weights-renamed.csv" --input registry=$REG
expect_status 2 "weights without component_weight"
expect_one_line_naming "$T/weights-renamed.csv" "component_weight" "missing weight column names the file"
sed '1s/ap_last_20pct/last/' "$JOINT" > "$T/joint-renamed.csv"
run bin/qk-plot --figure attention-plasticity/09 --out "$T/bad" --input joint="$T/joint-renamed.csv"
expect_status 2 "trajectory without ap_last_20pct"
expect_one_line_naming "$T/joint-renamed.csv" "ap_last_20pct" "missing joint column names the file"
expect_missing "$T/bad/figure.png" "no figure from bad input"
run bin/qk-plot --figure attention-plasticity/06 --out "$T/bad" \
    --input profile="$X/head_bucket_plasticity.csv" --input mean="$X/model_bucket_plasticity.csv" --input registry=$REG
expect_status 1 "a one-model figure without --model"
expect_one_line_naming "attention-plasticity/06" "--model" "the missing model option is named"

# a model the tables lack: a canvas that says so, naming the table and the model
grep -v '^qwen3-4b,' "$X/model_bucket_plasticity.csv" > "$T/mean-noqwen.csv"
run bin/qk-plot --figure attention-plasticity/06 --model qwen3-4b --out "$T/lacks" \
    --input profile="$X/head_bucket_plasticity.csv" --input mean="$T/mean-noqwen.csv" --input registry=$REG
expect_status 0 "profile of a model the table lacks: a canvas"
canvas_key() { awk -F'\t' -v q="$2" '$1 == q { print $2 }' "$1/numbers.tsv"; }
if [ "$(canvas_key "$T/lacks" drawn)" = "no: this run lacks the data of this figure" ] &&
   canvas_key "$T/lacks" "this run" | grep -qF "$T/mean-noqwen.csv holds no rows of Qwen3-4B" &&
   canvas_key "$T/lacks" needs | grep -qF "with the rows of Qwen3-4B"; then ok
else bad "the canvas names the table and the model it lacks"; fi
first=$(awk -F, 'NR == 2 { print $1 }' "$T/mean-noqwen.csv")
if canvas_key "$T/lacks" "this run" | grep -qF "Choose a model of this run with the parameter PLAST_FIG06_MODEL: make report PLAST_FIG06_MODEL=$first draws"; then
    ok; else bad "the canvas names the model parameter and a model the table holds ($first)"; fi
# the canvas carries the title the figure is drawn with
drawn_title() { sed -n 's/^set multiplot title "\([^\\]*\)\\n.*/\1/p' "$1/figure.gp"; }
canvas_title() { sed -n 's/^set label 901 "\(.*\)" at screen .*/\1/p' "$1/figure.gp"; }
run bin/qk-plot --figure attention-plasticity/06 --model qwen3-4b --out "$T/drawn06" \
    --input profile="$X/head_bucket_plasticity.csv" --input mean="$X/model_bucket_plasticity.csv" --input registry=$REG
expect_same "$(canvas_title "$T/lacks")" "$(drawn_title "$T/drawn06")" "figure 06: the canvas's title is the drawn one"
head -3 "$X/model_report.csv" > "$T/report-two.csv"
run bin/qk-plot --figure attention-plasticity/10 --out "$T/canvas10" --input report="$T/report-two.csv" \
    --input benchmarks=$BENCH --input registry=$REG
expect_same "$(canvas_title "$T/canvas10")" "$(canvas_title "$T/fig/10")" "figure 10: the canvas's title is the drawn one"
expect_same "$(canvas_title "$T/canvas10")" "AP_{/*1.2 drop} against published LongBench-Pro scores" \
    "figure 10: AP_drop as a subscript on the canvas too"
expect_same "$(sed -n 2p "$T/lacks/readme.tsv")" "figure_title	Attention plasticity along the context: Qwen3-4B" \
    "the title names the chosen model"
# a chosen model other than the default
run bin/qk-plot --figure attention-plasticity/06 --model llama3.2-11b --out "$T/other" \
    --input profile="$X/head_bucket_plasticity.csv" --input mean="$X/model_bucket_plasticity.csv" --input registry=$REG
expect_status 0 "figure 06 for another model"
expect_same "$(canvas_key "$T/other" model)" "Llama-3.2-11B (llama3.2-11b)" "figure 06 draws the chosen model"
# a SmolLM3 checkpoint: its study's tables name it without the dataset prefix
merge smollm3-3b- "$J/head_bucket_plasticity.csv" plasticity_profile.tsv $TRAINING
merge smollm3-3b- "$J/model_bucket_plasticity.csv" plasticity_model_profile.tsv $TRAINING
run bin/qk-plot --figure attention-plasticity/05 --model smollm3-3b-stage3-step-4720000 --out "$T/ckpt" \
    --input profile="$J/head_bucket_plasticity.csv" --input mean="$J/model_bucket_plasticity.csv" --input registry=$REG
expect_status 0 "figure 05 for a SmolLM3 checkpoint"
expect_same "$(canvas_key "$T/ckpt" model)" "S3-4.72M (smollm3-3b-stage3-step-4720000)" \
    "figure 05 draws the checkpoint from its study's tables"

# ---- constant data: a heatmap whose cells are all one value ----------------------------------
# the colour range is 0.05 of AP about the value, inside [0, 1]: all 1 at
# the top of the bar, all 0 at its bottom; the bar's tick labels (the
# two-decimal labels of the SVG) are distinct
constant_map() { # value
    awk -F, -v OFS=, -v ap="$1" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
        { $c["ap"] = ap; print }' "$X/model_pair2d.csv" > "$T/pair2d-$1.csv"
    run bin/qk-plot --figure attention-plasticity/03 --model llama3.2-3b --out "$T/const$1" \
        --input pair2d="$T/pair2d-$1.csv" --input registry=$REG
    expect_status 0 "a heatmap of cells all $1"
}
bar_labels() { grep -oE '>[0-9]\.[0-9]{2}<' "$T/const$1/figure.svg" | tr -d '<>' | tr '\n' ' '; }
constant_map 1
expect_same "$(canvas_key "$T/const1" 'colour range (robust)')" "0.9500 to 1.0000" \
    "cells all 1: the colour range ends at 1"
expect_same "$(grep '^set cbrange' "$T/const1/figure.gp")" "set cbrange [0.950000:1.000000]" \
    "cells all 1: the script's colour range"
expect_same "$(awk '/^\$cells << EOD/ { on = 1; next } /^EOD/ { on = 0 } on { print $3 }' "$T/const1/figure.gp" |
    sort -u)" "1.000000" "cells all 1: every cell drawn at 1, the top of the bar"
expect_same "$(bar_labels 1)" "0.95 0.96 0.97 0.98 0.99 1.00 " "cells all 1: distinct bar labels ($(bar_labels 1))"
constant_map 0
expect_same "$(canvas_key "$T/const0" 'colour range (robust)')" "0.0000 to 0.0500" \
    "cells all 0: the colour range starts at 0"
expect_same "$(bar_labels 0)" "0.00 0.01 0.02 0.03 0.04 0.05 " "cells all 0: distinct bar labels ($(bar_labels 0))"

# ---- the report numbers -----------------------------------------------------------------------

V=$T/plasticity.numbers
plast_summary() { # output, inputs...
    local out=$1
    shift
    bin/qk-summary --section plasticity --input registry=$REG --input benchmarks=$BENCH "$@" \
        --param heatmaps="01=ministral3-14b 02=qwen3-14b 03=llama3.2-3b 04=llama3.2-11b" \
        --param profiles="05=ministral3-3b 06=qwen3-4b 07=llama3.2-3b" --param weights=08=qwen3-14b \
        --param heatmap_scale=shared --output "$out"
}
run plast_summary "$V" --input report="$X/model_report.csv" --input pair2d="$X/model_pair2d.csv" \
    --input weights="$X/head_component_weights.csv" --input profile="$X/head_bucket_plasticity.csv" \
    --input joint="$JOINT"
expect_status 0 "qk-summary --section plasticity"
expect_same "$(number "$V" plasticity.models) $(number "$V" plasticity.families)" "6 3" \
    "six models in three families"
# (the figure keeps 4 decimals of the share)
expect_same "$(awk -v r="$(number "$V" plasticity.fig08.share_low_pct)" \
    -v s="$(key 08 'share in coordinates 0 to d/2 - 1')" 'BEGIN { d = r / 100 - s; print (d < 0 ? -d : d) <= 5e-5 }')" \
    1 "report half share equals the figure's"
r10=$(key 10 'Pearson r (AP_drop, LongBench-Pro)')
expect_same "$(printf '%.3f' "$(number "$V" plasticity.lbp.r_drop)")" "$r10" "report r equals the figure's"
expect_same "$(grep -c '^row	plasticity.smollm3	' "$V")" 3 "SmolLM3 table: three checkpoints"
expect_same "$(number "$V" plasticity.smollm3.base_label) $(number "$V" plasticity.smollm3.lc_checkpoints)" \
    "S3-4.72M 1" "end of pre-training and long-context checkpoints"
# the spread of the head lines at the start = awk over the head profiles
want=$(awk -F, '$1 == "ministral3-3b" && $9 != "nan" { b = $5; n[b]++; s[b] += $9; q[b] += $9 * $9
        if (lo == "" || b < lo) lo = b; if (b > hi) hi = b }
    END { for (b = lo; b <= hi; b++) if (n[b] >= 2) {
            sd = sqrt((q[b] - s[b] * s[b] / n[b]) / (n[b] - 1))
            if (int(5 * (b - lo) / (hi - lo)) == 0) { f += sd; nf++ } else { r += sd; nr++ } }
          printf "%.8f %.8f", f / nf, r / nr }' "$X/head_bucket_plasticity.csv")
expect_same "$(printf '%.8f %.8f' "$(number "$V" plasticity.fig05.spread_first)" \
    "$(number "$V" plasticity.fig05.spread_rest)")" "$want" "spread of the head lines = awk ($want)"
# the correlation of the two halves of the component weights = awk
want=$(awk -F, '$1 == "qwen3-14b" { c = $5; s[c] += $7; n[c]++; if (c + 1 > d) d = c + 1 }
    END { h = d / 2; for (i = 0; i < h; i++) { x = s[i] / n[i]; y = s[i + h] / n[i + h]
            sx += x; sy += y; sxx += x * x; syy += y * y; sxy += x * y }
          printf "%+.6f", (sxy - sx * sy / h) / sqrt((sxx - sx * sx / h) * (syy - sy * sy / h)) }' \
    "$X/head_component_weights.csv")
expect_same "$(printf '%+.6f' "$(number "$V" plasticity.fig08.half_r)")" "$want" "half_r = awk ($want)"
# the section renders; its verdicts follow the numbers
figure_flags "$T/figures.numbers" $(for n in $FIGS; do printf 'attention-plasticity/%s ' "$n"; done) ||
    bad "figure flags"
render_section() { # numbers file
    bin/qk-report --template templates/sections/plasticity.html.in --output "$T/section.html" \
        --values "$1" --values "$T/figures.numbers"
}
run render_section "$V"
expect_status 0 "the section renders"
# the heatmaps' text says what FIG_HEATMAP_SCALE made of their colour scales
if tr '\n' ' ' < "$T/section.html" | grep -q "The four figures share one colour scale" &&
   ! grep -q "has its own colour range" "$T/section.html"; then ok; else
    bad "shared heatmap scale: the text says the four share one"; fi
sed 's/^\(value\tplasticity.heatmap_scale_shared\t[^\t]*\t\)1/\10/' "$V" > "$T/own.numbers"
run render_section "$T/own.numbers"
if grep -q "Each figure has its own colour range" "$T/section.html" &&
   ! tr '\n' ' ' < "$T/section.html" | grep -q "The four figures share"; then ok; else
    bad "own heatmap scales: the text says each has its own"; fi
run render_section "$V"
if grep -q '09_smollm3_trajectory/figure.png' "$T/section.html" && ! grep -q 'class="absent"' "$T/section.html"; then
    ok; else bad "full section shows every figure"; fi
verb=$(awk -v a="$(number "$V" plasticity.smollm3.lc_first)" -v b="$(number "$V" plasticity.smollm3.base_first)" \
    'BEGIN { print (a > b ? "rises" : "falls") }')
if tr '\n' ' ' < "$T/section.html" | grep -q "AP<sub>first 20&nbsp;%</sub> $verb from"; then ok; else
    bad "near-position verdict follows the numbers ($verb)"; fi
# a model without a finite ap_overall (its heads had no kept bin) is no extreme
first=$(awk -F, 'NR == 2 { print $1 }' "$X/model_report.csv")
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ap_overall") c = i }
    NR == 2 { $c = "nan" } { print }' "$X/model_report.csv" > "$T/nan_report.csv"
run plast_summary "$T/nan.numbers" --input report="$T/nan_report.csv"
expect_status 0 "qk-summary with a model without ap_overall"
want=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "ap_overall") c = i; next }
    $c != "nan" && (lo == "" || $c < lo) { lo = $c; m = $1 } END { print m }' "$T/nan_report.csv")
got=$(awk -F'\t' -v m="$want" 'FILENAME == ARGV[1] { if ($1 == m) label = $4; next }
    $1 == "value" && $2 == "plasticity.ap.low_model" { print ($4 == label ? "ok" : $4) }' "$REG" "$T/nan.numbers")
expect_same "$got" ok "the lowest ap_overall is that of $want, among the models with one (not $first)"
run plast_summary "$T/none.numbers"
expect_status 0 "qk-summary --section plasticity without studies"
expect_same "$(number "$T/none.numbers" plasticity.lbp.r_drop) $(grep -c '^row' "$T/none.numbers")" "missing 0" \
    "missing values and tables without rows"
expect_same "$(number "$T/none.numbers" plasticity.fig05.model)" "Ministral-3-3B" \
    "a figure's model is named without its data"
figure_flags "$T/figures.numbers" || bad "no figure flags"
run render_section "$T/none.numbers"
expect_status 0 "the section renders without studies"
if ! grep -q '<img' "$T/section.html" && grep -q 'class="absent"' "$T/section.html"; then ok; else
    bad "without studies: no image shown, a note instead"; fi
expect_same "$(fixed_keys "$V" | tr '\n' ' ')" "$(fixed_keys "$T/none.numbers" | tr '\n' ' ')" \
    "the same keys with and without the studies"


# ---- the extra models against the published RULER scores ----------------------------------

EV=$T/extra.numbers
extra_summary() { # output, inputs...
    local out=$1
    shift
    bin/qk-summary --section extra --input registry=$REG --input benchmarks=$BENCH "$@" --output "$out"
}
run extra_summary "$EV" --input report="$E/model_report.csv" --input profile="$E/model_bucket_plasticity.csv"
expect_status 0 "qk-summary --section extra"
expect_same "$(number "$EV" extra.models) $(number "$EV" extra.scored) $(number "$EV" extra.heads)" "2 2 8"     "two extra models with RULER scores, four heads each"
# AP at a RULER length = awk: the mean of the profile bins whose centre lies in [L/2, L)
ap_at() { # model, length
    awk -F, -v m="$1" -v L="$2" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $c["model"] == m && $c["ap"] != "nan" { x = $c["bin_centre"]
            if (x >= (L <= 8192 ? 0 : L / 2) && x < L) { s += $c["ap"]; n++ } }
        END { if (n) printf "%.10f", s / n; else print "missing" }' "$E/model_bucket_plasticity.csv"
}
for l in 16384:l16k 32768:l32k 131072:l128k; do
    want=$(ap_at llama3.1-8b "${l%%:*}")
    got=$(number "$EV" "extra.aplen.llama3.1-8b.${l#*:}")
    expect_same "$([ "$got" = missing ] && echo missing || printf '%.10f' "$got")" "$want" \
        "Llama-3.1-8B AP at ${l%%:*} = awk over its profile bins ($want)"
done
expect_same "$(printf '%.3f' "$(number "$EV" extra.aplen.llama3.1-8b.l32k)") / 87.2" \
    "$(key 11 'Llama-3.1-8B at 32K: AP / RULER (published)')" "figure 11 shows the report's AP and the published score"
expect_same "$(number "$EV" extra.aplen.mistral-v0.2-7b.l64k) $(number "$EV" extra.ruler.mistral-v0.2-7b.l64k)" \
    "missing 49" "Mistral-7B-v0.2 at 64K: a published score, no AP beyond its 32K captures"
expect_same "$(number "$EV" extra.truncated.label) $(number "$EV" extra.truncated.context) $(number "$EV" extra.truncated.lengths_beyond) $(number "$EV" extra.truncated.ruler_last)" \
    "Mistral-7B-v0.2 32K 2 13.800000000000001" "the truncated case: Mistral-7B-v0.2, 2 RULER lengths beyond 32K"
expect_same "$(number "$EV" extra.covered.label) $(number "$EV" extra.covered.length_last)" "Llama-3.1-8B 128K" \
    "the covered case: Llama-3.1-8B up to 128K"
# the change as the page prints it: a true minus sign, one decimal
want=$(awk -v a="$(number "$EV" extra.covered.ap_first)" -v b="$(number "$EV" extra.covered.ap_last)" \
    'BEGIN { printf "%+.1f", 100 * (b - a) / a }' | sed 's/-/\xe2\x88\x92/')
expect_same "$(typeset_value "$EV" extra.covered.ap_change_pct)" "$want" "AP change of the covered model = awk ($want)"
figure_flags "$T/figures.numbers" attention-plasticity/11 || bad "figure flags"
run bin/qk-report --template templates/sections/extra.html.in --output "$T/extra.html" \
    --values "$EV" --values "$T/figures.numbers"
expect_status 0 "the extra section renders"
verdict=$(awk -v r="$(number "$EV" extra.covered.ruler_change_pct)" -v a="$(number "$EV" extra.covered.ap_change_pct)" \
    'BEGIN { print (r < 0 && a < 0) ? "both fall with length" : (r < 0) ? "the benchmark score falls with length but plasticity does not" : (a < 0) ? "plasticity falls with length but the benchmark score does not" : "neither falls with length" }')
if tr '\n' ' ' < "$T/extra.html" | grep -qF "$verdict"; then ok; else bad "the verdict follows the numbers ($verdict)"; fi
if grep -q '11_extra_models_ruler/figure.png' "$T/extra.html" && tr '\n' ' ' < "$T/extra.html" | sed "s/<[^>]*>//g" | grep -qF "RULER also scores it at 2 longer lengths"; then
    ok; else bad "the section shows figure 11 and the truncation case"; fi
run extra_summary "$T/extra-none.numbers"
expect_status 0 "qk-summary --section extra without the extra study"
figure_flags "$T/figures.numbers" || bad "no figure flags"
run bin/qk-report --template templates/sections/extra.html.in --output "$T/extra.html" \
    --values "$T/extra-none.numbers" --values "$T/figures.numbers"
expect_status 0 "the extra section renders without the extra study"
if ! grep -q '<img' "$T/extra.html" && grep -q 'class="absent"' "$T/extra.html"; then ok; else
    bad "without the extra study: a note instead of numbers"; fi

finish
