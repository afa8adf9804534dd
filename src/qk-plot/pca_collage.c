/* Figure 06: the queries and keys of a few heads in the plane of their
 * first two principal components, coloured by token position. The points
 * and the per-head numbers come from qk-pca-collage. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "pca_fig.h"

#include "qk/die.h"

#define MAX_PANELS 16

/* The position colours use only the part of each map above this, so that
 * the earliest positions stay visible on white. */
#define LIGHT_CUT 0.2

/* ---- the inputs ---------------------------------------------------------------- */

typedef struct collage_panel {
    char model[64];
    int layer, head, k_head;
    double ev[2], r_q[2], r_k[2];
    int plotted_q, plotted_k;
    int available;
    long seed;
    const char *category; /* from the heads table, or NULL */
} collage_panel;

static int read_panels(const qk_src *t, collage_panel *out)
{
    static const char *const num_cols[] = {"layer", "head", "k_head", "ev0", "ev1", "r_q0",
                                           "r_k0", "r_q1", "r_k1", "plotted_q", "plotted_k",
                                           "heads_available", "seed"};
    int c[13];
    for (int i = 0; i < 13; i++)
        c[i] = qk_src_col(t, num_cols[i]);
    int c_panel = qk_src_col(t, "panel"), c_model = qk_src_col(t, "model");
    int n = t->t->n_rows;
    if (n > MAX_PANELS)
        qk_die(QK_EXIT_DATA, t->path, "%d panels (expected at most %d)", n, MAX_PANELS);
    for (int r = 0; r < n; r++) {
        collage_panel *p = &out[r];
        if (qk_src_int(t, r, c_panel) != r)
            qk_die(QK_EXIT_DATA, t->path, "line %d: panels must be numbered 0, 1, ...", r + 2);
        snprintf(p->model, sizeof p->model, "%s", qk_table_cell(t->t, r, c_model));
        p->layer = qk_src_int(t, r, c[0]);
        p->head = qk_src_int(t, r, c[1]);
        p->k_head = qk_src_int(t, r, c[2]);
        p->ev[0] = qk_src_num(t, r, c[3]), p->ev[1] = qk_src_num(t, r, c[4]);
        p->r_q[0] = qk_src_num(t, r, c[5]), p->r_k[0] = qk_src_num(t, r, c[6]);
        p->r_q[1] = qk_src_num(t, r, c[7]), p->r_k[1] = qk_src_num(t, r, c[8]);
        p->plotted_q = qk_src_int(t, r, c[9]), p->plotted_k = qk_src_int(t, r, c[10]);
        p->available = qk_src_int(t, r, c[11]);
        p->seed = (long)qk_src_num(t, r, c[12]);
        p->category = NULL;
    }
    return n;
}

/* The category of each panel's head from the study's per-head table. */
static void find_categories(const pca_study *s, collage_panel *panels, int n)
{
    for (int i = 0; i < n; i++)
        for (int h = 0; h < s->n_heads; h++) {
            const pca_head *x = &s->heads[h];
            if (x->layer == panels[i].layer && x->head == panels[i].head && x->category >= 0 &&
                strcmp(s->models[x->model].id, panels[i].model) == 0)
                panels[i].category = pca_cat_label[x->category];
        }
}

/* Smallest and largest position of each kind over all points. */
typedef struct position_range {
    double lo[2], hi[2]; /* [0] queries, [1] keys */
} position_range;

static position_range position_extent(const qk_src *t)
{
    int c_kind = qk_src_col(t, "kind"), c_pos = qk_src_col(t, "position");
    position_range pr = {{INFINITY, INFINITY}, {-INFINITY, -INFINITY}};
    for (int r = 0; r < t->t->n_rows; r++) {
        int k = fig_kind_index(t, r, c_kind);
        double pos = qk_src_num(t, r, c_pos);
        pr.lo[k] = fmin(pr.lo[k], pos);
        pr.hi[k] = fmax(pr.hi[k], pos);
    }
    for (int k = 0; k < 2; k++)
        if (!(pr.hi[k] >= pr.lo[k]))
            qk_die(QK_EXIT_DATA, t->path, "no %s points", k ? "key" : "query");
    return pr;
}

/* ---- drawing -------------------------------------------------------------------- */

/* $pN: pc0, pc1 and an ARGB colour (alpha 0.6) for each point of panel N;
 * the keys first, so that the queries are drawn on top. */
