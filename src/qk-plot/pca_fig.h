/* Shared pieces of the PCA study's figures (figures/qk-pca/NN_name). */
#ifndef QK_PLOT_PCA_FIG_H
#define QK_PLOT_PCA_FIG_H

#include "figure.h"
#include "qk/pca_tables.h"

/* Colours: queries blue and keys vermillion, as in every figure. */
#define PCA_COLOR_Q FIG_BLUE
#define PCA_COLOR_K FIG_VERMILLION
#define PCA_COLOR_EV FIG_NEUTRAL /* no colour of a meaning: a family, queries, keys */
#define PCA_COLOR_REF "#b0b0b0" /* threshold and separator lines */
#define PCA_COLOR_ZERO FIG_GREY

extern const char *const pca_category_colors[PCA_N_CAT];

/* A study table NAME (per-head) joined with the registry input; returns its
 * number of heads. */
int pca_load_input(const fig_ctx *ctx, const char *name, pca_study *s);
/* The canvas of a figure whose table NAME holds no head. */
int pca_no_heads(fig_ctx *ctx, const char *name, qk_err *err);
/* 1 if some head of s has a finite r_q0 / r_k0 / ev0 (which). */
int pca_any_value(const pca_study *s, int which);
/* The canvas for the table name whose heads have no finite value of what
 * ("r_q0"): heads without spread have none. */
int pca_no_values(fig_ctx *ctx, const char *name, const char *what, qk_err *err);

/* The taxonomy thresholds of the run (input "thresholds": name, value rows
 * high and low). */
void pca_thresholds(const fig_ctx *ctx, double *high, double *low);

/* Dashed lines at every taxonomy threshold (x = low, high for r_q; y =
 * +-low, +-high for r_k) and a solid line at y = 0. */
void pca_threshold_lines(qk_plot *p, double low, double high);

/* A figure of width x height pixels (taller for many rows): the heatmap of
 * model rows x depth-bin columns of the PC0 means of r_q (which =
 * PCA_R_Q0, in Blues) or r_k (PCA_R_K0, in Reds) over the input "heads",
 * colours 0..1, the value printed in each cell (white above 0.6), empty
 * cells grey with a dash, the heads per row at the right; rows labelled by
 * the registry label. Records the cells as key numbers. */
/* With checkpoints set the rows are checkpoints of a training run: labelled
 * "S1 40k" (fig_checkpoint_label) and grouped by the context they were
 * captured with (fig_context_rows). */
int pca_depth_heatmap_figure(fig_ctx *ctx, int width, int height, int which, const char *title,
                             int checkpoints, qk_err *err);
/* Checkpoint x axis 0..n-1 (the labels of fig_checkpoint_tics) with dashed
 * separators between training phases and the phase names along the top,
 * and under the labels the context each run of checkpoints was captured
 * with (fig_context_groups). */
void pca_checkpoint_axis(const fig_ctx *ctx, qk_plot *p, const pca_study *s);
/* The context length (tokens) each model of s was captured with, from the
 * registry (NAN where it does not say); free() the array. */
double *pca_contexts(const fig_ctx *ctx, const pca_study *s);
/* What a subtitle says of checkpoint labels and context lengths. */
#define PCA_CHECKPOINT_UNITS "steps in k = 1000, context (italics) in K = 1024 tokens"

/* "n = 24 heads each" or "n = 22 to 24 heads each" into out. */
void pca_heads_phrase(const pca_study *s, char *out, size_t cap);

#endif
