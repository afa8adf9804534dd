# Stage qk-load: one validated binary store per dataset.

.SECONDEXPANSION:
build/%/store.qks build/%/inventory.tsv: $$(call dataset_input,$$*) bin/qk-load $(REGISTRY)
	@mkdir -p build/$*
	bin/qk-load --quiet --registry $(REGISTRY) --dataset $* $(DATA_DIR)/$* \
	  -o build/$*/store.qks --inventory build/$*/inventory.tsv

STORES := $(foreach d,$(RUN_DATASETS),build/$(d)/store.qks)
.PHONY: load
load: $(STORES)
