# Stage qk-plasticity: attention plasticity of every head (docs/plasticity.md).
# Per dataset, build/<ds>/plasticity_*.tsv from the store; per study, the
# tables results/<study>/head_metrics.csv, head_bucket_plasticity.csv,
# head_component_weights.csv, head_pair2d.csv, model_report.csv
# (smollm3_model_report.csv for the SmolLM3 study), model_bucket_plasticity.csv
# and model_pair2d.csv, merged by qk-merge with a model column.

$(call param,PLAST_COV,,qk-plasticity --cov)
$(call param,PLAST_BIN_FACTOR,,qk-plasticity --bin-factor)
$(call param,PLAST_MIN_PAIRS,,qk-plasticity --min-pairs)
$(call param,PLAST_PAIR2D_MIN,,qk-plasticity --pair2d-min-count)
$(call param,PLAST_PAIRS,,qk-plasticity --pairs)
$(call param,PLAST_PAIRS_PER_BIN,,qk-plasticity --pairs-per-bin)
$(call param,PLAST_SEED,,qk-plasticity --seed)
$(call param,PLAST_MAX_TOKENS,,qk-plasticity --max-tokens)
$(call param,PLAST_NORMALITY_DIMS,,qk-plasticity --normality-dims)
$(call param,PLAST_P_ALPHA,,qk-plasticity --p-alpha)
PLAST_THREADS        ?= 2
$(call checked_by,PLAST_THREADS,qk-plasticity --threads)

# The thread count never changes an output, so it is no parameter.
$(call param_group,plasticity,PLAST_COV PLAST_BIN_FACTOR PLAST_MIN_PAIRS PLAST_PAIR2D_MIN \
  PLAST_PAIRS PLAST_PAIRS_PER_BIN PLAST_SEED PLAST_MAX_TOKENS PLAST_NORMALITY_DIMS PLAST_P_ALPHA)

PLAST_FLAGS = --quiet --threads $(PLAST_THREADS) --cov $(PLAST_COV) \
  --bin-factor $(PLAST_BIN_FACTOR) --min-pairs $(PLAST_MIN_PAIRS) \
  --pair2d-min-count $(PLAST_PAIR2D_MIN) --pairs $(PLAST_PAIRS) \
  --pairs-per-bin $(PLAST_PAIRS_PER_BIN) --seed $(PLAST_SEED) \
  --max-tokens $(PLAST_MAX_TOKENS) --normality-dims $(PLAST_NORMALITY_DIMS) \
  --p-alpha $(PLAST_P_ALPHA)

# One run of qk-plasticity writes all of them.
PLAST_TSVS := heads profile pair2d weights model model_profile model_pair2d
plast_outputs = $(foreach t,$(PLAST_TSVS),build/$(1)/plasticity_$(t).tsv)

$(call plast_outputs,%): build/%/store.qks $(call prog,qk-plasticity) build/params/plasticity.txt \
    build/params/blas.txt
	$(call job,PLAST,$*,$(PLAST_THREADS),$<,$(call plast_outputs,$*)) bin/qk-plasticity $(PLAST_FLAGS) --out-dir build/$* $<

plast_model_report = $(if $(filter smollm3_training_progress,$(1)),smollm3_model_report.csv,model_report.csv)

PLAST_STUDIES := $(RUN_STUDIES)

# plast_study_tables STUDY, DATASETS, MODEL PREFIX
plast_study_tables = \
  $(call merge,$(1),head_metrics.csv,$(2),plasticity_heads.tsv,$(3)) \
  $(call merge,$(1),head_bucket_plasticity.csv,$(2),plasticity_profile.tsv,$(3)) \
  $(call merge,$(1),head_component_weights.csv,$(2),plasticity_weights.tsv,$(3)) \
  $(call merge,$(1),head_pair2d.csv,$(2),plasticity_pair2d.tsv,$(3)) \
  $(call merge,$(1),$(call plast_model_report,$(1)),$(2),plasticity_model.tsv,$(3)) \
  $(call merge,$(1),model_bucket_plasticity.csv,$(2),plasticity_model_profile.tsv,$(3)) \
  $(call merge,$(1),model_pair2d.csv,$(2),plasticity_model_pair2d.tsv,$(3))
