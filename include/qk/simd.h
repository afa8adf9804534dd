/* The instruction set of the library's vector code, one switch for all of it.
 *
 * Vector loops are built for several levels and chosen at run time: the
 * x86-64 baseline ("scalar": SSE2 at most), AVX2 (with FMA) and AVX-512. The
 * best level the CPU has is used, or the lower one the environment variable
 * QK_ISA names (avx512, avx2 or scalar; never one the CPU lacks), read once.
 * Every level gives the same bits: the loops of each level do the same IEEE
 * operations in the same order (docs/performance.md). No file is compiled
 * with -march. */
#ifndef QK_SIMD_H
#define QK_SIMD_H

#include "qk/common.h"

enum { QK_ISA_SCALAR = 0, QK_ISA_AVX2 = 1, QK_ISA_AVX512 = 2 };

/* The level in use (QK_ISA_*). */
int qk_isa(void);
/* The level in use; -1 and err if QK_ISA names no instruction set (a
 * program calls it before its work, to refuse the value). */
int qk_isa_check(qk_err *err);
/* The best level the CPU runs, whatever QK_ISA says. */
int qk_isa_best(void);
/* "avx512", "avx2" or "scalar" */
const char *qk_isa_name(int level);
/* Uses `want` (at most the best the CPU has) from now on and returns the
 * level in use before: the tests compare the levels with it. */
int qk_isa_use(int want);
/* Forgets the level chosen: the next qk_isa() reads QK_ISA again (the
 * tests change it). */
void qk_isa_reread(void);

/* 1 if the loops built for AVX2 and AVX-512 alike (GCC vector types,
 * four doubles an instruction) are to run: qk_isa() is AVX2 or above. */
int qk_simd_avx2(void);

#endif
