/* Figures 09 (SmolLM3-3B through training; input "joint" =
 * joint_rotation_plasticity.csv) and 10 (AP_drop against published
 * LongBench-Pro scores; inputs "report" = model_report.csv, "benchmarks" =
 * workflow/benchmarks.tsv, "registry") of the plasticity study. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "qk/stats.h"
#include "plasticity_fig.h"
#include "qk/study.h"

/* ---- 09: SmolLM3 trajectory ------------------------------------------------------ */

typedef struct checkpoint {
    const char *label;
    double context, heads, first, last, drop, bias;
} checkpoint;

static checkpoint *load_checkpoints(const fig_ctx *ctx, int *n)
{
    const qk_table *t = fig_input(ctx, "joint");
    int c_label = fig_column(ctx, t, "label"), c_ctx = fig_column(ctx, t, "context_length");
    int c_heads = fig_column(ctx, t, "n_heads");
    int c_first = fig_column(ctx, t, "ap_first_20pct"), c_last = fig_column(ctx, t, "ap_last_20pct");
    int c_drop = fig_column(ctx, t, "ap_drop"), c_bias = fig_column(ctx, t, "bias_strength");
    checkpoint *cp = qk_malloc((size_t)(t->n_rows > 0 ? t->n_rows : 1) * sizeof *cp);
    *n = 0;
    for (int r = 0; r < t->n_rows; r++) {
        checkpoint c = {qk_table_cell(t, r, c_label), fig_number_at(ctx, t, r, c_ctx),
                        fig_number_at(ctx, t, r, c_heads), fig_number_at(ctx, t, r, c_first),
                        fig_number_at(ctx, t, r, c_last), fig_number_at(ctx, t, r, c_drop),
                        fig_number_at(ctx, t, r, c_bias)};
        /* a checkpoint without values is left out (the key numbers say so) */
        if (isfinite(c.first) && isfinite(c.last) && isfinite(c.bias))
            cp[(*n)++] = c;
    }
    return cp;
}

/* Dashed separators between checkpoints of different context lengths and,
 * for the top panel, the context length of each group along the top. */
static void context_groups(qk_plot *p, const checkpoint *cp, int n, int labels)
{
    int start = 0;
    for (int i = 1; i <= n; i++) {
        if (i < n && cp[i].context == cp[start].context)
            continue;
        if (i < n)
            qk_plot_printf(p,
                "set arrow from %.1f, graph 0 to %.1f, graph 1 nohead dt 2 lw 1.2 lc rgb '%s' back\n",
                i - 0.5, i - 0.5, PLAST_REF);
        if (labels) {
            char ctxs[32];
            fig_tokens(cp[start].context, ctxs, sizeof ctxs);
            qk_plot_printf(p,
                "set label \"{/:Italic %s context}\" at %.2f, graph 0.93 center tc rgb '#666666'\n",
                ctxs, (start + i - 1) / 2.0);
        }
        start = i;
    }
}

