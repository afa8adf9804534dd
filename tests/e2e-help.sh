#!/bin/bash
# The command line of every program comes from its option table: --help
# exits 0 with the usage line, the description, the options (each shared
# one spelled as everywhere else), the exit status and an example;
# --version prints the name and version; an unknown option is a usage
# error; -o, where a program has it, is its primary output FILE.
set -u
cd "$(dirname "$0")/.."
source tests/lib-e2e.sh

progs=(qk-synth qk-load qk-pca qk-taxonomy qk-rotate qk-complement qk-plasticity qk-merge
       qk-joint qk-pca-collage qk-rotation-points qk-plot qk-summary qk-report qk-archive
       qk-bench-load qk-bench-pca qk-bench-rotate qk-bench-stages)
for p in "${progs[@]}"; do
    [ -x "bin/$p" ] || { bad "bin/$p missing (make programs)"; continue; }
    run "bin/$p" --help
    expect_status 0 "$p --help"
    expect_same "$(head -1 "$e2e_out" | cut -d' ' -f1-2)" "Usage: $p" "$p --help: usage line"
    for part in "Options:" "  -h, --help" "      --version" "Exit status: 0 success, 1 usage error" \
                "Example: $p"; do
        expect_out "$part" "$p --help: '$part'"
    done
    # the shared options, where a program has them, read the same everywhere
    while IFS= read -r line; do
        case "$line" in
        *" --output "*) expect_same "${line:0:19}" "  -o, --output FILE" "$p: -o is --output FILE" ;;
        *" --threads "*) expect_same "${line:0:17}" "  -j, --threads N" "$p: -j is --threads N" ;;
        *" --quiet"*) expect_same "${line:0:13}" "  -q, --quiet" "$p: -q is --quiet" ;;
        *"  -o, "*) bad "$p: -o is not --output: $line" ;;
        esac
    done < <(grep -E '^  (-[a-zA-Z], )?--' "$e2e_out")
    run "bin/$p" --version
    expect_same "$(cat "$e2e_out")" "$p 0.1.0" "$p --version"
    run "bin/$p" --no-such-option
    expect_status 1 "$p --no-such-option"
done

# qk-plasticity: -o is the per-head table, no longer the output directory
run bin/qk-plasticity --help
expect_out "  -o, --output FILE" "qk-plasticity -o is a file"
expect_out "      --out-dir DIR" "qk-plasticity --out-dir is the directory"
# qk-synth and qk-plot write directories: --out, and no -o
for p in qk-synth qk-plot; do
    run "bin/$p" -o "build/tests/tmp/no-such-dir"
    expect_status 1 "$p -o is no option"
done
finish
