/* Section "plasticity": the numbers of the report's attention plasticity
 * section, aggregated by src/lib/report/plasticity_tables.c. The models of the
 * single-model figures are parameters (heatmaps, profiles, weights:
 * "NN=model ..."), so the figure-to-model mapping lives in the Make layer
 * that draws the figures. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/die.h"
#include "qk/plasticity_tables.h"
#include "qk/study.h"
#include "summary.h"

#define AP "number.3"

static const qk_key plasticity_keys[] = {
    {"plasticity.models", "count", "models of the cross-model study"},
    {"plasticity.heads", "count", "query heads of the cross-model study"},
    {"plasticity.families", "count", "model families of the cross-model study"},
    {"plasticity.models_falling", "count", "models whose profile ends lower than it starts (AP_last20 < AP_first20)"},
    {"plasticity.models_profiled", "count", "models with a profile (AP_first20 and AP_last20: a query bin with enough key pairs)"},
    {"plasticity.pair2d_cells", "count", "heatmap cells with a value (enough evaluations), all models of the cross-model study"},
    {"plasticity.heatmap_scale_shared", "flag", "1 when the heatmaps 01-04 share one colour scale (FIG_HEATMAP_SCALE shared), 0 when each has its own (own)"},
    {"plasticity.bin_factor", "number.0", "query bins per capture bucket (when all models have the same)"},
    {"plasticity.ap.low_model", "text", "the model with the lowest ap_overall"},
    {"plasticity.ap.low", AP, "the lowest ap_overall of a model"},
    {"plasticity.ap.high_model", "text", "the model with the highest ap_overall"},
    {"plasticity.ap.high", AP, "the highest ap_overall of a model"},
    {"plasticity.drop.low_model", "text", "the model with the smallest AP_drop"},
    {"plasticity.drop.low", AP, "the smallest AP_drop of a model"},
    {"plasticity.drop.high_model", "text", "the model with the largest AP_drop"},
    {"plasticity.drop.high", AP, "the largest AP_drop of a model"},
    {"plasticity.family_drop.families", "count", "families with a mean AP_drop"},
    {"plasticity.family_drop.low", "text", "the family with the smallest mean AP_drop"},
    {"plasticity.family_drop.low_value", AP, "its mean AP_drop"},
    {"plasticity.family_drop.high", "text", "the family with the largest mean AP_drop"},
    {"plasticity.family_drop.high_value", AP, "its mean AP_drop"},
    {"plasticity.lbp.scored", "count", "models with a published LongBench-Pro overall score"},
    {"plasticity.lbp.models", "count", "models with a published LongBench-Pro overall score and an AP_drop"},
    {"plasticity.lbp.r_drop", "signed.2", "Pearson r of the published LongBench-Pro score with AP_drop"},
    {"plasticity.lbp.r_ap", "signed.2", "Pearson r of the published LongBench-Pro score with ap_overall"},
    {"plasticity.lbp.r_last", "signed.2", "Pearson r of the published LongBench-Pro score with AP_last20"},
    {"plasticity.smollm3.checkpoints", "count", "SmolLM3-3B checkpoints of the joint table"},
    {"plasticity.smollm3.lc_checkpoints", "count", "long-context checkpoints (context above the smallest)"},
    {"plasticity.smollm3.pre_checkpoints", "count", "pre-training checkpoints (the smallest context)"},
    {"plasticity.smollm3.first_label", "text", "the first checkpoint"},
    {"plasticity.smollm3.first_bias_x1e3", SUM_FMT_BIAS_X1E3, "mean bias_strength at the first checkpoint (x 10^3)"},
    {"plasticity.smollm3.peak_label", "text", "the pre-training checkpoint with the highest bias"},
    {"plasticity.smollm3.peak_bias_x1e3", SUM_FMT_BIAS_X1E3, "its mean bias_strength (x 10^3)"},
    {"plasticity.smollm3.base_label", "text", "the last pre-training checkpoint"},
    {"plasticity.smollm3.base_bias_x1e3", SUM_FMT_BIAS_X1E3, "its mean bias_strength (x 10^3)"},
    {"plasticity.smollm3.lc_first_label", "text", "the first long-context checkpoint"},
    {"plasticity.smollm3.lc_last_label", "text", "the last long-context checkpoint"},
    {"plasticity.smollm3.lc_bias_x1e3", SUM_FMT_BIAS_X1E3, "mean bias_strength over the long-context checkpoints (x 10^3)"},
    {"plasticity.smollm3.bias_factor", "ratio.1", "bias at the last pre-training checkpoint over the long-context mean (times)"},
    {"plasticity.smollm3.bias_kept", "number.2", "|long-context mean bias| over |bias at the last pre-training checkpoint|"},
    {"plasticity.smollm3.base_first", AP, "AP_first20 at the last pre-training checkpoint"},
    {"plasticity.smollm3.lc_first", AP, "mean AP_first20 of the long-context checkpoints"},
    {"plasticity.smollm3.base_last", AP, "AP_last20 at the last pre-training checkpoint"},
    {"plasticity.smollm3.lc_last", AP, "mean AP_last20 of the long-context checkpoints"},
    {"plasticity.smollm3.base_drop", AP, "AP_drop at the last pre-training checkpoint"},
    {"plasticity.smollm3.lc_drop", AP, "mean AP_drop of the long-context checkpoints"},
    {"plasticity.smollm3.drop_factor", "ratio.1", "long-context mean AP_drop over that of the last pre-training checkpoint (times)"},
    {NULL, NULL, NULL}};

/* The scalars of a figure's model, fields of every figure record. */
#define FIGURE_FIELDS                                                      \
    {"model", "text", "model of the figure"},                              \
    {"ap_first", AP, "AP over the first 20 % of positions"},               \
    {"ap_last", AP, "AP over the last 20 % of positions"},                 \
    {"ap_drop", AP, "AP_drop, first minus last 20 %"},                     \
    {"ap", AP, "ap_overall"}

