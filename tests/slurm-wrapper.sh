#!/bin/bash
# workflow/qk-srun against a real one-node Slurm cluster (tests/lib-slurm.sh):
# job names and states in the job log, exit statuses, the one error line,
# outputs that are missing, empty, stale, late or left by a failed node,
# SLURM_FLAGS, and cancellation on SIGINT/SIGTERM. Needs root.
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib-e2e.sh
. tests/lib-slurm.sh

work=$(mktemp -d)
cluster=$work/cluster
mkdir "$cluster"
trap 'slurm_down "$cluster"; rm -rf "$work" "$e2e_out" "$e2e_err"' EXIT
trap 'exit 130' INT TERM
slurm_up "$cluster" || { bad "the test cluster did not start"; finish; exit 1; }
echo "cluster start: $QK_SLURM_START_S s (daemons to idle node)"

qk_srun=$PWD/workflow/qk-srun
out=$work/out
mkdir "$out"
host=$(hostname -s)

# Polls (every 0.1 s, at most tenths/10 s) until the command succeeds.
wait_until() { # tenths command...
    local i n=$1
    shift
    for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done
    return 1
}
queue_empty() { [ -z "$(squeue -h -o %i)" ]; }
job_in_state() { [ "$(squeue -h -n "$1" -o %T)" = "$2" ]; }
logged() { grep -q " Name=$1 " "$QK_SLURM_JOBLOG" 2>/dev/null; }

# The job log lines of the jobs named $1, and one field of the last.
log_lines() { grep -F " Name=$1 " "$QK_SLURM_JOBLOG" 2>/dev/null; }
log_field() { # name field
    log_lines "$1" | tail -n 1 | tr ' ' '\n' | sed -n "s/^$2=//p"
}

expect_err_lines() { # count, name
    local n
    n=$(wc -l < "$e2e_err")
    if [ "$n" -eq "$1" ]; then ok; else bad "$2 ($n lines on stderr, expected $1)"; fi
}

expect_equal() { # got, expected, name
    if [ "$1" == "$2" ]; then ok; else bad "$3 (got '$1', expected '$2')"; fi
}

# The last stderr line is the wrapper's one line, for this stage, dataset
# and the job the log knows under that name, with the given reason.
expect_error_line() { # stage dataset reason name
    local id line
    id=$(log_field "qk-$1:$2" JobId)
    line=$(tail -n 1 "$e2e_err")
    expect_equal "$line" "qk-srun: error: $1 $2: job $id failed ($3)" "$4"
    expect_equal "$(grep -c '^qk-srun:' "$e2e_err")" 1 "$4: one qk-srun line"
    expect_equal "$(grep -c '^srun:' "$e2e_err")" 0 "$4: no srun chatter"
}

# Starts the wrapper in the background with SIGINT not ignored (job
# control, and not left ignored by a caller), as it is under make in a
# terminal; sets bg_pid.
start_bg() { # args...
    set -m
    env --default-signal=INT "$qk_srun" "$@" > "$e2e_out" 2> "$e2e_err" &
    bg_pid=$!
    set +m
}

# 1. A job that writes its output: success, its stdout and stderr pass
#    through, and the log has one COMPLETED job with the asked resources.
run "$qk_srun" --stage load --dataset ok --cpus 2 --mem 200M --time 5 --output "$out/ok.tsv" \
    -- sh -c "echo to-stdout; echo to-stderr >&2; printf 'a\tb\n' > '$out/ok.tsv'"
expect_status 0 "success: status"
expect_equal "$(cat "$e2e_out")" "to-stdout" "success: the job's stdout passes"
expect_equal "$(cat "$e2e_err")" "to-stderr" "success: only the job's stderr"
expect_equal "$(cat "$out/ok.tsv")" "$(printf 'a\tb')" "success: output written"
expect_equal "$(log_lines qk-load:ok | wc -l)" 1 "success: one job named qk-load:ok"
expect_equal "$(log_field qk-load:ok JobState)" COMPLETED "success: COMPLETED"
expect_equal "$(log_field qk-load:ok ExitCode)" 0:0 "success: exit code 0"
expect_equal "$(log_field qk-load:ok ProcCnt)" 2 "success: --cpus 2"
expect_equal "$(log_field qk-load:ok TimeLimit)" 5 "success: --time 5"
expect_equal "$(log_field qk-load:ok Tres)" "cpu=2,mem=200M,node=1,billing=2" "success: --mem 200M"
expect_equal "$(log_field qk-load:ok Partition)" "$QK_SLURM_PARTITION" "success: default partition"
expect_equal "$(ls -A "$out")" ok.tsv "success: no stamp left"

