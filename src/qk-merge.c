/* qk-merge: concatenates per-dataset TSV tables into one study table,
 * optionally with a model column taken from each table's directory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/table.h"

enum { OPT_MODEL_DIR = QK_KEY_FIRST, OPT_MODEL_COLUMN, OPT_STRIP, OPT_CSV, OPT_TSV };

static const qk_option options_table[] = {
    QK_OPTION_OUTPUT("table to write (written atomically)"),
    {OPT_MODEL_DIR, "model-from-dir", NULL, "put a first column holding the name of the "
     "directory of each input (build/<dataset>/pca.tsv -> <dataset>)"},
    {OPT_MODEL_COLUMN, "model-column", "NAME", "name of that column (default model)"},
    {OPT_STRIP, "strip-prefix", "P", "remove P from the start of those names"},
    {OPT_CSV, "csv", NULL, "comma-separated output, quoted where needed (default)"},
    {OPT_TSV, "tsv", NULL, "tab-separated output"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-merge", "qk-merge [OPTIONS] -o OUTPUT TABLE...",
    "Concatenates tab-separated tables that share one header, in the order given,\n"
    "and writes them as one CSV (or TSV) table with a single header line.\n",
    options_table, NULL,
    "qk-merge --model-from-dir --strip-prefix smollm3-3b- -o qk.csv \\\n"
    "  build/smollm3-3b-stage1-step-40000/pca.tsv ...", NULL};

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
    memset(o, 0, sizeof *o);
    o->model_column = "model";
    o->strip_prefix = "";
    o->sep = ',';
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case OPT_MODEL_DIR: o->model_from_dir = 1; break;
        case OPT_MODEL_COLUMN: o->model_column = qk_opt_label("--model-column", value); break;
        case OPT_STRIP: o->strip_prefix = value; break;
        case OPT_CSV: o->sep = ','; break;
        case OPT_TSV: o->sep = '\t'; break;
        }
    }
    if (!a.output)
        qk_usage_error(&program);
    qk_args_operands(&a, 1, -1);
    o->output = a.output;
    o->inputs = a.operands;
    o->n_inputs = a.n_operands;
}

/* The last component of dir ("" for "/"). */
static const char *last_component(char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        dir[--n] = '\0';
    const char *slash = strrchr(dir, '/');
    return slash ? slash + 1 : dir;
}

/* The name of the directory holding path, without the prefix: the last
 * component of the directory as written, or, for a file given without
 * one or under "." or "..", of the directory's real path. A path with no
 * such name (a file in "/") or nothing left after the prefix is a usage
 * error. */
static char *model_of(const char *path, const char *prefix)
{
    const char *slash = strrchr(path, '/');
    char *dir = slash ? qk_strdup(path) : qk_strdup(".");
    if (slash)
        dir[slash == path ? 1 : slash - path] = '\0';
    const char *name = last_component(dir);
    char *real = NULL;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        real = realpath(dir, NULL);
        if (!real)
            qk_die(QK_EXIT_DATA, path, "cannot resolve its directory: %s", strerror(errno));
        name = last_component(real);
    }
    size_t np = strlen(prefix);
    if (np && strncmp(name, prefix, np) == 0)
        name += np;
    if (!*name)
        qk_die(QK_EXIT_USAGE, path, "--model-from-dir: its directory gives no model name");
    char *out = qk_strdup(name);
    free(real);
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

/* With --model-from-dir, two inputs of one model would give it its rows
 * twice: the tables that read the merge take a model's rows as one set. */
static void check_models_unique(const options *o)
{
    for (int i = 1; i < o->n_inputs; i++) {
        char *model = model_of(o->inputs[i], o->strip_prefix);
        for (int j = 0; j < i; j++) {
            char *earlier = model_of(o->inputs[j], o->strip_prefix);
            int same = strcmp(model, earlier) == 0;
            free(earlier);
            if (same)
                qk_die(QK_EXIT_USAGE, o->inputs[i], "model '%s' is also given by %s", model,
                       o->inputs[j]);
        }
        free(model);
    }
}


int main(int argc, char **argv)
{
    qk_set_progname("qk-merge");
    options o;
    parse_args(argc, argv, &o);
    if (o.model_from_dir)
        check_models_unique(&o);
    qk_table *tables = qk_calloc((size_t)o.n_inputs, sizeof *tables);
    qk_err err;
    for (int i = 0; i < o.n_inputs; i++) {
        if (qk_table_load(o.inputs[i], &tables[i], &err) != 0)
            qk_die(QK_EXIT_DATA, o.inputs[i], "%s", err.msg);
        if (i > 0 && !qk_table_same_header(&tables[0], &tables[i]))
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
