/* qk-merge: concatenates per-dataset TSV tables into one study table,
 * optionally with a model column taken from each table's directory. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/table.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-merge [OPTIONS] -o OUTPUT TABLE...\n"
        "\n"
        "Concatenates tab-separated tables that share one header, in the order given,\n"
        "and writes them as one CSV (or TSV) table with a single header line.\n"
        "\n"
        "Options:\n"
        "  -o, --output FILE        table to write (written atomically)\n"
        "      --model-from-dir     put a first column holding the name of the directory\n"
        "                           of each input (build/<dataset>/pca.tsv -> <dataset>)\n"
        "      --model-column NAME  name of that column (default model)\n"
        "      --strip-prefix P     remove P from the start of those names\n"
        "      --csv                comma-separated output, quoted where needed (default)\n"
        "      --tsv                tab-separated output\n"
        "  -h, --help               this text\n"
        "      --version            print the version\n"
        "\n"
        "Exit status: 0 success, 1 usage error, 2 bad or unreadable data.\n"
        "Example: qk-merge --model-from-dir --strip-prefix smollm3-3b- -o qk.csv \\\n"
        "           build/smollm3-3b-stage1-step-40000/pca.tsv ...\n");
}

typedef struct options {
    const char *output;
    int model_from_dir;
    const char *model_column;
    const char *strip_prefix;
    char sep;
    char **inputs;
    int n_inputs;
} options;

static void parse_args(int argc, char **argv, options *o)
{
    enum { OPT_MODEL_DIR = 256, OPT_MODEL_COLUMN, OPT_STRIP, OPT_CSV, OPT_TSV, OPT_VERSION };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"model-from-dir", no_argument, NULL, OPT_MODEL_DIR},
        {"model-column", required_argument, NULL, OPT_MODEL_COLUMN},
        {"strip-prefix", required_argument, NULL, OPT_STRIP},
        {"csv", no_argument, NULL, OPT_CSV},
        {"tsv", no_argument, NULL, OPT_TSV},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->model_column = "model";
    o->strip_prefix = "";
    o->sep = ',';
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': o->output = optarg; break;
        case OPT_MODEL_DIR: o->model_from_dir = 1; break;
        case OPT_MODEL_COLUMN: o->model_column = optarg; break;
        case OPT_STRIP: o->strip_prefix = optarg; break;
        case OPT_CSV: o->sep = ','; break;
        case OPT_TSV: o->sep = '\t'; break;
        case 'h': usage(stdout); exit(QK_EXIT_OK);
        case OPT_VERSION: printf("qk-merge %s\n", QK_VERSION_STRING); exit(QK_EXIT_OK);
        default: usage(stderr); exit(QK_EXIT_USAGE);
        }
    }
    if (!o->output || optind >= argc) {
        usage(stderr);
        exit(QK_EXIT_USAGE);
    }
    o->inputs = argv + optind;
    o->n_inputs = argc - optind;
}

/* The name of the directory holding path, without the prefix. */
static char *model_of(const char *path, const char *prefix)
{
    char *dir = qk_strdup(path);
    char *slash = strrchr(dir, '/');
    const char *name = "";
    if (slash) {
        *slash = '\0';
        char *up = strrchr(dir, '/');
        name = up ? up + 1 : dir;
    }
    size_t np = strlen(prefix);
    if (np && strncmp(name, prefix, np) == 0)
        name += np;
    char *out = qk_strdup(name);
    free(dir);
    return out;
}

/* A field: as is in TSV, quoted as CSV needs it in CSV. */
static void put_field(FILE *fp, const char *s, char sep)
{
    if (sep == ',')
        qk_csv_put(fp, s);
    else
        fputs(s, fp);
}

static void put_row(FILE *fp, const char *model, char **cells, int n, char sep)
{
    if (model) {
        put_field(fp, model, sep);
        if (n)
            fputc(sep, fp);
    }
    for (int c = 0; c < n; c++) {
        if (c)
            fputc(sep, fp);
        put_field(fp, cells[c], sep);
    }
    fputc('\n', fp);
}

static int same_header(const qk_table *a, const qk_table *b)
{
    if (a->n_cols != b->n_cols)
        return 0;
    for (int c = 0; c < a->n_cols; c++)
        if (strcmp(a->header[c], b->header[c]) != 0)
            return 0;
    return 1;
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-merge");
    options o;
    parse_args(argc, argv, &o);
    qk_table *tables = qk_calloc((size_t)o.n_inputs, sizeof *tables);
    qk_err err;
    for (int i = 0; i < o.n_inputs; i++) {
        if (qk_table_load(o.inputs[i], &tables[i], &err) != 0)
            qk_die(QK_EXIT_DATA, o.inputs[i], "%s", err.msg);
        if (i > 0 && !same_header(&tables[0], &tables[i]))
            qk_die(QK_EXIT_DATA, o.inputs[i], "header differs from that of %s", o.inputs[0]);
    }
    if (o.model_from_dir && qk_table_column(&tables[0], o.model_column) >= 0)
        qk_die(QK_EXIT_DATA, o.inputs[0], "already has a column '%s'", o.model_column);

    qk_atomic out;
    qk_output_open(&out, o.output);
    put_row(out.fp, o.model_from_dir ? o.model_column : NULL, tables[0].header,
            tables[0].n_cols, o.sep);
    for (int i = 0; i < o.n_inputs; i++) {
        const qk_table *t = &tables[i];
        char *model = o.model_from_dir ? model_of(o.inputs[i], o.strip_prefix) : NULL;
        for (int r = 0; r < t->n_rows; r++)
            put_row(out.fp, model, t->cells + (size_t)r * t->n_cols, t->n_cols, o.sep);
        free(model);
    }
    qk_output_commit(&out);
    for (int i = 0; i < o.n_inputs; i++)
        qk_table_free(&tables[i]);
    free(tables);
    return QK_EXIT_OK;
}