# 2. A job that exits 3 after writing part of its output.
run "$qk_srun" --stage pca --dataset three --cpus 1 --output "$out/three.tsv" \
    -- sh -c "echo partial > '$out/three.tsv'; echo 'pca: something broke' >&2; exit 3"
expect_status 3 "exit 3: status"
expect_error_line pca three "exit 3" "exit 3: error line"
expect_equal "$(head -n 1 "$e2e_err")" "pca: something broke" "exit 3: the job's stderr first"
expect_err_lines 2 "exit 3: the job's line and the wrapper's"
expect_missing "$out/three.tsv" "exit 3: partial output removed"
expect_equal "$(log_field qk-pca:three JobState)" FAILED "exit 3: FAILED in the log"
expect_equal "$(log_field qk-pca:three ExitCode)" 3:0 "exit 3: exit code in the log"

# 3. Exit 0 without the output, after a 1 s wait for it.
export QK_SRUN_NFS_WAIT=1
run "$qk_srun" --stage rotation --dataset none --cpus 1 --output "$out/none.tsv" \
    --output "$out/none2.tsv" -- sh -c "echo x > '$out/none2.tsv'"
expect_status 75 "missing output: status"
expect_error_line rotation none "output $out/none.tsv missing, waited 1 s" \
    "missing output: error line"
expect_missing "$out/none2.tsv" "missing output: the other output removed"
expect_equal "$(log_field qk-rotation:none JobState)" COMPLETED "missing output: job COMPLETED"

# 4. Exit 0 leaving an output from an earlier run untouched.
echo old > "$out/stale.tsv"
touch -d '1 hour ago' "$out/stale.tsv"
run "$qk_srun" --stage plasticity --dataset stale --cpus 1 --output "$out/stale.tsv" -- true
expect_status 75 "stale output: status"
expect_error_line plasticity stale "output $out/stale.tsv older than the job, waited 1 s" \
    "stale output: error line"
expect_missing "$out/stale.tsv" "stale output: removed"

# 5. Exit 0 leaving an empty output.
run "$qk_srun" --stage pca --dataset empty --cpus 1 --output "$out/empty.tsv" \
    -- sh -c ": > '$out/empty.tsv'"
expect_status 75 "empty output: status"
expect_error_line pca empty "output $out/empty.tsv empty, waited 1 s" "empty output: error line"
expect_missing "$out/empty.tsv" "empty output: removed"

# 6. An output that appears only after the job has ended, as on NFS: made
#    here once the job log has the job, while the wrapper polls for it.
export QK_SRUN_NFS_WAIT=20
( wait_until 200 logged qk-load:late && echo late > "$out/late.tsv" ) &
late_pid=$!
run "$qk_srun" --stage load --dataset late --cpus 1 --output "$out/late.tsv" -- true
wait "$late_pid"
expect_status 0 "late output: accepted within QK_SRUN_NFS_WAIT"
expect_equal "$(cat "$out/late.tsv" 2>/dev/null)" late "late output: kept"

# 7. The node fails under a running job that has written part of its
#    output: srun may well exit 0, the state says NODE_FAIL.
export QK_SRUN_NFS_WAIT=1
start_bg --stage rotation --dataset nodefail --cpus 1 --output "$out/nodefail.tsv" \
    -- sh -c "echo partial > '$out/nodefail.tsv'; sleep 30"
if wait_until 100 job_in_state qk-rotation:nodefail RUNNING && wait_until 100 test -s "$out/nodefail.tsv"; then
    scontrol update nodename="$host" state=down reason=qk-test
    wait "$bg_pid"
    e2e_status=$?
    expect_equal "$(log_field qk-rotation:nodefail JobState)" NODE_FAIL "node failure: NODE_FAIL in the log"
    # srun notices the failure or not, depending on timing.
    expect_status_in "75 143" "node failure: status"
    if [ "$e2e_status" -eq 75 ]; then
        expect_error_line rotation nodefail NODE_FAIL "node failure: error line"
    else
        expect_error_line rotation nodefail "NODE_FAIL, exit 143" "node failure: error line"
    fi
    expect_missing "$out/nodefail.tsv" "node failure: partial output removed"
