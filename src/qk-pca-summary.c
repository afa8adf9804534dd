/* qk-pca-summary: the numbers of the report's PCA section, from the study
 * tables of the combined QK PCA. It aggregates with the same code as the
 * PCA figures (src/lib/pca_tables.c), so text and figures agree. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/pca_tables.h"
#include "qk/table.h"
#include "qk/values.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-pca-summary [OPTIONS] --registry FILE --values-output FILE\n"
        "\n"
        "Writes the values and tables of the report's PCA section: grand means by\n"
        "principal component, PC0 means, positional variance, query/key separation and\n"
        "taxonomy shares by model and by family, and the trajectories of a training\n"
        "study by checkpoint. Numbers are written formatted for reading (r with 3\n"
        "decimals, shares in percent with 1); a study not given yields 'n/a' values and\n"
        "tables with a header only.\n"
        "\n"
        "Options:\n"
        "  -r, --registry FILE         dataset registry without comment lines (labels,\n"
        "                              families, display order)\n"
        "  -c, --components FILE       qk.csv of the cross-model study (10 rows a head)\n"
        "  -H, --heads FILE            qk_heads.csv of the cross-model study\n"
        "  -t, --training-heads FILE   qk_heads.csv of the training study\n"
        "      --high X, --low X       taxonomy thresholds (default 0.7 and 0.3), quoted\n"
        "                              in the text\n"
        "  -o, --values-output FILE    key<TAB>value lines (keys pca_...)\n"
        "      --by-pc-output FILE     means by component\n"
        "      --by-family-output FILE PC0 means and taxonomy shares by family\n"
        "      --by-model-output FILE  PC0 numbers by model\n"
        "      --training-output FILE  numbers by training checkpoint\n"
        "  -h, --help                  this text\n"
        "      --version               print the version\n"
        "\n"
        "Exit status: 0 success, 1 usage error, 2 bad or unreadable data.\n"
        "Example: qk-pca-summary --registry build/pca/registry.tsv \\\n"
        "           --components results/attention_plasticity/qk.csv \\\n"
        "           --heads results/attention_plasticity/qk_heads.csv -o values.tsv\n");
}

typedef struct options {
    const char *registry, *components, *heads, *training;
    double high, low;
    const char *values_out, *by_pc_out, *by_family_out, *by_model_out, *training_out;
} options;

static void parse_args(int argc, char **argv, options *o)
{
    enum { OPT_HIGH = 256, OPT_LOW, OPT_BY_PC, OPT_BY_FAMILY, OPT_BY_MODEL, OPT_TRAINING_OUT,
           OPT_VERSION };
    static const struct option longopts[] = {
        {"registry", required_argument, NULL, 'r'},
        {"components", required_argument, NULL, 'c'},
        {"heads", required_argument, NULL, 'H'},
        {"training-heads", required_argument, NULL, 't'},
        {"high", required_argument, NULL, OPT_HIGH},
        {"low", required_argument, NULL, OPT_LOW},
        {"values-output", required_argument, NULL, 'o'},
        {"by-pc-output", required_argument, NULL, OPT_BY_PC},
        {"by-family-output", required_argument, NULL, OPT_BY_FAMILY},
        {"by-model-output", required_argument, NULL, OPT_BY_MODEL},
        {"training-output", required_argument, NULL, OPT_TRAINING_OUT},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->high = 0.7;
    o->low = 0.3;
    int c;
    while ((c = getopt_long(argc, argv, "r:c:H:t:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': o->registry = optarg; break;
        case 'c': o->components = optarg; break;
        case 'H': o->heads = optarg; break;
        case 't': o->training = optarg; break;
        case OPT_HIGH: o->high = qk_opt_fraction("--high", optarg); break;
        case OPT_LOW: o->low = qk_opt_fraction("--low", optarg); break;
        case 'o': o->values_out = optarg; break;
        case OPT_BY_PC: o->by_pc_out = optarg; break;
        case OPT_BY_FAMILY: o->by_family_out = optarg; break;
        case OPT_BY_MODEL: o->by_model_out = optarg; break;
        case OPT_TRAINING_OUT: o->training_out = optarg; break;
        case 'h': usage(stdout); exit(QK_EXIT_OK);
        case OPT_VERSION: printf("qk-pca-summary %s\n", QK_VERSION_STRING); exit(QK_EXIT_OK);
        default: usage(stderr); exit(QK_EXIT_USAGE);
        }
    }
    if (optind != argc || !o->registry || !o->values_out) {
        usage(stderr);
        exit(QK_EXIT_USAGE);
    }
    if (!o->components != !o->heads)
        qk_die(QK_EXIT_USAGE, NULL, "--components and --heads go together");
}

/* ---- inputs ------------------------------------------------------------------------ */

