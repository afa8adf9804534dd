# What the user typed is checked before any work: a make that builds first
# runs `make QK_VALIDATE=1 qk-validate` (Makefile), which writes no record,
# builds the programs the checks need and checks every parameter or setting
# the command line or the environment gives (checked_by, config.mk), with
# the programs' own parsers (workflow/check-params.sh). A value refused
# stops the run there, with one line naming it, before any stage ran.
# (DATA, DATASETS and the registry are checked as the Makefile is read:
# datasets.mk.)

ifneq ($(QK_VALIDATE),)
var_typed = $(if $(filter command% environment% override,$(origin $(1))),1,0)
VALIDATE_PROGRAMS := $(sort $(foreach v,$(CHECKED_VARS),$(filter qk-%,$(firstword $(param_check.$(v))))))

# the qkreport.conf of every dataset of the run (every key, value and label)
VALIDATE_CONFS := $(if $(strip $(DATA)),$(wildcard $(foreach d,$(RUN_DATASETS),$(DATA_DIR)/$(d)/qkreport.conf)))

.PHONY: qk-validate
qk-validate: $(addprefix bin/,$(sort $(VALIDATE_PROGRAMS) qk-load qk-report))
	@{ $(foreach v,$(CHECKED_VARS),printf '%s\037%s\037%s\037%s\n' $(v) $(call shell_word,$($(v))) \
	  '$(param_check.$(v))' $(call var_typed,$(v));) } | workflow/check-params.sh "$(REGISTRY_IDS) $(RUN_DATASETS)"
	@$(foreach c,$(VALIDATE_CONFS),bin/qk-load --check-conf $(call data_path,$(c:$(DATA_DIR)/%=%)) &&) true
endif
