/* Tests of the attention plasticity stage: PP and its reference values,
 * small cases worked by hand, the Householder basis, the profile
 * scalars, the model aggregation, the closed form against a brute-force
 * re-implementation written with plain loops, and the closed form against
 * direct Monte Carlo on a planted head. */
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/plasticity.h"
#include "qk/rng.h"
#include "qk/simd.h"
#include "../src/lib/analysis/plasticity_internal.h"
#include "testutil.h"

/* ---- PP ----------------------------------------------------------------------- */

START_TEST(test_pp_reference_values)
{
    /* PP = 4 Phi(z) (1 - Phi(z)) at z = 0, 0.5, 1, 2, 3 */
    ck_assert_double_eq(qk_plast_pp_z(0.0), 1.0);
    ck_assert_double_eq_tol(qk_plast_pp_z(0.5), 0.8534, 5e-5);
    ck_assert_double_eq_tol(qk_plast_pp_z(1.0), 0.53394, 5e-6);
    ck_assert_double_eq_tol(qk_plast_pp_z(2.0), 0.08893, 5e-6);
    ck_assert_double_eq_tol(qk_plast_pp_z(3.0), 0.00539, 5e-6);
    ck_assert_double_eq_tol(qk_plast_pp_z(1.0), 0.5339351, 5e-8);
    ck_assert_double_eq_tol(qk_plast_phi(1.0), 0.8413447460685429, 1e-15);
    ck_assert_double_eq_tol(qk_plast_phi(-2.0), 0.022750131948179195, 1e-16);
}
END_TEST

START_TEST(test_pp_symmetric_and_stable)
{
    /* swapping k1 and k2 flips the sign of m and keeps v */
    for (double m = -12.0; m <= 12.0; m += 0.37)
        for (double v = 0.01; v < 30.0; v *= 1.9)
            ck_assert(qk_plast_pp(m, v) == qk_plast_pp(-m, v));
    /* from z^2 = 60 on PP is 0 (PP(60) = 1.4e-14; 4 Phi(-10) Phi(10) is
     * 3e-23): the tail below the resolution of the approximation */
    ck_assert_double_eq(qk_plast_pp_z(10.0), 0.0);
    ck_assert(qk_plast_pp_z(7.7) > 0.0 && qk_plast_pp_z(7.7) < 1e-13);
    ck_assert(qk_plast_pp_z(-40.0) == qk_plast_pp_z(40.0));
    /* PP in [0,1] everywhere, 1 exactly at z = 0, not growing with |z| */
    double last = 1.0;
    for (double z = 0.0; z <= 40.0; z += 0.125) {
        double pp = qk_plast_pp_z(z);
        ck_assert(pp >= 0.0 && pp <= 1.0);
        ck_assert_msg(pp <= last + 1e-7, "z %g: %.9g after %.9g", z, pp, last);
        last = pp;
    }
    ck_assert_double_eq(qk_plast_pp_z(0.0), 1.0);
}
END_TEST

/* PP of y in single precision against PP through libm's erfc on a fine
 * grid of y: the documented bound, 6e-8 (the rounding of float included;
 * workflow/pp_coefficients.py finds 5.5e-8 with every float operation
 * emulated), and 0 from y = 60 on. */
START_TEST(test_pp_y_against_libm)
{
    double worst = 0.0;
    for (int i = 0; i <= 700000; i++) {
        float y = (float)(i * 1e-4);
        double e = erfc(sqrt((double)y / 2.0)), want = e * (2.0 - e);
        worst = fmax(worst, fabs(qk_plast_pp_y(y) - want));
    }
    ck_assert_msg(worst <= 6e-8, "largest |PP - PP_libm| %.3g", worst);
    ck_assert(worst > 0.0); /* a float approximation */
    ck_assert(qk_plast_pp_y(59.9f) > 0.0f);
    ck_assert(qk_plast_pp_y(60.0f) == 0.0f && qk_plast_pp_y(1e30f) == 0.0f);
    ck_assert(qk_plast_pp_y(INFINITY) == 0.0f);
    ck_assert(qk_plast_pp_y(NAN) == 0.0f); /* never made: v is at least FLT_MIN */
}
END_TEST

/* The vectorised erfc (its documented bound: relative error below 2e-15 on
 * [0, 26.5), 0 beyond) against libm's erfc, which is within an ulp or so,
 * on a fine grid: 2.5e-15 leaves room for libm's own error. */
START_TEST(test_erfc_against_libm)
{
    double worst = 0.0;
    for (int i = 0; i < 265000; i++) {
        double x = i * 1e-4 + 0.37e-4 * (i % 7);
        if (x >= 26.5)
            continue;
        double want = erfc(x), got = qk_plast_erfc(x);
        ck_assert_msg(fabs(got - want) <= 2.5e-15 * want, "erfc(%.17g): %.17g vs libm %.17g", x,
                      got, want);
        worst = fmax(worst, fabs(got - want) / want);
        /* negative arguments: 2 - erfc(-x), the same absolute error */
        ck_assert_double_eq_tol(qk_plast_erfc(-x), erfc(-x), 2.5e-15 * want + 4.5e-16);
    }
    ck_assert(worst > 0.0); /* it is an approximation, not libm */
    ck_assert_double_eq_tol(qk_plast_erfc(0.0), 1.0, 2.5e-15);
    ck_assert_double_eq(qk_plast_erfc(26.5), 0.0);
    ck_assert_double_eq(qk_plast_erfc(40.0), 0.0);
    ck_assert_double_eq(qk_plast_erfc(INFINITY), 0.0);
    ck_assert_double_eq(qk_plast_erfc(-INFINITY), 2.0);
    ck_assert(isnan(qk_plast_erfc(NAN)));
    /* the tail keeps its relative precision up to the cut: erfc(26) */
    ck_assert_rel(qk_plast_erfc(26.0) / 5.6631924088561428e-296, 1.0, 2.5e-15);
}
END_TEST

/* PP of (m, v) against PP through libm's erfc, in the order of the scalar
 * formula: the per-value error every output of the sampled and the full
 * modes inherits (outputs are means of PP values): 6e-8 for PP of y, and
 * y rounded to float moves PP by at most 0.36 of its relative error. */
START_TEST(test_pp_against_libm_formula)
{
    double worst = 0.0;
    for (double m = -9.0; m <= 9.0; m += 0.0173)
        for (double v = 0.013; v < 40.0; v *= 1.37) {
            double z = m / sqrt(v), s = 0.5 * erfc(fabs(z) * M_SQRT1_2);
            double want = 4.0 * s * (1.0 - s);
            worst = fmax(worst, fabs(qk_plast_pp(m, v) - want));
        }
    ck_assert_msg(worst <= 6e-8 + 0.36 * 0x1p-24, "largest |PP - PP_libm| %.3g", worst);
}
END_TEST

/* Batches give the bits of the scalar forms, whatever their length (the
 * remainder goes through the scalar form) and with either kernel. */
START_TEST(test_erfc_batches_same_bits)
{
    enum { N = 1031 };
    double *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    qk_rng rng;
    uint64_t key[1] = {99};
    qk_rng_seed(&rng, key, 1);
    for (int i = 0; i < N; i++) {
        double u = qk_rng_uniform(&rng);
        x[i] = (i % 11 == 0 ? 30.0 : 7.0) * (2.0 * u - 0.3); /* both ranges, negatives */
    }
    x[5] = NAN;
    x[6] = INFINITY;
    int had_avx = qk_plast_erfc_use_avx(1);
    for (int kernel = 0; kernel < 2; kernel++) {
        qk_plast_erfc_use_avx(kernel);
        for (int n = 1; n <= N; n = n < 40 ? n + 1 : n * 3 + 1) {
            int len = n < N ? n : N;
            qk_plast_erfc_n(x, y, len);
            for (int i = 0; i < len; i++) {
                double want = qk_plast_erfc(x[i]);
                ck_assert_msg(memcmp(&y[i], &want, sizeof want) == 0,
                              "erfc batch %d [%d] kernel %d", len, i, kernel);
            }
        }
    }
    qk_plast_erfc_use_avx(had_avx);
    free(y);
    free(x);
}
END_TEST

/* The single-precision kernels give the bits of their scalar forms with
 * every instruction set the machine has (scalar, AVX2, AVX-512; one it
 * lacks is not run): PP of y, squared key differences, heatmap rows and
 * their counts, and a block of pair evaluations added to an accumulator. */
enum { KB_KEYS = 40, KB_PAIRS = 300, KB_BINS = 61, KB_D = 13 };

typedef struct kernel_out {
    float pp[1000];
    float sq[KB_D];
    uint8_t rows[KB_PAIRS * KB_BINS + 16];
    int64_t counts[16 * 16];
    double *sum;
    double *ref; /* the same sums, one evaluation at a time in a plain loop */
    int stride;
} kernel_out;

