# Benchmarks: printed figures, never pass/fail tests.

BENCH_DATASET ?= llama3.2-3b
BENCH_DIR     := build/bench

$(BENCH_DIR)/data/$(BENCH_DATASET)/synth-truth.tsv: bin/qk-synth $(REGISTRY)
	@mkdir -p $(BENCH_DIR)/data
	bin/qk-synth --out $(BENCH_DIR)/data --registry $(REGISTRY) --dataset $(BENCH_DATASET) \
	  --scale thesis --seed $(SEED) --quiet

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
	  awk -v s=$$start -v e=$$end -v b=$$bytes 'BEGIN { printf "qk-load end to end (files in page cache, store written): %.2f s, %.0f MB/s of Parquet\n", e - s, b / 1e6 / (e - s) }'

# The per-head stages beside their floors (docs/performance.md): qk-pca,
# qk-rotate and qk-complement on one thread on the thesis-scale store of the
# plasticity benchmark (llama3.2-3b, plasticity.mk), each with the work it
# cannot avoid timed alone in the same run. One TSV line per stage: stage,
# heads, seconds, floor_seconds, ratio.
.PHONY: bench-stages
bench: bench-stages

bench-stages: bin/qk-bench-stages bin/qk-pca bin/qk-rotate bin/qk-complement $(BENCH_DIR)/store.qks
	@echo "== qk-pca, qk-rotate, qk-complement at thesis scale on one thread, beside their floors"
	bin/qk-bench-stages $(BENCH_DIR)/store.qks

# make bench-e2e takes the floors of these stages from qk-bench-stages (one
# "floor<TAB>SECONDS" line for the stage on the dataset's store).
BENCH_E2E_STAGE_FLOORS += $(foreach s,pca rotate complement,\
  --floor '$(s)=bin/qk-bench-stages --quiet --floor-only --stages $(s) --print floor {store}')