static void load_input(qk_table_file *in, const char *path)
{
    qk_table_file_load(in, path);
    in->src.user = "the PCA study";
}

static void load_study(pca_study *s, qk_table_file *in, const char *path, const qk_src *registry)
{
    load_input(in, path);
    pca_study_load(s, &in->src, registry);
    if (s->n_heads == 0)
        qk_die(QK_EXIT_DATA, path, "no heads");
    pca_study_need_category(s);
}

/* ---- per-head columns and groups ------------------------------------------------------ */

/* A numeric column of the heads table, read for every head (study order). */
static double *head_column(const pca_study *s, const char *name)
{
    int c = qk_src_col(&s->src, name);
    double *x = qk_malloc((size_t)s->n_heads * sizeof *x);
    for (int h = 0; h < s->n_heads; h++)
        x[h] = qk_src_num(&s->src, s->heads[h].row, c);
    return x;
}

/* A set of heads: a model, a family, or all (selected by a predicate). */
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

static double mean_of(const pca_study *s, const double *x, head_filter f, const void *arg,
                      int absolute)
{
    double sum = 0;
    int n = 0;
    for (int h = 0; h < s->n_heads; h++)
        if (f(s, h, arg)) {
            sum += absolute ? fabs(x[h]) : x[h];
            n++;
        }
    return n ? sum / n : NAN;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of x[n] (sorted in a copy). */
static double median(const double *x, int n)
{
    double *v = qk_malloc((size_t)(n ? n : 1) * sizeof *v);
    memcpy(v, x, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double m = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    free(v);
    return m;
}

static void count_categories(const pca_study *s, head_filter f, const void *arg,
                             int cat[PCA_N_CAT], int *n)
{
    memset(cat, 0, PCA_N_CAT * sizeof cat[0]);
    *n = 0;
    for (int h = 0; h < s->n_heads; h++)
        if (f(s, h, arg)) {
            cat[s->heads[h].category]++;
            (*n)++;
        }
}

/* The PC0 columns of every head as arrays, for the group means. */
typedef struct head_columns {
    double *r_q0, *r_k0, *ev0, *pos_var_q, *pos_var_k, *share_q, *share_k;
    double *mu_q0, *sep0, *fisher0, *acc01, *acc0;
} head_columns;

static void columns_load(head_columns *c, const pca_study *s)
{
    c->r_q0 = head_column(s, "r_q0");
    c->r_k0 = head_column(s, "r_k0");
    c->ev0 = head_column(s, "ev0");
    c->pos_var_q = head_column(s, "pos_var_q");
    c->pos_var_k = head_column(s, "pos_var_k");
    c->share_q = head_column(s, "pc0_share_q");
    c->share_k = head_column(s, "pc0_share_k");
    c->mu_q0 = head_column(s, "mu_q0");
    c->sep0 = head_column(s, "sep0");
    c->fisher0 = head_column(s, "fisher0");
    c->acc01 = head_column(s, "acc01");
    c->acc0 = head_column(s, "acc0");
}

static void columns_free(head_columns *c)
{
    double **all[] = {&c->r_q0, &c->r_k0, &c->ev0, &c->pos_var_q, &c->pos_var_k, &c->share_q,
                      &c->share_k, &c->mu_q0, &c->sep0, &c->fisher0, &c->acc01, &c->acc0};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        free(*all[i]);
        *all[i] = NULL;
    }
}

/* ---- the cross-model study --------------------------------------------------------------- */

static const char *const by_pc_header = "component\tmean r_q\tmean r_k\tmean explained variance (%)\n";
static const char *const by_family_header =
    "family\tmodels\theads\tmean r_q (PC0)\tmean r_k (PC0)\tpos_var_q (%)\tpos_var_k (%)"
    "\tposition-dominated (%)\tQ-positional (%)\tK-positional (%)\tcontent-focused (%)"
    "\tmixed (%)\n";
static const char *const by_model_header =
    "model\tfamily\theads\tmean r_q (PC0)\tmean r_k (PC0)\tPC0 explained variance (%)"
    "\tpos_var_q (%)\tpos_var_k (%)\tmean |mu_q0|\tmean separation sep0\tmedian Fisher"
    "\tmean acc01 (%)\tposition-dominated (%)\n";

/* The value lines of component i; n/a without it (a head dimension below 10). */
static void component_values(qk_text *v, int i, int have, double rq, double rk, double ev)
{
    static const char *const names[3] = {"rq", "rk", "ev"};
    static const char *const formats[3] = {"%.3f", "%.3f", "%.1f"};
    const double x[3] = {rq, rk, 100 * ev};
    for (int k = 0; k < 3; k++) {
        char key[32];
        snprintf(key, sizeof key, "pca_%s_pc%d", names[k], i);
        if (have)
            qk_value(v, key, formats[k], x[k]);
        else
            qk_value(v, key, "n/a");
    }
}

static void write_by_pc(qk_text *v, qk_text *t, const qk_src *qk)
{
    double rq[PCA_N_PC], rk[PCA_N_PC], ev[PCA_N_PC];
    int n[PCA_N_PC];
    pca_component_means(qk, rq, rk, ev, n);
    double top = 0;
    fputs(by_pc_header, t->fp);
    for (int i = 0; i < PCA_N_PC; i++) {
        component_values(v, i, n[i] > 0, rq[i], rk[i], ev[i]);
        if (!n[i])
            continue;
        fprintf(t->fp, "PC%d\t%.3f\t%.3f\t%.1f\n", i, rq[i], rk[i], 100 * ev[i]);
        top += ev[i];
    }
    qk_value(v, "pca_ev_top10", "%.1f", 100 * top);
    qk_value(v, "pca_ev_ratio01", "%.1f", ev[1] > 0 ? ev[0] / ev[1] : NAN);
}

/* The share of a category in percent. */
static double pct(int count, int n) { return n ? 100.0 * count / n : NAN; }

static void write_families(qk_text *t, const pca_study *s, const head_columns *c)
{
    fputs(by_family_header, t->fp);
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
        int cat[PCA_N_CAT], n;
        count_categories(s, in_family, family, cat, &n);
        fprintf(t->fp, "%s\t%d\t%d\t%.3f\t%.3f\t%.1f\t%.1f", name, models, n,
                mean_of(s, c->r_q0, in_family, family, 0),
                mean_of(s, c->r_k0, in_family, family, 0),
                100 * mean_of(s, c->pos_var_q, in_family, family, 0),
                100 * mean_of(s, c->pos_var_k, in_family, family, 0));
        for (int k = 0; k < PCA_N_CAT; k++)
            fprintf(t->fp, "\t%.1f", pct(cat[k], n));
        fprintf(t->fp, "\n");
    }
}

