#!/bin/bash
# End to end: qk-synth -> qk-load -> qk-rotate -> qk-complement -> qk-merge ->
# qk-rotate --summary on small synthetic datasets, as the Makefile runs them.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

for p in qk-synth qk-load qk-rotate qk-complement qk-merge; do
    if [ ! -x "bin/$p" ]; then
        echo "FAIL: bin/$p is missing (make bin/$p)" >&2
        exit 1
    fi
done

T=build/tests/tmp/e2e-rotation
DS=llama3.2-1b
B=$T/build/$DS
rm -rf "$T"
mkdir -p "$B"
STORE=$B/store.qks

run bin/qk-synth --quiet --out "$T/data" --dataset $DS --heads 4
expect_status 0 "qk-synth writes the dataset"
run bin/qk-load --quiet --dataset $DS "$T/data/$DS" -o "$STORE"
expect_status 0 "qk-load writes the store"

# ---- qk-rotate -------------------------------------------------------------------

run bin/qk-rotate --quiet --threads 1 --family llama -o "$T/one.tsv" --axes-output "$T/one.bin" "$STORE"
expect_status 0 "qk-rotate with one thread"
run bin/qk-rotate --quiet --threads 2 --family llama "$STORE"
expect_status 0 "qk-rotate with two threads, default outputs beside the store"
if cmp -s "$T/one.tsv" "$B/rotation.tsv" && cmp -s "$T/one.bin" "$B/rotation_axes.bin"; then ok; else
    bad "qk-rotate outputs of --threads 1 and --threads 2 are not byte-identical"; fi

expect_file_line "$B/rotation.tsv" 1 "$(printf 'family\tcheckpoint\tlayer\thead\tkv_head\td\tn_q\tn_k\tt_min\tt_max\tdepth\tposition_r\tomega')" \
    "rotation.tsv header"
expect_same "$(wc -l < "$B/rotation.tsv")" 5 "rotation.tsv holds 4 heads"
expect_same "$(stat -c %s "$B/rotation_axes.bin")" $((32 + 4 * (16 + 8 * (3 + 4 * 64 + 64 * 65 / 2)))) \
    "rotation_axes.bin holds 4 heads of d = 64"

# ---- qk-complement -----------------------------------------------------------------

run bin/qk-complement --quiet --threads 1 --pairs-output "$T/p1.tsv" --heads-output "$T/h1.tsv" \
    --rotated-output "$T/r1.tsv" "$STORE"
expect_status 0 "qk-complement with one thread"
run bin/qk-complement --quiet --threads 2 "$STORE"
expect_status 0 "qk-complement with two threads"
if cmp -s "$T/p1.tsv" "$B/complement_pairs.tsv" && cmp -s "$T/h1.tsv" "$B/complement_heads.tsv" &&
   cmp -s "$T/r1.tsv" "$B/rotated.tsv"; then ok; else
    bad "qk-complement outputs of --threads 1 and --threads 2 are not byte-identical"; fi
expect_no_temporaries "$B" "no temporary files left"

R=$B/rotated.tsv
P=$B/complement_pairs.tsv
expect_same "$(head -1 "$R")" "$(head -1 "$B/rotation.tsv")$(printf '\tresidual_pos_r\tn_active_planes\tn_active_planes_03\tactive_var_frac\tmax_abs_angle_r\tring_cls_acc')" \
    "rotated.tsv = rotation.tsv + complement summaries"
expect_same "$(wc -l < "$P")" 121 "complement_pairs.tsv holds 30 pairs for each of 4 heads"

# column of a named field in a TSV header
col() { head -1 "$1" | tr '\t' '\n' | grep -nx "$2" | cut -d: -f1; }

