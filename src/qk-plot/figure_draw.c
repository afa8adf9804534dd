/* Colours, text and the registry, shared by the figures of every study
 * (src/qk-plot/figure.h). */
#include <math.h>
#include "qk/stats.h"
#include <stdarg.h>
#include <string.h>

#include "figure.h"
#include "qk/die.h"
#include "qk/study.h"

const char *const fig_okabe_ito[8] = {FIG_BLUE, FIG_VERMILLION, FIG_GREEN, FIG_ORANGE,
                                      FIG_PURPLE, FIG_SKY_BLUE, FIG_BLACK, FIG_YELLOW};

const int fig_blues[9] = {0xf7fbff, 0xdeebf7, 0xc6dbef, 0x9ecae1, 0x6baed6,
                          0x4292c6, 0x2171b5, 0x08519c, 0x08306b};
const int fig_reds[9] = {0xfff5f0, 0xfee0d2, 0xfcbba1, 0xfc9272, 0xfb6a4a,
                         0xef3b2c, 0xcb181d, 0xa50f15, 0x67000d};

const char *fig_family_color(const fig_ctx *ctx, const char *family)
{
    if (!fig_has_input(ctx, "registry"))
        return FIG_GREY;
    qk_src reg = fig_src(ctx, "registry");
    long rank = qk_family_rank(&reg, family);
    /* the Okabe-Ito colours but blue and vermillion, which mean queries
     * and keys */
    static const char *const family_colors[] = {FIG_SKY_BLUE, FIG_PURPLE, FIG_GREEN,
                                                 FIG_ORANGE, FIG_BLACK, FIG_YELLOW};
    return rank == QK_UNRANKED ? FIG_GREY : family_colors[rank % 6];
}

int fig_model_marker(int k)
{
    static const int markers[] = {7, 5, 9, 13, 11, 15};
    return markers[k % 6];
}

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

void fig_palette_diverging(qk_plot *p, const int below[9], const int above[9])
{
    qk_plot_printf(p, "set palette defined (");
    for (int i = 8; i >= 1; i--)
        qk_plot_printf(p, "%d '#%06x', ", -i, below[i]);
    for (int i = 0; i < 9; i++)
        qk_plot_printf(p, "%s%d '#%06x'", i ? ", " : "", i, above[i]);
    qk_plot_printf(p, ")\n");
}

void fig_colorbox_only(qk_plot *p)
{
    qk_plot_printf(p,
        "unset title\nunset xlabel\nunset ylabel\nunset label\nunset key\nunset grid\n"
        "set border 0\nset xtics scale 0 format \"\"\nset ytics scale 0 format \"\"\n"
        "plot [0:1] [0:1] '+' using 1:(NaN):(0) with points ps 0 lc palette notitle\n"
        /* the axes as the house style leaves them: it sets their look but
         * neither turns the border on nor the tick format back, and the
         * script is loaded once for each terminal */
        "set border 31\nset xtics scale default format \"%% h\"\n"
        "set ytics scale default format \"%% h\"\n");
}

int fig_printing;
int fig_print_pass;

/* points across a 16 cm page */
#define PRINT_PAGE_PT (16.0 / 2.54 * 72.0)

double fig_print_width(int width, int font_pt)
{
    return fmin(width, font_pt * PRINT_PAGE_PT / FIG_PRINT_PT);
}

/* svg_options: more options of the svg terminal ("mouse standalone" for
 * values on hover) */
static void begin_figure(qk_plot *p, int width, int height, int font_pt, const char *svg_options)
{
    if (fig_printing) {
        double print_width = fig_print_width(width, font_pt);
        qk_plot_begin(p, (int)lround(print_width), (int)lround(height * print_width / width));
        p->media = QK_PLOT_PRINT;
    } else {
        qk_plot_begin(p, width, height);
        p->media = fig_print_pass ? QK_PLOT_SCREEN : QK_PLOT_ALL;
    }
    /* For the same font and point sizes the svg terminal draws text at 3/4
     * and points at 1.6 times the size pngcairo does; these scales make
     * figure.svg look like figure.png. qk_dense_pt is the point type of
     * the clouds of thousands of points: squares in the PDF (smaller
     * files), circles elsewhere. */
    qk_plot_printf(p,
        "if (GPVAL_TERM eq \"svg\") set terminal svg size %d,%d enhanced font \"DejaVu Sans,10\" "
        "fontscale 1.3333%s\n"
        "qk_ps = (GPVAL_TERM eq \"svg\") ? 0.62 : 1.0\n"
        "qk_dense_pt = (GPVAL_TERM eq \"pdfcairo\") ? 5 : 7\n"
        "set termoption font \"DejaVu Sans,%d\"\n",
        width, height, svg_options, font_pt);
}

