/* qk-bench-rotate: times the per-head work of qk-rotate and qk-complement
 * on thesis-size heads generated in memory by the synthetic generator (the
 * population mode of qk-synth: drift, separation and RoPE rotation
 * planes), on one core. Optionally writes the heads and the key results
 * for bench/bench_rotate.py, which times numpy on the same vectors and
 * compares its numbers with these. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"
#include "qk/common.h"
#include "qk/heads.h"
#include "qk/moments.h"
#include "qk/registry.h"
#include "qk/rotation.h"
#include "qk/synth.h"

enum { OPT_REGISTRY = QK_KEY_FIRST, OPT_DATASET, OPT_HEADS, OPT_EXAMPLES, OPT_REPEAT, OPT_SEED,
       OPT_DUMP };

static const qk_option options_table[] = {
    {OPT_REGISTRY, "registry", "FILE", "dataset registry (default workflow/datasets.tsv)"},
    {OPT_DATASET, "dataset", "ID", "dataset whose geometry is used (default llama3.2-3b)"},
    {OPT_HEADS, "heads", "N", "heads (default 4)"},
    {OPT_EXAMPLES, "examples", "N", "examples: rows per kind are about N * L / B (default 500, "
                                    "about 8000 rows at thesis scale)"},
    {OPT_REPEAT, "repeat", "R", "timing repetitions; the fastest counts (default 3)"},
    {OPT_SEED, "seed", "S", "generator seed (default 1)"},
    {OPT_DUMP, "dump", "FILE", "also write the heads and their results"},
    QK_OPTIONS_END};

static const qk_program program = {
    "qk-bench-rotate", "qk-bench-rotate [OPTIONS]",
    "Times the rotation model of synthetic heads on one core: qk-rotate's work\n"
    "(moments of both kinds, axes, metrics, omega fit) and qk-complement's\n"
    "(complement basis from the pooled moments, pairs, angles, discriminants),\n"
    "per head.\n"
    "The heads are made in memory as qk-synth makes them (population mode).\n",
    options_table, NULL, "qk-bench-rotate --heads 4 --dump build/bench/rotate-heads.bin", NULL};

typedef struct bench_opts {
    const char *registry, *dataset, *dump;
    int heads, examples, repeat;
    uint64_t seed;
} bench_opts;

static void parse_args(int argc, char **argv, bench_opts *o)
{
    *o = (bench_opts){.registry = "workflow/datasets.tsv", .dataset = "llama3.2-3b",
                      .heads = 4, .examples = 500, .repeat = 3, .seed = 1};
    qk_args a;
    const char *value;
    qk_args_init(&a, &program, argc, argv);
    for (int key; (key = qk_args_next(&a, &value)) != -1;) {
        switch (key) {
        case OPT_REGISTRY: o->registry = value; break;
        case OPT_DATASET: o->dataset = value; break;
        case OPT_HEADS: o->heads = (int)qk_opt_int("--heads", value, 1, 300); break;
        case OPT_EXAMPLES: o->examples = (int)qk_opt_int("--examples", value, 1, 100000); break;
        case OPT_REPEAT: o->repeat = (int)qk_opt_int("--repeat", value, 1, 1000); break;
        case OPT_SEED: o->seed = (uint64_t)qk_opt_int("--seed", value, 0, 1L << 62); break;
        case OPT_DUMP: o->dump = value; break;
        }
    }
    qk_args_operands(&a, 0, 0);
}

typedef struct bench_head {
    int layer, head;
    qk_rot_rows q, k;
    qk_rot_head rot;
    qk_comp_head comp;
} bench_head;

/* The vectors of one synthetic head (its own copy of the positions). */
static void make_head(const qk_dataset *ds, const qk_synth_options *so, int layer, int head,
                      bench_head *h)
{
    qk_err err;
    qk_synth_model m;
    if (qk_synth_model_init(&m, ds, so, layer, head, &err) != 0)
        qk_die(QK_EXIT_DATA, NULL, "%s", err.msg);
    qk_rot_rows *kinds[2] = {&h->q, &h->k};
    for (int kind = 0; kind < 2; kind++) {
        qk_synth_rows rows;
        qk_synth_positions(ds, so, layer, kind, &rows);
        float *x = qk_malloc((size_t)(rows.n ? rows.n : 1) * ds->head_dim * sizeof(float));
        int32_t *t = qk_malloc((size_t)(rows.n ? rows.n : 1) * sizeof(int32_t));
        qk_synth_vectors(&m, kind, &rows, x);
        memcpy(t, rows.position, (size_t)rows.n * sizeof(int32_t));
        *kinds[kind] = (qk_rot_rows){x, t, rows.n};
        qk_synth_rows_free(&rows);
    }
    h->layer = layer;
    h->head = head;
    qk_synth_model_free(&m);
}

