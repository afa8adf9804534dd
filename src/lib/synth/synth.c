/* The synthetic generator's heads, positions and vectors: which heads a
 * dataset gets, the token positions the capture tool would keep, and the
 * planted geometry of every (query head, key head) pair (docs/synth.md). */
#include "qk/synth.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/rng.h"

/* The second key of every stream says what it is for, so the streams of
 * different purposes never coincide. */
enum {
    TAG_BASIS = 1,
    TAG_KEY_PARAMS,
    TAG_QUERY_PARAMS,
    TAG_PLANES,
    TAG_NOISE,
    TAG_MASK,
    TAG_EXAMPLE
};

/* Per-head spreads shared by every family (docs/synth.md). */
#define R_LOGIT_SD 0.6     /* planted r: logit-normal (|r_k| IQR .87-.94) */
#define RATIO_LOG_SD 0.5   /* alpha_K / alpha_Q around the model median */
#define T_LOG_SD 0.2       /* complement variance */
#define CV_LOG_SD 0.3      /* content variance on s */
#define MU_K_A_CV 0.2      /* K cluster position on u */
#define MU_K_B_CV 0.2      /* K cluster position on s */
#define LEAN_SD 0.1        /* Q noise correlation between u and s */

/* Rings: RoPE planes that turn about 2 to 10 times over the context, in
 * the leading complement pairs (a plane that turns less than once is an
 * arc, whose linear trend the drift axis a takes by construction: nothing
 * of it is left to see in the complement of {a, b}). Of the model's RoPE
 * frequencies in that range the N_RINGS closest to a whole number of turns
 * are planted (best score first; the score tolerance is
 * RING_TURN_TOLERANCE turns). Their pooled variances fall by RING_RATIO
 * from one ring to the next, and the last is RING_MARGIN times the first
 * content-noise pair, so that each principal pair of the complement holds
 * one ring. K's ring holds RING_K_MEAN of K's variance in its plane (a
 * clean ring); Q turns on a small ring around the same centre
 * (RING_Q_RADIUS of K's radius, noise sd RING_Q_NOISE of its radius): a K
 * ring around a Q blob that turns with it, which the Q/K discriminant
 * cannot tell apart (balanced accuracy about 0.5). Q's ring is small
 * because a query ring turning against the key rings is a positional
 * signal of its own: it lowers the attention plasticity of distant key
 * pairs. */
#define N_RINGS 4
#define RING_TURN_TOLERANCE 0.15
#define RING_MIN_TURNS 1.8
#define RING_MAX_TURNS 10.0
#define RING_RATIO 1.4
#define RING_MARGIN 2.0
#define RING_K_MEAN 0.95
#define RING_Q_RADIUS 0.1
#define RING_Q_NOISE 0.3

void qk_synth_options_default(qk_synth_options *o)
{
    memset(o, 0, sizeof *o);
    /* the scale and mode by their names in the defaults ("demo", "population") */
    o->mode = strcmp(QK_STR(QK_DEFAULT_SYNTH_MODE), "planted-linear") == 0
                  ? QK_SYNTH_PLANTED_LINEAR : QK_SYNTH_POPULATION;
    o->scale = strcmp(QK_STR(QK_DEFAULT_SCALE), "thesis") == 0 ? QK_SYNTH_THESIS : QK_SYNTH_DEMO;
}

/* The key of a name (dataset id, stream purpose) in the seeds of the
 * synthetic data: FNV-1a over little-endian 64-bit words (the last one
 * zero-padded), then the length and a final avalanche. It is part of what
 * the data are, so it must never change. */
