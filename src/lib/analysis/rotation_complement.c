/* The d - 2 dimensional complement of the {a, b} plane (docs/rotation.md,
 * "One head: the complement"): its principal directions, their pairs, the angle of
 * each pair against position, Q/K separability on each ring, and the
 * residual correlation with position that the drift lemma says is 0. */
#include "qk/rotation.h"

#include <cblas.h>
#include <lapacke.h>
#include <math.h>
#include <sleef.h>
#include <stdlib.h>
#include <string.h>

#include "qk/pca.h"
#include "qk/plasticity.h"
#include "qk/simd.h"

#define PROJ_BLOCK 256
/* Pairs analysed together, one in each lane of a vector (the kernel,
 * src/lib/rotation_pairs_kernel.h): every lane does exactly the arithmetic
 * of a lone pair, so a pair's metrics do not depend on the company it is
 * computed in. */
#define PAIR_LANES 4 /* interleave() is written for 4 */

void qk_comp_work_init(qk_comp_work *w, int dim)
{
    size_t dd = (size_t)dim * dim;
    w->dim = dim;
    qk_moments_init(&w->pooled, dim);
    w->basis = qk_doubles(dd);
    w->lambda = qk_doubles((size_t)dim);
    w->qr = qk_doubles(dd);
    w->tmp = qk_doubles(dd);
    w->reduced = qk_doubles(dd);
    w->evec = qk_doubles(dd);
    w->scratch = qk_doubles(4 * (size_t)dim);
    w->block = qk_doubles((size_t)PROJ_BLOCK * dim);
    w->coord_block = qk_doubles((size_t)PROJ_BLOCK * 2 * QK_ROT_MAX_PAIRS);
    w->proj = NULL;
    w->proj_cap = 0;
}

void qk_comp_work_free(qk_comp_work *w)
{
    qk_moments_free(&w->pooled);
    free(w->basis);
    free(w->lambda);
    free(w->qr);
    free(w->tmp);
    free(w->reduced);
    free(w->evec);
    free(w->scratch);
    free(w->block);
    free(w->coord_block);
    free(w->proj);
    memset(w, 0, sizeof *w);
}

/* ---- the basis ------------------------------------------------------------------ */

/* An orthonormal basis of the complement of {a, b}: the last d - 2 columns
 * of the orthogonal factor of the QR factorisation of [a b]. Column-major
 * in w->qr, so column j (a unit vector) starts at w->qr + j * d. */
static int complement_frame(const double *a, const double *b, qk_comp_work *w, qk_err *err)
{
    int d = w->dim;
    double tau[2];
    memcpy(w->qr, a, (size_t)d * sizeof(double));
    memcpy(w->qr + d, b, (size_t)d * sizeof(double));
    lapack_int info = LAPACKE_dgeqrf(LAPACK_COL_MAJOR, d, 2, w->qr, d, tau);
    if (info == 0)
        info = LAPACKE_dorgqr(LAPACK_COL_MAJOR, d, d, 2, w->qr, d, tau);
    if (info != 0)
        return qk_fail(err, "QR factorisation of the axes failed (info %d)", (int)info);
    return 0;
}

/* The eigenvectors of P_ab Sigma P_ab inside the complement: with Z the
 * d x (d-2) frame, Z^T Sigma Z is decomposed and each eigenvector y mapped
 * back as Z y. This equals decomposing P_ab Sigma P_ab and dropping the two
 * null directions of a and b, but cannot confuse those with other null
 * directions of a rank-deficient Sigma. */
static int complement_eigen(qk_comp_work *w, qk_err *err)
{
    int d = w->dim, n = d - 2;
    const double *z = w->qr + 2 * (size_t)d; /* row j = frame vector j */
    cblas_dsymm(CblasRowMajor, CblasRight, CblasUpper, n, d, 1.0, w->pooled.cov, d, z, d, 0.0,
                w->tmp, d);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, d, 1.0, w->tmp, d, z, d, 0.0,
                w->reduced, n);
    for (int i = 0; i < n; i++) /* exactly symmetric */
        for (int j = i + 1; j < n; j++) {
            double v = 0.5 * (w->reduced[(size_t)i * n + j] + w->reduced[(size_t)j * n + i]);
            w->reduced[(size_t)i * n + j] = v;
            w->reduced[(size_t)j * n + i] = v;
        }
    if (qk_pca_eigen(w->reduced, n, n, w->lambda, w->evec, err) != 0)
        return -1;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, d, n, 1.0, w->evec, n, z, d, 0.0,
                w->basis, d);
    return 0;
}

