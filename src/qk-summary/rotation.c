/* Section "rotation": the numbers of the report's planar rotation section,
 * from the study tables (model_summary.csv, rotated.csv). It aggregates
 * with the code of the rotation figures (src/lib/report/rotation_tables.c), so
 * text and figures agree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/die.h"
#include "qk/rotation_tables.h"
#include "qk/stats.h"
#include "qk/study.h"
#include "summary.h"

#define PCT "percent.1"

static const qk_key rotation_keys[] = {
    {"rotation.heads", "count", "heads of the cross-model study"},
    {"rotation.models", "count", "models of the cross-model study"},
    {"rotation.families", "count", "model families of the cross-model study"},
    {"rotation.rq_mean", "number.3", "mean over heads of |r_q| on the drift axis a"},
    {"rotation.rk_mean", "number.3", "mean over heads of |r_k| on the drift axis a"},
    {"rotation.rq_model_mean", "number.3", "mean of the model means of |r_q| on a"},
    {"rotation.rk_model_mean", "number.3", "mean of the model means of |r_k| on a"},
    {"rotation.rk_gt_rq_pct", PCT, "heads whose keys correlate with position more closely than their queries (%)"},
    {"rotation.q_ahead_models", "text", "models whose queries correlate more closely on average"},
    {"rotation.q_ahead_count", "count", "number of those models"},
    {"rotation.bias.positive_pct", PCT, "heads with bias_strength > 0, a recency bias (% of heads with a value)"},
    {"rotation.bias.positive_count", "count", "heads with bias_strength > 0"},
    {"rotation.bias.defined_count", "count", "heads with a bias_strength (the base of rotation.bias.positive_pct)"},
    {"rotation.bias.negative_count", "count", "heads with bias_strength < 0"},
    {"rotation.mu_q.positive_pct", PCT, "heads with mu_Q^a > 0 (%)"},
    {"rotation.bias.mean_x1e3", SUM_FMT_BIAS_X1E3, "mean bias_strength (score per token, x 10^3)"},
    {"rotation.bias.model_min_x1e3", SUM_FMT_BIAS_X1E3, "lowest model mean of bias_strength (x 10^3)"},
    {"rotation.bias.model_max_x1e3", SUM_FMT_BIAS_X1E3, "highest model mean of bias_strength (x 10^3)"},
    {"rotation.var_a_pct", PCT, "mean share of a head's pooled variance on a (%)"},
    {"rotation.var_b_pct", PCT, "mean share of a head's pooled variance on b (%)"},
    {"rotation.plane_pct", PCT, "mean share of a head's pooled variance in the {a, b} plane (%)"},
    {"rotation.plane_model_min_pct", PCT, "lowest model mean of the plane share (%)"},
    {"rotation.plane_model_max_pct", PCT, "highest model mean of the plane share (%)"},
    {"rotation.var_b_gt_a_pct", PCT, "heads with more variance on b than on a (%)"},
    {"rotation.slope_ratio.median", "ratio.2", "median over heads of |alpha_K| / |alpha_Q|"},
    {"rotation.slope_ratio.model_min", "ratio.2", "lowest model median of |alpha_K| / |alpha_Q|"},
    {"rotation.slope_ratio.model_max", "ratio.2", "highest model median of |alpha_K| / |alpha_Q|"},
    {"rotation.r_bias_sep.pooled", "signed.2", "Pearson r of bias_strength and separation_strength over all heads"},
    {"rotation.r_bias_sep.llama", "signed.2", "the same within the Llama family"},
    {"rotation.r_bias_sep.qwen", "signed.2", "the same within the Qwen family"},
    {"rotation.r_bias_sep.ministral", "signed.2", "the same within the Ministral family"},
    {"rotation.r_bias_sep.family_min", "signed.2", "lowest within-family r of bias_strength and separation_strength"},
    {"rotation.r_bias_sep.family_min_label", "text", "the family with that r"},
    {"rotation.r_bias_sep.family_max", "signed.2", "highest within-family r of bias_strength and separation_strength"},
    {"rotation.r_bias_sep.family_max_label", "text", "the family with that r"},
    {"rotation.r_bias_sep.families_opposite", "count", "families whose r reverses the pooled r: opposite signs, each with a 95 % interval that excludes 0"},
    {"rotation.r_bias_sep.families_with_r", "count", "families with an r of bias_strength and separation_strength"},
    {"rotation.r_bias_sep.simpson", "count", "1 if the data show Simpson's reversal (rot_simpson_reversal: every family r reverses the pooled r, opposite signs with 95 % intervals that exclude 0, at least two families), else 0"},
    {"rotation.complement.active_tau", "sig.3", "|angle r| from which a complement pair counts as active"},
    {"rotation.complement.active_mean", "number.1", "mean number of active complement pairs of a head"},
    {"rotation.complement.active_var_pct", PCT, "mean share of the complement variance in active pairs (%)"},
    {"rotation.complement.angle_r_max", "number.2", "largest |r| of a pair angle with position"},
    {"rotation.complement.ring_acc_mean", "number.2", "mean query/key classification accuracy in active pairs"},
    {"rotation.complement.ring_acc_heads", "count", "heads with an active pair"},
    {"rotation.bias_window.model_min", "number.0", "lowest model mean of bias_strength x L (score units)"},
    {"rotation.bias_window.model_max", "number.0", "highest model mean of bias_strength x L (score units)"},
    {"rotation.residual_max", "sci.1", "largest |r| of position with b or a complement direction, both studies"},
    {"rotation.residual_heads", "count", "heads behind rotation.residual_max"},
    {"rotation.t.checkpoints", "count", "SmolLM3-3B training checkpoints"},
    {"rotation.t.heads", "number.0", "heads per checkpoint"},
    {"rotation.t.bias_fall", "ratio.1", "peak bias_strength over that of the last checkpoint (times)"},
    {"rotation.t.bias_fall_onset", "ratio.1", "peak bias_strength over that of the checkpoint after the peak (times)"},
    {"rotation.t.bias_change_pct", "change.0", "change of bias_strength from the peak to the last checkpoint (%)"},
    {"rotation.t.bias_rise_pct", "change.0", "change of bias_strength from the first checkpoint to the peak (%)"},
    {"rotation.t.alpha_fall", "ratio.1", "|alpha_K| at the peak over that at the last checkpoint (times)"},
    {"rotation.t.alpha_change_pct", "change.0", "change of |alpha_K| from the peak to the last checkpoint (%)"},
    {"rotation.t.mu_change_pct", "change.0", "change of mu_Q^a from the peak to the last checkpoint (%)"},
    {"rotation.t.mu_change_first_pct", "change.0", "change of mu_Q^a from the first checkpoint to the peak (%)"},
    {"rotation.t.bias_window_change_pct", "change.0", "change of bias_strength x L from the peak to the last checkpoint (%)"},
    {"rotation.t.alpha_window_change_pct", "change.0", "change of |alpha_K| x L from the peak to the last checkpoint (%)"},
    {"rotation.t.context_growth", "ratio.0", "context length of the last checkpoint over that of the first (times)"},
    {"rotation.t.product_dev_pct", "percent.0", "largest deviation of mu_Q^a |alpha_K| from the mean bias over the checkpoints (%)"},
    {"rotation.t.peak_first", "flag", "1 when bias_strength peaks at the first checkpoint"},
    {"rotation.t.peak_last", "flag", "1 when bias_strength peaks at the last checkpoint"},
    {"rotation.t.onset_last", "flag", "1 when the checkpoint after the peak is the last"},
    {NULL, NULL, NULL}};

static const qk_key model_fields[] = {
    {"label", "text", "model"},
    {"family", "text", "family"},
    {"heads", "count", "heads"},
    {"rq_mean", "number.3", "mean |r_q| on a"},
    {"rk_mean", "number.3", "mean |r_k| on a"},
    {"var_a", "fraction.3", "mean share of the variance on a"},
    {"var_b", "fraction.3", "mean share of the variance on b"},
    {"plane", SUM_FMT_PLANE, "mean share of the variance in the {a, b} plane"},
    {"slope_ratio", "ratio.2", "median |alpha_K| / |alpha_Q|"},
    {"bias_x1e3", SUM_FMT_BIAS_X1E3, "mean bias_strength (x 10^3)"},
    {"bias_positive_pct", PCT, "heads with bias_strength > 0 (%)"},
    {"context", "count", "context length captured (tokens)"},
    {"bias_window", "number.1", "mean bias_strength x context length (score units)"},
    {NULL, NULL, NULL}};

static const qk_key family_fields[] = {
    {"label", "text", "family"},
    {"models", "count", "models of the family"},
    {"heads", "count", "heads of the family"},
    {"r_bias_sep", "signed.2", "Pearson r of bias_strength and separation_strength over the heads"},
    {"sep_mean", "number.3", "mean separation_strength"},
    {"bias_x1e3", SUM_FMT_BIAS_X1E3, "mean bias_strength (x 10^3)"},
    {"slope_ratio", "ratio.2", "median |alpha_K| / |alpha_Q|"},
    {"rq_mean", "number.3", "mean |r_q| on a"},
    {"rk_mean", "number.3", "mean |r_k| on a"},
    {NULL, NULL, NULL}};

static const qk_key checkpoint_fields[] = {
    {"label", "text", "checkpoint"},
    {"phase", "text", "training phase"},
    {"context", "count", "context length captured (tokens)"},
    {"rk_mean", "number.3", "mean |r_k| on a"},
    {"sep", "number.3", "mean separation_strength"},
    {"plane", SUM_FMT_PLANE, "mean share of the variance in the {a, b} plane"},
    {"mu_q", "number.2", "mean mu_Q^a"},
    {"alpha_k_x1e3", SUM_FMT_ALPHA_K_X1E3, "mean |alpha_K| (per token, x 10^3)"},
    {"bias_x1e3", SUM_FMT_BIAS_X1E3, "mean bias_strength (per token, x 10^3)"},
    {"alpha_k_window", "number.1", "mean |alpha_K| x context length"},
    {"bias_window", "number.1", "mean bias_strength x context length (score units)"},
    {NULL, NULL, NULL}};

/* The first checkpoint, the peak of the bias, the one after it and the last
 * (rotation.t.first ...). */
