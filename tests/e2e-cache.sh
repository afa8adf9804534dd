#!/bin/bash
# The cache promise, tested with the real make in copies of the tree: after
# each of these histories, `make report` leaves results/, figures/ and
# report/ byte-identical to a clean build of the same command, and runs
# only the stages it must (printed for each case):
#   - a DATA= run on downloads older than the store, then the demo again;
#   - a subset of the datasets, then all of them;
#   - a figure's datasets left out of a run, then back (drawn again, not the canvas);
#   - a downloaded file replaced by another with an older mtime;
#   - SEED changed for one dataset and changed back;
#   - a synthetic file replaced by hand (said so), then written again by make clean;
#   - a comment added to a program's and a library's source (nothing reruns);
#   - make -n, make -q and make help with other parameters (no record written;
#     after a complete build make -q exits 0 and make -n lists nothing);
#   - the parameters in the records, in the rebuild commands of the report and
#     the figure READMEs (run as printed: up to date), in the archive's name and
#     MANIFEST; a thesis example kept by `make report` and brought up to date.
# Runs that are killed, run together or fail: tests/e2e-interrupt.sh.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

cache_test cache

W=$base/work
copy_tree "$W"
# "downloads": the one dataset written with another seed, files dated 2020
# (as hf download, cp -p, rsync -a and tar keep old mtimes)
bin/qk-synth --quiet --out "$base/dl" --registry workflow/datasets.tsv --dataset "$one" \
    --scale demo --seed 7 || bad "qk-synth writes the downloads"
find "$base/dl" -exec touch -h -d 2020-01-01 {} +
dl=$(pwd)/$base/dl

clean_digest demo DATASETS="$sets" report
clean_digest data DATA="$dl" DATASETS="$one" report
# ---- 1. the demo, then DATA= with older files, then the demo again ----------------
mk "$W" DATASETS="$sets" report
expect_status 0 "demo build"
# the datasets are one value of the parameter records and tables, and the
# rebuild commands carry them, quoted for the shell
expect_same "$(cat "$W/build/params/run.txt")" "DATA=
DATASETS=$sets" "build/params/run.txt: DATASETS whole on one line"
expect_same "$(awk -F'\t' '$1 == "run"' "$W/build/report/parameters.tsv")" "run	DATA	
run	DATASETS	$sets" "the parameter table's rows of DATA and DATASETS"
expect_same "$(awk -F'\t' 'NR > 1 && ($2 == "" || NF != 3)' "$W/build/report/parameters.tsv")" "" \
    "every row of the parameter table names its parameter"
fig=$(ls -d "$W"/figures/qk-pca/02_*)
expect_same "$(sed -n '/^```sh$/{n;p;}' "$fig/README.md")" "make figures/qk-pca/02 DATASETS='$sets'" \
    "the figure README's rebuild command"
if grep -qF "Rebuild with \`make figures/qk-pca/02 DATASETS='$sets'\` (or everything with \`make report DATASETS='$sets'\`)" \
    <(tr '\n' ' ' < "$fig/README.md"); then ok; else bad "the figure README's provenance names the rebuild commands"; fi
expect_same "$(grep -cF "<code>make report<span data-qv=\"rebuild_args\"> DATASETS='$sets'</span></code>" \
    "$W/report/index.html")" 2 "the report's rebuild commands (header and provenance)"
# run as printed (the README's two commands), they find everything up to date;
# without the datasets they do not
mapfile -t cmds < <(sed -n '/^```sh$/{n;p;}' "$fig/README.md"; tr '\n' ' ' < "$fig/README.md" |
    grep -oE 'everything with `make report[^`]*`' | sed 's/.*`\(.*\)`/\1/')
expect_same "${#cmds[@]}" 2 "the figure README's two rebuild commands"
for cmd in "${cmds[@]}"; do
    eval "run make -C '$W' --no-print-directory -q ${cmd#make }"
    expect_status 0 "$cmd, as printed, is up to date"