/* Re-projects each basis vector with P_ab, renormalises it and makes its
 * largest entry positive; negative rounding residue in lambda becomes 0. */
static void canonical_basis(const double *a, const double *b, qk_comp_work *w)
{
    int d = w->dim;
    for (int j = 0; j < d - 2; j++) {
        double *v = w->basis + (size_t)j * d;
        cblas_daxpy(d, -cblas_ddot(d, a, 1, v, 1), a, 1, v, 1);
        cblas_daxpy(d, -cblas_ddot(d, b, 1, v, 1), b, 1, v, 1);
        double norm = sqrt(cblas_ddot(d, v, 1, v, 1));
        if (norm > 0.0)
            cblas_dscal(d, 1.0 / norm, v, 1);
        qk_rot_canonical_sign(v, d);
        if (!(w->lambda[j] > 0.0))
            w->lambda[j] = 0.0;
    }
}

/* max |Pearson r with position| over b and the complement basis. */
static double residual_position_r(const double *b, qk_comp_work *w)
{
    int d = w->dim;
    double zero_var = QK_ROT_ZERO_VAR * qk_moments_trace(&w->pooled);
    double worst = fabs(qk_rot_correlation(b, &w->pooled, zero_var, w->scratch));
    for (int j = 0; j < d - 2; j++) {
        double r = fabs(qk_rot_correlation(w->basis + (size_t)j * d, &w->pooled, zero_var,
                                           w->scratch));
        worst = r > worst ? r : worst;
    }
    return worst;
}

int qk_comp_basis(const qk_moments *pooled, const double *a, const double *b, qk_comp_work *w,
                  qk_comp_head *out, qk_err *err)
{
    int d = w->dim;
    memset(out, 0, sizeof *out);
    int pairs = d >= 4 ? (d - 2) / 2 : 0;
    out->n_pairs = pairs < QK_ROT_MAX_PAIRS ? pairs : QK_ROT_MAX_PAIRS;
    if (pooled->dim != d)
        return qk_fail(err, "moments of dimension %d for axes of dimension %d", pooled->dim, d);
    qk_moments_copy(&w->pooled, pooled);
    if (!qk_moments_finite(&w->pooled))
        return qk_fail(err, "vectors or positions hold values that are not finite");
    if (d > 2) {
        if (complement_frame(a, b, w, err) != 0 || complement_eigen(w, err) != 0)
            return -1;
        canonical_basis(a, b, w);
    }
    double total = 0.0;
    for (int j = 0; j < d - 2; j++)
        total += w->lambda[j];
    out->complement_var = total;
    out->residual_pos_r = residual_position_r(b, w);
    return 0;
}

/* ---- angles ---------------------------------------------------------------------- */

enum { CUTS = QK_ROT_ANGLE_CUTS };

/* The sums over rows that give the Pearson r of the angle with position at
 * all 72 cuts, gathered in one pass. With I_j the indicator of the rows the
 * cut psi_j = 2 pi j / 72 wraps (wrap(theta - psi_j) adds 2 pi exactly when
 * theta <= c_j = -pi + psi_j) and centred theta~ and t~, the wrapped angle
 * is theta + 2 pi I_j - psi_j, so
 *   N Cov_j = S_theta,t + 2 pi sum_{I_j} t~
 *   N Var_j = S_theta,theta + 4 pi sum_{I_j} theta~ + 4 pi^2 (C_j - C_j^2 / N)
 * with C_j = #I_j: sums per interval between cuts, accumulated over the
 * intervals, give every cut. */
