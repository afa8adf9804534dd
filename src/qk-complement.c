/* qk-complement: the complement of the {a, b} plane of every head
 * (docs/rotation.md, "One head: the complement"), from a store and the axes qk-rotate
 * found: principal pairs with their variance share, angle-position
 * correlation and Q/K separability, the per-head summaries, the residual
 * position correlation of the drift lemma, and the joined per-head table
 * (rotation metrics + complement summaries). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/rotation.h"
#include "qk/stage.h"
#include "qk/store.h"
#include "qk/table.h"

/* The input and output files, in the order of options.given. */
enum { F_AXES, F_ROTATION, F_PAIRS, F_HEADS, F_ROTATED, N_FILES };
enum { OPT_FILE = QK_KEY_FIRST, OPT_TAU = OPT_FILE + N_FILES };

typedef struct options {
    const char *store;
    char *axes, *rotation, *pairs_output, *heads_output, *rotated_output;
    double tau;
    int threads;
    int verify;
} options;

/* What the command line sets, --active-tau into tau. */
static options opts;

static const qk_option options_table[] = {
    {OPT_FILE + F_AXES, "axes", "FILE", "axes from qk-rotate (default: rotation_axes.bin "
                                        "beside STORE)"},
    {OPT_FILE + F_ROTATION, "rotation", "FILE", "per-head table from qk-rotate (default: "
                                                "rotation.tsv beside STORE)"},
    {OPT_FILE + F_PAIRS, "pairs-output", "FILE", "one row per (head, pair) (default: "
                                                 "complement_pairs.tsv beside STORE)"},
    {OPT_FILE + F_HEADS, "heads-output", "FILE", "one row per head (default: "
                                                 "complement_heads.tsv)"},
    {OPT_FILE + F_ROTATED, "rotated-output", "FILE", "the rotation table with the complement "
     "summaries appended (default: rotated.tsv beside STORE)"},
    QK_OPTION_REAL(QK_OPT_FRACTION, OPT_TAU, "active-tau", "TAU", &opts.tau,
                   QK_STR(QK_DEFAULT_ROT_ACTIVE_TAU), "|angle_r_best| of an active pair"),
    QK_OPTION_THREADS,
    QK_OPTION_NO_VERIFY,
    QK_OPTION_QUIET,
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-complement", "qk-complement [OPTIONS] STORE",
    "The complement of the {a, b} plane of every head that qk-rotate analysed:\n"
    "the pooled covariance projected off a and b is decomposed, and the first\n"
    "min(" QK_STR(QK_ROT_MAX_PAIRS) ", (d-2)/2) pairs of its principal directions get their "
    "share of the\n"
    "complement variance, the Pearson r of the pair angle atan2(w, u) with\n"
    "position (at the raw cut and at the best of " QK_STR(QK_ROT_ANGLE_CUTS) " cuts), the "
    "balanced accuracy\n"
    "of a query/key Fisher discriminant and the radial spread. A pair is active\n"
    "when |angle_r_best| >= TAU. Also checks the drift lemma: residual_pos_r is\n"
    "the largest |r| of position with b or any complement direction.\n",
    options_table, NULL, "qk-complement --threads 2 build/llama3.2-3b/store.qks", NULL};

static char *path_or_beside(const char *given, const char *store, const char *name)
{
    return given ? qk_strdup(given) : qk_path_beside(store, name);
}

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    const char *given[N_FILES] = {NULL}, *value;
    qk_args a;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;)
        given[key - OPT_FILE] = value;
    qk_args_operands(&a, 1, 1);
    o->store = a.operands[0];
    o->threads = a.threads;
    o->verify = a.verify;
    o->axes = path_or_beside(given[F_AXES], o->store, "rotation_axes.bin");
    o->rotation = path_or_beside(given[F_ROTATION], o->store, "rotation.tsv");
    o->pairs_output = path_or_beside(given[F_PAIRS], o->store, "complement_pairs.tsv");
    o->heads_output = path_or_beside(given[F_HEADS], o->store, "complement_heads.tsv");
    o->rotated_output = path_or_beside(given[F_ROTATED], o->store, "rotated.tsv");
    const char *outputs[] = {o->pairs_output, o->heads_output, o->rotated_output};
    static const char *const output_options[] = {"--pairs-output", "--heads-output",
                                                  "--rotated-output"};
    qk_outputs_check(outputs, output_options, 3, 0);
}

/* ---- inputs ------------------------------------------------------------------------ */

/* The rotation table and, for each of its rows, the index of its head in
 * the axes file (the rows and the axes must name the same heads). */
