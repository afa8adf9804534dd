# The report in a LaTeX thesis: templates/thesis-example.tex is a short
# chapter that takes every number from report/numbers.tex (\qk{KEY}), its
# tables from report/tables/ and its figures from the figure PDFs;
# `make thesis-example` compiles it with pdflatex (workflow/pdflatex.sh,
# from the repository root, twice, in build/thesis-example/) into
# report/thesis-example.pdf. `make check-latex` builds it and checks the
# log, the figure PDFs and that two builds give the same bytes
# (tests/latex-check.sh). pdfTeX and the LaTeX packages come from
# `workflow/deps.sh latex` (installed when run as root).

THESIS_EXAMPLE_TEX := templates/thesis-example.tex
THESIS_EXAMPLE := $(STAGE)/report/thesis-example.pdf
THESIS_BUILD := build/thesis-example

.PHONY: latex thesis-example check-latex
latex:
	@sh workflow/deps.sh latex

# A thesis example an earlier make left stays beside the report (the
# Makefile's list of what `make report` publishes) only as one made from the
# current report: `make report` brings it up to date with the rest. Without
# pdflatex on the PATH it is not kept (the publication removes it), so it
# never shows other numbers than the report beside it.
THESIS_EXAMPLE_KEPT := $(if $(wildcard $(THESIS_EXAMPLE)),$(if $(wildcard \
  $(addsuffix /pdflatex,$(subst :, ,$(PATH)))),$(THESIS_EXAMPLE)))

# (every figure PDF, not only those the example shows: the example is the
# way a thesis uses them, and its rule the one place that needs them all;
# the LaTeX packages are checked when there is no example yet, so that a
# kept one leaves `make -q report` and `make -n report` quiet)
$(THESIS_EXAMPLE): $(THESIS_EXAMPLE_TEX) workflow/pdflatex.sh $(STAGE)/report/numbers.tex $(REPORT_TEX_TABLES) \
                   $(FIGURE_PDFS) | $(if $(THESIS_EXAMPLE_KEPT),,latex)
	$(call step,LATEX,$(call shown,$@)) workflow/pdflatex.sh --root $(STAGE) $< $(THESIS_BUILD) $@

# (published with the report it is made from: `make thesis-example` is
# `make report` with the example, RESULT_FILES, Makefile)
thesis-example: report

# (on the published report, which then holds the example: RESULT_FILES, Makefile)
check-latex: report $(call prog,qk-plot) | latex
	@FIG_MIN_SHARE=$(FIG_MIN_SHARE) RUN_DATASETS="$(ORDERED_DATASETS)" tests/latex-check.sh $(THESIS_EXAMPLE_TEX) $(THESIS_BUILD) \
	  $(call shown,$(THESIS_EXAMPLE) $(FIGURE_PDFS))
	@tests/names-check.sh latex