void fig_begin(qk_plot *p, int width, int height, int font_pt)
{
    begin_figure(p, width, height, font_pt, "");
}

void fig_begin_hover(qk_plot *p, int width, int height, int font_pt)
{
    begin_figure(p, width, height, font_pt, " mouse standalone");
}

/* The advance widths of DejaVu Sans (the figures' font) for ' ' to '~',
 * in hundredths of an em, as its hmtx table gives them. */
static const unsigned char dejavu_width[95] = {
    32, 40, 46, 84, 64, 95, 78, 27, 39, 39, 50, 84, 32, 36, 32, 34, 64, 64, 64, 64, 64, 64, 64, 64,
    64, 64, 34, 34, 84, 84, 84, 53, 100, 68, 69, 70, 77, 63, 58, 77, 75, 29, 29, 66, 56, 86, 75, 79,
    60, 79, 69, 63, 61, 73, 68, 99, 69, 61, 69, 39, 34, 39, 84, 50, 50, 61, 63, 55, 63, 62, 35, 63,
    63, 28, 28, 58, 28, 97, 63, 61, 63, 63, 41, 52, 39, 63, 59, 82, 59, 59, 52, 64, 34, 64, 84};

double fig_text_em(const char *text)
{
    double em = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++)
        if (*c >= 32 && *c < 127)
            em += dejavu_width[*c - 32] / 100.0;
        else if ((*c & 0xc0) != 0x80)
            em += 1.0; /* another character: as wide as the widest */
    return em;
}

void fig_text_chars(qk_plot *p, const char *text, size_t n)
{
    qk_plot_put_text(p->mem, text, n, QK_PLOT_LITERAL);
}

void fig_text_markup_chars(qk_plot *p, const char *text, size_t n)
{
    qk_plot_put_text(p->mem, text, n, QK_PLOT_MARKUP);
}

void fig_text_markup(qk_plot *p, const char *text)
{
    fig_text_markup_chars(p, text, strlen(text));
}

void fig_tic_text(qk_plot *p, const char *text)
{
    qk_plot_printf(p, "\"");
    qk_plot_put_text(p->mem, text, strlen(text), FIG_TIC);
    qk_plot_printf(p, "\"");
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

/* ---- titles and legends ---------------------------------------------------------- */

/* The visible characters of text (enhanced-text markup allowed: font
 * specs, braces, escapes, '_' and '^' do not count) and, in *cut, the
 * last space outside braces before more than width of them are shown (0
 * if none). */
static double visible_chars(const char *text, double width, size_t *cut)
{
    size_t len = strlen(text);
    int depth = 0;
    double shown = 0;
    *cut = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '{' && (i == 0 || text[i - 1] != '\\')) {
            depth++;
            if (text[i + 1] == '/') /* a font spec up to its space */
                while (i + 1 < len && text[i + 1] != ' ')
                    i++;
            continue;
        }
        if ((c == '}' && (i == 0 || text[i - 1] != '\\')) || c == '\\' || c == '_' || c == '^') {
            depth -= c == '}';
            continue;
        }
        if ((unsigned char)c >= 0x80 && (unsigned char)c < 0xc0) /* UTF-8 continuation */
            continue;
        if (c == ' ' && text[i + 1] != '%' && depth == 0 && shown <= width) /* "12.5 %" stays whole */
            *cut = i;
        shown++;
    }
    return shown;
}

/* The length of the first line of text when lines hold at most width
 * visible characters: the lines it needs made about equally long (no
 * last line of one word), broken at a space outside braces. All of it on
 * screen, where the layout has room for one line. */
static size_t first_line(const qk_plot *p, const char *text, double width)
{
    size_t len = strlen(text), cut;
    if (!fig_print(p))
        return len;
    double shown = visible_chars(text, width, &cut);
    if (shown <= width)
        return len;
    double lines = ceil(shown / width);
    visible_chars(text, fmin(width, ceil(shown / lines) + 3), &cut);
    return cut > 0 ? cut : len;
}

