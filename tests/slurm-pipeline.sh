#!/bin/bash
# `make report CLUSTER=slurm` on a real one-node Slurm cluster
# (tests/lib-slurm.sh), in copies of the tree: every output is byte-identical
# to a local run; the job log holds one COMPLETED job per dataset and heavy
# stage; a truncated Parquet file fails its job, leaves no output and an
# empty queue, and `make -k` finishes the rest; Ctrl-C on make leaves the
# queue empty. Prints the local and Slurm times and the number of jobs.
# Needs root.
set -u
cd "$(dirname "$0")/.." || exit 1
. tests/lib-e2e.sh
. tests/lib-slurm.sh

base=build/tests/tmp/slurm-pipeline
rm -rf "$base" && mkdir -p "$base"
cluster=$(mktemp -d)
trap 'slurm_down "$cluster"; rm -rf "$cluster"' EXIT
trap 'exit 130' INT TERM
slurm_up "$cluster" || { bad "the test cluster did not start"; finish; exit 1; }

sets="llama3.2-1b smollm3-3b-stage1-step-40000 mistral-v0.2-7b"
stages="synth load pca rotate complement plasticity"
queue_empty() { [ -z "$(squeue -h -o %i)" ]; }
wait_until() { # tenths command...
    local i n=$1
    shift
    for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 0.1; done
    return 1
}
seconds() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.1f", e - s }'; }

# ---- the same datasets, locally and on the cluster ------------------------------------
copy_tree "$base/local"
copy_tree "$base/slurm"
t0=$EPOCHREALTIME
run make -C "$base/local" --no-print-directory -j2 DATASETS="$sets" report
expect_status 0 "local make report"
t1=$EPOCHREALTIME
run make -C "$base/slurm" --no-print-directory -j2 DATASETS="$sets" CLUSTER=slurm report
expect_status 0 "make report CLUSTER=slurm"
t2=$EPOCHREALTIME
if diff <(outputs_digest "$base/local") <(outputs_digest "$base/slurm") > "$base/diff.txt"; then ok; else
    bad "Slurm and local outputs differ: $(head -3 "$base/diff.txt" | tr '\n' ' ')"
fi
stores_local=$(cd "$base/local" && sha256sum build/*/store.qks)
stores_slurm=$(cd "$base/slurm" && sha256sum build/*/store.qks)
expect_same "$stores_local" "$stores_slurm" "stores identical"
grep -q "blas_core\|kernel" "$base/slurm/report/index.html" && ok || bad "the report names the BLAS kernel"

# one COMPLETED job per dataset and stage, nothing else
jobs=0
for d in $sets; do
    for s in $stages; do
        n=$(grep -c " Name=qk-$s:$d .*JobState=COMPLETED\| JobState=COMPLETED .* Name=qk-$s:$d " \
            "$QK_SLURM_JOBLOG")
        if [ "$n" -eq 1 ]; then ok; else bad "one COMPLETED job qk-$s:$d (found $n)"; fi
        jobs=$((jobs + n))
    done
done
total=$(grep -c . "$QK_SLURM_JOBLOG")
expect_same "$total" "$jobs" "no other jobs ran"
echo "local run: $(seconds "$t0" "$t1") s; Slurm run: $(seconds "$t1" "$t2") s, $jobs jobs" \
    "(3 datasets, demo scale, -j2)"

# a second run submits nothing
run make -C "$base/slurm" --no-print-directory -j2 DATASETS="$sets" CLUSTER=slurm report
expect_status 0 "second make report CLUSTER=slurm"
expect_same "$(grep -c . "$QK_SLURM_JOBLOG")" "$total" "a second run submits no job"

# ---- a truncated Parquet file: its job fails, nothing is left behind --------------------
dl=$(pwd)/$base/dl
bin/qk-synth --quiet --out "$dl" --registry workflow/datasets.tsv --dataset llama3.2-1b \
    --scale demo --seed 5 || bad "qk-synth writes downloads"
bin/qk-synth --quiet --out "$dl" --registry workflow/datasets.tsv --dataset mistral-v0.2-7b \
    --scale demo --seed 5 || bad "qk-synth writes downloads"
f=$(ls -d "$dl"/llama3.2-1b/l*q | head -1)/data.parquet
head -c 5000 "$f" > "$f.cut" && mv "$f.cut" "$f"
run make -C "$base/slurm" --no-print-directory -j2 -k DATA="$dl" CLUSTER=slurm report
expect_status 2 "make -k with a truncated file fails"
if grep -q "qk-srun: error: load llama3.2-1b: job [0-9]* failed (exit 2)" "$e2e_err"; then ok; else
    bad "one line naming stage, dataset and job id"; fi
if grep -q "llama3.2-1b/l.*data.parquet" "$e2e_err"; then ok; else bad "the job's error names the file"; fi
expect_missing "$base/slurm/build/llama3.2-1b/store.qks.tmp" "no partial store"
if [ -s "$base/slurm/build/mistral-v0.2-7b/plasticity_model.tsv" ] &&
   grep -q " Name=qk-plasticity:mistral-v0.2-7b .*COMPLETED\|COMPLETED .* Name=qk-plasticity:mistral-v0.2-7b" \
       "$QK_SLURM_JOBLOG"; then ok; else bad "make -k finishes the other dataset"; fi
if wait_until 50 queue_empty; then ok; else bad "the queue is empty after the failure"; fi
if grep -q " Name=qk-load:llama3.2-1b .*JobState=FAILED\|JobState=FAILED .* Name=qk-load:llama3.2-1b" \
    "$QK_SLURM_JOBLOG"; then ok; else bad "the load job is logged FAILED"; fi

# ---- Ctrl-C on make cancels its jobs ----------------------------------------------------
copy_tree "$base/interrupted"
setsid env --default-signal=INT make -C "$base/interrupted" --no-print-directory -j2 DATASETS="$sets" CLUSTER=slurm \
    report > "$base/int.out" 2>&1 &
pid=$!
running() { [ -n "$(squeue -h -t RUNNING -o %i)" ]; }
if wait_until 300 running; then ok; else bad "a job starts"; fi
kill -INT -- -"$pid"
wait "$pid"
if wait_until 100 queue_empty; then ok; else bad "Ctrl-C leaves the queue empty ($(squeue -h | head -2))"; fi
if grep -q "CANCELLED" "$QK_SLURM_JOBLOG"; then ok; else bad "the running job is cancelled"; fi

finish
