/* Unit tests of the planar rotation model (src/lib/analysis/rotation*.c): the drift
 * lemma, orthonormality and exact identities, invariances, recovery of
 * planted heads, the angle, LDA and omega routines, degenerate heads (also
 * through the programs), the axes file and the model summary. */
#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qk/moments.h"
#include "qk/plasticity.h"
#include "qk/rng.h"
#include "qk/rotation.h"
#include "qk/rotation_tables.h"
#include "qk/simd.h"
#include "qk/stats.h"
#include "qk/store.h"
#include "qk/table.h"
#include "testutil.h"

#define TMP_DIR "build/tests/tmp/rotation"

/* ---- heads --------------------------------------------------------------------- */

/* A Haar-random orthogonal matrix: vector j (a column) is basis[j*d ...]. */
static double *random_basis(qk_rng *r, int d)
{
    double *a = malloc(sizeof(double) * d * d), tau[512];
    for (int i = 0; i < d * d; i++)
        a[i] = qk_rng_normal(r);
    ck_assert_int_eq(LAPACKE_dgeqrf(LAPACK_COL_MAJOR, d, d, a, d, tau), 0);
    double sign[512];
    for (int j = 0; j < d; j++)
        sign[j] = a[(size_t)j * d + j] < 0 ? -1.0 : 1.0;
    ck_assert_int_eq(LAPACKE_dorgqr(LAPACK_COL_MAJOR, d, d, d, a, d, tau), 0);
    for (int j = 0; j < d; j++)
        cblas_dscal(d, sign[j], a + (size_t)j * d, 1);
    return a;
}

/* Rows x = sum_j coef[j] basis_j for coefficient rows coef[n*d]. */
static void to_rows(const double *coef, int64_t n, int d, const double *basis, float *x)
{
    double *out = malloc(sizeof(double) * n * d);
    /* out = coef * B^T where B's columns are the basis vectors: B^T is
     * basis read row-major */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)n, d, d, 1.0, coef, d, basis, d,
                0.0, out, d);
    for (int64_t i = 0; i < n * d; i++)
        x[i] = (float)out[i];
    free(out);
}

/* Everything computed for one head. */
typedef struct analysed {
    int dim;
    qk_rot_head rot;
    qk_comp_head comp;
    double a[256], b[256];
    double *basis; /* (d-2) x d */
    qk_moments mq, mk, pooled;
} analysed;

static void analyse_opts(const head_data *h, const qk_rot_options *o, double tau, analysed *out)
{
    int d = h->dim;
    out->dim = d;
    qk_moments_init(&out->mq, d);
    qk_moments_init(&out->mk, d);
    qk_moments_init(&out->pooled, d);
    qk_moments_compute(&out->mq, h->q, h->tq, h->n_q);
    qk_moments_compute(&out->mk, h->k, h->tk, h->n_k);
    qk_rot_work w;
    qk_rot_work_init(&w, d);
    qk_rot_rows rq = {h->q, h->tq, h->n_q}, rk = {h->k, h->tk, h->n_k};
    qk_err err;
    ck_assert_msg(qk_rot_analyse(&rq, &rk, &out->mq, &out->mk, o, &w, &out->rot, &err) == 0,
                  "%s", err.msg);
    memcpy(out->a, w.a, sizeof(double) * d);
    memcpy(out->b, w.b, sizeof(double) * d);
    qk_moments_copy(&out->pooled, &w.pooled);
    qk_comp_work cw;
    qk_comp_work_init(&cw, d);
    ck_assert_msg(qk_comp_analyse(&rq, &rk, &w.pooled, w.a, w.b, tau, &cw, &out->comp, &err) == 0,
                  "%s", err.msg);
    out->basis = malloc(sizeof(double) * (d > 2 ? d - 2 : 1) * d);
    memcpy(out->basis, cw.basis, sizeof(double) * (d > 2 ? d - 2 : 0) * d);
    qk_comp_work_free(&cw);
    qk_rot_work_free(&w);
}

static void analyse(const head_data *h, analysed *out)
{
    qk_rot_options o;
    qk_rot_options_default(&o);
    analyse_opts(h, &o, QK_ROT_ACTIVE_TAU, out);
}

static void analysed_free(analysed *a)
{
    free(a->basis);
    qk_moments_free(&a->mq);
    qk_moments_free(&a->mk);
    qk_moments_free(&a->pooled);
}

/* Pearson r of y[n] with t[n] (two passes, double). */
static double pearson(const double *y, const double *t, int64_t n)
{
    double my = 0, mt = 0;
    for (int64_t i = 0; i < n; i++) {
        my += y[i];
        mt += t[i];
    }
    my /= n;
    mt /= n;
    double syy = 0, stt = 0, syt = 0;
    for (int64_t i = 0; i < n; i++) {
        syy += (y[i] - my) * (y[i] - my);
        stt += (t[i] - mt) * (t[i] - mt);
        syt += (y[i] - my) * (t[i] - mt);
    }
    return syt / sqrt(syy * stt);
}

/* Pearson r of the pooled projections x.v with position, straight from the
 * rows, independent of the moments code. */
static double row_corr(const head_data *h, const double *v)
{
    int d = h->dim;
    int64_t n = h->n_q + h->n_k;
    double *y = malloc(sizeof(double) * n), *t = malloc(sizeof(double) * n);
    for (int64_t i = 0; i < n; i++) {
        const float *x = i < h->n_q ? h->q + i * d : h->k + (i - h->n_q) * d;
        double s = 0.0;
        for (int j = 0; j < d; j++)
            s += x[j] * v[j];
        y[i] = s;
        t[i] = i < h->n_q ? h->tq[i] : h->tk[i - h->n_q];
    }
    double r = pearson(y, t, n);
    free(y);
    free(t);
    return r;
}

/* A generic head: drift along a random direction, a Q/K offset, noise of
 * decaying scale in a random orientation; positions uniform in [0, L). */
static void random_head(head_data *h, int d, int64_t n, double drift, double offset,
                        double noise, uint64_t seed)
{
    qk_rng r;
    seed_rng(&r, seed);
    head_alloc(h, d, n, n);
    double *basis = random_basis(&r, d);
    double *coef = malloc(sizeof(double) * n * d);
    for (int kind = 0; kind < 2; kind++) {
        int32_t *t = kind ? h->tk : h->tq;
        for (int64_t i = 0; i < n; i++) {
            t[i] = (int32_t)qk_rng_below(&r, 131072);
            double sd = noise;
            for (int j = 0; j < d; j++, sd *= 0.93)
                coef[i * d + j] = sd * qk_rng_normal(&r);
            coef[i * d] += drift * (kind ? 1.6 : 1.0) * (t[i] - 65536.0);
            coef[i * d + 1] += kind ? -offset : offset;
            coef[i * d + 2] += 0.3 * offset * (kind ? 1 : -1);
        }
        to_rows(coef, n, d, basis, kind ? h->k : h->q);
    }
    free(coef);
    free(basis);
}

/* ---- the drift lemma and exact properties ------------------------------------------- */

static void check_lemma(const head_data *h, const analysed *an, double bound)
{
    int d = h->dim;
    ck_assert_msg(an->comp.residual_pos_r < bound, "residual_pos_r = %g",
                  an->comp.residual_pos_r);
    double worst = fabs(row_corr(h, an->b));
    for (int j = 0; j < d - 2; j++) {
        double r = fabs(row_corr(h, an->basis + (size_t)j * d));
        worst = r > worst ? r : worst;
    }
    ck_assert_msg(worst < bound, "max |r| over b and the complement from the rows = %g", worst);
    /* and a itself does correlate */
    ck_assert_rel(fabs(row_corr(h, an->a)), an->rot.position_r, 1e-9);
}

START_TEST(lemma_random_drift)
{
    head_data h;
    random_head(&h, 32, 3000, 3e-5, 2.0, 2.0, 11);
    analysed an;
    analyse(&h, &an);
    ck_assert_int_eq(an.rot.flag_degenerate_a, 0);
    ck_assert(an.rot.position_r > 0.3);
    check_lemma(&h, &an, 1e-12);
    analysed_free(&an);
    head_free(&h);
}
END_TEST

START_TEST(lemma_pure_noise)
{
    /* isotropic noise and a drift far below the noise: a still carries all
     * the position covariance there is */
    head_data h;
    random_head(&h, 24, 2000, 1e-9, 0.0, 1.0, 12);
    analysed an;
    analyse(&h, &an);
    ck_assert_int_eq(an.rot.flag_degenerate_a, 0);
    ck_assert(an.rot.position_r < 0.2);
    check_lemma(&h, &an, 1e-12);
    analysed_free(&an);
    head_free(&h);
}
END_TEST

START_TEST(orthonormal_axes_and_fractions)
{
    head_data h;
    random_head(&h, 40, 2500, 2e-5, 3.0, 1.5, 13);
    analysed an;
    analyse(&h, &an);
    int d = h.dim;
    ck_assert(fabs(vec_dot(an.a, an.a, d) - 1.0) < 1e-12);
    ck_assert(fabs(vec_dot(an.b, an.b, d) - 1.0) < 1e-12);
    ck_assert(fabs(vec_dot(an.a, an.b, d)) < 1e-12);
    for (int j = 0; j < d - 2; j++) {
        const double *v = an.basis + (size_t)j * d;
        ck_assert(fabs(vec_dot(v, v, d) - 1.0) < 1e-12);
        ck_assert(fabs(vec_dot(v, an.a, d)) < 1e-12);
        ck_assert(fabs(vec_dot(v, an.b, d)) < 1e-12);
        for (int i = 0; i < j; i++)
            ck_assert(fabs(vec_dot(v, an.basis + (size_t)i * d, d)) < 1e-10);
    }
    ck_assert(an.rot.plane_var_fraction == an.rot.var_frac_a + an.rot.var_frac_b);
    /* the complement variance is what the plane leaves */
    ck_assert_rel(an.comp.complement_var, (1.0 - an.rot.plane_var_fraction) * an.rot.total_var,
                  1e-10);
    ck_assert_int_eq(an.comp.n_pairs, 19); /* min(30, (40 - 2) / 2) */
    double sum = 0.0;
    for (int i = 0; i < an.comp.n_pairs; i++) {
        sum += an.comp.pair[i].var_frac;
        if (i)
            ck_assert(an.comp.pair[i].var_frac <= an.comp.pair[i - 1].var_frac);
        ck_assert(an.comp.pair[i].cls_acc >= 0.0 && an.comp.pair[i].cls_acc <= 1.0);
    }
    ck_assert(sum <= 1.0 + 1e-12);
    ck_assert(sum > 0.9); /* 38 of 38 directions in 19 pairs: all of it */
    ck_assert(an.rot.b_centroid_cos > 0.9 && an.rot.b_centroid_cos <= 1.0);
    ck_assert(an.rot.mu_q_b >= an.rot.mu_k_b); /* the sign convention */
    analysed_free(&an);
    head_free(&h);
}
END_TEST

