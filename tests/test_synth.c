/* Tests of the synthetic generator: recovery of the planted geometry from
 * generated vectors, the population truth against closed forms and brute
 * force, the sampled positions, the written layout, and determinism. */
#include <cblas.h>
#include <dirent.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qk/parquet.h"
#include "qk/synth.h"
#include "testutil.h"

/* ---- datasets ------------------------------------------------------------- */

static qk_dataset make_dataset(const char *id, int layers, int nq, int nkv, int d,
                               double theta, int context, int bucket)
{
    qk_dataset ds;
    memset(&ds, 0, sizeof ds);
    snprintf(ds.id, sizeof ds.id, "%s", id);
    snprintf(ds.study, sizeof ds.study, "test");
    snprintf(ds.family, sizeof ds.family, "test");
    snprintf(ds.label, sizeof ds.label, "%s", id);
    snprintf(ds.revision, sizeof ds.revision, "%s-longbench-pro-128k-plus", id);
    snprintf(ds.rope_scaling, sizeof ds.rope_scaling, "none");
    ds.n_layers = layers;
    ds.n_q_heads = nq;
    ds.n_kv_heads = nkv;
    ds.head_dim = d;
    ds.rope_theta = theta;
    ds.max_position_embeddings = context;
    ds.context_length = context;
    ds.bucket_size = bucket;
    return ds;
}

/* The registry rows of workflow/datasets.tsv that the tests use. */
static qk_dataset llama3b(void)
{
    return make_dataset("llama3.2-3b", 28, 24, 8, 128, 500000, 131072, 8192);
}

static qk_dataset llama11b(void)
{
    qk_dataset ds = make_dataset("llama3.2-11b", 40, 32, 8, 128, 500000, 131072, 8192);
    for (int l = 3; l < 40; l += 5)
        ds.cross[l] = 1;
    return ds;
}

static qk_dataset smollm3_s3(void)
{
    qk_dataset ds = make_dataset("smollm3-3b-stage3-step-4720000", 36, 16, 4, 128, 50000,
                                 4096, 256);
    for (int l = 3; l < 36; l += 4)
        ds.nope[l] = 1;
    return ds;
}

static qk_dataset tiny(void) { return make_dataset("tiny-test", 2, 4, 2, 16, 10000, 2048, 256); }

static qk_synth_options options(int mode, int stratified, int examples)
{
    qk_synth_options o;
    qk_synth_options_default(&o);
    o.mode = mode;
    o.stratified = stratified;
    o.n_examples = examples;
    o.seed = 3;
    return o;
}

/* ---- sample moments -------------------------------------------------------- */

typedef struct moments {
    int d;
    double *mu, *S, *g;
    double tbar, var_t;
} moments;

/* Per-kind moments with 1/n normalisation, in double. */
static void sample_moments(const float *x, const int32_t *pos, int64_t n, int d, moments *m)
{
    m->d = d;
    m->mu = calloc((size_t)d, sizeof(double));
    m->S = calloc((size_t)d * d, sizeof(double));
    m->g = calloc((size_t)d, sizeof(double));
    double *xc = malloc((size_t)n * d * sizeof(double));
    double *tc = malloc((size_t)n * sizeof(double));
    m->tbar = 0;
    for (int64_t i = 0; i < n; i++) {
        m->tbar += pos[i];
        for (int j = 0; j < d; j++)
            m->mu[j] += x[i * d + j];
    }
    m->tbar /= n;
    for (int j = 0; j < d; j++)
        m->mu[j] /= n;
    m->var_t = 0;
    for (int64_t i = 0; i < n; i++) {
        tc[i] = pos[i] - m->tbar;
        m->var_t += tc[i] * tc[i];
        for (int j = 0; j < d; j++)
            xc[i * d + j] = x[i * d + j] - m->mu[j];
    }
    m->var_t /= n;
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, (int)n, 1.0 / n, xc, d, 0.0, m->S, d);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < i; j++)
            m->S[i * d + j] = m->S[j * d + i];
    cblas_dgemv(CblasRowMajor, CblasTrans, (int)n, d, 1.0 / n, xc, d, tc, 1, 0.0, m->g, 1);
    free(xc);
    free(tc);
}

static void moments_free(moments *m)
{
    free(m->mu);
    free(m->S);
    free(m->g);
}

static double dot(const double *a, const double *b, int d) { return cblas_ddot(d, a, 1, b, 1); }

static double quad(const double *a, const double *S, int d)
{
    double s = 0;
    for (int i = 0; i < d; i++)
        s += a[i] * dot(S + i * d, a, d);
    return s;
}

/* Generates both kinds of a head at the rows of its layer. */
static void generate_head(const qk_dataset *ds, const qk_synth_options *o, int layer,
                          int q_head, qk_synth_model *m, moments mom[2])
{
    qk_err err;
    ck_assert_int_eq(qk_synth_model_init(m, ds, o, layer, q_head, &err), 0);
    for (int kind = 0; kind < 2; kind++) {
        qk_synth_rows rows;
        qk_synth_positions(ds, o, layer, kind, &rows);
        float *x = malloc((size_t)rows.n * ds->head_dim * sizeof(float));
        qk_synth_vectors(m, kind, &rows, x);
        sample_moments(x, rows.position, rows.n, ds->head_dim, &mom[kind]);
        free(x);
        qk_synth_rows_free(&rows);
    }
}

/* ---- recovery of the planted geometry -------------------------------------- */

