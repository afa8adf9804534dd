/* The per-head algorithm (docs/plasticity.md, "Per head"): the rows of a
 * head, its layout (plasticity_layout.c: bins, key order, pairs), its
 * queries (plasticity_queries.c: orientation applied, regression,
 * Householder rotation, diagnostics, bin model), its keys, and the
 * closed-form PP of every (pair, bin) from BLAS tables:
 *   S = K_rot M^T              the mean term m = S[k1,b] - S[k2,b]
 *   V = (delta o delta) C^T     the diagonal variance v (one GEMM per block
 *                               of pairs, in single precision; the squares
 *                               of the differences are formed first, so
 *                               nothing cancels)
 * and PP of each block's evaluations (plasticity_pp.c);
 *   Y = K Qc_b^T                the full-covariance variance |Y_k1 - Y_k2|^2
 *                               / (n_b - 1), one GEMM per bin.
 * One head runs in one thread, every sum in a fixed order: the results do
 * not depend on the thread that computed them, nor on what a thread's
 * cache held. */
#include <cblas.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/moments.h"
#include "plasticity_internal.h"
#include "plasticity_vec.h"

double qk_plast_near_2_20(double x)
{
    int e;
    if (!(x > 0.0) || !isfinite(x))
        return 1.0;
    frexp(x, &e);
    return ldexp(1.0, 20 - e);
}

int64_t qk_plast_longest_span(const int64_t *start, int n)
{
    int64_t most = 1;
    for (int i = 0; i < n; i++)
        if (start[i + 1] - start[i] > most)
            most = start[i + 1] - start[i];
    return most;
}

/* ---- input rows ------------------------------------------------------------------ */

static int cmp_row(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The rows to use: all, or max_tokens of them drawn without replacement
 * (partial Fisher-Yates), in ascending order. */
static int64_t *choose_rows(int64_t n, int64_t max_tokens, qk_rng *rng, int64_t *n_used)
{
    int64_t *rows = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *rows);
    for (int64_t i = 0; i < n; i++)
        rows[i] = i;
    *n_used = n;
    if (n > max_tokens) {
        for (int64_t i = 0; i < max_tokens; i++) {
            int64_t j = i + (int64_t)qk_rng_below(rng, (uint64_t)(n - i));
            int64_t tmp = rows[i];
            rows[i] = rows[j];
            rows[j] = tmp;
        }
        *n_used = max_tokens;
        /* ascending, so the kept rows keep their file order */
        qsort(rows, (size_t)max_tokens, sizeof *rows, cmp_row);
    }
    return rows;
}

/* Positions must lie on the grid: queries in a bin < n_bins, keys in a
 * heatmap cell < n_cells. */
static int check_positions(const qk_plast_rows *r, const int64_t *rows, int64_t n,
                           const qk_plast_grid *g, char kind, qk_err *err)
{
    const char *what = kind == 'q' ? "query" : "key";
    for (int64_t i = 0; i < n; i++) {
        int32_t t = r->position[rows[i]];
        int off = t < 0 || (kind == 'q' ? qk_plast_bin_of(g, t) >= g->n_bins
                                         : t / g->bucket_size >= g->n_cells);
        if (off)
            return qk_fail(err, "%s row %lld: position %d is outside the grid of the "
                           "dataset", what, (long long)rows[i], t);
    }
    return 0;
}

/* The message for the first component of rows[] of r that is not finite
 * (the passes that read the vectors only tell that there is one). */
static int not_finite(const qk_plast_rows *r, const int64_t *rows, int64_t n, int d, char kind,
                      qk_err *err)
{
    for (int64_t i = 0; i < n; i++)
        for (int c = 0; c < d; c++)
            if (!isfinite(r->vector[rows[i] * d + c]))
                return qk_fail(err, "%s row %lld: component %d is not finite",
                               kind == 'q' ? "query" : "key", (long long)rows[i], c);
    return qk_fail(err, "%s rows: a component is not finite", kind == 'q' ? "query" : "key");
}

/* ---- keys ------------------------------------------------------------------------------- */

/* One pass over the keys src[0..n) of k, in the layout's order: their
 * floats into out (n x d), each bucket's sum of rows (part[slot[i]], in this
 * order) and count. Returns the sum of x - x over every component: NaN when
 * one is not finite. */