static const qk_key heatmap_fields[] = {
    FIGURE_FIELDS,
    {"cells_near", AP, "mean AP of the heatmap cells whose keys are less than a bucket apart"},
    {"cells_far", AP, "mean AP of the farthest column of the heatmap"},
    {"cells_min", AP, "lowest AP of a heatmap cell"},
    {"cells_max", AP, "highest AP of a heatmap cell"},
    {NULL, NULL, NULL}};

static const qk_key profile_fields[] = {
    FIGURE_FIELDS,
    {"spread_first", AP, "SD of the heads' AP per bin, mean over the first fifth of the bins"},
    {"spread_rest", AP, "SD of the heads' AP per bin, mean over the other bins"},
    {"fan_ratio", "ratio.2", "spread_first over spread_rest (times), rounded to the two decimals shown"},
    {NULL, NULL, NULL}};

static const qk_key weight_fields[] = {
    FIGURE_FIELDS,
    {"share_low_pct", "percent.1", "share of the mean component weight in coordinates 0 to d/2 - 1 (%)"},
    {"share_high_pct", "percent.1", "share of the mean component weight in coordinates d/2 to d - 1 (%)"},
    {"half", "count", "d/2, the first coordinate of the second half"},
    {"half_last", "count", "d/2 - 1, the last coordinate of the first half"},
    {"top_dim", "count", "d - 1, the last coordinate"},
    {"peak_low", "count", "coordinate of the largest mean weight in the first half"},
    {"peak_high", "count", "coordinate of the largest mean weight in the second half"},
    {"peak_low_value", "number.4", "largest mean weight in the first half"},
    {"peak_high_value", "number.4", "largest mean weight in the second half"},
    {"half_r", "signed.2", "Pearson r of the weights of coordinates i and i + d/2 (the RoPE pairs)"},
    {NULL, NULL, NULL}};

static const qk_key model_fields[] = {
    {"label", "text", "model"},
    {"family", "text", "family"},
    {"heads", "count", "query heads"},
    {"ap", AP, "ap_overall"},
    {"ap_first", AP, "AP over the first 20 % of positions"},
    {"ap_last", AP, "AP over the last 20 % of positions"},
    {"ap_drop", AP, "AP_drop, first minus last 20 %"},
    {"lbp", "number.2", "published LongBench-Pro overall score (not computed here)"},
    {"context", "count", "context length (tokens)"},
    {"len_1_16", AP, "mean AP of the bins in [0, L/16)"},
    {"len_1_8", AP, "mean AP of the bins in [L/16, L/8)"},
    {"len_1_4", AP, "mean AP of the bins in [L/8, L/4)"},
    {"len_1_2", AP, "mean AP of the bins in [L/4, L/2)"},
    {"len_1_1", AP, "mean AP of the bins in [L/2, L]"},
    {"d0", AP, "mean AP, tenth 1 of the observed positions"},
    {"d1", AP, "mean AP, tenth 2 of the observed positions"},
    {"d2", AP, "mean AP, tenth 3 of the observed positions"},
    {"d3", AP, "mean AP, tenth 4 of the observed positions"},
    {"d4", AP, "mean AP, tenth 5 of the observed positions"},
    {"d5", AP, "mean AP, tenth 6 of the observed positions"},
    {"d6", AP, "mean AP, tenth 7 of the observed positions"},
    {"d7", AP, "mean AP, tenth 8 of the observed positions"},
    {"d8", AP, "mean AP, tenth 9 of the observed positions"},
    {"d9", AP, "mean AP, tenth 10 of the observed positions"},
    {"p0_20", AP, "mean AP, fifth 1 of the observed positions"},
    {"p20_40", AP, "mean AP, fifth 2 of the observed positions"},
    {"p40_60", AP, "mean AP, fifth 3 of the observed positions"},
    {"p60_80", AP, "mean AP, fifth 4 of the observed positions"},
    {"p80_100", AP, "mean AP, fifth 5 of the observed positions"},
    {NULL, NULL, NULL}};

static const qk_key family_fields[] = {
    {"label", "text", "family"},
    {"models", "count", "models of the family"},
    {"ap", AP, "mean ap_overall of its models"},
    {"ap_first", AP, "mean AP_first20 of its models"},
    {"ap_last", AP, "mean AP_last20 of its models"},
    {"ap_drop", AP, "mean AP_drop of its models"},
    {"drop_min", AP, "smallest AP_drop of its models"},
    {"drop_max", AP, "largest AP_drop of its models"},
    {NULL, NULL, NULL}};

