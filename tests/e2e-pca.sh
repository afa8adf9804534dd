#!/bin/bash
# End to end: qk-synth -> qk-load -> qk-pca -> qk-taxonomy -> qk-merge on one
# small synthetic dataset, as the Makefile runs them.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

for p in qk-synth qk-load qk-pca qk-taxonomy qk-merge; do
    if [ ! -x "bin/$p" ]; then
        echo "FAIL: bin/$p is missing (make bin/$p)" >&2
        exit 1
    fi
done

T=build/tests/tmp/e2e-pca
DS=llama3.2-1b
rm -rf "$T"
mkdir -p "$T/build/$DS"
STORE=$T/build/$DS/store.qks
PCA=$T/build/$DS/pca.tsv
HEADS=$T/build/$DS/pca_heads.tsv
TAX=$T/build/$DS/taxonomy.tsv

run bin/qk-synth --quiet --out "$T/data" --dataset $DS --heads 4
expect_status 0 "qk-synth writes the dataset"
run bin/qk-load --quiet --dataset $DS "$T/data/$DS" -o "$STORE"
expect_status 0 "qk-load writes the store"

# ---- qk-pca -------------------------------------------------------------------

run bin/qk-pca --quiet --threads 1 -o "$T/one.tsv" --heads-output "$T/one_heads.tsv" "$STORE"
expect_status 0 "qk-pca with one thread"
run bin/qk-pca --quiet --threads 2 "$STORE"
expect_status 0 "qk-pca with two threads, default outputs beside the store"
if cmp -s "$T/one.tsv" "$PCA" && cmp -s "$T/one_heads.tsv" "$HEADS"; then ok; else
    bad "outputs of --threads 1 and --threads 2 are not byte-identical"; fi
expect_no_temporaries "$T/build/$DS" "no temporary files left"

expect_file_line "$PCA" 1 "$(printf 'layer\thead\tk_head\tpc\texplained_variance\tr_q\tr_k\tn_q\tn_k')" \
    "pca.tsv header"
expect_file_line "$HEADS" 1 "$(printf 'layer\thead\tk_head\tn_q\tn_k\ttotal_var\tev0\tr_q0\tr_k0')" \
    "pca_heads.tsv header"
expect_same "$(wc -l < "$PCA")" 41 "pca.tsv holds 10 rows for each of 4 heads"
expect_same "$(wc -l < "$HEADS")" 5 "pca_heads.tsv holds 4 heads"

# per head: pc 0..9 in order, EV in [0, 1], descending, summing to <= 1,
# |r| <= 1, the sign rule, the GQA key head (g = 4), counts > 0
check=$(awk -F'\t' 'NR > 1 {
    key = $1 "/" $2
    if ($4 != n[key]++) { print "pc order " key; exit }
    if ($5 < 0 || $5 > 1) { print "EV out of [0,1] " key; exit }
    if ($4 > 0 && $5 > last[key] + 1e-15) { print "EV not descending " key; exit }
    last[key] = $5; sum[key] += $5
    if ($6 > 1 || $6 < -1 || $7 > 1 || $7 < -1) { print "r out of [-1,1] " key; exit }
    if (($6 >= 0.05 || $6 <= -0.05) ? $6 < 0 : $7 < 0) { print "sign rule " key " pc " $4; exit }
    if ($3 != int($2 / 4)) { print "k_head " key; exit }
    if ($8 < 3 || $9 < 3) { print "counts " key; exit }
  }
  END { for (k in sum) if (sum[k] > 1 + 1e-12) { print "EV sum " k " " sum[k]; exit }
        for (k in n) if (n[k] != 10) { print "rows of " k ": " n[k]; exit } }' "$PCA")
expect_same "$check" "" "pca.tsv content checks ($check)"