static void trajectory_top(qk_plot *p, const checkpoint *cp, int n, const fig_range *r, double y)
{
    double lo, hi;
    fig_range_pad(r, 0.12, &lo, &hi);
    hi += 0.12 * (hi - lo); /* room for the group labels */
    qk_plot_printf(p,
        "set lmargin at screen 0.1\nset rmargin at screen 0.97\n"
        "set tmargin at screen %.4f\nset bmargin at screen 0.42\n"
        "set xrange [-0.5:%d.5]\nset yrange [%.4f:%.4f]\n"
        "set format x \"\"\nset xtics 1 out scale 0.6\nset ytics autofreq\nset format y \"%%.2f\"\n"
        "set grid xtics ytics lc rgb '#e6e6e6'\n",
        fig_key_top(p, 14, 3, 3, y) - 0.01, n - 1, lo, hi);
    fig_axis_label(p, "y", "attention plasticity", "offset -1,0");
    context_groups(p, cp, n, 1);
    fig_offscale_labels(p, r, "%.3f", 1, 12);
    /* the band between the lines; one checkpoint has a bar instead. Black
     * and grey: blue and vermillion mean queries and keys, the other
     * colours families (docs/figure-style.md) */
    const char *band = n > 1 ? "1:6:7 with filledcurves fs solid 1.0 noborder"
                             : "1:7:(0):($6-$7) with vectors nohead lw 14";
    qk_plot_printf(p,
        "plot $cp using %s lc rgb '%s' title \"AP" QK_SUB("drop") "\", \\\n"
        "     $cp using 1:6 with linespoints lw 3 pt 7 ps 2*qk_ps lc rgb '%s' "
        "title \"AP" QK_SUB("first 20 %%") "\", \\\n"
        "     $cp using 1:7 with linespoints lw 3 dt 2 pt 5 ps 1.8*qk_ps lc rgb '%s' "
        "title \"AP" QK_SUB("last 20 %%") "\"\n",
        band, "#e3e3e3", FIG_BLACK, FIG_NEUTRAL);
}

static void trajectory_bottom(qk_plot *p, const checkpoint *cp, int n, const fig_range *r)
{
    double lo, hi;
    fig_range_pad(r, 0.1, &lo, &hi);
    lo = r->lo < 0 ? lo : 0;
    qk_plot_printf(p,
        "unset title\nunset label\nunset arrow\nunset key\n"
        "set tmargin at screen 0.37\nset bmargin at screen 0.13\n"
        "set yrange [%.6g:%.6g]\n"
        "set format x \"%%g\"\nset grid noxtics ytics\n"
        "set boxwidth 0.6 absolute\nset style fill solid 0.85 noborder\n",
        lo, hi);
    fig_axis_label(p, "y", "bias strength × 10^3", "offset -1,0");
    fig_axis_label(p, "x", "training checkpoint", "offset 0,-0.6");
    fig_axis_tics(p, "y", lo, hi, 4);
    const char **labels = qk_malloc((size_t)n * sizeof *labels);
    for (int i = 0; i < n; i++)
        labels[i] = cp[i].label;
    fig_checkpoint_tics(p, labels, n);
    free(labels);
    qk_plot_printf(p, "set xrange [-0.5:%d.5]\n", n - 1);
    context_groups(p, cp, n, 0);
    fig_offscale_labels(p, r, "%.2f", 1, 12);
    qk_plot_printf(p,
        "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#444444'\n"
        "plot $cp using 1:8 with boxes lc rgb '%s' notitle\n",
        FIG_NEUTRAL);
}

