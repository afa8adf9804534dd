/* What the files of the plasticity stage share and nothing else uses:
 * the layout of a head (plasticity_layout.c), the query side of a head
 * (plasticity_queries.c) and small helpers. */
#ifndef QK_PLASTICITY_INTERNAL_H
#define QK_PLASTICITY_INTERNAL_H

#include <stdint.h>

#include "qk/plasticity.h"
#include "qk/rng.h"
#include "qk/simd.h"

/* stream tags of the random choices of a head */
enum { STREAM_SUBSAMPLE_Q = 1, STREAM_SUBSAMPLE_K = 2, STREAM_NOISE_DIMS = 3, STREAM_PAIRS = 4 };

/* An array of n doubles on a 64-byte boundary like qk_doubles (BLAS takes
 * the same path in every thread), not zeroed: for arrays that are written
 * in full before they are read. */
double *qk_plast_raw_doubles(size_t n);

/* Rows of the store gathered in an order of their own (bins, key order)
 * fetch the vector GATHER_AHEAD rows ahead early, a cache line at a time. */
#define GATHER_AHEAD 8
static inline void prefetch_row(const void *row, size_t bytes)
{
    for (size_t i = 0; i < bytes; i += 64)
        __builtin_prefetch((const char *)row + i);
}

/* The power of two that brings x > 0 into [2^19, 2^20) (1 for x = 0 or
 * not finite): a scale that changes no bit of a product or a sum. */
double qk_plast_near_2_20(double x);

/* The work buffers a thread's cache keeps from head to head (their pages
 * are then touched once, not once per head). */
enum { QK_PLAST_BUF_QUERIES, QK_PLAST_BUF_KEYS, QK_PLAST_BUF_COLUMNS, QK_PLAST_N_BUFS };

/* Buffer `which` of c, of at least n doubles on a 64-byte boundary; its
 * content is left as the last head left it. */
double *qk_plast_cache_buffer(qk_plast_cache *c, int which, size_t n);
/* Drops the keys kept (the next head loads its own). */
void qk_plast_cache_forget_keys(qk_plast_cache *c);

/* The longest of the n spans start[i] .. start[i + 1], at least 1. */
int64_t qk_plast_longest_span(const int64_t *start, int n);

/* Skewness and kurtosis (as qk_plast_skew_kurt) from n, the mean and the
 * sums of the 2nd to 4th powers of the deviations. */
void qk_plast_skew_kurt_finish(int64_t n, double mean, double m2, double m3, double m4,
                               double *skew, double *kurt);

/* The evaluation order of the exact diagonal mode: the pairs by range of
 * examples, in blocks of at most QK_PLAST_PAIR_BLOCK pairs of one range
 * with neighbouring first bins (one GEMM of variances each, from the
 * block's first bin b0), within a block by heatmap column. For each pair,
 * the heatmap row of each of its bins from its first evaluated one
 * (max(first, b0)) to the last kept bin, in that order (QK_PLAST_NO_ROW
 * for a bin not kept): the rows of all pairs one after the other. */
#define QK_PLAST_PAIR_BLOCK 512
typedef struct qk_plast_plan {
    qk_plast_key_pair *pairs; /* [n_pairs] evaluation order */
    int64_t *block_start;     /* [n_blocks + 1] */
    int32_t *block_b0;        /* [n_blocks] first bin of the block's GEMM, -1: none */
    int64_t n_blocks;
    uint8_t *rows;            /* the pairs' heatmap rows, bin by bin */
    int64_t *rows_at;         /* [n_pairs + 1] where each pair's rows start */
    int first_kept, last_kept;
    int64_t *cell_evals;      /* [n_cells^2] evaluations per heatmap cell */
} qk_plast_plan;

/* What a head's analysis takes from positions alone: the bins of its
 * queries, the order of its keys, its key pairs and the evaluation order.
 * The capture keeps the same tokens for every head of a layer, so heads of
 * one layer share one layout (qk_plast_cache). */