typedef struct angle_sums {
    /* bound[j] = c_(j-1), the lower end of interval j: -inf for j = 0, +inf
     * for j = CUTS + 1 (a guard) */
    double bound[CUTS + 2];
    double n, th, th2, th_t, t_sum; /* sums of theta, theta^2, theta t~, t~ */
    double count[CUTS + 1], t[CUTS + 1], h[CUTS + 1]; /* rows, t~, theta per interval */
} angle_sums;

static void angle_init(angle_sums *s)
{
    memset(s, 0, sizeof *s);
    s->bound[0] = -INFINITY;
    for (int j = 0; j < CUTS; j++)
        s->bound[j + 1] = -M_PI + 2.0 * M_PI * j / CUTS;
    s->bound[CUTS + 1] = INFINITY;
}

/* Index of the first cut c_j with theta <= c_j (CUTS if none), without
 * branches: the guess from the angle is within one of it (the roundings
 * of the guess and of the cuts are below 1e-13 of an interval) and is
 * corrected against the cut values themselves. */
static inline int cut_index_in(const double *bound, double theta)
{
    double q = (theta + M_PI) * (CUTS / (2.0 * M_PI));
    q = q > 0.0 ? q : 0.0;
    q = q < CUTS ? q : CUTS;
    int j = (int)q;
    j += (double)j < q;
    j -= theta <= bound[j];
    j += theta > bound[j + 1];
    return j;
}

/* One row: its angle and its centred position t~. */
static void angle_add(angle_sums *s, double theta, double tc)
{
    int j = cut_index_in(s->bound, theta);
    s->n += 1.0;
    s->th += theta;
    s->th2 += theta * theta;
    s->th_t += theta * tc;
    s->t_sum += tc;
    s->count[j] += 1.0;
    s->t[j] += tc;
    s->h[j] += theta;
}

/* The raw r (psi = 0) and the signed r of largest magnitude over the cuts;
 * stt is the sum of t~^2. A constant angle or position gives 0. */
static double angle_finish(const angle_sums *s, double stt, double *r_raw, double *best_cut)
{
    double n = s->n, thbar = s->th / n;
    double shh = s->th2 - s->th * thbar, sht = s->th_t - thbar * s->t_sum;
    double floor_var = 1e-12 * n; /* rad^2 * rows: a constant angle */
    *r_raw = stt > 0.0 && shh > floor_var ? sht / sqrt(shh * stt) : 0.0;
    double c = 0.0, st = 0.0, sh = 0.0, best = 0.0;
    *best_cut = 0.0;
    for (int j = 0; j < CUTS; j++) {
        c += s->count[j];
        st += s->t[j];
        sh += s->h[j];
        double cov = sht + 2.0 * M_PI * st;
        double var = shh + 4.0 * M_PI * (sh - c * thbar) + 4.0 * M_PI * M_PI * (c - c * c / n);
        double r = stt > 0.0 && var > floor_var ? cov / sqrt(var * stt) : 0.0;
        if (fabs(r) > fabs(best)) {
            best = r;
            *best_cut = 2.0 * M_PI * j / CUTS;
        }
    }
    *r_raw = *r_raw > 1.0 ? 1.0 : *r_raw < -1.0 ? -1.0 : *r_raw + 0.0;
    return best > 1.0 ? 1.0 : best < -1.0 ? -1.0 : best + 0.0;
}

double qk_comp_angle_r(const double *theta, const double *t, int64_t n, double *r_raw,
                       double *best_cut)
{
    angle_sums s;
    angle_init(&s);
    double tbar = 0.0, stt = 0.0;
    for (int64_t i = 0; i < n; i++)
        tbar += t[i];
    tbar /= (double)n;
    for (int64_t i = 0; i < n; i++) {
        stt += (t[i] - tbar) * (t[i] - tbar);
        angle_add(&s, theta[i], t[i] - tbar);
    }
    return angle_finish(&s, stt, r_raw, best_cut);
}

/* ---- Fisher LDA ------------------------------------------------------------------- */

/* The sums of one class's points, shifted by its first point so that one
 * pass gives moments without cancellation. */
typedef struct class_sums {
    int64_t n;
    double x0, y0, sx, sy, sxx, sxy, syy;
} class_sums;

