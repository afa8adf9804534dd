/* Reading and aggregating the plasticity study tables
 * (include/qk/plasticity_tables.h). */
#include "qk/plasticity_tables.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "qk/common.h"
#include "qk/die.h"
#include "qk/stats.h"
#include "qk/study.h"

const char *const plast_len_columns[PLAST_N_LEN] = {"len_1_16", "len_1_8", "len_1_4", "len_1_2",
                                                    "len_1_1"};
const char *const plast_quintile_columns[PLAST_N_QUINTILES] = {"p0_20", "p20_40", "p40_60",
                                                               "p60_80", "p80_100"};

/* ---- models ------------------------------------------------------------------------ */

static void copy_id(char *out, size_t cap, const char *id, const qk_src *src)
{
    if (strlen(id) >= cap)
        qk_die(QK_EXIT_DATA, src->path, "model id '%s' is too long", id);
    snprintf(out, cap, "%s", id);
}

static void describe(plast_model *m, const qk_src *reg)
{
    m->registry_row = qk_registry_row(reg, m->id);
    snprintf(m->label, sizeof m->label, "%s", m->id);
    snprintf(m->family, sizeof m->family, "other");
    if (m->registry_row < 0)
        return;
    snprintf(m->label, sizeof m->label, "%s",
             qk_table_cell(reg->t, m->registry_row, qk_src_col(reg, "label")));
    snprintf(m->family, sizeof m->family, "%s",
             qk_table_cell(reg->t, m->registry_row, qk_src_col(reg, "family")));
}

static void read_model(plast_model *m, const qk_src *rep, int r)
{
    int c_h = qk_src_col(rep, "n_heads");
    m->n_heads = qk_src_int(rep, r, c_h);
    m->ap = qk_src_num(rep, r, qk_src_col(rep, "ap_overall"));
    m->first = qk_src_num(rep, r, qk_src_col(rep, "ap_first_20pct"));
    m->last = qk_src_num(rep, r, qk_src_col(rep, "ap_last_20pct"));
    m->drop = qk_src_num(rep, r, qk_src_col(rep, "ap_drop"));
    /* the geometry of the capture is never missing */
    m->context = qk_src_finite(rep, r, qk_src_col(rep, "context_length"));
    m->bin_factor = qk_src_finite(rep, r, qk_src_col(rep, "bucket_size")) /
                    qk_src_finite(rep, r, qk_src_col(rep, "bin_width"));
    for (int i = 0; i < PLAST_N_LEN; i++)
        m->len[i] = qk_src_num(rep, r, qk_src_col(rep, plast_len_columns[i]));
    for (int i = 0; i < PLAST_N_DECILES; i++) {
        char name[8];
        snprintf(name, sizeof name, "d%d", i);
        m->decile[i] = qk_src_num(rep, r, qk_src_col(rep, name));
    }
    for (int i = 0; i < PLAST_N_QUINTILES; i++)
        m->quintile[i] = qk_src_num(rep, r, qk_src_col(rep, plast_quintile_columns[i]));
}

static void order_models(plast_table *t, const qk_src *reg)
{
    int n = t->n_models;
    long *family = qk_calloc((size_t)(n ? n : 1), sizeof *family);
    long *within = qk_calloc((size_t)(n ? n : 1), sizeof *within);
    for (int i = 0; i < n; i++) {
        const plast_model *m = &t->models[i];
        family[i] = m->registry_row >= 0 ? qk_family_rank(reg, m->family) : QK_UNRANKED;
        within[i] = m->registry_row >= 0 ? m->registry_row : QK_UNRANKED + i;
    }
    free(qk_sort_for_display(t->models, sizeof *t->models, n, family, within));
    free(family);
    free(within);
    t->family_of = qk_number_families(t->models, sizeof *t->models,
                                      offsetof(plast_model, family), n, &t->n_families);
    t->family_names = qk_family_names(reg, t->models, sizeof *t->models,
                                      offsetof(plast_model, label), offsetof(plast_model, family),
                                      offsetof(plast_model, registry_row), n, t->family_of,
                                      t->n_families);
}

void plast_table_load(plast_table *t, const qk_src *report, const qk_src *registry,
                      const qk_src *benchmarks)
{
    memset(t, 0, sizeof *t);
    t->src = *report;
    int c_m = qk_src_col(report, "model");
    t->n_models = report->t->n_rows;
    t->models = qk_calloc((size_t)(t->n_models ? t->n_models : 1), sizeof *t->models);
    for (int r = 0; r < t->n_models; r++) {
        plast_model *m = &t->models[r];
        copy_id(m->id, sizeof m->id, qk_table_cell(report->t, r, c_m), report);
        for (int j = 0; j < r; j++)
            if (strcmp(t->models[j].id, m->id) == 0)
                qk_die(QK_EXIT_DATA, report->path, "line %d: model %s appears twice", r + 2, m->id);
        read_model(m, report, r);
        describe(m, registry);
        m->lbp = plast_published_score(benchmarks, m->id, "longbench-pro", "overall");
    }
    order_models(t, registry);
}