static void kernels_at(int level, kernel_out *out)
{
    qk_isa_use(level);
    qk_rng rng;
    uint64_t key[1] = {4};
    qk_rng_seed(&rng, key, 1);
    float y[1000];
    for (int i = 0; i < 1000; i++)
        y[i] = (float)(i < 700 ? 70.0 * qk_rng_uniform(&rng) : 1e-3 * i);
    y[3] = 0.0f;
    y[4] = 60.0f;
    y[5] = INFINITY;
    qk_plast_pp_y_n(y, out->pp, 997); /* a remainder */
    double ka[KB_D], kb[KB_D];
    for (int c = 0; c < KB_D; c++) {
        ka[c] = qk_rng_normal(&rng);
        kb[c] = c == 2 ? ka[c] : qk_rng_normal(&rng);
    }
    qk_plast_pair_squares(ka, kb, KB_D, out->sq);
    /* a grid of 16 x 16 cells of B = 64 and 61 bins (a few not kept) */
    qk_plast_grid g = {.bucket_size = 64, .bin_factor = 4, .context_length = 1024,
                       .n_bins = KB_BINS, .n_cells = 16};
    qk_plast_acc acc;
    qk_plast_acc_shape(&acc, &g);
    acc.sum = calloc((size_t)(16 * 16 + 1) * acc.stride, sizeof *acc.sum);
    acc.count = calloc(16 * 16 + 1, sizeof *acc.count);
    double tau2[KB_BINS + 8], score[KB_KEYS * KB_BINS];
    for (int b = 0; b < KB_BINS; b++)
        tau2[b] = b % 17 == 9 ? NAN : 2.0 * (16.0 * b + 16.0 * qk_rng_uniform(&rng));
    for (int i = 0; i < KB_KEYS * KB_BINS; i++)
        score[i] = 1e3 * qk_rng_normal(&rng);
    float v[KB_PAIRS * KB_BINS];
    for (int i = 0; i < KB_PAIRS * KB_BINS; i++)
        v[i] = i % 97 == 0 ? 0.0f : (float)(1e4 * qk_rng_uniform(&rng));
    qk_plast_key_pair pairs[KB_PAIRS];
    int b0 = 3, last = KB_BINS - 1;
    uint8_t *rows = out->rows;
    memset(out->counts, 0, sizeof out->counts);
    for (int i = 0; i < KB_PAIRS; i++) {
        qk_plast_key_pair *p = &pairs[i];
        p->a = (int32_t)qk_rng_below(&rng, KB_KEYS);
        p->b = i % 50 == 0 ? p->a : (int32_t)qk_rng_below(&rng, KB_KEYS); /* m = 0 */
        p->first = (int32_t)qk_rng_below(&rng, KB_BINS + 3); /* some after the last */
        p->dist_cell = (int32_t)qk_rng_below(&rng, 18);       /* some beyond the grid */
        p->pos_sum = (int64_t)qk_rng_below(&rng, 2000);
        int f = p->first > b0 ? p->first : b0, n = last - f + 1;
        if (n <= 0)
            continue;
        qk_plast_heatmap_rows(&acc, tau2 + f, (double)p->pos_sum, n, rows);
        qk_plast_count_rows(rows, n, out->counts + (p->dist_cell < 16 ? p->dist_cell : 15) * 16);
        rows += n;
    }
    /* y: NaN beyond the evaluations and their slack, which must stay untouched */
    static float ys[KB_PAIRS * KB_BINS];
    for (int i = 0; i < KB_PAIRS * KB_BINS; i++)
        ys[i] = NAN;
    qk_plast_block blk = {.pairs = pairs, .n = KB_PAIRS, .rows = out->rows, .score = score,
                          .key0 = 0, .n_bins = KB_BINS, .v = v, .y = ys, .b0 = b0, .last = last};
    int64_t evals = qk_plast_block_evals(&blk);
    ck_assert_int_eq(evals, rows - out->rows);
    ck_assert(evals + QK_PLAST_Y_SLACK < KB_PAIRS * KB_BINS);
    qk_plast_pp_block(&acc, &blk);
    for (int64_t i = evals + QK_PLAST_Y_SLACK; i < KB_PAIRS * KB_BINS; i++)
        ck_assert_msg(isnan(ys[i]), "y written beyond the evaluations at %lld", (long long)i);
    /* the reference: each evaluation's PP from S and V, added pair by pair */
    out->ref = calloc((size_t)(16 * 16 + 1) * acc.stride, sizeof *out->ref);
    rows = out->rows;
    for (int i = 0; i < KB_PAIRS; i++) {
        const qk_plast_key_pair *p = &pairs[i];
        int col = p->dist_cell < 16 ? p->dist_cell : 15;
        for (int b = p->first > b0 ? p->first : b0; b <= last; b++, rows++) {
            float m = (float)(score[p->a * KB_BINS + b] - score[p->b * KB_BINS + b]);
            float var = v[i * (last - b0 + 1) + b - b0];
            if (*rows != QK_PLAST_NO_ROW)
                out->ref[((size_t)col * 16 + *rows) * acc.stride + b] +=
                    qk_plast_pp_y(m * m / (var > FLT_MIN ? var : FLT_MIN));
        }
    }
    out->sum = acc.sum;
    out->stride = acc.stride;
    free(acc.count);
}

START_TEST(test_pp_kernels_same_bits)
{
    int before = qk_isa_use(QK_ISA_AVX512);
    int best = qk_isa_use(QK_ISA_AVX512); /* the machine's best */
    static kernel_out want, got;
    kernels_at(QK_ISA_SCALAR, &want);
    size_t sums = (size_t)(16 * 16 + 1) * want.stride;
    for (int level = QK_ISA_AVX2; level <= best; level++) {
        kernels_at(level, &got);
        ck_assert_msg(memcmp(want.pp, got.pp, 997 * sizeof *got.pp) == 0, "PP of y, level %d", level);
        ck_assert_msg(memcmp(want.sq, got.sq, sizeof got.sq) == 0, "squares, level %d", level);
        ck_assert_msg(memcmp(want.rows, got.rows, sizeof got.rows) == 0, "rows, level %d", level);
        ck_assert_msg(memcmp(want.counts, got.counts, sizeof got.counts) == 0, "counts, level %d",
                      level);
        ck_assert_msg(memcmp(want.sum, got.sum, sums * sizeof(double)) == 0,
                      "block sums, level %d", level);
        free(got.sum);
        free(got.ref);
    }
    /* the block's sums are those of the plain loop, bit for bit */
    ck_assert(memcmp(want.sum, want.ref, sums * sizeof(double)) == 0);
    /* the scalar forms: the batch is the function value by value; every
     * counted evaluation was added (each PP is at most 1, y = 0 gives 1) */
    qk_isa_use(QK_ISA_SCALAR);
    float y0[3] = {0.0f, 60.0f, 7.25f}, p0[3];
    qk_plast_pp_y_n(y0, p0, 3);
    for (int i = 0; i < 3; i++)
        ck_assert(p0[i] == qk_plast_pp_y(y0[i]));
    double total = 0.0;
    int64_t evals = 0;
    for (size_t i = 0; i < sums; i++)
        total += want.sum[i];
    for (int i = 0; i < 16 * 16; i++)
        evals += want.counts[i];
    ck_assert(evals > 1000 && total > 0.0 && total <= (double)evals);
    free(want.sum);
    free(want.ref);
    qk_isa_use(before);
}
END_TEST

/* QK_ISA: the level it names when the CPU has it, else the best there is;
 * the level in use is reported; an unknown name is refused in one line. */
START_TEST(test_isa_from_environment)
{
    int before = qk_isa_use(QK_ISA_AVX512);
    int best = qk_isa_best();
    static const char *const names[] = {"scalar", "avx2", "avx512"};
    for (int want = QK_ISA_SCALAR; want <= QK_ISA_AVX512; want++) {
        setenv("QK_ISA", names[want], 1);
        qk_isa_reread();
        int got = want < best ? want : best;
        ck_assert_int_eq(qk_isa_check(NULL), got);
        ck_assert_int_eq(qk_isa(), got);
        ck_assert_str_eq(qk_isa_name(qk_isa()), names[got]);
    }
    /* set once: a later change of the variable changes nothing */
    setenv("QK_ISA", "scalar", 1);
    ck_assert_int_eq(qk_isa(), best);
    unsetenv("QK_ISA");
    qk_isa_reread();
    ck_assert_int_eq(qk_isa(), best);
    setenv("QK_ISA", "sse4", 1);
    qk_isa_reread();
    qk_err err;
    ck_assert_int_eq(qk_isa_check(&err), -1);
    ck_assert_str_eq(err.msg, "QK_ISA=sse4: not an instruction set (avx512, avx2 or scalar)");
    ck_assert_int_eq(qk_isa(), best); /* the library itself takes the best */
    unsetenv("QK_ISA");
    qk_isa_reread();
    qk_isa_use(before);
}
END_TEST

START_TEST(test_pp_degenerate_variance)
{
    ck_assert_double_eq(qk_plast_pp(1.0, 0.0), 0.0);
    ck_assert_double_eq(qk_plast_pp(-3.0, 0.0), 0.0);
    ck_assert_double_eq(qk_plast_pp(0.0, 0.0), 1.0);
}
END_TEST

/* A worked case: the 1-D pair from one bucket: alpha 0, beta 1, t = 1, resid var 1,
 * keys [1] and [-1]: m = 2, v = 4, z = 1. */
START_TEST(test_one_dimensional_pair)
{
    double mean = 0.0 + 1.0 * 1.0, var = 1.0;
    double delta = 1.0 - (-1.0);
    ck_assert_double_eq_tol(qk_plast_pp(delta * mean, delta * delta * var), 0.5339351, 5e-8);
}
END_TEST

/* ---- regression, Householder, orientation, weights ------------------------------- */

/* The query side of a head of n rows x (n x d) at positions t (one
 * example, two keys): the regression's numbers land in h
 * (plasticity_queries.c). */