static const qk_key moment_fields[] = {
    {"label", "text", "checkpoint"},
    {"context", "count", "context length captured (tokens)"},
    {"rk_mean", "number.3", "mean |r_k| on a"},
    {"sep", "number.3", "mean separation_strength"},
    {"plane_pct", PCT, "mean share of the variance in the {a, b} plane (%)"},
    {"mu_q", "number.2", "mean mu_Q^a"},
    {"alpha_k_x1e3", SUM_FMT_ALPHA_K_X1E3, "mean |alpha_K| (per token, x 10^3)"},
    {"bias_x1e3", SUM_FMT_BIAS_X1E3, "mean bias_strength (per token, x 10^3)"},
    {"alpha_k_window", "number.1", "mean |alpha_K| x context length"},
    {"bias_window", "number.1", "mean bias_strength x context length (score units)"},
    {NULL, NULL, NULL}};
static const char *const moments[4] = {"first", "peak", "onset", "last"};

/* ---- inputs --------------------------------------------------------------------------------- */

/* A study: its per-model summary and its per-head table, grouped by model. */
typedef struct study {
    rot_table summary, heads;
} study;

static void load_study(study *s, const qk_src *summary, const qk_src *heads, const qk_src *registry)
{
    if (summary->t->n_rows == 0)
        qk_die(QK_EXIT_DATA, summary->path, "no models");
    if (heads->t->n_rows == 0)
        qk_die(QK_EXIT_DATA, heads->path, "no heads");
    rot_table_load(&s->summary, summary, registry);
    rot_table_load(&s->heads, heads, registry);
    for (int m = 0; m < s->summary.n_models; m++)
        if (s->summary.models[m].n_rows != 1)
            qk_die(QK_EXIT_DATA, summary->path, "model %s has %d rows (expected one)",
                   s->summary.models[m].id, s->summary.models[m].n_rows);
}

