/* The query side of a head (docs/plasticity.md, "Per head" steps 2-7 and
 * "Diagnostics of the queries"), in four passes over its rows, which are
 * taken in bin order (the layout's):
 *   A  gathered from the store's floats, oriented; column sums and sums
 *      against the centred positions (the positional regression);
 *   B  the sums of squares of the regression, and per row the projection
 *      on u = beta / |beta| (scalar predictability);
 *   C  reflected; column sums of the content coordinates, per bin and in
 *      all, and coordinate 1 (the positional one);
 *   D  the moments of the content coordinates about their means (skewness,
 *      kurtosis), the bins' variances, and the centred columns of the
 *      normality tests.
 * Every sum runs over the rows in bin order, each column in its own lane:
 * the same bits on every machine. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define QK_X86 1
#endif

#include "qk/moments.h"
#include "plasticity_internal.h"
#include "plasticity_vec.h"

/* Pass A: rows src[i] of q, oriented, into x (n x d); colsum[c] += x_ic,
 * tcsum[c] += tc_i x_ic. Returns the sum of x - x over every component: NaN
 * when one is not finite. */
QK_WIDE_BODY double pass_gather_body(const qk_plast_rows *q, const int64_t *src, int64_t n, int d,
                                     const double *sign, const double *tc, double *x,
                                     double *colsum, double *tcsum)
{
    acc8 bad = acc8_zero();
    double bad1 = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (i + GATHER_AHEAD < n) /* the rows come in bin order, not in the file's */
            prefetch_row(q->vector + src[i + GATHER_AHEAD] * d, (size_t)d * sizeof(float));
        const float *row = q->vector + src[i] * d;
        double *out = x + i * d;
        v8d t = splat8(tc[i]);
        int c = 0;
        for (; c + 8 <= d; c += 8) {
            v8d v = load8(sign + c) * load8f(row + c);
            acc8_add(bad, v - v);
            store8(out + c, v);
            store8(colsum + c, load8(colsum + c) + v);
            store8(tcsum + c, load8(tcsum + c) + t * v);
        }
        for (; c < d; c++) {
            double v = sign[c] * (double)row[c];
            bad1 += v - v;
            out[c] = v;
            colsum[c] += v;
            tcsum[c] += tc[i] * v;
        }
    }
    return acc8_sum(bad) + bad1;
}
QK_WIDE_CLONES(static, double, pass_gather,
               (const qk_plast_rows *q, const int64_t *src, int64_t n, int d, const double *sign,
                const double *tc, double *x, double *colsum, double *tcsum),
               (q, src, n, d, sign, tc, x, colsum, tcsum))

/* Pass B: the sums of squares about the mean and about the line alpha +
 * beta t; s[i] = x_i . u (when u is given). */
QK_WIDE_BODY void pass_fit_body(const double *x, const double *t, int64_t n, int d,
                                const double *mean, const double *alpha, const double *beta,
                                const double *u, double *ss_tot, double *ss_res, double *s)
{
    for (int64_t i = 0; i < n; i++) {
        const double *row = x + i * d;
        v8d ti = splat8(t[i]);
        int c = 0;
        for (; c + 8 <= d; c += 8) {
            v8d xv = load8(row + c);
            v8d dev = xv - load8(mean + c);
            v8d res = xv - (load8(alpha + c) + load8(beta + c) * ti);
            store8(ss_tot + c, load8(ss_tot + c) + dev * dev);
            store8(ss_res + c, load8(ss_res + c) + res * res);
        }
        for (; c < d; c++) {
            double dev = row[c] - mean[c];
            double res = row[c] - (alpha[c] + beta[c] * t[i]);
            ss_tot[c] += dev * dev;
            ss_res[c] += res * res;
        }
        if (u)
            s[i] = dot8(row, u, d);
    }
}
QK_WIDE_CLONES(static, void, pass_fit,
               (const double *x, const double *t, int64_t n, int d, const double *mean,
                const double *alpha, const double *beta, const double *u, double *ss_tot,
                double *ss_res, double *s),
               (x, t, n, d, mean, alpha, beta, u, ss_tot, ss_res, s))

