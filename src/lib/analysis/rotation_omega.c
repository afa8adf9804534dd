/* The shared-frequency sinusoid fit of the a-projections (docs/rotation.md,
 * step 5, "omega fit"): for each frequency w of a log-spaced grid and a
 * golden-section refinement, two independent least-squares fits
 * y = c_k + A_k cos(w t') + B_k sin(w t') (one per kind), scored by the
 * within-kind R^2. */
#include "qk/rotation.h"
#include "qk/simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Table entries between exact cos/sin evaluations: the recurrence in
 * between adds at most this many roundings (about 4e-15 in all). */
#define ANCHOR_EVERY 32
/* The stride of the position split is about this times sqrt(T): larger
 * groups of rows cost less per group, and the lo table (4 doubles an entry
 * and frequency, 93 KB for a batch of 4 at T = 131071) stays in the L2
 * cache. The stride decides the order of the sums, hence their last bits:
 * it is part of the results. */
#define STRIDE_SCALE 2.0

/* The rows of one kind, prepared once per head. Positions are split as
 * t' = hi * stride + lo with stride about 2 sqrt(T), and the rows sorted by
 * hi, so that for each frequency w
 *   sum_rows e^{i w t'} = sum_hi e^{i w hi stride} sum_{rows of hi} e^{i w lo}
 * needs only table look-ups and additions per row, and one complex product
 * per hi; likewise for y e^{i w t'} and e^{2 i w t'} (which gives the sums of
 * cos^2, cos sin and sin^2). The fit's cost was once dominated by one sin
 * and one cos per row and frequency. */
typedef struct kind_rows {
    int64_t n;
    double *y;      /* centred on the kind's mean, sorted by hi */
    int32_t *lo;    /* sorted by hi */
    int64_t *start; /* [n_hi + 1] rows of each hi */
    double sst;     /* sum of y^2 */
    double ssr_lin; /* regression sum of squares of y on t */
} kind_rows;

/* Frequencies evaluated together, one in each lane of a vector (the
 * kernel, src/lib/analysis/rotation_omega_kernel.h): every lane does exactly the
 * arithmetic of a lone frequency, so R^2 at a frequency does not depend on
 * the company it is computed in. */
#define LANES 4
#define ENTRY (4 * LANES) /* doubles per entry of a phase table */

typedef struct fit_state {
    kind_rows kind[2];
    int32_t stride;
    int32_t n_hi;
    /* [stride][4][LANES]: cos, sin of w lo, cos, sin of 2 w lo, for the
     * frequency w of each lane; 64-byte aligned (qk_doubles) */
    double *lo_tab;
    double *hi_tab; /* [n_hi][4][LANES]: the same of w hi stride */
    double sst_w;
} fit_state;

/* Regression sum of squares of the centred y on t (a straight line). */
static double line_ssr(const double *yc, const int32_t *t, int64_t n)
{
    double tbar = 0.0;
    for (int64_t i = 0; i < n; i++)
        tbar += t[i];
    tbar = n ? tbar / (double)n : 0.0;
    double stt = 0.0, syt = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double tc = t[i] - tbar;
        stt += tc * tc;
        syt += yc[i] * tc;
    }
    return stt > 0.0 ? syt * syt / stt : 0.0;
}

static void prepare_kind(kind_rows *k, const double *y, const int32_t *t, int64_t n,
                         int32_t t_min, int32_t stride, int32_t n_hi)
{
    size_t cap = (size_t)(n ? n : 1);
    double *yc = qk_malloc(cap * sizeof(double));
    double mean = 0.0;
    for (int64_t i = 0; i < n; i++)
        mean += y[i];
    mean = n ? mean / (double)n : 0.0;
    k->n = n;
    k->sst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        yc[i] = y[i] - mean;
        k->sst += yc[i] * yc[i];
    }
    k->ssr_lin = line_ssr(yc, t, n);
    /* counting sort by hi, stable */
    k->start = qk_calloc((size_t)n_hi + 1, sizeof(int64_t));
    for (int64_t i = 0; i < n; i++)
        k->start[((int64_t)t[i] - t_min) / stride + 1]++;
    for (int32_t h = 0; h < n_hi; h++)
        k->start[h + 1] += k->start[h];
    int64_t *fill = qk_malloc(((size_t)n_hi + 1) * sizeof(int64_t));
    memcpy(fill, k->start, ((size_t)n_hi + 1) * sizeof(int64_t));
    k->y = qk_malloc(cap * sizeof(double));
    k->lo = qk_malloc(cap * sizeof(int32_t));
    for (int64_t i = 0; i < n; i++) {
        int64_t tp = (int64_t)t[i] - t_min, at = fill[tp / stride]++;
        k->y[at] = yc[i];
        k->lo[at] = (int32_t)(tp % stride);
    }
    free(fill);
    free(yc);
}

