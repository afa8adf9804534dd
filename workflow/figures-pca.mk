# The combined QK PCA study's figures (figures/qk-pca/NN_name, records of
# workflow/figures.rec) need the tables named here and the collage points of
# figure 06 (made in workflow/pca.mk); the values and tables of the report's
# PCA section are made here.
#
#   make figures/qk-pca/05      one figure and only what it depends on
#   make pca-figures            all of them

PCA_CROSS_STUDY    := attention_plasticity
PCA_TRAINING_STUDY := smollm3_training_progress
PCA_X := $(STAGE)/results/$(PCA_CROSS_STUDY)
PCA_T := $(STAGE)/results/$(PCA_TRAINING_STUDY)

# The taxonomy thresholds of the run, as a table for the figures that draw them.
build/pca/thresholds.tsv: build/params/pca.txt
	@mkdir -p $(@D)
	$(quiet)printf 'name\tvalue\nhigh\t%s\nlow\t%s\n' $(PCA_TAX_HIGH) $(PCA_TAX_LOW) > $@.tmp
	$(quiet)mv -f $@.tmp $@

PCA_REGISTRY := $(RUN_REGISTRY)

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
