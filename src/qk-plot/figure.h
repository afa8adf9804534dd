/* The figure framework of qk-plot: each figure is a function that reads its
 * input tables, builds a gnuplot script and records its key numbers. */
#ifndef QK_PLOT_FIGURE_H
#define QK_PLOT_FIGURE_H

#include <stdio.h>

#include "qk/common.h"
#include "qk/plot.h"
#include "qk/table.h"

typedef struct fig_ctx {
    const char *id;      /* "qk-pca/05" */
    const char *out_dir; /* figures/qk-pca/05_explained_variance */
    const char *style;   /* house style script, or NULL */
    int n_inputs;
    char **input_names;
    char **input_paths;
    qk_table *inputs;
    FILE *numbers; /* the key numbers: name<TAB>value rows (numbers.tsv) */
    char user[96]; /* "figure qk-pca/05", who needs the inputs (for messages) */
} fig_ctx;

typedef int (*fig_fn)(fig_ctx *ctx, qk_err *err);

typedef struct fig_def {
    const char *id;          /* study/NN */
    const char *title;       /* one line */
    const char *description; /* what the figure shows and how to read it */
    fig_fn draw;
} fig_def;

/* The figure tables of each study, each ended by an entry with id NULL. */
extern const fig_def inventory_figures[];
extern const fig_def pca_figures[];
extern const fig_def rotation_figures[];
extern const fig_def plasticity_figures[];

/* Input table by name; dies with a message naming the figure if absent. */
const qk_table *fig_input(const fig_ctx *ctx, const char *name);
/* The file an input table was read from. */
const char *fig_path(const fig_ctx *ctx, const qk_table *t);
/* Input table by name with its file, for the qk_src readers (qk/table.h). */
qk_src fig_src(const fig_ctx *ctx, const char *name);
/* Column index by name; dies naming the table's file if absent. */
int fig_column(const fig_ctx *ctx, const qk_table *t, const char *name);
/* Numeric cell; dies on a value that is not a number. */
double fig_number_at(const fig_ctx *ctx, const qk_table *t, int row, int col);
/* Records one key number (or text) for the figure's README. */
void fig_key(fig_ctx *ctx, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 0 for a query row (kind "q"), 1 for a key row ("k") of a points table;
 * dies naming the file on another kind. */
int fig_kind_index(const qk_src *t, int row, int col);
/* A registry column (input "registry": the dataset registry) of a dataset
 * id; fallback when the dataset or the column is not there. */
const char *fig_registry(const fig_ctx *ctx, const char *id, const char *column,
                         const char *fallback);

/* ---- drawing pieces every study uses (figure_draw.c) ---------------------------- */

/* The Okabe-Ito colours (readable with the common colour-vision
 * deficiencies); queries are blue and keys vermillion in every figure. */
#define FIG_BLUE "#0072B2"
#define FIG_VERMILLION "#D55E00"
#define FIG_GREEN "#009E73" /* bluish green */
#define FIG_ORANGE "#E69F00"
#define FIG_PURPLE "#CC79A7" /* reddish purple */
#define FIG_SKY_BLUE "#56B4E9"
#define FIG_BLACK "#000000"
#define FIG_YELLOW "#F0E442"
#define FIG_GREY "#808080"
/* The eight in the order families (and models in a panel) take them. */
extern const char *const fig_okabe_ito[8];

/* ColorBrewer's sequential Blues and Reds as RGB stops at 0, 1/8, ..., 1. */
extern const int fig_blues[9], fig_reds[9];
/* The colour of a map at x in [0, 1] (NaN: 0), linear between the stops;
 * lo_cut > 0 uses only the part above it (so that the lightest colours
 * stay visible on white). */
int fig_map_color(const int stops[9], double x, double lo_cut);
/* "set palette defined (...)" of that map, 17 samples. */
void fig_palette(qk_plot *p, const int stops[9], double lo_cut);
/* "set palette defined (...)" of the nine stops themselves. */
void fig_palette_stops(qk_plot *p, const int stops[9]);

/* Starts a figure (qk_plot_begin) with a base font of font_pt points and
 * defines qk_ps, the point-size scale that makes the SVG look like the PNG. */
void fig_begin(qk_plot *p, int width, int height, int font_pt);

/* Text from the data as a gnuplot string shown literally under the
 * enhanced-text mode (no sub- or superscripts from '_' or '^'): the
 * double-quoted string, or its first n characters without the quotes. */
void fig_text(qk_plot *p, const char *text);
void fig_text_chars(qk_plot *p, const char *text, size_t n);

#endif