done
run make -C "$W" --no-print-directory -q figures/qk-pca/02
expect_status 1 "make figures/qk-pca/02 without the run's datasets is not"
mk "$W" DATA="$dl" DATASETS="$one" report
expect_status 0 "DATA= build"
ran "DATA= after the demo"
expect_ran qk-load "$one" "DATA= after the demo"
expect_ran qk-plasticity "$one" "DATA= after the demo"
same_as data "$W" "DATA= after the demo"
expect_same "$(sed -n '/^```sh$/{n;p;}' "$fig/README.md")" "make figures/qk-pca/02 DATA=$dl DATASETS=$one" \
    "the rebuild command names the data folder"
if grep -q "$dl/$one" "$W/report/index.html"; then ok; else bad "the report names the downloads"; fi
mk "$W" DATASETS="$sets" report
expect_status 0 "demo after DATA="
ran "demo after DATA="
expect_ran qk-load "$one" "demo after DATA="
for d in smollm3-3b-stage1-step-40000 mistral-v0.2-7b; do
    expect_not_ran qk-load "$d" "demo after DATA="
    expect_not_ran qk-pca "$d" "demo after DATA="
done
expect_not_ran qk-synth "$one" "demo after DATA= (its synthetic data are intact)"
same_as demo "$W" "demo after DATA="

# ---- 2. a subset, then all -------------------------------------------------------
mk "$W" DATASETS="$one" report
expect_status 0 "subset build"
mk "$W" DATASETS="$sets" report
expect_status 0 "all after the subset"
ran "all after a subset"
for d in $sets; do expect_not_ran qk-load "$d" "all after a subset"; done
same_as demo "$W" "all after a subset"
mk "$W" DATASETS="$sets" report
if stages_ran | grep -q .; then bad "a second make report runs nothing ($(stages_ran | head -2 | tr '\n' ' '))"; else ok; fi

# ---- 2b. a figure's data gone, then back ------------------------------------------
# The rotation collages (qk-rotation/01, 08) of one dataset: their inputs are
# build/ files, which are older than the canvas a run without that dataset
# draws; when the dataset comes back the figures are drawn again.
collages=ROT_FIG_DATASET=$one
mk "$W" DATASETS="$sets" "$collages" report
expect_status 0 "the rotation collages of $one"
if grep -qF "make report<span data-qv=\"rebuild_args\"> DATASETS='$sets' ROT_FIG_DATASET=$one</span>" \
    "$W/report/index.html"; then ok; else bad "the rebuild command names the parameters set, sorted"; fi
outputs_digest "$W" > "$base/collages.digest"
mk "$W" DATASETS=mistral-v0.2-7b "$collages" report
expect_status 0 "a run without $one"
for n in 01 08; do
    if grep -q '^drawn	no' "$W"/figures/qk-rotation/${n}_*/numbers.tsv; then ok; else
        bad "a run without $one draws the canvas of qk-rotation/$n"; fi
done
mk "$W" DATASETS="$sets" "$collages" report
expect_status 0 "$one back"
if diff <(outputs_digest "$W") "$base/collages.digest" > "$base/diff.txt"; then ok; else
    bad "$one back: outputs differ from before the run without it ($(grep -c '^[<>]' "$base/diff.txt") lines: $(grep -m2 '^[<>]' "$base/diff.txt" | tr '\n' ' '))"
fi
# a run that changes the datasets but not what the collages lack leaves them
mk "$W" DATASETS="$one" "$collages" report
expect_status 0 "a subset with $one"
if commands_run | grep -qE '^bin/qk-plot --figure qk-rotation/0[18] '; then
    bad "a subset that keeps $one does not redraw the rotation collages"; else ok; fi

