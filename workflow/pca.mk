# Stage qk-pca: the combined query/key PCA of every head (docs/pca.md), the
# head taxonomy, and the study tables results/<study>/qk.csv (10 rows a head)
# and results/<study>/qk_heads.csv (one row a head, with its category).

$(call param,PCA_TAX_HIGH,,qk-taxonomy --high)
$(call param,PCA_TAX_LOW,,qk-taxonomy --low)
PCA_THREADS   ?= 2
$(call checked_by,PCA_THREADS,qk-pca --threads)
# use only the first N rows of each config; 0 = all rows (the analysis default)
$(call param,PCA_MAX_ROWS,0,qk-pca --max-rows)

# The thresholds change only the taxonomy, the row cap only the PCA; the
# thread count never changes an output, so it is no parameter.
$(call param_group,pca,PCA_TAX_HIGH PCA_TAX_LOW)
$(call param_group,pca-fit,PCA_MAX_ROWS)

PCA_FLAGS = --quiet --threads $(PCA_THREADS) \
  $(if $(filter-out 0,$(PCA_MAX_ROWS)),--max-rows $(PCA_MAX_ROWS))

build/%/pca.tsv build/%/pca_heads.tsv: build/%/store.qks $(call prog,qk-pca) build/params/pca-fit.txt \
    build/params/blas.txt
	$(call job,PCA,$*,$(PCA_THREADS),$<,build/$*/pca.tsv build/$*/pca_heads.tsv) bin/qk-pca $(PCA_FLAGS) --output build/$*/pca.tsv --heads-output build/$*/pca_heads.tsv $<

build/%/taxonomy.tsv: build/%/pca_heads.tsv $(call prog,qk-taxonomy) build/params/pca.txt
	$(call step,TAXON,$*) bin/qk-taxonomy --high $(PCA_TAX_HIGH) --low $(PCA_TAX_LOW) --output $@ $<

PCA_STUDIES := $(RUN_STUDIES)
$(foreach s,$(PCA_STUDIES),\
  $(call merge,$(s),qk.csv,$(call study_datasets,$(s)),pca.tsv,$(call study_model_prefix,$(s))) \
  $(call merge,$(s),qk_heads.csv,$(call study_datasets,$(s)),taxonomy.tsv,$(call study_model_prefix,$(s))))

PCA_OUTPUTS := $(foreach d,$(RUN_DATASETS),build/$(d)/pca.tsv build/$(d)/pca_heads.tsv build/$(d)/taxonomy.tsv)
PCA_TABLES  := $(foreach s,$(PCA_STUDIES),$(STAGE)/results/$(s)/qk.csv $(STAGE)/results/$(s)/qk_heads.csv)

.PHONY: bench-pca
$(call publish_goal,pca,$(call shown,$(PCA_TABLES)),$(PCA_OUTPUTS) $(PCA_TABLES))

# Per-head time at thesis size (8000 + 8000 rows x 128), one core, against
# scikit-learn on the same vectors; prints figures, passes or fails nothing.
bench-pca: bin/qk-bench-pca bin/qk-report
	@echo "== combined QK PCA per head: qk-pca against scikit-learn PCA(svd_solver='full') + numpy r"
	set -o pipefail; /usr/bin/python3 bench/bench_pca.py --qk-bench bin/qk-bench-pca --heads 8 --rows 8000 \
	  --dim 128 --repeat 5 --dump build/bench/pca-heads.bin | tee $(BENCH_DIR)/bench-pca.txt

bench: bench-pca

# ---- the collage of figure qk-pca/06 -----------------------------------------------
# Figure 06: four heads of one dataset (the figure's model), drawn as the
# thesis drew them (random.Random(SEED).sample of its sorted query heads);
# at most POINTS vectors per kind and head are plotted.
$(call param,PCA_COLLAGE_DATASET,llama3.2-3b,dataset)
$(call param,PCA_COLLAGE_SEED,,qk-pca-collage --seed)
$(call param,PCA_COLLAGE_PANELS,,qk-pca-collage --panels)
$(call param,PCA_COLLAGE_POINTS,,qk-pca-collage --max-points)
$(call param_group,pca-collage,PCA_COLLAGE_DATASET PCA_COLLAGE_SEED PCA_COLLAGE_PANELS PCA_COLLAGE_POINTS)
# the per-head table with the categories of the collage's heads
PCA_COLLAGE_HEADS := $(STAGE)/results/$(call study_of,$(PCA_COLLAGE_DATASET))/qk_heads.csv

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


# ==== the figures and the report section ====

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

# The taxonomy thresholds of the run (its record), as a table for the
# figures that draw them.
build/pca/thresholds.tsv: build/params/pca.txt
	@mkdir -p $(@D)
	$(quiet){ printf 'name\tvalue\n'; sed -n 's/^PCA_TAX_HIGH=/high\t/p' $<; \
	  sed -n 's/^PCA_TAX_LOW=/low\t/p' $<; } > $@.tmp
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
	  --params build/params/pca.txt \
	  $(if $(PCA_HAS_X),--input components=$(PCA_X)/qk.csv --input heads=$(PCA_X)/qk_heads.csv) \
	  $(if $(PCA_HAS_T),--input training-heads=$(PCA_T)/qk_heads.csv) --output $@

REPORT_FLAGS += --values $(PCA_SUMMARY)
REPORT_INPUTS += $(PCA_SUMMARY)
REPORT_LATEX_TABLES += pca.components pca.families pca.models pca.training

STUDY_TABLES += $(PCA_TABLES)
FIGURE_MADE += $(PCA_TABLES) build/pca/thresholds.tsv $(PCA_COLLAGE_OUT)
