/* Figure 11 of the plasticity study: the extra models (registry study
 * "extra") against their published RULER scores. Inputs: "mean" =
 * model_bucket_plasticity.csv and "report" = model_report.csv of the extra
 * study, "benchmarks" = workflow/benchmarks.tsv, "registry". Left: each
 * model's profile along the context, ending where its captures end. Right:
 * the AP at each RULER length (plast_ap_at_length, the numbers the report
 * quotes) beside the published score on its own axis. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plasticity_fig.h"
#include "qk/plasticity_tables.h"

#define RULER_MAX_LENGTHS 16

typedef struct ruler_model {
    const plast_model *m;
    int n;
    double length[RULER_MAX_LENGTHS], score[RULER_MAX_LENGTHS], ap[RULER_MAX_LENGTHS];
    int n_profile; /* profile bins with a value */
    const char *color; /* its family's (fig_family_color) */
} ruler_model;

/* 1 if the model has an AP at some RULER length. */
static int has_length_ap(const ruler_model *rm)
{
    for (int i = 0; i < rm->n; i++)
        if (isfinite(rm->ap[i]))
            return 1;
    return 0;
}

/* The profile points of model m as data block "pN": position, AP, and the
 * AP again where at least min_heads heads contribute (else NaN: the bin is
 * drawn thin, as in figures 05-07). */
static int profile_block(qk_plot *p, const qk_src *mean, const char *model, int k,
                         double min_heads, fig_range *r_ap, double *x_max)
{
    int c_m = qk_src_col(mean, "model"), c_c = qk_src_col(mean, "bin_centre");
    int c_ap = qk_src_col(mean, "ap"), c_h = qk_src_col(mean, "n_heads"), n = 0;
    char name[16];
    snprintf(name, sizeof name, "p%d", k);
    qk_plot_data_begin(p, name);
    for (int r = 0; r < mean->t->n_rows; r++) {
        if (strcmp(qk_table_cell(mean->t, r, c_m), model) != 0)
            continue;
        double x = qk_src_num(mean, r, c_c), ap = qk_src_num(mean, r, c_ap);
        if (!isfinite(ap))
            continue;
        int side;
        double y = fig_clip(r_ap, ap, &side);
        if (qk_src_num(mean, r, c_h) >= min_heads)
            qk_plot_printf(p, "%.6g %.6f %.6f\n", x, y, y);
        else
            qk_plot_printf(p, "%.6g %.6f NaN\n", x, y);
        *x_max = fmax(*x_max, x);
        n++;
    }
    qk_plot_data_end(p);
    return n;
}

/* A panel's frame as screen fractions: on screen the two panels side by
 * side (left, right and bottom written with two decimals, as always); in
 * print one above the other, placed in characters. */
typedef struct panel_box {
    double left, right, top, bottom;
} panel_box;

static void panel_margins(qk_plot *p, const panel_box *b)
{
    int decimals = fig_print(p) ? 4 : 2;
    qk_plot_printf(p, "set lmargin at screen %.*f\nset rmargin at screen %.*f\n"
                      "set tmargin at screen %.4f\nset bmargin at screen %.*f\n",
                   decimals, b->left, decimals, b->right, b->top, decimals, b->bottom);
}

