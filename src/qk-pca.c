/* qk-pca: the combined query/key PCA of every head of a store (spec
 * pca.md 2-4, docs/pca.md). Writes one row per (head, component) and one
 * row per head. */
#include <cblas.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qk/common.h"
#include "qk/moments.h"
#include "qk/pca.h"
#include "qk/store.h"

#define MAX_THREADS 256

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-pca [OPTIONS] STORE\n"
        "\n"
        "Combined query/key PCA of every head of a store written by qk-load: the\n"
        "queries of each query head are pooled with the keys of its key head, the\n"
        "top %d principal components of the pooled covariance are found, and each\n"
        "gets its explained-variance ratio and the Pearson correlation of the query\n"
        "and of the key projections with token position (signs made canonical).\n"
        "Heads with fewer than %d query or key rows, or fewer than %d rows in all,\n"
        "are skipped with a warning.\n"
        "\n"
        "Options:\n"
        "  -o, --output FILE        per-component table, %d rows a head\n"
        "                           (default: pca.tsv beside STORE)\n"
        "      --heads-output FILE  per-head table (default: pca_heads.tsv beside STORE)\n"
        "  -j, --threads N          worker threads (default 2); the output does not\n"
        "                           depend on N\n"
        "      --max-rows N         use only the first N rows of each config\n"
        "                           (default: all rows)\n"
        "      --no-verify          do not check the store's checksum\n"
        "  -q, --quiet              no progress lines\n"
        "  -h, --help               this text\n"
        "      --version            print the version\n"
        "\n"
        "Exit status: 0 success, 1 usage error, 2 bad or unreadable data.\n"
        "Example: qk-pca --threads 2 build/llama3.2-3b/store.qks\n",
        QK_PCA_N_PC, QK_PCA_MIN_KIND, QK_PCA_MIN_ROWS, QK_PCA_N_PC);
}

typedef struct options {
    const char *store;
    char *output;
    char *heads_output;
    int threads;
    int64_t max_rows; /* 0: all */
    int verify;
} options;

static long parse_count(const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        qk_die(QK_EXIT_USAGE, NULL, "%s: expected an integer in [%ld, %ld], got '%s'", opt, lo,
               hi, s);
    return v;
}

/* DIR/NAME for the directory holding path. */
static char *beside(const char *path, const char *name)
{
    char *dir = qk_strdup(path);
    char *slash = strrchr(dir, '/');
    if (slash)
        slash[slash == dir ? 1 : 0] = '\0';
    char *out = qk_path_join(slash ? dir : ".", name);
    free(dir);
    return out;
}

static void parse_args(int argc, char **argv, options *o)
{
    enum { OPT_HEADS = 256, OPT_MAX_ROWS, OPT_NO_VERIFY, OPT_VERSION };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"heads-output", required_argument, NULL, OPT_HEADS},
        {"threads", required_argument, NULL, 'j'},
        {"max-rows", required_argument, NULL, OPT_MAX_ROWS},
        {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    o->threads = 2;
    o->verify = 1;
    const char *output = NULL, *heads = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:j:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case OPT_HEADS: heads = optarg; break;
        case 'j': o->threads = (int)parse_count("--threads", optarg, 1, MAX_THREADS); break;
        case OPT_MAX_ROWS:
            o->max_rows = parse_count("--max-rows", optarg, 1, 2147483647L);
            break;
        case OPT_NO_VERIFY: o->verify = 0; break;
        case 'q': qk_progress_set_quiet(1); break;
        case 'h': usage(stdout); exit(QK_EXIT_OK);
        case OPT_VERSION: printf("qk-pca %s\n", QK_VERSION_STRING); exit(QK_EXIT_OK);
        default: usage(stderr); exit(QK_EXIT_USAGE);
        }
    }
    if (optind + 1 != argc) {
        usage(stderr);
        exit(QK_EXIT_USAGE);
    }
    o->store = argv[optind];
    o->output = output ? qk_strdup(output) : beside(o->store, "pca.tsv");
    o->heads_output = heads ? qk_strdup(heads) : beside(o->store, "pca_heads.tsv");
}

