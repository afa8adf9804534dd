/* Attention plasticity (docs/plasticity.md): for a query at position t and
 * two earlier keys k1, k2 of the same example, p = P(q.k1 > q.k2) under a
 * Gaussian model of the queries near t, and the pairwise plasticity
 * PP = 4 p (1 - p): 1 when the query content decides which key wins, 0 when
 * position fixes the order. Per head the queries are oriented, regressed on
 * position and rotated so that coordinate 1 carries the positional drift
 * (a Householder reflection); the content coordinates 2..d get a mean and a
 * variance per query bin of width B / bin_factor. PP is averaged over every
 * eligible same-example key pair (exactly, or over a seeded sample) per
 * bin and per (inter-key distance, query-to-midpoint distance) cell, and
 * the profiles of the heads are aggregated to model-level scalars. */
#ifndef QK_PLASTICITY_H
#define QK_PLASTICITY_H

#include <stdint.h>

#include "qk/common.h"

enum qk_plast_cov {
    QK_PLAST_COV_DIAG = 0, /* per-bin variances of the content coordinates */
    QK_PLAST_COV_FULL = 1  /* per-bin sample covariance + 1e-12 I */
};

enum qk_plast_pairs {
    QK_PLAST_PAIRS_EXACT = 0, /* every eligible pair of every bin */
    QK_PLAST_PAIRS_SAMPLE = 1 /* pairs_per_bin uniform draws per bin */
};

#define QK_PLAST_N_DECILES 10
#define QK_PLAST_N_QUINTILES 5
#define QK_PLAST_N_LENGTHS 5      /* [0,L/16) [L/16,L/8) [L/8,L/4) [L/4,L/2) [L/2,L] */
#define QK_PLAST_FULL_RIDGE 1e-12 /* added to the full content covariance */
#define QK_PLAST_MIN_BIN_QUERIES 2

typedef struct qk_plast_params {
    int cov;                   /* enum qk_plast_cov */
    int bin_factor;            /* query bins are B / bin_factor wide */
    int64_t min_pairs_per_bin; /* bins with fewer eligible pairs are dropped */
    int64_t pair2d_min_count;  /* heatmap cells with fewer evaluations are NaN */
    int pair_mode;             /* enum qk_plast_pairs */
    int pairs_per_bin;         /* draws per bin in sample mode */
    uint64_t seed;             /* every random choice */
    int64_t max_tokens;        /* rows per kind above which a subset is drawn */
    int normality_max_dims;    /* content dimensions given a KS test */
    double p_alpha;            /* level of q_noise_frac_ks_p_lt_alpha */
    int time_floor;            /* also fill qk_plast_head.timing (0); never changes a result */
} qk_plast_params;

/* The defaults: QK_DEFAULT_PLAST_* (include/qk/defaults.h). */
void qk_plast_params_default(qk_plast_params *p);
/* Checks ranges; returns -1 with a message naming the parameter. */
int qk_plast_params_check(const qk_plast_params *p, qk_err *err);

/* The position grid shared by every head of a dataset: query bin j holds
 * positions t with floor(t * bin_factor / B) = j, heatmap cells are B
 * wide on both axes. */
typedef struct qk_plast_grid {
    int bucket_size;    /* B */
    int bin_factor;
    int context_length; /* L: the per-length ranges are fractions of it */
    int n_bins;         /* query bins 0 .. n_bins - 1 */
    int n_cells;        /* heatmap cells per axis */
} qk_plast_grid;

/* A grid covering positions 0 .. max_position. */
int qk_plast_grid_init(qk_plast_grid *g, int bucket_size, int bin_factor, int context_length,
                       int64_t max_position, qk_err *err);
double qk_plast_bin_start(const qk_plast_grid *g, int bin);
double qk_plast_bin_centre(const qk_plast_grid *g, int bin);
/* The query bin of a position (may be >= n_bins for positions off the grid). */
int64_t qk_plast_bin_of(const qk_plast_grid *g, int64_t position);

/* The rows of one kind of one head, as the store holds them. */
typedef struct qk_plast_rows {
    int64_t n;
    const float *vector; /* n * d, row-major */
    const int32_t *position;
    const int32_t *example_id;
    const int32_t *bucket;
    /* What the rows are: rows with the same non-NULL source hold the same
     * data, so a cache may reuse what it made from them; NULL: unknown. */
    const void *source;
} qk_plast_rows;

/* Scalars of a profile (docs/plasticity.md, "Profile scalars"): segments of
 * the observed bin range, averaged
 * over their bins without weights. NaN where a segment holds no bin. */
