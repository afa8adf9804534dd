/* Inputs, colours and plot pieces shared by the PCA figures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pca_fig.h"

#include "qk/die.h"

/* position-dominated, Q-positional, K-positional, content-focused, mixed */
/* greys from dark to light: the Okabe-Ito colours mean queries, keys and
 * families (docs/figure-style.md), and the categories are ordered from
 * position to content */
const char *const pca_category_colors[PCA_N_CAT] = {"#303030", "#7a7a7a", "#a6a6a6", "#cdcdcd",
                                                    "#ececec"};

int pca_load_input(const fig_ctx *ctx, const char *name, pca_study *s)
{
    qk_src heads = fig_src(ctx, name);
    qk_src registry = fig_src(ctx, "registry");
    pca_study_load(s, &heads, &registry);
    return s->n_heads;
}

int pca_no_heads(fig_ctx *ctx, const char *name, qk_err *err)
{
    return fig_not_drawn(ctx, err, "The table %s holds no head.", fig_path(ctx, fig_input(ctx, name)));
}

int pca_any_value(const pca_study *s, int which)
{
    for (int h = 0; h < s->n_heads; h++)
        if (isfinite(pca_head_value(&s->heads[h], which)))
            return 1;
    return 0;
}

int pca_no_values(fig_ctx *ctx, const char *name, const char *what, qk_err *err)
{
    return fig_not_drawn(ctx, err, "The table %s holds no head with a finite %s (a head "
                         "without spread has none).", fig_path(ctx, fig_input(ctx, name)), what);
}

void pca_thresholds(const fig_ctx *ctx, double *high, double *low)
{
    qk_src t = fig_src(ctx, "thresholds");
    int c_name = qk_src_col(&t, "name"), c_value = qk_src_col(&t, "value");
    int found = 0;
    for (int r = 0; r < t.t->n_rows; r++) {
        const char *name = qk_table_cell(t.t, r, c_name);
        if (strcmp(name, "high") == 0)
            *high = qk_src_finite(&t, r, c_value), found |= 1;
        else if (strcmp(name, "low") == 0)
            *low = qk_src_finite(&t, r, c_value), found |= 2;
    }
    if (found != 3)
        qk_die(QK_EXIT_DATA, t.path, "needs the rows 'high' and 'low'");
}

void pca_heads_phrase(const pca_study *s, char *out, size_t cap)
{
    double *heads = qk_malloc((size_t)(s->n_models > 0 ? s->n_models : 1) * sizeof *heads);
    for (int m = 0; m < s->n_models; m++)
        heads[m] = s->models[m].n_heads;
    fig_heads_phrase(heads, s->n_models, "each", out, cap);
    free(heads);
}

void pca_threshold_lines(qk_plot *p, double low, double high)
{
    const char *dash = "nohead back dt 2 lw 1.2 lc rgb '" PCA_COLOR_REF "'";
    qk_plot_printf(p, "set arrow from %g, graph 0 to %g, graph 1 %s\n", low, low, dash);
    qk_plot_printf(p, "set arrow from %g, graph 0 to %g, graph 1 %s\n", high, high, dash);
    for (int sign = -1; sign <= 1; sign += 2) {
        qk_plot_printf(p, "set arrow from graph 0, first %g to graph 1, first %g %s\n",
                       sign * high, sign * high, dash);
        qk_plot_printf(p, "set arrow from graph 0, first %g to graph 1, first %g %s\n",
                       sign * low, sign * low, dash);
    }
    qk_plot_printf(p, "set arrow from graph 0, first 0 to graph 1, first 0 nohead back lw 1 "
                      "lc rgb '%s'\n", PCA_COLOR_ZERO);
}

/* ---- heatmap ------------------------------------------------------------------ */

/* Writes $cells (and $empty, the cells without heads); returns the number
 * of empty cells, *negative the number of cells with a mean below 0. */
