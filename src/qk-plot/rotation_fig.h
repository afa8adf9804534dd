/* Shared pieces of the rotation study's figures (figures/qk-rotation/NN_name):
 * inputs, colours, text and axes. The tables are read and aggregated by the
 * library (qk/rotation_tables.h), as qk-rotation-summary does. */
#ifndef QK_PLOT_ROTATION_FIG_H
#define QK_PLOT_ROTATION_FIG_H

#include "figure.h"
#include "qk/rotation_tables.h"

/* Colours (Okabe-Ito, readable with the common colour-vision
 * deficiencies): queries blue and keys vermillion, as in the PCA figures. */
#define ROTFIG_Q "#0072B2"
#define ROTFIG_K "#D55E00"
#define ROTFIG_AXIS_A "#D55E00"     /* drift axis a */
#define ROTFIG_AXIS_B "#0072B2"     /* separation axis b */
#define ROTFIG_COMPLEMENT "#BBBBBB" /* the d - 2 other dimensions */
#define ROTFIG_REF "#9a9a9a"        /* reference and separator lines */

/* Colour of family f and of the k-th model within a figure panel. */
const char *rotfig_family_color(int f);
const char *rotfig_model_color(int k);
/* Colour of the i-th training phase. */
const char *rotfig_phase_color(int i);

/* ColorBrewer sequential maps as 9 RGB stops. */
extern const int rotfig_blues[9], rotfig_reds[9], rotfig_ylorrd[9];
/* The colour of a map at x in [0, 1]; lo_cut > 0 uses only the part above
 * it (so that the lightest colours stay visible on white). */
int rotfig_map_color(const int stops[9], double x, double lo_cut);
/* "set palette defined (...)" of that map (17 samples). */
void rotfig_palette(qk_plot *p, const int stops[9], double lo_cut);

/* The input table NAME of the figure, with its file name. */
rot_src rotfig_input(const fig_ctx *ctx, const char *name);
/* The table NAME grouped by model and joined with the input "registry";
 * dies (status 2, naming the file) if the table has no rows. */
void rotfig_load(const fig_ctx *ctx, const char *name, rot_table *t);
/* Registry label of a dataset id (the id itself if the registry lacks it). */
void rotfig_dataset_label(const fig_ctx *ctx, const char *id, char *out, size_t cap);

/* Starts a figure with a base font of font_pt points; defines qk_ps, the
 * point-size scale that makes the SVG look like the PNG. */
void rotfig_begin(qk_plot *p, int width, int height, int font_pt);
/* Text from the data as a gnuplot string shown literally in enhanced mode. */
void rotfig_text(qk_plot *p, const char *text);

/* x axis of one bar group per model, labels rotated 45 degrees, dotted
 * separators between families and the family names along the top. */
void rotfig_model_axis(qk_plot *p, const rot_table *t, const char *family_font);
/* x axis of one bar per checkpoint (two-line labels), dotted separators
 * between training phases; returns the phase index of each checkpoint in
 * phase[] and the number of phases; names[i] gets phase i's label. */
int rotfig_checkpoint_axis(qk_plot *p, const rot_table *t, int *phase, char names[][48],
                           int max_phases);

/* The phases' colours and names as one row of key entries centred at
 * screen height y, drawn as a plot of its own inside a multiplot (before
 * the axes of the panels are set: it leaves the x tics without labels). */
void rotfig_phase_legend(qk_plot *p, char names[][48], int n, double y);

/* A numeric column of a per-model table (model_summary.csv) at model m. */
double rotfig_model_value(const rot_table *t, int m, const char *column);

/* The figures. */
int rotfig_draw_ab_collage(fig_ctx *ctx, qk_err *err);
int rotfig_draw_drift_bars(fig_ctx *ctx, qk_err *err);
int rotfig_draw_variance(fig_ctx *ctx, qk_err *err);
int rotfig_draw_bias_hist(fig_ctx *ctx, qk_err *err);
int rotfig_draw_slope_ratio(fig_ctx *ctx, qk_err *err);
int rotfig_draw_heatmaps(fig_ctx *ctx, qk_err *err);
int rotfig_draw_bias_vs_sep(fig_ctx *ctx, qk_err *err);
int rotfig_draw_complement(fig_ctx *ctx, qk_err *err);
int rotfig_draw_trajectory(fig_ctx *ctx, qk_err *err);
int rotfig_draw_decomposition(fig_ctx *ctx, qk_err *err);

#endif
