# Figures: figures/<study>/<NN_name>/{figure.png,figure.svg,figure.pdf,figure.gp,README.md}
# rendered by qk-plot (figure.pdf for a thesis page, dated SOURCE_DATE_EPOCH), one for each figure of the registry
# workflow/figures.rec (FIGURE_REGISTRY, build.mk); `make
# figures/<study>/<NN>` rebuilds one figure and only what it depends on.
#
# Every figure is made on every run. A figure whose input tables this run
# does not make (the run lacks its datasets) gets them as --absent, and
# qk-plot draws a canvas that says what the figure needs; a one-model
# figure whose tables lack its model does the same.
#
# Included after the figures-<study>.mk files, which define the tables the
# registry names (PCA_X, ROT_T, PLAST_JOINT, ...) and the stages that make the
# figures' own inputs (the collage points, the joint SmolLM3 table).

# a figure's folder in the stage (STUDY, NN_NAME)
fig_dir = $(STAGE)/figures/$(1)/$(2)

# A mean over heads is drawn in full only where at least this share of the
# model's heads contribute (a lighter line or hatched cell elsewhere).
$(call param,FIG_MIN_SHARE,,qk-plot --min-share)
# The plasticity heatmaps 01-04 share one colour scale (shared), or each
# has its model's own (own).
$(call param,FIG_HEATMAP_SCALE,,qk-plot --heatmap-scale)
$(call param_group,figures,FIG_MIN_SHARE FIG_HEATMAP_SCALE SOURCE_DATE_EPOCH)

# The tables this run makes besides the per-dataset files build/<ds>/...:
# an input not among them is absent.
FIGURE_MADE += $(RUN_REGISTRY) build/report/inventory.tsv
fig_made = $(or $(filter $(1),$(FIGURE_MADE)),$(if $(filter build/%,$(1)),$(filter \
  $(word 2,$(subst /, ,$(1))),$(RUN_DATASETS))))
fig_input_file = $(lastword $(subst =, ,$(1)))
fig_present = $(strip $(foreach i,$(1),$(if $(call fig_made,$(call fig_input_file,$(i))),$(i))))
fig_absent = $(strip $(foreach i,$(1),$(if $(call fig_made,$(call fig_input_file,$(i))),,$(i))))

# The datasets an input table is made from, for the README's store list:
# results/<study>/ tables cover the study's datasets (results/rotation/ the
# cross-model ones), build/<dataset>/ files their dataset, and the
# inventory every dataset of the run.
input_datasets = $(strip \
  $(if $(filter build/report/inventory.tsv,$(1)),$(RUN_DATASETS), \
  $(if $(filter $(STAGE)/results/rotation/%,$(1)),$(call study_datasets,attention_plasticity), \
  $(if $(filter $(STAGE)/results/%,$(1)),$(call study_datasets,$(word 2,$(subst /, ,$(call shown,$(1))))), \
  $(if $(filter build/%,$(1)),$(filter $(word 2,$(subst /, ,$(1))),$(RUN_DATASETS)))))))
figure_datasets = $(filter $(sort $(foreach i,$(1),$(call input_datasets,$(call fig_input_file,$(i))))),$(ORDERED_DATASETS))

# The parameter groups a figure's README lists: the synthetic data's (when
# the run is synthetic), BLAS, the stages that feed the figure, the
# figures' own, and the figure's model.
fig_param_groups = $(if $(strip $(DATA)),,synth) $(if $(filter-out -,$(1)),blas $(1)) figures \
  $(if $(filter-out -,$(2)),figure-models)