START_TEST(separation_identity)
{
    /* with N_Q = N_K: sep = (2 var_frac_b - cv_b / V) / (1 + |m|^2 / 4V) */
    for (uint64_t seed = 20; seed < 23; seed++) {
        head_data h;
        random_head(&h, 16, 1500, 2e-5, 4.0, 1.0 + seed % 2, seed);
        analysed an;
        analyse(&h, &an);
        double m2 = 0.0;
        for (int i = 0; i < h.dim; i++)
            m2 += pow(an.mq.mean[i] - an.mk.mean[i], 2);
        double v = an.rot.total_var;
        double rhs = (2 * an.rot.var_frac_b - an.rot.content_var_b / v) / (1 + m2 / (4 * v));
        ck_assert_msg(fabs(an.rot.separation_strength - rhs) < 1e-9, "%.17g vs %.17g",
                      an.rot.separation_strength, rhs);
        analysed_free(&an);
        head_free(&h);
    }
}
END_TEST

/* ---- invariances ------------------------------------------------------------------ */

/* The scalar metrics compared by the invariance tests. */
static void scalars(const qk_rot_head *r, double *v)
{
    const double x[] = {r->position_r, r->r_q_a, r->r_k_a, r->alpha_q, r->alpha_k, r->mu_q_a,
                        r->mu_k_a, r->mu_q_b, r->mu_k_b, r->bias_strength,
                        r->separation_strength, r->var_frac_a, r->var_frac_b,
                        r->content_var_b, r->total_var, r->b_centroid_cos, r->resid_sep_frac,
                        r->omega.lin_r_squared_w};
    memcpy(v, x, sizeof x);
}
#define N_SCALARS 18

/* Moments transformed exactly: mean -> U mean + g, cov -> U S U^T, g_t -> U g_t. */
static void transform_moments(const qk_moments *in, const double *u, const double *shift,
                              qk_moments *out)
{
    int d = in->dim;
    double *tmp = malloc(sizeof(double) * d * d);
    out->n = in->n;
    out->pos_mean = in->pos_mean;
    out->pos_var = in->pos_var;
    cblas_dgemv(CblasRowMajor, CblasNoTrans, d, d, 1.0, u, d, in->mean, 1, 0.0, out->mean, 1);
    cblas_dgemv(CblasRowMajor, CblasNoTrans, d, d, 1.0, u, d, in->cov_pos, 1, 0.0, out->cov_pos, 1);
    for (int i = 0; i < d && shift; i++)
        out->mean[i] += shift[i];
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, d, d, 1.0, u, d, in->cov, d, 0.0,
                tmp, d);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, d, d, d, 1.0, tmp, d, u, d, 0.0,
                out->cov, d);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < i; j++)
            out->cov[i * d + j] = out->cov[j * d + i] = 0.5 * (out->cov[i * d + j] + out->cov[j * d + i]);
    free(tmp);
}

static void moment_metrics(const qk_moments *mq, const qk_moments *mk, qk_rot_head *out,
                           double *a, double *b)
{
    int d = mq->dim;
    qk_rot_options o;
    qk_rot_options_default(&o);
    qk_rot_work w;
    qk_rot_work_init(&w, d);
    qk_err err;
    memset(out, 0, sizeof *out);
    ck_assert_msg(qk_rot_axes(mq, mk, &o, &w, out, &err) == 0, "%s", err.msg);
    qk_rot_metrics(mq, mk, &w.pooled, w.a, w.b, w.scratch, out);
    if (a)
        memcpy(a, w.a, sizeof(double) * d);
    if (b)
        memcpy(b, w.b, sizeof(double) * d);
    qk_rot_work_free(&w);
}

START_TEST(invariance_orthogonal)
{
    head_data h;
    random_head(&h, 24, 2000, 3e-5, 3.0, 1.5, 30);
    analysed an;
    analyse(&h, &an);
    qk_rng r;
    seed_rng(&r, 31);
    double *u = random_basis(&r, h.dim); /* orthogonal, read row-major it is U^T: also orthogonal */
    double v0[N_SCALARS], v1[N_SCALARS];
    scalars(&an.rot, v0);

    /* exactly, on the moments */
    qk_moments tq, tk;
    qk_moments_init(&tq, h.dim);
    qk_moments_init(&tk, h.dim);
    transform_moments(&an.mq, u, NULL, &tq);
    transform_moments(&an.mk, u, NULL, &tk);
    qk_rot_head moved;
    moment_metrics(&tq, &tk, &moved, NULL, NULL);
    moved.omega = an.rot.omega;
    scalars(&moved, v1);
    for (int i = 0; i < N_SCALARS; i++)
        ck_assert_msg(fabs(v1[i] - v0[i]) <= 1e-9 * fmax(1.0, fabs(v0[i])),
                      "metric %d: %.17g vs %.17g", i, v1[i], v0[i]);

    /* on the rows (float32 rounding of the rotated rows: 1e-6) */
    head_data h2;
    head_alloc(&h2, h.dim, h.n_q, h.n_k);
    memcpy(h2.tq, h.tq, sizeof(int32_t) * h.n_q);
    memcpy(h2.tk, h.tk, sizeof(int32_t) * h.n_k);
    for (int kind = 0; kind < 2; kind++) {
        const float *src = kind ? h.k : h.q;
        float *dst = kind ? h2.k : h2.q;
        for (int64_t i = 0; i < h.n_q; i++)
            for (int j = 0; j < h.dim; j++) {
                double s = 0.0;
                for (int l = 0; l < h.dim; l++)
                    s += u[j * h.dim + l] * src[i * h.dim + l];
                dst[i * h.dim + j] = (float)s;
            }
    }
    analysed an2;
    analyse(&h2, &an2);
    scalars(&an2.rot, v1);
    for (int i = 0; i < N_SCALARS; i++)
        ck_assert_msg(fabs(v1[i] - v0[i]) <= 1e-5 * fmax(1.0, fabs(v0[i])),
                      "metric %d on rotated rows: %.17g vs %.17g", i, v1[i], v0[i]);
    ck_assert(fabs(an2.rot.alpha_k - an.rot.alpha_k) <= 1e-5 * fabs(an.rot.alpha_k));
    ck_assert(fabs(an2.rot.omega.omega - an.rot.omega.omega) <= 1e-3 * an.rot.omega.omega);
    ck_assert(fabs(an2.comp.complement_var - an.comp.complement_var) <= 1e-5 * an.comp.complement_var);
    ck_assert(an2.comp.residual_pos_r < 1e-12);
    analysed_free(&an2);
    head_free(&h2);
    qk_moments_free(&tq);
    qk_moments_free(&tk);
    free(u);
    analysed_free(&an);
    head_free(&h);
}
END_TEST

START_TEST(invariance_translation)
{
    head_data h;
    random_head(&h, 20, 2000, 3e-5, 3.0, 1.5, 32);
    analysed an;
    analyse(&h, &an);
    int d = h.dim;
    double g[64] = {0}, eye[64 * 64] = {0};
    qk_rng r;
    seed_rng(&r, 33);
    for (int i = 0; i < d; i++) {
        g[i] = 5.0 * qk_rng_normal(&r);
        eye[i * d + i] = 1.0;
    }
    qk_moments tq, tk;
    qk_moments_init(&tq, d);
    qk_moments_init(&tk, d);
    transform_moments(&an.mq, eye, g, &tq);
    transform_moments(&an.mk, eye, g, &tk);
    qk_rot_head moved;
    double a[64], b[64];
    moment_metrics(&tq, &tk, &moved, a, b);
    const qk_rot_head *o = &an.rot;
    ck_assert(fabs(vec_dot(a, an.a, d) - 1.0) < 1e-12);
    ck_assert(fabs(vec_dot(b, an.b, d) - 1.0) < 1e-12);
    double same[][2] = {{moved.separation_strength, o->separation_strength},
                        {moved.r_q_a, o->r_q_a}, {moved.r_k_a, o->r_k_a},
                        {moved.alpha_q, o->alpha_q}, {moved.alpha_k, o->alpha_k},
                        {moved.var_frac_a, o->var_frac_a}, {moved.var_frac_b, o->var_frac_b},
                        {moved.content_var_b, o->content_var_b},
                        {moved.position_r, o->position_r}};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
        ck_assert_msg(fabs(same[i][0] - same[i][1]) <= 1e-12 * fmax(1.0, fabs(same[i][1])),
                      "metric %zu: %.17g vs %.17g", i, same[i][0], same[i][1]);
    /* the raw means move by g.a and g.b */
    ck_assert(fabs(moved.mu_q_a - (o->mu_q_a + vec_dot(g, an.a, d))) < 1e-9);
    ck_assert(fabs(moved.mu_k_a - (o->mu_k_a + vec_dot(g, an.a, d))) < 1e-9);
    ck_assert(fabs(moved.mu_q_b - (o->mu_q_b + vec_dot(g, an.b, d))) < 1e-9);
    ck_assert(fabs(moved.mu_k_b - (o->mu_k_b + vec_dot(g, an.b, d))) < 1e-9);
    ck_assert(fabs(moved.mu_q_a - o->mu_q_a) > 0.1); /* the shift is not trivial */
    qk_moments_free(&tq);
    qk_moments_free(&tk);
    analysed_free(&an);
    head_free(&h);
}
END_TEST

START_TEST(invariance_flip_a)
{
    head_data h;
    random_head(&h, 20, 2000, 3e-5, 3.0, 1.5, 34);
    analysed an;
    analyse(&h, &an);
    int d = h.dim;
    double a[64], scratch[128];
    for (int i = 0; i < d; i++)
        a[i] = -an.a[i];
    qk_rot_head flipped = an.rot;
    qk_rot_metrics(&an.mq, &an.mk, &an.pooled, a, an.b, scratch, &flipped);
    ck_assert(flipped.bias_strength == an.rot.bias_strength);
    ck_assert(flipped.mu_q_a == -an.rot.mu_q_a);
    ck_assert(flipped.alpha_k == -an.rot.alpha_k);
    ck_assert(flipped.r_q_a == -an.rot.r_q_a);
    ck_assert(flipped.position_r == an.rot.position_r);
    ck_assert(an.rot.alpha_k > 0.0 && an.rot.r_k_a > 0.0); /* a points along the drift */
    analysed_free(&an);
    head_free(&h);
}
END_TEST