else
    bad "node failure: the job did not start"
    kill -TERM "$bg_pid"
    wait "$bg_pid"
fi
# ReturnToService=2 puts the node back as soon as slurmd answers.
wait_until 300 test "$(sinfo -h -p qk -o %T)" = idle || scontrol update nodename="$host" state=resume
slurm_wait_idle || bad "node failure: node not back"

# 8-9. SIGINT or SIGTERM to the wrapper while the job runs: the job is
#      cancelled, its processes are gone and the queue is empty.
for sig in INT TERM; do
    marker="sleep 3$((RANDOM % 900 + 100))"
    start_bg --stage pca --dataset "sig$sig" --cpus 1 --output "$out/sig.tsv" \
        -- sh -c "echo partial > '$out/sig.tsv'; $marker"
    if wait_until 100 job_in_state "qk-pca:sig$sig" RUNNING && wait_until 100 test -s "$out/sig.tsv"; then
        kill -"$sig" "$bg_pid"
        wait "$bg_pid"
        e2e_status=$?
        [ "$sig" = INT ] && expect_status 130 "SIGINT: status"
        [ "$sig" = TERM ] && expect_status 143 "SIGTERM: status"
        wait_until 50 queue_empty
        expect_equal "$(squeue -h -o %i)" "" "SIG$sig: queue empty afterwards"
        wait_until 50 logged "qk-pca:sig$sig"
        expect_equal "$(log_field "qk-pca:sig$sig" JobState)" CANCELLED "SIG$sig: CANCELLED in the log"
        expect_equal "$(tail -n 1 "$e2e_err")" \
            "qk-srun: error: pca sig$sig: job $(log_field "qk-pca:sig$sig" JobId) cancelled (SIG$sig)" \
            "SIG$sig: error line"
        expect_missing "$out/sig.tsv" "SIG$sig: partial output removed"
        wait_until 50 eval "! pgrep -f '^$marker\$' > /dev/null"
        expect_equal "$(pgrep -f "^$marker\$")" "" "SIG$sig: the job's processes are gone"
    else
        bad "SIG$sig: the job did not start"
        kill -TERM "$bg_pid"
        wait "$bg_pid"
    fi
done

# 10. SIGTERM while srun itself is stopped: only the wrapper's scancel, by
#     the job id it read from srun, can cancel the job. (It stays
#     COMPLETING until srun takes the job's last output.)
start_bg --stage pca --dataset stopped --cpus 1 --output "$out/stopped.tsv" \
    -- sh -c "echo partial > '$out/stopped.tsv'; sleep 60"
if wait_until 100 job_in_state qk-pca:stopped RUNNING; then
    stopped_id=$(squeue -h -n qk-pca:stopped -o %i)
    srun_pid=$(pgrep -P "$bg_pid" -x srun)
    kill -STOP "$srun_pid"
    kill -TERM "$bg_pid"
    stopped_state() { scontrol -o show job "$stopped_id" | grep -o 'JobState=[A-Z_]*'; }
    stopped_ended() { [[ $(stopped_state) == JobState=@(CANCELLED|COMPLETING) ]]; }
    wait_until 50 stopped_ended
    if stopped_ended; then ok; else bad "stopped srun: job not cancelled ($(stopped_state))"; fi
    expect_equal "$(ps -o stat= -p "$srun_pid" | cut -c1)" T "stopped srun: while srun was stopped"
    kill -CONT "$srun_pid"
    wait "$bg_pid"
    e2e_status=$?
    expect_status 143 "stopped srun: status"
    wait_until 100 queue_empty
    expect_equal "$(squeue -h -o %i)" "" "stopped srun: queue empty afterwards"
    expect_equal "$(log_field qk-pca:stopped JobState)" CANCELLED "stopped srun: CANCELLED in the log"
    expect_missing "$out/stopped.tsv" "stopped srun: partial output removed"
else
    bad "stopped srun: the job did not start"
    kill -TERM "$bg_pid"
    wait "$bg_pid"
fi