static void class_add(class_sums *c, double x, double y)
{
    if (c->n++ == 0) {
        c->x0 = x;
        c->y0 = y;
    }
    double dx = x - c->x0, dy = y - c->y0;
    c->sx += dx;
    c->sy += dy;
    c->sxx += dx * dx;
    c->sxy += dx * dy;
    c->syy += dy * dy;
}

/* Mean and population covariance (xx, xy, yy). */
static void class_moments(const class_sums *c, double mean[2], double cov[3])
{
    double n = (double)c->n, mx = c->sx / n, my = c->sy / n;
    mean[0] = c->x0 + mx;
    mean[1] = c->y0 + my;
    cov[0] = c->sxx / n - mx * mx;
    cov[1] = c->sxy / n - mx * my;
    cov[2] = c->syy / n - my * my;
}

/* The discriminant w = S_w^-1 (m_a - m_b) and the cut w.(m_a + m_b)/2. */
static void lda_direction(const class_sums *a, const class_sums *b, double w[2], double *cut)
{
    double ma[2], mb[2], ca[3], cb[3];
    class_moments(a, ma, ca);
    class_moments(b, mb, cb);
    double n = (double)(a->n + b->n), pa = (double)a->n / n, pb = (double)b->n / n;
    double sxx = pa * ca[0] + pb * cb[0], sxy = pa * ca[1] + pb * cb[1];
    double syy = pa * ca[2] + pb * cb[2];
    /* a singular S_w gets a ridge of 1e-12 of its trace (1 if it is 0) */
    double det = sxx * syy - sxy * sxy, tr = sxx + syy;
    if (!(det > 1e-24 * tr * tr)) {
        double ridge = tr > 0.0 ? 1e-12 * tr : 1.0;
        sxx += ridge;
        syy += ridge;
        det = sxx * syy - sxy * sxy;
    }
    double dx = ma[0] - mb[0], dy = ma[1] - mb[1];
    w[0] = (syy * dx - sxy * dy) / det;
    w[1] = (sxx * dy - sxy * dx) / det;
    *cut = w[0] * 0.5 * (ma[0] + mb[0]) + w[1] * 0.5 * (ma[1] + mb[1]);
}

static int64_t count_above(const double *x, const double *y, int64_t n, const double w[2],
                           double cut)
{
    int64_t c = 0;
    for (int64_t i = 0; i < n; i++)
        c += w[0] * x[i] + w[1] * y[i] > cut;
    return c;
}

static double balanced_accuracy(const double *xa, const double *ya, int64_t n_a,
                                const double *xb, const double *yb, int64_t n_b,
                                const double w[2], double cut)
{
    double right_a = (double)count_above(xa, ya, n_a, w, cut);
    double right_b = (double)(n_b - count_above(xb, yb, n_b, w, cut));
    return 0.5 * (right_a / (double)n_a + right_b / (double)n_b);
}

double qk_comp_lda_balanced(const double *xa, const double *ya, int64_t n_a, const double *xb,
                            const double *yb, int64_t n_b)
{
    if (n_a <= 0 || n_b <= 0)
        return NAN;
    class_sums a = {0}, b = {0};
    for (int64_t i = 0; i < n_a; i++)
        class_add(&a, xa[i], ya[i]);
    for (int64_t i = 0; i < n_b; i++)
        class_add(&b, xb[i], yb[i]);
    double w[2], cut;
    lda_direction(&a, &b, w, &cut);
    return balanced_accuracy(xa, ya, n_a, xb, yb, n_b, w, cut);
}

/* ---- the pairs on the rows ---------------------------------------------------------- */

static void widen(const float *src, size_t n, double *dst)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        dst[i] = src[i];
        dst[i + 1] = src[i + 1];
        dst[i + 2] = src[i + 2];
        dst[i + 3] = src[i + 3];
    }
    for (; i < n; i++)
        dst[i] = src[i];
}

/* dst[i * 4 + f] = src[f][i] - off[f] for i < n, f < 4 (PAIR_LANES). dst
 * (a multiple of 16 bytes from a 64-byte boundary) is read again only
 * after every row is projected, and a head's coordinates do not fit in
 * the caches: on x86-64 they go to memory with streaming stores, which
 * skip reading the lines first. */
