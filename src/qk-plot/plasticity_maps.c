/* Figures 01-04 of the plasticity study: the mean attention plasticity of
 * one model (--model) by inter-key distance and key-to-query distance
 * (input "pair2d" = model_pair2d.csv, "registry" = the dataset registry).
 * The four share one colour scale: computed by each from the cells of the
 * models of --value scale_models=A+B+..., read from the inputs scale-*
 * (the pair tables of their studies), unless --heatmap-scale own. */
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

/* The model's cells from its rows of table t; 0 cells when the table
 * holds no value for it. */
static void load_heatmap(const fig_ctx *ctx, const qk_table *t, const int *rows, int n, heatmap *h)
{
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

/* The colour scale of a heatmap: its range and the models it was decided
 * by (this one alone, or the models of a shared scale). */
typedef struct colour_scale {
    fig_range range;
    int n_models;      /* models whose cells decided it */
    char models[320];  /* their labels, "A, B and C" (as many as fit) */
    int n_values;      /* cells that decided it */
} colour_scale;

static void heatmap_keys(fig_ctx *ctx, const heatmap *h, const fig_range *r, int thin,
                         int min_heads, const colour_scale *scale)
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
    fig_key(ctx, "cells from fewer than the minimum heads (hatched)", "%d (minimum %d heads)", thin,
            min_heads);
    fig_key(ctx, "colour scale decided by", "%s (%d model%s, %d cells)", scale->models,
            scale->n_models, scale->n_models == 1 ? "" : "s", scale->n_values);
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

/* Hatching of a cell from too few heads: five parallel lines "/" across
 * the cell at (x, y), as segments (x0, y0, dx, dy) of data block $hatch
 * with their colour; the cell keeps the colour of its value. */
#define HATCH_LINES 5
static void hatch_cell(qk_plot *p, int x, int y, int color)
{
    for (int k = 0; k < HATCH_LINES; k++) {
        /* the line v = u + t in cell units u, v in [-0.5, 0.5] */
        double t = (k - (HATCH_LINES - 1) / 2.0) / ((HATCH_LINES + 1) / 2.0);
        double u0 = fmax(-0.5, -0.5 - t), u1 = fmin(0.5, 0.5 - t);
        qk_plot_printf(p, "%.4f %.4f %.4f %.4f %d\n", x + u0, y + u0 + t, u1 - u0, u1 - u0,
                       color);
    }
}

/* The colour that reads on a magma cell at fraction f of the colour
 * range: white on the dark end, black on the light end. */
static int contrast_color(double f)
{
    return f < 0.6 ? 0xffffff : 0x000000;
}

/* Data blocks: $cells (x, y, value clipped to the colour range), $hatch
 * (the hatching of the cells from fewer heads than min_heads) and $off
 * (cells beyond the range: x, y, marker, its colour). Returns the number
 * of hatched cells. */
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
    qk_plot_data_begin(p, "hatch");
    for (int i = 0; i < h->n_cells; i++)
        if (h->cells[i].heads < min_heads) {
            int side;
            double v = fig_clip(r, h->cells[i].ap, &side);
            hatch_cell(p, h->cells[i].x, h->cells[i].y, contrast_color((v - r->lo) / (r->hi - r->lo)));
            thin++;
        }
    qk_plot_printf(p, "NaN NaN NaN NaN 0\n");
    qk_plot_data_end(p);
    /* the ends of magma: black below, pale yellow above */
    qk_plot_data_begin(p, "off");
    for (int i = 0; i < h->n_cells; i++) {
        int side;
        fig_clip(r, h->cells[i].ap, &side);
        if (side)
            qk_plot_printf(p, "%d %d \"%s\" %d\n", h->cells[i].x, h->cells[i].y,
                           side > 0 ? "▲" : "▼", contrast_color(side > 0 ? 1 : 0));
    }
    qk_plot_printf(p, "NaN NaN \"\" 0\n");
    qk_plot_data_end(p);
    return thin;
}

/* ---- the legend of the cells that show no plain value ------------------------------- */

#define LEGEND_PT 13
#define LEGEND_TAG 801

typedef struct legend_entry {
    int kind; /* 0: no pairs (white), 1: hatched, 2: beyond the range */
    char text[96];
} legend_entry;

