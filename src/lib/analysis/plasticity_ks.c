/* The one-sample two-sided Kolmogorov-Smirnov test against N(0, 1), for
 * the normality diagnostics of the query residuals (docs/plasticity.md,
 * "Diagnostics of the queries"). The p-value is P(D_n >= x) for the exact distribution of D_n,
 * evaluated as the usual numerical libraries do, by regime:
 *   - closed forms of Ruben and Gambino at the two ends (n x <= 1,
 *     n x >= n - 1);
 *   - twice the exact one-sided Smirnov tail (Birnbaum and Tingey) where
 *     the two one-sided events cannot overlap (x >= 1/2) or their overlap
 *     is negligible (n x^2 >= 2.2 for n > 140, n x^2 > 4 otherwise);
 *   - the Durbin matrix of Marsaglia, Tsang and Wang (2003), exact, where
 *     its matrix stays small;
 *   - otherwise the Pelz-Good (1976) asymptotic series (n > 140 only). */
#include <cblas.h>
#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/moments.h"
#include "qk/plasticity.h"
#include "qk/stats.h"
#include "plasticity_internal.h"
#include "plasticity_vec.h"

/* The steps i / n (i = 0..n) of an empirical CDF: every KS test of a head
 * has the same n, so the last table of the thread is kept. */
static const double *cdf_steps(int64_t n)
{
    static _Thread_local double *table;
    static _Thread_local int64_t table_n = -1;
    if (table_n != n) {
        free(table);
        table = qk_malloc((size_t)(n + 1) * sizeof *table);
        for (int64_t i = 0; i <= n; i++)
            table[i] = (double)i / (double)n;
        table_n = n;
    }
    return table;
}

/* The statistic without sorting the sample. The x axis is cut into cells
 * of width 1/256 on [-8, 8) (the end cells reach to -inf and +inf), and a
 * pass counts the values per cell. Cells are runs of the sorted sample, so
 * the counts give each cell's ranks r + 1 .. r + m, and Phi at the cell's
 * edges bounds its terms: i/n - Phi(x_i) <= (r + m)/n - Phi(lo) and
 * Phi(x_i) - (i - 1)/n <= Phi(hi) - r/n, while the cell's last value alone
 * makes D >= (r + m)/n - Phi(hi) and its first D >= Phi(lo) - r/n. Only
 * the cells whose bound reaches the largest such lower bound can hold the
 * maximum: their values are sorted and their terms computed exactly as a
 * full sort would, so D is the same number; in a normal sample they are a
 * few dozen of about 2000 cells. */
#define KS_EDGE 8.0
#define KS_CELLS_PER_UNIT 256.0
#define KS_CELLS 4096 /* 2 KS_EDGE KS_CELLS_PER_UNIT */
/* slack for the bounds: Phi is monotone only up to its rounding */
#define KS_SLACK 1e-12

static int ks_cell(double x)
{
    double y = (x + KS_EDGE) * KS_CELLS_PER_UNIT;
    return !(y >= 0.0) ? 0 : y >= KS_CELLS ? KS_CELLS - 1 : (int)y;
}

/* Phi(x[i]) for n values, as qk_plast_phi computes it: erfc(-x / sqrt 2) / 2
 * in one batch. */
static void phi_n(const double *x, double *out, int64_t n)
{
    int64_t i = 0;
    v2d scale = {-M_SQRT1_2, -M_SQRT1_2}, half = {0.5, 0.5};
    for (; i + 2 <= n; i += 2)
        store2(out + i, load2(x + i) * scale); /* -x sqrt(1/2), as (-x) * sqrt(1/2) */
    for (; i < n; i++)
        out[i] = -x[i] * M_SQRT1_2;
    qk_plast_erfc_n(out, out, n);
    for (i = 0; i + 2 <= n; i += 2)
        store2(out + i, load2(out + i) * half);
    for (; i < n; i++)
        out[i] *= 0.5;
}

/* Phi at the cell edges, edge[c] = Phi(lower edge of cell c), edge[0] = 0
 * and edge[KS_CELLS] = 1; once per thread. */
static const double *cell_edges(void)
{
    static _Thread_local double *edge;
    if (!edge) {
        edge = qk_malloc((KS_CELLS + 1) * sizeof *edge);
        for (int c = 1; c < KS_CELLS; c++)
            edge[c] = (double)c / KS_CELLS_PER_UNIT - KS_EDGE;
        phi_n(edge + 1, edge + 1, KS_CELLS - 1);
        edge[0] = 0.0;
        edge[KS_CELLS] = 1.0;
    }
    return edge;
}

