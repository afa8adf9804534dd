#!/bin/bash
# publish.sh: moves what a run built in the stage (build/stage/) into the
# published folders results/, figures/ and report/, all of it or none.
#
#   publish.sh all LIST    the published folders become exactly LIST: its
#                          files are copied in, every other file there goes
#                          (figures/README.md and report/README.md stay)
#   publish.sh some LIST   only LIST's files are copied in (one figure)
#   publish.sh --resume    finishes a publication that was stopped after
#                          its commit point (lock.sh runs it first)
#   publish.sh --changed   prints "changed" when a published file was
#                          edited, removed or added since the last
#                          publication (Make then publishes again)
#
# LIST holds one path a line, relative to the tree: a file, or a folder
# ending in / (every file the stage has in it). A publication copies each
# file that differs to a hidden temporary beside its place (.NAME.qkpub),
# then writes the journal build/publish/journal (the commit point: renames
# and removals, nothing that can run out of space), then carries it out.
# Stopped before the journal (an error, a full disk, a kill), it leaves the
# published folders as they were (the temporaries go, or lock.sh removes
# them); stopped after, the next make finishes it (--resume).
# A publication that changes anything first keeps the generation it
# replaces in build/publish/previous (hard links, so it costs no copy):
# `make diff` compares it with the new one.
set -u -o pipefail
STAGE=${QK_STAGE:-build/stage}
STAGE=${STAGE%/}
DIR=build/publish
JOURNAL=$DIR/journal
LISTING=$DIR/published.txt
TREES=(results figures report)
# tracked documentation, never published nor removed
KEEP=$'figures/README.md\nreport/README.md'

die() { echo "publish: $*" >&2; exit 2; }
. workflow/alive.sh

# listing: every published file with its size and modification time
listing() {
    local t trees=()
    for t in "${TREES[@]}"; do [ -d "$t" ] && trees+=("$t"); done
    [ ${#trees[@]} -eq 0 ] || find "${trees[@]}" -type f -printf '%p\t%s\t%T@\n' | LC_ALL=C sort
}

# carries out the journal: "R PATH" renames PATH's temporary onto PATH,
# "D PATH" removes PATH; then empty folders go and the listing is noted
# (resume: a journal stopped halfway, whose renames done have no temporary)
commit() {
    local op path tmp resume=${1:-}
    while IFS=$'\t' read -r op path; do
        case $op in
        R) tmp=${path%/*}/.${path##*/}.qkpub # every published file is in a folder
           if [ -e "$tmp" ]; then mv -f "$tmp" "$path" || return 1
           elif [ -z "$resume" ] || [ ! -e "$path" ]; then
               echo "publish: $tmp is gone: $path cannot be published" >&2
               return 1
           fi ;;
        D) rm -f "$path" || return 1 ;;
        esac
    done < "$JOURNAL"
    prune_empty
    note_listing && rm -f "$JOURNAL"
}

# the folders a publication emptied or made and left empty go
prune_empty() {
    local t
    for t in results figures report/tables; do
        [ -d "$t" ] && find "$t" -mindepth 1 -type d -empty -delete
    done
    return 0
}

# The listing of the published files is noted after a publication, so that
# a file edited by hand since is published again (--changed). A partial
# publication that found them edited already leaves the old note: the next
# make report then publishes everything again.
note_listing() {
    [ "${edited_before:-}" = yes ] && return 0
    listing > "$LISTING.new" && mv -f "$LISTING.new" "$LISTING"
}

# The published folders as they are, into build/publish/previous: hard
# links, which the renames of the publication leave pointing at the old
# files (made beside it and swapped in, so it is always one generation).
keep_previous() {
    local prev=$DIR/previous t
    rm -rf "$prev.new" && mkdir -p "$prev.new" || return 1
    for t in "${TREES[@]}"; do
        [ -d "$t" ] && { cp -al "$t" "$prev.new/" || return 1; }
    done
    find "$prev.new" -name '.*.qkpub' -type f -delete
    rm -rf "$prev" && mv "$prev.new" "$prev"
}

# the files a LIST names, one a line, sorted
expand() {
    local entry
    while IFS= read -r entry || [ -n "$entry" ]; do
        [ -n "$entry" ] || continue
        case $entry in
        */) [ -d "$STAGE/$entry" ] || die "$STAGE/$entry: not built"
            (cd "$STAGE" && find "${entry%/}" -type f ! -name '*.tmp' ! -name '*.tmp.*') ;;
        *) [ -f "$STAGE/$entry" ] || die "$STAGE/$entry: not built"
           echo "$entry" ;;
        esac
    done < "$1" | LC_ALL=C sort -u
}

