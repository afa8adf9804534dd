/* Tests of the random number generators: xoshiro256** streams, CPython's
 * MT19937 and the replay of the capture tool's head sampling against the
 * golden list tests/data/heads.tsv. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qk/rng.h"
#include "testutil.h"

static const char *test_data_dir(void)
{
    const char *dir = getenv("QK_TEST_DATA");
    return dir && *dir ? dir : "tests/data";
}

/* ---- xoshiro256** ----------------------------------------------------- */

START_TEST(test_xoshiro_reference_outputs)
{
    /* The reference generator started from the state {1, 2, 3, 4}. */
    static const uint64_t expected[10] = {
        11520ULL, 0ULL, 1509978240ULL, 1215971899390074240ULL,
        1216172134540287360ULL, 607988272756665600ULL,
        16172922978634559625ULL, 8476171486693032832ULL,
        10595114339597558777ULL, 2904607092377533576ULL};
    qk_rng r = {.s = {1, 2, 3, 4}};
    for (int i = 0; i < 10; i++)
        ck_assert_uint_eq(qk_rng_u64(&r), expected[i]);
}
END_TEST

START_TEST(test_same_keys_same_stream)
{
    uint64_t keys[4] = {7, 0xDEADBEEFULL, 3, 12};
    qk_rng a, b;
    qk_rng_seed(&a, keys, 4);
    qk_rng_seed(&b, keys, 4);
    for (int i = 0; i < 1000; i++) {
        ck_assert_uint_eq(qk_rng_u64(&a), qk_rng_u64(&b));
        ck_assert(qk_rng_normal(&a) == qk_rng_normal(&b));
    }
}
END_TEST

/* First outputs of the streams of several key lists: all must differ,
 * including permutations and lists that differ only by a trailing zero. */
START_TEST(test_different_keys_different_streams)
{
    const uint64_t lists[6][3] = {{1, 2, 3}, {1, 2, 4}, {2, 1, 3},
                                  {3, 2, 1}, {1, 2, 0}, {0, 0, 0}};
    const int lens[7] = {3, 3, 3, 3, 3, 3, 2};
    uint64_t first[7][4];
    for (int i = 0; i < 7; i++) {
        qk_rng r;
        qk_rng_seed(&r, lists[i < 6 ? i : 0], lens[i]);
        for (int j = 0; j < 4; j++)
            first[i][j] = qk_rng_u64(&r);
    }
    for (int i = 0; i < 7; i++)
        for (int j = i + 1; j < 7; j++)
            ck_assert_msg(memcmp(first[i], first[j], sizeof first[i]) != 0,
                          "key lists %d and %d give the same stream", i, j);
}
END_TEST

START_TEST(test_uniform_range_and_mean)
{
    uint64_t key = 99;
    qk_rng r;
    qk_rng_seed(&r, &key, 1);
    const int n = 1000000;
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        double u = qk_rng_uniform(&r);
        ck_assert(u >= 0.0 && u < 1.0);
        sum += u;
    }
    /* standard error of the mean of U(0,1): sqrt(1/12/n) */
    ck_assert_double_le(fabs(sum / n - 0.5), 4.0 * sqrt(1.0 / 12.0 / n));
}
END_TEST

START_TEST(test_below_is_uniform)
{
    uint64_t key = 5;
    qk_rng r;
    qk_rng_seed(&r, &key, 1);
    ck_assert_uint_eq(qk_rng_below(&r, 1), 0);
    const int n = 600000, bins = 6;
    long count[6] = {0};
    for (int i = 0; i < n; i++) {
        uint64_t v = qk_rng_below(&r, bins);
        ck_assert_uint_lt(v, bins);
        count[v]++;
    }
    double chi2 = 0.0, expected = (double)n / bins;
    for (int b = 0; b < bins; b++)
        chi2 += (count[b] - expected) * (count[b] - expected) / expected;
    /* 5 degrees of freedom: P(chi2 > 25) is about 1.4e-4 */
    ck_assert_double_lt(chi2, 25.0);
    /* a bound near 2^63 exercises the rejection branch */
    uint64_t big = (1ULL << 63) + 12345;
    for (int i = 0; i < 1000; i++)
        ck_assert_uint_lt(qk_rng_below(&r, big), big);
}
END_TEST

START_TEST(test_normal_moments)
{
    uint64_t keys[2] = {2024, 11};
    qk_rng r;
    qk_rng_seed(&r, keys, 2);
    const int n = 1000000;
    double sum = 0.0, sum2 = 0.0, sum4 = 0.0;
    for (int i = 0; i < n; i++) {
        double z = qk_rng_normal(&r);
        sum += z;
        sum2 += z * z;
        sum4 += z * z * z * z;
    }
    double mean = sum / n;
    double var = sum2 / n - mean * mean;
    /* standard errors: 1/sqrt(n) for the mean, sqrt(2/n) for the variance */
    ck_assert_double_le(fabs(mean), 4.0 / sqrt(n));
    ck_assert_double_le(fabs(var - 1.0), 4.0 * sqrt(2.0 / n));
    /* fourth moment 3 (sd of z^4 is sqrt(96)) */
    ck_assert_double_le(fabs(sum4 / n - 3.0), 4.0 * sqrt(96.0 / n));
}
END_TEST

