# Every analysed query head in one place (docs/heads.md): results/heads.csv
# joins the per-head tables of the three analyses, one row a query head;
# report/heads.html shows them, sortable and filterable; results/README.md
# says what every column of every results/ table holds
# (workflow/columns.tsv); `make heads/DATASET/lLLhHH` draws one head's
# figures into heads/DATASET/lLLhHH/.

# The studies in the order of their first dataset in the run, and each
# study's per-head tables: its PCA heads, its rotation heads (the
# cross-model study's under results/rotation/) and its plasticity heads.
heads_unique = $(if $(1),$(firstword $(1)) $(call heads_unique,$(filter-out $(firstword $(1)),$(1))))
HEADS_STUDIES := $(strip $(call heads_unique,$(foreach d,$(ORDERED_DATASETS),$(call study_of,$(d)))))
heads_rotation_dir = $(if $(filter attention_plasticity,$(1)),rotation,$(1))
heads_tables = $(STAGE)/results/$(1)/qk_heads.csv $(STAGE)/results/$(call \
  heads_rotation_dir,$(1))/rotated.csv $(STAGE)/results/$(1)/head_metrics.csv
HEADS_INPUTS := $(foreach s,$(HEADS_STUDIES),$(call heads_tables,$(s)))

HEADS_TABLE := $(STAGE)/results/heads.csv
$(HEADS_TABLE): $(HEADS_INPUTS) $(RUN_REGISTRY) $(call prog,qk-heads) $(RUN_SET)
	@mkdir -p $(@D)
	$(call step,HEADS,results/heads.csv) bin/qk-heads --registry $(RUN_REGISTRY) --output $@ $(HEADS_INPUTS)

# the page: the table, each head's plasticity profile and the column meanings
HEADS_COLUMNS := workflow/columns.tsv
HEADS_PROFILES := $(foreach s,$(HEADS_STUDIES),$(s)=$(STAGE)/results/$(s)/head_bucket_plasticity.csv)
HEADS_PAGE := $(STAGE)/report/heads.html
$(HEADS_PAGE): $(HEADS_TABLE) templates/heads.html.in $(HEADS_COLUMNS) $(call prog,qk-heads) \
    $(foreach p,$(HEADS_PROFILES),$(lastword $(subst =, ,$(p))))
	@mkdir -p $(@D)
	$(call step,PAGE,report/heads.html) bin/qk-heads --page $(HEADS_TABLE) --template templates/heads.html.in \
	  --columns $(HEADS_COLUMNS) $(addprefix --profile ,$(HEADS_PROFILES)) --output $@

# results/README.md: the columns of every table this run publishes under
# results/, from the one table of column meanings
HEADS_README := $(STAGE)/results/README.md
HEADS_README_TABLES = $(sort $(filter $(STAGE)/results/%.csv,$(STUDY_TABLES) $(RESULT_TABLES)))
$(HEADS_README): $(HEADS_COLUMNS) workflow/results-readme.awk $$(HEADS_README_TABLES)
	@mkdir -p $(@D)
	$(quiet)awk -f workflow/results-readme.awk -v stage=$(STAGE)/ $(HEADS_COLUMNS) $(HEADS_README_TABLES) > $@.tmp
	$(quiet)mv -f $@.tmp $@

RESULT_TABLES += $(HEADS_TABLE) $(HEADS_README)
REPORT_PAGES += $(HEADS_PAGE)
# `make heads`: the page, the table, the README and every table it describes
$(call publish_goal,heads,$(call shown,$(HEADS_README_TABLES) $(HEADS_README) $(HEADS_PAGE)), \
  $(HEADS_README_TABLES) $(HEADS_README) $(HEADS_PAGE))

# ---- one head's figures: make heads/DATASET/lLLhHH ----------------------------------
# Its PCA scatter (the drawing of figure qk-pca/06), its {a, b} plane and the
# complement pairs of that plane (qk-rotation/01 and 08) and its plasticity
# profile beside its model's mean (attention-plasticity/05), each a folder
# with figure.png, .svg, .pdf and .gp under heads/DATASET/lLLhHH/. Built on
# demand, through the cache like any figure, and published alone: `make
# report` neither makes nor removes them.
HEAD_GOALS := $(filter heads/%,$(MAKECMDGOALS))
head_dataset = $(word 2,$(subst /, ,$(1)))
head_name = $(word 3,$(subst /, ,$(1)))
head_build = build/heads/$(1)/$(2)
head_out = $(STAGE)/heads/$(1)/$(2)
HEAD_FIG_FILES = $(addprefix $(1)/,figure.png figure.svg figure.pdf figure.gp numbers.tsv inputs.tsv readme.tsv)

# head_plot OUT, FIGURE, DATASET, INPUTS (NAME=FILE), VALUES (NAME=VALUE)
define head_plot
$(call HEAD_FIG_FILES,$(1)) &: $(foreach i,$(4),$(lastword $(subst =, ,$(i)))) $(call prog,qk-plot) \
    templates/gnuplot/style.gp build/params/figures.txt
	$$(call step,PLOT,$(call shown,$(1))) bin/qk-plot --figure $(2) --out $(1) --model $(3) \
	  $(addprefix --input ,$(4)) $(addprefix --value ,$(5)) --min-share $(FIG_MIN_SHARE)
