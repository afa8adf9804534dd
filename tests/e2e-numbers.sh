#!/bin/bash
# End to end: the report page and report/numbers.tex hold the same numbers.
# A small pipeline run in a copy of the tree (two models with figures of
# every study, one SmolLM3 checkpoint before and one after the long-context
# extension, one extra model shown by figure attention-plasticity/05), then
# tests/numbers-check.py: every value of the page is in
# numbers.tex with the same value, no number of the page comes from
# anywhere else, every table fragment is a booktabs tabular; the same with
# the values times 1e60 and 1e-60, shown as powers of ten. The check is
# also shown to fail on a changed value, a stray number and a bad line.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

tree=build/tests/tmp/numbers
copy_tree "$tree"
sets="llama3.2-3b qwen3-4b smollm3-3b-stage3-step-4720000 smollm3-3b-lc-4k-to-32k-step-4000 llama3.1-8b"
run make -C "$tree" --no-print-directory -j2 DATASETS="$sets" SCALE=demo PLAST_FIG05_MODEL=llama3.1-8b report
expect_status 0 "make report on five datasets"
R=$tree/report
for f in index.html numbers.tex numbers.md tables/pca-models.tex tables/rotation-models.tex \
         tables/plasticity-models.tex tables/plasticity-deciles.tex tables/plasticity-quintiles.tex \
         tables/plasticity-smollm3.tex; do
    if [ -s "$R/$f" ]; then ok; else bad "report/$f written"; fi
done
check() { python3 tests/numbers-check.py "$1" templates/report.html.in templates/sections/*.html.in workflow/figures.rec; }
run check "$R"
expect_status 0 "the page and numbers.tex agree"
expect_out ": ok" "the check reports no problem"
n=$(grep -o 'data-qk="' "$R/index.html" | wc -l)
if [ "$n" -ge 500 ]; then ok; else bad "the page marks its values ($n)"; fi
# every image the page shows exists (a figure the run does not draw is left out)
missing=$(grep -oE '(src|srcset)="\.\./figures/[^"]*"' "$R/index.html" | sed 's/^[a-z]*="\.\.\///; s/"$//' |
    while read -r f; do [ -f "$tree/$f" ] || echo "$f"; done)
expect_same "$missing" "" "every image of the page exists"
# a figure is flagged drawn exactly when it is drawn with data, not as the
# canvas that says what it lacks (its key numbers: "drawn no")
flags=$(awk -F'\t' '$1 == "value" && $3 == "flag" { print $2, $4 }' "$tree/build/report/figures.numbers")
canvas_flags=""
for f in "$tree"/figures/*/*/numbers.tsv; do
    dir=${f%/numbers.tsv}
    id=$(basename "$(dirname "$dir")").$(basename "$dir" | cut -d_ -f1)
    want=1
    grep -q '^drawn	no' "$f" && want=0 && canvas_flags="$canvas_flags $id"
    expect_same "$(echo "$flags" | awk -v k="figure.$id" '$1 == k { print $2 }')" "$want" \
        "the flag of figure $id says whether its README shows it drawn ($want)"
done
case "$canvas_flags" in *attention-plasticity.01*) ok ;; *) bad "figure attention-plasticity/01 is a canvas" ;; esac
# a figure whose model the run lacks (attention-plasticity/01, Ministral-3-14B) is not
# shown; the page says so in place and links its README (the canvas)
fig01=$(basename "$(ls -d "$tree"/figures/attention-plasticity/01_*)")
if ! grep -q "figures/attention-plasticity/$fig01/figure" "$R/index.html" &&
   grep -q "<p class=\"absent\">(Figure 4.1 is not drawn in this run: <a href=\"../figures/attention-plasticity/$fig01/README.md\">" \
       "$R/index.html"; then ok; else bad "figure 4.1, whose model the run lacks, is said to be not drawn"; fi
if grep -q 'data-qk="plasticity.fig01.model"' "$R/index.html"; then
    bad "the numbers of a figure not drawn (attention-plasticity/01) are left out"; else ok; fi
# the model of figure 05 is an extra model (not of the cross-model study): the
# report quotes its numbers, those of its study's table
want=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next } $1 == "llama3.1-8b" { print $c["ap_drop"] }' \
    "$tree/results/extra/model_report.csv")
expect_same "$(number "$tree/build/report/plasticity.numbers" plasticity.fig05.ap_drop)" "$want" \
    "figure 05's model from the extra study: AP_drop of results/extra ($want)"
text=$(sed 's/<[^>]*>//g' "$R/index.html" | tr '\n' ' ' | tr -s ' ')
if [[ "$text" == *"Llama-3.1-8B: no plasticity values"* ]]; then
    bad "the report says figure 05's model has no values"; else ok; fi
