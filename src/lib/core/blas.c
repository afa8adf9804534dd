/* The BLAS in use (include/qk/blas.h). */
#include "qk/blas.h"

/* OpenBLAS's own description functions (cblas.h declares them only in some
 * versions). */
char *openblas_get_config(void);
char *openblas_get_corename(void);

const char *qk_blas_config(void) { return openblas_get_config(); }

const char *qk_blas_core(void) { return openblas_get_corename(); }
