/* qk-plasticity-summary: the numbers of the report's plasticity section,
 * from the study tables of the plasticity stage and the joint SmolLM3
 * table. Every number the section quotes is written here, formatted for
 * reading; a study not given yields "n/a" values and header-only tables. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/common.h"
#include "qk/study.h"
#include "qk/table.h"
#include "qk/values.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-plasticity-summary [OPTIONS] --registry FILE --values-output FILE\n"
        "\n"
        "Writes the values and tables of the report's plasticity section: the model\n"
        "scalars (ap_overall, first and last 20 %%, AP_drop) by model and by family, the\n"
        "per-length means, the heatmap extremes of the figure models, the correlation\n"
        "of AP_drop with published LongBench-Pro scores, and the SmolLM3 comparison of\n"
        "the long-context checkpoints with the end of pre-training. It also writes, per\n"
        "block of the section, two small HTML fragments that the template includes\n"
        "around the block: empty when the block is part of the run, a note and an HTML\n"
        "comment around it when it is not.\n"
        "\n"
        "Options:\n"
        "  -r, --registry FILE        dataset registry (labels, families)\n"
        "  -b, --benchmarks FILE      published scores (model, benchmark, length, score)\n"
        "  -m, --report FILE          model_report.csv of the cross-model study\n"
        "  -p, --pair2d FILE          model_pair2d.csv of the cross-model study\n"
        "  -w, --weights FILE         head_component_weights.csv of the cross-model study\n"
        "  -j, --joint FILE           joint_rotation_plasticity.csv of the SmolLM3 study\n"
        "  -f, --figures LIST         the figures drawn in this run (\"01 02 ...\")\n"
        "  -o, --values-output FILE   key<TAB>value lines (keys plast_...)\n"
        "      --models-output FILE   scalars by model\n"
        "      --families-output FILE scalars by family\n"
        "      --lengths-output FILE  per-length means by model\n"
        "      --smollm3-output FILE  the joint SmolLM3 table, formatted\n"
        "      --blocks-dir DIR       the HTML fragments (DIR/NAME-begin.html, -end.html)\n"
        "  -h, --help                 this text\n"
        "      --version              print the version\n"
        "\n"
        "Exit status: 0 success, 1 usage error, 2 bad or unreadable data.\n");
}

typedef struct options {
    const char *registry, *benchmarks, *report, *pair2d, *weights, *joint, *figures;
    const char *values_out, *models_out, *families_out, *lengths_out, *smollm3_out, *blocks_dir;
} options;

static void parse_args(int argc, char **argv, options *o)
{
    enum { OPT_MODELS = 256, OPT_FAMILIES, OPT_LENGTHS, OPT_SMOL, OPT_BLOCKS, OPT_VERSION };
    static const struct option longopts[] = {
        {"registry", required_argument, NULL, 'r'},
        {"benchmarks", required_argument, NULL, 'b'},
        {"report", required_argument, NULL, 'm'},
        {"pair2d", required_argument, NULL, 'p'},
        {"weights", required_argument, NULL, 'w'},
        {"joint", required_argument, NULL, 'j'},
        {"figures", required_argument, NULL, 'f'},
        {"values-output", required_argument, NULL, 'o'},
        {"models-output", required_argument, NULL, OPT_MODELS},
        {"families-output", required_argument, NULL, OPT_FAMILIES},
        {"lengths-output", required_argument, NULL, OPT_LENGTHS},
        {"smollm3-output", required_argument, NULL, OPT_SMOL},
        {"blocks-dir", required_argument, NULL, OPT_BLOCKS},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->figures = "";
    int c;
    while ((c = getopt_long(argc, argv, "r:b:m:p:w:j:f:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'r': o->registry = optarg; break;
        case 'b': o->benchmarks = optarg; break;
        case 'm': o->report = optarg; break;
        case 'p': o->pair2d = optarg; break;
        case 'w': o->weights = optarg; break;
        case 'j': o->joint = optarg; break;
        case 'f': o->figures = optarg; break;
        case 'o': o->values_out = optarg; break;
        case OPT_MODELS: o->models_out = optarg; break;
        case OPT_FAMILIES: o->families_out = optarg; break;
        case OPT_LENGTHS: o->lengths_out = optarg; break;
        case OPT_SMOL: o->smollm3_out = optarg; break;
        case OPT_BLOCKS: o->blocks_dir = optarg; break;
        case 'h': usage(stdout); exit(QK_EXIT_OK);
        case OPT_VERSION: printf("qk-plasticity-summary %s\n", QK_VERSION_STRING); exit(QK_EXIT_OK);
        default: usage(stderr); exit(QK_EXIT_USAGE);
        }
    }
    if (!o->registry || !o->values_out || optind != argc) {
        usage(stderr);
        exit(QK_EXIT_USAGE);
    }
}

/* ---- the cross-model study ------------------------------------------------------- */

