/* Figures 01-04 of the plasticity study: the model's mean attention
 * plasticity by inter-key distance and key-to-query distance (input
 * "pair2d" = model_pair2d.csv, "registry" = the dataset registry). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plasticity_fig.h"

typedef struct heat_cell {
    int x, y; /* dist_bin, mid_bin */
    double ap;
} heat_cell;

typedef struct heatmap {
    heat_cell *cells; /* the cells with a finite value */
    int n_cells;
    int nx, ny;       /* bins per axis (largest index + 1 over all rows) */
    double width;     /* bin width in tokens */
    int n_heads;      /* most heads behind a cell */
    double lo, hi;    /* value range */
} heatmap;

/* Bin width from a row whose start and index are both known; every row
 * must agree (start = index * width). */
static double bin_width(const fig_ctx *ctx, const qk_table *t, const int *rows, int n)
{
    int c_d = fig_column(ctx, t, "dist_bin"), c_ds = fig_column(ctx, t, "dist_start");
    int c_m = fig_column(ctx, t, "mid_bin"), c_ms = fig_column(ctx, t, "mid_start");
    for (int i = 0; i < n; i++) {
        double d = fig_number_at(ctx, t, rows[i], c_d), m = fig_number_at(ctx, t, rows[i], c_m);
        if (d > 0)
            return fig_number_at(ctx, t, rows[i], c_ds) / d;
        if (m > 0)
            return fig_number_at(ctx, t, rows[i], c_ms) / m;
    }
    return 0; /* only the cell (0, 0): no tick needs a width */
}

static void load_heatmap(const fig_ctx *ctx, const char *model, heatmap *h)
{
    const qk_table *t = fig_input(ctx, "pair2d");
    int c_d = fig_column(ctx, t, "dist_bin"), c_m = fig_column(ctx, t, "mid_bin");
    int c_h = fig_column(ctx, t, "n_heads"), c_ap = fig_column(ctx, t, "ap");
    int n;
    int *rows = plast_model_rows(ctx, t, model, &n);
    memset(h, 0, sizeof *h);
    h->cells = qk_malloc((size_t)n * sizeof *h->cells);
    h->lo = INFINITY;
    h->hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        int r = rows[i];
        double d = fig_number_at(ctx, t, r, c_d), m = fig_number_at(ctx, t, r, c_m);
        double ap = fig_number_at(ctx, t, r, c_ap), heads = fig_number_at(ctx, t, r, c_h);
        if (!(d >= 0 && m >= 0 && d < 1e6 && m < 1e6 && d == floor(d) && m == floor(m)))
            qk_die(QK_EXIT_DATA, fig_path(ctx, t), "line %d: bad cell (%g, %g)", r + 2, d, m);
        if (d + 1 > h->nx)
            h->nx = (int)d + 1;
        if (m + 1 > h->ny)
            h->ny = (int)m + 1;
        if (heads > h->n_heads)
            h->n_heads = (int)heads;
        if (!isfinite(ap))
            continue;
        if (ap < 0 || ap > 1)
            qk_die(QK_EXIT_DATA, fig_path(ctx, t), "line %d: ap %g outside [0, 1]", r + 2, ap);
        h->cells[h->n_cells++] = (heat_cell){(int)d, (int)m, ap};
        h->lo = fmin(h->lo, ap);
        h->hi = fmax(h->hi, ap);
    }
    if (h->n_cells == 0)
        qk_die(QK_EXIT_DATA, fig_path(ctx, t), "model '%s' has no heatmap cell with a value",
               model);
    h->width = bin_width(ctx, t, rows, n);
    free(rows);
}

/* Tick labels at cell centres, each the start of its bin in tokens. */
static void bin_tics(qk_plot *p, const char *axis, int n, double width, const char *options)
{
    qk_plot_printf(p, "set %stics %s (", axis, options);
    for (int i = 0; i < n; i++)
        qk_plot_printf(p, "\"%.0f\" %d%s", i * width, i, i + 1 < n ? ", " : ")\n");
}

/* Mean of the cells with x == column (or, for column < 0, the largest x). */
static double column_mean(const heatmap *h, int column, int *count)
{
    double sum = 0;
    *count = 0;
    for (int i = 0; i < h->n_cells; i++)
        if (h->cells[i].x == column) {
            sum += h->cells[i].ap;
            (*count)++;
        }
    return *count ? sum / *count : NAN;
}

