/* Reading and aggregating the PCA study tables (include/qk/pca_tables.h). */
#include "qk/pca_tables.h"
#include "qk/die.h"
#include "qk/stats.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "qk/study.h"

const char *const pca_cat_id[PCA_N_CAT] = {"position-dominated", "q-positional", "k-positional",
                                           "content-focused", "mixed"};
const char *const pca_cat_label[PCA_N_CAT] = {"position-dominated", "Q-positional",
                                              "K-positional", "content-focused", "mixed"};

static int parse_int_cell(const qk_src *s, int row, int col)
{
    double v = qk_src_num(s, row, col);
    if (v != floor(v) || v < 0 || v > 1e6)
        qk_die(QK_EXIT_DATA, s->path, "line %d, column %s: '%s' is not a count", row + 2,
               s->t->header[col], qk_table_cell(s->t, row, col));
    return (int)v;
}

static int parse_category(const qk_src *s, int row, int col)
{
    const char *cell = qk_table_cell(s->t, row, col);
    for (int c = 0; c < PCA_N_CAT; c++)
        if (strcmp(cell, pca_cat_id[c]) == 0)
            return c;
    qk_die(QK_EXIT_DATA, s->path, "line %d: unknown category '%s'", row + 2, cell);
}

/* ---- models and the registry ----------------------------------------------- */

static void describe_model(pca_model *m, const qk_src *reg)
{
    m->registry_row = -1;
    snprintf(m->label, sizeof m->label, "%s", m->id);
    snprintf(m->family, sizeof m->family, "other");
    if (!reg)
        return;
    int r = qk_registry_row(reg, m->id);
    if (r < 0)
        return;
    m->registry_row = r;
    snprintf(m->label, sizeof m->label, "%s",
             qk_table_cell(reg->t, r, qk_src_col(reg, "label")));
    snprintf(m->family, sizeof m->family, "%s",
             qk_table_cell(reg->t, r, qk_src_col(reg, "family")));
    m->n_layers = parse_int_cell(reg, r, qk_src_col(reg, "n_layers"));
}

static int find_or_add_model(pca_study *s, const char *id, int *cap)
{
    for (int i = s->n_models - 1; i >= 0; i--)
        if (strcmp(s->models[i].id, id) == 0)
            return i;
    if (strlen(id) >= sizeof s->models[0].id)
        qk_die(QK_EXIT_DATA, s->src.path, "model id '%s' is too long", id);
    if (s->n_models == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        s->models = qk_realloc(s->models, (size_t)*cap * sizeof *s->models);
    }
    pca_model *m = &s->models[s->n_models];
    memset(m, 0, sizeof *m);
    snprintf(m->id, sizeof m->id, "%s", id);
    return s->n_models++;
}

static int cmp_head(const void *a, const void *b)
{
    const pca_head *x = a, *y = b;
    if (x->model != y->model)
        return x->model < y->model ? -1 : 1;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return (x->head > y->head) - (x->head < y->head);
}

/* Sorts the models for display and renumbers the heads' model indices. */
static void order_models(pca_study *s, const qk_src *reg)
{
    int n = s->n_models;
    long *family = qk_calloc((size_t)(n ? n : 1), sizeof *family);
    long *within = qk_calloc((size_t)(n ? n : 1), sizeof *within);
    for (int i = 0; i < n; i++) {
        const pca_model *m = &s->models[i];
        /* a model the registry does not know is of family "other": last */
        family[i] = m->registry_row >= 0 ? qk_family_rank(reg, m->family) : QK_UNRANKED;
        within[i] = m->registry_row >= 0 ? m->registry_row : QK_UNRANKED + i;
    }
    int *order = qk_sort_for_display(s->models, sizeof *s->models, n, family, within);
    int *new_index = qk_calloc((size_t)(n ? n : 1), sizeof *new_index);
    for (int i = 0; i < n; i++)
        new_index[order[i]] = i;
    for (int h = 0; h < s->n_heads; h++)
        s->heads[h].model = new_index[s->heads[h].model];
    free(family);
    free(within);
    free(order);
    free(new_index);
    s->family_of = qk_number_families(s->models, sizeof *s->models,
                                      offsetof(pca_model, family), n, &s->n_families);
    s->family_names = qk_family_names(reg, s->models, sizeof *s->models,
                                      offsetof(pca_model, label), offsetof(pca_model, family),
                                      offsetof(pca_model, registry_row), n, s->family_of,
                                      s->n_families);
}