# ---- 3. a downloaded file replaced by another with an older mtime ----------------
mk "$W" DATA="$dl" DATASETS="$one" report
expect_status 0 "DATA= build again"
# make -q and -n check the downloads' records without writing them: up to date
mk "$W" DATA="$dl" DATASETS="$one" -q report
expect_status 0 "make -q after a complete DATA= build"
# another head's file copied over it, dated older than everything built
f=$(cd "$dl/$one" && ls -d l*q | head -1)/data.parquet
other=$(cd "$dl/$one" && ls -d l*q | sed -n 2p)/data.parquet
cp "$dl/$one/$other" "$dl/$one/$f"
touch -d 2019-06-01 "$dl/$one/$f"
mk "$W" DATA="$dl" DATASETS="$one" -q report
expect_status 1 "make -q after a file replaced with an older mtime"
mk "$W" DATA="$dl" DATASETS="$one" -n report
if commands_run | grep -q "^bin/qk-load --quiet .*--dataset $one "; then ok; else
    bad "make -n lists the load of a dataset whose file was replaced"; fi
clean_digest replaced DATA="$dl" DATASETS="$one" report
mk "$W" DATA="$dl" DATASETS="$one" report
expect_status 0 "DATA= after a replaced file"
ran "a file replaced with an older mtime"
expect_ran qk-load "$one" "a file replaced with an older mtime"
same_as replaced "$W" "a file replaced with an older mtime"

# a DATA folder holding a real capture beside qk-synth data: the report says
# it is a mix (the capture: qk-synth data whose metadata name a real source)
bin/qk-synth --quiet --out "$base/dl" --registry workflow/datasets.tsv --dataset mistral-v0.2-7b \
    --scale demo --seed 5 || bad "qk-synth writes a second download"
sed -i 's/"synthetic:qk-synth"/"viktoroo\/longbench-pro-128k-plus"/' "$dl/mistral-v0.2-7b/_saver_state.json"
mk "$W" DATA="$dl" DATASETS="$one mistral-v0.2-7b" report
expect_status 0 "DATA= with a capture and qk-synth data"
if grep -q "a mix of sources: 1 downloaded captures, 1 copies of qk-synth data" "$W/report/index.html"; then
    ok; else bad "the report says the data are a mix"; fi
if grep -q "$dl/mistral-v0.2-7b<" "$W/report/index.html" &&
   grep -q "$dl/$one (written by qk-synth)" "$W/report/index.html"; then ok; else
    bad "the inventory names each dataset's origin"; fi
rm -rf "$dl/mistral-v0.2-7b"

# ---- 4. SEED changed for one dataset and changed back -----------------------------
mk "$W" DATASETS="$sets" report
mk "$W" DATASETS="$one" SEED=11 report
expect_status 0 "SEED=11 for one dataset"
ran "SEED changed"
expect_ran qk-synth "$one" "SEED changed"
mk "$W" DATASETS="$sets" report
expect_status 0 "SEED back"
ran "SEED changed back"
expect_ran qk-synth "$one" "SEED changed back"
for d in smollm3-3b-stage1-step-40000 mistral-v0.2-7b; do
    expect_not_ran qk-synth "$d" "SEED changed back"
    expect_not_ran qk-load "$d" "SEED changed back"
done
same_as demo "$W" "SEED changed back"

# ---- 4a. a synthetic file edited by hand, then written again ---------------------
# (qk-synth keeps data of the same key; the store's record lists the files)
syn=$W/data/synth/$one
f=$(cd "$syn" && ls -d l*q | head -1)/data.parquet
other=$(cd "$syn" && ls -d l*q | sed -n 2p)/data.parquet
cp "$syn/$other" "$syn/$f"
mk "$W" DATASETS="$sets" -q report
expect_status 1 "make -q after a synthetic file was replaced"
mk "$W" DATASETS="$sets" report
expect_status 0 "make report after a synthetic file was replaced"
ran "a synthetic file replaced by hand"
expect_ran qk-load "$one" "a synthetic file replaced by hand"
expect_not_ran qk-synth "$one" "a synthetic file replaced by hand"
expect_not_ran qk-load mistral-v0.2-7b "a synthetic file replaced by hand"
outputs_digest "$W" > "$base/edited.digest"
if cmp -s "$base/edited.digest" "$base/clean-demo.digest"; then
    bad "a synthetic file replaced by hand changes the results"; else ok; fi
