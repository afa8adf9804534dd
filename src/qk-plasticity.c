/* qk-plasticity: attention plasticity of every head of a store (spec
 * plasticity.md V4, docs/plasticity.md). Writes per-head tables (metrics,
 * 1-D profile, 2-D heatmap, component weights) and the model-level tables
 * into one directory. */
#include <cblas.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qk/common.h"
#include "qk/plasticity.h"
#include "qk/store.h"

#define MAX_THREADS 256

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-plasticity [OPTIONS] STORE\n"
        "\n"
        "Attention plasticity of every query head of a store written by qk-load. Per\n"
        "head: the queries are oriented, regressed on position and rotated so that\n"
        "coordinate 1 carries the drift; each query bin (B / bin factor wide) gets a\n"
        "Gaussian query model; for every same-example key pair with both keys before\n"
        "the bin, p = P(q.k1 > q.k2) and PP = 4 p (1 - p) in closed form. PP is\n"
        "averaged per bin (the profile) and per (inter-key distance, query-to-midpoint\n"
        "distance) cell of width B (the heatmap), then over heads.\n"
        "\n"
        "Outputs in DIR: plasticity_heads.tsv, plasticity_profile.tsv,\n"
        "plasticity_pair2d.tsv, plasticity_weights.tsv, plasticity_model.tsv,\n"
        "plasticity_model_profile.tsv, plasticity_model_pair2d.tsv.\n"
        "\n"
        "Options:\n"
        "  -o, --out-dir DIR          where to write (default: the directory of STORE)\n"
        "      --cov MODE             content covariance per bin: diag (default) or full\n"
        "                             (sample covariance + 1e-12 I)\n"
        "      --bin-factor N         query bins are B / N wide (default 10)\n"
        "      --min-pairs N          drop bins with fewer eligible key pairs (default 32)\n"
        "      --pair2d-min-count N   heatmap cells with fewer evaluations are NaN\n"
        "                             (default 32)\n"
        "      --pairs MODE           exact (default: every eligible pair) or sample\n"
        "      --pairs-per-bin N      draws per bin with --pairs sample (default 256)\n"
        "      --seed N               seed of every random choice (default 0)\n"
        "      --max-tokens N         rows per kind above which a random subset is used\n"
        "                             (default 50000)\n"
        "      --normality-dims N     content dimensions given a KS test (default 64)\n"
        "      --p-alpha X            level for q_noise_frac_ks_p_lt_alpha (default 0.01)\n"
        "  -j, --threads N            worker threads (default 2); the output does not\n"
        "                             depend on N\n"
        "      --max-heads N          analyse only the first N heads (by layer, head)\n"
        "      --timing               print the wall time per head on stdout\n"
        "      --no-verify            do not check the store's checksum\n"
        "  -q, --quiet                no progress lines\n"
        "  -h, --help                 this text\n"
        "      --version              print the version\n"
        "\n"
        "Exit status: 0 success, 1 usage error, 2 bad or unreadable data.\n"
        "Example: qk-plasticity --threads 2 build/llama3.2-3b/store.qks\n");
}

typedef struct options {
    const char *store;
    char *out_dir;
    qk_plast_params params;
    int threads;
    int max_heads; /* 0: all */
    int timing;
    int verify;
} options;

static long long parse_int(const char *opt, const char *s, long long lo, long long hi)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        qk_die(QK_EXIT_USAGE, NULL, "%s: expected an integer in [%lld, %lld], got '%s'", opt,
               lo, hi, s);
    return v;
}

static double parse_real(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        qk_die(QK_EXIT_USAGE, NULL, "%s: expected a number, got '%s'", opt, s);
    return v;
}

static int parse_choice(const char *opt, const char *s, const char *a, const char *b)
{
    if (strcmp(s, a) == 0)
        return 0;
    if (strcmp(s, b) == 0)
        return 1;
    qk_die(QK_EXIT_USAGE, NULL, "%s: expected %s or %s, got '%s'", opt, a, b, s);
}

static char *directory_of(const char *path)
{
    char *dir = qk_strdup(path);
    char *slash = strrchr(dir, '/');
    if (!slash) {
        free(dir);
        return qk_strdup(".");
    }
    slash[slash == dir ? 1 : 0] = '\0';
    return dir;
}

