#!/bin/bash
# qk-test: alone (it kills runs and times them: a test beside it would slow them)
# A failed run never touches the last good report. On a complete build,
# each way a run can fail (a parameter refused, gnuplot failing, a corrupt
# Parquet file, a full disk while figures, the report or the publication
# are written, Ctrl-C, kill -9), under -j1 and -j2, leaves results/,
# figures/ and report/ byte for byte as they were, and says so in its last
# line; a refused input runs no stage; the next good run gives the bytes of
# a clean build. A DATA folder with a space and quotes in its name works,
# and a make left a zombie by its parent does not hold the lock.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh
tree_under e2e-failsafe
sets="llama3.2-1b smollm3-3b-stage1-step-40000"

mk() { run env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TREE" --no-print-directory DATASETS="$sets" "$@"; }
# mk_limited KB ARGS...: mk with files limited to KB (a full disk)
mk_limited() {
    local kb=$1
    shift
    run bash -c 'ulimit -f "$0"; exec "$@"' "$kb" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
        make -C "$TREE" --no-print-directory DATASETS="$sets" "$@"
}
published() { outputs_digest "$TREE" | sha256sum; }
# the steps of the pipeline in make's output (compiling is no stage)
stages_in_output() { grep -E '^  (SYNTH|LOAD|PCA|TAXON|ROTATE|COMPLEM|PLAST|MERGE|SUMMARY|JOINT|COLLAGE|POINTS|PLOT|README|REPORT|PUBLISH) ' "$e2e_out"; }
# (the last line of the run's own: make's "make: *** [Makefile:N: report]
# Error 2" follows it)
last_line_says_unchanged() { # name
    if grep -v '^make: \*\*\* ' "$e2e_err" | tail -1 | grep -q "results/, figures/ and report/ are unchanged"; then ok; else
        bad "$1: the last line says the published folders are unchanged ($(tail -2 "$e2e_err" | head -1))"; fi
}

mk -j2 report
expect_status 0 "a complete build"
clean=$(published)
(cd "$TREE" && outputs_digest .) > "$T/clean.sha"

# ---- every input refused before any work, in one line ---------------------------------
# refused NAME=VALUE TEXT: both -j1 and -j2 stop with status 2, one line
# naming the parameter, no stage, nothing published
refused() {
    local j
    for j in -j1 -j2; do
        mk $j report "$1"
        expect_status 2 "$1 ($j): status 2"
        if [ "$(grep -c "^make: ${1%%=*}=" "$e2e_err")" -eq 1 ] && grep -qF "$2" "$e2e_err"; then ok; else
            bad "$1 ($j): one line naming the parameter and '$2'"; sed 's/^/  /' "$e2e_err" >&2; fi
        expect_same "$(stages_in_output)" "" "$1 ($j): no stage ran"
        expect_same "$(published)" "$clean" "$1 ($j): results/, figures/ and report/ unchanged"
        last_line_says_unchanged "$1 ($j)"
    done
}
refused FIG_MIN_SHARE=nan "FIG_MIN_SHARE=nan"
refused PCA_TAX_HIGH=2 "[0, 1]"
refused PCA_TAX_HIGH=abc "abc"
refused PCA_TAX_LOW=0.8 "above"
refused SEED=99999999999999999999 "18446744073709551615"
refused SEED=-1 "SEED=-1"
refused MIN_FREE=abc "MIN_FREE=abc"
refused PLAST_MIN_PAIRS=1e400 "PLAST_MIN_PAIRS"
refused ROT_FIG_DATASET=no-such-model "not a dataset"
refused PLAST_THREADS=0 "PLAST_THREADS=0"
refused V=2 "one of"
refused BLAS_CORE=NoSuchKernel "OPENBLAS_CORETYPE=NoSuchKernel asked for"
# the refused runs wrote no record: the next run runs nothing
mk report
expect_same "$(stages_in_output)" "" "after refused values, make report runs nothing"
mk -q report
expect_status 0 "after refused values, make -q report: up to date"

# ---- failures during the run ----------------------------------------------------------
# fails_untouched NAME: the last run failed and published nothing
fails_untouched() {
    expect_status 2 "$1: status 2"
    expect_same "$(published)" "$clean" "$1: results/, figures/ and report/ unchanged"
    last_line_says_unchanged "$1"
    if find "$TREE/results" "$TREE/figures" "$TREE/report" -name '.*.qkpub' | grep -q .; then
        bad "$1: no temporary left in the published folders"; else ok; fi
}

# gnuplot fails: a gnuplot on the PATH that exits 1
badbin=$(pwd)/$T/badbin
mkdir -p "$badbin"
printf '#!/bin/sh\ncat > /dev/null\nexit 1\n' > "$badbin/gnuplot" && chmod +x "$badbin/gnuplot"
for j in -j1 -j2; do
    PATH="$badbin:$PATH" mk $j report FIG_MIN_SHARE=0.6
    fails_untouched "gnuplot failing ($j)"
done

# a full disk (a file size limit) while the figures are drawn, then while
# the report is written (a template changed, so that only it is remade)
for j in -j1 -j2; do
    mk_limited 40 $j report FIG_MIN_SHARE=0.6
    fails_untouched "full disk at the figures ($j)"
done
mk report
echo '<!-- one more line -->' >> "$TREE/templates/report.html.in"
for j in -j1 -j2; do
    mk_limited 40 $j report
    fails_untouched "full disk at the report ($j)"
done

# a full disk while publishing: a published figure removed by hand is
# copied back, and cannot be
rm "$TREE/figures/qk-pca/05_explained_variance/figure.png"
gone=$(published)
mk_limited 20 report
expect_status 2 "full disk at the publication: status 2"
expect_same "$(published)" "$gone" "full disk at the publication: the published folders as they were"
if find "$TREE/results" "$TREE/figures" "$TREE/report" -name '.*.qkpub' | grep -q .; then
    bad "full disk at the publication: no temporary left"; else ok; fi
git -C "$TREE" checkout -q templates/report.html.in 2>/dev/null ||
    sed -i '$d' "$TREE/templates/report.html.in"

# a corrupt Parquet file of a download
dl=$D
mkdir -p "$dl"
cp -r "$TREE/data/synth/llama3.2-1b" "$dl/"
mk report DATA="$dl" DATASETS=llama3.2-1b
expect_status 0 "a build of a download"
dlclean=$(published)
q=$(ls -d "$dl"/llama3.2-1b/l*q | head -1)
printf 'PAR1 not a parquet file' > "$q/data.parquet"
for j in -j1 -j2; do
    mk $j report DATA="$dl" DATASETS=llama3.2-1b
    expect_status 2 "a corrupt Parquet file ($j): status 2"
    expect_same "$(published)" "$dlclean" "a corrupt Parquet file ($j): published folders unchanged"
    last_line_says_unchanged "a corrupt Parquet file ($j)"
done

# a qkreport.conf line without '=': one line naming the conf and the line
mkdir -p "$dl/my-model" && cp -r "$dl/llama3.2-1b/"* "$dl/my-model/"
printf 'study = attention_plasticity\nfamily mine\n' > "$dl/my-model/qkreport.conf"
for j in -j1 -j2; do
    mk $j report DATA="$dl" DATASETS=
    expect_status 2 "a conf line without '=' ($j): status 2"
    if [ "$(grep -v '^make: \*\*\* ' "$e2e_err" | grep -c .)" -eq 2 ] &&
       grep -qF "$dl/my-model/qkreport.conf: line 2: expected 'key = value'" "$e2e_err"; then ok; else
        bad "a conf line without '=' ($j): one line naming the conf and its line"; fi
    expect_same "$(stages_in_output)" "" "a conf line without '=' ($j): no stage ran"
    expect_same "$(published)" "$dlclean" "a conf line without '=' ($j): published folders unchanged"
    last_line_says_unchanged "a conf line without '=' ($j)"
done
rm -rf "${dl:?}/my-model"

# Ctrl-C and kill -9 in the middle of a run
mk report
expect_status 0 "a good run before the kills"
before=$(published)
for sig in INT KILL; do
    # (a process group of its own, as a terminal gives a job: the subshell
    # leads no group, so setsid makes it one in place, its pid the group's,
    # and execs make in it; with SIGINT as a terminal's Ctrl-C finds it, not
    # ignored, as a shell without job control leaves it for a command in the
    # background, and as CI may start the whole check)
    ( exec setsid env --default-signal=INT -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$TREE" \
        --no-print-directory -j2 DATASETS="$sets" report SEED=7 > "$T/kill.out" 2>&1 ) &
    pid=$!
    # (in the middle: once the first figure is drawn, before the report)
    for _ in $(seq 1800); do grep -q '^  PLOT ' "$T/kill.out" && break; sleep 0.1; done
    if kill -"$sig" -- -"$pid"; then ok; else bad "SIG$sig: the run's process group $pid was signalled"; fi
    wait "$pid" 2>/dev/null
    sleep 1
    if grep -q '^  PUBLISH ' "$T/kill.out"; then bad "SIG$sig: the run was stopped before it published"; else ok; fi
    expect_same "$(published)" "$before" "SIG$sig in the middle of a run: published folders unchanged"
done

# a step a stopped make left running, stuck and deaf to SIGTERM: the next
# make stops it (it holds the steps' lock as a step does, workflow/qk-step)
(cd "$TREE" && exec 8>>build/.steps.lock && flock -s 8 && trap '' TERM && exec sleep 600) &
leftover=$!
disown "$leftover" # (no "Killed" line of this shell's)
sleep 0.5

# ---- the next good run gives the bytes of a clean build ------------------------------
mk -j2 report
expect_status 0 "a good run after the failures"
if grep -q "^qkreport: stopping what a stopped make left running in this tree: pid .*$leftover sleep" "$e2e_err"; then ok; else
    bad "the next make says it stops a step left running"; fi
# (ended: gone, or a zombie this shell has not reaped)
case $(cut -d' ' -f3 "/proc/$leftover/stat" 2>/dev/null) in
    "" | Z) ok ;;
    *) bad "the next make stops a step left running"; kill -9 "$leftover" ;;