/* The planted-linear model at N_Q = N_K = 8000, d = 128, stratified: the
 * rotation model's estimator of the {a, b} plane (a from the pooled
 * covariance with position, slopes, means and Pearson r on a) applied to
 * the generated vectors recovers the planted values within 3% (slopes,
 * means) and 0.01 (r). The tolerances hold for heads whose drift across
 * the context, D = alpha sd_t, is at least 1.5 units for both kinds (a
 * typical Llama-3.2-3B head has 2.1 and 3.4):
 * a weaker drift leaves the estimated axis a wider angle, which mixes
 * complement variance into r. */
START_TEST(test_planted_linear_recovery)
{
    qk_dataset ds = llama3b();
    qk_synth_options o = options(QK_SYNTH_PLANTED_LINEAR, 1, 500);
    int layers[8], heads[8], tested = 0;
    double sd_t = sqrt((131072.0 * 131072.0 - 1) / 12);
    ck_assert_int_eq(qk_synth_select_heads(&ds, &(qk_synth_options){.n_heads = 8}, layers,
                                           heads, 8), 8);
    for (int h = 0; h < 8; h++) {
        qk_synth_model m;
        qk_err err0;
        ck_assert_int_eq(qk_synth_model_init(&m, &ds, &o, layers[h], heads[h], &err0), 0);
        int strong = m.kind[0].alpha * sd_t >= 1.5 && m.kind[1].alpha * sd_t >= 1.5;
        qk_synth_model_free(&m);
        if (!strong)
            continue;
        tested++;
        moments mom[2];
        generate_head(&ds, &o, layers[h], heads[h], &m, mom);
        int d = m.d;
        double tq = mom[0].tbar, tk = mom[1].tbar;
        ck_assert_double_eq(tq, tk); /* identical position multisets */
        double var_t = mom[0].var_t;
        double a[128], u[128];
        for (int i = 0; i < d; i++) {
            a[i] = 0.5 * (mom[0].g[i] + mom[1].g[i]);
            u[i] = m.basis[i * d + 0];
        }
        double norm = sqrt(dot(a, a, d));
        for (int i = 0; i < d; i++)
            a[i] /= norm;
        const qk_synth_kind *q = &m.kind[QK_SYNTH_Q], *k = &m.kind[QK_SYNTH_K];
        ck_assert_double_ge(dot(a, u, d), 0.995);
        double alpha_k = dot(a, mom[1].g, d) / var_t;
        double mu_q_a = dot(mom[0].mu, a, d);
        double r_q = dot(a, mom[0].g, d) / sqrt(quad(a, mom[0].S, d) * var_t);
        double r_k = dot(a, mom[1].g, d) / sqrt(quad(a, mom[1].S, d) * var_t);
        ck_assert_msg(fabs(alpha_k / k->alpha - 1) <= 0.03, "alpha_K %g vs planted %g", alpha_k,
                      k->alpha);
        ck_assert_msg(fabs(mu_q_a / q->mu_a - 1) <= 0.03, "mu_Q^a %g vs planted %g", mu_q_a,
                      q->mu_a);
        ck_assert_msg(fabs(r_q - q->r) <= 0.01, "r_q %g vs planted %g", r_q, q->r);
        ck_assert_msg(fabs(r_k - k->r) <= 0.01, "r_k %g vs planted %g", r_k, k->r);
        ck_assert_int_eq(mu_q_a * alpha_k > 0, q->mu_a * k->alpha > 0);

        /* the separation identity, exact on sample moments when N_Q = N_K:
         * sep = (2 var_frac_b - content_var_b / V) / (1 + |m|^2 / (4V)) */
        qk_synth_truth t;
        qk_err err;
        double *mu[2] = {mom[0].mu, mom[1].mu}, *S[2] = {mom[0].S, mom[1].S};
        double *g[2] = {mom[0].g, mom[1].g};
        ck_assert_int_eq(qk_synth_metrics_from_moments(d, NULL, mu, S, g, var_t, &t, &err), 0);
        double m2 = 0;
        for (int i = 0; i < d; i++)
            m2 += (mu[0][i] - mu[1][i]) * (mu[0][i] - mu[1][i]);
        double V = t.total_var;
        double identity = (2 * t.var_frac_b - t.content_var_b / V) / (1 + m2 / (4 * V));
        ck_assert_rel(t.separation_strength, identity, 1e-9);
        ck_assert_rel(t.plane_var_fraction, t.var_frac_a + t.var_frac_b, 1e-12);
        qk_synth_truth_free(&t);
        moments_free(&mom[0]);
        moments_free(&mom[1]);
        qk_synth_model_free(&m);
    }
    ck_assert_int_ge(tested, 4);
}
END_TEST

/* ---- population truth ---------------------------------------------------------- */

static double complement_total(const qk_synth_model *m, int kind)
{
    double s = 0;
    for (int j = 2; j < m->d; j++)
        s += m->noise_var[kind][j];
    return s;
}

