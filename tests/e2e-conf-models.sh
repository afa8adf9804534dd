#!/bin/bash
# End to end: models the registry lacks, described by their qkreport.conf,
# through `make report DATA=...` in a copy of the tree. A model of the
# cross-model study with its own family and label, and a SmolLM3-3B
# checkpoint between two registered ones (its label from the conf, no
# family): the summaries and figures use the conf's family, label and
# context length (the run's registry, build/sets/registry.tsv), the
# checkpoint is in training order, a changed conf label reaches the report,
# and a complete build is up to date for make -q.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

tree_under e2e-conf-models
synth() { # dataset, heads, [folder]
    bin/qk-synth --quiet --out "$T/synth" --dataset "$1" --heads "$2" --seed 5 || bad "qk-synth $1"
    mkdir -p "$D" && mv "$T/synth/$1" "$D/${3:-$1}"
}
synth qwen3-0.6b 3
synth qwen3-0.6b 3 my-model
synth smollm3-3b-stage1-step-40000 3
synth smollm3-3b-stage1-step-1200000 3 smollm3-3b-stage1-step-80000
synth smollm3-3b-lc-4k-to-32k-step-4000 3
own_model_conf "$D/my-model/qkreport.conf" My-Model-0.6B
cat > "$D/smollm3-3b-stage1-step-80000/qkreport.conf" <<'CONF'
study = smollm3_training_progress
label = S1-80K
n_layers = 36
n_q_heads = 16
n_kv_heads = 4
head_dim = 128
rope_theta = 50000
context_length = 4096
bucket_size = 256
CONF

tree_make() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TREE" --no-print-directory -j2 "$@"; }
run tree_make report DATA="$D"
expect_status 0 "make report with two models described by qkreport.conf"

# the run's registry: the registry's rows and the two conf rows, the
# checkpoint in training order with the family of its model
expect_same "$(awk -F'\t' '$1 ~ /^smollm3-3b-stage1-step-(40000|80000|1200000)$/ { print $1 }' \
    "$TREE/build/sets/registry.tsv" | tr '\n' ' ')" \
    "smollm3-3b-stage1-step-40000 smollm3-3b-stage1-step-80000 smollm3-3b-stage1-step-1200000 " \
    "the run's registry holds the conf checkpoint in training order"
expect_same "$(awk -F'\t' '$1 == "my-model" { print $2 "/" $3 "/" $4 "/" $13 }' "$TREE/build/sets/registry.tsv")" \
    "attention_plasticity/mine/My-Model-0.6B/131072" "the run's registry row of the conf model"

# the tables: the checkpoint in training order, of the smollm3 family; the
# model of its own family
expect_same "$(cut -d, -f1,2 "$TREE/results/smollm3_training_progress/model_summary.csv" | tr '\n' ' ')" \
    "model,family stage1-step-40000,smollm3 stage1-step-80000,smollm3 lc-4k-to-32k-step-4000,smollm3 " \
    "the SmolLM3 rotation summary: training order, family smollm3"
expect_same "$(awk -F, 'NR > 1 && $1 == "my-model" { print $2 }' "$TREE/results/rotation/model_summary.csv")" \
    "mine" "the conf model's family in the rotation summary"

# the report and the figures: the conf label, the last checkpoint's context
page=$(sed 's/<[^>]*>//g' "$TREE/report/index.html" | tr '\n' ' ')
for want in "from S1-40k to LC1-4k" "My-Model-0.6B"; do
    if [[ "$page" == *"$want"* ]]; then ok; else bad "the report says '$want'"; fi
done
if [[ "$page" == *"to n/a tokens"* ]]; then bad "the report knows the checkpoint's context"; else ok; fi
expect_same "$(awk -F'\t' '$1 == "smollm3-3b-stage1-step-80000" { print $2 "/" $4 }' \
    "$TREE/build/report/inventory.tsv")" "S1-80K/smollm3" "the inventory: the conf label, family smollm3"
expect_same "$(awk -F'\t' '$1 ~ /r_q \(PC0\)/ { sub(/,.*/, "", $1); print $1 }' \
    "$TREE"/figures/qk-pca/07_*/numbers.tsv | tr '\n' ' ')" "S1-40k S1-80K LC1-4k " \
    "figure qk-pca/07: the checkpoints in training order, by label"

run tree_make -q report DATA="$D"
expect_status 0 "make -q after the complete build"

# a new label in the conf reaches the report
sed -i 's/^label = My-Model-0.6B$/label = Mine-0.6B/' "$D/my-model/qkreport.conf"
run tree_make report DATA="$D"
expect_status 0 "make report after the conf's label changed"
if grep -q "Mine-0.6B" "$TREE/report/index.html" && ! grep -q "My-Model-0.6B" "$TREE/report/index.html"; then
    ok; else bad "the report takes the conf's new label"; fi

# a label of any printable text: HTML, Markdown, LaTeX and gnuplot specials,
# quotes and a percent sign reach every output escaped for it, and are drawn
# or typeset as written
conf=$D/my-model/qkreport.conf
set_label() { sed -i '/^label = /d' "$conf" && printf 'label = %s\n' "$1" >> "$conf"; }
odd='<b>My&"'"'"'5%$_{a}#^~\'
set_label "$odd"
run bin/qk-load --check-conf "$conf"
expect_status 0 "qk-load --check-conf takes a label of printable text"
expect_out_lines 0 "qk-load --check-conf says nothing of a right conf"
run tree_make report DATA="$D"
expect_status 0 "make report with a label of HTML, Markdown, LaTeX and gnuplot specials"
expect_same "$(awk -F'\t' '$1 == "my-model" { print $4 }' "$TREE/build/sets/registry.tsv")" "$odd" \
    "the run's registry holds the label as written"