if grep -q "^origin	synthetic (qk-synth, seed .*; files changed since qk-synth wrote them)$" \
    "$W/build/$one/source.txt"; then ok; else bad "the source of the edited data says they were changed"; fi
if grep -q "files changed since qk-synth wrote them" "$W/report/index.html"; then ok; else
    bad "the report's data source says the synthetic files were changed"; fi
# make clean (the records gone): qk-synth writes the edited dataset again
rm -f "$W"/build/*/synth-source.txt "$W"/build/*/synth-key.txt
mk "$W" DATASETS="$sets" report
expect_status 0 "make report after the records of the edited data were removed"
expect_ran qk-synth "$one" "the edited synthetic data, records removed"
same_as demo "$W" "the edited synthetic data written again"

# ---- 4b. a comment added at the top of a stage's source and a library file ----------
# The programs are compiled and linked again, but their code is the same:
# no stage reruns (the debug line tables moved, and the build ID with them).
for f in src/qk-rotate.c src/lib/analysis/rotation.c; do
    sed -i '1i /* a comment that moves every line of the file down */' "$W/$f"
done
mk "$W" DATASETS="$sets" report
expect_status 0 "a comment edit"
if commands_run | grep -q -- '-o bin/qk-rotate\.tmp$'; then ok; else bad "a comment edit relinks qk-rotate"; fi
if stages_ran | grep -q .; then bad "a comment edit reruns nothing ($(stages_ran | head -3 | tr '\n' ' '))"; else ok; fi

# ---- 4b'. other compiler flags recompile the programs (listed by a dry run) ---------
# (the tree's make on its own: under make check an inherited jobserver warns)
solo_make() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$W" --no-print-directory "$@"; }
run solo_make -n CFLAGS="-O2 -g -DQK_OTHER_FLAGS" bin/qk-merge
if grep -q -- '-DQK_OTHER_FLAGS .*-c src/lib/' "$e2e_out" && grep -q -- '-DQK_OTHER_FLAGS .*src/qk-merge.c' "$e2e_out"; then
    ok; else bad "CFLAGS changed: the library and the program are compiled again"; fi
run solo_make -n bin/qk-merge
expect_out "make: 'bin/qk-merge' is up to date." "the same flags: nothing to compile"

# ---- 4c. a dry run, a question and help with other parameters --------------------
# A make that builds nothing leaves the records as they are (content and
# mtime): the next make report runs nothing. The dry run still lists the
# stages the parameter feeds.
records() { (cd "$1" && find build/params build/sets -type f -printf '%p %T@ ' -exec md5sum {} \; | sort); }
records "$W" > "$base/records.before"
mk "$W" DATASETS="$sets" -q report
expect_status 0 "make -q after a complete build"
mk "$W" DATASETS="$sets" -n report
if commands_run | grep -v '^make' | grep -q .; then
    bad "make -n after a complete build lists nothing ($(commands_run | grep -v '^make' | head -1))"; else ok; fi
mk "$W" DATASETS="$sets" -n report PLAST_MIN_PAIRS=40
expect_status 0 "make -n with another parameter"
if stages_ran | grep -q "^qk-plasticity $one "; then ok; else bad "make -n lists the stages a new parameter reruns"; fi
mk "$W" DATASETS="$sets" -q report PLAST_MIN_PAIRS=40
expect_status 1 "make -q with another parameter: not up to date"
mk "$W" DATASETS="$one" -n report
expect_status 0 "make -n with other datasets"
mk "$W" DATASETS="$sets" help PLAST_MIN_PAIRS=40
expect_status 0 "make help with another parameter"
if diff <(records "$W") "$base/records.before" > "$base/diff.txt"; then ok; else
    bad "a make that builds nothing writes no record ($(grep -m2 '^[<>]' "$base/diff.txt" | tr '\n' ' '))"