/* Pixels from the top of the canvas to the centre of the title and of the
 * first subtitle line, between subtitle lines, and to the bottom of the
 * title block with lines subtitle lines. */
#define TITLE_Y(pt) (1.6 * (pt))
#define SUBTITLE_Y(pt) (3.3 * (pt))
#define SUBTITLE_STEP(pt) (1.0 * (pt))
#define TITLE_BOTTOM(pt, lines) ((lines) ? 4.3 * (pt) + ((lines) - 1) * SUBTITLE_STEP(pt) : 2.6 * (pt))

/* Visible characters a subtitle line of the figure holds: DejaVu Sans
 * averages about 0.7 em a character in mixed text as cairo draws it (a
 * line measured on the printed page). */
static double subtitle_chars(const qk_plot *p, int font_pt)
{
    return 0.9 * p->width / (0.7 * 0.78 * font_pt);
}

/* The subtitle line that starts at *s, at 0.78 of the size; moves *s past
 * it and the spaces after it. */
static void put_subtitle_line(qk_plot *p, const char **s, int font_pt)
{
    size_t n = first_line(p, *s, subtitle_chars(p, font_pt));
    qk_plot_printf(p, "{/*0.78 ");
    fig_text_markup_chars(p, *s, n);
    qk_plot_printf(p, "}");
    *s += n;
    while (**s == ' ')
        (*s)++;
}

/* title and subtitle (may be NULL) typeset (qk_plot_typeset) into the
 * buffers of t; subtitle then points into t or is NULL. */
typedef struct title_text {
    char title[512], subtitle[1536];
} title_text;

static const char *typeset_titles(title_text *t, const char *title, const char *subtitle)
{
    snprintf(t->title, sizeof t->title, "%s", title);
    qk_plot_typeset(t->title, sizeof t->title);
    if (!subtitle)
        return NULL;
    snprintf(t->subtitle, sizeof t->subtitle, "%s", subtitle);
    qk_plot_typeset(t->subtitle, sizeof t->subtitle);
    return t->subtitle;
}

double fig_title(qk_plot *p, const char *title, const char *subtitle, int font_pt)
{
    title_text t;
    subtitle = typeset_titles(&t, title, subtitle);
    title = t.title;
    qk_plot_printf(p, "unset title\nset label 901 \"");
    fig_text_markup(p, title);
    qk_plot_printf(p, "\" at screen 0.5, screen %.4f center font \",%d\" front\n",
                   1 - TITLE_Y(font_pt) / p->height, font_pt);
    int lines = 0;
    for (const char *s = subtitle; s && *s; lines++) {
        qk_plot_printf(p, "set label %d \"", 902 + lines);
        put_subtitle_line(p, &s, font_pt);
        qk_plot_printf(p, "\" at screen 0.5, screen %.4f center font \",%d\" front\n",
                       1 - (SUBTITLE_Y(font_pt) + lines * SUBTITLE_STEP(font_pt)) / p->height,
                       font_pt);
    }
    return 1 - TITLE_BOTTOM(font_pt, lines) / p->height;
}

double fig_multiplot_title(qk_plot *p, const char *title, const char *subtitle, int font_pt)
{
    title_text t;
    subtitle = typeset_titles(&t, title, subtitle);
    title = t.title;
    int lines = 0;
    qk_plot_printf(p, "set multiplot title \"");
    fig_text_markup(p, title);
    for (const char *s = subtitle; s && *s; lines++) {
        qk_plot_printf(p, "\\n");
        put_subtitle_line(p, &s, font_pt);
    }
    qk_plot_printf(p, "\" font \",%d\"\n", font_pt);
    return 1 - TITLE_BOTTOM(font_pt, lines) / p->height;
}

void fig_axis_label(qk_plot *p, const char *axis, const char *text, const char *options)
{
    char label[512];
    snprintf(label, sizeof label, "%s", text);
    qk_plot_label_text(label, sizeof label);
    qk_plot_printf(p, "set %slabel \"", axis);
    fig_text_markup(p, label);
    qk_plot_printf(p, "\"%s%s\n", options && *options ? " " : "", options ? options : "");
}