/* The closed forms of the planted-linear model (docs/synth.md). */
static void check_closed_forms(const qk_dataset *ds, int layer, int q_head)
{
    qk_synth_options o = options(QK_SYNTH_PLANTED_LINEAR, 0, 0);
    qk_synth_model m;
    qk_err err;
    ck_assert_int_eq(qk_synth_model_init(&m, ds, &o, layer, q_head, &err), 0);
    ck_assert_int_eq(m.n_planes, 0);
    const qk_synth_kind *q = &m.kind[QK_SYNTH_Q], *k = &m.kind[QK_SYNTH_K];
    ck_assert_double_eq(q->lean, 0.0);
    double L = m.context, sd_t = sqrt((L * L - 1) / 12);
    double DQ = q->alpha * sd_t, DK = k->alpha * sd_t;
    double A = DQ * DQ / (q->r * q->r) + DK * DK / (k->r * k->r);
    double da = q->mu_a - k->mu_a, db = q->mu_b - k->mu_b;
    double cv = 0.5 * (q->cv_b + k->cv_b);
    double T = 0.5 * (complement_total(&m, 0) + complement_total(&m, 1));
    double Va = 0.5 * A + 0.25 * da * da, Vb = cv + 0.25 * db * db, V = Va + Vb + T;
    /* b = s needs the s direction to lead the complement in C_delta */
    for (int j = 2; j < m.d; j++)
        ck_assert_double_lt(m.noise_var[0][j] + m.noise_var[1][j], 2 * cv + db * db);

    qk_synth_truth t;
    ck_assert_int_eq(qk_synth_population(&m, &t, &err), 0);
    for (int i = 0; i < m.d; i++) {
        ck_assert_double_le(fabs(t.a[i] - m.basis[i * m.d + 0]), 1e-9);
        ck_assert_double_le(fabs(t.b[i] - m.basis[i * m.d + 1]), 1e-9);
    }
    ck_assert_rel(t.r_q_a, q->r, 1e-9);
    ck_assert_rel(t.r_k_a, k->r, 1e-9);
    ck_assert_rel(t.alpha_q / q->alpha, 1.0, 1e-9);
    ck_assert_rel(t.alpha_k / k->alpha, 1.0, 1e-9);
    ck_assert_rel(t.mu_q_a, q->mu_a, 1e-9);
    ck_assert_rel(t.mu_k_a, k->mu_a, 1e-9);
    ck_assert_rel(t.mu_q_b, q->mu_b, 1e-9);
    ck_assert_rel(t.mu_k_b, k->mu_b, 1e-9);
    ck_assert_rel(t.bias_strength / (q->mu_a * k->alpha), 1.0, 1e-9);
    ck_assert_rel(t.position_r, 0.5 * (DQ + DK) / sqrt(Va), 1e-9);
    ck_assert_rel(t.var_frac_a, Va / V, 1e-9);
    ck_assert_rel(t.var_frac_b, Vb / V, 1e-9);
    ck_assert_rel(t.separation_strength,
                  (2 * cv + db * db) / (A + 2 * cv + 2 * T + da * da + db * db), 1e-9);
    ck_assert_rel(t.content_var_b, cv, 1e-9);
    ck_assert_rel(t.total_var, V, 1e-9);
    qk_synth_truth_free(&t);
    qk_synth_model_free(&m);
}

START_TEST(test_population_closed_forms)
{
    qk_dataset ds = llama3b();
    int layers[8], heads[8];
    qk_synth_options pick = {.n_heads = 8};
    ck_assert_int_eq(qk_synth_select_heads(&ds, &pick, layers, heads, 8), 8);
    for (int i = 0; i < 8; i++)
        check_closed_forms(&ds, layers[i], heads[i]);
    qk_dataset s = smollm3_s3();
    check_closed_forms(&s, 5, 9);
}
END_TEST

/* The least-squares slope in position of coordinate c (0: cos, 1: sin) of
 * ring p's turning mean, summed over every position. */
static double ring_slope(const qk_synth_model *m, int kind, int p, int c)
{
    int L = m->context;
    double st = 0, tt = 0;
    for (int t = 0; t < L; t++) {
        double angle = m->plane[p].freq * t + m->plane[p].phase, s = t - 0.5 * (L - 1);
        st += s * m->kind[kind].radius[p] * (c ? sin(angle) : cos(angle));
        tt += s * s;
    }
    return st / tt;
}

/* Population truth with rings against a brute-force sum of the planted
 * mean over every position 0 .. L-1. */
