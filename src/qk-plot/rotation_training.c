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
    int per_window; /* times the checkpoint's context length L (a per-token
                       quantity over the whole captured window) */
    const char *title, *ylabel, *key;
    int unit_range; /* y from 0 to 1 */
    const char *print_ylabel; /* the y label on the print canvas, where a panel is
                                 lower in font units (the title says the rest) */
    const char *print_title;  /* the title there, where a panel is narrower (NULL: title) */
} bar_metric;

/* The metric's column (the bar or a whisker end) at checkpoint m as drawn:
 * scaled, and times the context length where the metric is per window. */
static double metric_value(const rot_table *t, int m, const bar_metric *b, const char *column)
{
    double v = b->scale * rotfig_model_value(t, m, column);
    return b->per_window ? v * t->models[m].context_length : v;
}

/* The drawn range of a metric: robust over the bars and the whisker ends,
 * from 0. */
static fig_range metric_range(const rot_table *t, const bar_metric *b)
{
    double *v = qk_malloc((size_t)(2 * t->n_models) * sizeof *v);
    for (int m = 0; m < t->n_models; m++) {
        v[2 * m] = metric_value(t, m, b, b->column);
        v[2 * m + 1] = b->high ? metric_value(t, m, b, b->high) : v[2 * m];
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
            double v = metric_value(t, m, b, b->column);
            double lo = b->low ? metric_value(t, m, b, b->low) : v;
            double hi = b->high ? metric_value(t, m, b, b->high) : v;
            qk_plot_printf(p, "%d %.6g %.6g %.6g\n", m, fig_clip(r, v, &side), lo, hi);
        }
        qk_plot_printf(p, "EOD\n");
    }
    qk_plot_printf(p, "$%s_off << EOD\n", name);
    for (int m = 0; m < t->n_models; m++) {
        double v = metric_value(t, m, b, b->column);
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
        double v = metric_value(t, m, b, b->column);
        snprintf(name, sizeof name, "%s, %s", t->models[m].label, b->key);
        if (b->low)
            fig_key(ctx, name, "%.3f (p25-p75 %.3f-%.3f)", v, metric_value(t, m, b, b->low),
                    metric_value(t, m, b, b->high));
        else
            fig_key(ctx, name, "%.4g", v);
    }
}

/* The context length captured at each checkpoint, under the checkpoint
 * labels: below the two lines of the screen's labels, or below the print's
 * labels turned 45 degrees (print_checkpoint_tics). */
static void context_groups(qk_plot *p, const rot_table *t)
{
    double *context = qk_malloc((size_t)t->n_models * sizeof *context);
    size_t longest = 0;
    for (int m = 0; m < t->n_models; m++) {
        context[m] = t->models[m].context_length;
        longest = strlen(t->models[m].label) > longest ? strlen(t->models[m].label) : longest;
    }
    /* a turned label of c characters reaches about 0.45 c below the axis */
    fig_context_groups(p, context, t->n_models, fig_print(p) ? 1.2 + 0.4 * longest : 3.1,
                       fig_print(p));
    free(context);
}

/* One bar panel of the metric: a series per phase (titled only when
 * titled), with whiskers when the metric has them, and under the axis the
 * context captured at the checkpoints (context_groups). */
