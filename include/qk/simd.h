/* The choice between the two builds of the library's vectorised loops.
 * A loop written with GCC vector types is compiled twice: for AVX2 (four
 * doubles an instruction) and for the x86-64 baseline (SSE2, two). Both
 * builds do the same IEEE additions and multiplications in the same order,
 * without fused multiply-adds, so their results agree bit for bit; the
 * AVX2 build is only faster. */
#ifndef QK_SIMD_H
#define QK_SIMD_H

/* 1 if the AVX2 build is to run: the CPU has AVX2 and the environment
 * variable QK_SIMD is not "generic" (which the tests use to compare the
 * two builds). */
int qk_simd_avx2(void);

#endif
