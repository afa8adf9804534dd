/* qk-rotate: the planar rotation model of every head of a store
 * (docs/rotation.md, "One head: the {a, b} plane"): drift axis a, separation axis b,
 * the {a, b} metrics and the omega fit, one row per head, plus the axes for
 * qk-complement. With --summary, the per-model summary of a merged
 * per-head table instead. */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/heads.h"
#include "qk/moments.h"
#include "qk/rotation.h"
#include "qk/store.h"

static void usage(FILE *fp)
{
    fprintf(fp,
        "Usage: qk-rotate [OPTIONS] STORE\n"
        "       qk-rotate --summary -o OUTPUT TABLE\n"
        "\n"
        "The planar rotation model of every head of a store written by qk-load: the\n"
        "queries of each query head are pooled with the keys of its key head; the\n"
        "drift axis a is the pooled covariance of the vectors with token position,\n"
        "the separation axis b the top direction of the query-key difference second\n"
        "moment orthogonal to a. Writes one row of metrics per head (slopes, cluster\n"
        "means, bias strength, separation strength, variance fractions, the omega\n"
        "sinusoid fit, ...) and the axes of each head for qk-complement.\n"
        "Heads with fewer than %d query or key rows are skipped with a warning.\n"
        "\n"
        "With --summary, TABLE is a merged per-head table (rotated.csv, with model\n"
        "and family columns) and OUTPUT gets one CSV row of means, medians,\n"
        "fractions and quartiles per model.\n"
        "\n"
        "Options:\n"
        "  -o, --output FILE        per-head table (default: rotation.tsv beside STORE)\n"
        "      --axes-output FILE   axes a and b of each head (default:\n"
        "                           rotation_axes.bin beside STORE)\n"
        "      --family NAME        model family written in every row (default unknown)\n"
        "      --checkpoint NAME    checkpoint label written in every row (default -)\n"
        "      --b-mode MODE        eigen (default: top eigenvector of P_a C_delta P_a)\n"
        "                           or centroid (P_a (mu_Q - mu_K), normalised)\n"
        "      --b-sign SIGN        canonical (default: b.(mu_Q - mu_K) >= 0) or raw\n"
        "      --omega-grid N       frequencies of the omega grid (default %d)\n"
        "      --omega-refine N     golden-section steps after the grid (default %d)\n"
        "  -j, --threads N          worker threads (default 2); the output does not\n"
        "                           depend on N\n"
        "      --summary            summarise a per-head table (see above)\n"
        "      --no-verify          do not check the store's checksum\n"
        "  -q, --quiet              no progress lines\n"
        "  -h, --help               this text\n"
        "      --version            print the version\n"
        "\n"
        "Exit status: 0 success, 1 usage error, 2 bad or unreadable data.\n"
        "Example: qk-rotate --threads 2 --family llama build/llama3.2-3b/store.qks\n",
        QK_ROT_MIN_KIND, QK_ROT_OMEGA_GRID, QK_ROT_OMEGA_REFINE);
}

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

/* A label written into table cells: no separators, not empty. */
static const char *parse_label(const char *opt, const char *s)
{
    if (!*s || strpbrk(s, "\t\n\r,\""))
        qk_die(QK_EXIT_USAGE, NULL, "%s: '%s' is empty or holds a tab, comma or quote", opt, s);
    return s;
}

