/* The heads of a store as jobs and the per-head runner (src/lib/io/heads.c):
 * job order and pair checks, grouping by key head or one job a group, every
 * job run exactly once for any thread count, each thread on neighbouring
 * groups, and the first failure
 * reported with its head. */
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "qk/heads.h"
#include "testutil.h"

/* A store of one layer with query heads 0..5 served by key heads 0..2
 * (three query heads per key head); its pairs are listed out of order. */
#define N_Q 6
#define N_K 3

typedef struct fake_store {
    qk_store s;
    qk_store_config configs[N_Q + N_K];
    qk_store_pair pairs[N_Q];
} fake_store;

static void make_store(fake_store *f)
{
    memset(f, 0, sizeof *f);
    for (int h = 0; h < N_Q; h++)
        f->configs[h] = (qk_store_config){.layer = 0, .head = h, .kind = 'q', .rows = 10};
    for (int h = 0; h < N_K; h++)
        f->configs[N_Q + h] = (qk_store_config){.layer = 0, .head = h, .kind = 'k', .rows = 10};
    static const int order[N_Q] = {4, 0, 5, 2, 1, 3};
    for (int i = 0; i < N_Q; i++)
        f->pairs[i] = (qk_store_pair){(uint32_t)order[i], (uint32_t)(N_Q + order[i] / 2)};
    f->s.n_configs = N_Q + N_K;
    f->s.configs = f->configs;
    f->s.n_pairs = N_Q;
    f->s.pairs = f->pairs;
}

/* The jobs of the fake store (N_Q of them). */
static qk_head_job *fake_jobs(void)
{
    fake_store f;
    make_store(&f);
    qk_head_job *jobs;
    int n;
    qk_err err;
    ck_assert_int_eq(qk_head_jobs(&f.s, &jobs, &n, &err), 0);
    ck_assert_int_eq(n, N_Q);
    return jobs;
}

START_TEST(jobs_are_sorted_and_checked)
{
    qk_head_job *jobs = fake_jobs();
    for (int i = 0; i < N_Q; i++) {
        ck_assert_int_eq(jobs[i].head, i);
        ck_assert_int_eq(jobs[i].kv_head, i / 2);
        ck_assert_int_eq(jobs[i].q_config, i);
        ck_assert_int_eq(jobs[i].k_config, N_Q + i / 2);
    }
    free(jobs);
    fake_store f;
    int n;
    qk_err err;
    make_store(&f);
    f.pairs[3].q = f.pairs[2].q; /* query head 5 twice */
    ck_assert_int_eq(qk_head_jobs(&f.s, &jobs, &n, &err), -1);
    ck_assert_str_eq(err.msg, "query head l00h05 appears in two pairs");
    make_store(&f);
    f.pairs[0].k = f.pairs[0].q; /* a query config where the key belongs */
    ck_assert_int_eq(qk_head_jobs(&f.s, &jobs, &n, &err), -1);
    ck_assert_ptr_nonnull(strstr(err.msg, "expected a query and a key config"));
}
END_TEST

/* What the callbacks saw: how often each job ran, and the groups. */
typedef struct record {
    pthread_mutex_t lock;
    int runs[N_Q];
    int groups, bad_groups;
    int fail_job; /* -1: none fails */
    int states;   /* thread states alive */
} record;

static void *state_init(void *arg)
{
    record *r = arg;
    pthread_mutex_lock(&r->lock);
    r->states++;
    pthread_mutex_unlock(&r->lock);
    return r;
}

static void state_free(void *arg)
{
    record *r = arg;
    pthread_mutex_lock(&r->lock);
    r->states--;
    pthread_mutex_unlock(&r->lock);
}

static const qk_head_job *run_jobs;

static int group(void *arg, void *state, const int *job_idx, int n, int *failed_job, qk_err *err)
{
    record *r = arg;
    int bad = state && state != r;
    for (int i = 1; i < n; i++)
        bad |= job_idx[i] <= job_idx[i - 1] ||
               run_jobs[job_idx[i]].k_config != run_jobs[job_idx[0]].k_config;
    pthread_mutex_lock(&r->lock);
    r->groups++;
    r->bad_groups += bad;
    for (int i = 0; i < n; i++)
        r->runs[job_idx[i]]++;
    pthread_mutex_unlock(&r->lock);
    for (int i = 0; i < n; i++)
        if (job_idx[i] == r->fail_job) {
            *failed_job = job_idx[i];
            return qk_fail(err, "boom");
        }
    return 0;
}

static void run(const qk_head_job *jobs, int share_key, int threads, int with_state,
                int fail_job, record *r, int *rc, qk_err *err)
{
    memset(r, 0, sizeof *r);
    pthread_mutex_init(&r->lock, NULL);
    r->fail_job = fail_job;
    run_jobs = jobs;
    qk_head_runner runner = {jobs, N_Q, share_key, 0, r, with_state ? state_init : NULL, group,
                             with_state ? state_free : NULL};
    *rc = qk_head_run(&runner, threads, err);
    pthread_mutex_destroy(&r->lock);
}