/* Which of the cells lo..hi (the others are empty) may hold the largest
 * term, from the counts: into candidate[], with the rank before each cell
 * in before[]. Returns how many values they hold. */
static int64_t candidate_cells(const int64_t *count, int64_t n, int lo, int hi, int64_t *before,
                               int32_t *candidate)
{
    const double *edge = cell_edges();
    const double *step = cdf_steps(n);
    double floor_d = 0.0; /* D is at least this */
    int64_t rank = 0;
    for (int c = lo; c <= hi; c++) {
        before[c] = rank;
        rank += count[c];
        /* an empty cell's two are bounds too (of the values of rank r and
         * r + 1, below and above it) or at most 0: no branch */
        double last_above = step[rank] - edge[c + 1], first_below = edge[c] - step[before[c]];
        floor_d = last_above > floor_d ? last_above : floor_d;
        floor_d = first_below > floor_d ? first_below : floor_d;
    }
    int64_t held = 0;
    for (int c = lo; c <= hi; c++) {
        double above = step[before[c] + count[c]] - edge[c];
        double below = edge[c + 1] - step[before[c]];
        candidate[c] = count[c] > 0 && (above > below ? above : below) + KS_SLACK >= floor_d;
        held += candidate[c] ? count[c] : 0;
    }
    return held;
}

/* A thread's buffers for the statistic, kept from test to test: the
 * counts per cell (zero between tests), the ranks and the candidates per
 * cell, each value's cell, and the candidates' values. */
typedef struct ks_buffers {
    int64_t *count, *before, *slot;
    int32_t *candidate; /* 32-bit flags, for a gather */
    int32_t *cell;
    double *vals;
    int64_t room;
} ks_buffers;

static ks_buffers *ks_buffers_for(int64_t n)
{
    static _Thread_local ks_buffers kb;
    if (!kb.count) {
        kb.count = qk_calloc(KS_CELLS, sizeof *kb.count);
        kb.before = qk_malloc(KS_CELLS * sizeof *kb.before);
        kb.slot = qk_malloc(KS_CELLS * sizeof *kb.slot);
        kb.candidate = qk_malloc(KS_CELLS * sizeof *kb.candidate);
    }
    if (kb.room < n) {
        free(kb.cell);
        free(kb.vals);
        kb.cell = qk_malloc((size_t)n * sizeof *kb.cell);
        kb.vals = qk_malloc((size_t)n * 2 * sizeof *kb.vals);
        kb.room = n;
    }
    return &kb;
}

/* The cells of x[0..n) and their counts, with the first and the last cell
 * that holds a value (count is zero on entry). Returns whether a value is
 * NaN (its cell is 0). */
