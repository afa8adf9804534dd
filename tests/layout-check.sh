#!/bin/bash
# tests/layout-check.sh [RUN|PAGE...]: every figure of the report as the page shows
# it. Headless Chromium opens a copy of the page (report/index.html) at a
# 1400 px window with tests/layout-check.js added, which puts each figure's
# SVG inline at the width the page gives the figure and measures the
# rendered box of every text: it fails naming the figure and the texts on
# two texts that overlap (a colour bar's label over its tick labels among
# them), a key sample that runs into another entry's text,
# a text that leaves the canvas, and text (a subscript too) whose capitals are under 7 px
# tall (docs/figure-style.md, "Layout").
#
# Without arguments, first checks that the check can fail (planted: a page
# of planted bad figures, and the same figure drawn right, which must
# pass), then the page of three runs (or those named; a PAGE, a file, is
# checked as it is):
#   demo     report/index.html of this tree (make report);
#   thesis   a copy of the tree, make report SCALE=thesis on three datasets
#            (LAYOUT_THESIS_DATASETS);
#   partial  a copy of the tree, make report on a partial download (4 of
#            llama3.2-1b's query heads and their key heads), and the same
#            heads as a model of the user's whose label is as long as a
#            label may be.
# The findings of each page are kept in build/layout/NAME.txt, the display
# and text sizes of its figures in build/layout/NAME-sizes.txt.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

out=build/layout
mkdir -p "$out"
LAYOUT_THESIS_DATASETS=${LAYOUT_THESIS_DATASETS:-qwen3-0.6b smollm3-3b-stage1-step-40000 smollm3-3b-lc-4k-to-32k-step-4000}

# measure PAGE NAME: the check page build/layout/NAME.html (the page with a
# <base> at its folder and the check script), its DOM after the check in
# NAME.dom.html, the findings one a line in NAME.txt and the sizes in
# NAME-sizes.txt. Returns 1 if the check did not finish.
measure() {
    local page=$1 name=$2 profile base script
    base="file://$(realpath "$(dirname "$page")")/"
    script="file://$(realpath tests/layout-check.js)"
    sed -e "s|<head>|<head><base href=\"$base\">|" \
        -e "s|</body>|<script src=\"$script\"></script></body>|" "$page" > "$out/$name.html"
    profile=$(mktemp -d)
    chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
        --disable-component-update --disable-sync --user-data-dir="$profile" \
        --allow-file-access-from-files --virtual-time-budget=60000 --window-size=1400,1000 \
        --dump-dom "file://$(realpath "$out/$name.html")" > "$out/$name.dom.html" 2> "$out/$name.log"
    rm -rf "$profile"
    grep -q 'data-layout="done' "$out/$name.dom.html" || return 1
    items() {
        grep -o "<li class=\"layout-$1\">[^<]*" "$out/$name.dom.html" | sed 's/^<li[^>]*>//' |
            sed 's/&quot;/"/g; s/&lt;/</g; s/&gt;/>/g; s/&amp;/\&/g'
    }
    items problem > "$out/$name.txt"
    items size > "$out/$name-sizes.txt"
    return 0
}

# check_page PAGE NAME: the page's figures pass the check (each finding is a
# failure of its own, so all are listed).
check_page() {
    local page=$1 name=$2 figures
    : > "$e2e_err" # a finding is no program's error: bad shows no stderr with it
    if ! measure "$page" "$name"; then
        bad "$name: the layout check did not finish on $page (see $out/$name.log)"
        return
    fi
    figures=$(grep -o 'data-layout="done [0-9]*"' "$out/$name.dom.html" | grep -o '[0-9]*')
    if [ "${figures:-0}" -ge 1 ]; then ok; else bad "$name: the page shows no figure"; fi
    if [ -s "$out/$name.txt" ]; then
        while IFS= read -r line; do bad "$name: $line"; done < "$out/$name.txt"
    else
        ok
    fi
}

