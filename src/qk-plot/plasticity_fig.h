/* Shared pieces of the plasticity study's figures
 * (figures/attention-plasticity/NN_name). */
#ifndef QK_PLOT_PLASTICITY_FIG_H
#define QK_PLOT_PLASTICITY_FIG_H

#include "figure.h"

/* Colours (the Okabe-Ito ones are FIG_BLUE, FIG_VERMILLION, ... of figure.h). */
#define PLAST_REF "#999999" /* reference lines */

/* The magma colour map (perceptually uniform, dark to light) as a gnuplot
 * "set palette defined" list. */
extern const char *const plast_palette_magma;

/* The file an input table was read from. */
const char *plast_path(const fig_ctx *ctx, const qk_table *t);

/* Rows of table t whose "model" column is model, into a new array (count in
 * *n); dies (exit 2, naming the file) when there are none. */
int *plast_model_rows(const fig_ctx *ctx, const qk_table *t, const char *model, int *n);

/* Starts a figure with a base font of font_pt points. */
void plast_begin(qk_plot *p, int width, int height, int font_pt);

/* Position in tokens as a short tick label: 16384 -> "16K", 1048576 -> "1M",
 * other values as integers. */
void plast_tokens(double v, char *out, size_t cap);

/* The figures. */
int plast_draw_heatmap_ministral3_14b(fig_ctx *ctx, qk_err *err);
int plast_draw_heatmap_qwen3_14b(fig_ctx *ctx, qk_err *err);
int plast_draw_heatmap_llama3_2_3b(fig_ctx *ctx, qk_err *err);
int plast_draw_heatmap_llama3_2_11b(fig_ctx *ctx, qk_err *err);
int plast_draw_profile_ministral3_3b(fig_ctx *ctx, qk_err *err);
int plast_draw_profile_qwen3_4b(fig_ctx *ctx, qk_err *err);
int plast_draw_profile_llama3_2_3b(fig_ctx *ctx, qk_err *err);
int plast_draw_weights_qwen3_14b(fig_ctx *ctx, qk_err *err);
int plast_draw_smollm3_trajectory(fig_ctx *ctx, qk_err *err);
int plast_draw_drop_vs_lbp(fig_ctx *ctx, qk_err *err);

#endif
