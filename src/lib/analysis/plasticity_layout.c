/* The layout of a head (plasticity_internal.h): everything its analysis
 * takes from the positions of its rows alone, made once for the heads of
 * a layer, whose tokens are the same:
 *   - the queries by bin (step 7), their mean positions;
 *   - the keys by range of examples, then position (step 8);
 *   - every same-example key pair with its first eligible bin, the
 *     eligible pairs per bin and the kept bins;
 *   - for the exact diagonal mode, the evaluation order: blocks of pairs
 *     and the heatmap row of each (pair, bin) evaluation, with the
 *     evaluations per heatmap cell. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plasticity_internal.h"
#include "plasticity_vec.h"

/* keys per range of examples whose pairs are evaluated together */
#define RANGE_KEYS 1024

/* Sorts idx[n] stably by key[idx[i]]: least significant digit first, 11
 * bits a pass, skipping the digits all keys share. */
static void radix_sort_index(const uint64_t *key, int64_t *idx, int64_t n)
{
    enum { BITS = 11, SIZE = 1 << BITS };
    int64_t *tmp = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *tmp);
    uint32_t *count = qk_malloc(SIZE * sizeof *count);
    for (int shift = 0; shift < 64; shift += BITS) {
        memset(count, 0, SIZE * sizeof *count);
        for (int64_t i = 0; i < n; i++)
            count[(key[idx[i]] >> shift) & (SIZE - 1)]++;
        if (n == 0 || count[(key[idx[0]] >> shift) & (SIZE - 1)] == (uint32_t)n)
            continue;
        uint32_t sum = 0;
        for (int d = 0; d < SIZE; d++) {
            uint32_t here = count[d];
            count[d] = sum;
            sum += here;
        }
        for (int64_t i = 0; i < n; i++)
            tmp[count[(key[idx[i]] >> shift) & (SIZE - 1)]++] = idx[i];
        memcpy(idx, tmp, (size_t)n * sizeof *idx);
    }
    free(count);
    free(tmp);
}

/* an int32 as an unsigned value of the same order */
static inline uint64_t ordered32(int32_t v)
{
    return (uint64_t)((uint32_t)v ^ UINT32_C(0x80000000));
}

/* The queries by bin (stable), their positions, each bin's first place,
 * count and mean position. */
static void order_queries(qk_plast_layout *l)
{
    const qk_plast_grid *g = &l->grid;
    size_t n = (size_t)(l->nq > 0 ? l->nq : 1);
    int64_t *count = qk_calloc((size_t)g->n_bins + 1, sizeof *count);
    for (int64_t i = 0; i < l->nq; i++)
        count[qk_plast_bin_of(g, l->q_pos[i]) + 1]++;
    for (int b = 0; b < g->n_bins; b++)
        count[b + 1] += count[b];
    l->bin_row = qk_malloc(((size_t)g->n_bins + 1) * sizeof *l->bin_row);
    memcpy(l->bin_row, count, ((size_t)g->n_bins + 1) * sizeof *count);
    l->q_order = qk_malloc(n * sizeof *l->q_order);
    l->t_q = qk_malloc(n * sizeof *l->t_q);
    for (int64_t i = 0; i < l->nq; i++) {
        int64_t to = count[qk_plast_bin_of(g, l->q_pos[i])]++;
        l->q_order[to] = i;
        l->t_q[to] = l->q_pos[i];
    }
    free(count);
    l->bin_queries = qk_malloc((size_t)g->n_bins * sizeof *l->bin_queries);
    l->bin_tau = qk_malloc((size_t)g->n_bins * sizeof *l->bin_tau);
    for (int b = 0; b < g->n_bins; b++) {
        int64_t lo = l->bin_row[b], nb = l->bin_row[b + 1] - lo;
        double sum = 0.0;
        for (int64_t i = lo; i < lo + nb; i++)
            sum += l->t_q[i];
        l->bin_queries[b] = nb;
        l->bin_tau[b] = nb ? sum / (double)nb : NAN;
    }
}

/* The keys by range of examples, then by position (ties by example, then
 * row). A range is a run of consecutive examples (in example order) with
 * at least RANGE_KEYS keys: the pairs of one range are evaluated together,
 * so the key and score rows they read stay in cache; inside a range the
 * keys before a bin start are a prefix, so the score table is only
 * computed where pairs read it. Returns the keys (places) in (example,
 * position, row) order: the order in which pairs are made. */