# figure_rule STUDY, NN_NAME, MODEL (- for none), STAGES (- for none), NAME=TABLE inputs,
# NAME=VALUE values its texts quote (none: empty)
define figure_rule
$(call fig_dir,$(1),$(2))/figure.png $(call fig_dir,$(1),$(2))/figure.svg $(call fig_dir,$(1),$(2))/figure.pdf \
$(call fig_dir,$(1),$(2))/figure.gp $(call fig_dir,$(1),$(2))/numbers.tsv $(call fig_dir,$(1),$(2))/inputs.tsv $(call fig_dir,$(1),$(2))/readme.tsv &: \
    $(foreach i,$(call fig_present,$(5)),$(call fig_input_file,$(i))) $(call prog,qk-plot) \
    templates/gnuplot/style.gp build/params/figures.txt \
    $(if $(filter-out -,$(3)),build/params/figure-models.txt) $(call fig_absent_record,$(1),$(2),$(5)) \
    $(if $(6),$(call set_record,figure-values-$(1)-$(firstword $(subst _, ,$(2))),$(6)))
	$$(call step,PLOT,$(1)/$(firstword $(subst _, ,$(2)))) bin/qk-plot --figure $(1)/$(firstword $(subst _, ,$(2))) --out $(call fig_dir,$(1),$(2)) \
	  $(foreach i,$(call fig_present,$(5)),--input $(i)) $(foreach a,$(call fig_absent,$(5)),--absent $(a)) \
	  $(if $(filter-out -,$(3)),--model $(3)) $(foreach v,$(6),--value $(v)) --min-share $(FIG_MIN_SHARE) \
	  --heatmap-scale $(FIG_HEATMAP_SCALE) \
	  $(if $(call fig_absent,$(5)),--run-datasets "$(ORDERED_DATASETS)")

# the stores behind the figure and their provenance, by inventory column name
$(call fig_dir,$(1),$(2))/stores.tsv: $(foreach d,$(call fig_stores,$(3),$(5)),build/$(d)/inventory.tsv) \
    $(call set_record,figure-$(1)-$(firstword $(subst _, ,$(2))),$(call fig_stores,$(3),$(5)))
	@mkdir -p $$(@D)
	$$(quiet)$$(call select_columns,$$(filter %/inventory.tsv,$$^),$$(STORE_COLUMNS),$$@)

$(call fig_dir,$(1),$(2))/source.tsv: $(call fig_dir,$(1),$(2))/stores.tsv workflow/provenance.awk
	$$(quiet)awk -f workflow/provenance.awk $$< > $$@.tmp && mv -f $$@.tmp $$@

# the parameters of the stages that feed the figure
$(call fig_dir,$(1),$(2))/parameters.tsv: build/report/parameters.tsv
	@mkdir -p $$(@D)
	$$(quiet)awk -F'\t' -v keep=" $(strip $(call fig_param_groups,$(4),$(3))) " -v id="$(1)/$(firstword $(subst _, ,$(2)))" \
	  'NR == 1 || (index(keep, " " $$$$1 " ") && ($$$$1 != "figure-models" || $$$$2 == id))' $$< > $$@.tmp \
	  && mv -f $$@.tmp $$@

# (every file of qk-plot's group it reads is a prerequisite: after a build
# killed between two of qk-plot's renames, a missing one reruns qk-plot)
$(call fig_dir,$(1),$(2))/README.md: $(call fig_dir,$(1),$(2))/figure.png $(call fig_dir,$(1),$(2))/figure.pdf \
    $(call fig_dir,$(1),$(2))/readme.tsv \
    $(call fig_dir,$(1),$(2))/numbers.tsv $(call fig_dir,$(1),$(2))/inputs.tsv $(call fig_dir,$(1),$(2))/stores.tsv \
    $(call fig_dir,$(1),$(2))/source.tsv $(call fig_dir,$(1),$(2))/parameters.tsv templates/figure-README.md.in \
    $(call prog,qk-report) build/params/report.txt $(REBUILD_VALUES)
	$$(call step,README,$(1)/$(firstword $(subst _, ,$(2)))) bin/qk-report --markdown --template templates/figure-README.md.in --output $$@ \
	  --values $(call fig_dir,$(1),$(2))/readme.tsv --values $(call fig_dir,$(1),$(2))/source.tsv --values $(REBUILD_VALUES) \
	  --table numbers=$(call fig_dir,$(1),$(2))/numbers.tsv \
	  --table inputs=$(call fig_dir,$(1),$(2))/inputs.tsv --table stores=$(call fig_dir,$(1),$(2))/stores.tsv \
	  --table parameters=$(call fig_dir,$(1),$(2))/parameters.tsv --set suite_version=$$(SUITE_VERSION)