static void write_models(qk_text *t, const pca_study *s, const head_columns *c)
{
    fputs(by_model_header, t->fp);
    for (int m = 0; m < s->n_models; m++) {
        const pca_model *md = &s->models[m];
        char family[64];
        pca_family_name(s, md->family, family, sizeof family);
        int cat[PCA_N_CAT], n;
        count_categories(s, in_model, &m, cat, &n);
        fprintf(t->fp, "%s\t%s\t%d\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\n",
                md->label, family, n, mean_of(s, c->r_q0, in_model, &m, 0),
                mean_of(s, c->r_k0, in_model, &m, 0),
                100 * mean_of(s, c->ev0, in_model, &m, 0),
                100 * mean_of(s, c->pos_var_q, in_model, &m, 0),
                100 * mean_of(s, c->pos_var_k, in_model, &m, 0),
                mean_of(s, c->mu_q0, in_model, &m, 1), mean_of(s, c->sep0, in_model, &m, 0),
                median(c->fisher0 + md->first_head, md->n_heads),
                100 * mean_of(s, c->acc01, in_model, &m, 0), pct(cat[PCA_POS_DOM], n));
    }
}

/* The range of the per-model means of a column (min and max over models). */
static void model_range(const pca_study *s, const double *x, double scale, qk_text *v,
                        const char *key, const char *fmt)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int m = 0; m < s->n_models; m++) {
        double mean = mean_of(s, x, in_model, &m, 0);
        lo = fmin(lo, mean);
        hi = fmax(hi, mean);
    }
    char name[64];
    snprintf(name, sizeof name, "%s_min", key);
    qk_value(v, name, fmt, scale * lo);
    snprintf(name, sizeof name, "%s_max", key);
    qk_value(v, name, fmt, scale * hi);
}