# the files of FILES (one a line) whose published copy is missing or has
# other bytes: each side hashed in one pass (SHA-256), not a process a file
changed_files() {
    (cd "$STAGE" && xargs -r -d '\n' sha256sum --) < "$1" > "$DIR/stage.sum" 2> "$DIR/error" ||
        return 1
    # a file not yet published has no line here (sha256sum's complaint goes)
    xargs -r -d '\n' sha256sum -- < "$1" > "$DIR/published.sum" 2> /dev/null
    # "HASH  PATH": the path from column 67 (FILENAME, not NR == FNR: the
    # first file is empty before the first publication)
    awk -v was_file="$DIR/published.sum" \
        'FILENAME == was_file { was[substr($0, 67)] = substr($0, 1, 64); next }
         was[substr($0, 67)] != substr($0, 1, 64) { print substr($0, 67) }' \
        "$DIR/published.sum" "$DIR/stage.sum"
}

# copies the files of FILES that differ from their published copy to their
# temporaries; prints the journal's rename lines. Removes its temporaries
# and fails on any error.
prepare() {
    local f dir tmp made=() changed
    declare -A have_dir=()
    changed=$(changed_files "$1") ||
        die "$STAGE/$(sed 's/^[^:]*: //' "$DIR/error" | head -1); results/, figures/ and report/ are unchanged"
    while IFS= read -r f; do
        [ -n "$f" ] || continue
        dir=${f%/*} # every published file is in a folder
        tmp=$dir/.${f##*/}.qkpub
        if ! { { [ -n "${have_dir[$dir]:-}" ] || mkdir -p "$dir"; } && cp "$STAGE/$f" "$tmp"; } 2> "$DIR/error"; then
            rm -f "${made[@]}" "$tmp"
            prune_empty
            die "$f: $(sed 's/^[^:]*: //; s/.*: //' "$DIR/error" | head -1); results/, figures/ and report/ are unchanged"
        fi
        have_dir[$dir]=1
        made+=("$tmp")
        printf 'R\t%s\n' "$f"
    done <<< "$changed"
}

# the published files that LIST's files replace in mode all: every other
# file of the published folders (the tracked READMEs aside)
removals() {
    { cat "$1"; echo "$KEEP"; } | LC_ALL=C sort -u > "$DIR/keep.txt" || return 1
    listing | cut -f1 | LC_ALL=C comm -23 - "$DIR/keep.txt" | { grep -v '/\.[^/]*\.qkpub$' || true; } | sed 's/^/D\t/'
}

mkdir -p "$DIR" || exit 2
# one publication at a time (make -j2 pca rotation publishes twice)
exec 3>> "$DIR/.lock" && flock 3 || die "cannot lock $DIR/.lock"
case ${1:-} in
--resume)
    [ -f "$JOURNAL" ] || exit 0
    echo "qkreport: finishing the publication the last make began" >&2
    commit resume || die "cannot finish the publication in $JOURNAL"
    exit 0 ;;
--changed)
    [ -f "$LISTING" ] && cmp -s <(listing) "$LISTING" || echo changed
    exit 0 ;;
all | some) mode=$1 list=${2:?LIST}
    trap 'rm -f "$JOURNAL.new"' EXIT ;;
*) echo "usage: workflow/publish.sh all|some LIST | --resume | --changed" >&2; exit 1 ;;
esac

[ -f "$JOURNAL" ] && { commit resume || die "cannot finish the publication in $JOURNAL"; }
edited_before=no
[ "$mode" = some ] && [ -f "$LISTING" ] && ! cmp -s <(listing) "$LISTING" && edited_before=yes
[ -r "$list" ] || die "$list: cannot be read"
files=$DIR/files.txt
expand "$list" > "$files" || exit 2
[ -s "$files" ] || die "$list names no file"
prepare "$files" > "$JOURNAL.new" || { rm -f "$JOURNAL.new"; prune_empty; exit 2; }
if [ "$mode" = all ]; then
    removals "$files" >> "$JOURNAL.new" || { rm -f "$JOURNAL.new"; die "cannot list the published folders"; }
fi
# the commit point (a make that is gone publishes nothing: its steps stop)
if [ -n "${QK_MAKE_PID:-}" ] && ! alive "$QK_MAKE_PID"; then
    rm -f "$JOURNAL.new"
    find "${TREES[@]}" -name '.*.qkpub' -delete 2>/dev/null
    prune_empty
    exit 2
fi
if [ -s "$JOURNAL.new" ] && [ -f "$LISTING" ]; then
    keep_previous || { rm -rf "$DIR/previous.new"; echo "publish: cannot keep the previous generation in $DIR/previous" >&2; }
fi
mv -f "$JOURNAL.new" "$JOURNAL" || die "cannot write $JOURNAL"
commit || die "cannot finish the publication in $JOURNAL"
