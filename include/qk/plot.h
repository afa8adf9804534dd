/* Figures through gnuplot: a figure's script is built in memory (data
 * blocks inline), saved beside the figure as figure.gp, and piped to
 * gnuplot three times: pngcairo and svg for the report, pdfcairo for a
 * thesis (16 cm wide, fonts embedded). */
#ifndef QK_PLOT_H
#define QK_PLOT_H

#include <stdio.h>

#include "qk/common.h"

/* What qk_plot_render makes of a script: the screen media (figure.png,
 * figure.svg and the script figure.gp), the print medium (figure.pdf), or
 * all three from the one script. */
typedef enum { QK_PLOT_ALL, QK_PLOT_SCREEN, QK_PLOT_PRINT } qk_plot_media;

typedef struct qk_plot {
    FILE *mem;
    char *script;
    size_t len;
    int width;  /* pixels of the PNG; the SVG gets the same size */
    int height;
    qk_plot_media media; /* QK_PLOT_ALL unless set after qk_plot_begin */
} qk_plot;

/* Starts a figure of width x height pixels. For QK_PLOT_PRINT, width and
 * height are those of the canvas the script lays out: the PDF is 16 cm
 * wide whatever they are, and a font point prints at 16 cm / width. */
void qk_plot_begin(qk_plot *p, int width, int height);
/* Appends script text. */
void qk_plot_printf(qk_plot *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Opens an inline data block "$name << EOD"; rows follow with
 * qk_plot_printf; qk_plot_data_end closes it. */
void qk_plot_data_begin(qk_plot *p, const char *name);
void qk_plot_data_end(qk_plot *p);
/* How text goes into a double-quoted gnuplot string or a quoted field of
 * inline data (its quotes not included): QK_PLOT_MARKUP keeps the
 * enhanced-text markup ("{/:Italic r}_q"), escaping only quotes and
 * backslashes; QK_PLOT_LITERAL draws the text as it is (the markup
 * characters _ ^ { } @ & ~ \ escaped, a quote as \042, which also holds in
 * inline data); QK_PLOT_FORMAT (with either) doubles '%', for a label of a
 * tic list, which gnuplot reads as a format. At most n bytes of text. */
enum { QK_PLOT_MARKUP = 0, QK_PLOT_LITERAL = 1, QK_PLOT_FORMAT = 2 };
void qk_plot_put_text(FILE *fp, const char *text, size_t n, int how);
/* text with a backslash before each enhanced-text markup character, for
 * a part of a markup text (a title) that must show literally; cut to fit
 * cap (at a whole character). Returns the length written. */
size_t qk_plot_enhanced_escape(char *out, size_t cap, const char *text);
/* A gnuplot string literal with quotes and backslashes escaped (markup kept). */
void qk_plot_quoted(qk_plot *p, const char *text);

/* Writes DIR/figure.gp, DIR/figure.png, DIR/figure.svg and DIR/figure.pdf
 * (each atomically; only the files of p->media) with the house style
 * (style_path, may be NULL) prepended; the figure is rendered by `gnuplot`
 * from PATH. The PDF's date
 * is SOURCE_DATE_EPOCH (else 1970-01-01), so that it is reproducible.
 * Frees the script. */
int qk_plot_render(qk_plot *p, const char *dir, const char *style_path, qk_err *err);
/* The date every figure.pdf records, as the 14 digits YYYYMMDDHHMMSS (UTC)
 * with a terminator: SOURCE_DATE_EPOCH when set (reproducible-builds.org),
 * else 1970-01-01 00:00:00. Fails on a value that is not whole seconds. */
int qk_plot_pdf_date(char digits[15], qk_err *err);
/* Drops a figure without rendering. */
void qk_plot_discard(qk_plot *p);

/* ---- the text conventions of every figure (docs/figure-style.md) ---------------- */

/* printf into out, then qk_plot_minus and qk_plot_typeset: the text of a
 * number shown in a figure ("−0.55", "12.5 %"). Returns out. */
char *qk_plot_format(char *out, size_t cap, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Replaces, in place, every hyphen that is a minus sign (followed by a digit
 * or a point and not preceded by a letter or digit: "-0.5", "(-3", "^{-6}",
 * but not "S1-40K" or "d - 2") with U+2212; the text is cut to fit cap. */
void qk_plot_minus(char *text, size_t cap);
/* A context position or length in tokens: multiples of 1024 as "16K", of
 * 1024^2 as "1M" (K = 1024 tokens, M = 1024 K), others as integers, or
 * with one decimal when not whole ("819.2"). */
void qk_plot_tokens(double tokens, char *out, size_t cap);

/* The typography of figure text, in place (the text cut to fit cap): a
 * spaced hyphen is a minus sign ("layers - 1" -> "layers − 1", U+2212) and
 * a percent sign stands a space after its number ("12.5%" -> "12.5 %"). */
void qk_plot_typeset(char *text, size_t cap);
/* qk_plot_typeset and sentence case: an axis or colour-box label starts
 * with a capital ("mean r" -> "Mean r"); a label that starts with a symbol
 * starts with its markup ("{/:Italic r}_q ...") and is left as it is. */
void qk_plot_label_text(char *text, size_t cap);
/* A percentage as a figure writes it: value with decimals, a space and the
 * sign ("12.5 %", "−3 %"). Returns out. */
char *qk_plot_percent(char *out, size_t cap, double value, int decimals);

/* The notation of the symbols, one form each in every figure (and as the
 * report writes them in HTML): enhanced text for gnuplot, italic letter
 * and subscript. Correlations with position take the kind in lower case
 * (r_q, r_k, as the PCA study names them), the rotation model's cluster
 * means and drift slopes in upper case (μ_Q, α_K, as its spec names them).
 * The table is in docs/figure-style.md. */
/* A subscript or superscript at 0.96 of its text: gnuplot's own 0.8 drew
 * them under 7 px in subtitles and collages at the page's width. */
#define QK_SUB(x) "_{/*1.2 " x "}"
#define QK_SUP(x) "^{/*1.2 " x "}"
#define QK_SYM_PEARSON_R "{/:Italic r}" /* Pearson r */
#define QK_SYM_R_Q "{/:Italic r}" QK_SUB("q")
#define QK_SYM_R_K "{/:Italic r}" QK_SUB("k")
#define QK_SYM_ALPHA_Q "{/:Italic α}" QK_SUB("Q")
#define QK_SYM_ALPHA_K "{/:Italic α}" QK_SUB("K")
#define QK_SYM_MU_Q "{/:Italic μ}" QK_SUB("Q")
#define QK_SYM_MU_K "{/:Italic μ}" QK_SUB("K")
#define QK_SYM_MU_Q_A "{/:Italic μ}" QK_SUB("Q") "^a" /* μ_Q on the drift axis a */
#define QK_SYM_AXIS_A "{/:Italic a}"    /* the drift axis of the rotation plane */
#define QK_SYM_AXIS_B "{/:Italic b}"    /* its separation axis */
#define QK_SYM_R_THETA "{/:Italic r}" QK_SUB("θ")
/* bias strength, μ_Q^a · α_K (score per token); a label writes it in words */
#define QK_SYM_BIAS QK_SYM_MU_Q_A " · " QK_SYM_ALPHA_K

#endif
