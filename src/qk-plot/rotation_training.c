/* The SmolLM3-3B figures of the rotation study (09, 10): per-checkpoint
 * bars from the training study's model_summary.csv, in training order (the
 * registry order), coloured by training phase. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rotation_fig.h"

#define MAX_PHASES 8

/* One bar quantity: the summary column of the bar, optionally the columns
 * of the error bar, a scale and the panel title. */
typedef struct bar_metric {
    const char *column, *low, *high;
    double scale;
    const char *title, *ylabel, *key;
    int unit_range; /* y from 0 to 1 */
    const char *print_ylabel; /* the y label on the print canvas, where a panel is
                                 lower in font units (the title says the rest) */
} bar_metric;

/* The drawn range of a metric: robust over the bars and the whisker ends,
 * from 0. */
static fig_range metric_range(const rot_table *t, const bar_metric *b)
{
    double *v = qk_malloc((size_t)(2 * t->n_models) * sizeof *v);
    for (int m = 0; m < t->n_models; m++) {
        v[2 * m] = b->scale * rotfig_model_value(t, m, b->column);
        v[2 * m + 1] = b->high ? b->scale * rotfig_model_value(t, m, b->high) : v[2 * m];
    }
    fig_range r = fig_robust_range(v, 2 * t->n_models);
    fig_range_include(&r, 0, v, 2 * t->n_models);
    if (b->unit_range)
        fig_range_include(&r, 1, v, 2 * t->n_models);
    free(v);
    return r;
}

/* Blocks $<name>_<phase>: x, value (cut at the range), low, high of the
 * checkpoints of each phase, and $<name>_off: the bars cut, with their
 * values. */
static void metric_blocks(qk_plot *p, const rot_table *t, const bar_metric *b, const char *name,
                          const int *phase, int n_phases, const fig_range *r)
{
    for (int ph = 0; ph < n_phases; ph++) {
        qk_plot_printf(p, "$%s_%d << EOD\n", name, ph);
        for (int m = 0; m < t->n_models; m++) {
            if (phase[m] != ph)
                continue;
            int side;
            double v = b->scale * rotfig_model_value(t, m, b->column);
            double lo = b->low ? b->scale * rotfig_model_value(t, m, b->low) : v;
            double hi = b->high ? b->scale * rotfig_model_value(t, m, b->high) : v;
            qk_plot_printf(p, "%d %.6g %.6g %.6g\n", m, fig_clip(r, v, &side), lo, hi);
        }
        qk_plot_printf(p, "EOD\n");
    }
    qk_plot_printf(p, "$%s_off << EOD\n", name);
    for (int m = 0; m < t->n_models; m++) {
        double v = b->scale * rotfig_model_value(t, m, b->column);
        char text[40];
        if (v > r->hi)
            qk_plot_printf(p, "%d %.6g \"%s\"\n", m, r->hi, fig_fmt(text, sizeof text, "▲ %.3g", v));
    }
    qk_plot_printf(p, "NaN NaN \"\"\nEOD\n");
}

/* The phase of every checkpoint and the phase names, as the checkpoint
 * axis finds them (without drawing anything). */
static int checkpoint_phases(const rot_table *t, int *phase, char names[][48])
{
    qk_plot scratch;
    qk_plot_begin(&scratch, 1, 1);
    int n = rotfig_checkpoint_axis(&scratch, t, phase, names, MAX_PHASES);
    qk_plot_discard(&scratch);
    return n;
}

/* Key numbers: the metric at every checkpoint. */
static void metric_keys(fig_ctx *ctx, const rot_table *t, const bar_metric *b)
{
    for (int m = 0; m < t->n_models; m++) {
        char name[160];
        double v = b->scale * rotfig_model_value(t, m, b->column);
        snprintf(name, sizeof name, "%s, %s", t->models[m].label, b->key);
        if (b->low)
            fig_key(ctx, name, "%.3f (p25-p75 %.3f-%.3f)", v,
                    b->scale * rotfig_model_value(t, m, b->low),
                    b->scale * rotfig_model_value(t, m, b->high));
        else
            fig_key(ctx, name, "%.4g", v);
    }
}

/* One bar panel of the metric: a series per phase (titled only when
 * titled), with whiskers when the metric has them. */
