/* Figures of the combined QK PCA study (figures/qk-pca): the cross-model
 * figures 01-05 are here, the collage 06 in pca_collage.c and the SmolLM3
 * training figures 07-12 in pca_training.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pca_fig.h"
#include "qk/die.h"
#include "qk/stats.h"

/* Distinct values of the model column of a table. */
static int count_models(const qk_src *t)
{
    int c = qk_src_col(t, "model"), n = 0;
    const char **seen = qk_calloc((size_t)(t->t->n_rows ? t->t->n_rows : 1), sizeof *seen);
    for (int r = 0; r < t->t->n_rows; r++) {
        const char *id = qk_table_cell(t->t, r, c);
        int known = 0;
        for (int i = n - 1; i >= 0 && !known; i--) /* rows come grouped by model */
            known = strcmp(seen[i], id) == 0;
        if (!known)
            seen[n++] = id;
    }
    free(seen);
    return n;
}

/* Number of heads: every head has one row per component, so the rows of
 * PC0; dies if the components do not all have that many rows. */
static int heads_of(const qk_src *qk, const int n[PCA_N_PC])
{
    if (n[0] == 0)
        qk_die(QK_EXIT_DATA, qk->path, "no rows with pc = 0");
    for (int i = 1; i < PCA_N_PC; i++)
        if (n[i] != n[0])
            qk_die(QK_EXIT_DATA, qk->path, "%d rows with pc = %d but %d with pc = 0", n[i], i,
                   n[0]);
    return n[0];
}

static void pc_xaxis(qk_plot *p)
{
    qk_plot_printf(p, "set xtics scale 0 (");
    for (int i = 0; i < PCA_N_PC; i++)
        qk_plot_printf(p, "\"PC%d\" %d%s", i, i, i + 1 < PCA_N_PC ? ", " : ")\n");
    qk_plot_printf(p, "set xrange [-0.6:%d.6]\nset grid noxtics ytics\n", PCA_N_PC - 1);
    fig_axis_label(p, "x", "principal component of the pooled query + key cloud (by decreasing "
                   "variance)", NULL);
}

/* ---- 01: mean r_q and r_k by component ------------------------------------------ */

/* The table qk holds no component rows: the canvas. */
static int no_components(fig_ctx *ctx, const qk_src *qk, qk_err *err)
{
    return fig_not_drawn(ctx, err, "The table %s holds no head.", qk->path);
}

/* The canvas for a table qk whose heads have no finite what. */
static int no_component_values(fig_ctx *ctx, const qk_src *qk, const char *what, qk_err *err)
{
    return fig_not_drawn(ctx, err, "The table %s holds no head with a finite %s (a head "
                         "without spread has none).", qk->path, what);
}

