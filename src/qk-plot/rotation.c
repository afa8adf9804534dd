/* Figures of the planar rotation study (figures/qk-rotation). The per-model
 * bar charts 02, 03 and 05 are here; the per-head figures 04, 06 and 07 in
 * rotation_heads.c, the point clouds 01 and 08 in rotation_collage.c and the
 * SmolLM3-3B figures 09 and 10 in rotation_training.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rotation_fig.h"

/* Heads of a per-model table: the sum of n_heads. */
static double total_heads(const rot_table *t)
{
    double n = 0;
    for (int m = 0; m < t->n_models; m++)
        n += rotfig_model_value(t, m, "n_heads");
    return n;
}

/* Mean of a per-model column over the models, and over the heads (each
 * model weighted by its n_heads). */
static void model_and_head_means(const rot_table *t, const char *column, double *over_models,
                                 double *over_heads)
{
    double sum = 0, weighted = 0, heads = 0;
    for (int m = 0; m < t->n_models; m++) {
        double v = rotfig_model_value(t, m, column), n = rotfig_model_value(t, m, "n_heads");
        sum += v;
        weighted += n * v;
        heads += n;
    }
    *over_models = sum / t->n_models;
    *over_heads = heads > 0 ? weighted / heads : NAN;
}

/* ---- 02: |r_q| and |r_k| on axis a ------------------------------------------------- */

