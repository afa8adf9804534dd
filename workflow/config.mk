# Parameters of the pipeline. Each group is written to build/params/<group>.txt
# (rewritten only when a value changes), and the rules that use a group list
# that file as a prerequisite: changing a parameter reruns exactly the stages
# that depend on it.

# Synthetic dataset (qk-synth): used when DATA is not given.
SEED       ?= 20260215
SCALE      ?= demo
SYNTH_MODE ?= population

# Real downloads: DATA=<dir> holds <dir>/<dataset id>/lLLhHH{q,k}/data.parquet.
DATA       ?=

# Restrict the pipeline to some datasets (registry ids); default: all.
DATASETS   ?=

REGISTRY   := workflow/datasets.tsv

# param_group NAME, VALUES: writes build/params/NAME.txt when its content changes.
param_group = $(shell mkdir -p build/params && f=build/params/$(1).txt && \
  printf '%s\n' $(2) > $$f.new && { cmp -s $$f.new $$f && rm -f $$f.new || mv -f $$f.new $$f; })

$(call param_group,synth,seed=$(SEED) scale=$(SCALE) mode=$(SYNTH_MODE))
