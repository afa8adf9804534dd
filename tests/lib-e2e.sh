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

# stderr has exactly one line per expected prefix, in order, each line
# starting with its prefix
expect_error_lines() { # name, prefix...
    local name=$1 n i=1 line
    shift
    n=$(wc -l < "$e2e_err")
    if [ "$n" -ne $# ]; then bad "$name ($n lines on stderr, expected $#)"; return; fi
    for want in "$@"; do
        line=$(sed -n "${i}p" "$e2e_err")
        if [[ "$line" != "$want"* ]]; then bad "$name (line $i: '$line')"; return; fi
        i=$((i + 1))
    done
    ok
}

expect_same() { # a, b, name (a failure shows the first lines of both)
    if [ "$1" == "$2" ]; then ok; return; fi
    bad "$3"
    printf '%s\n' "$1" | head -3 | cut -c1-200 | sed 's/^/  got:      /' >&2
    printf '%s\n' "$2" | head -3 | cut -c1-200 | sed 's/^/  expected: /' >&2
}

# A complete PDF (qk-plot's figure.pdf) whose fonts are all embedded (cairo
# writes the font dictionaries uncompressed: every /FontDescriptor has its
# /FontFile) and whose date is SOURCE_DATE_EPOCH's (else the epoch).
expect_pdf() { # path, name
    local date descr files
    date=$(date -u -d "@${SOURCE_DATE_EPOCH:-0}" +%Y%m%d%H%M%S)
    descr=$(grep -a -c '/Type /FontDescriptor' "$1" 2> /dev/null)
    files=$(grep -a -c '/FontFile' "$1" 2> /dev/null)
    if [ "$(head -c 5 "$1" 2> /dev/null)" = "%PDF-" ] && tail -c 8 "$1" | grep -q '%%EOF' &&
       [ "${descr:-0}" -ge 1 ] && [ "$descr" -eq "$files" ] &&
       grep -aqF "/CreationDate (D:${date}Z)" "$1"; then ok; else bad "$2"; fi
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

# number FILE KEY: the raw value of KEY in a numbers file (qk-summary), or
# "missing" when the key is there without a value ('' when it is not there).
number() {
    awk -F'\t' -v k="$2" '$1 == "value" && $2 == k { print ($4 == "" ? "missing" : $4) }' "$1"
}

# typeset FILE KEY: the value as the report shows it (qk-report, plain text).
typeset_value() {
    printf '{{%s}}\n' "$2" > "$1.key.in" &&
        bin/qk-report --markdown --template "$1.key.in" --output "$1.key.out" --values "$1" &&
        cat "$1.key.out"
}

# fixed_keys FILE: the keys of a numbers file that are not rows of a table
# (the declared values and fixed records: the same whatever the run holds).
fixed_keys() {
    awk -F'\t' '$1 == "table" { prefix[$2] = $3 } $1 == "row" { row[prefix[$2] "." $3 "."] = 1 }
        $1 == "value" { key[++n] = $2 }
        END { for (i = 1; i <= n; i++) { k = key[i]; skip = 0
                for (r in row) if (index(k, r) == 1) skip = 1
                if (!skip) print k } }' "$1" | sort
}

# figure_flags OUT IDS...: a numbers file saying which figures are drawn
# (qk-summary --section figures), for rendering a section alone.
figure_flags() {
    local out=$1
    shift
    bin/qk-plot --list > "$out.list" &&
        bin/qk-summary --section figures --input list="$out.list" --param drawn="$*" --output "$out"
}

# copy_tree DEST: the project's files in DEST, plus the compiled programs
# and library (mtimes kept, so nothing recompiles), for running make there.
# tree_under NAME: T=build/tests/tmp/NAME made empty, TREE=$T/tree a copy of
# the tree in it, D=$T/downloads (absolute) for the data a test writes
tree_under() {
    T=build/tests/tmp/$1
    rm -rf "$T" && mkdir -p "$T"
    TREE=$T/tree
    copy_tree "$TREE"
    D=$(pwd)/$T/downloads
}

copy_tree() {
    rm -rf "$1" && mkdir -p "$1/build"
    git ls-files --cached --others --exclude-standard -z | grep -zv '^tests/data/' |
        xargs -0 cp --parents -p -t "$1" 2>/dev/null
    cp -a bin "$1/" && cp -a build/lib build/obj "$1/build/"
    [ -d build/gen ] && cp -a build/gen "$1/build/"
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
# commands_run: make's command lines of the last run, continuation lines
# joined and leading blanks dropped (a recipe may start with a step prefix
# that V=1 leaves empty).
commands_run() {
    sed -e ':a' -e '/\\$/N; s/\\\n//; ta' "$e2e_out" | sed 's/^[[:space:]]*//'
}

stages_ran() {
    commands_run | grep -oE '^bin/qk-[a-z-]+ .*' | awk '{
        ds = "-"
        if (match($0, /--dataset [^ ]+/)) ds = substr($0, RSTART + 10, RLENGTH - 10)
        else if (match($0, /build\/[^\/ ]+\//)) ds = substr($0, RSTART + 6, RLENGTH - 7)
        if (ds == "stage") ds = "-" # (an output to publish, build/stage/results/...)
        sub(/^bin\//, "", $1); print $1, ds }' | sort | uniq -c | awk '{ print $2, $3, "x" $1 }'
}

# own_model_conf FILE LABEL: the qkreport.conf of a model of our own in the
# cross-model study (family "mine", the shape of Qwen3-0.6B), labelled LABEL
own_model_conf() {
    cat > "$1" <<CONF
# a model of our own
study = attention_plasticity
family = mine
label = $2
n_layers = 28
n_q_heads = 16
n_kv_heads = 8
head_dim = 128
rope_theta = 1000000
context_length = 131072
bucket_size = 8192
CONF
}

# ---- the cache tests (e2e-cache.sh, e2e-interrupt.sh): make in copies of the
# tree under $base, outputs compared with clean builds of the same command

# cache_test NAME: $base, the empty folder of test NAME, and the datasets
# its runs use: $sets, and $one of them
cache_test() {
    base=build/tests/tmp/$1
    rm -rf "$base" && mkdir -p "$base"
    sets="llama3.2-1b smollm3-3b-stage1-step-40000 mistral-v0.2-7b"
    one=llama3.2-1b
}

# mk TREE ARGS...: make report in TREE (quietly records output in run's files)
mk() {
    local tree=$1
    shift
    run make -C "$tree" --no-print-directory -j2 V=1 "$@"
}

# clean_digest NAME ARGS...: the outputs of a clean build of `make ARGS`
clean_digest() {
    local name=$1
    shift
    copy_tree "$base/clean-$name"
    mk "$base/clean-$name" "$@"
    expect_status 0 "clean build: make $*"
    outputs_digest "$base/clean-$name" > "$base/clean-$name.digest"
}

# same_as NAME TREE CASE: TREE's outputs equal those of clean build NAME
same_as() {
    if diff <(outputs_digest "$2") "$base/clean-$1.digest" > "$base/diff.txt"; then ok; else
        bad "$3: outputs differ from a clean build ($(grep -c '^[<>]' "$base/diff.txt") lines:" \
            "$(head -2 "$base/diff.txt" | tr '\n' ' '))"
    fi
}

# ran CASE: prints what the last make ran
ran() {
    echo "  $1 ran: $(stages_ran | grep -vE '^qk-(merge|plot|report|joint|rotate -|summary) ' |
        tr '\n' ',' | sed 's/,$//; s/,/, /g')"
}

# expect_ran STAGE DATASET CASE / expect_not_ran STAGE DATASET CASE
expect_ran() {
    if stages_ran | grep -q "^$1 $2 "; then ok; else bad "$3: $1 ran for $2"; fi
}
expect_not_ran() {
    if stages_ran | grep -q "^$1 $2 "; then bad "$3: $1 must not run for $2"; else ok; fi
}
