/* Figures 01-04 of the plasticity study: the mean attention plasticity of
 * one model (--model) by inter-key distance and key-to-query distance
 * (input "pair2d" = model_pair2d.csv, "registry" = the dataset registry). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plasticity_fig.h"

#include "qk/die.h"

typedef struct heat_cell {
    int x, y;  /* dist_bin, mid_bin */
    double ap;
    int heads; /* heads behind the cell */
} heat_cell;

typedef struct heatmap {
    heat_cell *cells; /* the cells with a finite value */
    int n_cells;
    int nx, ny;       /* bins per axis (largest index + 1 over all rows) */
    double width;     /* bin width in tokens */
    int n_heads;      /* most heads behind a cell */
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

/* The model's cells; 0 cells when the table holds no value for it. */
static void load_heatmap(const fig_ctx *ctx, const int *rows, int n, heatmap *h)
{
    const qk_table *t = fig_input(ctx, "pair2d");
    int c_d = fig_column(ctx, t, "dist_bin"), c_m = fig_column(ctx, t, "mid_bin");
    int c_h = fig_column(ctx, t, "n_heads"), c_ap = fig_column(ctx, t, "ap");
    memset(h, 0, sizeof *h);
    h->cells = qk_malloc((size_t)(n > 0 ? n : 1) * sizeof *h->cells);
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
        h->cells[h->n_cells++] = (heat_cell){(int)d, (int)m, ap, (int)heads};
    }
    h->width = bin_width(ctx, t, rows, n);
}

/* Tick labels at cell centres, each the start of its bin in tokens
 * (K = 1024); with many bins every second one is labelled. */
static void bin_tics(qk_plot *p, const char *axis, int n, double width, const char *options)
{
    int step = n > 20 ? 2 : 1;
    qk_plot_printf(p, "set %stics %s (", axis, options);
    for (int i = 0; i < n; i++) {
        char lab[32];
        fig_tokens(i * width, lab, sizeof lab);
        qk_plot_printf(p, "\"%s\" %d%s", i % step ? "" : lab, i, i + 1 < n ? ", " : ")\n");
    }
}

/* Mean of the cells with x == column. */
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

static void heatmap_keys(fig_ctx *ctx, const heatmap *h, const fig_range *r, int thin,
                         int min_heads)
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
    fig_key(ctx, "model", "%s (%s)", ctx->model_label, ctx->model);
    fig_key(ctx, "heads (most behind a cell)", "%d", h->n_heads);
    fig_key(ctx, "bin width (tokens)", "%.0f", h->width);
    fig_key(ctx, "cells with a value", "%d of %d x %d", h->n_cells, h->nx, h->ny);
    fig_key(ctx, "cells from fewer than the minimum heads (faded)", "%d (minimum %d heads)", thin,
            min_heads);
    fig_key(ctx, "colour range (robust)", "%.4f to %.4f", r->lo, r->hi);
    fig_key(ctx, "cells below, above the colour range", "%d, %d", r->below, r->above);
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

/* Data blocks: $cells (x, y, value clipped to the colour range), $thin
 * (cells from fewer heads than min_heads) and $off (cells beyond the range:
 * x, y, marker, its colour). Returns the number of thin cells. */
static int heatmap_blocks(qk_plot *p, const heatmap *h, const fig_range *r, int min_heads)
{
    int thin = 0;
    qk_plot_data_begin(p, "cells");
    for (int i = 0; i < h->n_cells; i++) {
        int side;
        const heat_cell *c = &h->cells[i];
        double v = fig_clip(r, c->ap, &side);
        qk_plot_printf(p, "%d %d %.6f", c->x, c->y, v);
        /* on hover: the cell's bins (in tokens), its value and its heads */
        fig_hover_text(p, "inter-key distance %.0f to %.0f|key-to-query distance %.0f to %.0f|"
                          "AP %.4f|n = %d head%s", c->x * h->width, (c->x + 1) * h->width,
                       c->y * h->width, (c->y + 1) * h->width, c->ap, c->heads,
                       c->heads == 1 ? "" : "s");
    }
    qk_plot_data_end(p);
    qk_plot_data_begin(p, "thin");
    for (int i = 0; i < h->n_cells; i++)
        if (h->cells[i].heads < min_heads) {
            qk_plot_printf(p, "%d %d\n", h->cells[i].x, h->cells[i].y);
            thin++;
        }
    qk_plot_printf(p, "NaN NaN\n");
    qk_plot_data_end(p);
    /* the ends of magma: black below, pale yellow above */
    qk_plot_data_begin(p, "off");
    for (int i = 0; i < h->n_cells; i++) {
        int side;
        fig_clip(r, h->cells[i].ap, &side);
        if (side)
            qk_plot_printf(p, "%d %d \"%s\" %d\n", h->cells[i].x, h->cells[i].y,
                           side > 0 ? "▲" : "▼", side > 0 ? 0x000000 : 0xffffff);
    }
    qk_plot_printf(p, "NaN NaN \"\" 0\n");
    qk_plot_data_end(p);
    return thin;
}

/* The narrowest colour range, in AP: gnuplot's ticks on it are distinct
 * with two decimals (a step of 0.01 or more). */
#define MIN_COLOUR_SPAN 0.05

/* A colour range narrower than MIN_COLOUR_SPAN (every cell the same, or
 * nearly) widened to it about its middle but kept inside AP's range [0, 1]:
 * the cells keep their place on the bar (all 1: at its top) and its ticks
 * read apart. */
