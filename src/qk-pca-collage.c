/* qk-pca-collage: the data of the PCA collage figure (figures/qk-pca/06).
 * A few query heads of one store are drawn as the thesis drew them
 * (Python random.Random(seed).sample of the sorted query heads), each is
 * refitted with the combined QK PCA of qk-pca, and its query and key
 * vectors are projected on PC0 and PC1 with the solver's signs. */
#include <cblas.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/heads.h"
#include "qk/moments.h"
#include "qk/pca.h"
#include "qk/rng.h"
#include "qk/store.h"

#define MAX_PANELS 16

enum { OPT_POINTS = QK_KEY_FIRST, OPT_PANELS_OUT, OPT_MAX_POINTS, OPT_MAX_ROWS, OPT_HEAD };

typedef struct options {
    const char *store;
    const char *points_output;
    const char *panels_output;
    int64_t seed;
    int panels;
    int64_t max_points;
    int64_t max_rows;
    int verify;
    int head_layer, head; /* --head: this head alone (head_layer -1: the draw) */
} options;

/* What the command line sets, the draw by its rows. */
static options opts;

static const qk_option options_table[] = {
    {OPT_POINTS, "points-output", "FILE", "panel, kind, position, pc0, pc1 of the plotted "
                                          "vectors"},
    {OPT_PANELS_OUT, "panels-output", "FILE", "one row per head: its numbers on PC0 and PC1"},
    QK_OPTION_INT64('s', "seed", "N", &opts.seed, 0, 4294967295L,
                    QK_STR(QK_DEFAULT_PCA_COLLAGE_SEED), "seed of the head draw"),
    QK_OPTION_INT('n', "panels", "N", &opts.panels, 1, MAX_PANELS,
                  QK_STR(QK_DEFAULT_PCA_COLLAGE_PANELS), "heads to draw (at most " QK_STR(MAX_PANELS) ")"),
    QK_OPTION_INT64(OPT_MAX_POINTS, "max-points", "N", &opts.max_points, 0, 2147483647L,
                    QK_STR(QK_DEFAULT_PCA_COLLAGE_POINTS), "plot at most N vectors per kind and "
                    "head, evenly spaced in store order (0 = all)"),
    {OPT_MAX_ROWS, "max-rows", "N", "fit on the first N rows of each config, as qk-pca "
                                    "--max-rows (default: all rows)"},
    {OPT_HEAD, "head", "lLLhHH", "draw this query head alone, not the seed's sample (the "
                                 "per-head figures, make heads/DATASET/lLLhHH)"},
    QK_OPTION_NO_VERIFY,
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-pca-collage",
    "qk-pca-collage [OPTIONS] --points-output FILE --panels-output FILE STORE",
    "Draws query heads of a store as Python's random.Random(SEED).sample(heads, N)\n"
    "does on the list of its analysable query heads sorted by (layer, head), fits\n"
    "the combined query/key PCA of each as qk-pca does, and projects its query and\n"
    "key vectors (centred on the pooled mean) on PC0 and PC1. The components keep\n"
    "the solver's orientation, made unique as scikit-learn does: the loading of\n"
    "largest magnitude is positive. The correlations written use the same signs.\n",
    options_table, NULL,
    "qk-pca-collage --points-output p.tsv --panels-output h.tsv \\\n"
    "  build/llama3.2-3b/store.qks", NULL};

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    o->head_layer = -1;
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case OPT_POINTS: o->points_output = value; break;
        case OPT_PANELS_OUT: o->panels_output = value; break;
        case OPT_MAX_ROWS: o->max_rows = qk_opt_int("--max-rows", value, 1, 2147483647L); break;
        case OPT_HEAD: qk_opt_head("--head", value, &o->head_layer, &o->head); break;
        }
    }
    qk_args_operands(&a, 1, 1);
    if (!o->points_output || !o->panels_output)
        qk_usage_error(&program);
    o->store = a.operands[0];
    o->verify = a.verify;
}

/* ---- the heads -------------------------------------------------------------------- */

typedef struct head_ref {
    int layer, head, k_head;
    const qk_store_config *q, *k;
} head_ref;

static int64_t capped(int64_t rows, int64_t max_rows)
{
    return max_rows > 0 && rows > max_rows ? max_rows : rows;
}