/* ---- the heads of a store ---------------------------------------------------- */

/* One query head and its key head. */
typedef struct head_job {
    int layer, head, k_head;
    int q_config, k_config; /* indices into the store's config table */
    int usable;
    qk_pca_head result;
} head_job;

static int cmp_job_head(const void *a, const void *b)
{
    const head_job *x = a, *y = b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return (x->head > y->head) - (x->head < y->head);
}

static int64_t capped(int64_t rows, int64_t max_rows)
{
    return max_rows > 0 && rows > max_rows ? max_rows : rows;
}

/* The jobs of the store's pairs, sorted by (layer, query head). */
static head_job *collect_jobs(const qk_store *s, const options *o, int *n_jobs)
{
    head_job *jobs = qk_calloc((size_t)(s->n_pairs ? s->n_pairs : 1), sizeof *jobs);
    for (int i = 0; i < s->n_pairs; i++) {
        const qk_store_config *q = &s->configs[s->pairs[i].q];
        const qk_store_config *k = &s->configs[s->pairs[i].k];
        if (q->kind != 'q' || k->kind != 'k' || q->layer != k->layer)
            qk_die(QK_EXIT_DATA, o->store,
                   "pair %d joins l%02dh%02d%c with l%02dh%02d%c (expected a query and a "
                   "key config of one layer)", i, q->layer, q->head, q->kind, k->layer,
                   k->head, k->kind);
        head_job *j = &jobs[i];
        j->layer = q->layer;
        j->head = q->head;
        j->k_head = k->head;
        j->q_config = (int)s->pairs[i].q;
        j->k_config = (int)s->pairs[i].k;
        j->usable = qk_pca_head_usable(capped(q->rows, o->max_rows),
                                       capped(k->rows, o->max_rows));
    }
    qsort(jobs, (size_t)s->n_pairs, sizeof *jobs, cmp_job_head);
    for (int i = 1; i < s->n_pairs; i++)
        if (cmp_job_head(&jobs[i - 1], &jobs[i]) == 0)
            qk_die(QK_EXIT_DATA, o->store, "query head l%02dh%02d appears in two pairs",
                   jobs[i].layer, jobs[i].head);
    *n_jobs = s->n_pairs;
    return jobs;
}

/* ---- parallel analysis ---------------------------------------------------------- */

/* Work is handed out by key config, so that the moments of a key head are
 * computed once for all of its query heads. Each head's result lands in
 * its own slot: the output does not depend on which thread did what. */
typedef struct run_ctx {
    const qk_store *store;
    const options *opt;
    head_job *jobs;
    int *order;       /* job indices sorted by key config */
    int *group_start; /* [n_groups + 1] ranges of order sharing a key config */
    int n_groups;
    int next_group;
    int failed;
    char error[600];
    pthread_mutex_t lock;
} run_ctx;

static const head_job *sort_jobs_base;
static int cmp_by_key_config(const void *a, const void *b)
{
    const head_job *x = &sort_jobs_base[*(const int *)a], *y = &sort_jobs_base[*(const int *)b];
    if (x->k_config != y->k_config)
        return x->k_config < y->k_config ? -1 : 1;
    return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b);
}

static void group_by_key(run_ctx *ctx, int n_jobs)
{
    ctx->order = qk_malloc((size_t)(n_jobs ? n_jobs : 1) * sizeof(int));
    ctx->group_start = qk_malloc((size_t)(n_jobs + 1) * sizeof(int));
    for (int i = 0; i < n_jobs; i++)
        ctx->order[i] = i;
    sort_jobs_base = ctx->jobs;
    qsort(ctx->order, (size_t)n_jobs, sizeof(int), cmp_by_key_config);
    ctx->n_groups = 0;
    for (int i = 0; i < n_jobs; i++)
        if (i == 0 || ctx->jobs[ctx->order[i]].k_config != ctx->jobs[ctx->order[i - 1]].k_config)
            ctx->group_start[ctx->n_groups++] = i;
    ctx->group_start[ctx->n_groups] = n_jobs;
}