/* Pass C: x_i <- x_i H (w NULL: H = I); y0[i] = x_i0; the column sums
 * over all rows and over each bin's rows. */
QK_WIDE_BODY void pass_rotate_body(double *x, int d, const double *w, const int64_t *bin_row,
                                   int n_bins, double *colsum, double *binsum, double *y0)
{
    for (int b = 0; b < n_bins; b++) {
        double *bsum = binsum + (size_t)b * d;
        for (int64_t i = bin_row[b]; i < bin_row[b + 1]; i++) {
            double *row = x + i * d;
            if (w)
                reflect_row(row, w, d, row);
            y0[i] = row[0];
            int c = 0;
            for (; c + 8 <= d; c += 8) {
                v8d v = load8(row + c);
                store8(colsum + c, load8(colsum + c) + v);
                store8(bsum + c, load8(bsum + c) + v);
            }
            for (; c < d; c++) {
                colsum[c] += row[c];
                bsum[c] += row[c];
            }
        }
    }
}
QK_WIDE_CLONES(static, void, pass_rotate,
               (double *x, int d, const double *w, const int64_t *bin_row, int n_bins,
                double *colsum, double *binsum, double *y0),
               (x, d, w, bin_row, n_bins, colsum, binsum, y0))

/* The 8-value lines of tile (line k: rows at..at+7 of tested column k)
 * into cols + at + k * stride (at and stride multiples of 8). Streaming
 * stores where there are: the lines go to memory without being read
 * first, and the KS tests read them once, in order. */
#ifdef QK_X86
__attribute__((target("avx512f"))) static void stream_lines(const double *tile, int n_test,
                                                          double *cols, int64_t stride)
{
    for (int k = 0; k < n_test; k++)
        _mm512_stream_pd(cols + (size_t)k * stride, _mm512_load_pd(tile + k * 8));
}

/* the same in two halves of a line */
__attribute__((target("avx"))) static void stream_lines_avx(const double *tile, int n_test,
                                                          double *cols, int64_t stride)
{
    for (int k = 0; k < n_test; k++) {
        double *line = cols + (size_t)k * stride;
        _mm256_stream_pd(line, _mm256_load_pd(tile + k * 8));
        _mm256_stream_pd(line + 4, _mm256_load_pd(tile + k * 8 + 4));
    }
}
#endif

static void store_lines(const double *tile, int n_test, double *cols, int64_t stride)
{
#ifdef QK_X86
    int isa = qk_isa();
    if (isa == QK_ISA_AVX512) {
        stream_lines(tile, n_test, cols, stride);
        return;
    }
    if (isa == QK_ISA_AVX2) {
        stream_lines_avx(tile, n_test, cols, stride);
        return;
    }
#endif
    for (int k = 0; k < n_test; k++)
        memcpy(cols + (size_t)k * stride, tile + k * 8, 8 * sizeof *cols);
}

/* Pass D: about the column means, the sums of the 2nd to 4th powers;
 * about the bin means, the sums of squares; the centred tested columns
 * (column dims[k] into cols + k * stride, stride a multiple of 8 above n, cols
 * and tile 64-byte aligned). The tested values of 8 rows wait in tile (8
 * per column), so that each column gets whole cache lines: a store per
 * value would wait for its line to be read, n_test lines a row. */