int plast_draw_smollm3_trajectory(fig_ctx *ctx, qk_err *err)
{
    int n;
    checkpoint *cp = load_checkpoints(ctx, &n);
    const qk_table *t = fig_input(ctx, "joint");
    if (n == 0) {
        free(cp);
        return fig_not_drawn(ctx, err, "The table %s holds no checkpoint with values.",
                             fig_path(ctx, t));
    }
    double *ap = qk_malloc((size_t)(2 * n) * sizeof *ap), *bias = qk_malloc((size_t)n * sizeof *bias);
    for (int i = 0; i < n; i++)
        ap[2 * i] = cp[i].first, ap[2 * i + 1] = cp[i].last, bias[i] = 1e3 * cp[i].bias;
    fig_range r_ap = fig_robust_range(ap, 2 * n), r_bias = fig_robust_range(bias, n);
    fig_range_include(&r_bias, 0, bias, n);
    qk_plot p;
    plast_begin(&p, 1600, 1150, 15);
    qk_plot_data_begin(&p, "cp");
    for (int i = 0; i < n; i++) {
        int s1, s2, s3;
        double f = fig_clip(&r_ap, cp[i].first, &s1), l = fig_clip(&r_ap, cp[i].last, &s2);
        double b = fig_clip(&r_bias, bias[i], &s3);
        qk_plot_printf(&p, "%d %.6f %.6f %.6f %.8g %.6f %.6f %.6g\n", i, cp[i].first, cp[i].last,
                       cp[i].drop, cp[i].bias, f, l, b);
    }
    qk_plot_data_end(&p);
    char sub[224];
    double *heads = qk_malloc((size_t)n * sizeof *heads);
    for (int i = 0; i < n; i++)
        heads[i] = cp[i].heads;
    char heads_text[96];
    fig_heads_phrase(heads, n, "per checkpoint", heads_text, sizeof heads_text);
    free(heads);
    /* steps and context lengths share no "K" (docs/figure-style.md) */
    snprintf(sub, sizeof sub, "%s; steps in k\u00a0=\u00a01000, context (italics) in "
             "K\u00a0=\u00a01024 tokens", heads_text);
    char title[256];
    fig_title_text(ctx, title, sizeof title);
    double top = fig_multiplot_title(&p, title, sub, 19);
    trajectory_top(&p, cp, n, &r_ap, top);
    trajectory_bottom(&p, cp, n, &r_bias);
    qk_plot_printf(&p, "unset multiplot\n");
    fig_key(ctx, "checkpoints", "%d of %d rows", n, t->n_rows);
    fig_key(ctx, "heads per checkpoint", "%s", heads_text + 4);
    for (int i = 0; i < n; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s: first 20 %% / last 20 %% / drop / bias strength",
                 cp[i].label);
        fig_key(ctx, name, "%.4f / %.4f / %.4f / %.3g", cp[i].first, cp[i].last, cp[i].drop,
                cp[i].bias);
    }
    free(ap);
    free(bias);
    free(cp);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 10: AP_drop against LongBench-Pro ----------------------------------------------- */

typedef struct lbp_point {
    const char *model, *label, *family;
    double drop, score;
    const char *color;
} lbp_point;

/* The marker of the f-th family in the figure: filled and hollow point
 * types and a size (gnuplot's diamond and triangles are drawn smaller). */
static const struct {
    int filled, hollow;
    double size;
} family_markers[] = {{7, 6, 2.4}, {5, 4, 2.2}, {13, 12, 3.2}, {9, 8, 3.0}, {11, 10, 3.0}};
#define N_FAMILY_MARKERS (int)(sizeof family_markers / sizeof family_markers[0])

/* The published overall score of a model, or NAN. */
static double published_score(const fig_ctx *ctx, const char *model, const char **note)
{
    const qk_table *b = fig_input(ctx, "benchmarks");
    int c_m = fig_column(ctx, b, "model"), c_b = fig_column(ctx, b, "benchmark");
    int c_l = fig_column(ctx, b, "length"), c_s = fig_column(ctx, b, "score");
    int c_n = qk_table_column(b, "note");
    for (int r = 0; r < b->n_rows; r++)
        if (strcmp(qk_table_cell(b, r, c_m), model) == 0 &&
            strcmp(qk_table_cell(b, r, c_b), "longbench-pro") == 0 &&
            strcmp(qk_table_cell(b, r, c_l), "overall") == 0) {
            if (c_n >= 0)
                *note = qk_table_cell(b, r, c_n);
            return fig_number_at(ctx, b, r, c_s);
        }
    return NAN;
}

/* The captured context lengths of the models drawn (the registry's
 * context_length): "128K tokens", or "32K to 128K tokens". */
static void context_span(const fig_ctx *ctx, const lbp_point *pt, int n, char *out, size_t cap)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        double c = strtod(fig_registry(ctx, pt[i].model, "context_length", "nan"), NULL);
        if (isfinite(c) && c > 0)
            lo = fmin(lo, c), hi = fmax(hi, c);
    }
    char a[24], b[24];
    if (!(hi > 0)) {
        snprintf(out, cap, "length not known");
        return;
    }
    fig_tokens(lo, a, sizeof a);
    fig_tokens(hi, b, sizeof b);
    if (lo == hi)
        snprintf(out, cap, "%s tokens", b);
    else
        snprintf(out, cap, "%s to %s tokens", a, b);
}