html='&lt;b&gt;My&amp;&quot;'"'"'5%$_{a}#^~\'
if grep -qF -- "$html" "$TREE/report/index.html"; then ok; else bad "the report page holds the label HTML-escaped"; fi
if grep -qF -- "<b>My" "$TREE/report/index.html"; then bad "the report page holds the label's tags as tags"; else ok; fi
if iconv -f UTF-8 -t UTF-8 "$TREE/report/index.html" "$TREE/report/numbers.tex" > /dev/null; then ok
else bad "the report page and numbers.tex are UTF-8"; fi
tex='\textless{}b\textgreater{}My\&"'"'"'5\%\$\_\{a\}\#\textasciicircum{}\textasciitilde{}\textbackslash{}'
if grep -qF -- "$tex" "$TREE"/report/tables/*.tex; then ok; else bad "a table fragment holds the label LaTeX-escaped"; fi
if grep -qF -- '<b>My' "$TREE"/report/numbers.tex "$TREE"/report/tables/*.tex; then
    bad "a LaTeX file holds the label unescaped"; else ok; fi
md='\<b>My&"'"'"'5%\$\_{a}#^\~\\'
if grep -qF -- "it holds Qwen3-0.6B, $md. " "$TREE"/figures/attention-plasticity/01_*/README.md; then ok
else bad "figure attention-plasticity/01's README holds the label Markdown-escaped"; fi
# the figures: gnuplot reads the label in inline data and in a tic list as
# written (a quote as \042, the enhanced-text markup escaped, '%' doubled
# where gnuplot reads a format); every figure was drawn (make's status)
gp='"<b>My\\&\042'"'"'5%$\\_\\{a\\}#\\^\\~\\\\"'
if grep -qF -- " $gp " "$TREE"/figures/inventory/01_*/figure.gp; then ok
else bad "the inventory figure's data hold the label escaped for gnuplot"; fi
if grep -qF -- "${gp/5%/5%%}" "$TREE"/figures/qk-rotation/02_*/figure.gp; then ok
else bad "figure qk-rotation/02's tic list holds the label escaped for gnuplot"; fi
run gnuplot -d -e 'set terminal pngcairo; set output "/dev/null"' "$(echo "$TREE"/figures/inventory/01_*/figure.gp)"
expect_status 0 "gnuplot draws the inventory figure's script"
expect_same "$(cat "$e2e_err")" "" "gnuplot has no warning on the inventory figure's script"

# a conf line that is wrong stops make with one line naming the conf and
# the line, before any stage (and qk-load --check-conf says the same)
set_label "$(printf 'My\tModel')"
run bin/qk-load --check-conf "$conf"
expect_status 2 "qk-load --check-conf on a label with a tab"
expect_error_lines "qk-load --check-conf: one line" \
    "qk-load: error: $conf: line 11: label holds a control character"
run tree_make report DATA="$D"
expect_status 2 "make report with a label with a tab"
if grep -qF -- "$conf: line 11: label holds a control character" "$e2e_err" &&
   ! grep -q "qk-plot\|registry.tsv" "$e2e_err"; then ok
else bad "make names the conf and its line, no later step"; fi
set_label "$(printf 'caf\xe9')"
run bin/qk-load --check-conf "$conf"
expect_error_lines "qk-load --check-conf: a label not in UTF-8" \
    "qk-load: error: $conf: line 11: label is not valid UTF-8"
run tree_make report DATA="$D"
expect_status 2 "make report with a label not in UTF-8"
if grep -qxF -- "make: $conf: line 11: label is not valid UTF-8" "$e2e_err"; then ok
else bad "make names the conf and its line as it names every refused input"; fi
# a label is at most 20 characters (figures draw it in legends and on axes),
# counted as characters, not bytes
set_label "$(printf 'M%.0s' $(seq 21))"
run bin/qk-load --check-conf "$conf"
expect_error_lines "qk-load --check-conf: a label of 21 characters" \
    "qk-load: error: $conf: line 11: label is longer than 20 characters (figures draw it in legends and on axes)"
set_label "$(printf 'Ü%.0s' $(seq 20))"
run bin/qk-load --check-conf "$conf"
expect_status 0 "qk-load --check-conf takes a label of 20 characters in 40 bytes"
# a model without a label is labelled by its folder's name, shortened in the middle
printf 'study = extra\n' > "$T/nolabel.conf"
expect_same "$(awk -v ids=smollm3-3b-stage1-step-80000 -f workflow/run-registry.awk workflow/datasets.tsv \
    "$T/nolabel.conf" | awk -F'\t' '$1 == "smollm3-3b-stage1-step-80000" { print $4 }')" \
    "smollm3-3…step-80000" "a long folder name as the label: 20 characters, shortened in the middle"
set_label "Mine-0.6B"

# without the conf model the run's registry is the registry's rows again, and
# the figures that stay (the SmolLM3 ones) name it as it is now
run tree_make report DATA="$D" DATASETS="qwen3-0.6b smollm3-3b-stage1-step-40000 smollm3-3b-stage1-step-80000 smollm3-3b-lc-4k-to-32k-step-4000"
expect_status 0 "make report without the conf model"
run tree_make report DATA="$D" DATASETS="qwen3-0.6b smollm3-3b-stage1-step-40000 smollm3-3b-lc-4k-to-32k-step-4000"
expect_status 0 "make report without either conf dataset"
expect_same "$(awk -F'\t' '$1 == "registry" { print $2, $3 }' "$TREE"/figures/qk-pca/07_*/inputs.tsv)" \
    "build/sets/registry.tsv $(stat -c %s workflow/datasets.tsv)" \
    "figure qk-pca/07 names the run's registry as it is, the registry's rows alone"

finish