START_TEST(test_population_brute_force)
{
    qk_dataset ds = smollm3_s3();
    qk_synth_options o = options(QK_SYNTH_POPULATION, 0, 0);
    qk_synth_model m;
    qk_err err;
    ck_assert_int_eq(qk_synth_model_init(&m, &ds, &o, 6, 5, &err), 0);
    ck_assert_int_ge(m.n_planes, 3);
    int d = m.d, L = m.context;
    double *mean_t = malloc((size_t)L * d * sizeof(double));
    double *mu[2], *S[2], *g[2];
    for (int kind = 0; kind < 2; kind++) {
        const qk_synth_kind *q = &m.kind[kind];
        double coef[128];
        mu[kind] = calloc((size_t)d, sizeof(double));
        S[kind] = calloc((size_t)d * d, sizeof(double));
        g[kind] = calloc((size_t)d, sizeof(double));
        double slope[QK_SYNTH_MAX_PLANES][2];
        for (int p = 0; p < m.n_planes; p++)
            for (int c = 0; c < 2; c++)
                slope[p][c] = ring_slope(&m, kind, p, c);
        for (int t = 0; t < L; t++) {
            memset(coef, 0, sizeof coef);
            coef[0] = q->mu_a + q->alpha * (t - 0.5 * (L - 1));
            coef[1] = q->mu_b;
            for (int p = 0; p < m.n_planes; p++) {
                double angle = m.plane[p].freq * t + m.plane[p].phase;
                coef[m.plane[p].col] += q->radius[p] * cos(angle);
                coef[m.plane[p].col + 1] += q->radius[p] * sin(angle);
            }
            /* each ring without its least-squares line in position */
            for (int p = 0; p < m.n_planes; p++)
                for (int c = 0; c < 2; c++)
                    coef[m.plane[p].col + c] -= slope[p][c] * (t - 0.5 * (L - 1));
            for (int j = 0; j < d; j++) {
                mean_t[(size_t)t * d + j] = coef[j];
                mu[kind][j] += coef[j] / L;
            }
        }
        for (int t = 0; t < L; t++)
            for (int j = 0; j < d; j++) {
                mean_t[(size_t)t * d + j] -= mu[kind][j];
                g[kind][j] += mean_t[(size_t)t * d + j] * (t - 0.5 * (L - 1)) / L;
            }
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, d, L, 1.0 / L, mean_t, d, 0.0,
                    S[kind], d);
        for (int i = 0; i < d; i++) {
            for (int j = 0; j < i; j++)
                S[kind][i * d + j] = S[kind][j * d + i];
            S[kind][i * d + i] += m.noise_var[kind][i];
        }
        double lean_cov = q->lean * sqrt(m.noise_var[kind][0] * m.noise_var[kind][1]);
        S[kind][0 * d + 1] += lean_cov;
        S[kind][1 * d + 0] += lean_cov;
    }
    double var_t = ((double)L * L - 1) / 12;
    qk_synth_truth brute, pop;
    ck_assert_int_eq(qk_synth_metrics_from_moments(d, m.basis, mu, S, g, var_t, &brute, &err), 0);
    ck_assert_int_eq(qk_synth_population(&m, &pop, &err), 0);
    for (int i = 0; i < d; i++) {
        ck_assert_double_le(fabs(brute.a[i] - pop.a[i]), 1e-9);
        ck_assert_double_le(fabs(brute.b[i] - pop.b[i]), 1e-9);
    }
    const double pairs[][2] = {
        {brute.r_q_a, pop.r_q_a}, {brute.r_k_a, pop.r_k_a},
        {brute.alpha_q * 1e3, pop.alpha_q * 1e3}, {brute.alpha_k * 1e3, pop.alpha_k * 1e3},
        {brute.mu_q_a, pop.mu_q_a}, {brute.mu_k_a, pop.mu_k_a},
        {brute.mu_q_b, pop.mu_q_b}, {brute.mu_k_b, pop.mu_k_b},
        {brute.bias_strength * 1e3, pop.bias_strength * 1e3},
        {brute.var_frac_a, pop.var_frac_a}, {brute.var_frac_b, pop.var_frac_b},
        {brute.separation_strength, pop.separation_strength},
        {brute.content_var_b, pop.content_var_b}, {brute.position_r, pop.position_r},
        {brute.pc0_ev, pop.pc0_ev}, {brute.pc0_r_q, pop.pc0_r_q}, {brute.pc0_r_k, pop.pc0_r_k}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        ck_assert_rel(pairs[i][0], pairs[i][1], 1e-9);
    /* the detrended rings leave the drift axis on u */
    double au = 0;
    for (int i = 0; i < d; i++)
        au += pop.a[i] * m.basis[i * d];
    ck_assert_double_gt(au, 1.0 - 1e-9);
    qk_synth_truth_free(&brute);
    qk_synth_truth_free(&pop);
    for (int k = 0; k < 2; k++) {
        free(mu[k]);
        free(S[k]);
        free(g[k]);
    }
    free(mean_t);
    qk_synth_model_free(&m);
}
END_TEST

/* Pooled variance of complement column j over every position: the mean of
 * the two kinds' variances (planted mean over positions + noise) plus a
 * quarter of the squared difference of their means. */
static double pooled_column_variance(const qk_synth_model *m, int j)
{
    int L = m->context, p = -1, c = 0;
    for (int i = 0; i < m->n_planes; i++)
        if (j == m->plane[i].col || j == m->plane[i].col + 1) {
            p = i;
            c = j - m->plane[i].col;
        }
    double mean[2] = {0, 0}, var[2];
    for (int kind = 0; kind < 2; kind++) {
        var[kind] = m->noise_var[kind][j];
        if (p < 0)
            continue;
        double slope = ring_slope(m, kind, p, c), s1 = 0, s2 = 0;
        for (int t = 0; t < L; t++) {
            double angle = m->plane[p].freq * t + m->plane[p].phase;
            double x = m->kind[kind].radius[p] * (c ? sin(angle) : cos(angle)) -
                       slope * (t - 0.5 * (L - 1));
            s1 += x;
            s2 += x * x;
        }
        mean[kind] = s1 / L;
        var[kind] += s2 / L - mean[kind] * mean[kind];
    }
    return 0.5 * (var[0] + var[1]) + 0.25 * (mean[0] - mean[1]) * (mean[0] - mean[1]);
}

/* The rings lead the complement of a RoPE head: four of them, 1.8 to 10
 * turns, each pair's pooled variance at least 1.3 times the next ring's
 * and the last at least 1.5 times the strongest content-noise pair; no
 * rings in a NoPE layer. */
static void check_rings(const qk_dataset *ds, int layer, int q_head)
{
    qk_synth_options o = options(QK_SYNTH_POPULATION, 0, 0);
    qk_synth_model m;
    qk_err err;
    ck_assert_int_eq(qk_synth_model_init(&m, ds, &o, layer, q_head, &err), 0);
    ck_assert_int_eq(m.n_planes, 4);
    double pair[64];
    int n_pairs = (m.d - 2) / 2;
    for (int i = 0; i < n_pairs; i++)
        pair[i] = pooled_column_variance(&m, 2 + 2 * i) + pooled_column_variance(&m, 3 + 2 * i);
    double noise_max = 0;
    for (int i = m.n_planes; i < n_pairs; i++)
        noise_max = pair[i] > noise_max ? pair[i] : noise_max;
    for (int p = 0; p < m.n_planes; p++) {
        ck_assert_int_eq(m.plane[p].col, 2 + 2 * p);
        ck_assert_double_ge(m.plane[p].turns, 1.8);
        ck_assert_double_le(m.plane[p].turns, 10.0);
        ck_assert_double_gt(m.kind[QK_SYNTH_K].radius[p], 5 * m.kind[QK_SYNTH_Q].radius[p]);
        if (p + 1 < m.n_planes)
            ck_assert_double_ge(pair[p], 1.3 * pair[p + 1]);
    }
    ck_assert_double_ge(pair[m.n_planes - 1], 1.5 * noise_max);
    /* each kind's complement still holds its budget t_perp */
    for (int kind = 0; kind < 2; kind++) {
        double total = 0;
        for (int j = 2; j < m.d; j++)
            total += m.noise_var[kind][j];
        for (int p = 0; p < m.n_planes; p++)
            total += m.kind[kind].radius[p] * m.kind[kind].radius[p];
        ck_assert_rel(total, m.kind[kind].t_perp, 1e-12);
    }
    qk_synth_model_free(&m);
}