QK_WIDE_BODY void pass_moments_body(const double *x, int d, const int64_t *bin_row, int n_bins,
                                    const double *colmean, const double *binmean, const int *dims,
                                    int n_test, double *m2, double *m3, double *m4, double *binss,
                                    double *tile, double *cols, int64_t stride)
{
    int64_t n = bin_row[n_bins];
    for (int b = 0; b < n_bins; b++) {
        const double *bmean = binmean + (size_t)b * d;
        double *bss = binss + (size_t)b * d;
        for (int64_t i = bin_row[b]; i < bin_row[b + 1]; i++) {
            const double *row = x + i * d;
            int c = 0;
            for (; c + 8 <= d; c += 8) {
                v8d xv = load8(row + c);
                v8d dev = xv - load8(colmean + c), dev2 = dev * dev;
                store8(m2 + c, load8(m2 + c) + dev2);
                store8(m3 + c, load8(m3 + c) + dev2 * dev);
                store8(m4 + c, load8(m4 + c) + dev2 * dev2);
                v8d bdev = xv - load8(bmean + c);
                store8(bss + c, load8(bss + c) + bdev * bdev);
            }
            for (; c < d; c++) {
                double dev = row[c] - colmean[c], dev2 = dev * dev;
                m2[c] += dev2;
                m3[c] += dev2 * dev;
                m4[c] += dev2 * dev2;
                double bdev = row[c] - bmean[c];
                bss[c] += bdev * bdev;
            }
            int j = (int)(i % 8);
            for (int k = 0; k < n_test; k++)
                tile[k * 8 + j] = row[dims[k]] - colmean[dims[k]];
            if (j == 7 || i == n - 1)
                store_lines(tile, n_test, cols + (i - j), stride);
        }
    }
}
QK_WIDE_CLONES(static, void, pass_moments,
               (const double *x, int d, const int64_t *bin_row, int n_bins, const double *colmean,
                const double *binmean, const int *dims, int n_test, double *m2, double *m3,
                double *m4, double *binss, double *tile, double *cols, int64_t stride),
               (x, d, bin_row, n_bins, colmean, binmean, dims, n_test, m2, m3, m4, binss, tile,
                cols, stride))

/* col[k] /= sd[k] for the n_test columns of n values. */
QK_WIDE_BODY void scale_columns_body(double *cols, int64_t n, int n_test, int64_t stride,
                                     const double *sd)
{
    for (int k = 0; k < n_test; k++) {
        double *col = cols + (size_t)k * stride;
        v8d s = splat8(sd[k]);
        int64_t i = 0;
        for (; i + 8 <= n; i += 8)
            store8(col + i, load8(col + i) / s);
        for (; i < n; i++)
            col[i] /= sd[k];
    }
}
QK_WIDE_CLONES(static, void, scale_columns,
               (double *cols, int64_t n, int n_test, int64_t stride, const double *sd),
               (cols, n, n_test, stride, sd))

/* OLS of y on x: slope, intercept; constant x gives slope 0. */
static void ols(const double *x, const double *y, int64_t n, double *slope, double *icept)
{
    double xm = 0.0, ym = 0.0;
    for (int64_t i = 0; i < n; i++) {
        xm += x[i];
        ym += y[i];
    }
    xm = n ? xm / (double)n : 0.0;
    ym = n ? ym / (double)n : 0.0;
    double sxx = 0.0, sxy = 0.0;
    for (int64_t i = 0; i < n; i++) {
        sxx += (x[i] - xm) * (x[i] - xm);
        sxy += (x[i] - xm) * y[i];
    }
    *slope = sxx > 0.0 ? sxy / sxx : 0.0;
    *icept = ym - *slope * xm;
}

/* q_R2_scalar and the MAEs: y = log2(t + 1) regressed on s = X u (s NULL:
 * no direction). */
static void scalar_predictability(const double *s, const double *t, int64_t n, qk_plast_head *h)
{
    double *y = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *y);
    double ym = 0.0;
    for (int64_t i = 0; i < n; i++) {
        y[i] = log2(t[i] + 1.0);
        ym += y[i];
    }
    ym = n ? ym / (double)n : 0.0;
    double base = 0.0;
    for (int64_t i = 0; i < n; i++)
        base += fabs(y[i] - ym);
    base = n ? base / (double)n : 0.0;
    h->q_r2_scalar = 0.0;
    h->q_mae_baseline = base;
    h->q_mae_proj = base;
    double sm = 0.0, sxx = 0.0;
    if (s && n > 0) {
        for (int64_t i = 0; i < n; i++)
            sm += s[i];
        sm /= (double)n;
        for (int64_t i = 0; i < n; i++)
            sxx += (s[i] - sm) * (s[i] - sm);
    }
    if (sxx > 0.0) {
        double slope, icept, ss_res = 0.0, ss_tot = 0.0, mae = 0.0;
        ols(s, y, n, &slope, &icept);
        for (int64_t i = 0; i < n; i++) {
            double r = y[i] - (icept + slope * s[i]);
            ss_res += r * r;
            ss_tot += (y[i] - ym) * (y[i] - ym);
            mae += fabs(r);
        }
        h->q_mae_proj = mae / (double)n;
        h->q_r2_scalar = ss_tot > 0.0 ? 1.0 - ss_res / ss_tot : 0.0;
    }
    h->q_mae_ratio = h->q_mae_baseline > 0.0 ? h->q_mae_proj / h->q_mae_baseline : 1.0;
    free(y);
}