static const qk_key checkpoint_fields[] = {
    {"label", "text", "checkpoint"},
    {"context", "count", "context length (tokens)"},
    {"bias_x1e3", SUM_FMT_BIAS_X1E3, "mean bias_strength (score per token, x 10^3)"},
    {"alpha_k_x1e3", SUM_FMT_ALPHA_K_X1E3, "mean |alpha_K| (per token, x 10^3)"},
    {"r_k", AP, "mean |r_k| on the drift axis"},
    {"sep", AP, "mean separation_strength"},
    {"plane", SUM_FMT_PLANE, "mean share of the variance in the {a, b} plane"},
    {"ap", AP, "ap_overall"},
    {"ap_first", AP, "AP over the first 20 % of positions"},
    {"ap_last", AP, "AP over the last 20 % of positions"},
    {"ap_drop", AP, "AP_drop, first minus last 20 %"},
    {NULL, NULL, NULL}};

/* ---- tables ---------------------------------------------------------------------------- */

typedef struct column {
    const char *field, *header;
} column;

static int make_table(qk_numbers *w, const char *name, const char *prefix, const char *caption,
                      const column *cols, int n)
{
    int t = qk_numbers_table(w, name, prefix, caption);
    for (int i = 0; i < n; i++)
        qk_numbers_column(w, t, cols[i].field, cols[i].header);
    return t;
}

/* The tables of the cross-model study: models, lengths, deciles, quintiles. */
typedef struct tables {
    int models, lengths, deciles, quintiles, families, smollm3;
} tables;

static void make_tables(qk_numbers *w, tables *t)
{
    static const column models[] = {
        {"label", "Model"}, {"family", "Family"}, {"heads", "Heads"}, {"ap", "AP overall"},
        {"ap_first", "AP<sub>first 20&nbsp;%</sub>"}, {"ap_last", "AP<sub>last 20&nbsp;%</sub>"},
        {"ap_drop", "AP<sub>drop</sub>"}, {"lbp", "LongBench-Pro (published)"}};
    static const column lengths[] = {
        {"label", "Model"}, {"context", "Context"}, {"len_1_16", "0 to <i>L</i>/16"},
        {"len_1_8", "<i>L</i>/16 to <i>L</i>/8"}, {"len_1_4", "<i>L</i>/8 to <i>L</i>/4"},
        {"len_1_2", "<i>L</i>/4 to <i>L</i>/2"}, {"len_1_1", "<i>L</i>/2 to <i>L</i>"}};
    static const column deciles[] = {
        {"label", "Model"}, {"d0", "0&ndash;10&nbsp;%"}, {"d1", "10&ndash;20&nbsp;%"},
        {"d2", "20&ndash;30&nbsp;%"}, {"d3", "30&ndash;40&nbsp;%"}, {"d4", "40&ndash;50&nbsp;%"},
        {"d5", "50&ndash;60&nbsp;%"}, {"d6", "60&ndash;70&nbsp;%"}, {"d7", "70&ndash;80&nbsp;%"},
        {"d8", "80&ndash;90&nbsp;%"}, {"d9", "90&ndash;100&nbsp;%"}};
    static const column quintiles[] = {
        {"label", "Model"}, {"p0_20", "0&ndash;20&nbsp;%"}, {"p20_40", "20&ndash;40&nbsp;%"},
        {"p40_60", "40&ndash;60&nbsp;%"}, {"p60_80", "60&ndash;80&nbsp;%"},
        {"p80_100", "80&ndash;100&nbsp;%"}};
    static const column families[] = {
        {"label", "Family"}, {"models", "Models"}, {"ap", "AP overall"},
        {"ap_first", "AP<sub>first 20&nbsp;%</sub>"}, {"ap_last", "AP<sub>last 20&nbsp;%</sub>"},
        {"ap_drop", "AP<sub>drop</sub> (mean)"}, {"drop_min", "AP<sub>drop</sub> (lowest)"},
        {"drop_max", "AP<sub>drop</sub> (highest)"}};
    static const column smollm3[] = {
        {"label", "Checkpoint"}, {"context", "Context"}, {"bias_x1e3", "bias strength &times;10<sup>3</sup>"},
        {"alpha_k_x1e3", "|&alpha;<sub>K</sub>| &times;10<sup>3</sup>"}, {"r_k", "|<i>r</i><sub>k</sub><sup>a</sup>|"},
        {"sep", "separation strength"}, {"plane", "plane share"}, {"ap", "AP overall"},
        {"ap_first", "AP<sub>first 20&nbsp;%</sub>"}, {"ap_last", "AP<sub>last 20&nbsp;%</sub>"},
        {"ap_drop", "AP<sub>drop</sub>"}};
#define N(a) (int)(sizeof a / sizeof a[0])
    t->models = make_table(w, "plasticity.models", "plasticity",
                           "Plasticity scalars by model", models, N(models));
    t->lengths = make_table(w, "plasticity.lengths", "plasticity",
                            "Model profiles averaged over doubling ranges of the context length L",
                            lengths, N(lengths));
    t->deciles = make_table(w, "plasticity.deciles", "plasticity",
                            "Model profiles averaged over tenths of the observed positions",
                            deciles, N(deciles));
    t->quintiles = make_table(w, "plasticity.quintiles", "plasticity",
                              "Model profiles averaged over fifths of the observed positions",
                              quintiles, N(quintiles));
    t->families = make_table(w, "plasticity.families", "plasticity.family",
                             "Plasticity scalars by family", families, N(families));
    t->smollm3 = make_table(w, "plasticity.smollm3", "plasticity",
                            "SmolLM3-3B by checkpoint: rotation model and plasticity",
                            smollm3, N(smollm3));
#undef N
}