QK_WIDE_BODY double gather_keys_body(const qk_plast_rows *k, const int64_t *src,
                                     const int64_t *slot, int64_t n, int d, float *out,
                                     double *part, int64_t *count)
{
    acc8 bad = acc8_zero();
    double bad1 = 0.0;
    for (int64_t i = 0; i < n; i++) {
        if (i + GATHER_AHEAD < n) /* the rows come in any order */
            prefetch_row(k->vector + src[i + GATHER_AHEAD] * d, (size_t)d * sizeof(float));
        const float *row = k->vector + src[i] * d;
        double *p = part + slot[i] * d;
        memcpy(out + i * d, row, (size_t)d * sizeof *out);
        int c = 0;
        for (; c + 8 <= d; c += 8) {
            v8d v = load8f(row + c);
            acc8_add(bad, v - v);
            store8(p + c, load8(p + c) + v);
        }
        for (; c < d; c++) {
            bad1 += (double)row[c] - (double)row[c];
            p[c] += row[c];
        }
        count[slot[i]]++;
    }
    return acc8_sum(bad) + bad1;
}
QK_WIDE_CLONES(static, double, gather_keys,
               (const qk_plast_rows *k, const int64_t *src, const int64_t *slot, int64_t n, int d,
                float *out, double *part, int64_t *count),
               (k, src, slot, n, d, out, part, count))

/* out_i = (in_i s) H for the n rows of in (floats): s the orientation sign
 * times a power of two, H = I - 2 w w^T (w NULL: I). */
QK_WIDE_BODY void orient_reflect_body(const float *in, int64_t n, int d, const double *s,
                                      const double *w, double *out)
{
    for (int64_t i = 0; i < n; i++) {
        const float *row = in + i * d;
        double *o = out + i * d;
        int c = 0;
        for (; c + 8 <= d; c += 8)
            store8(o + c, load8(s + c) * load8f(row + c));
        for (; c < d; c++)
            o[c] = s[c] * (double)row[c];
        if (w)
            reflect_row(o, w, d, o);
    }
}
QK_WIDE_CLONES(static, void, orient_reflect,
               (const float *in, int64_t n, int d, const double *s, const double *w, double *out),
               (in, n, d, s, w, out))

/* The keys of a head in the layout's order, as the store's floats, with
 * the orientation sign and the scale of the single-precision evaluation (a
 * power of two: exact; |k H| <= |k| <= sqrt(d) k_max stays near 2^20): kept
 * in the cache for the next query head of the same key head, or made. */
static int head_keys(const qk_plast_rows *k, const int64_t *krows, int64_t nk, int d,
                     const qk_plast_layout *l, int scaled, qk_plast_cache *c, qk_err *err)
{
    if (c->key_source && c->key_source == k->source && c->key_layout == l &&
        c->key_scaled == scaled && c->d == d && nk == k->n)
        return 0;
    qk_plast_cache_forget_keys(c);
    size_t n = (size_t)(nk > 0 ? nk : 1);
    int64_t *src = qk_malloc(n * sizeof *src), *slot = qk_malloc(n * sizeof *slot);
    int32_t *kb = qk_malloc(n * sizeof *kb);
    for (int64_t i = 0; i < nk; i++) {
        src[i] = krows[l->k_order[i]];
        kb[i] = k->bucket[src[i]];
    }
    int64_t nb = qk_plast_bucket_slots(kb, nk, slot);
    double *part = qk_calloc((size_t)(nb > 0 ? nb : 1) * d, sizeof *part);
    int64_t *count = qk_calloc((size_t)(nb > 0 ? nb : 1), sizeof *count);
    c->keys = qk_malloc(n * d * sizeof *c->keys);
    double bad = gather_keys(k, src, slot, nk, d, c->keys, part, count);
    int rc = 0;
    if (bad != bad) {
        rc = not_finite(k, krows, nk, d, 'k', err);
        qk_plast_cache_forget_keys(c);
    } else {
        c->sign = qk_doubles((size_t)d);
        qk_plast_orientation_sign(part, count, nb, d, c->sign);
        double k_max = nk > 0 ? fabs(c->keys[cblas_isamax((int)(nk * d), c->keys, 1)]) : 0.0;
        double scale = scaled ? qk_plast_near_2_20(sqrt((double)d) * k_max) : 1.0;
        c->scale = qk_doubles((size_t)d);
        for (int i = 0; i < d; i++)
            c->scale[i] = c->sign[i] * scale;
        c->key_source = nk == k->n ? k->source : NULL; /* a subset is the head's own */
        c->key_layout = l;
        c->key_scaled = scaled;
        c->d = d;
    }
    free(count);
    free(part);
    free(kb);
    free(slot);
    free(src);
    return rc;
}

/* ---- the work of a head -------------------------------------------------------------------- */

typedef struct head_work {
    int d, n_bins, n_cells;
    qk_plast_layout *l;
    qk_plast_query_model qm;
    double *k;         /* [nk * d] keys in the layout's order, oriented, rotated (a cache buffer) */
    double *score;     /* [nk * n_bins] S, for the modes that read it in any order */
    qk_plast_acc acc;  /* PP summed per (heatmap cell, bin) */
} head_work;

