/* Colours, text and the registry, shared by the figures of every study
 * (src/qk-plot/figure.h). */
#include <math.h>
#include <string.h>

#include "figure.h"
#include "qk/study.h"

const char *const fig_okabe_ito[8] = {FIG_BLUE, FIG_VERMILLION, FIG_GREEN, FIG_ORANGE,
                                      FIG_PURPLE, FIG_SKY_BLUE, FIG_BLACK, FIG_YELLOW};

const int fig_blues[9] = {0xf7fbff, 0xdeebf7, 0xc6dbef, 0x9ecae1, 0x6baed6,
                          0x4292c6, 0x2171b5, 0x08519c, 0x08306b};
const int fig_reds[9] = {0xfff5f0, 0xfee0d2, 0xfcbba1, 0xfc9272, 0xfb6a4a,
                         0xef3b2c, 0xcb181d, 0xa50f15, 0x67000d};

int fig_map_color(const int stops[9], double x, double lo_cut)
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

void fig_palette(qk_plot *p, const int stops[9], double lo_cut)
{
    qk_plot_printf(p, "set palette defined (");
    for (int i = 0; i <= 16; i++)
        qk_plot_printf(p, "%s%d '#%06x'", i ? ", " : "", i, fig_map_color(stops, i / 16.0, lo_cut));
    qk_plot_printf(p, ")\n");
}

void fig_palette_stops(qk_plot *p, const int stops[9])
{
    qk_plot_printf(p, "set palette defined (");
    for (int i = 0; i < 9; i++)
        qk_plot_printf(p, "%s%d '#%06x'", i ? ", " : "", i, stops[i]);
    qk_plot_printf(p, ")\n");
}

void fig_begin(qk_plot *p, int width, int height, int font_pt)
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
}

void fig_text_chars(qk_plot *p, const char *text, size_t n)
{
    for (size_t i = 0; i < n && text[i]; i++) {
        if (strchr("_^{}@&~", text[i]))
            qk_plot_printf(p, "\\\\");
        if (text[i] == '"' || text[i] == '\\')
            qk_plot_printf(p, "\\");
        qk_plot_printf(p, "%c", text[i]);
    }
}

void fig_text(qk_plot *p, const char *text)
{
    qk_plot_printf(p, "\"");
    fig_text_chars(p, text, strlen(text));
    qk_plot_printf(p, "\"");
}

int fig_kind_index(const qk_src *t, int row, int col)
{
    const char *kind = qk_table_cell(t->t, row, col);
    if (strcmp(kind, "q") == 0)
        return 0;
    if (strcmp(kind, "k") == 0)
        return 1;
    qk_die(QK_EXIT_DATA, t->path, "line %d: kind '%s' (expected q or k)", row + 2, kind);
}

const char *fig_registry(const fig_ctx *ctx, const char *id, const char *column,
                         const char *fallback)
{
    qk_src reg = fig_src(ctx, "registry");
    return qk_registry_cell(&reg, id, column, fallback);
}
