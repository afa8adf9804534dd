/* Unit tests of the per-kind moments (src/lib/analysis/moments.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/moments.h"
#include "qk/rng.h"
#include "testutil.h"

/* n rows of dim columns with column means far from 0 (so that an
 * uncentred algorithm would lose digits), a position trend in column 0 and
 * correlated columns. */
static void make_rows(uint64_t seed, int64_t n, int dim, double offset, float *x,
                      int32_t *t)
{
    qk_rng r;
    uint64_t keys[2] = {seed, (uint64_t)dim};
    qk_rng_seed(&r, keys, 2);
    for (int64_t i = 0; i < n; i++) {
        t[i] = (int32_t)qk_rng_below(&r, 131072);
        double common = qk_rng_normal(&r);
        for (int j = 0; j < dim; j++) {
            double v = offset * (1.0 + 0.01 * j) + qk_rng_normal(&r) * (1.0 + j % 5) +
                       0.5 * common;
            if (j == 0)
                v += 1e-4 * t[i];
            x[(size_t)i * dim + j] = (float)v;
        }
    }
}

/* The textbook two-pass moments, written independently of moments.c. */
static void naive_moments(const float *x, const int32_t *t, int64_t n, int dim,
                          double *mean, double *cov, double *g, double *tmean, double *tvar)
{
    *tmean = 0.0;
    for (int j = 0; j < dim; j++)
        mean[j] = 0.0;
    for (int64_t i = 0; i < n; i++) {
        for (int j = 0; j < dim; j++)
            mean[j] += x[(size_t)i * dim + j];
        *tmean += t[i];
    }
    for (int j = 0; j < dim; j++)
        mean[j] /= (double)n;
    *tmean /= (double)n;
    memset(cov, 0, (size_t)dim * dim * sizeof(double));
    memset(g, 0, (size_t)dim * sizeof(double));
    *tvar = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double dt = t[i] - *tmean;
        *tvar += dt * dt;
        for (int a = 0; a < dim; a++) {
            double da = x[(size_t)i * dim + a] - mean[a];
            g[a] += da * dt;
            for (int b = 0; b < dim; b++)
                cov[(size_t)a * dim + b] += da * (x[(size_t)i * dim + b] - mean[b]);
        }
    }
    for (int a = 0; a < dim; a++) {
        g[a] /= (double)n;
        for (int b = 0; b < dim; b++)
            cov[(size_t)a * dim + b] /= (double)n;
    }
    *tvar /= (double)n;
}

/* Asserts that m equals the naive moments of the rows to tol, relative to
 * the natural scale of each entry (sd products for the covariances). */
static void check_against_naive(const qk_moments *m, const float *x, const int32_t *t,
                                int64_t n, int dim, double tol)
{
    double *mean = malloc(sizeof(double) * dim), *g = malloc(sizeof(double) * dim);
    double *cov = malloc(sizeof(double) * dim * dim), tmean, tvar;
    naive_moments(x, t, n, dim, mean, cov, g, &tmean, &tvar);
    ck_assert_int_eq(m->n, n);
    for (int a = 0; a < dim; a++) {
        double sa = sqrt(cov[(size_t)a * dim + a]);
        ck_assert_msg(fabs(m->mean[a] - mean[a]) <= tol * (fabs(mean[a]) + sa),
                      "mean[%d] = %.17g, expected %.17g", a, m->mean[a], mean[a]);
        ck_assert_msg(fabs(m->cov_pos[a] - g[a]) <= tol * sa * sqrt(tvar),
                      "g[%d] = %.17g, expected %.17g", a, m->cov_pos[a], g[a]);
        for (int b = 0; b < dim; b++) {
            double scale = sa * sqrt(cov[(size_t)b * dim + b]);
            double got = m->cov[(size_t)a * dim + b], want = cov[(size_t)a * dim + b];
            ck_assert_msg(fabs(got - want) <= tol * scale, "S[%d][%d] = %.17g, expected %.17g",
                          a, b, got, want);
        }
    }
    ck_assert_rel(m->pos_mean, tmean, tol);
    ck_assert_rel(m->pos_var, tvar, tol);
    free(mean);
    free(g);
    free(cov);
}

/* Several row counts around the block size (512), including one row. */
START_TEST(one_pass_equals_two_pass)
{
    static const int64_t counts[] = {1, 2, 511, 512, 513, 1537, 4000};
    int dim = 37;
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int64_t n = counts[c];
        float *x = malloc(sizeof(float) * n * dim);
        int32_t *t = malloc(sizeof(int32_t) * n);
        make_rows(11 + c, n, dim, 100.0, x, t);
        qk_moments m;
        qk_moments_init(&m, dim);
        qk_moments_compute(&m, x, t, n);
        check_against_naive(&m, x, t, n, dim, 1e-12);
        /* the covariance is exactly symmetric */
        for (int a = 0; a < dim; a++)
            for (int b = 0; b < dim; b++)
                ck_assert(m.cov[a * dim + b] == m.cov[b * dim + a]);
        qk_moments_free(&m);
        free(x);
        free(t);
    }
}
END_TEST

