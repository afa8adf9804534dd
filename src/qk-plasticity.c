/* qk-plasticity: attention plasticity of every head of a store
 * (docs/plasticity.md). Writes per-head tables (metrics,
 * 1-D profile, 2-D heatmap, component weights) and the model-level tables
 * into one directory; the metrics table, the primary output, may go
 * elsewhere (-o). */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/blas.h"
#include "qk/cli.h"
#include "qk/common.h"
#include "qk/plasticity.h"
#include "qk/simd.h"
#include "qk/stage.h"
#include "qk/store.h"

enum {
    OPT_OUT_DIR = QK_KEY_FIRST, OPT_COV, OPT_BIN_FACTOR, OPT_MIN_PAIRS, OPT_PAIR2D_MIN,
    OPT_PAIRS, OPT_PAIRS_PER_BIN, OPT_SEED, OPT_MAX_TOKENS, OPT_NORM_DIMS, OPT_P_ALPHA,
    OPT_MAX_HEADS, OPT_TIMING, OPT_FLOOR
};

/* The seven tables, the per-head one first (--output, else in DIR). */
static const char *const table_names[] = {
    "plasticity_heads.tsv", "plasticity_profile.tsv", "plasticity_pair2d.tsv",
    "plasticity_weights.tsv", "plasticity_model_profile.tsv", "plasticity_model_pair2d.tsv",
    "plasticity_model.tsv"};
enum { N_TABLES = sizeof table_names / sizeof table_names[0] };

typedef struct options {
    const char *store;
    char *out_dir;
    char *table_paths[N_TABLES];
    qk_plast_params params;
    int threads;
    int max_heads; /* 0: all */
    int timing;
    int verify;
} options;

/* What the command line sets; the option rows of the analysis write
 * into params. */
static options opts;

static const qk_option options_table[] = {
    QK_OPTION_OUTPUT("per-head table (default: DIR/plasticity_heads.tsv)"),
    {OPT_OUT_DIR, "out-dir", "DIR", "where the other tables go (default: the directory of "
                                    "STORE)"},
    QK_OPTION_CHOICE(OPT_COV, "cov", "MODE", &opts.params.cov, "diag full",
                     QK_STR(QK_DEFAULT_PLAST_COV), "content covariance per bin: diag or full "
                     "(sample covariance + 1e-12 I)"),
    QK_OPTION_INT(OPT_BIN_FACTOR, "bin-factor", "N", &opts.params.bin_factor, 1, 100000,
                  QK_STR(QK_DEFAULT_PLAST_BIN_FACTOR), "query bins are B / N wide"),
    QK_OPTION_INT64(OPT_MIN_PAIRS, "min-pairs", "N", &opts.params.min_pairs_per_bin, 1, INT64_MAX,
                    QK_STR(QK_DEFAULT_PLAST_MIN_PAIRS),
                    "drop bins with fewer eligible key pairs"),
    QK_OPTION_INT64(OPT_PAIR2D_MIN, "pair2d-min-count", "N", &opts.params.pair2d_min_count, 1,
                    INT64_MAX, QK_STR(QK_DEFAULT_PLAST_PAIR2D_MIN),
                    "heatmap cells with fewer evaluations are NaN"),
    QK_OPTION_CHOICE(OPT_PAIRS, "pairs", "MODE", &opts.params.pair_mode, "exact sample",
                     QK_STR(QK_DEFAULT_PLAST_PAIRS), "exact (every eligible pair) or sample"),
    QK_OPTION_INT(OPT_PAIRS_PER_BIN, "pairs-per-bin", "N", &opts.params.pairs_per_bin, 1,
                  100000000, QK_STR(QK_DEFAULT_PLAST_PAIRS_PER_BIN),
                  "draws per bin with --pairs sample"),
    QK_OPTION_UINT64(OPT_SEED, "seed", "N", &opts.params.seed, 0, INT64_MAX,
                     QK_STR(QK_DEFAULT_PLAST_SEED), "seed of every random choice"),
    QK_OPTION_INT64(OPT_MAX_TOKENS, "max-tokens", "N", &opts.params.max_tokens, 2, INT64_MAX,
                    QK_STR(QK_DEFAULT_PLAST_MAX_TOKENS),
                    "rows per kind above which a random subset is used"),
    QK_OPTION_INT(OPT_NORM_DIMS, "normality-dims", "N", &opts.params.normality_max_dims, 0,
                  1000000, QK_STR(QK_DEFAULT_PLAST_NORMALITY_DIMS),
                  "content dimensions given a KS test"),
    QK_OPTION_REAL(QK_OPT_OPEN_UNIT, OPT_P_ALPHA, "p-alpha", "X", &opts.params.p_alpha,
                   QK_STR(QK_DEFAULT_PLAST_P_ALPHA), "level for q_noise_frac_ks_p_lt_alpha"),
    QK_OPTION_THREADS,
    {OPT_MAX_HEADS, "max-heads", "N", "analyse only the first N heads (by layer, head)"},
    {OPT_TIMING, "timing", NULL, "print the wall time per head on stdout"},
    {OPT_FLOOR, "floor", NULL, "also time every head and its floor (its GEMMs and PP "
     "evaluations alone, thread CPU time) and print the means over the heads after each "
     "thread's first as a tab-separated header and line on stdout"},
    QK_OPTION_NO_VERIFY,
    QK_OPTION_QUIET,
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-plasticity", "qk-plasticity [OPTIONS] STORE",
    "Attention plasticity of every query head of a store written by qk-load. Per\n"
    "head: the queries are oriented, regressed on position and rotated so that\n"
    "coordinate 1 carries the drift; each query bin (B / bin factor wide) gets a\n"
    "Gaussian query model; for every same-example key pair with both keys before\n"
    "the bin, p = P(q.k1 > q.k2) and PP = 4 p (1 - p) in closed form. PP is\n"
    "averaged per bin (the profile) and per (inter-key distance, query-to-midpoint\n"
    "distance) cell of width B (the heatmap), then over heads.\n"
    "\n"
    "Outputs: the per-head table (plasticity_heads.tsv, or --output) and, in DIR,\n"
    "plasticity_profile.tsv, plasticity_pair2d.tsv, plasticity_weights.tsv,\n"
    "plasticity_model.tsv, plasticity_model_profile.tsv, plasticity_model_pair2d.tsv.\n"
    "\n"
    "The kernels use the widest instruction set the CPU has; the environment\n"
    "variable QK_ISA=avx2 or scalar (or avx512) asks for a lower one, never one the\n"
    "CPU lacks, in every program of the suite. Every choice gives the same results.\n",
    options_table, NULL, "qk-plasticity --threads 2 build/llama3.2-3b/store.qks", NULL};

