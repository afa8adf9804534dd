/* qk-rotate: the planar rotation model of every head of a store
 * (docs/rotation.md, "One head: the {a, b} plane"): drift axis a, separation axis b,
 * the {a, b} metrics and the omega fit, one row per head, plus the axes for
 * qk-complement. With --summary, the per-model summary of a merged
 * per-head table instead. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/heads.h"
#include "qk/moments.h"
#include "qk/rotation.h"
#include "qk/rotation_tables.h"
#include "qk/stage.h"
#include "qk/store.h"

enum { OPT_AXES = QK_KEY_FIRST, OPT_FAMILY, OPT_CHECKPOINT, OPT_B_MODE, OPT_B_SIGN, OPT_GRID,
       OPT_REFINE, OPT_SUMMARY };

typedef struct options {
    const char *input;
    char *output;
    char *axes_output;
    const char *family;
    const char *checkpoint;
    qk_rot_options rot;
    int threads;
    int summary;
    int verify;
} options;

/* What the command line sets, the rows of the rotation model into rot. */
static options opts;

static const qk_option options_table[] = {
    QK_OPTION_OUTPUT("per-head table (default: rotation.tsv beside STORE)"),
    {OPT_AXES, "axes-output", "FILE", "axes a and b of each head (default: rotation_axes.bin "
                                      "beside STORE)"},
    {OPT_FAMILY, "family", "NAME", "model family written in every row (default unknown)"},
    {OPT_CHECKPOINT, "checkpoint", "NAME", "checkpoint label written in every row (default -)"},
    QK_OPTION_CHOICE(OPT_B_MODE, "b-mode", "MODE", &opts.rot.b_mode, "eigen centroid",
                     QK_STR(QK_DEFAULT_ROT_B_MODE), "eigen (top eigenvector of P_a C_delta P_a) "
                     "or centroid (P_a (mu_Q - mu_K), normalised)"),
    QK_OPTION_CHOICE(OPT_B_SIGN, "b-sign", "SIGN", &opts.rot.b_sign, "canonical raw",
                     QK_STR(QK_DEFAULT_ROT_B_SIGN), "canonical (b.(mu_Q - mu_K) >= 0) or raw"),
    QK_OPTION_INT(OPT_GRID, "omega-grid", "N", &opts.rot.omega_grid, 3, 100000,
                  QK_STR(QK_DEFAULT_ROT_OMEGA_GRID), "frequencies of the omega grid"),
    QK_OPTION_INT(OPT_REFINE, "omega-refine", "N", &opts.rot.omega_refine, 0, 1000,
                  QK_STR(QK_DEFAULT_ROT_OMEGA_REFINE), "golden-section steps after the grid"),
    QK_OPTION_THREADS,
    {OPT_SUMMARY, "summary", NULL, "summarise a per-head table (see above)"},
    QK_OPTION_NO_VERIFY,
    QK_OPTION_QUIET,
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-rotate",
    "qk-rotate [OPTIONS] STORE\n"
    "qk-rotate --summary -o OUTPUT TABLE",
    "The planar rotation model of every head of a store written by qk-load: the\n"
    "queries of each query head are pooled with the keys of its key head; the\n"
    "drift axis a is the pooled covariance of the vectors with token position,\n"
    "the separation axis b the top direction of the query-key difference second\n"
    "moment orthogonal to a. Writes one row of metrics per head (slopes, cluster\n"
    "means, bias strength, separation strength, variance fractions, the omega\n"
    "sinusoid fit, ...) and the axes of each head for qk-complement.\n"
    "Heads with fewer than " QK_STR(QK_ROT_MIN_KIND) " query or key rows are skipped with a "
    "warning.\n"
    "\n"
    "With --summary, TABLE is a merged per-head table (rotated.csv, with model\n"
    "and family columns) and OUTPUT gets one CSV row of means, medians,\n"
    "fractions and quartiles per model.\n",
    options_table, NULL, "qk-rotate --threads 2 --family llama build/llama3.2-3b/store.qks",
    NULL};