typedef struct qk_plast_layout {
    /* what it was made from */
    int64_t nq, nk;
    int32_t *q_pos, *k_pos, *k_ex; /* [nq], [nk], [nk] of the rows used */
    qk_plast_grid grid;
    int64_t min_pairs;
    /* queries */
    int64_t *q_order;  /* [nq] the query (index into the rows used) at each place, by bin */
    double *t_q;       /* [nq] its position */
    int64_t *bin_row;  /* [n_bins + 1] first place of each bin */
    int64_t *bin_queries;
    double *bin_tau;   /* [n_bins] mean position, NaN without queries */
    /* keys by range of examples, then position */
    int64_t *k_order;  /* [nk] the key (index into the rows used) at each place */
    int32_t *t_k, *ex_k, *range_of;
    int64_t *range_start; /* [n_ranges + 1] */
    int n_ranges;
    /* pairs */
    qk_plast_key_pair *pairs; /* sorted by first bin */
    int64_t n_pairs;
    int64_t *bin_pairs;       /* [n_bins] eligible pairs */
    unsigned char *kept;      /* [n_bins] */
    qk_plast_plan *plan;      /* of the exact diagonal mode, made when first needed */
} qk_plast_layout;

/* The layout of rows q_rows[0..nq) of q and k_rows[0..nk) of k; NULL with a
 * message (too many pairs to hold). */
qk_plast_layout *qk_plast_layout_make(const qk_plast_rows *q, const int64_t *q_rows, int64_t nq,
                                      const qk_plast_rows *k, const int64_t *k_rows, int64_t nk,
                                      const qk_plast_grid *g, const qk_plast_params *p,
                                      qk_err *err);
/* 1 if the layout was made from the same positions, grid and parameters. */
int qk_plast_layout_fits(const qk_plast_layout *l, const qk_plast_rows *q, const int64_t *q_rows,
                         int64_t nq, const qk_plast_rows *k, const int64_t *k_rows, int64_t nk,
                         const qk_plast_grid *g, const qk_plast_params *p);
/* The evaluation order of the exact diagonal mode (kept in the layout). */
const qk_plast_plan *qk_plast_layout_plan(qk_plast_layout *l);
void qk_plast_layout_free(qk_plast_layout *l);

/* The query side of a head (docs/plasticity.md, steps 2-7 and the
 * diagnostics of the queries), from its rows used q_rows[], the layout's
 * bins and the orientation sign: fills h (regression, diagnostics, the
 * bins' queries and positions) and returns the rotated queries in bin order
 * (nq x d), the Householder vector in hv (*reflect = 0: H = I) and the bin
 * model: mean[n_bins x d] and the diagonal var[n_bins x d]. Returns -1,
 * with nothing in m to free, when a component of a query is not finite. */
typedef struct qk_plast_query_model {
    double *q;      /* [nq * d] oriented, rotated, in bin order (a cache buffer) */
    double *hv;     /* [d] */
    int reflect;
    double *mean;   /* [n_bins * d] M_b */
    double *var;    /* [n_bins * d] diagonal of C_b */
} qk_plast_query_model;

int qk_plast_queries(const qk_plast_rows *q, const int64_t *q_rows, const qk_plast_layout *l,
                     int d, const double *sign, const qk_plast_params *p, qk_rng *noise_rng,
                     qk_plast_cache *c, qk_plast_head *h, qk_plast_query_model *m);
void qk_plast_query_model_free(qk_plast_query_model *m);

/* What a thread keeps between heads (plasticity_cache.c). */
struct qk_plast_cache {
    double *buf[QK_PLAST_N_BUFS];
    size_t buf_size[QK_PLAST_N_BUFS];
    qk_plast_layout *layout; /* of the last head */
    /* the keys of the last head's key head, in the layout's order */
    const void *key_source;  /* qk_plast_rows.source; NULL: none kept */
    const qk_plast_layout *key_layout;
    int key_scaled, d;
    double *sign;            /* [d] orientation */
    double *scale;           /* [d] the sign times the keys' power of two */
    float *keys;             /* [nk * d] the store's floats */
    int64_t heads;           /* analysed with it so far */
};

#endif
