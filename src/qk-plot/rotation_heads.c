/* Rotation figures drawn from the per-head table (rotated.csv): the bias
 * histograms (04), the depth heatmaps (06) and the Simpson's-paradox
 * scatter (07). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/stats.h"
#include "rotation_fig.h"

#define MAX_FAMILIES 8

/* Markers of the models of a family: circle, square, triangle, diamond,
 * inverted triangle, pentagon. */
static int model_marker(int k)
{
    static const int markers[] = {7, 5, 9, 13, 11, 15};
    return markers[k % 6];
}

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

/* ---- 04: histograms of the bias strength ------------------------------------------------ */

typedef struct histogram {
    int bins;
    double lo, width;
    double *density;
} histogram;

/* Density histogram of the finite x[rows] * scale inside [lim_lo, lim_hi]
 * over their own range with 2 ceil(sqrt(n)) bins (6 to 40); the density
 * is relative to all finite values, so a histogram with heads off the
 * scale has an area below 1. bins = 0 when no value is inside. */
static histogram make_histogram(const double *x, const rot_rows *rows, double scale,
                                double lim_lo, double lim_hi)
{
    histogram h = {0, 0, 0, NULL};
    double lo = INFINITY, hi = -INFINITY;
    int n = 0, inside = 0;
    for (int i = 0; i < rows->n; i++) {
        double v = x[rows->index[i]] * scale;
        if (!isfinite(v))
            continue;
        n++;
        if (v < lim_lo || v > lim_hi)
            continue;
        lo = fmin(lo, v), hi = fmax(hi, v);
        inside++;
    }
    if (inside == 0)
        return h;
    int bins = 2 * (int)ceil(sqrt((double)inside));
    h.bins = bins < 6 ? 6 : bins > 40 ? 40 : bins;
    h.lo = lo;
    h.width = hi > lo ? (hi - lo) / h.bins : fmax(fabs(lo) * 0.01, 1e-9);
    h.density = qk_calloc((size_t)h.bins, sizeof(double));
    for (int i = 0; i < rows->n; i++) {
        double v = x[rows->index[i]] * scale;
        if (!isfinite(v) || v < lim_lo || v > lim_hi)
            continue;
        int b = (int)floor((v - lo) / h.width);
        h.density[b < 0 ? 0 : b >= h.bins ? h.bins - 1 : b] += 1.0 / (n * h.width);
    }
    return h;
}

/* The drawn range of a family: its quartiles widened by four
 * interquartile ranges (everything when the range is 0); the heads outside
 * are reported in the panel instead of squeezing the others. */
typedef struct family_scale {
    double lo, hi;       /* limits */
    int below, above;    /* heads outside */
    double min, max;     /* their extremes */
} family_scale;

static family_scale scale_of_family(const rot_table *t, int f, const double *x, double scale)
{
    rot_rows rows = rot_rows_family(t, f);
    double q1 = scale * rot_quantile(x, &rows, 0.25, 0), q3 = scale * rot_quantile(x, &rows, 0.75, 0);
    family_scale fs = {-INFINITY, INFINITY, 0, 0, NAN, NAN};
    if (q3 > q1)
        fs.lo = q1 - 4 * (q3 - q1), fs.hi = q3 + 4 * (q3 - q1);
    fs.min = scale * rot_min(x, &rows, 0), fs.max = scale * rot_max(x, &rows, 0);
    for (int i = 0; i < rows.n; i++) {
        double v = scale * x[rows.index[i]];
        fs.below += v < fs.lo;
        fs.above += v > fs.hi;
    }
    rot_rows_free(&rows);
    return fs;
}