START_TEST(centroid_mode)
{
    head_data h;
    random_head(&h, 20, 2000, 3e-5, 3.0, 1.5, 35);
    qk_rot_options o;
    qk_rot_options_default(&o);
    o.b_mode = QK_ROT_B_CENTROID;
    analysed an;
    analyse_opts(&h, &o, QK_ROT_ACTIVE_TAU, &an);
    ck_assert(an.rot.resid_sep_frac < 1e-20);
    ck_assert(fabs(an.rot.b_centroid_cos - 1.0) < 1e-12);
    ck_assert_int_eq(an.rot.flag_degenerate_b, 0);
    ck_assert(an.comp.residual_pos_r < 1e-12);
    analysed_free(&an);
    head_free(&h);

    /* with isotropic within-class covariance off a, eigen and centroid agree:
     * moments made by hand, S = sigma^2 I + beta a a^T */
    int d = 12;
    qk_moments mq, mk;
    qk_moments_init(&mq, d);
    qk_moments_init(&mk, d);
    qk_rng r;
    seed_rng(&r, 36);
    double dir[12], norm = 0.0;
    for (int i = 0; i < d; i++) {
        dir[i] = qk_rng_normal(&r);
        norm += dir[i] * dir[i];
    }
    for (int i = 0; i < d; i++)
        dir[i] /= sqrt(norm);
    qk_moments *kinds[2] = {&mq, &mk};
    for (int c = 0; c < 2; c++) {
        qk_moments *m = kinds[c];
        m->n = 1000;
        m->pos_mean = 5000.0;
        m->pos_var = 1e7;
        for (int i = 0; i < d; i++) {
            m->mean[i] = (c ? -1.0 : 1.0) * (1.0 + 0.3 * i) + 0.1 * qk_rng_normal(&r);
            m->cov_pos[i] = (c ? 1.5 : 1.0) * 300.0 * dir[i];
            for (int j = 0; j < d; j++)
                m->cov[i * d + j] = (i == j ? 2.0 : 0.0) + 0.5 * dir[i] * dir[j];
        }
    }
    double b_eigen[12], b_centroid[12];
    qk_rot_work w;
    qk_rot_work_init(&w, d);
    qk_rot_head out;
    qk_err err;
    ck_assert(qk_rot_axes(&mq, &mk, &o, &w, &out, &err) == 0);
    memcpy(b_centroid, w.b, sizeof b_centroid);
    o.b_mode = QK_ROT_B_EIGEN;
    ck_assert(qk_rot_axes(&mq, &mk, &o, &w, &out, &err) == 0);
    memcpy(b_eigen, w.b, sizeof b_eigen);
    for (int i = 0; i < d; i++)
        ck_assert_msg(fabs(b_eigen[i] - b_centroid[i]) < 1e-10, "b[%d]: %.17g vs %.17g", i,
                      b_eigen[i], b_centroid[i]);
    qk_rot_work_free(&w);
    qk_moments_free(&mq);
    qk_moments_free(&mk);
}
END_TEST

/* ---- recovery of planted heads ------------------------------------------------------------ */

typedef struct preset {
    const char *name;
    double alpha_q, alpha_k, r_q, r_k, mu_q_a, mu_k_a, cv_b, delta_b, t_perp;
} preset;

/* Rows per kind: at 8000 the expected angle between a and u is about 0.04
 * rad (cos about 0.999 on average), so cos >= 0.999 would fail half of the
 * time; at 20000 it is about 0.028 rad (cos 0.9996). */
#define PLANTED_ROWS 20000
#define PLANTED_L 131072
#define PLANTED_D 128

static void planted_head(const preset *p, uint64_t seed, head_data *h, double *u, double *s)
{
    int d = PLANTED_D;
    int64_t n = PLANTED_ROWS;
    qk_rng r;
    seed_rng(&r, seed);
    head_alloc(h, d, n, n);
    double *basis = random_basis(&r, d);
    memcpy(u, basis, sizeof(double) * d);
    memcpy(s, basis + d, sizeof(double) * d);
    double lam[PLANTED_D], total = 0.0;
    for (int j = 2; j < d; j++)
        total += lam[j] = pow(j - 1, -0.5);
    for (int j = 2; j < d; j++)
        lam[j] *= p->t_perp / total;
    double sd_t = sqrt(((double)PLANTED_L * PLANTED_L - 1.0) / 12.0);
    for (int64_t i = 0; i < n; i++) /* identical position multisets */
        h->tq[i] = h->tk[i] = (int32_t)qk_rng_below(&r, PLANTED_L);
    double *coef = malloc(sizeof(double) * n * d);
    for (int kind = 0; kind < 2; kind++) {
        double alpha = kind ? p->alpha_k : p->alpha_q, rr = kind ? p->r_k : p->r_q;
        double mu_a = kind ? p->mu_k_a : p->mu_q_a;
        double mu_b = (kind ? -0.5 : 0.5) * p->delta_b;
        double s_a = alpha * sd_t * sqrt(1.0 / (rr * rr) - 1.0);
        for (int64_t i = 0; i < n; i++) {
            double *c = coef + i * d;
            double tt = h->tq[i] - 0.5 * (PLANTED_L - 1);
            c[0] = mu_a + alpha * tt + s_a * qk_rng_normal(&r);
            c[1] = mu_b + sqrt(p->cv_b) * qk_rng_normal(&r);
            for (int j = 2; j < d; j++)
                c[j] = sqrt(lam[j]) * qk_rng_normal(&r);
        }
        to_rows(coef, n, d, basis, kind ? h->k : h->q);
    }
    free(coef);
    free(basis);
}

/* The population values of a planted head (N_Q = N_K, positions stratified):
 * what the metrics recover at large N. */
typedef struct truth {
    double position_r, var_frac_a, var_frac_b, separation, bias;
} truth;

static truth planted_truth(const preset *p)
{
    double sd_t = sqrt(((double)PLANTED_L * PLANTED_L - 1.0) / 12.0);
    double dq = p->alpha_q * sd_t, dk = p->alpha_k * sd_t;
    double A = dq * dq / (p->r_q * p->r_q) + dk * dk / (p->r_k * p->r_k);
    double da = p->mu_q_a - p->mu_k_a, db = p->delta_b;
    double va = 0.5 * A + 0.25 * da * da, vb = p->cv_b + 0.25 * db * db;
    double v = va + vb + p->t_perp;
    truth t = {0.5 * (dq + dk) / sqrt(va), va / v, vb / v,
               (2 * p->cv_b + db * db) / (A + 2 * p->cv_b + 2 * p->t_perp + da * da + db * db),
               p->mu_q_a * p->alpha_k};
    return t;
}

static void check_close(const char *what, double got, double want, double tol)
{
    ck_assert_msg(fabs(got - want) <= tol, "%s: %.9g, planted %.9g (tolerance %g)", what, got,
                  want, tol);
}

static void recover_preset(const preset *p, uint64_t seed)
{
    head_data h;
    double u[PLANTED_D], s[PLANTED_D];
    planted_head(p, seed, &h, u, s);
    analysed an;
    analyse(&h, &an);
    const qk_rot_head *r = &an.rot;
    truth t = planted_truth(p);
    double cos_a = vec_dot(an.a, u, PLANTED_D), cos_b = vec_dot(an.b, s, PLANTED_D);
    ck_assert_msg(cos_a >= 0.999, "%s: cos(a, u) = %.6f", p->name, cos_a);
    ck_assert_msg(cos_b >= 0.999, "%s: cos(b, s) = %.6f", p->name, cos_b);
    check_close("alpha_k", r->alpha_k, p->alpha_k, 0.02 * p->alpha_k);
    check_close("alpha_q", r->alpha_q, p->alpha_q, 0.03 * p->alpha_q);
    check_close("mu_q_a", r->mu_q_a, p->mu_q_a, 0.02 * fabs(p->mu_q_a));
    check_close("mu_k_a", r->mu_k_a, p->mu_k_a, 0.15);
    check_close("mu_q_b", r->mu_q_b, 0.5 * p->delta_b, 0.15);
    check_close("mu_k_b", r->mu_k_b, -0.5 * p->delta_b, 0.15);
    ck_assert(r->bias_strength > 0.0);
    check_close("bias_strength", r->bias_strength, t.bias, 0.03 * t.bias);
    check_close("r_q_a", r->r_q_a, p->r_q, 0.01);
    check_close("r_k_a", r->r_k_a, p->r_k, 0.01);
    check_close("position_r", r->position_r, t.position_r, 0.01);
    check_close("var_frac_a", r->var_frac_a, t.var_frac_a, 0.01);
    check_close("var_frac_b", r->var_frac_b, t.var_frac_b, 0.01);
    check_close("separation_strength", r->separation_strength, t.separation, 0.01);
    check_close("content_var_b", r->content_var_b, p->cv_b, 0.05 * p->cv_b);
    ck_assert(an.comp.residual_pos_r < 1e-12);
    /* the complement holds no rotation: nothing active beyond noise */
    ck_assert_msg(an.comp.max_abs_angle_r < 0.05, "max |angle_r_best| %g",
                  an.comp.max_abs_angle_r);
    analysed_free(&an);
    head_free(&h);
}

/* Planted heads of the three cross-model families, one preset each: slopes,
 * correlations and cluster means on a, the variance and offset on b and the
 * variance of the complement. */
static const preset presets[] = {
    {"llama3.2-3b", 5.5e-5, 8.9e-5, 0.81, 0.90, 7, -7, 9, 20.5, 227},
    {"qwen3-8b", 7.06e-5, 1.48e-4, 0.754, 0.895, 6, -4, 6, 18.9, 316},
    {"ministral3-8b", 6.6e-5, 6.6e-5, 0.86, 0.834, 5, -5, 6, 16.3, 206},
};

START_TEST(recovery_planted)
{
    recover_preset(&presets[_i], 100 + (uint64_t)_i);
}
END_TEST

START_TEST(planted_truth_matches_presets)
{
    /* the truth formulas give the expected population values of the presets */
    truth t = planted_truth(&presets[0]);
    ck_assert(fabs(t.position_r - 0.354) < 0.002);
    ck_assert(fabs(t.var_frac_a - 0.148) < 0.002);
    ck_assert(fabs(t.var_frac_b - 0.285) < 0.002);
    ck_assert(fabs(t.separation - 0.395) < 0.002);
    t = planted_truth(&presets[1]);
    ck_assert(fabs(t.position_r - 0.580) < 0.002);
    ck_assert(fabs(t.separation - 0.320) < 0.002);
}
END_TEST

/* ---- planted rotation planes in the complement --------------------------------------- */

/* Best-cut Pearson r by brute force: wrap theta - psi into (-pi, pi] at
 * each of the 72 cuts and correlate (independent of qk_comp_angle_r). */
static double brute_best_r(const double *theta, const double *t, int64_t n, double *raw)
{
    double *w = malloc(sizeof(double) * n), best = 0.0;
    for (int j = 0; j < QK_ROT_ANGLE_CUTS; j++) {
        double psi = 2 * M_PI * j / QK_ROT_ANGLE_CUTS;
        for (int64_t i = 0; i < n; i++)
            w[i] = theta[i] - psi <= -M_PI ? theta[i] - psi + 2 * M_PI : theta[i] - psi;
        double r = pearson(w, t, n);
        if (j == 0 && raw)
            *raw = r;
        if (fabs(r) > fabs(best))
            best = r;
    }
    free(w);
    return best;
}

