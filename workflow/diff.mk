# Comparing runs and tracing numbers (docs/diff.md):
#   make diff A=<x> B=<y>   what differs between two runs (bin/qk-diff): each
#                           side an archive of make archive, a folder holding
#                           results/ figures/ report/, or a numbers.tex; with
#                           neither, the previous published generation
#                           (build/publish/previous, kept by publish.sh) and
#                           the published folders; A=published: the published
#                           findings (workflow/published.tsv) and the run B
#                           (default: the published folders)
#   THESIS=<.tex files or folders>  only the numbers those files use
#   make why [GOAL]         why each step of GOAL (report) would run now
# The page goes to build/diff/diff.html, outside the published folders.

# ---- the run's record ------------------------------------------------------------------------
# report/run.tsv: the parameters, programs and input files of the run, and
# its id (workflow/run-record.sh); the report's numbers carry the id.
RUN_RECORD := $(STAGE)/report/run.tsv
RUN_PROGRAMS := $(filter-out qk-archive qk-diff qk-bench-%,$(notdir $(PROGS)))
# (the parameter groups as the whole Makefile declares them: $$ expands them
# after it is read)
$(RUN_RECORD): workflow/run-record.sh build/sets/param-groups.txt \
    $$(patsubst %,build/params/%.txt,$$(sort $$(PARAM_GROUPS))) $(foreach p,$(RUN_PROGRAMS),$(call prog,$(p))) \
    $(foreach d,$(ORDERED_DATASETS),build/$(d)/source.txt) $(RUN_SET)
	@mkdir -p $(@D)
	$(call step,RECORD,run) workflow/run-record.sh $@ '$(SUITE_VERSION)' '$(sort $(PARAM_GROUPS))' \
	  '$(RUN_PROGRAMS)' '$(ORDERED_DATASETS)'

# the run's id and version as report numbers (run.id: numbers.tex, the thesis example)
build/report/run.numbers: $(RUN_RECORD) $(call prog,qk-summary)
	@mkdir -p $(@D)
	$(call step,SUMMARY,run) bin/qk-summary --section run --input record=$< --output $@

REPORT_FLAGS += --values build/report/run.numbers
# (the report's rule is read already: its prerequisite is added here)
$(REPORT_OUTPUTS): build/report/run.numbers
# published with the report (RESULT_FILES, Makefile), so archives carry it
RESULT_TABLES += $(RUN_RECORD)

# ---- make diff -------------------------------------------------------------------------------
A ?=
B ?=
THESIS ?=
PUBLISHED_FINDINGS := workflow/published.tsv
DIFF_DIR := build/diff
DIFF_PREVIOUS := build/publish/previous

.PHONY: diff why
diff: bin/qk-diff
	$(quiet)rm -rf $(DIFF_DIR)
ifeq ($(A),published)
	$(quiet)bin/qk-diff --published $(PUBLISHED_FINDINGS) --output $(DIFF_DIR)/diff.html $(or $(B),.)
else
	$(quiet)$(if $(A)$(B),,test -d $(DIFF_PREVIOUS) || { echo "make diff: no previous published run is kept yet" \
	  "($(DIFF_PREVIOUS): a publication that changes the published folders keeps the one it replaces);" \
	  "give A=... B=..." >&2; exit 2; })
	$(quiet)bin/qk-diff $(foreach t,$(THESIS),--thesis $(t)) --output $(DIFF_DIR)/diff.html \
	  $(or $(A),$(DIFF_PREVIOUS)) $(or $(B),.)
endif