# the drift lemma on every head, exact identities, ranges
check=$(awk -F'\t' -v res="$(col "$R" residual_pos_r)" -v pa="$(col "$R" var_frac_a)" \
    -v pb="$(col "$R" var_frac_b)" -v pp="$(col "$R" plane_var_fraction)" \
    -v fa="$(col "$R" flag_degenerate_a)" -v kv="$(col "$R" kv_head)" -v fam="$(col "$R" family)" \
    -v mqb="$(col "$R" mu_q_b)" -v mkb="$(col "$R" mu_k_b)" -v bias="$(col "$R" bias_strength)" \
    -v mqa="$(col "$R" mu_q_a)" -v ak="$(col "$R" alpha_k)" 'NR > 1 {
    if (!($res < 1e-12)) { print "residual_pos_r " $res " on line " NR; exit }
    d = $pp - $pa - $pb; if (d < 0) d = -d; if (d > 1e-15) { print "plane fraction on line " NR; exit }
    if ($fa != 0) { print "degenerate a on line " NR; exit }
    if ($kv != int($2 / 4) && $kv != int($4 / 4)) { print "kv_head on line " NR; exit }
    if ($fam != "llama") { print "family on line " NR; exit }
    if ($mqb < $mkb) { print "b sign on line " NR; exit }
    d = $bias - $mqa * $ak; if (d < 0) d = -d; if (d > 1e-15) { print "bias on line " NR; exit } }
    END { print "end" }' "$R")
expect_same "$check" "end" "lemma, identities and conventions on every head ($check)"