#define PLANES_L 131072.0
#define N_PLANES 2
static const double plane_radius[N_PLANES] = {11.0, 0.8};
static const double plane_turns[N_PLANES] = {0.8, 20.0};
static const double plane_phase[N_PLANES] = {0.7, 4.0};

/* A head whose complement holds an arc (0.8 turns over the context) and a
 * fast ring (20 turns), each a plane shared by Q and K, over a strong
 * linear drift and a Q/K separation. One arc only: two arcs are smooth
 * functions of position both, hence correlated, and the principal
 * directions would mix them; the ring is all but uncorrelated with the
 * arc. The radii keep the planes' principal variances apart (the arc's
 * smaller one above the ring's), so that the principal pairs are the
 * planes. */
static void planes_head(head_data *h, uint64_t seed)
{
    int d = 24;
    int64_t n = 8000;
    qk_rng r;
    seed_rng(&r, seed);
    head_alloc(h, d, n, n);
    double *basis = random_basis(&r, d);
    double *coef = malloc(sizeof(double) * n * d);
    for (int kind = 0; kind < 2; kind++) {
        int32_t *t = kind ? h->tk : h->tq;
        for (int64_t i = 0; i < n; i++) {
            t[i] = (int32_t)qk_rng_below(&r, (uint64_t)PLANES_L);
            double *c = coef + i * d;
            c[0] = 8e-4 * (t[i] - 0.5 * PLANES_L) + qk_rng_normal(&r);
            c[1] = (kind ? -8.0 : 8.0) + qk_rng_normal(&r);
            for (int p = 0; p < N_PLANES; p++) {
                double ang = 2 * M_PI * plane_turns[p] * t[i] / PLANES_L + plane_phase[p];
                c[2 + 2 * p] = plane_radius[p] * cos(ang) + 0.2 * qk_rng_normal(&r);
                c[3 + 2 * p] = plane_radius[p] * sin(ang) + 0.2 * qk_rng_normal(&r);
            }
            for (int j = 2 + 2 * N_PLANES; j < d; j++)
                c[j] = 0.2 * qk_rng_normal(&r);
        }
        to_rows(coef, n, d, basis, kind ? h->k : h->q);
    }
    free(coef);
    free(basis);
}

/* The |angle_r_best| a plane's noise-free arc must show in the complement.
 * By the drift lemma every complement coordinate has zero pooled linear
 * covariance with position, so the complement sees the arc with its
 * straight-line trend in t removed (least squares on the pooled rows), and
 * measures angles about the centroid. */
static double detrended_arc_r(const head_data *h, int p)
{
    int64_t n = h->n_q + h->n_k;
    double *x = malloc(sizeof(double) * n), *y = malloc(sizeof(double) * n);
    double *t = malloc(sizeof(double) * n), *theta = malloc(sizeof(double) * n);
    double mx = 0, my = 0, mt = 0;
    for (int64_t i = 0; i < n; i++) {
        t[i] = i < h->n_q ? h->tq[i] : h->tk[i - h->n_q];
        double ang = 2 * M_PI * plane_turns[p] * t[i] / PLANES_L + plane_phase[p];
        x[i] = plane_radius[p] * cos(ang);
        y[i] = plane_radius[p] * sin(ang);
        mx += x[i];
        my += y[i];
        mt += t[i];
    }
    mx /= n;
    my /= n;
    mt /= n;
    double stt = 0, sxt = 0, syt = 0;
    for (int64_t i = 0; i < n; i++) {
        stt += (t[i] - mt) * (t[i] - mt);
        sxt += (x[i] - mx) * (t[i] - mt);
        syt += (y[i] - my) * (t[i] - mt);
    }
    for (int64_t i = 0; i < n; i++) {
        double u = x[i] - mx - sxt / stt * (t[i] - mt), w = y[i] - my - syt / stt * (t[i] - mt);
        theta[i] = atan2(w, u);
    }
    double r = brute_best_r(theta, t, n, NULL);
    free(x);
    free(y);
    free(t);
    free(theta);
    return fabs(r);
}

START_TEST(planted_planes_active)
{
    head_data h;
    planes_head(&h, 40);
    analysed an;
    analyse(&h, &an);
    const qk_comp_head *c = &an.comp;
    /* pair 0 is the arc, pair 1 the ring: each measured as the detrended
     * plane predicts (the 5-degree cut grid and the noise allow 0.03) */
    for (int p = 0; p < N_PLANES; p++) {
        double want = detrended_arc_r(&h, p), got = fabs(c->pair[p].angle_r_best);
        ck_assert_msg(fabs(got - want) < 0.03, "plane %d: |angle_r_best| %g, predicted %g", p,
                      got, want);
        ck_assert_msg(fabs(c->pair[p].cls_acc - 0.5) < 0.03, "cls_acc[%d] %g", p,
                      c->pair[p].cls_acc);
    }
    ck_assert(fabs(c->pair[0].angle_r_best) >= 0.2);
    ck_assert(fabs(c->pair[1].angle_r_best) < 0.1);
    ck_assert(c->pair[1].radial_cv < 0.3); /* a ring, not a blob */
    for (int i = N_PLANES; i < c->n_pairs; i++) { /* noise pairs: Gaussian blobs */
        ck_assert_msg(fabs(c->pair[i].angle_r_best) < 0.06, "pair %d: %g", i,
                      c->pair[i].angle_r_best);
        ck_assert_msg(fabs(c->pair[i].radial_cv - 0.52) < 0.05, "radial_cv[%d] %g", i,
                      c->pair[i].radial_cv);
    }
    ck_assert_int_eq(c->n_active, 1);
    ck_assert_int_eq(c->n_active_high, fabs(c->pair[0].angle_r_best) >= 0.3);
    ck_assert(c->active_var_frac == c->pair[0].var_frac);
    ck_assert(c->pair[0].var_frac > 0.9);
    ck_assert(c->max_abs_angle_r == fabs(c->pair[0].angle_r_best));
    ck_assert(c->ring_cls_acc == c->pair[0].cls_acc);
    ck_assert(c->residual_pos_r < 1e-12);
    analysed_free(&an);
    head_free(&h);
}
END_TEST

/* Pair metrics of the planted-planes head (pair 0 an arc) against the same
 * metrics straight from the rows: coordinates by plain loops, libm's
 * atan2, the angle correlation at each cut by wrapping, the radii in two
 * passes, qk_comp_lda_balanced. The pairs go through the library four at
 * a time. */
START_TEST(complement_pairs_match_rows)
{
    head_data h;
    planes_head(&h, 41);
    analysed an;
    analyse(&h, &an);
    int d = h.dim;
    int64_t n = h.n_q + h.n_k;
    ck_assert_int_eq(an.comp.n_pairs, 11); /* three groups, the last with a repeated lane */
    ck_assert(fabs(an.comp.pair[0].angle_r_best) > 0.2); /* the arc */
    double *u = malloc(sizeof(double) * n), *w = malloc(sizeof(double) * n);
    double *theta = malloc(sizeof(double) * n), *t = malloc(sizeof(double) * n);
    for (int p = 0; p < an.comp.n_pairs; p++) {
        const double *vu = an.basis + (size_t)(2 * p) * d, *vw = vu + d;
        double mean_rho = 0.0;
        for (int64_t i = 0; i < n; i++) {
            const float *x = i < h.n_q ? h.q + i * d : h.k + (i - h.n_q) * d;
            double a = 0.0, b = 0.0;
            for (int j = 0; j < d; j++) {
                a += (x[j] - an.pooled.mean[j]) * vu[j];
                b += (x[j] - an.pooled.mean[j]) * vw[j];
            }
            u[i] = a;
            w[i] = b;
            theta[i] = atan2(b, a);
            t[i] = i < h.n_q ? h.tq[i] : h.tk[i - h.n_q];
            mean_rho += sqrt(a * a + b * b) / n;
        }
        double var_rho = 0.0;
        for (int64_t i = 0; i < n; i++)
            var_rho += pow(sqrt(u[i] * u[i] + w[i] * w[i]) - mean_rho, 2) / n;
        const qk_comp_pair *got = &an.comp.pair[p];
        double raw, best = brute_best_r(theta, t, n, &raw);
        ck_assert_msg(fabs(got->angle_r_best - best) < 1e-12, "pair %d: angle_r_best %.17g, "
                      "from the rows %.17g", p, got->angle_r_best, best);
        ck_assert_msg(fabs(got->angle_r - raw) < 1e-12, "pair %d: angle_r %.17g, rows %.17g", p,
                      got->angle_r, raw);
        ck_assert_rel(got->radial_cv, sqrt(var_rho) / mean_rho, 1e-12);
        ck_assert_rel(got->cls_acc, qk_comp_lda_balanced(u, w, h.n_q, u + h.n_q, w + h.n_q,
                                                         h.n_k), 1e-12);
    }
    free(u);
    free(w);
    free(theta);
    free(t);
    analysed_free(&an);
    head_free(&h);
}
END_TEST

/* ---- the angle, LDA and omega routines ------------------------------------------------ */

/* theta = 2 pi k t / L + offset + noise, wrapped into (-pi, pi]. */
static double angle_best(double k, double offset, double noise, double *raw)
{
    int64_t n = 16000;
    double *theta = malloc(sizeof(double) * n), *t = malloc(sizeof(double) * n), cut;
    qk_rng r;
    seed_rng(&r, 50);
    for (int64_t i = 0; i < n; i++) {
        t[i] = (double)qk_rng_below(&r, 131072);
        double x = 2 * M_PI * k * t[i] / 131072 + offset + noise * qk_rng_normal(&r);
        theta[i] = atan2(sin(x), cos(x));
    }
    double best = qk_comp_angle_r(theta, t, n, raw, &cut);
    ck_assert(cut >= 0.0 && cut < 2 * M_PI);
    free(theta);
    free(t);
    return best;
}

START_TEST(angle_routine)
{
    double raw;
    const double turns[] = {1, 2, 3, 5, 10};
    for (size_t i = 0; i < sizeof turns / sizeof turns[0]; i++) {
        double r = angle_best(turns[i], 0.0, 0.01, &raw);
        ck_assert_msg(fabs(r - 1.0 / turns[i]) < 0.03, "%g turns: %g", turns[i], r);
    }
    double arc = angle_best(0.5, 0.0, 0.01, &raw);
    ck_assert_msg(arc > 0.98, "arc: %g", arc);
    arc = angle_best(0.3, 1.0, 0.01, &raw);
    ck_assert_msg(arc > 0.98, "arc: %g", arc);
    angle_best(1.0, 0.3, 0.0, &raw);
    ck_assert_msg(fabs(raw + 0.49) < 0.01, "raw angle_r, one turn, offset 0.3: %g", raw);
    /* a decreasing angle gives a negative r */
    ck_assert(angle_best(-0.5, 0.0, 0.01, &raw) < -0.98);
    /* uniform angles: noise floor of the best cut (about 0.03 at N = 16000) */
    ck_assert(fabs(angle_best(0.0, 0.0, 100.0, &raw)) < 0.05);
}
END_TEST