static void interleave(const double *const src[PAIR_LANES], const double off[PAIR_LANES], int n,
                       double *restrict dst)
{
    const double *restrict s0 = src[0], *restrict s1 = src[1], *restrict s2 = src[2];
    const double *restrict s3 = src[3];
    double o0 = off[0], o1 = off[1], o2 = off[2], o3 = off[3];
    for (int i = 0; i < n; i++) {
#ifdef __SSE2__
        _mm_stream_pd(dst + 4 * i, _mm_set_pd(s1[i] - o1, s0[i] - o0));
        _mm_stream_pd(dst + 4 * i + 2, _mm_set_pd(s3[i] - o3, s2[i] - o2));
#else
        dst[4 * i] = s0[i] - o0;
        dst[4 * i + 1] = s1[i] - o1;
        dst[4 * i + 2] = s2[i] - o2;
        dst[4 * i + 3] = s3[i] - o3;
#endif
    }
}

/* Centred coordinates (x - mu).v_j of rows [start, start + n) (of n_all)
 * on the 2 n_pairs pair directions, one dgemm per block of rows. The pairs
 * go in groups of PAIR_LANES (the last group repeats its last pair), and
 * the two coordinates u, w of group g are stored interleaved, the lanes of
 * a row side by side: u of pair g PAIR_LANES + f at row r is
 * out[(2 g n_all + r) PAIR_LANES + f], w at out[((2 g + 1) n_all + r)
 * PAIR_LANES + f]. */
static void project_rows(const float *x, int64_t n, int64_t start_row, int64_t n_all,
                         qk_comp_work *w, int n_pairs, const double *offset, double *out)
{
    int d = w->dim, n_dir = 2 * n_pairs;
    for (int64_t start = 0; start < n; start += PROJ_BLOCK) {
        int nb = (int)(n - start < PROJ_BLOCK ? n - start : PROJ_BLOCK);
        widen(x + (size_t)start * d, (size_t)nb * d, w->block);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n_dir, nb, d, 1.0, w->basis, d,
                    w->block, d, 0.0, w->coord_block, nb);
        for (int g = 0; g * PAIR_LANES < n_pairs; g++) {
            const double *u[PAIR_LANES], *v[PAIR_LANES];
            double off_u[PAIR_LANES], off_v[PAIR_LANES];
            for (int f = 0; f < PAIR_LANES; f++) {
                int p = g * PAIR_LANES + f < n_pairs ? g * PAIR_LANES + f : n_pairs - 1;
                u[f] = w->coord_block + (size_t)(2 * p) * nb;
                v[f] = u[f] + nb;
                off_u[f] = offset[2 * p];
                off_v[f] = offset[2 * p + 1];
            }
            double *du = out + ((size_t)(2 * g) * n_all + start_row + start) * PAIR_LANES;
            interleave(u, off_u, nb, du);
            interleave(v, off_v, nb, du + (size_t)n_all * PAIR_LANES);
        }
    }
}

static double *proj_buffer(qk_comp_work *w, size_t count)
{
    if ((int64_t)count > w->proj_cap) {
        free(w->proj);
        w->proj = qk_doubles(count);
        w->proj_cap = (int64_t)count;
    }
    return w->proj;
}

/* The angles, with SLEEF's atan2 of 3.5 ulp in its variants without fused
 * multiply-adds: SSE2 (two at a time) or, where the CPU has AVX2, AVX
 * (four), and where the level of the vector code (qk_isa) is AVX-512,
 * AVX-512 (eight). They do the same IEEE
 * operations, so the angles are the same on every x86-64 CPU (libm's atan2
 * is not: it picks an FMA variant on some); tests/test_rotation.c compares
 * them. */
/* the AVX2 builds need GCC's handling of target attributes; another
 * compiler (clang, for the fuzz targets) gets the baseline build, which
 * gives the same bits */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define QK_VECTOR_BUILDS 1
#else
#define QK_VECTOR_BUILDS 0
#endif

#ifdef __SSE2__
#if QK_VECTOR_BUILDS
__m256d Sleef_atan2d4_u35avx(__m256d, __m256d); /* sleef.h has it only for AVX builds */

__m512d Sleef_atan2d8_u35avx512fnofma(__m512d, __m512d);