START_TEST(test_rings_lead_complement)
{
    qk_dataset s = smollm3_s3();
    check_rings(&s, 6, 5);
    qk_dataset ds = llama3b();
    check_rings(&ds, 23, 21);
    qk_synth_options o = options(QK_SYNTH_POPULATION, 0, 0);
    qk_synth_model m;
    qk_err err;
    ck_assert_int_eq(qk_synth_model_init(&m, &s, &o, 7, 2, &err), 0); /* NoPE layer */
    ck_assert_int_eq(m.n_planes, 0);
    qk_synth_model_free(&m);
}
END_TEST

/* The plasticity inputs of a preset: K's content on s shared within a
 * document (k_doc) and Q's complement variance growing along the context
 * (q_ramp), both without changing any moment over the positions. */
START_TEST(test_doc_share_and_ramp)
{
    qk_dataset ds = make_dataset("smollm3-3b-lc-32k-to-64k-step-20000", 36, 16, 4, 128, 5e6,
                                 65536, 4096);
    for (int l = 3; l < 36; l += 4)
        ds.nope[l] = 1;
    qk_synth_options o = options(QK_SYNTH_POPULATION, 0, 300);
    qk_synth_model m;
    qk_err err;
    ck_assert_int_eq(qk_synth_model_init(&m, &ds, &o, 5, 3, &err), 0);
    const qk_synth_kind *q = &m.kind[QK_SYNTH_Q], *k = &m.kind[QK_SYNTH_K];
    ck_assert_double_gt(k->doc_share, 0.5);
    ck_assert_double_gt(q->ramp, 0.5);
    int d = m.d;
    /* K on s: the within-document share of its variance is 1 - doc_share */
    qk_synth_rows rows;
    qk_synth_positions(&ds, &o, 5, QK_SYNTH_K, &rows);
    float *x = malloc((size_t)rows.n * d * sizeof(float));
    qk_synth_vectors(&m, QK_SYNTH_K, &rows, x);
    double sum = 0, sum2 = 0, within = 0;
    int64_t n_within = 0;
    for (int64_t i = 0, start = 0; i <= rows.n; i++) {
        if (i < rows.n && rows.example[i] == rows.example[start])
            continue;
        double es = 0;
        int64_t n = i - start;
        double *ys = malloc((size_t)n * sizeof(double));
        for (int64_t r = start; r < i; r++) {
            double y = 0;
            for (int j = 0; j < d; j++)
                y += x[r * d + j] * m.basis[j * d + 1];
            ys[r - start] = y;
            es += y;
            sum += y;
            sum2 += y * y;
        }
        es /= n;
        for (int64_t r = 0; r < n; r++)
            within += (ys[r] - es) * (ys[r] - es);
        n_within += n - 1;
        free(ys);
        start = i;
    }
    double var = sum2 / rows.n - (sum / rows.n) * (sum / rows.n);
    ck_assert_double_le(fabs(var / k->cv_b - 1), 0.2);
    ck_assert_double_le(fabs(within / n_within / k->cv_b - (1 - k->doc_share)), 0.05);
    free(x);
    qk_synth_rows_free(&rows);
    /* Q's noise off the rings: the last fifth of the context holds
     * (1 + 0.8 ramp) / (1 - 0.8 ramp) times the first fifth's variance */
    qk_synth_positions(&ds, &o, 5, QK_SYNTH_Q, &rows);
    x = malloc((size_t)rows.n * d * sizeof(float));
    qk_synth_vectors(&m, QK_SYNTH_Q, &rows, x);
    double ss[2] = {0, 0};
    int64_t cnt[2] = {0, 0};
    for (int64_t r = 0; r < rows.n; r++) {
        int part = rows.position[r] < m.context / 5 ? 0
                   : rows.position[r] >= m.context - m.context / 5 ? 1 : -1;
        if (part < 0)
            continue;
        for (int j = 2 + 2 * m.n_planes; j < d; j++) {
            double y = 0;
            for (int i = 0; i < d; i++)
                y += x[r * d + i] * m.basis[i * d + j];
            ss[part] += y * y;
        }
        cnt[part]++;
    }
    double ratio = (ss[1] / cnt[1]) / (ss[0] / cnt[0]);
    double want = (1 + 0.8 * q->ramp) / (1 - 0.8 * q->ramp);
    ck_assert_msg(fabs(ratio / want - 1) <= 0.1, "ramp ratio %g, want %g", ratio, want);
    free(x);
    qk_synth_rows_free(&rows);
    qk_synth_model_free(&m);
}
END_TEST

/* Generated vectors of the full model (rings, noise lean, ramp) reproduce the
 * population truth within sampling error. */
