# qkreport: `make report` builds the suite, writes the synthetic dataset (or
# reads DATA=<dir>) and renders report/index.html; `make check` runs the tests.
.DELETE_ON_ERROR:
.SUFFIXES:
SHELL := /bin/bash
# the recipes give options after operands (qk-load DIR -o STORE), which
# getopt reads only without POSIXLY_CORRECT
unexport POSIXLY_CORRECT
.DEFAULT_GOAL := report

# The tools of the recipes (mktemp, sort, pdflatex) write temporary files
# under TMPDIR: one that is set but where no file can be made stops make
# here with one line, rather than failing steps halfway.
ifneq ($(strip $(TMPDIR)),)
ifneq ($(shell t=$$(TMPDIR='$(TMPDIR)' mktemp 2>/dev/null) && rm -f "$$t" && echo ok),ok)
$(error TMPDIR=$(TMPDIR) is not a folder where files can be made: set TMPDIR to one, or unset it to use /tmp)
endif
endif

# A make that builds nothing: a dry run (-n), a question (-q), or one
# whose goals are all help or clean goals. It writes no record
# (config.mk, load.mk) and publishes nothing.
QK_NO_BUILD_GOALS := help clean distclean
QK_BUILDS_NOTHING := $(or $(findstring n,$(firstword -$(MAKEFLAGS))),$(findstring \
  q,$(firstword -$(MAKEFLAGS))),$(if $(MAKECMDGOALS),$(if $(filter-out \
  $(QK_NO_BUILD_GOALS),$(MAKECMDGOALS)),,yes)),$(if $(QK_VALIDATE),yes))

# Install missing Debian packages before anything asks pkg-config. (Not
# again while the package database is as it was when the last check passed:
# build/.deps-ok holds its time and the check's own checksum.)
ifeq ($(filter clean distclean help,$(MAKECMDGOALS)),)
QK_DEPS_KEY := $(shell stat -c %Y /var/lib/dpkg/status 2>/dev/null) $(shell cksum < workflow/deps.sh)
ifneq ($(file <build/.deps-ok),$(QK_DEPS_KEY))
QK_DEPS := $(shell sh workflow/deps.sh >&2 && echo ok)
ifneq ($(QK_DEPS),ok)
$(error qkreport: required Debian packages are missing (see the lines above))
endif
$(shell mkdir -p build)$(file >build/.deps-ok,$(QK_DEPS_KEY))
endif
endif

# One make at a time in a tree: a second one stops at once with one line
# (workflow/lock.sh). A make started by a recipe of this one (same tree)
# inherits the lock.
ifneq ($(QK_LOCKED),$(CURDIR))
QK_LOCK := $(shell workflow/lock.sh build $$PPID)
ifneq ($(QK_LOCK),ok)
$(error $(QK_LOCK))
endif
# the make whose steps these are: a step stops when it is gone (workflow/qk-step)
export QK_MAKE_PID := $(shell echo $$PPID)
endif
export QK_LOCKED := $(CURDIR)

ifneq ($(filter why,$(MAKECMDGOALS)),)
# ---- make why [GOAL] -----------------------------------------------------------------
# Why each step of GOAL would run now: a make of GOAL that runs nothing
# and writes no record is asked, and what it says is explained
# (workflow/why.mk). This make reads no rule, so it changes nothing.
include workflow/why.mk
else ifeq ($(if $(QK_BUILDS_NOTHING),inner,$(filter $(CURDIR),$(QK_INNER))),)
# ---- the run -----------------------------------------------------------------------
# A make that builds runs its goals in a second make (the inner one, which
# reads the rules below) and then says in its last line what became of the
# published folders: a failed run leaves them as the last good run did.
# (workflow/run.sh) First, when the command line or the environment gives a
# parameter or setting (or DATA), a make that checks them all and runs
# nothing else (workflow/validate.mk). The names it checks are those of the
# last run (build/sets/checked-vars.txt; every run checks when there is none).
# (Stripped: with nothing typed the foreach leaves blanks, which $(if) takes
# for true.)
export QK_INNER := $(CURDIR)
QK_GOALS := $(or $(MAKECMDGOALS),report)
QK_CHECKED_VARS := $(file <build/sets/checked-vars.txt)
QK_TYPED := $(strip $(or $(MAKEOVERRIDES),$(if $(QK_CHECKED_VARS),,none known),$(foreach \
  v,$(QK_CHECKED_VARS) DATA DATASETS,$(if $(filter environment%,$(origin $(v))),$(v)))))
