# The published folders. Every rule writes what the user reads (results/,
# figures/, report/) into the stage, build/stage/, at the same paths under
# it; a goal that succeeds then publishes what it made (workflow/publish.sh),
# so these folders change only when a run succeeds, and all together. A
# failed run, at any step, leaves them as the last good run left them.
#
#   $(call publish_goal,GOAL,PATHS,PREREQUISITES[,all])
#     GOAL (a goal the user types) publishes PATHS (files and folders
#     ending in /, relative to the tree) once PREREQUISITES are built; with
#     "all", the published folders then hold PATHS and nothing else.

STAGE := build/stage
export QK_STAGE := $(STAGE)/
# shown PATHS: the paths as the user knows them, without the stage
shown = $(patsubst $(STAGE)/%,%,$(1))

# A published file edited, removed or added since the last publication
# (by hand, or by an older make): every goal publishes again.
PUBLISH_FORCE := $(if $(shell workflow/publish.sh --changed),FORCE)

# (published-now.txt: the goals this run published, for its last line,
# workflow/run-failed.sh; the goal's stamp build/publish/GOAL.done, with / as -, records that
# PATHS as built were published; the list is a record, so a goal that
# publishes other paths publishes again)
publish_stamp = build/publish/$(subst /,-,$(1)).done
# the stamp of `make report`, which publishes everything (the archive packs
# the published folders once it is made)
PUBLISH_ALL := $(call publish_stamp,report)
define publish_rule
.PHONY: $(1)
$(1): $(call publish_stamp,$(1))
$(call publish_stamp,$(1)): $(3) $(call set_record,publish-$(subst /,-,$(1)),$(2)) $(PUBLISH_FORCE)
	$$(call step,PUBLISH,$(1)) workflow/publish.sh $(or $(4),some) build/sets/publish-$(subst /,-,$(1)).txt
	@touch $$@ $(if $(4),$(PUBLISH_PARTS)) && echo $(1) >> build/publish/published-now.txt
$(if $(4),,$(eval PUBLISH_PARTS += $(call publish_stamp,$(1))))
endef
publish_goal = $(eval $(call publish_rule,$(1),$(2),$(3),$(4)))
# The stamps of the goals that publish a part (a figure, a study's tables):
# publishing everything publishes those parts too.
PUBLISH_PARTS :=