#define N_LEN 5
static const char *const len_columns[N_LEN] = {"len_1_16", "len_1_8", "len_1_4", "len_1_2",
                                               "len_1_1"};

typedef struct model {
    const char *id, *label, *family;
    int heads;
    double ap, first, last, drop, len[N_LEN], context, lbp, bin_factor;
} model;

typedef struct cross {
    model *m;
    int n;
} cross;

static double published_lbp(const qk_src *bench, const char *id)
{
    if (!bench)
        return NAN;
    int c_m = qk_src_col(bench, "model"), c_b = qk_src_col(bench, "benchmark");
    int c_l = qk_src_col(bench, "length"), c_s = qk_src_col(bench, "score");
    for (int r = 0; r < bench->t->n_rows; r++)
        if (strcmp(qk_table_cell(bench->t, r, c_m), id) == 0 &&
            strcmp(qk_table_cell(bench->t, r, c_b), "longbench-pro") == 0 &&
            strcmp(qk_table_cell(bench->t, r, c_l), "overall") == 0)
            return qk_src_num(bench, r, c_s);
    return NAN;
}

static void load_cross(const qk_src *rep, const qk_src *reg, const qk_src *bench, cross *x)
{
    int c_m = qk_src_col(rep, "model"), c_h = qk_src_col(rep, "n_heads");
    int c_ap = qk_src_col(rep, "ap_overall");
    int c_f = qk_src_col(rep, "ap_first_20pct"), c_l = qk_src_col(rep, "ap_last_20pct");
    int c_d = qk_src_col(rep, "ap_drop"), c_ctx = qk_src_col(rep, "context_length");
    int c_bucket = qk_src_col(rep, "bucket_size"), c_width = qk_src_col(rep, "bin_width");
    int c_len[N_LEN];
    for (int i = 0; i < N_LEN; i++)
        c_len[i] = qk_src_col(rep, len_columns[i]);
    x->n = rep->t->n_rows;
    x->m = qk_calloc((size_t)(x->n + 1), sizeof *x->m);
    for (int r = 0; r < x->n; r++) {
        model *m = &x->m[r];
        m->id = qk_table_cell(rep->t, r, c_m);
        m->label = qk_registry_cell(reg, m->id, "label", m->id);
        m->family = qk_registry_cell(reg, m->id, "family", "other");
        m->heads = (int)qk_src_num(rep, r, c_h);
        m->ap = qk_src_num(rep, r, c_ap);
        m->first = qk_src_num(rep, r, c_f);
        m->last = qk_src_num(rep, r, c_l);
        m->drop = qk_src_num(rep, r, c_d);
        m->context = qk_src_num(rep, r, c_ctx);
        m->bin_factor = qk_src_num(rep, r, c_bucket) / qk_src_num(rep, r, c_width);
        for (int i = 0; i < N_LEN; i++)
            m->len[i] = qk_src_num(rep, r, c_len[i]);
        m->lbp = published_lbp(bench, m->id);
    }
}

static const model *find_model(const cross *x, const char *id)
{
    for (int i = 0; i < x->n; i++)
        if (strcmp(x->m[i].id, id) == 0)
            return &x->m[i];
    return NULL;
}

/* Pearson r of (x, y) over models with both finite; returns the count. */
static int pearson(const cross *x, double (*fx)(const model *), double *r)
{
    double mx = 0, my = 0, sxx = 0, syy = 0, sxy = 0;
    int n = 0;
    for (int i = 0; i < x->n; i++)
        if (isfinite(x->m[i].lbp) && isfinite(fx(&x->m[i]))) {
            mx += fx(&x->m[i]);
            my += x->m[i].lbp;
            n++;
        }
    *r = NAN;
    if (n < 3)
        return n;
    mx /= n;
    my /= n;
    for (int i = 0; i < x->n; i++)
        if (isfinite(x->m[i].lbp) && isfinite(fx(&x->m[i]))) {
            double dx = fx(&x->m[i]) - mx, dy = x->m[i].lbp - my;
            sxx += dx * dx;
            syy += dy * dy;
            sxy += dx * dy;
        }
    if (sxx > 0 && syy > 0)
        *r = sxy / sqrt(sxx * syy);
    return n;
}