$(foreach s,$(PLAST_STUDIES),$(call plast_study_tables,$(s),$(call study_datasets,$(s)),$(call study_model_prefix,$(s))))

PLAST_OUTPUTS := $(foreach d,$(RUN_DATASETS),$(call plast_outputs,$(d)))
PLAST_TABLES  := $(foreach s,$(PLAST_STUDIES),$(addprefix $(STAGE)/results/$(s)/,head_metrics.csv \
  head_bucket_plasticity.csv head_component_weights.csv head_pair2d.csv \
  $(call plast_model_report,$(s)) model_bucket_plasticity.csv model_pair2d.csv))

.PHONY: bench-plasticity
$(call publish_goal,plasticity,$(call shown,$(PLAST_TABLES)),$(PLAST_OUTPUTS) $(PLAST_TABLES))

# Benchmark (prints figures, passes or fails nothing): per-head CPU time at
# thesis size beside its floor (qk-plasticity --floor: the GEMMs and PP
# evaluations alone) and against a numpy implementation of the same
# computation, and one whole model on PLAST_THREADS cores; on the
# thesis-scale synthetic model that bench.mk writes. ISA=avx2 (bench.mk)
# measures the kernels of a lower instruction set.
PLAST_BENCH_DIR := build/bench
PLAST_BENCH_DATA := $(PLAST_BENCH_DIR)/data/llama3.2-3b

$(PLAST_BENCH_DIR)/store.qks: $(PLAST_BENCH_DATA)/synth-truth.tsv bin/qk-load
	bin/qk-load --quiet --dataset llama3.2-3b $(PLAST_BENCH_DATA) -o $@

bench-plasticity: bin/qk-plasticity bin/qk-report $(PLAST_BENCH_DIR)/store.qks
	@echo "== attention plasticity: qk-plasticity against numpy on llama3.2-3b at thesis scale"
	set -o pipefail; $(BENCH_ENV)/usr/bin/python3 bench/bench_plasticity.py \
	  --store $(PLAST_BENCH_DIR)/store.qks \
	  --qk-plasticity bin/qk-plasticity --heads 8 \
	  --threads $(PLAST_THREADS) --workdir $(PLAST_BENCH_DIR)/plasticity | tee $(BENCH_DIR)/bench-plasticity.txt

bench: bench-plasticity

# ---- the joint SmolLM3 table (rotation summary x plasticity report) ----------------
# One row per SmolLM3-3B checkpoint: its rotation summary beside its plasticity
# scalars (figure attention-plasticity/09 and the report's SmolLM3 part).
PLAST_T_STUDY := smollm3_training_progress
PLAST_T := $(STAGE)/results/$(PLAST_T_STUDY)
PLAST_JOINT := $(PLAST_T)/joint_rotation_plasticity.csv
PLAST_T_DATASETS := $(if $(filter $(PLAST_T_STUDY),$(RUN_STUDIES)),$(call study_datasets,$(PLAST_T_STUDY)))
PLAST_JOINT_TABLE := $(if $(strip $(PLAST_T_DATASETS)),$(PLAST_JOINT))
ifneq ($(strip $(PLAST_T_DATASETS)),)
$(PLAST_JOINT): $(PLAST_T)/model_summary.csv $(PLAST_T)/smollm3_model_report.csv $(RUN_REGISTRY) \
    $(call prog,qk-joint)
	$(call step,JOINT,$(call shown,$@)) bin/qk-joint --summary $(PLAST_T)/model_summary.csv \
	  --plasticity $(PLAST_T)/smollm3_model_report.csv --registry $(RUN_REGISTRY) \
	  --prefix $(call study_model_prefix,$(PLAST_T_STUDY)) --output $@
endif


# ==== the figures and the report section ====

# The attention plasticity study's figures (figures/attention-plasticity/NN_name,
# records of workflow/figures.rec) need the tables named here and the joint
# SmolLM3 table (PLAST_JOINT, written by qk-joint in workflow/plasticity.mk);
# the values and tables of the report's plasticity and extra-models sections
# are made here.
#
#   make figures/attention-plasticity/05   one figure and only what it depends on
#   make plasticity-figures                all of them