/* A label written into table cells: no separators, not empty. */
static void parse_option(options *o, int key, const char *value, const char **axes)
{
    switch (key) {
    case OPT_AXES: *axes = value; break;
    case OPT_FAMILY: o->family = qk_opt_label("--family", value); break;
    case OPT_CHECKPOINT: o->checkpoint = qk_opt_label("--checkpoint", value); break;
    case OPT_SUMMARY: o->summary = 1; break;
    }
}

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    qk_rot_options_default(&o->rot);
    o->family = "unknown";
    o->checkpoint = "-";
    const char *axes = NULL, *value;
    qk_args a;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;)
        parse_option(o, key, value, &axes);
    qk_args_operands(&a, 1, 1);
    if (o->summary && !a.output)
        qk_usage_error(&program);
    o->input = a.operands[0];
    o->threads = a.threads;
    o->verify = a.verify;
    o->output = a.output ? qk_strdup(a.output) : qk_path_beside(o->input, "rotation.tsv");
    o->axes_output = axes ? qk_strdup(axes) : qk_path_beside(o->input, "rotation_axes.bin");
    if (!o->summary) {
        const char *outputs[] = {o->output, o->axes_output};
        static const char *const output_options[] = {"--output", "--axes-output"};
        qk_outputs_check(outputs, output_options, 2, 0);
    }
}

/* ---- the analysis of every head ---------------------------------------------------- */

typedef struct run_ctx {
    const qk_stage *stage;
    const options *opt;
} run_ctx;

/* A head's result: its metrics, and for qk-complement its axes and pooled
 * moments. */
typedef struct head_result {
    qk_rot_head metrics;
    double *ab;         /* [2 * dim]: a, then b */
    qk_moments pooled;  /* zeroed until analysed: qk_moments_free is safe */
} head_result;

typedef struct thread_state {
    qk_moments mq, mk;
    qk_rot_work work;
} thread_state;

static void *thread_init(void *arg)
{
    const run_ctx *ctx = arg;
    int dim = ctx->stage->store.dim;
    thread_state *st = qk_calloc(1, sizeof *st);
    qk_moments_init(&st->mq, dim);
    qk_moments_init(&st->mk, dim);
    qk_rot_work_init(&st->work, dim);
    return st;
}

static void thread_free(void *arg)
{
    thread_state *st = arg;
    qk_moments_free(&st->mq);
    qk_moments_free(&st->mk);
    qk_rot_work_free(&st->work);
    free(st);
}

static int check_store(void *arg, const qk_stage *stage, qk_err *err)
{
    (void)arg;
    if (stage->store.dim < 2)
        return qk_fail(err, "vector dimension %d (the rotation model needs >= 2)",
                       stage->store.dim);
    return 0;
}

static int usable(void *arg, const qk_stage *stage, int i, char *why, size_t cap)
{
    (void)arg;
    const qk_store *s = &stage->store;
    int64_t nq = s->configs[stage->jobs[i].q_config].rows;
    int64_t nk = s->configs[stage->jobs[i].k_config].rows;
    if (qk_rot_head_usable(nq, nk))
        return 1;
    snprintf(why, cap, "%" PRId64 " query and %" PRId64 " key rows (needs >= %d of each)", nq,
             nk, QK_ROT_MIN_KIND);
    return 0;
}

/* One head; the key moments are computed once per key head and thread. */
static int analyse(void *arg, void *state, const qk_stage_head *h, void *result, qk_err *err)
{
    const run_ctx *ctx = arg;
    thread_state *st = state;
    head_result *r = result;
    int d = ctx->stage->store.dim;
    qk_rot_rows rq = {h->q_vectors, h->q->position, h->q->rows};
    qk_rot_rows rk = {h->k_vectors, h->k->position, h->k->rows};
    if (h->first_of_key)
        qk_moments_compute(&st->mk, rk.vector, rk.position, rk.n);
    qk_moments_compute(&st->mq, rq.vector, rq.position, rq.n);
    if (qk_rot_analyse(&rq, &rk, &st->mq, &st->mk, &ctx->opt->rot, &st->work, &r->metrics,
                       err) != 0)
        return -1;
    r->ab = qk_doubles(2 * (size_t)d);
    memcpy(r->ab, st->work.a, (size_t)d * sizeof(double));
    memcpy(r->ab + d, st->work.b, (size_t)d * sizeof(double));
    qk_moments_init(&r->pooled, d);
    qk_moments_copy(&r->pooled, &st->work.pooled);
    return 0;
}

/* ---- output ---------------------------------------------------------------------------- */

static const char table_header[] =
    "family\tcheckpoint\tlayer\thead\tkv_head\td\tn_q\tn_k\tt_min\tt_max\tdepth"
    "\tposition_r\tomega\tomega_r_squared\tr_q_a\tr_k_a\talpha_q\talpha_k"
    "\tseparation_strength\tvar_frac_a\tvar_frac_b\tplane_var_fraction"
    "\tmu_q_a\tmu_k_a\tmu_q_b\tmu_k_b\tbias_strength\tcontent_var_b"
    "\tslope_ratio\tbias_range\ttotal_var\tlin_r_squared_w\tomega_at_bound"
    "\tb_centroid_cos\tresid_sep_frac\tflag_degenerate_a\tflag_degenerate_b\n";