static void query_side(const float *x, const int32_t *t, int n, int d, qk_plast_head *h)
{
    int32_t zero[8] = {0}, bucket[8] = {0}, kt[2] = {0, 1};
    float kv[2 * 8] = {0};
    qk_plast_rows q = {n, x, t, zero, bucket, NULL}, k = {2, kv, kt, zero, zero, NULL};
    qk_plast_grid g;
    qk_err err;
    ck_assert_int_eq(qk_plast_grid_init(&g, 64, 4, 64, 63, &err), 0);
    qk_plast_params par;
    qk_plast_params_default(&par);
    int64_t rows[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    qk_plast_layout *l = qk_plast_layout_make(&q, rows, n, &k, rows, 2, &g, &par, &err);
    ck_assert_ptr_nonnull(l);
    double sign[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    qk_rng rng;
    uint64_t key[1] = {1};
    qk_rng_seed(&rng, key, 1);
    qk_plast_cache *c = qk_plast_cache_new();
    qk_plast_query_model m;
    qk_plast_head_init(h, d, &g);
    qk_plast_queries(&q, rows, l, d, sign, &par, &rng, c, h, &m);
    qk_plast_query_model_free(&m);
    qk_plast_cache_free(c);
    qk_plast_layout_free(l);
}

START_TEST(test_regression_degenerate)
{
    /* constant t: beta = 0, R2 = 0 (docs/plasticity.md, step 3) */
    float x[6] = {1.0f, 10.0f, 3.0f, 20.0f, 5.0f, 60.0f};
    int32_t t[3] = {7, 7, 7};
    qk_plast_head h;
    query_side(x, t, 3, 2, &h);
    ck_assert_double_eq(h.q_beta_norm, 0.0);
    ck_assert_double_eq(h.component_r2[0], 0.0);
    ck_assert_double_eq(h.component_r2[1], 0.0);
    ck_assert_double_eq(h.q_r2_pos, 0.0);
    qk_plast_head_free(&h);
}
END_TEST

START_TEST(test_regression_line)
{
    /* x0 = 2 + 0.5 t exactly (R2 = 1); x1 = 1 - t + (+1,-1,+1,-1) */
    int32_t t[4] = {0, 1, 2, 3};
    float x[8];
    double noise[4] = {1.0, -1.0, 1.0, -1.0};
    for (int i = 0; i < 4; i++) {
        x[2 * i] = (float)(2.0 + 0.5 * t[i]);
        x[2 * i + 1] = (float)(1.0 - t[i] + noise[i]);
    }
    qk_plast_head h;
    query_side(x, t, 4, 2, &h);
    ck_assert_double_eq_tol(h.component_r2[0], 1.0, 1e-14);
    /* slope -1 - 0.4 = -1.4 (the noise projects on tc = (-1.5,-.5,.5,1.5):
     * (-1.5+.5+.5-1.5)/5 = -0.4); x1 = 2, -1, 0, -3: SS_tot = 13, SS_res =
     * SS_tot - 1.4^2 * 5 = 3.2 */
    ck_assert_double_eq_tol(h.component_r2[1], 1.0 - 3.2 / 13.0, 1e-14);
    ck_assert_double_eq_tol(h.q_beta_norm, sqrt(0.5 * 0.5 + 1.4 * 1.4), 1e-14);
    ck_assert_double_eq_tol(h.q_r2_pos, (1.0 + 1.0 - 3.2 / 13.0) / 2.0, 1e-14);
    /* the weights: R2 shares */
    ck_assert_double_eq_tol(h.component_weight[0] + h.component_weight[1], 1.0, 1e-15);
    qk_plast_head_free(&h);
}
END_TEST

START_TEST(test_householder_maps_u_to_e1)
{
    /* beta = (0, 3, 4): H e1 = beta / 5, H^T H = I, H u = e1 (step 4) */
    double beta[3] = {0.0, 3.0, 4.0}, w[3];
    ck_assert_int_eq(qk_plast_householder(beta, 3, w), 1);
    double h[9];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            h[i * 3 + j] = (i == j) - 2.0 * w[i] * w[j];
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(h[i * 3 + 0], beta[i] / 5.0, 1e-15);
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double dot = 0.0;
            for (int k = 0; k < 3; k++)
                dot += h[k * 3 + i] * h[k * 3 + j];
            ck_assert_double_eq_tol(dot, i == j, 1e-15);
        }
    /* rows: u H = e1, and the reflection of the identity is H */
    double rows[12] = {0.0, 0.6, 0.8, 1, 0, 0, 0, 1, 0, 0, 0, 1};
    qk_plast_reflect_rows(rows, 4, 3, w, rows);
    ck_assert_double_eq_tol(rows[0], 1.0, 1e-15);
    ck_assert_double_eq_tol(rows[1], 0.0, 1e-15);
    ck_assert_double_eq_tol(rows[2], 0.0, 1e-15);
    for (int i = 0; i < 9; i++)
        ck_assert_double_eq_tol(rows[3 + i], h[i], 1e-15);
}
END_TEST

START_TEST(test_householder_identity_cases)
{
    double w[3] = {7, 7, 7};
    double zero[3] = {0, 0, 0}, along[3] = {2.5, 0, 0};
    ck_assert_int_eq(qk_plast_householder(zero, 3, w), 0);
    ck_assert_int_eq(qk_plast_householder(along, 3, w), 0);
    ck_assert_double_eq(w[0], 7.0); /* untouched */
}
END_TEST

START_TEST(test_orientation_signs)
{
    /* bucket 0 means (1, -2, 0, 3); bucket 5 means (1, 4, 0, -5): the
     * unweighted mean of bucket means is (1, 1, 0, -1); a zero-mean
     * dimension gets +1 (step 2) */
    double k[5 * 4] = {1, -2, 1, 3,   1, -2, -1, 3,   1, 4, 2, -5,
                       1, 4, -2, -5,  1, 4, 0, -5};
    int32_t bucket[5] = {0, 0, 5, 5, 5};
    double sign[4];
    qk_plast_orientation(k, 5, 4, bucket, sign);
    ck_assert_double_eq(sign[0], 1.0);
    ck_assert_double_eq(sign[1], 1.0);
    ck_assert_double_eq(sign[2], 1.0);
    ck_assert_double_eq(sign[3], -1.0);
}
END_TEST

START_TEST(test_component_weights)
{
    double r2[5] = {0.2, -0.1, 0.6, 0.0, 0.2}, w[5];
    qk_plast_component_weights(r2, 5, w);
    ck_assert_double_eq_tol(w[0], 0.2, 1e-15);
    ck_assert_double_eq(w[1], 0.0);
    ck_assert_double_eq_tol(w[2], 0.6, 1e-15);
    ck_assert_double_eq_tol(w[0] + w[1] + w[2] + w[3] + w[4], 1.0, 1e-15);
    double none[3] = {-0.5, 0.0, -1e-9}, u[3];
    qk_plast_component_weights(none, 3, u);
    for (int i = 0; i < 3; i++)
        ck_assert_double_eq_tol(u[i], 1.0 / 3.0, 1e-16);
}
END_TEST

START_TEST(test_skew_kurt_and_ks)
{
    /* x = 1, 2, 3, 10: mean 4, deviations -3 -2 -1 6: m2 = 12.5, m3 = 45,
     * m4 = 348.5 */
    double x[4] = {1, 2, 3, 10}, sk, ku;
    qk_plast_skew_kurt(x, 4, &sk, &ku);
    double m2 = 12.5, m3 = 45.0, m4 = 348.5;
    ck_assert_double_eq_tol(sk, sqrt(12.0) / 2.0 * m3 / pow(m2, 1.5), 1e-14);
    ck_assert_double_eq_tol(ku, (15.0 * m4 / (m2 * m2) - 27.0) / 2.0, 1e-13);
    /* the distribution of D_n: the tabulated 5% critical value of n = 10
     * (0.40925), and values of the exact two-sided law */
    ck_assert_double_eq_tol(qk_plast_kolmogorov_sf(10, 0.40925), 0.05, 1e-5);
    ck_assert_double_eq_tol(qk_plast_kolmogorov_sf(10, 0.274), 0.3715203845434957, 1e-12);
    ck_assert_double_eq_tol(qk_plast_kolmogorov_sf(8000, 0.01), 0.39788001231863, 1e-10);
    ck_assert_double_eq(qk_plast_kolmogorov_sf(100, 0.001), 1.0);
    ck_assert_double_eq_tol(qk_plast_kolmogorov_sf(5, 0.9), 2.0 * pow(0.1, 5), 1e-18);
    /* the Smirnov regime of large n (n x^2 >= 2.2): twice the exact sum
     * x sum_j C(n,j) (1-x-j/n)^(n-j) (x+j/n)^(j-1), evaluated with 60-digit
     * decimals at the same doubles x. The log factorials are kept per
     * thread in a table: it grows from the n = 5 above to 8000, serves 300
     * and 1000, and 8000 again gives the same bits */
    double sf8000 = qk_plast_kolmogorov_sf(8000, 0.02);
    ck_assert_double_eq_tol(sf8000 / 0.003277812972787873, 1.0, 2e-11);
    ck_assert_double_eq_tol(qk_plast_kolmogorov_sf(300, 0.1) / 0.004595673656972621, 1.0, 2e-11);
    ck_assert_double_eq_tol(qk_plast_kolmogorov_sf(1000, 0.05) / 0.013012074781090332, 1.0,
                            2e-11);
    ck_assert_double_eq(qk_plast_kolmogorov_sf(8000, 0.02), sf8000);
    /* a sample at the normal quantiles of (i + 0.5) / n fits N(0,1): D = 0.5 / n */
    double q[9];
    for (int i = 0; i < 9; i++) {
        double target = (i + 0.5) / 9.0, lo = -10, hi = 10;
        for (int it = 0; it < 200; it++) {
            double mid = 0.5 * (lo + hi);
            if (qk_plast_phi(mid) < target) lo = mid; else hi = mid;
        }
        q[8 - i] = 0.5 * (lo + hi);
    }
    ck_assert_double_eq(qk_plast_ks_norm(q, 9), 1.0);
}
END_TEST

/* The KS statistic the plain way: sort, Phi of every value, the largest gap
 * of either side of each step. */
static int cmp_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double ks_statistic_by_sort(const double *x, int64_t n)
{
    double *s = malloc((size_t)n * sizeof *s), stat = 0.0;
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp_doubles);
    for (int64_t i = 0; i < n; i++) {
        double f = qk_plast_phi(s[i]);
        double above = (double)(i + 1) / (double)n - f, below = f - (double)i / (double)n;
        double worst = above > below ? above : below;
        stat = worst > stat ? worst : stat;
    }
    free(s);
    return stat;
}

/* The statistic sorts only the cells that may hold the maximum: it must be
 * the number a full sort gives, bit for bit, on normal samples, on samples
 * far from normal (skewed, heavy-tailed, shifted, on a coarse lattice with
 * ties, beyond the cells' +-8), and on tiny ones. */
START_TEST(test_ks_statistic_matches_full_sort)
{
    qk_rng rng;
    uint64_t key = 42;
    qk_rng_seed(&rng, &key, 1);
    int64_t sizes[] = {1, 2, 7, 50, 1000, 8000, 20000};
    int checked = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int64_t n = sizes[s];
        double *x = malloc((size_t)n * sizeof *x);
        for (int kind = 0; kind < 7; kind++) {
            for (int64_t i = 0; i < n; i++) {
                double z = qk_rng_normal(&rng);
                x[i] = kind == 0   ? z
                       : kind == 1 ? z * z - 1.0                        /* skewed */
                       : kind == 2 ? z / (0.05 + qk_rng_uniform(&rng)) /* heavy tails */
                       : kind == 3 ? z + 0.3                            /* shifted */
                       : kind == 4 ? round(z * 8.0) / 8.0               /* ties */
                       : kind == 5 ? 12.0 * z                           /* past +-8 */
                                   : 0.001 * z;                         /* one cell */
            }
            double want = ks_statistic_by_sort(x, n);
            /* the cells counted eight at a time (AVX-512, AVX2) or one by
             * one, on every level the machine has */
            for (int level = QK_ISA_SCALAR; level <= QK_ISA_AVX512; level++) {
                int before = qk_isa_use(level);
                ck_assert_double_eq(qk_plast_ks_statistic(x, n), want);
                qk_isa_use(before);
            }
            checked++;
        }
        free(x);
    }
    ck_assert_int_eq(checked, 49);
    double inf[3] = {-INFINITY, 0.0, INFINITY};
    double big[9] = {-INFINITY, -1e300, -9.0, -8.0, 0.0, 7.99, 8.0, 1e300, INFINITY};
    for (int level = QK_ISA_SCALAR; level <= QK_ISA_AVX512; level++) {
        int before = qk_isa_use(level);
        ck_assert_double_eq(qk_plast_ks_statistic(inf, 3), ks_statistic_by_sort(inf, 3));
        ck_assert_double_eq(qk_plast_ks_statistic(big, 9), ks_statistic_by_sort(big, 9));
        qk_isa_use(before);
    }
    /* a NaN anywhere (in the eight-at-a-time part or after it) gives NaN,
     * and the next test is not disturbed; so does an empty sample */
    double x[20];
    for (int i = 0; i < 20; i++)
        x[i] = 0.1 * i - 1.0;
    double want = ks_statistic_by_sort(x, 20);
    for (int level = QK_ISA_SCALAR; level <= QK_ISA_AVX512; level++) {
        int before = qk_isa_use(level);
        for (int at = 0; at < 20; at += 9) {
            double keep = x[at];
            x[at] = NAN;
            ck_assert(isnan(qk_plast_ks_statistic(x, 20)));
            x[at] = keep;
            ck_assert_double_eq(qk_plast_ks_statistic(x, 20), want);
        }
        qk_isa_use(before);
    }
    ck_assert(isnan(qk_plast_ks_statistic(x, 0)));
}
END_TEST

