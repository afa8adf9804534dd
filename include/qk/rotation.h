/* The planar rotation model of one attention head (docs/rotation.md):
 * the queries of a query head and the keys of its key head are pooled; the
 * drift axis a is the pooled covariance of the vectors with token position,
 * the separation axis b the top direction of the query-key difference
 * second moment orthogonal to a. Every {a, b} metric follows from the
 * per-kind moments (qk/moments.h); the shared-frequency sinusoid fit of the
 * a-projections needs the rows. The complement of {a, b} is decomposed into
 * principal pairs whose angle-position relation, Q/K separability and
 * variance share are measured, and the Orthogonal Drift Alignment lemma
 * (no direction orthogonal to a correlates with position) is checked.
 *
 * Everything is computed in double; every sign is canonical, so equal
 * inputs give equal outputs bit for bit. */
#ifndef QK_ROTATION_H
#define QK_ROTATION_H

#include <stdint.h>
#include <stdio.h>

#include "qk/common.h"
#include "qk/moments.h"

#define QK_ROT_MIN_KIND 3      /* rows per kind below which a head is skipped */
#define QK_ROT_MAX_PAIRS 30    /* complement pairs kept per head */
#define QK_ROT_ANGLE_CUTS 72   /* branch cuts tried by angle_r_best */
#define QK_ROT_OMEGA_GRID QK_DEFAULT_ROT_OMEGA_GRID  /* log-spaced frequencies of the omega grid */
#define QK_ROT_OMEGA_REFINE QK_DEFAULT_ROT_OMEGA_REFINE /* golden-section steps around the best one */
#define QK_ROT_ACTIVE_TAU QK_DEFAULT_ROT_ACTIVE_TAU  /* default |angle_r_best| of an active plane */
#define QK_ROT_ACTIVE_TAU_HIGH 0.3
/* ||c|| at most this times sqrt(tr Sigma Var t): no drift, a falls back to
 * the top principal axis (flag_degenerate_a). */
#define QK_ROT_DEGENERATE_A 1e-12
/* Top eigenvalue of P_a C_delta P_a at most this times tr C_delta: nothing
 * separates off a, b is a fixed canonical direction (flag_degenerate_b). */
#define QK_ROT_DEGENERATE_B 1e-12
/* A projection whose variance is at most this fraction of the pooled total
 * variance counts as constant: its correlation with position is 0. */
#define QK_ROT_ZERO_VAR 1e-12

enum qk_rot_b_mode {
    QK_ROT_B_EIGEN = 0,   /* top eigenvector of P_a C_delta P_a (default) */
    QK_ROT_B_CENTROID = 1 /* P_a (mu_Q - mu_K), normalised */
};

enum qk_rot_b_sign {
    QK_ROT_SIGN_CANONICAL = 0, /* b.(mu_Q - mu_K) >= 0 */
    QK_ROT_SIGN_RAW = 1        /* the eigensolver's sign */
};

typedef struct qk_rot_options {
    int b_mode;       /* enum qk_rot_b_mode */
    int b_sign;       /* enum qk_rot_b_sign */
    int omega_grid;   /* grid points (>= 3) */
    int omega_refine; /* golden-section steps (>= 0) */
} qk_rot_options;

void qk_rot_options_default(qk_rot_options *o);

/* The rows of one kind: n vectors of dim float32 and their positions. */
typedef struct qk_rot_rows {
    const float *vector; /* [n*dim] row-major */
    const int32_t *position;
    int64_t n;
} qk_rot_rows;

/* The shared-frequency sinusoid fit (docs/rotation.md, step 5). */
typedef struct qk_rot_omega {
    double omega;           /* rad/token at the best R^2; NaN if undefined */
    double r_squared;       /* within-kind R^2 there */
    int at_bound;           /* 1: the best grid point is the lowest frequency */
    double lin_r_squared_w; /* within-kind R^2 of a per-kind straight line */
} qk_rot_omega;

