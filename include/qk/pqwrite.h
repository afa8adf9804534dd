/* A small Parquet writer for the sniffed-qk layout, used by qk-synth and by
 * tests that need files the reader must handle (rows spanning pages, codecs,
 * page versions). It writes the same schema pyarrow writes for the capture
 * tool: bucket, example_id, position (INT32, dictionary-encoded), vector
 * (three-level LIST of FLOAT) and the all-null sliding_window column. */
#ifndef QK_PQWRITE_H
#define QK_PQWRITE_H

#include <stddef.h>
#include <stdint.h>

#include "qk/common.h"

enum qk_pq_codec {
    QK_CODEC_UNCOMPRESSED = 0,
    QK_CODEC_SNAPPY = 1,
    QK_CODEC_GZIP = 2,
    QK_CODEC_ZSTD = 6
};

typedef struct qk_pq_write_opts {
    int codec;               /* enum qk_pq_codec; default ZSTD */
    int zstd_level;          /* default 1, as pyarrow */
    int dictionary_vectors;  /* 1: RLE_DICTIONARY vector pages (falls back to
                                PLAIN past 65536 distinct values); 0: PLAIN */
    int data_page_v2;        /* 1: DATA_PAGE_V2 pages; 0: v1 (default) */
    int64_t rows_per_group;  /* 0: one row group */
    int64_t values_per_page; /* vector leaf values per data page; 0 or
                                default: 262144 (1 MiB of floats). Not a
                                multiple of dim makes rows span pages. */
} qk_pq_write_opts;

void qk_pq_write_opts_default(qk_pq_write_opts *o);

/* Writes rows x dim vectors with their columns to path, atomically. */
int qk_parquet_write_file(const char *path, const qk_pq_write_opts *opts,
                          int64_t rows, int dim, const int32_t *bucket,
                          const int32_t *example_id, const int32_t *position,
                          const float *vector, qk_err *err);

/* The RLE/bit-packed hybrid encoding of values of bit_width bits: an upper
 * bound of its size, and the encoder (returns the bytes written). */
size_t qk_pq_hybrid_bound(size_t n, int bit_width);
size_t qk_pq_hybrid_encode(const uint32_t *values, size_t n, int bit_width, uint8_t *out);

#endif