static int count_cells(const double *x, int64_t n, int32_t *cell, int64_t *count, int *lo,
                       int *hi)
{
    int l = KS_CELLS, h = -1, nan = 0;
    for (int64_t i = 0; i < n; i++) {
        int c = ks_cell(x[i]);
        cell[i] = c;
        count[c]++;
        l = c < l ? c : l;
        h = c > h ? c : h;
        nan |= isnan(x[i]);
    }
    *lo = l;
    *hi = h;
    return nan;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* The scalar end of the vector count_cells: the least and most cell of the
 * eight lanes (l8, h8) and of the values from i on, taken one at a time,
 * then the counts of all n. 1 when a value from i on is NaN. */
static int finish_cells(const double *x, int64_t i, int64_t n, int32_t *cell, int64_t *count,
                        const int32_t l8[8], const int32_t h8[8], int *lo, int *hi)
{
    int l = KS_CELLS, h = -1;
    for (int k = 0; k < 8; k++) {
        l = l8[k] < l ? l8[k] : l;
        h = h8[k] > h ? h8[k] : h;
    }
    int tail_nan = 0;
    for (; i < n; i++) {
        cell[i] = ks_cell(x[i]);
        l = cell[i] < l ? cell[i] : l;
        h = cell[i] > h ? cell[i] : h;
        tail_nan |= isnan(x[i]);
    }
    for (i = 0; i < n; i++)
        count[cell[i]]++;
    *lo = l;
    *hi = h;
    return tail_nan;
}

#define KS_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))

/* count_cells, the cells eight at a time (the same operations as ks_cell) */
KS_AVX512 static int count_cells_avx512(const double *x, int64_t n, int32_t *cell,
                                        int64_t *count, int *lo, int *hi)
{
    __m256i least = _mm256_set1_epi32(KS_CELLS), most = _mm256_set1_epi32(-1);
    __mmask8 nan = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m512d xv = _mm512_loadu_pd(x + i);
        nan |= _mm512_cmp_pd_mask(xv, xv, _CMP_UNORD_Q);
        __m512d y = _mm512_mul_pd(_mm512_add_pd(xv, _mm512_set1_pd(KS_EDGE)),
                                  _mm512_set1_pd(KS_CELLS_PER_UNIT));
        /* below 0 or NaN: cell 0 (max takes the second operand on NaN) */
        y = _mm512_min_pd(_mm512_max_pd(y, _mm512_setzero_pd()), _mm512_set1_pd(KS_CELLS - 1));
        __m256i c = _mm512_cvttpd_epi32(y);
        _mm256_storeu_si256((__m256i *)(void *)(cell + i), c);
        least = _mm256_min_epi32(least, c);
        most = _mm256_max_epi32(most, c);
    }
    int32_t l8[8], h8[8];
    _mm256_storeu_si256((__m256i *)(void *)l8, least);
    _mm256_storeu_si256((__m256i *)(void *)h8, most);
    int tail_nan = finish_cells(x, i, n, cell, count, l8, h8, lo, hi);
    return nan != 0 || tail_nan;
}

#define KS_AVX2 __attribute__((target("avx2")))

/* count_cells_avx512 with vectors of 4 doubles, 8 values a step */
KS_AVX2 static inline __m128i cells4_avx2(__m256d xv)
{
    __m256d y = _mm256_mul_pd(_mm256_add_pd(xv, _mm256_set1_pd(KS_EDGE)),
                              _mm256_set1_pd(KS_CELLS_PER_UNIT));
    y = _mm256_min_pd(_mm256_max_pd(y, _mm256_setzero_pd()), _mm256_set1_pd(KS_CELLS - 1));
    return _mm256_cvttpd_epi32(y);
}

KS_AVX2 static int count_cells_avx2(const double *x, int64_t n, int32_t *cell, int64_t *count,
                                    int *lo, int *hi)
{
    __m256i least = _mm256_set1_epi32(KS_CELLS), most = _mm256_set1_epi32(-1);
    __m256d nan = _mm256_setzero_pd();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256d a = _mm256_loadu_pd(x + i), b = _mm256_loadu_pd(x + i + 4);
        nan = _mm256_or_pd(nan, _mm256_cmp_pd(a, b, _CMP_UNORD_Q)); /* either is NaN */
        __m256i c = _mm256_set_m128i(cells4_avx2(b), cells4_avx2(a));
        _mm256_storeu_si256((__m256i *)(void *)(cell + i), c);
        least = _mm256_min_epi32(least, c);
        most = _mm256_max_epi32(most, c);
    }
    int32_t l8[8], h8[8];
    _mm256_storeu_si256((__m256i *)(void *)l8, least);
    _mm256_storeu_si256((__m256i *)(void *)h8, most);
    int tail_nan = finish_cells(x, i, n, cell, count, l8, h8, lo, hi);
    return _mm256_movemask_pd(nan) != 0 || tail_nan;
}

#endif