static int take_group(run_ctx *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    int g = ctx->failed || ctx->next_group >= ctx->n_groups ? -1 : ctx->next_group++;
    pthread_mutex_unlock(&ctx->lock);
    return g;
}

static void record_failure(run_ctx *ctx, const head_job *j, const char *msg)
{
    pthread_mutex_lock(&ctx->lock);
    if (!ctx->failed)
        snprintf(ctx->error, sizeof ctx->error, "head l%02dh%02d: %s", j->layer, j->head, msg);
    ctx->failed = 1;
    pthread_mutex_unlock(&ctx->lock);
}

static qk_pca_rows config_rows(const qk_store_config *c, int64_t max_rows)
{
    qk_pca_rows r = {c->vector, c->position, capped(c->rows, max_rows)};
    return r;
}

static void analyse_group(run_ctx *ctx, int g, qk_moments *mq, qk_moments *mk, qk_pca_work *w)
{
    const qk_store *s = ctx->store;
    int have_key = 0;
    for (int i = ctx->group_start[g]; i < ctx->group_start[g + 1]; i++) {
        head_job *j = &ctx->jobs[ctx->order[i]];
        if (!j->usable)
            continue;
        qk_pca_rows rk = config_rows(&s->configs[j->k_config], ctx->opt->max_rows);
        qk_pca_rows rq = config_rows(&s->configs[j->q_config], ctx->opt->max_rows);
        if (!have_key) {
            qk_moments_compute(mk, rk.vector, rk.position, rk.n);
            have_key = 1;
        }
        qk_moments_compute(mq, rq.vector, rq.position, rq.n);
        qk_err err;
        if (qk_pca_analyse(&rq, &rk, mq, mk, w, &j->result, &err) != 0) {
            record_failure(ctx, j, err.msg);
            return;
        }
    }
}

static void *worker(void *arg)
{
    run_ctx *ctx = arg;
    int dim = ctx->store->dim;
    qk_moments mq, mk;
    qk_pca_work w;
    qk_moments_init(&mq, dim);
    qk_moments_init(&mk, dim);
    qk_pca_work_init(&w, dim);
    for (int g; (g = take_group(ctx)) >= 0;)
        analyse_group(ctx, g, &mq, &mk, &w);
    qk_moments_free(&mq);
    qk_moments_free(&mk);
    qk_pca_work_free(&w);
    return NULL;
}

static void run_parallel(run_ctx *ctx, int n_threads)
{
    if (n_threads > ctx->n_groups)
        n_threads = ctx->n_groups > 0 ? ctx->n_groups : 1;
    pthread_t tid[MAX_THREADS];
    int started = 0;
    for (int i = 1; i < n_threads; i++) {
        if (pthread_create(&tid[started], NULL, worker, ctx) != 0)
            break; /* fewer threads only make it slower */
        started++;
    }
    worker(ctx);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
}

/* ---- output --------------------------------------------------------------------- */

static void put_num(FILE *fp, double v)
{
    fputc('\t', fp);
    qk_fprint_double(fp, v);
}

static void write_components(FILE *fp, const head_job *jobs, int n_jobs)
{
    fputs("layer\thead\tk_head\tpc\texplained_variance\tr_q\tr_k\tn_q\tn_k\n", fp);
    for (int i = 0; i < n_jobs; i++) {
        const head_job *j = &jobs[i];
        const qk_pca_head *r = &j->result;
        if (!j->usable)
            continue;
        for (int pc = 0; pc < r->n_pc; pc++) {
            fprintf(fp, "%d\t%d\t%d\t%d", j->layer, j->head, j->k_head, pc);
            put_num(fp, r->ev[pc]);
            put_num(fp, r->r_q[pc]);
            put_num(fp, r->r_k[pc]);
            fprintf(fp, "\t%" PRId64 "\t%" PRId64 "\n", r->n_q, r->n_k);
        }
    }
}

