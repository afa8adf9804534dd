/* Unit tests of the combined QK PCA (src/lib/analysis/pca.c) and the head taxonomy
 * (src/lib/analysis/taxonomy.c), including a cross-check against an independent
 * numpy/scikit-learn implementation (tests/pca_crosscheck.py). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qk/moments.h"
#include "qk/pca.h"
#include "qk/rng.h"
#include "qk/taxonomy.h"
#include "testutil.h"

#define PYTHON "/usr/bin/python3"
#define CROSSCHECK_SCRIPT "tests/pca_crosscheck.py"
#define TMP_DIR "build/tests/tmp"

/* ---- synthetic heads -------------------------------------------------------- */

/* One kind of a structured head, in coordinates where axis 0 carries the
 * drift, axis 1 the Q/K offset and axis 2 a balanced +-spike. */
typedef struct kind_spec {
    double offset;   /* mean along axis 1 */
    double drift;    /* slope per token along drift_axis, around pos_max/2 */
    int drift_axis;
    double spike;    /* +spike and -spike on alternate rows along axis 2 */
} kind_spec;

typedef struct head_spec {
    double noise;    /* noise sd of coordinate j: noise * decay^j */
    double decay;
    int reflections; /* random Householder reflections applied to every row */
    int32_t pos_max; /* positions uniform in [0, pos_max) */
    uint64_t seed;
} head_spec;

static void make_kind(const head_spec *hs, const kind_spec *ks, int dim, int64_t n,
                      const double *reflectors, qk_rng *r, float *x, int32_t *t)
{
    double *row = malloc(sizeof(double) * dim);
    for (int64_t i = 0; i < n; i++) {
        t[i] = (int32_t)qk_rng_below(r, (uint64_t)hs->pos_max);
        double sd = hs->noise;
        for (int j = 0; j < dim; j++, sd *= hs->decay)
            row[j] = sd * qk_rng_normal(r);
        row[ks->drift_axis] += ks->drift * (t[i] - 0.5 * hs->pos_max);
        row[1] += ks->offset;
        row[2] += i % 2 ? ks->spike : -ks->spike;
        for (int h = 0; h < hs->reflections; h++) {
            const double *u = reflectors + (size_t)h * dim;
            double dot = 0.0;
            for (int j = 0; j < dim; j++)
                dot += u[j] * row[j];
            for (int j = 0; j < dim; j++)
                row[j] -= 2.0 * dot * u[j];
        }
        for (int j = 0; j < dim; j++)
            x[(size_t)i * dim + j] = (float)row[j];
    }
    free(row);
}

/* The image of axis a under the head's reflections (unit vector). */
static void reflected_axis(const double *reflectors, int n_refl, int dim, int a, double *out)
{
    memset(out, 0, sizeof(double) * dim);
    out[a] = 1.0;
    for (int h = 0; h < n_refl; h++) {
        const double *u = reflectors + (size_t)h * dim;
        double dot = 0.0;
        for (int j = 0; j < dim; j++)
            dot += u[j] * out[j];
        for (int j = 0; j < dim; j++)
            out[j] -= 2.0 * dot * u[j];
    }
}

static double *make_reflectors(qk_rng *r, int n, int dim)
{
    double *u = malloc(sizeof(double) * (n ? n : 1) * dim);
    for (int h = 0; h < n; h++) {
        double norm = 0.0;
        for (int j = 0; j < dim; j++) {
            u[h * dim + j] = qk_rng_normal(r);
            norm += u[h * dim + j] * u[h * dim + j];
        }
        for (int j = 0; j < dim; j++)
            u[h * dim + j] /= sqrt(norm);
    }
    return u;
}

static double *make_head(head_data *h, const head_spec *hs, const kind_spec *kq,
                         const kind_spec *kk)
{
    qk_rng r;
    seed_rng(&r, hs->seed);
    double *refl = make_reflectors(&r, hs->reflections, h->dim);
    make_kind(hs, kq, h->dim, h->n_q, refl, &r, h->q, h->tq);
    make_kind(hs, kk, h->dim, h->n_k, refl, &r, h->k, h->tk);
    return refl;
}

/* Moments and analysis of a head; the work area keeps the components. */
static void analyse(const head_data *h, qk_pca_work *w, qk_pca_head *out)
{
    qk_moments mq, mk;
    qk_moments_init(&mq, h->dim);
    qk_moments_init(&mk, h->dim);
    qk_moments_compute(&mq, h->q, h->tq, h->n_q);
    qk_moments_compute(&mk, h->k, h->tk, h->n_k);
    qk_pca_rows rq = {h->q, h->tq, h->n_q}, rk = {h->k, h->tk, h->n_k};
    qk_err err = {{0}};
    int rc = qk_pca_analyse(&rq, &rk, &mq, &mk, w, out, &err);
    ck_assert_msg(rc == 0, "qk_pca_analyse: %s", err.msg);
    qk_moments_free(&mq);
    qk_moments_free(&mk);
}