static double get_drop(const model *m) { return m->drop; }
static double get_ap(const model *m) { return m->ap; }
static double get_last(const model *m) { return m->last; }

static void family_name(const char *family, char *out, size_t cap)
{
    snprintf(out, cap, "%s", family);
    if (out[0] >= 'a' && out[0] <= 'z')
        out[0] = (char)(out[0] - 'a' + 'A');
}

static void models_table(const cross *x, const char *path)
{
    qk_text s;
    qk_text_open(&s, path);
    fputs("Model\tFamily\tHeads\tAP overall\tFirst 20 %\tLast 20 %\tAP_drop\t"
          "LongBench-Pro (published)\n", s.fp);
    for (int i = 0; i < x->n; i++) {
        const model *m = &x->m[i];
        char fam[64], a[32], f[32], l[32], d[32], b[32];
        family_name(m->family, fam, sizeof fam);
        fprintf(s.fp, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", m->label, fam, m->heads,
                qk_format_num(a, sizeof a, "%.3f", m->ap),
                qk_format_num(f, sizeof f, "%.3f", m->first),
                qk_format_num(l, sizeof l, "%.3f", m->last),
                qk_format_num(d, sizeof d, "%.3f", m->drop),
                isfinite(m->lbp) ? qk_format_num(b, sizeof b, "%.2f", m->lbp) : "");
    }
    qk_text_close(&s);
}

static void lengths_table(const cross *x, const char *path)
{
    qk_text s;
    qk_text_open(&s, path);
    fputs("Model\tContext\t0 to L/16\tL/16 to L/8\tL/8 to L/4\tL/4 to L/2\tL/2 to L\n", s.fp);
    for (int i = 0; i < x->n; i++) {
        const model *m = &x->m[i];
        fprintf(s.fp, "%s\t%.0f", m->label, m->context);
        for (int k = 0; k < N_LEN; k++) {
            char buf[32];
            fprintf(s.fp, "\t%s", qk_format_num(buf, sizeof buf, "%.3f", m->len[k]));
        }
        fputc('\n', s.fp);
    }
    qk_text_close(&s);
}

#define MAX_FAMILIES 64

typedef struct family {
    const char *name;
    int n;
    double ap, first, last, drop, drop_lo, drop_hi;
} family;

/* Families in order of first appearance; returns their number. */
static int families_of(const cross *x, family *fam)
{
    int n = 0;
    for (int i = 0; i < x->n; i++) {
        const model *m = &x->m[i];
        int f = 0;
        while (f < n && strcmp(fam[f].name, m->family) != 0)
            f++;
        if (f == n && n == MAX_FAMILIES)
            qk_die(QK_EXIT_DATA, NULL, "more than %d families", MAX_FAMILIES);
        if (f == n)
            fam[n++] = (family){m->family, 0, 0, 0, 0, 0, INFINITY, -INFINITY};
        fam[f].n++;
        fam[f].ap += m->ap;
        fam[f].first += m->first;
        fam[f].last += m->last;
        fam[f].drop += m->drop;
        fam[f].drop_lo = fmin(fam[f].drop_lo, m->drop);
        fam[f].drop_hi = fmax(fam[f].drop_hi, m->drop);
    }
    for (int f = 0; f < n; f++) {
        fam[f].ap /= fam[f].n;
        fam[f].first /= fam[f].n;
        fam[f].last /= fam[f].n;
        fam[f].drop /= fam[f].n;
    }
    return n;
}

static void families_table(const family *fam, int n, const char *path)
{
    qk_text s;
    qk_text_open(&s, path);
    fputs("Family\tModels\tAP overall\tFirst 20 %\tLast 20 %\tAP_drop (mean)\t"
          "AP_drop (lowest to highest)\n", s.fp);
    for (int f = 0; f < n; f++) {
        char name[64];
        family_name(fam[f].name, name, sizeof name);
        fprintf(s.fp, "%s\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f to %.3f\n", name, fam[f].n, fam[f].ap,
                fam[f].first, fam[f].last, fam[f].drop, fam[f].drop_lo, fam[f].drop_hi);
    }
    qk_text_close(&s);
}