/* The median and the count below alpha from every p-value, the plain way. */
static void ks_summary_by_every_p(int64_t n, const double *stat, int k, double alpha,
                                  double *median_p, int *below)
{
    double *p = malloc((size_t)k * sizeof *p);
    *below = 0;
    for (int i = 0; i < k; i++) {
        p[i] = qk_plast_kolmogorov_sf(n, stat[i]);
        *below += p[i] < alpha;
    }
    *median_p = qk_plast_median(p, k);
    free(p);
}

/* The summary computes few of the costly Smirnov p-values: its median and
 * count must be those of all of them, bit for bit, over sets of statistics
 * that mix every regime of the KS distribution, some with ties, near-ties
 * (1e-9 apart) or NaN, and alpha inside and outside the Smirnov range. */
START_TEST(test_ks_summary_matches_every_p)
{
    qk_rng rng;
    uint64_t key = 7;
    qk_rng_seed(&rng, &key, 1);
    int64_t sizes[] = {8000, 1000, 141, 60};
    int counts[] = {64, 63, 9, 2, 1};
    double alphas[] = {0.01, 0.05, 0.3, 1e-300, 0.0};
    int sets = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            for (int rep = 0; rep < 6; rep++) {
                int64_t n = sizes[s];
                int k = counts[c];
                double stat[64];
                for (int i = 0; i < k; i++) {
                    /* n D^2 from 0.05 to 600 on a log scale, now and then past
                     * 1/2, a tie, a near-tie or NaN */
                    double u = qk_rng_uniform(&rng), v = qk_rng_uniform(&rng);
                    stat[i] = sqrt(0.05 * pow(12000.0, u) / (double)n);
                    if (v < 0.04)
                        stat[i] = 0.5 + 0.4 * u;
                    else if (v < 0.10 && i > 0 && rep >= 3)
                        stat[i] = stat[i - 1];
                    else if (v < 0.16 && i > 0 && rep >= 4)
                        stat[i] = stat[i - 1] * (1.0 + 1e-9);
                    else if (v < 0.17 && rep == 5)
                        stat[i] = NAN;
                    if (stat[i] >= 1.0)
                        stat[i] = 0.999;
                }
                double alpha = alphas[rep % 5];
                double med, med_every;
                int below, below_every;
                qk_plast_ks_summary(n, stat, k, alpha, &med, &below);
                ks_summary_by_every_p(n, stat, k, alpha, &med_every, &below_every);
                ck_assert_int_eq(below, below_every);
                if (isnan(med_every))
                    ck_assert(isnan(med));
                else
                    ck_assert_double_eq(med, med_every);
                sets++;
            }
    ck_assert_int_eq(sets, 120);
}
END_TEST

/* ---- profile scalars ------------------------------------------------------------- */

START_TEST(test_profile_scalars_known_profile)
{
    /* B 16, bin factor 2: bins 8 wide, centres 8j + 4; L = 96, 12 bins.
     * Bins 0..10 hold j/10, bin 11 none. */
    qk_plast_grid g;
    qk_err err;
    ck_assert_int_eq(qk_plast_grid_init(&g, 16, 2, 96, 95, &err), 0);
    ck_assert_int_eq(g.n_bins, 12);
    ck_assert_int_eq(g.n_cells, 6);
    double ap[12];
    int64_t w[12];
    for (int j = 0; j < 12; j++) {
        ap[j] = j / 10.0;
        w[j] = j == 10 ? 3 : 1;
    }
    ap[11] = NAN;
    qk_plast_scalars s;
    qk_plast_profile_scalars(ap, w, &g, &s);
    ck_assert_int_eq(s.first_bin, 0);
    ck_assert_int_eq(s.last_bin, 10);
    ck_assert_int_eq(s.n_bins, 11);
    /* deciles: bin j in segment j, bin 10 joins segment 9 */
    for (int i = 0; i < 9; i++)
        ck_assert_double_eq_tol(s.decile[i], i / 10.0, 1e-15);
    ck_assert_double_eq_tol(s.decile[9], 0.95, 1e-15);
    /* quintiles: {0,1} {2,3} {4,5} {6,7} {8,9,10} */
    const double quint[5] = {0.05, 0.25, 0.45, 0.65, 0.9};
    for (int i = 0; i < 5; i++)
        ck_assert_double_eq_tol(s.quintile[i], quint[i], 1e-15);
    ck_assert_double_eq_tol(s.first20, 0.05, 1e-15);
    ck_assert_double_eq_tol(s.last20, 0.9, 1e-15);
    ck_assert_double_eq_tol(s.drop, -0.85, 1e-15);
    ck_assert_double_eq_tol(s.recovery, 0.65 - 0.45, 1e-15);
    ck_assert_double_eq_tol(s.ap_overall, (4.5 + 3.0) / 13.0, 1e-15);
    ck_assert_double_eq_tol(s.profile_mean, 0.5, 1e-15);
    /* lengths by bin centre: [0,6) {4}; [6,12) none; [12,24) {12,20};
     * [24,48) {28,36,44}; [48,96] {52..84} */
    ck_assert_double_eq_tol(s.length[0], 0.0, 1e-15);
    ck_assert(isnan(s.length[1]));
    ck_assert_double_eq_tol(s.length[2], 0.15, 1e-15);
    ck_assert_double_eq_tol(s.length[3], 0.4, 1e-15);
    ck_assert_double_eq_tol(s.length[4], 0.8, 1e-15);
    /* no weights: no ap_overall; an empty profile: NaN everywhere */
    qk_plast_profile_scalars(ap, NULL, &g, &s);
    ck_assert(isnan(s.ap_overall));
    for (int j = 0; j < 12; j++)
        ap[j] = NAN;
    qk_plast_profile_scalars(ap, w, &g, &s);
    ck_assert_int_eq(s.first_bin, -1);
    ck_assert(isnan(s.drop) && isnan(s.decile[0]) && isnan(s.ap_overall));
}
END_TEST

START_TEST(test_model_aggregation)
{
    qk_plast_grid g;
    qk_err err;
    ck_assert_int_eq(qk_plast_grid_init(&g, 16, 2, 96, 95, &err), 0);
    qk_plast_head heads[3];
    for (int h = 0; h < 3; h++) {
        qk_plast_head_init(&heads[h], 2, &g);
        for (int j = 0; j < g.n_bins; j++)
            heads[h].bin_ap[j] = NAN;
        for (int c = 0; c < g.n_cells * g.n_cells; c++)
            heads[h].cell_ap[c] = NAN;
    }
    /* bin 2: 0.2, 0.4, 0.9; bin 3: 0.5 and NaN, NaN; bin 5: only head 2 */
    heads[0].bin_ap[2] = 0.2;
    heads[1].bin_ap[2] = 0.4;
    heads[2].bin_ap[2] = 0.9;
    heads[0].bin_ap[3] = 0.5;
    heads[2].bin_ap[5] = 0.1;
    heads[0].cell_ap[7] = 0.3;
    heads[1].cell_ap[7] = 0.6;
    heads[0].cell_evals[7] = 40;
    heads[1].cell_evals[7] = 50;
    heads[2].cell_evals[7] = 5; /* below the filter: NaN, not counted */
    heads[0].s.ap_overall = 0.5;
    heads[1].s.ap_overall = 0.7;
    heads[2].s.ap_overall = NAN;
    qk_plast_model m;
    qk_plast_model_compute(&m, heads, 3, &g);
    ck_assert_double_eq_tol(m.bin_ap[2], 0.5, 1e-15);
    ck_assert_int_eq(m.bin_heads[2], 3);
    ck_assert_double_eq_tol(m.bin_ap[3], 0.5, 1e-15);
    ck_assert_int_eq(m.bin_heads[3], 1);
    ck_assert(isnan(m.bin_ap[4]));
    ck_assert_double_eq_tol(m.bin_ap[5], 0.1, 1e-15);
    ck_assert_double_eq_tol(m.cell_ap[7], 0.45, 1e-15);
    ck_assert_int_eq(m.cell_heads[7], 2);
    ck_assert_int_eq(m.cell_evals[7], 90);
    ck_assert_int_eq(m.n_heads_valid, 2);
    ck_assert_double_eq_tol(m.s.ap_overall, 0.6, 1e-15);
    /* the scalars come from the model profile: bins 2, 3, 5 */
    ck_assert_int_eq(m.s.first_bin, 2);
    ck_assert_int_eq(m.s.last_bin, 5);
    ck_assert_double_eq_tol(m.s.first20, 0.5, 1e-15); /* segment 0: bin 2 */
    ck_assert_double_eq_tol(m.s.last20, 0.1, 1e-15);  /* segment 4: bin 5 */
    qk_plast_model_free(&m);
    for (int h = 0; h < 3; h++)
        qk_plast_head_free(&heads[h]);
}
END_TEST

/* ---- planted heads ---------------------------------------------------------------- */

/* A small head: keys of n_examples examples at uniform positions in [0, L),
 * queries at uniform positions; queries drift by drift * t / L along a
 * random direction and turn in the plane of dims 2, 3 (a RoPE-like content
 * drift); keys drift along dim 0 and carry noise. */
typedef struct planted {
    int d, L, B;
    int64_t nq, nk;
    float *qv, *kv;
    int32_t *qt, *kt, *qe, *ke, *qb, *kb;
} planted;