static void work_free(head_work *w)
{
    qk_plast_query_model_free(&w->qm);
    free(w->score);
    free(w->acc.sum);
    free(w->acc.count);
}

/* The heatmap column of a pair: its inter-key distance / B, clamped. */
static inline int pair_col(const head_work *w, const qk_plast_key_pair *p)
{
    return p->dist_cell < w->n_cells ? p->dist_cell : w->n_cells - 1;
}

/* Adds PP of (pair, bin b) with mean m and variance v (double) to the
 * accumulator: the modes other than exact diagonal. */
static inline void accumulate(head_work *w, const qk_plast_head *h, const qk_plast_key_pair *p,
                              int b, double m, double v)
{
    qk_plast_acc_add(&w->acc, pair_col(w, p), b, 2.0 * h->bin_tau[b] - (double)p->pos_sum,
                     qk_plast_pp(m, v));
}

static inline double mean_term(const head_work *w, const qk_plast_key_pair *p, int b)
{
    return w->score[(size_t)p->a * w->n_bins + b] - w->score[(size_t)p->b * w->n_bins + b];
}

#define KEY_BLOCK 64

/* The rows of S = K M^T of range r's keys into out (row i: key
 * range_start[r] + i, n_bins columns), where pairs read them: a key is in
 * no pair eligible before the bin after its own, so a block of keys (in
 * position order within the range) gets the kept bins from its first
 * key's next bin on. Other entries are left unset. */
static void score_rows(const head_work *w, const double *mean, int first, int last, int r,
                       double *out)
{
    const qk_plast_layout *l = w->l;
    int64_t begin = l->range_start[r], end = l->range_start[r + 1];
    for (int64_t r0 = begin; r0 < end && first <= last; r0 += KEY_BLOCK) {
        int64_t nr = end - r0 < KEY_BLOCK ? end - r0 : KEY_BLOCK;
        int64_t start = qk_plast_bin_of(&l->grid, l->t_k[r0]) + 1;
        if (start < first)
            start = first;
        if (start > last)
            break; /* and so for every later block of the range */
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nr, (int)(last - start + 1),
                    w->d, 1.0, w->k + r0 * w->d, w->d, mean + start * w->d, w->d, 0.0,
                    out + (r0 - begin) * w->n_bins + start, w->n_bins);
    }
}

/* The kept bins lie in [first, last]; first > last when none is kept. */
static void kept_range(const qk_plast_layout *l, int *first, int *last)
{
    *last = l->grid.n_bins - 1;
    while (*last >= 0 && !l->kept[*last])
        (*last)--;
    *first = 0;
    while (*first <= *last && !l->kept[*first])
        (*first)++;
}

/* The whole of S, for the modes that read it in no particular order. */
static void score_table(head_work *w)
{
    int first, last;
    kept_range(w->l, &first, &last);
    w->score = qk_plast_raw_doubles((size_t)(w->l->nk > 0 ? w->l->nk : 1) * (size_t)w->n_bins);
    for (int r = 0; r < w->l->n_ranges; r++)
        score_rows(w, w->qm.mean, first, last, r,
                   w->score + w->l->range_start[r] * w->n_bins);
}

/* pairs ahead whose rows are prefetched */
#define PREFETCH_AHEAD 24

/* delta = k_a - k_b of one pair into out[d]. */
static void pair_difference(const head_work *w, const qk_plast_key_pair *p, double *out)
{
    const double *ka = w->k + (size_t)p->a * w->d, *kb = w->k + (size_t)p->b * w->d;
    for (int c = 0; c < w->d; c++)
        out[c] = ka[c] - kb[c];
}

/* ---- the exact diagonal mode (step 9) ----------------------------------------------------- */

/* The single-precision side of the diagonal mode (docs/plasticity.md, "PP
 * in single precision"). The keys come scaled by a power of two
 * (head_keys); the variances are scaled by another, 4^c, so that their
 * largest value lies near 2^20, and the means by 2^c, so that S = K M^T
 * carries the scale of the keys' differences in v: y = m^2 / v is the same
 * number, while every float stays far from the ends of its range for any
 * data. */
typedef struct diag_operands {
    float *var;   /* [n_bins * d] C_b scaled, in float */
    double *mean; /* [n_bins * d] M_b scaled */
} diag_operands;

