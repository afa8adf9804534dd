# make why [GOAL...] [VAR=VALUE...]: for every step that `make GOAL` (report
# by default) would run now, one line with the reason, from the records
# the cache keeps (docs/cache.md): a parameter that changed, an input file,
# a program, the dataset set, or a missing output; "up to date" when
# nothing would run. workflow/why.sh asks a make that builds nothing (-n)
# with the same parameters; that make writes the records as they would be
# into a temporary folder outside the tree (QK_WHY_DIR), never into build/.
WHY_GOALS := $(filter-out why,$(MAKECMDGOALS))
.PHONY: why $(WHY_GOALS)
why:
	@workflow/why.sh "$(MAKE)" $(or $(WHY_GOALS),report)
# the goals named after why are what it explains, not built
$(WHY_GOALS): ; @:
