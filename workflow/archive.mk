# make archive: dist/qkreport-results-<commit>[-<params>].tar.gz, a
# reproducible archive of results/, figures/ and report/ (with the LaTeX
# numbers, the table fragments, the figure PDFs and the thesis example, which
# is compiled first: pdflatex must be installed, `sh workflow/deps.sh latex`)
# and of the example's source, whose first entry, MANIFEST, records the suite
# version, every parameter group of the run, the BLAS library and the SHA-256
# of every file (bin/qk-archive, docs/archive.md). Check it with
#   bin/qk-archive verify dist/qkreport-results-<commit>.tar.gz

# The name: the commit (SUITE_VERSION), and when the run sets parameters to other values than
# their defaults (DATA, DATASETS, ...: rebuild_args, config.mk), the first 8
# hex digits of the SHA-256 of those arguments, so that archives of other
# parameters or data folders do not take each other's name.
# (the suite version: the commit, "-dirty" when the tree has changes, so that
# an archive of edited code never takes the name of the commit's)
ARCHIVE_COMMIT := $(SUITE_VERSION)
ARCHIVE_PARAMS_ID := $(if $(REBUILD_ARGS),-$(shell printf '%s' $(call \
  shell_word,$(REBUILD_ARGS)) | sha256sum | cut -c1-8))
ARCHIVE_FILE   := dist/qkreport-results-$(ARCHIVE_COMMIT)$(ARCHIVE_PARAMS_ID).tar.gz
ARCHIVE_INPUTS := results figures report $(THESIS_EXAMPLE_TEX)

# The parameters MANIFEST records: every line of every parameter group
# (build/params/<group>.txt, the report's parameter table) as
# "<group>.<name>=<value>"; a changed one rewrites the archive (through
# build/report/parameters.tsv).
archive_params = $(foreach g,$(sort $(PARAM_GROUPS)),$(foreach l,$(call param_lines,$(g)),--param \
  $(call shell_word,$(g).$(call unhide_spaces,$(l)))))

# It packs the published folders, once this run published them all
# (PUBLISH_ALL, publish.mk).
$(ARCHIVE_FILE): build/report/blas.tsv $(PUBLISH_ALL) $(THESIS_EXAMPLE_TEX) \
                 bin/qk-archive build/report/parameters.tsv
	@mkdir -p $(@D)
	$(call step,ARCHIVE,$@) bin/qk-archive create --quiet --output $@ --suite-version '$(SUITE_VERSION)' $(archive_params) \
	  --param "BLAS=$$(sed -n 's/^blas_library\t//p' build/report/blas.tsv)" \
	  $(ARCHIVE_INPUTS)
	$(call step,VERIFY,$@) bin/qk-archive verify --quiet $@

.PHONY: archive
archive: $(ARCHIVE_FILE)