void fig_panel_title(qk_plot *p, const char *text, const char *options)
{
    char title[512];
    snprintf(title, sizeof title, "%s", text);
    qk_plot_typeset(title, sizeof title);
    qk_plot_printf(p, "set title \"");
    fig_text_markup(p, title);
    qk_plot_printf(p, "\"%s%s\n", options && *options ? " " : "", options ? options : "");
}

void fig_key_right(qk_plot *p, int font_pt)
{
    qk_plot_printf(p, "set key outside right top vertical reverse Left samplen 1.5 spacing 1.2 "
                      "font \",%d\" box lc rgb '#cccccc' noopaque\n", font_pt);
}

double fig_key_top(qk_plot *p, int font_pt, int columns, int entries, double y)
{
    int rows = (entries + columns - 1) / columns;
    qk_plot_printf(p, "set key at screen 0.5, screen %.4f center top horizontal maxcols %d "
                      "reverse Left samplen 2 width 2 font \",%d\" nobox noopaque\n",
                   y, columns, font_pt);
    return y - (rows * 1.45 + 0.4) * font_pt / p->height;
}

void fig_checkpoint_label(const char *label, const char *sep, char *out, size_t cap)
{
    const char *dash = strchr(label, '-');
    if (!dash) {
        snprintf(out, cap, "%s", label);
        return;
    }
    snprintf(out, cap, "%.*s%s%s", (int)(dash - label), label, sep, dash + 1);
    /* the registry writes steps as "40K" (K = 1000): steps take a lowercase
     * k, so that an uppercase K is always 1024 tokens */
    size_t len = strlen(out);
    if (len >= 2 && out[len - 1] == 'K' && out[len - 2] >= '0' && out[len - 2] <= '9')
        out[len - 1] = 'k';
}

void fig_checkpoint_tics(qk_plot *p, const char *const *labels, int n)
{
    qk_plot_printf(p, "set xtics scale 0 (");
    for (int m = 0; m < n; m++) {
        char text[160], *line;
        fig_checkpoint_label(labels[m], "\n", text, sizeof text);
        qk_plot_printf(p, "\"");
        line = strchr(text, '\n');
        if (line) {
            qk_plot_put_text(p->mem, text, (size_t)(line - text), FIG_TIC);
            qk_plot_printf(p, "\\n");
            qk_plot_put_text(p->mem, line + 1, strlen(line + 1), FIG_TIC);
        } else {
            qk_plot_put_text(p->mem, text, strlen(text), FIG_TIC);
        }
        qk_plot_printf(p, "\" %d%s", m, m + 1 < n ? ", " : ")\n");
    }
    qk_plot_printf(p, "set xrange [-0.6:%d.6]\n", n - 1);
}

/* 1 where checkpoints i and j were captured with the same context (both
 * unknown counts as the same). */
static int same_context(const double *context, int i, int j)
{
    return context[i] == context[j] || (isnan(context[i]) && isnan(context[j]));
}

void fig_context_groups(qk_plot *p, const double *context, int n, double below_chars,
                        int short_form)
{
    int start = 0, group = 0;
    for (int i = 1; i <= n; i++) {
        if (i < n && same_context(context, i, start))
            continue;
        if (i < n)
            qk_plot_printf(p, "set arrow %d from %d.5, graph 0 to %d.5, graph 1 nohead back "
                              "dt 2 lw 1.4 lc rgb '#777777'\n", FIG_CONTEXT_TAG + group, i - 1,
                           i - 1);
        if (isfinite(context[start])) {
            char tokens[32];
            fig_tokens(context[start], tokens, sizeof tokens);
            qk_plot_printf(p, "set label %d \"{/:Italic %s%s}\" at %.2f, graph 0 center "
                              "offset 0, %.2f tc rgb '#555555'\n", FIG_CONTEXT_TAG + group,
                           tokens, short_form ? "" : " context", (start + i - 1) / 2.0,
                           -below_chars);
        }
        group++, start = i;
    }
}

