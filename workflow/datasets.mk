# Which datasets the pipeline runs on, where their Parquet files are, and
# the registry facts the rules need (looked up by column name).

# One awk pass over the registry: "id|column|value" words for the columns
# the rules use.
REGISTRY_COLUMNS := study family label
registry_facts = $(shell awk -F'\t' -v want="$(REGISTRY_COLUMNS)" ' \
  /^\#/ || !NF { next } \
  $$1 == "id" { for (i = 1; i <= NF; i++) col[$$i] = i; n = split(want, w, " "); next } \
  { print $$1 "|id|" $$1; for (i = 1; i <= n; i++) print $$1 "|" w[i] "|" $$col[w[i]] }' $(1))
REGISTRY_FACTS := $(call registry_facts,$(REGISTRY))
REGISTRY_IDS := $(foreach f,$(REGISTRY_FACTS),$(if $(findstring |id|,$(f)),$(firstword $(subst |, ,$(f)))))

ifeq ($(strip $(DATA)),)
DATA_DIR     := data/synth
ifneq ($(filter-out $(REGISTRY_IDS),$(DATASETS)),)
$(error DATASETS names ids not in $(REGISTRY): $(filter-out $(REGISTRY_IDS),$(DATASETS)))
endif
RUN_DATASETS := $(if $(strip $(DATASETS)),$(DATASETS),$(REGISTRY_IDS))
else
# The rules reach DATA through a link build/data-link to it, so that a
# folder whose name holds spaces, quotes or other letters Make reads as
# syntax works as any other (qk-load records the folder the link resolves
# to, so the link changes no output).
DATA_DIR     := build/data-link
# data_path FILE: DATA/FILE as a shell word, for what names a file to the user
data_path = $(call shell_word,$(DATA))/$(1)
DATA_LINKED := $(shell d=$(call shell_word,$(DATA)); test -d "$$d" || exit; t=$$(realpath -s -- "$$d") && \
  { [ "$$(readlink build/data-link)" = "$$t" ] || { mkdir -p build && ln -sfn -- "$$t" build/data-link.new && \
  mv -Tf build/data-link.new build/data-link; }; } && echo yes)
