/* The point-cloud figures of the rotation study: the {a, b} planes of a few
 * heads (01) and the complement pairs of one head (08). The points come
 * from qk-rotation-points; the heads' numbers from the dataset's rotated.tsv
 * and complement_pairs.tsv. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rotation_fig.h"

#include "qk/die.h"

#define MAX_PANELS 16
#define LIGHT_CUT 0.2 /* the lightest fifth of Blues and Reds is not used */

/* ---- the inputs ------------------------------------------------------------------- */

typedef struct drawn_head {
    int panel, draw;
    char dataset[64];
    int layer, head, kv_head, dim;
    int plotted_q, plotted_k;
    int complement_pairs, complement_q, complement_k;
    int available;
    long seed;
    int row; /* in the heads table */
} drawn_head;

/* The row of (layer, head) in a per-head table with layer and head columns. */
static int head_row(const qk_src *t, int layer, int head)
{
    int c_layer = qk_src_col(t, "layer"), c_head = qk_src_col(t, "head");
    for (int r = 0; r < t->t->n_rows; r++)
        if (qk_src_int(t, r, c_layer) == layer && qk_src_int(t, r, c_head) == head)
            return r;
    qk_die(QK_EXIT_DATA, t->path, "no row for layer %d head %d", layer, head);
}

static int read_panels(const qk_src *t, const qk_src *heads, drawn_head *out)
{
    static const char *const cols[] = {"panel", "draw", "layer", "head", "kv_head", "dim",
                                       "plotted_q", "plotted_k", "complement_pairs",
                                       "complement_plotted_q", "complement_plotted_k",
                                       "heads_available", "seed"};
    int c[13];
    for (int i = 0; i < 13; i++)
        c[i] = qk_src_col(t, cols[i]);
    int c_dataset = qk_src_col(t, "dataset"), n = t->t->n_rows;
    if (n > MAX_PANELS)
        qk_die(QK_EXIT_DATA, t->path, "%d panels (expected at most %d)", n, MAX_PANELS);
    for (int r = 0; r < n; r++) {
        drawn_head *h = &out[r];
        int v[13];
        for (int i = 0; i < 13; i++)
            v[i] = qk_src_int(t, r, c[i]);
        if (v[0] != r)
            qk_die(QK_EXIT_DATA, t->path, "line %d: panels must be numbered 0, 1, ...", r + 2);
        *h = (drawn_head){v[0], v[1], "", v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10],
                          v[11], (long)qk_src_num(t, r, c[12]), 0};
        snprintf(h->dataset, sizeof h->dataset, "%s", qk_table_cell(t->t, r, c_dataset));
        h->row = head_row(heads, h->layer, h->head);
    }
    return n;
}

/* The colour scale of positions: 0 to the dataset's context length (from
 * the registry), else to the largest position + 1. */
static double position_scale(const fig_ctx *ctx, const char *dataset, const qk_src *points)
{
    qk_src reg = fig_src(ctx, "registry");
    int c_id = qk_src_col(&reg, "id"), c_ctx = qk_src_col(&reg, "context_length");
    for (int r = 0; r < reg.t->n_rows; r++)
        if (strcmp(qk_table_cell(reg.t, r, c_id), dataset) == 0)
            return qk_src_num(&reg, r, c_ctx);
    int c_pos = qk_src_col(points, "position");
    double top = 1;
    for (int r = 0; r < points->t->n_rows; r++)
        top = fmax(top, qk_src_num(points, r, c_pos) + 1);
    return top;
}

/* ARGB of a point: alpha 0.6, the kind's map at its position. */
static unsigned point_color(int kind, double position, double scale)
{
    int rgb = fig_map_color(kind ? fig_reds : fig_blues, position / scale, LIGHT_CUT);
    return 0x66000000u | (unsigned)rgb;
}