# 11. SIGINT while the job waits for resources that another job holds.
set -m
srun --job-name=hog --cpus-per-task="$(nproc)" --mem=100M sleep 120 > /dev/null 2>&1 &
hog_pid=$!
set +m
if wait_until 100 job_in_state hog RUNNING; then
    start_bg --stage load --dataset pending --cpus 1 --mem 100M --output "$out/pending.tsv" -- true
    if wait_until 100 job_in_state qk-load:pending PENDING; then
        kill -INT "$bg_pid"
        wait "$bg_pid"
        e2e_status=$?
        expect_status 130 "pending SIGINT: status"
        wait_until 50 eval '[ -z "$(squeue -h -n qk-load:pending -o %i)" ]'
        expect_equal "$(squeue -h -o %j)" hog "pending SIGINT: only the other job left"
        expect_equal "$(log_field qk-load:pending JobState)" CANCELLED "pending SIGINT: CANCELLED in the log"
    else
        bad "pending SIGINT: the job was not pending"
        kill -TERM "$bg_pid"
        wait "$bg_pid"
    fi
else
    bad "pending SIGINT: the other job did not start"
fi
scancel --name=hog
wait "$hog_pid"
wait_until 50 queue_empty || bad "pending SIGINT: queue not empty"

# 12. SLURM_FLAGS reach srun and come after the caller's defaults.
SLURM_FLAGS="--partition=qkalt --time=7" run "$qk_srun" --stage pca --dataset flags --cpus 1 \
    --time 5 --output "$out/flags.tsv" -- sh -c "echo x > '$out/flags.tsv'"
expect_status 0 "SLURM_FLAGS: status"
expect_equal "$(log_field qk-pca:flags Partition)" qkalt "SLURM_FLAGS: partition"
expect_equal "$(log_field qk-pca:flags TimeLimit)" 7 "SLURM_FLAGS: --time overrides the default"
SLURM_FLAGS="--partition=nosuch" run "$qk_srun" --stage pca --dataset badpart --cpus 1 \
    --output "$out/badpart.tsv" -- true
expect_status 1 "unknown partition: status"
expect_equal "$(tail -n 1 "$e2e_err")" "qk-srun: error: pca badpart: job not started (srun exit 1)" \
    "unknown partition: error line"
expect_out_contains_err "Invalid partition name" "unknown partition: srun says why"

# 13. Two wrappers at once, as under make -j2.
"$qk_srun" --stage load --dataset par1 --cpus 1 --mem 100M --output "$out/par1.tsv" \
    -- sh -c "echo 1 > '$out/par1.tsv'" > /dev/null 2>&1 &
par_pid=$!
run "$qk_srun" --stage load --dataset par2 --cpus 1 --mem 100M --output "$out/par2.tsv" \
    -- sh -c "echo 2 > '$out/par2.tsv'"
wait "$par_pid"
par1_status=$?
expect_equal "$par1_status $e2e_status" "0 0" "parallel: both succeed"
expect_equal "$(cat "$out/par1.tsv" "$out/par2.tsv" 2>/dev/null | tr '\n' ' ')" "1 2 " "parallel: both outputs"

# 14. Usage errors.
run "$qk_srun" --stage pca --dataset ds --cpus 1 -- true
expect_status 1 "usage: no --output"
run "$qk_srun" --stage pca --dataset ds --cpus 0 --output "$out/u.tsv" -- true
expect_status 1 "usage: --cpus 0"
run "$qk_srun" --stage pca --dataset ds --cpus 1 --output "$out/u.tsv"
expect_status 1 "usage: no command"

# Figures, not assertions: what one empty job costs, bare and through the
# wrapper (median of 15 each, milliseconds).
median_ms() { # command...
    local i t0 times=()
    for ((i = 0; i < 15; i++)); do
        t0=$(date +%s%N)
        "$@" > /dev/null 2>&1
        times+=($(( ($(date +%s%N) - t0) / 1000000 )))
    done
    printf '%s\n' "${times[@]}" | sort -n | sed -n 8p
}
bare_ms=$(median_ms srun --job-name=bare true)
wrapped_ms=$(median_ms "$qk_srun" --stage bench --dataset empty --cpus 1 --output "$out/bench.tsv" \
    -- sh -c "echo x > '$out/bench.tsv'")
echo "empty job (median of 15): srun $bare_ms ms, qk-srun $wrapped_ms ms," \
    "wrapper overhead $((wrapped_ms - bare_ms)) ms"
finish
