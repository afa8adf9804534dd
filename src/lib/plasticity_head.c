/* The per-head algorithm (docs/plasticity.md, "Per head"): orientation,
 * positional regression, Householder rotation, per-bin query model, key
 * pairs and the closed-form PP of every (pair, bin), as BLAS tables:
 *   S = K_rot M^T              the mean term m = S[k1,b] - S[k2,b]
 *   V = (delta o delta) C^T     the diagonal variance v (one GEMM per block
 *                               of pairs; the squares of the differences
 *                               are formed first, so nothing cancels)
 * and PP of a whole block in one vectorised batch (plasticity_erfc.c).
 *   Y = K Qc_b^T                the full-covariance variance |Y_k1 - Y_k2|^2
 *                               / (n_b - 1), one GEMM per bin.
 * One head runs in one thread, every sum in a fixed order: the results do
 * not depend on the thread that computed them. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "qk/moments.h"
#include "qk/plasticity.h"
#include "qk/rng.h"
#include "plasticity_vec.h"

#define PAIR_BLOCK 512
/* keys per range of examples whose pairs are evaluated together */
#define RANGE_KEYS 1024
/* stream tags of the random choices of a head */
enum { STREAM_SUBSAMPLE_Q = 1, STREAM_SUBSAMPLE_K = 2, STREAM_NOISE_DIMS = 3, STREAM_PAIRS = 4 };

/* A same-example key pair: rows a < b of the sorted keys (position of a <=
 * position of b), eligible for the query bins first .. n_bins - 1. */
typedef struct key_pair {
    int32_t a, b;
    int32_t first;
    int32_t dist_cell; /* |t_a - t_b| / B */
    int64_t pos_sum;   /* t_a + t_b */
} key_pair;

typedef struct head_work {
    int d, n_bins, n_cells, bucket_size;
    double inv_two_b; /* 1 / 2B when 2B is a power of two, else 0 */
    int64_t nq, nk;
    double *q;          /* [nq * d] oriented, rotated */
    int64_t *q_row;     /* the rows of q by bin (stable) */
    double *t_q;        /* positions of those rows */
    int64_t *bin_row;   /* [n_bins + 1] first sorted query row of each bin */
    double *k;          /* [nk * d] oriented, rotated, sorted by range, position */
    int32_t *t_k, *ex_k;  /* keys by range of examples, then position */
    int32_t *by_example;  /* the keys in (example, position) order */
    int32_t *range_of;    /* the range of examples of each key */
    int64_t *range_start; /* [n_ranges + 1] first key of each range */
    int n_ranges;
    double *mean;       /* [n_bins * d] M_b */
    double *var;        /* [n_bins * d] diagonal of C_b */
    unsigned char *kept;
    double *score;      /* [nk * n_bins] S */
    key_pair *pairs;    /* sorted by first bin */
    int64_t n_pairs;
    double *bin_sum;    /* [n_bins] */
    double *cell_sum;   /* [n_cells^2] */
} head_work;

static void work_free(head_work *w)
{
    free(w->q);
    free(w->q_row);
    free(w->t_q);
    free(w->bin_row);
    free(w->k);
    free(w->t_k);
    free(w->ex_k);
    free(w->by_example);
    free(w->range_of);
    free(w->range_start);
    free(w->mean);
    free(w->var);
    free(w->kept);
    free(w->score);
    free(w->pairs);
    free(w->bin_sum);
    free(w->cell_sum);
}

/* An array of n doubles on a 64-byte boundary like qk_doubles (BLAS takes
 * the same path in every thread), not zeroed: for arrays that are written
 * in full before they are read. */
static double *raw_doubles(size_t n)
{
    size_t bytes = ((n ? n : 1) * sizeof(double) + 63) / 64 * 64;
    double *p = aligned_alloc(64, bytes);
    if (!p)
        qk_die(QK_EXIT_DATA, NULL, "out of memory (allocating %zu bytes)", bytes);
    return p;
}

/* ---- input rows ------------------------------------------------------------------ */

static int cmp_row(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The rows to use: all, or max_tokens of them drawn without replacement
 * (partial Fisher-Yates), in ascending order. */
static int64_t *choose_rows(int64_t n, int64_t max_tokens, qk_rng *rng, int64_t *n_used)
{
    int64_t *rows = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *rows);
    for (int64_t i = 0; i < n; i++)
        rows[i] = i;
    *n_used = n;
    if (n > max_tokens) {
        for (int64_t i = 0; i < max_tokens; i++) {
            int64_t j = i + (int64_t)qk_rng_below(rng, (uint64_t)(n - i));
            int64_t tmp = rows[i];
            rows[i] = rows[j];
            rows[j] = tmp;
        }
        *n_used = max_tokens;
        /* ascending, so the kept rows keep their file order */
        qsort(rows, (size_t)max_tokens, sizeof *rows, cmp_row);
    }
    return rows;
}

/* 1 if no component of v[d] is infinite or NaN (all exponent bits set),
 * branch-free over the row. */
static int row_finite(const float *v, int d)
{
    typedef uint32_t v4u __attribute__((vector_size(16)));
    typedef int32_t v4i __attribute__((vector_size(16)));
    const v4u exponent = {0x7f800000u, 0x7f800000u, 0x7f800000u, 0x7f800000u};
    v4i bad4 = {0, 0, 0, 0};
    int c = 0;
    for (; c + 4 <= d; c += 4) {
        v4u b;
        memcpy(&b, v + c, sizeof b);
        bad4 |= (b & exponent) == exponent;
    }
    uint32_t bad = (uint32_t)(bad4[0] | bad4[1] | bad4[2] | bad4[3]);
    for (; c < d; c++) {
        uint32_t b;
        memcpy(&b, &v[c], sizeof b);
        bad |= (uint32_t)((b & 0x7f800000u) == 0x7f800000u);
    }
    return !bad;
}

/* Positions must lie on the grid: queries in a bin < n_bins, keys in a
 * heatmap cell < n_cells; vectors must be finite. */
static int check_rows(const qk_plast_rows *r, const int64_t *rows, int64_t n, int d,
                      const qk_plast_grid *g, char kind, qk_err *err)
{
    const char *what = kind == 'q' ? "query" : "key";
    for (int64_t i = 0; i < n; i++) {
        int64_t row = rows[i];
        int32_t t = r->position[row];
        int off = t < 0 || (kind == 'q' ? qk_plast_bin_of(g, t) >= g->n_bins
                                         : t / g->bucket_size >= g->n_cells);
        if (off)
            return qk_fail(err, "%s row %lld: position %d is outside the grid of the "
                           "dataset", what, (long long)row, t);
        const float *v = r->vector + row * d;
        if (!row_finite(v, d))
            for (int c = 0; c < d; c++)
                if (!isfinite(v[c]))
                    return qk_fail(err, "%s row %lld: component %d is not finite", what,
                                   (long long)row, c);
    }
    return 0;
}

/* Row `row` of r as doubles, multiplied by sign (if given), into dst[d]. */
static void gather_row(const qk_plast_rows *r, int64_t row, int d, const double *sign,
                       double *dst)
{
    const float *src = r->vector + row * d;
    int c = 0;
    if (sign)
        for (; c + 2 <= d; c += 2)
            store2(dst + c, load2(sign + c) * load2f(src + c));
    else
        for (; c + 2 <= d; c += 2)
            store2(dst + c, load2f(src + c));
    for (; c < d; c++)
        dst[c] = sign ? sign[c] * (double)src[c] : (double)src[c];
}

