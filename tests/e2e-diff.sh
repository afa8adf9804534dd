#!/bin/bash
# make diff, make why and the published findings, on a copy of the tree with
# two datasets:
#   - two runs differing only in PCA_TAX_HIGH (0.7, 0.8), archived: make diff
#     names that one parameter, the taxonomy numbers and the heads whose class
#     changed, and no load, PCA-fit or rotation number; the same archive on
#     both sides says "no differences" in one line; THESIS= keeps the keys the
#     thesis example uses, each with its file:line; with no A and B, the
#     previous published generation against the published folders;
#   - make why: "up to date" on a built tree, the taxonomy steps and what
#     depends on them for PCA_TAX_HIGH=0.8 (no load, PCA or rotation step), a
#     replaced Parquet file named; the tree unchanged after each;
#   - make diff A=published lists every published finding beside the run's.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

tree_under diff
sets="llama3.2-1b qwen3-0.6b"
mk() { run make -C "$TREE" --no-print-directory -j2 DATASETS="$sets" "$@"; }
# every file of the tree but the locks, with size and time: what make why must leave alone
tree_state() { (cd "$TREE" && find . -path ./build/tests -prune -o -type f ! -name '.lock*' \
    ! -name '.steps.lock' ! -name '.deps-ok' -printf '%p %s %T@\n' | LC_ALL=C sort | sha256sum); }

