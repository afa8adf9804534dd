/* The figure framework of qk-plot: each figure is a function that reads its
 * input tables, builds a gnuplot script and records its key numbers. */
#ifndef QK_PLOT_FIGURE_H
#define QK_PLOT_FIGURE_H

#include <stdio.h>

#include "qk/common.h"
#include "qk/plot.h"
#include "qk/table.h"

struct fig_def;

typedef struct fig_ctx {
    const char *id;      /* "qk-pca/05" */
    const char *out_dir; /* figures/<study>/<NN_name> */
    const char *style;   /* house style script, or NULL */
    const struct fig_def *def;
    int n_inputs;
    char **input_names;
    char **input_paths; /* NULL for an input this run does not make (--absent) */
    char **absent_files; /* the file an --absent input would be read from, or NULL */
    qk_table *inputs;
    const char *model;    /* the model a one-model figure shows (--model), or NULL */
    char model_label[64]; /* its registry label, else its id */
    int n_values;         /* the texts' {NAME} values (--value NAME=TEXT) */
    char **value_names, **value_texts;
    const char *run_datasets; /* the datasets of the run (--run-datasets), or NULL */
    double min_share; /* an aggregate over heads is drawn in full only where at least
                         this share of the heads contribute (--min-share) */
    int own_heatmap_scale; /* 1: each plasticity heatmap its own colour scale, 0: one
                              scale for the models of --value scale_models (--heatmap-scale) */
    FILE *numbers; /* the key numbers: name<TAB>value rows (numbers.tsv) */
    char user[96]; /* "figure qk-pca/05", who needs the inputs (for messages) */
} fig_ctx;

typedef int (*fig_fn)(fig_ctx *ctx, qk_err *err);

/* A figure, as workflow/figures.rec declares it (the table is generated
 * from the registry: figure_table.h). In title, description and needs,
 * "{model}" stands for the label of the model the figure is drawn for
 * (--model), "{NAME}" for a value given with --value NAME=TEXT. */
typedef struct fig_def {
    const char *id;          /* study/NN */
    const char *title;       /* one line */
    const char *description; /* what the figure shows and how to read it */
    const char *needs;       /* the data it is drawn from, for a run that lacks them */
    fig_fn draw;
    /* 1: the figure has a print layout (figure.pdf drawn a second time,
     * fig_printing); 0: figure.pdf is the screen layout at 16 cm (text
     * smaller, the layout exactly the PNG's) */
    int print_layout;
    /* the Make parameter that chooses a one-model figure's model
     * ("PLAST_FIG01_MODEL", the registry's model field), or NULL */
    const char *model_param;
} fig_def;

/* The draw functions the registry names (generated). */
#include "figure_draw.h"

/* Input table by name; dies with a message naming the figure if it was
 * not given. */
const qk_table *fig_input(const fig_ctx *ctx, const char *name);
/* The text of --value NAME=TEXT, or NULL if none was given. */
const char *fig_value(const fig_ctx *ctx, const char *name);
/* 1 if the input was given and this run makes it (not --absent). */
int fig_has_input(const fig_ctx *ctx, const char *name);
/* The model of a one-model figure (--model); dies if none was given. */
const char *fig_model(const fig_ctx *ctx);
/* The text of a figure field with "{model}" replaced by the model's label. */
void fig_expand(const fig_ctx *ctx, const char *text, char *out, size_t cap);
/* The figure's registry title as gnuplot enhanced text, the one title its
 * drawing and its canvas show: "{model}" and the other values as literal
 * text, every markup character of the title escaped, except that a word
 * after '_' is a subscript ("AP_drop", "r_q"). */