static void diag_operands_init(diag_operands *o, const head_work *w, int first_kept, int last)
{
    int d = w->d;
    const double *var = w->qm.var + (size_t)first_kept * d;
    double var_max = fabs(var[cblas_idamax((last - first_kept + 1) * d, var, 1)]);
    int e;
    frexp(qk_plast_near_2_20(var_max), &e); /* qk_plast_near_2_20 = 2^(e - 1) */
    int half = (e - 1) / 2;                /* the variances scale by 4^half, the means by 2^half */
    double var_scale = ldexp(1.0, 2 * half), mean_scale = ldexp(1.0, half);
    size_t n = (size_t)w->n_bins * d;
    o->var = qk_malloc(n * sizeof *o->var);
    o->mean = qk_plast_raw_doubles(n);
    for (size_t i = 0; i < n; i++) {
        o->var[i] = (float)(w->qm.var[i] * var_scale);
        o->mean[i] = w->qm.mean[i] * mean_scale;
    }
}

static void diag_operands_free(diag_operands *o)
{
    free(o->var);
    free(o->mean);
}

/* Block k of the plan made ready for its evaluations: the rows of S of its
 * range of examples into score when the range changes (*range: the range
 * they hold), the squared key differences of its pairs and V[i, b] =
 * sum_c delta_ic^2 C_b,cc for bins b0..last into v, in single precision;
 * *blk describes it for qk_plast_pp_block, which puts y and PP of its
 * evaluations into y (room for QK_PLAST_PAIR_BLOCK rows of n_bins and the
 * slack).
 * Returns 0, or -1 when the block has no kept bin. gemm_cpu, if not NULL,
 * gets the thread CPU time of the GEMMs added (the floor). */
static int block_variances(const head_work *w, const qk_plast_plan *pl, const diag_operands *o,
                           int64_t k, double *score, int *range, float *sq, float *v, float *y,
                           qk_plast_block *blk, double *gemm_cpu)
{
    int d = w->d, b0 = pl->block_b0[k], last = pl->last_kept;
    if (b0 < 0)
        return -1;
    int64_t start = pl->block_start[k], nb = pl->block_start[k + 1] - start;
    const qk_plast_key_pair *pairs = pl->pairs + start;
    double c0 = gemm_cpu ? qk_thread_cpu() : 0.0;
    if (w->l->range_of[pairs[0].a] != *range) { /* the blocks come range by range */
        *range = w->l->range_of[pairs[0].a];
        score_rows(w, o->mean, pl->first_kept, last, *range, score);
    }
    if (gemm_cpu)
        *gemm_cpu += qk_thread_cpu() - c0;
    /* the key rows of a block are scattered over the key table: the rows of
     * a pair a few pairs ahead are fetched early */
    for (int64_t i = 0; i < nb; i++) {
        if (i + PREFETCH_AHEAD < nb)
            prefetch_row(w->k + (size_t)pairs[i + PREFETCH_AHEAD].a * d,
                         (size_t)d * sizeof(double));
        qk_plast_pair_squares(w->k + (size_t)pairs[i].a * d, w->k + (size_t)pairs[i].b * d, d,
                              sq + i * d);
    }
    c0 = gemm_cpu ? qk_thread_cpu() : 0.0;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, last - b0 + 1, d, 1.0f, sq, d,
                o->var + (size_t)b0 * d, d, 0.0f, v, last - b0 + 1);
    if (gemm_cpu)
        *gemm_cpu += qk_thread_cpu() - c0;
    qk_plast_block b = {
        .pairs = pairs,
        .n = nb,
        .rows = pl->rows + pl->rows_at[start],
        .score = score,
        .key0 = w->l->range_start[*range],
        .n_bins = w->n_bins,
        .v = v,
        .y = y,
        .b0 = b0,
        .last = last,
    };
    *blk = b;
    return 0;
}

/* The buffers of the exact diagonal mode. */
typedef struct diag_buffers {
    diag_operands o;
    float *sq, *v, *y;
    double *score;
} diag_buffers;

static void diag_buffers_init(diag_buffers *b, const head_work *w, const qk_plast_plan *pl)
{
    diag_operands_init(&b->o, w, pl->first_kept, pl->last_kept);
    b->sq = qk_malloc((size_t)QK_PLAST_PAIR_BLOCK * w->d * sizeof *b->sq);
    b->v = qk_malloc((size_t)QK_PLAST_PAIR_BLOCK * w->n_bins * sizeof *b->v);
    b->y = qk_malloc(((size_t)QK_PLAST_PAIR_BLOCK * w->n_bins + QK_PLAST_Y_SLACK) * sizeof *b->y);
    b->score = qk_plast_raw_doubles(
        (size_t)qk_plast_longest_span(w->l->range_start, w->l->n_ranges) * w->n_bins);
}

static void diag_buffers_free(diag_buffers *b)
{
    diag_operands_free(&b->o);
    free(b->sq);
    free(b->v);
    free(b->y);
    free(b->score);
}

