#!/bin/bash
# why.sh MAKE GOAL...: for every step that `make GOAL` would run now, one
# line with its reason (make why, workflow/why.mk). It runs MAKE -n with
# basic debugging (the parameters typed come through MAKEFLAGS) and
# QK_WHY_DIR, a temporary folder outside the tree where that make writes
# the records as they would be (config.mk, load.mk, build.mk); then, for
# each target to be remade, it follows the reasons make gives back to the
# first one: a record that would change (compared with the record in
# build/), a program whose identity changed, a newer file, or a missing
# one. Nothing in the tree is written.
set -u -o pipefail
make=$1
shift
QK_WHY_DIR=$(mktemp -d "${TMPDIR:-/tmp}/qk-why.XXXXXX") || exit 2
export QK_WHY_DIR
trap 'rm -rf "$QK_WHY_DIR"' EXIT
log=$QK_WHY_DIR/make.log
if ! $make -n --debug=b --no-print-directory "$@" > "$log" 2>&1; then
    grep -E '\*\*\*|error' "$log" | head -5 >&2
    echo "make why: make -n $* failed (the lines above)" >&2
    exit 2
fi

# what a record that would change says: "NAME old -> new" for each
# parameter, the datasets added and removed, or the input files that differ
record_change() { # RECORD
    local old=$1 new=$QK_WHY_DIR/$1
    case $1 in
    build/progs/*.id)
        t=${1#build/progs/}; echo "${t%.id} changed" ;;
    build/params/rebuild.tsv)
        echo "the rebuild command it prints: make report$(cut -f2 "$new")" ;;
    build/params/*)
        awk -v group="$(basename "$1" .txt)" '
            FNR == NR { i = index($0, "="); if (i) old[substr($0, 1, i - 1)] = substr($0, i + 1); next }
            { i = index($0, "="); if (!i) next; k = substr($0, 1, i - 1); v = substr($0, i + 1)
              if (!(k in old)) out = out sep k " (new) " v
              else if (old[k] != v) out = out sep k " " old[k] " -> " v
              sep = ", "; seen[k] = 1 }
            END { if (out == "") out = "parameters of " group " changed"; print out }' \
            <(cat "$old" 2>/dev/null) "$new" ;;
    build/sets/*)
        added=$(LC_ALL=C comm -13 <(sort "$old" 2>/dev/null) <(sort "$new") | grep -v '^-$' | tr '\n' ' ')
        removed=$(LC_ALL=C comm -23 <(sort "$old" 2>/dev/null) <(sort "$new") | grep -v '^-$' | tr '\n' ' ')
        echo "the dataset set of $(basename "$1" .txt) changed${added:+ (added: ${added% })}${removed:+ (removed: ${removed% })}" ;;
    build/*/source.txt | build/*/synth-source.txt)
        ds=${1#build/}; ds=${ds%%/*}
        awk -F'\t' -v ds="$ds" '
            FNR == NR { if ($1 == "file") { size[$2] = $3; time[$2] = $4; hash[$2] = $5 } else other[$1] = $0; next }
            $1 == "file" { seen[$2] = 1
                if (!($2 in size)) w = "added"
                else if (size[$2] != $3 && hash[$2] != $5) w = "size and footer changed"
                else if (size[$2] != $3) w = "size changed"
                else if (hash[$2] != $5) w = "footer changed"
                else if (time[$2] != $4) w = "modification time changed"
                else next
                out = out sep ds "/" $2 ": " w; sep = "; "; next }
            $1 != "file" && other[$1] != $0 { out = out sep ds ": " $1 " changed"; sep = "; " }
            END { for (f in size) if (!(f in seen)) { out = out sep ds "/" f ": removed"; sep = "; " }
                  print out == "" ? ds ": its source record changed" : out }' \
            <(cat "$old" 2>/dev/null) "$new" ;;
    *) echo "$1 changed" ;;
    esac
}

# The targets to be remade, in make's order, and each one's reasons:
# "remade T", "reason T P" (P newer, remade or missing), "missing T".
awk '
    /Must remake target/ { t = $0; sub(/.*Must remake target .|.\.$/, "", t); sub(/.\.$/, "", t); print "remade\t" t; next }
    /Prerequisite .* is newer than target/ { split($0, q, "\047"); print "reason\t" q[4] "\t" q[2]; next }
    /Prerequisite .* of target .* does not exist/ { split($0, q, "\047"); print "reason\t" q[4] "\t" q[2]; next }
    /^ *File .* does not exist\./ { split($0, q, "\047"); print "missing\t" q[2] }' "$log" > "$QK_WHY_DIR/events"

# the first cause of each target, following the reasons
awk -F'\t' -v dir="$QK_WHY_DIR" '
    function is_record(t) { return t ~ /^build\/(params|sets|progs)\// || t ~ /^build\/[^\/]*\/(synth-)?source\.txt$/ }
    function is_word(t) { return t !~ /\// }
    $1 == "remade" { remade[$2] = 1; order[++n] = $2; next }
    # the reason said: a record first, then a step remade before (followed
    # to its own reason), the rebuild command (made from the parameters)
    # last but for a newer file
    function rank(p) { return p ~ /rebuild\.tsv$/ ? 1 : is_record(p) ? 4 : remade[p] ? 3 : 0 }
    $1 == "reason" { if (!($2 in first) || rank($3) > rank(first[$2])) first[$2] = $3; next }
    $1 == "missing" { missing[$2] = 1 }
    # the root: a record, a program, a file changed, or a missing output
    function cause(t, depth,   p) {
        if (depth > 50) return "record\t" t
        if (is_record(t) && remade[t]) return "record\t" t
        if (!(t in first)) return missing[t] ? "missing\t" t : "newer\t" t
        p = first[t]
        if (is_word(p) && !(p in first)) return missing[t] ? "missing\t" t : "newer\t" t
        if (remade[p] || is_record(p)) return cause(p, depth + 1)
        return "newer\t" p
    }
    END {
        for (i = 1; i <= n; i++) {
            t = order[i]
            if (is_record(t) || is_word(t) || t ~ /\.checked$/) continue
            c = cause(t, 0)
            split(c, part, "\t")
            via = (t in first) ? first[t] : ""
            if (via == part[2] || !remade[via] || is_record(via)) via = ""
            print t "\t" part[1] "\t" part[2] "\t" via
        }
    }' "$QK_WHY_DIR/events" > "$QK_WHY_DIR/steps"

if [ ! -s "$QK_WHY_DIR/steps" ]; then
    echo "make $*: up to date (nothing would run)"
    exit 0
fi
declare -A said
n=0
while IFS=$'\t' read -r target kind what via; do
    case $kind in
    record)
        if [ -f "$QK_WHY_DIR/$what" ]; then
            [ -n "${said[$what]:-}" ] || said[$what]=$(record_change "$what")
            reason=${said[$what]}
        else
            reason="$what changed"
        fi ;;
    missing) reason="$what is missing" ;;
    newer)
        case $what in
        bin/*) reason="${what#bin/} is rebuilt (its sources changed; the steps that run it rerun if its code did)" ;;
        *) reason="$what changed" ;;
        esac ;;
    esac
    shown=${target#build/stage/}
    case $shown in build/publish/*.done) shown="publish (make $(basename "$shown" .done))" ;; esac
    printf '  %-58s %s%s\n' "$shown" "$reason" "${via:+ (through ${via#build/stage/})}"
    n=$((n + 1))
done < "$QK_WHY_DIR/steps"
echo "make $*: $n steps would run"
