/* Rotation figures drawn from the per-head table (rotated.csv): the bias
 * distributions (04), the depth heatmaps (06) and the scatter of bias
 * against separation by family (07). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rotation_fig.h"

#define MAX_FAMILIES 8

/* Multiplot panel i of n side by side, between screen x0 and x1. */
static void panel_columns(qk_plot *p, int i, int n, double x0, double x1, double bottom,
                          double top, double gap)
{
    double w = (x1 - x0 - gap * (n - 1)) / n;
    double l = x0 + i * (w + gap);
    qk_plot_printf(p, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n"
                      "set bmargin at screen %.4f\nset tmargin at screen %.4f\n",
                   l, l + w, bottom, top);
}

/* The left margin of a row of family panels on screen: the share of the
 * canvas it has on a canvas of three families (three_wide pixels), kept in
 * pixels on the narrower canvas of one or two families, so that the tick
 * labels and the y label stay inside it. */
static double row_left_margin(const qk_plot *p, double share, double three_wide)
{
    return share * fmax(p->width, three_wide) / p->width;
}

/* Under a row of family panels in print (figures 04 and 07): the tick
 * labels and x label (14) and the panel's models' key (12), one model a
 * row. Returns the panels' bottom; *key_y: the key's top, *key_rows: the
 * most models of one of the first nf families. */
static double print_key_room(const qk_plot *p, const rot_table *t, int nf, double *key_y,
                             int *key_rows)
{
    *key_rows = 1;
    for (int f = 0; f < nf; f++) {
        int models = 0;
        for (int m = 0; m < t->n_models; m++)
            models += t->family_of[m] == f;
        *key_rows = models > *key_rows ? models : *key_rows;
    }
    double px = 1.0 / p->height;
    double bottom = (*key_rows * 1.6 * 12 + 0.6 * 12) * px + 5.4 * 14 * px;
    *key_y = bottom - 5.4 * 14 * px;
    return bottom;
}

/* That key, under the panel, then "plot ". */
static void print_family_key(qk_plot *p, double key_y, int key_rows, int samplen)
{
    qk_plot_printf(p, "set key at graph 0.5, screen %.4f center top vertical maxrows %d "
                      "reverse Left samplen %d font \",12\" nobox\nplot ", key_y, key_rows,
                   samplen);
}

/* ---- 04: the bias strength of every model's heads --------------------------------------- */

/* The bins of a family panel: one set for all its models, over the
 * family's robust range, 2 ceil(sqrt(n)) bins for its n heads (6 to 40). */
typedef struct family_bins {
    fig_range range;
    int bins;
    double lo, width;
} family_bins;

static family_bins bins_of_family(const rot_table *t, int f, const double *x)
{
    rot_rows rows = rot_rows_family(t, f);
    double *v = qk_malloc((size_t)(rows.n ? rows.n : 1) * sizeof *v);
    for (int i = 0; i < rows.n; i++)
        v[i] = x[rows.index[i]];
    family_bins fb;
    fb.range = fig_robust_range(v, rows.n);
    fig_range_include(&fb.range, 0, v, rows.n);
    int inside = fb.range.n - fb.range.below - fb.range.above;
    int bins = 2 * (int)ceil(sqrt((double)(inside > 0 ? inside : 1)));
    fb.bins = bins < 6 ? 6 : bins > 40 ? 40 : bins;
    double span = fb.range.hi - fb.range.lo;
    if (!(span > 0))
        span = fabs(fb.range.lo) > 0 ? 0.02 * fabs(fb.range.lo) : 1e-3;
    fb.lo = fb.range.lo;
    fb.width = span / fb.bins;
    free(v);
    rot_rows_free(&rows);
    return fb;
}

/* The print layout of figure 04 in characters of its base font: the title
 * block, a model's row, and a panel's title, tick labels and x label. */
#define HIST_TITLE_CH 7.0
#define HIST_ROW_CH 3.4
#define HIST_PANEL_CH 9.0

/* A model's heads in its row m (y from row - 0.5 to row + 0.5) of the
 * family's panel. With at least FIG_DENSITY_MIN_N heads, $hM: its density
 * over the family's bins as a filled step outline rising from the row's
 * base (x at the bin edges; the highest bin 0.8 of a row high), relative
 * to all its heads, so that heads off the scale lower the area. With fewer,
 * $hM: every head a point, spread across the row by a fixed jitter (the
 * golden-ratio sequence: the same figure on every run). Either way $oM:
 * the heads beyond the scale at its edge, as ▲ (pt 9) or ▼ (pt 11), and
 * $dM: the model's median as a bar across the row. Returns 1 for a
 * density. */
