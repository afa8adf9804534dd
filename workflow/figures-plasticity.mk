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
    build/params/plasticity-figures.txt
	@mkdir -p $(@D)
	$(call step,SUMMARY,plasticity) bin/qk-summary --section plasticity --input registry=$(RUN_REGISTRY) \
	  --input benchmarks=$(PLAST_BENCHMARKS) \
	  $(if $(PLAST_X_DATASETS),--input report=$(PLAST_X)/model_report.csv \
	    --input pair2d=$(PLAST_X)/model_pair2d.csv --input weights=$(PLAST_X)/head_component_weights.csv \
	    --input profile=$(PLAST_X)/head_bucket_plasticity.csv) \
	  $(if $(PLAST_T_DATASETS),--input joint=$(PLAST_JOINT)) $(addprefix --input ,$(PLAST_FIG_TABLES)) \
	  --param heatmaps="$(PLAST_HEATMAPS)" --param profiles="$(PLAST_PROFILES)" \
	  --param weights="$(PLAST_WEIGHTS)" --output $@

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