static uint64_t string_key(const char *s)
{
    const uint64_t prime = 0x100000001b3ULL;
    size_t len = strlen(s);
    uint64_t h = 0xcbf29ce484222325ULL ^ 0x5157, w;
    for (size_t i = 0; i < len; i += 8) {
        w = 0;
        memcpy(&w, s + i, len - i < 8 ? len - i : 8); /* little-endian hosts only */
        h = (h ^ w) * prime;
    }
    h = (h ^ len) * prime;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

/* ---- heads --------------------------------------------------------------- */

static int compare_heads(const void *x, const void *y)
{
    const int *a = x, *b = y;
    return a[0] != b[0] ? (a[0] > b[0]) - (a[0] < b[0]) : (a[1] > b[1]) - (a[1] < b[1]);
}

int qk_synth_select_heads(const qk_dataset *ds, const qk_synth_options *o,
                          int *layers, int *heads, int cap)
{
    int candidates = ds->n_layers * ds->n_q_heads;
    int k = candidates < QK_SYNTH_SAMPLED_HEADS ? candidates : QK_SYNTH_SAMPLED_HEADS;
    int *picks = qk_malloc((size_t)k * sizeof *picks);
    int (*pairs)[2] = qk_malloc((size_t)k * sizeof *pairs);
    qk_python_sample(0, candidates, k, picks);
    int n = 0;
    for (int i = 0; i < k; i++) {
        int layer = picks[i] / ds->n_q_heads;
        if (ds->cross[layer])
            continue; /* cross-attention layers never reach the capture hook */
        pairs[n][0] = layer;
        pairs[n][1] = picks[i] % ds->n_q_heads;
        n++;
    }
    qsort(pairs, (size_t)n, sizeof pairs[0], compare_heads);
    int want = o->n_heads > 0 ? o->n_heads
               : o->scale == QK_SYNTH_DEMO ? QK_SYNTH_DEMO_HEADS : n;
    if (want > n)
        want = n;
    if (want > cap)
        want = cap;
    for (int i = 0; i < want; i++) {
        /* evenly spaced through the sorted list, so every depth is seen */
        int j = want == n ? i : (int)(((2 * (int64_t)i + 1) * n) / (2 * want));
        layers[i] = pairs[j][0];
        heads[i] = pairs[j][1];
    }
    free(picks);
    free(pairs);
    return want;
}

int qk_synth_n_examples(const qk_dataset *ds, const qk_synth_options *o)
{
    if (o->n_examples > 0)
        return o->n_examples;
    if (o->scale == QK_SYNTH_THESIS)
        return QK_SYNTH_THESIS_EXAMPLES;
    double per_example = (double)ds->context_length / ds->bucket_size;
    long n = lround(QK_SYNTH_DEMO_ROWS / per_example);
    return n < 1 ? 1 : (int)n;
}

/* ---- positions ----------------------------------------------------------- */

/* MurmurHash3's 32-bit finalizer: a bijection on 32-bit words, so distinct
 * example numbers get distinct ids. */
static uint32_t fmix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85EBCA6BU;
    h ^= h >> 13;
    h *= 0xC2B2AE35U;
    h ^= h >> 16;
    return h;
}

int32_t qk_synth_example_id(uint64_t seed, int example)
{
    uint64_t keys[2] = {seed, TAG_EXAMPLE};
    qk_rng r;
    qk_rng_seed(&r, keys, 2);
    uint32_t offset = (uint32_t)qk_rng_u64(&r);
    return (int32_t)fmix32((uint32_t)example + offset);
}

typedef struct row_buf {
    qk_synth_rows *rows;
    int64_t cap;
} row_buf;

static void row_push(row_buf *b, int32_t bucket, int32_t id, int32_t pos, int32_t ex)
{
    qk_synth_rows *r = b->rows;
    if (r->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        r->bucket = qk_realloc(r->bucket, (size_t)b->cap * sizeof(int32_t));
        r->example_id = qk_realloc(r->example_id, (size_t)b->cap * sizeof(int32_t));
        r->position = qk_realloc(r->position, (size_t)b->cap * sizeof(int32_t));
        r->example = qk_realloc(r->example, (size_t)b->cap * sizeof(int32_t));
    }
    r->bucket[r->n] = bucket;
    r->example_id[r->n] = id;
    r->position[r->n] = pos;
    r->example[r->n] = ex;
    r->n++;
}