/* ---- CPython MT19937 and random.sample --------------------------------- */

START_TEST(test_mt_python_seed0)
{
    qk_mt m;
    qk_mt_seed_python(&m, 0);
    ck_assert_uint_eq(qk_mt_u32(&m), 3626764237U);
    ck_assert_uint_eq(qk_mt_u32(&m), 1654615998U);
    ck_assert_uint_eq(qk_mt_u32(&m), 3255389356U);
}
END_TEST

typedef struct model_shape {
    const char *prefix;
    int n_layers, n_q, n_kv;
    int cross_every; /* cross-attention layers 3, 8, ... (step 5) if set */
} model_shape;

static const model_shape models[] = {
    {"llama3.2-1b", 16, 32, 8, 0},     {"llama3.2-3b", 28, 24, 8, 0},
    {"llama3.2-11b", 40, 32, 8, 1},    {"llama3.1-8b", 32, 32, 8, 0},
    {"mistral-v0.2-7b", 32, 32, 8, 0}, {"ministral3-3b", 26, 32, 8, 0},
    {"ministral3-8b", 34, 32, 8, 0},   {"ministral3-14b", 40, 32, 8, 0},
    {"qwen3-0.6b", 28, 16, 8, 0},      {"qwen3-1.7b", 28, 16, 8, 0},
    {"qwen3-4b", 36, 32, 8, 0},        {"qwen3-8b", 36, 32, 8, 0},
    {"qwen3-14b", 40, 40, 8, 0},       {"smollm3-3b-<checkpoint>", 36, 16, 4, 0},
};
#define N_MODELS ((int)(sizeof models / sizeof models[0]))

static const model_shape *find_model(const char *prefix)
{
    for (int i = 0; i < N_MODELS; i++)
        if (strcmp(models[i].prefix, prefix) == 0)
            return &models[i];
    return NULL;
}

/* Layer-major flat index j -> (layer, head), as the capture tool orders its
 * candidates. */
static void check_first_draws(const char *prefix, const int expected[5][2])
{
    const model_shape *m = find_model(prefix);
    ck_assert_ptr_nonnull(m);
    int picks[300];
    ck_assert_int_eq(qk_python_sample(0, m->n_layers * m->n_q, 300, picks), 0);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(picks[i] / m->n_q, expected[i][0]);
        ck_assert_int_eq(picks[i] % m->n_q, expected[i][1]);
    }
}

START_TEST(test_sample_first_draws)
{
    const int qwen06[5][2] = {{27, 0}, {12, 5}, {24, 4}, {13, 7}, {1, 4}};
    const int llama3[5][2] = {{16, 10}, {17, 22}, {1, 17}, {11, 1}, {21, 19}};
    const int qwen14[5][2] = {{19, 28}, {38, 32}, {21, 21}, {2, 2}, {13, 10}};
    const int minis3[5][2] = {{12, 10}, {24, 8}, {13, 14}, {1, 9}, {8, 9}};
    const int smol[5][2] = {{24, 10}, {26, 14}, {2, 9}, {16, 9}, {32, 11}};
    check_first_draws("qwen3-0.6b", qwen06);
    check_first_draws("llama3.2-3b", llama3);
    check_first_draws("qwen3-14b", qwen14);
    check_first_draws("ministral3-3b", minis3);
    check_first_draws("smollm3-3b-<checkpoint>", smol);
}
END_TEST

START_TEST(test_sample_rejects_k_above_n)
{
    int picks[4];
    ck_assert_int_eq(qk_python_sample(0, 3, 4, picks), -1);
}
END_TEST

/* Both branches of random.sample against CPython 3:
 * Random(42).sample(range(300), 4) (set method) and
 * Random(7).sample(range(10), 6) (pool method). */
START_TEST(test_sample_small_vectors)
{
    int picks[6];
    ck_assert_int_eq(qk_python_sample(42, 300, 4, picks), 0);
    const int want42[4] = {57, 12, 140, 125};
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(picks[i], want42[i]);
    ck_assert_int_eq(qk_python_sample(7, 10, 6, picks), 0);
    const int want7[6] = {5, 2, 6, 9, 0, 7};
    for (int i = 0; i < 6; i++)
        ck_assert_int_eq(picks[i], want7[i]);
}
END_TEST

/* ---- the golden list of config directories ------------------------------ */

/* A set of configs as a bitmap over (layer, head, kind). */
typedef struct config_set {
    unsigned char bits[128][128][2];
    int count;
} config_set;

static void set_add(config_set *s, int layer, int head, int kind)
{
    ck_assert(layer >= 0 && layer < 128 && head >= 0 && head < 128);
    if (!s->bits[layer][head][kind]) {
        s->bits[layer][head][kind] = 1;
        s->count++;
    }
}

static int is_cross_layer(const model_shape *m, int layer)
{
    return m->cross_every && layer % 5 == 3;
}

