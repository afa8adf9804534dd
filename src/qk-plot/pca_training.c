/* The SmolLM3-3B training figures of the PCA study (figures 07-12): the
 * rows of the per-head table are grouped by checkpoint, in training order
 * (the registry order). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pca_fig.h"

/* ---- 07 / 09: means with a band of one standard deviation ------------------------ */

/* Writes $t: x, mean and sd of each quantity listed. */
static void trajectory_data(qk_plot *p, const pca_study *s, const int *which, int n_which,
                            double scale)
{
    qk_plot_data_begin(p, "t");
    for (int m = 0; m < s->n_models; m++) {
        qk_plot_printf(p, "%d", m);
        for (int w = 0; w < n_which; w++) {
            double mean, sd;
            pca_model_mean_sd(s, m, which[w], &mean, &sd);
            qk_plot_printf(p, " %.6f %.6f", scale * mean, scale * sd);
        }
        qk_plot_printf(p, "\n");
    }
    qk_plot_data_end(p);
}

static void trajectory_keys(fig_ctx *ctx, const pca_study *s, int which, const char *what)
{
    for (int m = 0; m < s->n_models; m++) {
        double mean, sd;
        pca_model_mean_sd(s, m, which, &mean, &sd);
        char name[128];
        snprintf(name, sizeof name, "%s, %s: mean (SD)", s->models[m].label, what);
        fig_key(ctx, name, "%.3f (%.3f)", mean, sd);
    }
}

/* The spread of the quantity in columns col (mean) and col + 1 (SD) of $t:
 * a band of one SD, or, with a single checkpoint, where a filled curve has
 * no width, an error bar of one SD, moved dx off the checkpoint so that
 * the bars of two quantities stand side by side. */
static void sd_series(qk_plot *p, int n_models, int col, double dx, const char *color,
                      const char *title)
{
    if (n_models > 1)
        qk_plot_printf(p, "$t using 1:($%d-$%d):($%d+$%d) with filledcurves fs transparent solid "
                          "0.15 noborder lc rgb '%s' title \"%s\"", col, col + 1, col, col + 1,
                       color, title);
    else
        qk_plot_printf(p, "$t using ($1%+.2f):%d:%d with yerrorbars pt 7 ps 0 lw 2 lc rgb '%s' "
                          "title \"%s\"", dx, col, col + 1, color, title);
}

/* The x of the means: beside their error bars with a single checkpoint. */
static const char *mean_x(int n_models, double dx, char *buf, size_t cap)
{
    if (n_models > 1)
        return "1";
    snprintf(buf, cap, "($1%+.2f)", dx);
    return buf;
}

/* The subtitle of figures 07 and 09. */
static void spread_subtitle(const pca_study *s, char *out, size_t cap)
{
    char heads[64];
    pca_heads_phrase(s, heads, sizeof heads);
    if (s->n_models > 1)
        snprintf(out, cap, "mean and band of one standard deviation over the heads of each "
                 "checkpoint (%s); " PCA_CHECKPOINT_UNITS, heads);
    else
        snprintf(out, cap, "mean and error bar of one standard deviation over the heads of the "
                 "checkpoint (%s); " PCA_CHECKPOINT_UNITS, heads);
}

/* Loads "heads" into s; on a table without heads renders the canvas and
 * returns 1 (*rc its status). */
static int load_or_canvas(fig_ctx *ctx, pca_study *s, int *rc, qk_err *err)
{
    if (pca_load_input(ctx, "heads", s) > 0)
        return 0;
    pca_study_free(s);
    *rc = pca_no_heads(ctx, "heads", err);
    return 1;
}

