/* qk-rotation-summary: the numbers of the report's rotation section, from
 * the study tables of the planar rotation model. It aggregates with the
 * code the rotation figures use (src/lib/rotation_tables.c), so text and
 * figures agree. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/rotation_tables.h"
#include "qk/table.h"
#include "qk/values.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-rotation-summary [OPTIONS] --registry FILE --values-output FILE\n"
        "\n"
        "Writes the values and tables of the report's rotation section: the drift\n"
        "correlations of queries and keys, the recency bias, the variance of the\n"
        "{a, b} plane, the slope ratio, the correlation of bias and separation within\n"
        "families and pooled, the drift lemma's residual, and the SmolLM3-3B\n"
        "trajectory with the decomposition of its bias per token and over the whole\n"
        "context window. Numbers are written formatted for reading; a study not given\n"
        "yields 'n/a' values and tables with a header only.\n"
        "\n"
        "Options:\n"
        "  -r, --registry FILE           dataset registry (labels, families, context\n"
        "                                lengths, display order)\n"
        "  -s, --summary FILE            model_summary.csv of the cross-model study\n"
        "  -H, --heads FILE              rotated.csv of the cross-model study\n"
        "  -S, --training-summary FILE   model_summary.csv of the training study\n"
        "  -T, --training-heads FILE     rotated.csv of the training study\n"
        "      --active-tau X            the |angle_r_best| of an active complement pair\n"
        "                                in the run (qk-complement --active-tau), quoted\n"
        "                                in the text (default 0.1)\n"
        "  -o, --values-output FILE      key<TAB>value lines (keys rot_...)\n"
        "      --models-output FILE      one row per model\n"
        "      --families-output FILE    one row per family\n"
        "      --training-output FILE    one row per training checkpoint\n"
        "  -h, --help                    this text\n"
        "      --version                 print the version\n"
        "\n"
        "Exit status: 0 success, 1 usage error, 2 bad or unreadable data.\n"
        "Example: qk-rotation-summary --registry workflow/datasets.tsv \\\n"
        "           --summary results/rotation/model_summary.csv \\\n"
        "           --heads results/rotation/rotated.csv -o values.tsv\n");
}

typedef struct options {
    const char *registry, *summary, *heads, *training_summary, *training_heads;
    const char *values_out, *models_out, *families_out, *training_out;
    double active_tau;
} options;

static void parse_args(int argc, char **argv, options *o)
{
    enum { OPT_MODELS = 256, OPT_FAMILIES, OPT_TRAINING, OPT_TAU, OPT_VERSION };
    static const struct option longopts[] = {
        {"registry", required_argument, NULL, 'r'},
        {"summary", required_argument, NULL, 's'},
        {"heads", required_argument, NULL, 'H'},
        {"training-summary", required_argument, NULL, 'S'},
        {"training-heads", required_argument, NULL, 'T'},
        {"values-output", required_argument, NULL, 'o'},
        {"models-output", required_argument, NULL, OPT_MODELS},
        {"families-output", required_argument, NULL, OPT_FAMILIES},
        {"training-output", required_argument, NULL, OPT_TRAINING},
        {"active-tau", required_argument, NULL, OPT_TAU},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->active_tau = 0.1;
    int c;
    while ((c = getopt_long(argc, argv, "r:s:H:S:T:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': o->registry = optarg; break;
        case 's': o->summary = optarg; break;
        case 'H': o->heads = optarg; break;
        case 'S': o->training_summary = optarg; break;
        case 'T': o->training_heads = optarg; break;
        case 'o': o->values_out = optarg; break;
        case OPT_MODELS: o->models_out = optarg; break;
        case OPT_FAMILIES: o->families_out = optarg; break;
        case OPT_TRAINING: o->training_out = optarg; break;
        case OPT_TAU: o->active_tau = qk_opt_fraction("--active-tau", optarg); break;
        case 'h': usage(stdout); exit(QK_EXIT_OK);
        case OPT_VERSION: printf("qk-rotation-summary %s\n", QK_VERSION_STRING); exit(QK_EXIT_OK);
        default: usage(stderr); exit(QK_EXIT_USAGE);
        }
    }
    if (optind != argc || !o->registry || !o->values_out) {
        usage(stderr);
        exit(QK_EXIT_USAGE);
    }
    if (!o->summary != !o->heads)
        qk_die(QK_EXIT_USAGE, NULL, "--summary and --heads go together");
    if (!o->training_summary != !o->training_heads)
        qk_die(QK_EXIT_USAGE, NULL, "--training-summary and --training-heads go together");
}

/* ---- inputs and outputs --------------------------------------------------------------- */