void plast_table_free(plast_table *t)
{
    free(t->models);
    free(t->family_of);
    free(t->family_names);
    memset(t, 0, sizeof *t);
}

int plast_find_model(const plast_table *t, const char *id)
{
    for (int i = 0; i < t->n_models; i++)
        if (qk_model_is(t->models[i].id, id))
            return i;
    return -1;
}

void plast_family_name(const plast_table *t, int f, char *out, size_t cap)
{
    snprintf(out, cap, "%s", f >= 0 && f < t->n_families ? t->family_names[f].text : "other");
}

double plast_published_score(const qk_src *bench, const char *model, const char *benchmark,
                             const char *length)
{
    if (!bench)
        return NAN;
    int c_m = qk_src_col(bench, "model"), c_b = qk_src_col(bench, "benchmark");
    int c_l = qk_src_col(bench, "length"), c_s = qk_src_col(bench, "score");
    for (int r = 0; r < bench->t->n_rows; r++)
        if (strcmp(qk_table_cell(bench->t, r, c_m), model) == 0 &&
            strcmp(qk_table_cell(bench->t, r, c_b), benchmark) == 0 &&
            strcmp(qk_table_cell(bench->t, r, c_l), length) == 0)
            return qk_src_num(bench, r, c_s);
    return NAN;
}

int plast_published_lengths(const qk_src *bench, const char *model, const char *benchmark,
                            double *length, double *score, int cap)
{
    int n = 0;
    if (!bench)
        return 0;
    int c_m = qk_src_col(bench, "model"), c_b = qk_src_col(bench, "benchmark");
    int c_l = qk_src_col(bench, "length"), c_s = qk_src_col(bench, "score");
    for (int r = 0; r < bench->t->n_rows && n < cap; r++) {
        const char *l = qk_table_cell(bench->t, r, c_l);
        char *end;
        double x = strtod(l, &end);
        if (strcmp(qk_table_cell(bench->t, r, c_m), model) != 0 ||
            strcmp(qk_table_cell(bench->t, r, c_b), benchmark) != 0 || end == l || *end)
            continue; /* another model or benchmark, or an "overall" score */
        int at = n++;
        while (at > 0 && length[at - 1] > x) { /* insertion keeps them ascending */
            length[at] = length[at - 1], score[at] = score[at - 1];
            at--;
        }
        length[at] = x, score[at] = qk_src_num(bench, r, c_s);
    }
    return n;
}

double plast_ap_at_length(const qk_src *profile, const char *model, double length, int *n_bins)
{
    double lo = length <= PLAST_FIRST_RANGE ? 0.0 : length / 2, sum = 0.0;
    int c_m = qk_src_col(profile, "model"), c_c = qk_src_col(profile, "bin_centre");
    int c_ap = qk_src_col(profile, "ap");
    *n_bins = 0;
    for (int r = 0; r < profile->t->n_rows; r++) {
        if (strcmp(qk_table_cell(profile->t, r, c_m), model) != 0)
            continue;
        double centre = qk_src_num(profile, r, c_c), ap = qk_src_num(profile, r, c_ap);
        if (centre >= lo && centre < length && isfinite(ap)) {
            sum += ap;
            ++*n_bins;
        }
    }
    return *n_bins ? sum / *n_bins : NAN;
}

void plast_family_stats(const plast_table *t, int f, plast_family *out)
{
    memset(out, 0, sizeof *out);
    out->drop_min = INFINITY;
    out->drop_max = -INFINITY;
    qk_sum ap = {0}, first = {0}, last = {0}, drop = {0};
    for (int i = 0; i < t->n_models; i++) {
        if (t->family_of[i] != f)
            continue;
        const plast_model *m = &t->models[i];
        out->n_models++;
        out->n_heads += m->n_heads;
        qk_sum_add(&ap, m->ap);
        qk_sum_add(&first, m->first);
        qk_sum_add(&last, m->last);
        qk_sum_add(&drop, m->drop);
        if (isfinite(m->drop)) {
            out->drop_min = fmin(out->drop_min, m->drop);
            out->drop_max = fmax(out->drop_max, m->drop);
        }
    }
    out->ap = qk_sum_mean(&ap);
    out->first = qk_sum_mean(&first);
    out->last = qk_sum_mean(&last);
    out->drop = qk_sum_mean(&drop);
    if (drop.n == 0)
        out->drop_min = out->drop_max = NAN;
}

