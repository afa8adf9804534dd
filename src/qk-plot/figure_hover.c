/* Values on hover in the SVG of a figure: gnuplot's hypertext labels, an
 * invisible point over each drawn point or cell whose text the SVG shows
 * when the pointer rests on it (the figure begins with fig_begin_hover, so
 * that the SVG carries gnuplot's mouse script).
 * The PNG and PDF draw nothing of them. The report embeds such a figure as
 * an object, so that its script runs (embed: object in workflow/figures.rec). */
#include <stdarg.h>
#include <stdio.h>

#include "figure.h"

void fig_hover_text(qk_plot *p, const char *fmt, ...)
{
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    /* the text lands in a single-quoted JavaScript string of the SVG and a
     * double-quoted field of the inline data: no quote or backslash may
     * reach it; '|' starts a new line of the box */
    qk_plot_printf(p, " \"");
    for (const char *c = text; *c; c++) {
        if (*c == '|')
            qk_plot_printf(p, "\\n");
        else
            qk_plot_printf(p, "%c", *c == '"' || *c == '\'' || *c == '\\' || (unsigned char)*c < 0x20
                                        ? ' ' : *c);
    }
    qk_plot_printf(p, "\"\n");
}

void fig_hover_plot(qk_plot *p, const char *block, int x_col, int y_col, int text_col,
                    double point_size)
{
    qk_plot_printf(p, ", \\\n     $%s using %d:%d:%d with labels hypertext point pt 7 "
                      "ps %.2f*qk_ps lc rgb '#FF000000' notitle", block, x_col, y_col, text_col,
                   point_size);
}