static void parse_args(int argc, char **argv, options *o)
{
    enum { OPT_AXES = 256, OPT_FAMILY, OPT_CHECKPOINT, OPT_B_MODE, OPT_B_SIGN, OPT_GRID,
           OPT_REFINE, OPT_SUMMARY, OPT_NO_VERIFY, OPT_VERSION };
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'},
        {"axes-output", required_argument, NULL, OPT_AXES},
        {"family", required_argument, NULL, OPT_FAMILY},
        {"checkpoint", required_argument, NULL, OPT_CHECKPOINT},
        {"b-mode", required_argument, NULL, OPT_B_MODE},
        {"b-sign", required_argument, NULL, OPT_B_SIGN},
        {"omega-grid", required_argument, NULL, OPT_GRID},
        {"omega-refine", required_argument, NULL, OPT_REFINE},
        {"threads", required_argument, NULL, 'j'},
        {"summary", no_argument, NULL, OPT_SUMMARY},
        {"no-verify", no_argument, NULL, OPT_NO_VERIFY},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, OPT_VERSION},
        {NULL, 0, NULL, 0}};
    memset(o, 0, sizeof *o);
    qk_rot_options_default(&o->rot);
    o->threads = 2;
    o->verify = 1;
    o->family = "unknown";
    o->checkpoint = "-";
    const char *output = NULL, *axes = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:j:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case OPT_AXES: axes = optarg; break;
        case OPT_FAMILY: o->family = parse_label("--family", optarg); break;
        case OPT_CHECKPOINT: o->checkpoint = parse_label("--checkpoint", optarg); break;
        case OPT_B_MODE:
            o->rot.b_mode = qk_opt_choice("--b-mode", optarg, "eigen", "centroid");
            break;
        case OPT_B_SIGN:
            o->rot.b_sign = qk_opt_choice("--b-sign", optarg, "canonical", "raw");
            break;
        case OPT_GRID:
            o->rot.omega_grid = (int)qk_opt_int("--omega-grid", optarg, 3, 100000);
            break;
        case OPT_REFINE:
            o->rot.omega_refine = (int)qk_opt_int("--omega-refine", optarg, 0, 1000);
            break;
        case 'j': o->threads = (int)qk_opt_int("--threads", optarg, 1, QK_MAX_THREADS); break;
        case OPT_SUMMARY: o->summary = 1; break;
        case OPT_NO_VERIFY: o->verify = 0; break;
        case 'q': qk_progress_set_quiet(1); break;
        case 'h': usage(stdout); exit(QK_EXIT_OK);
        case OPT_VERSION: printf("qk-rotate %s\n", QK_VERSION_STRING); exit(QK_EXIT_OK);
        default: usage(stderr); exit(QK_EXIT_USAGE);
        }
    }
    if (optind + 1 != argc || (o->summary && !output)) {
        usage(stderr);
        exit(QK_EXIT_USAGE);
    }
    o->input = argv[optind];
    o->output = output ? qk_strdup(output) : qk_path_beside(o->input, "rotation.tsv");
    o->axes_output = axes ? qk_strdup(axes) : qk_path_beside(o->input, "rotation_axes.bin");
}

/* ---- the analysis of every head ---------------------------------------------------- */

typedef struct run_ctx {
    const qk_store *store;
    const options *opt;
    const qk_head_job *jobs;
    int *usable;
    qk_rot_head *results;
    double *axes;        /* [n_jobs * 2 * dim]: a then b of each job */
    qk_moments *pooled;  /* [n_jobs] pooled moments, for qk-complement */
} run_ctx;

typedef struct thread_state {
    qk_moments mq, mk;
    qk_rot_work work;
    qk_store_buf qbuf, kbuf;
} thread_state;

static void *thread_init(void *arg)
{
    run_ctx *ctx = arg;
    thread_state *st = qk_calloc(1, sizeof *st);
    qk_moments_init(&st->mq, ctx->store->dim);
    qk_moments_init(&st->mk, ctx->store->dim);
    qk_rot_work_init(&st->work, ctx->store->dim);
    return st;
}

static void thread_free(void *arg)
{
    thread_state *st = arg;
    qk_moments_free(&st->mq);
    qk_moments_free(&st->mk);
    qk_rot_work_free(&st->work);
    qk_store_buf_free(&st->qbuf);
    qk_store_buf_free(&st->kbuf);
    free(st);
}

/* The rows of config c (its vectors decoded into buf). */
static int config_rows(const qk_store *s, int c, qk_store_buf *buf, qk_rot_rows *r,
                       qk_err *err)
{
    const float *vector = qk_store_vectors(s, c, buf, err);
    if (!vector)
        return -1;
    *r = (qk_rot_rows){vector, s->configs[c].position, s->configs[c].rows};
    return 0;
}