double plast_model_value(const plast_model *m, int which)
{
    return which == PLAST_AP ? m->ap : which == PLAST_FIRST ? m->first
                                   : which == PLAST_LAST  ? m->last
                                                          : m->drop;
}

qk_line plast_lbp_fit(const plast_table *t, int which)
{
    double *x = qk_malloc((size_t)(t->n_models + 1) * sizeof *x);
    double *y = qk_malloc((size_t)(t->n_models + 1) * sizeof *y);
    for (int i = 0; i < t->n_models; i++) {
        x[i] = plast_model_value(&t->models[i], which);
        y[i] = t->models[i].lbp;
    }
    qk_line l = qk_line_fit(x, y, t->n_models);
    free(x);
    free(y);
    return l;
}

/* ---- heatmaps, weights, profiles ------------------------------------------------------- */

void plast_heatmap_cells(const qk_src *pair2d, const char *model, plast_cells *c)
{
    double near = 0, far = 0;
    int n_near = 0, n_far = 0, far_bin = -1;
    c->n = 0;
    c->min = INFINITY;
    c->max = -INFINITY;
    int c_m = qk_src_col(pair2d, "model"), c_d = qk_src_col(pair2d, "dist_bin");
    int c_ap = qk_src_col(pair2d, "ap");
    /* first pass: the extremes, the nearest column and the farthest bin;
     * second pass: the farthest column */
    for (int pass = 0; pass < 2; pass++)
        for (int r = 0; r < pair2d->t->n_rows; r++) {
            if (strcmp(qk_table_cell(pair2d->t, r, c_m), model) != 0)
                continue;
            double ap = qk_src_num(pair2d, r, c_ap);
            int d = qk_src_int(pair2d, r, c_d);
            if (!isfinite(ap))
                continue;
            if (pass == 0) {
                c->n++;
                far_bin = d > far_bin ? d : far_bin;
                c->min = fmin(c->min, ap);
                c->max = fmax(c->max, ap);
                if (d == 0) {
                    near += ap;
                    n_near++;
                }
            } else if (d == far_bin) {
                far += ap;
                n_far++;
            }
        }
    c->near = n_near ? near / n_near : NAN;
    c->far = n_far ? far / n_far : NAN;
    if (c->n == 0)
        c->min = c->max = NAN;
}

void plast_weights_load(const qk_src *w, const char *model, plast_weights *out)
{
    double *sum = NULL;
    int *count = NULL, d = 0;
    int c_m = qk_src_col(w, "model"), c_c = qk_src_col(w, "component");
    int c_w = qk_src_col(w, "component_weight");
    for (int r = 0; r < w->t->n_rows; r++) {
        if (strcmp(qk_table_cell(w->t, r, c_m), model) != 0)
            continue;
        double c = qk_src_num(w, r, c_c);
        if (!(c >= 0 && c < 65536 && c == floor(c)))
            qk_die(QK_EXIT_DATA, w->path, "line %d: bad component %g", r + 2, c);
        if (c + 1 > d) {
            sum = qk_realloc(sum, (size_t)(c + 1) * sizeof *sum);
            count = qk_realloc(count, (size_t)(c + 1) * sizeof *count);
            for (int k = d; k <= (int)c; k++) {
                sum[k] = 0;
                count[k] = 0;
            }
            d = (int)c + 1;
        }
        sum[(int)c] += qk_src_num(w, r, c_w);
        count[(int)c]++;
    }
    for (int c = 0; c < d; c++)
        sum[c] = count[c] ? sum[c] / count[c] : 0;
    free(count);
    out->dim = d;
    out->weight = sum;
}

void plast_weights_free(plast_weights *w)
{
    free(w->weight);
    w->weight = NULL;
    w->dim = 0;
}

/* Running moments of one bin (Welford). */
typedef struct bin_moments {
    int n;
    double mean, m2;
} bin_moments;

