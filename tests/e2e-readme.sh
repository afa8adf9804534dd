#!/bin/bash
# The README's example commands that choose datasets or one figure, run as
# written (in a copy of the tree, with a downloads/ folder of two small
# synthetic datasets standing in for real downloads): each builds what it
# promises, whatever ran before it.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

T=build/tests/tmp/readme
copy_tree "$T"
for d in qwen3-8b llama3.2-3b; do
    bin/qk-synth --quiet --out "$T/downloads" --registry workflow/datasets.tsv --dataset "$d" \
        --scale demo --seed 3 || bad "qk-synth writes downloads/$d"
done
# (the same data under a name with a space, for the example of any folder name)
cp -r "$T/downloads" "$T/my downloads"

# the commands: `make report DATASETS=...`, `make report DATA=downloads ...`
# and `make figures/...` lines of README.md, without their comments
mapfile -t cmds < <(grep -oE '`?make (report (DATA|DATASETS)=[^`#|]*|figures/[a-z-]+/[0-9]+)' README.md |
    tr -d '`' | grep -v /path/to | sed 's/[[:space:]]*$//' | sort -u)
if [ "${#cmds[@]}" -ge 4 ]; then ok; else bad "README has its example commands (${#cmds[@]} found)"; fi

for cmd in "${cmds[@]}"; do
    # shellcheck disable=SC2086
    eval "run make -C '$T' --no-print-directory -j2 ${cmd#make }"
    expect_status 0 "README example: $cmd"
    case $cmd in
    *figures/*)
        n=${cmd##*/}
        if ls "$T/${cmd#make }"_*/figure.png > /dev/null 2>&1; then ok; else bad "$cmd draws figure $n"; fi ;;
    *)
        if [ -s "$T/report/index.html" ]; then ok; else bad "$cmd writes the report"; fi
        want=$(echo "$cmd" | grep -oE 'DATASETS=("[^"]*"|[^ ]*)' | cut -d= -f2 | tr -d '"')
        [ -z "$want" ] && want="llama3.2-3b qwen3-8b"
        got=$(awk -F'\t' 'NR > 1 { print $1 }' "$T/build/report/inventory.tsv" | sort | tr '\n' ' ')
        expect_same "$got" "$(echo $want | tr ' ' '\n' | sort | tr '\n' ' ')" "$cmd: the inventory lists exactly its datasets"
        ;;
    esac
done
finish
