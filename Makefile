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

# Install missing Debian packages before anything asks pkg-config.
ifeq ($(filter clean distclean help,$(MAKECMDGOALS)),)
QK_DEPS := $(shell sh workflow/deps.sh >&2 && echo ok)
ifneq ($(QK_DEPS),ok)
$(error qkreport: required Debian packages are missing (see the lines above))
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

# A make that builds nothing: a dry run (-n), a question (-q), or one
# whose goals are all help or clean goals. It writes no record
# (config.mk, load.mk) and does not prune results/.
QK_NO_BUILD_GOALS := help clean distclean
QK_BUILDS_NOTHING := $(or $(findstring n,$(firstword -$(MAKEFLAGS))),$(findstring \
  q,$(firstword -$(MAKEFLAGS))),$(if $(MAKECMDGOALS),$(if $(filter-out \
  $(QK_NO_BUILD_GOALS),$(MAKECMDGOALS)),,yes)))

# Rules may name prerequisites computed from the target ($$*).
.SECONDEXPANSION:

include workflow/config.mk
include workflow/build.mk
include workflow/blas.mk
include workflow/datasets.mk
include workflow/synth.mk
include workflow/load.mk
include workflow/pca.mk
include workflow/rotation.mk
include workflow/plasticity.mk
include workflow/figures-pca.mk
include workflow/figures-rotation.mk
include workflow/figures-plasticity.mk
include workflow/figures.mk
include workflow/report.mk
include workflow/latex.mk
include workflow/archive.mk
include workflow/check.mk
include workflow/slurm.mk
include workflow/fuzz.mk
include workflow/browser.mk
include workflow/bench.mk

# The parameter groups in use, as a record: the report's parameter table
# depends on it (report.mk).
$(call write_record,build/sets/param-groups.txt,$(sort $(PARAM_GROUPS)))

# `make report` and `make archive` leave in results/, figures/ and report/
# exactly what this run makes: outputs of earlier runs on other datasets are
# removed (build/ keeps their intermediates, so they come back quickly).
# (the thesis example is kept when this run makes it or brings it up to date:
# THESIS_EXAMPLE_KEPT, latex.mk)
# They are removed only once this run's outputs are all made (a run that
# fails leaves the previous run's outputs in place), before the archive
# packs the folders; build/sets/pruned.txt marks the list last applied.
RESULT_FILES = $(PCA_TABLES) $(ROT_TABLES) $(PLAST_TABLES) $(PLAST_JOINT_TABLE) $(REPORT_OUTPUTS) \
  $(dir $(ALL_FIGURES)) $(if $(filter archive thesis-example check-latex $(THESIS_EXAMPLE),$(MAKECMDGOALS)),$(THESIS_EXAMPLE)) \
  $(THESIS_EXAMPLE_KEPT)
ifneq ($(filter report archive,$(or $(MAKECMDGOALS),report)),)
$(call write_record,build/sets/result-files.txt,$(sort $(RESULT_FILES)))
endif
build/sets/pruned.txt: build/sets/result-files.txt $$(filter-out %/,$$(RESULT_FILES)) $$(ALL_FIGURES)
	$(quiet)workflow/prune.sh $< > /dev/null && cp $< $@

.PHONY: all deps clean distclean help
all: programs
deps: ;

clean:
	rm -rf $(filter-out build/.lock build/.lock.pid,$(wildcard build/* build/.[!.]*)) bin \
	  report/index.html report/numbers.tex report/numbers.md report/tables report/thesis-example.pdf dist

distclean: clean
	rm -rf data/synth

help:
	@echo "make report          build everything and write report/index.html (default)"
	@echo "make all             build the programs only"
	@echo "make check           build and run the unit and end-to-end tests"
	@echo "make check-determinism  two clean runs give byte-identical results, figures, report and archive"
	@echo "make bench           bench-load, bench-pca, bench-rotate, bench-plasticity, bench-stages"
	@echo "make bench-e2e       every stage at thesis scale beside its floor, and the thesis-set time"
	@echo "make bench-load      qk-load throughput on a thesis-scale synthetic model"
	@echo "make synth | load    only write the synthetic data | the stores"
	@echo "make pca             combined QK PCA: build/<ds>/pca*.tsv, taxonomy.tsv, results/<study>/qk*.csv"
	@echo "make bench-pca       per-head PCA time against scikit-learn (one core)"
	@echo "make figures/qk-pca/NN  one PCA figure (NN = 01..12); make pca-figures: all twelve"
	@echo "make figures/qk-rotation/NN  one rotation figure (NN = 01..10); make rotation-figures: all ten"
	@echo "make plasticity-figures  the ten plasticity figures and results/smollm3_training_progress/joint_rotation_plasticity.csv"
	@echo "make figures         every figure of workflow/figures.tsv (a canvas saying what is missing where the run lacks the data)"
	@echo "make rotation        planar rotation model: build/<ds>/rotation.tsv, rotated.tsv, complement_*.tsv, results/<study>/{rotated,complement_pairs,model_summary}.csv"
	@echo "make bench-rotate    per-head qk-rotate + qk-complement time against numpy (one core)"
	@echo "make plasticity      attention plasticity: build/<ds>/plasticity_*.tsv, results/<study>/head_metrics.csv ..."
	@echo "make bench-plasticity  qk-plasticity per head beside its floor and numpy, and per model"
	@echo "make bench-stages    qk-pca, qk-rotate, qk-complement beside their floors (bin/qk-bench-stages)"
	@echo "make archive         dist/qkreport-results-<commit>[-<params>].tar.gz of results/, figures/, report/ (with the thesis example)"
	@echo "make thesis-example  report/thesis-example.pdf: templates/thesis-example.tex with the report's numbers, tables and figure PDFs (pdflatex)"
	@echo "make check-latex     the thesis example and the figure PDFs checked (installs pdflatex if missing)"
	@echo "make check-browser   the report in headless Chromium (installs chromium if missing)"
	@echo "make check-slurm     qk-srun and CLUSTER=slurm on a one-node Slurm cluster (root; installs slurm)"
	@echo "make fuzz            every fuzz target FUZZ_SECONDS (20) each, executions printed; make fuzz-long: 3600 s each"
	@echo "make clean           remove build outputs (keeps data/synth)"
	@echo "variables: DATA=<dir of downloads>  DATASETS=\"id id ...\"  SCALE=demo|thesis  SEED=<n>"
	@echo "           V=1 (every command)  CLUSTER=slurm SLURM_FLAGS=\"...\"  BLAS_CORE=<kernel>|native"
	@echo "           MIN_FREE=<MB left free on the disk by qk-synth and qk-load, 0: no check>"