static void panel_data(qk_plot *p, const qk_src *t, int panel, double scale)
{
    int c_panel = qk_src_col(t, "panel"), c_kind = qk_src_col(t, "kind");
    int c_pos = qk_src_col(t, "position"), c_x = qk_src_col(t, "pc0"), c_y = qk_src_col(t, "pc1");
    char name[16];
    snprintf(name, sizeof name, "p%d", panel);
    qk_plot_data_begin(p, name);
    for (int kind = 1; kind >= 0; kind--)
        for (int r = 0; r < t->t->n_rows; r++) {
            if (qk_src_int(t, r, c_panel) != panel || fig_kind_index(t, r, c_kind) != kind)
                continue;
            double x = qk_src_num(t, r, c_pos) / scale;
            int rgb = fig_map_color(kind ? fig_reds : fig_blues, x, LIGHT_CUT);
            unsigned argb = 0x66000000u | (unsigned)rgb;
            qk_plot_printf(p, "%.5g %.5g %u\n", qk_src_num(t, r, c_x), qk_src_num(t, r, c_y), argb);
        }
    qk_plot_data_end(p);
}

/* Panel geometry: a grid of up to two columns left of the colour bars. */
static void panel_margins(qk_plot *p, int i, int n)
{
    int cols = n < 2 ? 1 : 2, rows = (n + cols - 1) / cols;
    int row = i / cols, col = i % cols;
    double w = 0.80 / cols, h = 0.91 / rows;
    double x0 = 0.02 + col * w, y0 = 0.02 + (rows - 1 - row) * h;
    qk_plot_printf(p, "set lmargin at screen %.4f\nset rmargin at screen %.4f\n"
                      "set bmargin at screen %.4f\nset tmargin at screen %.4f\n",
                   x0 + 0.045, x0 + w - 0.015, y0 + 0.045, y0 + h - 0.04);
    if (row == rows - 1 || i + cols >= n)
        fig_axis_label(p, "x", "PC0", NULL);
    else
        qk_plot_printf(p, "unset xlabel\n");
    if (col == 0)
        fig_axis_label(p, "y", "PC1", NULL);
    else
        qk_plot_printf(p, "unset ylabel\n");
}

/* The colour bar a panel carries: its palette, range, place and label.
 * Colour bars are drawn by panels (their position is in screen
 * coordinates), so that the script changes no axis setting between panels
 * and renders the same under each terminal it is loaded for. */
typedef struct colorbar {
    const int *stops;
    double lo, hi;
    double y0, height;
    const char *label;
} colorbar;

static void set_colorbar(qk_plot *p, const colorbar *cb)
{
    if (!cb) {
        qk_plot_printf(p, "unset colorbox\n");
        return;
    }
    fig_palette(p, cb->stops, LIGHT_CUT);
    qk_plot_printf(p, "set cbrange [%.0f:%.0f]\n", cb->lo, cb->hi > cb->lo ? cb->hi : cb->lo + 1);
    fig_token_tics(p, "cb", cb->lo, cb->hi > cb->lo ? cb->hi : cb->lo + 1);
    qk_plot_printf(p, "set colorbox vertical user origin screen 0.875, screen %.4f size screen "
                      "0.018, screen %.4f\n", cb->y0, cb->height);
    fig_axis_label(p, "cb", cb->label, "offset 1,0");
}

static void draw_panel(qk_plot *p, const collage_panel *c, int i, int n, const colorbar *cb)
{
    panel_margins(p, i, n);
    set_colorbar(p, cb);
    char title[160], box[200];
    snprintf(title, sizeof title, "Layer %d, head %d (key head %d)%s%s", c->layer, c->head,
             c->k_head, c->category ? ": " : "", c->category ? c->category : "");
    /* the symbols as in every figure (EV: explained variance) */
    fig_fmt(box, sizeof box, "PC0: EV %4.1f %%, " QK_SYM_R_Q " %+.3f, " QK_SYM_R_K " %+.3f\\n"
            "PC1: EV %4.1f %%, " QK_SYM_R_Q " %+.3f, " QK_SYM_R_K " %+.3f", 100 * c->ev[0],
            c->r_q[0], c->r_k[0], 100 * c->ev[1], c->r_q[1], c->r_k[1]);
    qk_plot_printf(p, "set title ");
    fig_text(p, title);
    qk_plot_printf(p, " font \",21\"\n"
                      "set label 1 \"%s\" at graph 0.02, graph 0.965 left front boxed "
                      "font \"DejaVu Sans Mono,15\"\n"
                      "plot $p%d using 1:2:3 with points pt 7 ps 0.45*qk_ps lc rgb variable notitle",
                   box, i);
    if (cb)
        qk_plot_printf(p, ", \\\n     $nothing using 1:2:3 with points pt 7 ps 0 lc palette "
                          "notitle");
    qk_plot_printf(p, "\n");
}

