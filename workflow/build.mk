# Compiling the suite: one static library (src/lib) and thin programs
# (src/qk-*.c), warning-free with gcc -O2 -Wall -Wextra.

PKGS      := openblas lapacke libzstd snappy zlib libarchive
CC        ?= gcc
CFLAGS    ?= -O2 -g
# -ffp-contract=off: no fused multiply-add anywhere, so hand-vectorised
# kernels give the same bits on every instruction set (a no-op for the
# x86-64 baseline, which has no FMA)
QK_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -ffp-contract=off -Iinclude \
             $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
QK_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lpthread -lm
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)

LIB_SRC   := $(sort $(wildcard src/lib/*.c))
LIB_OBJ   := $(LIB_SRC:src/lib/%.c=build/obj/lib/%.o)
LIB_A     := build/lib/libqk.a
PROG_SRC  := $(sort $(wildcard src/qk-*.c))
# a program too large for one file is a folder src/qk-NAME/ of .c files
PROG_DIRS := $(patsubst src/%/,%,$(sort $(wildcard src/qk-*/)))
PROGS     := $(PROG_SRC:src/%.c=bin/%) $(PROG_DIRS:%=bin/%)
TEST_SRC  := $(sort $(wildcard tests/test_*.c))
TEST_BINS := $(TEST_SRC:tests/%.c=build/tests/%)
HEADERS   := $(wildcard include/qk/*.h src/lib/*.h)

build/obj/lib/%.o: src/lib/%.c $(HEADERS) | deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(QK_CFLAGS) -c $< -o $@

$(LIB_A): $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

bin/%: src/%.c $(LIB_A) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(QK_CFLAGS) $< $(LIB_A) $(QK_LIBS) -o $@

build/tests/%: tests/%.c tests/testutil.h $(LIB_A) $(HEADERS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(QK_CFLAGS) -Itests $< $(LIB_A) $(CHECK_LIBS) $(QK_LIBS) -o $@

define program_folder_rule
bin/$(1): $$(wildcard src/$(1)/*.c src/$(1)/*.h) $$(LIB_A) $$(HEADERS)
	@mkdir -p $$(@D)
	$$(CC) $$(CFLAGS) $$(QK_CFLAGS) -Isrc/$(1) $$(wildcard src/$(1)/*.c) $$(LIB_A) $$(QK_LIBS) -o $$@
endef
$(foreach p,$(PROG_DIRS),$(eval $(call program_folder_rule,$(p))))

.PHONY: programs
programs: $(PROGS)
