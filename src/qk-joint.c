/* qk-joint: the joint table of the SmolLM3 training study
 * (results/smollm3_training_progress/joint_rotation_plasticity.csv, the
 * table the thesis compares the checkpoints with): per checkpoint the rotation metrics of
 * model_summary.csv next to the plasticity scalars of
 * smollm3_model_report.csv. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "qk/common.h"
#include "qk/study.h"
#include "qk/table.h"
#include "qk/values.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-joint --summary FILE --plasticity FILE --registry FILE -o OUTPUT\n"
        "\n"
        "Joins, per checkpoint (column model), the rotation summary (mean bias strength,\n"
        "|alpha_K|, |r_k^a|, separation strength, plane variance fraction) with the\n"
        "plasticity report (ap_overall, first/last 20 %%, drop) and writes one CSV row a\n"
        "checkpoint, in the order of the plasticity report, with the registry label and\n"
        "context length. Values are copied as written (round-trip precision).\n"
        "\n"
        "Options:\n"
        "  -s, --summary FILE      model_summary.csv of the rotation stage\n"
        "  -p, --plasticity FILE   smollm3_model_report.csv (or model_report.csv)\n"
        "  -r, --registry FILE     dataset registry (id, label columns)\n"
        "      --prefix P          registry id = P + model (default smollm3-3b-)\n"
        "  -o, --output FILE       table to write (written atomically)\n"
        "  -h, --help              this text\n"
        "      --version           print the version\n"
        "\n"
        "Exit status: 0 success, 1 usage error, 2 bad or unreadable data (a checkpoint\n"
        "missing from one table, a missing column, a cell that is not a number).\n"
        "Example: qk-joint -s results/smollm3_training_progress/model_summary.csv \\\n"
        "           -p results/smollm3_training_progress/smollm3_model_report.csv \\\n"
        "           -r workflow/datasets.tsv -o joint_rotation_plasticity.csv\n");
}

typedef struct options {
    const char *summary, *plasticity, *registry, *prefix, *output;
} options;

static void parse_args(int argc, char **argv, options *o)
{
    enum { OPT_PREFIX = 256, OPT_VERSION };
    static const struct option longopts[] = {
        {"summary", required_argument, NULL, 's'}, {"plasticity", required_argument, NULL, 'p'},
        {"registry", required_argument, NULL, 'r'}, {"prefix", required_argument, NULL, OPT_PREFIX},
        {"output", required_argument, NULL, 'o'},  {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION}, {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->prefix = "smollm3-3b-";
    int c;
    while ((c = getopt_long(argc, argv, "s:p:r:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's': o->summary = optarg; break;
        case 'p': o->plasticity = optarg; break;
        case 'r': o->registry = optarg; break;
        case OPT_PREFIX: o->prefix = optarg; break;
        case 'o': o->output = optarg; break;
        case 'h': usage(stdout); exit(QK_EXIT_OK);
        case OPT_VERSION: printf("qk-joint %s\n", QK_VERSION_STRING); exit(QK_EXIT_OK);
        default: usage(stderr); exit(QK_EXIT_USAGE);
        }
    }
    if (!o->summary || !o->plasticity || !o->registry || !o->output || optind != argc) {
        usage(stderr);
        exit(QK_EXIT_USAGE);
    }
}

/* A numeric cell (nan allowed: a checkpoint without a valid head), as written. */
static const char *number_cell(const qk_src *s, int row, int col)
{
    qk_src_num(s, row, col); /* dies unless a number */
    return qk_table_cell(s->t, row, col);
}

/* Output column, the table it comes from and its column there. */
typedef struct field {
    const char *name;
    int from_summary;
    const char *column;
} field;

static const field fields[] = {
    {"bias_strength", 1, "mean_bias_strength"},
    {"abs_alpha_k", 1, "mean_abs_alpha_k"},
    {"abs_r_k_a", 1, "mean_abs_r_k_a"},
    {"separation_strength", 1, "mean_separation_strength"},
    {"plane_var_fraction", 1, "mean_plane_var_fraction"},
    {"ap_overall", 0, "ap_overall"},
    {"ap_first_20pct", 0, "ap_first_20pct"},
    {"ap_last_20pct", 0, "ap_last_20pct"},
    {"ap_drop", 0, "ap_drop"},
};
#define N_FIELDS (int)(sizeof fields / sizeof fields[0])

static void write_joint(FILE *fp, const options *o, const qk_src *sum, const qk_src *pl,
                        const qk_src *reg)
{
    int s_model = qk_src_col(sum, "model"), p_model = qk_src_col(pl, "model");
    int p_heads = qk_src_col(pl, "n_heads"), p_ctx = qk_src_col(pl, "context_length");
    int col[N_FIELDS];
    for (int f = 0; f < N_FIELDS; f++)
        col[f] = qk_src_col(fields[f].from_summary ? sum : pl, fields[f].column);
    fputs("model,label,context_length,n_heads", fp);
    for (int f = 0; f < N_FIELDS; f++)
        fprintf(fp, ",%s", fields[f].name);
    fputc('\n', fp);
    for (int r = 0; r < pl->t->n_rows; r++) {
        const char *model = qk_table_cell(pl->t, r, p_model);
        int sr = qk_src_find(sum, s_model, model);
        if (sr < 0)
            qk_die(QK_EXIT_DATA, sum->path, "no row for checkpoint '%s' (it is in %s)", model,
                   pl->path);
        char *id = qk_malloc(strlen(o->prefix) + strlen(model) + 1);
        strcpy(id, o->prefix);
        strcat(id, model);
        const char *label = qk_registry_cell(reg, id, "label", model);
        free(id);
        qk_csv_put(fp, model);
        fputc(',', fp);
        qk_csv_put(fp, label);
        fprintf(fp, ",%s,%s", number_cell(pl, r, p_ctx), number_cell(pl, r, p_heads));
        for (int f = 0; f < N_FIELDS; f++)
            fprintf(fp, ",%s", fields[f].from_summary ? number_cell(sum, sr, col[f])
                                                      : number_cell(pl, r, col[f]));
        fputc('\n', fp);
    }
    /* a checkpoint with rotation metrics but no plasticity row is an error too */
    for (int r = 0; r < sum->t->n_rows; r++)
        if (qk_src_find(pl, p_model, qk_table_cell(sum->t, r, s_model)) < 0)
            qk_die(QK_EXIT_DATA, pl->path, "no row for checkpoint '%s' (it is in %s)",
                   qk_table_cell(sum->t, r, s_model), sum->path);
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-joint");
    options o;
    parse_args(argc, argv, &o);
    qk_table_file sum, pl, reg;
    qk_table_file_load(&sum, o.summary);
    qk_table_file_load(&pl, o.plasticity);
    qk_table_file_load(&reg, o.registry);
    if (pl.table.n_rows == 0)
        qk_die(QK_EXIT_DATA, o.plasticity, "no checkpoints");
    /* built in memory first, so that an error leaves no partial file */
    qk_text out;
    qk_text_open(&out, o.output);
    write_joint(out.fp, &o, &sum.src, &pl.src, &reg.src);
    qk_text_close(&out);
    qk_table_file_free(&sum);
    qk_table_file_free(&pl);
    qk_table_file_free(&reg);
    return QK_EXIT_OK;
}
