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
	  --param active-tau=$(ROT_ACTIVE_TAU) \
	  $(if $(ROT_HAS_X),--input summary=$(ROT_X)/model_summary.csv --input heads=$(ROT_X)/rotated.csv) \
	  $(if $(ROT_HAS_T),--input training-summary=$(ROT_T)/model_summary.csv \
	    --input training-heads=$(ROT_T)/rotated.csv) --output $@

REPORT_FLAGS += --values $(ROT_SUMMARY)
REPORT_INPUTS += $(ROT_SUMMARY)
REPORT_LATEX_TABLES += rotation.models rotation.families rotation.training