/* Sorts the heads by (model, layer, head), checks for repeats and fills
 * the models' head ranges and missing layer counts. */
static void index_heads(pca_study *s)
{
    qsort(s->heads, (size_t)s->n_heads, sizeof *s->heads, cmp_head);
    for (int h = 0; h < s->n_heads; h++) {
        const pca_head *x = &s->heads[h];
        pca_model *m = &s->models[x->model];
        if (h > 0 && cmp_head(&s->heads[h - 1], x) == 0)
            qk_die(QK_EXIT_DATA, s->src.path, "line %d: head %s layer %d head %d appears twice",
                   x->row + 2, m->id, x->layer, x->head);
        if (m->n_heads++ == 0)
            m->first_head = h;
    }
    for (int i = 0; i < s->n_models; i++) {
        pca_model *m = &s->models[i];
        if (m->registry_row >= 0)
            continue;
        for (int h = m->first_head; h < m->first_head + m->n_heads; h++)
            if (s->heads[h].layer + 1 > m->n_layers)
                m->n_layers = s->heads[h].layer + 1;
    }
}

void pca_study_load(pca_study *s, const qk_src *heads, const qk_src *registry)
{
    memset(s, 0, sizeof *s);
    s->src = *heads;
    const qk_table *t = heads->t;
    int c_model = qk_src_col(heads, "model"), c_layer = qk_src_col(heads, "layer");
    int c_head = qk_src_col(heads, "head");
    int c_rq = qk_src_col(heads, "r_q0"), c_rk = qk_src_col(heads, "r_k0");
    int c_ev = qk_src_col(heads, "ev0");
    int c_cat = qk_table_column(t, "category");
    s->has_category = c_cat >= 0;
    s->heads = qk_calloc((size_t)(t->n_rows ? t->n_rows : 1), sizeof *s->heads);
    int cap = 0;
    for (int r = 0; r < t->n_rows; r++) {
        pca_head *h = &s->heads[s->n_heads++];
        h->model = find_or_add_model(s, qk_table_cell(t, r, c_model), &cap);
        h->layer = parse_int_cell(heads, r, c_layer);
        h->head = parse_int_cell(heads, r, c_head);
        h->row = r;
        h->r_q0 = qk_src_num(heads, r, c_rq);
        h->r_k0 = qk_src_num(heads, r, c_rk);
        h->ev0 = qk_src_num(heads, r, c_ev);
        h->category = c_cat >= 0 ? parse_category(heads, r, c_cat) : -1;
    }
    for (int i = 0; i < s->n_models; i++)
        describe_model(&s->models[i], registry);
    order_models(s, registry);
    index_heads(s);
}

void pca_study_free(pca_study *s)
{
    free(s->family_of);
    free(s->family_names);
    free(s->models);
    free(s->heads);
    memset(s, 0, sizeof *s);
}

void pca_study_need_category(const pca_study *s)
{
    if (!s->has_category)
        qk_src_col(&s->src, "category");
}

/* ---- aggregation --------------------------------------------------------------- */

/* Means over heads skip the values that are not finite (a head without
 * spread, qk_sum): one such head must not make its model's mean NaN. */

double pca_head_value(const pca_head *h, int which)
{
    return which == PCA_R_Q0 ? h->r_q0 : which == PCA_R_K0 ? h->r_k0 : h->ev0;
}

