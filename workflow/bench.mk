# Benchmarks: printed figures, never pass/fail tests.

BENCH_DATASET ?= llama3.2-3b
BENCH_DIR     := build/bench

# ISA=avx512, avx2 or scalar: the instruction set the vector code of every
# stage and floor may use in bench-plasticity, bench-stages and bench-e2e
# (the environment variable QK_ISA; never one the CPU lacks), to measure a
# lower one on a CPU that has more. The loops of rotate and the complement
# have no AVX-512 build: at avx512 they run their AVX2 one. Unset: the best
# the CPU has. It changes no result.
ISA ?=
$(call checked_by,ISA,one of: avx512 avx2 scalar)
BENCH_ENV = $(if $(ISA),QK_ISA=$(ISA) )

.PHONY: bench bench-load
bench: bench-load

bench-load: bin/qk-bench-load bin/qk-load $(BENCH_DIR)/data/$(BENCH_DATASET)/synth-truth.tsv
	@echo "== qk-load on $(BENCH_DATASET) at thesis scale ($(BENCH_DIR)/data/$(BENCH_DATASET))"
	@du -sh --apparent-size $(BENCH_DIR)/data/$(BENCH_DATASET) | awk '{print "dataset on disk: " $$1}'
	bin/qk-bench-load $(BENCH_DIR)/data/$(BENCH_DATASET)
	@cat $(BENCH_DIR)/data/$(BENCH_DATASET)/*/data.parquet > /dev/null
	@start=$$(date +%s.%N); \
	  bin/qk-load --quiet --dataset $(BENCH_DATASET) $(BENCH_DIR)/data/$(BENCH_DATASET) -o $(BENCH_DIR)/store.qks; \
	  end=$$(date +%s.%N); \
	  bytes=$$(cat $(BENCH_DIR)/data/$(BENCH_DATASET)/*/data.parquet | wc -c); \
	  store=$$(stat -c %s $(BENCH_DIR)/store.qks); \
	  awk -v s=$$start -v e=$$end -v b=$$bytes -v w=$$store 'BEGIN { printf "qk-load end to end (files in page cache, store written): %.2f s, %.0f MB/s of Parquet\n", e - s, b / 1e6 / (e - s); printf "read %.1f MB of Parquet, wrote a store of %.1f MB: %.3f x the Parquet input (goal <= 1)\n", b / 1e6, w / 1e6, w / b }'

# make bench-e2e: every stage on thesis-scale synthetic data of a few
# representative datasets (written once under build/bench/data and kept),
# one table of wall and CPU seconds per head, bytes read and written, peak
# RSS and each stage's floor measured in the same run, the saved ratios of
# bench-pca, bench-rotate and bench-plasticity, and the extrapolation to
# the 23-dataset thesis set (bench/bench_e2e.py). The stages run with the
# pipeline's own flags, on one dataset at a time. The load floor is the best
# of three runs of ZSTD_decompress over every page: one run alone varies by
# a third. The plasticity floor is its GEMMs and PP evaluations
# (qk-plasticity --floor) and the reading of the rows from the store that
# the floor of every other stage holds too (qk-bench-stages --stages read).
BENCH_E2E_DATASETS ?= qwen3-8b llama3.2-1b smollm3-3b-lc-32k-to-64k-step-20000
BENCH_E2E_WORK     := $(BENCH_DIR)/e2e

$(BENCH_DIR)/data/%/synth-truth.tsv: bin/qk-synth
	@mkdir -p $(BENCH_DIR)/data
	$(call step,SYNTH,$*) bin/qk-synth --out $(BENCH_DIR)/data --registry $(REGISTRY) --dataset $* \
	  --scale thesis --seed $(SEED) --min-free $(MIN_FREE) --quiet

BENCH_E2E_STAGES = \
  --stage 'load=bin/qk-load --quiet --registry $(REGISTRY) --dataset {dataset} {data} -o {store}' \
  --stage 'pca=bin/qk-pca $(PCA_FLAGS) --output {out}/pca.tsv --heads-output {out}/pca_heads.tsv {store}' \
  --stage 'rotate=bin/qk-rotate $(ROT_FLAGS) --family x --checkpoint - --output {out}/rotation.tsv \
    --axes-output {out}/rotation_axes.bin {store}' \
  --stage 'complement=bin/qk-complement --quiet --threads $(ROT_THREADS) --active-tau $(ROT_ACTIVE_TAU) \
    --axes {out}/rotation_axes.bin --rotation {out}/rotation.tsv --pairs-output {out}/complement_pairs.tsv \
    --heads-output {out}/complement_heads.tsv --rotated-output {out}/rotated.tsv {store}' \
  --stage 'plasticity=bin/qk-plasticity $(PLAST_FLAGS) --out-dir {out} {store}'
BENCH_E2E_FLOORS = --floor 'load=bin/qk-bench-load --repeat 3 {data}' \
  --floor 'plasticity=bin/qk-plasticity --floor --threads 1 --max-heads 8 --out-dir {out}/floor {store}' \
  --floor 'plasticity=bin/qk-bench-stages --quiet --floor-only --stages read --print floor {store}' \
  $(BENCH_E2E_STAGE_FLOORS)

.PHONY: bench-e2e
bench-e2e: $(PROGS) $(foreach d,$(BENCH_E2E_DATASETS),$(BENCH_DIR)/data/$(d)/synth-truth.tsv)
	@$(BENCH_ENV)/usr/bin/python3 bench/bench_e2e.py --datasets $(BENCH_E2E_DATASETS) \
	  --data $(BENCH_DIR)/data --work $(BENCH_E2E_WORK) $(BENCH_E2E_STAGES) $(BENCH_E2E_FLOORS) \
	  --ratio bench-pca=$(BENCH_DIR)/bench-pca.txt --ratio bench-rotate=$(BENCH_DIR)/bench-rotate.txt \
	  --ratio bench-plasticity=$(BENCH_DIR)/bench-plasticity.txt

# The per-head stages beside their floors (docs/performance.md): qk-pca,
# qk-rotate and qk-complement on one thread on the thesis-scale store of the
# plasticity benchmark (llama3.2-3b, plasticity.mk), each with the work it
# cannot avoid timed alone in the same run. One TSV line per stage: stage,
# heads, seconds, floor_seconds, ratio.
.PHONY: bench-stages
bench: bench-stages

bench-stages: bin/qk-bench-stages bin/qk-pca bin/qk-rotate bin/qk-complement bin/qk-report $(BENCH_DIR)/store.qks
	@echo "== qk-pca, qk-rotate, qk-complement at thesis scale on one thread, beside their floors"
	@$(BENCH_ENV)/usr/bin/python3 bench/benchlib.py
	$(BENCH_ENV)bin/qk-bench-stages --threads 1 $(BENCH_DIR)/store.qks

# make bench-e2e takes the floors of these stages from qk-bench-stages (one
# "floor<TAB>SECONDS" line for the stage on the dataset's store).
BENCH_E2E_STAGE_FLOORS += $(foreach s,pca rotate complement,\
  --floor '$(s)=bin/qk-bench-stages --quiet --floor-only --stages $(s) --print floor {store}')

# make bench-noop: `make report` with nothing to do, as a user runs it (in a
# copy of the tree with the demo built): the median time beside its goal
# of 1 s (bench/bench-noop.sh).
.PHONY: bench-noop
bench-noop: $(PROGS)
	@echo "== make report with nothing to do (demo, every dataset)"
	@mkdir -p $(BENCH_DIR) && bench/bench-noop.sh $(BENCH_DIR)/noop | tee $(BENCH_DIR)/bench-noop.txt
bench: bench-noop