int pca_draw_collage(fig_ctx *ctx, qk_err *err)
{
    qk_src points = fig_src(ctx, "points"), panels_t = fig_src(ctx, "panels");
    collage_panel panels[MAX_PANELS];
    int n = read_panels(&panels_t, panels);
    if (n == 0)
        return fig_not_drawn(ctx, err, "The table %s lists no head to draw: no head of the "
                             "dataset has enough rows for the fit.", panels_t.path);
    pca_study heads;
    pca_load_input(ctx, "heads", &heads);
    find_categories(&heads, panels, n);
    qk_src registry = fig_src(ctx, "registry");
    /* the dataset's display name from the registry */
    char label[160];
    fig_literal(label, sizeof label, panels[0].model);
    int c_id = qk_src_col(&registry, "id"), c_label = qk_src_col(&registry, "label");
    for (int r = 0; r < registry.t->n_rows; r++)
        if (strcmp(qk_table_cell(registry.t, r, c_id), panels[0].model) == 0)
            fig_literal(label, sizeof label, qk_table_cell(registry.t, r, c_label));
    position_range pr = position_extent(&points);
    /* positions on one scale from 0 to the context length (registry), as the
     * rotation collages: the colour of a position means the same in both */
    double context = strtod(fig_registry(ctx, panels[0].model, "context_length", "0"), NULL);
    double scale = context > pr.hi[0] && context > pr.hi[1] ? context : fmax(pr.hi[0], pr.hi[1]) + 1;

    qk_plot p;
    fig_begin(&p, 2163, 1768, 17);
    for (int i = 0; i < n; i++)
        panel_data(&p, &points, i, scale);
    /* an invisible point that makes a panel draw its colour bar */
    qk_plot_printf(&p, "$nothing << EOD\nNaN NaN 0\nEOD\n");
    char title[256], sub[256], heads_text[32];
    snprintf(heads_text, sizeof heads_text, "%d heads", n);
    snprintf(title, sizeof title, "%s: queries and keys of %s in the plane of %s first "
             "two components", label, n == 1 ? "one head" : heads_text, n == 1 ? "its" : "their");
    snprintf(sub, sizeof sub, "%d of %d query heads; colour = token position (queries blue, keys "
             "red; lighter = earlier; K = 1024 tokens); component signs as the solver gives them",
             n, panels[0].available);
    fig_multiplot_title(&p, title, sub, 23);
    qk_plot_printf(&p, "set style textbox opaque fillcolor rgb 'white' border lc rgb 'black'\n"
                       "unset key\nset grid\nset tics font \",16\"\n");
    /* the query bar beside the top row, drawn by the first panel; the key
     * bar beside the bottom row, drawn by the last (with one panel by a
     * plot of its own) */
    int rows = n < 2 ? 1 : (n + 1) / 2;
    double row_h = 0.91 / rows, bottom = 0.065, top = 0.89;
    double bar_h = rows > 1 ? row_h - 0.085 : (top - bottom) / 2 - 0.05;
    colorbar q_bar = {fig_blues, 0, scale, top - bar_h, bar_h,
                      "query position (token index)"};
    colorbar k_bar = {fig_reds, 0, scale, bottom, bar_h, "key position (token index)"};
    for (int i = 0; i < n; i++)
        draw_panel(&p, &panels[i], i, n, i == 0 ? &q_bar : i == n - 1 ? &k_bar : NULL);
    if (n == 1) {
        set_colorbar(&p, &k_bar);
        fig_colorbox_only(&p);
    }
    qk_plot_printf(&p, "unset multiplot\n");

    fig_key(ctx, "dataset", "%s", panels[0].model);
    fig_key(ctx, "heads drawn", "%d of %d (random.Random(%ld).sample of the sorted query heads)",
            n, panels[0].available, panels[0].seed);
    for (int i = 0; i < n; i++) {
        const collage_panel *c = &panels[i];
        char name[96];
        snprintf(name, sizeof name, "layer %d, head %d (key head %d)", c->layer, c->head,
                 c->k_head);
        fig_key(ctx, name,
                "%s; PC0 var %.1f%%, r_q %+.3f, r_k %+.3f; PC1 var %.1f%%, r_q %+.3f, r_k %+.3f; "
                "%d query and %d key points",
                c->category ? c->category : "category not in the heads table", 100 * c->ev[0],
                c->r_q[0], c->r_k[0], 100 * c->ev[1], c->r_q[1], c->r_k[1], c->plotted_q,
                c->plotted_k);
    }
    fig_key(ctx, "query positions", "%.0f to %.0f", pr.lo[0], pr.hi[0]);
    fig_key(ctx, "key positions", "%.0f to %.0f", pr.lo[1], pr.hi[1]);
    fig_key(ctx, "colour scale of positions", "0 to %.0f", scale);
    pca_study_free(&heads);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