/* Three rows worked out by hand. */
START_TEST(hand_computed)
{
    const float x[] = {1, 2, 3, 4, 5, 9};
    const int32_t t[] = {0, 1, 5};
    qk_moments m;
    qk_moments_init(&m, 2);
    qk_moments_compute(&m, x, t, 3);
    ck_assert_rel(m.mean[0], 3.0, 1e-15);
    ck_assert_rel(m.mean[1], 5.0, 1e-15);
    ck_assert_rel(m.cov[0], 8.0 / 3, 1e-15);
    ck_assert_rel(m.cov[1], 14.0 / 3, 1e-15);
    ck_assert_rel(m.cov[2], 14.0 / 3, 1e-15);
    ck_assert_rel(m.cov[3], 26.0 / 3, 1e-15);
    ck_assert_rel(m.cov_pos[0], 10.0 / 3, 1e-15);
    ck_assert_rel(m.cov_pos[1], 19.0 / 3, 1e-15);
    ck_assert_rel(m.pos_mean, 2.0, 1e-15);
    ck_assert_rel(m.pos_var, 14.0 / 3, 1e-15);
    ck_assert_rel(qk_moments_trace(&m), 34.0 / 3, 1e-15);
    qk_moments_free(&m);
}
END_TEST

/* Pooling the moments of two sets gives the moments of their union. */
START_TEST(pool_equals_concatenation)
{
    int dim = 19;
    int64_t na = 1300, nb = 777;
    float *x = malloc(sizeof(float) * (na + nb) * dim);
    int32_t *t = malloc(sizeof(int32_t) * (na + nb));
    make_rows(5, na, dim, 20.0, x, t);
    make_rows(6, nb, dim, -35.0, x + na * dim, t + na); /* other mean */
    for (int64_t i = na; i < na + nb; i++)
        t[i] /= 3; /* other position mean and variance */
    qk_moments a, b, pooled, whole;
    qk_moments_init(&a, dim);
    qk_moments_init(&b, dim);
    qk_moments_init(&pooled, dim);
    qk_moments_init(&whole, dim);
    qk_moments_compute(&a, x, t, na);
    qk_moments_compute(&b, x + na * dim, t + na, nb);
    qk_moments_pool(&pooled, &a, &b);
    qk_moments_compute(&whole, x, t, na + nb);
    check_against_naive(&pooled, x, t, na + nb, dim, 1e-12);
    for (int i = 0; i < dim; i++)
        for (int j = 0; j < dim; j++) {
            double scale = sqrt(whole.cov[i * dim + i] * whole.cov[j * dim + j]);
            ck_assert(fabs(pooled.cov[i * dim + j] - whole.cov[i * dim + j]) <= 1e-12 * scale);
        }
    ck_assert_rel(pooled.pos_var, whole.pos_var, 1e-12);
    /* the between-kind term is there: the pooled variance of column 3
     * exceeds both parts' */
    ck_assert(pooled.cov[3 * dim + 3] > a.cov[3 * dim + 3] + 100.0);
    qk_moments_free(&a);
    qk_moments_free(&b);
    qk_moments_free(&pooled);
    qk_moments_free(&whole);
    free(x);
    free(t);
}
END_TEST

/* An empty side leaves the other unchanged; empty input gives zeros. */
START_TEST(pool_with_empty)
{
    int dim = 4;
    float x[40];
    int32_t t[10];
    make_rows(9, 10, dim, 3.0, x, t);
    qk_moments a, empty, pooled;
    qk_moments_init(&a, dim);
    qk_moments_init(&empty, dim);
    qk_moments_init(&pooled, dim);
    qk_moments_compute(&a, x, t, 10);
    qk_moments_compute(&empty, x, t, 0);
    ck_assert_int_eq(empty.n, 0);
    ck_assert(empty.cov[0] == 0.0 && empty.pos_var == 0.0);
    qk_moments_pool(&pooled, &empty, &a);
    ck_assert_int_eq(pooled.n, 10);
    for (int i = 0; i < dim * dim; i++)
        ck_assert(pooled.cov[i] == a.cov[i]);
    ck_assert(pooled.pos_var == a.pos_var);
    ck_assert(qk_moments_finite(&pooled));
    pooled.cov[5] = NAN;
    ck_assert(!qk_moments_finite(&pooled));
    qk_moments_free(&a);
    qk_moments_free(&empty);
    qk_moments_free(&pooled);
}
END_TEST

/* Identical rows and constant positions give exactly zero spread. */
START_TEST(constant_rows)
{
    int dim = 3;
    int64_t n = 700;
    float *x = malloc(sizeof(float) * n * dim);
    int32_t *t = malloc(sizeof(int32_t) * n);
    for (int64_t i = 0; i < n; i++) {
        x[i * dim] = 2.0f;
        x[i * dim + 1] = -0.5f;
        x[i * dim + 2] = (float)(i % 7);
        t[i] = 4242;
    }
    qk_moments m;
    qk_moments_init(&m, dim);
    qk_moments_compute(&m, x, t, n);
    ck_assert(m.pos_var == 0.0);
    ck_assert(m.pos_mean == 4242.0);
    ck_assert(m.cov[0] == 0.0 && m.cov[4] == 0.0 && m.cov[1] == 0.0);
    ck_assert(m.cov_pos[2] == 0.0);
    ck_assert(m.cov[8] > 3.9 && m.cov[8] < 4.1); /* variance of i % 7 is 4 */
    qk_moments_free(&m);
    free(x);
    free(t);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("moments");
    TCase *tc = tcase_create("moments");
    tcase_add_test(tc, one_pass_equals_two_pass);
    tcase_add_test(tc, hand_computed);
    tcase_add_test(tc, pool_equals_concatenation);
    tcase_add_test(tc, pool_with_empty);
    tcase_add_test(tc, constant_rows);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