/* The models of the report with a published score, in the table's
 * (registry) order. */
static lbp_point *load_lbp_points(const fig_ctx *ctx, int *n, int *scored, const char **note)
{
    const qk_table *t = fig_input(ctx, "report");
    int c_m = fig_column(ctx, t, "model"), c_d = fig_column(ctx, t, "ap_drop");
    lbp_point *pt = qk_malloc((size_t)(t->n_rows + 1) * sizeof *pt);
    *n = *scored = 0;
    *note = NULL;
    for (int r = 0; r < t->n_rows; r++) {
        const char *model = qk_table_cell(t, r, c_m);
        double score = published_score(ctx, model, note), drop = fig_number_at(ctx, t, r, c_d);
        *scored += isfinite(score);
        if (!isfinite(score) || !isfinite(drop))
            continue;
        const char *family = fig_registry(ctx, model, "family", "other");
        pt[*n] = (lbp_point){model, fig_registry(ctx, model, "label", model), family, drop, score,
                             fig_family_color(ctx, family)};
        (*n)++;
    }
    return pt;
}

/* Pearson r, and the least-squares line y = a + b x. */
static void fit_line(const lbp_point *pt, int n, double *r, double *a, double *b)
{
    double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
    for (int i = 0; i < n; i++) {
        mx += pt[i].drop / n;
        my += pt[i].score / n;
    }
    for (int i = 0; i < n; i++) {
        double dx = pt[i].drop - mx, dy = pt[i].score - my;
        sxx += dx * dx;
        syy += dy * dy;
        sxy += dx * dy;
    }
    *b = sxx > 0 ? sxy / sxx : NAN;
    *a = my - *b * mx;
    *r = sxx > 0 && syy > 0 ? sxy / sqrt(sxx * syy) : NAN;
}

/* Puts each point's name beside it, on the side (of four) farthest from
 * the other points and the names already placed; coordinates are
 * fractions of the plot area. */
static void place_labels(qk_plot *p, const lbp_point *pt, int n, const double range[4])
{
    double *lx = qk_malloc((size_t)n * sizeof *lx), *ly = qk_malloc((size_t)n * sizeof *ly);
    static const int dir[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};
    for (int i = 0; i < n; i++) {
        double x = (pt[i].drop - range[0]) / (range[1] - range[0]);
        double y = (pt[i].score - range[2]) / (range[3] - range[2]);
        double half = 0.0085 * (double)strlen(pt[i].label) + 0.02;
        int best = 0;
        double best_score = -1;
        for (int k = 0; k < 4; k++) {
            double cx = x + dir[k][0] * half, cy = y + dir[k][1] * 0.045;
            double score = fmin(fmin(cx - half, 1 - cx - half), fmin(cy, 1 - cy)) < 0 ? -0.5 : 1;
            for (int j = 0; j < n; j++) {
                double jx = (pt[j].drop - range[0]) / (range[1] - range[0]);
                double jy = (pt[j].score - range[2]) / (range[3] - range[2]);
                if (j != i)
                    score = fmin(score, hypot((cx - jx) / (half + 0.02), (cy - jy) / 0.05));
                if (j < i)
                    score = fmin(score, hypot((cx - lx[j]) / (2 * half), (cy - ly[j]) / 0.06));
            }
            if (score > best_score + 1e-12) {
                best_score = score;
                best = k;
            }
        }
        lx[i] = x + dir[best][0] * half;
        ly[i] = y + dir[best][1] * 0.045;
        qk_plot_printf(p, "set label ");
        fig_text(p, pt[i].label);
        qk_plot_printf(p, " at %.6f, %.4f %s offset char %.1f, %.1f tc rgb '%s' font \",12\" front\n",
                       pt[i].drop, pt[i].score, dir[best][0] > 0 ? "left" : "right",
                       dir[best][0] * 1.2, dir[best][1] * 1.0, pt[i].color);
    }
    free(lx);
    free(ly);
}