static void profile_panel(qk_plot *p, const ruler_model *rm, int n, const panel_box *box,
                          const fig_range *r_ap, double lo, double hi)
{
    double x_max = 0;
    for (int k = 0; k < n; k++)
        x_max = fmax(x_max, rm[k].m->context);
    panel_margins(p, box);
    fig_axis_label(p, "x", "token position (K = 1024)", NULL);
    fig_axis_label(p, "y", "attention plasticity", NULL);
    qk_plot_printf(p,
        "set xrange [0:%.0f]\nset yrange [%.4f:%.4f]\nset format y \"%%.2f\"\n"
        "set grid xtics ytics lc rgb '#e6e6e6'\nunset key\nset datafile missing \"NaN\"\n"
        "set title \"%s along the context (thin: fewer heads than the minimum share)\"\n",
        x_max, lo, hi, fig_print(p) ? "Profiles" : "Model profiles");
    fig_token_tics(p, "x", 0, x_max);
    fig_axis_tics(p, "y", lo, hi, 5);
    fig_offscale_labels(p, r_ap, "%.3f", 1, 12);
    for (int k = 0; k < n; k++) /* where the captures of a shorter model end */
        if (rm[k].m->context < x_max) {
            char end[32];
            fig_tokens(rm[k].m->context, end, sizeof end);
            qk_plot_printf(p,
                "set arrow from %.0f, graph 0 to %.0f, graph 1 nohead dt 2 lw 1.5 lc rgb '%s'\n"
                "set label \"", rm[k].m->context, rm[k].m->context, rm[k].color);
            fig_text_chars(p, rm[k].m->label, strlen(rm[k].m->label));
            qk_plot_printf(p, " captures end (%s)\" at %.0f, graph 0.05 left offset 0.5,0 "
                "tc rgb '%s' font \",13\"\n", end, rm[k].m->context, rm[k].color);
        }
    /* a model without a profile value has no line (gnuplot would warn) */
    qk_plot_printf(p, "plot ");
    int drawn = 0;
    for (int k = 0; k < n; k++) {
        if (rm[k].n_profile == 0)
            continue;
        qk_plot_printf(p, "%s$p%d using 1:2 with lines lw 1.2 lc rgb '%s' notitle, "
                       "$p%d using 1:3 with lines lw 3 lc rgb '%s' notitle", drawn++ ? ", " : "",
                       k, rm[k].color, k, rm[k].color);
    }
    qk_plot_printf(p, "%s\nunset arrow\nunset label\n", drawn ? "" : "NaN notitle");
}

/* log2 ticks at the RULER lengths. */
static void length_tics(qk_plot *p, const ruler_model *rm, int n)
{
    double seen[RULER_MAX_LENGTHS * 4];
    int n_seen = 0;
    qk_plot_printf(p, "set xtics (");
    for (int k = 0; k < n; k++)
        for (int i = 0; i < rm[k].n; i++) {
            int dup = 0;
            for (int j = 0; j < n_seen; j++)
                dup |= seen[j] == rm[k].length[i];
            if (dup || n_seen == (int)(sizeof seen / sizeof seen[0]))
                continue;
            char lab[32];
            fig_tokens(rm[k].length[i], lab, sizeof lab);
            qk_plot_printf(p, "%s\"%s\" %.6g", n_seen ? ", " : "", lab, log2(rm[k].length[i]));
            seen[n_seen++] = rm[k].length[i];
        }
    qk_plot_printf(p, ")\n");
}

