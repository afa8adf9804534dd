# The attention plasticity study's figures (figures/attention-plasticity/NN_name,
# rows of workflow/figures.tsv) need the tables named here and the joint
# SmolLM3 table (results/smollm3_training_progress/joint_rotation_plasticity.csv,
# written by qk-joint); the values and tables of the report's plasticity
# section are made here.
#
#   make figures/attention-plasticity/05   one figure and only what it depends on
#   make plasticity-figures                all of them

PLAST_X_STUDY := attention_plasticity
PLAST_T_STUDY := smollm3_training_progress
PLAST_X := results/$(PLAST_X_STUDY)
PLAST_T := results/$(PLAST_T_STUDY)
PLAST_JOINT := $(PLAST_T)/joint_rotation_plasticity.csv
PLAST_BENCHMARKS := workflow/benchmarks.tsv

PLAST_X_DATASETS := $(if $(filter $(PLAST_X_STUDY),$(RUN_STUDIES)),$(call study_datasets,$(PLAST_X_STUDY)))
PLAST_T_DATASETS := $(if $(filter $(PLAST_T_STUDY),$(RUN_STUDIES)),$(call study_datasets,$(PLAST_T_STUDY)))
# models with a published LongBench-Pro overall score (figure 10)
PLAST_LBP_MODELS := $(shell awk -F'\t' '!/^\#/ && $$2 == "longbench-pro" && $$3 == "overall" \
  {print $$1}' $(PLAST_BENCHMARKS))

# The model each of figures 01-08 shows (a parameter; the figure folders
# keep the names of the defaults), and the results/ folder of its study.
PLAST_FIG01_MODEL ?= ministral3-14b
PLAST_FIG02_MODEL ?= qwen3-14b
PLAST_FIG03_MODEL ?= llama3.2-3b
PLAST_FIG04_MODEL ?= llama3.2-11b
PLAST_FIG05_MODEL ?= ministral3-3b
PLAST_FIG06_MODEL ?= qwen3-4b
PLAST_FIG07_MODEL ?= llama3.2-3b
PLAST_FIG08_MODEL ?= qwen3-14b
plast_dir = results/$(call study_of,$(1))

# The figures this run draws with data (the others are canvases saying
# what they need), for the report section: 01-08 when the run analyses
# their model, 09 with a SmolLM3-3B checkpoint, 10 with three models that
# have a published LongBench-Pro score (a correlation needs three).
plast_in_run = $(filter $(1),$(RUN_DATASETS))
PLAST_FIGURE_IDS := $(strip \
  $(foreach n,01 02 03 04 05 06 07 08,$(if $(call plast_in_run,$(PLAST_FIG$(n)_MODEL)),$(n))) \
  $(if $(PLAST_T_DATASETS),09) $(if $(word 3,$(filter $(PLAST_LBP_MODELS),$(PLAST_X_DATASETS))),10))

# ---- the joint SmolLM3 table (rotation summary x plasticity report) ----------------
PLAST_JOINT_TABLE := $(if $(strip $(PLAST_T_DATASETS)),$(PLAST_JOINT))
ifneq ($(strip $(PLAST_T_DATASETS)),)
$(PLAST_JOINT): $(PLAST_T)/model_summary.csv $(PLAST_T)/smollm3_model_report.csv $(REGISTRY) \
    $(call prog,qk-joint)
	$(call step,JOINT,$@) bin/qk-joint --summary $(PLAST_T)/model_summary.csv \
	  --plasticity $(PLAST_T)/smollm3_model_report.csv --registry $(REGISTRY) \
	  --prefix $(call study_model_prefix,$(PLAST_T_STUDY)) --output $@
endif

# ---- the report section's numbers ---------------------------------------------------
# Every number of templates/sections/plasticity.html.in comes from these files;
# a study missing from the run gives "n/a" values, header-only tables, and
# HTML fragments that leave its part (and every figure not drawn) out.
$(call param_group,plasticity-figures,$(addprefix figure=,$(PLAST_FIGURE_IDS)))

PLAST_SUMMARY_TABLES := models families lengths smollm3
PLAST_BLOCKS_DIR := build/report/plasticity
# the HTML fragments that show or hide each part of the section
PLAST_FIG_NUMBERS := 01 02 03 04 05 06 07 08 09 10
PLAST_BLOCKS := cross smollm3 smollm3-compare $(addprefix fig,$(PLAST_FIG_NUMBERS)) \
  $(foreach n,$(PLAST_FIG_NUMBERS),fig$(n)-numbers)
PLAST_SUMMARY_OUT := build/report/plasticity-values.tsv \
  $(foreach t,$(PLAST_SUMMARY_TABLES),build/report/plasticity_$(t).tsv) \
  $(foreach b,$(PLAST_BLOCKS),$(PLAST_BLOCKS_DIR)/$(b)-begin.html $(PLAST_BLOCKS_DIR)/$(b)-end.html)
PLAST_SUMMARY_IN := $(REGISTRY) $(PLAST_BENCHMARKS) \
  $(if $(PLAST_X_DATASETS),$(PLAST_X)/model_report.csv $(PLAST_X)/model_pair2d.csv \
    $(PLAST_X)/head_component_weights.csv) \
  $(if $(PLAST_T_DATASETS),$(PLAST_JOINT))

$(PLAST_SUMMARY_OUT) &: $(PLAST_SUMMARY_IN) $(call prog,qk-plasticity-summary) $(RUN_SET) \
    build/params/plasticity-figures.txt
	@mkdir -p build/report
	$(call step,SUMMARY,plasticity) bin/qk-plasticity-summary --registry $(REGISTRY) --benchmarks $(PLAST_BENCHMARKS) \
	  $(if $(PLAST_X_DATASETS),--report $(PLAST_X)/model_report.csv \
	    --pair2d $(PLAST_X)/model_pair2d.csv --weights $(PLAST_X)/head_component_weights.csv) \
	  $(if $(PLAST_T_DATASETS),--joint $(PLAST_JOINT)) \
	  --figures "$(strip $(PLAST_FIGURE_IDS))" \
	  --values-output build/report/plasticity-values.tsv \
	  $(foreach t,$(PLAST_SUMMARY_TABLES),--$(t)-output build/report/plasticity_$(t).tsv) \
	  --blocks-dir $(PLAST_BLOCKS_DIR)

REPORT_FLAGS += --values build/report/plasticity-values.tsv \
  $(foreach t,$(PLAST_SUMMARY_TABLES),--table plasticity_$(t)=build/report/plasticity_$(t).tsv)
REPORT_INPUTS += $(PLAST_SUMMARY_OUT)