/* A number as gnuplot enhanced text: 6.0×10^{-6}. */
static void sci_text(double v, char *out, size_t cap)
{
    if (!isfinite(v) || v == 0) {
        snprintf(out, cap, isnan(v) ? "n/a" : "%g", v);
        return;
    }
    int e = (int)floor(log10(fabs(v)));
    double mant = v / pow(10, e);
    if (fabs(mant) >= 9.95)
        mant /= 10, e++;
    fig_fmt(out, cap, "%.1f×10" QK_SUP("%d"), mant, e);
}

/* ---- colour bars -------------------------------------------------------------------- */

/* The colour bar a panel carries (colour bars are drawn by panels so that
 * the script renders the same under each terminal). */
typedef struct colorbar {
    const int *stops;
    double scale;
    double y0, height;
    const char *label;
} colorbar;

static void set_colorbar(qk_plot *p, const colorbar *cb, double x0)
{
    if (!cb) {
        qk_plot_printf(p, "unset colorbox\n");
        return;
    }
    fig_palette(p, cb->stops, LIGHT_CUT);
    qk_plot_printf(p, "set cbrange [0:%.0f]\n", cb->scale);
    fig_token_tics(p, "cb", 0, cb->scale);
    /* its own frame style: a panel framed as active must not recolour it */
    qk_plot_printf(p, "set style line 100 lc rgb '#444444' lw 1\n"
                      "set colorbox vertical user origin screen %.4f, screen %.4f size screen "
                      "0.014, screen %.4f border 100\n", x0, cb->y0, cb->height);
    fig_axis_label(p, "cb", cb->label, "offset 0.8,0");
}

/* ---- 01: the {a, b} planes ------------------------------------------------------------- */

/* $pN: a, b and colour of the points of the table's panel, drawn N-th,
 * keys first so that the queries are drawn on top. */
static void ab_data(qk_plot *p, const qk_src *t, int panel, int shown, double scale)
{
    int c_panel = qk_src_col(t, "panel"), c_kind = qk_src_col(t, "kind");
    int c_pos = qk_src_col(t, "position"), c_a = qk_src_col(t, "a"), c_b = qk_src_col(t, "b");
    char name[16];
    snprintf(name, sizeof name, "p%d", shown);
    qk_plot_data_begin(p, name);
    for (int kind = 1; kind >= 0; kind--)
        for (int r = 0; r < t->t->n_rows; r++) {
            if (qk_src_int(t, r, c_panel) != panel || fig_kind_index(t, r, c_kind) != kind)
                continue;
            qk_plot_printf(p, "%.5g %.5g %u\n", qk_src_num(t, r, c_a), qk_src_num(t, r, c_b),
                           point_color(kind, qk_src_num(t, r, c_pos), scale));
        }
    qk_plot_printf(p, "NaN NaN 0\n");
    qk_plot_data_end(p);
}

static double head_value(const qk_src *heads, int row, const char *column)
{
    return qk_src_num(heads, row, qk_src_col(heads, column));
}

/* "|r| with position = 0.30 (n = 1988), ω = 2.1×10^{-4} rad/token": the
 * pooled correlation is unsigned (position_r, docs/rotation.md) and rests
 * on the head's queries and keys; a fit that settled on the search grid's
 * lowest frequency gives no value, only a bound: "ω ≤ 6.0×10^{-6}
 * rad/token (at the grid's lower bound)" */
static void head_numbers(const qk_src *heads, int row, char *out, size_t cap)
{
    char omega[48], r[32];
    sci_text(head_value(heads, row, "omega"), omega, sizeof omega);
    fig_fmt(r, sizeof r, "%.2f", head_value(heads, row, "position_r"));
    int at_bound = head_value(heads, row, "omega_at_bound") != 0;
    snprintf(out, cap, "|{/:Italic r}| with position = %s (n = %.0f), {/:Italic ω} %s %s rad/token%s",
             r, head_value(heads, row, "n_q") + head_value(heads, row, "n_k"), at_bound ? "≤" : "=",
             omega, at_bound ? " (at the grid's lower bound)" : "");
}