/* ---- the cross-model study ------------------------------------------------------------------ */

/* The columns of model_report.csv behind a model's scalars. */
#define SCALAR_COLUMNS \
    "ap ap_overall, ap_first ap_first_20pct, ap_last ap_last_20pct, ap_drop ap_drop"
#define EVERY_MODEL "every model of the cross-model study (one row each)"

static void write_models(qk_numbers *w, const tables *tb, const plast_table *t,
                         const qk_src *registry, const qk_src *bench)
{
    for (int i = 0; i < t->n_models; i++) {
        const plast_model *m = &t->models[i];
        const char *id = sum_dataset_id(registry, m->registry_row, m->id);
        char family[64];
        plast_family_name(t, t->family_of[i], family, sizeof family);
        int rec = qk_numbers_record(w, "plasticity", id, model_fields, m->label);
        sum_source(w, &t->src, "heads n_heads, " SCALAR_COLUMNS ", context context_length, "
                   "len_1_16 ... len_1_1, d0 ... d9, p0_20 ... p80_100 as named; label and "
                   "family from the registry", "the model's row", "as written");
        qk_numbers_field_text(w, rec, "label", "%s", m->label);
        qk_numbers_field_text(w, rec, "family", "%s", family);
        qk_numbers_field(w, rec, "heads", m->n_heads);
        qk_numbers_field(w, rec, "ap", m->ap);
        qk_numbers_field(w, rec, "ap_first", m->first);
        qk_numbers_field(w, rec, "ap_last", m->last);
        qk_numbers_field(w, rec, "ap_drop", m->drop);
        qk_numbers_field(w, rec, "context", m->context);
        for (int k = 0; k < PLAST_N_LEN; k++)
            qk_numbers_field(w, rec, plast_len_columns[k], m->len[k]);
        for (int k = 0; k < PLAST_N_DECILES; k++) {
            char name[8];
            snprintf(name, sizeof name, "d%d", k);
            qk_numbers_field(w, rec, name, m->decile[k]);
        }
        for (int k = 0; k < PLAST_N_QUINTILES; k++)
            qk_numbers_field(w, rec, plast_quintile_columns[k], m->quintile[k]);
        sum_source(w, bench, "score", "the model's row of benchmark longbench-pro, length overall",
                   "as written (published, not computed here)");
        qk_numbers_field(w, rec, "lbp", m->lbp);
        qk_numbers_row(w, tb->models, id);
        qk_numbers_row(w, tb->lengths, id);
        qk_numbers_row(w, tb->deciles, id);
        qk_numbers_row(w, tb->quintiles, id);
    }
}

static void write_families(qk_numbers *w, const tables *tb, const plast_table *t)
{
    int lo = -1, hi = -1, with_drop = 0;
    double lo_drop = 0, hi_drop = 0;
    for (int f = 0; f < t->n_families; f++) {
        plast_family s;
        plast_family_stats(t, f, &s);
        char name[64];
        plast_family_name(t, f, name, sizeof name);
        const char *id = NULL;
        for (int i = 0; i < t->n_models && !id; i++)
            if (t->family_of[i] == f)
                id = t->models[i].family;
        int rec = qk_numbers_record(w, "plasticity.family", id, family_fields, name);
        sum_source(w, &t->src, SCALAR_COLUMNS "; drop_min, drop_max ap_drop; family and label "
                   "from the registry", "the rows of the family's models",
                   "mean over the models with a value; drop_min, drop_max the lowest and highest "
                   "ap_drop; models counted");
        qk_numbers_field_text(w, rec, "label", "%s", name);
        qk_numbers_field(w, rec, "models", s.n_models);
        qk_numbers_field(w, rec, "ap", s.ap);
        qk_numbers_field(w, rec, "ap_first", s.first);
        qk_numbers_field(w, rec, "ap_last", s.last);
        qk_numbers_field(w, rec, "ap_drop", s.drop);
        qk_numbers_field(w, rec, "drop_min", s.drop_min);
        qk_numbers_field(w, rec, "drop_max", s.drop_max);
        qk_numbers_row(w, tb->families, id);
        if (!isfinite(s.drop)) /* no model of the family with a value */
            continue;
        with_drop++;
        if (lo < 0 || s.drop < lo_drop)
            lo = f, lo_drop = s.drop;
        if (hi < 0 || s.drop > hi_drop)
            hi = f, hi_drop = s.drop;
    }
    sum_source(w, &t->src, "ap_drop; family and label from the registry",
               "the rows of every family's models", "the family means of ap_drop: families with "
               "one counted; low and high the families with the smallest and largest mean, "
               "*_value that mean");
    qk_numbers_set(w, "plasticity.family_drop.families", with_drop);
    if (lo < 0)
        return;
    char name[64];
    plast_family_name(t, lo, name, sizeof name);
    qk_numbers_set_text(w, "plasticity.family_drop.low", "%s", name);
    qk_numbers_set(w, "plasticity.family_drop.low_value", lo_drop);
    plast_family_name(t, hi, name, sizeof name);
    qk_numbers_set_text(w, "plasticity.family_drop.high", "%s", name);
    qk_numbers_set(w, "plasticity.family_drop.high_value", hi_drop);
}