PLAST_X_STUDY := attention_plasticity
PLAST_X := $(STAGE)/results/$(PLAST_X_STUDY)
PLAST_BENCHMARKS := workflow/benchmarks.tsv

PLAST_E_STUDY := extra
PLAST_E := $(STAGE)/results/$(PLAST_E_STUDY)

PLAST_X_DATASETS := $(if $(filter $(PLAST_X_STUDY),$(RUN_STUDIES)),$(call study_datasets,$(PLAST_X_STUDY)))
PLAST_E_DATASETS := $(if $(filter $(PLAST_E_STUDY),$(RUN_STUDIES)),$(call study_datasets,$(PLAST_E_STUDY)))
# The model each of figures 01-08 shows (a parameter; the figure folders
# keep the names of the defaults), and the results/ folder of its study.
$(call param,PLAST_FIG01_MODEL,ministral3-14b,dataset)
$(call param,PLAST_FIG02_MODEL,qwen3-14b,dataset)
$(call param,PLAST_FIG03_MODEL,llama3.2-3b,dataset)
$(call param,PLAST_FIG04_MODEL,llama3.2-11b,dataset)
$(call param,PLAST_FIG05_MODEL,ministral3-3b,dataset)
$(call param,PLAST_FIG06_MODEL,qwen3-4b,dataset)
$(call param,PLAST_FIG07_MODEL,llama3.2-3b,dataset)
$(call param,PLAST_FIG08_MODEL,qwen3-14b,dataset)
plast_dir = $(STAGE)/results/$(call study_of,$(1))

# The same models as "NN=dataset" lists for the report section (qk-summary).
PLAST_HEATMAPS := 01=$(PLAST_FIG01_MODEL) 02=$(PLAST_FIG02_MODEL) 03=$(PLAST_FIG03_MODEL) \
  04=$(PLAST_FIG04_MODEL)
PLAST_PROFILES := 05=$(PLAST_FIG05_MODEL) 06=$(PLAST_FIG06_MODEL) 07=$(PLAST_FIG07_MODEL)
PLAST_WEIGHTS := 08=$(PLAST_FIG08_MODEL)

# The heatmaps 01-04 share one colour scale (FIG_HEATMAP_SCALE, figures.mk),
# so that the four read side by side: each reads the pair tables of the four
# models that this run makes (inputs scale-<study>=TABLE) and is told the
# models (value scale_models=A+B+C+D), which qk-plot computes the scale from;
# a model whose study the run lacks is left out, so the value changes and
# the heatmaps are redrawn when one comes or goes.
PLAST_SCALE_MODELS := $(foreach m,$(PLAST_FIG01_MODEL) $(PLAST_FIG02_MODEL) $(PLAST_FIG03_MODEL) \
  $(PLAST_FIG04_MODEL),$(if $(filter $(call study_of,$(m)),$(RUN_STUDIES)),$(m)))
PLAST_SCALE_VALUE := scale_models=$(or $(subst $(space),+,$(strip $(PLAST_SCALE_MODELS))),-)
PLAST_SCALE_INPUTS := $(foreach s,$(sort $(foreach m,$(PLAST_SCALE_MODELS),$(call study_of,$(m)))),\
  scale-$(s)=$(STAGE)/results/$(s)/model_pair2d.csv)

# ---- the report section's numbers ---------------------------------------------------
# Every number of templates/sections/plasticity.html.in comes from this numbers
# file (qk-summary); a study missing from the run leaves its values missing and
# its tables empty, and the section says so. The figure models are parameters.
$(call param_group,plasticity-figures,$(foreach n,01 02 03 04 05 06 07 08,PLAST_FIG$(n)_MODEL))

PLAST_SUMMARY := build/report/plasticity.numbers

# The tables of each single-model figure's model, from its own study (it
# need not be the cross-model one), as NAME=TABLE inputs of the summary:
# plast_fig_tables NN, MODEL, NAME, TABLE; none when the run lacks the study.
plast_fig_tables = $(if $(filter $(call study_of,$(2)),$(RUN_STUDIES)),fig$(1).report=$(call \
  plast_dir,$(2))/$(call plast_model_report,$(call study_of,$(2))) fig$(1).$(3)=$(call plast_dir,$(2))/$(4))