/* The canonical sign rule holds for every component of a head. */
static void check_canonical(const qk_pca_head *h)
{
    for (int i = 0; i < h->n_pc; i++) {
        if (fabs(h->r_q[i]) >= QK_PCA_ANCHOR)
            ck_assert_msg(h->r_q[i] > 0.0, "PC%d r_q = %g", i, h->r_q[i]);
        else
            ck_assert_msg(h->r_k[i] >= 0.0, "PC%d r_q = %g, r_k = %g", i, h->r_q[i],
                          h->r_k[i]);
    }
}

/* ---- the synthetic test of the earlier tool (viktor-shcherb/qk-pca-analysis) --- */

/* N = 100 rows (50 Q, 50 K), d = 64, standard normal with column 0 replaced
 * by 2 * position + 0.1 * noise. */
static void make_position_column_head(head_data *h)
{
    head_alloc(h, 64, 50, 50);
    qk_rng r;
    seed_rng(&r, 1111);
    for (int kind = 0; kind < 2; kind++) {
        float *x = kind ? h->k : h->q;
        int32_t *t = kind ? h->tk : h->tq;
        for (int i = 0; i < 50; i++) {
            t[i] = (int32_t)qk_rng_below(&r, 100);
            for (int j = 0; j < 64; j++)
                x[i * 64 + j] = (float)qk_rng_normal(&r);
            x[i * 64] = (float)(2.0 * t[i] + 0.1 * qk_rng_normal(&r));
        }
    }
}

START_TEST(position_column)
{
    head_data h;
    make_position_column_head(&h);
    qk_pca_work w;
    qk_pca_work_init(&w, 64);
    qk_pca_head res;
    analyse(&h, &w, &res);
    ck_assert_int_eq(res.n_pc, 10);
    ck_assert_msg(fabs(res.r_q[0]) > 0.99, "r_q[0] = %g", res.r_q[0]);
    ck_assert_msg(fabs(res.r_k[0]) > 0.99, "r_k[0] = %g", res.r_k[0]);
    ck_assert(res.r_q[0] > 0.0); /* canonical */
    double sum = 0.0;
    for (int i = 0; i < 10; i++) {
        ck_assert(res.ev[i] >= 0.0);
        if (i)
            ck_assert(res.ev[i] <= res.ev[i - 1]);
        sum += res.ev[i];
    }
    ck_assert_msg(sum <= 1.0, "EV sum %.17g", sum);
    /* column 0 holds almost all of the variance (var 2^2 * 833 vs 63) */
    ck_assert(res.ev[0] > 0.95);
    check_canonical(&res);
    qk_pca_work_free(&w);
    head_free(&h);
}
END_TEST

/* All 64 components: orthonormal to 1e-12 and an exact reconstruction. */
START_TEST(position_column_full_basis)
{
    head_data h;
    make_position_column_head(&h);
    int d = 64;
    qk_moments mq, mk, pooled;
    qk_moments_init(&mq, d);
    qk_moments_init(&mk, d);
    qk_moments_init(&pooled, d);
    qk_moments_compute(&mq, h.q, h.tq, 50);
    qk_moments_compute(&mk, h.k, h.tk, 50);
    qk_moments_pool(&pooled, &mq, &mk);
    double *values = malloc(sizeof(double) * d), *vec = malloc(sizeof(double) * d * d);
    qk_err err;
    ck_assert(qk_pca_eigen(pooled.cov, d, d, values, vec, &err) == 0);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double g = vec_dot(vec + i * d, vec + j * d, d);
            ck_assert_msg(fabs(g - (i == j)) <= 1e-12, "gram[%d][%d] = %.17g", i, j, g);
        }
    double trace = qk_moments_trace(&pooled), vsum = 0.0;
    for (int i = 0; i < d; i++) {
        if (i)
            ck_assert(values[i] <= values[i - 1]);
        vsum += values[i];
    }
    ck_assert_rel(vsum, trace, 1e-12);
    /* x - mean = sum_i ((x - mean).v_i) v_i, for every row */
    double worst = 0.0;
    for (int kind = 0; kind < 2; kind++)
        for (int r = 0; r < 50; r++) {
            const float *x = (kind ? h.k : h.q) + r * d;
            double xc[64], back[64] = {0};
            for (int j = 0; j < d; j++)
                xc[j] = x[j] - pooled.mean[j];
            for (int i = 0; i < d; i++) {
                double c = vec_dot(xc, vec + i * d, d);
                for (int j = 0; j < d; j++)
                    back[j] += c * vec[i * d + j];
            }
            for (int j = 0; j < d; j++)
                worst = fmax(worst, fabs(back[j] - xc[j]));
        }
    ck_assert_msg(worst <= 1e-10, "reconstruction error %.3g", worst);
    free(values);
    free(vec);
    qk_moments_free(&mq);
    qk_moments_free(&mk);
    qk_moments_free(&pooled);
    head_free(&h);
}
END_TEST

/* Constant positions give r = 0; identical rows (constant projections) give
 * r = 0 on every component. */