/* rows[] of r as doubles, each multiplied by sign (if given). */
static double *gather(const qk_plast_rows *r, const int64_t *rows, int64_t n, int d,
                      const double *sign)
{
    double *x = raw_doubles((size_t)(n > 0 ? n : 1) * (size_t)d);
    for (int64_t i = 0; i < n; i++)
        gather_row(r, rows[i], d, sign, x + i * d);
    return x;
}

/* ---- regression diagnostics ("Diagnostics of the queries") ------------------------------ */

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

/* q_R2_scalar and the MAEs: y = log2(t + 1) regressed on s = X u. */
static void scalar_predictability(const double *x, const double *t, int64_t n, int d,
                                  const double *beta, double beta_norm, qk_plast_head *h)
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
    double *u = qk_doubles((size_t)d), *s = qk_doubles((size_t)(n > 0 ? n : 1));
    double sm = 0.0, sxx = 0.0;
    if (beta_norm > 0.0 && n > 0) {
        for (int c = 0; c < d; c++)
            u[c] = beta[c] / beta_norm;
        cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)n, d, 1.0, x, d, u, 1, 0.0, s, 1);
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
    free(s);
    free(u);
    free(y);
}

static double mean_of(const double *x, int64_t n)
{
    double m = 0.0;
    for (int64_t i = 0; i < n; i++)
        m += x[i];
    return n ? m / (double)n : 0.0;
}

static double sd_of(const double *x, int64_t n, double mean)
{
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    return n > 1 ? sqrt(ss / (double)(n - 1)) : NAN;
}

/* Coordinate 1 of the rotated queries against position: alpha_pos,
 * beta_pos, sigma2_pos (ddof 1) and the residual's shape. */
static void position_coordinate(const double *q, const double *t, int64_t n, int d,
                                qk_plast_head *h)
{
    double *y = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *y);
    for (int64_t i = 0; i < n; i++)
        y[i] = q[i * d];
    double slope, icept;
    ols(t, y, n, &slope, &icept);
    h->alpha_pos = icept;
    h->beta_pos = slope;
    for (int64_t i = 0; i < n; i++)
        y[i] -= icept + slope * t[i];
    double rm = mean_of(y, n), sd = sd_of(y, n, rm);
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
    free(y);
}

/* The content coordinates 2..d, each z-scored: median |skew| and |kurt| over
 * all, KS against N(0,1) on a seeded choice of normality_max_dims. */
static void noise_normality(const double *q, int64_t n, int d, const qk_plast_params *p,
                            qk_rng *rng, qk_plast_head *h)
{
    int nd = d - 1;
    h->noise_med_abs_skew = 0.0;
    h->noise_med_abs_kurt = 0.0;
    h->noise_med_ks_p = 1.0;
    h->noise_frac_ks_lt_alpha = 0.0;
    if (nd <= 0 || n < 3)
        return;
    double *skews = qk_malloc((size_t)nd * sizeof *skews);
    double *kurts = qk_malloc((size_t)nd * sizeof *kurts);
    double *means = qk_malloc((size_t)nd * sizeof *means);
    double *ss = qk_malloc((size_t)nd * sizeof *ss);
    int *dims = qk_malloc((size_t)nd * sizeof *dims);
    qk_plast_skew_kurt_columns(q + 1, n, d, nd, skews, kurts, means, ss);
    for (int c = 0; c < nd; c++) {
        skews[c] = fabs(skews[c]);
        kurts[c] = fabs(kurts[c]);
        dims[c] = c;
    }
    h->noise_med_abs_skew = qk_plast_median(skews, nd);
    h->noise_med_abs_kurt = qk_plast_median(kurts, nd);
    int n_test = p->normality_max_dims < nd ? p->normality_max_dims : nd;
    for (int i = 0; i < n_test; i++) { /* partial Fisher-Yates */
        int j = i + (int)qk_rng_below(rng, (uint64_t)(nd - i));
        int tmp = dims[i];
        dims[i] = dims[j];
        dims[j] = tmp;
    }
    /* the tested columns one after the other, z-scored (blocks of rows, so
     * that both sides stay in cache); the standard deviation with n - 1,
     * from the sums above */
    double *cols = raw_doubles((size_t)(n_test > 0 ? n_test : 1) * (size_t)n);
    double *sds = qk_malloc((size_t)(n_test > 0 ? n_test : 1) * sizeof *sds);
    for (int i = 0; i < n_test; i++) {
        double sd = sqrt(ss[dims[i]] / (double)(n - 1));
        sds[i] = sd > 0.0 ? sd : 1.0;
    }
    for (int64_t r0 = 0; r0 < n; r0 += 64) {
        int64_t r1 = r0 + 64 < n ? r0 + 64 : n;
        for (int i = 0; i < n_test; i++) {
            double m = means[dims[i]], sd = sds[i];
            double *col = cols + (size_t)i * n;
            const double *src = q + 1 + dims[i];
            int64_t r = r0;
            v2d mv = {m, m}, sdv = {sd, sd};
            for (; r + 2 <= r1; r += 2) {
                v2d xv = {src[r * d], src[(r + 1) * d]};
                store2(col + r, (xv - mv) / sdv);
            }
            for (; r < r1; r++)
                col[r] = (src[r * d] - m) / sd;
        }
    }
    for (int i = 0; i < n_test; i++) /* reuse skews for the statistics */
        skews[i] = qk_plast_ks_norm_statistic(cols + (size_t)i * n, n);
    if (n_test > 0) {
        int below;
        qk_plast_ks_summary(n, skews, n_test, p->p_alpha, &h->noise_med_ks_p, &below);
        h->noise_frac_ks_lt_alpha = (double)below / n_test;
    }
    free(sds);
    free(cols);
    free(dims);
    free(ss);
    free(means);
    free(kurts);
    free(skews);
}

/* ---- the query model per bin (step 7) ---------------------------------------------------- */

/* Orders the query rows by bin (stable): w->q_row[i] is the row of q (kept
 * as it is, in w->q) at place i, w->t_q its position, w->bin_row[b] the
 * first place of bin b. Takes q over. */
static void sort_queries(head_work *w, double *q, const double *t, const int64_t *bin)
{
    int64_t *count = qk_calloc((size_t)w->n_bins + 1, sizeof *count);
    for (int64_t i = 0; i < w->nq; i++)
        count[bin[i] + 1]++;
    for (int b = 0; b < w->n_bins; b++)
        count[b + 1] += count[b];
    w->bin_row = qk_malloc(((size_t)w->n_bins + 1) * sizeof *w->bin_row);
    memcpy(w->bin_row, count, ((size_t)w->n_bins + 1) * sizeof *count);
    w->q = q;
    w->q_row = qk_malloc((size_t)(w->nq > 0 ? w->nq : 1) * sizeof *w->q_row);
    w->t_q = qk_malloc((size_t)(w->nq > 0 ? w->nq : 1) * sizeof *w->t_q);
    for (int64_t i = 0; i < w->nq; i++) {
        int64_t to = count[bin[i]]++;
        w->q_row[to] = i;
        w->t_q[to] = t[i];
    }
    free(count);
}

/* n_b, tau_b, M_b = (alpha_pos + beta_pos tau_b, mu_b) and the diagonal
 * C_b = (sigma2_pos, sigma2_b) with ddof 1. */