static void parse_args(int argc, char **argv, options *o)
{
    enum {
        OPT_COV = 256, OPT_BIN_FACTOR, OPT_MIN_PAIRS, OPT_PAIR2D_MIN, OPT_PAIRS,
        OPT_PAIRS_PER_BIN, OPT_SEED, OPT_MAX_TOKENS, OPT_NORM_DIMS, OPT_P_ALPHA,
        OPT_MAX_HEADS, OPT_TIMING, OPT_NO_VERIFY, OPT_VERSION
    };
    static const struct option longopts[] = {
        {"out-dir", required_argument, NULL, 'o'},
        {"cov", required_argument, NULL, OPT_COV},
        {"bin-factor", required_argument, NULL, OPT_BIN_FACTOR},
        {"min-pairs", required_argument, NULL, OPT_MIN_PAIRS},
        {"pair2d-min-count", required_argument, NULL, OPT_PAIR2D_MIN},
        {"pairs", required_argument, NULL, OPT_PAIRS},
        {"pairs-per-bin", required_argument, NULL, OPT_PAIRS_PER_BIN},
        {"seed", required_argument, NULL, OPT_SEED},
        {"max-tokens", required_argument, NULL, OPT_MAX_TOKENS},
        {"normality-dims", required_argument, NULL, OPT_NORM_DIMS},
        {"p-alpha", required_argument, NULL, OPT_P_ALPHA},
        {"threads", required_argument, NULL, 'j'},
        {"max-heads", required_argument, NULL, OPT_MAX_HEADS},
        {"timing", no_argument, NULL, OPT_TIMING},
        {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    qk_plast_params_default(&o->params);
    qk_plast_params *p = &o->params;
    o->threads = 2;
    o->verify = 1;
    const char *out_dir = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:j:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': out_dir = optarg; break;
        case OPT_COV: p->cov = parse_choice("--cov", optarg, "diag", "full"); break;
        case OPT_BIN_FACTOR:
            p->bin_factor = (int)parse_int("--bin-factor", optarg, 1, 100000);
            break;
        case OPT_MIN_PAIRS:
            p->min_pairs_per_bin = parse_int("--min-pairs", optarg, 1, INT64_MAX);
            break;
        case OPT_PAIR2D_MIN:
            p->pair2d_min_count = parse_int("--pair2d-min-count", optarg, 1, INT64_MAX);
            break;
        case OPT_PAIRS: p->pair_mode = parse_choice("--pairs", optarg, "exact", "sample"); break;
        case OPT_PAIRS_PER_BIN:
            p->pairs_per_bin = (int)parse_int("--pairs-per-bin", optarg, 1, 100000000);
            break;
        case OPT_SEED: p->seed = (uint64_t)parse_int("--seed", optarg, 0, INT64_MAX); break;
        case OPT_MAX_TOKENS:
            p->max_tokens = parse_int("--max-tokens", optarg, 2, INT64_MAX);
            break;
        case OPT_NORM_DIMS:
            p->normality_max_dims = (int)parse_int("--normality-dims", optarg, 0, 1000000);
            break;
        case OPT_P_ALPHA:
            p->p_alpha = parse_real("--p-alpha", optarg);
            if (!(p->p_alpha > 0.0 && p->p_alpha < 1.0))
                qk_die(QK_EXIT_USAGE, NULL, "--p-alpha: expected a number in (0, 1), got '%s'",
                       optarg);
            break;
        case 'j': o->threads = (int)parse_int("--threads", optarg, 1, MAX_THREADS); break;
        case OPT_MAX_HEADS:
            o->max_heads = (int)parse_int("--max-heads", optarg, 1, 1000000);
            break;
        case OPT_TIMING: o->timing = 1; break;
        case OPT_NO_VERIFY: o->verify = 0; break;
        case 'q': qk_progress_set_quiet(1); break;
        case 'h': usage(stdout); exit(QK_EXIT_OK);
        case OPT_VERSION: printf("qk-plasticity %s\n", QK_VERSION_STRING); exit(QK_EXIT_OK);
        default: usage(stderr); exit(QK_EXIT_USAGE);
        }
    }
    if (optind + 1 != argc) {
        usage(stderr);
        exit(QK_EXIT_USAGE);
    }
    o->store = argv[optind];
    o->out_dir = out_dir ? qk_strdup(out_dir) : directory_of(o->store);
}