static int model_row(qk_plot *p, const rot_table *t, int m, int row, const double *x,
                     const family_bins *fb)
{
    rot_rows rows = rot_rows_model(t, m);
    int n = rot_count_defined(x, &rows), density = n >= FIG_DENSITY_MIN_N;
    char name[16];
    snprintf(name, sizeof name, "h%d", m);
    qk_plot_data_begin(p, name);
    if (density) {
        double *count = qk_calloc((size_t)fb->bins, sizeof *count), top = 0;
        for (int i = 0; i < rows.n; i++) {
            double v = x[rows.index[i]];
            if (!isfinite(v) || v < fb->range.lo || v > fb->range.hi)
                continue;
            int b = (int)floor((v - fb->lo) / fb->width);
            count[b < 0 ? 0 : b >= fb->bins ? fb->bins - 1 : b] += 1;
        }
        for (int b = 0; b < fb->bins; b++)
            top = fmax(top, count[b]);
        double base = row - 0.4, unit = top > 0 ? 0.8 / top : 0;
        qk_plot_printf(p, "%.6g %.4f %.4f\n", fb->lo, base, base);
        for (int b = 0; b < fb->bins; b++)
            qk_plot_printf(p, "%.6g %.4f %.4f\n%.6g %.4f %.4f\n", fb->lo + b * fb->width, base,
                           base + unit * count[b], fb->lo + (b + 1) * fb->width, base,
                           base + unit * count[b]);
        qk_plot_printf(p, "%.6g %.4f %.4f\n", fb->lo + fb->bins * fb->width, base, base);
        free(count);
    } else {
        int k = 0;
        for (int i = 0; i < rows.n; i++) {
            double v = x[rows.index[i]];
            if (!isfinite(v) || v < fb->range.lo || v > fb->range.hi)
                continue;
            double jitter = fmod(0.5 + 0.6180339887 * k++, 1.0) - 0.5;
            qk_plot_printf(p, "%.6g %.4f\n", v, row + 0.6 * jitter);
        }
        qk_plot_printf(p, "NaN NaN\n");
    }
    qk_plot_data_end(p);
    snprintf(name, sizeof name, "o%d", m);
    qk_plot_data_begin(p, name);
    for (int i = 0; i < rows.n; i++) {
        int side;
        double v = fig_clip(&fb->range, x[rows.index[i]], &side);
        if (isfinite(x[rows.index[i]]) && side)
            qk_plot_printf(p, "%.6g %d %d\n", v, row, side > 0 ? 9 : 11);
    }
    qk_plot_printf(p, "NaN NaN 9\n");
    qk_plot_data_end(p);
    snprintf(name, sizeof name, "d%d", m);
    qk_plot_data_begin(p, name);
    int side;
    double median = rot_quantile(x, &rows, 0.5, 0);
    if (isfinite(median))
        qk_plot_printf(p, "%.6g %.2f\n", fig_clip(&fb->range, median, &side), row - 0.42);
    else
        qk_plot_printf(p, "NaN NaN\n");
    qk_plot_data_end(p);
    rot_rows_free(&rows);
    return density;
}

static void bias_hist_keys(fig_ctx *ctx, const rot_table *t, const double *bias)
{
    rot_rows all = rot_rows_all(t);
    int positive = rot_count_positive(bias, &all), defined = rot_count_defined(bias, &all);
    fig_key(ctx, "heads with bias_strength > 0", "%d of %d (%.1f%%)", positive, defined,
            100.0 * positive / (defined ? defined : 1));
    int negative = 0;
    for (int i = 0; i < all.n; i++)
        negative += bias[all.index[i]] < 0.0;
    fig_key(ctx, "heads with bias_strength < 0", "%d", negative);
    for (int m = 0; m < t->n_models; m++) {
        rot_rows rows = rot_rows_model(t, m);
        char name[128];
        snprintf(name, sizeof name, "%s: heads, mean bias x1e3, share > 0", t->models[m].label);
        fig_key(ctx, name, "%d, %.3f, %.1f%%", rows.n, 1e3 * rot_mean(bias, &rows, 0),
                100.0 * rot_count_positive(bias, &rows) / (rows.n ? rows.n : 1));
        rot_rows_free(&rows);
    }
    rot_rows_free(&all);
}

/* The models of family f, as rows of its panel from the top: the panel's
 * y tics name them with their heads. Returns the rows. */
static int family_rows(qk_plot *p, const rot_table *t, int f, const double *x)
{
    int rows = 0;
    for (int m = 0; m < t->n_models; m++)
        rows += t->family_of[m] == f;
    qk_plot_printf(p, "set ytics scale 0 (");
    int k = 0;
    for (int m = 0; m < t->n_models; m++) {
        if (t->family_of[m] != f)
            continue;
        rot_rows r = rot_rows_model(t, m);
        char label[96];
        snprintf(label, sizeof label, "%s\n(n = %d)", t->models[m].label, rot_count_defined(x, &r));
        rot_rows_free(&r);
        qk_plot_printf(p, "%s\"", k ? ", " : "");
        const char *nl = strchr(label, '\n');
        qk_plot_put_text(p->mem, label, (size_t)(nl - label), FIG_TIC);
        qk_plot_printf(p, "\\n{/*0.85 ");
        qk_plot_put_text(p->mem, nl + 1, strlen(nl + 1), FIG_TIC);
        qk_plot_printf(p, "}\" %d", rows - 1 - k);
        k++;
    }
    qk_plot_printf(p, ")\nset yrange [-0.55:%.2f]\n", rows - 0.45);
    return rows;
}

/* The plot of family f's panel: each model's row in the family's colour,
 * the median bars, the heads beyond the scale. */
static void family_plot(qk_plot *p, const rot_table *t, int f, int rows, const int *density,
                        const char *color)
{
    qk_plot_printf(p, "plot ");
    int k = 0;
    for (int m = 0; m < t->n_models; m++) {
        if (t->family_of[m] != f)
            continue;
        const char *sep = k ? ", \\\n     " : "";
        if (density[m])
            qk_plot_printf(p, "%s$h%d using 1:2:3 with filledcurves fs transparent solid 0.45 "
                              "noborder lc rgb '%s' notitle, \\\n     $h%d using 1:3 with lines "
                              "lw 1.6 lc rgb '%s' notitle", sep, m, color, m, color);
        else
            qk_plot_printf(p, "%s$h%d using 1:2 with points pt 7 ps 1.0*qk_ps lc rgb '#66%s' "
                              "notitle", sep, m, color + 1);
        qk_plot_printf(p, ", \\\n     $d%d using 1:2:(0):(0.84) with vectors nohead lw 2.5 "
                          "lc rgb '#000000' notitle, \\\n     $o%d using 1:2:3 with points pt "
                          "variable ps 1.5*qk_ps lc rgb '%s' notitle", m, m, color);
        k++;
    }
    (void)rows;
    qk_plot_printf(p, "\n");
}