static void load_input(qk_table_file *in, const char *path)
{
    qk_table_file_load(in, path);
    in->src.user = "the rotation study";
}

/* A study: its per-model summary and its per-head table, grouped by model. */
typedef struct study {
    qk_table_file summary_in, heads_in;
    rot_table summary, heads;
} study;

static void load_study(study *s, const char *summary, const char *heads, const qk_src *registry)
{
    load_input(&s->summary_in, summary);
    load_input(&s->heads_in, heads);
    if (s->summary_in.table.n_rows == 0)
        qk_die(QK_EXIT_DATA, summary, "no models");
    if (s->heads_in.table.n_rows == 0)
        qk_die(QK_EXIT_DATA, heads, "no heads");
    rot_table_load(&s->summary, &s->summary_in.src, registry);
    rot_table_load(&s->heads, &s->heads_in.src, registry);
    for (int m = 0; m < s->summary.n_models; m++)
        if (s->summary.models[m].n_rows != 1)
            qk_die(QK_EXIT_DATA, summary, "model %s has %d rows (expected one)",
                   s->summary.models[m].id, s->summary.models[m].n_rows);
}

static void free_study(study *s)
{
    rot_table_free(&s->summary);
    rot_table_free(&s->heads);
    qk_table_file_free(&s->summary_in);
    qk_table_file_free(&s->heads_in);
}

static double pct(int count, int n) { return n ? 100.0 * count / n : NAN; }

/* Ratio a / b as a change in percent. */
static double change_pct(double a, double b) { return b != 0 ? 100.0 * (a / b - 1.0) : NAN; }

static double value_at(const rot_table *t, int m, const char *column)
{
    return qk_src_num(&t->src, t->models[m].rows[0], qk_src_col(&t->src, column));
}

/* ---- the cross-model study -------------------------------------------------------------- */

/* Per-head columns of a rotated.csv. */
typedef struct columns {
    double *r_q, *r_k, *bias, *sep, *mu_q, *var_a, *var_b, *plane, *ratio, *residual;
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
    c->residual = qk_src_values(&h->src, "residual_pos_r");
    c->n_active = qk_src_values(&h->src, "n_active_planes");
    c->active_var = qk_src_values(&h->src, "active_var_frac");
    c->max_angle = qk_src_values(&h->src, "max_abs_angle_r");
    c->ring_acc = qk_src_values(&h->src, "ring_cls_acc");
}

static void columns_free(columns *c)
{
    double **all[] = {&c->r_q, &c->r_k, &c->bias, &c->sep, &c->mu_q, &c->var_a, &c->var_b,
                      &c->plane, &c->ratio, &c->residual, &c->n_active, &c->active_var,
                      &c->max_angle, &c->ring_acc};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
}

static const char *const models_header =
    "model\tfamily\theads\tmean |r_q_a|\tmean |r_k_a|\tvar_frac_a\tvar_frac_b\tplane share"
    "\tmedian |alpha_k|/|alpha_q|\tmean bias x1e3\tbias > 0 (%)\tcontext L\tmean bias x L\n";

static void write_models(qk_text *t, const study *s)
{
    const rot_table *sum = &s->summary;
    for (int m = 0; m < sum->n_models; m++) {
        const rot_model *md = &sum->models[m];
        char family[64];
        rot_family_name(sum, sum->family_of[m], family, sizeof family);
        double bias = value_at(sum, m, "mean_bias_strength");
        fprintf(t->fp, "%s\t%s\t%.0f", md->label, family, value_at(sum, m, "n_heads"));
        qk_cell_num(t, "%.3f", value_at(sum, m, "mean_abs_r_q_a"));
        qk_cell_num(t, "%.3f", value_at(sum, m, "mean_abs_r_k_a"));
        qk_cell_num(t, "%.3f", value_at(sum, m, "mean_var_frac_a"));
        qk_cell_num(t, "%.3f", value_at(sum, m, "mean_var_frac_b"));
        qk_cell_num(t, "%.3f", value_at(sum, m, "mean_plane_var_fraction"));
        qk_cell_num(t, "%.2f", value_at(sum, m, "median_slope_ratio"));
        qk_cell_num(t, "%.3f", 1e3 * bias);
        qk_cell_num(t, "%.1f", 100 * value_at(sum, m, "frac_bias_positive"));
        qk_cell_num(t, "%.0f", md->context_length);
        qk_cell_num(t, "%.1f", bias * md->context_length);
        fputc('\n', t->fp);
    }
}