typedef struct rotation_table {
    qk_table t;
    int col_checkpoint;
    int col_kv_head, col_d, col_n_q, col_n_k; /* what the store must agree with */
    int *axes_index; /* [n_rows] */
} rotation_table;

static int cell_int(const qk_table *t, int row, int col, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(qk_table_cell(t, row, col), &end, 10);
    if (errno || end == qk_table_cell(t, row, col) || *end)
        return -1;
    *out = (int)v;
    return 0;
}

static void load_rotation(const options *o, const qk_rot_axes_file *axes, rotation_table *r)
{
    qk_err err;
    if (qk_table_load(o->rotation, &r->t, &err) != 0)
        qk_die(QK_EXIT_DATA, o->rotation, "%s", err.msg);
    int col_layer = qk_table_column(&r->t, "layer"), col_head = qk_table_column(&r->t, "head");
    r->col_checkpoint = qk_table_column(&r->t, "checkpoint");
    r->col_kv_head = qk_table_column(&r->t, "kv_head");
    r->col_d = qk_table_column(&r->t, "d");
    r->col_n_q = qk_table_column(&r->t, "n_q");
    r->col_n_k = qk_table_column(&r->t, "n_k");
    if (col_layer < 0 || col_head < 0 || r->col_checkpoint < 0 || r->col_kv_head < 0 ||
        r->col_d < 0 || r->col_n_q < 0 || r->col_n_k < 0)
        qk_die(QK_EXIT_DATA, o->rotation, "no layer, head, kv_head, d, n_q, n_k or checkpoint "
               "column");
    if (r->t.n_rows != axes->n_heads)
        qk_die(QK_EXIT_DATA, o->rotation, "%d heads, but %s has %d", r->t.n_rows, o->axes,
               axes->n_heads);
    r->axes_index = qk_malloc((size_t)(r->t.n_rows ? r->t.n_rows : 1) * sizeof(int));
    for (int i = 0; i < r->t.n_rows; i++) {
        int layer, head;
        if (cell_int(&r->t, i, col_layer, &layer) != 0 ||
            cell_int(&r->t, i, col_head, &head) != 0)
            qk_die(QK_EXIT_DATA, o->rotation, "line %d: bad layer or head", i + 2);
        r->axes_index[i] = qk_rot_axes_find(axes, layer, head);
        if (r->axes_index[i] < 0)
            qk_die(QK_EXIT_DATA, o->rotation, "head l%02dh%02d has no axes in %s", layer, head,
                   o->axes);
    }
}

/* ---- the analysis ---------------------------------------------------------------------- */

typedef struct run_ctx {
    const qk_stage *stage;
    const options *opt;
    qk_rot_axes_file axes; /* read once the store is open */
    rotation_table rot;
    int *axes_of_job; /* [n_jobs] index into axes, -1: not analysed */
    int *job_of_axes; /* [axes->n_heads] */
} run_ctx;

static void *thread_init(void *arg)
{
    const run_ctx *ctx = arg;
    qk_comp_work *work = qk_calloc(1, sizeof *work);
    qk_comp_work_init(work, ctx->stage->store.dim);
    return work;
}

static void thread_free(void *arg)
{
    qk_comp_work_free(arg);
    free(arg);
}

/* A row of the rotation table must describe the store's head: the same
 * key head, dimension and query and key row counts (n_q and n_k are the
 * rows qk-rotate read); a table of another store fails here. */
static void check_rotation_row(const run_ctx *ctx, const qk_stage *stage, int row)
{
    const rotation_table *r = &ctx->rot;
    const qk_head_job *job = &stage->jobs[ctx->job_of_axes[r->axes_index[row]]];
    const struct { int col; long long store; const char *what; } facts[] = {
        {r->col_kv_head, job->kv_head, "key head"},
        {r->col_d, stage->store.dim, "dimension"},
        {r->col_n_q, (long long)stage->store.configs[job->q_config].rows, "query rows"},
        {r->col_n_k, (long long)stage->store.configs[job->k_config].rows, "key rows"}};
    const qk_src src = {&r->t, ctx->opt->rotation, NULL};
    for (size_t i = 0; i < sizeof facts / sizeof facts[0]; i++) {
        long long v = (long long)qk_src_count(&src, row, facts[i].col);
        if (v != facts[i].store)
            qk_die(QK_EXIT_DATA, ctx->opt->rotation, "head l%02dh%02d: %s %lld, the store "
                   "%s has %lld %s (the table is from another store)", job->layer, job->head,
                   r->t.header[facts[i].col], v, ctx->opt->store, facts[i].store,
                   facts[i].what);
    }
}

