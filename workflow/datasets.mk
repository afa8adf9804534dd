# Which datasets the pipeline runs on, and where their Parquet files are.

REGISTRY_IDS := $(shell awk -F'\t' '!/^\#/ && $$1 != "id" && NF {print $$1}' $(REGISTRY))

ifeq ($(strip $(DATA)),)
DATA_DIR     := data/synth
ifneq ($(filter-out $(REGISTRY_IDS),$(DATASETS)),)
$(error DATASETS names ids not in $(REGISTRY): $(filter-out $(REGISTRY_IDS),$(DATASETS)))
endif
RUN_DATASETS := $(if $(strip $(DATASETS)),$(DATASETS),$(REGISTRY_IDS))
# the synthetic data are complete when qk-synth wrote its truth table last
dataset_input = $(DATA_DIR)/$(1)/synth-truth.tsv
else
DATA_DIR     := $(patsubst %/,%,$(DATA))
ifeq ($(wildcard $(DATA_DIR)/.),)
$(error DATA=$(DATA) is not a directory)
endif
# every sub-directory that is a registry id or carries a qkreport.conf
DATA_IDS     := $(sort $(filter $(REGISTRY_IDS),$(notdir $(patsubst %/,%,$(wildcard $(DATA_DIR)/*/)))) \
                  $(notdir $(patsubst %/qkreport.conf,%,$(wildcard $(DATA_DIR)/*/qkreport.conf))))
RUN_DATASETS := $(if $(strip $(DATASETS)),$(DATASETS),$(DATA_IDS))
ifeq ($(strip $(RUN_DATASETS)),)
$(error no dataset directories found in DATA=$(DATA))
endif
dataset_input = $(wildcard $(DATA_DIR)/$(1)/*/*.parquet $(DATA_DIR)/$(1)/qkreport.conf)
endif

# Datasets in registry order (unlisted ones last), for tables and the report.
ORDERED_DATASETS := $(filter $(RUN_DATASETS),$(REGISTRY_IDS)) $(filter-out $(REGISTRY_IDS),$(RUN_DATASETS))

# The study of a dataset: column 2 of the registry; a dataset outside the
# registry takes "study = ..." from its qkreport.conf, else "extra".
ID_STUDY := $(shell awk -F'\t' '!/^\#/ && $$1 != "id" && NF {print $$1 "=" $$2}' $(REGISTRY))
conf_study = $(or $(shell sed -n 's/^[[:space:]]*study[[:space:]]*=[[:space:]]*\([^[:space:]]*\).*/\1/p' \
  $(DATA_DIR)/$(1)/qkreport.conf 2>/dev/null),extra)
study_of = $(or $(patsubst $(1)=%,%,$(filter $(1)=%,$(ID_STUDY))),$(call conf_study,$(1)))
# The datasets of a study in registry order.
study_datasets = $(foreach d,$(ORDERED_DATASETS),$(if $(filter $(1),$(call study_of,$(d))),$(d)))
# Model ids in the study tables are dataset ids; SmolLM3 rows name the checkpoint.
study_model_prefix = $(if $(filter smollm3_training_progress,$(1)),smollm3-3b-)
# The studies with at least one dataset in this run.
RUN_STUDIES := $(sort $(foreach d,$(RUN_DATASETS),$(call study_of,$(d))))