/* Every eligible (pair, kept bin), in the plan's order: per block one GEMM
 * for v, then PP of its evaluations into the accumulator. */
static void exact_diag(head_work *w)
{
    const qk_plast_plan *pl = qk_plast_layout_plan(w->l);
    memcpy(w->acc.count, pl->cell_evals,
           (size_t)w->n_cells * w->n_cells * sizeof *w->acc.count);
    if (pl->first_kept > pl->last_kept)
        return;
    diag_buffers buf;
    diag_buffers_init(&buf, w, pl);
    int range = -1;
    for (int64_t k = 0; k < pl->n_blocks; k++) {
        qk_plast_block blk;
        if (block_variances(w, pl, &buf.o, k, buf.score, &range, buf.sq, buf.v, buf.y, &blk,
                            NULL) == 0)
            qk_plast_pp_block(&w->acc, &blk);
    }
    diag_buffers_free(&buf);
}

/* ---- the floor (qk_plast_timing) --------------------------------------------------------- */

/* Times, after the analysis, what exact_diag cannot avoid: the GEMMs of S
 * (range by range) and of every block of pairs at the same shapes and with
 * the same operands, and one PP per evaluated (pair, kept bin) on the same
 * y = m^2 / v, through the same batched PP. The operands are rebuilt
 * outside the clock. */
static void measure_floor(head_work *w, qk_plast_head *h)
{
    qk_plast_timing *t = &h->timing;
    const qk_plast_plan *pl = qk_plast_layout_plan(w->l);
    if (pl->first_kept > pl->last_kept)
        return;
    diag_buffers buf;
    diag_buffers_init(&buf, w, pl);
    float *y = buf.y;
    int range = -1;
    for (int64_t k = 0; k < pl->n_blocks; k++) {
        qk_plast_block blk;
        if (block_variances(w, pl, &buf.o, k, buf.score, &range, buf.sq, buf.v, buf.y, &blk,
                            &t->floor_gemm) != 0)
            continue;
        int64_t n = 0;
        const uint8_t *rows = blk.rows;
        int ncol = blk.last - blk.b0 + 1;
        for (int64_t i = 0; i < blk.n; i++) {
            const qk_plast_key_pair *p = &blk.pairs[i];
            int f = p->first > blk.b0 ? p->first : blk.b0;
            const double *sa = blk.score + (p->a - blk.key0) * blk.n_bins;
            const double *sb = blk.score + (p->b - blk.key0) * blk.n_bins;
            for (int b = f; b <= blk.last; b++, rows++)
                if (*rows != QK_PLAST_NO_ROW) {
                    float m = (float)(sa[b] - sb[b]), v = blk.v[i * ncol + b - blk.b0];
                    y[n++] = m * m / (v > FLT_MIN ? v : FLT_MIN);
                }
        }
        double c0 = qk_thread_cpu();
        qk_plast_pp_y_n(y, y, n);
        t->floor_pp += qk_thread_cpu() - c0;
        t->n_pp += n;
    }
    diag_buffers_free(&buf);
}

/* ---- the full covariance and the sampled pairs ------------------------------------------- */

/* The centred content coordinates of bin b's queries (column 0 zeroed):
 * C_b restricted to 2..d is Qc^T Qc / (n_b - 1). */
static void centred_bin(const head_work *w, int b, double *qc)
{
    int d = w->d;
    int64_t lo = w->l->bin_row[b], n = w->l->bin_row[b + 1] - lo;
    const double *m = w->qm.mean + (size_t)b * d;
    for (int64_t i = 0; i < n; i++) {
        qc[i * d] = 0.0;
        for (int c = 1; c < d; c++)
            qc[i * d + c] = w->qm.q[(lo + i) * d + c] - m[c];
    }
}

/* v = delta_1^2 sigma2_pos + |Qc delta|^2 / (n_b - 1) + 1e-12 |delta_perp|^2
 * from its parts: delta_1^2, sigma2_pos, zz = |Qc delta|^2, |delta_perp|^2. */
static inline double full_v(double d0, double s2, double zz, int64_t n_b, double perp)
{
    return d0 * s2 + zz / (double)(n_b - 1) + QK_PLAST_FULL_RIDGE * perp;
}

/* full_v of delta, from z = Qc delta. */
static double full_variance(const head_work *w, int b, const double *delta, const double *z,
                            int64_t n_b)
{
    double zz = 0.0, perp = 0.0;
    for (int64_t j = 0; j < n_b; j++)
        zz += z[j] * z[j];
    for (int c = 1; c < w->d; c++)
        perp += delta[c] * delta[c];
    return full_v(delta[0] * delta[0], w->qm.var[(size_t)b * w->d], zz, n_b, perp);
}