static void parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    qk_plast_params_default(&o->params);
    const char *out_dir = NULL, *value;
    qk_args a;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        if (key == OPT_OUT_DIR)
            out_dir = value;
        else if (key == OPT_MAX_HEADS)
            o->max_heads = (int)qk_opt_int("--max-heads", value, 1, 1000000);
        else if (key == OPT_TIMING)
            o->timing = 1;
        else if (key == OPT_FLOOR)
            o->params.time_floor = 1;
    }
    qk_args_operands(&a, 1, 1);
    o->store = a.operands[0];
    o->threads = a.threads;
    o->verify = a.verify;
    o->out_dir = out_dir ? qk_strdup(out_dir) : qk_path_dir(o->store);
    const char *option_of[N_TABLES];
    for (int i = 0; i < N_TABLES; i++) {
        o->table_paths[i] = i == 0 && a.output ? qk_strdup(a.output)
                                               : qk_path_join(o->out_dir, table_names[i]);
        option_of[i] = i == 0 && a.output ? "--output" : "--out-dir";
    }
    /* before the work: -o naming a file of DIR */
    qk_outputs_check((const char *const *)o->table_paths, option_of, N_TABLES, 1);
}

/* ---- the analysis of every head ------------------------------------------------------- */

typedef struct run_ctx {
    const qk_stage *stage;
    const options *opt;
    qk_plast_grid grid; /* set by prepare */
} run_ctx;

/* The store must have vectors and buckets; the grid covers the context and
 * every stored position. */
