/* Shared pieces of the PCA study's figures (figures/qk-pca/NN_name). */
#ifndef QK_PLOT_PCA_FIG_H
#define QK_PLOT_PCA_FIG_H

#include "figure.h"
#include "qk/pca_tables.h"

/* Colours. Query = blue and key = vermillion in every figure (Okabe-Ito,
 * readable with the common colour-vision deficiencies). */
#define PCA_COLOR_Q "#0072B2"
#define PCA_COLOR_K "#D55E00"
#define PCA_COLOR_EV "#CC79A7"
#define PCA_COLOR_REF "#b0b0b0" /* threshold and separator lines */
#define PCA_COLOR_ZERO "#808080"

extern const char *const pca_family_colors[]; /* by family index, cycling */
extern const int pca_n_family_colors;
extern const char *const pca_category_colors[PCA_N_CAT];
/* ColorBrewer sequential palettes as gnuplot "defined" lists. */
extern const char *const pca_palette_blues;
extern const char *const pca_palette_reds;

/* The input table NAME of the figure, with its file name. */
pca_src pca_input(const fig_ctx *ctx, const char *name);
/* A study table NAME (per-head) joined with the registry input. */
void pca_load_input(const fig_ctx *ctx, const char *name, pca_study *s);

/* The taxonomy thresholds of the run (input "thresholds": name, value rows
 * high and low). */
void pca_thresholds(const fig_ctx *ctx, double *high, double *low);

/* Text from the data as a gnuplot string shown literally under the
 * enhanced-text mode (no sub- or superscripts from '_' or '^'). */
void pca_text(qk_plot *p, const char *text);

/* Dashed lines at the taxonomy thresholds (x = low, high; y = +-high and,
 * if horizontal_low, y = +-low) and a solid line at y = 0. */
void pca_threshold_lines(qk_plot *p, double low, double high, int horizontal_low);

/* Starts a figure with a base font of font_pt points. */
void pca_begin(qk_plot *p, int width, int height, int font_pt);

/* A heatmap of model rows x depth-bin columns of PC0 means (which =
 * PCA_R_Q0 or PCA_R_K0), colours 0..1 in palette, value printed in each
 * cell (white above 0.6), empty cells grey with a dash, and the heads per
 * row at the right. Records the cells as key numbers. */
void pca_depth_heatmap(fig_ctx *ctx, qk_plot *p, const pca_study *s, int which,
                       const char *palette, const char *title, const char *cb_label,
                       int use_ids);

/* Checkpoint x axis 0..n-1 (labels rotated 45 degrees) with dashed
 * separators between training phases and the phase names along the top. */
void pca_checkpoint_axis(qk_plot *p, const pca_study *s);

/* "n = 300 heads" or "n = 290-300 heads per checkpoint" into out. */
void pca_heads_phrase(const pca_study *s, char *out, size_t cap);

/* The figures. */
int pca_draw_pc_roles(fig_ctx *ctx, qk_err *err);
int pca_draw_scatter(fig_ctx *ctx, qk_err *err);
int pca_draw_heatmap_rq(fig_ctx *ctx, qk_err *err);
int pca_draw_heatmap_rk(fig_ctx *ctx, qk_err *err);
int pca_draw_explained_variance(fig_ctx *ctx, qk_err *err);
int pca_draw_collage(fig_ctx *ctx, qk_err *err);
int pca_draw_training_signal(fig_ctx *ctx, qk_err *err);
int pca_draw_training_taxonomy(fig_ctx *ctx, qk_err *err);
int pca_draw_training_ev(fig_ctx *ctx, qk_err *err);
int pca_draw_training_heatmap_rq(fig_ctx *ctx, qk_err *err);
int pca_draw_training_heatmap_rk(fig_ctx *ctx, qk_err *err);
int pca_draw_training_scatter(fig_ctx *ctx, qk_err *err);

#endif