# a figure drawn with data whose number is missing: the page takes neither branch of a rule
figure_flags "$tree/flags-08.numbers" attention-plasticity/08 || bad "figure flags"
sed 's/^\(value\tplasticity\.fig08\.half_r\t[^\t]*\t\)[^\t]*/\1/' "$tree/build/report/plasticity.numbers" > "$tree/no-r.numbers"
run bin/qk-report --template templates/sections/plasticity.html.in --output "$tree/no-r.html" \
    --values "$tree/no-r.numbers" --values "$tree/flags-08.numbers"
expect_status 0 "the plasticity section with figure 08 drawn and no half_r"
no_r=$(sed 's/<[^>]*>//g' "$tree/no-r.html" | tr '\n' ' ' | tr -s ' ')
if [[ "$no_r" == *"r = n/a: whether the two halves mirror each other cannot be said without a value"* &&
      "$no_r" != *"do not mirror"* ]]; then ok; else bad "r = n/a is no verdict on the two halves"; fi
# two SmolLM3 checkpoints: each named once, no third one, no change from a
# checkpoint to itself; the scatter grid's caption counts its two
if [[ "$text" != *"At the next checkpoint,"* && "$text" != *"at these three checkpoints"* &&
      "$text" != *"from S3-4.72M to S3-4.72M"* && "$text" != *"from LC1-4k to LC1-4k"* &&
      "$text" == *"against rk at its 2 checkpoints,"* ]]; then ok; else
    bad "the SmolLM3 text fits its two checkpoints"; fi
# counts of one are singular
if [[ "$text" == *"This run analyses 1 extra model (24 query heads), which has published per-length RULER scores."* &&
      "$text" != *" 1 extra models"* ]]; then ok; else bad "one extra model is one model"; fi
# the keys the thesis examples use exist
for key in pca.pc0.ev_mean_pct rotation.bias.positive_pct plasticity.llama3.2-3b.ap_drop \
           inventory.heads_total; do
    if grep -q "^\\\\qkdef{$key}{" "$R/numbers.tex"; then ok; else bad "numbers.tex defines $key"; fi
    if grep -qF "| \`$key\` |" "$R/numbers.md"; then ok; else bad "numbers.md lists $key"; fi
done
# every value names its exact source: each key with a value has a source line
# whose columns, rows and aggregation are the section's own words (no
# fallback such as "see the section"; rows "-" only for a parameter)
N=$tree/build/report
for f in pca rotation plasticity extra inventory figures run; do
    unsourced=$(awk -F'\t' '$1 == "value" && $4 != "" { v[$2] = 1 } $1 == "source" { delete v[$2] }
        END { for (k in v) print k }' "$N/$f.numbers" | head -3)
    expect_same "$unsourced" "" "every value of $f.numbers has a source"
    vague=$(awk -F'\t' '$1 == "source" && ($4 == "" || $4 == "-" || $6 == "" || $6 == "-" ||
        ($5 == "-" && $3 !~ /^build\/params\//) || /see the section/) { print $2 }' "$N/$f.numbers" | head -3)
    expect_same "$vague" "" "every source of $f.numbers names its columns, rows and aggregation"
done
if grep -q "see the section" "$R/numbers.md" "$R/numbers.html"; then
    bad "no source in numbers.md or numbers.html says 'see the section'"; else ok; fi
# source FILE KEY FIELD: a field of a key's source (3 table, 4 columns, 5 rows, 6 aggregation)
source_of() { awk -F'\t' -v k="$2" -v i="$3" '$1 == "source" && $2 == k { print $i }' "$N/$1.numbers"; }
expect_same "$(source_of rotation rotation.bias.positive_pct 4)" "bias_strength" \
    "the share of heads with a recency bias is computed from bias_strength"
expect_same "$(source_of rotation rotation.bias.positive_pct 3)" "results/rotation/rotated.csv" \
    "the share of heads with a recency bias is computed from the per-head table"
case "$(source_of rotation rotation.bias.positive_pct 6)" in
    *"bias_strength > 0"*) ok ;; *) bad "the bias share's aggregation names bias_strength > 0" ;; esac
expect_same "$(source_of rotation rotation.bias.model_max_x1e3 4)" "mean_bias_strength" \
    "the highest model bias is read from mean_bias_strength"
expect_same "$(source_of rotation rotation.complement.active_tau 3)" \
    "build/params/rotation-complement.txt" "the activity threshold is the run's parameter"
expect_same "$(source_of inventory inventory.heads_total 4)/$(source_of inventory inventory.heads_total 6)" \
    "q_heads/sum" "the heads of all datasets are the sum of q_heads"
expect_same "$(source_of plasticity plasticity.models_falling 4)" "ap_first_20pct, ap_last_20pct" \
    "the falling profiles compare ap_first_20pct and ap_last_20pct"
case "$(source_of plasticity plasticity.lbp.r_drop 3)" in
    *model_report.csv*benchmarks.tsv*) ok ;; *) bad "the LongBench-Pro r names both of its tables" ;; esac
