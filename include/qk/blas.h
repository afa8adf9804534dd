/* Which BLAS does the arithmetic: the library's build description and the
 * kernel (core type) it runs. The kernel decides the last bits of every
 * result, so the pipeline fixes it (BLAS_CORE, workflow/blas.mk) and the
 * report and archives record it. */
#ifndef QK_BLAS_H
#define QK_BLAS_H

/* "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH ... Haswell MAX_THREADS=64" */
const char *qk_blas_config(void);
/* The kernel in use, e.g. "Haswell". */
const char *qk_blas_core(void);

#endif
