#!/bin/bash
# Two clean runs of `make report archive`, each in its own copy of the
# source tree, must give byte-identical results, figures, report, stores
# and archive; among them the LaTeX side of the report (numbers.tex, the
# table fragments, every figure.pdf, the thesis example), which the archive
# holds. The first run's kernels stop at AVX2 (QK_ISA=avx2, what a CPU
# without AVX-512 runs), the second use the best the CPU has: on a CPU with
# AVX-512 the two instruction sets must give the same bytes.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

base=build/determinism
rm -rf "$base" && mkdir -p "$base"
for copy in a b; do
    mkdir -p "$base/$copy"
    git ls-files --cached --others --exclude-standard -z |
        xargs -0 cp --parents -t "$base/$copy" 2>/dev/null
    isa=$([ "$copy" = a ] && echo avx2)
    run env ${isa:+QK_ISA=$isa} make -C "$base/$copy" --no-print-directory -j2 report archive "$@"
    expect_status 0 "clean run $copy${isa:+ (QK_ISA=$isa)}: make report archive"
    [ "$e2e_status" -eq 0 ] || tail -5 "$e2e_err" >&2
done
for dir in results figures report dist; do
    if diff -r -q "$base/a/$dir" "$base/b/$dir" > "$base/diff-$dir.txt"; then ok; else
        bad "$dir differs: $(head -3 "$base/diff-$dir.txt" | tr '\n' ' ')"
    fi
done
stores_a=$(cd "$base/a" && sha256sum build/*/store.qks)
stores_b=$(cd "$base/b" && sha256sum build/*/store.qks)
expect_same "$stores_a" "$stores_b" "stores identical"
n=$(find "$base/a/figures" -name figure.png | wc -l)
if [ "$n" -ge 1 ]; then ok; else bad "figures were rendered ($n)"; fi
if ls "$base"/a/dist/*.tar.gz >/dev/null 2>&1; then ok; else bad "archive written"; fi

# the LaTeX outputs: made by both runs (the diffs above compared them)
for f in report/numbers.tex report/numbers.md report/thesis-example.pdf; do
    if [ -s "$base/a/$f" ] && cmp -s "$base/a/$f" "$base/b/$f"; then ok; else bad "$f made, the same in both runs"; fi
done
n_tables=$(grep -c '^| `report/tables/' "$base/a/report/numbers.md")
expect_same "$(ls "$base"/a/report/tables/*.tex 2>/dev/null | wc -l)" "$n_tables" \
    "the $n_tables table fragments numbers.md lists are made"
n_rows=$(awk -f workflow/figures.awk -v emit=ids workflow/figures.rec | wc -l)
expect_same "$(find "$base/a/figures" -name figure.pdf | wc -l)" "$n_rows" "a figure.pdf for each of the $n_rows figures"
# ... and archived, with the example's source
latex_files=$(cd "$base/a" && ls report/numbers.tex report/numbers.md report/tables/*.tex \
    figures/*/*/figure.pdf report/thesis-example.pdf templates/thesis-example.tex | LC_ALL=C sort)
archived=$(tar -tzf "$base"/a/dist/*.tar.gz 2>/dev/null | LC_ALL=C sort)
missing=$(LC_ALL=C comm -23 <(echo "$latex_files") <(echo "$archived"))
expect_same "$missing" "" "the archive holds the LaTeX outputs and templates/thesis-example.tex (missing: $missing)"
finish
