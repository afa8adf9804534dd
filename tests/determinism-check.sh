#!/bin/bash
# Two clean runs of `make report archive`, each in its own copy of the
# source tree, must give byte-identical results, figures, report, stores
# and archive.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

base=build/determinism
rm -rf "$base" && mkdir -p "$base"
for copy in a b; do
    mkdir -p "$base/$copy"
    git ls-files --cached --others --exclude-standard -z |
        xargs -0 cp --parents -t "$base/$copy" 2>/dev/null
    run make -C "$base/$copy" --no-print-directory -j2 report archive "$@"
    expect_status 0 "clean run $copy: make report archive"
    [ "$e2e_status" -eq 0 ] || tail -5 "$e2e_err" >&2
done
for dir in results figures report dist; do
    if diff -r -q "$base/a/$dir" "$base/b/$dir" > "$base/diff-$dir.txt"; then ok; else
        bad "$dir differs: $(head -3 "$base/diff-$dir.txt" | tr '\n' ' ')"
    fi
done
stores_a=$(cd "$base/a" && sha256sum build/*/store.qks)
stores_b=$(cd "$base/b" && sha256sum build/*/store.qks)
expect_same "$stores_a" "$stores_b" "stores identical"
n=$(find "$base/a/figures" -name figure.png | wc -l)
if [ "$n" -ge 1 ]; then ok; else bad "figures were rendered ($n)"; fi
if ls "$base"/a/dist/*.tar.gz >/dev/null 2>&1; then ok; else bad "archive written"; fi
finish