START_TEST(angle_routine_matches_brute_force)
{
    /* the one-pass cut sums against wrapping and correlating at each cut */
    int64_t n = 3000;
    double *theta = malloc(sizeof(double) * n), *t = malloc(sizeof(double) * n);
    qk_rng r;
    seed_rng(&r, 51);
    for (int64_t i = 0; i < n; i++) {
        t[i] = (double)qk_rng_below(&r, 4096);
        double x = 2 * M_PI * 1.7 * t[i] / 4096 + 0.4 * qk_rng_normal(&r);
        theta[i] = atan2(sin(x), cos(x));
    }
    double raw, cut, best = qk_comp_angle_r(theta, t, n, &raw, &cut), brute_raw;
    double brute = brute_best_r(theta, t, n, &brute_raw);
    ck_assert_msg(fabs(best - brute) < 1e-12, "%.17g vs %.17g", best, brute);
    ck_assert_msg(fabs(raw - brute_raw) < 1e-12, "%.17g vs %.17g", raw, brute_raw);
    free(theta);
    free(t);
}
END_TEST

START_TEST(lda_routine)
{
    int64_t n = 4000;
    double *xa = malloc(sizeof(double) * n), *ya = malloc(sizeof(double) * n);
    double *xb = malloc(sizeof(double) * n), *yb = malloc(sizeof(double) * n);
    qk_rng r;
    seed_rng(&r, 52);
    for (int64_t i = 0; i < n; i++) { /* concentric rings of radius 1 and 3 */
        double pa = 2 * M_PI * qk_rng_uniform(&r), pb = 2 * M_PI * qk_rng_uniform(&r);
        xa[i] = cos(pa) + 0.05 * qk_rng_normal(&r);
        ya[i] = sin(pa) + 0.05 * qk_rng_normal(&r);
        xb[i] = 3 * cos(pb) + 0.05 * qk_rng_normal(&r);
        yb[i] = 3 * sin(pb) + 0.05 * qk_rng_normal(&r);
    }
    double acc = qk_comp_lda_balanced(xa, ya, n, xb, yb, n);
    ck_assert_msg(fabs(acc - 0.5) < 0.02, "rings: %g", acc);
    for (int64_t i = 0; i < n; i++) { /* separated blobs */
        xa[i] = 4 + qk_rng_normal(&r);
        ya[i] = 1 + qk_rng_normal(&r);
        xb[i] = -4 + qk_rng_normal(&r);
        yb[i] = -1 + qk_rng_normal(&r);
    }
    acc = qk_comp_lda_balanced(xa, ya, n, xb, yb, n / 2);
    ck_assert_msg(acc > 0.99, "blobs: %g", acc);
    /* identical classes: no direction at all, everything is put in b */
    ck_assert(qk_comp_lda_balanced(xa, ya, n, xa, ya, n) == 0.5);
    free(xa);
    free(ya);
    free(xb);
    free(yb);
}
END_TEST

START_TEST(omega_routine)
{
    int64_t n = 8000;
    const int32_t L = 131072;
    double w0 = 2.0 / L; /* one slow plane: w L = 2 */
    double *yq = malloc(sizeof(double) * n), *yk = malloc(sizeof(double) * n);
    int32_t *tq = malloc(sizeof(int32_t) * n), *tk = malloc(sizeof(int32_t) * n);
    qk_rng r;
    seed_rng(&r, 53);
    for (int64_t i = 0; i < n; i++) {
        tq[i] = (int32_t)qk_rng_below(&r, L);
        tk[i] = (int32_t)qk_rng_below(&r, L);
        yq[i] = 3 + 2.0 * cos(w0 * tq[i] + 0.5) + 0.3 * qk_rng_normal(&r);
        yk[i] = -4 + 3.5 * cos(w0 * tk[i] + 1.9) + 0.3 * qk_rng_normal(&r);
    }
    qk_rot_omega o;
    qk_rot_omega_fit(yq, tq, n, yk, tk, n, QK_ROT_OMEGA_GRID, QK_ROT_OMEGA_REFINE, &o);
    ck_assert_msg(fabs(o.omega / w0 - 1.0) < 0.05, "omega %g, planted %g", o.omega, w0);
    ck_assert_int_eq(o.at_bound, 0);
    ck_assert(o.r_squared > 0.85 && o.r_squared <= 1.0);
    ck_assert(o.r_squared > o.lin_r_squared_w);

    /* pure linear drift: the optimum sits at the lowest frequency and its R^2
     * is about the straight line's */
    for (int64_t i = 0; i < n; i++) {
        yq[i] = 1 + 2e-5 * tq[i] + 0.3 * qk_rng_normal(&r);
        yk[i] = -1 + 5e-5 * tk[i] + 0.3 * qk_rng_normal(&r);
    }
    qk_rot_omega_fit(yq, tq, n, yk, tk, n, QK_ROT_OMEGA_GRID, QK_ROT_OMEGA_REFINE, &o);
    ck_assert_int_eq(o.at_bound, 1);
    ck_assert_msg(fabs(o.r_squared - o.lin_r_squared_w) < 2e-3, "%g vs %g", o.r_squared,
                  o.lin_r_squared_w);
    double span = 0;
    for (int64_t i = 0; i < n; i++)
        span = fmax(span, fmax(tq[i], tk[i]));
    ck_assert(o.omega < 1.1 * 0.25 * M_PI / span * 1.02);

    /* no spread in position: undefined */
    for (int64_t i = 0; i < n; i++)
        tq[i] = tk[i] = 7;
    qk_rot_omega_fit(yq, tq, n, yk, tk, n, QK_ROT_OMEGA_GRID, QK_ROT_OMEGA_REFINE, &o);
    ck_assert(isnan(o.omega) && isnan(o.r_squared));
    ck_assert(o.lin_r_squared_w == 0.0);
    free(yq);
    free(yk);
    free(tq);
    free(tk);
}
END_TEST

/* ---- degenerate heads -------------------------------------------------------------------- */

/* R^2 of the shared-frequency sinusoid fit at w straight from cos and sin
 * of every row (centred sums, a 2 x 2 solve per kind, t' = t - t_min): the
 * reference for the tables and frequency batches of qk_rot_omega_fit. */
static double direct_r_squared(const double *y[2], const int32_t *t[2], int64_t n, int32_t t_min,
                               double w)
{
    double ssr = 0.0, sst = 0.0;
    for (int kind = 0; kind < 2; kind++) {
        double my = 0, mc = 0, ms = 0;
        for (int64_t i = 0; i < n; i++) {
            my += y[kind][i];
            mc += cos(w * (t[kind][i] - t_min));
            ms += sin(w * (t[kind][i] - t_min));
        }
        my /= n;
        mc /= n;
        ms /= n;
        double scc = 0, scs = 0, sss = 0, syc = 0, sys = 0, syy = 0;
        for (int64_t i = 0; i < n; i++) {
            double c = cos(w * (t[kind][i] - t_min)) - mc, sn = sin(w * (t[kind][i] - t_min)) - ms;
            double yc = y[kind][i] - my;
            scc += c * c;
            scs += c * sn;
            sss += sn * sn;
            syc += yc * c;
            sys += yc * sn;
            syy += yc * yc;
        }
        ssr += (sss * syc * syc - 2 * scs * syc * sys + scc * sys * sys) / (scc * sss - scs * scs);
        sst += syy;
    }
    return ssr / sst;
}

START_TEST(omega_matches_direct)
{
    /* two planes of different frequency, so that R^2 has several maxima */
    const int64_t n = 3000;
    const int32_t L = 131072;
    double *y[2] = {malloc(sizeof(double) * n), malloc(sizeof(double) * n)};
    int32_t *t[2] = {malloc(sizeof(int32_t) * n), malloc(sizeof(int32_t) * n)};
    qk_rng r;
    seed_rng(&r, 54);
    int32_t t_min = L, t_max = 0;
    for (int kind = 0; kind < 2; kind++)
        for (int64_t i = 0; i < n; i++) {
            int32_t ti = (int32_t)qk_rng_below(&r, L);
            t[kind][i] = ti;
            t_min = ti < t_min ? ti : t_min;
            t_max = ti > t_max ? ti : t_max;
            y[kind][i] = (kind ? -2 : 1) + 1.5 * cos(9.0 / L * ti + kind) +
                         0.8 * sin(31.0 / L * ti) + 0.5 * qk_rng_normal(&r);
        }
    qk_rot_omega o;
    qk_rot_omega_fit(y[0], t[0], n, y[1], t[1], n, QK_ROT_OMEGA_GRID, QK_ROT_OMEGA_REFINE, &o);
    const double *yc[2] = {y[0], y[1]};
    const int32_t *tc[2] = {t[0], t[1]};
    double at_omega = direct_r_squared(yc, tc, n, t_min, o.omega);
    ck_assert_msg(fabs(at_omega - o.r_squared) < 1e-12, "R^2 %.17g, direct %.17g", o.r_squared,
                  at_omega);
    /* the reported optimum is at least as good as every grid point */
    double span = t_max - t_min, lw_lo = log(0.25 * M_PI / span), lw_hi = log(20 * M_PI / span);
    double best_grid = -1.0;
    for (int i = 0; i < QK_ROT_OMEGA_GRID; i++) {
        double w = exp(lw_lo + (lw_hi - lw_lo) / (QK_ROT_OMEGA_GRID - 1) * i);
        best_grid = fmax(best_grid, direct_r_squared(yc, tc, n, t_min, w));
    }
    ck_assert_msg(o.r_squared >= best_grid - 1e-12, "R^2 %.17g, best grid point %.17g",
                  o.r_squared, best_grid);
    ck_assert_msg(fabs(o.omega * L / 9.0 - 1.0) < 0.05, "omega %g", o.omega * L);
    for (int kind = 0; kind < 2; kind++) {
        free(y[kind]);
        free(t[kind]);
    }
}
END_TEST

/* The two builds of the vectorised loops (include/qk/simd.h) give the same
 * bits. On a CPU without AVX2 both runs take the baseline build. */

/* the level in use before baseline_on, -1: none to restore */
static int level_before = -1;

static void baseline_on(void)
{
    level_before = qk_isa_use(QK_ISA_SCALAR);
}

static void baseline_off(void)
{
    if (level_before >= 0)
        qk_isa_use(level_before);
    level_before = -1;
}

