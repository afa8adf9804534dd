/* Per-kind moments: one pass over float32 rows, double accumulation, CBLAS
 * for the products (include/qk/moments.h). */
#include "qk/moments.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/common.h"

/* Rows per block: large enough for dsyrk to run at full speed, small
 * enough that the double copy of a block stays in the cache. */
#define MOMENTS_BLOCK_ROWS 512

double *qk_doubles(size_t n)
{
    size_t bytes = (n ? n : 1) * sizeof(double);
    bytes = (bytes + 63) / 64 * 64; /* aligned_alloc wants a multiple */
    double *p = aligned_alloc(64, bytes);
    if (!p)
        qk_out_of_memory(bytes);
    memset(p, 0, bytes);
    return p;
}

void qk_moments_init(qk_moments *m, int dim)
{
    m->dim = dim;
    m->n = 0;
    m->mean = qk_doubles((size_t)dim);
    m->cov = qk_doubles((size_t)dim * (size_t)dim);
    m->cov_pos = qk_doubles((size_t)dim);
    m->pos_mean = 0.0;
    m->pos_var = 0.0;
}

void qk_moments_free(qk_moments *m)
{
    free(m->mean);
    free(m->cov);
    free(m->cov_pos);
    memset(m, 0, sizeof *m);
}

void qk_moments_copy(qk_moments *dst, const qk_moments *src)
{
    size_t d = (size_t)src->dim;
    dst->n = src->n;
    memcpy(dst->mean, src->mean, d * sizeof(double));
    memcpy(dst->cov, src->cov, d * d * sizeof(double));
    memcpy(dst->cov_pos, src->cov_pos, d * sizeof(double));
    dst->pos_mean = src->pos_mean;
    dst->pos_var = src->pos_var;
}

/* Running sums of one pass: the mean so far and the centred sums of
 * products (scatter = n * covariance), only the upper triangle of the
 * matrix being maintained. */
typedef struct moment_sums {
    int dim;
    int64_t n;
    double *mean;
    double *scatter;     /* [dim*dim], upper triangle */
    double *scatter_pos; /* [dim] sum of (x - mean)(t - tbar) */
    double pos_mean;
    double pos_scatter;  /* sum of (t - tbar)^2 */
} moment_sums;

/* Centres one block of rows on its own mean: writes the centred rows to
 * xc[nb*dim], the centred positions to tc[nb] and the means. The inner
 * loops go four columns at a time so that the compiler vectorises them at
 * -O2 (this loop is most of the time not spent in dsyrk). */
static void centre_block(const float *x, const int32_t *t, int nb, int dim,
                         double *xc, double *tc, double *mean, double *pos_mean)
{
    int dim4 = dim - dim % 4;
    memset(mean, 0, (size_t)dim * sizeof(double));
    double tsum = 0.0;
    for (int i = 0; i < nb; i++) {
        const float *row = x + (size_t)i * dim;
        for (int j = 0; j < dim4; j += 4) {
            mean[j] += row[j];
            mean[j + 1] += row[j + 1];
            mean[j + 2] += row[j + 2];
            mean[j + 3] += row[j + 3];
        }
        for (int j = dim4; j < dim; j++)
            mean[j] += row[j];
        tsum += t[i];
    }
    for (int j = 0; j < dim; j++)
        mean[j] /= nb;
    *pos_mean = tsum / nb;
    for (int i = 0; i < nb; i++) {
        const float *row = x + (size_t)i * dim;
        double *out = xc + (size_t)i * dim;
        for (int j = 0; j < dim4; j += 4) {
            out[j] = row[j] - mean[j];
            out[j + 1] = row[j + 1] - mean[j + 1];
            out[j + 2] = row[j + 2] - mean[j + 2];
            out[j + 3] = row[j + 3] - mean[j + 3];
        }
        for (int j = dim4; j < dim; j++)
            out[j] = row[j] - mean[j];
        tc[i] = t[i] - *pos_mean;
    }
}

/* Adds one block to the running sums. The block's own centred products go
 * straight into the scatter; the difference of the means then adds the
 * between-part n_a n_b / n * delta delta^T (the pairwise update of Chan,
 * Golub and LeVeque), which keeps every product centred. */
