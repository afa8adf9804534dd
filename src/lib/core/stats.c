/* Descriptive statistics (include/qk/stats.h). */
#include "qk/stats.h"

#include <math.h>
#include <stdlib.h>

#include "qk/common.h"

/* Sorts doubles ascending: quicksort with a median-of-three pivot and
 * insertion sort for short runs, recursing into the smaller side (qsort's
 * comparison callback made it the slowest part of a head). */
void qk_sort_doubles(double *v, int64_t n)
{
    while (n > 16) {
        int64_t mid = n / 2;
        double a = v[0], b = v[mid], c = v[n - 1];
        double pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
        int64_t i = 0, j = n - 1;
        for (;;) { /* Hoare partition */
            while (v[i] < pivot)
                i++;
            while (v[j] > pivot)
                j--;
            if (i >= j)
                break;
            double tmp = v[i];
            v[i++] = v[j];
            v[j--] = tmp;
        }
        int64_t left = j + 1; /* v[0..j] <= pivot <= v[j+1..n-1] */
        if (left < n - left) {
            qk_sort_doubles(v, left);
            v += left;
            n -= left;
        } else {
            qk_sort_doubles(v + left, n - left);
            n = left;
        }
    }
    for (int64_t i = 1; i < n; i++) {
        double x = v[i];
        int64_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

double qk_mean(const double *x, int n)
{
    double sum = 0;
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) {
            sum += x[i];
            k++;
        }
    return k ? sum / k : NAN;
}

void qk_sum_add(qk_sum *s, double x)
{
    if (isfinite(x))
        s->sum += x, s->n++;
}

double qk_sum_mean(const qk_sum *s)
{
    return s->n ? s->sum / s->n : NAN;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

double qk_sorted_quantile(const double *v, int k, double q)
{
    if (k <= 0)
        return NAN;
    double h = (k - 1) * q;
    int lo = (int)floor(h);
    if (lo >= k - 1)
        return v[k - 1];
    if (lo < 0)
        return v[0];
    return h == lo ? v[lo] : v[lo] + (h - lo) * (v[lo + 1] - v[lo]);
}

double qk_quantile(const double *x, int n, double q)
{
    double *v = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!isnan(x[i]))
            v[k++] = x[i];
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    double out = qk_sorted_quantile(v, k, q);
    free(v);
    return out;
}

double qk_median(const double *x, int n) { return qk_quantile(x, n, 0.5); }

qk_line qk_line_fit(const double *x, const double *y, int n)
{
    qk_line l = {0, NAN, NAN, NAN, NAN, NAN};
    double sx = 0, sy = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            sx += x[i];
            sy += y[i];
            l.n++;
        }
    if (l.n == 0)
        return l;
    /* two passes: the sums of squares about the means lose no digits to
     * large means */
    double mx = sx / l.n, my = sy / l.n, sxx = 0, syy = 0, sxy = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i]) && isfinite(y[i])) {
            sxx += (x[i] - mx) * (x[i] - mx);
            syy += (y[i] - my) * (y[i] - my);
            sxy += (x[i] - mx) * (y[i] - my);
        }
    l.mean_x = mx;
    l.mean_y = my;
    if (sxx > 0) {
        l.slope = sxy / sxx;
        l.intercept = my - l.slope * mx;
    }
    if (l.n >= 2 && sxx > 0 && syy > 0)
        l.r = sxy / sqrt(sxx * syy);
    return l;
}

double qk_pearson(const double *x, const double *y, int n) { return qk_line_fit(x, y, n).r; }

void qk_pearson_interval(double r, int n, double *lo, double *hi)
{
    *lo = *hi = NAN;
    if (n < 4 || !isfinite(r) || fabs(r) > 1)
        return;
    if (fabs(r) == 1) { /* a perfect correlation: the interval is the point */
        *lo = *hi = r;
        return;
    }
    double z = atanh(r), half = 1.959964 / sqrt(n - 3.0);
    *lo = tanh(z - half);
    *hi = tanh(z + half);
}
