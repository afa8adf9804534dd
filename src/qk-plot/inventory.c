/* Figures of the data inventory. */
#include <string.h>

#include "figure.h"

/* Vectors per dataset and kind, as horizontal bars. */
static int draw_vectors(fig_ctx *ctx, qk_err *err)
{
    const qk_table *t = fig_input(ctx, "inventory");
    int c_label = fig_column(ctx, t, "label");
    int c_q = fig_column(ctx, t, "vectors_q"), c_k = fig_column(ctx, t, "vectors_k");
    int c_heads = fig_column(ctx, t, "q_heads");
    qk_plot p;
    qk_plot_begin(&p, 1200, 160 + 28 * t->n_rows);
    qk_plot_data_begin(&p, "inv");
    double total_q = 0, total_k = 0, heads = 0;
    for (int r = 0; r < t->n_rows; r++) {
        double q = fig_number_at(ctx, t, r, c_q), k = fig_number_at(ctx, t, r, c_k);
        qk_plot_printf(&p, "%d \"%s\" %.0f %.0f\n", r, qk_table_cell(t, r, c_label), q, k);
        total_q += q;
        total_k += k;
        heads += fig_number_at(ctx, t, r, c_heads);
    }
    qk_plot_data_end(&p);
    qk_plot_printf(&p,
        "set title \"Captured vectors per dataset\" font \",13\"\n"
        "set xlabel \"vectors\"\n"
        "set yrange [%d:-1] reverse\n"
        "set style fill solid 0.85 noborder\n"
        "set key bottom right\n"
        "set grid xtics noytics\n"
        "plot $inv using ($3+$4):1:(0):($3+$4):($1-0.35):($1+0.35):ytic(2) with boxxyerror lt 2 title \"keys\", \\\n"
        "     $inv using 3:1:(0):3:($1-0.35):($1+0.35) with boxxyerror lt 1 title \"queries\"\n",
        t->n_rows);
    fig_key(ctx, "datasets", "%d", t->n_rows);
    fig_key(ctx, "query heads", "%.0f", heads);
    fig_key(ctx, "query vectors", "%.0f", total_q);
    fig_key(ctx, "key vectors", "%.0f", total_k);
    return qk_plot_render(&p, ctx->out_dir, ctx->style, err);
}

const fig_def inventory_figures[] = {
    {"inventory/01", "Captured vectors per dataset",
     "Stacked bars: the query vectors (blue) and key vectors (orange) captured for every dataset "
     "of the run, in registry order. Each query head is paired with the key head that serves it.",
     draw_vectors},
    {NULL, NULL, NULL, NULL}};