static void cross_values(qk_text *v, const cross *x, const family *fam, int n_fam)
{
    int heads = 0;
    const model *ap_lo = NULL, *ap_hi = NULL, *dr_lo = NULL, *dr_hi = NULL;
    for (int i = 0; i < x->n; i++) {
        const model *m = &x->m[i];
        heads += m->heads;
        if (!ap_lo || m->ap < ap_lo->ap)
            ap_lo = m;
        if (!ap_hi || m->ap > ap_hi->ap)
            ap_hi = m;
        if (!dr_lo || m->drop < dr_lo->drop)
            dr_lo = m;
        if (!dr_hi || m->drop > dr_hi->drop)
            dr_hi = m;
    }
    int below = 0;
    for (int i = 0; i < x->n; i++)
        below += x->m[i].last < x->m[i].first;
    qk_value(v, "plast_models", "%d", x->n);
    qk_value(v, "plast_heads", "%d", heads);
    qk_value(v, "plast_families", "%d", n_fam);
    qk_value(v, "plast_models_falling", "%d", below);
    /* bins per capture bucket, when every model has the same */
    int same = x->n > 0;
    for (int i = 1; i < x->n; i++)
        same = same && fabs(x->m[i].bin_factor - x->m[0].bin_factor) < 1e-9;
    if (same)
        qk_value(v, "plast_bin_factor", "%.0f", x->m[0].bin_factor);
    else
        qk_value(v, "plast_bin_factor", "n/a");
    qk_value(v, "plast_ap_low_model", "%s", ap_lo ? ap_lo->label : "n/a");
    qk_value_num(v, "plast_ap_low", "%.3f", ap_lo ? ap_lo->ap : NAN);
    qk_value(v, "plast_ap_high_model", "%s", ap_hi ? ap_hi->label : "n/a");
    qk_value_num(v, "plast_ap_high", "%.3f", ap_hi ? ap_hi->ap : NAN);
    qk_value(v, "plast_drop_low_model", "%s", dr_lo ? dr_lo->label : "n/a");
    qk_value_num(v, "plast_drop_low", "%.3f", dr_lo ? dr_lo->drop : NAN);
    qk_value(v, "plast_drop_high_model", "%s", dr_hi ? dr_hi->label : "n/a");
    qk_value_num(v, "plast_drop_high", "%.3f", dr_hi ? dr_hi->drop : NAN);
    const family *f_lo = NULL, *f_hi = NULL;
    for (int f = 0; f < n_fam; f++) {
        if (!f_lo || fam[f].drop < f_lo->drop)
            f_lo = &fam[f];
        if (!f_hi || fam[f].drop > f_hi->drop)
            f_hi = &fam[f];
    }
    char name[64];
    family_name(f_lo ? f_lo->name : "n/a", name, sizeof name);
    qk_value(v, "plast_family_drop_low", "%s", name);
    qk_value_num(v, "plast_family_drop_low_value", "%.3f", f_lo ? f_lo->drop : NAN);
    family_name(f_hi ? f_hi->name : "n/a", name, sizeof name);
    qk_value(v, "plast_family_drop_high", "%s", name);
    qk_value_num(v, "plast_family_drop_high_value", "%.3f", f_hi ? f_hi->drop : NAN);
    double r;
    int n = pearson(x, get_drop, &r);
    qk_value(v, "plast_lbp_models", "%d", n);
    qk_value_num(v, "plast_r_drop_lbp", "%.2f", r);
    pearson(x, get_ap, &r);
    qk_value_num(v, "plast_r_ap_lbp", "%.2f", r);
    pearson(x, get_last, &r);
    qk_value_num(v, "plast_r_last_lbp", "%.2f", r);
}

/* ---- the figure models ---------------------------------------------------------------- */

/* The model of each single-model figure (the figure ids of qk-plot). */
static const struct {
    const char *fig, *model;
} figure_models[] = {{"01", "ministral3-14b"}, {"02", "qwen3-14b"}, {"03", "llama3.2-3b"},
                     {"04", "llama3.2-11b"},   {"05", "ministral3-3b"}, {"06", "qwen3-4b"},
                     {"07", "llama3.2-3b"},    {"08", "qwen3-14b"}};
#define N_FIGURE_MODELS (int)(sizeof figure_models / sizeof figure_models[0])

static const char *figure_model(const char *fig)
{
    for (int i = 0; i < N_FIGURE_MODELS; i++)
        if (strcmp(figure_models[i].fig, fig) == 0)
            return figure_models[i].model;
    return "";
}

/* Heatmap cells of a model: mean of the smallest inter-key distance column
 * and of the largest one, and the extremes. */
