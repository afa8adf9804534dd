#!/bin/bash
# Runs the Check test programs given as arguments, then every tests/e2e-*.sh
# script, and prints one summary line "N passed, M failed", after the
# seconds each took, longest first.
#
# The e2e scripts run two at a time (QK_TEST_LANES), each in its own folder
# under build/tests/tmp, their output shown whole as each ends. A script
# whose line 2 is "# qk-test: alone ..." (it times runs, or signals them)
# runs with nothing beside it, in the foreground, before the others.
set -u
cd "$(dirname "$0")/.."
lanes=${QK_TEST_LANES:-2}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
passed=0 failed=0 failed_names=() took=()

# finish N: the result of test N (its name, status and seconds in $out/N.res)
finish() {
    local name status secs
    read -r status secs name < "$out/$1.res"
    if [ "$status" -eq 0 ]; then passed=$((passed + 1)); else
        failed=$((failed + 1)); failed_names+=("$name"); fi
    took+=("$secs $name")
}
# run_one N NAME COMMAND...: runs a test, leaving its result in $out/N.res
run_one() {
    local n=$1 name=$2 start=$SECONDS status
    shift 2
    "$@"
    status=$?
    echo "$status $((SECONDS - start)) $name" > "$out/$n.res"
}
# show N: prints the output of test N, which ran in the background
show() {
    cat "$out/$1.log"
    finish "$1"
}

n=0
for t in "$@"; do
    n=$((n + 1))
    echo "== $t"
    run_one "$n" "$t" "$t"
    finish "$n"
done

declare -A running=() # pid -> test number
wait_one() {
    local pid
    wait -n -p pid "${!running[@]}"
    show "${running[$pid]}"
    unset "running[$pid]"
}
alone() { head -2 "$1" | grep -q '^# qk-test: alone'; }
# those that run alone first: the others then fill both lanes to the end
for s in tests/e2e-*.sh; do
    [ -e "$s" ] && alone "$s" || continue
    n=$((n + 1))
    echo "== $s"
    run_one "$n" "$s" bash "$s"
    finish "$n"
done
for s in tests/e2e-*.sh; do
    [ -e "$s" ] && ! alone "$s" || continue
    n=$((n + 1))
    while [ ${#running[@]} -ge "$lanes" ]; do wait_one; done
    { echo "== $s"; run_one "$n" "$s" bash "$s"; } > "$out/$n.log" 2>&1 < /dev/null &
    running[$!]=$n
done
while [ ${#running[@]} -gt 0 ]; do wait_one; done

echo
echo "seconds per test, longest first:"
printf '%s\n' "${took[@]}" | sort -rn | awk '{ printf "  %5d  %s\n", $1, $2 }'
[ "$failed" -eq 0 ] || echo "failed: ${failed_names[*]}"
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