static void free_kind(kind_rows *k)
{
    free(k->y);
    free(k->lo);
    free(k->start);
}

/* ---- the sums of one batch of frequencies: two builds ------------------------ */

#if defined(__x86_64__) && defined(__GNUC__)
typedef double vec4 __attribute__((vector_size(32)));
#define VEC vec4
#define VEC_WIDTH 4
#define KERNEL(name) name##_avx2
#define KERNEL_ATTR __attribute__((target("avx2")))
#include "rotation_omega_kernel.h"
#undef VEC
#undef VEC_WIDTH
#undef KERNEL
#undef KERNEL_ATTR
#define HAVE_AVX2_BUILD 1
#endif

typedef double vec2 __attribute__((vector_size(16)));
#define VEC vec2
#define VEC_WIDTH 2
#define KERNEL(name) name##_base
#define KERNEL_ATTR
#include "rotation_omega_kernel.h"
#undef VEC
#undef VEC_WIDTH
#undef KERNEL
#undef KERNEL_ATTR

/* ---- R^2 ----------------------------------------------------------------------- */

/* Regression sum of squares of the centred y on (cos, sin) with an
 * intercept, from the sums s[0..5] (lane f) over one kind's rows. A
 * (nearly) collinear pair falls back to the better single regressor. */
static double kind_ssr(const kind_rows *k, const double s[6][LANES], int f)
{
    double sc = s[0][f], ss = s[1][f], dc = s[2][f], ds = s[3][f], syc = s[4][f];
    double sys = s[5][f];
    double n = (double)k->n;
    double scc = 0.5 * (n + dc), scs = 0.5 * ds, sss = 0.5 * (n - dc);
    double gcc = scc - sc * sc / n, gcs = scs - sc * ss / n, gss = sss - ss * ss / n;
    double tiny = 1e-12 * n;
    double ssr = 0.0;
    double det = gcc * gss - gcs * gcs;
    if (gcc > tiny && gss > tiny && det > 1e-12 * gcc * gss) {
        ssr = (gss * syc * syc - 2.0 * gcs * syc * sys + gcc * sys * sys) / det;
    } else {
        if (gcc > tiny)
            ssr = syc * syc / gcc;
        if (gss > tiny && sys * sys / gss > ssr)
            ssr = sys * sys / gss;
    }
    return ssr < 0.0 ? 0.0 : ssr > k->sst ? k->sst : ssr;
}

/* The positional sums of a batch of LANES frequencies, for each kind: cos,
 * sin, cos 2, sin 2 (s[0..3] of the kernel's sums). */
#define POSITION_SUMS (2 * 4 * LANES) /* doubles a batch, both kinds */

/* R^2 at w = exp(log_w[f]) for the first count lanes (count <= LANES; the
 * other lanes repeat the last frequency). The sums that depend on the
 * positions alone come from known when it is given (POSITION_SUMS doubles
 * that an earlier call kept), else are computed and, when keep is given,
 * copied there. */
static void r_squared_at(fit_state *st, const double *log_w, int count, const double *known,
                         double *keep, double *r2)
{
    double w[LANES];
    for (int f = 0; f < LANES; f++)
        w[f] = exp(log_w[f < count ? f : count - 1]);
    double sums[2][6][LANES];
    if (known)
        for (int kind = 0; kind < 2; kind++)
            memcpy(sums[kind], known + kind * 4 * LANES, 4 * LANES * sizeof(double));
#ifdef HAVE_AVX2_BUILD
    if (qk_simd_avx2())
        batch_sums_avx2(st, w, !known, sums);
    else
#endif
        batch_sums_base(st, w, !known, sums);
    if (keep)
        for (int kind = 0; kind < 2; kind++)
            memcpy(keep + kind * 4 * LANES, sums[kind], 4 * LANES * sizeof(double));
    for (int f = 0; f < count; f++)
        r2[f] = (kind_ssr(&st->kind[0], sums[0], f) + kind_ssr(&st->kind[1], sums[1], f)) /
                st->sst_w;
}

/* The state of the golden-section search on log w: the bracket [lo, hi]
 * and its two inner points with their R^2. */
typedef struct golden {
    double lo, hi, x1, x2, f1, f2;
} golden;

static const double golden_ratio = 0.6180339887498949; /* (sqrt 5 - 1) / 2 */

/* One step from s: keep the lower part of the bracket when low (f1 >= f2),
 * else the upper part; *out gets the new bracket, whose new inner point
 * (returned) still needs its R^2. The point does not depend on the R^2
 * values, so the points of the next step's two cases can be computed, and
 * evaluated in one batch with this one, before the case is known. */