static void planted_make(planted *p, int d, int L, int B, int n_examples, int keys_each,
                         int nq, double drift, double content, uint64_t seed)
{
    memset(p, 0, sizeof *p);
    p->d = d;
    p->L = L;
    p->B = B;
    p->nq = nq;
    p->nk = (int64_t)n_examples * keys_each;
    p->qv = malloc((size_t)p->nq * d * sizeof(float));
    p->kv = malloc((size_t)p->nk * d * sizeof(float));
    p->qt = malloc((size_t)p->nq * sizeof(int32_t));
    p->qe = malloc((size_t)p->nq * sizeof(int32_t));
    p->qb = malloc((size_t)p->nq * sizeof(int32_t));
    p->kt = malloc((size_t)p->nk * sizeof(int32_t));
    p->ke = malloc((size_t)p->nk * sizeof(int32_t));
    p->kb = malloc((size_t)p->nk * sizeof(int32_t));
    qk_rng r;
    uint64_t keys[2] = {seed, 99};
    qk_rng_seed(&r, keys, 2);
    double dir[64], norm = 0.0;
    for (int c = 0; c < d; c++) {
        dir[c] = qk_rng_normal(&r);
        norm += dir[c] * dir[c];
    }
    for (int c = 0; c < d; c++)
        dir[c] /= sqrt(norm);
    double omega = 2.0 * M_PI * 1.5 / L;
    for (int64_t i = 0; i < p->nq; i++) {
        int32_t t = (int32_t)qk_rng_below(&r, (uint64_t)L);
        p->qt[i] = t;
        p->qe[i] = (int32_t)(i % n_examples);
        p->qb[i] = t / B;
        for (int c = 0; c < d; c++) {
            double v = 0.3 + drift * (double)t / L * dir[c] + (0.5 + 0.2 * c) * qk_rng_normal(&r);
            if (c == 2 && d > 3)
                v += content * cos(omega * t);
            if (c == 3 && d > 3)
                v += content * sin(omega * t);
            p->qv[i * d + c] = (float)v;
        }
    }
    for (int64_t i = 0; i < p->nk; i++) {
        int32_t t = (int32_t)qk_rng_below(&r, (uint64_t)L);
        p->kt[i] = t;
        p->ke[i] = (int32_t)(1000 + 7 * (i / keys_each));
        p->kb[i] = t / B;
        for (int c = 0; c < d; c++) {
            double v = (c % 2 ? -0.4 : 0.6) + (c == 0 ? 2.0 * t / L : 0.0) +
                       (0.8 + 0.1 * c) * qk_rng_normal(&r);
            p->kv[i * d + c] = (float)v;
        }
    }
}

static void planted_free(planted *p)
{
    free(p->qv);
    free(p->kv);
    free(p->qt);
    free(p->qe);
    free(p->qb);
    free(p->kt);
    free(p->ke);
    free(p->kb);
}

static void planted_rows(const planted *p, qk_plast_rows *q, qk_plast_rows *k)
{
    q->n = p->nq;
    q->vector = p->qv;
    q->position = p->qt;
    q->example_id = p->qe;
    q->bucket = p->qb;
    k->n = p->nk;
    k->vector = p->kv;
    k->position = p->kt;
    k->example_id = p->ke;
    k->bucket = p->kb;
}

static qk_plast_grid planted_grid(const planted *p, int bin_factor)
{
    qk_plast_grid g;
    qk_err err;
    ck_assert_int_eq(qk_plast_grid_init(&g, p->B, bin_factor, p->L, p->L - 1, &err), 0);
    return g;
}

static void analyse_ok(const planted *p, const qk_plast_grid *g, const qk_plast_params *par,
                       qk_plast_head *h)
{
    qk_plast_rows q, k;
    planted_rows(p, &q, &k);
    qk_err err;
    qk_plast_head_init(h, p->d, g);
    int rc = qk_plast_analyse(&q, &k, p->d, g, par, 3, 5, NULL, h, &err);
    ck_assert_msg(rc == 0, "analyse: %s", err.msg);
}

/* The parameters of the small planted head's tests: the defaults with
 * thresholds its few pairs reach. */
static void small_head_params(qk_plast_params *par)
{
    qk_plast_params_default(par);
    par->min_pairs_per_bin = 8;
    par->pair2d_min_count = 5;
}

/* ---- the brute-force reference (plain loops, no BLAS, no shared code) ---------------- */

typedef struct reference {
    int d, n_bins, n_cells;
    double *krot;    /* [nk * d] rotated keys, input order */
    double *mean;    /* [n_bins * d] M_b */
    double *cov;     /* [n_bins * d * d] C_b */
    double *tau;
    int64_t *nq_bin, *pairs;
    double *ap;      /* NaN when dropped */
    double *cell_sum;
    int64_t *cell_n;
    double overall, alpha_pos, beta_pos, sigma2_pos, beta_norm;
} reference;

static double ref_pp(double m, double v)
{
    if (v <= 0.0)
        return m == 0.0 ? 1.0 : 0.0;
    double z = m / sqrt(v);
    double p = 0.5 * erfc(-z / sqrt(2.0)), q = 0.5 * erfc(z / sqrt(2.0));
    return 4.0 * p * q;
}

static void reference_compute(reference *r, const planted *p, const qk_plast_grid *g,
                              int full, int64_t min_pairs)
{
    int d = p->d;
    int64_t nq = p->nq, nk = p->nk;
    memset(r, 0, sizeof *r);
    r->d = d;
    r->n_bins = g->n_bins;
    r->n_cells = g->n_cells;
    double *q = calloc((size_t)(nq * d), sizeof *q), *k = calloc((size_t)(nk * d), sizeof *k);
    for (int64_t i = 0; i < nq * d; i++)
        q[i] = p->qv[i];
    for (int64_t i = 0; i < nk * d; i++)
        k[i] = p->kv[i];
    /* orientation: sign of the mean over buckets of the bucket means */
    double sign[64];
    for (int c = 0; c < d; c++) {
        double total = 0.0;
        for (int b = 0; b * p->B < p->L; b++) {
            double s = 0.0;
            int n = 0;
            for (int64_t i = 0; i < nk; i++)
                if (p->kb[i] == b) {
                    s += k[i * d + c];
                    n++;
                }
            if (n)
                total += s / n;
        }
        sign[c] = total < 0 ? -1.0 : 1.0;
    }
    for (int64_t i = 0; i < nq; i++)
        for (int c = 0; c < d; c++)
            q[i * d + c] *= sign[c];
    for (int64_t i = 0; i < nk; i++)
        for (int c = 0; c < d; c++)
            k[i * d + c] *= sign[c];
    /* regression per dimension */
    double tm = 0.0;
    for (int64_t i = 0; i < nq; i++)
        tm += p->qt[i];
    tm /= nq;
    double stt = 0.0;
    for (int64_t i = 0; i < nq; i++)
        stt += (p->qt[i] - tm) * (p->qt[i] - tm);
    double beta[64], norm = 0.0;
    for (int c = 0; c < d; c++) {
        double sxy = 0.0;
        for (int64_t i = 0; i < nq; i++)
            sxy += (p->qt[i] - tm) * q[i * d + c];
        beta[c] = sxy / stt;
        norm += beta[c] * beta[c];
    }
    norm = sqrt(norm);
    r->beta_norm = norm;
    /* H = I - 2 w w^T, w = (u - e1)/|u - e1| */
    double w[64], wn = 0.0, h[64 * 64];
    for (int c = 0; c < d; c++) {
        w[c] = beta[c] / norm - (c == 0);
        wn += w[c] * w[c];
    }
    for (int c = 0; c < d; c++)
        w[c] /= sqrt(wn);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++)
            h[i * d + j] = (i == j) - 2.0 * w[i] * w[j];
    double *qr = calloc((size_t)(nq * d), sizeof *qr);
    r->krot = calloc((size_t)(nk * d), sizeof *r->krot);
    for (int64_t i = 0; i < nq; i++)
        for (int j = 0; j < d; j++)
            for (int c = 0; c < d; c++)
                qr[i * d + j] += q[i * d + c] * h[c * d + j];
    for (int64_t i = 0; i < nk; i++)
        for (int j = 0; j < d; j++)
            for (int c = 0; c < d; c++)
                r->krot[i * d + j] += k[i * d + c] * h[c * d + j];
    /* coordinate 1 against t */
    double ym = 0.0, sty = 0.0;
    for (int64_t i = 0; i < nq; i++)
        ym += qr[i * d];
    ym /= nq;
    for (int64_t i = 0; i < nq; i++)
        sty += (p->qt[i] - tm) * qr[i * d];
    r->beta_pos = sty / stt;
    r->alpha_pos = ym - r->beta_pos * tm;
    double rm = 0.0, rss = 0.0;
    for (int64_t i = 0; i < nq; i++)
        rm += qr[i * d] - r->alpha_pos - r->beta_pos * p->qt[i];
    rm /= nq;
    for (int64_t i = 0; i < nq; i++) {
        double e = qr[i * d] - r->alpha_pos - r->beta_pos * p->qt[i] - rm;
        rss += e * e;
    }
    r->sigma2_pos = rss / (nq - 1);
    /* per bin: n, tau, mu, covariance */
    int nb = g->n_bins;
    r->mean = calloc((size_t)nb * d, sizeof(double));
    r->cov = calloc((size_t)nb * d * d, sizeof(double));
    r->tau = calloc((size_t)nb, sizeof(double));
    r->nq_bin = calloc((size_t)nb, sizeof(int64_t));
    r->pairs = calloc((size_t)nb, sizeof(int64_t));
    r->ap = calloc((size_t)nb, sizeof(double));
    r->cell_sum = calloc((size_t)g->n_cells * g->n_cells, sizeof(double));
    r->cell_n = calloc((size_t)g->n_cells * g->n_cells, sizeof(int64_t));
    double wsum = 0.0, wap = 0.0;
    for (int b = 0; b < nb; b++) {
        double *mu = r->mean + (size_t)b * d, *cv = r->cov + (size_t)b * d * d;
        int64_t n = 0;
        for (int64_t i = 0; i < nq; i++)
            if ((int64_t)p->qt[i] * g->bin_factor / g->bucket_size == b) {
                n++;
                r->tau[b] += p->qt[i];
                for (int c = 1; c < d; c++)
                    mu[c] += qr[i * d + c];
            }
        r->nq_bin[b] = n;
        r->ap[b] = NAN;
        /* eligible pairs are counted for every bin, kept or not */
        double start = (double)b * g->bucket_size / g->bin_factor;
        for (int64_t i = 0; i < nk; i++)
            for (int64_t j = i + 1; j < nk; j++)
                r->pairs[b] += p->ke[i] == p->ke[j] && p->kt[i] < start && p->kt[j] < start;
        if (n < 2)
            continue;
        r->tau[b] /= n;
        for (int c = 1; c < d; c++)
            mu[c] /= n;
        mu[0] = r->alpha_pos + r->beta_pos * r->tau[b];
        for (int64_t i = 0; i < nq; i++)
            if ((int64_t)p->qt[i] * g->bin_factor / g->bucket_size == b)
                for (int a = 1; a < d; a++)
                    for (int c = 1; c < d; c++)
                        cv[a * d + c] +=
                            (qr[i * d + a] - mu[a]) * (qr[i * d + c] - mu[c]) / (n - 1);
        for (int a = 1; a < d; a++)
            for (int c = 1; c < d; c++)
                if (a != c && !full)
                    cv[a * d + c] = 0.0;
                else if (a == c && full)
                    cv[a * d + c] += 1e-12;
        cv[0] = r->sigma2_pos;
        /* every same-example pair with both keys before the bin start */
        double sum = 0.0;
        int64_t count = 0;
        for (int64_t i = 0; i < nk; i++)
            for (int64_t j = i + 1; j < nk; j++) {
                if (p->ke[i] != p->ke[j] || !(p->kt[i] < start) || !(p->kt[j] < start))
                    continue;
                double delta[64], m = 0.0, v = 0.0;
                for (int c = 0; c < d; c++)
                    delta[c] = r->krot[i * d + c] - r->krot[j * d + c];
                for (int c = 0; c < d; c++) {
                    m += delta[c] * mu[c];
                    for (int a = 0; a < d; a++)
                        v += delta[a] * cv[a * d + c] * delta[c];
                }
                count++;
                sum += ref_pp(m, v);
            }
        ck_assert_int_eq(count, r->pairs[b]);
        if (count < min_pairs)
            continue;
        r->ap[b] = sum / count;
        wsum += n;
        wap += n * r->ap[b];
        /* the heatmap cells of the kept bins */
        for (int64_t i = 0; i < nk; i++)
            for (int64_t j = i + 1; j < nk; j++) {
                if (p->ke[i] != p->ke[j] || !(p->kt[i] < start) || !(p->kt[j] < start))
                    continue;
                double delta[64], m = 0.0, v = 0.0;
                for (int c = 0; c < d; c++)
                    delta[c] = r->krot[i * d + c] - r->krot[j * d + c];
                for (int c = 0; c < d; c++) {
                    m += delta[c] * mu[c];
                    for (int a = 0; a < d; a++)
                        v += delta[a] * cv[a * d + c] * delta[c];
                }
                int dist = abs(p->kt[i] - p->kt[j]) / p->B;
                int mid = (int)floor((r->tau[b] - 0.5 * (p->kt[i] + p->kt[j])) / p->B);
                r->cell_sum[dist * g->n_cells + mid] += ref_pp(m, v);
                r->cell_n[dist * g->n_cells + mid]++;
            }
    }
    r->overall = wap / wsum;
    free(qr);
    free(q);
    free(k);
}

