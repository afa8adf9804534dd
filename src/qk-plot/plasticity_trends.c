/* Figures 09 (SmolLM3-3B through training; input "joint" =
 * joint_rotation_plasticity.csv) and 10 (AP_drop against published
 * LongBench-Pro scores; inputs "report" = model_report.csv, "benchmarks" =
 * workflow/benchmarks.tsv, "registry") of the plasticity study. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plasticity_fig.h"
#include "qk/stats.h"
#include "qk/study.h"

/* ---- 09: SmolLM3 trajectory ------------------------------------------------------ */

typedef struct checkpoint {
    const char *label;
    double context, first, last, drop, bias;
} checkpoint;

static checkpoint *load_checkpoints(const fig_ctx *ctx, int *n)
{
    const qk_table *t = fig_input(ctx, "joint");
    int c_label = fig_column(ctx, t, "label"), c_ctx = fig_column(ctx, t, "context_length");
    int c_first = fig_column(ctx, t, "ap_first_20pct"), c_last = fig_column(ctx, t, "ap_last_20pct");
    int c_drop = fig_column(ctx, t, "ap_drop"), c_bias = fig_column(ctx, t, "bias_strength");
    if (t->n_rows == 0)
        qk_die(QK_EXIT_DATA, fig_path(ctx, t), "no checkpoints (needed by figure %s)", ctx->id);
    checkpoint *cp = qk_malloc((size_t)t->n_rows * sizeof *cp);
    for (int r = 0; r < t->n_rows; r++) {
        cp[r] = (checkpoint){qk_table_cell(t, r, c_label), fig_number_at(ctx, t, r, c_ctx),
                             fig_number_at(ctx, t, r, c_first), fig_number_at(ctx, t, r, c_last),
                             fig_number_at(ctx, t, r, c_drop), fig_number_at(ctx, t, r, c_bias)};
        if (!isfinite(cp[r].first) || !isfinite(cp[r].last) || !isfinite(cp[r].bias))
            qk_die(QK_EXIT_DATA, fig_path(ctx, t), "line %d: checkpoint %s has no value",
                   r + 2, cp[r].label);
    }
    *n = t->n_rows;
    return cp;
}

/* A checkpoint label as a two-line tick: "LC1-4K" -> "LC1\n4K". */
static void checkpoint_tick(qk_plot *p, const char *label, int i, int last)
{
    const char *dash = strchr(label, '-');
    qk_plot_printf(p, "\"");
    for (const char *s = label; *s; s++) {
        if (s == dash)
            qk_plot_printf(p, "\\n");
        else if (*s == '"' || *s == '\\')
            qk_plot_printf(p, "\\%c", *s);
        else if (strchr("_^{}@&~", *s))
            qk_plot_printf(p, "\\\\%c", *s);
        else
            qk_plot_printf(p, "%c", *s);
    }
    qk_plot_printf(p, "\" %d%s", i, last ? ")\n" : ", ");
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
            plast_tokens(cp[start].context, ctxs, sizeof ctxs);
            qk_plot_printf(p,
                "set label \"{/:Italic %s context}\" at %.2f, graph 0.93 center tc rgb '#666666'\n",
                ctxs, (start + i - 1) / 2.0);
        }
        start = i;
    }
}

