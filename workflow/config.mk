# Parameters of the pipeline and the records that make them cache keys.
#
# A record is a small file under build/ whose content is a cache key: a
# parameter group (build/params/<group>.txt), the list of datasets a merged
# output is made from (build/sets/<name>.txt), a dataset's source
# (build/<ds>/source.txt, load.mk) or a program's identity
# (build/progs/<prog>.id, build.mk). A record is rewritten only when its
# content changes, and the rules that use it list it as a prerequisite, so
# Make reruns exactly what a changed key affects (docs/cache.md).

# The defaults the programs declare (include/qk/defaults.h, one
# "#define QK_DEFAULT_<VAR> VALUE" a line): qk_default.<VAR> is VALUE. Read
# as text, so that a tree whose programs are not built yet has them.
qk_defaults_words := $(file <include/qk/defaults.h)
qk_defaults_pairs := $(filter QK_DEFAULT_%,$(join $(addsuffix =,$(qk_defaults_words)),$(wordlist \
  2,$(words $(qk_defaults_words)),$(qk_defaults_words))))
$(foreach p,$(qk_defaults_pairs),$(eval qk_default.$(patsubst QK_DEFAULT_%,%,$(firstword \
  $(subst =, ,$(p)))) := $(word 2,$(subst =, ,$(p)))))

# param VAR, DEFAULT[, CHECK]: declares a parameter of the pipeline: VAR is
# DEFAULT unless the command line or the environment sets it. A parameter
# whose program declares its default (qk_default.VAR, above) gives no
# DEFAULT here: the programs' value is the one. Every parameter is
# listed in a param_group (below), and the rebuild commands of the report and
# the figure READMEs name it when a run gives it another value (rebuild_args).
# CHECK says which values it takes (checked before any work, validate.mk).
param = $(if $(and $(2),$(qk_default.$(1))),$(error param $(1): its default is in include/qk/defaults.h))$(eval \
  $(1) ?= $(or $(qk_default.$(1)),$(2)))$(eval param_default.$(1) := $(or $(qk_default.$(1)),$(2)))$(eval PARAMS += $(1))$(call checked_by,$(1),$(3))
PARAMS :=
# checked_by VAR, CHECK: the value of VAR (a parameter, or a setting that
# changes no output, such as a thread count) must pass CHECK, one of
#   PROGRAM --OPTION  the program's own parser takes it for that option
#   dataset           a dataset id of the registry or of the run
#   count             a whole number from 0
#   one of: A B ...   one of these words
#   blas              native, or an OpenBLAS kernel this CPU runs
checked_by = $(if $(strip $(2)),$(eval param_check.$(1) := $(2))$(eval CHECKED_VARS += $(1)))
CHECKED_VARS :=

# Synthetic dataset (qk-synth): used when DATA is not given.
$(call param,SEED,20260215,qk-synth --seed)
$(call param,SCALE,,qk-synth --scale)
$(call param,SYNTH_MODE,,qk-synth --mode)

# Real downloads: DATA=<dir> holds <dir>/<dataset id>/lLLhHH{q,k}/data.parquet.
$(call param,DATA,)

# Restrict the pipeline to some datasets (registry ids); default: all.
$(call param,DATASETS,)

# Disk space (MB) that qk-synth and qk-load leave free: they stop with an
# error, removing the partial file, rather than fill the disk. Not a cache
# key: it never changes an output.
MIN_FREE   ?= $(qk_default.MIN_FREE)
$(call checked_by,MIN_FREE,qk-load --min-free)

REGISTRY   := workflow/datasets.tsv

# The date every PDF records (the figures' figure.pdf, the thesis example):
# SOURCE_DATE_EPOCH when set (reproducible-builds.org), else 0, the Unix
# epoch, so that a PDF's bytes do not depend on when it was made.
$(call param,SOURCE_DATE_EPOCH,0,count)
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
$(call checked_by,V,one of: 0 1)
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

# write_text PATH, TEXT: PATH holds TEXT (and a newline), and is rewritten
# only when TEXT differs from what it holds. Make writes it itself, without
# a shell; a record cut short by a kill differs and is rewritten next time.
# A make that builds nothing (QK_BUILDS_NOTHING, Makefile) writes no record:
# else `make -n report PLAST_MIN_PAIRS=40` would leave the new value in the
# record and the next `make report` would rerun what it feeds. There a
# record that would change is declared phony instead, so `make -n` lists
# (and `make -q` reports) what depends on it, as the real run remakes it.
write_text = $(call write_text_unless,$(1),$(2),$(QK_BUILDS_NOTHING))
# write_text_unless PATH, TEXT, NOTHING: write_text, as in a make that
# builds nothing when NOTHING is not empty
# (for `make why`, QK_WHY_DIR, such a record is written there instead,
# outside the tree, so that it can say what changed)
write_text_unless = $(if $(and $(wildcard $(1)),$(call holds_text,$(file <$(1)),$(2))),,$(if \
  $(3),$(eval .PHONY: $(1))$(if $(QK_WHY_DIR),$(shell mkdir -p $(QK_WHY_DIR)/$(dir $(1)))$(file \
  >$(QK_WHY_DIR)/$(1),$(2))),$(file >$(1),$(2))))