typedef struct qk_plast_scalars {
    double ap_overall; /* head: query-count weighted; model: mean of the heads */
    double first20, last20, drop;
    double decile[QK_PLAST_N_DECILES];
    double quintile[QK_PLAST_N_QUINTILES];
    double length[QK_PLAST_N_LENGTHS];
    double recovery;     /* mean(d6, d7) - mean(d4, d5) */
    double profile_mean; /* unweighted mean over the bins with a value */
    int first_bin, last_bin; /* -1 when the profile is empty */
    int n_bins;              /* bins with a value */
} qk_plast_scalars;

/* CPU time of one head (qk_plast_params.time_floor; thread CPU seconds)
 * and of its floor: the work the computation cannot avoid, timed alone
 * right after the analysis with the same operands (docs/plasticity.md,
 * "The floor"): the BLAS calls at the same shapes (S = K M^T and the
 * variance GEMM of every block of pairs) and one PP per evaluated (pair,
 * bin) through the same batched PP. Exact diagonal mode only; NaN
 * otherwise. */
typedef struct qk_plast_timing {
    double total;      /* the whole qk_plast_analyse of the head */
    double floor_gemm; /* the GEMMs alone */
    double floor_pp;   /* the PP evaluations alone */
    int64_t n_pp;      /* how many */
    int warm_up;       /* 1: the first head of its cache (or of none), which pays the
                          thread's one-time costs: its buffers' first use, the layout */
} qk_plast_timing;

/* Everything computed for one (query head, key head). */
typedef struct qk_plast_head {
    int d, n_bins, n_cells;
    int64_t n_q, n_k; /* rows used (after subsampling) */
    /* positional regression of the oriented queries (steps 3-5) */
    double q_r2_pos, q_beta_norm;
    double alpha_pos, beta_pos, sigma2_pos; /* coordinate 1 refit against t */
    double q_r2_scalar, q_mae_baseline, q_mae_proj, q_mae_ratio;
    double resid0_skew, resid0_kurt, resid0_ks_p;
    double noise_med_abs_skew, noise_med_abs_kurt, noise_med_ks_p, noise_frac_ks_lt_alpha;
    double *component_r2;     /* [d] */
    double *component_weight; /* [d], sums to 1 */
    /* the 1-D profile, [n_bins] each */
    int64_t *bin_queries;
    double *bin_tau;     /* mean query position; NaN without queries */
    int64_t *bin_pairs;  /* eligible same-example pairs */
    int64_t *bin_evals;  /* pairs evaluated (0 for dropped bins) */
    double *bin_ap;      /* mean PP; NaN for dropped bins */
    /* the 2-D heatmap, [n_cells * n_cells], index dist_bin * n_cells + mid_bin */
    int64_t *cell_evals;
    double *cell_ap;     /* NaN below pair2d_min_count */
    int64_t n_key_pairs; /* same-example pairs eligible for some bin */
    int64_t n_evals;     /* (pair, bin) evaluations */
    qk_plast_scalars s;
    qk_plast_timing timing; /* with params time_floor only */
} qk_plast_head;

void qk_plast_head_init(qk_plast_head *h, int d, const qk_plast_grid *g);
void qk_plast_head_free(qk_plast_head *h);

/* What a thread keeps from one head to the next: the layout of the last
 * head's positions (the heads of a layer share their tokens) and the
 * oriented keys of its key head (query heads of one key head share them).
 * A result never depends on what the cache held. */
typedef struct qk_plast_cache qk_plast_cache;
qk_plast_cache *qk_plast_cache_new(void);
void qk_plast_cache_free(qk_plast_cache *c);

/* Analyses one head: q and k rows of dimension d. layer and q_head key the
 * random streams; cache (NULL: none) is the calling thread's. Returns 0,
 * or -1 with a message (bad positions, too few rows, non-finite vectors).
 * h must be initialised with the same d and g. */
int qk_plast_analyse(const qk_plast_rows *q, const qk_plast_rows *k, int d,
                     const qk_plast_grid *g, const qk_plast_params *p, int layer, int q_head,
                     qk_plast_cache *cache, qk_plast_head *h, qk_err *err);

/* The model level (docs/plasticity.md, "Model level"): per bin and per cell the mean over the
 * heads that have a value, then the scalars of the model profile; the
 * model ap_overall is the mean of the heads' values. */