# the pairs: 0..29 in order, variance shares sorted and summing to <= 1,
# accuracies in [0, 1], the active flag at 0.1, agreeing with the head table
check=$(awk -F'\t' 'NR == FNR { if (FNR > 1) act[$1 "/" $2] = $7; next }
    FNR > 1 { key = $2 "/" $3
      if ($5 != n[key]++) { print "pair order " key; exit }
      if ($5 > 0 && $6 > last[key] + 1e-15) { print "pair_var_frac not sorted " key; exit }
      last[key] = $6; sum[key] += $6
      if ($10 < 0 || $10 > 1) { print "cls_acc " key; exit }
      a = $8 < 0 ? -$8 : $8
      if ((a >= 0.1) != $12) { print "active flag " key " pair " $5; exit }
      count[key] += $12 }
    END { for (k in sum) { if (sum[k] > 1 + 1e-12) print "sum " k
                           if (count[k] != act[k]) print "n_active_planes " k }
          print "end" }' "$B/complement_heads.tsv" "$P")
expect_same "$check" "end" "complement_pairs.tsv content checks ($check)"

# the slopes and correlations against the population values qk-synth
# planted. With about 1000 rows per kind and independent Q and K positions,
# the between-kind term of c (docs/rotation.md, step 1) tilts a by up to about 0.15
# rad toward mu_Q - mu_K, which moves the means and variance fractions on a
# by much more than sampling noise; those are checked on the planted-linear
# dataset below, with identical Q and K positions.
truth=$T/data/$DS/synth-truth.tsv
check=$(awk -F'\t' '
    BEGIN { split("r_q_a:0.06 r_k_a:0.06 alpha_q:-0.12 alpha_k:-0.1", w, " ")
            for (i in w) { split(w[i], kv, ":"); want[kv[1]] = kv[2] } }
    FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
    FILENAME == ARGV[1] {
        k = $col[FILENAME, "layer"] "/" $col[FILENAME, "q_head"]
        for (m in want) v[k, m] = $col[FILENAME, "pop_" m]; next }
    { k = $col[FILENAME, "layer"] "/" $col[FILENAME, "head"]; seen++
      for (m in want) {
        got = $col[FILENAME, m]; ref = v[k, m]; d = got - ref; if (d < 0) d = -d
        tol = want[m] > 0 ? want[m] : -want[m] * (ref < 0 ? -ref : ref)
        if (d > tol) { print k " " m " " got " vs " ref; exit } } }
    END { if (seen != 4) print "heads compared: " seen; print "end" }' "$truth" "$R")
expect_same "$check" "end" "slopes and correlations match the planted population values ($check)"

# the axes against the population axes of truth.json (cosine at least $3)
axes_check() { # axes file, dataset dir, minimum cosine
    python3 - "$1" "$2" "$3" <<'PY'
import json, struct, sys
data = open(sys.argv[1], "rb").read()
dim, heads = struct.unpack_from("<II", data, 12)
rec = 16 + 8 * (3 + 4 * dim + dim * (dim + 1) // 2)
worst = 1.0
for h in range(heads):
    off = 32 + h * rec
    layer, head, kv, _ = struct.unpack_from("<4i", data, off)
    a = struct.unpack_from("<%dd" % dim, data, off + 16 + 24)
    b = struct.unpack_from("<%dd" % dim, data, off + 16 + 24 + 8 * dim)
    t = json.load(open("%s/l%02dh%02dq/truth.json" % (sys.argv[2], layer, head)))["population"]
    ca = sum(x * y for x, y in zip(a, t["a_pop"]))
    cb = sum(x * y for x, y in zip(b, t["b_pop"]))
    worst = min(worst, ca, cb)
    if min(ca, cb) < float(sys.argv[3]):
        print("l%02dh%02d: cos(a) %.4f cos(b) %.4f" % (layer, head, ca, cb))
print("heads %d" % heads)
PY
}
# about 1000 rows per kind here: an angle of about 0.2 rad is sampling noise
check=$(axes_check "$B/rotation_axes.bin" "$T/data/$DS" 0.9)
expect_same "$check" "heads 4" "a and b point along the population axes ($check)"

# ---- options ------------------------------------------------------------------------

run bin/qk-rotate --quiet --b-mode centroid -o "$T/c.tsv" --axes-output "$T/c.bin" "$STORE"
expect_status 0 "qk-rotate --b-mode centroid"
check=$(awk -F'\t' -v c="$(col "$T/c.tsv" b_centroid_cos)" -v r="$(col "$T/c.tsv" resid_sep_frac)" \
    'NR > 1 { d = $c - 1; if (d < 0) d = -d; if (d > 1e-12 || $r > 1e-20) { print NR; exit } }
    END { print "end" }' "$T/c.tsv")
expect_same "$check" "end" "centroid mode: b_centroid_cos = 1, resid_sep_frac = 0 ($check)"
run bin/qk-rotate --quiet --b-sign raw -o "$T/raw.tsv" --axes-output "$T/raw.bin" "$STORE"
expect_status 0 "qk-rotate --b-sign raw"
# the raw sign changes mu_q_b and mu_k_b together, or nothing
check=$(awk -F'\t' -v q="$(col "$R" mu_q_b)" -v k="$(col "$R" mu_k_b)" -v s="$(col "$R" separation_strength)" '
    FNR == 1 { next } NR == FNR { mq[FNR] = $q; mk[FNR] = $k; sep[FNR] = $s; next }
    { if (!(($q == mq[FNR] && $k == mk[FNR]) || ($q == -mq[FNR] && $k == -mk[FNR]))) print "line " FNR
      if ($s != sep[FNR]) print "separation on line " FNR }
    END { print "end" }' "$B/rotation.tsv" "$T/raw.tsv")
expect_same "$check" "end" "raw b sign: the b means flip together, nothing else moves ($check)"
run bin/qk-complement --quiet --active-tau 0 --axes "$T/c.bin" --rotation "$T/c.tsv" \
    --pairs-output "$T/cp.tsv" --heads-output "$T/ch.tsv" --rotated-output "$T/cr.tsv" "$STORE"
expect_status 0 "qk-complement --active-tau 0"
expect_same "$(cut -f7 "$T/ch.tsv" | sort -u | tr '\n' ' ')" "30 n_active_planes " \
    "a threshold of 0 makes every pair active"

# ---- planted heads at thesis size (d = 128, about 8000 rows per kind) ---------------

DS2=llama3.2-3b
B2=$T/build/$DS2
mkdir -p "$B2"
run bin/qk-synth --quiet --out "$T/data" --dataset $DS2 --heads 2 --examples 500 \
    --mode planted-linear --stratified
expect_status 0 "qk-synth --mode planted-linear --stratified"
run bin/qk-load --quiet --dataset $DS2 "$T/data/$DS2" -o "$B2/store.qks"
expect_status 0 "qk-load of the planted dataset"
run bin/qk-rotate --quiet --family llama "$B2/store.qks"
expect_status 0 "qk-rotate on the planted dataset"
run bin/qk-complement --quiet "$B2/store.qks"
expect_status 0 "qk-complement on the planted dataset"
# tolerances for planted heads at N = 8000
check=$(awk -F'\t' '
    BEGIN { split("r_q_a:0.01 r_k_a:0.01 var_frac_a:0.01 var_frac_b:0.01 separation_strength:0.01 " \
                  "mu_q_a:0.15 mu_k_a:0.15 mu_q_b:0.15 mu_k_b:0.15 alpha_q:-0.03 alpha_k:-0.03 " \
                  "position_r:0.01 bias_strength:-0.05", w, " ")
            for (i in w) { split(w[i], kv, ":"); want[kv[1]] = kv[2] } }
    FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
    FILENAME == ARGV[1] {
        k = $col[FILENAME, "layer"] "/" $col[FILENAME, "q_head"]
        for (m in want) v[k, m] = $col[FILENAME, "pop_" m]; next }
    { k = $col[FILENAME, "layer"] "/" $col[FILENAME, "head"]; seen++
      if ($col[FILENAME, "residual_pos_r"] >= 1e-12) { print k " residual"; exit }
      if ($col[FILENAME, "bias_strength"] * v[k, "bias_strength"] <= 0) { print k " bias sign"; exit }
      for (m in want) {
        got = $col[FILENAME, m]; ref = v[k, m]; d = got - ref; if (d < 0) d = -d
        tol = want[m] > 0 ? want[m] : -want[m] * (ref < 0 ? -ref : ref)
        if (d > tol) { print k " " m " " got " vs " ref; exit } } }
    END { if (seen != 2) print "heads compared: " seen; print "end" }' "$T/data/$DS2/synth-truth.tsv" "$B2/rotated.tsv")
expect_same "$check" "end" "planted heads recovered within the tolerances ($check)"
check=$(axes_check "$B2/rotation_axes.bin" "$T/data/$DS2" 0.995)
expect_same "$check" "heads 2" "planted axes within cos 0.995 at N = 8000 ($check)"

# ---- merged tables and the model summary --------------------------------------------

run bin/qk-merge --model-from-dir --output "$T/rotated.csv" "$R" "$B2/rotated.tsv"
expect_status 0 "qk-merge of the per-head tables"
run bin/qk-rotate --summary --output "$T/summary.csv" "$T/rotated.csv"
expect_status 0 "qk-rotate --summary"
# the model of a table named without its directory, or under ".", is the
# name of the directory it is in; none left is a usage error
for name in rotated.tsv ./rotated.tsv ../$DS/rotated.tsv; do
    run bash -c "cd '$B' && '$PWD/bin/qk-merge' --model-from-dir --tsv -o '$PWD/$T/m.tsv' $name"
    expect_status 0 "qk-merge --model-from-dir of $name"
    expect_same "$(cut -f1 "$T/m.tsv" | sort -u | tr '\n' ' ')" "$DS model " \
        "qk-merge --model-from-dir of $name: the model is the directory's name"
done
run bin/qk-merge --model-from-dir --strip-prefix "$DS" -o "$T/m.csv" "$R"
expect_status 1 "qk-merge --model-from-dir with no name left"
expect_one_line_naming "$R" "gives no model name" "qk-merge with no model name: message"
expect_missing "$T/m.csv" "qk-merge with no model name: no output"
expect_file_line "$T/summary.csv" 1 "model,family,n_heads,mean_abs_r_q_a,mean_abs_r_k_a" "summary header"
expect_same "$(cut -d, -f1-3 "$T/summary.csv" | tail -n +2 | tr '\n' ' ')" "$DS,llama,4 $DS2,llama,2 " \
    "one summary row per model, in table order"
mean=$(awk -F'\t' -v c="$(col "$R" separation_strength)" 'NR > 1 { s += $c; n++ } END { printf "%.6f", s / n }' "$R")
got=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "mean_separation_strength") c = i }
    NR == 2 { printf "%.6f", $c }' "$T/summary.csv")
expect_same "$got" "$mean" "mean_separation_strength is the mean over the model's heads"
run bin/qk-rotate --summary --output "$T/bad.csv" "$B/complement_heads.tsv"
expect_status 2 "summary of a table without the rotation columns"
expect_one_line_naming "$B/complement_heads.tsv" "column" "summary names the missing column"
# a cell that is no number is an error, as in the other readers of the
# tables, never a missing value that moves the means; "nan" (what the
# stages write for an undefined value) is a number
c=$(awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "bias_strength") print i }' "$T/rotated.csv")
for cell in abc ""; do
    awk -F, -v OFS=, -v c="$c" -v v="$cell" 'NR == 3 { $c = v } { print }' "$T/rotated.csv" > "$T/cell.csv"
    run bin/qk-rotate --summary --output "$T/cell-summary.csv" "$T/cell.csv"
    expect_status 2 "summary with bias_strength '$cell': exit status"
    expect_one_line_naming "$T/cell.csv" "line 3, column bias_strength: '$cell' is not a number" \
        "summary with bias_strength '$cell': message"
    expect_missing "$T/cell-summary.csv" "summary with bias_strength '$cell': no output"
done
awk -F, -v OFS=, -v c="$c" 'NR == 3 { $c = "nan" } { print }' "$T/rotated.csv" > "$T/cell.csv"
run bin/qk-rotate --summary --output "$T/cell-summary.csv" "$T/cell.csv"
expect_status 0 "summary with a nan bias_strength"

# ---- bad input and usage --------------------------------------------------------------

run bin/qk-rotate "$T/missing.qks"
expect_status 2 "qk-rotate on a missing store"
expect_one_line_naming "$T/missing.qks" "cannot open" "missing store message"
run bin/qk-complement --axes "$B2/rotation_axes.bin" --rotation "$B2/rotation.tsv" \
    --pairs-output "$T/x1" --heads-output "$T/x2" --rotated-output "$T/x3" "$STORE"
expect_status 2 "qk-complement with the axes of another store"
expect_one_line_naming "$B2/rotation_axes.bin" "" "axes of another store: one line naming the axes file"
expect_missing "$T/x1" "no output from a failed qk-complement"
cp "$B/rotation_axes.bin" "$T/corrupt.bin"
printf '\x55' | dd of="$T/corrupt.bin" bs=1 seek=200 conv=notrunc status=none
run bin/qk-complement --axes "$T/corrupt.bin" --pairs-output "$T/x1" --heads-output "$T/x2" \
    --rotated-output "$T/x3" "$STORE"
expect_status 2 "qk-complement with a corrupt axes file"
expect_one_line_naming "$T/corrupt.bin" "checksum" "corrupt axes message"
run bin/qk-complement "$T/missing.qks"
expect_status 2 "qk-complement without its inputs"
expect_one_line_naming "$T/missing.qks" "cannot open store" "qk-complement names the missing store first"
# a rotation table of another store with the same heads (qwen3-0.6b and
# 1.7b sample the same ones): its row counts differ from the store's
for column in n_q n_k kv_head d; do
    awk -F'\t' -v OFS='\t' -v name=$column 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == name) c = i }
        NR == 3 { $c = $c + 1 } { print }' "$B/rotation.tsv" > "$T/other-rotation.tsv"
    run bin/qk-complement --rotation "$T/other-rotation.tsv" --pairs-output "$T/x1" \
        --heads-output "$T/x2" --rotated-output "$T/x3" "$STORE"
    expect_status 2 "rotation table with another $column: exit status"
    expect_one_line_naming "$T/other-rotation.tsv" "$column" "rotation table with another $column: message"
    expect_out_contains_err "(the table is from another store)" "rotation table with another $column: says why"
    expect_missing "$T/x1" "rotation table with another $column: no output"
done
# two outputs on one file: a usage error before any work
run bin/qk-complement --pairs-output "$T/x1" --heads-output "$T/../$(basename "$T")/x1" \
    --rotated-output "$T/x3" "$STORE"
expect_status 1 "qk-complement with one file for two outputs"
expect_one_line_naming "$T/x1" "--pairs-output and --heads-output name one file" \
    "one file for two outputs: message"
expect_missing "$T/x3" "one file for two outputs: no output"

run bin/qk-rotate
expect_status 1 "qk-rotate without a store"
run bin/qk-rotate --b-mode sideways "$STORE"
expect_status 1 "qk-rotate --b-mode sideways"
run bin/qk-rotate --threads 0 "$STORE"
expect_status 1 "qk-rotate --threads 0"
run bin/qk-rotate --family 'a,b' "$STORE"
expect_status 1 "qk-rotate --family with a comma"
run bin/qk-rotate --summary "$T/rotated.csv"
expect_status 1 "qk-rotate --summary without --output"
run bin/qk-complement --active-tau 2 "$STORE"
expect_status 1 "qk-complement --active-tau 2"
for p in qk-rotate qk-complement; do
    run bin/$p --help
    expect_status 0 "$p --help"
    expect_out "Usage: $p" "$p --help text"
    run bin/$p --version
    expect_out "$p " "$p --version"
done

finish