void fig_context_rows(qk_plot *p, const double *context, int n, double x_screen)
{
    int start = 0, group = 0;
    for (int i = 1; i <= n; i++) {
        if (i < n && same_context(context, i, start))
            continue;
        if (i < n)
            qk_plot_printf(p, "set arrow %d from graph 0, first %d.5 to graph 1, first %d.5 "
                              "nohead front dt 2 lw 1.6 lc rgb '#ffffff'\n",
                           FIG_CONTEXT_TAG + group, i - 1, i - 1);
        if (isfinite(context[start])) {
            char tokens[32];
            fig_tokens(context[start], tokens, sizeof tokens);
            qk_plot_printf(p, "set label %d \"{/:Italic %s}\" at screen %.4f, first %.2f "
                              "center rotate by 90 tc rgb '#555555'\n", FIG_CONTEXT_TAG + group,
                           tokens, x_screen, (start + i - 1) / 2.0);
        }
        group++, start = i;
    }
}

/* ---- the canvas of a figure this run cannot draw --------------------------------- */

/* Appends text to the canvas as lines of at most width characters, as
 * labels from screen height *y down; returns the lines written. */
static int wrapped_lines(qk_plot *p, const char *text, int width, double *y, double step,
                         int font_pt, const char *color, int tag)
{
    int lines = 0;
    const char *s = text;
    while (*s) {
        while (*s == ' ')
            s++;
        size_t len = strlen(s), cut = len;
        if (len > (size_t)width) {
            cut = (size_t)width;
            while (cut > 0 && s[cut] != ' ')
                cut--;
            if (cut == 0)
                cut = (size_t)width;
        }
        qk_plot_printf(p, "set label %d \"", tag + lines);
        fig_text_chars(p, s, cut);
        qk_plot_printf(p, "\" at screen 0.08, screen %.4f left font \",%d\" tc rgb '%s'\n", *y,
                       font_pt, color);
        *y -= step;
        s += cut;
        lines++;
    }
    return lines;
}

