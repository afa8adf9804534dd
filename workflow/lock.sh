#!/bin/bash
# lock.sh DIR PID: takes the build lock DIR/.lock for process PID (the make
# that parses the Makefile) and holds it until PID exits, or prints one
# line and fails when another make of this tree holds it. The lock is an
# flock(1) on a file descriptor that a background watcher keeps open while
# that make runs: it is released whenever the make ends, also by kill -9,
# and when it is a zombie its parent has not reaped.
# Once held, it removes the temporaries of builds that were killed.
set -u
dir=$1 pid=$2
mkdir -p "$dir"
exec 9>>"$dir/.lock"
. workflow/alive.sh
list() { tr '\n' ',' | sed 's/,$//; s/,/, /g'; }

# stop_leftovers LOCK: this make holds the tree's lock, so no other make of
# the tree runs: what still holds the steps' lock LOCK was left running by
# a stopped make (a step stuck past its make's end). It is stopped as its
# make would have, SIGTERM, then SIGKILL; succeeds with LOCK taken on fd 7.
stop_leftovers() {
    local sig left
    exec 7>&-
    left=$(holders "$1" | list)
    [ -n "$left" ] && echo "qkreport: stopping what a stopped make left running in this tree: pid $left" >&2
    for sig in TERM KILL; do
        holders "$1" | while read -r left _; do
            kill -"$sig" "$left" 2>/dev/null && kill -CONT "$left" 2>/dev/null
        done
        exec 7>>"$1"
        flock -w 5 -x 7 && return 0
        exec 7>&-
    done
    return 1
}
# A make that just ended may hold the lock a moment longer (its watcher
# polls it every 0.2 s): wait for it only when its make is gone.
holder=$(cat "$dir/.lock.pid" 2>/dev/null)
if ! flock -n 9 && { [ -n "$holder" ] && alive "$holder" || ! flock -w 2 9; }; then
    echo "another make is running in this tree${holder:+ (pid $holder)}; wait for it to finish or stop it"
    exit 0
fi
echo "$pid" > "$dir/.lock.pid"
# The steps of a make killed alone stop within a second (workflow/qk-step);
# wait for them, so that none writes an output once this make has read the
# cache.
exec 7>>"$dir/.steps.lock"
if ! flock -w 10 -x 7 && ! stop_leftovers "$dir/.steps.lock"; then
    left=$(holders "$dir/.steps.lock" | list)
    echo "a step of a stopped make is still running in this tree (${left:+pid $left, }holding $dir/.steps.lock); wait for it to finish or stop it"
    exit 0
fi
exec 7>&-
# the watcher that holds the lock (fd 9) while the make runs
( exec 7>&- >/dev/null 2>&1 </dev/null; while alive "$pid"; do sleep 0.2; done ) &
# A publication a killed make began after its commit point is finished
# first (workflow/publish.sh), so that results/, figures/ and report/ are
# one run's.
workflow/publish.sh --resume ||
    { echo "cannot finish the publication of build/publish/journal (the line above says why; remove the journal to go on, and make report to publish again)"; exit 0; }
# (copies of the tree that tests build under build/ have their own make
# and lock: any folder holding a Makefile is left alone)
# (found first, by name: a test for each of thousands of folders took seconds)
for d in bin build results figures report dist data/synth; do
    [ -d "$d" ] || continue
    prune=()
    while IFS= read -r -d '' copy; do
        prune+=(-path "$copy" -o)
    done < <(find "$d" -mindepth 2 -name Makefile -type f -printf '%h\0' 2>/dev/null)
    find "$d" -mindepth 1 \( "${prune[@]}" -false \) -prune -o \
        \( -name '*.tmp.*' -o -name '*.tmp' -o -name '*.new' -o -name '.*.qkpub' \) -type f -print0 2>/dev/null |
        xargs -0 -r rm -f
done
# qk-synth builds a dataset in data/synth/.<id>.tmp-XXXXXX and swaps it in
[ -d data/synth ] && find data/synth -maxdepth 1 \( -name '.*.tmp-*' -o -name '.*.old-*' \) \
    -type d -exec rm -rf {} + 2>/dev/null
echo ok