/* The model with the lowest (sign -1) or highest (+1) scalar among those
 * with a finite one; NULL if none has. */
static const plast_model *extreme(const plast_table *t, int which, int sign)
{
    const plast_model *best = NULL;
    for (int i = 0; i < t->n_models; i++) {
        double v = plast_model_value(&t->models[i], which);
        if (isfinite(v) && (!best || sign * v > sign * plast_model_value(best, which)))
            best = &t->models[i];
    }
    return best;
}

static void cross_values(qk_numbers *w, const plast_table *t, const qk_src *bench)
{
    int heads = 0, below = 0, profiled = 0, scored = 0, same = t->n_models > 0;
    for (int i = 0; i < t->n_models; i++) {
        heads += t->models[i].n_heads;
        below += t->models[i].last < t->models[i].first;
        profiled += isfinite(t->models[i].first) && isfinite(t->models[i].last);
        scored += isfinite(t->models[i].lbp);
        same = same && fabs(t->models[i].bin_factor - t->models[0].bin_factor) < 1e-9;
    }
    const qk_src *report = &t->src;
    sum_source(w, report, "model", EVERY_MODEL, "rows counted");
    qk_numbers_set(w, "plasticity.models", t->n_models);
    sum_source(w, report, "n_heads", EVERY_MODEL, "sum");
    qk_numbers_set(w, "plasticity.heads", heads);
    sum_source(w, report, "model, its family from the registry", EVERY_MODEL,
               "distinct families counted");
    qk_numbers_set(w, "plasticity.families", t->n_families);
    sum_source(w, report, "ap_first_20pct, ap_last_20pct", EVERY_MODEL,
               "models with ap_last_20pct < ap_first_20pct counted");
    qk_numbers_set(w, "plasticity.models_falling", below);
    sum_source(w, report, "ap_first_20pct, ap_last_20pct", EVERY_MODEL,
               "models with both values counted");
    qk_numbers_set(w, "plasticity.models_profiled", profiled);
    sum_source(w, bench, "score", "the rows of benchmark longbench-pro, length overall, of the "
               "models of the cross-model study", "models with a score counted");
    qk_numbers_set(w, "plasticity.lbp.scored", scored);
    /* bins per capture bucket, when every model has the same */
    sum_source(w, report, "bucket_size, bin_width", EVERY_MODEL,
               "bucket_size / bin_width when it is the same for every model");
    qk_numbers_set(w, "plasticity.bin_factor", same ? t->models[0].bin_factor : NAN);
    if (t->n_models == 0)
        return;
    static const struct {
        const char *key, *column;
        int which, sign;
    } ends[] = {{"plasticity.ap.low", "ap_overall", PLAST_AP, -1},
                {"plasticity.ap.high", "ap_overall", PLAST_AP, 1},
                {"plasticity.drop.low", "ap_drop", PLAST_DROP, -1},
                {"plasticity.drop.high", "ap_drop", PLAST_DROP, 1}};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) {
        sum_source(w, report, ends[i].column, EVERY_MODEL " with a value",
                   ends[i].sign < 0 ? "the lowest value and its model's label"
                                    : "the highest value and its model's label");
        const plast_model *m = extreme(t, ends[i].which, ends[i].sign);
        if (!m) /* no model has the value: it stays missing */
            continue;
        char key[64];
        snprintf(key, sizeof key, "%s_model", ends[i].key);
        qk_numbers_set_text(w, key, "%s", m->label);
        qk_numbers_set(w, ends[i].key, plast_model_value(m, ends[i].which));
    }
    /* a correlation over fewer than three models says nothing */
    const qk_src *both[2] = {report, bench};
    static const char *const lbp_rows =
        "the models of the cross-model study with a published score (benchmark "
        "longbench-pro, length overall) and a value";
    qk_line drop = plast_lbp_fit(t, PLAST_DROP);
    sum_source_tables(w, both, 2, "ap_drop; score", lbp_rows, "models counted");
    qk_numbers_set(w, "plasticity.lbp.models", drop.n);
    sum_source_tables(w, both, 2, "ap_drop; score", lbp_rows,
                      "Pearson r of score and ap_drop (three models at least)");
    qk_numbers_set(w, "plasticity.lbp.r_drop", drop.n >= 3 ? drop.r : NAN);
    qk_line ap = plast_lbp_fit(t, PLAST_AP), last = plast_lbp_fit(t, PLAST_LAST);
    sum_source_tables(w, both, 2, "ap_overall; score", lbp_rows,
                      "Pearson r of score and ap_overall (three models at least)");
    qk_numbers_set(w, "plasticity.lbp.r_ap", ap.n >= 3 ? ap.r : NAN);
    sum_source_tables(w, both, 2, "ap_last_20pct; score", lbp_rows,
                      "Pearson r of score and ap_last_20pct (three models at least)");
    qk_numbers_set(w, "plasticity.lbp.r_last", last.n >= 3 ? last.r : NAN);
}