HEAD_FILES += $(call HEAD_FIG_FILES,$(1))
endef

# head_rules DATASET, lLLhHH
define head_rules
$(if $(filter $(1),$(RUN_DATASETS)),,$$(error make heads/$(1)/$(2): $(1) is no dataset of this run \
  (DATASETS=$(RUN_DATASETS))))
$(if $(shell echo '$(2)' | grep -xE 'l[0-9][0-9]+h[0-9][0-9]+'),,$$(error make heads/$(1)/$(2): \
  expected a head lLLhHH (layer LL, head HH: l03h07)))
HEAD_FILES :=
$(call head_build,$(1),$(2))/pca_points.tsv $(call head_build,$(1),$(2))/pca_panels.tsv &: \
    build/$(1)/store.qks $(call prog,qk-pca-collage) build/params/pca-collage.txt build/params/pca-fit.txt \
    build/params/blas.txt
	@mkdir -p $(call head_build,$(1),$(2))
	$$(call step,HEADPCA,$(1)/$(2)) bin/qk-pca-collage --head $(2) --max-points $(PCA_COLLAGE_POINTS) \
	  $(if $(filter-out 0,$(PCA_MAX_ROWS)),--max-rows $(PCA_MAX_ROWS)) \
	  --points-output $(call head_build,$(1),$(2))/pca_points.tsv \
	  --panels-output $(call head_build,$(1),$(2))/pca_panels.tsv $$<
$(addprefix $(call head_build,$(1),$(2))/,ab_points.tsv complement_points.tsv points_panels.tsv) &: \
    build/$(1)/store.qks build/$(1)/rotation_axes.bin $(call prog,qk-rotation-points) \
    build/params/rotation-points.txt build/params/blas.txt
	@mkdir -p $(call head_build,$(1),$(2))
	$$(call step,HEADROT,$(1)/$(2)) bin/qk-rotation-points --head $(2) --max-points $(ROT_FIG_POINTS) \
	  --complement-max-points $(ROT_FIG_COMPLEMENT_POINTS) --axes build/$(1)/rotation_axes.bin \
	  --ab-output $(call head_build,$(1),$(2))/ab_points.tsv \
	  --complement-output $(call head_build,$(1),$(2))/complement_points.tsv \
	  --panels-output $(call head_build,$(1),$(2))/points_panels.tsv $$<
# the head's rows of its study's profile table
$(call head_build,$(1),$(2))/profile.csv: $(call plast_dir,$(1))/head_bucket_plasticity.csv
	@mkdir -p $$(@D)
	$(quiet)awk -F, -v model='$(patsubst $(call study_model_prefix,$(call study_of,$(1)))%,%,$(1))' \
	  -v layer='$(patsubst l%,%,$(firstword $(subst h, ,$(2))))' \
	  -v head='$(lastword $(subst h, ,$(2)))' \
	  'NR == 1 || ($$$$1 == model && $$$$2 + 0 == layer + 0 && $$$$3 + 0 == head + 0)' $$< > $$@.tmp
	$(quiet)mv -f $$@.tmp $$@
$(call head_plot,$(call head_out,$(1),$(2))/pca_scatter,qk-pca/06,$(1),points=$(call \
  head_build,$(1),$(2))/pca_points.tsv panels=$(call head_build,$(1),$(2))/pca_panels.tsv \
  heads=$(STAGE)/results/$(call study_of,$(1))/qk_heads.csv registry=$(RUN_REGISTRY),seed=- panels=1)
$(call head_plot,$(call head_out,$(1),$(2))/ab_plane,qk-rotation/01,$(1),points=$(call \
  head_build,$(1),$(2))/ab_points.tsv panels=$(call head_build,$(1),$(2))/points_panels.tsv \
  heads=build/$(1)/rotated.tsv registry=$(RUN_REGISTRY))
$(call head_plot,$(call head_out,$(1),$(2))/complement_planes,qk-rotation/08,$(1),points=$(call \
  head_build,$(1),$(2))/complement_points.tsv panels=$(call head_build,$(1),$(2))/points_panels.tsv \
  heads=build/$(1)/rotated.tsv pairs=build/$(1)/complement_pairs.tsv registry=$(RUN_REGISTRY))
$(call head_plot,$(call head_out,$(1),$(2))/plasticity_profile,attention-plasticity/05,$(1),profile=$(call \
  head_build,$(1),$(2))/profile.csv mean=$(call plast_dir,$(1))/model_bucket_plasticity.csv \
  registry=$(RUN_REGISTRY))
$$(call publish_goal,heads/$(1)/$(2),heads/$(1)/$(2)/,$$(HEAD_FILES))
endef
$(foreach g,$(HEAD_GOALS),$(eval $(call head_rules,$(call head_dataset,$(g)),$(call head_name,$(g)))))
