#!/bin/bash
# qk-test: alone (it kills runs and times them: a test beside it would slow them)
# Failing writes: every program that writes a store, table, figure, report
# or archive, run with a file size limit (ulimit -f) so that its output
# cannot be written, exits with status 2 and one line naming the file and
# the error, leaves no temporary behind, and leaves the previous output
# byte for byte as it was.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

T=build/tests/tmp/e2e-writefail
rm -rf "$T" && mkdir -p "$T"

# small inputs: the sniffed-mini revision (a store of ~60 KB)
mini="$T/mini"
cp -r tests/data/sniffed-mini "$mini" && chmod -R u+w "$mini"
printf 'id = mini\nn_layers = 2\nn_q_heads = 4\nn_kv_heads = 2\nhead_dim = 16\ncontext_length = 131072\nbucket_size = 8192\n' \
    > "$mini/qkreport.conf"
run bin/qk-load --quiet "$mini" -o "$T/mini.qks" --inventory "$T/inventory.tsv"
expect_status 0 "load the mini revision"
run bin/qk-pca --quiet --output "$T/pca.tsv" --heads-output "$T/pca_heads.tsv" "$T/mini.qks"
expect_status 0 "pca of the mini revision"

# limited LIMIT_KB CMD...: runs CMD with files limited to LIMIT_KB (the
# file of its stderr too, so the limit is never below 1 KB)
limited() {
    local kb=$1
    shift
    run bash -c 'ulimit -f "$0"; exec "$@"' "$kb" "$@"
}

# fails_cleanly NAME OUTPUT: the last run failed as it must for OUTPUT,
# whose previous content was saved in OUTPUT.before
fails_cleanly() {
    expect_status 2 "$1: exit status 2"
    expect_one_line_naming "$2" "File too large" "$1: one line naming the file"
    if cmp -s "$2" "$2.before"; then ok; else bad "$1: previous output intact"; fi
    expect_no_temporaries "$(dirname "$2")" "$1: no temporary left"
}

# a store: the earlier one stays
cp "$T/mini.qks" "$T/mini.qks.before"
limited 32 bin/qk-load --quiet "$mini" -o "$T/mini.qks"
fails_cleanly "qk-load store" "$T/mini.qks"

# a table: an earlier version of the table stays
printf 'earlier\n' > "$T/pca.tsv" && cp "$T/pca.tsv" "$T/pca.tsv.before"
cp "$T/pca_heads.tsv" "$T/pca_heads.tsv.before"
limited 1 bin/qk-pca --quiet --output "$T/pca.tsv" --heads-output "$T/pca_heads.tsv" "$T/mini.qks"
fails_cleanly "qk-pca table" "$T/pca.tsv"
if cmp -s "$T/pca_heads.tsv" "$T/pca_heads.tsv.before"; then ok; else bad "qk-pca: second output intact"; fi

# a merged table
printf 'earlier\n' > "$T/merged.csv" && cp "$T/merged.csv" "$T/merged.csv.before"
limited 1 bin/qk-merge --output "$T/merged.csv" "$T/pca_heads.tsv.before" "$T/pca_heads.tsv.before"
fails_cleanly "qk-merge table" "$T/merged.csv"

# the report page
printf '<p>{{v}}</p>\n' > "$T/page.in"
printf 'v\t%s\n' "$(head -c 3000 /dev/zero | tr '\0' x)" > "$T/values.tsv"
printf 'earlier\n' > "$T/page.html" && cp "$T/page.html" "$T/page.html.before"
limited 1 bin/qk-report --template "$T/page.in" --values "$T/values.tsv" --output "$T/page.html"
fails_cleanly "qk-report page" "$T/page.html"

# a figure (gnuplot writes the PNG, SVG and PDF under the same limit)
run bin/qk-plot --figure inventory/01 --out "$T/figure" --input inventory="$T/inventory.tsv"
expect_status 0 "qk-plot draws the figure"
cp "$T/figure/figure.png" "$T/figure/figure.png.before"
cp "$T/figure/figure.pdf" "$T/figure/figure.pdf.before"
limited 8 bin/qk-plot --figure inventory/01 --out "$T/figure" --input inventory="$T/inventory.tsv"
expect_status 2 "qk-plot figure: exit status 2"
if [ "$(wc -l < "$e2e_err")" -eq 1 ] && grep -q "$T/figure" "$e2e_err"; then ok; else bad "qk-plot figure: one line naming the figure"; fi
if cmp -s "$T/figure/figure.png" "$T/figure/figure.png.before" &&
   cmp -s "$T/figure/figure.pdf" "$T/figure/figure.pdf.before"; then ok; else bad "qk-plot figure: previous figure intact"; fi