/* A model of the study table, as qk_family_names reads it. */
typedef struct table_model {
    char label[64], family[32];
    int registry_row;
} table_model;

/* A family's display name as every figure and summary gives it
 * (qk_family_names over the models of the study table). */
static void family_name(const fig_ctx *ctx, const char *family, char *out, size_t cap)
{
    const qk_table *t = fig_input(ctx, "report");
    qk_src reg = fig_src(ctx, "registry");
    int c_m = fig_column(ctx, t, "model"), n = t->n_rows;
    table_model *m = qk_calloc((size_t)(n ? n : 1), sizeof *m);
    for (int r = 0; r < n; r++) {
        const char *id = qk_table_cell(t, r, c_m);
        snprintf(m[r].label, sizeof m[r].label, "%s", qk_registry_cell(&reg, id, "label", id));
        snprintf(m[r].family, sizeof m[r].family, "%s",
                 qk_registry_cell(&reg, id, "family", "other"));
        m[r].registry_row = qk_registry_row(&reg, id);
    }
    int n_fam;
    int *family_of = qk_number_families(m, sizeof *m, offsetof(table_model, family), n, &n_fam);
    qk_family_name *names = qk_family_names(&reg, m, sizeof *m, offsetof(table_model, label),
                                            offsetof(table_model, family),
                                            offsetof(table_model, registry_row), n, family_of,
                                            n_fam);
    snprintf(out, cap, "%s", family);
    for (int r = 0; r < n; r++)
        if (strcmp(m[r].family, family) == 0) {
            snprintf(out, cap, "%s", names[family_of[r]].text);
            break;
        }
    free(names);
    free(family_of);
    free(m);
}

static void lbp_keys(fig_ctx *ctx, const lbp_point *pt, int n, double r, double a, double b)
{
    fig_key(ctx, "models with a published score", "%d", n);
    double lo, hi;
    qk_pearson_interval(r, n, &lo, &hi);
    fig_key(ctx, "Pearson r (AP_drop, LongBench-Pro)", "%.3f", r);
    fig_key(ctx, "95 % interval of r (Fisher z)", "%.3f to %.3f", lo, hi);
    fig_key(ctx, "least-squares line", "score = %.2f %+.2f * AP_drop", a, b);
    for (int i = 0; i < n; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s: AP_drop, score", pt[i].label);
        fig_key(ctx, name, "%.4f, %.2f", pt[i].drop, pt[i].score);
    }
}