static void reference_free(reference *r)
{
    free(r->krot);
    free(r->mean);
    free(r->cov);
    free(r->tau);
    free(r->nq_bin);
    free(r->pairs);
    free(r->ap);
    free(r->cell_sum);
    free(r->cell_n);
}

/* The documented bound on |PP - exact PP| per evaluation (docs/plasticity.md,
 * "PP in single precision"): the float evaluation of PP (6e-8) plus 0.36
 * times the relative error of y, (d + 6) 2^-24 in the exact diagonal mode
 * (its variances from a float GEMM) and 2^-24 where v is a double. A mean
 * of PP values (a bin, a cell, ap_overall) has the same bound. */
static double pp_bound(int d, int float_gemm)
{
    return 6e-8 + 0.36 * (float_gemm ? d + 6 : 1) * 0x1p-24 + 1e-12;
}

static void expect_matches_reference(const qk_plast_head *h, const reference *r,
                                     int64_t cell_min, double tol)
{
    int kept = 0;
    ck_assert_double_eq_tol(h->q_beta_norm, r->beta_norm, 1e-12 * r->beta_norm);
    ck_assert_double_eq_tol(h->beta_pos, r->beta_pos, 1e-10 * fabs(r->beta_pos));
    ck_assert_double_eq_tol(h->alpha_pos, r->alpha_pos, 1e-11);
    ck_assert_double_eq_tol(h->sigma2_pos, r->sigma2_pos, 1e-11 * r->sigma2_pos);
    for (int b = 0; b < r->n_bins; b++) {
        ck_assert_int_eq(h->bin_queries[b], r->nq_bin[b]);
        ck_assert_int_eq(h->bin_pairs[b], r->pairs[b]);
        if (isnan(r->ap[b])) {
            ck_assert_msg(isnan(h->bin_ap[b]), "bin %d: %g, expected NaN", b, h->bin_ap[b]);
            continue;
        }
        kept++;
        ck_assert_msg(fabs(h->bin_ap[b] - r->ap[b]) <= tol, "bin %d: %.17g vs %.17g", b,
                      h->bin_ap[b], r->ap[b]);
    }
    ck_assert_int_ge(kept, 10);
    ck_assert_msg(fabs(h->s.ap_overall - r->overall) <= tol, "ap_overall %.17g vs %.17g",
                  h->s.ap_overall, r->overall);
    int cells = 0;
    for (int c = 0; c < r->n_cells * r->n_cells; c++) {
        ck_assert_int_eq(h->cell_evals[c], r->cell_n[c]);
        if (r->cell_n[c] < cell_min) {
            ck_assert(isnan(h->cell_ap[c]));
            continue;
        }
        cells++;
        ck_assert_double_eq_tol(h->cell_ap[c], r->cell_sum[c] / r->cell_n[c], tol);
    }
    ck_assert_int_ge(cells, 4);
}

/* d = 6, L = 512, B = 64, bins of 16: 32 bins, 8 x 8 cells. */
static void small_head(planted *p)
{
    planted_make(p, 6, 512, 64, 5, 24, 600, 3.0, 1.0, 11);
}

START_TEST(test_exact_diag_equals_brute_force)
{
    planted p;
    small_head(&p);
    qk_plast_grid g = planted_grid(&p, 4);
    ck_assert_int_eq(g.n_bins, 32);
    qk_plast_params par;
    small_head_params(&par);
    qk_plast_head h;
    analyse_ok(&p, &g, &par, &h);
    reference r;
    reference_compute(&r, &p, &g, 0, 8);
    expect_matches_reference(&h, &r, 5, pp_bound(p.d, 1));
    /* the same pairs drawn "at random" when every pair fits: the same
     * numbers, v in double */
    par.pair_mode = QK_PLAST_PAIRS_SAMPLE;
    par.pairs_per_bin = 100000;
    qk_plast_head hs;
    analyse_ok(&p, &g, &par, &hs);
    expect_matches_reference(&hs, &r, 5, pp_bound(p.d, 0));
    reference_free(&r);
    qk_plast_head_free(&hs);
    qk_plast_head_free(&h);
    planted_free(&p);
}
END_TEST

/* Queries only in the first half of the context: the bins after it have no
 * queries and are not kept, so most key pairs become eligible only after
 * the last kept bin, some of them in blocks that start at a kept bin. */
START_TEST(test_exact_diag_pairs_after_last_kept_bin)
{
    planted p;
    small_head(&p);
    for (int64_t i = 0; i < p.nq; i++) {
        p.qt[i] %= p.L / 2;
        p.qb[i] = p.qt[i] / p.B;
    }
    qk_plast_grid g = planted_grid(&p, 4);
    qk_plast_params par;
    small_head_params(&par);
    qk_plast_head h;
    analyse_ok(&p, &g, &par, &h);
    ck_assert_msg(isnan(h.bin_ap[g.n_bins / 2]), "bin %d has no queries", g.n_bins / 2);
    reference r;
    reference_compute(&r, &p, &g, 0, 8);
    expect_matches_reference(&h, &r, 5, pp_bound(p.d, 1));
    reference_free(&r);
    qk_plast_head_free(&h);
    planted_free(&p);
}
END_TEST

/* Timing the floor changes no result, and the floor's PP count is the
 * head's evaluation count (no time is asserted). */
START_TEST(test_floor_changes_nothing)
{
    planted p;
    small_head(&p);
    qk_plast_grid g = planted_grid(&p, 4);
    qk_plast_params par;
    small_head_params(&par);
    qk_plast_head plain, timed;
    analyse_ok(&p, &g, &par, &plain);
    par.time_floor = 1;
    analyse_ok(&p, &g, &par, &timed);
    ck_assert(memcmp(plain.bin_ap, timed.bin_ap, (size_t)g.n_bins * sizeof(double)) == 0);
    ck_assert(memcmp(plain.cell_ap, timed.cell_ap,
                     (size_t)g.n_cells * g.n_cells * sizeof(double)) == 0);
    ck_assert(memcmp(&plain.s, &timed.s, sizeof plain.s) == 0);
    ck_assert_int_gt(timed.n_evals, 0);
    ck_assert_int_eq(timed.timing.n_pp, timed.n_evals);
    ck_assert(timed.timing.total >= 0.0 && timed.timing.floor_gemm >= 0.0 &&
              timed.timing.floor_pp >= 0.0);
    ck_assert_int_eq(plain.timing.n_pp, 0);
    qk_plast_head_free(&timed);
    qk_plast_head_free(&plain);
    planted_free(&p);
}
END_TEST

START_TEST(test_exact_full_equals_brute_force)
{
    planted p;
    small_head(&p);
    qk_plast_grid g = planted_grid(&p, 4);
    qk_plast_params par;
    small_head_params(&par);
    par.cov = QK_PLAST_COV_FULL;
    qk_plast_head h;
    analyse_ok(&p, &g, &par, &h);
    reference r;
    reference_compute(&r, &p, &g, 1, 8);
    expect_matches_reference(&h, &r, 5, pp_bound(p.d, 0));
    par.pair_mode = QK_PLAST_PAIRS_SAMPLE;
    par.pairs_per_bin = 100000;
    qk_plast_head hs;
    analyse_ok(&p, &g, &par, &hs);
    expect_matches_reference(&hs, &r, 5, pp_bound(p.d, 0));
    /* full and diag differ on this head (correlated content noise) */
    par.cov = QK_PLAST_COV_DIAG;
    par.pair_mode = QK_PLAST_PAIRS_EXACT;
    qk_plast_head hd;
    analyse_ok(&p, &g, &par, &hd);
    ck_assert(fabs(hd.s.ap_overall - h.s.ap_overall) > 1e-6);
    reference_free(&r);
    qk_plast_head_free(&hd);
    qk_plast_head_free(&hs);
    qk_plast_head_free(&h);
    planted_free(&p);
}
END_TEST

