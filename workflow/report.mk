# The report: report/index.html from templates/report.html.in, every number
# taken from the pipeline's tables.

INVENTORIES := $(foreach d,$(ORDERED_DATASETS),build/$(d)/inventory.tsv)

# concatenates TSV files that share one header line, in the order given
merge_tsv = awk 'FNR == 1 && NR != 1 { next } { print }' $(1) > $(2).tmp && mv -f $(2).tmp $(2)

build/report/inventory.tsv: $(INVENTORIES) $(RUN_SET)
	@mkdir -p $(@D)
	$(quiet)$(call merge_tsv,$(INVENTORIES),$@)

# Where the run's vectors came from, in one sentence (the inventory has it
# per dataset).
build/report/source.tsv: build/report/inventory.tsv workflow/provenance.awk
	$(quiet)awk -f workflow/provenance.awk $< > $@.tmp && mv -f $@.tmp $@

# Provenance tables for the report and every figure README: the parameters
# of every stage (build/params/*.txt, written by param_group) and the
# stores behind each figure (figures/<study>/<NN_name>/stores.tsv, figures.mk).
# (the list of groups is recorded at the end of the Makefile)
build/report/parameters.tsv: build/sets/param-groups.txt $$(patsubst %,build/params/%.txt,$$(sort $$(PARAM_GROUPS)))
	@mkdir -p $(@D)
	$(quiet)awk 'BEGIN { OFS = "\t"; print "stage", "parameter", "value" } \
	  { g = FILENAME; sub(/.*\//, "", g); sub(/\.txt$$/, "", g); \
	    i = index($$0, "="); print g, substr($$0, 1, i - 1), substr($$0, i + 1) }' \
	  $(filter build/params/%,$^) > $@.tmp
	$(quiet)mv -f $@.tmp $@

SUITE_VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(call param_group,report,version=$(SUITE_VERSION))

# Each study's .mk adds its section's tables and values:
#   REPORT_FLAGS += --table NAME=FILE --values FILE   and   REPORT_INPUTS += FILE ...
REPORT_FLAGS += --set suite_version=$(SUITE_VERSION) --values build/report/source.tsv \
  --values build/report/blas.tsv \
  --table inventory=build/report/inventory.tsv --table parameters=build/report/parameters.tsv
REPORT_INPUTS += build/report/inventory.tsv build/report/source.tsv build/report/parameters.tsv \
  build/report/blas.tsv \
  $(wildcard templates/sections/*.html.in)

# every study table is part of the result, quoted or not
REPORT_INPUTS += $(PCA_TABLES) $(ROT_TABLES) $(PLAST_TABLES)

report/index.html: templates/report.html.in $(call prog,qk-report) $(REPORT_INPUTS) \
                   build/params/report.txt $(RUN_SET) $(ALL_FIGURES)
	@mkdir -p $(@D)
	$(call step,REPORT,$@) bin/qk-report --template $< --output $@ $(REPORT_FLAGS)

.PHONY: report
report: report/index.html
