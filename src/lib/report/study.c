/* The registry, display order, depth bins and phases of the study tables
 * (include/qk/study.h). */
#include "qk/study.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int qk_model_is(const char *table_id, const char *dataset_id)
{
    size_t n = strlen(table_id), m = strlen(dataset_id);
    return strcmp(table_id, dataset_id) == 0 ||
           (n > 0 && m > n + 1 && dataset_id[m - n - 1] == '-' &&
            strcmp(dataset_id + m - n, table_id) == 0);
}

int qk_registry_row(const qk_src *reg, const char *id)
{
    if (!reg)
        return -1;
    int c_id = qk_src_col(reg, "id");
    int r = qk_src_find(reg, c_id, id);
    if (r >= 0)
        return r;
    for (r = 0; r < reg->t->n_rows; r++)
        if (qk_model_is(id, qk_table_cell(reg->t, r, c_id)))
            return r;
    return -1;
}

const char *qk_registry_cell(const qk_src *reg, const char *id, const char *column,
                             const char *fallback)
{
    int c = qk_table_column(reg->t, column);
    int r = qk_src_find(reg, qk_src_col(reg, "id"), id);
    return c >= 0 && r >= 0 ? qk_table_cell(reg->t, r, c) : fallback;
}

long qk_family_rank(const qk_src *reg, const char *family)
{
    if (!reg)
        return QK_UNRANKED;
    /* the number of distinct families on the registry rows before its first row */
    int c = qk_src_col(reg, "family"), rank = 0;
    for (int r = 0; r < reg->t->n_rows; r++) {
        const char *f = qk_table_cell(reg->t, r, c);
        if (strcmp(f, family) == 0)
            return rank;
        if (qk_src_find(reg, c, f) == r)
            rank++;
    }
    return QK_UNRANKED;
}

typedef struct model_rank {
    long family, within;
    int index;
} model_rank;

