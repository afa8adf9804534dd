/* Reading and aggregating the rotation study tables
 * (include/qk/rotation_tables.h). */
#include "qk/rotation_tables.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "qk/die.h"
#include "qk/stats.h"
#include "qk/study.h"

/* ---- models and the registry ------------------------------------------------ */

static int find_or_add_model(rot_table *t, const char *id, int *cap)
{
    for (int i = t->n_models - 1; i >= 0; i--)
        if (strcmp(t->models[i].id, id) == 0)
            return i;
    if (strlen(id) >= sizeof t->models[0].id)
        qk_die(QK_EXIT_DATA, t->src.path, "model id '%s' is too long", id);
    if (t->n_models == *cap) {
        *cap = *cap ? 2 * *cap : 16;
        t->models = qk_realloc(t->models, (size_t)*cap * sizeof *t->models);
    }
    rot_model *m = &t->models[t->n_models];
    memset(m, 0, sizeof *m);
    snprintf(m->id, sizeof m->id, "%s", id);
    m->registry_row = -1;
    m->context_length = NAN;
    return t->n_models++;
}

/* Label, family, layers and context length from the table and the registry. */
static void describe_model(rot_model *m, const rot_table *t, const qk_src *reg, int c_family,
                           int c_layer)
{
    snprintf(m->label, sizeof m->label, "%s", m->id);
    snprintf(m->family, sizeof m->family, "other");
    int r = qk_registry_row(reg, m->id);
    if (r >= 0) {
        m->registry_row = r;
        snprintf(m->label, sizeof m->label, "%s",
                 qk_table_cell(reg->t, r, qk_src_col(reg, "label")));
        snprintf(m->family, sizeof m->family, "%s",
                 qk_table_cell(reg->t, r, qk_src_col(reg, "family")));
        m->n_layers = qk_src_int(reg, r, qk_src_col(reg, "n_layers"));
        int c_ctx = qk_table_column(reg->t, "context_length");
        if (c_ctx >= 0)
            m->context_length = qk_src_num(reg, r, c_ctx);
    }
    if (c_family >= 0 && m->n_rows > 0)
        snprintf(m->family, sizeof m->family, "%s",
                 qk_table_cell(t->src.t, m->rows[0], c_family));
    if (r < 0 && c_layer >= 0)
        for (int i = 0; i < m->n_rows; i++) {
            int layer = qk_src_int(&t->src, m->rows[i], c_layer);
            if (layer + 1 > m->n_layers)
                m->n_layers = layer + 1;
        }
}

/* Sorts the models for display and numbers their families. */
static void order_models(rot_table *t, const qk_src *reg)
{
    int n = t->n_models;
    long *family = qk_calloc((size_t)(n ? n : 1), sizeof *family);
    long *within = qk_calloc((size_t)(n ? n : 1), sizeof *within);
    for (int i = 0; i < n; i++) {
        family[i] = qk_family_rank(reg, t->models[i].family);
        within[i] = t->models[i].registry_row >= 0 ? t->models[i].registry_row : QK_UNRANKED + i;
    }
    free(qk_sort_for_display(t->models, sizeof *t->models, n, family, within));
    free(family);
    free(within);
    /* families in order of first appearance (models of unranked families
     * that share a name still share a family) */
    t->family_of = qk_number_families(t->models, sizeof *t->models,
                                      offsetof(rot_model, family), n, &t->n_families);
    t->family_names = qk_family_names(reg, t->models, sizeof *t->models,
                                      offsetof(rot_model, label), offsetof(rot_model, family),
                                      offsetof(rot_model, registry_row), n, t->family_of,
                                      t->n_families);
}

void rot_table_load(rot_table *t, const qk_src *src, const qk_src *registry)
{
    memset(t, 0, sizeof *t);
    t->src = *src;
    int c_model = qk_src_col(src, "model");
    int c_family = qk_table_column(src->t, "family");
    int c_layer = qk_table_column(src->t, "layer");
    int n = src->t->n_rows, cap = 0;
    int *model_of_row = qk_calloc((size_t)(n ? n : 1), sizeof *model_of_row);
    for (int r = 0; r < n; r++) {
        model_of_row[r] = find_or_add_model(t, qk_table_cell(src->t, r, c_model), &cap);
        t->models[model_of_row[r]].n_rows++;
    }
    for (int i = 0; i < t->n_models; i++) {
        t->models[i].rows = qk_calloc((size_t)t->models[i].n_rows, sizeof(int));
        t->models[i].n_rows = 0;
    }
    for (int r = 0; r < n; r++) {
        rot_model *m = &t->models[model_of_row[r]];
        m->rows[m->n_rows++] = r;
    }
    free(model_of_row);
    for (int i = 0; i < t->n_models; i++)
        describe_model(&t->models[i], t, registry, c_family, c_layer);
    order_models(t, registry);
}

void rot_table_free(rot_table *t)
{
    for (int i = 0; i < t->n_models; i++)
        free(t->models[i].rows);
    free(t->models);
    free(t->family_of);
    free(t->family_names);
    memset(t, 0, sizeof *t);
}

