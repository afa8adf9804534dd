/* The shared-frequency sinusoid fit of the a-projections (docs/rotation.md,
 * step 5, "omega fit"): for each frequency w of a log-spaced grid and a
 * golden-section refinement, two independent least-squares fits
 * y = c_k + A_k cos(w t') + B_k sin(w t') (one per kind), scored by the
 * within-kind R^2. */
#include "qk/rotation.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Table entries between exact cos/sin evaluations: the recurrence in
 * between adds at most this many roundings (about 4e-15 in all). */
#define ANCHOR_EVERY 32
/* The stride of the position split is about this times sqrt(T): larger
 * groups of rows cost less per group, and the lo table (4 doubles an entry,
 * 23 KB at T = 131071) still fits the L1 cache. */
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

typedef struct fit_state {
    kind_rows kind[2];
    int32_t stride;
    int32_t n_hi;
    double *lo_tab; /* [4*stride]: cos, sin of w lo, cos, sin of 2 w lo */
    double *hi_tab; /* [4*n_hi]: the same of w hi stride */
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

/* tab[4j .. 4j+3] = cos(j step), sin(j step), cos(2 j step), sin(2 j step)
 * for j < n: a rotation recurrence anchored on exact values every
 * ANCHOR_EVERY entries, the double angle from the single one. */
static void phase_table(double step, int32_t n, double *tab)
{
    double cs = cos(step), sn = sin(step);
    for (int32_t j = 0; j < n; j++) {
        double *e = tab + 4 * (size_t)j;
        if (j % ANCHOR_EVERY == 0) {
            e[0] = cos(step * j);
            e[1] = sin(step * j);
        } else {
            double c = e[-4], s = e[-3];
            e[0] = c * cs - s * sn;
            e[1] = s * cs + c * sn;
        }
        e[2] = (e[0] - e[1]) * (e[0] + e[1]);
        e[3] = 2.0 * e[0] * e[1];
    }
}

/* Over the rows of one hi: the sums of e^{i w lo} (0, 1), e^{2 i w lo}
 * (2, 3) and y e^{i w lo} (4, 5). Two rows per iteration into two sets of
 * accumulators, so that consecutive additions do not wait for each other. */
static void group_sums(const kind_rows *k, int64_t from, int64_t to, const double *lo_tab,
                       double out[6])
{
    double a[6] = {0}, b[6] = {0};
    int64_t i = from;
    for (; i + 2 <= to; i += 2) {
        const double *l0 = lo_tab + 4 * (size_t)k->lo[i], *l1 = lo_tab + 4 * (size_t)k->lo[i + 1];
        double y0 = k->y[i], y1 = k->y[i + 1];
        a[0] += l0[0];
        b[0] += l1[0];
        a[1] += l0[1];
        b[1] += l1[1];
        a[2] += l0[2];
        b[2] += l1[2];
        a[3] += l0[3];
        b[3] += l1[3];
        a[4] += y0 * l0[0];
        b[4] += y1 * l1[0];
        a[5] += y0 * l0[1];
        b[5] += y1 * l1[1];
    }
    if (i < to) {
        const double *l = lo_tab + 4 * (size_t)k->lo[i];
        a[0] += l[0];
        a[1] += l[1];
        a[2] += l[2];
        a[3] += l[3];
        a[4] += k->y[i] * l[0];
        a[5] += k->y[i] * l[1];
    }
    for (int j = 0; j < 6; j++)
        out[j] = a[j] + b[j];
}

/* Regression sum of squares of the centred y on (cos, sin) with an
 * intercept, from the sums over one kind's rows. A (nearly) collinear pair
 * falls back to the better single regressor. */
static double kind_ssr(const kind_rows *k, const fit_state *st)
{
    double sc = 0, ss = 0, dc = 0, ds = 0, syc = 0, sys = 0;
    for (int32_t h = 0; h < st->n_hi; h++) {
        if (k->start[h] == k->start[h + 1])
            continue;
        double g[6];
        group_sums(k, k->start[h], k->start[h + 1], st->lo_tab, g);
        const double *e = st->hi_tab + 4 * (size_t)h;
        sc += e[0] * g[0] - e[1] * g[1];
        ss += e[1] * g[0] + e[0] * g[1];
        dc += e[2] * g[2] - e[3] * g[3];
        ds += e[3] * g[2] + e[2] * g[3];
        syc += e[0] * g[4] - e[1] * g[5];
        sys += e[1] * g[4] + e[0] * g[5];
    }
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

/* R^2 at w = exp(log_w). */
static double r_squared_at(fit_state *st, double log_w)
{
    double w = exp(log_w);
    phase_table(w, st->stride, st->lo_tab);
    phase_table(w * st->stride, st->n_hi, st->hi_tab);
    double ssr = kind_ssr(&st->kind[0], st) + kind_ssr(&st->kind[1], st);
    return ssr / st->sst_w;
}

/* Golden-section search for the maximum of R^2 on [lo, hi] (log w),
 * updating *best_lw, *best_r2 whenever a strictly better point turns up. */
static void golden_refine(fit_state *st, double lo, double hi, int steps, double *best_lw,
                          double *best_r2)
{
    const double g = 0.5 * (sqrt(5.0) - 1.0);
    double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
    double f1 = r_squared_at(st, x1), f2 = r_squared_at(st, x2);
    for (int s = 0; s < steps; s++) {
        if (f1 > *best_r2) {
            *best_r2 = f1;
            *best_lw = x1;
        }
        if (f2 > *best_r2) {
            *best_r2 = f2;
            *best_lw = x2;
        }
        if (f1 >= f2) {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - g * (hi - lo);
            f1 = r_squared_at(st, x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + g * (hi - lo);
            f2 = r_squared_at(st, x2);
        }
    }
    if (f1 > *best_r2) {
        *best_r2 = f1;
        *best_lw = x1;
    }
    if (f2 > *best_r2) {
        *best_r2 = f2;
        *best_lw = x2;
    }
}

static void pos_range(const int32_t *t, int64_t n, int32_t *lo, int32_t *hi)
{
    for (int64_t i = 0; i < n; i++) {
        *lo = t[i] < *lo ? t[i] : *lo;
        *hi = t[i] > *hi ? t[i] : *hi;
    }
}

void qk_rot_omega_fit(const double *y_q, const int32_t *t_q, int64_t n_q, const double *y_k,
                      const int32_t *t_k, int64_t n_k, int grid, int refine,
                      qk_rot_omega *out)
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
            st.lo_tab = qk_malloc(4 * (size_t)st.stride * sizeof(double));
            st.hi_tab = qk_malloc(4 * (size_t)st.n_hi * sizeof(double));
            double lw_lo = log(0.25 * M_PI / (double)span), lw_hi = log(20.0 * M_PI / (double)span);
            double step = (lw_hi - lw_lo) / (grid - 1);
            int best = 0;
            double best_r2 = -INFINITY;
            for (int i = 0; i < grid; i++) {
                double r2 = r_squared_at(&st, lw_lo + step * i);
                if (r2 > best_r2) {
                    best_r2 = r2;
                    best = i;
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
