/* Section "pca": the numbers of the report's combined QK PCA section, from
 * the study tables (qk.csv, qk_heads.csv). It aggregates with the code of
 * the PCA figures (src/lib/report/pca_tables.c), so text and figures agree. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/die.h"
#include "qk/pca_tables.h"
#include "qk/stats.h"
#include "summary.h"

#define PCT "percent.1"

static const qk_key pca_keys[] = {
    {"pca.tax.high", "sig.3", "high taxonomy threshold on the PC0 correlations"},
    {"pca.tax.low", "sig.3", "low taxonomy threshold on the PC0 correlations"},
    {"pca.models", "count", "models of the cross-model study"},
    {"pca.heads", "count", "query heads of the cross-model study"},
    {"pca.families", "count", "model families of the cross-model study"},
    {"pca.ev_top10_pct", PCT, "mean explained variance of the ten components kept together (%)"},
    {"pca.ev_ratio01", "ratio.1", "mean explained variance of PC0 over that of PC1 (times)"},
    {"pca.pos_var_q_pct", PCT, "mean positional variance seen through the queries (%)"},
    {"pca.pos_var_k_pct", PCT, "mean positional variance seen through the keys (%)"},
    {"pca.pos_var_q_model_min_pct", PCT, "lowest model mean of pos_var_q (%)"},
    {"pca.pos_var_q_model_max_pct", PCT, "highest model mean of pos_var_q (%)"},
    {"pca.pos_var_k_model_min_pct", PCT, "lowest model mean of pos_var_k (%)"},
    {"pca.pos_var_k_model_max_pct", PCT, "highest model mean of pos_var_k (%)"},
    {"pca.pc0.share_q_pct", PCT, "mean share of a head's query positional variance on PC0 (%)"},
    {"pca.pc0.share_k_pct", PCT, "mean share of a head's key positional variance on PC0 (%)"},
    {"pca.pc0.mu_q_abs", "number.1", "mean |mu_Q| on PC0: query centroid to pooled mean (units)"},
    {"pca.pc0.sep", "number.1", "mean distance of the query and key centroids on PC0 (units)"},
    {"pca.pc0.fisher_median", "number.1", "median Fisher ratio of queries and keys on PC0"},
    {"pca.pc0.fisher_mean", "number.1", "mean Fisher ratio of queries and keys on PC0"},
    {"pca.pc0.rq_model_min", "number.3", "lowest model mean of r_q on PC0"},
    {"pca.pc0.rq_model_max", "number.3", "highest model mean of r_q on PC0"},
    {"pca.pc0.rk_model_min", "number.3", "lowest model mean of r_k on PC0"},
    {"pca.pc0.rk_model_max", "number.3", "highest model mean of r_k on PC0"},
    {"pca.acc01_pct", PCT, "mean accuracy of the query/key discriminant on PC0 and PC1 (%)"},
    {"pca.acc0_pct", PCT, "mean accuracy of a threshold on PC0 telling queries from keys (%)"},
    {"pca.acc01_model_min_pct", PCT, "lowest model mean of the PC0+PC1 accuracy (%)"},
    {"pca.acc01_model_max_pct", PCT, "highest model mean of the PC0+PC1 accuracy (%)"},
    {"pca.tax.posdom_pct", PCT, "position-dominated heads (% of all heads)"},
    {"pca.tax.posdom_count", "count", "position-dominated heads"},
    {"pca.tax.qpos_pct", PCT, "Q-positional heads (% of all heads)"},
    {"pca.tax.qpos_count", "count", "Q-positional heads"},
    {"pca.tax.kpos_pct", PCT, "K-positional heads (% of all heads)"},
    {"pca.tax.kpos_count", "count", "K-positional heads"},
    {"pca.tax.content_pct", PCT, "content-focused heads (% of all heads)"},
    {"pca.tax.content_count", "count", "content-focused heads"},
    {"pca.tax.mixed_pct", PCT, "mixed heads (% of all heads)"},
    {"pca.tax.mixed_count", "count", "mixed heads"},
    {"pca.t.checkpoints", "count", "SmolLM3-3B training checkpoints"},
    {"pca.t.in_run", "flag", "the run has SmolLM3-3B checkpoints (their PCA table is an input), whether or not a head was fitted"},
    {"pca.t.heads_min", "count", "query heads per checkpoint (fewest)"},
    {"pca.t.heads_max", "count", "query heads per checkpoint (most)"},
    {"pca.t.rk_peak", "number.3", "highest checkpoint mean of r_k on PC0"},
    {"pca.t.rk_peak_at", "text", "the checkpoint with the highest mean r_k on PC0"},
    {NULL, NULL, NULL}};

static const char *const cat_key[PCA_N_CAT] = {"posdom", "qpos", "kpos", "content", "mixed"};

/* A component's record (pca.pc0 ... pca.pc9). */
static const qk_key component_fields[] = {
    {"label", "text", "the principal component"},
    {"rq_mean", "number.3", "mean over heads of r_q, the Pearson r of the query projections with position"},
    {"rk_mean", "number.3", "mean over heads of r_k, the Pearson r of the key projections with position"},
    {"ev_mean_pct", PCT, "mean explained variance (% of the pooled variance)"},
    {NULL, NULL, NULL}};