int pca_draw_training_signal(fig_ctx *ctx, qk_err *err)
{
    pca_study s;
    int rc;
    if (load_or_canvas(ctx, &s, &rc, err))
        return rc;
    if (!pca_any_value(&s, PCA_R_Q0) && !pca_any_value(&s, PCA_R_K0)) {
        pca_study_free(&s);
        return pca_no_values(ctx, "heads", "r_q0 or r_k0", err);
    }
    static const int which[] = {PCA_R_Q0, PCA_R_K0};
    double lo = -0.2;
    for (int m = 0; m < s.n_models; m++) {
        double mean, sd;
        pca_model_mean_sd(&s, m, PCA_R_K0, &mean, &sd);
        lo = fmin(lo, floor((mean - 0.1) * 10) / 10);
    }
    char heads[64];
    pca_heads_phrase(&s, heads, sizeof heads);
    qk_plot p;
    fig_begin(&p, 1781, 800, 16);
    trajectory_data(&p, &s, which, 2, 1);
    pca_checkpoint_axis(ctx, &p, &s);
    char sub[320], xq[16], xk[16];
    spread_subtitle(&s, sub, sizeof sub);
    double top = fig_title(&p, "SmolLM3-3B: position correlation on PC0 through training", sub, 19);
    top = fig_key_top(&p, 14, 4, 4, top);
    fig_axis_label(&p, "y", "Pearson " QK_SYM_PEARSON_R " with token position", NULL);
    qk_plot_printf(&p,
        "set tmargin at screen %.4f\n"
        "set yrange [%.1f:1.0]\nset ytics 0.2\nset format y \"%%.1f\"\n"
        "set grid noxtics ytics\n"
        "set arrow from graph 0, first 0 to graph 1, first 0 nohead back lw 1 lc rgb '%s'\n"
        "plot ", top - 0.05, lo, PCA_COLOR_ZERO);
    sd_series(&p, s.n_models, 2, -0.03, PCA_COLOR_Q, "±1 SD of " QK_SYM_R_Q);
    qk_plot_printf(&p, ", \\\n     ");
    sd_series(&p, s.n_models, 4, 0.03, PCA_COLOR_K, "±1 SD of " QK_SYM_R_K);
    qk_plot_printf(&p, ", \\\n"
        "     $t using %s:2 with linespoints pt 7 ps 1.5*qk_ps lw 2.5 lc rgb '%s' "
        "title \"mean " QK_SYM_R_Q " (PC0)\", \\\n"
        "     $t using %s:4 with linespoints pt 5 ps 1.4*qk_ps lw 2.5 lc rgb '%s' "
        "title \"mean " QK_SYM_R_K " (PC0)\"\n",
        mean_x(s.n_models, -0.03, xq, sizeof xq), PCA_COLOR_Q,
        mean_x(s.n_models, 0.03, xk, sizeof xk), PCA_COLOR_K);
    fig_key(ctx, "checkpoints", "%d", s.n_models);
    fig_key(ctx, "heads per checkpoint", "%s", heads);
    trajectory_keys(ctx, &s, PCA_R_Q0, "r_q (PC0)");
    trajectory_keys(ctx, &s, PCA_R_K0, "r_k (PC0)");
    pca_study_free(&s);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

int pca_draw_training_ev(fig_ctx *ctx, qk_err *err)
{
    pca_study s;
    int rc;
    if (load_or_canvas(ctx, &s, &rc, err))
        return rc;
    if (!pca_any_value(&s, PCA_EV0)) {
        pca_study_free(&s);
        return pca_no_values(ctx, "heads", "ev0", err);
    }
    static const int which[] = {PCA_EV0};
    char heads[64];
    pca_heads_phrase(&s, heads, sizeof heads);
    qk_plot p;
    fig_begin(&p, 1781, 800, 16);
    trajectory_data(&p, &s, which, 1, 100); /* in percent */
    pca_checkpoint_axis(ctx, &p, &s);
    char sub[320];
    spread_subtitle(&s, sub, sizeof sub);
    double top = fig_title(&p, "SmolLM3-3B: PC0 explained variance through training", sub, 19);
    top = fig_key_top(&p, 14, 2, 2, top);
    /* the print canvas is lower in font units: a shorter label */
    const char *ylabel = fig_print(&p) ? "PC0 explained variance (%)\n{/*0.8 mean share of Q+K}"
                                       : "mean explained variance of PC0 (%)\n{/*0.8 share "
                                         "of the pooled Q+K variance}";
    /* (clear of the tick labels as the SVG's wider text draws them) */
    fig_axis_label(&p, "y", ylabel, fig_print(&p) ? NULL : "offset -1,0");
    qk_plot_printf(&p,
        "set tmargin at screen %.4f\n"
        "set format y \"%%.0f\"\nset grid noxtics ytics\nplot ", top - 0.05);
    sd_series(&p, s.n_models, 2, 0, PCA_COLOR_EV, "±1 SD");
    qk_plot_printf(&p, ", \\\n"
        "     $t using 1:2 with linespoints pt 7 ps 1.5*qk_ps lw 2.5 lc rgb '%s' "
        "title \"mean explained variance of PC0\"\n", PCA_COLOR_EV);
    fig_key(ctx, "checkpoints", "%d", s.n_models);
    fig_key(ctx, "heads per checkpoint", "%s", heads);
    trajectory_keys(ctx, &s, PCA_EV0, "PC0 explained variance");
    pca_study_free(&s);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 08: taxonomy shares ---------------------------------------------------------- */

/* The legend text of a category with its rule. */
static void category_rule(int c, double low, double high, char *out, size_t cap)
{
    const char *rq = QK_SYM_R_Q, *rk = "|" QK_SYM_R_K "|";
    switch (c) {
    case PCA_POS_DOM:
        snprintf(out, cap, "position-dominated (%s > %g, %s > %g)", rq, high, rk, high);
        break;
    case PCA_Q_POS: snprintf(out, cap, "Q-positional (%s > %g, %s < %g)", rq, high, rk, low); break;
    case PCA_K_POS: snprintf(out, cap, "K-positional (%s < %g, %s > %g)", rq, low, rk, high); break;
    case PCA_CONTENT:
        snprintf(out, cap, "content-focused (%s < %g, %s < %g)", rq, low, rk, low);
        break;
    default: snprintf(out, cap, "mixed (all other heads)"); break;
    }
}

/* $shares: x, then for each category the bottom and top of its segment,
 * then the label position and text of each segment of at least 5%. */
static void taxonomy_data(qk_plot *p, const pca_study *s)
{
    qk_plot_data_begin(p, "shares");
    for (int m = 0; m < s->n_models; m++) {
        int cat[PCA_N_CAT];
        pca_model_categories(s, m, cat);
        double bottom = 0;
        qk_plot_printf(p, "%d", m);
        for (int c = 0; c < PCA_N_CAT; c++) {
            double share = (double)cat[c] / s->models[m].n_heads;
            qk_plot_printf(p, " %.6f %.6f", 100 * bottom, 100 * (bottom + share)); /* in % */
            bottom += share;
        }
        qk_plot_printf(p, "\n");
    }
    qk_plot_data_end(p);
    qk_plot_data_begin(p, "labels");
    for (int m = 0; m < s->n_models; m++) {
        int cat[PCA_N_CAT];
        pca_model_categories(s, m, cat);
        double bottom = 0;
        for (int c = 0; c < PCA_N_CAT; c++) {
            double share = (double)cat[c] / s->models[m].n_heads;
            char pct[32];
            if (share >= 0.05)
                qk_plot_printf(p, "%d %.6f \"%s\" %d\n", m, 100 * (bottom + share / 2),
                               qk_plot_percent(pct, sizeof pct, 100 * share, 1),
                               c == PCA_POS_DOM ? 0xffffff : 0);
            bottom += share;
        }
    }
    qk_plot_printf(p, "NaN NaN \"\" 0\n");
    qk_plot_data_end(p);
}

int pca_draw_training_taxonomy(fig_ctx *ctx, qk_err *err)
{
    pca_study s;
    int rc;
    if (load_or_canvas(ctx, &s, &rc, err))
        return rc;
    pca_study_need_category(&s);
    double high, low;
    pca_thresholds(ctx, &high, &low);
    char heads[64];
    pca_heads_phrase(&s, heads, sizeof heads);
    qk_plot p;
    fig_begin(&p, 1780, fig_printing ? 1250 : 878, 16); /* print: room for the key below */
    taxonomy_data(&p, &s);
    pca_checkpoint_axis(ctx, &p, &s);
    char sub[320];
    snprintf(sub, sizeof sub, "share of the heads of each checkpoint in each category (%s); "
             "printed from 5 %%; " PCA_CHECKPOINT_UNITS, heads);
    double top = fig_title(&p, "SmolLM3-3B: head taxonomy (PC0) through training", sub, 19);
    fig_axis_label(&p, "y", "share of heads (%)", NULL);
    const char *axes = "set yrange [0:100]\nset ytics 20\nset format y \"%.0f\"\nunset grid\n";
    if (fig_print(&p)) {
        /* print: the plot across the page, the key under the checkpoint
         * labels (two lines of 16 points) and their context (fig_context_groups) */
        double px = 1.0 / p.height, key_y = (20 + PCA_N_CAT * 2.0 * 14) * px;
        qk_plot_printf(&p,
            "set tmargin at screen %.4f\nset lmargin at screen 0.11\nset rmargin at screen 0.98\n"
            "set bmargin at screen %.4f\n%s"
            "set key at screen 0.5, screen %.4f center top vertical font \",14\" "
            "samplen 1.5 spacing 1.3 reverse Left box lc rgb '#cccccc'\n",
            top - 0.05, key_y + 5.8 * 16 * px, axes, key_y);
    } else {
        qk_plot_printf(&p,
            "set tmargin at screen %.4f\nset lmargin at screen 0.06\nset rmargin at screen 0.64\n"
            "%sset key at screen 0.655, graph 1 top left vertical font \",14\" samplen 1.5 "
            "spacing 1.3 reverse Left box lc rgb '#cccccc'\n", top - 0.05, axes);
    }
    qk_plot_printf(&p, "plot ");
    for (int c = 0; c < PCA_N_CAT; c++) {
        char rule[160];
        category_rule(c, low, high, rule, sizeof rule);
        qk_plot_printf(&p, "%s$shares using 1:(($%d+$%d)/2):(0.35):(($%d-$%d)/2) with boxxyerror "
                           "fs solid 1.0 noborder lc rgb '%s' title ",
                       c ? ", \\\n     " : "", 2 + 2 * c, 3 + 2 * c, 3 + 2 * c, 2 + 2 * c,
                       pca_category_colors[c]);
        qk_plot_quoted(&p, rule);
    }
    qk_plot_printf(&p, ", \\\n     $labels using 1:2:3:4 with labels tc rgb variable "
                       "font \",12\" notitle\n");
    fig_key(ctx, "checkpoints", "%d", s.n_models);
    fig_key(ctx, "heads per checkpoint", "%s", heads);
    fig_key(ctx, "thresholds (low, high)", "%g, %g", low, high);
    for (int m = 0; m < s.n_models; m++) {
        int cat[PCA_N_CAT];
        pca_model_categories(&s, m, cat);
        char name[128], value[160] = "";
        snprintf(name, sizeof name, "%s: position-dominated / Q-pos / K-pos / content / mixed",
                 s.models[m].label);
        for (int c = 0; c < PCA_N_CAT; c++) {
            size_t used = strlen(value);
            snprintf(value + used, sizeof value - used, "%s%.1f%%", c ? " / " : "",
                     100.0 * cat[c] / s.models[m].n_heads);
        }
        fig_key(ctx, name, "%s", value);
    }
    pca_study_free(&s);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 10 / 11: depth heatmaps per checkpoint --------------------------------------- */

int pca_draw_training_heatmap_rq(fig_ctx *ctx, qk_err *err)
{
    return pca_depth_heatmap_figure(
        ctx, 1670, 733, PCA_R_Q0,
        "SmolLM3-3B: mean " QK_SYM_R_Q " (PC0) by layer depth through training", 1, err);
}

int pca_draw_training_heatmap_rk(fig_ctx *ctx, qk_err *err)
{
    return pca_depth_heatmap_figure(
        ctx, 1670, 733, PCA_R_K0,
        "SmolLM3-3B: mean " QK_SYM_R_K " (PC0) by layer depth through training", 1, err);
}

/* ---- 12: scatter grid -------------------------------------------------------------- */

/* The checkpoints shown: with the ten SmolLM3 checkpoints those of the
 * thesis (the first two, the ends of stage 1 and stage 3, the ends of the
 * two long-context phases); otherwise up to six evenly spaced ones. */
static int select_checkpoints(int n, int *pick)
{
    static const int thesis[] = {0, 1, 3, 5, 7, 9};
    if (n == 10) {
        memcpy(pick, thesis, sizeof thesis);
        return 6;
    }
    if (n <= 6) {
        for (int i = 0; i < n; i++)
            pick[i] = i;
        return n;
    }
    for (int i = 0; i < 6; i++)
        pick[i] = (int)lround(i * (n - 1) / 5.0);
    return 6;
}

/* The frame of a panel of the grid below the title block (top). On
 * screen fixed shares of the canvas: panels between 0.05 and 0.99 of the
 * width, 0.06 and 0.92 of the height. In print, where the canvas is
 * smaller in font units, the room for the tick labels, axis labels and
 * panel titles in characters (ch) of font_pt points. */
static void grid_frame(qk_plot *p, int row, int col, int rows, int cols, double top, int font_pt)
{
    if (!fig_print(p)) {
        double w = 0.94 / cols, h = 0.86 / rows;
        double x0 = 0.05 + col * w, y0 = 0.06 + (rows - 1 - row) * h;
        qk_plot_printf(p, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n"
                          "set bmargin at screen %.4f\nset tmargin at screen %.4f\n",
                       x0 + 0.035, x0 + w - 0.012, y0 + 0.05, y0 + h - 0.045);
        return;
    }
    double chx = (double)font_pt / p->width, chy = (double)font_pt / p->height;
    double left = 3.5 * chx, bottom = 2.6 * chy;
    double w = (1 - left) / cols, h = (top - bottom) / rows;
    double x0 = left + col * w, y0 = bottom + (rows - 1 - row) * h;
    qk_plot_printf(p, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n"
                      "set bmargin at screen %.4f\nset tmargin at screen %.4f\n",
                   x0 + 4.6 * chx, x0 + w - 1.2 * chx, y0 + 3.0 * chy, y0 + h - 3.4 * chy);
}

static void grid_panel(qk_plot *p, const pca_study *s, int m, int slot, int n_slots,
                       double low, double high, double top, double context)
{
    int cols = n_slots < 3 ? n_slots : 3, rows = (n_slots + cols - 1) / cols;
    int row = slot / cols, col = slot % cols;
    const pca_model *md = &s->models[m];
    grid_frame(p, row, col, rows, cols, top, 16);
    qk_plot_printf(p, "unset arrow\nset title ");
    char title[256], checkpoint[160], tokens[32] = "";
    fig_checkpoint_label(md->label, " ", checkpoint, sizeof checkpoint);
    if (isfinite(context))
        fig_tokens(context, tokens, sizeof tokens);
    snprintf(title, sizeof title, "%s%s%s%s (n = %d)", checkpoint, *tokens ? ", " : "", tokens,
             *tokens ? " context" : "", md->n_heads);
    fig_text(p, title);
    qk_plot_printf(p, " font \",17\"\nset format x \"%%.1f\"\n");
    if (row == rows - 1 || slot + cols >= n_slots)
        fig_axis_label(p, "x", QK_SYM_R_Q " (PC0)", NULL);
    else
        qk_plot_printf(p, "unset xlabel\n");
    if (col == 0)
        fig_axis_label(p, "y", QK_SYM_R_K " (PC0)", NULL);
    else
        qk_plot_printf(p, "unset ylabel\n");
    pca_threshold_lines(p, low, high);
    /* a point a head (not a query): SmolLM3's family colour, black */
    qk_plot_printf(p, "plot $c%d using 1:2 with points pt 7 ps 1.1*qk_ps lc rgb '#80%s' notitle\n",
                   slot, FIG_BLACK + 1);
}

int pca_draw_training_scatter(fig_ctx *ctx, qk_err *err)
{
    pca_study s;
    int rc;
    if (load_or_canvas(ctx, &s, &rc, err))
        return rc;
    double high, low;
    pca_thresholds(ctx, &high, &low);
    int pick[10];
    int n = select_checkpoints(s.n_models, pick);
    qk_plot p;
    fig_begin(&p, 2232, fig_printing ? 1700 : 1330, 16); /* print: taller panels */
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "c%d", i);
        qk_plot_data_begin(&p, name);
        const pca_model *md = &s.models[pick[i]];
        for (int h = md->first_head; h < md->first_head + md->n_heads; h++)
            qk_plot_printf(&p, "%.6f %.6f\n", s.heads[h].r_q0, s.heads[h].r_k0);
        qk_plot_data_end(&p);
    }
    char sub[384];
    snprintf(sub, sizeof sub, "one point per head (n in each panel title); dashed lines: the "
             "taxonomy thresholds %g and %g of " QK_SYM_R_Q " and |" QK_SYM_R_K "|; %d of %d "
             "checkpoints; steps in k = 1000, context in K = 1024 tokens", low, high, n,
             s.n_models);
    double top = fig_multiplot_title(&p, "SmolLM3-3B: " QK_SYM_R_Q " against " QK_SYM_R_K
                                     " (PC0) at selected checkpoints", sub, 20);
    qk_plot_printf(&p,
        "set xrange [-0.05:1.05]\nset yrange [-1.05:1.05]\nset xtics %s\nset ytics 0.5\n"
        "set format y \"%%.2f\"\nunset grid\nunset key\n",
        fig_print(&p) ? "0.5" : "0.2"); /* print: narrower panels in font units */
    double *context = pca_contexts(ctx, &s);
    for (int i = 0; i < n; i++)
        grid_panel(&p, &s, pick[i], i, n, low, high, top, context[pick[i]]);
    free(context);
    qk_plot_printf(&p, "unset multiplot\n");
    fig_key(ctx, "thresholds (low, high)", "%g, %g", low, high);
    for (int i = 0; i < n; i++) {
        const pca_model *md = &s.models[pick[i]];
        double mq, sq, mk, sk;
        pca_model_mean_sd(&s, pick[i], PCA_R_Q0, &mq, &sq);
        pca_model_mean_sd(&s, pick[i], PCA_R_K0, &mk, &sk);
        int discordant = 0;
        for (int h = md->first_head; h < md->first_head + md->n_heads; h++)
            discordant += s.heads[h].r_k0 < -low;
        char name[128];
        snprintf(name, sizeof name, "%s: heads, mean r_q, mean r_k, heads with r_k < -%g",
                 md->label, low);
        fig_key(ctx, name, "%d, %.3f, %.3f, %d", md->n_heads, mq, mk, discordant);
    }
    pca_study_free(&s);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
