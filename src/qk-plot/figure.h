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
/* Column index by name; dies naming the table's file if absent. */
int fig_column(const fig_ctx *ctx, const qk_table *t, const char *name);
/* Numeric cell; dies on a value that is not a number. */
double fig_number_at(const fig_ctx *ctx, const qk_table *t, int row, int col);
/* Records one key number (or text) for the figure's README. */
void fig_key(fig_ctx *ctx, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
