# Stage qk-synth: the synthetic datasets in the sniffed-qk layout.

SYNTH_FLAGS = --scale $(SCALE) --seed $(SEED) --mode $(SYNTH_MODE) --quiet

data/synth/%/synth-truth.tsv: bin/qk-synth $(REGISTRY) build/params/synth.txt
	@mkdir -p data/synth
	bin/qk-synth --out data/synth --registry $(REGISTRY) --dataset $* $(SYNTH_FLAGS)

.PHONY: synth
synth: $(foreach d,$(RUN_DATASETS),data/synth/$(d)/synth-truth.tsv)