int rotfig_draw_bias_hist(fig_ctx *ctx, qk_err *err)
{
    rot_table t;
    if (rotfig_load(ctx, "heads", &t) == 0) {
        rot_table_free(&t);
        return rotfig_empty(ctx, "heads", err);
    }
    double *bias = qk_src_values(&t.src, "bias_strength");
    double *scaled = qk_src_values(&t.src, "bias_strength"); /* x 10^3, as drawn */
    for (int r = 0; r < t.src.t->n_rows; r++)
        scaled[r] *= 1e3;
    int nf = t.n_families < MAX_FAMILIES ? t.n_families : MAX_FAMILIES;
    family_bins fb[MAX_FAMILIES];
    int max_rows = 1, all_rows = 0, width = nf > 2 ? 160 + 450 * nf : 1200;
    for (int f = 0; f < nf; f++) {
        int rows = 0;
        for (int m = 0; m < t.n_models; m++)
            rows += t.family_of[m] == f;
        max_rows = rows > max_rows ? rows : max_rows;
        all_rows += rows;
    }
    /* print: the family panels in one column (side by side each would be
     * narrower than its models' names), the height in characters */
    int height = 280 + 90 * (max_rows > 2 ? max_rows : 2);
    if (fig_printing)
        height = (int)lround(14 * (HIST_TITLE_CH + HIST_ROW_CH * all_rows + HIST_PANEL_CH * nf) *
                             width / fig_print_width(width, 14));
    qk_plot p;
    rotfig_begin(&p, width, height, 14);
    int *density = qk_calloc((size_t)t.n_models, sizeof *density), k[MAX_FAMILIES] = {0};
    for (int f = 0; f < nf; f++)
        fb[f] = bins_of_family(&t, f, scaled);
    for (int m = 0; m < t.n_models; m++) {
        int f = t.family_of[m];
        if (f >= nf)
            continue;
        int rows = 0;
        for (int j = 0; j < t.n_models; j++)
            rows += t.family_of[j] == f;
        density[m] = model_row(&p, &t, m, rows - 1 - k[f]++, scaled, &fb[f]);
    }
    rot_rows all = rot_rows_all(&t);
    int positive = rot_count_positive(bias, &all), defined = rot_count_defined(bias, &all);
    rot_rows_free(&all);
    char sub[320];
    snprintf(sub, sizeof sub, "> 0 favours later keys: %d of %d heads (%.1f %%); a row a model: "
             "points below %d heads, else density; bar: median", positive, defined,
             100.0 * positive / (defined ? defined : 1), FIG_DENSITY_MIN_N);
    double title_bottom = fig_multiplot_title(&p, "Bias strength by model, bias strength = "
                                              QK_SYM_BIAS, sub, 17);
    /* from the font sizes: the panel titles (15) under the title block, the
     * tick labels and x label (14) under the panels */
    double px = 1.0 / p.height, chy = 14.0 * px;
    double panel_top = title_bottom - 3.2 * 15 * px, bottom = 5.6 * 14 * px;
    int print = fig_print(&p);
    /* room left of each panel for its models' names (14 px characters: an em
     * of the tick font is 18.7 px) and a gap */
    double names = fmax(11.0, 1.34 * rotfig_widest_label(&t) + 1.0);
    qk_plot_printf(&p, "set grid xtics noytics\nunset ylabel\nunset key\n");
    fig_axis_label(&p, "x", "bias strength × 10^3", NULL);
    for (int f = 0; f < nf; f++) {
        /* room left of each panel for its models' names */
        if (print) {
            int rows_f = 0;
            for (int m = 0; m < t.n_models; m++)
                rows_f += t.family_of[m] == f;
            double top_f = title_bottom - 3.2 * chy;
            panel_columns(&p, 0, 1, names * 14 / p.width, 0.97, top_f - HIST_ROW_CH * rows_f * chy,
                          top_f, 0);
            title_bottom = top_f - HIST_ROW_CH * rows_f * chy - (HIST_PANEL_CH - 3.2) * chy;
        } else {
            panel_columns(&p, f, nf, names * 14 / p.width, 0.99, bottom, panel_top,
                          (names + 0.5) * 14 / p.width);
        }
        char name[64], title[128];
        rot_family_name(&t, f, name, sizeof name);
        rot_rows rows = rot_rows_family(&t, f);
        snprintf(title, sizeof title, "%s (n = %d heads)", name, rot_count_defined(scaled, &rows));
        rot_rows_free(&rows);
        double lo, hi;
        fig_range_pad(&fb[f].range, 0.04, &lo, &hi);
        fig_axis_tics(&p, "x", lo, hi, 5);
        int n_rows = family_rows(&p, &t, f, scaled);
        qk_plot_printf(&p, "set title ");
        fig_text(&p, title);
        /* raised clear of the note on heads beyond the scale */
        qk_plot_printf(&p, " font \",15\" offset 0,0.5\nset xrange [%.6g:%.6g]\nunset arrow\n"
                           "unset label\n"
                           "set arrow from 0, graph 0 to 0, graph 1 nohead back dt 2 lw 1.5 "
                           "lc rgb '#000000'\n", lo, hi);
        for (int r = 1; r < n_rows; r++) /* rows apart */
            qk_plot_printf(&p, "set arrow from graph 0, first %.1f to graph 1, first %.1f nohead "
                               "back lw 0.8 lc rgb '#dddddd'\n", r - 0.5, r - 0.5);
        fig_offscale_labels(&p, &fb[f].range, "%.3g", 1, 11);
        family_plot(&p, &t, f, n_rows, density, rotfig_family_color(ctx, &t, f));
        if (fb[f].range.above + fb[f].range.below) {
            char key[128];
            snprintf(key, sizeof key, "%s: heads off the drawn scale (below, above)", name);
            fig_key(ctx, key, "%d, %d (drawn %.3g to %.3g)", fb[f].range.below,
                    fb[f].range.above, fb[f].range.lo, fb[f].range.hi);
        }
    }
    qk_plot_printf(&p, "unset multiplot\n");
    bias_hist_keys(ctx, &t, bias);
    for (int m = 0; m < t.n_models; m++) {
        char key[128];
        snprintf(key, sizeof key, "%s: drawn as", t.models[m].label);
        fig_key(ctx, key, "%s", density[m] ? "density" : "points");
    }
    free(density);
    free(bias);
    free(scaled);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 06: depth heatmaps ---------------------------------------------------------------------- */

/* Mean of x (|x| if absolute, times scale) over each model's heads in each
 * depth bin; NAN where the bin holds no head. */
static void depth_means(const rot_table *t, const double *x, const double *layer, int absolute,
                        double scale, double (*cell)[QK_DEPTH_BINS])
{
    for (int m = 0; m < t->n_models; m++) {
        double sum[QK_DEPTH_BINS] = {0};
        int n[QK_DEPTH_BINS] = {0};
        const rot_model *md = &t->models[m];
        for (int i = 0; i < md->n_rows; i++) {
            int r = md->rows[i];
            double v = x[r];
            if (isnan(v))
                continue;
            int b = qk_depth_bin((int)layer[r], md->n_layers);
            sum[b] += absolute ? fabs(v) : v;
            n[b]++;
        }
        for (int b = 0; b < QK_DEPTH_BINS; b++)
            cell[m][b] = n[b] ? scale * sum[b] / n[b] : NAN;
    }
}

/* A cell's value as drawn: two decimals, or a power of ten where the
 * colour bar is labelled so (values beyond fixed-point labels). */
static void cell_text(double v, int power, char *out, size_t cap)
{
    if (power)
        fig_power_text(v, 1, out, cap);
    else
        fig_fmt(out, cap, "%.2f", v);
}

/* One heatmap panel: cells coloured on [lo, hi] with the value printed
 * (white on the darker half; as powers of ten if power), empty cells grey
 * with a dash. (gnuplot's svg terminal crashes on a labels plot without a
 * defined point, so the label plots are left out when they would be
 * empty.) */
static void heatmap_panel(fig_ctx *ctx, qk_plot *p, const rot_table *t,
                          double (*cell)[QK_DEPTH_BINS], const char *block, const int stops[9],
                          double lo, double hi, int power, const char *title,
                          const char *cb_label, const char *key_name)
{
    int filled = 0, empty = 0;
    qk_plot_data_begin(p, block);
    for (int m = 0; m < t->n_models; m++) {
        char row[12 * QK_DEPTH_BINS] = "";
        for (int b = 0; b < QK_DEPTH_BINS; b++) {
            double v = cell[m][b];
            size_t used = strlen(row);
            snprintf(row + used, sizeof row - used, isnan(v) ? "%s-" : power ? "%s%.3g" : "%s%.2f",
                     b ? " " : "", v);
            if (isnan(v)) {
                empty++;
                continue;
            }
            /* a cell beyond the colour range takes the end colour and a triangle */
            double c = fmin(hi, fmax(lo, v));
            double x = hi > lo ? (c - lo) / (hi - lo) : 1.0;
            char value[40], text[48];
            cell_text(v, power, value, sizeof value);
            snprintf(text, sizeof text, "%s%s", v > hi ? "▲ " : v < lo ? "▼ " : "", value);
            qk_plot_printf(p, power ? "%d %d %.6g %d \"%s\"\n" : "%d %d %.6f %d \"%s\"\n", b, m, c,
                           x > 0.5 ? 0xffffff : 0, text);
            filled++;
        }
        char key[160];
        snprintf(key, sizeof key, "%s by depth bin 0.0-0.9, %s", key_name, t->models[m].label);
        fig_key(ctx, key, "%s", row);
    }
    qk_plot_data_end(p);
    char eblock[32];
    snprintf(eblock, sizeof eblock, "%s_empty", block);
    qk_plot_data_begin(p, eblock);
    for (int m = 0; m < t->n_models; m++)
        for (int b = 0; b < QK_DEPTH_BINS; b++)
            if (isnan(cell[m][b]))
                qk_plot_printf(p, "%d %d\n", b, m);
    qk_plot_data_end(p);
    fig_palette(p, stops, 0.0);
    qk_plot_printf(p, "set cbrange [%.6g:%.6g]\nset title ", lo, hi);
    qk_plot_quoted(p, title);
    qk_plot_printf(p, " font \",15\"\n");
    /* clear of the tick labels of the colour bar, as the SVG's wider text draws them */
    fig_axis_label(p, "cb", cb_label, fig_print(p) ? "offset 0.9,0" : "offset 1.8,0");
    /* an invisible point keeps the colour box when no cell is filled */
    qk_plot_printf(p, "plot $nothing using 1:2:3 with points pt 7 ps 0 lc palette notitle");
    if (filled)
        qk_plot_printf(p, ", \\\n     $%s using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 "
                          "noborder lc palette notitle, \\\n"
                          "     $%s using 1:2:5:4 with labels tc rgb variable font \",%d\" "
                          "notitle", block, block, fig_print(p) ? 10 : 12);
    if (empty)
        qk_plot_printf(p, ", \\\n     $%s using 1:2:(0.5):(0.5) with boxxyerror fs solid 1.0 "
                          "noborder lc rgb '#e8e8e8' notitle, \\\n"
                          "     $%s using 1:2:(\"–\") with labels tc rgb '#777777' notitle",
                       eblock, eblock);
    qk_plot_printf(p, "\n");
}

static void heatmap_axes(qk_plot *p, const rot_table *t)
{
    qk_plot_printf(p, "set ytics scale 0 (");
    for (int m = 0; m < t->n_models; m++) {
        char label[96];
        snprintf(label, sizeof label, "%s (n = %d)", t->models[m].label, t->models[m].n_rows);
        fig_tic_text(p, label);
        qk_plot_printf(p, " %d%s", m, m + 1 < t->n_models ? ", " : ")\n");
    }
    qk_plot_printf(p, "set xtics scale 0 (");
    for (int b = 0; b < QK_DEPTH_BINS; b++)
        qk_plot_printf(p, "\"%.1f\" %d%s", b / 10.0, b, b + 1 < QK_DEPTH_BINS ? ", " : ")\n");
    qk_plot_printf(p, "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\nunset grid\nunset key\n",
                   QK_DEPTH_BINS - 1, t->n_models - 1);
    fig_axis_label(p, "x", "Normalized layer depth: layer / (layers - 1), bins labelled by their lower "
                   "edge", NULL);
}

/* The print layout in characters of the base font: the panel titles, two
 * panels of rows of 1.4 characters, under each its tick labels and x
 * label. */
#define HEAT_ROW_CH 1.4
#define HEAT_TEXT_CH 17.6 /* the titles, tick labels and x labels of both panels */
#define HEAT_TITLE_CH 8.2 /* the figure's title block (fig_multiplot_title at HEAT_TITLE_PT,
                             two subtitle lines) */
