# make archive: dist/qkreport-results-<commit>.tar.gz, a reproducible archive
# of results/, figures/ and report/ (with the LaTeX numbers, the table
# fragments, the figure PDFs and the thesis example, which is compiled first:
# pdflatex must be installed, `sh workflow/deps.sh latex`) and of the
# example's source, whose first entry, MANIFEST, records the suite version,
# the pipeline parameters and the SHA-256 of every file
# (bin/qk-archive, docs/archive.md).  Check it with
#   bin/qk-archive verify dist/qkreport-results-<commit>.tar.gz

ARCHIVE_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
ARCHIVE_FILE   := dist/qkreport-results-$(ARCHIVE_COMMIT).tar.gz
ARCHIVE_INPUTS := results figures report $(THESIS_EXAMPLE_TEX)

# The parameters recorded in MANIFEST; changing one rewrites the archive.
ARCHIVE_PARAMS := --param 'SEED=$(SEED)' --param 'SCALE=$(SCALE)' --param 'BLAS_CORE=$(BLAS_CORE)' \
  --param 'SYNTH_MODE=$(SYNTH_MODE)' --param 'DATA=$(DATA)' --param 'DATASETS=$(strip $(DATASETS))'
$(call param_group,archive,version=$(SUITE_VERSION) SEED SCALE SYNTH_MODE DATA DATASETS)

# report/index.html already depends on every table and figure; they are
# listed too so that the rule stays right if the report stops showing one.
$(ARCHIVE_FILE): build/report/blas.tsv report/index.html $(ALL_FIGURES) $(PCA_TABLES) $(ROT_TABLES) $(PLAST_TABLES) \
                 $(REPORT_OUTPUTS) $(FIGURE_PDFS) $(THESIS_EXAMPLE) $(THESIS_EXAMPLE_TEX) \
                 bin/qk-archive build/params/archive.txt
	@mkdir -p $(@D)
	$(call step,ARCHIVE,$@) bin/qk-archive create --output $@ --suite-version '$(SUITE_VERSION)' $(ARCHIVE_PARAMS) \
	  --param "BLAS=$$(sed -n 's/^blas_library\t//p' build/report/blas.tsv)" \
	  $(ARCHIVE_INPUTS)
	$(call step,VERIFY,$@) bin/qk-archive verify $@

.PHONY: archive
archive: $(ARCHIVE_FILE)
