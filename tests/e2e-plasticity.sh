#!/bin/bash
# End to end: qk-synth -> qk-load -> qk-plasticity -> qk-merge on one small
# synthetic dataset, as the Makefile runs them; table shapes, value ranges,
# the identities between the tables, determinism across thread counts, and
# the errors on bad input.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

for p in qk-synth qk-load qk-plasticity qk-merge; do
    if [ ! -x "bin/$p" ]; then
        echo "FAIL: bin/$p is missing (make bin/$p)" >&2
        exit 1
    fi
done

T=build/tests/tmp/e2e-plasticity
DS=smollm3-3b-stage1-step-40000
rm -rf "$T"
mkdir -p "$T/build/$DS"
STORE=$T/build/$DS/store.qks
OUT=$T/build/$DS
TABLES="heads profile pair2d weights model model_profile model_pair2d"

run bin/qk-synth --quiet --out "$T/data" --dataset $DS --heads 4
expect_status 0 "qk-synth writes the dataset"
run bin/qk-load --quiet --dataset $DS "$T/data/$DS" -o "$STORE"
expect_status 0 "qk-load writes the store"

# ---- determinism ---------------------------------------------------------------

run bin/qk-plasticity --quiet --threads 1 --out-dir "$T/one" "$STORE"
expect_status 0 "qk-plasticity with one thread"
run bin/qk-plasticity --quiet --threads 2 "$STORE"
expect_status 0 "qk-plasticity with two threads, outputs beside the store"
for t in $TABLES; do
    if cmp -s "$T/one/plasticity_$t.tsv" "$OUT/plasticity_$t.tsv"; then ok; else
        bad "plasticity_$t.tsv differs between --threads 1 and --threads 2"; fi
done
run bin/qk-plasticity --quiet --threads 3 --out-dir "$T/three" "$STORE"
if cmp -s "$T/three/plasticity_profile.tsv" "$OUT/plasticity_profile.tsv"; then ok; else
    bad "profile differs with --threads 3"; fi
expect_no_temporaries "$OUT" "no temporary files left"
# no bin with enough pairs in any head: the tables say n/a, and one warning says why
run bin/qk-plasticity --quiet --min-pairs 1000000000 --out-dir "$T/none" "$STORE"
expect_status 0 "qk-plasticity with no bin kept"
expect_out_contains_err "$STORE: no head has a plasticity value: no query bin of any head has 1000000000 eligible key pairs (--min-pairs)" \
    "no head valid: one warning naming the store and the option"
expect_same "$(grep -c . "$e2e_err")" 1 "no head valid: one line"
expect_same "$(awk -F'\t' 'NR == 2 { print $2 }' "$T/none/plasticity_model.tsv")" 0 "no head valid: n_heads_valid 0"
# -o: the per-head table (the primary output) goes there, the others to --out-dir
run bin/qk-plasticity --quiet --threads 2 -o "$T/heads-here.tsv" --out-dir "$T/rest" "$STORE"
expect_status 0 "qk-plasticity -o FILE --out-dir DIR"
if cmp -s "$T/heads-here.tsv" "$OUT/plasticity_heads.tsv"; then ok; else
    bad "-o FILE: the per-head table differs from plasticity_heads.tsv"; fi
expect_missing "$T/rest/plasticity_heads.tsv" "-o FILE: no per-head table in --out-dir"
if cmp -s "$T/rest/plasticity_model.tsv" "$OUT/plasticity_model.tsv"; then ok; else
    bad "-o FILE: plasticity_model.tsv in --out-dir differs"; fi
# -o naming a table of --out-dir: a usage error before any work (a store that
# is not there is never opened)
run bin/qk-plasticity --quiet -o "$T/clash/plasticity_profile.tsv" --out-dir "$T/clash" \
    "$T/no-such-store.qks"
expect_status 1 "qk-plasticity -o naming a table of --out-dir"
expect_one_line_naming "$T/clash/plasticity_profile.tsv" "--output and --out-dir name one file" \
    "-o naming a table of --out-dir: message"
# --floor times each head and its floor, prints one TSV line (the means over
# the heads after the thread's first), changes no output
run bin/qk-plasticity --quiet --threads 1 --floor --out-dir "$T/floor" "$STORE"
expect_status 0 "qk-plasticity --floor"
expect_out "$(printf 'stage\theads\tthreads\ts_per_head\tfloor_s_per_head\tratio_to_floor')" \
    "--floor header"