/* The taxonomy shares, fields of every group record. */
#define SHARE_FIELDS                                                                         \
    {"posdom_pct", PCT, "position-dominated heads (%)"},                                    \
    {"qpos_pct", PCT, "Q-positional heads (%)"},                                            \
    {"kpos_pct", PCT, "K-positional heads (%)"},                                            \
    {"content_pct", PCT, "content-focused heads (%)"},                                      \
    {"mixed_pct", PCT, "mixed heads (%)"}

static const qk_key family_fields[] = {
    {"label", "text", "family"},
    {"models", "count", "models of the family"},
    {"heads", "count", "query heads of the family"},
    {"rq_pc0", "number.3", "mean r_q on PC0"},
    {"rk_pc0", "number.3", "mean r_k on PC0"},
    {"pos_var_q_pct", PCT, "mean positional variance through the queries (%)"},
    {"pos_var_k_pct", PCT, "mean positional variance through the keys (%)"},
    SHARE_FIELDS,
    {NULL, NULL, NULL}};

static const qk_key model_fields[] = {
    {"label", "text", "model"},
    {"family", "text", "family"},
    {"heads", "count", "query heads"},
    {"rq_pc0", "number.3", "mean r_q on PC0"},
    {"rk_pc0", "number.3", "mean r_k on PC0"},
    {"ev_pc0_pct", PCT, "mean explained variance of PC0 (%)"},
    {"pos_var_q_pct", PCT, "mean positional variance through the queries (%)"},
    {"pos_var_k_pct", PCT, "mean positional variance through the keys (%)"},
    {"mu_q_abs", "number.1", "mean |mu_Q| on PC0 (units)"},
    {"sep", "number.1", "mean centroid separation on PC0 (units)"},
    {"fisher_median", "number.1", "median Fisher ratio on PC0"},
    {"acc01_pct", PCT, "mean accuracy of the query/key discriminant on PC0 and PC1 (%)"},
    SHARE_FIELDS,
    {NULL, NULL, NULL}};

static const qk_key checkpoint_fields[] = {
    {"checkpoint", "text", "checkpoint id"},
    {"label", "text", "checkpoint"},
    {"heads", "count", "query heads"},
    {"rq_mean", "number.3", "mean r_q on PC0"},
    {"rq_sd", "number.3", "standard deviation of r_q on PC0 across heads"},
    {"rk_mean", "number.3", "mean r_k on PC0"},
    {"rk_sd", "number.3", "standard deviation of r_k on PC0 across heads"},
    {"ev_pc0_pct", PCT, "mean explained variance of PC0 (%)"},
    {"ev_pc0_sd_pct", PCT, "standard deviation of the PC0 explained variance (%)"},
    SHARE_FIELDS,
    {NULL, NULL, NULL}};

/* The first and the last checkpoint (pca.t.first, pca.t.last). */
static const qk_key end_fields[] = {
    {"label", "text", "checkpoint"},
    {"rq_mean", "number.3", "mean r_q on PC0"},
    {"rk_mean", "number.3", "mean r_k on PC0"},
    {"rk_sd", "number.3", "standard deviation of r_k on PC0 across heads"},
    {"ev_pct", PCT, "mean explained variance of PC0 (%)"},
    {"posdom_pct", PCT, "position-dominated heads (%)"},
    {"qpos_pct", PCT, "Q-positional heads (%)"},
    {"content_pct", PCT, "content-focused heads (%)"},
    {"mixed_pct", PCT, "mixed heads (%)"},
    {"discordant", "count", "heads whose keys drift against their queries (r_k below minus the low threshold)"},
    {NULL, NULL, NULL}};

