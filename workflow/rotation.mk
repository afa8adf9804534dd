# Stages qk-rotate and qk-complement: the planar rotation model of every head
# (docs/rotation.md), and the study tables results/<study>/rotated.csv (one row
# a head), complement_pairs.csv (one row a complement pair) and
# model_summary.csv (one row a model). The cross-model tables
# results/rotation/ hold the attention_plasticity models,
# results/smollm3_training_progress/ the checkpoints and results/<study>/
# any other study's models (results/extra/).

$(call param,ROT_B_MODE,,qk-rotate --b-mode)
$(call param,ROT_B_SIGN,,qk-rotate --b-sign)
$(call param,ROT_OMEGA_GRID,,qk-rotate --omega-grid)
$(call param,ROT_OMEGA_REFINE,,qk-rotate --omega-refine)
$(call param,ROT_ACTIVE_TAU,,qk-complement --active-tau)
ROT_THREADS      ?= 2
$(call checked_by,ROT_THREADS,qk-rotate --threads)

# The axis and omega parameters change qk-rotate's outputs, the threshold
# only qk-complement's; the thread count changes nothing, so it is no
# parameter.
$(call param_group,rotation,ROT_B_MODE ROT_B_SIGN ROT_OMEGA_GRID ROT_OMEGA_REFINE)
$(call param_group,rotation-complement,ROT_ACTIVE_TAU)

ROT_FLAGS = --quiet --threads $(ROT_THREADS) --b-mode $(ROT_B_MODE) --b-sign $(ROT_B_SIGN) \
  --omega-grid $(ROT_OMEGA_GRID) --omega-refine $(ROT_OMEGA_REFINE)

# The family of a dataset, and its checkpoint column: the registry label of
# a SmolLM3 checkpoint ("S1-40k"), "-" for the other models.
rot_family = $(or $(call registry_value,$(1),family),unknown)
rot_checkpoint = $(if $(filter smollm3_training_progress,$(call study_of,$(1))),$(or \
  $(call registry_value,$(1),label),$(1)),-)

build/%/rotation.tsv build/%/rotation_axes.bin: build/%/store.qks $(call prog,qk-rotate) \
    build/params/rotation.txt build/params/blas.txt
	$(call job,ROTATE,$*,$(ROT_THREADS),$<,build/$*/rotation.tsv build/$*/rotation_axes.bin) \
	  bin/qk-rotate $(ROT_FLAGS) --family $(call rot_family,$*) --checkpoint $(call rot_checkpoint,$*) \
	  --output build/$*/rotation.tsv --axes-output build/$*/rotation_axes.bin $<

build/%/rotated.tsv build/%/complement_pairs.tsv build/%/complement_heads.tsv: build/%/store.qks \
    build/%/rotation.tsv build/%/rotation_axes.bin $(call prog,qk-complement) \
    build/params/rotation-complement.txt build/params/blas.txt
	$(call job,COMPLEM,$*,$(ROT_THREADS),$<,build/$*/rotated.tsv build/$*/complement_pairs.tsv \
	  build/$*/complement_heads.tsv) bin/qk-complement --quiet --threads $(ROT_THREADS) --active-tau $(ROT_ACTIVE_TAU) \
	  --axes build/$*/rotation_axes.bin --rotation build/$*/rotation.tsv \
	  --pairs-output build/$*/complement_pairs.tsv --heads-output build/$*/complement_heads.tsv \
	  --rotated-output build/$*/rotated.tsv $<

# The cross-model study's tables go to results/rotation/ (the thesis' path),
# the SmolLM3 checkpoints' to results/smollm3_training_progress/, and those of
# any other study (the extra models) to results/<study>/.
ROT_SMOL_DATASETS  := $(call study_datasets,smollm3_training_progress)
ROT_CROSS_DATASETS := $(call study_datasets,attention_plasticity)
ROT_OTHER_STUDIES  := $(filter-out attention_plasticity smollm3_training_progress,$(RUN_STUDIES))

# rotation_study_rules DIR, DATASETS, MODEL_PREFIX: the merged tables of a
# study; the model column is the dataset id without MODEL_PREFIX.
define rotation_study_rules
$(call merge,$(1),rotated.csv,$(2),rotated.tsv,$(3))
$(call merge,$(1),complement_pairs.csv,$(2),complement_pairs.tsv,$(3))

$(STAGE)/results/$(1)/model_summary.csv: $(STAGE)/results/$(1)/rotated.csv $(call prog,qk-rotate)
	$$(call step,SUMMARY,$$(call shown,$$@)) bin/qk-rotate --summary --output $$@ $$<

ROT_TABLES += $(addprefix $(STAGE)/results/$(1)/,rotated.csv complement_pairs.csv model_summary.csv)
endef
ROT_TABLES :=
$(if $(ROT_CROSS_DATASETS),$(eval $(call rotation_study_rules,rotation,$(ROT_CROSS_DATASETS),)))
$(if $(ROT_SMOL_DATASETS),$(eval $(call rotation_study_rules,smollm3_training_progress,$(ROT_SMOL_DATASETS),smollm3-3b-)))
$(foreach s,$(ROT_OTHER_STUDIES),$(eval $(call rotation_study_rules,$(s),$(call study_datasets,$(s)),)))

