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
