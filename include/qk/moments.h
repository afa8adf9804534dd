/* First and second moments of one kind of vectors (the queries or the keys
 * of a head) together with their token positions: everything the combined
 * PCA and the rotation model need from the rows, computed once.
 *
 * All moments use the divisor n (population moments); the PCA ratios and
 * correlations do not depend on the divisor as long as it is the same
 * everywhere. */
#ifndef QK_MOMENTS_H
#define QK_MOMENTS_H

#include <stddef.h>
#include <stdint.h>

typedef struct qk_moments {
    int dim;
    int64_t n;        /* rows */
    double *mean;     /* [dim] column means */
    double *cov;      /* [dim*dim] covariance S, full symmetric, row-major */
    double *cov_pos;  /* [dim] covariance of each column with position, g */
    double pos_mean;  /* mean position */
    double pos_var;   /* variance of the position */
} qk_moments;

/* A zeroed array of n doubles on a 64-byte boundary, released with free().
 * Every operand handed to BLAS is allocated so: with the same alignment in
 * every thread, the kernels take the same path and round the same way, so
 * results do not depend on which thread computed them. */
double *qk_doubles(size_t n);

/* Allocates zeroed moments of dimension dim (n = 0). */
void qk_moments_init(qk_moments *m, int dim);
void qk_moments_free(qk_moments *m);
/* Copies src into dst (both initialised with the same dim). */
void qk_moments_copy(qk_moments *dst, const qk_moments *src);

/* Computes the moments of n rows x[n*dim] (row-major float32) with
 * positions t[n], in one pass over the rows: blocks of rows are converted
 * to double, centred on the block mean and multiplied with CBLAS (dsyrk,
 * dgemv); the blocks are merged with qk_moments' count-weighted rule.
 * m must be initialised with the rows' dimension; n may be 0. */
void qk_moments_compute(qk_moments *m, const float *x, const int32_t *t, int64_t n);

/* The moments of the union of two sets of rows, from the moments of each
 * (docs/rotation.md, step 1): with weights w_a = n_a/n, w_b = n_b/n and
 * m = mean_a - mean_b,
 *   mean    = w_a mean_a + w_b mean_b
 *   cov     = w_a S_a + w_b S_b + w_a w_b m m^T
 *   cov_pos = w_a g_a + w_b g_b + w_a w_b m (tbar_a - tbar_b)
 *   pos_var = w_a v_a + w_b v_b + w_a w_b (tbar_a - tbar_b)^2.
 * out must be initialised with the same dim and be distinct from a and b. */
void qk_moments_pool(qk_moments *out, const qk_moments *a, const qk_moments *b);

/* Sum of the diagonal of the covariance: the total variance. */
double qk_moments_trace(const qk_moments *m);

/* 1 if every value of the moments is finite. */
int qk_moments_finite(const qk_moments *m);

#endif