void qk_synth_positions(const qk_dataset *ds, const qk_synth_options *o,
                        int layer, int kind, qk_synth_rows *rows)
{
    memset(rows, 0, sizeof *rows);
    row_buf buf = {rows, 0};
    int n_examples = qk_synth_n_examples(ds, o);
    int L = ds->context_length, B = ds->bucket_size;
    /* Each token is kept with p = 1/B independently; the gap to the next
     * kept token is geometric, so draw gaps instead of one coin per token. */
    double log_keep_not = log1p(-1.0 / B);
    int mask_kind = o->stratified ? QK_SYNTH_Q : kind;
    uint64_t data_key = string_key(ds->id);
    for (int e = 0; e < n_examples; e++) {
        uint64_t keys[6] = {o->seed, data_key, TAG_MASK, (uint64_t)e,
                            (uint64_t)layer, (uint64_t)mask_kind};
        qk_rng r;
        qk_rng_seed(&r, keys, 6);
        int32_t id = qk_synth_example_id(o->seed, e);
        double pos = -1.0;
        for (;;) {
            double u = 1.0 - qk_rng_uniform(&r); /* in (0, 1] */
            double gap = B == 1 ? 0.0 : floor(log(u) / log_keep_not);
            pos += gap + 1.0;
            if (pos >= L)
                break;
            int32_t p = (int32_t)pos;
            row_push(&buf, p / B, id, p, e);
        }
    }
}

void qk_synth_rows_free(qk_synth_rows *rows)
{
    free(rows->bucket);
    free(rows->example_id);
    free(rows->position);
    free(rows->example);
    memset(rows, 0, sizeof *rows);
}

/* ---- the planted model ----------------------------------------------------- */

static double logistic(double x) { return 1.0 / (1.0 + exp(-x)); }
static double logit(double p) { return log(p / (1.0 - p)); }
static double clamp(double x, double lo, double hi) { return x < lo ? lo : x > hi ? hi : x; }

/* Lognormal factor with mean 1. */
static double lognormal1(double sigma, double z) { return exp(sigma * z - 0.5 * sigma * sigma); }

/* A Haar-random orthonormal basis: QR of a Gaussian matrix, with each
 * column's sign fixed by the sign of R's diagonal. */
static int haar_basis(double *basis, int d, qk_rng *r, qk_err *err)
{
    double *tau = qk_malloc((size_t)d * sizeof *tau);
    for (int i = 0; i < d * d; i++)
        basis[i] = qk_rng_normal(r);
    int rc = LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, d, d, basis, d, tau);
    double *sign = qk_malloc((size_t)d * sizeof *sign);
    for (int j = 0; j < d; j++)
        sign[j] = basis[j * d + j] < 0 ? -1.0 : 1.0;
    if (rc == 0)
        rc = LAPACKE_dorgqr(LAPACK_ROW_MAJOR, d, d, d, basis, d, tau);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++)
            basis[i * d + j] *= sign[j];
    free(tau);
    free(sign);
    return rc == 0 ? 0 : qk_fail(err, "QR of the random basis failed (LAPACK info %d)", rc);
}

double qk_synth_sd_t(int L) { return sqrt(((double)L * L - 1.0) / 12.0); }

/* Sum over the L centred positions s = t - (L-1)/2 of cos(w s), and of
 * s sin(w s) (= -D'(w)): the Dirichlet kernel and its derivative. */
void qk_synth_dirichlet(double w, int L, double *sum_cos, double *sum_s_sin)
{
    double n = L;
    double m2 = n * (n * n - 1.0) / 12.0;                       /* sum s^2 */
    double m4 = n * (n * n - 1.0) * (3.0 * n * n - 7.0) / 240.0; /* sum s^4 */
    if (fabs(w) * n < 1e-2) {
        *sum_cos = n - w * w * m2 / 2.0 + w * w * w * w * m4 / 24.0;
        *sum_s_sin = w * m2 - w * w * w * m4 / 6.0;
        return;
    }
    double sh = sin(w / 2.0), ch = cos(w / 2.0);
    double sl = sin(w * n / 2.0), cl = cos(w * n / 2.0);
    *sum_cos = sl / sh;
    double derivative = ((n / 2.0) * cl * sh - 0.5 * sl * ch) / (sh * sh);
    *sum_s_sin = -derivative;
}

/* How well a ring of k turns shows its turning in the complement: near a
 * whole number of turns the wrapped angle of the detrended ring follows
 * position (the best-cut Pearson r of the complement analysis, about 1/k
 * for a clean ring, is 0.15 to 0.2 for 2 or 3 detrended turns), half-way
 * between two whole numbers it does not (about 0.05 to 0.1). The score
 * prefers whole turns, then few of them. */
static double ring_score(double turns)
{
    double off = (turns - floor(turns + 0.5)) / RING_TURN_TOLERANCE;
    return exp(-off * off) / turns;
}