static int heatmap_data(fig_ctx *ctx, qk_plot *p, const pca_study *s, int which,
                        const char *quantity, int *negative)
{
    *negative = 0;
    qk_plot_data_begin(p, "cells");
    for (int m = 0; m < s->n_models; m++) {
        double cell[QK_DEPTH_BINS];
        int counts[QK_DEPTH_BINS];
        pca_depth_means(s, m, which, cell, counts);
        char row[16 * QK_DEPTH_BINS] = "";
        for (int b = 0; b < QK_DEPTH_BINS; b++) {
            char text[32];
            /* white text on the dark ends of the map, at either sign; on
             * hover the cell's model, depth bin, mean and heads */
            if (!isnan(cell[b])) {
                qk_plot_printf(p, "%d %d %.6f %d \"%s\"", b, m, cell[b],
                               fabs(cell[b]) > 0.6 ? 0xffffff : 0,
                               fig_fmt(text, sizeof text, "%.2f", cell[b]));
                fig_hover_text(p, "%s|depth %.1f to %.1f|mean %s %.4f|n = %d head%s",
                               s->models[m].label, b / 10.0, (b + 1) / 10.0, quantity, cell[b],
                               counts[b], counts[b] == 1 ? "" : "s");
            }
            *negative += cell[b] < 0.0;
            size_t used = strlen(row);
            if (isnan(cell[b]))
                snprintf(row + used, sizeof row - used, "%s-", b ? " " : "");
            else
                snprintf(row + used, sizeof row - used, "%s%.2f", b ? " " : "", cell[b]);
        }
        char key[160];
        snprintf(key, sizeof key, "mean %s by depth bin 0.0-0.9, %s", quantity,
                 s->models[m].label);
        fig_key(ctx, key, "%s", row);
    }
    qk_plot_data_end(p);
    int empty = 0;
    for (int m = 0; m < s->n_models; m++) {
        int counts[QK_DEPTH_BINS];
        double cell[QK_DEPTH_BINS];
        pca_depth_means(s, m, which, cell, counts);
        for (int b = 0; b < QK_DEPTH_BINS; b++) {
            if (counts[b])
                continue;
            if (empty++ == 0)
                qk_plot_data_begin(p, "empty");
            qk_plot_printf(p, "%d %d\n", b, m);
        }
    }
    if (empty)
        qk_plot_data_end(p);
    fig_key(ctx, "empty cells (no heads in that model and depth bin)", "%d", empty);
    return empty;
}

/* The label of row m: a checkpoint as "S1 40k", a model by its label. */
static void row_label(const pca_study *s, int m, int checkpoints, char *out, size_t cap)
{
    if (checkpoints)
        fig_checkpoint_label(s->models[m].label, " ", out, cap);
    else
        snprintf(out, cap, "%s", s->models[m].label);
}

static void heatmap_axes(qk_plot *p, const pca_study *s, int checkpoints)
{
    qk_plot_printf(p, "set ytics scale 0 (");
    for (int m = 0; m < s->n_models; m++) {
        char label[160];
        row_label(s, m, checkpoints, label, sizeof label);
        fig_tic_text(p, label);
        qk_plot_printf(p, " %d%s", m, m + 1 < s->n_models ? ", " : ")\n");
    }
    qk_plot_printf(p, "set y2tics scale 0 (");
    for (int m = 0; m < s->n_models; m++)
        qk_plot_printf(p, "\"n = %d\" %d%s", s->models[m].n_heads, m,
                       m + 1 < s->n_models ? ", " : ")\n");
    qk_plot_printf(p, "set xtics scale 0 (");
    for (int b = 0; b < QK_DEPTH_BINS; b++)
        qk_plot_printf(p, "\"%.1f\" %d%s", b / 10.0, b, b + 1 < QK_DEPTH_BINS ? ", " : ")\n");
    qk_plot_printf(p,
        "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\nset y2range [%d.5:-0.5]\n"
        "unset grid\nunset key\nset border lw 1 lc rgb '#444444'\n"
        "set style fill solid 1.0 noborder\n",
        QK_DEPTH_BINS - 1, s->n_models - 1, s->n_models - 1);
}

/* Characters a label's text takes, for the margins of the print layout
 * (the model labels are plain text). */
static double label_chars(const char *text)
{
    return (double)qk_utf8_chars(text);
}

/* The screen positions of the heatmap's frame and colour box, and the x
 * of the context labels of checkpoint rows (ctx_x). On screen fixed shares
 * of the canvas, the frame's left edge moved right for long row labels; in
 * print, where the canvas is smaller in font units, from the lengths of
 * the row labels on both sides and the font (font_pt; DejaVu Sans takes
 * about 0.65 em a character; the screen canvas draws a point as 4/3 pixel
 * and a browser the SVG's text at about 0.62 em, 0.83 point a character). */
typedef struct heatmap_frame {
    double left, right, bottom, cb_left, cb_width, ctx_x;
} heatmap_frame;

