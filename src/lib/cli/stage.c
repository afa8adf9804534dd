/* The skeleton of a per-head stage (include/qk/stage.h). */
#include "qk/stage.h"

#include <stdlib.h>
#include <string.h>

#include "qk/cli.h"

/* What the head runner's callbacks need: the stage and the program's spec. */
typedef struct stage_run {
    const qk_stage *st;
    const qk_stage_spec *spec;
} stage_run;

/* A thread's decoding buffers and the program's own state. */
typedef struct thread_state {
    const stage_run *run;
    qk_store_buf qbuf, kbuf;
    int last_k_config; /* of the head analysed last, -1: none */
    void *program;
} thread_state;

static void *thread_init(void *arg)
{
    const stage_run *run = arg;
    thread_state *ts = qk_calloc(1, sizeof *ts);
    ts->run = run;
    ts->last_k_config = -1;
    if (run->spec->thread_init)
        ts->program = run->spec->thread_init(run->spec->ctx);
    return ts;
}

static void thread_free(void *arg)
{
    thread_state *ts = arg;
    const qk_stage_spec *spec = ts->run->spec;
    if (spec->thread_free && ts->program)
        spec->thread_free(ts->program);
    qk_store_buf_free(&ts->qbuf);
    qk_store_buf_free(&ts->kbuf);
    free(ts);
}

static int analyse_job(const stage_run *run, thread_state *ts, int j, qk_err *err)
{
    const qk_stage *st = run->st;
    const qk_store *s = &st->store;
    const qk_head_job *job = &st->jobs[j];
    qk_stage_head h = {job, j, &s->configs[job->q_config], &s->configs[job->k_config], NULL,
                       NULL, job->k_config != ts->last_k_config};
    h.q_vectors = qk_store_vectors(s, job->q_config, &ts->qbuf, err);
    if (!h.q_vectors)
        return -1;
    h.k_vectors = qk_store_vectors(s, job->k_config, &ts->kbuf, err);
    if (!h.k_vectors)
        return -1;
    ts->last_k_config = job->k_config;
    return run->spec->analyse(run->spec->ctx, ts->program, &h, qk_stage_result(st, j), err);
}

/* The head runner's group: the usable jobs among job_idx, in order. */
static int analyse_group(void *arg, void *state, const int *job_idx, int n, int *failed_job,
                         qk_err *err)
{
    const stage_run *run = arg;
    for (int i = 0; i < n; i++) {
        int j = job_idx[i];
        if (!run->st->usable[j])
            continue;
        if (analyse_job(run, state, j, err) != 0) {
            *failed_job = j;
            return -1;
        }
    }
    return 0;
}

/* Marks the heads the stage can analyse; warns, in one line, about the
 * skipped ones that have a reason: how many, and the first with its reason. */
static void mark_usable(qk_stage *st, const qk_stage_spec *spec)
{
    st->usable = qk_malloc((size_t)(st->n_jobs ? st->n_jobs : 1) * sizeof(int));
    st->n_usable = 0;
    int n_warned = 0, first = -1;
    char first_why[256] = "";
    for (int i = 0; i < st->n_jobs; i++) {
        char why[256] = "";
        st->usable[i] = spec->usable ? spec->usable(spec->ctx, st, i, why, sizeof why) != 0 : 1;
        st->n_usable += st->usable[i];
        if (!st->usable[i] && why[0] && n_warned++ == 0) {
            first = i;
            snprintf(first_why, sizeof first_why, "%s", why);
        }
    }
    if (n_warned == 1)
        qk_warn("%s: head l%02dh%02d skipped: %s", st->path, st->jobs[first].layer,
                st->jobs[first].head, first_why);
    else if (n_warned > 1)
        qk_warn("%s: %d heads skipped, the first l%02dh%02d: %s", st->path, n_warned,
                st->jobs[first].layer, st->jobs[first].head, first_why);
}

void qk_stage_run(qk_stage *st, const qk_stage_spec *spec)
{
    memset(st, 0, sizeof *st);
    st->path = spec->store;
    qk_open_store(spec->store, &st->store, spec->verify);
    st->start = qk_now();
    qk_err err;
    if (qk_head_jobs(&st->store, &st->jobs, &st->n_jobs, &err) != 0)
        qk_die(QK_EXIT_DATA, st->path, "%s", err.msg);
    if (spec->max_heads > 0 && spec->max_heads < st->n_jobs)
        st->n_jobs = spec->max_heads;
    if (spec->prepare && spec->prepare(spec->ctx, st, &err) != 0)
        qk_die(QK_EXIT_DATA, st->path, "%s", err.msg);
    mark_usable(st, spec);
    st->result_size = spec->result_size;
    st->results = qk_calloc((size_t)(st->n_jobs ? st->n_jobs : 1), spec->result_size);
    qk_progress("%.56s: %s of %d heads, d = %d, %d threads", st->store.header.dataset_id,
                spec->what, st->n_usable, st->store.dim, spec->threads);

    stage_run run = {st, spec};
    qk_head_runner runner = {st->jobs, st->n_jobs, spec->share_key, spec->progress_every,
                             &run, thread_init, analyse_group, thread_free};
    double t0 = qk_now();
    if (qk_head_run(&runner, spec->threads, &err) != 0)
        qk_die(QK_EXIT_DATA, st->path, "%s", err.msg);
    st->run_seconds = qk_now() - t0;
}

void *qk_stage_result(const qk_stage *st, int i)
{
    return (char *)st->results + (size_t)i * st->result_size;
}

void qk_stage_finish(qk_stage *st, const char *note)
{
    qk_progress("%.56s: %d heads analysed, %d skipped, %s%s%.2f s",
                st->store.header.dataset_id, st->n_usable, st->n_jobs - st->n_usable,
                note ? note : "", note ? ", " : "", qk_now() - st->start);
    free(st->jobs);
    free(st->usable);
    free(st->results);
    qk_store_close(&st->store);
    memset(st, 0, sizeof *st);
}