typedef struct qk_plast_model {
    int n_bins, n_cells;
    int n_heads;       /* heads given */
    int n_heads_valid; /* heads with a finite ap_overall */
    double *bin_ap;    /* [n_bins] */
    int *bin_heads;
    double *cell_ap;   /* [n_cells * n_cells] */
    int *cell_heads;
    int64_t *cell_evals;
    qk_plast_scalars s;
} qk_plast_model;

void qk_plast_model_compute(qk_plast_model *m, const qk_plast_head *heads, int n_heads,
                            const qk_plast_grid *g);
void qk_plast_model_free(qk_plast_model *m);

/* Scalars of a profile ap[n_bins] (NaN = no value). weights (the query
 * counts) give ap_overall; without them it is NaN. */
void qk_plast_profile_scalars(const double *ap, const int64_t *weights, const qk_plast_grid *g,
                              qk_plast_scalars *s);

/* ---- the building blocks, exposed for the tests ------------------------------- */

/* erfc(x) by the vectorisable approximation of plasticity_erfc.c: relative
 * error below 2e-15 for 0 <= x < 26.5, 0 from there on (erfc(26.5) <
 * 1e-306), 2 - erfc(-x) for negative x (absolute error below 3e-15); NaN gives
 * NaN. The batch and the scalar
 * forms give the same bits on every x86-64 machine (SSE2 or AVX kernel). */
double qk_plast_erfc(double x);
void qk_plast_erfc_n(const double *x, double *y, int64_t n);
/* The batches take the AVX kernel where the level of the vector code
 * (qk_isa) is AVX2 or above, else the SSE2 baseline. For the tests, which
 * check that both give the same bits: on = 1 asks for AVX (if the machine
 * has it), 0 for the baseline, -1 for the level's choice again; returns
 * what was asked before (-1: the level's). */
int qk_plast_erfc_use_avx(int on);
/* Standard normal CDF, 0.5 qk_plast_erfc(-z / sqrt 2). */
double qk_plast_phi(double z);
/* PP of D ~ N(z, 1) (qk_plast_pp(z, 1)). */
double qk_plast_pp_z(double z);
/* PP of D ~ N(m, v): qk_plast_pp_y of m^2 / v (formed in double, then
 * rounded to float); v = 0 gives PP 0, or 1 when m = 0 too. */
double qk_plast_pp(double m, double v);

/* PP(y) = 4 Phi(z) Phi(-z) of y = z^2 in single precision (plasticity_pp.c):
 * absolute error below 6e-8; 0 from y = 60 on (PP(60) = 1.4e-14) and for
 * NaN. The batch gives the same bits. */
float qk_plast_pp_y(float y);
void qk_plast_pp_y_n(const float *y, float *pp, int64_t n);

/* A head's PP sums per (heatmap cell, query bin), and its evaluations per
 * cell: element (cell, b) of sum is sum[cell * stride + b], cell = column *
 * n_cells + row. One spare row after the last cell. */
typedef struct qk_plast_acc {
    int n_cells, stride;     /* stride: n_bins, padded for whole vectors */
    double two_b, inv_two_b; /* 2B, and 1 / 2B when 2B is a power of two (else 0) */
    double *sum;             /* [(n_cells * n_cells + 1) * stride] */
    int64_t *count;          /* [n_cells * n_cells + 1] */
} qk_plast_acc;

/* The geometry of acc for grid g (sum and count left NULL). */
void qk_plast_acc_shape(qk_plast_acc *acc, const qk_plast_grid *g);

/* A same-example key pair: keys a < b in a head's key order (position of
 * a <= position of b), eligible for the query bins first .. n_bins - 1. */
typedef struct qk_plast_key_pair {
    int32_t a, b;
    int32_t first;
    int32_t dist_cell; /* |t_a - t_b| / B */
    int64_t pos_sum;   /* t_a + t_b */
} qk_plast_key_pair;

/* A block of key pairs evaluated together (the exact diagonal mode): pair i
 * is evaluated at bins f = max(first, b0) .. last: m = S[a][b] - S[b][b]
 * (score: the S rows of the pairs' keys, key k at row k - key0, n_bins
 * columns) rounded to float, y = m^2 / max(v, FLT_MIN) in float with v =
 * V[i][b - b0] (rows of last - b0 + 1), and PP(y) is added to acc in the
 * pair's heatmap column (dist_cell) and the row that rows gives: one byte
 * per evaluation, pair after pair, QK_PLAST_NO_ROW for a bin not kept
 * (nothing added). y gets y and then PP of every evaluation, laid out as
 * rows (qk_plast_block_evals floats), and needs QK_PLAST_Y_SLACK floats of
 * room after them, which the kernels may write. acc's counts are left
 * alone. */