/* Width of an entry's sample in em: a cell 1.5 em square, or "▲ ▼". */
static double sample_em(const legend_entry *e)
{
    return e->kind == 2 ? 2.4 : 1.5;
}

/* Width of an entry in em: its sample, a gap and its text (DejaVu Sans at
 * up to 0.72 em a character, as measured on the PNG). */
static double entry_em(const legend_entry *e)
{
    return sample_em(e) + 0.6 + 0.72 * (double)qk_utf8_chars(e->text);
}

/* The sample of an entry with its left edge at screen x, centred on y;
 * tags from *tag on. A hatched cell's sample is grey: a hatched cell keeps
 * the colour of its value, whatever that is. */
static void entry_sample(qk_plot *p, const legend_entry *e, double x, double y, int *tag)
{
    double w = sample_em(e) * LEGEND_PT / p->width, h = sample_em(e) * LEGEND_PT / p->height;
    if (e->kind == 2) {
        qk_plot_printf(p, "set label %d \"▲ ▼\" at screen %.4f, screen %.4f left font \",%d\" "
                          "tc rgb '#222222' front\n", (*tag)++, x, y, LEGEND_PT);
        return;
    }
    qk_plot_printf(p, "set object %d rectangle from screen %.4f, screen %.4f to screen %.4f, "
                      "screen %.4f fc rgb '%s' fs solid 1.0 border lc rgb '#999999' lw 1 front\n",
                   (*tag)++, x, y - h / 2, x + w, y + h / 2, e->kind ? "#8a8a8a" : "white");
    for (int k = 0; e->kind == 1 && k < HATCH_LINES; k++) {
        double t = (k - (HATCH_LINES - 1) / 2.0) / ((HATCH_LINES + 1) / 2.0);
        double u0 = fmax(-0.5, -0.5 - t), u1 = fmin(0.5, 0.5 - t);
        qk_plot_printf(p, "set arrow %d from screen %.4f, screen %.4f to screen %.4f, screen %.4f "
                          "nohead lw 1.3 lc rgb 'white' front\n", (*tag)++,
                       x + (u0 + 0.5) * w, y + (u0 + t) * h, x + (u1 + 0.5) * w, y + (u1 + t) * h);
    }
}

/* The legend of the masked cells, centred in rows below screen height y
 * (entries wrap where a row would pass 90 % of the width); returns the
 * screen height below it. */