int fig_not_drawn(fig_ctx *ctx, qk_err *err, const char *reason, ...)
{
    char why[1024], title[256], needs[1024];
    va_list ap;
    va_start(ap, reason);
    vsnprintf(why, sizeof why, reason, ap);
    va_end(ap);
    fig_title_text(ctx, title, sizeof title);
    fig_expand(ctx, ctx->def->needs, needs, sizeof needs);
    qk_plot p;
    fig_begin(&p, 1600, 700, 16);
    /* the box below the title block; lines of at most 120 characters, in
     * print as many as its width holds (DejaVu Sans at up to 0.72 em a
     * character) */
    double box_top = 0.84, shift = 0;
    int chars = 120;
    if (fig_print(&p)) {
        double title_bottom = 1 - (TITLE_BOTTOM(20, 1) + 6) / p.height;
        shift = fmax(0, box_top - title_bottom);
        box_top -= shift;
        chars = (int)(0.86 * p.width / (0.72 * 15));
    }
    qk_plot_printf(&p, "unset label\nunset arrow\nunset object\nunset key\nunset border\n"
                       "unset xtics\nunset ytics\nunset grid\nunset xlabel\nunset ylabel\n"
                       "set lmargin at screen 0.03\nset rmargin at screen 0.97\n"
                       "set bmargin at screen 0.04\nset tmargin at screen %.2f\n", box_top);
    fig_title(&p, title, "not drawn in this run", 20);
    qk_plot_printf(&p, "set object 1 rectangle from screen 0.03, screen 0.05 to screen 0.97, "
                       "screen %.2f fc rgb '#f4f4f4' fs solid 1.0 border lc rgb '#bbbbbb' behind\n"
                       "set label 1 \"Not drawn: this run lacks the data of this figure\" "
                       "at screen 0.08, screen %.2f left font \",24\" tc rgb '#555555'\n",
                   box_top, 0.74 - shift);
    double y = 0.62 - shift;
    qk_plot_printf(&p, "set label 2 \"It needs\" at screen 0.08, screen %.4f left font \",17\" "
                       "tc rgb '#222222'\n", y);
    y -= 0.065;
    wrapped_lines(&p, needs, chars, &y, 0.055, 15, "#333333", 10);
    y -= 0.03;
    qk_plot_printf(&p, "set label 3 \"This run\" at screen 0.08, screen %.4f left font \",17\" "
                       "tc rgb '#222222'\n", y);
    y -= 0.065;
    wrapped_lines(&p, why, chars, &y, 0.055, 15, "#333333", 30);
    /* a plot with nothing in it draws the canvas */
    qk_plot_printf(&p, "set xrange [0:1]\nset yrange [0:1]\nplot NaN notitle\n");
    fig_key(ctx, "drawn", "no: this run lacks the data of this figure");
    fig_key(ctx, "needs", "%s", needs);
    fig_key(ctx, "this run", "%s", why);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

int fig_not_drawn_absent(fig_ctx *ctx, qk_err *err)
{
    char files[1024] = "", datasets[512] = "";
    for (int i = 0; i < ctx->n_inputs; i++) {
        if (ctx->input_paths[i])
            continue;
        size_t used = strlen(files);
        snprintf(files + used, sizeof files - used, "%s%s", used ? ", " : "",
                 ctx->absent_files[i] ? ctx->absent_files[i] : ctx->input_names[i]);
    }
    if (ctx->run_datasets && *ctx->run_datasets) {
        /* at most six ids, then how many more */
        int n = 0;
        const char *s = ctx->run_datasets;
        while (*s) {
            while (*s == ' ')
                s++;
            size_t len = strcspn(s, " ");
            if (!len)
                break;
            size_t used = strlen(datasets);
            if (n < 6)
                snprintf(datasets + used, sizeof datasets - used, "%s%.*s", n ? ", " : "",
                         (int)len, s);
            n++;
            s += len;
        }
        if (n > 6) {
            size_t used = strlen(datasets);
            snprintf(datasets + used, sizeof datasets - used, " and %d more", n - 6);
        }
    }
    char choice[256];
    fig_model_choice(ctx, NULL, choice, sizeof choice);
    return fig_not_drawn(ctx, err, "The datasets of this run (%s) include none this figure "
                         "is drawn from, so the run does not make its input tables (%s).%s",
                         *datasets ? datasets : "none", files, choice);
}

void fig_model_choice(const fig_ctx *ctx, const char *suggest, char *out, size_t cap)
{
    const char *param = ctx->def->model_param;
    out[0] = '\0';
    if (!param || !ctx->model)
        return;
    if (!suggest) {
        snprintf(out, cap, " Its model is chosen by the parameter %s (now %s).", param, ctx->model);
        return;
    }
    const char *label = fig_has_input(ctx, "registry") ? fig_registry(ctx, suggest, "label", suggest)
                                                       : suggest;
    snprintf(out, cap, " Choose a model of this run with the parameter %s: make report %s=%s "
             "draws %s.", param, param, suggest, label);
}

void fig_token_tics(qk_plot *p, const char *axis, double lo, double hi)
{
    /* a power-of-two step (in tokens) that gives at most six intervals */
    double span = hi - lo, step = 1;
    while (span / step > 6)
        step *= 2;
    qk_plot_printf(p, "set %stics (", axis);
    int first = 1;
    for (double v = ceil(lo / step) * step; v <= hi + 1e-9; v += step) {
        char lab[32];
        fig_tokens(v, lab, sizeof lab);
        qk_plot_printf(p, "%s\"%s\" %.0f", first ? "" : ", ", lab, v);
        first = 0;
    }
    qk_plot_printf(p, ")\n");
}

void fig_power_text(double v, int decimals, char *out, size_t cap)
{
    if (v == 0) {
        snprintf(out, cap, "0");
        return;
    }
    int e = (int)floor(log10(fabs(v)));
    double mant = v / pow(10, e);
    if (fabs(mant) >= 10 - 0.5 * pow(10, -decimals)) /* it would round to 10.0 */
        mant /= 10, e++;
    fig_fmt(out, cap, "%.*f×10^{%d}", decimals, mant, e);
}

/* A round step (1, 2, 2.5 or 5 times ten to the *exp) giving about n
 * intervals from lo to hi; *mult its factor. */
static double power_step(double lo, double hi, int n, double *mult, int *exp)
{
    *exp = (int)floor(log10((hi - lo) / n));
    double f = (hi - lo) / n / pow(10, *exp);
    *mult = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
    if (*mult == 10)
        *mult = 1, ++*exp;
    return *mult * pow(10, *exp);
}

/* The tics from lo to hi labelled as powers of ten, about two thirds as
 * many as ticks (the labels are longer) but at least two where ticks
 * allow; the mantissas with the decimals that tell the steps apart at the
 * largest tick. */
static void power_tics(qk_plot *p, const char *axis, double lo, double hi, int ticks)
{
    double mult = 1, step = 0, first = 0, last = -1;
    int exp = 0;
    for (int n = (2 * ticks + 2) / 3; n <= ticks && last - first < 1; n++) {
        step = power_step(lo, hi, n, &mult, &exp);
        first = ceil(lo / step - 1e-9), last = floor(hi / step + 1e-9);
    }
    double top = fmax(fabs(first * step), fabs(last * step));
    int decimals = top > 0 ? (int)floor(log10(top)) - exp + (mult == 2.5) : 0;
    decimals = decimals < 0 ? 0 : decimals;
    qk_plot_printf(p, "set %stics (", axis);
    for (double k = first; k <= last; k++) {
        double v = k * step + 0.0; /* + 0.0: no -0 */
        char label[64];
        fig_power_text(v, decimals, label, sizeof label);
        qk_plot_printf(p, "%s\"%s\" %.10g", k > first ? ", " : "", label, v);
    }
    qk_plot_printf(p, ")\n");
}

/* The round step of fig_axis_tics from lo to hi on p (1, 2, 2.5 or 5 times
 * a power of ten giving about *ticks intervals, fewer in print), 0 when the
 * range has none. */
static double round_step(const qk_plot *p, double lo, double hi, int *ticks)
{
    /* the print canvas is narrower in font units: fewer labels */
    if (fig_print(p) && *ticks > 4)
        *ticks = (int)lround(fmax(4, 0.7 * *ticks));
    double span = hi - lo, raw = span / (*ticks > 0 ? *ticks : 5);
    if (!(raw > 0) || !isfinite(raw))
        return 0;
    double mag = pow(10, floor(log10(raw))), f = raw / mag;
    double mult = f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10;
    return mult * mag;
}

/* steps too fine or values too large for a fixed-point label */
static int power_step_needed(double step, double lo, double hi)
{
    return step < FIG_FIXED_STEP_MIN || fmax(fabs(lo), fabs(hi)) >= FIG_FIXED_MAX;
}

int fig_power_scale(const qk_plot *p, double lo, double hi, int ticks)
{
    double step = round_step(p, lo, hi, &ticks);
    return step > 0 && power_step_needed(step, lo, hi);
}

void fig_axis_tics(qk_plot *p, const char *axis, double lo, double hi, int ticks)
{
    double step = round_step(p, lo, hi, &ticks);
    if (!(step > 0)) {
        qk_plot_printf(p, "set %stics autofreq\nset format %s \"%% h\"\n", axis, axis);
        return;
    }
    if (power_step_needed(step, lo, hi)) {
        power_tics(p, axis, lo, hi, ticks > 0 ? ticks : 5);
        return;
    }
    /* as many decimals as the step has */
    int decimals = 0;
    while (decimals < 8 && fabs(step * pow(10, decimals) - round(step * pow(10, decimals))) > 1e-6)
        decimals++;
    qk_plot_printf(p, "set %stics %.10g\nset format %s \"%%.%df\"\n", axis, step, axis, decimals);
}

void fig_heads_phrase(const double *heads, int n, const char *per, char *out, size_t cap)
{
    double lo = n > 0 ? heads[0] : 0, hi = lo;
    for (int i = 1; i < n; i++)
        lo = fmin(lo, heads[i]), hi = fmax(hi, heads[i]);
    if (lo == hi)
        snprintf(out, cap, "n = %.0f heads %s", lo, per);
    else
        snprintf(out, cap, "n = %.0f to %.0f heads %s", lo, hi, per);
}

void fig_correlation_text(double r, int n, const char *what, char *out, size_t cap)
{
    char rt[32], lt[32], ht[32];
    double lo, hi;
    if (!isfinite(r)) {
        snprintf(out, cap, "r = n/a, n = %d %s", n, what);
        return;
    }
    fig_fmt(rt, sizeof rt, "%+.2f", r);
    qk_pearson_interval(r, n, &lo, &hi);
    if (!isfinite(lo)) {
        snprintf(out, cap, "r = %s, n = %d %s (no interval on %d points)", rt, n, what, n);
        return;
    }
    fig_fmt(lt, sizeof lt, "%+.2f", lo);
    fig_fmt(ht, sizeof ht, "%+.2f", hi);
    snprintf(out, cap, "r = %s (95 %% CI %s to %s), n = %d %s%s", rt, lt, ht, n, what,
             n < FIG_FEW_POINTS ? "; few points: the interval is wide" : "");
}
