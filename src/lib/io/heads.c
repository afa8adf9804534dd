/* The heads of a store as jobs, and their parallel processing
 * (include/qk/heads.h). */
#include "qk/heads.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static int cmp_job(const void *pa, const void *pb)
{
    const qk_head_job *x = pa, *y = pb;
    if (x->layer != y->layer)
        return x->layer < y->layer ? -1 : 1;
    return (x->head > y->head) - (x->head < y->head);
}

int qk_head_jobs(const qk_store *s, qk_head_job **jobs_out, int *n_jobs, qk_err *err)
{
    qk_head_job *jobs = qk_calloc((size_t)(s->n_pairs ? s->n_pairs : 1), sizeof *jobs);
    for (int i = 0; i < s->n_pairs; i++) {
        const qk_store_config *q = &s->configs[s->pairs[i].q];
        const qk_store_config *k = &s->configs[s->pairs[i].k];
        if (q->kind != 'q' || k->kind != 'k' || q->layer != k->layer) {
            free(jobs);
            return qk_fail(err, "pair %d joins l%02dh%02d%c with l%02dh%02d%c (expected a "
                           "query and a key config of one layer)", i, q->layer, q->head,
                           q->kind, k->layer, k->head, k->kind);
        }
        jobs[i] = (qk_head_job){q->layer, q->head, k->head, (int)s->pairs[i].q,
                                (int)s->pairs[i].k};
    }
    qsort(jobs, (size_t)s->n_pairs, sizeof *jobs, cmp_job);
    for (int i = 1; i < s->n_pairs; i++)
        if (cmp_job(&jobs[i - 1], &jobs[i]) == 0) {
            int layer = jobs[i].layer, head = jobs[i].head;
            free(jobs);
            return qk_fail(err, "query head l%02dh%02d appears in two pairs", layer, head);
        }
    *jobs_out = jobs;
    *n_jobs = s->n_pairs;
    return 0;
}

/* ---- the runner ------------------------------------------------------------------ */

typedef struct run_state {
    const qk_head_runner *r;
    int *order;       /* job indices, grouped */
    int *group_start; /* [n_groups + 1] ranges of order */
    int n_groups;
    int n_threads;
    /* thread t takes the groups span_next[t] .. span_end[t] - 1, in order,
     * then the last group of the span with the most left */
    int span_next[QK_MAX_THREADS], span_end[QK_MAX_THREADS];
    int done;         /* jobs finished */
    int failed;
    qk_err error;
    pthread_mutex_t lock;
} run_state;

static int cmp_by_key(const void *pa, const void *pb, void *arg)
{
    const qk_head_job *jobs = arg;
    int a = *(const int *)pa, b = *(const int *)pb;
    if (jobs[a].k_config != jobs[b].k_config)
        return jobs[a].k_config < jobs[b].k_config ? -1 : 1;
    return (a > b) - (a < b);
}

/* With share_key, the jobs sorted by key config (then index) and cut where
 * the key config changes; else one group a job, in job order. */
static void make_groups(run_state *st)
{
    const qk_head_runner *r = st->r;
    int n = r->n_jobs;
    st->order = qk_malloc((size_t)(n ? n : 1) * sizeof(int));
    st->group_start = qk_malloc((size_t)(n + 1) * sizeof(int));
    for (int i = 0; i < n; i++)
        st->order[i] = i;
    if (r->share_key)
        qsort_r(st->order, (size_t)n, sizeof(int), cmp_by_key, (void *)r->jobs);
    st->n_groups = 0;
    for (int i = 0; i < n; i++)
        if (i == 0 || !r->share_key ||
            r->jobs[st->order[i]].k_config != r->jobs[st->order[i - 1]].k_config)
            st->group_start[st->n_groups++] = i;
    st->group_start[st->n_groups] = n;
}

/* Each thread starts on a span of neighbouring groups of its own, so that
 * what the heads of a layer share (the plasticity layout) is made by as
 * few threads as possible; a thread whose span is done takes groups from
 * the end of the longest span left, so none waits while work remains. */
static void make_spans(run_state *st, int n_threads)
{
    st->n_threads = n_threads;
    for (int t = 0; t < n_threads; t++) {
        st->span_next[t] = (int)((int64_t)st->n_groups * t / n_threads);
        st->span_end[t] = (int)((int64_t)st->n_groups * (t + 1) / n_threads);
    }
}

static int left(const run_state *st, int t)
{
    return st->span_end[t] - st->span_next[t];
}