START_TEST(zero_variance_guard)
{
    head_data h;
    make_position_column_head(&h);
    for (int i = 0; i < 50; i++)
        h.tq[i] = 77; /* Q positions constant */
    qk_pca_work w;
    qk_pca_work_init(&w, 64);
    qk_pca_head res;
    analyse(&h, &w, &res);
    for (int i = 0; i < 10; i++)
        ck_assert_msg(res.r_q[i] == 0.0, "r_q[%d] = %g", i, res.r_q[i]);
    ck_assert(fabs(res.r_k[0]) > 0.99);
    ck_assert(res.alpha_q0 == 0.0);
    ck_assert(res.pos_var_q == 0.0 && res.pc0_share_q == 0.0);

    /* every K row the same vector with awkward decimals: the K projections
     * are constant up to rounding */
    for (int i = 0; i < 50; i++)
        for (int j = 0; j < 64; j++)
            h.k[i * 64 + j] = (float)(0.1 * (j + 1) - 1.7);
    analyse(&h, &w, &res);
    for (int i = 0; i < 10; i++) {
        ck_assert_msg(res.r_k[i] == 0.0, "r_k[%d] = %g", i, res.r_k[i]);
        ck_assert(res.r_q[i] == 0.0);
        ck_assert(isfinite(res.ev[i]));
    }
    ck_assert(res.beta_k0 == 0.0);
    qk_pca_work_free(&w);
    head_free(&h);
}
END_TEST

/* The guard on hand-made moments: cov diag(4, 0), g = (2, 0), var t = 1. */
START_TEST(correlation_from_moments)
{
    qk_moments m;
    qk_moments_init(&m, 2);
    m.n = 10;
    m.cov[0] = 4.0;
    m.cov_pos[0] = 2.0;
    m.pos_var = 1.0;
    double e0[2] = {1, 0}, e1[2] = {0, 1}, diag[2] = {M_SQRT1_2, M_SQRT1_2}, tmp[2];
    ck_assert_rel(qk_pca_correlation(e0, &m, 0.0, tmp), 1.0, 1e-15);
    ck_assert(qk_pca_correlation(e1, &m, 0.0, tmp) == 0.0);
    ck_assert_rel(qk_pca_correlation(diag, &m, 0.0, tmp), 1.0, 1e-15);
    m.cov_pos[0] = -1.0;
    ck_assert_rel(qk_pca_correlation(e0, &m, 0.0, tmp), -0.5, 1e-15);
    ck_assert(qk_pca_correlation(e0, &m, 4.0, tmp) == 0.0); /* below the guard */
    m.pos_var = 0.0;
    ck_assert(qk_pca_correlation(e0, &m, 0.0, tmp) == 0.0);
    qk_moments_free(&m);
}
END_TEST

START_TEST(eigen_known_matrix)
{
    const double a[9] = {1, 0, 0, 0, 3, 0, 0, 0, 2};
    double values[3], vec[9];
    qk_err err;
    ck_assert(qk_pca_eigen(a, 3, 3, values, vec, &err) == 0);
    ck_assert_rel(values[0], 3.0, 1e-14);
    ck_assert_rel(values[1], 2.0, 1e-14);
    ck_assert_rel(values[2], 1.0, 1e-14);
    ck_assert_rel(fabs(vec[1]), 1.0, 1e-14);
    ck_assert_rel(fabs(vec[5]), 1.0, 1e-14);
    ck_assert_rel(fabs(vec[6]), 1.0, 1e-14);
    double top[2];
    ck_assert(qk_pca_eigen(a, 3, 1, top, vec, &err) == 0);
    ck_assert_rel(top[0], 3.0, 1e-14);
}
END_TEST

/* ---- combined mode -------------------------------------------------------- */

/* Q = +c e1 + slope t e2 + noise, K = -c e1 + noise (sigma = 1): PC0 is e1,
 * the classes separate, fisher0 = (2c)^2 / (2 sigma^2), and the position
 * signal sits on the component along e2. */
START_TEST(combined_mode)
{
    const double c = 5.0, sigma = 1.0;
    const int32_t pos_max = 131072;
    const double sd_t = pos_max / sqrt(12.0), slope = 2.0 / sd_t; /* 2 sigma over sd_t */
    head_data h;
    head_alloc(&h, 16, 4000, 4000);
    head_spec hs = {.noise = sigma, .decay = 1.0, .reflections = 0, .pos_max = pos_max,
                    .seed = 77};
    kind_spec kq = {.offset = c, .drift = slope, .drift_axis = 2};
    kind_spec kk = {.offset = -c, .drift = 0.0, .drift_axis = 2};
    free(make_head(&h, &hs, &kq, &kk));
    qk_pca_work w;
    qk_pca_work_init(&w, 16);
    qk_pca_head res;
    analyse(&h, &w, &res);
    const double *v0 = w.components;
    ck_assert_msg(fabs(v0[1]) > 0.999, "PC0 . e1 = %g", v0[1]);
    ck_assert_msg(res.acc01 > 0.999, "acc01 = %g", res.acc01);
    ck_assert_msg(res.acc0 > 0.999, "acc0 = %g", res.acc0);
    double fisher = (2 * c) * (2 * c) / (2 * sigma * sigma);
    ck_assert_msg(fabs(res.fisher0 / fisher - 1.0) < 0.05, "fisher0 = %g, expected %g",
                  res.fisher0, fisher);
    ck_assert_msg(fabs(res.sep0 / (2 * c) - 1.0) < 0.01, "sep0 = %g", res.sep0);
    ck_assert(fabs(res.mu_q0 + res.mu_k0) < 0.01 * c); /* symmetric about 0 */
    ck_assert(fabs(fabs(res.mu_q0) - c) < 0.02 * c);
    /* the component along e2 carries the Q position signal */
    int best = 0;
    for (int i = 1; i < res.n_pc; i++)
        if (fabs(w.components[i * 16 + 2]) > fabs(w.components[best * 16 + 2]))
            best = i;
    ck_assert_int_eq(best, 1);
    double r_expected = 2.0 / sqrt(5.0);
    ck_assert_msg(fabs(res.r_q[1] - r_expected) < 0.02, "r_q[1] = %g, expected %g",
                  res.r_q[1], r_expected);
    ck_assert_msg(fabs(res.r_k[1]) < 0.05, "r_k[1] = %g", res.r_k[1]);
    check_canonical(&res);
    qk_pca_work_free(&w);
    head_free(&h);
}
END_TEST