static int prepare(void *arg, const qk_stage *stage, qk_err *err)
{
    run_ctx *ctx = arg;
    const qk_store *s = &stage->store;
    if (s->dim < 1 || s->header.bucket_size < 1)
        return qk_fail(err, "dim %d, bucket size %u: nothing to analyse", s->dim,
                       s->header.bucket_size);
    for (int i = 0; i < N_TABLES; i++) { /* the directories of the tables (qk_outputs_check) */
        char *dir = qk_path_dir(ctx->opt->table_paths[i]);
        if (qk_mkdirs(dir, err) != 0)
            qk_die(QK_EXIT_DATA, dir, "%s", err->msg);
        free(dir);
    }
    int64_t max_pos = (int64_t)s->header.context_length - 1;
    for (int c = 0; c < s->n_configs; c++)
        for (int64_t r = 0; r < s->configs[c].rows; r++)
            if (s->configs[c].position[r] > max_pos)
                max_pos = s->configs[c].position[r];
    if (qk_plast_grid_init(&ctx->grid, (int)s->header.bucket_size, ctx->opt->params.bin_factor,
                           (int)s->header.context_length, max_pos, err) != 0)
        return -1;
    qk_progress("%.56s: %d bins of %g positions", s->header.dataset_id, ctx->grid.n_bins,
                (double)ctx->grid.bucket_size / ctx->grid.bin_factor);
    return 0;
}

static qk_plast_rows rows_of(const qk_store_config *c, const float *vectors)
{
    return (qk_plast_rows){c->rows, vectors, c->position, c->example_id, c->bucket, c};
}

/* A thread's cache: the layout of the heads of a layer and the keys of a
 * key head are made once for the heads that share them. */
static void *thread_init(void *arg)
{
    (void)arg;
    return qk_plast_cache_new();
}

static void thread_free(void *state)
{
    qk_plast_cache_free(state);
}

static int analyse(void *arg, void *state, const qk_stage_head *h, void *result, qk_err *err)
{
    const run_ctx *ctx = arg;
    int dim = ctx->stage->store.dim;
    qk_plast_rows q = rows_of(h->q, h->q_vectors), k = rows_of(h->k, h->k_vectors);
    qk_plast_head_init(result, dim, &ctx->grid);
    return qk_plast_analyse(&q, &k, dim, &ctx->grid, &ctx->opt->params, h->job->layer,
                            h->job->head, state, result, err);
}

/* ---- output --------------------------------------------------------------------------- */

/* What the tables are written from. */
typedef struct out_ctx {
    const qk_head_job *jobs;
    const qk_plast_head *results; /* [n_jobs] */
    int n_jobs;
    const qk_plast_grid *grid;
    const qk_plast_model *model;
} out_ctx;

static void put_head_key(FILE *fp, const qk_head_job *j)
{
    fprintf(fp, "%d\t%d\t%d", j->layer, j->head, j->kv_head);
}

static void write_heads(FILE *fp, const void *arg)
{
    const out_ctx *c = arg;
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
        const qk_plast_head *h = &c->results[i];
        put_head_key(fp, &c->jobs[i]);
        fprintf(fp, "\t%" PRId64 "\t%" PRId64 "\t%d", h->n_q, h->n_k, h->d);
        const double v[] = {h->q_r2_pos, h->q_beta_norm, h->q_r2_scalar, h->q_mae_baseline,
                            h->q_mae_proj, h->q_mae_ratio, h->resid0_skew, h->resid0_kurt,
                            h->resid0_ks_p, h->noise_med_abs_skew, h->noise_med_abs_kurt,
                            h->noise_med_ks_p, h->noise_frac_ks_lt_alpha, h->s.ap_overall,
                            h->s.first20, h->s.last20, h->s.drop};
        for (size_t k = 0; k < sizeof v / sizeof v[0]; k++)
            qk_put_num(fp, v[k]);
        for (int k = 0; k < QK_PLAST_N_DECILES; k++)
            qk_put_num(fp, h->s.decile[k]);
        for (int k = 0; k < QK_PLAST_N_QUINTILES; k++)
            qk_put_num(fp, h->s.quintile[k]);
        for (int k = 0; k < QK_PLAST_N_LENGTHS; k++)
            qk_put_num(fp, h->s.length[k]);
        qk_put_num(fp, h->alpha_pos);
        qk_put_num(fp, h->beta_pos);
        qk_put_num(fp, h->sigma2_pos);
        fprintf(fp, "\t%d\t%" PRId64 "\t%" PRId64 "\n", h->s.n_bins, h->n_key_pairs,
                h->n_evals);
    }
}