void pca_depth_means(const pca_study *s, int model, int which, double cell[QK_DEPTH_BINS],
                     int counts[QK_DEPTH_BINS])
{
    const pca_model *m = &s->models[model];
    qk_sum bin[QK_DEPTH_BINS] = {{0}};
    for (int h = m->first_head; h < m->first_head + m->n_heads; h++) {
        int b = qk_depth_bin(s->heads[h].layer, m->n_layers);
        qk_sum_add(&bin[b], pca_head_value(&s->heads[h], which));
    }
    for (int b = 0; b < QK_DEPTH_BINS; b++) {
        cell[b] = qk_sum_mean(&bin[b]);
        if (counts)
            counts[b] = bin[b].n;
    }
}

void pca_model_mean_sd(const pca_study *s, int model, int which, double *mean, double *sd)
{
    const pca_model *m = &s->models[model];
    qk_sum all = {0};
    for (int h = m->first_head; h < m->first_head + m->n_heads; h++)
        qk_sum_add(&all, pca_head_value(&s->heads[h], which));
    *mean = qk_sum_mean(&all);
    double ss = 0;
    for (int h = m->first_head; h < m->first_head + m->n_heads; h++) {
        double d = pca_head_value(&s->heads[h], which) - *mean;
        if (isfinite(d))
            ss += d * d;
    }
    *sd = all.n > 1 ? sqrt(ss / (all.n - 1)) : 0;
}

void pca_model_categories(const pca_study *s, int model, int cat[PCA_N_CAT])
{
    const pca_model *m = &s->models[model];
    memset(cat, 0, PCA_N_CAT * sizeof cat[0]);
    for (int h = m->first_head; h < m->first_head + m->n_heads; h++)
        if (s->heads[h].category >= 0)
            cat[s->heads[h].category]++;
}

void pca_component_means(const qk_src *qk, double r_q[PCA_N_PC], double r_k[PCA_N_PC],
                         double ev[PCA_N_PC], int n[PCA_N_PC])
{
    int c_pc = qk_src_col(qk, "pc"), c_ev = qk_src_col(qk, "explained_variance");
    int c_rq = qk_src_col(qk, "r_q"), c_rk = qk_src_col(qk, "r_k");
    qk_sum sq[PCA_N_PC] = {{0}}, sk[PCA_N_PC] = {{0}}, sev[PCA_N_PC] = {{0}};
    for (int i = 0; i < PCA_N_PC; i++)
        n[i] = 0;
    for (int r = 0; r < qk->t->n_rows; r++) {
        int pc = parse_int_cell(qk, r, c_pc);
        if (pc >= PCA_N_PC)
            qk_die(QK_EXIT_DATA, qk->path, "line %d: component %d (expected 0 to %d)", r + 2,
                   pc, PCA_N_PC - 1);
        qk_sum_add(&sq[pc], qk_src_num(qk, r, c_rq));
        qk_sum_add(&sk[pc], qk_src_num(qk, r, c_rk));
        qk_sum_add(&sev[pc], qk_src_num(qk, r, c_ev));
        n[pc]++;
    }
    for (int i = 0; i < PCA_N_PC; i++) {
        r_q[i] = qk_sum_mean(&sq[i]);
        r_k[i] = qk_sum_mean(&sk[i]);
        ev[i] = qk_sum_mean(&sev[i]);
    }
}

/* ---- names ------------------------------------------------------------------------ */

void pca_family_name(const pca_study *s, const char *family, char *out, size_t cap)
{
    for (int i = 0; i < s->n_models; i++)
        if (strcmp(s->models[i].family, family) == 0) {
            snprintf(out, cap, "%s", s->family_names[s->family_of[i]].text);
            return;
        }
    snprintf(out, cap, "%s", family);
}

int pca_family_index(const pca_study *s, int m)
{
    return s->family_of[m];
}

int pca_n_families(const pca_study *s)
{
    return s->n_families;
}