static const char *const category_keys[PCA_N_CAT] = {"posdom", "qpos", "kpos", "content",
                                                     "mixed"};

static void write_cross_values(qk_text *v, const pca_study *s, const head_columns *c)
{
    qk_value(v, "pca_models", "%d", s->n_models);
    qk_value(v, "pca_heads", "%d", s->n_heads);
    qk_value(v, "pca_families", "%d", pca_n_families(s));
    qk_value(v, "pca_pos_var_q", "%.1f", 100 * mean_of(s, c->pos_var_q, any_head, NULL, 0));
    qk_value(v, "pca_pos_var_k", "%.1f", 100 * mean_of(s, c->pos_var_k, any_head, NULL, 0));
    qk_value(v, "pca_pc0_share_q", "%.1f", 100 * mean_of(s, c->share_q, any_head, NULL, 0));
    qk_value(v, "pca_pc0_share_k", "%.1f", 100 * mean_of(s, c->share_k, any_head, NULL, 0));
    qk_value(v, "pca_mu_q0_abs", "%.1f", mean_of(s, c->mu_q0, any_head, NULL, 1));
    qk_value(v, "pca_sep0", "%.1f", mean_of(s, c->sep0, any_head, NULL, 0));
    qk_value(v, "pca_fisher0_median", "%.1f", median(c->fisher0, s->n_heads));
    qk_value(v, "pca_fisher0_mean", "%.1f", mean_of(s, c->fisher0, any_head, NULL, 0));
    qk_value(v, "pca_acc01", "%.1f", 100 * mean_of(s, c->acc01, any_head, NULL, 0));
    qk_value(v, "pca_acc0", "%.1f", 100 * mean_of(s, c->acc0, any_head, NULL, 0));
    model_range(s, c->acc01, 100, v, "pca_acc01_model", "%.1f");
    model_range(s, c->r_q0, 1, v, "pca_rq_pc0_model", "%.3f");
    model_range(s, c->r_k0, 1, v, "pca_rk_pc0_model", "%.3f");
    model_range(s, c->pos_var_q, 100, v, "pca_pos_var_q_model", "%.1f");
    model_range(s, c->pos_var_k, 100, v, "pca_pos_var_k_model", "%.1f");
    int cat[PCA_N_CAT], n;
    count_categories(s, any_head, NULL, cat, &n);
    for (int k = 0; k < PCA_N_CAT; k++) {
        char key[48];
        snprintf(key, sizeof key, "pca_share_%s", category_keys[k]);
        qk_value(v, key, "%.1f", pct(cat[k], n));
        snprintf(key, sizeof key, "pca_count_%s", category_keys[k]);
        qk_value(v, key, "%d", cat[k]);
    }
}