#define HEAT_TITLE_PT 16
#define HEAT_WIDTH 1500   /* the screen canvas: its text readable at the page's width */
/* a panel's height in characters: at least 6, room for its colour box */
static double heat_panel_ch(int n_models)
{
    return fmax(HEAT_ROW_CH * n_models, 6.0);
}

static double heat_print_height(int n_models)
{
    return 13 * (HEAT_TITLE_CH + HEAT_TEXT_CH + 2 * heat_panel_ch(n_models));
}

/* Where the two panels and their colour boxes go, as screen fractions
 * (the horizontal ones as text, as the screen script has always written
 * them). */
typedef struct heat_frame {
    double h, top1, top2;
    char left[16], right[16], cb_left[16], cb_width[16];
} heat_frame;

/* The panels below the title block (title_bottom); the left margin from
 * the longest row label, on screen and in print. */
static heat_frame heat_layout(const qk_plot *p, const rot_table *t, int row_px, int font_pt,
                              double title_bottom)
{
    heat_frame hf;
    /* the row labels ("Qwen3-14B (n = 24)"), in characters of the font:
     * 0.68 of one a character, or their width (and a gap) where more */
    double label = 0;
    for (int m = 0; m < t->n_models; m++) {
        char text[96];
        snprintf(text, sizeof text, "%s (n = %d)", t->models[m].label, t->models[m].n_rows);
        label = fmax(label, fmax(0.68 * (double)strlen(text), 1.3 * fig_text_em(text)));
    }
    double chx = (double)font_pt / p->width, chy = (double)font_pt / p->height;
    if (!fig_print(p)) {
        hf.h = (double)row_px * t->n_models / p->height;
        hf.top1 = title_bottom - 3.4 * chy;
        hf.top2 = hf.top1 - hf.h - 140.0 / p->height;
        double right = 1 - 8.5 * chx;
        snprintf(hf.left, sizeof hf.left, "%.4f", (label + 2.0) * chx);
        snprintf(hf.right, sizeof hf.right, "%.4f", right);
        snprintf(hf.cb_left, sizeof hf.cb_left, "%.4f", right + 0.9 * chx);
        snprintf(hf.cb_width, sizeof hf.cb_width, "%.4f", 1.3 * chx);
        return hf;
    }
    hf.h = heat_panel_ch(t->n_models) * chy;
    hf.top1 = title_bottom - 3.4 * chy;
    hf.top2 = hf.top1 - hf.h - 9.0 * chy; /* leaves 5.0 below */
    double right = 1 - 8.5 * chx;
    snprintf(hf.left, sizeof hf.left, "%.4f", (label + 2.0) * chx);
    snprintf(hf.right, sizeof hf.right, "%.4f", right);
    snprintf(hf.cb_left, sizeof hf.cb_left, "%.4f", right + 0.8 * chx);
    snprintf(hf.cb_width, sizeof hf.cb_width, "%.4f", 0.9 * chx);
    return hf;
}