expect_same "$(source_of extra extra.heads 4)" "n_heads" "the extra study's heads are summed from n_heads"
case "$(source_of figures figure.qk-pca.01 3)" in
    *figure-list.txt) ok ;; *) bad "a figure flag comes from qk-plot --list" ;; esac
# the parts of the run: SmolLM3 compared across the extension, figures of every study shown
if [[ "$text" == *"At the one long-context checkpoint, LC1-4k, it is"* ]] &&
   grep -q 'data-qk="plasticity.smollm3.lc_first_label">LC1-4k<' "$R/index.html"; then ok; else
    bad "the SmolLM3 comparison is shown (one long-context checkpoint)"; fi
# extreme magnitudes (vectors scaled by 1e30 or 1e-30): the numbers of fixed
# decimals times 1e60 and 1e-60 are powers of ten with three significant
# digits, on the page as in numbers.tex and the tables, and the check passes
for s in 1e60 1e-60; do
    S=$tree/scaled-$s
    mkdir -p "$S/tables"
    for f in pca rotation plasticity extra inventory; do
        awk -F'\t' -v OFS='\t' -v s=$s '$1 == "value" && $4 != "" && $3 ~ /^(number|ratio|signed|change|percent|fraction)/ {
            $4 = sprintf("%.17g", s * $4) } { print }' "$tree/build/report/$f.numbers" > "$S/$f.numbers"
    done
    run bin/qk-report --template templates/report.html.in --output "$S/index.html" \
        --numbers-tex "$S/numbers.tex" --numbers-md "$S/numbers.md" \
        --latex-table rotation.models="$S/tables/rotation-models.tex" \
        --latex-table pca.models="$S/tables/pca-models.tex" \
        $(for f in pca rotation plasticity extra inventory; do echo "--values $S/$f.numbers"; done) \
        --values "$tree/build/report/figures.numbers" --values "$tree/build/report/source.tsv" \
        --values "$tree/build/report/blas.tsv" --table parameters="$tree/build/report/parameters.tsv" \
        --values "$tree/build/params/rebuild.tsv" --values "$tree/build/report/run.numbers" \
        --set suite_version=test
    expect_status 0 "the report of the values times $s"
    run check "$S"
    expect_status 0 "times $s: the page and numbers.tex agree"
    # pca.pc0.mu_q_abs (number.1) and rotation.rk_mean (number.3) as awk writes them
    for key in pca.pc0.mu_q_abs rotation.rk_mean; do
        power=$(awk -v x="$(number "$S/${key%%.*}.numbers" "$key")" \
            'BEGIN { split(sprintf("%.2e", x), p, "e"); print p[1], p[2] + 0 }')
        want="${power% *}×10<sup>${power#* }</sup>"
        want=${want//-/−}
        got=$(grep -o "data-qk=\"$key\">[^/]*/sup>" "$S/index.html" | head -1)
        expect_same "${got#*>}" "$want" "times $s: $key on the page is $want (${got#*>})"
        want="\\qkdef{$key}{\\ensuremath{${power% *}\\times10^{${power#* }}}}"
        expect_same "$(grep -F "\\qkdef{$key}{" "$S/numbers.tex")" "$want" "times $s: $key in numbers.tex ($want)"
    done
done
# the check fails on a value that differs, a number from elsewhere and a line that is no \qkdef
B=$tree/broken
mkdir -p "$B/tables"
breaks() { # name, sed program for numbers.tex, sed program for index.html
    cp "$R/numbers.tex" "$R/index.html" "$B/" && cp "$R"/tables/*.tex "$B/tables/"
    sed -i "$2" "$B/numbers.tex"
    sed -i "$3" "$B/index.html"
    run check "$B"
    expect_status 1 "$1"
}
breaks "a value that differs" 's/^\\qkdef{inventory.heads_total}{.*}$/\\qkdef{inventory.heads_total}{7}/' ''
expect_out "page value inventory.heads_total is" "the check names the value"
breaks "a number typed into the page" '' 's|<h2>2. Combined QK PCA</h2>|<h2>2. Combined QK PCA (4711 heads)</h2>|'
expect_out "number 4711 on the page" "the check names the number"
breaks "a line of numbers.tex that is no \\qkdef" 's/^\\qkdef{pca.models}{\(.*\)}$/\\qkdef{pca.models}{\1} % 11/' ''
breaks "a key defined twice" '$a \\qkdef{pca.models}{11}' ''
finish
