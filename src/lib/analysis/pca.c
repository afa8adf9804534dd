/* Combined query/key PCA of one head (include/qk/pca.h, docs/pca.md). */
#include "qk/pca.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/stats.h"

/* Rows per block when projecting rows: the double copy stays in the cache. */
#define PROJ_BLOCK 256

void qk_pca_work_init(qk_pca_work *w, int dim)
{
    w->dim = dim;
    qk_moments_init(&w->pooled, dim);
    w->components = qk_doubles((size_t)QK_PCA_N_PC * dim);
    w->scratch = qk_doubles(2 * (size_t)dim);
    w->block = qk_doubles((size_t)PROJ_BLOCK * dim);
    w->proj = NULL;
    w->proj_cap = 0;
}

void qk_pca_work_free(qk_pca_work *w)
{
    qk_moments_free(&w->pooled);
    free(w->components);
    free(w->scratch);
    free(w->block);
    free(w->proj);
    memset(w, 0, sizeof *w);
}

int qk_pca_head_usable(int64_t n_q, int64_t n_k)
{
    return n_q >= QK_PCA_MIN_KIND && n_k >= QK_PCA_MIN_KIND &&
           n_q + n_k >= QK_PCA_MIN_ROWS;
}

/* ---- eigenproblem --------------------------------------------------------- */

int qk_pca_eigen(const double *a, int dim, int n_keep, double *values, double *vectors,
                 qk_err *err)
{
    size_t dd = (size_t)dim * dim;
    double *copy = qk_doubles(dd);
    double *w = qk_doubles((size_t)dim);
    double *z = qk_doubles((size_t)dim * n_keep);
    lapack_int *isuppz = qk_malloc(2 * (size_t)n_keep * sizeof(lapack_int));
    /* a is symmetric, so its row-major upper triangle is the column-major
     * lower one: hand it over as column-major 'L' without transposing */
    memcpy(copy, a, dd * sizeof(double));
    lapack_int found = 0;
    lapack_int info = LAPACKE_dsyevr(LAPACK_COL_MAJOR, 'V', 'I', 'L', dim, copy, dim,
                                     0.0, 0.0, dim - n_keep + 1, dim,
                                     LAPACKE_dlamch('S'), &found, w, z, dim, isuppz);
    int rc = 0;
    if (info != 0 || found != n_keep) {
        rc = qk_fail(err, "eigensolver failed (dsyevr info %d, %d of %d eigenvalues)",
                     (int)info, (int)found, n_keep);
    } else {
        /* dsyevr returns ascending order; column j of z is a unit vector */
        for (int i = 0; i < n_keep; i++) {
            int j = n_keep - 1 - i;
            values[i] = w[j];
            memcpy(vectors + (size_t)i * dim, z + (size_t)j * dim, (size_t)dim * sizeof(double));
        }
    }
    free(copy);
    free(w);
    free(z);
    free(isuppz);
    return rc;
}

/* ---- correlations and signs ------------------------------------------------ */

/* v'Sv for the symmetric covariance of m; scratch holds dim doubles. */
static double quad_form(const double *v, const qk_moments *m, double *scratch)
{
    int d = m->dim;
    cblas_dsymv(CblasRowMajor, CblasUpper, d, 1.0, m->cov, d, v, 1, 0.0, scratch, 1);
    return cblas_ddot(d, v, 1, scratch, 1);
}

double qk_pca_correlation(const double *v, const qk_moments *m, double zero_var,
                          double *scratch)
{
    if (!(m->pos_var > 0.0))
        return 0.0;
    double var_proj = quad_form(v, m, scratch);
    if (!(var_proj > zero_var) || !(var_proj > 0.0))
        return 0.0;
    double r = cblas_ddot(m->dim, v, 1, m->cov_pos, 1) / sqrt(var_proj * m->pos_var);
    /* rounding can push |r| a hair past 1 for exactly linear data */
    return r > 1.0 ? 1.0 : r < -1.0 ? -1.0 : r;
}

int qk_pca_should_flip(double r_q, double r_k)
{
    double anchor = fabs(r_q) >= QK_PCA_ANCHOR ? r_q : r_k;
    return anchor < 0.0;
}

/* ---- classifiers on the projections -------------------------------------- */

/* Mean and population covariance (xx, xy, yy) of n interleaved 2-D points. */
static void points_moments(const double *p, int64_t n, double mean[2], double cov[3])
{
    double sx = 0.0, sy = 0.0;
    for (int64_t i = 0; i < n; i++) {
        sx += p[2 * i];
        sy += p[2 * i + 1];
    }
    mean[0] = sx / (double)n;
    mean[1] = sy / (double)n;
    double xx = 0.0, xy = 0.0, yy = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double dx = p[2 * i] - mean[0], dy = p[2 * i + 1] - mean[1];
        xx += dx * dx;
        xy += dx * dy;
        yy += dy * dy;
    }
    cov[0] = xx / (double)n;
    cov[1] = xy / (double)n;
    cov[2] = yy / (double)n;
}