/* ---- heads and groups ----------------------------------------------------------------- */

/* Returns 0, with nothing loaded, when the table lists no head (every head
 * of the study's datasets too small to fit): the study is then reported as
 * one the run lacks. */
static int load_study(pca_study *s, const qk_src *heads, const qk_src *registry)
{
    pca_study_load(s, heads, registry);
    if (s->n_heads == 0) {
        pca_study_free(s);
        return 0;
    }
    pca_study_need_category(s);
    return 1;
}

/* A set of heads: a model, a family, or all. */
typedef int (*head_filter)(const pca_study *s, int h, const void *arg);

static int in_model(const pca_study *s, int h, const void *arg)
{
    return s->heads[h].model == *(const int *)arg;
}

static int in_family(const pca_study *s, int h, const void *arg)
{
    return strcmp(s->models[s->heads[h].model].family, (const char *)arg) == 0;
}

static int any_head(const pca_study *s, int h, const void *arg)
{
    (void)s, (void)h, (void)arg;
    return 1;
}

/* The named column of the heads table at the selected heads (|x| if
 * absolute), into a new array; count in *n. */
static double *select_column(const pca_study *s, const char *column, head_filter f,
                             const void *arg, int absolute, int *n)
{
    int c = qk_src_col(&s->src, column);
    double *x = qk_malloc((size_t)(s->n_heads + 1) * sizeof *x);
    *n = 0;
    for (int h = 0; h < s->n_heads; h++)
        if (f(s, h, arg)) {
            double v = qk_src_num(&s->src, s->heads[h].row, c);
            x[(*n)++] = absolute ? fabs(v) : v;
        }
    return x;
}

static double mean_of(const pca_study *s, const char *column, head_filter f, const void *arg,
                      int absolute)
{
    int n;
    double *x = select_column(s, column, f, arg, absolute, &n);
    double m = qk_mean(x, n);
    free(x);
    return m;
}

static double median_of(const pca_study *s, const char *column, head_filter f, const void *arg)
{
    int n;
    double *x = select_column(s, column, f, arg, 0, &n);
    double m = qk_median(x, n);
    free(x);
    return m;
}

static int count_categories(const pca_study *s, head_filter f, const void *arg, int cat[PCA_N_CAT])
{
    int n = 0;
    memset(cat, 0, PCA_N_CAT * sizeof cat[0]);
    for (int h = 0; h < s->n_heads; h++)
        if (f(s, h, arg)) {
            cat[s->heads[h].category]++;
            n++;
        }
    return n;
}

static void put_shares(qk_numbers *w, int rec, const int cat[PCA_N_CAT], int n)
{
    for (int k = 0; k < PCA_N_CAT; k++) {
        char field[32];
        snprintf(field, sizeof field, "%s_pct", cat_key[k]);
        qk_numbers_field(w, rec, field, sum_pct(cat[k], n));
    }
}

/* ---- the cross-model study ---------------------------------------------------------------- */

static void write_components(qk_numbers *w, const qk_src *qk)
{
    double rq[PCA_N_PC], rk[PCA_N_PC], ev[PCA_N_PC];
    int n[PCA_N_PC];
    int table = qk_numbers_table(w, "pca.components", "pca", "Means over all heads by principal component");
    qk_numbers_column(w, table, "label", "Component");
    qk_numbers_column(w, table, "rq_mean", "mean <i>r</i><sub>q</sub>");
    qk_numbers_column(w, table, "rk_mean", "mean <i>r</i><sub>k</sub>");
    qk_numbers_column(w, table, "ev_mean_pct", "mean explained variance (%)");
    sum_source(w, qk, "r_q, r_k, ev", "every head, one component (pc) a record",
               "mean over heads; ev_top10 their sum, ev_ratio01 PC0 over PC1");
    if (qk)
        pca_component_means(qk, rq, rk, ev, n);
    double top = 0;
    for (int i = 0; i < PCA_N_PC; i++) {
        char id[8], label[8];
        snprintf(id, sizeof id, "pc%d", i);
        snprintf(label, sizeof label, "PC%d", i);
        int rec = qk_numbers_record(w, "pca", id, component_fields, label);
        if (!qk || !n[i])
            continue; /* a head dimension below ten has fewer components */
        qk_numbers_field_text(w, rec, "label", "%s", label);
        qk_numbers_field(w, rec, "rq_mean", rq[i]);
        qk_numbers_field(w, rec, "rk_mean", rk[i]);
        qk_numbers_field(w, rec, "ev_mean_pct", 100 * ev[i]);
        qk_numbers_row(w, table, id);
        top += ev[i];
    }
    if (!qk)
        return;
    qk_numbers_set(w, "pca.ev_top10_pct", 100 * top);
    qk_numbers_set(w, "pca.ev_ratio01", ev[1] > 0 ? ev[0] / ev[1] : NAN);
}