static void bin_model(head_work *w, qk_plast_head *h)
{
    int d = w->d;
    w->mean = qk_doubles((size_t)w->n_bins * (size_t)d);
    w->var = qk_doubles((size_t)w->n_bins * (size_t)d);
    for (int b = 0; b < w->n_bins; b++) {
        int64_t lo = w->bin_row[b], n = w->bin_row[b + 1] - lo;
        h->bin_queries[b] = n;
        h->bin_tau[b] = n ? mean_of(w->t_q + lo, n) : NAN;
        if (n < QK_PLAST_MIN_BIN_QUERIES)
            continue;
        double *m = w->mean + (size_t)b * d, *v = w->var + (size_t)b * d;
        for (int64_t i = lo; i < lo + n; i++) {
            const double *row = w->q + w->q_row[i] * d;
            int c = 1;
            for (; c + 2 <= d; c += 2)
                store2(m + c, load2(m + c) + load2(row + c));
            for (; c < d; c++)
                m[c] += row[c];
        }
        for (int c = 1; c < d; c++)
            m[c] /= (double)n;
        for (int64_t i = lo; i < lo + n; i++) {
            const double *row = w->q + w->q_row[i] * d;
            int c = 1;
            for (; c + 2 <= d; c += 2) {
                v2d dev = load2(row + c) - load2(m + c);
                store2(v + c, load2(v + c) + dev * dev);
            }
            for (; c < d; c++) {
                double dev = row[c] - m[c];
                v[c] += dev * dev;
            }
        }
        for (int c = 1; c < d; c++)
            v[c] /= (double)(n - 1);
        m[0] = h->alpha_pos + h->beta_pos * h->bin_tau[b];
        v[0] = h->sigma2_pos;
    }
}

/* ---- keys and pairs (step 8) ------------------------------------------------------------- */

/* out = x H = x - 2 (x . w) w for one row of d (the dot product in two
 * interleaved partial sums, a fixed order; no BLAS: the same values on
 * every machine). */
static void reflect_row(const double *x, const double *w, int d, double *out)
{
    v2d acc = {0.0, 0.0};
    int c = 0;
    for (; c + 2 <= d; c += 2)
        acc += load2(x + c) * load2(w + c);
    double dot = acc[0] + acc[1];
    for (; c < d; c++)
        dot += x[c] * w[c];
    double two_dot = 2.0 * dot;
    v2d scale = {two_dot, two_dot};
    for (c = 0; c + 2 <= d; c += 2)
        store2(out + c, load2(x + c) - scale * load2(w + c));
    for (; c < d; c++)
        out[c] = x[c] - two_dot * w[c];
}

/* Sorts idx[n] stably by key[idx[i]]: least significant digit first, 11
 * bits a pass, skipping the digits all keys share. */
static void radix_sort_index(const uint64_t *key, int64_t *idx, int64_t n)
{
    enum { BITS = 11, SIZE = 1 << BITS };
    int64_t *tmp = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *tmp);
    uint32_t *count = qk_malloc(SIZE * sizeof *count);
    for (int shift = 0; shift < 64; shift += BITS) {
        memset(count, 0, SIZE * sizeof *count);
        for (int64_t i = 0; i < n; i++)
            count[(key[idx[i]] >> shift) & (SIZE - 1)]++;
        if (n == 0 || count[(key[idx[0]] >> shift) & (SIZE - 1)] == (uint32_t)n)
            continue;
        uint32_t sum = 0;
        for (int d = 0; d < SIZE; d++) {
            uint32_t here = count[d];
            count[d] = sum;
            sum += here;
        }
        for (int64_t i = 0; i < n; i++)
            tmp[count[(key[idx[i]] >> shift) & (SIZE - 1)]++] = idx[i];
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
    free(count);
    free(tmp);
}

/* an int32 as an unsigned value of the same order */
static inline uint64_t ordered32(int32_t v)
{
    return (uint64_t)((uint32_t)v ^ UINT32_C(0x80000000));
}

/* Sorts the keys into w->k, w->t_k, w->ex_k by range of examples, then by
 * position (ties by example, then row). A range is a run of consecutive
 * examples (in example order) with at least RANGE_KEYS keys: the pairs of
 * one range are evaluated together, so the key and score rows they read
 * stay in cache; inside a range the keys before a bin start are a prefix,
 * so the score table is only computed where pairs read it. w->by_example
 * lists the keys by (example, position, row): the order in which pairs are
 * generated. Key i is row krows[i] of k: it is read from there straight
 * into its sorted place, multiplied by the orientation sign and reflected
 * by H = I - 2 hv hv^T on the way (hv: the Householder vector, or NULL for
 * H = I). */
static void sort_keys(head_work *w, const qk_plast_rows *k, const int64_t *krows,
                      const double *sign, const int32_t *t, const int32_t *ex, const double *hv)
{
    int64_t nk = w->nk;
    size_t n = (size_t)(nk > 0 ? nk : 1);
    uint64_t *key = qk_malloc(n * sizeof *key);
    int64_t *by_ex = qk_malloc(n * sizeof *by_ex), *by_pos = qk_malloc(n * sizeof *by_pos);
    int32_t *range = qk_malloc(n * sizeof *range);
    for (int64_t i = 0; i < nk; i++) {
        key[i] = ordered32(ex[i]) << 32 | ordered32(t[i]);
        by_ex[i] = i;
    }
    radix_sort_index(key, by_ex, nk); /* stable: ties stay in row order */
    /* ranges of whole examples, in example order */
    int32_t r = 0;
    int64_t in_range = 0;
    for (int64_t j = 0; j < nk; j++) {
        if (j > 0 && ex[by_ex[j]] != ex[by_ex[j - 1]] && in_range >= RANGE_KEYS) {
            r++;
            in_range = 0;
        }
        range[by_ex[j]] = r;
        in_range++;
    }
    w->n_ranges = nk > 0 ? r + 1 : 0;
    for (int64_t i = 0; i < nk; i++)
        key[i] = (uint64_t)range[i] << 32 | ordered32(t[i]);
    memcpy(by_pos, by_ex, n * sizeof *by_pos);
    radix_sort_index(key, by_pos, nk); /* ties stay in (example, row) order */
    w->k = raw_doubles(n * (size_t)w->d);
    w->t_k = qk_malloc(n * sizeof *w->t_k);
    w->ex_k = qk_malloc(n * sizeof *w->ex_k);
    w->range_of = qk_malloc(n * sizeof *w->range_of);
    w->range_start = qk_calloc((size_t)w->n_ranges + 1, sizeof *w->range_start);
    w->by_example = qk_malloc(n * sizeof *w->by_example);
    int64_t *place = qk_malloc(n * sizeof *place); /* of each row in the sorted keys */
    double *oriented = qk_doubles((size_t)w->d);
    for (int64_t i = 0; i < nk; i++) {
        int64_t row = by_pos[i];
        if (hv) {
            gather_row(k, krows[row], w->d, sign, oriented);
            reflect_row(oriented, hv, w->d, w->k + i * w->d);
        } else {
            gather_row(k, krows[row], w->d, sign, w->k + i * w->d);
        }
        w->t_k[i] = t[row];
        w->ex_k[i] = ex[row];
        w->range_of[i] = range[row];
        w->range_start[range[row] + 1] = i + 1;
        place[row] = i;
    }
    for (int64_t j = 0; j < nk; j++)
        w->by_example[j] = (int32_t)place[by_ex[j]];
    free(oriented);
    free(place);
    free(range);
    free(by_pos);
    free(by_ex);
    free(key);
}