/* theta[r] = atan2(w[r], u[r]) for r < n rounded down to 4 (returned). */
__attribute__((target("avx"))) static int64_t angles_avx(const double *u, const double *w,
                                                        int64_t n, double *theta)
{
    int64_t r = 0;
    for (; r + 4 <= n; r += 4)
        _mm256_storeu_pd(theta + r, Sleef_atan2d4_u35avx(_mm256_loadu_pd(w + r),
                                                         _mm256_loadu_pd(u + r)));
    return r;
}

/* angles_avx, eight at a time where it can */
__attribute__((target("avx512f"))) static int64_t angles_avx512(const double *u, const double *w,
                                                               int64_t n, double *theta)
{
    int64_t r = 0;
    for (; r + 8 <= n; r += 8)
        _mm512_storeu_pd(theta + r, Sleef_atan2d8_u35avx512fnofma(_mm512_loadu_pd(w + r),
                                                                  _mm512_loadu_pd(u + r)));
    return r + angles_avx(u + r, w + r, n - r, theta + r);
}

#endif

void qk_comp_angles(const double *u, const double *w, int64_t n, double *theta)
{
    int64_t r = 0;
#if QK_VECTOR_BUILDS
    if (qk_simd_avx2()) /* eight at a time where the level is AVX-512 */
        r = qk_isa() == QK_ISA_AVX512 ? angles_avx512(u, w, n, theta) : angles_avx(u, w, n, theta);
#endif
    for (; r + 2 <= n; r += 2)
        _mm_storeu_pd(theta + r, Sleef_atan2d2_u35sse2(_mm_loadu_pd(w + r), _mm_loadu_pd(u + r)));
    if (r < n) /* the last one: the same function, in both lanes */
        theta[r] = _mm_cvtsd_f64(Sleef_atan2d2_u35sse2(_mm_set1_pd(w[r]), _mm_set1_pd(u[r])));
}
#else
void qk_comp_angles(const double *u, const double *w, int64_t n, double *theta)
{
    for (int64_t r = 0; r < n; r++)
        theta[r] = atan2(w[r], u[r]);
}
#endif

/* The sums of PAIR_LANES pairs over the rows (Q rows first, then K rows):
 * the angle sums per cut interval, the radii, the class sums, then the
 * discriminants and their hits. */
typedef struct pair_lanes {
    /* the centred coordinates of every row, u (x) and w (y), the lanes of
     * a row side by side: x[r * PAIR_LANES + f] */
    const double *x, *y;
    const double *tc;    /* centred positions */
    int eight;           /* the angles eight at a time (the level is AVX-512) */
    const double *bound; /* the cut intervals (angle_sums) */
    int64_t n, n_q;
    double rho0[PAIR_LANES]; /* the radius of the first row */
    double th[PAIR_LANES], th2[PAIR_LANES], th_t[PAIR_LANES];
    double bins[PAIR_LANES][3][CUTS + 1]; /* rows, t~, theta per cut interval */
    double sr[PAIR_LANES], srr[PAIR_LANES]; /* shifted radii and their squares */
    class_sums cls[2][PAIR_LANES];
    double wf[PAIR_LANES][2], cut[PAIR_LANES];
    int64_t above[2][PAIR_LANES]; /* rows of each class with w_f.x > cut */
} pair_lanes;

#if QK_VECTOR_BUILDS
typedef double vec4 __attribute__((vector_size(32)));
typedef long mask4 __attribute__((vector_size(32)));
#define VEC vec4
#define VEC_MASK mask4
#define VEC_WIDTH 4
#define VEC_ATAN2(y, x) ((vec4)Sleef_atan2d4_u35avx((__m256d)(y), (__m256d)(x)))
#define VEC_SQRT(x) ((vec4)_mm256_sqrt_pd((__m256d)(x)))
#define VEC_ANY(m) _mm256_movemask_pd((__m256d)(m))
#define KERNEL(name) name##_avx2
#define KERNEL_ATTR __attribute__((target("avx2")))
#include "rotation_pairs_kernel.h"
#undef VEC
#undef VEC_MASK
#undef VEC_WIDTH
#undef VEC_ATAN2
#undef VEC_SQRT
#undef VEC_ANY
#undef KERNEL
#undef KERNEL_ATTR
#define HAVE_AVX2_BUILD 1
#endif