.PHONY: $(QK_GOALS)
$(wordlist 2,$(words $(QK_GOALS)),$(QK_GOALS)): $(firstword $(QK_GOALS)) ; @:
$(firstword $(QK_GOALS)):
	+@workflow/run.sh "$(MAKE)" $(if $(QK_TYPED),yes,no) $(QK_GOALS)
else
# ---- the rules ---------------------------------------------------------------------

# Rules may name prerequisites computed from the target ($$*).
.SECONDEXPANSION:

include workflow/config.mk
include workflow/publish.mk
include workflow/build.mk
include workflow/blas.mk
include workflow/datasets.mk
include workflow/synth.mk
include workflow/load.mk
# Lists each stage's file (workflow/<stage>.mk: its steps, figures and
# report section) adds to, so that a new stage edits no shared list:
# STUDY_TABLES, the results/<study>/ tables (the report depends on every
# one); RESULT_TABLES, further results/ tables; FIGURE_MADE, what a figure
# may need that the stage makes (workflow/figures.mk); REPORT_PAGES, further
# report/ pages.
STUDY_TABLES :=
RESULT_TABLES :=
REPORT_PAGES :=
FIGURE_MADE :=
include workflow/pca.mk
include workflow/rotation.mk
include workflow/plasticity.mk
include workflow/figures.mk
include workflow/report.mk
include workflow/heads.mk
include workflow/latex.mk
include workflow/archive.mk
include workflow/diff.mk
include workflow/check.mk
include workflow/slurm.mk
include workflow/fuzz.mk
include workflow/browser.mk
include workflow/bench.mk
include workflow/validate.mk
$(call write_record,build/sets/checked-vars.txt,$(CHECKED_VARS))

# The parameter groups in use, as a record: the report's parameter table
# depends on it (report.mk).
$(call write_record,build/sets/param-groups.txt,$(sort $(PARAM_GROUPS)))

# `make report` (and `make archive`) publish exactly what this run makes:
# results/, figures/ and report/ then hold its outputs and nothing else
# (build/ keeps the intermediates of earlier runs on other datasets, so
# they come back quickly). The thesis example is kept when this run makes
# it or brings it up to date (THESIS_EXAMPLE_KEPT, latex.mk).
RESULT_FILES = $(STUDY_TABLES) $(RESULT_TABLES) $(REPORT_OUTPUTS) $(REPORT_PAGES) \
  $(ALL_FIGURES) $(if $(filter archive thesis-example check-latex,$(MAKECMDGOALS)),$(THESIS_EXAMPLE)) \
  $(THESIS_EXAMPLE_KEPT)
$(call publish_goal,report,$(sort $(call shown,$(filter-out $(ALL_FIGURES),$(RESULT_FILES)) \
  $(dir $(ALL_FIGURES)))),$(RESULT_FILES),all)

.PHONY: all deps clean distclean help
all: programs
deps: ;

