# Stage qk-synth: the synthetic datasets in the sniffed-qk layout. A
# dataset's data depend on its synthetic source record build/<ds>/synth-source.txt
# (seed, scale, mode and its registry row; load.mk), so changing SEED for
# one dataset rewrites only that one, and a run on downloads leaves them be.

SYNTH_FLAGS = --scale $(SCALE) --seed $(SEED) --mode $(SYNTH_MODE) --min-free $(MIN_FREE) --quiet

# The key of a dataset's data (build/<ds>/synth-key.txt) is that record and
# qk-synth's identity; qk-synth keeps a dataset made from the same key
# (--key), so that `make clean`, which removes the records but not
# data/synth, does not make it write the same data again.
data/synth/%/synth-truth.tsv: build/%/synth-source.txt $(call prog,qk-synth)
	@mkdir -p data/synth
	@cat $^ > build/$*/synth-key.txt
	$(call job,SYNTH,$*,1,build/$*/synth-source.txt,$@) bin/qk-synth --out data/synth --registry $(REGISTRY) --dataset $* \
	  --key build/$*/synth-key.txt $(SYNTH_FLAGS)

.PHONY: synth
synth: $(foreach d,$(RUN_DATASETS),data/synth/$(d)/synth-truth.tsv)