int plast_draw_drop_vs_lbp(fig_ctx *ctx, qk_err *err)
{
    int n, scored;
    const char *note;
    lbp_point *pt = load_lbp_points(ctx, &n, &scored, &note);
    if (n < 3) {
        char names[512] = "", without[160] = "";
        for (int i = 0; i < n; i++) {
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : ": ", pt[i].label);
        }
        free(pt);
        /* a model with a score but no AP_drop: every query bin below the
         * plasticity stage's minimum of key pairs */
        if (scored > n)
            snprintf(without, sizeof without, " (%d ha%s a score but no AP_drop: no query bin "
                     "reached PLAST_MIN_PAIRS eligible key pairs)", scored - n,
                     scored - n == 1 ? "s" : "ve");
        return fig_not_drawn(ctx, err, "%d model%s of this run ha%s both a published "
                             "LongBench-Pro score and an AP_drop%s%s; a correlation needs at "
                             "least 3.", n, n == 1 ? "" : "s", n == 1 ? "s" : "ve", names, without);
    }
    /* families in order of first appearance (the registry order) */
    const char *families[64];
    int n_fam = 0;
    for (int i = 0; i < n; i++) {
        int f = 0;
        while (f < n_fam && strcmp(families[f], pt[i].family) != 0)
            f++;
        if (f == n_fam && n_fam < 64)
            families[n_fam++] = pt[i].family;
    }
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    for (int i = 0; i < n; i++) {
        xlo = fmin(xlo, pt[i].drop);
        xhi = fmax(xhi, pt[i].drop);
        ylo = fmin(ylo, pt[i].score);
        yhi = fmax(yhi, pt[i].score);
    }
    double xs = xhi > xlo ? xhi - xlo : 0.05, ys = yhi > ylo ? yhi - ylo : 5;
    double range[4] = {xlo - 0.22 * xs, xhi + 0.22 * xs, ylo - 0.18 * ys, yhi + 0.18 * ys};
    double r, a, b;
    fit_line(pt, n, &r, &a, &b);
    qk_plot p;
    plast_begin(&p, 1300, 900, 13);
    qk_plot_data_begin(&p, "pts");
    for (int f = 0; f < n_fam; f++) {
        for (int i = 0; i < n; i++)
            if (strcmp(pt[i].family, families[f]) == 0)
                qk_plot_printf(&p, "%.6f %.4f\n", pt[i].drop, pt[i].score);
        qk_plot_printf(&p, "\n\n");
    }
    qk_plot_data_end(&p);
    char sub[320], rtext[160], title[256], context[80];
    fig_correlation_text(r, n, "models", rtext, sizeof rtext);
    context_span(ctx, pt, n, context, sizeof context);
    snprintf(sub, sizeof sub, "%s; scores: published results (%s), not computed here", rtext,
             note && *note && strcmp(note, "-") ? note : "overall");
    fig_title_text(ctx, title, sizeof title);
    double top = fig_title(&p, title, sub, 16);
    qk_plot_printf(&p, "set tmargin at screen %.4f\n", top - 0.01);
    /* AP_drop depends on how much context was captured: the label says it */
    char xlabel[160];
    snprintf(xlabel, sizeof xlabel, "AP" QK_SUB("drop") " (first 20%% − last 20%% of the captured "
             "positions, %s)", context);
    fig_axis_label(&p, "x", xlabel, NULL);
    fig_axis_label(&p, "y", "LongBench-Pro overall (published score)", NULL);
    qk_plot_printf(&p,
        "set xrange [%.6f:%.6f]\nset yrange [%.4f:%.4f]\nset format x \"%%.2f\"\n"
        "set grid xtics ytics lc rgb '#e6e6e6'\n"
        "set rmargin at screen 0.78\n",
        range[0], range[1], range[2], range[3]);
    fig_key_right(&p, 13);
    place_labels(&p, pt, n, range);
    qk_plot_printf(&p, "plot ");
    if (isfinite(b))
        qk_plot_printf(&p,
            "[%.6f:%.6f] %.10g + %.10g * x with lines dt 2 lw 1.5 lc rgb '%s' "
            "title \"least squares\", \\\n     ",
            xlo - 0.1 * xs, xhi + 0.1 * xs, a, b, PLAST_REF);
    for (int f = 0; f < n_fam; f++) {
        int m = f % N_FAMILY_MARKERS;
        char name[64];
        family_name(ctx, families[f], name, sizeof name);
        const char *color = fig_family_color(ctx, families[f]);
        qk_plot_printf(&p,
            "$pts index %d using 1:2 with points pt %d ps %.1f*qk_ps lc rgb '%s' title ", f,
            family_markers[m].filled, family_markers[m].size, color);
        fig_text(&p, name);
        qk_plot_printf(&p,
            ", \\\n     $pts index %d using 1:2 with points pt %d ps %.1f*qk_ps lw 1.5 "
            "lc rgb 'white' notitle%s",
            f, family_markers[m].hollow, family_markers[m].size, f + 1 < n_fam ? ", \\\n     " : "\n");
    }
    lbp_keys(ctx, pt, n, r, a, b);
    free(pt);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
