#!/bin/bash
# End to end: the ten figures of the rotation study (qk-plot), the point data
# of figures 01 and 08 (qk-rotation-points) and the report numbers
# (qk-summary --section rotation) on a tiny synthetic run of three models and three
# SmolLM3 checkpoints, six heads each; the rules the figures follow (Simpson's paradox by
# rule, intervals on few heads, the context of a checkpoint, points below 50 heads).
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh

for p in qk-synth qk-load qk-rotate qk-complement qk-merge qk-plot qk-report \
         qk-rotation-points qk-summary; do
    if [ ! -x "bin/$p" ]; then
        echo "FAIL: bin/$p is missing (make bin/$p)" >&2
        exit 1
    fi
done

T=build/tests/tmp/e2e-rotation-figures
rm -rf "$T"
mkdir -p "$T/results/cross" "$T/results/training"
CROSS="qwen3-0.6b llama3.2-3b ministral3-3b"
TRAINING="smollm3-3b-stage1-step-40000 smollm3-3b-stage3-step-4720000 smollm3-3b-lc-4k-to-32k-step-4000"
REG=workflow/datasets.tsv

# ---- a tiny pipeline run, as workflow/rotation.mk runs it ----------------------------

synth_args=()
for d in $CROSS $TRAINING; do synth_args+=(--dataset "$d"); done
run bin/qk-synth --quiet --out "$T/data" --heads 6 "${synth_args[@]}"
expect_status 0 "qk-synth writes the datasets"
registry_cell() { # id, column number
    awk -F'\t' -v id="$1" -v c="$2" '$1 == id { print $c }' "$REG"
}
for d in $CROSS $TRAINING; do
    B=$T/build/$d
    mkdir -p "$B"
    checkpoint=-
    case $d in smollm3-*) checkpoint=$(registry_cell "$d" 4) ;; esac
    bin/qk-load --quiet --dataset "$d" "$T/data/$d" -o "$B/store.qks" &&
    bin/qk-rotate --quiet --threads 1 --family "$(registry_cell "$d" 3)" --checkpoint "$checkpoint" \
        "$B/store.qks" &&
    bin/qk-complement --quiet --threads 1 "$B/store.qks" || bad "pipeline on $d"
done
merge() { # prefix, output, inputs...
    local prefix=$1 out=$2
    shift 2
    bin/qk-merge --model-from-dir ${prefix:+--strip-prefix "$prefix"} --output "$out" "$@" ||
        bad "qk-merge $out"
}
X=$T/results/cross
TR=$T/results/training
merge "" "$X/rotated.csv" $(for d in $CROSS; do echo "$T/build/$d/rotated.tsv"; done)
merge smollm3-3b- "$TR/rotated.csv" $(for d in $TRAINING; do echo "$T/build/$d/rotated.tsv"; done)
bin/qk-rotate --summary --output "$X/model_summary.csv" "$X/rotated.csv" &&
bin/qk-rotate --summary --output "$TR/model_summary.csv" "$TR/rotated.csv" || bad "qk-rotate --summary"

# ---- the point data of figures 01 and 08 ----------------------------------------------

D=$T/build/llama3.2-3b
PTS=$T/points
run bin/qk-rotation-points --max-points 300 --complement-max-points 200 \
    --ab-output "$PTS-ab.tsv" --complement-output "$PTS-c.tsv" --panels-output "$PTS-p.tsv" \
    "$D/store.qks"
expect_status 0 "qk-rotation-points writes its tables"
expect_same "$(awk 'NR > 1' "$PTS-p.tsv" | wc -l)" 4 "four panels"
check=$(awk -F'\t' 'NR > 1 { n[$1 $2]++ } END { for (k in n) if (n[k] > 300) print k }' "$PTS-ab.tsv")
expect_same "$check" "" "at most --max-points points per kind and panel ($check)"
check=$(awk -F'\t' 'NR > 1 { n[$1 $2]++ } END { for (k in n) if (n[k] > 200) print k }' "$PTS-c.tsv")
expect_same "$check" "" "at most --complement-max-points points per kind and pair ($check)"
expect_same "$(awk -F'\t' 'NR > 1 { print $1 }' "$PTS-c.tsv" | sort -un | wc -l)" 30 \
    "the complement points cover 30 pairs"
expect_same "$(awk -F'\t' 'NR > 1 && $2 == 0 { print $12 }' "$PTS-p.tsv")" 30 \
    "the first drawn head carries the complement"
# the heads drawn are Python's random.Random(42).sample of the sorted heads
if command -v python3 > /dev/null; then
    want=$(python3 - "$D/rotation.tsv" <<'PY'
import csv, random, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
heads = sorted((int(r["layer"]), int(r["head"])) for r in rows)
print(" ".join(f"{l}/{h}" for l, h in sorted(random.Random(42).sample(heads, 4))))
PY
)
    got=$(awk -F'\t' 'NR > 1 { printf "%s%s/%s", (NR > 2 ? " " : ""), $4, $5 }' "$PTS-p.tsv")
    expect_same "$got" "$want" "heads as random.Random(42).sample ($got vs $want)"
fi
# with every row kept, the mean projections on a and b are the table's cluster means
run bin/qk-rotation-points --max-points 0 --complement-max-points 1 --ab-output "$PTS-all.tsv" \
    --complement-output "$PTS-c1.tsv" --panels-output "$PTS-p1.tsv" "$D/store.qks"