static void metric_panel(qk_plot *p, const bar_metric *b, const char *name, int n_phases,
                         char names[][48], const fig_range *r, int titled)
{
    qk_plot_printf(p, "set title ");
    qk_plot_quoted(p, b->title);
    qk_plot_printf(p, " font \",14\"\n");
    if (b->ylabel) {
        fig_axis_label(p, "y", fig_print(p) && b->print_ylabel ? b->print_ylabel : b->ylabel,
                       NULL);
    } else {
        qk_plot_printf(p, "unset ylabel\n");
    }
    /* bars start at 0; a metric below 0 extends the axis down, and one
     * without a finite value (heads without spread) gets an empty [0, 1] */
    double bottom = r->lo < 0 ? 1.1 * r->lo : 0.0;
    double top = b->unit_range ? 1.0 : 1.1 * r->hi;
    if (!(top > bottom))
        top = bottom + 1.0;
    qk_plot_printf(p, "set yrange [%.6g:%.6g]\nunset label\n", bottom, top);
    if (r->n == 0)
        qk_plot_printf(p, "set label 20 \"no finite value\" at graph 0.5, graph 0.5 center "
                          "font \",14\" tc rgb '#777777'\n");
    fig_axis_tics(p, "y", bottom, top, 5);
    fig_offscale_labels(p, r, "%.3g", 1, 11);
    qk_plot_printf(p, "plot ");
    for (int ph = 0; ph < n_phases; ph++) {
        qk_plot_printf(p, "%s$%s_%d using 1:2 with boxes fs solid 0.85 noborder lc rgb '%s' ",
                       ph ? ", \\\n     " : "", name, ph, rotfig_phase_color(ph));
        if (titled) {
            qk_plot_printf(p, "title ");
            fig_text(p, names[ph]);
        } else {
            qk_plot_printf(p, "notitle");
        }
    }
    if (b->low)
        for (int ph = 0; ph < n_phases; ph++)
            /* whiskers as vectors: gnuplot's error bars leave a gap at the mean */
            qk_plot_printf(p, ", \\\n     $%s_%d using 1:3:(0):($4-$3) with vectors nohead "
                              "lw 1.2 lc rgb '#000000' notitle, \\\n"
                              "     $%s_%d using ($1-0.1):3:(0.2):(0) with vectors nohead lw 1.2 "
                              "lc rgb '#000000' notitle, \\\n"
                              "     $%s_%d using ($1-0.1):4:(0.2):(0) with vectors nohead lw 1.2 "
                              "lc rgb '#000000' notitle", name, ph, name, ph, name, ph);
    if (r->above)
        qk_plot_printf(p, ", \\\n     $%s_off using 1:2:3 with labels offset 0,0.7 font \",10\" "
                          "notitle", name);
    qk_plot_printf(p, "\n");
}

/* Panel (row, col) of a rows x cols grid below a title band. */
static void grid_margins(qk_plot *p, int row, int col, int rows, int cols, double left,
                         double top, double bottom, double hgap, double vgap)
{
    double w = (0.985 - left - hgap * (cols - 1)) / cols;
    double h = (top - bottom - vgap * (rows - 1)) / rows;
    double l = left + col * (w + hgap), t = top - row * (h + vgap);
    qk_plot_printf(p, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n"
                      "set bmargin at screen %.4f\nset tmargin at screen %.4f\n",
                   l, l + w, t - h, t);
}

/* The panels of a figure in one column on the print canvas, where a row
 * of them would leave each checkpoint less room than its label: the
 * phase legend below the title block (top), then the panels, their
 * margins in characters of font_pt points. */
static double print_legend_y(const qk_plot *p, double top, int font_pt)
{
    return top - 1.0 * font_pt / p->height;
}

static void print_column_margins(qk_plot *p, int row, int rows, double legend_y, double left_chars,
                                 int font_pt)
{
    double ch = (double)font_pt / p->height;
    grid_margins(p, row, 0, rows, 1, left_chars * font_pt / p->width, legend_y - 4.6 * ch,
                 4.3 * ch, 0, 8.0 * ch);
}

/* Panel i of the 2 x 2 grid of figure 09 in print: the checkpoint labels
 * on one line turned 45 degrees (print_checkpoint_tics), the room for
 * them and the panel titles in characters (ch). */
