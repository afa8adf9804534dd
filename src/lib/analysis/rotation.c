/* The {a, b} plane of one head: axes and metrics from the per-kind
 * moments, the omega fit on the a-projections (include/qk/rotation.h,
 * docs/rotation.md). */
#include "qk/rotation.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/pca.h"

/* Rows per block when projecting: the double copy stays in the cache. */
#define PROJ_BLOCK 256

void qk_rot_options_default(qk_rot_options *o)
{
    /* the modes by their names in the defaults ("eigen", "canonical") */
    o->b_mode = strcmp(QK_STR(QK_DEFAULT_ROT_B_MODE), "centroid") == 0 ? QK_ROT_B_CENTROID
                                                                        : QK_ROT_B_EIGEN;
    o->b_sign = strcmp(QK_STR(QK_DEFAULT_ROT_B_SIGN), "raw") == 0 ? QK_ROT_SIGN_RAW
                                                                   : QK_ROT_SIGN_CANONICAL;
    o->omega_grid = QK_ROT_OMEGA_GRID;
    o->omega_refine = QK_ROT_OMEGA_REFINE;
}

void qk_rot_work_init(qk_rot_work *w, int dim)
{
    w->dim = dim;
    qk_moments_init(&w->pooled, dim);
    w->a = qk_doubles((size_t)dim);
    w->b = qk_doubles((size_t)dim);
    w->m = qk_doubles((size_t)dim);
    w->matrix = qk_doubles((size_t)dim * dim);
    w->scratch = qk_doubles(4 * (size_t)dim);
    w->block = qk_doubles((size_t)PROJ_BLOCK * dim);
    w->y = NULL;
    w->y_cap = 0;
    w->omega = NULL;
}

void qk_rot_work_free(qk_rot_work *w)
{
    qk_moments_free(&w->pooled);
    free(w->a);
    free(w->b);
    free(w->m);
    free(w->matrix);
    free(w->scratch);
    free(w->block);
    free(w->y);
    qk_rot_omega_cache_free(w->omega);
    memset(w, 0, sizeof *w);
}

int qk_rot_head_usable(int64_t n_q, int64_t n_k)
{
    return n_q >= QK_ROT_MIN_KIND && n_k >= QK_ROT_MIN_KIND;
}

/* ---- small vector helpers ----------------------------------------------------- */

static double quad_form(const double *v, const double *matrix, int d, double *scratch)
{
    cblas_dsymv(CblasRowMajor, CblasUpper, d, 1.0, matrix, d, v, 1, 0.0, scratch, 1);
    return cblas_ddot(d, v, 1, scratch, 1);
}

static double trace(const double *matrix, int d)
{
    double tr = 0.0;
    for (int i = 0; i < d; i++)
        tr += matrix[(size_t)i * d + i];
    return tr;
}

/* v <- v - (u.v) u for a unit vector u. */
static void remove_component(double *v, const double *u, int d)
{
    cblas_daxpy(d, -cblas_ddot(d, u, 1, v, 1), u, 1, v, 1);
}

/* Scales v to unit length; returns its former length. */
static double normalise(double *v, int d)
{
    double norm = sqrt(cblas_ddot(d, v, 1, v, 1));
    if (norm > 0.0)
        cblas_dscal(d, 1.0 / norm, v, 1);
    return norm;
}

int qk_rot_canonical_sign(double *v, int n)
{
    int big = 0;
    for (int i = 1; i < n; i++)
        if (fabs(v[i]) > fabs(v[big]))
            big = i;
    if (!(v[big] < 0.0))
        return 0;
    for (int i = 0; i < n; i++)
        v[i] = -v[i];
    return 1;
}

double qk_rot_correlation(const double *v, const qk_moments *m, double zero_var,
                          double *scratch)
{
    if (!(m->pos_var > 0.0))
        return 0.0;
    double var_proj = quad_form(v, m->cov, m->dim, scratch);
    if (!(var_proj > zero_var) || !(var_proj > 0.0))
        return 0.0;
    double r = cblas_ddot(m->dim, v, 1, m->cov_pos, 1) / sqrt(var_proj * m->pos_var);
    /* rounding can push |r| a hair past 1 for exactly linear data */
    return r > 1.0 ? 1.0 : r < -1.0 ? -1.0 : r + 0.0;
}