static const char *const families_header =
    "family\tmodels\theads\tPearson r (bias, separation)\tmean separation\tmean bias x1e3"
    "\tmedian |alpha_k|/|alpha_q|\tmean |r_q_a|\tmean |r_k_a|\n";

/* The families table and the values rot_r_<family> of the thesis families. */
static void write_families(qk_text *v, qk_text *t, const study *s, const columns *c)
{
    static const char *const named[] = {"llama", "qwen", "ministral"};
    double r_named[3] = {NAN, NAN, NAN};
    const rot_table *h = &s->heads;
    for (int f = 0; f < h->n_families; f++) {
        rot_rows rows = rot_rows_family(h, f);
        char name[64];
        rot_family_name(h, f, name, sizeof name);
        int models = 0, first = -1;
        for (int m = 0; m < h->n_models; m++)
            if (h->family_of[m] == f)
                models++, first = first < 0 ? m : first;
        double r = rot_pearson(c->sep, c->bias, &rows);
        for (int k = 0; k < 3; k++)
            if (strcmp(h->models[first].family, named[k]) == 0)
                r_named[k] = r;
        fprintf(t->fp, "%s\t%d\t%d", name, models, rows.n);
        qk_cell_num(t, "%+.2f", r);
        qk_cell_num(t, "%.3f", rot_mean(c->sep, &rows, 0));
        qk_cell_num(t, "%.3f", 1e3 * rot_mean(c->bias, &rows, 0));
        qk_cell_num(t, "%.2f", rot_quantile(c->ratio, &rows, 0.5, 0));
        qk_cell_num(t, "%.3f", rot_mean(c->r_q, &rows, 1));
        qk_cell_num(t, "%.3f", rot_mean(c->r_k, &rows, 1));
        fputc('\n', t->fp);
        rot_rows_free(&rows);
    }
    for (int k = 0; k < 3; k++) {
        char key[32];
        snprintf(key, sizeof key, "rot_r_%s", named[k]);
        qk_value_num(v, key, "%+.2f", r_named[k]);
    }
}

/* The models whose queries follow position on a more closely than their
 * keys, by label ("none" if there is none). */
static void q_ahead_models(qk_text *v, const study *s)
{
    char list[1024] = "";
    int n = 0;
    for (int m = 0; m < s->summary.n_models; m++)
        if (value_at(&s->summary, m, "mean_abs_r_q_a") > value_at(&s->summary, m, "mean_abs_r_k_a")) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", n++ ? ", " : "",
                     s->summary.models[m].label);
        }
    qk_value(v, "rot_q_ahead_models", "%s", n ? list : "none");
    qk_value_num(v, "rot_q_ahead_count", "%.0f", n);
}

/* Range of a per-model column over the models (scaled). */
static void model_range(qk_text *v, const study *s, const char *column, double scale,
                        const char *key, const char *fmt)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int m = 0; m < s->summary.n_models; m++) {
        double x = scale * value_at(&s->summary, m, column);
        if (isfinite(x))
            lo = fmin(lo, x), hi = fmax(hi, x);
    }
    char k[64];
    snprintf(k, sizeof k, "%s_min", key);
    qk_value_num(v, k, fmt, lo);
    snprintf(k, sizeof k, "%s_max", key);
    qk_value_num(v, k, fmt, hi);
}