/* ---- the heads of a store ------------------------------------------------------------- */

typedef struct head_job {
    int layer, head, k_head;
    int q_config, k_config;
    qk_plast_head result;
} head_job;

static int cmp_job(const void *a, const void *b)
{
    const head_job *x = a, *y = b;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return (x->head > y->head) - (x->head < y->head);
}

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
        jobs[i].layer = q->layer;
        jobs[i].head = q->head;
        jobs[i].k_head = k->head;
        jobs[i].q_config = (int)s->pairs[i].q;
        jobs[i].k_config = (int)s->pairs[i].k;
    }
    qsort(jobs, (size_t)s->n_pairs, sizeof *jobs, cmp_job);
    for (int i = 1; i < s->n_pairs; i++)
        if (cmp_job(&jobs[i - 1], &jobs[i]) == 0)
            qk_die(QK_EXIT_DATA, o->store, "query head l%02dh%02d appears in two pairs",
                   jobs[i].layer, jobs[i].head);
    *n_jobs = o->max_heads > 0 && o->max_heads < s->n_pairs ? o->max_heads : s->n_pairs;
    return jobs;
}

/* The grid covers the context and every stored position. */
static void make_grid(const qk_store *s, const options *o, qk_plast_grid *g)
{
    int64_t max_pos = (int64_t)s->header.context_length - 1;
    for (int c = 0; c < s->n_configs; c++)
        for (int64_t r = 0; r < s->configs[c].rows; r++)
            if (s->configs[c].position[r] > max_pos)
                max_pos = s->configs[c].position[r];
    qk_err err;
    if (qk_plast_grid_init(g, (int)s->header.bucket_size, o->params.bin_factor,
                           (int)s->header.context_length, max_pos, &err) != 0)
        qk_die(QK_EXIT_DATA, o->store, "%s", err.msg);
}

/* ---- parallel analysis ------------------------------------------------------------------ */

/* Heads are handed out one by one; each result lands in its job's slot, so
 * the output does not depend on which thread computed what. */
typedef struct run_ctx {
    const qk_store *store;
    const options *opt;
    const qk_plast_grid *grid;
    head_job *jobs;
    int n_jobs;
    int next;
    int done;
    int failed;
    char error[700];
    pthread_mutex_t lock;
} run_ctx;

static int take_job(run_ctx *ctx)
{
    pthread_mutex_lock(&ctx->lock);
    int j = ctx->failed || ctx->next >= ctx->n_jobs ? -1 : ctx->next++;
    pthread_mutex_unlock(&ctx->lock);
    return j;
}

static qk_plast_rows rows_of(const qk_store_config *c)
{
    qk_plast_rows r = {c->rows, c->vector, c->position, c->example_id, c->bucket};
    return r;
}

static void *worker(void *arg)
{
    run_ctx *ctx = arg;
    for (int j; (j = take_job(ctx)) >= 0;) {
        head_job *job = &ctx->jobs[j];
        qk_plast_rows q = rows_of(&ctx->store->configs[job->q_config]);
        qk_plast_rows k = rows_of(&ctx->store->configs[job->k_config]);
        qk_err err;
        int rc = qk_plast_analyse(&q, &k, ctx->store->dim, ctx->grid, &ctx->opt->params,
                                  job->layer, job->head, &job->result, &err);
        pthread_mutex_lock(&ctx->lock);
        if (rc != 0 && !ctx->failed) {
            snprintf(ctx->error, sizeof ctx->error, "head l%02dh%02d: %s", job->layer,
                     job->head, err.msg);
            ctx->failed = 1;
        }
        int done = ++ctx->done;
        pthread_mutex_unlock(&ctx->lock);
        if (done % 25 == 0)
            qk_progress("%d / %d heads", done, ctx->n_jobs);
    }
    return NULL;
}