/* Every same-example pair (a before b in position), with the first query
 * bin whose start lies above both positions: t_b * f < bin * B, i.e.
 * first = floor(t_b f / B) + 1. Pairs are generated example by example and
 * counting-sorted by first bin (stable, so the order is the generation
 * order within a bin); eligible[b] = pairs with first <= b. */
static int enumerate_pairs(head_work *w, const qk_plast_grid *g, int64_t *eligible,
                           qk_err *err)
{
    const int32_t *key = w->by_example;
    int64_t *count = qk_calloc((size_t)w->n_bins + 1, sizeof *count);
    int64_t total = 0;
    for (int64_t lo = 0; lo < w->nk;) {
        int64_t hi = lo;
        while (hi < w->nk && w->ex_k[key[hi]] == w->ex_k[key[lo]])
            hi++;
        for (int64_t j = lo + 1; j < hi; j++) {
            int64_t first = qk_plast_bin_of(g, w->t_k[key[j]]) + 1;
            if (first < w->n_bins) {
                count[first + 1] += j - lo;
                total += j - lo;
            }
        }
        lo = hi;
    }
    if (total > INT64_C(50000000)) { /* 24 bytes each */
        free(count);
        return qk_fail(err, "%lld same-example key pairs: too many to hold", (long long)total);
    }
    for (int b = 0; b < w->n_bins; b++)
        count[b + 1] += count[b];
    for (int b = 0; b < w->n_bins; b++)
        eligible[b] = count[b + 1];
    w->n_pairs = total;
    w->pairs = qk_malloc((size_t)(total > 0 ? total : 1) * sizeof *w->pairs);
    for (int64_t lo = 0; lo < w->nk;) {
        int64_t hi = lo;
        while (hi < w->nk && w->ex_k[key[hi]] == w->ex_k[key[lo]])
            hi++;
        for (int64_t j = lo + 1; j < hi; j++) {
            int32_t b = key[j];
            int64_t first = qk_plast_bin_of(g, w->t_k[b]) + 1;
            if (first >= w->n_bins)
                continue;
            for (int64_t i = lo; i < j; i++) {
                int32_t a = key[i];
                key_pair *p = &w->pairs[count[first]++];
                p->a = a;
                p->b = b;
                p->first = (int32_t)first;
                p->dist_cell = (w->t_k[b] - w->t_k[a]) / g->bucket_size;
                p->pos_sum = (int64_t)w->t_k[a] + w->t_k[b];
            }
        }
        lo = hi;
    }
    free(count);
    return 0;
}

/* ---- evaluation (steps 9 and 10) ------------------------------------------------------------ */

/* Adds PP of one (pair, bin) to the bin and to its heatmap cell:
 * (floor(delta_t / B), floor((tau_b - midpoint) / B)). */
static inline void add_pp(head_work *w, qk_plast_head *h, const key_pair *p, int b, double pp)
{
    w->bin_sum[b] += pp;
    double mid = floor((2.0 * h->bin_tau[b] - (double)p->pos_sum) / (2.0 * w->bucket_size));
    int row = mid < 0.0 ? 0 : mid >= w->n_cells ? w->n_cells - 1 : (int)mid;
    int col = p->dist_cell < w->n_cells ? p->dist_cell : w->n_cells - 1;
    size_t cell = (size_t)col * w->n_cells + row;
    w->cell_sum[cell] += pp;
    h->cell_evals[cell]++;
}

static inline void accumulate(head_work *w, qk_plast_head *h, const key_pair *p, int b,
                              double m, double v)
{
    add_pp(w, h, p, b, qk_plast_pp(m, v));
}

static inline double mean_term(const head_work *w, const key_pair *p, int b)
{
    return w->score[(size_t)p->a * w->n_bins + b] - w->score[(size_t)p->b * w->n_bins + b];
}

/* The kept bins lie in [first, last]; first > last when none is kept. */
static void kept_range(const head_work *w, int *first, int *last)
{
    *last = w->n_bins - 1;
    while (*last >= 0 && !w->kept[*last])
        (*last)--;
    *first = 0;
    while (*first <= *last && !w->kept[*first])
        (*first)++;
}

#define KEY_BLOCK 256

/* The rows of S = K M^T of range r's keys into out (row i: key
 * range_start[r] + i, n_bins columns), where pairs read them: a key is in
 * no pair eligible before the bin after its own, so a block of keys (in
 * position order within the range) gets the kept bins from its first
 * key's next bin on. Other entries are left unset. */
static void score_rows(const head_work *w, const qk_plast_grid *g, int r, double *out)
{
    int first, last;
    kept_range(w, &first, &last);
    int64_t begin = w->range_start[r], end = w->range_start[r + 1];
    for (int64_t r0 = begin; r0 < end && first <= last; r0 += KEY_BLOCK) {
        int64_t nr = end - r0 < KEY_BLOCK ? end - r0 : KEY_BLOCK;
        int64_t start = qk_plast_bin_of(g, w->t_k[r0]) + 1;
        if (start < first)
            start = first;
        if (start > last)
            break; /* and so for every later block of the range */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr, (int)(last - start + 1),
                    w->d, 1.0, w->k + r0 * w->d, w->d, w->mean + start * w->d, w->d, 0.0,
                    out + (r0 - begin) * w->n_bins + start, w->n_bins);
    }
}

/* The whole of S, for the modes that read it in no particular order. */
static void score_table(head_work *w, const qk_plast_grid *g)
{
    w->score = raw_doubles((size_t)(w->nk > 0 ? w->nk : 1) * (size_t)w->n_bins);
    for (int r = 0; r < w->n_ranges; r++)
        score_rows(w, g, r, w->score + w->range_start[r] * w->n_bins);
}

/* The longest of the n spans start[i] .. start[i + 1], at least 1: the
 * most keys in one range, the most queries in one bin. */
static int64_t longest_span(const int64_t *start, int n)
{
    int64_t most = 1;
    for (int i = 0; i < n; i++)
        if (start[i + 1] - start[i] > most)
            most = start[i + 1] - start[i];
    return most;
}

/* pairs ahead whose rows are prefetched */
#define PREFETCH_AHEAD 24

static inline void prefetch_row(const double *row, int n)
{
    for (int i = 0; i < n; i += 8) /* one 64-byte line per 8 doubles */
        __builtin_prefetch(row + i);
}

/* delta = k_a - k_b for pairs[0..n) into out (n x d). */
static void pair_differences(const head_work *w, const key_pair *pairs, int64_t n, double *out)
{
    int d = w->d;
    for (int64_t i = 0; i < n; i++) {
        const double *ka = w->k + (size_t)pairs[i].a * d, *kb = w->k + (size_t)pairs[i].b * d;
        double *o = out + i * d;
        for (int c = 0; c < d; c++)
            o[c] = ka[c] - kb[c];
    }
}

/* The same, squared: the operand of the variance GEMM. The key rows of a
 * block are scattered over the key table, so the rows of a pair a few
 * pairs ahead are fetched early. */
static void pair_squares(const head_work *w, const key_pair *pairs, int64_t n, double *out)
{
    int d = w->d;
    for (int64_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n)
            prefetch_row(w->k + (size_t)pairs[i + PREFETCH_AHEAD].a * d, d);
        const double *ka = w->k + (size_t)pairs[i].a * d, *kb = w->k + (size_t)pairs[i].b * d;
        double *o = out + i * d;
        int c = 0;
        for (; c + 2 <= d; c += 2) {
            v2d diff = load2(ka + c) - load2(kb + c);
            store2(o + c, diff * diff);
        }
        for (; c < d; c++) {
            double diff = ka[c] - kb[c];
            o[c] = diff * diff;
        }
    }
}

