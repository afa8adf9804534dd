/* The tables of the attention plasticity study as the report's numbers
 * (qk-summary) and the figures read them: results/<study>/model_report.csv
 * (one row a model), model_pair2d.csv, head_component_weights.csv,
 * head_bucket_plasticity.csv and the joint SmolLM3 table
 * joint_rotation_plasticity.csv, joined with the dataset registry (labels,
 * families, display order) and the published benchmark scores
 * (workflow/benchmarks.tsv). The aggregation lives here so that every
 * program quoting a plasticity number computes it the same way. */
#ifndef QK_PLASTICITY_TABLES_H
#define QK_PLASTICITY_TABLES_H

#include <stddef.h>

#include "qk/stats.h"
#include "qk/study.h"
#include "qk/table.h"

#define PLAST_N_LEN 5       /* len_1_16 ... len_1_1 */
#define PLAST_N_DECILES 10  /* d0 ... d9 */
#define PLAST_N_QUINTILES 5 /* p0_20 ... p80_100 */

extern const char *const plast_len_columns[PLAST_N_LEN];
extern const char *const plast_quintile_columns[PLAST_N_QUINTILES];

/* One model of model_report.csv. */
typedef struct plast_model {
    char id[64];     /* as in the model column */
    char label[64];  /* registry label, else the id */
    char family[32]; /* registry family, else "other" */
    int registry_row;
    int n_heads;
    double ap, first, last, drop; /* ap_overall, ap_first_20pct, ap_last_20pct, ap_drop */
    double context;    /* context_length */
    double bin_factor; /* bins per capture bucket: bucket_size / bin_width */
    double len[PLAST_N_LEN], decile[PLAST_N_DECILES], quintile[PLAST_N_QUINTILES];
    double lbp;        /* published LongBench-Pro overall score, else NAN */
} plast_model;

/* The models in display order (the families of the thesis figures first,
 * then registry order; qk/study.h), their families in order of first
 * appearance. */
typedef struct plast_table {
    qk_src src;
    int n_models;
    plast_model *models;
    int n_families;
    int *family_of; /* [n_models] */
    qk_family_name *family_names; /* [n_families] (qk_family_names) */
} plast_table;

/* registry and benchmarks may be NULL. Dies (status 2) naming the file on
 * a missing column or a value that is not a number. */
void plast_table_load(plast_table *t, const qk_src *report, const qk_src *registry,
                      const qk_src *benchmarks);
void plast_table_free(plast_table *t);
/* Index of a model id, or -1. */
int plast_find_model(const plast_table *t, const char *id);
/* The display name of family f (qk_family_label over its models' labels). */
void plast_family_name(const plast_table *t, int f, char *out, size_t cap);

/* A published score (workflow/benchmarks.tsv: model, benchmark, length,
 * score), or NAN. */
double plast_published_score(const qk_src *benchmarks, const char *model, const char *benchmark,
                             const char *length);

/* The published per-length scores of a model on a benchmark (rows whose
 * length is a number of tokens), ascending by length; returns their count
 * (at most cap). */
int plast_published_lengths(const qk_src *benchmarks, const char *model, const char *benchmark,
                            double *length, double *score, int cap);

/* The model's AP at a benchmark length (spec/plasticity.md 12.5: the
 * doubling range that ends at the length): the unweighted mean of the
 * model profile's bins (model_bucket_plasticity.csv) whose centre lies in
 * [length/2, length), or in [0, length) up to PLAST_FIRST_RANGE tokens (the
 * first doubling range of a 128K capture, [0, L/16)). NAN when no bin of
 * the profile lies there (a length beyond the captured context); *n_bins
 * counts the bins. */
#define PLAST_FIRST_RANGE 8192.0
double plast_ap_at_length(const qk_src *profile, const char *model, double length, int *n_bins);

/* The scalars of a family: means over its models (each over those where it
 * is finite; NAN if none is) and the AP_drop range. */
typedef struct plast_family {
    int n_models, n_heads;
    double ap, first, last, drop, drop_min, drop_max;
} plast_family;
void plast_family_stats(const plast_table *t, int f, plast_family *out);

/* A model scalar by name: PLAST_AP (ap_overall), PLAST_FIRST, PLAST_LAST,
 * PLAST_DROP. */
enum { PLAST_AP, PLAST_FIRST, PLAST_LAST, PLAST_DROP };
double plast_model_value(const plast_model *m, int which);
/* The least-squares fit of the published LongBench-Pro score on a model
 * scalar, over the models that have both (figure attention-plasticity/10
 * draws the same fit). */
qk_line plast_lbp_fit(const plast_table *t, int which);

/* The heatmap of a model (model_pair2d.csv): the mean AP of the cells
 * whose keys are less than one bucket apart (dist_bin 0), of the farthest
 * column, and the range of the cells; all NAN without cells. */
typedef struct plast_cells {
    int n;
    double near, far, min, max;
} plast_cells;
void plast_heatmap_cells(const qk_src *pair2d, const char *model, plast_cells *c);

/* The mean component weight of each head dimension of a model
 * (head_component_weights.csv, mean over its heads): weight[dim]. */
typedef struct plast_weights {
    int dim;
    double *weight;
} plast_weights;
void plast_weights_load(const qk_src *weights, const char *model, plast_weights *w);
void plast_weights_free(plast_weights *w);

/* How far the heads' profiles spread (head_bucket_plasticity.csv): per
 * query bin the standard deviation of the heads' AP (bins with at least two
 * heads), averaged over the first fifth of the model's bin range (first)
 * and over the rest (rest). NAN where there are no such bins. */
typedef struct plast_spread {
    int heads;
    double first, rest;
} plast_spread;
void plast_profile_spread(const qk_src *profile, const char *model, plast_spread *s);

/* One checkpoint of the joint SmolLM3 table, in table (training) order. */
typedef struct plast_checkpoint {
    char id[64], label[64];
    int n_heads;
    double context, bias, alpha_k, r_k, sep, plane, ap, first, last, drop;
} plast_checkpoint;
/* Returns the number of checkpoints (*out malloc'd). */
int plast_joint_load(const qk_src *joint, plast_checkpoint **out);

/* The comparison of the long-context checkpoints with the end of
 * pre-training: the pre-training checkpoints are those at the smallest
 * context length, the last of them is the base, the others are the
 * long-context checkpoints (their means in lc_*). ok when both exist. */
typedef struct plast_smollm3 {
    int ok, base, peak, first_lc, last_lc, n_lc;
    double lc_bias, lc_first, lc_last, lc_drop;
} plast_smollm3;
void plast_smollm3_compare(const plast_checkpoint *cp, int n, plast_smollm3 *s);

#endif