int pca_draw_pc_roles(fig_ctx *ctx, qk_err *err)
{
    qk_src qk = fig_src(ctx, "qk");
    if (qk.t->n_rows == 0)
        return no_components(ctx, &qk, err);
    double rq[PCA_N_PC], rk[PCA_N_PC], ev[PCA_N_PC];
    int n[PCA_N_PC];
    pca_component_means(&qk, rq, rk, ev, n);
    int heads = heads_of(&qk, n), models = count_models(&qk);
    if (isnan(qk_mean(rq, PCA_N_PC)) && isnan(qk_mean(rk, PCA_N_PC)))
        return no_component_values(ctx, &qk, "r_q or r_k", err);
    double lo = -0.1;
    for (int i = 0; i < PCA_N_PC; i++)
        lo = fmin(lo, fmin(rq[i], rk[i]) - 0.06);
    qk_plot p;
    fig_begin(&p, 1481, 760, 16);
    qk_plot_data_begin(&p, "pcs");
    for (int i = 0; i < PCA_N_PC; i++) {
        char tq[32], tk[32];
        qk_plot_printf(&p, "%d %.6f %.6f %.6f %.6f \"%s\" \"%s\"\n", i, rq[i], rk[i],
                       rq[i] >= 0 ? rq[i] + 0.025 : rq[i] - 0.03,
                       rk[i] >= 0 ? rk[i] + 0.025 : rk[i] - 0.03,
                       fig_fmt(tq, sizeof tq, "%.2f", rq[i]), fig_fmt(tk, sizeof tk, "%.2f", rk[i]));
    }
    qk_plot_data_end(&p);
    pc_xaxis(&p);
    char sub[160];
    snprintf(sub, sizeof sub, "mean over n = %d heads of %d model%s; signs canonical "
             "(" QK_SYM_R_Q " ≥ 0)", heads, models, models == 1 ? "" : "s");
    double top = fig_title(&p, "Combined QK PCA: position correlation by principal component", sub,
                           19);
    top = fig_key_top(&p, 15, 2, 2, top);
    fig_axis_label(&p, "y", "mean Pearson {/:Italic r} with token position", NULL);
    qk_plot_printf(&p,
        "set tmargin at screen %.4f\n"
        "set yrange [%.2f:1.0]\nset ytics 0.2\nset format y \"%%.1f\"\n"
        "set boxwidth 0.35 absolute\nset style fill solid 0.9 noborder\n"
        "set arrow from graph 0, first 0 to graph 1, first 0 nohead front lw 1 lc rgb '%s'\n"
        "plot $pcs using ($1-0.175):2 with boxes lc rgb '%s' title \"" QK_SYM_R_Q "  (queries)\", \\\n"
        "     $pcs using ($1+0.175):3 with boxes lc rgb '%s' title \"" QK_SYM_R_K "  (keys)\", \\\n"
        "     $pcs using ($1-0.175):4:6 with labels font \",12\" notitle, \\\n"
        "     $pcs using ($1+0.175):5:7 with labels font \",12\" notitle\n",
        top - 0.01, lo, PCA_COLOR_ZERO, PCA_COLOR_Q, PCA_COLOR_K);
    fig_key(ctx, "heads", "%d", heads);
    fig_key(ctx, "models", "%d", models);
    for (int i = 0; i < PCA_N_PC; i++) {
        char name[48];
        snprintf(name, sizeof name, "mean r_q, PC%d", i);
        fig_key(ctx, name, "%.3f", rq[i]);
    }
    for (int i = 0; i < PCA_N_PC; i++) {
        char name[48];
        snprintf(name, sizeof name, "mean r_k, PC%d", i);
        fig_key(ctx, name, "%.3f", rk[i]);
    }
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 05: mean explained variance by component ---------------------------------- */

int pca_draw_explained_variance(fig_ctx *ctx, qk_err *err)
{
    qk_src qk = fig_src(ctx, "qk");
    if (qk.t->n_rows == 0)
        return no_components(ctx, &qk, err);
    double rq[PCA_N_PC], rk[PCA_N_PC], ev[PCA_N_PC];
    int n[PCA_N_PC];
    pca_component_means(&qk, rq, rk, ev, n);
    int heads = heads_of(&qk, n), models = count_models(&qk);
    if (isnan(qk_mean(ev, PCA_N_PC)))
        return no_component_values(ctx, &qk, "explained_variance", err);
    double top = 0, total = 0;
    for (int i = 0; i < PCA_N_PC; i++) {
        top = fmax(top, ev[i]);
        total += ev[i];
    }
    qk_plot p;
    fig_begin(&p, 1481, 731, 16);
    /* the axis in percent, as the bars' labels */
    qk_plot_data_begin(&p, "pcs");
    for (int i = 0; i < PCA_N_PC; i++) {
        char pct[32];
        qk_plot_printf(&p, "%d %.6f %.6f \"%s\"\n", i, 100 * ev[i], 100 * (ev[i] + 0.012 * top),
                       qk_plot_percent(pct, sizeof pct, 100 * ev[i], 1));
    }
    qk_plot_data_end(&p);
    pc_xaxis(&p);
    char sub[96];
    snprintf(sub, sizeof sub, "mean over n = %d heads of %d model%s", heads, models,
             models == 1 ? "" : "s");
    double y = fig_title(&p, "Combined QK PCA: explained variance by principal component", sub, 19);
    char together[32];
    qk_plot_percent(together, sizeof together, 100 * total, 1);
    /* the left margin fixed: the label's room as a browser draws the SVG */
    qk_plot_printf(&p, "set tmargin at screen %.4f\nset lmargin 12\n", y - 0.01);
    fig_axis_label(&p, "y", "mean explained variance (%)\n{/*0.8 eigenvalue / total pooled "
                   "Q+K variance}", "offset -1,0");
    fig_axis_tics(&p, "y", 0, 110 * top, 6);
    qk_plot_printf(&p,
        "set yrange [0:%.4f]\n"
        "set boxwidth 0.8 absolute\nset style fill solid 0.9 noborder\nunset key\n"
        "set label 1 \"PC0 to PC%d together: %s of the pooled variance\" at graph 0.97, "
        "graph 0.92 right font \",15\"\n"
        "plot $pcs using 1:2 with boxes lc rgb '%s' notitle, \\\n"
        "     $pcs using 1:3:4 with labels offset 0,0.6 font \",13\" notitle\n",
        110 * top, PCA_N_PC - 1, together, PCA_COLOR_EV);
    fig_key(ctx, "heads", "%d", heads);
    fig_key(ctx, "models", "%d", models);
    for (int i = 0; i < PCA_N_PC; i++) {
        char name[48];
        snprintf(name, sizeof name, "mean explained variance, PC%d", i);
        fig_key(ctx, name, "%.1f%%", 100 * ev[i]);
    }
    fig_key(ctx, "sum over PC0-PC9", "%.1f%%", 100 * total);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 02: r_q against r_k on PC0, every head ------------------------------------- */

static void scatter_keys(fig_ctx *ctx, const pca_study *s)
{
    int cat[PCA_N_CAT] = {0};
    for (int m = 0; m < s->n_models; m++) {
        int c[PCA_N_CAT];
        pca_model_categories(s, m, c);
        for (int k = 0; k < PCA_N_CAT; k++)
            cat[k] += c[k];
    }
    fig_key(ctx, "heads", "%d", s->n_heads);
    fig_key(ctx, "models", "%d", s->n_models);
    for (int k = 0; k < PCA_N_CAT; k++) {
        char name[64];
        snprintf(name, sizeof name, "%s heads", pca_cat_label[k]);
        fig_key(ctx, name, "%d (%.1f%%)", cat[k], 100.0 * cat[k] / s->n_heads);
    }
    for (int m = 0; m < s->n_models; m++) {
        double mq, sq, mk, sk;
        pca_model_mean_sd(s, m, PCA_R_Q0, &mq, &sq);
        pca_model_mean_sd(s, m, PCA_R_K0, &mk, &sk);
        char name[128];
        snprintf(name, sizeof name, "%s: heads, mean r_q, mean r_k (PC0)", s->models[m].label);
        fig_key(ctx, name, "%d, %.3f, %.3f", s->models[m].n_heads, mq, mk);
    }
}

int pca_draw_scatter(fig_ctx *ctx, qk_err *err)
{
    pca_study s;
    if (pca_load_input(ctx, "heads", &s) == 0) {
        pca_study_free(&s);
        return pca_no_heads(ctx, "heads", err);
    }
    pca_study_need_category(&s);
    double high, low;
    pca_thresholds(ctx, &high, &low);
    qk_plot p;
    fig_begin_hover(&p, 1500, 1031, 16);
    for (int m = 0; m < s.n_models; m++) {
        char name[16];
        snprintf(name, sizeof name, "m%d", m);
        qk_plot_data_begin(&p, name);
        const pca_model *md = &s.models[m];
        for (int h = md->first_head; h < md->first_head + md->n_heads; h++) {
            const pca_head *hd = &s.heads[h];
            qk_plot_printf(&p, "%.6f %.6f", hd->r_q0, hd->r_k0);
            fig_hover_text(&p, "%s: layer %d, head %d|%s/l%02dh%02d|r_q %.3f, r_k %.3f", md->label,
                           hd->layer, hd->head, md->id, hd->layer, hd->head, hd->r_q0, hd->r_k0);
        }
        qk_plot_data_end(&p);
    }
    char sub[128];
    snprintf(sub, sizeof sub, "n = %d heads of %d model%s; colour = family, marker = model",
             s.n_heads, s.n_models, s.n_models == 1 ? "" : "s");
    double top = fig_title(&p, "Combined QK PCA, PC0: " QK_SYM_R_Q " against " QK_SYM_R_K
                           " of every head", sub, 19);
    qk_plot_printf(&p, "set tmargin at screen %.4f\n", top - 0.01);
    fig_axis_label(&p, "x", QK_SYM_R_Q ": Pearson " QK_SYM_PEARSON_R " of the query projections with "
                   "position (sign-canonical)", NULL);
    /* (clear of the tick labels as the SVG's wider text draws them) */
    fig_axis_label(&p, "y", QK_SYM_R_K ": Pearson " QK_SYM_PEARSON_R " of the key projections with "
                   "position", fig_print(&p) ? NULL : "offset -0.6,0");
    qk_plot_printf(&p,
        "set xrange [-0.05:1.05]\nset yrange [-1.05:1.05]\nset xtics 0.2\nset ytics 0.25\n"
        "set format y \"%%.2f\"\nset format x \"%%.1f\"\nunset grid\n"
        "set lmargin at screen 0.08\nset rmargin at screen 0.76\n");
    qk_plot_printf(&p, "set key at screen 0.775, graph 1 top left vertical reverse Left font \",12\" "
                       "spacing 1.1 samplen 1 box lc rgb '#cccccc'\n");
    pca_threshold_lines(&p, low, high);
    qk_plot_printf(&p, "plot ");
    int rank_in_family[64] = {0};
    for (int m = 0; m < s.n_models; m++) {
        int f = pca_family_index(&s, m);
        const char *color = fig_family_color(ctx, s.models[m].family);
        int k = f < 64 ? rank_in_family[f]++ : 0;
        qk_plot_printf(&p, "%s$m%d using 1:2 with points pt %d ps 1.3*qk_ps lc rgb '#80%s' title ",
                       m ? ", \\\n     " : "", m, fig_model_marker(k), color + 1);
        char title[128];
        snprintf(title, sizeof title, "%s (n = %d)", s.models[m].label, s.models[m].n_heads);
        fig_text(&p, title);
    }
    for (int m = 0; m < s.n_models; m++) {
        char name[16];
        snprintf(name, sizeof name, "m%d", m);
        fig_hover_plot(&p, name, 1, 2, 3, 1.6);
    }
    qk_plot_printf(&p, "\n");
    scatter_keys(ctx, &s);
    fig_key(ctx, "thresholds (low, high)", "%g, %g", low, high);
    pca_study_free(&s);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 03 / 04: depth heatmaps ------------------------------------------------------- */

int pca_draw_heatmap_rq(fig_ctx *ctx, qk_err *err)
{
    return pca_depth_heatmap_figure(ctx, 1654, 808, PCA_R_Q0,
                                    "Mean " QK_SYM_R_Q " (PC0) by normalized layer depth", 0, err);
}

int pca_draw_heatmap_rk(fig_ctx *ctx, qk_err *err)
{
    return pca_depth_heatmap_figure(ctx, 1654, 808, PCA_R_K0,
                                    "Mean " QK_SYM_R_K " (PC0) by normalized layer depth", 0, err);
}
