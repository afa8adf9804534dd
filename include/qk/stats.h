/* Descriptive statistics over arrays of doubles: the mean, quantiles,
 * Pearson's r and the least-squares line. The summaries (qk-summary) and
 * the figures (qk-plot) compute every such number with these functions, so
 * a correlation quoted in the text is the one drawn in the figure. */
#ifndef QK_STATS_H
#define QK_STATS_H

#include <stdint.h>

/* Sorts v[n] ascending in place; no NaN. */
void qk_sort_doubles(double *v, int64_t n);

/* Mean of the values that are not NaN (NAN when none is left). */
double qk_mean(const double *x, int n);

/* A running mean of the finite values added, for values that come one by
 * one (a head without spread, NaN, counts in no mean). */
typedef struct qk_sum {
    double sum;
    int n;
} qk_sum;
void qk_sum_add(qk_sum *s, double x);
/* sum / n, NAN when no finite value was added */
double qk_sum_mean(const qk_sum *s);

/* Quantile q (0 to 1) of the values that are not NaN, with linear
 * interpolation between order statistics (numpy's default method); NAN
 * when none is left. */
double qk_quantile(const double *x, int n, double q);
double qk_median(const double *x, int n);
/* The same on k values already sorted ascending (none NaN). */
double qk_sorted_quantile(const double *sorted, int k, double q);

/* The least-squares line y = intercept + slope x and Pearson's r, over the
 * pairs where both x and y are finite (n of them). r is NAN with fewer
 * than two pairs or when either variance is 0; slope and intercept are
 * NAN when the variance of x is 0. */
typedef struct qk_line {
    int n;
    double r, slope, intercept;
    double mean_x, mean_y;
} qk_line;
qk_line qk_line_fit(const double *x, const double *y, int n);

/* Pearson's r of the finite pairs (qk_line_fit(x, y, n).r). */
double qk_pearson(const double *x, const double *y, int n);

/* The 95 % interval of a Pearson r on n points, from Fisher's z:
 * tanh(atanh r -/+ 1.96 / sqrt(n - 3)); NAN for n < 4 or an r outside
 * [-1, 1], the point itself for |r| = 1. */
void qk_pearson_interval(double r, int n, double *lo, double *hi);

#endif