static void free_study(study *s)
{
    rot_table_free(&s->summary);
    rot_table_free(&s->heads);
}

/* Ratio a / b as a change in percent. */
static double change_pct(double a, double b) { return b != 0 ? 100.0 * (a / b - 1.0) : NAN; }

/* The source of values computed from the per-head table (rotated.csv) or
 * the per-model table (model_summary.csv) of a study. */
static void heads_source(qk_numbers *w, const study *s, const char *columns, const char *rows,
                         const char *aggregation)
{
    sum_source(w, &s->heads.src, columns, rows, aggregation);
}

static void models_source(qk_numbers *w, const study *s, const char *columns, const char *rows,
                          const char *aggregation)
{
    sum_source(w, &s->summary.src, columns, rows, aggregation);
}

#define EVERY_HEAD "every head of the cross-model study"
#define EVERY_MODEL "every model of the cross-model study (one row each)"

static double value_at(const rot_table *t, int m, const char *column)
{
    return qk_src_num(&t->src, t->models[m].rows[0], qk_src_col(&t->src, column));
}

static const char *model_id(const rot_model *md, const qk_src *registry)
{
    return sum_dataset_id(registry, md->registry_row, md->id);
}

/* ---- the cross-model study -------------------------------------------------------------- */

/* Per-head columns of a rotated.csv. */
typedef struct columns {
    double *r_q, *r_k, *bias, *sep, *mu_q, *var_a, *var_b, *plane, *ratio;
    double *n_active, *active_var, *max_angle, *ring_acc;
} columns;

static void columns_load(columns *c, const rot_table *h)
{
    c->r_q = qk_src_values(&h->src, "r_q_a");
    c->r_k = qk_src_values(&h->src, "r_k_a");
    c->bias = qk_src_values(&h->src, "bias_strength");
    c->sep = qk_src_values(&h->src, "separation_strength");
    c->mu_q = qk_src_values(&h->src, "mu_q_a");
    c->var_a = qk_src_values(&h->src, "var_frac_a");
    c->var_b = qk_src_values(&h->src, "var_frac_b");
    c->plane = qk_src_values(&h->src, "plane_var_fraction");
    c->ratio = qk_src_values(&h->src, "slope_ratio");
    c->n_active = qk_src_values(&h->src, "n_active_planes");
    c->active_var = qk_src_values(&h->src, "active_var_frac");
    c->max_angle = qk_src_values(&h->src, "max_abs_angle_r");
    c->ring_acc = qk_src_values(&h->src, "ring_cls_acc");
}