/* The heatmap row of bin b for a pair: floor((2 tau_b - pos_sum) / 2B),
 * clamped to the grid. With 2B a power of two the division is a product
 * by its exact inverse (the same value, without the divider). */
static inline int cell_row(const head_work *w, double y)
{
    double mid = w->inv_two_b > 0.0 ? y * w->inv_two_b : y / (2.0 * w->bucket_size);
    /* the floor, clamped: below 0 (or NaN) row 0; else truncation is the
     * floor */
    return !(mid >= 0.0) ? 0 : mid >= w->n_cells ? w->n_cells - 1 : (int)mid;
}

/* The sum of pp[0..n), four partial sums at a time (a fixed order). */
static inline double run_sum(const double *pp, int n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += pp[i];
        s1 += pp[i + 1];
        s2 += pp[i + 2];
        s3 += pp[i + 3];
    }
    for (; i < n; i++)
        s0 += pp[i];
    return (s0 + s1) + (s2 + s3);
}

/* The heatmap rows of a pair's bins from..last (all kept), into row[0..]:
 * cell_row of 2 tau_b - pos_sum, with tau2[b] = 2 tau_b. With 2B a power
 * of two, two bins at a time: the clamps as maxima and minima (a NaN
 * gives row 0, as in cell_row), then truncation. */
static void pair_rows(const head_work *w, const double *tau2, int from, int last,
                      double pos_sum, int32_t *row)
{
    int n = last - from + 1, i = 0;
    const double *y = tau2 + from;
#ifdef __SSE2__
    if (w->inv_two_b > 0.0) {
        __m128d ps = _mm_set1_pd(pos_sum), inv = _mm_set1_pd(w->inv_two_b);
        __m128d zero = _mm_setzero_pd(), top = _mm_set1_pd((double)(w->n_cells - 1));
        for (; i + 2 <= n; i += 2) {
            __m128d mid = _mm_mul_pd(_mm_sub_pd(_mm_loadu_pd(y + i), ps), inv);
            mid = _mm_min_pd(_mm_max_pd(mid, zero), top); /* max(NaN, 0) = 0 */
            _mm_storel_epi64((__m128i *)(void *)(row + i), _mm_cvttpd_epi32(mid));
        }
    }
#endif
    for (; i < n; i++)
        row[i] = cell_row(w, y[i] - pos_sum);
}

/* Adds the PP values pp[0..] of pair p for its bins from..last (all kept)
 * to the bins and to the heatmap cells. The row of a bin only grows with b
 * (tau_b does), so the bins of one cell form a run of equal rows; a run
 * adds its sum to its cell. row: room for the pair's bins. */
static void accumulate_pair(head_work *w, qk_plast_head *h, const key_pair *p, int from,
                            int last, const double *pp, const double *tau2, int32_t *row)
{
    double *bin_sum = w->bin_sum + from;
    int n = last - from + 1, i = 0;
    for (; i + 2 <= n; i += 2)
        store2(bin_sum + i, load2(bin_sum + i) + load2(pp + i));
    for (; i < n; i++)
        bin_sum[i] += pp[i];
    pair_rows(w, tau2, from, last, (double)p->pos_sum, row);
    int col = p->dist_cell < w->n_cells ? p->dist_cell : w->n_cells - 1;
    size_t first_cell = (size_t)col * w->n_cells;
    for (int b = 0; b < n;) {
        int e = b + 1;
        while (e < n && row[e] == row[b])
            e++;
        w->cell_sum[first_cell + row[b]] += run_sum(pp + b, e - b);
        h->cell_evals[first_cell + row[b]] += e - b;
        b = e;
    }
}

/* The pairs in evaluation order, by range of examples and then by first
 * bin (stable: generation order within), and the blocks: at most
 * PAIR_BLOCK pairs of one range, block_start[0..n_blocks]. */
typedef struct pair_blocks {
    key_pair *pairs;
    int64_t *start;
    int64_t n;
} pair_blocks;

static void make_blocks(const head_work *w, pair_blocks *pb)
{
    int64_t *count = qk_calloc((size_t)w->n_ranges + 1, sizeof *count);
    for (int64_t i = 0; i < w->n_pairs; i++)
        count[w->range_of[w->pairs[i].a] + 1]++;
    int64_t n_blocks = 0;
    for (int r = 0; r < w->n_ranges; r++)
        n_blocks += (count[r + 1] + PAIR_BLOCK - 1) / PAIR_BLOCK;
    pb->start = qk_malloc((size_t)(n_blocks + 1) * sizeof *pb->start);
    pb->n = 0;
    for (int r = 0; r < w->n_ranges; r++) {
        for (int64_t off = 0; off < count[r + 1]; off += PAIR_BLOCK)
            pb->start[pb->n++] = count[r] + off;
        count[r + 1] += count[r];
    }
    pb->start[pb->n] = w->n_pairs;
    pb->pairs = qk_malloc((size_t)(w->n_pairs > 0 ? w->n_pairs : 1) * sizeof *pb->pairs);
    for (int64_t i = 0; i < w->n_pairs; i++)
        pb->pairs[count[w->range_of[w->pairs[i].a]]++] = w->pairs[i];
    free(count);
}

static void free_blocks(pair_blocks *pb)
{
    free(pb->pairs);
    free(pb->start);
}

/* Block k of pb made ready for its evaluations: the rows of S of its range
 * of examples into score when the range changes (*range: the range they
 * hold), the squared key differences of its pairs and V[i, b] =
 * sum_c delta_ic^2 C_b,cc for bins b0..last into v. Returns b0, or -1 when
 * the block has no kept bin. gemm_cpu, if not NULL, gets the thread CPU
 * time of the GEMMs added (the floor). */
static int block_variances(const head_work *w, const qk_plast_grid *g, const pair_blocks *pb,
                           int64_t k, int first_kept, int last, double *score, int *range,
                           double *sq, double *v, double *gemm_cpu)
{
    int64_t nb = pb->start[k + 1] - pb->start[k];
    const key_pair *blk = pb->pairs + pb->start[k];
    int b0 = blk[0].first > first_kept ? blk[0].first : first_kept; /* sorted by first */
    if (b0 > last)
        return -1;
    double c0 = gemm_cpu ? qk_thread_cpu() : 0.0;
    if (w->range_of[blk[0].a] != *range) { /* the blocks come range by range */
        *range = w->range_of[blk[0].a];
        score_rows(w, g, *range, score);
    }
    if (gemm_cpu)
        *gemm_cpu += qk_thread_cpu() - c0;
    pair_squares(w, blk, nb, sq);
    c0 = gemm_cpu ? qk_thread_cpu() : 0.0;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, last - b0 + 1, w->d, 1.0, sq,
                w->d, w->var + (size_t)b0 * w->d, w->d, 0.0, v, last - b0 + 1);
    if (gemm_cpu)
        *gemm_cpu += qk_thread_cpu() - c0;
    return b0;
}

/* PP values evaluated together: the erfc arguments of a few pairs, then
 * their PP in place and the sums, while they are in the first-level cache */
#define PP_BATCH 2048
/* a multiple of the erfc kernels' step */
#define PP_PAD 16

/* The (pair, bin) evaluations of pairs blk[0..nb) whose variances v
 * (ncol = last - b0 + 1 per pair) the GEMM has made: the erfc arguments
 * of a batch of pairs from S (the rows of their range, key row0 first)
 * and v, PP, and the sums. */
