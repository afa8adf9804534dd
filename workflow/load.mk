# Stage qk-load: one validated binary store per dataset.
#
# The store's cache key is the dataset's source record build/<ds>/source.txt
# (include/qk/source.h): for synthetic data the seed, scale and mode; for
# downloads the resolved directory and every input file's size, mtime (ns)
# and Parquet footer hash; in both cases the dataset's registry row. Make
# asks qk-load to rewrite the record on every run (FORCE); the file changes
# only when the source did, so a file replaced by one with an older mtime,
# another DATA directory or a completed download reloads exactly that
# dataset.

ifeq ($(strip $(DATA)),)
# Synthetic data: the record of what qk-synth makes of the dataset
# (build/<ds>/synth-source.txt, the key of data/synth/<ds>, synth.mk) is also the
# store's source record.
dataset_input = data/synth/$(1)/synth-truth.tsv
build/%/source.txt: build/%/synth-source.txt FORCE
	@cmp -s $< $@ || { cp $< $@.tmp && mv -f $@.tmp $@; }
else
dataset_input =
build/%/source.txt: FORCE | bin/qk-load
	@mkdir -p $(@D)
	@bin/qk-load --source-record $@ --registry $(REGISTRY) --dataset $* $(DATA_DIR)/$*
endif

build/%/synth-source.txt: FORCE | bin/qk-load
	@mkdir -p $(@D)
	@bin/qk-load --source-record $@ --registry $(REGISTRY) --dataset $* \
	  --synthetic "seed=$(SEED) scale=$(SCALE) mode=$(SYNTH_MODE)"

build/%/store.qks build/%/inventory.tsv: build/%/source.txt $$(call dataset_input,$$*) \
    $(call prog,qk-load)
	$(call job,LOAD,$*,1,build/$*/source.txt,build/$*/store.qks build/$*/inventory.tsv) \
	  bin/qk-load --quiet --registry $(REGISTRY) --dataset $* --source build/$*/source.txt \
	  $(DATA_DIR)/$* -o build/$*/store.qks --inventory build/$*/inventory.tsv \
	  --min-free $(MIN_FREE)

# records are kept, never removed as intermediate files
.PRECIOUS: build/%/source.txt build/%/synth-source.txt

STORES := $(foreach d,$(RUN_DATASETS),build/$(d)/store.qks)
.PHONY: load FORCE
load: $(STORES)
FORCE:
