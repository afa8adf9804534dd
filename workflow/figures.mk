# Figures: figures/<study>/<NN_name>/{figure.png,figure.svg,figure.gp,README.md}
# rendered by qk-plot; `make figures/<study>/<NN>` rebuilds one figure and
# only what it depends on.

# figure_rule STUDY, NN_NAME, NAME=TABLE inputs
define figure_rule
figures/$(1)/$(2)/figure.png figures/$(1)/$(2)/numbers.tsv figures/$(1)/$(2)/inputs.tsv \
figures/$(1)/$(2)/readme.tsv &: $(foreach i,$(3),$(lastword $(subst =, ,$(i)))) \
    bin/qk-plot templates/gnuplot/style.gp
	bin/qk-plot --figure $(1)/$(firstword $(subst _, ,$(2))) --out figures/$(1)/$(2) \
	  $(foreach i,$(3),--input $(i))

figures/$(1)/$(2)/README.md: figures/$(1)/$(2)/figure.png templates/figure-README.md.in \
    bin/qk-report build/params/report.txt build/report/parameters.tsv build/report/stores.tsv
	bin/qk-report --markdown --template templates/figure-README.md.in --output $$@ \
	  --values figures/$(1)/$(2)/readme.tsv --table numbers=figures/$(1)/$(2)/numbers.tsv \
	  --table inputs=figures/$(1)/$(2)/inputs.tsv $$(README_FLAGS)

.PHONY: figures/$(1)/$(firstword $(subst _, ,$(2)))
figures/$(1)/$(firstword $(subst _, ,$(2))): figures/$(1)/$(2)/README.md
ALL_FIGURES += figures/$(1)/$(2)/README.md
endef

README_FLAGS = --set suite_version=$(SUITE_VERSION) --set data_source="$(DATA_SOURCE)" \
  --table parameters=build/report/parameters.tsv --table stores=build/report/stores.tsv

$(eval $(call figure_rule,inventory,01_vectors,inventory=build/report/inventory.tsv))

.PHONY: figures
figures: $(ALL_FIGURES)