static heatmap_frame heatmap_layout(const qk_plot *p, const pca_study *s, int checkpoints,
                                    int font_pt)
{
    heatmap_frame f = {0.12, 0.83, 0.13, 0.91, 0.016, 0};
    double names = 0, counts = 0, w = p->width;
    for (int m = 0; m < s->n_models; m++) {
        char label[160], count[32];
        row_label(s, m, checkpoints, label, sizeof label);
        snprintf(count, sizeof count, "n = %d", s->models[m].n_heads);
        names = fmax(names, label_chars(label));
        counts = fmax(counts, label_chars(count));
    }
    /* the column of the turned context labels left of the row labels */
    double context_room = checkpoints ? (fig_print(p) ? 2.8 : 2.2) * font_pt : 0;
    double em = (fig_print(p) ? 0.65 : 0.83) * font_pt;
    if (!fig_print(p)) {
        f.left = fmax(f.left, (names * em + 2.0 * font_pt + context_room) / w);
    } else {
        f.left = (names * em + 2.0 * font_pt + context_room) / w;
        /* from the right edge: the colour box's label, its tick labels
         * ("0.0"), the box, a gap, the counts and their gap from the frame */
        f.cb_width = 1.0 * font_pt / w;
        f.cb_left = 1 - (3.5 * font_pt + 3 * em) / w - f.cb_width;
        f.right = f.cb_left - (counts * em + 2.0 * font_pt) / w;
        f.bottom = 5.0 * font_pt / p->height;
    }
    /* the context labels beside the row labels; in print, where the margin
     * is as narrow as the labels allow, at the canvas edge */
    f.ctx_x = fig_print(p) ? (0.3 * font_pt + context_room / 2) / w
                           : (f.left * w - names * em - 1.2 * font_pt - context_room / 2) / w;
    return f;
}

/* The colour scale: [0, 1] in Blues (r_q) or Reds (r_k) as the reference
 * figures have it while every cell is at least 0; once a cell is below 0
 * (discordant heads, r_k of -0.3 to -0.85 after long-context training)
 * [-1, 1] with the other map mirrored below 0, so that a negative mean is
 * not drawn in the colour of 0. Returns the cb tick step. */
static double heatmap_scale(fig_ctx *ctx, qk_plot *p, int q, int negative)
{
    const int *above = q ? fig_blues : fig_reds, *below = q ? fig_reds : fig_blues;
    fig_key(ctx, "cells with a mean below 0", "%d", negative);
    if (!negative) {
        fig_palette_stops(p, above);
        qk_plot_printf(p, "set cbrange [0:1]\n");
        fig_key(ctx, "colour scale", "0 to 1 (%s)", q ? "Blues" : "Reds");
        return 0.2;
    }
    fig_palette_diverging(p, below, above);
    qk_plot_printf(p, "set cbrange [-1:1]\n");
    fig_key(ctx, "colour scale", "-1 to 1 (%s below 0, %s above)", q ? "Reds" : "Blues",
            q ? "Blues" : "Reds");
    return 0.5;
}

/* The heatmap of r_q (which = PCA_R_Q0, in Blues) or r_k (Reds). */
static void depth_heatmap(fig_ctx *ctx, qk_plot *p, const pca_study *s, int which,
                          const char *title, int checkpoints)
{
    int q = which == PCA_R_Q0, negative;
    int empty = heatmap_data(ctx, p, s, which, q ? "r_q (PC0)" : "r_k (PC0)", &negative);
    heatmap_axes(p, s, checkpoints);
    char sub[256];
    snprintf(sub, sizeof sub, "mean over the heads in each cell; n = heads per row (right); "
             "grey: no head%s%s", !negative ? "" : q ? "; red: below 0" : "; blue: below 0",
             checkpoints ? "; " PCA_CHECKPOINT_UNITS : "");
    double top = fig_title(p, title, sub, 19);
    fig_axis_label(p, "cb", q ? "mean " QK_SYM_R_Q " (PC0)" : "mean " QK_SYM_R_K " (PC0)",
                   fig_print(p) ? "offset 0,0" : "offset 1.5,0");
    fig_axis_label(p, "x", "normalized layer depth: layer / (layers - 1), bins labelled by their "
                   "lower edge", NULL);
    double step = heatmap_scale(ctx, p, q, negative);
    heatmap_frame f = heatmap_layout(p, s, checkpoints, 16);
    if (checkpoints) {
        double *context = pca_contexts(ctx, s);
        fig_context_rows(p, context, s->n_models, f.ctx_x);
        free(context);
    }
    qk_plot_printf(p,
        "set cbtics %g\nset format cb \"%%.1f\"\n"
        "set lmargin at screen %.3f\nset rmargin at screen %.4g\n"
        "set bmargin at screen %.4g\nset tmargin at screen %.4f\n"
        "set colorbox vertical user origin screen %.4g, screen %.4g size screen %.4g, "
        "screen %.4f\n"
        "plot $cells using 1:2:(0.502):(0.502):3 with boxxyerror fs solid 1.0 noborder lc palette, \\\n"
        "     $cells using 1:2:5:4 with labels tc rgb variable font \",12\"",
        step, f.left, f.right, f.bottom, top - 0.015, f.cb_left, f.bottom, f.cb_width,
        top - 0.015 - f.bottom);
    if (empty)
        qk_plot_printf(p, ", \\\n"
            "     $empty using 1:2:(0.5):(0.5) with boxxyerror fs solid 1.0 noborder lc rgb '#e8e8e8', \\\n"
            "     $empty using 1:2:(\"–\") with labels tc rgb '#777777'");
    fig_hover_plot(p, "cells", 1, 2, 6, 3.0);
    qk_plot_printf(p, "\n");
}