typedef double vec2 __attribute__((vector_size(16)));
typedef long mask2 __attribute__((vector_size(16)));
#ifdef __SSE2__
#define VEC_ATAN2(y, x) ((vec2)Sleef_atan2d2_u35sse2((__m128d)(y), (__m128d)(x)))
#define VEC_SQRT(x) ((vec2)_mm_sqrt_pd((__m128d)(x)))
#define VEC_ANY(m) _mm_movemask_pd((__m128d)(m))
#else /* not x86: libm, lane by lane */
static inline vec2 lanes_atan2(vec2 y, vec2 x)
{
    vec2 r = {atan2(y[0], x[0]), atan2(y[1], x[1])};
    return r;
}

static inline vec2 lanes_sqrt(vec2 x)
{
    vec2 r = {sqrt(x[0]), sqrt(x[1])};
    return r;
}
#define VEC_ATAN2(y, x) lanes_atan2(y, x)
#define VEC_SQRT(x) lanes_sqrt(x)
#define VEC_ANY(m) ((m)[0] | (m)[1])
#endif
#define VEC vec2
#define VEC_MASK mask2
#define VEC_WIDTH 2
#define KERNEL(name) name##_base
#define KERNEL_ATTR
#include "rotation_pairs_kernel.h"
#undef VEC
#undef VEC_MASK
#undef VEC_WIDTH
#undef VEC_ATAN2
#undef VEC_SQRT
#undef VEC_ANY
#undef KERNEL
#undef KERNEL_ATTR

static void lanes_pass(pair_lanes *L)
{
#ifdef HAVE_AVX2_BUILD
    if (qk_simd_avx2()) {
        pair_pass_avx2(L);
        return;
    }
#endif
    pair_pass_base(L);
}

static void lanes_hits(pair_lanes *L)
{
#ifdef HAVE_AVX2_BUILD
    if (qk_simd_avx2()) {
        pair_hits_avx2(L);
        return;
    }
#endif
    pair_hits_base(L);
}

/* The metrics of the count (<= PAIR_LANES) pairs of one group from their
 * coordinates (x and y, interleaved: see project_rows) and the centred
 * positions tc (sum of squares stt) of every row, Q rows first: one pass for
 * the angle sums, the radii and the class sums, one more to count the
 * discriminants' hits. */
static void pair_group(const double *x, const double *y, int64_t n_q, int64_t n_k,
                       const double *tc, double stt, int count, qk_comp_pair *out)
{
    int64_t n = n_q + n_k;
    pair_lanes *L = qk_calloc(1, sizeof *L);
    angle_sums s;
    angle_init(&s);
    L->x = x;
    L->y = y;
    L->tc = tc;
#if QK_VECTOR_BUILDS
    L->eight = qk_isa() == QK_ISA_AVX512; /* read by the AVX2 build alone */
#endif
    L->bound = s.bound;
    L->n = n;
    L->n_q = n_q;
    for (int f = 0; f < PAIR_LANES; f++)
        L->rho0[f] = sqrt(x[f] * x[f] + y[f] * y[f]);
    lanes_pass(L);

    double t_sum = 0.0;
    for (int64_t r = 0; r < n; r++)
        t_sum += tc[r];
    for (int f = 0; f < PAIR_LANES; f++) {
        lda_direction(&L->cls[0][f], &L->cls[1][f], L->wf[f], &L->cut[f]);
        if (f >= count)
            continue;
        s.n = (double)n;
        s.th = L->th[f];
        s.th2 = L->th2[f];
        s.th_t = L->th_t[f];
        s.t_sum = t_sum;
        memcpy(s.count, L->bins[f][0], sizeof s.count);
        memcpy(s.t, L->bins[f][1], sizeof s.t);
        memcpy(s.h, L->bins[f][2], sizeof s.h);
        qk_comp_pair *p = &out[f];
        p->angle_r_best = angle_finish(&s, stt, &p->angle_r, &p->best_cut);
        double mean_dr = L->sr[f] / (double)n, mean = L->rho0[f] + mean_dr;
        double var = L->srr[f] / (double)n - mean_dr * mean_dr;
        p->radial_cv = mean > 0.0 ? sqrt(var > 0.0 ? var : 0.0) / mean : NAN;
    }
    lanes_hits(L);
    for (int f = 0; f < count; f++) {
        double right_q = (double)L->above[0][f], right_k = (double)(n_k - L->above[1][f]);
        out[f].cls_acc = 0.5 * (right_q / (double)n_q + right_k / (double)n_k);
    }
    free(L);
}