static void print_grid_margins(qk_plot *p, int i, double legend_y, int font_pt)
{
    double chx = (double)font_pt / p->width, chy = (double)font_pt / p->height;
    grid_margins(p, i / 2, i % 2, 2, 2, 4.5 * chx, legend_y - 4.6 * chy, 6.0 * chy, 6.0 * chx,
                 9.0 * chy);
}

/* The checkpoint labels ("S1-40K") on one line, turned 45 degrees: the
 * two-line labels of the screen are wider than a bar of a print panel. */
static void print_checkpoint_tics(qk_plot *p, const rot_table *t)
{
    rotfig_label_tics(p, t, "scale 0 rotate by 45 right");
}

/* The phases of the checkpoints as key numbers. */
static void phase_keys(fig_ctx *ctx, const rot_table *t, const int *phase, char names[][48])
{
    fig_key(ctx, "checkpoints", "%d", t->n_models);
    for (int m = 0; m < t->n_models; m++) {
        char name[128];
        snprintf(name, sizeof name, "%s: phase, heads", t->models[m].label);
        fig_key(ctx, name, "%s, %.0f", names[phase[m]], rotfig_model_value(t, m, "n_heads"));
    }
}

/* ---- 09: four metrics with interquartile whiskers ---------------------------------------- */