static void heatmap_values(qk_text *v, const char *key, const qk_src *pair2d, const char *id)
{
    double near = 0, far = 0, lo = INFINITY, hi = -INFINITY;
    int n_near = 0, n_far = 0, far_bin = -1;
    if (pair2d) {
        int c_m = qk_src_col(pair2d, "model"), c_d = qk_src_col(pair2d, "dist_bin");
        int c_ap = qk_src_col(pair2d, "ap");
        for (int pass = 0; pass < 2; pass++)
            for (int r = 0; r < pair2d->t->n_rows; r++) {
                if (strcmp(qk_table_cell(pair2d->t, r, c_m), id) != 0)
                    continue;
                double ap = qk_src_num(pair2d, r, c_ap);
                int d = (int)qk_src_num(pair2d, r, c_d);
                if (!isfinite(ap))
                    continue;
                if (pass == 0) {
                    far_bin = d > far_bin ? d : far_bin;
                    lo = fmin(lo, ap);
                    hi = fmax(hi, ap);
                    if (d == 0) {
                        near += ap;
                        n_near++;
                    }
                } else if (d == far_bin) {
                    far += ap;
                    n_far++;
                }
            }
    }
    char k[128];
    snprintf(k, sizeof k, "%s_near", key);
    qk_value_num(v, k, "%.3f", n_near ? near / n_near : NAN);
    snprintf(k, sizeof k, "%s_far", key);
    qk_value_num(v, k, "%.3f", n_far ? far / n_far : NAN);
    snprintf(k, sizeof k, "%s_min", key);
    qk_value_num(v, k, "%.3f", isfinite(lo) ? lo : NAN);
    snprintf(k, sizeof k, "%s_max", key);
    qk_value_num(v, k, "%.3f", isfinite(hi) ? hi : NAN);
}

/* Mean component weights of a model over its heads: the share of the
 * first half of the head dimensions and the peak of each half. */
static void weight_values(qk_text *v, const qk_src *w, const char *id)
{
    double *sum = NULL;
    int *count = NULL, d = 0;
    if (w) {
        int c_m = qk_src_col(w, "model"), c_c = qk_src_col(w, "component");
        int c_w = qk_src_col(w, "component_weight");
        for (int r = 0; r < w->t->n_rows; r++) {
            if (strcmp(qk_table_cell(w->t, r, c_m), id) != 0)
                continue;
            double c = qk_src_num(w, r, c_c);
            if (!(c >= 0 && c < 65536 && c == floor(c)))
                qk_die(QK_EXIT_DATA, w->path, "line %d: bad component %g", r + 2, c);
            if (c + 1 > d) {
                sum = qk_realloc(sum, (size_t)(c + 1) * sizeof *sum);
                count = qk_realloc(count, (size_t)(c + 1) * sizeof *count);
                for (int k = d; k <= (int)c; k++) {
                    sum[k] = 0;
                    count[k] = 0;
                }
                d = (int)c + 1;
            }
            sum[(int)c] += qk_src_num(w, r, c_w);
            count[(int)c]++;
        }
    }
    double share = 0, total = 0;
    int peak[2] = {0, d / 2};
    for (int c = 0; c < d; c++) {
        sum[c] = count[c] ? sum[c] / count[c] : 0;
        total += sum[c];
        if (c < d / 2)
            share += sum[c];
    }
    for (int c = 0; c < d; c++)
        if (sum[c] > sum[peak[c >= d / 2]])
            peak[c >= d / 2] = c;
    int ok = d >= 2 && total > 0;
    qk_value_num(v, "plast_fig08_share_low", "%.1f", ok ? 100 * share / total : NAN); /* percent */
    qk_value_num(v, "plast_fig08_share_high", "%.1f", ok ? 100 - 100 * share / total : NAN);
    qk_value_num(v, "plast_fig08_half", "%.0f", ok ? d / 2 : NAN);
    qk_value_num(v, "plast_fig08_half_last", "%.0f", ok ? d / 2 - 1 : NAN);
    qk_value_num(v, "plast_fig08_top_dim", "%.0f", ok ? d - 1 : NAN);
    qk_value_num(v, "plast_fig08_peak_low", "%.0f", ok ? peak[0] : NAN);
    qk_value_num(v, "plast_fig08_peak_high", "%.0f", ok ? peak[1] : NAN);
    qk_value_num(v, "plast_fig08_peak_low_value", "%.4f", ok ? sum[peak[0]] : NAN);
    qk_value_num(v, "plast_fig08_peak_high_value", "%.4f", ok ? sum[peak[1]] : NAN);
    free(sum);
    free(count);
}

