/* Population truth of a planted head: the exact per-kind moments over all
 * positions 0 .. L-1 (t uniform on the integers, no sampling: the mean is
 * the average of the planted mean over t, the covariance that of the
 * planted mean over t plus the content noise, and the covariance with
 * position that of the planted mean), and from them, with equal Q and K
 * weight, the metrics of the rotation model (docs/rotation.md, "One head:
 * the {a, b} plane") and the PC0 metrics of the combined PCA (docs/pca.md,
 * "What is computed for one head"). The content noise's split (over
 * positions by a kind's ramp, over documents by its doc share) changes none
 * of these moments. */
#include "qk/synth.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- moments of the position features --------------------------------------
 * Every planted mean is linear in the features f(t) = (s, cos w_p s,
 * sin w_p s, ...) with s = t - (L-1)/2, whose moments over the L positions
 * have closed forms through the Dirichlet kernel:
 *   sum cos(w_p s) cos(w_q s) = (D(w_p - w_q) + D(w_p + w_q)) / 2,
 *   sum sin(w_p s) sin(w_q s) = (D(w_p - w_q) - D(w_p + w_q)) / 2,
 * and every sum of an odd function of s vanishes. */

typedef struct feature_moments {
    int n;        /* 1 + 2 planes */
    double *mean; /* n */
    double *cov;  /* n x n */
    double *cov_t;/* n: covariance with position */
} feature_moments;

static double dirichlet_sum(double w, int L)
{
    double sum_cos, sum_s_sin;
    qk_synth_dirichlet(w, L, &sum_cos, &sum_s_sin);
    return sum_cos;
}

static void feature_moments_init(feature_moments *f, const qk_synth_model *m)
{
    int n = 1 + 2 * m->n_planes, L = m->context;
    f->n = n;
    f->mean = qk_calloc((size_t)n, sizeof(double));
    f->cov = qk_calloc((size_t)n * n, sizeof(double));
    f->cov_t = qk_calloc((size_t)n, sizeof(double));
    double *second = qk_calloc((size_t)n * n, sizeof(double));
    double var_t = qk_synth_sd_t(L) * qk_synth_sd_t(L);
    second[0] = var_t;
    for (int p = 0; p < m->n_planes; p++) {
        int cp = 1 + 2 * p, sp = cp + 1;
        double sum_cos, sum_s_sin;
        qk_synth_dirichlet(m->plane[p].freq, L, &sum_cos, &sum_s_sin);
        f->mean[cp] = sum_cos / L;
        second[0 * n + sp] = second[sp * n + 0] = sum_s_sin / L;
        for (int q = 0; q < m->n_planes; q++) {
            int cq = 1 + 2 * q, sq = cq + 1;
            double dm = dirichlet_sum(m->plane[p].freq - m->plane[q].freq, L);
            double dp = dirichlet_sum(m->plane[p].freq + m->plane[q].freq, L);
            second[cp * n + cq] = 0.5 * (dm + dp) / L;
            second[sp * n + sq] = 0.5 * (dm - dp) / L;
        }
    }
    for (int i = 0; i < n; i++) {
        f->cov_t[i] = second[0 * n + i]; /* E[f s], as E[s] = 0 */
        for (int j = 0; j < n; j++)
            f->cov[i * n + j] = second[i * n + j] - f->mean[i] * f->mean[j];
    }
    free(second);
}

static void feature_moments_free(feature_moments *f)
{
    free(f->mean);
    free(f->cov);
    free(f->cov_t);
}