/* Coordinate 1 of the rotated queries (y) against position: alpha_pos,
 * beta_pos, sigma2_pos (ddof 1) and the residual's shape. Uses y. */
static void position_coordinate(double *y, const double *t, int64_t n, qk_plast_head *h)
{
    double slope, icept;
    ols(t, y, n, &slope, &icept);
    h->alpha_pos = icept;
    h->beta_pos = slope;
    double rm = 0.0, ss = 0.0;
    for (int64_t i = 0; i < n; i++) {
        y[i] -= icept + slope * t[i];
        rm += y[i];
    }
    rm = n ? rm / (double)n : 0.0;
    for (int64_t i = 0; i < n; i++)
        ss += (y[i] - rm) * (y[i] - rm);
    double sd = n > 1 ? sqrt(ss / (double)(n - 1)) : NAN;
    h->sigma2_pos = n < 2 ? 1.0 : sd * sd;
    h->resid0_skew = 0.0;
    h->resid0_kurt = 0.0;
    h->resid0_ks_p = 1.0;
    if (n >= 2 && sd > 0.0) {
        for (int64_t i = 0; i < n; i++)
            y[i] = (y[i] - rm) / sd;
        qk_plast_skew_kurt(y, n, &h->resid0_skew, &h->resid0_kurt);
        h->resid0_ks_p = qk_plast_ks_norm(y, n);
    }
}

/* The regression of pass A's sums: mean, beta (0 for constant t), alpha;
 * R^2 per column from pass B. */
static void regression(const double *colsum, const double *tcsum, int64_t n, double t_mean,
                       double stt, int d, double *mean, double *alpha, double *beta)
{
    for (int c = 0; c < d; c++) {
        mean[c] = n > 0 ? colsum[c] / (double)n : 0.0;
        beta[c] = stt > 0.0 ? tcsum[c] / stt : 0.0;
        alpha[c] = mean[c] - beta[c] * t_mean;
    }
}

/* The content coordinates: the medians of |skew| and |kurt| over all, and
 * the KS tests of the n_test centred columns (scaled here). */
static void noise_summary(int64_t n, int d, const double *mean, const double *m2,
                          const double *m3, const double *m4, const int *dims, int n_test,
                          double *cols, int64_t stride, const qk_plast_params *p,
                          qk_plast_head *h)
{
    int nd = d - 1;
    double *skews = qk_malloc((size_t)nd * sizeof *skews);
    double *kurts = qk_malloc((size_t)nd * sizeof *kurts);
    for (int c = 1; c < d; c++) {
        qk_plast_skew_kurt_finish(n, mean[c], m2[c], m3[c], m4[c], &skews[c - 1], &kurts[c - 1]);
        skews[c - 1] = fabs(skews[c - 1]);
        kurts[c - 1] = fabs(kurts[c - 1]);
    }
    h->noise_med_abs_skew = qk_plast_median(skews, nd);
    h->noise_med_abs_kurt = qk_plast_median(kurts, nd);
    double *sds = qk_malloc((size_t)(n_test > 0 ? n_test : 1) * sizeof *sds);
    for (int k = 0; k < n_test; k++) {
        double sd = sqrt(m2[dims[k]] / (double)(n - 1));
        sds[k] = sd > 0.0 ? sd : 1.0;
    }
    scale_columns(cols, n, n_test, stride, sds);
    for (int k = 0; k < n_test; k++) /* reuse skews for the statistics */
        skews[k] = qk_plast_ks_statistic(cols + (size_t)k * stride, n);
    if (n_test > 0) {
        int below;
        qk_plast_ks_summary(n, skews, n_test, p->p_alpha, &h->noise_med_ks_p, &below);
        h->noise_frac_ks_lt_alpha = (double)below / n_test;
    }
    free(sds);
    free(kurts);
    free(skews);
}

