/* Figures of the plasticity study (figures/attention-plasticity): the helpers
 * its figures share. The heatmaps 01-04 are in
 * plasticity_maps.c, the profiles 05-07 and the component weights 08 in
 * plasticity_profiles.c, the SmolLM3 trajectory 09 and the benchmark
 * scatter 10 in plasticity_trends.c, the extra models against RULER 11 in
 * plasticity_extra.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plasticity_fig.h"
#include "qk/study.h"

/* matplotlib's magma at eleven evenly spaced stops. */
const char *const plast_palette_magma =
    "(0 '#000004', 1 '#140e36', 2 '#3b0f70', 3 '#641a80', 4 '#8c2981', 5 '#b73779', "
    "6 '#de4968', 7 '#f7705c', 8 '#fe9f6d', 9 '#fecf92', 10 '#fcfdbf')";

int *plast_model_rows(const fig_ctx *ctx, const qk_table *t, const char *model, int *n)
{
    int c = fig_column(ctx, t, "model");
    int *rows = qk_malloc((size_t)(t->n_rows > 0 ? t->n_rows : 1) * sizeof *rows);
    *n = 0;
    for (int r = 0; r < t->n_rows; r++)
        if (qk_model_is(qk_table_cell(t, r, c), model))
            rows[(*n)++] = r;
    return rows;
}

void plast_models_of(const fig_ctx *ctx, const qk_table *t, char *out, size_t cap)
{
    int c = fig_column(ctx, t, "model"), n = 0;
    out[0] = '\0';
    for (int r = 0; r < t->n_rows; r++) {
        const char *id = qk_table_cell(t, r, c);
        if (r > 0 && strcmp(id, qk_table_cell(t, r - 1, c)) == 0)
            continue; /* rows come grouped by model */
        size_t used = strlen(out);
        if (n < 8)
            snprintf(out + used, cap - used, "%s%s", n ? ", " : "",
                     fig_has_input(ctx, "registry") ? fig_registry(ctx, id, "label", id) : id);
        else if (n == 8)
            snprintf(out + used, cap - used, ", ...");
        n++;
    }
    if (n == 0)
        snprintf(out, cap, "no model");
}

/* The sentence of a canvas that names the figure's model parameter and
 * suggests the first other model of table t (fig_model_choice). */
static void plast_model_choice(const fig_ctx *ctx, const qk_table *t, char *out, size_t cap)
{
    int c = fig_column(ctx, t, "model");
    for (int r = 0; r < t->n_rows; r++)
        if (!qk_model_is(qk_table_cell(t, r, c), ctx->model)) {
            fig_model_choice(ctx, qk_table_cell(t, r, c), out, cap);
            return;
        }
    fig_model_choice(ctx, NULL, out, cap);
}

int plast_filtered_out(fig_ctx *ctx, const char *what, const char *param, qk_err *err)
{
    /* (no other model is suggested: the stage's minimum, not the model, is
     * what left it without a value) */
    return fig_not_drawn(ctx, err, "%s (dataset %s) was analysed in this run, but no %s of it reached "
                         "the minimum of the plasticity stage (%s), so it has no value to draw.",
                         ctx->model_label, ctx->model, what, param);
}

int plast_lacks_model(fig_ctx *ctx, const qk_table *t, qk_err *err)
{
    char models[512], choice[256];
    plast_models_of(ctx, t, models, sizeof models);
    plast_model_choice(ctx, t, choice, sizeof choice);
    return fig_not_drawn(ctx, err, "This run's table %s holds no rows of %s (dataset %s); it "
                         "holds %s.%s", fig_path(ctx, t), ctx->model_label, ctx->model, models,
                         choice);
}

/* The house style after fig_begin or fig_begin_hover. */
static void plast_style(qk_plot *p)
{
    /* The script is loaded once per terminal in one gnuplot session, so the
     * second load starts from the state the first one ended in: undo what a
     * figure may have set after the house style. */
    qk_plot_printf(p,
        "unset label\nunset arrow\nunset object\nunset title\nunset xlabel\nunset ylabel\n"
        "unset cblabel\nset lmargin -1\nset rmargin -1\nset tmargin -1\nset bmargin -1\n"
        "set autoscale\nset xtics autofreq\nset ytics autofreq\n"
        "set format x \"%% h\"\nset format y \"%% h\"\n");
}

void plast_begin(qk_plot *p, int width, int height, int font_pt)
{
    fig_begin(p, width, height, font_pt);
    plast_style(p);
}

void plast_begin_hover(qk_plot *p, int width, int height, int font_pt)
{
    fig_begin_hover(p, width, height, font_pt);
    plast_style(p);
}
