# Figures of the planar rotation study (figures/qk-rotation/NN_name) and the
# values and tables of the report's rotation section.
#
#   make figures/qk-rotation/09   one figure and only what it depends on
#   make rotation-figures         all of them (for the datasets of the run)
#
# A figure is defined only when the run makes its input tables (ROT_TABLES,
# workflow/rotation.mk): the cross-model figures need the study "rotation",
# 09 and 10 the SmolLM3-3B checkpoints, 01 and 08 the dataset they draw.

ROT_X := results/rotation
ROT_T := results/smollm3_training_progress
ROT_HAS_X := $(filter $(ROT_X)/rotated.csv,$(ROT_TABLES))
ROT_HAS_T := $(filter $(ROT_T)/rotated.csv,$(ROT_TABLES))

# Figures 01 and 08: heads of one dataset drawn as the thesis drew them
# (random.Random(SEED).sample of its sorted heads); 01 shows them in their
# {a, b} planes, 08 the complement pairs of the first one drawn. At most
# POINTS (01) and COMPLEMENT_POINTS (08, per pair) vectors per kind.
ROT_FIG_DATASET           ?= llama3.2-3b
ROT_FIG_SEED              ?= 42
ROT_FIG_PANELS            ?= 4
ROT_FIG_POINTS            ?= 2000
ROT_FIG_COMPLEMENT_POINTS ?= 1000
$(call param_group,rotation-points,dataset=$(ROT_FIG_DATASET) seed=$(ROT_FIG_SEED) \
  panels=$(ROT_FIG_PANELS) points=$(ROT_FIG_POINTS) complement_points=$(ROT_FIG_COMPLEMENT_POINTS))

ROT_FIGURE_READMES :=

# rot_figure NN_NAME, INPUTS: the rules of one figure.
rot_figure = $(eval $(call figure_rule,qk-rotation,$(1),$(2))) \
  $(eval ROT_FIGURE_READMES += figures/qk-rotation/$(1)/README.md)

# ---- the point clouds (01, 08) ---------------------------------------------------------
ifneq ($(filter $(ROT_FIG_DATASET),$(RUN_DATASETS)),)
ROT_FIG_BUILD := build/$(ROT_FIG_DATASET)
ROT_POINTS := build/rotation/ab_points.tsv build/rotation/complement_points.tsv \
  build/rotation/points_panels.tsv

$(ROT_POINTS) &: $(ROT_FIG_BUILD)/store.qks $(ROT_FIG_BUILD)/rotation_axes.bin \
    $(call prog,qk-rotation-points) build/params/rotation-points.txt build/params/blas.txt
	@mkdir -p build/rotation
	$(call step,POINTS,$(ROT_FIG_DATASET)) bin/qk-rotation-points --seed $(ROT_FIG_SEED) --panels $(ROT_FIG_PANELS) \
	  --max-points $(ROT_FIG_POINTS) --complement-max-points $(ROT_FIG_COMPLEMENT_POINTS) \
	  --axes $(ROT_FIG_BUILD)/rotation_axes.bin --ab-output build/rotation/ab_points.tsv \
	  --complement-output build/rotation/complement_points.tsv \
	  --panels-output build/rotation/points_panels.tsv $<

$(call rot_figure,01_ab_plane_collage,points=build/rotation/ab_points.tsv \
  panels=build/rotation/points_panels.tsv heads=$(ROT_FIG_BUILD)/rotated.tsv registry=$(REGISTRY))
$(call rot_figure,08_complement_collage,points=build/rotation/complement_points.tsv \
  panels=build/rotation/points_panels.tsv heads=$(ROT_FIG_BUILD)/rotated.tsv \
  pairs=$(ROT_FIG_BUILD)/complement_pairs.tsv registry=$(REGISTRY))
endif

# ---- the cross-model figures (02-07) -----------------------------------------------------
ifneq ($(ROT_HAS_X),)
ROT_X_SUMMARY := summary=$(ROT_X)/model_summary.csv registry=$(REGISTRY)
ROT_X_HEADS := heads=$(ROT_X)/rotated.csv registry=$(REGISTRY)
$(call rot_figure,02_rq_rk_drift_bars,$(ROT_X_SUMMARY))
$(call rot_figure,03_variance_decomposition,$(ROT_X_SUMMARY))
$(call rot_figure,04_bias_strength,$(ROT_X_HEADS))
$(call rot_figure,05_slope_ratio,$(ROT_X_SUMMARY) heads=$(ROT_X)/rotated.csv)
$(call rot_figure,06_layer_heatmaps,$(ROT_X_HEADS))
$(call rot_figure,07_bias_vs_separation,$(ROT_X_HEADS))
endif

# ---- SmolLM3-3B across training (09, 10) ---------------------------------------------------
ifneq ($(ROT_HAS_T),)
ROT_T_SUMMARY := summary=$(ROT_T)/model_summary.csv registry=$(REGISTRY)
$(call rot_figure,09_smollm_trajectory,$(ROT_T_SUMMARY))
$(call rot_figure,10_smollm_bias_decomposition,$(ROT_T_SUMMARY))
endif

.PHONY: rotation-figures
rotation-figures: $(ROT_FIGURE_READMES)

# ---- the report section's numbers -------------------------------------------------------------
# Every number of templates/sections/rotation.html.in comes from this numbers
# file (qk-summary); a study missing from the run leaves its values missing and
# its tables empty, and the section says so.
ROT_SUMMARY := build/report/rotation.numbers
# the studies the values cover are a parameter: a run with fewer rewrites them
$(call param_group,rotation-summary,cross=$(if $(ROT_HAS_X),yes,no) training=$(if $(ROT_HAS_T),yes,no))
ROT_SUMMARY_IN := $(REGISTRY) build/params/rotation-summary.txt build/params/rotation-complement.txt \
  $(if $(ROT_HAS_X),$(ROT_X)/model_summary.csv $(ROT_X)/rotated.csv) \
  $(if $(ROT_HAS_T),$(ROT_T)/model_summary.csv $(ROT_T)/rotated.csv)

$(ROT_SUMMARY): $(ROT_SUMMARY_IN) $(call prog,qk-summary) $(RUN_SET)
	@mkdir -p $(@D)
	$(call step,SUMMARY,rotation) bin/qk-summary --section rotation --input registry=$(REGISTRY) \
	  --param active-tau=$(ROT_ACTIVE_TAU) \
	  $(if $(ROT_HAS_X),--input summary=$(ROT_X)/model_summary.csv --input heads=$(ROT_X)/rotated.csv) \
	  $(if $(ROT_HAS_T),--input training-summary=$(ROT_T)/model_summary.csv \
	    --input training-heads=$(ROT_T)/rotated.csv) --output $@

REPORT_FLAGS += --values $(ROT_SUMMARY)
REPORT_INPUTS += $(ROT_SUMMARY)
REPORT_LATEX_TABLES += rotation.models rotation.families rotation.training