static void run_parallel(run_ctx *ctx, int n_threads)
{
    if (n_threads > ctx->n_jobs)
        n_threads = ctx->n_jobs > 0 ? ctx->n_jobs : 1;
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

/* ---- output --------------------------------------------------------------------------- */

typedef struct out_ctx {
    const head_job *jobs;
    int n_jobs;
    const qk_plast_grid *grid;
    const qk_plast_model *model;
} out_ctx;

static void put_num(FILE *fp, double v)
{
    fputc('\t', fp);
    qk_fprint_double(fp, v);
}

static void put_head_key(FILE *fp, const head_job *j)
{
    fprintf(fp, "%d\t%d\t%d", j->layer, j->head, j->k_head);
}

static void write_heads(FILE *fp, const out_ctx *c)
{
    fputs("layer\tq_head\tk_head\tn_q_tokens\tn_k_tokens\td_model\tq_R2_pos\tq_beta_norm"
          "\tq_R2_scalar\tq_mae_baseline\tq_mae_proj\tq_mae_ratio\tq_resid0_skew"
          "\tq_resid0_kurt\tq_resid0_ks_p\tq_noise_med_abs_skew\tq_noise_med_abs_kurt"
          "\tq_noise_med_ks_p\tq_noise_frac_ks_p_lt_alpha\tap_overall\tap_first_20pct"
          "\tap_last_20pct\tap_drop", fp);
    for (int i = 0; i < QK_PLAST_N_DECILES; i++)
        fprintf(fp, "\tap_d%d", i);
    fputs("\tap_p0_20\tap_p20_40\tap_p40_60\tap_p60_80\tap_p80_100\tap_len_1_16\tap_len_1_8"
          "\tap_len_1_4\tap_len_1_2\tap_len_1_1\talpha_pos\tbeta_pos\tsigma2_pos\tn_bins"
          "\tn_key_pairs\tn_pair_evals\n", fp);
    for (int i = 0; i < c->n_jobs; i++) {
        const qk_plast_head *h = &c->jobs[i].result;
        put_head_key(fp, &c->jobs[i]);
        fprintf(fp, "\t%" PRId64 "\t%" PRId64 "\t%d", h->n_q, h->n_k, h->d);
        const double v[] = {h->q_r2_pos, h->q_beta_norm, h->q_r2_scalar, h->q_mae_baseline,
                            h->q_mae_proj, h->q_mae_ratio, h->resid0_skew, h->resid0_kurt,
                            h->resid0_ks_p, h->noise_med_abs_skew, h->noise_med_abs_kurt,
                            h->noise_med_ks_p, h->noise_frac_ks_lt_alpha, h->s.ap_overall,
                            h->s.first20, h->s.last20, h->s.drop};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            put_num(fp, v[k]);
        for (int k = 0; k < QK_PLAST_N_DECILES; k++)
            put_num(fp, h->s.decile[k]);
        for (int k = 0; k < QK_PLAST_N_QUINTILES; k++)
            put_num(fp, h->s.quintile[k]);
        for (int k = 0; k < QK_PLAST_N_LENGTHS; k++)
            put_num(fp, h->s.length[k]);
        put_num(fp, h->alpha_pos);
        put_num(fp, h->beta_pos);
        put_num(fp, h->sigma2_pos);
        fprintf(fp, "\t%d\t%" PRId64 "\t%" PRId64 "\n", h->s.n_bins, h->n_key_pairs,
                h->n_evals);
    }
}

static void write_profile(FILE *fp, const out_ctx *c)
{
    fputs("layer\tq_head\tk_head\tq_bin\tbin_position\tn_queries\tn_pairs\tap\n", fp);
    for (int i = 0; i < c->n_jobs; i++) {
        const qk_plast_head *h = &c->jobs[i].result;
        for (int b = 0; b < h->n_bins; b++) {
            if (h->bin_queries[b] == 0)
                continue;
            put_head_key(fp, &c->jobs[i]);
            fprintf(fp, "\t%d", b);
            put_num(fp, h->bin_tau[b]);
            fprintf(fp, "\t%" PRId64 "\t%" PRId64, h->bin_queries[b], h->bin_pairs[b]);
            put_num(fp, h->bin_ap[b]);
            fputc('\n', fp);
        }
    }
}

static void write_pair2d(FILE *fp, const out_ctx *c)
{
    fputs("layer\tq_head\tk_head\tdist_bin\tmid_bin\tn_pairs\tap\n", fp);
    for (int i = 0; i < c->n_jobs; i++) {
        const qk_plast_head *h = &c->jobs[i].result;
        for (int x = 0; x < h->n_cells; x++)
            for (int y = 0; y < h->n_cells; y++) {
                size_t cell = (size_t)x * h->n_cells + y;
                if (h->cell_evals[cell] == 0)
                    continue;
                put_head_key(fp, &c->jobs[i]);
                fprintf(fp, "\t%d\t%d\t%" PRId64, x, y, h->cell_evals[cell]);
                put_num(fp, h->cell_ap[cell]);
                fputc('\n', fp);
            }
    }
}

static void write_weights(FILE *fp, const out_ctx *c)
{
    fputs("layer\tq_head\tk_head\tcomponent\tcomponent_r2\tcomponent_weight\n", fp);
    for (int i = 0; i < c->n_jobs; i++) {
        const qk_plast_head *h = &c->jobs[i].result;
        for (int k = 0; k < h->d; k++) {
            put_head_key(fp, &c->jobs[i]);
            fprintf(fp, "\t%d", k);
            put_num(fp, h->component_r2[k]);
            put_num(fp, h->component_weight[k]);
            fputc('\n', fp);
        }
    }
}

static void write_model(FILE *fp, const out_ctx *c)
{
    const qk_plast_model *m = c->model;
    const qk_plast_grid *g = c->grid;
    const qk_plast_scalars *s = &m->s;
    fputs("n_heads\tn_heads_valid\tcontext_length\tbucket_size\tbin_width\tn_bins"
          "\tfirst_bin_centre\tlast_bin_centre\tap_overall\tap_first_20pct\tap_last_20pct"
          "\tap_drop", fp);
    for (int i = 0; i < QK_PLAST_N_DECILES; i++)
        fprintf(fp, "\td%d", i);
    fputs("\tp0_20\tp20_40\tp40_60\tp60_80\tp80_100\tlen_1_16\tlen_1_8\tlen_1_4\tlen_1_2"
          "\tlen_1_1\trecovery\tap_profile_mean\n", fp);
    fprintf(fp, "%d\t%d\t%d\t%d", m->n_heads, m->n_heads_valid, g->context_length,
            g->bucket_size);
    put_num(fp, (double)g->bucket_size / g->bin_factor);
    fprintf(fp, "\t%d", s->n_bins);
    put_num(fp, s->first_bin >= 0 ? qk_plast_bin_centre(g, s->first_bin) : NAN);
    put_num(fp, s->last_bin >= 0 ? qk_plast_bin_centre(g, s->last_bin) : NAN);
    put_num(fp, s->ap_overall);
    put_num(fp, s->first20);
    put_num(fp, s->last20);
    put_num(fp, s->drop);
    for (int i = 0; i < QK_PLAST_N_DECILES; i++)
        put_num(fp, s->decile[i]);
    for (int i = 0; i < QK_PLAST_N_QUINTILES; i++)
        put_num(fp, s->quintile[i]);
    for (int i = 0; i < QK_PLAST_N_LENGTHS; i++)
        put_num(fp, s->length[i]);
    put_num(fp, s->recovery);
    put_num(fp, s->profile_mean);
    fputc('\n', fp);
}

static void write_model_profile(FILE *fp, const out_ctx *c)
{
    const qk_plast_model *m = c->model;
    fputs("q_bin\tbin_start\tbin_centre\tn_heads\tap\n", fp);
    for (int b = 0; b < m->n_bins; b++) {
        if (m->bin_heads[b] == 0)
            continue;
        fprintf(fp, "%d", b);
        put_num(fp, qk_plast_bin_start(c->grid, b));
        put_num(fp, qk_plast_bin_centre(c->grid, b));
        fprintf(fp, "\t%d", m->bin_heads[b]);
        put_num(fp, m->bin_ap[b]);
        fputc('\n', fp);
    }
}

static void write_model_pair2d(FILE *fp, const out_ctx *c)
{
    const qk_plast_model *m = c->model;
    int64_t width = c->grid->bucket_size;
    fputs("dist_bin\tmid_bin\tdist_start\tmid_start\tn_heads\tn_pairs\tap\n", fp);
    for (int x = 0; x < m->n_cells; x++)
        for (int y = 0; y < m->n_cells; y++) {
            size_t cell = (size_t)x * m->n_cells + y;
            if (m->cell_heads[cell] == 0)
                continue;
            fprintf(fp, "%d\t%d\t%" PRId64 "\t%" PRId64 "\t%d\t%" PRId64, x, y, x * width,
                    y * width, m->cell_heads[cell], m->cell_evals[cell]);
            put_num(fp, m->cell_ap[cell]);
            fputc('\n', fp);
        }
}

static void write_table(const char *dir, const char *name,
                        void (*fill)(FILE *, const out_ctx *), const out_ctx *c)
{
    char *path = qk_path_join(dir, name);
    qk_atomic out;
    qk_err err;
    if (qk_atomic_open(&out, path, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    fill(out.fp, c);
    if (qk_atomic_commit(&out, &err) != 0)
        qk_die(QK_EXIT_DATA, path, "%s", err.msg);
    free(path);
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec);
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-plasticity");
    options o;
    parse_args(argc, argv, &o);
    /* parallelism comes from the heads; BLAS runs single-threaded inside
     * each worker, so the cores are not oversubscribed */
    openblas_set_num_threads(1);

    qk_store s;
    qk_err err;
    if (qk_store_open(o.store, &s, o.verify, &err) != 0)
        qk_die(QK_EXIT_DATA, o.store, "%s", err.msg);
    if (s.dim < 1 || s.header.bucket_size < 1)
        qk_die(QK_EXIT_DATA, o.store, "dim %d, bucket size %u: nothing to analyse", s.dim,
               s.header.bucket_size);
    if (qk_mkdirs(o.out_dir, &err) != 0)
        qk_die(QK_EXIT_DATA, o.out_dir, "%s", err.msg);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    qk_plast_grid grid;
    make_grid(&s, &o, &grid);
    run_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.store = &s;
    ctx.opt = &o;
    ctx.grid = &grid;
    ctx.jobs = collect_jobs(&s, &o, &ctx.n_jobs);
    for (int i = 0; i < ctx.n_jobs; i++)
        qk_plast_head_init(&ctx.jobs[i].result, s.dim, &grid);
    qk_progress("%.56s: %d heads, d = %d, %d bins of %g positions, %d threads",
                s.header.dataset_id, ctx.n_jobs, s.dim, grid.n_bins,
                (double)grid.bucket_size / grid.bin_factor, o.threads);
    pthread_mutex_init(&ctx.lock, NULL);
    run_parallel(&ctx, o.threads);
    pthread_mutex_destroy(&ctx.lock);
    if (ctx.failed)
        qk_die(QK_EXIT_DATA, o.store, "%s", ctx.error);
    double analysis_s = seconds_since(&t0);

    /* the model level, from the heads in (layer, head) order */
    qk_plast_head *heads = qk_calloc((size_t)(ctx.n_jobs ? ctx.n_jobs : 1), sizeof *heads);
    for (int i = 0; i < ctx.n_jobs; i++)
        heads[i] = ctx.jobs[i].result;
    qk_plast_model model;
    qk_plast_model_compute(&model, heads, ctx.n_jobs, &grid);
    free(heads);

    out_ctx oc = {ctx.jobs, ctx.n_jobs, &grid, &model};
    write_table(o.out_dir, "plasticity_heads.tsv", write_heads, &oc);
    write_table(o.out_dir, "plasticity_profile.tsv", write_profile, &oc);
    write_table(o.out_dir, "plasticity_pair2d.tsv", write_pair2d, &oc);
    write_table(o.out_dir, "plasticity_weights.tsv", write_weights, &oc);
    write_table(o.out_dir, "plasticity_model_profile.tsv", write_model_profile, &oc);
    write_table(o.out_dir, "plasticity_model_pair2d.tsv", write_model_pair2d, &oc);
    write_table(o.out_dir, "plasticity_model.tsv", write_model, &oc);
    qk_progress("%.56s: %d heads, model ap_overall %.4f, %.2f s", s.header.dataset_id,
                ctx.n_jobs, model.s.ap_overall, seconds_since(&t0));
    if (o.timing)
        printf("qk-plasticity: %d heads in %.3f s with %d threads: %.4f s per head "
               "(wall time / heads)\n",
               ctx.n_jobs, analysis_s, o.threads, ctx.n_jobs ? analysis_s / ctx.n_jobs : 0.0);

    qk_plast_model_free(&model);
    for (int i = 0; i < ctx.n_jobs; i++)
        qk_plast_head_free(&ctx.jobs[i].result);
    free(ctx.jobs);
    free(o.out_dir);
    qk_store_close(&s);
    return QK_EXIT_OK;
}
