/* Figures of the data inventory. */
#include <math.h>
#include <string.h>

#include "figure.h"

/* The characters of a UTF-8 label (its continuation bytes not counted). */
static size_t label_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* The caption of a group of rows: the datasets of one study. */
static const char *study_caption(const char *study)
{
    static const char *const captions[][2] = {
        {"attention_plasticity", "Models"},
        {"extra", "Extra models"},
        {"smollm3_training_progress", "SmolLM3-3B\ntraining\ncheckpoints"},
    };
    for (size_t i = 0; i < sizeof captions / sizeof captions[0]; i++)
        if (strcmp(study, captions[i][0]) == 0)
            return captions[i][1];
    return study;
}

/* The rows grouped by study (consecutive rows of one study, as the
 * registry orders them): a dashed line between groups and, right of the
 * plot, a bracket over each group with its caption, so that the rows of
 * checkpoint labels ("S1-40k") read as SmolLM3-3B's. Returns the groups. */
static int study_groups(qk_plot *p, const qk_table *t, int c_study, int font_pt)
{
    int groups = 0;
    for (int first = 0, r = 1; r <= t->n_rows; r++) {
        const char *study = qk_table_cell(t, first, c_study);
        if (r < t->n_rows && strcmp(qk_table_cell(t, r, c_study), study) == 0)
            continue;
        if (r < t->n_rows)
            qk_plot_printf(p, "set arrow from graph 0, first %.1f to graph 1, first %.1f nohead "
                              "back dt 2 lw 1 lc rgb '#999999'\n", r - 0.5, r - 0.5);
        qk_plot_printf(p, "set arrow from graph 1.015, first %.2f to graph 1.015, first %.2f "
                          "nohead lw 1.5 lc rgb '#555555'\n", first - 0.35, r - 0.65);
        qk_plot_printf(p, "set label %d ", 100 + groups);
        fig_text(p, study_caption(study));
        qk_plot_printf(p, " at graph 1.03, first %.2f left font \",%d\" tc rgb '#333333'\n",
                       (first + r - 1) / 2.0, font_pt);
        groups++;
        first = r;
    }
    return groups;
}

/* The label of row r as drawn: a training checkpoint's "S1-40k" as
 * "S1 40k" (fig_checkpoint_label), another dataset's label as it is. */
static void row_label(const qk_table *t, int r, int c_label, int c_study, char *out, size_t cap)
{
    const char *label = qk_table_cell(t, r, c_label);
    if (strcmp(qk_table_cell(t, r, c_study), "smollm3_training_progress") == 0)
        fig_checkpoint_label(label, " ", out, cap);
    else
        snprintf(out, cap, "%s", label);
}

/* Vectors per dataset and kind, as horizontal bars. */
int inventory_draw_vectors(fig_ctx *ctx, qk_err *err)
{
    const qk_table *t = fig_input(ctx, "inventory");
    qk_src src = fig_src(ctx, "inventory");
    if (t->n_rows == 0)
        return fig_not_drawn(ctx, err, "The inventory %s lists no dataset.", fig_path(ctx, t));
    int c_label = fig_column(ctx, t, "label");
    int c_q = fig_column(ctx, t, "vectors_q"), c_k = fig_column(ctx, t, "vectors_k");
    int c_heads = fig_column(ctx, t, "q_heads"), c_study = fig_column(ctx, t, "study");
    double total_q = 0, total_k = 0, heads = 0, most = 0;
    size_t widest = 0;
    int checkpoints = 0;
    for (int r = 0; r < t->n_rows; r++) {
        char label[160];
        row_label(t, r, c_label, c_study, label, sizeof label);
        checkpoints += strcmp(label, qk_table_cell(t, r, c_label)) != 0;
        size_t chars = label_chars(label);
        widest = chars > widest ? chars : widest;
        double q = qk_src_count(&src, r, c_q), k = qk_src_count(&src, r, c_k);
        total_q += q;
        total_k += k;
        most = fmax(most, q + k);
        heads += qk_src_count(&src, r, c_heads);
    }
    /* counts in thousands or millions, so that tick labels stay short */
    double unit = most >= 1e7 ? 1e6 : most >= 1e4 ? 1e3 : 1;
    const char *unit_name = unit == 1e6 ? " (millions)" : unit == 1e3 ? " (thousands)" : "";
    qk_plot p;
    fig_begin(&p, 1200, 200 + 28 * t->n_rows, 12);
    qk_plot_data_begin(&p, "inv");
    for (int r = 0; r < t->n_rows; r++) {
        char label[160];
        row_label(t, r, c_label, c_study, label, sizeof label);
        qk_plot_printf(&p, "%d ", r);
        fig_text(&p, label);
        qk_plot_printf(&p, " %.6g %.6g\n", fig_number_at(ctx, t, r, c_q) / unit,
                       fig_number_at(ctx, t, r, c_k) / unit);
    }
    qk_plot_data_end(&p);
    char sub[160];
    snprintf(sub, sizeof sub, "n = %d datasets, %.0f query heads; registry order, grouped by "
             "study%s", t->n_rows, heads, checkpoints ? "; checkpoint steps in k = 1000" : "");
    double top = fig_title(&p, "Captured vectors per dataset", sub, 14);
    top = fig_key_top(&p, 12, 2, 2, top);
    /* room for the longest label as a browser draws the SVG (wider than
     * gnuplot's own estimate): 10 px a character of the 16 px font, and the
     * tick's gap */
    qk_plot_printf(&p, "set lmargin at screen %.4f\n", fmin(0.5, (30 + 10.0 * widest) / p.width));
    /* right of the plot: the groups' captions (lines of up to 12 characters
     * of 12 points, at 0.75 em as a browser draws them) and the brackets */
    qk_plot_printf(&p, "set rmargin at screen %.4f\n", 1 - (12 * 0.75 * 12 + 45) / p.width);
    int groups = study_groups(&p, t, c_study, 12);
    char xlabel[64];
    snprintf(xlabel, sizeof xlabel, "vectors%s", unit_name);
    fig_axis_label(&p, "x", xlabel, NULL);
    qk_plot_printf(&p,
        "set tmargin at screen %.4f\n"
        "set yrange [%d:-1] reverse\n"
        "set style fill solid 0.85 noborder\n"
        "set grid xtics noytics\n"
        "plot $inv using 3:1:(0):3:($1-0.35):($1+0.35):ytic(2) with boxxyerror lc rgb '%s' "
        "title \"queries\", \\\n"
        "     $inv using ($3+$4):1:3:($3+$4):($1-0.35):($1+0.35) with boxxyerror lc rgb '%s' "
        "title \"keys\"\n",
        top - 0.01, t->n_rows, FIG_BLUE, FIG_VERMILLION);
    fig_key(ctx, "datasets", "%d", t->n_rows);
    fig_key(ctx, "query heads", "%.0f", heads);
    fig_key(ctx, "groups (studies)", "%d", groups);
    fig_key(ctx, "query vectors", "%.0f", total_q);
    fig_key(ctx, "key vectors", "%.0f", total_k);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}