if ls -a "$T/figure" | grep -q tmp; then bad "qk-plot figure: no temporary left"; else ok; fi

# a program with several outputs whose last one cannot be put in place (a
# directory is there): none of them changes
cp "$T/pca.tsv" "$T/pca.tsv.before"
mkdir -p "$T/heads-dir"
run bin/qk-pca --quiet --output "$T/pca.tsv" --heads-output "$T/heads-dir" "$T/mini.qks"
expect_status 2 "qk-pca, second output a directory: exit status 2"
expect_one_line_naming "$T/heads-dir" "is a directory" "qk-pca, second output a directory: message"
if cmp -s "$T/pca.tsv" "$T/pca.tsv.before"; then ok; else bad "qk-pca: first output replaced"; fi
expect_no_temporaries "$T" "qk-pca, second output a directory: no temporary left"
printf 'hello {{x}}\n' > "$T/tiny.in" && printf 'x\t1\n' > "$T/tiny.tsv"
printf 'earlier\n' > "$T/tiny.html" && cp "$T/tiny.html" "$T/tiny.html.before"
run bin/qk-report --template "$T/tiny.in" --values "$T/tiny.tsv" --output "$T/tiny.html" \
    --numbers-tex "$T/heads-dir"
expect_status 2 "qk-report, numbers-tex a directory: exit status 2"
if cmp -s "$T/tiny.html" "$T/tiny.html.before"; then ok; else bad "qk-report: page replaced"; fi

# gnuplot failing on the script (here a style file with an error): one
# line with gnuplot's error, the earlier figure and its script intact; a
# style file that does not exist is named
cp "$T/figure/figure.gp" "$T/figure/figure.gp.before"
printf 'plot undefined_variable\n' > "$T/bad-style.gp"
run bin/qk-plot --figure inventory/01 --out "$T/figure" --input inventory="$T/inventory.tsv" \
    --style "$T/bad-style.gp"
expect_status 2 "qk-plot, gnuplot fails: exit status 2"
expect_one_line_naming "$T/figure" "undefined variable: undefined_variable" \
    "qk-plot, gnuplot fails: gnuplot's error in one line"
if cmp -s "$T/figure/figure.gp" "$T/figure/figure.gp.before" &&
   cmp -s "$T/figure/figure.png" "$T/figure/figure.png.before"; then ok; else
    bad "qk-plot, gnuplot fails: previous figure intact"; fi
if ls -a "$T/figure" | grep -q tmp; then bad "qk-plot, gnuplot fails: no temporary left"; else ok; fi
run bin/qk-plot --figure inventory/01 --out "$T/figure" --input inventory="$T/inventory.tsv" \
    --style "$T/no-such-style.gp"
expect_status 2 "qk-plot, missing style: exit status 2"
expect_one_line_naming "$T/no-such-style.gp" "No such file" "qk-plot, missing style: named"

# the user's ~/.gnuplot does not reach the figures (a decimal comma, a
# label, line colours): the same bytes as without it
mkdir -p "$T/home"
printf 'set decimalsign ","\nset label 99 "FROM HOME" at screen 0.5,0.5\nset linetype 1 lc rgb "#ff00ff" lw 5\n' \
    > "$T/home/.gnuplot"
run env HOME="$T/home" bin/qk-plot --figure inventory/01 --out "$T/figure-home" \
    --input inventory="$T/inventory.tsv"
expect_status 0 "qk-plot with a ~/.gnuplot"
for f in figure.png figure.svg figure.pdf; do
    if cmp -s "$T/figure-home/$f" "$T/figure/$f.before" 2>/dev/null ||
       cmp -s "$T/figure-home/$f" "$T/figure/$f"; then ok; else
        bad "qk-plot with a ~/.gnuplot: $f as without it"; fi
done
# gnuplot not on the PATH: said so in one line
mkdir -p "$T/empty-path"
run env PATH="$T/empty-path" "$PWD/bin/qk-plot" --figure inventory/01 --out "$T/figure" \
    --input inventory="$T/inventory.tsv"
expect_status 2 "qk-plot without gnuplot: exit status 2"
expect_one_line_naming "$T/figure" "cannot run gnuplot (not on the PATH?" \
    "qk-plot without gnuplot: one line saying so"