static void add_block(moment_sums *s, const float *x, const int32_t *t, int nb,
                      double *xc, double *tc, double *bmean)
{
    int d = s->dim;
    double bpos;
    centre_block(x, t, nb, d, xc, tc, bmean, &bpos);
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, nb, 1.0, xc, d, 1.0,
                s->scatter, d);
    cblas_dgemv(CblasRowMajor, CblasTrans, nb, d, 1.0, xc, d, tc, 1, 1.0,
                s->scatter_pos, 1);
    double tt = 0.0;
    for (int i = 0; i < nb; i++)
        tt += tc[i] * tc[i];
    s->pos_scatter += tt;

    int64_t n_a = s->n, n = s->n + nb;
    if (n_a == 0) {
        memcpy(s->mean, bmean, (size_t)d * sizeof(double));
        s->pos_mean = bpos;
        s->n = n;
        return;
    }
    double between = (double)n_a * (double)nb / (double)n;
    double share = (double)nb / (double)n;
    double dt = bpos - s->pos_mean;
    for (int j = 0; j < d; j++)
        bmean[j] -= s->mean[j]; /* bmean now holds delta */
    cblas_dsyr(CblasRowMajor, CblasUpper, d, between, bmean, 1, s->scatter, d);
    cblas_daxpy(d, between * dt, bmean, 1, s->scatter_pos, 1);
    s->pos_scatter += between * dt * dt;
    cblas_daxpy(d, share, bmean, 1, s->mean, 1);
    s->pos_mean += share * dt;
    s->n = n;
}

void qk_moments_compute(qk_moments *m, const float *x, const int32_t *t, int64_t n)
{
    int d = m->dim;
    size_t dd = (size_t)d * (size_t)d;
    moment_sums s = {.dim = d, .mean = m->mean, .scatter = m->cov,
                     .scatter_pos = m->cov_pos};
    memset(m->mean, 0, (size_t)d * sizeof(double));
    memset(m->cov, 0, dd * sizeof(double));
    memset(m->cov_pos, 0, (size_t)d * sizeof(double));

    double *xc = qk_doubles((size_t)MOMENTS_BLOCK_ROWS * d);
    double *tc = qk_doubles(MOMENTS_BLOCK_ROWS);
    double *bmean = qk_doubles((size_t)d);
    for (int64_t start = 0; start < n; start += MOMENTS_BLOCK_ROWS) {
        int nb = (int)(n - start < MOMENTS_BLOCK_ROWS ? n - start : MOMENTS_BLOCK_ROWS);
        add_block(&s, x + (size_t)start * d, t + start, nb, xc, tc, bmean);
    }
    free(xc);
    free(tc);
    free(bmean);

    /* scatter -> covariance; mirror the upper triangle */
    m->n = n;
    m->pos_mean = s.pos_mean;
    m->pos_var = 0.0;
    if (n == 0)
        return;
    double inv = 1.0 / (double)n;
    for (int i = 0; i < d; i++) {
        for (int j = i; j < d; j++) {
            double v = m->cov[(size_t)i * d + j] * inv;
            m->cov[(size_t)i * d + j] = v;
            m->cov[(size_t)j * d + i] = v;
        }
        m->cov_pos[i] *= inv;
    }
    m->pos_var = s.pos_scatter * inv;
}

void qk_moments_pool(qk_moments *out, const qk_moments *a, const qk_moments *b)
{
    int d = a->dim;
    int64_t n = a->n + b->n;
    out->n = n;
    if (n == 0) {
        qk_moments_copy(out, a);
        return;
    }
    double wa = (double)a->n / (double)n, wb = (double)b->n / (double)n;
    double wab = wa * wb;
    double dt = a->pos_mean - b->pos_mean;
    for (int i = 0; i < d; i++) {
        double mi = a->mean[i] - b->mean[i];
        out->mean[i] = wa * a->mean[i] + wb * b->mean[i];
        out->cov_pos[i] = wa * a->cov_pos[i] + wb * b->cov_pos[i] + wab * mi * dt;
        for (int j = 0; j < d; j++) {
            size_t ij = (size_t)i * d + j;
            double mj = a->mean[j] - b->mean[j];
            out->cov[ij] = wa * a->cov[ij] + wb * b->cov[ij] + wab * mi * mj;
        }
    }
    out->pos_mean = wa * a->pos_mean + wb * b->pos_mean;
    out->pos_var = wa * a->pos_var + wb * b->pos_var + wab * dt * dt;
}

double qk_moments_trace(const qk_moments *m)
{
    double tr = 0.0;
    for (int i = 0; i < m->dim; i++)
        tr += m->cov[(size_t)i * m->dim + i];
    return tr;
}

int qk_moments_finite(const qk_moments *m)
{
    size_t d = (size_t)m->dim;
    if (!isfinite(m->pos_mean) || !isfinite(m->pos_var))
        return 0;
    for (size_t i = 0; i < d; i++)
        if (!isfinite(m->mean[i]) || !isfinite(m->cov_pos[i]))
            return 0;
    for (size_t i = 0; i < d * d; i++)
        if (!isfinite(m->cov[i]))
            return 0;
    return 1;
}