/* Two results are the same to the bit. */
static void expect_same_head(const qk_plast_head *a, const qk_plast_head *b)
{
    size_t nb = (size_t)a->n_bins, nc = (size_t)a->n_cells * a->n_cells;
    ck_assert(memcmp(a->bin_ap, b->bin_ap, nb * sizeof *a->bin_ap) == 0);
    ck_assert(memcmp(a->bin_pairs, b->bin_pairs, nb * sizeof *a->bin_pairs) == 0);
    ck_assert(memcmp(a->cell_ap, b->cell_ap, nc * sizeof *a->cell_ap) == 0);
    ck_assert(memcmp(a->cell_evals, b->cell_evals, nc * sizeof *a->cell_evals) == 0);
    ck_assert(memcmp(a->component_r2, b->component_r2, (size_t)a->d * sizeof(double)) == 0);
    ck_assert(memcmp(&a->s, &b->s, sizeof a->s) == 0);
    ck_assert(a->q_beta_norm == b->q_beta_norm && a->sigma2_pos == b->sigma2_pos &&
              a->noise_med_ks_p == b->noise_med_ks_p && a->resid0_kurt == b->resid0_kurt);
}

/* A thread's cache changes no result: heads analysed one after the other
 * with one cache (the second and third share the layout, the third the
 * first's keys too) give the bits of each head analysed on its own, and a
 * head at other positions gets a layout of its own. */
START_TEST(test_cache_changes_nothing)
{
    planted p;
    small_head(&p);
    qk_plast_grid g = planted_grid(&p, 4);
    qk_plast_params par;
    small_head_params(&par);
    float *other_k = malloc((size_t)p.nk * p.d * sizeof *other_k);
    float *other_q = malloc((size_t)p.nq * p.d * sizeof *other_q);
    for (int64_t i = 0; i < p.nk * p.d; i++)
        other_k[i] = p.kv[i] * 0.5f + 0.25f;
    for (int64_t i = 0; i < p.nq * p.d; i++)
        other_q[i] = p.qv[(i + p.d) % (p.nq * p.d)];
    int32_t *moved = malloc((size_t)p.nk * sizeof *moved);
    for (int64_t i = 0; i < p.nk; i++)
        moved[i] = p.kt[i] ^ 1; /* other positions, the same buckets */
    qk_plast_rows q, k;
    planted_rows(&p, &q, &k);
    qk_plast_rows q2 = q, k2 = k, q3 = q, k4 = k;
    k.source = &p;       /* the first key head */
    q2.vector = other_q; /* another query head of it */
    k2.source = &p;
    k2.vector = p.kv;
    k4.vector = other_k; /* another key head, another layout */
    k4.position = moved;
    k4.source = other_k;
    const qk_plast_rows *qs[4] = {&q, &q2, &q3, &q3}, *ks[4] = {&k, &k2, &k, &k4};
    qk_plast_cache *cache = qk_plast_cache_new();
    for (int mode = 0; mode < 2; mode++) {
        par.cov = mode ? QK_PLAST_COV_FULL : QK_PLAST_COV_DIAG;
        for (int i = 0; i < 4; i++) {
            qk_plast_head cached, alone;
            qk_err err;
            qk_plast_head_init(&cached, p.d, &g);
            qk_plast_head_init(&alone, p.d, &g);
            ck_assert_int_eq(qk_plast_analyse(qs[i], ks[i], p.d, &g, &par, 3, i, cache, &cached, &err), 0);
            ck_assert_int_eq(qk_plast_analyse(qs[i], ks[i], p.d, &g, &par, 3, i, NULL, &alone, &err), 0);
            expect_same_head(&cached, &alone);
            qk_plast_head_free(&alone);
            qk_plast_head_free(&cached);
        }
    }
    qk_plast_cache_free(cache);
    free(moved);
    free(other_q);
    free(other_k);
    planted_free(&p);
}
END_TEST

/* The instruction set changes no result: a head analysed with the scalar
 * kernels, with AVX2 and with AVX-512 (where the machine has them) gives
 * the same bits, in both covariance modes. */
START_TEST(test_isa_changes_nothing)
{
    planted p;
    small_head(&p);
    qk_plast_grid g = planted_grid(&p, 4);
    qk_plast_params par;
    small_head_params(&par);
    int before = qk_isa_use(QK_ISA_AVX512);
    for (int mode = 0; mode < 2; mode++) {
        par.cov = mode ? QK_PLAST_COV_FULL : QK_PLAST_COV_DIAG;
        qk_plast_head best, other;
        analyse_ok(&p, &g, &par, &best);
        for (int level = QK_ISA_SCALAR; level < QK_ISA_AVX512; level++) {
            qk_isa_use(level);
            analyse_ok(&p, &g, &par, &other);
            expect_same_head(&best, &other);
            qk_plast_head_free(&other);
            qk_isa_use(QK_ISA_AVX512);
        }
        qk_plast_head_free(&best);
    }
    qk_isa_use(before);
    planted_free(&p);
}
END_TEST

START_TEST(test_sampled_pairs_seeded)
{
    planted p;
    small_head(&p);
    qk_plast_grid g = planted_grid(&p, 4);
    qk_plast_params par;
    qk_plast_params_default(&par);
    par.min_pairs_per_bin = 8;
    par.pair_mode = QK_PLAST_PAIRS_SAMPLE;
    par.pairs_per_bin = 20;
    qk_plast_head a, b, c, exact;
    analyse_ok(&p, &g, &par, &a);
    analyse_ok(&p, &g, &par, &b);
    par.seed = 1;
    analyse_ok(&p, &g, &par, &c);
    par.pair_mode = QK_PLAST_PAIRS_EXACT;
    analyse_ok(&p, &g, &par, &exact);
    int differ = 0;
    for (int j = 0; j < g.n_bins; j++) {
        if (isnan(exact.bin_ap[j])) {
            ck_assert(isnan(a.bin_ap[j]));
            continue;
        }
        ck_assert(a.bin_ap[j] == b.bin_ap[j]); /* same seed, same draws */
        int64_t want = exact.bin_pairs[j] < 20 ? exact.bin_pairs[j] : 20;
        ck_assert_int_eq(a.bin_evals[j], want);
        differ += a.bin_ap[j] != c.bin_ap[j];
        /* a sample mean of PP values in [0, 1] near the exact mean */
        ck_assert(fabs(a.bin_ap[j] - exact.bin_ap[j]) < 0.35);
    }
    ck_assert_int_ge(differ, 10);
    qk_plast_head_free(&exact);
    qk_plast_head_free(&c);
    qk_plast_head_free(&b);
    qk_plast_head_free(&a);
    planted_free(&p);
}
END_TEST

START_TEST(test_subsample_rows)
{
    planted p;
    small_head(&p); /* 600 queries, 120 keys */
    qk_plast_grid g = planted_grid(&p, 4);
    qk_plast_params par;
    qk_plast_params_default(&par);
    par.min_pairs_per_bin = 8;
    par.max_tokens = 250;
    qk_plast_head a, b, c;
    analyse_ok(&p, &g, &par, &a);
    analyse_ok(&p, &g, &par, &b);
    par.seed = 9;
    analyse_ok(&p, &g, &par, &c);
    ck_assert_int_eq(a.n_q, 250);
    ck_assert_int_eq(a.n_k, 120); /* under the cap: all rows */
    int64_t in_bins = 0;
    for (int j = 0; j < g.n_bins; j++)
        in_bins += a.bin_queries[j];
    ck_assert_int_eq(in_bins, 250);
    ck_assert(a.s.ap_overall == b.s.ap_overall);
    ck_assert(a.q_beta_norm == b.q_beta_norm);
    ck_assert(a.q_beta_norm != c.q_beta_norm); /* another subset */
    qk_plast_head_free(&c);
    qk_plast_head_free(&b);
    qk_plast_head_free(&a);
    planted_free(&p);
}
END_TEST

/* Same-example pairs only (step 8), at head level with d = 1: keys [0], [1] of
 * example 0 and [100] of example 1, all before the query bin; queries 0, 1,
 * 2 at one position (beta = 0, alpha = 1, variance 1). Only the pair of
 * example 0 counts: m = -1, v = 1, PP = 0.5339351. */
START_TEST(test_same_example_pair)
{
    float qv[3] = {0, 1, 2}, kv[3] = {0, 1, 100};
    int32_t qt[3] = {15, 15, 15}, qe[3] = {0, 0, 1}, qb[3] = {1, 1, 1};
    int32_t kt[3] = {0, 1, 2}, ke[3] = {0, 0, 1}, kb[3] = {0, 0, 0};
    qk_plast_rows q = {3, qv, qt, qe, qb, NULL}, k = {3, kv, kt, ke, kb, NULL};
    qk_plast_grid g;
    qk_err err;
    ck_assert_int_eq(qk_plast_grid_init(&g, 10, 1, 20, 19, &err), 0);
    qk_plast_params par;
    qk_plast_params_default(&par);
    par.min_pairs_per_bin = 1;
    par.pair2d_min_count = 1;
    qk_plast_head h;
    qk_plast_head_init(&h, 1, &g);
    ck_assert_int_eq(qk_plast_analyse(&q, &k, 1, &g, &par, 0, 0, NULL, &h, &err), 0);
    ck_assert_double_eq(h.q_beta_norm, 0.0);
    ck_assert_double_eq_tol(h.alpha_pos, 1.0, 1e-15);
    ck_assert_double_eq_tol(h.sigma2_pos, 1.0, 1e-15);
    ck_assert_int_eq(h.bin_pairs[1], 1);
    ck_assert_int_eq(h.bin_queries[1], 3);
    ck_assert_double_eq_tol(h.bin_ap[1], 0.5339351, 5e-8);
    ck_assert_double_eq_tol(h.s.ap_overall, 0.5339351, 5e-8);
    ck_assert(isnan(h.bin_ap[0]));
    /* the cell: distance 1 -> 0, midpoint 15 - 0.5 -> 1 */
    ck_assert_int_eq(h.cell_evals[0 * g.n_cells + 1], 1);
    ck_assert_double_eq_tol(h.cell_ap[0 * g.n_cells + 1], 0.5339351, 5e-8);
    ck_assert_int_eq(h.n_key_pairs, 1);
    qk_plast_head_free(&h);
}
END_TEST

/* The position term: with symmetric content (every query q has a partner
 * 2 c - q at its position) the content means are exactly the drift, and
 * scaling the drift by lambda scales z: plasticity 1 at lambda = 0, then
 * falling monotonically towards 0. */