int rotfig_draw_heatmaps(fig_ctx *ctx, qk_err *err)
{
    rot_table t;
    if (rotfig_load(ctx, "heads", &t) == 0) {
        rot_table_free(&t);
        return rotfig_empty(ctx, "heads", err);
    }
    double *r_k = qk_src_values(&t.src, "r_k_a"), *bias = qk_src_values(&t.src, "bias_strength");
    double *layer = qk_src_values(&t.src, "layer");
    double (*rk_cell)[QK_DEPTH_BINS] = qk_calloc((size_t)t.n_models, sizeof *rk_cell);
    double (*bias_cell)[QK_DEPTH_BINS] = qk_calloc((size_t)t.n_models, sizeof *bias_cell);
    depth_means(&t, r_k, layer, 1, 1.0, rk_cell);
    depth_means(&t, bias, layer, 0, 1e3, bias_cell);
    /* the bias colours on a robust range: one extreme cell does not pale the others */
    fig_range range = fig_robust_range(&bias_cell[0][0], QK_DEPTH_BINS * t.n_models);
    double lo = range.lo, hi = range.hi;
    if (!(hi >= lo))
        lo = 0, hi = 1;
    /* from 0: cells of 0.60 and 0.63 would take the two ends of the scale */
    if (lo > 0)
        lo = 0;
    else if (hi < 0)
        hi = 0;
    fig_range_widen(&lo, &hi); /* the cells of one depth bin, or all equal */
    range.lo = lo, range.hi = hi;
    fig_range_recount(&range, &bias_cell[0][0], QK_DEPTH_BINS * t.n_models);
    /* rows of 38 pixels, at least 130 pixels a panel for its colour bar */
    int row_px = 38 * t.n_models >= 130 ? 38 : (130 + t.n_models - 1) / t.n_models;
    int ticks = t.n_models >= 8 ? 5 : t.n_models >= 4 ? 3 : 2;
    int height = 350 + 2 * row_px * t.n_models;
    if (fig_printing) /* print: the height from the rows and the text in font units */
        height = (int)lround(heat_print_height(t.n_models) * HEAT_WIDTH /
                             fig_print_width(HEAT_WIDTH, 13));
    qk_plot p;
    rotfig_begin(&p, HEAT_WIDTH, height, 13);
    heatmap_axes(&p, &t);
    qk_plot_printf(&p, "$nothing << EOD\nNaN NaN 0\nEOD\n");
    char sub[200], heads[64];
    double *n_heads = qk_malloc((size_t)t.n_models * sizeof *n_heads);
    for (int m = 0; m < t.n_models; m++)
        n_heads[m] = t.models[m].n_rows;
    fig_heads_phrase(n_heads, t.n_models, "per model", heads, sizeof heads);
    free(n_heads);
    snprintf(sub, sizeof sub, "mean over the heads of each model in each depth bin (%s); grey "
             "with a dash: no head in the bin", heads);
    double title_bottom = fig_multiplot_title(&p, "Key position signal and bias strength by "
                                              "layer depth", sub, HEAT_TITLE_PT);
    heat_frame hf = heat_layout(&p, &t, row_px, 13, title_bottom);
    double h = hf.h, top1 = hf.top1, top2 = hf.top2;
    qk_plot_printf(&p, "set lmargin at screen %s\nset rmargin at screen %s\n"
                       "set bmargin at screen %.4f\nset tmargin at screen %.4f\n"
                       "set colorbox vertical user origin screen %s, screen %.4f size "
                       "screen %s, screen %.4f\n",
                   hf.left, hf.right, top1 - h, top1, hf.cb_left, top1 - h, hf.cb_width, h);
    fig_axis_tics(&p, "cb", 0, 1, ticks);
    heatmap_panel(ctx, &p, &t, rk_cell, "rk", fig_reds, 0.0, 1.0, 0,
                  "Mean |" QK_SYM_R_K "| on axis " QK_SYM_AXIS_A " (key position signal)", "|" QK_SYM_R_K "|", "mean |r_k_a|");
    qk_plot_printf(&p, "set bmargin at screen %.4f\nset tmargin at screen %.4f\n"
                       "set colorbox vertical user origin screen %s, screen %.4f size "
                       "screen %s, screen %.4f\n",
                   top2 - h, top2, hf.cb_left, top2 - h, hf.cb_width, h);
    fig_axis_tics(&p, "cb", lo, hi, ticks + 1);
    int power = fig_power_scale(&p, lo, hi, ticks + 1);
    char title[256];
    if (fig_print(&p)) /* shorter: the panel is narrower in font units */
        snprintf(title, sizeof title, "Bias × 10^3 = " QK_SYM_BIAS " × 10^3%s",
                 range.above + range.below ? " (▲ ▼: beyond the colour range)" : "");
    else
        snprintf(title, sizeof title, "Mean bias strength × 10^3 = " QK_SYM_BIAS " × 10^3%s", range.above + range.below ? "  (robust colour range; "
                 "▲ ▼: cells beyond it)" : "");
    heatmap_panel(ctx, &p, &t, bias_cell, "bias", rotfig_ylorrd, lo, hi, power, title, "bias × 10^3",
                  "mean bias_strength x1e3");
    qk_plot_printf(&p, "unset multiplot\n");
    fig_key(ctx, "bias colour scale (x1e3)", power ? "%.3g to %.3g" : "%.2f to %.2f", lo, hi);
    fig_key(ctx, "bias cells below, above the colour scale", "%d, %d", range.below, range.above);
    free(rk_cell);
    free(bias_cell);
    free(r_k);
    free(bias);
    free(layer);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 07: bias against separation --------------------------------------------------------- */

/* Least-squares line of y on x over the finite points (at least three):
 * $fit block; returns 0 when there is no line. */
static int fit_line(qk_plot *p, const char *block, const double *x, const double *y,
                     const rot_rows *rows, double scale)
{
    double sx = 0, sy = 0, lo = INFINITY, hi = -INFINITY;
    int n = 0;
    for (int i = 0; i < rows->n; i++) {
        double a = x[rows->index[i]], b = y[rows->index[i]] * scale;
        if (isfinite(a) && isfinite(b))
            sx += a, sy += b, n++, lo = fmin(lo, a), hi = fmax(hi, a);
    }
    qk_plot_data_begin(p, block);
    double sxx = 0, sxy = 0, mx = n ? sx / n : 0, my = n ? sy / n : 0;
    for (int i = 0; i < rows->n; i++) {
        double a = x[rows->index[i]], b = y[rows->index[i]] * scale;
        if (isfinite(a) && isfinite(b))
            sxx += (a - mx) * (a - mx), sxy += (a - mx) * (b - my);
    }
    int line = n >= 3 && sxx > 0;
    if (line) {
        double slope = sxy / sxx;
        qk_plot_printf(p, "%.6g %.6g\n%.6g %.6g\n", lo, my + slope * (lo - mx), hi,
                       my + slope * (hi - mx));
    } else {
        qk_plot_printf(p, "NaN NaN\n");
    }
    qk_plot_data_end(p);
    return line;
}

/* The values of x (times scale) over rows, for a robust range. */
static double *row_values(const double *x, const rot_rows *rows, double scale)
{
    double *v = qk_malloc((size_t)(rows->n ? rows->n : 1) * sizeof *v);
    for (int i = 0; i < rows->n; i++)
        v[i] = scale * x[rows->index[i]];
    return v;
}

/* $mM: model m's heads inside the panel's y range and $oM: its heads
 * beyond it, drawn at the edge as triangles; returns how many are beyond. */
static int scatter_blocks(qk_plot *p, const rot_table *t, int m, const double *sep,
                           const double *bias, const fig_range *yr)
{
    char name[16];
    snprintf(name, sizeof name, "m%d", m);
    qk_plot_data_begin(p, name);
    for (int i = 0; i < t->models[m].n_rows; i++) {
        int r = t->models[m].rows[i], side;
        if (isfinite(sep[r]) && isfinite(bias[r]) && (fig_clip(yr, 1e3 * bias[r], &side), !side))
            qk_plot_printf(p, "%.6g %.6g\n", sep[r], 1e3 * bias[r]);
    }
    qk_plot_printf(p, "NaN NaN\n");
    qk_plot_data_end(p);
    snprintf(name, sizeof name, "o%d", m);
    qk_plot_data_begin(p, name);
    int off = 0;
    for (int i = 0; i < t->models[m].n_rows; i++) {
        int r = t->models[m].rows[i], side;
        if (!isfinite(sep[r]) || !isfinite(bias[r]))
            continue;
        double y = fig_clip(yr, 1e3 * bias[r], &side);
        if (side)
            qk_plot_printf(p, "%.6g %.6g %d\n", sep[r], y, side > 0 ? 9 : 11);
        off += side != 0;
    }
    qk_plot_printf(p, "NaN NaN 9\n");
    qk_plot_data_end(p);
    return off;
}

/* Where the scatter panels go: on screen fixed shares of the canvas; in
 * print from the font sizes (see scatter_layout). */
typedef struct scatter_frame {
    double left, bottom, top, gap;
    double key_y;  /* print: the top of the models' key under a panel */
    int key_rows;  /* print: its rows */
} scatter_frame;

/* The print layout from the font sizes: the panel titles (15, two lines)
 * under the title block (title_bottom), under each panel its tick labels
 * and x label (14) and its models' key (12) in rows. */
static scatter_frame scatter_layout(const qk_plot *p, const rot_table *t, int nf,
                                    double title_bottom)
{
    scatter_frame sf = {row_left_margin(p, 0.06, 160 + 470 * 3), 0.29, 0.79, 0.05, 0, 1};
    if (!fig_print(p))
        return sf;
    sf.left = 7.5 * 14 / p->width; /* the tick labels ("1.00") and the y label */
    sf.gap = 0.09;
    sf.top = title_bottom - 4.8 * 15 * (1.0 / p->height);
    sf.bottom = print_key_room(p, t, nf, &sf.key_y, &sf.key_rows);
    return sf;
}

/* The panel's title: the family's name, r (with its interval on few
 * points) and n; in print on two lines, the panel being narrower in font
 * units. */
static void scatter_title(qk_plot *p, const char *name, const char *rtext, int n)
{
    char rest[128];
    snprintf(rest, sizeof rest, "r = %s, n = %d heads", rtext, n);
    qk_plot_printf(p, "set title \"");
    fig_text_chars(p, name, strlen(name));
    qk_plot_printf(p, fig_print(p) ? "\\n{/*0.85 " : "  (");
    fig_text_chars(p, rest, strlen(rest));
    qk_plot_printf(p, fig_print(p) ? "}\"" : ")\"");
}

/* One family panel: its heads, the least-squares line, r (corr) and n in
 * the title. */
static void scatter_panel(fig_ctx *ctx, qk_plot *p, const rot_table *t, int f, int i, int nf,
                          const double *sep, const double *bias, const scatter_frame *sf,
                          const rot_corr *corr)
{
    rot_rows rows = rot_rows_family(t, f);
    double *y = row_values(bias, &rows, 1e3);
    fig_range yr = fig_robust_range(y, rows.n);
    double lo, hi;
    fig_range_pad(&yr, 0.06, &lo, &hi);
    int *off = qk_calloc((size_t)t->n_models, sizeof *off);
    for (int m = 0; m < t->n_models; m++)
        if (t->family_of[m] == f)
            off[m] = scatter_blocks(p, t, m, sep, bias, &yr);
    panel_columns(p, i, nf, sf->left, 0.99, sf->bottom, sf->top, sf->gap);
    char block[16], name[64], rtext[80];
    snprintf(block, sizeof block, "fit%d", f);
    int line = fit_line(p, block, sep, bias, &rows, 1e3);
    rot_family_name(t, f, name, sizeof name);
    rotfig_corr_text(corr, rtext, sizeof rtext);
    char key[128];
    snprintf(key, sizeof key, "%s: Pearson r (heads)", name);
    fig_key(ctx, key, "%+.3f (%d)", corr->r, rows.n);
    snprintf(key, sizeof key, "%s: 95%% interval of r (Fisher z)", name);
    fig_key(ctx, key, "%+.3f to %+.3f", corr->lo, corr->hi);
    if (yr.above + yr.below) {
        snprintf(key, sizeof key, "%s: heads off the drawn y scale (below, above)", name);
        fig_key(ctx, key, "%d, %d", yr.below, yr.above);
    }
    const char *color = rotfig_family_color(ctx, t, f);
    fig_axis_tics(p, "y", lo, hi, 6);
    double *x = row_values(sep, &rows, 1.0);
    fig_range xr = fig_robust_range(x, rows.n);
    xr.lo = xr.min, xr.hi = xr.max; /* every head inside: x is not cut */
    double xlo, xhi;
    fig_range_pad(&xr, 0.05, &xlo, &xhi);
    free(x);
    fig_axis_tics(p, "x", xlo, xhi, 6);
    qk_plot_printf(p, "set xrange [%.6g:%.6g]\n", xlo, xhi);
    scatter_title(p, name, rtext, rows.n);
    qk_plot_printf(p, " font \",15\"%s\nset yrange [%.6g:%.6g]\nunset label\n",
                   fig_print(p) ? "" : " offset 0,0.5", lo, hi);
    if (i > 0)
        qk_plot_printf(p, "unset ylabel\n");
    else /* shorter on the lower panels of print */
        fig_axis_label(p, "y", fig_print(p) ? "bias × 10^3" : "bias strength × 10^3", NULL);
    fig_offscale_labels(p, &yr, "%.3g", 1, 11);
    if (fig_print(p))
        print_family_key(p, sf->key_y, sf->key_rows, 1);
    else
        /* entries apart (width): the SVG's text is wider than the PNG's */
        qk_plot_printf(p, "set key at graph 0.5, graph -0.2 center top horizontal maxcols 3 width 2 "
                          "reverse Left samplen 1 font \",12\" nobox\nplot ");
    int k = 0;
    for (int m = 0; m < t->n_models; m++) {
        if (t->family_of[m] != f)
            continue;
        qk_plot_printf(p, "%s$m%d using 1:2 with points pt %d ps 1.1*qk_ps lc rgb '#99%s' title ",
                       k ? ", \\\n     " : "", m, fig_model_marker(k), color + 1);
        fig_text(p, t->models[m].label);
        if (off[m])
            qk_plot_printf(p, ", \\\n     $o%d using 1:2:3 with points pt variable ps 1.6*qk_ps "
                              "lw 2 lc rgb '%s' notitle", m, color);
        k++;
    }
    if (line)
        qk_plot_printf(p, ", \\\n     $%s using 1:2 with lines dt 2 lw 2 lc rgb '#333333' notitle",
                       block);
    qk_plot_printf(p, "\n");
    free(off);
    free(y);
    rot_rows_free(&rows);
}

/* The figure's title claims Simpson's paradox only when the data show it
 * (rot_simpson_reversal, the rule of the report's text too); when only
 * some families reverse the pooled r (rot_reverses: opposite signs, each
 * sure by its 95 % interval) it says how many. */
static void bias_sep_title(const rot_corr *pooled, const rot_corr *family, int nf, char *out,
                           size_t cap)
{
    int with_r = 0, opposite = 0;
    for (int f = 0; f < nf; f++)
        if (!isnan(family[f].r))
            with_r++, opposite += rot_reverses(pooled, &family[f]);
    if (rot_simpson_reversal(pooled, family, nf))
        snprintf(out, cap, "Bias against separation strength: Simpson's paradox (the pooled r "
                 "reverses in every family)");
    else if (opposite > 0)
        snprintf(out, cap, "Bias against separation strength (the pooled r reverses in %d of %d "
                 "families, 95 %% intervals apart from 0)", opposite, with_r);
    else
        snprintf(out, cap, "Bias strength against separation strength");
}

int rotfig_draw_bias_vs_sep(fig_ctx *ctx, qk_err *err)
{
    rot_table t;
    if (rotfig_load(ctx, "heads", &t) == 0) {
        rot_table_free(&t);
        return rotfig_empty(ctx, "heads", err);
    }
    double *bias = qk_src_values(&t.src, "bias_strength");
    double *sep = qk_src_values(&t.src, "separation_strength");
    int nf = t.n_families < MAX_FAMILIES ? t.n_families : MAX_FAMILIES;
    qk_plot p;
    /* taller in print, where the keys under the panels take more of it */
    rotfig_begin(&p, nf > 2 ? 160 + 470 * nf : 1300, fig_printing ? 1050 : 720, 14);
    rot_rows all = rot_rows_all(&t);
    /* r from at least three heads with both values, pooled and in the panels */
    rot_corr pooled = rot_correlation(sep, bias, &all), family[MAX_FAMILIES];
    for (int f = 0; f < nf; f++) {
        rot_rows rows = rot_rows_family(&t, f);
        family[f] = rot_correlation(sep, bias, &rows);
        rot_rows_free(&rows);
    }
    char sub[320], rtext[80], title[160];
    rotfig_corr_text(&pooled, rtext, sizeof rtext);
    snprintf(sub, sizeof sub, "a point a head; r: Pearson r within the family; pooled over all "
             "%d heads: r = %s; ▲ ▼: beyond the y scale", pooled.n, rtext);
    bias_sep_title(&pooled, family, nf, title, sizeof title);
    double title_bottom = fig_multiplot_title(&p, title, sub, 17);
    scatter_frame sf = scatter_layout(&p, &t, nf, title_bottom);
    qk_plot_printf(&p, "set grid\n");
    fig_axis_label(&p, "x", "separation strength", NULL);
    fig_key(ctx, "pooled Pearson r (bias_strength, separation_strength)", "%+.3f (%d head%s)",
            pooled.r, all.n, all.n == 1 ? "" : "s");
    fig_key(ctx, "pooled r: 95% interval (Fisher z)", "%+.3f to %+.3f", pooled.lo, pooled.hi);
    fig_key(ctx, "Simpson's reversal (every family r reverses the pooled r, 95% intervals apart "
                 "from 0)", "%s", rot_simpson_reversal(&pooled, family, nf) ? "yes" : "no");
    for (int f = 0; f < nf; f++)
        scatter_panel(ctx, &p, &t, f, f, nf, sep, bias, &sf, &family[f]);
    qk_plot_printf(&p, "unset multiplot\n");
    rot_rows_free(&all);
    free(bias);
    free(sep);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
