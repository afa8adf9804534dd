# Figures: figures/<study>/<NN_name>/{figure.png,figure.svg,figure.gp,README.md}
# rendered by qk-plot; `make figures/<study>/<NN>` rebuilds one figure and
# only what it depends on.

# The datasets an input table is made from, for the README's store list:
# results/<study>/ tables cover the study's datasets (results/rotation/ the
# cross-model ones), build/<dataset>/ files their dataset, and the
# inventory every dataset of the run.
input_datasets = $(strip \
  $(if $(filter build/report/inventory.tsv,$(1)),$(RUN_DATASETS), \
  $(if $(filter results/rotation/%,$(1)),$(call study_datasets,attention_plasticity), \
  $(if $(filter results/%,$(1)),$(call study_datasets,$(word 2,$(subst /, ,$(1)))), \
  $(if $(filter build/%,$(1)),$(filter $(word 2,$(subst /, ,$(1))),$(RUN_DATASETS)))))))
figure_datasets = $(filter $(sort $(foreach i,$(1),$(call input_datasets,$(lastword $(subst =, ,$(i)))))),$(ORDERED_DATASETS))

# figure_rule STUDY, NN_NAME, NAME=TABLE inputs
define figure_rule
figures/$(1)/$(2)/figure.png figures/$(1)/$(2)/figure.svg figures/$(1)/$(2)/figure.gp \
figures/$(1)/$(2)/numbers.tsv figures/$(1)/$(2)/inputs.tsv figures/$(1)/$(2)/readme.tsv &: \
    $(foreach i,$(3),$(lastword $(subst =, ,$(i)))) $(call prog,qk-plot) templates/gnuplot/style.gp
	$$(call step,PLOT,$(1)/$(2)) bin/qk-plot --figure $(1)/$(firstword $(subst _, ,$(2))) --out figures/$(1)/$(2) \
	  $(foreach i,$(3),--input $(i))

# the stores behind the figure and their provenance, by inventory column name
figures/$(1)/$(2)/stores.tsv: $(foreach d,$(call figure_datasets,$(3)),build/$(d)/inventory.tsv) \
    $(call set_record,figure-$(1)-$(firstword $(subst _, ,$(2))),$(call figure_datasets,$(3)))
	@mkdir -p $$(@D)
	$$(quiet)$$(call select_columns,$$(filter %/inventory.tsv,$$^),$$(STORE_COLUMNS),$$@)

figures/$(1)/$(2)/source.tsv: figures/$(1)/$(2)/stores.tsv workflow/provenance.awk
	$$(quiet)awk -f workflow/provenance.awk $$< > $$@.tmp && mv -f $$@.tmp $$@

figures/$(1)/$(2)/README.md: figures/$(1)/$(2)/figure.png figures/$(1)/$(2)/stores.tsv \
    figures/$(1)/$(2)/source.tsv templates/figure-README.md.in $(call prog,qk-report) \
    build/params/report.txt build/report/parameters.tsv
	$$(call step,README,$(1)/$(2)) bin/qk-report --markdown --template templates/figure-README.md.in --output $$@ \
	  --values figures/$(1)/$(2)/readme.tsv --values figures/$(1)/$(2)/source.tsv \
	  --table numbers=figures/$(1)/$(2)/numbers.tsv \
	  --table inputs=figures/$(1)/$(2)/inputs.tsv --table stores=figures/$(1)/$(2)/stores.tsv \
	  $$(README_FLAGS)

.PHONY: figures/$(1)/$(firstword $(subst _, ,$(2)))
figures/$(1)/$(firstword $(subst _, ,$(2))): figures/$(1)/$(2)/README.md
ALL_FIGURES += figures/$(1)/$(2)/README.md
endef

README_FLAGS = --set suite_version=$(SUITE_VERSION) --table parameters=build/report/parameters.tsv

# The inventory columns a figure README lists for each of its stores.
STORE_COLUMNS := dataset store_bytes store_checksum source revision
# select_columns FILES, COLUMNS, OUT: the named columns of TSV files that
# share a header, concatenated.
select_columns = awk -F'\t' -v want="$(2)" 'BEGIN { OFS = "\t"; n = split(want, w, " ") } \
  function header() { line = w[1]; for (i = 2; i <= n; i++) line = line "\t" w[i]; print line } \
  FNR == 1 { for (i = 1; i <= NF; i++) col[$$i] = i; if (NR == 1) header(); next } \
  { line = $$(col[w[1]]); for (i = 2; i <= n; i++) line = line "\t" $$(col[w[i]]); print line } \
  END { if (NR == 0) header() }' $(1) /dev/null > $(3).tmp && mv -f $(3).tmp $(3)

$(eval $(call figure_rule,inventory,01_vectors,inventory=build/report/inventory.tsv))

.PHONY: figures
figures: $(ALL_FIGURES)