# qk-plot stopped while gnuplot draws (a gnuplot that waits): no temporary
# of the figure is left. (SIGTERM: a background job of a script ignores
# SIGINT; both go through the same handler.)
mkdir -p "$T/slow-path"
printf '#!/bin/sh\necho $$ > "%s"\nexec sleep 30\n' "$T/slow-gnuplot.pid" > "$T/slow-path/gnuplot"
chmod +x "$T/slow-path/gnuplot"
env PATH="$T/slow-path:$PATH" bin/qk-plot --figure inventory/01 --out "$T/figure-int" \
    --input inventory="$T/inventory.tsv" 2> /dev/null &
plot_pid=$!
for _ in $(seq 100); do [ -s "$T/slow-gnuplot.pid" ] && break; sleep 0.1; done
kill -TERM "$plot_pid"
wait "$plot_pid"
e2e_status=$?
kill "$(cat "$T/slow-gnuplot.pid")" 2> /dev/null
expect_status 143 "qk-plot stopped by SIGTERM"
left=$(ls -A "$T/figure-int" 2> /dev/null | grep tmp)
expect_same "$left" "" "qk-plot stopped by SIGTERM: no temporary left"

# a count that is not an integer is refused, naming the table
awk -F'\t' 'BEGIN { OFS = "\t" } NR == 1 { for (i = 1; i <= NF; i++) if ($i == "q_heads") c = i }
     NR > 1 { $c = "nan" } { print }' "$T/inventory.tsv" > "$T/inventory-nan.tsv"
run bin/qk-summary --section inventory --input inventory="$T/inventory-nan.tsv" --output "$T/inv.numbers"
expect_status 2 "qk-summary, NaN count: exit status 2"
expect_one_line_naming "$T/inventory-nan.tsv" "is not a count" "qk-summary, NaN count: message"

# an archive
mkdir -p "$T/arch/results" && cp "$T/pca.tsv.before" "$T/arch/results/pca.tsv"
head -c 300000 /dev/urandom > "$T/arch/results/noise.bin"
printf 'earlier\n' > "$T/a.tar.gz" && cp "$T/a.tar.gz" "$T/a.tar.gz.before"
limited 64 bash -c "cd '$T/arch' && exec '$PWD/bin/qk-archive' create --output ../a.tar.gz --suite-version t results"
expect_status 2 "qk-archive create: exit status 2"
if [ "$(wc -l < "$e2e_err")" -eq 1 ] && grep -q "a.tar.gz" "$e2e_err"; then ok; else bad "qk-archive: one line naming the archive"; fi
if cmp -s "$T/a.tar.gz" "$T/a.tar.gz.before"; then ok; else bad "qk-archive: previous archive intact"; fi
expect_no_temporaries "$T" "qk-archive: no temporary left"

# an output that cannot be written is refused before any work: it is named
# even when the store does not exist, so it was tried before the store
printf 'a file\n' > "$T/plain"
for prog in "bin/qk-pca --output $T/plain/pca.tsv" \
    "bin/qk-rotate --family x --checkpoint - --output $T/plain/rotation.tsv" \
    "bin/qk-complement --axes $T/a.bin --rotation $T/r.tsv --pairs-output $T/plain/pairs.tsv" \
    "bin/qk-plasticity --out-dir $T/plain"; do
    name=${prog%% *}
    run $prog --quiet "$T/missing.qks"
    expect_status 2 "$name, output under a file: exit status 2"
    expect_one_line_naming "$T/plain/" "Not a directory" "$name, output under a file: one line naming it"
done
run bin/qk-pca --quiet --output "$T/no-dir/pca.tsv" "$T/missing.qks"
expect_status 2 "qk-pca, output in a missing directory: exit status 2"
expect_one_line_naming "$T/no-dir/pca.tsv" "No such file" "qk-pca, output in a missing directory: named"
run bin/qk-rotate --quiet --family x --checkpoint - --output "$T" "$T/mini.qks"
expect_status 2 "qk-rotate, output a directory: exit status 2"
expect_one_line_naming "$T" "is a directory" "qk-rotate, output a directory: one line naming it"
expect_no_temporaries "$T" "outputs refused: no temporary left"
# qk-plasticity makes its directories: -o in a new --out-dir, however spelt
run bin/qk-plasticity --quiet --max-heads 1 --out-dir "$T/made" -o "$T/made//./heads.tsv" "$T/mini.qks"
expect_status 0 "qk-plasticity, -o in a new --out-dir: exit status 0"
if [ -s "$T/made/heads.tsv" ] && [ -s "$T/made/plasticity_model.tsv" ]; then ok; else bad "qk-plasticity, -o in a new --out-dir: written"; fi

finish