check=$(awk -F'\t' '$1 == "plasticity" && $2 == 3 && $3 == 1 && $4 > 0 && $5 > 0 &&
                    $5 < $4 && $7 > 0 && $8 > 0 && $9 > 0 { print "ok" }' "$e2e_out")
expect_same "$check" "ok" "--floor line: 3 heads after the first, 1 thread, floor below the head time"
for t in $TABLES; do
    if cmp -s "$T/floor/plasticity_$t.tsv" "$OUT/plasticity_$t.tsv"; then ok; else
        bad "plasticity_$t.tsv differs with --floor"; fi
done
# the --floor line names the instruction set of the kernels and the BLAS
# kernel; QK_ISA asks for a lower set, which changes no output
expect_same "$(awk -F'\t' 'NR == 1 { print $10 "," $11 }' "$e2e_out")" "isa,blas_core" \
    "--floor header: isa and blas_core last"
run env QK_ISA=scalar bin/qk-plasticity --quiet --threads 1 --floor --out-dir "$T/scalar" "$STORE"
expect_status 0 "QK_ISA=scalar qk-plasticity --floor"
expect_same "$(awk -F'\t' 'NR == 2 { print $10 }' "$e2e_out")" "scalar" "QK_ISA=scalar: the isa column"
expect_same "$(awk -F'\t' 'NR == 2 { print ($11 != "") }' "$e2e_out")" "1" "--floor: a BLAS kernel named"
for t in $TABLES; do
    if cmp -s "$T/scalar/plasticity_$t.tsv" "$OUT/plasticity_$t.tsv"; then ok; else
        bad "plasticity_$t.tsv differs with QK_ISA=scalar"; fi
done
run env QK_ISA=avx1024 bin/qk-plasticity --quiet --out-dir "$T/bad-isa" "$STORE"
expect_status 1 "QK_ISA naming no instruction set: a usage error"
expect_error_lines "QK_ISA naming no instruction set: one line" \
    "qk-plasticity: error: QK_ISA=avx1024: not an instruction set (avx512, avx2 or scalar)"
expect_missing "$T/bad-isa" "QK_ISA naming no instruction set: no output"
# the one switch of all vector code: every program refuses it
run env QK_ISA=avx1024 bin/qk-rotate --quiet --output "$T/bad-isa.tsv" "$STORE"
expect_status 1 "QK_ISA naming no instruction set: qk-rotate refuses it too"
expect_error_lines "QK_ISA naming no instruction set: qk-rotate's one line" \
    "qk-rotate: error: QK_ISA=avx1024: not an instruction set (avx512, avx2 or scalar)"
expect_missing "$T/bad-isa.tsv" "QK_ISA naming no instruction set: no rotation table"
# --check (Make's check of a parameter's value) checks the options alone:
# a bad QK_ISA is not blamed on the parameter, the run refuses it
run env QK_ISA=avx1024 bin/qk-plasticity --check --min-pairs 40 "$STORE"
expect_status 0 "QK_ISA naming no instruction set: --check of the options passes"
# what the benchmarks name in their headers: the same choice, QK_ISA included
run env QK_ISA=scalar bin/qk-report --kernels-info
expect_status 0 "qk-report --kernels-info"
expect_same "$(cut -f1 "$e2e_out" | tr '\n' ' ')" "isa isa_best simd " "--kernels-info: its three values"
expect_same "$(awk -F'\t' '$1 == "isa" || $1 == "simd" { print $2 }' "$e2e_out" | tr '\n' ' ')" \
    "scalar baseline " "--kernels-info: QK_ISA=scalar, the baseline build everywhere"
best=$(awk -F'\t' '$1 == "isa_best" { print $2 }' "$e2e_out")
if [ "$best" != scalar ]; then
    run env QK_ISA=avx2 bin/qk-report --kernels-info
    expect_same "$(awk -F'\t' '$1 == "isa" || $1 == "simd" { print $2 }' "$e2e_out" | tr '\n' ' ')" \
        "avx2 avx2 " "--kernels-info: QK_ISA=avx2, the AVX2 builds"
fi
run bin/qk-report --kernels-info
expect_same "$(awk -F'\t' '$1 == "isa" { print $2 }' "$e2e_out")" "$best" \
    "--kernels-info without QK_ISA: the best the CPU has"
run env QK_ISA=avx1024 bin/qk-report --kernels-info
expect_status 1 "--kernels-info, QK_ISA naming no instruction set: a usage error"
expect_error_lines "--kernels-info, QK_ISA naming no instruction set: one line" \
    "qk-report: error: QK_ISA=avx1024: not an instruction set (avx512, avx2 or scalar)"

# ---- shapes --------------------------------------------------------------------

H=$OUT/plasticity_heads.tsv
P=$OUT/plasticity_profile.tsv
C=$OUT/plasticity_pair2d.tsv
W=$OUT/plasticity_weights.tsv
M=$OUT/plasticity_model.tsv
MP=$OUT/plasticity_model_profile.tsv
MC=$OUT/plasticity_model_pair2d.tsv
expect_file_line "$H" 1 "$(printf 'layer\tq_head\tk_head\tn_q_tokens\tn_k_tokens\td_model\tq_R2_pos\tq_beta_norm\tq_R2_scalar')" \
    "heads header"
expect_same "$(head -1 "$H" | tr '\t' '\n' | grep -c '^ap_d[0-9]$')" 10 "ten decile columns"
expect_file_line "$P" 1 "$(printf 'layer\tq_head\tk_head\tq_bin\tbin_position\tn_queries\tn_pairs\tap')" \
    "profile header"
expect_file_line "$C" 1 "$(printf 'layer\tq_head\tk_head\tdist_bin\tmid_bin\tn_pairs\tap')" "pair2d header"
expect_file_line "$W" 1 "$(printf 'layer\tq_head\tk_head\tcomponent\tcomponent_r2\tcomponent_weight')" \
    "weights header"
expect_file_line "$M" 1 "$(printf 'n_heads\tn_heads_valid\tcontext_length\tbucket_size\tbin_width')" \
    "model header"
expect_file_line "$MP" 1 "$(printf 'q_bin\tbin_start\tbin_centre\tn_heads\tap')" "model profile header"
expect_file_line "$MC" 1 "$(printf 'dist_bin\tmid_bin\tdist_start\tmid_start\tn_heads\tn_pairs\tap')" \
    "model pair2d header"
expect_same "$(wc -l < "$H")" 5 "one row per head"
expect_same "$(wc -l < "$W")" $((1 + 4 * 128)) "128 component rows per head"
expect_same "$(wc -l < "$M")" 2 "one model row"
expect_same "$(awk -F'\t' 'NR > 1 { print $1 }' "$M")" 4 "model n_heads"
# every row of every table has the header's field count
for t in $TABLES; do
    f=$OUT/plasticity_$t.tsv
    n=$(awk -F'\t' 'NR == 1 { nf = NF } NF != nf { bad++ } END { print bad + 0 }' "$f")
    expect_same "$n" 0 "plasticity_$t.tsv rows have the header's width"
done

# ---- values ----------------------------------------------------------------------

# 4K context, B = 256: 160 bins of 25.6, 16 heatmap cells per axis
check=$(awk -F'\t' 'NR > 1 {
    key = $1 "/" $2
    if (key in last && $4 <= last[key]) { print "bins not ascending " key; exit }
    if ($4 < 0 || $4 >= 160) { print "bin out of range " $4; exit }
    if (key in pairs && $7 < pairs[key]) { print "eligible pairs shrink " key " bin " $4; exit }
    last[key] = $4; pairs[key] = $7; nq[key] += $6
    lo = $4 * 25.6; if ($5 < lo - 1e-9 || $5 >= lo + 25.6) { print "tau outside bin " $4; exit }
    kept = ($6 >= 2 && $7 >= 32)
    if (kept != ($8 != "nan")) { print "kept rule at " key " bin " $4 ": " $6 " " $7 " " $8; exit }
    if ($8 != "nan" && ($8 < 0 || $8 > 1)) { print "ap out of [0,1] " $8; exit } }
    END { for (k in nq) printf "%s=%d\n", k, nq[k] }' "$P" | sort)
expect_same "$(echo "$check" | grep -c '=')" 4 "profile covers 4 heads ($(echo "$check" | grep -v = | head -1))"
queries=$(awk -F'\t' 'NR > 1 { printf "%s/%s=%d\n", $1, $2, $4 }' "$H" | sort)
expect_same "$check" "$queries" "every query falls in one bin"

check=$(awk -F'\t' 'NR > 1 {
    if ($4 < 0 || $4 >= 16 || $5 < 0 || $5 >= 16) { print "cell out of range"; exit }
    if ($4 > 2 * $5 + 1) { print "inter-key distance beyond twice the midpoint distance"; exit }
    if ($6 < 1) { print "empty cell listed"; exit }
    if (($6 >= 32) != ($7 != "nan")) { print "cell filter"; exit }
    if ($7 != "nan" && ($7 < 0 || $7 > 1)) { print "cell ap out of [0,1]"; exit } }' "$C")
expect_same "$check" "" "heatmap cells ($check)"

check=$(awk -F'\t' 'NR > 1 { key = $1 "/" $2; s[key] += $6
    if ($5 > 1 || $6 < 0 || $6 > 1) { print "weight or r2 out of range"; exit } }
    END { for (k in s) if (s[k] < 1 - 1e-12 || s[k] > 1 + 1e-12) { print "weights of " k " sum to " s[k]; exit } }' "$W")
expect_same "$check" "" "component weights sum to 1 ($check)"

# heads: ap scalars in [0,1]; ap_overall is the query-weighted profile mean;
# ap_drop = first - last
check=$(awk -F'\t' '
    FILENAME == ARGV[1] { if (FNR > 1 && $8 != "nan") { k = $1 "/" $2; w[k] += $6; s[k] += $6 * $8 } next }
    FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { k = $1 "/" $2
      for (i = col["ap_overall"]; i <= col["ap_len_1_1"]; i++)
          if (i != col["ap_drop"] && $i != "nan" && ($i < 0 || $i > 1)) { print "ap column " i " of " k; exit }
      d = $col["ap_overall"] - s[k] / w[k]; if (d < 0) d = -d
      if (d > 1e-12) { print "ap_overall of " k " " $col["ap_overall"] " vs " s[k] / w[k]; exit }
      d = $col["ap_drop"] - ($col["ap_first_20pct"] - $col["ap_last_20pct"]); if (d < 0) d = -d
      if (d > 1e-15) { print "ap_drop of " k; exit }
      if ($col["ap_p0_20"] != $col["ap_first_20pct"] || $col["ap_p80_100"] != $col["ap_last_20pct"]) {
          print "quintiles of " k; exit }
      if ($col["q_resid0_ks_p"] < 0 || $col["q_resid0_ks_p"] > 1) { print "ks p of " k; exit } }' "$P" "$H")
expect_same "$check" "" "head scalars ($check)"

# exact mode: every eligible pair of every kept bin is evaluated once and
# lands in one heatmap cell
check=$(awk -F'\t' '
    FILENAME == ARGV[1] { if (FNR > 1 && $8 != "nan") ev[$1 "/" $2] += $7; next }
    FILENAME == ARGV[2] { if (FNR > 1) cell[$1 "/" $2] += $6; next }
    FNR > 1 { k = $1 "/" $2
      if ($NF != ev[k] || $NF != cell[k] || $NF < 1000) { print k ": " $NF " " ev[k] " " cell[k]; exit } }' \
    "$P" "$C" "$H")
expect_same "$check" "" "evaluation counts agree ($check)"

# the model: profile = mean over heads of the kept bins; ap_overall = mean of heads
check=$(awk -F'\t' '
    FILENAME == ARGV[1] { if (FNR > 1 && $8 != "nan") { n[$4]++; s[$4] += $8 } next }
    FILENAME == ARGV[2] { if (FNR > 1) { rows++
        if ($4 != n[$1]) { print "n_heads of bin " $1; exit }
        d = $5 - s[$1] / n[$1]; if (d < 0) d = -d; if (d > 1e-12) { print "model bin " $1; exit } }
        next }
    FILENAME == ARGV[3] { if (FNR > 1) { heads++; sum += $20 } next }
    FNR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { d = $col["ap_overall"] - sum / heads; if (d < 0) d = -d; if (d > 1e-12) { print "model ap_overall"; exit }
      for (i = col["ap_overall"]; i <= col["ap_profile_mean"]; i++)
          if (i != col["ap_drop"] && i != col["recovery"] && $i != "nan" && ($i < 0 || $i > 1)) {
              print "model column " i; exit }
      if (rows != length(n)) print "model profile rows " rows " vs bins " length(n) }' \
    "$P" "$MP" "$H" "$M")
expect_same "$check" "" "model aggregation ($check)"
expect_same "$(head -1 "$H" | cut -f20)" ap_overall "ap_overall is column 20 of the heads table"

# ---- options ------------------------------------------------------------------------

run bin/qk-plasticity --quiet --pairs sample --pairs-per-bin 8 --out-dir "$T/sample" "$STORE"
expect_status 0 "qk-plasticity --pairs sample"
if cmp -s "$T/sample/plasticity_profile.tsv" "$P"; then bad "sampling changed nothing"; else ok; fi
check=$(awk -F'\t' 'NR > 1 && $8 != "nan" && ($8 < 0 || $8 > 1) { print "ap " $8; exit }' \
    "$T/sample/plasticity_profile.tsv")
expect_same "$check" "" "sampled ap in [0,1]"
run bin/qk-plasticity --quiet --pairs sample --pairs-per-bin 8 --threads 1 --out-dir "$T/sample1" "$STORE"
if cmp -s "$T/sample/plasticity_profile.tsv" "$T/sample1/plasticity_profile.tsv"; then ok; else
    bad "seeded sampling differs between thread counts"; fi
run bin/qk-plasticity --quiet --cov full --out-dir "$T/full" "$STORE"
expect_status 0 "qk-plasticity --cov full"
check=$(awk -F'\t' 'NR > 1 && $8 != "nan" && ($8 < 0 || $8 > 1) { print "ap " $8; exit }' \
    "$T/full/plasticity_profile.tsv")
expect_same "$check" "" "full-covariance ap in [0,1]"
if cmp -s "$T/full/plasticity_profile.tsv" "$P"; then bad "--cov full changed nothing"; else ok; fi
run bin/qk-plasticity --quiet --min-pairs 1000000 --out-dir "$T/none" "$STORE"
expect_status 0 "qk-plasticity with every bin dropped"
expect_same "$(awk -F'\t' 'NR > 1 && $8 != "nan"' "$T/none/plasticity_profile.tsv" | wc -l)" 0 \
    "no bin kept"
expect_same "$(wc -l < "$T/none/plasticity_model_profile.tsv")" 1 "empty model profile"

# ---- bad input and usage -------------------------------------------------------------

run bin/qk-plasticity --out-dir "$T/bad" "$T/missing.qks"
expect_status 2 "missing store"
expect_one_line_naming "$T/missing.qks" "cannot open" "missing store message"

cp "$STORE" "$T/corrupt.qks"
printf '\x55\x55\x55\x55' | dd of="$T/corrupt.qks" bs=1 seek=4096 conv=notrunc status=none
run bin/qk-plasticity --out-dir "$T/bad" "$T/corrupt.qks"
expect_status 2 "corrupt store"
expect_one_line_naming "$T/corrupt.qks" "checksum" "corrupt store message"
expect_missing "$T/bad/plasticity_heads.tsv" "no output from a corrupt store"

head -c 3000 "$STORE" > "$T/short.qks"
run bin/qk-plasticity --out-dir "$T/bad" "$T/short.qks"
expect_status 2 "truncated store"
expect_one_line_naming "$T/short.qks" "truncated" "truncated store message"

run bin/qk-plasticity
expect_status 1 "no store"
run bin/qk-plasticity --threads 0 "$STORE"
expect_status 1 "--threads 0"
run bin/qk-plasticity --cov sparse "$STORE"
expect_status 1 "--cov sparse"
expect_out_contains_err "--cov" "--cov error names the option"
run bin/qk-plasticity --p-alpha 2 "$STORE"
expect_status 1 "--p-alpha 2"
run bin/qk-plasticity --help
expect_status 0 "--help"
expect_out "Usage: qk-plasticity" "--help text"
run bin/qk-plasticity --version
expect_out "qk-plasticity " "--version"

# ---- merged study tables ---------------------------------------------------------------

run bin/qk-merge --model-from-dir --strip-prefix smollm3-3b- --output "$T/m.csv" "$M"
expect_status 0 "qk-merge of the model row"
expect_file_line "$T/m.csv" 1 "model,n_heads,n_heads_valid,context_length" "merged model header"
expect_file_line "$T/m.csv" 2 "stage1-step-40000,4,4,4096,256," "merged model row"

finish