static void cross_values(qk_text *v, const study *s, const columns *c)
{
    const rot_table *h = &s->heads;
    rot_rows all = rot_rows_all(h);
    int n = all.n;
    qk_value_num(v, "rot_heads", "%.0f", n);
    qk_value_num(v, "rot_models", "%.0f", s->summary.n_models);
    qk_value_num(v, "rot_families", "%.0f", h->n_families);
    qk_value_num(v, "rot_rq_mean", "%.3f", rot_mean(c->r_q, &all, 1));
    qk_value_num(v, "rot_rk_mean", "%.3f", rot_mean(c->r_k, &all, 1));
    double sq = 0, sk = 0;
    for (int m = 0; m < s->summary.n_models; m++) {
        sq += value_at(&s->summary, m, "mean_abs_r_q_a");
        sk += value_at(&s->summary, m, "mean_abs_r_k_a");
    }
    qk_value_num(v, "rot_rq_model_mean", "%.3f", sq / s->summary.n_models);
    qk_value_num(v, "rot_rk_model_mean", "%.3f", sk / s->summary.n_models);
    int k_closer = 0; /* |r_k_a| > |r_q_a| */
    for (int i = 0; i < n; i++)
        k_closer += fabs(c->r_k[all.index[i]]) > fabs(c->r_q[all.index[i]]);
    qk_value_num(v, "rot_rk_gt_rq_heads_pct", "%.1f", pct(k_closer, n));
    q_ahead_models(v, s);
    int positive = rot_count_positive(c->bias, &all), negative = 0;
    for (int i = 0; i < n; i++)
        negative += c->bias[all.index[i]] < 0.0;
    qk_value_num(v, "rot_bias_pos_pct", "%.1f", pct(positive, rot_count_defined(c->bias, &all)));
    qk_value_num(v, "rot_bias_pos_count", "%.0f", positive);
    qk_value_num(v, "rot_bias_neg_count", "%.0f", negative);
    qk_value_num(v, "rot_mu_q_pos_pct", "%.1f",
                 pct(rot_count_positive(c->mu_q, &all), rot_count_defined(c->mu_q, &all)));
    qk_value_num(v, "rot_bias_mean", "%.3f", 1e3 * rot_mean(c->bias, &all, 0));
    model_range(v, s, "mean_bias_strength", 1e3, "rot_bias_model", "%.3f");
    qk_value_num(v, "rot_var_a_mean", "%.1f", 100 * rot_mean(c->var_a, &all, 0));
    qk_value_num(v, "rot_var_b_mean", "%.1f", 100 * rot_mean(c->var_b, &all, 0));
    qk_value_num(v, "rot_plane_mean", "%.1f", 100 * rot_mean(c->plane, &all, 0));
    model_range(v, s, "mean_plane_var_fraction", 100, "rot_plane_model", "%.1f");
    qk_value_num(v, "rot_varb_gt_vara_pct", "%.1f",
                 pct(rot_count_greater(c->var_b, c->var_a, &all), n));
    qk_value_num(v, "rot_slope_ratio_median", "%.2f", rot_quantile(c->ratio, &all, 0.5, 0));
    model_range(v, s, "median_slope_ratio", 1, "rot_slope_ratio_model", "%.2f");
    qk_value_num(v, "rot_r_pooled", "%+.2f", rot_pearson(c->sep, c->bias, &all));
    qk_value_num(v, "rot_active_mean", "%.1f", rot_mean(c->n_active, &all, 0));
    qk_value_num(v, "rot_active_var_mean", "%.1f", 100 * rot_mean(c->active_var, &all, 0));
    qk_value_num(v, "rot_angle_r_max", "%.2f", rot_max(c->max_angle, &all, 0));
    qk_value_num(v, "rot_ring_acc_mean", "%.2f", rot_mean(c->ring_acc, &all, 0));
    qk_value_num(v, "rot_ring_acc_heads", "%.0f", rot_count_defined(c->ring_acc, &all));
    double lo = INFINITY, hi = -INFINITY;
    for (int m = 0; m < s->summary.n_models; m++) {
        double x = value_at(&s->summary, m, "mean_bias_strength") *
                   s->summary.models[m].context_length;
        if (isfinite(x))
            lo = fmin(lo, x), hi = fmax(hi, x);
    }
    qk_value_num(v, "rot_bias_window_model_min", "%.0f", lo);
    qk_value_num(v, "rot_bias_window_model_max", "%.0f", hi);
    rot_rows_free(&all);
}