static void trajectory_top(qk_plot *p, const checkpoint *cp, int n)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++) {
        lo = fmin(lo, fmin(cp[i].first, cp[i].last));
        hi = fmax(hi, fmax(cp[i].first, cp[i].last));
    }
    double span = hi > lo ? hi - lo : 0.05;
    /* room below the lines for the key, above them for the group labels */
    qk_plot_printf(p,
        "set lmargin at screen 0.11\nset rmargin at screen 0.97\n"
        "set tmargin at screen 0.93\nset bmargin at screen 0.40\n"
        "set xrange [-0.5:%d.5]\nset yrange [%.4f:%.4f]\n"
        "set format x \"\"\nset xtics 1 out scale 0.6\nset ytics autofreq\nset format y \"%%.2f\"\n"
        "set ylabel \"Attention plasticity\" offset -1,0\n"
        "set grid xtics ytics lc rgb '#e6e6e6'\n"
        "set key bottom center horizontal reverse Left opaque box lc rgb '#cccccc' samplen 2.5 "
        "width 2\n"
        "set title \"SmolLM3-3B: attention plasticity and positional bias through training\" "
        "font \",19\"\n",
        n - 1, lo - 0.38 * span, hi + 0.22 * span);
    context_groups(p, cp, n, 1);
    qk_plot_printf(p,
        "plot $cp using 1:2:3 with filledcurves lc rgb '%s' fs transparent solid 0.25 noborder "
        "title \"AP_{drop}\", \\\n"
        "     $cp using 1:2 with linespoints lw 3 pt 7 ps 2*qk_ps lc rgb '%s' "
        "title \"AP_{first 20%%}\", \\\n"
        "     $cp using 1:3 with linespoints lw 3 pt 5 ps 1.8*qk_ps lc rgb '%s' "
        "title \"AP_{last 20%%}\"\n",
        FIG_PURPLE, FIG_BLUE, FIG_VERMILLION);
}

/* A round tick step that puts about four ticks on span. */
static double tick_step(double span)
{
    double raw = span / 4, mag = pow(10, floor(log10(raw)));
    static const double nice[] = {1, 2, 2.5, 5, 10};
    for (int i = 0; i < 5; i++)
        if (nice[i] * mag >= raw)
            return nice[i] * mag;
    return 10 * mag;
}

static void trajectory_bottom(qk_plot *p, const checkpoint *cp, int n)
{
    double lo = 0, hi = 0;
    for (int i = 0; i < n; i++) {
        lo = fmin(lo, cp[i].bias);
        hi = fmax(hi, cp[i].bias);
    }
    if (hi == lo)
        hi = lo + 1e-3;
    qk_plot_printf(p,
        "unset title\nunset label\nunset arrow\nunset key\n"
        "set tmargin at screen 0.37\nset bmargin at screen 0.12\n"
        "set yrange [%.6g:%.6g]\nset ytics %.6g\nset format y \"%%.3f\"\n"
        "set ylabel \"bias strength\" offset -1,0\n"
        "set xlabel \"Training checkpoint\" offset 0,-0.6\n"
        "set format x \"%%g\"\nset grid noxtics ytics\n"
        "set boxwidth 0.6 absolute\nset style fill solid 0.85 noborder\nset xtics (",
        lo < 0 ? 1.15 * lo : 0, 1.15 * hi, tick_step(1.15 * (hi - lo)));
    for (int i = 0; i < n; i++)
        checkpoint_tick(p, cp[i].label, i, i + 1 == n);
    context_groups(p, cp, n, 0);
    qk_plot_printf(p,
        "set arrow from graph 0, first 0 to graph 1, first 0 nohead lc rgb '#444444'\n"
        "plot $cp using 1:5 with boxes lc rgb '%s' notitle\n",
        FIG_GREEN);
}

int plast_draw_smollm3_trajectory(fig_ctx *ctx, qk_err *err)
{
    int n;
    checkpoint *cp = load_checkpoints(ctx, &n);
    qk_plot p;
    plast_begin(&p, 1600, 1100, 15);
    qk_plot_data_begin(&p, "cp");
    for (int i = 0; i < n; i++)
        qk_plot_printf(&p, "%d %.6f %.6f %.6f %.8g\n", i, cp[i].first, cp[i].last, cp[i].drop,
                       cp[i].bias);
    qk_plot_data_end(&p);
    qk_plot_printf(&p, "set multiplot\n");
    trajectory_top(&p, cp, n);
    trajectory_bottom(&p, cp, n);
    qk_plot_printf(&p, "unset multiplot\n");
    fig_key(ctx, "checkpoints", "%d", n);
    for (int i = 0; i < n; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s: first 20 %% / last 20 %% / drop / bias strength",
                 cp[i].label);
        fig_key(ctx, name, "%.4f / %.4f / %.4f / %.3g", cp[i].first, cp[i].last, cp[i].drop,
                cp[i].bias);
    }
    free(cp);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 10: AP_drop against LongBench-Pro ----------------------------------------------- */

