/* The heads of a store as jobs, and their parallel processing: the stages
 * that analyse every head (qk-pca, qk-rotate, qk-complement, qk-plasticity)
 * run a callback over the store's (query head, key head) pairs on N
 * threads, through the stage skeleton of include/qk/stage.h. Each job's result lands in a slot of the caller's, so outputs
 * do not depend on the thread count or on which thread did what. */
#ifndef QK_HEADS_H
#define QK_HEADS_H

#include <stdint.h>
#include <stdio.h>

#include "qk/common.h"
#include "qk/store.h"

#define QK_MAX_THREADS 256

/* One query head and its key head. */
typedef struct qk_head_job {
    int layer, head, kv_head;
    int q_config, k_config; /* indices into the store's config table */
} qk_head_job;

/* The store's pairs as jobs sorted by (layer, query head); checks that
 * each pair joins a query and a key config of one layer and that no query
 * head appears twice. */
int qk_head_jobs(const qk_store *s, qk_head_job **jobs, int *n_jobs, qk_err *err);

/* Runs group() over groups of jobs on n_threads threads (at most
 * QK_MAX_THREADS), each thread with its own state from thread_init (NULL:
 * no state). With share_key, a group is the jobs of one key config, so a
 * key head's moments can be computed once for its query heads; without,
 * every job is a group of its own. job_idx lists the indices of a group's
 * jobs in ascending order. Thread t starts on its own span of neighbouring
 * groups (the t-th of n_threads equal parts, in order) and, once that is
 * done, takes groups from the end of the longest span left, so that the
 * heads of a layer mostly go to one thread. The first failure stops the
 * run; its message, prefixed with the head ("head l03h07: ..."), lands in
 * err. With
 * progress_every > 0, a progress line "N / M heads" follows every
 * progress_every heads done. BLAS runs single-threaded from the first
 * call on: the parallelism comes from the heads. */
typedef struct qk_head_runner {
    const qk_head_job *jobs;
    int n_jobs;
    int share_key;
    int progress_every;
    void *ctx;
    void *(*thread_init)(void *ctx);
    int (*group)(void *ctx, void *state, const int *job_idx, int n, int *failed_job,
                 qk_err *err);
    void (*thread_free)(void *state);
} qk_head_runner;

int qk_head_run(const qk_head_runner *r, int n_threads, qk_err *err);

/* ---- the heads file ------------------------------------------------------------- */

/* The vectors of a few heads for the numpy and scikit-learn side of the
 * benchmarks and of test_pca (read_heads in bench/benchlib.py), all
 * little-endian: i32 n_heads, then per head i32 n_q, n_k, d; f32 Q[n_q*d];
 * i32 t_q[n_q]; f32 K[n_k*d]; i32 t_k[n_k]. */
void qk_heads_file_begin(FILE *fp, int n_heads);
void qk_heads_file_add(FILE *fp, int dim, const float *q, const int32_t *t_q, int64_t n_q,
                       const float *k, const int32_t *t_k, int64_t n_k);

#endif