esac
(cd "$TREE" && outputs_digest .) > "$T/after.sha"
if diff "$T/clean.sha" "$T/after.sha" > "$T/after.diff"; then ok; else
    bad "after the failures, a good run gives the bytes of the clean build ($(head -3 "$T/after.diff"))"; fi

# ---- a published file edited by hand is published again --------------------------------
# (also after a goal that publishes a part: it must not take the edit as published)
f=$(ls "$TREE"/results/*/qk.csv | head -1)
echo "edited by hand" >> "$f"
mk figures/qk-pca/05
expect_status 0 "make figures/qk-pca/05 after a hand edit"
mk report
expect_status 0 "make report after a hand edit and a figure goal"
(cd "$TREE" && outputs_digest .) > "$T/edited.sha"
if diff -q "$T/clean.sha" "$T/edited.sha" > /dev/null; then ok; else bad "make report publishes a hand-edited file again"; fi
# two publications at once (make -j2 pca rotation) wait for each other
rm -f "$TREE"/figures/qk-pca/05_*/figure.png "$TREE"/results/*/rotated.csv
(cd "$TREE" && workflow/publish.sh all build/sets/publish-report.txt & (cd "$TREE" &&
    workflow/publish.sh some build/sets/publish-figures-qk-pca-05.txt); wait)
(cd "$TREE" && outputs_digest .) > "$T/twice.sha"
if diff -q "$T/clean.sha" "$T/twice.sha" > /dev/null; then ok; else bad "two publications at once publish the run whole"; fi

# ---- any name --------------------------------------------------------------------------
odd="$D/../with space and 'quote' ü"
mkdir -p "$odd"
cp -r "$TREE/data/synth/llama3.2-1b" "$odd/"
mk report DATA="$odd" DATASETS=llama3.2-1b
expect_status 0 "DATA with a space, quotes and a non-ASCII letter"
if grep -qF "DATA=" "$TREE/report/index.html"; then ok; else bad "the report names the DATA folder"; fi

# ---- a zombie make does not hold the lock ---------------------------------------------
python3 - "$TREE" <<'PY' > "$T/zombie.out"
import os, subprocess, sys, time
tree = sys.argv[1]
env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
p = subprocess.Popen(["make", "-C", tree, "--no-print-directory", "report", "PLAST_MIN_PAIRS=29"],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
time.sleep(1.5)
os.kill(p.pid, 9)
time.sleep(0.5)
state = open(f"/proc/{p.pid}/stat").read().rsplit(") ", 1)[1][0]
r = subprocess.run(["make", "-C", tree, "--no-print-directory", "-q", "report"],
                   capture_output=True, text=True, env=env)
print(state, "another make" in r.stderr)
p.wait()
PY
expect_same "$(cat "$T/zombie.out")" "Z False" "a zombie make does not hold the lock"

finish
