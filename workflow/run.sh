#!/bin/bash
# run.sh MAKE CHECK GOAL...: a make that builds (the Makefile's outer make
# runs it): with CHECK "yes", first the make that checks every parameter
# the user typed and runs nothing else (workflow/validate.mk; its "***"
# lines are left out, the check's own line says what is wrong), then the
# make of the goals. When either fails, the last line says what became of
# the published folders results/, figures/ and report/, and the status is
# the make's.
set -u
make=$1 check=$2
shift 2
mkdir -p build/publish
rm -f build/publish/published-now.txt

failed() { # status
    local published
    published=$(cat build/publish/published-now.txt 2>/dev/null | tr '\n' ' ')
    if [ -f build/publish/journal ]; then
        echo "make ${goals[*]}: failed while publishing; the next make finishes the publication" >&2
    elif [ -n "$published" ]; then
        echo "make ${goals[*]}: failed; published before the failure: ${published% }; the rest of results/, figures/ and report/ is unchanged" >&2
    else
        echo "make ${goals[*]}: failed; results/, figures/ and report/ are unchanged (the last good run's)" >&2
    fi
    exit "$1"
}

goals=("$@")
# The makes this starts stop when the make the user started is gone
# (kill -9 of its pid alone, or a zombie its parent has not reaped): they
# would go on building and publishing beside the next make.
. workflow/alive.sh
if [ -n "${QK_MAKE_PID:-}" ]; then
    ( while alive "$QK_MAKE_PID"; do sleep 0.2; done
      stop_children "$$" ) &
    watcher=$!
    trap 'kill "$watcher" 2>/dev/null' EXIT
fi
if [ "$check" = yes ]; then
    $make --no-print-directory QK_VALIDATE=1 qk-validate 2> build/.validate.err
    status=$?
    # (what make stops on as it reads the Makefile, "FILE:N: *** TEXT.  Stop.",
    # and what qk-load --check-conf refuses in a qkreport.conf are said as
    # the check's own lines are: "make: TEXT")
    grep -v '^make\(\[[0-9]*\]\)\?: \*\*\*' build/.validate.err |
        sed -e 's/^[^ ]*:[0-9]*: \*\*\* \(.*\)\.  Stop\.$/make: \1/' \
            -e 's/^qk-load: error: \(.*qkreport\.conf: line [0-9]*: \)/make: \1/' >&2
    [ "$status" -eq 0 ] || failed "$status"
fi
$make --no-print-directory "$@" || failed $?