fi
mk "$W" DATASETS="$sets" report
expect_status 0 "make report after the dry runs"
if stages_ran | grep -q .; then bad "after make -n, -q and help, make report runs nothing ($(stages_ran | head -3 | tr '\n' ' '))"; else ok; fi
# a dry run in a fresh tree (no record yet) works and writes none
copy_tree "$base/dry"
rm -rf "$base/dry/build/progs"
mk "$base/dry" DATASETS="$sets" -n report
expect_status 0 "make -n in a fresh tree"
if find "$base/dry/build/params" "$base/dry/build/sets" -type f | grep -q .; then
    bad "make -n in a fresh tree writes no record"; else ok; fi

# ---- 5. the thesis example beside the report; the archive's name and MANIFEST ----------
# (pdflatex: `make thesis-example` installs it as root, workflow/deps.sh latex)
pdf=$W/report/thesis-example.pdf
mk "$W" DATASETS="$sets" thesis-example
expect_status 0 "make thesis-example"
pdf_sum=$(sha256sum < "$pdf" 2>/dev/null)
mk "$W" DATASETS="$sets" report
expect_status 0 "make report after make thesis-example"
expect_same "$(sha256sum < "$pdf" 2>/dev/null)" "$pdf_sum" "a no-op make report keeps the thesis example"
if stages_ran | grep -q . || commands_run | grep -q '^workflow/pdflatex'; then bad "and runs nothing"; else ok; fi
mk "$W" DATASETS="$sets" PCA_TAX_HIGH=0.8 report
expect_status 0 "make report with another parameter"
if [ -n "$(type -P pdflatex)" ]; then
    if commands_run | grep -q '^workflow/pdflatex.sh ' && [ "$pdf" -nt "$W/report/numbers.tex" ]; then ok; else
        bad "the thesis example is compiled again from the new report"; fi
else
    expect_missing "$pdf" "without pdflatex, the thesis example of other numbers is removed"
fi
# archives of other parameters get other names; MANIFEST holds every parameter group
mk "$W" DATASETS="$sets" PCA_TAX_HIGH=0.8 archive
expect_status 0 "make archive PCA_TAX_HIGH=0.8"
mk "$W" DATASETS="$sets" archive
expect_status 0 "make archive"
expect_same "$(sha256sum < "$pdf")" "$pdf_sum" "the thesis example of the same inputs has the same bytes"
commit=$(git describe --always --dirty 2>/dev/null || echo unknown)
for run_args in "DATASETS='$sets'|0.7" "DATASETS='$sets' PCA_TAX_HIGH=0.8|0.8"; do
    args=${run_args%|*} high=${run_args##*|}
    a=$W/dist/qkreport-results-$commit-$(printf '%s' "$args" | sha256sum | cut -c1-8).tar.gz
    if [ -s "$a" ]; then ok; else bad "make archive $args writes $(basename "$a") ($(ls "$W/dist" | tr '\n' ' '))"; fi
    tar -xzOf "$a" MANIFEST 2>/dev/null | grep '^param ' | grep -v '^param BLAS=' > "$base/params.txt"
    awk -F'\t' -v high="$high" 'NR > 1 { if ($1 "." $2 == "pca.PCA_TAX_HIGH") $3 = high; print "param " $1 "." $2 "=" $3 }' \
        "$W/build/report/parameters.tsv" | LC_ALL=C sort -s -t= -k1,1 > "$base/params.want"
    if diff -q "$base/params.want" "$base/params.txt" > /dev/null; then ok; else
        bad "MANIFEST of $args: every row of the parameter table ($(diff "$base/params.want" "$base/params.txt" | grep -m2 '^[<>]' | tr '\n' ' '))"
    fi
    for p in "run.DATASETS=$sets" "pca.PCA_TAX_HIGH=$high" "synth.SEED=20260215" "figure-models.qk-pca/06=llama3.2-3b"; do
        if grep -qxF "param $p" "$base/params.txt"; then ok; else bad "MANIFEST of $args records $p"; fi
    done
done
expect_same "$(ls "$W/dist" | wc -l)" 2 "two archives in dist/"
# the default parameters keep the plain name
mk "$W" -n archive
if commands_run | grep -q -- "--output dist/qkreport-results-$commit.tar.gz "; then ok; else
    bad "make archive with the default parameters writes dist/qkreport-results-$commit.tar.gz"; fi

finish
