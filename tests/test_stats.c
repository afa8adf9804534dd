/* Unit tests of the descriptive statistics (src/lib/core/stats.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/stats.h"
#include "testutil.h"

static int cmp_ascending(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* qk_sort_doubles gives qsort's order: random values with many repeats,
 * runs already sorted and reversed, every length around the cut to the
 * insertion sort. */
START_TEST(test_sort_doubles)
{
    double a[300], b[300];
    unsigned seed = 1;
    for (int n = 0; n <= 300; n += n < 40 ? 1 : 37)
        for (int kind = 0; kind < 3; kind++) {
            for (int i = 0; i < n; i++) {
                seed = seed * 1103515245u + 12345u;
                a[i] = kind == 0 ? (double)(seed >> 16 & 63) - 20.5 : kind == 1 ? i : n - i;
            }
            memcpy(b, a, sizeof a);
            qk_sort_doubles(a, n);
            qsort(b, (size_t)n, sizeof *b, cmp_ascending);
            ck_assert_int_eq(memcmp(a, b, (size_t)n * sizeof *a), 0);
        }
}
END_TEST

START_TEST(test_mean_skips_nan)
{
    const double x[] = {1, NAN, 2, 6};
    ck_assert_double_eq_tol(qk_mean(x, 4), 3.0, 1e-15);
    const double none[] = {NAN, NAN};
    ck_assert(isnan(qk_mean(none, 2)));
    ck_assert(isnan(qk_mean(x, 0)));
}
END_TEST

/* numpy.quantile([1, 2, 4, 8, 16], q): 0.25 -> 2, 0.5 -> 4, 0.9 -> 12.8;
 * of [3, 1, 2, 10] (sorted 1 2 3 10): 0.5 -> 2.5, 0.75 -> 4.75. */
START_TEST(test_quantile_numpy_linear)
{
    const double x[] = {16, 4, NAN, 1, 8, 2};
    ck_assert_double_eq_tol(qk_quantile(x, 6, 0.25), 2.0, 1e-12);
    ck_assert_double_eq_tol(qk_median(x, 6), 4.0, 1e-12);
    ck_assert_double_eq_tol(qk_quantile(x, 6, 0.9), 12.8, 1e-12);
    ck_assert_double_eq(qk_quantile(x, 6, 0.0), 1.0);
    ck_assert_double_eq(qk_quantile(x, 6, 1.0), 16.0);
    const double y[] = {3, 1, 2, 10};
    ck_assert_double_eq_tol(qk_median(y, 4), 2.5, 1e-12);
    ck_assert_double_eq_tol(qk_quantile(y, 4, 0.75), 4.75, 1e-12);
    ck_assert(isnan(qk_median(y, 0)));
}
END_TEST

/* Points on y = 3 - 2x exactly: r = -1, the line recovered; a planted
 * correlation: x = 1..5, y = 2, 4, 5, 4, 5 gives r = 0.7745966692 (sqrt(0.6))
 * and the line y = 2.2 + 0.6 x. */
START_TEST(test_line_fit)
{
    const double x[] = {0, 1, 2, 3, NAN, 5};
    const double y[] = {3, 1, -1, -3, 7, -7};
    qk_line l = qk_line_fit(x, y, 6);
    ck_assert_int_eq(l.n, 5);
    ck_assert_double_eq_tol(l.r, -1.0, 1e-15);
    ck_assert_double_eq_tol(l.slope, -2.0, 1e-14);
    ck_assert_double_eq_tol(l.intercept, 3.0, 1e-14);
    const double a[] = {1, 2, 3, 4, 5}, b[] = {2, 4, 5, 4, 5};
    l = qk_line_fit(a, b, 5);
    ck_assert_double_eq_tol(l.r, sqrt(0.6), 1e-14);
    ck_assert_double_eq_tol(qk_pearson(a, b, 5), sqrt(0.6), 1e-14);
    ck_assert_double_eq_tol(l.slope, 0.6, 1e-14);
    ck_assert_double_eq_tol(l.intercept, 2.2, 1e-14);
    ck_assert_double_eq_tol(l.mean_x, 3.0, 1e-15);
}
END_TEST

/* r is undefined for one pair or a constant variable; the slope only when
 * x is constant. Large offsets lose no digits (two passes). */
START_TEST(test_line_fit_degenerate)
{
    const double x1[] = {1}, y1[] = {2};
    ck_assert(isnan(qk_pearson(x1, y1, 1)));
    const double x[] = {1, 2, 3}, c[] = {5, 5, 5};
    qk_line l = qk_line_fit(x, c, 3);
    ck_assert(isnan(l.r));
    ck_assert_double_eq(l.slope, 0.0);
    l = qk_line_fit(c, x, 3);
    ck_assert(isnan(l.r) && isnan(l.slope) && isnan(l.intercept));
    const double big_x[] = {1e9 + 1, 1e9 + 2, 1e9 + 3, 1e9 + 4, 1e9 + 5};
    const double b[] = {2, 4, 5, 4, 5};
    ck_assert_double_eq_tol(qk_pearson(big_x, b, 5), sqrt(0.6), 1e-9);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("stats");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_mean_skips_nan);
    tcase_add_test(tc, test_sort_doubles);
    tcase_add_test(tc, test_quantile_numpy_linear);
    tcase_add_test(tc, test_line_fit);
    tcase_add_test(tc, test_line_fit_degenerate);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