# holds_text CONTENT, TEXT: CONTENT, as $(file <) reads it, is TEXT and the
# newline $(file >) adds (GNU make 4.3 keeps it; later versions drop it)
holds_text = $(or $(call same_text,$(1),$(2)$(newline)),$(call same_text,$(1),$(2)))
# write_record PATH, WORDS: PATH holds WORDS, one a line (a word may stand
# for a line with spaces: see param_group).
write_record = $(call write_text,$(1),$(call record_text,$(2)))
write_record_always = $(call write_text_unless,$(1),$(call record_text,$(2)),)
record_text = $(call unhide_spaces,$(subst $(space),$(newline),$(strip $(1))))
# (both or neither empty, else each found in the other: the same text)
same_text = $(if $(1)$(2),$(and $(1),$(2),$(findstring <$(1)>,<$(2)>),$(findstring <$(2)>,<$(1)>)),same)
empty :=
space := $(empty) $(empty)
tab := $(empty)	$(empty)
define newline


endef
# A value with spaces is one word while Make handles it: each run of blanks
# is one OPEN BOX (U+2423, a visible space), turned back when it is written.
hidden_space := ␣
hide_spaces = $(subst $(space),$(hidden_space),$(strip $(1)))
unhide_spaces = $(subst $(hidden_space),$(space),$(1))

# param_group NAME, ITEMS: build/params/NAME.txt, one "name=value" line an
# item. An item is a parameter's name (VAR, declared with param): the line is
# VAR=<its value>, spaces and all (DATASETS="a b", a DATA folder with a
# space); or a value derived by Make, given as one word key=value.
param_group = $(eval param_items.$(1) := $$(2))$(call write_record,build/params/$(1).txt,$(or \
  $(call param_lines,$(1)),-))$(eval PARAM_GROUPS += $(1))
PARAM_GROUPS :=
# param_lines NAME: the lines of group NAME, as words (spaces hidden)
param_lines = $(foreach i,$(param_items.$(1)),$(if $(findstring =,$(i)),$(i),$(i)=$(call hide_spaces,$($(i)))))

# set_record NAME, DATASETS: build/sets/NAME.txt lists the datasets (in
# order) a merged output is made from; the path is the expansion.
set_record = $(call write_record,build/sets/$(1).txt,$(or $(strip $(2)),-))build/sets/$(1).txt

# shell_word TEXT: TEXT as one word of a POSIX shell: as it is when it has
# only letters, digits and _-./,:+=@%, else in single quotes.
shell_word = $(if $(call shell_plain,$(1)),$(1),'$(subst ','\'',$(1))')
shell_plain = $(and $(1),$(if $(call drop_chars,$(call hide_spaces,$(1)),$(shell_safe_chars)),,plain))
shell_safe_chars := a b c d e f g h i j k l m n o p q r s t u v w x y z \
  A B C D E F G H I J K L M N O P Q R S T U V W X Y Z 0 1 2 3 4 5 6 7 8 9 _ - . / , : + = @ %
drop_chars = $(if $(2),$(call drop_chars,$(subst $(firstword $(2)),,$(1)),$(wordlist 2,$(words $(2)),$(2))),$(1))

# rebuild_args: the parameters this run gives another value than their
# default, as shell words VAR=value sorted by name. `make report` or
# `make figures/<study>/<NN>` with them rebuilds what this run made: the
# report and every figure README print them (REBUILD_VALUES, report.mk).
rebuild_args = $(strip $(foreach v,$(sort $(PARAMS)),$(if $(call same_text,$(strip $($(v))),$(strip \
  $(param_default.$(v)))),,$(v)=$(call shell_word,$(strip $($(v)))))))
REBUILD_VALUES := build/params/rebuild.tsv

$(call param_group,synth,SEED SCALE SYNTH_MODE)
# the data the run reads (the records of build/sets/ and build/<ds>/source.txt
# key the outputs on them; this group puts them in the parameter tables)
$(call param_group,run,DATA DATASETS)
