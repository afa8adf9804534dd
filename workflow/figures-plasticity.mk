# Figures of the attention plasticity study (figures/attention-plasticity/NN_name),
# the joint SmolLM3 table (results/smollm3_training_progress/
# joint_rotation_plasticity.csv, written by qk-joint) and the values and tables of the
# report's plasticity section.
#
#   make figures/attention-plasticity/05   one figure and only what it depends on
#   make plasticity-figures                all of them (for the datasets of the run)
#
# A figure is defined only when the run analyses the datasets it draws.

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

PLAST_FIGURE_READMES :=

# The model of each single-model figure (NN=dataset): the figure is drawn when
# the run analyses it, and the report quotes its numbers (qk-summary gets the
# same lists).
PLAST_HEATMAPS := 01=ministral3-14b 02=qwen3-14b 03=llama3.2-3b 04=llama3.2-11b
PLAST_PROFILES := 05=ministral3-3b 06=qwen3-4b 07=llama3.2-3b
PLAST_WEIGHTS := 08=qwen3-14b
plast_model = $(patsubst $(1)=%,%,$(filter $(1)=%,$(PLAST_HEATMAPS) $(PLAST_PROFILES) $(PLAST_WEIGHTS)))

# plast_figure NN_NAME, CONDITION, INPUTS: the figure's rules when CONDITION is not empty.
plast_figure = $(if $(strip $(2)),$(eval $(call figure_rule,attention-plasticity,$(1),$(3))) \
  $(eval PLAST_FIGURE_READMES += figures/attention-plasticity/$(1)/README.md))
# the figure NN's model when the run analyses it
plast_in_run = $(filter $(call plast_model,$(1)),$(PLAST_X_DATASETS))

PLAST_MAP_IN := pair2d=$(PLAST_X)/model_pair2d.csv registry=$(REGISTRY)
PLAST_PROFILE_IN := profile=$(PLAST_X)/head_bucket_plasticity.csv \
  mean=$(PLAST_X)/model_bucket_plasticity.csv registry=$(REGISTRY)

$(call plast_figure,01_bucket_heatmap_ministral3_14b,$(call plast_in_run,01),$(PLAST_MAP_IN))
$(call plast_figure,02_bucket_heatmap_qwen3_14b,$(call plast_in_run,02),$(PLAST_MAP_IN))
$(call plast_figure,03_bucket_heatmap_llama3.2_3b,$(call plast_in_run,03),$(PLAST_MAP_IN))
$(call plast_figure,04_bucket_heatmap_llama3.2_11b,$(call plast_in_run,04),$(PLAST_MAP_IN))
$(call plast_figure,05_profile_ministral3_3b,$(call plast_in_run,05),$(PLAST_PROFILE_IN))
$(call plast_figure,06_profile_qwen3_4b,$(call plast_in_run,06),$(PLAST_PROFILE_IN))
$(call plast_figure,07_profile_llama3.2_3b,$(call plast_in_run,07),$(PLAST_PROFILE_IN))
$(call plast_figure,08_component_weights_qwen3_14b,$(call plast_in_run,08), \
  weights=$(PLAST_X)/head_component_weights.csv registry=$(REGISTRY))
$(call plast_figure,09_smollm3_trajectory,$(PLAST_T_DATASETS),joint=$(PLAST_JOINT))
# a correlation needs at least three models with a score
$(call plast_figure,10_ap_drop_vs_lbp,$(word 3,$(filter $(PLAST_LBP_MODELS),$(PLAST_X_DATASETS))), \
  report=$(PLAST_X)/model_report.csv benchmarks=$(PLAST_BENCHMARKS) registry=$(REGISTRY))

# ---- the joint SmolLM3 table (rotation summary x plasticity report) ----------------
PLAST_JOINT_TABLE := $(if $(strip $(PLAST_T_DATASETS)),$(PLAST_JOINT))
ifneq ($(strip $(PLAST_T_DATASETS)),)
$(PLAST_JOINT): $(PLAST_T)/model_summary.csv $(PLAST_T)/smollm3_model_report.csv $(REGISTRY) \
    $(call prog,qk-joint)
	$(call step,JOINT,$@) bin/qk-joint --summary $(PLAST_T)/model_summary.csv \
	  --plasticity $(PLAST_T)/smollm3_model_report.csv --registry $(REGISTRY) \
	  --prefix $(call study_model_prefix,$(PLAST_T_STUDY)) --output $@
endif

.PHONY: plasticity-figures
plasticity-figures: $(PLAST_FIGURE_READMES) $(if $(PLAST_T_DATASETS),$(PLAST_JOINT))

# ---- the report section's numbers ---------------------------------------------------
# Every number of templates/sections/plasticity.html.in comes from this numbers
# file (qk-summary); a study missing from the run leaves its values missing and
# its tables empty, and the section says so. The figure models are parameters.
$(call param_group,plasticity-figures,$(addprefix figure,$(PLAST_HEATMAPS) $(PLAST_PROFILES) \
  $(PLAST_WEIGHTS)))

PLAST_SUMMARY := build/report/plasticity.numbers
PLAST_SUMMARY_IN := $(REGISTRY) $(PLAST_BENCHMARKS) \
  $(if $(PLAST_X_DATASETS),$(PLAST_X)/model_report.csv $(PLAST_X)/model_pair2d.csv \
    $(PLAST_X)/head_component_weights.csv $(PLAST_X)/head_bucket_plasticity.csv) \
  $(if $(PLAST_T_DATASETS),$(PLAST_JOINT))

$(PLAST_SUMMARY): $(PLAST_SUMMARY_IN) $(call prog,qk-summary) $(RUN_SET) \
    build/params/plasticity-figures.txt
	@mkdir -p $(@D)
	$(call step,SUMMARY,plasticity) bin/qk-summary --section plasticity --input registry=$(REGISTRY) \
	  --input benchmarks=$(PLAST_BENCHMARKS) \
	  $(if $(PLAST_X_DATASETS),--input report=$(PLAST_X)/model_report.csv \
	    --input pair2d=$(PLAST_X)/model_pair2d.csv --input weights=$(PLAST_X)/head_component_weights.csv \
	    --input profile=$(PLAST_X)/head_bucket_plasticity.csv) \
	  $(if $(PLAST_T_DATASETS),--input joint=$(PLAST_JOINT)) \
	  --param heatmaps="$(PLAST_HEATMAPS)" --param profiles="$(PLAST_PROFILES)" \
	  --param weights="$(PLAST_WEIGHTS)" --output $@

REPORT_FLAGS += --values $(PLAST_SUMMARY)
REPORT_INPUTS += $(PLAST_SUMMARY)
REPORT_LATEX_TABLES += plasticity.models plasticity.families plasticity.lengths plasticity.deciles \
  plasticity.quintiles plasticity.smollm3
