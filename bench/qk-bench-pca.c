/* qk-bench-pca: times qk-pca's per-head computation (moments of both
 * kinds, eigendecomposition, correlations, canonical signs, derived
 * metrics) on synthetic heads of thesis size, on one core. Optionally
 * writes the heads for bench/bench_pca.py, which times scikit-learn on
 * the same vectors. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/heads.h"
#include "qk/moments.h"
#include "qk/pca.h"
#include "qk/rng.h"

/* Query heads per key head in the shared-keys timing (most models: 4). */
#define GQA_GROUP 4

enum { OPT_HEADS = QK_KEY_FIRST, OPT_ROWS, OPT_DIM, OPT_REPEAT, OPT_SEED, OPT_DUMP };

static const qk_option options_table[] = {
    {OPT_HEADS, "heads", "N", "heads (default 8)"},
    {OPT_ROWS, "rows", "N", "rows per kind (default 8000)"},
    {OPT_DIM, "dim", "D", "vector dimension (default 128)"},
    {OPT_REPEAT, "repeat", "R", "timing repetitions; the fastest counts (default 3)"},
    {OPT_SEED, "seed", "S", "seed of the synthetic heads (default 1)"},
    {OPT_DUMP, "dump", "FILE", "also write the heads (format of tests/pca_crosscheck.py)"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-bench-pca", "qk-bench-pca [OPTIONS]",
    "Times the combined QK PCA of synthetic heads (each query and key row a\n"
    "drift along one direction, a query/key offset and anisotropic noise, in a\n"
    "random orientation) on one core, and prints the time per head: the fit\n"
    "alone (moments, components, EV, r), the fit with every derived metric, and\n"
    "the latter with the key moments shared by " QK_STR(GQA_GROUP) " query heads, as qk-pca does\n"
    "for a key head.\n",
    options_table, NULL, "qk-bench-pca --heads 8 --dump build/bench/pca-heads.bin", NULL};

typedef struct bench_opts {
    int heads, rows, dim, repeat;
    uint64_t seed;
    const char *dump;
} bench_opts;

static void parse_args(int argc, char **argv, bench_opts *o)
{
    *o = (bench_opts){.heads = 8, .rows = 8000, .dim = 128, .repeat = 3, .seed = 1};
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case OPT_HEADS: o->heads = (int)qk_opt_int("--heads", value, 1, 10000); break;
        case OPT_ROWS: o->rows = (int)qk_opt_int("--rows", value, 6, 10000000); break;
        case OPT_DIM: o->dim = (int)qk_opt_int("--dim", value, 2, 4096); break;
        case OPT_REPEAT: o->repeat = (int)qk_opt_int("--repeat", value, 1, 1000); break;
        case OPT_SEED: o->seed = (uint64_t)qk_opt_int("--seed", value, 0, 1L << 62); break;
        case OPT_DUMP: o->dump = value; break;
        }
    }
    qk_args_operands(&a, 0, 0);
}

typedef struct bench_head {
    float *q, *k;
    int32_t *tq, *tk;
} bench_head;

/* Rows of one kind: drift along axis 0, offset along axis 1, noise of sd
 * 3 * 0.97^j, then one Householder reflection u (a random orientation). */
static void make_kind(qk_rng *r, int n, int dim, double drift, double offset,
                      const double *u, float *x, int32_t *t)
{
    double *row = qk_malloc(sizeof(double) * (size_t)dim);
    for (int i = 0; i < n; i++) {
        t[i] = (int32_t)qk_rng_below(r, 131072);
        double sd = 3.0;
        for (int j = 0; j < dim; j++, sd *= 0.97)
            row[j] = sd * qk_rng_normal(r);
        row[0] += drift * (t[i] - 65536.0);
        row[1] += offset;
        double dot = 0.0;
        for (int j = 0; j < dim; j++)
            dot += u[j] * row[j];
        for (int j = 0; j < dim; j++)
            x[(size_t)i * dim + j] = (float)(row[j] - 2.0 * dot * u[j]);
    }
    free(row);
}

