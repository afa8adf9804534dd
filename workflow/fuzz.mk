# make fuzz: the libFuzzer targets tests/fuzz/fuzz_*.c, one per parser of
# user-supplied files, each run FUZZ_SECONDS (default 20) from seeds made
# out of tests/data; make fuzz-long: the same, an hour each by default.
# FUZZ_TARGETS="parquet store" narrows the run; make -j2 fuzz runs two
# targets at a time; FUZZ_OPTS passes more libFuzzer options. The library is compiled again with clang, libFuzzer's
# coverage, AddressSanitizer and UndefinedBehaviorSanitizer under
# build/fuzz/, apart from the gcc build. Crashes go to
# build/fuzz/crashes/<target>/, logs to build/fuzz/logs/, the corpus grown
# by earlier runs stays in build/fuzz/work/<target>/.

FUZZ_SECONDS ?= $(if $(filter fuzz-long,$(MAKECMDGOALS)),3600,20)
FUZZ_TARGETS ?= $(patsubst tests/fuzz/fuzz_%.c,%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_CC      := clang
FUZZ_CFLAGS  := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
                -fno-sanitize-recover=undefined
FUZZ_LIB_OBJ := $(LIB_SRC:src/lib/%.c=build/fuzz/obj/lib/%.o)
fuzz_module_lib = build/fuzz/lib/libqk-$(1).a
FUZZ_BINS    := $(FUZZ_TARGETS:%=build/fuzz/bin/fuzz_%)
FUZZ_RUNS    := $(FUZZ_TARGETS:%=fuzz-run-%)

.PHONY: fuzz fuzz-long fuzz-build fuzz-deps $(FUZZ_RUNS)

# clang and the fuzzer runtime, installed only when a fuzz target is built
fuzz-deps:
	@sh workflow/deps.sh fuzz

build/fuzz/obj/lib/%.o: src/lib/%.c $(HEADERS) | fuzz-deps
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(QK_CFLAGS) -c $< -o $@

# one library per module, as in workflow/build.mk
$(foreach m,$(QK_MODULES),$(eval $(call fuzz_module_lib,$(m)): $(filter \
  build/fuzz/obj/lib/$(m)/%,$(FUZZ_LIB_OBJ))))
build/fuzz/lib/libqk-%.a:
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

build/fuzz/bin/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $$(foreach m,$$(call \
  qk_link_modules,tests/fuzz/fuzz_$$*.c tests/fuzz/fuzz.h),$$(call fuzz_module_lib,$$(m))) $(HEADERS) | fuzz-deps
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(QK_CFLAGS) -Itests/fuzz $< $(filter %.a,$^) \
	    $(QK_LIBS) -o $@

# Seeds: small files written by the library's own writers, the test
# fixtures, archives packed by qk-archive (gcc build).
build/fuzz/make-seeds: tests/fuzz/make_seeds.c $(call qk_libs,tests/fuzz/make_seeds.c) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(QK_CFLAGS) $< $(filter %.a,$^) $(QK_LIBS) -o $@

build/fuzz/corpus/.done: tests/fuzz/seeds.sh build/fuzz/make-seeds bin/qk-archive \
                         $(wildcard tests/data/parquet-variants/*.parquet \
                                    tests/data/sniffed-mini/*/data.parquet) workflow/datasets.tsv
	tests/fuzz/seeds.sh build/fuzz/corpus
	@touch $@

fuzz-build: $(FUZZ_BINS) build/fuzz/corpus/.done

# One run per target (each first replays tests/data/fuzz-regressions/<target>/).
$(FUZZ_RUNS): fuzz-run-%: build/fuzz/bin/fuzz_% build/fuzz/corpus/.done
	FUZZ_OPTS="$(FUZZ_OPTS)" tests/fuzz/run.sh $* $(FUZZ_SECONDS)

fuzz fuzz-long: $(FUZZ_RUNS)
	@tests/fuzz/summary.sh $(FUZZ_TARGETS)

# make check replays every committed crash input (tests/data/fuzz-regressions/)
# with gcc builds of the targets: tests/e2e-fuzz-regressions.sh.
FUZZ_REPLAY_BINS := $(patsubst tests/fuzz/fuzz_%.c,build/tests/fuzz-replay/%, \
                      $(wildcard tests/fuzz/fuzz_*.c))

build/tests/fuzz-replay/%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz.h \
                           $$(call qk_libs,tests/fuzz/fuzz_$$*.c tests/fuzz/fuzz.h) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(QK_CFLAGS) -DFUZZ_REPLAY -Itests/fuzz $< tests/fuzz/replay.c \
	    $(filter %.a,$^) $(QK_LIBS) -o $@

check: $(FUZZ_REPLAY_BINS)