/* Negating every vector negates the position covariances; the canonical
 * correlations must come out the same. */
START_TEST(canonical_signs_do_not_depend_on_data_sign)
{
    head_data h;
    head_alloc(&h, 32, 3000, 2000);
    head_spec hs = {.noise = 2.0, .decay = 0.93, .reflections = 2, .pos_max = 131072,
                    .seed = 5};
    kind_spec kq = {.offset = 3.0, .drift = 3e-5, .drift_axis = 0, .spike = 1.0};
    kind_spec kk = {.offset = -3.0, .drift = -2e-5, .drift_axis = 0};
    free(make_head(&h, &hs, &kq, &kk));
    qk_pca_work w;
    qk_pca_work_init(&w, 32);
    qk_pca_head a, b;
    analyse(&h, &w, &a);
    check_canonical(&a);
    for (int64_t i = 0; i < h.n_q * 32; i++)
        h.q[i] = -h.q[i];
    for (int64_t i = 0; i < h.n_k * 32; i++)
        h.k[i] = -h.k[i];
    analyse(&h, &w, &b);
    for (int i = 0; i < 10; i++) {
        ck_assert_msg(fabs(a.r_q[i] - b.r_q[i]) < 1e-12, "PC%d r_q %g vs %g", i, a.r_q[i],
                      b.r_q[i]);
        ck_assert(fabs(a.r_k[i] - b.r_k[i]) < 1e-12);
        ck_assert(fabs(a.ev[i] - b.ev[i]) < 1e-14);
    }
    ck_assert(fabs(a.mu_q0 - b.mu_q0) < 1e-9);
    ck_assert(fabs(a.alpha_q0 - b.alpha_q0) < 1e-12);
    /* a real position signal was there to get the sign of */
    double strongest = 0.0;
    for (int i = 0; i < 10; i++)
        strongest = fmax(strongest, a.r_q[i]);
    ck_assert_msg(strongest > 0.3, "largest r_q %g", strongest);
    qk_pca_work_free(&w);
    head_free(&h);
}
END_TEST

/* ---- planted structure with analytic values ------------------------------- */

/* Q and K drift along one random direction u with slope alpha and isotropic
 * noise sigma: on the drift component |r| = alpha sd_t / sqrt(alpha^2
 * sd_t^2 + sigma^2). */
START_TEST(planted_linear_drift)
{
    const int d = 64;
    const int32_t pos_max = 131072;
    const double sigma = 1.0, sd_t = sqrt(((double)pos_max * pos_max - 1) / 12.0);
    const double alpha = 1.2 * sigma / sd_t;
    head_data h;
    head_alloc(&h, d, 8000, 8000);
    head_spec hs = {.noise = sigma, .decay = 1.0, .reflections = 3, .pos_max = pos_max,
                    .seed = 4242};
    kind_spec kq = {.drift = alpha, .drift_axis = 0};
    kind_spec kk = {.drift = alpha, .drift_axis = 0};
    double *refl = make_head(&h, &hs, &kq, &kk);
    double u[64];
    reflected_axis(refl, 3, d, 0, u);
    qk_pca_work w;
    qk_pca_work_init(&w, d);
    qk_pca_head res;
    analyse(&h, &w, &res);
    double along = fabs(vec_dot(w.components, u, d));
    ck_assert_msg(along > 0.99, "PC0 . u = %g", along);
    double r = alpha * sd_t / sqrt(alpha * alpha * sd_t * sd_t + sigma * sigma);
    ck_assert_msg(fabs(fabs(res.r_q[0]) - r) < 0.02, "r_q[0] = %g, analytic %g", res.r_q[0], r);
    ck_assert_msg(fabs(fabs(res.r_k[0]) - r) < 0.02, "r_k[0] = %g, analytic %g", res.r_k[0], r);
    ck_assert(res.r_q[0] > 0.0 && res.r_k[0] > 0.0); /* concordant drift */
    /* slopes: alpha in projection units per token */
    ck_assert_msg(fabs(res.alpha_q0 / alpha - 1.0) < 0.03, "alpha_q0 = %g, planted %g",
                  res.alpha_q0, alpha);
    ck_assert_msg(fabs(res.beta_k0 / alpha - 1.0) < 0.03, "beta_k0 = %g", res.beta_k0);
    /* the other components hold no position signal */
    for (int i = 1; i < 10; i++)
        ck_assert_msg(fabs(res.r_q[i]) < 0.1, "r_q[%d] = %g", i, res.r_q[i]);
    /* identical distributions cannot be told apart */
    ck_assert(res.acc01 < 0.55 && res.acc0 < 0.55);
    free(refl);
    qk_pca_work_free(&w);
    head_free(&h);
}
END_TEST

