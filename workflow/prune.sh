#!/bin/bash
# prune.sh LIST: removes from results/, figures/ and report/ what LIST (one
# path a line: files, and figure directories ending in /) does not name,
# so that these folders hold exactly the outputs of the current run.
# Tracked documentation (figures/README.md, report/README.md) stays.
set -u
list=$1
keep=$(mktemp)
trap 'rm -f "$keep"' EXIT
{ cat "$list"; echo figures/README.md; echo report/README.md; } | sed 's|/$||' | sort -u > "$keep"
# figure directories are kept whole; every other file must be listed
for d in figures/*/*/; do
    [ -d "$d" ] || continue
    grep -qxF "${d%/}" "$keep" || rm -rf "$d"
done
find results report figures -maxdepth 1 -type f 2>/dev/null | sort |
    comm -23 - "$keep" | while IFS= read -r f; do rm -f "$f"; done
find results -mindepth 2 -type f 2>/dev/null | sort | comm -23 - "$keep" |
    while IFS= read -r f; do rm -f "$f"; done
find results figures -mindepth 1 -type d -empty -delete 2>/dev/null
echo ok