static int cmp_rank(const void *a, const void *b)
{
    const model_rank *x = a, *y = b;
    if (x->family != y->family)
        return x->family < y->family ? -1 : 1;
    if (x->within != y->within)
        return x->within < y->within ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

int *qk_display_order(const long *family_rank, const long *within, int n)
{
    model_rank *rank = qk_calloc((size_t)(n ? n : 1), sizeof *rank);
    for (int i = 0; i < n; i++)
        rank[i] = (model_rank){family_rank[i], within[i], i};
    qsort(rank, (size_t)n, sizeof *rank, cmp_rank);
    int *order = qk_calloc((size_t)(n ? n : 1), sizeof *order);
    for (int i = 0; i < n; i++)
        order[i] = rank[i].index;
    free(rank);
    return order;
}

int *qk_sort_for_display(void *items, size_t size, int n, const long *family_rank,
                         const long *within)
{
    int *order = qk_display_order(family_rank, within, n);
    char *sorted = qk_malloc((n ? (size_t)n : 1) * size);
    for (int i = 0; i < n; i++)
        memcpy(sorted + (size_t)i * size, (char *)items + (size_t)order[i] * size, size);
    if (n > 0) /* items may be NULL then */
        memcpy(items, sorted, (size_t)n * size);
    free(sorted);
    return order;
}

int *qk_number_families(const void *models, size_t size, size_t name_at, int n,
                        int *n_families)
{
    const char *base = (const char *)models + name_at;
    int *family_of = qk_calloc((size_t)(n > 0 ? n : 1), sizeof *family_of);
    *n_families = 0;
    for (int i = 0; i < n; i++) {
        int f = -1;
        for (int j = 0; j < i && f < 0; j++)
            if (strcmp(base + (size_t)j * size, base + (size_t)i * size) == 0)
                f = family_of[j];
        family_of[i] = f >= 0 ? f : (*n_families)++;
    }
    return family_of;
}

static int is_separator(char c) { return c == '-' || c == '_' || c == ' '; }

void qk_family_label(const char *const *labels, int n, const char *fallback, char *out,
                     size_t cap)
{
    const char *first = n > 0 ? labels[0] : NULL;
    size_t common = first ? strlen(first) : 0;
    for (int i = 1; i < n; i++) {
        size_t k = 0;
        while (k < common && labels[i][k] == first[k])
            k++;
        common = k;
    }
    if (n > 1) {
        /* back to the last separator inside the common prefix, then drop
         * trailing separators */
        size_t k = common;
        if (first[k] && !is_separator(first[k]))
            while (k > 0 && !is_separator(first[k - 1]))
                k--;
        while (k > 0 && is_separator(first[k - 1]))
            k--;
        common = k;
    }
    if (common == 0) { /* the family's id, as a name: "llama" is "Llama" */
        snprintf(out, cap, "%s", fallback);
        if (out[0] >= 'a' && out[0] <= 'z')
            out[0] = (char)(out[0] - 'a' + 'A');
    } else
        snprintf(out, cap, "%.*s", (int)common, first);
}

/* Whether study is the registry study of one of the n models. */
static int study_in_table(const qk_src *reg, int c_study, const char *study, int n,
                          const int *registry_row)
{
    for (int i = 0; i < n; i++)
        if (registry_row[i] >= 0 &&
            strcmp(qk_table_cell(reg->t, registry_row[i], c_study), study) == 0)
            return 1;
    return 0;
}

/* The labels qk_family_names names family f from, into pool; returns their
 * count and the family's name in *family. */
static int family_pool(const qk_src *reg, int n, const int *registry_row,
                       const char *const *labels, const char *const *families,
                       const int *family_of, int f, const char **pool, const char **family)
{
    int known = 0, k = 0;
    *family = "other";
    for (int i = n - 1; i >= 0; i--)
        if (family_of[i] == f) {
            *family = families[i];
            known |= registry_row[i] >= 0;
        }
    int c_study = reg ? qk_table_column(reg->t, "study") : -1;
    int c_family = reg ? qk_table_column(reg->t, "family") : -1;
    int c_label = reg ? qk_table_column(reg->t, "label") : -1;
    if (known && c_study >= 0 && c_family >= 0 && c_label >= 0) {
        for (int r = 0; r < reg->t->n_rows; r++)
            if (strcmp(qk_table_cell(reg->t, r, c_family), *family) == 0 &&
                study_in_table(reg, c_study, qk_table_cell(reg->t, r, c_study), n, registry_row))
                pool[k++] = qk_table_cell(reg->t, r, c_label);
        return k;
    }
    for (int i = 0; i < n; i++)
        if (family_of[i] == f)
            pool[k++] = labels[i];
    return k;
}

qk_family_name *qk_family_names(const qk_src *reg, const void *models, size_t size,
                                size_t label_at, size_t family_at, size_t row_at, int n,
                                const int *family_of, int n_families)
{
    size_t cap = (size_t)(n > 0 ? n : 1);
    int *rows = qk_malloc(cap * sizeof *rows);
    const char **labels = qk_malloc(cap * sizeof *labels);
    const char **families = qk_malloc(cap * sizeof *families);
    for (int i = 0; i < n; i++) {
        const char *item = (const char *)models + (size_t)i * size;
        memcpy(&rows[i], item + row_at, sizeof rows[i]);
        labels[i] = item + label_at;
        families[i] = item + family_at;
    }
    qk_family_name *names = qk_calloc((size_t)(n_families > 0 ? n_families : 1), sizeof *names);
    const char **pool = qk_malloc((cap + (reg ? (size_t)reg->t->n_rows : 0)) * sizeof *pool);
    for (int f = 0; f < n_families; f++) {
        const char *family;
        int k = family_pool(reg, n, rows, labels, families, family_of, f, pool, &family);
        qk_family_label(pool, k, family, names[f].text, sizeof names[f].text);
    }
    free(pool);
    free(rows);
    free(labels);
    free(families);
    return names;
}

int qk_depth_bin(int layer, int n_layers)
{
    if (n_layers < 2)
        return 0;
    double depth = (double)layer / (double)(n_layers - 1);
    int bin = (int)floor(10.0 * depth);
    return bin < 0 ? 0 : bin > QK_DEPTH_BINS - 1 ? QK_DEPTH_BINS - 1 : bin;
}

void qk_phase_of(const char *id, char *out, size_t cap)
{
    const char *cut = strstr(id, "-step-");
    size_t n = cut ? (size_t)(cut - id) : strlen(id);
    snprintf(out, cap, "%.*s", (int)n, id);
}

void qk_phase_label(const char *phase, char *out, size_t cap)
{
    const char *to = strstr(phase, "-to-");
    if (strncmp(phase, "stage", 5) == 0 && phase[5] >= '0' && phase[5] <= '9')
        snprintf(out, cap, "Stage %s", phase + 5);
    else if (strncmp(phase, "lc-", 3) == 0 && to)
        snprintf(out, cap, "LC %.*s→%s", (int)(to - phase - 3), phase + 3, to + 4);
    else
        snprintf(out, cap, "%s", phase);
    /* context lengths in K = 1024 tokens: "lc-4k-to-32k" is "LC 4K→32K" */
    for (char *k = out; *k; k++)
        if (*k == 'k' && k > out && k[-1] >= '0' && k[-1] <= '9')
            *k = 'K';
}