/* A balanced +-a spike along one direction over isotropic noise: EV of
 * PC0 = (a^2 + sigma^2) / (a^2 + d sigma^2). */
START_TEST(planted_dominant_direction)
{
    const int d = 64;
    const double sigma = 1.0, a = sqrt(50.0);
    head_data h;
    head_alloc(&h, d, 8000, 8000);
    head_spec hs = {.noise = sigma, .decay = 1.0, .reflections = 2, .pos_max = 131072,
                    .seed = 99};
    kind_spec kq = {.spike = a, .drift_axis = 0};
    kind_spec kk = {.spike = a, .drift_axis = 0};
    double *refl = make_head(&h, &hs, &kq, &kk);
    qk_pca_work w;
    qk_pca_work_init(&w, d);
    qk_pca_head res;
    analyse(&h, &w, &res);
    double ev = (a * a + sigma * sigma) / (a * a + d * sigma * sigma);
    ck_assert_msg(fabs(res.ev[0] / ev - 1.0) < 0.01, "EV0 = %.6f, analytic %.6f", res.ev[0], ev);
    double u[64];
    reflected_axis(refl, 2, d, 2, u);
    ck_assert(fabs(vec_dot(w.components, u, d)) > 0.999);
    /* the rest is noise: about sigma^2 / total each */
    double rest = sigma * sigma / (a * a + d * sigma * sigma);
    ck_assert_msg(res.ev[1] < 1.2 * rest && res.ev[9] > 0.8 * rest, "EV1 %g EV9 %g", res.ev[1],
                  res.ev[9]);
    free(refl);
    qk_pca_work_free(&w);
    head_free(&h);
}
END_TEST

/* ---- sign rule, classifiers, skip rule --------------------------------------- */

START_TEST(sign_rule_cases)
{
    /* |r_q| just below 0.05: the anchor is K */
    ck_assert_int_eq(qk_pca_should_flip(-0.0499, -0.3), 1);
    ck_assert_int_eq(qk_pca_should_flip(-0.0499, 0.3), 0);
    ck_assert_int_eq(qk_pca_should_flip(0.0499, -0.3), 1);
    /* just above, and exactly 0.05 (strict < for the K fallback): anchor Q */
    ck_assert_int_eq(qk_pca_should_flip(-0.0501, 0.9), 1);
    ck_assert_int_eq(qk_pca_should_flip(0.0501, -0.9), 0);
    ck_assert_int_eq(qk_pca_should_flip(-0.05, 0.5), 1);
    ck_assert_int_eq(qk_pca_should_flip(0.05, -0.5), 0);
    /* r_q exactly 0, r_k negative: flip by K */
    ck_assert_int_eq(qk_pca_should_flip(0.0, -0.2), 1);
    ck_assert_int_eq(qk_pca_should_flip(0.0, 0.2), 0);
    /* anchor exactly 0: no flip */
    ck_assert_int_eq(qk_pca_should_flip(0.0, 0.0), 0);
    ck_assert_int_eq(qk_pca_should_flip(-0.01, 0.0), 0);
    ck_assert_int_eq(qk_pca_should_flip(-0.01, -0.0), 0);
}
END_TEST

START_TEST(threshold_accuracy_cases)
{
    double a1[] = {3, 1, 2}, b1[] = {5, 4};
    ck_assert_rel(qk_threshold_accuracy(a1, 3, b1, 2), 1.0, 1e-15);
    double a2[] = {1, 4}, b2[] = {3, 2};
    ck_assert_rel(qk_threshold_accuracy(a2, 2, b2, 2), 0.75, 1e-15);
    double a3[] = {1, 1}, b3[] = {1, 1};
    ck_assert_rel(qk_threshold_accuracy(a3, 2, b3, 2), 0.5, 1e-15);
    /* class a above: 9 10 | 1 2 3 ... and the majority floor */
    double a4[] = {9, 10, 0.5}, b4[] = {1, 2, 3, 4, 5, 6};
    ck_assert_rel(qk_threshold_accuracy(a4, 3, b4, 6), 8.0 / 9.0, 1e-15);
}
END_TEST

/* Against a brute-force search over every cut, on values with many ties
 * and on sorted and reversed input; the arrays come back sorted. */