static int compare_candidates(const void *x, const void *y)
{
    const double *a = x, *b = y; /* {score, turns, index} */
    if (a[0] != b[0])
        return a[0] > b[0] ? -1 : 1;
    return (a[1] > b[1]) - (a[1] < b[1]);
}

/* The rings of a RoPE layer in the leading complement pairs (basis columns
 * 2, 3, then 4, 5, ...), strongest first. The plane of rope index i turns
 * rope_theta^(-2i/d) L / 2pi times over the context; of the planes that
 * turn RING_MIN_TURNS to RING_MAX_TURNS times, the N_RINGS of best score
 * are planted, in the order of their score. */
static void choose_planes(qk_synth_model *m, const qk_dataset *ds, qk_rng *r)
{
    int n_rings = N_RINGS;
    int max_planes = (m->d - 2) / 2 - 1; /* leave at least one noise pair */
    if (n_rings > max_planes)
        n_rings = max_planes;
    if (n_rings > QK_SYNTH_MAX_PLANES)
        n_rings = QK_SYNTH_MAX_PLANES;
    int half = ds->head_dim / 2, n_cand = 0, L = ds->context_length;
    double (*cand)[3] = qk_malloc((size_t)(half > 0 ? half : 1) * sizeof *cand);
    for (int i = 0; i < half; i++) {
        double freq = pow(ds->rope_theta, -2.0 * i / ds->head_dim);
        double turns = freq * L / (2.0 * M_PI);
        if (turns < RING_MIN_TURNS || turns > RING_MAX_TURNS)
            continue;
        cand[n_cand][0] = ring_score(turns);
        cand[n_cand][1] = turns;
        cand[n_cand][2] = i;
        n_cand++;
    }
    qsort(cand, (size_t)n_cand, sizeof cand[0], compare_candidates);
    if (n_rings > n_cand)
        n_rings = n_cand;
    double var_t = qk_synth_sd_t(L) * qk_synth_sd_t(L);
    m->n_planes = 0;
    for (int k = 0; k < n_rings; k++) {
        qk_synth_plane *p = &m->plane[m->n_planes];
        int i = (int)cand[k][2];
        double sum_cos, sum_s_sin;
        p->col = 2 + 2 * m->n_planes;
        p->rope_index = i;
        p->freq = pow(ds->rope_theta, -2.0 * i / ds->head_dim);
        p->turns = p->freq * L / (2.0 * M_PI);
        p->phase = 2.0 * M_PI * qk_rng_uniform(r);
        qk_synth_dirichlet(p->freq, L, &sum_cos, &sum_s_sin);
        p->slope = sum_s_sin / ((double)L * var_t);
        m->n_planes++;
    }
    free(cand);
}

/* The complement budget t_perp of each kind. K's is split into the ring
 * planes and the content-noise pairs that follow them: ring j takes the
 * share c ratio^(n-1-j), RING_K_MEAN of it in the turning mean (radius^2,
 * half in each direction) and the rest in noise; the noise pairs share
 * the rest by the (k + 1)^-decay spectrum. Q turns on a small, clean ring
 * in each plane (RING_Q_RADIUS times K's radius, noise sd RING_Q_NOISE
 * times its radius) and its remaining content noise is isotropic in the
 * rest of the complement. c makes the pooled variance of the last ring
 * RING_MARGIN times that of the first noise pair for a head with equal
 * budgets: c (1 + e) = margin ((1 - c R) w + f), with w the first noise
 * pair's weight in the spectrum, R the sum of the ring shares per unit of
 * c, e Q's ring variance per unit of K's and f = 2 / (number of noise
 * directions) the share of a pair of Q's isotropic noise. */