static double masks_legend(qk_plot *p, const legend_entry *e, int n, double y)
{
    double em_x = (double)LEGEND_PT / p->width, row_h = 1.9 * LEGEND_PT / p->height;
    int tag = LEGEND_TAG;
    for (int first = 0; first < n;) {
        double width = entry_em(&e[first]);
        int last = first + 1;
        while (last < n && (width + 2.5 + entry_em(&e[last])) * em_x < 0.9) {
            width += 2.5 + entry_em(&e[last]);
            last++;
        }
        double x = 0.5 - 0.5 * width * em_x, mid = y - 0.5 * row_h;
        for (int i = first; i < last; i++) {
            entry_sample(p, &e[i], x, mid, &tag);
            double text_x = x + (sample_em(&e[i]) + 0.6) * em_x;
            qk_plot_printf(p, "set label %d ", tag++);
            fig_text(p, e[i].text);
            qk_plot_printf(p, " at screen %.4f, screen %.4f left font \",%d\" tc rgb '#222222' "
                              "front\n", text_x, mid, LEGEND_PT);
            x += (entry_em(&e[i]) + 2.5) * em_x;
        }
        y -= row_h;
        first = last;
    }
    return y;
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

/* The heads a cell needs to be drawn in full: min_share of the most heads
 * behind a cell of the model. */
static int full_heads(const fig_ctx *ctx, const heatmap *h)
{
    return (int)ceil(ctx->min_share * h->n_heads);
}

/* Appends to v at *n the values a colour scale is decided by: the cells
 * of h from enough heads (all its cells when none has enough), so that a
 * hatched cell from a few heads does not set it. */
static void scale_values(const fig_ctx *ctx, const heatmap *h, double *v, int *n)
{
    int min_heads = full_heads(ctx, h), start = *n;
    for (int i = 0; i < h->n_cells; i++)
        if (h->cells[i].heads >= min_heads)
            v[(*n)++] = h->cells[i].ap;
    if (*n == start)
        for (int i = 0; i < h->n_cells; i++)
            v[(*n)++] = h->cells[i].ap;
}

/* Adds a model's label to the scale's list "A, B and C". */
static void add_scale_model(colour_scale *scale, const char *label)
{
    char list[320];
    snprintf(list, sizeof list, "%s", scale->models);
    char *and = strstr(list, " and ");
    if (and) /* "A and B" + C -> "A, B and C" */
        *and = ',', memmove(and + 1, and + 4, strlen(and + 4) + 1);
    size_t used = strlen(list);
    snprintf(list + used, sizeof list - used, "%s%s", scale->n_models ? " and " : "", label);
    memcpy(scale->models, list, sizeof list);
    scale->n_models++;
}

/* The cells of model id from the first scale-* input holding it into *h;
 * 0 if none does. */
static int scale_model_cells(const fig_ctx *ctx, const char *id, heatmap *h)
{
    for (int i = 0; i < ctx->n_inputs; i++) {
        if (strncmp(ctx->input_names[i], "scale-", 6) != 0 || !ctx->input_paths[i])
            continue;
        int n;
        int *rows = plast_model_rows(ctx, &ctx->inputs[i], id, &n);
        if (n)
            load_heatmap(ctx, &ctx->inputs[i], rows, n, h);
        free(rows);
        if (n && h->n_cells)
            return 1;
        if (n)
            free(h->cells);
    }
    return 0;
}

/* Whether id is one of the '+'-joined ids of list. */
static int model_listed(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *s = list; *s; s += strcspn(s, "+"), s += *s == '+')
        if (strncmp(s, id, n) == 0 && (s[n] == '+' || s[n] == '\0'))
            return 1;
    return 0;
}

/* The colour scale of the heatmap own: decided by its cells and, unless
 * --heatmap-scale own, by those of the other models of --value
 * scale_models (ids joined by '+'), the same in each of the figures that
 * share it; widened to MIN_COLOUR_SPAN and counted on own's cells. */
static colour_scale heatmap_scale(const fig_ctx *ctx, const heatmap *own)
{
    colour_scale scale = {.n_models = 0, .models = ""};
    const char *list = ctx->own_heatmap_scale ? NULL : fig_value(ctx, "scale_models");
    size_t cap = (size_t)own->n_cells;
    for (int i = 0; i < ctx->n_inputs; i++)
        if (ctx->input_paths[i] && strncmp(ctx->input_names[i], "scale-", 6) == 0)
            cap += (size_t)ctx->inputs[i].n_rows;
    double *v = qk_malloc(cap * sizeof *v);
    int n = 0;
    /* the models in the order of the list (the same in every figure), this
     * one first if the list lacks it */
    if (!list || !model_listed(list, ctx->model)) {
        scale_values(ctx, own, v, &n);
        add_scale_model(&scale, ctx->model_label);
    }
    for (const char *s = list; s && *s;) {
        char id[128];
        size_t len = strcspn(s, "+");
        snprintf(id, sizeof id, "%.*s", (int)len, s);
        s += len + (s[len] == '+');
        heatmap h;
        if (strcmp(id, ctx->model) == 0) {
            scale_values(ctx, own, v, &n);
            add_scale_model(&scale, ctx->model_label);
        }
        if (strcmp(id, ctx->model) == 0 || strcmp(id, "-") == 0 || !scale_model_cells(ctx, id, &h))
            continue;
        scale_values(ctx, &h, v, &n);
        add_scale_model(&scale, fig_has_input(ctx, "registry") ? fig_registry(ctx, id, "label", id)
                                                               : id);
        free(h.cells);
    }
    scale.n_values = n;
    scale.range = fig_robust_range(v, n);
    widen_colour_range(&scale.range);
    for (int i = 0; i < own->n_cells; i++)
        v[i] = own->cells[i].ap;
    fig_range_recount(&scale.range, v, own->n_cells);
    free(v);
    return scale;
}

/* The entries of the masks legend this heatmap needs: no pairs always,
 * hatched and beyond the range where there are such cells. */
