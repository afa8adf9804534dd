/* Combined query/key PCA of one attention head (docs/pca.md): the
 * queries of a query head and the keys of its key head are pooled, the
 * pooled covariance is decomposed exactly (LAPACKE), and each of the top
 * components gets its explained-variance ratio and the Pearson correlation
 * of each kind's projections with the token positions. Signs are made
 * canonical and the per-head summary metrics derived. */
#ifndef QK_PCA_H
#define QK_PCA_H

#include <stdint.h>

#include "qk/common.h"
#include "qk/moments.h"

#define QK_PCA_N_PC 10        /* components kept per head */
#define QK_PCA_ANCHOR 0.05    /* |r_q| below this: the sign follows r_k */
#define QK_PCA_MIN_KIND 3     /* rows per kind below which a head is skipped */
#define QK_PCA_MIN_ROWS 11    /* pooled rows below which a head is skipped */
/* A projection whose variance is at most this fraction of the pooled total
 * variance counts as constant: its correlation is 0 (the zero-variance
 * guard; with exact arithmetic the variance would be 0). */
#define QK_PCA_ZERO_VAR 1e-12

/* The rows of one kind: n vectors of dim float32 and their positions. */
typedef struct qk_pca_rows {
    const float *vector; /* [n*dim] row-major */
    const int32_t *position;
    int64_t n;
} qk_pca_rows;

/* Everything computed for one head. */
typedef struct qk_pca_head {
    int n_pc;                       /* min(10, dim) */
    int64_t n_q, n_k;
    double total_var;               /* trace of the pooled covariance */
    double eigenvalue[QK_PCA_N_PC]; /* pooled covariance (divisor n) */
    double ev[QK_PCA_N_PC];         /* eigenvalue / total_var */
    double r_q[QK_PCA_N_PC];        /* canonical Pearson r, Q rows */
    double r_k[QK_PCA_N_PC];        /* canonical Pearson r, K rows */
    double pos_var_q, pos_var_k;    /* sum_i ev_i r_i^2 */
    double pc0_share_q, pc0_share_k;/* ev_0 r_0^2 / pos_var (0 if pos_var = 0) */
    double mu_q0, mu_k0;            /* mean projection on PC0 (pooled-mean centred) */
    double sep0;                    /* |mu_q0 - mu_k0| */
    double fisher0;                 /* (mu_q0-mu_k0)^2 / (var q'_0 + var k'_0) */
    double acc01;                   /* LDA on (PC0, PC1), resubstitution accuracy */
    double acc0;                    /* best single threshold on PC0 */
    double alpha_q0, beta_k0;       /* OLS slopes of q'_0 on t_q, k'_0 on t_k */
} qk_pca_head;

/* Buffers reused from head to head by one thread. */
typedef struct qk_pca_work {
    int dim;
    qk_moments pooled;
    double *components; /* [QK_PCA_N_PC*dim]: canonical unit vectors, one a row */
    double *scratch;    /* [2*dim] */
    double *block;      /* rows converted to double for projecting */
    double *proj;       /* projections of the rows on PC0 and PC1 */
    int64_t proj_cap;   /* rows proj has room for */
} qk_pca_work;

void qk_pca_work_init(qk_pca_work *w, int dim);
void qk_pca_work_free(qk_pca_work *w);

/* 1 if a head with these counts is analysed (n_q >= 3, n_k >= 3, n >= 11). */
int qk_pca_head_usable(int64_t n_q, int64_t n_k);

/* Analyses one head: qk_pca_fit, then qk_pca_metrics. mq and mk are the
 * moments of q and k (computed with qk_moments_compute; a key head's
 * moments can serve all its query heads). Fills *out and w->components.
 * Returns -1 with a message if the eigensolver fails or a moment is not
 * finite. */
int qk_pca_analyse(const qk_pca_rows *q, const qk_pca_rows *k, const qk_moments *mq,
                   const qk_moments *mk, qk_pca_work *w, qk_pca_head *out, qk_err *err);

/* The fit from the moments alone (docs/pca.md, steps 2-6): pooled covariance, top
 * components, EV, canonical r_q and r_k (and the counts, total_var and
 * eigenvalues). Leaves the canonical components in w->components. */
int qk_pca_fit(const qk_moments *mq, const qk_moments *mk, qk_pca_work *w, qk_pca_head *out,
               qk_err *err);

/* The derived metrics (docs/pca.md, step 7) for a head fitted by qk_pca_fit with the
 * same work area; acc01 and acc0 project every row on PC0 and PC1. */
void qk_pca_metrics(const qk_pca_rows *q, const qk_pca_rows *k, const qk_moments *mq,
                    const qk_moments *mk, qk_pca_work *w, qk_pca_head *out);

/* ---- the steps, exposed for tests and the later stages ------------------ */

/* The n_keep largest eigenpairs of the symmetric dim x dim matrix a
 * (row-major; only its upper triangle is read) with LAPACKE_dsyevr:
 * values descending, vectors[i*dim ...] the unit eigenvector of values[i]. */
int qk_pca_eigen(const double *a, int dim, int n_keep, double *values, double *vectors,
                 qk_err *err);

/* Pearson r of the projection on the unit vector v with the position, for
 * rows with moments m: v.g / sqrt(v'Sv var(t)). Returns 0 when var(t) is 0
 * or v'Sv <= zero_var (the zero-variance guard). scratch holds dim doubles. */
double qk_pca_correlation(const double *v, const qk_moments *m, double zero_var,
                          double *scratch);

/* The sign rule (docs/pca.md, step 6): 1 if the component is to be negated. The
 * anchor is r_q when |r_q| >= 0.05, else r_k; negate when the anchor is
 * below 0 (an anchor of exactly 0 keeps the sign). */
int qk_pca_should_flip(double r_q, double r_k);

/* Resubstitution accuracy of the two-class linear discriminant with
 * empirical priors on 2-D points (a: n_a points of class A, b: n_b points
 * of class B; points interleaved x,y). w = S_w^-1 (m_a - m_b) with S_w the
 * count-weighted within-class covariance (divisor n_a and n_b); a point is
 * put in A when w.x > w.(m_a + m_b)/2 + ln(n_b/n_a). */
double qk_lda2_accuracy(const double *a, int64_t n_a, const double *b, int64_t n_b);

/* Best accuracy of a single threshold separating the values a[n_a] from
 * b[n_b] (either class above). a and b are reordered. */
double qk_threshold_accuracy(double *a, int64_t n_a, double *b, int64_t n_b);

#endif