static void write_row(FILE *fp, const options *o, const qk_store *s, const qk_head_job *j,
                      const qk_rot_head *r)
{
    int n_layers = (int)s->header.n_layers;
    double depth = n_layers > 1 ? (double)j->layer / (n_layers - 1) : 0.0;
    fprintf(fp, "%s\t%s\t%d\t%d\t%d\t%d\t%" PRId64 "\t%" PRId64 "\t%d\t%d", o->family,
            o->checkpoint, j->layer, j->head, j->kv_head, r->dim, r->n_q, r->n_k,
            (int)r->t_min, (int)r->t_max);
    const double v[] = {depth, r->position_r, r->omega.omega, r->omega.r_squared, r->r_q_a,
                        r->r_k_a, r->alpha_q, r->alpha_k, r->separation_strength,
                        r->var_frac_a, r->var_frac_b, r->plane_var_fraction, r->mu_q_a,
                        r->mu_k_a, r->mu_q_b, r->mu_k_b, r->bias_strength, r->content_var_b,
                        r->slope_ratio, r->bias_range, r->total_var,
                        r->omega.lin_r_squared_w};
    for (size_t c = 0; c < sizeof v / sizeof v[0]; c++)
        qk_put_num(fp, v[c] + 0.0); /* + 0.0: no "-0" */
    fprintf(fp, "\t%d", r->omega.at_bound);
    qk_put_num(fp, r->b_centroid_cos + 0.0);
    qk_put_num(fp, r->resid_sep_frac + 0.0);
    fprintf(fp, "\t%d\t%d\n", r->flag_degenerate_a, r->flag_degenerate_b);
}

static void write_table(FILE *fp, const void *arg)
{
    const run_ctx *ctx = arg;
    const qk_stage *stage = ctx->stage;
    fputs(table_header, fp);
    for (int i = 0; i < stage->n_jobs; i++)
        if (stage->usable[i]) {
            const head_result *r = qk_stage_result(stage, i);
            write_row(fp, ctx->opt, &stage->store, &stage->jobs[i], &r->metrics);
        }
}

static int write_axes(FILE *fp, const void *arg, qk_err *err)
{
    const qk_stage *stage = ((const run_ctx *)arg)->stage;
    int d = stage->store.dim;
    qk_rot_axes_writer aw;
    if (qk_rot_axes_begin(&aw, fp, d, err) != 0)
        return -1;
    for (int i = 0; i < stage->n_jobs; i++) {
        const qk_head_job *j = &stage->jobs[i];
        const head_result *r = qk_stage_result(stage, i);
        if (stage->usable[i] && qk_rot_axes_add(&aw, j->layer, j->head, j->kv_head, r->ab,
                                                r->ab + d, &r->pooled, err) != 0)
            return -1;
    }
    return qk_rot_axes_finish(&aw, err);
}

/* ---- main ---------------------------------------------------------------------------------- */

static int run_summary(const options *o)
{
    qk_atomic out;
    qk_err err;
    qk_output_open(&out, o->output);
    if (qk_rot_model_summary(o->input, out.fp, &err) != 0) {
        qk_atomic_abort(&out);
        qk_die(QK_EXIT_DATA, o->input, "%s", err.msg);
    }
    qk_output_commit(&out);
    return QK_EXIT_OK;
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-rotate");
    parse_args(argc, argv, &opts);
    options o = opts;
    if (o.summary)
        return run_summary(&o);
    qk_stage stage;
    run_ctx ctx = {&stage, &o};
    qk_stage_spec spec = {.store = o.input, .verify = o.verify, .threads = o.threads,
                          .what = "rotation model", .result_size = sizeof(head_result),
                          .share_key = 1, .ctx = &ctx, .prepare = check_store,
                          .usable = usable, .thread_init = thread_init,
                          .thread_free = thread_free, .analyse = analyse};
    qk_stage_run(&stage, &spec);
    const qk_output outputs[] = {{o.output, write_table, NULL},
                                 {o.axes_output, NULL, write_axes}};
    qk_write_outputs(outputs, 2, &ctx);
    for (int i = 0; i < stage.n_jobs; i++) {
        head_result *r = qk_stage_result(&stage, i);
        free(r->ab);
        qk_moments_free(&r->pooled);
    }
    qk_stage_finish(&stage, NULL);
    free(o.output);
    free(o.axes_output);
    return QK_EXIT_OK;
}