/* Reads the axes and the rotation table and finds the job each axes head
 * belongs to; every axes head must be in the store with the same key
 * head, and of its dimension, and the table must agree with the store. */
static int match_jobs(void *arg, const qk_stage *stage, qk_err *err)
{
    run_ctx *ctx = arg;
    const qk_rot_axes_file *axes = &ctx->axes;
    const char *axes_path = ctx->opt->axes;
    if (qk_rot_axes_load(axes_path, &ctx->axes, err) != 0)
        qk_die(QK_EXIT_DATA, axes_path, "%s", err->msg);
    load_rotation(ctx->opt, axes, &ctx->rot);
    if (axes->n_heads > 0 && axes->dim != stage->store.dim)
        qk_die(QK_EXIT_DATA, axes_path, "axes of dimension %d, the store's vectors have %d",
               axes->dim, stage->store.dim);
    ctx->axes_of_job = qk_malloc((size_t)(stage->n_jobs ? stage->n_jobs : 1) * sizeof(int));
    ctx->job_of_axes = qk_malloc((size_t)(axes->n_heads ? axes->n_heads : 1) * sizeof(int));
    int found = 0;
    for (int j = 0; j < stage->n_jobs; j++) {
        const qk_head_job *job = &stage->jobs[j];
        int h = ctx->axes_of_job[j] = qk_rot_axes_find(axes, job->layer, job->head);
        if (h < 0)
            continue;
        found++;
        ctx->job_of_axes[h] = j;
        if (axes->kv_head[h] != job->kv_head)
            qk_die(QK_EXIT_DATA, axes_path, "head l%02dh%02d: key head %d, the store pairs it "
                   "with %d", job->layer, job->head, axes->kv_head[h], job->kv_head);
    }
    if (found != axes->n_heads)
        qk_die(QK_EXIT_DATA, axes_path, "%d of its %d heads are not in %s",
               axes->n_heads - found, axes->n_heads, ctx->opt->store);
    for (int i = 0; i < ctx->rot.t.n_rows; i++)
        check_rotation_row(ctx, stage, i);
    return 0;
}

/* The heads qk-rotate analysed (no warning: it warned about the others). */
static int usable(void *arg, const qk_stage *stage, int i, char *why, size_t cap)
{
    (void)stage, (void)why, (void)cap;
    const run_ctx *ctx = arg;
    return ctx->axes_of_job[i] >= 0;
}

/* One head; the pooled moments come from the axes file, where qk-rotate
 * left them. */
static int analyse(void *arg, void *state, const qk_stage_head *h, void *result, qk_err *err)
{
    const run_ctx *ctx = arg;
    const qk_rot_axes_file *axes = &ctx->axes;
    size_t d = (size_t)ctx->stage->store.dim;
    int a = ctx->axes_of_job[h->index];
    qk_rot_rows rq = {h->q_vectors, h->q->position, h->q->rows};
    qk_rot_rows rk = {h->k_vectors, h->k->position, h->k->rows};
    if (axes->pooled[a].n != rq.n + rk.n)
        return qk_fail(err, "%" PRId64 " rows in the axes file, %" PRId64 " in the store "
                       "(the axes are from another store)", axes->pooled[a].n, rq.n + rk.n);
    return qk_comp_analyse(&rq, &rk, &axes->pooled[a], axes->a + (size_t)a * d,
                           axes->b + (size_t)a * d, ctx->opt->tau, state, result, err);
}

/* ---- output ------------------------------------------------------------------------------ */

/* A number cell without "-0". */
static void put_num(FILE *fp, double v)
{
    qk_put_num(fp, v + 0.0);
}

/* What the tables are written from: the rows of the rotation table, each
 * with its head in the axes file and that head's result. */
typedef struct tables {
    const rotation_table *rot;
    const qk_rot_axes_file *axes;
    const qk_comp_head **by_axes; /* [axes->n_heads] */
    double tau;
} tables;

