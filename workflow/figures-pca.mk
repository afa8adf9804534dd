# Figures of the combined QK PCA study (figures/qk-pca/NN_name)
# and the values and tables of the report's PCA section.
#
#   make figures/qk-pca/05      one figure and only what it depends on
#   make pca-figures            all of them

PCA_CROSS_STUDY    := attention_plasticity
PCA_TRAINING_STUDY := smollm3_training_progress
PCA_X := results/$(PCA_CROSS_STUDY)
PCA_T := results/$(PCA_TRAINING_STUDY)

# Figure 06: four heads of one dataset, drawn as the thesis drew them
# (random.Random(SEED).sample of its sorted query heads); at most POINTS
# vectors per kind and head are plotted.
PCA_COLLAGE_DATASET ?= llama3.2-3b
PCA_COLLAGE_SEED    ?= 42
PCA_COLLAGE_PANELS  ?= 4
PCA_COLLAGE_POINTS  ?= 2000
$(call param_group,pca-collage,dataset=$(PCA_COLLAGE_DATASET) seed=$(PCA_COLLAGE_SEED) \
  panels=$(PCA_COLLAGE_PANELS) points=$(PCA_COLLAGE_POINTS))

# The taxonomy thresholds of the run, as a table for the figures that draw them.
build/pca/thresholds.tsv: build/params/pca.txt
	@mkdir -p $(@D)
	$(quiet)printf 'name\tvalue\nhigh\t%s\nlow\t%s\n' $(PCA_TAX_HIGH) $(PCA_TAX_LOW) > $@.tmp
	$(quiet)mv -f $@.tmp $@

PCA_REGISTRY := $(REGISTRY)

PCA_FIGURE_READMES :=

# ---- cross-model figures 01-05 --------------------------------------------------
ifneq ($(filter $(PCA_CROSS_STUDY),$(PCA_STUDIES)),)
PCA_X_HEADS := heads=$(PCA_X)/qk_heads.csv registry=$(PCA_REGISTRY)
$(eval $(call figure_rule,qk-pca,01_pc_roles,qk=$(PCA_X)/qk.csv))
$(eval $(call figure_rule,qk-pca,02_rq_vs_rk_scatter,$(PCA_X_HEADS) thresholds=build/pca/thresholds.tsv))
$(eval $(call figure_rule,qk-pca,03_layer_heatmap_rq,$(PCA_X_HEADS)))
$(eval $(call figure_rule,qk-pca,04_layer_heatmap_rk,$(PCA_X_HEADS)))
$(eval $(call figure_rule,qk-pca,05_explained_variance,qk=$(PCA_X)/qk.csv))
PCA_FIGURE_READMES += $(foreach f,01_pc_roles 02_rq_vs_rk_scatter 03_layer_heatmap_rq \
  04_layer_heatmap_rk 05_explained_variance,figures/qk-pca/$(f)/README.md)

# ---- figure 06: the collage (needs the store of its dataset) ------------------------
ifneq ($(filter $(PCA_COLLAGE_DATASET),$(RUN_DATASETS)),)
build/pca/collage_points.tsv build/pca/collage_panels.tsv &: \
    build/$(PCA_COLLAGE_DATASET)/store.qks $(call prog,qk-pca-collage) build/params/pca-collage.txt \
    build/params/pca-fit.txt build/params/blas.txt
	@mkdir -p build/pca
	$(call step,COLLAGE,$(PCA_COLLAGE_DATASET)) bin/qk-pca-collage --seed $(PCA_COLLAGE_SEED) --panels $(PCA_COLLAGE_PANELS) \
	  --max-points $(PCA_COLLAGE_POINTS) \
	  $(if $(filter-out 0,$(PCA_MAX_ROWS)),--max-rows $(PCA_MAX_ROWS)) \
	  --points-output build/pca/collage_points.tsv \
	  --panels-output build/pca/collage_panels.tsv $<
$(eval $(call figure_rule,qk-pca,06_collage_example,points=build/pca/collage_points.tsv \
  panels=build/pca/collage_panels.tsv $(PCA_X_HEADS)))
PCA_FIGURE_READMES += figures/qk-pca/06_collage_example/README.md
endif
endif

# ---- SmolLM3-3B training figures 07-12 ----------------------------------------------
ifneq ($(filter $(PCA_TRAINING_STUDY),$(PCA_STUDIES)),)
PCA_T_HEADS := heads=$(PCA_T)/qk_heads.csv registry=$(PCA_REGISTRY)
$(eval $(call figure_rule,qk-pca,07_smollm_position_signal,$(PCA_T_HEADS)))
$(eval $(call figure_rule,qk-pca,08_smollm_taxonomy_evolution,$(PCA_T_HEADS) \
  thresholds=build/pca/thresholds.tsv))
$(eval $(call figure_rule,qk-pca,09_smollm_explained_variance,$(PCA_T_HEADS)))
$(eval $(call figure_rule,qk-pca,10_smollm_layer_heatmap_rq,$(PCA_T_HEADS)))
$(eval $(call figure_rule,qk-pca,11_smollm_layer_heatmap_rk,$(PCA_T_HEADS)))
$(eval $(call figure_rule,qk-pca,12_smollm_rq_rk_scatter_grid,$(PCA_T_HEADS) \
  thresholds=build/pca/thresholds.tsv))
PCA_FIGURE_READMES += $(foreach f,07_smollm_position_signal 08_smollm_taxonomy_evolution \
  09_smollm_explained_variance 10_smollm_layer_heatmap_rq 11_smollm_layer_heatmap_rk \
  12_smollm_rq_rk_scatter_grid,figures/qk-pca/$(f)/README.md)
endif

.PHONY: pca-figures
pca-figures: $(PCA_FIGURE_READMES)

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