int pca_depth_heatmap_figure(fig_ctx *ctx, int width, int height, int which, const char *title,
                             int checkpoints, qk_err *err)
{
    pca_study s;
    if (pca_load_input(ctx, "heads", &s) == 0) {
        pca_study_free(&s);
        return pca_no_heads(ctx, "heads", err);
    }
    if (!pca_any_value(&s, which)) {
        pca_study_free(&s);
        return pca_no_values(ctx, "heads", which == PCA_R_Q0 ? "r_q0" : "r_k0", err);
    }
    qk_plot p;
    fig_begin_hover(&p, width, 180 + 52 * s.n_models > height ? 180 + 52 * s.n_models : height, 16);
    depth_heatmap(ctx, &p, &s, which, title, checkpoints);
    pca_study_free(&s);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- checkpoint axis -------------------------------------------------------------- */

double *pca_contexts(const fig_ctx *ctx, const pca_study *s)
{
    double *context = qk_malloc((size_t)(s->n_models > 0 ? s->n_models : 1) * sizeof *context);
    qk_src reg = fig_src(ctx, "registry");
    int col = qk_table_column(reg.t, "context_length");
    for (int m = 0; m < s->n_models; m++) {
        /* the registry row the study found (the table's model column may
         * name a checkpoint without the registry id's prefix) */
        int row = s->models[m].registry_row;
        context[m] = row >= 0 && col >= 0 ? qk_src_finite(&reg, row, col) : NAN;
    }
    return context;
}

void pca_checkpoint_axis(const fig_ctx *ctx, qk_plot *p, const pca_study *s)
{
    const char **labels = qk_malloc((size_t)s->n_models * sizeof *labels);
    for (int m = 0; m < s->n_models; m++)
        labels[m] = s->models[m].label;
    fig_checkpoint_tics(p, labels, s->n_models);
    free(labels);
    /* under the two lines of labels, the context of each run of checkpoints */
    qk_plot_printf(p, "set xrange [-0.5:%d.5]\nset bmargin 6.5\n", s->n_models - 1);
    double *context = pca_contexts(ctx, s);
    fig_context_groups(p, context, s->n_models, 3.1, 0);
    free(context);
    int start = 0;
    for (int m = 1; m <= s->n_models; m++) {
        char prev[64], cur[64] = "", name[64];
        qk_phase_of(s->models[m - 1].id, prev, sizeof prev);
        if (m < s->n_models)
            qk_phase_of(s->models[m].id, cur, sizeof cur);
        if (m < s->n_models && strcmp(prev, cur) == 0)
            continue;
        if (m < s->n_models)
            qk_plot_printf(p, "set arrow from %d.5, graph 0 to %d.5, graph 1 nohead back "
                              "dt 2 lw 1.2 lc rgb '%s'\n", m - 1, m - 1, PCA_COLOR_REF);
        qk_phase_label(prev, name, sizeof name);
        qk_plot_printf(p, "set label ");
        fig_text(p, name);
        qk_plot_printf(p, " at %.1f, graph 1.035 center tc rgb '#555555' font \",13\"\n",
                       (start + m - 1) / 2.0);
        start = m;
    }
}
