# Compiling the suite: the library in modules (src/lib/<module>/, one static
# library each) and thin programs (src/qk-*.c), warning-free with gcc -O2
# -Wall -Wextra. Every object, library and program is written under a
# temporary name and renamed, so a build killed while linking never leaves
# a truncated file that looks new.

PKGS      := openblas lapacke libzstd libxxhash snappy zlib libarchive liblz4 sleef
CC        ?= gcc
CFLAGS    ?= -O2 -g
# -ffp-contract=off: no fused multiply-add anywhere, so hand-vectorised
# kernels give the same bits on every instruction set (a no-op for the
# x86-64 baseline, which has no FMA)
# -Wno-missing-field-initializers: an option row (qk_option) without a
# variable of its own is written with its first four fields, the rest zero
# (as git's option tables are)
QK_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-missing-field-initializers \
             -ffp-contract=off -Iinclude \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
QK_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)
# Libraries of one program only (PROG_LIBS_<program>): linked into it
# alone, so the other programs' binaries, and so their identities, stay.
PROG_LIBS_qk-diff := $(shell pkg-config --libs libpng 2>/dev/null)

# The library's modules, bottom up. A module uses only modules below it
# (MODULE_USES_<module>, the whole closure) and implements the headers
# include/qk/NAME.h of MODULE_HEADERS_<module>. The core, io and analysis
# modules never exit (they return a qk_err); cli is the program layer
# (options, qk_die, the stage skeleton); report, synth and archive may exit.
QK_MODULES := core io analysis cli report synth archive
MODULE_HEADERS_core     := common rng stats simd blas defaults
MODULE_HEADERS_io       := parquet thrift store registry source revision heads reader
MODULE_HEADERS_analysis := pca moments taxonomy rotation plasticity
MODULE_HEADERS_cli      := cli die stage values
MODULE_HEADERS_report   := table study pca_tables rotation_tables plasticity_tables numbers plot
MODULE_HEADERS_synth    := synth pqwrite
MODULE_HEADERS_archive  := archive
MODULE_USES_core     :=
MODULE_USES_io       := core
MODULE_USES_analysis := core
MODULE_USES_cli      := io core
MODULE_USES_report   := cli io core
MODULE_USES_synth    := io core
MODULE_USES_archive  := cli io core

