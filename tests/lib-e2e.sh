# Assertions shared by the end-to-end test scripts (sourced).
# run CMD...: runs a command, keeping its status, stdout and stderr.
e2e_passed=0
e2e_failed=0
e2e_out=$(mktemp)
e2e_err=$(mktemp)
trap 'rm -f "$e2e_out" "$e2e_err"' EXIT

run() {
    "$@" > "$e2e_out" 2> "$e2e_err"
    e2e_status=$?
}

ok() { e2e_passed=$((e2e_passed + 1)); }
bad() {
    e2e_failed=$((e2e_failed + 1))
    echo "FAIL: $1" >&2
    [ -s "$e2e_err" ] && sed 's/^/  stderr: /' "$e2e_err" | head -5 >&2
}

expect_status() { # expected, name
    if [ "$e2e_status" -eq "$1" ]; then ok; else bad "$2 (status $e2e_status, expected $1)"; fi
}

expect_status_in() { # "list", name
    for s in $1; do [ "$e2e_status" -eq "$s" ] && { ok; return; }; done
    bad "$2 (status $e2e_status, expected one of $1)"
}

expect_out() { # text, name
    if grep -qF -- "$1" "$e2e_out"; then ok; else bad "$2 (stdout lacks '$1')"; fi
}

expect_out_lines() { # count, name
    local n
    n=$(wc -l < "$e2e_out")
    if [ "$n" -eq "$1" ]; then ok; else bad "$2 ($n lines, expected $1)"; fi
}

expect_out_contains_err() { # text, name
    if grep -qF -- "$1" "$e2e_err"; then ok; else bad "$2 (stderr lacks '$1')"; fi
}

# stderr is exactly one line, naming the file and containing the text
expect_one_line_naming() { # path, text, name
    local n
    n=$(wc -l < "$e2e_err")
    if [ "$n" -ne 1 ]; then bad "$3 ($n lines on stderr)"; return; fi
    if ! grep -qF -- "$1" "$e2e_err"; then bad "$3 (does not name $1)"; return; fi
    if ! grep -qiF -- "$2" "$e2e_err"; then bad "$3 (lacks '$2')"; return; fi
    ok
}

expect_same() { # a, b, name
    if [ "$1" == "$2" ]; then ok; else bad "$3"; fi
}

expect_missing() { # path, name
    if [ ! -e "$1" ]; then ok; else bad "$2 ($1 exists)"; fi
}

expect_no_temporaries() { # dir, name
    if ls "$1" | grep -q '\.tmp\.'; then bad "$2"; else ok; fi
}

expect_file_line() { # file, line number, prefix, name
    local line
    line=$(sed -n "${2}p" "$1")
    if [[ "$line" == "$3"* ]]; then ok; else bad "$4 (line $2 is '$line')"; fi
}

# compares the JSON line on stdout with a truth.json (rows, dim, sums)
expect_stats_match() { # truth.json, name
    if python3 - "$1" "$e2e_out" <<'PY'; then ok; else bad "$2"; fi
import json, sys
truth = json.load(open(sys.argv[1]))
got = json.loads(open(sys.argv[2]).readline())
for k in ("rows", "dim", "position_sum", "example_id_sum"):
    if got[k] != truth[k]:
        sys.exit(f"{k}: {got[k]} != {truth[k]}")
for k in ("vector_sum", "vector_abs_sum"):
    t, g = truth[k], got[k]
    if abs(g - t) > 1e-9 * max(1.0, abs(t)):
        sys.exit(f"{k}: {g!r} != {t!r}")
PY
}

finish() {
    echo "$(basename "$0"): $e2e_passed passed, $e2e_failed failed"
    [ "$e2e_failed" -eq 0 ]
}

# copy_tree DEST: the project's files in DEST, plus the compiled programs
# and library (mtimes kept, so nothing recompiles), for running make there.
copy_tree() {
    rm -rf "$1" && mkdir -p "$1/build"
    git ls-files --cached --others --exclude-standard -z | grep -zv '^tests/data/' |
        xargs -0 cp --parents -p -t "$1" 2>/dev/null
    cp -a bin "$1/" && cp -a build/lib build/obj "$1/build/"
    [ -d build/progs ] && cp -a build/progs "$1/build/"
    return 0
}

# outputs_digest TREE: one line per file of results/, figures/ and report/
# with its SHA-256, for comparing two runs byte for byte.
outputs_digest() {
    (cd "$1" && find results figures report -type f -print0 2>/dev/null | sort -z |
        xargs -0 sha256sum)
}

# stages_ran: the stage programs (and datasets) in make's output, one per
# line, e.g. "qk-load llama3.2-1b", for the record of what a run did.
stages_ran() {
    sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$e2e_out" | grep -oE '^[[:space:]]*bin/qk-[a-z-]+ .*' | sed 's/^[[:space:]]*//' | awk '{
        ds = "-"
        if (match($0, /--dataset [^ ]+/)) ds = substr($0, RSTART + 10, RLENGTH - 10)
        else if (match($0, /build\/[^\/ ]+\//)) ds = substr($0, RSTART + 6, RLENGTH - 7)
        sub(/^bin\//, "", $1); print $1, ds }' | sort | uniq -c | awk '{ print $2, $3, "x" $1 }'
}