# `make figures/<study>/<NN>`: the figure's folder, published alone
$(call publish_goal,figures/$(1)/$(firstword $(subst _, ,$(2))),figures/$(1)/$(2)/,$(call fig_dir,$(1),$(2))/README.md)
ALL_FIGURES += $(call fig_dir,$(1),$(2))/README.md
FIGURE_PDFS += $(call fig_dir,$(1),$(2))/figure.pdf
FIGURES_$(1) += $(call fig_dir,$(1),$(2))/README.md
FIGURE_MODELS += $(if $(filter-out -,$(3)),$(1)/$(firstword $(subst _, ,$(2)))=$(3))
endef

# What a figure lacks, as a record (build/sets/figure-absent-<study>-<NN>.txt):
# its absent inputs and, when there are any, the datasets of the run, which
# the canvas names; "-" when it has all its inputs. The figure depends on
# it, so it is redrawn when an input goes missing or comes back (its present
# inputs may be older than the canvas), and a canvas when the run changes.
fig_absent_record = $(call set_record,figure-absent-$(1)-$(firstword $(subst _, ,$(2))),$(if \
  $(call fig_absent,$(3)),$(call fig_absent,$(3)) $(ORDERED_DATASETS)))

# The stores of a figure: its model's (a one-model figure), else those of
# its present inputs.
fig_stores = $(if $(filter-out -,$(1)),$(filter $(1),$(RUN_DATASETS)),$(call figure_datasets,$(call fig_present,$(2))))

# The inventory column names a figure README lists for each of its stores.
STORE_COLUMNS := dataset store_bytes store_checksum source revision configs_present configs_captured
# select_columns FILES, COLUMNS, OUT: the named columns of TSV files that
# share a header, concatenated.
select_columns = awk -F'\t' -v want="$(2)" 'BEGIN { OFS = "\t"; n = split(want, w, " ") } \
  function header() { line = w[1]; for (i = 2; i <= n; i++) line = line "\t" w[i]; print line } \
  FNR == 1 { for (i = 1; i <= NF; i++) col[$$i] = i; if (NR == 1) header(); next } \
  { line = $$(col[w[1]]); for (i = 2; i <= n; i++) line = line "\t" $$(col[w[i]]); print line } \
  END { if (NR == 0) header() }' $(1) /dev/null > $(3).tmp && mv -f $(3).tmp $(3)

# ---- the figures of the registry ------------------------------------------------
# Each figure as one word "study|folder|model|stages|inputs|values" (the words
# of a field joined by ';', - for an empty field: workflow/figures.awk); the
# model, inputs and values are Make expressions, expanded here.
FIGURE_ROWS := $(shell awk -f workflow/figures.awk -v emit=make $(FIGURE_REGISTRY))
ifeq ($(FIGURE_ROWS),)
$(error $(FIGURE_REGISTRY) gives no figure)
endif
fig_field = $(subst ;, ,$(word $(2),$(subst |, ,$(1))))
fig_expand = $(eval fig_expanded := $(1))$(strip $(fig_expanded))
figure_row = $(eval $(call figure_rule,$(call fig_field,$(1),1),$(call fig_field,$(1),2),$(call \
  fig_expand,$(call fig_field,$(1),3)),$(call fig_field,$(1),4),$(call fig_expand,$(call fig_field,$(1),5)),$(call \
  fig_expand,$(filter-out -,$(call fig_field,$(1),6)))))

ALL_FIGURES :=
FIGURE_PDFS :=
FIGURE_MODELS :=
$(foreach row,$(FIGURE_ROWS),$(call figure_row,$(row)))
$(call param_group,figure-models,$(FIGURE_MODELS))

# the figures of a study, or all, each goal publishing what it made
fig_folders = $(call shown,$(dir $(1)))
$(call publish_goal,figures,$(call fig_folders,$(ALL_FIGURES)),$(ALL_FIGURES))
$(call publish_goal,pca-figures,$(call fig_folders,$(FIGURES_qk-pca)),$(FIGURES_qk-pca))
$(call publish_goal,rotation-figures,$(call fig_folders,$(FIGURES_qk-rotation)),$(FIGURES_qk-rotation))
$(call publish_goal,plasticity-figures,$(call fig_folders,$(FIGURES_attention-plasticity)) \
  $(call shown,$(PLAST_JOINT_TABLE)),$(FIGURES_attention-plasticity) $(PLAST_JOINT_TABLE))