/* The panels in the order the heads were drawn (the sample's order, as
 * qk-pca/06 shows the same heads), not in (layer, head) order. */
static void order_by_draw(drawn_head *h, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && h[j].draw < h[j - 1].draw; j--) {
            drawn_head swap = h[j];
            h[j] = h[j - 1], h[j - 1] = swap;
        }
}

/* The panel grid of figure 01 in screen units: bottom and height of the
 * area, and the room of each panel's title and x label. */
#define AB_BOTTOM 0.012
#define AB_HEIGHT 0.905
#define AB_PAD_TOP 0.062
#define AB_PAD_BOTTOM 0.048

static void ab_panel(qk_plot *p, const qk_src *heads, const drawn_head *h, int i, int n,
                     const colorbar *cb)
{
    int cols = n < 2 ? 1 : 2, rows = (n + cols - 1) / cols;
    int row = i / cols, col = i % cols;
    double w = 0.84 / cols, ht = AB_HEIGHT / rows;
    double x0 = 0.01 + col * w, y0 = AB_BOTTOM + (rows - 1 - row) * ht;
    qk_plot_printf(p, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n"
                      "set bmargin at screen %.4f\nset tmargin at screen %.4f\n",
                   x0 + 0.05, x0 + w - 0.012, y0 + AB_PAD_BOTTOM, y0 + ht - AB_PAD_TOP);
    if (row == rows - 1 || i + cols >= n)
        fig_axis_label(p, "x", QK_SYM_AXIS_A " (drift axis, raw projection)", NULL);
    else
        qk_plot_printf(p, "unset xlabel\n");
    if (col == 0)
        fig_axis_label(p, "y", QK_SYM_AXIS_B " (separation axis)", NULL);
    else
        qk_plot_printf(p, "unset ylabel\n");
    set_colorbar(p, cb, 0.885);
    char numbers[224];
    head_numbers(heads, h->row, numbers, sizeof numbers);
    qk_plot_printf(p, "set title \"Layer %d, head %d (key head %d)\\n{/*0.8 %s}\" font \",17\"\n",
                   h->layer, h->head, h->kv_head, numbers);
    double mqa = head_value(heads, h->row, "mu_q_a"), mqb = head_value(heads, h->row, "mu_q_b");
    double mka = head_value(heads, h->row, "mu_k_a"), mkb = head_value(heads, h->row, "mu_k_b");
    /* a head without spread has no finite centroid on the axes: no marker */
    int q_ok = isfinite(mqa) && isfinite(mqb), k_ok = isfinite(mka) && isfinite(mkb);
    qk_plot_printf(p, "unset label\n");
    if (q_ok)
        qk_plot_printf(p, "set label 1 \"" QK_SYM_MU_Q "\" at %.6g, %.6g offset 1.4,1.1 front "
                          "boxed font \",14\"\n", mqa, mqb);
    if (k_ok)
        qk_plot_printf(p, "set label 2 \"" QK_SYM_MU_K "\" at %.6g, %.6g offset 1.4,1.1 front "
                          "boxed font \",14\"\n", mka, mkb);
    qk_plot_printf(p, "$c%d << EOD\n", i);
    if (q_ok)
        qk_plot_printf(p, "%.6g %.6g\n", mqa, mqb);
    if (k_ok)
        qk_plot_printf(p, "%.6g %.6g\n", mka, mkb);
    if (!q_ok && !k_ok)
        qk_plot_printf(p, "NaN NaN\n");
    qk_plot_printf(p, "EOD\n");
    qk_plot_printf(p, "plot $p%d using 1:2:3 with points pt 7 ps 0.5*qk_ps lc rgb variable notitle, "
                      "\\\n     $c%d using 1:2 with points pt 1 ps 3.2*qk_ps lw 3 lc rgb '#000000' "
                      "notitle", i, i);
    if (cb)
        qk_plot_printf(p, ", \\\n     $nothing using 1:2:3 with points pt 7 ps 0 lc palette "
                          "notitle");
    qk_plot_printf(p, "\n");
}