/* Everything qk-rotate writes for one head. */
typedef struct qk_rot_head {
    int dim;
    int64_t n_q, n_k;
    int32_t t_min, t_max; /* pooled positions */
    int flag_degenerate_a, flag_degenerate_b;
    double position_r;
    double r_q_a, r_k_a;     /* signed */
    double alpha_q, alpha_k; /* OLS slopes per token, signed */
    double mu_q_a, mu_k_a, mu_q_b, mu_k_b; /* raw cluster means */
    double bias_strength;    /* mu_q_a * alpha_k */
    double separation_strength;
    double var_frac_a, var_frac_b, plane_var_fraction;
    double content_var_b;
    double slope_ratio;      /* |alpha_k| / |alpha_q| */
    double bias_range;       /* bias_strength * (t_max - t_min) */
    double total_var;        /* tr Sigma_pool */
    double b_centroid_cos, resid_sep_frac;
    qk_rot_omega omega;
} qk_rot_head;

/* What qk_rot_omega_fit_cached keeps from one call to the next: the sums
 * of the grid that depend on the positions alone. */
typedef struct qk_rot_omega_cache qk_rot_omega_cache;

/* Buffers reused from head to head by one thread. */
typedef struct qk_rot_work {
    int dim;
    qk_moments pooled;
    double *a, *b;   /* [dim] the axes of the last head */
    double *m;       /* [dim] mu_Q - mu_K */
    double *matrix;  /* [dim*dim] C_delta, then P_a C_delta P_a */
    double *scratch; /* [4*dim] */
    double *block;   /* rows converted to double for projecting */
    double *y;       /* projections on a of the rows (Q then K) */
    int64_t y_cap;
    qk_rot_omega_cache *omega; /* the omega fit's sums of the last positions */
} qk_rot_work;

void qk_rot_work_init(qk_rot_work *w, int dim);
void qk_rot_work_free(qk_rot_work *w);

/* 1 if a head with these counts is analysed (n_q >= 3 and n_k >= 3). */
int qk_rot_head_usable(int64_t n_q, int64_t n_k);

/* Analyses one head: qk_rot_axes, qk_rot_metrics, then the omega fit on
 * the a-projections of the rows. mq and mk are the moments of q and k.
 * Leaves a and b in w->a, w->b. Returns -1 with a message if a moment is
 * not finite or an eigensolver fails. */
int qk_rot_analyse(const qk_rot_rows *q, const qk_rot_rows *k, const qk_moments *mq,
                   const qk_moments *mk, const qk_rot_options *o, qk_rot_work *w,
                   qk_rot_head *out, qk_err *err);

/* ---- the steps, exposed for tests and the complement stage --------------- */

/* Pools the moments into w->pooled and finds the axes a and b (docs/rotation.md,
 * 2.2-2.3) into w->a and w->b; sets the degeneracy flags and the counts. */
int qk_rot_axes(const qk_moments *mq, const qk_moments *mk, const qk_rot_options *o,
                qk_rot_work *w, qk_rot_head *out, qk_err *err);

/* The metrics (docs/rotation.md, step 4) for given unit axes a and
 * b (not necessarily the ones qk_rot_axes found: the tests flip them) and
 * the pooled moments. Fills every field of out except the counts, the
 * positions, bias_range, the flags and omega. scratch holds 2*dim doubles. */
void qk_rot_metrics(const qk_moments *mq, const qk_moments *mk, const qk_moments *pooled,
                    const double *a, const double *b, double *scratch, qk_rot_head *out);

/* The sinusoid fit (docs/rotation.md, step 5) on y_q[n_q] at positions t_q and
 * y_k[n_k] at t_k: y = c + A cos(w t') + B sin(w t') per kind, w shared,
 * t' = t - t_min. grid log-spaced w in [pi/4 T, 20 pi/T], T = t_max -
 * t_min, then refine golden-section steps on log w around the best one.
 * NaN (at_bound 0) where T = 0 or the values are constant within kinds. */
void qk_rot_omega_fit(const double *y_q, const int32_t *t_q, int64_t n_q, const double *y_k,
                      const int32_t *t_k, int64_t n_k, int grid, int refine,
                      qk_rot_omega *out);

/* Frees a cache; NULL is an empty one. */
void qk_rot_omega_cache_free(qk_rot_omega_cache *c);

