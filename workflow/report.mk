# The report: report/index.html from templates/report.html.in, every number
# taken from the pipeline's tables.

INVENTORIES := $(foreach d,$(ORDERED_DATASETS),build/$(d)/inventory.tsv)

# concatenates TSV files that share one header line, in the order given
merge_tsv = awk 'FNR == 1 && NR != 1 { next } { print }' $(1) > $(2).tmp && mv -f $(2).tmp $(2)

build/report/inventory.tsv: $(INVENTORIES)
	@mkdir -p $(@D)
	$(call merge_tsv,$^,$@)

# Provenance tables for the report and every figure README: the parameters
# of every stage (build/params/*.txt, written by param_group) and the
# stores behind each figure (figures/<study>/<NN_name>/stores.tsv, figures.mk).
build/report/parameters.tsv: $$(sort $$(wildcard build/params/*.txt))
	@mkdir -p $(@D)
	awk 'BEGIN { OFS = "\t"; print "stage", "parameter", "value" } \
	  { g = FILENAME; sub(/.*\//, "", g); sub(/\.txt$$/, "", g); \
	    i = index($$0, "="); print g, substr($$0, 1, i - 1), substr($$0, i + 1) }' $^ > $@.tmp
	mv -f $@.tmp $@

SUITE_VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(call param_group,report,version=$(SUITE_VERSION) data=$(if $(DATA),$(DATA),synthetic))

DATA_SOURCE = $(if $(DATA),$(DATA),synthetic (qk-synth, seed $(SEED), scale $(SCALE)))
# Each study's .mk adds its section's tables and values:
#   REPORT_FLAGS += --table NAME=FILE --values FILE   and   REPORT_INPUTS += FILE ...
REPORT_FLAGS += --set suite_version=$(SUITE_VERSION) --set data_source="$(DATA_SOURCE)" \
  --table inventory=build/report/inventory.tsv --table parameters=build/report/parameters.tsv
REPORT_INPUTS += build/report/inventory.tsv build/report/parameters.tsv $(wildcard templates/sections/*.html.in)

# every study table is part of the result, quoted or not
REPORT_INPUTS += $(PCA_TABLES) $(ROT_TABLES) $(PLAST_TABLES)

report/index.html: templates/report.html.in bin/qk-report $(REPORT_INPUTS) \
                   build/params/report.txt build/params/synth.txt $(ALL_FIGURES)
	@mkdir -p $(@D)
	bin/qk-report --template $< --output $@ $(REPORT_FLAGS)

.PHONY: report
report: report/index.html
