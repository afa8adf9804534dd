/* Shared pieces of the plasticity study's figures
 * (figures/attention-plasticity/NN_name, spec plasticity.md 11). */
#ifndef QK_PLOT_PLASTICITY_FIG_H
#define QK_PLOT_PLASTICITY_FIG_H

#include "figure.h"

/* Colours (Okabe-Ito, readable with the common colour-vision deficiencies). */
#define PLAST_BLUE "#0072B2"
#define PLAST_VERMILLION "#D55E00"
#define PLAST_GREEN "#009E73"
#define PLAST_PURPLE "#CC79A7"
#define PLAST_GREY "#808080"
#define PLAST_REF "#999999" /* reference lines */

/* The magma colour map (perceptually uniform, dark to light) as a gnuplot
 * "set palette defined" list. */
extern const char *const plast_palette_magma;

/* The file an input table was read from. */
const char *plast_path(const fig_ctx *ctx, const qk_table *t);

/* Rows of table t whose "model" column is model, into a new array (count in
 * *n); dies (exit 2, naming the file) when there are none. */
int *plast_model_rows(const fig_ctx *ctx, const qk_table *t, const char *model, int *n);

/* A registry column (input "registry": the dataset registry) of a dataset;
 * fallback when the dataset or the column is not there. */
const char *plast_registry(const fig_ctx *ctx, const char *id, const char *column,
                           const char *fallback);

/* Text from the data as a gnuplot string shown literally under the
 * enhanced-text mode (no sub- or superscripts from '_' or '^'). */
void plast_text(qk_plot *p, const char *text);

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