static void figure_values(qk_text *v, const cross *x, const qk_src *reg, const qk_src *pair2d)
{
    for (int i = 0; i < N_FIGURE_MODELS; i++) {
        const model *m = x ? find_model(x, figure_models[i].model) : NULL;
        char key[64];
        snprintf(key, sizeof key, "plast_fig%s_model", figure_models[i].fig);
        qk_value(v, key, "%s", qk_registry_cell(reg, figure_models[i].model, "label",
                                        figure_models[i].model));
        const char *names[4] = {"first", "last", "drop", "ap"};
        double vals[4] = {m ? m->first : NAN, m ? m->last : NAN, m ? m->drop : NAN,
                          m ? m->ap : NAN};
        for (int k = 0; k < 4; k++) {
            snprintf(key, sizeof key, "plast_fig%s_%s", figure_models[i].fig, names[k]);
            qk_value_num(v, key, "%.3f", vals[k]);
        }
        if (figure_models[i].fig[1] <= '4' && figure_models[i].fig[0] == '0') {
            snprintf(key, sizeof key, "plast_fig%s_cells", figure_models[i].fig);
            heatmap_values(v, key, m ? pair2d : NULL, figure_models[i].model);
        }
    }
}

/* ---- SmolLM3 ------------------------------------------------------------------------------ */

typedef struct ckpt {
    const char *label;
    double context, bias, alpha_k, r_k, sep, plane, ap, first, last, drop;
} ckpt;

static int load_joint(const qk_src *j, ckpt **out)
{
    static const char *const cols[] = {"context_length", "bias_strength", "abs_alpha_k",
                                       "abs_r_k_a", "separation_strength", "plane_var_fraction",
                                       "ap_overall", "ap_first_20pct", "ap_last_20pct", "ap_drop"};
    int c_label = qk_src_col(j, "label"), c[10];
    for (int i = 0; i < 10; i++)
        c[i] = qk_src_col(j, cols[i]);
    ckpt *cp = qk_calloc((size_t)(j->t->n_rows + 1), sizeof *cp);
    for (int r = 0; r < j->t->n_rows; r++) {
        double x[10];
        for (int i = 0; i < 10; i++)
            x[i] = qk_src_num(j, r, c[i]);
        cp[r] = (ckpt){qk_table_cell(j->t, r, c_label), x[0], x[1], x[2], x[3], x[4], x[5],
                       x[6], x[7], x[8], x[9]};
    }
    *out = cp;
    return j->t->n_rows;
}

static void smollm3_table(const ckpt *cp, int n, const char *path)
{
    qk_text s;
    qk_text_open(&s, path);
    fputs("Checkpoint\tContext\tbias strength\t|alpha_K|\t|r_k^a|\tsep. strength\tplane var.\t"
          "AP overall\tFirst 20 %\tLast 20 %\tAP_drop\n", s.fp);
    for (int i = 0; i < n; i++)
        fprintf(s.fp, "%s\t%.0f\t%.4f\t%.2e\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n",
                cp[i].label, cp[i].context, cp[i].bias, cp[i].alpha_k, cp[i].r_k, cp[i].sep,
                cp[i].plane, cp[i].ap, cp[i].first, cp[i].last, cp[i].drop);
    qk_text_close(&s);
}

/* The verdict on the question of the study, from the numbers. */
static const char *smollm3_conclusion(int collapse, int first_up, int last_up)
{
    if (!collapse)
        return "The per-token bias does not collapse at the long-context checkpoints of these "
               "data, so they cannot show what such a collapse does to plasticity.";
    if (first_up && !last_up)
        return "In these data the collapse of the per-token bias thus comes with recovered "
               "near-position plasticity (first 20 %) but not distant-position plasticity "
               "(last 20 %).";
    if (first_up && last_up)
        return "In these data the collapse of the per-token bias thus comes with recovered "
               "plasticity at both ends of the context, near and distant.";
    if (!first_up && last_up)
        return "In these data the collapse of the per-token bias thus comes with recovered "
               "distant-position plasticity (last 20 %) but not near-position plasticity "
               "(first 20 %).";
    return "In these data the collapse of the per-token bias thus comes with recovered "
           "plasticity neither near (first 20 %) nor distant (last 20 %).";
}

