# The combined QK PCA study's figures (figures/qk-pca/NN_name, rows of
# workflow/figures.tsv) need the tables named here and the collage points of
# figure 06; the values and tables of the report's PCA section are made here.
#
#   make figures/qk-pca/05      one figure and only what it depends on
#   make pca-figures            all of them

PCA_CROSS_STUDY    := attention_plasticity
PCA_TRAINING_STUDY := smollm3_training_progress
PCA_X := results/$(PCA_CROSS_STUDY)
PCA_T := results/$(PCA_TRAINING_STUDY)

# Figure 06: four heads of one dataset (the figure's model), drawn as the
# thesis drew them (random.Random(SEED).sample of its sorted query heads);
# at most POINTS vectors per kind and head are plotted.
PCA_COLLAGE_DATASET ?= llama3.2-3b
PCA_COLLAGE_SEED    ?= 42
PCA_COLLAGE_PANELS  ?= 4
PCA_COLLAGE_POINTS  ?= 2000
$(call param_group,pca-collage,dataset=$(PCA_COLLAGE_DATASET) seed=$(PCA_COLLAGE_SEED) \
  panels=$(PCA_COLLAGE_PANELS) points=$(PCA_COLLAGE_POINTS))
# the per-head table with the categories of the collage's heads
PCA_COLLAGE_HEADS := results/$(call study_of,$(PCA_COLLAGE_DATASET))/qk_heads.csv

# The taxonomy thresholds of the run, as a table for the figures that draw them.
build/pca/thresholds.tsv: build/params/pca.txt
	@mkdir -p $(@D)
	$(quiet)printf 'name\tvalue\nhigh\t%s\nlow\t%s\n' $(PCA_TAX_HIGH) $(PCA_TAX_LOW) > $@.tmp
	$(quiet)mv -f $@.tmp $@

PCA_REGISTRY := $(REGISTRY)

# ---- the collage points of figure 06 (when the run has its dataset) ----------------
PCA_COLLAGE_OUT :=
ifneq ($(filter $(PCA_COLLAGE_DATASET),$(RUN_DATASETS)),)
PCA_COLLAGE_OUT := build/pca/collage_points.tsv build/pca/collage_panels.tsv
$(PCA_COLLAGE_OUT) &: build/$(PCA_COLLAGE_DATASET)/store.qks $(call prog,qk-pca-collage) \
    build/params/pca-collage.txt build/params/pca-fit.txt build/params/blas.txt
	@mkdir -p build/pca
	$(call step,COLLAGE,$(PCA_COLLAGE_DATASET)) bin/qk-pca-collage --seed $(PCA_COLLAGE_SEED) --panels $(PCA_COLLAGE_PANELS) \
	  --max-points $(PCA_COLLAGE_POINTS) \
	  $(if $(filter-out 0,$(PCA_MAX_ROWS)),--max-rows $(PCA_MAX_ROWS)) \
	  --points-output build/pca/collage_points.tsv \
	  --panels-output build/pca/collage_panels.tsv $<
endif

# ---- the report section's numbers -------------------------------------------------
# Every number of templates/sections/pca.html.in comes from this numbers file
# (qk-summary); a study missing from the run leaves its values missing and its
# tables empty, and the section says so.
PCA_SUMMARY := build/report/pca.numbers
PCA_HAS_X := $(filter $(PCA_CROSS_STUDY),$(PCA_STUDIES))
PCA_HAS_T := $(filter $(PCA_TRAINING_STUDY),$(PCA_STUDIES))
PCA_SUMMARY_IN := $(PCA_REGISTRY) $(if $(PCA_HAS_X),$(PCA_X)/qk.csv $(PCA_X)/qk_heads.csv) \
  $(if $(PCA_HAS_T),$(PCA_T)/qk_heads.csv)

$(PCA_SUMMARY): $(PCA_SUMMARY_IN) $(call prog,qk-summary) build/params/pca.txt $(RUN_SET)
	@mkdir -p $(@D)
	$(call step,SUMMARY,pca) bin/qk-summary --section pca --input registry=$(PCA_REGISTRY) \
	  --param high=$(PCA_TAX_HIGH) --param low=$(PCA_TAX_LOW) \
	  $(if $(PCA_HAS_X),--input components=$(PCA_X)/qk.csv --input heads=$(PCA_X)/qk_heads.csv) \
	  $(if $(PCA_HAS_T),--input training-heads=$(PCA_T)/qk_heads.csv) --output $@

REPORT_FLAGS += --values $(PCA_SUMMARY)
REPORT_INPUTS += $(PCA_SUMMARY)
REPORT_LATEX_TABLES += pca.components pca.families pca.models pca.training