/* ---- axis a ------------------------------------------------------------------- */

/* a = c / ||c||, oriented so that the pooled projection grows with
 * position. Without drift (||c|| <= 1e-12 sqrt(tr Sigma Var t), which
 * includes Var t = 0) a is the top principal axis of the pooled covariance
 * with the canonical sign. */
static int drift_axis(qk_rot_work *w, qk_rot_head *out, qk_err *err)
{
    int d = w->dim;
    const qk_moments *p = &w->pooled;
    double norm_c = sqrt(cblas_ddot(d, p->cov_pos, 1, p->cov_pos, 1));
    double tr = trace(p->cov, d);
    double floor_c = QK_ROT_DEGENERATE_A * sqrt(fmax(tr, 0.0) * fmax(p->pos_var, 0.0));
    if (norm_c > floor_c) {
        for (int i = 0; i < d; i++)
            w->a[i] = p->cov_pos[i] / norm_c;
        out->flag_degenerate_a = 0;
        return 0;
    }
    double lambda;
    if (qk_pca_eigen(p->cov, d, 1, &lambda, w->a, err) != 0)
        return -1;
    normalise(w->a, d);
    qk_rot_canonical_sign(w->a, d);
    out->flag_degenerate_a = 1;
    return 0;
}

/* ---- axis b ------------------------------------------------------------------- */

/* C_delta = S_Q + S_K + m m^T: the second moment of q - k over all pairs. */
static void delta_moment(const qk_moments *mq, const qk_moments *mk, const double *m, int d,
                         double *c_delta)
{
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            size_t ij = (size_t)i * d + j;
            c_delta[ij] = mq->cov[ij] + mk->cov[ij] + m[i] * m[j];
        }
}

/* M = P_a C P_a = C - a v^T - v a^T + s a a^T with v = C a, s = a^T v,
 * formed in place and exactly symmetric. */
static void project_out(double *c, const double *a, int d, double *v)
{
    cblas_dsymv(CblasRowMajor, CblasUpper, d, 1.0, c, d, a, 1, 0.0, v, 1);
    double s = cblas_ddot(d, a, 1, v, 1);
    for (int i = 0; i < d; i++)
        for (int j = i; j < d; j++) {
            double x = c[(size_t)i * d + j] - a[i] * v[j] - v[i] * a[j] + s * a[i] * a[j];
            c[(size_t)i * d + j] = x;
            c[(size_t)j * d + i] = x;
        }
}

/* The fallback b when nothing separates off a: the unit basis vector least
 * aligned with a (the first on ties), made orthogonal to a. */
static void fallback_axis(const double *a, int d, double *b)
{
    int best = 0;
    for (int i = 1; i < d; i++)
        if (fabs(a[i]) < fabs(a[best]))
            best = i;
    memset(b, 0, (size_t)d * sizeof(double));
    b[best] = 1.0;
    remove_component(b, a, d);
    normalise(b, d);
}

/* b from the top eigenvector of P_a C_delta P_a; 1 if it is degenerate. */
static int eigen_axis(qk_rot_work *w, double tr_delta, qk_err *err, int *failed)
{
    int d = w->dim;
    double lambda;
    *failed = 0;
    project_out(w->matrix, w->a, d, w->scratch);
    if (qk_pca_eigen(w->matrix, d, 1, &lambda, w->b, err) != 0) {
        *failed = 1;
        return 1;
    }
    if (!(lambda > QK_ROT_DEGENERATE_B * tr_delta))
        return 1;
    /* the eigenvector is orthogonal to a up to rounding: make it exact */
    remove_component(w->b, w->a, d);
    return normalise(w->b, d) < 0.5;
}

/* b = P_a m / ||P_a m||; 1 if P_a m vanishes. */
static int centroid_axis(qk_rot_work *w, double tr_delta)
{
    int d = w->dim;
    memcpy(w->b, w->m, (size_t)d * sizeof(double));
    remove_component(w->b, w->a, d);
    double norm = normalise(w->b, d);
    return !(norm * norm > QK_ROT_DEGENERATE_B * tr_delta);
}