static const char *const cross_keys[] = {
    "pca_models", "pca_heads", "pca_families", "pca_pos_var_q", "pca_pos_var_k",
    "pca_pc0_share_q", "pca_pc0_share_k", "pca_mu_q0_abs", "pca_sep0", "pca_fisher0_median",
    "pca_fisher0_mean", "pca_acc01", "pca_acc0", "pca_acc01_model_min", "pca_acc01_model_max",
    "pca_rq_pc0_model_min", "pca_rq_pc0_model_max", "pca_rk_pc0_model_min",
    "pca_rk_pc0_model_max", "pca_pos_var_q_model_min", "pca_pos_var_q_model_max",
    "pca_pos_var_k_model_min", "pca_pos_var_k_model_max", "pca_share_posdom",
    "pca_count_posdom", "pca_share_qpos", "pca_count_qpos", "pca_share_kpos", "pca_count_kpos",
    "pca_share_content", "pca_count_content", "pca_share_mixed", "pca_count_mixed",
    "pca_ev_top10", "pca_ev_ratio01", NULL};

static void missing_components(qk_text *v)
{
    for (int i = 0; i < PCA_N_PC; i++)
        component_values(v, i, 0, 0, 0, 0);
}

/* ---- the training study ------------------------------------------------------------------ */

static const char *const training_header =
    "checkpoint\tlabel\theads\tmean r_q\tSD r_q\tmean r_k\tSD r_k\tPC0 explained variance (%)"
    "\tSD (%)\tposition-dominated (%)\tQ-positional (%)\tK-positional (%)"
    "\tcontent-focused (%)\tmixed (%)\n";

static const char *const training_keys[] = {
    "pca_t_checkpoints", "pca_t_heads", "pca_t_first", "pca_t_last", "pca_t_rq_first",
    "pca_t_rq_last", "pca_t_rk_first", "pca_t_rk_last", "pca_t_rk_peak", "pca_t_rk_peak_at",
    "pca_t_rk_sd_first", "pca_t_rk_sd_last", "pca_t_ev_first", "pca_t_ev_last",
    "pca_t_posdom_first", "pca_t_posdom_last", "pca_t_qpos_first", "pca_t_qpos_last",
    "pca_t_content_first", "pca_t_content_last", "pca_t_mixed_first", "pca_t_mixed_last",
    "pca_t_discordant_first", "pca_t_discordant_last", NULL};

/* Heads of a checkpoint with r_k below -low (keys drifting against the queries). */
static int discordant(const pca_study *s, int m, double low)
{
    const pca_model *md = &s->models[m];
    int n = 0;
    for (int h = md->first_head; h < md->first_head + md->n_heads; h++)
        n += s->heads[h].r_k0 < -low;
    return n;
}

