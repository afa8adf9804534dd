/* Inputs, colours, text and axes shared by the rotation figures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rotation_fig.h"

/* Families take their colour of every figure (fig_family_color). Phases,
 * which are ordered, take the steps of one sequential map from light
 * (early) to dark (late): ColorBrewer Purples, so that no phase takes a
 * colour that means something else (queries, keys, a family, a bias). */
static const char *const phase_colors[] = {"#d4d2e8", "#aeaad4", "#8a84c0", "#6c5aab",
                                           "#553c96", "#3f007d", "#2d0060", "#1c0040"};

const char *rotfig_family_color(const fig_ctx *ctx, const rot_table *t, int f)
{
    for (int m = 0; m < t->n_models; m++)
        if (t->family_of[m] == f)
            return fig_family_color(ctx, t->models[m].family);
    return FIG_GREY;
}
const char *rotfig_model_color(int k) { return fig_okabe_ito[k % 8]; }
const char *rotfig_phase_color(int i) { return phase_colors[i % 8]; }

const int rotfig_ylorrd[9] = {0xffffcc, 0xffeda0, 0xfed976, 0xfeb24c, 0xfd8d3c,
                              0xfc4e2a, 0xe31a1c, 0xbd0026, 0x800026};

/* ---- inputs --------------------------------------------------------------------- */

int rotfig_load(const fig_ctx *ctx, const char *name, rot_table *t)
{
    qk_src src = fig_src(ctx, name), registry = fig_src(ctx, "registry");
    rot_table_load(t, &src, &registry);
    return t->n_models;
}

int rotfig_empty(fig_ctx *ctx, const char *name, qk_err *err)
{
    return fig_not_drawn(ctx, err, "The table %s holds no head.",
                         fig_path(ctx, fig_input(ctx, name)));
}

double rotfig_model_value(const rot_table *t, int m, const char *column)
{
    return qk_src_num(&t->src, t->models[m].rows[0], qk_src_col(&t->src, column));
}

/* ---- text ------------------------------------------------------------------------- */

void rotfig_begin(qk_plot *p, int width, int height, int font_pt)
{
    fig_begin(p, width, height, font_pt);
    /* gnuplot loads the script twice (PNG, then SVG) in one session: undo
     * what the first pass leaves behind beyond the house style, so that
     * both passes start from the same state */
    qk_plot_printf(p,
        "unset label\nunset arrow\nunset object\nunset title\nunset xlabel\nunset ylabel\n"
        "unset cblabel\nset xtics autofreq\nset ytics autofreq\nset cbtics autofreq\n"
        "set format x \"%% h\"\nset format y \"%% h\"\nset format cb \"%% h\"\n"
        "set autoscale\nset offsets 0, 0, 0, 0\nset lmargin -1\nset rmargin -1\nset tmargin -1\n"
        "set bmargin -1\n");
}

/* ---- axes ------------------------------------------------------------------------- */

double rotfig_family_room(const qk_plot *p, int font_pt)
{
    return fig_print(p) ? 2.2 * font_pt / p->height : 0.045;
}

void rotfig_label_tics(qk_plot *p, const rot_table *t, const char *options)
{
    qk_plot_printf(p, "set xtics %s (", options);
    for (int m = 0; m < t->n_models; m++) {
        fig_tic_text(p, t->models[m].label);
        qk_plot_printf(p, " %d%s", m, m + 1 < t->n_models ? ", " : ")\n");
    }
}

double rotfig_widest_label(const rot_table *t)
{
    double widest = 0;
    for (int m = 0; m < t->n_models; m++)
        widest = fmax(widest, fig_text_em(t->models[m].label));
    return widest;
}

void rotfig_model_axis(qk_plot *p, const rot_table *t, const char *family_font)
{
    rotfig_label_tics(p, t, "rotate by 45 right scale 0");
    /* room under the plot for the widest label turned by 45 degrees, in
     * lines of text */
    qk_plot_printf(p, "set bmargin %.1f\n", fmax(7.0, 0.75 * rotfig_widest_label(t)));
    /* wide ends: the first label, turned, stays clear of the y tick labels */
    qk_plot_printf(p, "set xrange [-0.8:%d.8]\n", t->n_models - 1);
    int start = 0;
    for (int m = 1; m <= t->n_models; m++) {
        if (m < t->n_models && t->family_of[m] == t->family_of[m - 1])
            continue;
        if (m < t->n_models)
            qk_plot_printf(p, "set arrow from %d.5, graph 0 to %d.5, graph 1 nohead back "
                              "dt 3 lw 1.2 lc rgb '%s'\n", m - 1, m - 1, ROTFIG_REF);
        char name[64];
        rot_family_name(t, t->family_of[m - 1], name, sizeof name);
        qk_plot_printf(p, "set label ");
        fig_text(p, name);
        /* in print the plot is lower in font units: the name's height
         * above the frame in characters */
        qk_plot_printf(p, " at %.1f, graph %s center tc rgb '#444444' font \"%s\"\n",
                       (start + m - 1) / 2.0, fig_print(p) ? "1 offset 0, 0.8" : "1.035",
                       family_font);
        start = m;
    }
}

