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
 * *n, 0 when the table has none). */
int *plast_model_rows(const fig_ctx *ctx, const qk_table *t, const char *model, int *n);
/* The models of table t (labels, at most eight), for messages. */
void plast_models_of(const fig_ctx *ctx, const qk_table *t, char *out, size_t cap);
/* The canvas of a figure whose model (--model) table t does not hold. */
int plast_lacks_model(fig_ctx *ctx, const qk_table *t, qk_err *err);

/* The canvas of a figure whose model was analysed but whose every bin
 * (what, e.g. "query bin") fell below the plasticity stage's minimum
 * (param, the Make parameter that sets it). */
int plast_filtered_out(fig_ctx *ctx, const char *what, const char *param, qk_err *err);

/* Starts a figure with a base font of font_pt points. */
void plast_begin(qk_plot *p, int width, int height, int font_pt);
/* The same, with values on hover in the SVG (fig_begin_hover). */
void plast_begin_hover(qk_plot *p, int width, int height, int font_pt);

#endif