/* The keys in position order (ties in key order): the keys before a bin
 * start are a prefix. rank[i] is the place of key i in that order. */
typedef struct key_ranks {
    int32_t position;
    int64_t key;
} key_ranks;

static int cmp_key_ranks(const void *a, const void *b)
{
    const key_ranks *x = a, *y = b;
    if (x->position != y->position)
        return x->position < y->position ? -1 : 1;
    return (x->key > y->key) - (x->key < y->key);
}

static double *keys_by_position(const head_work *w, int64_t *rank, int32_t *tpos)
{
    int64_t nk = w->l->nk;
    size_t n = (size_t)(nk > 0 ? nk : 1);
    key_ranks *order = qk_malloc(n * sizeof *order);
    for (int64_t i = 0; i < nk; i++) {
        order[i].position = w->l->t_k[i];
        order[i].key = i;
    }
    qsort(order, (size_t)nk, sizeof *order, cmp_key_ranks);
    double *k = qk_doubles(n * (size_t)w->d);
    for (int64_t r = 0; r < nk; r++) {
        memcpy(k + r * w->d, w->k + order[r].key * w->d, (size_t)w->d * sizeof *k);
        rank[order[r].key] = r;
        tpos[r] = order[r].position;
    }
    free(order);
    return k;
}

/* Full covariance: |Qc delta|^2 = |Y_a - Y_b|^2 with Y = K Qc^T, one GEMM
 * per bin over the keys before its start (a prefix in position order), then
 * O(n_b) per pair. */
static void exact_full(head_work *w, const qk_plast_head *h)
{
    const qk_plast_layout *l = w->l;
    const qk_plast_grid *g = &l->grid;
    int d = w->d;
    int64_t nk = l->nk, np = l->n_pairs;
    int64_t most = qk_plast_longest_span(l->bin_row, w->n_bins);
    int64_t *rank = qk_malloc((size_t)(nk > 0 ? nk : 1) * sizeof *rank);
    int32_t *tpos = qk_malloc((size_t)(nk > 0 ? nk : 1) * sizeof *tpos);
    double *kpos = keys_by_position(w, rank, tpos);
    double *qc = qk_doubles((size_t)most * d);
    double *y = qk_doubles((size_t)(nk > 0 ? nk : 1) * most);
    /* delta_1^2 and |delta_perp|^2 of every pair */
    double *d0 = qk_malloc((size_t)(np > 0 ? np : 1) * sizeof *d0);
    double *perp = qk_malloc((size_t)(np > 0 ? np : 1) * sizeof *perp);
    for (int64_t i = 0; i < np; i++) {
        const double *ka = w->k + (size_t)l->pairs[i].a * d, *kb = w->k + (size_t)l->pairs[i].b * d;
        d0[i] = (ka[0] - kb[0]) * (ka[0] - kb[0]);
        perp[i] = 0.0;
        for (int c = 1; c < d; c++)
            perp[i] += (ka[c] - kb[c]) * (ka[c] - kb[c]);
    }
    int64_t before = 0; /* keys with t f < b B */
    for (int b = 0; b < w->n_bins; b++) {
        while (before < nk && (int64_t)tpos[before] * g->bin_factor < (int64_t)b * g->bucket_size)
            before++;
        if (!l->kept[b] || before < 2)
            continue;
        int64_t n_b = l->bin_row[b + 1] - l->bin_row[b];
        centred_bin(w, b, qc);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)before, (int)n_b, d, 1.0,
                    kpos, d, qc, d, 0.0, y, (int)n_b);
        double s2 = w->qm.var[(size_t)b * d];
        for (int64_t i = 0; i < l->bin_pairs[b]; i++) {
            const qk_plast_key_pair *pair = &l->pairs[i];
            const double *ya = y + rank[pair->a] * n_b, *yb = y + rank[pair->b] * n_b;
            double zz = 0.0;
            for (int64_t j = 0; j < n_b; j++)
                zz += (ya[j] - yb[j]) * (ya[j] - yb[j]);
            accumulate(w, h, pair, b, mean_term(w, pair, b), full_v(d0[i], s2, zz, n_b, perp[i]));
        }
    }
    free(perp);
    free(d0);
    free(y);
    free(qc);
    free(kpos);
    free(tpos);
    free(rank);
}

/* pairs_per_bin uniform draws (with replacement) from the eligible pairs of
 * each bin, or all of them when there are no more than that. */