static int32_t *order_keys(qk_plast_layout *l)
{
    int64_t nk = l->nk;
    size_t n = (size_t)(nk > 0 ? nk : 1);
    const int32_t *t = l->k_pos, *ex = l->k_ex;
    uint64_t *key = qk_malloc(n * sizeof *key);
    int64_t *by_ex = qk_malloc(n * sizeof *by_ex);
    int32_t *range = qk_malloc(n * sizeof *range);
    for (int64_t i = 0; i < nk; i++) {
        key[i] = ordered32(ex[i]) << 32 | ordered32(t[i]);
        by_ex[i] = i;
    }
    radix_sort_index(key, by_ex, nk); /* stable: ties stay in row order */
    int32_t r = 0;
    int64_t in_range = 0;
    for (int64_t j = 0; j < nk; j++) {
        if (j > 0 && ex[by_ex[j]] != ex[by_ex[j - 1]] && in_range >= RANGE_KEYS) {
            r++;
            in_range = 0;
        }
        range[by_ex[j]] = r;
        in_range++;
    }
    l->n_ranges = nk > 0 ? r + 1 : 0;
    l->k_order = qk_malloc(n * sizeof *l->k_order);
    for (int64_t i = 0; i < nk; i++)
        key[i] = (uint64_t)range[i] << 32 | ordered32(t[i]);
    memcpy(l->k_order, by_ex, n * sizeof *by_ex);
    radix_sort_index(key, l->k_order, nk); /* ties stay in (example, row) order */
    l->t_k = qk_malloc(n * sizeof *l->t_k);
    l->ex_k = qk_malloc(n * sizeof *l->ex_k);
    l->range_of = qk_malloc(n * sizeof *l->range_of);
    l->range_start = qk_calloc((size_t)l->n_ranges + 1, sizeof *l->range_start);
    int64_t *place = qk_malloc(n * sizeof *place); /* of each key in the order */
    for (int64_t i = 0; i < nk; i++) {
        int64_t row = l->k_order[i];
        l->t_k[i] = t[row];
        l->ex_k[i] = ex[row];
        l->range_of[i] = range[row];
        l->range_start[range[row] + 1] = i + 1;
        place[row] = i;
    }
    int32_t *by_example = qk_malloc(n * sizeof *by_example);
    for (int64_t j = 0; j < nk; j++)
        by_example[j] = (int32_t)place[by_ex[j]];
    free(place);
    free(range);
    free(by_ex);
    free(key);
    return by_example;
}

/* Every same-example pair (a before b in position), with the first query
 * bin whose start lies above both positions: t_b * f < bin * B, i.e.
 * first = floor(t_b f / B) + 1. Pairs are made example by example and
 * counting-sorted by first bin (stable, so the order is the making order
 * within a bin); bin_pairs[b] = pairs with first <= b. */
static int enumerate_pairs(qk_plast_layout *l, const int32_t *key, qk_err *err)
{
    const qk_plast_grid *g = &l->grid;
    int64_t *count = qk_calloc((size_t)g->n_bins + 1, sizeof *count);
    int64_t total = 0;
    for (int64_t lo = 0; lo < l->nk;) {
        int64_t hi = lo;
        while (hi < l->nk && l->ex_k[key[hi]] == l->ex_k[key[lo]])
            hi++;
        for (int64_t j = lo + 1; j < hi; j++) {
            int64_t first = qk_plast_bin_of(g, l->t_k[key[j]]) + 1;
            if (first < g->n_bins) {
                count[first + 1] += j - lo;
                total += j - lo;
            }
        }
        lo = hi;
    }
    if (total > INT64_C(50000000)) { /* 24 bytes each */
        free(count);
        return qk_fail(err, "%lld same-example key pairs: too many to hold", (long long)total);
    }
    for (int b = 0; b < g->n_bins; b++)
        count[b + 1] += count[b];
    l->bin_pairs = qk_malloc((size_t)g->n_bins * sizeof *l->bin_pairs);
    for (int b = 0; b < g->n_bins; b++)
        l->bin_pairs[b] = count[b + 1];
    l->n_pairs = total;
    l->pairs = qk_malloc((size_t)(total > 0 ? total : 1) * sizeof *l->pairs);
    for (int64_t lo = 0; lo < l->nk;) {
        int64_t hi = lo;
        while (hi < l->nk && l->ex_k[key[hi]] == l->ex_k[key[lo]])
            hi++;
        for (int64_t j = lo + 1; j < hi; j++) {
            int32_t b = key[j];
            int64_t first = qk_plast_bin_of(g, l->t_k[b]) + 1;
            if (first >= g->n_bins)
                continue;
            for (int64_t i = lo; i < j; i++) {
                int32_t a = key[i];
                qk_plast_key_pair *p = &l->pairs[count[first]++];
                p->a = a;
                p->b = b;
                p->first = (int32_t)first;
                p->dist_cell = (l->t_k[b] - l->t_k[a]) / g->bucket_size;
                p->pos_sum = (int64_t)l->t_k[a] + l->t_k[b];
            }
        }
        lo = hi;
    }
    free(count);
    return 0;
}