static int same_double(double a, double b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

static void omega_both_builds(const double *yq, const int32_t *tq, const double *yk,
                              const int32_t *tk, int64_t n, int grid, int refine)
{
    qk_rot_omega wide, base;
    qk_rot_omega_fit(yq, tq, n, yk, tk, n, grid, refine, &wide);
    baseline_on();
    qk_rot_omega_fit(yq, tq, n, yk, tk, n, grid, refine, &base);
    baseline_off();
    ck_assert_msg(same_double(wide.omega, base.omega) && same_double(wide.r_squared, base.r_squared)
                  && wide.at_bound == base.at_bound, "grid %d, refine %d: omega %.17g / %.17g, "
                  "R^2 %.17g / %.17g", grid, refine, wide.omega, base.omega, wide.r_squared,
                  base.r_squared);
}

static void omega_same(const qk_rot_omega *a, const qk_rot_omega *b, const char *what)
{
    ck_assert_msg(same_double(a->omega, b->omega) && same_double(a->r_squared, b->r_squared) &&
                      a->at_bound == b->at_bound && same_double(a->lin_r_squared_w, b->lin_r_squared_w),
                  "%s: omega %.17g / %.17g, R^2 %.17g / %.17g", what, a->omega, b->omega,
                  a->r_squared, b->r_squared);
}

/* The fit that keeps the grid's positional sums from head to head gives
 * the bits of the one that does not, whether the next head shares the
 * positions (the sums reused) or not (made again): one position moved,
 * fewer k rows, the same positions split otherwise between q and k, the
 * kinds swapped, another grid; a head that ends before the grid (constant
 * values) between two that share their positions leaves the sums as they
 * were. Both builds; the heads that should reuse the sums do. */
enum { CACHE_SAME, CACHE_MOVE, CACHE_FEWER_K, CACHE_SPLIT, CACHE_SWAP, CACHE_GRID, CACHE_FLAT };

START_TEST(omega_cache_same_bits)
{
    const int64_t n = 1800;
    double *y = malloc(sizeof(double) * 2 * n);
    int32_t *t = malloc(sizeof(int32_t) * 2 * n), *swapped = malloc(sizeof(int32_t) * 2 * n);
    qk_rng r;
    seed_rng(&r, 91);
    for (int64_t i = 0; i < 2 * n; i++)
        t[i] = (int32_t)qk_rng_below(&r, 40000);
    const int step[] = {CACHE_SAME, CACHE_SAME, CACHE_SAME, CACHE_MOVE, CACHE_SAME,
                        CACHE_FEWER_K, CACHE_SAME, CACHE_SPLIT, CACHE_SAME, CACHE_SWAP,
                        CACHE_SAME, CACHE_GRID, CACHE_SAME, CACHE_FLAT, CACHE_SAME};
    const int n_steps = (int)(sizeof step / sizeof step[0]);
    for (int build = 0; build < 2; build++) {
        if (build)
            baseline_on();
        qk_rot_omega_cache *cache = NULL;
        int64_t n_q = n, n_k = n, expected_hits = 0;
        int grid = QK_ROT_OMEGA_GRID, swap = 0;
        for (int h = 0; h < n_steps; h++) {
            int flat = step[h] == CACHE_FLAT;
            if (step[h] == CACHE_MOVE)
                t[h * 37 % n] += 1;
            if (step[h] == CACHE_FEWER_K)
                n_k -= 11;
            if (step[h] == CACHE_SPLIT) { /* the same positions, 11 more of them q rows */
                n_q += 11;
                n_k -= 11;
            }
            if (step[h] == CACHE_SWAP)
                swap = 1;
            if (step[h] == CACHE_GRID)
                grid = 50;
            /* the kinds swapped: the k positions first, as q rows */
            const int32_t *tq = t, *tk = t + n_q;
            if (swap) {
                memcpy(swapped, t + n_q, (size_t)n_k * sizeof *t);
                memcpy(swapped + n_k, t, (size_t)n_q * sizeof *t);
                tq = swapped;
                tk = swapped + n_k;
            }
            int64_t nq = swap ? n_k : n_q, nk = swap ? n_q : n_k;
            double f = 1e-4 * (1.0 + (double)h);
            for (int64_t i = 0; i < nq + nk; i++) {
                int32_t ti = i < nq ? tq[i] : tk[i - nq];
                y[i] = flat ? 1.0 : cos(f * ti) + 2e-5 * ti + 0.3 * qk_rng_normal(&r);
            }
            /* without refinement R^2 is a grid point's, made of the kept sums */
            int refine = h % 2 ? 0 : QK_ROT_OMEGA_REFINE;
            qk_rot_omega plain, kept;
            qk_rot_omega_fit(y, tq, nq, y + nq, tk, nk, grid, refine, &plain);
            qk_rot_omega_fit_cached(y, tq, nq, y + nq, tk, nk, grid, refine, &cache, &kept);
            char what[64];
            snprintf(what, sizeof what, "build %d, head %d", build, h);
            omega_same(&plain, &kept, what);
            ck_assert_msg(flat ? isnan(kept.omega) : isfinite(kept.omega), "%s: omega %g", what,
                          kept.omega);
            /* a head after one of the same positions reuses the sums */
            expected_hits += h > 0 && step[h] == CACHE_SAME;
            ck_assert_msg(qk_rot_omega_cache_hits(cache) == expected_hits,
                          "%s: %lld heads reused the sums, expected %lld", what,
                          (long long)qk_rot_omega_cache_hits(cache), (long long)expected_hits);
        }
        qk_rot_omega_cache_free(cache);
        baseline_off();
    }
    free(y);
    free(t);
    free(swapped);
}
END_TEST

START_TEST(simd_builds_agree)
{
    const int64_t n = 2500;
    double *yq = malloc(sizeof(double) * n), *yk = malloc(sizeof(double) * n);
    int32_t *tq = malloc(sizeof(int32_t) * n), *tk = malloc(sizeof(int32_t) * n);
    qk_rng r;
    seed_rng(&r, 55);
    for (int64_t i = 0; i < n; i++) {
        tq[i] = (int32_t)qk_rng_below(&r, 60000);
        tk[i] = (int32_t)qk_rng_below(&r, 60000);
        yq[i] = cos(4e-4 * tq[i]) + 0.3 * qk_rng_normal(&r);
        yk[i] = 2e-5 * tk[i] + 0.3 * qk_rng_normal(&r);
    }
    const int grids[][2] = {{QK_ROT_OMEGA_GRID, QK_ROT_OMEGA_REFINE}, {7, 3}, {3, 0}, {50, 1}};
    for (size_t i = 0; i < sizeof grids / sizeof grids[0]; i++)
        omega_both_builds(yq, tq, yk, tk, n, grids[i][0], grids[i][1]);

    /* the angles: equal bits, within 3.5 ulp of libm's, exact on the axes */
    double u[] = {1, -1, 0, 0, 0, -0.0, 3, -2.5, 1e-300, -1e300, 0.7, 0.2, -0.4};
    double w[] = {0, 0, 1, -1, 0, 0, 3, -1e-17, 1e-300, 5, -0.1, 0.9, -0.3};
    int64_t m = sizeof u / sizeof u[0];
    double wide[16], base[16];
    qk_comp_angles(u, w, m, wide);
    baseline_on();
    qk_comp_angles(u, w, m, base);
    baseline_off();
    for (int64_t i = 0; i < m; i++) {
        ck_assert_msg(same_double(wide[i], base[i]), "atan2(%g, %g): %.17g / %.17g", w[i], u[i],
                      wide[i], base[i]);
        double ref = atan2(w[i], u[i]);
        ck_assert_msg(fabs(wide[i] - ref) <= 4 * 0x1p-52 * fmax(fabs(ref), 0x1p-1022),
                      "atan2(%g, %g): %.17g, libm %.17g", w[i], u[i], wide[i], ref);
        if (i < 6) /* on the axes */
            ck_assert(wide[i] == ref);
    }
    /* and on random arguments of every size, with the three variants:
     * AVX-512 where the CPU has it (eight at a time), AVX (QK_ISA's level
     * capped at AVX2), SSE2 (the baseline build) */
    enum { N_ANGLES = 4099 }; /* a remainder after the vectors of 8 and 4 */
    double *au = malloc(sizeof(double) * N_ANGLES), *aw = malloc(sizeof(double) * N_ANGLES);
    double *eight = malloc(sizeof(double) * N_ANGLES), *four = malloc(sizeof(double) * N_ANGLES);
    double *two = malloc(sizeof(double) * N_ANGLES);
    for (int i = 0; i < N_ANGLES; i++) {
        double scale = pow(10.0, (double)(i % 41) - 20.0);
        au[i] = i % 97 == 0 ? 0.0 : scale * qk_rng_normal(&r);
        aw[i] = i % 89 == 0 ? -0.0 : scale * qk_rng_normal(&r);
    }
    qk_comp_angles(au, aw, N_ANGLES, eight);
    int level = qk_isa_use(QK_ISA_AVX2);
    qk_comp_angles(au, aw, N_ANGLES, four);
    qk_isa_use(level);
    baseline_on();
    qk_comp_angles(au, aw, N_ANGLES, two);
    baseline_off();
    for (int i = 0; i < N_ANGLES; i++)
        ck_assert_msg(same_double(eight[i], four[i]) && same_double(four[i], two[i]),
                      "atan2(%a, %a): %a, %a, %a", aw[i], au[i], eight[i], four[i], two[i]);
    free(two);
    free(four);
    free(eight);
    free(aw);
    free(au);

    /* a whole complement */
    head_data h;
    random_head(&h, 32, 3000, 3e-5, 2.0, 2.0, 56);
    analysed a1, a2;
    analyse(&h, &a1);
    baseline_on();
    analyse(&h, &a2);
    baseline_off();
    ck_assert(same_double(a1.rot.omega.omega, a2.rot.omega.omega));
    ck_assert_int_eq(a1.comp.n_pairs, a2.comp.n_pairs);
    for (int p = 0; p < a1.comp.n_pairs; p++) {
        const qk_comp_pair *x = &a1.comp.pair[p], *y2 = &a2.comp.pair[p];
        ck_assert(same_double(x->angle_r, y2->angle_r));
        ck_assert(same_double(x->angle_r_best, y2->angle_r_best));
        ck_assert(same_double(x->best_cut, y2->best_cut));
        ck_assert(same_double(x->cls_acc, y2->cls_acc));
        ck_assert(same_double(x->radial_cv, y2->radial_cv));
    }
    analysed_free(&a1);
    analysed_free(&a2);
    head_free(&h);
    free(yq);
    free(yk);
    free(tq);
    free(tk);
}
END_TEST

START_TEST(degenerate_no_position_spread)
{
    head_data h;
    random_head(&h, 12, 500, 3e-5, 2.0, 1.0, 60);
    for (int64_t i = 0; i < h.n_q; i++)
        h.tq[i] = h.tk[i] = 1000;
    analysed an;
    analyse(&h, &an);
    ck_assert_int_eq(an.rot.flag_degenerate_a, 1);
    ck_assert_int_eq(an.rot.flag_degenerate_b, 0);
    ck_assert(an.rot.position_r == 0.0 && an.rot.r_q_a == 0.0 && an.rot.r_k_a == 0.0);
    ck_assert(an.rot.alpha_q == 0.0 && an.rot.alpha_k == 0.0 && an.rot.bias_strength == 0.0);
    ck_assert(isnan(an.rot.slope_ratio));
    ck_assert(isnan(an.rot.omega.omega) && an.rot.omega.lin_r_squared_w == 0.0);
    ck_assert(an.rot.var_frac_a > 0.0); /* a is the top principal axis */
    ck_assert(an.comp.residual_pos_r == 0.0);
    ck_assert(fabs(vec_dot(an.a, an.b, h.dim)) < 1e-12);
    for (int i = 0; i < an.comp.n_pairs; i++)
        ck_assert(an.comp.pair[i].angle_r == 0.0 && an.comp.pair[i].angle_r_best == 0.0);
    ck_assert_int_eq(an.comp.n_active, 0);
    ck_assert(isnan(an.comp.ring_cls_acc));
    analysed_free(&an);
    head_free(&h);
}
END_TEST

START_TEST(degenerate_no_covariance)
{
    head_data h;
    head_alloc(&h, 10, 50, 50);
    for (int64_t i = 0; i < 50; i++) {
        h.tq[i] = (int32_t)(i * 100);
        h.tk[i] = (int32_t)(i * 37);
        for (int j = 0; j < 10; j++)
            h.q[i * 10 + j] = h.k[i * 10 + j] = (float)(0.5 * j - 1.0);
    }
    analysed an;
    analyse(&h, &an);
    ck_assert_int_eq(an.rot.flag_degenerate_a, 1);
    ck_assert_int_eq(an.rot.flag_degenerate_b, 1);
    ck_assert(isnan(an.rot.var_frac_a) && isnan(an.rot.var_frac_b));
    ck_assert(isnan(an.rot.separation_strength));
    ck_assert(isnan(an.rot.b_centroid_cos) && isnan(an.rot.resid_sep_frac));
    ck_assert(an.rot.content_var_b == 0.0 && an.rot.position_r == 0.0);
    ck_assert(isnan(an.rot.omega.omega) && isnan(an.rot.omega.lin_r_squared_w));
    ck_assert(fabs(vec_dot(an.a, an.a, 10) - 1.0) < 1e-12 && fabs(vec_dot(an.a, an.b, 10)) < 1e-12);
    ck_assert(an.comp.complement_var == 0.0 && an.comp.residual_pos_r == 0.0);
    for (int i = 0; i < an.comp.n_pairs; i++)
        ck_assert(isnan(an.comp.pair[i].var_frac) && isnan(an.comp.pair[i].angle_r_best));
    ck_assert_int_eq(an.comp.n_active, 0);
    ck_assert(isnan(an.comp.max_abs_angle_r) && isnan(an.comp.ring_cls_acc));
    analysed_free(&an);
    head_free(&h);
}
END_TEST

START_TEST(degenerate_q_equals_k)
{
    head_data h;
    random_head(&h, 16, 1000, 3e-5, 0.0, 1.5, 61);
    memcpy(h.k, h.q, sizeof(float) * h.n_q * h.dim);
    memcpy(h.tk, h.tq, sizeof(int32_t) * h.n_q);
    analysed an;
    analyse(&h, &an);
    ck_assert_int_eq(an.rot.flag_degenerate_a, 0);
    ck_assert_int_eq(an.rot.flag_degenerate_b, 0);
    ck_assert(an.rot.mu_q_a == an.rot.mu_k_a && an.rot.mu_q_b == an.rot.mu_k_b);
    ck_assert(an.rot.r_q_a == an.rot.r_k_a && an.rot.alpha_q == an.rot.alpha_k);
    ck_assert(an.rot.slope_ratio == 1.0);
    ck_assert(isnan(an.rot.b_centroid_cos) && isnan(an.rot.resid_sep_frac));
    /* with no offset, sep = b'Sb / tr S = var_frac_b */
    ck_assert(fabs(an.rot.separation_strength - an.rot.var_frac_b) < 1e-12);
    for (int i = 0; i < an.comp.n_pairs; i++)
        ck_assert(an.comp.pair[i].cls_acc == 0.5);
    ck_assert(an.comp.residual_pos_r < 1e-12);
    analysed_free(&an);
    head_free(&h);
}
END_TEST

/* ---- the programs on a store of degenerate heads ------------------------------------------ */

/* Layer 0: head 0 with all positions equal, head 1 without covariance, head
 * 2 with Q identical to K, head 3 with too few rows. Key head h serves
 * query head h. */
static void write_degenerate_store(const char *path)
{
    int d = 8, n = 64;
    float *x = calloc((size_t)n * d, sizeof(float)), *xk = calloc((size_t)n * d, sizeof(float));
    int32_t *t = calloc((size_t)n, sizeof(int32_t)), *tk = calloc((size_t)n, sizeof(int32_t));
    int32_t *zero = calloc((size_t)n, sizeof(int32_t));
    int32_t *bucket = calloc((size_t)n, sizeof(int32_t)), *bucket_k = calloc((size_t)n, 4);
    qk_store_header meta;
    memset(&meta, 0, sizeof meta);
    meta.dim = (uint32_t)d;
    meta.n_layers = 2;
    meta.n_q_heads = 4;
    meta.n_kv_heads = 4;
    meta.context_length = 4096;
    meta.bucket_size = 256;
    snprintf(meta.dataset_id, sizeof meta.dataset_id, "degenerate");
    qk_store_writer w;
    qk_err err;
    ck_assert_msg(qk_store_writer_open(&w, path, &meta, &err) == 0, "%s", err.msg);
    qk_rng r;
    seed_rng(&r, 70);
    for (int head = 0; head < 4; head++) {
        for (int i = 0; i < n; i++) {
            t[i] = head == 0 ? 500 : (int32_t)qk_rng_below(&r, 4096);
            tk[i] = head == 0 ? 500 : head == 2 ? t[i] : (int32_t)qk_rng_below(&r, 4096);
            for (int j = 0; j < d; j++) {
                x[i * d + j] = head == 1 ? (float)j : (float)qk_rng_normal(&r);
                xk[i * d + j] = head == 1 ? (float)j : head == 2 ? x[i * d + j]
                                                                 : (float)qk_rng_normal(&r);
            }
        }
        for (int i = 0; i < n; i++) { /* position / bucket_size, as the store requires */
            bucket[i] = t[i] / 256;
            bucket_k[i] = tk[i] / 256;
        }
        int rows = head == 3 ? 2 : n;
        ck_assert(qk_store_writer_add(&w, 0, head, 'q', rows, t, zero, bucket, x, 0, &err) == 0);
        ck_assert(qk_store_writer_add(&w, 0, head, 'k', rows, tk, zero, bucket_k, xk, 0,
                                      &err) == 0);
    }
    qk_store_pair pairs[4] = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
    ck_assert_msg(qk_store_writer_finish(&w, pairs, 4, &err) == 0, "%s", err.msg);
    free(x);
    free(xk);
    free(t);
    free(tk);
    free(zero);
    free(bucket);
    free(bucket_k);
}

static const char *cell_of(const qk_table *t, int row, const char *column)
{
    int c = qk_table_column(t, column);
    ck_assert_msg(c >= 0, "no column %s", column);
    return qk_table_cell(t, row, c);
}

START_TEST(programs_on_degenerate_heads)
{
    mkdir("build/tests", 0777);
    mkdir("build/tests/tmp", 0777);
    mkdir(TMP_DIR, 0777);
    write_degenerate_store(TMP_DIR "/store.qks");
    ck_assert_msg(access("bin/qk-rotate", X_OK) == 0 && access("bin/qk-complement", X_OK) == 0,
                  "bin/qk-rotate or bin/qk-complement is missing (make programs)");
    int rc = system("bin/qk-rotate --quiet " TMP_DIR "/store.qks 2> " TMP_DIR "/rotate.err");
    ck_assert_msg(rc == 0, "qk-rotate exit status %d", rc);
    rc = system("bin/qk-complement --quiet " TMP_DIR "/store.qks");
    ck_assert_msg(rc == 0, "qk-complement exit status %d", rc);
    qk_table t;
    qk_err err;
    ck_assert_msg(qk_table_load(TMP_DIR "/rotated.tsv", &t, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(t.n_rows, 3); /* head 3 is skipped */
    ck_assert_str_eq(cell_of(&t, 0, "flag_degenerate_a"), "1");
    ck_assert_str_eq(cell_of(&t, 0, "omega"), "nan");
    ck_assert_str_eq(cell_of(&t, 0, "position_r"), "0");
    ck_assert_str_eq(cell_of(&t, 1, "flag_degenerate_a"), "1");
    ck_assert_str_eq(cell_of(&t, 1, "flag_degenerate_b"), "1");
    ck_assert_str_eq(cell_of(&t, 1, "separation_strength"), "nan");
    ck_assert_str_eq(cell_of(&t, 1, "ring_cls_acc"), "nan");
    ck_assert_str_eq(cell_of(&t, 2, "flag_degenerate_a"), "0");
    ck_assert_str_eq(cell_of(&t, 2, "b_centroid_cos"), "nan");
    ck_assert_str_eq(cell_of(&t, 2, "slope_ratio"), "1");
    ck_assert(atof(cell_of(&t, 2, "residual_pos_r")) < 1e-12);
    ck_assert_str_eq(cell_of(&t, 2, "depth"), "0");
    qk_table_free(&t);
    FILE *fp = fopen(TMP_DIR "/rotate.err", "r");
    char line[512] = "";
    ck_assert(fp && fgets(line, sizeof line, fp));
    fclose(fp);
    ck_assert_msg(strstr(line, "l00h03 skipped"), "warning: %s", line);
}
END_TEST

/* ---- the axes file and the summary --------------------------------------------------------- */

START_TEST(axes_file_round_trip)
{
    mkdir("build/tests", 0777);
    mkdir("build/tests/tmp", 0777);
    mkdir(TMP_DIR, 0777);
    head_data h;
    random_head(&h, 12, 300, 3e-5, 2.0, 1.0, 80);
    analysed an;
    analyse(&h, &an);
    FILE *fp = fopen(TMP_DIR "/axes.bin", "w+b");
    qk_rot_axes_writer w;
    qk_err err;
    ck_assert(qk_rot_axes_begin(&w, fp, 12, &err) == 0);
    ck_assert(qk_rot_axes_add(&w, 3, 9, 2, an.a, an.b, &an.pooled, &err) == 0);
    ck_assert(qk_rot_axes_add(&w, 4, 1, 0, an.b, an.a, &an.pooled, &err) == 0);
    ck_assert(qk_rot_axes_finish(&w, &err) == 0);
    fclose(fp);
    qk_rot_axes_file f;
    ck_assert_msg(qk_rot_axes_load(TMP_DIR "/axes.bin", &f, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(f.n_heads, 2);
    ck_assert_int_eq(f.dim, 12);
    ck_assert_int_eq(qk_rot_axes_find(&f, 4, 1), 1);
    ck_assert_int_eq(qk_rot_axes_find(&f, 4, 2), -1);
    ck_assert_int_eq(f.kv_head[0], 2);
    ck_assert_mem_eq(f.a, an.a, sizeof(double) * 12);
    ck_assert_mem_eq(f.b + 12, an.a, sizeof(double) * 12);
    ck_assert_mem_eq(f.pooled[1].cov, an.pooled.cov, sizeof(double) * 144);
    ck_assert_mem_eq(f.pooled[0].mean, an.pooled.mean, sizeof(double) * 12);
    ck_assert_mem_eq(f.pooled[0].cov_pos, an.pooled.cov_pos, sizeof(double) * 12);
    ck_assert(f.pooled[0].n == an.pooled.n && f.pooled[0].pos_var == an.pooled.pos_var);
    qk_rot_axes_free(&f);
    /* one flipped byte is caught */
    fp = fopen(TMP_DIR "/axes.bin", "r+b");
    fseek(fp, 100, SEEK_SET);
    fputc(0x5a, fp);
    fclose(fp);
    ck_assert(qk_rot_axes_load(TMP_DIR "/axes.bin", &f, &err) != 0);
    ck_assert_msg(strstr(err.msg, "checksum"), "%s", err.msg);
    analysed_free(&an);
    head_free(&h);
}
END_TEST

START_TEST(model_summary)
{
    mkdir("build/tests", 0777);
    mkdir("build/tests/tmp", 0777);
    mkdir(TMP_DIR, 0777);
    FILE *fp = fopen(TMP_DIR "/rotated.csv", "w");
    fputs("model,family,r_q_a,r_k_a,var_frac_a,var_frac_b,plane_var_fraction,"
          "separation_strength,bias_strength,alpha_k,mu_q_a,position_r,n_active_planes,"
          "active_var_frac,ring_cls_acc,slope_ratio,bias_range\n", fp);
    fputs("m1,f,0.5,-0.9,0.1,0.3,0.4,0.2,0.001,-1e-4,2,0.3,3,0.5,nan,2,10\n", fp);
    fputs("m1,f,-0.7,0.8,0.2,0.1,0.3,0.4,-0.002,2e-4,-1,0.5,1,0.25,0.6,4,20\n", fp);
    fputs("m1,f,0.6,0.7,0.1,0.2,0.3,0.6,0.003,3e-4,3,0.4,2,0.3,0.5,inf,30\n", fp);
    fputs("m2,g,0.1,0.2,0.3,0.2,0.5,0.5,0.01,1e-3,10,0.1,0,0,nan,1,5\n", fp);
    fclose(fp);
    fp = fopen(TMP_DIR "/summary.csv", "w");
    qk_err err;
    ck_assert_msg(qk_rot_model_summary(TMP_DIR "/rotated.csv", fp, &err) == 0, "%s", err.msg);
    fclose(fp);
    qk_table t;
    ck_assert(qk_table_load(TMP_DIR "/summary.csv", &t, &err) == 0);
    ck_assert_int_eq(t.n_rows, 2);
    ck_assert_str_eq(cell_of(&t, 0, "model"), "m1");
    ck_assert_str_eq(cell_of(&t, 0, "n_heads"), "3");
    ck_assert_rel(atof(cell_of(&t, 0, "mean_abs_r_q_a")), 0.6, 1e-15);
    ck_assert_rel(atof(cell_of(&t, 0, "mean_abs_r_k_a")), 0.8, 1e-15);
    ck_assert_rel(atof(cell_of(&t, 0, "mean_ring_cls_acc")), 0.55, 1e-15);
    ck_assert_rel(atof(cell_of(&t, 0, "median_slope_ratio")), 4.0, 1e-15);
    ck_assert_rel(atof(cell_of(&t, 0, "frac_bias_positive")), 2.0 / 3, 1e-15);
    ck_assert_rel(atof(cell_of(&t, 0, "frac_var_b_gt_a")), 2.0 / 3, 1e-15);
    ck_assert_rel(atof(cell_of(&t, 0, "p25_abs_r_k_a")), 0.75, 1e-15);
    ck_assert_rel(atof(cell_of(&t, 0, "p75_separation_strength")), 0.5, 1e-15);
    ck_assert_rel(atof(cell_of(&t, 0, "mean_abs_alpha_k")), 2e-4, 1e-15);
    ck_assert_rel(atof(cell_of(&t, 0, "mean_bias_range")), 20.0, 1e-15);
    /* bias vs separation within family f: (0.2, 1), (0.4, -2), (0.6, 3) (x 1e-3) */
    ck_assert_rel(atof(cell_of(&t, 0, "family_bias_sep_r")), 0.3973597071195131, 1e-12);
    ck_assert_str_eq(cell_of(&t, 1, "family_bias_sep_r"), "nan");
    ck_assert_str_eq(cell_of(&t, 1, "mean_ring_cls_acc"), "nan");
    ck_assert_str_eq(cell_of(&t, 0, "overall_bias_sep_r"), cell_of(&t, 1, "overall_bias_sep_r"));
    qk_table_free(&t);
}
END_TEST

/* Pearson r with its Fisher-z interval over the rows where both values are
 * finite; no r below three such rows, no interval below four. */
START_TEST(correlation_interval)
{
    double x[7] = {1, 2, 3, 4, 5, NAN, 6}, y[7] = {1, 3, 2, 5, 4, 9, NAN};
    int idx[7] = {0, 1, 2, 3, 4, 5, 6};
    rot_rows rows = {7, idx};
    rot_corr c = rot_correlation(x, y, &rows);
    ck_assert_int_eq(c.n, 5);
    ck_assert_rel(c.r, 0.8, 1e-12);
    ck_assert_rel(c.lo, -0.279640052046334, 1e-6);
    ck_assert_rel(c.hi, 0.9861961936009902, 1e-6);
    rows.n = 3; /* three points: an r, no interval */
    c = rot_correlation(x, y, &rows);
    ck_assert_int_eq(c.n, 3);
    ck_assert(isfinite(c.r) && isnan(c.lo) && isnan(c.hi));
    rows.n = 2;
    c = rot_correlation(x, y, &rows);
    ck_assert(isnan(c.r));
}
END_TEST

/* A correlation of r on n points with its Fisher interval, as
 * rot_correlation gives it. */
static rot_corr corr_of(double r, int n)
{
    rot_corr c = {r, NAN, NAN, n};
    qk_pearson_interval(r, n, &c.lo, &c.hi);
    return c;
}

/* Simpson's reversal: every family's r reverses the pooled r (opposite
 * signs, each interval apart from 0), at least two families with an r.
 * The demo's case: Llama -0.55 on 72 heads reverses +0.34 on 264, while
 * Ministral's -0.19 on 72 (interval -0.40 to +0.04) does not. */
START_TEST(simpson_rule)
{
    rot_corr pooled = corr_of(0.34, 264), negative = corr_of(-0.34, 264);
    rot_corr all_sure[3] = {corr_of(-0.55, 72), corr_of(-0.45, 72), corr_of(NAN, 2)};
    rot_corr one_unsure[2] = {corr_of(-0.55, 72), corr_of(-0.19, 72)};
    rot_corr one_agrees[3] = {corr_of(-0.55, 72), corr_of(-0.45, 72), corr_of(0.44, 120)};
    rot_corr one_family[1] = {corr_of(-0.5, 72)}, with_zero[2] = {corr_of(-0.5, 72), corr_of(0.0, 72)};
    rot_corr few[2] = {corr_of(-0.9, 3), corr_of(-0.9, 3)}; /* no interval from 3 points */
    ck_assert(rot_reverses(&pooled, &one_unsure[0]) && !rot_reverses(&pooled, &one_unsure[1]));
    ck_assert_int_eq(rot_simpson_reversal(&pooled, all_sure, 3), 1);
    ck_assert_int_eq(rot_simpson_reversal(&negative, all_sure, 3), 0);
    ck_assert_int_eq(rot_simpson_reversal(&pooled, one_unsure, 2), 0);
    ck_assert_int_eq(rot_simpson_reversal(&pooled, one_agrees, 3), 0);
    ck_assert_int_eq(rot_simpson_reversal(&pooled, one_family, 1), 0);
    ck_assert_int_eq(rot_simpson_reversal(&pooled, with_zero, 2), 0);
    ck_assert_int_eq(rot_simpson_reversal(&pooled, few, 2), 0);
    rot_corr unknown = corr_of(NAN, 264), weak = corr_of(0.05, 264); /* -0.07 to +0.17 */
    ck_assert_int_eq(rot_simpson_reversal(&unknown, all_sure, 3), 0);
    ck_assert_int_eq(rot_simpson_reversal(&weak, all_sure, 3), 0);
}
END_TEST

static Suite *rotation_suite(void)
{
    Suite *s = suite_create("rotation");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, lemma_random_drift);
    tcase_add_test(tc, lemma_pure_noise);
    tcase_add_test(tc, orthonormal_axes_and_fractions);
    tcase_add_test(tc, separation_identity);
    tcase_add_test(tc, invariance_orthogonal);
    tcase_add_test(tc, invariance_translation);
    tcase_add_test(tc, invariance_flip_a);
    tcase_add_test(tc, centroid_mode);
    tcase_add_loop_test(tc, recovery_planted, 0, 3);
    tcase_add_test(tc, planted_truth_matches_presets);
    tcase_add_test(tc, planted_planes_active);
    tcase_add_test(tc, complement_pairs_match_rows);
    tcase_add_test(tc, angle_routine);
    tcase_add_test(tc, angle_routine_matches_brute_force);
    tcase_add_test(tc, lda_routine);
    tcase_add_test(tc, omega_routine);
    tcase_add_test(tc, omega_matches_direct);
    tcase_add_test(tc, simd_builds_agree);
    tcase_add_test(tc, omega_cache_same_bits);
    tcase_add_test(tc, degenerate_no_position_spread);
    tcase_add_test(tc, degenerate_no_covariance);
    tcase_add_test(tc, degenerate_q_equals_k);
    tcase_add_test(tc, programs_on_degenerate_heads);
    tcase_add_test(tc, axes_file_round_trip);
    tcase_add_test(tc, model_summary);
    tcase_add_test(tc, correlation_interval);
    tcase_add_test(tc, simpson_rule);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    openblas_set_num_threads(1);
    return qk_test_run(rotation_suite());
}