static void set_noise(qk_synth_model *m)
{
    int d = m->d, n = m->n_planes;
    int n_pairs = (d - 2) / 2, n_noise = n_pairs - n;
    double sd_t = qk_synth_sd_t(m->context);
    double ratio = RING_RATIO, margin = RING_MARGIN, kmean = RING_K_MEAN;
    double qrad = RING_Q_RADIUS, qnoise = RING_Q_NOISE, decay = QK_SYNTH_SPECTRUM_DECAY;
    double wsum = 0.0;
    for (int k = 0; k < n_noise; k++)
        wsum += pow(k + 1.0, -decay);
    double share[QK_SYNTH_MAX_PLANES], R = 0.0;
    for (int j = 0; j < n; j++) {
        share[j] = pow(ratio, n - 1 - j);
        R += share[j];
    }
    double c = 0.0;
    if (n > 0) {
        double w = 1.0 / wsum, f = 2.0 / (d - 2 - 2 * n);
        double e = qrad * qrad * kmean * (1.0 + 2.0 * qnoise * qnoise);
        c = margin * (w + f) / (1.0 + e + margin * w * R);
        if (c * R > 0.8) /* tiny heads: keep some room for the noise */
            c = 0.8 / R;
    }
    for (int kind = 0; kind < 2; kind++) {
        qk_synth_kind *q = &m->kind[kind];
        double *nv = m->noise_var[kind];
        q->sd_a = fabs(q->alpha) * sd_t * sqrt(1.0 / (q->r * q->r) - 1.0);
        nv[0] = q->sd_a * q->sd_a;
        nv[1] = q->cv_b;
    }
    qk_synth_kind *kk = &m->kind[QK_SYNTH_K], *qq = &m->kind[QK_SYNTH_Q];
    double ring_k = 0.0, ring_q = 0.0;
    for (int j = 0; j < n; j++) {
        int col = m->plane[j].col;
        double total = c * share[j] * kk->t_perp;
        double rho2 = kmean * total;
        kk->radius[j] = sqrt(rho2);
        qq->radius[j] = qrad * kk->radius[j];
        double qn = qnoise * qnoise * qq->radius[j] * qq->radius[j];
        m->noise_var[QK_SYNTH_K][col] = m->noise_var[QK_SYNTH_K][col + 1] = 0.5 * (total - rho2);
        m->noise_var[QK_SYNTH_Q][col] = m->noise_var[QK_SYNTH_Q][col + 1] = qn;
        ring_k += total;
        ring_q += qq->radius[j] * qq->radius[j] + 2.0 * qn;
    }
    int n_dirs = d - 2 - 2 * n; /* the directions after the ring planes */
    double flat = qq->t_perp > ring_q ? (qq->t_perp - ring_q) / n_dirs : 0.0;
    for (int k = 0; k < n_noise; k++) {
        int col = 2 + 2 * (n + k);
        double v = 0.5 * (kk->t_perp - ring_k) * pow(k + 1.0, -decay) / wsum;
        m->noise_var[QK_SYNTH_K][col] = m->noise_var[QK_SYNTH_K][col + 1] = v;
    }
    if ((d - 2) % 2) /* an odd complement: its last direction like the last pair */
        m->noise_var[QK_SYNTH_K][d - 1] = m->noise_var[QK_SYNTH_K][d - 2];
    for (int j = 2 + 2 * n; j < d; j++)
        m->noise_var[QK_SYNTH_Q][j] = flat;
}

/* Q's content variance on s: (ratio * its content sd on u)^2. */
static double query_cv_b(double ratio, double alpha, double r, int L)
{
    double sd_a = fabs(alpha) * qk_synth_sd_t(L) * sqrt(1.0 / (r * r) - 1.0);
    return ratio * ratio * sd_a * sd_a;
}

/* The offset Delta_b = mu_Q^b - mu_K^b that gives a head the separation
 * strength sep. For the linear model (docs/synth.md, planted-linear) the
 * separation strength is (2cv_b + Delta_b^2) / (A + 2cv_b + 2T + Delta_a^2
 * + Delta_b^2), cv_b and T the means of the two kinds, so
 *   Delta_b^2 = [sep (A + 2cv_b + 2T + Delta_a^2) - 2cv_b] / (1 - sep),
 *   A = D_Q^2 / r_Q^2 + D_K^2 / r_K^2 with D = alpha sd_t. */
static double separation_offset(const qk_synth_kind *q, const qk_synth_kind *k, double sep,
                                int L)
{
    double sd_t = qk_synth_sd_t(L);
    double dq = q->alpha * sd_t, dk = k->alpha * sd_t;
    double A = dq * dq / (q->r * q->r) + dk * dk / (k->r * k->r);
    double cv = q->cv_b + k->cv_b;
    double delta_a = q->mu_a - k->mu_a;
    double num = sep * (A + cv + q->t_perp + k->t_perp + delta_a * delta_a) - cv;
    return sqrt((num > 0 ? num : 0.0) / (1.0 - sep));
}