static void sampled(head_work *w, qk_plast_head *h, const qk_plast_params *p, qk_rng *rng)
{
    const qk_plast_layout *l = w->l;
    int d = w->d;
    int64_t most = qk_plast_longest_span(l->bin_row, w->n_bins);
    double *qc = qk_doubles((size_t)most * d);
    double *delta = qk_doubles((size_t)d);
    double *z = qk_doubles((size_t)most);
    for (int b = 0; b < w->n_bins; b++) {
        if (!l->kept[b])
            continue;
        int64_t n_b = l->bin_row[b + 1] - l->bin_row[b];
        int64_t avail = l->bin_pairs[b];
        int64_t draws = avail <= p->pairs_per_bin ? avail : p->pairs_per_bin;
        if (p->cov == QK_PLAST_COV_FULL)
            centred_bin(w, b, qc);
        for (int64_t r = 0; r < draws; r++) {
            int64_t idx =
                avail <= p->pairs_per_bin ? r : (int64_t)qk_rng_below(rng, (uint64_t)avail);
            const qk_plast_key_pair *pair = &l->pairs[idx];
            pair_difference(w, pair, delta);
            double v;
            if (p->cov == QK_PLAST_COV_FULL) {
                cblas_dgemv(CblasRowMajor, CblasNoTrans, (int)n_b, d, 1.0, qc, d, delta, 1,
                            0.0, z, 1);
                v = full_variance(w, b, delta, z, n_b);
            } else {
                const double *var = w->qm.var + (size_t)b * d;
                v = 0.0;
                for (int c = 0; c < d; c++)
                    v += delta[c] * delta[c] * var[c];
            }
            accumulate(w, h, pair, b, mean_term(w, pair, b), v);
        }
        h->bin_evals[b] = draws;
    }
    free(z);
    free(delta);
    free(qc);
}

/* ---- the head ------------------------------------------------------------------------- */

static void acc_init(qk_plast_acc *acc, const qk_plast_grid *g)
{
    size_t cells = (size_t)g->n_cells * g->n_cells + 1; /* one spare row */
    qk_plast_acc_shape(acc, g);
    acc->sum = qk_calloc(cells * acc->stride, sizeof *acc->sum);
    acc->count = qk_calloc(cells, sizeof *acc->count);
}

/* The profile and the heatmap from the accumulator: a bin's sum over the
 * cells, a cell's over the bins, each in a fixed order. */
static void finish_head(head_work *w, qk_plast_head *h, const qk_plast_grid *g,
                        const qk_plast_params *p)
{
    const qk_plast_acc *acc = &w->acc;
    double *bin_sum = qk_calloc((size_t)w->n_bins, sizeof *bin_sum);
    size_t nc = (size_t)w->n_cells * w->n_cells;
    for (size_t c = 0; c < nc; c++) {
        const double *row = acc->sum + c * acc->stride;
        double cell_sum = 0.0;
        for (int b = 0; b < w->n_bins; b++) {
            cell_sum += row[b];
            bin_sum[b] += row[b];
        }
        h->cell_evals[c] = acc->count[c];
        h->cell_ap[c] = acc->count[c] >= p->pair2d_min_count && acc->count[c] > 0
                            ? cell_sum / (double)acc->count[c]
                            : NAN;
    }
    h->n_evals = 0;
    for (int b = 0; b < w->n_bins; b++) {
        if (p->pair_mode == QK_PLAST_PAIRS_EXACT)
            h->bin_evals[b] = w->l->kept[b] ? h->bin_pairs[b] : 0;
        h->n_evals += h->bin_evals[b];
        h->bin_ap[b] = h->bin_evals[b] > 0 ? bin_sum[b] / (double)h->bin_evals[b] : NAN;
    }
    free(bin_sum);
    qk_plast_profile_scalars(h->bin_ap, h->bin_queries, g, &h->s);
}

static void reset_head(qk_plast_head *h)
{
    size_t nb = (size_t)h->n_bins, nc = (size_t)h->n_cells * h->n_cells;
    memset(h->bin_queries, 0, nb * sizeof *h->bin_queries);
    memset(h->bin_pairs, 0, nb * sizeof *h->bin_pairs);
    memset(h->bin_evals, 0, nb * sizeof *h->bin_evals);
    memset(h->cell_evals, 0, nc * sizeof *h->cell_evals);
    memset(&h->timing, 0, sizeof h->timing);
    for (size_t b = 0; b < nb; b++)
        h->bin_ap[b] = h->bin_tau[b] = NAN;
    for (size_t c = 0; c < nc; c++)
        h->cell_ap[c] = NAN;
}

/* Steps 1-8: the rows, the layout (kept in the cache), the keys, the
 * queries, and the keys rotated like them. */