static int family_table(qk_numbers *w)
{
    int table = qk_numbers_table(w, "pca.families", "pca.family",
                                 "PC0 means and taxonomy shares by family");
    static const char *const headers[] = {
        "Family", "Models", "Heads", "mean <i>r</i><sub>q</sub> (PC0)", "mean <i>r</i><sub>k</sub> (PC0)",
        "pos_var<sub>q</sub> (%)", "pos_var<sub>k</sub> (%)", "position-dominated (%)",
        "Q-positional (%)", "K-positional (%)", "content-focused (%)", "mixed (%)"};
    for (int c = 0; family_fields[c].name; c++)
        qk_numbers_column(w, table, family_fields[c].name, headers[c]);
    return table;
}

static void write_families(qk_numbers *w, int table, const pca_study *s)
{
    sum_source(w, &s->src, "the field's column (r_q0, r_k0, pos_var_q, pos_var_k, category)",
               "the heads of the family's models", "mean over heads, or share of heads (%)");
    for (int m = 0; m < s->n_models; m++) {
        const char *family = s->models[m].family;
        int seen = 0;
        for (int j = 0; j < m; j++)
            seen |= strcmp(s->models[j].family, family) == 0;
        if (seen)
            continue; /* one row per family, at its first model */
        char name[64];
        pca_family_name(s, family, name, sizeof name);
        int models = 0;
        for (int i = 0; i < s->n_models; i++)
            models += strcmp(s->models[i].family, family) == 0;
        int cat[PCA_N_CAT];
        int n = count_categories(s, in_family, family, cat);
        int rec = qk_numbers_record(w, "pca.family", family, family_fields, name);
        qk_numbers_field_text(w, rec, "label", "%s", name);
        qk_numbers_field(w, rec, "models", models);
        qk_numbers_field(w, rec, "heads", n);
        qk_numbers_field(w, rec, "rq_pc0", mean_of(s, "r_q0", in_family, family, 0));
        qk_numbers_field(w, rec, "rk_pc0", mean_of(s, "r_k0", in_family, family, 0));
        qk_numbers_field(w, rec, "pos_var_q_pct", 100 * mean_of(s, "pos_var_q", in_family, family, 0));
        qk_numbers_field(w, rec, "pos_var_k_pct", 100 * mean_of(s, "pos_var_k", in_family, family, 0));
        put_shares(w, rec, cat, n);
        qk_numbers_row(w, table, family);
    }
}

static int model_table(qk_numbers *w)
{
    int table = qk_numbers_table(w, "pca.models", "pca", "PC0 numbers and taxonomy shares by model");
    /* NULL: a field the table leaves out (the family: the rows are in
     * family order and the label names it), so that it fits the page */
    static const char *const headers[] = {
        "Model", NULL, "Heads", "mean <i>r</i><sub>q</sub> (PC0)", "mean <i>r</i><sub>k</sub> (PC0)",
        "PC0 explained variance (%)", "pos_var<sub>q</sub> (%)", "pos_var<sub>k</sub> (%)",
        "mean |&mu;<sub>Q</sub>|", "mean separation", "median Fisher ratio",
        "LDA accuracy on PC0, PC1 (%)", "position-dominated (%)", "Q-positional (%)",
        "K-positional (%)", "content-focused (%)", "mixed (%)"};
    for (int c = 0; model_fields[c].name; c++)
        if (headers[c])
            qk_numbers_column(w, table, model_fields[c].name, headers[c]);
    return table;
}