/* Delta_b of a head with the preset's central values. The K clusters sit
 * near -(1 - q_b) Delta_b on s, so a typical head's Q cluster sits at
 * q_b Delta_b: q_b = 1/2 puts the two clusters either side of the origin,
 * q_b = 0 the Q cluster on it. The Q cluster's distance from the origin
 * along s is what the keys' content differences on s are multiplied by in
 * every query-key score difference, so q_b sets how much those
 * differences decide the order of two keys (attention plasticity). */
static double typical_separation_offset(const qk_synth_preset *p, int L)
{
    qk_synth_kind q = {0}, k = {0};
    k.r = p->r_k;
    k.alpha = p->alpha_k;
    k.mu_a = p->mu_k_a;
    k.cv_b = p->cv_k;
    k.t_perp = p->t_perp;
    q.r = p->r_q;
    q.alpha = p->alpha_k / p->slope_ratio;
    q.mu_a = p->bias / p->alpha_k;
    q.cv_b = query_cv_b(p->cv_q, q.alpha, q.r, L);
    q.t_perp = p->t_perp;
    return separation_offset(&q, &k, p->sep, L);
}

/* The key side of a pair. Its content on s is split: k_doc of its
 * variance is shared by the keys of one example (document), the rest
 * varies from token to token. The split leaves every moment over the
 * positions (and so the population truth) unchanged, but only the token
 * part differs between two keys of one document, which are the key pairs
 * attention plasticity compares. */
static void draw_key_params(qk_synth_model *m, const qk_synth_preset *p, double depth, uint64_t seed)
{
    uint64_t keys[5] = {seed, m->lineage_key, TAG_KEY_PARAMS, (uint64_t)m->layer,
                        (uint64_t)m->kv_head};
    qk_rng r;
    qk_rng_seed(&r, keys, 5);
    double z_r = qk_rng_normal(&r), z_alpha = qk_rng_normal(&r);
    double z_mu = qk_rng_normal(&r), z_cv = qk_rng_normal(&r);
    double z_t = qk_rng_normal(&r), z_mub = qk_rng_normal(&r);
    qk_synth_kind *k = &m->kind[QK_SYNTH_K];
    k->r = logistic(logit(p->r_k) + R_LOGIT_SD * z_r);
    k->alpha = p->alpha_k * lognormal1(p->alpha_k_sd, z_alpha);
    k->mu_a = p->mu_k_a * (1.0 + MU_K_A_CV * z_mu);
    k->cv_b = p->cv_k * lognormal1(CV_LOG_SD, z_cv) * exp(p->depth_cv * (depth - 0.5));
    k->t_perp = p->t_perp * lognormal1(T_LOG_SD, z_t);
    k->mu_b = -(1.0 - p->q_b) * typical_separation_offset(p, m->context) *
              (1.0 + MU_K_B_CV * z_mub);
    k->lean = 0.0;
    k->ramp = 0.0;
    k->doc_share = m->mode == QK_SYNTH_POPULATION ? p->k_doc : 0.0;
}

/* exp(c (1/2 - depth)) divided by its mean over depth in [0, 1]. */
static double depth_factor(double c, double depth)
{
    double mean = fabs(c) < 1e-9 ? 1.0 : sinh(c / 2.0) / (c / 2.0);
    return exp(c * (0.5 - depth)) / mean;
}

static double draw_separation(const qk_synth_preset *p, double z)
{
    if (p->sep_logistic)
        return clamp(logistic(logit(p->sep) + p->sep_sd * z), 0.02, 0.97);
    return clamp(p->sep + p->sep_sd * z, 0.08, 0.70);
}

static double draw_mu_q_a(const qk_synth_preset *p, double depth, double z)
{
    double mean = p->bias / p->alpha_k * depth_factor(p->depth_bias, depth);
    if (p->mu_lognormal)
        return mean * lognormal1(p->mu_spread, z);
    return mean * (1.0 + p->mu_spread * z);
}

