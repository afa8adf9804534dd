/* The skeleton of a per-head stage (qk-pca, qk-rotate, qk-complement,
 * qk-plasticity): open the store, list its heads, decide which of them the
 * stage can analyse, analyse those on N threads with progress, and stop
 * the program with the standard message when anything fails. The program
 * supplies its analysis as callbacks and writes its outputs from the
 * result slots afterwards. */
#ifndef QK_STAGE_H
#define QK_STAGE_H

#include <stddef.h>

#include "qk/common.h"
#include "qk/heads.h"
#include "qk/store.h"

/* What the store holds for the stage once qk_stage_run returns. */
typedef struct qk_stage {
    const char *path;   /* the store's */
    qk_store store;
    qk_head_job *jobs;  /* (layer, query head) order */
    int n_jobs;
    int *usable;        /* [n_jobs] 1: analysed, 0: skipped */
    int n_usable;
    void *results;      /* [n_jobs] slots of result_size bytes, zeroed before the run */
    size_t result_size;
    double start;       /* qk_now() once the store was open */
    double run_seconds; /* wall time of the analysis of the heads */
} qk_stage;

/* One head handed to the analysis: its job, its slot and the vectors of
 * its query and key configs, decoded. first_of_key is 1 when the key
 * config is not the one of the head this thread analysed just before
 * (with share_key, once per key head and thread), so the key head's
 * moments can be computed once for its query heads. */
typedef struct qk_stage_head {
    const qk_head_job *job;
    int index; /* into jobs and the result slots */
    const qk_store_config *q, *k;
    const float *q_vectors, *k_vectors; /* rows * dim float32 */
    int first_of_key;
} qk_stage_head;

typedef struct qk_stage_spec {
    const char *store;   /* path */
    int verify;          /* rehash the store's payload when opening it */
    int threads;
    const char *what;    /* for the progress line: "PCA" -> "PCA of 24 heads" */
    size_t result_size;  /* bytes of one head's result */
    int share_key;       /* hand the query heads of one key head to one thread in a row */
    int max_heads;       /* 0: every head; else the first N in (layer, head) order */
    int progress_every;  /* > 0: a progress line every N heads */
    void *ctx;           /* the program's, handed to every callback */

    /* Called once the store is open and its heads listed, before any is
     * analysed (NULL: nothing to do): checks that the store suits the
     * stage and sets up what depends on it. -1 with a message in err stops
     * the program (exit 2, naming the store). */
    int (*prepare)(void *ctx, const qk_stage *st, qk_err *err);
    /* Whether job i can be analysed (NULL: every head). A head it rejects
     * is skipped; when it wrote a reason into why (cap bytes), with the
     * warning "STORE: head lLLhHH skipped: WHY". */
    int (*usable)(void *ctx, const qk_stage *st, int i, char *why, size_t cap);
    /* Per-thread state (either may be NULL). */
    void *(*thread_init)(void *ctx);
    void (*thread_free)(void *state);
    /* Analyses one usable head into result (its slot); -1 with a message in
     * err stops the run and the program ("STORE: head lLLhHH: MSG", exit 2). */
    int (*analyse)(void *ctx, void *state, const qk_stage_head *h, void *result, qk_err *err);
} qk_stage_spec;

/* Runs the stage: fills st, analyses every usable head, and returns once
 * all are done. Any failure (the store, a head) exits 2 with the one-line
 * message naming the store; nothing has been written by then. */
void qk_stage_run(qk_stage *st, const qk_stage_spec *spec);

/* Job i's result slot. */
void *qk_stage_result(const qk_stage *st, int i);

/* The closing progress line "DATASET: N heads analysed, M skipped, S s"
 * (note, if not NULL, goes before the time), then releases the store, the
 * jobs and the slots (whatever the slots point to is the program's). */
void qk_stage_finish(qk_stage *st, const char *note);

#endif