static void write_models(qk_numbers *w, int table, const pca_study *s, const qk_src *registry)
{
    sum_source(w, &s->src, "the field's column (r_q0, r_k0, ev0, pos_var_q, pos_var_k, mu_q0, "
               "sep0, fisher0, acc01, category)", "the model's heads",
               "mean over heads (fisher: median), or share of heads (%)");
    for (int m = 0; m < s->n_models; m++) {
        const pca_model *md = &s->models[m];
        const char *id = sum_dataset_id(registry, md->registry_row, md->id);
        char family[64];
        pca_family_name(s, md->family, family, sizeof family);
        int cat[PCA_N_CAT];
        pca_model_categories(s, m, cat);
        int n = md->n_heads;
        int rec = qk_numbers_record(w, "pca", id, model_fields, md->label);
        qk_numbers_field_text(w, rec, "label", "%s", md->label);
        qk_numbers_field_text(w, rec, "family", "%s", family);
        qk_numbers_field(w, rec, "heads", n);
        qk_numbers_field(w, rec, "rq_pc0", mean_of(s, "r_q0", in_model, &m, 0));
        qk_numbers_field(w, rec, "rk_pc0", mean_of(s, "r_k0", in_model, &m, 0));
        qk_numbers_field(w, rec, "ev_pc0_pct", 100 * mean_of(s, "ev0", in_model, &m, 0));
        qk_numbers_field(w, rec, "pos_var_q_pct", 100 * mean_of(s, "pos_var_q", in_model, &m, 0));
        qk_numbers_field(w, rec, "pos_var_k_pct", 100 * mean_of(s, "pos_var_k", in_model, &m, 0));
        qk_numbers_field(w, rec, "mu_q_abs", mean_of(s, "mu_q0", in_model, &m, 1));
        qk_numbers_field(w, rec, "sep", mean_of(s, "sep0", in_model, &m, 0));
        qk_numbers_field(w, rec, "fisher_median", median_of(s, "fisher0", in_model, &m));
        qk_numbers_field(w, rec, "acc01_pct", 100 * mean_of(s, "acc01", in_model, &m, 0));
        put_shares(w, rec, cat, n);
        qk_numbers_row(w, table, id);
    }
}

/* The lowest and the highest model mean of a column (times scale). */
static void model_range(qk_numbers *w, const pca_study *s, const char *column, double scale,
                        const char *min_key, const char *max_key)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int m = 0; m < s->n_models; m++) {
        double mean = mean_of(s, column, in_model, &m, 0);
        lo = fmin(lo, mean);
        hi = fmax(hi, mean);
    }
    qk_numbers_set(w, min_key, scale * lo);
    qk_numbers_set(w, max_key, scale * hi);
}

static void write_cross_values(qk_numbers *w, const pca_study *s)
{
    sum_source(w, &s->src, "the column of the key (r_q0, r_k0, pos_var_q, pos_var_k, "
               "pc0_share_q, pc0_share_k, mu_q0, sep0, fisher0, acc01, acc0)",
               "all heads of the cross-model study",
               "mean over heads (|mu_q0|: of magnitudes; fisher: median too; *_model_min/max: "
               "lowest and highest model mean); models, heads and families counted");
    qk_numbers_set(w, "pca.models", s->n_models);
    qk_numbers_set(w, "pca.heads", s->n_heads);
    qk_numbers_set(w, "pca.families", pca_n_families(s));
    qk_numbers_set(w, "pca.pos_var_q_pct", 100 * mean_of(s, "pos_var_q", any_head, NULL, 0));
    qk_numbers_set(w, "pca.pos_var_k_pct", 100 * mean_of(s, "pos_var_k", any_head, NULL, 0));
    qk_numbers_set(w, "pca.pc0.share_q_pct", 100 * mean_of(s, "pc0_share_q", any_head, NULL, 0));
    qk_numbers_set(w, "pca.pc0.share_k_pct", 100 * mean_of(s, "pc0_share_k", any_head, NULL, 0));
    qk_numbers_set(w, "pca.pc0.mu_q_abs", mean_of(s, "mu_q0", any_head, NULL, 1));
    qk_numbers_set(w, "pca.pc0.sep", mean_of(s, "sep0", any_head, NULL, 0));
    qk_numbers_set(w, "pca.pc0.fisher_median", median_of(s, "fisher0", any_head, NULL));
    qk_numbers_set(w, "pca.pc0.fisher_mean", mean_of(s, "fisher0", any_head, NULL, 0));
    qk_numbers_set(w, "pca.acc01_pct", 100 * mean_of(s, "acc01", any_head, NULL, 0));
    qk_numbers_set(w, "pca.acc0_pct", 100 * mean_of(s, "acc0", any_head, NULL, 0));
    model_range(w, s, "acc01", 100, "pca.acc01_model_min_pct", "pca.acc01_model_max_pct");
    model_range(w, s, "r_q0", 1, "pca.pc0.rq_model_min", "pca.pc0.rq_model_max");
    model_range(w, s, "r_k0", 1, "pca.pc0.rk_model_min", "pca.pc0.rk_model_max");
    model_range(w, s, "pos_var_q", 100, "pca.pos_var_q_model_min_pct", "pca.pos_var_q_model_max_pct");
    model_range(w, s, "pos_var_k", 100, "pca.pos_var_k_model_min_pct", "pca.pos_var_k_model_max_pct");
    int cat[PCA_N_CAT];
    int n = count_categories(s, any_head, NULL, cat);
    sum_source(w, &s->src, "category (qk-taxonomy's class from r_q0 and r_k0)",
               "all heads of the cross-model study",
               "share of the heads in the category (%), or their count");
    for (int k = 0; k < PCA_N_CAT; k++) {
        char key[48];
        snprintf(key, sizeof key, "pca.tax.%s_pct", cat_key[k]);
        qk_numbers_set(w, key, sum_pct(cat[k], n));
        snprintf(key, sizeof key, "pca.tax.%s_count", cat_key[k]);
        qk_numbers_set(w, key, cat[k]);
    }
}