static void length_panel(qk_plot *p, const ruler_model *rm, int n, const panel_box *box,
                         double lo, double hi)
{
    double x_lo = INFINITY, x_hi = -INFINITY;
    for (int k = 0; k < n; k++) {
        char name[16];
        snprintf(name, sizeof name, "l%d", k);
        qk_plot_data_begin(p, name);
        for (int i = 0; i < rm[k].n; i++) {
            double x = log2(rm[k].length[i]);
            x_lo = fmin(x_lo, x), x_hi = fmax(x_hi, x);
            if (isfinite(rm[k].ap[i]))
                qk_plot_printf(p, "%.6g %.6f %.3f\n", x, rm[k].ap[i], rm[k].score[i]);
            else
                qk_plot_printf(p, "%.6g NaN %.3f\n", x, rm[k].score[i]);
        }
        qk_plot_data_end(p);
    }
    panel_margins(p, box);
    fig_axis_label(p, "x", "context length (K = 1024 tokens)", NULL);
    fig_axis_label(p, "y", "attention plasticity", NULL);
    fig_axis_label(p, "y2", "RULER score (published)", NULL);
    qk_plot_printf(p,
        "set xrange [%.3f:%.3f]\nset yrange [%.4f:%.4f]\nset y2range [0:100]\n"
        "set y2tics 20 out\nset ytics nomirror\n"
        "set datafile missing \"NaN\"\n"
        "set title \"AP at each RULER length (solid) and the published score (dashed)\"\n",
        x_lo - 0.3, x_hi + 0.3, lo, hi);
    length_tics(p, rm, n);
    fig_axis_tics(p, "y", lo, hi, 5);
    qk_plot_printf(p, "set grid xtics ytics lc rgb '#e6e6e6'\n");
    /* the lengths a model's captures do not reach: a score without an AP */
    for (int k = 0, shaded = 0; k < n; k++) {
        double from = log2(rm[k].m->context) + 0.5;
        if (from >= x_hi)
            continue;
        qk_plot_printf(p,
            "set object %d rect from %.3f, graph 0 to graph 1, graph 1 behind "
            "fc rgb '%s' fs transparent solid 0.08 noborder\n",
            20 + k, from, rm[k].color);
        /* above the frame, off the data, in the wide print panel */
        qk_plot_printf(p, "set label %d \"beyond the captures of%s", 20 + k,
                       fig_print(p) ? " " : "\\n");
        fig_text_chars(p, rm[k].m->label, strlen(rm[k].m->label));
        if (fig_print(p))
            qk_plot_printf(p, ": no AP\" at graph 1, graph 1 right offset 0, %.1f tc rgb '%s' "
                           "font \",12\"\n", 0.7 + 1.1 * shaded++, rm[k].color);
        else
            qk_plot_printf(p, ": no AP\" at %.3f, graph %.2f left offset 0.5,-0.8 tc rgb '%s' "
                           "font \",13\"\n", from, 0.98 - 0.1 * shaded++,
                           rm[k].color);
    }
    qk_plot_printf(p, "plot ");
    for (int k = 0; k < n; k++) {
        const char *c = rm[k].color;
        if (has_length_ap(&rm[k]))
            qk_plot_printf(p, "%s$l%d using 1:2 with linespoints lw 3 pt 7 ps 1.6*qk_ps lc rgb "
                           "'%s' notitle, ", k ? ", " : "", k, c);
        else if (k)
            qk_plot_printf(p, ", ");
        qk_plot_printf(p, "$l%d using 1:3 axes x1y2 with linespoints lw 2 dt 2 pt 6 ps "
                       "1.6*qk_ps lc rgb '%s' notitle", k, c);
    }
    qk_plot_printf(p, "\nunset y2tics\nunset y2label\nset ytics mirror\nunset object\nunset label\n");
}

/* Whether any of the n models has a profile bin with a value. */
static int any_profile_bin(const fig_ctx *ctx, const qk_src *mean, int c_ap, const ruler_model *rm,
                           int n)
{
    int found = 0;
    for (int k = 0; k < n && !found; k++) {
        int rows_n;
        int *rows = plast_model_rows(ctx, mean->t, rm[k].m->id, &rows_n);
        for (int i = 0; i < rows_n && !found; i++)
            found = isfinite(qk_src_num(mean, rows[i], c_ap));
        free(rows);
    }
    return found;
}