#define QK_PLAST_NO_ROW 0xff
#define QK_PLAST_Y_SLACK 8
typedef struct qk_plast_block {
    const qk_plast_key_pair *pairs;
    int64_t n;
    const uint8_t *rows;
    const double *score;
    int64_t key0;
    int n_bins;
    const float *v;
    float *y;
    int b0, last;
} qk_plast_block;
/* The evaluations of a block, bins not kept included: the bytes of its
 * rows. */
int64_t qk_plast_block_evals(const qk_plast_block *blk);

void qk_plast_pp_block(const qk_plast_acc *acc, const qk_plast_block *blk);
/* The heatmap rows of bins 0..n-1 of a pair for a block's rows: the row
 * qk_plast_acc_add gives x = tau2[b] - pos_sum, or QK_PLAST_NO_ROW where
 * tau2[b] is NaN (a bin not kept). */
void qk_plast_heatmap_rows(const qk_plast_acc *acc, const double *tau2, double pos_sum, int n,
                           uint8_t *out);
/* count[r] += the number of rows[0..n) equal to r, for each r other than
 * QK_PLAST_NO_ROW; the rows other than QK_PLAST_NO_ROW must not decrease
 * (those of a pair's bins do not). */
void qk_plast_count_rows(const uint8_t *rows, int n, int64_t *count);
/* Adds one PP value to acc and counts it: bin `bin`, heatmap column col,
 * row floor(x / 2B) of x = 2 tau_b - pos_sum, clamped to the grid (the
 * rows of a block's evaluations are made the same way). */
void qk_plast_acc_add(const qk_plast_acc *acc, int col, int bin, double x, double pp);
/* out[c] = (ka[c] - kb[c])^2 rounded to float, c < d: the operand of the
 * variance GEMM (differences and squares in double). */
void qk_plast_pair_squares(const double *ka, const double *kb, int d, float *out);

/* Sign vector s[d]: the sign of the unweighted mean of the per-bucket mean
 * keys, +1 where it is 0. k is n x d. */
void qk_plast_orientation(const double *k, int64_t n, int d, const int32_t *bucket,
                          double *sign);
/* The same in two steps: the distinct buckets of bucket[0..n) in ascending
 * order (returns how many) and each row's place among them (slot); then the
 * sign from each bucket's sum of rows (part, nb x d) and count. */
int64_t qk_plast_bucket_slots(const int32_t *bucket, int64_t n, int64_t *slot);
void qk_plast_orientation_sign(const double *part, const int64_t *count, int64_t nb, int d,
                               double *sign);

/* The Householder vector w of H = I - 2 w w^T with H u = e1, u = beta/|beta|.
 * Returns 0 (H = I, w untouched) when |beta| < 1e-12 or u is e1. */
int qk_plast_householder(const double *beta, int d, double *w);
/* out <- x H = x - 2 (x w) w^T for the n rows of x (out may be x). */
void qk_plast_reflect_rows(const double *x, int64_t n, int d, const double *w, double *out);

/* w_i = max(r2_i, 0) / sum_j max(r2_j, 0), or 1/d when the sum is <= 0. */
void qk_plast_component_weights(const double *r2, int d, double *w);

/* Bias-corrected sample skewness and excess kurtosis (NaN for n < 3 / n < 4
 * or constant data). */
void qk_plast_skew_kurt(const double *x, int64_t n, double *skew, double *kurt);
/* Two-sided one-sample Kolmogorov-Smirnov test of x[n] against N(0,1): the
 * p-value of the exact distribution of D_n. */
double qk_plast_ks_norm(const double *x, int64_t n);
/* Its statistic sup |F_n - Phi| over x[n]: the number a full sort of x
 * gives; NaN for n <= 0 or a NaN in x. */
double qk_plast_ks_statistic(const double *x, int64_t n);
/* P(D_n >= x) for the two-sided statistic of n samples. */
double qk_plast_kolmogorov_sf(int64_t n, double x);
/* k tests of n values each, from their statistics stat[k]: the median of
 * their p-values (as qk_plast_median gives it) and how many are below
 * alpha, the same numbers as from every p-value. p falls as D grows, so
 * where the p-values are costly exact Smirnov sums only those at the
 * middle places and at the crossing of alpha are computed. */
void qk_plast_ks_summary(int64_t n, const double *stat, int k, double alpha, double *median_p,
                         int *below);
/* Median of x[n] (mean of the middle two for an even count; NaN if any is
 * NaN, or n <= 0); sorts x. */
double qk_plast_median(double *x, int n);

#endif