PLAST_FIG_TABLES := \
  $(foreach n,01 02 03 04,$(call plast_fig_tables,$(n),$(PLAST_FIG$(n)_MODEL),pair2d,model_pair2d.csv)) \
  $(foreach n,05 06 07,$(call plast_fig_tables,$(n),$(PLAST_FIG$(n)_MODEL),profile,head_bucket_plasticity.csv)) \
  $(call plast_fig_tables,08,$(PLAST_FIG08_MODEL),weights,head_component_weights.csv)

PLAST_SUMMARY_IN := $(RUN_REGISTRY) $(PLAST_BENCHMARKS) \
  $(if $(PLAST_X_DATASETS),$(PLAST_X)/model_report.csv $(PLAST_X)/model_pair2d.csv \
    $(PLAST_X)/head_component_weights.csv $(PLAST_X)/head_bucket_plasticity.csv) \
  $(if $(PLAST_T_DATASETS),$(PLAST_JOINT)) $(sort $(foreach i,$(PLAST_FIG_TABLES),$(lastword $(subst =, ,$(i)))))

$(PLAST_SUMMARY): $(PLAST_SUMMARY_IN) $(call prog,qk-summary) $(RUN_SET) \
    build/params/plasticity-figures.txt build/params/figures.txt
	@mkdir -p $(@D)
	$(call step,SUMMARY,plasticity) bin/qk-summary --section plasticity --input registry=$(RUN_REGISTRY) \
	  --input benchmarks=$(PLAST_BENCHMARKS) \
	  $(if $(PLAST_X_DATASETS),--input report=$(PLAST_X)/model_report.csv \
	    --input pair2d=$(PLAST_X)/model_pair2d.csv --input weights=$(PLAST_X)/head_component_weights.csv \
	    --input profile=$(PLAST_X)/head_bucket_plasticity.csv) \
	  $(if $(PLAST_T_DATASETS),--input joint=$(PLAST_JOINT)) $(addprefix --input ,$(PLAST_FIG_TABLES)) \
	  --param heatmaps="$(PLAST_HEATMAPS)" --param profiles="$(PLAST_PROFILES)" \
	  --param weights="$(PLAST_WEIGHTS)" --param heatmap_scale=$(FIG_HEATMAP_SCALE) --output $@

# The extra models (registry study "extra") against their published RULER
# scores: the report's extra section.
EXTRA_SUMMARY := build/report/extra.numbers
EXTRA_SUMMARY_IN := $(RUN_REGISTRY) $(PLAST_BENCHMARKS) \
  $(if $(PLAST_E_DATASETS),$(PLAST_E)/model_report.csv $(PLAST_E)/model_bucket_plasticity.csv)

$(EXTRA_SUMMARY): $(EXTRA_SUMMARY_IN) $(call prog,qk-summary) $(RUN_SET)
	@mkdir -p $(@D)
	$(call step,SUMMARY,extra) bin/qk-summary --section extra --input registry=$(RUN_REGISTRY) \
	  --input benchmarks=$(PLAST_BENCHMARKS) \
	  $(if $(PLAST_E_DATASETS),--input report=$(PLAST_E)/model_report.csv \
	    --input profile=$(PLAST_E)/model_bucket_plasticity.csv) --output $@

REPORT_FLAGS += --values $(PLAST_SUMMARY) --values $(EXTRA_SUMMARY)
REPORT_INPUTS += $(PLAST_SUMMARY) $(EXTRA_SUMMARY)
REPORT_LATEX_TABLES += plasticity.models plasticity.families plasticity.lengths plasticity.deciles \
  plasticity.quintiles plasticity.smollm3 extra.models extra.ruler extra.aplen

STUDY_TABLES += $(PLAST_TABLES)
RESULT_TABLES += $(PLAST_JOINT_TABLE)
FIGURE_MADE += $(PLAST_BENCHMARKS) $(PLAST_TABLES) $(PLAST_JOINT_TABLE)