static void metric_panel(qk_plot *p, const rot_table *t, const bar_metric *b, const char *name,
                         int n_phases, char names[][48], const fig_range *r, int titled)
{
    qk_plot_printf(p, "set title ");
    qk_plot_quoted(p, fig_print(p) && b->print_title ? b->print_title : b->title);
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
    context_groups(p, t);
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

/* In print the phase legend below the title block (top), in characters
 * of font_pt points. */
static double print_legend_y(const qk_plot *p, double top, int font_pt)
{
    return top - 1.4 * font_pt / p->height;
}

/* Panel i of the 2 x 2 grid of figures 09 and 10 in print: the checkpoint labels
 * on one line turned 45 degrees (print_checkpoint_tics), the room for
 * them and the panel titles in characters (ch). */
static void print_grid_margins(qk_plot *p, int i, double legend_y, double left_chars,
                               int font_pt)
{
    double chx = (double)font_pt / p->width, chy = (double)font_pt / p->height;
    grid_margins(p, i / 2, i % 2, 2, 2, left_chars * chx, legend_y - 4.6 * chy, 8.0 * chy,
                 (left_chars + 1.5) * chx, 11.6 * chy);
}

/* The checkpoint labels ("S1 40k", fig_checkpoint_label) on one line,
 * turned 45 degrees: the two-line labels of the screen are wider than a
 * bar of a print panel. */
static void print_checkpoint_tics(qk_plot *p, const rot_table *t)
{
    qk_plot_printf(p, "set xtics scale 0 rotate by 45 right (");
    for (int m = 0; m < t->n_models; m++) {
        char text[160];
        fig_checkpoint_label(t->models[m].label, " ", text, sizeof text);
        fig_tic_text(p, text);
        qk_plot_printf(p, " %d%s", m, m + 1 < t->n_models ? ", " : ")\n");
    }
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

/* The subtitle's note on the x axis: the checkpoints' training steps and,
 * under them, the context captured (so that a bias falling with the
 * context is not read as training alone) in their units. */
#define CHECKPOINT_NOTE "steps in k\u00a0=\u00a01000, context (italics) in " \
    "K\u00a0=\u00a01024 tokens" /* no-break spaces: a wrapped subtitle keeps "k = 1000" whole */

int rotfig_draw_trajectory(fig_ctx *ctx, qk_err *err)
{
    static const bar_metric metrics[4] = {
        {"mean_abs_r_k_a", "p25_abs_r_k_a", "p75_abs_r_k_a", 1.0, 0, "|" QK_SYM_R_K "| on axis " QK_SYM_AXIS_A, NULL,
         "mean |r_k_a|", 1, NULL},
        {"mean_separation_strength", "p25_separation_strength", "p75_separation_strength", 1.0, 0,
         "Separation strength", NULL, "mean separation_strength", 0, NULL},
        {"mean_bias_strength", "p25_bias_strength", "p75_bias_strength", 1e3, 0,
         "Bias strength × 10^3, per token of key position", NULL,
         "mean bias_strength x1e3", 0, NULL, "Bias strength × 10^3 (per token)"},
        {"mean_plane_var_fraction", "p25_plane_var_fraction", "p75_plane_var_fraction", 1.0, 0,
         "Plane variance fraction", NULL, "mean plane_var_fraction", 0, NULL}};
    rot_table t;
    if (rotfig_load(ctx, "summary", &t) == 0) {
        rot_table_free(&t);
        return rotfig_empty(ctx, "summary", err);
    }
    int *phase = qk_calloc((size_t)t.n_models, sizeof *phase);
    char names[MAX_PHASES][48];
    qk_plot p;
    rotfig_begin(&p, 1600, fig_printing ? 1500 : 1250, 13); /* print: room under the axes */
    int n_phases = checkpoint_phases(&t, phase, names);
    fig_range range[4];
    char block[4][8];
    for (int i = 0; i < 4; i++) {
        snprintf(block[i], sizeof block[i], "b%d", i);
        range[i] = metric_range(&t, &metrics[i]);
        metric_blocks(&p, &t, &metrics[i], block[i], phase, n_phases, &range[i]);
    }
    char sub[400], heads[64];
    rotfig_heads_phrase(&t, "per checkpoint", heads, sizeof heads);
    snprintf(sub, sizeof sub, "bars: mean over the heads of each checkpoint (%s), whiskers: "
             "quartiles; " CHECKPOINT_NOTE, heads);
    double top = fig_multiplot_title(&p, "SmolLM3-3B: 2-D rotation metrics through training", sub,
                                     17);
    int print = fig_print(&p);
    double legend_y = print ? print_legend_y(&p, top, 13) : top - 0.025;
    qk_plot_printf(&p, "set boxwidth 0.78 absolute\n");
    rotfig_phase_legend(&p, names, n_phases, legend_y);
    rotfig_checkpoint_axis(&p, &t, phase, names, MAX_PHASES);
    if (print)
        print_checkpoint_tics(&p, &t);
    qk_plot_printf(&p, "set grid noxtics ytics\n");
    for (int i = 0; i < 4; i++) {
        if (print)
            print_grid_margins(&p, i, legend_y, 4.5, 13);
        else
            grid_margins(&p, i / 2, i % 2, 2, 2, 0.065, legend_y - 0.075, 0.085, 0.08, 0.15);
        metric_panel(&p, &t, &metrics[i], block[i], n_phases, names, &range[i], 0);
    }
    qk_plot_printf(&p, "unset multiplot\n");
    phase_keys(ctx, &t, phase, names);
    for (int i = 0; i < 4; i++)
        metric_keys(ctx, &t, &metrics[i]);
    free(phase);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 10: mu_Q^a, alpha_K, their product and the product over the window ------------------- */

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
    static const bar_metric metrics[4] = {
        {"mean_mu_q_a", NULL, NULL, 1.0, 0, QK_SYM_MU_Q_A " (Q cluster mean on axis " QK_SYM_AXIS_A ")",
         "Mean projection", "mean mu_q_a", 0, "Projection"},
        {"mean_abs_alpha_k", NULL, NULL, 1e3, 0,
         "|" QK_SYM_ALPHA_K "| × 10^3 (K drift slope per token)", "Slope × 10^3",
         "mean |alpha_k| x1e3", 0, NULL, "|" QK_SYM_ALPHA_K "| × 10^3 (per token)"},
        {"mean_bias_strength", NULL, NULL, 1e3, 0,
         "Bias = " QK_SYM_BIAS " × 10^3, per token", "Bias strength × 10^3",
         "mean bias_strength x1e3", 0, "Bias × 10^3", "Bias × 10^3 (per token)"},
        {"mean_bias_strength", NULL, NULL, 1.0, 1,
         "Bias × {/:Italic L}: over the whole context captured", "Bias × {/:Italic L}",
         "mean bias_strength x L", 0, NULL, "Bias × {/:Italic L} (whole context)"}};
    rot_table t;
    if (rotfig_load(ctx, "summary", &t) == 0) {
        rot_table_free(&t);
        return rotfig_empty(ctx, "summary", err);
    }
    int *phase = qk_calloc((size_t)t.n_models, sizeof *phase);
    char names[MAX_PHASES][48];
    qk_plot p;
    rotfig_begin(&p, 1600, fig_printing ? 1500 : 1250, 13); /* print: room under the axes */
    int n_phases = checkpoint_phases(&t, phase, names);
    fig_range range[4];
    char block[4][8];
    for (int i = 0; i < 4; i++) {
        snprintf(block[i], sizeof block[i], "d%d", i);
        range[i] = metric_range(&t, &metrics[i]);
        metric_blocks(&p, &t, &metrics[i], block[i], phase, n_phases, &range[i]);
    }
    char sub[400], heads[64];
    rotfig_heads_phrase(&t, "per checkpoint", heads, sizeof heads);
    snprintf(sub, sizeof sub, "means over the heads of each checkpoint (%s); L: the context "
             "captured; " CHECKPOINT_NOTE, heads);
    double top = fig_multiplot_title(&p, "SmolLM3-3B: bias strength decomposition", sub, 17);
    int print = fig_print(&p);
    double legend_y = print ? print_legend_y(&p, top, 13) : top - 0.025;
    qk_plot_printf(&p, "set boxwidth 0.78 absolute\n");
    rotfig_phase_legend(&p, names, n_phases, legend_y);
    rotfig_checkpoint_axis(&p, &t, phase, names, MAX_PHASES);
    if (print)
        print_checkpoint_tics(&p, &t);
    qk_plot_printf(&p, "set grid noxtics ytics\n");
    for (int i = 0; i < 4; i++) {
        if (print)
            print_grid_margins(&p, i, legend_y, 6.0, 13); /* room for the y labels */
        else
            grid_margins(&p, i / 2, i % 2, 2, 2, 0.065, legend_y - 0.075, 0.085, 0.08, 0.15);
        metric_panel(&p, &t, &metrics[i], block[i], n_phases, names, &range[i], 0);
    }
    qk_plot_printf(&p, "unset multiplot\n");
    phase_keys(ctx, &t, phase, names);
    for (int i = 0; i < 4; i++)
        metric_keys(ctx, &t, &metrics[i]);
    window_keys(ctx, &t);
    free(phase);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