/* The query heads of one key head: the key moments are computed once. */
static int analyse_group(void *arg, void *state, const int *job_idx, int n, int *failed_job,
                         qk_err *err)
{
    run_ctx *ctx = arg;
    thread_state *st = state;
    const qk_store *s = ctx->store;
    size_t d = (size_t)s->dim;
    int have_key = 0;
    for (int i = 0; i < n; i++) {
        int j = job_idx[i];
        if (!ctx->usable[j])
            continue;
        qk_rot_rows rq, rk;
        if (config_rows(s, ctx->jobs[j].q_config, &st->qbuf, &rq, err) != 0 ||
            config_rows(s, ctx->jobs[j].k_config, &st->kbuf, &rk, err) != 0) {
            *failed_job = j;
            return -1;
        }
        if (!have_key) {
            qk_moments_compute(&st->mk, rk.vector, rk.position, rk.n);
            have_key = 1;
        }
        qk_moments_compute(&st->mq, rq.vector, rq.position, rq.n);
        if (qk_rot_analyse(&rq, &rk, &st->mq, &st->mk, &ctx->opt->rot, &st->work,
                           &ctx->results[j], err) != 0) {
            *failed_job = j;
            return -1;
        }
        memcpy(ctx->axes + (size_t)j * 2 * d, st->work.a, d * sizeof(double));
        memcpy(ctx->axes + ((size_t)j * 2 + 1) * d, st->work.b, d * sizeof(double));
        qk_moments_copy(&ctx->pooled[j], &st->work.pooled);
    }
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

static void fail_outputs(qk_atomic *table, qk_atomic *axes, const char *path, const qk_err *err)
{
    qk_atomic_abort(table);
    qk_atomic_abort(axes);
    qk_die(QK_EXIT_DATA, path, "%s", err->msg);
}

static void write_outputs(const options *o, const run_ctx *ctx, int n_jobs)
{
    qk_atomic table, axes;
    qk_rot_axes_writer aw;
    qk_err err;
    qk_output_open(&table, o->output);
    if (qk_atomic_open(&axes, o->axes_output, &err) != 0) {
        qk_atomic_abort(&table);
        qk_die(QK_EXIT_DATA, o->axes_output, "%s", err.msg);
    }
    int d = ctx->store->dim;
    fputs(table_header, table.fp);
    if (qk_rot_axes_begin(&aw, axes.fp, d, &err) != 0)
        fail_outputs(&table, &axes, o->axes_output, &err);
    for (int i = 0; i < n_jobs; i++) {
        if (!ctx->usable[i])
            continue;
        const qk_head_job *j = &ctx->jobs[i];
        write_row(table.fp, o, ctx->store, j, &ctx->results[i]);
        const double *ab = ctx->axes + (size_t)i * 2 * d;
        if (qk_rot_axes_add(&aw, j->layer, j->head, j->kv_head, ab, ab + d, &ctx->pooled[i],
                            &err) != 0)
            fail_outputs(&table, &axes, o->axes_output, &err);
    }
    if (qk_rot_axes_finish(&aw, &err) != 0)
        fail_outputs(&table, &axes, o->axes_output, &err);
    if (qk_atomic_commit(&axes, &err) != 0) {
        qk_atomic_abort(&table);
        qk_die(QK_EXIT_DATA, o->axes_output, "%s", err.msg);
    }
    qk_output_commit(&table);
}

/* ---- main ---------------------------------------------------------------------------------- */

static int mark_usable(const qk_store *s, const options *o, const qk_head_job *jobs, int n,
                       int *usable)
{
    int skipped = 0;
    for (int i = 0; i < n; i++) {
        int64_t nq = s->configs[jobs[i].q_config].rows, nk = s->configs[jobs[i].k_config].rows;
        usable[i] = qk_rot_head_usable(nq, nk);
        if (usable[i])
            continue;
        skipped++;
        qk_warn("%s: head l%02dh%02d skipped: %" PRId64 " query and %" PRId64
                " key rows (needs >= %d of each)", o->input, jobs[i].layer, jobs[i].head, nq,
                nk, QK_ROT_MIN_KIND);
    }
    return skipped;
}

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
    options o;
    parse_args(argc, argv, &o);
    if (o.summary)
        return run_summary(&o);
    qk_store s;
    qk_open_store(o.input, &s, o.verify);
    if (s.dim < 2)
        qk_die(QK_EXIT_DATA, o.input, "vector dimension %d (the rotation model needs >= 2)",
               s.dim);
    double t0 = qk_now();
    qk_err err;

    run_ctx ctx = {.store = &s, .opt = &o};
    qk_head_job *jobs;
    int n_jobs;
    if (qk_head_jobs(&s, &jobs, &n_jobs, &err) != 0)
        qk_die(QK_EXIT_DATA, o.input, "%s", err.msg);
    ctx.jobs = jobs;
    size_t slots = (size_t)(n_jobs ? n_jobs : 1);
    ctx.usable = qk_calloc(slots, sizeof(int));
    ctx.results = qk_calloc(slots, sizeof(qk_rot_head));
    ctx.axes = qk_doubles(slots * 2 * (size_t)s.dim);
    int skipped = mark_usable(&s, &o, jobs, n_jobs, ctx.usable);
    ctx.pooled = qk_calloc(slots, sizeof(qk_moments)); /* zeroed: free() is safe */
    for (int i = 0; i < n_jobs; i++)
        if (ctx.usable[i])
            qk_moments_init(&ctx.pooled[i], s.dim);
    qk_progress("%.56s: rotation model of %d heads, d = %d, %d threads", s.header.dataset_id,
                n_jobs - skipped, s.dim, o.threads);

    qk_head_runner runner = {jobs, n_jobs, 1, 0, &ctx, thread_init, analyse_group, thread_free};
    if (qk_head_run(&runner, o.threads, &err) != 0)
        qk_die(QK_EXIT_DATA, o.input, "%s", err.msg);
    write_outputs(&o, &ctx, n_jobs);
    qk_progress("%.56s: %d heads analysed, %d skipped, %.2f s", s.header.dataset_id,
                n_jobs - skipped, skipped, qk_now() - t0);
    free(jobs);
    free(ctx.usable);
    free(ctx.results);
    free(ctx.axes);
    for (int i = 0; i < n_jobs; i++)
        qk_moments_free(&ctx.pooled[i]);
    free(ctx.pooled);
    free(o.output);
    free(o.axes_output);
    qk_store_close(&s);
    return QK_EXIT_OK;
}