void rot_family_name(const rot_table *t, int f, char *out, size_t cap)
{
    snprintf(out, cap, "%s", f >= 0 && f < t->n_families ? t->family_names[f].text : "other");
}

/* ---- row lists ---------------------------------------------------------------- */

rot_rows rot_rows_model(const rot_table *t, int m)
{
    rot_rows r = {t->models[m].n_rows, qk_calloc((size_t)(t->models[m].n_rows + 1), sizeof(int))};
    memcpy(r.index, t->models[m].rows, (size_t)r.n * sizeof(int));
    return r;
}

rot_rows rot_rows_family(const rot_table *t, int f)
{
    rot_rows r = {0, qk_calloc((size_t)t->src.t->n_rows + 1, sizeof(int))};
    for (int m = 0; m < t->n_models; m++)
        if (t->family_of[m] == f)
            for (int i = 0; i < t->models[m].n_rows; i++)
                r.index[r.n++] = t->models[m].rows[i];
    return r;
}

rot_rows rot_rows_all(const rot_table *t)
{
    rot_rows r = {0, qk_calloc((size_t)t->src.t->n_rows + 1, sizeof(int))};
    for (int m = 0; m < t->n_models; m++)
        for (int i = 0; i < t->models[m].n_rows; i++)
            r.index[r.n++] = t->models[m].rows[i];
    return r;
}

void rot_rows_free(rot_rows *r)
{
    free(r->index);
    r->index = NULL;
    r->n = 0;
}

/* ---- statistics ------------------------------------------------------------------ */

/* The values of x at the rows, in row order (as magnitudes if asked). */
static double *gather(const double *x, const rot_rows *r, int absolute)
{
    double *v = qk_malloc((size_t)(r->n + 1) * sizeof *v);
    for (int i = 0; i < r->n; i++)
        v[i] = absolute ? fabs(x[r->index[i]]) : x[r->index[i]];
    return v;
}

double rot_mean(const double *x, const rot_rows *r, int absolute)
{
    double *v = gather(x, r, absolute);
    double m = qk_mean(v, r->n);
    free(v);
    return m;
}

double rot_quantile(const double *x, const rot_rows *r, double q, int absolute)
{
    double *v = gather(x, r, absolute);
    double out = qk_quantile(v, r->n, q);
    free(v);
    return out;
}

double rot_max(const double *x, const rot_rows *r, int absolute)
{
    double best = NAN;
    for (int i = 0; i < r->n; i++) {
        double v = x[r->index[i]];
        if (absolute)
            v = fabs(v);
        if (!isnan(v) && (isnan(best) || v > best))
            best = v;
    }
    return best;
}

double rot_min(const double *x, const rot_rows *r, int absolute)
{
    double best = NAN;
    for (int i = 0; i < r->n; i++) {
        double v = x[r->index[i]];
        if (absolute)
            v = fabs(v);
        if (!isnan(v) && (isnan(best) || v < best))
            best = v;
    }
    return best;
}

int rot_count_positive(const double *x, const rot_rows *r)
{
    int k = 0;
    for (int i = 0; i < r->n; i++)
        k += x[r->index[i]] > 0.0;
    return k;
}

int rot_count_defined(const double *x, const rot_rows *r)
{
    int k = 0;
    for (int i = 0; i < r->n; i++)
        k += !isnan(x[r->index[i]]);
    return k;
}

int rot_count_greater(const double *x, const double *y, const rot_rows *r)
{
    int k = 0;
    for (int i = 0; i < r->n; i++)
        k += x[r->index[i]] > y[r->index[i]];
    return k;
}

double rot_pearson(const double *x, const double *y, const rot_rows *r)
{
    double *a = gather(x, r, 0), *b = gather(y, r, 0);
    double out = qk_pearson(a, b, r->n);
    free(a);
    free(b);
    return out;
}

rot_corr rot_correlation(const double *x, const double *y, const rot_rows *r)
{
    rot_corr c = {NAN, NAN, NAN, 0};
    for (int i = 0; i < r->n; i++)
        c.n += isfinite(x[r->index[i]]) && isfinite(y[r->index[i]]);
    if (c.n < ROT_CORR_MIN_N)
        return c;
    c.r = rot_pearson(x, y, r);
    qk_pearson_interval(c.r, c.n, &c.lo, &c.hi);
    return c;
}

/* a sign the 95 % interval is sure of: +1, -1, or 0 */
static int sure_sign(const rot_corr *c)
{
    return !isfinite(c->r) || !isfinite(c->lo) || !isfinite(c->hi) ? 0
           : c->lo > 0                                                ? 1
           : c->hi < 0                                                ? -1
                                                                      : 0;
}

int rot_reverses(const rot_corr *pooled, const rot_corr *group)
{
    int p = sure_sign(pooled), g = sure_sign(group);
    return p != 0 && g == -p;
}

int rot_simpson_reversal(const rot_corr *pooled, const rot_corr *groups, int n_groups)
{
    int with_r = 0;
    for (int g = 0; g < n_groups; g++) {
        if (isnan(groups[g].r))
            continue;
        with_r++;
        if (!rot_reverses(pooled, &groups[g]))
            return 0;
    }
    return with_r >= 2;
}