static int legend_entries(legend_entry *e, int thin, const fig_range *r, int min_heads,
                          int n_heads)
{
    int n = 0;
    e[n].kind = 0;
    snprintf(e[n++].text, sizeof e->text, "no pairs");
    if (thin) {
        e[n].kind = 1;
        snprintf(e[n++].text, sizeof e->text, "from fewer than %d of %d heads (hatched)", min_heads,
                 n_heads);
    }
    if (r->below + r->above) {
        e[n].kind = 2;
        snprintf(e[n++].text, sizeof e->text, "beyond the colour range (drawn at its end)");
    }
    return n;
}

int plast_draw_heatmap(fig_ctx *ctx, qk_err *err)
{
    const char *model = fig_model(ctx);
    const qk_table *t = fig_input(ctx, "pair2d");
    int n;
    int *rows = plast_model_rows(ctx, t, model, &n);
    heatmap h;
    load_heatmap(ctx, t, rows, n, &h);
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
    int min_heads = full_heads(ctx, &h);
    colour_scale scale = heatmap_scale(ctx, &h);
    const fig_range *r = &scale.range;
    qk_plot p;
    plast_begin_hover(&p, 1600, 1200, 15);
    int thin = heatmap_blocks(&p, &h, r, min_heads);
    char title[256], sub[640], width[32];
    fig_tokens(h.width, width, sizeof width);
    fig_title_text(ctx, title, sizeof title);
    int at = snprintf(sub, sizeof sub, "mean over n = %d heads; bins of %s tokens (tick = bin "
                      "start); ", h.n_heads, width);
    if (scale.n_models > 1)
        snprintf(sub + at, sizeof sub - (size_t)at, "one colour scale for %s", scale.models);
    else
        snprintf(sub + at, sizeof sub - (size_t)at, "colour scale of this model alone");
    double top = fig_title(&p, title, sub, 18);
    legend_entry entries[3];
    top = masks_legend(&p, entries, legend_entries(entries, thin, r, min_heads, h.n_heads),
                       top - 0.005);
    qk_plot_printf(&p,
        "set xlabel \"Inter-key distance (tokens, K = 1024)\"\n"
        "set ylabel \"Key-to-query distance (tokens, K = 1024)\"\n"
        "set cblabel \"Attention plasticity\" offset 1,0\n"
        "set xrange [-0.5:%d.5]\nset yrange [-0.5:%d.5]\n"
        "set cbrange [%.6f:%.6f]\nset cbtics format \"%%.2f\"\n"
        "set palette defined %s\n"
        "set colorbox vertical user origin screen 0.87, screen 0.14 size screen 0.025, "
        "screen %.4f\n"
        "set lmargin at screen 0.1\nset rmargin at screen 0.84\n"
        "set bmargin at screen 0.14\nset tmargin at screen %.4f\n"
        "unset grid\nunset key\nset border lw 1 lc rgb '#444444'\n"
        "set tics front\nset style fill solid 1.0 noborder\n",
        h.nx - 1, h.ny - 1, r->lo, r->hi, plast_palette_magma, top - 0.01 - 0.14, top - 0.01);
    bin_tics(&p, "x", h.nx, h.width, "rotate by 45 right out scale 0.6");
    bin_tics(&p, "y", h.ny, h.width, "out scale 0.6");
    /* (gnuplot's svg terminal fails on a labels plot without a point, so
     * the empty blocks are left out) */
    qk_plot_printf(&p, "plot $cells using 1:2:(0.502):(0.502):3 with boxxyerror fillcolor palette "
                       "notitle");
    if (thin)
        qk_plot_printf(&p, ", \\\n     $hatch using 1:2:3:4:5 with vectors nohead lw 1.3 "
                           "lc rgb variable notitle");
    if (r->below + r->above)
        qk_plot_printf(&p, ", \\\n     $off using 1:2:3:4 with labels tc rgb variable font \",13\" "
                           "notitle");
    fig_hover_plot(&p, "cells", 1, 2, 4, 3.0);
    qk_plot_printf(&p, "\n");
    heatmap_keys(ctx, &h, r, thin, min_heads, &scale);
    free(h.cells);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