START_TEST(test_sample_matches_population)
{
    qk_dataset ds = llama3b();
    qk_synth_options o = options(QK_SYNTH_POPULATION, 1, 500);
    int layers[3], heads[3];
    ck_assert_int_eq(qk_synth_select_heads(&ds, &(qk_synth_options){.n_heads = 3}, layers,
                                           heads, 3), 3);
    for (int h = 0; h < 3; h++) {
        qk_synth_model m;
        moments mom[2];
        qk_err err;
        generate_head(&ds, &o, layers[h], heads[h], &m, mom);
        qk_synth_truth pop, smp;
        double *mu[2] = {mom[0].mu, mom[1].mu}, *S[2] = {mom[0].S, mom[1].S};
        double *g[2] = {mom[0].g, mom[1].g};
        ck_assert_int_eq(qk_synth_population(&m, &pop, &err), 0);
        ck_assert_int_eq(qk_synth_metrics_from_moments(m.d, m.basis, mu, S, g, mom[0].var_t,
                                                       &smp, &err), 0);
        ck_assert_double_le(fabs(smp.r_q_a - pop.r_q_a), 0.03);
        ck_assert_double_le(fabs(smp.r_k_a - pop.r_k_a), 0.03);
        ck_assert_double_le(fabs(smp.var_frac_a - pop.var_frac_a), 0.02);
        ck_assert_double_le(fabs(smp.var_frac_b - pop.var_frac_b), 0.02);
        ck_assert_double_le(fabs(smp.separation_strength - pop.separation_strength), 0.02);
        ck_assert_double_le(fabs(smp.bias_strength / pop.bias_strength - 1), 0.1);
        ck_assert_double_le(fabs(smp.pc0_ev - pop.pc0_ev), 0.02);
        ck_assert_double_le(fabs(smp.pc0_r_q - pop.pc0_r_q), 0.03);
        ck_assert_double_le(fabs(smp.pc0_r_k - pop.pc0_r_k), 0.05);
        qk_synth_truth_free(&pop);
        qk_synth_truth_free(&smp);
        moments_free(&mom[0]);
        moments_free(&mom[1]);
        qk_synth_model_free(&m);
    }
}
END_TEST

/* ---- heads, positions, values --------------------------------------------------- */

START_TEST(test_head_selection)
{
    qk_dataset ds = llama3b();
    int layers[300], heads[300];
    qk_synth_options o;
    qk_synth_options_default(&o);
    ck_assert_int_eq(qk_synth_select_heads(&ds, &o, layers, heads, 300), QK_SYNTH_DEMO_HEADS);
    for (int i = 1; i < QK_SYNTH_DEMO_HEADS; i++)
        ck_assert(layers[i] > layers[i - 1] ||
                  (layers[i] == layers[i - 1] && heads[i] > heads[i - 1]));
    ck_assert_int_le(layers[0], 2);
    ck_assert_int_ge(layers[QK_SYNTH_DEMO_HEADS - 1], 25);
    o.scale = QK_SYNTH_THESIS;
    ck_assert_int_eq(qk_synth_select_heads(&ds, &o, layers, heads, 300), 300);
    /* the capture tool's first draw for Llama-3.2-3B is (16, 10) */
    int found = 0;
    for (int i = 0; i < 300; i++)
        found |= layers[i] == 16 && heads[i] == 10;
    ck_assert(found);
    qk_dataset v = llama11b();
    ck_assert_int_eq(qk_synth_select_heads(&v, &o, layers, heads, 300), 239);
    for (int i = 0; i < 239; i++)
        ck_assert_int_ne(layers[i] % 5, 3);
}
END_TEST

START_TEST(test_example_counts)
{
    qk_dataset ds = llama3b();
    qk_synth_options o;
    qk_synth_options_default(&o);
    ck_assert_int_eq(qk_synth_n_examples(&ds, &o), 63); /* 1000 / 16 rows */
    qk_dataset mistral = make_dataset("mistral-v0.2-7b", 32, 32, 8, 128, 1e6, 32768, 8192);
    ck_assert_int_eq(qk_synth_n_examples(&mistral, &o), 250);
    o.scale = QK_SYNTH_THESIS;
    ck_assert_int_eq(qk_synth_n_examples(&ds, &o), 500);
    o.n_examples = 7;
    ck_assert_int_eq(qk_synth_n_examples(&ds, &o), 7);
}
END_TEST

static void check_rows(const qk_dataset *ds, const qk_synth_rows *r, int examples)
{
    double mean = (double)examples * ds->context_length / ds->bucket_size;
    double sd = sqrt(mean * (1.0 - 1.0 / ds->bucket_size));
    ck_assert_double_le(fabs(r->n - mean), 5 * sd);
    for (int64_t i = 0; i < r->n; i++) {
        ck_assert_int_ge(r->position[i], 0);
        ck_assert_int_lt(r->position[i], ds->context_length);
        ck_assert_int_eq(r->bucket[i], r->position[i] / ds->bucket_size);
        ck_assert_int_eq(r->example_id[i], qk_synth_example_id(3, r->example[i]));
        if (i > 0) {
            ck_assert_int_ge(r->example[i], r->example[i - 1]);
            if (r->example[i] == r->example[i - 1])
                ck_assert_int_gt(r->position[i], r->position[i - 1]);
        }
    }
}

static int same_rows(const qk_synth_rows *a, const qk_synth_rows *b)
{
    return a->n == b->n && memcmp(a->position, b->position, (size_t)a->n * 4) == 0 &&
           memcmp(a->example_id, b->example_id, (size_t)a->n * 4) == 0;
}

