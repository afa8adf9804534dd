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
# thesis-scale synthetic model that bench.mk writes.
PLAST_BENCH_DIR := build/bench
PLAST_BENCH_DATA := $(PLAST_BENCH_DIR)/data/llama3.2-3b

$(PLAST_BENCH_DIR)/store.qks: $(PLAST_BENCH_DATA)/synth-truth.tsv bin/qk-load
	bin/qk-load --quiet --dataset llama3.2-3b $(PLAST_BENCH_DATA) -o $@

bench-plasticity: bin/qk-plasticity $(PLAST_BENCH_DIR)/store.qks
	@echo "== attention plasticity: qk-plasticity against numpy on llama3.2-3b at thesis scale"
	set -o pipefail; /usr/bin/python3 workflow/bench_plasticity.py --store $(PLAST_BENCH_DIR)/store.qks \
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