/* The kind's mean coefficients as a linear map of the features (d x n). */
static void kind_feature_map(const qk_synth_model *m, int kind, int n, double *map)
{
    const qk_synth_kind *q = &m->kind[kind];
    int d = m->d;
    double centre = 0.5 * (m->context - 1);
    memset(map, 0, (size_t)d * n * sizeof *map);
    map[0 * n + 0] = q->alpha;
    for (int p = 0; p < m->n_planes; p++) {
        /* rho (cos, sin)(w t + phase) = rho (cos, sin)(w s + phase') */
        double phase = m->plane[p].phase + m->plane[p].freq * centre;
        double rho = q->radius[p];
        int col = m->plane[p].col, cp = 1 + 2 * p, sp = cp + 1;
        map[col * n + cp] = rho * cos(phase);
        map[(col + 1) * n + cp] = rho * sin(phase);
        map[col * n + sp] = -rho * sin(phase);
        map[(col + 1) * n + sp] = rho * cos(phase);
        /* the ring's linear trend is removed: rho slope (-sin, cos)(phase) s */
        map[col * n + 0] = rho * m->plane[p].slope * sin(phase);
        map[(col + 1) * n + 0] = -rho * m->plane[p].slope * cos(phase);
    }
}

static void kind_moments(const qk_synth_model *m, int kind, const feature_moments *f,
                         double *mu, double *S, double *g)
{
    int d = m->d, n = f->n;
    double *map = qk_malloc((size_t)d * n * sizeof *map);
    double *tmp = qk_malloc((size_t)d * n * sizeof *tmp);
    kind_feature_map(m, kind, n, map);
    for (int i = 0; i < d; i++)
        mu[i] = cblas_ddot(n, map + i * n, 1, f->mean, 1);
    mu[0] += m->kind[kind].mu_a;
    mu[1] += m->kind[kind].mu_b;
    cblas_dgemv(CblasRowMajor, CblasNoTrans, d, n, 1.0, map, n, f->cov_t, 1, 0.0, g, 1);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, n, n, 1.0, map, n, f->cov, n,
                0.0, tmp, n);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, n, 1.0, tmp, n, map, n, 0.0,
                S, d);
    for (int i = 0; i < d; i++)
        S[i * d + i] += m->noise_var[kind][i];
    const qk_synth_kind *q = &m->kind[kind];
    S[0 * d + 1] += q->lean * sqrt(m->noise_var[kind][0] * m->noise_var[kind][1]);
    S[1 * d + 0] = S[0 * d + 1];
    free(map);
    free(tmp);
}

/* ---- metrics from moments ------------------------------------------------ */

static double quad_form(int d, const double *x, const double *A, const double *y)
{
    double s = 0.0;
    for (int i = 0; i < d; i++)
        s += x[i] * cblas_ddot(d, A + i * d, 1, y, 1);
    return s;
}

static double trace(int d, const double *A)
{
    double s = 0.0;
    for (int i = 0; i < d; i++)
        s += A[i * d + i];
    return s;
}

/* The eigenvector of the largest eigenvalue of the symmetric A (destroyed). */
static int top_eigenvector(int d, double *A, double *vec, double *value, qk_err *err)
{
    double *w = qk_malloc((size_t)d * sizeof *w);
    int rc = LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'U', d, A, d, w);
    if (rc == 0) {
        for (int i = 0; i < d; i++)
            vec[i] = A[i * d + d - 1];
        if (value)
            *value = w[d - 1];
    }
    free(w);
    return rc == 0 ? 0 : qk_fail(err, "symmetric eigensolver failed (LAPACK info %d)", rc);
}

static double pearson(int d, const double *v, const double *S, const double *g, double var_t)
{
    double var_y = quad_form(d, v, S, v);
    if (var_y <= 0 || var_t <= 0)
        return 0.0;
    return cblas_ddot(d, v, 1, g, 1) / sqrt(var_y * var_t);
}

/* The combined PCA's sign rule: make r_q positive unless |r_q| < 0.05,
 * then make r_k positive. */
