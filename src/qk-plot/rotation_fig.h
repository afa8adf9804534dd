/* Shared pieces of the rotation study's figures (figures/qk-rotation/NN_name):
 * inputs, colours, text and axes. The tables are read and aggregated by the
 * library (qk/rotation_tables.h), as qk-summary does. */
#ifndef QK_PLOT_ROTATION_FIG_H
#define QK_PLOT_ROTATION_FIG_H

#include "figure.h"
#include "qk/rotation_tables.h"

/* Colours: queries blue and keys vermillion, as in the PCA figures. */
#define ROTFIG_Q FIG_BLUE
#define ROTFIG_K FIG_VERMILLION
/* The parts of the variance (03) in greys, dark to light: blue and
 * vermillion mean queries and keys, and no part is either. */
#define ROTFIG_AXIS_A "#3a3a3a"     /* drift axis a */
#define ROTFIG_AXIS_B "#8a8a8a"     /* separation axis b */
#define ROTFIG_COMPLEMENT "#d6d6d6" /* the d − 2 other dimensions */
#define ROTFIG_REF "#9a9a9a"         /* reference and separator lines */

/* Colour of family f of table t (fig_family_color) and of the k-th model
 * within a figure panel. */
const char *rotfig_family_color(const fig_ctx *ctx, const rot_table *t, int f);
const char *rotfig_model_color(int k);
/* Colour of the i-th training phase. */
const char *rotfig_phase_color(int i);

/* ColorBrewer's sequential YlOrRd as 9 RGB stops (Blues and Reds are
 * fig_blues and fig_reds). */
extern const int rotfig_ylorrd[9];

/* The table NAME grouped by model and joined with the input "registry";
 * returns its number of models (0 for a table without rows). */
int rotfig_load(const fig_ctx *ctx, const char *name, rot_table *t);
/* The canvas of a figure whose table NAME has no rows. */
int rotfig_empty(fig_ctx *ctx, const char *name, qk_err *err);

/* Starts a figure with a base font of font_pt points; defines qk_ps, the
 * point-size scale that makes the SVG look like the PNG. */
void rotfig_begin(qk_plot *p, int width, int height, int font_pt);

/* The models' labels as x tics at 0, 1, ..., with the given xtics options. */
void rotfig_label_tics(qk_plot *p, const rot_table *t, const char *options);
/* The width of the widest model label in em (fig_text_em). */
double rotfig_widest_label(const rot_table *t);
/* x axis of one bar group per model, labels rotated 45 degrees (the bottom
 * margin holds the widest), dotted separators between families and the
 * family names along the top. */
void rotfig_model_axis(qk_plot *p, const rot_table *t, const char *family_font);
/* The screen height the family names take above the plot (names of
 * font_pt points). */
double rotfig_family_room(const qk_plot *p, int font_pt);
/* x axis of one bar per checkpoint (two-line labels), dotted separators
 * between training phases; returns the phase index of each checkpoint in
 * phase[] and the number of phases; names[i] gets phase i's label. */
int rotfig_checkpoint_axis(qk_plot *p, const rot_table *t, int *phase, char names[][48],
                           int max_phases);

/* The phases' colours and names as one row of key entries centred at
 * screen height y, drawn as a plot of its own inside a multiplot (before
 * the axes of the panels are set: it leaves the x tics without labels). */
void rotfig_phase_legend(qk_plot *p, char names[][48], int n, double y);

/* A correlation as the figures print it: "+0.44", with its 95 % interval
 * when it rests on fewer than ROT_CORR_FEW_N points ("+0.81 (95 % CI
 * -0.63 to +1.00)", true minus signs), "n/a" without an r. */
void rotfig_corr_text(const rot_corr *c, char *out, size_t cap);

/* A numeric column of a per-model table (model_summary.csv) at model m. */
double rotfig_model_value(const rot_table *t, int m, const char *column);
/* fig_heads_phrase over the n_heads column of the models. */
void rotfig_heads_phrase(const rot_table *t, const char *per, char *out, size_t cap);

#endif