clean:
	rm -rf $(filter-out build/.lock build/.lock.pid,$(wildcard build/* build/.[!.]*)) bin \
	  report/index.html report/numbers.tex report/numbers.md report/numbers.html report/run.tsv report/tables report/thesis-example.pdf dist

distclean: clean
	rm -rf data/synth

# the figures of a study in the registry, for the help: their NN, their
# range "01..12" and their count
help_figure_ids = $(patsubst $(1)/%,%,$(filter $(1)/%,$(shell awk -f workflow/figures.awk -v emit=ids \
  workflow/figures.rec)))
help_figure_range = $(firstword $(call help_figure_ids,$(1)))..$(lastword $(call help_figure_ids,$(1)))
help_figure_count = $(words $(call help_figure_ids,$(1)))

help:
	@echo "make report          build everything and write report/index.html (default)"
	@echo "make all             build the programs only"
	@echo "make check           build and run the unit and end-to-end tests"
	@echo "make check-determinism  two clean runs give byte-identical results, figures, report and archive"
	@echo "make bench           bench-load, bench-pca, bench-rotate, bench-plasticity, bench-stages, bench-noop"
	@echo "make bench-e2e       every stage at thesis scale beside its floor, and the thesis-set time (ISA=avx2 as above)"
	@echo "make bench-load      qk-load throughput on a thesis-scale synthetic model"
	@echo "make synth | load    only write the synthetic data | the stores"
	@echo "make pca             combined QK PCA: build/<ds>/pca*.tsv, taxonomy.tsv, results/<study>/qk*.csv"
	@echo "make bench-pca       per-head PCA time against scikit-learn (one core)"
	@echo "make figures/qk-pca/NN  one PCA figure (NN = $(call help_figure_range,qk-pca)); make pca-figures: all $(call help_figure_count,qk-pca)"
	@echo "make figures/qk-rotation/NN  one rotation figure (NN = $(call help_figure_range,qk-rotation)); make rotation-figures: all $(call help_figure_count,qk-rotation)"
	@echo "make plasticity-figures  the $(call help_figure_count,attention-plasticity) plasticity figures and results/smollm3_training_progress/joint_rotation_plasticity.csv"
	@echo "make figures         every figure of workflow/figures.rec (a canvas saying what is missing where the run lacks the data)"
	@echo "make heads           results/heads.csv (every head, the three analyses joined), results/README.md, report/heads.html"
	@echo "make heads/DATASET/lLLhHH  one head's PCA scatter, {a, b} plane, complement planes and plasticity profile"
	@echo "make rotation        planar rotation model: build/<ds>/rotation.tsv, rotated.tsv, complement_*.tsv, results/<study>/{rotated,complement_pairs,model_summary}.csv"
	@echo "make bench-rotate    per-head qk-rotate + qk-complement time against numpy (one core)"
	@echo "make plasticity      attention plasticity: build/<ds>/plasticity_*.tsv, results/<study>/head_metrics.csv ..."
	@echo "make bench-plasticity  qk-plasticity per head beside its floor and numpy, and per model (ISA=avx2: its AVX2 kernels)"
	@echo "make bench-stages    qk-pca, qk-rotate, qk-complement beside their floors (bin/qk-bench-stages)"
	@echo "make archive         dist/qkreport-results-<commit>[-<params>].tar.gz of results/, figures/, report/ (with the thesis example)"
	@echo "make thesis-example  report/thesis-example.pdf: templates/thesis-example.tex with the report's numbers, tables and figure PDFs (pdflatex)"
	@echo "make check-latex     the thesis example and the figure PDFs checked (installs pdflatex if missing)"
	@echo "make check-browser   the report in headless Chromium: loads, figure layout as shown (installs chromium if missing)"
	@echo "make check-slurm     qk-srun and CLUSTER=slurm on a one-node Slurm cluster (root; installs slurm)"
	@echo "make fuzz            every fuzz target FUZZ_SECONDS (20) each, executions printed; make fuzz-long: 3600 s each"
	@echo "make clean           remove build outputs (keeps data/synth)"
	@echo "variables: DATA=<dir of downloads>  DATASETS=\"id id ...\"  SCALE=demo|thesis  SEED=<n>"
	@echo "           V=1 (every command)  CLUSTER=slurm SLURM_FLAGS=\"...\"  BLAS_CORE=<kernel>|native"
	@echo "           MIN_FREE=<MB left free on the disk by qk-synth and qk-load, 0: no check>"
endif
