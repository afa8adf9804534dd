/* Figures of the plasticity study (figures/attention-plasticity): the table of the
 * eleven figures and the helpers they share. The heatmaps 01-04 are in
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

int plast_filtered_out(fig_ctx *ctx, const char *what, const char *param, qk_err *err)
{
    return fig_not_drawn(ctx, err, "%s (dataset %s) was analysed in this run, but no %s of it reached "
                         "the minimum of the plasticity stage (%s), so it has no value to draw.",
                         ctx->model_label, ctx->model, what, param);
}

int plast_lacks_model(fig_ctx *ctx, const qk_table *t, qk_err *err)
{
    char models[512];
    plast_models_of(ctx, t, models, sizeof models);
    return fig_not_drawn(ctx, err, "This run's table %s holds no rows of %s (dataset %s); it "
                         "holds %s. Choose the model with the figure's model parameter.",
                         fig_path(ctx, t), ctx->model_label, ctx->model, models);
}

void plast_begin(qk_plot *p, int width, int height, int font_pt)
{
    fig_begin(p, width, height, font_pt);
    /* The script is loaded once per terminal in one gnuplot session, so the
     * second load starts from the state the first one ended in: undo what a
     * figure may have set after the house style. */
    qk_plot_printf(p,
        "unset label\nunset arrow\nunset object\nunset title\nunset xlabel\nunset ylabel\n"
        "unset cblabel\nset lmargin -1\nset rmargin -1\nset tmargin -1\nset bmargin -1\n"
        "set autoscale\nset xtics autofreq\nset ytics autofreq\n"
        "set format x \"%% h\"\nset format y \"%% h\"\n");
}

/* The heatmaps 01-04 and the profiles 05-07 are one figure each, drawn for
 * the model their parameter names. */
#define HEATMAP_FIGURE(id) \
    {id, "Attention plasticity by key distance: {model}", \
     "Mean attention plasticity of {model}'s heads for key pairs binned by the distance " \
     "between the two keys (x) and by the distance from the keys' midpoint to the query " \
     "(y), in bins of one capture bucket (ticks at bin starts, K = 1024 tokens). Bright " \
     "cells: the query's content still decides which of the two keys wins; dark cells: " \
     "their order is fixed by position. The colour range is robust (docs/figure-style.md), " \
     "decided by the cells from enough heads; cells beyond it " \
     "take the end colour and carry a triangle, and the key numbers count them. Cells " \
     "averaged over fewer than the figure's minimum share of the model's heads are faded. " \
     "White cells hold no pairs (or fewer evaluations than the count filter). A pair can " \
     "only be as far apart as it is old, hence the diamond. The model is a parameter of " \
     "the figure.", \
     "the cross-model plasticity table results/attention_plasticity/model_pair2d.csv with " \
     "the rows of {model}: the dataset of {model} analysed in the run.", \
     plast_draw_heatmap, 1}

#define PROFILE_FIGURE(id) \
    {id, "Attention plasticity along the context: {model}", \
     "Attention plasticity of every head of {model} (grey, one line per head) and their " \
     "mean (vermillion) against the query position, per query bin (a tenth of a capture " \
     "bucket), plotted at the bin centre; positions in tokens, K = 1024. A head's bins " \
     "with too few eligible key pairs are left out, and its line breaks there. The mean is " \
     "drawn as a thick line only where at least the figure's minimum share of the heads " \
     "contribute, as a thin dashed line where fewer do; the lower panel gives the number " \
     "of heads behind each bin of the mean. The key numbers give the spread of the head " \
     "lines over the first and the last fifth of the bins. The model is a parameter of the " \
     "figure.", \
     "the cross-model plasticity tables " \
     "results/attention_plasticity/head_bucket_plasticity.csv and " \
     "model_bucket_plasticity.csv with the rows of {model}: the dataset of {model} " \
     "analysed in the run.", \
     plast_draw_profile, 1}

