/* Inputs, colours, text and axes shared by the rotation figures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rotation_fig.h"

/* Okabe-Ito: blue, vermillion, bluish green, orange, reddish purple, sky
 * blue, black, yellow. Families take them in display order (Qwen3 blue,
 * Llama vermillion, Ministral green, as in the PCA figures). */
static const char *const okabe_ito[] = {"#0072B2", "#D55E00", "#009E73", "#E69F00",
                                        "#CC79A7", "#56B4E9", "#000000", "#F0E442"};
/* Phases: sky blue, bluish green, orange, vermillion, reddish purple (the
 * hues of the thesis figure: blue, green, orange, red, purple), then more. */
static const char *const phase_colors[] = {"#56B4E9", "#009E73", "#E69F00", "#D55E00",
                                           "#CC79A7", "#0072B2", "#000000", "#F0E442"};

const char *rotfig_family_color(int f) { return okabe_ito[f % 8]; }
const char *rotfig_model_color(int k) { return okabe_ito[k % 8]; }
const char *rotfig_phase_color(int i) { return phase_colors[i % 8]; }

const int rotfig_blues[9] = {0xf7fbff, 0xdeebf7, 0xc6dbef, 0x9ecae1, 0x6baed6,
                             0x4292c6, 0x2171b5, 0x08519c, 0x08306b};
const int rotfig_reds[9] = {0xfff5f0, 0xfee0d2, 0xfcbba1, 0xfc9272, 0xfb6a4a,
                            0xef3b2c, 0xcb181d, 0xa50f15, 0x67000d};
const int rotfig_ylorrd[9] = {0xffffcc, 0xffeda0, 0xfed976, 0xfeb24c, 0xfd8d3c,
                              0xfc4e2a, 0xe31a1c, 0xbd0026, 0x800026};

int rotfig_map_color(const int stops[9], double x, double lo_cut)
{
    x = isnan(x) ? 0.0 : fmin(1.0, fmax(0.0, x));
    double at = 8.0 * (lo_cut + (1.0 - lo_cut) * x);
    int i = (int)floor(at);
    if (i >= 8)
        return stops[8];
    double f = at - i;
    int rgb = 0;
    for (int shift = 16; shift >= 0; shift -= 8) {
        double a = (stops[i] >> shift) & 0xff, b = (stops[i + 1] >> shift) & 0xff;
        rgb |= (int)lround(a + f * (b - a)) << shift;
    }
    return rgb;
}

void rotfig_palette(qk_plot *p, const int stops[9], double lo_cut)
{
    qk_plot_printf(p, "set palette defined (");
    for (int i = 0; i <= 16; i++)
        qk_plot_printf(p, "%s%d '#%06x'", i ? ", " : "", i,
                       rotfig_map_color(stops, i / 16.0, lo_cut));
    qk_plot_printf(p, ")\n");
}

/* ---- inputs --------------------------------------------------------------------- */

rot_src rotfig_input(const fig_ctx *ctx, const char *name)
{
    rot_src s = {fig_input(ctx, name), NULL};
    for (int i = 0; i < ctx->n_inputs; i++)
        if (strcmp(ctx->input_names[i], name) == 0)
            s.path = ctx->input_paths[i];
    return s;
}

void rotfig_load(const fig_ctx *ctx, const char *name, rot_table *t)
{
    rot_src src = rotfig_input(ctx, name), registry = rotfig_input(ctx, "registry");
    if (src.t->n_rows == 0)
        qk_die(QK_EXIT_DATA, src.path, "no rows (figure %s)", ctx->id);
    rot_table_load(t, &src, &registry);
}

void rotfig_dataset_label(const fig_ctx *ctx, const char *id, char *out, size_t cap)
{
    rot_src reg = rotfig_input(ctx, "registry");
    int c_id = rot_col(&reg, "id"), c_label = rot_col(&reg, "label");
    snprintf(out, cap, "%s", id);
    for (int r = 0; r < reg.t->n_rows; r++)
        if (strcmp(qk_table_cell(reg.t, r, c_id), id) == 0)
            snprintf(out, cap, "%s", qk_table_cell(reg.t, r, c_label));
}

double rotfig_model_value(const rot_table *t, int m, const char *column)
{
    return rot_num(&t->src, t->models[m].rows[0], rot_col(&t->src, column));
}

