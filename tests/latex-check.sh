#!/bin/bash
# tests/latex-check.sh TEX BUILD_DIR PDF FIGURE_PDF... (make check-latex):
# the thesis example TEX, already compiled by workflow/pdflatex.sh into PDF
# with its log in BUILD_DIR, and the figure PDFs of every figure of
# workflow/figures.rec.
#   - the log holds no error and no undefined reference or citation; every
#     \qk key of TEX is defined by report/numbers.tex; PDF has 3 to 7 pages (its text and five figures)
#     and embeds all its fonts;
#   - the check can fail: copies of TEX with an unknown \qk key, a missing
#     figure and an undefined reference are each refused;
#   - with the numbers of a run of one SmolLM3 checkpoint, the text says one;
#   - a second compilation gives the same bytes;
#   - every figure PDF is a one-page PDF with its fonts embedded, under
#     2 MB; two figures drawn again by qk-plot from their inputs give the
#     same PNG, SVG and PDF bytes.
# Needs pdfinfo and pdffonts (poppler-utils, `sh workflow/deps.sh latex`).
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

if [ $# -lt 4 ]; then
    echo "usage: tests/latex-check.sh TEX BUILD_DIR PDF FIGURE_PDF..." >&2
    exit 1
fi
tex=$1 build=$2 pdf=$3
shift 3
name=$(basename "$tex" .tex)
T=build/tests/tmp/latex-check
rm -rf "$T" && mkdir -p "$T"

# The lines of a pdflatex log that make a build unacceptable: errors
# (-file-line-error "FILE:LINE: ..." or "! ..."), undefined references and
# citations, labels that would need another pass.
log_problems() { # log
    grep -E '^! |^[^ ]+:[0-9]+: |Error:|[Uu]ndefined references|Reference `[^'\'']*'\'' on page [0-9]+ undefined|Citation `[^'\'']*'\'' .*undefined|Label\(s\) may have changed|Rerun to get' "$1"
}

# ---- the example ---------------------------------------------------------------------
log=$build/$name.log
if [ -s "$log" ] && [ -s "$pdf" ]; then ok; else bad "$pdf and its log $log exist"; fi
problems=$(log_problems "$log")
expect_same "$problems" "" "the log of $name has no error and no undefined reference: $problems"

# every key the example uses is one numbers.tex defines (LaTeX stops at the
# first unknown one; this names them all)
# (the keys of the text: comments and \verb|...| left out)
text_keys() { sed 's/\\verb|[^|]*|//g; s/\(^\|[^\\]\)%.*/\1/' "$tex" | grep -o '\\qk{[^}]*}'; }
unknown=$(text_keys | sed 's/^\\qk{//; s/}$//' | sort -u |
    while read -r key; do
        grep -qF "\\qkdef{$key}{" report/numbers.tex || echo "$key"
    done)
expect_same "$unknown" "" "every \\qk key of $tex is in report/numbers.tex: $unknown"
n_keys=$(text_keys | sort -u | wc -l)
if [ "$n_keys" -ge 50 ]; then ok; else bad "the example quotes $n_keys keys (expected at least 50)"; fi
# and the files it includes exist (each a fragment of report/tables/ or a figure PDF)
for f in $(grep -oE '\\(fragment|includegraphics(\[[^]]*\])?)\{[^}]*\}' "$tex" | sed 's/.*{//; s/}$//'); do
    case $f in
    report/tables/*.tex | figures/*/figure.pdf) [ -s "$f" ] && ok || bad "$tex includes $f, which is missing" ;;
    *) bad "$tex includes $f, neither a table fragment nor a figure PDF" ;;
    esac
done

pages=$(pdfinfo "$pdf" 2> /dev/null | awk '$1 == "Pages:" { print $2 }')
if [ "${pages:-0}" -ge 3 ] && [ "$pages" -le 7 ]; then ok; else bad "$pdf has ${pages:-no} pages (3 to 7)"; fi
# pdffonts: the "emb" column is the fifth from the end
fonts_embedded() { # pdf -> "N" fonts, all embedded, or the names of those that are not
    pdffonts "$1" 2> /dev/null | awk 'NR > 2 { n++; if ($(NF - 4) != "yes") bad = bad " " $1 }
        END { if (bad != "") print "not embedded:" bad; else print n + 0 }'
}
fonts=$(fonts_embedded "$pdf")
if [ "$fonts" -ge 1 ] 2> /dev/null; then ok; else bad "$pdf: fonts: $fonts"; fi

# ---- the check can fail -----------------------------------------------------------------
# a copy with one change, compiled like the example: the status of
# pdflatex.sh and the problems of its log
compile_copy() { # label, sed expression
    sed "$2" "$tex" > "$T/$1.tex"
    if cmp -s "$tex" "$T/$1.tex"; then bad "$1: the change applies to $tex"; fi
    run workflow/pdflatex.sh "$T/$1.tex" "$T/$1-build" "$T/$1.pdf"
}
compile_copy unknown-key 's/\\qk{pca\.heads}/\\qk{no.such.key}/'
expect_status 2 "a copy with \\qk{no.such.key} fails"
expect_one_line_naming "$T/unknown-key.tex" "Unknown number key \`no.such.key'" \
    "the unknown key: one line naming the file and the key"
expect_missing "$T/unknown-key.pdf" "no PDF from a document with an unknown key"
if [ -n "$(log_problems "$T/unknown-key-build/unknown-key.log")" ]; then ok; else
    bad "the log check finds the unknown key"; fi

compile_copy missing-figure 's|figures/qk-pca/05_explained_variance/figure.pdf|figures/qk-pca/05_no_such_figure/figure.pdf|'
expect_status 2 "a copy with a missing figure fails"
expect_one_line_naming "$T/missing-figure.tex" "File \`figures/qk-pca/05_no_such_figure/figure.pdf' not found" \
    "the missing figure: one line naming it"

compile_copy undefined-ref 's|Figure~\\ref{fig:pca-variance}|Figure~\\ref{fig:no-such-label}|'
expect_status 2 "a copy with an undefined reference fails"
expect_one_line_naming "$T/undefined-ref.tex" "Reference \`fig:no-such-label' on page" \
    "the undefined reference: one line naming it"
if log_problems "$T/undefined-ref-build/undefined-ref.log" | grep -qF "Reference \`fig:no-such-label' on page"; then
    ok; else bad "the log check finds the undefined reference"; fi

# ---- one SmolLM3 checkpoint ----------------------------------------------------------------
# numbers of a run with one checkpoint (one long-context one): the text says
# one, and compares nothing across training
sed -e 's/^\\qkdef{rotation\.t\.checkpoints}{[^}]*}/\\qkdef{rotation.t.checkpoints}{1}/' \
    -e 's/^\\qkdef{plasticity\.smollm3\.lc_checkpoints}{[^}]*}/\\qkdef{plasticity.smollm3.lc_checkpoints}{1}/' \
    report/numbers.tex > "$T/numbers-one.tex"
compile_copy one-checkpoint "s|\\input{report/numbers.tex}|\\input{$T/numbers-one.tex}|"
expect_status 0 "the example with one SmolLM3 checkpoint compiles"
one_text=$(pdftotext "$T/one-checkpoint.pdf" - 2> /dev/null | tr '\n' ' ')
if [[ "$one_text" == *"This run has one checkpoint of SmolLM3-3B"* &&
      "$one_text" == *"across its one checkpoint"* && "$one_text" == *"at the one long"* &&
      "$one_text" != *" 1 checkpoints"* && "$one_text" != *"bias strength changes from"* ]]; then ok; else
    bad "one checkpoint: said to be one, nothing compared across training"; fi

# ---- the report's rules (\qkif on \qkraw values) -------------------------------------------
# numbers whose comparisons and flags go the other way: the text follows them
sed -e 's/^\\qkrawdef{rotation\.rk_mean}{[^}]*}/\\qkrawdef{rotation.rk_mean}{0.5}/' \
    -e 's/^\\qkrawdef{rotation\.rq_mean}{[^}]*}/\\qkrawdef{rotation.rq_mean}{0.9}/' \
    -e 's/^\\qkrawdef{rotation\.t\.peak_last}{[^}]*}/\\qkrawdef{rotation.t.peak_last}{1}/' \
    -e 's/^\\qkrawdef{figure\.attention-plasticity\.05}{[^}]*}/\\qkrawdef{figure.attention-plasticity.05}{0}/' \
    -e 's/^\\qkrawdef{plasticity\.lbp\.models}{[^}]*}/\\qkrawdef{plasticity.lbp.models}{0}/' \
    -e 's/^\\qkdef{pca\.heads}{[^}]*}/\\qkdef{pca.heads}{n\/a}/' \
    report/numbers.tex > "$T/numbers-rules.tex"
compile_copy rules "s|\\input{report/numbers.tex}|\\input{$T/numbers-rules.tex}|"
expect_status 0 "the example with the rules turned compiles"
rules_text=$(pdftotext "$T/rules.pdf" - 2> /dev/null | tr '\n' ' ')
normal_text=$(pdftotext "$pdf" - 2> /dev/null | tr '\n' ' ')
for want in "queries follow position more closely than the keys" "does not fall after it" \
            "No model of this run has both a published" \
            "This run has no dataset of the cross-model study."; do
    if [[ "$rules_text" == *"$want"* && "$normal_text" != *"$want"* ]]; then ok; else
        bad "the rules turned: the text says '$want' (and the example as built does not)"; fi
done
# the PDF names the run its numbers come from (the id of report/run.tsv)
run_id=$(awk -F'\t' '$1 == "run_id" { print $3 }' report/run.tsv)
if [ -n "$run_id" ] && [[ "$normal_text" == *"run $run_id"* ]]; then ok; else
    bad "the example names the run its numbers come from (run ${run_id:-?} of report/run.tsv)"; fi
if [[ "$rules_text" != *"shows the profile of"* && "$normal_text" == *"shows the profile of"* ]]; then
    ok; else bad "the rules turned: no word of plasticity figure 05 when it is not drawn"; fi
compile_copy unknown-raw 's/\\qkraw{rotation\.rk_mean}/\\qkraw{no.such.key}/'
expect_status 2 "a copy with \\qkraw{no.such.key} fails"
if grep -qF "Package qk Error: no key no.such.key" "$T/unknown-raw-build/unknown-raw.log"; then
    ok; else bad "the unknown \\qkraw key is named in the log"; fi

# ---- reproducible ---------------------------------------------------------------------
run workflow/pdflatex.sh "$tex" "$T/again-build" "$T/again.pdf"
expect_status 0 "the example compiles a second time"
if cmp -s "$pdf" "$T/again.pdf"; then ok; else bad "two compilations of $name give different bytes"; fi

# ---- the figure PDFs ----------------------------------------------------------------------
rows=$(awk -f workflow/figures.awk -v emit=ids workflow/figures.rec | wc -l)
expect_same "$#" "$rows" "a figure PDF for each of the $rows figures of workflow/figures.rec ($# given)"
sizes=()
for f in "$@"; do
    if [ ! -s "$f" ]; then bad "$f is missing"; continue; fi
    p=$(pdfinfo "$f" 2> /dev/null | awk '$1 == "Pages:" { print $2 }')
    [ "$p" = 1 ] && ok || bad "$f: not a one-page PDF (pages: ${p:-none})"
    fonts=$(fonts_embedded "$f")
    if [ "$fonts" -ge 1 ] 2> /dev/null; then ok; else bad "$f: fonts: $fonts"; fi
    size=$(stat -c %s "$f")
    [ "$size" -lt 2000000 ] && ok || bad "$f: $size bytes (2 MB at most)"
    sizes+=("$size")
done
if [ ${#sizes[@]} -gt 0 ]; then
    printf '%s\n' "${sizes[@]}" | sort -n | awk '{ s[NR] = $1; t += $1 }
        END { printf "figure PDFs: %d, %.0f kB to %.0f kB (median %.0f kB), %.1f MB in all\n",
              NR, s[1] / 1000, s[NR] / 1000, s[int((NR + 1) / 2)] / 1000, t / 1e6 }'
fi

# two figures drawn again from the inputs their inputs.tsv records
redraw() { # study/NN_name
    local dir=figures/$1 id args=() input file
    id=${1%%_*}
    while IFS=$'\t' read -r input file _; do
        case $file in
        *" (not made by this run)") args+=(--absent "$input=${file% (not made by this run)}") ;;
        *) args+=(--input "$input=$file") ;;
        esac
    done < <(tail -n +2 "$dir/inputs.tsv")
    # (a figure lacking an input is a canvas naming the run's datasets)
    [[ " ${args[*]} " == *" --absent "* ]] && args+=(--run-datasets "${RUN_DATASETS:-}")
    run bin/qk-plot --figure "$id" --out "$T/redraw/$1" "${args[@]}" --min-share "${FIG_MIN_SHARE:-0.5}"
    expect_status 0 "qk-plot draws $1 again"
    for x in figure.pdf figure.png figure.svg; do
        cmp -s "$dir/$x" "$T/redraw/$1/$x" && ok || bad "$1/$x drawn again differs"
    done
}
redraw qk-pca/05_explained_variance
redraw qk-rotation/07_bias_vs_separation

finish
