#!/bin/bash
# The figure registry workflow/figures.rec is the one place a figure is
# declared:
#   - every draw function it names is defined in src/qk-plot/, and every draw
#     function defined there (int PREFIX_draw_NAME(fig_ctx *ctx, qk_err *err))
#     is a figure's; the check fails on a registry with a figure whose
#     function is missing, and on sources with a function no figure names;
#   - the headers qk-plot and qk-report are compiled with are those the
#     registry gives now;
#   - qk-plot lists the registry's figures in its order, and writes for each
#     the registry's title, description and needs text (drawn as the canvas
#     of a run that has none of its inputs), with its {model} and {NAME}
#     values filled in;
#   - a malformed registry stops the generator with a line naming the line.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

for p in qk-plot qk-report; do
    [ -x "bin/$p" ] || { echo "FAIL: bin/$p is missing (make bin/$p)" >&2; exit 1; }
done
T=build/tests/tmp/e2e-figure-registry
rm -rf "$T" && mkdir -p "$T"
REG=workflow/figures.rec
emit() { awk -f workflow/figures.awk -v emit="$1" "${2:-$REG}"; }

# ---- draw functions: declared <-> defined ------------------------------------------------
# draw_mismatch REGISTRY SOURCES...: one line per draw function the registry
# names but the sources do not define, or the sources define but no figure names
draw_mismatch() {
    local reg=$1
    shift
    comm -3 <(emit texts "$reg" | cut -f5 | sort -u) \
        <(sed -n 's/^int \([a-z][a-z0-9]*_draw_[a-z0-9_]*\)(fig_ctx \*ctx, qk_err \*err)$/\1/p' "$@" |
          sort -u)
}
expect_same "$(draw_mismatch "$REG" src/qk-plot/*.c)" "" \
    "every figure's draw function is defined, every draw function is a figure's"
# a figure whose function is missing
{ cat "$REG"; printf '\nid: qk-pca/99\nfolder: 99_scratch\nnumber: 2.99\nlike: qk-pca/05\n'
  printf 'model: -\ninputs: qk=x.csv\nalt: x\ncaption: x\ndraw: pca_draw_no_such\n'; } > "$T/extra.rec"
expect_same "$(draw_mismatch "$T/extra.rec" src/qk-plot/*.c | tr -d '\t')" "pca_draw_no_such" \
    "the check finds a figure without its draw function"
# a draw function no figure names
printf 'int pca_draw_orphan(fig_ctx *ctx, qk_err *err)\n{\n    return 0;\n}\n' > "$T/orphan.c"
expect_same "$(draw_mismatch "$REG" src/qk-plot/*.c "$T/orphan.c" | tr -d '\t')" "pca_draw_orphan" \
    "the check finds a draw function no figure names"

# ---- the generated headers are the registry's -------------------------------------------
for h in qk-plot/figure_draw qk-plot/figure_table qk-report/figure_blocks; do
    if emit "${h#*/}" | cmp -s - "build/gen/$h.h"; then ok; else
        bad "build/gen/$h.h is not what $REG gives (make programs)"
    fi
done
# qk-plot was linked after its generated table was written
if [ bin/qk-plot -nt build/gen/qk-plot/figure_table.h ]; then ok; else bad "bin/qk-plot older than its table"; fi
if [ bin/qk-report -nt build/gen/qk-report/figure_blocks.h ]; then ok; else
    bad "bin/qk-report older than its figure blocks"
fi

# ---- qk-plot's table is the registry ------------------------------------------------------
n=$(emit ids | wc -l)
expect_same "$(bin/qk-plot --list | awk '{ print $1 }')" "$(emit ids)" \
    "qk-plot --list gives the registry's $n figures in its order"
expect_same "$(bin/qk-plot --list | sed 's/^  [^ ]* *//')" "$(emit texts | cut -f2)" \
    "qk-plot --list gives the registry's titles"