static void columns_free(columns *c)
{
    double **all[] = {&c->r_q, &c->r_k, &c->bias, &c->sep, &c->mu_q, &c->var_a, &c->var_b,
                      &c->plane, &c->ratio, &c->n_active, &c->active_var, &c->max_angle,
                      &c->ring_acc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
}

static int model_table(qk_numbers *w)
{
    int t = qk_numbers_table(w, "rotation.models", "rotation",
                             "By model: drift correlations, variance shares, slope ratio and bias");
    static const char *const headers[] = {
        "Model", "Family", "Heads", "mean |<i>r</i><sub>q</sub>|", "mean |<i>r</i><sub>k</sub>|",
        "variance on <i>a</i>", "variance on <i>b</i>", "plane share",
        "median |&alpha;<sub>K</sub>|/|&alpha;<sub>Q</sub>|", "mean bias &times;10<sup>3</sup>",
        "bias &gt; 0 (%)", "context <i>L</i>", "mean bias &times; <i>L</i>"};
    for (int c = 0; model_fields[c].name; c++)
        qk_numbers_column(w, t, model_fields[c].name, headers[c]);
    return t;
}

static void write_models(qk_numbers *w, int table, const study *s, const qk_src *registry)
{
    const rot_table *sum = &s->summary;
    models_source(w, s, "heads n_heads, rq_mean mean_abs_r_q_a, rk_mean mean_abs_r_k_a, "
                  "var_a mean_var_frac_a, var_b mean_var_frac_b, plane mean_plane_var_fraction, "
                  "slope_ratio median_slope_ratio, bias_x1e3 mean_bias_strength, "
                  "bias_positive_pct frac_bias_positive, bias_window mean_bias_strength; label, "
                  "family and context (context_length) from the registry",
                  "the model's row", "as written; bias_x1e3 times 10^3, bias_positive_pct "
                  "times 100, bias_window mean_bias_strength times context_length");
    for (int m = 0; m < sum->n_models; m++) {
        const rot_model *md = &sum->models[m];
        const char *id = model_id(md, registry);
        char family[64];
        rot_family_name(sum, sum->family_of[m], family, sizeof family);
        double bias = value_at(sum, m, "mean_bias_strength");
        int rec = qk_numbers_record(w, "rotation", id, model_fields, md->label);
        qk_numbers_field_text(w, rec, "label", "%s", md->label);
        qk_numbers_field_text(w, rec, "family", "%s", family);
        qk_numbers_field(w, rec, "heads", value_at(sum, m, "n_heads"));
        qk_numbers_field(w, rec, "rq_mean", value_at(sum, m, "mean_abs_r_q_a"));
        qk_numbers_field(w, rec, "rk_mean", value_at(sum, m, "mean_abs_r_k_a"));
        qk_numbers_field(w, rec, "var_a", value_at(sum, m, "mean_var_frac_a"));
        qk_numbers_field(w, rec, "var_b", value_at(sum, m, "mean_var_frac_b"));
        qk_numbers_field(w, rec, "plane", value_at(sum, m, "mean_plane_var_fraction"));
        qk_numbers_field(w, rec, "slope_ratio", value_at(sum, m, "median_slope_ratio"));
        qk_numbers_field(w, rec, "bias_x1e3", 1e3 * bias);
        qk_numbers_field(w, rec, "bias_positive_pct", 100 * value_at(sum, m, "frac_bias_positive"));
        qk_numbers_field(w, rec, "context", md->context_length);
        qk_numbers_field(w, rec, "bias_window", bias * md->context_length);
        qk_numbers_row(w, table, id);
    }
}

static int family_table(qk_numbers *w)
{
    int t = qk_numbers_table(w, "rotation.families", "rotation.family",
                             "By family: the correlation of bias and separation over the heads "
                             "and the family means");
    static const char *const headers[] = {
        "Family", "Models", "Heads", "Pearson <i>r</i> (bias, separation)", "mean separation",
        "mean bias &times;10<sup>3</sup>", "median |&alpha;<sub>K</sub>|/|&alpha;<sub>Q</sub>|",
        "mean |<i>r</i><sub>q</sub>|", "mean |<i>r</i><sub>k</sub>|"};
    for (int c = 0; family_fields[c].name; c++)
        qk_numbers_column(w, t, family_fields[c].name, headers[c]);
    return t;
}

/* Pearson r of separation and bias over rows, from at least three heads
 * with both values (two points always lie on a line: r = +-1 says
 * nothing), as in figure qk-rotation/07; else NAN. */
static rot_corr bias_sep_corr(const columns *c, const rot_rows *rows)
{
    return rot_correlation(c->sep, c->bias, rows);
}

/* The families table and the r of the thesis families and the pooled r. */
static void write_families(qk_numbers *w, int table, const study *s, const columns *c)
{
    static const char *const named[] = {"llama", "qwen", "ministral"};
    const rot_table *h = &s->heads;
    rot_rows all = rot_rows_all(h);
    rot_corr pooled_c = bias_sep_corr(c, &all);
    double pooled = pooled_c.r;
    static const char *const family_rows = "the heads of the family (its family column)";
    int opposite = 0, with_r = 0, f_min = -1, f_max = -1;
    double r_min = NAN, r_max = NAN;
    rot_corr *family_c = qk_malloc((size_t)(h->n_families ? h->n_families : 1) * sizeof *family_c);
    for (int f = 0; f < h->n_families; f++) {
        rot_rows rows = rot_rows_family(h, f);
        char name[64];
        rot_family_name(h, f, name, sizeof name);
        int models = 0, first = -1;
        for (int m = 0; m < h->n_models; m++)
            if (h->family_of[m] == f)
                models++, first = first < 0 ? m : first;
        const char *family = h->models[first].family;
        family_c[f] = bias_sep_corr(c, &rows);
        double r = family_c[f].r;
        opposite += rot_reverses(&pooled_c, &family_c[f]);
        with_r += isfinite(r);
        if (isfinite(r) && (f_min < 0 || r < r_min))
            f_min = f, r_min = r;
        if (isfinite(r) && (f_max < 0 || r > r_max))
            f_max = f, r_max = r;
        heads_source(w, s, "bias_strength, separation_strength", family_rows,
                     "Pearson r over the heads with both values (at least three)");
        for (int k = 0; k < 3; k++)
            if (strcmp(family, named[k]) == 0) {
                char key[64];
                snprintf(key, sizeof key, "rotation.r_bias_sep.%s", named[k]);
                qk_numbers_set(w, key, r);
            }
        heads_source(w, s, "r_bias_sep bias_strength and separation_strength, sep_mean "
                     "separation_strength, bias_x1e3 bias_strength, slope_ratio slope_ratio, "
                     "rq_mean r_q_a, rk_mean r_k_a; label from the registry", family_rows,
                     "Pearson r (at least three heads), mean (rq_mean, rk_mean: of |r|), median "
                     "(slope_ratio) over the heads with a value; bias_x1e3 times 10^3; models "
                     "and heads counted");
        int rec = qk_numbers_record(w, "rotation.family", family, family_fields, name);
        qk_numbers_field_text(w, rec, "label", "%s", name);
        qk_numbers_field(w, rec, "models", models);
        qk_numbers_field(w, rec, "heads", rows.n);
        qk_numbers_field(w, rec, "r_bias_sep", r);
        qk_numbers_field(w, rec, "sep_mean", rot_mean(c->sep, &rows, 0));
        qk_numbers_field(w, rec, "bias_x1e3", 1e3 * rot_mean(c->bias, &rows, 0));
        qk_numbers_field(w, rec, "slope_ratio", rot_quantile(c->ratio, &rows, 0.5, 0));
        qk_numbers_field(w, rec, "rq_mean", rot_mean(c->r_q, &rows, 1));
        qk_numbers_field(w, rec, "rk_mean", rot_mean(c->r_k, &rows, 1));
        qk_numbers_row(w, table, family);
        rot_rows_free(&rows);
    }
    heads_source(w, s, "bias_strength, separation_strength", EVERY_HEAD,
                 "Pearson r over the heads with both values (at least three)");
    qk_numbers_set(w, "rotation.r_bias_sep.pooled", pooled);
    heads_source(w, s, "bias_strength, separation_strength",
                 "every head of the cross-model study, and the heads of each family",
                 "the families' Pearson r (at least three heads) against the pooled r: "
                 "families_with_r those with an r, families_opposite those that reverse it (opposite "
                 "signs, each with a 95 % interval that excludes 0: rot_reverses), simpson 1 "
                 "when every family r reverses it (two families at least), "
                 "family_min and family_max the lowest and highest family r and its family");
    qk_numbers_set(w, "rotation.r_bias_sep.families_opposite", opposite);
    qk_numbers_set(w, "rotation.r_bias_sep.families_with_r", with_r);
    qk_numbers_set(w, "rotation.r_bias_sep.simpson",
                   rot_simpson_reversal(&pooled_c, family_c, h->n_families));
    free(family_c);
    /* the range in the page's sentence, named from the registry (no family
     * name is typed in the template) */
    const int ends[2] = {f_min, f_max};
    const char *const end_keys[2] = {"rotation.r_bias_sep.family_min", "rotation.r_bias_sep.family_max"};
    for (int e = 0; e < 2; e++)
        if (ends[e] >= 0) {
            char name[64], key[80];
            rot_family_name(h, ends[e], name, sizeof name);
            qk_numbers_set(w, end_keys[e], e ? r_max : r_min);
            snprintf(key, sizeof key, "%s_label", end_keys[e]);
            qk_numbers_set_text(w, key, "%s", name);
        }
    rot_rows_free(&all);
}

/* The models whose queries follow position on a more closely than their
 * keys, by label ("none" if there is none). */
static void q_ahead_models(qk_numbers *w, const study *s)
{
    char list[1024] = "";
    int n = 0;
    for (int m = 0; m < s->summary.n_models; m++)
        if (value_at(&s->summary, m, "mean_abs_r_q_a") > value_at(&s->summary, m, "mean_abs_r_k_a")) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", n++ ? ", " : "",
                     s->summary.models[m].label);
        }
    qk_numbers_set_text(w, "rotation.q_ahead_models", "%s", n ? list : "none");
    qk_numbers_set(w, "rotation.q_ahead_count", n);
}