# A static library's unresolved symbols are looked up only in the libraries
# after it on the command line: a module comes before the modules it uses.
QK_LINK_ORDER := archive synth report cli analysis io core
module_lib = build/lib/libqk-$(1).a
LIB_SRC   := $(sort $(wildcard $(QK_MODULES:%=src/lib/%/*.c)))
LIB_OBJ   := $(LIB_SRC:src/lib/%.c=build/obj/lib/%.o)
LIB_A     := $(foreach m,$(QK_MODULES),$(call module_lib,$(m)))

# The modules that sources (a program's or test's files) link, in link
# order: those implementing the headers they include, with what they use.
qk_headers_of = $(shell sed -n 's|^\#include "qk/\([a-z_0-9]*\)\.h".*|\1|p' $(1) | sort -u)
qk_modules_of = $(foreach m,$(QK_MODULES),$(if $(filter $(MODULE_HEADERS_$(m)),$(1)),$(m)))
qk_link_modules = $(filter $(foreach m,$(call qk_modules_of,$(call \
  qk_headers_of,$(1))),$(m) $(MODULE_USES_$(m))),$(QK_LINK_ORDER))
# The libraries to link for sources $(1).
qk_libs = $(foreach m,$(call qk_link_modules,$(1)),$(call module_lib,$(m)))

PROG_SRC  := $(sort $(wildcard src/qk-*.c))
# a program too large for one file is a folder src/qk-NAME/ of .c files
PROG_DIRS := $(patsubst src/%/,%,$(sort $(wildcard src/qk-*/)))
# the benchmark programs (bench/qk-bench-*.c, make bench)
BENCH_SRC := $(sort $(wildcard bench/qk-bench-*.c))
PROGS     := $(PROG_SRC:src/%.c=bin/%) $(PROG_DIRS:%=bin/%) $(BENCH_SRC:bench/%.c=bin/%)
TEST_SRC  := $(sort $(wildcard tests/test_*.c))
TEST_BINS := $(TEST_SRC:tests/%.c=build/tests/%)
HEADERS   := $(wildcard include/qk/*.h $(QK_MODULES:%=src/lib/%/*.h))

# What compiles the suite, as a record: another compiler, compiler version
# or flags (make CFLAGS=-O0) rebuilds every object and program. (A stage
# reruns only if its program's code changed: build/progs/<prog>.id.)
COMPILE_RECORD := build/sets/compile.txt
# (written in the make that checks the parameters too, which builds the
# programs first: QK_VALIDATE)
$(call $(if $(QK_VALIDATE),write_record_always,write_record),$(COMPILE_RECORD),cc=$(CC) $(subst $(space),_,$(shell $(CC) --version 2>/dev/null | \
  head -1)) cflags=$(CFLAGS) ldflags=$(LDFLAGS) $(QK_CFLAGS) $(QK_LIBS))

# The figure registry compiled into the programs that need it: qk-plot's
# table of figures and the prototypes of their draw functions, qk-report's
# figure blocks ({{figure ID}}). GEN_<program>: the headers generated for a
# program, found with -Ibuild/gen/<program>; a change of the registry
# regenerates them and relinks the program.
FIGURE_REGISTRY := workflow/figures.rec
GEN_qk-plot := build/gen/qk-plot/figure_draw.h build/gen/qk-plot/figure_table.h
GEN_qk-report := build/gen/qk-report/figure_blocks.h

build/gen/%.h: $(FIGURE_REGISTRY) workflow/figures.awk
	@mkdir -p $(@D)
	$(quiet)awk -f workflow/figures.awk -v emit=$(notdir $*) $(FIGURE_REGISTRY) > $@.tmp
	$(quiet)mv -f $@.tmp $@

build/obj/lib/%.o: src/lib/%.c $(HEADERS) $(COMPILE_RECORD) | deps
	@mkdir -p $(@D)
	$(call step,CC,$<) $(CC) $(CFLAGS) $(QK_CFLAGS) -c $< -o $@.tmp
	$(quiet)mv -f $@.tmp $@

# build/lib/libqk-<module>.a: the objects of src/lib/<module>/
$(foreach m,$(QK_MODULES),$(eval $(call module_lib,$(m)): $(filter build/obj/lib/$(m)/%,$(LIB_OBJ))))
build/lib/libqk-%.a:
	@mkdir -p $(@D)
	$(quiet)rm -f $@.tmp
	$(call step,AR,$@) ar rcs $@.tmp $^
	$(quiet)mv -f $@.tmp $@

bin/%: src/%.c $$(call qk_libs,src/$$*.c) $(HEADERS) $(COMPILE_RECORD)
	@mkdir -p $(@D)
	$(call step,LD,$@) $(CC) $(CFLAGS) $(QK_CFLAGS) $(if $(GEN_$*),-Ibuild/gen/$*) $< $(filter %.a,$^) \
	  $(QK_LIBS) -o $@.tmp
	$(quiet)mv -f $@.tmp $@

bin/qk-bench-%: bench/qk-bench-%.c $$(call qk_libs,bench/qk-bench-$$*.c) $(HEADERS) $(COMPILE_RECORD)
	@mkdir -p $(@D)
	$(call step,LD,$@) $(CC) $(CFLAGS) $(QK_CFLAGS) $< $(filter %.a,$^) $(QK_LIBS) -o $@.tmp
	$(quiet)mv -f $@.tmp $@

build/tests/%: tests/%.c tests/testutil.h $$(call qk_libs,tests/$$*.c tests/testutil.h) $(HEADERS) $(COMPILE_RECORD)
	@mkdir -p $(@D)
	$(call step,LD,$@) $(CC) $(CFLAGS) $(QK_CFLAGS) -Itests $< $(filter %.a,$^) $(CHECK_LIBS) \
	  $(QK_LIBS) -o $@.tmp
	$(quiet)mv -f $@.tmp $@

define program_folder_rule
bin/$(1): $$(wildcard src/$(1)/*.c src/$(1)/*.h) $$(GEN_$(1)) \
          $$(call qk_libs,$$(wildcard src/$(1)/*.c src/$(1)/*.h)) $$(HEADERS) $$(COMPILE_RECORD)
	@mkdir -p $$(@D)
	$$(call step,LD,$$@) $$(CC) $$(CFLAGS) $$(QK_CFLAGS) -Isrc/$(1) $$(if $$(GEN_$(1)),-Ibuild/gen/$(1)) \
	  $$(wildcard src/$(1)/*.c) $$(filter %.a,$$^) $$(PROG_LIBS_$(1)) $$(QK_LIBS) -o $$@.tmp
	$$(quiet)mv -f $$@.tmp $$@
endef
$(foreach p,$(PROG_DIRS),$(eval $(call program_folder_rule,$(p))))
bin/qk-report: $(GEN_qk-report)

.PHONY: programs
programs: $(PROGS)

# A program's identity (build/progs/NAME.id): the SHA-256 of its stripped
# binary without its build ID. Stage rules depend on it rather than on
# bin/NAME, so relinking a program whose code did not change (an edit to a
# comment, or to a library function it does not use) reruns nothing. The
# build ID is left out because the linker computes it over the unstripped
# file, whose debug line tables change when a comment moves lines.
# build/progs/NAME.checked marks when the binary was last hashed (with the
# rule of this file: a new rule hashes every program again); the .id keeps
# its mtime while the hash is the same.
prog = build/progs/$(1).id

write_prog_id = strip --remove-section=.note.gnu.build-id -o build/progs/$(1).strip bin/$(1) && \
  sha256sum < build/progs/$(1).strip | cut -c1-64 > build/progs/$(1).id.new && \
  rm -f build/progs/$(1).strip && \
  { cmp -s build/progs/$(1).id.new build/progs/$(1).id && rm -f build/progs/$(1).id.new || \
    mv -f build/progs/$(1).id.new build/progs/$(1).id; }

.PRECIOUS: build/progs/%.checked build/progs/%.id
build/progs/%.checked: bin/% workflow/build.mk
	@mkdir -p $(@D)
	@$(call write_prog_id,$*) && touch $@

# (A make that builds nothing cannot know whether a program it would relink
# gets another identity: there the .id is made only when missing, so that
# `make -q report` after a complete build exits 0, and `make -n` lists the
# relink but not the stages of the relinked program.)
# `make why` (QK_WHY_DIR) hashes a program relinked since it was last
# hashed, outside the tree, and takes it as remade when its identity
# differs, so that the steps it runs are listed.
ifneq ($(and $(QK_WHY_DIR),$(QK_BUILDS_NOTHING)),)
why_prog_changed = $(shell t=$$(mktemp) && strip --remove-section=.note.gnu.build-id -o "$$t" bin/$(1) \
  2>/dev/null && [ "$$(sha256sum < "$$t" | cut -c1-64)" != "$$(cat build/progs/$(1).id)" ] && echo changed; \
  rm -f "$$t")
$(foreach p,$(patsubst build/progs/%.id,%,$(wildcard build/progs/*.id)),$(if $(and $(wildcard bin/$(p)),$(call \
  why_prog_changed,$(p))),$(eval .PHONY: build/progs/$(p).id)$(shell mkdir -p $(QK_WHY_DIR)/build/progs)$(file \
  >$(QK_WHY_DIR)/build/progs/$(p).id,changed)))
endif
build/progs/%.id: $(if $(QK_BUILDS_NOTHING),|) build/progs/%.checked
	@test -f $@ || { $(call write_prog_id,$*); }