int rotfig_checkpoint_axis(qk_plot *p, const rot_table *t, int *phase, char names[][48],
                           int max_phases)
{
    int n_phases = 0;
    char prev[64] = "";
    for (int m = 0; m < t->n_models; m++) {
        char cur[64];
        qk_phase_of(t->models[m].id, cur, sizeof cur);
        if (m == 0 || strcmp(cur, prev) != 0) {
            if (n_phases < max_phases)
                qk_phase_label(cur, names[n_phases], 48);
            n_phases++;
            if (m > 0)
                qk_plot_printf(p, "set arrow from %d.5, graph 0 to %d.5, graph 1 nohead back "
                                  "dt 3 lw 1.2 lc rgb '%s'\n", m - 1, m - 1, ROTFIG_REF);
        }
        phase[m] = n_phases - 1 < max_phases ? n_phases - 1 : max_phases - 1;
        snprintf(prev, sizeof prev, "%s", cur);
    }
    const char **labels = qk_malloc((size_t)t->n_models * sizeof *labels);
    for (int m = 0; m < t->n_models; m++)
        labels[m] = t->models[m].label;
    fig_checkpoint_tics(p, labels, t->n_models);
    free(labels);
    return n_phases < max_phases ? n_phases : max_phases;
}

void rotfig_phase_legend(qk_plot *p, char names[][48], int n, double y)
{
    /* a plot of its own across the figure: a key inside one narrow panel
     * would wrap into several rows */
    qk_plot_printf(p, "unset border\nunset grid\nunset arrow\nunset label\n"
                      "set xtics autofreq format \"\" scale 0\n"
                      "set ytics autofreq format \"\" scale 0\nunset xlabel\nunset ylabel\n"
                      "unset title\n"
                      "set lmargin at screen 0.02\nset rmargin at screen 0.98\n"
                      "set bmargin at screen %.4f\nset tmargin at screen %.4f\n"
                      "set xrange [0:1]\nset yrange [0:1]\n"
                      "set key center center horizontal maxrows 1 reverse Left samplen 1.5 "
                      "width %s\"\n"
                      /* a curve outside the range: a plot of key entries alone fails */
                      "plot 2 with lines notitle", y - 0.015, y + 0.015,
                      /* in print, where the canvas is narrower in font units, smaller
                       * so that the entries stay in one row */
                      fig_print(p) ? "0 font \",11" : "4 font \",13");
    for (int i = 0; i < n; i++) {
        qk_plot_printf(p, ", keyentry with boxes fs solid 0.85 noborder lc rgb '%s' title ",
                       rotfig_phase_color(i));
        fig_text(p, names[i]);
    }
    qk_plot_printf(p, "\nunset key\nset border 31 lw 1.0 lc rgb '#444444'\n"
                      "set ytics auto format \"%% h\" scale 0.6\n");
}

void rotfig_heads_phrase(const rot_table *t, const char *per, char *out, size_t cap)
{
    double *heads = qk_malloc((size_t)(t->n_models > 0 ? t->n_models : 1) * sizeof *heads);
    for (int m = 0; m < t->n_models; m++)
        heads[m] = rotfig_model_value(t, m, "n_heads");
    fig_heads_phrase(heads, t->n_models, per, out, cap);
    free(heads);
}

void rotfig_corr_text(const rot_corr *c, char *out, size_t cap)
{
    if (!isfinite(c->r))
        snprintf(out, cap, "n/a");
    else if (c->n >= ROT_CORR_FEW_N)
        fig_fmt(out, cap, "%+.2f", c->r);
    else if (isfinite(c->lo))
        fig_fmt(out, cap, "%+.2f (95 %% CI %+.2f to %+.2f)", c->r, c->lo, c->hi);
    else /* three points: an r, too few for an interval */
        fig_fmt(out, cap, "%+.2f (no 95 %% CI from %d points)", c->r, c->n);
}