static void pc0_metrics(int d, double *pool, double *const S[2], double *const g[2],
                        double var_t, double total, qk_synth_truth *t, qk_err *err, int *rc)
{
    double *v = qk_malloc((size_t)d * sizeof *v);
    double value = 0.0;
    *rc = top_eigenvector(d, pool, v, &value, err);
    if (*rc == 0) {
        double rq = pearson(d, v, S[0], g[0], var_t), rk = pearson(d, v, S[1], g[1], var_t);
        int flip = fabs(rq) >= 0.05 ? rq < 0 : rk < 0;
        t->pc0_r_q = flip ? -rq : rq;
        t->pc0_r_k = flip ? -rk : rk;
        t->pc0_ev = total > 0 ? value / total : 0.0;
    }
    free(v);
}

static void to_original(int d, const double *basis, double *v)
{
    if (!basis)
        return;
    double *tmp = qk_malloc((size_t)d * sizeof *tmp);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, d, d, 1.0, basis, d, v, 1, 0.0, tmp, 1);
    memcpy(v, tmp, (size_t)d * sizeof *v);
    free(tmp);
}

/* Separation axis b: top eigenvector of
 * (I - aa^T) C_delta (I - aa^T), made orthogonal to a, with b^T m >= 0. */
static int separation_axis(int d, const double *a, const double *cdelta, const double *m,
                           double *b, qk_err *err)
{
    double *proj = qk_malloc((size_t)d * d * sizeof *proj);
    double *tmp = qk_malloc((size_t)d * d * sizeof *tmp);
    double *M = qk_malloc((size_t)d * d * sizeof *M);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++)
            proj[i * d + j] = (i == j) - a[i] * a[j];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, proj, d, cdelta, d,
                0.0, tmp, d);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, tmp, d, proj, d,
                0.0, M, d);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < i; j++)
            M[i * d + j] = M[j * d + i] = 0.5 * (M[i * d + j] + M[j * d + i]);
    int rc = top_eigenvector(d, M, b, NULL, err);
    if (rc == 0) {
        double ab = cblas_ddot(d, a, 1, b, 1);
        cblas_daxpy(d, -ab, a, 1, b, 1);
        double norm = cblas_dnrm2(d, b, 1);
        cblas_dscal(d, 1.0 / norm, b, 1);
        if (cblas_ddot(d, b, 1, m, 1) < 0)
            cblas_dscal(d, -1.0, b, 1);
    }
    free(proj);
    free(tmp);
    free(M);
    return rc;
}

/* The {a, b} metrics (projections on a and b, slopes, means, variance
 * fractions, separation strength), once a and b are known. */
static void plane_metrics(int d, double *const mu[2], double *const S[2], double *const g[2],
                          double var_t, const double *pool, const double *cdelta, double cnorm,
                          qk_synth_truth *t)
{
    const double *a = t->a, *b = t->b;
    double total = trace(d, pool);
    double var_a = quad_form(d, a, pool, a);
    t->total_var = total;
    t->r_q_a = pearson(d, a, S[0], g[0], var_t);
    t->r_k_a = pearson(d, a, S[1], g[1], var_t);
    t->alpha_q = cblas_ddot(d, a, 1, g[0], 1) / var_t;
    t->alpha_k = cblas_ddot(d, a, 1, g[1], 1) / var_t;
    t->mu_q_a = cblas_ddot(d, mu[0], 1, a, 1);
    t->mu_k_a = cblas_ddot(d, mu[1], 1, a, 1);
    t->mu_q_b = cblas_ddot(d, mu[0], 1, b, 1);
    t->mu_k_b = cblas_ddot(d, mu[1], 1, b, 1);
    t->bias_strength = t->mu_q_a * t->alpha_k;
    t->position_r = var_a > 0 ? cnorm / sqrt(var_a * var_t) : 0.0;
    t->var_frac_a = var_a / total;
    t->var_frac_b = quad_form(d, b, pool, b) / total;
    t->plane_var_fraction = t->var_frac_a + t->var_frac_b;
    t->separation_strength = quad_form(d, b, cdelta, b) / trace(d, cdelta);
    t->content_var_b = 0.5 * (quad_form(d, b, S[0], b) + quad_form(d, b, S[1], b));
}