static int take_group(run_state *st, int t)
{
    pthread_mutex_lock(&st->lock);
    int g = -1;
    if (!st->failed) {
        int from = t; /* its own span, or once that is done the longest left */
        for (int u = 0; u < st->n_threads && left(st, t) == 0; u++)
            if (left(st, u) > left(st, from))
                from = u;
        if (left(st, from) > 0)
            g = from == t ? st->span_next[t]++ : --st->span_end[from];
    }
    pthread_mutex_unlock(&st->lock);
    return g;
}

/* Counts a group as done (recording its failure, if any) and prints a
 * progress line when a multiple of progress_every is passed. */
static void finish_group(run_state *st, int n, int failed_job, const qk_err *err)
{
    pthread_mutex_lock(&st->lock);
    if (failed_job >= 0 && !st->failed) {
        const qk_head_job *j = &st->r->jobs[failed_job];
        qk_fail(&st->error, "head l%02dh%02d: %s", j->layer, j->head, err->msg);
    }
    st->failed |= failed_job >= 0;
    int before = st->done, every = st->r->progress_every;
    int done = st->done += n;
    qk_meter(done, st->r->n_jobs, "heads");
    pthread_mutex_unlock(&st->lock);
    if (every > 0 && done / every > before / every)
        qk_progress("%d / %d heads", done / every * every, st->r->n_jobs);
}

typedef struct worker_arg {
    run_state *st;
    int thread; /* its span */
} worker_arg;

static void *worker(void *arg)
{
    run_state *st = ((worker_arg *)arg)->st;
    int t = ((worker_arg *)arg)->thread;
    const qk_head_runner *r = st->r;
    void *state = r->thread_init ? r->thread_init(r->ctx) : NULL;
    for (int g; (g = take_group(st, t)) >= 0;) {
        int start = st->group_start[g], n = st->group_start[g + 1] - start;
        int failed_job = st->order[start];
        qk_err err;
        if (r->group(r->ctx, state, st->order + start, n, &failed_job, &err) == 0)
            failed_job = -1;
        finish_group(st, n, failed_job, &err);
    }
    if (r->thread_free)
        r->thread_free(state);
    return NULL;
}

int qk_head_run(const qk_head_runner *r, int n_threads, qk_err *err)
{
    openblas_set_num_threads(1);
    run_state st;
    memset(&st, 0, sizeof st);
    st.r = r;
    make_groups(&st);
    pthread_mutex_init(&st.lock, NULL);
    if (n_threads < 1)
        n_threads = 1;
    if (n_threads > QK_MAX_THREADS)
        n_threads = QK_MAX_THREADS;
    if (n_threads > st.n_groups)
        n_threads = st.n_groups > 0 ? st.n_groups : 1;
    make_spans(&st, n_threads);
    pthread_t tid[QK_MAX_THREADS];
    worker_arg args[QK_MAX_THREADS];
    int started = 0;
    for (int i = 1; i < n_threads; i++) {
        args[i] = (worker_arg){&st, i};
        if (pthread_create(&tid[started], NULL, worker, &args[i]) != 0)
            break; /* fewer threads only make it slower: the others take its span */
        started++;
    }
    args[0] = (worker_arg){&st, 0};
    worker(&args[0]);
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    pthread_mutex_destroy(&st.lock);
    qk_meter_clear();
    free(st.order);
    free(st.group_start);
    if (st.failed) {
        if (err)
            *err = st.error;
        return -1;
    }
    return 0;
}

/* ---- the heads file ------------------------------------------------------------- */

static void put_i32(FILE *fp, int64_t v)
{
    int32_t x = (int32_t)v;
    fwrite(&x, sizeof x, 1, fp);
}

void qk_heads_file_begin(FILE *fp, int n_heads)
{
    put_i32(fp, n_heads);
}

void qk_heads_file_add(FILE *fp, int dim, const float *q, const int32_t *t_q, int64_t n_q,
                       const float *k, const int32_t *t_k, int64_t n_k)
{
    put_i32(fp, n_q);
    put_i32(fp, n_k);
    put_i32(fp, dim);
    fwrite(q, sizeof(float), (size_t)(n_q * dim), fp);
    fwrite(t_q, sizeof(int32_t), (size_t)n_q, fp);
    fwrite(k, sizeof(float), (size_t)(n_k * dim), fp);
    fwrite(t_k, sizeof(int32_t), (size_t)n_k, fp);
}