# The planted figures: one drawn badly in each way the check knows, one
# drawn right, on a page of the report's markup (as qk-report writes it).
planted() {
    local T=build/tests/tmp/layout-planted
    rm -rf "$T" && mkdir -p "$T/report"
    draw() { # folder, gnuplot commands
        mkdir -p "$T/figures/test/$1"
        gnuplot -d -e "set terminal svg size 1200,500 font 'DejaVu Sans,10' enhanced fontscale 1.3333;
            set output '$T/figures/test/$1/figure.svg'; $2;
            set terminal pngcairo size 1200,500 font 'DejaVu Sans,10' enhanced;
            set output '$T/figures/test/$1/figure.png'; replot" || bad "gnuplot draws the planted $1"
    }
    local plot="set xrange [0:10]; set yrange [0:1]; set ylabel 'share of the heads'; set xlabel 'layer';
        plot x / 10 title 'Llama-3.2-1B', x / 20 title 'Qwen3-0.6B'"
    draw 01_right "set key top left; $plot"
    draw 02_overlap "set label 'Llama-3.2-1B' at 5, 0.5; set label 'Qwen3-0.6B' at 5.3, 0.5; $plot"
    draw 03_outside "set label 'runs out of the canvas' at screen 0.97, 0.5; $plot"
    draw 04_small "set label 'tiny note' at 5, 0.5 font ',4'; $plot"
    draw 05_key "set key horizontal width -6 at screen 0.5, 0.95 center; $plot"
    draw 06_small_png "set label 'tiny note' at 5, 0.5 font ',4'; $plot"
    # a colour bar's label over its tick labels
    # a text of readable size whose subscript is not
    draw 08_subscript "set label 'share_{/*0.4 tiny subscript}' at 5, 0.5; $plot"
    draw 07_colorbar "set cblabel 'Attention plasticity' offset -4.5, 0; set cbrange [0:1];
        plot [0:10] [0:1] '+' using 1:(\$1 / 10):(\$1 / 10) with points pt 7 lc palette notitle"
    {
        echo '<!DOCTYPE html><html><head><meta charset="utf-8"><style>body { max-width: 72rem; margin: 2rem auto; padding: 0 1rem; } figure { margin: 1rem 0; }</style></head><body>'
        for f in 01_right 02_overlap 03_outside 04_small 05_key 07_colorbar 08_subscript; do
            echo "<figure><a href=\"../figures/test/$f/README.md\"><picture><source srcset=\"../figures/test/$f/figure.svg\" type=\"image/svg+xml\"><img src=\"../figures/test/$f/figure.png\" alt=\"\" width=\"100%\"></picture></a><figcaption>Figure 9.${f:1:1}. Planted.</figcaption></figure>"
        done
        # a figure the page shows as its PNG: checked for text size alone
        echo '<figure><a href="../figures/test/06_small_png/README.md"><img src="../figures/test/06_small_png/figure.png" alt="" width="100%"></a><figcaption>Figure 9.6. Planted.</figcaption></figure>'
        echo '</body></html>'
    } > "$T/report/index.html"
    if ! measure "$T/report/index.html" planted; then
        bad "planted: the layout check did not finish (see $out/planted.log)"
        return
    fi
    local found=$out/planted.txt
    expect_found() { # pattern, name
        if grep -qE -- "$1" "$found"; then ok; else bad "the check finds $2"; cat "$found" >&2; fi
    }
    expect_found '^test/02 \(figure 9\.2\): text "Llama-3\.2-1B" overlaps "Qwen3-0\.6B"' "two texts that overlap"
    expect_found '^test/03 \(figure 9\.3\): text "runs out of the canvas" leaves the canvas' "a text out of the canvas"
    expect_found '^test/04 \(figure 9\.4\): text [0-9.]+ px tall \(capitals\).*"tiny note"' "text too small"
    expect_found '^test/05 \(figure 9\.5\): the key sample of "Llama-3\.2-1B" overlaps text "Qwen3-0\.6B"' "key entries that run into each other"
    expect_found '^test/06 \(figure 9\.6\): text [0-9.]+ px tall' "text too small in a figure shown as its PNG"
    expect_found '^test/07 \(figure 9\.7\): text "0\.[0-9]" overlaps "Attention plasticity"' "a colour bar's label over its tick labels"
    expect_found '^test/08 \(figure 9\.8\): text [0-9.]+ px tall \(capitals\).*"tiny subscript"' "a subscript too small"
    if grep -q '^test/01 ' "$found"; then bad "the figure drawn right passes ($(grep '^test/01 ' "$found" | head -1))"; else ok; fi
    if grep -q '^test/0[24] .*leaves\|^test/06 .*overlaps' "$found"; then
        bad "the check reports only what is wrong ($(grep '^test/0[24] .*leaves\|^test/06 .*overlaps' "$found" | head -1))"
    else
        ok
    fi
}

# make_report NAME MAKE-ARGS...: make report in a copy of the tree; sets TREE.
make_report() {
    local name=$1
    shift
    tree_under "layout-$name"
    run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TREE" --no-print-directory -j2 report "$@"
    expect_status 0 "$name: make report $*"
}

thesis() {
    make_report thesis SCALE=thesis DATASETS="$LAYOUT_THESIS_DATASETS"
    check_page "$TREE/report/index.html" thesis
}

# the partial download: 4 query heads of llama3.2-1b and their key heads
partial() {
    tree_under layout-partial
    mkdir -p "$T/synth" "$D"
    bin/qk-synth --quiet --out "$T/synth" --dataset llama3.2-1b --seed 5 || bad "qk-synth llama3.2-1b"
    mv "$T/synth/llama3.2-1b" "$D/"
    local keep q
    keep=$(cd "$D/llama3.2-1b" && ls -d l*q | head -4)
    for q in $(cd "$D/llama3.2-1b" && ls -d l*q); do
        grep -qx "$q" <<< "$keep" || rm -rf "${D:?}/llama3.2-1b/$q"
    done
    # beside it, the same heads as a model of the user's with a label of
    # the most characters a label may have (include/qk/registry.h)
    cp -r "$D/llama3.2-1b" "$D/my-model"
    printf '%s\n' "study = attention_plasticity" "family = llama" "label = DeepSeek-R1-Qwen1.5B" \
        "n_layers = 16" "n_q_heads = 32" "n_kv_heads = 8" "head_dim = 64" "rope_theta = 500000" \
        "context_length = 131072" "bucket_size = 8192" > "$D/my-model/qkreport.conf"
    run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TREE" --no-print-directory -j2 report DATA="$D"
    expect_status 0 "partial: make report on 4 heads of llama3.2-1b and a model of 20-character label"
    check_page "$TREE/report/index.html" partial
}

[ $# -eq 0 ] && set -- planted demo thesis partial
for what in "$@"; do
    case $what in
    planted | thesis | partial) "$what" ;;
    demo) check_page report/index.html demo ;;
    *) check_page "$what" "$(basename "$(dirname "$(dirname "$(realpath "$what")")")")" ;;
    esac
done
finish