/* ---- the training study ----------------------------------------------------------------------- */

/* Heads of a checkpoint with r_k below -low (keys drifting against the queries). */
static int discordant(const pca_study *s, int m, double low)
{
    const pca_model *md = &s->models[m];
    int n = 0;
    for (int h = md->first_head; h < md->first_head + md->n_heads; h++)
        n += s->heads[h].r_k0 < -low;
    return n;
}

static void write_checkpoints(qk_numbers *w, int table, const pca_study *s, const qk_src *registry)
{
    sum_source(w, &s->src, "the field's column (r_q0, r_k0, ev0, category)",
               "the checkpoint's heads", "mean and SD over heads, or share of heads (%)");
    for (int m = 0; m < s->n_models; m++) {
        const pca_model *md = &s->models[m];
        const char *id = sum_dataset_id(registry, md->registry_row, md->id);
        double mq, sq, mk, sk, me, se;
        pca_model_mean_sd(s, m, PCA_R_Q0, &mq, &sq);
        pca_model_mean_sd(s, m, PCA_R_K0, &mk, &sk);
        pca_model_mean_sd(s, m, PCA_EV0, &me, &se);
        int cat[PCA_N_CAT];
        pca_model_categories(s, m, cat);
        int rec = qk_numbers_record(w, "pca", id, checkpoint_fields, md->label);
        qk_numbers_field_text(w, rec, "checkpoint", "%s", md->id);
        qk_numbers_field_text(w, rec, "label", "%s", md->label);
        qk_numbers_field(w, rec, "heads", md->n_heads);
        qk_numbers_field(w, rec, "rq_mean", mq);
        qk_numbers_field(w, rec, "rq_sd", sq);
        qk_numbers_field(w, rec, "rk_mean", mk);
        qk_numbers_field(w, rec, "rk_sd", sk);
        qk_numbers_field(w, rec, "ev_pc0_pct", 100 * me);
        qk_numbers_field(w, rec, "ev_pc0_sd_pct", 100 * se);
        put_shares(w, rec, cat, md->n_heads);
        qk_numbers_row(w, table, id);
    }
}

static void write_end(qk_numbers *w, int rec, const pca_study *s, int m, double low)
{
    double mq, sq, mk, sk, me, se;
    pca_model_mean_sd(s, m, PCA_R_Q0, &mq, &sq);
    pca_model_mean_sd(s, m, PCA_R_K0, &mk, &sk);
    pca_model_mean_sd(s, m, PCA_EV0, &me, &se);
    int cat[PCA_N_CAT];
    pca_model_categories(s, m, cat);
    int n = s->models[m].n_heads;
    qk_numbers_field_text(w, rec, "label", "%s", s->models[m].label);
    qk_numbers_field(w, rec, "rq_mean", mq);
    qk_numbers_field(w, rec, "rk_mean", mk);
    qk_numbers_field(w, rec, "rk_sd", sk);
    qk_numbers_field(w, rec, "ev_pct", 100 * me);
    qk_numbers_field(w, rec, "posdom_pct", sum_pct(cat[PCA_POS_DOM], n));
    qk_numbers_field(w, rec, "qpos_pct", sum_pct(cat[PCA_Q_POS], n));
    qk_numbers_field(w, rec, "content_pct", sum_pct(cat[PCA_CONTENT], n));
    qk_numbers_field(w, rec, "mixed_pct", sum_pct(cat[PCA_MIXED], n));
    qk_numbers_field(w, rec, "discordant", discordant(s, m, low));
}