/* The heatmap cells with a value: none when every cell has fewer
 * evaluations than the count filter of the plasticity stage. */
static void pair2d_cells(qk_numbers *w, const qk_src *pair2d)
{
    int c_ap = qk_src_col(pair2d, "ap"), n = 0;
    sum_source(w, pair2d, "ap", "every heatmap cell of every model",
               "cells with a value counted");
    for (int r = 0; r < pair2d->t->n_rows; r++)
        n += isfinite(qk_src_num(pair2d, r, c_ap));
    qk_numbers_set(w, "plasticity.pair2d_cells", n);
}

/* ---- the figure models ------------------------------------------------------------------------ */

/* Calls fn for each "NN=model" word of a parameter. */
typedef void (*figure_fn)(sum_ctx *ctx, const char *fig, const char *model, const plast_table *t);

static void each_figure(sum_ctx *ctx, const char *param, figure_fn fn, const plast_table *t)
{
    const char *list = sum_param(ctx, param, "");
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, " ");
        char word[128];
        snprintf(word, sizeof word, "%.*s", (int)(len < sizeof word ? len : sizeof word - 1), p);
        char *eq = strchr(word, '=');
        if (len && (!eq || eq == word || !eq[1]))
            qk_die(QK_EXIT_USAGE, NULL, "--param %s takes 'NN=model ...', got '%s'", param, word);
        if (len) {
            *eq = '\0';
            fn(ctx, word, eq + 1, t);
        }
        p += len;
        while (*p == ' ')
            p++;
    }
}

/* A table of figure fig: the input "figNN.NAME" (a table of its model's
 * study, which need not be the cross-model one), else the cross-model NAME. */
static const qk_src *figure_input(const sum_ctx *ctx, const char *fig, const char *name)
{
    char own[32];
    snprintf(own, sizeof own, "fig%s.%s", fig, name);
    const qk_src *src = sum_input(ctx, own);
    return src ? src : sum_input(ctx, name);
}

/* The record of figure fig with the model's scalars, from the figure's
 * model report (figure_input) or else the cross-model table t; *found
 * tells whether the report has the model. */
static int figure_record(sum_ctx *ctx, const char *fig, const char *model, const qk_key *fields,
                         const plast_table *t, int *found)
{
    const qk_src *registry = sum_input(ctx, "registry");
    char id[16], own_name[32];
    snprintf(id, sizeof id, "fig%s", fig);
    const char *label = qk_registry_cell(registry, model, "label", model);
    int rec = qk_numbers_record(ctx->out, "plasticity", id, fields, label);
    sum_source(ctx->out, registry, "label", "the row of the figure's model (the parameter "
               "heatmaps, profiles or weights: NN=model)", "as written");
    qk_numbers_field_text(ctx->out, rec, "model", "%s", label);
    snprintf(own_name, sizeof own_name, "fig%s.report", fig);
    const qk_src *own_report = sum_input(ctx, own_name);
    plast_table own;
    if (own_report) {
        plast_table_load(&own, own_report, registry, sum_input(ctx, "benchmarks"));
        t = &own;
    }
    int index = t ? plast_find_model(t, model) : -1;
    if (index >= 0) {
        const plast_model *m = &t->models[index];
        sum_source(ctx->out, &t->src, SCALAR_COLUMNS, "the row of the figure's model",
                   "as written");
        qk_numbers_field(ctx->out, rec, "ap_first", m->first);
        qk_numbers_field(ctx->out, rec, "ap_last", m->last);
        qk_numbers_field(ctx->out, rec, "ap_drop", m->drop);
        qk_numbers_field(ctx->out, rec, "ap", m->ap);
    }
    if (own_report)
        plast_table_free(&own);
    *found = index >= 0;
    return rec;
}

static void heatmap_figure(sum_ctx *ctx, const char *fig, const char *model, const plast_table *t)
{
    int found;
    int rec = figure_record(ctx, fig, model, heatmap_fields, t, &found);
    const qk_src *pair2d = figure_input(ctx, fig, "pair2d");
    if (!found || !pair2d)
        return;
    plast_cells c;
    plast_heatmap_cells(pair2d, model, &c);
    sum_source(ctx->out, pair2d, "ap, dist_bin", "the heatmap cells of the figure's model",
               "cells_near: mean ap of the cells with dist_bin 0; cells_far: mean ap of the "
               "largest dist_bin; cells_min, cells_max: lowest and highest ap");
    qk_numbers_field(ctx->out, rec, "cells_near", c.near);
    qk_numbers_field(ctx->out, rec, "cells_far", c.far);
    qk_numbers_field(ctx->out, rec, "cells_min", c.min);
    qk_numbers_field(ctx->out, rec, "cells_max", c.max);
}