mk report archive
expect_status 0 "make report archive (PCA_TAX_HIGH default)"
archive_a=$(ls "$TREE"/dist/*.tar.gz 2>/dev/null | head -1)
[ -n "$archive_a" ] && ok || bad "the first run made an archive"
run_id=$(awk -F'\t' '$1 == "run_id" { print $3 }' "$TREE/report/run.tsv")
if [[ $run_id =~ ^[0-9a-f]{12}$ ]] && grep -qF "\\qkdef{run.id}{$run_id}" "$TREE/report/numbers.tex"; then
    ok; else bad "numbers.tex carries the run id of report/run.tsv ($run_id)"; fi

# ---- make why ---------------------------------------------------------------------------
before=$(tree_state)
mk why
expect_status 0 "make why on a built tree"
expect_out "up to date" "make why on a built tree says up to date"
mk why PCA_TAX_HIGH=0.8
expect_status 0 "make why PCA_TAX_HIGH=0.8"
for d in $sets; do
    if grep -qE "^  build/$d/taxonomy.tsv +PCA_TAX_HIGH 0.7 -> 0.8$" "$e2e_out"; then ok; else
        bad "make why names the taxonomy step of $d with PCA_TAX_HIGH 0.7 -> 0.8"; fi
done
expect_out "results/attention_plasticity/qk_heads.csv" "make why lists the merged taxonomy table"
expect_out "report/index.html" "make why lists the report"
if grep -qE '(pca|pca_heads|rotation|rotated|store)\.(tsv|qks)|/qk\.csv|rotated\.csv|plasticity_' "$e2e_out"; then
    bad "make why PCA_TAX_HIGH=0.8 lists no load, PCA or rotation step: $(grep -E 'pca\.tsv|store|rotat' "$e2e_out" | head -2)"
else ok; fi
if grep -v "^make " "$e2e_out" | grep -vq "PCA_TAX_HIGH 0.7 -> 0.8"; then
    bad "every step's reason is PCA_TAX_HIGH: $(grep -v 'PCA_TAX_HIGH 0.7 -> 0.8' "$e2e_out" | head -2)"
else ok; fi
expect_same "$(tree_state)" "$before" "make why changes nothing in the tree"
expect_same "$(cat "$TREE/build/params/pca.txt")" $'PCA_TAX_HIGH=0.7\nPCA_TAX_LOW=0.3' \
    "make why PCA_TAX_HIGH=0.8 writes no record"

# ---- the second run and make diff ----------------------------------------------------------
mk report archive PCA_TAX_HIGH=0.8
expect_status 0 "make report archive PCA_TAX_HIGH=0.8"
archive_b=$(ls -t "$TREE"/dist/*.tar.gz 2>/dev/null | head -1)
[ "$archive_b" != "$archive_a" ] && ok || bad "the second run made another archive"
mk diff A="$(pwd)/$archive_a" B="$(pwd)/$archive_b"
expect_status 0 "make diff of the two archives"
params=$(sed -n '/^parameters:/,/^[a-z]/p' "$e2e_out" | grep '^  ')
expect_same "$params" "  PCA_TAX_HIGH 0.7 -> 0.8 (pca)" "the one parameter changed is PCA_TAX_HIGH"
expect_out "  pca.tax.posdom_pct: " "the share of position-dominated heads is listed"
page=$TREE/build/diff/diff.html
for key in pca.tax.high pca.tax.mixed_pct pca.tax.qpos_pct; do
    grep -qF "<td><code>$key</code></td>" "$page" && ok || bad "the page lists $key"
done
if grep -qE '^  (inventory|rotation|plasticity|pca\.pc0|pca\.ev)[^ ]*: ' "$e2e_out"; then
    bad "no load, PCA-fit or rotation number moved: $(grep -E '^  (inventory|rotation|plasticity|pca\.pc0)' "$e2e_out" | head -2)"
else ok; fi
expect_out "heads whose class or sign of bias changed:" "the heads that moved are listed"
if grep -qE '^  results/attention_plasticity/qk_heads\.csv [a-z0-9.-]+ L[0-9]+ H[0-9]+: category [a-z-]+ -> [a-z-]+$' "$e2e_out"; then
    ok; else bad "a head's class change is listed as 'TABLE MODEL Ln Hn: category A -> B'"; fi
if grep -q ': bias_strength ' "$e2e_out"; then bad "no head's sign of bias changed"; else ok; fi
expect_out "results/attention_plasticity/qk_heads.csv: category" "the taxonomy table's category column differs"
if grep -q 'rotated.csv\|/qk.csv' "$e2e_out"; then bad "the PCA and rotation tables are the same"; else ok; fi
[ -s "$TREE/build/diff/diff.html" ] && ok || bad "the page build/diff/diff.html is written"
figs=$(find "$TREE/build/diff/figures" -name difference.png 2>/dev/null | wc -l)
[ "$figs" -ge 1 ] && ok || bad "a difference image for a figure that moved ($figs)"

mk diff A="$(pwd)/$archive_a" B="$(pwd)/$archive_a"
expect_status 0 "make diff of one archive with itself"
expect_out_lines 1 "the same archive on both sides: one line"
expect_out "no differences" "the same archive on both sides says no differences"

mk diff A="$(pwd)/$archive_a" B="$(pwd)/$archive_b" THESIS=templates/thesis-example.tex
expect_status 0 "make diff THESIS=templates/thesis-example.tex"
keys=$(grep -oE '^  [a-z0-9_.-]+: ' "$e2e_out" | sed 's/^  //; s/: $//' | sort -u)
used=$(grep -v '^ *%' templates/thesis-example.tex | sed 's/\\verb|[^|]*|//g' | grep -oE '\\qk(raw)?\{[^}]*\}' |
    sed 's/.*{//; s/}//' | sort -u)
extra=$(LC_ALL=C comm -23 <(echo "$keys") <(echo "$used"))
[ -n "$keys" ] && [ -z "$extra" ] && ok || bad "THESIS= lists only keys the thesis uses (others: $extra)"
if grep -E '^  [a-z0-9_.-]+: ' "$e2e_out" | grep -qvE 'templates/thesis-example\.tex:[0-9]+'; then
    bad "each key listed has its file:line"; else ok; fi

mk diff
expect_status 0 "make diff with no A and B"
expect_out "PCA_TAX_HIGH 0.7 -> 0.8 (pca)" "the previous published run against the published one"

mk diff A=published
expect_status 0 "make diff A=published"
n_published=$(grep -vc '^#' workflow/published.tsv)
expect_same "$(grep -cE '^  (yes|no) ' "$e2e_out")" "$((n_published - 1))" \
    "every published value is listed beside the run's"
expect_out "the run's data are synthetic: its values are planted" "the demo's values are said to be planted"

# ---- a replaced Parquet file ---------------------------------------------------------------
dir=$TREE/data/synth/llama3.2-1b
first=$(ls "$dir" | grep -m1 'q$')
other=$(ls "$dir" | grep 'q$' | sed -n 2p)
cp "$dir/$other/data.parquet" "$dir/$first/data.parquet"
before=$(tree_state)
mk why
expect_status 0 "make why after a Parquet file was replaced"
if grep -qE "^  build/llama3.2-1b/store.qks .*llama3.2-1b/$first/data.parquet: size and footer changed" "$e2e_out"; then
    ok; else bad "make why names the replaced file $first/data.parquet"; fi
expect_same "$(tree_state)" "$before" "make why changes nothing in the tree"
finish
