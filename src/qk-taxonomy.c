/* qk-taxonomy: adds the head category (docs/pca.md, taxonomy.tsv) to a per-head table
 * written by qk-pca. */
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/table.h"
#include "qk/taxonomy.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-taxonomy [OPTIONS] HEADS_TSV\n"
        "\n"
        "Reads a per-head table of qk-pca (pca_heads.tsv) and writes it again with a\n"
        "column 'category' added, from the canonical PC0 correlations r_q (signed) and\n"
        "|r_k|, tested in this order with strict inequalities:\n"
        "  position-dominated  r_q > HIGH and |r_k| > HIGH\n"
        "  q-positional        r_q > HIGH and |r_k| < LOW\n"
        "  k-positional        r_q < LOW  and |r_k| > HIGH\n"
        "  content-focused     r_q < LOW  and |r_k| < LOW\n"
        "  mixed               everything else\n"
        "\n"
        "Options:\n"
        "  -o, --output FILE     table to write (default: taxonomy.tsv beside the input)\n"
        "      --high X          HIGH threshold (default %g)\n"
        "      --low X           LOW threshold (default %g)\n"
        "      --rq-column NAME  column holding r_q (default r_q0)\n"
        "      --rk-column NAME  column holding r_k (default r_k0)\n"
        "  -h, --help            this text\n"
        "      --version         print the version\n"
        "\n"
        "Exit status: 0 success, 1 usage error, 2 bad or unreadable data.\n"
        "Example: qk-taxonomy -o build/llama3.2-3b/taxonomy.tsv build/llama3.2-3b/pca_heads.tsv\n",
        QK_TAXONOMY_HIGH, QK_TAXONOMY_LOW);
}

typedef struct options {
    const char *input;
    char *output;
    double high, low;
    const char *rq_column, *rk_column;
} options;

static void parse_args(int argc, char **argv, options *o)
{
    enum { OPT_HIGH = 256, OPT_LOW, OPT_RQ, OPT_RK, OPT_VERSION };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"high", required_argument, NULL, OPT_HIGH},
        {"low", required_argument, NULL, OPT_LOW},
        {"rq-column", required_argument, NULL, OPT_RQ},
        {"rk-column", required_argument, NULL, OPT_RK},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->high = QK_TAXONOMY_HIGH;
    o->low = QK_TAXONOMY_LOW;
    o->rq_column = "r_q0";
    o->rk_column = "r_k0";
    const char *output = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case OPT_HIGH: o->high = qk_opt_fraction("--high", optarg); break;
        case OPT_LOW: o->low = qk_opt_fraction("--low", optarg); break;
        case OPT_RQ: o->rq_column = optarg; break;
        case OPT_RK: o->rk_column = optarg; break;
        case 'h': usage(stdout); exit(QK_EXIT_OK);
        case OPT_VERSION: printf("qk-taxonomy %s\n", QK_VERSION_STRING); exit(QK_EXIT_OK);
        default: usage(stderr); exit(QK_EXIT_USAGE);
        }
    }
    if (optind + 1 != argc) {
        usage(stderr);
        exit(QK_EXIT_USAGE);
    }
    if (o->low > o->high)
        qk_die(QK_EXIT_USAGE, NULL, "--low %g is above --high %g", o->low, o->high);
    o->input = argv[optind];
    o->output = output ? qk_strdup(output) : qk_path_beside(o->input, "taxonomy.tsv");
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
    options o;
    parse_args(argc, argv, &o);
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