const fig_def plasticity_figures[] = {
    HEATMAP_FIGURE("attention-plasticity/01"),
    HEATMAP_FIGURE("attention-plasticity/02"),
    HEATMAP_FIGURE("attention-plasticity/03"),
    HEATMAP_FIGURE("attention-plasticity/04"),
    PROFILE_FIGURE("attention-plasticity/05"),
    PROFILE_FIGURE("attention-plasticity/06"),
    PROFILE_FIGURE("attention-plasticity/07"),
    {"attention-plasticity/08", "Where the positional information sits: {model}",
     "Top: mean over {model}'s heads of the component weight of each head dimension, the "
     "share of the linear positional information of the queries (per-dimension R^2 of a "
     "linear fit against position, normalised to sum to one per head) that sits in that "
     "coordinate; a robust y range (bars beyond it are cut and marked). With rotate-half "
     "RoPE, coordinates i and i + d/2 form one rotation pair (the dashed line splits the "
     "halves). Bottom: the two halves overlaid by pair index i, so that the eye can "
     "compare each coordinate with its RoPE partner; the Pearson r of the halves in the "
     "panel title says how far they mirror each other, and the key numbers state whether "
     "they do (r of at least 0.5) and how concentrated the weight is. The model is a "
     "parameter of the figure.",
     "the cross-model plasticity table "
     "results/attention_plasticity/head_component_weights.csv with the rows of {model}: "
     "the dataset of {model} analysed in the run.",
     plast_draw_weights, 1},
    {"attention-plasticity/09", "SmolLM3-3B: plasticity and positional bias through training",
     "Top: model attention plasticity over the first 20 % (blue circles) and the last 20 % "
     "(vermillion squares) of each checkpoint's observed positions; the shaded band "
     "between them is AP_drop. Bottom: the per-token positional bias of the rotation model "
     "(bias_strength x 10^3, mean over heads). Dashed lines separate checkpoints trained "
     "at different context lengths (K = 1024 tokens); checkpoints are labelled as in the "
     "registry. The y ranges are robust (values beyond are drawn at the edge and marked). "
     "Values from joint_rotation_plasticity.csv; the subtitle gives the heads per "
     "checkpoint.",
     "the joint SmolLM3-3B table "
     "results/smollm3_training_progress/joint_rotation_plasticity.csv: at least one "
     "SmolLM3-3B training checkpoint analysed in the run.",
     plast_draw_smollm3_trajectory, 1},
    {"attention-plasticity/10", "AP_drop against published LongBench-Pro scores",
     "One point per model that has a published LongBench-Pro overall score (non-thinking "
     "mode, workflow/benchmarks.tsv; not computed by this suite): x = its AP_drop "
     "(attention plasticity over the first 20 % of positions minus the last 20 %) from "
     "this run, y = the published score. Colour and marker = family (registry order). "
     "Dashed: ordinary least squares over all points; r = Pearson correlation, n = models. "
     "With fewer than three models the figure is not drawn.",
     "AP_drop (results/attention_plasticity/model_report.csv) of at least three models "
     "with a published LongBench-Pro overall score in workflow/benchmarks.tsv.",
     plast_draw_drop_vs_lbp, 1},
    {"attention-plasticity/11", "Extra models: plasticity and published RULER scores by length",
     "The models analysed beside the cross-model study (registry study 'extra'; "
     "Llama-3.1-8B and Mistral-7B-v0.2 in the thesis) that have published per-length RULER "
     "scores (workflow/benchmarks.tsv, from the RULER paper; not computed by this suite). "
     "Left: each model's profile, the mean AP over its heads per query bin, along the "
     "context, thin where fewer than the figure's minimum share of the model's heads "
     "contribute; a dashed line marks where a model's captures end. Right: at each RULER "
     "length (log scale, K = 1024 tokens) the model's AP (solid, left axis: the mean of its "
     "profile bins in the doubling range that ends at the length, [0, L) up to 8K) and its "
     "published RULER score (dashed, right axis). A length beyond a model's captures has a "
     "score but no AP: what happens there is out of plasticity's sight. The AP axis is "
     "robust (docs/figure-style.md); bins beyond it are drawn at the edge and counted.",
     "The profiles and scalars of the extra study (results/extra/model_bucket_plasticity.csv, "
     "model_report.csv) of a model with published RULER scores in workflow/benchmarks.tsv "
     "(Llama-3.1-8B or Mistral-7B-v0.2).",
     plast_draw_extra_ruler, 1},
    {NULL, NULL, NULL, NULL, NULL, 0}};
