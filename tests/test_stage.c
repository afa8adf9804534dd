/* The stage skeleton (src/lib/cli/stage.c): on a store written here, every
 * usable head is analysed once with the vectors of its own configs, a
 * rejected head keeps an empty slot, a key head's first query head on a
 * thread is flagged, --max-heads cuts the list, thread states are paired,
 * and a failing store, preparation or head stops the program with status 2
 * and one line naming the store. */
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "qk/stage.h"
#include "testutil.h"

#define STORE "build/tests/tmp/stage.qks"
#define DIM 3
#define N_Q 6 /* query heads 0..5 of layer 0 */
#define N_K 3 /* key heads 0..2, key head h / 2 serves query head h */

static int q_rows(int h) { return h == 4 ? 2 : 10 + h; } /* head 4 is too short */
static int k_rows(int k) { return 20 + k; }

/* Value j of row r of a config: unique per config, exact in bfloat16. */
static float value(char kind, int head, int r, int j)
{
    return (float)((kind == 'q' ? 1 : -1) * (head * 64 + r * 4 + j));
}

/* The sum of a config's values, as the analysis must see them. */
static double config_sum(char kind, int head, int rows)
{
    double s = 0.0;
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < DIM; j++)
            s += value(kind, head, r, j);
    return s;
}

static void add_config(qk_store_writer *w, char kind, int head, int rows)
{
    int32_t t[64], bucket[64];
    float v[64 * DIM];
    for (int r = 0; r < rows; r++) {
        t[r] = r;
        bucket[r] = r / 8; /* the header's bucket_size */
        for (int j = 0; j < DIM; j++)
            v[r * DIM + j] = value(kind, head, r, j);
    }
    qk_err err;
    ck_assert_msg(qk_store_writer_add(w, 0, head, kind, rows, t, t, bucket, v, 0, &err) == 0, "%s",
                  err.msg);
}

static void write_store(void)
{
    qk_store_header meta;
    memset(&meta, 0, sizeof meta);
    meta.dim = DIM;
    meta.n_layers = 1;
    meta.n_q_heads = N_Q;
    meta.n_kv_heads = N_K;
    meta.context_length = 64;
    meta.bucket_size = 8;
    snprintf(meta.dataset_id, sizeof meta.dataset_id, "unit");
    qk_store_writer w;
    qk_err err;
    ck_assert_int_eq(qk_store_writer_open(&w, STORE, &meta, &err), 0);
    for (int h = 0; h < N_Q; h++)
        add_config(&w, 'q', h, q_rows(h));
    for (int k = 0; k < N_K; k++)
        add_config(&w, 'k', k, k_rows(k));
    qk_store_pair pairs[N_Q];
    for (int h = 0; h < N_Q; h++) /* listed backwards: the jobs come sorted */
        pairs[h] = (qk_store_pair){(uint32_t)(N_Q - 1 - h), (uint32_t)(N_Q + (N_Q - 1 - h) / 2)};
    ck_assert_msg(qk_store_writer_finish(&w, pairs, N_Q, &err) == 0, "%s", err.msg);
}

/* ---- a stage that records what it saw -------------------------------------------- */

typedef struct seen {
    int calls;
    int head, kv_head;
    int64_t n_q, n_k;
    double q_sum, k_sum;
    int first_of_key;
} seen;

typedef struct test_ctx {
    pthread_mutex_t lock;
    int states_alive, states_made;
    int prepared_jobs; /* n_jobs as prepare saw it */
    int fail_head;     /* -1: none */
} test_ctx;

static void *state_init(void *arg)
{
    test_ctx *c = arg;
    pthread_mutex_lock(&c->lock);
    c->states_alive++;
    c->states_made++;
    pthread_mutex_unlock(&c->lock);
    return c;
}

static void state_free(void *arg)
{
    test_ctx *c = arg;
    pthread_mutex_lock(&c->lock);
    c->states_alive--;
    pthread_mutex_unlock(&c->lock);
}

static int prepare(void *arg, const qk_stage *st, qk_err *err)
{
    test_ctx *c = arg;
    c->prepared_jobs = st->n_jobs;
    return c->fail_head == -2 ? qk_fail(err, "not for this stage") : 0;
}

static int usable(void *arg, const qk_stage *st, int i, char *why, size_t cap)
{
    (void)arg;
    int64_t n = st->store.configs[st->jobs[i].q_config].rows;
    if (n >= 5)
        return 1;
    snprintf(why, cap, "%d query rows", (int)n);
    return 0;
}

static double sum(const float *v, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n * DIM; i++)
        s += v[i];
    return s;
}

static int analyse(void *arg, void *state, const qk_stage_head *h, void *result, qk_err *err)
{
    test_ctx *c = arg;
    ck_assert_ptr_eq(state, c);
    if (h->job->head == c->fail_head)
        return qk_fail(err, "planted failure");
    seen *s = result;
    s->calls++;
    s->head = h->job->head;
    s->kv_head = h->job->kv_head;
    s->n_q = h->q->rows;
    s->n_k = h->k->rows;
    s->q_sum = sum(h->q_vectors, h->q->rows);
    s->k_sum = sum(h->k_vectors, h->k->rows);
    s->first_of_key = h->first_of_key;
    return 0;
}

static void run_stage(qk_stage *st, test_ctx *c, int threads, int share_key, int max_heads)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    c->fail_head = -1;
    qk_progress_set_quiet(1);
    qk_stage_spec spec = {.store = STORE, .verify = 1, .threads = threads, .what = "test",
                          .result_size = sizeof(seen), .share_key = share_key,
                          .max_heads = max_heads, .ctx = c, .prepare = prepare,
                          .usable = usable, .thread_init = state_init,
                          .thread_free = state_free, .analyse = analyse};
    qk_stage_run(st, &spec);
}

