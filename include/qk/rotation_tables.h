/* The tables of the planar rotation study as its figures (qk-plot) and the
 * report's numbers (qk-summary) read them: results/<study>/
 * rotated.csv (one row a head), model_summary.csv (one row a model or
 * checkpoint), complement_pairs.csv, joined with the dataset registry for
 * display names, families, layer counts and context lengths. Both programs
 * aggregate with this code, so the text and the figures quote the same
 * numbers. */
#ifndef QK_ROTATION_TABLES_H
#define QK_ROTATION_TABLES_H

#include <stddef.h>

#include "qk/common.h"
#include "qk/study.h"
#include "qk/table.h"

/* One model (or training checkpoint) of a table. */
typedef struct rot_model {
    char id[64];           /* as in the model column */
    char label[64];        /* registry label ("Qwen3-0.6B", "S1-40K"), else the id */
    char family[32];       /* the table's family column, else the registry's, else "other" */
    int registry_row;      /* -1 if the model is not in the registry */
    int n_layers;          /* registry n_layers, else the largest layer + 1, else 0 */
    double context_length; /* registry context_length, else NAN */
    int n_rows;            /* rows of the model in the table */
    int *rows;             /* their indices, in table order */
} rot_model;

/* A table with its rows grouped by model, models in display order: the
 * families in registry order (qk_family_rank); within a family the registry
 * order (training order for checkpoints); models missing from the registry
 * last.
 * A model id matches a registry id exactly or as its suffix after a '-'
 * ("stage1-step-40000" is "smollm3-3b-stage1-step-40000"). */
typedef struct rot_table {
    qk_src src;
    int n_models;
    rot_model *models;
    int n_families;
    int *family_of; /* [n_models] index of the model's family, in display order */
    qk_family_name *family_names; /* [n_families] (qk_family_names) */
} rot_table;

/* registry may be NULL. Dies (status 2) if the table has no model column. */
void rot_table_load(rot_table *t, const qk_src *src, const qk_src *registry);
void rot_table_free(rot_table *t);

/* The display name of family f: the longest common prefix of its models'
 * labels cut back to a word boundary ("Qwen3-0.6B", "Qwen3-4B" -> "Qwen3");
 * a family of one model is named by its label. */
void rot_family_name(const rot_table *t, int f, char *out, size_t cap);

/* A list of row indices: a model's rows, a family's, or all rows. */
typedef struct rot_rows {
    int n;
    int *index;
} rot_rows;

rot_rows rot_rows_model(const rot_table *t, int m);
rot_rows rot_rows_family(const rot_table *t, int f);
rot_rows rot_rows_all(const rot_table *t);
void rot_rows_free(rot_rows *r);

/* Statistics of x over the rows, NaN skipped (NAN when nothing is left);
 * absolute: of |x|. The mean, quantile and Pearson r are those of
 * qk/stats.h over the rows' values. */
double rot_mean(const double *x, const rot_rows *r, int absolute);
/* Quantile q with linear interpolation between order statistics (numpy's
 * default), as model_summary.csv's quartiles and medians. */
double rot_quantile(const double *x, const rot_rows *r, double q, int absolute);
double rot_max(const double *x, const rot_rows *r, int absolute);
double rot_min(const double *x, const rot_rows *r, int absolute);
/* Rows with x > 0 and rows with a defined x. */
int rot_count_positive(const double *x, const rot_rows *r);
int rot_count_defined(const double *x, const rot_rows *r);
/* Rows with x > y (both defined). */
int rot_count_greater(const double *x, const double *y, const rot_rows *r);
/* Pearson r of x and y over the rows where both are finite (NAN if fewer
 * than two or a variance is 0), as model_summary.csv's bias_sep_r. */
double rot_pearson(const double *x, const double *y, const rot_rows *r);

/* A correlation with what it rests on: Pearson r over the rows where x and y
 * are both finite (NAN with fewer than ROT_CORR_MIN_N such rows), their
 * number n, and r's 95 % interval from Fisher's z, tanh(atanh r -/+ 1.96 /
 * sqrt(n - 3)) (NAN with fewer than 4 rows). Figures print the interval and
 * n beside every r drawn from fewer than ROT_CORR_FEW_N points. */
#define ROT_CORR_MIN_N 3
#define ROT_CORR_FEW_N 30
typedef struct rot_corr {
    double r, lo, hi;
    int n;
} rot_corr;
rot_corr rot_correlation(const double *x, const double *y, const rot_rows *r);

/* Whether a group's r (a family's) reverses the pooled r: the two have
 * opposite signs, each with a 95 % interval that excludes 0, so that
 * neither sign is noise (an r from fewer than four points has no
 * interval, and reverses nothing). */
int rot_reverses(const rot_corr *pooled, const rot_corr *group);
/* Simpson's reversal, the one rule of the figure qk-rotation/07 and the
 * report's section 3.4: at least two groups (families) have an r (not
 * NAN), and every one of them reverses the pooled r (rot_reverses).
 * Returns 1 when the data show the reversal. */
int rot_simpson_reversal(const rot_corr *pooled, const rot_corr *groups, int n_groups);

/* ---- the model summary (docs/rotation.md, model_summary.csv) --------------- */

/* Reads a per-head table (rotated.csv: model, family, then the rotation and
 * complement columns) and writes one row per model, in order of first
 * appearance, to fp as CSV. Returns -1 with a message on a missing column
 * or an unreadable file; a numeric cell that is no number ("nan", which
 * the stages write for an undefined value, is one) exits 2 naming the file
 * (qk_src_num). */
int qk_rot_model_summary(const char *table_path, FILE *fp, qk_err *err);

#endif