static int32_t *copy_positions(const int32_t *src, const int64_t *rows, int64_t n)
{
    int32_t *out = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *out);
    for (int64_t i = 0; i < n; i++)
        out[i] = src[rows[i]];
    return out;
}

qk_plast_layout *qk_plast_layout_make(const qk_plast_rows *q, const int64_t *q_rows, int64_t nq,
                                      const qk_plast_rows *k, const int64_t *k_rows, int64_t nk,
                                      const qk_plast_grid *g, const qk_plast_params *p,
                                      qk_err *err)
{
    if (g->n_cells >= QK_PLAST_NO_ROW) {
        qk_fail(err, "%d heatmap cells per axis: at most %d", g->n_cells, QK_PLAST_NO_ROW - 1);
        return NULL;
    }
    qk_plast_layout *l = qk_calloc(1, sizeof *l);
    l->nq = nq;
    l->nk = nk;
    l->q_pos = copy_positions(q->position, q_rows, nq);
    l->k_pos = copy_positions(k->position, k_rows, nk);
    l->k_ex = copy_positions(k->example_id, k_rows, nk);
    l->grid = *g;
    l->min_pairs = p->min_pairs_per_bin;
    order_queries(l);
    int32_t *by_example = order_keys(l);
    int rc = enumerate_pairs(l, by_example, err);
    free(by_example);
    if (rc != 0) {
        qk_plast_layout_free(l);
        return NULL;
    }
    l->kept = qk_calloc((size_t)g->n_bins, 1);
    for (int b = 0; b < g->n_bins; b++)
        l->kept[b] = l->bin_queries[b] >= QK_PLAST_MIN_BIN_QUERIES &&
                     l->bin_pairs[b] >= p->min_pairs_per_bin;
    return l;
}

static int same_positions(const int32_t *mine, const int32_t *src, const int64_t *rows,
                          int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (mine[i] != src[rows[i]])
            return 0;
    return 1;
}

int qk_plast_layout_fits(const qk_plast_layout *l, const qk_plast_rows *q, const int64_t *q_rows,
                         int64_t nq, const qk_plast_rows *k, const int64_t *k_rows, int64_t nk,
                         const qk_plast_grid *g, const qk_plast_params *p)
{
    return l->nq == nq && l->nk == nk && memcmp(&l->grid, g, sizeof *g) == 0 &&
           l->min_pairs == p->min_pairs_per_bin && same_positions(l->q_pos, q->position, q_rows, nq) &&
           same_positions(l->k_pos, k->position, k_rows, nk) &&
           same_positions(l->k_ex, k->example_id, k_rows, nk);
}

/* ---- the evaluation order of the exact diagonal mode ------------------------------------- */

/* The pairs by range of examples, then by first bin (stable: making order
 * within), and the blocks: at most QK_PLAST_PAIR_BLOCK pairs of one range. */
static void make_blocks(const qk_plast_layout *l, qk_plast_plan *pl)
{
    int64_t *count = qk_calloc((size_t)l->n_ranges + 1, sizeof *count);
    for (int64_t i = 0; i < l->n_pairs; i++)
        count[l->range_of[l->pairs[i].a] + 1]++;
    int64_t n_blocks = 0;
    for (int r = 0; r < l->n_ranges; r++)
        n_blocks += (count[r + 1] + QK_PLAST_PAIR_BLOCK - 1) / QK_PLAST_PAIR_BLOCK;
    pl->block_start = qk_malloc((size_t)(n_blocks + 1) * sizeof *pl->block_start);
    pl->n_blocks = 0;
    for (int r = 0; r < l->n_ranges; r++) {
        for (int64_t off = 0; off < count[r + 1]; off += QK_PLAST_PAIR_BLOCK)
            pl->block_start[pl->n_blocks++] = count[r] + off;
        count[r + 1] += count[r];
    }
    pl->block_start[pl->n_blocks] = l->n_pairs;
    pl->pairs = qk_malloc((size_t)(l->n_pairs > 0 ? l->n_pairs : 1) * sizeof *pl->pairs);
    for (int64_t i = 0; i < l->n_pairs; i++)
        pl->pairs[count[l->range_of[l->pairs[i].a]]++] = l->pairs[i];
    free(count);
}

/* Within each block: the GEMM's first bin, then the pairs by heatmap
 * column (counting sort, stable), so that a column's part of the
 * accumulator stays in the first-level cache while its pairs add to it
 * (the GEMM takes the pairs in this order too). */
static void order_blocks(const qk_plast_layout *l, qk_plast_plan *pl)
{
    int nc = l->grid.n_cells;
    int64_t *start = qk_malloc(((size_t)nc + 1) * sizeof *start);
    qk_plast_key_pair *tmp = qk_malloc(QK_PLAST_PAIR_BLOCK * sizeof *tmp);
    pl->block_b0 = qk_malloc((size_t)(pl->n_blocks > 0 ? pl->n_blocks : 1) * sizeof *pl->block_b0);
    for (int64_t k = 0; k < pl->n_blocks; k++) {
        qk_plast_key_pair *blk = pl->pairs + pl->block_start[k];
        int64_t nb = pl->block_start[k + 1] - pl->block_start[k];
        int b0 = blk[0].first > pl->first_kept ? blk[0].first : pl->first_kept; /* by first */
        pl->block_b0[k] = b0 <= pl->last_kept ? b0 : -1;
        memcpy(tmp, blk, (size_t)nb * sizeof *tmp);
        memset(start, 0, ((size_t)nc + 1) * sizeof *start);
        for (int64_t i = 0; i < nb; i++)
            start[(tmp[i].dist_cell < nc ? tmp[i].dist_cell : nc - 1) + 1]++;
        for (int c = 0; c < nc; c++)
            start[c + 1] += start[c];
        for (int64_t i = 0; i < nb; i++)
            blk[start[tmp[i].dist_cell < nc ? tmp[i].dist_cell : nc - 1]++] = tmp[i];
    }
    free(tmp);
    free(start);
}

static void plan_rows(const qk_plast_layout *l, qk_plast_plan *pl)
{
    const qk_plast_grid *g = &l->grid;
    qk_plast_acc acc; /* the geometry of the accumulator */
    qk_plast_acc_shape(&acc, g);
    double *tau2 = qk_malloc((size_t)g->n_bins * sizeof *tau2);
    for (int b = 0; b < g->n_bins; b++)
        tau2[b] = l->kept[b] ? 2.0 * l->bin_tau[b] : NAN;
    pl->rows_at = qk_malloc(((size_t)l->n_pairs + 1) * sizeof *pl->rows_at);
    int64_t total = 0;
    for (int64_t k = 0; k < pl->n_blocks; k++)
        for (int64_t i = pl->block_start[k]; i < pl->block_start[k + 1]; i++) {
            int b0 = pl->block_b0[k], f = pl->pairs[i].first > b0 ? pl->pairs[i].first : b0;
            pl->rows_at[i] = total;
            total += b0 >= 0 && f <= pl->last_kept ? pl->last_kept - f + 1 : 0;
        }
    pl->rows_at[l->n_pairs] = total;
    pl->rows = qk_malloc((size_t)total + 16); /* a vector's read beyond the last */
    memset(pl->rows + total, QK_PLAST_NO_ROW, 16);
    pl->cell_evals = qk_calloc((size_t)g->n_cells * g->n_cells, sizeof *pl->cell_evals);
    for (int64_t i = 0; i < l->n_pairs; i++) {
        int n = (int)(pl->rows_at[i + 1] - pl->rows_at[i]);
        int dist = pl->pairs[i].dist_cell, col = dist < g->n_cells ? dist : g->n_cells - 1;
        uint8_t *rows = pl->rows + pl->rows_at[i];
        qk_plast_heatmap_rows(&acc, tau2 + (pl->last_kept - n + 1), (double)pl->pairs[i].pos_sum,
                              n, rows);
        qk_plast_count_rows(rows, n, pl->cell_evals + (size_t)col * g->n_cells);
    }
    free(tau2);
}

const qk_plast_plan *qk_plast_layout_plan(qk_plast_layout *l)
{
    if (l->plan)
        return l->plan;
    qk_plast_plan *pl = qk_calloc(1, sizeof *pl);
    pl->last_kept = l->grid.n_bins - 1;
    while (pl->last_kept >= 0 && !l->kept[pl->last_kept])
        pl->last_kept--;
    pl->first_kept = 0;
    while (pl->first_kept <= pl->last_kept && !l->kept[pl->first_kept])
        pl->first_kept++;
    make_blocks(l, pl);
    order_blocks(l, pl);
    plan_rows(l, pl);
    l->plan = pl;
    return pl;
}

static void plan_free(qk_plast_plan *pl)
{
    if (!pl)
        return;
    free(pl->pairs);
    free(pl->block_start);
    free(pl->block_b0);
    free(pl->rows);
    free(pl->rows_at);
    free(pl->cell_evals);
    free(pl);
}

void qk_plast_layout_free(qk_plast_layout *l)
{
    if (!l)
        return;
    free(l->q_pos);
    free(l->k_pos);
    free(l->k_ex);
    free(l->q_order);
    free(l->t_q);
    free(l->bin_row);
    free(l->bin_queries);
    free(l->bin_tau);
    free(l->k_order);
    free(l->t_k);
    free(l->ex_k);
    free(l->range_of);
    free(l->range_start);
    free(l->pairs);
    free(l->bin_pairs);
    free(l->kept);
    plan_free(l->plan);
    free(l);
}