typedef struct stage_work {
    qk_moments mq, mk;
    qk_rot_work rot;
    qk_comp_work comp;
    qk_rot_options opt;
} stage_work;

/* qk-rotate's work for one head; returns seconds. */
static double time_rotate(bench_head *h, stage_work *w)
{
    qk_err err;
    /* every head timed as the first of its layer: without the omega fit's
     * positional sums of an earlier head (or of an earlier repeat) */
    qk_rot_omega_cache_free(w->rot.omega);
    w->rot.omega = NULL;
    double t0 = qk_now();
    qk_moments_compute(&w->mk, h->k.vector, h->k.position, h->k.n);
    qk_moments_compute(&w->mq, h->q.vector, h->q.position, h->q.n);
    if (qk_rot_analyse(&h->q, &h->k, &w->mq, &w->mk, &w->opt, &w->rot, &h->rot, &err) != 0)
        qk_die(QK_EXIT_DATA, NULL, "%s", err.msg);
    return qk_now() - t0;
}

/* qk-complement's work for one head, from the pooled moments and axes
 * qk-rotate found (which it reads from rotation_axes.bin). */
static double time_complement(bench_head *h, stage_work *w, const qk_moments *pooled,
                              const double *a, const double *b)
{
    qk_err err;
    double t0 = qk_now();
    if (qk_comp_analyse(&h->q, &h->k, pooled, a, b, QK_ROT_ACTIVE_TAU, &w->comp, &h->comp,
                        &err) != 0)
        qk_die(QK_EXIT_DATA, NULL, "%s", err.msg);
    return qk_now() - t0;
}

/* The heads in the heads file format (qk/heads.h); the results go to
 * stdout (print_results). */
static void dump(const char *path, const bench_head *h, int n, int d)
{
    qk_atomic out;
    qk_output_open(&out, path);
    qk_heads_file_begin(out.fp, n);
    for (int i = 0; i < n; i++)
        qk_heads_file_add(out.fp, d, h[i].q.vector, h[i].q.position, h[i].q.n, h[i].k.vector,
                          h[i].k.position, h[i].k.n);
    qk_output_commit(&out);
}

/* One line per head with the values the numpy side recomputes. */
static void print_results(const bench_head *h, int n)
{
    for (int i = 0; i < n; i++) {
        const qk_rot_head *r = &h[i].rot;
        const qk_comp_head *c = &h[i].comp;
        printf("result l%02dh%02d position_r=%.17g alpha_k=%.17g mu_q_a=%.17g "
               "separation_strength=%.17g var_frac_b=%.17g omega=%.17g omega_r_squared=%.17g "
               "residual_pos_r=%.3g pair0_var_frac=%.17g pair0_angle_r=%.17g "
               "pair0_angle_r_best=%.17g pair0_cls_acc=%.17g max_abs_angle_r=%.17g\n",
               h[i].layer, h[i].head, r->position_r, r->alpha_k, r->mu_q_a,
               r->separation_strength, r->var_frac_b, r->omega.omega, r->omega.r_squared,
               c->residual_pos_r, c->pair[0].var_frac, c->pair[0].angle_r,
               c->pair[0].angle_r_best, c->pair[0].cls_acc, c->max_abs_angle_r);
    }
}

