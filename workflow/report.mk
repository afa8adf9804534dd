# The report: report/index.html from templates/report.html.in, every number
# taken from the pipeline's tables.

INVENTORIES := $(foreach d,$(ORDERED_DATASETS),build/$(d)/inventory.tsv)

# concatenates TSV files that share one header line, in the order given
merge_tsv = awk 'FNR == 1 && NR != 1 { next } { print }' $(1) > $(2).tmp && mv -f $(2).tmp $(2)

build/report/inventory.tsv: $(INVENTORIES)
	@mkdir -p $(@D)
	$(call merge_tsv,$^,$@)

SUITE_VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(call param_group,report,version=$(SUITE_VERSION) data=$(if $(DATA),$(DATA),synthetic))

DATA_SOURCE = $(if $(DATA),$(DATA),synthetic (qk-synth, seed $(SEED), scale $(SCALE)))
# Each study's .mk adds its section's tables and values:
#   REPORT_FLAGS += --table NAME=FILE --values FILE   and   REPORT_INPUTS += FILE ...
REPORT_FLAGS += --set suite_version=$(SUITE_VERSION) --set data_source="$(DATA_SOURCE)" \
  --table inventory=build/report/inventory.tsv
REPORT_INPUTS += build/report/inventory.tsv $(wildcard templates/sections/*.html.in)

report/index.html: templates/report.html.in bin/qk-report $(REPORT_INPUTS) \
                   build/params/report.txt build/params/synth.txt $(ALL_FIGURES)
	@mkdir -p $(@D)
	bin/qk-report --template $< --output $@ $(REPORT_FLAGS)

.PHONY: report
report: report/index.html