typedef struct lbp_point {
    const char *model, *label, *family;
    double drop, score;
    int family_index;
} lbp_point;

/* The family styles: colour, filled and hollow point types. */
static const struct {
    const char *family, *color;
    int filled, hollow;
    double size; /* gnuplot's diamond and triangles are drawn smaller */
} family_styles[] = {{"ministral", FIG_BLUE, 7, 6, 2.4},
                     {"qwen", FIG_VERMILLION, 5, 4, 2.2},
                     {"llama", FIG_GREEN, 13, 12, 3.2},
                     {"mistral", FIG_PURPLE, 9, 8, 3.0},
                     {"smollm3", "#E69F00", 11, 10, 3.0}};
#define N_FAMILY_STYLES (int)(sizeof family_styles / sizeof family_styles[0])

static int family_style(const char *family, int order)
{
    for (int i = 0; i < N_FAMILY_STYLES; i++)
        if (strcmp(family_styles[i].family, family) == 0)
            return i;
    return order % N_FAMILY_STYLES;
}

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

static lbp_point *load_lbp_points(const fig_ctx *ctx, int *n, const char **note)
{
    const qk_table *t = fig_input(ctx, "report");
    int c_m = fig_column(ctx, t, "model"), c_d = fig_column(ctx, t, "ap_drop");
    lbp_point *pt = qk_malloc((size_t)(t->n_rows + 1) * sizeof *pt);
    *n = 0;
    *note = NULL;
    for (int r = 0; r < t->n_rows; r++) {
        const char *model = qk_table_cell(t, r, c_m);
        double score = published_score(ctx, model, note), drop = fig_number_at(ctx, t, r, c_d);
        if (!isfinite(score) || !isfinite(drop))
            continue;
        pt[*n] = (lbp_point){model, fig_registry(ctx, model, "label", model),
                             fig_registry(ctx, model, "family", "other"), drop, score, 0};
        (*n)++;
    }
    if (*n == 0)
        qk_die(QK_EXIT_DATA, fig_path(ctx, t),
               "no model with a published LongBench-Pro score (needed by figure %s)", ctx->id);
    return pt;
}

/* Pearson r, and the least-squares line y = a + b x (qk/stats.h). */
static void fit_line(const lbp_point *pt, int n, double *r, double *a, double *b)
{
    double *x = qk_malloc((size_t)(n + 1) * sizeof *x), *y = qk_malloc((size_t)(n + 1) * sizeof *y);
    for (int i = 0; i < n; i++) {
        x[i] = pt[i].drop;
        y[i] = pt[i].score;
    }
    qk_line l = qk_line_fit(x, y, n);
    *r = l.r;
    *a = l.intercept;
    *b = l.slope;
    free(x);
    free(y);
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
                       dir[best][0] * 1.2, dir[best][1] * 1.0,
                       family_styles[pt[i].family_index].color);
    }
    free(lx);
    free(ly);
}

/* The display name of a family: the rule of qk/study.h over the labels of
 * its points. */
static void family_name(const lbp_point *pt, int n, const char *family, char *out, size_t cap)
{
    const char **labels = qk_malloc((size_t)(n + 1) * sizeof *labels);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strcmp(pt[i].family, family) == 0)
            labels[k++] = pt[i].label;
    qk_family_label(labels, k, family, out, cap);
    free(labels);
}

