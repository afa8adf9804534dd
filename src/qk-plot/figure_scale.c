/* Robust scales: the range a figure draws a quantity on, decided by the
 * bulk of the values rather than by the most extreme one
 * (src/qk-plot/figure.h, docs/figure-style.md). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "figure.h"
#include "qk/stats.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The finite values of v, sorted (malloc'd); their number in *k. */
static double *sorted_finite(const double *v, int n, int *k)
{
    double *s = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
    *k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]))
            s[(*k)++] = v[i];
    qsort(s, (size_t)*k, sizeof *s, cmp_double);
    return s;
}

static void count_outside(fig_range *r, const double *v, int n)
{
    r->below = r->above = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            r->below += v[i] < r->lo;
            r->above += v[i] > r->hi;
        }
}

fig_range fig_robust_range(const double *v, int n)
{
    int k;
    double *s = sorted_finite(v, n, &k);
    fig_range r = {NAN, NAN, NAN, NAN, k, 0, 0};
    if (k > 0) {
        r.min = s[0], r.max = s[k - 1];
        r.lo = r.min, r.hi = r.max;
        double q1 = qk_sorted_quantile(s, k, 0.25), q3 = qk_sorted_quantile(s, k, 0.75);
        if (k >= FIG_ROBUST_MIN && q3 > q1) {
            /* the fences, never inside the central 96 % of the values: not
             * above the order statistic at 98 % (rounded down, so that with
             * few values the extreme itself does not pull the fence out) */
            double lo = fmin(q1 - FIG_FENCE * (q3 - q1), s[(int)ceil(FIG_TAIL * (k - 1))]);
            double hi = fmax(q3 + FIG_FENCE * (q3 - q1), s[(int)floor((1 - FIG_TAIL) * (k - 1))]);
            double mid = 0.5 * (q1 + q3);
            /* an extreme is cut only when it would stretch the scale by more than
             * FIG_STRETCH of the robust half-span */
            if (r.min < mid - (1 + FIG_STRETCH) * (mid - lo))
                r.lo = lo;
            if (r.max > mid + (1 + FIG_STRETCH) * (hi - mid))
                r.hi = hi;
        }
    }
    free(s);
    count_outside(&r, v, n);
    return r;
}

void fig_range_recount(fig_range *r, const double *v, int n)
{
    r->n = 0;
    r->min = r->max = NAN;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            r->min = r->n ? fmin(r->min, v[i]) : v[i];
            r->max = r->n ? fmax(r->max, v[i]) : v[i];
            r->n++;
        }
    count_outside(r, v, n);
}

void fig_range_include(fig_range *r, double x, const double *v, int n)
{
    if (!isfinite(x))
        return;
    if (!isfinite(r->lo) || x < r->lo)
        r->lo = x;
    if (!isfinite(r->hi) || x > r->hi)
        r->hi = x;
    count_outside(r, v, n);
}

void fig_range_pad(const fig_range *r, double frac, double *lo, double *hi)
{
    double a = isfinite(r->lo) ? r->lo : 0, b = isfinite(r->hi) ? r->hi : 1;
    double span = b - a;
    if (!(span > 0))
        span = fabs(a) > 0 ? fabs(a) : 1;
    *lo = a - frac * span;
    *hi = b + frac * span;
}

void fig_range_widen(double *lo, double *hi)
{
    if (!isfinite(*lo) || !isfinite(*hi))
        return;
    double mid = 0.5 * *lo + 0.5 * *hi, size = fmax(fabs(*lo), fabs(*hi));
    if (*hi - *lo > 1e-4 * size)
        return;
    double half = mid != 0 ? 0.1 * fabs(mid) : 0.5;
    *lo = mid - half;
    *hi = mid + half;
}

double fig_clip(const fig_range *r, double v, int *side)
{
    *side = v < r->lo ? -1 : v > r->hi ? 1 : 0;
    return *side < 0 ? r->lo : *side > 0 ? r->hi : v;
}

void fig_offscale_labels(qk_plot *p, const fig_range *r, const char *fmt, int tag, int font_pt)
{
    char value[64], text[160];
    if (r->above) {
        fig_fmt(value, sizeof value, fmt, r->max);
        snprintf(text, sizeof text, "▲ %d above the scale (max %s)", r->above, value);
        qk_plot_printf(p, "set label %d ", tag);
        fig_text(p, text);
        qk_plot_printf(p, " at graph 1, graph 1.035 right front font \",%d\" tc rgb '#333333'\n",
                       font_pt);
    }
    if (r->below) {
        fig_fmt(value, sizeof value, fmt, r->min);
        snprintf(text, sizeof text, "▼ %d below the scale (min %s)", r->below, value);
        qk_plot_printf(p, "set label %d ", tag + 1);
        fig_text(p, text);
        qk_plot_printf(p, " at graph 0, graph 1.035 left front font \",%d\" tc rgb '#333333'\n",
                       font_pt);
    }
}