static void write_profile(FILE *fp, const void *arg)
{
    const out_ctx *c = arg;
    fputs("layer\tq_head\tk_head\tq_bin\tbin_position\tn_queries\tn_pairs\tap\n", fp);
    for (int i = 0; i < c->n_jobs; i++) {
        const qk_plast_head *h = &c->results[i];
        for (int b = 0; b < h->n_bins; b++) {
            if (h->bin_queries[b] == 0)
                continue;
            put_head_key(fp, &c->jobs[i]);
            fprintf(fp, "\t%d", b);
            qk_put_num(fp, h->bin_tau[b]);
            fprintf(fp, "\t%" PRId64 "\t%" PRId64, h->bin_queries[b], h->bin_pairs[b]);
            qk_put_num(fp, h->bin_ap[b]);
            fputc('\n', fp);
        }
    }
}

static void write_pair2d(FILE *fp, const void *arg)
{
    const out_ctx *c = arg;
    fputs("layer\tq_head\tk_head\tdist_bin\tmid_bin\tn_pairs\tap\n", fp);
    for (int i = 0; i < c->n_jobs; i++) {
        const qk_plast_head *h = &c->results[i];
        for (int x = 0; x < h->n_cells; x++)
            for (int y = 0; y < h->n_cells; y++) {
                size_t cell = (size_t)x * h->n_cells + y;
                if (h->cell_evals[cell] == 0)
                    continue;
                put_head_key(fp, &c->jobs[i]);
                fprintf(fp, "\t%d\t%d\t%" PRId64, x, y, h->cell_evals[cell]);
                qk_put_num(fp, h->cell_ap[cell]);
                fputc('\n', fp);
            }
    }
}

static void write_weights(FILE *fp, const void *arg)
{
    const out_ctx *c = arg;
    fputs("layer\tq_head\tk_head\tcomponent\tcomponent_r2\tcomponent_weight\n", fp);
    for (int i = 0; i < c->n_jobs; i++) {
        const qk_plast_head *h = &c->results[i];
        for (int k = 0; k < h->d; k++) {
            put_head_key(fp, &c->jobs[i]);
            fprintf(fp, "\t%d", k);
            qk_put_num(fp, h->component_r2[k]);
            qk_put_num(fp, h->component_weight[k]);
            fputc('\n', fp);
        }
    }
}

static void write_model(FILE *fp, const void *arg)
{
    const out_ctx *c = arg;
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
    qk_put_num(fp, (double)g->bucket_size / g->bin_factor);
    fprintf(fp, "\t%d", s->n_bins);
    qk_put_num(fp, s->first_bin >= 0 ? qk_plast_bin_centre(g, s->first_bin) : NAN);
    qk_put_num(fp, s->last_bin >= 0 ? qk_plast_bin_centre(g, s->last_bin) : NAN);
    qk_put_num(fp, s->ap_overall);
    qk_put_num(fp, s->first20);
    qk_put_num(fp, s->last20);
    qk_put_num(fp, s->drop);
    for (int i = 0; i < QK_PLAST_N_DECILES; i++)
        qk_put_num(fp, s->decile[i]);
    for (int i = 0; i < QK_PLAST_N_QUINTILES; i++)
        qk_put_num(fp, s->quintile[i]);
    for (int i = 0; i < QK_PLAST_N_LENGTHS; i++)
        qk_put_num(fp, s->length[i]);
    qk_put_num(fp, s->recovery);
    qk_put_num(fp, s->profile_mean);
    fputc('\n', fp);
}

static void write_model_profile(FILE *fp, const void *arg)
{
    const out_ctx *c = arg;
    const qk_plast_model *m = c->model;
    fputs("q_bin\tbin_start\tbin_centre\tn_heads\tap\n", fp);
    for (int b = 0; b < m->n_bins; b++) {
        if (m->bin_heads[b] == 0)
            continue;
        fprintf(fp, "%d", b);
        qk_put_num(fp, qk_plast_bin_start(c->grid, b));
        qk_put_num(fp, qk_plast_bin_centre(c->grid, b));
        fprintf(fp, "\t%d", m->bin_heads[b]);
        qk_put_num(fp, m->bin_ap[b]);
        fputc('\n', fp);
    }
}

static void write_model_pair2d(FILE *fp, const void *arg)
{
    const out_ctx *c = arg;
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
            qk_put_num(fp, m->cell_ap[cell]);
            fputc('\n', fp);
        }
}