/* The lowest and the highest of a per-model quantity. */
typedef double (*model_value)(const study *s, int m, const char *column);

static double column_value(const study *s, int m, const char *column)
{
    return value_at(&s->summary, m, column);
}

static double times_context(const study *s, int m, const char *column)
{
    return value_at(&s->summary, m, column) * s->summary.models[m].context_length;
}

static void model_range(qk_numbers *w, const study *s, model_value f, const char *column,
                        double scale, const char *min_key, const char *max_key)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int m = 0; m < s->summary.n_models; m++) {
        double x = scale * f(s, m, column);
        if (isfinite(x))
            lo = fmin(lo, x), hi = fmax(hi, x);
    }
    qk_numbers_set(w, min_key, lo);
    qk_numbers_set(w, max_key, hi);
}

static void cross_values(qk_numbers *w, const study *s, const columns *c)
{
    const rot_table *h = &s->heads;
    rot_rows all = rot_rows_all(h);
    int n = all.n, n_models = s->summary.n_models;
    heads_source(w, s, "model", EVERY_HEAD, "rows counted");
    qk_numbers_set(w, "rotation.heads", n);
    models_source(w, s, "model", EVERY_MODEL, "rows counted");
    qk_numbers_set(w, "rotation.models", n_models);
    heads_source(w, s, "family", EVERY_HEAD, "distinct families counted");
    qk_numbers_set(w, "rotation.families", h->n_families);
    heads_source(w, s, "rq_mean r_q_a, rk_mean r_k_a", EVERY_HEAD " with a value",
                 "mean of |r| over the heads");
    qk_numbers_set(w, "rotation.rq_mean", rot_mean(c->r_q, &all, 1));
    qk_numbers_set(w, "rotation.rk_mean", rot_mean(c->r_k, &all, 1));
    /* means and shares over the models and heads with a value (a head
     * without spread has none) */
    qk_sum sq = {0}, sk = {0};
    for (int m = 0; m < n_models; m++) {
        qk_sum_add(&sq, value_at(&s->summary, m, "mean_abs_r_q_a"));
        qk_sum_add(&sk, value_at(&s->summary, m, "mean_abs_r_k_a"));
    }
    models_source(w, s, "rq_model_mean mean_abs_r_q_a, rk_model_mean mean_abs_r_k_a", EVERY_MODEL,
                  "mean over the models");
    qk_numbers_set(w, "rotation.rq_model_mean", qk_sum_mean(&sq));
    qk_numbers_set(w, "rotation.rk_model_mean", qk_sum_mean(&sk));
    int k_closer = 0, both = 0, negative = 0;
    for (int i = 0; i < n; i++) {
        double rk = c->r_k[all.index[i]], rq = c->r_q[all.index[i]];
        if (isfinite(rk) && isfinite(rq))
            both++, k_closer += fabs(rk) > fabs(rq);
        negative += c->bias[all.index[i]] < 0.0;
    }
    heads_source(w, s, "r_q_a, r_k_a", EVERY_HEAD " with both values",
                 "share of the heads with |r_k_a| > |r_q_a| (%)");
    qk_numbers_set(w, "rotation.rk_gt_rq_pct", sum_pct(k_closer, both));
    models_source(w, s, "mean_abs_r_q_a, mean_abs_r_k_a; label from the registry", EVERY_MODEL,
                  "the models with mean_abs_r_q_a > mean_abs_r_k_a: their labels, and their count");
    q_ahead_models(w, s);
    int positive = rot_count_positive(c->bias, &all);
    int with_bias = rot_count_defined(c->bias, &all);
    heads_source(w, s, "bias_strength", EVERY_HEAD " with a value",
                 "share of heads with bias_strength > 0 (%)");
    qk_numbers_set(w, "rotation.bias.positive_pct", sum_pct(positive, with_bias));
    heads_source(w, s, "bias_strength", EVERY_HEAD, "heads with a value counted");
    qk_numbers_set(w, "rotation.bias.defined_count", with_bias);
    heads_source(w, s, "bias_strength", EVERY_HEAD, "heads with bias_strength > 0 counted");
    qk_numbers_set(w, "rotation.bias.positive_count", positive);
    heads_source(w, s, "bias_strength", EVERY_HEAD, "heads with bias_strength < 0 counted");
    qk_numbers_set(w, "rotation.bias.negative_count", negative);
    heads_source(w, s, "mu_q_a", EVERY_HEAD " with a value",
                 "share of heads with mu_q_a > 0 (%)");
    qk_numbers_set(w, "rotation.mu_q.positive_pct",
                   sum_pct(rot_count_positive(c->mu_q, &all), rot_count_defined(c->mu_q, &all)));
    heads_source(w, s, "bias_strength", EVERY_HEAD " with a value", "mean, times 10^3");
    qk_numbers_set(w, "rotation.bias.mean_x1e3", 1e3 * rot_mean(c->bias, &all, 0));
    models_source(w, s, "mean_bias_strength", EVERY_MODEL,
                  "lowest and highest over the models, times 10^3");
    model_range(w, s, column_value, "mean_bias_strength", 1e3, "rotation.bias.model_min_x1e3",
                "rotation.bias.model_max_x1e3");
    heads_source(w, s, "var_a_pct var_frac_a, var_b_pct var_frac_b, plane_pct plane_var_fraction",
                 EVERY_HEAD " with a value", "mean, times 100");
    qk_numbers_set(w, "rotation.var_a_pct", 100 * rot_mean(c->var_a, &all, 0));
    qk_numbers_set(w, "rotation.var_b_pct", 100 * rot_mean(c->var_b, &all, 0));
    qk_numbers_set(w, "rotation.plane_pct", 100 * rot_mean(c->plane, &all, 0));
    models_source(w, s, "mean_plane_var_fraction", EVERY_MODEL,
                  "lowest and highest over the models, times 100");
    model_range(w, s, column_value, "mean_plane_var_fraction", 100, "rotation.plane_model_min_pct",
                "rotation.plane_model_max_pct");
    int ab_defined = 0;
    for (int i = 0; i < n; i++)
        ab_defined += isfinite(c->var_a[all.index[i]]) && isfinite(c->var_b[all.index[i]]);
    heads_source(w, s, "var_frac_a, var_frac_b", EVERY_HEAD " with both values",
                 "share of the heads with var_frac_b > var_frac_a (%)");
    qk_numbers_set(w, "rotation.var_b_gt_a_pct",
                   sum_pct(rot_count_greater(c->var_b, c->var_a, &all), ab_defined));
    heads_source(w, s, "slope_ratio", EVERY_HEAD " with a value", "median");
    qk_numbers_set(w, "rotation.slope_ratio.median", rot_quantile(c->ratio, &all, 0.5, 0));
    models_source(w, s, "median_slope_ratio", EVERY_MODEL, "lowest and highest over the models");
    model_range(w, s, column_value, "median_slope_ratio", 1, "rotation.slope_ratio.model_min",
                "rotation.slope_ratio.model_max");
    heads_source(w, s, "n_active_planes", EVERY_HEAD " with a value", "mean");
    qk_numbers_set(w, "rotation.complement.active_mean", rot_mean(c->n_active, &all, 0));
    heads_source(w, s, "active_var_frac", EVERY_HEAD " with a value", "mean, times 100");
    qk_numbers_set(w, "rotation.complement.active_var_pct", 100 * rot_mean(c->active_var, &all, 0));
    heads_source(w, s, "max_abs_angle_r", EVERY_HEAD " with a value", "largest");
    qk_numbers_set(w, "rotation.complement.angle_r_max", rot_max(c->max_angle, &all, 0));
    heads_source(w, s, "ring_cls_acc", EVERY_HEAD " with a value", "mean");
    qk_numbers_set(w, "rotation.complement.ring_acc_mean", rot_mean(c->ring_acc, &all, 0));
    heads_source(w, s, "ring_cls_acc", EVERY_HEAD, "heads with a value counted");
    qk_numbers_set(w, "rotation.complement.ring_acc_heads", rot_count_defined(c->ring_acc, &all));
    models_source(w, s, "mean_bias_strength; context_length from the registry", EVERY_MODEL,
                  "mean_bias_strength times context_length: lowest and highest over the models");
    model_range(w, s, times_context, "mean_bias_strength", 1, "rotation.bias_window.model_min",
                "rotation.bias_window.model_max");
    rot_rows_free(&all);
}