static void write_heads(FILE *fp, const head_job *jobs, int n_jobs)
{
    fputs("layer\thead\tk_head\tn_q\tn_k\ttotal_var\tev0\tr_q0\tr_k0\tpos_var_q\tpos_var_k"
          "\tpc0_share_q\tpc0_share_k\tmu_q0\tmu_k0\tsep0\tfisher0\tacc01\tacc0"
          "\talpha_q0\tbeta_k0\n", fp);
    for (int i = 0; i < n_jobs; i++) {
        const head_job *j = &jobs[i];
        const qk_pca_head *r = &j->result;
        if (!j->usable)
            continue;
        fprintf(fp, "%d\t%d\t%d\t%" PRId64 "\t%" PRId64, j->layer, j->head, j->k_head, r->n_q,
                r->n_k);
        const double v[] = {r->total_var, r->ev[0], r->r_q[0], r->r_k[0], r->pos_var_q,
                            r->pos_var_k, r->pc0_share_q, r->pc0_share_k, r->mu_q0,
                            r->mu_k0, r->sep0, r->fisher0, r->acc01, r->acc0, r->alpha_q0,
                            r->beta_k0};
        for (size_t c = 0; c < sizeof v / sizeof v[0]; c++)
            put_num(fp, v[c]);
        fputc('\n', fp);
    }
}

static void write_table(const char *path, void (*fill)(FILE *, const head_job *, int),
                        const head_job *jobs, int n_jobs)
{
    qk_atomic out;
    qk_err err;
    if (qk_atomic_open(&out, path, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    fill(out.fp, jobs, n_jobs);
    if (qk_atomic_commit(&out, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
}

/* ---- main ------------------------------------------------------------------------- */

static int warn_skipped(const qk_store *s, const options *o, const head_job *jobs, int n)
{
    int skipped = 0;
    for (int i = 0; i < n; i++) {
        if (jobs[i].usable)
            continue;
        skipped++;
        qk_warn("%s: head l%02dh%02d skipped: %" PRId64 " query and %" PRId64
                " key rows (needs >= %d of each and >= %d together)",
                o->store, jobs[i].layer, jobs[i].head,
                capped(s->configs[jobs[i].q_config].rows, o->max_rows),
                capped(s->configs[jobs[i].k_config].rows, o->max_rows), QK_PCA_MIN_KIND,
                QK_PCA_MIN_ROWS);
    }
    return skipped;
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-pca");
    options o;
    parse_args(argc, argv, &o);
    /* parallelism comes from the heads; BLAS runs single-threaded inside
     * each worker, so threads do not oversubscribe the cores */
    openblas_set_num_threads(1);

    qk_store s;
    qk_err err;
    if (qk_store_open(o.store, &s, o.verify, &err) != 0)
        qk_die(QK_EXIT_DATA, o.store, "%s", err.msg);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.store = &s;
    ctx.opt = &o;
    int n_jobs;
    ctx.jobs = collect_jobs(&s, &o, &n_jobs);
    int skipped = warn_skipped(&s, &o, ctx.jobs, n_jobs);
    qk_progress("%.56s: %d heads, d = %d, %d threads", s.header.dataset_id, n_jobs - skipped,
                s.dim, o.threads);
    group_by_key(&ctx, n_jobs);
    pthread_mutex_init(&ctx.lock, NULL);
    run_parallel(&ctx, o.threads);
    pthread_mutex_destroy(&ctx.lock);
    if (ctx.failed)
        qk_die(QK_EXIT_DATA, o.store, "%s", ctx.error);

    write_table(o.output, write_components, ctx.jobs, n_jobs);
    write_table(o.heads_output, write_heads, ctx.jobs, n_jobs);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    qk_progress("%.56s: %d heads analysed, %d skipped, %.2f s", s.header.dataset_id,
                n_jobs - skipped, skipped,
                (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
    free(ctx.jobs);
    free(ctx.order);
    free(ctx.group_start);
    free(o.output);
    free(o.heads_output);
    qk_store_close(&s);
    return QK_EXIT_OK;
}