static void profile_figure(sum_ctx *ctx, const char *fig, const char *model, const plast_table *t)
{
    int found;
    int rec = figure_record(ctx, fig, model, profile_fields, t, &found);
    const qk_src *profile = figure_input(ctx, fig, "profile");
    if (!found || !profile)
        return;
    plast_spread s;
    plast_profile_spread(profile, model, &s);
    sum_source(ctx->out, profile, "ap, q_bin (heads: layer, q_head)",
               "the rows of the figure's model",
               "per query bin the SD of the heads' ap (bins with two heads at least), mean over "
               "the first fifth of the bins (spread_first) and over the others (spread_rest); "
               "fan_ratio spread_first / spread_rest, rounded to two decimals");
    qk_numbers_field(ctx->out, rec, "spread_first", s.first);
    qk_numbers_field(ctx->out, rec, "spread_rest", s.rest);
    /* the rule "at least 1.5 times" is read on the ratio as the page shows
     * it: 1.496 would print 1.50 beside "do not fan out" */
    qk_numbers_field(ctx->out, rec, "fan_ratio", s.rest > 0 ? round(100 * s.first / s.rest) / 100 : NAN);
}

static void weight_figure(sum_ctx *ctx, const char *fig, const char *model, const plast_table *t)
{
    int found;
    int rec = figure_record(ctx, fig, model, weight_fields, t, &found);
    const qk_src *weights = figure_input(ctx, fig, "weights");
    if (!found || !weights)
        return;
    plast_weights pw;
    plast_weights_load(weights, model, &pw);
    int d = pw.dim, half = d / 2;
    double share = 0, total = 0;
    int peak[2] = {0, half};
    for (int c = 0; c < d; c++) {
        total += pw.weight[c];
        if (c < half)
            share += pw.weight[c];
        if (pw.weight[c] > pw.weight[peak[c >= half]])
            peak[c >= half] = c;
    }
    if (d >= 2 && total > 0) {
        qk_numbers *w = ctx->out;
        sum_source(w, weights, "component_weight, component", "the rows of the figure's model",
                   "the mean weight of each coordinate over the heads: the two halves' shares "
                   "of the total (%), the coordinate of the largest mean in each half and that "
                   "mean, Pearson r of coordinates i and i + d/2; half, half_last, top_dim from "
                   "the head dimension d");
        qk_numbers_field(w, rec, "share_low_pct", 100 * share / total);
        qk_numbers_field(w, rec, "share_high_pct", 100 - 100 * share / total);
        qk_numbers_field(w, rec, "half", half);
        qk_numbers_field(w, rec, "half_last", half - 1);
        qk_numbers_field(w, rec, "top_dim", d - 1);
        qk_numbers_field(w, rec, "peak_low", peak[0]);
        qk_numbers_field(w, rec, "peak_high", peak[1]);
        qk_numbers_field(w, rec, "peak_low_value", pw.weight[peak[0]]);
        qk_numbers_field(w, rec, "peak_high_value", pw.weight[peak[1]]);
        qk_numbers_field(w, rec, "half_r", qk_pearson(pw.weight, pw.weight + half, half));
    }
    plast_weights_free(&pw);
}

/* ---- SmolLM3 ----------------------------------------------------------------------------------- */

static void write_checkpoints(qk_numbers *w, int table, const plast_checkpoint *cp, int n,
                              const qk_src *joint, const qk_src *registry)
{
    sum_source(w, joint, "label, context context_length, bias_x1e3 bias_strength, alpha_k_x1e3 "
               "abs_alpha_k, r_k abs_r_k_a, sep separation_strength, plane plane_var_fraction, "
               SCALAR_COLUMNS, "the checkpoint's row", "as written; *_x1e3 times 10^3");
    for (int i = 0; i < n; i++) {
        const char *id = sum_dataset_id(registry, qk_registry_row(registry, cp[i].id), cp[i].id);
        int rec = qk_numbers_record(w, "plasticity", id, checkpoint_fields, cp[i].label);
        qk_numbers_field_text(w, rec, "label", "%s", cp[i].label);
        qk_numbers_field(w, rec, "context", cp[i].context);
        qk_numbers_field(w, rec, "bias_x1e3", 1e3 * cp[i].bias);
        qk_numbers_field(w, rec, "alpha_k_x1e3", 1e3 * cp[i].alpha_k);
        qk_numbers_field(w, rec, "r_k", cp[i].r_k);
        qk_numbers_field(w, rec, "sep", cp[i].sep);
        qk_numbers_field(w, rec, "plane", cp[i].plane);
        qk_numbers_field(w, rec, "ap", cp[i].ap);
        qk_numbers_field(w, rec, "ap_first", cp[i].first);
        qk_numbers_field(w, rec, "ap_last", cp[i].last);
        qk_numbers_field(w, rec, "ap_drop", cp[i].drop);
        qk_numbers_row(w, table, id);
    }
}

/* The checkpoints of the joint table: the pre-training ones are those at
 * the smallest context_length, the last of them the base; the others are
 * the long-context ones (plast_smollm3_compare). */
#define PRE_ROWS "the pre-training rows (the smallest context_length)"
#define BASE_ROW "the last pre-training row (the smallest context_length)"
#define LC_ROWS "the long-context rows (context_length above the smallest)"