double qk_plast_ks_statistic(const double *x, int64_t n)
{
    if (n <= 0)
        return NAN;
    ks_buffers *kb = ks_buffers_for(n);
    int64_t *count = kb->count, *before = kb->before;
    int lo, hi;
#if defined(__x86_64__) && defined(__GNUC__)
    int isa = qk_isa();
    int nan = isa == QK_ISA_AVX512 ? count_cells_avx512(x, n, kb->cell, count, &lo, &hi)
              : isa == QK_ISA_AVX2   ? count_cells_avx2(x, n, kb->cell, count, &lo, &hi)
                                     : count_cells(x, n, kb->cell, count, &lo, &hi);
#else
    int nan = count_cells(x, n, kb->cell, count, &lo, &hi);
#endif
    if (nan) {
        memset(count + lo, 0, (size_t)(hi - lo + 1) * sizeof *count);
        return NAN;
    }
    int64_t held = candidate_cells(count, n, lo, hi, before, kb->candidate);
    /* the candidates' values, cell by cell (slot[c]: the next free place of
     * cell c), sorted within each cell, then their Phi in one batch */
    double *vals = kb->vals, *cdf = kb->vals + held;
    int64_t *slot = kb->slot;
    for (int64_t c = lo, at = 0; c <= hi; c++) {
        slot[c] = kb->candidate[c] ? at : held; /* the others all write to vals[held] */
        at += kb->candidate[c] ? count[c] : 0;
    }
    const int32_t *cell = kb->cell, *candidate = kb->candidate;
    for (int64_t i = 0; i < n; i++) { /* no branch: which cells hold candidates is random */
        int32_t c = cell[i];
        vals[slot[c]] = x[i];
        slot[c] += candidate[c];
    }
    for (int64_t c = lo, at = 0; c <= hi; c++)
        if (kb->candidate[c]) {
            qk_sort_doubles(vals + at, count[c]);
            at += count[c];
        }
    phi_n(vals, cdf, held);
    const double *step = cdf_steps(n);
    double stat = 0.0;
    for (int64_t c = lo, at = 0; c <= hi; c++) {
        if (!kb->candidate[c])
            continue;
        for (int64_t k = 0; k < count[c]; k++) {
            int64_t i = before[c] + k; /* the value's place in the sorted sample */
            double above = step[i + 1] - cdf[at + k];
            double below = cdf[at + k] - step[i];
            double worst = above > below ? above : below;
            if (worst > stat)
                stat = worst;
        }
        at += count[c];
    }
    memset(count + lo, 0, (size_t)(hi - lo + 1) * sizeof *count);
    return stat;
}

double qk_plast_ks_norm(const double *x, int64_t n)
{
    return qk_plast_kolmogorov_sf(n, qk_plast_ks_statistic(x, n));
}

/* lgamma(j + 1) = log j! for j = 0..n. Every KS test of a head has the
 * same n, and a table holds for every smaller n too, so the thread keeps
 * its largest one: each value is still one lgamma call, made once. */
static const double *log_factorials(int64_t n)
{
    static _Thread_local double *table;
    static _Thread_local int64_t table_n = -1;
    if (table_n < n) {
        double *grown = qk_malloc((size_t)(n + 1) * sizeof *grown);
        if (table_n >= 0)
            memcpy(grown, table, (size_t)(table_n + 1) * sizeof *grown);
        for (int64_t j = table_n + 1; j <= n; j++)
            grown[j] = lgamma((double)j + 1.0);
        free(table);
        table = grown;
        table_n = n;
    }
    return table;
}

/* P(D+_n >= x), exactly: x sum_j C(n,j) (1-x-j/n)^(n-j) (x+j/n)^(j-1) over
 * j = 0 .. floor(n (1 - x)); every term is positive, summed in log scale. */
static double smirnov_sf(int64_t n, double x)
{
    double nn = (double)n;
    int64_t last = (int64_t)floor(nn * (1.0 - x));
    double *logs = qk_malloc((size_t)(last + 1) * sizeof *logs);
    double top = -INFINITY;
    const double *lfact = log_factorials(n);
    double lfact_n = lfact[n];
    for (int64_t j = 0; j <= last; j++) {
        double jj = (double)j;
        double base = 1.0 - x - jj / nn;
        double l;
        if (base <= 0.0)
            l = j == n ? 0.0 : -INFINITY; /* 0^0 = 1 */
        else
            l = (nn - jj) * log(base);
        l += lfact_n - lfact[j] - lfact[n - j] + (jj - 1.0) * log(x + jj / nn);
        logs[j] = l;
        if (l > top)
            top = l;
    }
    double sum = 0.0;
    for (int64_t j = 0; j <= last; j++)
        sum += exp(logs[j] - top);
    free(logs);
    return x * exp(top) * sum;
}

/* c <- a b for m x m matrices, with the decimal exponents added. */
static void mat_mul(const double *a, int ea, const double *b, int eb, double *c, int *ec, int m)
{
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, m, m, 1.0, a, m, b, m, 0.0, c,
                m);
    *ec = ea + eb;
    /* keep the central element away from overflow */
    if (c[(m / 2) * m + m / 2] > 1e140) {
        for (int i = 0; i < m * m; i++)
            c[i] *= 1e-140;
        *ec += 140;
    }
}