START_TEST(threshold_accuracy_brute_force)
{
    qk_rng r;
    seed_rng(&r, 31);
    enum { NA = 300, NB = 200 };
    for (int trial = 0; trial < 6; trial++) {
        double a[NA], b[NB];
        for (int i = 0; i < NA; i++)
            a[i] = trial < 4 ? (double)qk_rng_below(&r, 25) : (trial == 4 ? i : NA - i);
        for (int i = 0; i < NB; i++)
            b[i] = trial < 4 ? (double)qk_rng_below(&r, 25) + trial : (trial == 4 ? i : -i);
        int best = NA > NB ? NA : NB;
        for (int c = 0; c < NA + NB; c++) { /* cut at each value: <= goes below */
            double cut = c < NA ? a[c] : b[c - NA];
            int a_le = 0, b_le = 0;
            for (int i = 0; i < NA; i++)
                a_le += a[i] <= cut;
            for (int i = 0; i < NB; i++)
                b_le += b[i] <= cut;
            int above = (NA - a_le) + b_le, below = a_le + (NB - b_le);
            best = above > best ? above : best;
            best = below > best ? below : best;
        }
        double got = qk_threshold_accuracy(a, NA, b, NB);
        ck_assert_msg(got == (double)best / (NA + NB), "trial %d: %.17g vs %d/%d", trial, got,
                      best, NA + NB);
        for (int i = 1; i < NA; i++)
            ck_assert(a[i - 1] <= a[i]);
        for (int i = 1; i < NB; i++)
            ck_assert(b[i - 1] <= b[i]);
    }
}
END_TEST

START_TEST(lda_accuracy_cases)
{
    const double a[] = {0, 0, 0, 1, 2, 0, 2, 1}, b[] = {4, 0, 4, 1, 6, 0, 6, 1};
    ck_assert_rel(qk_lda2_accuracy(a, 4, b, 4), 1.0, 1e-15);
    /* separable only along y, with x the larger spread */
    const double c[] = {-5, 1, 5, 1.2, 0, 1.1}, e[] = {-5, -1, 5, -1.2, 0, -1.1};
    ck_assert_rel(qk_lda2_accuracy(c, 3, e, 3), 1.0, 1e-15);
    /* identical classes, 3:1: w = 0, everything goes to the larger class */
    const double p[] = {0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1};
    ck_assert_rel(qk_lda2_accuracy(p, 9, p, 3), 0.75, 1e-15);
    ck_assert_rel(qk_lda2_accuracy(p, 3, p, 9), 0.75, 1e-15);
}
END_TEST

START_TEST(skip_rule)
{
    ck_assert(!qk_pca_head_usable(2, 100));
    ck_assert(!qk_pca_head_usable(100, 2));
    ck_assert(!qk_pca_head_usable(3, 3));
    ck_assert(!qk_pca_head_usable(5, 5));
    ck_assert(qk_pca_head_usable(5, 6));
    ck_assert(qk_pca_head_usable(3, 8));
    ck_assert(qk_pca_head_usable(8, 3));
}
END_TEST

/* ---- taxonomy ------------------------------------------------------------------ */

#define CAT(rq, rk) qk_taxonomy_classify(rq, rk, QK_TAXONOMY_HIGH, QK_TAXONOMY_LOW)

START_TEST(taxonomy_categories)
{
    ck_assert_int_eq(CAT(0.93, 0.83), QK_POSITION_DOMINATED);
    ck_assert_int_eq(CAT(0.8, -0.8), QK_POSITION_DOMINATED); /* discordant K */
    ck_assert_int_eq(CAT(0.96, 0.1), QK_Q_POSITIONAL);
    ck_assert_int_eq(CAT(0.96, -0.29), QK_Q_POSITIONAL);
    ck_assert_int_eq(CAT(0.10, 0.79), QK_K_POSITIONAL);
    ck_assert_int_eq(CAT(0.29, -0.71), QK_K_POSITIONAL);
    ck_assert_int_eq(CAT(0.2, 0.1), QK_CONTENT_FOCUSED);
    ck_assert_int_eq(CAT(-0.04, 0.1), QK_CONTENT_FOCUSED);
    ck_assert_int_eq(CAT(0.5, 0.5), QK_MIXED);
    ck_assert_int_eq(CAT(0.8, 0.5), QK_MIXED);
    ck_assert_int_eq(CAT(0.2, 0.5), QK_MIXED);
    ck_assert_str_eq(qk_category_name(QK_POSITION_DOMINATED), "position-dominated");
    ck_assert_str_eq(qk_category_name(QK_Q_POSITIONAL), "q-positional");
    ck_assert_str_eq(qk_category_name(QK_K_POSITIONAL), "k-positional");
    ck_assert_str_eq(qk_category_name(QK_CONTENT_FOCUSED), "content-focused");
    ck_assert_str_eq(qk_category_name(QK_MIXED), "mixed");
}
END_TEST

