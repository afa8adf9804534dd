/* Helpers shared by the Check test programs. */
#ifndef QK_TESTUTIL_H
#define QK_TESTUTIL_H

#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "qk/heads.h"
#include "qk/rng.h"

/* Runs one suite and returns the process exit status. */
static inline int qk_test_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* Relative closeness for sums compared against truth files. */
#define ck_assert_rel(a, b, tol)                                               \
    do {                                                                       \
        double _a = (a), _b = (b);                                             \
        double _s = fabs(_b) > 1.0 ? fabs(_b) : 1.0;                           \
        ck_assert_msg(fabs(_a - _b) <= (tol) * _s,                             \
                      "%s = %.17g, expected %.17g", #a, _a, _b);              \
    } while (0)

/* ---- synthetic heads ------------------------------------------------------ */

/* The rows of one query head and of its key head: vectors (row-major) and
 * positions. */
typedef struct head_data {
    int dim;
    int64_t n_q, n_k;
    float *q, *k;
    int32_t *tq, *tk;
} head_data;

/* Zeroed rows for a head. */
static inline void head_alloc(head_data *h, int dim, int64_t n_q, int64_t n_k)
{
    h->dim = dim;
    h->n_q = n_q;
    h->n_k = n_k;
    h->q = calloc((size_t)(n_q * dim), sizeof(float));
    h->k = calloc((size_t)(n_k * dim), sizeof(float));
    h->tq = calloc((size_t)n_q, sizeof(int32_t));
    h->tk = calloc((size_t)n_k, sizeof(int32_t));
}

static inline void head_free(head_data *h)
{
    free(h->q);
    free(h->k);
    free(h->tq);
    free(h->tk);
}

/* Writes heads in the heads file format (qk/heads.h). */
static inline void write_heads_file(const char *path, const head_data *heads, int n)
{
    FILE *fp = fopen(path, "wb");
    ck_assert_msg(fp != NULL, "cannot write %s", path);
    qk_heads_file_begin(fp, n);
    for (int i = 0; i < n; i++)
        qk_heads_file_add(fp, heads[i].dim, heads[i].q, heads[i].tq, heads[i].n_q, heads[i].k,
                          heads[i].tk, heads[i].n_k);
    ck_assert(fclose(fp) == 0);
}

/* A generator seeded with one key. */
static inline void seed_rng(qk_rng *r, uint64_t seed)
{
    qk_rng_seed(r, &seed, 1);
}

static inline double vec_dot(const double *a, const double *b, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

#endif