static int separation_axis(const qk_moments *mq, const qk_moments *mk, const qk_rot_options *o,
                           qk_rot_work *w, qk_rot_head *out, qk_err *err)
{
    int d = w->dim;
    delta_moment(mq, mk, w->m, d, w->matrix);
    double tr_delta = trace(w->matrix, d);
    /* centroid mode: flagged when P_a m vanishes, and then b comes from the
     * eigenvector as in eigen mode */
    int degenerate = o->b_mode == QK_ROT_B_CENTROID ? centroid_axis(w, tr_delta) : 0;
    if (o->b_mode == QK_ROT_B_EIGEN || degenerate) {
        int failed;
        int flat = eigen_axis(w, tr_delta, err, &failed);
        if (failed)
            return -1;
        if (flat)
            fallback_axis(w->a, d, w->b);
        degenerate |= flat;
    }
    out->flag_degenerate_b = degenerate;
    if (o->b_sign == QK_ROT_SIGN_CANONICAL) {
        double along = cblas_ddot(d, w->b, 1, w->m, 1);
        if (along < 0.0)
            cblas_dscal(d, -1.0, w->b, 1);
        else if (along == 0.0) /* Q and K coincide on b */
            qk_rot_canonical_sign(w->b, d);
    }
    return 0;
}

int qk_rot_axes(const qk_moments *mq, const qk_moments *mk, const qk_rot_options *o,
                qk_rot_work *w, qk_rot_head *out, qk_err *err)
{
    int d = w->dim;
    out->dim = d;
    out->n_q = mq->n;
    out->n_k = mk->n;
    qk_moments_pool(&w->pooled, mq, mk);
    if (!qk_moments_finite(&w->pooled))
        return qk_fail(err, "vectors or positions hold values that are not finite");
    for (int i = 0; i < d; i++)
        w->m[i] = mq->mean[i] - mk->mean[i];
    if (drift_axis(w, out, err) != 0)
        return -1;
    return separation_axis(mq, mk, o, w, out, err);
}

/* ---- metrics -------------------------------------------------------------------- */

static double ratio_or_nan(double num, double den)
{
    return den > 0.0 ? num / den : NAN;
}

/* The slope of the a-projection on position within one kind. */
static double kind_slope(const double *a, const qk_moments *m)
{
    return m->pos_var > 0.0 ? cblas_ddot(m->dim, a, 1, m->cov_pos, 1) / m->pos_var : 0.0;
}

/* b_centroid_cos and resid_sep_frac from m = mu_Q - mu_K. */
static void centroid_diagnostics(const double *a, const double *b, const double *m, int d,
                                 double *pam, qk_rot_head *out)
{
    memcpy(pam, m, (size_t)d * sizeof(double));
    remove_component(pam, a, d);
    double norm2 = cblas_ddot(d, pam, 1, pam, 1);
    double along = cblas_ddot(d, b, 1, pam, 1);
    if (!(norm2 > 0.0)) {
        out->b_centroid_cos = NAN;
        out->resid_sep_frac = NAN;
        return;
    }
    out->b_centroid_cos = fmin(1.0, fabs(along) / sqrt(norm2));
    cblas_daxpy(d, -along, b, 1, pam, 1); /* pam is now P_ab m */
    out->resid_sep_frac = cblas_ddot(d, pam, 1, pam, 1) / norm2;
}