/* 0.7 is not above 0.7 and 0.3 is not below 0.3. */
START_TEST(taxonomy_boundaries)
{
    ck_assert_int_eq(CAT(0.7, 0.9), QK_MIXED);
    ck_assert_int_eq(CAT(0.9, 0.7), QK_MIXED);
    ck_assert_int_eq(CAT(0.9, -0.7), QK_MIXED);
    ck_assert_int_eq(CAT(0.7, 0.1), QK_MIXED);
    ck_assert_int_eq(CAT(0.9, 0.3), QK_MIXED);
    ck_assert_int_eq(CAT(0.9, -0.3), QK_MIXED);
    ck_assert_int_eq(CAT(0.3, 0.9), QK_MIXED);
    ck_assert_int_eq(CAT(0.3, 0.1), QK_MIXED);
    ck_assert_int_eq(CAT(0.1, 0.3), QK_MIXED);
    ck_assert_int_eq(CAT(0.1, 0.7), QK_MIXED);
    ck_assert_int_eq(CAT(nextafter(0.7, 1), nextafter(0.7, 1)), QK_POSITION_DOMINATED);
    ck_assert_int_eq(CAT(nextafter(0.3, 0), nextafter(0.3, 0)), QK_CONTENT_FOCUSED);
}
END_TEST

/* With LOW above HIGH the tests overlap and their order decides. */
START_TEST(taxonomy_order)
{
    double high = 0.2, low = 0.5;
    ck_assert_int_eq(qk_taxonomy_classify(0.4, 0.4, high, low), QK_POSITION_DOMINATED);
    ck_assert_int_eq(qk_taxonomy_classify(0.4, 0.1, high, low), QK_Q_POSITIONAL);
    ck_assert_int_eq(qk_taxonomy_classify(0.1, 0.4, high, low), QK_K_POSITIONAL);
    ck_assert_int_eq(qk_taxonomy_classify(0.1, 0.1, high, low), QK_CONTENT_FOCUSED);
    ck_assert_int_eq(qk_taxonomy_classify(0.1, 0.1, 0.05, 0.5), QK_POSITION_DOMINATED);
}
END_TEST

/* ---- cross-check against numpy / scikit-learn ----------------------------- */

static void assert_rel_close(const char *what, int head, double got, double want, double tol)
{
    double scale = fabs(want) > 1e-300 ? fabs(want) : 1.0;
    ck_assert_msg(fabs(got - want) <= tol * scale, "head %d %s: C %.17g, Python %.17g", head,
                  what, got, want);
}

/* Compares one line of the script's output with the C results. */
static int compare_line(const char *line, const qk_pca_head *res, int n_heads)
{
    int head, pc;
    double v[12];
    if (sscanf(line, "pc %d %d %lf %lf %lf", &head, &pc, &v[0], &v[1], &v[2]) == 5) {
        ck_assert(head >= 0 && head < n_heads && pc >= 0 && pc < QK_PCA_N_PC);
        const qk_pca_head *h = &res[head];
        ck_assert_msg(fabs(h->ev[pc] - v[0]) <= 1e-6, "head %d PC%d EV: C %.10g, Python %.10g",
                      head, pc, h->ev[pc], v[0]);
        ck_assert_msg(fabs(h->r_q[pc] - v[1]) <= 1e-6, "head %d PC%d r_q: C %.10g, Python %.10g",
                      head, pc, h->r_q[pc], v[1]);
        ck_assert_msg(fabs(h->r_k[pc] - v[2]) <= 1e-6, "head %d PC%d r_k: C %.10g, Python %.10g",
                      head, pc, h->r_k[pc], v[2]);
        return 1;
    }
    if (sscanf(line, "head %d %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf", &head, &v[0],
               &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9], &v[10],
               &v[11]) == 13) {
        ck_assert(head >= 0 && head < n_heads);
        const qk_pca_head *h = &res[head];
        assert_rel_close("pos_var_q", head, h->pos_var_q, v[0], 1e-6);
        assert_rel_close("pos_var_k", head, h->pos_var_k, v[1], 1e-6);
        assert_rel_close("pc0_share_q", head, h->pc0_share_q, v[2], 1e-6);
        assert_rel_close("pc0_share_k", head, h->pc0_share_k, v[3], 1e-6);
        assert_rel_close("mu_q0", head, h->mu_q0, v[4], 1e-6);
        assert_rel_close("mu_k0", head, h->mu_k0, v[5], 1e-6);
        assert_rel_close("sep0", head, h->sep0, v[6], 1e-6);
        assert_rel_close("fisher0", head, h->fisher0, v[7], 1e-6);
        /* accuracies are counts: equal unless a point sits on the boundary */
        ck_assert_msg(fabs(h->acc01 - v[8]) <= 1.5 / (double)(h->n_q + h->n_k),
                      "head %d acc01: C %.17g, Python %.17g", head, h->acc01, v[8]);
        ck_assert_msg(h->acc0 == v[9], "head %d acc0: C %.17g, Python %.17g", head, h->acc0,
                      v[9]);
        assert_rel_close("alpha_q0", head, h->alpha_q0, v[10], 1e-6);
        assert_rel_close("beta_k0", head, h->beta_k0, v[11], 1e-6);
        return 2;
    }
    ck_abort_msg("unexpected line from %s: %s", CROSSCHECK_SCRIPT, line);
    return 0;
}

