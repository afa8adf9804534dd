# Parameters of the pipeline and the records that make them cache keys.
#
# A record is a small file under build/ whose content is a cache key: a
# parameter group (build/params/<group>.txt), the list of datasets a merged
# output is made from (build/sets/<name>.txt), a dataset's source
# (build/<ds>/source.txt, load.mk) or a program's identity
# (build/progs/<prog>.id, build.mk). A record is rewritten only when its
# content changes, and the rules that use it list it as a prerequisite, so
# Make reruns exactly what a changed key affects (docs/cache.md).

# Synthetic dataset (qk-synth): used when DATA is not given.
SEED       ?= 20260215
SCALE      ?= demo
SYNTH_MODE ?= population

# Real downloads: DATA=<dir> holds <dir>/<dataset id>/lLLhHH{q,k}/data.parquet.
DATA       ?=

# Restrict the pipeline to some datasets (registry ids); default: all.
DATASETS   ?=

# Disk space (MB) that qk-synth and qk-load leave free: they stop with an
# error, removing the partial file, rather than fill the disk. Not a cache
# key: it never changes an output.
MIN_FREE   ?= 256

REGISTRY   := workflow/datasets.tsv

# The date every PDF records (the figures' figure.pdf, the thesis example):
# SOURCE_DATE_EPOCH when set (reproducible-builds.org), else 0, the Unix
# epoch, so that a PDF's bytes do not depend on when it was made.
SOURCE_DATE_EPOCH ?= 0
export SOURCE_DATE_EPOCH

# What make prints: by default one short line a step ("  PCA     qwen3-8b
# 300 heads   2.1 s", workflow/qk-step), with a live meter on a terminal;
# V=1 prints every command instead.
#   $(call step,LABEL,NAME) COMMAND                  a light step, always local
#   $(call job,LABEL,DATASET,THREADS,INPUT,OUTPUTS) COMMAND
#                                                    a heavy per-dataset stage:
# with CLUSTER=slurm it runs as one Slurm job (workflow/qk-srun) with
# THREADS CPUs, sized from INPUT, and succeeds only if it left OUTPUTS.
V ?= 0
CLUSTER ?=
ifneq ($(filter-out slurm,$(CLUSTER)),)
$(error CLUSTER=$(CLUSTER): the only cluster known is slurm)
endif
ifeq ($(V),1)
step =
quiet =
else
step = @workflow/qk-step $(1) $(2) --
quiet = @
endif
ifeq ($(CLUSTER),slurm)
job = @workflow/qk-step $(if $(filter 1,$(V)),--verbose) --slurm --cpus $(3) --input $(4) \
  $(foreach o,$(5),--output $(o)) $(1) $(2) --
else
job = $(step)
endif

$(shell mkdir -p build/params build/sets)

# write_record PATH, WORDS: PATH holds WORDS, one a line, and is rewritten
# only when they differ from what it holds. Make writes it itself, without
# a shell; a record cut short by a kill differs and is rewritten next time.
# A make that builds nothing (QK_BUILDS_NOTHING, Makefile) writes no record:
# else `make -n report PLAST_MIN_PAIRS=40` would leave the new value in the
# record and the next `make report` would rerun what it feeds. There a
# record that would change is declared phony instead, so `make -n` lists
# (and `make -q` reports) what depends on it, as the real run remakes it.
write_record = $(if $(and $(wildcard $(1)),$(call same_words,$(file <$(1)),$(2))),,$(if \
  $(QK_BUILDS_NOTHING),$(eval .PHONY: $(1)),$(file >$(1),$(call record_text,$(2)))))
record_text = $(subst $(space),$(newline),$(strip $(1)))
same_words = $(if $(strip $(1))$(strip $(2)),$(and $(strip $(1)),$(strip $(2)),$(findstring \
  <$(strip $(1))>,<$(strip $(2))>),$(findstring <$(strip $(2))>,<$(strip $(1))>)),same)
empty :=
space := $(empty) $(empty)
define newline


endef

# param_group NAME, VALUES: build/params/NAME.txt, one "name=value" a line.
param_group = $(call write_record,build/params/$(1).txt,$(or $(strip $(2)),-))$(eval PARAM_GROUPS += $(1))
PARAM_GROUPS :=

# set_record NAME, DATASETS: build/sets/NAME.txt lists the datasets (in
# order) a merged output is made from; the path is the expansion.
set_record = $(call write_record,build/sets/$(1).txt,$(or $(strip $(2)),-))build/sets/$(1).txt

$(call param_group,synth,seed=$(SEED) scale=$(SCALE) mode=$(SYNTH_MODE))
