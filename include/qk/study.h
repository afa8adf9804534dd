/* What the readers of the study tables (the PCA, rotation and plasticity
 * figures and summaries) share: the dataset registry (workflow/datasets.tsv:
 * id, label, family, n_layers, context_length, ...), the display order of
 * models and families, depth bins and training phases. */
#ifndef QK_STUDY_H
#define QK_STUDY_H

#include <stddef.h>

#include "qk/table.h"

#define QK_DEPTH_BINS 10         /* depth bins 0.0, 0.1, ..., 0.9 */
#define QK_UNRANKED 1000000L     /* rank of what the display order does not know */

/* Whether a study table's model id names the dataset: the same id, or the
 * dataset id ends in "-<id>" (the SmolLM3 tables name checkpoint
 * "smollm3-3b-stage1-step-40000" "stage1-step-40000"). */
int qk_model_is(const char *table_id, const char *dataset_id);
/* Registry row of a model id: exact match, else the row qk_model_is
 * matches; -1 when there is none or reg is NULL. */
int qk_registry_row(const qk_src *reg, const char *id);
/* The cell of column in the registry row whose id is exactly id; fallback
 * when there is no such row or column. */
const char *qk_registry_cell(const qk_src *reg, const char *id, const char *column,
                             const char *fallback);

/* Display rank of a family: its place among the registry's families in
 * the order of their first rows (llama 0, ministral 1, qwen 2, ...);
 * QK_UNRANKED for a family the registry does not list (or reg NULL). */
long qk_family_rank(const qk_src *reg, const char *family);
/* The display order of n models: their indices sorted by family rank,
 * then rank within the family (registry row), then index (malloc'd). */
int *qk_display_order(const long *family_rank, const long *within, int n);
/* Puts n items of size bytes into that display order, in place; returns
 * the order (order[i]: the former index of the item now at i; malloc'd). */
int *qk_sort_for_display(void *items, size_t size, int n, const long *family_rank,
                         const long *within);
/* Numbers the families of n models (items of size bytes, the family name a
 * string at byte name_at of each) in order of first appearance: returns
 * family_of[n] (malloc'd; models that share a family name share a number)
 * and the number of families in *n_families. */
int *qk_number_families(const void *models, size_t size, size_t name_at, int n,
                        int *n_families);
/* The display name of a family from its models' labels: their longest
 * common prefix cut back to a word boundary ("Qwen3-0.6B", "Qwen3-4B" ->
 * "Qwen3"); a family of one model is named by its label; fallback when no
 * label is given or nothing is left, its first letter in upper case ("llama" -> "Llama"). */
void qk_family_label(const char *const *labels, int n, const char *fallback, char *out,
                     size_t cap);

/* The display names of the n_families families of a table's n models
 * (items of size bytes with the label and family strings at byte label_at
 * and family_at and the int registry row, -1 if none, at row_at; family_of
 * as qk_number_families gives it): for a family with a model in the
 * registry, qk_family_label over the labels of every registry row of that
 * family in the studies of the table's models, so that a run on some of
 * the datasets names a family as a run on all of them ("Qwen3", not
 * "Qwen3-8B"); else over its models' labels (malloc'd, n_families names). */
typedef struct qk_family_name {
    char text[64];
} qk_family_name;
qk_family_name *qk_family_names(const qk_src *reg, const void *models, size_t size,
                                size_t label_at, size_t family_at, size_t row_at, int n,
                                const int *family_of, int n_families);

/* Depth bin of a layer: min(floor(10 layer / (n_layers - 1)), 9); 0 when
 * n_layers < 2. */
int qk_depth_bin(int layer, int n_layers);

/* The training phase of a checkpoint id: the part before "-step-"
 * ("stage1", "lc-4k-to-32k"), or the whole id. */
void qk_phase_of(const char *id, char *out, size_t cap);
/* A readable phase name: "Stage 1", "LC 4K→32K" (K = 1024 tokens);
 * unknown ids unchanged. */
void qk_phase_label(const char *phase, char *out, size_t cap);

#endif