/* Drift axis a: the pooled covariance with position,
 * normalised; the top eigenvector of the pooled covariance if there is no
 * drift at all. Returns |c|. */
static double drift_axis(int d, const double *c, const double *pool, double *a, int *rc,
                         qk_err *err)
{
    double cnorm = cblas_dnrm2(d, c, 1);
    if (cnorm > 0) {
        for (int i = 0; i < d; i++)
            a[i] = c[i] / cnorm;
        return cnorm;
    }
    double *copy = qk_malloc((size_t)d * d * sizeof *copy);
    memcpy(copy, pool, (size_t)d * d * sizeof *copy);
    *rc = top_eigenvector(d, copy, a, NULL, err);
    free(copy);
    return 0.0;
}

int qk_synth_metrics_from_moments(int d, const double *basis,
                                  double *const mu[2], double *const S[2],
                                  double *const g[2], double var_t,
                                  qk_synth_truth *t, qk_err *err)
{
    memset(t, 0, sizeof *t);
    t->d = d;
    t->a = qk_calloc((size_t)d, sizeof(double));
    t->b = qk_calloc((size_t)d, sizeof(double));
    double *m = qk_malloc((size_t)d * sizeof *m);
    double *c = qk_malloc((size_t)d * sizeof *c);
    double *pool = qk_malloc((size_t)d * d * sizeof *pool);
    double *cdelta = qk_malloc((size_t)d * d * sizeof *cdelta);
    /* equal weights: m = mu_Q - mu_K, pool = (S_Q + S_K)/2 + m m^T/4,
     * C_delta = S_Q + S_K + m m^T, c = (g_Q + g_K)/2 */
    for (int i = 0; i < d; i++) {
        m[i] = mu[0][i] - mu[1][i];
        c[i] = 0.5 * (g[0][i] + g[1][i]);
    }
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double s = S[0][i * d + j] + S[1][i * d + j];
            pool[i * d + j] = 0.5 * s + 0.25 * m[i] * m[j];
            cdelta[i * d + j] = s + m[i] * m[j];
        }
    int rc = 0;
    double cnorm = drift_axis(d, c, pool, t->a, &rc, err);
    if (rc == 0)
        rc = separation_axis(d, t->a, cdelta, m, t->b, err);
    if (rc == 0) {
        plane_metrics(d, mu, S, g, var_t, pool, cdelta, cnorm, t);
        pc0_metrics(d, pool, S, g, var_t, t->total_var, t, err, &rc); /* destroys pool */
        to_original(d, basis, t->a);
        to_original(d, basis, t->b);
    }
    free(m);
    free(c);
    free(pool);
    free(cdelta);
    if (rc != 0)
        qk_synth_truth_free(t);
    return rc;
}

int qk_synth_population(const qk_synth_model *m, qk_synth_truth *t, qk_err *err)
{
    int d = m->d;
    feature_moments f;
    feature_moments_init(&f, m);
    double *mu[2], *S[2], *g[2];
    for (int k = 0; k < 2; k++) {
        mu[k] = qk_malloc((size_t)d * sizeof(double));
        S[k] = qk_malloc((size_t)d * d * sizeof(double));
        g[k] = qk_malloc((size_t)d * sizeof(double));
        kind_moments(m, k, &f, mu[k], S[k], g[k]);
    }
    double var_t = qk_synth_sd_t(m->context) * qk_synth_sd_t(m->context);
    int rc = qk_synth_metrics_from_moments(d, m->basis, mu, S, g, var_t, t, err);
    for (int k = 0; k < 2; k++) {
        free(mu[k]);
        free(S[k]);
        free(g[k]);
    }
    feature_moments_free(&f);
    return rc;
}

void qk_synth_truth_free(qk_synth_truth *t)
{
    free(t->a);
    free(t->b);
    t->a = t->b = NULL;
}
