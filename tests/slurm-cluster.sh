#!/bin/bash
# A one-node Slurm cluster with all its files in one directory, for trying
# workflow/qk-srun by hand (the tests source tests/lib-slurm.sh instead).
#
#   eval "$(tests/slurm-cluster.sh start DIR)"   start; prints the exports
#   tests/slurm-cluster.sh stop DIR              stop every daemon
#
# Needs root (installs slurmctld slurmd slurm-client munge when missing).
set -u
. "$(dirname "$0")/lib-slurm.sh"

case "${1:-} $#" in
    "start 2")
        mkdir -p "$2" || exit 1
        # A start cut short stops what it had started.
        trap 'slurm_down "$2"; exit 130' INT TERM
        slurm_up "$2" || exit 1
        trap - INT TERM
        echo "slurm: cluster up in $QK_SLURM_START_S s" >&2
        printf 'export SLURM_CONF=%q QK_SLURM_DIR=%q QK_SLURM_JOBLOG=%q QK_SLURM_PARTITION=%q\n' \
            "$SLURM_CONF" "$QK_SLURM_DIR" "$QK_SLURM_JOBLOG" "$QK_SLURM_PARTITION" ;;
    "stop 2")
        slurm_down "$2" ;;
    *)
        echo "usage: $0 start|stop DIR" >&2
        exit 1 ;;
esac