static void head_summary(double tau, qk_comp_head *out)
{
    double acc = 0.0, frac = 0.0, worst = NAN; /* NaN: no pair with an angle */
    out->n_active = out->n_active_high = 0;
    for (int i = 0; i < out->n_pairs; i++) {
        const qk_comp_pair *p = &out->pair[i];
        double r = fabs(p->angle_r_best);
        if (!isnan(r) && (isnan(worst) || r > worst))
            worst = r;
        out->n_active_high += r >= QK_ROT_ACTIVE_TAU_HIGH;
        if (r >= tau) {
            out->n_active++;
            frac += p->var_frac;
            acc += p->cls_acc;
        }
    }
    out->active_var_frac = frac;
    out->max_abs_angle_r = worst;
    out->ring_cls_acc = out->n_active ? acc / out->n_active : NAN;
}

int qk_comp_analyse(const qk_rot_rows *q, const qk_rot_rows *k, const qk_moments *pooled,
                    const double *a, const double *b, double tau, qk_comp_work *w,
                    qk_comp_head *out, qk_err *err)
{
    if (qk_comp_basis(pooled, a, b, w, out, err) != 0)
        return -1;
    int n_dir = 2 * out->n_pairs, d = w->dim;
    int n_groups = (out->n_pairs + PAIR_LANES - 1) / PAIR_LANES;
    int64_t n = q->n + k->n;
    if (n_dir > 0 && n > 0) {
        size_t group_size = 2 * PAIR_LANES * (size_t)n; /* u and w of one group */
        double *coords = proj_buffer(w, group_size * n_groups + (size_t)n);
        double *tc = coords + group_size * n_groups;
        double offset[2 * QK_ROT_MAX_PAIRS];
        for (int j = 0; j < n_dir; j++)
            offset[j] = cblas_ddot(d, w->pooled.mean, 1, w->basis + (size_t)j * d, 1);
        project_rows(q->vector, q->n, 0, n, w, out->n_pairs, offset, coords);
        project_rows(k->vector, k->n, q->n, n, w, out->n_pairs, offset, coords);
        double tbar = 0.0, stt = 0.0;
        for (int64_t r = 0; r < n; r++)
            tbar += r < q->n ? q->position[r] : k->position[r - q->n];
        tbar /= (double)n;
        for (int64_t r = 0; r < n; r++) {
            tc[r] = (r < q->n ? q->position[r] : k->position[r - q->n]) - tbar;
            stt += tc[r] * tc[r];
        }
        for (int g = 0; g < n_groups; g++) {
            const double *x = coords + group_size * g, *y = x + (size_t)n * PAIR_LANES;
            int first = g * PAIR_LANES;
            pair_group(x, y, q->n, k->n, tc, stt,
                       out->n_pairs - first < PAIR_LANES ? out->n_pairs - first : PAIR_LANES,
                       out->pair + first);
        }
        double flat = QK_ROT_ZERO_VAR * qk_moments_trace(&w->pooled);
        for (int i = 0; i < out->n_pairs; i++) {
            qk_comp_pair *p = &out->pair[i];
            double lam = w->lambda[2 * i] + w->lambda[2 * i + 1];
            p->var_frac = out->complement_var > 0.0 ? lam / out->complement_var : NAN;
            if (!(lam > flat && lam > 0.0)) { /* no spread: the angles are rounding noise */
                p->angle_r = p->angle_r_best = p->best_cut = NAN;
                p->cls_acc = p->radial_cv = NAN;
            }
        }
    }
    head_summary(tau, out);
    return 0;
}