START_TEST(test_position_term_limits)
{
    planted base;
    planted_make(&base, 4, 512, 64, 5, 24, 300, 0.0, 0.0, 5);
    planted p = base;
    p.nq = 2 * base.nq;
    p.qv = malloc((size_t)p.nq * 4 * sizeof(float));
    p.qt = malloc((size_t)p.nq * sizeof(int32_t));
    p.qe = malloc((size_t)p.nq * sizeof(int32_t));
    p.qb = malloc((size_t)p.nq * sizeof(int32_t));
    qk_plast_grid g = planted_grid(&p, 4);
    qk_plast_params par;
    qk_plast_params_default(&par);
    par.min_pairs_per_bin = 8;
    const double lambda[5] = {0.0, 0.3, 3.0, 30.0, 3e5};
    double ap[5];
    for (int l = 0; l < 5; l++) {
        for (int64_t i = 0; i < base.nq; i++) {
            int32_t t = base.qt[i];
            for (int s = 0; s < 2; s++) {
                int64_t row = 2 * i + s;
                p.qt[row] = t;
                p.qe[row] = base.qe[i];
                p.qb[row] = base.qb[i];
                for (int c = 0; c < 4; c++) {
                    /* noise of 1/8 steps, exact in float */
                    double noise = (base.qv[i * 4 + c] > 0 ? 1 : -1) * 0.125 * (1 + i % 5);
                    double drift = c == 0 ? lambda[l] * t / 512.0 : 0.0;
                    p.qv[row * 4 + c] = (float)(drift + (s ? -noise : noise));
                }
            }
        }
        qk_plast_head h;
        analyse_ok(&p, &g, &par, &h);
        ap[l] = h.s.ap_overall;
        qk_plast_head_free(&h);
    }
    ck_assert_double_eq_tol(ap[0], 1.0, 1e-12);
    for (int l = 1; l < 5; l++)
        ck_assert_msg(ap[l] < ap[l - 1], "lambda %g: %g not below %g", lambda[l], ap[l],
                      ap[l - 1]);
    ck_assert_double_eq_tol(ap[4], 0.0, 0.01);
    free(p.qv);
    free(p.qt);
    free(p.qe);
    free(p.qb);
    planted_free(&base);
}
END_TEST

START_TEST(test_bad_rows_rejected)
{
    planted p;
    small_head(&p);
    qk_plast_grid g = planted_grid(&p, 4);
    qk_plast_params par;
    qk_plast_params_default(&par);
    qk_plast_rows q, k;
    planted_rows(&p, &q, &k);
    qk_plast_head h;
    qk_plast_head_init(&h, p.d, &g);
    qk_err err;
    p.qt[7] = 512; /* off the grid */
    ck_assert_int_eq(qk_plast_analyse(&q, &k, p.d, &g, &par, 0, 0, NULL, &h, &err), -1);
    ck_assert(strstr(err.msg, "query row 7") != NULL);
    p.qt[7] = 3;
    p.kv[4 * p.d + 2] = NAN;
    ck_assert_int_eq(qk_plast_analyse(&q, &k, p.d, &g, &par, 0, 0, NULL, &h, &err), -1);
    ck_assert(strstr(err.msg, "key row 4: component 2") != NULL);
    qk_plast_head_free(&h);
    planted_free(&p);
}
END_TEST

/* ---- Monte Carlo against the closed form --------------------------------------------- */

/* Draws q ~ N(M_b, C_b) of the reference model (Cholesky factor l) and
 * counts q.k1 > q.k2 for the bin's eligible pairs (k1 the earlier key). */
typedef struct mc_pairs {
    int n;
    int64_t *a, *b;
} mc_pairs;

static mc_pairs eligible_pairs(const planted *p, const qk_plast_grid *g, int bin)
{
    mc_pairs e = {0, malloc(sizeof(int64_t) * 100000), malloc(sizeof(int64_t) * 100000)};
    double start = qk_plast_bin_start(g, bin);
    for (int64_t i = 0; i < p->nk; i++)
        for (int64_t j = 0; j < p->nk; j++)
            if (i != j && p->ke[i] == p->ke[j] && p->kt[i] < start && p->kt[j] < start &&
                (p->kt[i] < p->kt[j] || (p->kt[i] == p->kt[j] && i < j))) {
                e.a[e.n] = i;
                e.b[e.n] = j;
                e.n++;
            }
    return e;
}

static void draw_query(qk_rng *rng, const double *mean, const double *chol, int d, double *q)
{
    double z[64];
    for (int c = 0; c < d; c++)
        z[c] = qk_rng_normal(rng);
    for (int i = 0; i < d; i++) {
        q[i] = mean[i];
        for (int c = 0; c <= i; c++)
            q[i] += chol[i * d + c] * z[c];
    }
}

static void monte_carlo_bin(int full)
{
    planted p;
    small_head(&p);
    qk_plast_grid g = planted_grid(&p, 4);
    qk_plast_params par;
    qk_plast_params_default(&par);
    par.min_pairs_per_bin = 8;
    par.cov = full ? QK_PLAST_COV_FULL : QK_PLAST_COV_DIAG;
    qk_plast_head h;
    analyse_ok(&p, &g, &par, &h);
    reference r;
    reference_compute(&r, &p, &g, full, 8);
    int bin = 20;
    ck_assert(!isnan(h.bin_ap[bin]));
    int d = p.d;
    double chol[64 * 64];
    memcpy(chol, r.cov + (size_t)bin * d * d, sizeof(double) * d * d);
    ck_assert_int_eq(LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', d, chol, d), 0);
    for (int i = 0; i < d; i++)
        for (int j = i + 1; j < d; j++)
            chol[i * d + j] = 0.0;
    const double *mean = r.mean + (size_t)bin * d;
    mc_pairs e = eligible_pairs(&p, &g, bin);
    ck_assert_int_eq(e.n, h.bin_pairs[bin]);
    qk_rng rng;
    uint64_t keys[2] = {2024, (uint64_t)full};
    qk_rng_seed(&rng, keys, 2);
    const int64_t total = 1000000;
    int64_t per_pair = total / e.n;
    double mean_p = 0.0, mean_pp_mc = 0.0, mean_p_mc = 0.0;
    for (int i = 0; i < e.n; i++) {
        const double *ka = r.krot + e.a[i] * d, *kb = r.krot + e.b[i] * d;
        /* the closed form of this pair */
        double m = 0.0, v = 0.0;
        for (int c = 0; c < d; c++) {
            double dc = ka[c] - kb[c];
            m += dc * mean[c];
            for (int a = 0; a < d; a++)
                v += (ka[a] - kb[a]) * r.cov[(size_t)bin * d * d + a * d + c] * dc;
        }
        mean_p += qk_plast_phi(m / sqrt(v)) / e.n;
        int64_t wins = 0;
        for (int64_t s = 0; s < per_pair; s++) {
            double q[64], s1 = 0.0, s2 = 0.0;
            draw_query(&rng, mean, chol, d, q);
            for (int c = 0; c < d; c++) {
                s1 += q[c] * ka[c];
                s2 += q[c] * kb[c];
            }
            wins += s1 > s2;
        }
        double phat = (double)wins / per_pair;
        mean_p_mc += phat / e.n;
        mean_pp_mc += 4.0 * phat * (1.0 - phat) / e.n;
    }
    /* the frequency of q.k1 > q.k2 over all triples, and the mean PP of the
     * bin as qk_plast_analyse computed it */
    if (getenv("QK_TEST_VERBOSE"))
        printf("Monte Carlo (%s, %d pairs): p %.5f vs %.5f, PP %.5f vs %.5f\n",
               full ? "full" : "diag", e.n, mean_p_mc, mean_p, mean_pp_mc, h.bin_ap[bin]);
    ck_assert_msg(fabs(mean_p_mc - mean_p) < 0.005, "p: MC %.5f vs closed form %.5f",
                  mean_p_mc, mean_p);
    ck_assert_msg(fabs(mean_pp_mc - h.bin_ap[bin]) < 0.005, "PP: MC %.5f vs closed form %.5f",
                  mean_pp_mc, h.bin_ap[bin]);
    /* not a trivial case: most pairs have p far from 1/2 */
    ck_assert(h.bin_ap[bin] < 0.8);
    free(e.a);
    free(e.b);
    reference_free(&r);
    qk_plast_head_free(&h);
    planted_free(&p);
}

START_TEST(test_monte_carlo_diag)
{
    monte_carlo_bin(0);
}
END_TEST

START_TEST(test_monte_carlo_full)
{
    monte_carlo_bin(1);
}
END_TEST

static Suite *plasticity_suite(void)
{
    Suite *s = suite_create("plasticity");
    TCase *tc = tcase_create("math");
    tcase_add_test(tc, test_pp_reference_values);
    tcase_add_test(tc, test_pp_symmetric_and_stable);
    tcase_add_test(tc, test_pp_degenerate_variance);
    tcase_add_test(tc, test_erfc_against_libm);
    tcase_add_test(tc, test_pp_against_libm_formula);
    tcase_add_test(tc, test_pp_y_against_libm);
    tcase_add_test(tc, test_erfc_batches_same_bits);
    tcase_add_test(tc, test_pp_kernels_same_bits);
    tcase_add_test(tc, test_isa_from_environment);
    tcase_add_test(tc, test_one_dimensional_pair);
    tcase_add_test(tc, test_regression_degenerate);
    tcase_add_test(tc, test_regression_line);
    tcase_add_test(tc, test_householder_maps_u_to_e1);
    tcase_add_test(tc, test_householder_identity_cases);
    tcase_add_test(tc, test_orientation_signs);
    tcase_add_test(tc, test_component_weights);
    tcase_add_test(tc, test_skew_kurt_and_ks);
    tcase_add_test(tc, test_ks_statistic_matches_full_sort);
    tcase_add_test(tc, test_ks_summary_matches_every_p);
    suite_add_tcase(s, tc);
    TCase *agg = tcase_create("aggregation");
    tcase_add_test(agg, test_profile_scalars_known_profile);
    tcase_add_test(agg, test_model_aggregation);
    suite_add_tcase(s, agg);
    TCase *head = tcase_create("head");
    tcase_set_timeout(head, 120);
    tcase_add_test(head, test_exact_diag_equals_brute_force);
    tcase_add_test(head, test_exact_diag_pairs_after_last_kept_bin);
    tcase_add_test(head, test_exact_full_equals_brute_force);
    tcase_add_test(head, test_floor_changes_nothing);
    tcase_add_test(head, test_cache_changes_nothing);
    tcase_add_test(head, test_isa_changes_nothing);
    tcase_add_test(head, test_sampled_pairs_seeded);
    tcase_add_test(head, test_subsample_rows);
    tcase_add_test(head, test_same_example_pair);
    tcase_add_test(head, test_position_term_limits);
    tcase_add_test(head, test_bad_rows_rejected);
    tcase_add_test(head, test_monte_carlo_diag);
    tcase_add_test(head, test_monte_carlo_full);
    suite_add_tcase(s, head);
    return s;
}

int main(void)
{
    return qk_test_run(plasticity_suite());
}