/* How many calls took their positional sums from c (0 for NULL). */
int64_t qk_rot_omega_cache_hits(const qk_rot_omega_cache *c);

/* qk_rot_omega_fit with the positional sums of the grid taken from *cache
 * when the positions (both kinds, in order) and the grid are those of the
 * last call that reached the grid, else made and kept there. *cache starts
 * NULL, is allocated on first use, belongs to one thread and is freed with
 * qk_rot_omega_cache_free; a call that ends before the grid (no rows, T =
 * 0, constant values) leaves it as it was. The same bits as
 * qk_rot_omega_fit. */
void qk_rot_omega_fit_cached(const double *y_q, const int32_t *t_q, int64_t n_q,
                             const double *y_k, const int32_t *t_k, int64_t n_k, int grid,
                             int refine, qk_rot_omega_cache **cache, qk_rot_omega *out);

/* Pearson r of the projection on the unit vector v with position, for rows
 * with moments m: v.g / sqrt(v'Sv var t); 0 when var t = 0 or v'Sv <=
 * zero_var. scratch holds dim doubles. */
double qk_rot_correlation(const double *v, const qk_moments *m, double zero_var,
                          double *scratch);

/* Makes the entry of largest magnitude of v[n] positive (the first one on
 * ties); returns 1 if v was negated. */
int qk_rot_canonical_sign(double *v, int n);

/* ---- complement ------------------------------------------------------------ */

typedef struct qk_comp_pair {
    double var_frac;     /* (lambda_2i + lambda_2i+1) / V_perp */
    double angle_r;      /* Pearson(atan2(w, u), t) on the pool, raw cut */
    double angle_r_best; /* the signed r at the cut of largest |r| */
    double best_cut;     /* that cut psi in radians, in [0, 2 pi) */
    double cls_acc;      /* balanced accuracy of the Q/K Fisher LDA */
    double radial_cv;    /* sd(rho) / mean(rho) */
} qk_comp_pair;

typedef struct qk_comp_head {
    int n_pairs;            /* min(30, (d - 2) / 2) */
    double complement_var;  /* V_perp: sum of the d - 2 eigenvalues */
    double residual_pos_r;  /* max |r| with position over b and the basis */
    int n_active, n_active_high; /* |angle_r_best| >= tau, >= 0.3 */
    double active_var_frac; /* sum of var_frac over the active pairs */
    double max_abs_angle_r; /* max |angle_r_best| */
    double ring_cls_acc;    /* mean cls_acc over active pairs, NaN if none */
    qk_comp_pair pair[QK_ROT_MAX_PAIRS];
} qk_comp_head;

typedef struct qk_comp_work {
    int dim;
    qk_moments pooled;
    double *basis;   /* [(dim-2)*dim] complement eigenvectors, one a row */
    double *lambda;  /* [dim] their eigenvalues, descending */
    double *qr;      /* [dim*dim] Q of the QR of [a b]: its last d-2 columns
                        span the complement */
    double *tmp;     /* [dim*dim] */
    double *reduced; /* [dim*dim] the covariance in complement coordinates */
    double *evec;    /* [dim*dim] its eigenvectors */
    double *scratch; /* [4*dim] */
    double *block;   /* rows converted to double */
    double *coord_block; /* [2 * QK_ROT_MAX_PAIRS * block rows] their pair coordinates */
    double *proj;    /* pair coordinates of the rows, centred positions */
    int64_t proj_cap;
} qk_comp_work;

void qk_comp_work_init(qk_comp_work *w, int dim);
void qk_comp_work_free(qk_comp_work *w);

/* Complement of the unit axes a, b for one head (docs/rotation.md, "One head:
 * the complement"), given
 * the pooled moments of its rows (qk_moments_pool of the two kinds, as
 * qk_rot_axes leaves them in qk_rot_work.pooled): basis, eigenvalues,
 * residual_pos_r, then the pairs on the rows q (first) and k with the active
 * threshold tau. Returns -1 with a message if a moment is not finite or
 * LAPACK fails. */