static void write_pairs(FILE *fp, const void *arg)
{
    const tables *t = arg;
    const rotation_table *rot = t->rot;
    const qk_rot_axes_file *axes = t->axes;
    fputs("checkpoint\tlayer\thead\tkv_head\tpair\tpair_var_frac\tangle_r\tangle_r_best"
          "\tbest_cut\tcls_acc\tradial_cv\tactive\n", fp);
    for (int i = 0; i < rot->t.n_rows; i++) {
        int h = rot->axes_index[i];
        const qk_comp_head *r = t->by_axes[h];
        for (int p = 0; p < r->n_pairs; p++) {
            const qk_comp_pair *q = &r->pair[p];
            fprintf(fp, "%s\t%d\t%d\t%d\t%d", qk_table_cell(&rot->t, i, rot->col_checkpoint),
                    axes->layer[h], axes->head[h], axes->kv_head[h], p);
            const double v[] = {q->var_frac, q->angle_r, q->angle_r_best, q->best_cut,
                                q->cls_acc, q->radial_cv};
            for (size_t c = 0; c < sizeof v / sizeof v[0]; c++)
                put_num(fp, v[c]);
            fprintf(fp, "\t%d\n", fabs(q->angle_r_best) >= t->tau);
        }
    }
}

static const char summary_columns[] =
    "residual_pos_r\tn_active_planes\tn_active_planes_03\tactive_var_frac"
    "\tmax_abs_angle_r\tring_cls_acc";

static void put_summary(FILE *fp, const qk_comp_head *r)
{
    put_num(fp, r->residual_pos_r);
    fprintf(fp, "\t%d\t%d", r->n_active, r->n_active_high);
    put_num(fp, r->active_var_frac);
    put_num(fp, r->max_abs_angle_r);
    put_num(fp, r->ring_cls_acc);
    fputc('\n', fp);
}

static void write_heads(FILE *fp, const void *arg)
{
    const tables *t = arg;
    const qk_rot_axes_file *axes = t->axes;
    fprintf(fp, "layer\thead\tkv_head\tn_pairs\tcomplement_var\t%s\n", summary_columns);
    for (int i = 0; i < t->rot->t.n_rows; i++) {
        int h = t->rot->axes_index[i];
        const qk_comp_head *r = t->by_axes[h];
        fprintf(fp, "%d\t%d\t%d\t%d", axes->layer[h], axes->head[h], axes->kv_head[h],
                r->n_pairs);
        put_num(fp, r->complement_var);
        put_summary(fp, r);
    }
}

/* The rotation table's cells as they are, then the summaries. */
static void write_rotated(FILE *fp, const void *arg)
{
    const tables *t = arg;
    const rotation_table *rot = t->rot;
    for (int c = 0; c < rot->t.n_cols; c++)
        fprintf(fp, "%s\t", rot->t.header[c]);
    fprintf(fp, "%s\n", summary_columns);
    for (int i = 0; i < rot->t.n_rows; i++) {
        for (int c = 0; c < rot->t.n_cols; c++)
            fprintf(fp, "%s%s", c ? "\t" : "", qk_table_cell(&rot->t, i, c));
        put_summary(fp, t->by_axes[rot->axes_index[i]]);
    }
}

/* ---- main ---------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    qk_set_progname("qk-complement");
    parse_args(argc, argv, &opts);
    options o = opts;

    /* the store is opened first, then the axes and the table (match_jobs) */
    qk_stage stage;
    run_ctx ctx = {.stage = &stage, .opt = &o};
    qk_stage_spec spec = {.store = o.store, .verify = o.verify, .threads = o.threads,
                          .what = "complement", .result_size = sizeof(qk_comp_head),
                          .share_key = 1, .ctx = &ctx, .prepare = match_jobs,
                          .usable = usable, .thread_init = thread_init,
                          .thread_free = thread_free, .analyse = analyse};
    qk_stage_run(&stage, &spec);
    const qk_rot_axes_file *axes = &ctx.axes;

    /* the results in the order of the axes file, as the tables index them */
    const qk_comp_head **by_axes = qk_malloc((size_t)(axes->n_heads ? axes->n_heads : 1) *
                                             sizeof *by_axes);
    for (int h = 0; h < axes->n_heads; h++)
        by_axes[h] = qk_stage_result(&stage, ctx.job_of_axes[h]);
    tables t = {&ctx.rot, axes, by_axes, o.tau};
    const qk_output outputs[] = {{o.pairs_output, write_pairs, NULL},
                                 {o.heads_output, write_heads, NULL},
                                 {o.rotated_output, write_rotated, NULL}};
    qk_write_outputs(outputs, 3, &t);
    qk_stage_finish(&stage, NULL);

    free(by_axes);
    free(ctx.axes_of_job);
    free(ctx.job_of_axes);
    free(ctx.rot.axes_index);
    qk_table_free(&ctx.rot.t);
    qk_rot_axes_free(&ctx.axes);
    free(o.axes);
    free(o.rotation);
    free(o.pairs_output);
    free(o.heads_output);
    free(o.rotated_output);
    return QK_EXIT_OK;
}
