/* The tables of the combined QK PCA study as the PCA figures and
 * qk-summary read them: results/<study>/qk.csv (10 rows a head),
 * results/<study>/qk_heads.csv (one row a head) and the dataset registry.
 * Used by qk-plot and by qk-summary, so both report the same numbers
 * from the same aggregation. */
#ifndef QK_PCA_TABLES_H
#define QK_PCA_TABLES_H

#include "qk/common.h"
#include "qk/study.h"
#include "qk/table.h"

#define PCA_N_PC 10

/* The head categories of qk-taxonomy, in the order the figures stack them. */
enum { PCA_POS_DOM, PCA_Q_POS, PCA_K_POS, PCA_CONTENT, PCA_MIXED, PCA_N_CAT };
extern const char *const pca_cat_id[PCA_N_CAT];    /* "position-dominated", "q-positional" ... */
extern const char *const pca_cat_label[PCA_N_CAT]; /* "position-dominated", "Q-positional" ... */

/* One model or training checkpoint of a study table. */
typedef struct pca_model {
    char id[64];     /* as in the table's model column */
    char label[64];  /* registry label ("Qwen3-0.6B", "S1-40K"), else the id */
    char family[32]; /* registry family, else "other" */
    int n_layers;    /* registry n_layers, else the largest layer seen + 1 */
    int registry_row;/* row in the registry, -1 if absent */
    int n_heads;
    int first_head;  /* heads[first_head .. first_head + n_heads - 1] */
} pca_model;

/* One query head: its PC0 numbers and its row in the heads table. */
typedef struct pca_head {
    int model;
    int layer, head;
    int row;       /* row of the heads table, for further columns */
    double r_q0, r_k0, ev0;
    int category;  /* PCA_POS_DOM ...; -1 when the table has no category column */
} pca_head;

/* The heads of one study table, grouped by model in display order. */
typedef struct pca_study {
    qk_src src;
    int n_models;
    pca_model *models;
    int n_heads;
    pca_head *heads;
    int has_category;
    int *family_of; /* [n_models] the family index of each model */
    int n_families;
    qk_family_name *family_names; /* [n_families] (qk_family_names) */
} pca_study;

/* Loads a per-head table (columns model, layer, head, r_q0, r_k0, ev0 and,
 * if present, category) and orders its models for display: the families of
 * the thesis figures first (Qwen3, Llama 3.2, Ministral 3), then the other
 * families in registry order; within a family the registry order, which is
 * training order for checkpoints; models missing from the registry last.
 * A model id matches a registry id exactly, or as its suffix after a '-'
 * (checkpoint "stage1-step-40000" is "smollm3-3b-stage1-step-40000").
 * registry may be NULL. */
void pca_study_load(pca_study *s, const qk_src *heads, const qk_src *registry);
void pca_study_free(pca_study *s);

/* Dies naming the heads table unless it has a category column. */
void pca_study_need_category(const pca_study *s);

/* Mean of r_q0 (which 0), r_k0 (1) or ev0 (2) over the model's heads in
 * each depth bin where it is finite; cells without such heads get NAN.
 * counts (may be NULL): the heads averaged per cell. */
enum { PCA_R_Q0, PCA_R_K0, PCA_EV0 };
void pca_depth_means(const pca_study *s, int model, int which, double cell[QK_DEPTH_BINS],
                     int counts[QK_DEPTH_BINS]);

/* Value of r_q0 / r_k0 / ev0 of a head. */
double pca_head_value(const pca_head *h, int which);

/* Mean and sample standard deviation (divisor n - 1; 0 when n < 2) of one
 * of the PC0 values over the heads of a model where it is finite (n of
 * them; mean NAN when n = 0). */
void pca_model_mean_sd(const pca_study *s, int model, int which, double *mean, double *sd);

/* Heads of each category in a model (cat[PCA_N_CAT]). */
void pca_model_categories(const pca_study *s, int model, int cat[PCA_N_CAT]);

/* Mean over the rows of a qk.csv table with pc = i, for i = 0..9: the
 * grand means over heads of r_q, r_k and explained_variance (each head has
 * one row per component), each over the rows where it is finite (a head
 * without spread has none; NaN if no row has one). n[i] is the number of
 * rows with pc = i. */
void pca_component_means(const qk_src *qk, double r_q[PCA_N_PC], double r_k[PCA_N_PC],
                         double ev[PCA_N_PC], int n[PCA_N_PC]);

/* The display name of a family: the longest common prefix of its models'
 * labels, cut back to a word boundary ("Qwen3-0.6B", "Qwen3-4B" -> "Qwen3");
 * a family of one model is named by its label. Writes into out. */
void pca_family_name(const pca_study *s, const char *family, char *out, size_t cap);

/* Index of the family of model m among the study's families in display
 * order (0, 1, ...), and the number of families. */
int pca_family_index(const pca_study *s, int m);
int pca_n_families(const pca_study *s);

#endif