# PC0 against the population values qk-synth planted (about 1000 rows per
# kind: sampling error about 0.03 on r and 5% on EV)
truth=$T/data/$DS/synth-truth.tsv
check=$(awk -F'\t' '
    FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
    FILENAME == ARGV[1] {
        k = $col[FILENAME, "layer"] "/" $col[FILENAME, "q_head"]
        ev[k] = $col[FILENAME, "pop_pc0_ev"]; rq[k] = $col[FILENAME, "pop_pc0_r_q"]
        rk[k] = $col[FILENAME, "pop_pc0_r_k"]; next }
    { k = $1 "/" $2; seen++
      if (!(k in ev)) { print "no truth for " k; exit }
      d = $7 - ev[k]; if (d < 0) d = -d; if (d > 0.1 * ev[k]) { print k " EV " $7 " vs " ev[k]; exit }
      d = $8 - rq[k]; if (d < 0) d = -d; if (d > 0.1) { print k " r_q " $8 " vs " rq[k]; exit }
      d = $9 - rk[k]; if (d < 0) d = -d; if (d > 0.1) { print k " r_k " $9 " vs " rk[k]; exit } }
    END { if (seen != 4) print "heads compared: " seen }' "$truth" "$HEADS")
expect_same "$check" "" "PC0 matches the planted population values ($check)"

# the head metrics are consistent with the component table
check=$(awk -F'\t' 'FNR == 1 { next }
    FILENAME == ARGV[1] { if ($4 == 0) { ev[$1 "/" $2] = $5; rq[$1 "/" $2] = $6 }
                          pv[$1 "/" $2] += $5 * $6 * $6; next }
    { k = $1 "/" $2
      if ($7 != ev[k] || $8 != rq[k]) { print "PC0 of " k; exit }
      d = $10 - pv[k]; if (d < 0) d = -d; if (d > 1e-12) { print "pos_var_q of " k; exit }
      if ($18 < 0.5 || $18 > 1 || $19 < 0.5 || $19 > 1) { print "accuracy of " k; exit }
      d = $14 - $15; if (d < 0) d = -d; if (d - $16 > 1e-9 || $16 - d > 1e-9) { print "sep0 of " k; exit } }' \
    "$PCA" "$HEADS")
expect_same "$check" "" "pca_heads.tsv agrees with pca.tsv ($check)"

# a cap below the minimum skips every head, with one warning for all
run bin/qk-pca --quiet --max-rows 5 -o "$T/capped.tsv" --heads-output "$T/capped_heads.tsv" "$STORE"
expect_status 0 "qk-pca with every head skipped"
expect_out_contains_err "$STORE: 4 heads skipped, the first l" "one warning: how many heads, and the first"
expect_same "$(grep -c . "$e2e_err")" 1 "one warning line for the 4 skipped heads"
expect_same "$(wc -l < "$T/capped.tsv")" 1 "no rows for skipped heads"

# ---- bad input and usage ---------------------------------------------------

run bin/qk-pca "$T/missing.qks"
expect_status 2 "missing store"
expect_one_line_naming "$T/missing.qks" "cannot open" "missing store message"

cp "$STORE" "$T/corrupt.qks"
printf '\x55\x55\x55\x55' | dd of="$T/corrupt.qks" bs=1 seek=4096 conv=notrunc status=none
run bin/qk-pca -o "$T/c.tsv" --heads-output "$T/c_heads.tsv" "$T/corrupt.qks"
expect_status 2 "corrupt store"
expect_one_line_naming "$T/corrupt.qks" "checksum" "corrupt store message"
expect_missing "$T/c.tsv" "no output from a corrupt store"

head -c 3000 "$STORE" > "$T/short.qks"
run bin/qk-pca -o "$T/c.tsv" --heads-output "$T/c_heads.tsv" "$T/short.qks"
expect_status 2 "truncated store"
expect_one_line_naming "$T/short.qks" "truncated" "truncated store message"

run bin/qk-pca
expect_status 1 "qk-pca without a store"
run bin/qk-pca --threads 0 "$STORE"
expect_status 1 "qk-pca --threads 0"
run bin/qk-pca --help
expect_status 0 "qk-pca --help"
expect_out "Usage: qk-pca" "qk-pca --help text"
run bin/qk-pca --version
expect_out "qk-pca " "qk-pca --version"

# ---- qk-taxonomy ------------------------------------------------------------

run bin/qk-taxonomy "$HEADS"
expect_status 0 "qk-taxonomy"
expect_same "$(head -1 "$TAX")" "$(head -1 "$HEADS")$(printf '\tcategory')" "taxonomy.tsv header"
expect_same "$(wc -l < "$TAX")" 5 "taxonomy.tsv rows"
# the category follows from r_q0 (column 8) and r_k0 (column 9)
check=$(awk -F'\t' 'NR > 1 { rq = $8; rk = $9 < 0 ? -$9 : $9
    c = "mixed"
    if (rq > 0.7 && rk > 0.7) c = "position-dominated"
    else if (rq > 0.7 && rk < 0.3) c = "q-positional"
    else if (rq < 0.3 && rk > 0.7) c = "k-positional"
    else if (rq < 0.3 && rk < 0.3) c = "content-focused"
    if ($NF != c) { print "line " NR ": " $NF " vs " c; exit } }' "$TAX")
expect_same "$check" "" "categories follow the rule ($check)"
run bin/qk-taxonomy --high 0 --low 0 -o "$T/all.tsv" "$HEADS"
expect_status 0 "qk-taxonomy with thresholds 0"
expect_same "$(cut -f22 "$T/all.tsv" | sort -u | tr '\n' ' ')" "category position-dominated " \
    "thresholds of 0 make every head position-dominated"
run bin/qk-taxonomy --high 0.3 --low 0.7 "$HEADS"
expect_status 1 "qk-taxonomy with LOW above HIGH"
run bin/qk-taxonomy -o "$T/x.tsv" "$PCA"
expect_status 2 "qk-taxonomy on a table without r_q0"
expect_one_line_naming "$PCA" "r_q0" "qk-taxonomy names the missing column"
run bin/qk-taxonomy "$T/missing.tsv"
expect_status 2 "qk-taxonomy on a missing file"
expect_one_line_naming "$T/missing.tsv" "cannot open" "qk-taxonomy missing file message"

# ---- qk-merge -----------------------------------------------------------------

mkdir -p "$T/build/smollm3-3b-stage1-step-40000"
cp "$PCA" "$T/build/smollm3-3b-stage1-step-40000/pca.tsv"
run bin/qk-merge --model-from-dir --output "$T/qk.csv" "$PCA" \
    "$T/build/smollm3-3b-stage1-step-40000/pca.tsv"
expect_status 0 "qk-merge"
expect_file_line "$T/qk.csv" 1 "model,layer,head,k_head,pc,explained_variance,r_q,r_k,n_q,n_k" \
    "qk.csv header"
expect_same "$(wc -l < "$T/qk.csv")" 81 "qk.csv rows"
expect_same "$(cut -d, -f1 "$T/qk.csv" | uniq | tr '\n' ' ')" \
    "model $DS smollm3-3b-stage1-step-40000 " "model ids in input order"
expect_same "$(sed -n 2p "$T/qk.csv")" "$DS,$(sed -n 2p "$PCA" | tr '\t' ',')" \
    "qk.csv rows copy the cells"
run bin/qk-merge --model-from-dir --strip-prefix smollm3-3b- --output "$T/qk2.csv" \
    "$T/build/smollm3-3b-stage1-step-40000/pca.tsv"
expect_same "$(cut -d, -f1 "$T/qk2.csv" | sort -u | tr '\n' ' ')" "model stage1-step-40000 " \
    "checkpoint ids without the prefix"
run bin/qk-merge --output "$T/bad.csv" "$PCA" "$HEADS"
expect_status 2 "qk-merge of tables with different headers"
expect_one_line_naming "$HEADS" "header" "qk-merge names the odd table"
expect_missing "$T/bad.csv" "no output from a failed merge"
mkdir -p "$T/other/smollm3-3b-stage1-step-40000"
cp "$PCA" "$T/other/smollm3-3b-stage1-step-40000/pca.tsv"
run bin/qk-merge --model-from-dir --output "$T/twice.csv" "$PCA" \
    "$T/build/smollm3-3b-stage1-step-40000/pca.tsv" "$T/other/smollm3-3b-stage1-step-40000/pca.tsv"
expect_status 1 "qk-merge of two tables of one model"
expect_one_line_naming "$T/other/smollm3-3b-stage1-step-40000/pca.tsv" "also given by" \
    "qk-merge names the second table of the model"
expect_missing "$T/twice.csv" "no output when a model is given twice"
run bin/qk-merge "$PCA"
expect_status 1 "qk-merge without --output"

finish