static void make_head(const bench_opts *o, int h, bench_head *bh)
{
    size_t n = (size_t)o->rows, d = (size_t)o->dim;
    bh->q = qk_malloc(n * d * sizeof(float));
    bh->k = qk_malloc(n * d * sizeof(float));
    bh->tq = qk_malloc(n * sizeof(int32_t));
    bh->tk = qk_malloc(n * sizeof(int32_t));
    qk_rng r;
    uint64_t keys[2] = {o->seed, (uint64_t)h};
    qk_rng_seed(&r, keys, 2);
    double *u = qk_malloc(d * sizeof(double)), norm = 0.0;
    for (size_t j = 0; j < d; j++) {
        u[j] = qk_rng_normal(&r);
        norm += u[j] * u[j];
    }
    for (size_t j = 0; j < d; j++)
        u[j] /= sqrt(norm);
    make_kind(&r, o->rows, o->dim, 4e-5, 8.0, u, bh->q, bh->tq);
    make_kind(&r, o->rows, o->dim, 2e-5 * (h % 2 ? -1 : 1), -8.0, u, bh->k, bh->tk);
    free(u);
}

static void dump_heads(const bench_opts *o, const bench_head *heads)
{
    qk_atomic out;
    qk_output_open(&out, o->dump);
    qk_heads_file_begin(out.fp, o->heads);
    for (int h = 0; h < o->heads; h++)
        qk_heads_file_add(out.fp, o->dim, heads[h].q, heads[h].tq, o->rows, heads[h].k,
                          heads[h].tk, o->rows);
    qk_output_commit(&out);
}

/* Fastest of o->repeat passes over the heads, in seconds. With group g,
 * head h is paired with the keys of head h - h % g, whose moments are
 * computed once for the g heads (as qk-pca does for a key head). Without
 * full, only the fit (moments, eigenvectors, EV, r) is timed: the work the
 * scikit-learn side does. */
static double time_heads(const bench_opts *o, const bench_head *heads, int group, int full,
                         qk_moments *mq, qk_moments *mk, qk_pca_work *w, double *check)
{
    double best = INFINITY;
    *check = 0.0;
    for (int rep = 0; rep < o->repeat; rep++) {
        double start = qk_now(), sum = 0.0;
        for (int h = 0; h < o->heads; h++) {
            const bench_head *kh = &heads[h - h % group];
            qk_pca_rows rq = {heads[h].q, heads[h].tq, o->rows};
            qk_pca_rows rk = {kh->k, kh->tk, o->rows};
            if (h % group == 0)
                qk_moments_compute(mk, rk.vector, rk.position, rk.n);
            qk_moments_compute(mq, rq.vector, rq.position, rq.n);
            qk_pca_head res;
            qk_err err;
            if (qk_pca_fit(mq, mk, w, &res, &err) != 0)
                qk_die(QK_EXIT_DATA, NULL, "head %d: %s", h, err.msg);
            if (full)
                qk_pca_metrics(&rq, &rk, mq, mk, w, &res);
            sum += res.r_q[0] + res.ev[0] + res.acc01;
        }
        double elapsed = qk_now() - start;
        if (elapsed < best)
            best = elapsed;
        *check = sum;
    }
    return best;
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-bench-pca");
    bench_opts o;
    parse_args(argc, argv, &o);
    openblas_set_num_threads(1);
    bench_head *heads = qk_calloc((size_t)o.heads, sizeof *heads);
    for (int h = 0; h < o.heads; h++)
        make_head(&o, h, &heads[h]);
    if (o.dump)
        dump_heads(&o, heads);

    qk_moments mq, mk;
    qk_pca_work w;
    qk_moments_init(&mq, o.dim);
    qk_moments_init(&mk, o.dim);
    qk_pca_work_init(&w, o.dim);
    double check = 0.0;
    double fit = time_heads(&o, heads, 1, 0, &mq, &mk, &w, &check);
    printf("qk-pca per head: %.3f ms for moments, components, EV and r (%d heads of %d + %d "
           "rows x %d, one core, best of %d)\n", 1e3 * fit / o.heads, o.heads, o.rows, o.rows,
           o.dim, o.repeat);
    double full = time_heads(&o, heads, 1, 1, &mq, &mk, &w, &check);
    printf("qk-pca per head, with every derived metric (acc01, acc0, fisher0 ...): %.3f ms "
           "(check %.6f)\n", 1e3 * full / o.heads, check);
    double shared = time_heads(&o, heads, GQA_GROUP, 1, &mq, &mk, &w, &check);
    printf("qk-pca per head, every metric, key moments shared by %d query heads as in "
           "qk-pca: %.3f ms\n", GQA_GROUP, 1e3 * shared / o.heads);
    qk_moments_free(&mq);
    qk_moments_free(&mk);
    qk_pca_work_free(&w);
    for (int h = 0; h < o.heads; h++) {
        free(heads[h].q);
        free(heads[h].k);
        free(heads[h].tq);
        free(heads[h].tk);
    }
    free(heads);
    return QK_EXIT_OK;
}