static void evaluate_block(head_work *w, qk_plast_head *h, const key_pair *blk, int64_t nb,
                           const double *score, int64_t row0, const double *v, int b0,
                           int last, int contiguous, const double *tau2, double *pp,
                           int32_t *rows)
{
    int ncol = last - b0 + 1;
    for (int64_t i0 = 0, i1; i0 < nb; i0 = i1) {
        int64_t n = 0;
        for (i1 = i0; i1 < nb && (n == 0 || n + ncol <= PP_BATCH); i1++) {
            if (i1 + PREFETCH_AHEAD < nb) {
                const key_pair *ahead = &blk[i1 + PREFETCH_AHEAD];
                int fa = ahead->first > b0 ? ahead->first : b0;
                if (fa <= last)
                    prefetch_row(score + (ahead->a - row0) * w->n_bins + fa, last - fa + 1);
            }
            /* a pair of the block may become eligible only after the last
             * kept bin (the block starts at its first pair's bin) */
            int f = blk[i1].first > b0 ? blk[i1].first : b0;
            if (f > last)
                continue;
            qk_plast_pp_arg_n(score + (blk[i1].a - row0) * w->n_bins + f,
                              score + (blk[i1].b - row0) * w->n_bins + f,
                              v + i1 * ncol + (f - b0), pp + n, last - f + 1);
            n += last - f + 1;
        }
        /* whole vectors: the kernel's remainder would go value by value */
        int64_t padded = (n + PP_PAD - 1) / PP_PAD * PP_PAD;
        for (int64_t i = n; i < padded; i++)
            pp[i] = 0.0;
        qk_plast_pp_of_arg_n(pp, padded);
        const double *at = pp;
        for (int64_t i = i0; i < i1; i++) {
            int f = blk[i].first > b0 ? blk[i].first : b0;
            if (f > last)
                continue;
            if (contiguous) {
                accumulate_pair(w, h, &blk[i], f, last, at, tau2, rows);
            } else {
                for (int b = f; b <= last; b++)
                    if (w->kept[b])
                        add_pp(w, h, &blk[i], b, at[b - f]);
            }
            at += last - f + 1;
        }
    }
}

/* Every eligible (pair, kept bin), range of examples by range: the rows of
 * S of the range's keys, then blocks of its pairs, per block one GEMM for
 * v, then the mean terms from S, PP and the sums. */
static void exact_diag(head_work *w, qk_plast_head *h, const qk_plast_grid *g)
{
    int d = w->d;
    int first_kept, last;
    kept_range(w, &first_kept, &last);
    if (first_kept > last)
        return;
    double *tau2 = qk_doubles((size_t)w->n_bins);
    for (int b = 0; b < w->n_bins; b++)
        tau2[b] = 2.0 * h->bin_tau[b];
    int contiguous = 1; /* every bin between the first and the last kept one kept */
    for (int b = first_kept; b <= last; b++)
        contiguous &= w->kept[b];
    double *sq = raw_doubles((size_t)PAIR_BLOCK * d);
    double *v = raw_doubles((size_t)PAIR_BLOCK * w->n_bins);
    double *pp = raw_doubles((size_t)(PP_BATCH > w->n_bins ? PP_BATCH : w->n_bins) + PP_PAD);
    int32_t *rows = qk_malloc((size_t)w->n_bins * sizeof *rows);
    double *score = raw_doubles((size_t)longest_span(w->range_start, w->n_ranges) * w->n_bins);
    int range = -1;
    pair_blocks pb;
    make_blocks(w, &pb);
    for (int64_t k = 0; k < pb.n; k++) {
        int b0 = block_variances(w, g, &pb, k, first_kept, last, score, &range, sq, v, NULL);
        if (b0 >= 0)
            evaluate_block(w, h, pb.pairs + pb.start[k], pb.start[k + 1] - pb.start[k], score,
                           w->range_start[range], v, b0, last, contiguous, tau2, pp, rows);
    }
    free_blocks(&pb);
    free(score);
    free(rows);
    free(pp);
    free(v);
    free(sq);
    free(tau2);
}

/* ---- the floor (qk_plast_timing) --------------------------------------------------------- */

/* Times, after the analysis, what exact_diag cannot avoid: the GEMMs of S
 * (range by range) and of every block of pairs at the same shapes and with the same
 * operands, and one erfc per evaluated (pair, kept bin) on the same
 * arguments |m| / sqrt(2 v), through the same batched erfc. The operands
 * are rebuilt outside the clock. */
static void measure_floor(head_work *w, qk_plast_head *h, const qk_plast_grid *g)
{
    int d = w->d;
    qk_plast_timing *t = &h->timing;
    int first_kept, last;
    kept_range(w, &first_kept, &last);
    double *score = raw_doubles((size_t)longest_span(w->range_start, w->n_ranges) * w->n_bins);
    double *sq = raw_doubles((size_t)PAIR_BLOCK * d);
    double *v = raw_doubles((size_t)PAIR_BLOCK * w->n_bins);
    double *x = raw_doubles((size_t)PAIR_BLOCK * w->n_bins);
    int range = -1;
    pair_blocks pb;
    make_blocks(w, &pb);
    for (int64_t k = 0; first_kept <= last && k < pb.n; k++) {
        int b0 = block_variances(w, g, &pb, k, first_kept, last, score, &range, sq, v,
                                 &t->floor_gemm);
        if (b0 < 0)
            continue;
        int64_t nb = pb.start[k + 1] - pb.start[k];
        const key_pair *blk = pb.pairs + pb.start[k];
        int ncol = last - b0 + 1;
        int64_t n = 0, row0 = w->range_start[range];
        for (int64_t i = 0; i < nb; i++)
            for (int b = blk[i].first > b0 ? blk[i].first : b0; b <= last; b++) {
                if (!w->kept[b])
                    continue;
                double m = score[(blk[i].a - row0) * w->n_bins + b] -
                           score[(blk[i].b - row0) * w->n_bins + b];
                double vb = v[i * ncol + b - b0];
                x[n++] = vb > 0.0 ? fabs(m / sqrt(vb)) * M_SQRT1_2 : (m == 0.0 ? 0.0 : INFINITY);
            }
        double c2 = qk_thread_cpu();
        qk_plast_erfc_n(x, x, n);
        t->floor_erfc += qk_thread_cpu() - c2;
        t->n_erfc += n;
    }
    free_blocks(&pb);
    free(x);
    free(v);
    free(sq);
    free(score);
}

/* The centred content coordinates of bin b's queries (column 0 zeroed):
 * C_b restricted to 2..d is Qc^T Qc / (n_b - 1). */
static void centred_bin(const head_work *w, int b, double *qc)
{
    int d = w->d;
    int64_t lo = w->bin_row[b], n = w->bin_row[b + 1] - lo;
    const double *m = w->mean + (size_t)b * d;
    for (int64_t i = 0; i < n; i++) {
        qc[i * d] = 0.0;
        for (int c = 1; c < d; c++)
            qc[i * d + c] = w->q[w->q_row[lo + i] * d + c] - m[c];
    }
}

/* v = delta_1^2 sigma2_pos + |Qc delta|^2 / (n_b - 1) + 1e-12 |delta_perp|^2,
 * from z = Qc delta. */