/* ---- the tests ------------------------------------------------------------------- */

START_TEST(every_usable_head_once_with_its_vectors)
{
    write_store();
    for (int threads = 1; threads <= 4; threads++) {
        qk_stage st;
        test_ctx c;
        run_stage(&st, &c, threads, 1, 0);
        ck_assert_int_eq(st.n_jobs, N_Q);
        ck_assert_int_eq(c.prepared_jobs, N_Q);
        ck_assert_int_eq(st.n_usable, N_Q - 1);
        ck_assert_int_eq(c.states_alive, 0);
        ck_assert_int_ge(c.states_made, 1);
        ck_assert_int_le(c.states_made, threads);
        int firsts = 0;
        for (int i = 0; i < N_Q; i++) {
            const seen *s = qk_stage_result(&st, i);
            ck_assert_int_eq(st.jobs[i].head, i);
            ck_assert_int_eq(st.usable[i], i != 4);
            if (i == 4) { /* rejected: its slot stays zeroed */
                ck_assert_int_eq(s->calls, 0);
                ck_assert(s->q_sum == 0.0 && s->first_of_key == 0);
                continue;
            }
            ck_assert_int_eq(s->calls, 1);
            ck_assert_int_eq(s->head, i);
            ck_assert_int_eq(s->kv_head, i / 2);
            ck_assert_int_eq(s->n_q, q_rows(i));
            ck_assert_int_eq(s->n_k, k_rows(i / 2));
            ck_assert(s->q_sum == config_sum('q', i, q_rows(i)));
            ck_assert(s->k_sum == config_sum('k', i / 2, k_rows(i / 2)));
            firsts += s->first_of_key;
        }
        /* a key head's query heads go to one thread in a row: the first
         * usable one of each (0, 2, 5) is flagged */
        ck_assert_int_eq(firsts, N_K);
        ck_assert_int_eq(((const seen *)qk_stage_result(&st, 0))->first_of_key, 1);
        ck_assert_int_eq(((const seen *)qk_stage_result(&st, 2))->first_of_key, 1);
        ck_assert_int_eq(((const seen *)qk_stage_result(&st, 5))->first_of_key, 1);
        qk_stage_finish(&st, NULL);
        ck_assert_ptr_null(st.results);
    }
}
END_TEST

START_TEST(one_head_a_group_and_the_first_heads)
{
    write_store();
    qk_stage st;
    test_ctx c;
    /* one thread takes the heads in order: 0 1 2 3 5, keys 0 0 1 1 2 */
    run_stage(&st, &c, 1, 0, 0);
    static const int first[N_Q] = {1, 0, 1, 0, 0, 1};
    for (int i = 0; i < N_Q; i++)
        ck_assert_int_eq(((const seen *)qk_stage_result(&st, i))->first_of_key, first[i]);
    qk_stage_finish(&st, NULL);

    run_stage(&st, &c, 2, 0, 3);
    ck_assert_int_eq(st.n_jobs, 3);
    ck_assert_int_eq(c.prepared_jobs, 3);
    ck_assert_int_eq(st.n_usable, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(((const seen *)qk_stage_result(&st, i))->calls, 1);
    qk_stage_finish(&st, NULL);
}
END_TEST

/* ---- failures: the program stops with status 2 and one line ---------------------- */

/* Runs the stage of spec in a child process; returns its exit status and
 * what it wrote on stderr. */
static int run_child(const qk_stage_spec *spec, char *text, size_t cap)
{
    int fd[2];
    ck_assert_int_eq(pipe(fd), 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        dup2(fd[1], STDERR_FILENO);
        close(fd[0]);
        qk_stage st;
        qk_stage_run(&st, spec);
        _exit(0);
    }
    close(fd[1]);
    size_t len = 0;
    ssize_t got;
    while (len + 1 < cap && (got = read(fd[0], text + len, cap - 1 - len)) > 0)
        len += (size_t)got;
    text[len] = '\0';
    close(fd[0]);
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void expect_failure(const qk_stage_spec *spec, const char *line)
{
    char text[1024];
    ck_assert_int_eq(run_child(spec, text, sizeof text), QK_EXIT_DATA);
    ck_assert_str_eq(text, line);
}

START_TEST(failures_exit_2_naming_the_store)
{
    write_store();
    test_ctx c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.lock, NULL);
    qk_stage_spec spec = {.store = STORE, .verify = 1, .threads = 2, .what = "test",
                          .result_size = sizeof(seen), .share_key = 1, .ctx = &c,
                          .prepare = prepare, .thread_init = state_init,
                          .thread_free = state_free, .analyse = analyse};
    c.fail_head = 3;
    expect_failure(&spec, "test_stage: error: " STORE ": head l00h03: planted failure\n");
    c.fail_head = -2;
    expect_failure(&spec, "test_stage: error: " STORE ": not for this stage\n");
    c.fail_head = -1;
    spec.store = "build/tests/tmp/no-such.qks";
    char text[1024];
    ck_assert_int_eq(run_child(&spec, text, sizeof text), QK_EXIT_DATA);
    ck_assert_ptr_nonnull(strstr(text, "test_stage: error: build/tests/tmp/no-such.qks: "));
    const char *newline = strchr(text, '\n');
    ck_assert(newline && newline[1] == '\0'); /* one line */
}
END_TEST

int main(void)
{
    qk_mkdirs("build/tests/tmp", NULL);
    qk_set_progname("test_stage");
    Suite *s = suite_create("stage");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, every_usable_head_once_with_its_vectors);
    tcase_add_test(tc, one_head_a_group_and_the_first_heads);
    tcase_add_test(tc, failures_exit_2_naming_the_store);
    suite_add_tcase(s, tc);
    return qk_test_run(s);
}