START_TEST(test_positions)
{
    qk_dataset ds = llama3b();
    qk_synth_options o = options(QK_SYNTH_POPULATION, 0, 0);
    int examples = qk_synth_n_examples(&ds, &o);
    qk_synth_rows q5, k5, q5again, q6;
    qk_synth_positions(&ds, &o, 5, QK_SYNTH_Q, &q5);
    qk_synth_positions(&ds, &o, 5, QK_SYNTH_K, &k5);
    qk_synth_positions(&ds, &o, 5, QK_SYNTH_Q, &q5again);
    qk_synth_positions(&ds, &o, 6, QK_SYNTH_Q, &q6);
    check_rows(&ds, &q5, examples);
    check_rows(&ds, &k5, examples);
    ck_assert(same_rows(&q5, &q5again));
    ck_assert(!same_rows(&q5, &k5)); /* the kind is part of the mask seed */
    ck_assert(!same_rows(&q5, &q6));
    qk_synth_rows_free(&k5);
    o.stratified = 1;
    qk_synth_positions(&ds, &o, 5, QK_SYNTH_K, &k5);
    ck_assert(same_rows(&q5, &k5));
    qk_synth_rows_free(&q5);
    qk_synth_rows_free(&k5);
    qk_synth_rows_free(&q5again);
    qk_synth_rows_free(&q6);

    /* thesis scale: 500 examples x 16 buckets, and Mistral's 500 x 4 */
    o = options(QK_SYNTH_POPULATION, 0, 500);
    qk_synth_positions(&ds, &o, 0, QK_SYNTH_K, &q5);
    check_rows(&ds, &q5, 500);
    qk_synth_rows_free(&q5);
    qk_dataset mistral = make_dataset("mistral-v0.2-7b", 32, 32, 8, 128, 1e6, 32768, 8192);
    qk_synth_positions(&mistral, &o, 0, QK_SYNTH_Q, &q5);
    check_rows(&mistral, &q5, 500);
    qk_synth_rows_free(&q5);
}
END_TEST

START_TEST(test_example_ids)
{
    int negative = 0;
    for (int i = 0; i < 500; i++) {
        int32_t id = qk_synth_example_id(0, i);
        negative += id < 0;
        for (int j = 0; j < i; j++)
            ck_assert_int_ne(id, qk_synth_example_id(0, j));
    }
    ck_assert_int_gt(negative, 150);
    ck_assert_int_lt(negative, 350);
    ck_assert_int_ne(qk_synth_example_id(0, 0), qk_synth_example_id(1, 0));
}
END_TEST

START_TEST(test_bf16_rounding)
{
    ck_assert(qk_synth_bf16(1.0) == 1.0f);
    ck_assert(qk_synth_bf16(1.0 + 0x1p-8) == 1.0f);                /* tie to even */
    ck_assert(qk_synth_bf16(1.0 + 3 * 0x1p-8) == 1.0f + 0x1p-6f);  /* tie to even */
    ck_assert(qk_synth_bf16(1.0 + 0x1p-8 + 0x1p-12) == 1.0f + 0x1p-7f);
    ck_assert(qk_synth_bf16(-2.5) == -2.5f);
    ck_assert(qk_synth_bf16(3.14159) == 3.140625f);
}
END_TEST

/* ---- the written dataset ---------------------------------------------------------- */

static char *make_temp_dir(void)
{
    char *dir = strdup("/tmp/qk-test-synth-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    return dir;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void remove_tree(const char *dir) { nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static char *path3(const char *a, const char *b, const char *c)
{
    char *p;
    ck_assert_int_ge(asprintf(&p, "%s/%s%s%s", a, b, c ? "/" : "", c ? c : ""), 0);
    return p;
}

static void read_table(const char *root, const char *config, qk_pq_table *t)
{
    char *p = path3(root, config, "data.parquet");
    qk_err err;
    ck_assert_msg(qk_parquet_read_file(p, t, &err) == 0, "%s: %s", p, err.msg);
    free(p);
}


/* Compares every regular file below dir_a with the file of the same name
 * below dir_b; returns the number compared (-1 on a difference). */
static int compare_trees(const char *dir_a, const char *dir_b, const char *sub)
{
    char *da = sub ? path3(dir_a, sub, NULL) : strdup(dir_a);
    DIR *d = opendir(da);
    ck_assert_ptr_nonnull(d);
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && count >= 0) {
        if (e->d_name[0] == '.')
            continue;
        char *rel = sub ? path3(sub, e->d_name, NULL) : strdup(e->d_name);
        char *pa = path3(dir_a, rel, NULL), *pb = path3(dir_b, rel, NULL);
        struct stat st;
        ck_assert_int_eq(stat(pa, &st), 0);
        if (S_ISDIR(st.st_mode)) {
            int n = compare_trees(dir_a, dir_b, rel);
            count = n < 0 ? -1 : count + n;
        } else if (qk_same_file(pa, pb)) {
            count++;
        } else {
            count = -1;
        }
        free(rel);
        free(pa);
        free(pb);
    }
    closedir(d);
    free(da);
    return count;
}

static int count_dot_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] == '.' && strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

