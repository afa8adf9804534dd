/* qk-joint: the joint table of the SmolLM3 training study (spec
 * plasticity.md 8, table 8.1): per checkpoint the rotation metrics of
 * model_summary.csv next to the plasticity scalars of
 * smollm3_model_report.csv. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "qk/common.h"
#include "qk/table.h"

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

typedef struct source {
    const char *path;
    qk_table t;
} source;

static void load(source *s, const char *path)
{
    qk_err err;
    s->path = path;
    if (qk_table_load(path, &s->t, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
}

static int column(const source *s, const char *name)
{
    int c = qk_table_column(&s->t, name);
    if (c < 0)
        qk_die(QK_EXIT_DATA, s->path, "no column '%s'", name);
    return c;
}

/* Row whose column col equals key, or -1. */
static int find_row(const source *s, int col, const char *key)
{
    for (int r = 0; r < s->t.n_rows; r++)
        if (strcmp(qk_table_cell(&s->t, r, col), key) == 0)
            return r;
    return -1;
}

/* A numeric cell (nan allowed: a checkpoint without a valid head), as written. */
static const char *number_cell(const source *s, int row, int col)
{
    const char *cell = qk_table_cell(&s->t, row, col);
    char *end;
    strtod(cell, &end);
    if (end == cell || *end)
        qk_die(QK_EXIT_DATA, s->path, "line %d, column %s: '%s' is not a number", row + 2,
               s->t.header[col], cell);
    return cell;
}

/* Text for a CSV cell, quoted when it holds a separator or a quote. */
static void put_text(FILE *fp, const char *text)
{
    if (!strpbrk(text, ",\"\n")) {
        fputs(text, fp);
        return;
    }
    fputc('"', fp);
    for (; *text; text++) {
        if (*text == '"')
            fputc('"', fp);
        fputc(*text, fp);
    }
    fputc('"', fp);
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

static void write_joint(FILE *fp, const options *o, const source *sum, const source *pl,
                        const source *reg)
{
    int s_model = column(sum, "model"), p_model = column(pl, "model");
    int p_heads = column(pl, "n_heads"), p_ctx = column(pl, "context_length");
    int r_id = column(reg, "id"), r_label = column(reg, "label");
    int col[N_FIELDS];
    for (int f = 0; f < N_FIELDS; f++)
        col[f] = column(fields[f].from_summary ? sum : pl, fields[f].column);
    fputs("model,label,context_length,n_heads", fp);
    for (int f = 0; f < N_FIELDS; f++)
        fprintf(fp, ",%s", fields[f].name);
    fputc('\n', fp);
    for (int r = 0; r < pl->t.n_rows; r++) {
        const char *model = qk_table_cell(&pl->t, r, p_model);
        int sr = find_row(sum, s_model, model);
        if (sr < 0)
            qk_die(QK_EXIT_DATA, sum->path, "no row for checkpoint '%s' (it is in %s)", model,
                   pl->path);
        char *id = qk_malloc(strlen(o->prefix) + strlen(model) + 1);
        strcpy(id, o->prefix);
        strcat(id, model);
        int rr = find_row(reg, r_id, id);
        free(id);
        put_text(fp, model);
        fputc(',', fp);
        put_text(fp, rr >= 0 ? qk_table_cell(&reg->t, rr, r_label) : model);
        fprintf(fp, ",%s,%s", number_cell(pl, r, p_ctx), number_cell(pl, r, p_heads));
        for (int f = 0; f < N_FIELDS; f++)
            fprintf(fp, ",%s",
                    fields[f].from_summary ? number_cell(sum, sr, col[f]) : number_cell(pl, r, col[f]));
        fputc('\n', fp);
    }
    /* a checkpoint with rotation metrics but no plasticity row is an error too */
    for (int r = 0; r < sum->t.n_rows; r++)
        if (find_row(pl, p_model, qk_table_cell(&sum->t, r, s_model)) < 0)
            qk_die(QK_EXIT_DATA, pl->path, "no row for checkpoint '%s' (it is in %s)",
                   qk_table_cell(&sum->t, r, s_model), sum->path);
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-joint");
    options o;
    parse_args(argc, argv, &o);
    source sum, pl, reg;
    load(&sum, o.summary);
    load(&pl, o.plasticity);
    load(&reg, o.registry);
    if (pl.t.n_rows == 0)
        qk_die(QK_EXIT_DATA, pl.path, "no checkpoints");
    /* built in memory first, so that an error leaves no partial file */
    char *text;
    size_t len;
    FILE *mem = open_memstream(&text, &len);
    write_joint(mem, &o, &sum, &pl, &reg);
    fclose(mem);
    qk_atomic out;
    qk_err err;
    if (qk_atomic_open(&out, o.output, &err) != 0)
        qk_die(QK_EXIT_DATA, o.output, "%s", err.msg);
    fwrite(text, 1, len, out.fp);
    free(text);
    if (qk_atomic_commit(&out, &err) != 0)
        qk_die(QK_EXIT_DATA, o.output, "%s", err.msg);
    qk_table_free(&sum.t);
    qk_table_free(&pl.t);
    qk_table_free(&reg.t);
    return QK_EXIT_OK;
}
