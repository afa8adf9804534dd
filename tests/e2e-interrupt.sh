#!/bin/bash
# qk-test: alone (it kills runs and times them: a test beside it would slow them)
# The cache promise when runs are interrupted, run together or fail, tested
# with the real make in copies of the tree (as tests/e2e-cache.sh): after
#   - builds killed with SIGKILL at several moments, and a make killed alone
#     (its steps stop within 2 s);
#   - two `make report` started together (one stops at once: the lock);
# `make report` leaves results/, figures/ and report/ byte-identical to a
# clean build; with the records removed (as make clean does) the synthetic
# data of the same key are kept; and a run that fails leaves the previous
# run's outputs.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

cache_test interrupt

clean_digest demo DATASETS="$sets" report

# ---- 1. SIGKILL at several moments -----------------------------------------------
K=$base/killed
copy_tree "$K"
for t in 0.3 0.6 1.0 1.5 2.0; do
    setsid make -C "$K" --no-print-directory -j2 DATASETS="$sets" report > /dev/null 2>&1 &
    pid=$!
    sleep "$t"
    kill -9 -- -"$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
done
mk "$K" DATASETS="$sets" report
expect_status 0 "make report after five kills"
ran "after SIGKILLs"
same_as demo "$K" "after SIGKILLs"
if find "$K/build" "$K/results" "$K/figures" "$K/report" "$K/data" -name '*.tmp*' | grep -q .; then
    bad "temporaries of killed builds are removed"
else ok; fi

# ---- 1b. make killed alone: its steps stop ------------------------------------------
# (kill -9 of make's pid, not of its group, leaves the steps running: they stop
# themselves, and the next make waits for them, so none overwrites its outputs)
procs_in() { # DIR: pids of the processes working in DIR
    local p
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/cwd" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
    done
}
setsid make -C "$K" --no-print-directory -j2 DATASETS="$sets" ROT_OMEGA_GRID=100000 report \
    > /dev/null 2>&1 &
pid=$!
kdir=$(cd "$K" && pwd)
for _ in $(seq 1 200); do # until a slow qk-rotate runs (at most 100 s)
    for p in $(procs_in "$kdir"); do
        grep -qa 'bin/qk-rotate' "/proc/$p/cmdline" 2>/dev/null && break 2
    done
    sleep 0.5
done
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
# (the step takes some 3 s more; a stopped one ends within a second)
for _ in $(seq 1 4); do
    [ -z "$(procs_in "$kdir")" ] && break
    sleep 0.5
done
left=$(procs_in "$kdir" | while read -r p; do tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null; echo; done)
expect_same "$left" "" "the steps of a make killed alone stop within 2 s"
mk "$K" DATASETS="$sets" report
expect_status 0 "make report after a make killed alone"
same_as demo "$K" "after a make killed alone"

# ---- 2. two make report started together -------------------------------------------
C=$base/concurrent
copy_tree "$C"
make -C "$C" --no-print-directory -j2 DATASETS="$sets" report > "$base/c1.out" 2> "$base/c1.err" &
p1=$!
sleep 0.3
make -C "$C" --no-print-directory -j2 DATASETS="$sets" report > "$base/c2.out" 2> "$base/c2.err" &
p2=$!
wait "$p1"; s1=$?
wait "$p2"; s2=$?
if [ "$s1" -eq 0 ]; then ok; else bad "the first make completes ($s1)"; fi
# (a make run from make -jN warns that it resets the jobserver: not its line)
grep -v 'resetting jobserver mode' "$base/c2.err" > "$base/c2.lines"
if [ "$s2" -ne 0 ] && grep -q "another make is running in this tree" "$base/c2.lines" &&
   [ "$(grep -c . "$base/c2.lines")" -eq 1 ] && [ ! -s "$base/c2.out" ]; then ok; else
    bad "the second make stops at once with one line (status $s2: $(head -2 "$base/c2.err" | tr '\n' ' '))"
fi
mk "$C" DATASETS="$sets" report
expect_status 0 "make report after the concurrent pair"
same_as demo "$C" "two makes started together"
# ---- 3. the records removed, as make clean does ----------------------------------------
# make clean keeps data/synth: qk-synth keeps the data made from the same key
# (record and program), and writes the data of a new key
pq=$(ls "$C/data/synth/$one"/l*q/data.parquet | head -1)
before=$(stat -c '%i %y' "$pq")
rm -f "$C"/build/*/synth-source.txt "$C"/build/*/synth-key.txt
mk "$C" DATASETS="$sets" synth
expect_status 0 "make synth without the records"
expect_same "$(stat -c '%i %y' "$pq")" "$before" "make synth without the records keeps the data"
if [ "$C/data/synth/$one/synth-truth.tsv" -nt "$C/build/$one/synth-source.txt" ]; then ok; else
    bad "a kept dataset is newer than its record"; fi
mk "$C" DATASETS="$sets" synth
if stages_ran | grep -q .; then bad "make synth again runs nothing ($(stages_ran | tr '\n' ' '))"; else ok; fi
mk "$C" DATASETS="$one" SEED=3 synth
expect_status 0 "make synth SEED=3"
if [ "$(stat -c '%i %y' "$pq" 2>/dev/null)" != "$before" ] &&
   grep -q 'seed 3,' "$C/data/synth/$one/.synth-key"; then ok; else
    bad "another key writes the data again"; fi
# ---- 4. a run that fails leaves the previous run's outputs -----------------------------
# (the outputs of other datasets are removed only once a run has made all of its own)
mk "$C" DATASETS="$sets" report
expect_status 0 "the full set again"
report_before=$(sha256sum < "$C/report/index.html")
smol_before=$(ls "$C/results/smollm3_training_progress" | wc -l)
mk "$C" DATASETS="$one" PLAST_COV=ful report
if [ "$e2e_status" -ne 0 ]; then ok; else bad "a mistyped PLAST_COV fails"; fi
expect_same "$(ls "$C/results/smollm3_training_progress" | wc -l)" "$smol_before" \
    "a failed run on one dataset keeps the other study's tables"
expect_same "$(sha256sum < "$C/report/index.html")" "$report_before" "a failed run keeps the report"
mk "$C" DATASETS="$one" report
expect_status 0 "the run on one dataset, parameter fixed"
if [ ! -e "$C/results/smollm3_training_progress" ]; then ok; else
    bad "a run that completes removes the tables of the datasets it lacks"; fi
finish