static const char *const cross_keys[] = {
    "rot_heads", "rot_models", "rot_families", "rot_rq_mean", "rot_rk_mean", "rot_rq_model_mean",
    "rot_rk_model_mean", "rot_rk_gt_rq_heads_pct", "rot_q_ahead_models", "rot_q_ahead_count",
    "rot_bias_pos_pct", "rot_bias_pos_count", "rot_bias_neg_count", "rot_mu_q_pos_pct",
    "rot_bias_mean", "rot_bias_model_min", "rot_bias_model_max", "rot_var_a_mean",
    "rot_var_b_mean", "rot_plane_mean", "rot_plane_model_min", "rot_plane_model_max",
    "rot_varb_gt_vara_pct", "rot_slope_ratio_median", "rot_slope_ratio_model_min",
    "rot_slope_ratio_model_max", "rot_r_pooled", "rot_active_mean", "rot_active_var_mean",
    "rot_angle_r_max", "rot_ring_acc_mean", "rot_ring_acc_heads", "rot_bias_window_model_min",
    "rot_bias_window_model_max", "rot_r_llama", "rot_r_qwen", "rot_r_ministral", NULL};

/* ---- the training study ------------------------------------------------------------------- */

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

static const char *const training_header =
    "checkpoint\tphase\tcontext L\tmean |r_k_a|\tmean separation\tplane share\tmean mu_q_a"
    "\tmean |alpha_k| x1e3\tmean bias x1e3\tmean |alpha_k| x L\tmean bias x L\n";

static void write_training(qk_text *t, const checkpoint *c, int n)
{
    for (int m = 0; m < n; m++) {
        fprintf(t->fp, "%s\t%s", c[m].model->label, c[m].phase);
        qk_cell_num(t, "%.0f", c[m].length);
        qk_cell_num(t, "%.3f", c[m].rk);
        qk_cell_num(t, "%.3f", c[m].sep);
        qk_cell_num(t, "%.3f", c[m].plane);
        qk_cell_num(t, "%.2f", c[m].mu);
        qk_cell_num(t, "%.3f", 1e3 * c[m].alpha);
        qk_cell_num(t, "%.2f", 1e3 * c[m].bias);
        qk_cell_num(t, "%.1f", c[m].alpha * c[m].length);
        qk_cell_num(t, "%.1f", c[m].bias * c[m].length);
        fputc('\n', t->fp);
    }
}

/* Values of checkpoint m under the suffix (first, peak, onset, last). */
static void checkpoint_values(qk_text *v, const checkpoint *c, const char *suffix)
{
    char key[64];
#define PUT(name, fmt, x)                                            \
    do {                                                             \
        snprintf(key, sizeof key, "rot_t_%s_%s", name, suffix);      \
        qk_value_num(v, key, fmt, x);                                         \
    } while (0)
    snprintf(key, sizeof key, "rot_t_%s", suffix);
    qk_value(v, key, "%s", c->model->label);
    PUT("L", "%.0f", c->length);
    PUT("rk", "%.3f", c->rk);
    PUT("sep", "%.3f", c->sep);
    PUT("plane", "%.1f", 100 * c->plane);
    PUT("mu", "%.2f", c->mu);
    PUT("alpha", "%.3f", 1e3 * c->alpha);
    PUT("bias", "%.2f", 1e3 * c->bias);
    PUT("alphaL", "%.1f", c->alpha * c->length);
    PUT("biasL", "%.1f", c->bias * c->length);
#undef PUT
}

static void training_values(qk_text *v, const checkpoint *c, int n, const study *s)
{
    int peak = 0;
    for (int m = 1; m < n; m++)
        if (c[m].bias > c[peak].bias)
            peak = m;
    int onset = peak + 1 < n ? peak + 1 : peak;
    qk_value_num(v, "rot_t_checkpoints", "%.0f", n);
    qk_value_num(v, "rot_t_heads", "%.0f", s->heads.src.t->n_rows / (double)n);
    checkpoint_values(v, &c[0], "first");
    checkpoint_values(v, &c[peak], "peak");
    checkpoint_values(v, &c[onset], "onset");
    checkpoint_values(v, &c[n - 1], "last");
    /* the per-token collapse after the peak and its two factors */
    qk_value_num(v, "rot_t_bias_fall", "%.1f", c[peak].bias / c[n - 1].bias);
    qk_value_num(v, "rot_t_bias_fall_onset", "%.1f", c[peak].bias / c[onset].bias);
    qk_value_num(v, "rot_t_bias_change", "%+.0f", change_pct(c[n - 1].bias, c[peak].bias));
    qk_value_num(v, "rot_t_bias_rise", "%+.0f", change_pct(c[peak].bias, c[0].bias));
    qk_value_num(v, "rot_t_alpha_fall", "%.1f", c[peak].alpha / c[n - 1].alpha);
    qk_value_num(v, "rot_t_alpha_change", "%+.0f", change_pct(c[n - 1].alpha, c[peak].alpha));
    qk_value_num(v, "rot_t_mu_change", "%+.0f", change_pct(c[n - 1].mu, c[peak].mu));
    qk_value_num(v, "rot_t_mu_change_first", "%+.0f", change_pct(c[peak].mu, c[0].mu));
    qk_value_num(v, "rot_t_biasL_change", "%+.0f",
                 change_pct(c[n - 1].bias * c[n - 1].length, c[peak].bias * c[peak].length));
    qk_value_num(v, "rot_t_alphaL_change", "%+.0f",
                 change_pct(c[n - 1].alpha * c[n - 1].length, c[peak].alpha * c[peak].length));
    qk_value_num(v, "rot_t_L_growth", "%.0f", c[n - 1].length / c[0].length);
    /* how far the product of the means is from the mean of the products */
    double worst = 0;
    for (int m = 0; m < n; m++)
        worst = fmax(worst, fabs(c[m].mu * c[m].alpha / c[m].bias - 1.0));
    qk_value_num(v, "rot_t_product_dev", "%.0f", 100 * worst);
}