# Every figure drawn as the canvas of a run with none of its inputs: its
# readme.tsv and key numbers hold the registry's texts ({model} is the
# model's id, the run having no registry input; {NAME} the --value given).
fill() { sed -e "s/{model}/$2/g" -e 's/{seed}/7/g' -e 's/{panels}/3/g' <<< "$1"; }
while IFS='|' read -r study folder model stages inputs values; do
    id="$study/${folder%%_*}"
    absent=()
    for i in ${inputs//;/ }; do absent+=(--absent "${i%%=*}"); done
    model_args=()
    [ "$model" != - ] && model_args=(--model some-model)
    run bin/qk-plot --figure "$id" --out "$T/$folder" "${absent[@]}" "${model_args[@]}" \
        --value seed=7 --value panels=3 --run-datasets "none"
    expect_status 0 "$id: its canvas is drawn"
    IFS=$'\t' read -r _ title description needs _ _ < <(emit texts | grep -F "$id"$'\t')
    expect_same "$(sed -n 's/^figure_title\t//p' "$T/$folder/readme.tsv")" "$(fill "$title" some-model)" \
        "$id: the registry's title"
    expect_same "$(sed -n 's/^figure_description\t//p' "$T/$folder/readme.tsv")" \
        "$(fill "$description" some-model)" "$id: the registry's description"
    expect_same "$(sed -n 's/^needs\t//p' "$T/$folder/numbers.tsv")" "$(fill "$needs" some-model)" \
        "$id: the registry's needs text"
    # the canvas's title is the registry's as enhanced text: braces escaped
    # (doubled in the script's string), a word after '_' a subscript at
    # 0.96 of the text (QK_SUB)
    want=$(fill "$title" some-model | sed -e 's/[{}]/\\\\&/g' -e 's|_\([A-Za-z0-9]\{1,\}\)|_{/*1.2 \1}|g')
    expect_same "$(sed -n 's/^set label 901 "\(.*\)" at screen .*/\1/p' "$T/$folder/figure.gp")" "$want" \
        "$id: the canvas's title in markup ($want)"
    # a one-model figure's canvas names the parameter of its model
    if [ "$model" != - ]; then
        param=${model#\$(}
        param=${param%)}
        if grep -qF "Its model is chosen by the parameter $param (now some-model)." "$T/$folder/numbers.tsv"; then
            ok; else bad "$id: the canvas names its model parameter $param"; fi
    fi
done < <(emit make)
expect_same "$(grep -h '^figure_description' "$T"/*/readme.tsv | grep -c 'random.Random(7)\.sample.*, 3 of them')" 1 \
    "the collage's description quotes the seed and panels given"

# ---- a malformed registry ----------------------------------------------------------------
bad_registry() { # text appended, expected message part, name
    { cat "$REG"; printf '\n%s\n' "$1"; } > "$T/bad.rec"
    run awk -f workflow/figures.awk -v emit=make "$T/bad.rec"
    expect_status 1 "$3: exit status"
    expect_one_line_naming "$T/bad.rec:" "$2" "$3: message"
}
bad_registry $'id: qk-pca/05\nfolder: 05_again\nnumber: 2.5\nlike: qk-pca/05\nmodel: -\ninputs: a=b\nalt: x\ncaption: x' \
    "declared twice" "a figure declared twice"
bad_registry $'id: qk-pca/99\nfolder: 99_x\nnumber: 2.99\nlike: qk-pca/05\nmodel: -\ninputs: a=b\ncaption: x' \
    "no 'alt'" "a figure without its alt text"
bad_registry $'id: qk-pca/99\nfolder: 12_x\nnumber: 2.99\nlike: qk-pca/05\nmodel: -\ninputs: a=b\nalt: x\ncaption: x' \
    "does not start with 99_" "a folder of another number"
bad_registry $'id: qk-pca/99\ncolour: red' "unknown field 'colour'" "an unknown field"
bad_registry $'+ text' "continuation line" "a continuation line outside a field"
finish