START_TEST(crosscheck_numpy_sklearn)
{
    ck_assert_msg(access(PYTHON, X_OK) == 0, "%s is missing: the cross-check needs it", PYTHON);
    ck_assert_msg(access(CROSSCHECK_SCRIPT, R_OK) == 0,
                  "%s not found (run the test from the repository root)", CROSSCHECK_SCRIPT);
    enum { N_HEADS = 4 };
    head_data heads[N_HEADS];
    /* d = 128 heads with a drift, a Q/K offset, decaying anisotropic noise
     * and random orientation; the last has discordant K drift and d = 64 */
    const kind_spec kq[N_HEADS] = {
        {.offset = 6, .drift = 4e-5, .drift_axis = 0, .spike = 1.5},
        {.offset = 2, .drift = 1e-5, .drift_axis = 0},
        {.offset = 0.5, .drift = 0.0, .drift_axis = 0, .spike = 3.0},
        {.offset = 4, .drift = 3e-5, .drift_axis = 0}};
    const kind_spec kk[N_HEADS] = {
        {.offset = -6, .drift = 2e-5, .drift_axis = 0},
        {.offset = -2, .drift = 3e-5, .drift_axis = 5},
        {.offset = -0.5, .drift = 1e-5, .drift_axis = 3},
        {.offset = -4, .drift = -2.5e-5, .drift_axis = 0}};
    const int dims[N_HEADS] = {128, 128, 128, 64};
    const int64_t nq[N_HEADS] = {4000, 3000, 2500, 2000}, nk[N_HEADS] = {3500, 3000, 4000, 2100};
    qk_pca_head res[N_HEADS];
    for (int i = 0; i < N_HEADS; i++) {
        head_alloc(&heads[i], dims[i], nq[i], nk[i]);
        head_spec hs = {.noise = 3.0, .decay = 0.97, .reflections = 3, .pos_max = 131072,
                        .seed = 1000 + (uint64_t)i};
        free(make_head(&heads[i], &hs, &kq[i], &kk[i]));
        qk_pca_work w;
        qk_pca_work_init(&w, dims[i]);
        analyse(&heads[i], &w, &res[i]);
        qk_pca_work_free(&w);
    }
    char path[256], cmd[512];
    snprintf(path, sizeof path, TMP_DIR "/pca-crosscheck-%ld.bin", (long)getpid());
    ck_assert(system("mkdir -p " TMP_DIR) == 0);
    write_heads_file(path, heads, N_HEADS);
    snprintf(cmd, sizeof cmd, PYTHON " " CROSSCHECK_SCRIPT " %s", path);
    /* read everything first, so the file goes away whatever the outcome */
    FILE *p = popen(cmd, "r");
    ck_assert(p != NULL);
    enum { MAX_LINES = 256 };
    static char lines[MAX_LINES][1024];
    int n_lines = 0;
    while (n_lines < MAX_LINES && fgets(lines[n_lines], sizeof lines[0], p))
        n_lines++;
    int status = pclose(p);
    unlink(path);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "%s failed (exit status %d; its message is above)", CROSSCHECK_SCRIPT,
                  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    int pcs = 0, head_lines = 0;
    for (int i = 0; i < n_lines; i++) {
        int kind = compare_line(lines[i], res, N_HEADS);
        pcs += kind == 1;
        head_lines += kind == 2;
    }
    ck_assert_int_eq(pcs, N_HEADS * QK_PCA_N_PC);
    ck_assert_int_eq(head_lines, N_HEADS);
    for (int i = 0; i < N_HEADS; i++)
        head_free(&heads[i]);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("pca");
    TCase *tc = tcase_create("pca");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, position_column);
    tcase_add_test(tc, position_column_full_basis);
    tcase_add_test(tc, zero_variance_guard);
    tcase_add_test(tc, correlation_from_moments);
    tcase_add_test(tc, eigen_known_matrix);
    tcase_add_test(tc, combined_mode);
    tcase_add_test(tc, canonical_signs_do_not_depend_on_data_sign);
    tcase_add_test(tc, planted_linear_drift);
    tcase_add_test(tc, planted_dominant_direction);
    tcase_add_test(tc, sign_rule_cases);
    tcase_add_test(tc, threshold_accuracy_cases);
    tcase_add_test(tc, threshold_accuracy_brute_force);
    tcase_add_test(tc, lda_accuracy_cases);
    tcase_add_test(tc, skip_rule);
    suite_add_tcase(s, tc);
    TCase *tx = tcase_create("taxonomy");
    tcase_add_test(tx, taxonomy_categories);
    tcase_add_test(tx, taxonomy_boundaries);
    tcase_add_test(tx, taxonomy_order);
    suite_add_tcase(s, tx);
    TCase *cx = tcase_create("crosscheck");
    tcase_set_timeout(cx, 300);
    tcase_add_test(cx, crosscheck_numpy_sklearn);
    suite_add_tcase(s, cx);
    return qk_test_run(s);
}