static void draw_query_params(qk_synth_model *m, const qk_synth_preset *p, double depth,
                              uint64_t seed, double *separation)
{
    uint64_t keys[5] = {seed, m->lineage_key, TAG_QUERY_PARAMS, (uint64_t)m->layer,
                        (uint64_t)m->q_head};
    qk_rng r;
    qk_rng_seed(&r, keys, 5);
    double z_sep = qk_rng_normal(&r), z_other = qk_rng_normal(&r);
    double z_r = qk_rng_normal(&r), z_ratio = qk_rng_normal(&r);
    double z_lean = qk_rng_normal(&r), z_cv = qk_rng_normal(&r);
    double z_t = qk_rng_normal(&r), u_flip = qk_rng_uniform(&r);
    /* the family law: separation and mu_Q^a from correlated latents */
    double z_mu = p->corr * z_sep + sqrt(1.0 - p->corr * p->corr) * z_other;
    const qk_synth_kind *k = &m->kind[QK_SYNTH_K];
    qk_synth_kind *q = &m->kind[QK_SYNTH_Q];
    q->r = logistic(logit(p->r_q) + R_LOGIT_SD * z_r);
    q->mu_a = draw_mu_q_a(p, depth, z_mu);
    if (u_flip < p->neg_frac)
        q->mu_a = -fabs(q->mu_a);
    q->alpha = k->alpha / (p->slope_ratio * exp(RATIO_LOG_SD * z_ratio));
    q->lean = m->mode == QK_SYNTH_POPULATION ? clamp(p->lean + LEAN_SD * z_lean, -0.95, 0.95)
                                             : 0.0;
    q->cv_b = query_cv_b(p->cv_q * lognormal1(CV_LOG_SD, z_cv), q->alpha, q->r, m->context);
    q->t_perp = p->t_perp * lognormal1(T_LOG_SD, z_t);
    /* Q's content variance in the complement grows (q_ramp > 0) or falls
     * along the context: the query model of a position bin is broader or
     * narrower there, against the same positional term */
    q->ramp = m->mode == QK_SYNTH_POPULATION ? p->q_ramp : 0.0;
    *separation = draw_separation(p, z_sep);
}

int qk_synth_model_init(qk_synth_model *m, const qk_dataset *ds,
                        const qk_synth_options *o, int layer, int q_head,
                        qk_err *err)
{
    memset(m, 0, sizeof *m);
    if (ds->head_dim < 4)
        return qk_fail(err, "head_dim %d is too small for a planted head (need 4)", ds->head_dim);
    if (layer < 0 || layer >= ds->n_layers || q_head < 0 || q_head >= ds->n_q_heads)
        return qk_fail(err, "head l%dh%d is outside the model", layer, q_head);
    const qk_synth_preset *p = qk_synth_preset_find(ds->id);
    int d = ds->head_dim;
    m->d = d;
    m->layer = layer;
    m->q_head = q_head;
    m->kv_head = q_head / (ds->n_q_heads / ds->n_kv_heads);
    m->context = ds->context_length;
    m->mode = o->mode;
    m->seed = o->seed;
    m->data_key = string_key(ds->id);
    m->lineage_key = string_key(p->lineage[0] ? p->lineage : ds->id);
    m->basis = qk_malloc((size_t)d * d * sizeof *m->basis);
    m->noise_var[0] = qk_malloc((size_t)d * sizeof(double));
    m->noise_var[1] = qk_malloc((size_t)d * sizeof(double));

    uint64_t group_keys[5] = {o->seed, m->lineage_key, TAG_BASIS, (uint64_t)layer,
                              (uint64_t)m->kv_head};
    qk_rng r;
    qk_rng_seed(&r, group_keys, 5);
    if (haar_basis(m->basis, d, &r, err) != 0) {
        qk_synth_model_free(m);
        return -1;
    }
    double depth = ds->n_layers > 1 ? (double)layer / (ds->n_layers - 1) : 0.0;
    double separation;
    draw_key_params(m, p, depth, o->seed);
    draw_query_params(m, p, depth, o->seed, &separation);
    m->kind[QK_SYNTH_Q].mu_b = m->kind[QK_SYNTH_K].mu_b +
        separation_offset(&m->kind[QK_SYNTH_Q], &m->kind[QK_SYNTH_K], separation, m->context);
    if (o->mode == QK_SYNTH_POPULATION && !ds->nope[layer]) {
        group_keys[2] = TAG_PLANES;
        qk_rng_seed(&r, group_keys, 5);
        choose_planes(m, ds, &r);
    }
    set_noise(m);
    return 0;
}