int rotfig_draw_drift_bars(fig_ctx *ctx, qk_err *err)
{
    rot_table t;
    if (rotfig_load(ctx, "summary", &t) == 0) {
        rot_table_free(&t);
        return rotfig_empty(ctx, "summary", err);
    }
    qk_plot p;
    rotfig_begin(&p, 1500, 760, 14);
    qk_plot_data_begin(&p, "r");
    int k_wins = 0;
    for (int m = 0; m < t.n_models; m++) {
        double rq = rotfig_model_value(&t, m, "mean_abs_r_q_a");
        double rk = rotfig_model_value(&t, m, "mean_abs_r_k_a");
        qk_plot_printf(&p, "%d %.6f %.6f\n", m, rq, rk);
        k_wins += rk > rq;
        char name[128];
        snprintf(name, sizeof name, "%s: mean |r_q_a|, |r_k_a| (heads)", t.models[m].label);
        fig_key(ctx, name, "%.3f, %.3f (%.0f)", rq, rk, rotfig_model_value(&t, m, "n_heads"));
    }
    qk_plot_data_end(&p);
    rotfig_model_axis(&p, &t, ",13");
    char sub[256], heads[64];
    rotfig_heads_phrase(&t, "per model", heads, sizeof heads);
    snprintf(sub, sizeof sub, "mean over the heads of each model (%s) of |Pearson " QK_SYM_PEARSON_R "| between the "
             "projection on a and token position, queries and keys separately", heads);
    double top = fig_title(&p, "Q against K position correlation on the drift axis a", sub, 17);
    top = fig_key_top(&p, 13, 2, 2, top);
    /* room for the family names above the plot */
    qk_plot_printf(&p, "set tmargin at screen %.4f\n", top - rotfig_family_room(&p, 13));
    /* in print, where the plot is lower in font units, on two lines */
    fig_axis_label(&p, "y", fig_print(&p) ? "Mean |Pearson " QK_SYM_PEARSON_R "|\n{/*0.85 with "
                   "position}" : "Mean |Pearson " QK_SYM_PEARSON_R "| with position", NULL);
    qk_plot_printf(&p,
        "set yrange [0:1]\nset ytics 0, 0.2, 1\nset format y \"%%.1f\"\n"
        "set grid noxtics ytics\n"
        "set arrow from graph 0, first 0.3 to graph 1, first 0.3 nohead back dt 2 lw 1.2 lc rgb '%s'\n"
        "set arrow from graph 0, first 0.7 to graph 1, first 0.7 nohead back dt 2 lw 1.2 lc rgb '%s'\n"
        "set boxwidth 0.36 absolute\n"
        "plot $r using ($1-0.18):2 with boxes fs solid 1.0 border lc rgb 'white' "
        "lc rgb '%s' title \"|" QK_SYM_R_Q "| on axis " QK_SYM_AXIS_A " (queries)\", \\\n"
        "     $r using ($1+0.18):3 with boxes fs solid 1.0 border lc rgb 'white' "
        "lc rgb '%s' title \"|" QK_SYM_R_K "| on axis " QK_SYM_AXIS_A " (keys)\"\n",
        ROTFIG_REF, ROTFIG_REF, ROTFIG_Q, ROTFIG_K);
    double q_models, q_heads, k_models, k_heads;
    model_and_head_means(&t, "mean_abs_r_q_a", &q_models, &q_heads);
    model_and_head_means(&t, "mean_abs_r_k_a", &k_models, &k_heads);
    fig_key(ctx, "models", "%d", t.n_models);
    fig_key(ctx, "heads", "%.0f", total_heads(&t));
    fig_key(ctx, "mean |r_q_a| over heads (over model means)", "%.3f (%.3f)", q_heads, q_models);
    fig_key(ctx, "mean |r_k_a| over heads (over model means)", "%.3f (%.3f)", k_heads, k_models);
    fig_key(ctx, "models with mean |r_k_a| > mean |r_q_a|", "%d of %d", k_wins, t.n_models);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 03: variance on a, on b and in the complement ---------------------------------- */

int rotfig_draw_variance(fig_ctx *ctx, qk_err *err)
{
    rot_table t;
    if (rotfig_load(ctx, "summary", &t) == 0) {
        rot_table_free(&t);
        return rotfig_empty(ctx, "summary", err);
    }
    qk_plot p;
    rotfig_begin(&p, 1500, 760, 14);
    qk_plot_data_begin(&p, "v");
    for (int m = 0; m < t.n_models; m++) {
        double a = rotfig_model_value(&t, m, "mean_var_frac_a");
        double b = rotfig_model_value(&t, m, "mean_var_frac_b");
        double plane = rotfig_model_value(&t, m, "mean_plane_var_fraction");
        qk_plot_printf(&p, "%d %.6f %.6f %.6f \"%.2f\"\n", m, a, a + b, plane, plane);
        char name[128];
        snprintf(name, sizeof name, "%s: mean var_frac_a, var_frac_b, plane", t.models[m].label);
        fig_key(ctx, name, "%.3f, %.3f, %.3f", a, b, plane);
    }
    qk_plot_data_end(&p);
    rotfig_model_axis(&p, &t, ",13");
    char sub[256], heads[64];
    rotfig_heads_phrase(&t, "per model", heads, sizeof heads);
    snprintf(sub, sizeof sub, "mean share of the pooled Q+K variance of the heads of each model "
             "(%s); number above a bar = a + b", heads);
    double top = fig_title(&p, "Variance decomposition: the 2-D \\{a, b\\} plane against its "
                           "complement", sub, 17);
    /* the key across the figure above the plot, in one row (right of the
     * plot it ran off a canvas shown at the page's width) */
    int print = fig_print(&p);
    top = fig_key_top(&p, 12, 3, 3, top);
    qk_plot_printf(&p, "set tmargin at screen %.4f\n", top - rotfig_family_room(&p, 13));
    fig_axis_label(&p, "y", "Fraction of total variance", NULL);
    qk_plot_printf(&p,
        "set yrange [0:1.05]\nset ytics 0.2\nset format y \"%%.1f\"\nset grid noxtics ytics\n"
        "plot $v using 1:($2/2):(0.4):($2/2) with boxxyerror fs solid 1.0 border lc rgb 'white' "
        "lc rgb '%s' title \"axis a (drift)\", \\\n"
        "     $v using 1:(($2+$3)/2):(0.4):(($3-$2)/2) with boxxyerror fs solid 1.0 border "
        "lc rgb 'white' lc rgb '%s' title \"axis b (separation)\", \\\n"
        "     $v using 1:((1+$3)/2):(0.4):((1-$3)/2) with boxxyerror fs solid 1.0 border "
        "lc rgb 'white' lc rgb '%s' title \"complement ({/:Italic d} − 2)\", \\\n"
        "     $v using 1:%s:5 with labels%s font \",11\" notitle\n",
        ROTFIG_AXIS_A, ROTFIG_AXIS_B, ROTFIG_COMPLEMENT, print ? "3" : "($3+0.025)",
        print ? " offset 0, 0.6" : "");
    double over_models, over_heads;
    model_and_head_means(&t, "mean_plane_var_fraction", &over_models, &over_heads);
    fig_key(ctx, "models", "%d", t.n_models);
    fig_key(ctx, "mean plane_var_fraction over heads (over model means)", "%.3f (%.3f)",
            over_heads, over_models);
    double lo = INFINITY, hi = -INFINITY;
    for (int m = 0; m < t.n_models; m++) {
        double v = rotfig_model_value(&t, m, "mean_plane_var_fraction");
        lo = fmin(lo, v), hi = fmax(hi, v);
    }
    fig_key(ctx, "model means of plane_var_fraction, range", "%.3f to %.3f", lo, hi);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 05: median slope ratio ------------------------------------------------------------ */

int rotfig_draw_slope_ratio(fig_ctx *ctx, qk_err *err)
{
    rot_table t, h;
    if (rotfig_load(ctx, "summary", &t) == 0) {
        rot_table_free(&t);
        return rotfig_empty(ctx, "summary", err);
    }
    rotfig_load(ctx, "heads", &h);
    double *ratio = qk_src_values(&h.src, "slope_ratio");
    double *median = qk_malloc((size_t)t.n_models * sizeof *median);
    for (int m = 0; m < t.n_models; m++)
        median[m] = rotfig_model_value(&t, m, "median_slope_ratio");
    fig_range r = fig_robust_range(median, t.n_models);
    fig_range_include(&r, 0, median, t.n_models);
    fig_range_include(&r, 1, median, t.n_models);
    qk_plot p;
    rotfig_begin(&p, 1500, 760, 14);
    for (int f = 0; f < t.n_families; f++) {
        char name[16];
        snprintf(name, sizeof name, "f%d", f);
        qk_plot_data_begin(&p, name);
        for (int m = 0; m < t.n_models; m++) {
            if (t.family_of[m] != f)
                continue;
            int side;
            double v = fig_clip(&r, median[m], &side);
            char text[32];
            fig_fmt(text, sizeof text, "%s%.2f", side > 0 ? "▲ " : "", median[m]);
            qk_plot_printf(&p, "%d %.6f \"%s\"\n", m, v, isfinite(median[m]) ? text : "n/a");
        }
        qk_plot_printf(&p, "NaN NaN \"\"\n");
        qk_plot_data_end(&p);
    }
    rotfig_model_axis(&p, &t, ",13");
    char sub[256], heads[64];
    rotfig_heads_phrase(&t, "per model", heads, sizeof heads);
    snprintf(sub, sizeof sub, "median over the heads of each model (%s) of |" QK_SYM_ALPHA_K "| / |"
             QK_SYM_ALPHA_Q "|, the "
             "per-token slopes of the key and query projections on a", heads);
    fig_title(&p, "K-to-Q drift slope ratio (> 1: the keys drift faster along a)", sub, 17);
    qk_plot_printf(&p, "set title offset 0,1.4\n"); /* above the family names */
    fig_axis_label(&p, "y", "Median |" QK_SYM_ALPHA_K "| / |" QK_SYM_ALPHA_Q "|", NULL);
    qk_plot_printf(&p,
        "set tmargin 6\n"
        "set yrange [0:%.3f]\nset grid noxtics ytics\nunset key\n"
        "set arrow from graph 0, first 1 to graph 1, first 1 nohead back dt 2 lw 1.5 lc rgb '%s'\n"
        "set boxwidth 0.75 absolute\n",
        1.14 * r.hi, ROTFIG_REF);
    fig_offscale_labels(&p, &r, "%.2f", 1, 12);
    qk_plot_printf(&p, "plot ");
    for (int f = 0; f < t.n_families; f++) {
        qk_plot_printf(&p, "%s$f%d using 1:2 with boxes fs solid 1.0 border lc rgb 'white' "
                           "lc rgb '%s' notitle", f ? ", \\\n     " : "", f,
                       rotfig_family_color(ctx, &t, f));
        /* the values on an opaque ground, so that the line at 1 does not cross them */
        qk_plot_printf(&p, ", \\\n     $f%d using 1:2:3 with labels offset 0,0.8 boxed font \",11\" "
                           "notitle", f);
    }
    qk_plot_printf(&p, "\n");
    for (int m = 0; m < t.n_models; m++) {
        char name[128];
        snprintf(name, sizeof name, "%s: median |alpha_k| / |alpha_q|", t.models[m].label);
        fig_key(ctx, name, "%.2f", median[m]);
    }
    fig_key(ctx, "models above the drawn scale", "%d", r.above);
    rot_rows all = rot_rows_all(&h);
    fig_key(ctx, "median over all heads", "%.2f (%d heads)", rot_quantile(ratio, &all, 0.5, 0),
            rot_count_defined(ratio, &all));
    rot_rows_free(&all);
    for (int f = 0; f < h.n_families; f++) {
        char name[64], key[128];
        rot_family_name(&h, f, name, sizeof name);
        rot_rows rows = rot_rows_family(&h, f);
        snprintf(key, sizeof key, "median over the heads of %s", name);
        fig_key(ctx, key, "%.2f", rot_quantile(ratio, &rows, 0.5, 0));
        rot_rows_free(&rows);
    }
    free(median);
    free(ratio);
    rot_table_free(&h);
    rot_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