static int64_t count_side(const double *p, int64_t n, const double w[2], double cut,
                          int above)
{
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++) {
        double s = w[0] * p[2 * i] + w[1] * p[2 * i + 1];
        c += above ? s > cut : !(s > cut);
    }
    return c;
}

double qk_lda2_accuracy(const double *a, int64_t n_a, const double *b, int64_t n_b)
{
    if (n_a <= 0 || n_b <= 0)
        return NAN;
    double ma[2], mb[2], ca[3], cb[3];
    points_moments(a, n_a, ma, ca);
    points_moments(b, n_b, mb, cb);
    double n = (double)(n_a + n_b), pa = (double)n_a / n, pb = (double)n_b / n;
    double sxx = pa * ca[0] + pb * cb[0];
    double sxy = pa * ca[1] + pb * cb[1];
    double syy = pa * ca[2] + pb * cb[2];
    /* a singular S_w (a class without spread in some direction) gets a
     * ridge of 1e-12 of its trace, so that w stays defined */
    double det = sxx * syy - sxy * sxy, tr = sxx + syy;
    if (!(det > 1e-24 * tr * tr)) {
        double ridge = tr > 0.0 ? 1e-12 * tr : 1.0;
        sxx += ridge;
        syy += ridge;
        det = sxx * syy - sxy * sxy;
    }
    double dx = ma[0] - mb[0], dy = ma[1] - mb[1];
    double w[2] = {(syy * dx - sxy * dy) / det, (sxx * dy - sxy * dx) / det};
    double cut = w[0] * 0.5 * (ma[0] + mb[0]) + w[1] * 0.5 * (ma[1] + mb[1]) +
                 log((double)n_b / (double)n_a);
    int64_t right = count_side(a, n_a, w, cut, 1) + count_side(b, n_b, w, cut, 0);
    return (double)right / n;
}

double qk_threshold_accuracy(double *a, int64_t n_a, double *b, int64_t n_b)
{
    if (n_a <= 0 || n_b <= 0)
        return NAN;
    qk_sort_doubles(a, n_a);
    qk_sort_doubles(b, n_b);
    /* sweep the cut through every distinct value; a_le, b_le count the
     * values at or below it. Start below everything. */
    int64_t i = 0, j = 0;
    int64_t best = n_a > n_b ? n_a : n_b;
    while (i < n_a || j < n_b) {
        double v = i < n_a && (j >= n_b || a[i] <= b[j]) ? a[i] : b[j];
        while (i < n_a && a[i] == v)
            i++;
        while (j < n_b && b[j] == v)
            j++;
        int64_t a_above = (n_a - i) + j; /* class a above the cut */
        int64_t a_below = i + (n_b - j);
        if (a_above > best)
            best = a_above;
        if (a_below > best)
            best = a_below;
    }
    return (double)best / (double)(n_a + n_b);
}

/* ---- one head -------------------------------------------------------------- */

/* Converts n floats to doubles; written four at a time so that the
 * compiler emits vector conversions at -O2. */
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

/* Interleaved projections (x.v0 - c0, x.v1 - c1) of n float rows, v0 and v1
 * being the two rows of v01; block holds PROJ_BLOCK * dim doubles. */
static void project_rows(const float *x, int64_t n, int dim, const double *v01, double c0,
                         double c1, double *block, double *out)
{
    for (int64_t start = 0; start < n; start += PROJ_BLOCK) {
        int nb = (int)(n - start < PROJ_BLOCK ? n - start : PROJ_BLOCK);
        widen(x + (size_t)start * dim, (size_t)nb * dim, block);
        double *dst = out + 2 * start;
        /* two dgemv calls beat one dgemm with two columns */
        cblas_dgemv(CblasRowMajor, CblasNoTrans, nb, dim, 1.0, block, dim, v01, 1, 0.0, dst, 2);
        cblas_dgemv(CblasRowMajor, CblasNoTrans, nb, dim, 1.0, block, dim, v01 + dim, 1, 0.0,
                    dst + 1, 2);
        for (int i = 0; i < nb; i++) {
            dst[2 * i] -= c0;
            dst[2 * i + 1] -= c1;
        }
    }
}

static double *proj_buffer(qk_pca_work *w, int64_t rows)
{
    if (rows > w->proj_cap) {
        free(w->proj);
        w->proj = qk_doubles((size_t)rows * 3);
        w->proj_cap = rows;
    }
    return w->proj;
}

/* acc01 and acc0 from the rows' projections on the (canonical) PC0, PC1. */
static void classify(const qk_pca_rows *q, const qk_pca_rows *k, qk_pca_work *w,
                     int n_pc, qk_pca_head *out)
{
    int d = w->dim;
    if (n_pc < 2) /* one component: PC1 is taken as the zero vector */
        memset(w->components + d, 0, (size_t)d * sizeof(double));
    const double *v01 = w->components;
    double c0 = cblas_ddot(d, w->pooled.mean, 1, v01, 1);
    double c1 = cblas_ddot(d, w->pooled.mean, 1, v01 + d, 1);
    int64_t n = q->n + k->n;
    double *pq = proj_buffer(w, n), *pk = pq + 2 * q->n;
    project_rows(q->vector, q->n, d, v01, c0, c1, w->block, pq);
    project_rows(k->vector, k->n, d, v01, c0, c1, w->block, pk);
    double *xq = pq + 2 * n, *xk = xq + q->n;
    for (int64_t i = 0; i < q->n; i++)
        xq[i] = pq[2 * i];
    for (int64_t i = 0; i < k->n; i++)
        xk[i] = pk[2 * i];
    out->acc01 = qk_lda2_accuracy(pq, q->n, pk, k->n);
    out->acc0 = qk_threshold_accuracy(xq, q->n, xk, k->n);
}