/* The query heads qk-pca analyses (enough rows), sorted by (layer, head). */
static head_ref *sorted_heads(const qk_store *s, const options *o, int *n)
{
    qk_head_job *jobs;
    int n_jobs;
    qk_err err;
    if (qk_head_jobs(s, &jobs, &n_jobs, &err) != 0)
        qk_die(QK_EXIT_DATA, o->store, "%s", err.msg);
    head_ref *heads = qk_calloc((size_t)(n_jobs ? n_jobs : 1), sizeof *heads);
    *n = 0;
    for (int i = 0; i < n_jobs; i++) {
        const qk_store_config *q = &s->configs[jobs[i].q_config];
        const qk_store_config *k = &s->configs[jobs[i].k_config];
        if (qk_pca_head_usable(capped(q->rows, o->max_rows), capped(k->rows, o->max_rows)))
            heads[(*n)++] = (head_ref){q->layer, q->head, k->head, q, k};
    }
    free(jobs);
    return heads;
}

/* --head: the one head asked for (its index in picks[0]); dies when the
 * store has no such analysable head. */
static int pick_head(const head_ref *heads, int n_heads, const options *o, int *picks)
{
    for (int i = 0; i < n_heads; i++)
        if (heads[i].layer == o->head_layer && heads[i].head == o->head) {
            picks[0] = i;
            return 1;
        }
    qk_die(QK_EXIT_DATA, o->store, "no analysable query head l%02dh%02d", o->head_layer, o->head);
}

/* ---- one panel -------------------------------------------------------------------- */

/* The result for one head, with the solver's signs. */
typedef struct panel {
    head_ref ref;
    qk_pca_head fit;
    double sign[2];                   /* +1: as canonical, -1: negated */
    int64_t plotted_q, plotted_k;
} panel;

/* The orientation scikit-learn (>= 1.5) gives a component: its entry of
 * largest magnitude positive (the first such entry on ties). */
static double solver_sign(const double *v, int dim)
{
    int best = 0;
    for (int j = 1; j < dim; j++)
        if (fabs(v[j]) > fabs(v[best]))
            best = j;
    return v[best] < 0 ? -1.0 : 1.0;
}

static int64_t stride_of(int64_t rows, int64_t max_points)
{
    if (max_points <= 0 || rows <= max_points)
        return 1;
    return (rows + max_points - 1) / max_points;
}

/* Writes the projections of every stride-th row of one kind on the two
 * oriented components; returns the rows written. */
static int64_t write_projections(FILE *fp, int index, char kind, const qk_pca_rows *rows,
                                 const double *mean, const double *v0, const double *v1,
                                 int dim, int64_t max_points, double *scratch)
{
    int64_t step = stride_of(rows->n, max_points), written = 0;
    for (int64_t i = 0; i < rows->n; i += step) {
        const float *x = rows->vector + i * dim;
        for (int j = 0; j < dim; j++)
            scratch[j] = (double)x[j] - mean[j];
        double p0 = cblas_ddot(dim, scratch, 1, v0, 1);
        double p1 = cblas_ddot(dim, scratch, 1, v1, 1);
        fprintf(fp, "%d\t%c\t%d\t%.9g\t%.9g\n", index, kind, (int)rows->position[i], p0 + 0.0,
                p1 + 0.0);
        written++;
    }
    return written;
}