static void heatmap_keys(fig_ctx *ctx, const heatmap *h, const char *label)
{
    const heat_cell *lo = &h->cells[0], *hi = &h->cells[0];
    for (int i = 1; i < h->n_cells; i++) {
        if (h->cells[i].ap < lo->ap)
            lo = &h->cells[i];
        if (h->cells[i].ap > hi->ap)
            hi = &h->cells[i];
    }
    int far = 0, n0, nfar;
    for (int i = 0; i < h->n_cells; i++)
        if (h->cells[i].x > far)
            far = h->cells[i].x;
    double near_mean = column_mean(h, 0, &n0), far_mean = column_mean(h, far, &nfar);
    fig_key(ctx, "model", "%s", label);
    fig_key(ctx, "heads (most behind a cell)", "%d", h->n_heads);
    fig_key(ctx, "bin width (tokens)", "%.0f", h->width);
    fig_key(ctx, "cells with a value", "%d of %d x %d", h->n_cells, h->nx, h->ny);
    fig_key(ctx, "colour range (min, max of the cells)", "%.4f to %.4f", h->lo, h->hi);
    fig_key(ctx, "lowest cell (inter-key, key-to-query bin start)", "%.4f at (%.0f, %.0f)", lo->ap,
            lo->x * h->width, lo->y * h->width);
    fig_key(ctx, "highest cell (inter-key, key-to-query bin start)", "%.4f at (%.0f, %.0f)",
            hi->ap, hi->x * h->width, hi->y * h->width);
    if (n0)
        fig_key(ctx, "mean of the column inter-key distance < 1 bin", "%.4f (%d cells)", near_mean,
                n0);
    if (nfar && far > 0)
        fig_key(ctx, "mean of the farthest column (inter-key distance bin start)",
                "%.4f (%d cells, %.0f)", far_mean, nfar, far * h->width);
}

static int draw_heatmap(fig_ctx *ctx, const char *model, qk_err *err)
{
    heatmap h;
    load_heatmap(ctx, model, &h);
    const char *label = fig_registry(ctx, model, "label", model);
    /* A colour range of zero width would hide the colour bar's scale. */
    double lo = h.lo, hi = h.hi > h.lo ? h.hi : h.lo + 1e-3;
    qk_plot p;
    plast_begin(&p, 1600, 1200, 15);
    qk_plot_data_begin(&p, "cells");
    for (int i = 0; i < h.n_cells; i++)
        qk_plot_printf(&p, "%d %d %.6f\n", h.cells[i].x, h.cells[i].y, h.cells[i].ap);
    qk_plot_data_end(&p);
    qk_plot_printf(&p, "set title ");
    char title[256];
    snprintf(title, sizeof title, "%s attention plasticity", label);
    fig_text(&p, title);
    qk_plot_printf(&p,
        " font \",18\"\n"
        "set label 1 \"{/*0.8 mean over %d heads; bins of %.0f tokens (tick = bin start); "
        "white: no pairs}\" at graph 0.5, graph 1.025 center\n"
        "set xlabel \"Inter-key distance (tokens)\"\n"
        "set ylabel \"Key-to-query distance (tokens)\"\n"
        "set cblabel \"Attention plasticity\" offset 2,0\n"
        "set xrange [-0.5:%d.5]\nset yrange [-0.5:%d.5]\n"
        "set cbrange [%.6f:%.6f]\nset cbtics format \"%%.2f\"\n"
        "set palette defined %s\n"
        "set colorbox vertical default\n"
        "set rmargin 17\nset tmargin 4\nset bmargin 7\n"
        "unset grid\nunset key\nset border lw 1 lc rgb '#444444'\n"
        "set tics front\nset style fill solid 1.0 noborder\n",
        h.n_heads, h.width, h.nx - 1, h.ny - 1, lo, hi, plast_palette_magma);
    bin_tics(&p, "x", h.nx, h.width, "rotate by 45 right out scale 0.6");
    bin_tics(&p, "y", h.ny, h.width, "out scale 0.6");
    qk_plot_printf(&p,
        "plot $cells using 1:2:(0.502):(0.502):3 with boxxyerror fillcolor palette notitle\n");
    heatmap_keys(ctx, &h, label);
    free(h.cells);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

int plast_draw_heatmap_ministral3_14b(fig_ctx *ctx, qk_err *err)
{
    return draw_heatmap(ctx, "ministral3-14b", err);
}

int plast_draw_heatmap_qwen3_14b(fig_ctx *ctx, qk_err *err)
{
    return draw_heatmap(ctx, "qwen3-14b", err);
}

int plast_draw_heatmap_llama3_2_3b(fig_ctx *ctx, qk_err *err)
{
    return draw_heatmap(ctx, "llama3.2-3b", err);
}

int plast_draw_heatmap_llama3_2_11b(fig_ctx *ctx, qk_err *err)
{
    return draw_heatmap(ctx, "llama3.2-11b", err);
}