static double slope(double r, double var_proj, double var_t)
{
    return r != 0.0 && var_t > 0.0 ? r * sqrt(var_proj / var_t) : 0.0;
}

/* The PC0 summary metrics (docs/pca.md, step 7), after canonicalisation. */
static void pc0_metrics(const qk_moments *mq, const qk_moments *mk, qk_pca_work *w,
                        qk_pca_head *out)
{
    int d = w->dim;
    const double *v0 = w->components;
    double *tmp = w->scratch + d;
    for (int i = 0; i < d; i++) /* difference first: no cancellation */
        tmp[i] = mq->mean[i] - w->pooled.mean[i];
    out->mu_q0 = cblas_ddot(d, tmp, 1, v0, 1);
    for (int i = 0; i < d; i++)
        tmp[i] = mk->mean[i] - w->pooled.mean[i];
    out->mu_k0 = cblas_ddot(d, tmp, 1, v0, 1);
    out->sep0 = fabs(out->mu_q0 - out->mu_k0);
    double var_q = quad_form(v0, mq, tmp), var_k = quad_form(v0, mk, tmp);
    double gap2 = (out->mu_q0 - out->mu_k0) * (out->mu_q0 - out->mu_k0);
    double spread = var_q + var_k;
    out->fisher0 = spread > 0.0 ? gap2 / spread : gap2 > 0.0 ? INFINITY : 0.0;
    out->alpha_q0 = slope(out->r_q[0], var_q, mq->pos_var);
    out->beta_k0 = slope(out->r_k[0], var_k, mk->pos_var);

    double pq = 0.0, pk = 0.0;
    for (int i = 0; i < out->n_pc; i++) {
        pq += out->ev[i] * out->r_q[i] * out->r_q[i];
        pk += out->ev[i] * out->r_k[i] * out->r_k[i];
    }
    out->pos_var_q = pq;
    out->pos_var_k = pk;
    out->pc0_share_q = pq > 0.0 ? out->ev[0] * out->r_q[0] * out->r_q[0] / pq : 0.0;
    out->pc0_share_k = pk > 0.0 ? out->ev[0] * out->r_k[0] * out->r_k[0] / pk : 0.0;
}

int qk_pca_fit(const qk_moments *mq, const qk_moments *mk, qk_pca_work *w, qk_pca_head *out,
               qk_err *err)
{
    int d = w->dim;
    memset(out, 0, sizeof *out);
    out->n_pc = d < QK_PCA_N_PC ? d : QK_PCA_N_PC;
    out->n_q = mq->n;
    out->n_k = mk->n;
    qk_moments_pool(&w->pooled, mq, mk);
    if (!qk_moments_finite(&w->pooled))
        return qk_fail(err, "vectors or positions hold values that are not finite");
    out->total_var = qk_moments_trace(&w->pooled);
    if (qk_pca_eigen(w->pooled.cov, d, out->n_pc, out->eigenvalue, w->components, err) != 0)
        return -1;

    double zero_var = QK_PCA_ZERO_VAR * out->total_var;
    for (int i = 0; i < out->n_pc; i++) {
        double *v = w->components + (size_t)i * d;
        /* rounding can leave the eigenvalue of a flat direction at -1e-17 */
        double lambda = out->eigenvalue[i] > 0.0 ? out->eigenvalue[i] : 0.0;
        out->ev[i] = out->total_var > 0.0 ? lambda / out->total_var : 0.0;
        double r_q = qk_pca_correlation(v, mq, zero_var, w->scratch);
        double r_k = qk_pca_correlation(v, mk, zero_var, w->scratch);
        if (qk_pca_should_flip(r_q, r_k)) {
            cblas_dscal(d, -1.0, v, 1);
            r_q = -r_q;
            r_k = -r_k;
        }
        /* -0.0 would print as "-0" */
        out->r_q[i] = r_q + 0.0;
        out->r_k[i] = r_k + 0.0;
    }
    return 0;
}

void qk_pca_metrics(const qk_pca_rows *q, const qk_pca_rows *k, const qk_moments *mq,
                    const qk_moments *mk, qk_pca_work *w, qk_pca_head *out)
{
    pc0_metrics(mq, mk, w, out);
    classify(q, k, w, out->n_pc, out);
}

int qk_pca_analyse(const qk_pca_rows *q, const qk_pca_rows *k, const qk_moments *mq,
                   const qk_moments *mk, qk_pca_work *w, qk_pca_head *out, qk_err *err)
{
    if (qk_pca_fit(mq, mk, w, out, err) != 0)
        return -1;
    qk_pca_metrics(q, k, mq, mk, w, out);
    return 0;
}
