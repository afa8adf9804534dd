/* qk-pca: the combined query/key PCA of every head of a store (docs/pca.md,
 * "What is computed for one head"). Writes one row per (head, component)
 * and one row per head. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/heads.h"
#include "qk/moments.h"
#include "qk/pca.h"
#include "qk/stage.h"
#include "qk/store.h"

enum { OPT_HEADS = QK_KEY_FIRST, OPT_MAX_ROWS };

static const qk_option options_table[] = {
    QK_OPTION_OUTPUT("per-component table, " QK_STR(QK_PCA_N_PC) " rows a head (default: pca.tsv "
                     "beside STORE)"),
    {OPT_HEADS, "heads-output", "FILE", "per-head table (default: pca_heads.tsv beside STORE)"},
    QK_OPTION_THREADS,
    {OPT_MAX_ROWS, "max-rows", "N", "use only the first N rows of each config (default: all "
                                    "rows)"},
    QK_OPTION_NO_VERIFY,
    QK_OPTION_QUIET,
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-pca", "qk-pca [OPTIONS] STORE",
    "Combined query/key PCA of every head of a store written by qk-load: the\n"
    "queries of each query head are pooled with the keys of its key head, the\n"
    "top " QK_STR(QK_PCA_N_PC) " principal components of the pooled covariance are found, "
    "and each\n"
    "gets its explained-variance ratio and the Pearson correlation of the query\n"
    "and of the key projections with token position (signs made canonical).\n"
    "Heads with fewer than " QK_STR(QK_PCA_MIN_KIND) " query or key rows, or fewer than "
    QK_STR(QK_PCA_MIN_ROWS) " rows in all,\n"
    "are skipped with a warning.\n",
    options_table, NULL, "qk-pca --threads 2 build/llama3.2-3b/store.qks", NULL};

typedef struct options {
    const char *store;
    char *output;
    char *heads_output;
    int threads;
    int64_t max_rows; /* 0: all */
    int verify;
} options;

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    const char *heads = NULL, *value;
    qk_args a;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        if (key == OPT_HEADS)
            heads = value;
        else if (key == OPT_MAX_ROWS)
            o->max_rows = qk_opt_int("--max-rows", value, 1, 2147483647L);
    }
    qk_args_operands(&a, 1, 1);
    o->store = a.operands[0];
    o->threads = a.threads;
    o->verify = a.verify;
    o->output = a.output ? qk_strdup(a.output) : qk_path_beside(o->store, "pca.tsv");
    o->heads_output = heads ? qk_strdup(heads) : qk_path_beside(o->store, "pca_heads.tsv");
    const char *outputs[] = {o->output, o->heads_output};
    static const char *const output_options[] = {"--output", "--heads-output"};
    qk_outputs_check(outputs, output_options, 2, 0);
}

/* ---- the analysis of every head ---------------------------------------------------- */

typedef struct run_ctx {
    const qk_stage *stage;
    const options *opt;
} run_ctx;

typedef struct thread_state {
    qk_moments mq, mk;
    qk_pca_work work;
} thread_state;

static void *thread_init(void *arg)
{
    const run_ctx *ctx = arg;
    int dim = ctx->stage->store.dim;
    thread_state *st = qk_calloc(1, sizeof *st);
    qk_moments_init(&st->mq, dim);
    qk_moments_init(&st->mk, dim);
    qk_pca_work_init(&st->work, dim);
    return st;
}

static void thread_free(void *arg)
{
    thread_state *st = arg;
    qk_moments_free(&st->mq);
    qk_moments_free(&st->mk);
    qk_pca_work_free(&st->work);
    free(st);
}

static int64_t capped(int64_t rows, int64_t max_rows)
{
    return max_rows > 0 && rows > max_rows ? max_rows : rows;
}

/* Heads with too few rows (after --max-rows) are skipped. */
static int usable(void *arg, const qk_stage *stage, int i, char *why, size_t cap)
{
    const run_ctx *ctx = arg;
    const qk_head_job *j = &stage->jobs[i];
    int64_t nq = capped(stage->store.configs[j->q_config].rows, ctx->opt->max_rows);
    int64_t nk = capped(stage->store.configs[j->k_config].rows, ctx->opt->max_rows);
    if (qk_pca_head_usable(nq, nk))
        return 1;
    snprintf(why, cap, "%" PRId64 " query and %" PRId64 " key rows (needs >= %d of each and "
             ">= %d together)", nq, nk, QK_PCA_MIN_KIND, QK_PCA_MIN_ROWS);
    return 0;
}

