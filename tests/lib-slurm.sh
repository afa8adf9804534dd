# shellcheck shell=bash
# A one-node Slurm cluster for tests (sourced by tests/slurm-*.sh).
#
#   slurm_up DIR    start munged, slurmctld and slurmd as root, every file
#                   (config, keys, sockets, spool, logs, pid files) in DIR,
#                   without systemd; installs the Debian packages if missing
#                   (and procps, for the tests' pgrep and ps).
#   slurm_down DIR  cancel what is left in the queue, then stop each daemon
#                   by its pid file. Safe to call twice or after a failed
#                   slurm_up, so it belongs in an EXIT trap.
#
# After slurm_up the clients (srun, squeue, scontrol, scancel) talk to this
# cluster through the exported variables:
#   SLURM_CONF          DIR/slurm.conf (without it clients look up DNS SRV)
#   QK_SLURM_DIR        DIR
#   QK_SLURM_JOBLOG     DIR/log/jobcomp.txt: one line per finished job with
#                       JobState, Name, Partition, ExitCode, ... (there is no
#                       accounting database, hence no sacct)
#   QK_SLURM_PARTITION  the default partition (qk); a second one, qkalt,
#                       lets tests check that flags reach srun
#   QK_SLURM_START_S    seconds slurm_up took, daemons to idle node


slurm_install() {
    sh workflow/deps.sh slurm
}

# Two TCP ports nobody listens on, so that clusters of several work trees
# on one machine do not meet.
slurm_free_ports() {
    python3 - <<'PY'
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

slurm_write_conf() { # dir ctld_port slurmd_port
    local dir=$1 host mem_mb
    host=$(hostname -s)
    # slurmd drains a node that claims more memory than it finds, and the
    # default RealMemory=1 rejects every --mem: state what is there.
    mem_mb=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
    cat > "$dir/slurm.conf" <<EOF
ClusterName=qktest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$2
SlurmdPort=$3
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munged.socket
StateSaveLocation=$dir/ctld
SlurmdSpoolDir=$dir/slurmd
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobcomp.txt
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
# A job without --mem would otherwise hold all the node's memory.
DefMemPerCPU=1024
SchedulerType=sched/backfill
# Schedule each job as it arrives instead of every few seconds.
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
ReturnToService=2
InactiveLimit=0
KillWait=5
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem_mb State=UNKNOWN
PartitionName=qk Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=qkalt Nodes=$host Default=NO MaxTime=INFINITE State=UP
EOF
}

# Waits (bounded) until the node takes jobs.
slurm_wait_idle() {
    local i state
    for ((i = 0; i < 300; i++)); do
        state=$(sinfo -h -p qk -o %T 2>/dev/null)
        [ "$state" = idle ] && return 0
        sleep 0.1
    done
    echo "slurm: node not idle after 30 s (state '$state')" >&2
    return 1
}

slurm_up() { # dir
    local dir=$1 t0 ports d
    t0=$(date +%s.%N)
    if [ "$(id -u)" -ne 0 ]; then
        echo "slurm: the test cluster runs its daemons as root" >&2
        return 1
    fi
    slurm_install || return 1
    [ -d "$dir" ] || { echo "slurm: $dir: no such directory" >&2; return 1; }
    dir=$(cd "$dir" && pwd)
    for d in munge ctld slurmd run log; do mkdir -p "$dir/$d" || return 1; done
    # munged refuses a socket in a directory others can write to, and its
    # clients need to reach it: 0755 (mktemp -d makes 0700).
    chmod 0755 "$dir" "$dir/munge" "$dir/run" "$dir/log" || return 1
    chmod 0700 "$dir/ctld" "$dir/slurmd"
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
    chmod 0600 "$dir/munge/munge.key"

    read -r -a ports < <(slurm_free_ports) || return 1
    slurm_write_conf "$dir" "${ports[0]}" "${ports[1]}"
    export SLURM_CONF=$dir/slurm.conf QK_SLURM_DIR=$dir
    export QK_SLURM_JOBLOG=$dir/log/jobcomp.txt QK_SLURM_PARTITION=qk
    # Variables of an enclosing job would turn our srun into a job step.
    unset SLURM_JOB_ID SLURM_JOBID

    munged --force --socket="$dir/munge/munged.socket" --key-file="$dir/munge/munge.key" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
        --seed-file="$dir/munge/munged.seed" ||
        { slurm_fail "$dir" munged; return 1; }
    slurmctld -i || { slurm_fail "$dir" slurmctld; return 1; }
    slurmd || { slurm_fail "$dir" slurmd; return 1; }
    slurm_wait_idle || { slurm_fail "$dir" "the node"; return 1; }
    QK_SLURM_START_S=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
    export QK_SLURM_START_S
}

slurm_fail() { # dir what
    local f
    echo "slurm: $2 did not start; log tails:" >&2
    for f in "$1"/log/*.log; do
        [ -s "$f" ] && tail -n 5 "$f" | sed "s|^|  $(basename "$f"): |" >&2
    done
    slurm_down "$1"
}

# Stops the daemon whose pid file is given: TERM, then KILL after 10 s.
slurm_stop_pid() { # pidfile
    local pid i
    [ -s "$1" ] || return 0
    pid=$(cat "$1")
    kill -TERM "$pid" 2>/dev/null || { rm -f "$1"; return 0; }
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$1"; return 0; }
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
    rm -f "$1"
}

slurm_down() { # dir
    local dir=$1 i
    [ -d "$dir/run" ] || return 0
    # Jobs would outlive slurmd in their slurmstepd: cancel them first.
    if [ -s "$dir/run/slurmctld.pid" ] && [ -s "$dir/run/slurmd.pid" ]; then
        local jobs
        jobs=$(SLURM_CONF=$dir/slurm.conf squeue -h -o %i 2>/dev/null)
        [ -n "$jobs" ] && SLURM_CONF=$dir/slurm.conf scancel --quiet $jobs 2>/dev/null
        for ((i = 0; i < 100; i++)); do
            [ -z "$(SLURM_CONF=$dir/slurm.conf squeue -h -o %i 2>/dev/null)" ] && break
            sleep 0.1
        done
    fi
    slurm_stop_pid "$dir/run/slurmd.pid"
    slurm_stop_pid "$dir/run/slurmctld.pid"
    slurm_stop_pid "$dir/run/munged.pid"
}