static void ab_keys(fig_ctx *ctx, const qk_src *heads, const drawn_head *h, int n)
{
    fig_key(ctx, "dataset", "%s", h[0].dataset);
    fig_key(ctx, "heads drawn", "%d of %d (random.Random(%ld).sample of the heads sorted by "
            "(layer, head))", n, h[0].available, h[0].seed);
    for (int i = 0; i < n; i++) {
        int r = h[i].row;
        char name[96];
        snprintf(name, sizeof name, "layer %d, head %d (key head %d)", h[i].layer, h[i].head,
                 h[i].kv_head);
        fig_key(ctx, name, "position_r %.3f, omega %.3g, r_q_a %+.3f, r_k_a %+.3f, mu_q (a, b) "
                "(%.2f, %.2f), mu_k (a, b) (%.2f, %.2f), bias_strength %.3g; %d query and %d "
                "key points", head_value(heads, r, "position_r"), head_value(heads, r, "omega"),
                head_value(heads, r, "r_q_a"), head_value(heads, r, "r_k_a"),
                head_value(heads, r, "mu_q_a"), head_value(heads, r, "mu_q_b"),
                head_value(heads, r, "mu_k_a"), head_value(heads, r, "mu_k_b"),
                head_value(heads, r, "bias_strength"), h[i].plotted_q, h[i].plotted_k);
    }
}