/* ---- the training study ---------------------------------------------------------------------- */

/* The numbers of one checkpoint the section quotes. */
typedef struct checkpoint {
    const rot_model *model;
    char phase[48];
    double rk, sep, plane, mu, alpha, bias, length;
} checkpoint;

static checkpoint *load_checkpoints(const study *s)
{
    const rot_table *t = &s->summary;
    checkpoint *c = qk_calloc((size_t)t->n_models, sizeof *c);
    for (int m = 0; m < t->n_models; m++) {
        char phase[64];
        qk_phase_of(t->models[m].id, phase, sizeof phase);
        c[m].model = &t->models[m];
        qk_phase_label(phase, c[m].phase, sizeof c[m].phase);
        c[m].rk = value_at(t, m, "mean_abs_r_k_a");
        c[m].sep = value_at(t, m, "mean_separation_strength");
        c[m].plane = value_at(t, m, "mean_plane_var_fraction");
        c[m].mu = value_at(t, m, "mean_mu_q_a");
        c[m].alpha = value_at(t, m, "mean_abs_alpha_k");
        c[m].bias = value_at(t, m, "mean_bias_strength");
        c[m].length = t->models[m].context_length;
    }
    return c;
}

static int checkpoint_table(qk_numbers *w)
{
    int t = qk_numbers_table(w, "rotation.training", "rotation",
                             "SmolLM3-3B by training checkpoint: means over the heads, slopes and "
                             "bias per token and times the context length");
    static const char *const headers[] = {
        "Checkpoint", "Phase", "context <i>L</i>", "mean |<i>r</i><sub>k</sub>|", "mean separation",
        "plane share", "mean &mu;<sub>Q</sub><sup>a</sup>", "mean |&alpha;<sub>K</sub>| &times;10<sup>3</sup>",
        "mean bias &times;10<sup>3</sup>", "mean |&alpha;<sub>K</sub>| &times; <i>L</i>",
        "mean bias &times; <i>L</i>"};
    for (int c = 0; checkpoint_fields[c].name; c++)
        qk_numbers_column(w, t, checkpoint_fields[c].name, headers[c]);
    return t;
}