/* out = h^n (decimal exponent in *eout) by repeated squaring. */
static void mat_pow(const double *h, int m, int64_t n, double *out, int *eout)
{
    size_t sz = (size_t)m * (size_t)m;
    double *base = qk_doubles(sz), *tmp = qk_doubles(sz);
    int ebase = 0, eacc = 0, have = 0;
    memcpy(base, h, sz * sizeof *base);
    for (int64_t e = n; e > 0; e >>= 1) {
        if (e & 1) {
            if (!have) {
                memcpy(out, base, sz * sizeof *out);
                eacc = ebase;
                have = 1;
            } else {
                mat_mul(out, eacc, base, ebase, tmp, &eacc, m);
                memcpy(out, tmp, sz * sizeof *out);
            }
        }
        if (e > 1) {
            mat_mul(base, ebase, base, ebase, tmp, &ebase, m);
            memcpy(base, tmp, sz * sizeof *base);
        }
    }
    *eout = eacc;
    free(tmp);
    free(base);
}

/* P(D_n < x) by the Durbin matrix (Marsaglia, Tsang and Wang 2003):
 * n!/n^n times the central element of H^n for the m x m matrix H below. */
static double durbin_cdf(int64_t n, double x)
{
    double nx = (double)n * x;
    int k = (int)nx + 1, m = 2 * k - 1;
    double h = (double)k - nx;
    double *mat = qk_doubles((size_t)m * (size_t)m);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            mat[i * m + j] = i - j + 1 >= 0 ? 1.0 : 0.0;
    for (int i = 0; i < m; i++) {
        mat[i * m] -= pow(h, i + 1);
        mat[(m - 1) * m + i] -= pow(h, m - i);
    }
    if (2.0 * h - 1.0 > 0.0)
        mat[(m - 1) * m] += pow(2.0 * h - 1.0, m);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            for (int g = 1; g <= i - j + 1; g++)
                mat[i * m + j] /= g;
    double *power = qk_doubles((size_t)m * (size_t)m);
    int e;
    mat_pow(mat, m, n, power, &e);
    double s = power[(k - 1) * m + (k - 1)];
    /* times n!/n^n, rescaling as it shrinks */
    for (int64_t i = 1; i <= n; i++) {
        s = s * (double)i / (double)n;
        if (s < 1e-140) {
            s *= 1e140;
            e -= 140;
        }
    }
    free(power);
    free(mat);
    return s * pow(10.0, e);
}

/* P(D_n <= x) ~ K0(z) + K1(z)/sqrt n + K2(z)/n + K3(z)/n^1.5, z = x sqrt n,
 * with the terms in the form of Pelz and Good (1976) that converges fast
 * for small z. */
static double pelz_good_cdf(int64_t n, double x)
{
    const double pi2 = M_PI * M_PI, pi4 = pi2 * pi2, pi6 = pi4 * pi2;
    const double sqrt2pi = sqrt(2.0 * M_PI);
    double z = sqrt((double)n) * x;
    double z2 = z * z, z4 = z2 * z2, z6 = z4 * z2, z8 = z4 * z4;
    if (-pi2 / (8.0 * z2) < -745.0)
        return 0.0;
    int kmax = (int)ceil(16.0 * z / M_PI) + 2;
    /* sums over odd m = 2k - 1 of c(m) exp(-pi^2 m^2 / (8 z^2)) */
    double k0 = 0.0, k1 = 0.0, k2 = 0.0, k3 = 0.0;
    for (int k = kmax; k >= 1; k--) {
        double mm = 2.0 * k - 1.0, m2 = mm * mm, m4 = m2 * m2, m6 = m4 * m2;
        double ex = exp(-pi2 * m2 / (8.0 * z2));
        k0 += ex;
        k1 += (pi2 * m2 / 4.0 - z2) * ex;
        k2 += (6.0 * z6 + 2.0 * z4 + pi2 * (2.0 * z4 - 5.0 * z2) * m2 / 4.0 +
               pi4 * (1.0 - 2.0 * z2) * m4 / 16.0) * ex;
        k3 += (-30.0 * z6 - 90.0 * z8 + pi2 * (135.0 * z4 - 96.0 * z6) * m2 / 4.0 +
               pi4 * (212.0 * z4 - 60.0 * z2) * m4 / 16.0 + pi6 * (5.0 - 30.0 * z2) * m6 / 64.0) *
              ex;
    }
    k0 *= sqrt2pi / z;
    k1 *= sqrt2pi / (6.0 * z4);
    k2 *= sqrt2pi / (72.0 * z6 * z);
    k3 *= sqrt2pi / (6480.0 * z8 * z2);
    /* and over all integers k of k^2 exp(-pi^2 k^2 / (2 z^2)) terms */
    double s2 = 0.0, s3 = 0.0;
    for (int k = kmax; k >= 1; k--) {
        double kk = (double)k * (double)k;
        double ex = exp(-pi2 * kk / (2.0 * z2));
        s2 += kk * ex;
        s3 += (3.0 * z2 - pi2 * kk) * kk * ex;
    }
    k2 -= pi2 * sqrt2pi / (36.0 * z2 * z) * s2;
    k3 += pi2 * sqrt2pi / (216.0 * z6) * s3;
    double rn = sqrt((double)n);
    return k0 + k1 / rn + k2 / (double)n + k3 / ((double)n * rn);
}