/* The tested content columns (1..d-1): a seeded choice of
 * min(normality_max_dims, d - 1) by partial Fisher-Yates. */
static int *tested_columns(int d, const qk_plast_params *p, qk_rng *rng, int *n_test)
{
    int nd = d - 1;
    int *dims = qk_malloc((size_t)(nd > 0 ? nd : 1) * sizeof *dims);
    for (int c = 0; c < nd; c++)
        dims[c] = c;
    *n_test = p->normality_max_dims < nd ? p->normality_max_dims : nd;
    for (int i = 0; i < *n_test; i++) {
        int j = i + (int)qk_rng_below(rng, (uint64_t)(nd - i));
        int tmp = dims[i];
        dims[i] = dims[j];
        dims[j] = tmp;
    }
    for (int i = 0; i < *n_test; i++)
        dims[i]++; /* as columns of the rows */
    return dims;
}

int qk_plast_queries(const qk_plast_rows *q, const int64_t *q_rows, const qk_plast_layout *l,
                     int d, const double *sign, const qk_plast_params *p, qk_rng *noise_rng,
                     qk_plast_cache *cache, qk_plast_head *h, qk_plast_query_model *m)
{
    int64_t n = l->nq;
    int n_bins = l->grid.n_bins;
    size_t rows = (size_t)(n > 0 ? n : 1), nd = (size_t)d;
    const double *t = l->t_q;
    memcpy(h->bin_queries, l->bin_queries, (size_t)n_bins * sizeof *h->bin_queries);
    memcpy(h->bin_tau, l->bin_tau, (size_t)n_bins * sizeof *h->bin_tau);

    /* A: the rows and the regression's sums */
    int64_t *src = qk_malloc(rows * sizeof *src);
    double *tc = qk_malloc(rows * sizeof *tc);
    double t_mean = 0.0, stt = 0.0;
    for (int64_t i = 0; i < n; i++) {
        src[i] = q_rows[l->q_order[i]];
        t_mean += t[i];
    }
    t_mean = n > 0 ? t_mean / (double)n : 0.0;
    for (int64_t i = 0; i < n; i++) {
        tc[i] = t[i] - t_mean;
        stt += tc[i] * tc[i];
    }
    double *colsum = qk_doubles(nd), *tcsum = qk_doubles(nd);
    m->q = qk_plast_cache_buffer(cache, QK_PLAST_BUF_QUERIES, rows * nd);
    double bad = pass_gather(q, src, n, d, sign, tc, m->q, colsum, tcsum);
    if (bad != bad) {
        free(tcsum);
        free(colsum);
        free(tc);
        free(src);
        memset(m, 0, sizeof *m);
        return -1;
    }
    double *mean = qk_doubles(nd), *alpha = qk_doubles(nd), *beta = qk_doubles(nd);
    regression(colsum, tcsum, n, t_mean, stt, d, mean, alpha, beta);

    /* B: R^2 per component, the projections */
    h->q_beta_norm = cblas_dnrm2(d, beta, 1);
    m->hv = qk_doubles(nd);
    m->reflect = qk_plast_householder(beta, d, m->hv);
    double *u = NULL;
    if (h->q_beta_norm > 0.0) {
        u = qk_doubles(nd);
        for (int c = 0; c < d; c++)
            u[c] = beta[c] / h->q_beta_norm;
    }
    double *ss_tot = qk_doubles(nd), *ss_res = qk_doubles(nd);
    double *s = qk_malloc(rows * sizeof *s);
    pass_fit(m->q, t, n, d, mean, alpha, beta, u, ss_tot, ss_res, s);
    double r2_sum = 0.0;
    for (int c = 0; c < d; c++) {
        double v = stt > 0.0 ? 1.0 - ss_res[c] / fmax(ss_tot[c], 1e-12) : 0.0;
        h->component_r2[c] = v > 1.0 ? 1.0 : v;
        r2_sum += h->component_r2[c];
    }
    h->q_r2_pos = d > 0 ? r2_sum / d : 0.0;
    qk_plast_component_weights(h->component_r2, d, h->component_weight);
    scalar_predictability(u ? s : NULL, t, n, h);

    /* C: the rotation; the positional coordinate; the means */
    double *binsum = qk_doubles((size_t)n_bins * nd), *y0 = qk_malloc(rows * sizeof *y0);
    memset(colsum, 0, nd * sizeof *colsum);
    pass_rotate(m->q, d, m->reflect ? m->hv : NULL, l->bin_row, n_bins, colsum, binsum, y0);
    position_coordinate(y0, t, n, h);
    for (int c = 0; c < d; c++)
        mean[c] = n > 0 ? colsum[c] / (double)n : 0.0;
    m->mean = qk_doubles((size_t)n_bins * nd);
    m->var = qk_doubles((size_t)n_bins * nd);
    for (int b = 0; b < n_bins; b++) {
        int64_t nb = l->bin_queries[b];
        if (nb < QK_PLAST_MIN_BIN_QUERIES)
            continue;
        for (int c = 1; c < d; c++)
            m->mean[(size_t)b * d + c] = binsum[(size_t)b * d + c] / (double)nb;
    }

    /* D: the moments, the bins' variances, the tested columns */
    h->noise_med_abs_skew = 0.0;
    h->noise_med_abs_kurt = 0.0;
    h->noise_med_ks_p = 1.0;
    h->noise_frac_ks_lt_alpha = 0.0;
    int n_test = 0;
    int *dims = tested_columns(d, p, noise_rng, &n_test);
    double *m2 = qk_doubles(nd), *m3 = qk_doubles(nd), *m4 = qk_doubles(nd);
    int64_t stride = (n + 7) / 8 * 8;
    size_t tested = (size_t)(n_test > 0 ? n_test : 1);
    double *cols = qk_plast_cache_buffer(cache, QK_PLAST_BUF_COLUMNS, tested * (size_t)stride);
    double *tile = qk_doubles(tested * 8); /* zeroed: no line stored holds an unset value */
    pass_moments(m->q, d, l->bin_row, n_bins, mean, m->mean, dims, n_test, m2, m3, m4, m->var,
                tile, cols, stride);
    free(tile);
    if (d > 1 && n >= 3)
        noise_summary(n, d, mean, m2, m3, m4, dims, n_test, cols, stride, p, h);
    for (int b = 0; b < n_bins; b++) {
        int64_t nb = l->bin_queries[b];
        double *mb = m->mean + (size_t)b * d, *vb = m->var + (size_t)b * d;
        if (nb < QK_PLAST_MIN_BIN_QUERIES) {
            memset(vb, 0, nd * sizeof *vb);
            continue;
        }
        for (int c = 1; c < d; c++)
            vb[c] /= (double)(nb - 1);
        mb[0] = h->alpha_pos + h->beta_pos * l->bin_tau[b];
        vb[0] = h->sigma2_pos;
    }
    free(m4);
    free(m3);
    free(m2);
    free(dims);
    free(y0);
    free(binsum);
    free(s);
    free(ss_res);
    free(ss_tot);
    free(u);
    free(beta);
    free(alpha);
    free(mean);
    free(tcsum);
    free(colsum);
    free(tc);
    free(src);
    return 0;
}

void qk_plast_query_model_free(qk_plast_query_model *m)
{
    free(m->hv);
    free(m->mean);
    free(m->var);
    memset(m, 0, sizeof *m);
}