static const char *const training_keys[] = {
    "rot_t_checkpoints", "rot_t_heads", "rot_t_bias_fall", "rot_t_bias_fall_onset",
    "rot_t_bias_change", "rot_t_bias_rise", "rot_t_alpha_fall", "rot_t_alpha_change",
    "rot_t_mu_change", "rot_t_mu_change_first", "rot_t_biasL_change", "rot_t_alphaL_change",
    "rot_t_L_growth", "rot_t_product_dev", NULL};

static void training_missing(qk_text *v)
{
    static const char *const suffixes[] = {"first", "peak", "onset", "last"};
    static const char *const names[] = {"L", "rk", "sep", "plane", "mu", "alpha", "bias",
                                        "alphaL", "biasL"};
    qk_value_missing(v, training_keys);
    for (int i = 0; i < 4; i++) {
        char key[64];
        snprintf(key, sizeof key, "rot_t_%s", suffixes[i]);
        qk_value(v, key, "n/a");
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            snprintf(key, sizeof key, "rot_t_%s_%s", names[k], suffixes[i]);
            qk_value(v, key, "n/a");
        }
    }
}

/* ---- the drift lemma over both studies ------------------------------------------------------ */

static void lemma_values(qk_text *v, const study *const *studies, int n)
{
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
    qk_value_num(v, "rot_residual_max", "%.1e", worst);
    qk_value_num(v, "rot_residual_heads", "%.0f", heads);
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-rotation-summary");
    options o;
    parse_args(argc, argv, &o);
    qk_table_file registry;
    load_input(&registry, o.registry);
    qk_text values, models, families, training;
    qk_text_open(&values, o.values_out);
    qk_text_open(&models, o.models_out);
    qk_text_open(&families, o.families_out);
    qk_text_open(&training, o.training_out);
    fputs(models_header, models.fp);
    fputs(families_header, families.fp);
    fputs(training_header, training.fp);

    study cross, smol;
    const study *studies[2] = {NULL, NULL};
    if (o.summary) {
        load_study(&cross, o.summary, o.heads, &registry.src);
        columns c;
        columns_load(&c, &cross.heads);
        cross_values(&values, &cross, &c);
        write_families(&values, &families, &cross, &c);
        write_models(&models, &cross);
        columns_free(&c);
        studies[0] = &cross;
    } else {
        qk_value_missing(&values, cross_keys);
    }
    if (o.training_summary) {
        load_study(&smol, o.training_summary, o.training_heads, &registry.src);
        checkpoint *c = load_checkpoints(&smol);
        training_values(&values, c, smol.summary.n_models, &smol);
        write_training(&training, c, smol.summary.n_models);
        free(c);
        studies[1] = &smol;
    } else {
        training_missing(&values);
    }
    lemma_values(&values, studies, 2);
    qk_value_num(&values, "rot_active_tau", "%g", o.active_tau);

    qk_text_close(&values);
    qk_text_close(&models);
    qk_text_close(&families);
    qk_text_close(&training);
    if (o.summary)
        free_study(&cross);
    if (o.training_summary)
        free_study(&smol);
    qk_table_file_free(&registry);
    return QK_EXIT_OK;
}