/* ---- text ------------------------------------------------------------------------- */

void rotfig_begin(qk_plot *p, int width, int height, int font_pt)
{
    qk_plot_begin(p, width, height);
    /* For the same font and point sizes the svg terminal draws text at 3/4
     * and points at 1.6 times the size pngcairo does; these scales make
     * figure.svg look like figure.png. */
    qk_plot_printf(p,
        "if (GPVAL_TERM eq \"svg\") set terminal svg size %d,%d enhanced font \"DejaVu Sans,10\" "
        "fontscale 1.3333\n"
        "qk_ps = (GPVAL_TERM eq \"svg\") ? 0.62 : 1.0\n"
        "set termoption font \"DejaVu Sans,%d\"\n",
        width, height, font_pt);
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

/* The characters of text, escaped for a double-quoted enhanced string. */
static void text_chars(qk_plot *p, const char *text, size_t n)
{
    for (size_t i = 0; i < n && text[i]; i++) {
        if (strchr("_^{}@&~", text[i]))
            qk_plot_printf(p, "\\\\");
        if (text[i] == '"' || text[i] == '\\')
            qk_plot_printf(p, "\\");
        qk_plot_printf(p, "%c", text[i]);
    }
}

void rotfig_text(qk_plot *p, const char *text)
{
    qk_plot_printf(p, "\"");
    text_chars(p, text, strlen(text));
    qk_plot_printf(p, "\"");
}

/* ---- axes ------------------------------------------------------------------------- */

void rotfig_model_axis(qk_plot *p, const rot_table *t, const char *family_font)
{
    qk_plot_printf(p, "set xtics rotate by 45 right scale 0 (");
    for (int m = 0; m < t->n_models; m++) {
        rotfig_text(p, t->models[m].label);
        qk_plot_printf(p, " %d%s", m, m + 1 < t->n_models ? ", " : ")\n");
    }
    qk_plot_printf(p, "set xrange [-0.6:%d.6]\n", t->n_models - 1);
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
        rotfig_text(p, name);
        qk_plot_printf(p, " at %.1f, graph 1.035 center tc rgb '#444444' font \"%s\"\n",
                       (start + m - 1) / 2.0, family_font);
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
        rot_phase_of(t->models[m].id, cur, sizeof cur);
        if (m == 0 || strcmp(cur, prev) != 0) {
            if (n_phases < max_phases)
                rot_phase_label(cur, names[n_phases], 48);
            n_phases++;
            if (m > 0)
                qk_plot_printf(p, "set arrow from %d.5, graph 0 to %d.5, graph 1 nohead back "
                                  "dt 3 lw 1.2 lc rgb '%s'\n", m - 1, m - 1, ROTFIG_REF);
        }
        phase[m] = n_phases - 1 < max_phases ? n_phases - 1 : max_phases - 1;
        snprintf(prev, sizeof prev, "%s", cur);
    }
    /* "S1-40K" is drawn as "S1" over "40K" */
    qk_plot_printf(p, "set xtics scale 0 (");
    for (int m = 0; m < t->n_models; m++) {
        const char *label = t->models[m].label, *dash = strchr(label, '-');
        qk_plot_printf(p, "\"");
        if (dash) {
            text_chars(p, label, (size_t)(dash - label));
            qk_plot_printf(p, "\\n");
            text_chars(p, dash + 1, strlen(dash + 1));
        } else {
            text_chars(p, label, strlen(label));
        }
        qk_plot_printf(p, "\" %d%s", m, m + 1 < t->n_models ? ", " : ")\n");
    }
    qk_plot_printf(p, "set xrange [-0.6:%d.6]\n", t->n_models - 1);
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
                      "width 2 font \",13\"\n"
                      /* a curve outside the range: a plot of key entries alone fails */
                      "plot 2 with lines notitle", y - 0.015, y + 0.015);
    for (int i = 0; i < n; i++) {
        qk_plot_printf(p, ", keyentry with boxes fs solid 0.85 noborder lc rgb '%s' title ",
                       rotfig_phase_color(i));
        rotfig_text(p, names[i]);
    }
    qk_plot_printf(p, "\nunset key\nset border 31 lw 1.0 lc rgb '#444444'\n"
                      "set ytics auto format \"%% h\" scale 0.6\n");
}