static double golden_step(const golden *s, int low, golden *out)
{
    *out = *s;
    if (low) {
        out->hi = s->x2;
        out->x2 = s->x1;
        out->f2 = s->f1;
        out->x1 = out->hi - golden_ratio * (out->hi - out->lo);
        return out->x1;
    }
    out->lo = s->x1;
    out->x1 = s->x2;
    out->f1 = s->f2;
    out->x2 = out->lo + golden_ratio * (out->hi - out->lo);
    return out->x2;
}

static void golden_record(const golden *s, double *best_lw, double *best_r2)
{
    if (s->f1 > *best_r2) {
        *best_r2 = s->f1;
        *best_lw = s->x1;
    }
    if (s->f2 > *best_r2) {
        *best_r2 = s->f2;
        *best_lw = s->x2;
    }
}

/* Golden-section search for the maximum of R^2 on [lo, hi] (log w),
 * updating *best_lw, *best_r2 whenever a strictly better point turns up.
 * Each batch evaluates a step's point together with both possible points
 * of the step after it, so two steps cost one batch. */
static void golden_refine(fit_state *st, double lo, double hi, int steps, double *best_lw,
                          double *best_r2)
{
    golden s = {lo, hi, hi - golden_ratio * (hi - lo), lo + golden_ratio * (hi - lo), 0, 0};
    golden t;
    double x[4] = {s.x1, s.x2}, f[4], spec[2];
    int have_spec = steps > 0;
    if (have_spec) {
        x[2] = golden_step(&s, 1, &t);
        x[3] = golden_step(&s, 0, &t);
    }
    r_squared_at(st, x, have_spec ? 4 : 2, NULL, NULL, f);
    s.f1 = f[0];
    s.f2 = f[1];
    spec[0] = f[2];
    spec[1] = f[3];
    for (int k = 0; k < steps; k++) {
        golden_record(&s, best_lw, best_r2);
        int low = s.f1 >= s.f2;
        double fp, p = golden_step(&s, low, &t);
        if (have_spec) {
            fp = spec[low ? 0 : 1];
            have_spec = 0;
        } else {
            golden u;
            x[0] = p;
            have_spec = k + 1 < steps;
            if (have_spec) {
                x[1] = golden_step(&t, 1, &u);
                x[2] = golden_step(&t, 0, &u);
            }
            r_squared_at(st, x, have_spec ? 3 : 1, NULL, NULL, f);
            fp = f[0];
            spec[0] = f[1];
            spec[1] = f[2];
        }
        if (low)
            t.f1 = fp;
        else
            t.f2 = fp;
        s = t;
    }
    golden_record(&s, best_lw, best_r2);
}

static void pos_range(const int32_t *t, int64_t n, int32_t *lo, int32_t *hi)
{
    for (int64_t i = 0; i < n; i++) {
        *lo = t[i] < *lo ? t[i] : *lo;
        *hi = t[i] > *hi ? t[i] : *hi;
    }
}

/* The grid's positional sums of the last head (qk_rot_omega_fit_cached):
 * they depend on the positions of the rows and the grid alone, and the
 * heads of one layer share their positions. */
struct qk_rot_omega_cache {
    int64_t n_q, n_k;
    int grid;
    int32_t *t;    /* [n_q + n_k] the positions of the q rows, then the k rows */
    double *sums;  /* POSITION_SUMS per batch of LANES grid points */
    int64_t hits;  /* calls that took their sums from here */
};

void qk_rot_omega_cache_free(qk_rot_omega_cache *c)
{
    if (!c)
        return;
    free(c->t);
    free(c->sums);
    free(c);
}

int64_t qk_rot_omega_cache_hits(const qk_rot_omega_cache *c)
{
    return c ? c->hits : 0;
}