int plast_draw_extra_ruler(fig_ctx *ctx, qk_err *err)
{
    qk_src mean = fig_src(ctx, "mean"), report = fig_src(ctx, "report");
    qk_src bench = fig_src(ctx, "benchmarks"), registry = fig_src(ctx, "registry");
    plast_table t;
    plast_table_load(&t, &report, &registry, NULL);
    ruler_model *rm = qk_calloc((size_t)(t.n_models > 0 ? t.n_models : 1), sizeof *rm);
    int n = 0;
    for (int i = 0; i < t.n_models; i++) {
        ruler_model *r = &rm[n];
        r->m = &t.models[i];
        r->color = fig_family_color(ctx, r->m->family);
        r->n = plast_published_lengths(&bench, r->m->id, "ruler", r->length, r->score,
                                       RULER_MAX_LENGTHS);
        for (int k = 0; k < r->n; k++) {
            int bins;
            r->ap[k] = plast_ap_at_length(&mean, r->m->id, r->length[k], &bins);
        }
        n += r->n > 0;
    }
    if (n == 0) {
        free(rm);
        plast_table_free(&t);
        return fig_not_drawn(ctx, err, "No model of %s has published RULER scores in %s.",
                             fig_path(ctx, fig_input(ctx, "report")),
                             fig_path(ctx, fig_input(ctx, "benchmarks")));
    }
    /* one robust AP range for both panels: the profiles' bins and the lengths */
    int c_ap = qk_src_col(&mean, "ap");
    if (!any_profile_bin(ctx, &mean, c_ap, rm, n)) {
        free(rm);
        plast_table_free(&t);
        return fig_not_drawn(ctx, err, "No extra model with published RULER scores has a profile "
                             "bin with a value in %s: no query bin reached the minimum of the "
                             "plasticity stage (PLAST_MIN_PAIRS eligible key pairs), so there is no "
                             "AP to set beside the scores.", fig_path(ctx, mean.t));
    }
    double *ap = qk_malloc((size_t)(mean.t->n_rows + 1) * sizeof *ap);
    for (int r = 0; r < mean.t->n_rows; r++)
        ap[r] = qk_src_num(&mean, r, c_ap);
    fig_range r_ap = fig_robust_range(ap, mean.t->n_rows);
    double lo, hi;
    fig_range_pad(&r_ap, 0.08, &lo, &hi);
    qk_plot p;
    plast_begin(&p, 2000, fig_printing ? 1600 : 1000, 15); /* print: the panels stacked */
    int print = fig_print(&p);
    double x_max = 0;
    for (int k = 0; k < n; k++)
        rm[k].n_profile = profile_block(&p, &mean, rm[k].m->id, k,
                                        ctx->min_share * rm[k].m->n_heads, &r_ap, &x_max);
    char sub[256];
    int heads = 0;
    for (int k = 0; k < n; k++)
        heads += rm[k].m->n_heads;
    snprintf(sub, sizeof sub, "n = %d models, %d heads; RULER scores as published by the RULER "
             "paper (not computed here)", n, heads);
    /* (in print the title is said shorter, to fit the page) */
    char title[256];
    fig_title_text(ctx, title, sizeof title);
    double top = fig_multiplot_title(&p, print ? "Extra models: AP and published RULER scores by "
                                     "context length" : title, sub, 19);
    /* the legend names the models in their colours, as labels above the panels */
    for (int k = 0; k < n; k++)
        qk_plot_printf(&p, "set label %d \"— %s\" at screen %.3f, screen %.4f center tc rgb '%s' "
                           "font \",15\"\n",
                       10 + k, rm[k].m->label, 0.5 + (k - (n - 1) / 2.0) * 0.22, top - 0.015,
                       rm[k].color);
    panel_box profiles = {0.07, 0.46, top - 0.1, 0.14}, lengths = {0.56, 0.91, top - 0.1, 0.14};
    if (print) {
        /* one above the other, from the bottom in characters (ch): the x
         * labels, between the panels the lower one's title */
        double ch = 15.0 / p.height, left = 7.0 * 15 / p.width, right = 1 - 7.5 * 15 / p.width;
        double upper_top = top - 5.2 * ch, bottom = 5.2 * ch, gap = 8.6 * ch;
        double h = (upper_top - bottom - gap) / 2;
        profiles = (panel_box){left, right, upper_top, upper_top - h};
        lengths = (panel_box){left, right, bottom + h, bottom};
    }
    profile_panel(&p, rm, n, &profiles, &r_ap, lo, hi);
    length_panel(&p, rm, n, &lengths, lo, hi);
    qk_plot_printf(&p, "unset multiplot\n");
    fig_key(ctx, "models", "%d (%d heads)", n, heads);
    fig_key(ctx, "minimum share of heads for a thick profile", "%g", ctx->min_share);
    for (int k = 0; k < n; k++)
        for (int i = 0; i < rm[k].n; i++) {
            char name[128], len[32];
            fig_tokens(rm[k].length[i], len, sizeof len);
            snprintf(name, sizeof name, "%s at %s: AP / RULER (published)", rm[k].m->label, len);
            if (isfinite(rm[k].ap[i]))
                fig_key(ctx, name, "%.3f / %.1f", rm[k].ap[i], rm[k].score[i]);
            else if (rm[k].length[i] > rm[k].m->context) {
                char ctx_len[32];
                fig_tokens(rm[k].m->context, ctx_len, sizeof ctx_len);
                fig_key(ctx, name, "no AP (beyond the %s captured) / %.1f", ctx_len,
                        rm[k].score[i]);
            } else
                fig_key(ctx, name, "no AP (no profile bin in the range) / %.1f", rm[k].score[i]);
        }
    free(ap);
    free(rm);
    plast_table_free(&t);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