ifneq ($(DATA_LINKED),yes)
$(error DATA=$(DATA) is not a directory)
endif
# every sub-directory that is a registry id or carries a qkreport.conf
DATA_IDS     := $(sort $(filter $(REGISTRY_IDS),$(notdir $(patsubst %/,%,$(wildcard $(DATA_DIR)/*/)))) \
                  $(notdir $(patsubst %/qkreport.conf,%,$(wildcard $(DATA_DIR)/*/qkreport.conf))))
RUN_DATASETS := $(if $(strip $(DATASETS)),$(DATASETS),$(DATA_IDS))
ifeq ($(strip $(RUN_DATASETS)),)
$(error no dataset directories found in DATA=$(DATA))
endif
endif

# The registry of the run (build/sets/registry.tsv), which the summaries and
# figures read: the rows of workflow/datasets.tsv, and one per dataset of the
# run it lacks, from its qkreport.conf (workflow/run-registry.awk). A record:
# one path in every run, rewritten only when its content changes, so that a
# run with or without such datasets redraws exactly the figures it changes.
CONF_IDS := $(if $(strip $(DATA)),$(foreach d,$(filter-out $(REGISTRY_IDS),$(RUN_DATASETS)),$(if \
  $(wildcard $(DATA_DIR)/$(d)/qkreport.conf),$(d))))
RUN_REGISTRY := build/sets/registry.tsv
# (a conf line the reader refuses stops make with the reader's one line)
RUN_REGISTRY_TEXT := $(shell mkdir -p build/sets && awk -v ids="$(CONF_IDS)" -f workflow/run-registry.awk \
  $(REGISTRY) $(foreach d,$(CONF_IDS),$(call data_path,$(d)/qkreport.conf)) 2>&1 > $(RUN_REGISTRY).new && \
  if cmp -s $(RUN_REGISTRY).new $(RUN_REGISTRY); then echo same; elif [ -n "$(QK_BUILDS_NOTHING)" ]; \
  then echo changed; else mv -f $(RUN_REGISTRY).new $(RUN_REGISTRY) && echo written; fi)
ifeq ($(filter same changed written,$(RUN_REGISTRY_TEXT)),)
$(error $(or $(strip $(patsubst error:,,$(RUN_REGISTRY_TEXT))),cannot read the registry $(REGISTRY)))
endif
ifeq ($(RUN_REGISTRY_TEXT),changed)
.PHONY: $(RUN_REGISTRY)
endif
RUN_REGISTRY_FILE := $(if $(filter changed,$(RUN_REGISTRY_TEXT)),$(RUN_REGISTRY).new,$(RUN_REGISTRY))
RUN_REGISTRY_IDS := $(shell awk -F'\t' '!/^\#/ && NF && $$1 != "id" { print $$1 }' $(RUN_REGISTRY_FILE))
# the facts of the rules (study, family and label of every dataset) from it
REGISTRY_FACTS := $(call registry_facts,$(RUN_REGISTRY_FILE))$(shell rm -f $(RUN_REGISTRY).new)

# Datasets in the run registry's order (the SmolLM3 checkpoints in training
# order, other unlisted ones last), for tables and the report.
ORDERED_DATASETS := $(filter $(RUN_DATASETS),$(RUN_REGISTRY_IDS)) $(filter-out $(RUN_REGISTRY_IDS),$(RUN_DATASETS))

# registry_value ID, COLUMN: the registry's value; for a dataset outside the
# registry, "COLUMN = value" of its qkreport.conf; else empty.
conf_value = $(shell sed -n 's/^[[:space:]]*$(2)[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/\1/p' \
  $(DATA_DIR)/$(1)/qkreport.conf 2>/dev/null)
registry_value = $(or $(patsubst $(1)|$(2)|%,%,$(filter $(1)|$(2)|%,$(REGISTRY_FACTS))),$(if \
  $(filter $(1),$(REGISTRY_IDS)),,$(call conf_value,$(1),$(2))))

# The study of a dataset ("extra" for an unlisted one without a study).
study_of = $(or $(call registry_value,$(1),study),extra)
# The datasets of a study in registry order.
study_datasets = $(strip $(foreach d,$(ORDERED_DATASETS),$(if $(filter $(1),$(call study_of,$(d))),$(d))))
# Model ids in the study tables are dataset ids; SmolLM3 rows name the checkpoint.
study_model_prefix = $(if $(filter smollm3_training_progress,$(1)),smollm3-3b-)
# The studies with at least one dataset in this run.
RUN_STUDIES := $(sort $(foreach d,$(RUN_DATASETS),$(call study_of,$(d))))

# The datasets of the whole run, as a record (build/sets/run.txt): outputs
# made from every dataset (inventory, report, archive) depend on it.
RUN_SET := $(call set_record,run,$(ORDERED_DATASETS))

# merge_rule DIR, TABLE, DATASETS, TSV, MODEL_PREFIX: results/DIR/TABLE
# concatenates build/<ds>/TSV of DATASETS (in order) with a model column,
# the dataset id without MODEL_PREFIX. It depends on the record of its
# dataset list, so a run on other datasets remakes it.
define merge_rule
$(STAGE)/results/$(1)/$(2): $(foreach d,$(3),build/$(d)/$(4)) $(call prog,qk-merge) $(call set_record,$(1),$(3))
	@mkdir -p $$(@D)
	$$(call step,MERGE,$(1)/$(2)) bin/qk-merge --model-from-dir$(if $(5), --strip-prefix $(5)) --output $$@ \
	  $(foreach d,$(3),build/$(d)/$(4))
MERGED_TABLES += $(STAGE)/results/$(1)/$(2)
endef
merge = $(eval $(call merge_rule,$(1),$(2),$(3),$(4),$(5)))
MERGED_TABLES :=
