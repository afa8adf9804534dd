# Processes (sourced by workflow/lock.sh, qk-step, run.sh and publish.sh).

# alive PID: whether the process runs. A zombie, ended but not yet reaped by its
# parent, does not: `kill -0` would say it does.
alive() {
    local stat
    read -r stat 2>/dev/null < "/proc/$1/stat" || return 1
    set -- ${stat##*) }
    [ "$1" != Z ] && [ "$1" != X ]
}

# stop_children PARENT: SIGTERM to the processes PARENT started, found
# through /proc (procps may be missing); run by a watcher in a subshell of
# PARENT, which spares itself
stop_children() {
    local stat line pid parent=$1
    for stat in /proc/[0-9]*/stat; do
        read -r line 2>/dev/null < "$stat" || continue
        pid=${stat#/proc/} pid=${pid%/stat}
        # the fields after the command name in parentheses: state, parent pid
        set -- ${line##*) }
        [ "${2:-}" = "$parent" ] && [ "$pid" != "$BASHPID" ] && kill -TERM "$pid" 2>/dev/null
    done
}

# holders FILE: "PID NAME" of each process that has FILE open, one a line,
# but the caller (found through /proc; those of other users are not seen)
holders() {
    local fd link pid name target seen=" "
    target=$(readlink -f "$1") || return 0
    while IFS=$'\t' read -r fd link; do
        [ "$link" = "$target" ] || continue
        pid=${fd#/proc/} pid=${pid%%/*}
        [ "$pid" = "$$" ] || [ "$pid" = "$BASHPID" ] && continue
        [[ $seen == *" $pid "* ]] && continue
        seen+="$pid "
        read -r name 2>/dev/null < "/proc/$pid/comm" && echo "$pid $name"
    done < <(find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 -type l -printf '%p\t%l\n' 2>/dev/null)
}