void qk_rot_metrics(const qk_moments *mq, const qk_moments *mk, const qk_moments *pooled,
                    const double *a, const double *b, double *scratch, qk_rot_head *out)
{
    int d = pooled->dim;
    double tr = trace(pooled->cov, d);
    double zero_var = QK_ROT_ZERO_VAR * tr;
    out->total_var = tr;
    out->position_r = fabs(qk_rot_correlation(a, pooled, zero_var, scratch));
    out->r_q_a = qk_rot_correlation(a, mq, zero_var, scratch);
    out->r_k_a = qk_rot_correlation(a, mk, zero_var, scratch);
    out->alpha_q = kind_slope(a, mq);
    out->alpha_k = kind_slope(a, mk);
    out->mu_q_a = cblas_ddot(d, mq->mean, 1, a, 1);
    out->mu_k_a = cblas_ddot(d, mk->mean, 1, a, 1);
    out->mu_q_b = cblas_ddot(d, mq->mean, 1, b, 1);
    out->mu_k_b = cblas_ddot(d, mk->mean, 1, b, 1);
    out->bias_strength = out->mu_q_a * out->alpha_k;

    double var_a = quad_form(a, pooled->cov, d, scratch);
    double var_b = quad_form(b, pooled->cov, d, scratch);
    out->var_frac_a = ratio_or_nan(var_a, tr);
    out->var_frac_b = ratio_or_nan(var_b, tr);
    out->plane_var_fraction = out->var_frac_a + out->var_frac_b;

    double cv_q = quad_form(b, mq->cov, d, scratch), cv_k = quad_form(b, mk->cov, d, scratch);
    double *m = scratch + d;
    for (int i = 0; i < d; i++)
        m[i] = mq->mean[i] - mk->mean[i];
    double bm = cblas_ddot(d, b, 1, m, 1);
    double tr_delta = trace(mq->cov, d) + trace(mk->cov, d) + cblas_ddot(d, m, 1, m, 1);
    out->separation_strength = ratio_or_nan(cv_q + cv_k + bm * bm, tr_delta);
    out->content_var_b = 0.5 * (cv_q + cv_k);

    double aq = fabs(out->alpha_q), ak = fabs(out->alpha_k);
    out->slope_ratio = aq > 0.0 ? ak / aq : ak > 0.0 ? INFINITY : NAN;
    centroid_diagnostics(a, b, m, d, scratch, out);
}

/* ---- projections and the omega fit ------------------------------------------------- */

/* Converts n floats to doubles, four at a time so that the compiler
 * vectorises the loop at -O2. */
static void widen(const float *src, size_t n, double *dst)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        dst[i] = src[i];
        dst[i + 1] = src[i + 1];
        dst[i + 2] = src[i + 2];
        dst[i + 3] = src[i + 3];
    }
    for (; i < n; i++)
        dst[i] = src[i];
}

/* Raw projections x.v of n float rows. */
static void project_rows(const float *x, int64_t n, int d, const double *v, double *block,
                         double *out)
{
    for (int64_t start = 0; start < n; start += PROJ_BLOCK) {
        int nb = (int)(n - start < PROJ_BLOCK ? n - start : PROJ_BLOCK);
        widen(x + (size_t)start * d, (size_t)nb * d, block);
        cblas_dgemv(CblasRowMajor, CblasNoTrans, nb, d, 1.0, block, d, v, 1, 0.0,
                    out + start, 1);
    }
}

static void position_range(const qk_rot_rows *q, const qk_rot_rows *k, qk_rot_head *out)
{
    int32_t lo = q->position[0], hi = q->position[0];
    for (int64_t i = 0; i < q->n; i++) {
        lo = q->position[i] < lo ? q->position[i] : lo;
        hi = q->position[i] > hi ? q->position[i] : hi;
    }
    for (int64_t i = 0; i < k->n; i++) {
        lo = k->position[i] < lo ? k->position[i] : lo;
        hi = k->position[i] > hi ? k->position[i] : hi;
    }
    out->t_min = lo;
    out->t_max = hi;
}

int qk_rot_analyse(const qk_rot_rows *q, const qk_rot_rows *k, const qk_moments *mq,
                   const qk_moments *mk, const qk_rot_options *o, qk_rot_work *w,
                   qk_rot_head *out, qk_err *err)
{
    memset(out, 0, sizeof *out);
    if (qk_rot_axes(mq, mk, o, w, out, err) != 0)
        return -1;
    qk_rot_metrics(mq, mk, &w->pooled, w->a, w->b, w->scratch, out);
    position_range(q, k, out);
    out->bias_range = out->bias_strength * ((double)out->t_max - (double)out->t_min);

    int64_t n = q->n + k->n;
    if (n > w->y_cap) {
        free(w->y);
        w->y = qk_doubles((size_t)n);
        w->y_cap = n;
    }
    project_rows(q->vector, q->n, w->dim, w->a, w->block, w->y);
    project_rows(k->vector, k->n, w->dim, w->a, w->block, w->y + q->n);
    qk_rot_omega_fit_cached(w->y, q->position, q->n, w->y + q->n, k->position, k->n,
                            o->omega_grid, o->omega_refine, &w->omega, &out->omega);
    return 0;
}
