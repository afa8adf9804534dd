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
figures/$(1)/$(2)/figure.png figures/$(1)/$(2)/numbers.tsv figures/$(1)/$(2)/inputs.tsv \
figures/$(1)/$(2)/readme.tsv &: $(foreach i,$(3),$(lastword $(subst =, ,$(i)))) \
    bin/qk-plot templates/gnuplot/style.gp
	bin/qk-plot --figure $(1)/$(firstword $(subst _, ,$(2))) --out figures/$(1)/$(2) \
	  $(foreach i,$(3),--input $(i))

figures/$(1)/$(2)/stores.tsv: $(foreach d,$(call figure_datasets,$(3)),build/$(d)/inventory.tsv)
	@mkdir -p $$(@D)
	awk -F'\t' 'BEGIN { OFS = "\t"; print "dataset", "store_bytes", "store_checksum" } \
	  FNR > 1 { print $$$$1, $$$$11, $$$$12 }' $$^ > $$@.tmp
	mv -f $$@.tmp $$@

figures/$(1)/$(2)/README.md: figures/$(1)/$(2)/figure.png figures/$(1)/$(2)/stores.tsv \
    templates/figure-README.md.in bin/qk-report build/params/report.txt build/report/parameters.tsv
	bin/qk-report --markdown --template templates/figure-README.md.in --output $$@ \
	  --values figures/$(1)/$(2)/readme.tsv --table numbers=figures/$(1)/$(2)/numbers.tsv \
	  --table inputs=figures/$(1)/$(2)/inputs.tsv --table stores=figures/$(1)/$(2)/stores.tsv \
	  $$(README_FLAGS)

.PHONY: figures/$(1)/$(firstword $(subst _, ,$(2)))
figures/$(1)/$(firstword $(subst _, ,$(2))): figures/$(1)/$(2)/README.md
ALL_FIGURES += figures/$(1)/$(2)/README.md
endef

README_FLAGS = --set suite_version=$(SUITE_VERSION) --set data_source="$(DATA_SOURCE)" \
  --table parameters=build/report/parameters.tsv

$(eval $(call figure_rule,inventory,01_vectors,inventory=build/report/inventory.tsv))

.PHONY: figures
figures: $(ALL_FIGURES)