int rotfig_draw_bias_hist(fig_ctx *ctx, qk_err *err)
{
    rot_table t;
    rotfig_load(ctx, "heads", &t);
    double *bias = qk_src_values(&t.src, "bias_strength");
    int nf = t.n_families < MAX_FAMILIES ? t.n_families : MAX_FAMILIES;
    histogram *hist = qk_calloc((size_t)t.n_models, sizeof *hist);
    family_scale fs[MAX_FAMILIES];
    for (int f = 0; f < nf; f++)
        fs[f] = scale_of_family(&t, f, bias, 1e3);
    double ymax = 0;
    qk_plot p;
    rotfig_begin(&p, 120 + 540 * nf, 660, 14);
    for (int m = 0; m < t.n_models; m++) {
        int f = t.family_of[m] < nf ? t.family_of[m] : 0;
        rot_rows rows = rot_rows_model(&t, m);
        hist[m] = make_histogram(bias, &rows, 1e3, fs[f].lo, fs[f].hi);
        rot_rows_free(&rows);
        char name[16];
        snprintf(name, sizeof name, "h%d", m);
        qk_plot_data_begin(&p, name);
        for (int b = 0; b < hist[m].bins; b++) {
            qk_plot_printf(&p, "%.6g %.6g %.6g\n", hist[m].lo + (b + 0.5) * hist[m].width,
                           hist[m].density[b], hist[m].width);
            ymax = fmax(ymax, hist[m].density[b]);
        }
        if (hist[m].bins == 0)
            qk_plot_printf(&p, "NaN NaN NaN\n");
        qk_plot_data_end(&p);
    }
    rot_rows all = rot_rows_all(&t);
    int positive = rot_count_positive(bias, &all), defined = rot_count_defined(bias, &all);
    qk_plot_printf(&p,
        "set multiplot title \"Bias strength distribution, bias\\\\_strength = "
        "{/:Italic μ}_Q^a · {/:Italic α}_K\\n{/*0.8 per-token score slope of the \\\\{a, b\\\\} "
        "plane for the mean query; > 0 favours later keys: %d of %d heads (%.1f%%)}\" "
        "font \",17\"\n"
        "set yrange [0:%.4g]\nset grid noxtics ytics\nset style fill transparent solid 0.4 border\n"
        "set key top right reverse Left font \",11\" samplen 1 spacing 1.0\n"
        "set xlabel \"bias\\\\_strength × 10^3\"\nset format y \"%%.1f\"\n",
        positive, defined, 100.0 * positive / (defined ? defined : 1), 1.3 * ymax);
    for (int f = 0; f < nf; f++) {
        panel_columns(&p, f, nf, 0.06, 0.99, 0.14, 0.78, 0.025);
        char name[64];
        rot_family_name(&t, f, name, sizeof name);
        double lo = 0, hi = 0;
        for (int m = 0; m < t.n_models; m++)
            if (t.family_of[m] == f && hist[m].bins > 0) {
                lo = fmin(lo, hist[m].lo);
                hi = fmax(hi, hist[m].lo + hist[m].bins * hist[m].width);
            }
        double pad = 0.04 * (hi - lo > 0 ? hi - lo : 1.0);
        qk_plot_printf(&p, "set title ");
        fig_text(&p, name);
        qk_plot_printf(&p, " font \",15\"\nset xrange [%.6g:%.6g]\n%s\n"
                           "unset arrow\nunset label\nset arrow from 0, graph 0 to 0, graph 1 "
                           "nohead front dt 2 lw 1.5 lc rgb '#000000'\n",
                       lo - pad, hi + pad,
                       f == 0 ? "set ylabel \"Density\"\nset format y \"%.1f\""
                              : "unset ylabel\nset format y \"\"");
        if (fs[f].above)
            qk_plot_printf(&p, "set label 1 \"%d off scale →\\nmax %.3g\" at graph 0.98, "
                               "graph 0.62 right front font \",11\" tc rgb '#444444'\n",
                           fs[f].above, fs[f].max);
        if (fs[f].below)
            qk_plot_printf(&p, "set label 2 \"← %d off scale\\nmin %.3g\" at graph 0.02, "
                               "graph 0.62 left front font \",11\" tc rgb '#444444'\n",
                           fs[f].below, fs[f].min);
        qk_plot_printf(&p, "plot ");
        int k = 0;
        for (int m = 0; m < t.n_models; m++) {
            if (t.family_of[m] != f)
                continue;
            const char *c = rotfig_model_color(k++);
            qk_plot_printf(&p, "%s$h%d using 1:2:3 with boxes lc rgb '%s' title ",
                           k > 1 ? ", \\\n     " : "", m, c);
            fig_text(&p, t.models[m].label);
        }
        qk_plot_printf(&p, "\n");
        if (fs[f].above + fs[f].below) {
            char key[128];
            snprintf(key, sizeof key, "%s: heads off the drawn scale (below, above)", name);
            fig_key(ctx, key, "%d, %d (drawn %.3g to %.3g)", fs[f].below, fs[f].above,
                    fs[f].lo, fs[f].hi);
        }
    }
    qk_plot_printf(&p, "unset multiplot\n");
    fig_key(ctx, "heads with bias_strength > 0", "%d of %d (%.1f%%)", positive, defined,
            100.0 * positive / (defined ? defined : 1));
    int negative = 0;
    for (int i = 0; i < all.n; i++)
        negative += bias[all.index[i]] < 0.0;
    fig_key(ctx, "heads with bias_strength < 0", "%d", negative);
    for (int m = 0; m < t.n_models; m++) {
        rot_rows rows = rot_rows_model(&t, m);
        char name[128];
        snprintf(name, sizeof name, "%s: heads, mean bias x1e3, share > 0", t.models[m].label);
        fig_key(ctx, name, "%d, %.3f, %.1f%%", rows.n, 1e3 * rot_mean(bias, &rows, 0),
                100.0 * rot_count_positive(bias, &rows) / (rows.n ? rows.n : 1));
        rot_rows_free(&rows);
        free(hist[m].density);
    }
    rot_rows_free(&all);
    free(hist);
    free(bias);
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

/* One heatmap panel: cells coloured on [lo, hi] with the value printed
 * (white on the darker half), empty cells grey with a dash. (gnuplot's svg
 * terminal crashes on a labels plot without a defined point, so the
 * label plots are left out when they would be empty.) */
static void heatmap_panel(fig_ctx *ctx, qk_plot *p, const rot_table *t,
                          double (*cell)[QK_DEPTH_BINS], const char *block, const int stops[9],
                          double lo, double hi, const char *title, const char *cb_label,
                          const char *key_name)
{
    int filled = 0, empty = 0;
    qk_plot_data_begin(p, block);
    for (int m = 0; m < t->n_models; m++) {
        char row[12 * QK_DEPTH_BINS] = "";
        for (int b = 0; b < QK_DEPTH_BINS; b++) {
            double v = cell[m][b];
            size_t used = strlen(row);
            snprintf(row + used, sizeof row - used, isnan(v) ? "%s-" : "%s%.2f", b ? " " : "", v);
            if (isnan(v)) {
                empty++;
                continue;
            }
            double x = hi > lo ? (v - lo) / (hi - lo) : 1.0;
            qk_plot_printf(p, "%d %d %.6f %d \"%.2f\"\n", b, m, v, x > 0.5 ? 0xffffff : 0, v);
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
    qk_plot_printf(p, "set cbrange [%.6g:%.6g]\nset title ", lo, hi > lo ? hi : lo + 1e-9);
    qk_plot_quoted(p, title);
    qk_plot_printf(p, " font \",15\"\nset cblabel ");
    qk_plot_quoted(p, cb_label);
    /* an invisible point keeps the colour box when no cell is filled */
    qk_plot_printf(p, " offset 0.5,0\n"
        "plot $nothing using 1:2:3 with points pt 7 ps 0 lc palette notitle");
    if (filled)
        qk_plot_printf(p, ", \\\n     $%s using 1:2:(0.5):(0.5):3 with boxxyerror fs solid 1.0 "
                          "noborder lc palette notitle, \\\n"
                          "     $%s using 1:2:5:4 with labels tc rgb variable font \",10\" "
                          "notitle", block, block);
    if (empty)
        qk_plot_printf(p, ", \\\n     $%s using 1:2:(0.5):(0.5) with boxxyerror fs solid 1.0 "
                          "noborder lc rgb '#e8e8e8' notitle, \\\n"
                          "     $%s using 1:2:(\"–\") with labels tc rgb '#777777' notitle",
                       eblock, eblock);
    qk_plot_printf(p, "\n");
}

/* A step of 1, 2 or 5 times a power of ten that divides span into about
 * ticks parts. */
static double nice_step(double span, int ticks)
{
    double raw = span / ticks;
    if (!(raw > 0))
        return 1;
    double mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void heatmap_axes(qk_plot *p, const rot_table *t)
{
    qk_plot_printf(p, "set ytics scale 0 (");
    for (int m = 0; m < t->n_models; m++) {
        fig_text(p, t->models[m].label);
        qk_plot_printf(p, " %d%s", m, m + 1 < t->n_models ? ", " : ")\n");
    }
    qk_plot_printf(p, "set xtics scale 0 (");
    for (int b = 0; b < QK_DEPTH_BINS; b++)
        qk_plot_printf(p, "\"%.1f\" %d%s", b / 10.0, b, b + 1 < QK_DEPTH_BINS ? ", " : ")\n");
    qk_plot_printf(p, "set xrange [-0.5:%d.5]\nset yrange [%d.5:-0.5]\nunset grid\nunset key\n"
                      "set xlabel \"Normalized depth: layer / (layers - 1), bins labelled by "
                      "their lower edge\"\n",
                   QK_DEPTH_BINS - 1, t->n_models - 1);
}

int rotfig_draw_heatmaps(fig_ctx *ctx, qk_err *err)
{
    rot_table t;
    rotfig_load(ctx, "heads", &t);
    double *r_k = qk_src_values(&t.src, "r_k_a"), *bias = qk_src_values(&t.src, "bias_strength");
    double *layer = qk_src_values(&t.src, "layer");
    double (*rk_cell)[QK_DEPTH_BINS] = qk_calloc((size_t)t.n_models, sizeof *rk_cell);
    double (*bias_cell)[QK_DEPTH_BINS] = qk_calloc((size_t)t.n_models, sizeof *bias_cell);
    depth_means(&t, r_k, layer, 1, 1.0, rk_cell);
    depth_means(&t, bias, layer, 0, 1e3, bias_cell);
    double lo = INFINITY, hi = -INFINITY;
    for (int m = 0; m < t.n_models; m++)
        for (int b = 0; b < QK_DEPTH_BINS; b++)
            if (!isnan(bias_cell[m][b]))
                lo = fmin(lo, bias_cell[m][b]), hi = fmax(hi, bias_cell[m][b]);
    if (!(hi >= lo))
        lo = 0, hi = 1;
    int row_px = 38, ticks = t.n_models >= 8 ? 5 : t.n_models >= 4 ? 3 : 2;
    int height = 300 + 2 * row_px * t.n_models;
    qk_plot p;
    rotfig_begin(&p, 2080, height, 13);
    heatmap_axes(&p, &t);
    qk_plot_printf(&p, "$nothing << EOD\nNaN NaN 0\nEOD\n");
    double h = (double)row_px * t.n_models / height;
    double top1 = 1.0 - 60.0 / height, top2 = top1 - h - 140.0 / height;
    qk_plot_printf(&p, "set multiplot\nset lmargin at screen 0.1\nset rmargin at screen 0.93\n"
                       "set bmargin at screen %.4f\nset tmargin at screen %.4f\n"
                       "set colorbox vertical user origin screen 0.945, screen %.4f size "
                       "screen 0.012, screen %.4f\nset cbtics %g\nset format cb \"%%.1f\"\n",
                   top1 - h, top1, top1 - h, h, nice_step(1.0, ticks));
    heatmap_panel(ctx, &p, &t, rk_cell, "rk", fig_reds, 0.0, 1.0,
                  "mean |{/:Italic r}_k| on axis a (key position signal)", "|{/:Italic r}_k|", "mean |r_k_a|");
    qk_plot_printf(&p, "set bmargin at screen %.4f\nset tmargin at screen %.4f\n"
                       "set colorbox vertical user origin screen 0.945, screen %.4f size "
                       "screen 0.012, screen %.4f\nset cbtics %g\nset format cb \"%% g\"\n",
                   top2 - h, top2, top2 - h, h, nice_step(hi - lo, ticks));
    heatmap_panel(ctx, &p, &t, bias_cell, "bias", rotfig_ylorrd, lo, hi,
                  "mean bias\\_strength × 10^3 = {/:Italic μ}_Q^a · {/:Italic α}_K × 10^3", "bias × 10^3",
                  "mean bias_strength x1e3");
    qk_plot_printf(&p, "unset multiplot\n");
    fig_key(ctx, "bias colour scale (x1e3)", "%.2f to %.2f", lo, hi);
    free(rk_cell);
    free(bias_cell);
    free(r_k);
    free(bias);
    free(layer);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 07: bias against separation --------------------------------------------------------- */

/* Family panel order of the thesis figure: Llama, Qwen3, Ministral, then
 * the other families in display order. */
static int scatter_order(const rot_table *t, int *order)
{
    static const char *const first[] = {"llama", "qwen", "ministral"};
    int n = 0, used[MAX_FAMILIES] = {0};
    for (int k = 0; k < 3; k++)
        for (int m = 0; m < t->n_models; m++) {
            int f = t->family_of[m];
            if (f < MAX_FAMILIES && !used[f] && strcmp(t->models[m].family, first[k]) == 0) {
                order[n++] = f;
                used[f] = 1;
            }
        }
    for (int f = 0; f < t->n_families && f < MAX_FAMILIES; f++)
        if (!used[f])
            order[n++] = f;
    return n;
}

/* Least-squares line of y on x over the finite points (qk/stats.h): $fit block. */
static void fit_line(qk_plot *p, const char *block, const double *x, const double *y,
                     const rot_rows *rows, double scale)
{
    double *a = qk_malloc((size_t)(rows->n + 1) * sizeof *a);
    double *b = qk_malloc((size_t)(rows->n + 1) * sizeof *b);
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < rows->n; i++) {
        a[i] = x[rows->index[i]];
        b[i] = y[rows->index[i]] * scale;
        if (isfinite(a[i]) && isfinite(b[i]))
            lo = fmin(lo, a[i]), hi = fmax(hi, a[i]);
    }
    qk_line l = qk_line_fit(a, b, rows->n);
    qk_plot_data_begin(p, block);
    if (l.n >= 2 && isfinite(l.slope))
        qk_plot_printf(p, "%.6g %.6g\n%.6g %.6g\n", lo, l.mean_y + l.slope * (lo - l.mean_x), hi,
                       l.mean_y + l.slope * (hi - l.mean_x));
    else
        qk_plot_printf(p, "NaN NaN\n");
    qk_plot_data_end(p);
    free(a);
    free(b);
}

int rotfig_draw_bias_vs_sep(fig_ctx *ctx, qk_err *err)
{
    rot_table t;
    rotfig_load(ctx, "heads", &t);
    double *bias = qk_src_values(&t.src, "bias_strength");
    double *sep = qk_src_values(&t.src, "separation_strength");
    int order[MAX_FAMILIES];
    int nf = scatter_order(&t, order);
    qk_plot p;
    rotfig_begin(&p, 120 + 580 * nf, 700, 14);
    for (int m = 0; m < t.n_models; m++) {
        char name[16];
        snprintf(name, sizeof name, "m%d", m);
        qk_plot_data_begin(&p, name);
        for (int i = 0; i < t.models[m].n_rows; i++) {
            int r = t.models[m].rows[i];
            if (isfinite(sep[r]) && isfinite(bias[r]))
                qk_plot_printf(&p, "%.6g %.6g\n", sep[r], 1e3 * bias[r]);
        }
        qk_plot_printf(&p, "NaN NaN\n");
        qk_plot_data_end(&p);
    }
    rot_rows all = rot_rows_all(&t);
    double pooled = rot_pearson(sep, bias, &all);
    qk_plot_printf(&p,
        "set multiplot title \"Bias strength vs separation strength (Simpson's paradox)\\n"
        "{/*0.8 one point per head; r = Pearson r within the family; pooled over all %d heads: "
        "r = %+.2f}\" font \",17\"\n"
        "set grid\nset key top right reverse Left font \",11\" samplen 1 spacing 1.0 noopaque nobox\n"
        /* room above the points for the legend */
        "set offsets 0, 0, graph 0.25, 0\n"
        "set xlabel \"separation\\\\_strength\"\n",
        rot_count_defined(bias, &all), pooled);
    fig_key(ctx, "pooled Pearson r (bias_strength, separation_strength)", "%+.3f (%d heads)",
            pooled, all.n);
    for (int i = 0; i < nf; i++) {
        int f = order[i];
        panel_columns(&p, i, nf, 0.055, 0.99, 0.13, 0.82, 0.045);
        rot_rows rows = rot_rows_family(&t, f);
        double r = rot_pearson(sep, bias, &rows);
        char block[16], name[64], title[128];
        snprintf(block, sizeof block, "fit%d", f);
        fit_line(&p, block, sep, bias, &rows, 1e3);
        rot_family_name(&t, f, name, sizeof name);
        snprintf(title, sizeof title, "%s  (r = %+.2f, %d heads)", name, r, rows.n);
        char key[128];
        snprintf(key, sizeof key, "%s: Pearson r (heads)", name);
        fig_key(ctx, key, "%+.3f (%d)", r, rows.n);
        rot_rows_free(&rows);
        const char *color = rotfig_family_color(f);
        qk_plot_printf(&p, "set title ");
        fig_text(&p, title);
        qk_plot_printf(&p, " font \",15\"\n%s\nplot ",
                       i == 0 ? "set ylabel \"bias\\\\_strength × 10^3\"" : "unset ylabel");
        int k = 0;
        for (int m = 0; m < t.n_models; m++) {
            if (t.family_of[m] != f)
                continue;
            qk_plot_printf(&p, "%s$m%d using 1:2 with points pt %d ps 0.9*qk_ps lc rgb '#99%s' "
                               "title ", k ? ", \\\n     " : "", m, model_marker(k), color + 1);
            fig_text(&p, t.models[m].label);
            k++;
        }
        qk_plot_printf(&p, ", \\\n     $%s using 1:2 with lines dt 2 lw 2 lc rgb '#333333' "
                           "notitle\n", block);
    }
    qk_plot_printf(&p, "unset multiplot\n");
    rot_rows_free(&all);
    free(bias);
    free(sep);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
