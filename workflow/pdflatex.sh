#!/bin/bash
# pdflatex.sh [--root DIR] TEX BUILD_DIR PDF: compiles TEX with pdflatex, run
# from the repository root (or DIR, the stage that holds report/ and figures/
# before they are published) so that the document finds report/ and
# figures/ as a thesis beside them would, twice (the second pass resolves the cross
# references), with its auxiliary files and log in BUILD_DIR (emptied
# first); then writes PDF atomically. A LaTeX error (an unknown \qk key, a
# missing figure or table) stops the run, and so does a reference or
# citation still undefined after the second pass: the message, with the file
# and line, goes to stderr, the status is 2 and PDF is left as it was.
# The PDF is dated SOURCE_DATE_EPOCH (default 0) with FORCE_SOURCE_DATE=1;
# with \pdftrailerid{} in the document the same sources give the same bytes.
set -u
root=.
if [ "${1:-}" = --root ]; then
    root=$2
    shift 2
fi
if [ $# -ne 3 ]; then
    echo "usage: workflow/pdflatex.sh [--root DIR] TEX BUILD_DIR PDF" >&2
    exit 1
fi
tex=$1 dir=$2 pdf=$3
if [ "$root" != . ]; then
    tex=$(realpath -m "$tex") dir=$(realpath -m "$dir") pdf=$(realpath -m "$pdf")
    cd "$root" || exit 2
fi
name=$(basename "$tex" .tex)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0} FORCE_SOURCE_DATE=1
# log lines unbroken (TeX wraps them at 79 characters by default)
export max_print_line=10000
rm -rf "$dir" && mkdir -p "$dir" || exit 2
for pass in 1 2; do
    if ! pdflatex -interaction=nonstopmode -halt-on-error -file-line-error \
            -output-directory="$dir" "$tex" < /dev/null > "$dir/pass$pass.out" 2>&1; then
        # -file-line-error: the error line reads "FILE:LINE: message"
        where=$(grep -m1 -E '^[^ ]+:[0-9]+: ' "$dir/$name.log")
        echo "pdflatex: error: ${where:-$tex: pdflatex failed (see $dir/$name.log)}" >&2
        exit 2
    fi
done
undefined=$(grep -m1 -E "(Reference|Citation) \`[^']*' on page [0-9]+ undefined" "$dir/$name.log")
if [ -n "$undefined" ]; then
    echo "pdflatex: error: $tex: ${undefined#LaTeX Warning: }" >&2
    exit 2
fi
cp "$dir/$name.pdf" "$pdf.tmp" && mv -f "$pdf.tmp" "$pdf" || { rm -f "$pdf.tmp"; exit 2; }