void qk_synth_model_free(qk_synth_model *m)
{
    free(m->basis);
    free(m->noise_var[0]);
    free(m->noise_var[1]);
    memset(m, 0, sizeof *m);
}

/* ---- vectors ----------------------------------------------------------------- */

float qk_synth_bf16(double x)
{
    float f = (float)x;
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7F800000U) != 0x7F800000U) /* leave inf and nan alone */
        bits += 0x7FFFU + ((bits >> 16) & 1U);
    bits &= 0xFFFF0000U;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* Basis coordinates of one row: the planted means plus content noise. */
static void row_coefficients(const qk_synth_model *m, int kind, double t, qk_rng *noise,
                             double z_doc, const double *noise_sd, double *coef)
{
    const qk_synth_kind *q = &m->kind[kind];
    double s = t - 0.5 * (m->context - 1);
    memset(coef, 0, (size_t)m->d * sizeof *coef);
    coef[0] = q->mu_a + q->alpha * s;
    coef[1] = q->mu_b;
    for (int p = 0; p < m->n_planes; p++) {
        const qk_synth_plane *pl = &m->plane[p];
        double angle = pl->freq * t + pl->phase;
        double centred = pl->phase + pl->freq * 0.5 * (m->context - 1);
        double trend = q->radius[p] * pl->slope * s; /* the linear trend removed */
        coef[pl->col] += q->radius[p] * cos(angle) + trend * sin(centred);
        coef[pl->col + 1] += q->radius[p] * sin(angle) - trend * cos(centred);
    }
    double z0 = qk_rng_normal(noise), z1 = qk_rng_normal(noise);
    coef[0] += noise_sd[0] * z0;
    double z_s = sqrt(1.0 - q->doc_share) * z1 + sqrt(q->doc_share) * z_doc;
    coef[1] += noise_sd[1] * (q->lean * z0 + sqrt(1.0 - q->lean * q->lean) * z_s);
    /* the complement's content variance follows the kind's ramp, whose mean
     * over the positions 0 .. L-1 is exactly 1 */
    double scale = 1.0;
    if (q->ramp != 0.0 && m->context > 1)
        scale = sqrt(1.0 + q->ramp * (2.0 * t / (m->context - 1) - 1.0));
    for (int j = 2; j < m->d; j++)
        coef[j] += scale * noise_sd[j] * qk_rng_normal(noise);
}

void qk_synth_vectors(const qk_synth_model *m, int kind,
                      const qk_synth_rows *rows, float *out)
{
    int d = m->d;
    int64_t n = rows->n;
    if (n == 0)
        return;
    double *coef = qk_malloc((size_t)n * d * sizeof *coef);
    double *x = qk_malloc((size_t)n * d * sizeof *x);
    double *noise_sd = qk_malloc((size_t)d * sizeof *noise_sd);
    for (int j = 0; j < d; j++)
        noise_sd[j] = sqrt(m->noise_var[kind][j]);
    uint64_t head = (uint64_t)(kind == QK_SYNTH_Q ? m->q_head : m->kv_head);
    qk_rng noise;
    int32_t current = -1;
    double z_doc = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (rows->example[i] != current) {
            /* one stream per (dataset, layer, head, kind, example); its
             * first draw is the example's shared content on s */
            current = rows->example[i];
            uint64_t keys[7] = {m->seed, m->data_key, TAG_NOISE, (uint64_t)m->layer,
                                head, (uint64_t)kind, (uint64_t)current};
            qk_rng_seed(&noise, keys, 7);
            z_doc = m->kind[kind].doc_share > 0.0 ? qk_rng_normal(&noise) : 0.0;
        }
        row_coefficients(m, kind, rows->position[i], &noise, z_doc, noise_sd, coef + i * d);
    }
    /* x = coef * basis^T: row i holds sum_j coef[i][j] * column j */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)n, d, d, 1.0, coef, d,
                m->basis, d, 0.0, x, d);
    for (int64_t i = 0; i < n * d; i++)
        out[i] = qk_synth_bf16(x[i]);
    free(coef);
    free(x);
    free(noise_sd);
}