void fig_title_text(const fig_ctx *ctx, char *out, size_t cap);
/* The file an input table was read from. */
const char *fig_path(const fig_ctx *ctx, const qk_table *t);
/* Input table by name with its file, for the qk_src readers (qk/table.h). */
qk_src fig_src(const fig_ctx *ctx, const char *name);
/* Column index by name; dies naming the table's file if absent. */
int fig_column(const fig_ctx *ctx, const qk_table *t, const char *name);
/* Numeric cell; dies on a value that is not a number. */
double fig_number_at(const fig_ctx *ctx, const qk_table *t, int row, int col);
/* Records one key number (or text) for the figure's README. */
void fig_key(fig_ctx *ctx, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* 0 for a query row (kind "q"), 1 for a key row ("k") of a points table;
 * dies naming the file on another kind. */
int fig_kind_index(const qk_src *t, int row, int col);
/* A registry column (input "registry": the dataset registry) of a dataset
 * id; fallback when the dataset or the column is not there. */
const char *fig_registry(const fig_ctx *ctx, const char *id, const char *column,
                         const char *fallback);

/* ---- a figure this run cannot draw (figure_draw.c) ----------------------------- */

/* Renders, in place of the figure, a canvas with its title that says it is
 * not drawn, what it needs (the figure's needs) and why this run cannot
 * draw it (reason, printf-style: "this run's tables hold no rows of X",
 * "2 models have a published score; a correlation needs 3"); the key
 * numbers say the same. Returns qk_plot_render's status. */
int fig_not_drawn(fig_ctx *ctx, qk_err *err, const char *reason, ...)
    __attribute__((format(printf, 3, 4)));
/* The canvas for the inputs given as --absent: names them and the run's
 * datasets. */
int fig_not_drawn_absent(fig_ctx *ctx, qk_err *err);
/* For the canvas of a one-model figure: a sentence (with a leading space)
 * naming the parameter that chooses its model (the figure's model_param)
 * and, given a dataset id suggest the figure could draw, how to choose it;
 * "" for a figure without a model parameter. */
void fig_model_choice(const fig_ctx *ctx, const char *suggest, char *out, size_t cap);

/* ---- the conventions of every figure (docs/figure-style.md) --------------------- */

/* The numbers shown in a figure: printf into out with U+2212 as minus sign
 * (qk_plot_format); returns out. */
#define fig_fmt qk_plot_format
/* Positions and lengths in tokens, K = 1024 (qk_plot_tokens). */
#define fig_tokens qk_plot_tokens

/* "n = 24 heads PER" or "n = 20 to 24 heads PER" (per: "per model",
 * "each", ...) from the head counts of the n models drawn. */
void fig_heads_phrase(const double *heads, int n, const char *per, char *out, size_t cap);

/* The correlation as a figure says it: "r = −0.67 (95 % CI −0.95 to
 * +0.23), n = 7 models" (what: "models"), and, on fewer than
 * FIG_FEW_POINTS points, "; few points: the interval is wide" (with
 * n < 4, "no interval on 3 points"). */
#define FIG_FEW_POINTS 10
void fig_correlation_text(double r, int n, const char *what, char *out, size_t cap);

/* The figure's title and, below it, its subtitle (0.78 of the size; may be
 * NULL) at the top of the canvas, at a fixed place whatever the margins,
 * keys and labels above the plot; text typeset (qk_plot_typeset: minus
 * signs, "12.5 %"), enhanced-text markup allowed. Returns the screen
 * height below the title block, where the rest of the figure (a key,
 * labels above the plot, the plot) may start.
 * fig_title is for a single plot (labels 901 to 909: a figure must not
 * unset them), fig_multiplot_title starts a multiplot. */
double fig_title(qk_plot *p, const char *title, const char *subtitle, int font_pt);
double fig_multiplot_title(qk_plot *p, const char *title, const char *subtitle, int font_pt);

/* An axis label ("x", "y", "y2", "cb"): "set AXISlabel TEXT OPTIONS" with
 * the text in the house style (qk_plot_label_text: sentence case, minus
 * signs, "12.5 %"); markup kept, a newline in text a line break. Every
 * figure writes its axis labels through it. */
void fig_axis_label(qk_plot *p, const char *axis, const char *text, const char *options);
/* A panel title ("set title"), typeset (qk_plot_typeset), markup kept. */
void fig_panel_title(qk_plot *p, const char *text, const char *options);

/* The legend outside the plot: to the right of it (right), or centred
 * across the figure with its top at screen height y (top; between the
 * title and the plot), in rows of at most columns of its entries; top
 * returns the screen height below it. */
void fig_key_right(qk_plot *p, int font_pt);
double fig_key_top(qk_plot *p, int font_pt, int columns, int entries, double y);

/* The drawn range of a quantity (figure_scale.c), so that one outlier does
 * not decide the scale: on each side the fence, the quartile widened by
 * FIG_FENCE interquartile ranges but never inside the order statistic at
 * 1 - FIG_TAIL (FIG_TAIL below), rounded toward the middle; the side is cut at the fence only when its
 * extreme lies more than FIG_STRETCH beyond it (measured from the middle
 * of the quartiles), else the range reaches the extreme. Values outside
 * are drawn at the edge and counted. With fewer than FIG_ROBUST_MIN values,
 * or an interquartile range of 0, the range is the values' extent. */
#define FIG_FENCE 3.0
#define FIG_TAIL 0.02
#define FIG_STRETCH 0.5
#define FIG_ROBUST_MIN 8
/* A distribution of fewer values than this is drawn as its points (a strip
 * with jitter), not as a density or histogram (qk-rotation/04). */
#define FIG_DENSITY_MIN_N 50
typedef struct fig_range {
    double lo, hi;     /* the drawn range */
    double min, max;   /* extent of the finite values (NAN if none) */
    int n;             /* finite values */
    int below, above;  /* values outside [lo, hi] */
} fig_range;

fig_range fig_robust_range(const double *v, int n);
/* The extent and the counts outside [lo, hi] of other values v (a range
 * decided on part of the values, applied to all of them). */
void fig_range_recount(fig_range *r, const double *v, int n);
/* Widens the range to hold x (a reference such as 0) and recounts. */
void fig_range_include(fig_range *r, double x, const double *v, int n);
/* lo and hi padded by frac of their span (at least pad_min). */
void fig_range_pad(const fig_range *r, double frac, double *lo, double *hi);
/* A scale of one value, or whose ends six significant digits do not tell
 * apart (the scripts write ranges with %.6g; gnuplot refuses an empty
 * one), widened about its middle by 10 % of the value (0.5 about 0): the
 * value sits in the middle of a scale that is drawn. Leaves other ranges
 * and ends that are not finite as they are. */
void fig_range_widen(double *lo, double *hi);
/* v clipped to the range; *side = -1 below, 1 above, 0 inside. */
double fig_clip(const fig_range *r, double v, int *side);
/* Labels just above the plot's frame, at its right end "▲ 2 above the
 * scale (max 23.5)" and at its left end "▼ 1 below the scale (min ...)";
 * nothing for a side with no value outside. fmt formats the extreme value;
 * the labels take the tags tag and tag + 1. */
void fig_offscale_labels(qk_plot *p, const fig_range *r, const char *fmt, int tag, int font_pt);

/* Tics of an axis ("x", "y", "cb") from lo to hi at a round step (1, 2,
 * 2.5 or 5 times a power of ten) giving about ticks intervals, every label
 * with the decimals of the step ("0.05", "0.10", "0.15"); with a step below
 * FIG_FIXED_STEP_MIN or an end at FIG_FIXED_MAX or beyond, labels as powers
 * of ten in enhanced text ("2.5×10^{−7}"). */
#define FIG_FIXED_STEP_MIN 1e-4
#define FIG_FIXED_MAX 1e6
/* Whether fig_axis_tics labels that axis as powers of ten (values drawn on
 * it, such as heatmap cells, are then written the same way). */
int fig_power_scale(const qk_plot *p, double lo, double hi, int ticks);
/* v as gnuplot enhanced text, its mantissa to the given decimals:
 * "2.5×10^{−7}", 0 as "0". */
void fig_power_text(double v, int decimals, char *out, size_t cap);
void fig_axis_tics(qk_plot *p, const char *axis, double lo, double hi, int ticks);

/* Tics of an axis ("x", "y", "cb") of token positions from lo to hi: at
 * multiples of a power-of-two step, at most six intervals, labelled with
 * K = 1024 tokens ("32K"). */
void fig_token_tics(qk_plot *p, const char *axis, double lo, double hi);

/* A checkpoint's registry label as drawn: split at its first '-' with sep
 * between the phase and the training step, the step's thousands with a
 * lowercase k ("S1-40k" or "S1-40K" -> "S1" sep "40k", "S1-1.2M" -> "S1" sep "1.2M"),
 * since an uppercase K is 1024 tokens (docs/figure-style.md). */
void fig_checkpoint_label(const char *label, const char *sep, char *out, size_t cap);
/* The checkpoints of a training run on the x axis at 0..n-1: each label
 * on two lines, phase over step (fig_checkpoint_label). */
void fig_checkpoint_tics(qk_plot *p, const char *const *labels, int n);
/* Under such an axis, for each run of checkpoints captured with one context
 * length (context[i], tokens; NAN: not known, no label) the length in
 * italics centred under the run ("4K context", K = 1024; short_form: "4K",
 * for narrow runs, the figure's subtitle saying what the italics are)
 * below_chars characters below the axis, and a dashed line between runs;
 * labels and arrows take the tags from FIG_CONTEXT_TAG on. */
#define FIG_CONTEXT_TAG 60
void fig_context_groups(qk_plot *p, const double *context, int n, double below_chars,
                        int short_form);

/* The same for checkpoints as rows 0..n-1 (first y coordinates) of a
 * heatmap: a dashed white line between runs across the cells and the
 * length ("4K", italics, turned 90 degrees) centred beside each run at
 * screen x x_screen, left of the row labels; the figure's subtitle says
 * what the italics are. */
void fig_context_rows(qk_plot *p, const double *context, int n, double x_screen);

/* ---- drawing pieces every study uses (figure_draw.c) ---------------------------- */

/* The Okabe-Ito colours (readable with the common colour-vision
 * deficiencies); queries are blue and keys vermillion in every figure. */
#define FIG_BLUE "#0072B2"
#define FIG_VERMILLION "#D55E00"
#define FIG_GREEN "#009E73" /* bluish green */
#define FIG_ORANGE "#E69F00"
#define FIG_PURPLE "#CC79A7" /* reddish purple */
#define FIG_SKY_BLUE "#56B4E9"
#define FIG_BLACK "#000000"
#define FIG_YELLOW "#F0E442"
#define FIG_GREY "#808080"
/* A quantity whose colour would carry no meaning (one series in its own
 * panel, such as the bias bars of plasticity 09): dark grey, so that no
 * family, phase, query or key colour is given a second meaning. */
#define FIG_NEUTRAL "#5f5f5f"
/* The eight in the order families (and models in a panel) take them. */
extern const char *const fig_okabe_ito[8];

/* The colour of a family in every figure: the Okabe-Ito colour of its rank
 * among the registry's families (qk_family_rank), so that a family keeps
 * its colour whatever models a run holds; grey for an unlisted family. */
const char *fig_family_color(const fig_ctx *ctx, const char *family);
/* The marker (gnuplot point type) of the k-th model of a family: circle,
 * square, triangle, diamond, inverted triangle, pentagon. */
int fig_model_marker(int k);

/* ColorBrewer's sequential Blues and Reds as RGB stops at 0, 1/8, ..., 1. */
extern const int fig_blues[9], fig_reds[9];
/* The colour of a map at x in [0, 1] (NaN: 0), linear between the stops;
 * lo_cut > 0 uses only the part above it (so that the lightest colours
 * stay visible on white). */
int fig_map_color(const int stops[9], double x, double lo_cut);
/* "set palette defined (...)" of that map, 17 samples. */
void fig_palette(qk_plot *p, const int stops[9], double lo_cut);
/* "set palette defined (...)" of the nine stops themselves. */
void fig_palette_stops(qk_plot *p, const int stops[9]);
/* A diverging palette over [-1, 1] of two such maps back to back: above
 * from its lightest stop at 0 to its darkest at 1, below mirrored from 0
 * to -1 (its lightest stop is left out: both are near white). */
/* In a multiplot, a plot that draws nothing but the colour box set before
 * it (placed in screen coordinates): the second colour bar of a figure whose
 * only panel draws the first. Draws no border, tick, grid or text. */
void fig_colorbox_only(qk_plot *p);
void fig_palette_diverging(qk_plot *p, const int below[9], const int above[9]);

/* Every figure is drawn twice: for the screen (figure.png, figure.svg) on
 * a canvas of the width and height it asks for, and, with fig_printing set,
 * for print (figure.pdf, 16 cm wide): then the canvas has the same aspect
 * but is as wide as makes the base font print at FIG_PRINT_PT points, so
 * that every size given in points (fonts, character margins) and every
 * position computed from them and p->width or p->height (titles, keys)
 * stays legible; fig_print(p) tells a figure which layout it draws. */
#define FIG_PRINT_PT 7.0
extern int fig_printing;
/* Set by main before the screen pass: whether a print pass follows (the
 * figure's print_layout); without one the screen script also makes the PDF. */
extern int fig_print_pass;
static inline int fig_print(const qk_plot *p) { return p->media == QK_PLOT_PRINT; }

/* The width of the print canvas of a figure width wide with a base font
 * of font_pt points (for a print layout that decides its height in font
 * units before fig_begin). */
double fig_print_width(int width, int font_pt);

/* Starts a figure (qk_plot_begin) with a base font of font_pt points and
 * defines qk_ps, the point-size scale that makes the SVG look like the PNG. */
void fig_begin(qk_plot *p, int width, int height, int font_pt);

/* Text from the data as a gnuplot string shown literally under the
 * enhanced-text mode (no sub- or superscripts from '_' or '^'): the
 * double-quoted string, or its first n characters without the quotes. */
void fig_text(qk_plot *p, const char *text);
/* The width of plain text in the figures' font, in em (of its font size):
 * the room a label needs. */
double fig_text_em(const char *text);
void fig_text_chars(qk_plot *p, const char *text, size_t n);
/* The same for the label of a tic list ("set xtics ("LABEL" 0, ...)"),
 * which gnuplot reads as a format: '%' doubled. */
#define FIG_TIC (QK_PLOT_LITERAL | QK_PLOT_FORMAT)
void fig_tic_text(qk_plot *p, const char *text);
/* text (a label from the data) for a part of a markup text, a title:
 * written into buf with its markup characters escaped. Returns buf. */
static inline const char *fig_literal(char *buf, size_t cap, const char *text)
{
    qk_plot_enhanced_escape(buf, cap, text);
    return buf;
}
/* Text with enhanced-text markup kept ("{/:Italic r}_q"), without quotes:
 * only quotes and backslashes are escaped; or its first n characters. */
void fig_text_markup(qk_plot *p, const char *text);
void fig_text_markup_chars(qk_plot *p, const char *text, size_t n);

/* Values on hover (figure_hover.c): fig_begin_hover starts a figure as
 * fig_begin does, its SVG with gnuplot's mouse script; fig_hover_text ends a row of inline
 * data with its hover text, a quoted field ("|" breaks its lines);
 * fig_hover_plot adds to a plot command the invisible points of block
 * (columns x, y and the text) that show it in the SVG. */
void fig_begin_hover(qk_plot *p, int width, int height, int font_pt);
void fig_hover_text(qk_plot *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void fig_hover_plot(qk_plot *p, const char *block, int x_col, int y_col, int text_col,
                    double point_size);

#endif