START_TEST(test_written_layout)
{
    qk_dataset ds = tiny();
    qk_synth_options o = options(QK_SYNTH_POPULATION, 0, 40);
    o.scale = QK_SYNTH_THESIS;
    char *out = make_temp_dir();
    qk_err err;
    ck_assert_msg(qk_synth_write_dataset(out, &ds, &o, &err) == 0, "%s", err.msg);
    char *root = path3(out, ds.id, NULL);
    /* all 8 candidate heads are sampled: 4 per layer, key heads 0 and 1 */
    qk_pq_table q0, q3, k0, k1;
    read_table(root, "l00h00q", &q0);
    read_table(root, "l00h03q", &q3);
    read_table(root, "l00h00k", &k0);
    read_table(root, "l00h01k", &k1);
    ck_assert_int_eq(q0.dim, 16);
    ck_assert_int_eq(q0.rows, q3.rows);
    ck_assert_mem_eq(q0.position, q3.position, (size_t)q0.rows * 4);
    ck_assert_mem_eq(q0.example_id, q3.example_id, (size_t)q0.rows * 4);
    ck_assert_int_eq(k0.rows, k1.rows);
    ck_assert_mem_eq(k0.position, k1.position, (size_t)k0.rows * 4);
    ck_assert(q0.rows != k0.rows || memcmp(q0.position, k0.position, (size_t)q0.rows * 4));
    /* the file holds the in-memory vectors, bf16-exact */
    qk_synth_model m;
    ck_assert_int_eq(qk_synth_model_init(&m, &ds, &o, 0, 3, &err), 0);
    qk_synth_rows rows;
    qk_synth_positions(&ds, &o, 0, QK_SYNTH_Q, &rows);
    ck_assert_int_eq(rows.n, q3.rows);
    float *x = malloc((size_t)rows.n * 16 * sizeof(float));
    qk_synth_vectors(&m, QK_SYNTH_Q, &rows, x);
    ck_assert_mem_eq(x, q3.vector, (size_t)rows.n * 16 * sizeof(float));
    for (int64_t i = 0; i < rows.n * 16; i++) {
        uint32_t bits;
        memcpy(&bits, &q3.vector[i], 4);
        ck_assert_uint_eq(bits & 0xFFFFu, 0);
    }
    free(x);
    qk_synth_rows_free(&rows);
    qk_synth_model_free(&m);
    /* the other files, and nothing left over */
    const char *names[] = {"README.md", "_saver_state.json", "synth-truth.tsv",
                           "l00h03q/truth.json", "l01h02q/data.parquet", "l01h01k/data.parquet"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *p = path3(root, names[i], NULL);
        ck_assert_msg(access(p, R_OK) == 0, "missing %s", names[i]);
        free(p);
    }
    ck_assert_int_eq(count_dot_entries(out), 0);
    char *tsv = path3(root, "synth-truth.tsv", NULL);
    uint8_t *text;
    size_t len;
    ck_assert_int_eq(qk_read_file(tsv, &text, &len, &err), 0);
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    ck_assert_int_eq(lines, 1 + 8);
    ck_assert(strncmp((char *)text, "dataset\tconfig\tlayer\tq_head\tkv_head", 34) == 0);
    free(text);
    free(tsv);
    qk_pq_table_free(&q0);
    qk_pq_table_free(&q3);
    qk_pq_table_free(&k0);
    qk_pq_table_free(&k1);
    remove_tree(out);
    free(root);
    free(out);
}
END_TEST

START_TEST(test_determinism)
{
    qk_dataset ds = tiny();
    qk_synth_options o = options(QK_SYNTH_POPULATION, 0, 30);
    o.scale = QK_SYNTH_THESIS;
    char *a = make_temp_dir(), *b = make_temp_dir(), *c = make_temp_dir();
    qk_err err;
    ck_assert_msg(qk_synth_write_dataset(a, &ds, &o, &err) == 0, "%s", err.msg);
    ck_assert_msg(qk_synth_write_dataset(b, &ds, &o, &err) == 0, "%s", err.msg);
    /* 8 query + 4 key configs (data.parquet, truth.json) + 3 files */
    ck_assert_int_eq(compare_trees(a, b, NULL), 8 * 2 + 4 + 3);
    /* writing again replaces the old dataset with the same bytes */
    ck_assert_msg(qk_synth_write_dataset(a, &ds, &o, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(compare_trees(a, b, NULL), 8 * 2 + 4 + 3);
    ck_assert_int_eq(count_dot_entries(a), 0);
    /* fewer heads: the configs written are the same bytes */
    o.n_heads = 3;
    ck_assert_msg(qk_synth_write_dataset(c, &ds, &o, &err) == 0, "%s", err.msg);
    char *rc = path3(c, ds.id, NULL), *ra = path3(a, ds.id, NULL);
    DIR *d = opendir(rc);
    struct dirent *e;
    int configs = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != 'l')
            continue;
        char *fc = path3(rc, e->d_name, "data.parquet"), *fa = path3(ra, e->d_name, "data.parquet");
        ck_assert_msg(qk_same_file(fc, fa), "%s differs", e->d_name);
        configs++;
        free(fc);
        free(fa);
    }
    closedir(d);
    ck_assert_int_ge(configs, 5); /* 3 query configs and their key configs */
    /* another seed gives other vectors */
    o.n_heads = 0;
    o.seed = 4;
    remove_tree(b);
    ck_assert_int_eq(mkdir(b, 0700), 0);
    ck_assert_msg(qk_synth_write_dataset(b, &ds, &o, &err) == 0, "%s", err.msg);
    ck_assert_int_eq(compare_trees(a, b, NULL), -1);
    remove_tree(a);
    remove_tree(b);
    remove_tree(c);
    free(ra);
    free(rc);
    free(a);
    free(b);
    free(c);
}
END_TEST

static Suite *synth_suite(void)
{
    Suite *s = suite_create("synth");
    TCase *truth = tcase_create("truth");
    tcase_set_timeout(truth, 120);
    tcase_add_test(truth, test_planted_linear_recovery);
    tcase_add_test(truth, test_population_closed_forms);
    tcase_add_test(truth, test_population_brute_force);
    tcase_add_test(truth, test_sample_matches_population);
    tcase_add_test(truth, test_rings_lead_complement);
    tcase_add_test(truth, test_doc_share_and_ramp);
    suite_add_tcase(s, truth);
    TCase *layout = tcase_create("layout");
    tcase_set_timeout(layout, 120);
    tcase_add_test(layout, test_head_selection);
    tcase_add_test(layout, test_example_counts);
    tcase_add_test(layout, test_positions);
    tcase_add_test(layout, test_example_ids);
    tcase_add_test(layout, test_bf16_rounding);
    tcase_add_test(layout, test_written_layout);
    tcase_add_test(layout, test_determinism);
    suite_add_tcase(s, layout);
    return s;
}

int main(void)
{
    openblas_set_num_threads(1);
    return qk_test_run(synth_suite());
}
