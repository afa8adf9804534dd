/* Figures of the plasticity study (figures/attention-plasticity): the table of the
 * ten figures and the helpers they share. The heatmaps 01-04 are in
 * plasticity_maps.c, the profiles 05-07 and the component weights 08 in
 * plasticity_profiles.c, the SmolLM3 trajectory 09 and the benchmark
 * scatter 10 in plasticity_trends.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plasticity_fig.h"

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
        if (strcmp(qk_table_cell(t, r, c), model) == 0)
            rows[(*n)++] = r;
    if (*n == 0)
        qk_die(QK_EXIT_DATA, fig_path(ctx, t), "no rows for model '%s' (needed by figure %s)",
               model, ctx->id);
    return rows;
}

void plast_begin(qk_plot *p, int width, int height, int font_pt)
{
    fig_begin(p, width, height, font_pt);
    /* The script is loaded once per terminal in one gnuplot session, so the
     * second load starts from the state the first one ended in: undo what a
     * figure may have set after the house style. */
    qk_plot_printf(p,
        "unset label\nunset arrow\nunset title\nunset xlabel\nunset ylabel\nunset cblabel\n"
        "set lmargin -1\nset rmargin -1\nset tmargin -1\nset bmargin -1\n"
        "set autoscale\nset xtics autofreq\nset ytics autofreq\n"
        "set format x \"%% h\"\nset format y \"%% h\"\n");
}

void plast_tokens(double v, char *out, size_t cap)
{
    double r = round(v);
    if (r != 0 && fabs(r - v) < 1e-6 && fmod(r, 1048576.0) == 0)
        snprintf(out, cap, "%.0fM", r / 1048576.0);
    else if (r != 0 && fabs(r - v) < 1e-6 && fmod(r, 1024.0) == 0)
        snprintf(out, cap, "%.0fK", r / 1024.0);
    else
        snprintf(out, cap, "%.0f", v);
}

const fig_def plasticity_figures[] = {
    {"attention-plasticity/01", "Attention plasticity by key distance: Ministral-3-14B",
     "Mean attention plasticity of Ministral-3-14B's heads for key pairs binned by the "
     "distance between the two keys (x) and by the distance from the keys' midpoint to the "
     "query (y), in bins of one capture bucket. Bright cells: the query's content still decides "
     "which of the two keys wins; dark cells: their order is fixed by position. The colour "
     "range is the figure's own (min to max of its cells); white cells hold no pairs (or fewer "
     "evaluations than the count filter). A pair can only be as far apart as it is old, hence "
     "the diamond.",
     plast_draw_heatmap_ministral3_14b},
    {"attention-plasticity/02", "Attention plasticity by key distance: Qwen3-14B",
     "Mean attention plasticity of Qwen3-14B's heads for key pairs binned by the distance "
     "between the two keys (x) and by the distance from the keys' midpoint to the query (y). "
     "Colour range per figure (min to max of its cells); white cells hold no pairs.",
     plast_draw_heatmap_qwen3_14b},
    {"attention-plasticity/03", "Attention plasticity by key distance: Llama-3.2-3B",
     "Mean attention plasticity of Llama-3.2-3B's heads for key pairs binned by the distance "
     "between the two keys (x) and by the distance from the keys' midpoint to the query (y). "
     "Colour range per figure (min to max of its cells); white cells hold no pairs.",
     plast_draw_heatmap_llama3_2_3b},
    {"attention-plasticity/04", "Attention plasticity by key distance: Llama-3.2-11B",
     "Mean attention plasticity of Llama-3.2-11B's heads for key pairs binned by the distance "
     "between the two keys (x) and by the distance from the keys' midpoint to the query (y). "
     "Colour range per figure (min to max of its cells); white cells hold no pairs.",
     plast_draw_heatmap_llama3_2_11b},
    {"attention-plasticity/05", "Attention plasticity along the context: Ministral-3-3B",
     "Attention plasticity of every head of Ministral-3-3B (grey, one line per head) and their "
     "mean (vermillion) against the query position, per query bin (a tenth of a capture "
     "bucket), plotted at the bin centre. Bins with too few eligible key pairs are left out, "
     "so the lines start a little after the first bucket; the first kept bins rest on few pairs "
     "and fan out.",
     plast_draw_profile_ministral3_3b},
    {"attention-plasticity/06", "Attention plasticity along the context: Qwen3-4B",
     "Attention plasticity of every head of Qwen3-4B (grey, one line per head) and their mean "
     "(vermillion) against the query position, per query bin, plotted at the bin centre.",
     plast_draw_profile_qwen3_4b},
    {"attention-plasticity/07", "Attention plasticity along the context: Llama-3.2-3B",
     "Attention plasticity of every head of Llama-3.2-3B (grey, one line per head) and their "
     "mean (vermillion) against the query position, per query bin, plotted at the bin centre.",
     plast_draw_profile_llama3_2_3b},
    {"attention-plasticity/08", "Where the positional information sits: Qwen3-14B",
     "Mean over Qwen3-14B's heads of the component weight of each head dimension: the share "
     "of the linear positional information of the queries (per-dimension R^2 of a linear fit "
     "against position, normalised to sum to one per head) that sits in that coordinate. With "
     "rotate-half RoPE, coordinates i and i + d/2 form one rotation pair, so the two halves "
     "(split by the dashed line) mirror each other: slow (low-frequency) pairs drift almost "
     "linearly over the context and carry the weight, fast ones average out.",
     plast_draw_weights_qwen3_14b},
    {"attention-plasticity/09", "SmolLM3-3B: plasticity and positional bias through training",
     "Top: model attention plasticity over the first 20 % (blue circles) and the last 20 % "
     "(vermillion squares) of each checkpoint's observed positions; the shaded band between "
     "them is AP_drop. Bottom: the per-token positional bias of the rotation model "
     "(bias_strength, mean over heads). Dashed lines separate checkpoints trained at different "
     "context lengths. Values from joint_rotation_plasticity.csv.",
     plast_draw_smollm3_trajectory},
    {"attention-plasticity/10", "AP_drop against published LongBench-Pro scores",
     "One point per model that has a published LongBench-Pro overall score (non-thinking mode, "
     "workflow/benchmarks.tsv; not computed by this suite): x = its AP_drop (attention "
     "plasticity over the first 20 % of positions minus the last 20 %) from this run, y = the "
     "published score. Colour and marker = family. Dashed: ordinary least squares over all "
     "points; r = Pearson correlation.",
     plast_draw_drop_vs_lbp},
    {NULL, NULL, NULL, NULL}};