expect_status 0 "qk-rotation-points with every row"
check=$(awk -F'\t' 'function off(x, y) { x -= y; if (x < 0) x = -x; return x > 1e-6 * (1 + (y < 0 ? -y : y)) }
    FILENAME == ARGV[1] { if (FNR > 1) { k = $1 "/" $2; n[k]++; sa[k] += $4; sb[k] += $5 }; next }
    FILENAME == ARGV[2] { if (FNR > 1) panel[$4 "/" $5] = $1; next }
    FNR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    ($c["layer"] "/" $c["head"]) in panel { p = panel[$c["layer"] "/" $c["head"]]; seen++
        if (off(sa[p "/q"] / n[p "/q"], $c["mu_q_a"]) || off(sb[p "/q"] / n[p "/q"], $c["mu_q_b"]) ||
            off(sa[p "/k"] / n[p "/k"], $c["mu_k_a"]) || off(sb[p "/k"] / n[p "/k"], $c["mu_k_b"]))
            print "panel " p }
    END { if (seen != 4) print seen " heads matched" }' "$PTS-all.tsv" "$PTS-p1.tsv" "$D/rotated.tsv")
expect_same "$check" "" "mean point = mu_q_a, mu_k_a, mu_q_b, mu_k_b of rotated.tsv ($check)"

# ---- every figure twice ------------------------------------------------------------------

figure_inputs() { # NN
    case $1 in
    01) echo "points=$PTS-ab.tsv panels=$PTS-p.tsv heads=$D/rotated.tsv registry=$REG" ;;
    08) echo "points=$PTS-c.tsv panels=$PTS-p.tsv heads=$D/rotated.tsv pairs=$D/complement_pairs.tsv registry=$REG" ;;
    02|03) echo "summary=$X/model_summary.csv registry=$REG" ;;
    05) echo "summary=$X/model_summary.csv heads=$X/rotated.csv registry=$REG" ;;
    04|06|07) echo "heads=$X/rotated.csv registry=$REG" ;;
    09|10) echo "summary=$TR/model_summary.csv registry=$REG" ;;
    esac
}
render() { # NN, out-dir
    local args=()
    for i in $(figure_inputs "$1"); do args+=(--input "$i"); done
    run bin/qk-plot --figure "qk-rotation/$1" --out "$2" "${args[@]}"
    expect_status 0 "qk-plot qk-rotation/$1"
    bin/qk-report --markdown --template templates/figure-README.md.in --output "$2/README.md" \
        --values "$2/readme.tsv" --table numbers="$2/numbers.tsv" --table inputs="$2/inputs.tsv" \
        --table stores="$T/stores.tsv" --table parameters="$T/parameters.tsv" \
        --set suite_version=test --set data_source=test --set data_partial= --set rebuild_args= || bad "README of qk-rotation/$1"
}
printf 'dataset\tstore_bytes\tstore_checksum\ntest\t0\t0\n' > "$T/stores.tsv"
printf 'stage\tparameter\tvalue\ntest\tnone\t0\n' > "$T/parameters.tsv"
FIGS="01 02 03 04 05 06 07 08 09 10"
for n in $FIGS; do
    render "$n" "$T/a/$n"
    render "$n" "$T/b/$n"
    png=$T/a/$n/figure.png svg=$T/a/$n/figure.svg
    if [ -s "$png" ] && [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
       [ "$(stat -c %s "$png")" -gt 20000 ]; then ok; else bad "qk-rotation/$n: figure.png missing or trivial"; fi
    if [ -s "$svg" ] && grep -q '<svg' "$svg" && [ "$(stat -c %s "$svg")" -gt 10000 ]; then ok; else
        bad "qk-rotation/$n: figure.svg missing or trivial"; fi
    expect_pdf "$T/a/$n/figure.pdf" "qk-rotation/$n: figure.pdf complete, fonts embedded, dated"
    keys=$(awk 'NR > 1' "$T/a/$n/numbers.tsv" | wc -l)
    if [ "$keys" -ge 2 ] && grep -q '^## Key numbers' "$T/a/$n/README.md" &&
       grep -qF "| $(sed -n 2p "$T/a/$n/numbers.tsv" | cut -f1 | sed 's/|/\\|/g')" "$T/a/$n/README.md"; then
        ok; else bad "qk-rotation/$n: README lacks the key numbers"; fi
    for f in figure.png figure.svg figure.pdf figure.gp README.md numbers.tsv inputs.tsv; do
        cmp -s "$T/a/$n/$f" "$T/b/$n/$f" || bad "qk-rotation/$n: $f differs between two runs"
    done
    ok
done

# ---- extreme magnitudes: vectors scaled by 1e30 and 1e-30 -----------------------------------
# bias_strength and separation_strength scale with the square: times 1e60 and
# 1e-60. Every numeric axis of figures 04 and 07 is then labelled as powers
# of ten: at least two ticks inside the drawn range, distinct labels, each
# label ("2.5×10^{−61}") the value of its position. The bias cells of figure
# 06 read as powers of ten the values of the unscaled figure's cells times
# the factor.
for s in 1e60 1e-60; do
    awk -F, -v OFS=, -v s=$s 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
        { $c["bias_strength"] = sprintf("%.17g", s * $c["bias_strength"])
          $c["separation_strength"] = sprintf("%.17g", s * $c["separation_strength"]); print }' \
        "$X/rotated.csv" > "$T/rotated-$s.csv"
    for n in 04 07; do
        run bin/qk-plot --figure qk-rotation/$n --out "$T/scaled-$s/$n" --input heads="$T/rotated-$s.csv" \
            --input registry=$REG
        expect_status 0 "qk-rotation/$n with values times $s"
        lists=6
        [ "$n" = 04 ] && lists=3 # its y axis names the models' rows
        check=$(python3 - "$T/scaled-$s/$n/figure.gp" "$lists" <<'PY'
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
problems, lists = [], 0
for i, line in enumerate(lines):
    if re.match(r"set [xy]tics [0-9]", line):
        problems.append("fixed-point tics: " + line)
    m = re.match(r"set ([xy])tics \((.*)\)$", line)
    if not m:
        continue
    lists += 1
    axis, ticks = m.group(1), re.findall(r'"([^"]*)" (\S+?)(?:,|$)', m.group(2))
    rng = next(l for l in lines[i:] if l.startswith(f"set {axis}range"))
    lo, hi = (float(x) for x in re.match(r"set .range \[(.*):(.*)\]", rng).groups())
    labels = [t[0] for t in ticks]
    if len(ticks) < 2 or len(set(labels)) != len(labels):
        problems.append("ticks " + line)
    for label, at in ticks:
        at = float(at)
        if not lo <= at <= hi:
            problems.append(f"{label} at {at} outside [{lo}, {hi}]")
        t = label.replace("\u2212", "-")
        p = re.fullmatch(r"(-?\d+(?:\.(\d+))?)×10\^\{(-?\d+)\}", t)
        if t == "0" and at == 0:
            continue
        if not p:
            problems.append("not a power of ten: " + label)
            continue
        value, half = float(p.group(1)) * 10.0 ** int(p.group(3)), 0.5 * 10.0 ** (int(p.group(3)) - len(p.group(2) or ""))
        if abs(value - at) > half:
            problems.append(f"{label} at {at}")
if lists != int(sys.argv[2]):
    problems.append(f"{lists} tick lists")
print("; ".join(problems))
PY
)
        expect_same "$check" "" "qk-rotation/$n times $s: ticks as powers of ten of their positions ($check)"
    done
    run bin/qk-plot --figure qk-rotation/06 --out "$T/scaled-$s/06" --input heads="$T/rotated-$s.csv" \
        --input registry=$REG
    expect_status 0 "qk-rotation/06 with values times $s"
    check=$(python3 - "$T/a/06/figure.gp" "$T/scaled-$s/06/figure.gp" "$s" <<'PY'
import re, sys
def cells(path):
    text = open(path, encoding="utf-8").read()
    block = text.split("$bias << EOD\n", 1)[1].split("EOD\n", 1)[0]
    return [re.match(r'(\d+ \d+) \S+ \d+ "(?:[▲▼] )?(.*)"$', l).groups() for l in block.splitlines()]
scale, problems = float(sys.argv[3]), []
plain, scaled = cells(sys.argv[1]), cells(sys.argv[2])
if len(plain) != len(scaled) or not plain:
    problems.append(f"{len(plain)} and {len(scaled)} cells")
for (at, fixed), (at2, label) in zip(plain, scaled):
    m = re.fullmatch(r"(-?\d\.\d)×10\^\{(-?\d+)\}", label.replace("\u2212", "-"))
    want = float(fixed.replace("\u2212", "-")) * scale
    if at != at2 or not m:
        problems.append(f"cell {at2}: {label}")
    elif abs(float(m.group(1)) * 10.0 ** int(m.group(2)) - want) > 0.006 * scale + 0.051 * abs(want):
        problems.append(f"cell {at}: {label} for {fixed}")
print("; ".join(problems))
PY
)
    expect_same "$check" "" "qk-rotation/06 times $s: the cells are the unscaled cells times $s ($check)"
    expect_same "$(grep -c '^set cbtics (' "$T/scaled-$s/06/figure.gp")" 1 "qk-rotation/06 times $s: the bias colour bar in powers of ten"
done

# ---- one or two families: the y label keeps its room ----------------------------------------
# The canvas of figures 04 and 07 narrows below three families; the left margin (tick labels
# and y label) keeps its width in pixels, the one it has with three families.
left_px() { # figure.gp: the first panel's left margin in pixels of the screen canvas
    awk '/^if \(GPVAL_TERM eq "svg"\)/ { split($0, a, "size "); split(a[2], s, ","); w = s[1] }
         /^set lmargin at screen/ && !l { l = $5 } END { printf "%.0f", l * w }' "$1"
}
awk -F, 'NR == 1 || $2 == "llama"' "$X/rotated.csv" > "$T/one_family.csv"
awk -F, 'NR == 1 || $2 == "llama" || $2 == "qwen"' "$X/rotated.csv" > "$T/two_families.csv"
for n in 04 07; do
    three=$(left_px "$T/a/$n/figure.gp")
    for fams in one_family two_families; do
        run bin/qk-plot --figure qk-rotation/$n --out "$T/$fams/$n" --input heads="$T/$fams.csv" \
            --input registry=$REG
        expect_status 0 "qk-rotation/$n with $fams"
        expect_same "$(left_px "$T/$fams/$n/figure.gp")" "$three" \
            "qk-rotation/$n with $fams: the left margin of three families, $three px"
    done
done
expect_same "$(awk '/^set title/' "$T/one_family/07/figure.gp" | grep -c 'Llama')" 1 "one family: one panel"

# ---- one panel: both colour bars ----------------------------------------------------------
# A panel draws one colour bar; with a single panel the key bar is drawn by a plot of its own.
bars() { # figure.gp: "query key" bars labelled, and the plots of the multiplot
    echo "$(grep -c '^set cblabel "Query position' "$1") $(grep -c '^set cblabel "Key position' "$1") $(grep -c '^plot ' "$1")"
}
run bin/qk-rotation-points --panels 1 --max-points 300 --complement-max-points 200 \
    --ab-output "$PTS-ab1.tsv" --complement-output "$PTS-c1p.tsv" --panels-output "$PTS-p1p.tsv" \
    "$D/store.qks"
expect_status 0 "qk-rotation-points --panels 1"
run bin/qk-plot --figure qk-rotation/01 --out "$T/one/01" --input points="$PTS-ab1.tsv" \
    --input panels="$PTS-p1p.tsv" --input heads="$D/rotated.tsv" --input registry=$REG
expect_status 0 "qk-rotation/01 with one panel"
expect_same "$(bars "$T/one/01/figure.gp")" "1 1 2" "qk-rotation/01, one panel: query and key bars"
if grep -q "queries and keys of one head in its" "$T/one/01/figure.gp"; then ok; else
    bad "qk-rotation/01, one panel: the title says one head"; fi
expect_same "$(bars "$T/a/01/figure.gp")" "1 1 4" "qk-rotation/01, four panels: query and key bars"
# figure 08 of a head with one complement pair (the first pair of the drawn head alone)
read -r layer head < <(awk -F'\t' 'NR > 1 && $2 == 0 { print $4, $5 }' "$PTS-p.tsv")
awk -F'\t' -v OFS='\t' 'NR > 1 && $2 == 0 { $12 = 1 } { print }' "$PTS-p.tsv" > "$PTS-p1pair.tsv"
awk -F'\t' 'NR == 1 || $1 == 0' "$PTS-c.tsv" > "$PTS-c1pair.tsv"
awk -F'\t' -v l="$layer" -v h="$head" 'NR == 1 || !($2 == l && $3 == h) || $5 == 0' \
    "$D/complement_pairs.tsv" > "$T/pairs1.tsv"
run bin/qk-plot --figure qk-rotation/08 --out "$T/one/08" --input points="$PTS-c1pair.tsv" \
    --input panels="$PTS-p1pair.tsv" --input heads="$D/rotated.tsv" --input pairs="$T/pairs1.tsv" \
    --input registry=$REG
expect_status 0 "qk-rotation/08 with one pair"
expect_same "$(awk -F'\t' '$1 == "pairs shown, their share of the complement variance" { print $2 }' \
    "$T/one/08/numbers.tsv" | cut -d, -f1)" 1 "qk-rotation/08: one pair drawn"
expect_same "$(bars "$T/one/08/figure.gp")" "1 1 2" "qk-rotation/08, one pair: query and key bars"
if grep -q "dimensions), its first principal pair" "$T/one/08/figure.gp"; then ok; else
    bad "qk-rotation/08, one pair: the title says one pair"; fi

# ---- a missing input column exits 2 naming the file ---------------------------------------

cut -d, -f1-4,6- "$X/model_summary.csv" > "$T/no_rk.csv" # drops mean_abs_r_k_a
run bin/qk-plot --figure qk-rotation/02 --out "$T/bad02" --input "summary=$T/no_rk.csv" \
    --input "registry=$REG"
expect_status 2 "figure 02 without mean_abs_r_k_a"
expect_one_line_naming "$T/no_rk.csv" "mean_abs_r_k_a" "figure 02 names the file and the column"
c=$(head -1 "$X/rotated.csv" | tr ',' '\n' | grep -nx bias_strength | cut -d: -f1)
cut -d, -f"1-$((c - 1)),$((c + 1))-" "$X/rotated.csv" > "$T/no_bias.csv"
run bin/qk-plot --figure qk-rotation/07 --out "$T/bad07" --input "heads=$T/no_bias.csv" \
    --input "registry=$REG"
expect_status 2 "figure 07 without bias_strength"
expect_one_line_naming "$T/no_bias.csv" "bias_strength" "figure 07 names the file and the column"
run bin/qk-plot --figure qk-rotation/08 --out "$T/bad08" --input "points=$PTS-c.tsv" \
    --input "panels=$PTS-p.tsv" --input "heads=$D/rotated.tsv" --input "pairs=$T/no_bias.csv" \
    --input "registry=$REG"
expect_status 2 "figure 08 with a pairs table that is not one"
expect_out_contains_err "$T/no_bias.csv" "figure 08 names the pairs table"

# ---- key numbers against an independent computation ------------------------------------

key() { # figure, quantity
    awk -F'\t' -v q="$2" '$1 == q { print $2 }' "$T/a/$1/numbers.tsv"
}
col() { head -1 "$1" | tr ',' '\n' | grep -nx "$2" | cut -d: -f1; }
want=$(awk -F, -v c="$(col "$X/rotated.csv" r_k_a)" 'NR > 1 { v = $c; s += (v < 0 ? -v : v); n++ }
    END { printf "%.3f", s / n }' "$X/rotated.csv")
got=$(key 02 "mean |r_k_a| over heads (over model means)")
expect_same "${got%% *}" "$want" "figure 02: mean |r_k_a| over heads = awk ($got vs $want)"
want=$(awk -F, -v c="$(col "$X/rotated.csv" bias_strength)" 'NR > 1 { n++; p += ($c > 0) }
    END { printf "%d of %d (%.1f%%)", p, n, 100 * p / n }' "$X/rotated.csv")
expect_same "$(key 04 "heads with bias_strength > 0")" "$want" "figure 04: heads with bias > 0 = awk ($want)"
if command -v python3 > /dev/null; then
    want=$(python3 - "$X/rotated.csv" <<'PY'
import csv, math, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
fam = [r for r in rows if r["family"] == "llama"]
x = [float(r["separation_strength"]) for r in fam]
y = [float(r["bias_strength"]) for r in fam]
mx, my = sum(x) / len(x), sum(y) / len(y)
sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
sxx = sum((a - mx) ** 2 for a in x)
syy = sum((b - my) ** 2 for b in y)
print(f"{sxy / math.sqrt(sxx * syy):+.3f} ({len(fam)})")
PY
)
    expect_same "$(key 07 "Llama-3.2: Pearson r (heads)")" "$want" \
        "figure 07: Pearson r of the Llama family = python ($want)"
    want=$(python3 - "$X/rotated.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
v = [float(r["slope_ratio"]) for r in rows if r["slope_ratio"] != "nan"]
print(f"{statistics.median(v):.2f} ({len(v)} heads)")
PY
)
    expect_same "$(key 05 "median over all heads")" "$want" "figure 05: pooled median slope ratio = python ($want)"
fi
# figure 07's family r equals model_summary.csv's family_bias_sep_r
want=$(awk -F, -v c="$(col "$X/model_summary.csv" family_bias_sep_r)" '$1 == "ministral3-3b" { printf "%+.3f", $c }' \
    "$X/model_summary.csv")
got=$(key 07 "Ministral-3: Pearson r (heads)")
expect_same "${got%% *}" "$want" "figure 07: Ministral r = model_summary.csv ($got vs $want)"

# ---- figure 07 claims Simpson's paradox by the rule, as the report's text does -------------
# the rule (docs/report-numbers.md): every family with an r (at least two) has the sign
# opposite to the pooled r, both signs sure by their 95 % intervals
title07() { grep '^set multiplot title' "$1/figure.gp"; }
simpson_py() { # rotated.csv -> "yes"/"no", by the rule, computed independently
    python3 - "$1" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def r(sub):
    p = [(float(x["separation_strength"]), float(x["bias_strength"])) for x in sub]
    p = [(a, b) for a, b in p if math.isfinite(a) and math.isfinite(b)]
    if len(p) < 3: return None
    mx = sum(a for a, _ in p) / len(p); my = sum(b for _, b in p) / len(p)
    sxy = sum((a - mx) * (b - my) for a, b in p); sxx = sum((a - mx) ** 2 for a, _ in p)
    syy = sum((b - my) ** 2 for _, b in p)
    v = sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else None
    return None if v is None else (v, len(p))
def sure_sign(c):  # the sign its Fisher 95 % interval is sure of, else 0
    if c is None or c[1] < 4: return 0
    if abs(c[0]) == 1: return 1 if c[0] > 0 else -1
    z, h = math.atanh(c[0]), 1.959964 / math.sqrt(c[1] - 3)
    lo, hi = math.tanh(z - h), math.tanh(z + h)
    return 1 if lo > 0 else -1 if hi < 0 else 0
pooled = sure_sign(r(rows))
fam = [r([x for x in rows if x["family"] == f]) for f in sorted({x["family"] for x in rows})]
fam = [c for c in fam if c is not None]
print("yes" if pooled and len(fam) >= 2 and all(sure_sign(c) == -pooled for c in fam) else "no")
PY
}
want=$(simpson_py "$X/rotated.csv")
expect_same "$(key 07 "Simpson's reversal (every family r reverses the pooled r, 95% intervals apart from 0)")" "$want" \
    "figure 07: Simpson's reversal on the synthetic run by the rule ($want)"
if [ "$want" = yes ] && title07 "$T/a/07" | grep -q "Simpson's paradox" ||
   [ "$want" = no ] && ! title07 "$T/a/07" | grep -q "Simpson"; then ok; else
    bad "figure 07: the title claims Simpson's paradox exactly when the rule holds"; fi
# planted reversal: within each family the bias falls with the separation, across families
# both rise (families apart by 1 in separation and 10 x 10^-3 in bias)
plant() { # family whose bias rises within it (none: every family's falls)
    awk -F, -v OFS=, -v up="$1" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
        { f = $c["family"]; if (!(f in base)) base[f] = nf++; i = k[f]++
          $c["separation_strength"] = base[f] + 0.01 * i + 0.003 * (i % 3)
          $c["bias_strength"] = 0.001 * (10 * base[f] + (f == up ? 0.5 : -0.5) * i); print }' "$X/rotated.csv"
}
plant none > "$T/simpson.csv"
expect_same "$(simpson_py "$T/simpson.csv")" yes "the planted table reverses in every family"
run bin/qk-plot --figure qk-rotation/07 --out "$T/simpson/07" --input heads="$T/simpson.csv" \
    --input registry=$REG
expect_status 0 "figure 07 on a planted reversal"
if title07 "$T/simpson/07" | grep -q "Simpson's paradox (the pooled r reverses in every family)"; then ok; else
    bad "figure 07: a reversal in every family is titled Simpson's paradox"; fi
# a reversal in some families only: one family's bias turned to rise with the separation
plant qwen > "$T/some.csv"
expect_same "$(simpson_py "$T/some.csv")" no "the second table does not reverse in every family"
run bin/qk-plot --figure qk-rotation/07 --out "$T/some/07" --input heads="$T/some.csv" --input registry=$REG
expect_status 0 "figure 07 on a reversal in some families"
if title07 "$T/some/07" | grep -q "(the pooled r reverses in 2 of 3 families, 95 % intervals apart from 0)" &&
   ! title07 "$T/some/07" | grep -q Simpson; then ok; else
    bad "figure 07: a reversal in 2 of 3 families is said so, not called Simpson's paradox"; fi
# few heads: r with its Fisher-z 95 % interval and n (4 heads of one family)
awk -F, 'NR == 1 || ($2 == "llama" && ++n <= 4)' "$X/rotated.csv" > "$T/four.csv"
run bin/qk-plot --figure qk-rotation/07 --out "$T/four/07" --input heads="$T/four.csv" --input registry=$REG
expect_status 0 "figure 07 on four heads"
want=$(python3 - "$T/four.csv" <<'PY'
import csv, math, sys
rows = list(csv.DictReader(open(sys.argv[1])))
x = [float(r["separation_strength"]) for r in rows]; y = [float(r["bias_strength"]) for r in rows]
mx, my = sum(x) / 4, sum(y) / 4
r = sum((a - mx) * (b - my) for a, b in zip(x, y)) / math.sqrt(
    sum((a - mx) ** 2 for a in x) * sum((b - my) ** 2 for b in y))
h = 1.959964 / math.sqrt(4 - 3)
print(f"{math.tanh(math.atanh(r) - h):+.3f} to {math.tanh(math.atanh(r) + h):+.3f}")
PY
)
expect_same "$(awk -F'\t' '$1 == "Llama-3.2: 95% interval of r (Fisher z)" { print $2 }' "$T/four/07/numbers.tsv")" \
    "$want" "figure 07, four heads: the Fisher-z interval = python ($want)"
if grep -q '^set title "Llama-3.2  (r = .*(95 % CI .* to .*), n = 4 heads)"' "$T/four/07/figure.gp" &&
   ! title07 "$T/four/07" | grep -q Simpson; then ok; else
    bad "figure 07, four heads: the panel gives r with its interval and n, the title no claim"; fi

# ---- figures 09 and 10: the context captured beside training; steps in k = 1000 ----------
for n in 09 10; do
    gp=$T/a/$n/figure.gp
    # the registry's contexts of the three checkpoints: 4K (S1, S3), 32K (LC1)
    expect_same "$(grep -o '{/:Italic [0-9]*K context}' "$gp" | sort -u | tr '\n' ' ')" \
        "{/:Italic 32K context} {/:Italic 4K context} " "figure $n: the context of each run of checkpoints"
    expect_same "$(grep -c 'set arrow 6[0-9] from 1.5, graph 0' "$gp")" 4 \
        "figure $n: a dashed line between the contexts in every panel"
    tics=$(grep -m1 '^set xtics scale 0 ("S1' "$gp")
    if [[ "$tics" == *'"S1\n40k" 0'* && "$tics" == *'"LC1\n4k" 2'* && "$tics" != *[0-9]K\"* ]]; then ok; else
        bad "figure $n: steps with a lowercase k ($tics)"; fi
done
# figure 10's fourth panel: bias x L with L the registry's context length
want=$(awk -F, -v c="$(col "$TR/model_summary.csv" mean_bias_strength)" \
    '$1 == "lc-4k-to-32k-step-4000" { printf "%.4g", $c * 32768 }' "$TR/model_summary.csv")
expect_same "$(key 10 "LC1-4k, mean bias_strength x L")" "$want" "figure 10: bias x L of LC1-4k = awk ($want)"

# ---- figure 04: points below FIG_DENSITY_MIN_N heads, a density from it ------------------
expect_same "$(awk -F'\t' '$1 ~ /: drawn as$/ { print $2 }' "$T/a/04/numbers.tsv" | sort -u)" points \
    "figure 04: six heads a model are drawn as points"
if grep -q 'filledcurves' "$T/a/04/figure.gp"; then bad "figure 04: no density of six heads"; else ok; fi
# one model with 60 heads (its rows ten times, the bias shifted a little each time)
awk -F, -v OFS=, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
    $1 == "qwen3-0.6b" { for (k = 0; k < 10; k++) { $c["bias_strength"] += 1e-5 * k; print }; next } { print }' \
    "$X/rotated.csv" > "$T/sixty.csv"
run bin/qk-plot --figure qk-rotation/04 --out "$T/sixty/04" --input heads="$T/sixty.csv" --input registry=$REG
expect_status 0 "figure 04 with a model of 60 heads"
expect_same "$(awk -F'\t' '$1 ~ /: drawn as$/ { print $1 "=" $2 }' "$T/sixty/04/numbers.tsv" | tr '\n' ' ')" \
    "Llama-3.2-3B: drawn as=points Ministral-3-3B: drawn as=points Qwen3-0.6B: drawn as=density " \
    "figure 04: the model of 60 heads as a density, the others as points"
expect_same "$(grep -c 'with filledcurves' "$T/sixty/04/figure.gp")" 1 "figure 04: one density drawn"
# an r on 30 heads or more without its interval, on fewer with it
run bin/qk-plot --figure qk-rotation/07 --out "$T/sixty/07" --input heads="$T/sixty.csv" --input registry=$REG
expect_status 0 "figure 07 with a family of 60 heads"
if grep -q '^set title "Qwen3  (r = [^(]*, n = 60 heads)"' "$T/sixty/07/figure.gp" &&
   grep -q '^set title "Llama-3.2  (r = .* (95 % CI .*), n = 6 heads)"' "$T/sixty/07/figure.gp"; then ok; else
    bad "figure 07: the interval beside an r of fewer than 30 heads alone"; fi
# heads beyond the scale are drawn, as the note above the panel says
if grep -q '▲ 1 above the scale' "$T/sixty/04/figure.gp" 2> /dev/null ||
   ! grep -q 'above the scale' "$T/a/04/figure.gp"; then ok; else
    bad "figure 04: heads beyond the scale"; fi

# ---- the report numbers ---------------------------------------------------------------------

V=$T/rotation.numbers
# the complement's record, as make writes it, from qk-complement's default
echo "ROT_ACTIVE_TAU=$(bin/qk-complement --print-defaults | awk -F'\t' '$1 == "active-tau" { print $2 }')" \
    > "$T/rotation-complement.txt"
rot_summary() { # output, inputs...
    local out=$1
    shift
    bin/qk-summary --section rotation --input registry="$REG" --params "$T/rotation-complement.txt" \
        "$@" --output "$out"
}
run rot_summary "$V" --input summary="$X/model_summary.csv" --input heads="$X/rotated.csv" \
    --input training-summary="$TR/model_summary.csv" --input training-heads="$TR/rotated.csv"
expect_status 0 "qk-summary --section rotation"
shown() { typeset_value "$V" "$1"; }
want=$(awk -F, -v c="$(col "$X/rotated.csv" bias_strength)" 'NR > 1 { n++; p += ($c > 0) }
    END { printf "%.1f", 100 * p / n }' "$X/rotated.csv")
expect_same "$(shown rotation.bias.positive_pct)" "$want" "rotation.bias.positive_pct = awk ($want)"
want=$(awk -F, -v a="$(col "$X/rotated.csv" var_frac_a)" -v b="$(col "$X/rotated.csv" var_frac_b)" \
    'NR > 1 { n++; k += ($b > $a) } END { printf "%.1f", 100 * k / n }' "$X/rotated.csv")
expect_same "$(shown rotation.var_b_gt_a_pct)" "$want" "rotation.var_b_gt_a_pct = awk ($want)"
want=$(awk -F, -v q="$(col "$X/rotated.csv" r_q_a)" -v k="$(col "$X/rotated.csv" r_k_a)" \
    'NR > 1 { n++; a = $k < 0 ? -$k : $k; b = $q < 0 ? -$q : $q; m += (a > b) }
    END { printf "%.1f", 100 * m / n }' "$X/rotated.csv")
expect_same "$(shown rotation.rk_gt_rq_pct)" "$want" "rotation.rk_gt_rq_pct = awk ($want)"
# heads without spread (NaN metrics) count in no share: the first two heads without var_frac_a
# and r_q_a
awk -F, -v OFS=, -v a="$(col "$X/rotated.csv" var_frac_a)" -v q="$(col "$X/rotated.csv" r_q_a)" \
    'NR == 2 || NR == 3 { $a = "nan"; $q = "nan" } { print }' "$X/rotated.csv" > "$T/nan_rotated.csv"
run rot_summary "$T/nan.numbers" --input summary="$X/model_summary.csv" --input heads="$T/nan_rotated.csv"
expect_status 0 "qk-summary --section rotation with two heads without values"
want=$(awk -F, -v a="$(col "$X/rotated.csv" var_frac_a)" -v b="$(col "$X/rotated.csv" var_frac_b)" \
    'NR > 1 && $a != "nan" { n++; k += ($b > $a) } END { printf "%.1f", 100 * k / n }' "$T/nan_rotated.csv")
expect_same "$(typeset_value "$T/nan.numbers" rotation.var_b_gt_a_pct)" "$want" \
    "rotation.var_b_gt_a_pct over the heads with both values = awk ($want)"
want=$(awk -F, -v q="$(col "$X/rotated.csv" r_q_a)" -v k="$(col "$X/rotated.csv" r_k_a)" \
    'NR > 1 && $q != "nan" { n++; a = $k < 0 ? -$k : $k; b = $q < 0 ? -$q : $q; m += (a > b) }
    END { printf "%.1f", 100 * m / n }' "$T/nan_rotated.csv")
expect_same "$(typeset_value "$T/nan.numbers" rotation.rk_gt_rq_pct)" "$want" \
    "rotation.rk_gt_rq_pct over the heads with both values = awk ($want)"
res=$(number "$V" rotation.residual_max)
if awk -v r="$res" 'BEGIN { exit !(r + 0 < 1e-12) }'; then ok; else bad "residual_pos_r max $res"; fi
# the whole-window bias of the last checkpoint: mean bias x registry context length
want=$(awk -F, -v c="$(col "$TR/model_summary.csv" mean_bias_strength)" \
    '$1 == "lc-4k-to-32k-step-4000" { printf "%.1f", $c * 32768 }' "$TR/model_summary.csv")
expect_same "$(shown rotation.t.last.bias_window)" "$want" "rotation.t.last.bias_window = awk ($want)"
expect_same "$(number "$V" rotation.t.last.label)" "LC1-4k" "the last checkpoint in training order"
expect_same "$(grep -c '^row	rotation.training	' "$V")" 3 "one training row per checkpoint"
expect_same "$(grep -c '^row	rotation.models	' "$V")" 3 "one model row per model"
# the section's heading claims Simpson's paradox by the figure's rule: not on the synthetic run
# unless the rule holds, and on the planted reversal
expect_same "$(number "$V" rotation.r_bias_sep.simpson)" "$([ "$(simpson_py "$X/rotated.csv")" = yes ] && echo 1 || echo 0)" \
    "rotation.r_bias_sep.simpson by the rule of figure 07"
run rot_summary "$T/simpson.numbers" --input summary="$X/model_summary.csv" --input heads="$T/simpson.csv"
expect_status 0 "qk-summary on the planted reversal"
expect_same "$(number "$T/simpson.numbers" rotation.r_bias_sep.simpson)" 1 "rotation.r_bias_sep.simpson on the planted reversal"
run rot_summary "$T/some.numbers" --input summary="$X/model_summary.csv" --input heads="$T/some.csv"
expect_same "$(number "$T/some.numbers" rotation.r_bias_sep.simpson) $(number "$T/some.numbers" rotation.r_bias_sep.families_opposite)" \
    "0 2" "a reversal in 2 of 3 families: no Simpson's paradox, two families opposite"
# the family r of the numbers = the figure's (both from qk/stats.h)
got=$(key 07 "Ministral-3: Pearson r (heads)")
expect_same "$(printf '%+.3f' "$(number "$V" rotation.r_bias_sep.ministral)")" "${got%% *}" \
    "the section's Ministral r = figure 07's"

# the section renders with both studies and with either missing
figure_flags "$T/figures.numbers" qk-rotation/01 qk-rotation/02 qk-rotation/03 qk-rotation/04 \
    qk-rotation/05 qk-rotation/06 qk-rotation/07 qk-rotation/08 qk-rotation/09 qk-rotation/10 ||
    bad "figure flags"
section() { # numbers, name
    run bin/qk-report --template templates/sections/rotation.html.in --output "$T/section.html" \
        --values "$1" --values "$T/figures.numbers"
    expect_status 0 "$2"
}
section "$V" "the section renders"
# every value is defined except the ring accuracy, which needs an active pair
check=$(awk -F'\t' '$1 == "value" && $4 == "" && $2 != "rotation.complement.ring_acc_mean"' "$V")
expect_same "$check" "" "every value defined with both studies ($check)"
if grep -q 'data-qk="rotation.r_bias_sep.pooled"' "$T/section.html" &&
   ! grep -q 'class="absent"' "$T/section.html"; then ok; else bad "full section: values shown, no part left out"; fi
section "$T/simpson.numbers" "the section renders on the planted reversal"
if grep -qF "<h3>3.4 Bias and separation: Simpson's paradox</h3>" "$T/section.html"; then ok; else
    bad "the planted reversal: the heading says Simpson's paradox, as figure 07's title"; fi
section "$T/some.numbers" "the section renders on a reversal in some families"
if grep -qF "<h3>3.4 Bias and separation</h3>" "$T/section.html"; then ok; else
    bad "a reversal in some families: the heading claims no paradox, as figure 07's title"; fi
run rot_summary "$T/cross.numbers" --input summary="$X/model_summary.csv" --input heads="$X/rotated.csv"
expect_status 0 "qk-summary without the training study"
expect_same "$(number "$T/cross.numbers" rotation.t.bias_fall)" "missing" \
    "training values are missing without the study"
expect_same "$(grep -c '^row	rotation.training	' "$T/cross.numbers")" 0 "the training table has no rows"
section "$T/cross.numbers" "the section renders without the training study"
if grep -q 'The SmolLM3-3B checkpoints are not in this run' "$T/section.html"; then ok; else
    bad "without the training study the section says so"; fi
run rot_summary "$T/none.numbers"
expect_status 0 "qk-summary without any study"
section "$T/none.numbers" "the section renders without any study"
expect_same "$(fixed_keys "$V" | tr '\n' ' ')" "$(fixed_keys "$T/none.numbers" | tr '\n' ' ')" \
    "the same keys with and without the studies"

finish