static void write_training(qk_numbers *w, const pca_study *s, double low)
{
    double peak = -INFINITY;
    int peak_at = 0, lo = s->models[0].n_heads, hi = lo;
    for (int m = 0; m < s->n_models; m++) {
        double mk, sk;
        pca_model_mean_sd(s, m, PCA_R_K0, &mk, &sk);
        if (mk > peak)
            peak = mk, peak_at = m;
        lo = s->models[m].n_heads < lo ? s->models[m].n_heads : lo;
        hi = s->models[m].n_heads > hi ? s->models[m].n_heads : hi;
    }
    qk_numbers_set(w, "pca.t.checkpoints", s->n_models);
    qk_numbers_set(w, "pca.t.heads_min", lo);
    qk_numbers_set(w, "pca.t.heads_max", hi);
    qk_numbers_set(w, "pca.t.rk_peak", peak);
    qk_numbers_set_text(w, "pca.t.rk_peak_at", "%s", s->models[peak_at].label);
    write_end(w, qk_numbers_record(w, "pca.t", "first", end_fields, "first checkpoint"), s, 0, low);
    write_end(w, qk_numbers_record(w, "pca.t", "last", end_fields, "last checkpoint"), s,
              s->n_models - 1, low);
}

void sum_pca(sum_ctx *ctx)
{
    const qk_src *registry = sum_input(ctx, "registry");
    const qk_src *qk = sum_input(ctx, "components"), *heads = sum_input(ctx, "heads");
    const qk_src *training = sum_input(ctx, "training-heads");
    if (!qk != !heads)
        qk_die(QK_EXIT_USAGE, NULL, "inputs components and heads go together");
    double high = sum_param_num(ctx, "PCA_TAX_HIGH", 0, 1);
    double low = sum_param_num(ctx, "PCA_TAX_LOW", 0, 1);
    if (low > high) /* as qk-taxonomy, which made the categories */
        qk_die(QK_EXIT_USAGE, NULL, "PCA_TAX_LOW=%g is above PCA_TAX_HIGH=%g", low, high);
    qk_numbers *w = ctx->out;
    qk_numbers_declare(w, pca_keys);
    sum_source_params(w, "pca", "PCA_TAX_HIGH, PCA_TAX_LOW");
    qk_numbers_set(w, "pca.tax.high", high);
    qk_numbers_set(w, "pca.tax.low", low);

    write_components(w, qk);
    int families = family_table(w), models = model_table(w);
    pca_study s;
    if (heads && load_study(&s, heads, registry)) {
        write_cross_values(w, &s);
        write_families(w, families, &s);
        write_models(w, models, &s, registry);
        pca_study_free(&s);
    }
    int table = qk_numbers_table(w, "pca.training", "pca",
                                 "SmolLM3-3B by training checkpoint: PC0 means, standard "
                                 "deviations and taxonomy shares");
    static const char *const headers[] = {
        "Checkpoint id", "Checkpoint", "Heads", "mean <i>r</i><sub>q</sub>", "SD <i>r</i><sub>q</sub>",
        "mean <i>r</i><sub>k</sub>", "SD <i>r</i><sub>k</sub>", "PC0 explained variance (%)",
        "SD (%)", "position-dominated (%)", "Q-positional (%)", "K-positional (%)",
        "content-focused (%)", "mixed (%)"};
    for (int c = 0; checkpoint_fields[c].name; c++)
        qk_numbers_column(w, table, checkpoint_fields[c].name, headers[c]);
    qk_numbers_set(w, "pca.t.in_run", training != NULL);
    if (training && load_study(&s, training, registry)) {
        write_checkpoints(w, table, &s, registry);
        write_training(w, &s, low);
        pca_study_free(&s);
    } else {
        qk_numbers_record(w, "pca.t", "first", end_fields, "first checkpoint");
        qk_numbers_record(w, "pca.t", "last", end_fields, "last checkpoint");
    }
}