void plast_profile_spread(const qk_src *profile, const char *model, plast_spread *s)
{
    int c_m = qk_src_col(profile, "model"), c_b = qk_src_col(profile, "q_bin");
    int c_ap = qk_src_col(profile, "ap"), c_l = qk_src_col(profile, "layer");
    int c_q = qk_src_col(profile, "q_head");
    int n_bins = 0;
    bin_moments *bins = NULL;
    const char *prev_l = NULL, *prev_q = NULL;
    s->heads = 0;
    for (int r = 0; r < profile->t->n_rows; r++) {
        if (strcmp(qk_table_cell(profile->t, r, c_m), model) != 0)
            continue;
        const char *l = qk_table_cell(profile->t, r, c_l), *q = qk_table_cell(profile->t, r, c_q);
        if (!prev_l || strcmp(l, prev_l) || strcmp(q, prev_q))
            s->heads++;
        prev_l = l, prev_q = q;
        double b = qk_src_num(profile, r, c_b), ap = qk_src_num(profile, r, c_ap);
        if (!(b >= 0 && b < 1e7 && b == floor(b)))
            qk_die(QK_EXIT_DATA, profile->path, "line %d: bad q_bin %g", r + 2, b);
        if (!isfinite(ap))
            continue;
        if ((int)b >= n_bins) {
            bins = qk_realloc(bins, (size_t)(b + 1) * sizeof *bins);
            memset(bins + n_bins, 0, (size_t)((int)b + 1 - n_bins) * sizeof *bins);
            n_bins = (int)b + 1;
        }
        bin_moments *m = &bins[(int)b];
        double delta = ap - m->mean;
        m->mean += delta / ++m->n;
        m->m2 += delta * (ap - m->mean);
    }
    int lo = 0, hi = n_bins - 1;
    while (lo <= hi && bins[lo].n == 0)
        lo++;
    double sum[2] = {0, 0};
    int n[2] = {0, 0};
    for (int b = lo; b <= hi; b++) {
        if (bins[b].n < 2)
            continue;
        /* fifths of the bin range, as the figures and ap_first_20pct cut it */
        int part = hi > lo && (int)(5.0 * (b - lo) / (hi - lo)) > 0;
        sum[part] += sqrt(bins[b].m2 / (bins[b].n - 1));
        n[part]++;
    }
    s->first = n[0] ? sum[0] / n[0] : NAN;
    s->rest = n[1] ? sum[1] / n[1] : NAN;
    free(bins);
}

/* ---- SmolLM3 --------------------------------------------------------------------------------- */

int plast_joint_load(const qk_src *j, plast_checkpoint **out)
{
    static const char *const cols[] = {"context_length", "bias_strength", "abs_alpha_k",
                                       "abs_r_k_a", "separation_strength", "plane_var_fraction",
                                       "ap_overall", "ap_first_20pct", "ap_last_20pct", "ap_drop"};
    enum { N_COLS = sizeof cols / sizeof cols[0] };
    int c_model = qk_src_col(j, "model"), c_label = qk_src_col(j, "label");
    int c_heads = qk_src_col(j, "n_heads"), c[N_COLS];
    for (int i = 0; i < N_COLS; i++)
        c[i] = qk_src_col(j, cols[i]);
    int n = j->t->n_rows;
    plast_checkpoint *cp = qk_calloc((size_t)(n + 1), sizeof *cp);
    for (int r = 0; r < n; r++) {
        double x[N_COLS];
        for (int i = 0; i < N_COLS; i++)
            x[i] = qk_src_num(j, r, c[i]);
        copy_id(cp[r].id, sizeof cp[r].id, qk_table_cell(j->t, r, c_model), j);
        copy_id(cp[r].label, sizeof cp[r].label, qk_table_cell(j->t, r, c_label), j);
        cp[r].n_heads = qk_src_int(j, r, c_heads);
        cp[r].context = x[0], cp[r].bias = x[1], cp[r].alpha_k = x[2], cp[r].r_k = x[3];
        cp[r].sep = x[4], cp[r].plane = x[5], cp[r].ap = x[6], cp[r].first = x[7];
        cp[r].last = x[8], cp[r].drop = x[9];
    }
    *out = cp;
    return n;
}

void plast_smollm3_compare(const plast_checkpoint *cp, int n, plast_smollm3 *s)
{
    memset(s, 0, sizeof *s);
    s->base = s->peak = s->first_lc = s->last_lc = -1;
    double min_ctx = INFINITY;
    for (int i = 0; i < n; i++)
        min_ctx = fmin(min_ctx, cp[i].context);
    for (int i = 0; i < n; i++) {
        if (cp[i].context == min_ctx) {
            s->base = i;
            if (s->peak < 0 || cp[i].bias > cp[s->peak].bias)
                s->peak = i;
            continue;
        }
        if (s->first_lc < 0)
            s->first_lc = i;
        s->last_lc = i;
        s->n_lc++;
        s->lc_bias += cp[i].bias;
        s->lc_first += cp[i].first;
        s->lc_last += cp[i].last;
        s->lc_drop += cp[i].drop;
    }
    s->ok = s->base >= 0 && s->n_lc > 0;
    double k = s->n_lc ? s->n_lc : NAN;
    s->lc_bias /= k;
    s->lc_first /= k;
    s->lc_last /= k;
    s->lc_drop /= k;
}