static double clip01(double p)
{
    return p < 0.0 ? 0.0 : p > 1.0 ? 1.0 : p;
}

/* How P(D_n >= x) is evaluated (the regimes of the file comment). */
typedef enum ks_method {
    KS_NAN,
    KS_ONE,
    KS_ZERO,
    KS_RUBEN_LOW,  /* n x <= 1 */
    KS_RUBEN_HIGH, /* n x >= n - 1 */
    KS_SMIRNOV,    /* twice the one-sided tail, the costly exact sum */
    KS_DURBIN,
    KS_PELZ_GOOD
} ks_method;

static ks_method ks_method_of(int64_t n, double x)
{
    if (n <= 0 || isnan(x))
        return KS_NAN;
    if (x <= 0.0)
        return KS_ONE;
    if (x >= 1.0)
        return KS_ZERO;
    double nn = (double)n, t = nn * x;
    if (t <= 1.0)
        return t <= 0.5 ? KS_ONE : KS_RUBEN_LOW;
    if (t >= nn - 1.0)
        return KS_RUBEN_HIGH;
    if (x >= 0.5)
        return KS_SMIRNOV;
    double nx2 = t * x;
    if (n <= 140)
        return nx2 <= 4.0 ? KS_DURBIN : KS_SMIRNOV;
    if (nx2 >= 370.0)
        return KS_ZERO;
    if (nx2 >= 2.2)
        return KS_SMIRNOV;
    return n <= 100000 && nn * pow(x, 1.5) <= 1.4 ? KS_DURBIN : KS_PELZ_GOOD;
}

double qk_plast_kolmogorov_sf(int64_t n, double x)
{
    double nn = (double)n;
    switch (ks_method_of(n, x)) {
    case KS_NAN:
        return NAN;
    case KS_ONE:
        return 1.0;
    case KS_ZERO:
        return 0.0;
    case KS_RUBEN_LOW: /* Ruben-Gambino: P(D_n < x) = n!/n^n (2 n x - 1)^n */
        return clip01(1.0 - exp(lgamma(nn + 1.0) - nn * log(nn) + nn * log(2.0 * (nn * x) - 1.0)));
    case KS_RUBEN_HIGH: /* Ruben-Gambino */
        return clip01(2.0 * pow(1.0 - x, nn));
    case KS_SMIRNOV:
        return clip01(2.0 * smirnov_sf(n, x));
    case KS_DURBIN:
        return clip01(1.0 - durbin_cdf(n, x));
    case KS_PELZ_GOOD:
        return clip01(1.0 - pelz_good_cdf(n, x));
    }
    return NAN;
}