static double full_variance(const head_work *w, int b, const double *delta, const double *z,
                            int64_t n_b)
{
    double zz = 0.0, perp = 0.0;
    for (int64_t j = 0; j < n_b; j++)
        zz += z[j] * z[j];
    for (int c = 1; c < w->d; c++)
        perp += delta[c] * delta[c];
    return delta[0] * delta[0] * w->var[(size_t)b * w->d] + zz / (double)(n_b - 1) +
           QK_PLAST_FULL_RIDGE * perp;
}

/* The keys in position order (ties in key order): the keys before a bin
 * start are a prefix. rank[i] is the place of key i in that order. */
typedef struct key_ranks {
    int32_t position;
    int64_t key;
} key_ranks;

static int cmp_key_ranks(const void *a, const void *b)
{
    const key_ranks *x = a, *y = b;
    if (x->position != y->position)
        return x->position < y->position ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

static double *keys_by_position(const head_work *w, int64_t *rank, int32_t *tpos)
{
    size_t n = (size_t)(w->nk > 0 ? w->nk : 1);
    key_ranks *order = qk_malloc(n * sizeof *order);
    for (int64_t i = 0; i < w->nk; i++) {
        order[i].position = w->t_k[i];
        order[i].key = i;
    }
    qsort(order, (size_t)w->nk, sizeof *order, cmp_key_ranks);
    double *k = qk_doubles(n * (size_t)w->d);
    for (int64_t r = 0; r < w->nk; r++) {
        memcpy(k + r * w->d, w->k + order[r].key * w->d, (size_t)w->d * sizeof *k);
        rank[order[r].key] = r;
        tpos[r] = order[r].position;
    }
    free(order);
    return k;
}

/* Full covariance: |Qc delta|^2 = |Y_a - Y_b|^2 with Y = K Qc^T, one GEMM
 * per bin over the keys before its start (a prefix in position order), then
 * O(n_b) per pair. */
static void exact_full(head_work *w, qk_plast_head *h, const qk_plast_grid *g)
{
    int d = w->d;
    int64_t most = longest_span(w->bin_row, w->n_bins);
    int64_t *rank = qk_malloc((size_t)(w->nk > 0 ? w->nk : 1) * sizeof *rank);
    int32_t *tpos = qk_malloc((size_t)(w->nk > 0 ? w->nk : 1) * sizeof *tpos);
    double *kpos = keys_by_position(w, rank, tpos);
    double *qc = qk_doubles((size_t)most * d);
    double *y = qk_doubles((size_t)(w->nk > 0 ? w->nk : 1) * most);
    /* delta_1^2 and |delta_perp|^2 of every pair */
    double *d0 = qk_malloc((size_t)(w->n_pairs > 0 ? w->n_pairs : 1) * sizeof *d0);
    double *perp = qk_malloc((size_t)(w->n_pairs > 0 ? w->n_pairs : 1) * sizeof *perp);
    for (int64_t i = 0; i < w->n_pairs; i++) {
        const double *ka = w->k + (size_t)w->pairs[i].a * d, *kb = w->k + (size_t)w->pairs[i].b * d;
        d0[i] = (ka[0] - kb[0]) * (ka[0] - kb[0]);
        perp[i] = 0.0;
        for (int c = 1; c < d; c++)
            perp[i] += (ka[c] - kb[c]) * (ka[c] - kb[c]);
    }
    int64_t before = 0; /* keys with t f < b B */
    for (int b = 0; b < w->n_bins; b++) {
        while (before < w->nk &&
               (int64_t)tpos[before] * g->bin_factor < (int64_t)b * g->bucket_size)
            before++;
        if (!w->kept[b] || before < 2)
            continue;
        int64_t n_b = w->bin_row[b + 1] - w->bin_row[b];
        centred_bin(w, b, qc);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)before, (int)n_b, d, 1.0,
                    kpos, d, qc, d, 0.0, y, (int)n_b);
        double s2 = w->var[(size_t)b * d];
        for (int64_t i = 0; i < h->bin_pairs[b]; i++) {
            const key_pair *pair = &w->pairs[i];
            const double *ya = y + rank[pair->a] * n_b, *yb = y + rank[pair->b] * n_b;
            double zz = 0.0;
            for (int64_t j = 0; j < n_b; j++)
                zz += (ya[j] - yb[j]) * (ya[j] - yb[j]);
            double v = d0[i] * s2 + zz / (double)(n_b - 1) + QK_PLAST_FULL_RIDGE * perp[i];
            accumulate(w, h, pair, b, mean_term(w, pair, b), v);
        }
    }
    free(perp);
    free(d0);
    free(y);
    free(qc);
    free(kpos);
    free(tpos);
    free(rank);
}

/* pairs_per_bin uniform draws (with replacement) from the eligible pairs of
 * each bin, or all of them when there are no more than that. */
static void sampled(head_work *w, qk_plast_head *h, const qk_plast_params *p, qk_rng *rng)
{
    int d = w->d;
    int64_t most = longest_span(w->bin_row, w->n_bins);
    double *qc = qk_doubles((size_t)most * d);
    double *delta = qk_doubles((size_t)d);
    double *z = qk_doubles((size_t)most);
    for (int b = 0; b < w->n_bins; b++) {
        if (!w->kept[b])
            continue;
        int64_t n_b = w->bin_row[b + 1] - w->bin_row[b];
        int64_t avail = h->bin_pairs[b];
        int64_t draws = avail <= p->pairs_per_bin ? avail : p->pairs_per_bin;
        if (p->cov == QK_PLAST_COV_FULL)
            centred_bin(w, b, qc);
        for (int64_t r = 0; r < draws; r++) {
            int64_t idx =
                avail <= p->pairs_per_bin ? r : (int64_t)qk_rng_below(rng, (uint64_t)avail);
            const key_pair *pair = &w->pairs[idx];
            pair_differences(w, pair, 1, delta);
            double v;
            if (p->cov == QK_PLAST_COV_FULL) {
                cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)n_b, d, 1.0, qc, d, delta, 1,
                            0.0, z, 1);
                v = full_variance(w, b, delta, z, n_b);
            } else {
                const double *var = w->var + (size_t)b * d;
                v = 0.0;
                for (int c = 0; c < d; c++)
                    v += delta[c] * delta[c] * var[c];
            }
            accumulate(w, h, pair, b, mean_term(w, pair, b), v);
        }
        h->bin_evals[b] = draws;
    }
    free(z);
    free(delta);
    free(qc);
}

/* ---- the head ------------------------------------------------------------------------- */

static void finish_head(head_work *w, qk_plast_head *h, const qk_plast_grid *g,
                        const qk_plast_params *p)
{
    h->n_evals = 0;
    for (int b = 0; b < w->n_bins; b++) {
        if (p->pair_mode == QK_PLAST_PAIRS_EXACT)
            h->bin_evals[b] = w->kept[b] ? h->bin_pairs[b] : 0;
        h->n_evals += h->bin_evals[b];
        h->bin_ap[b] = h->bin_evals[b] > 0 ? w->bin_sum[b] / (double)h->bin_evals[b] : NAN;
    }
    size_t nc = (size_t)w->n_cells * w->n_cells;
    for (size_t c = 0; c < nc; c++)
        h->cell_ap[c] = h->cell_evals[c] >= p->pair2d_min_count && h->cell_evals[c] > 0
                            ? w->cell_sum[c] / (double)h->cell_evals[c]
                            : NAN;
    qk_plast_profile_scalars(h->bin_ap, h->bin_queries, g, &h->s);
}