int qk_comp_analyse(const qk_rot_rows *q, const qk_rot_rows *k, const qk_moments *pooled,
                    const double *a, const double *b, double tau, qk_comp_work *w,
                    qk_comp_head *out, qk_err *err);

/* The basis step alone: copies the moments to w->pooled, fills w->basis,
 * w->lambda, n_pairs, complement_var and residual_pos_r. */
int qk_comp_basis(const qk_moments *pooled, const double *a, const double *b, qk_comp_work *w,
                  qk_comp_head *out, qk_err *err);

/* Pearson r of the angles theta[n] with positions t[n], at the raw atan2
 * cut (r_raw) and at the best of the QK_ROT_ANGLE_CUTS cuts psi_j = 2 pi j
 * / 72 (wrap(theta - psi) into (-pi, pi]; returns that signed r and sets
 * *best_cut = psi). Angles are in [-pi, pi]. */
double qk_comp_angle_r(const double *theta, const double *t, int64_t n, double *r_raw,
                       double *best_cut);

/* The angles theta[r] = atan2(w[r], u[r]) of n points, within 3.5 ulp of
 * the exact ones (SLEEF's atan2 without fused multiply-adds: the same bits
 * on every x86-64 CPU, four at a time where AVX2 is present). */
void qk_comp_angles(const double *u, const double *w, int64_t n, double *theta);

/* Balanced in-sample accuracy of the two-class Fisher LDA on 2-D points
 * (x_a[i], y_a[i]) of class a and (x_b[i], y_b[i]) of class b:
 * w = S_w^-1 (m_a - m_b), S_w the count-weighted within-class covariance;
 * a point is put in class a when w.p > w.(m_a + m_b)/2. Returns
 * (correct_a/n_a + correct_b/n_b) / 2. */
double qk_comp_lda_balanced(const double *x_a, const double *y_a, int64_t n_a,
                            const double *x_b, const double *y_b, int64_t n_b);

/* ---- the axes file ---------------------------------------------------------- */

/* rotation_axes.bin (docs/rotation.md): what qk-complement needs of each
 * head that qk-rotate analysed, so that it does not recompute the moments.
 * Little-endian. A 32-byte header: magic "QKROTAX" NUL, u32 version, u32
 * dim, u32 heads, u32 0, u64 checksum (XXH3-64, seed 0, of every byte
 * after the header). Then per head: i32 layer, head, kv_head, 0; i64 rows;
 * f64 pos_mean, pos_var; f64 a[dim], b[dim], mean[dim], cov_pos[dim]; the
 * upper triangle of the pooled covariance, row by row (dim(dim+1)/2 f64). */
#define QK_ROT_AXES_MAGIC "QKROTAX"
#define QK_ROT_AXES_VERSION 2u
#define QK_ROT_AXES_HEADER 32u

typedef struct qk_rot_axes_writer {
    FILE *fp;
    int dim;
    uint32_t n_heads;
    void *hash; /* XXH3 state of the bytes after the header */
    double *buffer; /* one record */
} qk_rot_axes_writer;

/* Starts the file on fp (a placeholder header is written). */
int qk_rot_axes_begin(qk_rot_axes_writer *w, FILE *fp, int dim, qk_err *err);
int qk_rot_axes_add(qk_rot_axes_writer *w, int layer, int head, int kv_head, const double *a,
                    const double *b, const qk_moments *pooled, qk_err *err);
/* Writes the real header; the caller then commits or closes fp. */
int qk_rot_axes_finish(qk_rot_axes_writer *w, qk_err *err);

typedef struct qk_rot_axes_file {
    int dim;
    int n_heads;
    int *layer, *head, *kv_head;
    double *a, *b;       /* [n_heads*dim] */
    qk_moments *pooled;  /* [n_heads] */
} qk_rot_axes_file;

/* Reads and checks (size, magic, version, checksum) an axes file. */
int qk_rot_axes_load(const char *path, qk_rot_axes_file *f, qk_err *err);
void qk_rot_axes_free(qk_rot_axes_file *f);
/* Index of the head (layer, head), or -1. */
int qk_rot_axes_find(const qk_rot_axes_file *f, int layer, int head);

#endif