static int prepare(const qk_plast_rows *q, const qk_plast_rows *k, int d,
                   const qk_plast_grid *g, const qk_plast_params *p, const uint64_t *keys,
                   qk_plast_cache *c, qk_plast_head *h, head_work *w, qk_err *err)
{
    qk_rng rng;
    uint64_t kk[4] = {keys[0], keys[1], keys[2], STREAM_SUBSAMPLE_Q};
    int64_t nq, nk;
    qk_rng_seed(&rng, kk, 4);
    int64_t *qrows = choose_rows(q->n, p->max_tokens, &rng, &nq);
    kk[3] = STREAM_SUBSAMPLE_K;
    qk_rng_seed(&rng, kk, 4);
    int64_t *krows = choose_rows(k->n, p->max_tokens, &rng, &nk);
    int rc = -1;
    if (check_positions(q, qrows, nq, g, 'q', err) != 0 ||
        check_positions(k, krows, nk, g, 'k', err) != 0)
        goto out;
    if (!c->layout || !qk_plast_layout_fits(c->layout, q, qrows, nq, k, krows, nk, g, p)) {
        qk_plast_cache_forget_keys(c);
        qk_plast_layout_free(c->layout);
        c->layout = qk_plast_layout_make(q, qrows, nq, k, krows, nk, g, p, err);
        if (!c->layout)
            goto out;
    }
    w->l = c->layout;
    int scaled = p->pair_mode == QK_PLAST_PAIRS_EXACT && p->cov == QK_PLAST_COV_DIAG;
    if (head_keys(k, krows, nk, d, w->l, scaled, c, err) != 0)
        goto out;
    h->n_q = nq;
    h->n_k = nk;
    kk[3] = STREAM_NOISE_DIMS;
    qk_rng_seed(&rng, kk, 4);
    if (qk_plast_queries(q, qrows, w->l, d, c->sign, p, &rng, c, h, &w->qm) != 0) {
        not_finite(q, qrows, nq, d, 'q', err);
        goto out;
    }
    w->k = qk_plast_cache_buffer(c, QK_PLAST_BUF_KEYS, (size_t)(nk > 0 ? nk : 1) * d);
    orient_reflect(c->keys, nk, d, c->scale, w->qm.reflect ? w->qm.hv : NULL, w->k);
    memcpy(h->bin_pairs, w->l->bin_pairs, (size_t)w->n_bins * sizeof *h->bin_pairs);
    h->n_key_pairs = w->l->n_pairs;
    rc = 0;
out:
    free(qrows);
    free(krows);
    return rc;
}

int qk_plast_analyse(const qk_plast_rows *q, const qk_plast_rows *k, int d,
                     const qk_plast_grid *g, const qk_plast_params *p, int layer, int q_head,
                     qk_plast_cache *cache, qk_plast_head *h, qk_err *err)
{
    if (d < 1 || d != h->d || g->n_bins != h->n_bins || g->n_cells != h->n_cells)
        return qk_fail(err, "head result not initialised for d = %d and this grid", d);
    if (qk_plast_params_check(p, err) != 0)
        return -1;
    reset_head(h);
    qk_plast_cache *own = cache ? NULL : qk_plast_cache_new();
    qk_plast_cache *c = cache ? cache : own;
    head_work w;
    memset(&w, 0, sizeof w);
    w.d = d;
    w.n_bins = g->n_bins;
    w.n_cells = g->n_cells;
    uint64_t keys[3] = {p->seed, (uint64_t)layer, (uint64_t)q_head};
    int rc = -1;
    double cpu0 = qk_thread_cpu();
    h->timing.warm_up = c->heads++ == 0;
    if (prepare(q, k, d, g, p, keys, c, h, &w, err) != 0)
        goto out;
    acc_init(&w.acc, g);
    if (p->pair_mode == QK_PLAST_PAIRS_SAMPLE) {
        qk_rng rng;
        uint64_t kk[4] = {keys[0], keys[1], keys[2], STREAM_PAIRS};
        qk_rng_seed(&rng, kk, 4);
        score_table(&w);
        sampled(&w, h, p, &rng);
    } else if (p->cov == QK_PLAST_COV_FULL) {
        score_table(&w);
        exact_full(&w, h);
    } else {
        exact_diag(&w);
    }
    finish_head(&w, h, g, p);
    h->timing.total = qk_thread_cpu() - cpu0;
    if (p->time_floor) {
        if (p->pair_mode == QK_PLAST_PAIRS_EXACT && p->cov == QK_PLAST_COV_DIAG)
            measure_floor(&w, h);
        else
            h->timing.floor_gemm = h->timing.floor_pp = NAN;
    }
    rc = 0;
out:
    work_free(&w);
    qk_plast_cache_free(own);
    return rc;
}
