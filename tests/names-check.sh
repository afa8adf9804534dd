#!/bin/bash
# tests/names-check.sh browser|latex: a report of awkward names, as a reader
# sees it. In a copy of the tree, `make report DATA=<a folder with a space,
# quotes and a non-ASCII letter>` over a model of our own whose label holds
# HTML, LaTeX and gnuplot specials (its qkreport.conf) and a partial download
# (4 of llama3.2-1b's query heads and their key heads); then
#   browser  the page in headless Chromium (tests/browser-check.sh): it loads,
#            every image shows, and the label, the folder and the partial
#            download read as written;
#   latex    the thesis example compiled from that report (make
#            thesis-example): pdflatex succeeds and the label reads as
#            written in the PDF's text.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh
mode=${1:-browser}
tree_under "names-check-$mode"
D="$D/down loads 'x' ü"
label='<b>My</b> & "M" 5%$'

synth() { # dataset, folder, [heads]
    bin/qk-synth --quiet --out "$T/synth" --dataset "$1" ${3:+--heads "$3"} --seed 5 || bad "qk-synth $1"
    mkdir -p "$D" && mv "$T/synth/$1" "$D/$2"
}
synth qwen3-0.6b my-model 3
own_model_conf "$D/my-model/qkreport.conf" "$label"
# the partial download: 4 query heads of llama3.2-1b and their key heads
synth llama3.2-1b llama3.2-1b
keep=$(cd "$D/llama3.2-1b" && ls -d l*q | head -4)
for q in $(cd "$D/llama3.2-1b" && ls -d l*q); do
    grep -qx "$q" <<< "$keep" || rm -rf "${D:?}/llama3.2-1b/$q"
done

run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TREE" --no-print-directory -j2 report DATA="$D"
expect_status 0 "make report with a DATA folder of awkward names"
n_heads=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == "llama3.2-1b" { print $c["q_heads"] }' "$TREE/build/report/inventory.tsv")
expect_same "$n_heads" 4 "the partial download holds 4 query heads"

case $mode in
browser)
    run tests/browser-check.sh "$TREE/report/index.html"
    expect_status 0 "the page of awkward names passes the browser check"
    dom=build/browser/dom.html
    # the label is text, not markup: escaped in the DOM, no <b> element of it
    html_label='&lt;b&gt;My&lt;/b&gt; &amp; "M" 5%$'
    if grep -qF -- "$html_label" "$dom" && ! grep -qF '<b>My</b>' "$dom"; then ok; else
        bad "the page shows the label as written"; fi
    if grep -qF "down loads 'x' ü" "$dom"; then ok; else bad "the page names the DATA folder as written"; fi
    if grep -qE '[0-9]+ of [0-9]+ captured configs' "$dom"; then ok; else
        bad "the page says the partial download lacks configs"; fi
    ;;
latex)
    run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TREE" --no-print-directory thesis-example DATA="$D"
    expect_status 0 "the thesis example of a report of awkward names compiles"
    pdftotext -layout "$TREE/report/thesis-example.pdf" "$T/example.txt" 2>/dev/null
    if tr -s ' \n' '  ' < "$T/example.txt" | grep -qF "<b>My</b> & "; then ok; else
        bad "the thesis example shows the label as written"; fi
    ;;
esac
finish