static void replay_configs(const model_shape *m, config_set *s)
{
    int picks[300];
    int n = m->n_layers * m->n_q;
    ck_assert_int_eq(qk_python_sample(0, n, 300, picks), 0);
    int group = m->n_q / m->n_kv;
    for (int i = 0; i < 300; i++) {
        int layer = picks[i] / m->n_q, head = picks[i] % m->n_q;
        if (is_cross_layer(m, layer))
            continue;
        set_add(s, layer, head, 0);
        set_add(s, layer, head / group, 1);
    }
}

START_TEST(test_replay_matches_heads_tsv)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/heads.tsv", test_data_dir());
    FILE *fp = fopen(path, "r");
    ck_assert_msg(fp != NULL, "cannot open %s", path);
    config_set *golden = calloc(N_MODELS, sizeof *golden);
    ck_assert_ptr_nonnull(golden);
    char line[512];
    int rows = 0;
    while (fgets(line, sizeof line, fp)) {
        if (line[0] == '#' || strncmp(line, "rev_prefix", 10) == 0)
            continue;
        char prefix[128], kind[8], config[32];
        int layer, head;
        ck_assert_int_eq(sscanf(line, "%127s %d %7s %d %31s", prefix, &layer,
                                kind, &head, config), 5);
        const model_shape *m = find_model(prefix);
        ck_assert_msg(m != NULL, "unknown model %s", prefix);
        char name[32];
        snprintf(name, sizeof name, "l%02dh%02d%s", layer, head, kind);
        ck_assert_str_eq(name, config);
        set_add(&golden[m - models], layer, head, kind[0] == 'k');
        rows++;
    }
    fclose(fp);
    ck_assert_int_eq(rows, 6656);

    int total_q_primary = 0;
    for (int i = 0; i < N_MODELS; i++) {
        config_set *replayed = calloc(1, sizeof *replayed);
        ck_assert_ptr_nonnull(replayed);
        replay_configs(&models[i], replayed);
        ck_assert_int_eq(replayed->count, golden[i].count);
        ck_assert_msg(memcmp(replayed->bits, golden[i].bits,
                             sizeof replayed->bits) == 0,
                      "%s: replayed configs differ from heads.tsv",
                      models[i].prefix);
        int nq = 0;
        for (int l = 0; l < 128; l++)
            for (int h = 0; h < 128; h++)
                nq += replayed->bits[l][h][0];
        if (strcmp(models[i].prefix, "llama3.1-8b") != 0 &&
            strcmp(models[i].prefix, "mistral-v0.2-7b") != 0 &&
            strncmp(models[i].prefix, "smollm3", 7) != 0)
            total_q_primary += nq;
        free(replayed);
    }
    /* the 11 primary models: 10 x 300 + 239 query configs */
    ck_assert_int_eq(total_q_primary, 3239);
    free(golden);
}
END_TEST

static int compare_pairs(const void *a, const void *b)
{
    const int *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] - y[0];
    return x[1] - y[1];
}

/* The four heads of the thesis' collage figure: Random(42).sample over the
 * sorted (layer, head) list of Llama-3.2-3B's query heads. */
START_TEST(test_collage_heads_llama3b)
{
    const model_shape *m = find_model("llama3.2-3b");
    int picks[300], pairs[300][2], chosen[4];
    ck_assert_int_eq(qk_python_sample(0, m->n_layers * m->n_q, 300, picks), 0);
    for (int i = 0; i < 300; i++) {
        pairs[i][0] = picks[i] / m->n_q;
        pairs[i][1] = picks[i] % m->n_q;
    }
    qsort(pairs, 300, sizeof pairs[0], compare_pairs);
    ck_assert_int_eq(qk_python_sample(42, 300, 4, chosen), 0);
    const int want[4][2] = {{5, 13}, {1, 8}, {13, 20}, {12, 6}};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pairs[chosen[i]][0], want[i][0]);
        ck_assert_int_eq(pairs[chosen[i]][1], want[i][1]);
    }
}
END_TEST

static Suite *rng_suite(void)
{
    Suite *s = suite_create("rng");
    TCase *x = tcase_create("xoshiro");
    tcase_add_test(x, test_xoshiro_reference_outputs);
    tcase_add_test(x, test_same_keys_same_stream);
    tcase_add_test(x, test_different_keys_different_streams);
    tcase_add_test(x, test_uniform_range_and_mean);
    tcase_add_test(x, test_below_is_uniform);
    tcase_add_test(x, test_normal_moments);
    suite_add_tcase(s, x);
    TCase *p = tcase_create("python");
    tcase_set_timeout(p, 30);
    tcase_add_test(p, test_mt_python_seed0);
    tcase_add_test(p, test_sample_first_draws);
    tcase_add_test(p, test_sample_rejects_k_above_n);
    tcase_add_test(p, test_sample_small_vectors);
    tcase_add_test(p, test_replay_matches_heads_tsv);
    tcase_add_test(p, test_collage_heads_llama3b);
    suite_add_tcase(s, p);
    return s;
}

int main(void) { return qk_test_run(rng_suite()); }