int rotfig_draw_ab_collage(fig_ctx *ctx, qk_err *err)
{
    qk_src points = fig_src(ctx, "points"), panels_t = fig_src(ctx, "panels");
    qk_src heads = fig_src(ctx, "heads");
    drawn_head h[MAX_PANELS];
    int n = read_panels(&panels_t, &heads, h);
    if (n == 0)
        return fig_not_drawn(ctx, err, "The table %s lists no head to draw: no head of the "
                             "dataset has enough rows for the fit.", panels_t.path);
    order_by_draw(h, n);
    double scale = position_scale(ctx, h[0].dataset, &points);
    char label[160];
    fig_literal(label, sizeof label, fig_registry(ctx, h[0].dataset, "label", h[0].dataset));
    qk_plot p;
    rotfig_begin(&p, 2032, 1760, 15);
    for (int i = 0; i < n; i++)
        ab_data(&p, &points, h[i].panel, i, scale);
    qk_plot_printf(&p, "$nothing << EOD\nNaN NaN 0\nEOD\n");
    char title[256], sub[256], heads_text[32];
    snprintf(heads_text, sizeof heads_text, "%d heads", n);
    snprintf(title, sizeof title, "%s: queries and keys of %s in %s \\{a, b\\} plane", label,
             n == 1 ? "one head" : heads_text, n == 1 ? "its" : "their");
    snprintf(sub, sizeof sub, "%d of %d heads; colour = token position (queries blue, keys red; "
             "lighter = earlier; K = 1024 tokens); + = cluster means", n, h[0].available);
    fig_multiplot_title(&p, title, sub, 21);
    qk_plot_printf(&p, "set grid\nunset key\nset tics font \",14\"\n"
                       "set style textbox opaque fillcolor rgb 'white' noborder margins 1,1\n");
    int rows = n < 2 ? 1 : (n + 1) / 2;
    double top = AB_BOTTOM + AB_HEIGHT - AB_PAD_TOP;
    double bar_h = rows > 1 ? AB_HEIGHT / rows - AB_PAD_TOP - AB_PAD_BOTTOM
                            : (AB_HEIGHT - AB_PAD_TOP - AB_PAD_BOTTOM) / 2 - 0.03;
    colorbar q_bar = {fig_blues, scale, top - bar_h, bar_h, "query position (token index)"};
    colorbar k_bar = {fig_reds, scale, AB_BOTTOM + AB_PAD_BOTTOM, bar_h,
                      "key position (token index)"};
    for (int i = 0; i < n; i++)
        ab_panel(&p, &heads, &h[i], i, n, i == 0 ? &q_bar : i == n - 1 && n > 1 ? &k_bar : NULL);
    if (n == 1) { /* the key bar beside the only panel, which draws the query bar */
        set_colorbar(&p, &k_bar, 0.885);
        fig_colorbox_only(&p);
    }
    qk_plot_printf(&p, "unset multiplot\n");
    ab_keys(ctx, &heads, h, n);
    fig_key(ctx, "colour scale of positions", "0 to %.0f", scale);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

/* ---- 08: the complement pairs -------------------------------------------------------------- */

#define COMP_COLS 5 /* panels a row: at the page's width their text stays readable */
#define COMP_HEIGHT 0.905 /* screen height of the panel grid, from 0.035 */

typedef struct pair_info {
    double var_frac, angle_r_best, radial_cv;
    int active;
} pair_info;

/* The pairs of (layer, head) from complement_pairs.tsv, indexed by pair. */
static int read_pairs(const qk_src *t, const drawn_head *h, pair_info *out, int max)
{
    int c_layer = qk_src_col(t, "layer"), c_head = qk_src_col(t, "head");
    int c_pair = qk_src_col(t, "pair");
    int c_var = qk_src_col(t, "pair_var_frac"), c_r = qk_src_col(t, "angle_r_best");
    int c_cv = qk_src_col(t, "radial_cv"), c_active = qk_src_col(t, "active");
    int n = 0;
    for (int r = 0; r < t->t->n_rows; r++) {
        if (qk_src_int(t, r, c_layer) != h->layer ||
            qk_src_int(t, r, c_head) != h->head)
            continue;
        int i = qk_src_int(t, r, c_pair);
        if (i < 0 || i >= max)
            qk_die(QK_EXIT_DATA, t->path, "line %d: pair %d out of range", r + 2, i);
        out[i] = (pair_info){qk_src_num(t, r, c_var), qk_src_num(t, r, c_r),
                             qk_src_num(t, r, c_cv), qk_src_int(t, r, c_active)};
        n = i + 1 > n ? i + 1 : n;
    }
    return n;
}

/* Blocks $qN (pair N: u, w, colour; queries first, then keys) and the
 * extent of every pair. */
static void complement_data(qk_plot *p, const qk_src *t, int n_pairs, double scale,
                            double (*lim)[4])
{
    int c_pair = qk_src_col(t, "pair"), c_kind = qk_src_col(t, "kind");
    int c_pos = qk_src_col(t, "position");
    int c_u = qk_src_col(t, "u"), c_w = qk_src_col(t, "w");
    for (int i = 0; i < n_pairs; i++)
        lim[i][0] = lim[i][2] = INFINITY, lim[i][1] = lim[i][3] = -INFINITY;
    for (int i = 0; i < n_pairs; i++) {
        char name[16];
        snprintf(name, sizeof name, "q%d", i);
        qk_plot_data_begin(p, name);
        for (int kind = 0; kind <= 1; kind++)
            for (int r = 0; r < t->t->n_rows; r++) {
                if (qk_src_int(t, r, c_pair) != i || fig_kind_index(t, r, c_kind) != kind)
                    continue;
                double u = qk_src_num(t, r, c_u), w = qk_src_num(t, r, c_w);
                lim[i][0] = fmin(lim[i][0], u), lim[i][1] = fmax(lim[i][1], u);
                lim[i][2] = fmin(lim[i][2], w), lim[i][3] = fmax(lim[i][3], w);
                qk_plot_printf(p, "%.4g %.4g %u\n", u, w,
                               point_color(kind, qk_src_num(t, r, c_pos), scale));
            }
        qk_plot_printf(p, "NaN NaN 0\n");
        qk_plot_data_end(p);
    }
}

/* Panel i of the grid in screen units: left, right, bottom, top. */
static void complement_frame(int i, int n, double *l, double *r, double *b, double *t)
{
    int rows = (n + COMP_COLS - 1) / COMP_COLS, row = i / COMP_COLS, col = i % COMP_COLS;
    double w = 0.835 / COMP_COLS, h = COMP_HEIGHT / rows;
    double x0 = 0.035 + col * w, y0 = 0.035 + (rows - 1 - row) * h;
    *l = x0 + 0.024, *r = x0 + w - 0.008, *b = y0 + 0.022, *t = y0 + h - 0.03;
}

/* Each panel shows its pair at one scale on both axes (a ring stays
 * round): the half-width of the larger coordinate extent, spread over the
 * panel's longer side. */
static void complement_panel(qk_plot *p, int i, int n, const double *lim, const pair_info *info,
                             const colorbar *cb, int width, int height)
{
    double l, r, b, t;
    complement_frame(i, n, &l, &r, &b, &t);
    qk_plot_printf(p, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n"
                      "set bmargin at screen %.4f\nset tmargin at screen %.4f\n", l, r, b, t);
    double half = 1.04 * fmax(fmax(-lim[0], lim[1]), fmax(-lim[2], lim[3]));
    if (!(half > 0))
        half = 1;
    double pw = (r - l) * width, ph = (t - b) * height, side = fmin(pw, ph);
    qk_plot_printf(p, "set xrange [%.4g:%.4g]\nset yrange [%.4g:%.4g]\n", -half * pw / side,
                   half * pw / side, -half * ph / side, half * ph / side);
    set_colorbar(p, cb, 0.905);
    const pair_info *q = &info[i];
    /* active pairs framed thick and black: vermillion means keys */
    qk_plot_printf(p, "set border lw %s lc rgb '%s'\n", q->active ? "3.5" : "1",
                   q->active ? "#000000" : "#444444");
    char title[96];
    fig_fmt(title, sizeof title, "SVD %d–%d (%.1f%%)  " QK_SYM_R_THETA " %+.2f", 2 * i + 1, 2 * i + 2,
            100 * q->var_frac, q->angle_r_best);
    qk_plot_printf(p, "set title \"%s\" font \",13\" offset 0,-0.6\n", title);
    /* ~2000 points a panel: in the PDF as squares (pt 5), which cairo
     * writes in half the bytes of circles and which look the same at
     * this size */
    qk_plot_printf(p, "plot $q%d using 1:2:3 with points pt qk_dense_pt ps 0.3*qk_ps "
                      "lc rgb variable notitle", i);
    if (cb)
        qk_plot_printf(p, ", \\\n     $nothing using 1:2:3 with points pt 7 ps 0 lc palette "
                          "notitle");
    qk_plot_printf(p, "\n");
}

int rotfig_draw_complement(fig_ctx *ctx, qk_err *err)
{
    qk_src points = fig_src(ctx, "points"), panels_t = fig_src(ctx, "panels");
    qk_src heads = fig_src(ctx, "heads"), pairs_t = fig_src(ctx, "pairs");
    drawn_head drawn[MAX_PANELS];
    int n_drawn = read_panels(&panels_t, &heads, drawn), first = -1;
    if (n_drawn == 0)
        return fig_not_drawn(ctx, err, "The table %s lists no head to draw: no head of the "
                             "dataset has enough rows for the fit.", panels_t.path);
    for (int i = 0; i < n_drawn; i++)
        if (drawn[i].draw == 0)
            first = i;
    if (first < 0)
        qk_die(QK_EXIT_DATA, panels_t.path, "no head with draw = 0");
    const drawn_head *h = &drawn[first];
    int n = h->complement_pairs;
    if (n < 1 || n > 64)
        qk_die(QK_EXIT_DATA, panels_t.path, "%d complement pairs (expected 1 to 64)", n);
    pair_info info[64];
    memset(info, 0, sizeof info);
    if (read_pairs(&pairs_t, h, info, 64) != n)
        qk_die(QK_EXIT_DATA, pairs_t.path, "layer %d head %d: not the %d pairs of %s", h->layer,
               h->head, n, panels_t.path);
    double scale = position_scale(ctx, h->dataset, &points);
    char label[160], numbers[224];
    fig_literal(label, sizeof label, fig_registry(ctx, h->dataset, "label", h->dataset));
    head_numbers(&heads, h->row, numbers, sizeof numbers);
    double shown = 0;
    int active = 0;
    for (int i = 0; i < n; i++)
        shown += info[i].var_frac, active += info[i].active;

    qk_plot p;
    int rows = (n + COMP_COLS - 1) / COMP_COLS, width = 1700, height = 200 + 300 * rows;
    rotfig_begin(&p, width, height, 11);
    double (*lim)[4] = qk_calloc((size_t)n, sizeof *lim);
    complement_data(&p, &points, n, scale, lim);
    qk_plot_printf(&p, "$nothing << EOD\nNaN NaN 0\nEOD\n");
    char title[320], sub[400], pairs_text[48];
    snprintf(pairs_text, sizeof pairs_text, "first %d principal pairs", n);
    snprintf(title, sizeof title, "%s, layer %d, head %d: the complement of the \\{a, b\\} "
             "plane ({/:Italic d} − 2 = %d dimensions), %s", label, h->layer, h->head,
             h->dim - 2, n == 1 ? "its first principal pair" : pairs_text);
    snprintf(sub, sizeof sub, "%s; the pairs hold %.1f %% of the complement variance; framed "
             "thick: active (%d); %d queries, %d keys a pair", numbers, 100 * shown, active,
             h->complement_q, h->complement_k);
    fig_multiplot_title(&p, title, sub, 16);
    qk_plot_printf(&p, "set grid\nunset key\nset tics font \",11\" scale 0.5\nset format \"%% g\"\n");
    double bar_h = COMP_HEIGHT / 2 - 0.05;
    colorbar q_bar = {fig_blues, scale, 0.035 + COMP_HEIGHT - 0.03 - bar_h, bar_h,
                      "query position (token index)"};
    colorbar k_bar = {fig_reds, scale, 0.035 + 0.02, bar_h, "key position (token index)"};
    for (int i = 0; i < n; i++)
        complement_panel(&p, i, n, lim[i], info,
                         i == 0 ? &q_bar : i == n - 1 && n > 1 ? &k_bar : NULL, width, height);
    if (n == 1) { /* the key bar beside the only panel, which draws the query bar */
        set_colorbar(&p, &k_bar, 0.905);
        fig_colorbox_only(&p);
    }
    qk_plot_printf(&p, "unset multiplot\n");
    free(lim);

    fig_key(ctx, "dataset", "%s", h->dataset);
    fig_key(ctx, "head", "layer %d, head %d (key head %d), the first of %d drawn with "
            "random.Random(%ld)", h->layer, h->head, h->kv_head, n_drawn, h->seed);
    fig_key(ctx, "complement dimensions", "%d", h->dim - 2);
    fig_key(ctx, "pairs shown, their share of the complement variance", "%d, %.1f%%", n,
            100 * shown);
    fig_key(ctx, "active pairs", "%d", active);
    fig_key(ctx, "points per pair (queries, keys)", "%d, %d", h->complement_q, h->complement_k);
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "pair %d (SVD %d-%d)", i, 2 * i + 1, 2 * i + 2);
        fig_key(ctx, name, "var %.1f%%, angle_r_best %+.3f, radial_cv %.3f%s",
                100 * info[i].var_frac, info[i].angle_r_best, info[i].radial_cv,
                info[i].active ? ", active" : "");
    }
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
