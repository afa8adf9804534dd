# The report: report/index.html from templates/report.html.in, every number
# taken from the pipeline's tables through the numbers files of qk-summary
# (build/report/*.numbers). The same qk-report step writes those numbers for
# LaTeX: report/numbers.tex (\qkdef{KEY}{VALUE}), the key list report/numbers.md
# and booktabs fragments of the section tables in report/tables/.

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

# The report's table of parameters: the stages' parameters as a user sets
# them; the figure-models group only repeats, by figure, the models that
# PLAST_FIG*_MODEL, PCA_COLLAGE_DATASET and ROT_FIG_DATASET set (figure
# READMEs and the archive read it from parameters.tsv).
build/report/parameters-page.tsv: build/report/parameters.tsv
	$(quiet)awk -F'\t' '$$1 != "figure-models"' $< > $@.tmp && mv -f $@.tmp $@

SUITE_VERSION := $(shell git describe --always --dirty 2>/dev/null || echo unknown)
$(call param_group,report,version=$(SUITE_VERSION))

# The rebuild commands the report and every figure README print: `make
# report` (or `make figures/<study>/<NN>`) and the parameters this run sets
# to other values than their defaults (rebuild_args, config.mk), as the value
# rebuild_args, with a space before it when there are any. (Written here,
# after every stage's parameters are declared.)
REBUILD_ARGS := $(rebuild_args)
$(call write_text,$(REBUILD_VALUES),rebuild_args$(tab)$(if $(REBUILD_ARGS), $(REBUILD_ARGS)))

# The inventory section's numbers.
build/report/inventory.numbers: build/report/inventory.tsv $(call prog,qk-summary)
	$(call step,SUMMARY,inventory) bin/qk-summary --section inventory --input inventory=$< --output $@

# Which figures the run draws with data, as flags the templates test
# ({{if figure.qk-pca.06}}): every figure qk-plot knows, 1 for those whose
# key numbers do not say "drawn: no" (a canvas saying what the figure lacks:
# an input the run does not make, or tables without its model or rows).
build/report/figure-list.txt: $(call prog,qk-plot)
	@mkdir -p $(@D)
	$(quiet)bin/qk-plot --list > $@.tmp && mv -f $@.tmp $@
REPORT_FIGURE_IDS := $(foreach f,$(call shown,$(ALL_FIGURES)),$(word 2,$(subst /, ,$(f)))/$(firstword $(subst _, ,$(word 3,$(subst /, ,$(f))))))
REPORT_FIGURE_NUMBERS := $(ALL_FIGURES:README.md=numbers.tsv)
# figures_drawn FILES: the ids (study/NN) of the figures/<study>/<NN_name>/numbers.tsv
# files that have no "drawn" row saying no
figures_drawn = awk -F'\t' '$$1 == "drawn" && $$2 ~ /^no/ { canvas[FILENAME] = 1 } \
  END { for (i = 1; i < ARGC; i++) if (!(ARGV[i] in canvas)) { n = split(ARGV[i], part, "/"); \
    sub(/_.*/, "", part[n - 1]); printf "%s%s/%s", out++ ? " " : "", part[n - 2], part[n - 1] } }' $(1)
build/report/figures.numbers: build/report/figure-list.txt $(call prog,qk-summary) $(REPORT_FIGURE_NUMBERS) \
    $(call set_record,report-figures,$(REPORT_FIGURE_IDS))
	$(call step,SUMMARY,figures) bin/qk-summary --section figures --input list=$< \
	  --param drawn="$$($(call figures_drawn,$(REPORT_FIGURE_NUMBERS)))" --output $@

# Each study's .mk adds its section's numbers and the tables LaTeX gets:
#   REPORT_FLAGS += --values FILE, REPORT_INPUTS += FILE, REPORT_LATEX_TABLES += NAME ...
REPORT_FLAGS += --set suite_version=$(SUITE_VERSION) --values build/report/source.tsv --values $(REBUILD_VALUES) \
  --values build/report/blas.tsv --values build/report/inventory.numbers \
  --values build/report/figures.numbers --table parameters=build/report/parameters-page.tsv
REPORT_INPUTS += build/report/inventory.numbers build/report/figures.numbers \
  build/report/source.tsv build/report/parameters-page.tsv build/report/blas.tsv $(REBUILD_VALUES) \
  $(wildcard templates/sections/*.html.in)

# every study table is part of the result, quoted or not
REPORT_INPUTS += $(STUDY_TABLES)

# table NAME -> report/tables/NAME.tex with dashes for dots (pca.models -> pca-models.tex)
latex_table_file = $(STAGE)/report/tables/$(subst .,-,$(1)).tex
REPORT_TEX_TABLES = $(foreach t,$(REPORT_LATEX_TABLES),$(call latex_table_file,$(t)))
REPORT_OUTPUTS = $(addprefix $(STAGE)/report/,index.html numbers.tex numbers.md numbers.html) $(REPORT_TEX_TABLES)

$(REPORT_OUTPUTS) &: templates/report.html.in $(call prog,qk-report) $(REPORT_INPUTS) \
                   build/params/report.txt $(RUN_SET) $(ALL_FIGURES)
	@mkdir -p $(STAGE)/report/tables
	$(call step,REPORT,report/index.html) bin/qk-report --template $< --output $(STAGE)/report/index.html \
	  --numbers-tex $(STAGE)/report/numbers.tex --numbers-md $(STAGE)/report/numbers.md \
	  --numbers-html $(STAGE)/report/numbers.html \
	  $(foreach t,$(REPORT_LATEX_TABLES),--latex-table $(t)=$(call latex_table_file,$(t))) \
	  $(REPORT_FLAGS)

.PHONY: report
# `make report`: everything, published all together (RESULT_FILES, Makefile)