int rotfig_draw_trajectory(fig_ctx *ctx, qk_err *err)
{
    static const bar_metric metrics[4] = {
        {"mean_abs_r_k_a", "p25_abs_r_k_a", "p75_abs_r_k_a", 1.0, "|r_k| on axis a", NULL,
         "mean |r_k_a|", 1, NULL},
        {"mean_separation_strength", "p25_separation_strength", "p75_separation_strength", 1.0,
         "Separation strength", NULL, "mean separation_strength", 0, NULL},
        {"mean_bias_strength", "p25_bias_strength", "p75_bias_strength", 1e3,
         "Bias strength × 10^3", NULL, "mean bias_strength x1e3", 0, NULL},
        {"mean_plane_var_fraction", "p25_plane_var_fraction", "p75_plane_var_fraction", 1.0,
         "Plane variance fraction", NULL, "mean plane_var_fraction", 0, NULL}};
    rot_table t;
    if (rotfig_load(ctx, "summary", &t) == 0) {
        rot_table_free(&t);
        return rotfig_empty(ctx, "summary", err);
    }
    int *phase = qk_calloc((size_t)t.n_models, sizeof *phase);
    char names[MAX_PHASES][48];
    qk_plot p;
    rotfig_begin(&p, 2080, 1420, 13);
    int n_phases = checkpoint_phases(&t, phase, names);
    fig_range range[4];
    char block[4][8];
    for (int i = 0; i < 4; i++) {
        snprintf(block[i], sizeof block[i], "b%d", i);
        range[i] = metric_range(&t, &metrics[i]);
        metric_blocks(&p, &t, &metrics[i], block[i], phase, n_phases, &range[i]);
    }
    char sub[200], heads[64];
    rotfig_heads_phrase(&t, "per checkpoint", heads, sizeof heads);
    snprintf(sub, sizeof sub, "bars: mean over the heads of each checkpoint (%s); whiskers: 25th "
             "to 75th percentile", heads);
    double top = fig_multiplot_title(&p, "SmolLM3-3B: 2-D rotation metrics across training", sub,
                                     18);
    int print = fig_print(&p);
    double legend_y = print ? print_legend_y(&p, top, 13) : 0.905;
    qk_plot_printf(&p, "set boxwidth 0.78 absolute\n");
    rotfig_phase_legend(&p, names, n_phases, legend_y);
    rotfig_checkpoint_axis(&p, &t, phase, names, MAX_PHASES);
    if (print)
        print_checkpoint_tics(&p, &t);
    qk_plot_printf(&p, "set grid noxtics ytics\n");
    for (int i = 0; i < 4; i++) {
        if (print)
            print_grid_margins(&p, i, legend_y, 13);
        else
            grid_margins(&p, i / 2, i % 2, 2, 2, 0.05, 0.86, 0.07, 0.06, 0.12);
        metric_panel(&p, &metrics[i], block[i], n_phases, names, &range[i], 0);
    }
    qk_plot_printf(&p, "unset multiplot\n");
    phase_keys(ctx, &t, phase, names);
    for (int i = 0; i < 4; i++)
        metric_keys(ctx, &t, &metrics[i]);
    free(phase);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 10: mu_Q^a, alpha_K and their product ------------------------------------------------ */

/* Key numbers of the whole context window: |alpha_K| L and bias L with L
 * the registry context length, and the table's mean bias_range. */
static void window_keys(fig_ctx *ctx, const rot_table *t)
{
    for (int m = 0; m < t->n_models; m++) {
        const rot_model *md = &t->models[m];
        char name[160];
        double alpha = rotfig_model_value(t, m, "mean_abs_alpha_k");
        double bias = rotfig_model_value(t, m, "mean_bias_strength");
        snprintf(name, sizeof name, "%s: context length L, |alpha_k| L, bias L, mean bias_range",
                 md->label);
        fig_key(ctx, name, "%.0f, %.2f, %.1f, %.1f", md->context_length,
                alpha * md->context_length, bias * md->context_length,
                rotfig_model_value(t, m, "mean_bias_range"));
    }
}

int rotfig_draw_decomposition(fig_ctx *ctx, qk_err *err)
{
    static const bar_metric metrics[3] = {
        {"mean_mu_q_a", NULL, NULL, 1.0, "{/:Italic μ}_Q^a (Q cluster mean on axis a)",
         "Mean projection", "mean mu_q_a", 0, "Projection"},
        {"mean_abs_alpha_k", NULL, NULL, 1e3, "|{/:Italic α}_K| × 10^3 (K drift slope per token)",
         "Slope × 10^3", "mean |alpha_k| x1e3", 0, NULL},
        {"mean_bias_strength", NULL, NULL, 1e3,
         "bias = " QK_SYM_BIAS " × 10^3", "Bias strength × 10^3",
         "mean bias_strength x1e3", 0, "Bias × 10^3"}};
    rot_table t;
    if (rotfig_load(ctx, "summary", &t) == 0) {
        rot_table_free(&t);
        return rotfig_empty(ctx, "summary", err);
    }
    int *phase = qk_calloc((size_t)t.n_models, sizeof *phase);
    char names[MAX_PHASES][48];
    qk_plot p;
    rotfig_begin(&p, 2240, fig_printing ? 2150 : 760, 13); /* print: one column */
    int n_phases = checkpoint_phases(&t, phase, names);
    fig_range range[3];
    char block[3][8];
    for (int i = 0; i < 3; i++) {
        snprintf(block[i], sizeof block[i], "d%d", i);
        range[i] = metric_range(&t, &metrics[i]);
        metric_blocks(&p, &t, &metrics[i], block[i], phase, n_phases, &range[i]);
    }
    char sub[200], heads[64];
    rotfig_heads_phrase(&t, "per checkpoint", heads, sizeof heads);
    snprintf(sub, sizeof sub, "means over the heads of each checkpoint (%s); slopes and bias are "
             "per token of key position", heads);
    double top = fig_multiplot_title(&p, "SmolLM3-3B: bias strength decomposition", sub, 18);
    int print = fig_print(&p);
    double legend_y = print ? print_legend_y(&p, top, 13) : 0.85;
    qk_plot_printf(&p, "set boxwidth 0.78 absolute\n");
    rotfig_phase_legend(&p, names, n_phases, legend_y);
    rotfig_checkpoint_axis(&p, &t, phase, names, MAX_PHASES);
    qk_plot_printf(&p, "set grid noxtics ytics\n");
    for (int i = 0; i < 3; i++) {
        if (print)
            print_column_margins(&p, i, 3, legend_y, 7.0, 13);
        else
            grid_margins(&p, 0, i, 1, 3, 0.055, 0.76, 0.12, 0.06, 0.0);
        metric_panel(&p, &metrics[i], block[i], n_phases, names, &range[i], 0);
    }
    qk_plot_printf(&p, "unset multiplot\n");
    phase_keys(ctx, &t, phase, names);
    for (int i = 0; i < 3; i++)
        metric_keys(ctx, &t, &metrics[i]);
    window_keys(ctx, &t);
    free(phase);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
