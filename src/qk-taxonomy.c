/* qk-taxonomy: adds the head category (docs/pca.md, taxonomy.tsv) to a per-head table
 * written by qk-pca. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/table.h"
#include "qk/taxonomy.h"

enum { OPT_HIGH = QK_KEY_FIRST, OPT_LOW, OPT_RQ, OPT_RK };

typedef struct options {
    const char *input;
    char *output;
    double high, low;
    const char *rq_column, *rk_column;
} options;

/* What the command line sets, the thresholds by their rows. */
static options opts;

static const qk_option options_table[] = {
    QK_OPTION_OUTPUT("table to write (default: taxonomy.tsv beside the input)"),
    QK_OPTION_REAL(QK_OPT_FRACTION, OPT_HIGH, "high", "X", &opts.high,
                   QK_STR(QK_DEFAULT_PCA_TAX_HIGH), "HIGH threshold"),
    QK_OPTION_REAL(QK_OPT_FRACTION, OPT_LOW, "low", "X", &opts.low,
                   QK_STR(QK_DEFAULT_PCA_TAX_LOW), "LOW threshold"),
    {OPT_RQ, "rq-column", "NAME", "column holding r_q (default r_q0)"},
    {OPT_RK, "rk-column", "NAME", "column holding r_k (default r_k0)"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-taxonomy", "qk-taxonomy [OPTIONS] HEADS_TSV",
    "Reads a per-head table of qk-pca (pca_heads.tsv) and writes it again with a\n"
    "column 'category' added, from the canonical PC0 correlations r_q (signed) and\n"
    "|r_k|, tested in this order with strict inequalities:\n"
    "  position-dominated  r_q > HIGH and |r_k| > HIGH\n"
    "  q-positional        r_q > HIGH and |r_k| < LOW\n"
    "  k-positional        r_q < LOW  and |r_k| > HIGH\n"
    "  content-focused     r_q < LOW  and |r_k| < LOW\n"
    "  mixed               everything else\n",
    options_table, NULL,
    "qk-taxonomy -o build/llama3.2-3b/taxonomy.tsv build/llama3.2-3b/pca_heads.tsv", NULL};

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->rq_column = "r_q0";
    o->rk_column = "r_k0";
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case OPT_RQ: o->rq_column = value; break;
        case OPT_RK: o->rk_column = value; break;
        }
    }
    if (o->low > o->high)
        qk_die(QK_EXIT_USAGE, NULL, "--low %g is above --high %g", o->low, o->high);
    qk_args_operands(&a, 1, 1);
    o->input = a.operands[0];
    o->output = a.output ? qk_strdup(a.output) : qk_path_beside(o->input, "taxonomy.tsv");
}

static double cell_number(const qk_table *t, int row, int col, const char *path)
{
    const char *s = qk_table_cell(t, row, col);
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !isfinite(v))
        qk_die(QK_EXIT_DATA, path, "line %d: %s is '%s', not a finite number", row + 2,
               t->header[col], s);
    return v;
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-taxonomy");
    parse_args(argc, argv, &opts);
    options o = opts;
    qk_table t;
    qk_err err;
    if (qk_table_load(o.input, &t, &err) != 0)
        qk_die(QK_EXIT_DATA, o.input, "%s", err.msg);
    qk_src src = {&t, o.input, NULL};
    int rq = qk_src_col(&src, o.rq_column), rk = qk_src_col(&src, o.rk_column);
    if (qk_table_column(&t, "category") >= 0)
        qk_die(QK_EXIT_DATA, o.input, "already has a column 'category'");
    qk_category *cat = qk_malloc((size_t)(t.n_rows ? t.n_rows : 1) * sizeof *cat);
    for (int r = 0; r < t.n_rows; r++)
        cat[r] = qk_taxonomy_classify(cell_number(&t, r, rq, o.input),
                                      cell_number(&t, r, rk, o.input), o.high, o.low);

    qk_atomic out;
    qk_output_open(&out, o.output);
    for (int c = 0; c < t.n_cols; c++)
        fprintf(out.fp, "%s\t", t.header[c]);
    fputs("category\n", out.fp);
    for (int r = 0; r < t.n_rows; r++) {
        for (int c = 0; c < t.n_cols; c++)
            fprintf(out.fp, "%s\t", qk_table_cell(&t, r, c));
        fprintf(out.fp, "%s\n", qk_category_name(cat[r]));
    }
    qk_output_commit(&out);
    free(cat);
    free(o.output);
    qk_table_free(&t);
    return QK_EXIT_OK;
}