START_TEST(every_job_runs_once)
{
    qk_head_job *jobs = fake_jobs();
    int rc;
    qk_err err;
    for (int threads = 1; threads <= 4; threads++)
        for (int share_key = 0; share_key <= 1; share_key++) {
            record r;
            run(jobs, share_key, threads, threads % 2, -1, &r, &rc, &err);
            ck_assert_int_eq(rc, 0);
            ck_assert_int_eq(r.groups, share_key ? N_K : N_Q);
            ck_assert_int_eq(r.bad_groups, 0);
            ck_assert_int_eq(r.states, 0);
            for (int j = 0; j < N_Q; j++)
                ck_assert_int_eq(r.runs[j], 1);
        }
    free(jobs);
}
END_TEST

/* The groups each of two threads took, in the order it took them. */
typedef struct takes {
    pthread_mutex_t lock;
    pthread_t thread[2];
    int n_threads, n[2], group[2][N_Q];
} takes;

static int take_slowly(void *arg, void *state, const int *job_idx, int n, int *failed_job,
                       qk_err *err)
{
    (void)state, (void)n, (void)failed_job, (void)err;
    takes *t = arg;
    pthread_mutex_lock(&t->lock);
    int me = 0;
    while (me < t->n_threads && !pthread_equal(t->thread[me], pthread_self()))
        me++;
    if (me == t->n_threads && me < 2)
        t->thread[t->n_threads++] = pthread_self();
    if (me < 2)
        t->group[me][t->n[me]++] = job_idx[0];
    pthread_mutex_unlock(&t->lock);
    usleep(2000); /* so that the two threads overlap */
    return 0;
}

/* Each thread takes a run of neighbouring groups of its own in order, then
 * groups from the end of the other thread's run: never every other group,
 * so what neighbouring heads share (a layer's plasticity layout) is made
 * by one thread. */
START_TEST(threads_take_neighbouring_groups)
{
    qk_head_job *jobs = fake_jobs();
    qk_err err;
    takes t;
    memset(&t, 0, sizeof t);
    pthread_mutex_init(&t.lock, NULL);
    qk_head_runner runner = {jobs, N_Q, 0, 0, &t, NULL, take_slowly, NULL};
    ck_assert_int_eq(qk_head_run(&runner, 2, &err), 0);
    pthread_mutex_destroy(&t.lock);
    ck_assert_int_eq(t.n[0] + t.n[1], N_Q);
    for (int me = 0; me < t.n_threads; me++) {
        const int *g = t.group[me];
        int i = 1;
        while (i < t.n[me] && g[i] == g[i - 1] + 1) /* its own, upwards */
            i++;
        for (i++; i < t.n[me]; i++) /* the other's, from its end down */
            ck_assert_int_eq(g[i], g[i - 1] - 1);
    }
    free(jobs);
}
END_TEST

START_TEST(a_failure_names_its_head)
{
    qk_head_job *jobs = fake_jobs();
    int rc;
    qk_err err;
    record r;
    run(jobs, 1, 1, 1, 3, &r, &rc, &err);
    ck_assert_int_eq(rc, -1);
    ck_assert_str_eq(err.msg, "head l00h03: boom");
    ck_assert_int_eq(r.states, 0);
    ck_assert_int_lt(r.groups, N_K + 1);
    free(jobs);
}
END_TEST

START_TEST(heads_file_layout)
{
    head_data h;
    head_alloc(&h, 2, 1, 2);
    h.q[0] = 1.5f, h.q[1] = -2.0f, h.tq[0] = 7;
    h.k[0] = 3.0f, h.k[3] = 4.0f, h.tk[0] = 1, h.tk[1] = 2;
    const char *path = "build/tests/tmp/heads.bin";
    write_heads_file(path, &h, 1);
    FILE *fp = fopen(path, "rb");
    ck_assert_ptr_nonnull(fp);
    int32_t ints[4];
    float q[2];
    ck_assert_int_eq(fread(ints, 4, 4, fp), 4);
    ck_assert_int_eq(ints[0], 1);
    ck_assert_int_eq(ints[1], 1);
    ck_assert_int_eq(ints[2], 2);
    ck_assert_int_eq(ints[3], 2);
    ck_assert_int_eq(fread(q, 4, 2, fp), 2);
    ck_assert(q[0] == 1.5f && q[1] == -2.0f);
    fseek(fp, 0, SEEK_END);
    ck_assert_int_eq(ftell(fp), 4 * (1 + 3) + 4 * (2 + 1) + 4 * (4 + 2));
    fclose(fp);
    remove(path);
    head_free(&h);
}
END_TEST

int main(void)
{
    qk_mkdirs("build/tests/tmp", NULL);
    Suite *s = suite_create("heads");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, jobs_are_sorted_and_checked);
    tcase_add_test(tc, every_job_runs_once);
    tcase_add_test(tc, threads_take_neighbouring_groups);
    tcase_add_test(tc, a_failure_names_its_head);
    tcase_add_test(tc, heads_file_layout);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