/* The columns of model_summary.csv behind a checkpoint's fields. */
#define CHECKPOINT_COLUMNS                                                                   \
    "rk_mean mean_abs_r_k_a, sep mean_separation_strength, plane mean_plane_var_fraction, "   \
    "mu_q mean_mu_q_a, alpha_k mean_abs_alpha_k, bias mean_bias_strength; label and context "  \
    "(context_length) from the registry, phase from the checkpoint id"
#define CHECKPOINT_AGGREGATION                                                               \
    "as written; *_x1e3 times 10^3, *_pct times 100, *_window times context_length"

static void write_checkpoints(qk_numbers *w, int table, const checkpoint *c, int n,
                              const study *s, const qk_src *registry)
{
    models_source(w, s, CHECKPOINT_COLUMNS, "the checkpoint's row", CHECKPOINT_AGGREGATION);
    for (int m = 0; m < n; m++) {
        const char *id = model_id(c[m].model, registry);
        int rec = qk_numbers_record(w, "rotation", id, checkpoint_fields, c[m].model->label);
        qk_numbers_field_text(w, rec, "label", "%s", c[m].model->label);
        qk_numbers_field_text(w, rec, "phase", "%s", c[m].phase);
        qk_numbers_field(w, rec, "context", c[m].length);
        qk_numbers_field(w, rec, "rk_mean", c[m].rk);
        qk_numbers_field(w, rec, "sep", c[m].sep);
        qk_numbers_field(w, rec, "plane", c[m].plane);
        qk_numbers_field(w, rec, "mu_q", c[m].mu);
        qk_numbers_field(w, rec, "alpha_k_x1e3", 1e3 * c[m].alpha);
        qk_numbers_field(w, rec, "bias_x1e3", 1e3 * c[m].bias);
        qk_numbers_field(w, rec, "alpha_k_window", c[m].alpha * c[m].length);
        qk_numbers_field(w, rec, "bias_window", c[m].bias * c[m].length);
        qk_numbers_row(w, table, id);
    }
}

static void moment_values(qk_numbers *w, int rec, const checkpoint *c)
{
    qk_numbers_field_text(w, rec, "label", "%s", c->model->label);
    qk_numbers_field(w, rec, "context", c->length);
    qk_numbers_field(w, rec, "rk_mean", c->rk);
    qk_numbers_field(w, rec, "sep", c->sep);
    qk_numbers_field(w, rec, "plane_pct", 100 * c->plane);
    qk_numbers_field(w, rec, "mu_q", c->mu);
    qk_numbers_field(w, rec, "alpha_k_x1e3", 1e3 * c->alpha);
    qk_numbers_field(w, rec, "bias_x1e3", 1e3 * c->bias);
    qk_numbers_field(w, rec, "alpha_k_window", c->alpha * c->length);
    qk_numbers_field(w, rec, "bias_window", c->bias * c->length);
}