int main(int argc, char **argv)
{
    qk_set_progname("qk-bench-rotate");
    bench_opts o;
    parse_args(argc, argv, &o);
    openblas_set_num_threads(1);

    qk_registry reg;
    qk_err err;
    if (qk_registry_load(o.registry, &reg, &err) != 0)
        qk_die(QK_EXIT_DATA, o.registry, "%s", err.msg);
    const qk_dataset *ds = qk_registry_find(&reg, o.dataset);
    if (!ds)
        qk_die(QK_EXIT_USAGE, o.registry, "no dataset '%s'", o.dataset);
    qk_synth_options so;
    qk_synth_options_default(&so);
    so.seed = o.seed;
    so.mode = QK_SYNTH_POPULATION;
    so.scale = QK_SYNTH_THESIS;
    so.n_examples = o.examples;
    so.n_heads = o.heads;
    int cap = ds->n_layers * ds->n_q_heads;
    int *layers = qk_malloc((size_t)cap * sizeof(int)), *heads = qk_malloc((size_t)cap * sizeof(int));
    int n = qk_synth_select_heads(ds, &so, layers, heads, cap);
    n = n < o.heads ? n : o.heads;
    bench_head *h = qk_calloc((size_t)n, sizeof *h);
    for (int i = 0; i < n; i++)
        make_head(ds, &so, layers[i], heads[i], &h[i]);

    int d = ds->head_dim;
    stage_work w;
    qk_moments_init(&w.mq, d);
    qk_moments_init(&w.mk, d);
    qk_rot_work_init(&w.rot, d);
    qk_comp_work_init(&w.comp, d);
    qk_rot_options_default(&w.opt);
    double *axes = qk_doubles((size_t)n * 2 * d);
    qk_moments *pooled = qk_calloc((size_t)n, sizeof *pooled);
    for (int i = 0; i < n; i++)
        qk_moments_init(&pooled[i], d);
    double best_rot = INFINITY, best_comp = INFINITY;
    for (int r = 0; r < o.repeat; r++) {
        double rot = 0.0, comp = 0.0;
        for (int i = 0; i < n; i++) {
            rot += time_rotate(&h[i], &w);
            memcpy(axes + (size_t)i * 2 * d, w.rot.a, (size_t)d * sizeof(double));
            memcpy(axes + ((size_t)i * 2 + 1) * d, w.rot.b, (size_t)d * sizeof(double));
            qk_moments_copy(&pooled[i], &w.rot.pooled);
        }
        for (int i = 0; i < n; i++)
            comp += time_complement(&h[i], &w, &pooled[i], axes + (size_t)i * 2 * d,
                                    axes + ((size_t)i * 2 + 1) * d);
        best_rot = rot < best_rot ? rot : best_rot;
        best_comp = comp < best_comp ? comp : best_comp;
    }
    int64_t rows = 0;
    for (int i = 0; i < n; i++)
        rows += h[i].q.n + h[i].k.n;
    printf("heads: %d of %s (d = %d, %.0f query + key rows per head on average)\n", n,
           ds->id, d, (double)rows / n);
    printf("qk-rotate per head: %.3f ms\n", 1e3 * best_rot / n);
    printf("qk-complement per head: %.3f ms\n", 1e3 * best_comp / n);
    printf("rotate + complement per head: %.3f ms (one core, best of %d)\n",
           1e3 * (best_rot + best_comp) / n, o.repeat);
    print_results(h, n);
    if (o.dump)
        dump(o.dump, h, n, d);

    for (int i = 0; i < n; i++) {
        free((void *)h[i].q.vector);
        free((void *)h[i].q.position);
        free((void *)h[i].k.vector);
        free((void *)h[i].k.position);
    }
    for (int i = 0; i < n; i++)
        qk_moments_free(&pooled[i]);
    free(pooled);
    free(h);
    free(axes);
    free(layers);
    free(heads);
    qk_moments_free(&w.mq);
    qk_moments_free(&w.mk);
    qk_rot_work_free(&w.rot);
    qk_comp_work_free(&w.comp);
    qk_registry_free(&reg);
    return QK_EXIT_OK;
}