/* One head; the key moments are computed once per key head and thread. */
static int analyse(void *arg, void *state, const qk_stage_head *h, void *result, qk_err *err)
{
    const run_ctx *ctx = arg;
    thread_state *st = state;
    int64_t max_rows = ctx->opt->max_rows;
    qk_pca_rows rq = {h->q_vectors, h->q->position, capped(h->q->rows, max_rows)};
    qk_pca_rows rk = {h->k_vectors, h->k->position, capped(h->k->rows, max_rows)};
    if (h->first_of_key)
        qk_moments_compute(&st->mk, rk.vector, rk.position, rk.n);
    qk_moments_compute(&st->mq, rq.vector, rq.position, rq.n);
    return qk_pca_analyse(&rq, &rk, &st->mq, &st->mk, &st->work, result, err);
}

/* ---- output --------------------------------------------------------------------- */

static void write_components(FILE *fp, const void *arg)
{
    const qk_stage *stage = arg;
    fputs("layer\thead\tk_head\tpc\texplained_variance\tr_q\tr_k\tn_q\tn_k\n", fp);
    for (int i = 0; i < stage->n_jobs; i++) {
        const qk_head_job *j = &stage->jobs[i];
        const qk_pca_head *r = qk_stage_result(stage, i);
        if (!stage->usable[i])
            continue;
        for (int pc = 0; pc < r->n_pc; pc++) {
            fprintf(fp, "%d\t%d\t%d\t%d", j->layer, j->head, j->kv_head, pc);
            qk_put_num(fp, r->ev[pc]);
            qk_put_num(fp, r->r_q[pc]);
            qk_put_num(fp, r->r_k[pc]);
            fprintf(fp, "\t%" PRId64 "\t%" PRId64 "\n", r->n_q, r->n_k);
        }
    }
}

static void write_heads(FILE *fp, const void *arg)
{
    const qk_stage *stage = arg;
    fputs("layer\thead\tk_head\tn_q\tn_k\ttotal_var\tev0\tr_q0\tr_k0\tpos_var_q\tpos_var_k"
          "\tpc0_share_q\tpc0_share_k\tmu_q0\tmu_k0\tsep0\tfisher0\tacc01\tacc0"
          "\talpha_q0\tbeta_k0\n", fp);
    for (int i = 0; i < stage->n_jobs; i++) {
        const qk_head_job *j = &stage->jobs[i];
        const qk_pca_head *r = qk_stage_result(stage, i);
        if (!stage->usable[i])
            continue;
        fprintf(fp, "%d\t%d\t%d\t%" PRId64 "\t%" PRId64, j->layer, j->head, j->kv_head, r->n_q,
                r->n_k);
        const double v[] = {r->total_var, r->ev[0], r->r_q[0], r->r_k[0], r->pos_var_q,
                            r->pos_var_k, r->pc0_share_q, r->pc0_share_k, r->mu_q0,
                            r->mu_k0, r->sep0, r->fisher0, r->acc01, r->acc0, r->alpha_q0,
                            r->beta_k0};
        for (size_t c = 0; c < sizeof v / sizeof v[0]; c++)
            qk_put_num(fp, v[c]);
        fputc('\n', fp);
    }
}

/* ---- main ------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    qk_set_progname("qk-pca");
    options o;
    parse_args(argc, argv, &o);
    qk_stage stage;
    run_ctx ctx = {&stage, &o};
    qk_stage_spec spec = {.store = o.store, .verify = o.verify, .threads = o.threads,
                          .what = "PCA", .result_size = sizeof(qk_pca_head), .share_key = 1,
                          .ctx = &ctx, .usable = usable, .thread_init = thread_init,
                          .thread_free = thread_free, .analyse = analyse};
    qk_stage_run(&stage, &spec);
    const qk_output outputs[] = {{o.output, write_components, NULL},
                                 {o.heads_output, write_heads, NULL}};
    qk_write_outputs(outputs, 2, &stage);
    qk_stage_finish(&stage, NULL);
    free(o.output);
    free(o.heads_output);
    return QK_EXIT_OK;
}