/* Whether n positions at a equal those at b (either may be NULL when n is 0). */
static int same_positions(const int32_t *a, const int32_t *b, int64_t n)
{
    return n == 0 || memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

/* Whether c holds the sums for these positions and grid. */
static int cache_holds(const qk_rot_omega_cache *c, const int32_t *t_q, int64_t n_q,
                       const int32_t *t_k, int64_t n_k, int grid)
{
    return c && c->sums && c->n_q == n_q && c->n_k == n_k && c->grid == grid &&
           same_positions(c->t, t_q, n_q) && same_positions(c->t + n_q, t_k, n_k);
}

/* c emptied and made ready to take the sums of these positions and grid. */
static void cache_renew(qk_rot_omega_cache *c, const int32_t *t_q, int64_t n_q,
                        const int32_t *t_k, int64_t n_k, int grid)
{
    free(c->t);
    free(c->sums);
    c->n_q = n_q;
    c->n_k = n_k;
    c->grid = grid;
    c->t = qk_malloc((size_t)(n_q + n_k > 0 ? n_q + n_k : 1) * sizeof *c->t);
    if (n_q > 0)
        memcpy(c->t, t_q, (size_t)n_q * sizeof *t_q);
    if (n_k > 0)
        memcpy(c->t + n_q, t_k, (size_t)n_k * sizeof *t_k);
    c->sums = qk_doubles((size_t)(grid + LANES - 1) / LANES * POSITION_SUMS);
}

void qk_rot_omega_fit(const double *y_q, const int32_t *t_q, int64_t n_q, const double *y_k,
                      const int32_t *t_k, int64_t n_k, int grid, int refine,
                      qk_rot_omega *out)
{
    qk_rot_omega_fit_cached(y_q, t_q, n_q, y_k, t_k, n_k, grid, refine, NULL, out);
}

void qk_rot_omega_fit_cached(const double *y_q, const int32_t *t_q, int64_t n_q,
                             const double *y_k, const int32_t *t_k, int64_t n_k, int grid,
                             int refine, qk_rot_omega_cache **cache, qk_rot_omega *out)
{
    out->omega = NAN;
    out->r_squared = NAN;
    out->at_bound = 0;
    out->lin_r_squared_w = NAN;
    if (n_q + n_k <= 0)
        return;
    int32_t t_min = n_q ? t_q[0] : t_k[0], t_max = t_min;
    pos_range(t_q, n_q, &t_min, &t_max);
    pos_range(t_k, n_k, &t_min, &t_max);
    int64_t span = (int64_t)t_max - t_min;

    fit_state st;
    memset(&st, 0, sizeof st);
    st.stride = (int32_t)ceil(STRIDE_SCALE * sqrt((double)span + 1.0));
    st.n_hi = (int32_t)(span / st.stride + 1);
    prepare_kind(&st.kind[0], y_q, t_q, n_q, t_min, st.stride, st.n_hi);
    prepare_kind(&st.kind[1], y_k, t_k, n_k, t_min, st.stride, st.n_hi);
    st.sst_w = st.kind[0].sst + st.kind[1].sst;
    if (st.sst_w > 0.0) {
        out->lin_r_squared_w = (st.kind[0].ssr_lin + st.kind[1].ssr_lin) / st.sst_w;
        if (span > 0 && grid >= 2) {
            st.lo_tab = qk_doubles(4 * LANES * (size_t)st.stride);
            st.hi_tab = qk_doubles(4 * LANES * (size_t)st.n_hi);
            double lw_lo = log(0.25 * M_PI / (double)span), lw_hi = log(20.0 * M_PI / (double)span);
            double step = (lw_hi - lw_lo) / (grid - 1);
            int best = 0;
            double best_r2 = -INFINITY;
            if (cache && !*cache)
                *cache = qk_calloc(1, sizeof **cache);
            const qk_rot_omega_cache *known = NULL;
            qk_rot_omega_cache *keep = NULL;
            if (cache && cache_holds(*cache, t_q, n_q, t_k, n_k, grid)) {
                known = *cache;
                (*cache)->hits++;
            } else if (cache) {
                keep = *cache;
                cache_renew(keep, t_q, n_q, t_k, n_k, grid);
            }
            for (int i = 0; i < grid; i += LANES) {
                int count = grid - i < LANES ? grid - i : LANES;
                double lw[LANES], r2[LANES];
                for (int f = 0; f < count; f++)
                    lw[f] = lw_lo + step * (i + f);
                size_t at = (size_t)(i / LANES) * POSITION_SUMS;
                r_squared_at(&st, lw, count, known ? known->sums + at : NULL,
                             keep ? keep->sums + at : NULL, r2);
                for (int f = 0; f < count; f++)
                    if (r2[f] > best_r2) {
                        best_r2 = r2[f];
                        best = i + f;
                    }
            }
            double best_lw = lw_lo + step * best;
            double lo = lw_lo + step * (best > 0 ? best - 1 : 0);
            double hi = lw_lo + step * (best < grid - 1 ? best + 1 : grid - 1);
            if (refine > 0)
                golden_refine(&st, lo, hi, refine, &best_lw, &best_r2);
            out->omega = exp(best_lw);
            out->r_squared = best_r2;
            out->at_bound = best == 0;
            free(st.lo_tab);
            free(st.hi_tab);
        }
    }
    free_kind(&st.kind[0]);
    free_kind(&st.kind[1]);
}
