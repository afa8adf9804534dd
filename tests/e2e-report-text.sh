#!/bin/bash
# End to end: what the report's text says fits the run. Tiny synthetic runs
# (one head a dataset, twenty examples) in a copy of the tree, each a
# `make report` with other datasets or parameters: a threshold that removes
# every plasticity bin, one model or one family, a few heads; the page says
# what the values support, counts of one in the singular, and
# tests/numbers-check.py and tests/style-check.py pass on each page.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

tree=build/tests/tmp/report-text
copy_tree "$tree"
D=$tree/tiny
run bin/qk-synth --out "$D" --quiet --heads 1 --examples 20 --dataset llama3.2-3b --dataset qwen3-4b \
    --dataset smollm3-3b-stage1-step-40000 --dataset smollm3-3b-lc-4k-to-32k-step-4000 \
    --dataset llama3.1-8b
expect_status 0 "qk-synth writes the tiny datasets"
DATA=$(cd "$D" && pwd)

# report ARGS...: make report in the tree; $text is the page as plain text
# (tags dropped, one line), $R the report folder
R=$tree/report
report() {
    run make -C "$tree" --no-print-directory -j2 DATA="$DATA" report "$@"
    expect_status 0 "make report $*"
    text=$(sed 's/<[^>]*>//g' "$R/index.html" | tr '\n' ' ' | tr -s ' ')
    run python3 tests/numbers-check.py "$R" templates/report.html.in templates/sections/*.html.in workflow/figures.rec
    expect_status 0 "$*: the page and numbers.tex agree"
    run python3 tests/style-check.py page "$R" --numbers "$tree"/build/report/*.numbers
    expect_status 0 "$*: a space before every percent sign, one format per quantity ($(head -c 300 "$e2e_out"))"
    run python3 tests/style-check.py figures "$tree/figures"
    expect_status 0 "$*: the figures' text in the house style ($(head -c 300 "$e2e_out"))"
}
says() { # text, name
    if [[ "$text" == *"$1"* ]]; then ok; else bad "$2: the page says '$1'"; fi
}
says_not() { # text, name
    if [[ "$text" != *"$1"* ]]; then ok; else bad "$2: the page does not say '$1'"; fi
}
canvas() { # figure folder glob, text
    local f
    f=$(ls -d "$tree"/figures/$1 2> /dev/null | head -1)
    if [ -n "$f" ] && grep -q '^drawn	no' "$f/numbers.tsv" && grep -qF -- "$2" "$f/numbers.tsv"; then ok
    else bad "figure $1 is a canvas saying '$2'"; fi
}

# ---- no plasticity bin or heatmap cell reaches its threshold ---------------------------
report PLAST_MIN_PAIRS=100000000 PLAST_PAIR2D_MIN=100000000
says "No model has a profile here: no query bin of any head reached the minimum number of eligible key pairs" \
    "no profile"
says_not "models the profile ends lower than it starts" "no profile: no count of falling profiles"
says "Here no cell of any model holds a value: none reached the minimum number of evaluations of the plasticity stage (PLAST_PAIR2D_MIN)." \
    "no heatmap cell"
says_not "and the range of the cells:" "no heatmap cell: no list of cells"
says "No model has an APdrop in this run" "no AP_drop by family"
says "2 models of this run have a published LongBench-Pro overall score (taken from the benchmark's publication, not computed here), but none has an APdrop" \
    "a published score without AP_drop"
says_not "For the 0 models" "no correlation over no model"
says "so there is no plasticity to set against the bias." "SmolLM3 without plasticity"
says_not "comes with recovered plasticity" "SmolLM3 without plasticity: no verdict"
says_not "falls from n/a" "SmolLM3 without plasticity: no change from n/a"
says_not "goes from n/a at n/a" "the extra model's scores without AP"
canvas 'attention-plasticity/03_*' "was analysed in this run, but no heatmap cell (key distance, query distance) of it reached the minimum of the plasticity stage (PLAST_PAIR2D_MIN evaluations)"
canvas 'attention-plasticity/07_*' "was analysed in this run, but no query bin of it reached the minimum of the plasticity stage (PLAST_MIN_PAIRS eligible key pairs)"
canvas 'attention-plasticity/10_*' "have both a published LongBench-Pro score and an AP_drop"
canvas 'attention-plasticity/11_*' "no query bin reached the minimum of the plasticity stage (PLAST_MIN_PAIRS eligible key pairs)"
canvas 'attention-plasticity/06_*' "Qwen3-4B (dataset qwen3-4b) was analysed in this run, but no query bin"
if grep -qE 'Choose (the|a) model|the parameter PLAST_FIG' "$tree"/figures/attention-plasticity/0[367]_*/numbers.tsv; then
    bad "no canvas blames the model parameter for a threshold"; else ok; fi

# section_with NAME SECTION NUMBERS FLAGS KEY=VALUE...: templates/sections/
# SECTION.html.in rendered from NUMBERS with those values set (KEY?=VALUE:
# only where the value is missing) into $tree/NAME.html; its text (no tags,
# one line) in section_text
section_with() {
    local name=$1 section=$2 numbers=$3 flags=$4
    shift 4
    awk -F'\t' -v OFS='\t' -v sets="$*" '
        BEGIN { n = split(sets, s, " ")
                for (i = 1; i <= n; i++) {
                    at = index(s[i], "="); key = substr(s[i], 1, at - 1)
                    if (key ~ /\?$/) fill[substr(key, 1, length(key) - 1)] = substr(s[i], at + 1)
                    else set[key] = substr(s[i], at + 1) } }
        $1 == "value" && ($2 in set) { $4 = set[$2] }
        $1 == "value" && ($2 in fill) && $4 == "" { $4 = fill[$2] }
        { print }' "$numbers" > "$tree/$name.numbers"
    run bin/qk-report --template "templates/sections/$section.html.in" --output "$tree/$name.html" \
        --values "$tree/$name.numbers" --values "$flags"
    section_text=$(sed 's/<[^>]*>//g' "$tree/$name.html" | tr '\n' ' ' | tr -s ' ')
}

# ---- two heads pooled: no correlation (it needs three heads), none to compare -----------
report
says "bias strength and separation strength are correlated with r = n/a. No family has a correlation of its own here" \
    "two heads: no pooled r"
says_not "Every family's correlation has the sign of the pooled one" "two heads: nothing to compare"
f07=$(ls -d "$tree"/figures/qk-rotation/07_*)
expect_same "$(grep -c '^pooled Pearson r (bias_strength, separation_strength)	n/a (2 heads)$' "$f07/numbers.tsv")" 1 \
    "figure qk-rotation/07: no pooled r over two heads"
expect_same "$(grep -c '+n/a' "$f07/numbers.tsv")" 0 "figure qk-rotation/07: a missing r is 'n/a', not '+n/a'"
# a fan ratio just below the rule (0.184 against 0.124: 1.484) reads below it on the page
P=$tree/build/report/plasticity.numbers
figure_flags "$tree/flags-07.numbers" attention-plasticity/07 || bad "figure flags"
section_with fan plasticity "$P" "$tree/flags-07.numbers" plasticity.fig07.spread_first=0.184 \
    plasticity.fig07.spread_rest=0.124 plasticity.fig07.fan_ratio=1.484 plasticity.fig07.ap_first?=0.5
expect_status 0 "the plasticity section with a fan ratio of 1.484"
fan=$section_text
if [[ "$fan" == *"do not fan out at the start (spread 0.184 there against 0.124 further on, 1.48 times)"* ]]; then
    ok; else bad "a fan ratio of 1.484 shows as 1.48 beside 'do not fan out'"; fi
# the share of heads with a recency bias and its count have one base, the heads with a value
R3=$tree/build/report/rotation.numbers
figure_flags "$tree/flags-none.numbers" || bad "figure flags"
section_with base rotation "$R3" "$tree/flags-none.numbers" rotation.heads=10 \
    rotation.bias.positive_count=5 rotation.bias.defined_count=8 rotation.bias.positive_pct=62.5
expect_status 0 "the rotation section with 8 of 10 heads with a bias"
base=$section_text
if [[ "$base" == *"bias strength &gt; 0 in 62.5&nbsp;% of the heads with a value (5 of 8; 10 heads in all)"* ]]; then
    ok; else bad "the recency share and its count over the same heads"; fi
expect_same "$(number "$R3" rotation.bias.defined_count)" "$(number "$R3" rotation.heads)" \
    "every head of the tiny run has a bias: the base is all heads"

# ---- one dataset a study: one model, one family, one checkpoint ------------------------
# no range from a value to itself, no count of one in the plural
degenerate() { # the ranges of the page that start and end at the same value
    python3 -c 'import re, sys
t = sys.stdin.read()
for m in re.finditer(r"from (\S+(?: \([^)]*\))?) to \1(?![\w.])|smallest for (\S+ \([^)]*\)) and largest for \2", t):
    print(m.group(0))' <<< "$text"
}
plural_one() { grep -oE '(^|[^0-9.,])1 (heads|models|checkpoints|families|lengths)\b' <<< "$text"; }
report DATASETS="qwen3-4b smollm3-3b-stage1-step-40000 llama3.1-8b"
expect_same "$(degenerate)" "" "one model: no range from a value to itself"
expect_same "$(plural_one)" "" "one model: no count of one in the plural"
says "the model's mean of bias strength &times; L (L the context length captured) is" "one model: bias times L"
says "The APdrop of the model, Qwen3-4B, is" "one model: its AP_drop"
says "The mean APdrop of the family, Qwen3, is" "one family: its mean AP_drop"
says "The one SmolLM3-3B checkpoint of this run, S1-40k," "one checkpoint"
# (and every head too short for the PCA: the checkpoints are in the run, their heads skipped)
report DATASETS="llama3.2-3b smollm3-3b-stage1-step-40000 smollm3-3b-lc-4k-to-32k-step-4000" PCA_MAX_ROWS=5
says "The SmolLM3-3B checkpoints of this run were loaded, but the PCA skipped all their heads" \
    "SmolLM3 heads all skipped by the PCA"
says_not "The SmolLM3-3B checkpoints are not in this run." "SmolLM3 heads skipped: the checkpoints are in the run"
expect_same "$(degenerate)" "" "one pre-training checkpoint: no range from a value to itself"
expect_same "$(plural_one)" "" "one pre-training checkpoint: no count of one in the plural"
says "At the one pre-training checkpoint, S1-40k, the bias strength is" "one pre-training checkpoint"
says "At the one long-context checkpoint, LC1-4k, it is" "one long-context checkpoint"

# ---- an extra model without published RULER scores: no empty tables --------------------
sed -i '/\truler\t/d' "$tree/workflow/benchmarks.tsv"
report DATASETS="llama3.1-8b"
says "No extra model of this run has published per-length RULER scores" "no RULER scores"
says_not "The published RULER scores by context length" "no RULER scores: no table of them"
if grep -q '<th>4K</th>' "$R/index.html"; then bad "no RULER scores: no header of a length table"; else ok; fi

finish