static void write_training(qk_text *v, qk_text *t, const pca_study *s, double low)
{
    fputs(training_header, t->fp);
    double peak = -INFINITY;
    int peak_at = 0;
    for (int m = 0; m < s->n_models; m++) {
        const pca_model *md = &s->models[m];
        double mq, sq, mk, sk, me, se;
        pca_model_mean_sd(s, m, PCA_R_Q0, &mq, &sq);
        pca_model_mean_sd(s, m, PCA_R_K0, &mk, &sk);
        pca_model_mean_sd(s, m, PCA_EV0, &me, &se);
        int cat[PCA_N_CAT];
        pca_model_categories(s, m, cat);
        fprintf(t->fp, "%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t%.1f", md->id, md->label,
                md->n_heads, mq, sq, mk, sk, 100 * me, 100 * se);
        for (int k = 0; k < PCA_N_CAT; k++)
            fprintf(t->fp, "\t%.1f", pct(cat[k], md->n_heads));
        fprintf(t->fp, "\n");
        if (mk > peak)
            peak = mk, peak_at = m;
    }
    int first = 0, last = s->n_models - 1;
    char heads[32];
    int lo = s->models[0].n_heads, hi = lo;
    for (int m = 1; m < s->n_models; m++) {
        lo = s->models[m].n_heads < lo ? s->models[m].n_heads : lo;
        hi = s->models[m].n_heads > hi ? s->models[m].n_heads : hi;
    }
    if (lo == hi)
        snprintf(heads, sizeof heads, "%d", lo);
    else
        snprintf(heads, sizeof heads, "%d-%d", lo, hi);
    qk_value(v, "pca_t_checkpoints", "%d", s->n_models);
    qk_value(v, "pca_t_heads", "%s", heads);
    qk_value(v, "pca_t_first", "%s", s->models[first].label);
    qk_value(v, "pca_t_last", "%s", s->models[last].label);
    const int ends[2] = {first, last};
    const char *const suffix[2] = {"first", "last"};
    for (int e = 0; e < 2; e++) {
        int m = ends[e];
        double mq, sq, mk, sk, me, se;
        pca_model_mean_sd(s, m, PCA_R_Q0, &mq, &sq);
        pca_model_mean_sd(s, m, PCA_R_K0, &mk, &sk);
        pca_model_mean_sd(s, m, PCA_EV0, &me, &se);
        int cat[PCA_N_CAT];
        pca_model_categories(s, m, cat);
        int n = s->models[m].n_heads;
        char key[48];
#define PUT(name, fmt, x)                                               \
        snprintf(key, sizeof key, "pca_t_%s_%s", name, suffix[e]);    \
        qk_value(v, key, fmt, x)
        PUT("rq", "%.3f", mq);
        PUT("rk", "%.3f", mk);
        PUT("rk_sd", "%.3f", sk);
        PUT("ev", "%.1f", 100 * me);
        PUT("posdom", "%.1f", pct(cat[PCA_POS_DOM], n));
        PUT("qpos", "%.1f", pct(cat[PCA_Q_POS], n));
        PUT("content", "%.1f", pct(cat[PCA_CONTENT], n));
        PUT("mixed", "%.1f", pct(cat[PCA_MIXED], n));
        PUT("discordant", "%d", discordant(s, m, low));
#undef PUT
    }
    qk_value(v, "pca_t_rk_peak", "%.3f", peak);
    qk_value(v, "pca_t_rk_peak_at", "%s", s->models[peak_at].label);
}

/* ---- main ------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    qk_set_progname("qk-pca-summary");
    options o;
    parse_args(argc, argv, &o);
    qk_table_file registry;
    load_input(&registry, o.registry);

    qk_text values, by_pc, by_family, by_model, training;
    qk_text_open(&values, o.values_out);
    qk_text_open(&by_pc, o.by_pc_out);
    qk_text_open(&by_family, o.by_family_out);
    qk_text_open(&by_model, o.by_model_out);
    qk_text_open(&training, o.training_out);
    qk_value(&values, "pca_tax_high", "%g", o.high);
    qk_value(&values, "pca_tax_low", "%g", o.low);

    if (o.components) {
        qk_table_file qk, heads_in;
        load_input(&qk, o.components);
        write_by_pc(&values, &by_pc, &qk.src);
        pca_study s;
        load_study(&s, &heads_in, o.heads, &registry.src);
        head_columns c;
        columns_load(&c, &s);
        write_cross_values(&values, &s, &c);
        write_families(&by_family, &s, &c);
        write_models(&by_model, &s, &c);
        columns_free(&c);
        pca_study_free(&s);
        qk_table_file_free(&heads_in);
        qk_table_file_free(&qk);
    } else {
        missing_components(&values);
        qk_value_missing(&values, cross_keys);
        fputs(by_pc_header, by_pc.fp);
        fputs(by_family_header, by_family.fp);
        fputs(by_model_header, by_model.fp);
    }
    if (o.training) {
        qk_table_file in;
        pca_study s;
        load_study(&s, &in, o.training, &registry.src);
        write_training(&values, &training, &s, o.low);
        pca_study_free(&s);
        qk_table_file_free(&in);
    } else {
        qk_value_missing(&values, training_keys);
        fputs(training_header, training.fp);
    }
    qk_text_close(&values);
    qk_text_close(&by_pc);
    qk_text_close(&by_family);
    qk_text_close(&by_model);
    qk_text_close(&training);
    qk_table_file_free(&registry);
    return QK_EXIT_OK;
}