ROT_OUTPUTS := $(foreach d,$(RUN_DATASETS),build/$(d)/rotation.tsv build/$(d)/rotation_axes.bin \
  build/$(d)/rotated.tsv build/$(d)/complement_pairs.tsv build/$(d)/complement_heads.tsv)

.PHONY: bench-rotate
$(call publish_goal,rotation,$(call shown,$(ROT_TABLES)),$(ROT_OUTPUTS) $(ROT_TABLES))

# Per-head time of rotate + complement at thesis size (about 8000 + 8000 rows
# x 128, made in memory by the synthetic generator), one core, against numpy
# on the same vectors; prints figures, passes or fails nothing.
bench-rotate: bin/qk-bench-rotate bin/qk-report
	@echo "== rotation model per head: qk-rotate + qk-complement against numpy (same formulas)"
	set -o pipefail; OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/bench_rotate.py --qk-bench bin/qk-bench-rotate \
	  --heads 4 --examples 500 --repeat 3 --dump $(BENCH_DIR)/rotate-heads.bin | tee $(BENCH_DIR)/bench-rotate.txt

bench: bench-rotate

# ---- the point clouds of figures qk-rotation/01 and 08 ---------------------------
# Figures 01 and 08: heads of one dataset (the figures' model) drawn as the
# thesis drew them (random.Random(SEED).sample of its sorted heads); 01 shows
# them in their {a, b} planes, 08 the complement pairs of the first one
# drawn. At most POINTS (01) and COMPLEMENT_POINTS (08, per pair) vectors per
# kind.
$(call param,ROT_FIG_DATASET,llama3.2-3b,dataset)
$(call param,ROT_FIG_SEED,,qk-rotation-points --seed)
$(call param,ROT_FIG_PANELS,,qk-rotation-points --panels)
$(call param,ROT_FIG_POINTS,,qk-rotation-points --max-points)
$(call param,ROT_FIG_COMPLEMENT_POINTS,,qk-rotation-points --complement-max-points)
$(call param_group,rotation-points,ROT_FIG_DATASET ROT_FIG_SEED ROT_FIG_PANELS ROT_FIG_POINTS \
  ROT_FIG_COMPLEMENT_POINTS)

# made when the run has the figures' dataset
ROT_POINTS :=
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
endif


# ==== the figures and the report section ====

# The planar rotation study's figures (figures/qk-rotation/NN_name, records of
# workflow/figures.rec) need the tables named here (ROT_TABLES,
# workflow/rotation.mk) and the point data of figures 01 and 08 (made there
# too); the values and tables of the report's rotation section are made here.
#
#   make figures/qk-rotation/09   one figure and only what it depends on
#   make rotation-figures         all of them

ROT_X := $(STAGE)/results/rotation
ROT_T := $(STAGE)/results/smollm3_training_progress
ROT_HAS_X := $(filter $(ROT_X)/rotated.csv,$(ROT_TABLES))
ROT_HAS_T := $(filter $(ROT_T)/rotated.csv,$(ROT_TABLES))

# ---- the report section's numbers -------------------------------------------------------------
# Every number of templates/sections/rotation.html.in comes from this numbers
# file (qk-summary); a study missing from the run leaves its values missing and
# its tables empty, and the section says so.
ROT_SUMMARY := build/report/rotation.numbers
# the studies the values cover are a parameter: a run with fewer rewrites them
$(call param_group,rotation-summary,cross=$(if $(ROT_HAS_X),yes,no) training=$(if $(ROT_HAS_T),yes,no))
ROT_SUMMARY_IN := $(RUN_REGISTRY) build/params/rotation-summary.txt build/params/rotation-complement.txt \
  $(if $(ROT_HAS_X),$(ROT_X)/model_summary.csv $(ROT_X)/rotated.csv) \
  $(if $(ROT_HAS_T),$(ROT_T)/model_summary.csv $(ROT_T)/rotated.csv)

$(ROT_SUMMARY): $(ROT_SUMMARY_IN) $(call prog,qk-summary) $(RUN_SET)
	@mkdir -p $(@D)
	$(call step,SUMMARY,rotation) bin/qk-summary --section rotation --input registry=$(RUN_REGISTRY) \
	  --params build/params/rotation-complement.txt \
	  $(if $(ROT_HAS_X),--input summary=$(ROT_X)/model_summary.csv --input heads=$(ROT_X)/rotated.csv) \
	  $(if $(ROT_HAS_T),--input training-summary=$(ROT_T)/model_summary.csv \
	    --input training-heads=$(ROT_T)/rotated.csv) --output $@

REPORT_FLAGS += --values $(ROT_SUMMARY)
REPORT_INPUTS += $(ROT_SUMMARY)
REPORT_LATEX_TABLES += rotation.models rotation.families rotation.training

STUDY_TABLES += $(ROT_TABLES)
FIGURE_MADE += $(ROT_TABLES) $(ROT_POINTS)
