#!/bin/bash
# prune.sh LIST: removes from results/, figures/ and report/ what LIST (one
# path a line: files, and figure directories ending in /) does not name,
# so that these folders hold exactly the outputs of the current run.
# Tracked documentation (figures/README.md, report/README.md) stays.
# Any failure before the removals (the list unreadable, its sorted copy
# not written) stops it with nothing removed.
set -u -o pipefail
list=$1
# the sorted list goes beside LIST (build/sets/), not to $TMPDIR: an
# unusable TMPDIR must not turn into an empty list that keeps nothing
keep=$list.keep
trap 'rm -f "$keep"' EXIT
{ cat "$list" && echo figures/README.md && echo report/README.md; } | sed 's|/$||' |
    sort -u > "$keep" || { echo "prune.sh: cannot read $list or write $keep" >&2; exit 1; }
[ -s "$keep" ] || { echo "prune.sh: $keep is empty" >&2; exit 1; }
# figure directories are kept whole; every other file must be listed
for d in figures/*/*/; do
    [ -d "$d" ] || continue
    grep -qxF "${d%/}" "$keep"
    case $? in
        0) ;;
        1) rm -rf "$d" ;;
        *) echo "prune.sh: cannot read $keep" >&2; exit 1 ;;
    esac
done
find results report figures -maxdepth 1 -type f 2>/dev/null | sort |
    comm -23 - "$keep" | while IFS= read -r f; do rm -f "$f"; done
find results -mindepth 2 -type f 2>/dev/null | sort | comm -23 - "$keep" |
    while IFS= read -r f; do rm -f "$f"; done
find results figures -mindepth 1 -type d -empty -delete 2>/dev/null
echo ok
