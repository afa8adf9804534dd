/* qk-joint: the joint table of the SmolLM3 training study
 * (results/smollm3_training_progress/joint_rotation_plasticity.csv, the
 * table the thesis compares the checkpoints with): per checkpoint the rotation metrics of
 * model_summary.csv next to the plasticity scalars of
 * smollm3_model_report.csv. */
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/study.h"
#include "qk/table.h"
#include "qk/values.h"

enum { OPT_PREFIX = QK_KEY_FIRST };

static const qk_option options_table[] = {
    {'s', "summary", "FILE", "model_summary.csv of the rotation stage"},
    {'p', "plasticity", "FILE", "smollm3_model_report.csv (or model_report.csv)"},
    {'r', "registry", "FILE", "dataset registry (id, label columns)"},
    {OPT_PREFIX, "prefix", "P", "registry id = P + model (default smollm3-3b-)"},
    QK_OPTION_OUTPUT("table to write (written atomically)"),
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-joint", "qk-joint --summary FILE --plasticity FILE --registry FILE -o OUTPUT",
    "Joins, per checkpoint (column model), the rotation summary (mean bias strength,\n"
    "|alpha_K|, |r_k^a|, separation strength, plane variance fraction) with the\n"
    "plasticity report (ap_overall, first/last 20 %, drop) and writes one CSV row a\n"
    "checkpoint, in the order of the plasticity report, with the registry label and\n"
    "context length. Values are copied as written (round-trip precision).\n",
    options_table,
    "a checkpoint missing from one table, a missing column, a cell that is not a number",
    "qk-joint -s results/smollm3_training_progress/model_summary.csv \\\n"
    "  -p results/smollm3_training_progress/smollm3_model_report.csv \\\n"
    "  -r workflow/datasets.tsv -o joint_rotation_plasticity.csv", NULL};

typedef struct options {
    const char *summary, *plasticity, *registry, *prefix, *output;
} options;

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->prefix = "smollm3-3b-";
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case 's': o->summary = value; break;
        case 'p': o->plasticity = value; break;
        case 'r': o->registry = value; break;
        case OPT_PREFIX: o->prefix = value; break;
        }
    }
    o->output = a.output;
    if (!o->summary || !o->plasticity || !o->registry || !o->output)
        qk_usage_error(&program);
    qk_args_operands(&a, 0, 0);
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