/* Returns whether the run has checkpoints to compare (pre-training and long-context). */
static int smollm3_values(qk_text *v, const ckpt *cp, int n)
{
    /* the pre-training checkpoints: those at the smallest context length;
     * the end of pre-training is the last of them; the long-context
     * checkpoints are the others */
    double min_ctx = INFINITY;
    for (int i = 0; i < n; i++)
        min_ctx = fmin(min_ctx, cp[i].context);
    int base = -1, n_lc = 0, first_lc = -1, last_lc = -1, peak = -1;
    double lc_bias = 0, lc_first = 0, lc_last = 0, lc_drop = 0;
    for (int i = 0; i < n; i++) {
        if (cp[i].context == min_ctx) {
            base = i;
            if (peak < 0 || cp[i].bias > cp[peak].bias)
                peak = i;
            continue;
        }
        if (first_lc < 0)
            first_lc = i;
        last_lc = i;
        n_lc++;
        lc_bias += cp[i].bias;
        lc_first += cp[i].first;
        lc_last += cp[i].last;
        lc_drop += cp[i].drop;
    }
    int ok = n > 0 && base >= 0 && n_lc > 0;
    if (ok) {
        lc_bias /= n_lc;
        lc_first /= n_lc;
        lc_last /= n_lc;
        lc_drop /= n_lc;
    }
    const ckpt *b = ok ? &cp[base] : NULL;
    qk_value(v, "plast_smol_checkpoints", "%d", n);
    qk_value(v, "plast_smol_lc_checkpoints", "%d", ok ? n_lc : 0);
    qk_value(v, "plast_smol_first_label", "%s", n ? cp[0].label : "n/a");
    qk_value_num(v, "plast_smol_first_bias", "%.3g", n ? cp[0].bias : NAN);
    qk_value(v, "plast_smol_peak_label", "%s", ok ? cp[peak].label : "n/a");
    qk_value_num(v, "plast_smol_peak_bias", "%.3g", ok ? cp[peak].bias : NAN);
    qk_value(v, "plast_smol_base_label", "%s", ok ? b->label : "n/a");
    qk_value(v, "plast_smol_lc_range", "%s to %s", ok ? cp[first_lc].label : "n/a",
             ok ? cp[last_lc].label : "n/a");
    qk_value_num(v, "plast_smol_base_bias", "%.3g", ok ? b->bias : NAN);
    qk_value_num(v, "plast_smol_lc_bias", "%.3g", ok ? lc_bias : NAN);
    qk_value_num(v, "plast_smol_bias_factor", "%.1f", ok && lc_bias != 0 ? b->bias / lc_bias : NAN);
    qk_value_num(v, "plast_smol_base_first", "%.3f", ok ? b->first : NAN);
    qk_value_num(v, "plast_smol_lc_first", "%.3f", ok ? lc_first : NAN);
    qk_value_num(v, "plast_smol_base_last", "%.3f", ok ? b->last : NAN);
    qk_value_num(v, "plast_smol_lc_last", "%.3f", ok ? lc_last : NAN);
    qk_value_num(v, "plast_smol_base_drop", "%.3f", ok ? b->drop : NAN);
    qk_value_num(v, "plast_smol_lc_drop", "%.3f", ok ? lc_drop : NAN);
    qk_value_num(v, "plast_smol_drop_factor", "%.1f", ok && b->drop != 0 ? lc_drop / b->drop : NAN);
    /* a collapse: the long-context mean is below half the end of pre-training */
    int collapse = ok && fabs(lc_bias) < 0.5 * fabs(b->bias);
    int first_up = ok && lc_first > b->first, last_up = ok && lc_last > b->last;
    qk_value(v, "plast_smol_bias_verb", "%s",
             !ok ? "n/a"
             : collapse ? "collapses"
             : fabs(lc_bias) < fabs(b->bias) ? "falls" : "does not fall");
    qk_value(v, "plast_smol_first_verb", "%s", !ok ? "n/a" : first_up ? "rises" : "falls");
    qk_value(v, "plast_smol_last_verb", "%s", !ok ? "n/a" : last_up ? "rises" : "falls");
    qk_value(v, "plast_smol_drop_verb", "%s",
             !ok ? "n/a" : lc_drop > b->drop ? "grows" : "shrinks");
    qk_value(v, "plast_smol_conclusion", "%s",
             ok ? smollm3_conclusion(collapse, first_up, last_up) : "n/a");
    return ok;
}

/* ---- blocks of the section ------------------------------------------------------------ */

/* How a block of the section is rendered. A block inside a hidden one gets
 * no fragments of its own: HTML comments do not nest. */
enum { BLOCK_SHOWN, BLOCK_HIDDEN, BLOCK_IN_HIDDEN };

/* Writes DIR/NAME-begin.html and DIR/NAME-end.html: empty unless the block
 * is hidden; then an HTML comment around the block, after the note (if any). */