double qk_plast_median(double *x, int n)
{
    if (n <= 0)
        return NAN;
    for (int i = 0; i < n; i++)
        if (isnan(x[i]))
            return NAN;
    qk_sort_doubles(x, n);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* ---- the summary of many tests -------------------------------------------------------- */

/* Tests in order of falling statistic, their p-values computed when first
 * asked for. */
typedef struct ks_tests {
    int64_t n;
    const double *stat;
    int *order;
    double *p; /* by place in order; NaN until computed */
} ks_tests;

static double p_at(ks_tests *t, int place)
{
    if (isnan(t->p[place]))
        t->p[place] = qk_plast_kolmogorov_sf(t->n, t->stat[t->order[place]]);
    return t->p[place];
}

static _Thread_local const double *sort_stat; /* what cmp_falling compares */

/* Indices by falling statistic, NaN last, ties by index. */
static int cmp_falling(const void *a, const void *b)
{
    int i = *(const int *)a, j = *(const int *)b;
    double x = sort_stat[i], y = sort_stat[j];
    if (isnan(x) || isnan(y))
        return isnan(x) != isnan(y) ? isnan(x) - isnan(y) : (i > j) - (i < j);
    if (x != y)
        return x < y ? 1 : -1;
    return (i > j) - (i < j);
}

/* The places [*first, *last) of the costly Smirnov sums with D < 1/2, if
 * they are one run of at least 4, every two D more than a millionth apart:
 * there p falls, relative to its size, at least 8 times as fast as D
 * grows, and the sum is good to about 1e-11, so their p are in the order
 * of their D. Else 0. */
static int smirnov_run(ks_tests *t, int k, int *first, int *last)
{
    *first = *last = -1;
    for (int i = 0; i < k; i++) {
        double d = t->stat[t->order[i]];
        if (ks_method_of(t->n, d) != KS_SMIRNOV || d >= 0.5)
            continue;
        if (*first < 0)
            *first = i;
        else if (*last != i)
            return 0; /* not one run */
        *last = i + 1;
    }
    if (*first < 0 || *last - *first < 4)
        return 0;
    for (int i = *first; i + 1 < *last; i++) {
        double d = t->stat[t->order[i]], e = t->stat[t->order[i + 1]];
        if (d - e < 1e-6 * d)
            return 0;
    }
    return 1;
}

/* With such a run, every p outside it is computed and checked against the
 * run's ends: those of larger D (before the run) must be at most its first
 * p, those of smaller D (after it) at least its last. Then the run holds
 * the middle of the sorted p-values as a block, and of the run only the
 * places that the median and the crossing of alpha look at are computed.
 * Otherwise every p is. */
void qk_plast_ks_summary(int64_t n, const double *stat, int k, double alpha, double *median_p,
                         int *below)
{
    ks_tests t = {n, stat, qk_malloc((size_t)(k > 0 ? k : 1) * sizeof(int)),
                  qk_malloc((size_t)(k > 0 ? k : 1) * sizeof(double))};
    for (int i = 0; i < k; i++) {
        t.order[i] = i;
        t.p[i] = NAN;
    }
    sort_stat = stat;
    qsort(t.order, (size_t)k, sizeof *t.order, cmp_falling);
    double *sorted = qk_malloc((size_t)(k > 0 ? k : 1) * sizeof *sorted);
    int first, last, lazy = smirnov_run(&t, k, &first, &last);
    /* every p outside the run, and the run's ends */
    for (int i = 0; i < k; i++)
        if (!lazy || i <= first || i >= last - 1)
            sorted[i] = p_at(&t, i);
    if (lazy) {
        /* the run's p lie between its ends, and those between the others */
        for (int i = 0; i < k && lazy; i++)
            if (i < first)
                lazy = !(sorted[i] > sorted[first]);
            else if (i >= last)
                lazy = !(sorted[i] < sorted[last - 1]);
    }
    *below = 0;
    if (!lazy) {
        for (int i = 0; i < k; i++) {
            sorted[i] = p_at(&t, i); /* the rest of the run, if the check failed */
            *below += sorted[i] < alpha;
        }
    } else {
        for (int i = 0; i < k; i++)
            if (i < first || i >= last)
                *below += sorted[i] < alpha;
        /* in the run p rises with the place: the first place with p >= alpha */
        int lo = first, hi = last;
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (p_at(&t, mid) < alpha)
                lo = mid + 1;
            else
                hi = mid;
        }
        *below += lo - first;
        /* the middle places exactly, the rest of the run by its nearer end:
         * after the median's sort the middle ranks hold the exact values */
        int mid_lo = (k - 1) / 2, mid_hi = k / 2;
        for (int i = first + 1; i < last - 1; i++)
            sorted[i] = i == mid_lo || i == mid_hi ? p_at(&t, i)
                        : i < mid_lo           ? sorted[first]
                                               : sorted[last - 1];
    }
    *median_p = qk_plast_median(sorted, k);
    free(sorted);
    free(t.p);
    free(t.order);
}
