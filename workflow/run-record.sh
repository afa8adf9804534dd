#!/bin/bash
# run-record.sh OUTPUT VERSION GROUPS PROGRAMS DATASETS: writes the record of
# a run (report/run.tsv, docs/diff.md) to OUTPUT (atomically), "kind<TAB>name<TAB>value" a line:
#   run_id   -             the first 12 hex digits of the SHA-256 of the lines below
#   version  -             the suite version (git describe)
#   param    GROUP.NAME    a parameter of the run (build/params/GROUP.txt)
#   program  NAME          the identity of a program (build/progs/NAME.id)
#   data     DATASET       where its vectors came from (its source record's origin:
#                          the seed, scale and mode of synthetic data, else the folder)
#   file     DATASET/PATH  an input file: its size and Parquet footer hash
#   registry DATASET       its row of the registry (blanks for tabs)
# Each list is a space-separated word. Modification times are left out, so
# two clean runs of the same data give the same record and the same id;
# the id names the run in numbers.tex and the thesis PDF.
set -u -o pipefail
out=$1 version=$2 groups=$3 programs=$4 datasets=$5
body() {
    local g p d
    printf 'version\t-\t%s\n' "$version"
    for g in $groups; do
        awk -v g="$g" '$0 != "-" { i = index($0, "="); printf "param\t%s.%s\t%s\n", g, substr($0, 1, i - 1), substr($0, i + 1) }' \
            "build/params/$g.txt" || return 1
    done
    for p in $programs; do
        printf 'program\t%s\t%s\n' "$p" "$(cat "build/progs/$p.id")" || return 1
    done
    for d in $datasets; do
        awk -F'\t' -v d="$d" '
            $1 == "origin" { printf "data\t%s\t%s\n", d, $2 }
            $1 == "file" { printf "file\t%s/%s\t%s %s\n", d, $2, $3, $5 }
            $1 == "registry" { row = $2; for (i = 3; i <= NF; i++) row = row " " $i; printf "registry\t%s\t%s\n", d, row }' \
            "build/$d/source.txt" || return 1
    done
}
text=$(body) || exit 2
{ printf 'kind\tname\tvalue\n'
  printf 'run_id\t-\t%s\n' "$(printf '%s\n' "$text" | sha256sum | cut -c1-12)"
  printf '%s\n' "$text"; } > "$out.tmp" && mv -f "$out.tmp" "$out" || { rm -f "$out.tmp"; exit 2; }