static void block(const char *dir, const char *name, int state, const char *note)
{
    char *path = qk_malloc(strlen(dir) + strlen(name) + 16);
    qk_text s;
    sprintf(path, "%s/%s-begin.html", dir, name);
    qk_text_open(&s, path);
    if (state == BLOCK_HIDDEN && note)
        fprintf(s.fp, "<p class=\"plast-absent\">%s</p>\n", note);
    if (state == BLOCK_HIDDEN)
        fputs("<!--\n", s.fp);
    qk_text_close(&s);
    sprintf(path, "%s/%s-end.html", dir, name);
    qk_text_open(&s, path);
    if (state == BLOCK_HIDDEN)
        fputs("-->\n", s.fp);
    qk_text_close(&s);
    free(path);
}

static int figure_drawn(const char *list, const char *fig)
{
    size_t n = strlen(fig);
    for (const char *p = list; (p = strstr(p, fig)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
            return 1;
    return 0;
}

static void write_blocks(const options *o, int have_cross, int have_smol, int can_compare)
{
    qk_err err;
    if (qk_mkdirs(o->blocks_dir, &err) != 0)
        qk_die(QK_EXIT_DATA, o->blocks_dir, "%s", err.msg);
    block(o->blocks_dir, "cross", have_cross ? BLOCK_SHOWN : BLOCK_HIDDEN,
          "The cross-model part is not in this run: none of its datasets was analysed.");
    block(o->blocks_dir, "smollm3", have_smol ? BLOCK_SHOWN : BLOCK_HIDDEN,
          "The SmolLM3-3B part is not in this run: none of its checkpoints was analysed.");
    block(o->blocks_dir, "smollm3-compare",
          !have_smol ? BLOCK_IN_HIDDEN : can_compare ? BLOCK_SHOWN : BLOCK_HIDDEN,
          "(The comparison of the long-context checkpoints with the end of pre-training needs "
          "checkpoints of both kinds; this run does not have them.)");
    for (int f = 1; f <= 10; f++) {
        char fig[8], name[32], note[160];
        snprintf(fig, sizeof fig, "%02d", f);
        snprintf(name, sizeof name, "fig%s", fig);
        snprintf(note, sizeof note,
                 "(Figure %s of the study is not drawn in this run: the datasets it shows were "
                 "not analysed.)", fig);
        int parent = f == 9 ? have_smol : have_cross; /* figure 09 is in the SmolLM3 part */
        int state = !parent ? BLOCK_IN_HIDDEN
                    : figure_drawn(o->figures, fig) ? BLOCK_SHOWN : BLOCK_HIDDEN;
        block(o->blocks_dir, name, state, note);
        /* the figure's numbers in the text, left out silently with it */
        snprintf(name, sizeof name, "fig%s-numbers", fig);
        block(o->blocks_dir, name, state, NULL);
    }
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-plasticity-summary");
    options o;
    parse_args(argc, argv, &o);
    qk_table_file reg, bench, rep, pair2d, weights, joint;
    qk_table_file_load(&reg, o.registry);
    if (o.benchmarks)
        qk_table_file_load(&bench, o.benchmarks);
    if (o.pair2d)
        qk_table_file_load(&pair2d, o.pair2d);
    if (o.weights)
        qk_table_file_load(&weights, o.weights);
    cross x = {NULL, 0};
    family fam[MAX_FAMILIES];
    int n_fam = 0;
    if (o.report) {
        qk_table_file_load(&rep, o.report);
        load_cross(&rep.src, &reg.src, o.benchmarks ? &bench.src : NULL, &x);
        n_fam = families_of(&x, fam);
    }
    ckpt *cp = NULL;
    int n_cp = 0;
    if (o.joint) {
        qk_table_file_load(&joint, o.joint);
        n_cp = load_joint(&joint.src, &cp);
    }
    qk_text v;
    qk_text_open(&v, o.values_out);
    cross_values(&v, &x, fam, n_fam);
    figure_values(&v, o.report ? &x : NULL, &reg.src, o.pair2d ? &pair2d.src : NULL);
    weight_values(&v, o.weights ? &weights.src : NULL, figure_model("08"));
    int can_compare = smollm3_values(&v, cp, n_cp);
    qk_text_close(&v);
    if (o.models_out)
        models_table(&x, o.models_out);
    if (o.lengths_out)
        lengths_table(&x, o.lengths_out);
    if (o.families_out)
        families_table(fam, n_fam, o.families_out);
    if (o.smollm3_out)
        smollm3_table(cp, n_cp, o.smollm3_out);
    if (o.blocks_dir)
        write_blocks(&o, x.n > 0, n_cp > 0, can_compare);
    free(x.m);
    free(cp);
    return QK_EXIT_OK;
}