int plast_draw_drop_vs_lbp(fig_ctx *ctx, qk_err *err)
{
    int n;
    const char *note;
    lbp_point *pt = load_lbp_points(ctx, &n, &note);
    /* families in order of first appearance */
    const char *families[64];
    int n_fam = 0;
    for (int i = 0; i < n; i++) {
        int f = 0;
        while (f < n_fam && strcmp(families[f], pt[i].family) != 0)
            f++;
        if (f == n_fam && n_fam < 64)
            families[n_fam++] = pt[i].family;
        pt[i].family_index = family_style(pt[i].family, f);
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
    plast_begin(&p, 1100, 900, 13);
    qk_plot_data_begin(&p, "pts");
    for (int f = 0; f < n_fam; f++) {
        for (int i = 0; i < n; i++)
            if (strcmp(pt[i].family, families[f]) == 0)
                qk_plot_printf(&p, "%.6f %.4f\n", pt[i].drop, pt[i].score);
        qk_plot_printf(&p, "\n\n");
    }
    qk_plot_data_end(&p);
    qk_plot_printf(&p,
        "set title \"AP_{drop} against published LongBench-Pro scores\" font \",16\"\n"
        "set xlabel \"AP_{drop} (first 20%% − last 20%% of positions)\"\n"
        "set ylabel \"LongBench-Pro overall (published score)\"\n"
        "set xrange [%.6f:%.6f]\nset yrange [%.4f:%.4f]\nset format x \"%%.2f\"\n"
        "set grid xtics ytics lc rgb '#e6e6e6'\nset bmargin 6.5\n"
        "set key top right reverse Left opaque box lc rgb '#cccccc' samplen 2 spacing 1.3\n"
        "set style textbox opaque border lc rgb '#999999'\n"
        "set label \"{/*0.8 LongBench-Pro scores: published results (%s), not computed here}\" "
        "at screen 0.5, screen 0.025 center tc rgb '#555555'\n",
        range[0], range[1], range[2], range[3], note && *note && strcmp(note, "-") ? note : "overall");
    if (isfinite(r) && n >= 3)
        qk_plot_printf(&p,
            "set label \"r = %.2f  (n = %d)\" at graph 0.04, graph 0.06 left boxed front "
            "font \",14\"\n",
            r, n);
    place_labels(&p, pt, n, range);
    qk_plot_printf(&p, "plot ");
    if (isfinite(b) && n >= 3)
        qk_plot_printf(&p,
            "[%.6f:%.6f] %.10g + %.10g * x with lines dt 2 lw 1.5 lc rgb '%s' "
            "title \"least squares\", \\\n     ",
            xlo - 0.1 * xs, xhi + 0.1 * xs, a, b, PLAST_REF);
    for (int f = 0; f < n_fam; f++) {
        int s = family_style(families[f], f);
        char name[64];
        family_name(pt, n, families[f], name, sizeof name);
        qk_plot_printf(&p,
            "$pts index %d using 1:2 with points pt %d ps %.1f*qk_ps lc rgb '%s' title ", f,
            family_styles[s].filled, family_styles[s].size, family_styles[s].color);
        fig_text(&p, name);
        qk_plot_printf(&p,
            ", \\\n     $pts index %d using 1:2 with points pt %d ps %.1f*qk_ps lw 1.5 "
            "lc rgb 'white' notitle%s",
            f, family_styles[s].hollow, family_styles[s].size, f + 1 < n_fam ? ", \\\n     " : "\n");
    }
    fig_key(ctx, "models with a published score", "%d", n);
    if (n >= 3) {
        fig_key(ctx, "Pearson r (AP_drop, LongBench-Pro)", "%.3f", r);
        fig_key(ctx, "least-squares line", "score = %.2f %+.2f * AP_drop", a, b);
    }
    for (int i = 0; i < n; i++) {
        char name[128];
        snprintf(name, sizeof name, "%s: AP_drop, score", pt[i].label);
        fig_key(ctx, name, "%.4f, %.2f", pt[i].drop, pt[i].score);
    }
    free(pt);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