static void widen_colour_range(fig_range *r)
{
    if (!(r->hi - r->lo < MIN_COLOUR_SPAN))
        return;
    double lo = 0.5 * (r->lo + r->hi) - 0.5 * MIN_COLOUR_SPAN;
    r->lo = fmin(fmax(lo, 0.0), 1.0 - MIN_COLOUR_SPAN);
    r->hi = r->lo + MIN_COLOUR_SPAN;
}

/* Whether the model has a row in the model report (input "report"). */
static int analysed(const fig_ctx *ctx, const char *model)
{
    if (!fig_has_input(ctx, "report"))
        return 0;
    int n;
    free(plast_model_rows(ctx, fig_input(ctx, "report"), model, &n));
    return n > 0;
}

int plast_draw_heatmap(fig_ctx *ctx, qk_err *err)
{
    const char *model = fig_model(ctx);
    const qk_table *t = fig_input(ctx, "pair2d");
    int n;
    int *rows = plast_model_rows(ctx, t, model, &n);
    heatmap h;
    load_heatmap(ctx, rows, n, &h);
    free(rows);
    if (h.n_cells == 0) {
        free(h.cells);
        /* the plasticity stage writes no cell below its count filter: a
         * model of the run's model report has been analysed */
        if (analysed(ctx, model))
            return plast_filtered_out(ctx, "heatmap cell (key distance, query distance)",
                                      "PLAST_PAIR2D_MIN evaluations", err);
        return n ? fig_not_drawn(ctx, err, "The table %s holds no cell with a value for %s.",
                                 fig_path(ctx, t), ctx->model_label)
                 : plast_lacks_model(ctx, t, err);
    }
    /* the colour range from the cells with enough heads (all cells if none
     * has): a faded cell from a few heads does not set it */
    int min_heads = (int)ceil(ctx->min_share * h.n_heads), n_full = 0;
    double *v = qk_malloc((size_t)h.n_cells * sizeof *v);
    for (int i = 0; i < h.n_cells; i++)
        if (h.cells[i].heads >= min_heads)
            v[n_full++] = h.cells[i].ap;
    if (n_full == 0)
        for (int i = 0; i < h.n_cells; i++)
            v[n_full++] = h.cells[i].ap;
    fig_range r = fig_robust_range(v, n_full);
    widen_colour_range(&r);
    for (int i = 0; i < h.n_cells; i++)
        v[i] = h.cells[i].ap;
    fig_range_recount(&r, v, h.n_cells);
    qk_plot p;
    plast_begin_hover(&p, 1600, 1200, 15);
    int thin = heatmap_blocks(&p, &h, &r, min_heads);
    char title[192], sub[320], width[32], lo[32], hi[32];
    fig_tokens(h.width, width, sizeof width);
    char lit[128];
    snprintf(title, sizeof title, "Attention plasticity by key distance: %s",
             fig_literal(lit, sizeof lit, ctx->model_label));
    int at = snprintf(sub, sizeof sub, "mean over n = %d heads; bins of %s tokens (tick = bin "
                      "start); white: no pairs", h.n_heads, width);
    if (thin)
        snprintf(sub + at, sizeof sub - (size_t)at, "; faded: fewer than %d heads", min_heads);
    double top = fig_title(&p, title, sub, 18);
    fig_fmt(lo, sizeof lo, "%.2f", r.lo);
    fig_fmt(hi, sizeof hi, "%.2f", r.hi);
    qk_plot_printf(&p,
        "set xlabel \"Inter-key distance (tokens, K = 1024)\"\n"
        "set ylabel \"Key-to-query distance (tokens, K = 1024)\"\n"
        "set cblabel \"Attention plasticity%s\" offset 1,0\n"
        "set xrange [-0.5:%d.5]\nset yrange [-0.5:%d.5]\n"
        "set cbrange [%.6f:%.6f]\nset cbtics format \"%%.2f\"\n"
        "set palette defined %s\n"
        "set colorbox vertical user origin screen 0.87, screen 0.14 size screen 0.025, "
        "screen %.4f\n"
        "set lmargin at screen 0.1\nset rmargin at screen 0.84\n"
        "set bmargin at screen 0.14\nset tmargin at screen %.4f\n"
        "unset grid\nunset key\nset border lw 1 lc rgb '#444444'\n"
        "set tics front\nset style fill solid 1.0 noborder\n",
        r.below || r.above ? "  (▲ ▼: beyond the range)" : "", h.nx - 1, h.ny - 1, r.lo, r.hi,
        plast_palette_magma, top - 0.02 - 0.14, top - 0.02);
    bin_tics(&p, "x", h.nx, h.width, "rotate by 45 right out scale 0.6");
    bin_tics(&p, "y", h.ny, h.width, "out scale 0.6");
    /* (gnuplot's svg terminal fails on a labels plot without a point, so
     * the empty blocks are left out) */
    qk_plot_printf(&p, "plot $cells using 1:2:(0.502):(0.502):3 with boxxyerror fillcolor palette "
                       "notitle");
    if (thin)
        qk_plot_printf(&p, ", \\\n     $thin using 1:2:(0.502):(0.502) with boxxyerror fs "
                           "transparent solid 0.55 noborder lc rgb 'white' notitle");
    if (r.below + r.above)
        qk_plot_printf(&p, ", \\\n     $off using 1:2:3:4 with labels tc rgb variable font \",11\" "
                           "notitle");
    fig_hover_plot(&p, "cells", 1, 2, 4, 3.0);
    qk_plot_printf(&p, "\n");
    heatmap_keys(ctx, &h, &r, thin, min_heads);
    free(v);
    free(h.cells);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