/* Fits one head and writes its points; fills *out. */
static void fit_panel(const qk_store *s, const options *o, int index, const head_ref *ref,
                      FILE *points, panel *out)
{
    int dim = s->dim;
    qk_store_buf qbuf = {0}, kbuf = {0};
    const float *qv = qk_store_vectors_or_die(s, o->store, (int)(ref->q - s->configs), &qbuf);
    const float *kv = qk_store_vectors_or_die(s, o->store, (int)(ref->k - s->configs), &kbuf);
    qk_pca_rows q = {qv, ref->q->position, capped(ref->q->rows, o->max_rows)};
    qk_pca_rows k = {kv, ref->k->position, capped(ref->k->rows, o->max_rows)};
    qk_moments mq, mk;
    qk_pca_work w;
    qk_moments_init(&mq, dim);
    qk_moments_init(&mk, dim);
    qk_pca_work_init(&w, dim);
    qk_moments_compute(&mq, q.vector, q.position, q.n);
    qk_moments_compute(&mk, k.vector, k.position, k.n);
    qk_err err;
    memset(out, 0, sizeof *out);
    out->ref = *ref;
    if (qk_pca_fit(&mq, &mk, &w, &out->fit, &err) != 0)
        qk_die(QK_EXIT_DATA, o->store, "head l%02dh%02d: %s", ref->layer, ref->head, err.msg);
    if (out->fit.n_pc < 2)
        qk_die(QK_EXIT_DATA, o->store, "head dimension %d: the collage needs two components",
               dim);
    /* orient PC0 and PC1 as the solver would, and their correlations with them */
    double *v[2];
    for (int i = 0; i < 2; i++) {
        v[i] = w.components + (size_t)i * dim;
        out->sign[i] = solver_sign(v[i], dim);
        cblas_dscal(dim, out->sign[i], v[i], 1);
    }
    double *scratch = qk_doubles((size_t)dim);
    out->plotted_q = write_projections(points, index, 'q', &q, w.pooled.mean, v[0], v[1], dim,
                                       o->max_points, scratch);
    out->plotted_k = write_projections(points, index, 'k', &k, w.pooled.mean, v[0], v[1], dim,
                                       o->max_points, scratch);
    free(scratch);
    qk_store_buf_free(&qbuf);
    qk_store_buf_free(&kbuf);
    qk_moments_free(&mq);
    qk_moments_free(&mk);
    qk_pca_work_free(&w);
}

/* ---- output ------------------------------------------------------------------------- */

static void write_panels(FILE *fp, const qk_store *s, const options *o, const panel *p, int n,
                         int available)
{
    fputs("panel\tmodel\tlayer\thead\tk_head\tn_q\tn_k\tev0\tev1\tr_q0\tr_k0\tr_q1\tr_k1"
          "\tsign0\tsign1\tplotted_q\tplotted_k\theads_available\tseed\n", fp);
    for (int i = 0; i < n; i++) {
        const qk_pca_head *f = &p[i].fit;
        fprintf(fp, "%d\t%.56s\t%d\t%d\t%d\t%" PRId64 "\t%" PRId64, i, s->header.dataset_id,
                p[i].ref.layer, p[i].ref.head, p[i].ref.k_head, f->n_q, f->n_k);
        qk_put_num(fp, f->ev[0]);
        qk_put_num(fp, f->ev[1]);
        qk_put_num(fp, p[i].sign[0] * f->r_q[0]);
        qk_put_num(fp, p[i].sign[0] * f->r_k[0]);
        qk_put_num(fp, p[i].sign[1] * f->r_q[1]);
        qk_put_num(fp, p[i].sign[1] * f->r_k[1]);
        fprintf(fp, "\t%+d\t%+d\t%" PRId64 "\t%" PRId64 "\t%d\t%" PRId64 "\n", (int)p[i].sign[0],
                (int)p[i].sign[1], p[i].plotted_q, p[i].plotted_k, available, o->seed);
    }
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-pca-collage");
    parse_args(argc, argv, &opts);
    options o = opts;
    openblas_set_num_threads(1);
    qk_store s;
    qk_open_store(o.store, &s, o.verify);
    int n_heads;
    head_ref *heads = sorted_heads(&s, &o, &n_heads);
    /* no usable head (a partial or tiny capture): empty tables, from which
     * the figure draws a canvas that says so */
    if (n_heads == 0)
        qk_warn("%s: no query head with enough rows: the collage lists no head", o.store);
    int n = o.panels < n_heads ? o.panels : n_heads;
    int picks[MAX_PANELS];
    if (o.head_layer >= 0)
        n = pick_head(heads, n_heads, &o, picks);
    else if (n > 0 && qk_python_sample((uint32_t)o.seed, n_heads, n, picks) != 0)
        qk_die(QK_EXIT_DATA, o.store, "cannot draw %d of %d heads", n, n_heads);

    qk_atomic points;
    qk_output_open(&points, o.points_output);
    fputs("panel\tkind\tposition\tpc0\tpc1\n", points.fp);
    panel panels[MAX_PANELS];
    for (int i = 0; i < n; i++)
        fit_panel(&s, &o, i, &heads[picks[i]], points.fp, &panels[i]);
    qk_output_commit(&points);

    qk_atomic out;
    qk_output_open(&out, o.panels_output);
    write_panels(out.fp, &s, &o, panels, n, n_heads);
    qk_output_commit(&out);
    free(heads);
    qk_store_close(&s);
    return QK_EXIT_OK;
}