static void reset_head(qk_plast_head *h)
{
    size_t nb = (size_t)h->n_bins, nc = (size_t)h->n_cells * h->n_cells;
    memset(h->bin_queries, 0, nb * sizeof *h->bin_queries);
    memset(h->bin_pairs, 0, nb * sizeof *h->bin_pairs);
    memset(h->bin_evals, 0, nb * sizeof *h->bin_evals);
    memset(h->cell_evals, 0, nc * sizeof *h->cell_evals);
    memset(&h->timing, 0, sizeof h->timing);
    for (size_t b = 0; b < nb; b++)
        h->bin_ap[b] = h->bin_tau[b] = NAN;
    for (size_t c = 0; c < nc; c++)
        h->cell_ap[c] = NAN;
}

/* Steps 1-3: rows, orientation, regression, rotation; fills the diagnostics
 * and leaves rotated queries (with positions and bins) and keys. */
static int prepare(const qk_plast_rows *q, const qk_plast_rows *k, int d,
                   const qk_plast_grid *g, const qk_plast_params *p, const uint64_t *keys,
                   qk_plast_head *h, head_work *w, qk_err *err)
{
    qk_rng rng;
    uint64_t kk[4] = {keys[0], keys[1], keys[2], STREAM_SUBSAMPLE_Q};
    qk_rng_seed(&rng, kk, 4);
    int64_t *qrows = choose_rows(q->n, p->max_tokens, &rng, &w->nq);
    kk[3] = STREAM_SUBSAMPLE_K;
    qk_rng_seed(&rng, kk, 4);
    int64_t *krows = choose_rows(k->n, p->max_tokens, &rng, &w->nk);
    if (check_rows(q, qrows, w->nq, d, g, 'q', err) != 0 ||
        check_rows(k, krows, w->nk, d, g, 'k', err) != 0) {
        free(qrows);
        free(krows);
        return -1;
    }
    h->n_q = w->nq;
    h->n_k = w->nk;

    /* orientation from the keys' bucket means, then both kinds gathered
     * with it */
    int32_t *kb = qk_malloc((size_t)(w->nk > 0 ? w->nk : 1) * sizeof *kb);
    int32_t *kt = qk_malloc((size_t)(w->nk > 0 ? w->nk : 1) * sizeof *kt);
    int32_t *ke = qk_malloc((size_t)(w->nk > 0 ? w->nk : 1) * sizeof *ke);
    for (int64_t i = 0; i < w->nk; i++) {
        kb[i] = k->bucket[krows[i]];
        kt[i] = k->position[krows[i]];
        ke[i] = k->example_id[krows[i]];
    }
    double *sign = qk_doubles((size_t)d);
    qk_plast_orientation_rows(k->vector, krows, w->nk, d, kb, sign);
    double *qx = gather(q, qrows, w->nq, d, sign);
    double *t = qk_malloc((size_t)(w->nq > 0 ? w->nq : 1) * sizeof *t);
    int64_t *bin = qk_malloc((size_t)(w->nq > 0 ? w->nq : 1) * sizeof *bin);
    for (int64_t i = 0; i < w->nq; i++) {
        t[i] = q->position[qrows[i]];
        bin[i] = qk_plast_bin_of(g, q->position[qrows[i]]);
    }

    /* positional regression in the oriented basis, then the reflection */
    double *alpha = qk_doubles((size_t)d), *beta = qk_doubles((size_t)d);
    h->q_r2_pos = qk_plast_regress(qx, t, w->nq, d, alpha, beta, h->component_r2);
    h->q_beta_norm = cblas_dnrm2(d, beta, 1);
    qk_plast_component_weights(h->component_r2, d, h->component_weight);
    scalar_predictability(qx, t, w->nq, d, beta, h->q_beta_norm, h);
    double *hv = qk_doubles((size_t)d);
    size_t most = (size_t)(w->nq > w->nk ? w->nq : w->nk);
    double *tmp = qk_doubles(most > 0 ? most : 1);
    int reflect = qk_plast_householder(beta, d, hv);
    if (reflect)
        qk_plast_reflect_rows(qx, w->nq, d, hv, tmp);
    position_coordinate(qx, t, w->nq, d, h);
    kk[3] = STREAM_NOISE_DIMS;
    qk_rng_seed(&rng, kk, 4);
    noise_normality(qx, w->nq, d, p, &rng, h);

    sort_queries(w, qx, t, bin); /* keeps qx */
    sort_keys(w, k, krows, sign, kt, ke, reflect ? hv : NULL);
    free(tmp);
    free(hv);
    free(beta);
    free(alpha);
    free(bin);
    free(t);
    free(sign);
    free(ke);
    free(kt);
    free(kb);
    free(krows);
    free(qrows);
    return 0;
}

int qk_plast_analyse(const qk_plast_rows *q, const qk_plast_rows *k, int d,
                     const qk_plast_grid *g, const qk_plast_params *p, int layer, int q_head,
                     qk_plast_head *h, qk_err *err)
{
    if (d < 1 || d != h->d || g->n_bins != h->n_bins || g->n_cells != h->n_cells)
        return qk_fail(err, "head result not initialised for d = %d and this grid", d);
    if (qk_plast_params_check(p, err) != 0)
        return -1;
    reset_head(h);
    head_work w;
    memset(&w, 0, sizeof w);
    w.d = d;
    w.n_bins = g->n_bins;
    w.n_cells = g->n_cells;
    w.bucket_size = g->bucket_size;
    if ((g->bucket_size & (g->bucket_size - 1)) == 0)
        w.inv_two_b = 0.5 / g->bucket_size;
    uint64_t keys[3] = {p->seed, (uint64_t)layer, (uint64_t)q_head};
    int rc = -1;
    double cpu0 = qk_thread_cpu();
    if (prepare(q, k, d, g, p, keys, h, &w, err) != 0)
        goto out;
    bin_model(&w, h);
    if (enumerate_pairs(&w, g, h->bin_pairs, err) != 0)
        goto out;
    h->n_key_pairs = w.n_pairs;
    w.kept = qk_calloc((size_t)w.n_bins, 1);
    for (int b = 0; b < w.n_bins; b++)
        w.kept[b] = h->bin_queries[b] >= QK_PLAST_MIN_BIN_QUERIES &&
                    h->bin_pairs[b] >= p->min_pairs_per_bin;
    w.bin_sum = qk_calloc((size_t)w.n_bins, sizeof *w.bin_sum);
    w.cell_sum = qk_calloc((size_t)w.n_cells * w.n_cells, sizeof *w.cell_sum);
    if (p->pair_mode == QK_PLAST_PAIRS_SAMPLE) {
        qk_rng rng;
        uint64_t kk[4] = {keys[0], keys[1], keys[2], STREAM_PAIRS};
        qk_rng_seed(&rng, kk, 4);
        score_table(&w, g);
        sampled(&w, h, p, &rng);
    } else if (p->cov == QK_PLAST_COV_FULL) {
        score_table(&w, g);
        exact_full(&w, h, g);
    } else {
        exact_diag(&w, h, g);
    }
    finish_head(&w, h, g, p);
    h->timing.total = qk_thread_cpu() - cpu0;
    if (p->time_floor) {
        if (p->pair_mode == QK_PLAST_PAIRS_EXACT && p->cov == QK_PLAST_COV_DIAG)
            measure_floor(&w, h, g);
        else
            h->timing.floor_gemm = h->timing.floor_erfc = NAN;
    }
    rc = 0;
out:
    work_free(&w);
    return rc;
}