static void training_values(qk_numbers *w, const int rec[4], const checkpoint *c, int n,
                            const study *s)
{
    int peak = 0;
    for (int m = 1; m < n; m++)
        if (c[m].bias > c[peak].bias)
            peak = m;
    int onset = peak + 1 < n ? peak + 1 : peak;
    const int at[4] = {0, peak, onset, n - 1};
    static const char *const moment_rows[4] = {
        "the first checkpoint's row", "the row of the checkpoint with the highest "
        "mean_bias_strength (the peak)", "the row of the checkpoint after the peak",
        "the last checkpoint's row"};
    for (int i = 0; i < 4; i++) {
        models_source(w, s, CHECKPOINT_COLUMNS, moment_rows[i], CHECKPOINT_AGGREGATION);
        moment_values(w, rec[i], &c[at[i]]);
    }
    const checkpoint *first = &c[0], *top = &c[peak], *last = &c[n - 1];
    models_source(w, s, "model", "every checkpoint of the training study (one row each)",
                  "rows counted");
    qk_numbers_set(w, "rotation.t.checkpoints", n);
    /* which of the quoted checkpoints are one (the text names each once) */
    models_source(w, s, "mean_bias_strength", "every checkpoint of the training study, in "
                  "training order", "1 when the highest mean_bias_strength is at the first "
                  "(peak_first), the last (peak_last) or the last but one checkpoint (onset_last)");
    qk_numbers_set(w, "rotation.t.peak_first", peak == 0);
    qk_numbers_set(w, "rotation.t.peak_last", peak == n - 1);
    qk_numbers_set(w, "rotation.t.onset_last", peak == n - 2);
    heads_source(w, s, "model", "every head of the training study",
                 "heads counted, over the number of checkpoints");
    qk_numbers_set(w, "rotation.t.heads", s->heads.src.t->n_rows / (double)n);
    models_source(w, s, "bias mean_bias_strength, alpha mean_abs_alpha_k, mu mean_mu_q_a; "
                  "context_length from the registry (window, context_growth)",
                  "the rows of the first checkpoint, the peak (highest mean_bias_strength), "
                  "the checkpoint after it and the last",
                  "*_fall: peak over the last (bias_fall_onset: over the one after the peak); "
                  "*_change_pct: change in % from the peak to the last (*_first_pct, "
                  "bias_rise_pct: from the first to the peak); *_window: times context_length; "
                  "context_growth: last context_length over the first");
    /* the per-token collapse after the peak and its two factors */
    qk_numbers_set(w, "rotation.t.bias_fall", top->bias / last->bias);
    qk_numbers_set(w, "rotation.t.bias_fall_onset", top->bias / c[onset].bias);
    qk_numbers_set(w, "rotation.t.bias_change_pct", change_pct(last->bias, top->bias));
    qk_numbers_set(w, "rotation.t.bias_rise_pct", change_pct(top->bias, first->bias));
    qk_numbers_set(w, "rotation.t.alpha_fall", top->alpha / last->alpha);
    qk_numbers_set(w, "rotation.t.alpha_change_pct", change_pct(last->alpha, top->alpha));
    qk_numbers_set(w, "rotation.t.mu_change_pct", change_pct(last->mu, top->mu));
    qk_numbers_set(w, "rotation.t.mu_change_first_pct", change_pct(top->mu, first->mu));
    qk_numbers_set(w, "rotation.t.bias_window_change_pct",
                   change_pct(last->bias * last->length, top->bias * top->length));
    qk_numbers_set(w, "rotation.t.alpha_window_change_pct",
                   change_pct(last->alpha * last->length, top->alpha * top->length));
    qk_numbers_set(w, "rotation.t.context_growth", last->length / first->length);
    /* how far the product of the means is from the mean of the products */
    models_source(w, s, "mean_mu_q_a, mean_abs_alpha_k, mean_bias_strength",
                  "every checkpoint of the training study",
                  "largest |mean_mu_q_a x mean_abs_alpha_k / mean_bias_strength - 1|, times 100");
    double worst = 0;
    for (int m = 0; m < n; m++)
        worst = fmax(worst, fabs(c[m].mu * c[m].alpha / c[m].bias - 1.0));
    qk_numbers_set(w, "rotation.t.product_dev_pct", 100 * worst);
}

/* ---- the drift lemma over both studies ------------------------------------------------------ */

static void lemma_values(qk_numbers *w, const study *const *studies, int n)
{
    const qk_src *tables[2] = {NULL, NULL};
    for (int i = 0; i < n && i < 2; i++)
        tables[i] = studies[i] ? &studies[i]->heads.src : NULL;
    sum_source_tables(w, tables, 2, "residual_pos_r",
                      "every head of the cross-model and the training study with a value",
                      "residual_max: largest |residual_pos_r|; residual_heads: heads with a "
                      "value counted");
    double worst = NAN;
    int heads = 0;
    for (int i = 0; i < n; i++) {
        if (!studies[i])
            continue;
        double *r = qk_src_values(&studies[i]->heads.src, "residual_pos_r");
        rot_rows all = rot_rows_all(&studies[i]->heads);
        double m = rot_max(r, &all, 1);
        if (!isnan(m) && (isnan(worst) || m > worst))
            worst = m;
        heads += rot_count_defined(r, &all);
        rot_rows_free(&all);
        free(r);
    }
    qk_numbers_set(w, "rotation.residual_max", worst);
    qk_numbers_set(w, "rotation.residual_heads", heads);
}

void sum_rotation(sum_ctx *ctx)
{
    const qk_src *registry = sum_input(ctx, "registry");
    const qk_src *summary = sum_input(ctx, "summary"), *heads = sum_input(ctx, "heads");
    const qk_src *t_summary = sum_input(ctx, "training-summary");
    const qk_src *t_heads = sum_input(ctx, "training-heads");
    if (!summary != !heads)
        qk_die(QK_EXIT_USAGE, NULL, "inputs summary and heads go together");
    if (!t_summary != !t_heads)
        qk_die(QK_EXIT_USAGE, NULL, "inputs training-summary and training-heads go together");
    qk_numbers *w = ctx->out;
    qk_numbers_declare(w, rotation_keys);
    sum_source_params(w, "rotation-complement", "ROT_ACTIVE_TAU");
    qk_numbers_set(w, "rotation.complement.active_tau",
                   sum_param_num(ctx, "ROT_ACTIVE_TAU", 0, 1));
    int models = model_table(w), families = family_table(w), training = checkpoint_table(w);
    int rec[4];
    for (int i = 0; i < 4; i++)
        rec[i] = qk_numbers_record(w, "rotation.t", moments[i], moment_fields, moments[i]);

    study cross, smol;
    const study *studies[2] = {NULL, NULL};
    if (summary) {
        load_study(&cross, summary, heads, registry);
        columns c;
        columns_load(&c, &cross.heads);
        cross_values(w, &cross, &c);
        write_families(w, families, &cross, &c);
        write_models(w, models, &cross, registry);
        columns_free(&c);
        studies[0] = &cross;
    }
    if (t_summary) {
        load_study(&smol, t_summary, t_heads, registry);
        checkpoint *c = load_checkpoints(&smol);
        training_values(w, rec, c, smol.summary.n_models, &smol);
        write_checkpoints(w, training, c, smol.summary.n_models, &smol, registry);
        free(c);
        studies[1] = &smol;
    }
    lemma_values(w, studies, 2);
    if (summary)
        free_study(&cross);
    if (t_summary)
        free_study(&smol);
}