static void smollm3_values(qk_numbers *w, const plast_checkpoint *cp, int n, const qk_src *joint)
{
    sum_source(w, joint, "model", "every row (one a checkpoint)", "rows counted");
    qk_numbers_set(w, "plasticity.smollm3.checkpoints", n);
    if (n == 0)
        return;
    sum_source(w, joint, "label, bias_strength", "the first row", "as written; bias times 10^3");
    qk_numbers_set_text(w, "plasticity.smollm3.first_label", "%s", cp[0].label);
    qk_numbers_set(w, "plasticity.smollm3.first_bias_x1e3", 1e3 * cp[0].bias);
    plast_smollm3 s;
    plast_smollm3_compare(cp, n, &s);
    sum_source(w, joint, "context_length", LC_ROWS, "rows counted (0 without a pre-training row)");
    qk_numbers_set(w, "plasticity.smollm3.lc_checkpoints", s.ok ? s.n_lc : 0);
    if (!s.ok)
        return;
    const plast_checkpoint *b = &cp[s.base];
    sum_source(w, joint, "context_length", PRE_ROWS, "rows counted");
    qk_numbers_set(w, "plasticity.smollm3.pre_checkpoints", n - s.n_lc);
    sum_source(w, joint, "label, bias_strength", PRE_ROWS,
               "the row with the highest bias_strength: its label and bias times 10^3");
    qk_numbers_set_text(w, "plasticity.smollm3.peak_label", "%s", cp[s.peak].label);
    qk_numbers_set(w, "plasticity.smollm3.peak_bias_x1e3", 1e3 * cp[s.peak].bias);
    sum_source(w, joint, "label, bias_strength, ap_first_20pct, ap_last_20pct, ap_drop", BASE_ROW,
               "as written; bias times 10^3");
    qk_numbers_set_text(w, "plasticity.smollm3.base_label", "%s", b->label);
    qk_numbers_set(w, "plasticity.smollm3.base_bias_x1e3", 1e3 * b->bias);
    qk_numbers_set(w, "plasticity.smollm3.base_first", b->first);
    qk_numbers_set(w, "plasticity.smollm3.base_last", b->last);
    qk_numbers_set(w, "plasticity.smollm3.base_drop", b->drop);
    sum_source(w, joint, "label", LC_ROWS, "the first and the last row's label");
    qk_numbers_set_text(w, "plasticity.smollm3.lc_first_label", "%s", cp[s.first_lc].label);
    qk_numbers_set_text(w, "plasticity.smollm3.lc_last_label", "%s", cp[s.last_lc].label);
    sum_source(w, joint, "bias_strength, ap_first_20pct, ap_last_20pct, ap_drop", LC_ROWS,
               "mean over the rows; bias times 10^3");
    qk_numbers_set(w, "plasticity.smollm3.lc_bias_x1e3", 1e3 * s.lc_bias);
    qk_numbers_set(w, "plasticity.smollm3.lc_first", s.lc_first);
    qk_numbers_set(w, "plasticity.smollm3.lc_last", s.lc_last);
    qk_numbers_set(w, "plasticity.smollm3.lc_drop", s.lc_drop);
    sum_source(w, joint, "bias_strength", BASE_ROW " and " LC_ROWS,
               "bias_factor: the base's bias over the long-context mean; bias_kept: |the "
               "long-context mean| over |the base's bias|");
    qk_numbers_set(w, "plasticity.smollm3.bias_factor", s.lc_bias != 0 ? b->bias / s.lc_bias : NAN);
    qk_numbers_set(w, "plasticity.smollm3.bias_kept",
                   b->bias != 0 ? fabs(s.lc_bias) / fabs(b->bias) : NAN);
    sum_source(w, joint, "ap_drop", BASE_ROW " and " LC_ROWS,
               "the long-context mean over the base's ap_drop");
    qk_numbers_set(w, "plasticity.smollm3.drop_factor", b->drop != 0 ? s.lc_drop / b->drop : NAN);
}

void sum_plasticity(sum_ctx *ctx)
{
    const qk_src *registry = sum_input(ctx, "registry");
    const qk_src *report = sum_input(ctx, "report"), *joint = sum_input(ctx, "joint");
    qk_numbers *w = ctx->out;
    qk_numbers_declare(w, plasticity_keys);
    tables tb;
    make_tables(w, &tb);
    plast_table t;
    if (report) {
        plast_table_load(&t, report, registry, sum_input(ctx, "benchmarks"));
        cross_values(w, &t, sum_input(ctx, "benchmarks"));
        write_models(w, &tb, &t, registry, sum_input(ctx, "benchmarks"));
        write_families(w, &tb, &t);
        if (sum_input(ctx, "pair2d"))
            pair2d_cells(w, sum_input(ctx, "pair2d"));
    }
    const char *scale = sum_param(ctx, "heatmap_scale", NULL);
    if (!scale)
        qk_die(QK_EXIT_USAGE, NULL, "section plasticity needs the parameter heatmap_scale "
                                    "(FIG_HEATMAP_SCALE)");
    sum_source_params(w, "figures", "FIG_HEATMAP_SCALE");
    qk_numbers_set(w, "plasticity.heatmap_scale_shared", strcmp(scale, "own") != 0);
    each_figure(ctx, "heatmaps", heatmap_figure, report ? &t : NULL);
    each_figure(ctx, "profiles", profile_figure, report ? &t : NULL);
    each_figure(ctx, "weights", weight_figure, report ? &t : NULL);
    if (report)
        plast_table_free(&t);
    plast_checkpoint *cp = NULL;
    int n = joint ? plast_joint_load(joint, &cp) : 0;
    if (joint) {
        write_checkpoints(w, tb.smollm3, cp, n, joint, registry);
        smollm3_values(w, cp, n, joint);
    }
    free(cp);
}