/* --floor: the mean per head of the CPU time and of its floor, one TSV
 * line (docs/plasticity.md, "The floor"), over the heads after each
 * thread's first (all of them when no other is left): the first pays the
 * thread's one-time costs. */
static void print_floor(const qk_plast_head *results, int n, int threads)
{
    int warm = 0, counted = 0;
    for (int i = 0; i < n; i++)
        warm += results[i].timing.warm_up;
    double total = 0.0, gemm = 0.0, pp = 0.0, evals = 0.0;
    for (int i = 0; i < n; i++) {
        if (warm < n && results[i].timing.warm_up)
            continue;
        total += results[i].timing.total;
        gemm += results[i].timing.floor_gemm;
        pp += results[i].timing.floor_pp;
        evals += (double)results[i].timing.n_pp;
        counted++;
    }
    double per = counted ? 1.0 / counted : 0.0, floor = (gemm + pp) * per;
    printf("stage\theads\tthreads\ts_per_head\tfloor_s_per_head\tratio_to_floor"
           "\tfloor_gemm_s_per_head\tfloor_pp_s_per_head\tpp_per_head\tisa\tblas_core\n");
    printf("plasticity\t%d\t%d\t%.6f\t%.6f\t%.3f\t%.6f\t%.6f\t%.0f\t%s\t%s\n", counted,
           threads, total * per, floor, floor > 0.0 ? total * per / floor : NAN, gemm * per,
           pp * per, evals * per, qk_isa_name(qk_isa()), qk_blas_core());
}

/* The seven tables (table_names), renamed into place together. */
static void write_tables(const options *o, const out_ctx *oc)
{
    static void (*const fill[N_TABLES])(FILE *, const void *) = {
        write_heads, write_profile, write_pair2d, write_weights, write_model_profile,
        write_model_pair2d, write_model};
    qk_output outputs[N_TABLES];
    for (int i = 0; i < N_TABLES; i++)
        outputs[i] = (qk_output){o->table_paths[i], fill[i], NULL};
    qk_write_outputs(outputs, N_TABLES, oc);
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-plasticity");
    /* Every head allocates and frees the same tens of megabytes: keep them
     * in the heap instead of handing them back to the system and taking
     * fresh zeroed pages for the next head. */
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    parse_args(argc, argv, &opts);
    options o = opts;
    qk_stage stage;
    run_ctx ctx = {.stage = &stage, .opt = &o};
    qk_stage_spec spec = {.store = o.store, .verify = o.verify, .threads = o.threads,
                          .what = "plasticity", .result_size = sizeof(qk_plast_head),
                          .max_heads = o.max_heads, .progress_every = 25, .share_key = 1,
                          .ctx = &ctx, .prepare = prepare, .thread_init = thread_init,
                          .thread_free = thread_free, .analyse = analyse};
    qk_stage_run(&stage, &spec);
    qk_plast_head *results = stage.results;
    int n = stage.n_jobs;

    /* the model level, from the heads in (layer, head) order */
    qk_plast_model model;
    qk_plast_model_compute(&model, results, n, &ctx.grid);

    out_ctx oc = {stage.jobs, results, n, &ctx.grid, &model};
    write_tables(&o, &oc);
    if (n > 0 && model.n_heads_valid == 0)
        qk_warn("%s: no head has a plasticity value: no query bin of any head has %" PRId64 " eligible "
                "key pairs (--min-pairs) and 2 queries", o.store, o.params.min_pairs_per_bin);
    if (o.params.time_floor)
        print_floor(results, n, o.threads);
    if (o.timing)
        printf("qk-plasticity: %d heads in %.3f s with %d threads: %.4f s per head "
               "(wall time / heads)\n",
               n, stage.run_seconds, o.threads, n ? stage.run_seconds / n : 0.0);

    char note[64];
    snprintf(note, sizeof note, "model ap_overall %.4f", model.s.ap_overall);
    qk_plast_model_free(&model);
    for (int i = 0; i < n; i++)
        qk_plast_head_free(&results[i]);
    qk_stage_finish(&stage, note);
    free(o.out_dir);
    for (int i = 0; i < N_TABLES; i++)
        free(o.table_paths[i]);
    return QK_EXIT_OK;
}
