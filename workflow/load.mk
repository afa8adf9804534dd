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

# The folder of dataset $(1) as qk-load gets it: the user's DATA path (so
# that its messages name it), quoted for the shell
dataset_dir = $(if $(strip $(DATA)),$(call data_path,$(1)),$(DATA_DIR)/$(1))
# qk-load's arguments for the record of dataset $(1), besides --source-record
data_record_args = --registry $(REGISTRY) --dataset $(1) $(call dataset_dir,$(1))
synth_record_args = --registry $(REGISTRY) --dataset $(1) \
  --synthetic "seed=$(SEED) scale=$(SCALE) mode=$(SYNTH_MODE)"
synth_data_record_args = $(synth_record_args) $(call dataset_dir,$(1))

# A make that builds nothing (-n, -q: QK_BUILDS_NOTHING, Makefile) writes
# no record: qk-load writes it to a temporary file instead, and the record
# is remade (FORCE) only if that differs from it, so `make -q report` after
# a complete build exits 0. (Without bin/qk-load it is remade.)
#   record_check RECORD, ARGS   FORCE, or nothing in such a make if
#                               qk-load ARGS gives RECORD as it is
ifeq ($(QK_BUILDS_NOTHING),)
record_check = FORCE
else
# (for `make why`, QK_WHY_DIR, the record as it would be is kept there)
record_check = $(if $(shell t=$$(mktemp) && bin/qk-load --source-record "$$t" $(2) > /dev/null 2>&1 && \
  { cmp -s "$$t" $(1) && echo same || { [ -z "$(QK_WHY_DIR)" ] || { mkdir -p $(QK_WHY_DIR)/$(dir $(1)) && \
  cp "$$t" $(QK_WHY_DIR)/$(1); }; }; }; rm -f "$$t"),,FORCE)
endif

ifeq ($(strip $(DATA)),)
# Synthetic data: the store's record is the record of what qk-synth makes of
# the dataset (build/<ds>/synth-source.txt, the key of data/synth/<ds>,
# synth.mk) with the files it wrote, made after them (order only: the
# record is remade on every run), so that a file there edited or replaced by
# hand reloads the dataset. New data reload it through dataset_input too,
# so that a dry run lists the stages they rerun.
dataset_input = data/synth/$(1)/synth-truth.tsv
build/%/source.txt: $$(call record_check,$$@,$$(call synth_data_record_args,$$*)) \
    | data/synth/%/synth-truth.tsv bin/qk-load
	@bin/qk-load --source-record $@ $(call synth_data_record_args,$*)
else
dataset_input =
build/%/source.txt: $$(call record_check,$$@,$$(call data_record_args,$$*)) | bin/qk-load
	@mkdir -p $(@D)
	@bin/qk-load --source-record $@ $(call data_record_args,$*)
endif

build/%/synth-source.txt: $$(call record_check,$$@,$$(call synth_record_args,$$*)) | bin/qk-load
	@mkdir -p $(@D)
	@bin/qk-load --source-record $@ $(call synth_record_args,$*)

build/%/store.qks build/%/inventory.tsv: build/%/source.txt $$(call dataset_input,$$*) \
    $(call prog,qk-load)
	$(call job,LOAD,$*,1,build/$*/source.txt,build/$*/store.qks build/$*/inventory.tsv) \
	  bin/qk-load --quiet --registry $(REGISTRY) --dataset $* --source build/$*/source.txt \
	  $(call dataset_dir,$*) -o build/$*/store.qks --inventory build/$*/inventory.tsv \
	  --min-free $(MIN_FREE)

# records are kept, never removed as intermediate files
.PRECIOUS: build/%/source.txt build/%/synth-source.txt

STORES := $(foreach d,$(RUN_DATASETS),build/$(d)/store.qks)
.PHONY: load FORCE
load: $(STORES)
FORCE:
