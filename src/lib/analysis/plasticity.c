/* Parameters, the position grid, result containers, the profile scalars
 * and the model-level aggregation of the plasticity stage
 * (docs/plasticity.md: "Per head" steps 7 and 10, "Profile scalars",
 * "Model level"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/plasticity.h"

void qk_plast_params_default(qk_plast_params *p)
{
    memset(p, 0, sizeof *p);
    /* the two modes by their names in the defaults ("diag", "exact") */
    p->cov = strcmp(QK_STR(QK_DEFAULT_PLAST_COV), "full") == 0 ? QK_PLAST_COV_FULL
                                                               : QK_PLAST_COV_DIAG;
    p->bin_factor = QK_DEFAULT_PLAST_BIN_FACTOR;
    p->min_pairs_per_bin = QK_DEFAULT_PLAST_MIN_PAIRS;
    p->pair2d_min_count = QK_DEFAULT_PLAST_PAIR2D_MIN;
    p->pair_mode = strcmp(QK_STR(QK_DEFAULT_PLAST_PAIRS), "sample") == 0 ? QK_PLAST_PAIRS_SAMPLE
                                                                         : QK_PLAST_PAIRS_EXACT;
    p->pairs_per_bin = QK_DEFAULT_PLAST_PAIRS_PER_BIN;
    p->seed = QK_DEFAULT_PLAST_SEED;
    p->max_tokens = QK_DEFAULT_PLAST_MAX_TOKENS;
    p->normality_max_dims = QK_DEFAULT_PLAST_NORMALITY_DIMS;
    p->p_alpha = QK_DEFAULT_PLAST_P_ALPHA;
}

int qk_plast_params_check(const qk_plast_params *p, qk_err *err)
{
    if (p->cov != QK_PLAST_COV_DIAG && p->cov != QK_PLAST_COV_FULL)
        return qk_fail(err, "cov: unknown mode %d", p->cov);
    if (p->bin_factor < 1 || p->bin_factor > 100000)
        return qk_fail(err, "bin factor %d is outside 1..100000", p->bin_factor);
    if (p->min_pairs_per_bin < 1)
        return qk_fail(err, "min pairs per bin must be at least 1");
    if (p->pair2d_min_count < 1)
        return qk_fail(err, "heatmap min count must be at least 1");
    if (p->pair_mode != QK_PLAST_PAIRS_EXACT && p->pair_mode != QK_PLAST_PAIRS_SAMPLE)
        return qk_fail(err, "pairs: unknown mode %d", p->pair_mode);
    if (p->pairs_per_bin < 1)
        return qk_fail(err, "pairs per bin must be at least 1");
    if (p->max_tokens < 2)
        return qk_fail(err, "max tokens must be at least 2");
    if (p->normality_max_dims < 0)
        return qk_fail(err, "normality dims must not be negative");
    if (!(p->p_alpha > 0.0 && p->p_alpha < 1.0))
        return qk_fail(err, "p alpha must lie in (0, 1)");
    return 0;
}

/* ---- the grid ------------------------------------------------------------------- */

int qk_plast_grid_init(qk_plast_grid *g, int bucket_size, int bin_factor, int context_length,
                       int64_t max_position, qk_err *err)
{
    memset(g, 0, sizeof *g);
    if (bucket_size < 1)
        return qk_fail(err, "bucket size %d is not positive", bucket_size);
    if (bin_factor < 1)
        return qk_fail(err, "bin factor %d is not positive", bin_factor);
    if (max_position < 0)
        max_position = 0;
    int64_t bins = max_position * bin_factor / bucket_size + 1;
    int64_t cells = max_position / bucket_size + 1;
    if (bins > 1000000)
        return qk_fail(err, "%lld query bins (positions up to %lld, B = %d, bin factor %d): "
                       "too many", (long long)bins, (long long)max_position, bucket_size,
                       bin_factor);
    if (cells > 4096)
        return qk_fail(err, "%lld heatmap cells per axis: too many", (long long)cells);
    g->bucket_size = bucket_size;
    g->bin_factor = bin_factor;
    g->context_length = context_length > 0 ? context_length : (int)(max_position + 1);
    g->n_bins = (int)bins;
    g->n_cells = (int)cells;
    return 0;
}

double qk_plast_bin_start(const qk_plast_grid *g, int bin)
{
    return (double)bin * g->bucket_size / g->bin_factor;
}

double qk_plast_bin_centre(const qk_plast_grid *g, int bin)
{
    return (bin + 0.5) * g->bucket_size / g->bin_factor;
}

int64_t qk_plast_bin_of(const qk_plast_grid *g, int64_t position)
{
    return position * g->bin_factor / g->bucket_size;
}

/* ---- results ---------------------------------------------------------------------- */

void qk_plast_head_init(qk_plast_head *h, int d, const qk_plast_grid *g)
{
    memset(h, 0, sizeof *h);
    h->d = d;
    h->n_bins = g->n_bins;
    h->n_cells = g->n_cells;
    size_t nb = (size_t)g->n_bins, nc = (size_t)g->n_cells * (size_t)g->n_cells;
    h->component_r2 = qk_calloc((size_t)d, sizeof(double));
    h->component_weight = qk_calloc((size_t)d, sizeof(double));
    h->bin_queries = qk_calloc(nb, sizeof(int64_t));
    h->bin_tau = qk_calloc(nb, sizeof(double));
    h->bin_pairs = qk_calloc(nb, sizeof(int64_t));
    h->bin_evals = qk_calloc(nb, sizeof(int64_t));
    h->bin_ap = qk_calloc(nb, sizeof(double));
    h->cell_evals = qk_calloc(nc, sizeof(int64_t));
    h->cell_ap = qk_calloc(nc, sizeof(double));
}

void qk_plast_head_free(qk_plast_head *h)
{
    free(h->component_r2);
    free(h->component_weight);
    free(h->bin_queries);
    free(h->bin_tau);
    free(h->bin_pairs);
    free(h->bin_evals);
    free(h->bin_ap);
    free(h->cell_evals);
    free(h->cell_ap);
    memset(h, 0, sizeof *h);
}

/* ---- profile scalars (docs/plasticity.md, "Profile scalars") ----------------------------- */

/* Means over segments: bin j of the observed range [first, last] falls in
 * segment floor(K (j - first) / (last - first)), the last bin in K - 1
 * (bin centres are equally spaced, so this splits the range of centres
 * into K equal widths). */
static void segment_means(const double *ap, int first, int last, int k, double *out)
{
    double sum[QK_PLAST_N_DECILES] = {0};
    int count[QK_PLAST_N_DECILES] = {0};
    for (int j = first; j <= last; j++) {
        if (isnan(ap[j]))
            continue;
        int seg = last > first ? (int)((int64_t)k * (j - first) / (last - first)) : 0;
        if (seg >= k)
            seg = k - 1;
        sum[seg] += ap[j];
        count[seg]++;
    }
    for (int s = 0; s < k; s++)
        out[s] = count[s] ? sum[s] / count[s] : NAN;
}

/* Means over the doubling ranges [0,L/16) [L/16,L/8) ... [L/2,L] of the
 * context, by bin centre (compared in integers: centre * 2 f = (2j+1) B). */
static void length_means(const double *ap, const qk_plast_grid *g, double *out)
{
    static const int edge16[QK_PLAST_N_LENGTHS + 1] = {0, 1, 2, 4, 8, 16};
    for (int r = 0; r < QK_PLAST_N_LENGTHS; r++) {
        double sum = 0.0;
        int count = 0;
        for (int j = 0; j < g->n_bins; j++) {
            if (isnan(ap[j]))
                continue;
            int64_t centre = (2 * (int64_t)j + 1) * g->bucket_size * 16;
            int64_t lo = 2 * (int64_t)g->bin_factor * g->context_length * edge16[r];
            int64_t hi = 2 * (int64_t)g->bin_factor * g->context_length * edge16[r + 1];
            int last = r == QK_PLAST_N_LENGTHS - 1;
            if (centre >= lo && (centre < hi || (last && centre == hi))) {
                sum += ap[j];
                count++;
            }
        }
        out[r] = count ? sum / count : NAN;
    }
}

void qk_plast_profile_scalars(const double *ap, const int64_t *weights, const qk_plast_grid *g,
                              qk_plast_scalars *s)
{
    memset(s, 0, sizeof *s);
    s->first_bin = s->last_bin = -1;
    double sum = 0.0, wsum = 0.0, wap = 0.0;
    for (int j = 0; j < g->n_bins; j++) {
        if (isnan(ap[j]))
            continue;
        if (s->first_bin < 0)
            s->first_bin = j;
        s->last_bin = j;
        s->n_bins++;
        sum += ap[j];
        if (weights) {
            wsum += (double)weights[j];
            wap += (double)weights[j] * ap[j];
        }
    }
    s->ap_overall = weights && wsum > 0.0 ? wap / wsum : NAN;
    s->profile_mean = s->n_bins ? sum / s->n_bins : NAN;
    if (s->n_bins) {
        segment_means(ap, s->first_bin, s->last_bin, QK_PLAST_N_DECILES, s->decile);
        segment_means(ap, s->first_bin, s->last_bin, QK_PLAST_N_QUINTILES, s->quintile);
    } else {
        for (int i = 0; i < QK_PLAST_N_DECILES; i++)
            s->decile[i] = NAN;
        for (int i = 0; i < QK_PLAST_N_QUINTILES; i++)
            s->quintile[i] = NAN;
    }
    length_means(ap, g, s->length);
    s->first20 = s->quintile[0];
    s->last20 = s->quintile[QK_PLAST_N_QUINTILES - 1];
    s->drop = s->first20 - s->last20;
    s->recovery = 0.5 * (s->decile[6] + s->decile[7]) - 0.5 * (s->decile[4] + s->decile[5]);
}

/* ---- the model level (docs/plasticity.md, "Model level") --------------------------------- */

void qk_plast_model_compute(qk_plast_model *m, const qk_plast_head *heads, int n_heads,
                            const qk_plast_grid *g)
{
    memset(m, 0, sizeof *m);
    m->n_bins = g->n_bins;
    m->n_cells = g->n_cells;
    m->n_heads = n_heads;
    size_t nc = (size_t)g->n_cells * (size_t)g->n_cells;
    m->bin_ap = qk_calloc((size_t)g->n_bins, sizeof(double));
    m->bin_heads = qk_calloc((size_t)g->n_bins, sizeof(int));
    m->cell_ap = qk_calloc(nc, sizeof(double));
    m->cell_heads = qk_calloc(nc, sizeof(int));
    m->cell_evals = qk_calloc(nc, sizeof(int64_t));
    /* sums in head order: the same for any thread count */
    for (int h = 0; h < n_heads; h++) {
        const qk_plast_head *hd = &heads[h];
        for (int j = 0; j < g->n_bins; j++)
            if (!isnan(hd->bin_ap[j])) {
                m->bin_ap[j] += hd->bin_ap[j];
                m->bin_heads[j]++;
            }
        for (size_t c = 0; c < nc; c++)
            if (!isnan(hd->cell_ap[c])) {
                m->cell_ap[c] += hd->cell_ap[c];
                m->cell_heads[c]++;
                m->cell_evals[c] += hd->cell_evals[c];
            }
    }
    for (int j = 0; j < g->n_bins; j++)
        m->bin_ap[j] = m->bin_heads[j] ? m->bin_ap[j] / m->bin_heads[j] : NAN;
    for (size_t c = 0; c < nc; c++)
        m->cell_ap[c] = m->cell_heads[c] ? m->cell_ap[c] / m->cell_heads[c] : NAN;
    qk_plast_profile_scalars(m->bin_ap, NULL, g, &m->s);
    double sum = 0.0;
    for (int h = 0; h < n_heads; h++)
        if (isfinite(heads[h].s.ap_overall)) {
            sum += heads[h].s.ap_overall;
            m->n_heads_valid++;
        }
    m->s.ap_overall = m->n_heads_valid ? sum / m->n_heads_valid : NAN;
}

void qk_plast_model_free(qk_plast_model *m)
{
    free(m->bin_ap);
    free(m->bin_heads);
    free(m->cell_ap);
    free(m->cell_heads);
    free(m->cell_evals);
    memset(m, 0, sizeof *m);
}
